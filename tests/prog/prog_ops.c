/* tests/prog/prog_ops.c - the instruction set of op programs: one descriptor
 * per op (name, registers, fields and their text keys), the program container,
 * and the three custom functions (square, cexp, mulsub) the programs apply
 * with tg_function_apply.
 *
 * Contract: the table is the single source for the text printer and parser
 * (prog_text.c), the byte decoder and the executor (prog.c); op names are the
 * ones tests/diff/tg_diff.py maps to PyTorch. */
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "prog_internal.h"

#define I(k) (k)
#define F(k) (10 + (k))

/* name, ndst, nsrc, nsrc_required, dtype, shape, vals, c_only, keys, slots */
static const tgp_op_desc g_ops[TGP_NOPS] = {
    [TGP_ZEROS] = {"zeros", 1, 0, 0, true, true, false, false, {NULL}, {0}},
    [TGP_ONES] = {"ones", 1, 0, 0, true, true, false, false, {NULL}, {0}},
    [TGP_FULL] = {"full", 1, 0, 0, true, true, false, false, {"value", NULL}, {F(0)}},
    [TGP_RANDN] = {"randn", 1, 0, 0, true, true, false, false, {"seed", "mean", "std", NULL},
                   {I(0), F(0), F(1)}},
    [TGP_RAND] = {"rand", 1, 0, 0, true, true, false, false, {"seed", "lo", "hi", NULL},
                  {I(0), F(0), F(1)}},
    [TGP_ARANGE] = {"arange", 1, 0, 0, true, false, false, false, {"start", "end", "step", NULL},
                    {F(0), F(1), F(2)}},
    [TGP_FROM_DATA] = {"from_data", 1, 0, 0, true, true, true, false, {NULL}, {0}},
    [TGP_REQUIRES_GRAD] = {"requires_grad", 0, 1, 1, false, false, false, false, {"on", NULL},
                           {I(0)}},
    [TGP_GRAD_MODE] = {"grad_mode", 0, 0, 0, false, false, false, false, {"on", NULL}, {I(0)}},
    [TGP_BACKWARD] = {"backward", 0, 2, 1, false, false, false, false, {"retain", NULL}, {I(0)}},
    [TGP_GRAD] = {"grad", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_ZERO_GRAD] = {"zero_grad", 0, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_DETACH] = {"detach", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_SLICE] = {"slice", 1, 1, 1, false, false, false, false,
                   {"dim", "start", "end", "step", NULL}, {I(0), I(1), I(2), I(3)}},
    [TGP_VIEW] = {"view", 1, 1, 1, false, true, false, false, {NULL}, {0}},
    [TGP_RESHAPE] = {"reshape", 1, 1, 1, false, true, false, false, {NULL}, {0}},
    [TGP_TRANSPOSE] = {"transpose", 1, 1, 1, false, false, false, false, {"d0", "d1", NULL},
                       {I(0), I(1)}},
    [TGP_EXPAND] = {"expand", 1, 1, 1, false, true, false, false, {NULL}, {0}},
    [TGP_CONTIGUOUS] = {"contiguous", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_CLONE] = {"clone", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_TO_DTYPE] = {"to_dtype", 1, 1, 1, true, false, false, false, {NULL}, {0}},
    [TGP_ADD] = {"add", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_SUB] = {"sub", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_MUL] = {"mul", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_DIV] = {"div", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_MAXIMUM] = {"maximum", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_MINIMUM] = {"minimum", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_WHERE] = {"where", 1, 3, 3, false, false, false, false, {NULL}, {0}},
    [TGP_NEG] = {"neg", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_EXP] = {"exp", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_LOG] = {"log", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_SCALE] = {"scale", 1, 1, 1, false, false, false, false, {"k", NULL}, {F(0)}},
    [TGP_ADD_SCALAR] = {"add_scalar", 1, 1, 1, false, false, false, false, {"k", NULL}, {F(0)}},
    [TGP_CLAMP] = {"clamp", 1, 1, 1, false, false, false, false, {"lo", "hi", NULL},
                   {F(0), F(1)}},
    [TGP_SUM] = {"sum", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_MEAN] = {"mean", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_SUM_DIM] = {"sum_dim", 1, 1, 1, false, false, false, false, {"dim", "keepdim", NULL},
                     {I(0), I(1)}},
    [TGP_MEAN_DIM] = {"mean_dim", 1, 1, 1, false, false, false, false, {"dim", "keepdim", NULL},
                      {I(0), I(1)}},
    [TGP_MATMUL] = {"matmul", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_SOFTMAX] = {"softmax", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_LOG_SOFTMAX] = {"log_softmax", 1, 1, 1, false, false, false, false, {NULL}, {0}},
    [TGP_GATHER] = {"gather", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_LOGPROB] = {"logprob", 2, 2, 2, false, false, false, false,
                     {"impl", "T", "ignore", "chunk", "entropy", "egrad", NULL},
                     {I(0), F(0), I(1), I(2), I(3), I(4)}},
    [TGP_ADD_] = {"add_", 0, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_SUB_] = {"sub_", 0, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_MUL_] = {"mul_", 0, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_SCALE_] = {"scale_", 0, 1, 1, false, false, false, false, {"k", NULL}, {F(0)}},
    [TGP_COPY_] = {"copy_", 0, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_FILL_] = {"fill_", 0, 1, 1, false, false, false, false, {"value", NULL}, {F(0)}},
    [TGP_SQUARE] = {"square", 1, 1, 1, false, false, false, false, {"fail", NULL}, {I(0)}},
    [TGP_CEXP] = {"cexp", 1, 1, 1, false, false, false, false, {"fail", NULL}, {I(0)}},
    [TGP_MULSUB] = {"mulsub", 2, 2, 2, false, false, false, false, {"fail", NULL}, {I(0)}},
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
#define UN(NAME, name) [TGP_##NAME] = {name, 1, 1, 1, false, false, false, false, {NULL}, {0}}
    UN(RSQRT, "rsqrt"), UN(ABS, "abs"), UN(SIGN, "sign"), UN(SQUARE_OP, "square_op"),
    [TGP_POW_SCALAR] = {"pow_scalar", 1, 1, 1, false, false, false, false, {"e", NULL}, {F(0)}},
    UN(LOG1P, "log1p"), UN(EXPM1, "expm1"), UN(SIGMOID, "sigmoid"),
    UN(LOGSIGMOID, "logsigmoid"),
    [TGP_SOFTPLUS] = {"softplus", 1, 1, 1, false, false, false, false, {"beta", "threshold", NULL},
                      {F(0), F(1)}},
    UN(TANH, "tanh"), UN(RELU, "relu"),
    [TGP_GELU] = {"gelu", 1, 1, 1, false, false, false, false, {"tanh", NULL}, {I(0)}},
    UN(SILU, "silu"), UN(RECIPROCAL, "reciprocal"), UN(FLOOR, "floor"), UN(CEIL, "ceil"),
    UN(ROUND, "round"),
#undef UN
    [TGP_POW] = {"pow", 1, 2, 2, false, false, false, false, {NULL}, {0}},
    [TGP_PERMUTE] = {"permute", 1, 1, 1, false, true, false, false, {NULL}, {0}},
    [TGP_NARROW] = {"narrow", 1, 1, 1, false, false, false, false, {"dim", "start", "length", NULL},
                    {I(0), I(1), I(2)}},
    [TGP_SQUEEZE] = {"squeeze", 1, 1, 1, false, false, false, false, {"dim", NULL}, {I(0)}},
    [TGP_UNSQUEEZE] = {"unsqueeze", 1, 1, 1, false, false, false, false, {"dim", NULL}, {I(0)}},
    [TGP_FLATTEN] = {"flatten", 1, 1, 1, false, false, false, false, {"s", "e", NULL},
                     {I(0), I(1)}},
    [TGP_CAT] = {"cat", 1, 2, 2, false, false, false, false, {"dim", NULL}, {I(0)}},
    [TGP_STACK] = {"stack", 1, 2, 2, false, false, false, false, {"dim", NULL}, {I(0)}},
#define B2(NAME, name) [TGP_##NAME] = {name, 1, 2, 2, false, false, false, false, {NULL}, {0}}
#define U1(NAME, name) [TGP_##NAME] = {name, 1, 1, 1, false, false, false, false, {NULL}, {0}}
#define RD(NAME, name) [TGP_##NAME] = {name, 1, 1, 1, false, false, false, false, \
                                       {"dim", "keepdim", NULL}, {I(0), I(1)}}
    B2(EQ, "eq"), B2(NE, "ne"), B2(LT, "lt"), B2(LE, "le"), B2(GT, "gt"), B2(GE, "ge"),
    [TGP_CMP_SCALAR] = {"cmp_scalar", 1, 1, 1, false, false, false, false, {"which", "v", NULL},
                        {I(0), F(0)}},
    B2(LOGICAL_AND, "logical_and"), B2(LOGICAL_OR, "logical_or"), B2(LOGICAL_XOR, "logical_xor"),
    U1(LOGICAL_NOT, "logical_not"), U1(ISNAN, "isnan"), U1(ISINF, "isinf"),
    U1(ISFINITE, "isfinite"), B2(REMAINDER, "remainder"), B2(FLOOR_DIVIDE, "floor_divide"),
    RD(AMAX_DIM, "amax_dim"), RD(AMIN_DIM, "amin_dim"), RD(LOGSUMEXP_DIM, "logsumexp_dim"),
    RD(PROD_DIM, "prod_dim"), RD(ANY_DIM, "any_dim"), RD(ARGMAX_DIM, "argmax_dim"),
    [TGP_CUMSUM] = {"cumsum", 1, 1, 1, false, false, false, false, {"dim", NULL}, {I(0)}},
    [TGP_CUMPROD] = {"cumprod", 1, 1, 1, false, false, false, false, {"dim", NULL}, {I(0)}},
    [TGP_VAR_DIM] = {"var_dim", 1, 1, 1, false, false, false, false,
                     {"dim", "keepdim", "correction", NULL}, {I(0), I(1), F(0)}},
    [TGP_STD_DIM] = {"std_dim", 1, 1, 1, false, false, false, false,
                     {"dim", "keepdim", "correction", NULL}, {I(0), I(1), F(0)}},
    [TGP_NORM_DIM] = {"norm_dim", 1, 1, 1, false, false, false, false,
                      {"dim", "keepdim", "p", NULL}, {I(0), I(1), F(0)}},
    [TGP_FLIP] = {"flip", 1, 1, 1, false, true, false, false, {NULL}, {0}},
    [TGP_INDEX_SELECT] = {"index_select", 1, 2, 2, false, false, false, false, {"dim", NULL},
                          {I(0)}},
#undef B2
#undef U1
#undef RD
};

const tgp_op_desc *tgp_op_desc_get(int op) {
    if (op < 0 || op >= TGP_NOPS) return NULL;
    return &g_ops[op];
}

int tgp_op_by_name(const char *name) {
    for (int i = 0; i < TGP_NOPS; i++)
        if (strcmp(g_ops[i].name, name) == 0) return i;
    return -1;
}

tgp_insn tgp_insn_init(int op) {
    tgp_insn in;
    memset(&in, 0, sizeof in);
    in.op = op;
    in.dst[0] = in.dst[1] = TGP_NONE;
    in.src[0] = in.src[1] = in.src[2] = TGP_NONE;
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
