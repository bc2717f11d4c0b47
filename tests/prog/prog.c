/* tests/prog/prog.c - the executor of op programs: runs each instruction
 * through tapegrad's public API and checks the library's failure contracts
 * (listed at tgp_run in prog.h), then releases everything and checks that
 * nothing the program made is still alive.
 *
 * Ownership model mirrored here: a register holds one reference, owned by the
 * program (owner 0) or by the scope that was innermost when the tensor was
 * returned (owner d >= 1). Each open scope's list holds every reference the
 * library gave it, including those of registers overwritten since (the scope
 * still releases them). A program-owned reference that tg_release cannot give
 * back because a scope also owns the tensor goes to an extra list released
 * after the last scope closes. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "prog_internal.h"
#include "prog_exec.h"

/* ---- violations and ownership lists --------------------------------------------------- */

void tgp__viol(tgp_exec *e, const char *fmt, ...) {
    tgp_result *r = e->res;
    if (r->nviol < 16) {
        char *b = r->viol[r->nviol];
        size_t cap = sizeof r->viol[0];
        int k = e->cur >= 0 ? snprintf(b, cap, "insn %d (%s): ", e->cur, e->cur_name)
                            : snprintf(b, cap, "end of program: ");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b + k, cap - (size_t)k, fmt, ap);
        va_end(ap);
    }
    r->nviol++;
}

static void own_push(tgp_own *l, tg_tensor *t) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        tg_tensor **nt = realloc(l->t, (size_t)cap * sizeof *nt);
        if (!nt) abort(); /* the test program's own memory, not the library's */
        l->t = nt;
        l->cap = cap;
    }
    l->t[l->n++] = t;
}

static bool own_has(const tgp_own *l, const tg_tensor *t) {
    for (int i = 0; i < l->n; i++)
        if (l->t[i] == t) return true;
    return false;
}

static void own_remove(tgp_own *l, const tg_tensor *t) {
    for (int i = l->n - 1; i >= 0; i--)
        if (l->t[i] == t) {
            l->t[i] = l->t[--l->n];
            return;
        }
}

/* True when an open scope owns a reference to t. */
bool tgp__scope_owns(const tgp_exec *e, const tg_tensor *t) {
    for (int d = 1; d <= e->depth; d++)
        if (own_has(&e->own[d], t)) return true;
    return false;
}

/* Gives register r's reference back (or leaves it to its scope) and empties r. */
void tgp__drop(tgp_exec *e, int r) {
    tg_tensor *old = e->reg[r];
    e->reg[r] = NULL;
    if (!old || e->owner[r] != 0) {
        e->owner[r] = 0;
        return;
    }
    if (tgp__scope_owns(e, old)) {
        own_push(&e->own[0], old); /* tg_release would refuse now: give it back at the end */
        return;
    }
    tg_status st = tg_release(old);
    if (st != TG_OK)
        tgp__viol(e, "tg_release of r%d (a reference the program owns) returned %s: %s", r,
                  tg_status_name(st), tg_last_error());
}

/* Puts t (a new reference just returned, NULL allowed) in register r. */
void tgp__set(tgp_exec *e, int r, tg_tensor *t) {
    if (t && e->depth > 0) own_push(&e->own[e->depth], t);
    if (r < 0 || r >= TGP_NREG) { /* no destination: give it back at once */
        if (t && e->depth == 0) {
            tg_status st = tg_release(t);
            if (st != TG_OK)
                tgp__viol(e, "tg_release of a result returned %s", tg_status_name(st));
        }
        return;
    }
    tgp__drop(e, r);
    e->reg[r] = t;
    e->owner[r] = t ? e->depth : 0;
}

/* ---- scopes --------------------------------------------------------------------------- */

/* Closes the innermost scope (the library has released what it owned). */
static void scope_closed(tgp_exec *e) {
    int d = e->depth;
    for (int r = 0; r < TGP_NREG; r++)
        if (e->reg[r] && e->owner[r] == d) {
            e->reg[r] = NULL;
            e->owner[r] = 0;
            e->cleared[e->ncleared++] = r;
        }
    e->own[d].n = 0;
    e->depth--;
}

tg_status tgp__scope_begin(tgp_exec *e) {
    if (e->depth == TGP_MAX_SCOPES) return TG_OK; /* deep enough: skipped */
    int tok = tg_scope_begin();
    if (tok < 0) return tg_last_status();
    if (tok != e->depth + 1)
        tgp__viol(e, "tg_scope_begin returned token %d with %d scopes open", tok, e->depth);
    e->depth++;
    e->tok[e->depth] = tok;
    return TG_OK;
}

tg_status tgp__scope_end(tgp_exec *e, bool bad) {
    if (e->depth == 0 || bad) {
        tg_live_counts before = tg_live();
        int tok = e->depth == 0 ? 1 : e->tok[e->depth] + 1;
        tg_status st = tg_scope_end(tok);
        tg_live_counts after = tg_live();
        if (st != TG_ERR_STATE)
            tgp__viol(e, "tg_scope_end(%d) with %d scopes open returned %s, expected TG_ERR_STATE",
                      tok, e->depth, tg_status_name(st));
        if (before.tensors != after.tensors)
            tgp__viol(e, "a refused tg_scope_end released %lld tensors",
                      (long long)(before.tensors - after.tensors));
        if (st == TG_OK && e->depth > 0) scope_closed(e); /* it did close one */
        return st;
    }
    tg_status st = tg_scope_end(e->tok[e->depth]);
    if (st != TG_OK) {
        tgp__viol(e, "tg_scope_end(%d) returned %s: %s", e->tok[e->depth], tg_status_name(st),
                  tg_last_error());
        return st;
    }
    scope_closed(e);
    return TG_OK;
}

tg_status tgp__scope_keep(tgp_exec *e, int r) {
    tg_tensor *t = r >= 0 && r < TGP_NREG ? e->reg[r] : NULL;
    int d = e->depth;
    bool owns = t && d > 0 && own_has(&e->own[d], t);
    tg_tensor *k = tg_scope_keep(t);
    if (!t) {
        if (k) tgp__viol(e, "tg_scope_keep(NULL) returned a tensor");
        return TG_OK;
    }
    if (!owns) {
        if (k || tg_last_status() != TG_ERR_STATE)
            tgp__viol(e, "tg_scope_keep of r%d, which the innermost scope does not own: returned "
                      "%p, status %s (expected NULL, TG_ERR_STATE)", r, (void *)k,
                      tg_status_name(tg_last_status()));
        if (k == t) owns = true; /* it moved one anyway: follow the library */
        else return k ? TG_OK : tg_last_status();
    }
    if (k != t) {
        tgp__viol(e, "tg_scope_keep of r%d (owned by the innermost scope) returned %p, status "
                  "%s: %s", r, (void *)k, tg_status_name(tg_last_status()), tg_last_error());
        return k ? TG_OK : tg_last_status();
    }
    own_remove(&e->own[d], t);
    int j = e->owner[r] == d && e->reg[r] == t ? r : -1;
    for (int i = 0; j < 0 && i < TGP_NREG; i++)
        if (e->reg[i] == t && e->owner[i] == d) j = i;
    if (j >= 0) {
        e->owner[j] = d - 1;
        if (d - 1 > 0) own_push(&e->own[d - 1], t);
    } else {
        own_push(&e->own[d - 1], t); /* a reference no register holds moved out */
    }
    return TG_OK;
}

tg_status tgp__release(tgp_exec *e, int r) {
    tg_tensor *t = r >= 0 && r < TGP_NREG ? e->reg[r] : NULL;
    if (!t) {
        tg_status st = tg_release(NULL);
        if (st != TG_OK) tgp__viol(e, "tg_release(NULL) returned %s", tg_status_name(st));
        return st;
    }
    bool refused = tgp__scope_owns(e, t);
    tg_status st = tg_release(t);
    if (refused) {
        if (st != TG_ERR_STATE)
            tgp__viol(e, "tg_release of r%d, owned by an open scope, returned %s (expected "
                      "TG_ERR_STATE)", r, tg_status_name(st));
        if (st == TG_OK) { /* it gave one back anyway: follow it */
            for (int d = e->depth; d >= 1; d--)
                if (own_has(&e->own[d], t)) {
                    own_remove(&e->own[d], t);
                    break;
                }
            if (e->owner[r] != 0) {
                e->reg[r] = NULL;
                e->owner[r] = 0;
                e->cleared[e->ncleared++] = r;
            }
        }
        return st;
    }
    if (st != TG_OK) {
        tgp__viol(e, "tg_release of r%d returned %s: %s", r, tg_status_name(st), tg_last_error());
        return st;
    }
    e->reg[r] = NULL;
    e->owner[r] = 0;
    e->cleared[e->ncleared++] = r;
    return TG_OK;
}

/* ---- values ---------------------------------------------------------------------------- */

double *tgp_values(const tg_tensor *t, int64_t *n) {
    *n = 0;
    if (!t) return NULL;
    int64_t m = tg_numel(t);
    if (m < 0) return NULL;
    double *b = malloc((size_t)(m ? m : 1) * sizeof *b);
    if (!b) return NULL;
    if (tg_copy_out(t, TG_F64, b, (size_t)m * sizeof *b) != TG_OK) {
        free(b);
        return NULL;
    }
    *n = m;
    return b;
}

tg_tensor *tgp_grad_peek(const tg_tensor *t) {
    if (!t) return NULL;
    int tok = tg_scope_begin();
    if (tok < 0) return NULL;
    tg_tensor *g = tg_grad(t); /* owned by the scope; the leaf keeps its own reference */
    tg_scope_end(tok);
    return g;
}

tg_tensor *tgp_reg(const tgp_exec *e, int r) {
    return r >= 0 && r < TGP_NREG ? e->reg[r] : NULL;
}

int tgp_cleared(const tgp_exec *e, int *out) {
    for (int i = 0; i < e->ncleared; i++) out[i] = e->cleared[i];
    return e->ncleared;
}

/* ---- the run ----------------------------------------------------------------------------- */

static void finish(tgp_exec *e, const tgp_exec_base *base, tgp_hook hook, void *user) {
    tg_fault_inject(0, false);
    e->cur = -1;
    e->ncleared = 0;
    if (hook) hook(user, e, -1, NULL, TG_OK);
    while (e->depth > 0) {
        tg_status st = tg_scope_end(e->tok[e->depth]);
        if (st != TG_OK)
            tgp__viol(e, "tg_scope_end(%d) returned %s: %s", e->tok[e->depth], tg_status_name(st),
                      tg_last_error());
        scope_closed(e);
    }
    for (int r = 0; r < TGP_NREG; r++) tgp__drop(e, r);
    for (int i = 0; i < e->own[0].n; i++) {
        tg_status st = tg_release(e->own[0].t[i]);
        if (st != TG_OK)
            tgp__viol(e, "tg_release of a kept reference returned %s: %s", tg_status_name(st),
                      tg_last_error());
    }
    e->own[0].n = 0;
    tg_set_grad_enabled(true);
    tg_clear_error();
    tg_live_counts c = tg_live();
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    if (c.tensors != base->live.tensors || c.storages != base->live.storages ||
        c.nodes != base->live.nodes || m.live_total != base->mem.live_total ||
        m.saved != base->mem.saved) {
        int64_t unreachable = -1;
        tg_leak_report *rep = tg_leak_scan();
        if (rep) unreachable = tg_leak_report_unreachable(rep) - e->unreachable0;
        tg_leak_report_free(rep);
        tgp__viol(e, "still alive after releasing every register and closing every scope: "
                  "%lld tensors, %lld storages, %lld nodes, %lld bytes live, %lld saved bytes "
                  "(%lld objects unreachable from any root)",
                  (long long)(c.tensors - base->live.tensors),
                  (long long)(c.storages - base->live.storages),
                  (long long)(c.nodes - base->live.nodes),
                  (long long)m.live_total - (long long)base->mem.live_total,
                  (long long)m.saved - (long long)base->mem.saved, (long long)unreachable);
        e->res->leaked = true;
        tg_clear_error();
    }
}

bool tgp_run(const tgp_prog *p, tgp_hook hook, void *user, tgp_result *res) {
    memset(res, 0, sizeof *res);
    res->status = calloc((size_t)(p->n ? p->n : 1), sizeof *res->status);
    if (!res->status) abort();
    tgp_exec *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->res = res;
    e->grad_on = true;
    e->devnull = fopen("/dev/null", "w");
    tgp_exec_base base;
    tg_set_grad_enabled(true);
    tg_fault_inject(0, false);
    tg_clear_error();
    base.live = tg_live();
    tg_mem_get(TG_CPU, &base.mem);
    if (base.live.tensors || base.live.nodes || base.live.storages) {
        tg_leak_report *rep = tg_leak_scan(); /* an earlier program leaked: its cycles stay */
        e->unreachable0 = rep ? tg_leak_report_unreachable(rep) : 0;
        tg_leak_report_free(rep);
    }
    for (int i = 0; i < p->n; i++) {
        const tgp_insn *in = &p->insns[i];
        const tgp_op_desc *d = tgp_op_desc_get(in->op);
        e->cur = i;
        e->cur_name = d ? d->name : "?";
        e->ncleared = 0;
        res->status[i] = d ? tgp__step(e, in) : TG_OK;
        res->n = i + 1;
        if (hook) hook(user, e, i, in, res->status[i]);
    }
    finish(e, &base, hook, user);
    for (int d = 0; d <= TGP_MAX_SCOPES; d++) free(e->own[d].t);
    if (e->devnull) fclose(e->devnull);
    free(e);
    return res->nviol == 0;
}

void tgp_result_free(tgp_result *res) {
    free(res->status);
    res->status = NULL;
}
