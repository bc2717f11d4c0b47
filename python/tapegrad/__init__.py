"""tapegrad: a reverse-mode autograd engine in C, from Python.

Tensors have the C library's semantics (version counters that name the
in-place op that broke a saved tensor, exact memory accounting) and
PyTorch's spelling. Memory is shared without a copy with NumPy
(``from_numpy``, ``numpy()``, the buffer protocol) and with any DLPack
framework (``from_dlpack``, ``__dlpack__``: ``torch.from_dlpack(t)``). A
library error is a ``TapegradError`` carrying the status and the library's
whole message; the call site it names is the caller's Python file and line.
Every op of the public headers is a function here and, when it takes a
tensor first, a Tensor method (``tapegrad.softmax_dim(x, -1)``,
``x.softmax_dim(-1)``).
"""
from __future__ import annotations

import builtins
import os
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Tuple, Union

from ._lib import (_BY_STATUS, DimError, DtypeError, InvalidValueError, OutOfMemoryError,
                   ReadOnlyError, TapegradError, _C)

__all__ = ["Tensor", "TapegradError", "DtypeError", "DimError", "InvalidValueError",
           "OutOfMemoryError", "ReadOnlyError", "tensor", "from_numpy", "from_dlpack", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "mem_stats", "live_counts",
           "float32", "float64", "int64", "bool_", "bfloat16", "leak_check", "step_mark", "graph",
           "Timeline", "logprob_entropy", "linear_logprob_entropy", "linear_loss", "LinearLossChunk",
           "reset_peak", "empty_cache", "ops"]

float32, float64, int64, bool_, bfloat16 = "f32", "f64", "i64", "bool", "bf16"
CATEGORIES: Tuple[str, ...] = _C.mem_categories()
"""The memory categories of ``mem_stats`` (leaf, activation, gradient, ...)."""


class Tensor(_C.TensorBase):
    """A handle on a library tensor (one reference, given back when the
    Python object goes). PyTorch equivalent: ``torch.Tensor``. Made by
    ``tensor``, ``from_numpy``, ``from_dlpack`` and the ops, never directly.
    Operators are PyTorch's: elementwise and broadcasting (``==`` too), the
    in-place forms (``+=``) writing the tensor itself; Python numbers and
    (nested) lists are operands too, numbers taking the tensor's dtype as
    PyTorch's do."""

    __slots__ = ()
    __array_priority__ = 1000  # ndarray (op) Tensor gives way to Tensor's operator

    def named(self, label: str) -> "Tensor":
        """Sets ``name`` and returns self: ``losses.append(loss.named("losses[3]"))``."""
        self.name = label
        return self

    def __array__(self, dtype: Any = None) -> Any:
        """NumPy's view of the memory (no copy) for a CPU tensor; NumPy takes
        it through the buffer protocol. PyTorch equivalent: ``Tensor.numpy()``."""
        import numpy as np
        if self.device != "cpu" or self.dtype == "bf16":
            raise TypeError(f"tapegrad: a {self.device} {self.dtype} tensor has no NumPy view "
                            "(CPU f32, f64, i64 and bool tensors do)")
        if self.requires_grad:
            raise RuntimeError("tapegrad: can't give NumPy a view of a tensor that requires "
                               "grad (writes would bypass autograd); use t.detach().numpy()")
        a = np.asarray(memoryview(self))
        return a if dtype is None else a.astype(dtype)

    def numpy(self) -> Any:
        """A NumPy array over the same memory (``torch.Tensor.numpy``):
        writes through either are seen by the other."""
        return self.__array__()

    def __dlpack__(self, stream: Optional[int] = None) -> Any:
        """A DLPack capsule over the same memory (the array API's ``__dlpack__``)."""
        return _C.to_dlpack(self, stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (2, 0) if self.device == "cuda" else (1, 0)

    def __repr__(self) -> str:
        if self.numel() <= 16 and self.device == "cpu":
            body = repr(self.tolist())
        else:
            body = f"shape={self.shape}"
        extra = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({body}, dtype={self.dtype}, device={self.device}{extra})"

    __str__ = __repr__


_C._register(Tensor, TapegradError, _BY_STATUS, os.path.dirname(os.path.abspath(__file__)))


# ---- creation ------------------------------------------------------------------------------

def tensor(data: Any, dtype: Optional[str] = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested lists, a
    NumPy array of any dtype and byte order, a Tensor): ``torch.tensor``.
    dtype: "f32", "f64", "i64", "bool" or "bf16" (also "float32", ...;
    default: f32 for floats, i64 for ints, bool for bools, an array's own
    where tapegrad has it). Converting to bool is ``!= 0`` (NaN is True);
    an int beyond int64 raises OverflowError, as does a float no int64 holds
    when converted to i64 (ValueError)."""
    t = _C.tensor(data, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(arr: Any) -> Tensor:
    """A tensor over a NumPy array's memory, no copy (``torch.from_numpy``):
    float32, float64, int64 or bool, in this machine's byte order, any
    non-negative strides. The array is kept alive until the last tensor on
    it is gone. A read-only array gives a read-only tensor (in-place ops
    refuse it). Writes from NumPy are seen (call ``mark_modified`` after one
    if a graph saved the tensor)."""
    import numpy as np
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"tapegrad.from_numpy: expected a numpy.ndarray, not "
                        f"{type(arr).__name__}")
    return _C.from_buffer(arr)


def from_dlpack(obj: Any) -> Tensor:
    """A tensor over another framework's memory, no copy (``torch.from_dlpack``):
    anything with ``__dlpack__`` (a PyTorch tensor, a NumPy array) or a
    "dltensor" capsule. The producer's memory lives until the last tensor on
    it is gone."""
    return _C.from_dlpack(obj)


# ---- grad mode, memory --------------------------------------------------------------------------

def set_grad_enabled(mode: bool) -> bool:
    """Sets this thread's grad mode and returns the previous one
    (``torch.set_grad_enabled`` as a function)."""
    return _C.set_grad_enabled(mode)


def is_grad_enabled() -> bool:
    """This thread's grad mode (``torch.is_grad_enabled``)."""
    return _C.is_grad_enabled()


@contextmanager
def no_grad() -> Iterator[None]:
    """``torch.no_grad()``: nothing is recorded inside (this thread)."""
    prev = _C.set_grad_enabled(False)
    try:
        yield
    finally:
        _C.set_grad_enabled(prev)


@contextmanager
def enable_grad() -> Iterator[None]:
    """``torch.enable_grad()``: recording on inside (this thread)."""
    prev = _C.set_grad_enabled(True)
    try:
        yield
    finally:
        _C.set_grad_enabled(prev)


def mem_stats(device: str = "cpu") -> dict:
    """The library's exact byte counts for a device (``tg_mem_get``): live and
    peak by category, totals, saved bytes. PyTorch equivalent:
    ``torch.cuda.memory_stats`` (for the library's own memory only)."""
    return _C.mem_stats(device)


def reset_peak(device: str = "cpu") -> None:
    """Sets the peaks of ``mem_stats`` to the live figures (tg_mem_reset_peak):
    ``torch.cuda.reset_peak_memory_stats``."""
    _C.reset_peak(device)


def empty_cache(device: str = "cpu") -> None:
    """Gives the blocks the library keeps for reuse back to the system (or to
    CUDA): tg_mem_empty_cache. PyTorch equivalent: ``torch.cuda.empty_cache``."""
    _C.empty_cache(device)


def live_counts() -> dict:
    """Live library objects: tensors, storages, graph nodes."""
    return _C.live_counts()


from .reports import Timeline, graph, leak_check, step_mark  # noqa: E402  (uses Tensor)
from .fused import (LinearLossChunk, linear_logprob_entropy, linear_loss,  # noqa: E402
                    logprob_entropy)

# The op vocabulary, from the table generated from the public headers: a function per op,
# reached as an attribute of the package (module __getattr__, so that ``all``, ``sum`` or
# ``abs`` never shadow Python's builtins inside it), and a Tensor method per op taking a
# tensor first; the hand-written functions above keep their names.
from ._ops import OPS as _OPS  # noqa: E402

ops: dict = {name: getattr(_C, name) for name in _OPS}
"""Every op of the generated table by name (``tapegrad.ops["gelu"]``)."""

# Attributes of the module (a plain lookup: the call costs what the op costs), but for the
# ops named like a builtin (all, any, abs, sum, round, pow...), reached through __getattr__
# so that the package's own code still sees Python's.
globals().update({name: op for name, op in ops.items()
                  if name not in dir(builtins) and name not in globals()})


def __getattr__(name: str) -> Any:
    try:
        return ops[name]
    except KeyError:
        raise AttributeError(f"module 'tapegrad' has no attribute {name!r}") from None


def __dir__() -> list:
    return sorted(set(globals()) | set(ops))
