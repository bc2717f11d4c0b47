/* tests/test_op_table.c - every op of the library's unary op table
 * (ops/unary.c), tested from the table alone: an op added there is covered
 * here (and on the device in test_backends.c) without editing a test.
 *
 * For each op: the forward against the table's double reference, in f32
 * and f64, on contiguous, transposed and strided inputs, at sizes that reach
 * the tiled transposed path (>= 1024 elements) and the threaded one
 * (>= 32768); special values (NaN, +-inf, +-0) through the kernel exactly as
 * through the reference; the gradient against central differences
 * (tg_gradcheck, f64, contiguous and strided); what is saved for backward,
 * in exact bytes; the error paths; and an allocation-failure sweep of a
 * recorded forward and backward. */
#include "tg_ops_test_util.h"

#include "../ops/ops_internal.h"

TestSuite(op_table, .init = tgt_setup, .fini = tgt_teardown);

/* The op on t through its public function. */
static tg_tensor *apply(const tg__unary_info *u, tg_tensor *t) {
    tg_site s = TG_SITE;
    switch (u->nparams) {
    case 0: return u->fn0(s, t);
    case 1: return u->fn1(s, t, u->test_params[0]);
    default: return u->fn2(s, t, u->test_params[0], u->test_params[1]);
    }
}

static double ref(const tg__unary_info *u, double x) {
    return u->ref(x, u->test_params[0], u->test_params[1]);
}

enum { CONTIG, TRANSPOSED, STRIDED, NLAYOUT };
static const char *const layout_name[NLAYOUT] = {"contiguous", "transposed", "strided"};

/* A (rows, cols) input in the op's range with the given layout (a view of a
 * bigger tensor for TRANSPOSED and STRIDED). */
static tg_tensor *input(const tg__unary_info *u, tg_dtype dt, int layout, int64_t rows,
                        int64_t cols, uint64_t seed) {
    if (layout == CONTIG) return tg_rand(dt, TG_SHAPE(rows, cols), seed, u->lo, u->hi);
    if (layout == TRANSPOSED) {
        tg_tensor *b = tg_rand(dt, TG_SHAPE(cols, rows), seed, u->lo, u->hi);
        tg_tensor *t = tg_transpose(b, 0, 1);
        tg_release(b);
        return t;
    }
    tg_tensor *b = tg_rand(dt, TG_SHAPE(rows, 2 * cols), seed, u->lo, u->hi);
    tg_tensor *t = tg_slice(b, 1, 1, 2 * cols, 2);
    tg_release(b);
    return t;
}

/* |got - want| within rtol relative (absolute below 1); NaN = NaN, infs equal. */
static bool close_to(double got, double want, double rtol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= rtol * (fabs(want) > 1 ? fabs(want) : 1);
}

static void check_forward(const tg__unary_info *u, tg_dtype dt, int layout, int64_t rows,
                          int64_t cols) {
    tg_tensor *x = input(u, dt, layout, rows, cols, 7 + (uint64_t)rows);
    cr_assert_not_null(x, "%s", tg_last_error());
    tg_tensor *y = apply(u, x);
    cr_assert_not_null(y, "%s (%s %s [%lld, %lld]): %s", u->name, tg_dtype_name(dt),
                       layout_name[layout], (long long)rows, (long long)cols, tg_last_error());
    cr_assert(tg_is_contiguous(y));
    cr_assert_eq(tg_get_dtype(y), dt);
    double *xv = tgo_values(x), *yv = tgo_values(y);
    double rtol = dt == TG_F32 ? 4e-7 : 1e-15;
    for (int64_t i = 0; i < rows * cols; i++) {
        double want = ref(u, xv[i]);
        if (dt == TG_F32) want = (float)want;
        cr_assert(close_to(yv[i], want, rtol), "%s (%s %s [%lld, %lld]) element %lld: %.17g "
                  "for %.17g, reference %.17g", u->name, tg_dtype_name(dt), layout_name[layout],
                  (long long)rows, (long long)cols, (long long)i, yv[i], xv[i], want);
    }
    free(xv);
    free(yv);
    TGO_RELEASE(x, y);
}

Test(op_table, forward_against_the_reference) {
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {40, 40}, {200, 200}};
    for (int k = 0; k < tg__n_unary; k++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < NLAYOUT; l++)
                for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
                    check_forward(&tg__unary_table[k], d ? TG_F64 : TG_F32, l, sizes[z][0],
                                  sizes[z][1]);
}

Test(op_table, special_values_as_the_reference) {
    const double sv[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-300, -1e300, 1.0};
    const int64_t n = sizeof sv / sizeof sv[0];
    for (int k = 0; k < tg__n_unary; k++) {
        const tg__unary_info *u = &tg__unary_table[k];
        for (int d = 0; d < 2; d++) {
            tg_dtype dt = d ? TG_F64 : TG_F32;
            tg_tensor *x = tgo_make(dt, 1, &n, sv), *y = apply(u, x);
            cr_assert_not_null(y, "%s: %s", u->name, tg_last_error());
            double *xv = tgo_values(x), *yv = tgo_values(y);
            for (int64_t i = 0; i < n; i++) {
                double want = ref(u, xv[i]);
                if (dt == TG_F32) want = (float)want;
                cr_assert(close_to(yv[i], want, dt == TG_F32 ? 4e-7 : 1e-15) &&
                              (isnan(want) || signbit(yv[i]) == signbit(want) || want != 0),
                          "%s (%s) of %g: %.17g, reference %.17g", u->name, tg_dtype_name(dt),
                          xv[i], yv[i], want);
            }
            free(xv);
            free(yv);
            TGO_RELEASE(x, y);
        }
    }
}

/* tg_gradcheck's function: the op on input 0 after `layout`'s transform. */
typedef struct {
    const tg__unary_info *u;
    int layout;
} gc_case;

static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    const gc_case *c = user;
    tg_tensor *t = c->layout == TRANSPOSED ? tg_transpose(in[0], 0, 1)
                   : c->layout == STRIDED  ? tg_slice(in[0], 1, 0, INT64_MAX, 2)
                                           : tg_retain(in[0]);
    tg_tensor *y = apply(c->u, t);
    tg_release(t);
    return y;
}

Test(op_table, gradient_against_central_differences) {
    for (int k = 0; k < tg__n_unary; k++)
        for (int l = 0; l < NLAYOUT; l++) {
            const tg__unary_info *u = &tg__unary_table[k];
            tg_tensor *x = tg_rand(TG_F64, TG_SHAPE(4, 6), 3 + (uint64_t)k, u->lo, u->hi);
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            gc_case c = {u, l};
            tg_clear_error();
            cr_assert_eq(tg_gradcheck(gc_fn, &c, 1, &x, NULL), TG_OK, "%s (%s): %s", u->name,
                         layout_name[l], tg_last_error());
            TGO_RELEASE(x);
        }
}

/* At kinks, ties with a bound and zeros of a root the gradient is a
 * convention: PyTorch's (the table's pairs), exactly, in f32 and f64. */
Test(op_table, gradient_at_kinks_as_pytorch) {
    for (int k = 0; k < tg__n_unary; k++) {
        const tg__unary_info *u = &tg__unary_table[k];
        cr_assert(u->nkinks >= 1 && u->nkinks <= 4, "%s: %d kinks", u->name, u->nkinks);
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < u->nkinks; i++) {
                tg_dtype dt = d ? TG_F64 : TG_F32;
                const int64_t one = 1;
                tg_tensor *x = tgo_make(dt, 1, &one, &u->kinks[i][0]);
                cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
                tg_tensor *y = apply(u, x), *l = tg_sum(y);
                tg_clear_error();
                cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s: %s", u->name,
                             tg_last_error());
                tg_tensor *g = tg_grad(x);
                double got, want = u->kinks[i][1];
                cr_assert_eq(tg_item(g, &got), TG_OK);
                if (dt == TG_F32) want = (float)want;
                cr_assert(close_to(got, want, dt == TG_F32 ? 4e-7 : 1e-15) &&
                              signbit(got) == signbit(want),
                          "%s (%s): gradient at %g is %.17g, PyTorch's %.17g", u->name,
                          tg_dtype_name(dt), u->kinks[i][0], got, want);
                TGO_RELEASE(x, y, l, g);
            }
    }
}

/* tg_gelu's approximate is one of two values. */
Test(op_table, gelu_refuses_an_unknown_approximation) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    tg_clear_error();
    cr_assert_null(tg_gelu(x, (tg_gelu_approx)2));
    tgt_assert_error(TG_ERR_VALUE, "tg_gelu", "approximate", NULL);
    TGO_RELEASE(x);
}

/* What backward keeps: nothing under no-grad; the input or the output (one
 * storage's bytes) or nothing, as the formula list says, with grad on; and
 * the node is the table's. */
Test(op_table, saved_bytes_follow_the_formula_list) {
    for (int k = 0; k < tg__n_unary; k++) {
        const tg__unary_info *u = &tg__unary_table[k];
        tg_tensor *x = tg_rand(TG_F64, TG_SHAPE(8, 16), 5, u->lo, u->hi), *y = NULL;
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_mem_stats m;
        TG_NO_GRAD { y = apply(u, x); }
        cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
        cr_assert_eq(m.saved, 0, "%s saved %zu bytes under no-grad", u->name, (size_t)m.saved);
        cr_assert(!tg_requires_grad(y));
        TGO_RELEASE(y);
        y = apply(u, x);
        cr_assert_str_eq(tg_grad_fn_name(y), u->def.name);
        cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
        size_t want = u->saves == TG__SAVES_NONE ? 0 : 8 * 16 * sizeof(double);
        cr_assert_eq(m.saved, want, "%s: %zu saved bytes, expected %zu", u->name, (size_t)m.saved,
                     want);
        TGO_RELEASE(x, y);
    }
}

Test(op_table, error_paths) {
    for (int k = 0; k < tg__n_unary; k++) {
        const tg__unary_info *u = &tg__unary_table[k];
        /* NULL propagates and keeps the first error */
        tg_clear_error();
        cr_assert_null(apply(u, NULL));
        tgt_assert_error(TG_ERR_NULL, u->name, NULL);
        tg_set_error(TG_ERR_SHAPE, "earlier");
        cr_assert_null(apply(u, NULL));
        tgt_assert_error(TG_ERR_SHAPE, "earlier", NULL);
        /* integer input: the ops with an i64 form (PyTorch's integer arithmetic,
         * ops/intarith.c) compute it exactly, the others refuse it */
        int64_t iv[3] = {-2, 0, 3};
        tg_tensor *i = tg_from_data(TG_I64, TG_SHAPE(3), iv);
        tg_clear_error();
        tg_tensor *r = apply(u, i);
        bool int_form = u->code == TG__UN_NEG || u->code == TG__UN_ABS || u->code == TG__UN_SIGN ||
                        u->code == TG__UN_SQUARE || u->code == TG__UN_SCALE ||
                        u->code == TG__UN_ADDS || u->code == TG__UN_FLOOR ||
                        u->code == TG__UN_CEIL || u->code == TG__UN_ROUND || u->code == TG__UN_CLAMP;
        if (!int_form) {
            cr_assert_null(r, "%s accepted an i64 tensor", u->name);
            tgt_assert_error(TG_ERR_DTYPE, u->name, "i64", NULL);
        } else if (!r) { /* a non-integer parameter */
            tgt_assert_error(TG_ERR_VALUE, u->name, "not an integer", NULL);
        } else {
            cr_assert_eq(tg_get_dtype(r), TG_I64, "%s", u->name);
            cr_assert(!tg_requires_grad(r));
            for (int j = 0; j < 3; j++)
                cr_assert_eq(tgt_at(r, j), ref(u, (double)iv[j]), "%s(%lld): %g, expected %g",
                             u->name, (long long)iv[j], tgt_at(r, j), ref(u, (double)iv[j]));
        }
        TGO_RELEASE(i, r);
        /* a CUDA tensor where there is no device is refused before any kernel */
        if (tg_cuda_device_count() == 0) {
            tg_tensor *c = tg_ones(TG_F32, TG_SHAPE(2));
            tg_tensor *d = tg_to_device(c, TG_CUDA);
            cr_assert_null(d);
            tgt_assert_error(TG_ERR_DEVICE, NULL);
            TGO_RELEASE(c);
        }
    }
}

/* Every allocation of a recorded forward and its backward fails in turn:
 * each failure is TG_ERR_NOMEM, leaves nothing behind and no gradient. */
Test(op_table, allocation_failure_sweep) {
    for (int k = 0; k < tg__n_unary; k++) {
        const tg__unary_info *u = &tg__unary_table[k];
        bool done = false;
        for (uint64_t n = 1; !done && n < 64; n++) {
            tg_tensor *x = tg_rand(TG_F64, TG_SHAPE(3, 4), 9, u->lo, u->hi);
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            tg_clear_error();
            tg_fault_inject(n, false);
            tg_tensor *y = apply(u, x), *l = y ? tg_sum(y) : NULL;
            tg_status st = l ? tg_backward(l, NULL, false) : tg_last_status();
            uint64_t injected = tg_fault_inject(0, false);
            tg_tensor *g = tg_grad(x);
            if (injected == 0) {
                cr_assert_eq(st, TG_OK, "%s: %s", u->name, tg_last_error());
                cr_assert_not_null(g);
                done = true;
            } else {
                cr_assert_eq(st, TG_ERR_NOMEM, "%s, allocation %llu: %s", u->name,
                             (unsigned long long)n, tg_last_error());
                cr_assert_null(g, "%s: a failed backward left a gradient", u->name);
            }
            TGO_RELEASE(x, y, l, g);
            tgt_assert_nothing_live();
        }
        cr_assert(done, "%s never succeeded", u->name);
    }
}
