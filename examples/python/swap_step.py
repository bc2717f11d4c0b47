#!/usr/bin/env python3
"""examples/python/swap_step.py - one training step of an output layer in
PyTorch, twice: with PyTorch's own log_softmax + gather + entropy, and with
tapegrad.torch.linear_logprob_entropy swapped in. Each runs in a child
process of its own; each prints its step time and the growth of the
process's peak resident memory during the step (VmHWM after the step minus
VmRSS just before, with VmHWM reset first), and the two losses must agree.

    python3 examples/python/swap_step.py [--seq N] [--hidden D] [--vocab V]

Defaults: 2048 rows, hidden 512, vocabulary 32000, float32, CPU. The loss:
-mean(logprob) - 0.01 mean(entropy), 1% of the rows ignored. Needs PyTorch
and the tapegrad package (TAPEGRAD_LIB / PYTHONPATH as in docs/python.md).
"""
import argparse
import json
import subprocess
import sys
import time


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def child(mode, n, d, v):
    import torch
    torch.manual_seed(0)
    hidden = torch.randn(n, d, requires_grad=True)
    weight = (torch.randn(v, d) * (2 / d ** 0.5)).requires_grad_()
    y = torch.randint(0, v, (n,))
    y[37::100] = -100
    keep = y != -100
    if mode == "tapegrad":
        import tapegrad.torch as tt
    with open("/proc/self/clear_refs", "w") as f:  # VmHWM := VmRSS
        f.write("5")
    rss0 = status_kib("VmRSS")
    t0 = time.perf_counter()
    if mode == "pytorch":
        logp = torch.log_softmax(hidden @ weight.T, -1)
        lp = logp.gather(-1, y.clamp(min=0)[:, None])[:, 0] * keep
        h = -(logp.exp() * logp).sum(-1) * keep
    else:
        lp, h = tt.linear_logprob_entropy(hidden, weight, y)
    loss = -lp.mean() - 0.01 * h.mean()
    loss.backward()
    dt = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "loss": loss.item(), "seconds": dt,
                      "peak_growth_mib": (status_kib("VmHWM") - rss0) / 1024,
                      "grad_norm": weight.grad.norm().item()}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--child", choices=["pytorch", "tapegrad"])
    a = ap.parse_args()
    if a.child:
        child(a.child, a.seq, a.hidden, a.vocab)
        return 0
    rows = []
    for mode in ("pytorch", "tapegrad"):
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--seq", str(a.seq),
                              "--hidden", str(a.hidden), "--vocab", str(a.vocab)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    logits_mib = a.seq * a.vocab * 4 / 2 ** 20
    print(f"N {a.seq}, d {a.hidden}, V {a.vocab}, float32 (logits {logits_mib:.0f} MiB)")
    for r in rows:
        print(f"  {r['mode']:9} loss {r['loss']:.6f}  step {r['seconds']:6.2f} s  "
              f"peak RSS growth {r['peak_growth_mib']:7.1f} MiB")
    a_, b_ = rows
    ok = abs(a_["loss"] - b_["loss"]) <= 1e-4 * abs(a_["loss"]) and \
        abs(a_["grad_norm"] - b_["grad_norm"]) <= 1e-3 * a_["grad_norm"]
    print("  same loss and weight gradient" if ok else "  LOSSES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
