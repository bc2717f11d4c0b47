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
    tg_tensor *out[TGR_MAX_OUT];
    int kind;
} call;

static void custom(const tgp_insn *in, tg_tensor **s, call *c) {
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    c->kind = K_MULTI;
    c->out[0] = c->out[1] = SENTINEL;
    c->out[2] = NULL;
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

/* A registry row's call: its apply function with the instruction's fields
 * as its arguments (the op programs see the in-place ops as they are). */
static void row_call(const tgr_op *row, const tgp_insn *in, tg_tensor **s, call *c) {
    tgr_args a;
    memset(&a, 0, sizeof a);
    a.dtype = in->dtype;
    a.ndim = in->ndim;
    memcpy(a.shape, in->shape, sizeof a.shape);
    memcpy(a.iv, in->iv, sizeof a.iv);
    memcpy(a.fv, in->fv, sizeof a.fv);
    a.nvals = in->nvals;
    memcpy(a.vals, in->vals, sizeof a.vals);
    for (int k = 0; k < TGR_MAX_OUT; k++) c->out[k] = NULL;
    c->kind = row->flags & TGR_INPLACE ? K_STATUS : row->nout > 1 ? K_MULTI : K_TENSOR;
    c->st = row->apply(row, s, &a, c->out);
}

/* The library call of in. */
static void exec_op(tgp_exec *e, const tgp_insn *in, tg_tensor **s, call *c) {
    c->kind = K_TENSOR;
    c->st = TG_OK;
    tg_tensor *o = NULL;
    const tgr_op *row = tgp_row(in->op);
    if (row) {
        row_call(row, in, s, c);
        return;
    }
    switch ((tgp_opcode)in->op) {
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
    case TGP_NCONTROL: break;
    }
    c->out[0] = o;
    c->out[1] = c->out[2] = NULL;
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
    const tgr_op *row = tgp_row(op);
    return row && (row->flags & TGR_INPLACE);
}

/* Whether the result of a successful op must require grad, or -1: not checked. */
static int want_rg(const tgp_exec *e, const tgp_insn *in, tg_tensor **s, tg_tensor *out, int k) {
    const tgr_op *row = tgp_row(in->op);
    if (in->op == TGP_GRAD) return -1; /* a .grad is a leaf the program may have marked */
    if (!row) return -1;               /* the custom functions: tg_function_apply's own checks */
    if (row->flags & TGR_CREATE) return 0;
    if ((row->flags & TGR_MAYBE_SELF) && out == s[0]) return -1; /* the input itself */
    if (tg_get_dtype(out) == TG_I64 || tg_get_dtype(out) == TG_BOOL) return 0;
    if (!row->diff) return 0; /* detach and the other ops without a gradient */
    if (row->flags & TGR_VIEW) {
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
    }
    bool any = false;
    for (int i = 0; i < row->nin; i++)
        if (row->diff >> i & 1) any |= tg_requires_grad(s[i]);
    /* an output that a parameter detaches: the entropy without its gradient (egrad=0) */
    const tgr_param *eg = tgr_param_of(row, "egrad");
    if (k == 1 && eg && in->iv[eg->slot] == 0) any = false;
    return e->grad_on && any;
}

/* Whether op returns a new contiguous tensor (creation, copies, math: not views). */
static bool returns_contiguous(int op) {
    const tgr_op *row = tgp_row(op);
    return row && !(row->flags & (TGR_VIEW | TGR_MAYBE_SELF | TGR_INPLACE));
}

/* ---- one instruction ----------------------------------------------------------------------- */

static int64_t g_input_budget; /* tgp_set_input_budget */

void tgp_set_input_budget(int64_t max_elems) { g_input_budget = max_elems > 0 ? max_elems : 0; }

/* The elements of t, times the growth tg_repeat would give it (its repeats are
 * the instruction's shape): the budget bounds what an op makes, not only what
 * it reads, so a repeat of a small tensor by 5^5 is skipped too. */
static int64_t grown_numel(const tgp_insn *in, const tg_tensor *t) {
    int64_t n = tg_numel(t);
    const tgr_op *row = tgp_row(in->op);
    if (!row || strcmp(row->c_name, "tg_repeat") != 0) return n;
    for (int k = 0; k < in->ndim; k++) {
        int64_t r = in->shape[k] > 1 ? in->shape[k] : 1;
        if (n > g_input_budget) return n;
        n *= r;
    }
    return n;
}

tg_status tgp__step(tgp_exec *e, const tgp_insn *in) {
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    tg_tensor *s[TGR_MAX_IN] = {NULL, NULL, NULL, NULL};
    bool null_input = false;
    for (int i = 0; i < d->nsrc; i++) {
        int r = in->src[i];
        s[i] = r >= 0 && r < TGP_NREG ? e->reg[r] : NULL;
        if (i < d->nsrc_required && !s[i]) null_input = true;
        if (g_input_budget && s[i] && tgp_row(in->op) && grown_numel(in, s[i]) > g_input_budget)
            return TG_OK; /* skipped: see tgp_set_input_budget */
    }
    bool inplace = is_inplace(in->op);
    bool backward = in->op == TGP_BACKWARD;
    bool tool = d->c_only && in->op != TGP_PRINT;

    /* before: versions (all registers), source values, grads (backward) */
    snap sn[TGP_NREG];
    double *sv[TGR_MAX_IN] = {NULL, NULL, NULL, NULL};
    int64_t sn_n[TGR_MAX_IN] = {0, 0, 0, 0};
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
    call c = {TG_OK, {NULL, NULL, NULL}, K_TENSOR};
    exec_op(e, in, s, &c);
    uint64_t fired = armed ? tg_fault_inject(0, false) : 0;
    if (armed) e->fault_armed = false;

    /* statuses and messages */
    bool ok;
    if (c.kind == K_TENSOR) {
        ok = c.out[0] != NULL;
        c.st = ok ? TG_OK : tg_last_status();
    } else if (c.kind == K_GRAD) { /* NULL for no .grad, or a failure (the scope's room) */
        ok = !null_input && (c.out[0] || !tgp_grad_peek(s[0]));
        c.st = ok ? TG_OK : tg_last_status();
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
                /* the first output always; an option may leave out the others
                 * (the entropy when entropy=0: then it must be NULL) */
                const tgr_op *row = tgp_row(in->op);
                const tgr_param *ent = row ? tgr_param_of(row, "entropy") : NULL;
                if (!c.out[0] || (ent && in->iv[ent->slot] != 0 && !c.out[1]))
                    tgp__viol(e, "succeeded but an output is NULL");
                if (ent && in->iv[ent->slot] == 0 && c.out[1])
                    tgp__viol(e, "want_entropy is false but an entropy was returned");
            }
        }
    }
    for (int k = 0; k < TGR_MAX_OUT; k++)
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
        for (int k = 0; k < TGR_MAX_OUT; k++) {
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
    for (int i = 0; i < TGR_MAX_IN; i++) free(sv[i]);
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
