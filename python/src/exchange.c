/* python/src/exchange.c - memory shared with other Python objects without a
 * copy: tensors over a buffer (NumPy arrays through the buffer protocol, with
 * its read-only flag and byte order), DLPack in both directions, and tensors
 * made from Python data (a copy, as torch.tensor).
 *
 * Lifetimes: a tensor over lent memory holds the lender (a memoryview over the
 * array, the DLPack producer's tensor) until the library's last tensor on that
 * memory dies; the owner is then queued and let go with the GIL
 * (owners.c). */
#include "tgpy.h"

#include <string.h>

/* ---- buffers (from_numpy) -------------------------------------------------------------- */

/* NumPy's name for a buffer format letter, for messages. */
static const char *format_name(const Py_buffer *b) {
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '>' || *f == '!' || *f == '=' || *f == '@') f++;
    switch (*f) {
    case '?': return "bool";
    case 'b': return "int8";
    case 'B': return "uint8";
    case 'h': return "int16";
    case 'H': return "uint16";
    case 'i': return "int32";
    case 'I': return "uint32";
    case 'l': case 'q': return b->itemsize == 8 ? "int64" : "int32";
    case 'L': case 'Q': return b->itemsize == 8 ? "uint64" : "uint32";
    case 'e': return "float16";
    case 'f': return "float32";
    case 'd': return "float64";
    default: return f;
    }
}

/* The tg_dtype of a buffer tapegrad can share as it is, or -1 with the error. */
static int shared_dtype(const char *op, const Py_buffer *b) {
    const char *f = b->format ? b->format : "B";
    const uint16_t one = 1;
    const bool little = *(const uint8_t *)&one == 1;
    const bool foreign = (*f == '<' && !little) || ((*f == '>' || *f == '!') && little);
    if (foreign && b->itemsize > 1) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: the array's byte order is not this "
                     "machine's; tapegrad cannot share it (tapegrad.tensor(array) copies and "
                     "converts it)", op);
        return -1;
    }
    const char *name = format_name(b);
    if (!strcmp(name, "float32")) return TG_F32;
    if (!strcmp(name, "float64")) return TG_F64;
    if (!strcmp(name, "int64")) return TG_I64;
    if (!strcmp(name, "bool") && b->itemsize == 1) return TG_BOOL;
    PyErr_Format(PyExc_TypeError, "tapegrad.%s: dtype %s cannot be shared (float32, float64, "
                 "int64, bool; tapegrad.tensor(array) copies and converts)", op, name);
    return -1;
}

static PyObject *f_from_buffer(PyObject *mod, PyObject *obj) {
    (void)mod;
    const char *op = "from_numpy";
    PyObject *mv = PyMemoryView_FromObject(obj);  /* holds the export while it lives */
    if (!mv) return NULL;
    const Py_buffer *b = PyMemoryView_GET_BUFFER(mv);
    if (b->suboffsets) {  /* PIL-style indirect arrays: the data is not at buf + offset */
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: an indirect buffer (suboffsets) cannot be "
                     "shared", op);
        Py_DECREF(mv);
        return NULL;
    }
    int dt = shared_dtype(op, b);
    if (dt >= 0 && (size_t)b->itemsize != tg_dtype_size((tg_dtype)dt)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: items of %zd bytes for %s", op, b->itemsize,
                     tgpy_dtype_str(dt));
        dt = -1;
    }
    if (dt < 0 || b->ndim > TG_MAX_DIMS) {
        if (dt >= 0)
            PyErr_Format(PyExc_ValueError, "tapegrad.%s: %d dims (at most %d)", op, b->ndim,
                         TG_MAX_DIMS);
        Py_DECREF(mv);
        return NULL;
    }
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int d = 0; d < b->ndim; d++) {
        shape[d] = b->shape[d];
        Py_ssize_t st = b->strides ? b->strides[d] : b->itemsize;
        if (st < 0 || st % b->itemsize) {
            PyErr_Format(PyExc_ValueError, st < 0 ?
                         "tapegrad.%s: a stride of the array is negative, which tapegrad tensors "
                         "do not have (copy the array first: array.copy())" :
                         "tapegrad.%s: a stride of the array is not a whole number of elements",
                         op);
            Py_DECREF(mv);
            return NULL;
        }
        strides[d] = st / b->itemsize;
    }
    void *ctx = tgpy_owner_new(mv);
    Py_DECREF(mv);  /* the owner holds it now */
    if (!ctx) return NULL;
    tg_site s = tgpy_site();
    tg_tensor *h;
    TGPY_NOGIL(h = tg_from_blob_at(s, TG_CPU, (tg_dtype)dt, b->ndim, shape, strides, b->buf,
                                   tgpy_owner_release, ctx));
    if (!h) {
        tgpy_owner_discard(ctx);  /* a failed call kept nothing and calls nothing */
        return tgpy_raise_last();
    }
    /* memory the array's owner may not write (a read-only memmap, bytes,
     * writeable=False): nothing the library does writes it (TG_ERR_READONLY) */
    if (b->readonly) tg_mark_read_only(h);
    return tgpy_wrap(h);
}

/* ---- DLPack ------------------------------------------------------------------------------- */

/* A DLPack dtype tapegrad takes, or -1 with TypeError naming it. */
static int dl_dtype_ok(const tg_dl_dtype *t) {
    static const struct {
        int code, bits;
        const char *name;
        bool ok;
    } known[] = {{TG_DL_FLOAT, 32, "float32", true},  {TG_DL_FLOAT, 64, "float64", true},
                 {TG_DL_INT, 64, "int64", true},      {TG_DL_BOOL, 8, "bool", true},
                 {TG_DL_BFLOAT, 16, "bfloat16", true}, {TG_DL_FLOAT, 16, "float16", false},
                 {TG_DL_INT, 8, "int8", false},       {TG_DL_INT, 16, "int16", false},
                 {TG_DL_INT, 32, "int32", false},     {TG_DL_UINT, 8, "uint8", false},
                 {TG_DL_UINT, 16, "uint16", false},   {TG_DL_UINT, 32, "uint32", false},
                 {TG_DL_UINT, 64, "uint64", false}};
    const char *name = NULL;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (known[i].code == t->code && known[i].bits == t->bits) {
            if (known[i].ok && t->lanes == 1) return 0;
            name = known[i].name;
        }
    if (name)
        PyErr_Format(PyExc_TypeError, "tapegrad.from_dlpack: dtype %s%s is not supported "
                     "(tapegrad takes float32, float64, bfloat16, int64 and bool; convert it "
                     "first, e.g. x.float() or x.long())", name, t->lanes != 1 ? " with lanes" : "");
    else
        PyErr_Format(PyExc_TypeError, "tapegrad.from_dlpack: DLPack dtype code %d of %d bits is "
                     "not supported (tapegrad takes float32, float64, bfloat16, int64 and bool)",
                     (int)t->code, (int)t->bits);
    return -1;
}

/* ---- DLPack in: the producer's deleter runs with the GIL, outside the library ---------- *
 * The library is handed a managed tensor of the binding's own (a shim over the
 * producer's DLTensor) whose deleter only queues the owner; the owner is a
 * capsule that calls the producer's deleter when the queue lets go of it,
 * with the GIL held and no library call running (NumPy's deleter runs Python
 * code). */

static void producer_destructor(PyObject *cap) {
    tg_dl_managed_tensor *m = PyCapsule_GetPointer(cap, "tapegrad.dlpack_producer");
    if (m && m->deleter) m->deleter(m);
}

static void shim_deleter(tg_dl_managed_tensor *shim) {
    void *owner = shim->manager_ctx;
    PyMem_RawFree(shim);
    tgpy_owner_release(owner);
}

/* The DLPack capsule of obj (obj itself, or obj.__dlpack__()), a new reference. */
static PyObject *capsule_of(PyObject *obj) {
    if (PyCapsule_CheckExact(obj)) {
        Py_INCREF(obj);
        return obj;
    }
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (!method) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "tapegrad.from_dlpack: expected an object with "
                         "__dlpack__ or a DLPack capsule, not %.100s", Py_TYPE(obj)->tp_name);
        }
        return NULL;
    }
    PyObject *cap = PyObject_CallNoArgs(method);
    Py_DECREF(method);
    return cap;
}

/* A tensor over m's memory; on success the owner (of m) belongs to the library. */
static tg_tensor *import_managed(tg_dl_managed_tensor *m) {
    PyObject *producer = PyCapsule_New(m, "tapegrad.dlpack_producer", producer_destructor);
    if (!producer) return NULL;
    void *owner = tgpy_owner_new(producer);
    tg_dl_managed_tensor *shim = owner ? PyMem_RawMalloc(sizeof *shim) : NULL;
    tg_tensor *h = NULL;
    if (shim) {
        shim->dl_tensor = m->dl_tensor;  /* shape, strides: the producer's, alive with m */
        shim->manager_ctx = owner;
        shim->deleter = shim_deleter;
        tg_site s = tgpy_site();
        TGPY_NOGIL(h = tg_from_dlpack_at(s, shim));
        if (!h) PyMem_RawFree(shim);  /* a failed import calls no deleter */
    } else if (owner) {
        PyErr_NoMemory();
    }
    if (!h) {
        PyCapsule_SetDestructor(producer, NULL);  /* m stays the caller's */
        tgpy_owner_discard(owner);
        if (!PyErr_Occurred()) tgpy_raise_last();
    }
    Py_DECREF(producer);
    return h;
}

static PyObject *f_from_dlpack(PyObject *mod, PyObject *obj) {
    (void)mod;
    PyObject *cap = capsule_of(obj);
    if (!cap) return NULL;
    if (!PyCapsule_IsValid(cap, "dltensor")) {
        Py_DECREF(cap);
        PyErr_SetString(PyExc_TypeError, "tapegrad.from_dlpack: not a DLPack capsule (or one "
                        "already used)");
        return NULL;
    }
    tg_dl_managed_tensor *m = PyCapsule_GetPointer(cap, "dltensor");
    tg_tensor *h = m && dl_dtype_ok(&m->dl_tensor.dtype) == 0 ? import_managed(m) : NULL;
    /* consumed: the capsule's destructor must not call the deleter (tapegrad owns m) */
    if (h && PyCapsule_SetName(cap, "used_dltensor") < 0) PyErr_Clear();
    Py_DECREF(cap);  /* not consumed on failure: its destructor gives m back */
    return h ? tgpy_wrap(h) : NULL;
}

/* A capsule nobody consumed (still named "dltensor") gives its tensor back. C,
 * so that it runs safely whenever the capsule goes, even at interpreter exit. */
static void capsule_destructor(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "dltensor")) return;
    tg_dl_managed_tensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m || !m->deleter) return;
    if (_Py_IsFinalizing()) {
        m->deleter(m);  /* no other thread runs any more */
        return;
    }
    TGPY_NOGIL(m->deleter(m));  /* the library's deleter: tg_release */
    tgpy_drain_owners();
}

/* to_dlpack(tensor, stream): the capsule of tensor.__dlpack__. */
static PyObject *f_to_dlpack(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *t, *stream = Py_None;
    if (!PyArg_ParseTuple(args, "O!|O", &tgpy_tensor_base, &t, &stream)) return NULL;
    tg_tensor *h = tgpy_handle(t);
    if (tg_requires_grad(h)) {  /* as PyTorch: the consumer would write around autograd */
        PyErr_SetString(PyExc_RuntimeError, "tapegrad: can't export a tensor that requires grad "
                        "through DLPack; use tensor.detach()");
        return NULL;
    }
    if (tg_is_read_only(h)) {  /* DLPack 0.8 cannot say so, and the consumer may write */
        PyErr_SetString(PyExc_BufferError, "tapegrad: can't export read-only memory through "
                        "DLPack (it has no read-only flag); tapegrad.tensor(t) copies it");
        return NULL;
    }
    if (tg_get_device(h) == TG_CUDA && stream != Py_None) {
        /* the consumer reads on its stream: the library's work must be done */
        tg_status st;
        TGPY_NOGIL(st = tg_cuda_synchronize());
        if (tgpy_check(st) < 0) return NULL;
    }
    tg_dl_managed_tensor *m;
    TGPY_NOGIL(m = tg_to_dlpack(h));
    if (!m) return tgpy_raise_last();
    PyObject *cap = PyCapsule_New(m, "dltensor", capsule_destructor);
    if (!cap) TGPY_NOGIL(m->deleter(m));
    return cap;
}

/* tensor(data, dtype): a new tensor holding a copy of data (torch.tensor). */
static PyObject *f_tensor(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *data, *dtype = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &data, &dtype)) return NULL;
    int dt = -1;
    if (dtype != Py_None && (dt = tgpy_dtype_arg("tensor", dtype)) < 0) return NULL;
    tg_tensor *h = tgpy_tensor_from_data("tensor", data, dt, -1);
    return h ? tgpy_wrap(h) : NULL;
}

PyMethodDef tgpy_exchange_functions[] = {
    {"from_buffer", f_from_buffer, METH_O,
     "A tensor over an object's buffer, no copy (torch.from_numpy)."},
    {"from_dlpack", f_from_dlpack, METH_O,
     "A tensor over a DLPack producer's memory, no copy (torch.from_dlpack)."},
    {"to_dlpack", f_to_dlpack, METH_VARARGS, "to_dlpack(tensor, stream=None): a DLPack capsule."},
    {"tensor", f_tensor, METH_VARARGS, "tensor(data, dtype=None): a copy (torch.tensor)."},
    {NULL, NULL, 0, NULL}};
