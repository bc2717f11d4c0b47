"""The C library through ctypes: where it is found, and the signatures used.

The library is searched in this order: the file named by the environment
variable TAPEGRAD_LIB; a libtapegrad.so shipped inside the package; the
build tree of the checkout this package sits in (build/lib). Every function
taking a tg_site gets the caller's Python file and line (see ``site``), so
the library's messages (an in-place edit that broke a saved tensor, say)
name the Python line, not this module.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import sys
from pathlib import Path



class TapegradError(RuntimeError):
    """A failed library call: ``status`` (an int, ``status_name`` its C name)
    and the library's whole message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.status_name = lib.tg_status_name(status).decode()  # the C enum's name
        super().__init__(f"{self.status_name}: {message}")


class Site(ctypes.Structure):
    """tg_site: the caller's file and line, passed by value."""
    _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_int)]


class LiveCounts(ctypes.Structure):
    _fields_ = [("tensors", ctypes.c_int64), ("storages", ctypes.c_int64),
                ("nodes", ctypes.c_int64)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DL_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DL_DELETER)]

RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _candidates() -> list:
    env = os.environ.get("TAPEGRAD_LIB")
    here = Path(__file__).resolve().parent
    out = [Path(env)] if env else []
    out += sorted(here.glob("libtapegrad.so*"))
    out.append(here.parent.parent / "build" / "lib" / "libtapegrad.so")
    return out


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


def _load() -> ctypes.CDLL:
    _preload_system_blas()
    tried = []
    for p in _candidates():
        if p.is_file():
            return ctypes.CDLL(str(p))
        tried.append(str(p))
    raise ImportError("tapegrad: libtapegrad.so not found (tried: " + ", ".join(tried) +
                      "); build the checkout (make) or set TAPEGRAD_LIB")


lib = _load()
_vp, _i64p, _int, _dbl, _bool = (ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                 ctypes.c_double, ctypes.c_bool)


def _sig(name: str, restype, *argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_sig("tg_last_error", ctypes.c_char_p)
_sig("tg_last_status", _int)
_sig("tg_clear_error", None)
_sig("tg_release", _int, _vp)
_sig("tg_retain", _vp, _vp)
_sig("tg_ndim", _int, _vp)
_sig("tg_shape", _i64p, _vp)
_sig("tg_strides", _i64p, _vp)
_sig("tg_numel", ctypes.c_int64, _vp)
_sig("tg_get_dtype", _int, _vp)
_sig("tg_get_device", _int, _vp)
_sig("tg_data", _vp, _vp)
_sig("tg_version", ctypes.c_uint64, _vp)
_sig("tg_item", _int, _vp, ctypes.POINTER(_dbl))
_sig("tg_copy_out", _int, _vp, _int, _vp, ctypes.c_size_t)
_sig("tg_from_data_at", _vp, Site, _int, _int, _i64p, _vp)
_sig("tg_from_blob_at", _vp, Site, _int, _int, _int, _i64p, _i64p, _vp, RELEASE_FN, _vp)
_sig("tg_to_dlpack", ctypes.POINTER(DLManagedTensor), _vp)
_sig("tg_from_dlpack_at", _vp, Site, _vp)
_sig("tg_set_requires_grad", _int, _vp, _bool)
_sig("tg_requires_grad", _bool, _vp)
_sig("tg_grad", _vp, _vp)
_sig("tg_zero_grad", _int, _vp)
_sig("tg_detach_at", _vp, Site, _vp)
_sig("tg_backward", _int, _vp, _vp, _bool)
_sig("tg_set_grad_enabled", _bool, _bool)
_sig("tg_grad_fn_name", ctypes.c_char_p, _vp)
_sig("tg_set_name", _vp, _vp, ctypes.c_char_p)
_sig("tg_name", ctypes.c_char_p, _vp)
_sig("tg_live", LiveCounts)
_sig("tg_status_name", ctypes.c_char_p, _int)
_sig("tg_cuda_device_count", _int)
_sig("tg_mem_category_name", ctypes.c_char_p, _int)
# the memory categories, named by the library ("?" past the last): tg_mem_stats' arrays
CATEGORIES = tuple(itertools.takewhile(lambda n: n != "?", (
    lib.tg_mem_category_name(c).decode() for c in itertools.count())))


class MemStats(ctypes.Structure):
    """tg_mem_stats: per-category arrays as long as the library's categories."""
    _fields_ = [("live", ctypes.c_size_t * len(CATEGORIES)),
                ("peak", ctypes.c_size_t * len(CATEGORIES)),
                ("live_total", ctypes.c_size_t), ("peak_total", ctypes.c_size_t),
                ("saved", ctypes.c_size_t), ("saved_peak", ctypes.c_size_t),
                ("cached", ctypes.c_size_t), ("n_alloc", ctypes.c_uint64),
                ("n_free", ctypes.c_uint64)]


_sig("tg_mem_get", _int, _int, ctypes.POINTER(MemStats))
_sig("tg_mem_reset_peak", _int, _int)
_sig("tg_mem_empty_cache", _int, _int)
_sig("tg_mark_modified_at", _int, Site, _vp, ctypes.c_char_p)
for _n in ("add", "sub", "mul", "div", "matmul"):
    _sig(f"tg_{_n}_at", _vp, Site, _vp, _vp)
for _n in ("neg", "exp", "log", "sqrt", "tanh", "relu", "sum", "mean"):
    _sig(f"tg_{_n}_at", _vp, Site, _vp)
for _n in ("scale", "add_scalar", "pow_scalar"):
    _sig(f"tg_{_n}_at", _vp, Site, _vp, _dbl)
for _n in ("add_", "sub_", "mul_"):
    _sig(f"tg_{_n}_at", _int, Site, _vp, _vp)
_sig("tg_scale__at", _int, Site, _vp, _dbl)

_files: dict = {}  # interned file names: the library keeps the pointers in its graphs


def site(depth: int = 2) -> Site:
    """The first caller outside this package, as a tg_site."""
    f = sys._getframe(depth)
    pkg = os.path.dirname(__file__)
    while f is not None and os.path.dirname(f.f_code.co_filename) == pkg:
        f = f.f_back
    name = f.f_code.co_filename if f is not None else "<python>"
    b = _files.setdefault(name, name.encode())
    return Site(b, f.f_lineno if f is not None else 0)


def check(handle):
    """The handle, or TapegradError with the library's status and message for NULL."""
    if not handle:
        status = lib.tg_last_status()
        msg = (lib.tg_last_error() or b"").decode(errors="replace")
        lib.tg_clear_error()
        raise TapegradError(status, msg)
    return handle


def check_status(st: int) -> None:
    if st != 0:
        msg = (lib.tg_last_error() or b"").decode(errors="replace")
        lib.tg_clear_error()
        raise TapegradError(st, msg)
