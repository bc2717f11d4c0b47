/* tests/test_readonly.c - memory marked read-only (tg_mark_read_only): every
 * write the library would make into it is refused before anything is
 * written, with TG_ERR_READONLY naming the op called and the tensor.
 *  - every in-place row of the op registry, on every sample, with its target
 *    over read-only memory that mprotect makes unwritable (a missed check
 *    crashes the test instead of corrupting memory): the target itself, a
 *    view of it, a view that requires grad (the recorded path), the target
 *    as its own operand; a read-only operand is read as any other;
 *  - the flag is the storage's (views, detached tensors, later views), one
 *    way; tg_mark_modified takes it (it writes nothing);
 *  - tg_gradcheck's perturbed inputs, grad_into_logits (in forward, and in
 *    backward when marked after the forward), a .grad marked read-only
 *    (replaced by the sum, never added into). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "registry.h"
#include "tg_ops_test_util.h"

TestSuite(readonly, .init = tgt_setup, .fini = tgt_teardown);

/* ---- read-only memory the test can trust: mprotect'ed pages ----------------------------- */

typedef struct pages {
    void *p;
    size_t n;
} pages;

static void unmap(void *ctx) {
    pages *pg = ctx;
    munmap(pg->p, pg->n);
    free(pg);
}

/* A tensor with src's dtype, shape and values (C order) over pages of its
 * own, marked read-only and then made unwritable: any write faults. */
static tg_tensor *ro_copy(const tg_tensor *src) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t bytes = (size_t)tg_numel(src) * tg_dtype_size(tg_get_dtype(src));
    pages *pg = malloc(sizeof *pg);
    cr_assert_not_null(pg);
    pg->n = (bytes + page - 1) / page * page + page;
    pg->p = mmap(NULL, pg->n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(pg->p != MAP_FAILED);
    if (bytes) cr_assert_eq(tg_copy_out(src, tg_get_dtype(src), pg->p, bytes), TG_OK);
    tg_tensor *t = tg_from_blob(TG_CPU, tg_get_dtype(src), tg_ndim(src), tg_shape(src), NULL,
                                pg->p, unmap, pg);
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert(!tg_is_read_only(t));
    cr_assert_eq(tg_mark_read_only(t), TG_OK);
    cr_assert(tg_is_read_only(t));
    cr_assert_eq(mprotect(pg->p, pg->n, PROT_READ), 0);
    return t;
}

static bool is_float(const tg_tensor *t) {
    return t && (tg_get_dtype(t) == TG_F32 || tg_get_dtype(t) == TG_F64);
}

/* op refuses the target in[0]: TG_ERR_READONLY naming the op and read-only
 * memory, nothing changed, nothing left alive. */
static void expect_refused(const tgr_op *op, const tgr_sample *s, tg_tensor *const *in,
                           const char *how) {
    tgo_snap snap[TGR_MAX_IN];
    for (int k = 0; k < s->nin; k++)
        if (in[k]) snap[k] = tgo_snapshot(in[k]);
    tg_live_counts before = tg_live();
    tg_tensor *out[TGR_MAX_OUT] = {NULL};
    tg_clear_error();
    tg_status st = op->apply(op, in, &s->a, out);
    cr_assert_eq(st, TG_ERR_READONLY, "%s (%s), %s: %s: %s", op->name, s->what, how,
                 tg_status_name(st), tg_last_error());
    const char *m = tg_last_error();
    size_t n = strlen(op->c_name);
    cr_assert(!strncmp(m, op->c_name, n) && m[n] == ':', "%s (%s), %s: the error does not "
              "start with \"%s:\": %s", op->name, s->what, how, op->c_name, m);
    cr_assert(strstr(m, "read-only") && strstr(m, "modified tensor"), "%s: %s", op->name, m);
    tg_live_counts after = tg_live();
    cr_assert(after.tensors == before.tensors && after.nodes == before.nodes,
              "%s (%s), %s: a refused call left %lld tensors, %lld nodes", op->name, s->what,
              how, (long long)(after.tensors - before.tensors),
              (long long)(after.nodes - before.nodes));
    for (int k = 0; k < s->nin; k++)
        if (in[k]) tgo_assert_unchanged(&snap[k]);
    tg_clear_error();
}

/* A view of t with t's shape seen another way: a transpose (2-D and more) or
 * a slice of all of it. */
static tg_tensor *a_view(tg_tensor *t) {
    tg_tensor *v = tg_ndim(t) >= 2   ? tg_transpose(t, 0, 1)
                   : tg_ndim(t) == 1 ? tg_slice(t, 0, 0, tg_shape(t)[0], 1)
                                     : tg_view(t, 0, NULL);
    cr_assert_not_null(v, "%s", tg_last_error());
    return v;
}

static void check_sample(const tgr_op *op, const tgr_sample *s) {
    tg_tensor *ro = ro_copy(s->in[0]);
    tg_tensor *in[TGR_MAX_IN] = {NULL};
    for (int k = 0; k < s->nin; k++) in[k] = s->in[k];
    /* the target itself, grad mode off and on, and with a grad-requiring other */
    in[0] = ro;
    TG_NO_GRAD { expect_refused(op, s, in, "grad off"); }
    expect_refused(op, s, in, "grad on");
    tg_tensor *leaf = NULL;
    if (s->nin > 1 && is_float(s->in[1]) && (op->diff & 2)) {
        leaf = tg_clone(s->in[1]);
        cr_assert_eq(tg_set_requires_grad(leaf, true), TG_OK);
        in[1] = leaf;
        expect_refused(op, s, in, "other requires grad");
        in[1] = s->in[1];
    }
    /* a view of it: the flag is the storage's (checked before the shapes) */
    tg_tensor *v = a_view(ro);
    in[0] = v;
    expect_refused(op, s, in, "a view");
    /* the target as its own operand */
    if (s->nin > 1) {
        in[0] = in[1] = ro;
        expect_refused(op, s, in, "aliasing");
        in[1] = s->in[1];
    }
    tg_release(v);
    tg_release(ro);
    /* a view that requires grad (an in-place op on it would be recorded) of a
     * read-only leaf that requires grad */
    if (is_float(s->in[0])) {
        tg_tensor *rleaf = ro_copy(s->in[0]);
        cr_assert_eq(tg_set_requires_grad(rleaf, true), TG_OK);
        tg_tensor *rv = a_view(rleaf);
        cr_assert(!tg_is_leaf(rv) && tg_is_read_only(rv));
        in[0] = rv;
        expect_refused(op, s, in, "a view requiring grad");
        tg_release(rv);
        tg_release(rleaf);
    }
    tg_release(leaf);
}

/* A read-only operand is only read: the result is the one a plain operand gives. */
static void check_read_only_other(const tgr_op *op, const tgr_sample *s) {
    if (s->nin < 2 || !s->in[1]) return;
    tg_tensor *want[TGR_MAX_OUT], *got[TGR_MAX_OUT];
    cr_assert_eq(tgr_call(op, s, want), TG_OK, "%s (%s): %s", op->name, s->what,
                 tg_last_error());
    tg_tensor *in[TGR_MAX_IN] = {NULL};
    for (int k = 0; k < s->nin; k++) in[k] = s->in[k];
    in[1] = ro_copy(s->in[1]);
    cr_assert_eq(tgr_call_in(op, in, &s->a, got), TG_OK, "%s (%s), a read-only other: %s",
                 op->name, s->what, tg_last_error());
    tgo_assert_same(got[0], want[0], 0);
    tg_release(in[1]);
    for (int k = 0; k < TGR_MAX_OUT; k++) {
        tg_release(want[k]);
        tg_release(got[k]);
    }
}

/* Every in-place row (the registry's rows that write their input 0), every
 * sample but the bad ones, f64 and f32. */
Test(readonly, every_inplace_row_refuses_a_read_only_target) {
    tgr_init();
    int rows = 0;
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (!(op->flags & TGR_INPLACE)) continue;
        rows++;
        for (int d = 0; d < 2; d++) {
            tgr_samples ss;
            tgr_samples_of(op, d ? TG_F32 : TG_F64, &ss);
            for (int k = 0; k < ss.n; k++) {
                if (ss.s[k].flags & TGR_S_BAD) continue;
                check_sample(op, &ss.s[k]);
                check_read_only_other(op, &ss.s[k]);
            }
            tgr_samples_free(&ss);
        }
        tg_live_counts lc = tg_live();
        cr_assert(lc.tensors == 0 && lc.nodes == 0, "%s: %lld tensors, %lld nodes alive",
                  op->name, (long long)lc.tensors, (long long)lc.nodes);
    }
    cr_assert_geq(rows, 8, "the in-place rows: add_ sub_ mul_ div_ pow_ scale_ copy_ fill_");
}

/* ---- the flag --------------------------------------------------------------------------- */

Test(readonly, the_flag_is_the_storages_and_one_way) {
    tg_tensor *x = tg_zeros(TG_F32, TG_SHAPE(2, 3));
    tg_tensor *v = tg_slice(x, 1, 1, 3, 1), *d = tg_detach(x);
    cr_assert(!tg_is_read_only(x) && !tg_is_read_only(v) && !tg_is_read_only(d));
    cr_assert_eq(tg_mark_read_only(v), TG_OK, "%s", tg_last_error());
    cr_assert(tg_is_read_only(x) && tg_is_read_only(v) && tg_is_read_only(d));
    tg_tensor *later = tg_transpose(x, 0, 1);
    cr_assert(tg_is_read_only(later), "a view made later shares the storage");
    cr_assert_eq(tg_mark_read_only(x), TG_OK, "marking twice is fine");
    cr_assert(tg_is_read_only(x));
    /* what is made from it is the library's own memory */
    tg_tensor *c = tg_clone(x), *s = tg_scale(x, 2);
    cr_assert(!tg_is_read_only(c) && !tg_is_read_only(s));
    cr_assert_eq(tg_fill_(c, 1), TG_OK, "%s", tg_last_error());
    /* the refusal names the op and the tensor */
    tg_set_name(x, "weights");
    tg_clear_error();
    cr_assert_eq(tg_fill_(d, 1), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_fill_:", "read-only", "[2, 3] f32", NULL);
    cr_assert_eq(tg_scale_(v, 2), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_scale_:", "read-only", "[2, 2] f32", NULL);
    cr_assert_eq(tg_copy_(x, c), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_copy_:", "tensor 'weights'", NULL);
    /* reading works: a read-only source, operand, saved tensor */
    cr_assert_eq(tg_copy_(c, x), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_add_(c, v), TG_ERR_SHAPE, "other [2, 2] into [2, 3]: the shape error");
    tg_clear_error();
    TGO_RELEASE(x, v, d, later, c, s);
}

Test(readonly, null_and_status_name) {
    cr_assert(!tg_is_read_only(NULL));
    tg_clear_error();
    cr_assert_eq(tg_mark_read_only(NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "tg_mark_read_only:", NULL);
    /* NULL propagation: a pending error is kept */
    tg_set_error(TG_ERR_SHAPE, "earlier");
    cr_assert_eq(tg_mark_read_only(NULL), TG_ERR_SHAPE);
    cr_assert_str_eq(tg_last_error(), "earlier");
    tg_clear_error();
    cr_assert_str_eq(tg_status_name(TG_ERR_READONLY), "TG_ERR_READONLY");
}

/* tg_mark_modified writes nothing: the memory's owner may change read-only
 * memory (a memmap another process writes), and a graph that saved it must
 * then refuse it. */
Test(readonly, mark_modified_takes_read_only_memory) {
    double buf[3] = {1, 2, 3};
    tg_tensor *x = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(3), NULL, buf, NULL, NULL);
    cr_assert_eq(tg_mark_read_only(x), TG_OK);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *m = tg_mul(x, x), *l = tg_sum(m); /* saves x */
    buf[0] = 5; /* the owner writes */
    uint64_t v0 = tg_version(x);
    cr_assert_eq(tg_mark_modified(x, "owner write"), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_version(x), v0 + 1);
    tg_clear_error();
    cr_assert_eq(tg_backward(l, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "owner write", NULL);
    tg_clear_error();
    TGO_RELEASE(x, m, l);
}

/* ---- the other writes into existing memory ---------------------------------------------- */

static tg_tensor *sum_sq(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *sq = tg_mul(in[0], in[1]), *s = tg_sum(sq);
    tg_release(sq);
    return s;
}

/* tg_gradcheck perturbs its inputs that require grad in place: a read-only one
 * is refused before anything is perturbed; one that does not require grad is
 * only read. */
Test(readonly, gradcheck_refuses_a_read_only_input_it_would_perturb) {
    tg_tensor *a = tg_from_data(TG_F64, TG_SHAPE(3), (double[]){1, 2, 3});
    tg_tensor *b = tg_from_data(TG_F64, TG_SHAPE(3), (double[]){4, 5, 6});
    tg_tensor *ra = ro_copy(a), *rb = ro_copy(b);
    cr_assert_eq(tg_set_requires_grad(ra, true), TG_OK);
    tg_tensor *in[2] = {ra, b};
    tg_clear_error();
    cr_assert_eq(tg_gradcheck(sum_sq, NULL, 2, in, NULL), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_gradcheck:", "input 0", "perturbs", NULL);
    cr_assert_eq(tg_set_requires_grad(a, true), TG_OK);
    in[0] = a;
    in[1] = rb; /* read only */
    cr_assert_eq(tg_gradcheck(sum_sq, NULL, 2, in, NULL), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(a, b, ra, rb);
}

/* grad_into_logits writes the gradient over the logits: logits on read-only
 * memory are refused by the forward; logits marked after the forward are
 * refused by the backward, with nothing written and no .grad changed. */
Test(readonly, grad_into_logits_never_writes_read_only_logits) {
    tg_logprob_opts o = tg_logprob_opts_default();
    o.grad_into_logits = true;
    o.want_entropy = false;
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){1, 3});
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(2, 4), 6, 0, 1);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    /* logits made by an op, then marked */
    tg_tensor *z = tg_scale(w, 2), *lp = NULL;
    cr_assert_eq(tg_mark_read_only(z), TG_OK);
    tgo_snap before = tgo_snapshot(z);
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_logprob_entropy:", "grad_into_logits", "read-only",
                     NULL);
    cr_assert_null(lp);
    tgo_assert_unchanged(&before);
    /* on unwritable pages: a view of a read-only leaf (refused as any view of a leaf) */
    tg_tensor *src = tg_randn(TG_F64, TG_SHAPE(8), 5, 0, 1);
    tg_tensor *x = ro_copy(src);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *xv = tg_view(x, TG_SHAPE(2, 4));
    cr_assert_neq(tg_logprob_entropy(xv, y, &o, &lp, NULL), TG_OK);
    cr_assert_null(lp);
    tg_clear_error();
    /* marked after the forward */
    tg_tensor *z2 = tg_scale(w, 2);
    cr_assert_eq(tg_logprob_entropy(z2, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *l = tg_sum(lp);
    cr_assert_eq(tg_mark_read_only(z2), TG_OK);
    tgo_snap snap = tgo_snapshot(z2);
    tg_clear_error();
    cr_assert_eq(tg_backward(l, NULL, true), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_backward:", "LogprobEntropyBackward",
                     "grad_into_logits", "read-only", NULL);
    tgo_assert_unchanged(&snap);
    tg_tensor *g = tg_grad(w);
    cr_assert_null(g, "a failed backward changed .grad");
    tg_clear_error();
    TGO_RELEASE(y, src, x, xv, z, w, z2, lp, l);
}

/* A leaf's .grad marked read-only: the next backward gives the leaf a new
 * .grad holding the sum instead of adding into the marked one. */
Test(readonly, a_read_only_grad_is_replaced_never_added_into) {
    tg_tensor *x = tg_from_data(TG_F64, TG_SHAPE(3), (double[]){1, 2, 3});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *l = tg_sum(x);
    cr_assert_eq(tg_backward(l, NULL, true), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x);
    const void *p = tg_data(g);
    cr_assert_eq(tg_mark_read_only(g), TG_OK);
    tg_release(g); /* .grad is the leaf's alone now: it would be added into */
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    g = tg_grad(x);
    cr_assert_neq(tg_data(g), p, "the read-only .grad was added into in place");
    cr_assert(!tg_is_read_only(g));
    TGO_ASSERT_VALUES(g, 0, 2, 2, 2);
    TGO_RELEASE(x, l, g);
}
