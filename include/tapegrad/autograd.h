/* tapegrad/autograd.h - grad mode, requires_grad, backward, detach, custom
 * functions, scopes.
 *
 * Semantics follow PyTorch's autograd:
 *  - an op records a graph node (its grad_fn) only when grad mode is on and at
 *    least one input requires grad; otherwise it records and saves nothing;
 *  - tensors an op saves for backward remember the version of their storage;
 *    tg_backward() fails with TG_ERR_INPLACE if it has moved, and the message
 *    names the in-place ops (and call sites) that moved it;
 *  - saved tensors are freed by tg_backward() unless retain_graph is true.
 * Backward itself runs with grad mode off (no higher-order gradients).
 */
#ifndef TAPEGRAD_AUTOGRAD_H
#define TAPEGRAD_AUTOGRAD_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- grad mode (per thread, on by default) ------------------------------ */

/* Sets this thread's grad mode; returns the previous value. */
bool tg_set_grad_enabled(bool enabled);
bool tg_is_grad_enabled(void);

/* Runs the following statement or block with grad mode off, then restores the
 * previous mode:  TG_NO_GRAD { h = tg_entropy(...); }
 * With GCC and clang the mode is restored however the block is left: at its
 * end, by break, continue, return or goto (a cleanup handler on the loop's
 * state). Other compilers get a plain loop: there, leave the block only at
 * its end. Blocks nest (on separate lines). */
typedef struct tg_no_grad_state {
    bool prev; /* the mode to restore */
    bool once; /* the loop body has not run yet */
} tg_no_grad_state;
static inline void tg__no_grad_exit(tg_no_grad_state *s) { tg_set_grad_enabled(s->prev); }
#define TG__NG_CAT2(a, b) a##b
#define TG__NG_CAT(a, b) TG__NG_CAT2(a, b)
#define TG__NG TG__NG_CAT(tg__ng_, __LINE__)
#if defined(__GNUC__) || defined(__clang__)
#define TG_NO_GRAD                                                                          \
    for (tg_no_grad_state TG__NG __attribute__((cleanup(tg__no_grad_exit))) =              \
             {tg_set_grad_enabled(false), true};                                            \
         TG__NG.once; TG__NG.once = false)
#else
#define TG_NO_GRAD                                                                          \
    for (tg_no_grad_state TG__NG = {tg_set_grad_enabled(false), true}; TG__NG.once;         \
         TG__NG.once = false, tg_set_grad_enabled(TG__NG.prev))
#endif

/* ---- requires_grad, leaves, .grad ---------------------------------------- */

/* Marks a leaf (a tensor with no grad_fn) as requiring grad, or not. As in
 * PyTorch, asking a non-leaf for what it already has (requires_grad true) is
 * a no-op, and any leaf may be told not to require grad. A gradient that
 * reaches a leaf after it stopped requiring grad is not added to its .grad.
 * Errors: TG_ERR_NULL; TG_ERR_DTYPE (only f32/f64/bf16 can require grad);
 * TG_ERR_AUTOGRAD (false for a non-leaf). */
tg_status tg_set_requires_grad(tg_tensor *t, bool requires_grad);
/* A leaf marked so, any tensor with a grad_fn, or a view whose base requires
 * grad. */
bool tg_requires_grad(const tg_tensor *t);
/* True when t has no grad_fn (created by the user, or under no-grad). */
bool tg_is_leaf(const tg_tensor *t);
/* Name of t's graph node ("MulBackward"), or NULL for a leaf. Static string.
 * For a view whose base's history was rebased since, the node is made first
 * (AsStridedBackward); NULL with TG_ERR_AUTOGRAD set when that is refused (a
 * view made in no-grad mode or by a custom function). */
const char *tg_grad_fn_name(const tg_tensor *t);

/* A new reference to the gradient accumulated in leaf t, or NULL if there is
 * none yet (status untouched), t is NULL (NULL propagation), or the innermost
 * open scope has no room left for it (TG_ERR_NOMEM: clear the error first
 * where a NULL must tell "no gradient" from a failure). A later backward
 * never writes into a .grad you hold a reference to: it puts a new sum in
 * its place (so another thread's backward cannot change it under you). */
tg_tensor *tg_grad(const tg_tensor *t);

/* Drops t's accumulated gradient (PyTorch's zero_grad(set_to_none=True)). */
tg_status tg_zero_grad(tg_tensor *t);

/* A new tensor on the same storage (and version counter) as t, with no
 * grad_fn and requires_grad false. */
tg_tensor *tg_detach_at(tg_site s, tg_tensor *t);
#define tg_detach(t) tg_detach_at(TG_SITE, t)

/* Back-propagates from root. grad is the upstream gradient (root's shape; of
 * another dtype it is converted to root's, as PyTorch does), or NULL for a
 * one-element root (gradient 1). Gradients are
 * accumulated into the .grad of every leaf that requires grad. Unless
 * retain_graph, the saved tensors of every node visited are freed.
 * Errors: TG_ERR_NULL; TG_ERR_AUTOGRAD (root does not require grad, or is not
 * a single element and grad is NULL); TG_ERR_SHAPE (grad's shape is not
 * root's); TG_ERR_DTYPE (a bf16 grad for a root of another dtype); TG_ERR_INPLACE (a saved tensor was modified in place);
 * TG_ERR_FREED (saved tensors already freed by an earlier backward);
 * TG_ERR_NOMEM; whatever a custom function's backward returned.
 * On failure no leaf's .grad is changed. The graph is validated before any
 * work starts; a failure found later (a custom backward that fails or modifies
 * a saved tensor) may leave nodes visited before it with their saved tensors
 * freed (when retain_graph is false), as in PyTorch.
 * Threads: graphs of several threads may share leaves and nodes; one
 * backward runs at a time in the process (a lock held for the whole call,
 * which a custom backward on the same thread may take again), and every
 * leaf's .grad ends up the sum of all of them. Forward ops keep running on
 * other threads meanwhile. A release callback (tg_from_blob) of a storage
 * that dies during the call runs just before it returns, with no lock held. */
tg_status tg_backward(tg_tensor *root, tg_tensor *grad, bool retain_graph);

/* ---- custom functions (like torch.autograd.Function) ------------------- */

typedef struct tg_ctx tg_ctx;

typedef struct tg_function {
    /* Node name shown as grad_fn and in messages, e.g. "EntropyBackward". */
    const char *name;
    /* Computes outputs[0..n_out-1] (new references) from inputs. Runs with grad
     * mode off. May save tensors (inputs, outputs or views of them) with
     * tg_ctx_save and state with tg_ctx_set_state. Return TG_OK or an error
     * (set with tg_ctx_fail, or any tapegrad error). */
    tg_status (*forward)(tg_ctx *ctx, int n_in, tg_tensor *const *inputs, int n_out,
                         tg_tensor **outputs, void *user);
    /* Computes grad_inputs[i] (new references, same shape/dtype as input i, or
     * NULL for zero) for each input i with tg_ctx_needs_input_grad(ctx, i).
     * grad_outputs[k] is never NULL (zeros when output k got no gradient).
     * Runs with grad mode off. */
    tg_status (*backward)(tg_ctx *ctx, int n_out, tg_tensor *const *grad_outputs,
                          int n_in, tg_tensor **grad_inputs, void *user);
} tg_function;

/* Applies fn: calls fn->forward, and when grad mode is on and an input requires
 * grad, records a node (named fn->name) as grad_fn of every output. fn and user
 * must outlive the graph. outputs[] receives n_out new references.
 * Errors: TG_ERR_NULL, TG_ERR_VALUE (n_in/n_out out of 0..16, 1..16), whatever
 * forward returned (outputs are then all NULL and nothing is recorded). */
tg_status tg_function_apply_at(tg_site s, const tg_function *fn, void *user, int n_in,
                               tg_tensor *const *inputs, int n_out, tg_tensor **outputs);
#define tg_function_apply(fn, user, n_in, inputs, n_out, outputs)               \
    tg_function_apply_at(TG_SITE, fn, user, n_in, inputs, n_out, outputs)

/* In forward: saves t for backward (version-checked like any saved tensor).
 * Saving an output creates no reference cycle. Returns the slot index (>= 0),
 * or -1 on error (TG_ERR_NULL, TG_ERR_NOMEM). When nothing is being recorded
 * (grad off / no input requires grad) nothing is saved and the slot index is
 * still returned, so forward code does not need two paths. */
int tg_ctx_save(tg_ctx *ctx, tg_tensor *t);

/* In backward: a new reference to saved slot i, as a tensor that does not
 * require grad. Returns NULL with TG_ERR_INPLACE if the tensor was modified in
 * place since it was saved, TG_ERR_FREED if freed, TG_ERR_VALUE for a bad i. */
tg_tensor *tg_ctx_saved(tg_ctx *ctx, int i);

/* True when input i needs a gradient (it requires grad). */
bool tg_ctx_needs_input_grad(const tg_ctx *ctx, int i);

/* True in forward when a node is being recorded (saves will be kept). */
bool tg_ctx_is_recording(const tg_ctx *ctx);

/* Copies n bytes of state (scalars, options) into the node; tg_ctx_state()
 * returns it in backward. Errors: TG_ERR_NOMEM. */
tg_status tg_ctx_set_state(tg_ctx *ctx, const void *data, size_t n);
const void *tg_ctx_state(const tg_ctx *ctx);

/* Records an error for this thread (printf-style message) and returns st, for
 * `return tg_ctx_fail(ctx, TG_ERR_VALUE, "row %d ...", r);` in callbacks. */
tg_status tg_ctx_fail(tg_ctx *ctx, tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- scopes (autorelease pools) ------------------------------------------ */

/* Opens a scope on this thread and returns its token (its depth, >= 1). Every
 * tensor returned to the caller while it is the innermost open scope is owned
 * by it and released by tg_scope_end(token), unless kept. Scopes nest.
 * Inside custom-function callbacks and tg_gradcheck's fn, scopes opened
 * outside are hidden and ownership follows the no-scope rules exactly: the
 * callback owns every reference it receives (also the input's own handle
 * returned by tg_contiguous, tg_to_dtype, tg_reshape or tg_to_device when no
 * copy is needed) and releases it, even when an outer scope owns another
 * reference to that tensor; scopes opened inside the callback work as usual.
 * Returns -1 with TG_ERR_NOMEM on failure. */
int tg_scope_begin(void);

/* Closes the innermost scope; token must be the one its tg_scope_begin
 * returned (TG_ERR_STATE otherwise, nothing released). */
tg_status tg_scope_end(int token);

/* How many scopes are open on this thread: the token of the innermost one, 0
 * when none (scopes hidden inside a callback count). */
int tg_scope_depth(void);

/* Closes scopes, innermost first, until depth remain open, releasing what
 * they own. For a test fixture's teardown: tg_scope_unwind(0) closes what a
 * failed assertion left open (it skipped the test's tg_scope_end). Errors:
 * TG_ERR_STATE, nothing closed, when depth < 0, depth > tg_scope_depth(), or
 * inside a callback below the scopes it hides. */
tg_status tg_scope_unwind(int depth);

/* Takes t out of the innermost scope: the reference moves to the enclosing
 * scope, or to the caller (who must tg_release it) when there is none.
 * Returns t; NULL passes through. TG_ERR_STATE (returning NULL) if t is not
 * owned by the innermost scope. */
tg_tensor *tg_scope_keep(tg_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
