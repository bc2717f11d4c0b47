#!/usr/bin/env python3
"""bench/reference_logprob.py - float64 NumPy reference for `tapegrad logprob`.

Contract:
  reference_logprob.py --logits L.npy --targets T.npy
                       [--grad-logprob G.npy] [--grad-entropy H.npy]
                       [--temperature T] [--ignore-index I]
                       (--write DIR | --compare DIR)
                       [--rtol 1e-5] [--atol 1e-6] [--grad-atol 1e-6]

  Reads the same .npy inputs as `tapegrad logprob` and computes, in float64,
  for each row z of the logits (last axis = vocabulary), with x = z / T:
      lse = logsumexp(x), logprob = x[y] - lse, p = exp(x - lse),
      entropy = lse - sum(p * x)          (terms with p == 0 count as 0)
  and, when G or H is given (a missing one counts as zero), the gradient of
  sum(logprob * G + entropy * H) with respect to z:
      dx = G * (onehot(y) - p) - H * p * (x - lse + entropy),  dz = dx / T.
  Rows whose target is the ignore index (default -100) give logprob 0,
  entropy 0 and a zero gradient. Rows are processed in blocks, so memory
  stays a few times one block of float64 logits.

  --write DIR    writes DIR/logprob.npy, DIR/entropy.npy (and
                 DIR/grad_logits.npy with G or H) in float64.
  --compare DIR  reads tapegrad's outputs from DIR, checks their shapes and
                 that their dtype is the logits', and prints the max absolute
                 and relative error of each. Values pass when
                 |got - ref| <= atol + rtol * |ref| (defaults 1e-6, 1e-5);
                 the gradient when |got - ref| <= grad-atol (default 1e-6).

  Exit status: 0 everything within tolerance (or written), 1 an output is
  missing, has the wrong shape or dtype, or is past a tolerance, 2 bad usage
  or unreadable inputs (argparse's own errors also exit 2), 3 NumPy missing.
"""
import argparse
import os
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("reference_logprob: NumPy is required "
                     "(Debian: apt-get install python3-numpy)\n")
    sys.exit(3)

BLOCK_ELEMS = 1 << 22  # logits elements per block of rows (32 MiB of float64)


def fail(code, msg):
    sys.stderr.write("reference_logprob: %s\n" % msg)
    sys.exit(code)


def load(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        fail(2, "cannot read %s %s: %s" % (what, path, e))


def reference(z, y, g, h, temperature, ignore_index):
    """Returns (logprob, entropy, grad or None) in float64; z is (..., V)."""
    V = z.shape[-1]
    lead = z.shape[:-1]
    z2 = z.reshape(-1, V)
    y1 = y.reshape(-1).astype(np.int64)
    N = z2.shape[0]
    want_grad = g is not None or h is not None
    g1 = np.zeros(N) if g is None else g.reshape(-1).astype(np.float64)
    h1 = np.zeros(N) if h is None else h.reshape(-1).astype(np.float64)
    lp = np.zeros(N)
    ent = np.zeros(N)
    grad = np.zeros((N, V)) if want_grad else None
    rows = max(1, BLOCK_ELEMS // max(V, 1))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for r0 in range(0, N, rows):
            r1 = min(N, r0 + rows)
            keep = y1[r0:r1] != ignore_index
            idx = np.nonzero(keep)[0]
            if idx.size == 0:
                continue
            yy = y1[r0:r1][idx]
            if np.any((yy < 0) | (yy >= V)):
                bad = int(yy[(yy < 0) | (yy >= V)][0])
                fail(2, "target %d is outside [0, %d)" % (bad, V))
            x = z2[r0:r1][idx].astype(np.float64) / temperature
            m = np.max(x, axis=1, keepdims=True)
            s = np.sum(np.exp(x - m), axis=1, keepdims=True)
            lse = m + np.log(s)
            p = np.exp(x - lse)
            px = np.where(p > 0, p * x, 0.0)
            H = lse[:, 0] - np.sum(px, axis=1)
            rows_i = np.arange(idx.size)
            lp[r0 + idx] = x[rows_i, yy] - lse[:, 0]
            ent[r0 + idx] = H
            if want_grad:
                onehot = np.zeros_like(x)
                onehot[rows_i, yy] = 1.0
                t = np.where(p > 0, p * (x - lse + H[:, None]), 0.0)
                dx = g1[r0 + idx, None] * (onehot - p) - h1[r0 + idx, None] * t
                grad[r0 + idx] = dx / temperature
    return (lp.reshape(lead), ent.reshape(lead),
            grad.reshape(z.shape) if want_grad else None)


def compare(name, got, ref, dtype, rtol, atol, values):
    """Prints one line; returns True when within tolerance."""
    if got is None:
        print("%-12s MISSING" % name)
        return False
    if got.shape != ref.shape:
        print("%-12s shape %s, expected %s" % (name, got.shape, ref.shape))
        return False
    if got.dtype != dtype:
        print("%-12s dtype %s, expected %s (the logits')" % (name, got.dtype, dtype))
        return False
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.abs(g - ref)
        rel = err / np.maximum(np.abs(ref), np.finfo(np.float64).tiny)
    if err.size:
        bad_nan = np.isnan(g) != np.isnan(ref)
        max_abs = float(np.nanmax(err)) if not np.all(np.isnan(err)) else 0.0
        max_rel = float(np.nanmax(rel)) if not np.all(np.isnan(rel)) else 0.0
    else:
        bad_nan = np.zeros(0, dtype=bool)
        max_abs = max_rel = 0.0
    if values:
        limit = atol + rtol * np.abs(ref)
        tol = "tol %g rel + %g abs" % (rtol, atol)
    else:
        limit = atol
        tol = "tol %g abs" % atol
    ok = bool(np.all((err <= limit) | (np.isnan(g) & np.isnan(ref)))) and not bad_nan.any()
    print("%-12s max abs err %.3e  max rel err %.3e  (%s)  %s"
          % (name, max_abs, max_rel, tol, "ok" if ok else "FAIL"))
    if not ok:
        worst = int(np.nanargmax(np.where(np.isnan(err), np.inf, err - limit)))
        pos = np.unravel_index(worst, ref.shape) if ref.ndim else ()
        print("%-12s worst at %s: got %.9g, expected %.9g"
              % ("", tuple(int(i) for i in pos), g.reshape(-1)[worst], ref.reshape(-1)[worst]))
    return ok


def main():
    ap = argparse.ArgumentParser(description="float64 reference for `tapegrad logprob`")
    ap.add_argument("--logits", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--grad-logprob")
    ap.add_argument("--grad-entropy")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--ignore-index", type=int, default=-100)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR")
    mode.add_argument("--compare", metavar="DIR")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--grad-atol", type=float, default=1e-6)
    a = ap.parse_args()

    if not (np.isfinite(a.temperature) and a.temperature > 0):
        fail(2, "--temperature must be finite and > 0")
    z = load(a.logits, "logits")
    y = load(a.targets, "targets")
    if z.dtype not in (np.float32, np.float64) or z.ndim < 1:
        fail(2, "logits must be float32/float64 with at least 1 dim, got %s %s"
             % (z.dtype, z.shape))
    if y.dtype.kind not in "iu" or y.shape != z.shape[:-1]:
        fail(2, "targets must be integers of shape %s, got %s %s" % (z.shape[:-1], y.dtype, y.shape))
    g = load(a.grad_logprob, "grad-logprob") if a.grad_logprob else None
    h = load(a.grad_entropy, "grad-entropy") if a.grad_entropy else None
    for name, u in (("grad-logprob", g), ("grad-entropy", h)):
        if u is not None and u.shape != y.shape:
            fail(2, "%s has shape %s, expected %s" % (name, u.shape, y.shape))

    lp, ent, grad = reference(z, y, g, h, a.temperature, a.ignore_index)
    outputs = [("logprob", lp, True), ("entropy", ent, True)]
    if grad is not None:
        outputs.append(("grad_logits", grad, False))

    if a.write:
        os.makedirs(a.write, exist_ok=True)
        for name, ref, _ in outputs:
            np.save(os.path.join(a.write, name + ".npy"), ref)
        print("reference_logprob: wrote %s" % ", ".join(
            os.path.join(a.write, n + ".npy") for n, _, _ in outputs))
        return 0

    ok = True
    for name, ref, values in outputs:
        path = os.path.join(a.compare, name + ".npy")
        got = load(path, name) if os.path.exists(path) else None
        if values:
            ok &= compare(name, got, ref, z.dtype, a.rtol, a.atol, True)
        else:
            ok &= compare(name, got, ref, z.dtype, 0.0, a.grad_atol, False)
    print("reference_logprob: %s" % ("all within tolerance" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
