/* tests/vocab_table.h - the shared table of the loss author's vocabulary (the
 * ops beyond the unary ones of ops/unary.c's table): one entry per op, the
 * same names as tests/vocab/make_fixtures.py, each building its result from
 * its inputs with the public API. Walked by test_vocab_table.c (PyTorch's
 * values and gradients from the fixtures, on contiguous and strided inputs;
 * gradcheck; NULL inputs), test_vocab_faults.c (the allocation-failure sweep)
 * and test_backends.c (every entry on the CUDA device against the CPU).
 * Adding an op to the vocabulary: an entry here and one in
 * make_fixtures.py's OPS (then run it). */
#ifndef TG_VOCAB_TABLE_H
#define TG_VOCAB_TABLE_H

#include <math.h>
#include <string.h>

#include "tapegrad.h"

typedef tg_tensor *(*tgv_fn)(tg_tensor *const *in);

typedef struct tgv_op {
    const char *name;
    int nin;
    tgv_fn fn;
} tgv_op;

#define TGV1(NAME, EXPR)                                                              \
    static inline tg_tensor *tgv_##NAME(tg_tensor *const *in) { return (EXPR); }

TGV1(eq, tg_eq(in[0], in[1]))
TGV1(ne, tg_ne(in[0], in[1]))
TGV1(lt, tg_lt(in[0], in[1]))
TGV1(le, tg_le(in[0], in[1]))
TGV1(gt, tg_gt(in[0], in[1]))
TGV1(ge, tg_ge(in[0], in[1]))
TGV1(eq_scalar, tg_eq_scalar(in[0], 1))
TGV1(gt_scalar_half, tg_gt_scalar(in[0], 0.5))
TGV1(logical_and, tg_logical_and(in[0], in[1]))
TGV1(logical_or, tg_logical_or(in[0], in[1]))
TGV1(logical_xor, tg_logical_xor(in[0], in[1]))
TGV1(logical_not, tg_logical_not(in[0]))
TGV1(isnan, tg_isnan(in[0]))
TGV1(isinf, tg_isinf(in[0]))
TGV1(isfinite, tg_isfinite(in[0]))
TGV1(remainder, tg_remainder(in[0], in[1]))
TGV1(floor_divide, tg_floor_divide(in[0], in[1]))
TGV1(add_i64, tg_add(in[0], in[1]))
TGV1(sub_i64, tg_sub(in[0], in[1]))
TGV1(mul_i64, tg_mul(in[0], in[1]))
TGV1(maximum_i64, tg_maximum(in[0], in[1]))
TGV1(minimum_i64, tg_minimum(in[0], in[1]))
TGV1(where_bool, tg_where(in[0], in[1], in[2]))
TGV1(amax_dim1, tg_amax_dim(in[0], 1, false))
TGV1(amin_dim0_keep, tg_amin_dim(in[0], 0, true))
TGV1(max_dim2, tg_max_dim(in[0], 2, false, NULL))
TGV1(argmax_dim1, tg_argmax_dim(in[0], 1, false))
TGV1(logsumexp_dim1, tg_logsumexp_dim(in[0], 1, false))
TGV1(prod_dim2, tg_prod_dim(in[0], 2, false))
TGV1(any_dim1, tg_any_dim(in[0], 1, false))
TGV1(all_dim0, tg_all_dim(in[0], 0, false))
TGV1(cumsum_dim1, tg_cumsum(in[0], 1))
TGV1(cumprod_dim2, tg_cumprod(in[0], 2))
TGV1(var_dim1, tg_var_dim(in[0], 1, 1, false))
TGV1(std_dim0_c0, tg_std_dim(in[0], 0, 0, false))
TGV1(norm1_dim1, tg_norm_dim(in[0], 1, 1, false))
TGV1(norm2_dim2, tg_norm_dim(in[0], 2, 2, false))
TGV1(norminf_dim0, tg_norm_dim(in[0], INFINITY, 0, false))
TGV1(gather_dim1, tg_gather_dim(in[0], 1, in[1]))
TGV1(scatter_add_dim0, tg_scatter_add(in[0], 0, in[1], in[2]))
TGV1(index_select_dim1, tg_index_select(in[0], 1, in[1]))
TGV1(flip_0_2, tg_flip(in[0], 2, (const int[]){0, 2}))
/* the binary ops, joining, shapes, triangles and losses of the earlier vocabulary */
TGV1(add, tg_add(in[0], in[1]))
TGV1(sub, tg_sub(in[0], in[1]))
TGV1(mul, tg_mul(in[0], in[1]))
TGV1(div, tg_div(in[0], in[1]))
TGV1(maximum, tg_maximum(in[0], in[1]))
TGV1(minimum, tg_minimum(in[0], in[1]))
TGV1(pow, tg_pow(in[0], in[1]))
TGV1(cat_dim1, tg_cat(2, (tg_tensor *[]){in[0], in[1]}, 1))
TGV1(stack_dim0, tg_stack(2, (tg_tensor *[]){in[0], in[1]}, 0))
TGV1(narrow_1_1_2, tg_narrow(in[0], 1, 1, 2))
TGV1(permute_201, tg_permute(in[0], 3, (const int[]){2, 0, 1}))
TGV1(squeeze_1, tg_squeeze(in[0], 1))
TGV1(unsqueeze_1, tg_unsqueeze(in[0], 1))
TGV1(flatten_0_1, tg_flatten(in[0], 0, 1))
TGV1(triu_1, tg_triu(in[0], 1))
TGV1(tril_m1, tg_tril(in[0], -1))
TGV1(masked_fill_ninf, tg_masked_fill(in[0], in[1], -INFINITY))
TGV1(one_hot_5, tg_one_hot(in[0], 5))
TGV1(cross_entropy_ls, tg_cross_entropy(in[0], in[1], -100, 0.1, TG_REDUCTION_MEAN))
TGV1(nll_loss, tg_nll_loss(in[0], in[1], -100, TG_REDUCTION_SUM))
TGV1(kl_div, tg_kl_div(in[0], in[1], TG_REDUCTION_MEAN, false))
TGV1(bce_with_logits, tg_binary_cross_entropy_with_logits(in[0], in[1], NULL, TG_REDUCTION_MEAN))
TGV1(mse_loss, tg_mse_loss(in[0], in[1], TG_REDUCTION_NONE))
TGV1(smooth_l1_loss, tg_smooth_l1_loss(in[0], in[1], TG_REDUCTION_MEAN, 1.0))
TGV1(masked_mean_dim1, tg_masked_mean(in[0], in[1], 1, false))
TGV1(agg_seq_mean_token_mean, tg_agg_loss(in[0], in[1], TG_AGG_SEQ_MEAN_TOKEN_MEAN))
#undef TGV1

#define TGV(NAME, N) {#NAME, N, tgv_##NAME}
static const tgv_op TGV_OPS[] = {
    TGV(eq, 2), TGV(ne, 2), TGV(lt, 2), TGV(le, 2), TGV(gt, 2), TGV(ge, 2),
    TGV(eq_scalar, 1), TGV(gt_scalar_half, 1), TGV(logical_and, 2), TGV(logical_or, 2),
    TGV(logical_xor, 2), TGV(logical_not, 1), TGV(isnan, 1), TGV(isinf, 1), TGV(isfinite, 1),
    TGV(remainder, 2), TGV(floor_divide, 2), TGV(add_i64, 2), TGV(sub_i64, 2), TGV(mul_i64, 2),
    TGV(maximum_i64, 2), TGV(minimum_i64, 2), TGV(where_bool, 3), TGV(amax_dim1, 1),
    TGV(amin_dim0_keep, 1), TGV(max_dim2, 1), TGV(argmax_dim1, 1), TGV(logsumexp_dim1, 1),
    TGV(prod_dim2, 1), TGV(any_dim1, 1), TGV(all_dim0, 1), TGV(cumsum_dim1, 1),
    TGV(cumprod_dim2, 1), TGV(var_dim1, 1), TGV(std_dim0_c0, 1), TGV(norm1_dim1, 1),
    TGV(norm2_dim2, 1), TGV(norminf_dim0, 1), TGV(gather_dim1, 2), TGV(scatter_add_dim0, 3),
    TGV(index_select_dim1, 2), TGV(flip_0_2, 1),
    TGV(add, 2), TGV(sub, 2), TGV(mul, 2), TGV(div, 2), TGV(maximum, 2), TGV(minimum, 2),
    TGV(pow, 2), TGV(cat_dim1, 2), TGV(stack_dim0, 2), TGV(narrow_1_1_2, 1),
    TGV(permute_201, 1), TGV(squeeze_1, 1), TGV(unsqueeze_1, 1), TGV(flatten_0_1, 1),
    TGV(triu_1, 1), TGV(tril_m1, 1), TGV(masked_fill_ninf, 2), TGV(one_hot_5, 1),
    TGV(cross_entropy_ls, 2), TGV(nll_loss, 2), TGV(kl_div, 2), TGV(bce_with_logits, 2),
    TGV(mse_loss, 2), TGV(smooth_l1_loss, 2), TGV(masked_mean_dim1, 2),
    TGV(agg_seq_mean_token_mean, 2),
};
#undef TGV
#define TGV_N ((int)(sizeof TGV_OPS / sizeof TGV_OPS[0]))

static inline const tgv_op *tgv_find(const char *name) {
    for (int i = 0; i < TGV_N; i++)
        if (!strcmp(TGV_OPS[i].name, name)) return &TGV_OPS[i];
    return NULL;
}

#endif
