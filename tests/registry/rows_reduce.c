/* tests/registry/rows_reduce.c - the registry rows of the reductions: sums
 * and means, the line reductions (amax/amin, max/min with indices,
 * argmax/argmin, logsumexp, prod, any/all), the scans, var/std and the
 * vector norms, over all elements and along a dim, and softmax / log-softmax
 * along a dim. */
#include <math.h>
#include <string.h>

#include "rows.h"

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
CALL(discounted_cumsum, tg_discounted_cumsum(in[0], PR(0), PD(0)))
/* the multi-dim reductions: dims from the shape field */
CALL(sum_dims, tg_sum_dims(in[0], a->ndim, DIMS(a), PB(0)))
CALL(count_nonzero, tg_count_nonzero(in[0], a->ndim, DIMS(a)))
CALL(mean_dims, tg_mean_dims(in[0], a->ndim, DIMS(a), PB(0)))
CALL(amax_dims, tg_amax_dims(in[0], a->ndim, DIMS(a), PB(0)))
CALL(amin_dims, tg_amin_dims(in[0], a->ndim, DIMS(a), PB(0)))
CALL(logsumexp_dims, tg_logsumexp_dims(in[0], a->ndim, DIMS(a), PB(0)))
CALL(var_dims, tg_var_dims(in[0], a->ndim, DIMS(a), PR(0), PB(0)))
CALL(std_dims, tg_std_dims(in[0], a->ndim, DIMS(a), PR(0), PB(0)))
CALL(softmax_dim, tg_softmax_dim(in[0], PD(0)))
CALL(log_softmax_dim, tg_log_softmax_dim(in[0], PD(0)))
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
    if (!is_norm) return;
    /* empty lines: a negative or infinite p has no identity (refused, as PyTorch),
     * a NaN p gives 0 there */
    const double pe[3] = {-1.0, -INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
        tgr_args a = tgr_args0(dt);
        a.fv[0] = pe[k];
        if (dim) a.iv[0] = 1;
        char what[48];
        snprintf(what, sizeof what, "empty lines, p %g", pe[k]);
        tgr_sample *s = tgr_add(out, what, isnan(pe[k]) ? TGR_S_EMPTY : TGR_S_BAD, &a, 1,
                                tgr_rand(dt, 2, (int64_t[]){3, 0}, 48 + (uint64_t)k, -2, 2));
        if (s && !isnan(pe[k])) s->want = TG_ERR_SHAPE;
    }
}

/* The scans: every dim of shapes with 1-3 dims, 0-d, transposed, zeros (cumprod's
 * exact gradient), specials, empty lines and empty other dims, the integer
 * dtypes the row takes (with values where a double would round), and for the
 * discounted sum the discounts 0, 1, -0.5 and 1.5 and a NaN and an infinite
 * one refused. */
/* The multi-dim reductions: sets of dims of 0-4-d shapes (one dim, two, all,
 * none listed = all, negative), keepdim both, transposed, ties across the set,
 * specials, empty dims kept and reduced (the extremes refuse an empty set),
 * the dtypes the row takes, and dims repeated, out of range, too many. */
static void s_dims(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const struct {
        int nd;
        int64_t s[4];
        int ndims;
        int64_t dims[4];
        unsigned batch;
    } sets[] = {
        {0, {0}, 0, {0}, 0},          {0, {0}, 1, {-1}, 0},         {1, {5}, 1, {0}, 0},
        {2, {3, 4}, 1, {1}, 1},       {2, {3, 4}, 2, {0, 1}, 0},    {2, {3, 4}, 0, {0}, 0},
        {3, {2, 3, 4}, 2, {0, 2}, 0}, {3, {2, 3, 4}, 2, {-1, 1}, 1}, {3, {2, 3, 4}, 1, {-2}, 1},
        {4, {2, 2, 3, 2}, 3, {1, 3, 2}, 1}, {4, {2, 2, 3, 2}, 2, {0, -1}, 0},
    };
    const tgr_param *pk = tgr_param_of(op, "keepdim"), *pc = tgr_param_of(op, "correction");
    const bool extreme = strstr(op->name, "amax") || strstr(op->name, "amin");
    int k = 0;
    tgr_args a = tgr_args0(dt);
    if (pc) a.fv[pc->slot] = 1.0;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        for (int keep = 0; keep < (pk ? 2 : 1); keep++) {
            tgr_args b = a;
            b.ndim = sets[i].ndims;
            for (int j = 0; j < b.ndim; j++) b.shape[j] = sets[i].dims[j];
            if (pk) b.iv[pk->slot] = keep;
            char what[48];
            snprintf(what, sizeof what, "%d-d %d dims%s", sets[i].nd, sets[i].ndims,
                     keep ? " keepdim" : "");
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &b, 1,
                                    tgr_rand(dt, sets[i].nd, sets[i].s, 80 + (uint64_t)k++, -2, 2));
            if (s) s->batch = sets[i].batch;
            /* var of one element per result (n - correction 0): NaN */
            if (s && pc && sets[i].nd == 0)
                s->flags &= ~(unsigned)TGR_S_SMOOTH;
        }
    tgr_args b = a;
    b.ndim = 2;
    b.shape[0] = 0, b.shape[1] = 2;
    tgr_add(out, "transposed dims 0 2", TGR_S_SMOOTH | TGR_S_STRIDED, &b, 1,
            tgr_strided(tgr_rand(dt, 3, (int64_t[]){2, 4, 3}, 90, -2, 2)));
    tgr_add(out, "ties dims 0 2", 0, &b, 1, tgr_ties(dt, 3, (int64_t[]){2, 3, 2}, 91));
    tgr_add(out, "specials dims 0 2", TGR_S_SPECIAL, &b, 1,
            tgr_specials(dt, 3, (int64_t[]){3, 2, 3}));
    tgr_add(out, "empty kept dims 0 2", TGR_S_EMPTY, &b, 1,
            tgr_rand(dt, 3, (int64_t[]){2, 0, 3}, 92, -2, 2));
    tgr_sample *s = tgr_add(out, "empty reduced dims 0 2", extreme ? TGR_S_BAD : TGR_S_EMPTY, &b, 1,
                            tgr_rand(dt, 3, (int64_t[]){0, 3, 2}, 93, -2, 2));
    if (s && extreme) s->want = TG_ERR_SHAPE;
    if (op->dtypes & (1u << TG_I64))
        tgr_add(out, "i64 dims 0 2", TGR_S_DTYPES, &b, 1,
                tgr_rand(TG_I64, 3, (int64_t[]){2, 3, 2}, 94, -5, 6));
    if (op->dtypes & (1u << TG_BOOL))
        tgr_add(out, "bool dims 0 2", TGR_S_DTYPES, &b, 1,
                tgr_rand(TG_BOOL, 3, (int64_t[]){2, 3, 2}, 95, 0, 2));
    static const struct {
        const char *what;
        int ndims;
        int64_t dims[9];
        tg_status want;
    } bad[] = {
        {"dims repeated", 2, {0, -3}, TG_ERR_DIM},
        {"dim out of range", 2, {0, 3}, TG_ERR_DIM},
        {"nine dims", 9, {0, 1, 2, 0, 1, 2, 0, 1, 2}, TG_ERR_VALUE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tgr_args c = a;
        c.ndim = bad[i].ndims;
        for (int j = 0; j < c.ndim; j++) c.shape[j] = bad[i].dims[j];
        tgr_sample *sb = tgr_add(out, bad[i].what, TGR_S_BAD, &c, 1,
                                 tgr_rand(dt, 3, (int64_t[]){2, 3, 2}, 96 + (uint64_t)i, -2, 2));
        if (sb) sb->want = bad[i].want;
    }
    if (pc) { /* correction 0 and 2.5 */
        for (int j = 0; j < 2; j++) {
            tgr_args c = b;
            c.fv[pc->slot] = j ? 2.5 : 0.0;
            tgr_add(out, j ? "correction 2.5" : "correction 0", TGR_S_SMOOTH, &c, 1,
                    tgr_rand(dt, 3, (int64_t[]){2, 3, 2}, 98 + (uint64_t)j, -2, 2));
        }
    }
}

/* The scans' arguments: all zero but the discount, 0.9 where there is one. */
static tgr_args scan_args(const tgr_param *gamma, tg_dtype dt) {
    tgr_args a = tgr_args0(dt);
    if (gamma) a.fv[gamma->slot] = 0.9;
    return a;
}

static void s_scan(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const tgr_param *gamma = tgr_param_of(op, "gamma");
    const int pd = tgr_param_of(op, "dim")->slot;
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{1, {5}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    int k = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int d = -1; d < shapes[i].nd; d++) {
            if (d == -1 && shapes[i].nd == 1) continue;
            tgr_args a = scan_args(gamma, dt);
            a.iv[0] = d;
            char what[48];
            snprintf(what, sizeof what, "%d-d dim %d", shapes[i].nd, d);
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &a, 1,
                                    tgr_rand(dt, shapes[i].nd, shapes[i].s, 50 + (uint64_t)k++,
                                             -1.5, 1.5));
            int dn = d < 0 ? d + shapes[i].nd : d;
            if (s && shapes[i].nd >= 2 && dn != 0) s->batch = 1;
        }
    tgr_args a = scan_args(gamma, dt);
    a.iv[0] = 1;
    const int64_t c34[2] = {3, 4};
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 2, c34, 60, -1.5, 1.5)))->batch = 1;
    tgr_add(out, "ties and zeros", 0, &a, 1, tgr_ties(dt, 2, c34, 61))->batch = 1;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, (int64_t[]){3, 3}));
    tgr_args z = scan_args(gamma, dt);
    tgr_add(out, "0-d", TGR_S_SMOOTH, &z, 1, tgr_rand(dt, 0, NULL, 62, -1, 1));
    tgr_args bad = scan_args(gamma, dt);
    bad.iv[0] = 2;
    tgr_sample *s = tgr_add(out, "dim out of range", TGR_S_BAD, &bad, 1, tgr_rand(dt, 2, c34, 63, -1, 1));
    if (s) s->want = TG_ERR_DIM;
    tgr_args e = scan_args(gamma, dt);
    tgr_add(out, "empty line", TGR_S_EMPTY, &e, 1, tgr_rand(dt, 2, (int64_t[]){0, 3}, 64, -1, 1));
    e.iv[pd] = 1;
    tgr_add(out, "empty others", TGR_S_EMPTY, &e, 1, tgr_rand(dt, 2, (int64_t[]){0, 3}, 65, -1, 1));
    if (op->dtypes & (1u << TG_I64)) {
        tgr_add(out, "i64", TGR_S_DTYPES, &a, 1, tgr_rand(TG_I64, 2, c34, 66, -5, 6))->batch = 1;
        /* 2^53 + 1 and 3: a sum or product in double would round */
        tg_tensor *big = tg_from_data(TG_I64, 1, (int64_t[]){3},
                                      (const double[]){9007199254740993.0, 3.0, -1.0});
        tgr_args a0 = scan_args(gamma, dt);
        tgr_add(out, "i64 beyond 2^53", TGR_S_DTYPES, &a0, 1, big);
    }
    if (op->dtypes & (1u << TG_BOOL))
        tgr_add(out, "bool", TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 2, c34, 67, 0, 2))->batch = 1;
    if (!gamma) return;
    const double gammas[6] = {0.0, 1.0, -0.5, 1.5, NAN, INFINITY};
    for (int g = 0; g < 6; g++) {
        tgr_args ag = scan_args(gamma, dt);
        ag.iv[pd] = 1;
        ag.fv[gamma->slot] = gammas[g];
        const bool refused = !isfinite(gammas[g]);
        char what[48];
        snprintf(what, sizeof what, "gamma %g", gammas[g]);
        tgr_sample *sg = tgr_add(out, what, refused ? TGR_S_BAD : TGR_S_SMOOTH, &ag, 1,
                                 tgr_rand(dt, 3, (int64_t[]){2, 3, 4}, 70 + (uint64_t)g, -1, 1));
        if (sg && refused) sg->want = TG_ERR_VALUE;
        else if (sg) sg->batch = 1;
    }
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
    RALL(amax, "torch.amax(a.reshape(-1), 0)", 1, 0),
    RDIM(amax_dim, "torch.amax(a, dim, keepdim=bool(keepdim))", 1, 0),
    RALL(amin, "torch.amin(a.reshape(-1), 0)", 1, 0),
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
    RALL(prod, "R.prod(a.reshape(-1), 0)", 1, 0),
    RDIM(prod_dim, "R.prod(a, dim, keepdim)", 1, 0),
    RALL(any, "torch.any(a)", 0, I64 | B),
    RDIM(any_dim, "torch.any(a, dim, keepdim=bool(keepdim))", 0, I64 | B),
    RALL(all, "torch.all(a)", 0, I64 | B),
    RDIM(all_dim, "torch.all(a, dim, keepdim=bool(keepdim))", 0, I64 | B),
    ROW(cumsum, "torch.cumsum(a, dim)", "d:dim", 1, 1, I64 | B, s_scan, -2, 2),
    ROW(cumprod, "R.cumprod(a, dim)", "d:dim", 1, 1, I64 | B, s_scan, -2, 2),
    {.name = "softmax_dim", .c_name = "tg_softmax_dim", .torch = "torch.softmax(a, dim)",
     .params = "d:dim", .nin = 1, .nin_required = 1, .nout = 1, .diff = 1,
     .apply = ap_softmax_dim, .samples = tgr_samples_reduce_dim, .lo = -3, .hi = 3,
     .saves = TGR_SAVES_OUTPUT},
    {.name = "log_softmax_dim", .c_name = "tg_log_softmax_dim",
     .torch = "torch.log_softmax(a, dim)", .params = "d:dim", .nin = 1, .nin_required = 1,
     .nout = 1, .diff = 1, .apply = ap_log_softmax_dim, .samples = tgr_samples_reduce_dim,
     .lo = -3, .hi = 3, .saves = TGR_SAVES_OUTPUT},
    ROW(sum_dims, "torch.sum(a, dim=dims, keepdim=bool(keepdim))", "D:dims b:keepdim", 1, 1,
        I64 | B, s_dims, -2, 2),
    ROW(count_nonzero, "torch.count_nonzero(a, dim=dims)", "D:dims", 1, 0, I64 | B, s_dims, -2, 2),
    ROW(mean_dims, "R.dims(R._mean_dim, a, dims, bool(keepdim))", "D:dims b:keepdim", 1, 1, 0,
        s_dims, -2, 2),
    ROW(amax_dims, "R.dims(torch.amax, a, dims, bool(keepdim))", "D:dims b:keepdim", 1, 1, 0,
        s_dims, -2, 2),
    ROW(amin_dims, "R.dims(torch.amin, a, dims, bool(keepdim))", "D:dims b:keepdim", 1, 1, 0,
        s_dims, -2, 2),
    ROW(logsumexp_dims, "R.dims(R._logsumexp_dim, a, dims, bool(keepdim))", "D:dims b:keepdim",
        1, 1, 0, s_dims, -2, 2),
    ROW(var_dims, "R.dims(R._var_dim, a, dims, bool(keepdim), correction, False)",
        "D:dims r:correction=1 b:keepdim", 1, 1, 0, s_dims, -2, 2),
    ROW(std_dims, "R.dims(R._var_dim, a, dims, bool(keepdim), correction, True)",
        "D:dims r:correction=1 b:keepdim", 1, 1, 0, s_dims, -2, 2),
    ROW(discounted_cumsum, "R.discounted_cumsum(a, gamma, dim)", "r:gamma d:dim", 1, 1, 0,
        s_scan, -2, 2),
    ROW(var, "R.var(a, None, correction, False, False)", "r:correction=1", 1, 1, 0, s_norm, -2, 2),
    ROW(var_dim, "R.var(a, dim, correction, keepdim, False)", "d:dim r:correction=1 b:keepdim",
        1, 1, 0, s_norm, -2, 2),
    ROW(std, "R.var(a, None, correction, False, True)", "r:correction=1", 1, 1, 0, s_norm, -2, 2),
    ROW(std_dim, "R.var(a, dim, correction, keepdim, True)", "d:dim r:correction=1 b:keepdim", 1,
        1, 0, s_norm, -2, 2),
    ROW(norm, "R.norm(a.reshape(-1), p, 0)", "r:p=2", 1, 1, 0, s_norm, -2, 2),
    ROW(norm_dim, "R.norm(a, p, dim, keepdim)", "r:p=2 d:dim b:keepdim", 1, 1, 0, s_norm, -2,
        2),
};
const int TGR_N_REDUCE = (int)(sizeof TGR_ROWS_REDUCE / sizeof TGR_ROWS_REDUCE[0]);
