#!/usr/bin/env python3
"""examples/python/entropy_at_zero.py - an entropy that is only logged (its
coefficient in the loss is 0) but computed with its gradient recorded keeps
(N, V) activations alive for nothing. The fix: compute it without its
gradient (tapegrad: entropy_grad=False; PyTorch: under torch.no_grad()).

    python3 examples/python/entropy_at_zero.py [--seq N] [--vocab V]

Four runs on the same seeded f32 logits: the composite op (generic ops, as a
PyTorch trainer writes it) and the fused op, each with the entropy in the
loss at coefficient 0 and with it only logged. Printed per run: the bytes
the graph saved after forward and the peak above the inputs during forward
and backward (the library's exact accounting), and the time. Checked (exit
1 otherwise): the composite run saves at least 2 x N x V x 4 bytes more with
the entropy recorded; the fused one at most 64 bytes per row more; the
losses, entropies and gradients agree.
"""
import argparse
import sys
import time

import tapegrad as tg


def run(z, y, impl, entropy_in_loss):
    z.zero_grad_()
    tg.reset_peak()
    base = tg.mem_stats()["live_total"]
    t0 = time.perf_counter()
    lp, h = tg.logprob_entropy(z, y, impl=impl, entropy_grad=entropy_in_loss)
    loss = -lp.mean()
    if entropy_in_loss:
        loss = loss - 0.0 * h.mean()  # coefficient 0: logged, yet recorded
    saved = tg.mem_stats()["saved"]
    loss.backward()
    dt = time.perf_counter() - t0
    peak = tg.mem_stats()["peak_total"] - base
    return {"impl": impl, "entropy_grad": entropy_in_loss, "saved": saved, "peak": peak,
            "seconds": dt, "loss": loss.item(), "entropy": h.mean().item(),
            "grad": z.grad.numpy().copy()}  # no gradient: an error, not a skipped check


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args(argv)
    n, v = a.seq, a.vocab
    z = tg.randn("f32", [n, v], 7, 0.0, 2.0).requires_grad_()
    y = tg.randint([n], 8, 0, v)
    print(f"logits ({n}, {v}) f32: {n * v * 4 / 2**20:.1f} MiB; loss = -mean(logprob)"
          " [- 0 * mean(entropy)]")
    print(f"  {'op':10} {'entropy':22} {'saved MiB':>10} {'peak MiB':>10} {'time s':>8}")
    rows = []
    for impl in ("composite", "fused"):
        for rec in (True, False):
            r = run(z, y, impl, rec)
            rows.append(r)
            how = "in the loss at 0" if rec else "logged only (fix)"
            print(f"  {impl:10} {how:22} {r['saved'] / 2**20:10.2f} {r['peak'] / 2**20:10.2f}"
                  f" {r['seconds']:8.3f}")
    comp_on, comp_off, fused_on, fused_off = rows
    fails = []
    if comp_on["saved"] - comp_off["saved"] < 2 * n * v * 4:
        fails.append("the composite op should save >= 2 N V 4 bytes more with the entropy recorded")
    if fused_on["saved"] - fused_off["saved"] > 64 * n:
        fails.append("the fused op should save at most 64 bytes per row more")
    ref = comp_on
    for r in rows[1:]:
        if abs(r["loss"] - ref["loss"]) > 1e-4 * abs(ref["loss"]) or \
                abs(r["entropy"] - ref["entropy"]) > 1e-4 * abs(ref["entropy"]):
            fails.append(f"{r['impl']} entropy_grad={r['entropy_grad']}: another loss or entropy")
        if abs(r["grad"] - ref["grad"]).max() > 1e-4 * abs(ref["grad"]).max():
            fails.append(f"{r['impl']} entropy_grad={r['entropy_grad']}: another gradient")
    print(f"The entropy at coefficient 0 cost the composite op "
          f"{(comp_on['saved'] - comp_off['saved']) / 2**20:.1f} MiB of saved tensors "
          f"({(comp_on['saved'] - comp_off['saved']) / (n * v * 4):.1f} x the logits) for a "
          f"gradient of zero; the fused op saves "
          f"{(fused_on['saved'] - fused_off['saved']) / n:.0f} bytes per row more.")
    print("Same loss, entropy and gradient in all four." if not fails else "")
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
