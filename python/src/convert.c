/* python/src/convert.c - Python values into the C arguments of library calls,
 * checked: every integer range-checked (OverflowError; IndexError for a dim,
 * as PyTorch), bools only from bools, enums by name, tensors from Tensors,
 * numbers, nested sequences and buffers (NumPy arrays, any byte order).
 * What a call makes for itself lives in its tgpy_call until the call returns. */
#include "tgpy.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/* ---- the call's lists ---------------------------------------------------------------- */

static int list_push(tgpy_list *l, void *p) {
    if (l->n == l->cap) {
        int cap = 2 * l->cap;
        void **v = PyMem_Malloc((size_t)cap * sizeof *v);
        if (!v) return PyErr_NoMemory(), -1;
        memcpy(v, l->v, (size_t)l->n * sizeof *v);
        if (l->v != l->inline_v) PyMem_Free(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = p;
    return 0;
}

static void list_free(tgpy_list *l) {
    if (l->v != l->inline_v) PyMem_Free(l->v);
    tgpy_list_init(l);
}

void tgpy_call_done(tgpy_call *c) {
    for (int i = 0; i < c->temps.n; i++) tgpy_release(c->temps.v[i]);
    for (int i = 0; i < c->mem.n; i++) PyMem_Free(c->mem.v[i]);
    for (int i = 0; i < c->keep.n; i++) Py_DECREF((PyObject *)c->keep.v[i]);
    list_free(&c->temps);
    list_free(&c->mem);
    list_free(&c->keep);
    tgpy_drain_owners();
}

/* A temporary tensor for the call (taken). -1 (and h released) on failure. */
static int push_temp(tgpy_call *c, tg_tensor *h) {
    if (list_push(&c->temps, h) == 0) return 0;
    tgpy_release(h);
    return -1;
}

static void *call_alloc(tgpy_call *c, size_t bytes) {
    void *p = PyMem_Malloc(bytes ? bytes : 1);
    if (!p) return PyErr_NoMemory(), NULL;
    if (list_push(&c->mem, p) < 0) {
        PyMem_Free(p);
        return NULL;
    }
    return p;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static PyObject *joined(const char *const *names, int n) {
    PyObject *parts = PyList_New(0);
    if (!parts) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s || PyList_Append(parts, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *r = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return r;
}

int tgpy_parse(const char *op, const char *const *names, int n, int n_required, PyObject *self,
               PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out) {
    int first = self ? 1 : 0;
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (self) out[0] = self;
    if (nargs > n - first) {
        PyObject *all = joined(names + first, n - first);
        if (all)
            PyErr_Format(PyExc_TypeError, "tapegrad.%s: takes %d arguments (%U), got %zd", op,
                         n - first, all, nargs);
        Py_XDECREF(all);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) out[first + i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        int idx = -1;
        for (int i = first; i < n && idx < 0; i++)
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) idx = i;
        if (idx < 0 || out[idx]) {
            PyErr_Format(PyExc_TypeError, "tapegrad.%s: unexpected or repeated argument %R", op,
                         key);
            return -1;
        }
        out[idx] = args[nargs + j];
    }
    for (int i = first; i < n_required; i++) {
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "tapegrad.%s: missing argument '%s'", op, names[i]);
            return -1;
        }
    }
    return 0;
}

/* ---- dtypes --------------------------------------------------------------------------------- */

static const char *const DTYPE_STR[] = {[TG_F32] = "f32", [TG_F64] = "f64", [TG_I64] = "i64",
                                        [TG_BOOL] = "bool", [TG_BF16] = "bf16"};
#define N_DTYPES ((int)(sizeof DTYPE_STR / sizeof *DTYPE_STR))

const char *tgpy_dtype_str(int dt) {
    return dt >= 0 && dt < N_DTYPES ? DTYPE_STR[dt] : NULL;
}

int tgpy_dtype_from_str(const char *s) {
    static const struct {
        const char *name;
        int dt;
    } aliases[] = {{"f32", TG_F32},       {"float32", TG_F32},  {"float", TG_F32},
                   {"f64", TG_F64},       {"float64", TG_F64},  {"double", TG_F64},
                   {"i64", TG_I64},       {"int64", TG_I64},    {"long", TG_I64},
                   {"bool", TG_BOOL},     {"bool_", TG_BOOL},   {"bf16", TG_BF16},
                   {"bfloat16", TG_BF16}};
    if (strncmp(s, "torch.", 6) == 0) s += 6;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (strcmp(s, aliases[i].name) == 0) return aliases[i].dt;
    return -1;
}

int tgpy_dtype_arg(const char *op, PyObject *o) {
    if (PyUnicode_Check(o) || (!PyLong_Check(o) && PyObject_HasAttrString(o, "is_floating_point"))) {
        PyObject *s = PyObject_Str(o);  /* also torch.float32 */
        const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
        int dt = u ? tgpy_dtype_from_str(u) : -1;
        if (dt < 0 && u)
            PyErr_Format(PyExc_ValueError,
                         "tapegrad.%s: dtype %R is not a tapegrad dtype (f32, f64, i64, bool, "
                         "bf16)", op, o);
        Py_XDECREF(s);
        return dt;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v >= 0 && v < N_DTYPES) return (int)v;
        if (PyErr_Occurred()) PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: dtype %R is not a tg_dtype value", op, o);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "tapegrad.%s: dtype must be a str (f32, f64, i64, bool, bf16), "
                 "not %.100s", op, Py_TYPE(o)->tp_name);
    return -1;
}

static bool is_float_dt(int dt) { return dt == TG_F32 || dt == TG_F64 || dt == TG_BF16; }

/* PyTorch's promote_types over bool < i64 < bf16 < f32 < f64 (bf16 and f32: f32). */
static int promote(int a, int b) {
    static const int rank[] = {[TG_BOOL] = 0, [TG_I64] = 1, [TG_BF16] = 2, [TG_F32] = 3,
                               [TG_F64] = 4};
    if (a < 0) return b;
    if (b < 0) return a;
    return rank[a] >= rank[b] ? a : b;
}

int tgpy_like_dtype(PyObject *const *objs, int n) {
    int like = -1;
    for (int i = 0; i < n; i++)
        if (objs[i] && tgpy_is_tensor(objs[i]))
            like = promote(like, (int)tg_get_dtype(tgpy_handle(objs[i])));
    return like;
}

int tgpy_number_kind(PyObject *o) {
    if (PyBool_Check(o)) return 0;
    if (PyLong_Check(o)) return 1;
    if (PyFloat_Check(o)) return 2;
    if (tgpy_is_tensor(o) || PyUnicode_Check(o) || PyBytes_Check(o)) return -1;
    /* NumPy's scalars and other numbers: integers have __index__, reals __float__ */
    PyTypeObject *t = Py_TYPE(o);
    if (t->tp_as_number && t->tp_as_number->nb_index && !PySequence_Check(o)) {
        const char *tn = t->tp_name;
        return strstr(tn, "bool") ? 0 : 1;
    }
    if (t->tp_as_number && t->tp_as_number->nb_float && !PySequence_Check(o)) return 2;
    return -1;
}

tg_dtype tgpy_kind_dtype(int kind, int like) {
    if (kind == 0) return TG_BOOL;
    if (kind == 1) return is_float_dt(like) || like == TG_I64 ? (tg_dtype)like : TG_I64;
    if (like == TG_BF16) return TG_F32; /* the number keeps f32 precision; the result is bf16 */
    return is_float_dt(like) ? (tg_dtype)like : TG_F32;
}

tg_dtype tgpy_scalar_dtype(PyObject *num, int like) {
    int kind = tgpy_number_kind(num);
    return tgpy_kind_dtype(kind < 0 ? 2 : kind, like);
}

/* ---- numbers -------------------------------------------------------------------------------- */

/* o's value through __index__ (not a bool): 0 with *v; 1 when it is outside
 * int64, with *num the int (a new reference, for the message: o itself may be
 * gone once __index__ ran); -1 with the error set. */
static int index_of(tgpy_call *c, PyObject *o, const char *name, int64_t *v, PyObject **num) {
    *num = NULL;
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be an int, not %.100s",
                     c->op, name, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
    if (overflow) {
        *num = i;
        return 1;
    }
    Py_DECREF(i);
    if (x == -1 && PyErr_Occurred()) return -1;
    *v = (int64_t)x;
    return 0;
}

int tgpy_int64_arg(tgpy_call *c, PyObject *o, const char *name, int64_t *out) {
    PyObject *num;
    int rc = index_of(c, o, name, out, &num);
    if (rc == 1) {
        PyErr_Format(PyExc_OverflowError, "tapegrad.%s: argument '%s' = %S is outside int64",
                     c->op, name, num);
        Py_DECREF(num);
    }
    return rc == 0 ? 0 : -1;
}

static bool names_a_dim(const char *name) { return strstr(name, "dim") != NULL; }

int tgpy_int_arg(tgpy_call *c, PyObject *o, const char *name, int *out) {
    int64_t v = 0;
    PyObject *num;
    int rc = index_of(c, o, name, &v, &num);
    if (rc < 0) return -1;
    bool dim = names_a_dim(name);
    if (rc == 1 || v < INT_MIN || v > INT_MAX) {
        /* a dim out of range, as PyTorch says (an IndexError), however large */
        if (rc == 1)
            PyErr_Format(dim ? PyExc_IndexError : PyExc_OverflowError,
                         "tapegrad.%s: %s %S is out of range", c->op, name, num);
        else
            PyErr_Format(dim ? PyExc_IndexError : PyExc_OverflowError,
                         "tapegrad.%s: %s %lld is out of range%s", c->op, name, (long long)v,
                         dim ? "" : " (a C int)");
        Py_XDECREF(num);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tgpy_uint64_arg(tgpy_call *c, PyObject *o, const char *name, uint64_t *out) {
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be an int, not %.100s",
                     c->op, name, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "tapegrad.%s: argument '%s' = %S is outside uint64",
                     c->op, name, i);  /* i: the int, alive (o may be gone) */
        Py_DECREF(i);
        return -1;
    }
    Py_DECREF(i);
    *out = (uint64_t)v;
    return 0;
}

int tgpy_double_arg(tgpy_call *c, PyObject *o, const char *name, double *out) {
    if (PyFloat_Check(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    int kind = tgpy_number_kind(o);
    if (kind < 0) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be a number, not %.100s",
                     c->op, name, Py_TYPE(o)->tp_name);
        return -1;
    }
    double v = PyLong_Check(o) ? PyLong_AsDouble(o) : PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "tapegrad.%s: argument '%s' is too large for a "
                         "double", c->op, name);
        }
        return -1;
    }
    *out = v;
    return 0;
}

int tgpy_bool_arg(tgpy_call *c, PyObject *o, const char *name, bool *out) {
    if (!PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be a bool, not %.100s",
                     c->op, name, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = o == Py_True;
    return 0;
}

int tgpy_enum_arg(tgpy_call *c, PyObject *o, const char *name, const char *enum_name,
                  const char *prefix, const char *const *names, const int *values, int n,
                  int *out) {
    if (PyUnicode_Check(o)) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(o, &len);
        if (!s) return -1;
        size_t pl = strlen(prefix);
        if ((size_t)len != strlen(s)) s = "";  /* an embedded NUL: no name matches */
        const char *key = strncasecmp(s, prefix, pl) == 0 ? s + pl : s;
        for (int i = 0; i < n; i++)
            if (strcasecmp(key, names[i]) == 0) return *out = values[i], 0;
    } else if (PyLong_Check(o) && !PyBool_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
        for (int i = 0; i < n; i++)
            if (values[i] == v) return *out = values[i], 0;
    } else {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be a %s name (str), not "
                     "%.100s", c->op, name, enum_name ? enum_name : name, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *all = joined(names, n);
    if (all && enum_name)
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: %s=%R is not a %s (one of %U)", c->op, name,
                     o, enum_name, all);
    else if (all)
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: %s=%R is not one of %U", c->op, name, o, all);
    Py_XDECREF(all);
    return -1;
}

/* ---- arrays of ints ------------------------------------------------------------------------- */

/* o's items as a tuple the call keeps (a one-element one for an int; any
 * iterable is read whole, a generator too). A tuple, never the caller's list
 * itself: converting an item can run Python code (__index__, __float__) or
 * another thread can change the list, and the items and the tensor handles
 * taken from them must stay alive until the call returns. */
static PyObject *as_sequence(tgpy_call *c, PyObject *o, const char *name, const char *what) {
    PyObject *seq;
    if (PyIndex_Check(o) && !PyBool_Check(o) && !tgpy_is_tensor(o) && !PySequence_Check(o)) {
        seq = PyTuple_Pack(1, o);
    } else if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) ||
               tgpy_is_tensor(o) || PyDict_Check(o) || !(PySequence_Check(o) || PyIter_Check(o) ||
                                                         Py_TYPE(o)->tp_iter)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be %s, not %.100s",
                     c->op, name, what, Py_TYPE(o)->tp_name);
        return NULL;
    } else {
        seq = PySequence_Tuple(o);
    }
    if (!seq) return NULL;
    if (list_push(&c->keep, seq) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    if (PyTuple_GET_SIZE(seq) > INT_MAX) {
        PyErr_Format(PyExc_OverflowError, "tapegrad.%s: argument '%s' is too long", c->op, name);
        return NULL;
    }
    return seq;
}

int tgpy_int64s_arg(tgpy_call *c, PyObject *o, const char *name, int *n, const int64_t **out) {
    PyObject *seq = as_sequence(c, o, name, "an int or a sequence of ints");
    if (!seq) return -1;
    int len = (int)PyTuple_GET_SIZE(seq);
    int64_t *v = call_alloc(c, (size_t)len * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < len; i++)
        if (tgpy_int64_arg(c, PyTuple_GET_ITEM(seq, i), name, &v[i]) < 0) return -1;
    *n = len;
    *out = v;
    return 0;
}

int tgpy_ints_arg(tgpy_call *c, PyObject *o, const char *name, int *n, const int **out) {
    PyObject *seq = as_sequence(c, o, name, "an int or a sequence of ints");
    if (!seq) return -1;
    int len = (int)PyTuple_GET_SIZE(seq);
    int *v = call_alloc(c, (size_t)len * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < len; i++)
        if (tgpy_int_arg(c, PyTuple_GET_ITEM(seq, i), name, &v[i]) < 0) return -1;
    *n = len;
    *out = v;
    return 0;
}

int tgpy_tensor_arg(tgpy_call *c, PyObject *o, const char *name, bool nullable, int like,
                    tg_tensor **out) {
    if (tgpy_is_tensor(o)) return *out = tgpy_handle(o), 0;
    if (o == Py_None) {
        if (nullable) return *out = NULL, 0;
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be a Tensor (or a number, "
                     "or a nested sequence of numbers), not None", c->op, name);
        return -1;
    }
    int kind = tgpy_number_kind(o);
    tg_tensor *h = NULL;
    if (kind >= 0) {
        h = tgpy_tensor_from_data(c->op, o, (int)tgpy_kind_dtype(kind, like), -1);
    } else if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyByteArray_Check(o) &&
               (PySequence_Check(o) || PyObject_CheckBuffer(o))) {
        h = tgpy_tensor_from_data(c->op, o, -1, like);
    } else {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: argument '%s' must be a Tensor (or a number, "
                     "or a nested sequence of numbers), not %.100s", c->op, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!h) return -1;
    if (push_temp(c, h) < 0) return -1;
    *out = h;
    return 0;
}

int tgpy_tensors_arg(tgpy_call *c, PyObject *o, const char *name, int like, int *n,
                     tg_tensor *const **out) {
    PyObject *seq = as_sequence(c, o, name, "a sequence of tensors");
    if (!seq) return -1;
    int len = (int)PyTuple_GET_SIZE(seq);
    tg_tensor **v = call_alloc(c, (size_t)len * sizeof *v);
    if (!v) return -1;
    int item_like = like;
    for (int i = 0; i < len; i++) {
        PyObject *item = PyTuple_GET_ITEM(seq, i);
        if (tgpy_is_tensor(item))
            item_like = promote(item_like, (int)tg_get_dtype(tgpy_handle(item)));
    }
    for (int i = 0; i < len; i++)
        if (tgpy_tensor_arg(c, PyTuple_GET_ITEM(seq, i), name, false, item_like, &v[i]) <
            0)
            return -1;
    *n = len;
    *out = v;
    return 0;
}
