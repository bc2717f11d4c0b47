#!/usr/bin/env python3
"""bench/peer_gpu.py - tapegrad's GPU benches beside PyTorch, torch.compile,
Liger-Kernel and Cut Cross-Entropy, in one run on one GPU.

Contract:
  peer_gpu.py [--tapegrad BIN] [--linear NxDxV,...|none] [--logprob NxV,...|none]
              [--impl I,...] [--reps R] [--workspace-mib M] [--json]

  Two training steps, forward + backward, each the step of the tapegrad bench
  of the same name (CUDA, one device):
  linear-logprob  hidden (N, D) bf16 (normal, std 1) and weight (V, D) bf16
      (normal, std 2/sqrt(D)), both requiring grad; targets int64 uniform in
      [0, V) with 1% of the rows (37, 137, ...) set to -100. The step:
      logits = hidden @ weight.T (f32 sums), lp = log_softmax(logits)[y],
      H = entropy of the row; loss = -mean(lp) - 0.01 mean(H); backward.
        torch-naive    that, written with tensor ops under no autocast (bf16
                       matmul, f32 log_softmax): the (N, V) logits exist
        torch-compile  torch.compile of torch-naive (compiled before timing)
        liger          Liger-Kernel's LigerFusedLinearCrossEntropyFunction,
                       cross-entropy only (no entropy: it does less)
        cce            cut_cross_entropy.linear_cross_entropy, cross-entropy
                       only
        tapegrad       `BIN bench linear-logprob --device cuda --dtype bf16
                       --mode fused --json` on the same shape (--tapegrad)
  logprob  logits (N, V) f32 (normal, std 2) requiring grad, targets as
      above; loss = sum(lp) + 0.01 sum(H); backward.
        torch-naive, torch-compile as above; tapegrad: `BIN bench logprob
        --device cuda --impl fused --entropy-grad on --json`.
  Timing: CUDA events around each step, 1 warm-up (after compiling) and R
  timed repetitions (default 5), the median reported; peak_bytes =
  torch.cuda.max_memory_allocated() during a step minus what was allocated
  before it (inputs). A step that runs out of memory is reported as skipped.
  A peer that cannot be imported is reported as skipped with the reason.
  Output: a table (ms, peak GiB, and time / tapegrad's), or with --json one
  object per line. Exit: 0; 1 no CUDA device or PyTorch; 2 bad usage.

  Defaults: linear 8192x4096x128256,65536x4096x128256; logprob
  8192x32000,8192x128256,32768x32000,32768x128256,131072x32000 (the shapes
  of the GPU tables in bench/README.md); every impl.
"""
import argparse
import json
import statistics
import subprocess
import sys

try:
    import torch
except ImportError:  # pragma: no cover - reported, not raised
    torch = None

LINEAR = "8192x4096x128256,65536x4096x128256"
LOGPROB = "8192x32000,8192x128256,32768x32000,32768x128256,131072x32000"
IMPLS = "torch-naive,torch-compile,liger,cce,tapegrad"


def shapes(text, n):
    out = []
    if text == "none":
        return out
    for item in text.split(","):
        parts = item.lower().split("x")
        if len(parts) != n or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"'{item}' is not {'x'.join('N' * n)}")
        out.append(tuple(int(p) for p in parts))
    return out


def targets(n, v, gen):
    y = torch.randint(0, v, (n,), generator=gen, device="cuda")
    y[37::100] = -100
    return y


def entropy_and_lp(logits, y):
    logp = torch.log_softmax(logits.float(), dim=-1)
    keep = y != -100
    lp = logp.gather(-1, y.clamp(min=0).unsqueeze(-1)).squeeze(-1) * keep
    ent = -(logp.exp() * logp).sum(-1) * keep
    return lp, ent


def linear_naive(h, w, y):
    lp, ent = entropy_and_lp(h @ w.t(), y)
    return -lp.mean() - 0.01 * ent.mean()


def logprob_naive(z, y):
    lp, ent = entropy_and_lp(z, y)
    return lp.sum() + 0.01 * ent.sum()


def liger_step():
    from liger_kernel.ops.fused_linear_cross_entropy import (
        LigerFusedLinearCrossEntropyFunction as F)

    def step(h, w, y):
        out = F.apply(h, w, y, None, None, -100)
        return out[0] if isinstance(out, tuple) else out
    return step


def cce_step():
    from cut_cross_entropy import linear_cross_entropy

    def step(h, w, y):
        return linear_cross_entropy(h, w, y, ignore_index=-100)
    return step


def time_step(fn, inputs, reps):
    """Median ms and peak bytes of fn(*inputs).backward() over reps."""
    leaves = [t for t in inputs if t.requires_grad]
    times, peak = [], 0
    for r in range(reps + 1):
        for t in leaves:
            t.grad = None
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs).backward()
        end.record()
        torch.cuda.synchronize()
        if r > 0:
            times.append(start.elapsed_time(end))
            peak = max(peak, torch.cuda.max_memory_allocated() - base)
    for t in leaves:
        t.grad = None
    return statistics.median(times), peak


def run_peer(name, make, inputs, reps):
    try:
        fn = make()
        return dict(zip(("median_ms", "peak_bytes"), time_step(fn, inputs, reps)))
    except torch.cuda.OutOfMemoryError as e:
        torch.cuda.empty_cache()
        return {"skipped": True, "reason": "out of memory: " + str(e).split("\n")[0][:120]}
    except Exception as e:  # an absent or broken peer is a row, not a failure
        torch.cuda.empty_cache()
        return {"skipped": True, "reason": f"{type(e).__name__}: {str(e)[:160]}"}


def run_tapegrad(binary, args):
    """The JSON lines of one tapegrad bench call (a list of dicts)."""
    res = subprocess.run([binary, "bench"] + args + ["--json"], capture_output=True, text=True)
    if res.returncode != 0:
        return [{"skipped": True, "reason": (res.stderr or res.stdout).strip()[:200]}]
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tapegrad", help="the tapegrad binary (its bench rows beside the peers)")
    ap.add_argument("--linear", type=lambda s: shapes(s, 3), default=shapes(LINEAR, 3))
    ap.add_argument("--logprob", type=lambda s: shapes(s, 2), default=shapes(LOGPROB, 2))
    ap.add_argument("--impl", default=IMPLS)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workspace-mib", type=int, default=0,
                    help="tapegrad's linear workspace budget (0: its default)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if torch is None or not torch.cuda.is_available():
        print("peer_gpu.py: needs PyTorch with a CUDA device", file=sys.stderr)
        return 1
    impls = a.impl.split(",")
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    dev = torch.cuda.get_device_name()
    for (n, d, v) in a.linear:
        h = torch.randn(n, d, device="cuda", generator=gen).bfloat16().requires_grad_()
        w = (torch.randn(v, d, device="cuda", generator=gen) * (2 / d ** 0.5)).bfloat16()
        w.requires_grad_()
        y = targets(n, v, gen)
        makers = {"torch-naive": lambda: linear_naive,
                  "torch-compile": lambda: torch.compile(linear_naive),
                  "liger": liger_step, "cce": cce_step}
        for impl in impls:
            if impl in makers:
                r = run_peer(impl, makers[impl], (h, w, y), a.reps)
            elif impl == "tapegrad" and a.tapegrad:
                extra = ["--workspace-mib", str(a.workspace_mib)] if a.workspace_mib else []
                t = run_tapegrad(a.tapegrad, ["linear-logprob", "--device", "cuda", "--dtype",
                                              "bf16", "--mode", "fused", "--shapes",
                                              f"{n}x{d}x{v}", "--reps", str(a.reps)] + extra)[0]
                r = {k: t[k] for k in ("median_ms", "peak_bytes", "chunk_rows", "vocab_block",
                                       "skipped", "reason") if k in t}
            else:
                continue
            rows.append(dict(step="linear-logprob", shape=f"{n}x{d}x{v}", impl=impl, **r))
        del h, w, y
        torch.cuda.empty_cache()
    for (n, v) in a.logprob:
        z = (torch.randn(n, v, device="cuda", generator=gen) * 2).requires_grad_()
        y = targets(n, v, gen)
        makers = {"torch-naive": lambda: logprob_naive,
                  "torch-compile": lambda: torch.compile(logprob_naive)}
        for impl in impls:
            if impl in makers:
                r = run_peer(impl, makers[impl], (z, y), a.reps)
            elif impl == "tapegrad" and a.tapegrad:
                t = run_tapegrad(a.tapegrad, ["logprob", "--device", "cuda", "--impl", "fused",
                                              "--entropy-grad", "on", "--seq", str(n),
                                              "--vocab", str(v), "--chunk", "0", "--reps",
                                              str(a.reps)])[0]
                r = {k: t[k] for k in ("median_ms", "peak_bytes", "roofline_fraction",
                                       "skipped", "reason") if k in t}
            else:
                continue
            rows.append(dict(step="logprob", shape=f"{n}x{v}", impl=impl, **r))
        del z, y
        torch.cuda.empty_cache()
    base = {(r["step"], r["shape"]): r.get("median_ms") for r in rows if r["impl"] == "tapegrad"}
    for r in rows:
        r.update(device=dev, torch_version=torch.__version__)
        if a.json:
            print(json.dumps(r))
            continue
        if r.get("skipped"):
            print(f"{r['step']:15} {r['shape']:20} {r['impl']:14} skipped: {r['reason']}")
            continue
        tg = base.get((r["step"], r["shape"]))
        ratio = f"{r['median_ms'] / tg:6.2f}x tapegrad" if tg else ""
        print(f"{r['step']:15} {r['shape']:20} {r['impl']:14} {r['median_ms']:9.2f} ms "
              f"{r['peak_bytes'] / 2**30:7.2f} GiB  {ratio}")
    if not a.json:
        print(f"# {dev}, PyTorch {torch.__version__}, {a.reps} reps (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
