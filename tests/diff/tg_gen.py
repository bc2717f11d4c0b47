"""tests/diff/tg_gen.py - seeded random op programs for the differential suite.

Contract: generate(seed, index) returns the text of one program (tests/prog
text form) and depends on nothing but its arguments. Programs are built step
by step while running them with PyTorch (tg_prog.TorchRun), so that most
instructions get operands of fitting shapes: broadcasting partners, strided
views (slices with negative, huge and stepped bounds, transposes, expands),
in-place ops on non-leaf tensors, on views and on leaves, no-grad regions,
the log-prob op with every option, custom functions, scopes, and backward
passes (once or twice, retained or not, scalar or with an explicit upstream
gradient). A few instructions are wrong on purpose (bad dims, shapes that do
not broadcast, out-of-range indices) so that error statuses are compared too.
"""
import math
import random
import warnings

import torch

from tg_prog import F64, I64, NREG, UNARY_VOCAB, TorchRun, format_insn, new_insn

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
    def g_unary(self):
        a = self.operand()
        op = self.r.choice(['neg', 'exp', 'log', 'scale', 'add_scalar', 'clamp', 'sum', 'mean',
                            'softmax', 'log_softmax', 'contiguous', 'clone', 'detach', 'vocab'])
        if op == 'vocab':  # one of the rest of the unary vocabulary
            op = self.r.choice(sorted(UNARY_VOCAB) + ['pow_scalar', 'softplus', 'gelu'])
        ins = new_insn(op, [self.free()], [a])
        if op == 'pow_scalar':
            ins['e'] = self.r.choice([0.0, 0.5, -0.5, 1.0, 2.0, 3.0, -1.0, -2.0, 1.5, 2.5,
                                      self.val()])
        if op == 'softplus':
            ins.update(beta=self.r.choice([1.0, 0.5, 2.0, -1.0, self.val()]),
                       threshold=self.r.choice([20.0, 1.0, 0.0, self.val()]))
        if op == 'gelu':
            ins['tanh'] = self.r.randrange(2)
        if op in ('scale', 'add_scalar'):
            ins['k'] = self.val()
        if op == 'clamp':
            lo, hi = sorted([self.val(), self.val()])
            if self.r.random() < 0.2:
                lo = -math.inf
            if self.r.random() < 0.2:
                hi = math.inf
            if self.r.random() < 0.04:
                lo, hi = hi, lo
            ins.update(lo=lo, hi=hi)
        self.emit(ins)

    def g_binary(self):
        a = self.operand()
        op = self.r.choice(['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'where', 'pow'])
        b = self.partner(a)
        if op == 'where':
            cshape = self.bcast_partner(list(self.t(a).shape))
            n = 1
            for x in cshape:
                n *= x
            c = self.free()
            self.emit(new_insn('from_data', [c], dtype=F64, shape=cshape,
                               vals=[float(self.r.random() < 0.5) for _ in range(min(n, 64))]))
            self.emit(new_insn('where', [self.free()], [c, a, b]))
        else:
            if self.r.random() < 0.5:
                a, b = b, a
            self.emit(new_insn(op, [self.free()], [a, b]))

    def g_reduce(self):
        a = self.operand()
        nd = self.t(a).dim()
        dim = self.r.randrange(-nd, nd) if nd and self.r.random() < 0.95 else self.r.choice(
            [nd, -nd - 1, 5])
        op = self.r.choice(['sum_dim', 'mean_dim'])
        self.emit(new_insn(op, [self.free()], [a], dim=dim, keepdim=self.r.randrange(2)))

    def g_compare(self):
        """Comparisons, logic and predicates on any dtype; the mask often drives a where."""
        a = self.operand(lambda t: True)
        k = self.r.random()
        m = self.free()
        if k < 0.45:
            op = self.r.choice(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logical_and', 'logical_or',
                                'logical_xor'])
            self.emit(new_insn(op, [m], [a, self.partner(a)]))
        elif k < 0.75:
            v = self.r.choice([0.0, 1.0, 2.0, -1.0, 0.5, math.nan, math.inf, self.val()])
            self.emit(new_insn('cmp_scalar', [m], [a], which=self.r.randrange(6), v=v))
        else:
            op = self.r.choice(['logical_not', 'isnan', 'isinf', 'isfinite'])
            self.emit(new_insn(op, [m], [a]))
        if self.run.regs[m] is not None and self.r.random() < 0.6:
            x = self.operand()
            self.emit(new_insn('where', [self.free()], [m, x, self.partner(x)]))

    def g_reduce_line(self):
        """The reductions along a dim that are not sums, and the scans."""
        a = self.operand(lambda t: True) if self.r.random() < 0.1 else self.operand()
        nd = self.t(a).dim()
        dim = self.r.randrange(-nd, nd) if nd and self.r.random() < 0.95 else self.r.choice(
            [0, -1, nd, 4])
        op = self.r.choice(['amax_dim', 'amin_dim', 'logsumexp_dim', 'prod_dim', 'any_dim',
                            'argmax_dim', 'cumsum', 'cumprod', 'var_dim', 'std_dim', 'norm_dim'])
        kw = {'dim': dim}
        if op not in ('cumsum', 'cumprod'):
            kw['keepdim'] = self.r.randrange(2)
        if op in ('var_dim', 'std_dim'):
            kw['correction'] = float(self.r.choice([0, 1, 1, 2]))
        if op == 'norm_dim':
            kw['p'] = self.r.choice([1.0, 2.0, math.inf])
        self.emit(new_insn(op, [self.free()], [a], **kw))

    def g_index(self):
        """flip and index_select (repeated and, rarely, out-of-range indices)."""
        a = self.operand()
        t = self.t(a)
        nd = t.dim()
        if nd == 0 or self.r.random() < 0.5:
            dims = [d for d in range(nd) if self.r.random() < 0.5]
            dims = [d - nd if self.r.random() < 0.3 else d for d in dims]
            if self.r.random() < 0.05:
                dims.append(self.r.choice([nd, 0]))   # out of range, or repeated
            self.emit(new_insn('flip', [self.free()], [a], shape=dims))
            return
        d = self.r.randrange(nd)
        n = t.shape[d]
        vals = [float(self.r.randrange(n)) if n else 0.0 for _ in range(self.r.randrange(5))]
        if vals and self.r.random() < 0.05:
            vals[0] = float(self.r.choice([n, -1]))
        ix = self.free()
        self.emit(new_insn('from_data', [ix], dtype=I64, shape=[len(vals)], vals=vals))
        self.emit(new_insn('index_select', [self.free()], [a, ix],
                           dim=d - nd if self.r.random() < 0.3 else d))

    def g_intdiv(self):
        """remainder / floor_divide of i64 tensors (a zero divisor now and then)."""
        shape = self.shape(2)
        n = 1
        for x in shape:
            n *= x
        a, b = self.free(), None
        self.emit(new_insn('from_data', [a], dtype=I64, shape=shape,
                           vals=[float(self.r.randrange(-9, 10)) for _ in range(min(n, 64))]))
        b = self.free()
        bs = self.bcast_partner(shape)
        m = 1
        for x in bs:
            m *= x
        zero_ok = self.r.random() < 0.1
        dv = [float(self.r.choice([-3, -2, -1, 1, 2, 5] + ([0] if zero_ok else [])))
              for _ in range(min(m, 64))]
        self.emit(new_insn('from_data', [b], dtype=I64, shape=bs, vals=dv))
        self.emit(new_insn(self.r.choice(['remainder', 'floor_divide']), [self.free()], [a, b]))

    def g_view(self):
        a = self.operand()
        t = self.t(a)
        nd = t.dim()
        k = self.r.random()
        d = self.free()
        if k < 0.4 and nd:
            bounds = [0, 1, 2, -1, -2, 3] + (HUGE if self.r.random() < 0.3 else [])
            self.emit(new_insn('slice', [d], [a], dim=self.r.randrange(-nd, nd),
                               start=self.r.choice(bounds + [0, 0]),
                               end=self.r.choice(bounds + [HUGE[2]] * 3),
                               step=self.r.choice([1, 1, 1, 2, 3] + ([0, -1] if
                                                  self.r.random() < 0.05 else []))))
        elif k < 0.5 and nd >= 1:
            self.emit(new_insn('transpose', [d], [a], d0=self.r.randrange(-nd, nd),
                               d1=self.r.randrange(-nd, nd)))
        elif k < 0.6:
            self.g_shape_op(a, t, d)
        elif k < 0.8:
            shape = list(t.shape)
            n = t.numel()
            cand = [[-1], [n], [1, -1], [-1, 1]]
            if nd >= 2:
                cand.append(shape[:-2] + [-1])
                cand.append(shape[::-1])
            self.emit(new_insn(self.r.choice(['view', 'reshape']), [d], [a],
                               shape=self.r.choice(cand)))
        else:
            shape = [s if s != 1 else self.r.choice([1, 2, 3]) for s in t.shape]
            if self.r.random() < 0.3:
                shape = [self.r.choice([2, 3])] + shape
            if self.r.random() < 0.2 and shape:
                shape[self.r.randrange(len(shape))] = -1
            self.emit(new_insn('expand', [d], [a], shape=shape))
        return d

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
        ops = ['add_', 'sub_', 'mul_', 'scale_'] + ([] if 'fill-copy' in self.avoid else
                                                     ['copy_', 'fill_'])
        op = self.r.choice(ops)
        if op in ('scale_', 'fill_'):
            ins = new_insn(op, src=[target])
            ins['k' if op == 'scale_' else 'value'] = self.val()
        else:
            other = self.pick(lambda t: t.is_floating_point() and _bcast_to(t.shape, tt.shape))
            if other is None or self.r.random() < 0.5:
                other = self.leaf(self.bcast_partner(list(tt.shape)))
            ins = new_insn(op, src=[target, other])
        self.emit(ins)

    def g_shape_op(self, a, t, d):
        """permute, narrow, squeeze, unsqueeze, flatten of a; cat or stack with a
        second operand of a fitting shape."""
        nd = t.dim()
        op = self.r.choice(['permute', 'narrow', 'squeeze', 'unsqueeze', 'flatten', 'cat',
                            'stack'])
        bad = self.r.random() < 0.05   # an out-of-range dim or bound now and then
        if op == 'permute':
            dims = list(range(nd))
            self.r.shuffle(dims)
            if bad and nd:
                dims[0] = dims[-1]
            self.emit(new_insn('permute', [d], [a], shape=dims))
        elif op == 'narrow' and nd:
            dim = self.r.randrange(-nd, nd)
            size = t.shape[dim]
            start = self.r.randrange(-size, size + 1) if size else 0
            length = self.r.randrange(0, size - (start % size if size else 0) + 1) if size else 0
            self.emit(new_insn('narrow', [d], [a], dim=dim, start=start,
                               length=length + (size + 1 if bad else 0)))
        elif op in ('squeeze', 'unsqueeze', 'flatten') or not nd:
            if op == 'flatten':
                s0 = self.r.randrange(-nd, nd) if nd else 0
                e0 = self.r.randrange(-nd, nd) if nd else 0
                lo, hi = sorted([s0 % nd, e0 % nd]) if nd else (0, 0)
                self.emit(new_insn('flatten', [d], [a], s=hi if bad else lo, e=lo if bad else hi))
            else:
                n = nd + (1 if op == 'unsqueeze' else 0)
                dim = self.r.randrange(-max(n, 1), max(n, 1)) if not bad else n + 1
                self.emit(new_insn('squeeze' if op == 'flatten' else op, [d], [a], dim=dim))
        else:
            dim = self.r.randrange(-nd, nd)
            shape = list(t.shape)
            if op == 'cat':
                shape[dim] = self.r.randrange(0, 3)
            b = a if self.r.random() < 0.3 and op == 'stack' else self.leaf(shape)
            if bad:
                b = self.leaf(shape + [2])
            self.emit(new_insn(op, [d], [a, b], dim=dim))

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

    def g_matmul(self):
        m, k, n = (self.r.choice([1, 2, 3]) for _ in range(3))
        batch = [] if self.r.random() < 0.6 else [self.r.choice([1, 2])]
        a = self.pick(lambda t: t.is_floating_point() and t.dim() >= 2)
        if a is None or self.r.random() < 0.5:
            a = self.leaf(batch + [m, k])
        ta = self.t(a)
        k = ta.shape[-1]
        bshape = ([] if self.r.random() < 0.5 else list(ta.shape[:-2])) + [k, n]
        if self.r.random() < 0.05:
            bshape = [k + 1, n]
        b = self.leaf(bshape)
        if self.r.random() < 0.3:
            bt = self.free()
            self.emit(new_insn('transpose', [bt], [self.leaf(bshape[:-2] + [n, k])], d0=-1,
                               d1=-2))
            b = bt
        self.emit(new_insn('matmul', [self.free()], [a, b]))

    def targets(self, lead, V, ignore):
        n = 1
        for x in lead:
            n *= x
        vals = []
        for _ in range(min(n, 64)):
            u = self.r.random()
            vals.append(float(ignore if u < 0.2 else (V if u < 0.23 else self.r.randrange(V))))
        r = self.free()
        self.emit(new_insn('from_data', [r], dtype=I64, shape=lead, vals=vals))
        return r

    def g_gather(self):
        a = self.pick(lambda t: t.is_floating_point() and t.dim() >= 1 and t.shape[-1] > 0)
        if a is None:
            a = self.leaf([self.r.choice([1, 2, 3]), self.r.choice([2, 3, 4])])
        t = self.t(a)
        V = t.shape[-1]
        if V == 0:
            return
        lead = list(t.shape[:-1]) + [self.r.choice([1, 1, 2])]
        idx = self.targets(lead, V, self.r.randrange(V))
        self.emit(new_insn('gather', [self.free()], [a, idx]))

    def g_logprob(self):
        a = self.pick(lambda t: t.is_floating_point() and t.dim() >= 1 and t.shape[-1] > 0)
        if a is None or self.r.random() < 0.6:
            lead = [self.r.choice([1, 2, 3, 4])] + ([self.r.choice([2, 3])] if
                                                    self.r.random() < 0.3 else [])
            a = self.leaf(lead + [self.r.choice([1, 2, 3, 5])], rg=self.r.random() < 0.85)
            if self.r.random() < 0.3 and self.t(a).shape[0] > 1:
                v = self.free()   # logits[:-1]: a strided slice of the rows
                self.emit(new_insn('slice', [v], [a], dim=0, start=0, end=-1, step=1))
                a = v
        t = self.t(a)
        V = t.shape[-1]
        ignore = self.r.choice([-100, -100, 0, 1])
        y = self.targets(list(t.shape[:-1]), V, ignore)
        if self.r.random() < 0.03:
            y = self.leaf(list(t.shape[:-1]))   # float targets: a dtype error
        T = self.r.choice([1.0, 1.0, 0.5, 2.0, 0.7] + ([0.0, -1.0, math.inf] if
                                                      self.r.random() < 0.05 else []))
        ent = self.r.random() < 0.8
        self.emit(new_insn('logprob', self.free2(), [a, y],
                           impl=self.r.randrange(2), T=T, ignore=ignore,
                           chunk=self.r.choice([0, 0, 1, 2, 3]), entropy=int(ent),
                           egrad=int(self.r.random() < 0.6)))

    def g_custom(self):
        op = self.r.choice(['square', 'cexp', 'mulsub'])
        fail = 0 if self.r.random() < 0.9 else self.r.choice([1, 2])
        a = self.operand()
        if op == 'mulsub':
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
            self.emit(new_insn(self.r.choice(['exp', 'softmax', 'log_softmax']), [z], [y]))
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
            t = self.targets([1], n, -100)
            lp, ent = self.free2()
            self.emit(new_insn('logprob', [lp, ent], [z, t], impl=self.r.randrange(2), T=1.0,
                               ignore=-100, chunk=self.r.choice([0, 1]), entropy=1,
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


FAMILIES = [('g_unary', 12), ('g_binary', 14), ('g_reduce', 5), ('g_view', 12),
            ('g_inplace', 16), ('g_matmul', 4), ('g_gather', 3), ('g_logprob', 6),
            ('g_custom', 4), ('g_backward', 8), ('g_misc', 8), ('g_scope', 3), ('g_pattern', 5),
            ('g_compare', 6), ('g_reduce_line', 8), ('g_index', 4), ('g_intdiv', 2)]


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
