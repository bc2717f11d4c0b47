/* tests/registry/rows_index.c - the registry rows of indexing (gather,
 * scatter_add, index_select, flip, one_hot), matmul, the softmax family and
 * sorting (sort, argsort, topk). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "rows.h"

CALL(gather, tg_gather(in[0], in[1]))
CALL(gather_dim, tg_gather_dim(in[0], PD(0), in[1]))
CALL(scatter_add, tg_scatter_add(in[0], PD(0), in[1], in[2]))
CALL(index_select, tg_index_select(in[0], PD(0), in[1]))
CALL(flip, tg_flip(in[0], a->ndim, DIMS(a)))
CALL(one_hot, tg_one_hot(in[0], PI(0)))
CALL(matmul, tg_matmul(in[0], in[1]))
CALL(softmax, tg_softmax(in[0]))
CALL(log_softmax, tg_log_softmax(in[0]))
CALL(argsort, tg_argsort(in[0], PD(0), PI(1) != 0))

/* sort and topk: the values, and the indices as a second output */
static tg_status ap_sort(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                         tg_tensor **out) {
    (void)op;
    out[0] = tg_sort(in[0], PD(0), PI(1) != 0, &out[1]);
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status ap_topk(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                         tg_tensor **out) {
    (void)op;
    out[0] = tg_topk(in[0], PI(0), PD(1), PI(2) != 0, &out[1]);
    return out[0] ? TG_OK : tg_last_status();
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static void bad1(tgr_samples *out, const char *what, const tgr_args *a, tg_status want, int nin,
                 tg_tensor *x, tg_tensor *y, tg_tensor *z) {
    tgr_sample *s = nin == 1   ? tgr_add(out, what, TGR_S_BAD, a, 1, x)
                    : nin == 2 ? tgr_add(out, what, TGR_S_BAD, a, 2, x, y)
                               : tgr_add(out, what, TGR_S_BAD, a, 3, x, y, z);
    if (s) s->want = want;
}

/* Leading shapes with 0-3 dims (the batch dim first) for the ops over the last dim. */
static const struct {
    int nd;
    int64_t s[3];
    const char *what;
} LEADS[] = {{0, {0}, "lead 0"}, {1, {3}, "lead 1"}, {2, {2, 3}, "lead 2"}, {3, {2, 2, 2}, "lead 3"}};

static void s_gather(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    for (int i = 0; i < 4; i++) {
        int64_t xs[4], is[4];
        const int nd = LEADS[i].nd;
        for (int d = 0; d < nd; d++) xs[d] = is[d] = LEADS[i].s[d];
        xs[nd] = 5;
        is[nd] = 3;
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 2,
                                tgr_rand(dt, nd + 1, xs, 1 + (uint64_t)i, -2, 2),
                                tgr_rand(TG_I64, nd + 1, is, 11 + (uint64_t)i, 0, 5));
        if (s && nd) s->batch = 3;
    }
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(dt, 2, SH(3, 4), 20, -2, 2)), tgr_rand(TG_I64, 2, SH(3, 6), 21, 0, 4))
        ->batch = 3;
    tgr_add(out, "no rows", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(0, 5), 25, -2, 2),
            tg_zeros(TG_I64, 2, SH(0, 3)));
    tgr_add(out, "no indices", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(2, 5), 26, -2, 2),
            tg_zeros(TG_I64, 2, SH(2, 0)));
    bad1(out, "index 5 of 5", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 2, SH(2, 5), 22, -2, 2),
         tg_full(TG_I64, 2, SH(2, 1), 5), NULL);
    bad1(out, "f64 index", &a, TG_ERR_DTYPE, 2, tgr_rand(dt, 2, SH(2, 5), 23, -2, 2),
         tgr_rand(TG_F64, 2, SH(2, 1), 24, 0, 1), NULL);
}

/* gather_dim, index_select and scatter_add along each dim of (3, 4, 2) */
static void s_dim_index(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const int64_t xs[3] = {3, 4, 2};
    const bool gather = !strcmp(op->name, "gather_dim"), scatter = !strcmp(op->name, "scatter_add");
    for (int d = -1; d < 3; d++) {
        const int dn = d < 0 ? d + 3 : d;
        tgr_args a = tgr_args0(dt);
        a.iv[0] = d;
        char what[48];
        snprintf(what, sizeof what, "dim %d", d);
        tg_tensor *x = tgr_rand(dt, 3, xs, 1 + (uint64_t)dn, -2, 2);
        if (d == 1) x = tgr_strided(x);
        if (gather || scatter) {
            int64_t is[3] = {3, 4, 2};
            is[dn] = 5;
            tg_tensor *ix = tgr_rand(TG_I64, 3, is, 5 + (uint64_t)dn, 0, (double)xs[dn]);
            tgr_sample *s = scatter ? tgr_add(out, what, TGR_S_SMOOTH, &a, 3, x, ix,
                                              tgr_rand(dt, 3, is, 9 + (uint64_t)dn, -2, 2))
                                    : tgr_add(out, what, TGR_S_SMOOTH, &a, 2, x, ix);
            if (s && dn != 0) s->batch = scatter ? 7 : 3;
        } else {
            const int64_t iv[4] = {xs[dn] - 1, 0, xs[dn] - 1, 1};
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &a, 2, x,
                                    tg_from_data(TG_I64, 1, SH(4), iv));
            if (s && dn != 0) s->batch = 1;
        }
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 0;
    if (!gather && !scatter)
        tgr_add(out, "empty index", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(3, 2), 20, -2, 2),
                tg_zeros(TG_I64, 1, SH(0)));
    else if (gather)
        tgr_add(out, "empty index", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(3, 2), 20, -2, 2),
                tg_zeros(TG_I64, 2, SH(0, 2)));
    else
        tgr_add(out, "empty index and source", TGR_S_EMPTY, &a, 3,
                tgr_rand(dt, 2, SH(3, 2), 20, -2, 2), tg_zeros(TG_I64, 2, SH(0, 2)),
                tgr_rand(dt, 2, SH(0, 2), 25, -2, 2));
    tgr_args e = tgr_args0(dt);
    e.iv[0] = 1;
    if (gather || scatter) { /* no rows at all */
        if (scatter)
            tgr_add(out, "empty input", TGR_S_EMPTY, &e, 3, tgr_rand(dt, 2, SH(0, 2), 26, -2, 2),
                    tg_zeros(TG_I64, 2, SH(0, 1)), tgr_rand(dt, 2, SH(0, 1), 27, -2, 2));
        else
            tgr_add(out, "empty input", TGR_S_EMPTY, &e, 2, tgr_rand(dt, 2, SH(0, 2), 26, -2, 2),
                    tg_zeros(TG_I64, 2, SH(0, 1)));
    } else {
        tgr_add(out, "empty input", TGR_S_EMPTY, &e, 2, tgr_rand(dt, 2, SH(0, 2), 26, -2, 2),
                tg_zeros(TG_I64, 1, SH(1)));
    }
    tg_tensor *x = tgr_rand(dt, 2, SH(3, 2), 21, -2, 2);
    tg_tensor *ix = tg_full(TG_I64, scatter || gather ? 2 : 1, scatter || gather ? SH(1, 2) : SH(1), 3);
    bad1(out, "index out of range", &a, TG_ERR_VALUE, scatter ? 3 : 2, x, ix,
         scatter ? tgr_rand(dt, 2, SH(1, 2), 22, -2, 2) : NULL);
    a.iv[0] = 2;
    bad1(out, "dim 2 of 2", &a, TG_ERR_DIM, scatter ? 3 : 2, tgr_rand(dt, 2, SH(3, 2), 23, -2, 2),
         tg_zeros(TG_I64, scatter || gather ? 2 : 1, scatter || gather ? SH(1, 2) : SH(1)),
         scatter ? tgr_rand(dt, 2, SH(1, 2), 24, -2, 2) : NULL);
}

static void s_flip(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const struct {
        int n;
        int64_t d[3];
        const char *what;
    } cs[] = {{2, {0, 2}, "0 2"}, {1, {1}, "1"}, {0, {0}, "none"}, {1, {-1}, "-1"}};
    for (int i = 0; i < 4; i++) {
        tgr_args a = tgr_args0(dt);
        a.ndim = cs[i].n;
        for (int k = 0; k < cs[i].n; k++) a.shape[k] = cs[i].d[k];
        tgr_add(out, cs[i].what, TGR_S_SMOOTH | (i == 1 ? TGR_S_STRIDED : 0u), &a, 1,
                i == 1 ? tgr_strided(tgr_rand(dt, 3, SH(3, 4, 2), 1, -2, 2))
                       : tgr_rand(dt, 3, SH(3, 4, 2), 2 + (uint64_t)i, -2, 2));
    }
    tgr_args a = tgr_args0(dt);
    a.ndim = 2, a.shape[0] = 0, a.shape[1] = 1;
    tgr_add(out, "empty, 0 1", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(3, 0), 10, -2, 2));
    a.ndim = 2, a.shape[0] = 1, a.shape[1] = 1;
    bad1(out, "repeated dim", &a, TG_ERR_DIM, 1, tgr_rand(dt, 2, SH(3, 4), 9, -2, 2), NULL, NULL);
}

static void s_one_hot(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 5;
    const int64_t y[6] = {0, 4, 2, 1, 1, 3};
    tgr_add(out, "(2, 3) of 5", TGR_S_DTYPES, &a, 1, tg_from_data(TG_I64, 2, SH(2, 3), y))->batch = 1;
    tgr_add(out, "0-d", TGR_S_DTYPES, &a, 1, tg_full(TG_I64, 0, NULL, 2));
    a.iv[0] = -1;
    tgr_add(out, "num_classes -1", TGR_S_DTYPES, &a, 1, tg_from_data(TG_I64, 1, SH(6), y));
    a.iv[0] = 5;
    tgr_add(out, "(0, 2) of 5", TGR_S_DTYPES, &a, 1, tg_zeros(TG_I64, 2, SH(0, 2)));
    a.iv[0] = -1; /* no targets to count the classes from: PyTorch refuses */
    bad1(out, "empty, num_classes -1", &a, TG_ERR_VALUE, 1, tg_zeros(TG_I64, 1, SH(0)), NULL,
         NULL);
    a.iv[0] = 3;
    bad1(out, "target 4 of 3", &a, TG_ERR_VALUE, 1, tg_from_data(TG_I64, 1, SH(6), y), NULL, NULL);
    bad1(out, "float targets", &a, TG_ERR_DTYPE, 1, tgr_rand(dt, 1, SH(3), 1, 0, 2), NULL, NULL);
}

static void s_matmul(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    tgr_add(out, "(3, 4) @ (4, 2)", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 2, SH(3, 4), 1, -1, 1),
            tgr_rand(dt, 2, SH(4, 2), 2, -1, 1))->batch = 1;
    tgr_add(out, "batched", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 3, SH(2, 3, 4), 3, -1, 1),
            tgr_rand(dt, 3, SH(2, 4, 5), 4, -1, 1))->batch = 3;
    tgr_add(out, "lead 2, shared weight", TGR_S_SMOOTH, &a, 2,
            tgr_rand(dt, 4, SH(2, 2, 3, 4), 5, -1, 1), tgr_rand(dt, 2, SH(4, 5), 6, -1, 1))->batch = 1;
    tgr_add(out, "transposed operands", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(dt, 2, SH(3, 4), 7, -1, 1)),
            tgr_strided(tgr_rand(dt, 2, SH(4, 2), 8, -1, 1)))->batch = 1;
    tgr_add(out, "empty inner dim", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(3, 0), 9, -1, 1),
            tgr_rand(dt, 2, SH(0, 2), 10, -1, 1));
    bad1(out, "inner sizes differ", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(3, 4), 11, -1, 1),
         tgr_rand(dt, 2, SH(3, 2), 12, -1, 1), NULL);
    bad1(out, "f32 @ f64", &a, TG_ERR_DTYPE, 2, tgr_rand(TG_F32, 2, SH(3, 4), 13, -1, 1),
         tgr_rand(TG_F64, 2, SH(4, 2), 14, -1, 1), NULL);
}

/* rows over the last dim with leading dims 0-3, strided, empty, -inf entries */
static void s_rows(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    for (int i = 0; i < 4; i++) {
        int64_t xs[4];
        const int nd = LEADS[i].nd;
        for (int d = 0; d < nd; d++) xs[d] = LEADS[i].s[d];
        xs[nd] = 5;
        tgr_sample *s = tgr_add(out, LEADS[i].what, TGR_S_SMOOTH, &a, 1,
                                tgr_rand(dt, nd + 1, xs, 1 + (uint64_t)i, -3, 3));
        if (s && nd) s->batch = 1;
    }
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, 9, -3, 3));
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 2, SH(4, 3), 10, -3, 3)))->batch = 1;
    tgr_add(out, "empty rows", TGR_S_EMPTY, &a, 1, tgr_rand(dt, 2, SH(0, 3), 11, -3, 3));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    bad1(out, "i64", &a, TG_ERR_DTYPE, 1, tgr_rand(TG_I64, 1, SH(3), 12, 0, 3), NULL, NULL);
}

/* The arguments of sort / argsort (dim, descending) and topk (k, dim, largest). */
static tgr_args sort_args(const tgr_op *op, tg_dtype dt, int dim, bool desc, int64_t k) {
    tgr_args a = tgr_args0(dt);
    const tgr_param *pk = tgr_param_of(op, "k");
    a.iv[tgr_param_of(op, "dim")->slot] = dim;
    a.iv[tgr_param_of(op, pk ? "largest" : "descending")->slot] = desc;
    if (pk) a.iv[pk->slot] = k;
    return a;
}

static tgr_sample *sort_add(tgr_samples *out, const tgr_op *op, tg_dtype dt, const char *what,
                            unsigned flags, int dim, bool desc, int64_t k, tg_tensor *x) {
    tgr_args a = sort_args(op, dt, dim, desc, k);
    return tgr_add(out, what, flags, &a, 1, x);
}

/* sort, argsort, topk: the last dim after 0-3 leading dims and every dim of
 * (3, 4) and (2, 3, 4), both directions; 0-d, transposed, ties (the stable
 * order), specials (NaN, +-inf, +-0), empty dims, i64 beyond 2^53, bool,
 * lines long enough for several merge passes and more lines than a GPU
 * block; dim and k out of range and topk of bool refused. */
static void s_sort(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool topk = tgr_param_of(op, "k") != NULL;
    tgr_sample *s;
    for (int i = 0; i < 4; i++) {
        int64_t xs[4];
        const int nd = LEADS[i].nd;
        for (int d = 0; d < nd; d++) xs[d] = LEADS[i].s[d];
        xs[nd] = 5;
        s = sort_add(out, op, dt, LEADS[i].what, TGR_S_SMOOTH, -1, i % 2, 3,
                     tgr_rand(dt, nd + 1, xs, 1 + (uint64_t)i, -2, 2));
        if (s && nd) s->batch = 1;
    }
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{2, {3, 4}}, {3, {2, 3, 4}}};
    for (int i = 0; i < 2; i++)
        for (int d = -1; d < shapes[i].nd; d++) {
            char what[48];
            snprintf(what, sizeof what, "%d-d dim %d%s", shapes[i].nd, d, (d + i) % 2 ? " desc" : "");
            s = sort_add(out, op, dt, what, TGR_S_SMOOTH, d, (d + i) % 2, 2,
                         tgr_rand(dt, shapes[i].nd, shapes[i].s, 10 + (uint64_t)(4 * i + d), -2, 2));
            if (s && d != 0) s->batch = 1;
        }
    sort_add(out, op, dt, "0-d", TGR_S_SMOOTH, 0, false, 1, tgr_rand(dt, 0, NULL, 20, -2, 2));
    sort_add(out, op, dt, "0-d dim -1 desc, k 0", TGR_S_SMOOTH, -1, true, 0,
             tgr_rand(dt, 0, NULL, 21, -2, 2));
    s = sort_add(out, op, dt, "transposed dim 1", TGR_S_SMOOTH | TGR_S_STRIDED, 1, true, 2,
                 tgr_strided(tgr_rand(dt, 2, SH(3, 4), 22, -2, 2)));
    if (s) s->batch = 1;
    sort_add(out, op, dt, "transposed dim 0", TGR_S_SMOOTH | TGR_S_STRIDED, 0, false, 3,
             tgr_strided(tgr_rand(dt, 2, SH(3, 4), 23, -2, 2)));
    sort_add(out, op, dt, "strided 1-d", TGR_S_SMOOTH | TGR_S_STRIDED, 0, true, 4,
             tgr_strided(tgr_rand(dt, 1, SH(6), 24, -2, 2)));
    for (int desc = 0; desc < 2; desc++) {
        s = sort_add(out, op, dt, desc ? "ties desc" : "ties", 0, 1, desc, 4,
                     tgr_ties(dt, 2, SH(3, 6), 25 + (uint64_t)desc));
        if (s) s->batch = 1;
        sort_add(out, op, dt, desc ? "specials desc" : "specials", TGR_S_SPECIAL, 1, desc, 5,
                 tgr_specials(dt, 2, SH(2, 9)));
    }
    sort_add(out, op, dt, "specials dim 0 desc", TGR_S_SPECIAL, 0, true, 4,
             tgr_specials(dt, 2, SH(9, 2)));
    sort_add(out, op, dt, "empty dim 0", TGR_S_EMPTY, 0, false, 0, tgr_rand(dt, 2, SH(0, 3), 27, -2, 2));
    sort_add(out, op, dt, "empty lines", TGR_S_EMPTY, 1, true, 2, tgr_rand(dt, 2, SH(0, 3), 28, -2, 2));
    sort_add(out, op, dt, "lines of 0", TGR_S_EMPTY, 1, false, 0, tgr_rand(dt, 2, SH(3, 0), 29, -2, 2));
    /* several merge passes (runs of 16), and more lines than a GPU block (256);
     * at most 4096 elements each (what the op programs rebuild) */
    s = sort_add(out, op, dt, "long lines desc", 0, 1, true, 600, tgr_rand(dt, 2, SH(3, 700), 30, -2, 2));
    if (s) s->batch = 1;
    s = sort_add(out, op, dt, "300 lines", 0, 1, false, 2, tgr_rand(dt, 2, SH(300, 5), 31, -2, 2));
    if (s) s->batch = 1;
    sort_add(out, op, dt, "300 strided lines", TGR_S_STRIDED, 0, true, 3,
             tgr_strided(tgr_rand(dt, 2, SH(5, 300), 32, -2, 2)));
    s = sort_add(out, op, dt, "260 lines of ties", 0, 1, true, 7, tgr_ties(dt, 2, SH(260, 15), 33));
    if (s) s->batch = 1;
    /* i64 (exact beyond 2^53) and bool */
    const int64_t big[8] = {((int64_t)1 << 62) + 1, (int64_t)1 << 62, INT64_MIN, INT64_MAX,
                            ((int64_t)1 << 62) + 1, -5, ((int64_t)1 << 53) + 1, (int64_t)1 << 53};
    for (int desc = 0; desc < 2; desc++)
        sort_add(out, op, dt, desc ? "i64 beyond 2^53 desc" : "i64 beyond 2^53", TGR_S_DTYPES, 0,
                 desc, 5, tg_from_data(TG_I64, 1, SH(8), big));
    s = sort_add(out, op, dt, "i64 ties", TGR_S_DTYPES, 1, false, 3,
                 tgr_rand(TG_I64, 2, SH(3, 6), 34, -2, 3));
    if (s) s->batch = 1;
    s = sort_add(out, op, dt, topk ? "bool refused" : "bool", topk ? TGR_S_BAD : TGR_S_DTYPES, 1,
                 true, 3, tgr_rand(TG_BOOL, 2, SH(3, 6), 35, 0, 2));
    if (s && topk) s->want = TG_ERR_DTYPE;
    else if (s) s->batch = 1;
    s = sort_add(out, op, dt, "dim 2 of 2", TGR_S_BAD, 2, false, 1, tgr_rand(dt, 2, SH(3, 4), 36, -2, 2));
    if (s) s->want = TG_ERR_DIM;
    if (topk) {
        s = sort_add(out, op, dt, "k 5 of 4", TGR_S_BAD, 1, true, 5, tgr_rand(dt, 2, SH(3, 4), 37, -2, 2));
        if (s) s->want = TG_ERR_VALUE;
        s = sort_add(out, op, dt, "k -1", TGR_S_BAD, 1, true, -1, tgr_rand(dt, 2, SH(3, 4), 38, -2, 2));
        if (s) s->want = TG_ERR_VALUE;
        s = sort_add(out, op, dt, "0-d k 2", TGR_S_BAD, 0, true, 2, tgr_rand(dt, 0, NULL, 39, -2, 2));
        if (s) s->want = TG_ERR_VALUE;
    }
}

tgr_op TGR_ROWS_INDEX[] = {
    {.name = "gather", .c_name = "tg_gather", .torch = "R.gather_last(a, b)", .nin = 2,
     .nin_required = 2, .nout = 1, .diff = 1, .apply = ap_gather, .samples = s_gather},
    {.name = "gather_dim", .c_name = "tg_gather_dim", .torch = "torch.gather(a, dim, b)",
     .params = "d:dim", .nin = 2, .nin_required = 2, .nout = 1, .diff = 1, .apply = ap_gather_dim,
     .samples = s_dim_index},
    {.name = "scatter_add", .c_name = "tg_scatter_add", .torch = "torch.scatter_add(a, dim, b, c)",
     .params = "d:dim", .nin = 3, .nin_required = 3, .nout = 1, .diff = 5,
     .apply = ap_scatter_add, .samples = s_dim_index},
    {.name = "index_select", .c_name = "tg_index_select",
     .torch = "torch.index_select(a, dim, b)", .params = "d:dim", .nin = 2, .nin_required = 2,
     .nout = 1, .diff = 1, .apply = ap_index_select, .samples = s_dim_index},
    {.name = "flip", .c_name = "tg_flip", .torch = "torch.flip(a, dims)", .params = "D:dims",
     .nin = 1, .nin_required = 1, .nout = 1, .diff = 1, .apply = ap_flip, .samples = s_flip},
    {.name = "one_hot", .c_name = "tg_one_hot", .torch = "F.one_hot(a, num_classes)",
     .params = "i:num_classes", .nin = 1, .nin_required = 1, .nout = 1, .apply = ap_one_hot,
     .samples = s_one_hot},
    {.name = "matmul", .c_name = "tg_matmul", .torch = "torch.matmul(a, b)", .nin = 2,
     .nin_required = 2, .nout = 1, .diff = 3, .apply = ap_matmul, .samples = s_matmul},
    {.name = "softmax", .c_name = "tg_softmax", .torch = "torch.softmax(a, -1)", .nin = 1,
     .nin_required = 1, .nout = 1, .diff = 1, .apply = ap_softmax, .samples = s_rows,
     .saves = TGR_SAVES_OUTPUT},
    {.name = "log_softmax", .c_name = "tg_log_softmax", .torch = "torch.log_softmax(a, -1)",
     .nin = 1, .nin_required = 1, .nout = 1, .diff = 1, .apply = ap_log_softmax,
     .samples = s_rows, .saves = TGR_SAVES_OUTPUT},
    {.name = "sort", .c_name = "tg_sort",
     .torch = "tuple(torch.sort(a, dim=dim, descending=bool(descending), stable=True))",
     .params = "d:dim b:descending", .nin = 1, .nin_required = 1, .nout = 2, .diff = 1,
     .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_sort, .samples = s_sort},
    {.name = "argsort", .c_name = "tg_argsort",
     .torch = "torch.argsort(a, dim=dim, descending=bool(descending), stable=True)",
     .params = "d:dim b:descending", .nin = 1, .nin_required = 1, .nout = 1,
     .dtypes = 1u << TG_I64 | 1u << TG_BOOL, .apply = ap_argsort, .samples = s_sort},
    {.name = "topk", .c_name = "tg_topk", .torch = "R.topk(a, k, dim, largest)",
     .params = "i:k d:dim b:largest", .nin = 1, .nin_required = 1, .nout = 2, .diff = 1,
     .dtypes = 1u << TG_I64, .apply = ap_topk, .samples = s_sort},
};
const int TGR_N_INDEX = (int)(sizeof TGR_ROWS_INDEX / sizeof TGR_ROWS_INDEX[0]);
