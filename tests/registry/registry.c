/* tests/registry/registry.c - the registry's table (the family arrays of
 * rows_*.c in one order), its parameters parsed from each row's string, the
 * sample containers and the sample builders most rows share, and the
 * manifest the Python side reads.
 *
 * Contract: nothing here aborts on a library failure the tests should see;
 * a builder whose tensor cannot be made (out of memory) leaves the sample
 * out. Samples are deterministic: their seeds come from the op's name. */
#include "registry.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

tgr_op **tgr_ops;
int tgr_nops;

const char *const TGR_NOT_OPS[] = {
    "tg_function_apply", /* custom functions: the op programs' square/cexp/mulsub */
    "tg_mark_modified",  /* a user's own write: tested in test_ops_inplace.c */
    "tg_from_blob",      /* wraps the caller's memory: tested in test_blob.c */
    "tg_from_dlpack",    /* wraps a producer's memory: tested in test_dlpack.c */
    NULL,
};

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void parse_params(tgr_op *op) {
    op->nparams = 0;
    int ni = 0, nf = 0;
    const char *p = op->params ? op->params : "";
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        tgr_param *q = &op->p[op->nparams++];
        q->kind = p[0];
        p += 2; /* "k:" */
        size_t n = 0;
        while (*p && *p != ' ' && *p != '=' && n + 1 < sizeof q->name) q->name[n++] = *p++;
        q->name[n] = '\0';
        while (*p && *p != ' ') p++;
        switch (q->kind) {
        case TGR_P_INT: case TGR_P_BOOL: case TGR_P_DIM: q->slot = ni++; break;
        case TGR_P_REAL: q->slot = nf++; break;
        default: q->slot = -1; break;
        }
    }
}

void tgr_init(void) {
    if (tgr_ops) return;
    struct {
        tgr_op *rows;
        int n;
    } fam[] = {{TGR_ROWS_ELEMENTWISE, TGR_N_ELEMENTWISE}, {TGR_ROWS_REDUCE, TGR_N_REDUCE},
               {TGR_ROWS_SHAPE, TGR_N_SHAPE}, {TGR_ROWS_INDEX, TGR_N_INDEX},
               {TGR_ROWS_LOSS, TGR_N_LOSS}};
    int n = 0;
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) n += fam[f].n;
    tgr_op **t = malloc((size_t)n * sizeof *t);
    if (!t) abort(); /* the test program's own memory */
    int k = 0;
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++)
        for (int i = 0; i < fam[f].n; i++) {
            parse_params(&fam[f].rows[i]);
            t[k++] = &fam[f].rows[i];
        }
    tgr_nops = n;
    tgr_ops = t;
}

const tgr_op *tgr_find(const char *name) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++)
        if (!strcmp(tgr_ops[i]->name, name)) return tgr_ops[i];
    return NULL;
}

const tgr_op *tgr_find_c(const char *c_name) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++)
        if (!strcmp(tgr_ops[i]->c_name, c_name)) return tgr_ops[i];
    return NULL;
}

const tgr_param *tgr_param_of(const tgr_op *op, const char *name) {
    for (int i = 0; i < op->nparams; i++)
        if (!strcmp(op->p[i].name, name)) return &op->p[i];
    return NULL;
}

/* ---- samples ---------------------------------------------------------------------- */

tgr_args tgr_args0(tg_dtype dt) {
    tgr_args a;
    memset(&a, 0, sizeof a);
    a.dtype = (int)dt;
    return a;
}

tgr_sample *tgr_add(tgr_samples *out, const char *what, unsigned flags, const tgr_args *a,
                    int nin, ...) {
    va_list ap;
    va_start(ap, nin);
    tg_tensor *in[TGR_MAX_IN] = {NULL};
    bool ok = true;
    for (int k = 0; k < nin; k++) {
        in[k] = va_arg(ap, tg_tensor *);
        if (!in[k] && !(flags & TGR_S_BAD)) ok = false;
    }
    va_end(ap);
    if (!ok) { /* a tensor could not be made: leave the sample out */
        for (int k = 0; k < nin; k++) tg_release(in[k]);
        return NULL;
    }
    if (out->n == out->cap) {
        int cap = out->cap ? 2 * out->cap : 16;
        tgr_sample *ns = realloc(out->s, (size_t)cap * sizeof *ns);
        if (!ns) abort();
        out->s = ns;
        out->cap = cap;
    }
    for (int k = 0; k < nin; k++) { /* empty: over no memory, as NumPy and DLPack give it */
        if (!in[k] || tg_numel(in[k]) != 0) continue;
        tg_tensor *e = tgr_over_null(in[k], TG_CPU, false, false);
        if (!e) abort(); /* the test program's own memory */
        tg_release(in[k]);
        in[k] = e;
        flags |= TGR_S_EMPTY;
    }
    tgr_sample *s = &out->s[out->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->what, sizeof s->what, "%s", what);
    s->nin = nin;
    for (int k = 0; k < nin; k++) s->in[k] = in[k];
    s->a = a ? *a : tgr_args0(TG_F64);
    s->flags = flags;
    return s;
}

void tgr_samples_free(tgr_samples *s) {
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < s->s[i].nin; k++) tg_release(s->s[i].in[k]);
    free(s->s);
    s->s = NULL;
    s->n = s->cap = 0;
}

void tgr_samples_of(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    out->n = out->cap = 0;
    out->s = NULL;
    op->samples(op, dt, out);
}

tg_status tgr_call_in(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                      tg_tensor **out) {
    for (int k = 0; k < TGR_MAX_OUT; k++) out[k] = NULL;
    if (!(op->flags & TGR_INPLACE)) return op->apply(op, in, a, out);
    /* an in-place op on a clone of its target: the clone, edited, is the result */
    tg_tensor *t = tg_clone(in[0]);
    if (!t && in[0]) return tg_last_status();
    tg_tensor *in2[TGR_MAX_IN];
    for (int k = 0; k < TGR_MAX_IN; k++) in2[k] = k < op->nin ? in[k] : NULL;
    in2[0] = t;
    tg_status st = op->apply(op, in2, a, out);
    if (st == TG_OK) out[0] = t;
    else tg_release(t);
    return st;
}

tg_status tgr_call(const tgr_op *op, const tgr_sample *s, tg_tensor **out) {
    return tgr_call_in(op, s->in, &s->a, out);
}

/* ---- the loss the gradient checks differentiate ------------------------------------- */

/* A weighting of output k (fixed values in [0.5, 1.5) of its shape and dtype),
 * so that every element of every output reaches the loss. */
tg_tensor *tgr_weights(const tg_tensor *o, int k) {
    return tg_rand(tg_get_dtype(o), tg_ndim(o), tg_shape(o), 991 + (uint64_t)k, 0.5, 1.5);
}

/* sum over the float outputs in mask (bit k; -1: those that require grad) of
 * sum(out_k * w_k); NULL when there is none (nothing to differentiate). New
 * reference. */
tg_tensor *tgr_loss(tg_tensor *const *out, int nout, unsigned mask) {
    tg_tensor *loss = NULL;
    for (int k = 0; k < nout; k++) {
        if (!out[k] || !(tg_get_dtype(out[k]) == TG_F32 || tg_get_dtype(out[k]) == TG_F64)) continue;
        if (mask == ~0u ? !tg_requires_grad(out[k]) : !(mask >> k & 1)) continue;
        tg_tensor *w = tgr_weights(out[k], k);
        tg_tensor *m = w ? tg_mul(out[k], w) : NULL;
        tg_tensor *sm = m ? tg_sum(m) : NULL;
        tg_tensor *nl = !sm ? NULL : loss ? tg_add(loss, sm) : tg_retain(sm);
        tg_release(w);
        tg_release(m);
        tg_release(sm);
        tg_release(loss);
        if (!nl) return NULL; /* a step failed: its error is pending */
        loss = nl;
    }
    return loss;
}

/* ---- tensors for samples --------------------------------------------------------- */

tg_tensor *tgr_rand(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed, double lo,
                    double hi) {
    if (dt == TG_F32 || dt == TG_F64) return tg_rand(dt, ndim, shape, seed, lo, hi);
    int64_t ilo = (int64_t)floor(lo), ihi = (int64_t)ceil(hi);
    if (dt == TG_BOOL) ilo = 0, ihi = 2;
    if (ihi <= ilo) ihi = ilo + 1;
    tg_tensor *i = tg_randint(ndim, shape, seed, ilo, ihi);
    if (!i || dt == TG_I64) return i;
    tg_tensor *b = tg_to_dtype(i, dt);
    tg_release(i);
    return b;
}

tg_tensor *tgr_strided(tg_tensor *t) {
    if (!t) return NULL;
    const int nd = tg_ndim(t);
    tg_tensor *v = NULL;
    if (nd >= 2) { /* a contiguous copy with the last two dims swapped, seen transposed */
        tg_tensor *tt = tg_transpose(t, -2, -1);
        tg_tensor *c = tg_contiguous(tt);
        v = tg_transpose(c, -2, -1);
        tg_release(tt);
        tg_release(c);
    } else if (nd == 1) { /* every second element of a tensor twice as long */
        tg_tensor *u = tg_unsqueeze(t, -1);
        tg_tensor *c = tg_cat(2, (tg_tensor *[]){u, u}, -1);
        tg_tensor *n = tg_narrow(c, -1, 0, 1);
        v = tg_squeeze(n, -1);
        tg_release(u);
        tg_release(c);
        tg_release(n);
    } else {
        return t;
    }
    tg_tensor *d = tg_detach(v);
    tg_release(v);
    tg_release(t);
    return d;
}

/* A DLPack tensor of no memory and the shape and strides it points to. */
typedef struct null_dl {
    tg_dl_managed_tensor m; /* first: the deleter's pointer is the struct's */
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
} null_dl;

static void null_dl_delete(tg_dl_managed_tensor *m) { free(m); }

static tg_dl_dtype dl_dtype(tg_dtype dt) {
    switch (dt) {
    case TG_F64: return (tg_dl_dtype){TG_DL_FLOAT, 64, 1};
    case TG_I64: return (tg_dl_dtype){TG_DL_INT, 64, 1};
    case TG_BOOL: return (tg_dl_dtype){TG_DL_BOOL, 8, 1};
    case TG_BF16: return (tg_dl_dtype){TG_DL_BFLOAT, 16, 1};
    default: return (tg_dl_dtype){TG_DL_FLOAT, 32, 1};
    }
}

tg_tensor *tgr_over_null(const tg_tensor *t, tg_device dev, bool dlpack, bool rg) {
    if (!t || tg_numel(t) != 0) return NULL;
    const tg_dtype dt = tg_get_dtype(t);
    const int nd = tg_ndim(t);
    tg_tensor *e;
    if (dlpack) {
        null_dl *x = calloc(1, sizeof *x);
        if (!x) abort();
        for (int d = 0; d < nd; d++) x->shape[d] = tg_shape(t)[d], x->strides[d] = tg_strides(t)[d];
        x->m.dl_tensor = (tg_dl_tensor){NULL, {dev == TG_CUDA ? TG_DL_CUDA : TG_DL_CPU, 0}, nd,
                                        dl_dtype(dt), x->shape, x->strides, 0};
        x->m.deleter = null_dl_delete;
        e = tg_from_dlpack(&x->m);
        if (!e) free(x);
    } else {
        e = tg_from_blob(dev, dt, nd, tg_shape(t), tg_strides(t), NULL, NULL, NULL);
    }
    if (e && rg && (dt == TG_F32 || dt == TG_F64 || dt == TG_BF16) &&
        tg_set_requires_grad(e, true) != TG_OK) {
        tg_release(e);
        e = NULL;
    }
    return e;
}

tg_tensor *tgr_ties(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed) {
    tg_tensor *i = tg_randint(ndim, shape, seed, -1, 3);
    if (!i || dt == TG_I64) return i;
    tg_tensor *r = tg_to_dtype(i, dt);
    tg_release(i);
    return r;
}

tg_tensor *tgr_specials(tg_dtype dt, int ndim, const int64_t *shape) {
    static const double sv[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-300, -1e300, 1.0, -2.5};
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) abort();
    for (int64_t i = 0; i < n; i++) v[i] = sv[i % 9];
    tg_tensor *d64 = tg_from_data(TG_F64, ndim, shape, v);
    free(v);
    if (!d64 || dt == TG_F64) return d64;
    tg_tensor *r = tg_to_dtype(d64, dt);
    tg_release(d64);
    return r;
}

/* ---- shared builders ------------------------------------------------------------- */

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static uint64_t seed_of(const tgr_op *op, int k) { return hash_name(op->name) + 7919u * (uint64_t)k; }

/* The row's default for each real parameter written "r:name=value". */
static void defaults(const tgr_op *op, tgr_args *a) {
    const char *p = op->params ? op->params : "";
    int nf = 0, ni = 0;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        char kind = p[0];
        const char *end = strchr(p, ' ');
        const char *eq = strchr(p, '=');
        bool has = eq && (!end || eq < end);
        if (kind == TGR_P_REAL) {
            if (has) a->fv[nf] = strtod(eq + 1, NULL);
            nf++;
        } else if (kind == TGR_P_INT || kind == TGR_P_BOOL || kind == TGR_P_DIM) {
            if (has) a->iv[ni] = strtoll(eq + 1, NULL, 10);
            ni++;
        }
        p = end ? end : p + strlen(p);
    }
}

static tgr_args args_of(const tgr_op *op, tg_dtype dt) {
    tgr_args a = tgr_args0(dt);
    defaults(op, &a);
    return a;
}

static double lo_of(const tgr_op *op) { return op->lo < op->hi ? op->lo : -2.0; }
static double hi_of(const tgr_op *op) { return op->lo < op->hi ? op->hi : 2.0; }

void tgr_samples_unary(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const double lo = lo_of(op), hi = hi_of(op);
    tgr_args a = args_of(op, dt);
    int k = 0;
#define R(nd, ...) tgr_rand(dt, nd, SH(__VA_ARGS__), seed_of(op, k++), lo, hi)
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, seed_of(op, k++), lo, hi));
    tgr_add(out, "1-d", TGR_S_SMOOTH, &a, 1, R(1, 5));
    tgr_add(out, "lead 1", TGR_S_SMOOTH, &a, 1, R(2, 3, 4))->batch = 1;
    tgr_add(out, "lead 2", TGR_S_SMOOTH, &a, 1, R(3, 2, 3, 4))->batch = 1;
    tgr_add(out, "lead 3", TGR_S_SMOOTH, &a, 1, R(4, 2, 2, 3, 2))->batch = 1;
    tgr_add(out, "empty", TGR_S_EMPTY, &a, 1, R(2, 0, 3));
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1, tgr_strided(R(2, 4, 3)))
        ->batch = 1;
    tgr_add(out, "strided 1-d", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1, tgr_strided(R(1, 6)));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    /* integer and bool tensors: computed where PyTorch computes (in i64, or in its
     * default float f32), refused where it refuses */
    const tg_dtype ints[2] = {TG_I64, TG_BOOL};
    for (int i = 0; i < 2; i++) {
        const bool takes = op->dtypes & (1u << ints[i]);
        char what[48];
        snprintf(what, sizeof what, "%s%s", tg_dtype_name(ints[i]), takes ? "" : " refused");
        tgr_sample *b = tgr_add(out, what, takes ? TGR_S_DTYPES : TGR_S_BAD, &a, 1,
                                tgr_rand(ints[i], 2, SH(3, 4), seed_of(op, k++), -5, 6));
        if (b && takes) b->batch = 1;
        if (b && !takes) b->want = TG_ERR_DTYPE;
    }
#undef R
}

/* The pairs of shapes binary ops are tried on: {ndim a, shape a, ndim b, shape b,
 * flags, batch}. */
typedef struct pair {
    const char *what;
    int na;
    int64_t sa[4];
    int nb;
    int64_t sb[4];
    unsigned flags, batch;
} pair;

static const pair PAIRS[] = {
    {"same 2-d", 2, {2, 3}, 2, {2, 3}, TGR_S_SMOOTH, 3},
    {"row broadcast", 2, {2, 3}, 1, {3}, TGR_S_SMOOTH | TGR_S_BCAST, 1},
    {"broadcast left", 1, {3}, 2, {2, 3}, TGR_S_SMOOTH | TGR_S_BCAST, 2},
    {"both broadcast", 3, {2, 1, 4}, 2, {3, 1}, TGR_S_SMOOTH | TGR_S_BCAST, 0},
    {"0-d right", 2, {2, 3}, 0, {0}, TGR_S_SMOOTH | TGR_S_BCAST, 1},
    {"0-d left", 0, {0}, 1, {4}, TGR_S_SMOOTH | TGR_S_BCAST, 0},
    {"lead 2", 3, {2, 3, 4}, 3, {2, 3, 4}, TGR_S_SMOOTH, 3},
    {"lead 3", 4, {2, 2, 1, 3}, 1, {3}, TGR_S_SMOOTH | TGR_S_BCAST, 1},
    {"empty", 2, {0, 3}, 1, {3}, TGR_S_EMPTY | TGR_S_BCAST, 0},
};

static void binary_pairs(const tgr_op *op, tg_dtype dt, tgr_samples *out, double lo, double hi,
                         unsigned extra) {
    tgr_args a = args_of(op, dt);
    int k = 100;
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++) {
        const pair *p = &PAIRS[i];
        tgr_sample *s = tgr_add(out, p->what, p->flags | extra, &a, 2,
                                tgr_rand(dt, p->na, p->sa, seed_of(op, k), lo, hi),
                                tgr_rand(dt, p->nb, p->sb, seed_of(op, k + 1), lo, hi));
        if (s) s->batch = p->batch;
        k += 2;
    }
    tgr_sample *s = tgr_add(out, "both strided", TGR_S_SMOOTH | TGR_S_STRIDED | extra, &a, 2,
                            tgr_strided(tgr_rand(dt, 2, SH(3, 4), seed_of(op, 1), lo, hi)),
                            tgr_strided(tgr_rand(dt, 2, SH(3, 4), seed_of(op, 2), lo, hi)));
    if (s) s->batch = 3;
    s = tgr_add(out, "shapes that do not broadcast", TGR_S_BAD, &a, 2,
                tgr_rand(dt, 2, SH(2, 3), seed_of(op, 3), lo, hi),
                tgr_rand(dt, 1, SH(4), seed_of(op, 4), lo, hi));
    if (s) s->want = TG_ERR_SHAPE;
}

/* Mixed dtypes, each as the first and as the second operand: the sample's
 * float with the other float, with i64 and with bool (not refused: promoted). */
static void mixed_pairs(const tgr_op *op, tg_dtype dt, tgr_samples *out, double lo, double hi) {
    tgr_args a = args_of(op, dt);
    const tg_dtype other = dt == TG_F32 ? TG_F64 : TG_F32;
    const tg_dtype with[3] = {other, TG_I64, TG_BOOL};
    static const char *const names[3][2] = {{"other float right", "other float left"},
                                            {"i64 right", "i64 left"},
                                            {"bool right", "bool left"}};
    /* PyTorch refuses a bool operand of sub, and pow, remainder and floor_divide of
     * two bools */
    const bool no_bool = !strcmp(op->name, "sub");
    const bool no_bool_pair = no_bool || !strcmp(op->name, "pow") ||
                              !strcmp(op->name, "remainder") || !strcmp(op->name, "floor_divide");
    for (int w = 0; w < 3; w++) {
        for (int left = 0; left < 2; left++) {
            double wl = w == 1 ? (lo > 0 ? 1 : -3) : lo, wh = w == 1 ? 4 : hi;
            tg_tensor *f = tgr_rand(dt, 2, SH(2, 3), seed_of(op, 200 + 2 * w + left), lo, hi);
            tg_tensor *o = tgr_rand(with[w], 1, SH(3), seed_of(op, 210 + 2 * w + left), wl, wh);
            const bool bad = w == 2 && no_bool;
            tgr_sample *s = tgr_add(out, names[w][left],
                                    bad ? TGR_S_BAD : TGR_S_DTYPES | TGR_S_BCAST, &a, 2,
                                    left ? o : f, left ? f : o);
            if (s) s->batch = bad ? 0 : left ? 2 : 1;
            if (s && bad) s->want = TG_ERR_DTYPE;
        }
    }
    const tg_dtype ints[2] = {TG_I64, TG_BOOL};
    for (int w = 0; w < 2; w++) {
        tg_tensor *x = tgr_rand(ints[w], 2, SH(3, 4), seed_of(op, 220 + w), w ? 0 : -4, 5);
        tg_tensor *y = tgr_rand(ints[w], 2, SH(3, 4), seed_of(op, 230 + w), w ? 0 : 1, 4);
        const bool bad = w == 1 && no_bool_pair;
        tgr_sample *s = tgr_add(out, w ? "bool bool" : "i64 i64", bad ? TGR_S_BAD : TGR_S_DTYPES,
                                &a, 2, x, y);
        if (s) s->batch = bad ? 0 : 3;
        if (s && bad) s->want = TG_ERR_DTYPE;
    }
}

void tgr_samples_binary(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const double lo = lo_of(op), hi = hi_of(op);
    binary_pairs(op, dt, out, lo, hi, 0);
    tgr_args a = args_of(op, dt);
    tgr_add(out, "ties", 0, &a, 2, tgr_ties(dt, 2, SH(3, 4), seed_of(op, 5)),
            tgr_ties(dt, 2, SH(3, 4), seed_of(op, 6)))->batch = 3;
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 2, tgr_specials(dt, 2, SH(3, 3)),
            tgr_rand(dt, 2, SH(3, 3), seed_of(op, 7), lo, hi));
    if (op->dtypes & (1u << TG_I64)) mixed_pairs(op, dt, out, lo, hi);
}

void tgr_samples_compare(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    binary_pairs(op, dt, out, -2, 2, 0);
    tgr_args a = args_of(op, dt);
    tgr_add(out, "ties", 0, &a, 2, tgr_rand(TG_I64, 3, SH(3, 1, 4), seed_of(op, 5), -1, 2),
            tgr_rand(TG_I64, 2, SH(2, 4), seed_of(op, 6), -1, 2));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 2, tgr_specials(dt, 2, SH(3, 3)),
            tgr_specials(dt, 1, SH(3)));
    tgr_add(out, "i64 with float", TGR_S_DTYPES, &a, 2,
            tgr_rand(TG_I64, 2, SH(3, 4), seed_of(op, 8), -2, 3),
            tgr_rand(dt, 1, SH(4), seed_of(op, 9), -2, 2));
    tgr_add(out, "bool with i64", TGR_S_DTYPES, &a, 2,
            tgr_rand(TG_BOOL, 2, SH(3, 4), seed_of(op, 10), 0, 2),
            tgr_rand(TG_I64, 2, SH(3, 4), seed_of(op, 11), -1, 3));
}

/* A reduction without an identity (the max, the min and their indices). */
static bool extreme(const tgr_op *op) {
    static const char *const names[] = {"amax", "amin", "max_dim", "min_dim", "argmax", "argmin"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(op->name, names[i], strlen(names[i]))) return true;
    return false;
}

/* shapes reduced along every dim (and its negative form), keepdim both */
void tgr_samples_reduce_dim(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{1, {5}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    const double lo = lo_of(op), hi = hi_of(op);
    const tgr_param *pd = tgr_param_of(op, "dim"), *pk = tgr_param_of(op, "keepdim");
    int k = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int nd = shapes[i].nd;
        for (int d = -nd; d < nd; d++) {
            if (d < 0 && d != -1) continue; /* one negative form is enough */
            for (int keep = 0; keep < 2; keep++) {
                tgr_args a = args_of(op, dt);
                if (pd) a.iv[pd->slot] = d;
                if (pk) a.iv[pk->slot] = keep;
                char what[48];
                snprintf(what, sizeof what, "%d-d dim %d%s", nd, d, keep ? " keepdim" : "");
                tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &a, 1,
                                        tgr_rand(dt, nd, shapes[i].s, seed_of(op, k++), lo, hi));
                int dn = d < 0 ? d + nd : d;
                if (s && nd >= 2 && dn != 0) s->batch = 1;
                if (!pk) break;
            }
        }
    }
    tgr_args a = args_of(op, dt);
    if (pd) a.iv[pd->slot] = 1;
    tgr_add(out, "transposed dim 1", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 3, SH(2, 4, 3), seed_of(op, k++), lo, hi)))->batch = 1;
    tgr_add(out, "ties dim 1", 0, &a, 1, tgr_ties(dt, 2, SH(3, 4), seed_of(op, k++)))->batch = 1;
    tgr_add(out, "empty others dim 1", TGR_S_EMPTY, &a, 1,
            tgr_rand(dt, 2, SH(0, 4), seed_of(op, k++), lo, hi));
    if (pd) { /* an empty line: the extremes have no identity there (PyTorch refuses) */
        tgr_args e = args_of(op, dt);
        e.iv[pd->slot] = 0;
        const bool ext = extreme(op);
        tgr_sample *s = tgr_add(out, "empty dim 0", ext ? TGR_S_BAD : TGR_S_EMPTY, &e, 1,
                                tgr_rand(dt, 2, SH(0, 4), seed_of(op, k++), lo, hi));
        if (s && ext) s->want = TG_ERR_SHAPE;
    }
    tgr_add(out, "specials dim 1", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    tgr_args z = args_of(op, dt);
    tgr_add(out, "0-d dim 0", TGR_S_SMOOTH, &z, 1, tgr_rand(dt, 0, NULL, seed_of(op, k++), lo, hi));
    if (pd) {
        tgr_args bad = args_of(op, dt);
        bad.iv[pd->slot] = 3;
        tgr_sample *s = tgr_add(out, "dim out of range", TGR_S_BAD, &bad, 1,
                                tgr_rand(dt, 2, SH(2, 3), seed_of(op, k++), lo, hi));
        if (s) s->want = TG_ERR_DIM;
    }
    if (op->dtypes & (1u << TG_I64)) {
        tgr_add(out, "i64 dim 1", TGR_S_DTYPES, &a, 1,
                tgr_rand(TG_I64, 2, SH(3, 4), seed_of(op, k++), -5, 6))->batch = 1;
    }
    if (op->dtypes & (1u << TG_BOOL))
        tgr_add(out, "bool dim 1", TGR_S_DTYPES, &a, 1,
                tgr_rand(TG_BOOL, 2, SH(3, 4), seed_of(op, k++), 0, 2))->batch = 1;
}

void tgr_samples_reduce_all(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const double lo = lo_of(op), hi = hi_of(op);
    tgr_args a = args_of(op, dt);
    int k = 0;
    tgr_add(out, "0-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 0, NULL, seed_of(op, k++), lo, hi));
    tgr_add(out, "1-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 1, SH(5), seed_of(op, k++), lo, hi));
    tgr_add(out, "2-d", TGR_S_SMOOTH, &a, 1, tgr_rand(dt, 2, SH(3, 4), seed_of(op, k++), lo, hi));
    tgr_add(out, "3-d", TGR_S_SMOOTH, &a, 1,
            tgr_rand(dt, 3, SH(2, 3, 4), seed_of(op, k++), lo, hi));
    tgr_add(out, "transposed", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 1,
            tgr_strided(tgr_rand(dt, 2, SH(4, 3), seed_of(op, k++), lo, hi)));
    tgr_add(out, "specials", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, SH(3, 3)));
    const bool ext = extreme(op); /* no identity: PyTorch refuses no elements */
    tgr_sample *e = tgr_add(out, "empty", ext ? TGR_S_BAD : TGR_S_EMPTY, &a, 1,
                            tgr_rand(dt, 2, SH(0, 3), seed_of(op, k++), lo, hi));
    if (e && ext) e->want = TG_ERR_SHAPE;
    if (op->dtypes & (1u << TG_I64))
        tgr_add(out, "i64", TGR_S_DTYPES, &a, 1,
                tgr_rand(TG_I64, 2, SH(3, 4), seed_of(op, k++), -5, 6));
    if (op->dtypes & (1u << TG_BOOL))
        tgr_add(out, "bool", TGR_S_DTYPES, &a, 1,
                tgr_rand(TG_BOOL, 2, SH(3, 4), seed_of(op, k++), 0, 2));
}
