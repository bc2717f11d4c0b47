/* tests/prog/prog_step.c - one instruction of an op program: the library call
 * and the contract checks around it (see tgp_run in prog.h for the list).
 *
 * Contract: tgp__step never aborts; what the library got wrong goes to the
 * result's violation list and the run goes on with what the library returned. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "prog_exec.h"
#include "prog_internal.h"

enum { K_TENSOR, K_STATUS, K_MULTI, K_GRAD, K_TOOL };

static int g_sentinel_obj;
#define SENTINEL ((tg_tensor *)(void *)&g_sentinel_obj)

typedef struct call {
    tg_status st;
    tg_tensor *out[2];
    int kind;
} call;

static int clamp_int(int64_t v) {
    return v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : (int)v;
}

static int64_t to_i64(double v) {
    if (isnan(v)) return 0;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return (int64_t)v;
}

/* Element count of a creation shape, or -1 when negative, overflowing or
 * larger than the program may pass literal data for. */
static int64_t small_numel(const tgp_insn *in) {
    int64_t n = 1;
    for (int i = 0; i < in->ndim; i++) {
        if (in->shape[i] < 0 || in->shape[i] > 4096) return -1;
        n *= in->shape[i];
        if (n > 4096) return -1;
    }
    return n;
}

static tg_tensor *from_data(const tgp_insn *in) {
    const int64_t *shape = in->ndim ? in->shape : NULL;
    int64_t n = small_numel(in);
    if (n < 0 || (n > 0 && in->nvals == 0))
        return tg_from_data((tg_dtype)in->dtype, in->ndim, shape, NULL);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    if (!buf) abort();
    for (int64_t i = 0; i < n; i++) {
        double v = in->vals[i % in->nvals];
        if (in->dtype == TG_F32) ((float *)buf)[i] = (float)v;
        else if (in->dtype == TG_I64) ((int64_t *)buf)[i] = to_i64(v);
        else ((double *)buf)[i] = v;
    }
    tg_tensor *t = tg_from_data((tg_dtype)in->dtype, in->ndim, shape, buf);
    free(buf);
    return t;
}

static void logprob(const tgp_insn *in, tg_tensor **s, call *c) {
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = (tg_logprob_impl)in->iv[0];
    o.temperature = in->fv[0];
    o.ignore_index = in->iv[1];
    o.chunk_size = in->iv[2];
    o.want_entropy = in->iv[3] != 0;
    o.entropy_grad = in->iv[4] != 0;
    c->kind = K_MULTI;
    c->out[0] = c->out[1] = SENTINEL;
    c->st = tg_logprob_entropy(s[0], s[1], &o, &c->out[0],
                               in->dst[1] == TGP_NONE ? NULL : &c->out[1]);
    if (in->dst[1] == TGP_NONE) c->out[1] = NULL;
}

static void custom(const tgp_insn *in, tg_tensor **s, call *c) {
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    c->kind = K_MULTI;
    c->out[0] = c->out[1] = SENTINEL;
    c->st = tg_function_apply(tgp__custom_fn(in->op), (void *)tgp__fail_mode(in->iv[0]),
                              d->nsrc, s, d->ndst, c->out);
    if (d->ndst == 1) c->out[1] = NULL;
}

static tg_status dot(tgp_exec *e, const tgp_insn *in) {
    tg_status pending = tg_last_status(); /* kept when a root is NULL */
    tg_tensor *roots[3];
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (in->src[i] != TGP_NONE) roots[n++] = e->reg[in->src[i]];
    tg_status st = tg_graph_dot(e->devnull, roots, n, NULL);
    bool any_null = false;
    for (int i = 0; i < n; i++) any_null |= roots[i] == NULL;
    tg_status want = n == 0 ? TG_ERR_VALUE
                   : any_null ? (pending != TG_OK ? pending : TG_ERR_NULL) : TG_OK;
    if (st != want && !(want == TG_OK && st == TG_ERR_NOMEM))
        tgp__viol(e, "tg_graph_dot of %d roots returned %s, expected %s", n, tg_status_name(st),
                  tg_status_name(want));
    return st;
}

static tg_status leak_scan(tgp_exec *e) {
    tg_leak_report *r = tg_leak_scan();
    if (!r) return tg_last_status();
    int64_t u = tg_leak_report_unreachable(r) - e->unreachable0;
    if (u != 0) tgp__viol(e, "tg_leak_scan found %lld objects unreachable from any root (a "
                          "reference cycle)", (long long)u);
    tg_status st = tg_leak_report_print(e->devnull, r);
    if (st == TG_OK) st = tg_leak_report_json(e->devnull, r);
    tg_leak_report_free(r);
    return st;
}

/* The library call of in. */
static void exec_op(tgp_exec *e, const tgp_insn *in, tg_tensor **s, call *c) {
    tg_dtype dt = (tg_dtype)in->dtype;
    const int64_t *shape = in->ndim ? in->shape : NULL;
    int nd = in->ndim;
    c->kind = K_TENSOR;
    c->st = TG_OK;
    tg_tensor *o = NULL;
    switch ((tgp_opcode)in->op) {
    case TGP_ZEROS: o = tg_zeros(dt, nd, shape); break;
    case TGP_ONES: o = tg_ones(dt, nd, shape); break;
    case TGP_FULL: o = tg_full(dt, nd, shape, in->fv[0]); break;
    case TGP_RANDN: o = tg_randn(dt, nd, shape, (uint64_t)in->iv[0], in->fv[0], in->fv[1]); break;
    case TGP_RAND: o = tg_rand(dt, nd, shape, (uint64_t)in->iv[0], in->fv[0], in->fv[1]); break;
    case TGP_ARANGE: o = tg_arange(dt, in->fv[0], in->fv[1], in->fv[2]); break;
    case TGP_FROM_DATA: o = from_data(in); break;
    case TGP_REQUIRES_GRAD:
        c->kind = K_STATUS;
        c->st = tg_set_requires_grad(s[0], in->iv[0] != 0);
        return;
    case TGP_GRAD_MODE: {
        c->kind = K_TOOL;
        bool prev = tg_set_grad_enabled(in->iv[0] != 0);
        if (prev != e->grad_on)
            tgp__viol(e, "tg_set_grad_enabled returned %d, the mode was %d", prev, e->grad_on);
        e->grad_on = in->iv[0] != 0;
        return;
    }
    case TGP_BACKWARD:
        c->kind = K_STATUS;
        c->st = tg_backward(s[0], s[1], in->iv[0] != 0);
        return;
    case TGP_GRAD: c->kind = K_GRAD; o = tg_grad(s[0]); break;
    case TGP_ZERO_GRAD: c->kind = K_STATUS; c->st = tg_zero_grad(s[0]); return;
    case TGP_DETACH: o = tg_detach(s[0]); break;
    case TGP_SLICE:
        o = tg_slice(s[0], clamp_int(in->iv[0]), in->iv[1], in->iv[2], in->iv[3]);
        break;
    case TGP_VIEW: o = tg_view(s[0], nd, shape); break;
    case TGP_RESHAPE: o = tg_reshape(s[0], nd, shape); break;
    case TGP_TRANSPOSE: o = tg_transpose(s[0], clamp_int(in->iv[0]), clamp_int(in->iv[1])); break;
    case TGP_EXPAND: o = tg_expand(s[0], nd, shape); break;
    case TGP_CONTIGUOUS: o = tg_contiguous(s[0]); break;
    case TGP_CLONE: o = tg_clone(s[0]); break;
    case TGP_TO_DTYPE: o = tg_to_dtype(s[0], dt); break;
    case TGP_ADD: o = tg_add(s[0], s[1]); break;
    case TGP_SUB: o = tg_sub(s[0], s[1]); break;
    case TGP_MUL: o = tg_mul(s[0], s[1]); break;
    case TGP_DIV: o = tg_div(s[0], s[1]); break;
    case TGP_MAXIMUM: o = tg_maximum(s[0], s[1]); break;
    case TGP_MINIMUM: o = tg_minimum(s[0], s[1]); break;
    case TGP_WHERE: o = tg_where(s[0], s[1], s[2]); break;
    case TGP_NEG: o = tg_neg(s[0]); break;
    case TGP_EXP: o = tg_exp(s[0]); break;
    case TGP_LOG: o = tg_log(s[0]); break;
    case TGP_SCALE: o = tg_scale(s[0], in->fv[0]); break;
    case TGP_ADD_SCALAR: o = tg_add_scalar(s[0], in->fv[0]); break;
    case TGP_CLAMP: o = tg_clamp(s[0], in->fv[0], in->fv[1]); break;
    case TGP_RSQRT: o = tg_rsqrt(s[0]); break;
    case TGP_ABS: o = tg_abs(s[0]); break;
    case TGP_SIGN: o = tg_sign(s[0]); break;
    case TGP_SQUARE_OP: o = tg_square(s[0]); break;
    case TGP_POW_SCALAR: o = tg_pow_scalar(s[0], in->fv[0]); break;
    case TGP_LOG1P: o = tg_log1p(s[0]); break;
    case TGP_EXPM1: o = tg_expm1(s[0]); break;
    case TGP_SIGMOID: o = tg_sigmoid(s[0]); break;
    case TGP_LOGSIGMOID: o = tg_logsigmoid(s[0]); break;
    case TGP_SOFTPLUS: o = tg_softplus(s[0], in->fv[0], in->fv[1]); break;
    case TGP_TANH: o = tg_tanh(s[0]); break;
    case TGP_RELU: o = tg_relu(s[0]); break;
    case TGP_GELU: o = tg_gelu(s[0], in->iv[0] ? TG_GELU_TANH : TG_GELU_NONE); break;
    case TGP_SILU: o = tg_silu(s[0]); break;
    case TGP_RECIPROCAL: o = tg_reciprocal(s[0]); break;
    case TGP_FLOOR: o = tg_floor(s[0]); break;
    case TGP_CEIL: o = tg_ceil(s[0]); break;
    case TGP_ROUND: o = tg_round(s[0]); break;
    case TGP_POW: o = tg_pow(s[0], s[1]); break;
    case TGP_PERMUTE: {
        int dims[TGP_MAX_SHAPE]; /* more than TG_MAX_DIMS: tg_permute refuses them */
        for (int i = 0; i < nd && i < TGP_MAX_SHAPE; i++) dims[i] = clamp_int(in->shape[i]);
        o = tg_permute(s[0], nd, dims);
        break;
    }
    case TGP_NARROW: o = tg_narrow(s[0], clamp_int(in->iv[0]), in->iv[1], in->iv[2]); break;
    case TGP_SQUEEZE: o = tg_squeeze(s[0], clamp_int(in->iv[0])); break;
    case TGP_UNSQUEEZE: o = tg_unsqueeze(s[0], clamp_int(in->iv[0])); break;
    case TGP_FLATTEN: o = tg_flatten(s[0], clamp_int(in->iv[0]), clamp_int(in->iv[1])); break;
    case TGP_CAT: o = tg_cat(2, (tg_tensor *[]){s[0], s[1]}, clamp_int(in->iv[0])); break;
    case TGP_STACK: o = tg_stack(2, (tg_tensor *[]){s[0], s[1]}, clamp_int(in->iv[0])); break;
    case TGP_EQ: o = tg_eq(s[0], s[1]); break;
    case TGP_NE: o = tg_ne(s[0], s[1]); break;
    case TGP_LT: o = tg_lt(s[0], s[1]); break;
    case TGP_LE: o = tg_le(s[0], s[1]); break;
    case TGP_GT: o = tg_gt(s[0], s[1]); break;
    case TGP_GE: o = tg_ge(s[0], s[1]); break;
    case TGP_CMP_SCALAR: {
        tg_tensor *(*const f[6])(tg_site, tg_tensor *, double) = {
            tg_eq_scalar_at, tg_ne_scalar_at, tg_lt_scalar_at,
            tg_le_scalar_at, tg_gt_scalar_at, tg_ge_scalar_at};
        o = f[(uint64_t)in->iv[0] % 6](TG_SITE, s[0], in->fv[0]); /* any integer: no UB */
        break;
    }
    case TGP_LOGICAL_AND: o = tg_logical_and(s[0], s[1]); break;
    case TGP_LOGICAL_OR: o = tg_logical_or(s[0], s[1]); break;
    case TGP_LOGICAL_XOR: o = tg_logical_xor(s[0], s[1]); break;
    case TGP_LOGICAL_NOT: o = tg_logical_not(s[0]); break;
    case TGP_ISNAN: o = tg_isnan(s[0]); break;
    case TGP_ISINF: o = tg_isinf(s[0]); break;
    case TGP_ISFINITE: o = tg_isfinite(s[0]); break;
    case TGP_REMAINDER: o = tg_remainder(s[0], s[1]); break;
    case TGP_FLOOR_DIVIDE: o = tg_floor_divide(s[0], s[1]); break;
    case TGP_AMAX_DIM: o = tg_amax_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_AMIN_DIM: o = tg_amin_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_LOGSUMEXP_DIM: o = tg_logsumexp_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_PROD_DIM: o = tg_prod_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_ANY_DIM: o = tg_any_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_ARGMAX_DIM: o = tg_argmax_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_CUMSUM: o = tg_cumsum(s[0], clamp_int(in->iv[0])); break;
    case TGP_CUMPROD: o = tg_cumprod(s[0], clamp_int(in->iv[0])); break;
    case TGP_VAR_DIM:
        o = tg_var_dim(s[0], clamp_int(in->iv[0]), in->fv[0], in->iv[1] != 0);
        break;
    case TGP_STD_DIM:
        o = tg_std_dim(s[0], clamp_int(in->iv[0]), in->fv[0], in->iv[1] != 0);
        break;
    case TGP_NORM_DIM:
        o = tg_norm_dim(s[0], in->fv[0], clamp_int(in->iv[0]), in->iv[1] != 0);
        break;
    case TGP_FLIP: {
        int dims[TGP_MAX_SHAPE];
        for (int i = 0; i < nd && i < TGP_MAX_SHAPE; i++) dims[i] = clamp_int(in->shape[i]);
        o = tg_flip(s[0], nd, dims);
        break;
    }
    case TGP_INDEX_SELECT: o = tg_index_select(s[0], clamp_int(in->iv[0]), s[1]); break;
    case TGP_SUM: o = tg_sum(s[0]); break;
    case TGP_MEAN: o = tg_mean(s[0]); break;
    case TGP_SUM_DIM: o = tg_sum_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_MEAN_DIM: o = tg_mean_dim(s[0], clamp_int(in->iv[0]), in->iv[1] != 0); break;
    case TGP_MATMUL: o = tg_matmul(s[0], s[1]); break;
    case TGP_SOFTMAX: o = tg_softmax(s[0]); break;
    case TGP_LOG_SOFTMAX: o = tg_log_softmax(s[0]); break;
    case TGP_GATHER: o = tg_gather(s[0], s[1]); break;
    case TGP_LOGPROB: logprob(in, s, c); return;
    case TGP_ADD_: c->kind = K_STATUS; c->st = tg_add_(s[0], s[1]); return;
    case TGP_SUB_: c->kind = K_STATUS; c->st = tg_sub_(s[0], s[1]); return;
    case TGP_MUL_: c->kind = K_STATUS; c->st = tg_mul_(s[0], s[1]); return;
    case TGP_SCALE_: c->kind = K_STATUS; c->st = tg_scale_(s[0], in->fv[0]); return;
    case TGP_COPY_: c->kind = K_STATUS; c->st = tg_copy_(s[0], s[1]); return;
    case TGP_FILL_: c->kind = K_STATUS; c->st = tg_fill_(s[0], in->fv[0]); return;
    case TGP_SQUARE: case TGP_CEXP: case TGP_MULSUB: custom(in, s, c); return;
    case TGP_SCOPE_BEGIN: c->kind = K_TOOL; c->st = tgp__scope_begin(e); return;
    case TGP_SCOPE_END: c->kind = K_TOOL; c->st = tgp__scope_end(e, in->iv[0] != 0); return;
    case TGP_SCOPE_KEEP: c->kind = K_TOOL; c->st = tgp__scope_keep(e, in->src[0]); return;
    case TGP_RELEASE: c->kind = K_TOOL; c->st = tgp__release(e, in->src[0]); return;
    case TGP_LEAK_SCAN: c->kind = K_TOOL; c->st = leak_scan(e); return;
    case TGP_STEP_MARK: c->kind = K_TOOL; tg_step_mark("prog step"); return;
    case TGP_FAULT:
        c->kind = K_TOOL;
        e->fault_armed = true;
        e->fault_n = in->iv[0] < 0 ? 0 : in->iv[0] > 1000000 ? 1000000 : (uint64_t)in->iv[0];
        e->fault_persistent = in->iv[1] != 0;
        return;
    case TGP_PRINT: c->kind = K_STATUS; c->st = tg_print(e->devnull, s[0], 8); return;
    case TGP_DOT: c->kind = K_TOOL; c->st = dot(e, in); return;
    case TGP_NOPS: break;
    }
    c->out[0] = o;
    c->out[1] = NULL;
}

/* ---- what the checks compare ------------------------------------------------------------ */

typedef struct snap {
    tg_tensor *t;       /* the register's tensor (borrowed), NULL if empty */
    uint64_t version;
    bool rg;
    tg_tensor *grad;    /* identity only */
    double *gv;         /* grad values, when taken */
    int64_t gn;
} snap;

static bool same_values(const double *a, int64_t na, const double *b, int64_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static bool tg__prog_float(const tg_tensor *t) {
    return tg_get_dtype(t) == TG_F32 || tg_get_dtype(t) == TG_F64;
}

static bool is_inplace(int op) {
    return op == TGP_ADD_ || op == TGP_SUB_ || op == TGP_MUL_ || op == TGP_SCALE_ ||
           op == TGP_COPY_ || op == TGP_FILL_;
}

/* Whether the result of a successful op must require grad, or -1: not checked. */
static int want_rg(const tgp_exec *e, const tgp_insn *in, tg_tensor **s, tg_tensor *out, int k) {
    int op = in->op;
    bool any = false;
    switch ((tgp_opcode)op) {
    case TGP_ZEROS: case TGP_ONES: case TGP_FULL: case TGP_RANDN: case TGP_RAND:
    case TGP_ARANGE: case TGP_FROM_DATA: case TGP_DETACH:
        return 0;
    case TGP_GRAD: /* a .grad is a leaf the program may have marked requires_grad */
        return -1;
    case TGP_CONTIGUOUS: case TGP_TO_DTYPE:
        if (out == s[0]) return -1; /* the input itself */
        break;
    default: break;
    }
    if (tg_get_dtype(out) == TG_I64 || tg_get_dtype(out) == TG_BOOL) return 0;
    switch ((tgp_opcode)op) {
    case TGP_SLICE: case TGP_VIEW: case TGP_RESHAPE: case TGP_TRANSPOSE: case TGP_EXPAND:
    case TGP_PERMUTE: case TGP_NARROW: case TGP_SQUEEZE: case TGP_UNSQUEEZE: case TGP_FLATTEN:
        /* with grad mode on, a view requires grad when its input does; made
         * in no-grad mode, when its base does (as PyTorch: a view of a view
         * that was marked requires_grad itself does not); a reshape that had
         * to copy under no-grad does not */
        if (!e->grad_on) {
            if (!tg_same_storage(out, s[0])) return 0;
            if (!tg_is_view(s[0])) return tg_requires_grad(s[0]);
            if (e->depth > 0) return -1; /* an open scope would own the base's reference */
            tg_tensor *b = tg_view_base(s[0]);
            bool rg = tg_requires_grad(b ? b : s[0]);
            tg_release(b);
            return rg;
        }
        return tg_requires_grad(s[0]);
    default: break;
    }
    const tgp_op_desc *d = tgp_op_desc_get(op);
    for (int i = 0; i < d->nsrc; i++) {
        if (op == TGP_WHERE && i == 0) continue;                      /* the condition */
        if ((op == TGP_GATHER || op == TGP_LOGPROB || op == TGP_INDEX_SELECT) && i == 1)
            continue; /* indices */
        any |= tg_requires_grad(s[i]);
    }
    if (op == TGP_LOGPROB && k == 1) any &= in->iv[4] != 0;
    return e->grad_on && any;
}

/* Whether op returns a new contiguous tensor (creation, copies, math: not views). */
static bool returns_contiguous(int op) {
    switch ((tgp_opcode)op) {
    case TGP_SLICE: case TGP_VIEW: case TGP_RESHAPE: case TGP_TRANSPOSE: case TGP_EXPAND:
    case TGP_DETACH: case TGP_GRAD: case TGP_TO_DTYPE: case TGP_SQUARE: case TGP_CEXP:
    case TGP_MULSUB: case TGP_PERMUTE: case TGP_NARROW: case TGP_SQUEEZE: case TGP_UNSQUEEZE:
    case TGP_FLATTEN:
        return false;
    default: /* the ops before the in-place ones, and the math appended after the tools */
        return op < TGP_ADD_ || op >= TGP_RSQRT;
    }
}

/* ---- one instruction ----------------------------------------------------------------------- */

tg_status tgp__step(tgp_exec *e, const tgp_insn *in) {
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    tg_tensor *s[3] = {NULL, NULL, NULL};
    bool null_input = false;
    for (int i = 0; i < d->nsrc; i++) {
        int r = in->src[i];
        s[i] = r >= 0 && r < TGP_NREG ? e->reg[r] : NULL;
        if (i < d->nsrc_required && !s[i]) null_input = true;
    }
    bool inplace = is_inplace(in->op);
    bool backward = in->op == TGP_BACKWARD;
    bool tool = d->c_only && in->op != TGP_PRINT;

    /* before: versions (all registers), source values, grads (backward) */
    snap sn[TGP_NREG];
    double *sv[3] = {NULL, NULL, NULL};
    int64_t sn_n[3] = {0, 0, 0};
    for (int r = 0; r < TGP_NREG; r++) {
        sn[r].t = e->reg[r];
        sn[r].version = e->reg[r] ? tg_version(e->reg[r]) : 0;
        sn[r].rg = tg_requires_grad(e->reg[r]);
        sn[r].gv = NULL;
        sn[r].grad = NULL;
        sn[r].gn = 0;
        if (backward && e->reg[r]) {
            sn[r].grad = tgp_grad_peek(e->reg[r]);
            sn[r].gv = tgp_values(sn[r].grad, &sn[r].gn);
        }
    }
    if (!tool && !backward)
        for (int i = 0; i < d->nsrc; i++) sv[i] = tgp_values(s[i], &sn_n[i]);

    if (!in->keep_err) tg_clear_error();
    tg_status prev_st = tg_last_status();
    char prev_msg[1024]; /* messages longer than this compare on their start */
    snprintf(prev_msg, sizeof prev_msg, "%s", tg_last_error());

    bool armed = e->fault_armed && in->op != TGP_FAULT;
    if (armed) tg_fault_inject(e->fault_n, e->fault_persistent);
    call c = {TG_OK, {NULL, NULL}, K_TENSOR};
    exec_op(e, in, s, &c);
    uint64_t fired = armed ? tg_fault_inject(0, false) : 0;
    if (armed) e->fault_armed = false;

    /* statuses and messages */
    bool ok;
    if (c.kind == K_TENSOR) {
        ok = c.out[0] != NULL;
        c.st = ok ? TG_OK : tg_last_status();
    } else if (c.kind == K_GRAD) {
        ok = !null_input;
        c.st = c.out[0] || !null_input ? TG_OK : tg_last_status();
    } else {
        ok = c.st == TG_OK;
    }
    tg_status last = tg_last_status();
    const char *msg = tg_last_error();
    if (c.kind != K_TOOL || !ok) {
        if (!ok) {
            if (c.kind == K_TENSOR && last == TG_OK)
                tgp__viol(e, "returned NULL but tg_last_status() is TG_OK");
            else if (last == TG_OK)
                tgp__viol(e, "returned %s but tg_last_status() is TG_OK", tg_status_name(c.st));
            else if (msg[0] == '\0')
                tgp__viol(e, "failed with %s and an empty message", tg_status_name(last));
            if (strcmp(tg_status_name(c.st), "TG_ERR_UNKNOWN") == 0)
                tgp__viol(e, "status %d has no name", (int)c.st);
            if ((c.kind == K_STATUS || c.kind == K_MULTI) && !(in->keep_err && null_input) &&
                last != c.st)
                tgp__viol(e, "returned %s but tg_last_status() is %s", tg_status_name(c.st),
                          tg_status_name(last));
            if (null_input && in->keep_err && prev_st != TG_OK) {
                if (last != prev_st || strncmp(msg, prev_msg, sizeof prev_msg - 1) != 0)
                    tgp__viol(e, "a NULL input replaced the first error (%s: %.60s) with %s: %.60s",
                              tg_status_name(prev_st), prev_msg, tg_status_name(last), msg);
            } else if (null_input && c.st != TG_ERR_NULL) {
                tgp__viol(e, "a NULL input gave %s, expected TG_ERR_NULL: %s",
                          tg_status_name(c.st), msg);
            } else if (fired && !null_input && c.st != TG_ERR_NOMEM) {
                tgp__viol(e, "an injected allocation failure gave %s, expected TG_ERR_NOMEM: %s",
                          tg_status_name(c.st), msg);
            }
            if (c.kind == K_MULTI && (c.out[0] || c.out[1]))
                tgp__viol(e, "failed with %s but left outputs set (%p, %p)", tg_status_name(c.st),
                          (void *)c.out[0], (void *)c.out[1]);
        } else {
            if (last != prev_st)
                tgp__viol(e, "succeeded but changed the thread's status from %s to %s: %s",
                          tg_status_name(prev_st), tg_status_name(last), msg);
            if (null_input) tgp__viol(e, "succeeded with a NULL input");
            if (c.kind == K_MULTI) {
                const tgp_op_desc *od = d;
                bool ent_wanted = in->op != TGP_LOGPROB || (in->iv[3] != 0);
                if (!c.out[0] || (od->ndst == 2 && in->dst[1] != TGP_NONE && ent_wanted &&
                                  !c.out[1]))
                    tgp__viol(e, "succeeded but an output is NULL");
                if (in->op == TGP_LOGPROB && !ent_wanted && c.out[1])
                    tgp__viol(e, "want_entropy is false but an entropy was returned");
            }
        }
    }
    for (int k = 0; k < 2; k++)
        if (c.out[k] == SENTINEL) {
            tgp__viol(e, "output %d was never set", k);
            c.out[k] = NULL;
        }

    /* versions, data, requires_grad */
    for (int r = 0; r < TGP_NREG; r++) {
        if (!sn[r].t || e->reg[r] != sn[r].t) continue;
        uint64_t v = tg_version(e->reg[r]);
        uint64_t want = sn[r].version;
        if (inplace && ok && s[0] && tg_same_storage(e->reg[r], s[0])) want++;
        if (v != want)
            tgp__viol(e, "r%d's version moved %llu -> %llu (expected %llu)", r,
                      (unsigned long long)sn[r].version, (unsigned long long)v,
                      (unsigned long long)want);
    }
    for (int i = 0; i < d->nsrc; i++) {
        if (!sv[i] && !sn_n[i]) continue;
        if (inplace && (i == 0 ? ok : tg_same_storage(s[i], s[0]))) continue;
        int64_t n;
        double *now = tgp_values(s[i], &n);
        if (!same_values(now, n, sv[i], sn_n[i]))
            tgp__viol(e, "%s changed the values of its input r%d", ok ? "succeeded but" : "failed "
                      "and", in->src[i]);
        free(now);
    }
    if (ok && !tool) {
        for (int k = 0; k < 2; k++) {
            if (!c.out[k] || c.kind == K_STATUS) continue;
            int w = want_rg(e, in, s, c.out[k], k);
            if (w >= 0 && tg_requires_grad(c.out[k]) != (w != 0))
                tgp__viol(e, "output %d requires_grad is %d, expected %d (grad mode %d)", k,
                          tg_requires_grad(c.out[k]), w, e->grad_on);
        }
        if (returns_contiguous(in->op) && c.out[0] && !tg_is_contiguous(c.out[0]))
            tgp__viol(e, "returned a tensor that is not contiguous (tg_is_contiguous false)");
        if (inplace && s[0]) {
            bool was = sn[in->src[0]].rg;
            bool other = d->nsrc > 1 && tg_requires_grad(s[1]);
            bool now = tg_requires_grad(s[0]);
            if (!e->grad_on && now != was)
                tgp__viol(e, "under no-grad the target's requires_grad moved %d -> %d", was, now);
            if (e->grad_on && other && !now && tg__prog_float(s[0]))
                tgp__viol(e, "the target does not require grad after taking a value that does");
        }
    }
    if (backward && !ok) {
        for (int r = 0; r < TGP_NREG; r++) {
            if (!sn[r].t || e->reg[r] != sn[r].t) continue;
            tg_tensor *g = tgp_grad_peek(e->reg[r]);
            int64_t n;
            double *gv = tgp_values(g, &n);
            if (g != sn[r].grad || !same_values(gv, n, sn[r].gv, sn[r].gn))
                tgp__viol(e, "a failed backward (%s) changed the .grad of r%d",
                          tg_status_name(c.st), r);
            free(gv);
        }
    }
    for (int r = 0; r < TGP_NREG; r++) free(sn[r].gv);
    for (int i = 0; i < 3; i++) free(sv[i]);
    if (tg_is_grad_enabled() != e->grad_on) {
        tgp__viol(e, "left grad mode %d (the program set %d)", tg_is_grad_enabled(), e->grad_on);
        tg_set_grad_enabled(e->grad_on);
    }

    /* results into registers */
    if (c.kind == K_TENSOR || c.kind == K_GRAD || c.kind == K_MULTI) {
        for (int k = 0; k < d->ndst; k++) tgp__set(e, in->dst[k], c.out[k]);
    }
    return c.st;
}
