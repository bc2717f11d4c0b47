"""tapegrad.torch: tapegrad's fused ops as PyTorch functions.

``logprob_entropy(logits, targets, ...)``,
``linear_logprob_entropy(hidden, weight, targets, bias, ...)`` and
``linear_loss(hidden, weight, targets, loss_fn, bias, ...)`` (a per-token
loss given as a PyTorch function, its gradient computed in forward) take
PyTorch tensors, run tapegrad's fused ops on their memory (DLPack, no copy),
return PyTorch tensors, and their gradients flow on in PyTorch's autograd.
The logits op saves nothing of shape (..., V) beyond the logits themselves,
where PyTorch's own ``log_softmax`` + ``gather`` + entropy keep several; the
linear ops never make the (N, V) logits at all. CPU or CUDA tensors (on
CUDA the library queues its work on PyTorch's current stream). On PyTorch
>= 2.4 the first two are also registered as ``torch.ops.tapegrad.*`` custom
ops, which torch.compile uses (see _torch_library.py).
"""
from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
import warnings
from typing import Callable, Optional, Sequence, Tuple

import torch as _torch

from . import Tensor, from_dlpack
from ._lib import TapegradError, _C
from . import fused
# the audit of PyTorch's own graphs (tapegrad/audit/): off until called, nothing installed here
from .audit import (InplaceGuard, LeakReport, SavedReport, SavedTracker, StepWatcher,  # noqa: F401
                    inplace_guard, leak_check, saved_report, step_mark, track_saved, watch_steps)

# what the adapters build is called from PyTorch's autograd.Function.apply: the call
# sites in tapegrad's messages and reports skip PyTorch's frames for the user's line
_C._skip_frames_under(os.path.dirname(os.path.abspath(_torch.__file__)))


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


# ---- what an adapter keeps between forward and backward -----------------------------------
#
# An adapter obeys PyTorch's rules as a PyTorch op does:
# - its inputs are saved with ctx.save_for_backward, so PyTorch checks their version counters
#   at backward (an in-place edit in between is refused: tapegrad's backward reads them),
#   frees them after a backward without retain_graph and refuses a second one;
# - the outputs handed to PyTorch are detached tapegrad tensors, so a kept output holds its
#   own bytes only, never tapegrad's graph;
# - tapegrad's graph (built only where PyTorch would record one) is kept in ctx for the first
#   backward and dropped by it, whether or not retain_graph is set (PyTorch does not tell a
#   Function). A further backward, possible only with retain_graph=True, rebuilds it from the
#   saved inputs: the fused forward runs again (the cost of retain_graph);
# - its backward is not differentiable: under create_graph the gradients it returns refuse a
#   second differentiation, as PyTorch's @once_differentiable.


_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(f)) + os.sep
                      for f in (__file__, _torch.__file__))


def _first_frame_outside():
    """The innermost frame of code outside tapegrad and PyTorch: the caller's."""
    f = sys._getframe(1)
    while f.f_back is not None and os.path.abspath(f.f_code.co_filename).startswith(
            _PACKAGE_DIRS):
        f = f.f_back
    return f


class _Call:
    """What a forward keeps of its call for the messages of its backward: the
    op's public name, the caller's file:line (``frame``: default the caller of
    the function making it), whether grad mode was on at the call (inside
    Function.forward it is always off), and the saved inputs' names, shapes
    and versions."""

    __slots__ = ("op", "site", "grad_enabled", "saved")

    def __init__(self, op: str, frame=None) -> None:
        f = frame or sys._getframe(2)
        self.op = op
        self.site = f"{f.f_code.co_filename}:{f.f_lineno}"
        self.grad_enabled = _torch.is_grad_enabled()
        self.saved: Tuple[Tuple[str, Tuple[int, ...], int], ...] = ()

    def save(self, ctx, **inputs: Optional[_torch.Tensor]) -> None:
        """ctx.save_for_backward of the inputs, remembering their names."""
        ctx.save_for_backward(*inputs.values())
        self.saved = tuple((name, tuple(x.shape), x._version)
                           for name, x in inputs.items() if x is not None)


# PyTorch's message for a saved tensor whose version moved: "... modified by an inplace
# operation: [torch.FloatTensor [4, 6]], which is output 0 of XBackward, is at version 2;
# expected version 1 instead. ..."
_VERSION_ERR = re.compile(r"\[\S+ \[([0-9, ]*)\]\](?:, which is output \d+ of \S+,)? is at "
                          r"version (\d+); expected version (\d+)")


def _saved_inputs(ctx) -> Tuple[Optional[_torch.Tensor], ...]:
    """ctx.saved_tensors: PyTorch's checks (a version moved by an in-place
    edit; a second backward after the saved inputs were freed), its error
    completed with the op, the input and the forward's call site."""
    try:
        return ctx.saved_tensors
    except RuntimeError as e:
        raise RuntimeError(_explain(str(e), ctx.call)) from None


def _explain(msg: str, call: _Call) -> str:
    op = call.op
    m = _VERSION_ERR.search(msg)
    if m:
        shape = tuple(int(s) for s in m.group(1).split(",") if s.strip())
        names = [f"'{n}'" for n, s, v in call.saved if s == shape and v == int(m.group(3))]
        what = f"its input {' or '.join(names)}" if names else "one of its inputs"
        return (f"{msg}\n{op} saved {what} for backward at {call.site}; it was modified in "
                f"place since (tapegrad's backward reads it)")
    return f"{msg}\n(in the backward of {op}, called at {call.site})"


class _Once(_torch.autograd.Function):
    """The gradients an adapter's backward returns under create_graph: the
    same tensors, whose own backward raises. Their graph reaches the adapter's
    inputs, so that a second-order gradient asked of those (``autograd.grad``
    included, which runs only the nodes on the way to its inputs) meets it."""

    @staticmethod
    def forward(ctx, call, n, *tensors):
        ctx.call = call
        return tuple(t.detach() for t in tensors[:n])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            f"trying to differentiate twice a function that was marked with "
            f"@once_differentiable: {ctx.call.op} (called at {ctx.call.site}) "
            f"has a first-order backward only, run by tapegrad")


def _refuse_double_backward(grads: list, inputs, call: _Call) -> list:
    """The gradients as they are, or under create_graph (grad mode is on in
    backward) aliases whose backward raises, as PyTorch's @once_differentiable
    does; here also where no incoming gradient requires grad, since the
    gradient depends on the inputs themselves."""
    if not _torch.is_grad_enabled():
        return grads
    got = [g for g in grads if g is not None]
    if not got:
        return grads
    tied = iter(_Once.apply(call, len(got), *got, *[x for x in inputs if x is not None]))
    return [next(tied) if g is not None else None for g in grads]


def _outputs_to_torch(ctx, outs, entropy_grad: bool) -> Tuple[_torch.Tensor, ...]:
    """The outputs as PyTorch tensors over detached tapegrad tensors (they hold
    their own memory only, never tapegrad's graph); without the entropy's
    gradient H is marked non-differentiable."""
    res = tuple(_to_torch(t.detach()) for t in outs)
    if not entropy_grad:
        ctx.mark_non_differentiable(res[1])
    return res


def _backward(ctx, grads, rebuild) -> list:
    """The gradients of the inputs as PyTorch tensors: through the tapegrad
    graph kept by forward, dropped here; on a further backward (retain_graph)
    through a graph rebuilt from the saved inputs by ``rebuild``."""
    graph, ctx.tg = ctx.tg, None  # nothing outlives this backward, even a failed one
    saved = _saved_inputs(ctx)
    if graph is None:
        graph = rebuild(*saved)
    else:
        _on_torch_stream(*saved)
    leaves, outs = graph
    del graph
    grads = _leaf_grads(leaves, outs, ctx.entropy_grad, grads)
    return _refuse_double_backward(grads, saved, ctx.call)


def _leaf_grads(leaves, outs, entropy_grad: bool, grads) -> list:
    """tapegrad's backward from one root, sum(out * g) over the outputs that
    got a gradient; the gradients of the leaves as PyTorch tensors (None for a
    leaf that is absent or wants none). tapegrad's graph is freed by it."""
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
    root.backward()
    return [_to_torch(t.grad) if t is not None and t.requires_grad else None for t in leaves]


def _logprob_graph(logits, targets, temperature, ignore_index, entropy_grad, record=True):
    """tapegrad's fused op on the tensors' memory: (leaves, outputs) of its
    graph, or outputs without a graph where ``record`` is false."""
    _on_torch_stream(logits)
    z = _from_torch(logits).requires_grad_(record)  # a leaf of tapegrad's graph
    y = _from_torch(targets.contiguous())
    return (z,), fused.logprob_entropy(z, y, temperature=temperature, ignore_index=ignore_index,
                                       entropy_grad=entropy_grad, want_lse=True)


def _linear_graph(hidden, weight, bias, targets, need, temperature, ignore_index, entropy_grad,
                  chunk_rows, vocab_block):
    """tapegrad's fused linear op on the tensors' memory, the leaves requiring
    grad as `need` says: (leaves, outputs) of its graph (none where no leaf
    requires grad)."""
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
    def forward(ctx, logits, targets, temperature, ignore_index, entropy_grad, call):
        ctx.call, ctx.entropy_grad, ctx.tg = call, entropy_grad, None
        ctx.opts = (temperature, ignore_index, entropy_grad)
        record = call.grad_enabled and ctx.needs_input_grad[0]
        leaves, outs = _logprob_graph(logits, targets, *ctx.opts, record=record)
        if record:
            call.save(ctx, logits=logits, targets=targets)
            ctx.tg = (leaves, outs)
        return _outputs_to_torch(ctx, outs, entropy_grad)

    @staticmethod
    def backward(ctx, *grads):
        (dz,) = _backward(ctx, grads, lambda z, y: _logprob_graph(z, y, *ctx.opts))
        return dz, None, None, None, None, None


class _LinearLogprobEntropy(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, temperature, ignore_index, entropy_grad,
                chunk_rows, vocab_block, call):
        ctx.call, ctx.entropy_grad, ctx.tg = call, entropy_grad, None
        ctx.opts = (temperature, ignore_index, entropy_grad, chunk_rows, vocab_block)
        ctx.need = tuple(call.grad_enabled and n for n in ctx.needs_input_grad[:3])
        leaves, outs = _linear_graph(hidden, weight, bias, targets, ctx.need, *ctx.opts)
        if any(ctx.need):
            call.save(ctx, hidden=hidden, weight=weight, bias=bias, targets=targets)
            ctx.tg = (leaves, outs)
        return _outputs_to_torch(ctx, outs, entropy_grad)

    @staticmethod
    def backward(ctx, *grads):
        grads = _backward(ctx, grads,
                          lambda h, w, b, y: _linear_graph(h, w, b, y, ctx.need, *ctx.opts))
        return (*grads, None, None, None, None, None, None, None)


# ---- the loss known in forward ----------------------------------------------------------------
#
# tapegrad's tg_linear_loss runs a loss per chunk of rows in forward, with its backward, and keeps
# the gradients of hidden, weight and bias for the backward. Here the chunk's loss is a PyTorch
# function: for each chunk the callback hands it the chunk's logprob, entropy and lse as PyTorch
# leaves (over the library's memory), gets their gradients from PyTorch's autograd, and gives the
# library a tapegrad loss with PyTorch's value and those gradients:
#     c + (s - detach(s)),  s = sum(lp * g_lp + H * g_H + lse * g_lse)
# where c holds PyTorch's loss (s - detach(s) is exactly 0 for a finite s) and the g are constants.


def _foreign_leaf(out: _torch.Tensor, mine) -> Optional[_torch.Tensor]:
    """A tensor requiring grad, other than ``mine``, that out's graph
    accumulates into (another chunk's leaf, a parameter), or None."""
    seen, todo = {}, [out.grad_fn]  # seen keeps the nodes' wrappers: ids stay theirs
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        leaf = getattr(fn, "variable", None)  # AccumulateGrad
        if leaf is not None and not any(leaf is t for t in mine):
            return leaf
        todo.extend(f for f, _ in fn.next_functions)
    return None


def _chunk_loss_fn(loss_fn, record: bool, entropy_grad: bool, op: str):
    """The callback tapegrad runs per chunk: loss_fn on the chunk's
    statistics as PyTorch tensors, and the surrogate above as tapegrad's loss."""

    def run(chunk) -> Tensor:
        where = f"rows [{chunk.rows.start}, {chunk.rows.stop})"
        ts = [_to_torch(t.detach()) for t in (chunk.logprob, chunk.entropy, chunk.lse)]
        if record:
            for t, want in zip(ts, (True, entropy_grad, True)):
                t.requires_grad_(want)
        with _torch.set_grad_enabled(record):
            out = loss_fn(*ts, chunk.rows)
        if not isinstance(out, _torch.Tensor):
            raise TypeError(f"{op}: loss_fn must return a torch.Tensor (the loss of {where}), "
                            f"not {type(out).__name__}")
        if out.numel() != 1 or not out.is_floating_point():
            raise ValueError(f"{op}: the loss of {where} must be one floating element, not "
                             f"{out.dtype} of shape {tuple(out.shape)}")
        if out.device != ts[0].device:
            raise ValueError(f"{op}: the loss of {where} is on {out.device} but the inputs are "
                             f"on {ts[0].device}")
        mine = [t for t in ts if t.requires_grad]
        grads = [None] * 3
        if out.requires_grad:
            foreign = _foreign_leaf(out, mine)
            if foreign is not None:
                raise ValueError(
                    f"{op}: the loss of {where} depends on a tensor of shape "
                    f"{tuple(foreign.shape)} that requires grad and is not this chunk's "
                    f"logprob, entropy or lse (another chunk's tensor, or a parameter): a "
                    f"chunk's loss may depend only on its own rows' statistics and on tensors "
                    f"that do not require grad")
            got = iter(_torch.autograd.grad(out, mine, allow_unused=True))
            grads = [next(got) if t.requires_grad else None for t in ts]
        dtype = ts[0].dtype
        loss = _from_torch(out.detach().reshape(()).to(dtype))
        s = None
        for t, g in zip((chunk.logprob, chunk.entropy, chunk.lse), grads):
            if g is not None:
                term = (t * _from_torch(g.to(dtype).contiguous())).sum()
                s = term if s is None else s + term
        return loss if s is None else loss + (s - s.detach())

    return run


def _linear_loss_graph(hidden, weight, bias, targets, loss_fn, need, opts, op):
    """tapegrad's linear loss on the tensors' memory, the leaves requiring
    grad as `need` says: (leaves, (loss, lp, H)), loss's graph holding the
    gradients computed in forward (none where no leaf requires grad)."""
    temperature, ignore_index, entropy_grad, chunk_rows, vocab_block, workspace, seq_lens = opts
    _on_torch_stream(hidden, weight, bias)
    h = _from_torch(hidden).requires_grad_(need[0])
    w = _from_torch(weight).requires_grad_(need[1])
    b = _from_torch(bias).requires_grad_(need[2]) if bias is not None else None
    y = _from_torch(targets.contiguous())
    run = _chunk_loss_fn(loss_fn, any(need), entropy_grad, op)
    return (h, w, b), fused.linear_loss(
        h, w, y, run, b, temperature=temperature, ignore_index=ignore_index,
        entropy_grad=entropy_grad, chunk_rows=chunk_rows, vocab_block=vocab_block,
        workspace_bytes=workspace, seq_lens=seq_lens)


def _forget_loss_fn_unless_retained(ctx) -> None:
    """At the end of this backward: a backward without retain_graph freed the
    saved inputs, so no later backward can run loss_fn again: let go of it
    (and of what its closure holds) as PyTorch lets go of saved tensors."""

    def forget():
        try:
            ctx.saved_tensors
        except RuntimeError:  # freed (or refused: no backward can use it either)
            ctx.loss_fn = None

    _torch.autograd.Variable._execution_engine.queue_callback(forget)


class _LinearLoss(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, loss_fn, opts, call):
        ctx.call, ctx.entropy_grad, ctx.tg, ctx.loss_fn, ctx.opts = call, True, None, None, opts
        ctx.need = tuple(call.grad_enabled and n for n in ctx.needs_input_grad[:3])
        leaves, (loss, lp, ent) = _linear_loss_graph(hidden, weight, bias, targets, loss_fn,
                                                      ctx.need, opts, call.op)
        if any(ctx.need):
            call.save(ctx, hidden=hidden, weight=weight, bias=bias, targets=targets)
            ctx.tg, ctx.loss_fn = (leaves, (loss,)), loss_fn
        res = tuple(_to_torch(t.detach()) for t in (loss, lp, ent))
        ctx.mark_non_differentiable(res[1], res[2])
        return res

    @staticmethod
    def backward(ctx, g, *unused):
        loss_fn = ctx.loss_fn
        _forget_loss_fn_unless_retained(ctx)

        def rebuild(h, w, b, y):  # a further backward (retain_graph): forward again
            leaves, (loss, _, _) = _linear_loss_graph(h, w, b, y, loss_fn, ctx.need, ctx.opts,
                                                      ctx.call.op)
            return leaves, (loss,)

        grads = _backward(ctx, (g,), rebuild)
        return (*grads, None, None, None, None)


def linear_loss(hidden: _torch.Tensor, weight: _torch.Tensor, targets: _torch.Tensor,
                loss_fn: Callable[[_torch.Tensor, _torch.Tensor, _torch.Tensor, slice],
                                  _torch.Tensor],
                bias: Optional[_torch.Tensor] = None, *, temperature: float = 1.0,
                ignore_index: int = -100, entropy_grad: bool = True, chunk_rows: int = 0,
                vocab_block: int = 0, workspace_bytes: int = 0,
                seq_lens: Optional[Sequence[int]] = None) -> Tuple[_torch.Tensor, ...]:
    """A loss over the tokens of ``hidden @ weight.T + bias``, given as a
    PyTorch function of each chunk's log-probs, entropies and log-sum-exps,
    with its gradient computed in forward by tapegrad's tg_linear_loss: the
    (N, V) logits are never whole and backward makes no pass over them
    (three GEMMs in all where ``linear_logprob_entropy`` + the loss make
    four). Liger's ``LigerFusedLinearCrossEntropyLoss`` computes its gradient
    in forward the same way, for cross-entropy only. PyTorch equivalent::

        z = (hidden @ weight.T + bias) / temperature
        logp = torch.log_softmax(z, -1)
        lp = logp.gather(-1, targets[..., None])[..., 0]; H = -(logp.exp() * logp).sum(-1)
        lse = torch.logsumexp(z, -1)                # lp, H, lse: 0 where ignored
        loss = sum(loss_fn(lp.flatten()[r], H.flatten()[r], lse.flatten()[r], r)
                   for r in chunks)

    ``loss_fn(logprob, entropy, lse, rows)`` gets one chunk: three PyTorch
    tensors of its rows (float32 for bfloat16 inputs) and ``rows``, the
    ``slice`` of hidden's N rows (row-major over its leading dims) they are;
    it returns the chunk's loss, a one-element floating tensor, built from
    them and from tensors that do not require grad (per-token constants:
    ``adv.flatten()[rows]``). It runs once per chunk in row order; the loss
    is the sum of its values. Its backward runs in forward, so a loss that
    depends on another tensor requiring grad (a previous chunk's log-probs, a
    parameter) is refused: a ValueError naming the chunk's rows. An
    exception it raises comes out of this call as it is.

    hidden (..., d), weight (V, d), bias (V) or None: float32, float64 or
    bfloat16, CPU or CUDA; targets int64 of hidden's leading shape; rows
    whose target is ``ignore_index`` have 0 statistics and no gradient.
    ``entropy_grad=False``: the entropy loss_fn gets does not require grad.
    chunk_rows, vocab_block, workspace_bytes: 0 takes them from the budget;
    ``seq_lens``: lengths of the sequences packed in the rows (summing to N),
    each chunk then holding whole sequences, for a loss over a sequence.

    Returns (loss, logprob, entropy): the 0-d loss, whose gradient flows to
    whichever of hidden, weight and bias requires grad, and the log-probs and
    entropies of hidden's leading shape, without gradient (for logging).

    As a PyTorch op: hidden, weight, bias and targets are saved for backward
    (an in-place edit of one before backward is PyTorch's version error,
    naming it and this call's line); between forward and backward it holds
    the gradients of the inputs (their size), nothing of (N, V); a backward
    without ``retain_graph`` frees them and refuses a second one (with
    ``retain_graph`` the next backward runs the forward again, loss_fn
    included); under ``torch.no_grad()`` nothing is recorded and loss_fn
    runs without grad; a second-order gradient (``create_graph``) is refused.
    """
    _check_args("linear_loss", {"hidden": hidden, "weight": weight, "bias": bias}, targets)
    if not callable(loss_fn):
        raise TypeError(f"tapegrad.torch.linear_loss: argument 'loss_fn' must be callable, not "
                        f"{type(loss_fn).__name__}")
    lens = None if seq_lens is None else [int(n) for n in seq_lens]
    opts = (float(temperature), int(ignore_index), bool(entropy_grad), int(chunk_rows),
            int(vocab_block), int(workspace_bytes), lens)
    call = _Call("tapegrad.torch.linear_loss")
    return _LinearLoss.apply(hidden, weight, bias, targets, loss_fn, opts, call)


HAS_CUSTOM_OPS = hasattr(getattr(_torch, "library", None), "custom_op")
"""True where PyTorch has torch.library.custom_op (>= 2.4): the ops are then
also ``torch.ops.tapegrad.logprob_entropy`` and ``.linear_logprob_entropy``."""
if HAS_CUSTOM_OPS:
    from ._torch_library import register as _register

    _register(_logprob_graph, _linear_graph, _leaf_grads, _to_torch, _saved_inputs,
              lambda op: _Call(op, _first_frame_outside()))


_is_compiling = getattr(getattr(_torch, "compiler", None), "is_compiling", None)


def _compiling() -> bool:
    """True while torch.compile traces (the custom ops then stand in for the
    eager Functions, which dynamo cannot trace through ctypes)."""
    return HAS_CUSTOM_OPS and _is_compiling is not None and _is_compiling()


_FLOATS = (_torch.float32, _torch.float64, _torch.bfloat16)


def _check_args(op: str, floats: dict, targets: _torch.Tensor) -> None:
    """TypeError naming the op, the argument and the dtypes it takes, before
    anything runs: the tensors of `floats` (None allowed only for 'bias') are
    float32, float64 or bfloat16, targets int64, as PyTorch's log_softmax and
    cross_entropy take them."""
    for name, x in (*floats.items(), ("targets", targets)):
        if x is None and name == "bias":
            continue
        if not isinstance(x, _torch.Tensor):
            raise TypeError(f"tapegrad.torch.{op}: argument '{name}' must be a torch.Tensor, "
                            f"not {type(x).__name__}")
        if name == "targets" and x.dtype != _torch.int64:
            raise TypeError(f"tapegrad.torch.{op}: argument 'targets' must be int64 "
                            f"(torch.long), not {x.dtype}")
        if name != "targets" and x.dtype not in _FLOATS:
            raise TypeError(f"tapegrad.torch.{op}: argument '{name}' must be float32, float64 "
                            f"or bfloat16, not {x.dtype}")


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

    As a PyTorch op: hidden, weight, bias and targets are saved for backward
    (an in-place edit of one before backward is PyTorch's version error,
    naming it and this call's line), freed by a backward without
    ``retain_graph``, which refuses a second one; under ``torch.no_grad()``
    nothing is recorded; a second-order gradient (``create_graph``) is refused.
    """
    _check_args("linear_logprob_entropy", {"hidden": hidden, "weight": weight, "bias": bias},
                targets)
    args = (hidden, weight, bias, targets, float(temperature), int(ignore_index),
            bool(entropy_grad), int(chunk_rows), int(vocab_block))
    if _compiling():
        lp, h, lse = _torch.ops.tapegrad.linear_logprob_entropy(*args)
    else:
        call = _Call("tapegrad.torch.linear_logprob_entropy")
        lp, h, lse = _LinearLogprobEntropy.apply(*args, call)
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

    As a PyTorch op: logits and targets are saved for backward (an in-place
    edit of one before backward is PyTorch's version error, naming it and this
    call's line), freed by a backward without ``retain_graph``, which refuses
    a second one; under ``torch.no_grad()`` nothing is recorded; a
    second-order gradient (``create_graph``) is refused.
    """
    _check_args("logprob_entropy", {"logits": logits}, targets)
    args = (logits, targets, float(temperature), int(ignore_index), bool(entropy_grad))
    if _compiling():
        lp, h, lse = _torch.ops.tapegrad.logprob_entropy(*args)
    else:
        lp, h, lse = _LogprobEntropy.apply(*args, _Call("tapegrad.torch.logprob_entropy"))
    return (lp, h, lse) if want_lse else (lp, h)
