"""The library's reports from Python: the leak checker, the memory timeline
and the graph as DOT, each with a notebook display (``_repr_html_`` /
``_repr_svg_``). PyTorch has no equivalent of the first two; the third is
what torchviz draws.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from typing import Optional, Sequence

from ._lib import check_status, lib

_libc = ctypes.CDLL(None)
_libc.fopen.restype = ctypes.c_void_p
_libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_libc.fclose.argtypes = [ctypes.c_void_p]

lib.tg_leak_scan.restype = ctypes.c_void_p
lib.tg_leak_report_free.argtypes = [ctypes.c_void_p]
for _n in ("nroots", "outlived_nodes", "unreachable"):
    getattr(lib, f"tg_leak_report_{_n}").restype = ctypes.c_int64
    getattr(lib, f"tg_leak_report_{_n}").argtypes = [ctypes.c_void_p]
lib.tg_leak_report_kept_bytes.restype = ctypes.c_uint64
lib.tg_leak_report_kept_bytes.argtypes = [ctypes.c_void_p]
lib.tg_leak_report_print.restype = ctypes.c_int
lib.tg_leak_report_print.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.tg_leak_report_json.restype = ctypes.c_int
lib.tg_leak_report_json.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.tg_step_mark.restype = ctypes.c_uint64
lib.tg_step_mark.argtypes = [ctypes.c_char_p]
lib.tg_graph_dot.restype = ctypes.c_int
lib.tg_graph_dot.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                             ctypes.POINTER(ctypes.c_char_p)]
lib.tg_timeline_start.restype = ctypes.c_int
lib.tg_timeline_stop.restype = ctypes.c_int
lib.tg_timeline_clear.restype = None
lib.tg_timeline_write_svg.restype = ctypes.c_int
lib.tg_timeline_write_svg.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.tg_timeline_write_trace.restype = ctypes.c_int
lib.tg_timeline_write_trace.argtypes = [ctypes.c_char_p]


def _through_file(write) -> str:
    """Runs write(FILE *) on a temporary file and returns what it wrote."""
    fd, path = tempfile.mkstemp(prefix="tapegrad-")
    os.close(fd)
    try:
        f = _libc.fopen(path.encode(), b"w")
        if not f:
            raise OSError(f"tapegrad: cannot open {path}")
        try:
            st = write(f)
        finally:
            _libc.fclose(f)
        check_status(st)
        with open(path) as r:
            return r.read()
    finally:
        os.unlink(path)


def step_mark(label: Optional[str] = None) -> int:
    """Ends the current step (a microbatch, an optimizer step) and starts the
    next: graphs from earlier steps still alive are what ``leak_check``
    reports. Returns the new step number (``tg_step_mark``)."""
    return lib.tg_step_mark(label.encode() if label is not None else None)


class LeakReport:
    """What ``leak_check()`` found: graph nodes kept alive from earlier steps,
    the roots holding them (with the path), bytes they keep, objects in
    cycles. ``bool(report)`` is True when something leaked."""

    def __init__(self) -> None:
        self._r = lib.tg_leak_scan()
        if not self._r:
            check_status(lib.tg_last_status())

    def __del__(self) -> None:
        r, self._r = getattr(self, "_r", None), None
        if r and lib is not None:
            lib.tg_leak_report_free(r)

    @property
    def roots(self) -> int:
        return lib.tg_leak_report_nroots(self._r)

    @property
    def outlived_nodes(self) -> int:
        return lib.tg_leak_report_outlived_nodes(self._r)

    @property
    def kept_bytes(self) -> int:
        return lib.tg_leak_report_kept_bytes(self._r)

    @property
    def in_cycles(self) -> int:
        return lib.tg_leak_report_unreachable(self._r)

    def __bool__(self) -> bool:
        return self.outlived_nodes > 0 or self.in_cycles > 0

    def text(self) -> str:
        """The report for people (``tg_leak_report_print``)."""
        return _through_file(lambda f: lib.tg_leak_report_print(f, self._r))

    def json(self) -> str:
        """The report as one JSON object (``tg_leak_report_json``)."""
        return _through_file(lambda f: lib.tg_leak_report_json(f, self._r))

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        import html
        head = ("no graph kept alive" if not self else
                f"{self.outlived_nodes} graph nodes kept alive by {self.roots} roots, "
                f"{self.kept_bytes} bytes")
        return f"<b>tapegrad leak check: {head}</b><pre>{html.escape(self.text())}</pre>"


def leak_check() -> LeakReport:
    """Scans every live library object (``tg_leak_scan``)."""
    return LeakReport()


class Graph:
    """The graph behind some tensors as Graphviz DOT (``tg_graph_dot``);
    ``_repr_svg_`` draws it when Graphviz's ``dot`` is installed."""

    def __init__(self, roots: Sequence, names: Optional[Sequence[str]] = None) -> None:
        self._roots = list(roots)  # the tensors stay alive while the graph is shown
        hs = (ctypes.c_void_p * len(self._roots))(*[t._h for t in self._roots])
        nm = None
        if names is not None:
            self._names = [n.encode() for n in names]
            nm = (ctypes.c_char_p * len(self._names))(*self._names)
        self.dot = _through_file(lambda f: lib.tg_graph_dot(f, hs, len(self._roots), nm))

    def __str__(self) -> str:
        return self.dot

    def svg(self) -> Optional[str]:
        """The graph drawn by ``dot -Tsvg``, or None without Graphviz."""
        exe = shutil.which("dot")
        if exe is None:
            return None
        return subprocess.run([exe, "-Tsvg"], input=self.dot, capture_output=True, text=True,
                              check=True).stdout

    def _repr_svg_(self) -> Optional[str]:
        return self.svg()


def graph(*roots, names: Optional[Sequence[str]] = None) -> Graph:
    """``Graph(roots, names)``: the graph that backward from these tensors would walk."""
    return Graph(roots, names)


class Timeline:
    """The memory timeline (``tg_timeline_start`` ... ``stop``) as a context
    manager: every allocation and free inside, by category and op. ``svg()``
    (and the notebook display) draws it; ``write_trace(path)`` writes Chrome's
    trace format."""

    def __init__(self, title: str = "tapegrad memory") -> None:
        self.title = title

    def __enter__(self) -> "Timeline":
        lib.tg_timeline_clear()
        check_status(lib.tg_timeline_start())
        return self

    def __exit__(self, *exc) -> None:
        check_status(lib.tg_timeline_stop())

    def svg(self) -> str:
        fd, path = tempfile.mkstemp(prefix="tapegrad-", suffix=".svg")
        os.close(fd)
        try:
            check_status(lib.tg_timeline_write_svg(path.encode(), self.title.encode()))
            with open(path) as r:
                return r.read()
        finally:
            os.unlink(path)

    def write_trace(self, path: str) -> None:
        check_status(lib.tg_timeline_write_trace(path.encode()))

    def _repr_svg_(self) -> str:
        return self.svg()
