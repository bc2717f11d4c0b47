"""tapegrad's fused log-prob / entropy ops on tapegrad tensors
(include/tapegrad/logprob.h): ``logprob_entropy`` from logits,
``linear_logprob_entropy`` from hidden states and an output layer, and
``linear_loss``, the same with the loss known in forward. All are also
reachable as ``tapegrad.<name>``; ``tapegrad.torch`` wraps the same calls
for PyTorch tensors.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from ._lib import _C


def logprob_entropy(logits: Any, targets: Any, *, temperature: float = 1.0,
                    ignore_index: int = -100, entropy_grad: bool = True, chunk_size: int = 0,
                    impl: str = "fused", want_lse: bool = False,
                    want_entropy: bool = True) -> Tuple:
    """Log-prob of ``targets`` and entropy of softmax(logits / temperature)
    over the last dim (tg_logprob_entropy_lse). PyTorch equivalent::

        logp = torch.log_softmax(logits / T, -1)
        lp = logp.gather(-1, targets[..., None])[..., 0]; H = -(logp.exp() * logp).sum(-1)

    logits (..., V) f32/f64/bf16, targets i64 (...) (Tensors, or lists and
    arrays, converted). ``impl="composite"`` builds it from generic ops (the
    teaching baseline: it saves (N, V) tensors); ``chunk_size`` rows per
    block (composite: checkpoints). ``entropy_grad=False``: the entropy is
    logged only, nothing is saved for it; ``want_entropy=False``: H is None
    and not computed. Returns (lp, H), or (lp, H, lse) with ``want_lse``.
    """
    out = _C.logprob_entropy(logits, targets, temperature=temperature,
                             ignore_index=ignore_index, entropy_grad=entropy_grad,
                             chunk_size=chunk_size, impl=impl, want_entropy=want_entropy)
    return out if want_lse else out[:2]


def linear_logprob_entropy(hidden: Any, weight: Any, targets: Any, bias: Any = None, *,
                           temperature: float = 1.0, ignore_index: int = -100,
                           entropy_grad: bool = True, chunk_rows: int = 0, vocab_block: int = 0,
                           impl: str = "fused", workspace_bytes: int = 0,
                           want_lse: bool = False, want_entropy: bool = True) -> Tuple:
    """``logprob_entropy(hidden @ weight.T + bias, targets)`` without the (N, V)
    logits ever being whole (tg_linear_logprob_entropy): chunks of rows times
    blocks of the vocabulary, recomputed in backward. hidden (..., d), weight
    (V, d), bias (V) or None. ``impl="composite"`` materializes the logits (the
    baseline); chunk_rows / vocab_block / workspace_bytes 0 take the defaults;
    ``want_entropy=False``: H is None. Returns (lp, H), or (lp, H, lse) with
    ``want_lse``.
    """
    out = _C.linear_logprob_entropy(hidden, weight, targets, bias, temperature=temperature,
                                    ignore_index=ignore_index, entropy_grad=entropy_grad,
                                    chunk_rows=chunk_rows, vocab_block=vocab_block, impl=impl,
                                    workspace_bytes=workspace_bytes,
                                    want_entropy=want_entropy)
    return out if want_lse else out[:2]


LinearLossChunk = _C.LinearLossChunk
"""What ``linear_loss`` hands its ``loss_fn`` for one chunk of rows:
``index`` (0, 1, ... in row order), ``rows`` (``slice(row_start, row_end)``
among hidden's N rows, row-major over its leading dims), ``logprob``,
``entropy`` and ``lse`` (Tensors of the chunk's rows, in the compute dtype:
f32 for bf16 inputs) and ``targets`` (an int64 CPU Tensor, a copy of the
chunk's targets)."""


def linear_loss(hidden: Any, weight: Any, targets: Any,
                loss_fn: Callable[[LinearLossChunk], Any], bias: Any = None, *,
                temperature: float = 1.0, ignore_index: int = -100, entropy_grad: bool = True,
                grad_f32: bool = False, workspace_bytes: int = 0, chunk_rows: int = 0,
                vocab_block: int = 0, seq_lens: Optional[Sequence[int]] = None) -> Tuple:
    """The sum over chunks of rows of ``loss_fn(chunk)`` for the logits
    ``z = hidden @ weight.T + bias``, with its gradient computed in forward
    (tg_linear_loss): per chunk, the statistics of z / temperature, the
    chunk's loss and its backward, then the gradients of hidden, weight and
    bias, without the (N, V) logits ever being whole and without a second
    pass over them in backward. Liger's ``LigerFusedLinearCrossEntropyLoss``
    (and its chunked RL / preference losses) compute the gradient in forward
    the same way; PyTorch equivalent (for a loss summed over chunks)::

        logp = torch.log_softmax((hidden @ weight.T + bias) / T, -1)
        lp = logp.gather(-1, targets[..., None])[..., 0]; H = -(logp.exp() * logp).sum(-1)
        lse = torch.logsumexp((hidden @ weight.T + bias) / T, -1)
        loss = sum(loss_fn(lp[rows], H[rows], lse[rows]) for rows in chunks)

    ``loss_fn(chunk)`` (a ``LinearLossChunk``: ``index``, ``rows``,
    ``logprob``, ``entropy``, ``lse``, ``targets``) returns the chunk's loss,
    a one-element floating Tensor built with tapegrad's ops from the chunk's
    logprob, entropy and lse and from tensors that do not require grad
    (per-token constants sliced with ``chunk.rows``); ignored rows have 0
    statistics and their gradient is dropped. It is called once per chunk,
    in row order, on the calling thread. It must not keep the chunk's
    tensors for a later chunk: a loss that depends on another chunk's
    tensors, or on any other tensor requiring grad, is refused (a
    ``ValueError`` naming the chunk's rows). An exception it raises comes out
    of this call as it is, nothing kept.

    hidden (..., d), weight (V, d), bias (V) or None: f32, f64 or bf16 (bf16:
    compute in f32, gradients in bf16, or f32 with ``grad_f32``); targets
    int64 of hidden's leading shape. ``entropy_grad=False``: the entropy
    given to loss_fn does not require grad (logged only). chunk_rows,
    vocab_block, workspace_bytes 0: from the budget. ``seq_lens``: lengths of
    the sequences packed in the N rows (summing to N); chunks then hold whole
    sequences, for a loss over a sequence (GSPO's sequence ratio).

    Returns (loss, logprob, entropy): the 0-d loss, whose backward hands the
    gradients computed in forward (times the upstream gradient) to whichever
    of hidden, weight and bias requires grad, and the log-probs and entropies
    of hidden's leading shape, without a graph (for logging).
    """
    return _C.linear_loss(hidden, weight, targets, loss_fn, bias, temperature=temperature,
                          ignore_index=ignore_index, entropy_grad=entropy_grad,
                          grad_f32=grad_f32, workspace_bytes=workspace_bytes,
                          chunk_rows=chunk_rows, vocab_block=vocab_block, seq_lens=seq_lens)
