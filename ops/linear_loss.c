/* ops/linear_loss.c - tg_linear_loss: a per-token loss over z = h W^T + b,
 * its gradient computed in forward.
 *
 * The rows are cut into ranges (a chunk: at most plan.chunk_rows kept rows,
 * ignored rows riding along; or whole sequences). For each range:
 *   forward   the chunk's statistics, block by block (tg__lin_fwd_chunk: one
 *             GEMM per block); with one block its logits stay in the workspace
 *   the loss  the range's logprob, entropy and lse as new leaves, the user's
 *             callback builds its loss from them, the loss's own backward
 *             (tg_backward) gives their per-row gradients
 *   gradient  the logits turned into dZ in place with those gradients, then
 *             dh += dZ W, dW += dZ^T h, db += 1^T dZ (tg__lin_bwd_chunk: two
 *             GEMMs; with several blocks each block's logits are recomputed)
 * The returned loss is the sum of the ranges' losses; its node hands the
 * accumulated gradients, times its upstream gradient, to the inputs. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

#undef WHO
#define WHO "tg_linear_loss"
#define LOSS_NAME "LinearLossBackward"

/* The node: iparam[k] (k = 0 hidden, 1 weight, 2 bias) is the saved slot of
 * input k's gradient, -1 when not computed. */
enum { P_GRAD_SLOT = 0 };

tg_linear_loss_opts tg_linear_loss_opts_default(void) {
    tg_linear_loss_opts o;
    memset(&o, 0, sizeof o);
    o.temperature = 1.0;
    o.ignore_index = -100;
    o.entropy_grad = true;
    o.callback_scope = true;
    return o;
}

/* ---- the node ------------------------------------------------------------------- */

/* g t in a new tensor of t's dtype (bf16: through f32, rounded once more). */
static tg_tensor *scaled(tg_site s, tg_tensor *t, double g) {
    const tg_device dev = t->storage->device;
    tg_tensor *r = tg__new_output_on(s, LOSS_NAME, dev, t->dtype, t->ndim, t->shape);
    if (!r) return NULL;
    if (t->dtype != TG_BF16) return tg__k_ok(tg__k_unary(TG__UN_SCALE, r, t, NULL, g, 0), r);
    tg_tensor *f = tg__new_output_on(s, LOSS_NAME, dev, TG_F32, t->ndim, t->shape);
    tg_status st = f ? tg__k_copy(f, t) : tg_last_status();
    if (st == TG_OK) st = tg__k_unary(TG__UN_SCALE, f, f, NULL, g, 0);
    if (st == TG_OK) st = tg__k_copy(r, f);
    tg__tensor_release(f);
    return tg__k_ok(st, r);
}

static tg_status loss_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    double g = 0.0;
    tg_status rc = tg_item(gout[0], &g);
    for (int k = 0; rc == TG_OK && k < n->n_in; k++) {
        if (n->edge[k].kind == TG__EDGE_NONE || n->iparam[P_GRAD_SLOT + k] < 0) continue;
        tg_tensor *t = tg__node_saved(n, (int)n->iparam[P_GRAD_SLOT + k]);
        /* g == 1 (loss.backward()): the gradient as forward made it; the
         * engine copies it when the node keeps it (retain_graph) */
        gin[k] = t && g != 1.0 ? scaled(n->site, t, g) : tg_retain(t);
        tg__tensor_release(t);
        if (!gin[k]) rc = tg_last_status();
    }
    if (rc != TG_OK)
        for (int k = 0; k < n->n_in; k++) {
            tg__tensor_release(gin[k]);
            gin[k] = NULL;
        }
    return rc;
}

static const tg__op_def loss_def = {LOSS_NAME, loss_backward, false, NULL};

/* ---- the call's state ------------------------------------------------------------ */

typedef struct loss_call {
    lin loop;
    const tg_linear_loss_opts *o;
    tg_linear_loss_fn fn;
    void *user;
    bool record, want[3];     /* a gradient recorded; for hidden, weight, bias */
    fwd_out F;                /* (N) logprob, entropy; (N, 3) statistics */
    tg__lin_bwd B;            /* a chunk's upstream gradients; dh (N, d), dW (V, d), db (V) */
    tg_tensor *leaf_grad[3];  /* (range rows) the range's leaves' gradients, or NULL */
    tg__node *node;           /* recording: LinearLossBackward, the inputs saved in slots
                                 0..n_in-1 before the chunks run */
    double total;             /* the sum of the ranges' losses */
} loss_call;

static void call_free(loss_call *L) {
    tg__node_release(L->node); /* the loss owns it once made */
    tg_tensor *all[8] = {L->F.lp, L->F.H, L->F.st, L->B.dh, L->B.dw, L->B.db, L->B.ones, NULL};
    for (int k = 0; k < 8; k++) tg__tensor_release(all[k]);
    tg__lin_done(&L->loop);
}

/* ---- checks --------------------------------------------------------------------- */

static tg_status check_seqs(const tg_linear_loss_opts *o, int64_t N) {
    if (!o->seq_lens) {
        if (o->n_seqs != 0)
            return tg__set_error(TG_ERR_VALUE, "%s: n_seqs is %lld but seq_lens is NULL", WHO,
                                 (long long)o->n_seqs);
        return TG_OK;
    }
    if (o->n_seqs < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: n_seqs must be >= 0, got %lld", WHO,
                             (long long)o->n_seqs);
    int64_t sum = 0;
    for (int64_t i = 0; i < o->n_seqs; i++) {
        if (o->seq_lens[i] < 0 || o->seq_lens[i] > N - sum)
            return tg__set_error(TG_ERR_VALUE,
                                 "%s: seq_lens[%lld] is %lld: the lengths must be >= 0 and sum "
                                 "to the %lld rows of hidden",
                                 WHO, (long long)i, (long long)o->seq_lens[i], (long long)N);
        sum += o->seq_lens[i];
    }
    if (sum != N)
        return tg__set_error(TG_ERR_VALUE,
                             "%s: seq_lens sum to %lld but hidden has %lld rows", WHO,
                             (long long)sum, (long long)N);
    return TG_OK;
}

/* The fused op's options for the loop. */
static tg_linear_logprob_opts loop_opts(const tg_linear_loss_opts *o) {
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.temperature = o->temperature;
    lo.ignore_index = o->ignore_index;
    lo.workspace_bytes = o->workspace_bytes;
    lo.chunk_rows = o->chunk_rows;
    lo.vocab_block = o->vocab_block;
    lo.grad_f32 = o->grad_f32;
    return lo;
}

/* ---- ranges --------------------------------------------------------------------- */

static int64_t kept_in(const lin *loop, int64_t a, int64_t b) {
    int64_t k = 0;
    for (int64_t i = a; i < b; i++) k += loop->in.yh[i] != loop->in.ignore;
    return k;
}

/* A sequence longer (in kept rows) than a chunk is a chunk of its own: the
 * plan's chunk grows to the longest. */
static void fit_sequences(loss_call *L) {
    const tg_linear_loss_opts *o = L->o;
    int64_t at = 0, most = 0;
    for (int64_t i = 0; i < o->n_seqs; i++) {
        const int64_t k = kept_in(&L->loop, at, at + o->seq_lens[i]);
        if (k > most) most = k;
        at += o->seq_lens[i];
    }
    if (most > L->loop.plan.chunk_rows) L->loop.plan.chunk_rows = most;
}

/* The end of the range starting at row a (with sequences, *seq is the next
 * sequence and moves past the range's). */
static int64_t range_end(const loss_call *L, int64_t a, int64_t *seq) {
    const lin *loop = &L->loop;
    const int64_t cap = loop->plan.chunk_rows;
    int64_t e = a, kept = 0;
    if (L->o->seq_lens) {
        while (*seq < L->o->n_seqs) {
            const int64_t len = L->o->seq_lens[*seq], k = kept_in(loop, e, e + len);
            if (kept > 0 && kept + k > cap) break;
            kept += k;
            e += len;
            ++*seq;
        }
        return e;
    }
    while (e < loop->in.N && (kept < cap || loop->in.yh[e] == loop->in.ignore))
        kept += loop->in.yh[e++] != loop->in.ignore;
    return e;
}

/* ---- one range ------------------------------------------------------------------- */

/* The range's rows [a, b) of a per-row tensor: a new leaf (requiring grad
 * when asked). */
static tg_tensor *leaf_rows(const lin *loop, tg_tensor *src, int64_t a, int64_t n,
                            bool requires_grad, const char *name) {
    tg_tensor *from = tg__lin_alias_rows(loop, src, a, n, -1, 1);
    tg_tensor *t = from ? tg__new_output_on(loop->in.s, WHO, loop->in.dev, loop->in.dt, 1, &n)
                        : NULL;
    tg_status st = t ? tg__k_copy(t, from) : tg_last_status();
    tg__tensor_release(from);
    if (st == TG_OK && requires_grad) st = tg_set_requires_grad(t, true);
    if (st != TG_OK) {
        tg__tensor_release(t);
        return NULL;
    }
    tg_set_name(t, name);
    return t;
}

/* The range's lse (M / T + ls from its rows of the statistics; 0 on
 * ignored rows), a new leaf. */
static tg_tensor *lse_rows(const loss_call *L, int64_t a, int64_t n, bool requires_grad) {
    const lin *loop = &L->loop;
    tg_tensor *st = tg__lin_alias_rows(loop, L->F.st, 3 * a, n, 3, 3);
    tg_tensor *t = st ? tg__lpe_lse_rows(loop->in.s, WHO, st, 3, loop->in.inv_t, loop->in.dev,
                                         loop->in.dt)
                      : NULL;
    tg__tensor_release(st);
    if (t && requires_grad && tg_set_requires_grad(t, true) != TG_OK) {
        tg__tensor_release(t);
        return NULL;
    }
    if (t) tg_set_name(t, "chunk lse");
    return t;
}

/* Refuses a loss that reaches a tensor requiring grad other than the
 * chunk's leaves (walking its graph from its grad_fn). */
static tg_status own_leaves_only(tg_tensor *loss, tg_tensor *const *mine, int64_t a, int64_t b) {
    tg__node *root = NULL;
    if (!tg__grad_fn(loss, &root)) return tg_last_status();
    tg_tensor *foreign = NULL;
    if (!root) { /* the loss is a leaf itself */
        foreign = loss != mine[0] && loss != mine[1] && loss != mine[2] ? tg_retain(loss) : NULL;
    }
    size_t n = root ? 1 : 0, cap = 16;
    tg__node **seen = root ? tg__xmalloc(cap * sizeof *seen) : NULL;
    if (root && !seen) return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
    if (root) seen[0] = root;
    /* seen[0..n) are the nodes found; each is expanded once, in order */
    for (size_t i = 0; i < n && !foreign; i++) {
        tg__node *node = seen[i];
        for (int k = 0; k < node->n_in && !foreign; k++) {
            const tg__edge *e = &node->edge[k];
            if (e->kind == TG__EDGE_LEAF) {
                tg_tensor *leaf = tg__edge_leaf_get(e);
                if (leaf && leaf != mine[0] && leaf != mine[1] && leaf != mine[2])
                    foreign = leaf;
                else
                    tg__tensor_release(leaf);
            } else if (e->kind == TG__EDGE_NODE) {
                bool known = false;
                for (size_t j = 0; j < n && !known; j++) known = seen[j] == e->node;
                if (known) continue;
                if (n == cap) {
                    tg__node **more = realloc(seen, 2 * cap * sizeof *seen);
                    if (!more) {
                        free(seen);
                        return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
                    }
                    seen = more, cap *= 2;
                }
                seen[n++] = e->node;
            }
        }
    }
    free(seen);
    if (!foreign) return TG_OK;
    tg_status st = tg__set_error(
        TG_ERR_VALUE,
        "%s: the loss of rows [%lld, %lld) depends on %s, which requires grad and is not this "
        "chunk's logprob, entropy or lse (another chunk's tensor, or a parameter): a chunk's "
        "loss may depend only on its own rows' statistics and on tensors that do not require "
        "grad",
        WHO, (long long)a, (long long)b, TG__LABEL(foreign));
    tg__tensor_release(foreign);
    return st;
}

/* What the callback returned, checked: one floating element on the inputs'
 * device, no foreign tensor requiring grad behind it. */
static tg_status check_loss(const loss_call *L, tg_tensor *loss, tg_tensor *const *mine,
                            int64_t a, int64_t b) {
    char sh[160];
    if (!loss)
        return tg__set_error(TG_ERR_VALUE,
                             "%s: the loss function returned TG_OK but no loss for rows "
                             "[%lld, %lld)",
                             WHO, (long long)a, (long long)b);
    if (tg__k_numel(loss->ndim, loss->shape) != 1)
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: the loss of rows [%lld, %lld) has shape %s: it must be one "
                             "element (sum the chunk's per-token terms)",
                             WHO, (long long)a, (long long)b,
                             tg__shape_str(sh, sizeof sh, loss->ndim, loss->shape));
    if (!tg__is_floating(loss->dtype))
        return tg__set_error(TG_ERR_DTYPE, "%s: the loss of rows [%lld, %lld) is %s: it must be "
                             "f32, f64 or bf16", WHO, (long long)a, (long long)b,
                             tg_dtype_name(loss->dtype));
    if (loss->storage->device != L->loop.in.dev)
        return tg__set_error(TG_ERR_DEVICE, "%s: the loss of rows [%lld, %lld) is on %s but "
                             "the inputs are on %s", WHO, (long long)a, (long long)b,
                             tg__device_name(loss->storage->device),
                             tg__device_name(L->loop.in.dev));
    return tg__req_grad(loss) ? own_leaves_only(loss, mine, a, b) : TG_OK;
}

/* Runs the callback with the outer scopes hidden, inside a scope of its own
 * when callback_scope: what it makes there is released when it returns,
 * except its loss, which becomes the caller's reference (*loss: NULL on
 * failure). A failure keeps the callback's message, the chunk's rows named. */
static tg_status call_back(const loss_call *L, const tg_linear_loss_chunk *ch, tg_tensor **loss) {
    *loss = NULL;
    const int prev = tg__scopes_suspend();
    const int depth = tg_scope_depth();
    const int token = L->o->callback_scope ? tg_scope_begin() : 0;
    tg_status st = token < 0 ? tg_last_status() : TG_OK;
    char msg[512] = "";
    tg_tensor *out = NULL;
    if (st == TG_OK) {
        tg_clear_error();
        st = L->fn(ch, L->user, &out);
        if (st != TG_OK && tg_last_status() == st && tg_last_error())
            snprintf(msg, sizeof msg, "%s", tg_last_error());
        /* the scopes opened since (ours, and any the callback left open) end,
         * innermost first; a loss made in one moves out a scope at a time,
         * one the callback owns outright (tg_retain) is already the caller's */
        for (int d = tg_scope_depth(); d > depth; d--) {
            if (out && !tg_scope_keep(out)) tg_clear_error();
            if (tg_scope_end(d) != TG_OK) tg_clear_error();
        }
    }
    tg__scopes_resume(prev);
    if (st == TG_OK) {
        *loss = out;
        return TG_OK;
    }
    tg__tensor_release(out);
    if (token < 0) return st;
    return tg__set_error(st, "%s: the loss function failed on rows [%lld, %lld): %s", WHO,
                         (long long)ch->row_start, (long long)ch->row_end,
                         msg[0] ? msg : tg_status_name(st));
}

/* The leaves' gradients (new references in L->leaf_grad; NULL where the
 * loss did not reach a leaf). */
static tg_status take_grads(loss_call *L, tg_tensor *const *mine) {
    for (int k = 0; k < 3; k++) {
        const int prev = tg__scopes_suspend(); /* tg_grad's reference is ours */
        tg_clear_error();
        L->leaf_grad[k] = tg_grad(mine[k]);
        tg__scopes_resume(prev);
        if (!L->leaf_grad[k] && tg_last_status() != TG_OK) return tg_last_status();
    }
    return TG_OK;
}

/* Runs the callback on the leaves of rows [a, b); adds its value to the
 * total and, when recording, keeps the leaves' gradients (L->leaf_grad). */
static tg_status range_loss(loss_call *L, int64_t index, int64_t a, int64_t b) {
    const lin *loop = &L->loop;
    const int64_t n = b - a;
    tg_tensor *mine[3] = {NULL, NULL, NULL}, *loss = NULL;
    mine[0] = leaf_rows(loop, L->F.lp, a, n, L->record, "chunk logprob");
    mine[1] = mine[0] ? leaf_rows(loop, L->F.H, a, n, L->record && L->o->entropy_grad,
                                  "chunk entropy")
                      : NULL;
    mine[2] = mine[1] ? lse_rows(L, a, n, L->record) : NULL;
    tg_status st = mine[2] ? TG_OK : tg_last_status();
    if (st == TG_OK) {
        tg_linear_loss_chunk ch = {index, a, b, mine[0], mine[1], mine[2], loop->in.yh + a};
        st = call_back(L, &ch, &loss);
    }
    if (st == TG_OK) st = check_loss(L, loss, mine, a, b);
    double v = 0.0;
    if (st == TG_OK) st = tg_item(loss, &v);
    if (st == TG_OK && L->record && tg__req_grad(loss)) {
        /* a gradient the callback put there itself (its own backward) is not
         * the loss's: only this backward's counts */
        for (int k = 0; k < 3; k++) tg__set_grad(mine[k], NULL);
        st = tg_backward(loss, NULL, false);
        if (st == TG_OK) st = take_grads(L, mine);
    }
    if (st == TG_OK) L->total += v;
    tg__tensor_release(loss);
    for (int k = 0; k < 3; k++) tg__tensor_release(mine[k]);
    return st;
}

/* The upstream gradient of the chunk's c kept rows, in order (r0 >= 0: the
 * rows from r0; else loop->buf.rows), from the range's leaf gradient g
 * (rows from a): a view, a gathered copy, or zeros where g is NULL. */
static tg_tensor *kept_rows(const loss_call *L, tg_tensor *g, int64_t a, int64_t r0, int64_t c) {
    const lin *loop = &L->loop;
    if (!g) return tg__zeros_on(loop->in.s, loop->in.dev, loop->in.dt, 1, &c);
    if (r0 >= 0) return tg__lin_alias_rows(loop, g, r0 - a, c, -1, 1); /* .grad: contiguous */
    tg_tensor *out = tg__lin_ws_new(loop, loop->in.dev, loop->in.dt, 1, &c);
    tg_status st = out ? TG_OK : tg_last_status();
    for (int64_t i = 0; st == TG_OK && i < c;) { /* run by run of consecutive rows */
        int64_t j = i + 1;
        while (j < c && loop->buf.rows[j] == loop->buf.rows[i] + (j - i)) j++;
        tg_tensor *from = tg__lin_alias_rows(loop, g, loop->buf.rows[i] - a, j - i, -1, 1);
        tg_tensor *to = from ? tg__lin_alias_rows(loop, out, i, j - i, -1, 1) : NULL;
        st = to ? tg__k_copy(to, from) : tg_last_status();
        tg__tensor_release(from);
        tg__tensor_release(to);
        i = j;
    }
    if (st == TG_OK) return out;
    tg__tensor_release(out);
    return NULL;
}

/* The chunk's rows' gradient: its logits into dZ with the upstream
 * gradients the loss gave its kept rows, then dh, dW, db. */
static tg_status chunk_grad(loss_call *L, int64_t a, int64_t r0, int64_t c) {
    tg_tensor **g[3] = {&L->B.glp, &L->B.gH, &L->B.glse};
    tg_status st = TG_OK;
    for (int k = 0; k < 3 && st == TG_OK; k++)
        if (!(*g[k] = kept_rows(L, L->leaf_grad[k], a, r0, c))) st = tg_last_status();
    L->B.g_local = true;
    if (st == TG_OK) st = tg__lin_bwd_chunk(&L->loop, r0, c, &L->B, true);
    for (int k = 0; k < 3; k++) {
        tg__tensor_release(*g[k]);
        *g[k] = NULL;
    }
    return st;
}

/* One range: its kept rows' statistics, its loss, its rows' gradient. */
static tg_status run_range(loss_call *L, int64_t index, int64_t a, int64_t b) {
    lin *loop = &L->loop;
    int64_t c = 0;
    for (int64_t i = a; i < b; i++)
        if (loop->in.yh[i] != loop->in.ignore) loop->buf.rows[c++] = i;
    const int64_t r0 = c && loop->buf.rows[c - 1] - loop->buf.rows[0] == c - 1
                           ? loop->buf.rows[0]
                           : -1;
    tg_status st = c ? tg__lin_fwd_chunk(loop, r0, c, &L->F) : TG_OK;
    if (st == TG_OK) st = range_loss(L, index, a, b);
    if (st == TG_OK && c && L->record && (L->want[0] || L->want[1] || L->want[2]))
        st = chunk_grad(L, a, r0, c);
    for (int k = 0; k < 3; k++) {
        tg__tensor_release(L->leaf_grad[k]);
        L->leaf_grad[k] = NULL;
    }
    return st;
}

/* ---- the call ------------------------------------------------------------------ */

/* The per-row tensors and accumulators the call needs. */
static tg_status allocate(loss_call *L, tg_tensor *hc) {
    lin *loop = &L->loop;
    const tg_site s = loop->in.s;
    const int64_t N = loop->in.N, V = loop->in.V, d = loop->in.d;
    const tg_dtype dt = loop->in.dt;
    L->F.nstat = 3;
    if (!(L->F.lp = tg__zeros_on(s, loop->in.dev, dt, 1, &N)) ||
        !(L->F.H = tg__zeros_on(s, loop->in.dev, dt, 1, &N)) ||
        !(L->F.st = tg__zeros_on(s, loop->in.dev, TG_F64, 2, (int64_t[]){N, 3})))
        return tg_last_status();
    if (L->record) {
        L->B.st = L->F.st; /* borrowed: released with F */
        L->B.nstat = 3;
        if ((L->want[0] && !(L->B.dh = tg__zeros_on(s, loop->in.dev, dt, hc->ndim, hc->shape))) ||
            (L->want[1] && !(L->B.dw = tg__zeros_on(s, loop->in.dev, dt, 2, (int64_t[]){V, d}))) ||
            (L->want[2] && !(L->B.db = tg__zeros_on(s, loop->in.dev, dt, 1, &V))))
            return tg_last_status();
    }
    if (N == 0) return TG_OK;
    const int64_t zn = loop->plan.chunk_rows * loop->plan.vocab_block;
    if (!(loop->buf.zbuf = tg__lin_ws_new(loop, loop->in.dev, dt, 1, &zn)) ||
        tg__lin_conv_buffers(loop) != TG_OK)
        return tg_last_status();
    if (L->record && loop->gemm.tc && (L->want[0] || L->want[1]) &&
        !(loop->buf.dz16 = tg__lin_ws_new(loop, loop->in.dev, TG_BF16, 1, &zn)))
        return tg_last_status();
    if (L->record && L->want[2]) {
        if (!(L->B.ones = tg__lin_ws_new(loop, loop->in.dev, dt, 1, &loop->plan.chunk_rows)))
            return tg_last_status();
        return tg__k_fill(L->B.ones, 1.0);
    }
    return TG_OK;
}

/* The node, made before the chunks: the inputs saved now, so that the
 * engine's version check (tg__node_check_saved) finds an in-place edit of
 * one while the chunks run (by the loss function, or another thread:
 * chunks would mix its old and new values) as it finds one before
 * backward. */
static tg_status make_node(loss_call *L, tg_tensor *const *ins, int n_in) {
    L->node = tg__node_new(L->loop.in.s, &loss_def, loss_def.name, n_in, ins, 1);
    for (int k = 0; L->node && k < n_in; k++)
        if (tg__node_save(L->node, ins[k], false, k) < 0) return tg_last_status();
    return L->node ? TG_OK : tg_last_status();
}

static const char *const INPUT_NAMES[3] = {"hidden", "weight", "bias"};

/* After the chunks: the inputs unchanged since make_node. */
static tg_status inputs_unchanged(const loss_call *L, int n_in) {
    for (int k = 0; k < n_in; k++) {
        if (tg__node_check_saved(L->node, k) == TG_OK) continue;
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        return tg__set_error(TG_ERR_INPLACE,
                             "%s: %s was modified in place while the loss was computed (chunks "
                             "would mix its old and new values): %s",
                             WHO, INPUT_NAMES[k], msg);
    }
    return TG_OK;
}

/* The 0-d loss holding the total; recording, the node's output, the
 * gradients made in forward saved on it. */
static tg_tensor *make_loss(loss_call *L, int n_in) {
    const lin *loop = &L->loop;
    tg_tensor *loss = tg__new_output_on(loop->in.s, WHO, loop->in.dev, loop->in.dt, 0, NULL);
    if (loss) loss = tg__k_ok(tg__k_fill(loss, L->total), loss);
    if (!loss || !L->record) return loss;
    tg__node *n = L->node;
    tg_tensor *grads[3] = {L->B.dh, L->B.dw, L->B.db};
    static const char *names[3] = {"d hidden (from forward)", "d weight (from forward)",
                                   "d bias (from forward)"};
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) {
        n->iparam[P_GRAD_SLOT + k] = -1;
        if (k >= n_in || !grads[k]) continue;
        tg_set_name(grads[k], names[k]);
        const int slot = tg__node_save(n, grads[k], false, -1);
        ok = slot >= 0;
        n->iparam[P_GRAD_SLOT + k] = slot;
    }
    if (!ok) {
        tg__tensor_release(loss);
        return NULL;
    }
    tg__node_set_output(n, 0, loss);
    return loss;
}

/* hidden's leading shape for a flat (N) output (a new alias; t released). */
static tg_tensor *shaped(const lin *loop, const tg_tensor *hidden, tg_tensor *t) {
    tg_tensor *r = tg__lpe_lead_view(loop->in.s, t, hidden);
    tg__tensor_release(t);
    return r;
}

static tg_status run(loss_call *L, tg_tensor *hidden, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                     tg_tensor **loss_out, tg_tensor **lp_out, tg_tensor **H_out) {
    lin *loop = &L->loop;
    tg_tensor *hc = NULL;
    const tg_linear_logprob_opts lo = loop_opts(L->o);
    tg_status st = tg__lin_check(WHO, hidden, w, b, y, &lo);
    if (st == TG_OK) st = tg__lin_prepare(loop, hidden, w, b, y, &lo, &hc);
    if (st == TG_OK) st = check_seqs(L->o, loop->in.N);
    tg_tensor *ins[3] = {hc, loop->in.w, loop->in.b};
    const int n_in = b ? 3 : 2;
    if (st == TG_OK) {
        L->record = tg__needs_grad(n_in, ins);
        for (int k = 0; k < n_in; k++) L->want[k] = L->record && tg__req_grad(ins[k]);
        if (L->o->seq_lens) fit_sequences(L);
        st = allocate(L, hc);
    }
    if (st == TG_OK && L->record) st = make_node(L, ins, n_in);
    int64_t seq = 0;
    for (int64_t a = 0, index = 0; st == TG_OK && a < loop->in.N; index++) {
        const int64_t e = range_end(L, a, &seq);
        st = run_range(L, index, a, e);
        a = e;
    }
    if (st == TG_OK && L->record) st = inputs_unchanged(L, n_in);
    tg__lin_free_workspace(loop);
    tg_tensor *grads[3] = {L->B.dh, L->B.dw, L->B.db};
    if (st == TG_OK && !L->o->grad_f32) st = tg__lin_grads_to_inputs(loop, grads);
    L->B.dh = grads[0], L->B.dw = grads[1], L->B.db = grads[2];
    tg_tensor *loss = st == TG_OK ? make_loss(L, n_in) : NULL;
    if (st == TG_OK && !loss) st = tg_last_status();
    tg__tensor_release(hc);
    if (st != TG_OK) return st;
    tg_tensor *lp = shaped(loop, hidden, L->F.lp), *H = shaped(loop, hidden, L->F.H);
    L->F.lp = L->F.H = NULL;
    *loss_out = loss;
    *lp_out = lp;
    *H_out = H;
    if (!lp || !H) {
        tg__tensor_release(loss);
        tg__tensor_release(lp);
        tg__tensor_release(H);
        return tg_last_status();
    }
    return TG_OK;
}

tg_status tg_linear_loss_at(tg_site s, tg_tensor *hidden, tg_tensor *weight, tg_tensor *bias,
                            tg_tensor *targets, tg_linear_loss_fn loss_fn, void *user,
                            const tg_linear_loss_opts *opts, tg_tensor **loss,
                            tg_tensor **logprob, tg_tensor **entropy) {
    if (loss) *loss = NULL;
    if (logprob) *logprob = NULL;
    if (entropy) *entropy = NULL;
    if (tg__null_arg(hidden, WHO, "hidden") || tg__null_arg(weight, WHO, "weight") ||
        tg__null_arg(targets, WHO, "targets") || tg__null_arg(loss, WHO, "loss"))
        return tg_last_status();
    if (!loss_fn) return tg__set_error(TG_ERR_NULL, "%s: loss_fn is NULL", WHO);
    const tg_linear_loss_opts o = opts ? *opts : tg_linear_loss_opts_default();
    loss_call L;
    memset(&L, 0, sizeof L);
    L.loop.in.s = s;
    L.loop.in.who = WHO;
    L.o = &o;
    L.fn = loss_fn;
    L.user = user;
    tg_tensor *l = NULL, *lp = NULL, *H = NULL;
    tg_status st = run(&L, hidden, weight, bias, targets, &l, &lp, &H);
    L.B.st = NULL; /* F's */
    call_free(&L);
    if (st != TG_OK) return st;
    if (!tg__ret_reserve(3)) {
        tg__tensor_release(l);
        tg__tensor_release(lp);
        tg__tensor_release(H);
        return tg_last_status();
    }
    *loss = tg__ret(l);
    if (logprob) *logprob = tg__ret(lp);
    else tg__tensor_release(lp);
    if (entropy) *entropy = tg__ret(H);
    else tg__tensor_release(H);
    return TG_OK;
}
