"""The extension module tapegrad._C (the C library's binding, python/src/)
and the package's exceptions.

The module is imported from the package's directory (an installed wheel);
in a checkout, where the package's Python files sit in python/tapegrad and
the module is built into <build>/python/tapegrad, it is loaded from there:
the file named by TAPEGRAD_EXT, else the checkout's build/ (the first of
build/python/tapegrad/_C*.so). Every call names the caller's Python file and
line as its call site, so the library's messages (an in-place edit that
broke a saved tensor, say) point at the user's line, not at this package.
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def _preload_system_blas() -> None:
    """Loads the system's default OpenBLAS (the one NumPy and PyTorch reach
    through libblas.so.3) before the library. The library is built against
    OpenBLAS's OpenMP variant, and both variants are the soname
    libopenblas.so.0: whichever a process loads first serves every later
    user. Had the library's come first, PyTorch, which then runs with one
    OpenMP thread, would call an OpenBLAS that expects two, and its first
    threaded GEMM would wait forever (OpenBLAS 0.3.21). With the system's
    first, the library's GEMMs run on OpenBLAS's own thread pool, as NumPy's
    and PyTorch's do. TAPEGRAD_BLAS=own skips this (a process without them)."""
    if os.environ.get("TAPEGRAD_BLAS") == "own":
        return
    try:
        ctypes.CDLL("libopenblas.so.0", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass  # none installed system-wide: the library brings its own


def _candidates() -> list:
    here = Path(__file__).resolve().parent
    env = os.environ.get("TAPEGRAD_EXT")
    out = [Path(env)] if env else []
    for build in sorted(here.parent.parent.glob("build*/python/tapegrad")):
        out += sorted(build.glob("_C.*.so"))
    return out


def _load() -> ModuleType:
    _preload_system_blas()
    if not os.environ.get("TAPEGRAD_EXT"):
        try:
            from . import _C  # an installed package: the module is beside this file
            return _C
        except ImportError:
            pass
    tried = []
    for path in _candidates():
        if not path.is_file():
            tried.append(str(path))
            continue
        loader = importlib.machinery.ExtensionFileLoader("tapegrad._C", str(path))
        spec = importlib.util.spec_from_file_location("tapegrad._C", str(path), loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        sys.modules["tapegrad._C"] = module
        return module
    raise ImportError("tapegrad: the extension module tapegrad._C was not found (tried the "
                      "package's directory" + "".join(", " + t for t in tried) +
                      "); install the package (pip install .), build the checkout (make), "
                      "or set TAPEGRAD_EXT to the module's file")


_C = _load()


class TapegradError(RuntimeError):
    """A failed library call: ``status`` (an int, ``status_name`` its C name)
    and the library's whole message. PyTorch raises RuntimeError for most of
    these; the subclasses below are also the matching built-in exception."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.status_name = _C.status_name(status)  # the C enum's name
        super().__init__(f"{self.status_name}: {message}")


class DtypeError(TapegradError, TypeError):
    """TG_ERR_DTYPE: a dtype the op does not take (also a TypeError)."""


class DimError(TapegradError, IndexError):
    """TG_ERR_DIM: a dim out of range (also an IndexError, as PyTorch's)."""


class InvalidValueError(TapegradError, ValueError):
    """TG_ERR_VALUE: an argument's value is invalid (also a ValueError)."""


class OutOfMemoryError(TapegradError, MemoryError):
    """TG_ERR_NOMEM: an allocation failed (also a MemoryError)."""


class ReadOnlyError(TapegradError, ValueError):
    """TG_ERR_READONLY: a write to read-only memory (also a ValueError, as
    NumPy's "assignment destination is read-only")."""


def _status_value(name: str) -> int:
    for value in range(64):
        if _C.status_name(value) == name:
            return value
    return -1


_BY_STATUS = {_status_value(name): cls for name, cls in (
    ("TG_ERR_DTYPE", DtypeError), ("TG_ERR_DIM", DimError), ("TG_ERR_VALUE", InvalidValueError),
    ("TG_ERR_NOMEM", OutOfMemoryError), ("TG_ERR_READONLY", ReadOnlyError))}
_BY_STATUS.pop(-1, None)  # a status this library does not have
