/* python/src/tensor.c - tapegrad._C.TensorBase: one library tensor handle per
 * Python object (one reference, given back when the object goes), its
 * metadata, autograd and values, and Python's operators with PyTorch's
 * meaning (elementwise ==, in-place += that writes the tensor, truth of a
 * one-element tensor only). The package's tapegrad.Tensor subclasses it.
 * The op methods generated from the headers (ops_gen.c) are added to the
 * type at module load. */
#include "tgpy.h"

#include <string.h>

PyTypeObject *tgpy_tensor_type = &tgpy_tensor_base;

PyObject *tgpy_wrap(tg_tensor *h) {
    if (!h) return tgpy_raise_last();
    tgpy_tensor *t = (tgpy_tensor *)tgpy_tensor_type->tp_alloc(tgpy_tensor_type, 0);
    if (!t) {
        tgpy_release(h);
        return NULL;
    }
    t->h = h;
    return (PyObject *)t;
}

void tgpy_release(tg_tensor *h) {
    if (!h) return;
    TGPY_NOGIL(tg_release(h));
    tgpy_drain_owners();
}

static void tensor_dealloc(tgpy_tensor *self) {
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    tg_tensor *h = self->h;
    self->h = NULL;
    tgpy_release(h);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type, (void)args, (void)kw;
    PyErr_SetString(PyExc_TypeError, "tapegrad.Tensor cannot be made directly: use "
                    "tapegrad.tensor(data), tapegrad.zeros(...), tapegrad.from_numpy(...)");
    return NULL;
}

/* ---- metadata ------------------------------------------------------------------------ */

#define H(self) (((tgpy_tensor *)(self))->h)

static PyObject *int64_tuple(const int64_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) return Py_DECREF(t), NULL;
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *get_shape(PyObject *self, void *u) {
    (void)u;
    return int64_tuple(tg_shape(H(self)), tg_ndim(H(self)));
}
static PyObject *get_ndim(PyObject *self, void *u) {
    (void)u;
    return PyLong_FromLong(tg_ndim(H(self)));
}
static PyObject *get_dtype(PyObject *self, void *u) {
    (void)u;
    return PyUnicode_FromString(tgpy_dtype_str(tg_get_dtype(H(self))));
}
static PyObject *get_device(PyObject *self, void *u) {
    (void)u;
    return PyUnicode_FromString(tg_get_device(H(self)) == TG_CUDA ? "cuda" : "cpu");
}
static PyObject *get_version(PyObject *self, void *u) {
    (void)u;
    return PyLong_FromUnsignedLongLong(tg_version(H(self)));
}
static PyObject *get_is_leaf(PyObject *self, void *u) {
    (void)u;
    return PyBool_FromLong(tg_is_leaf(H(self)));
}
static PyObject *get_handle(PyObject *self, void *u) {
    (void)u;
    return PyLong_FromVoidPtr(H(self));
}
static PyObject *get_requires_grad(PyObject *self, void *u) {
    (void)u;
    return PyBool_FromLong(tg_requires_grad(H(self)));
}
static int set_requires_grad(PyObject *self, PyObject *v, void *u) {
    (void)u;
    if (!v || !PyBool_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
        return -1;
    }
    tg_status st;
    TGPY_NOGIL(st = tg_set_requires_grad(H(self), v == Py_True));
    return tgpy_check(st);
}
static PyObject *get_grad(PyObject *self, void *u) {
    (void)u;
    tg_tensor *g;
    tg_clear_error();
    TGPY_NOGIL(g = tg_grad(H(self)));  /* under the library's gradient lock */
    if (!g) {
        if (tg_last_status() != TG_OK) return tgpy_raise_last();
        Py_RETURN_NONE;
    }
    return tgpy_wrap(g);
}
static int set_grad(PyObject *self, PyObject *v, void *u) {
    (void)u;
    if (v && v != Py_None) {
        PyErr_SetString(PyExc_TypeError, "tapegrad: .grad can only be set to None (backward "
                        "fills it)");
        return -1;
    }
    tg_status st;
    TGPY_NOGIL(st = tg_zero_grad(H(self)));
    return tgpy_check(st);
}
static PyObject *get_grad_fn(PyObject *self, void *u) {
    (void)u;
    const char *n;
    tg_clear_error();  /* NULL is also "no grad_fn": only a status says it failed */
    TGPY_NOGIL(n = tg_grad_fn_name(H(self)));  /* may make a stale view's node */
    if (!n) {
        if (tg_last_status() != TG_OK) return tgpy_raise_last();
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(n);
}
static PyObject *get_name(PyObject *self, void *u) {
    (void)u;
    const char *n = tg_name(H(self));
    return PyUnicode_DecodeUTF8(n, (Py_ssize_t)strlen(n), "backslashreplace");
}
static int set_name(PyObject *self, PyObject *v, void *u) {
    (void)u;
    Py_ssize_t len;
    const char *s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    if ((size_t)len != strlen(s)) {
        PyErr_SetString(PyExc_ValueError, "name: embedded null character");
        return -1;
    }
    tg_set_name(H(self), s);  /* copied by the library */
    return 0;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "Sizes (torch.Tensor.shape), a tuple.", NULL},
    {"ndim", get_ndim, NULL, "Number of dims (torch.Tensor.ndim).", NULL},
    {"dtype", get_dtype, NULL, "'f32', 'f64', 'i64', 'bool' or 'bf16' (torch.Tensor.dtype).", NULL},
    {"device", get_device, NULL, "'cpu' or 'cuda'.", NULL},
    {"_version", get_version, NULL, "The storage's version counter (torch.Tensor._version).", NULL},
    {"is_leaf", get_is_leaf, NULL, "No grad_fn (torch.Tensor.is_leaf).", NULL},
    {"_handle", get_handle, NULL, "The tg_tensor * as an int (borrowed).", NULL},
    {"requires_grad", get_requires_grad, set_requires_grad,
     "Whether gradients are recorded (torch.Tensor.requires_grad).", NULL},
    {"grad", get_grad, set_grad,
     "The gradient accumulated in this leaf, or None (torch.Tensor.grad); set None to drop it.",
     NULL},
    {"grad_fn", get_grad_fn, NULL, "The name of the node that made this tensor, or None.", NULL},
    {"name", get_name, set_name, "The label reports and errors use ('' when none).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- methods ----------------------------------------------------------------------------- */

static PyObject *m_numel(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(tg_numel(H(self)));
}

static PyObject *m_dim(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(tg_ndim(H(self)));
}

/* stride() or stride(dim); size() or size(dim), as PyTorch. */
static PyObject *dims_or_one(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             const int64_t *v, const char *op) {
    if (nargs == 0) return int64_tuple(v, tg_ndim(H(self)));
    tgpy_call c;
    tgpy_call_init(&c, op);
    int dim, n = tg_ndim(H(self));
    if (nargs > 1 || tgpy_int_arg(&c, args[0], "dim", &dim) < 0) {
        if (nargs > 1) PyErr_Format(PyExc_TypeError, "tapegrad.%s: takes at most 1 argument", op);
        return NULL;
    }
    if (dim < -n || dim >= (n ? n : 1) || n == 0) {
        PyErr_Format(PyExc_IndexError, "tapegrad.%s: dim %d is out of range for %d dims", op, dim,
                     n);
        return NULL;
    }
    return PyLong_FromLongLong(v[dim < 0 ? dim + n : dim]);
}
static PyObject *m_stride(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return dims_or_one(self, args, nargs, tg_strides(H(self)), "Tensor.stride");
}
static PyObject *m_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return dims_or_one(self, args, nargs, tg_shape(H(self)), "Tensor.size");
}

static PyObject *m_data_ptr(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromVoidPtr(tg_data(H(self)));
}

static PyObject *m_is_contiguous(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(tg_is_contiguous(H(self)));
}

static PyObject *m_requires_grad_(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    static const char *const names[] = {"self", "requires_grad"};
    PyObject *a[2];
    if (tgpy_parse("Tensor.requires_grad_", names, 2, 1, self, args, nargs, kwnames, a) < 0)
        return NULL;
    tgpy_call c;
    tgpy_call_init(&c, "Tensor.requires_grad_");
    bool flag = true;
    if (a[1] && tgpy_bool_arg(&c, a[1], "requires_grad", &flag) < 0) return NULL;
    tg_status st;
    TGPY_NOGIL(st = tg_set_requires_grad(H(self), flag));
    if (tgpy_check(st) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

static PyObject *m_zero_grad_(PyObject *self, PyObject *unused) {
    (void)unused;
    tg_status st;
    TGPY_NOGIL(st = tg_zero_grad(H(self)));
    if (tgpy_check(st) < 0) return NULL;
    tgpy_drain_owners();
    Py_RETURN_NONE;
}

static PyObject *m_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    static const char *const names[] = {"self", "gradient", "retain_graph"};
    PyObject *a[3];
    if (tgpy_parse("Tensor.backward", names, 3, 1, self, args, nargs, kwnames, a) < 0)
        return NULL;
    tgpy_call c;
    tgpy_call_init(&c, "Tensor.backward");
    tg_tensor *grad = NULL;
    bool retain = false;
    PyObject *objs[2] = {self, a[1]};
    if ((a[1] && tgpy_tensor_arg(&c, a[1], "gradient", true, tgpy_like_dtype(objs, 1),
                                 &grad) < 0) ||
        (a[2] && a[2] != Py_None && tgpy_bool_arg(&c, a[2], "retain_graph", &retain) < 0)) {
        tgpy_call_done(&c);
        return NULL;
    }
    tg_status st;
    TGPY_NOGIL(st = tg_backward(H(self), grad, retain));
    tgpy_call_done(&c);
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_detach(PyObject *self, PyObject *unused) {
    (void)unused;
    tg_site s = tgpy_site();
    tg_tensor *r;
    TGPY_NOGIL(r = tg_detach_at(s, H(self)));
    return tgpy_wrap(r);
}

/* The names mark_modified passes to the library, kept for the life of the
 * process (the library keeps the pointer in the version history). */
static PyObject *g_marks;

static PyObject *m_mark_modified(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *what = nargs > 0 ? args[0] : NULL;
    if (nargs > 1 || (what && !PyUnicode_Check(what))) {
        PyErr_SetString(PyExc_TypeError, "Tensor.mark_modified(what: str = 'a write from Python')");
        return NULL;
    }
    const char *name = "a write from Python";
    if (what) {
        if (!g_marks && !(g_marks = PyDict_New())) return NULL;
        PyObject *b = PyDict_GetItemWithError(g_marks, what);
        if (!b) {
            if (PyErr_Occurred() || !(b = PyUnicode_AsUTF8String(what))) return NULL;
            if ((size_t)PyBytes_GET_SIZE(b) != strlen(PyBytes_AS_STRING(b))) {
                Py_DECREF(b);
                PyErr_SetString(PyExc_ValueError, "mark_modified: embedded null character");
                return NULL;
            }
            int rc = PyDict_SetItem(g_marks, what, b);
            Py_DECREF(b);  /* the dict keeps it */
            if (rc < 0) return NULL;
        }
        name = PyBytes_AS_STRING(b);
    }
    tg_site site = tgpy_site();
    tg_status st;
    TGPY_NOGIL(st = tg_mark_modified_at(site, H(self), name));
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

/* The elements in C order as f64 / i64 / bool bytes: a PyMem buffer. */
static void *copy_out(PyObject *self, tg_dtype *as) {
    tg_tensor *h = H(self);
    tg_dtype dt = tg_get_dtype(h);
    *as = dt == TG_I64 || dt == TG_BOOL ? dt : TG_F64;
    int64_t n = tg_numel(h);
    size_t bytes = (size_t)(n ? n : 1) * tg_dtype_size(*as);
    void *buf = PyMem_Malloc(bytes);
    if (!buf) return PyErr_NoMemory(), NULL;
    tg_status st;
    TGPY_NOGIL(st = tg_copy_out(h, *as, buf, bytes));
    if (tgpy_check(st) < 0) {
        PyMem_Free(buf);
        return NULL;
    }
    return buf;
}

static PyObject *scalar_at(const void *buf, tg_dtype as, int64_t k) {
    if (as == TG_I64) return PyLong_FromLongLong(((const int64_t *)buf)[k]);
    if (as == TG_BOOL) return PyBool_FromLong(((const uint8_t *)buf)[k] != 0);
    return PyFloat_FromDouble(((const double *)buf)[k]);
}

/* Nested lists of shape[dim..] from buf at *k. */
static PyObject *nested(const void *buf, tg_dtype as, const int64_t *shape, int ndim, int dim,
                        int64_t *k) {
    if (dim == ndim) return scalar_at(buf, as, (*k)++);
    PyObject *l = PyList_New((Py_ssize_t)shape[dim]);
    for (int64_t i = 0; l && i < shape[dim]; i++) {
        PyObject *x = nested(buf, as, shape, ndim, dim + 1, k);
        if (!x) return Py_DECREF(l), NULL;
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    return l;
}

static PyObject *m_tolist(PyObject *self, PyObject *unused) {
    (void)unused;
    tg_dtype as;
    void *buf = copy_out(self, &as);
    if (!buf) return NULL;
    int64_t k = 0;
    PyObject *r = nested(buf, as, tg_shape(H(self)), tg_ndim(H(self)), 0, &k);
    PyMem_Free(buf);
    return r;
}

static PyObject *m_item(PyObject *self, PyObject *unused) {
    (void)unused;
    double unused_value;
    if (tg_numel(H(self)) != 1)  /* the library's error (TG_ERR_SHAPE), as PyTorch's RuntimeError */
        return tgpy_check(tg_item(H(self), &unused_value)), NULL;
    tg_dtype as;
    void *buf = copy_out(self, &as);
    if (!buf) return NULL;
    PyObject *r = scalar_at(buf, as, 0);
    PyMem_Free(buf);
    return r;
}

static PyMethodDef tensor_methods[] = {
    {"numel", m_numel, METH_NOARGS, "Number of elements (torch.Tensor.numel)."},
    {"dim", m_dim, METH_NOARGS, "Number of dims (torch.Tensor.dim)."},
    {"stride", (PyCFunction)(void (*)(void))m_stride, METH_FASTCALL,
     "stride() or stride(dim): strides in elements (torch.Tensor.stride)."},
    {"size", (PyCFunction)(void (*)(void))m_size, METH_FASTCALL,
     "size() or size(dim) (torch.Tensor.size)."},
    {"data_ptr", m_data_ptr, METH_NOARGS, "Address of the first element (torch.Tensor.data_ptr)."},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "torch.Tensor.is_contiguous."},
    {"requires_grad_", (PyCFunction)(void (*)(void))m_requires_grad_,
     METH_FASTCALL | METH_KEYWORDS, "requires_grad_(requires_grad=True): torch.Tensor.requires_grad_."},
    {"zero_grad_", m_zero_grad_, METH_NOARGS, "Drops the accumulated gradient (tensor.grad = None)."},
    {"backward", (PyCFunction)(void (*)(void))m_backward, METH_FASTCALL | METH_KEYWORDS,
     "backward(gradient=None, retain_graph=False): torch.Tensor.backward."},
    {"detach", m_detach, METH_NOARGS, "torch.Tensor.detach: the same memory, out of the graph."},
    {"mark_modified", (PyCFunction)(void (*)(void))m_mark_modified, METH_FASTCALL,
     "mark_modified(what='a write from Python'): says the memory was written from outside the "
     "library (NumPy, PyTorch); a graph that saved this tensor then refuses it, naming `what`."},
    {"tolist", m_tolist, METH_NOARGS,
     "torch.Tensor.tolist: nested lists of floats (ints for i64, bools for bool)."},
    {"item", m_item, METH_NOARGS, "torch.Tensor.item: a float, an int for i64, a bool for bool."},
    {NULL, NULL, 0, NULL}};

/* ---- Python's number protocol ----------------------------------------------------------- */

typedef tg_tensor *(*binary_fn)(tg_site, tg_tensor *, tg_tensor *);

/* Whether o can be an operand (a Tensor, a number, a sequence or a buffer of
 * numbers): anything else gives NotImplemented, so that Python tries the
 * other side (x == None is then False, as in PyTorch). */
static bool operand(PyObject *o) {
    if (tgpy_is_tensor(o) || tgpy_number_kind(o) >= 0) return true;
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || PyDict_Check(o))
        return false;
    return PySequence_Check(o) || PyObject_CheckBuffer(o);
}

static PyObject *binary(PyObject *a, PyObject *b, binary_fn fn, const char *op) {
    if (!operand(a) || !operand(b)) Py_RETURN_NOTIMPLEMENTED;
    tgpy_call c;
    tgpy_call_init(&c, op);
    PyObject *objs[2] = {a, b};
    int like = tgpy_like_dtype(objs, 2);
    tg_tensor *x, *y, *r = NULL;
    if (tgpy_tensor_arg(&c, a, "self", false, like, &x) == 0 &&
        tgpy_tensor_arg(&c, b, "other", false, like, &y) == 0) {
        tg_site s = tgpy_site();
        TGPY_NOGIL(r = fn(s, x, y));
        if (!r) tgpy_raise_last();
    }
    tgpy_call_done(&c);
    return r ? tgpy_wrap(r) : NULL;
}

/* a & b, a | b, a ^ b: the logical ops of bool tensors (PyTorch's bitwise ops
 * of other dtypes are not in the library). */
static PyObject *logical(PyObject *a, PyObject *b, binary_fn fn, const char *op) {
    PyObject *objs[2] = {a, b};
    if (operand(a) && operand(b) && tgpy_like_dtype(objs, 2) != TG_BOOL) {
        PyErr_Format(PyExc_TypeError, "tapegrad: %s takes bool tensors (the logical op); other "
                     "dtypes have no bitwise op here", op);
        return NULL;
    }
    return binary(a, b, fn, op);
}

#define BINARY(pyname, cfn)                                                                 \
    static PyObject *nb_##pyname(PyObject *a, PyObject *b) {                                \
        return binary(a, b, cfn, "Tensor.__" #pyname "__");                                 \
    }
BINARY(add, tg_add_at)
BINARY(sub, tg_sub_at)
BINARY(mul, tg_mul_at)
BINARY(truediv, tg_div_at)
BINARY(floordiv, tg_floor_divide_at)
BINARY(mod, tg_remainder_at)
BINARY(matmul, tg_matmul_at)
#undef BINARY

/* An integer tensor to a negative Python int: PyTorch refuses it (a tensor
 * exponent computes, as tg_pow does). */
static bool negative_int_power(PyObject *base, PyObject *exponent) {
    if (!tgpy_is_tensor(base) || !PyLong_Check(exponent) || PyBool_Check(exponent)) return false;
    tg_dtype dt = tg_get_dtype(H(base));
    if (dt != TG_I64 && dt != TG_BOOL) return false;
    int overflow;
    long long e = PyLong_AsLongLongAndOverflow(exponent, &overflow);
    if (e == -1 && PyErr_Occurred()) PyErr_Clear();
    if (e >= 0 && overflow >= 0) return false;
    PyErr_SetString(PyExc_RuntimeError, "tapegrad: integers to negative integer powers are not "
                    "allowed (as PyTorch)");
    return true;
}

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    if (negative_int_power(a, b)) return NULL;
    return binary(a, b, tg_pow_at, "Tensor.__pow__");
}
static PyObject *nb_and(PyObject *a, PyObject *b) {
    return logical(a, b, tg_logical_and_at, "&");
}
static PyObject *nb_or(PyObject *a, PyObject *b) { return logical(a, b, tg_logical_or_at, "|"); }
static PyObject *nb_xor(PyObject *a, PyObject *b) {
    return logical(a, b, tg_logical_xor_at, "^");
}

typedef tg_tensor *(*unary_fn)(tg_site, tg_tensor *);

static PyObject *unary(PyObject *a, unary_fn fn) {
    tg_site s = tgpy_site();
    tg_tensor *r;
    TGPY_NOGIL(r = fn(s, H(a)));
    return tgpy_wrap(r);
}
static PyObject *nb_neg(PyObject *a) { return unary(a, tg_neg_at); }
static PyObject *nb_abs(PyObject *a) { return unary(a, tg_abs_at); }
static PyObject *nb_pos(PyObject *a) {
    Py_INCREF(a);
    return a;
}
static PyObject *nb_invert(PyObject *a) {
    if (tg_get_dtype(H(a)) != TG_BOOL) {
        PyErr_SetString(PyExc_TypeError, "tapegrad: ~ takes a bool tensor (logical_not)");
        return NULL;
    }
    return unary(a, tg_logical_not_at);
}

typedef tg_status (*inplace_fn)(tg_site, tg_tensor *, tg_tensor *);

/* self op= other: written into self (its aliases and NumPy views see it), self returned. */
static PyObject *inplace(PyObject *self, PyObject *other, inplace_fn fn, const char *op) {
    if (!tgpy_is_tensor(self) || !operand(other)) Py_RETURN_NOTIMPLEMENTED;
    tgpy_call c;
    tgpy_call_init(&c, op);
    tg_tensor *o;
    tg_status st = TG_ERR_NULL;
    if (tgpy_tensor_arg(&c, other, "other", false, (int)tg_get_dtype(H(self)), &o) == 0) {
        tg_site s = tgpy_site();
        TGPY_NOGIL(st = fn(s, H(self), o));
        if (st != TG_OK) tgpy_raise_status(st);
    }
    tgpy_call_done(&c);
    if (st != TG_OK) return NULL;
    Py_INCREF(self);
    return self;
}

/* self op= other for ops without an in-place form in the library: computed
 * out of place from a copy of self (recorded: the copy, not self, is what the
 * op saves for backward), then written into self with copy_ (recorded:
 * gradients flow to self's old history through the copy). */
static PyObject *inplace_by_copy(PyObject *self, PyObject *other, binary_fn fn, const char *op) {
    if (!tgpy_is_tensor(self) || !operand(other)) Py_RETURN_NOTIMPLEMENTED;
    tg_site s = tgpy_site();
    tg_tensor *copy;
    TGPY_NOGIL(copy = tg_clone_at(s, H(self)));
    PyObject *c = tgpy_wrap(copy);
    if (!c) return NULL;
    PyObject *r = binary(c, other, fn, op);
    Py_DECREF(c);
    if (!r || r == Py_NotImplemented) return r;
    /* PyTorch's can_cast: no float into an integer or bool tensor, no integer into bool */
    tg_dtype from = tg_get_dtype(H(r)), to = tg_get_dtype(H(self));
    bool from_float = from == TG_F32 || from == TG_F64 || from == TG_BF16;
    bool to_float = to == TG_F32 || to == TG_F64 || to == TG_BF16;
    if (!to_float && (from_float || (to == TG_BOOL && from != TG_BOOL))) {
        PyErr_Format(PyExc_RuntimeError, "tapegrad.%s: result type %s can't be cast to the "
                     "desired output type %s, the modified tensor's dtype (as PyTorch)", op,
                     tgpy_dtype_str(from), tgpy_dtype_str(to));
        Py_DECREF(r);
        return NULL;
    }
    tg_status st;
    TGPY_NOGIL(st = tg_copy__at(s, H(self), H(r)));
    Py_DECREF(r);
    if (tgpy_check(st) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

static PyObject *nb_iadd(PyObject *a, PyObject *b) {
    return inplace(a, b, tg_add__at, "Tensor.__iadd__");
}
static PyObject *nb_isub(PyObject *a, PyObject *b) {
    return inplace(a, b, tg_sub__at, "Tensor.__isub__");
}
static PyObject *nb_imul(PyObject *a, PyObject *b) {
    return inplace(a, b, tg_mul__at, "Tensor.__imul__");
}
static PyObject *nb_itruediv(PyObject *a, PyObject *b) {
    return inplace(a, b, tg_div__at, "Tensor.__itruediv__");
}
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    if (negative_int_power(a, b)) return NULL;
    return inplace(a, b, tg_pow__at, "Tensor.__ipow__");
}
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b) {
    return inplace_by_copy(a, b, tg_floor_divide_at, "Tensor.__ifloordiv__");
}
static PyObject *nb_imod(PyObject *a, PyObject *b) {
    return inplace_by_copy(a, b, tg_remainder_at, "Tensor.__imod__");
}

/* The one element of self, checked: 0 with *v (as a double and, for i64, exact
 * in *i), or -1 with PyTorch's error (`what` says which conversion). */
static int one_element(PyObject *self, const char *what, PyObject *exc, double *v, int64_t *i) {
    int64_t n = tg_numel(H(self));
    if (n != 1) {
        PyErr_Format(exc, "%s a tensor with %s", what,
                     n == 0 ? "no values is ambiguous" : "more than one value is ambiguous");
        return -1;
    }
    tg_dtype as;
    void *buf = copy_out(self, &as);
    if (!buf) return -1;
    *i = as == TG_I64 ? ((int64_t *)buf)[0] : as == TG_BOOL ? ((uint8_t *)buf)[0] : 0;
    *v = as == TG_F64 ? ((double *)buf)[0] : (double)*i;
    PyMem_Free(buf);
    return 0;
}

static int nb_bool(PyObject *self) {
    double v;
    int64_t i;
    if (one_element(self, "Boolean value of", PyExc_RuntimeError, &v, &i) < 0) return -1;
    return v != 0.0 || i != 0;
}

static PyObject *nb_float(PyObject *self) {
    double v;
    int64_t i;
    if (tg_numel(H(self)) != 1) {
        PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python "
                        "scalars");
        return NULL;
    }
    if (one_element(self, "float() of", PyExc_ValueError, &v, &i) < 0) return NULL;
    return PyFloat_FromDouble(v);
}

static PyObject *nb_int(PyObject *self) {
    double v;
    int64_t i;
    if (tg_numel(H(self)) != 1) {
        PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python "
                        "scalars");
        return NULL;
    }
    if (one_element(self, "int() of", PyExc_ValueError, &v, &i) < 0) return NULL;
    tg_dtype dt = tg_get_dtype(H(self));
    if (dt == TG_I64 || dt == TG_BOOL) return PyLong_FromLongLong(i);
    return PyLong_FromDouble(v);  /* truncated toward zero, as int(float) */
}

static PyObject *nb_index(PyObject *self) {
    tg_dtype dt = tg_get_dtype(H(self));
    if ((dt != TG_I64 && dt != TG_BOOL) || tg_numel(H(self)) != 1) {
        PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be "
                        "converted to an index");
        return NULL;
    }
    return nb_int(self);
}

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul,
    .nb_remainder = nb_mod, .nb_power = nb_pow, .nb_negative = nb_neg,
    .nb_positive = nb_pos, .nb_absolute = nb_abs, .nb_bool = nb_bool,
    .nb_invert = nb_invert, .nb_and = nb_and, .nb_xor = nb_xor, .nb_or = nb_or,
    .nb_int = nb_int, .nb_float = nb_float, .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub, .nb_inplace_multiply = nb_imul,
    .nb_inplace_remainder = nb_imod, .nb_inplace_power = nb_ipow,
    .nb_floor_divide = nb_floordiv, .nb_true_divide = nb_truediv,
    .nb_inplace_floor_divide = nb_ifloordiv, .nb_inplace_true_divide = nb_itruediv,
    .nb_index = nb_index, .nb_matrix_multiply = nb_matmul,
};

static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int op) {
    static const binary_fn fns[] = {[Py_LT] = tg_lt_at, [Py_LE] = tg_le_at, [Py_EQ] = tg_eq_at,
                                    [Py_NE] = tg_ne_at, [Py_GT] = tg_gt_at, [Py_GE] = tg_ge_at};
    static const char *const names[] = {[Py_LT] = "Tensor.__lt__", [Py_LE] = "Tensor.__le__",
                                        [Py_EQ] = "Tensor.__eq__", [Py_NE] = "Tensor.__ne__",
                                        [Py_GT] = "Tensor.__gt__", [Py_GE] = "Tensor.__ge__"};
    return binary(a, b, fns[op], names[op]);
}

static Py_hash_t tensor_hash(PyObject *self) { return _Py_HashPointer(self); }

static Py_ssize_t tensor_len(PyObject *self) {
    if (tg_ndim(H(self)) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)tg_shape(H(self))[0];
}

static PySequenceMethods tensor_as_sequence = {.sq_length = tensor_len};

/* ---- the buffer protocol: NumPy's view of a CPU tensor without a copy --------------------- *
 * Refused (BufferError; NumPy then asks __array__, which says why) for CUDA
 * and bf16 tensors, and for a tensor that requires grad (writes through the
 * view would bypass autograd: PyTorch's numpy() refuses it too). */

static bool c_contiguous(const tg_tensor *h) {
    int64_t want = 1;
    for (int d = tg_ndim(h) - 1; d >= 0; d--) {
        if (tg_shape(h)[d] != 1 && tg_strides(h)[d] != want) return false;
        want *= tg_shape(h)[d];
    }
    return true;
}

static bool f_contiguous(const tg_tensor *h) {
    int64_t want = 1;
    for (int d = 0; d < tg_ndim(h); d++) {
        if (tg_shape(h)[d] != 1 && tg_strides(h)[d] != want) return false;
        want *= tg_shape(h)[d];
    }
    return true;
}

/* Why the request in flags cannot be met for h, or NULL. */
static const char *buffer_refusal(const tg_tensor *h, int flags, bool readonly) {
    if (tg_get_device(h) != TG_CPU || tg_get_dtype(h) == TG_BF16)
        return "no buffer for a CUDA or bf16 tensor";
    if (tg_requires_grad(h)) return "no buffer for a tensor that requires grad";
    if ((flags & PyBUF_WRITABLE) && readonly) return "the tensor's memory is read-only";
    bool c = c_contiguous(h), f = f_contiguous(h);
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c)
        return "the tensor is not C-contiguous";
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f)
        return "the tensor is not Fortran-contiguous";
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f)
        return "the tensor is not contiguous";
    if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c)  /* SIMPLE or ND: read as C order */
        return "the tensor is not C-contiguous (ask for strides)";
    return NULL;
}

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    static const char *const fmt[] = {[TG_F32] = "f", [TG_F64] = "d", [TG_I64] = "q",
                                      [TG_BOOL] = "?"};
    tg_tensor *h = H(self);
    const bool readonly = tg_is_read_only(h);  /* a NumPy view of it is read-only too */
    const char *why = buffer_refusal(h, flags, readonly);
    if (why) {
        PyErr_Format(PyExc_BufferError, "tapegrad: %s", why);
        return -1;
    }
    tg_dtype dt = tg_get_dtype(h);
    int nd = tg_ndim(h);
    Py_ssize_t es = (Py_ssize_t)tg_dtype_size(dt);
    int64_t numel = tg_numel(h);
    if (numel > PY_SSIZE_T_MAX / es) {  /* an expand view can claim more than memory holds */
        PyErr_SetString(PyExc_BufferError, "tapegrad: the tensor's elements overflow a buffer");
        return -1;
    }
    Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * nd + 1));
    if (!dims) return PyErr_NoMemory(), -1;
    for (int d = 0; d < nd; d++) {
        dims[d] = (Py_ssize_t)tg_shape(h)[d];
        dims[nd + d] = (Py_ssize_t)tg_strides(h)[d] * es;
    }
    static char empty;
    void *data = tg_data(h);
    view->buf = data ? data : &empty;
    view->obj = self;
    Py_INCREF(self);
    view->len = (Py_ssize_t)numel * es;
    view->readonly = readonly;
    view->itemsize = es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt[dt] : NULL;
    view->ndim = nd;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + nd : NULL;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view) {
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs tensor_as_buffer = {tensor_getbuffer, tensor_releasebuffer};

/* ---- the type ----------------------------------------------------------------------------- */

PyTypeObject tgpy_tensor_base = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tapegrad._C.TensorBase",
    .tp_basicsize = sizeof(tgpy_tensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_number = &tensor_as_number,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_hash = tensor_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A handle on a tapegrad tensor (the base of tapegrad.Tensor).",
    .tp_richcompare = tensor_richcompare,
    .tp_weaklistoffset = offsetof(tgpy_tensor, weakrefs),
    .tp_getset = tensor_getset,
    .tp_new = tensor_new,
};

/* tensor_methods then the generated op methods, in one table for PyType_Ready
 * (a hand-written method wins over a generated one of the same name). */
static PyMethodDef *all_methods(void) {
    int n1 = 0, n2 = 0;
    while (tensor_methods[n1].ml_name) n1++;
    while (tgpy_op_methods[n2].ml_name) n2++;
    PyMethodDef *all = PyMem_RawCalloc((size_t)(n1 + n2 + 1), sizeof *all); /* for the process */
    if (!all) return NULL;
    int k = 0;
    for (int i = 0; i < n1; i++) all[k++] = tensor_methods[i];
    for (int i = 0; i < n2; i++) {
        bool taken = false;
        for (int j = 0; j < n1 && !taken; j++)
            taken = strcmp(tensor_methods[j].ml_name, tgpy_op_methods[i].ml_name) == 0;
        if (!taken) all[k++] = tgpy_op_methods[i];
    }
    return all;
}

int tgpy_tensor_ready(PyObject *module) {
    if (!tgpy_tensor_base.tp_methods && !(tgpy_tensor_base.tp_methods = all_methods())) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyType_Ready(&tgpy_tensor_base) < 0) return -1;
    Py_INCREF(&tgpy_tensor_base);  /* tgpy_tensor_type's reference (_register drops it) */
    Py_INCREF(&tgpy_tensor_base);
    if (PyModule_AddObject(module, "TensorBase", (PyObject *)&tgpy_tensor_base) < 0) {
        Py_DECREF(&tgpy_tensor_base);
        return -1;
    }
    return 0;
}
