"""The library's ops as data, written by scripts/gen_python_ops.py from
include/tapegrad/tensor.h and ops.h: do not edit by hand (regenerate;
python/tests/test_ops.py fails when this is stale)."""

ENUMS = {'tg_agg_mode': {'seq_mean_token_mean': 2, 'seq_mean_token_sum': 1, 'token_mean': 0},
 'tg_device': {'cpu': 0, 'cuda': 1},
 'tg_dtype': {'bf16': 4, 'bool': 3, 'f32': 0, 'f64': 1, 'i64': 2},
 'tg_gelu_approx': {'none': 0, 'tanh': 1},
 'tg_reduction': {'batchmean': 3, 'mean': 1, 'none': 0, 'sum': 2}}

# the prefix of each enum's C names (lower-cased), for names given that way
ENUM_PREFIXES = {'tg_agg_mode': 'tg_agg_',
 'tg_device': 'tg_',
 'tg_dtype': 'tg_',
 'tg_gelu_approx': 'tg_gelu_',
 'tg_reduction': 'tg_reduction_'}

OPS = {'abs': {'doc': '|t|. Gradient g * sign(t): 0 at 0.',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'add': {'doc': 'elementwise, binary with broadcasting',
         'header': 'ops.h',
         'params': [('a', 'tensor'), ('b', 'tensor')],
         'returns': 'tensor'},
 'add_': {'doc': 'in-place (bump the version counter, record op name and call site)\n'
                 't may be a view (the write goes to the shared storage). other is broadcast\n'
                 "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
                 "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
                 "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
                 "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
                 'gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n'
                 'grad, a view of one, a view made with grad mode off, a view returned by a\n'
                 'custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n'
                 'their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n'
                 'computed in the promoted dtype and written into t converted, as PyTorch (an\n'
                 'f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where '
                 'the\n'
                 "promoted dtype is of a higher category than t's (a float into an i64 or\n"
                 'bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n'
                 'or bool t is always refused ("result type f32 can\'t be cast to the desired\n'
                 'output type i64"). pow_ of two i64 tensors computes in i64 as tg_pow\n'
                 '(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n'
                 'PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n'
                 "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
                 'pow_ that copy always and t itself after the write (its result), so that\n'
                 'an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n'
                 'operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n'
                 "recorded, it is saved as it was, and the write then fails backward's\n"
                 "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
                 'marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n'
                 "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
                 'overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written '
                 'and\n'
                 'nothing changes on failure (but for a CUDA kernel failing while it writes:\n'
                 'TG_ERR_CUDA).',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('other', 'tensor')],
          'returns': 'status'},
 'add_scalar': {'doc': 't * k and t + k for a constant k.',
                'header': 'ops.h',
                'params': [('t', 'tensor'), ('k', 'double')],
                'returns': 'tensor'},
 'agg_loss': {'doc': 'How RL trainers turn a per-token loss (..., tokens) and its mask into '
                     'one\n'
                     'number: TG_AGG_TOKEN_MEAN sum(loss * mask) / sum(mask) over everything;\n'
                     "TG_AGG_SEQ_MEAN_TOKEN_SUM the mean over sequences of each one's masked "
                     'sum;\n'
                     "TG_AGG_SEQ_MEAN_TOKEN_MEAN the mean over sequences of each one's masked\n"
                     "mean (a sequence with an all-zero mask makes it NaN, as the trainers'\n"
                     'formula). A 0-d tensor. Errors: TG_ERR_VALUE (mode), TG_ERR_DIM (0-d '
                     'loss),\n'
                     'those of the ops.',
              'header': 'ops.h',
              'params': [('loss', 'tensor'), ('mask', 'tensor'), ('mode', 'enum:tg_agg_mode')],
              'returns': 'tensor'},
 'all': {'doc': 'Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n'
                'any dtype; false / true for an empty line. Not differentiable.',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'all_dim': {'doc': 'Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n'
                    'any dtype; false / true for an empty line. Not differentiable.',
             'header': 'ops.h',
             'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
             'returns': 'tensor'},
 'amax': {'doc': 'Largest / smallest element (NaN if there is one). Gradient split evenly\n'
                 'among the elements equal to the result; NaN for a line holding a NaN (as\n'
                 "PyTorch's amax). TG_ERR_SHAPE for an empty line.",
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'amax_dim': {'doc': 'Largest / smallest element (NaN if there is one). Gradient split evenly\n'
                     'among the elements equal to the result; NaN for a line holding a NaN '
                     '(as\n'
                     "PyTorch's amax). TG_ERR_SHAPE for an empty line.",
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'amax_dims': {'doc': 'Over several dims (as tg_sum_dims): the gradient is split evenly among '
                      'all\n'
                      "the elements of the reduced set equal to the result, as PyTorch's.",
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('dims', 'ints'), ('keepdim', 'bool')],
               'returns': 'tensor'},
 'amin': {'doc': 'Largest / smallest element (NaN if there is one). Gradient split evenly\n'
                 'among the elements equal to the result; NaN for a line holding a NaN (as\n'
                 "PyTorch's amax). TG_ERR_SHAPE for an empty line.",
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'amin_dim': {'doc': 'Largest / smallest element (NaN if there is one). Gradient split evenly\n'
                     'among the elements equal to the result; NaN for a line holding a NaN '
                     '(as\n'
                     "PyTorch's amax). TG_ERR_SHAPE for an empty line.",
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'amin_dims': {'doc': 'Over several dims (as tg_sum_dims): the gradient is split evenly among '
                      'all\n'
                      "the elements of the reduced set equal to the result, as PyTorch's.",
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('dims', 'ints'), ('keepdim', 'bool')],
               'returns': 'tensor'},
 'any': {'doc': 'Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n'
                'any dtype; false / true for an empty line. Not differentiable.',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'any_dim': {'doc': 'Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n'
                    'any dtype; false / true for an empty line. Not differentiable.',
             'header': 'ops.h',
             'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
             'returns': 'tensor'},
 'arange': {'doc': '1-D tensor start, start+step, ... < end (step may be negative, not 0;\n'
                   'end == start gives an empty tensor). Errors: TG_ERR_VALUE (step 0,\n'
                   'non-finite bounds, a step pointing away from end, as PyTorch),\n'
                   'TG_ERR_NOMEM.',
            'header': 'tensor.h',
            'params': [('dt', 'enum:tg_dtype'),
                       ('start', 'double'),
                       ('end', 'double'),
                       ('step', 'double')],
            'returns': 'tensor'},
 'argmax': {'doc': 'i64 position of the first largest / smallest element (the first NaN if\n'
                   'any); over all elements it indexes t flattened in C order. Any dtype.',
            'header': 'ops.h',
            'params': [('t', 'tensor')],
            'returns': 'tensor'},
 'argmax_dim': {'doc': 'i64 position of the first largest / smallest element (the first NaN '
                       'if\n'
                       'any); over all elements it indexes t flattened in C order. Any dtype.',
                'header': 'ops.h',
                'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
                'returns': 'tensor'},
 'argmin': {'doc': 'i64 position of the first largest / smallest element (the first NaN if\n'
                   'any); over all elements it indexes t flattened in C order. Any dtype.',
            'header': 'ops.h',
            'params': [('t', 'tensor')],
            'returns': 'tensor'},
 'argmin_dim': {'doc': 'i64 position of the first largest / smallest element (the first NaN '
                       'if\n'
                       'any); over all elements it indexes t flattened in C order. Any dtype.',
                'header': 'ops.h',
                'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
                'returns': 'tensor'},
 'argsort': {'doc': "The positions along dim that sort t (PyTorch's argsort(stable=True)).",
             'header': 'ops.h',
             'params': [('t', 'tensor'), ('dim', 'int'), ('descending', 'bool')],
             'returns': 'tensor'},
 'binary_cross_entropy_with_logits': {'doc': 'Binary cross-entropy on logits, stable for large '
                                             '|input|:\n'
                                             '(1 - target) input - w logsigmoid(input), w = 1 '
                                             '+ (pos_weight - 1) target\n'
                                             '(pos_weight may be NULL: w = 1).',
                                      'header': 'ops.h',
                                      'params': [('input', 'tensor'),
                                                 ('target', 'tensor'),
                                                 ('pos_weight', 'tensor'),
                                                 ('r', 'enum:tg_reduction')],
                                      'returns': 'tensor'},
 'cat': {'doc': "The n tensors joined along dim (PyTorch's cat): any dtypes (promoted as\n"
                'tg_add: each converted by a recorded tg_to_dtype, its gradient back in its\n'
                'own dtype), one device, one number of dims (>= 1), the same sizes but along\n'
                'dim. A new contiguous\n'
                "tensor; recorded when an input requires grad (nothing saved; input i's\n"
                "gradient is its window of the result's). Errors: TG_ERR_VALUE (n < 1),\n"
                'TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_SHAPE, TG_ERR_DIM (0-d inputs, bad dim),\n'
                'TG_ERR_DEVICE, TG_ERR_NOMEM.',
         'header': 'ops.h',
         'params': [('tensors', 'tensors'), ('dim', 'int')],
         'returns': 'tensor'},
 'ceil': {'doc': "Rounding: floor, ceil, and round half to even (as PyTorch's round). "
                 'Gradient\n'
                 '0 (recorded, as in PyTorch).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'clamp': {'doc': 'min(max(t, lo), hi), as PyTorch: pass -INFINITY / INFINITY for no bound;\n'
                  'lo > hi gives hi everywhere, a NaN bound NaN everywhere. Gradient 1 where\n'
                  'lo <= t <= hi, else 0.',
           'header': 'ops.h',
           'params': [('t', 'tensor'), ('lo', 'double'), ('hi', 'double')],
           'returns': 'tensor'},
 'clamp_tensor': {'doc': "PyTorch's clamp with tensor bounds: min(max(t, min), max), t, min "
                         'and max\n'
                         "broadcast together, of the dtype PyTorch's result_type gives the "
                         'three\n'
                         "(operands converted first, as tg_add's). min or max NULL: that bound "
                         'is\n'
                         "absent (PyTorch's None); both NULL is TG_ERR_VALUE. A NaN anywhere "
                         'gives\n'
                         'NaN; min > max gives max. i64 works in i64; bool takes one bound '
                         'only (as\n'
                         "PyTorch). Gradients as PyTorch's (clamp_backward_min_max): t gets g "
                         'where\n'
                         'min <= t <= max; min gets g where t < min (and min < max, with both\n'
                         'bounds); max gets g where t > max (or max < min). Errors: '
                         'TG_ERR_NULL (t),\n'
                         'TG_ERR_VALUE, TG_ERR_DTYPE (bf16; bool with both bounds), '
                         'TG_ERR_SHAPE,\n'
                         'TG_ERR_DEVICE, TG_ERR_NOMEM.',
                  'header': 'ops.h',
                  'params': [('t', 'tensor'), ('min', 'tensor'), ('max', 'tensor')],
                  'returns': 'tensor'},
 'clone': {'doc': 'A contiguous copy with its own storage (differentiable).',
           'header': 'tensor.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'contiguous': {'doc': 't itself (new reference) if contiguous, else a contiguous copy.',
                'header': 'tensor.h',
                'params': [('t', 'tensor')],
                'returns': 'tensor'},
 'copy_': {'doc': "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow).",
           'header': 'ops.h',
           'params': [('t', 'tensor'), ('src', 'tensor')],
           'returns': 'status'},
 'count_nonzero': {'doc': "PyTorch's count_nonzero(t, dims): the number of non-zero elements "
                          '(NaN\n'
                          'counts) of a tensor of any dtype over the dims listed (every dim '
                          'for ndims\n'
                          '0), exactly, as an i64 tensor without those dims; never requires '
                          'grad.\n'
                          'Errors: those of tg_sum_dims, TG_ERR_DTYPE for bf16.',
                   'header': 'ops.h',
                   'params': [('t', 'tensor'), ('dims', 'ints')],
                   'returns': 'tensor'},
 'cross_entropy': {'doc': "PyTorch's cross_entropy: input (C) with a 0-d target, or (N, C, d1, "
                          '...)\n'
                          'with target (N, d1, ...) of i64 class indices; weight NULL or (C) '
                          'class\n'
                          "weights of input's dtype (not owned; never differentiated). A row's "
                          'loss is\n'
                          'w[y] (-log p[y]); rows whose target is ignore_index give 0 and no '
                          'gradient;\n'
                          'label_smoothing in [0, 1] mixes in eps / C * (-sum_c w_c log p_c) '
                          "(PyTorch's\n"
                          'formula; w_c = 1 without weights). MEAN divides by the sum of w[y] '
                          'over the\n'
                          'rows kept (their number without weights; NaN when none is). '
                          'Computed by the\n'
                          'fused log-prob op (no (N, C) tensor is saved for the log-likelihood '
                          'term;\n'
                          'label smoothing adds a log_softmax). Errors: those of '
                          'tg_logprob_entropy (a\n'
                          'target outside [0, C), a kept row of NaN or all -inf logits: '
                          'PyTorch returns\n'
                          'NaN there), TG_ERR_VALUE for label_smoothing or reduction '
                          '(BATCHMEAN\n'
                          'included), TG_ERR_SHAPE / TG_ERR_DTYPE / TG_ERR_DEVICE for a weight '
                          'that is\n'
                          "not (C), of input's dtype, on its device, TG_ERR_AUTOGRAD for a "
                          'weight that\n'
                          'requires grad while grad mode is on (as PyTorch 1.13).',
                   'header': 'ops.h',
                   'params': [('input', 'tensor'),
                              ('target', 'tensor'),
                              ('weight', 'tensor'),
                              ('ignore_index', 'int64'),
                              ('label_smoothing', 'double'),
                              ('r', 'enum:tg_reduction')],
                   'returns': 'tensor'},
 'cumprod': {'doc': "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
                    'Both also take i64 and bool tensors: an exact i64 result (wrapping '
                    'around\n'
                    'on overflow), as PyTorch. Gradients: the\n'
                    'reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n'
                    'TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM.',
             'header': 'ops.h',
             'params': [('t', 'tensor'), ('dim', 'int')],
             'returns': 'tensor'},
 'cumsum': {'doc': "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
                   'Both also take i64 and bool tensors: an exact i64 result (wrapping around\n'
                   'on overflow), as PyTorch. Gradients: the\n'
                   'reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n'
                   'TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM.',
            'header': 'ops.h',
            'params': [('t', 'tensor'), ('dim', 'int')],
            'returns': 'tensor'},
 'discounted_cumsum': {'doc': 'The discounted reverse cumulative sum along dim of an f32/f64 '
                              'tensor:\n'
                              'y_j = x_j + gamma y_{j+1}, y_last = x_last (RL returns; GAE '
                              'advantages with\n'
                              "gamma * lambda), accumulated in double; a new tensor of x's "
                              'shape. No\n'
                              'PyTorch op: the loop `for j reversed: y[j] = x[j] + gamma * '
                              'y[j+1]`.\n'
                              'Gradient: dx_j = g_j + gamma dx_{j-1}. Errors: TG_ERR_NULL, '
                              'TG_ERR_DTYPE,\n'
                              'TG_ERR_DIM, TG_ERR_VALUE (gamma NaN or infinite), '
                              'TG_ERR_DEVICE,\n'
                              'TG_ERR_NOMEM.',
                       'header': 'ops.h',
                       'params': [('x', 'tensor'), ('gamma', 'double'), ('dim', 'int')],
                       'returns': 'tensor'},
 'div': {'doc': 'elementwise, binary with broadcasting',
         'header': 'ops.h',
         'params': [('a', 'tensor'), ('b', 'tensor')],
         'returns': 'tensor'},
 'div_': {'doc': "t /= other, PyTorch's div_ (true division; other 0 gives +-inf or NaN).",
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('other', 'tensor')],
          'returns': 'status'},
 'empty': {'doc': 'A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n'
                  'Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n'
                  'TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows).',
           'header': 'tensor.h',
           'params': [('dt', 'enum:tg_dtype'), ('shape', 'int64s')],
           'returns': 'tensor'},
 'eq': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'eq_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'exp': {'doc': 'elementwise, unary',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'expand': {'doc': 'Broadcast view to shape (size-1 dims get stride 0, new leading dims '
                   'added;\n'
                   '-1 keeps a size). Errors: TG_ERR_SHAPE.',
            'header': 'tensor.h',
            'params': [('t', 'tensor'), ('shape', 'int64s')],
            'returns': 'tensor'},
 'expm1': {'doc': 'log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n'
                  'g (1 + result).',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'fill_': {'doc': "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow).",
           'header': 'ops.h',
           'params': [('t', 'tensor'), ('value', 'double')],
           'returns': 'status'},
 'flatten': {'doc': 'Dims start_dim..end_dim merged into one (a 0-d t gives shape [1]); a '
                    'view\n'
                    'when the strides allow, else a copy, as tg_reshape; t itself (a new\n'
                    'reference) when start_dim and end_dim are the same dim, as PyTorch.\n'
                    'Errors: TG_ERR_DIM (bad dims, start after end).',
             'header': 'tensor.h',
             'params': [('t', 'tensor'), ('start_dim', 'int'), ('end_dim', 'int')],
             'returns': 'tensor'},
 'flip': {'doc': 't reversed along each of dims[0..ndims) (a copy, as PyTorch). Gradient: g\n'
                 'flipped back. Errors: TG_ERR_DIM (out of range or repeated), TG_ERR_VALUE\n'
                 '(ndims outside 0..8, dims NULL).',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('dims', 'ints')],
          'returns': 'tensor'},
 'floor': {'doc': "Rounding: floor, ceil, and round half to even (as PyTorch's round). "
                  'Gradient\n'
                  '0 (recorded, as in PyTorch).',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'floor_divide': {'doc': "a mod b and floor(a / b), rounding toward -inf (PyTorch's and "
                         "Python's\n"
                         "rules: the remainder has the divisor's sign), broadcast and promoted "
                         'as\n'
                         'tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n'
                         'floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float '
                         'ones\n'
                         "compute as PyTorch's kernels (a zero divisor gives NaN for the "
                         'remainder,\n'
                         '+-inf or NaN for the quotient). Gradients: remainder g for a and\n'
                         '-g floor_divide(a, b) for b, as PyTorch; floor_divide is not '
                         'differentiable\n'
                         '(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n'
                         'operands), TG_ERR_VALUE (a zero i64 divisor, naming its first '
                         'position),\n'
                         'TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM.',
                  'header': 'ops.h',
                  'params': [('a', 'tensor'), ('b', 'tensor')],
                  'returns': 'tensor'},
 'full': {'doc': 'A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n'
                 'Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n'
                 'TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows).',
          'header': 'tensor.h',
          'params': [('dt', 'enum:tg_dtype'), ('shape', 'int64s'), ('value', 'double')],
          'returns': 'tensor'},
 'gather': {'doc': "out[..., j] = t[..., index[..., j]]; index is i64 with t's leading shape "
                   'and\n'
                   'any last size. Errors: TG_ERR_DTYPE (index not i64), TG_ERR_SHAPE '
                   '(leading\n'
                   'shapes differ), TG_ERR_VALUE (an index outside [0, size); the message '
                   'names\n'
                   'the position and the value).',
            'header': 'ops.h',
            'params': [('t', 'tensor'), ('index', 'tensor')],
            'returns': 'tensor'},
 'gather_dim': {'doc': "PyTorch's gather(t, dim, index): out[i][j][k] = "
                       't[index[i][j][k]][j][k] for\n'
                       "dim 0, and so on; index i64 of t's ndim and t's sizes but along dim "
                       '(any\n'
                       'size there: PyTorch also allows smaller sizes elsewhere, tapegrad '
                       'not).\n'
                       'Gradient: scattered back, repeats added. Errors as tg_gather, and\n'
                       'TG_ERR_DIM.',
                'header': 'ops.h',
                'params': [('t', 'tensor'), ('dim', 'int'), ('index', 'tensor')],
                'returns': 'tensor'},
 'ge': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'ge_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'gelu': {'doc': "GELU: t * Phi(t) with the erf (TG_GELU_NONE) or PyTorch's tanh\n"
                 'approximation (TG_GELU_TANH). Error TG_ERR_VALUE for another value.',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('approximate', 'enum:tg_gelu_approx')],
          'returns': 'tensor'},
 'gt': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'gt_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'index': {'doc': "PyTorch's t[:, ..., index] with `index` at dim: an i64 index of any shape\n"
                  '(0-d too), entries in [-size, size) (negative ones count from the end),\n'
                  'repeats allowed. Result shape t.shape[:dim] + index.shape +\n'
                  't.shape[dim+1:]. Gradient: g added back at the indexed positions (repeats\n'
                  'add up); the index is saved (version-checked, as PyTorch). Errors:\n'
                  'TG_ERR_NULL, TG_ERR_DTYPE (index not i64 — a bool index is a mask: use\n'
                  'tg_masked_select —, or t of another dtype), TG_ERR_DIM (t 0-d, dim out of\n'
                  'range), TG_ERR_VALUE (an index out of range: the message names its\n'
                  'position in index and its value; or a result of more than TG_MAX_DIMS\n'
                  'dims), TG_ERR_DEVICE, TG_ERR_NOMEM.',
           'header': 'ops.h',
           'params': [('t', 'tensor'), ('dim', 'int'), ('index', 'tensor')],
           'returns': 'tensor'},
 'index_select': {'doc': "t's entries index[0], index[1], ... along dim (a 1-D i64 index, "
                         'repeats\n'
                         "allowed): PyTorch's index_select. Errors as tg_gather_dim, "
                         'TG_ERR_SHAPE for\n'
                         'an index of 2 or more dims.',
                  'header': 'ops.h',
                  'params': [('t', 'tensor'), ('dim', 'int'), ('index', 'tensor')],
                  'returns': 'tensor'},
 'isfinite': {'doc': 'NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as '
                     'tg_eq.',
              'header': 'ops.h',
              'params': [('t', 'tensor')],
              'returns': 'tensor'},
 'isinf': {'doc': 'NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq.',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'isnan': {'doc': 'NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq.',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'kl_div': {'doc': "PyTorch's kl_div: input holds log-probabilities; target probabilities\n"
                   '(target (log target - input), 0 where target is 0) or, with log_target,\n'
                   'log-probabilities (exp(target) (target - input)). MEAN averages over '
                   'every\n'
                   "element, as PyTorch's 'mean'; TG_REDUCTION_BATCHMEAN (PyTorch's\n"
                   "'batchmean', the KL divergence's true mean per sample) divides the sum by\n"
                   'input.size(0) (a 0-d input: the sum; size 0: NaN, as PyTorch).',
            'header': 'ops.h',
            'params': [('input', 'tensor'),
                       ('target', 'tensor'),
                       ('r', 'enum:tg_reduction'),
                       ('log_target', 'bool')],
            'returns': 'tensor'},
 'le': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'le_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'log': {'doc': 'elementwise, unary',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'log1p': {'doc': 'log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n'
                  'g (1 + result).',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'log_softmax': {'doc': 'Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d '
                        'tensor\n'
                        "is one row of one element), PyTorch's softmax(t, -1): a new "
                        'contiguous\n'
                        "tensor of t's shape, rows reduced in double with the row max "
                        'subtracted; a\n'
                        'row of all -inf gives NaN, a -inf entry probability 0. Saves the '
                        'output.\n'
                        'Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
                 'header': 'ops.h',
                 'params': [('t', 'tensor')],
                 'returns': 'tensor'},
 'log_softmax_dim': {'doc': "The same along dim (negative from the end), PyTorch's softmax(t, "
                            'dim): the\n'
                            'rows along dim are read and written in place (no transposed '
                            'copy).\n'
                            'Errors: as tg_softmax, and TG_ERR_DIM.',
                     'header': 'ops.h',
                     'params': [('t', 'tensor'), ('dim', 'int')],
                     'returns': 'tensor'},
 'logical_and': {'doc': 'Logic on truth values (non-zero, NaN included, is true) of any '
                        'dtypes,\n'
                        'broadcast as tg_add. Errors as tg_eq.',
                 'header': 'ops.h',
                 'params': [('a', 'tensor'), ('b', 'tensor')],
                 'returns': 'tensor'},
 'logical_not': {'doc': 'Logic on truth values (non-zero, NaN included, is true) of any '
                        'dtypes,\n'
                        'broadcast as tg_add. Errors as tg_eq.',
                 'header': 'ops.h',
                 'params': [('t', 'tensor')],
                 'returns': 'tensor'},
 'logical_or': {'doc': 'Logic on truth values (non-zero, NaN included, is true) of any '
                       'dtypes,\n'
                       'broadcast as tg_add. Errors as tg_eq.',
                'header': 'ops.h',
                'params': [('a', 'tensor'), ('b', 'tensor')],
                'returns': 'tensor'},
 'logical_xor': {'doc': 'Logic on truth values (non-zero, NaN included, is true) of any '
                        'dtypes,\n'
                        'broadcast as tg_add. Errors as tg_eq.',
                 'header': 'ops.h',
                 'params': [('a', 'tensor'), ('b', 'tensor')],
                 'returns': 'tensor'},
 'logsigmoid': {'doc': 'log(sigmoid(t)) = min(t, 0) - log1p(exp(-|t|)): finite for every '
                       'finite t\n'
                       '(-1000 gives -1000, not -inf). Gradient g sigmoid(-t).',
                'header': 'ops.h',
                'params': [('t', 'tensor')],
                'returns': 'tensor'},
 'logsumexp': {'doc': 'log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf\n'
                      'for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - '
                      'result)\n'
                      '(NaN on an all -inf line, as PyTorch).',
               'header': 'ops.h',
               'params': [('t', 'tensor')],
               'returns': 'tensor'},
 'logsumexp_dim': {'doc': 'log(sum(exp(t))), stable (max + log sum exp(t - max), in double): '
                          '-inf\n'
                          'for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - '
                          'result)\n'
                          '(NaN on an all -inf line, as PyTorch).',
                   'header': 'ops.h',
                   'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
                   'returns': 'tensor'},
 'logsumexp_dims': {'doc': 'Over several dims (as tg_sum_dims).',
                    'header': 'ops.h',
                    'params': [('t', 'tensor'), ('dims', 'ints'), ('keepdim', 'bool')],
                    'returns': 'tensor'},
 'lt': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'lt_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'masked_fill': {'doc': "t with value where mask is non-zero (PyTorch's masked_fill, out of "
                        'place;\n'
                        "mask of any dtype, broadcast to t's shape). Gradient to t where the "
                        'mask\n'
                        "is 0. Errors: TG_ERR_NULL, TG_ERR_SHAPE (the mask would change t's "
                        'shape),\n'
                        'those of tg_where.',
                 'header': 'ops.h',
                 'params': [('t', 'tensor'), ('mask', 'tensor'), ('value', 'double')],
                 'returns': 'tensor'},
 'masked_mean': {'doc': 'sum(x * mask) / sum(mask) along dim (all: over every element, dim\n'
                        "ignored), mask broadcast to x's shape (e.g. float 0/1). A dim or row "
                        'with an\n'
                        "all-zero mask gives NaN (0 / 0), as the trainers' formula. Gradient "
                        'to x;\n'
                        'the mask gets one too if it requires grad. Errors: those of tg_mul,\n'
                        'tg_sum_dim, TG_ERR_DIM.',
                 'header': 'ops.h',
                 'params': [('x', 'tensor'),
                            ('mask', 'tensor'),
                            ('dim', 'int'),
                            ('all', 'bool')],
                 'returns': 'tensor'},
 'masked_select': {'doc': 'The elements of t where mask (TG_BOOL) is true, t and mask '
                          'broadcast\n'
                          'together, in C order of the broadcast shape: a 1-D tensor '
                          "(PyTorch's\n"
                          "masked_select). Its length depends on the mask's values, so the "
                          'mask is\n'
                          'read on the host: for CUDA tensors a copy of it comes back to the '
                          'host\n'
                          '(the call waits for the device). Gradient: g put back at the '
                          'selected\n'
                          'positions, summed over the dims along which t was broadcast. Saves '
                          'the\n'
                          'selected positions (not t or mask: editing them in place afterwards '
                          'does\n'
                          "not fail backward, as PyTorch's would). Errors: TG_ERR_NULL, "
                          'TG_ERR_DTYPE\n'
                          '(mask not bool, as PyTorch 1.13; t of another dtype), TG_ERR_SHAPE '
                          '(t and\n'
                          'mask do not broadcast), TG_ERR_DEVICE, TG_ERR_NOMEM, TG_ERR_CUDA.',
                   'header': 'ops.h',
                   'params': [('t', 'tensor'), ('mask', 'tensor')],
                   'returns': 'tensor'},
 'matmul': {'doc': 'a (..., M, K) @ b (..., K, N) -> (..., M, N) through CBLAS. Both 2-D, or\n'
                   'batched with equal leading dims, or a batched and b 2-D (shared weight).\n'
                   'f32 or f64 of one dtype, or two bf16 operands: then both are converted to\n'
                   'f32 (what backward saves) and the result is f32.\n'
                   'Errors: TG_ERR_DTYPE; TG_ERR_SHAPE (inner sizes or batch dims differ,\n'
                   'ndim < 2).',
            'header': 'ops.h',
            'params': [('a', 'tensor'), ('b', 'tensor')],
            'returns': 'tensor'},
 'max_dim': {'doc': "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
                    'indices is not NULL, *indices = their i64 positions along dim (the first\n'
                    'extreme, or the first NaN), a second new reference owned like the '
                    'result.\n'
                    'Gradient all to that position. TG_ERR_SHAPE for an empty line.',
             'header': 'ops.h',
             'params': [('t', 'tensor'),
                        ('dim', 'int'),
                        ('keepdim', 'bool'),
                        ('indices', 'out')],
             'returns': 'tensor'},
 'maximum': {'doc': 'Elementwise max/min; where a == b the gradient is split evenly (as '
                    'PyTorch).\n'
                    'NaN in either operand gives NaN.',
             'header': 'ops.h',
             'params': [('a', 'tensor'), ('b', 'tensor')],
             'returns': 'tensor'},
 'mean': {'doc': 'Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n'
                 "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
                 'mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'mean_dim': {'doc': 'Along dim (negative allowed); keepdim keeps it as size 1.',
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'mean_dims': {'doc': "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): "
                      'dims[0..ndims)\n'
                      '(negative allowed, each at most once; ndims 0 reduces every dim, as\n'
                      "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
                      'tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n'
                      'TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n'
                      'repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other '
                      'multi-dim\n'
                      'reductions below (tg_*_dims) take their dims the same way.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('dims', 'ints'), ('keepdim', 'bool')],
               'returns': 'tensor'},
 'min_dim': {'doc': "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
                    'indices is not NULL, *indices = their i64 positions along dim (the first\n'
                    'extreme, or the first NaN), a second new reference owned like the '
                    'result.\n'
                    'Gradient all to that position. TG_ERR_SHAPE for an empty line.',
             'header': 'ops.h',
             'params': [('t', 'tensor'),
                        ('dim', 'int'),
                        ('keepdim', 'bool'),
                        ('indices', 'out')],
             'returns': 'tensor'},
 'minimum': {'doc': 'Elementwise max/min; where a == b the gradient is split evenly (as '
                    'PyTorch).\n'
                    'NaN in either operand gives NaN.',
             'header': 'ops.h',
             'params': [('a', 'tensor'), ('b', 'tensor')],
             'returns': 'tensor'},
 'mse_loss': {'doc': '(input - target)^2.',
              'header': 'ops.h',
              'params': [('input', 'tensor'), ('target', 'tensor'), ('r', 'enum:tg_reduction')],
              'returns': 'tensor'},
 'mul': {'doc': 'elementwise, binary with broadcasting',
         'header': 'ops.h',
         'params': [('a', 'tensor'), ('b', 'tensor')],
         'returns': 'tensor'},
 'mul_': {'doc': 'in-place (bump the version counter, record op name and call site)\n'
                 't may be a view (the write goes to the shared storage). other is broadcast\n'
                 "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
                 "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
                 "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
                 "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
                 'gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n'
                 'grad, a view of one, a view made with grad mode off, a view returned by a\n'
                 'custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n'
                 'their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n'
                 'computed in the promoted dtype and written into t converted, as PyTorch (an\n'
                 'f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where '
                 'the\n'
                 "promoted dtype is of a higher category than t's (a float into an i64 or\n"
                 'bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n'
                 'or bool t is always refused ("result type f32 can\'t be cast to the desired\n'
                 'output type i64"). pow_ of two i64 tensors computes in i64 as tg_pow\n'
                 '(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n'
                 'PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n'
                 "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
                 'pow_ that copy always and t itself after the write (its result), so that\n'
                 'an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n'
                 'operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n'
                 "recorded, it is saved as it was, and the write then fails backward's\n"
                 "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
                 'marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n'
                 "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
                 'overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written '
                 'and\n'
                 'nothing changes on failure (but for a CUDA kernel failing while it writes:\n'
                 'TG_ERR_CUDA).',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('other', 'tensor')],
          'returns': 'status'},
 'nan_to_num': {'doc': "PyTorch's nan_to_num: NaN -> nan_value, +inf -> posinf, -inf -> neginf "
                       '(each\n'
                       "converted to t's dtype); a NaN posinf / neginf means PyTorch's "
                       'default\n'
                       "(None): the dtype's largest / lowest finite value. An i64 or bool t "
                       'is\n'
                       'returned as a copy, unchanged (as PyTorch). Gradient g * isfinite(t).\n'
                       'Errors: TG_ERR_NULL, TG_ERR_DTYPE (bf16), TG_ERR_DEVICE, TG_ERR_NOMEM.',
                'header': 'ops.h',
                'params': [('t', 'tensor'),
                           ('nan_value', 'double'),
                           ('posinf', 'double'),
                           ('neginf', 'double')],
                'returns': 'tensor'},
 'narrow': {'doc': "PyTorch's narrow: elements start .. start+length-1 along dim, a view.\n"
                   'start may be negative (counted from the end). Errors: TG_ERR_DIM (0-d or\n'
                   'bad dim), TG_ERR_VALUE (the range is not inside the dim).',
            'header': 'tensor.h',
            'params': [('t', 'tensor'),
                       ('dim', 'int'),
                       ('start', 'int64'),
                       ('length', 'int64')],
            'returns': 'tensor'},
 'ne': {'doc': 'a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n'
               "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
               '(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n'
               'Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
        'header': 'ops.h',
        'params': [('a', 'tensor'), ('b', 'tensor')],
        'returns': 'tensor'},
 'ne_scalar': {'doc': "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
                      'dtype, except a non-integer v against an i64 or bool t, compared in '
                      'f32\n'
                      'as PyTorch does (its default float dtype), and a bool t against an '
                      'integer\n'
                      'other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, '
                      'TG_ERR_DEVICE,\n'
                      'TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('t', 'tensor'), ('v', 'double')],
               'returns': 'tensor'},
 'neg': {'doc': 'elementwise, unary',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'nll_loss': {'doc': "PyTorch's nll_loss: -w[target] input[..., target] with input holding\n"
                     "log-probabilities in PyTorch's layouts ((C) with a 0-d target, or (N, "
                     'C,\n'
                     'd1, ...) with target (N, d1, ...)); weight NULL (w = 1) or (C) class\n'
                     "weights as tg_cross_entropy's; ignored rows give 0 and no gradient; "
                     'MEAN\n'
                     'divides by the sum of w[target] over the rows kept (NaN when none is).\n'
                     'Errors: TG_ERR_DTYPE (target not i64), TG_ERR_SHAPE, TG_ERR_VALUE (a\n'
                     "target outside [0, C): names its position; the reduction), the weight's\n"
                     'errors of tg_cross_entropy, and those of the ops.',
              'header': 'ops.h',
              'params': [('input', 'tensor'),
                         ('target', 'tensor'),
                         ('weight', 'tensor'),
                         ('ignore_index', 'int64'),
                         ('r', 'enum:tg_reduction')],
              'returns': 'tensor'},
 'norm': {'doc': "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
                 'sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count\n'
                 'of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n'
                 'double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty\n'
                 'line with p infinite or negative, as PyTorch (no identity). Gradients as\n'
                 "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is\n"
                 '0, for 2; g sign(t) split evenly among the elements of extreme magnitude\n'
                 'for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise.',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('p', 'double')],
          'returns': 'tensor'},
 'norm_dim': {'doc': "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
                     'sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the '
                     'count\n'
                     'of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n'
                     'double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an '
                     'empty\n'
                     'line with p infinite or negative, as PyTorch (no identity). Gradients '
                     'as\n'
                     "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm "
                     'is\n'
                     '0, for 2; g sign(t) split evenly among the elements of extreme '
                     'magnitude\n'
                     'for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise.',
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('p', 'double'), ('dim', 'int'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'one_hot': {'doc': "An i64 tensor of target's shape plus a last dim of num_classes, 1 at "
                    'each\n'
                    "target's class and 0 elsewhere (PyTorch's one_hot; num_classes -1: the\n"
                    'largest target + 1). No gradient. Errors: TG_ERR_DTYPE (target not i64),\n'
                    'TG_ERR_VALUE (a target outside [0, num_classes), a num_classes below -1, '
                    'or\n'
                    '-1 with an empty target), TG_ERR_DIM (target has TG_MAX_DIMS dims).',
             'header': 'ops.h',
             'params': [('target', 'tensor'), ('num_classes', 'int64')],
             'returns': 'tensor'},
 'ones': {'doc': 'A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n'
                 'Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n'
                 'TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows).',
          'header': 'tensor.h',
          'params': [('dt', 'enum:tg_dtype'), ('shape', 'int64s')],
          'returns': 'tensor'},
 'permute': {'doc': 'The dims of t reordered: dim i of the result is dim dims[i] of t (a '
                    'view;\n'
                    "ndim must be t's, each dim once, negative counted from the end). Errors:\n"
                    'TG_ERR_NULL, TG_ERR_DIM.',
             'header': 'tensor.h',
             'params': [('t', 'tensor'), ('dims', 'ints')],
             'returns': 'tensor'},
 'pow': {'doc': "a ** b elementwise with broadcasting (PyTorch's pow(tensor, tensor); C's\n"
                'pow: NaN for a negative base and a non-integer exponent). Gradients as\n'
                'PyTorch: d/da = b a^(b-1) g (0 where b == 0), d/db = a^b log(a) g (0 where\n'
                'a == 0 and b >= 0). Errors as tg_add.',
         'header': 'ops.h',
         'params': [('a', 'tensor'), ('b', 'tensor')],
         'returns': 'tensor'},
 'pow_': {'doc': "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow).",
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('other', 'tensor')],
          'returns': 'status'},
 'pow_scalar': {'doc': "t ** exponent (PyTorch's pow(tensor, scalar)): the exact forms PyTorch "
                       'uses\n'
                       "for 2, 3, -1, -2, 0.5 (sqrt: (-0) ** 0.5 is -0) and -0.5, else C's "
                       'pow.\n'
                       'Gradient exponent * t ** (exponent - 1) * g, and 0 for exponent 0.',
                'header': 'ops.h',
                'params': [('t', 'tensor'), ('exponent', 'double')],
                'returns': 'tensor'},
 'prod': {'doc': 'Product (1 for an empty line). Gradient: g times the product of the other\n'
                 'elements, exact where t has zeros (no division).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'prod_dim': {'doc': 'Product (1 for an empty line). Gradient: g times the product of the '
                     'other\n'
                     'elements, exact where t has zeros (no division).',
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'rand': {'doc': 'Seeded random tensors (f32/f64 only). The generator (xoshiro256** seeded by\n'
                 'splitmix64, polar normal method with a fixed-arithmetic logarithm) gives '
                 'the\n'
                 'same numbers for the same seed on every IEEE-754 machine.\n'
                 'tg_randn: normal(mean, std); tg_rand: uniform in [lo, hi).',
          'header': 'tensor.h',
          'params': [('dt', 'enum:tg_dtype'),
                     ('shape', 'int64s'),
                     ('seed', 'uint64'),
                     ('lo', 'double'),
                     ('hi', 'double')],
          'returns': 'tensor'},
 'randint': {'doc': 'A new i64 tensor of integers drawn uniformly from [low, high) (without\n'
                    'bias, any range up to the whole of int64), from the same seeded '
                    'generator:\n'
                    'the same numbers for the same seed everywhere. For seeded targets, token\n'
                    'ids, indices. Errors: TG_ERR_VALUE (low >= high), as tg_empty.',
             'header': 'tensor.h',
             'params': [('shape', 'int64s'),
                        ('seed', 'uint64'),
                        ('low', 'int64'),
                        ('high', 'int64')],
             'returns': 'tensor'},
 'randn': {'doc': 'Seeded random tensors (f32/f64 only). The generator (xoshiro256** seeded '
                  'by\n'
                  'splitmix64, polar normal method with a fixed-arithmetic logarithm) gives '
                  'the\n'
                  'same numbers for the same seed on every IEEE-754 machine.\n'
                  'tg_randn: normal(mean, std); tg_rand: uniform in [lo, hi).',
           'header': 'tensor.h',
           'params': [('dt', 'enum:tg_dtype'),
                      ('shape', 'int64s'),
                      ('seed', 'uint64'),
                      ('mean', 'double'),
                      ('std', 'double')],
           'returns': 'tensor'},
 'reciprocal': {'doc': '1 / t. Gradient -g / t^2.',
                'header': 'ops.h',
                'params': [('t', 'tensor')],
                'returns': 'tensor'},
 'relu': {'doc': 'max(t, 0); NaN stays NaN, -0 stays -0. Gradient g where the result > 0,\n'
                 'else 0 (0 at 0, as PyTorch).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'remainder': {'doc': "a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's\n"
                      "rules: the remainder has the divisor's sign), broadcast and promoted "
                      'as\n'
                      'tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n'
                      'floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float '
                      'ones\n'
                      "compute as PyTorch's kernels (a zero divisor gives NaN for the "
                      'remainder,\n'
                      '+-inf or NaN for the quotient). Gradients: remainder g for a and\n'
                      '-g floor_divide(a, b) for b, as PyTorch; floor_divide is not '
                      'differentiable\n'
                      '(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n'
                      'operands), TG_ERR_VALUE (a zero i64 divisor, naming its first '
                      'position),\n'
                      'TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM.',
               'header': 'ops.h',
               'params': [('a', 'tensor'), ('b', 'tensor')],
               'returns': 'tensor'},
 'repeat': {'doc': "PyTorch's t.repeat(repeats): t tiled repeats[i] times along dim i; t is\n"
                   'first seen with ndim - t.ndim new leading size-1 dims. A repeat of 0 '
                   'gives\n'
                   'an empty result; always a copy. Gradient: g summed over the copies. Any\n'
                   "dtype. Errors: TG_ERR_NULL, TG_ERR_VALUE (ndim < t's ndim as PyTorch, "
                   'ndim\n'
                   'over TG_MAX_DIMS, a negative repeat), TG_ERR_SHAPE (result too large),\n'
                   'TG_ERR_NOMEM.',
            'header': 'ops.h',
            'params': [('t', 'tensor'), ('repeats', 'int64s')],
            'returns': 'tensor'},
 'reshape': {'doc': 'Like tg_view, but copies (differentiably) when a view is impossible.',
             'header': 'tensor.h',
             'params': [('t', 'tensor'), ('shape', 'int64s')],
             'returns': 'tensor'},
 'roll': {'doc': "PyTorch's roll: t with its elements shifted cyclically by shifts[k] along\n"
                 'dims[k] (any sign and size; a dim given twice is rolled twice), or with\n'
                 'ndims 0 (dims may be NULL) by shifts[0] over the flattened elements, the\n'
                 'shape kept. Gradient: g rolled back; saves nothing. Any dtype. Errors:\n'
                 'TG_ERR_NULL, TG_ERR_VALUE (nshifts != ndims, or ndims 0 and nshifts != 1,\n'
                 'or a negative count), TG_ERR_DIM (a dim out of range, dims given for a 0-d\n'
                 't), TG_ERR_NOMEM.',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('shifts', 'int64s'), ('dims', 'ints')],
          'returns': 'tensor'},
 'round': {'doc': "Rounding: floor, ceil, and round half to even (as PyTorch's round). "
                  'Gradient\n'
                  '0 (recorded, as in PyTorch).',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'rsqrt': {'doc': '1 / sqrt(t). Gradient -g / (2 t^1.5) (-inf at 0).',
           'header': 'ops.h',
           'params': [('t', 'tensor')],
           'returns': 'tensor'},
 'scale': {'doc': 't * k and t + k for a constant k.',
           'header': 'ops.h',
           'params': [('t', 'tensor'), ('k', 'double')],
           'returns': 'tensor'},
 'scale_': {'doc': "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow).",
            'header': 'ops.h',
            'params': [('t', 'tensor'), ('k', 'double')],
            'returns': 'status'},
 'scatter_add': {'doc': "A copy of t with src added at index along dim (PyTorch's "
                        'scatter_add):\n'
                        'out[index[i][j]][j] += src[i][j] for dim 0; index and src of one '
                        'shape,\n'
                        "t's sizes but along dim; repeated indices add up. Gradients: g for t, "
                        'g\n'
                        'gathered at index for src. Errors: TG_ERR_NULL, TG_ERR_DTYPE (t and '
                        'src\n'
                        'of one float dtype, index i64), TG_ERR_SHAPE, TG_ERR_DIM, '
                        'TG_ERR_VALUE (an\n'
                        'index out of range, named), TG_ERR_DEVICE, TG_ERR_NOMEM.',
                 'header': 'ops.h',
                 'params': [('t', 'tensor'),
                            ('dim', 'int'),
                            ('index', 'tensor'),
                            ('src', 'tensor')],
                 'returns': 'tensor'},
 'select': {'doc': "PyTorch's select: the elements at position `index` along dim, without "
                   'that\n'
                   'dim (a view; a new reference). dim and index may be negative (counted '
                   'from\n'
                   "the end). Gradient: g at that position of a zero tensor of t's shape; an\n"
                   'in-place op on the result behaves as on any view. Any dtype. Errors:\n'
                   'TG_ERR_NULL, TG_ERR_DIM (t is 0-d, or dim out of range), TG_ERR_VALUE\n'
                   '(index outside [-size, size)), TG_ERR_NOMEM.',
            'header': 'tensor.h',
            'params': [('t', 'tensor'), ('dim', 'int'), ('index', 'int64')],
            'returns': 'tensor'},
 'sigmoid': {'doc': '1 / (1 + exp(-t)). Gradient g (1 - y) y.',
             'header': 'ops.h',
             'params': [('t', 'tensor')],
             'returns': 'tensor'},
 'sign': {'doc': '-1, 0 or 1 (0 for +-0 and NaN, as PyTorch). Gradient 0.',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'silu': {'doc': 't * sigmoid(t) (SiLU / swish). Gradient g s (1 + t (1 - s)), s = sigmoid(t).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'slice': {'doc': 'Elements start, start+step, ... < end along dim. dim, start and end may be\n'
                  'negative (counted from the end, as in Python); start/end are clamped to\n'
                  '[0, size]. Errors: TG_ERR_DIM, TG_ERR_VALUE (step <= 0).',
           'header': 'tensor.h',
           'params': [('t', 'tensor'),
                      ('dim', 'int'),
                      ('start', 'int64'),
                      ('end', 'int64'),
                      ('step', 'int64')],
           'returns': 'tensor'},
 'smooth_l1_loss': {'doc': 'Huber-like: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta '
                           '(d =\n'
                           "input - target; beta 0: |d|; PyTorch's default beta is 1). "
                           'TG_ERR_VALUE\n'
                           'for a negative, NaN or infinite beta.',
                    'header': 'ops.h',
                    'params': [('input', 'tensor'),
                               ('target', 'tensor'),
                               ('r', 'enum:tg_reduction'),
                               ('beta', 'double')],
                    'returns': 'tensor'},
 'softmax': {'doc': 'Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d '
                    'tensor\n'
                    "is one row of one element), PyTorch's softmax(t, -1): a new contiguous\n"
                    "tensor of t's shape, rows reduced in double with the row max subtracted; "
                    'a\n'
                    'row of all -inf gives NaN, a -inf entry probability 0. Saves the output.\n'
                    'Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM.',
             'header': 'ops.h',
             'params': [('t', 'tensor')],
             'returns': 'tensor'},
 'softmax_dim': {'doc': "The same along dim (negative from the end), PyTorch's softmax(t, "
                        'dim): the\n'
                        'rows along dim are read and written in place (no transposed copy).\n'
                        'Errors: as tg_softmax, and TG_ERR_DIM.',
                 'header': 'ops.h',
                 'params': [('t', 'tensor'), ('dim', 'int')],
                 'returns': 'tensor'},
 'softplus': {'doc': 'log(1 + exp(beta t)) / beta, and t itself where beta t > threshold '
                     "(PyTorch's\n"
                     'defaults: beta 1, threshold 20). Gradient g sigmoid(beta t), g above '
                     'the\n'
                     'threshold.',
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('beta', 'double'), ('threshold', 'double')],
              'returns': 'tensor'},
 'sort': {'doc': 'The sorted values of t along dim, the positions in *indices.',
          'header': 'ops.h',
          'params': [('t', 'tensor'),
                     ('dim', 'int'),
                     ('descending', 'bool'),
                     ('indices', 'out')],
          'returns': 'tensor'},
 'sqrt': {'doc': 'Square root; NaN below 0. Gradient g / (2 sqrt(t)) (inf at 0, as PyTorch).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'square': {'doc': 't * t. Gradient 2 t g.',
            'header': 'ops.h',
            'params': [('t', 'tensor')],
            'returns': 'tensor'},
 'squeeze': {'doc': "Without dim `dim` when its size is 1, else t's shape (a view either way,\n"
                    "as PyTorch's squeeze(dim)); a 0-d t takes dim 0 or -1. Errors: "
                    'TG_ERR_DIM.',
             'header': 'tensor.h',
             'params': [('t', 'tensor'), ('dim', 'int')],
             'returns': 'tensor'},
 'stack': {'doc': 'The n tensors of one shape stacked along a new dim (0 .. ndim, negative\n'
                  'from the end): cat of their tg_unsqueeze(t, dim). Errors as tg_cat.',
           'header': 'ops.h',
           'params': [('tensors', 'tensors'), ('dim', 'int')],
           'returns': 'tensor'},
 'std': {'doc': 'Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n'
                "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
                "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
                "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction.",
         'header': 'ops.h',
         'params': [('t', 'tensor'), ('correction', 'double')],
         'returns': 'tensor'},
 'std_dim': {'doc': 'Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n'
                    "(PyTorch's default correction is 1; NaN or inf where n - correction <= "
                    '0,\n'
                    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
                    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction.",
             'header': 'ops.h',
             'params': [('t', 'tensor'),
                        ('dim', 'int'),
                        ('correction', 'double'),
                        ('keepdim', 'bool')],
             'returns': 'tensor'},
 'std_dims': {'doc': 'Over several dims (as tg_sum_dims): n is the number of elements reduced\n'
                     'into each result.',
              'header': 'ops.h',
              'params': [('t', 'tensor'),
                         ('dims', 'ints'),
                         ('correction', 'double'),
                         ('keepdim', 'bool')],
              'returns': 'tensor'},
 'sub': {'doc': 'elementwise, binary with broadcasting',
         'header': 'ops.h',
         'params': [('a', 'tensor'), ('b', 'tensor')],
         'returns': 'tensor'},
 'sub_': {'doc': 'in-place (bump the version counter, record op name and call site)\n'
                 't may be a view (the write goes to the shared storage). other is broadcast\n'
                 "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
                 "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
                 "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
                 "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
                 'gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n'
                 'grad, a view of one, a view made with grad mode off, a view returned by a\n'
                 'custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n'
                 'their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n'
                 'computed in the promoted dtype and written into t converted, as PyTorch (an\n'
                 'f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where '
                 'the\n'
                 "promoted dtype is of a higher category than t's (a float into an i64 or\n"
                 'bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n'
                 'or bool t is always refused ("result type f32 can\'t be cast to the desired\n'
                 'output type i64"). pow_ of two i64 tensors computes in i64 as tg_pow\n'
                 '(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n'
                 'PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n'
                 "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
                 'pow_ that copy always and t itself after the write (its result), so that\n'
                 'an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n'
                 'operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n'
                 "recorded, it is saved as it was, and the write then fails backward's\n"
                 "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
                 'marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n'
                 "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
                 'overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written '
                 'and\n'
                 'nothing changes on failure (but for a CUDA kernel failing while it writes:\n'
                 'TG_ERR_CUDA).',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('other', 'tensor')],
          'returns': 'status'},
 'sum': {'doc': 'Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n'
                "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
                'mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch).',
         'header': 'ops.h',
         'params': [('t', 'tensor')],
         'returns': 'tensor'},
 'sum_dim': {'doc': 'Along dim (negative allowed); keepdim keeps it as size 1.',
             'header': 'ops.h',
             'params': [('t', 'tensor'), ('dim', 'int'), ('keepdim', 'bool')],
             'returns': 'tensor'},
 'sum_dims': {'doc': "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)\n"
                     '(negative allowed, each at most once; ndims 0 reduces every dim, as\n'
                     "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
                     'tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n'
                     'TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n'
                     'repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other '
                     'multi-dim\n'
                     'reductions below (tg_*_dims) take their dims the same way.',
              'header': 'ops.h',
              'params': [('t', 'tensor'), ('dims', 'ints'), ('keepdim', 'bool')],
              'returns': 'tensor'},
 'tanh': {'doc': 'tanh(t). Gradient g (1 - y^2).',
          'header': 'ops.h',
          'params': [('t', 'tensor')],
          'returns': 'tensor'},
 'to_device': {'doc': 'A contiguous copy of t on device dev (any strides in t), '
                      'differentiable:\n'
                      "backward copies the gradient back to t's device. Returns a new "
                      'reference\n'
                      'to t if t is already on dev. Copies are synchronous. Errors: '
                      'TG_ERR_NULL,\n'
                      'TG_ERR_DEVICE (unknown device, no CUDA device or no CUDA backend: the\n'
                      'message says which), TG_ERR_NOMEM, TG_ERR_CUDA (a CUDA call failed; '
                      'the\n'
                      'message names it).',
               'header': 'tensor.h',
               'params': [('t', 'tensor'), ('dev', 'enum:tg_device')],
               'returns': 'tensor'},
 'to_dtype': {'doc': 'A copy converted to dtype dt (between f32, f64 and bf16 differentiable;\n'
                     'i64 and bool <-> any dtype allowed, not differentiable; to bool: != 0, '
                     'NaN\n'
                     'is true; to bf16: through f32, to nearest even). Returns a new reference '
                     'to\n'
                     't if t already has dtype dt.',
              'header': 'tensor.h',
              'params': [('t', 'tensor'), ('dt', 'enum:tg_dtype')],
              'returns': 'tensor'},
 'topk': {'doc': 'The k largest (largest true) or smallest elements along dim, in sorted '
                 'order\n'
                 "(PyTorch's topk with sorted=True), the positions in *indices; dim's size\n"
                 'becomes k. Equal elements come lowest index first (the stable order;\n'
                 'PyTorch leaves it unspecified). TG_ERR_VALUE for k outside [0, size].',
          'header': 'ops.h',
          'params': [('t', 'tensor'),
                     ('k', 'int64'),
                     ('dim', 'int'),
                     ('largest', 'bool'),
                     ('indices', 'out')],
          'returns': 'tensor'},
 'transpose': {'doc': 'Swaps two dimensions (negative indices allowed). Errors: TG_ERR_DIM.',
               'header': 'tensor.h',
               'params': [('t', 'tensor'), ('d0', 'int'), ('d1', 'int')],
               'returns': 'tensor'},
 'tril': {'doc': 'The elements of the last two dims with j - i >= diagonal (triu) or\n'
                 "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
                 'triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n'
                 'triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n'
                 'than 2 dims), TG_ERR_NOMEM.',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('diagonal', 'int64')],
          'returns': 'tensor'},
 'triu': {'doc': 'The elements of the last two dims with j - i >= diagonal (triu) or\n'
                 "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
                 'triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n'
                 'triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n'
                 'than 2 dims), TG_ERR_NOMEM.',
          'header': 'ops.h',
          'params': [('t', 'tensor'), ('diagonal', 'int64')],
          'returns': 'tensor'},
 'unsqueeze': {'doc': 'With a new size-1 dim at position dim (-(ndim+1) .. ndim), a view. '
                      'Errors:\n'
                      'TG_ERR_DIM (bad dim, or t already has TG_MAX_DIMS dims).',
               'header': 'tensor.h',
               'params': [('t', 'tensor'), ('dim', 'int')],
               'returns': 'tensor'},
 'var': {'doc': 'Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n'
                "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
                "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
                "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction.",
         'header': 'ops.h',
         'params': [('t', 'tensor'), ('correction', 'double')],
         'returns': 'tensor'},
 'var_dim': {'doc': 'Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n'
                    "(PyTorch's default correction is 1; NaN or inf where n - correction <= "
                    '0,\n'
                    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
                    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction.",
             'header': 'ops.h',
             'params': [('t', 'tensor'),
                        ('dim', 'int'),
                        ('correction', 'double'),
                        ('keepdim', 'bool')],
             'returns': 'tensor'},
 'var_dims': {'doc': 'Over several dims (as tg_sum_dims): n is the number of elements reduced\n'
                     'into each result.',
              'header': 'ops.h',
              'params': [('t', 'tensor'),
                         ('dims', 'ints'),
                         ('correction', 'double'),
                         ('keepdim', 'bool')],
              'returns': 'tensor'},
 'view': {'doc': 'Same data seen with a new shape (one size may be -1). Never copies.\n'
                 'Errors: TG_ERR_SHAPE (element counts differ), TG_ERR_LAYOUT (the strides do\n'
                 'not allow it without a copy: use tg_reshape).',
          'header': 'tensor.h',
          'params': [('t', 'tensor'), ('shape', 'int64s')],
          'returns': 'tensor'},
 'where': {'doc': 'cond ? a : b, elementwise; cond is any dtype (non-zero = true; TG_BOOL\n'
                  'from the comparisons below), broadcast with a and b; a and b of any '
                  'dtypes,\n'
                  'promoted (i64 and bool values are selected too, without gradient); cond\n'
                  'gets no gradient.',
           'header': 'ops.h',
           'params': [('cond', 'tensor'), ('a', 'tensor'), ('b', 'tensor')],
           'returns': 'tensor'},
 'xlogy': {'doc': 'x * log(y) elementwise with broadcasting, 0 where x is 0 (even for y 0 or\n'
                  "inf), NaN where y is NaN: PyTorch's xlogy, the term of entropies and KL\n"
                  'divergences (p log p with p 0 gives 0). Integer operands compute in f32, '
                  'as\n'
                  'PyTorch. Gradients as PyTorch: d/dx = xlogy(g, y) (0 where x is 0 and y\n'
                  '<= 0), d/dy = g x / y.\n'
                  'Saves both operands. Errors as tg_add.',
           'header': 'ops.h',
           'params': [('x', 'tensor'), ('y', 'tensor')],
           'returns': 'tensor'},
 'zeros': {'doc': 'A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n'
                  'Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n'
                  'TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows).',
           'header': 'tensor.h',
           'params': [('dt', 'enum:tg_dtype'), ('shape', 'int64s')],
           'returns': 'tensor'}}
