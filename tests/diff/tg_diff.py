#!/usr/bin/env python3
"""tests/diff/tg_diff.py - differential test of tapegrad against PyTorch.

Generates seeded random op programs (tg_gen.py), runs them with tapegrad
through tests/diff/tg_diff_run (JSON: per-instruction status, the values it
wrote, gradients) and with PyTorch in float64 (tg_prog.TorchRun), and compares
instruction by instruction:
  - statuses: tapegrad's TG_ERR_INPLACE exactly where PyTorch raises a
    RuntimeError saying "modified by an inplace operation"; otherwise a
    tapegrad failure exactly where PyTorch raises;
  - the values, dtype, shape, requires_grad and leaf-ness of every register an
    instruction writes (or of the in-place target), the .grad of every register
    after each backward, and every register and .grad at the end, values within
    1e-9 relative with a 1e-12 absolute floor (NaN equals NaN, infinities equal
    infinities of the same sign);
  - the C executor's own contract checks (tests/prog) and its end-of-program
    check that nothing is alive.
A disagreement that matches an entry of DOCUMENTED (each with its reason) is
counted under that entry and ends the comparison of that program; every other
disagreement is a failure, printed with the program, which is also written to
the output directory. Exit status: 0 all explained, 1 failures, 77 no torch
(CTest's skip), 2 bad usage.

Usage: tg_diff.py --runner build/tests/tg_diff_run [--seeds 1,2,3] [--programs 300]
                  [--file PROGRAMS.txt] [--out DIR] [--minimize] [--quiet]
"""
import argparse
import collections
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

sys.dont_write_bytecode = True   # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
except ImportError:
    print('tg_diff: skipped: no torch (PyTorch is not importable by %s)' % sys.executable)
    sys.exit(77)

import json  # noqa: E402

from tg_doc import DISABLED, DOCUMENTED, documented  # noqa: E402
from tg_gen import AVOIDABLE, generate  # noqa: E402
from tg_prog import INPLACE, OPS, TorchRun, format_insn, load_manifest, parse_programs  # noqa: E402

warnings.filterwarnings('ignore')
torch.set_num_threads(1)
RTOL, ATOL = 1e-9, 1e-12
DT = {torch.float64: 'f64', torch.float32: 'f32', torch.int64: 'i64', torch.bool: 'bool'}


# ---- values ----------------------------------------------------------------------------------

def close(a, b, rtol=RTOL):
    if isinstance(a, str) or isinstance(b, str):
        return False
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + ATOL


def describe(t):
    if t is None:
        return 'None'
    if isinstance(t, dict):
        return '%s%s %s%s' % (t['dtype'], t['shape'], _short(t['data']),
                              ' rg' if t.get('rg') else '')
    return '%s%s %s%s' % (DT.get(t.dtype, str(t.dtype)), list(t.shape),
                          _short(t.detach().reshape(-1).tolist()), ' rg' if t.requires_grad else '')


def _short(v):
    if isinstance(v, str):
        return v
    s = '[' + ', '.join('%.6g' % x for x in v[:8]) + (', ...]' if len(v) > 8 else ']')
    return s


# Documented differences met while comparing values, that do not stop the
# comparison (the program's run appends them to its notes).
STATE_NOTES = []
_NOGRAD_VIEW = 'A view was created in no_grad mode and its base or another view of its base'


def diff_tensor(ct, pt, lowp=False):
    """None when the C tensor (JSON) and the PyTorch tensor agree, else why not.
    lowp: the values came through f32 (or bf16) arithmetic, whose rounding they
    carry even in an f64 tensor (f32 math libraries differ by an ulp)."""
    if ct is None or pt is None:
        return None if ct is None and pt is None else 'tapegrad %s, PyTorch %s' % (
            describe(ct), describe(pt))
    if ct['dtype'] != DT.get(pt.dtype, str(pt.dtype)) or ct['shape'] != list(pt.shape):
        return 'tapegrad %s, PyTorch %s' % (describe(ct), describe(pt))
    data = pt.detach().reshape(-1).tolist()
    if isinstance(ct['data'], str) or len(ct['data']) != len(data):
        return 'tapegrad data %s, PyTorch %s' % (_short(ct['data']), _short(data))
    rtol = 2e-6 if ct['dtype'] == 'f32' or lowp else RTOL   # f32 rounding
    for i, (a, b) in enumerate(zip(ct['data'], data)):
        if not close(float(a), float(b), rtol):
            return 'element %d: tapegrad %.17g, PyTorch %.17g (tapegrad %s, PyTorch %s)' % (
                i, a, b, _short(ct['data']), _short(data))
    try:
        rg, leaf = pt.requires_grad, pt.is_leaf
    except RuntimeError as e:
        if _NOGRAD_VIEW in str(e):   # documented: nograd-view-state; the values agree
            STATE_NOTES.append('nograd-view-state')
            return None
        return 'PyTorch refuses to read its autograd state: %s' % str(e).split('.')[0]
    if ct['rg'] != rg:
        return 'requires_grad: tapegrad %s, PyTorch %s' % (ct['rg'], rg)
    if ct['leaf'] != leaf:
        return 'is_leaf: tapegrad %s, PyTorch %s' % (ct['leaf'], leaf)
    return None


def torch_grads(run):
    out = {}
    for r, t in enumerate(run.regs):
        try:
            g = t.grad if t is not None and t.is_leaf else None
        except RuntimeError:
            g = None
        if g is not None:
            out['r%d' % r] = g
    return out


def diff_grads(cg, pg, lowp=False):
    for k in sorted(set(cg) | set(pg), key=lambda s: int(s[1:])):
        d = diff_tensor(cg.get(k), pg.get(k), lowp)
        if d:
            return '.grad of %s: %s' % (k, d)
    return None


# ---- one program ------------------------------------------------------------------------------

class Outcome:
    def __init__(self, kind, step=-1, what='', doc=None, sig=None):
        self.kind = kind          # 'match', 'doc', 'mismatch', 'violation', 'crash'
        self.step, self.what, self.doc, self.sig = step, what, doc, sig
        self.docs = []            # documented differences met on the way


def exc_text(e):
    return 'ok' if e is None else '%s: %s' % (type(e).__name__, str(e).split('\n')[0][:160])


def compare_program(prog, crec):
    """Replays prog with PyTorch against tapegrad's record crec."""
    steps = crec['steps']
    run = TorchRun()
    o = _compare(prog, crec, steps, run)
    run.notes.extend(STATE_NOTES)
    del STATE_NOTES[:]
    o.docs = list(run.notes)
    if crec.get('nviol'):
        o = Outcome('violation', what='; '.join(crec['violations']), sig=('violation',))
        o.docs = []
    return o


def _compare(prog, crec, steps, run):
    ctx = {'tainted': set(), 'failed_backward': False, 'regs': run.regs, 'docs': run.notes}
    for i, (ins, cs) in enumerate(zip(prog, steps)):
        op = ins['op']
        inputs = [None if r is None else run.regs[r] for r in ins['src']]
        before = _grads_before(run) if op == 'backward' else None
        if op == 'backward':
            _note_grads(ctx, run)
        _note_lowp(ctx, ins, inputs)
        exc = run.step(ins, cs)
        o = _compare_step(ctx, run, i, ins, cs, inputs, before, exc)
        _taint(ctx, ins, inputs, run, exc)   # after: what this step read was not stale yet
        if o is not None:
            return o
    if len(steps) != len(prog):
        return Outcome('crash', len(steps), 'tapegrad stopped after %d of %d instructions' % (
            len(steps), len(prog)), sig=('crash',))
    final = crec['final']
    for r in range(len(run.regs)):
        d = diff_tensor(final['regs'].get('r%d' % r), run.regs[r], r in ctx['lowp'])
        if d:
            return _value_diff(ctx, None, [], len(prog), 'final r%d: %s' % (r, d), ('final',))
    d = diff_grads(final['grads'], torch_grads(run), bool(ctx['lowp']))
    if d:
        return _value_diff(ctx, None, [], len(prog), 'final ' + d, ('final-grads',))
    return Outcome('match')


def _note_lowp(ctx, ins, inputs):
    """Registers whose values came through f32 or bf16 arithmetic (ctx['lowp']):
    an op's outputs are when an input is (an f32 tensor, or a register so marked);
    gradients are compared the same way once any register is."""
    low = ctx.setdefault('lowp', set())
    src_low = any(r in low for r in ins['src'] if r is not None) or any(
        t is not None and t.dtype in (torch.float32, torch.bfloat16) for t in inputs)
    if ins['op'] in INPLACE:
        if src_low:
            low.add(ins['src'][0])
        return
    for r in ins['dst']:
        if r is not None:
            (low.add if src_low else low.discard)(r)


def _grads_before(run):
    """Per leaf register: (its .grad object, a copy of its values), before a backward."""
    out = {}
    for r, t in enumerate(run.regs):
        if t is not None and _is_leaf(t) and t.grad is not None:
            out[r] = (t.grad, t.grad.detach().clone())
    return out


def _undo_partial_backward(ctx, run, before):
    """A backward failed in both. tapegrad changes no .grad then; PyTorch may have
    accumulated into some (in place) before it raised: put them back as they were,
    keeping the tensor objects (registers may hold them), and note it."""
    changed = False
    with torch.no_grad():
        for r, t in enumerate(run.regs):
            if t is None or not _is_leaf(t):
                continue
            if r in before:
                obj, vals = before[r]
                if t.grad is not obj or not torch.equal(obj, vals):
                    changed = True
                    obj.copy_(vals)
                    t.grad = obj
            elif t.grad is not None:
                changed = True
                t.grad = None
        # a .grad read earlier into a register whose leaf no register holds any
        # more: PyTorch added into it in place before it raised
        for r, (obj, vals) in ctx.get('values_before', {}).items():
            if run.regs[r] is obj and not _same_values(obj, vals):
                changed = True
                obj.copy_(vals)
    if changed:
        ctx['partial_backward'] = True
        ctx['docs'].append('failed-backward-partial')


def _is_leaf(t):
    try:
        return t.is_leaf
    except RuntimeError:
        return False


def _compare_step(ctx, run, i, ins, cs, inputs, before, exc):
    """None when step i agrees (or differs in a documented way that keeps both
    sides in the same state), else the outcome that ends the comparison."""
    op = ins['op']
    if OPS[op][6]:
        return None
    cst = cs['st']
    py_inplace = exc is not None and 'modified by an inplace operation' in str(exc)
    if cst == 'TG_ERR_INPLACE' or py_inplace:
        agree = cst == 'TG_ERR_INPLACE' and py_inplace
    else:
        agree = (cst == 'TG_OK') == (exc is None)
    if not agree:
        what = 'status: tapegrad %s, PyTorch %s' % (cst, exc_text(exc))
        d = documented('status', ins, inputs, cst, exc, ctx)
        if d:
            ctx['docs'].append(d)
            if exc is None and cst != 'TG_OK' and op not in INPLACE and op != 'backward':
                if op != 'requires_grad':   # tapegrad's outputs are NULL: so are PyTorch's
                    run._set(ins, *([None] * OPS[op][0]))
                return None                 # the same state on both sides
            return Outcome('doc', i, what, d)
        return Outcome('mismatch', i, what, sig=(op, 'status', cst, type(exc).__name__))
    if exc is not None:
        if op == 'backward':
            ctx['failed_backward'] = True
            _undo_partial_backward(ctx, run, before)
        return None
    outs = [ins['src'][0]] if op in INPLACE else ins['dst']
    for k, r in enumerate(outs):
        if r is None or k >= len(cs['out']):
            continue
        d = diff_tensor(cs['out'][k], run.regs[r], r in ctx['lowp'])
        if d and _f32_summation_order(ins, inputs, cs['out'][k], run.regs[r]):
            ctx['docs'].append('f32-summation')
            return Outcome('doc', i, 'r%d: %s' % (r, d), 'f32-summation')
        if d:
            return _value_diff(ctx, ins, inputs, i, 'r%d: %s' % (r, d), (op, 'value'))
    if op == 'backward':
        d = diff_grads(cs.get('grads', {}), torch_grads(run), bool(ctx['lowp']))
        if d:
            return _value_diff(ctx, ins, inputs, i, d, (op, 'grads'))
    return None


_SUMS = ('sum', 'sum_dim', 'sum_dims', 'mean', 'mean_dim', 'mean_dims', 'cumsum')


def _f32_summation_order(ins, inputs, ct, pt):
    """An f32 sum of terms that cancel: tapegrad accumulates in double, PyTorch in
    f32, so the two may differ by the f32 rounding of the terms' magnitude: within
    (n + 1) 2^-24 sum |x| per result (n the terms summed), the bound of f32
    summation in any order, computed by the same row on |x| in float64."""
    from tg_prog import ROWS, row_args
    import torch_ref
    op = ins['op']
    if op not in _SUMS or ct['dtype'] != 'f32' or not inputs or inputs[0] is None or \
            inputs[0].dtype != torch.float32:
        return False
    x = inputs[0].detach().abs().double()
    try:
        scale = torch_ref.evaluate(ROWS[op], [x], row_args(ROWS[op], ins))[0]
    except Exception:   # noqa: BLE001  (no bound: not this case)
        return False
    n = max(1, x.numel() // max(1, pt.numel()))
    if op.startswith('mean'):
        scale = scale * n   # the mean's terms are summed before the division
    tol = ((n + 1) * 2.0 ** -24 * scale.reshape(-1)).tolist()
    got, want = ct['data'], pt.detach().double().reshape(-1).tolist()
    return len(got) == len(want) == len(tol) and all(
        abs(float(a) - b) <= t + 1e-30 for a, b, t in zip(got, want, tol))


def _js(t):
    return {'dtype': DT.get(t.dtype, '?'), 'shape': list(t.shape),
            'data': t.detach().reshape(-1).tolist(), 'rg': t.requires_grad, 'leaf': t.is_leaf}


def _value_diff(ctx, ins, inputs, i, what, sig):
    d = documented('value', ins, inputs, None, None, ctx, what)
    if d:
        ctx['docs'].append(d)
        return Outcome('doc', i, what, d)
    return Outcome('mismatch', i, what, sig=sig)


def _same_storage(a, b):
    try:
        return a.storage().data_ptr() == b.storage().data_ptr() and a.numel() and b.numel()
    except RuntimeError:
        return False


def _same_values(t, v):
    try:
        return torch.equal(torch.nan_to_num(t.detach(), 7.0, 8.0, 9.0),
                           torch.nan_to_num(v, 7.0, 8.0, 9.0))
    except RuntimeError:
        return False


def _note_grads(ctx, run):
    """Before a backward: every register's values, and the leaves whose .grad
    another register also holds."""
    ctx['values_before'] = {r: (t, t.detach().clone()) for r, t in enumerate(run.regs)
                            if t is not None}
    grads, leaves = [], []
    for r, t in enumerate(run.regs):
        if t is None or not _is_leaf(t) or t.grad is None:
            continue
        held = [q for q, u in enumerate(run.regs) if q != r and u is not None and
                _same_storage(u, t.grad)]
        if held:
            grads.append(t.grad)
            leaves.append(r)
    ctx.setdefault('aliased_leaves', set()).update(leaves)


def _taint(ctx, ins, inputs, run, exc):
    """Registers whose values depend on a .grad read before a later backward
    (PyTorch adds into that tensor in place, tapegrad gives the leaf a new one)."""
    op, t = ins['op'], ctx['tainted']
    if op == 'grad' and ins['dst'][0] is not None:
        t.discard(ins['dst'][0])
        return
    if op == 'backward' and exc is None:
        # every register whose values PyTorch's backward changed: a .grad read earlier
        # (PyTorch adds into it in place) or an upstream gradient it adopted as .grad;
        # tapegrad's backward never writes into a tensor the program holds
        snap = ctx.pop('values_before', {})
        for r, u in enumerate(run.regs):
            if r in snap and u is snap[r][0] and not _same_values(u, snap[r][1]):
                t.add(r)
        if ins['src'][1] is not None:
            t.add(ins['src'][1])
        return
    src_tainted = any(r in t for r in ins['src'] if r is not None)
    if op in INPLACE:
        if src_tainted:
            t.add(ins['src'][0])
        return
    for r in ins['dst']:
        if r is not None:
            (t.add if src_tainted else t.discard)(r)


# ---- running tapegrad ------------------------------------------------------------------------

def run_tapegrad(runner, texts):
    """JSON records for each program text; a missing record is a crash."""
    recs = []
    start = 0
    while start < len(texts):
        with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:
            f.write('---\n'.join(texts[start:]))
            path = f.name
        try:
            p = subprocess.run([runner, '--json', path], capture_output=True, text=True,
                               timeout=600, env=dict(os.environ, OMP_NUM_THREADS='1'))
        finally:
            os.unlink(path)
        lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith('{')]
        recs += lines
        if p.returncode in (0, 1):
            if len(lines) != len(texts) - start:
                raise SystemExit('tg_diff: %s printed %d records for %d programs' % (
                    runner, len(lines), len(texts) - start))
            break
        if p.returncode == 2:
            raise SystemExit('tg_diff: %s: %s' % (runner, p.stderr.strip()))
        recs.append({'crash': p.stderr[-3000:], 'rc': p.returncode})
        start = len(recs)
    return recs


# ---- minimizing -----------------------------------------------------------------------------

def outcome_of(runner, text):
    prog = parse_programs(text)
    if not prog:
        return None
    rec = run_tapegrad(runner, [text])[0]
    if 'crash' in rec:
        return Outcome('crash', sig=('crash',))
    return compare_program(prog[0], rec)


def minimize(runner, text, sig):
    """Drops instructions one by one while the same kind of failure remains."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    changed = True
    while changed:
        changed = False
        for i in range(len(lines) - 1, -1, -1):
            cand = lines[:i] + lines[i + 1:]
            o = outcome_of(runner, '\n'.join(cand) + '\n')
            if o is not None and o.kind in ('mismatch', 'violation', 'crash') and o.sig == sig:
                lines = cand
                changed = True
    return '\n'.join(lines) + '\n'


# ---- main -------------------------------------------------------------------------------------

def _batch(seed):
    return 'seed %s' % seed if isinstance(seed, int) else str(seed)


def _kind(o):
    """A failure's kind: the op, what disagreed, and the two outcomes, without values."""
    import re
    w = re.sub(r'element \d+:.*', 'values differ', o.what.split('\n')[0].split('; ')[0])
    w = re.sub(r'\binsn \d+', 'insn N', w)
    w = re.sub(r'\br\d+\b', 'rN', w)
    w = re.sub(r'(PyTorch \w+Error: [^.:,(\[]{0,70}).*', r'\1...', w)
    op = o.sig[0] if o.sig else ''
    if op == 'violation':
        w = re.sub(r'^insn N \(\w+\): ', '', w)
    return ('%s: %s' % (op, w))[:150]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runner', required=True, help='path of tg_diff_run')
    ap.add_argument('--seeds', help='comma-separated seeds (default 1 without --file)')
    ap.add_argument('--programs', type=int, default=300, help='programs per seed (300)')
    ap.add_argument('--file', action='append', default=[],
                    help='also compare the programs of this text file (--- between them); '
                    'without --seeds, only them')
    ap.add_argument('--out', help='where failing programs are written (default: a new temp dir)')
    ap.add_argument('--minimize', action='store_true', help='shrink each failing program')
    ap.add_argument('--max-report', type=int, default=8, help='failures printed in full')
    ap.add_argument('--quiet', action='store_true')
    ap.add_argument('--avoid', default='', help='comma-separated generator features to leave '
                    'out, to look past a known failure: ' + ', '.join(AVOIDABLE))
    ap.add_argument('--emit', metavar='DIR', help='only write the generated programs to DIR '
                    '(one file each, e.g. to make fuzz seeds) and compare nothing')
    ap.add_argument('--no-doc', default='', help='comma-separated documented differences to '
                    'treat as failures (to see what they hide)')
    a = ap.parse_args()
    load_manifest(a.runner)   # the instruction set: the registry's rows (tg_prog.py)
    DISABLED.update(x for x in a.no_doc.split(',') if x)
    t0 = time.time()
    out_dir = a.out or tempfile.mkdtemp(prefix='tg_diff_')
    os.makedirs(out_dir, exist_ok=True)
    batches = []
    for path in a.file:
        with open(path) as f:
            progs = parse_programs(f.read())
        batches.append((os.path.splitext(os.path.basename(path))[0],
                        ['\n'.join(format_insn(i) for i in p) + '\n' for p in progs]))
    if a.seeds or not a.file:
        for s in [int(x) for x in (a.seeds or '1').split(',') if x.strip()]:
            avoid = set(x for x in a.avoid.split(',') if x)
            if avoid - set(AVOIDABLE):
                ap.error('unknown --avoid feature: %s' % ', '.join(avoid - set(AVOIDABLE)))
            batches.append((s, [generate(s, k, avoid) for k in range(a.programs)]))
    if a.emit:
        os.makedirs(a.emit, exist_ok=True)
        for seed, texts in batches:
            for k, text in enumerate(texts):
                with open(os.path.join(a.emit, 'seed%s_prog%d.txt' % (seed, k)), 'w') as f:
                    f.write(text)
        return 0
    counts = collections.Counter()
    docs = collections.Counter()
    examples = {}
    failures = []
    for seed, texts in batches:
        recs = run_tapegrad(a.runner, texts)
        for k, (text, rec) in enumerate(zip(texts, recs)):
            prog = parse_programs(text)[0]
            counts['programs'] += 1
            counts['instructions'] += len(prog)
            if 'crash' in rec:
                o = Outcome('crash', what='tg_diff_run died (status %d):\n%s' % (
                    rec['rc'], rec['crash']), sig=('crash',))
            else:
                o = compare_program(prog, rec)
            counts[o.kind] += 1
            for d in o.docs:
                docs[d] += 1
                examples.setdefault(d, (seed, k))
            if o.kind not in ('match', 'doc'):
                failures.append((seed, k, text, o))
    print('tg_diff: %d programs (%d instructions; %s): %d agree, %d stopped at a documented '
          'difference, %d mismatches, %d contract violations, %d crashes (%.1f s)' % (
              counts['programs'], counts['instructions'],
              ', '.join(_batch(b[0]) for b in batches), counts['match'], counts['doc'],
              counts['mismatch'], counts['violation'], counts['crash'], time.time() - t0))
    for name, reason in DOCUMENTED:
        n = docs.get(name, 0)
        line = '  documented difference %-24s %4d  %s' % (name, n, reason)
        if n and not a.quiet and name in examples:
            line += '  (first: %s program %d)' % (_batch(examples[name][0]), examples[name][1])
        print(line)
    kinds = collections.OrderedDict()
    for f in failures:
        kinds.setdefault(_kind(f[3]), []).append(f)
    if failures:
        print('\nfailures by kind (first program of each):')
        for kind, fs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            print('  %4d  %s  (%s program %d)' % (len(fs), kind, _batch(fs[0][0]), fs[0][1]))
    for n, (seed, k, text, o) in enumerate(failures):
        path = os.path.join(out_dir, '%s_prog%d.txt' % (_batch(seed).replace(' ', ''), k))
        if a.minimize and o.sig:
            text = minimize(a.runner, text, o.sig)
        with open(path, 'w') as f:
            f.write('# %s at instruction %d: %s\n' % (o.kind, o.step, o.what.replace('\n', ' ')))
            f.write(text)
        if n < a.max_report:
            lines = text.splitlines()
            print('\nFAIL %s program %d (%s): %s' % (_batch(seed), k, o.kind, o.what))
            if 0 <= o.step < len(lines) and not a.minimize:
                print('  at instruction %d: %s' % (o.step, lines[o.step]))
            print('  program: %s%s' % (path, ' (minimized)' if a.minimize else ''))
            if a.minimize:
                print('    ' + '\n    '.join(lines))
    if failures:
        print('\ntg_diff: %d programs failed; all written to %s' % (len(failures), out_dir))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
