"""tapegrad's fused log-prob / entropy ops on tapegrad tensors
(include/tapegrad/logprob.h): ``logprob_entropy`` from logits and
``linear_logprob_entropy`` from hidden states and an output layer. Both are
also reachable as ``tapegrad.logprob_entropy`` and
``tapegrad.linear_logprob_entropy``; ``tapegrad.torch`` wraps the same calls
for PyTorch tensors.
"""
from __future__ import annotations

import ctypes
from typing import Tuple

from ._lib import Site, check_status, lib, site

_IMPLS = {"fused": 0, "composite": 1}


class LogprobOpts(ctypes.Structure):
    """tg_logprob_opts (tapegrad/logprob.h), field for field."""
    _fields_ = [("temperature", ctypes.c_double), ("ignore_index", ctypes.c_int64),
                ("chunk_size", ctypes.c_int64), ("want_entropy", ctypes.c_bool),
                ("entropy_grad", ctypes.c_bool), ("impl", ctypes.c_int),
                ("grad_into_logits", ctypes.c_bool), ("comm", ctypes.c_void_p),
                ("vocab_start", ctypes.c_int64)]


class LinearOpts(ctypes.Structure):
    """tg_linear_logprob_opts (tapegrad/logprob.h), field for field."""
    _fields_ = [("temperature", ctypes.c_double), ("ignore_index", ctypes.c_int64),
                ("want_entropy", ctypes.c_bool), ("entropy_grad", ctypes.c_bool),
                ("impl", ctypes.c_int), ("workspace_bytes", ctypes.c_size_t),
                ("chunk_rows", ctypes.c_int64), ("vocab_block", ctypes.c_int64),
                ("grad_f32", ctypes.c_bool), ("comm", ctypes.c_void_p),
                ("vocab_start", ctypes.c_int64), ("device", ctypes.c_int)]


_vpp = ctypes.POINTER(ctypes.c_void_p)
lib.tg_logprob_opts_default.restype = LogprobOpts
lib.tg_logprob_opts_default.argtypes = []
lib.tg_logprob_entropy_lse_at.restype = ctypes.c_int
lib.tg_logprob_entropy_lse_at.argtypes = [Site, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.POINTER(LogprobOpts), _vpp, _vpp, _vpp]
lib.tg_linear_logprob_opts_default.restype = LinearOpts
lib.tg_linear_logprob_opts_default.argtypes = []
lib.tg_linear_logprob_entropy_at.restype = ctypes.c_int
lib.tg_linear_logprob_entropy_at.argtypes = [Site, ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.POINTER(LinearOpts), _vpp, _vpp, _vpp]


def _impl(impl: str, op: str) -> int:
    if impl not in _IMPLS:
        raise ValueError(f"tapegrad.{op}: impl={impl!r} is not one of fused, composite")
    return _IMPLS[impl]


def _run3(fn, *args) -> Tuple:
    """Calls a fused op's C entry with its three output slots (logprob,
    entropy, lse) after args; raises its error; returns the three Tensors."""
    from . import Tensor
    out = [ctypes.c_void_p() for _ in range(3)]
    check_status(fn(site(), *args, *[ctypes.byref(o) for o in out]))
    return tuple(Tensor(o.value) for o in out)


def _input(x, op: str, what: str):
    """x as a tapegrad Tensor: a Tensor as it is, a list or NumPy array
    converted (tapegrad.tensor), as the generated ops take them."""
    from . import Tensor, tensor
    if isinstance(x, Tensor):
        return x
    try:
        return tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tapegrad.{op}: {what} is not a tensor ({e})") from None


# the libraries' defaults, read once: each call copies them
_LOGPROB_DEFAULTS = lib.tg_logprob_opts_default()
_LINEAR_DEFAULTS = lib.tg_linear_logprob_opts_default()


def logprob_entropy(logits, targets, *, temperature: float = 1.0, ignore_index: int = -100,
                    entropy_grad: bool = True, chunk_size: int = 0, impl: str = "fused",
                    want_lse: bool = False) -> Tuple:
    """Log-prob of ``targets`` and entropy of softmax(logits / temperature)
    over the last dim (tg_logprob_entropy_lse). PyTorch equivalent::

        logp = torch.log_softmax(logits / T, -1)
        lp = logp.gather(-1, targets[..., None])[..., 0]; H = -(logp.exp() * logp).sum(-1)

    logits (..., V) f32/f64/bf16, targets i64 (...). ``impl="composite"``
    builds it from generic ops (the teaching baseline: it saves (N, V)
    tensors); ``chunk_size`` rows per block (composite: checkpoints).
    ``entropy_grad=False``: the entropy is logged only, nothing is saved for
    it. Returns (lp, H), or (lp, H, lse) with ``want_lse``.
    """
    o = LogprobOpts.from_buffer_copy(_LOGPROB_DEFAULTS)
    o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
    o.chunk_size, o.impl = chunk_size, _impl(impl, "logprob_entropy")
    z = _input(logits, "logprob_entropy", "logits")
    y = _input(targets, "logprob_entropy", "targets")
    out = _run3(lib.tg_logprob_entropy_lse_at, z._h, y._h, ctypes.byref(o))
    return out if want_lse else out[:2]


def linear_logprob_entropy(hidden, weight, targets, bias=None, *, temperature: float = 1.0,
                           ignore_index: int = -100, entropy_grad: bool = True,
                           chunk_rows: int = 0, vocab_block: int = 0, impl: str = "fused",
                           workspace_bytes: int = 0, want_lse: bool = False) -> Tuple:
    """``logprob_entropy(hidden @ weight.T + bias, targets)`` without the (N, V)
    logits ever being whole (tg_linear_logprob_entropy): chunks of rows times
    blocks of the vocabulary, recomputed in backward. hidden (..., d), weight
    (V, d), bias (V) or None. ``impl="composite"`` materializes the logits (the
    baseline); chunk_rows / vocab_block / workspace_bytes 0 take the defaults.
    Returns (lp, H), or (lp, H, lse) with ``want_lse``.
    """
    op = "linear_logprob_entropy"
    o = LinearOpts.from_buffer_copy(_LINEAR_DEFAULTS)
    o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
    o.chunk_rows, o.vocab_block = chunk_rows, vocab_block
    o.impl, o.workspace_bytes = _impl(impl, op), workspace_bytes
    h, w, y = (_input(x, op, what) for x, what in
               ((hidden, "hidden"), (weight, "weight"), (targets, "targets")))
    b = _input(bias, op, "bias")._h if bias is not None else None
    out = _run3(lib.tg_linear_logprob_entropy_at, h._h, w._h, b, y._h, ctypes.byref(o))
    return out if want_lse else out[:2]
