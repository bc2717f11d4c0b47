"""tapegrad.torch: tapegrad's fused ops as PyTorch functions.

``logprob_entropy(logits, targets, ...)`` and
``linear_logprob_entropy(hidden, weight, targets, bias, ...)`` take PyTorch
tensors, run tapegrad's fused ops on their memory (DLPack, no copy), return
PyTorch tensors, and their gradients flow on in PyTorch's autograd. The
logits op saves nothing of shape (..., V) beyond the logits themselves,
where PyTorch's own ``log_softmax`` + ``gather`` + entropy keep several; the
linear op never makes the (N, V) logits at all. CPU tensors (CUDA ones once
the library runs on PyTorch's stream from here: not wired yet).
"""
from __future__ import annotations

import ctypes
from typing import Optional, Tuple

import torch as _torch

from . import Tensor, from_dlpack
from ._lib import Site, check_status, lib, site


class _LogprobOpts(ctypes.Structure):
    """tg_logprob_opts (tapegrad/logprob.h), field for field."""
    _fields_ = [("temperature", ctypes.c_double), ("ignore_index", ctypes.c_int64),
                ("chunk_size", ctypes.c_int64), ("want_entropy", ctypes.c_bool),
                ("entropy_grad", ctypes.c_bool), ("impl", ctypes.c_int),
                ("grad_into_logits", ctypes.c_bool), ("comm", ctypes.c_void_p),
                ("vocab_start", ctypes.c_int64)]


lib.tg_logprob_opts_default.restype = _LogprobOpts
lib.tg_logprob_opts_default.argtypes = []
_vpp = ctypes.POINTER(ctypes.c_void_p)
lib.tg_logprob_entropy_lse_at.restype = ctypes.c_int
lib.tg_logprob_entropy_lse_at.argtypes = [Site, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.POINTER(_LogprobOpts), _vpp, _vpp, _vpp]


class _LinearOpts(ctypes.Structure):
    """tg_linear_logprob_opts (tapegrad/logprob.h), field for field."""
    _fields_ = [("temperature", ctypes.c_double), ("ignore_index", ctypes.c_int64),
                ("want_entropy", ctypes.c_bool), ("entropy_grad", ctypes.c_bool),
                ("impl", ctypes.c_int), ("workspace_bytes", ctypes.c_size_t),
                ("chunk_rows", ctypes.c_int64), ("vocab_block", ctypes.c_int64),
                ("grad_f32", ctypes.c_bool), ("comm", ctypes.c_void_p),
                ("vocab_start", ctypes.c_int64), ("device", ctypes.c_int)]


lib.tg_linear_logprob_opts_default.restype = _LinearOpts
lib.tg_linear_logprob_opts_default.argtypes = []
lib.tg_linear_logprob_entropy_at.restype = ctypes.c_int
lib.tg_linear_logprob_entropy_at.argtypes = [Site, ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.POINTER(_LinearOpts), _vpp, _vpp, _vpp]


def _to_torch(t: Tensor) -> _torch.Tensor:
    return _torch.utils.dlpack.from_dlpack(t.__dlpack__())


def _from_torch(x: _torch.Tensor) -> Tensor:
    return from_dlpack(_torch.utils.dlpack.to_dlpack(x.detach()))


class _LogprobEntropy(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, temperature, ignore_index, entropy_grad):
        z = _from_torch(logits).requires_grad_(True)  # a leaf of tapegrad's graph
        y = _from_torch(targets.contiguous())
        o = lib.tg_logprob_opts_default()
        o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
        lp, h, lse = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        check_status(lib.tg_logprob_entropy_lse_at(site(), z._h, y._h, ctypes.byref(o),
                                                   ctypes.byref(lp), ctypes.byref(h),
                                                   ctypes.byref(lse)))
        lp, h, lse = Tensor(lp.value), Tensor(h.value), Tensor(lse.value)
        ctx.tg = (z, lp, h, lse, entropy_grad)
        outs = (_to_torch(lp), _to_torch(h), _to_torch(lse))
        if not entropy_grad:
            ctx.mark_non_differentiable(outs[1])
        return outs

    @staticmethod
    def backward(ctx, g_lp, g_h, g_lse):
        z, lp, h, lse, entropy_grad = ctx.tg
        root = _backward_root((lp, h, lse), (g_lp, g_h if entropy_grad else None, g_lse))
        # tapegrad's graph stays for another backward through PyTorch's
        # (retain_graph, gradcheck); it goes with ctx, when PyTorch frees its own
        z.zero_grad_()
        root.backward(retain_graph=True)
        return _to_torch(z.grad), None, None, None, None


def _backward_root(outs, grads):
    """sum(out * g) over the outputs that got a gradient: tapegrad's one root."""
    root = None
    for out, g in zip(outs, grads):
        if g is None:
            continue
        term = (out * _from_torch(g.contiguous())).sum()
        root = term if root is None else root + term
    return root


class _LinearLogprobEntropy(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, temperature, ignore_index, entropy_grad,
                chunk_rows, vocab_block):
        need = ctx.needs_input_grad
        h = _from_torch(hidden).requires_grad_(need[0])
        w = _from_torch(weight).requires_grad_(need[1])
        b = _from_torch(bias).requires_grad_(need[2]) if bias is not None else None
        y = _from_torch(targets.contiguous())
        o = lib.tg_linear_logprob_opts_default()
        o.temperature, o.ignore_index, o.entropy_grad = temperature, ignore_index, entropy_grad
        o.chunk_rows, o.vocab_block = chunk_rows, vocab_block
        lp, hh, lse = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        check_status(lib.tg_linear_logprob_entropy_at(
            site(), h._h, w._h, b._h if b is not None else None, y._h, ctypes.byref(o),
            ctypes.byref(lp), ctypes.byref(hh), ctypes.byref(lse)))
        lp, hh, lse = Tensor(lp.value), Tensor(hh.value), Tensor(lse.value)
        ctx.tg = (h, w, b, lp, hh, lse, entropy_grad)
        outs = (_to_torch(lp), _to_torch(hh), _to_torch(lse))
        if not entropy_grad:
            ctx.mark_non_differentiable(outs[1])
        return outs

    @staticmethod
    def backward(ctx, g_lp, g_h, g_lse):
        h, w, b, lp, hh, lse, entropy_grad = ctx.tg
        leaves = [t for t in (h, w, b) if t is not None and t.requires_grad]
        for t in leaves:
            t.zero_grad_()
        root = _backward_root((lp, hh, lse), (g_lp, g_h if entropy_grad else None, g_lse))
        root.backward(retain_graph=True)  # kept while PyTorch's graph is (gradcheck)
        grads = [_to_torch(t.grad) if t is not None and t.requires_grad and t.grad is not None
                 else None for t in (h, w, b)]
        return (*grads, None, None, None, None, None, None)


def linear_logprob_entropy(hidden: _torch.Tensor, weight: _torch.Tensor, targets: _torch.Tensor,
                           bias: Optional[_torch.Tensor] = None, *, temperature: float = 1.0,
                           ignore_index: int = -100, entropy_grad: bool = True,
                           want_lse: bool = False, chunk_rows: int = 0,
                           vocab_block: int = 0) -> Tuple[_torch.Tensor, ...]:
    """``logprob_entropy`` of ``hidden @ weight.T + bias`` without the logits
    ever being whole (tapegrad's fused linear op: chunks of rows times blocks
    of the vocabulary, recomputed in backward). PyTorch equivalent::

        logprob_entropy(hidden @ weight.T + bias, targets, ...)

    hidden (..., d), weight (V, d), bias (V) or None: float32 or float64, one
    dtype, CPU; gradients go to whichever requires grad. chunk_rows and
    vocab_block: 0 derives them from the workspace budget. Returns (lp, H),
    or (lp, H, lse) with ``want_lse``.
    """
    for x in (hidden, weight, bias):
        if x is not None and x.device.type != "cpu":
            raise NotImplementedError("tapegrad.torch: CUDA tensors are not wired yet")
    lp, h, lse = _LinearLogprobEntropy.apply(hidden, weight, bias, targets, float(temperature),
                                             int(ignore_index), bool(entropy_grad),
                                             int(chunk_rows), int(vocab_block))
    return (lp, h, lse) if want_lse else (lp, h)


def logprob_entropy(logits: _torch.Tensor, targets: _torch.Tensor, *, temperature: float = 1.0,
                    ignore_index: int = -100, entropy_grad: bool = True,
                    want_lse: bool = False) -> Tuple[_torch.Tensor, ...]:
    """Log-prob of ``targets`` and entropy of softmax(logits / temperature)
    over the last dim, by tapegrad's fused op (its gradient flows in PyTorch's
    autograd). PyTorch equivalent::

        logp = torch.log_softmax(logits / T, -1)
        lp = logp.gather(-1, targets.clamp(min=0)[..., None])[..., 0]   # 0 where ignored
        H = -(logp.exp() * logp).sum(-1)                                 # 0 where ignored

    logits: float32 or float64, (..., V), CPU; targets: int64 of the leading
    shape; rows whose target is ``ignore_index`` give 0 and no gradient.
    ``entropy_grad=False``: H does not require grad and backward has no
    entropy term. Returns (lp, H), or (lp, H, lse) with ``want_lse`` (the row
    log-sum-exp of logits / T, for a z-loss).
    """
    if logits.device.type != "cpu":
        raise NotImplementedError("tapegrad.torch: CUDA tensors are not wired yet")
    lp, h, lse = _LogprobEntropy.apply(logits, targets, float(temperature), int(ignore_index),
                                       bool(entropy_grad))
    return (lp, h, lse) if want_lse else (lp, h)
