#!/usr/bin/env python3
"""examples/python/torch_entropy_at_zero.py - the entropy story in plain
PyTorch (slime #1524): a policy loss computes the entropy of the token
distribution with its gradient recorded even though its coefficient is 0
(it is only logged). Autograd saves the (N, V) probabilities for a backward
that sends zeros through them. ``tapegrad.torch.saved_report(loss)`` lists
what the graph saved, per op and per line, and after backward the subgraph
whose gradient was zero everywhere, with the bytes it held for nothing.

    python3 examples/python/torch_entropy_at_zero.py [--seq N] [--vocab V]

Three losses on the same seeded float32 logits, each built under
``tapegrad.torch.track_saved()`` (which records the lines): the entropy in
the loss at coefficient 0 (the bug), the entropy under ``torch.no_grad()``
(the fix), and ``tapegrad.torch.logprob_entropy(..., entropy_grad=False)``.
Printed: the bug's report, then a table of saved bytes and bytes saved for
nothing. Checked (exit 1 otherwise): the bug holds exactly N V 4 bytes for
nothing (the probabilities), the fixes none; the losses and gradients agree.
"""
import argparse
import sys

import torch

import tapegrad.torch as tt


def policy_loss(logits, targets, entropy_coef, entropy_grad=True):
    """-mean(log-prob of the targets) - coef * mean(entropy); the entropy is
    also returned for logging."""
    logp = torch.log_softmax(logits, -1)
    lp = logp.gather(-1, targets[:, None]).squeeze(-1)
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        probs = torch.softmax(logits, -1)
        entropy = -(probs * logp).sum(-1)
    loss = -lp.mean() - entropy_coef * entropy.mean()
    return loss, entropy.mean().item()


def fused_loss(logits, targets, entropy_coef):
    """The same with tapegrad's fused op (PyTorch autograd Function)."""
    lp, h = tt.logprob_entropy(logits, targets, entropy_grad=False)
    return -lp.mean() - entropy_coef * h.mean(), h.mean().item()


def run(logits, targets, how):
    """One forward + backward: (report, loss, logged entropy, gradient)."""
    logits.grad = None
    with tt.track_saved():
        if how == "fused":
            loss, ent = fused_loss(logits, targets, 0.0)
        else:
            loss, ent = policy_loss(logits, targets, 0.0, entropy_grad=how == "recorded")
    report = tt.saved_report(loss)
    loss.backward()
    return report, loss.item(), ent, logits.grad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args(argv)
    n, v = a.seq, a.vocab
    g = torch.Generator().manual_seed(7)
    logits = (2 * torch.randn(n, v, generator=g)).requires_grad_()
    targets = torch.randint(0, v, (n,), generator=g)
    print(f"logits ({n}, {v}) f32: {n * v * 4 / 2**20:.1f} MiB; loss = -mean(logprob) "
          "- 0 * mean(entropy)\n")
    rows = {how: run(logits, targets, how) for how in ("recorded", "no_grad", "fused")}
    print(f"tapegrad.torch.saved_report(loss), entropy recorded, after backward:\n\n"
          f"{rows['recorded'][0]}\n")
    print(f"  {'entropy':34} {'saved MiB':>10} {'for nothing MiB':>16}")
    titles = {"recorded": "recorded at coefficient 0 (bug)", "no_grad": "under torch.no_grad() (fix)",
              "fused": "logprob_entropy(entropy_grad=False)"}
    for how, (rep, *_ ) in rows.items():
        print(f"  {titles[how]:34} {rep.total_bytes / 2**20:10.2f} "
              f"{rep.zero_grad_bytes / 2**20:16.2f}")
    fails = []
    if rows["recorded"][0].zero_grad_bytes != n * v * 4:
        fails.append("the recorded entropy should hold N V 4 bytes for nothing")
    if rows["no_grad"][0].zero_grad_bytes or rows["fused"][0].zero_grad_bytes:
        fails.append("the fixes should hold nothing for a zero gradient")
    ref = rows["recorded"]
    for how, (_, loss, ent, grad) in rows.items():
        if abs(loss - ref[1]) > 1e-4 * abs(ref[1]) or abs(ent - ref[2]) > 1e-4 * abs(ref[2]) \
                or (grad - ref[3]).abs().max() > 1e-4 * ref[3].abs().max():
            fails.append(f"{how}: another loss, entropy or gradient")
    print("Same loss, logged entropy and gradient in all three." if not fails else "")
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
