/* tests/test_vocab_faults.c - the allocation-failure sweep (SQLite's method)
 * over the loss author's vocabulary: comparisons and logic, i64 arithmetic,
 * the line reductions and scans, var/std/norm, gather/scatter/index_select/
 * flip, the log-prob op's log-sum-exp output. For each op, allocation n of
 * the forward (and, when it is differentiable, of the backward of its sum)
 * fails, for n = 1, 2, ... until a run succeeds: every failed run returns
 * TG_ERR_NOMEM, leaves no gradient, and once its scope is closed nothing is
 * alive. */
#include "tg_ops_test_util.h"

TestSuite(vocab_faults, .init = tgt_setup, .fini = tgt_teardown);

typedef tg_tensor *(*op_fn)(tg_tensor *x, tg_tensor *i);

static tg_tensor *f_eq(tg_tensor *x, tg_tensor *i) { return tg_eq(x, i); } /* promotes i */
static tg_tensor *f_and(tg_tensor *x, tg_tensor *i) { return tg_logical_and(x, i); }
static tg_tensor *f_gt_half(tg_tensor *x, tg_tensor *i) { (void)x; return tg_gt_scalar(i, 0.5); }
static tg_tensor *f_isnan(tg_tensor *x, tg_tensor *i) { (void)i; return tg_isnan(x); }
static tg_tensor *f_iadd(tg_tensor *x, tg_tensor *i) { (void)x; return tg_add(i, i); }
static tg_tensor *f_irem(tg_tensor *x, tg_tensor *i) {
    (void)x;
    return tg_remainder(i, tg_add_scalar(tg_abs(i), 1));
}
static tg_tensor *f_iclamp(tg_tensor *x, tg_tensor *i) { (void)x; return tg_clamp(tg_neg(i), 0, 2); }
static tg_tensor *f_where(tg_tensor *x, tg_tensor *i) { return tg_where(tg_gt_scalar(x, 0), i, i); }
static tg_tensor *f_amax(tg_tensor *x, tg_tensor *i) { (void)i; return tg_amax_dim(x, 1, false); }
static tg_tensor *f_max(tg_tensor *x, tg_tensor *i) {
    (void)i;
    tg_tensor *ix = NULL;
    return tg_max_dim(x, 0, true, &ix);
}
static tg_tensor *f_argmax(tg_tensor *x, tg_tensor *i) { (void)i; return tg_argmax(x); }
static tg_tensor *f_lse(tg_tensor *x, tg_tensor *i) { (void)i; return tg_logsumexp(x); }
static tg_tensor *f_prod(tg_tensor *x, tg_tensor *i) { (void)i; return tg_prod_dim(x, -1, false); }
static tg_tensor *f_any(tg_tensor *x, tg_tensor *i) { (void)i; return tg_any_dim(x, 0, false); }
static tg_tensor *f_cumsum(tg_tensor *x, tg_tensor *i) { (void)i; return tg_cumsum(x, 0); }
static tg_tensor *f_cumprod(tg_tensor *x, tg_tensor *i) { (void)i; return tg_cumprod(x, 1); }
static tg_tensor *f_var(tg_tensor *x, tg_tensor *i) { (void)i; return tg_var_dim(x, 1, 1, true); }
static tg_tensor *f_std(tg_tensor *x, tg_tensor *i) { (void)i; return tg_std(x, 0); }
static tg_tensor *f_norm2(tg_tensor *x, tg_tensor *i) { (void)i; return tg_norm_dim(x, 2, 0, false); }
static tg_tensor *f_norminf(tg_tensor *x, tg_tensor *i) { (void)i; return tg_norm(x, INFINITY); }
static tg_tensor *f_norm1(tg_tensor *x, tg_tensor *i) { (void)i; return tg_norm(x, 1); }
static tg_tensor *f_gather(tg_tensor *x, tg_tensor *i) {
    return tg_gather_dim(x, 0, tg_remainder(tg_abs(i), tg_full(TG_I64, TG_SCALAR, 3)));
}
static tg_tensor *f_scatter(tg_tensor *x, tg_tensor *i) {
    return tg_scatter_add(x, 0, tg_remainder(tg_abs(i), tg_full(TG_I64, TG_SCALAR, 3)), x);
}
static tg_tensor *f_isel(tg_tensor *x, tg_tensor *i) {
    (void)i;
    return tg_index_select(x, 1, tg_arange(TG_I64, 3, -1, -1));
}
static tg_tensor *f_flip(tg_tensor *x, tg_tensor *i) { (void)i; return tg_flip(x, 2, (const int[]){0, 1}); }
static tg_tensor *lse_of(tg_tensor *x, tg_logprob_impl impl) {
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = impl;
    tg_tensor *lp = NULL, *h = NULL, *l = NULL;
    int64_t y[3] = {1, -100, 3};
    if (tg_logprob_entropy_lse(x, tg_from_data(TG_I64, TG_SHAPE(3), y), &o, &lp, &h, &l) != TG_OK)
        return NULL;
    return tg_add(tg_add(lp, h), tg_square(l));
}
static tg_tensor *f_lpe_fused(tg_tensor *x, tg_tensor *i) { (void)i; return lse_of(x, TG_LOGPROB_FUSED); }
static tg_tensor *f_lpe_comp(tg_tensor *x, tg_tensor *i) { (void)i; return lse_of(x, TG_LOGPROB_COMPOSITE); }

static const struct {
    const char *name;
    op_fn fn;
    bool grad;
} OPS[] = {
    {"eq", f_eq, false},           {"logical_and", f_and, false}, {"gt_scalar", f_gt_half, false},
    {"isnan", f_isnan, false},     {"i64 add", f_iadd, false},    {"remainder", f_irem, false},
    {"i64 clamp", f_iclamp, false}, {"where i64", f_where, false}, {"amax_dim", f_amax, true},
    {"max_dim", f_max, true},      {"argmax", f_argmax, false},   {"logsumexp", f_lse, true},
    {"prod_dim", f_prod, true},    {"any_dim", f_any, false},     {"cumsum", f_cumsum, true},
    {"cumprod", f_cumprod, true},  {"var_dim", f_var, true},      {"std", f_std, true},
    {"norm 2", f_norm2, true},     {"norm inf", f_norminf, true}, {"norm 1", f_norm1, true},
    {"gather_dim", f_gather, true}, {"scatter_add", f_scatter, true},
    {"index_select", f_isel, true}, {"flip", f_flip, true},
    {"logprob_entropy_lse fused", f_lpe_fused, true},
    {"logprob_entropy_lse composite", f_lpe_comp, true},
};

Test(vocab_faults, every_allocation_failure_is_clean) {
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
        bool done = false;
        for (uint64_t n = 1; !done && n < 400; n++) {
            int sc = tg_scope_begin();
            tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3, 4), 7, 0, 1);
            tg_tensor *i = tg_scale(tg_to_dtype(tg_scale(x, 2), TG_I64), 1);
            cr_assert_not_null(i, "%s", tg_last_error());
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            tg_clear_error();
            tg_fault_inject(n, false);
            tg_tensor *y = OPS[k].fn(x, i);
            tg_status st = y ? TG_OK : tg_last_status();
            if (y && OPS[k].grad) {
                tg_tensor *l = tg_sum(y);
                st = l ? tg_backward(l, NULL, false) : tg_last_status();
            }
            uint64_t injected = tg_fault_inject(0, false);
            if (injected == 0) {
                cr_assert_eq(st, TG_OK, "%s: %s", OPS[k].name, tg_last_error());
                if (OPS[k].grad) cr_assert_not_null(tg_grad(x), "%s", OPS[k].name);
                done = true;
            } else {
                cr_assert_eq(st, TG_ERR_NOMEM, "%s, allocation %llu: %s", OPS[k].name,
                             (unsigned long long)n, tg_last_error());
                cr_assert_null(tg_grad(x), "%s: a failed backward left a gradient", OPS[k].name);
            }
            cr_assert_eq(tg_scope_end(sc), TG_OK, "%s: %s", OPS[k].name, tg_last_error());
            tgt_assert_nothing_live();
        }
        cr_assert(done, "%s never succeeded", OPS[k].name);
    }
}
