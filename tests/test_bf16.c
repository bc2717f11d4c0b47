/* tests/test_bf16.c - TG_BF16: the conversions (rounding to nearest even,
 * NaN, infinities, subnormals), bf16 tensors made, viewed, copied, printed;
 * requires_grad and gradients through tg_to_dtype; every other op refusing
 * it cleanly; and the ops that take it (tg_matmul, tg_logprob_entropy,
 * tg_linear_logprob_entropy) against float64 references, with the error of
 * PyTorch's bf16 autocast on the same case beside ours
 * (TG_BF16_REPORT=1 prints both). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "tg_test_util.h"

TestSuite(bf16, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

static uint16_t bits(float f) { return tg_bf16_from_f32(f); }

Test(bf16, rounding_to_nearest_even) {
    cr_assert_eq(bits(1.0f), 0x3f80);
    cr_assert_eq(bits(-2.0f), 0xc000);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1 */
    cr_assert_eq(bits(1.0f + 0x1p-8f), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even, 1 + 2^-6 */
    cr_assert_eq(bits(1.0f + 3 * 0x1p-8f), 0x3f82);
    cr_assert_eq(bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above halfway: up */
    cr_assert_eq(bits(INFINITY), 0x7f80);
    cr_assert_eq(bits(-INFINITY), 0xff80);
    cr_assert_eq(bits(3.4028235e38f), 0x7f80); /* FLT_MAX rounds up to infinity */
    cr_assert_eq(bits(0x1p-133f), 0x0001);     /* a bf16 subnormal */
    cr_assert_eq(bits(-0.0f), 0x8000);
    uint16_t n = bits(NAN), mn = bits(-NAN);
    cr_assert((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0, "NaN stays NaN: %04x", n);
    cr_assert(mn & 0x8000, "NaN keeps its sign");
    /* a signalling-NaN pattern whose payload is in the low bits only: still NaN */
    union { uint32_t u; float f; } s = {0x7f800001u};
    uint16_t sn = bits(s.f);
    cr_assert((sn & 0x7f) != 0 && (sn & 0x7f80) == 0x7f80, "%04x", sn);
    for (uint32_t h = 0; h < 0x10000; h++) { /* back and forth: exact for every non-NaN */
        float f = tg_bf16_to_f32((uint16_t)h);
        if (f == f) cr_assert_eq(bits(f), h, "%04x", h);
    }
}

Test(bf16, made_converted_viewed_printed) {
    tg_tensor *x = tg_from_data(TG_F64, TG_SHAPE(2, 3),
                                (double[]){1.0, -2.5, 1.0 / 3.0, 1e39, -0.0, 65504.0});
    tg_tensor *b = tg_to_dtype(x, TG_BF16);
    cr_assert_eq(tg_get_dtype(b), TG_BF16);
    cr_assert_eq(tg_dtype_size(TG_BF16), 2);
    cr_assert_str_eq(tg_dtype_name(TG_BF16), "bf16");
    double back[6];
    cr_assert_eq(tg_copy_out(b, TG_F64, back, sizeof back), TG_OK);
    cr_assert_eq(back[0], 1.0);
    cr_assert_eq(back[1], -2.5);
    cr_assert_eq(back[2], tg_bf16_to_f32(bits((float)(1.0 / 3.0))));
    cr_assert(isinf(back[3]), "1e39 overflows f32 first: inf, as PyTorch");
    cr_assert(signbit(back[4]));
    cr_assert_eq(back[5], 65536.0); /* 65504 rounds to the nearest bf16 */
    /* views and copies keep the bits */
    tg_tensor *t = tg_contiguous(tg_transpose(b, 0, 1));
    uint16_t tb[6];
    cr_assert_eq(tg_copy_out(t, TG_BF16, tb, sizeof tb), TG_OK);
    cr_assert_eq(tb[3], bits(-0.0f)); /* [1][1] of the transpose: element [1][1] */
    cr_assert_eq(tb[1], 0x7f80);      /* [0][1]: element [1][0], infinity */
    cr_assert_eq(tb[0], 0x3f80);
    /* to and from i64 and bool */
    tg_tensor *i = tg_to_dtype(b, TG_I64), *bo = tg_to_dtype(b, TG_BOOL);
    cr_assert_eq(tgt_at(i, 1), -2.0);
    cr_assert_eq(tgt_at(bo, 4), 0.0);
    cr_assert_eq(tgt_at(tg_to_dtype(tg_full(TG_I64, TG_SHAPE(1), 257), TG_BF16), 0), 256.0);
    /* created directly */
    cr_assert_eq(tgt_at(tg_full(TG_BF16, TG_SHAPE(2), 0.1), 1), tg_bf16_to_f32(bits(0.1f)));
    cr_assert_eq(tgt_at(tg_arange(TG_BF16, 0, 3, 1), 2), 2.0);
    cr_assert_eq(tgt_at(tg_ones(TG_BF16, TG_SHAPE(1)), 0), 1.0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_print(f, tg_slice(b, 1, 0, 2, 1), 10), TG_OK);
    fclose(f);
    cr_assert(strstr(buf, "bf16[2, 2]") && strstr(buf, "-2.5"), "%s", buf);
    free(buf);
}

Test(bf16, requires_grad_and_to_dtype_gradient) {
    tg_tensor *w = tg_to_dtype(tg_from_data(TG_F32, TG_SHAPE(3), (float[]){1.5f, -2.0f, 0.25f}),
                               TG_BF16);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK, "%s", tg_last_error());
    tg_tensor *w32 = tg_to_dtype(w, TG_F32);
    tg_tensor *loss = tg_sum(tg_mul(w32, w32));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(w);
    cr_assert_eq(tg_get_dtype(g), TG_BF16, "the gradient of a bf16 leaf is bf16");
    cr_assert_eq(tgt_at(g, 0), 3.0);
    cr_assert_eq(tgt_at(g, 1), -4.0);
    cr_assert_eq(tgt_at(g, 2), 0.5);
    /* a second backward accumulates in bf16 */
    cr_assert_eq(tg_backward(tg_sum(tg_mul(tg_to_dtype(w, TG_F32), tg_to_dtype(w, TG_F32))), NULL,
                             false),
                 TG_OK);
    cr_assert_eq(tgt_at(tg_grad(w), 0), 6.0);
    cr_assert_eq(tg_set_requires_grad(tg_zeros(TG_I64, TG_SHAPE(1)), true), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "f32/f64/bf16", NULL);
}

Test(bf16, other_ops_refuse_it_cleanly) {
    tg_tensor *a = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(3, 4), 1, 0.0, 1.0), TG_BF16);
    tg_tensor *b = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(3, 4), 2, 0.0, 1.0), TG_BF16);
    tg_tensor *r[] = {tg_add(a, b),         tg_exp(a),          tg_sum(a),
                      tg_mean_dim(a, 1, false), tg_softmax(a), tg_log_softmax(a),
                      tg_gt(a, b),          tg_amax(a),         tg_cumsum(a, 0),
                      tg_where(tg_gt(tg_to_dtype(a, TG_F32), tg_to_dtype(b, TG_F32)), a, b),
                      tg_scale(a, 2.0),     tg_maximum(a, b),   tg_logsumexp_dim(a, 1, false),
                      tg_sort(a, 1, false, NULL), tg_argsort(a, 0, true),
                      tg_topk(a, 2, 1, true, NULL), tg_clamp_tensor(a, b, NULL),
                      tg_clamp_tensor(a, NULL, b), tg_nan_to_num(a, 0.0, NAN, NAN)};
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
        cr_assert_null(r[k], "op %zu took bf16", k);
    tg_clear_error();
    cr_assert_null(tg_add(a, b));
    tgt_assert_error(TG_ERR_DTYPE, "tg_add", "bf16", "tg_to_dtype", NULL);
    tg_tensor *f = tg_randn(TG_F32, TG_SHAPE(4, 2), 3, 0.0, 1.0);
    tg_clear_error();
    cr_assert_null(tg_matmul(a, f), "mixed bf16 and f32");
    tgt_assert_error(TG_ERR_DTYPE, "tg_matmul", NULL);
    cr_assert_eq(tg_live().nodes, 0);
}

/* ---- the ops that take it ------------------------------------------------------------- */

/* max |a - ref| / max |ref| (NaN where ref has none: infinite). */
static double max_rel(const tg_tensor *a, const tg_tensor *ref) {
    int64_t n = tg_numel(ref);
    cr_assert_eq(tg_numel(a), n);
    double *x = malloc((size_t)(n + 1) * sizeof *x), *e = malloc((size_t)(n + 1) * sizeof *e);
    cr_assert(x && e);
    cr_assert_eq(tg_copy_out(a, TG_F64, x, (size_t)n * sizeof *x), TG_OK);
    cr_assert_eq(tg_copy_out(ref, TG_F64, e, (size_t)n * sizeof *e), TG_OK);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(e[i]));
    for (int64_t i = 0; i < n && worst < INFINITY; i++) {
        if (isnan(x[i]) != isnan(e[i])) worst = INFINITY;
        else if (!isnan(x[i])) worst = fmax(worst, fabs(x[i] - e[i]) / (scale > 0 ? scale : 1));
    }
    free(x);
    free(e);
    return worst;
}

Test(bf16, matmul_accumulates_in_f32) {
    /* bf16-exact values: the f64 product of the same values is the reference */
    tg_tensor *a64 = tg_to_dtype(tg_to_dtype(tg_randn(TG_F64, TG_SHAPE(5, 300), 1, 0.0, 1.0),
                                             TG_BF16), TG_F64);
    tg_tensor *b64 = tg_to_dtype(tg_to_dtype(tg_randn(TG_F64, TG_SHAPE(300, 7), 2, 0.0, 1.0),
                                             TG_BF16), TG_F64);
    tg_tensor *a = tg_to_dtype(a64, TG_BF16), *b = tg_to_dtype(b64, TG_BF16);
    tg_set_requires_grad(a, true);
    tg_set_requires_grad(b, true);
    tg_set_requires_grad(a64, true);
    tg_set_requires_grad(b64, true);
    tg_tensor *c = tg_matmul(a, b), *c64 = tg_matmul(a64, b64);
    cr_assert_eq(tg_get_dtype(c), TG_F32, "bf16 operands give an f32 result");
    cr_assert(max_rel(c, c64) < 1e-6, "%g", max_rel(c, c64));
    tg_tensor *up = tg_randn(TG_F32, TG_SHAPE(5, 7), 3, 0.0, 1.0);
    cr_assert_eq(tg_backward(c, up, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(c64, tg_to_dtype(up, TG_F64), false), TG_OK);
    cr_assert_eq(tg_get_dtype(tg_grad(a)), TG_BF16);
    /* the gradient is the f32 one rounded to bf16: within half a bf16 ulp */
    cr_assert(max_rel(tg_grad(a), tg_grad(a64)) < 4e-3, "%g", max_rel(tg_grad(a), tg_grad(a64)));
    cr_assert(max_rel(tg_grad(b), tg_grad(b64)) < 4e-3);
}

Test(bf16, logits_op_reads_bf16_computes_f32) {
    const int64_t N = 37, V = 1000;
    tg_tensor *z64 = tg_to_dtype(tg_to_dtype(tg_randn(TG_F64, TG_SHAPE(N, V), 5, 0.0, 3.0),
                                             TG_BF16), TG_F64);
    tg_tensor *z = tg_to_dtype(z64, TG_BF16);
    tg_set_requires_grad(z, true);
    tg_set_requires_grad(z64, true);
    tg_tensor *y = tgt_targets(N, V, 6);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.9;
    tg_tensor *lp, *H, *L, *lp64, *H64, *L64;
    cr_assert_eq(tg_logprob_entropy_lse(z, y, &o, &lp, &H, &L), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_logprob_entropy_lse(z64, y, &o, &lp64, &H64, &L64), TG_OK);
    cr_assert_eq(tg_get_dtype(lp), TG_F32);
    cr_assert(max_rel(lp, lp64) < 1e-6 && max_rel(H, H64) < 1e-6 && max_rel(L, L64) < 1e-6,
              "%g %g %g", max_rel(lp, lp64), max_rel(H, H64), max_rel(L, L64));
    tg_tensor *g1 = tg_randn(TG_F32, TG_SHAPE(N), 7, 0.0, 1.0);
    tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, g1)), tg_add(tg_sum(H), tg_sum(L)));
    tg_tensor *loss64 = tg_add(tg_sum(tg_mul(lp64, tg_to_dtype(g1, TG_F64))),
                               tg_add(tg_sum(H64), tg_sum(L64)));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(loss64, NULL, false), TG_OK);
    cr_assert_eq(tg_get_dtype(tg_grad(z)), TG_BF16);
    cr_assert(max_rel(tg_grad(z), tg_grad(z64)) < 4e-3, "%g", max_rel(tg_grad(z), tg_grad(z64)));
    /* the composite impl converts first: the same values */
    o.impl = TG_LOGPROB_COMPOSITE;
    tg_tensor *lpc, *Hc;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lpc, &Hc), TG_OK, "%s", tg_last_error());
    cr_assert(max_rel(lpc, lp64) < 1e-5);
    /* a NaN in a bf16 row is named, row and column */
    tg_tensor *zn = tg_clone(tg_detach(z));
    ((uint16_t *)tg_data(zn))[3 * V + 17] = 0x7fc0;
    y = tg_zeros(TG_I64, TG_SHAPE(N));
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy(zn, y, NULL, &lpc, &Hc), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "row 3", "logit 17", "nan", NULL);
    o = tg_logprob_opts_default();
    o.grad_into_logits = true;
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy(tg_scale(z64, 1.0), y, &o, &lpc, &Hc), TG_OK);
    cr_assert_eq(tg_logprob_entropy(tg_to_dtype(tg_scale(z64, 1.0), TG_BF16), y, &o, &lpc, &Hc),
                 TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "grad_into_logits", "bf16", NULL);
}

/* Every element of t is 0. */
static void all_zero(const tg_tensor *t, const char *what) {
    cr_assert_not_null(t, "%s: no gradient", what);
    tg_tensor *t32 = tg_to_dtype((tg_tensor *)t, TG_F32);
    for (int64_t i = 0; i < tg_numel(t32); i++)
        cr_assert_eq(tgt_at(t32, i), 0.0, "%s: element %lld", what, (long long)i);
}

/* No rows in bf16 on dev, the inputs over NULL (as NumPy and DLPack give
 * them), every input requiring grad: f32 outputs of no elements, bf16
 * gradients of the inputs' shapes, zero for the weight and bias, both impls,
 * a temperature, chunks and blocks; and the linear op's hidden states of
 * size 0, whose logits are the bias. */
static void empty_on(tg_device dev) {
    const int64_t V = 9, d = 4;
    tg_tensor *z = tg_from_blob(dev, TG_BF16, TG_SHAPE(2, 0, V), NULL, NULL, NULL, NULL);
    tg_tensor *y = tg_from_blob(dev, TG_I64, TG_SHAPE(2, 0), NULL, NULL, NULL, NULL);
    tg_tensor *h = tg_from_blob(dev, TG_BF16, TG_SHAPE(2, 0, d), NULL, NULL, NULL, NULL);
    cr_assert(z && y && h, "%s", tg_last_error());
    tg_tensor *w = tg_to_device(tg_to_dtype(tg_rand(TG_F32, TG_SHAPE(V, d), 3, -1, 1), TG_BF16), dev);
    tg_tensor *b = tg_to_device(tg_to_dtype(tg_rand(TG_F32, TG_SHAPE(V), 4, -1, 1), TG_BF16), dev);
    tg_tensor *leaves[4] = {z, h, w, b};
    for (int k = 0; k < 4; k++) cr_assert_eq(tg_set_requires_grad(leaves[k], true), TG_OK);
    for (int impl = 0; impl < 2; impl++) {
        tg_logprob_opts o = tg_logprob_opts_default();
        o.impl = impl ? TG_LOGPROB_COMPOSITE : TG_LOGPROB_FUSED;
        o.temperature = 0.7;
        o.chunk_size = 2;
        tg_tensor *lp, *H, *L;
        cr_assert_eq(tg_logprob_entropy_lse(z, y, &o, &lp, &H, &L), TG_OK, "%s", tg_last_error());
        cr_assert(tg_get_dtype(lp) == TG_F32 && tg_ndim(lp) == 2 && tg_numel(lp) == 0);
        cr_assert_eq(tg_backward(tg_add(tg_sum(lp), tg_sum(tg_add(H, L))), NULL, false), TG_OK,
                     "%s", tg_last_error());
        tg_tensor *gz = tg_grad(z);
        cr_assert(gz && tg_get_dtype(gz) == TG_BF16 && tg_ndim(gz) == 3 && tg_numel(gz) == 0);
        cr_assert_eq(tg_zero_grad(z), TG_OK);

        tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
        lo.impl = o.impl;
        lo.temperature = 0.7;
        lo.chunk_rows = 2;
        lo.vocab_block = 4;
        cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &lo, &lp, &H, &L), TG_OK, "%s",
                     tg_last_error());
        cr_assert(tg_get_dtype(lp) == TG_F32 && tg_ndim(lp) == 2 && tg_numel(lp) == 0);
        cr_assert_eq(tg_backward(tg_add(tg_sum(lp), tg_sum(tg_add(H, L))), NULL, false), TG_OK,
                     "%s", tg_last_error());
        cr_assert_eq(tg_get_dtype(tg_grad(w)), TG_BF16);
        all_zero(tg_grad(w), "d weight");
        all_zero(tg_grad(b), "d bias");
        cr_assert(tg_numel(tg_grad(h)) == 0 && tg_ndim(tg_grad(h)) == 3);
        for (int k = 1; k < 4; k++) cr_assert_eq(tg_zero_grad(leaves[k]), TG_OK);
    }
    /* hidden states of size 0: the logits are the bias, against f32 */
    tg_tensor *h0 = tg_from_blob(dev, TG_BF16, TG_SHAPE(3, 0), NULL, NULL, NULL, NULL);
    tg_tensor *w0 = tg_from_blob(dev, TG_BF16, TG_SHAPE(V, 0), NULL, NULL, NULL, NULL);
    tg_tensor *y3 = tg_to_device(tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){1, 8, 0}), dev);
    tg_tensor *lp, *H, *lpf, *Hf;
    cr_assert_eq(tg_linear_logprob_entropy(h0, w0, b, y3, NULL, &lp, &H, NULL), TG_OK, "%s",
                 tg_last_error());
    tg_tensor *bf = tg_to_dtype(b, TG_F32);
    cr_assert_eq(tg_linear_logprob_entropy(tg_to_dtype(h0, TG_F32), tg_to_dtype(w0, TG_F32), bf,
                                           y3, NULL, &lpf, &Hf, NULL), TG_OK, "%s",
                 tg_last_error());
    cr_assert(max_rel(lp, lpf) < 1e-6 && max_rel(H, Hf) < 1e-6, "%g %g", max_rel(lp, lpf),
              max_rel(H, Hf));
}

Test(bf16, fused_ops_on_no_rows_over_null) { empty_on(TG_CPU); }

Test(bf16, fused_ops_on_no_rows_over_a_null_device_pointer) {
    TGT_NEED_CUDA();
    empty_on(TG_CUDA);
}

/* ---- the fused linear op against float64 and PyTorch's autocast ------------------------ */

static tg_tensor *fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TGB_FIXTURES, name);
    tg_tensor *t = NULL;
    cr_assert_eq(tgcli_npy_load(path, &t), TG_OK, "%s: %s", path, tg_last_error());
    return t;
}

/* PyTorch's error on quantity `name` from file (autocast.txt, torch_f32.txt). */
static double torch_err(const char *file, const char *name) {
    char path[512], key[16];
    snprintf(path, sizeof path, "%s/%s", TGB_FIXTURES, file);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    double v, found = -1;
    while (fscanf(f, "%15s %lf", key, &v) == 2)
        if (!strcmp(key, name)) found = v;
    fclose(f);
    cr_assert(found >= 0, "%s not in %s", name, file);
    return found;
}

static double autocast_err(const char *name) { return torch_err("autocast.txt", name); }

/* A fixture on dev. */
static tg_tensor *fixture_on(const char *name, tg_device dev) {
    tg_tensor *t = fixture(name);
    return dev == TG_CPU ? t : tg_to_device(t, dev);
}

/* On the CPU the GEMMs read f32 copies of the bf16 operands and dZ stays
 * f32; on CUDA they read bf16 on the tensor cores and backward rounds dZ to
 * bf16 (as autocast does): the bf16 gradients are then held to PyTorch's
 * autocast error only. */
static void linear_case(tg_device dev, bool grad_f32, int64_t vblock) {
    tg_tensor *h = tg_to_dtype(fixture_on("hidden.npy", dev), TG_BF16);
    tg_tensor *w = tg_to_dtype(fixture_on("weight.npy", dev), TG_BF16);
    tg_tensor *y = fixture_on("targets.npy", dev);
    tg_set_requires_grad(h, true);
    tg_set_requires_grad(w, true);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.grad_f32 = grad_f32;
    o.vocab_block = vblock;
    o.chunk_rows = vblock ? 10 : 0;
    tg_tensor *lp, *H, *L;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, &L), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_get_dtype(lp), TG_F32);
    tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, tg_to_dtype(fixture_on("g_lp.npy", dev), TG_F32))),
                             tg_sum(tg_mul(H, tg_to_dtype(fixture_on("g_h.npy", dev), TG_F32))));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(tg_grad(w)), grad_f32 ? TG_F32 : TG_BF16);
    const char *names[5] = {"lp", "h", "lse", "dh", "dw"};
    tg_tensor *ours[5] = {lp, H, L, tg_grad(h), tg_grad(w)};
    for (int k = 0; k < 5; k++) {
        char file[32];
        snprintf(file, sizeof file, "ref_%s.npy", names[k]);
        const double e = max_rel(ours[k], fixture(file)), pt = autocast_err(names[k]);
        /* f32 outputs: f32 accuracy; bf16 gradients: half a bf16 ulp of the
         * largest (CPU), autocast's error (CUDA: dZ rounded to bf16) */
        const double bound = k < 3 ? 2e-6 : dev == TG_CUDA ? pt : grad_f32 ? 2e-6 : 4e-3;
        if (getenv("TG_BF16_REPORT"))
            printf("bf16 linear %-3s on %s (grads %s, block %lld): tapegrad %.2e, PyTorch bf16 "
                   "autocast %.2e\n", names[k], dev == TG_CPU ? "cpu " : "cuda",
                   grad_f32 ? "f32 " : "bf16", (long long)vblock, e, pt);
        cr_assert(e <= bound, "%s: %.3g > %.3g", names[k], e, bound);
        cr_assert(e <= pt, "%s: %.3g, worse than PyTorch's autocast %.3g", names[k], e, pt);
    }
}

Test(bf16, linear_op_against_f64_and_autocast) {
    const int ndev = tg_cuda_device_count() > 0 ? 2 : 1;
    for (int k = 0; k < 4 * ndev; k++) {
        int t = tg_scope_begin();
        linear_case(k < 4 ? TG_CPU : TG_CUDA, k & 1, k & 2 ? 64 : 0);
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(bf16, linear_op_exact_memory_and_grads_mixed) {
    /* the plan's workspace is what forward holds beyond its outputs */
    const int64_t N = 40, d = 16, V = 300;
    tg_tensor *h = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(N, d), 1, 0.0, 1.0), TG_BF16);
    tg_tensor *w = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(V, d), 2, 0.0, 0.5), TG_BF16);
    tg_tensor *b = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(V), 3, 0.0, 0.5), TG_BF16);
    tg_tensor *y = tg_randint(TG_SHAPE(N), 4, 0, V);
    tg_set_requires_grad(w, true);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.workspace_bytes = 20000;
    o.grad_f32 = true;
    tg_linear_logprob_plan p;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o, &p), TG_OK);
    cr_assert(p.n_blocks > 1 && p.forward_workspace <= o.workspace_bytes, "%lld blocks, %zu",
              (long long)p.n_blocks, p.forward_workspace);
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    tg_mem_reset_peak(TG_CPU);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, NULL), TG_OK, "%s",
                 tg_last_error());
    tg_mem_get(TG_CPU, &m1);
    const size_t outs = 2 * N * 4 + N * 3 * 8;
    cr_assert_eq(m1.peak_total - m0.live_total, outs + p.forward_workspace, "peak %zu, plan %zu",
                 m1.peak_total - m0.live_total, outs + p.forward_workspace);
    /* an f32 gradient (grad_f32) and a bf16 one (through tg_to_dtype) meet in
     * .grad: the sum is f32 */
    tg_tensor *loss = tg_add(tg_sum(lp), tg_sum(tg_to_dtype(w, TG_F32)));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(tg_grad(w)), TG_F32);
    o.grad_f32 = false;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, NULL), TG_OK);
    tg_tensor *g_before = tg_clone(tg_grad(w));
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(tg_grad(w)), TG_F32, "f32 .grad += a bf16 gradient stays f32");
    tg_tensor *only = tg_sub(tg_grad(w), g_before); /* this step's bf16 gradient */
    double m = 0;
    for (int64_t i = 0; i < V * d; i++) m = fmax(m, fabs(tgt_at(only, i)));
    cr_assert(m > 0);
}

Test(bf16, f32_linear_op_as_accurate_as_pytorch_f32) {
    /* the same case in f32: within 4x of PyTorch's own f32 error (other
     * summation orders), for one block and several */
    const char *names[5] = {"lp", "h", "lse", "dh", "dw"};
    for (int j = 0; j < 2; j++) {
        int t = tg_scope_begin();
        tg_tensor *h = fixture("hidden.npy"), *w = fixture("weight.npy"), *y = fixture("targets.npy");
        tg_set_requires_grad(h, true);
        tg_set_requires_grad(w, true);
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.vocab_block = j ? 64 : 0;
        tg_tensor *lp, *H, *L;
        cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, y, &o, &lp, &H, &L), TG_OK);
        tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, tg_to_dtype(fixture("g_lp.npy"), TG_F32))),
                                 tg_sum(tg_mul(H, tg_to_dtype(fixture("g_h.npy"), TG_F32))));
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *ours[5] = {lp, H, L, tg_grad(h), tg_grad(w)};
        for (int k = 0; k < 5; k++) {
            char file[32];
            snprintf(file, sizeof file, "ref_%s.npy", names[k]);
            const double e = max_rel(ours[k], fixture(file)), pt = torch_err("torch_f32.txt", names[k]);
            if (getenv("TG_BF16_REPORT"))
                printf("f32 linear %-3s (block %d): tapegrad %.2e, PyTorch f32 %.2e\n", names[k],
                       j ? 64 : 0, e, pt);
            cr_assert(e <= 4 * pt, "%s: %.3g, PyTorch's f32 %.3g", names[k], e, pt);
        }
        cr_assert_eq(tg_scope_end(t), TG_OK);
    }
}

Test(bf16, linear_op_device_reads_bf16_no_f32_copies) {
    /* on a device with bf16 GEMMs the plan holds no f32 copy of hidden or
     * weight rows, and forward uses exactly that plan */
    const int64_t N = 40, d = 16, V = 300;
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.workspace_bytes = 20000;
    tg_linear_logprob_plan pc, pg;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o, &pc), TG_OK);
    o.device = TG_CUDA;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o, &pg), TG_OK,
                 "%s", tg_last_error());
    const bool compiled_in = !strstr(tg_cuda_unavailable_reason(), "no CUDA backend");
    if (compiled_in)
        cr_assert_lt(pg.forward_workspace / (size_t)pg.chunk_rows,
                     pc.forward_workspace / (size_t)pc.chunk_rows,
                     "per row: bf16 rows, no f32 weight copies");
    o.device = (tg_device)7;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o, &pg), TG_ERR_DEVICE);
    tgt_assert_error(TG_ERR_DEVICE, "tg_linear_logprob_plan_for", "unknown device 7", NULL);
    tg_clear_error();
    if (tg_cuda_device_count() == 0) return;
    o.device = TG_CUDA;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o, &pg), TG_OK);
    tg_tensor *h = tg_to_device(tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(N, d), 1, 0.0, 1.0),
                                            TG_BF16), TG_CUDA);
    tg_tensor *w = tg_to_device(tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(V, d), 2, 0.0, 0.5),
                                            TG_BF16), TG_CUDA);
    tg_tensor *b = tg_to_device(tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(V), 3, 0.0, 0.5),
                                            TG_BF16), TG_CUDA);
    tg_tensor *y = tg_to_device(tg_randint(TG_SHAPE(N), 4, 0, V), TG_CUDA);
    tg_set_requires_grad(w, true);
    tg_mem_stats m0, m1;
    cr_assert_eq(tg_mem_get(TG_CUDA, &m0), TG_OK);
    tg_mem_reset_peak(TG_CUDA);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, y, &o, &lp, &H, NULL), TG_OK, "%s",
                 tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    const size_t outs = 2 * N * 4 + N * 3 * 8;
    /* with several blocks the rows' merge state (4 doubles a row) is on the
     * host: the rest of the plan is the device's */
    cr_assert_gt(pg.n_blocks, 1);
    const size_t on_device = pg.forward_workspace - 32 * (size_t)pg.chunk_rows;
    cr_assert_eq(m1.peak_total - m0.live_total, outs + on_device, "peak %zu, plan %zu",
                 m1.peak_total - m0.live_total, outs + on_device);
    /* backward: the gradient (f32 accumulator, then bf16) beside at most the plan */
    tg_mem_get(TG_CUDA, &m0);
    tg_mem_reset_peak(TG_CUDA);
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    const size_t grads = (size_t)(V * d) * (4 + 2) + 64; /* + the loss and its seed */
    cr_assert_leq(m1.peak_total - m0.live_total, grads + pg.backward_workspace,
                  "peak %zu, plan %zu", m1.peak_total - m0.live_total,
                  grads + pg.backward_workspace);
    cr_assert_eq(tg_get_dtype(tg_grad(w)), TG_BF16);
    /* gathered chunks (ignored rows inside them) with d hidden wanted: the
     * gathered rows' d hidden (f32) is in the plan too */
    tg_tensor *yi = tg_clone(tg_to_device(y, TG_CPU));
    for (int64_t i = 2; i < N; i += 5) ((int64_t *)tg_data(yi))[i] = -100;
    tg_set_requires_grad(h, true);
    cr_assert_eq(tg_zero_grad(w), TG_OK);
    tg_linear_logprob_opts o2 = o;
    o2.chunk_rows = 7;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, true, &o2, &pg), TG_OK);
    cr_assert_eq(tg_linear_logprob_entropy(h, w, b, tg_to_device(yi, TG_CUDA), &o2, &lp, &H, NULL),
                 TG_OK, "%s", tg_last_error());
    tg_tensor *loss2 = tg_sum(lp);
    tg_mem_get(TG_CUDA, &m0);
    tg_mem_reset_peak(TG_CUDA);
    cr_assert_eq(tg_backward(loss2, NULL, false), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    const size_t grads2 = (size_t)((V + N) * d) * (4 + 2) + 64;
    cr_assert_leq(m1.peak_total - m0.live_total, grads2 + pg.backward_workspace,
                  "gathered: peak %zu, plan %zu", m1.peak_total - m0.live_total,
                  grads2 + pg.backward_workspace);
}

Test(bf16, logits_op_on_device_reads_bf16_without_a_copy) {
    /* the device's kernels read bf16 rows and write the bf16 gradient: no f32
     * copy of the logits, forward or backward (the CPU converts chunks) */
    if (tg_cuda_device_count() == 0) return;
    const int64_t N = 16, V = 301;
    tg_tensor *zc = tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(N, V), 5, 0.0, 2.0), TG_BF16);
    tg_tensor *z = tg_to_device(zc, TG_CUDA), *y = tg_to_device(tgt_targets(N, V, 6), TG_CUDA);
    tg_set_requires_grad(z, true);
    tg_set_requires_grad(zc, true);
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CUDA, &m0);
    tg_mem_reset_peak(TG_CUDA);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp, &H), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    cr_assert_eq(m1.peak_total - m0.live_total, (size_t)N * (4 + 4 + 3 * 8),
                 "lp, H and the saved statistics only: %zu", m1.peak_total - m0.live_total);
    tg_tensor *loss = tg_add(tg_sum(lp), tg_sum(H));
    tg_mem_get(TG_CUDA, &m0);
    tg_mem_reset_peak(TG_CUDA);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    cr_assert_leq(m1.peak_total - m0.live_total, (size_t)(N * V * 2) + 4 * (size_t)N + 64,
                  "the bf16 gradient and the upstream ones: %zu", m1.peak_total - m0.live_total);
    cr_assert_eq(tg_get_dtype(tg_grad(z)), TG_BF16);
    /* the same values as the CPU's chunked conversion (bf16 gradients: an ulp) */
    tg_tensor *lpc, *Hc;
    cr_assert_eq(tg_logprob_entropy(zc, tgt_targets(N, V, 6), NULL, &lpc, &Hc), TG_OK);
    cr_assert_eq(tg_backward(tg_add(tg_sum(lpc), tg_sum(Hc)), NULL, false), TG_OK);
    cr_assert(max_rel(tg_to_device(lp, TG_CPU), lpc) < 1e-6);
    cr_assert(max_rel(tg_to_device(tg_grad(z), TG_CPU), tg_grad(zc)) <= 0x1p-8,
              "%g", max_rel(tg_to_device(tg_grad(z), TG_CPU), tg_grad(zc)));
}

Test(bf16, linear_op_device_gathered_backward_within_plan) {
    /* wide rows, a small vocabulary, chunks gathered across ignored rows,
     * only d hidden wanted: the gathered rows' f32 d hidden is most of the
     * backward's workspace, and the plan must count it */
    if (tg_cuda_device_count() == 0) return;
    const int64_t N = 24, d = 512, V = 16;
    tg_tensor *h = tg_to_device(tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(N, d), 7, 0.0, 1.0),
                                            TG_BF16), TG_CUDA);
    tg_tensor *w = tg_to_device(tg_to_dtype(tg_randn(TG_F32, TG_SHAPE(V, d), 8, 0.0, 0.1),
                                            TG_BF16), TG_CUDA);
    int64_t yv[24];
    for (int64_t i = 0; i < N; i++) yv[i] = i % 3 == 1 ? -100 : (i * 7) % V; /* 16 kept */
    tg_tensor *yc = tg_from_data(TG_I64, 1, (int64_t[]){N}, yv);
    tg_set_requires_grad(h, true);
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.chunk_rows = 16; /* the 16 kept rows, gathered */
    o.device = TG_CUDA;
    tg_linear_logprob_plan p;
    cr_assert_eq(tg_linear_logprob_plan_for(N, d, V, TG_BF16, false, &o, &p), TG_OK);
    tg_tensor *lp, *H;
    cr_assert_eq(tg_linear_logprob_entropy(h, w, NULL, tg_to_device(yc, TG_CUDA), &o, &lp, &H,
                                           NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *loss = tg_sum(lp);
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CUDA, &m0);
    tg_mem_reset_peak(TG_CUDA);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_mem_get(TG_CUDA, &m1);
    /* beside d hidden's f32 accumulator (and the loss's seed): first the
     * chunks' workspace, then, once it is released, the bf16 gradient */
    const size_t grads = (size_t)(N * d) * 4 + 16, g16 = (size_t)(N * d) * 2;
    const size_t used = m1.peak_total - m0.live_total - grads;
    const size_t bound = p.backward_workspace > g16 ? p.backward_workspace : g16;
    cr_assert_leq(used, bound, "workspace %zu > plan %zu", used, p.backward_workspace);
    cr_assert_geq(used, (size_t)o.chunk_rows * (size_t)d * 4, "the gathered d hidden is there");
}
