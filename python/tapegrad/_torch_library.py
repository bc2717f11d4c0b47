"""The fused ops as ``torch.library`` custom ops (PyTorch >= 2.4, which has
``torch.library.custom_op``): ``torch.ops.tapegrad.logprob_entropy`` and
``torch.ops.tapegrad.linear_logprob_entropy``, each with a fake (meta)
implementation giving the output shapes and dtypes, and a backward that is a
custom op too (``..._backward``), so that torch.compile traces a step using
them without a graph break and ``torch.library.opcheck`` accepts them.

A custom op's forward cannot hand tapegrad's graph to its backward (only
tensors cross), so the backward op rebuilds it: it runs the fused op again on
the saved inputs, then tapegrad's backward. That is one more pass over the
logits (the logits op) or one more GEMM per block (the linear op) than the
eager ``torch.autograd.Function`` path, which keeps the graph; ``tapegrad.
torch``'s functions therefore use these ops only while torch.compile traces.

The rules of the eager path hold here too: the forward records no tapegrad
graph and its outputs hold their own memory only; the inputs are saved with
ctx.save_for_backward (PyTorch checks their versions, naming the op and the
input here, frees them after a backward without retain_graph and refuses a
second one); the graph the backward op rebuilds is freed by it; the backward
ops have no autograd formula, so a second-order gradient is refused.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import no_grad

_Out3 = Tuple[Tensor, Tensor, Tensor]


def _stat_dtype(x: Tensor) -> torch.dtype:
    return torch.float32 if x.dtype == torch.bfloat16 else x.dtype


def _zeros_for_none(grads, like: Tensor) -> list:
    lead = like.shape[:-1]
    return [g if g is not None else like.new_zeros(lead, dtype=_stat_dtype(like)) for g in grads]


def register(graph_of_logprob, graph_of_linear, leaf_grads, to_torch, saved_inputs,
             new_call) -> None:
    """Defines the four ops from the eager path's pieces (tapegrad.torch):
    ``saved_inputs(ctx)`` is ctx.saved_tensors with PyTorch's errors naming
    ``ctx.call``, made by ``new_call(op)`` (the caller's site)."""

    @torch.library.custom_op("tapegrad::logprob_entropy", mutates_args=())
    def logprob_entropy(logits: Tensor, targets: Tensor, temperature: float, ignore_index: int,
                        entropy_grad: bool) -> _Out3:
        with no_grad():
            _, outs = graph_of_logprob(logits, targets, temperature, ignore_index, entropy_grad,
                                       record=False)
        return tuple(to_torch(t) for t in outs)

    @logprob_entropy.register_fake
    def _(logits, targets, temperature, ignore_index, entropy_grad):
        lead, dt = logits.shape[:-1], _stat_dtype(logits)
        return tuple(logits.new_empty(lead, dtype=dt) for _ in range(3))

    @torch.library.custom_op("tapegrad::logprob_entropy_backward", mutates_args=())
    def logprob_entropy_backward(logits: Tensor, targets: Tensor, g_lp: Tensor, g_h: Tensor,
                                 g_lse: Tensor, temperature: float, ignore_index: int,
                                 entropy_grad: bool) -> Tensor:
        leaves, outs = graph_of_logprob(logits, targets, temperature, ignore_index, entropy_grad)
        return leaf_grads(leaves, outs, entropy_grad, (g_lp, g_h, g_lse))[0]

    @logprob_entropy_backward.register_fake
    def _(logits, targets, g_lp, g_h, g_lse, temperature, ignore_index, entropy_grad):
        return logits.new_empty(logits.shape)  # contiguous, as the real gradient

    def lpe_setup(ctx, inputs, output):
        logits, targets, *opts = inputs
        ctx.call = new_call("torch.ops.tapegrad.logprob_entropy")
        ctx.call.save(ctx, logits=logits, targets=targets)
        ctx.opts = opts

    def lpe_backward(ctx, g_lp, g_h, g_lse):
        logits, targets = saved_inputs(ctx)
        g = _zeros_for_none((g_lp, g_h, g_lse), logits)
        grad = torch.ops.tapegrad.logprob_entropy_backward(logits, targets, *g, *ctx.opts)
        return grad, None, None, None, None

    logprob_entropy.register_autograd(lpe_backward, setup_context=lpe_setup)

    @torch.library.custom_op("tapegrad::linear_logprob_entropy", mutates_args=())
    def linear_logprob_entropy(hidden: Tensor, weight: Tensor, bias: Optional[Tensor],
                               targets: Tensor, temperature: float, ignore_index: int,
                               entropy_grad: bool, chunk_rows: int, vocab_block: int) -> _Out3:
        with no_grad():
            _, outs = graph_of_linear(hidden, weight, bias, targets, (False, False, False),
                                      temperature, ignore_index, entropy_grad, chunk_rows,
                                      vocab_block)
        return tuple(to_torch(t) for t in outs)

    @linear_logprob_entropy.register_fake
    def _(hidden, weight, bias, targets, temperature, ignore_index, entropy_grad, chunk_rows,
          vocab_block):
        lead, dt = hidden.shape[:-1], _stat_dtype(hidden)
        return tuple(hidden.new_empty(lead, dtype=dt) for _ in range(3))

    @torch.library.custom_op("tapegrad::linear_logprob_entropy_backward", mutates_args=())
    def linear_backward(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], targets: Tensor,
                        g_lp: Tensor, g_h: Tensor, g_lse: Tensor, need: List[bool],
                        temperature: float, ignore_index: int, entropy_grad: bool,
                        chunk_rows: int, vocab_block: int) -> List[Tensor]:
        leaves, outs = graph_of_linear(hidden, weight, bias, targets, tuple(need), temperature,
                                       ignore_index, entropy_grad, chunk_rows, vocab_block)
        grads = leaf_grads(leaves, outs, entropy_grad, (g_lp, g_h, g_lse))
        return [g if g is not None else hidden.new_empty(0) for g in grads]

    @linear_backward.register_fake
    def _(hidden, weight, bias, targets, g_lp, g_h, g_lse, need, temperature, ignore_index,
          entropy_grad, chunk_rows, vocab_block):
        return [x.new_empty(x.shape) if x is not None and n else hidden.new_empty(0)
                for x, n in zip((hidden, weight, bias), need)]  # contiguous, as the real ones

    def linear_setup(ctx, inputs, output):
        hidden, weight, bias, targets, *opts = inputs
        ctx.call = new_call("torch.ops.tapegrad.linear_logprob_entropy")
        ctx.call.save(ctx, hidden=hidden, weight=weight, bias=bias, targets=targets)
        ctx.opts = opts

    def linear_grads(ctx, g_lp, g_h, g_lse):
        hidden, weight, bias, targets = saved_inputs(ctx)
        need = [bool(n) and x is not None
                for n, x in zip(ctx.needs_input_grad[:3], (hidden, weight, bias))]
        g = _zeros_for_none((g_lp, g_h, g_lse), hidden)
        dh, dw, db = torch.ops.tapegrad.linear_logprob_entropy_backward(
            hidden, weight, bias, targets, *g, need, *ctx.opts)
        return ((dh if need[0] else None), (dw if need[1] else None),
                (db if need[2] else None), None, None, None, None, None, None)

    linear_logprob_entropy.register_autograd(linear_grads, setup_context=linear_setup)
