"""tests/diff/tg_doc.py - the documented differences between tapegrad and
PyTorch that the differential suite (tg_diff.py) accepts.

Contract: DOCUMENTED lists (name, reason) pairs, one sentence each, in the
order tg_diff.py prints them with their counts; documented() returns the name
of the entry that explains a disagreement, or None (then it is a failure).
Each predicate is narrow: it looks at the op, its inputs and both outcomes, so
that a real bug of the same op is not excused by accident.
"""
import re

DOCUMENTED = [
    ('integer-ops', "tapegrad's integer arithmetic is add/sub/mul/maximum/minimum/pow/remainder/"
     'floor_divide, neg/abs/sign/square/clamp/scale/add_scalar/rounding and the ops whose '
     'entries say they take i64 or bool (sums, cumsum/cumprod, sorting, selection, the '
     'in-place arithmetic); its other ops take f32/f64 tensors only; PyTorch computes on '
     'integer tensors there too'),
    ('int-min-division', 'INT64_MIN floor-divided by -1 wraps to INT64_MIN (remainder 0) in '
     "tapegrad; PyTorch's CPU kernel traps (SIGFPE), so the suite computes it with Python's "
     'floor rules'),
    ('unread-view-leaf', 'an in-place op with grad on a view made before its base required grad, '
     'after an in-place op recorded on the base: PyTorch 1.13 refuses it as "a leaf Variable '
     'that requires grad" unless the view\'s grad_fn was read in between (reading remakes it); '
     'tapegrad treats the view as the interior tensor it is either way'),
    ('floor-divide-grad', "tg_floor_divide's result never requires grad; PyTorch 1.13 records "
     'a node whose backward raises ("derivative for aten::floor_divide is not implemented")'),
    ('var-degenerate', 'where n - correction <= 0 (a NaN or inf variance) tapegrad\'s var/std '
     'gradient is its formula, 2 g (x - mean) / (n - correction) (NaN where that is 0 * inf); '
     "PyTorch 1.13's is inf there"),
    ('bool-argmax', 'tg_argmax_dim takes a bool tensor (false < true); PyTorch 1.13 has no '
     'argmax kernel for bool'),
    ('matmul-shapes', 'tg_matmul takes 2-D operands, equal batch dims, or a batched left '
     'operand with a 2-D right one; PyTorch also takes 1-D operands and broadcasts batch dims'),
    ('f32-summation', 'f32 sums and means accumulate in double in tapegrad, in f32 in '
     'PyTorch: where the terms cancel, the two differ by up to the f32 rounding of the '
     "terms' magnitude ((n + 1) 2^-24 sum |x|), tapegrad's being the closer"),
    ('grad-layout', "a leaf's .grad is a contiguous tensor; PyTorch's follows the leaf's "
     'strides (a transposed leaf gets a transposed .grad), so a view of it that tapegrad makes '
     'can need a reshape in PyTorch'),
    ('gather-index-shape', "tg_gather's index must have the input's exact leading shape, and "
     "tg_gather_dim's and tg_scatter_add's the input's sizes but along dim; PyTorch's gather "
     'and scatter_add also take smaller sizes there'),
    ('inplace-overlap', "an in-place op whose other operand overlaps its target reads all of "
     "other before writing; PyTorch refuses partial overlap (the suite compares with "
     "PyTorch on a copy of other)"),
    ('nograd-view-state', "reading whether a view made under no-grad requires grad or is a leaf, "
     "after its storage's version moved, is an error in PyTorch (it remakes the view's grad_fn "
     "to answer); tg_requires_grad and tg_is_leaf answer, and the view is refused where it is "
     "used with grad mode on, as in PyTorch"),
    ('fill-overlap-recorded', 'a recorded fill_ of a tensor with overlapping elements (an expand '
     'view of a tensor that requires grad) is refused (TG_ERR_LAYOUT); PyTorch accepts it and '
     'fails the backward through it'),
    ('validate-first', 'tg_backward checks every saved tensor before running any node, so it '
     'reports a modified saved tensor even where a custom backward that PyTorch runs first '
     'would have failed'),
    ('float-to-int', 'tg_to_dtype from f32/f64 to i64 saturates (NaN gives 0, infinities and '
     'out-of-range values the nearest i64); PyTorch gives what the CPU gives (INT64_MIN on x86)'),
    ('grad-alias', 'a .grad read with tg_grad keeps its values when a later backward adds to the '
     'leaf, and the upstream gradient given to tg_backward is never written to (tapegrad gives '
     'the leaf a new gradient tensor while another reference exists); PyTorch adds into the '
     'same tensor in place, and may adopt the upstream gradient (or a view of it) as .grad'),
    ('dead-leaf-moved', 'a leaf the program no longer holds gets no gradient and is not '
     "checked; PyTorch's graph keeps it alive and fails the backward when it was moved into "
     'the graph interior since (a view marked requires_grad whose base was then modified '
     'in place with grad)'),
    ('max-dims', 'tensors have at most 8 dims (TG_MAX_DIMS; TG_ERR_VALUE beyond); PyTorch '
     'allows 64'),
    ('bool-exponent-grad', 'tg_pow with a bool exponent is differentiable (the bool converted to '
     "the base's float dtype); PyTorch 1.13's backward of pow fails on a bool exponent"),
    ('prod-nonfinite', 'the gradients of prod and cumprod are the exact products of the other '
     "elements, also where the input holds an infinity or NaN; PyTorch's formula divides by the "
     'input (with two or more zeros it gives 0), so the two differ where inf or NaN meets 0'),
    ('bce-broadcast', 'tg_binary_cross_entropy_with_logits broadcasts target to input as tg_sub '
     'does; PyTorch requires equal sizes'),
    ('pos-weight-grad', 'pos_weight of tg_binary_cross_entropy_with_logits gets a gradient when '
     'it requires grad; PyTorch 1.13 refuses a pos_weight that requires grad'),
    ('norm-p-precision', "tg_norm for a p other than 0, 1, 2 and +-inf is (sum |x|^p)^(1/p) "
     "accumulated in double; PyTorch 1.13's CPU kernel is off by up to about 1e-7 relative in "
     'float64 there'),
    ('label-smoothing-range', 'tg_cross_entropy refuses a label_smoothing outside [0, 1] '
     '(TG_ERR_VALUE), as PyTorch 2.x does; PyTorch 1.13 takes it'),
    ('failed-backward-partial', 'a failed tg_backward changes no .grad and frees nothing; '
     'PyTorch may have accumulated some gradients and freed some saved tensors before it '
     'raised, so a later backward can fail there and not in tapegrad'),
]

def _data_inputs(op, inputs):
    """The inputs of a registry row that carry data (its differentiable ones: not a
    condition, an index or targets); all of them for a row without a gradient."""
    from tg_prog import ROWS
    diff = ROWS[op]['diff'] if op in ROWS else 0
    if not diff:
        return inputs
    return [t for k, t in enumerate(inputs) if diff >> k & 1]


# PyTorch's refusal of a view made under no-grad once its base's version moved
_NOGRAD_VIEW = 'A view was created in no_grad mode and its base or another view of its base'

DISABLED = set()   # names turned off (tg_diff.py --no-doc), to see what they hide


def _grad_of(t):
    try:
        return t.grad if t.is_leaf else None
    except RuntimeError:
        return None


def documented(kind, ins, inputs, cst, exc, ctx, what=None):
    name = _documented(kind, ins, inputs, cst, exc, ctx, what)
    return None if name in DISABLED else name


def _documented(kind, ins, inputs, cst, exc, ctx, what=None):
    """The name of the documented difference behind a disagreement, or None.
    kind: 'status' (tapegrad status cst vs PyTorch exception exc) or 'value'."""
    if kind == 'value':
        regs = set()
        if what:
            regs = {int(m) for m in re.findall(r'\br(\d+)\b', what)}
        if ins is not None:
            regs |= {r for r in ins['src'] if r is not None}
        if regs & ctx['tainted']:
            return 'grad-alias'
        leaves = {int(m) for m in re.findall(r'\.grad of r(\d+)', what or '')}
        if leaves & ctx.get('aliased_leaves', set()):
            return 'grad-alias'
        if ctx.get('partial_backward') and what and '.grad of' in what:
            return 'failed-backward-partial'
        if what and _NOGRAD_VIEW in what and 'autograd state' in what:
            return 'nograd-view-state'
        for name in ('prod-nonfinite', 'norm-p-precision'):   # noted by torch_ref's helpers
            if name in ctx.get('docs', ()):
                return name
        return None
    op = ins['op']
    if op == 'backward' and cst == 'TG_OK' and exc is not None and \
            'leaf variable has been moved into the graph interior' in str(exc):
        # tapegrad fails the same way for every leaf it still has (tg__node_check)
        return 'dead-leaf-moved'
    if op == 'fill_' and cst == 'TG_ERR_LAYOUT' and exc is None:
        return 'fill-overlap-recorded'
    if op == 'backward' and cst in ('TG_ERR_INPLACE', 'TG_ERR_FREED') and exc is not None and \
            'custom function refused in backward' in str(exc):
        return 'validate-first'
    second = exc is not None and 'second time' in str(exc)
    if op == 'backward' and ctx.get('failed_backward') and (
            (cst in ('TG_OK', 'TG_ERR_FREED', 'TG_ERR_INPLACE') and second) or
            (cst == 'TG_ERR_FREED' and exc is None)):
        return 'failed-backward-partial'
    if op == 'argmax_dim' and cst == 'TG_OK' and exc is not None and inputs and \
            inputs[0] is not None and str(inputs[0].dtype) == 'torch.bool':
        return 'bool-argmax'
    if cst == 'TG_ERR_DTYPE' and exc is None and is_row(op):
        data = [t for t in _data_inputs(op, inputs) if t is not None]
        if any(not t.is_floating_point() for t in data):
            return 'integer-ops'
    named = op_difference(op, ins, inputs, cst, exc)
    if named:
        return named
    if op == 'matmul' and cst == 'TG_ERR_SHAPE' and exc is None:
        a, b = inputs[0], inputs[1]
        if a.dim() < 2 or b.dim() < 2 or (b.dim() > 2 and a.shape[:-2] != b.shape[:-2]):
            return 'matmul-shapes'
    if op == 'gather' and cst == 'TG_ERR_SHAPE' and exc is None:
        a, idx = inputs[0], inputs[1]
        if idx.dim() == a.dim() and all(idx.shape[d] <= a.shape[d] for d in range(a.dim() - 1)):
            return 'gather-index-shape'
    if op in ('gather_dim', 'scatter_add') and cst == 'TG_ERR_SHAPE' and exc is None:
        a, idx, d = inputs[0], inputs[1], ins.get('dim', 0) if ins else 0
        if a.dim() and idx.dim() == a.dim():
            d %= a.dim()
            if all(idx.shape[k] <= a.shape[k] for k in range(a.dim()) if k != d):
                return 'gather-index-shape'
    if op == 'view' and cst == 'TG_OK' and exc is not None and \
            'view size is not compatible' in str(exc) and inputs and inputs[0] is not None and \
            any(t is not None and _grad_of(t) is inputs[0] for t in ctx.get('regs', ())):
        return 'grad-layout'
    return None


def is_row(op):
    from tg_prog import ROWS
    return op in ROWS


def op_difference(op, ins, inputs, cst, exc):
    """The documented difference of one op's call (a registry row: tapegrad's status
    cst, what PyTorch raised, exc) that programs and the per-op check
    (tests/registry/torch_ops.py) share, or None."""
    msg = str(exc) if exc is not None else ''
    if cst == 'TG_OK' and 'a leaf Variable that requires grad is being used in an in-place' in msg \
            and inputs and inputs[0] is not None and inputs[0]._base is not None:
        return 'unread-view-leaf'
    if 'derivative for aten::floor_divide is not implemented' in msg:
        return 'floor-divide-grad'
    if exc is None and cst == 'TG_ERR_VALUE' and ins is not None and \
            len(ins.get('shape') or ins.get('repeats') or []) > 8:   # tg_repeat: a dim per repeat
        return 'max-dims'
    if 'bool tensor' in msg and (op == 'pow' or op == 'backward') and cst == 'TG_OK':
        return 'bool-exponent-grad'
    if op == 'binary_cross_entropy_with_logits' and 'Target size' in msg:
        return 'bce-broadcast'
    if op == 'binary_cross_entropy_with_logits' and 'pos_weight' in msg:
        return 'pos-weight-grad'
    if op == 'cross_entropy' and cst == 'TG_ERR_VALUE' and exc is None and ins is not None and \
            not 0 <= ins.get('label_smoothing', 0) <= 1:
        return 'label-smoothing-range'
    return None
