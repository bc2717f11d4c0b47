/* python/src/ops_run.c - how every op generated from the headers is called
 * (ops_gen.c holds one table entry and one call stub per op): the arguments
 * parsed by position or name, each converted by its C kind with the checks of
 * convert.c, the library called with the GIL released, the result wrapped. A
 * Python number or list given for a tensor becomes a tensor of the dtype
 * PyTorch would compute in beside the op's Tensor arguments, and lives until
 * the call returns. */
#include "tgpy.h"

#include <string.h>

enum { MAX_OUTS = 4 }; /* extra outputs (TGPY_OUT) of one op */

/* The like dtype of the Tensors among the tensor arguments (a sequence of
 * tensors works out its own, tgpy_tensors_arg). */
static int like_of(const tgpy_op_def *def, PyObject *const *a) {
    PyObject *tensors[16];
    int n = 0;
    for (int i = 0; i < def->n_params && n < 16; i++) {
        tgpy_kind k = def->params[i].kind;
        if (a[i] && (k == TGPY_TENSOR || k == TGPY_TENSOR_OPT)) tensors[n++] = a[i];
    }
    return tgpy_like_dtype(tensors, n);
}

static int convert(tgpy_call *c, const tgpy_param *p, PyObject *o, int like, tgpy_arg *out) {
    switch (p->kind) {
    case TGPY_TENSOR: return tgpy_tensor_arg(c, o, p->name, false, like, &out->t);
    case TGPY_TENSOR_OPT: return tgpy_tensor_arg(c, o, p->name, true, like, &out->t);
    case TGPY_INT: return tgpy_int_arg(c, o, p->name, &out->i);
    case TGPY_INT64: return tgpy_int64_arg(c, o, p->name, &out->l);
    case TGPY_UINT64: return tgpy_uint64_arg(c, o, p->name, &out->u);
    case TGPY_DOUBLE: return tgpy_double_arg(c, o, p->name, &out->d);
    case TGPY_BOOL: return tgpy_bool_arg(c, o, p->name, &out->b);
    case TGPY_ENUM: {
        const tgpy_enum_def *e = p->enum_def;
        if (strcmp(e->name, "tg_dtype") == 0) /* also "float32", torch.float32 */
            return (out->i = tgpy_dtype_arg(c->op, o)) < 0 ? -1 : 0;
        return tgpy_enum_arg(c, o, p->name, e->name, e->prefix, e->names, e->values, e->n,
                             &out->i);
    }
    case TGPY_INT64S:
        return tgpy_int64s_arg(c, o, p->name, &out->arr.n, (const int64_t **)&out->arr.v);
    case TGPY_INTS: return tgpy_ints_arg(c, o, p->name, &out->arr.n, (const int **)&out->arr.v);
    case TGPY_TENSORS:
        return tgpy_tensors_arg(c, o, p->name, like, &out->arr.n,
                                (tg_tensor *const **)&out->arr.v);
    case TGPY_OUT: out->t = NULL; return 0;
    }
    PyErr_SetString(PyExc_SystemError, "tapegrad: unknown parameter kind");
    return -1;
}

/* The result, with the extra outputs after it (None where the library gave
 * none); takes every reference. */
static PyObject *results(const tgpy_op_def *def, tg_tensor *res, tgpy_arg *a, int n_outs) {
    if (n_outs == 0) return tgpy_wrap(res);
    tg_tensor *hs[MAX_OUTS + 1] = {res};
    int n = 1;
    for (int i = 0; i < def->n_params; i++)
        if (def->params[i].kind == TGPY_OUT && n <= MAX_OUTS) hs[n++] = a[i].t;
    if (!res) {  /* the op failed: the outputs are NULL too, its error pending */
        for (int k = 1; k < n; k++) tgpy_release(hs[k]);
        return tgpy_raise_last();
    }
    PyObject *t = PyTuple_New(n);
    for (int k = 0; k < n; k++) {
        PyObject *w = !t ? NULL : hs[k] ? tgpy_wrap(hs[k]) : (Py_INCREF(Py_None), Py_None);
        if (!w) {  /* every reference not yet wrapped is given back */
            for (int j = t ? k + 1 : k; j < n; j++) tgpy_release(hs[j]);
            Py_XDECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, w);
    }
    return t;
}

PyObject *tgpy_run_op(const tgpy_op_def *def, PyObject *self, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames) {
    enum { MAX_PARAMS = 16 };
    const char *names[MAX_PARAMS];
    int idx[MAX_PARAMS], n_in = 0, n_outs = 0;
    for (int i = 0; i < def->n_params; i++) {
        if (def->params[i].kind == TGPY_OUT) {
            n_outs++;
            continue;
        }
        names[n_in] = def->params[i].name;
        idx[n_in++] = i;
    }
    const char *op = self ? def->method_name : def->name;
    PyObject *given[MAX_PARAMS], *a[MAX_PARAMS] = {0};
    if (tgpy_parse(op, names, n_in, n_in, self, args, nargs, kwnames, given) < 0) return NULL;
    for (int j = 0; j < n_in; j++) a[idx[j]] = given[j];
    if (def->returns_status && !tgpy_is_tensor(a[0])) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' (written in place) must be a "
                     "Tensor, not %.100s", op, def->params[0].name, Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    tgpy_call c;
    tgpy_call_init(&c, op);
    tgpy_arg conv[MAX_PARAMS];
    int like = like_of(def, a);
    PyObject *r = NULL;
    for (int i = 0; i < def->n_params; i++)
        if (convert(&c, &def->params[i], a[i], like, &conv[i]) < 0) goto done;
    tg_site s = tgpy_site();
    if (def->returns_status) {
        tg_status st;
        TGPY_NOGIL(st = def->call_status(s, conv));
        if (tgpy_check(st) == 0) {
            r = a[0];
            Py_INCREF(r);
        }
    } else {
        tg_tensor *res;
        TGPY_NOGIL(res = def->call_tensor(s, conv));
        r = results(def, res, conv, n_outs);
    }
done:
    tgpy_call_done(&c);
    return r;
}
