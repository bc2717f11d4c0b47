/* tests/test_linear_loss.c - tg_linear_loss, the loss known in forward:
 * against tg_linear_logprob_entropy followed by the same loss on the whole
 * batch (f64, 1e-12, values and gradients) for every chunk and block size,
 * ignored rows, leading dims, temperature, bias; sequences kept whole; the
 * GEMM work (three of 2 N d V, four with vocabulary blocks); memory; the
 * graph rules (version check, a second backward, retain_graph, the upstream
 * gradient, no grad); every refusal of a callback, nothing leaked; bad
 * inputs; an allocation-failure sweep. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "tg_test_util.h"

TestSuite(linear_loss, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

/* call fails with status st and a message holding each string (NULL-ended) */
#define EXPECT_ERR(call, st, ...)                                                             \
    do {                                                                                     \
        tg_clear_error();                                                                    \
        tg_status got_ = (call);                                                             \
        cr_assert_eq(got_, st, "got %s: %s", tg_status_name(got_), tg_last_error());          \
        tgt_assert_error(st, __VA_ARGS__);                                                   \
    } while (0)

/* ---- the loss: PPO-like, per token, with per-token constants ------------------------ */

/* Per-token constants (N) of the whole batch; the callback slices them. */
typedef struct consts {
    tg_tensor *old, *ref, *adv, *weight; /* (N) each; weight = mask / kept */
    double ent_coef, kl_coef, z_coef;
} consts;

/* sum over the rows of weight * (pg + kl_coef kl - ent_coef H + z_coef lse^2):
 * the clipped surrogate, the k3 KL to the reference, the entropy bonus, the
 * z-loss. Inside a scope; returns a kept reference. */
static tg_tensor *ppo_terms(tg_tensor *lp, tg_tensor *H, tg_tensor *lse, tg_tensor *old,
                            tg_tensor *ref, tg_tensor *adv, tg_tensor *weight, const consts *k) {
    int sc = tg_scope_begin();
    tg_tensor *ratio = tg_exp(tg_sub(lp, old));
    tg_tensor *nadv = tg_neg(adv);
    tg_tensor *pg = tg_maximum(tg_mul(nadv, ratio), tg_mul(nadv, tg_clamp(ratio, 0.8, 1.2)));
    tg_tensor *d = tg_sub(ref, lp);
    tg_tensor *kl = tg_sub(tg_add_scalar(tg_exp(d), -1.0), d);
    tg_tensor *t = tg_add(pg, tg_scale(kl, k->kl_coef));
    t = tg_sub(t, tg_scale(H, k->ent_coef));
    t = tg_add(t, tg_scale(tg_square(lse), k->z_coef));
    tg_tensor *loss = tg_sum(tg_mul(t, weight));
    tg_tensor *kept = loss ? tg_scope_keep(loss) : NULL;
    tg_scope_end(sc);
    return kept;
}

static tg_status ppo_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    const consts *k = user;
    const int64_t a = ch->row_start, n = ch->row_end - ch->row_start;
    tg_tensor *old = tg_narrow(k->old, 0, a, n), *ref = tg_narrow(k->ref, 0, a, n);
    tg_tensor *adv = tg_narrow(k->adv, 0, a, n), *w = tg_narrow(k->weight, 0, a, n);
    /* the callback's scope releases the slices */
    *loss = ppo_terms(ch->logprob, ch->entropy, ch->lse, old, ref, adv, w, k);
    return *loss ? TG_OK : tg_last_status();
}

/* ---- the case ------------------------------------------------------------------- */

typedef struct lcase {
    tg_dtype dt;
    int64_t B, T, d, V;      /* hidden (B, T, d); B = 0: (T, d) */
    int64_t chunk, vblock;
    bool bias, ignore_some;
    double temp;
} lcase;

typedef struct lres {
    double loss;
    tg_tensor *lp, *H, *gh, *gw, *gb;
} lres;

static int64_t rows_of(const lcase *c) { return (c->B ? c->B : 1) * c->T; }

static void make_inputs(const lcase *c, tg_tensor **h, tg_tensor **w, tg_tensor **b,
                        tg_tensor **y, consts *k) {
    const int64_t N = rows_of(c);
    *h = tg_to_dtype(c->B ? tg_randn(TG_F64, 3, (int64_t[]){c->B, c->T, c->d}, 11, 0.0, 1.0)
                          : tg_randn(TG_F64, 2, (int64_t[]){c->T, c->d}, 11, 0.0, 1.0),
                     c->dt);
    *w = tg_to_dtype(tg_randn(TG_F64, 2, (int64_t[]){c->V, c->d}, 12, 0.0, 1.0), c->dt);
    *b = c->bias ? tg_to_dtype(tg_randn(TG_F64, 1, (int64_t[]){c->V}, 13, 0.0, 1.0), c->dt)
                 : NULL;
    tg_tensor *yf = c->ignore_some ? tgt_targets(N, c->V, 14)
                                   : tg_randint(1, (int64_t[]){N}, 14, 0, c->V);
    int64_t *yy = tg_data(yf);
    if (c->ignore_some && N > 1) yy[0] = yy[1] = -100; /* a run at the start too */
    *y = c->B ? tg_reshape(yf, TG_SHAPE(c->B, c->T)) : yf;
    const tg_dtype cdt = c->dt == TG_BF16 ? TG_F32 : c->dt;
    k->old = tg_randn(cdt, 1, &N, 15, -3.0, 0.5);
    k->ref = tg_randn(cdt, 1, &N, 16, -3.0, 0.5);
    k->adv = tg_randn(cdt, 1, &N, 17, 0.0, 1.0);
    k->weight = tg_zeros(cdt, 1, &N);
    int64_t kept = 0;
    for (int64_t i = 0; i < N; i++) kept += yy[i] != -100;
    for (int64_t i = 0; i < N; i++) {
        const double v = yy[i] != -100 ? 1.0 / (double)kept : 0.0;
        if (cdt == TG_F32) ((float *)tg_data(k->weight))[i] = (float)v;
        else ((double *)tg_data(k->weight))[i] = v;
    }
    k->ent_coef = 0.01, k->kl_coef = 0.05, k->z_coef = 1e-3;
    tg_set_requires_grad(*h, true);
    tg_set_requires_grad(*w, true);
    if (*b) tg_set_requires_grad(*b, true);
}

static void grads_of(lres *r, tg_tensor *h, tg_tensor *w, tg_tensor *b) {
    r->gh = tg_grad(h);
    r->gw = tg_grad(w);
    r->gb = b ? tg_grad(b) : NULL;
}

/* The loss entry. */
static lres run_entry(const lcase *c) {
    tg_tensor *h, *w, *b, *y;
    consts k;
    make_inputs(c, &h, &w, &b, &y, &k);
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.temperature = c->temp;
    o.chunk_rows = c->chunk;
    o.vocab_block = c->vblock;
    lres r = {0};
    tg_tensor *loss;
    cr_assert_eq(tg_linear_loss(h, w, b, y, ppo_chunk, &k, &o, &loss, &r.lp, &r.H), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_ndim(loss), 0);
    cr_assert_str_eq(tg_grad_fn_name(loss), "LinearLossBackward");
    cr_assert(!tg_requires_grad(r.lp) && !tg_requires_grad(r.H), "logprob and entropy are for "
              "logging: no graph");
    cr_assert_eq(tg_item(loss, &r.loss), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    grads_of(&r, h, w, b);
    return r;
}

/* The fused op, then the same loss on the whole batch. */
static lres run_reference(const lcase *c) {
    tg_tensor *h, *w, *b, *y;
    consts k;
    make_inputs(c, &h, &w, &b, &y, &k);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.temperature = c->temp;
    const int64_t N = rows_of(c);
    tg_tensor *lp, *H, *lse;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, &lse), TG_OK, "%s",
                 tg_last_error());
    tg_tensor *loss = ppo_terms(tg_reshape(lp, TG_SHAPE(N)), tg_reshape(H, TG_SHAPE(N)),
                                tg_reshape(lse, TG_SHAPE(N)), k.old, k.ref, k.adv, k.weight, &k);
    lres r = {0};
    r.lp = tg_detach(lp);
    r.H = tg_detach(H);
    cr_assert_eq(tg_item(loss, &r.loss), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    grads_of(&r, h, w, b);
    return r;
}


static void check_case(const lcase *c, double tol) {
    lres f = run_entry(c), m = run_reference(c);
    cr_assert(fabs(f.loss - m.loss) <= tol * fmax(1.0, fabs(m.loss)),
              "loss %.17g, reference %.17g (chunk %lld block %lld)", f.loss, m.loss,
              (long long)c->chunk, (long long)c->vblock);
    const char *what[5] = {"logprob", "entropy", "d hidden", "d weight", "d bias"};
    tg_tensor *fs[5] = {f.lp, f.H, f.gh, f.gw, f.gb}, *ms[5] = {m.lp, m.H, m.gh, m.gw, m.gb};
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(fs[k] == NULL, ms[k] == NULL, "%s present in one path only", what[k]);
        if (!fs[k]) continue;
        cr_assert_eq(tg_ndim(fs[k]), tg_ndim(ms[k]), "%s: rank", what[k]);
        const double e = tgt_max_rel(fs[k], ms[k]);
        cr_assert(e <= tol, "%s: relative difference %.3g > %.3g (N %lld d %lld V %lld chunk "
                  "%lld block %lld %s)", what[k], e, tol, (long long)rows_of(c),
                  (long long)c->d, (long long)c->V, (long long)c->chunk, (long long)c->vblock,
                  tg_dtype_name(c->dt));
    }
}

static lcase base(tg_dtype dt) {
    lcase c = {dt, 0, 13, 7, 37, 0, 0, true, true, 0.7};
    return c;
}

/* ---- equal to the fused op followed by the loss -------------------------------------- */

Test(linear_loss, f64_every_chunk_and_block_size) {
    const int64_t chunks[] = {0, 1, 2, 5, 13, 100}, blocks[] = {0, 3, 36, 37};
    for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++)
        for (size_t j = 0; j < sizeof blocks / sizeof *blocks; j++)
            for (int bias = 0; bias < 2; bias++) {
                int t = tg_scope_begin();
                lcase c = base(TG_F64);
                c.chunk = chunks[i];
                c.vblock = blocks[j];
                c.bias = bias;
                check_case(&c, 1e-12);
                cr_assert_eq(tg_scope_end(t), TG_OK);
            }
}

Test(linear_loss, f64_leading_dims_no_ignored_rows_temperature_one) {
    for (int v = 0; v < 4; v++) {
        int t = tg_scope_begin();
        lcase c = base(TG_F64);
        c.B = 3, c.T = 5;
        c.ignore_some = v & 1;
        c.temp = v & 2 ? 1.0 : 1.3;
        c.chunk = 4;
        check_case(&c, 1e-12);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(linear_loss, f32_and_bf16_within_their_accuracy) {
    lcase c = base(TG_F32);
    c.chunk = 5;
    check_case(&c, 1e-5);
    c = base(TG_BF16);
    c.chunk = 5;
    check_case(&c, 1e-2); /* the same bf16 roundings on both paths, summed in other orders */
}

/* ---- the GEMM work -------------------------------------------------------------- */

Test(linear_loss, three_gemms_with_one_block_four_with_several) {
    /* no bias (its gradient is a GEMV of its own): with the whole vocabulary in
     * one block the loss entry asks 3 N d V multiply-adds where the fused op
     * followed by the loss asks 4; with vocabulary blocks both recompute */
    const int64_t N = 24, d = 8, V = 50;
    for (int multi = 0; multi < 2; multi++) {
        int t = tg_scope_begin();
        lcase c = {TG_F64, 0, N, d, V, 5, multi ? 16 : 0, false, false, 1.0};
        tg_tensor *h, *w, *b, *y, *loss, *lp, *H, *lse;
        consts k;
        make_inputs(&c, &h, &w, &b, &y, &k);
        tg_linear_loss_opts o = tg_linear_loss_opts_default();
        o.chunk_rows = 5;
        o.vocab_block = c.vblock;
        uint64_t m0 = tg__k_matmul_macs();
        cr_assert_eq(tg_linear_loss(h, w, NULL, y, ppo_chunk, &k, &o, &loss, NULL, NULL), TG_OK,
                     "%s", tg_last_error());
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
        const uint64_t entry = tg__k_matmul_macs() - m0, one = (uint64_t)(N * d * V);
        cr_assert_eq(entry, (multi ? 4 : 3) * one, "the loss entry asked %llu multiply-adds, "
                     "%d N d V is %llu", (unsigned long long)entry, multi ? 4 : 3,
                     (unsigned long long)((multi ? 4 : 3) * one));
        tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
        lo.chunk_rows = 5;
        lo.vocab_block = c.vblock;
        m0 = tg__k_matmul_macs();
        cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, &lo, &lp, &H, &lse), TG_OK);
        loss = ppo_terms(lp, H, lse, k.old, k.ref, k.adv, k.weight, &k);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
        cr_assert_eq(tg__k_matmul_macs() - m0, 4 * one);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

/* ---- sequences kept whole ------------------------------------------------------- */

typedef struct seqs {
    const int64_t *lens;
    int64_t n;
    tg_tensor *old, *adv; /* (N), (n) */
} seqs;

/* GSPO's sequence-level ratio: s = exp(mean over the sequence of (lp -
 * old)), loss = -sum over sequences of min(s A, clamp(s, 0.8, 1.2) A) / n,
 * over the sequences of rows [a, b) (whole ones). */
static tg_tensor *gspo(tg_tensor *lp, int64_t a, int64_t b, const seqs *q) {
    int sc = tg_scope_begin();
    tg_tensor *loss = tg_zeros(tg_get_dtype(lp), 0, NULL);
    int64_t at = 0;
    for (int64_t i = 0; i < q->n; at += q->lens[i], i++) {
        if (at < a || at >= b || q->lens[i] == 0) continue;
        cr_assert(at + q->lens[i] <= b, "sequence %lld cut by the chunk [%lld, %lld)",
                  (long long)i, (long long)a, (long long)b);
        tg_tensor *d = tg_sub(tg_narrow(lp, 0, at - a, q->lens[i]),
                              tg_narrow(q->old, 0, at, q->lens[i]));
        tg_tensor *s = tg_exp(tg_mean(d));
        tg_tensor *A = tg_narrow(q->adv, 0, i, 1);
        tg_tensor *term = tg_minimum(tg_mul(s, A), tg_mul(tg_clamp(s, 0.8, 1.2), A));
        loss = tg_sub(loss, tg_scale(tg_sum(term), 1.0 / (double)q->n));
    }
    tg_tensor *kept = loss ? tg_scope_keep(loss) : NULL;
    tg_scope_end(sc);
    return kept;
}

static tg_status gspo_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    *loss = gspo(ch->logprob, ch->row_start, ch->row_end, user);
    return *loss ? TG_OK : tg_last_status();
}

Test(linear_loss, sequences_are_kept_whole) {
    const int64_t lens[] = {3, 5, 0, 4, 1}, N = 13, d = 6, V = 20;
    for (int64_t chunk = 1; chunk <= 14; chunk += 3) {
        int t = tg_scope_begin();
        tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){N, d}, 1, 0.0, 1.0);
        tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){V, d}, 2, 0.0, 1.0);
        tg_tensor *y = tg_randint(1, (int64_t[]){N}, 3, 0, V);
        tg_set_requires_grad(h, true);
        tg_set_requires_grad(w, true);
        seqs q = {lens, 5, tg_randn(TG_F64, 1, &N, 4, -3.0, 0.3),
                  tg_randn(TG_F64, 1, (int64_t[]){5}, 5, 0.0, 1.0)};
        tg_linear_loss_opts o = tg_linear_loss_opts_default();
        o.chunk_rows = chunk; /* 1: every sequence is a chunk of its own, grown to hold it */
        o.seq_lens = lens;
        o.n_seqs = 5;
        tg_tensor *loss;
        cr_assert_eq(tg_linear_loss(h, w, NULL, y, gspo_chunk, &q, &o, &loss, NULL, NULL), TG_OK,
                     "%s", tg_last_error());
        double v, ref;
        cr_assert_eq(tg_item(loss, &v), TG_OK);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
        tg_tensor *gh = tg_grad(h), *gw = tg_grad(w);
        tg_zero_grad(h);
        tg_zero_grad(w);
        tg_tensor *lp, *H;
        cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, NULL, &lp, &H, NULL), TG_OK);
        tg_tensor *rl = gspo(lp, 0, N, &q);
        cr_assert_eq(tg_item(rl, &ref), TG_OK);
        cr_assert_eq(tg_backward(rl, NULL, false), TG_OK);
        cr_assert(fabs(v - ref) <= 1e-12 * fmax(1, fabs(ref)), "chunk %lld: %.17g vs %.17g",
                  (long long)chunk, v, ref);
        cr_assert(tgt_max_rel(gh, tg_grad(h)) <= 1e-12);
        cr_assert(tgt_max_rel(gw, tg_grad(w)) <= 1e-12);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

/* ---- the chunks the callback sees --------------------------------------------------- */

typedef struct seen {
    int64_t calls, next_row, kept_rows;
} seen;

static tg_status watch_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    seen *s = user;
    cr_assert_eq(ch->index, s->calls, "chunks in order");
    cr_assert_eq(ch->row_start, s->next_row, "chunks follow each other");
    cr_assert(ch->row_end > ch->row_start);
    const int64_t n = ch->row_end - ch->row_start;
    cr_assert_eq(tg_numel(ch->logprob), n);
    cr_assert_eq(tg_numel(ch->entropy), n);
    cr_assert_eq(tg_numel(ch->lse), n);
    cr_assert(tg_requires_grad(ch->logprob) && tg_is_leaf(ch->logprob));
    for (int64_t i = 0; i < n; i++) {
        if (ch->targets[i] != -100) {
            s->kept_rows++;
            continue;
        }
        cr_assert_eq(tgt_at(ch->logprob, i), 0.0, "an ignored row's statistics are 0");
        cr_assert_eq(tgt_at(ch->lse, i), 0.0);
    }
    s->calls++;
    s->next_row = ch->row_end;
    *loss = tg_sum(ch->logprob);
    return *loss ? TG_OK : tg_last_status();
}

Test(linear_loss, chunks_cover_every_row_in_order) {
    int t = tg_scope_begin();
    const int64_t N = 40, d = 4, V = 9;
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){N, d}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){V, d}, 2, 0.0, 1.0);
    tg_tensor *y = tgt_targets(N, V, 3);
    int64_t kept = 0;
    for (int64_t i = 0; i < N; i++) kept += ((int64_t *)tg_data(y))[i] != -100;
    tg_set_requires_grad(w, true);
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.chunk_rows = 6;
    seen s = {0, 0, 0};
    tg_tensor *loss;
    cr_assert_eq(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL), TG_OK,
                 "%s", tg_last_error());
    cr_assert_eq(s.next_row, N);
    cr_assert_eq(s.kept_rows, kept);
    cr_assert_eq(s.calls, (kept + 5) / 6, "%lld chunks of at most 6 kept rows",
                 (long long)s.calls);
    cr_assert_eq(tg_scope_end(t), TG_OK);
}

/* callback_scope off: the callback owns what it makes (as a binding's
 * objects do) and gives its loss away; it may keep a tensor past the call */
typedef struct own {
    tg_tensor *kept;
    bool scoped; /* callback_scope on: the scope releases e */
} own;

static tg_status owning_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    own *u = user;
    tg_tensor *e = tg_exp(ch->logprob);
    *loss = tg_sum(e);
    tg_clear_error();
    if (!u->scoped) {
        tg_release(e); /* refused (an error) if e belonged to a scope */
        cr_assert_eq(tg_last_status(), TG_OK, "%s", tg_last_error());
    }
    if (!u->kept) u->kept = tg_mul(ch->entropy, ch->lse); /* outlives the call */
    return *loss ? TG_OK : tg_last_status();
}

Test(linear_loss, without_a_scope_the_callback_owns_its_tensors) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){9, 3}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){9}, 3, 0, 5);
    tg_set_requires_grad(w, true);
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.chunk_rows = 4;
    o.callback_scope = false;
    own u = {NULL, false};
    tg_tensor *loss, *ref;
    cr_assert_eq(tg_linear_loss(h, w, NULL, y, owning_chunk, &u, &o, &loss, NULL, NULL), TG_OK,
                 "%s", tg_last_error());
    cr_assert_not_null(u.kept);
    cr_assert_eq(tg_numel(u.kept), 4, "the kept tensor is still valid");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(w);
    tg_zero_grad(w);
    u.scoped = true;
    cr_assert_eq(tg_linear_loss(h, w, NULL, y, owning_chunk, &u, NULL, &ref, NULL, NULL), TG_OK);
    cr_assert_eq(tg_backward(ref, NULL, false), TG_OK);
    cr_assert(tgt_max_rel(g, tg_grad(w)) <= 1e-15, "the same gradient with and without the scope");
    tg_release(u.kept); /* the fixture's teardown finds nothing else of the callback's */
}

/* Callbacks that misbehave in ways the entry survives or refuses:
 * 0, 1: a scope left open (the loss made inside it, or before it);
 * 2: its own backward on its loss (retain_graph), before the entry's;
 * 3: an in-place edit of the weight during the call. */
typedef struct odd {
    int kind;
    tg_tensor *w;
} odd;

static tg_status odd_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    odd *u = user;
    switch (u->kind) {
    case 0:
        tg_scope_begin();
        *loss = tg_sum(tg_exp(ch->logprob));
        break;
    case 1:
        *loss = tg_sum(tg_exp(ch->logprob));
        tg_scope_begin();
        tg_exp(ch->lse);
        break;
    case 2:
        *loss = tg_sum(tg_exp(ch->logprob));
        if (tg_backward(*loss, NULL, true) != TG_OK) return tg_last_status();
        break;
    default:
        *loss = tg_sum(tg_exp(ch->logprob));
        if (ch->index == 1) TG_NO_GRAD { tg_scale_(u->w, 2.0); }
    }
    return *loss ? TG_OK : tg_last_status();
}

static tg_status plain_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    (void)user;
    *loss = tg_sum(tg_exp(ch->logprob));
    return *loss ? TG_OK : tg_last_status();
}

Test(linear_loss, odd_callbacks_survived_or_refused) {
    for (int kind = 0; kind < 5; kind++) {
        int t = tg_scope_begin();
        tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){9, 3}, 1, 0.0, 1.0);
        tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
        tg_tensor *y = tg_randint(1, (int64_t[]){9}, 3, 0, 5);
        tg_set_requires_grad(w, true);
        tg_linear_loss_opts o = tg_linear_loss_opts_default();
        o.chunk_rows = 4;
        o.callback_scope = kind < 4; /* 4: kind 0 without the entry's scope */
        odd u = {kind < 4 ? kind : 0, w};
        tg_tensor *loss = NULL, *ref = NULL;
        const int depth = tg_scope_depth();
        tg_status st = tg_linear_loss(h, w, NULL, y, odd_chunk, &u, &o, &loss, NULL, NULL);
        cr_assert_eq(tg_scope_depth(), depth, "kind %d: the callback's scopes are closed", kind);
        if (kind == 3) {
            cr_assert_eq(st, TG_ERR_INPLACE);
            tgt_assert_error(TG_ERR_INPLACE, "tg_linear_loss: weight was modified in place",
                             "scale_", "test_linear_loss.c", NULL);
            cr_assert_null(loss);
            cr_assert_null(tg_grad(w));
            cr_assert_eq(tg_scope_end(t), TG_OK);
            continue;
        }
        cr_assert_eq(st, TG_OK, "kind %d: %s", kind, tg_last_error());
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
        tg_tensor *g = tg_grad(w);
        tg_zero_grad(w);
        o.callback_scope = true;
        cr_assert_eq(tg_linear_loss(h, w, NULL, y, plain_chunk, NULL, &o, &ref, NULL, NULL), TG_OK);
        cr_assert_eq(tg_backward(ref, NULL, false), TG_OK);
        cr_assert(tgt_max_rel(g, tg_grad(w)) <= 1e-15, "kind %d: the gradient", kind);
        cr_assert_eq(tgt_at(loss, 0), tgt_at(ref, 0));
        cr_assert_eq(tg_scope_end(t), TG_OK, "kind %d: %s", kind, tg_last_error());
    }
}

/* ---- graph rules ------------------------------------------------------------------- */

Test(linear_loss, graph_rules) {
    lcase c = base(TG_F64);
    c.chunk = 4;
    tg_tensor *h, *w, *b, *y, *loss;
    consts k;
    make_inputs(&c, &h, &w, &b, &y, &k);
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.chunk_rows = 4;
    o.temperature = c.temp;
    /* retain_graph twice: twice the gradient; then the upstream gradient scales */
    cr_assert_eq(tg_linear_loss(h, w, b, y, ppo_chunk, &k, &o, &loss, NULL, NULL), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, true), TG_OK);
    tg_tensor *g1 = tg_clone(tg_grad(w));
    cr_assert_eq(tg_backward(tg_scale(loss, 2.5), NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *want = tg_scale(g1, 3.5);
    cr_assert(tgt_max_rel(tg_grad(w), want) <= 1e-15);
    /* a second backward without retain_graph: refused, as PyTorch */
    EXPECT_ERR(tg_backward(loss, NULL, false), TG_ERR_FREED, "LinearLossBackward", NULL);
    /* an in-place edit of the weight between forward and backward: the version
     * error naming the op that made it */
    tg_zero_grad(w);
    cr_assert_eq(tg_linear_loss(h, w, b, y, ppo_chunk, &k, &o, &loss, NULL, NULL), TG_OK);
    TG_NO_GRAD { cr_assert_eq(tg_scale_(w, 0.5), TG_OK, "%s", tg_last_error()); }
    EXPECT_ERR(tg_backward(loss, NULL, false), TG_ERR_INPLACE, "LinearLossBackward",
                     "tg_scale_", NULL);
    cr_assert_null(tg_grad(w), "no gradient from a failed backward");
    /* no grad: no graph, nothing saved, the same value */
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    tg_tensor *l2 = NULL;
    TG_NO_GRAD {
        cr_assert_eq(tg_linear_loss(h, w, b, y, ppo_chunk, &k, &o, &l2, NULL, NULL), TG_OK);
    }
    tg_mem_get(TG_CPU, &m1);
    cr_assert(!tg_requires_grad(l2));
    cr_assert_eq(m1.saved, m0.saved);
}

Test(linear_loss, only_the_inputs_that_require_grad_get_one) {
    for (int mask = 0; mask < 8; mask++) {
        int t = tg_scope_begin();
        lcase c = base(TG_F64);
        tg_tensor *h, *w, *b, *y, *loss;
        consts k;
        make_inputs(&c, &h, &w, &b, &y, &k);
        tg_set_requires_grad(h, mask & 1);
        tg_set_requires_grad(w, mask & 2);
        tg_set_requires_grad(b, mask & 4);
        cr_assert_eq(tg_linear_loss(h, w, b, y, ppo_chunk, &k, NULL, &loss, NULL, NULL), TG_OK);
        cr_assert_eq(tg_requires_grad(loss), mask != 0);
        if (mask) cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
        cr_assert_eq(tg_grad(h) != NULL, (mask & 1) != 0);
        cr_assert_eq(tg_grad(w) != NULL, (mask & 2) != 0);
        cr_assert_eq(tg_grad(b) != NULL, (mask & 4) != 0);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(linear_loss, empty_batch_and_every_row_ignored) {
    for (int v = 0; v < 2; v++) {
        int t = tg_scope_begin();
        const int64_t N = v ? 6 : 0, d = 3, V = 5;
        tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){N, d}, 1, 0.0, 1.0);
        tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){V, d}, 2, 0.0, 1.0);
        tg_tensor *b = tg_randn(TG_F64, 1, (int64_t[]){V}, 3, 0.0, 1.0);
        tg_tensor *y = tg_full(TG_I64, 1, &N, -100);
        tg_set_requires_grad(h, true);
        tg_set_requires_grad(w, true);
        tg_set_requires_grad(b, true);
        seen s = {0, 0, 0};
        tg_tensor *loss, *lp, *H;
        cr_assert_eq(tg_linear_loss(h, w, b, y, watch_chunk, &s, NULL, &loss, &lp, &H), TG_OK,
                     "%s", tg_last_error());
        cr_assert_eq(s.calls, v ? 1 : 0, "the ignored rows are one chunk; no rows, no call");
        cr_assert_eq(tgt_at(loss, 0), 0.0);
        cr_assert_eq(tg_numel(lp), N);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_numel(tg_grad(h)), N * d);
        cr_assert_eq(tgt_at(tg_amax(tg_abs(tg_grad(w))), 0), 0.0, "zero gradients");
        cr_assert_eq(tgt_at(tg_amax(tg_abs(tg_grad(b))), 0), 0.0);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

/* ---- memory ------------------------------------------------------------------------- */


Test(linear_loss, no_logits_held_and_exact_bytes_after_forward) {
    /* after forward: the loss, logprob, entropy and the gradients made in
     * forward, nothing else; never an (N, V) buffer */
    const int64_t N = 200, d = 16, V = 1000;
    int t = tg_scope_begin();
    tg_tensor *h = tg_randn(TG_F32, 2, (int64_t[]){N, d}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F32, 2, (int64_t[]){V, d}, 2, 0.0, 1.0);
    tg_tensor *b = tg_randn(TG_F32, 1, (int64_t[]){V}, 3, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){N}, 4, 0, V);
    tg_set_requires_grad(h, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    seen s = {0, 0, 0};
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.chunk_rows = 16;
    const size_t before = tgt_cpu_live();
    tg_mem_reset_peak(TG_CPU);
    tg_tensor *loss, *lp, *H;
    cr_assert_eq(tg_linear_loss(h, w, b, y, watch_chunk, &s, &o, &loss, &lp, &H), TG_OK);
    const size_t grads = (size_t)(N * d + V * d + V) * 4;
    cr_assert_eq(tgt_cpu_live() - before, 4 + 2 * N * 4 + grads, "live %zu",
                 tgt_cpu_live() - before);
    cr_assert(tgt_cpu_peak() - before < (size_t)N * V * 4, "an (N, V) buffer was made");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
    /* the gradients moved into .grad, nothing copied: the same bytes */
    cr_assert_eq(tgt_cpu_live() - before, 4 + 2 * N * 4 + grads, "live %zu",
                 tgt_cpu_live() - before);
    cr_assert_eq(tg_scope_end(t), TG_OK);
}

/* ---- refusals ------------------------------------------------------------------------ */

typedef struct bad {
    int kind;
    tg_tensor *param, *kept;
} bad;

static tg_status bad_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    bad *u = user;
    switch (u->kind) {
    case 0: return tg_set_error(TG_ERR_VALUE, "my loss: advantages missing");
    case 1: *loss = NULL; return TG_OK;
    case 2: *loss = tg_mul(ch->logprob, ch->entropy); return TG_OK; /* (n): not a scalar */
    case 3: *loss = tg_sum(tg_mul(ch->logprob, u->param)); return TG_OK;
    case 4:
        if (ch->index == 0) {
            u->kept = tg_retain(ch->logprob);
            *loss = tg_sum(ch->logprob);
        } else {
            *loss = tg_sum(tg_add(tg_sum(ch->logprob), tg_sum(u->kept)));
        }
        return TG_OK;
    case 5: *loss = tg_sum(tg_to_dtype(ch->targets[0] >= 0 ? ch->logprob : ch->lse, TG_I64));
        return TG_OK;
    default:
        if (ch->index == 1) return tg_set_error(TG_ERR_NOMEM, "my loss: out of memory");
        *loss = tg_sum(ch->logprob);
        return TG_OK;
    }
}

Test(linear_loss, callbacks_refused_naming_the_rows_nothing_leaked) {
    const struct {
        tg_status st;
        const char *a, *b;
    } want[7] = {
        {TG_ERR_VALUE, "the loss function failed on rows [0, ", "my loss: advantages missing"},
        {TG_ERR_VALUE, "returned TG_OK but no loss for rows [0, ", NULL},
        {TG_ERR_SHAPE, "the loss of rows [0, ", "must be one element"},
        {TG_ERR_VALUE, "depends on tensor 'policy head'", "not this chunk's"},
        {TG_ERR_VALUE, "the loss of rows [3, ", "depends on tensor 'chunk logprob'"},
        {TG_ERR_DTYPE, "the loss of rows [0, ", "i64"},
        {TG_ERR_NOMEM, "failed on rows [3, ", "my loss: out of memory"},
    };
    for (int kind = 0; kind < 7; kind++) {
        const size_t live0 = tg_live().tensors;
        int t = tg_scope_begin();
        tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){9, 3}, 1, 0.0, 1.0);
        tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
        tg_tensor *y = tg_randint(1, (int64_t[]){9}, 3, 0, 5);
        tg_set_requires_grad(w, true);
        bad u = {kind, tg_randn(TG_F64, 1, (int64_t[]){3}, 4, 0.0, 1.0), NULL};
        tg_set_name(u.param, "policy head");
        tg_set_requires_grad(u.param, true);
        tg_linear_loss_opts o = tg_linear_loss_opts_default();
        o.chunk_rows = 3;
        tg_tensor *loss = (tg_tensor *)&u, *lp = (tg_tensor *)&u;
        EXPECT_ERR(tg_linear_loss(h, w, NULL, y, bad_chunk, &u, &o, &loss, &lp, NULL),
                         want[kind].st, "tg_linear_loss", want[kind].a, want[kind].b, NULL);
        cr_assert_null(loss);
        cr_assert_null(lp);
        cr_assert_null(tg_grad(w), "kind %d: no .grad changed", kind);
        cr_assert_null(tg_grad(u.param), "kind %d: the parameter got nothing", kind);
        tg_release(u.kept);
        cr_assert_eq(tg_scope_end(t), TG_OK);
        cr_assert_eq(tg_live().tensors, live0, "kind %d: leaked", kind);
    }
}

Test(linear_loss, bad_inputs) {
    tg_tensor *h = tg_randn(TG_F64, 2, (int64_t[]){4, 3}, 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, 2, (int64_t[]){5, 3}, 2, 0.0, 1.0);
    tg_tensor *y = tg_randint(1, (int64_t[]){4}, 3, 0, 5);
    seen s = {0, 0, 0};
    tg_tensor *loss;
    EXPECT_ERR(tg_linear_loss(NULL, w, NULL, y, watch_chunk, &s, NULL, &loss, NULL, NULL),
                     TG_ERR_NULL, "tg_linear_loss", "hidden", NULL);
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, NULL, &s, NULL, &loss, NULL, NULL),
                     TG_ERR_NULL, "tg_linear_loss", "loss_fn", NULL);
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, NULL, NULL, NULL, NULL),
                     TG_ERR_NULL, "tg_linear_loss", "loss", NULL);
    EXPECT_ERR(tg_linear_loss(h, tg_transpose(w, 0, 1), NULL, y, watch_chunk, &s, NULL,
                                    &loss, NULL, NULL),
                     TG_ERR_SHAPE, "tg_linear_loss", "weight of shape", NULL);
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.temperature = 0;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", "temperature", NULL);
    const int64_t short_lens[2] = {1, 2}, neg_lens[2] = {5, -1};
    o = tg_linear_loss_opts_default();
    o.seq_lens = short_lens, o.n_seqs = 2;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", "seq_lens sum to 3 but hidden has 4 rows",
                     NULL);
    o.seq_lens = neg_lens;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", "seq_lens[0] is 5", NULL);
    o.n_seqs = -1;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", "n_seqs must be >= 0, got -1", NULL);
    o.n_seqs = 2;
    o.seq_lens = NULL;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, &o, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", "seq_lens is NULL", NULL);
    ((int64_t *)tg_data(y))[2] = 5;
    EXPECT_ERR(tg_linear_loss(h, w, NULL, y, watch_chunk, &s, NULL, &loss, NULL, NULL),
                     TG_ERR_VALUE, "tg_linear_loss", NULL);
    cr_assert_eq(s.calls, 0, "no callback for bad inputs");
}

/* ---- allocation failures ------------------------------------------------------------ */

Test(linear_loss, allocation_failure_sweep) {
    for (int variant = 0; variant < 4; variant++) {
        const int multi = variant & 1;
        const tg_dtype dt = variant & 2 ? TG_BF16 : TG_F64;
        uint64_t k;
        for (k = 1;; k++) {
            int t = tg_scope_begin();
            lcase c = {dt, 0, 6, 3, 7, 2, multi ? 3 : 0, true, true, 1.0};
            tg_tensor *h, *w, *b, *y, *loss = NULL;
            consts cs;
            make_inputs(&c, &h, &w, &b, &y, &cs);
            tg_linear_loss_opts o = tg_linear_loss_opts_default();
            o.chunk_rows = 2;
            o.vocab_block = c.vblock;
            tg_fault_inject(k, false);
            tg_status st = tg_linear_loss(h, w, b, y, ppo_chunk, &cs, &o, &loss, NULL, NULL);
            if (st == TG_OK) st = tg_backward(loss, NULL, false);
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
        cr_assert(k > 50, "only %llu allocations", (unsigned long long)k);
        cr_assert_eq(tg_live().tensors, 0);
    }
}
