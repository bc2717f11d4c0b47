/* python/src/fused.c - the fused log-prob / entropy ops (tapegrad/logprob.h)
 * with their options as keyword arguments: logprob_entropy(logits, targets,
 * ...) and linear_logprob_entropy(hidden, weight, targets, bias, ...), each
 * returning (logprob, entropy, lse). Options not given keep the library's
 * defaults (tg_logprob_opts_default, tg_linear_logprob_opts_default). */
#include "tgpy.h"

static const char *const IMPL_NAMES[] = {"fused", "composite"};
static const int IMPL_VALUES[] = {TG_LOGPROB_FUSED, TG_LOGPROB_COMPOSITE};

/* (logprob, entropy, lse) as Tensors (None for an output the library did not
 * make); st's error if it failed. Takes the three references. */
static PyObject *triple(tg_status st, tg_tensor *lp, tg_tensor *h, tg_tensor *lse) {
    tg_tensor *hs[3] = {lp, h, lse};
    if (st != TG_OK) {
        tgpy_raise_status(st);  /* first: releasing could run an owner's code */
        for (int i = 0; i < 3; i++) tgpy_release(hs[i]);
        return NULL;
    }
    PyObject *t = PyTuple_New(3);
    for (int i = 0; i < 3; i++) {
        PyObject *o = !t ? NULL : hs[i] ? tgpy_wrap(hs[i]) : (Py_INCREF(Py_None), Py_None);
        if (!o) {
            for (int j = t ? i + 1 : i; j < 3; j++) tgpy_release(hs[j]);
            Py_XDECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static PyObject *f_logprob_entropy(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames) {
    (void)mod;
    static const char *const names[] = {"logits", "targets", "temperature", "ignore_index",
                                        "entropy_grad", "chunk_size", "impl", "want_entropy"};
    PyObject *a[8];
    if (tgpy_parse("logprob_entropy", names, 8, 2, NULL, args, nargs, kwnames, a) < 0)
        return NULL;
    tgpy_call c;
    tgpy_call_init(&c, "logprob_entropy");
    tg_logprob_opts o = tg_logprob_opts_default();
    tg_tensor *z, *y;
    int impl = (int)o.impl;
    PyObject *r = NULL;
    if (tgpy_tensor_arg(&c, a[0], "logits", false, -1, &z) < 0 ||
        tgpy_tensor_arg(&c, a[1], "targets", false, -1, &y) < 0 ||
        (a[2] && tgpy_double_arg(&c, a[2], "temperature", &o.temperature) < 0) ||
        (a[3] && tgpy_int64_arg(&c, a[3], "ignore_index", &o.ignore_index) < 0) ||
        (a[4] && tgpy_bool_arg(&c, a[4], "entropy_grad", &o.entropy_grad) < 0) ||
        (a[5] && tgpy_int64_arg(&c, a[5], "chunk_size", &o.chunk_size) < 0) ||
        (a[6] && tgpy_enum_arg(&c, a[6], "impl", NULL, "", IMPL_NAMES, IMPL_VALUES, 2, &impl) <
                     0) ||
        (a[7] && tgpy_bool_arg(&c, a[7], "want_entropy", &o.want_entropy) < 0))
        goto done;
    o.impl = (tg_logprob_impl)impl;
    tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
    tg_site s = tgpy_site();
    tg_status st;
    TGPY_NOGIL(st = tg_logprob_entropy_lse_at(s, z, y, &o, &lp, &h, &lse));
    r = triple(st, lp, h, lse);
done:
    tgpy_call_done(&c);
    return r;
}

static PyObject *f_linear_logprob_entropy(PyObject *mod, PyObject *const *args,
                                          Py_ssize_t nargs, PyObject *kwnames) {
    (void)mod;
    static const char *const names[] = {"hidden", "weight", "targets", "bias", "temperature",
                                        "ignore_index", "entropy_grad", "chunk_rows",
                                        "vocab_block", "impl", "workspace_bytes", "want_entropy"};
    PyObject *a[12];
    if (tgpy_parse("linear_logprob_entropy", names, 12, 3, NULL, args, nargs, kwnames, a) < 0)
        return NULL;
    tgpy_call c;
    tgpy_call_init(&c, "linear_logprob_entropy");
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    tg_tensor *hid, *w, *y, *b = NULL;
    int impl = (int)o.impl;
    int64_t ws = (int64_t)o.workspace_bytes;
    PyObject *r = NULL;
    if (tgpy_tensor_arg(&c, a[0], "hidden", false, -1, &hid) < 0 ||
        tgpy_tensor_arg(&c, a[1], "weight", false, -1, &w) < 0 ||
        tgpy_tensor_arg(&c, a[2], "targets", false, -1, &y) < 0 ||
        (a[3] && tgpy_tensor_arg(&c, a[3], "bias", true, -1, &b) < 0) ||
        (a[4] && tgpy_double_arg(&c, a[4], "temperature", &o.temperature) < 0) ||
        (a[5] && tgpy_int64_arg(&c, a[5], "ignore_index", &o.ignore_index) < 0) ||
        (a[6] && tgpy_bool_arg(&c, a[6], "entropy_grad", &o.entropy_grad) < 0) ||
        (a[7] && tgpy_int64_arg(&c, a[7], "chunk_rows", &o.chunk_rows) < 0) ||
        (a[8] && tgpy_int64_arg(&c, a[8], "vocab_block", &o.vocab_block) < 0) ||
        (a[9] && tgpy_enum_arg(&c, a[9], "impl", NULL, "", IMPL_NAMES, IMPL_VALUES, 2, &impl) <
                     0) ||
        (a[10] && tgpy_int64_arg(&c, a[10], "workspace_bytes", &ws) < 0) ||
        (a[11] && tgpy_bool_arg(&c, a[11], "want_entropy", &o.want_entropy) < 0))
        goto done;
    if (ws < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "tapegrad.linear_logprob_entropy: workspace_bytes must be >= 0");
        goto done;
    }
    o.impl = (tg_logprob_impl)impl;
    o.workspace_bytes = (size_t)ws;
    tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
    tg_site s = tgpy_site();
    tg_status st;
    TGPY_NOGIL(st = tg_linear_logprob_entropy_at(s, hid, w, b, y, &o, &lp, &h, &lse));
    r = triple(st, lp, h, lse);
done:
    tgpy_call_done(&c);
    return r;
}

PyMethodDef tgpy_fused_functions[] = {
    {"logprob_entropy", (PyCFunction)(void (*)(void))f_logprob_entropy,
     METH_FASTCALL | METH_KEYWORDS,
     "logprob_entropy(logits, targets, temperature=1.0, ignore_index=-100, entropy_grad=True, "
     "chunk_size=0, impl='fused', want_entropy=True) -> (logprob, entropy, lse): "
     "tg_logprob_entropy_lse (entropy None without want_entropy)."},
    {"linear_logprob_entropy", (PyCFunction)(void (*)(void))f_linear_logprob_entropy,
     METH_FASTCALL | METH_KEYWORDS,
     "linear_logprob_entropy(hidden, weight, targets, bias=None, temperature=1.0, "
     "ignore_index=-100, entropy_grad=True, chunk_rows=0, vocab_block=0, impl='fused', "
     "workspace_bytes=0, want_entropy=True) -> (logprob, entropy, lse): "
     "tg_linear_logprob_entropy (entropy None without want_entropy)."},
    {NULL, NULL, 0, NULL}};
