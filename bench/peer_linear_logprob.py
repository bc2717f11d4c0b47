#!/usr/bin/env python3
"""bench/peer_linear_logprob.py - the PyTorch peer of `tapegrad bench linear-logprob`.

Contract:
  peer_linear_logprob.py [--shapes NxDxV,...] [--impl torch-naive,torch-chunked]
                         [--chunk C] [--reps R] [--threads T] [--seed S] [--json]
  peer_linear_logprob.py --selftest

  Measures, on the CPU in float32, the same training step as tapegrad's bench,
  two ways. Inputs, per shape N x D x V (seq x hidden x vocab): hidden (N, D),
  normal with standard deviation 1, and weight (V, D), normal with standard
  deviation 2/sqrt(D), both leaves requiring grad; targets int64 uniform in
  [0, V) with 1% of the rows (37, 137, 237, ... as in tapegrad) set to -100,
  ignored. All seeded with torch.manual_seed(S). The step, forward + backward:
      logits = hidden @ weight.T, logp = log_softmax(logits), p = exp(logp)
      lp[i] = logp[i, y[i]], entropy[i] = -sum(p[i] * logp[i])  (both 0 on
                                                                  ignored rows)
      loss = -mean(lp) - 0.01 * mean(entropy)   (means over all N rows)
      loss.backward()
  torch-naive    the step written with ordinary tensor ops: the (N, V) logits,
                 log-probs and probabilities exist, several of them at once.
  torch-chunked  an autograd.Function in the manner of Liger's / SkyRL's fused
                 linear cross-entropy: the forward takes C rows at a time
                 (--chunk, default 1024), computes their logits, log-sum-exp,
                 target log-prob and entropy, and keeps only hidden, weight,
                 targets and two floats per row (log-sum-exp, entropy); the
                 backward recomputes each chunk's logits and forms
                     dz = g_lp * (onehot(y) - p) - g_ent * p * (log p + H)
                 then accumulates d hidden = dz @ weight, d weight += dz.T @ h.
                 At most a few (C, V) buffers exist at a time.

  Each (shape, impl) runs in a child process of its own, so that its peak RSS
  is its own. The child builds the inputs, resets its peak RSS (writes "5" to
  /proc/self/clear_refs) and notes its RSS, runs 1 warm-up and R timed
  repetitions (default 3; time.perf_counter around forward + backward, the
  gradients set to None between repetitions), and reports the median time and
  peak_rss_growth_bytes = VmHWM at the end - VmRSS right after the reset.
  torch.set_num_threads(T) (default os.cpu_count()). The RSS counts what the
  C allocator keeps as well as what is live: glibc maps buffers above its
  mmap threshold (32 MiB at most) and unmaps them when freed, so at the
  default shapes the figure follows the live bytes, while at small shapes
  freed buffers stay in the heap and the figure comes out larger.

  Before a child starts its memory is estimated (naive: 5 x N x V x 4 bytes,
  chunked: 4 x C x V x 4 bytes, each plus the inputs and their gradients);
  above 80% of MemTotal the configuration is reported as skipped ("needs ~X
  GiB of Y GiB") without running. A child that dies (an out-of-memory kill,
  say) or fails to allocate is reported as skipped with the reason.

  Output: a table, or with --json one JSON object per configuration per line:
      "bench":"linear-logprob-torch", "impl", "seq", "hidden", "vocab",
      "chunk" (torch-chunked only), "dtype":"f32", "threads",
      "torch_version", "skipped", then "reps", "median_ms",
      "peak_rss_growth_bytes" when run, or "reason" when skipped.

  --selftest checks torch-chunked against torch-naive on small cases (values
  and gradients, float64 and float32, with and without the entropy term, a
  chunk that does not divide N) and prints one line per case.

  Exit status: 0 success (skipped configurations included), 1 a child failed
  other than by being killed or running out of memory, or a selftest case is
  past its tolerance, 2 bad usage (argparse's own errors also exit 2), 3
  PyTorch missing.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("peer_linear_logprob: PyTorch is required\n")
    sys.exit(3)

IGNORE = -100
ENTROPY_COEF = 0.01
GIB = 1024.0 ** 3
MIB = 1024.0 ** 2
IMPLS = ("torch-naive", "torch-chunked")
DEFAULT_SHAPES = "4096x1024x32000,4096x1024x128256,8192x1024x32000,8192x1024x128256"


# ---------------------------------------------------------------- the step

def make_inputs(n, d, v, seed, dtype=torch.float32):
    """Seeded hidden (N, D), weight (V, D) leaves requiring grad, targets (N,)."""
    torch.manual_seed(seed)
    hidden = torch.randn(n, d, dtype=dtype).requires_grad_()
    weight = (torch.randn(v, d, dtype=dtype) * (2.0 / d ** 0.5)).requires_grad_()
    target = torch.randint(0, v, (n,), dtype=torch.int64)
    target[37::100] = IGNORE  # 1% of the rows, spread out, as tapegrad does
    return hidden, weight, target


def naive_forward(hidden, weight, target):
    """Per-row (logprob, entropy) with the (N, V) tensors materialized."""
    valid = target != IGNORE
    logits = hidden @ weight.t()
    logp = torch.log_softmax(logits, dim=-1)
    lp = logp.gather(1, target.clamp(min=0).unsqueeze(1)).squeeze(1)
    entropy = -(torch.softmax(logits, dim=-1) * logp).sum(-1)
    zero = torch.zeros((), dtype=lp.dtype)
    return torch.where(valid, lp, zero), torch.where(valid, entropy, zero)


class ChunkedLinearLogprob(torch.autograd.Function):
    """(hidden, weight, target, chunk) -> per-row (logprob, entropy), never
    holding more than a few (chunk, V) buffers; ignored rows give 0 and no
    gradient."""

    @staticmethod
    def forward(ctx, hidden, weight, target, chunk):
        n = hidden.shape[0]
        lp = hidden.new_zeros(n)
        entropy = hidden.new_zeros(n)
        lse = hidden.new_zeros(n)
        for r0 in range(0, n, chunk):
            r1 = min(n, r0 + chunk)
            z = hidden[r0:r1] @ weight.t()                # (c, V) logits
            m = torch.logsumexp(z, dim=-1)
            logp = z.sub_(m.unsqueeze(1))                 # in place: log-probs
            y = target[r0:r1]
            valid = y != IGNORE
            tl = logp.gather(1, y.clamp(min=0).unsqueeze(1)).squeeze(1)
            h = -(logp.exp().mul_(logp)).sum(-1)          # p * log p, p's buffer reused
            lp[r0:r1] = torch.where(valid, tl, torch.zeros_like(tl))
            entropy[r0:r1] = torch.where(valid, h, torch.zeros_like(h))
            lse[r0:r1] = m
        ctx.save_for_backward(hidden, weight, target, lse, entropy)
        ctx.chunk = chunk
        return lp, entropy

    @staticmethod
    def backward(ctx, g_lp, g_ent):
        hidden, weight, target, lse, entropy = ctx.saved_tensors
        n = hidden.shape[0]
        valid = (target != IGNORE).to(hidden.dtype)
        # a missing upstream gradient counts as zero; ignored rows get none
        g_lp = hidden.new_zeros(n) if g_lp is None else g_lp * valid
        g_ent = hidden.new_zeros(n) if g_ent is None else g_ent * valid
        want_h, want_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        dh = torch.empty_like(hidden) if want_h else None
        dw = torch.zeros_like(weight) if want_w else None
        for r0 in range(0, n, ctx.chunk):
            r1 = min(n, r0 + ctx.chunk)
            hc = hidden[r0:r1]
            logp = (hc @ weight.t()).sub_(lse[r0:r1].unsqueeze(1))  # recomputed
            p = logp.exp()
            gl = g_lp[r0:r1].unsqueeze(1)
            ge = g_ent[r0:r1].unsqueeze(1)
            # dz = p * (-g_lp - g_ent * (log p + H)) + g_lp * onehot(y)
            dz = p.mul_(logp.add_(entropy[r0:r1].unsqueeze(1)).mul_(ge).add_(gl).neg_())
            y = target[r0:r1].clamp(min=0).unsqueeze(1)
            dz.scatter_add_(1, y, gl)                     # g_lp is 0 on ignored rows
            if want_h:
                torch.mm(dz, weight, out=dh[r0:r1])
            if want_w:
                dw.addmm_(dz.t(), hc)
        return dh, dw, None, None


def chunked_forward(hidden, weight, target, chunk):
    return ChunkedLinearLogprob.apply(hidden, weight, target, chunk)


def loss_of(lp, entropy, entropy_term=True):
    loss = -lp.mean()
    return loss - ENTROPY_COEF * entropy.mean() if entropy_term else loss


# ---------------------------------------------------------------- selftest

def selftest():
    """torch-chunked against torch-naive on small cases; returns an exit status."""
    cases = [  # (n, d, v, chunk, dtype, entropy term, rtol, atol)
        (300, 32, 1000, 64, torch.float64, True, 1e-10, 1e-12),
        (300, 32, 1000, 64, torch.float64, False, 1e-10, 1e-12),
        (257, 48, 777, 1024, torch.float64, True, 1e-10, 1e-12),
        (300, 64, 3000, 100, torch.float32, True, 1e-4, 1e-6),
    ]
    bad = 0
    for n, d, v, chunk, dt, ent, rtol, atol in cases:
        name = "N=%d D=%d V=%d chunk=%d %s entropy=%s" % (
            n, d, v, chunk, str(dt).replace("torch.", ""), "on" if ent else "off")
        got, want = [], []
        for fwd, out in ((lambda h, w, y: naive_forward(h, w, y), want),
                         (lambda h, w, y: chunked_forward(h, w, y, chunk), got)):
            h, w, y = make_inputs(n, d, v, seed=7, dtype=dt)
            lp, e = fwd(h, w, y)
            loss = loss_of(lp, e, ent)
            loss.backward()
            out.extend([lp.detach(), e.detach(), loss.detach(), h.grad, w.grad])
        try:
            for what, g, r in zip(("logprob", "entropy", "loss", "d hidden", "d weight"),
                                  got, want):
                torch.testing.assert_close(g, r, rtol=rtol, atol=atol, msg=lambda m: what + ": " + m)
            print("selftest %-48s ok" % name)
        except AssertionError as e:
            bad += 1
            print("selftest %-48s FAILED: %s" % (name, str(e).splitlines()[0]))
    return 1 if bad else 0


# ---------------------------------------------------------------- child

def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/self/status" % field)


def child(impl, n, d, v, chunk, reps, threads, seed):
    """Runs one configuration and prints its measurements as one JSON line."""
    torch.set_num_threads(threads)
    hidden, weight, target = make_inputs(n, d, v, seed)
    with open("/proc/self/clear_refs", "w") as f:  # VmHWM := VmRSS
        f.write("5")
    base = status_kib("VmRSS")

    def step():
        if impl == "torch-naive":
            lp, e = naive_forward(hidden, weight, target)
        else:
            lp, e = chunked_forward(hidden, weight, target, chunk)
        loss_of(lp, e).backward()

    times = []
    for rep in range(reps + 1):  # the first one is the warm-up
        hidden.grad = weight.grad = None
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        if rep:
            times.append((t1 - t0) * 1e3)
    hidden.grad = weight.grad = None
    peak = status_kib("VmHWM")
    print(json.dumps({"reps": reps, "median_ms": round(statistics.median(times), 3),
                      "peak_rss_growth_bytes": (peak - base) * 1024}))


# ---------------------------------------------------------------- parent

def mem_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def estimate(impl, n, d, v, chunk):
    """Bytes one configuration needs, roughly: the inputs, their gradients and
    the logits-sized buffers that live at once."""
    inputs = 2 * (n + v) * d * 4 + n * 8
    rows = n if impl == "torch-naive" else min(n, chunk)
    copies = 5 if impl == "torch-naive" else 4
    return inputs + copies * rows * v * 4


def signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


def run_one(args, impl, n, d, v, total):
    """Measures one configuration in a child; returns (record, failed)."""
    rec = {"bench": "linear-logprob-torch", "impl": impl, "seq": n, "hidden": d, "vocab": v}
    if impl == "torch-chunked":
        rec["chunk"] = args.chunk
    rec.update({"dtype": "f32", "threads": args.threads, "torch_version": torch.__version__})
    need = estimate(impl, n, d, v, args.chunk)
    if need > 0.8 * total:
        rec.update(skipped=True, reason="needs ~%.1f GiB of %.1f GiB" % (need / GIB, total / GIB))
        return rec, False
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl,
           "--shapes", "%dx%dx%d" % (n, d, v), "--chunk", str(args.chunk),
           "--reps", str(args.reps), "--threads", str(args.threads), "--seed", str(args.seed)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode == 0:
        try:
            rec.update(skipped=False, **json.loads(p.stdout.strip().splitlines()[-1]))
            return rec, False
        except (ValueError, IndexError):
            why, failed = "the child printed no result", True
    elif p.returncode < 0:
        why = "the child was killed by %s" % signal_name(-p.returncode)
        if -p.returncode == signal.SIGKILL:
            why += " (out of memory?)"
        failed = False
    else:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1][:200]
        why = "the child exited with status %d: %s" % (p.returncode, last)
        # an allocation that failed is the machine's limit, not the script's fault
        failed = "allocate memory" not in last and "MemoryError" not in last
    rec.update(skipped=True, reason=why)
    return rec, failed


def parse_shapes(ap, text):
    shapes = []
    for item in text.split(","):
        try:
            n, d, v = (int(x) for x in item.lower().split("x"))
        except ValueError:
            ap.error("--shapes: '%s' is not NxDxV" % item)
        if min(n, d, v) <= 0:
            ap.error("--shapes: '%s' has a size <= 0" % item)
        shapes.append((n, d, v))
    return shapes


def main(argv):
    ap = argparse.ArgumentParser(
        prog="peer_linear_logprob.py",
        description="PyTorch peer of `tapegrad bench linear-logprob` (contract: the file's "
                    "docstring).")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="NxDxV,... (default %(default)s)")
    ap.add_argument("--impl", default=",".join(IMPLS), help="default %(default)s")
    ap.add_argument("--chunk", type=int, default=1024, help="torch-chunked rows per chunk")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions after 1 warm-up")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--selftest", action="store_true", help="check torch-chunked, then exit")
    ap.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv[1:])
    if args.chunk <= 0 or args.reps <= 0 or args.threads <= 0:
        ap.error("--chunk, --reps and --threads must be positive")
    impls = [s.strip() for s in args.impl.split(",") if s.strip()]
    for s in impls:
        if s not in IMPLS:
            ap.error("--impl: '%s' is not one of %s" % (s, ",".join(IMPLS)))
    if not impls:
        ap.error("--impl needs an implementation")
    shapes = parse_shapes(ap, args.shapes)

    if args.selftest:
        return selftest()
    if args.child:
        n, d, v = shapes[0]
        child(args.child, n, d, v, args.chunk, args.reps, args.threads, args.seed)
        return 0

    total = mem_total()
    if not args.json:
        print("PyTorch %s, f32, %d threads, %d reps + 1 warm-up, chunk %d, MemTotal %.1f GiB"
              % (torch.__version__, args.threads, args.reps, args.chunk, total / GIB))
        print("  %-14s %7s %6s %7s %12s %16s" % ("impl", "seq", "hidden", "vocab",
                                                  "median ms", "RSS growth MiB"))
    failed = False
    for n, d, v in shapes:
        for impl in impls:
            rec, bad = run_one(args, impl, n, d, v, total)
            failed |= bad
            if args.json:
                print(json.dumps(rec, separators=(",", ":")))
            elif rec["skipped"]:
                print("  %-14s %7d %6d %7d  skipped: %s" % (impl, n, d, v, rec["reason"]))
            else:
                print("  %-14s %7d %6d %7d %12.1f %16.1f" % (
                    impl, n, d, v, rec["median_ms"], rec["peak_rss_growth_bytes"] / MIB))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
