"""tapegrad.torch: tapegrad's fused ops as PyTorch functions.

``logprob_entropy(logits, targets, ...)`` and
``linear_logprob_entropy(hidden, weight, targets, bias, ...)`` take PyTorch
tensors, run tapegrad's fused ops on their memory (DLPack, no copy), return
PyTorch tensors, and their gradients flow on in PyTorch's autograd. The
logits op saves nothing of shape (..., V) beyond the logits themselves,
where PyTorch's own ``log_softmax`` + ``gather`` + entropy keep several; the
linear op never makes the (N, V) logits at all. CPU or CUDA tensors (on
CUDA the library queues its work on PyTorch's current stream). On PyTorch
>= 2.4 the ops are also registered as ``torch.ops.tapegrad.*`` custom ops,
which torch.compile uses (see _torch_library.py).
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Optional, Tuple

import torch as _torch

from . import Tensor, from_dlpack
from ._lib import TapegradError, _C
from . import fused


# tg_cuda_alloc_fn / tg_cuda_free_fn (tapegrad/cuda.h): PyTorch's caching allocator
# behind the library's device allocations
_ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)
_FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                            ctypes.c_void_p)


_block_streams: dict = {}  # block -> the stream PyTorch's allocator gave it for
_allocator_lock = threading.Lock()


def _torch_alloc(nbytes: int, stream: Optional[int], ctx) -> Optional[int]:
    try:
        ptr = _torch.cuda.caching_allocator_alloc(nbytes, _torch.cuda.current_device(),
                                                  stream or 0)
        _block_streams[ptr] = stream or 0
        return ptr
    except BaseException:  # noqa: B036 - nothing may escape a ctypes callback: NULL is
        return None        # TG_ERR_NOMEM for the op that asked


def _torch_free(ptr: int, nbytes: int, stream: Optional[int], ctx) -> None:
    try:
        # PyTorch hands the block out again at once to work on the stream it was
        # allocated for; if the library used it on another stream since (it
        # switched), that stream's work on it must be done first
        if _block_streams.pop(ptr, 0) != (stream or 0):
            _torch.cuda.ExternalStream(stream).synchronize() if stream else \
                _torch.cuda.default_stream().synchronize()
        _torch.cuda.caching_allocator_delete(ptr)
    except BaseException:  # noqa: B036 - nothing may escape a ctypes callback
        pass


_alloc_cb, _free_cb = _ALLOC_FN(_torch_alloc), _FREE_FN(_torch_free)
_allocator_tried = False


def use_torch_allocator(enable: bool = True) -> None:
    """Makes the library take its device memory from PyTorch's caching
    allocator (``torch.cuda.caching_allocator_alloc`` / ``_delete``, through
    tg_cuda_set_allocator), so that memory tapegrad lets go of is PyTorch's to
    reuse and ``torch.cuda.memory_allocated`` counts tapegrad's tensors too;
    ``enable=False``: the library's own cache again. The adapters call it
    once, at their first CUDA operand, unless TAPEGRAD_TORCH_ALLOCATOR=0.
    Raises TapegradError: TG_ERR_DEVICE without a device, TG_ERR_STATE while
    the library holds device memory (set it before making CUDA tensors)."""
    if enable:
        _C.cuda_set_allocator(ctypes.cast(_alloc_cb, ctypes.c_void_p).value,
                              ctypes.cast(_free_cb, ctypes.c_void_p).value)
    else:
        _C.cuda_set_allocator(None, None)


def _on_torch_stream(*xs: Optional[_torch.Tensor]) -> None:
    """For CUDA operands: makes the library queue its work on PyTorch's current
    stream of their device (tg_cuda_set_stream), so that it is ordered with
    PyTorch's work without a synchronisation. Switching streams waits for the
    library's work on the old one, so the stream is left set, and switched only
    when PyTorch's current stream changes. At the first CUDA operand the
    library's allocations go to PyTorch's allocator (use_torch_allocator),
    unless the library already holds device memory (then it keeps its own
    cache: a warning says so) or TAPEGRAD_TORCH_ALLOCATOR=0."""
    global _allocator_tried
    x = next((x for x in xs if x is not None and x.device.type == "cuda"), None)
    if x is None:
        return
    if not _allocator_tried:
        with _allocator_lock:  # no other thread allocates through the library meanwhile
            if not _allocator_tried:
                if os.environ.get("TAPEGRAD_TORCH_ALLOCATOR", "1") != "0":
                    try:
                        use_torch_allocator()
                    except TapegradError as e:
                        warnings.warn(f"tapegrad.torch: keeping the library's own device "
                                      f"cache ({e})")
                _allocator_tried = True
    stream = _torch.cuda.current_stream(x.device).cuda_stream
    if _C.cuda_get_stream() != stream:
        _C.cuda_set_stream(stream or None)


def _to_torch(t: Tensor) -> _torch.Tensor:
    return _torch.utils.dlpack.from_dlpack(t.__dlpack__())


def _from_torch(x: _torch.Tensor) -> Tensor:
    return from_dlpack(_torch.utils.dlpack.to_dlpack(x.detach()))


def _outputs_to_torch(ctx, leaves, outs, entropy_grad: bool):
    """Keeps tapegrad's side (its leaves and outputs) in ctx and returns the
    outputs as PyTorch tensors; without the entropy's gradient H is marked
    non-differentiable."""
    ctx.tg = (leaves, outs, entropy_grad)
    res = tuple(_to_torch(t) for t in outs)
    if not entropy_grad:
        ctx.mark_non_differentiable(res[1])
    return res


def _backward(ctx, grads) -> list:
    """The gradients of the leaves kept in ctx (``_leaf_grads``). tapegrad's
    graph stays for another backward through PyTorch's (retain_graph,
    gradcheck): it goes with ctx."""
    return _leaf_grads(*ctx.tg, grads)


def _leaf_grads(leaves, outs, entropy_grad: bool, grads) -> list:
    """tapegrad's backward from one root, sum(out * g) over the outputs that
    got a gradient; the gradients of the leaves as PyTorch tensors (None for a
    leaf that is absent or wants none)."""
    if not entropy_grad:
        grads = (grads[0], None, grads[2])
    wanted = [t for t in leaves if t is not None and t.requires_grad]
    for t in wanted:
        t.zero_grad_()
    root = None
    for out, g in zip(outs, grads):
        if g is not None:
            term = (out * _from_torch(g.contiguous())).sum()
            root = term if root is None else root + term
    root.backward(retain_graph=True)
    return [_to_torch(t.grad) if t is not None and t.requires_grad else None for t in leaves]


def _logprob_graph(logits, targets, temperature, ignore_index, entropy_grad):
    """tapegrad's fused op on the tensors' memory: (leaves, outputs) of its graph."""
    _on_torch_stream(logits)
    z = _from_torch(logits).requires_grad_(True)  # a leaf of tapegrad's graph
    y = _from_torch(targets.contiguous())
    return (z,), fused.logprob_entropy(z, y, temperature=temperature, ignore_index=ignore_index,
                                       entropy_grad=entropy_grad, want_lse=True)


def _linear_graph(hidden, weight, bias, targets, need, temperature, ignore_index, entropy_grad,
                  chunk_rows, vocab_block):
    """tapegrad's fused linear op on the tensors' memory, the leaves requiring
    grad as `need` says: (leaves, outputs) of its graph."""
    _on_torch_stream(hidden, weight, bias)
    h = _from_torch(hidden).requires_grad_(need[0])
    w = _from_torch(weight).requires_grad_(need[1])
    b = _from_torch(bias).requires_grad_(need[2]) if bias is not None else None
    y = _from_torch(targets.contiguous())
    return (h, w, b), fused.linear_logprob_entropy(
        h, w, y, b, temperature=temperature, ignore_index=ignore_index,
        entropy_grad=entropy_grad, chunk_rows=chunk_rows, vocab_block=vocab_block,
        want_lse=True)


class _LogprobEntropy(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, temperature, ignore_index, entropy_grad):
        leaves, outs = _logprob_graph(logits, targets, temperature, ignore_index, entropy_grad)
        return _outputs_to_torch(ctx, leaves, outs, entropy_grad)

    @staticmethod
    def backward(ctx, *grads):
        return (*_backward(ctx, grads), None, None, None, None)


class _LinearLogprobEntropy(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, temperature, ignore_index, entropy_grad,
                chunk_rows, vocab_block):
        leaves, outs = _linear_graph(hidden, weight, bias, targets, ctx.needs_input_grad[:3],
                                     temperature, ignore_index, entropy_grad, chunk_rows,
                                     vocab_block)
        return _outputs_to_torch(ctx, leaves, outs, entropy_grad)

    @staticmethod
    def backward(ctx, *grads):
        return (*_backward(ctx, grads), None, None, None, None, None, None)


HAS_CUSTOM_OPS = hasattr(getattr(_torch, "library", None), "custom_op")
"""True where PyTorch has torch.library.custom_op (>= 2.4): the ops are then
also ``torch.ops.tapegrad.logprob_entropy`` and ``.linear_logprob_entropy``."""
if HAS_CUSTOM_OPS:
    from ._torch_library import register as _register

    _register(_logprob_graph, _linear_graph, _leaf_grads, _to_torch)


_is_compiling = getattr(getattr(_torch, "compiler", None), "is_compiling", None)


def _compiling() -> bool:
    """True while torch.compile traces (the custom ops then stand in for the
    eager Functions, which dynamo cannot trace through ctypes)."""
    return HAS_CUSTOM_OPS and _is_compiling is not None and _is_compiling()


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
    dtype (bfloat16 too: the outputs are then float32), CPU or CUDA;
    gradients go to whichever requires grad. chunk_rows and
    vocab_block: 0 derives them from the workspace budget. Returns (lp, H),
    or (lp, H, lse) with ``want_lse``.
    """
    args = (hidden, weight, bias, targets, float(temperature), int(ignore_index),
            bool(entropy_grad), int(chunk_rows), int(vocab_block))
    if _compiling():
        lp, h, lse = _torch.ops.tapegrad.linear_logprob_entropy(*args)
    else:
        lp, h, lse = _LinearLogprobEntropy.apply(*args)
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

    logits: float32, float64 or bfloat16 (outputs float32), (..., V), CPU or
    CUDA; targets: int64 of the leading
    shape; rows whose target is ``ignore_index`` give 0 and no gradient.
    ``entropy_grad=False``: H does not require grad and backward has no
    entropy term. Returns (lp, H), or (lp, H, lse) with ``want_lse`` (the row
    log-sum-exp of logits / T, for a z-loss).
    """
    args = (logits, targets, float(temperature), int(ignore_index), bool(entropy_grad))
    if _compiling():
        lp, h, lse = _torch.ops.tapegrad.logprob_entropy(*args)
    else:
        lp, h, lse = _LogprobEntropy.apply(*args)
    return (lp, h, lse) if want_lse else (lp, h)
