"""What the audit tools share: how a tensor and its storage are named and
counted, how bytes are written (as the C library's reports write them), and
which Python frame is the user's."""
from __future__ import annotations

import os
import sysconfig
import threading
from typing import Any, Optional, Tuple

import torch

# ---- storages --------------------------------------------------------------------------------

StorageKey = Tuple[str, int]
"""A storage's identity while it is alive: (device, address of its first byte)."""

_UNTYPED = hasattr(torch.Tensor, "untyped_storage")  # PyTorch >= 2.0; 1.13: Tensor.storage()


def storage_key(t: torch.Tensor) -> Optional[StorageKey]:
    """The identity of the storage under ``t`` (views and ``detach()`` share
    it), or None for a tensor without one (sparse, meta, or 0 bytes). Cheap:
    no storage object is made."""
    try:
        ptr = t.data_ptr() - t.storage_offset() * t.element_size()
    except (RuntimeError, NotImplementedError):
        return None
    return (str(t.device), ptr) if ptr else None


def storage_bytes(t: torch.Tensor) -> int:
    """The bytes of the whole storage under ``t`` (a view counts its base's),
    0 for a tensor without one. PyTorch: ``t.untyped_storage().nbytes()``."""
    try:
        s = t.untyped_storage() if _UNTYPED else t.storage()
        return int(s.nbytes())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


def is_tensor(o: Any) -> bool:
    """isinstance(o, torch.Tensor) without asking ``o`` for its ``__class__``
    (some module objects warn when asked)."""
    return issubclass(type(o), torch.Tensor)


# ---- names, as the C library's reports write them -------------------------------------------

_DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
           torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32", torch.int16: "i16",
           torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool", torch.complex64: "c64",
           torch.complex128: "c128"}


def dtype_name(dt: torch.dtype) -> str:
    return _DTYPES.get(dt, str(dt).replace("torch.", ""))


def shape_str(shape: Any) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def tensor_desc(t: torch.Tensor) -> str:
    """``f32 [1024, 32000]``, with the device when it is not the CPU."""
    dev = "" if t.device.type == "cpu" else f" {t.device}"
    return f"{dtype_name(t.dtype)} {shape_str(t.shape)}{dev}"


def fmt_bytes(b: float) -> str:
    """Bytes for people, as the C reports write them (tg__fmt_bytes)."""
    if b >= 1024.0 * 1024.0:
        return f"{b / (1024.0 * 1024.0):.1f} MiB"
    if b >= 1024.0:
        return f"{b / 1024.0:.1f} KiB"
    return f"{b:.0f} B"


# ---- the user's frames -------------------------------------------------------------------------

def _dir(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) + os.sep


_TAPEGRAD_DIR = os.path.dirname(_dir(__file__).rstrip(os.sep)) + os.sep  # python/tapegrad/
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
LIBRARY_DIRS: Tuple[str, ...] = (_dir(torch.__file__), _TAPEGRAD_DIR, _STDLIB_DIR)
"""Frames under these are never the user's: PyTorch, tapegrad, the standard library."""

_is_library: dict = {}  # co_filename -> bool


def is_library_file(filename: str) -> bool:
    r = _is_library.get(filename)
    if r is None:
        a = os.path.abspath(filename)
        r = a.startswith(LIBRARY_DIRS) and not os.path.basename(a) == "__main__.py" or \
            filename.startswith("<frozen")
        _is_library[filename] = r
    return r


def user_frame(f: Any) -> Any:
    """The innermost frame at or above ``f`` whose code is not PyTorch's,
    tapegrad's or the standard library's (``f`` itself when all are)."""
    g = f
    while g is not None and is_library_file(g.f_code.co_filename):
        g = g.f_back
    return g if g is not None else f


_short: dict = {}  # co_filename -> (working directory, path written)


def short_path(filename: str) -> str:
    """A file's name as reports write it: relative to the working directory
    when it lies under it (``examples/python/story.py``), else as given."""
    cwd = os.getcwd()
    got = _short.get(filename)
    if got is None or got[0] != cwd:
        p = filename
        if os.path.isabs(filename) and filename.startswith(cwd + os.sep):
            p = os.path.relpath(filename, cwd)
        _short[filename] = got = (cwd, p)
    return got[1]


class Site:
    """A line of the program: ``file:line`` when written (the file as
    ``short_path`` writes it, worked out only then: the hooks make many)."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line

    def __str__(self) -> str:
        return f"{short_path(self.file)}:{self.line}"

    __repr__ = __str__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Site) and (self.file, self.line) == (other.file, other.line)

    def __hash__(self) -> int:
        return hash((self.file, self.line))


def site_of(f: Any) -> Site:
    """The line a frame is at."""
    return Site(f.f_code.co_filename, f.f_lineno)


# ---- per thread state -------------------------------------------------------------------------

class ThreadState(threading.local):
    """Flags the hooks of this package read: ``busy`` while tapegrad's own code
    runs PyTorch ops (the dispatch mode lets them through unrecorded),
    ``probe`` a list collecting what saved-tensor unpacks return while a report
    reads a graph's saved tensors (no version check then)."""

    def __init__(self) -> None:
        self.busy = False
        self.probe: Optional[list] = None


TLS = ThreadState()


class Internal:
    """Marks tapegrad's own objects: the search for holders does not look
    inside them (a recorder holds saved tensors, a report tensors' names)."""

    __slots__ = ()
    _tapegrad_internal = True
