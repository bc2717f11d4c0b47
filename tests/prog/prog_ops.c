/* tests/prog/prog_ops.c - the instruction set of op programs: one descriptor
 * per instruction (name, registers, fields and their text keys), made from
 * the op registry for the ops and written here for the control
 * instructions, the program container, and the three custom functions
 * (fn_square, fn_exp, fn_mulsub) the programs apply with tg_function_apply.
 *
 * Contract: the descriptors are the single source for the text printer and
 * parser (prog_text.c), the byte decoder and the executor (prog.c); op names
 * are the registry's, whose manifest tests/diff reads. */
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "prog_internal.h"

#define I(k) (k)
#define F(k) (10 + (k))

/* name, ndst, nsrc, nsrc_required, dtype, shape, vals, c_only, keys, slots */
static const tgp_op_desc g_control[TGP_NCONTROL] = {
    [TGP_REQUIRES_GRAD] = {"requires_grad", 0, 1, 1, false, false, false, false, {"on", NULL},
                           {I(0)}},
    [TGP_GRAD_MODE] = {"grad_mode", 0, 0, 0, false, false, false, false, {"on", NULL}, {I(0)}},
    [TGP_BACKWARD] = {"backward", 0, 2, 1, false, false, false, false, {"retain", NULL}, {I(0)}},
    [TGP_GRAD] = {"grad", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_ZERO_GRAD] = {"zero_grad", 0, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_SQUARE] = {"fn_square", 1, 1, 1, false, false, false, false, {"fail", NULL}, {I(0)}},
    [TGP_CEXP] = {"fn_exp", 1, 1, 1, false, false, false, false, {"fail", NULL}, {I(0)}},
    [TGP_MULSUB] = {"fn_mulsub", 2, 2, 2, false, false, false, false, {"fail", NULL}, {I(0)}},
    [TGP_SCOPE_BEGIN] = {"scope_begin", 0, 0, 0, false, false, false, true, {NULL}, {0}},
    [TGP_SCOPE_END] = {"scope_end", 0, 0, 0, false, false, false, true, {"bad", NULL}, {I(0)}},
    [TGP_SCOPE_KEEP] = {"scope_keep", 0, 1, 0, false, false, false, true, {NULL}, {0}},
    [TGP_RELEASE] = {"release", 0, 1, 0, false, false, false, true, {NULL}, {0}},
    [TGP_LEAK_SCAN] = {"leak_scan", 0, 0, 0, false, false, false, true, {NULL}, {0}},
    [TGP_STEP_MARK] = {"step_mark", 0, 0, 0, false, false, false, true, {NULL}, {0}},
    [TGP_FAULT] = {"fault", 0, 0, 0, false, false, false, true, {"n", "persistent", NULL},
                   {I(0), I(1)}},
    [TGP_PRINT] = {"print", 0, 1, 1, false, false, false, true, {NULL}, {0}},
    [TGP_DOT] = {"dot", 0, 3, 0, false, false, false, true, {NULL}, {0}},
};

/* The descriptors of the control instructions, then one per registry row: its
 * name, outputs (none for an in-place op), inputs and parameters. */
static tgp_op_desc *g_all;
static int g_nall;

static void init_descs(void) {
    if (g_all) return;
    tgr_init();
    g_nall = TGP_NCONTROL + tgr_nops;
    g_all = calloc((size_t)g_nall, sizeof *g_all);
    if (!g_all) abort(); /* the test program's own memory */
    memcpy(g_all, g_control, sizeof g_control);
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *row = tgr_ops[i];
        tgp_op_desc *d = &g_all[TGP_NCONTROL + i];
        d->name = row->name;
        d->ndst = row->flags & TGR_INPLACE ? 0 : row->nout;
        d->nsrc = row->nin;
        d->nsrc_required = row->nin_required;
        int nk = 0;
        for (int k = 0; k < row->nparams; k++) {
            const tgr_param *q = &row->p[k];
            switch (q->kind) {
            case TGR_P_DTYPE: d->has_dtype = true; break;
            case TGR_P_SHAPE: case TGR_P_DIMS: d->has_shape = true; break;
            case TGR_P_VALS: d->has_vals = true; break;
            case TGR_P_REAL:
                d->keys[nk] = q->name;
                d->slots[nk++] = F(q->slot);
                break;
            default:
                d->keys[nk] = q->name;
                d->slots[nk++] = I(q->slot);
                break;
            }
        }
        d->keys[nk] = NULL;
    }
}

int tgp_nops(void) {
    init_descs();
    return g_nall;
}

const tgr_op *tgp_row(int op) {
    init_descs();
    return op >= TGP_NCONTROL && op < g_nall ? tgr_ops[op - TGP_NCONTROL] : NULL;
}

const tgp_op_desc *tgp_op_desc_get(int op) {
    init_descs();
    if (op < 0 || op >= g_nall) return NULL;
    return &g_all[op];
}

int tgp_op_by_name(const char *name) {
    init_descs();
    for (int i = 0; i < g_nall; i++)
        if (strcmp(g_all[i].name, name) == 0) return i;
    return -1;
}

tgp_insn tgp_insn_init(int op) {
    tgp_insn in;
    memset(&in, 0, sizeof in);
    in.op = op;
    in.dst[0] = in.dst[1] = in.dst[2] = TGP_NONE;
    for (int k = 0; k < TGR_MAX_IN; k++) in.src[k] = TGP_NONE;
    in.dtype = TG_F64;
    return in;
}

bool tgp_push(tgp_prog *p, const tgp_insn *in) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        tgp_insn *ni = realloc(p->insns, (size_t)cap * sizeof *ni);
        if (!ni) return false;
        p->insns = ni;
        p->cap = cap;
    }
    p->insns[p->n++] = *in;
    return true;
}

void tgp_free(tgp_prog *p) {
    free(p->insns);
    p->insns = NULL;
    p->n = p->cap = 0;
}

/* ---- custom functions ------------------------------------------------------------------- */

/* fail: 0 none, 1 forward refuses (TG_ERR_VALUE), 2 backward refuses. */
static const int g_fail_modes[3] = {0, 1, 2};

const void *tgp__fail_mode(int64_t fail) {
    return &g_fail_modes[fail == 1 ? 1 : fail == 2 ? 2 : 0];
}

/* The status of a failed library call made by a callback. */
static tg_status failed(void) {
    tg_status st = tg_last_status();
    return st == TG_OK ? TG_ERR_INTERNAL : st;
}

/* square: y = x * x, saves x; dx = 2 x g. */
static tg_status sq_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                        tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    if (*(const int *)user == 1) return tg_ctx_fail(ctx, TG_ERR_VALUE, "square: forward refused");
    if (tg_ctx_save(ctx, in[0]) < 0) return failed();
    out[0] = tg_mul(in[0], in[0]);
    return out[0] ? TG_OK : failed();
}

static tg_status sq_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                        tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    if (*(const int *)user == 2) return tg_ctx_fail(ctx, TG_ERR_VALUE, "square: backward refused");
    if (!tg_ctx_needs_input_grad(ctx, 0)) return TG_OK;
    tg_tensor *x = tg_ctx_saved(ctx, 0);
    if (!x) return failed();
    tg_tensor *x2 = tg_scale(x, 2.0);
    tg_release(x);
    if (!x2) return failed();
    gin[0] = tg_mul(x2, gout[0]);
    tg_release(x2);
    return gin[0] ? TG_OK : failed();
}

/* cexp: y = exp(x), saves its output y; dx = y g. */
static tg_status ce_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                        tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    if (*(const int *)user == 1) return tg_ctx_fail(ctx, TG_ERR_VALUE, "cexp: forward refused");
    out[0] = tg_exp(in[0]);
    if (!out[0]) return failed();
    if (tg_ctx_save(ctx, out[0]) < 0) {
        tg_status st = failed();
        tg_release(out[0]);
        out[0] = NULL;
        return st;
    }
    return TG_OK;
}

static tg_status ce_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                        tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    if (*(const int *)user == 2) return tg_ctx_fail(ctx, TG_ERR_VALUE, "cexp: backward refused");
    if (!tg_ctx_needs_input_grad(ctx, 0)) return TG_OK;
    tg_tensor *y = tg_ctx_saved(ctx, 0);
    if (!y) return failed();
    gin[0] = tg_mul(y, gout[0]);
    tg_release(y);
    return gin[0] ? TG_OK : failed();
}

/* mulsub: (a * b, a - b) for a and b of one shape, saves both;
 * da = g0 b + g1, db = g0 a - g1. */
static tg_status ms_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                        tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    if (*(const int *)user == 1) return tg_ctx_fail(ctx, TG_ERR_VALUE, "mulsub: forward refused");
    int nd = tg_ndim(in[0]);
    if (nd != tg_ndim(in[1]) ||
        memcmp(tg_shape(in[0]), tg_shape(in[1]), (size_t)nd * sizeof(int64_t)) != 0)
        return tg_ctx_fail(ctx, TG_ERR_SHAPE, "mulsub: the inputs' shapes differ");
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, in[1]) < 0) return failed();
    out[0] = tg_mul(in[0], in[1]);
    if (!out[0]) return failed();
    out[1] = tg_sub(in[0], in[1]);
    if (!out[1]) {
        tg_status st = failed();
        tg_release(out[0]);
        out[0] = NULL;
        return st;
    }
    return TG_OK;
}

static tg_status ms_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                        tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    if (*(const int *)user == 2) return tg_ctx_fail(ctx, TG_ERR_VALUE, "mulsub: backward refused");
    for (int i = 0; i < 2; i++) {
        if (!tg_ctx_needs_input_grad(ctx, i)) continue;
        tg_tensor *other = tg_ctx_saved(ctx, 1 - i);
        if (!other) return failed();
        tg_tensor *t = tg_mul(gout[0], other);
        tg_release(other);
        if (!t) return failed();
        gin[i] = i == 0 ? tg_add(t, gout[1]) : tg_sub(t, gout[1]);
        tg_release(t);
        if (!gin[i]) return failed();
    }
    return TG_OK;
}

static const tg_function g_square = {"SquareBackward", sq_fwd, sq_bwd};
static const tg_function g_cexp = {"CexpBackward", ce_fwd, ce_bwd};
static const tg_function g_mulsub = {"MulsubBackward", ms_fwd, ms_bwd};

const tg_function *tgp__custom_fn(int op) {
    switch (op) {
    case TGP_SQUARE: return &g_square;
    case TGP_CEXP: return &g_cexp;
    case TGP_MULSUB: return &g_mulsub;
    }
    return NULL;
}
