"""tapegrad's fused log-prob / entropy ops on tapegrad tensors
(include/tapegrad/logprob.h): ``logprob_entropy`` from logits and
``linear_logprob_entropy`` from hidden states and an output layer. Both are
also reachable as ``tapegrad.logprob_entropy`` and
``tapegrad.linear_logprob_entropy``; ``tapegrad.torch`` wraps the same calls
for PyTorch tensors.
"""
from __future__ import annotations

import ctypes
from typing import Optional, Tuple

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


def run3(fn, *args):
    """Calls a fused op's C entry with its three output slots (logprob,
    entropy, lse) after args; raises its error; returns the three handles."""
    out = [ctypes.c_void_p() for _ in range(3)]
    check_status(fn(site(), *args, *[ctypes.byref(o) for o in out]))
    return [o.value for o in out]


def logprob_opts(temperature: float, ignore_index: int, entropy_grad: bool,
                 chunk_size: int = 0, impl: str = "fused") -> LogprobOpts:
    o = lib.tg_logprob_opts_default()
    o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
    o.chunk_size, o.impl = chunk_size, _impl(impl, "logprob_entropy")
    return o


def linear_opts(temperature: float, ignore_index: int, entropy_grad: bool, chunk_rows: int,
                vocab_block: int, impl: str = "fused", workspace_bytes: int = 0) -> LinearOpts:
    o = lib.tg_linear_logprob_opts_default()
    o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
    o.chunk_rows, o.vocab_block = chunk_rows, vocab_block
    o.impl, o.workspace_bytes = _impl(impl, "linear_logprob_entropy"), workspace_bytes
    return o


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
    from . import Tensor
    o = logprob_opts(temperature, ignore_index, entropy_grad, chunk_size, impl)
    lp, h, lse = run3(lib.tg_logprob_entropy_lse_at, logits._h, targets._h, ctypes.byref(o))
    out = (Tensor(lp), Tensor(h), Tensor(lse))
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
    from . import Tensor
    o = linear_opts(temperature, ignore_index, entropy_grad, chunk_rows, vocab_block, impl,
                    workspace_bytes)
    lp, h, lse = run3(lib.tg_linear_logprob_entropy_at, hidden._h, weight._h,
                      bias._h if bias is not None else None, targets._h, ctypes.byref(o))
    out = (Tensor(lp), Tensor(h), Tensor(lse))
    return out if want_lse else out[:2]
