/* tests/registry/rows_shape.c - the registry rows of creation, views and
 * copies, dtype and device moves, joining and the triangles. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

#define DT ((tg_dtype)a->dtype)
#define SHAPE a->ndim, (a->ndim ? a->shape : NULL)

/* The shape field as the int dims tg_permute and tg_flip take (clamped to int). */
/* from_data with the literal values repeated over the shape (converted to the
 * dtype), or NULL data when there are none or the shape is too large. */
static tg_status ap_from_data(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                              tg_tensor **out) {
    (void)op, (void)in;
    int64_t n = 1;
    bool small = true;
    for (int i = 0; i < a->ndim && small; i++) {
        if (a->shape[i] < 0 || a->shape[i] > 4096) small = false;
        else if ((n *= a->shape[i]) > 4096) small = false;
    }
    void *buf = NULL;
    if (small && (n == 0 || a->nvals > 0) && tg_dtype_size(DT) > 0) {
        buf = malloc((size_t)(n ? n : 1) * 8);
        if (!buf) abort();
        for (int64_t i = 0; i < n; i++) {
            double v = a->vals[i % a->nvals];
            switch (DT) {
            case TG_F32: ((float *)buf)[i] = (float)v; break;
            case TG_F64: ((double *)buf)[i] = v; break;
            case TG_I64:
                ((int64_t *)buf)[i] = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX
                                                 : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
                break;
            case TG_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
            case TG_BF16: ((uint16_t *)buf)[i] = tg_bf16_from_f32((float)v); break;
            }
        }
    }
    out[0] = tg_from_data((tg_dtype)a->dtype, SHAPE, buf);
    free(buf);
    return out[0] ? TG_OK : tg_last_status();
}

CALL(empty, tg_empty(DT, SHAPE))
CALL(zeros, tg_zeros(DT, SHAPE))
CALL(ones, tg_ones(DT, SHAPE))
CALL(full, tg_full(DT, SHAPE, PR(0)))
CALL(arange, tg_arange(DT, PR(0), PR(1), PR(2)))
CALL(randn, tg_randn(DT, SHAPE, (uint64_t)PI(0), PR(0), PR(1)))
CALL(rand, tg_rand(DT, SHAPE, (uint64_t)PI(0), PR(0), PR(1)))
CALL(randint, tg_randint(SHAPE, (uint64_t)PI(0), PI(1), PI(2)))
CALL(slice, tg_slice(in[0], PD(0), PI(1), PI(2), PI(3)))
CALL(narrow, tg_narrow(in[0], PD(0), PI(1), PI(2)))
CALL(permute, tg_permute(in[0], a->ndim, DIMS(a)))
CALL(squeeze, tg_squeeze(in[0], PD(0)))
CALL(unsqueeze, tg_unsqueeze(in[0], PD(0)))
CALL(flatten, tg_flatten(in[0], PD(0), PD(1)))
CALL(view, tg_view(in[0], SHAPE))
CALL(reshape, tg_reshape(in[0], SHAPE))
CALL(transpose, tg_transpose(in[0], PD(0), PD(1)))
CALL(expand, tg_expand(in[0], SHAPE))
CALL(contiguous, tg_contiguous(in[0]))
CALL(clone, tg_clone(in[0]))
CALL(detach, tg_detach(in[0]))
CALL(to_dtype, tg_to_dtype(in[0], DT))
CALL(to_device, tg_to_device(in[0], TG_CPU))
CALL(cat, tg_cat(2, (tg_tensor *[]){in[0], in[1]}, PD(0)))
CALL(stack, tg_stack(2, (tg_tensor *[]){in[0], in[1]}, PD(0)))
CALL(triu, tg_triu(in[0], PI(0)))
CALL(tril, tg_tril(in[0], PI(0)))

/* ---- samples ------------------------------------------------------------------------------ */

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static tgr_args with_shape(tg_dtype dt, int nd, const int64_t *shape) {
    tgr_args a = tgr_args0(dt);
    a.ndim = nd;
    for (int i = 0; i < nd; i++) a.shape[i] = shape[i];
    return a;
}

static void bad(tgr_samples *out, const char *what, const tgr_args *a, tg_status want, int nin,
                tg_tensor *x, tg_tensor *y) {
    tgr_sample *s = nin == 0 ? tgr_add(out, what, TGR_S_BAD, a, 0)
                  : nin == 1 ? tgr_add(out, what, TGR_S_BAD, a, 1, x)
                             : tgr_add(out, what, TGR_S_BAD, a, 2, x, y);
    if (s) s->want = want;
}

/* creation: 0-d, 1-d, 3-d and empty shapes of dtype dt, and i64 and bool
 * (where the op takes them); a negative size and 9 dims refused */
static void s_create(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool ints = !strcmp(op->name, "randint");
    const bool floats_only = !strcmp(op->name, "randn") || !strcmp(op->name, "rand");
    const struct {
        int nd;
        int64_t s[3];
        const char *what;
    } shapes[] = {{0, {0}, "0-d"}, {1, {5}, "1-d"}, {3, {2, 3, 2}, "3-d"}, {2, {0, 3}, "empty"}};
    for (int i = 0; i < 6; i++) {
        if (i >= 4 && (ints || floats_only)) break;
        const int k = i < 4 ? i : 1;
        const tg_dtype d = ints ? TG_I64 : i == 4 ? TG_I64 : i == 5 ? TG_BOOL : dt;
        tgr_args a = with_shape(d, shapes[k].nd, shapes[k].s);
        a.iv[0] = 7 + (int64_t)i;              /* seed */
        a.iv[1] = -3, a.iv[2] = 9;             /* randint's range */
        a.fv[0] = !strcmp(op->name, "rand") ? -1 : 0.5; /* full's value, the mean, lo */
        a.fv[1] = 2;                           /* the std, hi */
        a.nvals = 3;
        a.vals[0] = 1.5, a.vals[1] = -2, a.vals[2] = 0;
        char what[48];
        snprintf(what, sizeof what, "%s %s", tg_dtype_name(d), shapes[k].what);
        tgr_add(out, what, (k == 3 ? TGR_S_EMPTY : 0) | (i >= 4 ? TGR_S_DTYPES : 0), &a, 0);
    }
    tgr_args neg = with_shape(dt, 2, SH(2, -1));
    neg.iv[1] = 0, neg.iv[2] = 1;
    neg.fv[1] = 1;
    bad(out, "negative size", &neg, TG_ERR_VALUE, 0, NULL, NULL);
    tgr_args nine = with_shape(dt, 9, SH(1, 1, 1, 1, 1, 1, 1, 1, 1));
    nine.iv[1] = 0, nine.iv[2] = 1;
    nine.fv[1] = 1;
    bad(out, "9 dims", &nine, TG_ERR_VALUE, 0, NULL, NULL);
}

static void s_arange(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const double r[][3] = {{0, 5, 1}, {-1.5, 2, 0.5}, {3, -1, -0.75}, {2, 2, 1}};
    for (int i = 0; i < 4; i++) {
        tgr_args a = tgr_args0(i == 0 ? TG_I64 : dt);
        a.fv[0] = r[i][0], a.fv[1] = r[i][1], a.fv[2] = r[i][2];
        char what[48];
        snprintf(what, sizeof what, "%g to %g by %g", r[i][0], r[i][1], r[i][2]);
        tgr_add(out, what, r[i][0] == r[i][1] ? TGR_S_EMPTY : 0u, &a, 0);
    }
    tgr_args a = tgr_args0(dt);
    a.fv[0] = 0, a.fv[1] = 3, a.fv[2] = 0;
    bad(out, "step 0", &a, TG_ERR_VALUE, 0, NULL, NULL);
}

/* one input of shape (2, 3, 4) (and transposed) with the row's arguments */
typedef struct vcase {
    const char *what;
    int64_t iv[4];
    int nd;
    int64_t shape[4];
    tg_status want;
} vcase;

static void view_cases(const tgr_op *op, tg_dtype dt, tgr_samples *out, const vcase *cs, int n) {
    for (int i = 0; i < n; i++) {
        tgr_args a = with_shape(dt, cs[i].nd, cs[i].shape);
        for (int k = 0; k < 4; k++) a.iv[k] = cs[i].iv[k];
        for (int strided = 0; strided < (cs[i].want ? 1 : 2); strided++) {
            tg_tensor *x = tgr_rand(dt, 3, SH(2, 3, 4), 1 + (uint64_t)i, -2, 2);
            if (strided) x = tgr_strided(x);
            char what[48];
            snprintf(what, sizeof what, "%s%s", cs[i].what, strided ? ", transposed" : "");
            tgr_sample *s = tgr_add(out, what, cs[i].want ? TGR_S_BAD
                                    : TGR_S_SMOOTH | (strided ? TGR_S_STRIDED : 0u),
                                    &a, 1, x);
            if (s) s->want = cs[i].want;
        }
    }
    /* the first case on no elements: dim 0 empty, dims 1 and 2 as above */
    tgr_args a = with_shape(dt, cs[0].nd, cs[0].shape);
    for (int k = 0; k < 4; k++) a.iv[k] = cs[0].iv[k];
    char what[48];
    snprintf(what, sizeof what, "%s, empty", cs[0].what);
    tgr_add(out, what, TGR_S_EMPTY, &a, 1, tgr_rand(dt, 3, SH(0, 3, 4), 40, -2, 2));
    (void)op;
}

#define N(cs) (int)(sizeof cs / sizeof cs[0])
static void s_slice(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"dim 1 [1:3]", {1, 1, 3, 1}, 0, {0}, TG_OK},
                               {"dim -1 step 2", {-1, 0, 4, 2}, 0, {0}, TG_OK},
                               {"dim 0 clamped", {0, -100, 100, 1}, 0, {0}, TG_OK},
                               {"dim 2 empty", {2, 3, 1, 1}, 0, {0}, TG_OK},
                               {"huge bounds", {2, INT64_MIN, INT64_MAX, 3}, 0, {0}, TG_OK},
                               {"step 0", {1, 0, 2, 0}, 0, {0}, TG_ERR_VALUE},
                               {"dim 3", {3, 0, 1, 1}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
}
static void s_narrow(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"dim 1 from 1 length 2", {1, 1, 2}, 0, {0}, TG_OK},
                               {"dim -1 from -3", {-1, -3, 2}, 0, {0}, TG_OK},
                               {"length 0", {0, 2, 0}, 0, {0}, TG_OK},
                               {"past the end", {2, 3, 2}, 0, {0}, TG_ERR_VALUE}};
    view_cases(op, dt, out, cs, N(cs));
}
static void s_permute(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"2 0 1", {0}, 3, {2, 0, 1}, TG_OK},
                               {"-1 -2 0", {0}, 3, {-1, -2, 0}, TG_OK},
                               {"repeated", {0}, 3, {0, 0, 1}, TG_ERR_DIM},
                               {"too few", {0}, 2, {0, 1}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
}
static void s_squeeze(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"dim 1 (size 3)", {1}, 0, {0}, TG_OK},
                               {"dim 5", {5}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
    tgr_args a = tgr_args0(dt);
    a.iv[0] = -2;
    tgr_add(out, "size-1 dim", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 3, SH(3, 1, 2), 9, -2, 2))->batch = 1;
    a.iv[0] = 0;
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 10, -2, 2));
}
static void s_unsqueeze(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"dim 1", {1}, 0, {0}, TG_OK}, {"dim -1", {-1}, 0, {0}, TG_OK},
                               {"dim 3", {3}, 0, {0}, TG_OK}, {"dim 5", {5}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
}
static void s_flatten(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"0..1", {0, 1}, 0, {0}, TG_OK}, {"1..-1", {1, -1}, 0, {0}, TG_OK},
                               {"2..2", {2, 2}, 0, {0}, TG_OK}, {"2..0", {2, 0}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
    tgr_args a = tgr_args0(dt);
    a.iv[1] = -1;
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 40, -2, 2));
    a.iv[1] = 4; /* a 0-d tensor has dims 0 and -1 only (before: accepted) */
    bad(out, "0-d, end 4", &a, TG_ERR_DIM, 1, tgr_rand(dt, 0, NULL, 41, -2, 2), NULL);
}
static void s_view(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"(6, 4)", {0}, 2, {6, 4}, TG_OK},
                               {"(-1)", {0}, 1, {-1}, TG_OK},
                               {"(2, 12)", {0}, 2, {2, -1}, TG_OK},
                               {"wrong count", {0}, 2, {5, 5}, TG_ERR_SHAPE}};
    /* tg_view of a transposed input fails (TG_ERR_LAYOUT): contiguous inputs only */
    const bool is_view = !strcmp(op->name, "view");
    for (int i = 0; i < N(cs); i++) {
        tgr_args a = with_shape(dt, cs[i].nd, cs[i].shape);
        for (int strided = 0; strided < (is_view || cs[i].want ? 1 : 2); strided++) {
            tg_tensor *x = tgr_rand(dt, 3, SH(2, 3, 4), 20 + (uint64_t)i, -2, 2);
            if (strided) x = tgr_strided(x);
            tgr_sample *s = tgr_add(out, cs[i].what, cs[i].want ? TGR_S_BAD : TGR_S_SMOOTH, &a, 1, x);
            if (s) s->want = cs[i].want;
        }
    }
    tgr_args e = with_shape(dt, 2, SH(-1, 4)); /* no elements: -1 is 0 */
    tgr_add(out, "empty (-1, 4)", TGR_S_EMPTY, &e, 1, tgr_rand(dt, 3, SH(0, 3, 4), 31, -2, 2));
    if (is_view) {
        tgr_args a = with_shape(dt, 1, SH(-1));
        bad(out, "transposed input", &a, TG_ERR_LAYOUT, 1,
            tgr_strided(tgr_rand(dt, 3, SH(2, 3, 4), 30, -2, 2)), NULL);
    }
}
static void s_transpose(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"0 1", {0, 1}, 0, {0}, TG_OK}, {"-1 0", {-1, 0}, 0, {0}, TG_OK},
                               {"1 1", {1, 1}, 0, {0}, TG_OK}, {"0 3", {0, 3}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
}
static void s_expand(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = with_shape(dt, 3, SH(2, 3, 4));
    tgr_add(out, "(3, 1) to (2, 3, 4)", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 2, SH(3, 1), 1, -2, 2));
    a = with_shape(dt, 2, SH(-1, 5));
    tgr_add(out, "(4, 1) -1 kept", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 2, SH(4, 1), 2, -2, 2));
    a = with_shape(dt, 2, SH(3, 2));
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 3, -2, 2));
    a = with_shape(dt, 3, SH(2, -1, 5));
    tgr_add(out, "empty (0, 1) to (2, 0, 5)", TGR_S_EMPTY, &a, 1,
            tgr_rand(dt, 2, SH(0, 1), 5, -2, 2));
    a = with_shape(dt, 2, SH(0, 3));
    tgr_add(out, "(1, 3) to (0, 3)", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(1, 3), 6, -2, 2));
    a = with_shape(dt, 2, SH(3, 5));
    bad(out, "(3, 4) to (3, 5)", &a, TG_ERR_SHAPE, 1, tgr_rand(dt, 2, SH(3, 4), 4, -2, 2), NULL);
}

/* one input: shapes with 0-3 dims, strided, empty */
static void s_copy(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool conv = !strcmp(op->name, "to_dtype");
    static const tg_dtype to[4] = {TG_F64, TG_F32, TG_I64, TG_BOOL};
    for (int t = 0; t < (conv ? 4 : 1); t++) {
        tgr_args a = tgr_args0(conv ? to[t] : dt);
        char what[48];
        snprintf(what, sizeof what, "to %s", tg_dtype_name(to[t]));
        unsigned smooth = !conv || to[t] == dt ? TGR_S_SMOOTH : 0; /* f32 rounding: no gradcheck */
        tgr_add(out, conv ? what : "2-d", smooth, &a, 1, tgr_rand(dt, 2, SH(3, 4), 1 + (uint64_t)t, -3, 3))
            ->batch = 1;
        tgr_add(out, "0-d", smooth, &a, 1, tgr_rand(dt, 0, NULL, 5 + (uint64_t)t, -3, 3));
        tgr_add(out, "lead 2 transposed", smooth | TGR_S_STRIDED, &a, 1,
                tgr_strided(tgr_rand(dt, 3, SH(2, 4, 3), 9 + (uint64_t)t, -3, 3)))->batch = 1;
        tgr_add(out, "empty", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(0, 3), 13 + (uint64_t)t, -3, 3));
        tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 1, SH(9)));
    }
    tgr_args a = tgr_args0(conv ? TG_F64 : dt);
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 1, tgr_rand(TG_I64, 2, SH(3, 4), 30, -5, 6))->batch = 1;
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 1, SH(5), 31, 0, 2));
}

/* two inputs joined along dim */
static void s_join(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool stack = !strcmp(op->name, "stack");
    const int64_t *sa = SH(2, 3, 4), *sb = stack ? SH(2, 3, 4) : SH(2, 1, 4);
    for (int d = -1; d < 3; d++) {
        tgr_args a = tgr_args0(dt);
        a.iv[0] = d;
        int64_t sbd[3] = {2, 3, 4};
        if (!stack && d >= 0) sbd[d] = 1 + d;
        if (!stack && d < 0) sbd[2] = 2;
        (void)sb;
        char what[48];
        snprintf(what, sizeof what, "dim %d", d);
        tgr_add(out, what, TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 3, sa, 1 + (uint64_t)d, -2, 2),
                tgr_strided(tgr_rand(dt, 3, sbd, 5 + (uint64_t)d, -2, 2)));
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 0;
    tgr_add(out, "empty part", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(2, 3), 10, -2, 2),
            tgr_rand(dt, 2, stack ? SH(2, 3) : SH(0, 3), 11, -2, 2));
    tgr_add(out, "i64 promoted", TGR_S_DTYPES, &a, 2, tgr_rand(dt, 1, SH(3), 12, -2, 2),
            tgr_rand(TG_I64, 1, SH(3), 13, -2, 2));
    tgr_add(out, "f32 with f64", TGR_S_DTYPES, &a, 2, tgr_rand(TG_F32, 2, SH(2, 3), 18, -2, 2),
            tgr_rand(TG_F64, 2, SH(stack ? 2 : 1, 3), 19, -2, 2));
    bad(out, "shapes differ", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(2, 3), 14, -2, 2),
        tgr_rand(dt, 2, SH(2, 4), 15, -2, 2));
    a.iv[0] = 4;
    bad(out, "dim 4", &a, TG_ERR_DIM, 2, tgr_rand(dt, 2, SH(2, 3), 16, -2, 2),
        tgr_rand(dt, 2, SH(2, 3), 17, -2, 2));
}

static void s_triangle(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const int64_t diag[4] = {0, 1, -1, 5};
    for (int i = 0; i < 4; i++) {
        tgr_args a = tgr_args0(dt);
        a.iv[0] = diag[i];
        char what[48];
        snprintf(what, sizeof what, "diagonal %lld", (long long)diag[i]);
        tgr_add(out, what, TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 2, SH(4, 5), 1 + (uint64_t)i, -2, 2));
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 1;
    tgr_add(out, "lead 1 transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 3, SH(2, 4, 3), 6, -2, 2)))->batch = 1;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    tgr_add(out, "empty (2, 0, 3)", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 3, SH(2, 0, 3), 8, -2, 2));
    bad(out, "1-d", &a, TG_ERR_DIM, 1, tgr_rand(dt, 1, SH(4), 7, -2, 2), NULL);
}

/* ---- selection and rearrangement: select, index, masked_select, roll, repeat --------------- */

CALL(select, tg_select(in[0], PD(0), PI(1)))
CALL(index, tg_index(in[0], PD(0), in[1]))
CALL(masked_select, tg_masked_select(in[0], in[1]))
CALL(repeat, tg_repeat(in[0], a->ndim, a->ndim ? a->shape : NULL))

/* roll: the shifts are the literal values, the dims the shape field */
static tg_status ap_roll(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                         tg_tensor **out) {
    (void)op;
    int64_t sh[TGR_MAX_VALS];
    for (int i = 0; i < a->nvals; i++) { /* saturated: any double a program carries */
        const double v = a->vals[i];
        sh[i] = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
    }
    out[0] = tg_roll(in[0], a->nvals, a->nvals ? sh : NULL, a->ndim,
                     a->ndim ? DIMS(a) : NULL);
    return out[0] ? TG_OK : tg_last_status();
}

/* Leading shapes with 0-3 dims (dim 0 a batch dim) in front of an op's last dim. */
static const struct {
    int nd;
    int64_t s[3];
    const char *what;
} LEADS[] = {{0, {0}, "lead 0"}, {1, {3}, "lead 1"}, {2, {2, 3}, "lead 2"},
             {3, {2, 2, 2}, "lead 3"}};

/* A tensor of shape (LEADS[i], last) of dtype dt. */
static tg_tensor *lead_rand(tg_dtype dt, int i, int64_t last, uint64_t seed) {
    int64_t xs[4];
    const int nd = LEADS[i].nd;
    for (int d = 0; d < nd; d++) xs[d] = LEADS[i].s[d];
    xs[nd] = last;
    return tgr_rand(dt, nd + 1, xs, seed, -2, 2);
}

static tg_tensor *ints(int nd, const int64_t *shape, const int64_t *v) {
    return tg_from_data(TG_I64, nd, shape, v);
}

static void bad2(tgr_samples *out, const char *what, const tgr_args *a, tg_status want,
                 tg_tensor *x, tg_tensor *y) {
    bad(out, what, a, want, 2, x, y);
}

static void s_select(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const vcase cs[] = {{"dim 1 index 2", {1, 2}, 0, {0}, TG_OK},
                               {"dim -1 index -1", {-1, -1}, 0, {0}, TG_OK},
                               {"dim 0 index 1", {0, 1}, 0, {0}, TG_OK},
                               {"index 3 of 3", {1, 3}, 0, {0}, TG_ERR_VALUE},
                               {"index -4 of 3", {1, -4}, 0, {0}, TG_ERR_VALUE},
                               {"dim 3", {3, 0}, 0, {0}, TG_ERR_DIM}};
    view_cases(op, dt, out, cs, N(cs));
    tgr_args a = tgr_args0(dt);
    a.iv[0] = -1, a.iv[1] = 3;
    for (int i = 0; i < 4; i++) {
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 1,
                                lead_rand(dt, i, 5, 50 + (uint64_t)i));
        if (s && LEADS[i].nd) s->batch = 1;
    }
    a.iv[0] = 0, a.iv[1] = 1;
    tgr_add(out, "empty (2, 0)", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(2, 0), 54, -2, 2));
    a.iv[0] = 1, a.iv[1] = 0;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 1, tgr_rand(TG_I64, 2, SH(3, 4), 55, -5, 6))->batch = 1;
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 2, SH(2, 3), 56, 0, 2))->batch = 1;
    a.iv[0] = 0;
    bad(out, "0-d", &a, TG_ERR_DIM, 1, tgr_rand(dt, 0, NULL, 57, -2, 2), NULL);
}

/* index: an i64 index of 0-3 dims (negative entries, repeats) along each dim */
static void s_index(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    a.iv[0] = -1; /* the last dim (size 5) after 0-3 leading dims */
    const int64_t v[6] = {4, -1, 0, 2, -5, 4};
    const struct {
        int nd;
        int64_t s[2];
    } ix[4] = {{1, {6}}, {2, {2, 3}}, {0, {0}}, {2, {3, 1}}};
    for (int i = 0; i < 4; i++) {
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 2,
                                lead_rand(dt, i, 5, 60 + (uint64_t)i), ints(ix[i].nd, ix[i].s, v));
        if (s && LEADS[i].nd) s->batch = 1;
    }
    a.iv[0] = 0;
    tgr_add(out, "dim 0, (2, 2) index", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 2, SH(4, 3), 64, -2, 2),
            ints(2, SH(2, 2), (const int64_t[]){3, -4, 1, 3}));
    a.iv[0] = 1;
    tgr_add(out, "dim 1 of (2, 4, 3), 1-d", TGR_S_SMOOTH, &a, 2,
            tgr_rand(dt, 3, SH(2, 4, 3), 65, -2, 2), ints(1, SH(3), (const int64_t[]){-1, 0, 2}))
        ->batch = 1;
    tgr_add(out, "transposed, strided index", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(dt, 2, SH(3, 4), 66, -2, 2)),
            tgr_strided(tgr_rand(TG_I64, 2, SH(2, 3), 67, -4, 4)))->batch = 1;
    tgr_add(out, "empty index", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(3, 4), 68, -2, 2),
            tg_zeros(TG_I64, 2, SH(2, 0)));
    a.iv[0] = 0;
    tgr_add(out, "empty t", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(2, 0), 69, -2, 2),
            ints(1, SH(3), (const int64_t[]){1, 0, -1}));
    a.iv[0] = 1;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 2, tgr_specials(dt, 2, SH(3, 3)),
            ints(1, SH(3), (const int64_t[]){2, 0, 2}));
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 2, tgr_rand(TG_I64, 2, SH(3, 4), 70, -9, 9),
            ints(2, SH(2, 2), (const int64_t[]){3, -4, 0, 0}))->batch = 1;
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 2, tgr_rand(TG_BOOL, 2, SH(3, 4), 71, 0, 2),
            ints(0, NULL, (const int64_t[]){-2}))->batch = 1;
    bad2(out, "index 4 of 4", &a, TG_ERR_VALUE, tgr_rand(dt, 2, SH(3, 4), 72, -2, 2),
         ints(2, SH(2, 2), (const int64_t[]){0, 1, 4, 1}));
    bad2(out, "index -5 of 4", &a, TG_ERR_VALUE, tgr_rand(dt, 2, SH(3, 4), 73, -2, 2),
         ints(1, SH(2), (const int64_t[]){0, -5}));
    bad2(out, "f64 index", &a, TG_ERR_DTYPE, tgr_rand(dt, 2, SH(3, 4), 74, -2, 2),
         tgr_rand(TG_F64, 1, SH(2), 75, 0, 3));
    bad2(out, "bool index", &a, TG_ERR_DTYPE, tgr_rand(dt, 2, SH(3, 4), 76, -2, 2),
         tgr_rand(TG_BOOL, 1, SH(4), 77, 0, 2));
    bad2(out, "dim 2 of 2", &(tgr_args){.dtype = (int)dt, .iv = {2}}, TG_ERR_DIM,
         tgr_rand(dt, 2, SH(3, 4), 78, -2, 2), ints(1, SH(1), (const int64_t[]){0}));
    a.iv[0] = 0;
    bad2(out, "0-d t", &a, TG_ERR_DIM, tgr_rand(dt, 0, NULL, 79, -2, 2),
         ints(0, NULL, (const int64_t[]){0}));
}

/* masked_select: bool masks of t's shape or broadcast with it, both ways */
static void s_masked_select(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    for (int i = 0; i < 4; i++) /* the mask (5) broadcast over the leading dims */
        tgr_add(out, LEADS[i].what, TGR_S_SMOOTH | (i ? TGR_S_BCAST : 0u), &a, 2,
                lead_rand(dt, i, 5, 80 + (uint64_t)i),
                tgr_rand(TG_BOOL, 1, SH(5), 84 + (uint64_t)i, 0, 2));
    tgr_add(out, "same shape", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 2, SH(3, 4), 88, -2, 2),
            tgr_rand(TG_BOOL, 2, SH(3, 4), 89, 0, 2));
    tgr_add(out, "t broadcast to the mask", TGR_S_SMOOTH | TGR_S_BCAST, &a, 2,
            tgr_rand(dt, 2, SH(3, 1), 90, -2, 2), tgr_rand(TG_BOOL, 3, SH(2, 3, 4), 91, 0, 2));
    tgr_add(out, "0-d t", TGR_S_SMOOTH | TGR_S_BCAST, &a, 2, tgr_rand(dt, 0, NULL, 92, -2, 2),
            tgr_rand(TG_BOOL, 1, SH(4), 93, 0, 2));
    tgr_add(out, "0-d both", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 0, NULL, 94, -2, 2),
            tg_full(TG_BOOL, 0, NULL, 1));
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(dt, 2, SH(3, 4), 95, -2, 2)),
            tgr_strided(tgr_rand(TG_BOOL, 2, SH(3, 4), 96, 0, 2)));
    tgr_add(out, "all false", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 2, SH(2, 3), 97, -2, 2),
            tg_zeros(TG_BOOL, 2, SH(2, 3)));
    tgr_add(out, "empty", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(0, 3), 98, -2, 2),
            tgr_rand(TG_BOOL, 1, SH(3), 99, 0, 2));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 2, tgr_specials(dt, 2, SH(3, 3)),
            tgr_rand(TG_BOOL, 2, SH(3, 3), 100, 0, 2));
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 2, tgr_rand(TG_I64, 2, SH(3, 4), 101, -9, 9),
            tgr_rand(TG_BOOL, 1, SH(4), 102, 0, 2));
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 2, tgr_rand(TG_BOOL, 2, SH(3, 4), 103, 0, 2),
            tgr_rand(TG_BOOL, 2, SH(3, 4), 104, 0, 2));
    bad2(out, "i64 mask", &a, TG_ERR_DTYPE, tgr_rand(dt, 2, SH(3, 4), 105, -2, 2),
         tgr_rand(TG_I64, 2, SH(3, 4), 106, 0, 2));
    bad2(out, "f64 mask", &a, TG_ERR_DTYPE, tgr_rand(dt, 1, SH(4), 107, -2, 2),
         tgr_rand(TG_F64, 1, SH(4), 108, 0, 1));
    bad2(out, "shapes do not broadcast", &a, TG_ERR_SHAPE, tgr_rand(dt, 2, SH(3, 4), 109, -2, 2),
         tgr_rand(TG_BOOL, 1, SH(3), 110, 0, 2));
}

/* roll: shifts (the values) along dims (the shape field), or over the flattened tensor */
static tgr_args roll_args(tg_dtype dt, int ns, const double *sh, int nd, const int64_t *dims) {
    tgr_args a = with_shape(dt, nd, dims);
    a.nvals = ns;
    for (int i = 0; i < ns; i++) a.vals[i] = sh[i];
    return a;
}

static void s_roll(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const struct {
        const char *what;
        int ns;
        double sh[3];
        int nd;
        int64_t dims[3];
        tg_status want;
    } cs[] = {{"1 along 0", 1, {1}, 1, {0}, TG_OK},
              {"-5 along 2, 3 along -1", 2, {-5, 3}, 2, {2, -1}, TG_OK},
              {"7, flattened", 1, {7}, 0, {0}, TG_OK},
              {"1 -1 10 along 0 1 2", 3, {1, -1, 10}, 3, {0, 1, 2}, TG_OK},
              {"2^62 along 1", 1, {4611686018427387904.0}, 1, {1}, TG_OK},
              {"2 shifts, 1 dim", 2, {1, 2}, 1, {0}, TG_ERR_VALUE},
              {"no shift", 0, {0}, 0, {0}, TG_ERR_VALUE},
              {"2 shifts, flattened", 2, {1, 2}, 0, {0}, TG_ERR_VALUE},
              {"dim 3", 1, {1}, 1, {3}, TG_ERR_DIM}};
    for (int i = 0; i < N(cs); i++) {
        tgr_args a = roll_args(dt, cs[i].ns, cs[i].sh, cs[i].nd, cs[i].dims);
        for (int strided = 0; strided < (cs[i].want ? 1 : 2); strided++) {
            tg_tensor *x = tgr_rand(dt, 3, SH(3, 4, 2), 120 + (uint64_t)i, -2, 2);
            if (strided) x = tgr_strided(x);
            char what[48];
            snprintf(what, sizeof what, "%s%s", cs[i].what, strided ? ", transposed" : "");
            tgr_sample *s = tgr_add(out, what, cs[i].want ? TGR_S_BAD
                                    : TGR_S_SMOOTH | (strided ? TGR_S_STRIDED : 0u), &a, 1, x);
            if (s) s->want = cs[i].want;
        }
    }
    tgr_args a = roll_args(dt, 1, (const double[]){-2}, 1, SH(-1));
    for (int i = 0; i < 4; i++) {
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 1,
                                lead_rand(dt, i, 5, 140 + (uint64_t)i));
        if (s && LEADS[i].nd) s->batch = 1;
    }
    tgr_add(out, "empty along 0", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(0, 3), 144, -2, 2));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 1, tgr_rand(TG_I64, 2, SH(3, 4), 145, -9, 9))->batch = 1;
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 2, SH(3, 4), 146, 0, 2))->batch = 1;
    a = roll_args(dt, 1, (const double[]){3}, 0, NULL);
    tgr_add(out, "0-d, flattened", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 147, -2, 2));
    tgr_add(out, "empty, flattened", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(2, 0), 148, -2, 2));
    tgr_add(out, "transposed, flattened", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 2, SH(3, 4), 149, -2, 2)));
    a = roll_args(dt, 1, (const double[]){1}, 1, SH(0));
    bad(out, "0-d along 0", &a, TG_ERR_DIM, 1, tgr_rand(dt, 0, NULL, 150, -2, 2), NULL);
}

/* repeat: repeats (the shape field) over t's dims and new leading ones */
static void s_repeat(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const struct {
        const char *what;
        int nd;
        int64_t r[9];
        tg_status want;
    } cs[] = {{"2 1", 2, {2, 1}, TG_OK},
              {"2 1 3: a new dim", 3, {2, 1, 3}, TG_OK},
              {"1 1: a copy", 2, {1, 1}, TG_OK},
              {"8 dims", 8, {1, 2, 1, 1, 1, 1, 2, 3}, TG_OK},
              {"0 2: empty", 2, {0, 2}, TG_OK},
              {"1 repeat for 2 dims", 1, {2}, TG_ERR_VALUE},
              {"-1 2", 2, {-1, 2}, TG_ERR_VALUE},
              {"9 repeats", 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, TG_ERR_VALUE}};
    for (int i = 0; i < N(cs); i++) {
        tgr_args a = with_shape(dt, cs[i].nd, cs[i].r);
        for (int strided = 0; strided < (cs[i].want ? 1 : 2); strided++) {
            tg_tensor *x = tgr_rand(dt, 2, SH(2, 3), 160 + (uint64_t)i, -2, 2);
            if (strided) x = tgr_strided(x);
            char what[48];
            snprintf(what, sizeof what, "%s%s", cs[i].what, strided ? ", transposed" : "");
            const unsigned fl = cs[i].want ? TGR_S_BAD
                                : (cs[i].r[0] == 0 ? TGR_S_EMPTY : TGR_S_SMOOTH) |
                                      (strided ? TGR_S_STRIDED : 0u);
            tgr_sample *s = tgr_add(out, what, fl, &a, 1, x);
            if (s) s->want = cs[i].want;
        }
    }
    for (int i = 0; i < 4; i++) { /* 1 over the leading dims, 2 along the last */
        tgr_args a = tgr_args0(dt);
        a.ndim = LEADS[i].nd + 1;
        for (int d = 0; d < a.ndim; d++) a.shape[d] = d == a.ndim - 1 ? 2 : 1;
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 1,
                                lead_rand(dt, i, 3, 170 + (uint64_t)i));
        if (s && LEADS[i].nd) s->batch = 1;
    }
    tgr_args a = with_shape(dt, 2, SH(3, 2));
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 174, -2, 2));
    tgr_add(out, "empty (0, 3)", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(0, 3), 175, -2, 2));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    tgr_add(out, "i64", TGR_S_DTYPES, &a, 1, tgr_rand(TG_I64, 2, SH(3, 4), 176, -9, 9));
    tgr_add(out, "bool", TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 1, SH(4), 177, 0, 2));
    a = tgr_args0(dt);
    tgr_add(out, "0-d, no repeat", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 178, -2, 2));
}

/* ---- the rows ------------------------------------------------------------------------------- */

#define CREATE(NAME, TORCH, PARAMS, FLAGS, SAMPLES)                                            \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS,                 \
     .flags = TGR_CREATE | (FLAGS), .nout = 1, .apply = ap_##NAME, .samples = SAMPLES}
#define VIEW(NAME, TORCH, PARAMS, SAMPLES)                                                     \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = 1,       \
     .nin_required = 1, .nout = 1, .diff = 1, .flags = TGR_VIEW, .apply = ap_##NAME,          \
     .samples = SAMPLES}
#define ONE(NAME, TORCH, PARAMS, DIFF, FLAGS, SAMPLES)                                         \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = 1,       \
     .nin_required = 1, .nout = 1, .diff = DIFF, .flags = FLAGS, .apply = ap_##NAME,          \
     .samples = SAMPLES}

tgr_op TGR_ROWS_SHAPE[] = {
    CREATE(empty, "torch.empty(shape, dtype=dtype)", "T:dtype S:shape", TGR_UNINIT, s_create),
    CREATE(zeros, "torch.zeros(shape, dtype=dtype)", "T:dtype S:shape", 0, s_create),
    CREATE(ones, "torch.ones(shape, dtype=dtype)", "T:dtype S:shape", 0, s_create),
    CREATE(full, "torch.full(shape, value, dtype=dtype)", "T:dtype S:shape r:value", 0, s_create),
    CREATE(arange, "torch.arange(start, end, step, dtype=dtype)", "T:dtype r:start r:end r:step",
           0, s_arange),
    CREATE(from_data, "R.from_data(vals, shape, dtype)", "T:dtype S:shape V:vals", 0, s_create),
    CREATE(randn, "R.random(shape, dtype)", "T:dtype S:shape i:seed r:mean r:std", TGR_RANDOM,
           s_create),
    CREATE(rand, "R.random(shape, dtype)", "T:dtype S:shape i:seed r:lo r:hi", TGR_RANDOM,
           s_create),
    CREATE(randint, "R.random(shape, torch.int64)", "S:shape i:seed i:low i:high", TGR_RANDOM,
           s_create),
    VIEW(slice, "R.slice(a, dim, start, end, step)", "d:dim i:start i:end i:step", s_slice),
    VIEW(narrow, "a.narrow(dim, start, length)", "d:dim i:start i:length", s_narrow),
    VIEW(permute, "a.permute(dims)", "D:dims", s_permute),
    VIEW(squeeze, "a.squeeze(dim)", "d:dim", s_squeeze),
    VIEW(unsqueeze, "a.unsqueeze(dim)", "i:dim", s_unsqueeze),
    ONE(flatten, "a.flatten(start, end)", "d:start d:end", 1, TGR_VIEW | TGR_MAYBE_SELF,
        s_flatten),
    VIEW(view, "a.view(shape)", "S:shape", s_view),
    ONE(reshape, "a.reshape(shape)", "S:shape", 1, TGR_VIEW, s_view),
    VIEW(transpose, "a.transpose(d0, d1)", "d:d0 d:d1", s_transpose),
    VIEW(expand, "a.expand(shape)", "S:shape", s_expand),
    ONE(contiguous, "a.contiguous()", "", 1, TGR_MAYBE_SELF, s_copy),
    ONE(clone, "a.clone(memory_format=torch.contiguous_format)", "", 1, 0, s_copy),
    ONE(detach, "a.detach()", "", 0, TGR_VIEW, s_copy),
    ONE(to_dtype, "R.to_dtype(a, dtype)", "T:dtype", 1, TGR_MAYBE_SELF, s_copy),
    ONE(to_device, "a.to('cpu')", "i:device", 1, TGR_MAYBE_SELF | TGR_NO_DEVICE, s_copy),
    {.name = "cat", .c_name = "tg_cat", .torch = "torch.cat([a, b], dim)", .params = "d:dim",
     .nin = 2, .nin_required = 2, .nout = 1, .diff = 3, .apply = ap_cat, .samples = s_join},
    {.name = "stack", .c_name = "tg_stack", .torch = "torch.stack([a, b], dim)", .params = "i:dim",
     .nin = 2, .nin_required = 2, .nout = 1, .diff = 3, .flags = TGR_COMPOSITE, .apply = ap_stack,
     .samples = s_join},
    ONE(triu, "torch.triu(a, diagonal)", "i:diagonal", 1, 0, s_triangle),
    ONE(tril, "torch.tril(a, diagonal)", "i:diagonal", 1, 0, s_triangle),
    {.name = "select", .c_name = "tg_select", .torch = "a.select(dim, index)",
     .params = "d:dim i:index", .nin = 1, .nin_required = 1, .nout = 1, .diff = 1,
     .flags = TGR_VIEW, .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_select,
     .samples = s_select},
    {.name = "index", .c_name = "tg_index", .torch = "R.index(a, dim, b)", .params = "d:dim",
     .nin = 2, .nin_required = 2, .nout = 1, .diff = 1, .dtypes = 1u << TG_I64 | 1u << TG_BOOL,
     .apply = ap_index, .samples = s_index},
    {.name = "masked_select", .c_name = "tg_masked_select", .torch = "R.masked_select(a, b)",
     .nin = 2, .nin_required = 2, .nout = 1, .diff = 1, .flags = TGR_NO_BATCH,
     .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_masked_select,
     .samples = s_masked_select},
    {.name = "roll", .c_name = "tg_roll", .torch = "torch.roll(a, [int(v) for v in shifts], dims)",
     .params = "V:shifts D:dims", .nin = 1, .nin_required = 1, .nout = 1, .diff = 1,
     .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_roll, .samples = s_roll},
    {.name = "repeat", .c_name = "tg_repeat", .torch = "a.repeat(repeats)", .params = "S:repeats",
     .nin = 1, .nin_required = 1, .nout = 1, .diff = 1, .flags = TGR_COMPOSITE,
     .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_repeat, .samples = s_repeat},
};
const int TGR_N_SHAPE = (int)(sizeof TGR_ROWS_SHAPE / sizeof TGR_ROWS_SHAPE[0]);
