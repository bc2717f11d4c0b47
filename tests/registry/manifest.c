/* tests/registry/manifest.c - the registry as JSON lines for the Python side
 * (tests/registry/tool.c prints them): the rows, their f64 samples, and what
 * tapegrad computes on each sample (outputs, the weights of the loss
 * sum_k sum(out_k * w_k), and the gradient of every differentiable input for
 * it; or the status and message of a failure).
 *
 * Values are written exactly: %.17g for doubles (NaN, Infinity, -Infinity as
 * Python's json reads them), integers for i64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isnan(v)) fputs("NaN", f);
    else if (isinf(v)) fputs(v > 0 ? "Infinity" : "-Infinity", f);
    else if (v == 0) fputs(signbit(v) ? "-0.0" : "0.0", f); /* "-0" would read as the int 0 */
    else fprintf(f, "%.17g", v);
}

/* One tensor: dtype, shape, strided, values (i64 exact). */
static void json_tensor(FILE *f, const tg_tensor *t) {
    if (!t) {
        fputs("null", f);
        return;
    }
    const int64_t n = tg_numel(t);
    fprintf(f, "{\"dtype\": \"%s\", \"shape\": [", tg_dtype_name(tg_get_dtype(t)));
    for (int d = 0; d < tg_ndim(t); d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)tg_shape(t)[d]);
    fprintf(f, "], \"strided\": %s, \"values\": [", tg_is_contiguous(t) ? "false" : "true");
    if (tg_get_dtype(t) == TG_I64) {
        int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v || tg_copy_out(t, TG_I64, v, (size_t)n * sizeof *v) != TG_OK) abort();
        for (int64_t i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
        free(v);
    } else {
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v || tg_copy_out(t, TG_F64, v, (size_t)n * sizeof *v) != TG_OK) abort();
        for (int64_t i = 0; i < n; i++) {
            if (i) fputs(", ", f);
            json_num(f, v[i]);
        }
        free(v);
    }
    fputs("]}", f);
}

static void json_args(FILE *f, const tgr_op *op, const tgr_args *a) {
    fputc('{', f);
    for (int i = 0; i < op->nparams; i++) {
        const tgr_param *p = &op->p[i];
        if (i) fputs(", ", f);
        json_str(f, p->name);
        fputs(": ", f);
        switch (p->kind) {
        case TGR_P_INT: case TGR_P_BOOL: case TGR_P_DIM:
            fprintf(f, "%lld", (long long)a->iv[p->slot]);
            break;
        case TGR_P_REAL: json_num(f, a->fv[p->slot]); break;
        case TGR_P_DTYPE: json_str(f, tg_dtype_name((tg_dtype)a->dtype)); break;
        case TGR_P_SHAPE: case TGR_P_DIMS:
            fputc('[', f);
            for (int d = 0; d < a->ndim; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)a->shape[d]);
            fputc(']', f);
            break;
        case TGR_P_VALS:
            fputc('[', f);
            for (int d = 0; d < a->nvals; d++) {
                if (d) fputs(", ", f);
                json_num(f, a->vals[d]);
            }
            fputc(']', f);
            break;
        }
    }
    fputc('}', f);
}

static void json_sample(FILE *f, const tgr_op *op, const tgr_sample *s);

void tgr_manifest(FILE *f, bool with_samples) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        fputs("{\"row\": ", f);
        json_str(f, op->name);
        fputs(", \"c_name\": ", f);
        json_str(f, op->c_name);
        fputs(", \"torch\": ", f);
        json_str(f, op->torch);
        fputs(", \"params\": [", f);
        for (int k = 0; k < op->nparams; k++) {
            fprintf(f, "%s[", k ? ", " : "");
            json_str(f, op->p[k].name);
            fprintf(f, ", \"%c\", %d]", op->p[k].kind, op->p[k].slot);
        }
        fprintf(f, "], \"nin\": %d, \"nin_required\": %d, \"nout\": %d, \"diff\": %u, "
                   "\"flags\": %u, \"saves_output\": %s}\n",
                op->nin, op->nin_required, op->nout, op->diff, op->flags,
                op->saves == TGR_SAVES_OUTPUT ? "true" : "false");
        if (!with_samples) continue;
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        for (int k = 0; k < ss.n; k++) {
            fputc('{', f);
            json_sample(f, op, &ss.s[k]);
            fputs("}\n", f);
        }
        tgr_samples_free(&ss);
    }
}

/* The sample's part of a line: "row", "what", "flags", "batch", "want", "args",
 * "inputs". */
static void json_sample(FILE *f, const tgr_op *op, const tgr_sample *s) {
    fputs("\"row\": ", f);
    json_str(f, op->name);
    fputs(", \"what\": ", f);
    json_str(f, s->what);
    fprintf(f, ", \"flags\": %u, \"batch\": %u, \"want\": ", s->flags, s->batch);
    json_str(f, tg_status_name(s->want));
    fputs(", \"args\": ", f);
    json_args(f, op, &s->a);
    fputs(", \"inputs\": [", f);
    for (int j = 0; j < s->nin; j++) {
        if (j) fputs(", ", f);
        json_tensor(f, s->in[j]);
    }
    fputc(']', f);
}

static void json_list(FILE *f, const char *key, tg_tensor *const *t, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int k = 0; k < n; k++) {
        if (k) fputs(", ", f);
        json_tensor(f, t[k]);
    }
    fputc(']', f);
}

/* What tapegrad gives on one sample (see tgr_run_json). */
static void run_one(FILE *f, const tgr_op *op, const tgr_sample *s) {
    fputc('{', f);
    json_sample(f, op, s);
    tg_tensor *leaves[TGR_MAX_IN] = {NULL}, *out[TGR_MAX_OUT] = {NULL};
    const bool grad = op->diff && !(op->flags & TGR_CREATE) &&
                      !(s->flags & TGR_S_BAD);
    for (int k = 0; k < s->nin; k++) {
        const tg_tensor *x = s->in[k];
        bool fl = x && (tg_get_dtype(x) == TG_F32 || tg_get_dtype(x) == TG_F64);
        if (grad && fl && (op->diff >> k & 1) && tg_numel(x) == 0) {
            leaves[k] = tgr_over_null(x, TG_CPU, true, true); /* data NULL */
        } else if (grad && fl && (op->diff >> k & 1)) {
            tg_tensor *d = tg_detach(s->in[k]);
            leaves[k] = tg_clone(d);
            tg_release(d);
            tg_set_requires_grad(leaves[k], true);
        } else {
            leaves[k] = tg_retain(s->in[k]);
        }
    }
    tg_clear_error();
    /* bad samples: the op as it is (an in-place op on its target); others as functions */
    tg_status st = s->flags & TGR_S_BAD ? op->apply(op, leaves, &s->a, out)
                                        : tgr_call_in(op, leaves, &s->a, out);
    fputs(", \"status\": ", f);
    json_str(f, tg_status_name(st));
    fputs(", \"message\": ", f);
    json_str(f, st == TG_OK ? "" : tg_last_error());
    if (st == TG_OK) {
        const int n = tgr_nout(op);
        json_list(f, "outputs", out, n);
        tg_tensor *w[TGR_MAX_OUT] = {NULL}, *g[TGR_MAX_IN] = {NULL};
        for (int k = 0; k < n; k++)
            if (out[k] && tg_requires_grad(out[k])) w[k] = tgr_weights(out[k], k);
        json_list(f, "weights", w, n);
        tg_tensor *loss = grad ? tgr_loss(out, n, ~0u) : NULL;
        if (loss && tg_backward(loss, NULL, false) == TG_OK)
            for (int k = 0; k < s->nin; k++)
                if (leaves[k] && tg_requires_grad(leaves[k])) g[k] = tg_grad(leaves[k]);
        json_list(f, "grads", g, s->nin);
        for (int k = 0; k < TGR_MAX_OUT; k++) tg_release(w[k]);
        for (int k = 0; k < TGR_MAX_IN; k++) tg_release(g[k]);
        tg_release(loss);
    }
    fputs("}\n", f);
    for (int k = 0; k < TGR_MAX_OUT; k++) tg_release(out[k]);
    for (int k = 0; k < TGR_MAX_IN; k++) tg_release(leaves[k]);
    tg_clear_error();
}

void tgr_run_json(FILE *f, const char *only) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (only && strcmp(only, op->name)) continue;
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        for (int k = 0; k < ss.n; k++) run_one(f, op, &ss.s[k]);
        tgr_samples_free(&ss);
    }
}
