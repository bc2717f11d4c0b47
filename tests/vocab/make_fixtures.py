#!/usr/bin/env python3
"""tests/vocab/make_fixtures.py - PyTorch's numbers for the shared vocabulary table.

For every op of tests/vocab_table.h (the same names: OPS below mirrors it) and
every case of that op, writes under tests/vocab/fixtures/ the inputs
(OP.CASE.in0.npy, ...), PyTorch's result (OP.CASE.out.npy), the upstream
gradient used (OP.CASE.up.npy) and the gradient of every differentiable input
(OP.CASE.grad0.npy, ...), all float64 (bool and int64 where the op takes
them), and MANIFEST.txt with one line per case:

    op case n_inputs grad_mask smooth

smooth 1: no ties, kinks or special values (the test runs gradcheck there).
Cases: "ties" (small integers: equal values, zeros), "specials" (NaN, +-inf;
values only), "smooth" (distinct values), "bcast" (operands that broadcast).
Run with /usr/bin/python3 (torch and numpy); the files are committed and the
test needs only them.
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
DT = torch.float64
gen = torch.Generator().manual_seed(1126)
NAN, INF = float('nan'), float('inf')


def rand(*shape):
    return torch.rand(*shape, generator=gen, dtype=DT) * 3 - 1.5


def ints(*shape, lo=-3, hi=4):
    return torch.randint(lo, hi, shape, generator=gen).to(DT)


def specials(*shape):
    t = rand(*shape).reshape(-1)
    t[1], t[4], t[7] = NAN, INF, -INF
    return t.reshape(shape)


I64 = torch.int64
BIN = lambda f: (f, 3, {'ties': lambda: [ints(3, 1, 4), ints(2, 4)],
                        'smooth': lambda: [rand(3, 4) + 2, rand(4) + 2],
                        'specials': lambda: [specials(3, 4), rand(3, 4)]})
# op: (torch function of the inputs, grad mask, case makers). A case maker returns the
# input list; 'smooth' cases must be free of ties and kinks.
CMP = lambda f: (f, 0, {'ties': lambda: [ints(3, 1, 4), ints(2, 4)],
                        'specials': lambda: [specials(3, 4), specials(3, 4)],
                        'mixed': lambda: [ints(3, 4).to(I64), rand(4)]})
LOGIC = lambda f: (f, 0, {'ties': lambda: [ints(3, 1, 4, lo=-1, hi=2), ints(2, 4, lo=-1, hi=2)],
                          'specials': lambda: [specials(3, 4), ints(3, 4, lo=0, hi=2) > 0]})
PRED = lambda f: (f, 0, {'specials': lambda: [specials(3, 4)],
                         'ints': lambda: [ints(3, 4).to(I64)]})
IDIV = lambda f: (f, 0, {'signs': lambda: [ints(3, 4, lo=-9, hi=10).to(I64),
                                           torch.tensor([-3, -2, 2, 5], dtype=I64)]})
IARITH = lambda f: (f, 0, {'extremes': lambda: [
    torch.tensor([[2 ** 63 - 1, -2 ** 63, -7, 0], [5, -5, 3, 1]], dtype=I64),
    torch.tensor([1, -1, 2, 3], dtype=I64)]})


def red(f, **kw):
    return (f, 1, {'smooth': lambda: [rand(3, 4, 2)], 'ties': lambda: [ints(3, 4, 2)],
                   'specials': lambda: [specials(3, 4, 2)]}, kw)


OPS = {
    'eq': CMP(torch.eq), 'ne': CMP(torch.ne), 'lt': CMP(torch.lt), 'le': CMP(torch.le),
    'gt': CMP(torch.gt), 'ge': CMP(torch.ge),
    'eq_scalar': (lambda a: torch.eq(a, 1), 0, {'ties': lambda: [ints(3, 4)],
                                               'specials': lambda: [specials(3, 4)]}),
    'gt_scalar_half': (lambda a: torch.gt(a, 0.5), 0, {'ints': lambda: [ints(3, 4).to(I64)],
                                                       'specials': lambda: [specials(3, 4)]}),
    'logical_and': LOGIC(torch.logical_and), 'logical_or': LOGIC(torch.logical_or),
    'logical_xor': LOGIC(torch.logical_xor),
    'logical_not': PRED(torch.logical_not), 'isnan': PRED(torch.isnan),
    'isinf': PRED(torch.isinf), 'isfinite': PRED(torch.isfinite),
    'remainder': IDIV(torch.remainder), 'floor_divide': IDIV(torch.floor_divide),
    'add_i64': IARITH(torch.add), 'sub_i64': IARITH(torch.sub), 'mul_i64': IARITH(torch.mul),
    'maximum_i64': IARITH(torch.maximum), 'minimum_i64': IARITH(torch.minimum),
    'where_bool': (lambda c, a, b: torch.where(c, a, b), 6,
                   {'smooth': lambda: [ints(3, 1, lo=0, hi=2) > 0, rand(3, 4), rand(4)]}),
    'amax_dim1': red(lambda a: torch.amax(a, 1)),
    'amin_dim0_keep': red(lambda a: torch.amin(a, 0, keepdim=True)),
    'max_dim2': red(lambda a: torch.max(a, 2).values),
    'argmax_dim1': (lambda a: torch.argmax(a, 1), 0, {'ties': lambda: [ints(3, 4, 2)],
                                                      'specials': lambda: [specials(3, 4, 2)]}),
    'logsumexp_dim1': red(lambda a: torch.logsumexp(a, 1)),
    'prod_dim2': red(lambda a: torch.prod(a, 2)),
    'any_dim1': (lambda a: torch.any(a, 1), 0, {'ties': lambda: [ints(3, 4, 2, lo=0, hi=2)],
                                                'specials': lambda: [specials(3, 4, 2)]}),
    'all_dim0': (lambda a: torch.all(a, 0), 0, {'ties': lambda: [ints(3, 4, 2, lo=0, hi=2)],
                                                'specials': lambda: [specials(3, 4, 2)]}),
    'cumsum_dim1': red(lambda a: torch.cumsum(a, 1)),
    'cumprod_dim2': red(lambda a: torch.cumprod(a, 2)),
    'var_dim1': red(lambda a: torch.var(a, 1)),
    'std_dim0_c0': red(lambda a: torch.std(a, 0, correction=0)),
    'norm1_dim1': red(lambda a: torch.linalg.vector_norm(a, 1, 1)),
    'norm2_dim2': red(lambda a: torch.linalg.vector_norm(a, 2, 2)),
    'norminf_dim0': red(lambda a: torch.linalg.vector_norm(a, INF, 0)),
    'gather_dim1': (lambda a, i: torch.gather(a, 1, i), 1,
                    {'smooth': lambda: [rand(3, 4, 2),
                                        torch.randint(0, 4, (3, 5, 2), generator=gen)]}),
    'scatter_add_dim0': (lambda a, i, s: torch.scatter_add(a, 0, i, s), 5,
                         {'smooth': lambda: [rand(3, 4), torch.randint(0, 3, (5, 4), generator=gen),
                                             rand(5, 4)]}),
    'index_select_dim1': (lambda a, i: torch.index_select(a, 1, i), 1,
                          {'smooth': lambda: [rand(3, 4, 2),
                                              torch.tensor([3, 0, 3, 1], dtype=I64)]}),
    'flip_0_2': (lambda a: torch.flip(a, (0, 2)), 1, {'smooth': lambda: [rand(3, 4, 2)]}),
    # the binary ops, joining, shapes, triangles and losses of the earlier vocabulary
    'add': BIN(torch.add), 'sub': BIN(torch.sub), 'mul': BIN(torch.mul),
    'div': BIN(torch.div), 'maximum': BIN(torch.maximum), 'minimum': BIN(torch.minimum),
    'pow': (torch.pow, 3, {'smooth': lambda: [rand(3, 4).abs() + 0.5, rand(4)],
                           'ties': lambda: [ints(3, 1, 4), ints(2, 4, lo=0, hi=3)]}),
    'cat_dim1': (lambda a, b: torch.cat([a, b], 1), 3, {'smooth': lambda: [rand(3, 2), rand(3, 4)]}),
    'stack_dim0': (lambda a, b: torch.stack([a, b], 0), 3,
                   {'smooth': lambda: [rand(3, 2), rand(3, 2)]}),
    'narrow_1_1_2': (lambda a: a.narrow(1, 1, 2), 1, {'smooth': lambda: [rand(3, 4)]}),
    'permute_201': (lambda a: a.permute(2, 0, 1), 1, {'smooth': lambda: [rand(3, 4, 2)]}),
    'squeeze_1': (lambda a: a.squeeze(1), 1, {'smooth': lambda: [rand(3, 1, 4)]}),
    'unsqueeze_1': (lambda a: a.unsqueeze(1), 1, {'smooth': lambda: [rand(3, 4)]}),
    'flatten_0_1': (lambda a: a.flatten(0, 1), 1, {'smooth': lambda: [rand(3, 4, 2)]}),
    'triu_1': (lambda a: torch.triu(a, 1), 1, {'smooth': lambda: [rand(4, 5)]}),
    'tril_m1': (lambda a: torch.tril(a, -1), 1, {'smooth': lambda: [rand(2, 4, 3)]}),
    'masked_fill_ninf': (lambda a, m: a.masked_fill(m, -INF), 1,
                         {'masked': lambda: [rand(3, 4), ints(4, lo=0, hi=2) > 0]}),  # -inf: no gradcheck
    'one_hot_5': (lambda a: torch.nn.functional.one_hot(a, 5), 0,
                  {'ints': lambda: [torch.tensor([[0, 4, 2], [1, 1, 3]], dtype=I64)]}),
    'cross_entropy_ls': (lambda x, y: torch.nn.functional.cross_entropy(
        x, y, ignore_index=-100, label_smoothing=0.1), 1,
        {'smooth': lambda: [rand(5, 6) * 2, torch.tensor([2, -100, 0, 5, 5], dtype=I64)]}),
    'nll_loss': (lambda x, y: torch.nn.functional.nll_loss(x, y, ignore_index=-100,
                                                          reduction='sum'), 1,
                 {'smooth': lambda: [torch.log_softmax(rand(5, 6), -1),
                                     torch.tensor([2, -100, 0, 5, 1], dtype=I64)]}),
    'kl_div': (lambda x, t: torch.nn.functional.kl_div(x, t, reduction='mean'), 3,
               {'smooth': lambda: [torch.log_softmax(rand(3, 4), -1),
                                   torch.softmax(rand(3, 4), -1)]}),
    'bce_with_logits': (lambda x, t: torch.nn.functional.binary_cross_entropy_with_logits(x, t),
                        3, {'smooth': lambda: [rand(3, 4) * 4, torch.rand(3, 4, generator=gen,
                                                                          dtype=DT)]}),
    'mse_loss': (lambda x, t: torch.nn.functional.mse_loss(x, t, reduction='none'), 3,
                 {'smooth': lambda: [rand(3, 4), rand(4)]}),
    'smooth_l1_loss': (lambda x, t: torch.nn.functional.smooth_l1_loss(x, t, beta=1.0), 3,
                       {'smooth': lambda: [rand(3, 4) * 3, rand(3, 4)]}),
    'masked_mean_dim1': (lambda x, m: (x * m).sum(1) / m.sum(1), 1,
                         {'smooth': lambda: [rand(3, 4), (ints(3, 4, lo=0, hi=2) + torch.tensor(
                             [1.0, 0, 0, 0], dtype=DT)).clamp(max=1)]}),
    'agg_seq_mean_token_mean': (lambda x, m: ((x * m).sum(-1) / m.sum(-1)).mean(), 1,
                                {'smooth': lambda: [rand(3, 4), (ints(3, 4, lo=0, hi=2) + torch.tensor(
                                    [1.0, 0, 0, 0], dtype=DT)).clamp(max=1)]}),
}


def save(name, t):
    np.save(os.path.join(OUT, name + '.npy'), t.detach().numpy())


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    lines = []
    for op, spec in OPS.items():
        f, mask, cases = spec[0], spec[1], spec[2]
        for case, make in cases.items():
            ins = make()
            leaves = []
            for k, t in enumerate(ins):
                if mask >> k & 1 and case != 'specials':
                    t = t.clone().requires_grad_(True)
                leaves.append(t)
                save('%s.%s.in%d' % (op, case, k), t)
            out = f(*leaves)
            save('%s.%s.out' % (op, case), out)
            gm = 0
            if out.requires_grad:
                up = torch.arange(1, out.numel() + 1, dtype=DT).reshape(out.shape) / 4
                save('%s.%s.up' % (op, case), up)
                out.backward(up)
                for k, t in enumerate(leaves):
                    if t.requires_grad:
                        save('%s.%s.grad%d' % (op, case, k), t.grad)
                        gm |= 1 << k
            lines.append('%s %s %d %d %d' % (op, case, len(ins), gm, case == 'smooth'))
    with open(os.path.join(OUT, 'MANIFEST.txt'), 'w') as fh:
        fh.write('\n'.join(lines) + '\n')
    print('%d cases' % len(lines))


if __name__ == '__main__':
    main()
