"""tests/registry/torch_ref.py - PyTorch's side of the op registry: the helpers
the registry rows' PyTorch expressions name as R.<helper>, for the ops whose
PyTorch spelling needs more than one call or that mirror what tapegrad saves
for backward (so that an in-place edit fails backward on both sides alike).

Contract:
  - evaluate(row, inputs, args) evaluates a row's "torch" expression (from
    the manifest written by tests/registry/tg_registry) with the inputs bound
    to a, b, c, d and the parameters by name (dtypes as torch dtypes, shapes
    and dim lists as tuples), and returns a list of outputs (a tuple result
    becomes a list, one tensor a one-element list; None where tapegrad gives
    no output).
  - Helpers raise ContractError where tapegrad's documented contract refuses
    an input that PyTorch has no op for; NOTES collects the documented
    differences (docs/api.md "Differences from PyTorch") a helper met.
  - Used by tests/registry/torch_ops.py (every sample of every row) and
    tests/diff/tg_prog.py (the op programs).
"""
import builtins
import math

import torch
import torch.nn.functional as F

TORCH_DT = {'f32': torch.float32, 'f64': torch.float64, 'i64': torch.int64, 'bool': torch.bool,
            'bf16': torch.bfloat16}
DT_NAME = {v: k for k, v in TORCH_DT.items()}
NOTES = []   # documented differences met (names of tests/diff/tg_doc.py's DOCUMENTED)


class ContractError(Exception):
    """What tapegrad's documented contract refuses where PyTorch has no op."""


# ---- the saved-tensor behaviour of tapegrad's ops ---------------------------------------------

class _Scale(torch.autograd.Function):
    """x * k saving nothing, as tg_scale (PyTorch's mul keeps the number as a saved
    tensor, which makes a second backward fail where tapegrad's does not)."""
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class _Mean(torch.autograd.Function):
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


class _VarLike(torch.autograd.Function):
    """torch.var / torch.std with tapegrad's backward (ops/moments.c): 2 g (x - mean) / (n - c)
    and g (x - mean) / ((n - c) std), 0 where std is 0, the divisor not clamped."""

    @staticmethod
    def forward(ctx, a, dim, corr, keepdim, std):
        r = _var(a, dim, corr, keepdim, std)
        ctx.save_for_backward(a, r)
        ctx.args = (dim, corr, keepdim, std)
        return r

    @staticmethod
    def backward(ctx, g):
        a, r = ctx.saved_tensors
        dim, corr, keepdim, std = ctx.args
        if dim is None:
            dev, gk, rk, n = a - a.mean(), g, r, a.numel()
        elif a.dim() == 0:
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


class _GatherLast(torch.autograd.Function):
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


class _WhereAny(torch.autograd.Function):
    """where with a condition of any dtype (non-zero = true) that it saves,
    version-checked, as tg_where does. PyTorch's where needs a bool condition,
    which would be made with cond != 0, a copy: an in-place edit of the
    condition afterwards would then go unseen, where tapegrad's backward fails."""
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.save_for_backward(cond)
        ctx.shapes = (a.shape, b.shape)
        ctx.dtypes = (a.dtype, b.dtype)
        return torch.where(cond != 0, a, b)

    @staticmethod
    def backward(ctx, g):
        cond, = ctx.saved_tensors
        m = cond != 0
        z = torch.zeros((), dtype=g.dtype)
        ga = torch.where(m, g, z).sum_to_size(ctx.shapes[0]).to(ctx.dtypes[0])
        gb = torch.where(m, z, g).sum_to_size(ctx.shapes[1]).to(ctx.dtypes[1])
        return None, ga, gb


class _Keep(torch.autograd.Function):
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


# ---- helpers named by the rows ------------------------------------------------------------

def _integral(v):
    return math.isfinite(v) and v == math.floor(v) and abs(v) < 2.0 ** 63


def reduction(r):
    """tg_reduction's name in PyTorch (TG_REDUCTION_BATCHMEAN, 3: 'batchmean', which
    F.kl_div alone takes; the other losses raise ValueError, as tapegrad refuses it)."""
    if r not in (0, 1, 2, 3):
        raise ValueError('reduction %d' % r)
    return ('none', 'mean', 'sum', 'batchmean')[r]


def scale(a, k):
    if a.is_floating_point():
        return _Scale.apply(a, k)
    return a * _num(a, k)


def add_scalar(a, k):
    return a + _num(a, k)


def _num(a, v):
    """A C double as tapegrad reads it for an integer tensor: an integral value is
    an integer (a Python int), any other a float."""
    return int(v) if not a.is_floating_point() and _integral(v) else v


def clamp(a, lo, hi):
    # an infinite bound is no bound (None), an integral one an int for integer tensors
    return torch.clamp(a, min=None if lo == -math.inf else _num(a, lo),
                       max=None if hi == math.inf else _num(a, hi))


class _OfDifference(torch.autograd.Function):
    """loss(a, b) of d = a - b (PyTorch's values and gradient formula, its kinks
    included) saving d only, as tapegrad's composite mse_loss and smooth_l1_loss
    (their graphs start with tg_sub): an in-place edit of a or b after the
    forward does not fail their backward, where PyTorch's loss node, which
    saves both, does (docs/api.md, Losses)."""
    @staticmethod
    def forward(ctx, a, b, f, kw):
        d = a - b
        ctx.save_for_backward(d)
        ctx.f, ctx.kw, ctx.shapes = f, kw, (a.shape, b.shape)
        return f(d, torch.zeros_like(d), **kw)

    @staticmethod
    def backward(ctx, g):
        d, = ctx.saved_tensors
        with torch.enable_grad():
            x = d.detach().requires_grad_(True)
            gd, = torch.autograd.grad(ctx.f(x, torch.zeros_like(x), **ctx.kw), x, g)

        def to(shape, t):
            while t.dim() > len(shape):
                t = t.sum(0)
            for i, n in enumerate(shape):
                if n == 1 and t.shape[i] != 1:
                    t = t.sum(i, keepdim=True)
            return t
        return to(ctx.shapes[0], gd), to(ctx.shapes[1], -gd), None, None


def of_difference(f, a, b, **kw):
    if not (a.is_floating_point() and b.is_floating_point()):
        return f(a, b, **kw)                      # PyTorch's refusal
    torch.broadcast_shapes(a.shape, b.shape)      # raises as PyTorch for shapes that do not broadcast
    return _OfDifference.apply(a, b, f, kw)


def pow(a, b):   # noqa: A001  (the op's name)
    """torch.pow with float operands of two dtypes, or an i64 one with a float
    one, converted to the promoted dtype first, as tapegrad does (a recorded
    conversion): PyTorch computes the exponent's gradient with the log of the
    base in the base's own dtype, an f32 log for an f32 base with an f64
    exponent, and for an i64 base (its default float dtype) (docs/api.md "Type
    promotion")."""
    ints = (torch.int64,)
    if a.dtype != b.dtype and (a.is_floating_point() or a.dtype in ints) and \
            (b.is_floating_point() or b.dtype in ints):
        dt = torch.result_type(a, b)
        a, b = a.to(dt), b.to(dt)
    return torch.pow(a, b)


def pow_scalar(a, e):
    return torch.pow(a, _num(a, e))


def _nonfinite_grad(a):
    if a.requires_grad and a.is_floating_point() and not bool(torch.isfinite(a).all()):
        NOTES.append('prod-nonfinite')


def prod(a, dim=None, keepdim=False):
    _nonfinite_grad(a)
    return torch.prod(a) if dim is None else torch.prod(a, dim, keepdim=bool(keepdim))


def cumprod(a, dim):
    _nonfinite_grad(a)
    return torch.cumprod(a, dim)


class _Discounted(torch.autograd.Function):
    """The trainers' loop, saving nothing (as tapegrad's node: a second backward
    needs no retain_graph); its backward is the loop the other way."""
    @staticmethod
    def forward(ctx, a, gamma, dim):
        ctx.gamma, ctx.dim = gamma, dim
        return _discounted_loop(a, gamma, dim, True)

    @staticmethod
    def backward(ctx, g):
        return _discounted_loop(g, ctx.gamma, ctx.dim, False), None, None


def _discounted_loop(a, gamma, dim, reverse):
    x = a.movedim(dim, 0)
    out, acc = [], None
    for j in (reversed(range(x.shape[0])) if reverse else range(x.shape[0])):
        acc = x[j] if acc is None else x[j] + gamma * acc
        out.append(acc)
    if reverse:
        out = out[::-1]
    return (torch.stack(out) if out else x).movedim(0, dim).clone()   # not a view


def discounted_cumsum(a, gamma, dim):
    """y_j = a_j + gamma y_{j+1} along dim (no PyTorch op: the trainers' loop)."""
    if not math.isfinite(gamma):
        raise ValueError('discounted_cumsum: gamma must be finite')
    if a.dim() == 0:
        if dim not in (-1, 0):
            raise IndexError('dim %d out of range for a 0-d tensor' % dim)
        return a.clone()
    if not a.is_floating_point():
        raise TypeError('discounted_cumsum: a float tensor')
    a.movedim(dim, 0)   # raises for a dim out of range
    return _Discounted.apply(a, gamma, dim)


def norm(a, p, dim=None, keepdim=False):
    if not (p in (0.0, 1.0, 2.0) or math.isinf(p) or math.isnan(p)):
        NOTES.append('norm-p-precision')
    if dim is None:
        return torch.linalg.vector_norm(a, p)
    return torch.linalg.vector_norm(a, p, dim, keepdim=bool(keepdim))


def gelu(a, approximate):
    if approximate not in (0, 1):
        raise ValueError('approximate %d' % approximate)
    return F.gelu(a, approximate='tanh' if approximate else 'none')


def scale_(a, k):
    if a.is_floating_point():
        return a.copy_(_Scale.apply(a, k))
    return a.mul_(k)


def mean(a, dim=None, keepdim=False):
    if not a.is_floating_point() or (dim is not None and not -max(a.dim(), 1) <= dim <
                                     max(a.dim(), 1)):
        return torch.mean(a) if dim is None else torch.mean(a, dim, keepdim=keepdim)
    return _Mean.apply(a, dim, bool(keepdim))


def var(a, dim, corr, keepdim, std):
    """tg_var/tg_std (dim None: all elements) with tapegrad's degenerate-case gradient."""
    if not (corr >= 0 and math.isfinite(corr)):
        raise ValueError('correction %g' % corr)
    n = a.numel() if dim is None else (a.shape[dim] if a.dim() else 1)
    corr_i = int(corr) if corr == int(corr) else corr
    if n - corr <= 0 and a.requires_grad:
        NOTES.append('var-degenerate')
        return _VarLike.apply(a, dim, corr_i, bool(keepdim), std)
    return _var(a, dim, corr_i, bool(keepdim), std)


def _var(a, dim, corr, keepdim, std):
    """torch.var/std; a fractional correction (PyTorch 1.13 takes integers only, 2.x any
    number) as its formula sum((a - mean)^2) / (n - correction)."""
    if dim is None:
        a, dim, keepdim = a.reshape(-1), 0, False
    if isinstance(corr, int):
        f = torch.std if std else torch.var
        return f(a, dim, correction=corr, keepdim=keepdim)
    n = a.shape[dim] if a.dim() else 1
    # PyTorch 2.x's divisor for a fractional correction: max(0, n - correction)
    v = ((a - a.mean(dim, keepdim=True)) ** 2).sum(dim, keepdim=keepdim) / max(0.0, n - corr)
    return v.sqrt() if std else v


def dims(f, a, dims_, keepdim, *args):
    """A reduction over several dims as tapegrad computes it: f (a one-dim
    reduction of this module or of torch, f(x, dim, *args, keepdim)) along the
    last dim of a with dims_ moved last and merged (all dims for an empty
    dims_, as PyTorch's dim=(); PyTorch 1.13's logsumexp raises there), viewed
    with keepdim's shape when asked."""
    nd = a.dim()
    if not a.is_floating_point():
        return f(a, dims_ or None, *args, keepdim)   # PyTorch's refusal
    red = [d % max(nd, 1) for d in dims_] if dims_ else list(range(nd))
    if len(set(red)) != len(red) or any(not -max(nd, 1) <= d < max(nd, 1) for d in dims_):
        return torch.sum(a, dim=tuple(dims_))    # raises as PyTorch does
    if nd == 0:
        return f(a.reshape(1), 0, *args, False)
    kept = [d for d in range(nd) if d not in red]
    n = 1
    for d in red:
        n *= a.shape[d]
    w = a.permute(kept + red).reshape([a.shape[d] for d in kept] + [n])
    r = f(w, -1, *args, False)
    if keepdim:
        r = r.reshape([1 if d in red else a.shape[d] for d in range(nd)])
    return r


def _mean_dim(x, dim, keepdim):
    return mean(x, dim, keepdim)


def _logsumexp_dim(x, dim, keepdim):
    return torch.logsumexp(x, dim, keepdim=keepdim)


def _var_dim(x, dim, corr, std, keepdim):
    return var(x, dim, corr, keepdim, std)


def where(cond, a, b):
    if a.requires_grad or b.requires_grad:
        return _WhereAny.apply(cond, a, b)
    return torch.where(cond != 0, a, b)


def masked_fill(a, mask, value):
    m = mask if mask.dtype == torch.bool else mask != 0
    if torch.broadcast_shapes(a.shape, m.shape) != a.shape:
        raise RuntimeError('the mask would change the input\'s shape')
    return a.masked_fill(m, value)


def cmp_scalar(f, a, v):
    # tapegrad's scalar is a double: a whole number compares as an integer (t == 2)
    if _integral(v):
        v = int(v)
    return f(a, v)


def int_division(f, a, b):
    """tg_remainder / tg_floor_divide: PyTorch's, with a zero integer divisor
    refused (its CPU raises ZeroDivisionError) and INT64_MIN // -1 wrapping;
    floor_divide not differentiable (PyTorch 1.13 records a node whose
    backward raises: its result is compared detached)."""
    if a.is_floating_point() or b.is_floating_point() or \
            (a.dtype == torch.bool and b.dtype == torch.bool):
        if f is torch.floor_divide:
            return f(a.detach(), b.detach())
        return f(a, b)
    a, b = a.to(torch.int64), b.to(torch.int64)
    ab, bb = torch.broadcast_tensors(a, b)
    if bool((bb == 0).any()) and ab.numel():
        raise RuntimeError('ZeroDivisionError')
    if bool(((ab == -2 ** 63) & (bb == -1)).any()):
        # PyTorch's CPU kernel traps there; tapegrad wraps to INT64_MIN
        NOTES.append('int-min-division')
        out = []
        for x, y in zip(ab.reshape(-1).tolist(), bb.reshape(-1).tolist()):
            v = x % y if f is torch.remainder else x // y
            out.append((v + 2 ** 63) % 2 ** 64 - 2 ** 63)
        return torch.tensor(out, dtype=torch.int64).reshape(ab.shape)
    return f(a, b)


def slice(a, dim, start, end, step):   # noqa: A001  (the op's name)
    if a.dim() == 0 or not -a.dim() <= dim < a.dim():
        raise IndexError('dim %d out of range' % dim)
    dim %= a.dim()
    if step <= 0:
        raise ValueError('step must be greater than zero')
    # PyTorch 1.13 takes INT64_MIN for a symbolic size: use an equivalent bound
    lo, hi = -2 ** 62, 2 ** 62
    start, end = max(lo, min(hi, start)), max(lo, min(hi, end))
    return a[(builtins.slice(None),) * dim + (builtins.slice(start, end, step),)]


def from_data(vals, shape, dtype):
    n = 1
    for s in shape:
        if s < 0:
            raise ContractError('negative size')
        n *= s
    if len(shape) > 8:
        raise ContractError('more than 8 dims')
    if n and not vals:
        raise ContractError('no data')
    v = [vals[i % len(vals)] for i in range(n)] if n else []
    if dtype == torch.int64:   # as tapegrad's registry row converts a double: saturating
        v = [0 if math.isnan(x) else 2 ** 63 - 1 if x >= 9.2e18 else -2 ** 63 if x <= -9.2e18
             else int(x) for x in v]
    return torch.tensor(v, dtype=dtype).reshape(shape).clone()


class Random:
    """A result whose values come from tapegrad's generator: only its dtype and
    shape are compared."""
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def random(shape, dtype):
    if any(s < 0 for s in shape) or len(shape) > 8:
        raise ContractError('bad shape')
    return Random(shape, dtype)


def to_dtype(a, dtype):
    if a.dtype == dtype:
        return a
    if dtype == torch.int64 and a.is_floating_point():
        with torch.no_grad():
            big = 9.2e18
            odd = torch.isnan(a) | (a.abs() >= big)
            if bool(odd.any()):   # tapegrad saturates (NaN -> 0); PyTorch: the CPU's
                NOTES.append('float-to-int')
                out = torch.where(torch.isnan(a), torch.zeros((), dtype=a.dtype), a)
                hi = (out >= big).contiguous()
                lo = (out <= -big).contiguous()
                out = out.clamp(-big, big).to(torch.int64)
                out[hi] = 9223372036854775807
                out[lo] = -9223372036854775808
                return out.contiguous()
    return a.to(dtype, memory_format=torch.contiguous_format)


def gather_last(a, idx):
    if not (a.is_floating_point() and idx.dtype == torch.int64):
        return torch.gather(a, -1, idx)
    return _GatherLast.apply(a, idx)


def masked_mean(x, mask, dim, all_):
    xm = x * mask
    mb = mask.expand(xm.shape) if mask.dim() <= xm.dim() else mask
    if all_:
        return xm.sum() / mb.sum()
    return xm.sum(dim) / mb.sum(dim)


def agg_loss(loss, mask, mode):
    if mode not in (0, 1, 2):
        raise ValueError('mode %d' % mode)
    if loss.dim() == 0:
        raise ContractError('0-d loss')
    if mode == 0:
        return masked_mean(loss, mask, 0, True)
    if mode == 1:
        return (loss * mask).sum(-1).mean()
    return masked_mean(loss, mask, -1, False).mean()


def logprob(z, y, impl, T, ignore, chunk, entropy, egrad, lse=False):
    """tapegrad's log-prob/entropy contract (include/tapegrad/logprob.h) in
    PyTorch ops: x = z/T, logprob = log_softmax(x)[y], entropy = -sum(p log p),
    lse = logsumexp(x); rows whose target is ignore give 0 and no gradient."""
    if not (z.is_floating_point() and y.dtype == torch.int64):
        raise ContractError('dtype')
    if z.dim() < 1 or tuple(y.shape) != tuple(z.shape[:-1]) or z.shape[-1] == 0:
        raise ContractError('shape')
    if not (math.isfinite(T) and T > 0) or chunk < 0 or impl not in (0, 1):
        raise ContractError('value')
    V = z.shape[-1]
    N = y.numel()
    mask = y != ignore
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
        if impl == 0:
            z = _Keep.apply(z)
        elif 0 < chunk < N:
            z2 = z.reshape(N, V)
            if z2.data_ptr() == z.data_ptr() and z2._base is not None:
                z = _Keep.apply(z2).reshape(z.shape)
    if impl == 1:   # as the composite path: z itself for T = 1, else z * (1/T)
        x = z if T == 1.0 else _Scale.apply(z, 1.0 / T)
    else:
        x = z / T
    m = mask.unsqueeze(-1)
    if impl == 1 and bool(mask.all()):
        xs = x   # the composite path masks the logits only when some row is ignored
    else:
        xs = torch.where(m, x, torch.zeros((), dtype=x.dtype))
    ls = torch.log_softmax(xs, -1)
    ys = torch.where(mask, y, torch.zeros((), dtype=y.dtype))
    zero = torch.zeros((), dtype=x.dtype)
    lp = torch.where(mask, ls.gather(-1, ys.unsqueeze(-1)).squeeze(-1), zero)
    ent = None
    if entropy:
        # -sum(p log p) with its own log_softmax, as the composite path does (no
        # node shared with the log-prob's graph)
        p = torch.softmax(xs, -1)
        ls2 = torch.log_softmax(xs, -1)
        s = (p * torch.where(p > 0, ls2, zero)).sum(-1)
        # the fused op gives +0 for a certain outcome, the composite path -0 (a neg)
        ent = torch.where(mask, -s if impl == 1 else zero - s, zero)
        if not egrad:
            ent = ent.detach()
    if not lse:
        return lp, ent
    return lp, ent, torch.where(mask, torch.logsumexp(xs, -1), zero)


def linear_logprob(h, w, y, b, impl, T, ignore, entropy, egrad):
    """tg_linear_logprob_entropy: the logits h @ w^T (+ b), then logprob with lse."""
    if h.dim() < 1 or w.dim() != 2 or w.shape[1] != h.shape[-1] or \
            (b is not None and tuple(b.shape) != (w.shape[0],)):
        raise ContractError('shape')
    z = torch.matmul(h, w.t())
    if b is not None:
        z = z + b
    return logprob(z, y, impl, T, ignore, 0, entropy, egrad, lse=True)


def linear_loss(h, w, y, b, T, ignore, egrad):
    """tg_linear_loss with the registry's per-token loss (rows_loss.c's
    loss_chunk): the sum over rows of -lp + 0.3 exp(lp) - 0.1 H + 0.05 lse^2,
    lp, H, lse from the logits h @ w^T (+ b); the entropy detached without
    egrad. The gradients come from forward: nothing is kept but the inputs."""
    lp, H, lse = linear_logprob(h, w, y, b, 1, T, ignore, 1, egrad)
    return (-lp + 0.3 * torch.exp(lp) - 0.1 * H + 0.05 * lse * lse).sum()


# ---- evaluating a row ----------------------------------------------------------------------

def _param(kind, v):
    if kind == 'T':
        return TORCH_DT[v]
    if kind in 'SD':
        return tuple(v)
    if kind == 'r':
        return float(v)
    if kind == 'V':
        return list(v)
    return int(v)


class _Helpers:
    """The namespace the expressions call R.<name> in."""
    def __getattr__(self, name):
        return globals()[name]


def evaluate(row, inputs, args):
    """The outputs of row['torch'] on inputs (tensors or None) and args (the
    sample's parameter values by name): a list."""
    ns = {'torch': torch, 'F': F, 'R': _Helpers(), 'math': math, 'a': None, 'b': None,
          'c': None, 'd': None}
    for name, t in zip('abcd', inputs):
        ns[name] = t
    for name, kind, _slot in row['params']:
        ns[name] = _param(kind, args[name])
    r = eval(row['torch'], ns)   # noqa: S307  (the registry's own expressions)
    if isinstance(r, (tuple, list)):
        return list(r)
    return [r]


def topk(a, k, dim, largest):
    """tg_topk: PyTorch's topk (sorted) with equal elements lowest index first. PyTorch
    leaves that order unspecified, so its topk is called only for its checks (k, dim,
    dtype: it raises where tapegrad must refuse) and the result is the first k of the
    stable sort, the same values with tapegrad's indices."""
    torch.topk(a.detach(), k, dim, bool(largest), True)
    v, i = torch.sort(a, dim=dim, descending=bool(largest), stable=True)
    if a.dim() == 0:
        return v, i
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


def index(a, dim, idx):
    """tg_index: a[:, ..., idx] with the i64 index idx at dim. A bool index (PyTorch's
    mask indexing) is tg_masked_select's job: tapegrad's contract refuses it."""
    if idx.dtype == torch.bool:
        raise ContractError('a bool index is a mask: tg_masked_select')
    if a.dim() == 0 or not -a.dim() <= dim < a.dim():
        raise IndexError('dim %d out of range for %d dims' % (dim, a.dim()))
    return a[(builtins.slice(None),) * (dim % a.dim()) + (idx,)]


class _MaskedSelect(torch.autograd.Function):
    """masked_select keeping neither its input nor the mask version-checked, as
    tg_masked_select (which saves the selected positions; PyTorch saves both, so an
    in-place edit of either afterwards fails its backward). The copy of the mask
    stands for those positions: saved, so a backward without retain_graph frees
    it, as tapegrad's."""
    @staticmethod
    def forward(ctx, x, mask):
        ctx.shape = x.shape
        ctx.save_for_backward(torch.broadcast_tensors(x, mask)[1].clone())
        return torch.masked_select(x, mask)

    @staticmethod
    def backward(ctx, g):
        m, = ctx.saved_tensors
        gx = torch.zeros(m.shape, dtype=g.dtype).masked_scatter(m, g)
        return gx.sum_to_size(ctx.shape), None


def masked_select(a, mask):
    if a.requires_grad and mask.dtype == torch.bool:
        return _MaskedSelect.apply(a, mask)
    return torch.masked_select(a, mask)
