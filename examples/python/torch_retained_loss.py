#!/usr/bin/env python3
"""examples/python/torch_retained_loss.py - the retained-loss story in plain
PyTorch (Fast-LLM #486): a microbatch loop keeps each loss "for logging"
without detaching it, so every kept loss keeps its graph alive, and through
the graph the microbatch's logits and their gradient. tapegrad.torch's
watcher shows the growth step by step; its leak check names the list that
keeps the graphs and the path to what they hold. Keeping ``loss.detach()``
or ``loss.item()`` fixes it.

    python3 examples/python/torch_retained_loss.py [--micro K] [--seq N] [--vocab V]
                                                   [--detach | --item]

Per microbatch: seeded logits (N, V) float32, a leaf that requires grad (as
a pipeline stage's input is), loss = -mean(log_softmax(logits)[targets]),
backward, then the loss is appended to ``losses``; ``w.step()`` of
``tapegrad.torch.watch_steps()`` ends the microbatch. After the loop,
``tapegrad.torch.leak_check()``. Checked (exit 1 otherwise): without a fix,
the kept bytes grow by 2 N V 4 + 4 at each step after the first and the
final report has one root per microbatch, all in ``losses``; with one,
nothing is reported.
"""
import argparse
import sys

import torch

import tapegrad.torch as tt


def microbatch(k, n, v):
    """One microbatch's forward and backward; returns its loss."""
    g = torch.Generator().manual_seed(100 + k)
    logits = torch.randn(n, v, generator=g).requires_grad_()  # the stage's input
    targets = torch.randint(0, v, (n,), generator=g)
    logp = torch.log_softmax(logits, -1)
    loss = -logp.gather(-1, targets[:, None]).squeeze(-1).mean()
    loss.backward()
    return loss


def train(losses, micro, n, v, keep, watcher):
    """The loop: each loss kept for logging as ``keep`` says; one row per
    microbatch of what the watcher found."""
    rows = []
    for k in range(micro):
        loss = microbatch(k, n, v)
        losses.append({"loss": loss, "detach": loss.detach(), "item": loss.item()}[keep])
        rep = watcher.step()
        rows.append(rep)
        print(f"  {k:10} {rep.kept_bytes / 2**20:9.2f} {rep.roots:16}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--micro", type=int, default=5)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32000)
    fix = ap.add_mutually_exclusive_group()
    fix.add_argument("--detach", action="store_true", help="keep loss.detach() (a fix)")
    fix.add_argument("--item", action="store_true", help="keep loss.item() (a fix)")
    a = ap.parse_args(argv)
    n, v = a.seq, a.vocab
    keep = "detach" if a.detach else "item" if a.item else "loss"
    print(f"{a.micro} microbatches of logits ({n}, {v}) f32 ({n * v * 4 / 2**20:.1f} MiB each);"
          f" kept: {'loss (the bug)' if keep == 'loss' else f'loss.{keep}()'}")
    print(f"  {'microbatch':>10} {'kept MiB':>9} {'retained graphs':>16}")
    losses = []
    with tt.watch_steps() as w:
        rows = train(losses, a.micro, n, v, keep, w)
    report = tt.leak_check()
    per = 2 * n * v * 4 + 4
    fails = []
    if keep != "loss":
        if report or any(rows):
            fails.append("with a fix nothing should be reported")
        print("Nothing kept: the losses kept for logging hold no graph.")
    else:
        if [r.kept_bytes for r in rows] != [k * per for k in range(a.micro)]:
            fails.append(f"the kept bytes should grow by {per} at each step after the first")
        if [e["holder"] for e in report.entries] != [f"losses[{k}]" for k in range(a.micro)] \
                or report.kept_bytes != a.micro * per:
            fails.append(f"the report should name losses[0..{a.micro - 1}], {per} bytes each")
        if rows[-1].growth_steps:
            print(f"The watcher: {str(rows[-1]).splitlines()[-1]}")
        print(f"\nAfter the loop, tapegrad.torch.leak_check():\n\n{report}\n")
        print("The fix: keep loss.detach() or loss.item() (run with --detach or --item).")
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
