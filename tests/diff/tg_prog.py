"""tests/diff/tg_prog.py - op programs in Python: the text form of
tests/prog/prog_text.c (parser and printer) and an interpreter that runs a
program with PyTorch (float64), op for op as tests/prog/prog_step.c runs it
with tapegrad.

Contract:
  - The instruction set is the control instructions of CONTROL (autograd
    state, custom functions, scopes, memory tools) and the op registry's
    rows, read from the manifest the C side prints (load_manifest: the
    runner's --samples); OPS maps every name to (ndst, nsrc, nsrc_required,
    has_dtype, has_shape, has_vals, c_only, keys) exactly as
    tests/prog/prog_ops.c builds its descriptors, so parse_line and
    format_insn read and write the same lines as tgp_parse_line and
    tgp_print_insn. ROWS holds each row and its samples.
  - TorchRun.step(ins, c_step) runs one instruction: a row through its PyTorch
    expression (tests/registry/torch_ref.py), in place for the in-place rows;
    it returns None on success or the exception PyTorch (or the mirrored
    contract) raised. A failed instruction empties its destination registers,
    as the C executor does. Memory tools, scopes and releases have no PyTorch
    meaning: the registers the C run emptied (c_step["cleared"]) are emptied
    here too. The values of tapegrad's random rows come from the C run.
  - Nothing here compares anything: tg_diff.py does.
"""
import json
import math
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'registry'))
import torch_ref  # noqa: E402
from torch_ref import ContractError  # noqa: E402,F401  (tg_gen and tg_diff use it from here)

NREG = 24
F64, F32, I64, BOOL = 1, 0, 2, 3
DTYPES = {'f32': F32, 'f64': F64, 'i64': I64, 'bool': BOOL}
DT_NAME = {F32: 'f32', F64: 'f64', I64: 'i64', BOOL: 'bool'}
TORCH_DT = {F32: torch.float32, F64: torch.float64, I64: torch.int64, BOOL: torch.bool}

# name: (ndst, nsrc, nsrc_required, has_dtype, has_shape, has_vals, c_only, keys)
# keys: (name, 'i' for an integer field, 'f' for a double)
CONTROL = {
    'requires_grad': (0, 1, 1, False, False, False, False, (('on', 'i'),)),
    'grad_mode': (0, 0, 0, False, False, False, False, (('on', 'i'),)),
    'backward': (0, 2, 1, False, False, False, False, (('retain', 'i'),)),
    'grad': (1, 1, 1, False, False, False, False, ()),
    'zero_grad': (0, 1, 1, False, False, False, False, ()),
    'fn_square': (1, 1, 1, False, False, False, False, (('fail', 'i'),)),
    'fn_exp': (1, 1, 1, False, False, False, False, (('fail', 'i'),)),
    'fn_mulsub': (2, 2, 2, False, False, False, False, (('fail', 'i'),)),
    'scope_begin': (0, 0, 0, False, False, False, True, ()),
    'scope_end': (0, 0, 0, False, False, False, True, (('bad', 'i'),)),
    'scope_keep': (0, 1, 0, False, False, False, True, ()),
    'release': (0, 1, 0, False, False, False, True, ()),
    'leak_scan': (0, 0, 0, False, False, False, True, ()),
    'step_mark': (0, 0, 0, False, False, False, True, ()),
    'fault': (0, 0, 0, False, False, False, True, (('n', 'i'), ('persistent', 'i'))),
    'print': (0, 1, 1, False, False, False, True, ()),
    'dot': (0, 3, 0, False, False, False, True, ()),
}
OPS = dict(CONTROL)   # and, after load_manifest, every registry row
ROWS = {}             # row name: the manifest's row, with 'samples' (list of sample dicts)
INPLACE = set()       # the in-place rows
VIEWS = set()         # the rows that return a view of input 0
# the manifest's row flags (tests/registry/registry.h)
FLAG_VIEW, FLAG_INPLACE, FLAG_CREATE, FLAG_RANDOM = 1, 2, 4, 8
FLAG_UNINIT, FLAG_MAYBE_SELF = 16, 64
S_BAD = 1 << 7


def load_manifest(runner):
    """Reads the registry's rows and samples from `runner --samples` (tg_diff_run)."""
    if ROWS:
        return
    out = subprocess.run([runner, '--samples'], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if 'c_name' in rec:
            rec['samples'] = []
            ROWS[rec['row']] = rec
        else:
            ROWS[rec['row']]['samples'].append(rec)
    for name, row in ROWS.items():
        has_dt = any(k == 'T' for _, k, _ in row['params'])
        has_shape = any(k in 'SD' for _, k, _ in row['params'])
        has_vals = any(k == 'V' for _, k, _ in row['params'])
        keys = tuple((n, 'f' if k == 'r' else 'i') for n, k, _ in row['params']
                     if k in 'ibdr')
        ndst = 0 if row['flags'] & FLAG_INPLACE else row['nout']
        OPS[name] = (ndst, row['nin'], row['nin_required'], has_dt, has_shape, has_vals, False,
                     keys)
        if row['flags'] & FLAG_INPLACE:
            INPLACE.add(name)
        if row['flags'] & FLAG_VIEW:
            VIEWS.add(name)


# ---- text form ------------------------------------------------------------------------------

def fmt_f(v):
    v = float(v)
    if math.isnan(v):
        return 'nan'
    if math.isinf(v):
        return 'inf' if v > 0 else '-inf'
    return repr(v)


def _reg(r):
    return '_' if r is None else 'r%d' % r


def new_insn(op, dst=(), src=(), **kw):
    """An instruction: dict with op, dst, src (lists, None = empty), dtype,
    shape, vals, keep_err and every key of the op (defaults 0)."""
    nd, ns = OPS[op][0], OPS[op][1]
    ins = {'op': op, 'dst': (list(dst) + [None] * nd)[:nd], 'src': (list(src) + [None] * ns)[:ns],
           'dtype': F64, 'shape': [], 'vals': [], 'keep_err': False}
    for k, kind in OPS[op][7]:
        ins[k] = 0.0 if kind == 'f' else 0
    ins.update(kw)
    return ins


def format_insn(ins):
    nd, ns, nreq, has_dt, has_shape, has_vals, _, keys = OPS[ins['op']]
    out = []
    if nd:
        out.append(','.join(_reg(r) for r in ins['dst']) + ' =')
    out.append(ins['op'])
    src = list(ins['src'])
    while len(src) > nreq and src[-1] is None:
        src.pop()
    out += [_reg(r) for r in src]
    if has_dt:
        out.append(DT_NAME.get(ins['dtype'], 'dt%d' % ins['dtype']))
    if has_shape:
        out.append('[' + ','.join(str(int(s)) for s in ins['shape']) + ']')
    if has_vals:
        out.append('vals=[' + ','.join(fmt_f(v) for v in ins['vals']) + ']')
    for k, kind in keys:
        out.append('%s=%s' % (k, fmt_f(ins[k]) if kind == 'f' else str(int(ins[k]))))
    if ins.get('keep_err'):
        out.append('keep_err=1')
    return ' '.join(out)


def _parse_reg(t):
    if t == '_':
        return None
    if t.startswith('r') and t[1:].isdigit() and 0 <= int(t[1:]) < NREG:
        return int(t[1:])
    raise ValueError('bad register %r' % t)


def parse_line(line):
    """One instruction dict, or None for a blank or comment line."""
    toks = line.split()
    if not toks or toks[0].startswith('#'):
        return None
    dst = []
    if len(toks) >= 2 and toks[1] == '=':
        dst = [_parse_reg(t) for t in toks[0].split(',')]
        toks = toks[2:]
    op = toks[0]
    if op not in OPS:
        raise ValueError('unknown op %r' % op)
    nd, ns, _, has_dt, has_shape, has_vals, _, keys = OPS[op]
    ins = new_insn(op, dst)
    kinds = dict(keys)
    nsrc = 0
    for t in toks[1:]:
        if t == '_' or (t.startswith('r') and t[1:].isdigit()):
            ins['src'][nsrc] = _parse_reg(t)
            nsrc += 1
        elif has_dt and (t in DTYPES or t.startswith('dt')):
            ins['dtype'] = DTYPES[t] if t in DTYPES else int(t[2:])
        elif has_shape and t.startswith('['):
            body = t[1:-1]
            ins['shape'] = [int(x) for x in body.split(',')] if body else []
        elif '=' in t:
            k, v = t.split('=', 1)
            if k == 'vals':
                body = v[1:-1]
                ins['vals'] = [float(x) for x in body.split(',')] if body else []
            elif k == 'keep_err':
                ins['keep_err'] = int(v) != 0
            elif k in kinds:
                ins[k] = float(v) if kinds[k] == 'f' else int(v)
            else:
                raise ValueError('unknown key %r' % k)
        else:
            raise ValueError('unexpected token %r' % t)
    return ins


def parse_programs(text):
    """Programs separated by lines '---'."""
    progs, cur = [], []
    for line in text.splitlines():
        if line.strip() == '---':
            progs.append(cur)
            cur = []
            continue
        ins = parse_line(line)
        if ins is not None:
            cur.append(ins)
    if cur:
        progs.append(cur)
    return [p for p in progs if p]


def row_args(row, ins):
    """A row's parameter values by name, from an instruction's fields (as the C
    executor builds its tgr_args from them)."""
    args = {}
    for name, kind, _slot in row['params']:
        if kind == 'T':
            args[name] = DT_NAME.get(ins['dtype'], 'dt%d' % ins['dtype'])
        elif kind in 'SD':
            args[name] = list(ins['shape'])
        elif kind == 'V':
            args[name] = list(ins['vals'])
        else:
            args[name] = ins[name]
    return args


# ---- PyTorch -------------------------------------------------------------------------------


def _partial_overlap(a, b):
    """b is a tensor on a's memory seen another way than a itself (a slice of a,
    a broadcast column of a, even beside an empty a): an in-place op on a reads
    all of b first in tapegrad, into a copy, which is what backward saves."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    sa = a.untyped_storage() if hasattr(a, 'untyped_storage') else a.storage()
    sb = b.untyped_storage() if hasattr(b, 'untyped_storage') else b.storage()
    if sa.data_ptr() != sb.data_ptr():
        return False
    return not (a.data_ptr() == b.data_ptr() and a.shape == b.shape and
                all(n <= 1 or s == t for n, s, t in zip(a.shape, a.stride(), b.stride())))

class NullInput(Exception):
    """A required input register is empty (tapegrad: TG_ERR_NULL)."""


def _ctx_fail(mode, where):
    if mode == where:
        raise ContractError('custom function refused in ' + ('forward' if where == 1 else
                                                             'backward'))


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fail):
        _ctx_fail(fail, 1)
        ctx.fail = fail
        ctx.save_for_backward(x)
        return (x * x).contiguous()  # as prog_ops.c's forward (tg_mul: contiguous)

    @staticmethod
    def backward(ctx, g):
        _ctx_fail(ctx.fail, 2)
        x, = ctx.saved_tensors
        return (2 * x * g if ctx.needs_input_grad[0] else None), None


class Cexp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fail):
        _ctx_fail(fail, 1)
        ctx.fail = fail
        y = torch.exp(x).contiguous()  # as prog_ops.c's forward
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        _ctx_fail(ctx.fail, 2)
        y, = ctx.saved_tensors
        return (y * g if ctx.needs_input_grad[0] else None), None


class Mulsub(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, fail):
        _ctx_fail(fail, 1)
        if a.shape != b.shape:
            raise ContractError("mulsub: the inputs' shapes differ")
        ctx.fail = fail
        ctx.save_for_backward(a, b)
        return (a * b).contiguous(), (a - b).contiguous()  # as prog_ops.c's forward

    @staticmethod
    def backward(ctx, g0, g1):
        _ctx_fail(ctx.fail, 2)
        a, b = ctx.saved_tensors
        ga = g0 * b + g1 if ctx.needs_input_grad[0] else None
        gb = g0 * a - g1 if ctx.needs_input_grad[1] else None
        return ga, gb, None


def _fail_mode(v):
    return v if v in (1, 2) else 0


class TorchRun:
    """Registers and grad mode of one program run with PyTorch."""

    def __init__(self):
        self.regs = [None] * NREG
        self.notes = []   # documented differences met and worked around (tg_doc.py)
        torch.set_grad_enabled(True)

    def _src(self, ins, i, required=True):
        r = ins['src'][i]
        t = None if r is None else self.regs[r]
        if t is None and required:
            raise NullInput('input %d is empty' % i)
        return t

    def _set(self, ins, *outs):
        for r, t in zip(ins['dst'], outs):
            if r is not None:
                self.regs[r] = t

    def step(self, ins, c_step):
        """Runs ins; None on success, else the exception."""
        op = ins['op']
        if OPS[op][6]:
            for r in c_step.get('cleared', []):
                self.regs[r] = None
            return None
        torch_ref.NOTES.clear()
        try:
            self._run(ins, c_step)
            return None
        except (RuntimeError, ValueError, IndexError, TypeError, NullInput, ContractError,
                OverflowError, ZeroDivisionError) as e:
            if op not in INPLACE:
                self._set(ins, *([None] * OPS[op][0]))
            return e
        finally:
            self.notes.extend(torch_ref.NOTES)

    def _run(self, ins, c_step):
        op = ins['op']
        if op in ROWS:
            return self._row(ROWS[op], ins, c_step)
        if op == 'requires_grad':
            self._src(ins, 0).requires_grad_(bool(ins['on']))
        elif op == 'grad_mode':
            torch.set_grad_enabled(bool(ins['on']))
        elif op == 'backward':
            root, g = self._src(ins, 0), self._src(ins, 1, False)
            root.backward(gradient=g, retain_graph=bool(ins['retain']))
        elif op == 'grad':
            self._set(ins, self._src(ins, 0).grad)
        elif op == 'zero_grad':
            self._src(ins, 0).grad = None
        elif op in ('fn_square', 'fn_exp'):
            fn = Square if op == 'fn_square' else Cexp
            self._set(ins, fn.apply(self._src(ins, 0), _fail_mode(ins['fail'])))
        elif op == 'fn_mulsub':
            self._set(ins, *Mulsub.apply(self._src(ins, 0), self._src(ins, 1),
                                         _fail_mode(ins['fail'])))
        else:
            raise AssertionError('op %s not mapped' % op)
        return None

    def _row(self, row, ins, c_step):
        inputs = [self._src(ins, k, k < row['nin_required']) for k in range(row['nin'])]
        args = row_args(row, ins)
        if row['flags'] & (FLAG_RANDOM | FLAG_UNINIT):
            # tapegrad's generator, or memory never written: the values the C run gave
            out = c_step['out'][0] if c_step and c_step.get('out') else None
            r = torch_ref.evaluate(row, inputs, args)[0]   # the contract's refusals
            if out is not None and isinstance(out.get('data'), list):
                t = torch.tensor(out['data'], dtype=r.dtype).reshape(r.shape).clone()
            else:
                t = torch.zeros(r.shape, dtype=r.dtype)
            return self._set(ins, t)
        if row['flags'] & FLAG_INPLACE:
            a, b = inputs[0], inputs[1] if len(inputs) > 1 else None
            if _partial_overlap(a, b):
                # PyTorch 1.13 refuses some partial overlaps and computes others from
                # half-written memory (other broadcast from a's own elements)
                self.notes.append('inplace-overlap')   # tapegrad reads other before writing
                torch_ref.evaluate(row, [a, b.clone()] + inputs[2:], args)
                return None
            try:
                torch_ref.evaluate(row, inputs, args)
            except RuntimeError as e:
                # PyTorch refuses partial overlap; with other a view of a's own memory and
                # grad recording it can also raise its leaf error on a target that is not a leaf
                a, b = inputs[0], inputs[1] if len(inputs) > 1 else None
                if b is None:
                    raise
                shared = (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                          if hasattr(a, 'untyped_storage') else
                          a.storage().data_ptr() == b.storage().data_ptr())
                leafy = ('a leaf Variable that requires grad' in str(e) and not a.is_leaf and
                         shared)
                if 'refer to a single memory location' not in str(e) and not leafy:
                    raise
                self.notes.append('inplace-overlap')   # tapegrad reads other before writing
                torch_ref.evaluate(row, [a, b.clone()] + inputs[2:], args)
            return None
        outs = torch_ref.evaluate(row, inputs, args)
        if not row['flags'] & (FLAG_VIEW | FLAG_MAYBE_SELF):   # tapegrad's results are contiguous
            if row.get('saves_output') and any(isinstance(o, torch.Tensor) and
                                               not o.is_contiguous() for o in outs):
                # an op that saves its result: made contiguous from the start (on
                # contiguous inputs), so the tensor the program holds is the saved one
                inputs = [t.contiguous() if isinstance(t, torch.Tensor) else t for t in inputs]
                outs = torch_ref.evaluate(row, inputs, args)
            outs = [o.contiguous() if isinstance(o, torch.Tensor) else o for o in outs]
        return self._set(ins, *outs)
