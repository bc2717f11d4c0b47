/* tests/test_logprob.c - tg_logprob_entropy, values and gradients: accuracy
 * against a long-double reference (f32 and f64, V up to 262144, temperature),
 * chunk-size invariance, strided rows read in place, ignore_index, masked
 * (-inf) vocabulary, shapes, and the f32 kernel's exponential.
 * The autograd side (errors, conditional recording, memory, gradcheck, the
 * in-place story) is in test_logprob_autograd.c. */
#include <float.h>

#include "../kernels/cpu/cpu.h"
#include "test_logprob_util.h"

TestSuite(logprob, .init = tgt_setup, .fini = tgt_teardown);

/* ---- 1. accuracy ---------------------------------------------------------------- */

/* Rows per vocabulary size: large V only for a handful of rows. */
static const int64_t acc_V[] = {1, 2, 1000, 32000, 262144};
static const int64_t acc_N[] = {8, 16, 16, 3, 2};
static const double acc_T[] = {1.0, 0.7, 1.9};

/* For every V and temperature: logits (uniform [-30, 30) or normal * 5),
 * random targets, random upstream gradients in [-1, 1); values within 1e-5
 * relative + 1e-6 absolute, gradient within 1e-6 absolute of the reference.
 * Prints the largest errors measured. */
static void accuracy(tg_dtype dt, bool normal) {
    lpt_err worst = {0, 0, 0, 0, 0};
    for (size_t iv = 0; iv < sizeof acc_V / sizeof *acc_V; iv++) {
        for (size_t it = 0; it < sizeof acc_T / sizeof *acc_T; it++) {
            int sc = tg_scope_begin();
            const int64_t V = acc_V[iv], N = acc_N[iv];
            const double T = acc_T[it];
            const uint64_t seed = 1000 * iv + 10 * it + (normal ? 7 : 0) + (dt == TG_F32 ? 3 : 0);
            tg_tensor *z = normal ? tg_randn(dt, TG_SHAPE(N, V), seed, 0.0, 5.0)
                                  : tg_rand(dt, TG_SHAPE(N, V), seed, -30.0, 30.0);
            cr_assert_not_null(z, "%s", tg_last_error());
            tg_set_requires_grad(z, true);
            tg_tensor *y = lpt_targets(TG_SHAPE(N), V, seed + 1);
            tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), seed + 2, -1.0, 1.0);
            tg_tensor *gh = tg_rand(dt, TG_SHAPE(N), seed + 3, -1.0, 1.0);
            tg_logprob_opts o = tg_logprob_opts_default();
            o.temperature = T;
            lpt_out r = lpt_run(z, z, y, &o, glp, gh);
            cr_assert_eq(tg_get_dtype(r.lp), dt);
            cr_assert_eq(tg_get_dtype(r.h), dt);
            cr_assert_eq(tg_get_dtype(r.grad), dt);
            char what[128];
            snprintf(what, sizeof what, "%s %s V=%lld T=%g", tg_dtype_name(dt),
                     normal ? "normal*5" : "uniform[-30,30)", (long long)V, T);
            lpt_err e;
            lpt_check_reference(z, y, T, -100, glp, gh, r.lp, r.h, r.grad, 1e-5, 1e-6, 1e-6, what,
                                &e);
            if (e.lp > worst.lp) worst.lp = e.lp;
            if (e.h > worst.h) worst.h = e.h;
            if (e.grad > worst.grad) worst.grad = e.grad;
            if (e.lp_abs > worst.lp_abs) worst.lp_abs = e.lp_abs;
            if (e.h_abs > worst.h_abs) worst.h_abs = e.h_abs;
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
    cr_log_info("accuracy %s %s: max error/tolerance logprob %.3g entropy %.3g; max abs error "
                "logprob %.3g entropy %.3g gradient %.3g", tg_dtype_name(dt),
                normal ? "normal*5" : "uniform", worst.lp, worst.h, worst.lp_abs, worst.h_abs,
                worst.grad);
}

Test(logprob, accuracy_f32_uniform) { accuracy(TG_F32, false); }
Test(logprob, accuracy_f32_normal) { accuracy(TG_F32, true); }
Test(logprob, accuracy_f64_uniform) { accuracy(TG_F64, false); }
Test(logprob, accuracy_f64_normal) { accuracy(TG_F64, true); }

/* ---- 2. chunk sizes ------------------------------------------------------------------ */

/* Fused: chunk sizes 0, 1, 3, 1024, N, N+5 give bitwise identical logprob,
 * entropy and gradient. Two shapes: rows long enough for the threaded path
 * (V >= 1024, several blocks), and N > 1024 so that chunk 1024 splits. */
static void chunks_bitwise(tg_dtype dt, int64_t N, int64_t V) {
    int sc = tg_scope_begin();
    tg_tensor *data = tg_randn(dt, TG_SHAPE(N, V), 77 + (uint64_t)N, 0.0, 4.0);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 78);
    lpt_set(y, N / 2, -100); /* one ignored row */
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), 79, -1.0, 1.0);
    tg_tensor *gh = tg_rand(dt, TG_SHAPE(N), 80, -1.0, 1.0);
    const int64_t chunks[] = {0, 1, 3, 1024, N, N + 5};
    lpt_out first = {NULL, NULL, NULL};
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        tg_tensor *z = tg_clone(data); /* a fresh leaf each time */
        tg_set_requires_grad(z, true);
        tg_logprob_opts o = tg_logprob_opts_default();
        o.temperature = 1.3;
        o.chunk_size = chunks[k];
        lpt_out r = lpt_run(z, z, y, &o, glp, gh);
        if (k == 0) {
            first = r;
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%s (%lld, %lld) chunk %lld vs 0: logprob", tg_dtype_name(dt),
                 (long long)N, (long long)V, (long long)chunks[k]);
        lpt_assert_bitwise(r.lp, first.lp, what);
        snprintf(what, sizeof what, "%s (%lld, %lld) chunk %lld vs 0: entropy", tg_dtype_name(dt),
                 (long long)N, (long long)V, (long long)chunks[k]);
        lpt_assert_bitwise(r.h, first.h, what);
        snprintf(what, sizeof what, "%s (%lld, %lld) chunk %lld vs 0: gradient", tg_dtype_name(dt),
                 (long long)N, (long long)V, (long long)chunks[k]);
        lpt_assert_bitwise(r.grad, first.grad, what);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, fused_chunk_sizes_are_bitwise_identical_f32) {
    chunks_bitwise(TG_F32, 37, 1500);
    chunks_bitwise(TG_F32, 1100, 40);
}

Test(logprob, fused_chunk_sizes_are_bitwise_identical_f64) {
    chunks_bitwise(TG_F64, 37, 1500);
    chunks_bitwise(TG_F64, 1100, 40);
}

/* ---- 3. instruction sets and store modes ----------------------------------------------- */

/* The f32 row kernels of every instruction set this CPU runs, each with the
 * backward's non-temporal stores on and off. The FMA ones (avx2, avx512)
 * give bitwise identical logprob, entropy and gradient (the same lane-wise
 * arithmetic whatever the width, fused multiply-adds in both); the store
 * mode changes no bit; the baseline (SSE2: a multiply and an add, each
 * rounded) stays within a few float ulps of them. (That the bits are those
 * of earlier builds is checked by comparing output files, not here.) Rows of 4099 entries: long
 * enough for the streamed stores, not a multiple of 16, and every row but
 * the first starting off a 64-byte boundary (the short first block). */
static lpt_out run_variant(tg_tensor *data, tg_tensor *y, tg_tensor *glp, tg_tensor *gh) {
    tg_tensor *z = tg_clone(data);
    tg_set_requires_grad(z, true);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.7;
    return lpt_run(z, z, y, &o, glp, gh);
}

static void assert_same_bits(const lpt_out *r, const lpt_out *ref, const char *what) {
    char m[96];
    snprintf(m, sizeof m, "%s: logprob", what);
    lpt_assert_bitwise(r->lp, ref->lp, m);
    snprintf(m, sizeof m, "%s: entropy", what);
    lpt_assert_bitwise(r->h, ref->h, m);
    snprintf(m, sizeof m, "%s: gradient", what);
    lpt_assert_bitwise(r->grad, ref->grad, m);
}

Test(logprob, every_cpu_variant_and_store_mode_agrees) {
    const char *was = tg_cpu_kernels();
    const bool was_streaming = tg_cpu_stream_stores();
    const int64_t N = 9, V = 4099;
    int sc = tg_scope_begin();
    tg_tensor *data = tg_randn(TG_F32, TG_SHAPE(N, V), 91, 0.0, 4.0);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 92);
    lpt_set(y, 4, -100);
    tg_tensor *glp = tg_rand(TG_F32, TG_SHAPE(N), 93, -1.0, 1.0);
    tg_tensor *gh = tg_rand(TG_F32, TG_SHAPE(N), 94, -1.0, 1.0);
    const char *names[] = {"base", "avx2", "avx512"};
    lpt_out ref[3][2];
    bool ran[3] = {false, false, false};
    for (int k = 0; k < 3; k++)
        for (int stream = 0; stream <= 1; stream++) {
            if (!tg__cpu_lpe_select(names[k], stream)) {
                cr_log_info("this CPU does not run %s", names[k]);
                continue;
            }
            cr_assert_str_eq(tg_cpu_kernels(), names[k]);
#if defined(__x86_64__)
            cr_assert_eq(tg_cpu_stream_stores(), stream == 1);
#else
            cr_assert(!tg_cpu_stream_stores(), "no non-temporal stores off x86-64");
#endif
            ref[k][stream] = run_variant(data, y, glp, gh);
            ran[k] = true;
            char what[64];
            snprintf(what, sizeof what, "%s, stream on vs off", names[k]);
            if (stream == 1) assert_same_bits(&ref[k][1], &ref[k][0], what);
        }
    cr_assert(ran[0], "the baseline runs everywhere");
    if (ran[1] && ran[2]) assert_same_bits(&ref[2][0], &ref[1][0], "avx512 vs avx2");
    for (int k = 1; k < 3; k++) {
        if (!ran[k]) continue;
        const double d_lp = lpt_max_abs_diff(ref[k][0].lp, ref[0][0].lp);
        const double d_h = lpt_max_abs_diff(ref[k][0].h, ref[0][0].h);
        const double d_g = lpt_max_abs_diff(ref[k][0].grad, ref[0][0].grad);
        cr_log_info("%s vs base: logprob %.3g, entropy %.3g, gradient %.3g", names[k], d_lp, d_h,
                    d_g);
        /* logprob ~ -10, entropy ~ 5, gradient entries < 1: a few ulps of f32 */
        cr_assert(d_lp <= 8e-6 && d_h <= 4e-6 && d_g <= 5e-7, "%s vs base: %.3g %.3g %.3g",
                  names[k], d_lp, d_h, d_g);
    }
    cr_assert(!tg__cpu_lpe_select("avx1024", 0), "an unknown variant is refused");
    cr_assert(tg__cpu_lpe_select(was, was_streaming));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* FNV-1a of t's bytes. */
static uint64_t bits_hash(const tg_tensor *t) {
    size_t n = 0;
    unsigned char *b = lpt_raw(t, &n);
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211u;
    free(b);
    return h;
}

/* The f32 fused op's bits are those of the build that introduced its row
 * kernels (checked there by comparing output files): a change of arithmetic,
 * summation order or the sign of a zero shows here, and is then deliberate
 * (update the hashes and say why). Rows with zero upstream gradients (their
 * gradient entries are signed zeros), -inf logits, an ignored row, a
 * temperature. x86-64's baseline has no fused multiply-add, so its bits are
 * IEEE arithmetic in the source's order whatever the compiler and flags; the
 * FMA variants' depend on where the compiler contracts a multiply and an add
 * (none at -O0): their hashes are GCC's at -O2 and above, checked there. */
Test(logprob, f32_bits_are_those_of_earlier_builds) {
    const char *was = tg_cpu_kernels();
    const bool was_streaming = tg_cpu_stream_stores();
    const int64_t N = 12, V = 4111;
    int sc = tg_scope_begin();
    tg_tensor *data = tg_randn(TG_F32, TG_SHAPE(N, V), 301, 0.0, 4.0);
    float *zd = tg_data(data);
    for (int64_t j = 0; j < 300; j++) zd[5 * V + j] = -INFINITY;
    zd[2 * V + 7] = -INFINITY;
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 302);
    lpt_set(y, 4, -100);
    tg_tensor *glp = tg_rand(TG_F32, TG_SHAPE(N), 303, -1.0, 1.0);
    tg_tensor *gh = tg_rand(TG_F32, TG_SHAPE(N), 304, -1.0, 1.0);
    for (int64_t i = 0; i < N; i += 3) lpt_set(glp, i, 0.0); /* zero upstream gradients */
    for (int64_t i = 0; i < N; i += 2) lpt_set(gh, i, 0.0);
    const struct { const char *variant; uint64_t lp, h, grad; } want[] = {
        /* a4ba828's 64-byte-vector rows gave these */
        {"avx512", 0xf8120b22ff96c3fcu, 0x24375070a5734447u, 0x6f63495ed3b7ea7au},
        {"avx2", 0xf8120b22ff96c3fcu, 0x24375070a5734447u, 0x6f63495ed3b7ea7au},
        {"base", 0xf8120b22ff96c3fcu, 0x24375070a5734447u, 0x4a6b90f392974cb9u},
    };
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && \
    !defined(__NO_INLINE__)
    const bool fma_pinned = true;
#else
    const bool fma_pinned = false;
#endif
    int checked = 0;
    for (int k = 0; k < 3; k++) {
        const bool is_base = !strcmp(want[k].variant, "base");
#if !defined(__x86_64__)
        if (is_base) continue; /* fused multiply-adds in the baseline elsewhere */
#endif
        if (!is_base && !fma_pinned) continue;
        if (!tg__cpu_lpe_select(want[k].variant, -1)) continue;
        checked++;
        lpt_out r = run_variant(data, y, glp, gh);
        const uint64_t lp = bits_hash(r.lp), h = bits_hash(r.h), g = bits_hash(r.grad);
        cr_log_info("%s: %#llx %#llx %#llx", want[k].variant, (unsigned long long)lp,
                    (unsigned long long)h, (unsigned long long)g);
        cr_expect(lp == want[k].lp && h == want[k].h && g == want[k].grad,
                  "%s: the bits changed", want[k].variant);
    }
    cr_log_info("%d variants checked against their pinned bits", checked);
    cr_assert(tg__cpu_lpe_select(was, was_streaming));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Composite, chunk 0 (one graph) vs chunk 2 (checkpointed chunks), f64: equal
 * within 1e-12 (values and gradients), and both equal to the fused op within
 * 1e-12. Also with entropy_grad off (the entropy computed without grad). */
Test(logprob, composite_chunked_matches_unchunked_and_fused_f64) {
    int sc = tg_scope_begin();
    const int64_t N = 7, V = 33;
    tg_tensor *data = tg_randn(TG_F64, TG_SHAPE(N, V), 91, 0.0, 3.0);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 92);
    lpt_set(y, 3, -100);
    tg_tensor *glp = tg_rand(TG_F64, TG_SHAPE(N), 93, -1.0, 1.0);
    tg_tensor *gh = tg_rand(TG_F64, TG_SHAPE(N), 94, -1.0, 1.0);
    for (int eg = 1; eg >= 0; eg--) {
        lpt_out r[3];
        const int64_t chunk[3] = {0, 2, 0};
        const tg_logprob_impl impl[3] = {TG_LOGPROB_COMPOSITE, TG_LOGPROB_COMPOSITE,
                                         TG_LOGPROB_FUSED};
        for (int k = 0; k < 3; k++) {
            tg_tensor *z = tg_clone(data);
            tg_set_requires_grad(z, true);
            tg_logprob_opts o = tg_logprob_opts_default();
            o.temperature = 0.8;
            o.chunk_size = chunk[k];
            o.impl = impl[k];
            o.entropy_grad = eg;
            r[k] = lpt_run(z, z, y, &o, glp, gh);
            cr_assert_eq(tg_requires_grad(r[k].h), (bool)eg,
                         "impl %d chunk %lld: entropy requires grad iff entropy_grad", impl[k],
                         (long long)chunk[k]);
        }
        for (int k = 1; k < 3; k++) {
            const char *who = k == 1 ? "composite chunk 2 vs chunk 0" : "fused vs composite";
            double dl = lpt_max_abs_diff(r[k].lp, r[0].lp), dh = lpt_max_abs_diff(r[k].h, r[0].h);
            double dg = lpt_max_abs_diff(r[k].grad, r[0].grad);
            cr_assert(dl <= 1e-12, "%s (entropy_grad %d): logprob differs by %.3g", who, eg, dl);
            cr_assert(dh <= 1e-12, "%s (entropy_grad %d): entropy differs by %.3g", who, eg, dh);
            cr_assert(dg <= 1e-12, "%s (entropy_grad %d): gradient differs by %.3g", who, eg, dg);
        }
        /* the ignored row: zero everywhere, for every implementation */
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(tgt_at(r[k].lp, 3), 0.0);
            cr_assert_eq(tgt_at(r[k].h, 3), 0.0);
            for (int64_t j = 0; j < V; j++) cr_assert_eq(tgt_at(r[k].grad, 3 * V + j), 0.0);
        }
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- 3. strided rows ------------------------------------------------------------------- */

/* logits = big[:, -n-1:-1, :] (rows not contiguous): same values and gradient
 * as a contiguous copy, the gradient reaches big only at the sliced
 * positions, forward makes no (N, V) buffer, and the op saves big's storage
 * (by reference) + targets + 16 bytes per row. */
static void strided_rows(tg_dtype dt) {
    int sc = tg_scope_begin();
    const int64_t B = 3, S = 9, V = 1100, n = 5, N = B * n;
    const size_t es = tg_dtype_size(dt);
    tg_tensor *big = tg_set_name(tg_randn(dt, TG_SHAPE(B, S, V), 301, 0.0, 3.0), "big");
    tg_set_requires_grad(big, true);
    tg_tensor *logits = tg_slice(big, 1, -n - 1, -1, 1);
    cr_assert_not_null(logits, "%s", tg_last_error());
    cr_assert(!tg_is_contiguous(logits));
    cr_assert(tg_same_storage(logits, big));
    cr_assert_eq(tg_size(logits, 1), n);
    tg_tensor *y = lpt_targets(TG_SHAPE(B, n), V, 302);
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(B, n), 303, -1.0, 1.0);
    tg_tensor *gh = tg_rand(dt, TG_SHAPE(B, n), 304, -1.0, 1.0);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.9;

    /* forward alone: memory */
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    tg_mem_reset_peak(TG_CPU);
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(logits, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CPU, &m1);
    size_t grew = m1.peak_total - m0.live_total;
    cr_assert(grew < (size_t)(N * V) * 4, "forward allocated %zu bytes at peak: an (N, V) buffer "
              "(%lld bytes)?", grew, (long long)(N * V * 4));
    cr_assert(grew <= (size_t)(64 * N), "forward peak grew by %zu bytes, more than 64 per row",
              grew);
    cr_assert_eq(m1.saved - m0.saved, (size_t)(B * S * V) * es + (size_t)N * 8 + (size_t)N * 24,
                 "saved %zu bytes: expected big's storage %zu + targets %zu + 24 per row %zu",
                 m1.saved - m0.saved, (size_t)(B * S * V) * es, (size_t)N * 8, (size_t)N * 24);
    cr_assert_str_eq(tg_grad_fn_name(lp), "LogprobEntropyBackward");
    tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, glp)), tg_sum(tg_mul(h, gh)));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *gbig = tg_grad(big);
    cr_assert_not_null(gbig);

    /* the same on a contiguous copy */
    tg_tensor *copy = NULL;
    TG_NO_GRAD { copy = tg_clone(logits); }
    cr_assert(tg_is_contiguous(copy));
    tg_set_requires_grad(copy, true);
    lpt_out c = lpt_run(copy, copy, y, &o, glp, gh);
    lpt_assert_bitwise(lp, c.lp, "strided vs contiguous: logprob");
    lpt_assert_bitwise(h, c.h, "strided vs contiguous: entropy");

    /* big's gradient: the copy's gradient at [:, S-n-1:S-1, :], 0 elsewhere */
    double *gb = lpt_f64(gbig), *gc = lpt_f64(c.grad);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t j = 0; j < V; j++) {
                double got = gb[(b * S + s) * V + j];
                bool in = s >= S - n - 1 && s < S - 1;
                double want = in ? gc[(b * n + (s - (S - n - 1))) * V + j] : 0.0;
                if (got != want) {
                    free(gb);
                    free(gc);
                    cr_assert_fail("big.grad[%lld, %lld, %lld] = %.17g, expected %.17g (%s)",
                                   (long long)b, (long long)s, (long long)j, got, want,
                                   in ? "sliced" : "outside the slice");
                }
            }
    free(gb);
    free(gc);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, strided_rows_f32) { strided_rows(TG_F32); }
Test(logprob, strided_rows_f64) { strided_rows(TG_F64); }

/* Column-strided logits (a transpose: the vocabulary stride is N, not 1) and
 * strided targets (every second entry): read in place, reference accuracy. */
static void column_strided(tg_dtype dt) {
    int sc = tg_scope_begin();
    const int64_t N = 6, V = 2100;
    tg_tensor *base = tg_rand(dt, TG_SHAPE(V, N), 311, -30.0, 30.0);
    tg_set_requires_grad(base, true);
    tg_tensor *z = tg_transpose(base, 0, 1);
    cr_assert_eq(tg_stride(z, 1), N);
    tg_tensor *y2 = lpt_targets(TG_SHAPE(N, 2), V, 312);
    tg_tensor *y = tg_view(tg_slice(y2, 1, 0, 1, 1), TG_SHAPE(N));
    cr_assert_not_null(y, "%s", tg_last_error());
    cr_assert_eq(tg_stride(y, 0), 2);
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), 313, -1.0, 1.0);
    tg_tensor *gh = tg_rand(dt, TG_SHAPE(N), 314, -1.0, 1.0);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 1.9;
    lpt_out r = lpt_run(z, base, y, &o, glp, gh);
    tg_tensor *gz = tg_transpose(r.grad, 0, 1); /* base.grad is (V, N) */
    lpt_err e;
    lpt_check_reference(z, y, o.temperature, -100, glp, gh, r.lp, r.h, gz, 1e-5, 1e-6, 1e-6,
                        dt == TG_F32 ? "column-strided f32" : "column-strided f64", &e);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, column_strided_logits_and_strided_targets_f32) { column_strided(TG_F32); }
Test(logprob, column_strided_logits_and_strided_targets_f64) { column_strided(TG_F64); }

/* ---- 4. ignore_index --------------------------------------------------------------------- */

/* Ignored rows (default -100, or a custom value) give logprob 0, entropy 0
 * and a zero gradient row, even when they hold NaN / +inf (never read); the
 * other rows are unaffected. */
static void ignored_rows(tg_dtype dt, int64_t ignore) {
    int sc = tg_scope_begin();
    const int64_t N = 6, V = 1200;
    tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 401, 0.0, 5.0);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 402);
    lpt_set(y, 1, (double)ignore);
    lpt_set(y, 4, (double)ignore);
    lpt_set(z, 1 * V + 0, NAN);
    lpt_set(z, 1 * V + 700, INFINITY);
    for (int64_t j = 0; j < V; j++) lpt_set(z, 4 * V + j, j % 2 ? NAN : -INFINITY);
    tg_set_requires_grad(z, true);
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), 403, -1.0, 1.0);
    tg_tensor *gh = tg_rand(dt, TG_SHAPE(N), 404, -1.0, 1.0);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.ignore_index = ignore;
    o.temperature = 1.1;
    for (int chunk = 0; chunk <= 2; chunk++) {
        o.chunk_size = chunk;
        lpt_out r = lpt_run(z, z, y, &o, glp, gh);
        double *lp = lpt_f64(r.lp), *h = lpt_f64(r.h), *g = lpt_f64(r.grad);
        for (int64_t i = 1; i < N; i += 3) {
            cr_assert_eq(lp[i], 0.0, "ignored row %lld: logprob %g", (long long)i, lp[i]);
            cr_assert_eq(h[i], 0.0, "ignored row %lld: entropy %g", (long long)i, h[i]);
            for (int64_t j = 0; j < V; j++)
                cr_assert_eq(g[i * V + j], 0.0, "ignored row %lld: gradient %g at %lld",
                             (long long)i, g[i * V + j], (long long)j);
        }
        free(lp);
        free(h);
        free(g);
        lpt_err e;
        lpt_check_reference(z, y, o.temperature, ignore, glp, gh, r.lp, r.h, r.grad, 1e-5, 1e-6,
                            1e-6, "rows next to ignored ones", &e);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, ignore_index_default_f32) { ignored_rows(TG_F32, -100); }
Test(logprob, ignore_index_default_f64) { ignored_rows(TG_F64, -100); }
Test(logprob, ignore_index_custom_f32) { ignored_rows(TG_F32, -1); }
Test(logprob, ignore_index_custom_f64) { ignored_rows(TG_F64, 7); }

/* The composite baseline also zeroes ignored rows (finite logits there). */
Test(logprob, ignore_index_composite) {
    int sc = tg_scope_begin();
    const int64_t N = 4, V = 9;
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 411, 0.0, 2.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 412);
    lpt_set(y, 2, -3);
    tg_tensor *glp = tg_rand(TG_F64, TG_SHAPE(N), 413, -1.0, 1.0);
    tg_tensor *gh = tg_rand(TG_F64, TG_SHAPE(N), 414, -1.0, 1.0);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = TG_LOGPROB_COMPOSITE;
    o.ignore_index = -3;
    for (int chunk = 0; chunk <= 2; chunk += 2) {
        o.chunk_size = chunk;
        lpt_out r = lpt_run(z, z, y, &o, glp, gh);
        lpt_err e;
        lpt_check_reference(z, y, 1.0, -3, glp, gh, r.lp, r.h, r.grad, 1e-12, 1e-13, 1e-13,
                            chunk ? "composite chunk 2" : "composite", &e);
        cr_assert_eq(tgt_at(r.lp, 2), 0.0);
        cr_assert_eq(tgt_at(r.h, 2), 0.0);
        for (int64_t j = 0; j < V; j++) cr_assert_eq(tgt_at(r.grad, 2 * V + j), 0.0);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- 5. masked vocabulary (-inf) --------------------------------------------------------- */

/* Row 0: a whole leading block (1100 entries) at -inf; row 1: every 7th entry
 * at -inf; row 2: none. p = 0 and gradient exactly 0 at -inf entries,
 * entropy finite and equal to the entropy of the remaining entries alone,
 * everything matches the reference. */
static void masked_vocab(tg_dtype dt) {
    int sc = tg_scope_begin();
    const int64_t N = 3, V = 2500, skip = 1100;
    tg_tensor *z = tg_rand(dt, TG_SHAPE(N, V), 501, -20.0, 20.0);
    for (int64_t j = 0; j < skip; j++) lpt_set(z, j, -INFINITY);
    for (int64_t j = 0; j < V; j += 7) lpt_set(z, V + j, -INFINITY);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 502);
    lpt_set(y, 0, (double)(skip + 17));
    lpt_set(y, 1, 3); /* not a multiple of 7 */
    tg_set_requires_grad(z, true);
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), 503, -1.0, 1.0);
    tg_tensor *gh = tg_rand(dt, TG_SHAPE(N), 504, -1.0, 1.0);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.7;
    lpt_out r = lpt_run(z, z, y, &o, glp, gh);
    double *h = lpt_f64(r.h), *g = lpt_f64(r.grad);
    for (int64_t i = 0; i < N; i++) cr_assert(isfinite(h[i]), "row %lld entropy %g", (long long)i, h[i]);
    for (int64_t j = 0; j < V; j++) {
        if (j < skip) cr_assert_eq(g[j], 0.0, "row 0 column %lld (-inf): gradient %g", (long long)j, g[j]);
        if (j % 7 == 0)
            cr_assert_eq(g[V + j], 0.0, "row 1 column %lld (-inf): gradient %g", (long long)j,
                         g[V + j]);
    }
    lpt_err e;
    lpt_check_reference(z, y, o.temperature, -100, glp, gh, r.lp, r.h, r.grad, 1e-5, 1e-6, 1e-6,
                        dt == TG_F32 ? "-inf entries f32" : "-inf entries f64", &e);
    /* row 0 against the same op on its finite entries only */
    tg_tensor *rest = tg_contiguous(tg_slice(tg_slice(z, 0, 0, 1, 1), 1, skip, V, 1));
    tg_tensor *ryi = tg_full(TG_I64, TG_SHAPE(1), 17.0);
    tg_tensor *lp2 = NULL, *h2 = NULL;
    TG_NO_GRAD {
        cr_assert_eq(tg_logprob_entropy(rest, ryi, &o, &lp2, &h2), TG_OK, "%s", tg_last_error());
    }
    double tol = dt == TG_F32 ? 1e-6 * fabs(h[0]) + 1e-6 : 1e-13;
    double h0 = tgt_at(h2, 0), lp0 = tgt_at(r.lp, 0), lpr = tgt_at(lp2, 0);
    cr_assert(fabs(h0 - h[0]) <= tol, "row 0 entropy %.17g, entropy of its finite entries %.17g",
              h[0], h0);
    cr_assert(fabs(lp0 - lpr) <= (dt == TG_F32 ? 1e-6 * fabs(lpr) + 1e-6 : 1e-13),
              "row 0 logprob %.17g, on its finite entries %.17g", lp0, lpr);
    free(h);
    free(g);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, masked_vocabulary_f32) { masked_vocab(TG_F32); }
Test(logprob, masked_vocabulary_f64) { masked_vocab(TG_F64); }

/* ---- shapes -------------------------------------------------------------------------------- */

/* Leading shape kept: (2, 3, V) -> (2, 3); 1-D logits (V) with a 0-d target
 * -> 0-d outputs; zero rows -> empty outputs and an empty gradient. */
Test(logprob, output_shapes_and_dtypes) {
    int sc = tg_scope_begin();
    tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(2, 3, 50), 601, 0.0, 1.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(2, 3), 50, 602);
    lpt_out r = lpt_run(z, z, y, NULL, NULL, NULL);
    cr_assert_eq(tg_ndim(r.lp), 2);
    cr_assert_eq(tg_size(r.lp, 0), 2);
    cr_assert_eq(tg_size(r.lp, 1), 3);
    cr_assert_eq(tg_ndim(r.h), 2);
    cr_assert_eq(tg_get_dtype(r.lp), TG_F32);
    cr_assert_eq(tg_ndim(r.grad), 3);
    lpt_err e;
    lpt_check_reference(z, y, 1.0, -100, NULL, NULL, r.lp, r.h, NULL, 1e-5, 1e-6, 1e-6, "3-D", &e);

    /* one row: 1-D logits, 0-d target */
    tg_tensor *z1 = tg_set_name(TGT_F64(TG_SHAPE(4), 1.0, 2.0, 3.0, -INFINITY), "z1");
    tg_set_requires_grad(z1, true);
    tg_tensor *y1 = tg_full(TG_I64, TG_SCALAR, 2.0);
    lpt_out r1 = lpt_run(z1, z1, y1, NULL, NULL, NULL);
    cr_assert_eq(tg_ndim(r1.lp), 0);
    cr_assert_eq(tg_ndim(r1.h), 0);
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    double p[3] = {exp(1.0 - lse), exp(2.0 - lse), exp(3.0 - lse)};
    double H = -(p[0] * log(p[0]) + p[1] * log(p[1]) + p[2] * log(p[2]));
    tgt_assert_values(r1.lp, (double[]){3.0 - lse}, 1, 1e-14);
    tgt_assert_values(r1.h, (double[]){H}, 1, 1e-14);
    double g[4];
    for (int j = 0; j < 3; j++)
        g[j] = (j == 2) - p[j] - p[j] * ((j + 1.0) - lse + H); /* g_lp = g_H = 1 */
    g[3] = 0.0;
    tgt_assert_values(r1.grad, g, 4, 1e-14);

    /* zero rows */
    tg_tensor *z0 = tg_zeros(TG_F64, TG_SHAPE(0, 5));
    tg_set_requires_grad(z0, true);
    tg_tensor *y0 = tg_zeros(TG_I64, TG_SHAPE(0));
    lpt_out r0 = lpt_run(z0, z0, y0, NULL, NULL, NULL);
    cr_assert_eq(tg_numel(r0.lp), 0);
    cr_assert_eq(tg_numel(r0.h), 0);
    cr_assert_eq(tg_numel(r0.grad), 0);
    cr_assert_eq(tg_size(r0.grad, 1), 5);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Only one of the two outputs receives a gradient (the other's upstream is
 * zero): each gives the gradient of its own term. */
Test(logprob, gradient_through_one_output_only) {
    int sc = tg_scope_begin();
    const int64_t N = 5, V = 1300;
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 611, 0.0, 3.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 612);
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(tg_sum(h), NULL, true), TG_OK, "%s", tg_last_error());
    tg_tensor *gh_only = tg_grad(z);
    tg_zero_grad(z);
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *glp_only = tg_grad(z);
    tg_tensor *ones = tg_ones(TG_F64, TG_SHAPE(N));
    lpt_err e;
    lpt_check_reference(z, y, 1.0, -100, NULL, ones, lp, h, gh_only, 1e-12, 1e-13, 1e-13,
                        "entropy only", &e);
    lpt_check_reference(z, y, 1.0, -100, ones, NULL, lp, h, glp_only, 1e-12, 1e-13, 1e-13,
                        "logprob only", &e);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- 11. the f32 kernel's exponential ------------------------------------------------------ */

/* tg__cpu_exp_nonpos over [-87, 0] in 1e6 steps plus special points:
 * relative error vs exp((double)d) <= 3e-7 (measured: see the log line; it
 * was 8.16e-8, at d = -16.98, when this test was written - AVX-512 machine,
 * GCC 12.2, Release and Debug alike), exactly 0 below -87.5 and at -inf,
 * exactly 1 at 0 and -0. */
Test(logprob, f32_exponential_accuracy) {
    const int steps = 1000000;
    double worst = 0.0, worst_d = 0.0;
    for (int k = 0; k <= steps; k++) {
        float d = (float)(-87.0 + 87.0 * (double)k / steps);
        if (d > 0.0f) d = 0.0f;
        float got = tg__cpu_exp_nonpos(d);
        double want = exp((double)d), rel = fabs((double)got - want) / want;
        if (!(rel <= worst)) {
            worst = rel;
            worst_d = d;
        }
    }
    cr_log_info("tg__cpu_exp_nonpos: max relative error %.3g at d = %.9g over [-87, 0]", worst,
                worst_d);
    cr_assert(worst <= 3e-7, "max relative error %.3g at d = %.9g", worst, worst_d);
    const float below[] = {-INFINITY, -FLT_MAX, -1e30f, -1000.0f, -100.0f, -88.0f,
                           nextafterf(-87.5f, -INFINITY)};
    for (size_t i = 0; i < sizeof below / sizeof *below; i++) {
        float got = tg__cpu_exp_nonpos(below[i]);
        cr_assert(got == 0.0f, "exp(%g) = %g, expected exactly 0", (double)below[i], (double)got);
    }
    float at = tg__cpu_exp_nonpos(-87.5f);
    cr_assert(at >= 0.0f && (double)at <= exp(-87.5) * (1 + 3e-7), "exp(-87.5) = %g", (double)at);
    cr_assert(tg__cpu_exp_nonpos(0.0f) == 1.0f, "exp(0) = %.9g", (double)tg__cpu_exp_nonpos(0.0f));
    cr_assert(tg__cpu_exp_nonpos(-0.0f) == 1.0f, "exp(-0) = %.9g",
              (double)tg__cpu_exp_nonpos(-0.0f));
    /* the smallest steps below 0 stay <= 1 */
    cr_assert(tg__cpu_exp_nonpos(-FLT_MIN) <= 1.0f);
    cr_assert(tg__cpu_exp_nonpos(-FLT_EPSILON) <= 1.0f);
}
