/* tests/test_vocab_table.c - walks the shared vocabulary table (vocab_table.h)
 * against PyTorch: for every case of tests/vocab/fixtures/MANIFEST.txt (written
 * by make_fixtures.py with PyTorch float64), the op's result (dtype, shape,
 * values; NaN where PyTorch has NaN) and, where it is differentiable, the
 * gradient of every input for PyTorch's upstream gradient, on the inputs as
 * loaded and on strided copies of them (last-dim stride 2); gradcheck in f64 on
 * the smooth cases; a NULL in each input position gives TG_ERR_NULL; and every
 * table entry has at least one case. */
#include <stdio.h>
#include <stdlib.h>

#include "npy.h"
#include "tg_ops_test_util.h"
#include "vocab_table.h"

TestSuite(vocab_table, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

typedef struct vcase {
    char op[64], name[32];
    int nin, grad_mask, smooth;
} vcase;

static int read_manifest(vcase *cs, int max) {
    FILE *f = fopen(TGV_FIXTURES "/MANIFEST.txt", "r");
    cr_assert_not_null(f, "no %s/MANIFEST.txt", TGV_FIXTURES);
    int n = 0;
    while (n < max && fscanf(f, "%63s %31s %d %d %d", cs[n].op, cs[n].name, &cs[n].nin,
                             &cs[n].grad_mask, &cs[n].smooth) == 5)
        n++;
    fclose(f);
    cr_assert(n > 0);
    return n;
}

static tg_tensor *fx(const vcase *c, const char *what) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s.%s.npy", TGV_FIXTURES, c->op, c->name, what);
    tg_tensor *t = NULL;
    cr_assert_eq(tgcli_npy_load(path, &t), TG_OK, "%s", tg_last_error());
    return t;
}

/* t's values with the last dim read at stride 2 (a view, detached: a leaf of its own). */
static tg_tensor *strided(tg_tensor *t) {
    if (tg_ndim(t) == 0) return t;
    tg_tensor *u = tg_unsqueeze(t, -1);
    tg_tensor *c = tg_cat(2, (tg_tensor *[]){u, u}, -1);
    tg_tensor *v = tg_detach(tg_squeeze(tg_narrow(c, -1, 0, 1), -1));
    cr_assert_not_null(v, "%s", tg_last_error());
    cr_assert(tg_numel(v) <= 1 || !tg_is_contiguous(v));
    return v;
}

/* Exact for i64 and bool; f64 within 1e-12 relative (floored at 1e-300); NaN for NaN. */
static void assert_equal(const char *what, const tg_tensor *got, const tg_tensor *want) {
    cr_assert_not_null(got, "%s: %s", what, tg_last_error());
    cr_assert_eq(tg_get_dtype(got), tg_get_dtype(want), "%s: dtype %s, PyTorch %s", what,
                 tg_dtype_name(tg_get_dtype(got)), tg_dtype_name(tg_get_dtype(want)));
    cr_assert_eq(tg_ndim(got), tg_ndim(want), "%s: ndim", what);
    for (int d = 0; d < tg_ndim(got); d++)
        cr_assert_eq(tg_shape(got)[d], tg_shape(want)[d], "%s: shape[%d]", what, d);
    int64_t n = tg_numel(want);
    if (tg_get_dtype(want) == TG_I64) {
        int64_t *a = malloc((size_t)(n + 1) * 8), *b = malloc((size_t)(n + 1) * 8);
        cr_assert_eq(tg_copy_out(got, TG_I64, a, (size_t)n * 8), TG_OK);
        cr_assert_eq(tg_copy_out(want, TG_I64, b, (size_t)n * 8), TG_OK);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(a[i], b[i], "%s[%lld]: %lld, PyTorch %lld", what, (long long)i,
                         (long long)a[i], (long long)b[i]);
        free(a);
        free(b);
        return;
    }
    double *a = tgo_values(got), *b = tgo_values(want);
    for (int64_t i = 0; i < n; i++) {
        bool ok = isnan(b[i]) ? isnan(a[i])
                  : isinf(b[i]) ? a[i] == b[i]
                                : fabs(a[i] - b[i]) <= 1e-12 * fmax(fabs(b[i]), 1e-300) + 1e-300;
        if (!ok) {
            double x = a[i], y = b[i];
            free(a);
            free(b);
            cr_assert_fail("%s[%lld]: %.17g, PyTorch %.17g", what, (long long)i, x, y);
        }
    }
    free(a);
    free(b);
}

static void run_case(const vcase *c, const tgv_op *op, bool strided_inputs) {
    int sc = tg_scope_begin();
    tg_tensor *in[4] = {NULL};
    char what[256];
    for (int k = 0; k < c->nin; k++) {
        char nm[16];
        snprintf(nm, sizeof nm, "in%d", k);
        in[k] = fx(c, nm);
        if (strided_inputs) in[k] = strided(in[k]);
        if (c->grad_mask >> k & 1) cr_assert_eq(tg_set_requires_grad(in[k], true), TG_OK);
    }
    tg_clear_error();
    tg_tensor *r = op->fn(in);
    snprintf(what, sizeof what, "%.63s %.31s%s", c->op, c->name, strided_inputs ? " strided" : "");
    assert_equal(what, r, fx(c, "out"));
    if (c->grad_mask) {
        cr_assert(tg_requires_grad(r), "%s: no graph", what);
        cr_assert_eq(tg_backward(r, fx(c, "up"), false), TG_OK, "%s: %s", what, tg_last_error());
        for (int k = 0; k < c->nin; k++) {
            if (!(c->grad_mask >> k & 1)) continue;
            char nm[16], w2[320];
            snprintf(nm, sizeof nm, "grad%d", k);
            snprintf(w2, sizeof w2, "%s: gradient of input %d", what, k);
            assert_equal(w2, tg_grad(in[k]), fx(c, nm));
        }
    } else {
        cr_assert(!r || !tg_requires_grad(r), "%s: a non-differentiable result requires grad", what);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK, "%s", tg_last_error());
}

Test(vocab_table, values_and_gradients_as_pytorch_contiguous_and_strided) {
    static vcase cs[512];
    int n = read_manifest(cs, 512);
    for (int i = 0; i < n; i++) {
        const tgv_op *op = tgv_find(cs[i].op);
        cr_assert_not_null(op, "MANIFEST names %s, which the table lacks", cs[i].op);
        cr_assert_eq(op->nin, cs[i].nin, "%s: %d inputs, MANIFEST says %d", op->name, op->nin,
                     cs[i].nin);
        run_case(&cs[i], op, false);
        run_case(&cs[i], op, true);
    }
    for (int k = 0; k < TGV_N; k++) { /* every entry is checked against PyTorch */
        bool seen = false;
        for (int i = 0; i < n && !seen; i++) seen = !strcmp(cs[i].op, TGV_OPS[k].name);
        cr_assert(seen, "%s has no case in MANIFEST (run tests/vocab/make_fixtures.py)",
                  TGV_OPS[k].name);
    }
}

typedef struct gc_user {
    const tgv_op *op;
    tg_tensor *fixed[4];
    int mask;
} gc_user;

static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    gc_user *u = user;
    tg_tensor *all[4];
    for (int k = 0, j = 0; k < u->op->nin; k++) all[k] = u->mask >> k & 1 ? in[j++] : u->fixed[k];
    return u->op->fn(all);
}

Test(vocab_table, gradcheck_on_the_smooth_cases) {
    static vcase cs[512];
    int n = read_manifest(cs, 512);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (!cs[i].smooth || !cs[i].grad_mask) continue;
        int sc = tg_scope_begin();
        gc_user u = {tgv_find(cs[i].op), {NULL}, cs[i].grad_mask};
        tg_tensor *leaves[4];
        int nl = 0;
        for (int k = 0; k < cs[i].nin; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "in%d", k);
            u.fixed[k] = fx(&cs[i], nm);
            if (u.mask >> k & 1) {
                cr_assert_eq(tg_set_requires_grad(u.fixed[k], true), TG_OK);
                leaves[nl++] = u.fixed[k];
            }
        }
        cr_assert_eq(tg_gradcheck(gc_fn, &u, nl, leaves, NULL), TG_OK, "%s: %s", cs[i].op,
                     tg_last_error());
        checked++;
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
    cr_assert(checked >= 15, "only %d smooth differentiable cases", checked);
}

Test(vocab_table, a_null_input_is_TG_ERR_NULL_in_every_position) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2, 3));
    for (int k = 0; k < TGV_N; k++) {
        for (int pos = 0; pos < TGV_OPS[k].nin; pos++) {
            tg_tensor *in[4] = {x, x, x, x};
            in[pos] = NULL;
            tg_clear_error();
            cr_assert_null(TGV_OPS[k].fn(in), "%s: NULL input %d accepted", TGV_OPS[k].name, pos);
            cr_assert_eq(tg_last_status(), TG_ERR_NULL, "%s, NULL input %d: %s", TGV_OPS[k].name,
                         pos, tg_last_error());
        }
    }
    tg_clear_error();
}

/* The allocation-failure sweep over the table: each case's forward and backward with
 * allocation n failing, n = 1, 2, ... until a run succeeds; every failed run is
 * TG_ERR_NOMEM with no gradient left, and its scope closes with nothing alive. */
Test(vocab_table, every_allocation_failure_is_clean) {
    static vcase cs[512];
    int n = read_manifest(cs, 512);
    for (int i = 0; i < n; i++) {
        const tgv_op *op = tgv_find(cs[i].op);
        bool done = false;
        for (uint64_t f = 1; !done && f < 200; f++) {
            int sc = tg_scope_begin();
            tg_tensor *in[4] = {NULL}, *up = NULL;
            for (int k = 0; k < cs[i].nin; k++) {
                char nm[16];
                snprintf(nm, sizeof nm, "in%d", k);
                in[k] = fx(&cs[i], nm);
                if (cs[i].grad_mask >> k & 1) cr_assert_eq(tg_set_requires_grad(in[k], true), TG_OK);
            }
            if (cs[i].grad_mask) up = fx(&cs[i], "up");
            tg_clear_error();
            tg_fault_inject(f, false);
            tg_tensor *r = op->fn(in);
            tg_status st = r ? TG_OK : tg_last_status();
            if (r && cs[i].grad_mask) st = tg_backward(r, up, false);
            uint64_t fired = tg_fault_inject(0, false);
            if (!fired) {
                cr_assert_eq(st, TG_OK, "%s %s: %s", cs[i].op, cs[i].name, tg_last_error());
                done = true;
            } else {
                cr_assert_eq(st, TG_ERR_NOMEM, "%s %s, allocation %llu: %s", cs[i].op, cs[i].name,
                             (unsigned long long)f, tg_last_error());
                for (int k = 0; k < cs[i].nin; k++)
                    if (cs[i].grad_mask >> k & 1)
                        cr_assert_null(tg_grad(in[k]), "%s: a failed backward left a gradient",
                                       cs[i].op);
            }
            cr_assert_eq(tg_scope_end(sc), TG_OK, "%s", tg_last_error());
            tg_live_counts lc = tg_live();
            cr_assert_eq(lc.nodes, 0, "%s %s: %lld nodes alive", cs[i].op, cs[i].name,
                         (long long)lc.nodes);
        }
        cr_assert(done, "%s %s never succeeded", cs[i].op, cs[i].name);
    }
}
