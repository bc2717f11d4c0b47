"""tapegrad's fused log-prob / entropy ops on tapegrad tensors
(include/tapegrad/logprob.h): ``logprob_entropy`` from logits and
``linear_logprob_entropy`` from hidden states and an output layer. Both are
also reachable as ``tapegrad.logprob_entropy`` and
``tapegrad.linear_logprob_entropy``; ``tapegrad.torch`` wraps the same calls
for PyTorch tensors.
"""
from __future__ import annotations

from typing import Any, Tuple

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
