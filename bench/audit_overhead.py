#!/usr/bin/env python3
"""bench/audit_overhead.py - what tapegrad.torch's audit of PyTorch graphs
costs a training step: the step alone (the tools off), under a dispatch
mode that does nothing (PyTorch's own cost of a mode, for comparison), under
``inplace_guard()``, with ``watch_steps()`` marking every step, both, and
``track_saved()`` (a diagnostic, not meant for every step). One process,
the variants interleaved round after round so that a busy machine slows
them alike; the figure is the median time per step over the rounds and its
ratio to the step alone, and the difference (what the tools add).

    PYTHONPATH=python python3 bench/audit_overhead.py [--rounds 7] [--steps 5]
        [--size lm|small] [--threads 1] [--json]

Steps (float32, CPU unless --device cuda):
  lm     an output layer's step: hidden (512, 256) -> Linear(256, 512) -> GELU
         -> Linear(512, 8000) logits; loss = -mean(log-prob of the targets),
         the entropy logged under no_grad; backward; AdamW step
  small  the same graph with (64, 64) hidden, 128 wide, vocabulary 512: the
         ops are tiny, so the per-op cost of the dispatch mode and the hooks
         is the whole difference (the worst case)
The target (issue 29): at most 1.3x the step alone with the guard and the
watcher on, nothing when off (importing tapegrad.torch installs nothing:
python/tests/test_audit_leaks.py checks it).
"""
import argparse
import json
import statistics
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import tapegrad.torch as tt

SIZES = {"lm": (512, 256, 512, 8000), "small": (64, 64, 128, 512)}


def make(size, device):
    n, d, h, v = SIZES[size]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.GELU(),
                                torch.nn.Linear(h, v)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(n, d, device=device)
    y = torch.randint(0, v, (n,), device=device)

    def step():
        logits = model(x)
        logp = torch.log_softmax(logits, -1)
        loss = -logp.gather(-1, y[:, None]).mean()
        with torch.no_grad():
            entropy = -(logp.exp() * logp).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item(), entropy.item()
    return step


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(step, steps, device, variant):
    """Seconds per step of ``steps`` steps under ``variant``."""
    sync(device)
    t0 = time.perf_counter()
    if variant == "off":
        for _ in range(steps):
            step()
    elif variant == "guard":
        with tt.inplace_guard():
            for _ in range(steps):
                step()
    elif variant == "watcher":
        with tt.watch_steps() as w:
            for _ in range(steps):
                step()
                w.step()
    elif variant == "guard+watcher":
        with tt.inplace_guard(), tt.watch_steps() as w:
            for _ in range(steps):
                step()
                w.step()
    elif variant == "empty mode":
        with _EmptyMode():
            for _ in range(steps):
                step()
    elif variant == "track_saved":
        with tt.track_saved():
            for _ in range(steps):
                step()
    sync(device)
    return (time.perf_counter() - t0) / steps


VARIANTS = ("off", "empty mode", "guard", "watcher", "guard+watcher", "track_saved")


class _EmptyMode(TorchDispatchMode):
    """A dispatch mode that only calls the op: what PyTorch's mode machinery
    costs by itself, for comparison with the guard."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--size", choices=sorted(SIZES), default="lm")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (1: steadier on a shared machine)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    step = make(a.size, a.device)
    for v in VARIANTS:  # warm-up: allocator, Adam's state, the dispatch caches
        timed(step, 1, a.device, v)
    times = {v: [] for v in VARIANTS}
    for _ in range(a.rounds):
        for v in VARIANTS:
            times[v].append(timed(step, a.steps, a.device, v))
    base = statistics.median(times["off"])
    rows = [{"variant": v, "median_ms": statistics.median(ts) * 1e3,
             "ratio": statistics.median(ts) / base, "torch": torch.__version__,
             "size": a.size, "device": a.device} for v, ts in times.items()]
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    n, d, h, v = SIZES[a.size]
    print(f"PyTorch {torch.__version__}, {a.device} ({a.threads} thread{'s' if a.threads > 1 else ''}), {a.size} step (hidden ({n}, {d}), width {h}, "
          f"vocabulary {v}), {a.rounds} interleaved rounds of {a.steps} steps, medians")
    print(f"  {'variant':14} {'ms/step':>9} {'x off':>6} {'ms over off':>12}")
    for r in rows:
        print(f"  {r['variant']:14} {r['median_ms']:9.2f} {r['ratio']:6.2f} "
              f"{r['median_ms'] - base * 1e3:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
