/* python/src/module.c - the extension module tapegrad._C: errors, grad mode,
 * memory figures, the CUDA hooks the PyTorch adapters use, and the module's
 * assembly from the other files' function tables.
 *
 * The package (tapegrad/__init__.py) registers what lives in Python once at
 * import (_register): its Tensor subclass, the exception class of each
 * status, and its own directory (call sites skip its frames). */
#include "tgpy.h"

#include <string.h>

/* ---- errors -------------------------------------------------------------------------- */

#define N_STATUS 64
static PyObject *g_error_base;             /* tapegrad.TapegradError */
static PyObject *g_error_of[N_STATUS];     /* a subclass per status, or NULL */

PyObject *tgpy_raise_status(tg_status st) {
    const char *msg = tg_last_error();
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    tg_clear_error();
    if (!text) return NULL;
    PyObject *cls = ((unsigned)st < N_STATUS && g_error_of[st]) ? g_error_of[st] : g_error_base;
    if (!cls) {  /* before the package registered its classes */
        PyErr_Format(PyExc_RuntimeError, "%s: %U", tg_status_name(st), text);
        Py_DECREF(text);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(cls, "iO", (int)st, text);
    Py_DECREF(text);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *tgpy_raise_last(void) {
    tg_status st = tg_last_status();
    if (st == TG_OK) {
        PyErr_SetString(g_error_base ? g_error_base : PyExc_RuntimeError,
                        "the library call failed without saying why (please report it)");
        return NULL;
    }
    return tgpy_raise_status(st);
}

int tgpy_check(tg_status st) {
    if (st == TG_OK) return 0;
    tgpy_raise_status(st);
    return -1;
}

/* ---- functions --------------------------------------------------------------------- */

/* _register(tensor_type, error_base, errors_by_status, package_dir) */
static PyObject *m_register(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *type, *base, *by_status, *dir;
    if (!PyArg_ParseTuple(args, "O!OO!U", &PyType_Type, &type, &base, &PyDict_Type, &by_status,
                          &dir))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)type, &tgpy_tensor_base)) {
        PyErr_SetString(PyExc_TypeError, "_register: not a subclass of TensorBase");
        return NULL;
    }
    if (tgpy_site_skip(dir) < 0) return NULL;
    PyTypeObject *old = tgpy_tensor_type;
    Py_INCREF(type);
    tgpy_tensor_type = (PyTypeObject *)type;
    Py_DECREF(old);
    Py_INCREF(base);
    Py_XSETREF(g_error_base, base);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(by_status, &pos, &key, &value)) {
        long st = PyLong_AsLong(key);
        if (st < 0 || st >= N_STATUS) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_register: bad status");
            return NULL;
        }
        Py_INCREF(value);
        Py_XSETREF(g_error_of[st], value);
    }
    Py_RETURN_NONE;
}

static PyObject *m_status_name(PyObject *mod, PyObject *arg) {
    (void)mod;
    int overflow;
    long st = PyLong_AsLongAndOverflow(arg, &overflow);
    if (st == -1 && PyErr_Occurred()) return NULL;
    if (overflow || st < INT_MIN || st > INT_MAX) st = -1;
    return PyUnicode_FromString(tg_status_name((tg_status)st));
}

static PyObject *m_set_grad_enabled(PyObject *mod, PyObject *arg) {
    (void)mod;
    if (!PyBool_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "set_grad_enabled: mode must be a bool, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyBool_FromLong(tg_set_grad_enabled(arg == Py_True));
}

static PyObject *m_is_grad_enabled(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyBool_FromLong(tg_is_grad_enabled());
}

/* "cpu" or "cuda", exactly: anything else is refused, never taken for the CPU. */
static int device_arg(const char *op, PyObject *o, tg_device *out) {
    if (PyUnicode_Check(o)) {
        if (PyUnicode_CompareWithASCIIString(o, "cpu") == 0) return *out = TG_CPU, 0;
        if (PyUnicode_CompareWithASCIIString(o, "cuda") == 0) return *out = TG_CUDA, 0;
    }
    PyErr_Format(PyExc_ValueError, "tapegrad.%s: device=%R is not a tg_device (one of cpu, cuda)",
                 op, o);
    return -1;
}

static PyObject *m_mem_stats(PyObject *mod, PyObject *arg) {
    (void)mod;
    tg_device dev;
    tg_mem_stats m;
    if (device_arg("mem_stats", arg, &dev) < 0 || tgpy_check(tg_mem_get(dev, &m)) < 0) return NULL;
    PyObject *live = PyDict_New(), *peak = PyDict_New();
    if (!live || !peak) goto fail;
    for (int c = 0; c < TG_MEM_NCAT; c++) {
        const char *name = tg_mem_category_name((tg_mem_category)c);
        PyObject *l = PyLong_FromSize_t(m.live[c]), *p = PyLong_FromSize_t(m.peak[c]);
        int bad = !l || !p || PyDict_SetItemString(live, name, l) < 0 ||
                  PyDict_SetItemString(peak, name, p) < 0;
        Py_XDECREF(l);
        Py_XDECREF(p);
        if (bad) goto fail;
    }
    PyObject *r = Py_BuildValue("{sNsNsnsnsnsnsnsKsK}", "live", live, "peak", peak, "live_total",
                                (Py_ssize_t)m.live_total, "peak_total", (Py_ssize_t)m.peak_total,
                                "saved", (Py_ssize_t)m.saved, "saved_peak",
                                (Py_ssize_t)m.saved_peak, "cached", (Py_ssize_t)m.cached,
                                "n_alloc", (unsigned long long)m.n_alloc, "n_free",
                                (unsigned long long)m.n_free);
    return r;
fail:
    Py_XDECREF(live);
    Py_XDECREF(peak);
    return NULL;
}

static PyObject *m_reset_peak(PyObject *mod, PyObject *arg) {
    (void)mod;
    tg_device dev;
    if (device_arg("reset_peak", arg, &dev) < 0 || tgpy_check(tg_mem_reset_peak(dev)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_empty_cache(PyObject *mod, PyObject *arg) {
    (void)mod;
    tg_device dev;
    if (device_arg("empty_cache", arg, &dev) < 0) return NULL;
    tg_status st;
    TGPY_NOGIL(st = tg_mem_empty_cache(dev));
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_live_counts(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tgpy_drain_owners();  /* what was released so far is counted as gone */
    tg_live_counts c = tg_live();
    return Py_BuildValue("{sLsLsL}", "tensors", (long long)c.tensors, "storages",
                         (long long)c.storages, "nodes", (long long)c.nodes);
}

static PyObject *m_mem_categories(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    PyObject *t = PyTuple_New(TG_MEM_NCAT);
    for (int c = 0; t && c < TG_MEM_NCAT; c++) {
        PyObject *s = PyUnicode_FromString(tg_mem_category_name((tg_mem_category)c));
        if (!s) return Py_DECREF(t), NULL;
        PyTuple_SET_ITEM(t, c, s);
    }
    return t;
}

static PyObject *m_cuda_device_count(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    int n;
    TGPY_NOGIL(n = tg_cuda_device_count());
    return PyLong_FromLong(n);
}

/* An address given as an int (0 or None: NULL). */
static int pointer_arg(const char *op, PyObject *o, void **out) {
    if (o == Py_None) return *out = NULL, 0;
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an address (int) or None", op);
        return -1;
    }
    *out = PyLong_AsVoidPtr(o);
    return *out == NULL && PyErr_Occurred() ? -1 : 0;
}

static PyObject *m_cuda_set_stream(PyObject *mod, PyObject *arg) {
    (void)mod;
    void *stream;
    if (pointer_arg("cuda_set_stream", arg, &stream) < 0) return NULL;
    tg_status st;
    TGPY_NOGIL(st = tg_cuda_set_stream(stream));
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_cuda_get_stream(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyLong_FromVoidPtr(tg_cuda_get_stream());
}

/* cuda_set_allocator(alloc_fn_address, free_fn_address): C function pointers
 * (ctypes callbacks) for tg_cuda_set_allocator; (None, None) for the library's own. */
static PyObject *m_cuda_set_allocator(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *a, *f;
    void *alloc_fn, *free_fn;
    if (!PyArg_ParseTuple(args, "OO", &a, &f) || pointer_arg("cuda_set_allocator", a, &alloc_fn) < 0 ||
        pointer_arg("cuda_set_allocator", f, &free_fn) < 0)
        return NULL;
    tg_cuda_alloc_fn af;
    tg_cuda_free_fn ff;
    memcpy(&af, &alloc_fn, sizeof af);  /* object to function pointer: the same bits */
    memcpy(&ff, &free_fn, sizeof ff);
    tg_status st;
    TGPY_NOGIL(st = tg_cuda_set_allocator(af, ff, NULL));
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_skip_frames_under(PyObject *mod, PyObject *dir) {
    (void)mod;
    if (tgpy_site_skip(dir) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_drain(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tgpy_drain_owners();
    Py_RETURN_NONE;
}

PyMethodDef tgpy_module_functions[] = {
    {"_register", m_register, METH_VARARGS, "Registers the package's Tensor and errors."},
    {"status_name", m_status_name, METH_O, "The C name of a status (tg_status_name)."},
    {"set_grad_enabled", m_set_grad_enabled, METH_O,
     "Sets this thread's grad mode, returns the previous one (torch.set_grad_enabled)."},
    {"is_grad_enabled", m_is_grad_enabled, METH_NOARGS,
     "This thread's grad mode (torch.is_grad_enabled)."},
    {"mem_stats", m_mem_stats, METH_O, "tg_mem_get for 'cpu' or 'cuda', as a dict."},
    {"reset_peak", m_reset_peak, METH_O, "tg_mem_reset_peak."},
    {"empty_cache", m_empty_cache, METH_O, "tg_mem_empty_cache."},
    {"live_counts", m_live_counts, METH_NOARGS, "tg_live as a dict."},
    {"mem_categories", m_mem_categories, METH_NOARGS, "The memory categories' names."},
    {"cuda_device_count", m_cuda_device_count, METH_NOARGS, "tg_cuda_device_count."},
    {"cuda_set_stream", m_cuda_set_stream, METH_O, "tg_cuda_set_stream (an address or None)."},
    {"cuda_get_stream", m_cuda_get_stream, METH_NOARGS, "tg_cuda_get_stream as an address."},
    {"cuda_set_allocator", m_cuda_set_allocator, METH_VARARGS,
     "tg_cuda_set_allocator(alloc, free): C function addresses, or None, None."},
    {"_drain", m_drain, METH_NOARGS, "Lets go of the owners of released lent memory."},
    {"_skip_frames_under", m_skip_frames_under, METH_O,
     "Call sites skip the frames of files under this directory from now on."},
    {NULL, NULL, 0, NULL}};

/* ---- the module ---------------------------------------------------------------------- */

static int add_functions(PyObject *m, PyMethodDef *defs) {
    return PyModule_AddFunctions(m, defs);
}

static struct PyModuleDef g_module = {
    PyModuleDef_HEAD_INIT, "tapegrad._C",
    "The C library's binding (the package tapegrad is its public face).", -1, NULL,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&g_module);
    if (!m) return NULL;
    if (tgpy_tensor_ready(m) < 0 || tgpy_owners_ready(m) < 0 || tgpy_reports_ready(m) < 0 ||
        tgpy_loss_ready(m) < 0 || add_functions(m, tgpy_module_functions) < 0 ||
        add_functions(m, tgpy_op_functions) < 0 || add_functions(m, tgpy_exchange_functions) < 0 ||
        add_functions(m, tgpy_report_functions) < 0 || add_functions(m, tgpy_fused_functions) < 0 ||
        add_functions(m, tgpy_loss_functions) < 0 ||
        PyModule_AddIntConstant(m, "MAX_DIMS", TG_MAX_DIMS) < 0 ||
        PyModule_AddStringConstant(m, "LIB_VERSION", tg_lib_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
