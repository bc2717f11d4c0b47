/* tapegrad/ops.h - differentiable operations and in-place operations.
 *
 * All ops take f32 or f64 tensors (index tensors are i64), any strides
 * (views are read in place), and return a NEW contiguous tensor (or NULL, see
 * status.h; NULL inputs propagate). Binary ops broadcast like NumPy. The
 * binary elementwise ops and tg_where's branches take operands of any dtypes
 * and promote them as PyTorch does (bool < i64 < f32 < f64; a 0-d operand
 * decides only when its category is higher; docs/api.md "Type promotion"),
 * converting an operand of another dtype first (a recorded tg_to_dtype).
 * When grad mode is on and an input requires grad, the result gets a grad_fn
 * and the tensors needed by backward are saved (version-checked).
 *
 * Common errors: TG_ERR_NULL, TG_ERR_DTYPE (a dtype the op does not take),
 * TG_ERR_SHAPE (cannot broadcast), TG_ERR_DIM, TG_ERR_NOMEM.
 */
#ifndef TAPEGRAD_OPS_H
#define TAPEGRAD_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise, binary with broadcasting ------------------------------ */
tg_tensor *tg_add_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_sub_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_mul_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_div_at(tg_site s, tg_tensor *a, tg_tensor *b);
/* Elementwise max/min; where a == b the gradient is split evenly (as PyTorch).
 * NaN in either operand gives NaN. */
tg_tensor *tg_maximum_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_minimum_at(tg_site s, tg_tensor *a, tg_tensor *b);
/* cond ? a : b, elementwise; cond is any dtype (non-zero = true; TG_BOOL
 * from the comparisons below), broadcast with a and b; a and b of any dtypes,
 * promoted (i64 and bool values are selected too, without gradient); cond
 * gets no gradient. */
tg_tensor *tg_where_at(tg_site s, tg_tensor *cond, tg_tensor *a, tg_tensor *b);
/* Two i64 tensors: tg_add, tg_sub, tg_mul, tg_maximum, tg_minimum, tg_pow
 * compute in i64 (wrapping around on overflow, as PyTorch; never
 * differentiable); tg_div gives their true quotient in f32. Two bools: add,
 * mul, maximum, minimum give a bool; tg_sub with a bool operand and tg_pow of
 * two bools are TG_ERR_DTYPE, as in PyTorch.
 * tg_neg, tg_abs, tg_sign, tg_square, tg_floor/ceil/round (a copy), tg_clamp
 * (integer or infinite bounds), tg_scale and tg_add_scalar (an integer k)
 * accept an i64 tensor the same way; the other unary ops refuse it. */

/* a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's
 * rules: the remainder has the divisor's sign), broadcast and promoted as
 * tg_add. Two integer operands compute exactly in i64 (INT64_MIN
 * floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float ones
 * compute as PyTorch's kernels (a zero divisor gives NaN for the remainder,
 * +-inf or NaN for the quotient). Gradients: remainder g for a and
 * -g floor_divide(a, b) for b, as PyTorch; floor_divide is not differentiable
 * (its result never requires grad). Errors: TG_ERR_DTYPE (two bool
 * operands), TG_ERR_VALUE (a zero i64 divisor, naming its first position),
 * TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_remainder_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_floor_divide_at(tg_site s, tg_tensor *a, tg_tensor *b);
#define tg_remainder(a, b) tg_remainder_at(TG_SITE, a, b)
#define tg_floor_divide(a, b) tg_floor_divide_at(TG_SITE, a, b)

/* ---- comparisons and logic (results TG_BOOL, never requiring grad) ------- */
/* a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as
 * tg_add; operands of any dtypes, compared in PyTorch's promoted dtype
 * (bool < i64 < f32 < f64). NaN is unequal to everything, itself included.
 * Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_eq_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ne_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_lt_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_le_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_gt_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ge_at(tg_site s, tg_tensor *a, tg_tensor *b);
#define tg_eq(a, b) tg_eq_at(TG_SITE, a, b)
#define tg_ne(a, b) tg_ne_at(TG_SITE, a, b)
#define tg_lt(a, b) tg_lt_at(TG_SITE, a, b)
#define tg_le(a, b) tg_le_at(TG_SITE, a, b)
#define tg_gt(a, b) tg_gt_at(TG_SITE, a, b)
#define tg_ge(a, b) tg_ge_at(TG_SITE, a, b)
/* t against the number v (PyTorch's t == v, ...): v is converted to t's
 * dtype, except a non-integer v against an i64 or bool t, compared in f32
 * as PyTorch does (its default float dtype), and a bool t against an integer
 * other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,
 * TG_ERR_NOMEM. */
tg_tensor *tg_eq_scalar_at(tg_site s, tg_tensor *t, double v);
tg_tensor *tg_ne_scalar_at(tg_site s, tg_tensor *t, double v);
tg_tensor *tg_lt_scalar_at(tg_site s, tg_tensor *t, double v);
tg_tensor *tg_le_scalar_at(tg_site s, tg_tensor *t, double v);
tg_tensor *tg_gt_scalar_at(tg_site s, tg_tensor *t, double v);
tg_tensor *tg_ge_scalar_at(tg_site s, tg_tensor *t, double v);
#define tg_eq_scalar(t, v) tg_eq_scalar_at(TG_SITE, t, v)
#define tg_ne_scalar(t, v) tg_ne_scalar_at(TG_SITE, t, v)
#define tg_lt_scalar(t, v) tg_lt_scalar_at(TG_SITE, t, v)
#define tg_le_scalar(t, v) tg_le_scalar_at(TG_SITE, t, v)
#define tg_gt_scalar(t, v) tg_gt_scalar_at(TG_SITE, t, v)
#define tg_ge_scalar(t, v) tg_ge_scalar_at(TG_SITE, t, v)
/* Logic on truth values (non-zero, NaN included, is true) of any dtypes,
 * broadcast as tg_add. Errors as tg_eq. */
tg_tensor *tg_logical_and_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_logical_or_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_logical_xor_at(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_logical_not_at(tg_site s, tg_tensor *t);
#define tg_logical_and(a, b) tg_logical_and_at(TG_SITE, a, b)
#define tg_logical_or(a, b) tg_logical_or_at(TG_SITE, a, b)
#define tg_logical_xor(a, b) tg_logical_xor_at(TG_SITE, a, b)
#define tg_logical_not(t) tg_logical_not_at(TG_SITE, t)
/* NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq. */
tg_tensor *tg_isnan_at(tg_site s, tg_tensor *t);
tg_tensor *tg_isinf_at(tg_site s, tg_tensor *t);
tg_tensor *tg_isfinite_at(tg_site s, tg_tensor *t);
#define tg_isnan(t) tg_isnan_at(TG_SITE, t)
#define tg_isinf(t) tg_isinf_at(TG_SITE, t)
#define tg_isfinite(t) tg_isfinite_at(TG_SITE, t)
#define tg_add(a, b) tg_add_at(TG_SITE, a, b)
#define tg_sub(a, b) tg_sub_at(TG_SITE, a, b)
#define tg_mul(a, b) tg_mul_at(TG_SITE, a, b)
#define tg_div(a, b) tg_div_at(TG_SITE, a, b)
#define tg_maximum(a, b) tg_maximum_at(TG_SITE, a, b)
#define tg_minimum(a, b) tg_minimum_at(TG_SITE, a, b)
#define tg_where(c, a, b) tg_where_at(TG_SITE, c, a, b)
/* a ** b elementwise with broadcasting (PyTorch's pow(tensor, tensor); C's
 * pow: NaN for a negative base and a non-integer exponent). Gradients as
 * PyTorch: d/da = b a^(b-1) g (0 where b == 0), d/db = a^b log(a) g (0 where
 * a == 0 and b >= 0). Errors as tg_add. */
tg_tensor *tg_pow_at(tg_site s, tg_tensor *a, tg_tensor *b);
#define tg_pow(a, b) tg_pow_at(TG_SITE, a, b)
/* x * log(y) elementwise with broadcasting, 0 where x is 0 (even for y 0 or
 * inf), NaN where y is NaN: PyTorch's xlogy, the term of entropies and KL
 * divergences (p log p with p 0 gives 0). Integer operands compute in f32, as
 * PyTorch. Gradients as PyTorch: d/dx = xlogy(g, y) (0 where x is 0 and y
 * <= 0), d/dy = g x / y.
 * Saves both operands. Errors as tg_add. */
tg_tensor *tg_xlogy_at(tg_site s, tg_tensor *x, tg_tensor *y);
#define tg_xlogy(x, y) tg_xlogy_at(TG_SITE, x, y)

/* ---- elementwise, unary -------------------------------------------------- */
tg_tensor *tg_neg_at(tg_site s, tg_tensor *t);
tg_tensor *tg_exp_at(tg_site s, tg_tensor *t);
tg_tensor *tg_log_at(tg_site s, tg_tensor *t);
/* Square root; NaN below 0. Gradient g / (2 sqrt(t)) (inf at 0, as PyTorch). */
tg_tensor *tg_sqrt_at(tg_site s, tg_tensor *t);
/* t * k and t + k for a constant k. */
tg_tensor *tg_scale_at(tg_site s, tg_tensor *t, double k);
tg_tensor *tg_add_scalar_at(tg_site s, tg_tensor *t, double k);
/* min(max(t, lo), hi), as PyTorch: pass -INFINITY / INFINITY for no bound;
 * lo > hi gives hi everywhere, a NaN bound NaN everywhere. Gradient 1 where
 * lo <= t <= hi, else 0. */
tg_tensor *tg_clamp_at(tg_site s, tg_tensor *t, double lo, double hi);
/* PyTorch's clamp with tensor bounds: min(max(t, min), max), t, min and max
 * broadcast together, of the dtype PyTorch's result_type gives the three
 * (operands converted first, as tg_add's). min or max NULL: that bound is
 * absent (PyTorch's None); both NULL is TG_ERR_VALUE. A NaN anywhere gives
 * NaN; min > max gives max. i64 works in i64; bool takes one bound only (as
 * PyTorch). Gradients as PyTorch's (clamp_backward_min_max): t gets g where
 * min <= t <= max; min gets g where t < min (and min < max, with both
 * bounds); max gets g where t > max (or max < min). Errors: TG_ERR_NULL (t),
 * TG_ERR_VALUE, TG_ERR_DTYPE (bf16; bool with both bounds), TG_ERR_SHAPE,
 * TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_clamp_tensor_at(tg_site s, tg_tensor *t, tg_tensor *min, tg_tensor *max);
/* PyTorch's nan_to_num: NaN -> nan_value, +inf -> posinf, -inf -> neginf (each
 * converted to t's dtype); a NaN posinf / neginf means PyTorch's default
 * (None): the dtype's largest / lowest finite value. An i64 or bool t is
 * returned as a copy, unchanged (as PyTorch). Gradient g * isfinite(t).
 * Errors: TG_ERR_NULL, TG_ERR_DTYPE (bf16), TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_nan_to_num_at(tg_site s, tg_tensor *t, double nan_value, double posinf,
                             double neginf);
/* The rest of the unary vocabulary, as PyTorch computes each one (values,
 * NaN/inf propagation, the gradient at kinks); f32/f64 only (TG_ERR_DTYPE
 * otherwise), any layout, result contiguous, recorded when t requires grad.
 * Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. */
/* 1 / sqrt(t). Gradient -g / (2 t^1.5) (-inf at 0). */
tg_tensor *tg_rsqrt_at(tg_site s, tg_tensor *t);
/* |t|. Gradient g * sign(t): 0 at 0. */
tg_tensor *tg_abs_at(tg_site s, tg_tensor *t);
/* -1, 0 or 1 (0 for +-0 and NaN, as PyTorch). Gradient 0. */
tg_tensor *tg_sign_at(tg_site s, tg_tensor *t);
/* t * t. Gradient 2 t g. */
tg_tensor *tg_square_at(tg_site s, tg_tensor *t);
/* t ** exponent (PyTorch's pow(tensor, scalar)): the exact forms PyTorch uses
 * for 2, 3, -1, -2, 0.5 (sqrt: (-0) ** 0.5 is -0) and -0.5, else C's pow.
 * Gradient exponent * t ** (exponent - 1) * g, and 0 for exponent 0. */
tg_tensor *tg_pow_scalar_at(tg_site s, tg_tensor *t, double exponent);
/* log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and
 * g (1 + result). */
tg_tensor *tg_log1p_at(tg_site s, tg_tensor *t);
tg_tensor *tg_expm1_at(tg_site s, tg_tensor *t);
/* 1 / (1 + exp(-t)). Gradient g (1 - y) y. */
tg_tensor *tg_sigmoid_at(tg_site s, tg_tensor *t);
/* log(sigmoid(t)) = min(t, 0) - log1p(exp(-|t|)): finite for every finite t
 * (-1000 gives -1000, not -inf). Gradient g sigmoid(-t). */
tg_tensor *tg_logsigmoid_at(tg_site s, tg_tensor *t);
/* log(1 + exp(beta t)) / beta, and t itself where beta t > threshold (PyTorch's
 * defaults: beta 1, threshold 20). Gradient g sigmoid(beta t), g above the
 * threshold. */
tg_tensor *tg_softplus_at(tg_site s, tg_tensor *t, double beta, double threshold);
/* tanh(t). Gradient g (1 - y^2). */
tg_tensor *tg_tanh_at(tg_site s, tg_tensor *t);
/* max(t, 0); NaN stays NaN, -0 stays -0. Gradient g where the result > 0,
 * else 0 (0 at 0, as PyTorch). */
tg_tensor *tg_relu_at(tg_site s, tg_tensor *t);
/* GELU: t * Phi(t) with the erf (TG_GELU_NONE) or PyTorch's tanh
 * approximation (TG_GELU_TANH). Error TG_ERR_VALUE for another value. */
typedef enum tg_gelu_approx { TG_GELU_NONE = 0, TG_GELU_TANH = 1 } tg_gelu_approx;
tg_tensor *tg_gelu_at(tg_site s, tg_tensor *t, tg_gelu_approx approximate);
/* t * sigmoid(t) (SiLU / swish). Gradient g s (1 + t (1 - s)), s = sigmoid(t). */
tg_tensor *tg_silu_at(tg_site s, tg_tensor *t);
/* 1 / t. Gradient -g / t^2. */
tg_tensor *tg_reciprocal_at(tg_site s, tg_tensor *t);
/* Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient
 * 0 (recorded, as in PyTorch). */
tg_tensor *tg_floor_at(tg_site s, tg_tensor *t);
tg_tensor *tg_ceil_at(tg_site s, tg_tensor *t);
tg_tensor *tg_round_at(tg_site s, tg_tensor *t);
#define tg_neg(t) tg_neg_at(TG_SITE, t)
#define tg_exp(t) tg_exp_at(TG_SITE, t)
#define tg_log(t) tg_log_at(TG_SITE, t)
#define tg_sqrt(t) tg_sqrt_at(TG_SITE, t)
#define tg_scale(t, k) tg_scale_at(TG_SITE, t, k)
#define tg_add_scalar(t, k) tg_add_scalar_at(TG_SITE, t, k)
#define tg_clamp(t, lo, hi) tg_clamp_at(TG_SITE, t, lo, hi)
#define tg_clamp_tensor(t, min, max) tg_clamp_tensor_at(TG_SITE, t, min, max)
#define tg_nan_to_num(t, nan_value, posinf, neginf) \
    tg_nan_to_num_at(TG_SITE, t, nan_value, posinf, neginf)
#define tg_rsqrt(t) tg_rsqrt_at(TG_SITE, t)
#define tg_abs(t) tg_abs_at(TG_SITE, t)
#define tg_sign(t) tg_sign_at(TG_SITE, t)
#define tg_square(t) tg_square_at(TG_SITE, t)
#define tg_pow_scalar(t, e) tg_pow_scalar_at(TG_SITE, t, e)
#define tg_log1p(t) tg_log1p_at(TG_SITE, t)
#define tg_expm1(t) tg_expm1_at(TG_SITE, t)
#define tg_sigmoid(t) tg_sigmoid_at(TG_SITE, t)
#define tg_logsigmoid(t) tg_logsigmoid_at(TG_SITE, t)
#define tg_softplus(t, beta, threshold) tg_softplus_at(TG_SITE, t, beta, threshold)
#define tg_tanh(t) tg_tanh_at(TG_SITE, t)
#define tg_relu(t) tg_relu_at(TG_SITE, t)
#define tg_gelu(t, approximate) tg_gelu_at(TG_SITE, t, approximate)
#define tg_silu(t) tg_silu_at(TG_SITE, t)
#define tg_reciprocal(t) tg_reciprocal_at(TG_SITE, t)
#define tg_floor(t) tg_floor_at(TG_SITE, t)
#define tg_ceil(t) tg_ceil_at(TG_SITE, t)
#define tg_round(t) tg_round_at(TG_SITE, t)

/* ---- joining --------------------------------------------------------------- */
/* The n tensors joined along dim (PyTorch's cat): any dtypes (promoted as
 * tg_add: each converted by a recorded tg_to_dtype, its gradient back in its
 * own dtype), one device, one number of dims (>= 1), the same sizes but along
 * dim. A new contiguous
 * tensor; recorded when an input requires grad (nothing saved; input i's
 * gradient is its window of the result's). Errors: TG_ERR_VALUE (n < 1),
 * TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_SHAPE, TG_ERR_DIM (0-d inputs, bad dim),
 * TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_cat_at(tg_site s, int n, tg_tensor *const *tensors, int dim);
/* The n tensors of one shape stacked along a new dim (0 .. ndim, negative
 * from the end): cat of their tg_unsqueeze(t, dim). Errors as tg_cat. */
tg_tensor *tg_stack_at(tg_site s, int n, tg_tensor *const *tensors, int dim);
#define tg_cat(n, ...) tg_cat_at(TG_SITE, n, __VA_ARGS__) /* (n, tensors, dim) */
#define tg_stack(n, ...) tg_stack_at(TG_SITE, n, __VA_ARGS__) /* (n, tensors, dim) */

/* ---- triangles -------------------------------------------------------------- */
/* The elements of the last two dims with j - i >= diagonal (triu) or
 * j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's
 * triu/tril: causal masks, discount matrices. A new tensor; gradient the same
 * triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer
 * than 2 dims), TG_ERR_NOMEM. */
tg_tensor *tg_triu_at(tg_site s, tg_tensor *t, int64_t diagonal);
tg_tensor *tg_tril_at(tg_site s, tg_tensor *t, int64_t diagonal);
#define tg_triu(t, diagonal) tg_triu_at(TG_SITE, t, diagonal)
/* t with value where mask is non-zero (PyTorch's masked_fill, out of place;
 * mask of any dtype, broadcast to t's shape). Gradient to t where the mask
 * is 0. Errors: TG_ERR_NULL, TG_ERR_SHAPE (the mask would change t's shape),
 * those of tg_where. */
tg_tensor *tg_masked_fill_at(tg_site s, tg_tensor *t, tg_tensor *mask, double value);
#define tg_masked_fill(t, mask, value) tg_masked_fill_at(TG_SITE, t, mask, value)
#define tg_tril(t, diagonal) tg_tril_at(TG_SITE, t, diagonal)

/* ---- losses ----------------------------------------------------------------- */
/* Composed from the recorded ops (the graph is the formula's), PyTorch's
 * values and gradients; input and target broadcast and promoted as tg_sub. reduction: the elementwise loss, its mean or its sum (0-d); what
 * MEAN divides by is each loss's (every element for most; the rows kept, or
 * their class weights' sum, for tg_cross_entropy and tg_nll_loss).
 * TG_REDUCTION_BATCHMEAN (PyTorch's 'batchmean': the sum divided by
 * input.size(0)) is tg_kl_div's only; the other losses refuse it, as PyTorch
 * does. Errors: those of the ops (TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DTYPE,
 * ...), TG_ERR_VALUE for another reduction. */
typedef enum tg_reduction {
    TG_REDUCTION_NONE = 0,
    TG_REDUCTION_MEAN = 1,
    TG_REDUCTION_SUM = 2,
    TG_REDUCTION_BATCHMEAN = 3
} tg_reduction;
/* (input - target)^2. */
tg_tensor *tg_mse_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r);
/* Huber-like: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d =
 * input - target; beta 0: |d|; PyTorch's default beta is 1). TG_ERR_VALUE
 * for a negative, NaN or infinite beta. */
tg_tensor *tg_smooth_l1_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                                double beta);
/* Binary cross-entropy on logits, stable for large |input|:
 * (1 - target) input - w logsigmoid(input), w = 1 + (pos_weight - 1) target
 * (pos_weight may be NULL: w = 1). */
tg_tensor *tg_binary_cross_entropy_with_logits_at(tg_site s, tg_tensor *input,
                                                  tg_tensor *target, tg_tensor *pos_weight,
                                                  tg_reduction r);
/* sum(x * mask) / sum(mask) along dim (all: over every element, dim
 * ignored), mask broadcast to x's shape (e.g. float 0/1). A dim or row with an
 * all-zero mask gives NaN (0 / 0), as the trainers' formula. Gradient to x;
 * the mask gets one too if it requires grad. Errors: those of tg_mul,
 * tg_sum_dim, TG_ERR_DIM. */
tg_tensor *tg_masked_mean_at(tg_site s, tg_tensor *x, tg_tensor *mask, int dim, bool all);
/* PyTorch's cross_entropy: input (C) with a 0-d target, or (N, C, d1, ...)
 * with target (N, d1, ...) of i64 class indices; weight NULL or (C) class
 * weights of input's dtype (not owned; never differentiated). A row's loss is
 * w[y] (-log p[y]); rows whose target is ignore_index give 0 and no gradient;
 * label_smoothing in [0, 1] mixes in eps / C * (-sum_c w_c log p_c) (PyTorch's
 * formula; w_c = 1 without weights). MEAN divides by the sum of w[y] over the
 * rows kept (their number without weights; NaN when none is). Computed by the
 * fused log-prob op (no (N, C) tensor is saved for the log-likelihood term;
 * label smoothing adds a log_softmax). Errors: those of tg_logprob_entropy (a
 * target outside [0, C), a kept row of NaN or all -inf logits: PyTorch returns
 * NaN there), TG_ERR_VALUE for label_smoothing or reduction (BATCHMEAN
 * included), TG_ERR_SHAPE / TG_ERR_DTYPE / TG_ERR_DEVICE for a weight that is
 * not (C), of input's dtype, on its device, TG_ERR_AUTOGRAD for a weight that
 * requires grad while grad mode is on (as PyTorch 1.13). */
tg_tensor *tg_cross_entropy_at(tg_site s, tg_tensor *input, tg_tensor *target,
                               tg_tensor *weight, int64_t ignore_index, double label_smoothing,
                               tg_reduction r);
#define tg_cross_entropy(input, target, weight, ignore_index, label_smoothing, r) \
    tg_cross_entropy_at(TG_SITE, input, target, weight, ignore_index, label_smoothing, r)
/* PyTorch's kl_div: input holds log-probabilities; target probabilities
 * (target (log target - input), 0 where target is 0) or, with log_target,
 * log-probabilities (exp(target) (target - input)). MEAN averages over every
 * element, as PyTorch's 'mean'; TG_REDUCTION_BATCHMEAN (PyTorch's
 * 'batchmean', the KL divergence's true mean per sample) divides the sum by
 * input.size(0) (a 0-d input: the sum; size 0: NaN, as PyTorch). */
tg_tensor *tg_kl_div_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                        bool log_target);
#define tg_kl_div(input, target, r, log_target) tg_kl_div_at(TG_SITE, input, target, r, log_target)
/* PyTorch's nll_loss: -w[target] input[..., target] with input holding
 * log-probabilities in PyTorch's layouts ((C) with a 0-d target, or (N, C,
 * d1, ...) with target (N, d1, ...)); weight NULL (w = 1) or (C) class
 * weights as tg_cross_entropy's; ignored rows give 0 and no gradient; MEAN
 * divides by the sum of w[target] over the rows kept (NaN when none is).
 * Errors: TG_ERR_DTYPE (target not i64), TG_ERR_SHAPE, TG_ERR_VALUE (a
 * target outside [0, C): names its position; the reduction), the weight's
 * errors of tg_cross_entropy, and those of the ops. */
tg_tensor *tg_nll_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                          int64_t ignore_index, tg_reduction r);
#define tg_nll_loss(input, target, weight, ignore_index, r) \
    tg_nll_loss_at(TG_SITE, input, target, weight, ignore_index, r)
/* An i64 tensor of target's shape plus a last dim of num_classes, 1 at each
 * target's class and 0 elsewhere (PyTorch's one_hot; num_classes -1: the
 * largest target + 1). No gradient. Errors: TG_ERR_DTYPE (target not i64),
 * TG_ERR_VALUE (a target outside [0, num_classes), a num_classes below -1, or
 * -1 with an empty target), TG_ERR_DIM (target has TG_MAX_DIMS dims). */
tg_tensor *tg_one_hot_at(tg_site s, tg_tensor *target, int64_t num_classes);
#define tg_one_hot(target, num_classes) tg_one_hot_at(TG_SITE, target, num_classes)
#define tg_mse_loss(input, target, r) tg_mse_loss_at(TG_SITE, input, target, r)
#define tg_smooth_l1_loss(input, target, r, beta) \
    tg_smooth_l1_loss_at(TG_SITE, input, target, r, beta)
#define tg_binary_cross_entropy_with_logits(input, target, pos_weight, r) \
    tg_binary_cross_entropy_with_logits_at(TG_SITE, input, target, pos_weight, r)
#define tg_masked_mean(x, mask, dim, all) tg_masked_mean_at(TG_SITE, x, mask, dim, all)
/* How RL trainers turn a per-token loss (..., tokens) and its mask into one
 * number: TG_AGG_TOKEN_MEAN sum(loss * mask) / sum(mask) over everything;
 * TG_AGG_SEQ_MEAN_TOKEN_SUM the mean over sequences of each one's masked sum;
 * TG_AGG_SEQ_MEAN_TOKEN_MEAN the mean over sequences of each one's masked
 * mean (a sequence with an all-zero mask makes it NaN, as the trainers'
 * formula). A 0-d tensor. Errors: TG_ERR_VALUE (mode), TG_ERR_DIM (0-d loss),
 * those of the ops. */
typedef enum tg_agg_mode {
    TG_AGG_TOKEN_MEAN = 0,
    TG_AGG_SEQ_MEAN_TOKEN_SUM = 1,
    TG_AGG_SEQ_MEAN_TOKEN_MEAN = 2
} tg_agg_mode;
tg_tensor *tg_agg_loss_at(tg_site s, tg_tensor *loss, tg_tensor *mask, tg_agg_mode mode);
#define tg_agg_loss(loss, mask, mode) tg_agg_loss_at(TG_SITE, loss, mask, mode)

/* ---- reductions ------------------------------------------------------------ */
/* Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The
 * sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's
 * mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch). */
tg_tensor *tg_sum_at(tg_site s, tg_tensor *t);
tg_tensor *tg_mean_at(tg_site s, tg_tensor *t);
/* Along dim (negative allowed); keepdim keeps it as size 1. */
tg_tensor *tg_sum_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg_mean_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_sum(t) tg_sum_at(TG_SITE, t)
#define tg_mean(t) tg_mean_at(TG_SITE, t)
#define tg_sum_dim(t, dim, keepdim) tg_sum_dim_at(TG_SITE, t, dim, keepdim)
#define tg_mean_dim(t, dim, keepdim) tg_mean_dim_at(TG_SITE, t, dim, keepdim)
/* Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)
 * (negative allowed, each at most once; ndims 0 reduces every dim, as
 * PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as
 * tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),
 * TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or
 * repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other multi-dim
 * reductions below (tg_*_dims) take their dims the same way. */
tg_tensor *tg_sum_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim);
tg_tensor *tg_mean_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim);
#define tg_sum_dims(t, ndims, dims, keepdim) tg_sum_dims_at(TG_SITE, t, ndims, dims, keepdim)
/* PyTorch's count_nonzero(t, dims): the number of non-zero elements (NaN
 * counts) of a tensor of any dtype over the dims listed (every dim for ndims
 * 0), exactly, as an i64 tensor without those dims; never requires grad.
 * Errors: those of tg_sum_dims, TG_ERR_DTYPE for bf16. */
tg_tensor *tg_count_nonzero_at(tg_site s, tg_tensor *t, int ndims, const int *dims);
#define tg_count_nonzero(t, ndims, dims) tg_count_nonzero_at(TG_SITE, t, ndims, dims)
#define tg_mean_dims(t, ndims, dims, keepdim) tg_mean_dims_at(TG_SITE, t, ndims, dims, keepdim)

/* The other reductions, PyTorch's names and gradients; over all elements (a
 * 0-d result) or along dim (negative allowed; keepdim keeps it as size 1; a
 * 0-d t is one element). f32/f64 unless stated; results contiguous,
 * recorded when t requires grad. Errors: TG_ERR_NULL, TG_ERR_DTYPE,
 * TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM, and those stated. */
/* Largest / smallest element (NaN if there is one). Gradient split evenly
 * among the elements equal to the result; NaN for a line holding a NaN (as
 * PyTorch's amax). TG_ERR_SHAPE for an empty line. */
tg_tensor *tg_amax_at(tg_site s, tg_tensor *t);
tg_tensor *tg_amin_at(tg_site s, tg_tensor *t);
tg_tensor *tg_amax_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg_amin_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_amax(t) tg_amax_at(TG_SITE, t)
#define tg_amin(t) tg_amin_at(TG_SITE, t)
#define tg_amax_dim(t, dim, keepdim) tg_amax_dim_at(TG_SITE, t, dim, keepdim)
#define tg_amin_dim(t, dim, keepdim) tg_amin_dim_at(TG_SITE, t, dim, keepdim)
/* Over several dims (as tg_sum_dims): the gradient is split evenly among all
 * the elements of the reduced set equal to the result, as PyTorch's. */
tg_tensor *tg_amax_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim);
tg_tensor *tg_amin_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim);
#define tg_amax_dims(t, ndims, dims, keepdim) tg_amax_dims_at(TG_SITE, t, ndims, dims, keepdim)
#define tg_amin_dims(t, ndims, dims, keepdim) tg_amin_dims_at(TG_SITE, t, ndims, dims, keepdim)
/* PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when
 * indices is not NULL, *indices = their i64 positions along dim (the first
 * extreme, or the first NaN), a second new reference owned like the result.
 * Gradient all to that position. TG_ERR_SHAPE for an empty line. */
tg_tensor *tg_max_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim, tg_tensor **indices);
tg_tensor *tg_min_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim, tg_tensor **indices);
#define tg_max_dim(t, dim, keepdim, indices) tg_max_dim_at(TG_SITE, t, dim, keepdim, indices)
#define tg_min_dim(t, dim, keepdim, indices) tg_min_dim_at(TG_SITE, t, dim, keepdim, indices)
/* i64 position of the first largest / smallest element (the first NaN if
 * any); over all elements it indexes t flattened in C order. Any dtype. */
tg_tensor *tg_argmax_at(tg_site s, tg_tensor *t);
tg_tensor *tg_argmin_at(tg_site s, tg_tensor *t);
tg_tensor *tg_argmax_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg_argmin_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_argmax(t) tg_argmax_at(TG_SITE, t)
#define tg_argmin(t) tg_argmin_at(TG_SITE, t)
#define tg_argmax_dim(t, dim, keepdim) tg_argmax_dim_at(TG_SITE, t, dim, keepdim)
#define tg_argmin_dim(t, dim, keepdim) tg_argmin_dim_at(TG_SITE, t, dim, keepdim)
/* log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf
 * for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - result)
 * (NaN on an all -inf line, as PyTorch). */
tg_tensor *tg_logsumexp_at(tg_site s, tg_tensor *t);
tg_tensor *tg_logsumexp_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_logsumexp(t) tg_logsumexp_at(TG_SITE, t)
#define tg_logsumexp_dim(t, dim, keepdim) tg_logsumexp_dim_at(TG_SITE, t, dim, keepdim)
/* Over several dims (as tg_sum_dims). */
tg_tensor *tg_logsumexp_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims,
                                bool keepdim);
#define tg_logsumexp_dims(t, ndims, dims, keepdim) \
    tg_logsumexp_dims_at(TG_SITE, t, ndims, dims, keepdim)
/* Product (1 for an empty line). Gradient: g times the product of the other
 * elements, exact where t has zeros (no division). */
tg_tensor *tg_prod_at(tg_site s, tg_tensor *t);
tg_tensor *tg_prod_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_prod(t) tg_prod_at(TG_SITE, t)
#define tg_prod_dim(t, dim, keepdim) tg_prod_dim_at(TG_SITE, t, dim, keepdim)
/* Whether any / every element is non-zero (NaN is true): a TG_BOOL result;
 * any dtype; false / true for an empty line. Not differentiable. */
tg_tensor *tg_any_at(tg_site s, tg_tensor *t);
tg_tensor *tg_all_at(tg_site s, tg_tensor *t);
tg_tensor *tg_any_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg_all_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim);
#define tg_any(t) tg_any_at(TG_SITE, t)
#define tg_all(t) tg_all_at(TG_SITE, t)
#define tg_any_dim(t, dim, keepdim) tg_any_dim_at(TG_SITE, t, dim, keepdim)
#define tg_all_dim(t, dim, keepdim) tg_all_dim_at(TG_SITE, t, dim, keepdim)
/* Cumulative sum / product along dim (t's shape), accumulated in double.
 * Both also take i64 and bool tensors: an exact i64 result (wrapping around
 * on overflow), as PyTorch. Gradients: the
 * reversed cumulative sum of g; for cumprod, exact at zeros. Errors:
 * TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_cumsum_at(tg_site s, tg_tensor *t, int dim);
tg_tensor *tg_cumprod_at(tg_site s, tg_tensor *t, int dim);
#define tg_cumsum(t, dim) tg_cumsum_at(TG_SITE, t, dim)
#define tg_cumprod(t, dim) tg_cumprod_at(TG_SITE, t, dim)
/* The discounted reverse cumulative sum along dim of an f32/f64 tensor:
 * y_j = x_j + gamma y_{j+1}, y_last = x_last (RL returns; GAE advantages with
 * gamma * lambda), accumulated in double; a new tensor of x's shape. No
 * PyTorch op: the loop `for j reversed: y[j] = x[j] + gamma * y[j+1]`.
 * Gradient: dx_j = g_j + gamma dx_{j-1}. Errors: TG_ERR_NULL, TG_ERR_DTYPE,
 * TG_ERR_DIM, TG_ERR_VALUE (gamma NaN or infinite), TG_ERR_DEVICE,
 * TG_ERR_NOMEM. */
tg_tensor *tg_discounted_cumsum_at(tg_site s, tg_tensor *x, double gamma, int dim);
#define tg_discounted_cumsum(x, gamma, dim) tg_discounted_cumsum_at(TG_SITE, x, gamma, dim)
/* Variance and standard deviation: sum((t - mean)^2) / (n - correction)
 * (PyTorch's default correction is 1; NaN or inf where n - correction <= 0,
 * as PyTorch). std's gradient is 0 where std is 0 (a constant line), as
 * PyTorch's. TG_ERR_VALUE for a negative or non-finite correction. */
tg_tensor *tg_var_at(tg_site s, tg_tensor *t, double correction);
tg_tensor *tg_var_dim_at(tg_site s, tg_tensor *t, int dim, double correction, bool keepdim);
tg_tensor *tg_std_at(tg_site s, tg_tensor *t, double correction);
tg_tensor *tg_std_dim_at(tg_site s, tg_tensor *t, int dim, double correction, bool keepdim);
#define tg_var(t, correction) tg_var_at(TG_SITE, t, correction)
#define tg_var_dim(t, dim, correction, keepdim) tg_var_dim_at(TG_SITE, t, dim, correction, keepdim)
#define tg_std(t, correction) tg_std_at(TG_SITE, t, correction)
#define tg_std_dim(t, dim, correction, keepdim) tg_std_dim_at(TG_SITE, t, dim, correction, keepdim)
/* Over several dims (as tg_sum_dims): n is the number of elements reduced
 * into each result. */
tg_tensor *tg_var_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, double correction,
                          bool keepdim);
tg_tensor *tg_std_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, double correction,
                          bool keepdim);
#define tg_var_dims(t, ndims, dims, correction, keepdim) \
    tg_var_dims_at(TG_SITE, t, ndims, dims, correction, keepdim)
#define tg_std_dims(t, ndims, dims, correction, keepdim) \
    tg_std_dims_at(TG_SITE, t, ndims, dims, correction, keepdim)
/* Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,
 * sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count
 * of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in
 * double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty
 * line with p infinite or negative, as PyTorch (no identity). Gradients as
 * PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is
 * 0, for 2; g sign(t) split evenly among the elements of extreme magnitude
 * for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise. */
tg_tensor *tg_norm_at(tg_site s, tg_tensor *t, double p);
tg_tensor *tg_norm_dim_at(tg_site s, tg_tensor *t, double p, int dim, bool keepdim);
#define tg_norm(t, p) tg_norm_at(TG_SITE, t, p)
#define tg_norm_dim(t, p, dim, keepdim) tg_norm_dim_at(TG_SITE, t, p, dim, keepdim)

/* ---- linear algebra ----------------------------------------------------- */
/* a (..., M, K) @ b (..., K, N) -> (..., M, N) through CBLAS. Both 2-D, or
 * batched with equal leading dims, or a batched and b 2-D (shared weight).
 * f32 or f64 of one dtype, or two bf16 operands: then both are converted to
 * f32 (what backward saves) and the result is f32.
 * Errors: TG_ERR_DTYPE; TG_ERR_SHAPE (inner sizes or batch dims differ,
 * ndim < 2). */
tg_tensor *tg_matmul_at(tg_site s, tg_tensor *a, tg_tensor *b);
#define tg_matmul(a, b) tg_matmul_at(TG_SITE, a, b)

/* ---- softmax family, gather (last dimension) ---------------------------- */
/* Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d tensor
 * is one row of one element), PyTorch's softmax(t, -1): a new contiguous
 * tensor of t's shape, rows reduced in double with the row max subtracted; a
 * row of all -inf gives NaN, a -inf entry probability 0. Saves the output.
 * Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_softmax_at(tg_site s, tg_tensor *t);
tg_tensor *tg_log_softmax_at(tg_site s, tg_tensor *t);
/* The same along dim (negative from the end), PyTorch's softmax(t, dim): the
 * rows along dim are read and written in place (no transposed copy).
 * Errors: as tg_softmax, and TG_ERR_DIM. */
tg_tensor *tg_softmax_dim_at(tg_site s, tg_tensor *t, int dim);
tg_tensor *tg_log_softmax_dim_at(tg_site s, tg_tensor *t, int dim);
#define tg_softmax_dim(t, dim) tg_softmax_dim_at(TG_SITE, t, dim)
#define tg_log_softmax_dim(t, dim) tg_log_softmax_dim_at(TG_SITE, t, dim)
/* out[..., j] = t[..., index[..., j]]; index is i64 with t's leading shape and
 * any last size. Errors: TG_ERR_DTYPE (index not i64), TG_ERR_SHAPE (leading
 * shapes differ), TG_ERR_VALUE (an index outside [0, size); the message names
 * the position and the value). */
tg_tensor *tg_gather_at(tg_site s, tg_tensor *t, tg_tensor *index);
/* PyTorch's gather(t, dim, index): out[i][j][k] = t[index[i][j][k]][j][k] for
 * dim 0, and so on; index i64 of t's ndim and t's sizes but along dim (any
 * size there: PyTorch also allows smaller sizes elsewhere, tapegrad not).
 * Gradient: scattered back, repeats added. Errors as tg_gather, and
 * TG_ERR_DIM. */
tg_tensor *tg_gather_dim_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index);
/* A copy of t with src added at index along dim (PyTorch's scatter_add):
 * out[index[i][j]][j] += src[i][j] for dim 0; index and src of one shape,
 * t's sizes but along dim; repeated indices add up. Gradients: g for t, g
 * gathered at index for src. Errors: TG_ERR_NULL, TG_ERR_DTYPE (t and src
 * of one float dtype, index i64), TG_ERR_SHAPE, TG_ERR_DIM, TG_ERR_VALUE (an
 * index out of range, named), TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_scatter_add_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index, tg_tensor *src);
/* t's entries index[0], index[1], ... along dim (a 1-D i64 index, repeats
 * allowed): PyTorch's index_select. Errors as tg_gather_dim, TG_ERR_SHAPE for
 * an index of 2 or more dims. */
tg_tensor *tg_index_select_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index);
/* t reversed along each of dims[0..ndims) (a copy, as PyTorch). Gradient: g
 * flipped back. Errors: TG_ERR_DIM (out of range or repeated), TG_ERR_VALUE
 * (ndims outside 0..8, dims NULL). */
tg_tensor *tg_flip_at(tg_site s, tg_tensor *t, int ndims, const int *dims);
#define tg_gather_dim(t, dim, index) tg_gather_dim_at(TG_SITE, t, dim, index)
#define tg_scatter_add(t, dim, index, src) tg_scatter_add_at(TG_SITE, t, dim, index, src)
#define tg_index_select(t, dim, index) tg_index_select_at(TG_SITE, t, dim, index)
#define tg_flip(t, ...) tg_flip_at(TG_SITE, t, __VA_ARGS__) /* (t, ndims, dims) */
#define tg_softmax(t) tg_softmax_at(TG_SITE, t)
#define tg_log_softmax(t) tg_log_softmax_at(TG_SITE, t)
#define tg_gather(t, index) tg_gather_at(TG_SITE, t, index)

/* ---- selection and rearrangement ------------------------------------------
 * New contiguous tensors (new references), any strides in, empty dims
 * allowed, negative dims counted from the end. t of dtype f32, f64, i64 or
 * bool; gradients for f32/f64 (tg_select, a view, is in tensor.h). */

/* PyTorch's t[:, ..., index] with `index` at dim: an i64 index of any shape
 * (0-d too), entries in [-size, size) (negative ones count from the end),
 * repeats allowed. Result shape t.shape[:dim] + index.shape +
 * t.shape[dim+1:]. Gradient: g added back at the indexed positions (repeats
 * add up); the index is saved (version-checked, as PyTorch). Errors:
 * TG_ERR_NULL, TG_ERR_DTYPE (index not i64 — a bool index is a mask: use
 * tg_masked_select —, or t of another dtype), TG_ERR_DIM (t 0-d, dim out of
 * range), TG_ERR_VALUE (an index out of range: the message names its
 * position in index and its value; or a result of more than TG_MAX_DIMS
 * dims), TG_ERR_DEVICE, TG_ERR_NOMEM. */
tg_tensor *tg_index_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index);
/* The elements of t where mask (TG_BOOL) is true, t and mask broadcast
 * together, in C order of the broadcast shape: a 1-D tensor (PyTorch's
 * masked_select). Its length depends on the mask's values, so the mask is
 * read on the host: for CUDA tensors a copy of it comes back to the host
 * (the call waits for the device). Gradient: g put back at the selected
 * positions, summed over the dims along which t was broadcast. Saves the
 * selected positions (not t or mask: editing them in place afterwards does
 * not fail backward, as PyTorch's would). Errors: TG_ERR_NULL, TG_ERR_DTYPE
 * (mask not bool, as PyTorch 1.13; t of another dtype), TG_ERR_SHAPE (t and
 * mask do not broadcast), TG_ERR_DEVICE, TG_ERR_NOMEM, TG_ERR_CUDA. */
tg_tensor *tg_masked_select_at(tg_site s, tg_tensor *t, tg_tensor *mask);
/* PyTorch's roll: t with its elements shifted cyclically by shifts[k] along
 * dims[k] (any sign and size; a dim given twice is rolled twice), or with
 * ndims 0 (dims may be NULL) by shifts[0] over the flattened elements, the
 * shape kept. Gradient: g rolled back; saves nothing. Any dtype. Errors:
 * TG_ERR_NULL, TG_ERR_VALUE (nshifts != ndims, or ndims 0 and nshifts != 1,
 * or a negative count), TG_ERR_DIM (a dim out of range, dims given for a 0-d
 * t), TG_ERR_NOMEM. */
tg_tensor *tg_roll_at(tg_site s, tg_tensor *t, int nshifts, const int64_t *shifts, int ndims,
                      const int *dims);
/* PyTorch's t.repeat(repeats): t tiled repeats[i] times along dim i; t is
 * first seen with ndim - t.ndim new leading size-1 dims. A repeat of 0 gives
 * an empty result; always a copy. Gradient: g summed over the copies. Any
 * dtype. Errors: TG_ERR_NULL, TG_ERR_VALUE (ndim < t's ndim as PyTorch, ndim
 * over TG_MAX_DIMS, a negative repeat), TG_ERR_SHAPE (result too large),
 * TG_ERR_NOMEM. */
tg_tensor *tg_repeat_at(tg_site s, tg_tensor *t, int ndim, const int64_t *repeats);
#define tg_index(t, dim, index) tg_index_at(TG_SITE, t, dim, index)
#define tg_masked_select(t, mask) tg_masked_select_at(TG_SITE, t, mask)
/* (t, nshifts, shifts, ndims, dims) */
#define tg_roll(t, ...) tg_roll_at(TG_SITE, t, __VA_ARGS__)
#define tg_repeat(t, ...) tg_repeat_at(TG_SITE, t, __VA_ARGS__) /* (t, ndim, repeats) */

/* ---- sorting ----------------------------------------------------------------
 * Along dim (negative from the end; a 0-d t is one element, dim 0 or -1) of t
 * f32, f64, i64 or bool (tg_topk: not bool, as PyTorch), any strides, empty
 * dims allowed. The order is PyTorch's stable sort (sort(stable=True)):
 * ascending, or descending; equal elements keep their index order; NaN is
 * larger than +inf (last ascending, first descending); -0.0 equals +0.0.
 * Results are new contiguous tensors; indices are i64. The values of a float
 * t are recorded (their gradient is scattered back to the indices, as
 * PyTorch's); i64 and bool values never require grad. When indices is not
 * NULL, *indices receives a second new reference owned like the result
 * (NULL on failure). Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM,
 * TG_ERR_DEVICE, TG_ERR_NOMEM, and those stated. */
/* The positions along dim that sort t (PyTorch's argsort(stable=True)). */
tg_tensor *tg_argsort_at(tg_site s, tg_tensor *t, int dim, bool descending);
/* The sorted values of t along dim, the positions in *indices. */
tg_tensor *tg_sort_at(tg_site s, tg_tensor *t, int dim, bool descending, tg_tensor **indices);
/* The k largest (largest true) or smallest elements along dim, in sorted order
 * (PyTorch's topk with sorted=True), the positions in *indices; dim's size
 * becomes k. Equal elements come lowest index first (the stable order;
 * PyTorch leaves it unspecified). TG_ERR_VALUE for k outside [0, size]. */
tg_tensor *tg_topk_at(tg_site s, tg_tensor *t, int64_t k, int dim, bool largest,
                      tg_tensor **indices);
#define tg_argsort(t, dim, descending) tg_argsort_at(TG_SITE, t, dim, descending)
#define tg_sort(t, dim, descending, indices) tg_sort_at(TG_SITE, t, dim, descending, indices)
#define tg_topk(t, k, dim, largest, indices) tg_topk_at(TG_SITE, t, k, dim, largest, indices)

/* ---- in-place (bump the version counter, record op name and call site) ----
 * t may be a view (the write goes to the shared storage). other is broadcast
 * to t's shape. With grad mode on and t or other requiring grad, the op is
 * recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view
 * its base's grad_fn becomes CopySlices (views of the base made earlier see
 * the edit). fill_ and copy_ keep t's history, which then gets a zero
 * gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires
 * grad, a view of one, a view made with grad mode off, a view returned by a
 * custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands
 * their out-of-place ops take (i64 and bool tensors too, mixed dtypes),
 * computed in the promoted dtype and written into t converted, as PyTorch (an
 * f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the
 * promoted dtype is of a higher category than t's (a float into an i64 or
 * bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64
 * or bool t is always refused ("result type f32 can't be cast to the desired
 * output type i64"). pow_ of two i64 tensors computes in i64 as tg_pow
 * (1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as
 * PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is
 * PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,
 * pow_ that copy always and t itself after the write (its result), so that
 * an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An
 * operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;
 * recorded, it is saved as it was, and the write then fails backward's
 * version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is
 * marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other
 * does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has
 * overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and
 * nothing changes on failure (but for a CUDA kernel failing while it writes:
 * TG_ERR_CUDA). */
tg_status tg_add__at(tg_site s, tg_tensor *t, tg_tensor *other);
tg_status tg_sub__at(tg_site s, tg_tensor *t, tg_tensor *other);
tg_status tg_mul__at(tg_site s, tg_tensor *t, tg_tensor *other);
/* t /= other, PyTorch's div_ (true division; other 0 gives +-inf or NaN). */
tg_status tg_div__at(tg_site s, tg_tensor *t, tg_tensor *other);
/* t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow). */
tg_status tg_pow__at(tg_site s, tg_tensor *t, tg_tensor *other);
tg_status tg_scale__at(tg_site s, tg_tensor *t, double k);
tg_status tg_copy__at(tg_site s, tg_tensor *t, tg_tensor *src);
tg_status tg_fill__at(tg_site s, tg_tensor *t, double value);
#define tg_add_(t, o) tg_add__at(TG_SITE, t, o)
#define tg_sub_(t, o) tg_sub__at(TG_SITE, t, o)
#define tg_mul_(t, o) tg_mul__at(TG_SITE, t, o)
#define tg_div_(t, o) tg_div__at(TG_SITE, t, o)
#define tg_pow_(t, o) tg_pow__at(TG_SITE, t, o)
#define tg_scale_(t, k) tg_scale__at(TG_SITE, t, k)
#define tg_copy_(t, src) tg_copy__at(TG_SITE, t, src)
#define tg_fill_(t, v) tg_fill__at(TG_SITE, t, v)

/* For users who wrote into tg_data(t) by hand: bumps t's version counter and
 * records op_name (copied pointer: pass a string literal) at the call site.
 * It writes nothing, so it takes read-only memory too (tg_mark_read_only: its
 * owner may change it, and a graph that saved it must then refuse it).
 * Returns TG_OK; TG_ERR_NULL. */
tg_status tg_mark_modified_at(tg_site s, tg_tensor *t, const char *op_name);
#define tg_mark_modified(t, op_name) tg_mark_modified_at(TG_SITE, t, op_name)

#ifdef __cplusplus
}
#endif
#endif
