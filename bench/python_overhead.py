#!/usr/bin/env python3
"""bench/python_overhead.py - the time one Python call costs on a one-element
tensor: tapegrad against PyTorch eager and NumPy, in one process, the three
interleaved round after round, medians of the rounds.

    PYTHONPATH=python python3 bench/python_overhead.py [--rounds 15] [--number 20000]

Each case runs `number` calls per round; a round times every case of every
library once, in turn, so that a busy machine slows them alike. The figure
is microseconds per call (the median over rounds) and, for tapegrad, its
ratio to PyTorch's. Cases: a + b, add(a, b), a + 1.0, a.exp(), a sum over a
dim, and the creation of a tensor from a Python list. Libraries that are not
installed are left out. --json prints one object per case.
"""
import argparse
import json
import statistics
import timeit

CASES = {
    # name: {library: (setup, statement)}
    "a + b": {
        "tapegrad": ("import tapegrad as tg; a = tg.tensor([1.0]); b = tg.tensor([2.0])", "a + b"),
        "torch": ("import torch; a = torch.ones(1); b = torch.ones(1)", "a + b"),
        "numpy": ("import numpy as np; a = np.ones(1, np.float32); b = np.ones(1, np.float32)",
                  "a + b"),
    },
    "add(a, b)": {
        "tapegrad": ("import tapegrad as tg; a = tg.tensor([1.0]); b = tg.tensor([2.0])",
                     "tg.add(a, b)"),
        "torch": ("import torch; a = torch.ones(1); b = torch.ones(1)", "torch.add(a, b)"),
        "numpy": ("import numpy as np; a = np.ones(1, np.float32); b = np.ones(1, np.float32)",
                  "np.add(a, b)"),
    },
    "a + 1.0": {
        "tapegrad": ("import tapegrad as tg; a = tg.tensor([1.0])", "a + 1.0"),
        "torch": ("import torch; a = torch.ones(1)", "a + 1.0"),
        "numpy": ("import numpy as np; a = np.ones(1, np.float32)", "a + 1.0"),
    },
    "exp(a)": {
        "tapegrad": ("import tapegrad as tg; a = tg.tensor([1.0])", "a.exp()"),
        "torch": ("import torch; a = torch.ones(1)", "a.exp()"),
        "numpy": ("import numpy as np; a = np.ones(1, np.float32)", "np.exp(a)"),
    },
    "sum over dim 0": {
        "tapegrad": ("import tapegrad as tg; a = tg.tensor([1.0])", "a.sum_dim(0, False)"),
        "torch": ("import torch; a = torch.ones(1)", "a.sum(0)"),
        "numpy": ("import numpy as np; a = np.ones(1, np.float32)", "a.sum(0)"),
    },
    "tensor([1.0, 2.0])": {
        "tapegrad": ("import tapegrad as tg", "tg.tensor([1.0, 2.0])"),
        "torch": ("import torch", "torch.tensor([1.0, 2.0])"),
        "numpy": ("import numpy as np", "np.array([1.0, 2.0], np.float32)"),
    },
}


def available(lib: str) -> bool:
    try:
        __import__(lib)
        return True
    except ImportError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    libs = [lib for lib in ("tapegrad", "torch", "numpy") if available(lib)]
    if "torch" in libs:
        import torch
        torch.set_num_threads(1)
    timers = {(case, lib): timeit.Timer(stmt, setup)
              for case, by_lib in CASES.items() for lib, (setup, stmt) in by_lib.items()
              if lib in libs}
    times = {key: [] for key in timers}
    for _ in range(a.rounds):
        for key, timer in timers.items():
            times[key].append(timer.timeit(a.number) / a.number * 1e6)
    med = {key: statistics.median(v) for key, v in times.items()}
    if not a.json:
        print(f"{'case':22s}" + "".join(f"{lib:>12s}" for lib in libs) + "   tapegrad/torch")
    for case in CASES:
        row = {lib: med[(case, lib)] for lib in libs}
        ratio = row["tapegrad"] / row["torch"] if "torch" in row and "tapegrad" in row else None
        if a.json:
            print(json.dumps({"case": case, "us": row, "tapegrad_over_torch": ratio}))
        else:
            print(f"{case:22s}" + "".join(f"{row[lib]:12.2f}" for lib in libs) +
                  (f"   {ratio:14.2f}" if ratio is not None else ""))
    if not a.json:
        print(f"(microseconds per call, medians of {a.rounds} interleaved rounds of "
              f"{a.number} calls; one-element float32 tensors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
