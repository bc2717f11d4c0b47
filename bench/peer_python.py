#!/usr/bin/env python3
"""bench/peer_python.py - one PyTorch training step of an output layer
(logits = hidden @ weight.T, loss = -mean(logprob) - 0.01 mean(entropy), 1%
of the rows ignored), three ways, in one run:

  naive     log_softmax + gather + entropy on the whole (N, V) logits
  chunked   the same per chunk of rows under torch.utils.checkpoint (what RL
            trainers do to fit long sequences)
  tapegrad  tapegrad.torch.linear_logprob_entropy (the fused linear op)

    python3 bench/peer_python.py [--device cpu|cuda] [--seq N] [--hidden D]
        [--vocab V] [--chunk C] [--dtype float32|bfloat16] [--reps R] [--json]

Each (repetition, way) runs in a child process of its own, the ways
interleaved within each repetition (so drift hits all alike), one warm-up
step then one timed step. Reported per way: the median step time and the
median peak memory of the two steps above what was live before them: on the
CPU the growth of the process's peak resident set (VmHWM, reset first), on
CUDA PyTorch's max_memory_allocated (tapegrad.torch takes the library's device
memory from PyTorch's allocator; with TAPEGRAD_TORCH_ALLOCATOR=0 tapegrad's
own device peak is added). The loss and both gradients are checked against
the naive way's: the loss relative, each gradient through its norm and its
projection on a fixed random tensor, within tol x its norm (tol 1e-4 f32,
2e-2 bf16). Defaults: CPU, N 2048,
d 512, V 32000, chunk 512, float32, 3 repetitions. Needs PyTorch and the
tapegrad package (TAPEGRAD_LIB / PYTHONPATH as in docs/python.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WAYS = ("naive", "chunked", "tapegrad")


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def lp_entropy(logits, y, keep):
    logp = torch.log_softmax(logits.float(), -1)
    lp = logp.gather(-1, y.clamp(min=0)[:, None])[:, 0] * keep
    h = -(logp.exp() * logp).sum(-1) * keep
    return lp, h


def step(way, hidden, weight, y, keep, chunk):
    if way == "naive":
        lp, h = lp_entropy(hidden @ weight.T, y, keep)
    elif way == "chunked":
        from torch.utils.checkpoint import checkpoint
        parts = [checkpoint(lambda hc, yc, kc: lp_entropy(hc @ weight.T, yc, kc),
                            hidden[i:i + chunk], y[i:i + chunk], keep[i:i + chunk],
                            use_reentrant=False)
                 for i in range(0, hidden.shape[0], chunk)]
        lp, h = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    else:
        lp, h = tt.linear_logprob_entropy(hidden, weight, y)
    loss = -lp.mean() - 0.01 * h.mean()
    loss.backward()
    return loss


def child(a):
    global torch, tt
    import torch
    import tapegrad
    import tapegrad.torch as tt
    dev, dt = torch.device(a.device), getattr(torch, a.dtype)
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(a.seq, a.hidden, generator=g).to(dev, dt).requires_grad_()
    weight = (torch.randn(a.vocab, a.hidden, generator=g) * (2 / a.hidden ** 0.5)).to(dev, dt)
    weight.requires_grad_()
    y = torch.randint(0, a.vocab, (a.seq,), generator=g)
    y[37::100] = -100
    y, keep = y.to(dev), (y != -100).to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    # the peak covers the warm-up step too: memory a way keeps cached after a
    # step (tapegrad's workspace, PyTorch's caching allocator) still counts
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        tapegrad.reset_peak("cuda")
        base, tg_base = torch.cuda.memory_allocated(), tapegrad.mem_stats("cuda")["live_total"]
    else:
        with open("/proc/self/clear_refs", "w") as f:  # VmHWM := VmRSS
            f.write("5")
        base = status_kib("VmRSS") * 1024
    step(a.child, hidden, weight, y, keep, a.chunk)  # warm-up
    hidden.grad = weight.grad = None
    sync()
    t0 = time.perf_counter()
    loss = step(a.child, hidden, weight, y, keep, a.chunk)
    sync()
    dt_s = time.perf_counter() - t0
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
        if os.environ.get("TAPEGRAD_TORCH_ALLOCATOR", "1") == "0":  # its own cache
            peak += tapegrad.mem_stats("cuda")["peak_total"] - tg_base
    else:
        peak = status_kib("VmHWM") * 1024 - base
    grads = {}
    for name, t in (("hidden", hidden), ("weight", weight)):
        g = t.grad.float().cpu()
        probe = torch.randn(g.shape, generator=torch.Generator().manual_seed(9))
        grads[name] = {"norm": g.norm().item(), "probe": (g * probe).sum().item(),
                       "probe_norm": probe.norm().item()}
    print(json.dumps({"way": a.child, "seconds": dt_s, "peak_bytes": peak, "loss": loss.item(),
                      "grads": grads}))


def agrees(run, ref, tol):
    """The loss within tol relative; each gradient's norm and its projection on
    the fixed probe within tol x its norm (x the probe's norm)."""
    if abs(run["loss"] - ref["loss"]) > tol * abs(ref["loss"]):
        return False
    for name, g in ref["grads"].items():
        mine = run["grads"][name]
        if abs(mine["norm"] - g["norm"]) > tol * g["norm"] or \
                abs(mine["probe"] - g["probe"]) > tol * g["norm"] * g["probe_norm"]:
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per way")
    ap.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
        return 0
    runs = {w: [] for w in WAYS}
    for _ in range(a.reps):
        for w in WAYS:
            cmd = [sys.executable, __file__, "--child", w] + [
                f"--{k}={getattr(a, k)}" for k in ("device", "seq", "hidden", "vocab", "chunk",
                                                   "dtype")]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"peer_python: {w} failed:\n{out.stderr}", file=sys.stderr)
                return 1
            runs[w].append(json.loads(out.stdout.strip().splitlines()[-1]))
    ref = runs["naive"][0]
    tol = 2e-2 if a.dtype == "bfloat16" else 1e-4
    bad = [w for w in WAYS if not agrees(runs[w][0], ref, tol)]
    rows = [{"way": w, "device": a.device, "dtype": a.dtype, "seq": a.seq, "hidden": a.hidden,
             "vocab": a.vocab, "chunk": a.chunk if w == "chunked" else 0, "reps": a.reps,
             "median_s": statistics.median(r["seconds"] for r in runs[w]),
             "median_peak_bytes": statistics.median(r["peak_bytes"] for r in runs[w]),
             "loss": runs[w][0]["loss"]} for w in WAYS]
    if a.json:
        for r in rows:
            print(json.dumps(r))
    else:
        logits = a.seq * a.vocab * 4
        print(f"{a.device}, N {a.seq}, d {a.hidden}, V {a.vocab}, {a.dtype}, chunk {a.chunk},"
              f" {a.reps} interleaved reps, medians (f32 logits {logits / 2**20:.0f} MiB)")
        print(f"  {'way':9} {'step s':>8} {'peak MiB':>9} {'x logits':>8} {'time x naive':>12}")
        for r in rows:
            print(f"  {r['way']:9} {r['median_s']:8.3f} {r['median_peak_bytes'] / 2**20:9.1f}"
                  f" {r['median_peak_bytes'] / logits:8.2f}"
                  f" {r['median_s'] / rows[0]['median_s']:12.2f}")
    for w in bad:
        print(f"peer_python: {w}: loss or gradient differs from naive's", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
