/* tape/function.c - custom functions (like torch.autograd.Function): a user
 * forward/backward pair recorded as one graph node, with a context that saves
 * tensors (version-checked like any other) and small state. */
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"

struct tg_ctx {
    tg__node *node;   /* the node being recorded / run; NULL when not recording */
    bool in_backward;
    int n_unrecorded; /* slot indices handed out while not recording */
};

static tg_status custom_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *g[TG__MAX_IO] = {0};
    tg_status st = TG_OK;
    for (int k = 0; k < n->n_out; k++) {
        if (gout[k]) {
            g[k] = tg_retain(gout[k]);
            continue;
        }
        /* materialise zeros: user code never sees a NULL gradient */
        g[k] = tg__zeros_on(n->site, n->out_meta[k].device, n->out_meta[k].dtype,
                            n->out_meta[k].ndim, n->out_meta[k].shape);
        if (!g[k]) {
            st = tg_last_status();
            goto out;
        }
    }
    tg_ctx ctx = {n, true, 0};
    st = n->fn->backward(&ctx, n->n_out, g, n->n_in, gin, n->fn_user);
    if (st != TG_OK && tg_last_status() == TG_OK)
        tg__set_error(st, "%s: backward returned %s", n->name, tg_status_name(st));
out:
    for (int k = 0; k < n->n_out; k++) tg__tensor_release(g[k]);
    return st;
}

static const tg__op_def custom_def = {"CustomFunctionBackward", custom_backward, false, NULL};

/* Tells the saved slots what they are to the node (input k / output k). */
static void label_saved(tg__node *n, tg_tensor *const *in, tg_tensor *const *out) {
    for (int i = 0; i < n->n_saved; i++) {
        tg__saved *sv = &n->saved[i];
        for (int k = 0; k < n->n_out; k++) {
            if (out[k]->storage == sv->storage) {
                sv->is_output = true;
                sv->io_index = k;
                sv->producer = n->name;
                sv->producer_output = k;
                break;
            }
        }
        if (sv->is_output) continue;
        sv->io_index = -1;
        for (int k = 0; k < n->n_in; k++)
            if (in[k]->storage == sv->storage && in[k]->offset == sv->offset) {
                sv->io_index = k;
                break;
            }
    }
}

tg_status tg_function_apply_at(tg_site s, const tg_function *fn, void *user, int n_in,
                               tg_tensor *const *inputs, int n_out, tg_tensor **outputs) {
    const char *who = "tg_function_apply";
    if (outputs && n_out > 0 && n_out <= TG__MAX_IO)
        for (int k = 0; k < n_out; k++) outputs[k] = NULL;
    if (tg__null_arg(fn, who, "fn") || tg__null_arg(outputs, who, "outputs"))
        return tg_last_status();
    if (!fn->forward || !fn->backward || !fn->name)
        return tg__set_error(TG_ERR_NULL, "%s: fn->name, fn->forward and fn->backward must be set",
                             who);
    if (n_in < 0 || n_in > TG__MAX_IO || n_out < 1 || n_out > TG__MAX_IO)
        return tg__set_error(TG_ERR_VALUE, "%s: %s takes %d inputs and %d outputs; allowed are "
                                           "0..%d inputs and 1..%d outputs",
                             who, fn->name, n_in, n_out, TG__MAX_IO, TG__MAX_IO);
    if (n_in > 0 && tg__null_arg(inputs, who, "inputs")) return tg_last_status();
    for (int i = 0; i < n_in; i++)
        if (tg__null_arg(inputs[i], who, "inputs[i]")) return tg_last_status();

    tg__node *node = NULL;
    if (tg__needs_grad(n_in, inputs)) {
        node = tg__node_new(s, &custom_def, fn->name, n_in, inputs, n_out);
        if (!node) return tg_last_status();
        node->fn = fn;
        node->fn_user = user;
    }
    tg_ctx ctx = {node, false, 0};
    tg_tensor *outs[TG__MAX_IO] = {0};
    bool prev_grad = tg_set_grad_enabled(false);
    int prev_scopes = tg__scopes_suspend();
    tg_mem_category prev_cat = tg__set_category_override(TG_MEM_ACTIVATION);
    tg_status st = fn->forward(&ctx, n_in, inputs, n_out, outs, user);
    tg__set_category_override(prev_cat);
    tg__scopes_resume(prev_scopes);
    tg_set_grad_enabled(prev_grad);

    if (st == TG_OK) {
        for (int k = 0; k < n_out && st == TG_OK; k++) {
            tg_tensor *o = outs[k];
            if (!o) {
                st = tg__set_error(TG_ERR_VALUE, "%s: forward of %s returned TG_OK but left "
                                                 "output %d NULL", who, fn->name, k);
                break;
            }
            for (int i = 0; i < n_in; i++)
                if (o == inputs[i])
                    st = tg__set_error(TG_ERR_VALUE, "%s: forward of %s returned its input %d as "
                                                     "output %d; return a new tensor (e.g. "
                                                     "tg_detach or tg_clone of it)",
                                       who, fn->name, i, k);
            for (int j = 0; j < k && st == TG_OK; j++)
                if (o == outs[j])
                    st = tg__set_error(TG_ERR_VALUE, "%s: forward of %s returned the same "
                                                     "tensor as outputs %d and %d", who, fn->name,
                                       j, k);
            if (st == TG_OK && (o->requires_grad || tg__has_grad_fn(o)))
                st = tg__set_error(TG_ERR_VALUE, "%s: forward of %s returned output %d that "
                                                 "already requires grad; return a new tensor",
                                   who, fn->name, k);
        }
    } else if (tg_last_status() == TG_OK) {
        tg__set_error(st, "%s: forward of %s returned %s", who, fn->name, tg_status_name(st));
    }
    if (st != TG_OK) {
        for (int k = 0; k < n_out; k++) tg__tensor_release(outs[k]);
        tg__node_release(node);
        return st;
    }
    if (node) {
        label_saved(node, inputs, outs);
        for (int k = 0; k < n_out; k++) {
            tg__node_set_output(node, k, outs[k]);
            if (outs[k]->view_base) { /* as PyTorch: such a view may not be rebased */
                outs[k]->view_kind = TG__VIEW_CUSTOM;
                outs[k]->view_version = outs[k]->storage->version;
                outs[k]->view_hist = outs[k]->view_base->hist;
            }
        }
        tg__node_release(node); /* the outputs own it now */
    }
    for (int k = 0; k < n_out; k++) {
        outputs[k] = tg__ret(outs[k]);
        if (!outputs[k]) { /* NOMEM registering in a scope */
            for (int j = k + 1; j < n_out; j++) tg__tensor_release(outs[j]);
            for (int j = 0; j < n_out; j++) outputs[j] = NULL; /* earlier ones: the scope's */
            return tg_last_status();
        }
    }
    return TG_OK;
}

int tg_ctx_save(tg_ctx *ctx, tg_tensor *t) {
    if (tg__null_arg(ctx, "tg_ctx_save", "ctx") || tg__null_arg(t, "tg_ctx_save", "t")) return -1;
    if (ctx->in_backward) {
        tg__set_error(TG_ERR_STATE, "tg_ctx_save: only allowed in forward");
        return -1;
    }
    if (!ctx->node) { /* not recording: nothing is kept, but slots still count */
        return ctx->n_unrecorded++;
    }
    return tg__node_save(ctx->node, t, false, -1);
}

tg_tensor *tg_ctx_saved(tg_ctx *ctx, int i) {
    if (tg__null_arg(ctx, "tg_ctx_saved", "ctx")) return NULL;
    if (!ctx->in_backward || !ctx->node)
        return tg__fail(TG_ERR_STATE, "tg_ctx_saved: only allowed in backward");
    return tg__node_saved(ctx->node, i);
}

bool tg_ctx_needs_input_grad(const tg_ctx *ctx, int i) {
    return ctx && ctx->node && i >= 0 && i < ctx->node->n_in &&
           ctx->node->edge[i].kind != TG__EDGE_NONE;
}

bool tg_ctx_is_recording(const tg_ctx *ctx) { return ctx && ctx->node; }

tg_status tg_ctx_set_state(tg_ctx *ctx, const void *data, size_t n) {
    if (tg__null_arg(ctx, "tg_ctx_set_state", "ctx")) return tg_last_status();
    if (n && tg__null_arg(data, "tg_ctx_set_state", "data")) return tg_last_status();
    if (!ctx->node) return TG_OK;
    void *p = tg__xmalloc(n);
    if (!p) return tg_last_status();
    memcpy(p, data, n);
    free(ctx->node->state);
    ctx->node->state = p;
    ctx->node->state_bytes = n;
    return TG_OK;
}

const void *tg_ctx_state(const tg_ctx *ctx) { return ctx && ctx->node ? ctx->node->state : NULL; }

tg_status tg_ctx_fail(tg_ctx *ctx, tg_status st, const char *fmt, ...) {
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    tg__set_errorv(st, fmt, ap);
    va_end(ap);
    return st;
}
