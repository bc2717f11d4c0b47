/* tests/mpi/test_mpi.c - the vocab-parallel ops over MPI, run by
 * tests/mpi/run.sh under `mpirun -np 1, 2 and 4`.
 *
 * Every rank makes the same inputs (seeded), keeps its slice of the
 * vocabulary (uneven slices, handed out in reverse rank order so that rank 0
 * does not hold the first one; in the random cases, slices of random sizes
 * in a random rank order), runs the vocab-parallel op and the
 * single-process op on the whole vocabulary, and checks: every output equal
 * within 1e-12 (f64) or the f32 op's own tolerance, the gradients of its
 * slice likewise, the outputs bitwise the same on every rank and from run to
 * run; the bad-input-on-one-rank cases (every rank fails with the same
 * status and a message naming the rank); the memory of a step (its
 * (N, V) part falls as 1/P, exactly); the allocation-failure sweeps (one
 * rank's every allocation failing in turn never leaves the others waiting);
 * no rows and hidden states of size 0, the inputs over NULL.
 * TG_MPI_CASES sets the number of random cases (default 24). `test_mpi kill` is the killed-rank
 * case: rank 1 exits while the others are inside a collective (run.sh bounds
 * it with a timeout).
 *
 * Plain C with MPI (Criterion forks each test, which MPI does not allow):
 * CHECK prints the failure with the rank and counts it; the exit status is
 * 1 if any check failed on this rank. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapegrad.h"

#include "mpi_check.h"

/* The same random numbers on every rank (splitmix64 of a shared state). */
static uint64_t rnd(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd_in(uint64_t *state, int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(rnd(state) % (uint64_t)(hi - lo + 1));
}

/* 0: slices of V / P (+1 for the first V % P ranks) in reverse rank order;
 * otherwise the seed of random slice sizes (at least 1 each) laid out in a
 * random order of the ranks. */
static uint64_t g_split_seed;

/* This rank's slice of a vocabulary of V (V >= P). */
static void slice_of(int64_t V, int rank, int P, int64_t *start, int64_t *len) {
    int64_t size[64], s = 0;
    int order[64];
    uint64_t st = g_split_seed;
    for (int r = 0; r < P; r++) {
        size[r] = g_split_seed ? 1 : V / P + (r < V % P);
        order[r] = P - 1 - r;
    }
    if (g_split_seed) {
        for (int64_t k = P; k < V; k++) size[rnd_in(&st, 0, P - 1)]++;
        for (int r = P - 1; r > 0; r--) { /* Fisher-Yates */
            const int j = (int)rnd_in(&st, 0, r), t = order[r];
            order[r] = order[j];
            order[j] = t;
        }
    }
    *start = *len = 0;
    for (int i = 0; i < P; i++) {
        const int r = order[i];
        if (r == rank) {
            *start = s;
            *len = size[r];
        }
        s += size[r];
    }
}

static double *values(const tg_tensor *t) {
    int64_t n = tg_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (tg_copy_out(t, TG_F64, v, (size_t)(n > 0 ? n : 1) * sizeof *v) != TG_OK) {
        fprintf(stderr, "copy_out: %s\n", tg_last_error());
        exit(2);
    }
    return v;
}

/* max |a - b| / max |b| */
static double rel_err(const tg_tensor *a, const tg_tensor *b) {
    int64_t n = tg_numel(b);
    if (tg_numel(a) != n) return INFINITY;
    double *x = values(a), *y = values(b), scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(y[i]));
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) != isnan(y[i])) worst = INFINITY;
        else if (!isnan(x[i])) worst = fmax(worst, fabs(x[i] - y[i]) / (scale > 0 ? scale : 1));
    }
    free(x);
    free(y);
    return worst;
}

/* Whether t's bytes are the same on every rank. */
static bool same_on_all_ranks(const tg_tensor *t) {
    const int64_t n = tg_numel(t);
    double *v = values(t), *all = malloc((size_t)(n > 0 ? n : 1) * (size_t)g_size * sizeof *all);
    MPI_Allgather(v, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
    bool same = true;
    for (int r = 1; r < g_size; r++)
        same &= memcmp(all, all + (size_t)r * (size_t)n, (size_t)n * sizeof *all) == 0;
    free(v);
    free(all);
    return same;
}

typedef struct lcase {
    tg_dtype dt;
    int64_t N, V;
    double T;
    bool entropy_grad, lse, ignore;
    int64_t ign; /* the ignore_index (0 when unset: then -100) */
} lcase;

/* loss = sum(lp * a) + sum(H * e) (+ sum(lse * l)) for fixed weights */
static tg_tensor *loss_of(const lcase *c, tg_tensor *lp, tg_tensor *H, tg_tensor *L) {
    tg_tensor *loss = tg_sum(tg_mul(lp, tg_randn(c->dt, TG_SHAPE(c->N), 31, 0.5, 1.0)));
    if (c->entropy_grad)
        loss = tg_add(loss, tg_sum(tg_mul(H, tg_randn(c->dt, TG_SHAPE(c->N), 32, 0.0, 1.0))));
    if (c->lse) loss = tg_add(loss, tg_sum(tg_mul(L, tg_randn(c->dt, TG_SHAPE(c->N), 33, 0.0, 1.0))));
    return loss;
}

static void logits_case(tg_comm *comm, const lcase *c) {
    int sc = tg_scope_begin();
    int64_t start, len;
    slice_of(c->V, g_rank, g_size, &start, &len);
    tg_tensor *z = tg_randn(c->dt, TG_SHAPE(c->N, c->V), 7, 0.0, 2.0);
    const int64_t ign = c->ign ? c->ign : -100;
    tg_tensor *y = tg_randint(TG_SHAPE(c->N), 8, 0, c->V);
    if (c->ignore)
        for (int64_t i = 0; i < c->N; i += 3) ((int64_t *)tg_data(y))[i] = ign;
    tg_tensor *zl = tg_contiguous(tg_narrow(z, 1, start, len)); /* this rank's slice, a leaf */
    tg_set_requires_grad(z, true);
    tg_set_requires_grad(zl, true);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = c->T;
    o.entropy_grad = c->entropy_grad;
    o.ignore_index = ign;
    tg_tensor *lp, *H, *L = NULL, *lp1, *H1, *L1 = NULL;
    CHECK(tg_logprob_entropy_lse(z, y, &o, &lp1, &H1, &L1) == TG_OK, "%s", tg_last_error());
    o.comm = comm;
    o.vocab_start = start;
    tg_status st = c->lse ? tg_logprob_entropy_lse(zl, y, &o, &lp, &H, &L)
                          : tg_logprob_entropy(zl, y, &o, &lp, &H);
    CHECK(st == TG_OK, "%s", tg_last_error());
    if (st != TG_OK) {
        tg_scope_end(sc);
        return;
    }
    const double tol = c->dt == TG_F64 ? 1e-12 : 2e-6;
    CHECK(rel_err(lp, lp1) <= tol, "logprob %g (N %lld V %lld)", rel_err(lp, lp1), (long long)c->N,
          (long long)c->V);
    CHECK(rel_err(H, H1) <= tol, "entropy %g", rel_err(H, H1));
    if (c->lse) CHECK(rel_err(L, L1) <= tol, "lse %g", rel_err(L, L1));
    CHECK(same_on_all_ranks(lp) && same_on_all_ranks(H), "outputs differ between ranks");
    /* run to run: the same bits */
    tg_tensor *lp2, *H2;
    CHECK(tg_logprob_entropy(tg_detach(zl), y, &o, &lp2, &H2) == TG_OK, "%s", tg_last_error());
    CHECK(rel_err(lp2, lp) == 0 && rel_err(H2, H) == 0, "not the same bits run to run");
    /* gradients: this rank's slice of the whole op's */
    CHECK(tg_backward(loss_of(c, lp, H, L), NULL, false) == TG_OK, "%s", tg_last_error());
    CHECK(tg_backward(loss_of(c, lp1, H1, L1), NULL, false) == TG_OK, "%s", tg_last_error());
    tg_tensor *g1 = tg_narrow(tg_grad(z), 1, start, len);
    CHECK(rel_err(tg_grad(zl), g1) <= tol * 10, "gradient %g", rel_err(tg_grad(zl), g1));
    tg_scope_end(sc);
}

/* A call where `bad_rank` (or every rank, -1) breaks something; every rank
 * must fail with status want and a message holding need (and, when a rank
 * is named, "rank R"). */
typedef enum { BAD_NULL, BAD_NAN, BAD_ROWS, BAD_TARGET, BAD_OVERLAP, BAD_TEMP } bad_kind;

static void bad_case(tg_comm *comm, bad_kind kind, int bad_rank, tg_status want,
                     const char *need) {
    int sc = tg_scope_begin();
    const int64_t N = 6, V = 23;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    const bool me = bad_rank < 0 || g_rank == bad_rank;
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(kind == BAD_ROWS && me ? N + 1 : N, len), 5 + g_rank,
                            0.0, 1.0);
    tg_tensor *y = tg_randint(TG_SHAPE(kind == BAD_ROWS && me ? N + 1 : N), 9, 0, V);
    if (kind == BAD_NAN && me) ((double *)tg_data(z))[2 * len + len / 2] = NAN;
    if (kind == BAD_TARGET) ((int64_t *)tg_data(y))[4] = V + 3;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = kind == BAD_OVERLAP && me ? start + 1 : start;
    if (kind == BAD_TEMP && me) o.temperature = 0.5;
    tg_tensor *lp = NULL, *H = NULL;
    tg_clear_error();
    tg_status st = tg_logprob_entropy(kind == BAD_NULL && me ? NULL : z, y, &o, &lp, &H);
    CHECK(st == want, "kind %d: status %s, expected %s: %s", (int)kind, tg_status_name(st),
          tg_status_name(want), tg_last_error());
    CHECK(strstr(tg_last_error(), need) != NULL, "kind %d: message lacks '%s': %s", (int)kind,
          need, tg_last_error());
    if (bad_rank >= 0) {
        char r[32];
        snprintf(r, sizeof r, "rank %d", bad_rank);
        CHECK(strstr(tg_last_error(), r) != NULL, "kind %d: message lacks '%s': %s", (int)kind,
              r, tg_last_error());
    }
    /* every rank has the same message */
    char msg[512] = {0}, *all = malloc(512 * (size_t)g_size);
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    MPI_Allgather(msg, 512, MPI_CHAR, all, 512, MPI_CHAR, MPI_COMM_WORLD);
    for (int q = 0; q < g_size; q++)
        CHECK(!strcmp(all + 512 * q, msg), "kind %d: rank %d said '%s'", (int)kind, q,
              all + 512 * q);
    free(all);
    CHECK(lp == NULL && H == NULL, "outputs set on failure");
    tg_clear_error();
    tg_scope_end(sc);
}

/* Logits -inf on the upper half of the vocabulary for some rows (a mask):
 * the ranks holding only that half have rows all -inf on their slice, an
 * empty part; the results are the single-process op's. A row -inf
 * everywhere is refused on every rank. */
static void masked_case(tg_comm *comm) {
    int sc = tg_scope_begin();
    const int64_t N = 5, V = 40;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 21, 0.0, 1.0);
    double *zp = tg_data(z);
    for (int64_t i = 0; i < N; i += 2)
        for (int64_t v = V / 2; v < V; v++) zp[i * V + v] = -INFINITY;
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(N), (int64_t[]){3, 30, 7, 39, 0});
    tg_tensor *lp1, *H1, *lp, *H;
    CHECK(tg_logprob_entropy(z, y, NULL, &lp1, &H1) == TG_OK, "%s", tg_last_error());
    tg_tensor *zl = tg_contiguous(tg_narrow(z, 1, start, len));
    tg_logprob_opts o = tg_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    CHECK(tg_logprob_entropy(zl, y, &o, &lp, &H) == TG_OK, "masked: %s", tg_last_error());
    if (lp) CHECK(rel_err(lp, lp1) <= 1e-12 && rel_err(H, H1) <= 1e-12, "masked: %g %g",
                  rel_err(lp, lp1), rel_err(H, H1));
    for (int64_t v = 0; v < V; v++) zp[1 * V + v] = -INFINITY; /* row 1: nothing left */
    zl = tg_contiguous(tg_narrow(z, 1, start, len));
    tg_clear_error();
    CHECK(tg_logprob_entropy(zl, y, &o, &lp, &H) == TG_ERR_VALUE, "all -inf: %s",
          tg_last_error());
    CHECK(strstr(tg_last_error(), "row 1: every logit is -inf") != NULL, "%s", tg_last_error());
    tg_clear_error();
    tg_scope_end(sc);
}

/* The (N, V) part of a step's peak falls as 1/P: the rest is the same as the
 * single-process op's. */
static void memory_case(tg_comm *comm) {
    const int64_t N = 64, V = 4000;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    size_t peak[2];
    for (int k = 0; k < 2; k++) {
        int sc = tg_scope_begin();
        const int64_t v = k ? len : V;
        tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(N, v), 3, 0.0, 1.0);
        tg_tensor *y = tg_randint(TG_SHAPE(N), 4, 0, V);
        if (!k) /* the single-process op: targets inside its vocabulary */
            for (int64_t i = 0; i < N; i++) ((int64_t *)tg_data(y))[i] %= V;
        tg_set_requires_grad(z, true);
        tg_logprob_opts o = tg_logprob_opts_default();
        if (k) {
            o.comm = comm;
            o.vocab_start = start;
        }
        tg_mem_stats m0, m1;
        tg_mem_get(TG_CPU, &m0);
        tg_mem_reset_peak(TG_CPU);
        tg_tensor *lp, *H;
        CHECK(tg_logprob_entropy(z, y, &o, &lp, &H) == TG_OK, "%s", tg_last_error());
        CHECK(tg_backward(tg_add(tg_sum(lp), tg_sum(H)), NULL, false) == TG_OK, "%s",
              tg_last_error());
        tg_mem_get(TG_CPU, &m1);
        peak[k] = m1.peak_total - m0.live_total - (size_t)(N * v * 4);
        tg_scope_end(sc);
    }
    /* the same but for the slice's own targets, which backward keeps (N x 8) */
    CHECK(peak[1] == peak[0] + (size_t)N * 8, "beyond the logits' gradient (N x V_r x 4 bytes): "
          "%zu bytes with %d ranks, %zu in one process", peak[1], g_size, peak[0]);
}

/* The fused linear op on a slice of the output layer's rows, against the
 * single-process op on all of them. */
typedef struct lin_case {
    tg_dtype dt;
    int64_t N, d, V, chunk, block;
    bool bias, entropy_grad, lse, ignore;
} lin_case;

static void linear_case(tg_comm *comm, const lin_case *c) {
    int sc = tg_scope_begin();
    int64_t start, len;
    slice_of(c->V, g_rank, g_size, &start, &len);
    const tg_dtype gen = c->dt == TG_BF16 ? TG_F32 : c->dt; /* bf16: drawn in f32 */
    tg_tensor *h = tg_to_dtype(tg_randn(gen, TG_SHAPE(c->N, c->d), 11, 0.0, 1.0), c->dt);
    tg_tensor *w = tg_to_dtype(tg_randn(gen, TG_SHAPE(c->V, c->d), 12, 0.0, 0.7), c->dt);
    tg_tensor *b = c->bias ? tg_to_dtype(tg_randn(gen, TG_SHAPE(c->V), 13, 0.0, 1.0), c->dt)
                           : NULL;
    tg_tensor *y = tg_randint(TG_SHAPE(c->N), 14, 0, c->V);
    if (c->ignore)
        for (int64_t i = 1; i < c->N; i += 4) ((int64_t *)tg_data(y))[i] = -100;
    tg_tensor *h2 = tg_clone(h); /* this rank's own leaves */
    tg_tensor *wl = tg_contiguous(tg_narrow(w, 0, start, len));
    tg_tensor *bl = b ? tg_contiguous(tg_narrow(b, 0, start, len)) : NULL;
    tg_tensor *leaves[6] = {h, w, b, h2, wl, bl};
    for (int k = 0; k < 6; k++)
        if (leaves[k]) tg_set_requires_grad(leaves[k], true);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.entropy_grad = c->entropy_grad;
    o.chunk_rows = c->chunk;
    o.vocab_block = c->block;
    tg_tensor *lp1, *H1, *L1 = NULL, *lp, *H, *L = NULL;
    CHECK(tg_linear_logprob_entropy(h, w, b, y, &o, &lp1, &H1, c->lse ? &L1 : NULL) == TG_OK,
          "%s", tg_last_error());
    o.comm = comm;
    o.vocab_start = start;
    tg_status st = tg_linear_logprob_entropy(h2, wl, bl, y, &o, &lp, &H, c->lse ? &L : NULL);
    CHECK(st == TG_OK, "%s", tg_last_error());
    if (st != TG_OK) {
        tg_scope_end(sc);
        return;
    }
    const double tol = c->dt == TG_F64 ? 1e-12 : 2e-5;
    /* bf16 gradients: one unit in the last place of the largest (f32 sums
     * in another order may round to the neighbouring bf16) */
    const double gtol = c->dt == TG_BF16 ? 0x1p-7 : tol * 10;
    CHECK(rel_err(lp, lp1) <= tol, "linear logprob %g", rel_err(lp, lp1));
    CHECK(rel_err(H, H1) <= tol, "linear entropy %g", rel_err(H, H1));
    if (c->lse) CHECK(rel_err(L, L1) <= tol, "linear lse %g", rel_err(L, L1));
    CHECK(same_on_all_ranks(lp) && same_on_all_ranks(H), "linear outputs differ between ranks");
    const tg_dtype odt = c->dt == TG_BF16 ? TG_F32 : c->dt; /* the outputs' dtype */
    CHECK(tg_backward(loss_of(&(lcase){odt, c->N, c->V, 1.0, c->entropy_grad, c->lse, false, 0},
                              lp, H, L), NULL, false) == TG_OK, "%s", tg_last_error());
    CHECK(tg_backward(loss_of(&(lcase){odt, c->N, c->V, 1.0, c->entropy_grad, c->lse, false, 0},
                              lp1, H1, L1), NULL, false) == TG_OK, "%s", tg_last_error());
    CHECK(rel_err(tg_grad(h2), tg_grad(h)) <= gtol, "d hidden %g",
          rel_err(tg_grad(h2), tg_grad(h)));
    CHECK(same_on_all_ranks(tg_grad(h2)), "d hidden differs between ranks");
    tg_tensor *gw = tg_narrow(tg_grad(w), 0, start, len);
    CHECK(rel_err(tg_grad(wl), gw) <= gtol, "d weight %g", rel_err(tg_grad(wl), gw));
    if (b) {
        tg_tensor *gb = tg_narrow(tg_grad(b), 0, start, len);
        CHECK(rel_err(tg_grad(bl), gb) <= gtol, "d bias %g", rel_err(tg_grad(bl), gb));
    }
    tg_scope_end(sc);
}

/* The sum of every element of t, or 0 for a NULL t (no gradient). */
static double total(const tg_tensor *t) {
    if (!t) return 0;
    double *v = values(t), s = 0;
    for (int64_t i = 0; i < tg_numel(t); i++) s += fabs(v[i]);
    free(v);
    return s;
}

/* No rows (shape (2, 0, ...)), the inputs over NULL as NumPy and DLPack hand
 * them over, every input requiring grad: both ops give empty outputs on
 * every rank, backward runs (the linear op's all-reduce of an empty d
 * hidden), the weight and bias slices get zero gradients. Then hidden
 * states of size 0 (the logits are the bias) against the single process. */
static void empty_case(tg_comm *comm) {
    int sc = tg_scope_begin();
    int64_t start, len;
    const int64_t V = 11, d = 3;
    slice_of(V, g_rank, g_size, &start, &len);
    tg_tensor *z = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(2, 0, len), NULL, NULL, NULL, NULL);
    tg_tensor *y = tg_from_blob(TG_CPU, TG_I64, TG_SHAPE(2, 0), NULL, NULL, NULL, NULL);
    CHECK(z && y, "%s", tg_last_error());
    tg_set_requires_grad(z, true);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    o.temperature = 0.7;
    tg_tensor *lp = NULL, *H = NULL, *L = NULL;
    tg_status st = tg_logprob_entropy_lse(z, y, &o, &lp, &H, &L);
    CHECK(st == TG_OK && lp && H && L, "logits op, no rows: %s", tg_last_error());
    if (st == TG_OK) {
        CHECK(tg_ndim(lp) == 2 && tg_numel(lp) == 0 && tg_numel(H) == 0, "shapes");
        st = tg_backward(tg_add(tg_sum(lp), tg_sum(tg_add(H, L))), NULL, false);
        CHECK(st == TG_OK, "logits op, no rows, backward: %s", tg_last_error());
        CHECK(tg_grad(z) && tg_numel(tg_grad(z)) == 0, "a gradient of no elements");
    }
    tg_tensor *h = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(2, 0, d), NULL, NULL, NULL, NULL);
    tg_tensor *wl = tg_randn(TG_F64, TG_SHAPE(len, d), 12, 0.0, 0.7);
    tg_tensor *bl = tg_randn(TG_F64, TG_SHAPE(len), 13, 0.0, 1.0);
    tg_set_requires_grad(h, true);
    tg_set_requires_grad(wl, true);
    tg_set_requires_grad(bl, true);
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.comm = comm;
    lo.vocab_start = start;
    lo.temperature = 0.7;
    st = tg_linear_logprob_entropy(h, wl, bl, y, &lo, &lp, &H, &L);
    CHECK(st == TG_OK && lp && H && L, "linear op, no rows: %s", tg_last_error());
    if (st == TG_OK) {
        CHECK(tg_ndim(lp) == 2 && tg_numel(lp) == 0 && tg_numel(L) == 0, "shapes");
        st = tg_backward(tg_add(tg_sum(lp), tg_sum(tg_add(H, L))), NULL, false);
        CHECK(st == TG_OK, "linear op, no rows, backward: %s", tg_last_error());
        CHECK(tg_grad(wl) && tg_numel(tg_grad(wl)) == len * d && total(tg_grad(wl)) == 0,
              "d weight: zeros of its slice");
        CHECK(tg_grad(bl) && total(tg_grad(bl)) == 0, "d bias: zeros");
        CHECK(tg_grad(h) && tg_numel(tg_grad(h)) == 0, "d hidden of no elements");
    }
    /* hidden states of size 0: the logits are the bias */
    tg_tensor *h0 = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(4, 0), NULL, NULL, NULL, NULL);
    tg_tensor *w0 = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(len, 0), NULL, NULL, NULL, NULL);
    tg_tensor *w1 = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(V, 0), NULL, NULL, NULL, NULL);
    tg_tensor *b1 = tg_randn(TG_F64, TG_SHAPE(V), 13, 0.0, 1.0);
    tg_tensor *b0 = tg_contiguous(tg_narrow(b1, 0, start, len));
    tg_tensor *y4 = tg_randint(TG_SHAPE(4), 14, 0, V);
    tg_set_requires_grad(b0, true);
    tg_set_requires_grad(b1, true);
    tg_tensor *lp1, *H1, *L1;
    lo.comm = NULL;
    CHECK(tg_linear_logprob_entropy(h0, w1, b1, y4, &lo, &lp1, &H1, &L1) == TG_OK, "%s",
          tg_last_error());
    lo.comm = comm;
    st = tg_linear_logprob_entropy(h0, w0, b0, y4, &lo, &lp, &H, &L);
    CHECK(st == TG_OK, "linear op, hidden size 0: %s", tg_last_error());
    if (st == TG_OK) {
        CHECK(rel_err(lp, lp1) <= 1e-12 && rel_err(H, H1) <= 1e-12 && rel_err(L, L1) <= 1e-12,
              "hidden size 0: logprob %g entropy %g", rel_err(lp, lp1), rel_err(H, H1));
        CHECK(tg_backward(tg_sum(tg_add(lp, H)), NULL, false) == TG_OK, "%s", tg_last_error());
        CHECK(tg_backward(tg_sum(tg_add(lp1, H1)), NULL, false) == TG_OK, "%s", tg_last_error());
        tg_tensor *gb = tg_narrow(tg_grad(b1), 0, start, len);
        CHECK(rel_err(tg_grad(b0), gb) <= 1e-12, "d bias %g", rel_err(tg_grad(b0), gb));
    }
    tg_scope_end(sc);
}

/* A failure on one rank inside the fused linear op: a NaN in its weight
 * slice (forward), or its hidden edited in place before backward. */
static void linear_bad_case(tg_comm *comm, bool in_backward, int bad_rank) {
    int sc = tg_scope_begin();
    const int64_t N = 5, d = 3, V = 19;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    tg_tensor *h = tg_scale(tg_randn(TG_F64, TG_SHAPE(N, d), 1, 0.0, 1.0), 1.0);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(len, d), 2 + g_rank, 0.0, 1.0);
    tg_set_requires_grad(w, true);
    if (!in_backward && g_rank == bad_rank) ((double *)tg_data(w))[1] = NAN;
    tg_tensor *y = tg_randint(TG_SHAPE(N), 3, 0, V);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    o.chunk_rows = 2;
    tg_tensor *lp = NULL, *H = NULL;
    tg_clear_error();
    tg_status st = tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, NULL);
    if (in_backward) {
        CHECK(st == TG_OK, "%s", tg_last_error());
        if (g_rank == bad_rank) tg_scale_(h, 2.0);
        st = tg_backward(tg_sum(lp), NULL, false);
    }
    const tg_status want = in_backward ? TG_ERR_INPLACE : TG_ERR_VALUE;
    CHECK(st == want, "linear bad (%s): %s: %s", in_backward ? "backward" : "forward",
          tg_status_name(st), tg_last_error());
    char r[32];
    snprintf(r, sizeof r, "rank %d", bad_rank);
    if (g_rank != bad_rank || !in_backward) /* the failing rank has its own full message */
        CHECK(strstr(tg_last_error(), r) != NULL, "linear bad: message lacks '%s': %s", r,
              tg_last_error());
    tg_clear_error();
    tg_scope_end(sc);
}

/* A small vocab-parallel linear op call on every rank: hidden (N, 3)
 * requiring grad (*h), this rank's slice of a (V, 3) weight. Its logprob
 * (checked: the call must succeed). */
static tg_tensor *small_linear(tg_comm *comm, int64_t N, int64_t V, tg_tensor **h) {
    const int64_t d = 3;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    *h = tg_randn(TG_F64, TG_SHAPE(N, d), 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(len, d), 2 + g_rank, 0.0, 1.0);
    tg_set_requires_grad(*h, true);
    tg_tensor *y = tg_randint(TG_SHAPE(N), 3, 0, V);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    tg_tensor *lp = NULL, *H = NULL;
    CHECK(tg_linear_logprob_entropy(*h, w, NULL, y, &o, &lp, &H, NULL) == TG_OK, "%s",
          tg_last_error());
    return lp;
}

/* Hidden does not require grad and the weight slice does on every rank
 * but bad_rank: that rank would record no node, and the others' backward
 * would wait for it; the forward fails on every rank instead, naming it. */
static void linear_requires_grad_case(tg_comm *comm, int bad_rank) {
    int sc = tg_scope_begin();
    const int64_t N = 4, d = 3, V = 11;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    tg_tensor *h = tg_randn(TG_F64, TG_SHAPE(N, d), 1, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(len, d), 2 + g_rank, 0.0, 1.0);
    tg_set_requires_grad(w, g_rank != bad_rank);
    tg_tensor *y = tg_randint(TG_SHAPE(N), 3, 0, V);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    tg_tensor *lp = NULL, *H = NULL;
    tg_clear_error();
    tg_status st = tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, NULL);
    char r[64];
    snprintf(r, sizeof r, "rank %d's options differ", bad_rank);
    CHECK(st == TG_ERR_VALUE && strstr(tg_last_error(), r) &&
              strstr(tg_last_error(), "an input requires grad is false there"),
          "requires grad on one rank only: %s: %s", tg_status_name(st), tg_last_error());
    CHECK(lp == NULL && H == NULL, "outputs set on failure");
    tg_clear_error();
    tg_scope_end(sc);
}

/* A wrong-shaped grad given to tg_backward on one rank: its backward stops
 * before it has looked at the graph, and the linear op's node on the other
 * ranks must still hear of it (they fail naming the rank, no hang). */
static void linear_bad_grad_case(tg_comm *comm, int bad_rank) {
    int sc = tg_scope_begin();
    const int64_t N = 5;
    tg_tensor *h, *lp = small_linear(comm, N, 19, &h);
    tg_tensor *g = tg_ones(TG_F64, TG_SHAPE(g_rank == bad_rank ? N + 1 : N));
    tg_clear_error();
    tg_status st = tg_backward(lp, g, false);
    CHECK(st == TG_ERR_SHAPE, "bad grad: %s: %s", tg_status_name(st), tg_last_error());
    char r[32];
    snprintf(r, sizeof r, "rank %d", bad_rank);
    if (g_rank != bad_rank)
        CHECK(strstr(tg_last_error(), r) != NULL, "bad grad: message lacks '%s': %s", r,
              tg_last_error());
    CHECK(tg_grad(h) == NULL, "a failed backward set a gradient");
    tg_clear_error();
    tg_scope_end(sc);
}

/* The root of one rank's backward is a view made in no-grad mode whose base
 * was then modified in place: its grad_fn cannot be made (refused, as in
 * PyTorch), so that rank's backward stops before it has a node to start
 * from; it must still tell the linear op's node, reached through the view's
 * base, and every rank fails naming it. */
static void linear_stale_view_root_case(tg_comm *comm, int bad_rank) {
    int sc = tg_scope_begin();
    const int64_t N = 4;
    tg_tensor *h, *lp = small_linear(comm, N, 13, &h);
    tg_tensor *x = tg_scale(lp, 1.0), *root;
    if (g_rank == bad_rank) {
        const bool prev = tg_set_grad_enabled(false);
        root = tg_narrow(x, 0, 0, 1);
        tg_set_grad_enabled(prev);
    } else {
        root = tg_narrow(x, 0, 0, 1);
    }
    CHECK(tg_scale_(x, 2.0) == TG_OK, "%s", tg_last_error());
    tg_clear_error();
    tg_status st = tg_backward(root, tg_ones(TG_F64, TG_SHAPE(1)), false);
    char r[32];
    snprintf(r, sizeof r, "rank %d", bad_rank);
    CHECK(st != TG_OK, "a failure on rank %d was not told", bad_rank);
    if (g_rank != bad_rank)
        CHECK(strstr(tg_last_error(), r) != NULL, "stale view root: message lacks '%s': %s", r,
              tg_last_error());
    tg_clear_error();
    tg_scope_end(sc);
}

/* A custom function that passes no gradient back (its backward returns
 * NULL: zero): a backward through it reaches the linear op's node but runs
 * none of it. */
static tg_status cut_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                             tg_tensor **out, void *user) {
    (void)ctx, (void)n_in, (void)n_out, (void)user;
    out[0] = tg_clone(in[0]);
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status cut_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                              tg_tensor **gin, void *user) {
    (void)ctx, (void)n_out, (void)gout, (void)n_in, (void)user;
    gin[0] = NULL;
    return TG_OK;
}
static const tg_function cut_fn = {"CutBackward", cut_forward, cut_backward};

/* No gradient reaches the linear op's node: on every rank the backward
 * succeeds (the node meets the others in its agreement, nothing is
 * all-reduced, h gets no gradient); and when bad_rank >= 0 fails its
 * backward before the node (a wrong-shaped grad), every rank fails naming
 * it, instead of that rank's told node waiting for an agreement the others
 * never make. */
static void linear_no_grad_case(tg_comm *comm, int bad_rank) {
    int sc = tg_scope_begin();
    tg_tensor *h, *lp = small_linear(comm, 4, 13, &h), *cut = NULL;
    tg_tensor *s = tg_sum(lp);
    CHECK(tg_function_apply(&cut_fn, NULL, 1, &s, 1, &cut) == TG_OK, "%s", tg_last_error());
    tg_tensor *g = g_rank == bad_rank ? tg_ones(TG_F64, TG_SHAPE(2)) : NULL;
    uint64_t before = 0, after = 0;
    tg_comm_counters(comm, &before, NULL);
    tg_clear_error();
    tg_status st = tg_backward(cut, g, false);
    tg_comm_counters(comm, &after, NULL);
    if (bad_rank < 0) {
        CHECK(st == TG_OK, "no gradient to the node: %s", tg_last_error());
        CHECK(tg_grad(h) == NULL, "h got a gradient");
        CHECK(after - before == 1, "%llu collectives (the agreement alone)",
              (unsigned long long)(after - before));
    } else {
        CHECK(st != TG_OK, "a failure on rank %d was not told", bad_rank);
        char r[32];
        snprintf(r, sizeof r, "rank %d", bad_rank);
        if (g_rank != bad_rank)
            CHECK(strstr(tg_last_error(), r) != NULL, "no gradient: message lacks '%s': %s", r,
                  tg_last_error());
    }
    tg_clear_error();
    tg_scope_end(sc);
}

/* Every allocation of one rank's call in turn fails (failure injection on
 * the last rank only, SQLite's sweep). The call never leaves the others
 * waiting in a collective (run.sh's timeout bounds the run); every rank ends
 * with TG_OK or TG_ERR_NOMEM; a rank failing because another did names it;
 * and a failure before the statistics exchange (the exchange's own buffers
 * included) fails every rank. The modes: the forward of the logits op and
 * of the linear op (every rank ends it with the same status, even when the
 * failure comes after the statistics exchange: everything the call hands
 * out is made before it; then a backward, which every rank reaches or none),
 * the linear op's backward after a clean forward. */
typedef enum { SWEEP_LOGITS, SWEEP_LINEAR_FWD, SWEEP_LINEAR_BWD } sweep_mode;

static void alloc_sweep_case(tg_comm *comm, sweep_mode mode) {
    const int bad = g_size - 1;
    const int64_t N = 6, d = 3, V = 17;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    int all_failed = 0, stats_told = 0;
    uint64_t k;
    char r[32];
    snprintf(r, sizeof r, "rank %d", bad);
    for (k = 1; k < 5000; k++) {
        int sc = tg_scope_begin();
        tg_tensor *y = tg_randint(TG_SHAPE(N), 3, 0, V);
        ((int64_t *)tg_data(y))[2] = -100;
        tg_tensor *lp = NULL, *H = NULL, *L = NULL, *loss = NULL;
        uint64_t fired = 0;
        tg_status st;
        tg_clear_error();
        if (mode == SWEEP_LOGITS) {
            tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, len), 5 + g_rank, 0.0, 1.0);
            tg_set_requires_grad(z, true);
            tg_logprob_opts o = tg_logprob_opts_default();
            o.comm = comm;
            o.vocab_start = start;
            tg_fault_inject(g_rank == bad ? k : 0, false);
            st = tg_logprob_entropy_lse(z, y, &o, &lp, &H, &L);
        } else {
            tg_tensor *h = tg_randn(TG_F64, TG_SHAPE(N, d), 1, 0.0, 1.0);
            tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(len, d), 2 + g_rank, 0.0, 1.0);
            tg_set_requires_grad(h, true);
            tg_set_requires_grad(w, true);
            tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
            o.comm = comm;
            o.vocab_start = start;
            o.chunk_rows = 2;
            o.vocab_block = 2;
            if (mode == SWEEP_LINEAR_FWD) tg_fault_inject(g_rank == bad ? k : 0, false);
            st = tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, &L);
            if (mode == SWEEP_LINEAR_BWD) {
                CHECK(st == TG_OK, "sweep: clean forward: %s", tg_last_error());
                loss = tg_add(tg_sum(lp), tg_sum(H));
                tg_fault_inject(g_rank == bad ? k : 0, false);
                st = tg_backward(loss, NULL, false);
            }
        }
        if (mode != SWEEP_LINEAR_BWD) {
            /* every rank the same status, then a backward (no failure
             * injected) that no rank may be left out of */
            fired = tg_fault_inject(0, false);
            int f = st != TG_OK, lo = 0, hi = 0;
            MPI_Allreduce(&f, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&f, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK(lo == hi, "sweep %d, k %llu: the forward failed on some ranks only: %s",
                  (int)mode, (unsigned long long)k, tg_last_error());
            if (lo == hi && st == TG_OK) {
                loss = tg_add(tg_sum(lp), tg_sum(H));
                st = tg_backward(loss, NULL, false);
            }
        }
        fired += tg_fault_inject(0, false);
        CHECK(st == TG_OK || st == TG_ERR_NOMEM, "sweep %d, k %llu: %s: %s", (int)mode,
              (unsigned long long)k, tg_status_name(st), tg_last_error());
        if (st != TG_OK && g_rank != bad)
            CHECK(strstr(tg_last_error(), r) != NULL, "sweep %d, k %llu: message lacks '%s': %s",
                  (int)mode, (unsigned long long)k, r, tg_last_error());
        int mine[2] = {st != TG_OK, fired > 0}, *every = malloc(2 * sizeof(int) * (size_t)g_size);
        MPI_Allgather(mine, 2, MPI_INT, every, 2, MPI_INT, MPI_COMM_WORLD);
        int failed = 0;
        for (int q = 0; q < g_size; q++) failed += every[2 * q];
        const bool more = every[2 * bad + 1];
        free(every);
        if (failed == g_size) {
            all_failed++;
            if (strstr(tg_last_error(), "for the statistics of")) stats_told++;
        }
        tg_clear_error();
        tg_scope_end(sc);
        if (!more) break;
    }
    CHECK(k > 10 && k < 5000, "sweep %d: %llu allocations", (int)mode, (unsigned long long)k);
    CHECK(all_failed > 0, "sweep %d: no failure was told to every rank", (int)mode);
    if (mode != SWEEP_LINEAR_BWD)
        CHECK(stats_told > 0, "sweep %d: the statistics buffers' failure was not told to every "
              "rank", (int)mode);
}

static void kill_case(tg_comm *comm) {
    int64_t start, len;
    slice_of(50, g_rank, g_size, &start, &len);
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(4, len), 1, 0.0, 1.0);
    tg_tensor *y = tg_randint(TG_SHAPE(4), 2, 0, 50);
    if (g_rank == 1) {
        fprintf(stderr, "[rank 1] exiting on purpose, the others are in a collective\n");
        _exit(3);
    }
    tg_logprob_opts o = tg_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    tg_tensor *lp, *H;
    tg_status st = tg_logprob_entropy(z, y, &o, &lp, &H);
    fprintf(stderr, "[rank %d] returned %s: %s\n", g_rank, tg_status_name(st), tg_last_error());
    exit(st == TG_OK ? 0 : 4);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    tg_comm *comm = NULL;
    MPI_Comm world = MPI_COMM_WORLD;
    if (tg_comm_from_mpi(&world, &comm) != TG_OK) {
        fprintf(stderr, "tg_comm_from_mpi: %s\n", tg_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    CHECK(tg_comm_rank(comm) == g_rank && tg_comm_size(comm) == g_size, "rank/size");
    /* a failing MPI call is TG_ERR_COMM naming it, never an abort */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm null_comm = MPI_COMM_NULL;
    tg_comm *bad = NULL;
    tg_clear_error();
    CHECK(tg_comm_from_mpi(&null_comm, &bad) == TG_ERR_COMM && !bad, "%s", tg_last_error());
    CHECK(strstr(tg_last_error(), "MPI_Comm_dup") != NULL, "%s", tg_last_error());
    tg_clear_error();
    CHECK(tg_comm_from_mpi(NULL, &bad) == TG_ERR_NULL, "NULL communicator");
    tg_clear_error();
    CHECK(tg_comm_available(TG_COMM_MPI), "MPI available in this build");
    if (argc > 1 && !strcmp(argv[1], "kill")) {
        if (g_size < 2) {
            fprintf(stderr, "kill needs 2 ranks or more\n");
            return 2;
        }
        kill_case(comm);
    }
    /* values and gradients */
    const tg_dtype dts[2] = {TG_F64, TG_F32};
    const int64_t Ns[3] = {1, 7, 33}, Vs[3] = {5, 37, 100};
    int k = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int d = 0; d < 3; d++, k++) {
                if (Vs[d] < g_size) continue; /* every rank holds at least one row */
                lcase c = {dts[a], Ns[b], Vs[d], k % 2 ? 0.7 : 1.0, k % 3 != 0, k % 4 == 1,
                           k % 2 == 0, 0};
                logits_case(comm, &c);
                /* an ignore_index that is also a local index on some rank (every
                 * slice but rank P-1's starts above 0: its local 0 is not row 0) */
                c.ign = 1;
                c.ignore = true;
                logits_case(comm, &c);
            }
    /* one rank's bad input fails every rank the same way */
    const int last = g_size - 1;
    bad_case(comm, BAD_NULL, last, TG_ERR_NULL, "'logits' is NULL");
    bad_case(comm, BAD_NAN, last, TG_ERR_VALUE, "is nan");
    bad_case(comm, BAD_TARGET, -1, TG_ERR_VALUE, "row 4: target 26");
    if (g_size > 1) {
        bad_case(comm, BAD_ROWS, 1, TG_ERR_SHAPE, "rows");
        bad_case(comm, BAD_OVERLAP, 1, TG_ERR_VALUE, "overlaps");
        bad_case(comm, BAD_TEMP, 1, TG_ERR_VALUE, "temperature");
    }
    /* the fused linear op */
    const lin_case lins[] = {
        {TG_F64, 9, 4, 31, 0, 0, true, true, true, true},
        {TG_F64, 9, 4, 31, 2, 3, false, false, false, false},
        {TG_F64, 17, 5, 64, 4, 5, true, true, false, true},
        {TG_F32, 33, 8, 100, 0, 0, true, true, true, false},
        {TG_F32, 33, 8, 100, 7, 6, false, true, false, true},
        {TG_BF16, 20, 6, 50, 6, 7, true, true, true, true},
    };
    for (size_t i = 0; i < sizeof lins / sizeof lins[0]; i++) linear_case(comm, &lins[i]);
    /* random shapes, options and slices (random sizes in a random rank
     * order): TG_MPI_CASES of them (default 24), the same on every rank */
    const char *ncases = getenv("TG_MPI_CASES");
    const int nrand = ncases ? atoi(ncases) : 24;
    for (int i = 0; i < nrand; i++) {
        uint64_t st = 0x5eed0000u + (uint64_t)i;
        g_split_seed = rnd(&st) | 1;
        const tg_dtype dt = rnd_in(&st, 0, 3) ? TG_F64 : TG_F32;
        const int64_t N = rnd_in(&st, 1, 40), V = rnd_in(&st, g_size, 3 * g_size + 90);
        /* drawn one by one, in this order (an initializer's order is unspecified) */
        bool flag[4];
        for (int f = 0; f < 4; f++) flag[f] = rnd_in(&st, 0, 1) != 0;
        if (i % 2 == 0) {
            lcase c = {dt, N, V, 1.0, flag[0], flag[1], flag[2], 0};
            if (rnd_in(&st, 0, 1)) c.T = 0.5 + 0.01 * (double)rnd_in(&st, 0, 100);
            if (rnd_in(&st, 0, 1)) c.ign = rnd_in(&st, 1, 3); /* may be a local index */
            logits_case(comm, &c);
        } else {
            lin_case c = {dt, N, 1, V, 0, 0, flag[0], flag[1], flag[2], flag[3]};
            c.d = rnd_in(&st, 1, 9);
            if (rnd_in(&st, 0, 1)) c.chunk = rnd_in(&st, 1, N);
            if (rnd_in(&st, 0, 1)) c.block = rnd_in(&st, 1, V);
            linear_case(comm, &c);
        }
    }
    g_split_seed = 0;
    empty_case(comm);
    linear_bad_case(comm, false, last);
    linear_bad_case(comm, true, last);
    linear_bad_grad_case(comm, last);
    if (g_size > 1) linear_requires_grad_case(comm, last);
    linear_no_grad_case(comm, -1);
    linear_no_grad_case(comm, last);
    linear_stale_view_root_case(comm, last);
    masked_case(comm);
    memory_case(comm);
    alloc_sweep_case(comm, SWEEP_LOGITS);
    alloc_sweep_case(comm, SWEEP_LINEAR_FWD);
    alloc_sweep_case(comm, SWEEP_LINEAR_BWD);
    uint64_t ncoll = 0, bytes = 0;
    tg_comm_counters(comm, &ncoll, &bytes);
    CHECK(ncoll > 0, "no collective counted");
    CHECK(tg_comm_free(comm) == TG_OK, "%s", tg_last_error());
    tg_live_counts live = tg_live();
    CHECK(live.tensors == 0 && live.storages == 0 && live.nodes == 0, "leak: %lld tensors",
          (long long)live.tensors);
    int failed = 0;
    MPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("test_mpi: %d ranks, %d checks per rank, %d failed (all ranks), %llu collectives "
               "on rank 0\n", g_size, g_checks, failed, (unsigned long long)ncoll);
    MPI_Finalize();
    return g_failed ? 1 : 0;
}
