"""tapegrad.torch: tapegrad's fused log-prob / entropy op as a PyTorch function.

``logprob_entropy(logits, targets, ...)`` takes PyTorch tensors, runs
tapegrad's fused op on their memory (DLPack, no copy), returns PyTorch
tensors, and its gradient flows on in PyTorch's autograd: nothing of shape
(..., V) is saved beyond the logits themselves, where PyTorch's own
``log_softmax`` + ``gather`` + entropy keep several. CPU tensors (CUDA
ones once the library runs on PyTorch's stream from here: not wired yet).
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
        # one root for tapegrad's backward: sum(lp g_lp) + sum(H g_H) + sum(lse g_lse)
        root = None
        for out, g in ((lp, g_lp), (h, g_h if entropy_grad else None), (lse, g_lse)):
            if g is None:
                continue
            term = (out * _from_torch(g.contiguous())).sum()
            root = term if root is None else root + term
        # tapegrad's graph stays for another backward through PyTorch's
        # (retain_graph, gradcheck); it goes with ctx, when PyTorch frees its own
        z.zero_grad_()
        root.backward(retain_graph=True)
        return _to_torch(z.grad), None, None, None, None


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
