#!/usr/bin/env python3
"""tests/registry/torch_ops.py - every op of the registry against PyTorch.

Runs `tg_registry run` (tests/registry/tool.c: every f64 sample of every row,
with tapegrad's outputs, the weights of the loss sum_k sum(out_k * w_k) and
the gradients of the differentiable inputs) and computes the same with
PyTorch (float64) from each row's PyTorch expression (torch_ref.py):
  - a sample tapegrad must refuse (a bad input) must make PyTorch raise too,
    and a sample tapegrad computes must not (unless documented);
  - outputs: dtype, shape and values (within 1e-9 relative, 1e-12 absolute;
    NaN equals NaN; i64 and bool exactly), for the rows whose values are not
    tapegrad's own random numbers;
  - gradients of the differentiable inputs for the same loss: present
    exactly where PyTorch's are (an input the loss does not reach has none
    on both sides; the empty samples' zero gradients are gradients), then
    dtype, shape and values.
A disagreement explained by an entry of tests/diff/tg_doc.py's DOCUMENTED
(docs/api.md "Differences from PyTorch") is counted under it; any other is a
failure, printed with the row and sample. Exit status: 0 all agree or are
explained, 1 failures, 77 no torch (CTest's skip), 2 bad usage.

Usage: torch_ops.py TG_REGISTRY [--row NAME] [--quiet]
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import warnings

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'diff'))
try:
    import torch
except ImportError:
    print('registry_torch: skipped: no torch (PyTorch is not importable by %s)' % sys.executable)
    sys.exit(77)

import torch_ref  # noqa: E402
from tg_doc import DOCUMENTED, op_difference  # noqa: E402

warnings.filterwarnings('ignore')
torch.set_num_threads(1)
RTOL, ATOL = 1e-9, 1e-12
FLAG_RANDOM, FLAG_UNINIT, FLAG_INPLACE, FLAG_CREATE = 1 << 3, 1 << 4, 1 << 1, 1 << 2
S_BAD, S_DTYPES = 1 << 7, 1 << 6


def tensor_of(d):
    """The tensor of a manifest entry, with tapegrad's layout: a strided input
    is made as tests/registry's tgr_strided makes it (the last two dims
    transposed, or every second element of a 1-D tensor twice as long)."""
    if d is None:
        return None
    dt = torch_ref.TORCH_DT[d['dtype']]
    vals, shape = d['values'], d['shape']
    t = torch.tensor(vals, dtype=dt).reshape(shape) if vals else torch.zeros(shape, dtype=dt)
    if not d.get('strided'):
        return t
    if t.dim() >= 2:
        return t.transpose(-2, -1).contiguous().transpose(-2, -1)
    return torch.stack([t, t], -1).reshape(-1)[::2]


def close(a, b, rtol=None):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= (rtol or RTOL) * max(abs(a), abs(b)) + ATOL


def differ(c, t, values=True, rtol=None):
    """Why tapegrad's tensor c (JSON) and PyTorch's t differ, or None."""
    if c is None or t is None:
        return None if c is None and t is None else 'tapegrad %s, PyTorch %s' % (
            'None' if c is None else 'a tensor', 'None' if t is None else 'a tensor')
    tdt = torch_ref.DT_NAME.get(t.dtype, str(t.dtype))
    if c['dtype'] != tdt:
        return 'dtype %s, PyTorch %s' % (c['dtype'], tdt)
    if list(c['shape']) != list(t.shape):
        return 'shape %s, PyTorch %s' % (c['shape'], list(t.shape))
    if not values or isinstance(t, torch_ref.Random):
        return None
    tv = t.detach().reshape(-1).tolist()
    for i, (x, y) in enumerate(zip(c['values'], tv)):
        ok = x == y if c['dtype'] in ('i64', 'bool') else close(
            float(x), float(y), max(rtol or RTOL, 2e-6) if c['dtype'] == 'f32' else rtol)
        if not ok:
            return 'element %d: %r, PyTorch %r' % (i, x, y)
    return None


def _nonfinite(rec):
    return any(d is not None and d['dtype'] in ('f32', 'f64') and
               any(not math.isfinite(float(v)) for v in d['values']) for d in rec['inputs'])


def documented(row, rec, exc):
    """The DOCUMENTED entry a disagreement of this row and sample falls under, or None.
    exc: what PyTorch raised (in the forward or the backward), or None."""
    notes = set(torch_ref.NOTES)
    name, msg = row['row'], str(exc) if exc is not None else ''
    if row['row'] in ('argmax_dim', 'argmin_dim', 'argmax', 'argmin') and \
            rec['inputs'][0]['dtype'] == 'bool' and exc is not None:
        return 'bool-argmax'
    for n in ('int-min-division', 'float-to-int', 'var-degenerate', 'prod-nonfinite',
              'norm-p-precision'):
        if n in notes:
            return n
    # those the op programs meet too (tests/diff/tg_doc.py)
    return op_difference(name, dict(rec['args'], shape=rec['args'].get('shape', [])),
                         None, rec['status'], exc)


def run_record(rows, rec):
    """None when tapegrad and PyTorch agree on this sample, else (kind, text)."""
    row = rows[rec['row']]
    torch_ref.NOTES.clear()
    inputs = [tensor_of(d) for d in rec['inputs']]
    diff_mask = row['diff']
    c_grads = rec.get('grads') or [None] * len(inputs)
    for k, t in enumerate(inputs):
        if t is not None and 'grads' in rec and (diff_mask >> k & 1) and \
                t.is_floating_point():
            t.requires_grad_(True)
    bad = bool(rec['flags'] & S_BAD)
    exc, outs = None, None
    try:
        args_in = list(inputs)
        if row['flags'] & FLAG_INPLACE and not bad and args_in and args_in[0] is not None:
            args_in[0] = args_in[0].clone()   # the in-place op on a copy, as tgr_call
        outs = torch_ref.evaluate(row, args_in, rec['args'])
        if row['flags'] & FLAG_INPLACE:
            outs = [args_in[0]]
    except (RuntimeError, ValueError, IndexError, TypeError, torch_ref.ContractError,
            OverflowError, ZeroDivisionError) as e:
        exc = e
    c_ok = rec['status'] == 'TG_OK'
    if c_ok != (exc is None):
        doc = documented(row, rec, exc)
        if doc:
            return ('doc', doc)
        return ('fail', 'tapegrad %s (%s); PyTorch %s' % (
            rec['status'], rec['message'][:160],
            'succeeded' if exc is None else 'raised %s: %s' % (type(exc).__name__,
                                                              str(exc).splitlines()[0][:160])))
    if not c_ok:
        return None
    values = not (row['flags'] & (FLAG_RANDOM | FLAG_UNINIT))
    # an f32 or integer operand of a mixed-dtype sample rounds PyTorch's steps in f32
    rtol = 2e-6 if rec['flags'] & S_DTYPES or any(
        d is not None and d['dtype'] == 'f32' for d in rec['inputs']) else None
    n = len(rec['outputs'])
    outs = (outs + [None] * n)[:n]
    for k in range(n):
        why = differ(rec['outputs'][k], outs[k], values, rtol)
        if why:
            doc = documented(row, rec, None)
            return ('doc', doc) if doc else ('fail', 'output %d: %s' % (k, why))
    # gradients for the same loss
    loss = None
    for k in range(n):
        w = tensor_of(rec['weights'][k]) if k < len(rec['weights']) else None
        o = outs[k]
        if w is None or o is None or not isinstance(o, torch.Tensor) or not o.requires_grad:
            continue
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    if loss is None:
        return None
    try:
        loss.backward()
    except RuntimeError as e:
        doc = documented(row, rec, e)
        return ('doc', doc) if doc else \
            ('fail', 'PyTorch backward raised: %s' % str(e).splitlines()[0][:160])
    for k, t in enumerate(inputs):
        if t is None or not t.requires_grad:
            continue
        cg = c_grads[k]
        why = differ(cg, t.grad, True, rtol) if cg is not None and t.grad is not None else \
            None if cg is None and t.grad is None else 'tapegrad gives %s, PyTorch %s' % (
                'none' if cg is None else 'one', 'none' if t.grad is None else 'one')
        if why:
            doc = documented(row, rec, None)
            return ('doc', doc) if doc else ('fail', 'gradient of input %d: %s' % (k, why))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('runner', help='the tg_registry program (tests/registry/tool.c)')
    ap.add_argument('--row', help='only this row')
    ap.add_argument('--quiet', action='store_true')
    a = ap.parse_args()
    man = subprocess.run([a.runner, 'manifest'], capture_output=True, text=True, check=True)
    rows = {}
    for line in man.stdout.splitlines():
        r = json.loads(line)
        rows[r['row']] = r
    cmd = [a.runner, 'run'] + ([a.row] if a.row else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    names = {n for n, _ in DOCUMENTED}
    with open(os.path.join(HERE, '..', '..', 'docs', 'api.md')) as fh:
        api = fh.read()
    undocumented = sorted(n for n in names if '`%s`' % n not in api)
    counts, fails, total = collections.Counter(), [], 0
    seen_rows = set()
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        total += 1
        seen_rows.add(rec['row'])
        res = run_record(rows, rec)
        if res is None:
            continue
        kind, text = res
        if kind == 'doc':
            assert text in names, text
            counts[text] += 1
        else:
            fails.append('%s (%s): %s' % (rec['row'], rec['what'], text))
    missing = set(rows) - seen_rows if not a.row else set()
    for m in sorted(missing):
        fails.append('%s: no sample ran' % m)
    for n in undocumented:   # every accepted difference is in docs/api.md
        fails.append('%s: accepted as documented but docs/api.md does not name it' % n)
    for f in fails:
        print('registry_torch: FAIL %s' % f)
    if not a.quiet or fails:
        for name, c in counts.most_common():
            print('registry_torch: documented %s: %d' % (name, c))
    print('registry_torch: %d rows, %d samples, %d failures, %d documented differences' % (
        len(seen_rows), total, len(fails), sum(counts.values())))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
