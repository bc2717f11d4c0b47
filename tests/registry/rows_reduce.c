/* tests/registry/rows_reduce.c - the registry rows of the reductions: sums
 * and means, the line reductions (amax/amin, max/min with indices,
 * argmax/argmin, logsumexp, prod, any/all), the scans, var/std and the
 * vector norms, over all elements and along a dim. */
#include <math.h>

#include "registry.h"

#define PD(k) ((int)a->iv[k])
#define PB(k) (a->iv[k] != 0)
#define PR(k) (a->fv[k])

#define CALL(name, expr)                                                                        \
    static tg_status ap_##name(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,     \
                               tg_tensor **out) {                                               \
        (void)op, (void)a;                                                                      \
        out[0] = (expr);                                                                        \
        return out[0] ? TG_OK : tg_last_status();                                               \
    }
/* reductions over all elements (x) and along dim (params dim, keepdim) */
#define ALL_DIM(fn)                                                                             \
    CALL(fn, tg_##fn(in[0]))                                                                    \
    CALL(fn##_dim, tg_##fn##_dim(in[0], PD(0), PB(1)))

ALL_DIM(sum)
ALL_DIM(mean)
ALL_DIM(amax)
ALL_DIM(amin)
ALL_DIM(argmax)
ALL_DIM(argmin)
ALL_DIM(logsumexp)
ALL_DIM(prod)
ALL_DIM(any)
ALL_DIM(all)
CALL(cumsum, tg_cumsum(in[0], PD(0)))
CALL(cumprod, tg_cumprod(in[0], PD(0)))
CALL(var, tg_var(in[0], PR(0)))
CALL(var_dim, tg_var_dim(in[0], PD(0), PR(0), PB(1)))
CALL(std, tg_std(in[0], PR(0)))
CALL(std_dim, tg_std_dim(in[0], PD(0), PR(0), PB(1)))
CALL(norm, tg_norm(in[0], PR(0)))
CALL(norm_dim, tg_norm_dim(in[0], PR(0), PD(0), PB(1)))

/* max/min along dim: the values and the indices */
static tg_status ap_max_dim(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                            tg_tensor **out) {
    (void)op;
    out[0] = tg_max_dim(in[0], PD(0), PB(1), &out[1]);
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status ap_min_dim(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                            tg_tensor **out) {
    (void)op;
    out[0] = tg_min_dim(in[0], PD(0), PB(1), &out[1]);
    return out[0] ? TG_OK : tg_last_status();
}

/* The norms for p = 2 (the default), 1 and inf, and a p they refuse; the
 * variances with the corrections 0 and 2 too and a negative one. */
static void s_norm(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool dim = tgr_param_of(op, "dim") != NULL;
    if (dim) tgr_samples_reduce_dim(op, dt, out);
    else tgr_samples_reduce_all(op, dt, out);
    const bool is_norm = tgr_param_of(op, "p") != NULL;
    if (!is_norm) /* one element and correction 1: n - correction is 0, a NaN variance */
        for (int i = 0; i < out->n; i++)
            if (out->s[i].nin && out->s[i].in[0] && tg_ndim(out->s[i].in[0]) == 0)
                out->s[i].flags &= ~(unsigned)TGR_S_SMOOTH;
    /* the norms: p = 1, inf, 3, 0.5, 0, -inf, -1, NaN; the variances: corrections 0
     * and 2, and -1 refused */
    const double pn[8] = {1.0, INFINITY, 3.0, 0.5, 0.0, -INFINITY, -1.0, NAN};
    const double pv[3] = {0.0, 2.0, -1.0};
    const int n = is_norm ? 8 : 3;
    const int nbad = is_norm ? 0 : 1; /* the last nbad are refused */
    const int64_t c34[2] = {3, 4};
    for (int k = 0; k < n; k++) {
        tgr_args a = tgr_args0(dt);
        a.fv[0] = is_norm ? pn[k] : pv[k];
        if (dim) a.iv[0] = 1;
        const bool bad = k >= n - nbad;
        char what[48];
        snprintf(what, sizeof what, "%s %g", is_norm ? "p" : "correction", a.fv[0]);
        tgr_sample *s = tgr_add(out, what, bad ? TGR_S_BAD : isnan(a.fv[0]) ? 0u : TGR_S_SMOOTH, &a, 1,
                                tgr_rand(dt, 2, c34, 40 + (uint64_t)k, -2, 2));
        if (s && bad) s->want = TG_ERR_VALUE;
        else if (s && dim) s->batch = 1;
    }
}

/* The scans: every dim of shapes with 1-3 dims, 0-d, transposed, zeros (cumprod's
 * exact gradient), specials. */
static void s_scan(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{1, {5}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    int k = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int d = -1; d < shapes[i].nd; d++) {
            if (d == -1 && shapes[i].nd == 1) continue;
            tgr_args a = tgr_args0(dt);
            a.iv[0] = d;
            char what[48];
            snprintf(what, sizeof what, "%d-d dim %d", shapes[i].nd, d);
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &a, 1,
                                    tgr_rand(dt, shapes[i].nd, shapes[i].s, 50 + (uint64_t)k++,
                                             -1.5, 1.5));
            int dn = d < 0 ? d + shapes[i].nd : d;
            if (s && shapes[i].nd >= 2 && dn != 0) s->batch = 1;
        }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 1;
    const int64_t c34[2] = {3, 4};
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 2, c34, 60, -1.5, 1.5)))->batch = 1;
    tgr_add(out, "ties and zeros", 0, &a, 1, tgr_ties(dt, 2, c34, 61))->batch = 1;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, (int64_t[]){3, 3}));
    tgr_args z = tgr_args0(dt);
    tgr_add(out, "0-d", TGR_S_SMOOTH, &z, 1, tgr_rand(dt, 0, NULL, 62, -1, 1));
    tgr_args bad = tgr_args0(dt);
    bad.iv[0] = 2;
    tgr_sample *s = tgr_add(out, "dim out of range", TGR_S_BAD, &bad, 1, tgr_rand(dt, 2, c34, 63, -1, 1));
    if (s) s->want = TG_ERR_DIM;
}

#define F (1u << TG_F32 | 1u << TG_F64)
#define I64 (1u << TG_I64)
#define B (1u << TG_BOOL)

#define ROW(NAME, TORCH, PARAMS, NOUT, DIFF, DT, SAMPLES, LO, HI)                              \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = 1,       \
     .nin_required = 1, .nout = NOUT, .diff = DIFF, .dtypes = DT, .apply = ap_##NAME,         \
     .samples = SAMPLES, .lo = LO, .hi = HI}
#define RALL(NAME, TORCH, DIFF, DT) ROW(NAME, TORCH, "", 1, DIFF, DT, tgr_samples_reduce_all, -2, 2)
#define RDIM(NAME, TORCH, DIFF, DT)                                                            \
    ROW(NAME, TORCH, "d:dim b:keepdim", 1, DIFF, DT, tgr_samples_reduce_dim, -2, 2)

tgr_op TGR_ROWS_REDUCE[] = {
    RALL(sum, "torch.sum(a)", 1, I64 | B),
    RDIM(sum_dim, "torch.sum(a, dim, keepdim=bool(keepdim))", 1, I64 | B),
    RALL(mean, "R.mean(a)", 1, 0),
    RDIM(mean_dim, "R.mean(a, dim, keepdim)", 1, 0),
    RALL(amax, "torch.amax(a)", 1, 0),
    RDIM(amax_dim, "torch.amax(a, dim, keepdim=bool(keepdim))", 1, 0),
    RALL(amin, "torch.amin(a)", 1, 0),
    RDIM(amin_dim, "torch.amin(a, dim, keepdim=bool(keepdim))", 1, 0),
    ROW(max_dim, "tuple(torch.max(a, dim, keepdim=bool(keepdim)))", "d:dim b:keepdim", 2, 1, 0,
        tgr_samples_reduce_dim, -2, 2),
    ROW(min_dim, "tuple(torch.min(a, dim, keepdim=bool(keepdim)))", "d:dim b:keepdim", 2, 1, 0,
        tgr_samples_reduce_dim, -2, 2),
    RALL(argmax, "torch.argmax(a)", 0, I64),
    RDIM(argmax_dim, "torch.argmax(a, dim, keepdim=bool(keepdim))", 0, I64),
    RALL(argmin, "torch.argmin(a)", 0, I64),
    RDIM(argmin_dim, "torch.argmin(a, dim, keepdim=bool(keepdim))", 0, I64),
    RALL(logsumexp, "torch.logsumexp(a.reshape(-1), 0)", 1, 0),
    RDIM(logsumexp_dim, "torch.logsumexp(a, dim, keepdim=bool(keepdim))", 1, 0),
    RALL(prod, "R.prod(a)", 1, 0),
    RDIM(prod_dim, "R.prod(a, dim, keepdim)", 1, 0),
    RALL(any, "torch.any(a)", 0, I64 | B),
    RDIM(any_dim, "torch.any(a, dim, keepdim=bool(keepdim))", 0, I64 | B),
    RALL(all, "torch.all(a)", 0, I64 | B),
    RDIM(all_dim, "torch.all(a, dim, keepdim=bool(keepdim))", 0, I64 | B),
    ROW(cumsum, "torch.cumsum(a, dim)", "d:dim", 1, 1, 0, s_scan, -2, 2),
    ROW(cumprod, "R.cumprod(a, dim)", "d:dim", 1, 1, 0, s_scan, -2, 2),
    ROW(var, "R.var(a, None, correction, False, False)", "r:correction=1", 1, 1, 0, s_norm, -2, 2),
    ROW(var_dim, "R.var(a, dim, correction, keepdim, False)", "d:dim r:correction=1 b:keepdim",
        1, 1, 0, s_norm, -2, 2),
    ROW(std, "R.var(a, None, correction, False, True)", "r:correction=1", 1, 1, 0, s_norm, -2, 2),
    ROW(std_dim, "R.var(a, dim, correction, keepdim, True)", "d:dim r:correction=1 b:keepdim", 1,
        1, 0, s_norm, -2, 2),
    ROW(norm, "R.norm(a, p)", "r:p=2", 1, 1, 0, s_norm, -2, 2),
    ROW(norm_dim, "R.norm(a, p, dim, keepdim)", "r:p=2 d:dim b:keepdim", 1, 1, 0, s_norm, -2,
        2),
};
const int TGR_N_REDUCE = (int)(sizeof TGR_ROWS_REDUCE / sizeof TGR_ROWS_REDUCE[0]);
