#!/usr/bin/env python3
"""examples/python/torch_inplace_pair.py - the in-place story in plain
PyTorch (SkyRL #1648): two autograd Functions compute a log-prob and an
entropy from the same logits and both save them. The entropy's backward
"stabilises" its saved logits in place and restores them (``sub_`` then
``add_``): the values are back, but the version counter moved 1 -> 3, and
the log-prob's backward fails with PyTorch's "is at version 3; expected
version 1", naming neither edit. Under ``tapegrad.torch.inplace_guard()``
the same error names the node that saved the logits, the line that made it,
and both in-place ops with their lines.

    python3 examples/python/torch_inplace_pair.py [--rows N] [--vocab V]

Three runs on the same seeded float64 logits: plain PyTorch, under the
guard, and the fix (the entropy's backward out of place). Checked (exit 1
otherwise): the first two fail with the version error, the guard's naming
LogprobBackward and sub_ and add_ with their lines; the fix's gradient is
the one autograd gives the same loss written with PyTorch's ops.
"""
import argparse
import sys

import torch

import tapegrad.torch as tt


class Logprob(torch.autograd.Function):
    """log_softmax(logits)[targets], saving the logits."""

    @staticmethod
    def forward(ctx, logits, targets):
        ctx.save_for_backward(logits, targets)
        return torch.log_softmax(logits, -1).gather(-1, targets[:, None]).squeeze(-1)

    @staticmethod
    def backward(ctx, g):
        logits, targets = ctx.saved_tensors
        p = torch.softmax(logits, -1)
        onehot = torch.nn.functional.one_hot(targets, logits.shape[-1]).to(p.dtype)
        return g[:, None] * (onehot - p), None


class Entropy(torch.autograd.Function):
    """The entropy of softmax(logits), saving the logits; its backward edits
    them in place (the bug) unless ``fixed``."""

    fixed = False

    @staticmethod
    def forward(ctx, logits):
        ctx.save_for_backward(logits)
        logp = torch.log_softmax(logits, -1)
        return -(logp.exp() * logp).sum(-1)

    @staticmethod
    def backward(ctx, g):
        (logits,) = ctx.saved_tensors
        m = logits.max(-1, keepdim=True).values
        if Entropy.fixed:
            z = logits - m                                  # out of place (the fix)
        else:
            z = logits.sub_(m)                              # "stabilise" in place
        logp = torch.log_softmax(z, -1)
        p = logp.exp()
        h = -(p * logp).sum(-1, keepdim=True)
        grad = -p * (logp + h)
        if not Entropy.fixed:
            logits.add_(m)                                  # and restore
        return g[:, None] * grad


def step(hidden, weight, targets, temperature=2.0):
    """The loss of one step; backward through both Functions."""
    logits = hidden @ weight.T
    logits.div_(temperature)                                # version 0 -> 1
    lp = Logprob.apply(logits, targets)
    entropy = Entropy.apply(logits)
    loss = -lp.mean() - 0.01 * entropy.mean()
    loss.backward()
    return loss


def reference(hidden, weight, targets, temperature=2.0):
    logp = torch.log_softmax(hidden @ weight.T / temperature, -1)
    lp = logp.gather(-1, targets[:, None]).squeeze(-1)
    loss = -lp.mean() - 0.01 * (-(logp.exp() * logp).sum(-1)).mean()
    loss.backward()


def inputs(rows, vocab):
    g = torch.Generator().manual_seed(3)
    hidden = torch.randn(rows, 8, generator=g, dtype=torch.float64)
    weight = torch.randn(vocab, 8, generator=g, dtype=torch.float64).requires_grad_()
    return hidden, weight, torch.randint(0, vocab, (rows,), generator=g)


def run(rows, vocab):
    """The message of each run (None when backward passed) and the fix's
    weight gradient next to the reference's."""
    out = {}
    hidden, weight, targets = inputs(rows, vocab)
    for name in ("pytorch", "guard"):
        Entropy.fixed = False
        try:
            if name == "guard":
                with tt.inplace_guard():
                    step(hidden, weight, targets)
            else:
                step(hidden, weight, targets)
            out[name] = None
        except RuntimeError as e:
            out[name] = str(e)
        weight.grad = None
    Entropy.fixed = True
    step(hidden, weight, targets)
    got, weight.grad = weight.grad, None
    reference(hidden, weight, targets)
    out["fix"] = (got, weight.grad)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=6)
    a = ap.parse_args(argv)
    out = run(a.rows, a.vocab)
    fails = []
    for name, title in (("pytorch", "PyTorch alone"), ("guard", "under tapegrad.torch."
                                                                 "inplace_guard()")):
        msg = out[name] or "(backward passed)"
        first = msg.split("\n")[0]
        if first.startswith("RuntimeError: "):  # PyTorch 1.13 wraps what a hook raised
            first = first[len("RuntimeError: "):]
        print(f"{title}:\n  {first}\n")
        if "is at version 3; expected version 1" not in msg:
            fails.append(f"{title}: the version error was expected")
    if not all(s in (out["guard"] or "") for s in ("saved by LogprobBackward", "sub_ at",
                                                   "add_ at")):
        fails.append("the guard's message should name LogprobBackward, sub_ and add_")
    got, ref = out["fix"]
    same = torch.allclose(got, ref, rtol=1e-10, atol=1e-12)
    print(f"The fix (out of place): backward passes, weight gradient "
          f"{'the same as' if same else 'NOT the same as'} PyTorch's own ops give.")
    if not same:
        fails.append("the fixed gradient differs from the reference")
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
