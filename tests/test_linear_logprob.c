/* tests/test_linear_logprob.c - tg_linear_logprob_entropy: the chunked loop
 * against matmul + the fused logits op (its composite impl, a separate
 * path), for every chunk and vocabulary block size, every option, ignored
 * rows anywhere; gradcheck in f64; the exact memory of forward and
 * backward; nothing saved without grad; in-place edits caught; bad inputs;
 * an allocation-failure sweep. */
#include <math.h>
#include <stdlib.h>

#include "tg_test_util.h"

TestSuite(linear_logprob, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

typedef struct lcase {
    tg_dtype dt;
    int64_t N, d, V;
    int64_t chunk, vblock;
    bool bias, entropy, entropy_grad, lse, ignore_some;
    double T;
    bool req_h, req_w, req_b;
} lcase;

typedef struct lres {
    tg_tensor *lp, *H, *lse;   /* outputs */
    tg_tensor *gh, *gw, *gb;   /* gradients (NULL when not required) */
} lres;

/* Inputs of case c (fresh leaves; same values for the same case). */
static void make_inputs(const lcase *c, tg_tensor **h, tg_tensor **w, tg_tensor **b,
                        tg_tensor **y) {
    *h = tg_randn(c->dt, 2, (int64_t[]){c->N, c->d}, 11, 0.0, 1.0);
    *w = tg_randn(c->dt, 2, (int64_t[]){c->V, c->d}, 12, 0.0, 1.5);
    *b = c->bias ? tg_randn(c->dt, 1, (int64_t[]){c->V}, 13, 0.0, 1.0) : NULL;
    *y = c->ignore_some ? tgt_targets(c->N, c->V, 14)
                        : tg_randint(1, (int64_t[]){c->N}, 14, 0, c->V);
    if (c->ignore_some && c->N > 1) { /* a run of ignored rows at the start as well */
        int64_t *yy = tg_data(*y);
        yy[0] = yy[1] = -100;
    }
    tg_set_requires_grad(*h, c->req_h);
    tg_set_requires_grad(*w, c->req_w);
    if (*b) tg_set_requires_grad(*b, c->req_b);
}

/* Runs the op with impl, backward of sum(lp * a) + sum(H * e) + sum(lse * l)
 * with fixed distinct upstream weights a, e, l. */
static lres run(const lcase *c, tg_logprob_impl impl) {
    tg_tensor *h, *w, *b, *y;
    make_inputs(c, &h, &w, &b, &y);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.impl = impl;
    o.temperature = c->T;
    o.want_entropy = c->entropy;
    o.entropy_grad = c->entropy_grad;
    o.chunk_rows = c->chunk;
    o.vocab_block = c->vblock;
    lres r = {0};
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &r.lp, &r.H, c->lse ? &r.lse : NULL),
                 TG_OK, "%s", tg_last_error());
    tg_tensor *loss = tg_sum(tg_mul(r.lp, tg_randn(c->dt, 1, (int64_t[]){c->N}, 21, 0.5, 1.0)));
    if (c->entropy && c->entropy_grad)
        loss = tg_add(loss, tg_sum(tg_mul(r.H, tg_randn(c->dt, 1, (int64_t[]){c->N}, 22, 0.0, 1.0))));
    if (c->lse)
        loss = tg_add(loss, tg_sum(tg_mul(r.lse, tg_randn(c->dt, 1, (int64_t[]){c->N}, 23, 0.0, 1.0))));
    if (c->req_h || c->req_w || (c->bias && c->req_b))
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    r.gh = c->req_h ? tg_grad(h) : NULL;
    r.gw = c->req_w ? tg_grad(w) : NULL;
    r.gb = c->bias && c->req_b ? tg_grad(b) : NULL;
    return r;
}


/* The loop against the composite path: every output and gradient within tol
 * (relative to the largest entry of each). */
static void check_case(const lcase *c, double tol) {
    lres f = run(c, TG_LOGPROB_FUSED), m = run(c, TG_LOGPROB_COMPOSITE);
    const char *what[6] = {"logprob", "entropy", "lse", "d hidden", "d weight", "d bias"};
    tg_tensor *fs[6] = {f.lp, f.H, f.lse, f.gh, f.gw, f.gb};
    tg_tensor *ms[6] = {m.lp, m.H, m.lse, m.gh, m.gw, m.gb};
    for (int k = 0; k < 6; k++) {
        cr_assert_eq(fs[k] == NULL, ms[k] == NULL, "%s present in one path only", what[k]);
        if (!fs[k]) continue;
        double e = tgt_max_rel(fs[k], ms[k]);
        cr_assert(e <= tol, "%s: relative difference %.3g > %.3g (N %lld d %lld V %lld chunk "
                  "%lld block %lld %s)", what[k], e, tol, (long long)c->N, (long long)c->d,
                  (long long)c->V, (long long)c->chunk, (long long)c->vblock,
                  tg_dtype_name(c->dt));
    }
}

static lcase base(tg_dtype dt) {
    lcase c = {dt, 13, 7, 37, 0, 0, true, true, true, true, true, 0.7, true, true, true};
    return c;
}

Test(linear_logprob, f64_every_chunk_and_block_size) {
    const int64_t chunks[] = {0, 1, 2, 5, 13, 100}, blocks[] = {0, 1, 3, 8, 36, 37, 50};
    for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++)
        for (size_t j = 0; j < sizeof blocks / sizeof *blocks; j++) {
            int t = tg_scope_begin();
            lcase c = base(TG_F64);
            c.chunk = chunks[i];
            c.vblock = blocks[j];
            check_case(&c, 1e-12);
            cr_assert_eq(tg_scope_end(t), TG_OK);
        }
}

Test(linear_logprob, f64_every_option) {
    for (int mask = 0; mask < 64; mask++) {
        int t = tg_scope_begin();
        lcase c = base(TG_F64);
        c.bias = mask & 1;
        c.entropy = mask & 2;
        c.entropy_grad = mask & 4;
        c.lse = mask & 8;
        c.ignore_some = mask & 16;
        c.vblock = mask & 32 ? 10 : 0;
        c.T = mask & 4 ? 1.0 : 1.9;
        c.req_h = (mask % 3) != 0;
        c.req_w = (mask % 3) != 1;
        check_case(&c, 1e-12);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(linear_logprob, f32_matches_within_f32_accuracy) {
    /* PyTorch's own f32 (matmul then log_softmax) differs from its f64 by ~1e-6
     * relative on such a case; the loop and the composite path are both f32 */
    const int64_t blocks[] = {0, 5, 64};
    for (size_t j = 0; j < 3; j++) {
        int t = tg_scope_begin();
        lcase c = base(TG_F32);
        c.N = 40, c.d = 33, c.V = 300, c.chunk = 7, c.vblock = blocks[j];
        check_case(&c, 2e-5);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(linear_logprob, leading_shape_and_strided_hidden) {
    /* hidden (2, 3, d) taken as a transposed view: copied once, same answer */
    tg_tensor *raw = tg_randn(TG_F64, 3, (int64_t[]){3, 2, 5}, 3, 0.0, 1.0);
    tg_set_requires_grad(raw, true);
    tg_tensor *h = tg_transpose(raw, 0, 1); // (2, 3, 5)
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){9, 5}, 4, 0.0, 1.0);
    tg_tensor *y = tg_from_data(TG_I64, 2, (int64_t[]){2, 3}, (int64_t[]){1, -100, 8, 0, 3, 3});
    tg_tensor *lp, *H, *lse;
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.vocab_block = 4;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, &lse), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_ndim(lp), 2);
    cr_assert_eq(tg_shape(lp)[0], 2);
    cr_assert_eq(tg_shape(lp)[1], 3);
    tg_tensor *z = tg_matmul(h, tg_transpose(w, 0, 1));
    tg_tensor *lp2, *H2;
    cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp2, &H2), TG_OK);
    cr_assert(tgt_max_rel(lp, lp2) < 1e-13);
    cr_assert(tgt_max_rel(H, H2) < 1e-13);
    /* lse[b, t] of every b (before the fix, row [0, t]'s for every b); 0 where ignored */
    tg_tensor *zero = tg_zeros(TG_F64, 0, NULL);
    tg_tensor *want = tg_where(tg_ne_scalar(y, -100), tg_logsumexp_dim(z, -1, false), zero);
    cr_assert(tgt_max_rel(lse, want) < 1e-13);
    cr_assert_eq(tgt_at(lp, 1), 0.0); /* ignored row */
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_shape(tg_grad(raw))[0], 3);
}

/* sum(lp) + 0.3 sum(H) + 0.2 sum(lse) of the loop, for gradcheck */
static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    const tg_linear_logprob_opts *o = user;
    int t = tg_scope_begin();
    tg_tensor *y = tg_from_data(TG_I64, 1, (int64_t[]){5}, (int64_t[]){2, -100, 0, 6, 6});
    tg_tensor *lp, *H, *lse, *l = NULL;
    if (tg_linear_logprob_entropy(in[0], in[1], in[2], y, o, &lp, &H, &lse) == TG_OK)
        l = tg_retain(tg_add(tg_add(tg_sum(lp), tg_scale(tg_sum(H), 0.3)),
                             tg_scale(tg_sum(lse), 0.2)));
    tg_scope_end(t);
    return l;
}

Test(linear_logprob, gradcheck_f64) {
    tg_tensor *in[3] = {tg_randn(TG_F64, 2, (int64_t[]){5, 4}, 1, 0.0, 1.0),
                        tg_randn(TG_F64, 2, (int64_t[]){7, 4}, 2, 0.0, 1.0),
                        tg_randn(TG_F64, 1, (int64_t[]){7}, 3, 0.0, 1.0)};
    for (int k = 0; k < 3; k++) tg_set_requires_grad(in[k], true);
    const int64_t blocks[] = {0, 3};
    for (int j = 0; j < 2; j++) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.temperature = 0.8;
        o.chunk_rows = 2;
        o.vocab_block = blocks[j];
        cr_assert_eq(tg_gradcheck(gc_fn, &o, 3, in, NULL), TG_OK, "%s", tg_last_error());
    }
}

/* ---- memory ---------------------------------------------------------------------- */


Test(linear_logprob, exact_memory_no_logits) {
    /* forward: outputs + statistics + the plan's workspace, nothing (N, V);
     * backward: the gradients + its workspace. The plan is the most a pass
     * holds, reached exactly when a chunk is gathered across ignored rows;
     * with every row kept it holds less. (N above the chunk sizes: the
     * first chunk is full) */
    const int64_t N = 200, d = 16, V = 1000;
    for (int variant = 0; variant < 4; variant++) {
        const int multi = variant & 1, gathered = variant & 2;
        int t = tg_scope_begin();
        tg_tensor *h = tg_randn(TG_F32, 2, (int64_t[]){N, d}, 1, 0.0, 1.0);
        tg_tensor *w = tg_randn(TG_F32, 2, (int64_t[]){V, d}, 2, 0.0, 1.0);
        tg_tensor *b = tg_randn(TG_F32, 1, (int64_t[]){V}, 3, 0.0, 1.0);
        tg_tensor *y = tg_randint(1, (int64_t[]){N}, 4, 0, V);
        if (gathered) /* an ignored row every 5: every chunk spans some */
            for (int64_t i = 2; i < N; i += 5) ((int64_t *)tg_data(y))[i] = -100;
        tg_set_requires_grad(h, true);
        tg_set_requires_grad(w, true);
        tg_set_requires_grad(b, true);
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        if (multi) o.workspace_bytes = 20000; /* 20 KB: blocks of the vocabulary */
        else o.chunk_rows = 16;               /* 16 rows of the whole vocabulary */
        tg_linear_logprob_plan p;
        cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_F32, true, &o, &p), TG_OK);
        cr_assert_eq(p.n_blocks > 1, multi == 1, "blocks %lld", (long long)p.n_blocks);
        const size_t budget =
            o.workspace_bytes ? o.workspace_bytes : tg_linear_logprob_default_workspace(TG_CPU);
        cr_assert(p.forward_workspace <= budget);
        cr_assert(p.backward_workspace <= budget);
        const size_t before = tgt_cpu_live();
        tg_mem_reset_peak(TG_CPU);
        tg_tensor *lp, *H, *L;
        cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L), TG_OK);
        const size_t outs = 2 * N * 4 + N * 3 * 8; /* logprob, entropy, statistics (saved) */
        const size_t fwd = tgt_cpu_peak() - before;
        if (gathered)
            cr_assert_eq(fwd, outs + p.forward_workspace, "forward peak %zu, expected %zu", fwd,
                         outs + p.forward_workspace);
        else
            cr_assert(fwd > outs && fwd <= outs + p.forward_workspace, "forward peak %zu", fwd);
        cr_assert_eq(tgt_cpu_live() - before, outs + N * 4); /* and the lse */
        tg_tensor *loss = tg_add(tg_add(tg_sum(lp), tg_sum(H)), tg_sum(L));
        const size_t before_bwd = tgt_cpu_live();
        tg_mem_reset_peak(TG_CPU);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        const size_t grads = (N * d + V * d + V) * 4;
        /* and the three upstream gradients, (N) each, that the sums' backward makes */
        const size_t ups = 3 * N * 4, bwd = tgt_cpu_peak() - before_bwd;
        if (gathered)
            cr_assert_eq(bwd, grads + p.backward_workspace + ups, "backward peak %zu, expected "
                         "gradients %zu + workspace %zu + upstream %zu", bwd, grads,
                         p.backward_workspace, ups);
        else
            cr_assert(bwd > grads + ups && bwd <= grads + p.backward_workspace + ups,
                      "backward peak %zu", bwd);
        cr_assert(tgt_cpu_peak() - before < (size_t)N * V * 4, "an (N, V) buffer was made");
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(linear_logprob, nothing_saved_without_grad) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){6, 3}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){11, 3}, 2, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){6}, 3, 0, 11);
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, NULL, &lp, &H, NULL), TG_OK);
    tg_mem_get(TG_CPU, &m1);
    cr_assert_eq(m1.saved, m0.saved);
    cr_assert(!tg_requires_grad(lp));
    /* with grad: the statistics (2 or 3 doubles per row) and the inputs by reference */
    tg_set_requires_grad(w, true);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.entropy_grad = false;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, NULL), TG_OK);
    tg_mem_get(TG_CPU, &m1);
    const size_t inputs = (6 * 3 + 11 * 3) * 8 + 6 * 8;
    cr_assert_eq(m1.saved - m0.saved, inputs + 6 * 16, "saved %zu", m1.saved - m0.saved);
    cr_assert(!tg_requires_grad(H), "entropy_grad off: the entropy is a constant");
}

Test(linear_logprob, entropy_grad_off_has_no_entropy_term) {
    lcase c = base(TG_F64);
    c.entropy_grad = false;
    lres a = run(&c, TG_LOGPROB_FUSED);
    c.entropy = false;
    lres b = run(&c, TG_LOGPROB_FUSED);
    cr_assert_eq(tgt_max_rel(a.gw, b.gw), 0.0);
    cr_assert_eq(tgt_max_rel(a.gh, b.gh), 0.0);
}

Test(linear_logprob, inplace_edit_after_forward_is_caught) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){4, 3}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){4}, 3, 0, 5);
    tg_set_requires_grad(w, true);
    tg_tensor *hh = tg_scale(h, 1.0); /* not a leaf: may be edited in place */
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(hh, w, NULL, y, NULL, &lp, &H, NULL), TG_OK);
    cr_assert_eq(tg_scale_(hh, 2.0), TG_OK);
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "LinearLogprobEntropyBackward", "scale_", NULL);
}

Test(linear_logprob, run_to_run_bitwise) {
    lcase c = base(TG_F32);
    c.N = 50, c.d = 20, c.V = 200, c.chunk = 16, c.vblock = 64;
    lres a = run(&c, TG_LOGPROB_FUSED), b = run(&c, TG_LOGPROB_FUSED);
    cr_assert_eq(tgt_max_rel(a.gw, b.gw), 0.0);
    cr_assert_eq(tgt_max_rel(a.gh, b.gh), 0.0);
    cr_assert_eq(tgt_max_rel(a.gb, b.gb), 0.0);
    cr_assert_eq(tgt_max_rel(a.lp, b.lp), 0.0);
}

Test(linear_logprob, all_rows_ignored_and_empty) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){3, 2}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){4, 2}, 2, 0.0, 1.0);
    tg_set_requires_grad(h, true);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_full(TG_I64, 1, (int64_t[]){3}, -100);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, NULL, &lp, &H, NULL), TG_OK);
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(tgt_at(lp, i), 0.0);
    for (int i = 0; i < 8; i++) cr_assert_eq(tgt_at(tg_grad(w), i), 0.0);
    tg_tensor *h0 = tg_zeros(TG_F64, 2, (int64_t[]){0, 2});
    tg_tensor *y0 = tg_zeros(TG_I64, 1, (int64_t[]){0});
    cr_assert_eq(tg_linear_logprob_entropy(h0, w, NULL, y0, NULL, &lp, &H, NULL), TG_OK);
    cr_assert_eq(tg_numel(lp), 0);
}

/* ---- bad inputs ------------------------------------------------------------------- */

Test(linear_logprob, bad_inputs) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){4, 3}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
    tg_tensor *b = tg_randn(TG_F64, 1, (int64_t[]){5}, 2, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){4}, 3, 0, 5);
    tg_tensor *lp = (tg_tensor *)1, *H = (tg_tensor *)1, *L = (tg_tensor *)1;
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
#define BAD(st, call, ...)                                                                   \
    do {                                                                                     \
        tg_clear_error();                                                                    \
        cr_assert_eq(call, st);                                                              \
        tgt_assert_error(st, __VA_ARGS__, NULL);                                             \
        cr_assert_null(lp);                                                                  \
    } while (0)
    BAD(TG_ERR_NULL, tg_linear_logprob_entropy(NULL, w, b, y, &o, &lp, &H, &L), "hidden");
    BAD(TG_ERR_NULL, tg_linear_logprob_entropy(h, NULL, b, y, &o, &lp, &H, &L), "weight");
    BAD(TG_ERR_NULL, tg_linear_logprob_entropy(h, w, b, NULL, &o, &lp, &H, &L), "targets");
    BAD(TG_ERR_NULL, tg_linear_logprob_entropy(h, w, b, y, &o, &lp, NULL, &L), "entropy");
    tg_clear_error();
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, NULL, &H, &L), TG_ERR_NULL);
    tg_tensor *wf = tg_to_dtype(w, TG_F32), *bf = tg_to_dtype(b, TG_F32);
    BAD(TG_ERR_DTYPE, tg_linear_logprob_entropy(h, wf, b, y, &o, &lp, &H, &L), "one dtype");
    BAD(TG_ERR_DTYPE, tg_linear_logprob_entropy(h, w, bf, y, &o, &lp, &H, &L), "one dtype");
    BAD(TG_ERR_DTYPE, tg_linear_logprob_entropy(h, w, b, h, &o, &lp, &H, &L), "i64");
    tg_tensor *w4 = tg_randn(TG_F64, 2, (int64_t[]){5, 4}, 2, 0.0, 1.0);
    BAD(TG_ERR_SHAPE, tg_linear_logprob_entropy(h, w4, b, y, &o, &lp, &H, &L), "[5, 4]",
        "(V, 3)");
    tg_tensor *b6 = tg_zeros(TG_F64, 1, (int64_t[]){6});
    BAD(TG_ERR_SHAPE, tg_linear_logprob_entropy(h, w, b6, y, &o, &lp, &H, &L), "bias", "[6]");
    tg_tensor *y3 = tg_randint(1, (int64_t[]){3}, 3, 0, 5);
    BAD(TG_ERR_SHAPE, tg_linear_logprob_entropy(h, w, b, y3, &o, &lp, &H, &L), "targets",
        "[3]");
    tg_tensor *w0 = tg_zeros(TG_F64, 2, (int64_t[]){0, 3});
    BAD(TG_ERR_SHAPE, tg_linear_logprob_entropy(h, w0, NULL, y, &o, &lp, &H, &L), "V >= 1");
    tg_tensor *yb = tg_from_data(TG_I64, 1, (int64_t[]){4}, (int64_t[]){0, 1, 5, 2});
    BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(h, w, b, yb, &o, &lp, &H, &L), "row 2",
        "target 5");
    o.temperature = 0;
    BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L), "temperature");
    o = tg_linear_logprob_opts_default();
    o.chunk_rows = -1;
    BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L), "chunk_rows");
    o = tg_linear_logprob_opts_default();
    o.workspace_bytes = 10;
    BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L), "workspace_bytes",
        "at least");
    o = tg_linear_logprob_opts_default();
    o.impl = (tg_logprob_impl)7;
    BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L), "impl");
    /* a NaN in hidden: the row and the vocabulary entry are named, for one and several blocks */
    o = tg_linear_logprob_opts_default();
    tg_tensor *hn = tg_clone(h);
    ((double *)tg_data(hn))[2 * 3 + 1] = NAN;
    for (int j = 0; j < 2; j++) {
        o.vocab_block = j ? 2 : 0;
        BAD(TG_ERR_VALUE, tg_linear_logprob_entropy(hn, w, b, y, &o, &lp, &H, &L), "row 2",
            "vocabulary entry 0", "nan");
    }
    tg_linear_logprob_plan p;
    tg_clear_error();
    cr_assert_eq(tg_linear_logprob_plan_for(4, 3, 5, TG_I64, false, NULL, &p), TG_ERR_DTYPE);
    cr_assert_eq(tg_linear_logprob_plan_for(4, -1, 5, TG_F32, false, NULL, &p), TG_ERR_VALUE);
    cr_assert_eq(tg_linear_logprob_plan_for(4, 3, 0, TG_F32, false, NULL, &p), TG_ERR_VALUE);
    tg_clear_error();
    cr_assert_eq(tg_linear_logprob_plan_for(4, 3, 5, TG_F32, false, NULL, NULL), TG_ERR_NULL);
    cr_assert_eq(tg_live().nodes, 0);
#undef BAD
}

/* The default plan at trainers' sizes: within the budget, blocks of even
 * size, and for bf16 (which converts the weight once per chunk) chunks of d
 * rows while a block stays at least as wide, never a sliver of the
 * vocabulary beside thousands of rows. */
Test(linear_logprob, default_plan_shapes) {
    const int64_t ds[] = {256, 1024, 4096, 5789, 8192, 16384};
    const int64_t Vs[] = {32000, 128256, 256000};
    const size_t budgets[] = {(size_t)64 << 20, TG_LINEAR_LOGPROB_WORKSPACE, (size_t)513 << 20};
    const tg_dtype dts[] = {TG_F32, TG_BF16};
    for (size_t a = 0; a < 6; a++)
        for (size_t v = 0; v < 3; v++)
            for (size_t k = 0; k < 3; k++)
                for (size_t t = 0; t < 2; t++) {
                    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
                    o.workspace_bytes = budgets[k];
                    tg_linear_logprob_plan p;
                    cr_assert_eq(tg_linear_logprob_plan_for(65536, ds[a], Vs[v], dts[t], true, &o,
                                                            &p), TG_OK);
                    const int64_t c = p.chunk_rows, vb = p.vocab_block, nb = p.n_blocks;
                    cr_assert(p.forward_workspace <= budgets[k] &&
                              p.backward_workspace <= budgets[k]);
                    cr_assert_eq(nb, (Vs[v] + vb - 1) / vb);
                    /* even blocks: the last one is at most nb - 1 entries short */
                    cr_assert(nb * vb - Vs[v] < nb, "V %lld: %lld blocks of %lld",
                              (long long)Vs[v], (long long)nb, (long long)vb);
                    if (nb > 1) {
                        cr_assert(vb >= c || c == 128, "d %lld V %lld %s budget %zu: chunk %lld "
                                  "beside a block of %lld", (long long)ds[a], (long long)Vs[v],
                                  tg_dtype_name(dts[t]), budgets[k], (long long)c, (long long)vb);
                    }
                    if (dts[t] == TG_BF16 && nb > 1 && ds[a] == 1024 && budgets[k] ==
                        TG_LINEAR_LOGPROB_WORKSPACE)
                        cr_assert_eq(c, 1024, "bf16 d 1024: chunk %lld", (long long)c);
                }
    /* the bench's bf16 shape: 1024-row chunks, 5 blocks of 25652 */
    tg_linear_logprob_plan p;
    cr_assert_eq(tg_linear_logprob_plan_for(8192, 1024, 128256, TG_BF16, false, NULL, &p), TG_OK);
    cr_assert(p.chunk_rows == 1024 && p.vocab_block == 25652 && p.n_blocks == 5,
              "%lld x %lld", (long long)p.chunk_rows, (long long)p.vocab_block);
}

/* The CPU's default budget: an eighth of the logits the op avoids (at least
 * 1 MiB, at most 256 MiB), so the fused step's peak stays near a tenth of
 * the naive step's; the plan never exceeds it. */
Test(linear_logprob, default_budget_is_an_eighth_of_the_logits) {
    const int64_t shapes[][2] = {{4096, 32000}, {512, 32000}, {8192, 128256}, {4, 10}, {0, 7},
                                 {65536, 256000}};
    const tg_dtype dts[] = {TG_F32, TG_F64, TG_BF16};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (size_t t = 0; t < 3; t++) {
            const int64_t N = shapes[i][0], V = shapes[i][1];
            const size_t es = dts[t] == TG_F64 ? 8 : 4;
            double eighth = (double)N * (double)V * (double)es / 8;
            if (eighth > (double)TG_LINEAR_LOGPROB_WORKSPACE)
                eighth = (double)TG_LINEAR_LOGPROB_WORKSPACE;
            if (eighth < (double)TG_LINEAR_LOGPROB_WORKSPACE_MIN)
                eighth = (double)TG_LINEAR_LOGPROB_WORKSPACE_MIN;
            tg_linear_logprob_plan p;
            cr_assert_eq(tg_linear_logprob_plan_for(N, 1024, V, dts[t], true, NULL, &p), TG_OK,
                         "%s", tg_last_error());
            cr_assert((double)p.forward_workspace <= eighth &&
                          (double)p.backward_workspace <= eighth,
                      "%lld x %lld %s: workspace %zu / %zu over %.0f", (long long)N,
                      (long long)V, tg_dtype_name(dts[t]), p.forward_workspace,
                      p.backward_workspace, eighth);
        }
    /* 4096 x 32000 f32: the logits are 500 MiB, the workspace at most 62.5 MiB */
    tg_linear_logprob_plan p;
    cr_assert_eq(tg_linear_logprob_plan_for(4096, 1024, 32000, TG_F32, false, NULL, &p), TG_OK);
    cr_assert(p.backward_workspace <= (size_t)4096 * 32000 * 4 / 8 && p.n_blocks == 1,
              "%zu bytes, %lld blocks", p.backward_workspace, (long long)p.n_blocks);
}

/* ---- allocation failures ------------------------------------------------------------ */

Test(linear_logprob, allocation_failure_sweep) {
    /* every allocation of forward and backward in turn fails: a clean error,
     * nothing leaked (the fixture checks at the end), then a clean run works;
     * one block and several, f64 and bf16 (its conversion buffers) */
    for (int variant = 0; variant < 4; variant++) {
        const int multi = variant & 1;
        const tg_dtype dt = variant & 2 ? TG_BF16 : TG_F64;
        uint64_t k;
        for (k = 1;; k++) {
            int t = tg_scope_begin();
            tg_tensor *h = tg_to_dtype(tg_randn(TG_F64, 2, (int64_t[]){6, 3}, 1, 0.0, 1.0), dt);
            tg_tensor *w = tg_to_dtype(tg_randn(TG_F64, 2, (int64_t[]){7, 3}, 2, 0.0, 1.0), dt);
            tg_tensor *b = tg_to_dtype(tg_randn(TG_F64, 1, (int64_t[]){7}, 3, 0.0, 1.0), dt);
            tg_tensor *y = tgt_targets(6, 7, 4);
            tg_set_requires_grad(h, true);
            tg_set_requires_grad(w, true);
            tg_set_requires_grad(b, true);
            tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
            o.chunk_rows = 2;
            o.vocab_block = multi ? 3 : 0;
            tg_fault_inject(k, false);
            tg_tensor *lp = NULL, *H = NULL, *L = NULL;
            tg_status st = tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &L);
            if (st == TG_OK) {
                tg_tensor *loss = tg_add(tg_add(tg_sum(lp), tg_sum(H)), tg_sum(L));
                st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
            }
            uint64_t fired = tg_fault_inject(0, false);
            cr_assert(st == TG_OK || st == TG_ERR_NOMEM, "k %llu: %s", (unsigned long long)k,
                      tg_last_error());
            tg_scope_end(t);
            tg_clear_error();
            if (!fired) {
                cr_assert_eq(st, TG_OK);
                break;
            }
        }
        cr_assert(k > 50, "only %llu allocations: the sweep reached nothing",
                  (unsigned long long)k);
        cr_assert_eq(tg_live().tensors, 0);
    }
}

Test(linear_logprob, a_block_all_minus_inf_is_an_empty_part) {
    /* a bias of -inf on the last 17 of 37 vocabulary entries (padding that a
     * model masks): with blocks of 8, two blocks are -inf for every row; the
     * results must not depend on the block size, and a row that is -inf
     * everywhere is still refused */
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){6, 4}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){37, 4}, 2, 0.0, 1.0);
    tg_tensor *b = tg_randn(TG_F64, 1, (int64_t[]){37}, 3, 0.0, 1.0);
    for (int v = 20; v < 37; v++) ((double *)tg_data(b))[v] = -INFINITY;
    tg_tensor *y = tg_from_data(TG_I64, 1, (int64_t[]){6}, (int64_t[]){1, 5, 19, 0, -100, 7});
    tg_set_requires_grad(w, true);
    tg_tensor *lp[2], *H[2], *gw[2];
    for (int k = 0; k < 2; k++) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.vocab_block = k ? 8 : 0;
        cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp[k], &H[k], NULL), TG_OK,
                     "block %d: %s", k ? 8 : 0, tg_last_error());
        cr_assert_eq(tg_backward(tg_add(tg_sum(lp[k]), tg_sum(H[k])), NULL, false), TG_OK);
        gw[k] = tg_clone(tg_grad(w));
        tg_zero_grad(w);
    }
    cr_assert(tgt_max_rel(lp[1], lp[0]) < 1e-13 && tgt_max_rel(H[1], H[0]) < 1e-13, "%g %g",
              tgt_max_rel(lp[1], lp[0]), tgt_max_rel(H[1], H[0]));
    cr_assert(tgt_max_rel(gw[1], gw[0]) < 1e-13, "%g", tgt_max_rel(gw[1], gw[0]));
    for (int v = 0; v < 37; v++) ((double *)tg_data(b))[v] = -INFINITY;
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.vocab_block = 8;
    tg_tensor *l2, *H2;
    tg_clear_error();
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &l2, &H2, NULL), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "row 0", "every logit is -inf", NULL);
}

Test(linear_logprob, default_workspace_per_device) {
    /* 0 stands for the device's budget: 256 MiB on the CPU (and on CUDA
     * without a device), a sixteenth of the free memory within [256 MiB,
     * 2 GiB] on a GPU */
    cr_assert_eq(tg_linear_logprob_opts_default().workspace_bytes, 0);
    cr_assert_eq(tg_linear_logprob_default_workspace(TG_CPU), TG_LINEAR_LOGPROB_WORKSPACE);
    const size_t g = tg_linear_logprob_default_workspace(TG_CUDA);
    if (tg_cuda_device_count() == 0) cr_assert_eq(g, TG_LINEAR_LOGPROB_WORKSPACE);
    cr_assert(g >= TG_LINEAR_LOGPROB_WORKSPACE && g <= TG_LINEAR_LOGPROB_WORKSPACE_CUDA_MAX);
    for (int dev = 0; dev < 2; dev++) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.device = (tg_device)dev;
        tg_linear_logprob_plan p0, p1;
        cr_assert_eq(tg_linear_logprob_plan_for(8192, 4096, 128256, TG_BF16, false, &o, &p0), TG_OK);
        o.workspace_bytes = tg_linear_logprob_default_workspace(o.device);
        cr_assert_eq(tg_linear_logprob_plan_for(8192, 4096, 128256, TG_BF16, false, &o, &p1), TG_OK);
        cr_assert_eq(p0.chunk_rows, p1.chunk_rows);
        cr_assert_eq(p0.vocab_block, p1.vocab_block);
        cr_assert_eq(p0.forward_workspace, p1.forward_workspace);
        cr_assert_leq(p0.forward_workspace, o.workspace_bytes);
    }
    cr_assert_eq(tg_last_status(), TG_OK, "nothing failed: %s", tg_last_error());
}
