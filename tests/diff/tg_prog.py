"""tests/diff/tg_prog.py - op programs in Python: the text form of
tests/prog/prog_text.c (parser and printer) and an interpreter that runs a
program with PyTorch (float64), op for op as tests/prog/prog_step.c runs it
with tapegrad.

Contract:
  - OPS mirrors the descriptor table of tests/prog/prog_ops.c (names, register
    counts, keys and their kinds); parse_line/format_insn read and write the
    same lines as tgp_parse_line/tgp_print_insn.
  - TorchRun.step(ins, c_step) runs one instruction: it returns None on success
    or the exception PyTorch (or the mirrored contract, for ops without a
    PyTorch counterpart) raised. A failed instruction empties its destination
    registers, as the C executor does. Memory tools, scopes and releases have
    no PyTorch meaning: the registers the C run emptied (c_step["cleared"]) are
    emptied here too. randn/rand take the values the C run printed.
  - Nothing here compares anything: tg_diff.py does.
"""
import math

import torch

NREG = 24
F64, F32, I64, BOOL = 1, 0, 2, 3
DTYPES = {'f32': F32, 'f64': F64, 'i64': I64, 'bool': BOOL}
DT_NAME = {F32: 'f32', F64: 'f64', I64: 'i64', BOOL: 'bool'}
TORCH_DT = {F32: torch.float32, F64: torch.float64, I64: torch.int64, BOOL: torch.bool}

# name: (ndst, nsrc, nsrc_required, has_dtype, has_shape, has_vals, c_only, keys)
# keys: (name, 'i' for an integer field, 'f' for a double)
_UN = (1, 1, 1, False, False, False, False, ())
_BIN = (1, 2, 2, False, False, False, False, ())
_CREATE = (1, 0, 0, True, True, False, False, ())
_SHAPED = (1, 1, 1, False, True, False, False, ())
_IP2 = (0, 2, 2, False, False, False, False, ())
OPS = {
    'zeros': _CREATE, 'ones': _CREATE,
    'full': (1, 0, 0, True, True, False, False, (('value', 'f'),)),
    'randn': (1, 0, 0, True, True, False, False, (('seed', 'i'), ('mean', 'f'), ('std', 'f'))),
    'rand': (1, 0, 0, True, True, False, False, (('seed', 'i'), ('lo', 'f'), ('hi', 'f'))),
    'arange': (1, 0, 0, True, False, False, False, (('start', 'f'), ('end', 'f'), ('step', 'f'))),
    'from_data': (1, 0, 0, True, True, True, False, ()),
    'requires_grad': (0, 1, 1, False, False, False, False, (('on', 'i'),)),
    'grad_mode': (0, 0, 0, False, False, False, False, (('on', 'i'),)),
    'backward': (0, 2, 1, False, False, False, False, (('retain', 'i'),)),
    'grad': _UN, 'zero_grad': (0, 1, 1, False, False, False, False, ()), 'detach': _UN,
    'slice': (1, 1, 1, False, False, False, False,
              (('dim', 'i'), ('start', 'i'), ('end', 'i'), ('step', 'i'))),
    'view': _SHAPED, 'reshape': _SHAPED, 'expand': _SHAPED,
    'transpose': (1, 1, 1, False, False, False, False, (('d0', 'i'), ('d1', 'i'))),
    'contiguous': _UN, 'clone': _UN,
    'to_dtype': (1, 1, 1, True, False, False, False, ()),
    'add': _BIN, 'sub': _BIN, 'mul': _BIN, 'div': _BIN, 'maximum': _BIN, 'minimum': _BIN,
    'where': (1, 3, 3, False, False, False, False, ()),
    'neg': _UN, 'exp': _UN, 'log': _UN,
    'scale': (1, 1, 1, False, False, False, False, (('k', 'f'),)),
    'add_scalar': (1, 1, 1, False, False, False, False, (('k', 'f'),)),
    'clamp': (1, 1, 1, False, False, False, False, (('lo', 'f'), ('hi', 'f'))),
    'sum': _UN, 'mean': _UN,
    'sum_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'mean_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'matmul': _BIN, 'softmax': _UN, 'log_softmax': _UN, 'gather': _BIN,
    'logprob': (2, 2, 2, False, False, False, False,
                (('impl', 'i'), ('T', 'f'), ('ignore', 'i'), ('chunk', 'i'), ('entropy', 'i'),
                 ('egrad', 'i'))),
    'add_': _IP2, 'sub_': _IP2, 'mul_': _IP2, 'copy_': _IP2,
    'scale_': (0, 1, 1, False, False, False, False, (('k', 'f'),)),
    'fill_': (0, 1, 1, False, False, False, False, (('value', 'f'),)),
    'square': (1, 1, 1, False, False, False, False, (('fail', 'i'),)),
    'cexp': (1, 1, 1, False, False, False, False, (('fail', 'i'),)),
    'mulsub': (2, 2, 2, False, False, False, False, (('fail', 'i'),)),
    'scope_begin': (0, 0, 0, False, False, False, True, ()),
    'scope_end': (0, 0, 0, False, False, False, True, (('bad', 'i'),)),
    'scope_keep': (0, 1, 0, False, False, False, True, ()),
    'release': (0, 1, 0, False, False, False, True, ()),
    'leak_scan': (0, 0, 0, False, False, False, True, ()),
    'step_mark': (0, 0, 0, False, False, False, True, ()),
    'fault': (0, 0, 0, False, False, False, True, (('n', 'i'), ('persistent', 'i'))),
    'print': (0, 1, 1, False, False, False, True, ()),
    'dot': (0, 3, 0, False, False, False, True, ()),
    'rsqrt': _UN, 'abs': _UN, 'sign': _UN, 'square_op': _UN,
    'pow_scalar': (1, 1, 1, False, False, False, False, (('e', 'f'),)),
    'log1p': _UN, 'expm1': _UN, 'sigmoid': _UN, 'logsigmoid': _UN,
    'softplus': (1, 1, 1, False, False, False, False, (('beta', 'f'), ('threshold', 'f'))),
    'tanh': _UN, 'relu': _UN,
    'gelu': (1, 1, 1, False, False, False, False, (('tanh', 'i'),)),
    'silu': _UN, 'reciprocal': _UN, 'floor': _UN, 'ceil': _UN, 'round': _UN,
    'pow': _BIN,
    'permute': _SHAPED,
    'narrow': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('start', 'i'), ('length', 'i'))),
    'squeeze': (1, 1, 1, False, False, False, False, (('dim', 'i'),)),
    'unsqueeze': (1, 1, 1, False, False, False, False, (('dim', 'i'),)),
    'flatten': (1, 1, 1, False, False, False, False, (('s', 'i'), ('e', 'i'))),
    'cat': (1, 2, 2, False, False, False, False, (('dim', 'i'),)),
    'stack': (1, 2, 2, False, False, False, False, (('dim', 'i'),)),
    'eq': _BIN, 'ne': _BIN, 'lt': _BIN, 'le': _BIN, 'gt': _BIN, 'ge': _BIN,
    'cmp_scalar': (1, 1, 1, False, False, False, False, (('which', 'i'), ('v', 'f'))),
    'logical_and': _BIN, 'logical_or': _BIN, 'logical_xor': _BIN, 'logical_not': _UN,
    'isnan': _UN, 'isinf': _UN, 'isfinite': _UN, 'remainder': _BIN, 'floor_divide': _BIN,
    'amax_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'amin_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'logsumexp_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'prod_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'any_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'argmax_dim': (1, 1, 1, False, False, False, False, (('dim', 'i'), ('keepdim', 'i'))),
    'cumsum': (1, 1, 1, False, False, False, False, (('dim', 'i'),)),
    'cumprod': (1, 1, 1, False, False, False, False, (('dim', 'i'),)),
    'var_dim': (1, 1, 1, False, False, False, False,
                (('dim', 'i'), ('keepdim', 'i'), ('correction', 'f'))),
    'std_dim': (1, 1, 1, False, False, False, False,
                (('dim', 'i'), ('keepdim', 'i'), ('correction', 'f'))),
    'norm_dim': (1, 1, 1, False, False, False, False,
                 (('dim', 'i'), ('keepdim', 'i'), ('p', 'f'))),
    'flip': _SHAPED,
    'index_select': (1, 2, 2, False, False, False, False, (('dim', 'i'),)),
}
# the unary vocabulary beyond neg/exp/log, as PyTorch names it (tg_gen.py draws from it)
UNARY_VOCAB = {
    'rsqrt': torch.rsqrt, 'abs': torch.abs, 'sign': torch.sign, 'square_op': torch.square,
    'log1p': torch.log1p, 'expm1': torch.expm1, 'sigmoid': torch.sigmoid,
    'logsigmoid': torch.nn.functional.logsigmoid, 'tanh': torch.tanh, 'relu': torch.relu,
    'silu': torch.nn.functional.silu, 'reciprocal': torch.reciprocal, 'floor': torch.floor,
    'ceil': torch.ceil, 'round': torch.round,
}
INPLACE = ('add_', 'sub_', 'mul_', 'scale_', 'copy_', 'fill_')
VIEWS = ('slice', 'view', 'reshape', 'transpose', 'expand', 'permute', 'narrow', 'squeeze',
         'unsqueeze', 'flatten')


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


# ---- PyTorch -------------------------------------------------------------------------------

class NullInput(Exception):
    """A required input register is empty (tapegrad: TG_ERR_NULL)."""


class VarLike(torch.autograd.Function):
    """torch.var / torch.std with tapegrad's backward (ops/moments.c): 2 g (x - mean) / (n - c)
    and g (x - mean) / ((n - c) std), 0 where std is 0, the divisor not clamped."""

    @staticmethod
    def forward(ctx, a, dim, corr, keepdim, std):
        f = torch.std if std else torch.var
        r = f(a, dim, correction=corr, keepdim=keepdim)
        ctx.save_for_backward(a, r)
        ctx.args = (dim, corr, keepdim, std)
        return r

    @staticmethod
    def backward(ctx, g):
        a, r = ctx.saved_tensors
        dim, corr, keepdim, std = ctx.args
        if a.dim() == 0:
            dev, gk, rk, n = a - a, g, r, 1
        else:
            d = dim % a.dim()
            dev = a - a.mean(d, keepdim=True)
            gk = g if keepdim else g.unsqueeze(d)
            rk = r if keepdim else r.unsqueeze(d)
            n = a.shape[d]
        den = float(n - corr)
        k = (1.0 if std else 2.0) / den if den != 0 else math.copysign(math.inf, den)
        q = dev * gk * k
        if std:
            q = torch.where(rk == 0, torch.zeros((), dtype=q.dtype), q / rk)
        return q, None, None, None, None


class ContractError(Exception):
    """What tapegrad's documented contract refuses where PyTorch has no op
    (the log-prob op, the custom functions, from_data without values)."""


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


class Scale(torch.autograd.Function):
    """x * k saving nothing, as tg_scale (PyTorch's mul keeps the number as a saved
    tensor, which makes a second backward fail where tapegrad's does not)."""
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class Mean(torch.autograd.Function):
    """mean (over all elements, or over dim) saving only the input's shape, as
    tg_mean/tg_mean_dim (PyTorch 1.13's mean keeps its input as a saved tensor)."""
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.mean() if dim is None else x.mean(dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, g):
        if ctx.dim is None:
            n = 1
            for s in ctx.shape:
                n *= s
            return g.expand(ctx.shape) / n, None, None
        d = ctx.dim % len(ctx.shape) if ctx.shape else 0
        if not ctx.keepdim and ctx.shape:
            g = g.unsqueeze(d)
        n = ctx.shape[d] if ctx.shape else 1
        return g.expand(ctx.shape) / n, None, None


def _mean(a, dim=None, keepdim=False):
    if not a.is_floating_point() or (dim is not None and not -max(a.dim(), 1) <= dim <
                                     max(a.dim(), 1)):
        return torch.mean(a) if dim is None else torch.mean(a, dim, keepdim=keepdim)
    return Mean.apply(a, dim, keepdim)


class GatherLast(torch.autograd.Function):
    """gather along the last dim saving only the index, as tg_gather (PyTorch's
    gather also saves its input, so editing it in place afterwards fails backward)."""
    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return torch.gather(x, -1, idx)

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(-1, idx, g), None


class WhereAny(torch.autograd.Function):
    """where with a condition of any dtype (non-zero = true) that it saves,
    version-checked, as tg_where does. PyTorch's where needs a bool condition,
    which the suite would make with cond != 0, a copy: an in-place edit of the
    condition afterwards would then go unseen, where tapegrad's (and PyTorch's,
    given a bool tensor) backward fails."""
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.save_for_backward(cond)
        ctx.shapes = (a.shape, b.shape)
        return torch.where(cond != 0, a, b)

    @staticmethod
    def backward(ctx, g):
        cond, = ctx.saved_tensors
        m = cond != 0
        z = torch.zeros((), dtype=g.dtype)
        ga = torch.where(m, g, z).sum_to_size(ctx.shapes[0])
        gb = torch.where(m, z, g).sum_to_size(ctx.shapes[1])
        return None, ga, gb


class Keep(torch.autograd.Function):
    """The identity (a copy) that saves its input for backward, version-checked:
    what tg_logprob_entropy keeps of the logits."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors   # noqa: B018  (unpacking checks the version)
        return g


def _fail_mode(v):
    return v if v in (1, 2) else 0


def logprob_reference(z, y, o):
    """tapegrad's log-prob/entropy contract (include/tapegrad/logprob.h) in
    PyTorch ops: x = z/T, logprob = log_softmax(x)[y], entropy = -sum(p log p);
    rows whose target is ignore_index give 0 and no gradient."""
    if not (z.is_floating_point() and y.dtype == torch.int64):
        raise ContractError('dtype')
    if z.dim() < 1 or tuple(y.shape) != tuple(z.shape[:-1]) or z.shape[-1] == 0:
        raise ContractError('shape')
    T = o['T']
    if not (math.isfinite(T) and T > 0) or o['chunk'] < 0 or o['impl'] not in (0, 1):
        raise ContractError('value')
    V = z.shape[-1]
    N = y.numel()
    mask = y != o['ignore']
    with torch.no_grad():
        if bool(((y[mask] < 0) | (y[mask] >= V)).any()):
            raise ContractError('target out of range')
        rows = z.detach()[mask]
        if rows.numel() and bool((torch.isnan(rows) | (rows == math.inf)).any() |
                                 (rows == -math.inf).all(-1).any()):
            raise ContractError('bad row')
    if z.requires_grad and torch.is_grad_enabled():
        # what backward finds version-checked: the fused op keeps the logits; the
        # composite one keeps them when chunked (as a reshape, shared only if it is a view)
        if o['impl'] == 0:
            z = Keep.apply(z)
        elif 0 < o['chunk'] < N:
            z2 = z.reshape(N, V)
            if z2.data_ptr() == z.data_ptr() and z2._base is not None:
                z = Keep.apply(z2).reshape(z.shape)
    if o['impl'] == 1:   # as the composite path: z itself for T = 1, else z * (1/T)
        x = z if T == 1.0 else Scale.apply(z, 1.0 / T)
    else:
        x = z / T
    m = mask.unsqueeze(-1)
    if o['impl'] == 1 and bool(mask.all()):
        xs = x   # the composite path masks the logits only when some row is ignored
    else:
        xs = torch.where(m, x, torch.zeros((), dtype=x.dtype))
    ls = torch.log_softmax(xs, -1)
    ys = torch.where(mask, y, torch.zeros((), dtype=y.dtype))
    zero = torch.zeros((), dtype=x.dtype)
    lp = torch.where(mask, ls.gather(-1, ys.unsqueeze(-1)).squeeze(-1), zero)
    ent = None
    if o['entropy']:
        # -sum(p log p) with its own log_softmax, as the composite path does (no
        # node shared with the log-prob's graph); lse - sum(p x) would lose
        # everything to rounding for logits near 1e300
        p = torch.softmax(xs, -1)
        ls2 = torch.log_softmax(xs, -1)
        s = (p * torch.where(p > 0, ls2, zero)).sum(-1)
        # the fused op gives +0 for a certain outcome, the composite path -0 (a neg)
        ent = torch.where(mask, -s if o['impl'] == 1 else zero - s, zero)
        if not o['egrad']:
            ent = ent.detach()
    return lp, ent


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
        try:
            self._run(ins, c_step)
            return None
        except (RuntimeError, ValueError, IndexError, TypeError, NullInput, ContractError,
                OverflowError) as e:
            if op not in INPLACE:
                self._set(ins, *([None] * OPS[op][0]))
            return e

    def _run(self, ins, c_step):
        op = ins['op']
        c = lambda t: t.contiguous()  # noqa: E731  (tapegrad's results are contiguous)
        dt = TORCH_DT.get(ins['dtype'])
        if op in ('zeros', 'ones', 'full', 'randn', 'rand', 'from_data', 'arange', 'to_dtype'):
            if dt is None:
                raise ContractError('invalid dtype')
        shape = tuple(ins['shape'])
        if op in ('zeros', 'ones', 'full', 'randn', 'rand') and len(shape) > 8:
            raise ContractError('more than 8 dims')
        if op == 'zeros':
            return self._set(ins, torch.zeros(shape, dtype=dt))
        if op == 'ones':
            return self._set(ins, torch.ones(shape, dtype=dt))
        if op == 'full':
            return self._set(ins, torch.full(shape, ins['value'], dtype=dt))
        if op in ('randn', 'rand'):
            t = torch.empty(shape, dtype=dt)
            t.normal_() if op == 'randn' else t.uniform_(ins['lo'], ins['hi'])
            out = c_step['out'][0] if c_step and c_step.get('out') else None
            if out is not None and isinstance(out.get('data'), list):
                t = torch.tensor(out['data'], dtype=dt).reshape(shape).clone()
            return self._set(ins, t)
        if op == 'arange':
            return self._set(ins, torch.arange(ins['start'], ins['end'], ins['step'], dtype=dt))
        if op == 'from_data':
            n = 1
            for s in shape:
                if s < 0:
                    raise ContractError('negative size')
                n *= s
            if len(shape) > 8:
                raise ContractError('more than 8 dims')
            if n and not ins['vals']:
                raise ContractError('no data')
            vals = [ins['vals'][i % len(ins['vals'])] for i in range(n)] if n else []
            if dt == torch.int64:
                vals = [0 if math.isnan(v) else int(max(min(v, 9.2e18), -9.2e18)) for v in vals]
            # clone: a tensor of its own, not a view of the 1-D one (PyTorch treats
            # views made under no-grad specially)
            return self._set(ins, torch.tensor(vals, dtype=dt).reshape(shape).clone())
        if op == 'requires_grad':
            self._src(ins, 0).requires_grad_(bool(ins['on']))
            return None
        if op == 'grad_mode':
            torch.set_grad_enabled(bool(ins['on']))
            return None
        if op == 'backward':
            root, g = self._src(ins, 0), self._src(ins, 1, False)
            root.backward(gradient=g, retain_graph=bool(ins['retain']))
            return None
        if op == 'grad':
            return self._set(ins, self._src(ins, 0).grad)
        if op == 'zero_grad':
            self._src(ins, 0).grad = None
            return None
        a = self._src(ins, 0) if OPS[op][2] else None
        if op == 'detach':
            return self._set(ins, a.detach())
        if op == 'slice':
            dim = ins['dim'] + a.dim() if ins['dim'] < 0 else ins['dim']
            if not 0 <= dim < a.dim():
                raise IndexError('dim %d out of range' % ins['dim'])
            if ins['step'] <= 0:
                raise ValueError('step must be greater than zero')
            # PyTorch 1.13 takes INT64_MIN for a symbolic size: use an equivalent bound
            lo, hi = -2 ** 62, 2 ** 62
            start, end = (max(lo, min(hi, ins[k])) for k in ('start', 'end'))
            idx = (slice(None),) * dim + (slice(start, end, ins['step']),)
            return self._set(ins, a[idx])
        if op == 'view':
            return self._set(ins, a.view(shape))
        if op == 'reshape':
            return self._set(ins, a.reshape(shape))
        if op == 'expand':
            return self._set(ins, a.expand(shape))
        if op == 'transpose':
            return self._set(ins, a.transpose(ins['d0'], ins['d1']))
        if op == 'permute':
            return self._set(ins, a.permute(shape))
        if op == 'narrow':
            return self._set(ins, a.narrow(ins['dim'], ins['start'], ins['length']))
        if op == 'squeeze':
            return self._set(ins, a.squeeze(ins['dim']))
        if op == 'unsqueeze':
            return self._set(ins, a.unsqueeze(ins['dim']))
        if op == 'flatten':
            return self._set(ins, a.flatten(ins['s'], ins['e']))
        if op in ('cat', 'stack'):
            fn = torch.cat if op == 'cat' else torch.stack
            return self._set(ins, c(fn([a, self._src(ins, 1)], ins['dim'])))
        if op == 'contiguous':
            return self._set(ins, a.contiguous())
        if op == 'clone':
            return self._set(ins, a.clone(memory_format=torch.contiguous_format))
        if op == 'to_dtype':
            if a.dtype == dt:
                return self._set(ins, a)
            if dt == torch.int64 and a.is_floating_point():
                with torch.no_grad():
                    big = 9.2e18
                    odd = torch.isnan(a) | (a.abs() >= big)
                    if bool(odd.any()):   # tapegrad saturates (NaN -> 0); PyTorch: the CPU's
                        self.notes.append('float-to-int')
                        out = torch.where(torch.isnan(a), torch.zeros((), dtype=a.dtype), a)
                        hi = (out >= big).contiguous()
                        lo = (out <= -big).contiguous()
                        out = out.clamp(-big, big).to(torch.int64)
                        out[hi] = 9223372036854775807
                        out[lo] = -9223372036854775808
                        return self._set(ins, out.contiguous())
            return self._set(ins, a.to(dt, memory_format=torch.contiguous_format))
        compare = {'eq': torch.eq, 'ne': torch.ne, 'lt': torch.lt, 'le': torch.le, 'gt': torch.gt,
                   'ge': torch.ge, 'logical_and': torch.logical_and,
                   'logical_or': torch.logical_or, 'logical_xor': torch.logical_xor}
        if op in compare:
            return self._set(ins, c(compare[op](a, self._src(ins, 1))))
        if op == 'cmp_scalar':
            f = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)[
                (ins['which'] % 2 ** 64) % 6]   # as the C harness: the uint64 value mod 6
            v = ins['v']
            # tapegrad's scalar is a double: a whole number compares as an integer (t == 2)
            if math.isfinite(v) and v == math.floor(v) and abs(v) < 2.0 ** 63:
                v = int(v)
            return self._set(ins, c(f(a, v)))
        tests = {'logical_not': torch.logical_not, 'isnan': torch.isnan, 'isinf': torch.isinf,
                 'isfinite': torch.isfinite}
        if op in tests:
            return self._set(ins, c(tests[op](a)))
        if op in ('remainder', 'floor_divide'):
            b = self._src(ins, 1)
            if a.dtype == torch.int64 and b.dtype == torch.int64:
                ab, bb = torch.broadcast_tensors(a, b)
                if bool(((ab == -2 ** 63) & (bb == -1)).any()):
                    # PyTorch's CPU kernel traps there (SIGFPE, the process dies); tapegrad
                    # wraps to INT64_MIN: Python's floor rules (PyTorch's) with the wrap
                    self.notes.append('int-min-division')
                    out = []
                    for x, y in zip(ab.reshape(-1).tolist(), bb.reshape(-1).tolist()):
                        if y == 0:
                            raise RuntimeError('ZeroDivisionError')
                        v = x % y if op == 'remainder' else x // y
                        out.append((v + 2 ** 63) % 2 ** 64 - 2 ** 63)
                    return self._set(ins, torch.tensor(out, dtype=torch.int64).reshape(ab.shape))
            f = torch.remainder if op == 'remainder' else torch.floor_divide
            return self._set(ins, c(f(a, b)))
        if op in ('amax_dim', 'amin_dim', 'logsumexp_dim', 'prod_dim', 'any_dim', 'argmax_dim'):
            f = {'amax_dim': torch.amax, 'amin_dim': torch.amin, 'logsumexp_dim': torch.logsumexp,
                 'prod_dim': torch.prod, 'any_dim': torch.any, 'argmax_dim': torch.argmax}[op]
            return self._set(ins, c(f(a, ins['dim'], keepdim=bool(ins['keepdim']))))
        if op in ('cumsum', 'cumprod'):
            f = torch.cumsum if op == 'cumsum' else torch.cumprod
            return self._set(ins, c(f(a, ins['dim'])))
        if op in ('var_dim', 'std_dim'):
            f = torch.var if op == 'var_dim' else torch.std
            corr = int(ins['correction'])
            n = a.shape[ins['dim']] if a.dim() else 1
            if n - corr <= 0 and a.requires_grad:
                # NaN or inf variance: PyTorch 1.13's gradient there is its own (inf where
                # tapegrad's formula gives 0 * inf = NaN); the suite takes tapegrad's
                self.notes.append('var-degenerate')
                return self._set(ins, c(VarLike.apply(a, ins['dim'], corr, bool(ins['keepdim']),
                                                      op == 'std_dim')))
            return self._set(ins, c(f(a, ins['dim'], correction=corr,
                                      keepdim=bool(ins['keepdim']))))
        if op == 'norm_dim':
            return self._set(ins, c(torch.linalg.vector_norm(a, ins['p'], ins['dim'],
                                                             keepdim=bool(ins['keepdim']))))
        if op == 'flip':
            return self._set(ins, c(torch.flip(a, shape)))
        if op == 'index_select':
            return self._set(ins, c(torch.index_select(a, ins['dim'], self._src(ins, 1))))
        binary = {'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div,
                  'maximum': torch.maximum, 'minimum': torch.minimum, 'matmul': torch.matmul,
                  'pow': torch.pow}
        if op in binary:
            return self._set(ins, c(binary[op](a, self._src(ins, 1))))
        if op == 'where':
            x, y = self._src(ins, 1), self._src(ins, 2)
            if x.requires_grad or y.requires_grad:
                return self._set(ins, c(WhereAny.apply(a, x, y)))
            return self._set(ins, c(torch.where(a != 0, x, y)))
        unary = {'neg': torch.neg, 'exp': torch.exp, 'log': torch.log, 'sum': torch.sum,
                 'mean': _mean, 'softmax': lambda t: torch.softmax(t, -1),
                 'log_softmax': lambda t: torch.log_softmax(t, -1)}
        if op in unary:
            return self._set(ins, c(unary[op](a)))
        if op in UNARY_VOCAB:
            return self._set(ins, c(UNARY_VOCAB[op](a)))
        if op == 'pow_scalar':
            return self._set(ins, c(torch.pow(a, ins['e'])))
        if op == 'softplus':
            return self._set(ins, c(torch.nn.functional.softplus(a, ins['beta'],
                                                                 ins['threshold'])))
        if op == 'gelu':
            return self._set(ins, c(torch.nn.functional.gelu(
                a, approximate='tanh' if ins['tanh'] else 'none')))
        if op == 'scale':
            return self._set(ins, c(Scale.apply(a, ins['k']) if a.is_floating_point() else
                                    a * ins['k']))
        if op == 'add_scalar':
            return self._set(ins, c(a + ins['k']))
        if op == 'clamp':
            return self._set(ins, c(torch.clamp(a, min=ins['lo'], max=ins['hi'])))
        if op == 'sum_dim':
            return self._set(ins, c(torch.sum(a, ins['dim'], keepdim=bool(ins['keepdim']))))
        if op == 'mean_dim':
            return self._set(ins, c(_mean(a, ins['dim'], bool(ins['keepdim']))))
        if op == 'gather':
            idx = self._src(ins, 1)
            if not (a.is_floating_point() and idx.dtype == torch.int64):
                return self._set(ins, torch.gather(a, -1, idx))
            return self._set(ins, c(GatherLast.apply(a, idx)))
        if op == 'logprob':
            want_e = bool(ins['entropy'])
            if want_e and ins['dst'][1] is None:
                raise NullInput('entropy output is NULL')
            lp, ent = logprob_reference(a, self._src(ins, 1), ins)
            return self._set(ins, lp, ent)
        if op in ('square', 'cexp'):
            fn = Square if op == 'square' else Cexp
            return self._set(ins, fn.apply(a, _fail_mode(ins['fail'])))
        if op == 'mulsub':
            return self._set(ins, *Mulsub.apply(a, self._src(ins, 1), _fail_mode(ins['fail'])))
        inplace = {'add_': torch.Tensor.add_, 'sub_': torch.Tensor.sub_,
                   'mul_': torch.Tensor.mul_, 'copy_': torch.Tensor.copy_}
        if op in inplace:
            b = self._src(ins, 1)
            try:
                inplace[op](a, b)
            except RuntimeError as e:
                # PyTorch refuses partial overlap; with other a view of a's own
                # memory and grad recording it can also raise its leaf error
                # on a target that is not a leaf
                shared = (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                          if hasattr(a, 'untyped_storage') else
                          a.storage().data_ptr() == b.storage().data_ptr())
                leafy = ('a leaf Variable that requires grad' in str(e) and not a.is_leaf and
                         shared)
                if 'refer to a single memory location' not in str(e) and not leafy:
                    raise
                self.notes.append('inplace-overlap')   # tapegrad reads other before writing
                inplace[op](a, b.clone())
        elif op == 'scale_':
            if a.is_floating_point():
                a.copy_(Scale.apply(a, ins['k']))
            else:
                a.mul_(ins['k'])
        elif op == 'fill_':
            a.fill_(ins['value'])
        else:
            raise AssertionError('op %s not mapped' % op)
        return None
