/* python/src/data.c - Python data into new tensors (torch.tensor's
 * conversions): numbers, nested sequences, and objects with the buffer
 * protocol (NumPy arrays of any byte order and layout, array.array,
 * memoryview), read element by element into the requested dtype. An int64
 * that does not fit, a float that no int64 holds, a ragged sequence: an
 * exception naming the caller, never a silent wrap. */
#include "tgpy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- tensors from data ---------------------------------------------------------------------- */

/* One element read from Python or a buffer. */
typedef struct {
    int kind;     /* 0 bool, 1 int, 2 float */
    int64_t i;    /* kind 0, 1 */
    double d;     /* kind 2 */
} elem;

typedef struct {
    const char *op;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    elem *v;
    int64_t n, cap;
    int kind;     /* the highest kind seen, -1 before the first */
    bool wide;    /* a float64 came typed (a NumPy float64, an f64 Tensor): infer f64 */
} flat;

static int flat_push(flat *f, elem e) {
    if (f->n == f->cap) {
        int64_t cap = f->cap ? 2 * f->cap : 64;
        elem *v = PyMem_Realloc(f->v, (size_t)cap * sizeof *v);
        if (!v) return PyErr_NoMemory(), -1;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = e;
    if (e.kind > f->kind) f->kind = e.kind;
    return 0;
}

/* A one-element Tensor as an element (torch.tensor([t1, t2]) takes them). */
static int read_tensor_elem(flat *f, PyObject *o) {
    tg_tensor *h = tgpy_handle(o);
    if (tg_numel(h) != 1) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: a Tensor of %lld elements as an element "
                     "(only one-element tensors convert)", f->op, (long long)tg_numel(h));
        return -1;
    }
    tg_dtype dt = tg_get_dtype(h);
    elem e = {dt == TG_BOOL ? 0 : dt == TG_I64 ? 1 : 2, 0, 0.0};
    tg_status st;
    if (e.kind == 2) {
        TGPY_NOGIL(st = tg_copy_out(h, TG_F64, &e.d, sizeof e.d));
        f->wide = f->wide || dt == TG_F64;
    } else {
        TGPY_NOGIL(st = tg_copy_out(h, TG_I64, &e.i, sizeof e.i));
    }
    return tgpy_check(st) < 0 ? -1 : flat_push(f, e);
}

static int read_number(flat *f, PyObject *o) {
    if (tgpy_is_tensor(o)) return read_tensor_elem(f, o);
    elem e = {0, 0, 0.0};
    int kind = tgpy_number_kind(o);
    if (kind < 0) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: %.100s is not a number", f->op,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    e.kind = kind;
    if (kind == 2) {
        /* NumPy's float64 is a float subclass carrying its precision */
        if (!PyFloat_CheckExact(o) && PyFloat_Check(o)) f->wide = true;
        e.d = PyFloat_AsDouble(o);
        if (e.d == -1.0 && PyErr_Occurred()) return -1;
    } else {
        PyObject *i = PyNumber_Index(o);
        if (!i) return -1;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
        if (overflow) /* the int, not o: __index__ may have let go of o */
            PyErr_Format(PyExc_OverflowError, "tapegrad.%s: %S is outside int64", f->op, i);
        Py_DECREF(i);
        if (overflow || (v == -1 && PyErr_Occurred())) return -1;
        e.i = (int64_t)v;
    }
    return flat_push(f, e);
}

/* Walks nested sequences; dim is the depth of o. */
static int read_nested(flat *f, PyObject *o, int dim) {
    bool seq = !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyByteArray_Check(o) &&
               !tgpy_is_tensor(o) && PySequence_Check(o);
    if (!seq) {
        if (dim < f->ndim) {
            PyErr_Format(PyExc_ValueError, "tapegrad.%s: ragged nested sequence (a number where "
                         "dim %d has %lld elements)", f->op, dim, (long long)f->shape[dim]);
            return -1;
        }
        if (f->ndim < 0) f->ndim = dim;  /* the first leaf fixes the depth */
        if (dim != f->ndim) {
            PyErr_Format(PyExc_ValueError, "tapegrad.%s: ragged nested sequence", f->op);
            return -1;
        }
        return read_number(f, o);
    }
    if (dim >= TG_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: more than %d nested dims", f->op, TG_MAX_DIMS);
        return -1;
    }
    /* a tuple snapshot: reading an element may run Python code that changes o */
    PyObject *items = PySequence_Tuple(o);
    if (!items) return -1;
    Py_ssize_t len = PyTuple_GET_SIZE(items);
    int rc = 0;
    if (f->ndim >= 0 && dim >= f->ndim) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: ragged nested sequence", f->op);
        rc = -1;
    } else if (f->shape[dim] < 0) {
        f->shape[dim] = len;
        if (len == 0) f->ndim = dim + 1;  /* an empty sequence ends the shape */
    } else if (f->shape[dim] != len) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: ragged nested sequence (dim %d has %lld "
                     "and %zd elements)", f->op, dim, (long long)f->shape[dim], len);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++)
        rc = read_nested(f, PyTuple_GET_ITEM(items, i), dim + 1);  /* depth <= TG_MAX_DIMS */
    Py_DECREF(items);
    return rc;
}

/* ---- buffers (NumPy arrays, array.array, memoryview, bytes) ---------------------------------- */

/* What a buffer's format says: the element kind, whether it is signed (ints)
 * and whether its bytes are swapped against this machine. -1 with TypeError
 * for a format that is not one number. */
typedef struct {
    int kind;        /* 0 bool, 1 int, 2 float */
    bool is_signed;
    bool swap;
    char code;       /* the struct module's letter */
} buf_format;

static bool host_little(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static int parse_format(const char *op, const Py_buffer *b, buf_format *f) {
    const char *s = b->format ? b->format : "B";
    bool little = host_little();
    f->swap = false;
    if (*s == '<' || *s == '>' || *s == '!' || *s == '=' || *s == '@') {
        if (*s == '<') f->swap = !little;
        if (*s == '>' || *s == '!') f->swap = little;
        s++;
    }
    f->code = *s;
    bool one = s[0] && !s[1];
    switch (one ? *s : 0) {
    case '?': f->kind = 0, f->is_signed = false; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        f->kind = 1, f->is_signed = true; break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
        f->kind = 1, f->is_signed = false; break;
    case 'e': case 'f': case 'd': f->kind = 2, f->is_signed = true; break;
    default:
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: buffer format '%s' is not a number tapegrad "
                     "reads (bool, ints, float16/32/64)", op, b->format ? b->format : "B");
        return -1;
    }
    if ((f->kind == 2 && b->itemsize != 2 && b->itemsize != 4 && b->itemsize != 8) ||
        (f->kind != 2 && b->itemsize != 1 && b->itemsize != 2 && b->itemsize != 4 &&
         b->itemsize != 8)) {
        PyErr_Format(PyExc_TypeError, "tapegrad.%s: buffer items of %zd bytes", op, b->itemsize);
        return -1;
    }
    return 0;
}

static void swap_bytes(uint8_t *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n / 2; i++) {
        uint8_t t = p[i];
        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* One element at p (the buffer's format f, size sz). -1 with OverflowError for
 * an unsigned value beyond int64. */
static int read_elem(const char *op, const uint8_t *p, const buf_format *f, Py_ssize_t sz,
                     elem *e) {
    uint8_t tmp[8];
    memcpy(tmp, p, (size_t)sz);
    if (f->swap) swap_bytes(tmp, sz);
    e->kind = f->kind;
    e->i = 0;
    e->d = 0.0;
    if (f->kind == 2) {
        if (sz == 2) {
            uint16_t h;
            memcpy(&h, tmp, 2);
            e->d = half_to_double(h);
        } else if (sz == 4) {
            float v;
            memcpy(&v, tmp, 4);
            e->d = v;
        } else {
            memcpy(&e->d, tmp, 8);
        }
        return 0;
    }
    uint64_t u = 0;
    int64_t s = 0;
    switch (sz) {
    case 1: { uint8_t v; memcpy(&v, tmp, 1); u = v; s = (int8_t)v; break; }
    case 2: { uint16_t v; memcpy(&v, tmp, 2); u = v; s = (int16_t)v; break; }
    case 4: { uint32_t v; memcpy(&v, tmp, 4); u = v; s = (int32_t)v; break; }
    default: { uint64_t v; memcpy(&v, tmp, 8); u = v; s = (int64_t)v; break; }
    }
    if (f->kind == 0) {
        e->i = u != 0;
    } else if (f->is_signed) {
        e->i = s;
    } else if (u > (uint64_t)INT64_MAX) {
        PyErr_Format(PyExc_OverflowError, "tapegrad.%s: %llu is outside int64", op,
                     (unsigned long long)u);
        return -1;
    } else {
        e->i = (int64_t)u;
    }
    return 0;
}

/* The elements of a buffer in C order into f. */
static int read_buffer(flat *f, const Py_buffer *b) {
    buf_format fmt;
    if (parse_format(f->op, b, &fmt) < 0) return -1;
    if (b->ndim > TG_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: %d dims (at most %d)", f->op, b->ndim,
                     TG_MAX_DIMS);
        return -1;
    }
    f->ndim = b->ndim;
    int64_t n = 1;
    for (int d = 0; d < b->ndim; d++) {
        f->shape[d] = b->shape[d];
        if (n && b->shape[d] > ((int64_t)1 << 60) / n) {  /* a broadcast view can claim that */
            PyErr_Format(PyExc_ValueError, "tapegrad.%s: more than 2**60 elements", f->op);
            return -1;
        }
        n *= b->shape[d];
    }
    if (n == 0) {
        f->kind = fmt.kind;
        return 0;
    }
    /* all of it at once: an array too large fails here, not after reading most of it */
    if (!(f->v = PyMem_Malloc((size_t)n * sizeof *f->v))) return PyErr_NoMemory(), -1;
    f->cap = n;
    int64_t idx[TG_MAX_DIMS] = {0};  /* PyBUF_RECORDS_RO: strides are given when ndim > 0 */
    for (int64_t k = 0; k < n; k++) {
        const uint8_t *p = b->buf;
        for (int d = 0; d < b->ndim; d++) p += idx[d] * b->strides[d];
        elem e;
        if (read_elem(f->op, p, &fmt, b->itemsize, &e) < 0 || flat_push(f, e) < 0) return -1;
        for (int d = b->ndim - 1; d >= 0 && ++idx[d] == b->shape[d]; d--) idx[d] = 0;
    }
    f->kind = fmt.kind;
    return 0;
}

/* The dtype torch.tensor infers for a buffer: its own (f32, f64, i64, bool),
 * the other ints as i64 and float16 as f32 (tapegrad has neither). */
static int buffer_dtype(const buf_format *fmt, Py_ssize_t itemsize) {
    if (fmt->kind == 0) return TG_BOOL;
    if (fmt->kind == 1) return TG_I64;
    return itemsize == 8 ? TG_F64 : TG_F32;
}

/* ---- writing the elements in a dtype ------------------------------------------------------ */

static int to_int64(const char *op, const elem *e, int64_t *out) {
    if (e->kind != 2) return *out = e->i, 0;
    /* as PyTorch, truncated toward zero; a value an int64 cannot hold is refused
     * (PyTorch's result is undefined there) */
    if (!(e->d >= -9223372036854775808.0 && e->d < 9223372036854775808.0)) {
        char text[64];
        snprintf(text, sizeof text, "%.17g", e->d);
        PyErr_Format(PyExc_ValueError, "tapegrad.%s: cannot convert %s to int64", op, text);
        return -1;
    }
    *out = (int64_t)e->d;
    return 0;
}

static double to_double(const elem *e) { return e->kind == 2 ? e->d : (double)e->i; }

/* The elements of f as dtype dt, in a new PyMem buffer. */
static void *pack(const flat *f, int dt) {
    size_t es = tg_dtype_size((tg_dtype)dt);
    void *buf = PyMem_Malloc((size_t)(f->n ? f->n : 1) * es);
    if (!buf) return PyErr_NoMemory(), NULL;
    for (int64_t k = 0; k < f->n; k++) {
        const elem *e = &f->v[k];
        switch (dt) {
        case TG_F32: ((float *)buf)[k] = (float)to_double(e); break;
        case TG_F64: ((double *)buf)[k] = to_double(e); break;
        case TG_BF16: ((uint16_t *)buf)[k] = tg_bf16_from_f32((float)to_double(e)); break;
        case TG_BOOL: ((uint8_t *)buf)[k] = e->kind == 2 ? e->d != 0.0 : e->i != 0; break;
        default:
            if (to_int64("tensor", e, &((int64_t *)buf)[k]) < 0) {
                PyMem_Free(buf);
                return NULL;
            }
        }
    }
    return buf;
}

/* ---- tensors from data ---------------------------------------------------------------------- */

/* The copy of a Tensor given as data, detached, converted to dt (-1: kept). */
static tg_tensor *copy_of_tensor(PyObject *t, int dt) {
    tg_site s = tgpy_site();
    tg_tensor *h = tgpy_handle(t), *r = NULL;
    TGPY_NOGIL({
        tg_tensor *d = tg_detach_at(s, h);
        tg_tensor *c = d ? tg_clone_at(s, d) : NULL;
        tg_release(d);
        r = c && dt >= 0 && dt != (int)tg_get_dtype(c) ? tg_to_dtype_at(s, c, (tg_dtype)dt) : c;
        if (r != c) tg_release(c);
    });
    if (!r) tgpy_raise_last();
    return r;
}

tg_tensor *tgpy_tensor_from_data(const char *op, PyObject *data, int dt, int like) {
    if (tgpy_is_tensor(data)) return copy_of_tensor(data, dt);
    flat f = {op, -1, {0}, NULL, 0, 0, -1, false};
    for (int d = 0; d < TG_MAX_DIMS; d++) f.shape[d] = -1;
    int rc;
    /* a number (a NumPy scalar too: its buffer may be a long double) is read as a number */
    if (PyObject_CheckBuffer(data) && !PyBytes_Check(data) && !PyByteArray_Check(data) &&
        tgpy_number_kind(data) < 0) {
        Py_buffer b;
        if (PyObject_GetBuffer(data, &b, PyBUF_RECORDS_RO) < 0) return NULL;
        rc = read_buffer(&f, &b);
        buf_format fmt;  /* an array keeps its own dtype, beside tensors too */
        if (rc == 0 && dt < 0 && parse_format(op, &b, &fmt) == 0)
            dt = buffer_dtype(&fmt, b.itemsize);
        PyBuffer_Release(&b);
    } else {
        rc = read_nested(&f, data, 0);
        if (f.ndim < 0) f.ndim = 0;
        /* numbers beside tensors: PyTorch's wrapped numbers (tgpy_kind_dtype) */
        if (rc == 0 && dt < 0 && like >= 0 && f.kind >= 0) dt = (int)tgpy_kind_dtype(f.kind, like);
    }
    if (rc < 0) {
        PyMem_Free(f.v);
        return NULL;
    }
    if (dt < 0) dt = f.kind == 0 ? TG_BOOL : f.kind == 1 ? TG_I64 : f.wide ? TG_F64 : TG_F32;
    for (int d = 0; d < f.ndim; d++)
        if (f.shape[d] < 0) f.shape[d] = 0;
    void *buf = pack(&f, dt);
    PyMem_Free(f.v);
    if (!buf) return NULL;
    tg_site s = tgpy_site();
    tg_tensor *h;
    TGPY_NOGIL(h = tg_from_data_at(s, (tg_dtype)dt, f.ndim, f.shape, buf));
    PyMem_Free(buf);
    if (!h) tgpy_raise_last();
    return h;
}
