"""tests/diff/tg_gen.py - seeded random op programs for the differential suite.

Contract: generate(seed, index) returns the text of one program (tests/prog
text form) and depends on nothing but its arguments (and the registry's
manifest, read once by tg_prog.load_manifest). Programs are built step by
step while running them with PyTorch (tg_prog.TorchRun), so that most
instructions get operands of fitting shapes. The ops come from the registry:
g_op draws any row and one of its samples (the inputs the registry made for
it: leading dims, broadcast partners, strided layouts, empty dims, special
values, other dtypes, bad inputs), reusing registers of the same shape and
dtype as inputs so that graphs grow, and sometimes new arguments drawn from
the row's own. Around them: views and in-place ops on registers (rows with
those flags), modify-and-restore and other patterns, custom functions,
scopes, no-grad regions and backward passes (once or twice, retained or
not, scalar or with an explicit upstream gradient).
"""
import math
import random
import warnings

import torch

from tg_prog import (F64, I64, INPLACE, NREG, ROWS, S_BAD, VIEWS, FLAG_CREATE, TorchRun,  # noqa: E501
                     format_insn, new_insn)

warnings.filterwarnings('ignore')
HUGE = [2 ** 62, -2 ** 62, 9223372036854775807, -9223372036854775808, 100, -100]


# Features tg_diff.py --avoid can leave out (to look past a known failure).
AVOIDABLE = {
    'inplace-view': 'in-place ops on views (and on tensors with views)',
    'fill-copy': 'fill_ and copy_',
    'requires-grad-nonleaf': 'requires_grad on tensors that are not leaves',
}


class Gen:
    def __init__(self, rng, avoid=()):
        self.avoid = set(avoid)
        self.r = rng
        self.lines = []
        self.run = TorchRun()
        self.owner = [0] * NREG
        self.depth = 0
        self.special = rng.random() < 0.08   # some programs use nan/inf/huge values
        self.pools = {}
        # every row but creation (the leaves make tensors) and in-place (g_inplace)
        self.op_names = sorted(n for n, row in ROWS.items()
                               if not row['flags'] & FLAG_CREATE and n not in INPLACE)
        # one-input rows whose node saves their result (the registry's saves field)
        self.saves_output = sorted(n for n, row in ROWS.items()
                                   if row.get('saves_output') and row['nin'] == 1 and
                                   not row['params'])

    # ---- bookkeeping ---------------------------------------------------------------------
    def emit(self, ins):
        cleared = []
        op = ins['op']
        if op == 'scope_begin':
            self.depth += 1
        elif op == 'scope_end' and self.depth > 0 and not ins['bad']:
            cleared = [r for r in range(NREG) if self.run.regs[r] is not None and
                       self.owner[r] == self.depth]
            self.depth -= 1
        elif op == 'scope_keep' and ins['src'][0] is not None:
            r = ins['src'][0]
            if self.owner[r] == self.depth and self.depth > 0:
                self.owner[r] -= 1
        elif op == 'release' and ins['src'][0] is not None:
            if self.owner[ins['src'][0]] == 0:
                cleared = [ins['src'][0]]
        exc = self.run.step(ins, {'cleared': cleared})
        for r in ins['dst']:
            if r is not None:
                self.owner[r] = self.depth
        self.lines.append(format_insn(ins))
        return exc

    def regs(self, pred=lambda t: True):
        return [i for i, t in enumerate(self.run.regs) if t is not None and _safe(pred, t)]

    def t(self, r):
        return self.run.regs[r]

    def free(self):
        free = [i for i, t in enumerate(self.run.regs) if t is None]
        if free:
            return self.r.choice(free)
        return self.r.randrange(NREG)

    def free2(self):
        a = self.free()
        rest = [i for i, t in enumerate(self.run.regs) if t is None and i != a]
        return [a, self.r.choice(rest) if rest else (a + 1) % NREG]

    def pick(self, pred=lambda t: True):
        cand = self.regs(pred)
        return self.r.choice(cand) if cand else None

    # ---- values and shapes ---------------------------------------------------------------
    def val(self):
        r = self.r.random()
        if self.special and r < 0.08:
            return self.r.choice([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e300, -1e-300])
        if r < 0.1:
            return self.r.choice([0.0, 1.0, -1.0, 0.5, 2.0])
        return round(self.r.uniform(-2, 2), self.r.choice([2, 4, 17]))

    def shape(self, max_dims=3):
        nd = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3][: 2 + 2 * max_dims])
        sizes = [self.r.choice([1, 2, 2, 3, 3, 4]) for _ in range(nd)]
        if sizes and self.r.random() < 0.06:
            sizes[self.r.randrange(nd)] = 0
        return sizes

    def bcast_partner(self, shape):
        """A shape that broadcasts with shape (dims dropped or set to 1)."""
        s = list(shape)
        k = self.r.randrange(len(s) + 1)
        s = s[k:]
        s = [1 if self.r.random() < 0.3 else x for x in s]
        if self.r.random() < 0.1:
            s = [1] + s
        return s

    def leaf(self, shape=None, rg=None, dtype=F64):
        shape = self.shape() if shape is None else shape
        n = 1
        for x in shape:
            n *= x
        r = self.free()
        kind = self.r.random()
        if dtype == F64 and kind < 0.08:
            self.emit(new_insn('randn', [r], dtype=dtype, shape=shape,
                               seed=self.r.randrange(1000), mean=0.0, std=1.0))
        elif dtype == F64 and kind < 0.12:
            self.emit(new_insn('full', [r], dtype=dtype, shape=shape, value=self.val()))
        elif dtype == F64 and kind < 0.15:
            self.emit(new_insn(self.r.choice(['zeros', 'ones']), [r], dtype=dtype, shape=shape))
        else:
            vals = [self.val() for _ in range(min(n, 64))]
            self.emit(new_insn('from_data', [r], dtype=dtype, shape=shape, vals=vals))
        if dtype == F64 and (rg if rg is not None else self.r.random() < 0.7):
            self.emit(new_insn('requires_grad', src=[r], on=1))
        return r

    def operand(self, pred=lambda t: t.is_floating_point()):
        r = self.pick(pred)
        if r is None or self.r.random() < 0.15:
            r = self.leaf()
        return r

    def partner(self, a):
        """A register broadcasting with register a (often a new leaf)."""
        ta = self.t(a)
        if self.r.random() < 0.05:
            return self.leaf(self.shape())  # may not broadcast: an error to compare
        cand = []
        for i, t in enumerate(self.run.regs):
            if t is None or not t.is_floating_point():
                continue
            try:
                torch.broadcast_shapes(t.shape, ta.shape)
                cand.append(i)
            except RuntimeError:
                pass
        if cand and self.r.random() < 0.5:
            return self.r.choice(cand)
        return self.leaf(self.bcast_partner(list(ta.shape)))

    # ---- instruction families --------------------------------------------------------------
    def g_view(self):
        """A view row (slice, transpose, view, expand, permute, narrow, ...) of a register."""
        a = self.operand()
        name = self.r.choice(sorted(VIEWS))
        self.emit(self.insn_of(name, [a], self.random_args(ROWS[name], self.t(a))))

    def g_inplace(self):
        """In-place on a non-leaf, a view of a non-leaf, a view of a leaf, or a leaf."""
        k = self.r.random()
        if k < 0.45:
            base = self.operand()
            y = self.free()
            op = self.r.choice(['scale', 'add_scalar', 'mul', 'exp'])
            src = [base, base] if op == 'mul' else [base]
            self.emit(new_insn(op, [y], src, **({'k': self.val()} if op in ('scale', 'add_scalar')
                                                else {})))
            target = y
            if self.t(y) is not None and self.r.random() < 0.6 and 'inplace-view' not in self.avoid:
                target = self.g_view_of(y)
        elif k < 0.75 or 'inplace-view' in self.avoid:
            target = self.pick(lambda t: t.is_floating_point())
            if target is None:
                target = self.leaf()
        else:
            target = self.g_view_of(self.operand())
        tt = self.t(target)
        if tt is None:
            return
        if 'inplace-view' in self.avoid and any(
                t is not None and t is not tt and _safe(lambda u: u.data_ptr() == tt.data_ptr()
                                                        or u._base is tt or tt._base is not None,
                                                        t) for t in self.run.regs):
            return
        ops = [n for n in sorted(INPLACE)
               if 'fill-copy' not in self.avoid or n not in ('copy_', 'fill_')]
        op = self.r.choice(ops)
        if ROWS[op]['nin'] == 1:
            ins = new_insn(op, src=[target])
            for key, kind, _ in ROWS[op]['params']:
                ins[key] = self.val() if kind == 'r' else 0
        else:
            other = self.pick(lambda t: t.is_floating_point() and _bcast_to(t.shape, tt.shape))
            if other is None or self.r.random() < 0.5:
                other = self.leaf(self.bcast_partner(list(tt.shape)))
            ins = new_insn(op, src=[target, other])
        self.emit(ins)

    def g_view_of(self, a):
        t = self.t(a)
        nd = t.dim()
        d = self.free()
        if nd and self.r.random() < 0.7:
            self.emit(new_insn('slice', [d], [a], dim=self.r.randrange(-nd, nd),
                               start=self.r.choice([0, 1, -2, -100]),
                               end=self.r.choice([2, -1, 100, HUGE[2]]),
                               step=self.r.choice([1, 1, 2])))
        elif nd >= 2:
            self.emit(new_insn('transpose', [d], [a], d0=0, d1=1))
        else:
            self.emit(new_insn('view', [d], [a], shape=[-1]))
        return d if self.t(d) is not None else a

    # ---- the registry's rows -----------------------------------------------------------
    def materialize(self, d):
        """A register holding the manifest tensor d (from_data; a strided one made
        as the registry makes it: a transpose of its last two dims, or every
        second element of a longer 1-D tensor)."""
        dt = {'f64': F64, 'f32': 0, 'i64': I64, 'bool': 3}[d['dtype']]
        shape, vals = list(d['shape']), [float(v) for v in d['values']][:64]
        r = self.free()
        if d.get('strided') and len(shape) >= 2:
            tshape = shape[:-2] + [shape[-1], shape[-2]]
            t = torch.tensor(d['values'], dtype=torch.float64).reshape(shape).transpose(-2, -1)
            vals = [float(v) for v in t.reshape(-1).tolist()][:64]
            self.emit(new_insn('from_data', [r], dtype=dt, shape=tshape, vals=vals))
            v = self.free()
            self.emit(new_insn('transpose', [v], [r], d0=-2, d1=-1))
            r = v
        elif d.get('strided') and len(shape) == 1:
            twice = [x for x in vals for _ in (0, 1)][:64]
            self.emit(new_insn('from_data', [r], dtype=dt, shape=[2 * shape[0]], vals=twice))
            v = self.free()
            self.emit(new_insn('slice', [v], [r], dim=0, start=0, end=2 ** 62, step=2))
            r = v
        else:
            self.emit(new_insn('from_data', [r], dtype=dt, shape=shape, vals=vals))
        return r

    def random_args(self, row, x):
        """Arguments for row on input x (a tensor or None): dims of x for the dim
        parameters, a permutation for dim lists, the row's own sample values
        (or shapes that fit x) for the others."""
        pool = self.pools.setdefault(row['row'], _arg_pool(row))
        nd = x.dim() if x is not None else 0
        args = {}
        for name, kind, _ in row['params']:
            choices = pool.get(name) or [0]
            if kind == 'd':
                args[name] = self.r.randrange(-nd, nd) if nd and self.r.random() < 0.95 \
                    else self.r.choice([0, -1, nd, 4])
            elif kind == 'b':
                args[name] = self.r.randrange(2)
            elif kind == 'D':
                dims = list(range(nd))
                self.r.shuffle(dims)
                args[name] = dims if self.r.random() < 0.7 else self.r.choice(choices)
            elif kind == 'S' and x is not None and self.r.random() < 0.6:
                shape = list(x.shape)
                args[name] = self.r.choice([[-1], shape, [1] + shape, shape[:-1] + [-1]])
            elif kind == 'r' and self.r.random() < 0.2:
                args[name] = self.val()
            else:
                args[name] = self.r.choice(choices)
        return args

    def insn_of(self, name, src, args):
        """The instruction of row name on registers src with arguments args."""
        row = ROWS[name]
        nd = 0 if name in INPLACE else row['nout']
        dst = []
        for _ in range(nd):
            free = [i for i, t in enumerate(self.run.regs) if t is None and i not in dst]
            dst.append(self.r.choice(free) if free else self.r.randrange(NREG))
        ins = new_insn(name, dst, src)
        for key, kind, _ in row['params']:
            v = args[key]
            if kind == 'T':
                ins['dtype'] = {'f64': F64, 'f32': 0, 'i64': I64, 'bool': 3}.get(v, F64)
            elif kind in 'SD':
                ins['shape'] = [int(q) for q in v]
            elif kind == 'V':
                ins['vals'] = [float(q) for q in v][:64]
            elif kind == 'r':
                ins[key] = float(v)
            else:
                ins[key] = int(max(min(int(v), 2 ** 63 - 1), -2 ** 63))
        return ins

    def g_op(self):
        """A registry row on one of its samples' inputs (some replaced by registers of
        the same shape and dtype), with the sample's arguments or new ones."""
        name = self.r.choice(self.op_names)
        row = ROWS[name]
        samples = [s for s in row['samples'] if not s['flags'] & S_BAD]
        if not samples or self.r.random() < 0.08:
            samples = row['samples']
        s = self.r.choice(samples)
        src = []
        for d in s['inputs']:
            r = None
            if d is not None and d['dtype'] in ('f32', 'f64') and self.r.random() < 0.4:
                r = self.pick(lambda t, d=d: list(t.shape) == d['shape'] and
                              str(t.dtype) == {'f32': 'torch.float32',
                                               'f64': 'torch.float64'}[d['dtype']])
            if r is None and d is not None:
                r = self.materialize(d)
                if d['dtype'] in ('f32', 'f64') and self.r.random() < 0.7:
                    self.emit(new_insn('requires_grad', src=[r], on=1))
            src.append(r)
        x = self.t(src[0]) if src and src[0] is not None else None
        args = s['args'] if self.r.random() < 0.75 else self.random_args(row, x)
        self.emit(self.insn_of(name, src, args))

    def g_custom(self):
        op = self.r.choice(['fn_square', 'fn_exp', 'fn_mulsub'])
        fail = 0 if self.r.random() < 0.9 else self.r.choice([1, 2])
        a = self.operand()
        if op == 'fn_mulsub':
            b = self.leaf(list(self.t(a).shape))
            self.emit(new_insn(op, self.free2(), [a, b], fail=fail))
        else:
            self.emit(new_insn(op, [self.free()], [a], fail=fail))

    def g_backward(self):
        root = self.pick(lambda t: t.requires_grad and t.numel() == 1)
        if root is None or self.r.random() < 0.4:
            src = self.pick(lambda t: t.requires_grad)
            if src is None:
                return
            if self.r.random() < 0.15:   # a non-scalar root with an upstream gradient
                g = self.leaf(list(self.t(src).shape), rg=False)
                self.emit(new_insn('backward', src=[src, g], retain=self.r.randrange(2)))
                return
            root = self.free()
            self.emit(new_insn(self.r.choice(['sum', 'mean']), [root], [src]))
        times = 2 if self.r.random() < 0.2 else 1
        for _ in range(times):
            self.emit(new_insn('backward', src=[root], retain=int(self.r.random() < 0.4)))

    def g_misc(self):
        k = self.r.random()
        leaves = self.regs(lambda t: t.is_leaf and t.requires_grad)
        if k < 0.3 and leaves:
            self.emit(new_insn('grad', [self.free()], [self.r.choice(leaves)]))
        elif k < 0.4 and leaves:
            self.emit(new_insn('zero_grad', src=[self.r.choice(leaves)]))
        elif k < 0.55:
            self.emit(new_insn('grad_mode', on=int(not torch.is_grad_enabled())))
        elif k < 0.65:
            r = self.pick()
            if r is not None:
                self.emit(new_insn('release', src=[r]))
        elif k < 0.75:
            r = self.pick(lambda t: t.is_floating_point())
            if r is not None:
                self.emit(new_insn('to_dtype', [self.free()], [r],
                                   dtype=self.r.choice([F64, F64, I64])))
        elif k < 0.85:
            r = self.pick(lambda t: t.is_leaf or 'requires-grad-nonleaf' not in self.avoid)
            if r is not None:
                self.emit(new_insn('requires_grad', src=[r], on=int(self.r.random() < 0.8)))
        elif k < 0.92:
            self.emit(new_insn('arange', [self.free()], dtype=F64, start=self.val(),
                               end=self.val() + 3, step=self.r.choice([1.0, 0.5, -1.0, 0.3])))
        else:
            self.emit(new_insn(self.r.choice(['leak_scan', 'step_mark', 'print', 'dot']),
                               src=[self.pick()] if self.r.random() < 0.5 else []))

    def g_pattern(self):
        """Scenarios the semantics hinge on, with random sizes and values."""
        k = self.r.randrange(7)
        x = self.leaf([self.r.choice([2, 3, 4])], rg=True)
        n = self.t(x).shape[0]
        y = self.free()
        self.emit(new_insn(self.r.choice(['scale', 'add_scalar']), [y], [x], k=self.val()))
        if self.t(y) is None:
            return
        if k == 0:   # modify, then restore, a tensor a node saved
            z = self.free()
            self.emit(new_insn(self.r.choice(self.saves_output), [z], [y]))
            c = self.leaf([n], rg=False)
            self.emit(new_insn('sub_', src=[z, c]))
            self.emit(new_insn('add_', src=[z, c]))
            root = z
        elif k in (1, 2) and 'inplace-view' not in self.avoid:
            # a view taken before an in-place op on its base (1), or edited itself (2)
            v = self.free()
            self.emit(new_insn('slice', [v], [y], dim=0, start=self.r.choice([0, 1, -2]),
                               end=self.r.choice([2, -1, HUGE[2]]), step=self.r.choice([1, 2])))
            if k == 1:
                self.emit(new_insn('scale_', src=[y], k=self.val()))
                root = v
            else:
                self.emit(new_insn('mul_', src=[v, self.leaf([1], rg=self.r.random() < 0.5)]))
                root = y
        elif k == 3 and 'fill-copy' not in self.avoid:   # a constant written over history
            if self.r.random() < 0.5:
                self.emit(new_insn('fill_', src=[y], value=self.val()))
            else:
                self.emit(new_insn('copy_', src=[y, self.leaf([n], rg=False)]))
            root = y
        elif k == 4:   # matmul: an operand whose gradient is not needed, edited afterwards
            w = self.leaf([n, 2], rg=False)
            a = self.free()
            self.emit(new_insn('reshape' if 'inplace-view' in self.avoid else 'view', [a], [y],
                               shape=[1, n]))
            if 'inplace-view' in self.avoid:
                self.emit(new_insn('clone', [a], [a]))
            m = self.free()
            self.emit(new_insn('matmul', [m], [a, w]))
            self.emit(new_insn('scale_', src=[w if self.r.random() < 0.5 else a], k=2.0))
            root = m
        elif k == 5:   # the logits of the log-prob op edited in place before backward
            z = self.free()
            self.emit(new_insn('view', [z], [y], shape=[1, n]))
            t = self.free()
            self.emit(new_insn('from_data', [t], dtype=I64, shape=[1],
                               vals=[float(self.r.randrange(n))]))
            lp, ent = self.free2()
            self.emit(new_insn('logprob_entropy', [lp, ent], [z, t], impl=self.r.randrange(2),
                               T=1.0, ignore=-100, chunk=self.r.choice([0, 1]), entropy=1,
                               egrad=self.r.randrange(2)))
            self.emit(new_insn('scale_', src=[y], k=0.5))
            root = lp
        else:          # a leaf edited under no-grad, then used
            self.emit(new_insn('grad_mode', on=0))
            self.emit(new_insn('add_', src=[x, self.leaf([n], rg=False)]))
            self.emit(new_insn('grad_mode', on=1))
            root = y
        s = self.free()
        self.emit(new_insn('sum', [s], [root]))
        self.emit(new_insn('backward', src=[s], retain=self.r.randrange(2)))
        self.emit(new_insn('grad', [self.free()], [x]))

    def g_scope(self):
        if self.depth and self.r.random() < 0.5:
            r = self.pick()
            if r is not None and self.r.random() < 0.5:
                self.emit(new_insn('scope_keep', src=[r]))
            self.emit(new_insn('scope_end'))
        elif self.depth < 3:
            self.emit(new_insn('scope_begin'))


def _safe(pred, t):
    try:   # PyTorch refuses to even look at some views (grad_fn of a no-grad view edited in place)
        return pred(t)
    except RuntimeError:
        return False


def _bcast_to(src, dst):
    try:
        return tuple(torch.broadcast_shapes(src, dst)) == tuple(dst)
    except RuntimeError:
        return False


FAMILIES = [('g_op', 50), ('g_view', 12), ('g_inplace', 16), ('g_custom', 4),
            ('g_backward', 8), ('g_misc', 8), ('g_scope', 3), ('g_pattern', 5)]


def _arg_pool(row):
    """Every value each parameter of row takes in the row's samples (good ones first)."""
    pool = {}
    for s in row['samples']:
        for k, v in s['args'].items():
            if v not in pool.setdefault(k, []):
                pool[k].append(v)
    return pool


def generate(seed, index, avoid=()):
    """The text of program `index` of run `seed` (without the AVOIDABLE features named)."""
    rng = random.Random(seed * 1000003 + index)
    g = Gen(rng, avoid)
    for _ in range(rng.randint(2, 3)):
        g.leaf()
    names = [f for f, _ in FAMILIES]
    weights = [w for _, w in FAMILIES]
    for _ in range(rng.randint(12, 40)):
        getattr(g, rng.choices(names, weights)[0])()
    if not torch.is_grad_enabled():
        g.emit(new_insn('grad_mode', on=1))
    src = g.pick(lambda t: t.requires_grad)
    if src is not None:   # end with a loss and its backward
        root = g.free()
        g.emit(new_insn('sum', [root], [src]))
        g.emit(new_insn('backward', src=[root], retain=0))
    torch.set_grad_enabled(True)
    return '\n'.join(g.lines) + '\n'
