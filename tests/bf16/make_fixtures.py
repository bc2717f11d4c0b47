#!/usr/bin/env python3
"""tests/bf16/make_fixtures.py - the fixtures of test_bf16: one output-layer
case in bfloat16, its float64 reference, and how far PyTorch's own bf16
autocast lands from that reference.

    /usr/bin/python3 tests/bf16/make_fixtures.py tests/bf16/fixtures

Writes (NumPy .npy, read by the test through cli/npy.c):
  hidden.npy (N, d) f32, weight.npy (V, d) f32: values exactly representable
      in bfloat16 (the test converts them to bf16 without rounding);
  targets.npy (N) i64 with some rows -100 (ignored);
  g_lp.npy, g_h.npy (N) f64: the upstream gradients of logprob and entropy;
  ref_lp.npy, ref_h.npy, ref_lse.npy (N) f64 and ref_dh.npy (N, d),
      ref_dw.npy (V, d) f64: logprob, entropy, log-sum-exp and the gradients
      of sum(lp * g_lp) + sum(h * g_h), computed in float64 from the same
      (bf16-exact) inputs;
  autocast.txt: one line per quantity, "name max_rel_error", for the same
      step under torch.autocast("cpu", dtype=torch.bfloat16): the logits
      h @ W^T in bf16, log_softmax / softmax as autocast runs them. Each error
      is max |x - ref| / max |ref|, the measure the test uses;
  torch_f32.txt: the same for PyTorch's plain f32 step on the same inputs
      (what the f32 fused op is held to).
Deterministic (fixed seed); the committed files are what this script writes.
"""
import os
import sys

import numpy as np
import torch

N, D, V = 64, 48, 500


def step(h, w, y, g_lp, g_h, autocast):
    """logprob, entropy, lse and the gradients of hidden and weight."""
    h = h.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    keep = y != -100
    yy = torch.where(keep, y, torch.zeros_like(y))
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else torch.no_grad()
    if not autocast:
        ctx = torch.enable_grad()
    with ctx:
        z = h @ w.t()
        logp = torch.log_softmax(z, -1)
        lse = torch.logsumexp(z, -1)
        lp = logp.gather(-1, yy[:, None])[:, 0] * keep
        ent = -(torch.softmax(z, -1) * logp).sum(-1) * keep
        lse = lse * keep
    loss = (lp.to(g_lp.dtype) * g_lp).sum() + (ent.to(g_h.dtype) * g_h).sum()
    loss.backward()
    return [t.detach().double() for t in (lp, ent, lse, h.grad, w.grad)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(20261126)
    h = torch.randn(N, D, generator=g).bfloat16().float()
    w = (torch.randn(V, D, generator=g) * (2.0 / D ** 0.5)).bfloat16().float()
    y = torch.randint(0, V, (N,), generator=g)
    y[::9] = -100
    g_lp = torch.randn(N, generator=g, dtype=torch.float64)
    g_h = torch.randn(N, generator=g, dtype=torch.float64)
    ref = step(h.double(), w.double(), y, g_lp, g_h, False)
    ac = step(h.bfloat16(), w.bfloat16(), y, g_lp.float(), g_h.float(), True)
    f32 = step(h, w, y, g_lp.float(), g_h.float(), False)
    np.save(os.path.join(out, "hidden.npy"), h.numpy())
    np.save(os.path.join(out, "weight.npy"), w.numpy())
    np.save(os.path.join(out, "targets.npy"), y.numpy().astype(np.int64))
    np.save(os.path.join(out, "g_lp.npy"), g_lp.numpy())
    np.save(os.path.join(out, "g_h.npy"), g_h.numpy())
    names = ["lp", "h", "lse", "dh", "dw"]
    for n, r in zip(names, ref):
        np.save(os.path.join(out, "ref_%s.npy" % n), r.numpy())
    for fname, got in (("autocast.txt", ac), ("torch_f32.txt", f32)):
        with open(os.path.join(out, fname), "w") as f:
            for n, r, a in zip(names, ref, got):
                err = (a - r).abs().max().item() / r.abs().max().item()
                f.write("%s %.6e\n" % (n, err))


if __name__ == "__main__":
    main()
