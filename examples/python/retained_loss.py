#!/usr/bin/env python3
"""examples/python/retained_loss.py - a microbatch loop keeps each loss "for
logging" without detaching it: every kept loss keeps its graph alive, and
through it the microbatch's logits. The leak checker shows the growth
microbatch by microbatch and names what keeps each graph; keeping
``loss.detach()`` (PyTorch: ``loss.detach()`` or ``loss.item()``) fixes it.

    python3 examples/python/retained_loss.py [--micro K] [--seq N] [--vocab V] [--detach]

Per microbatch: seeded logits (N, V) f32 requiring grad, the fused log-prob
(its entropy only logged), loss = -mean(logprob), backward, then the loss is
kept in a list; everything else is dropped, the step is marked and the leak
checker runs: one row of kept bytes and outlived graph nodes. Checked (exit
1 otherwise): without --detach the kept bytes grow at every microbatch and
the report has one root per microbatch; with --detach nothing is kept.
"""
import argparse
import sys

import tapegrad as tg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--micro", type=int, default=6)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--detach", action="store_true", help="keep loss.detach() (the fix)")
    a = ap.parse_args(argv)
    n, v = a.seq, a.vocab
    losses, rows = [], []
    print(f"{a.micro} microbatches of logits ({n}, {v}) f32 ({n * v * 4 / 2**20:.1f} MiB each);"
          f" kept: {'loss.detach()' if a.detach else 'loss (the bug)'}")
    print(f"  {'microbatch':>10} {'kept MiB':>9} {'outlived nodes':>15} {'library live MiB':>17}")
    for k in range(a.micro):
        z = tg.randn("f32", [n, v], 100 + k, 0.0, 1.0).requires_grad_().named(f"logits[{k}]")
        y = tg.randint([n], 200 + k, 0, v)
        lp, _ = tg.logprob_entropy(z, y, entropy_grad=False)
        loss = -lp.mean()
        loss.backward()
        losses.append((loss.detach() if a.detach else loss).named(f"losses[{k}]"))
        del z, y, lp, loss
        tg.step_mark(f"microbatch {k}")
        report = tg.leak_check()
        rows.append(report)
        print(f"  {k:10} {report.kept_bytes / 2**20:9.2f} {report.outlived_nodes:15}"
              f" {tg.mem_stats()['live_total'] / 2**20:17.2f}")
    last = rows[-1]
    fails = []
    if a.detach:
        if last.kept_bytes or last.roots:
            fails.append("with --detach nothing should be kept")
        print("Nothing kept: the detached losses hold no graph.")
    else:
        if any(b.kept_bytes <= p.kept_bytes for p, b in zip(rows, rows[1:])):
            fails.append("the kept bytes should grow at every microbatch")
        if last.roots != a.micro:
            fails.append(f"the report should have {a.micro} roots, not {last.roots}")
        print(f"{last.kept_bytes / 2**20:.1f} MiB kept by {last.roots} retained losses. "
              "The leak checker's report:\n")
        print(last.text())
        print("The fix: keep loss.detach() (run with --detach).")
    del rows, last, report
    losses.clear()
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
