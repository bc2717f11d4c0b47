#!/usr/bin/env python3
"""examples/python/chunked_logprob.py - chunking the log-prob / entropy
computation along the sequence, as RL trainers do to fit long sequences:
what it saves for the composite op (generic ops, as a PyTorch trainer writes
it) and why the fused op needs none of it.

    python3 examples/python/chunked_logprob.py [--seq N] [--vocab V] [--chunks 0,256,...]

For each chunk size (0: unchunked) and each op: one forward + backward of
loss = -mean(logprob) - 0.01 mean(entropy) on the same seeded f32 logits;
printed: the time, the peak bytes above the inputs and the bytes saved after
forward (the library's exact accounting), and their ratios to the same op's
unchunked row. Checked (exit 1 otherwise): a chunked composite row saves no
more than the unchunked one; a chunked fused row's peak and saved bytes are
the unchunked ones within 64 bytes per row (+1% for the peak); every row's
loss is the unchunked one's.
"""
import argparse
import sys
import time

import tapegrad as tg


def step(z, y, impl, chunk):
    z.zero_grad_()
    tg.reset_peak()
    base = tg.mem_stats()["live_total"]
    t0 = time.perf_counter()
    lp, h = tg.logprob_entropy(z, y, impl=impl, chunk_size=chunk)
    loss = -lp.mean() - 0.01 * h.mean()
    saved = tg.mem_stats()["saved"]
    loss.backward()
    return {"seconds": time.perf_counter() - t0, "saved": saved, "loss": loss.item(),
            "peak": tg.mem_stats()["peak_total"] - base}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--chunks", default="0,256,1024")
    a = ap.parse_args(argv)
    n, v = a.seq, a.vocab
    chunks = sorted({int(c) for c in a.chunks.split(",") if 0 <= int(c) < n} | {0})
    z = tg.randn("f32", [n, v], 11, 0.0, 2.0).requires_grad_()
    y = tg.randint([n], 12, 0, v)
    print(f"logits ({n}, {v}) f32: {n * v * 4 / 2**20:.1f} MiB")
    print(f"  {'op':10} {'chunk':>6} {'time s':>8} {'peak MiB':>10} {'saved MiB':>10}"
          f" {'time x':>7} {'peak x':>7}")
    fails, base = [], {}
    for impl in ("composite", "fused"):
        for c in chunks:
            r = step(z, y, impl, c)
            b = base.setdefault(impl, r)
            print(f"  {impl:10} {c or '-':>6} {r['seconds']:8.3f} {r['peak'] / 2**20:10.2f}"
                  f" {r['saved'] / 2**20:10.2f} {r['seconds'] / b['seconds']:7.2f}"
                  f" {r['peak'] / b['peak']:7.2f}")
            if abs(r["loss"] - base["composite"]["loss"]) > 1e-4 * abs(base["composite"]["loss"]):
                fails.append(f"{impl} chunk {c}: another loss")
            if impl == "composite" and r["saved"] > b["saved"]:
                fails.append(f"composite chunk {c} saves more than unchunked")
            if impl == "fused" and (abs(r["saved"] - b["saved"]) > 64 * n or
                                    r["peak"] > b["peak"] * 1.01 + 64 * n):
                fails.append(f"fused chunk {c}: peak or saved bytes differ from unchunked")
    comp, fused = base["composite"], base["fused"]
    print(f"Unchunked, the composite op peaks at {comp['peak'] / (n * v * 4):.1f} x the logits and"
          f" the fused op at {fused['peak'] / (n * v * 4):.1f} x (the logits' gradient): chunking"
          " buys the composite op memory with recomputation; the fused op has nothing to buy.")
    for f in fails:
        print("check failed:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
