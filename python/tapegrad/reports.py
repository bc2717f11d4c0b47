"""The library's reports from Python: the leak checker, the memory timeline
and the graph as DOT, each with a notebook display (``_repr_html_`` /
``_repr_svg_``). PyTorch has no equivalent of the first two; the third is
what torchviz draws.
"""
from __future__ import annotations

import html
import os
import shutil
import subprocess
import tempfile
from typing import Any, List, Optional, Sequence

from ._lib import _C


def step_mark(label: Optional[str] = None) -> int:
    """Ends the current step (a microbatch, an optimizer step) and starts the
    next: graphs from earlier steps still alive are what ``leak_check``
    reports. Returns the new step number (``tg_step_mark``)."""
    return _C.step_mark(label)


class LeakReport:
    """What ``leak_check()`` found: graph nodes kept alive from earlier steps,
    the roots holding them (``entries``: name, shape, creation file and line,
    step, nodes, bytes, path), the bytes they keep, objects in cycles.
    ``bool(report)`` is True when something leaked."""

    def __init__(self) -> None:
        scan = _C.leak_scan()
        self.roots: int = scan["roots"]
        self.outlived_nodes: int = scan["outlived_nodes"]
        self.kept_bytes: int = scan["kept_bytes"]
        self.in_cycles: int = scan["in_cycles"]
        self.growth: float = scan["growth"]
        self.growth_steps: int = scan["growth_steps"]
        self.entries: List[dict] = scan["entries"]
        self._text: str = scan["text"]
        self._json: str = scan["json"]

    def __bool__(self) -> bool:
        return self.outlived_nodes > 0 or self.in_cycles > 0

    def text(self) -> str:
        """The report for people (``tg_leak_report_print``)."""
        return self._text

    def json(self) -> str:
        """The report as one JSON object (``tg_leak_report_json``)."""
        return self._json

    def __str__(self) -> str:
        return self._text

    def _repr_html_(self) -> str:
        head = ("no graph kept alive" if not self else
                f"{self.outlived_nodes} graph nodes kept alive by {self.roots} roots, "
                f"{self.kept_bytes} bytes")
        return f"<b>tapegrad leak check: {head}</b><pre>{html.escape(self._text)}</pre>"


def leak_check() -> LeakReport:
    """Scans every live library object (``tg_leak_scan``)."""
    return LeakReport()


class Graph:
    """The graph behind some tensors as Graphviz DOT (``tg_graph_dot``);
    ``_repr_svg_`` draws it when Graphviz's ``dot`` is installed."""

    def __init__(self, roots: Sequence[Any], names: Optional[Sequence[Optional[str]]] = None) -> None:
        self.dot: str = _C.graph_dot(list(roots), None if names is None else list(names))

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


def graph(*roots: Any, names: Optional[Sequence[Optional[str]]] = None) -> Graph:
    """``Graph(roots, names)``: the graph that backward from these tensors
    would walk; names, one per root (None for none), label the roots."""
    return Graph(roots, names)


class Timeline:
    """The memory timeline (``tg_timeline_start`` ... ``stop``) as a context
    manager: every allocation and free inside, by category and op. ``svg()``
    (and the notebook display) draws it; ``write_trace(path)`` writes Chrome's
    trace format."""

    def __init__(self, title: str = "tapegrad memory") -> None:
        self.title = title

    def __enter__(self) -> "Timeline":
        _C.timeline_start()
        return self

    def __exit__(self, *exc: Any) -> None:
        _C.timeline_stop()

    def svg(self) -> str:
        fd, path = tempfile.mkstemp(prefix="tapegrad-", suffix=".svg")
        os.close(fd)
        try:
            _C.timeline_write(path, self.title)
            with open(path, encoding="utf-8", errors="backslashreplace") as r:
                return r.read()
        finally:
            os.unlink(path)

    def write_trace(self, path: "os.PathLike[str] | str") -> None:
        _C.timeline_write(path)

    def _repr_svg_(self) -> str:
        return self.svg()
