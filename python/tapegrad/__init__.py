"""tapegrad: a reverse-mode autograd engine in C, from Python.

Tensors have the C library's semantics (version counters that name the
in-place op that broke a saved tensor, exact memory accounting) and
PyTorch's spelling. Memory is shared without a copy with NumPy
(``from_numpy``, ``numpy()``) and with any DLPack framework (``from_dlpack``,
``__dlpack__``: ``torch.from_dlpack(t)``). A library error is a
``TapegradError`` carrying the status and the library's whole message; the
call site it names is the caller's Python file and line.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Tuple, Union

from ._lib import (CATEGORIES, DLManagedTensor, MemStats, RELEASE_FN, TapegradError, check,
                   check_status, lib, site)

__all__ = ["Tensor", "TapegradError", "tensor", "from_numpy", "from_dlpack", "no_grad",
           "mem_stats", "live_counts", "float32", "float64", "int64", "bool_", "bfloat16",
           "leak_check", "step_mark", "graph", "Timeline", "logprob_entropy",
           "linear_logprob_entropy", "reset_peak", "empty_cache"]

float32, float64, int64, bool_, bfloat16 = "f32", "f64", "i64", "bool", "bf16"
_DTYPES = {"f32": 0, "f64": 1, "i64": 2, "bool": 3, "bf16": 4}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_ITEMSIZE = {"f32": 4, "f64": 8, "i64": 8, "bool": 1, "bf16": 2}
_NP_CHARS = {"f32": "<f4", "f64": "<f8", "i64": "<i8", "bool": "|b1"}
_NP_TO_TG = {"float32": "f32", "float64": "f64", "int64": "i64", "bool": "bool"}
_Number = (int, float)

# ---- memory handed to the library (from_numpy, from_dlpack) ------------------------------
# The library calls _release(token) once, when the last tensor on the memory is gone: the
# owner (an array, a capsule) is kept here until then.
_owners: dict = {}
_tokens = itertools.count(1)
_owners_lock = threading.Lock()


def _release(ctx: Optional[int]) -> None:
    with _owners_lock:
        _owners.pop(ctx, None)


_release_cb = RELEASE_FN(_release)


def _keep(owner: Any) -> int:
    with _owners_lock:
        token = next(_tokens)
        _owners[token] = owner
    return token


class Tensor:
    """A handle on a library tensor (one reference, given back when the
    Python object goes). PyTorch equivalent: ``torch.Tensor``."""

    __slots__ = ("_h", "__weakref__")

    def __init__(self, handle: int) -> None:
        self._h = handle

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.tg_release(h)

    # ---- metadata --------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """Sizes (``torch.Tensor.shape``)."""
        n = lib.tg_ndim(self._h)
        p = lib.tg_shape(self._h)
        return tuple(p[i] for i in range(n))

    def stride(self) -> Tuple[int, ...]:
        """Strides in elements (``torch.Tensor.stride()``)."""
        n = lib.tg_ndim(self._h)
        p = lib.tg_strides(self._h)
        return tuple(p[i] for i in range(n))

    @property
    def ndim(self) -> int:
        return lib.tg_ndim(self._h)

    def numel(self) -> int:
        return lib.tg_numel(self._h)

    @property
    def dtype(self) -> str:
        """"f32", "f64", "i64", "bool" or "bf16" (``torch.Tensor.dtype``)."""
        return _DTYPE_NAMES[lib.tg_get_dtype(self._h)]

    @property
    def device(self) -> str:
        """"cpu" or "cuda"."""
        return "cuda" if lib.tg_get_device(self._h) == 1 else "cpu"

    def data_ptr(self) -> int:
        """Address of the first element (``torch.Tensor.data_ptr()``)."""
        return lib.tg_data(self._h) or 0

    @property
    def _version(self) -> int:
        """The storage's version counter (``torch.Tensor._version``)."""
        return lib.tg_version(self._h)

    # ---- autograd --------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return bool(lib.tg_requires_grad(self._h))

    def requires_grad_(self, flag: bool = True) -> "Tensor":
        """``torch.Tensor.requires_grad_``."""
        check_status(lib.tg_set_requires_grad(self._h, flag))
        return self

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient accumulated in this leaf, or None (``torch.Tensor.grad``)."""
        g = lib.tg_grad(self._h)
        if not g:
            if lib.tg_last_status():
                check(None)
            return None
        return Tensor(g)

    def zero_grad_(self) -> None:
        """Drops the accumulated gradient (``tensor.grad = None``)."""
        check_status(lib.tg_zero_grad(self._h))

    @property
    def name(self) -> str:
        """The label reports and error messages use ("" when none)."""
        return lib.tg_name(self._h).decode(errors="replace")

    @name.setter
    def name(self, label: str) -> None:
        lib.tg_set_name(self._h, label.encode())  # copied by the library

    def named(self, label: str) -> "Tensor":
        """Sets ``name`` and returns self: ``losses.append(loss.named("losses[3]"))``."""
        self.name = label
        return self

    @property
    def grad_fn(self) -> Optional[str]:
        """The name of the node that made this tensor, or None."""
        n = lib.tg_grad_fn_name(self._h)
        return n.decode() if n else None

    def backward(self, gradient: Optional["Tensor"] = None, retain_graph: bool = False) -> None:
        """``torch.Tensor.backward``."""
        check_status(lib.tg_backward(self._h, gradient._h if gradient is not None else None,
                                     retain_graph))

    def detach(self) -> "Tensor":
        """``torch.Tensor.detach``: the same memory, out of the graph."""
        return Tensor(check(lib.tg_detach_at(site(), self._h)))

    def mark_modified(self, what: str = "a write from Python") -> None:
        """Says the memory was written from outside the library (NumPy, PyTorch):
        a graph that saved this tensor then refuses it, naming ``what``."""
        b = _interned(what)
        check_status(lib.tg_mark_modified_at(site(), self._h, b))

    # ---- values ----------------------------------------------------------------------
    def item(self) -> Union[float, int, bool]:
        """``torch.Tensor.item``: a float, an int for i64, a bool for bool."""
        if self.dtype in ("i64", "bool"):  # exact: i64 values need not fit a double
            if self.numel() != 1:
                check_status(lib.tg_item(self._h, ctypes.byref(ctypes.c_double())))  # its error
            return self.reshape([]).tolist() if self.ndim else self.tolist()
        v = ctypes.c_double()
        check_status(lib.tg_item(self._h, ctypes.byref(v)))  # one element, or its error
        return v.value

    def tolist(self) -> Any:
        """``torch.Tensor.tolist``: nested lists of floats (ints for i64, bools
        for bool); a number for a 0-d tensor."""
        n = self.numel()
        exact = {"i64": (ctypes.c_int64, int), "bool": (ctypes.c_uint8, bool)}
        ctype, conv = exact.get(self.dtype, (ctypes.c_double, float))
        buf = (ctype * max(n, 1))()
        check_status(lib.tg_copy_out(self._h, _DTYPES.get(self.dtype, 1) if self.dtype in exact
                                     else _DTYPES["f64"], buf, ctypes.sizeof(buf)))
        flat = [conv(v) for v in list(buf)[:n]]
        for size in reversed(self.shape[1:]):
            flat = [flat[i:i + size] for i in range(0, len(flat), size)]
        return flat if self.ndim else flat[0]

    @property
    def __array_interface__(self) -> dict:
        """NumPy's view of the memory (no copy; CPU, not bf16): ``np.asarray(t)``
        shares it and keeps ``t`` alive."""
        if self.device != "cpu" or self.dtype == "bf16":
            raise TypeError(f"tapegrad: a {self.device} {self.dtype} tensor has no NumPy view")
        es = _ITEMSIZE[self.dtype]
        return {"version": 3, "shape": self.shape, "typestr": _NP_CHARS[self.dtype],
                "data": (self.data_ptr(), False), "strides": tuple(s * es for s in self.stride())}

    def numpy(self):
        """A NumPy array over the same memory (``torch.Tensor.numpy``)."""
        import numpy as np
        return np.asarray(self)

    def __dlpack__(self, stream: Optional[int] = None):
        """A DLPack capsule over the same memory (the array API's ``__dlpack__``)."""
        m = lib.tg_to_dlpack(self._h)
        if not m:
            check(None)
        return _capsule(m)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (2, 0) if self.device == "cuda" else (1, 0)

    def __repr__(self) -> str:
        if self.numel() <= 16 and self.device == "cpu":
            body = repr(self.tolist())
        else:
            body = f"shape={self.shape}"
        extra = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({body}, dtype={self.dtype}, device={self.device}{extra})"

    # ---- ops -------------------------------------------------------------------------
    def _bin(self, name: str, other: Any) -> "Tensor":
        o = other if isinstance(other, Tensor) else tensor(other, dtype=_scalar_dtype(other, self))
        return Tensor(check(getattr(lib, f"tg_{name}_at")(site(3), self._h, o._h)))

    def _un(self, name: str, *args: float) -> "Tensor":
        return Tensor(check(getattr(lib, f"tg_{name}_at")(site(3), self._h, *args)))

    def __add__(self, o): return self._un("add_scalar", float(o)) if isinstance(o, _Number) and self._float() else self._bin("add", o)
    def __radd__(self, o): return self.__add__(o)
    def __sub__(self, o): return self._un("add_scalar", -float(o)) if isinstance(o, _Number) and self._float() else self._bin("sub", o)
    def __rsub__(self, o): return (-self).__add__(o)
    def __mul__(self, o): return self._un("scale", float(o)) if isinstance(o, _Number) and self._float() else self._bin("mul", o)
    def __rmul__(self, o): return self.__mul__(o)
    def __truediv__(self, o): return self._un("scale", 1.0 / float(o)) if isinstance(o, _Number) and self._float() and o != 0 else self._bin("div", o)
    def __rtruediv__(self, o): return tensor(o, dtype=_scalar_dtype(o, self))._bin("div", self)
    def __matmul__(self, o): return self._bin("matmul", o)
    def __neg__(self): return self._un("neg")
    def __pow__(self, e): return self._un("pow_scalar", float(e))

    def __iadd__(self, o): check_status(lib.tg_add__at(site(), self._h, _as_tensor(o, self)._h)); return self
    def __isub__(self, o): check_status(lib.tg_sub__at(site(), self._h, _as_tensor(o, self)._h)); return self
    def __imul__(self, o):
        if isinstance(o, _Number):
            check_status(lib.tg_scale__at(site(), self._h, float(o)))
        else:
            check_status(lib.tg_mul__at(site(), self._h, o._h))
        return self

    def exp(self): return self._un("exp")
    def log(self): return self._un("log")
    def sqrt(self): return self._un("sqrt")
    def tanh(self): return self._un("tanh")
    def relu(self): return self._un("relu")
    def sum(self): return self._un("sum")
    def mean(self): return self._un("mean")

    def _float(self) -> bool:
        return self.dtype in ("f32", "f64")


def _scalar_dtype(x: Any, like: Tensor) -> str:
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return like.dtype if like.dtype in ("f32", "f64", "i64") else "i64"
    return like.dtype if like._float() else "f32"


def _as_tensor(x: Any, like: Tensor) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x, dtype=_scalar_dtype(x, like))


_names: dict = {}


def _interned(s: str) -> bytes:
    return _names.setdefault(s, s.encode())


# ---- creation ------------------------------------------------------------------------------

def tensor(data: Any, dtype: Optional[str] = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, a NumPy
    array): ``torch.tensor``. dtype: "f32", "f64", "i64", "bool" (default:
    f32 for floats, i64 for ints, bool for bools)."""
    flat, shape = _flatten(data)
    if dtype is None:
        dtype = ("bool" if all(isinstance(v, bool) for v in flat) and flat else
                 "i64" if all(isinstance(v, int) for v in flat) and flat else "f32")
    if dtype not in ("f32", "f64", "i64", "bool"):
        raise TypeError(f"tapegrad.tensor: dtype {dtype!r} (use f32, f64, i64 or bool)")
    ctype = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i64": ctypes.c_int64,
             "bool": ctypes.c_uint8}[dtype]
    buf = (ctype * max(len(flat), 1))(*[(int(v) if dtype in ("i64", "bool") else float(v))
                                        for v in flat])
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t = Tensor(check(lib.tg_from_data_at(site(), _DTYPES[dtype], len(shape), dims, buf)))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _flatten(data: Any):
    if hasattr(data, "tolist") and not isinstance(data, Tensor):
        data = data.tolist()
    if isinstance(data, (list, tuple)):
        if not data:
            return [], [0]
        parts = [_flatten(d) for d in data]
        inner = parts[0][1]
        if any(p[1] != inner for p in parts):
            raise ValueError("tapegrad.tensor: ragged nested sequence")
        return [v for p in parts for v in p[0]], [len(data)] + inner
    return [data], []


def from_numpy(arr) -> Tensor:
    """A tensor over a NumPy array's memory, no copy (``torch.from_numpy``):
    float32, float64, int64 or bool, any non-negative strides. The array is
    kept alive until the last tensor on it is gone; writes from NumPy are
    seen (call ``mark_modified`` after one if a graph saved the tensor)."""
    import numpy as np
    if not isinstance(arr, np.ndarray):
        raise TypeError("tapegrad.from_numpy: expected a numpy.ndarray")
    dt = _NP_TO_TG.get(arr.dtype.name)
    if dt is None:
        raise TypeError(f"tapegrad.from_numpy: dtype {arr.dtype} (float32, float64, int64, bool)")
    es = arr.itemsize
    if any(s % es for s in arr.strides):
        raise ValueError("tapegrad.from_numpy: strides that are not whole elements")
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(arr.ndim, 1))(*[s // es for s in arr.strides])
    token = _keep(arr)
    h = lib.tg_from_blob_at(site(), 0, _DTYPES[dt], arr.ndim, shape, strides,
                            ctypes.c_void_p(arr.ctypes.data if arr.size else None),
                            _release_cb, ctypes.c_void_p(token))
    if not h:
        _release(token)  # a failed call keeps nothing and calls nothing
        check(None)
    return Tensor(h)


# ---- DLPack ----------------------------------------------------------------------------------
_capi = ctypes.pythonapi
_capi.PyCapsule_New.restype = ctypes.py_object
_capi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# the same two calls on a raw PyObject * (the destructor's capsule is being freed: it must
# not become a Python object again)
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _capi))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _capi))


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(obj: int) -> None:
    # a capsule nobody consumed (still named "dltensor"): its tensor is given back
    if _raw_is_valid(obj, b"dltensor"):
        m = ctypes.cast(_raw_get_pointer(obj, b"dltensor"), ctypes.POINTER(DLManagedTensor))
        if m.contents.deleter:
            m.contents.deleter(m)


def _capsule(m) -> Any:
    return _capi.PyCapsule_New(ctypes.cast(m, ctypes.c_void_p), b"dltensor",
                               ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def from_dlpack(obj: Any) -> Tensor:
    """A tensor over another framework's memory, no copy (``torch.from_dlpack``):
    anything with ``__dlpack__`` (a PyTorch tensor, a NumPy array) or a
    "dltensor" capsule. The producer's memory lives until the last tensor on
    it is gone."""
    cap = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    if not _capi.PyCapsule_IsValid(cap, b"dltensor"):
        raise TypeError("tapegrad.from_dlpack: not a DLPack capsule (or one already used)")
    ptr = _capi.PyCapsule_GetPointer(cap, b"dltensor")
    h = lib.tg_from_dlpack_at(site(), ptr)
    if not h:
        check(None)
    _capi.PyCapsule_SetName(cap, b"used_dltensor")  # tapegrad owns it now
    return Tensor(h)


# ---- grad mode, memory --------------------------------------------------------------------------

@contextmanager
def no_grad() -> Iterator[None]:
    """``torch.no_grad()``: nothing is recorded inside."""
    prev = lib.tg_set_grad_enabled(False)
    try:
        yield
    finally:
        lib.tg_set_grad_enabled(prev)


def _device(op: str, device: str) -> int:
    """The tg_device of "cpu" or "cuda"; ValueError naming op otherwise."""
    from ._bind import _enum_value
    return _enum_value(op, "device", "tg_device", device)


def mem_stats(device: str = "cpu") -> dict:
    """The library's exact byte counts for a device (``tg_mem_get``): live and
    peak by category, totals, saved bytes. PyTorch equivalent:
    ``torch.cuda.memory_stats`` (for the library's own memory only)."""
    m = MemStats()
    check_status(lib.tg_mem_get(_device("mem_stats", device), ctypes.byref(m)))
    return {"live": dict(zip(CATEGORIES, m.live)), "peak": dict(zip(CATEGORIES, m.peak)),
            "live_total": m.live_total, "peak_total": m.peak_total, "saved": m.saved,
            "saved_peak": m.saved_peak}


def reset_peak(device: str = "cpu") -> None:
    """Sets the peaks of ``mem_stats`` to the live figures (tg_mem_reset_peak):
    ``torch.cuda.reset_peak_memory_stats``."""
    check_status(lib.tg_mem_reset_peak(_device("reset_peak", device)))


def empty_cache(device: str = "cpu") -> None:
    """Gives the blocks the library keeps for reuse back to the system (or to
    CUDA): tg_mem_empty_cache. PyTorch equivalent: ``torch.cuda.empty_cache``."""
    check_status(lib.tg_mem_empty_cache(_device("empty_cache", device)))


def live_counts() -> dict:
    """Live library objects: tensors, storages, graph nodes."""
    c = lib.tg_live()
    return {"tensors": c.tensors, "storages": c.storages, "nodes": c.nodes}


from .reports import Timeline, graph, leak_check, step_mark  # noqa: E402  (uses Tensor)
from .fused import linear_logprob_entropy, logprob_entropy  # noqa: E402


def _as_tensor_or_new(x: Any, like: Optional[Tensor]) -> Tensor:
    return tensor(x) if like is None else _as_tensor(x, like)


# The op vocabulary, from the table generated from the public headers (_ops.py): a function
# per op, reached as an attribute of the package (module __getattr__, so that ``all``, ``sum``
# or ``abs`` never shadow Python's builtins inside it), and a Tensor method per op taking a
# tensor first (``tapegrad.softmax_dim(x, -1)``, ``x.softmax_dim(-1)``); the hand-written
# functions and methods above keep their names.
from ._bind import bind_all  # noqa: E402

ops: dict = bind_all(Tensor, _as_tensor_or_new, {})
"""Every op of the generated table by name (``tapegrad.ops["gelu"]``)."""


def __getattr__(name: str) -> Any:
    try:
        return ops[name]
    except KeyError:
        raise AttributeError(f"module 'tapegrad' has no attribute {name!r}") from None


def __dir__() -> list:
    return sorted(set(globals()) | set(ops))
