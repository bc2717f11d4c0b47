/* python/src/tgpy.h - the inside of the extension module tapegrad._C: the
 * Tensor object, argument conversion, call sites, errors, memory lent by
 * Python objects. Internal to python/src/.
 *
 * Rules every function here keeps (a binding is C code in disguise):
 *   - the GIL is held on entry and on return; a library call that may
 *     allocate, free, take a library lock or run long is made with the GIL
 *     released (TGPY_NOGIL), so that a thread waiting for one of the
 *     library's locks never holds the GIL another thread needs;
 *   - every tensor handle passed to the library is kept alive through the
 *     call by a Python object the caller holds, or by the call's own list
 *     of temporaries (tgpy_call), released after the call returns;
 *   - every Python integer reaching a C integer is range-checked (OverflowError,
 *     or IndexError for a dim, as PyTorch), every bool is a real bool;
 *   - the library never calls back into Python with a lock held: what it
 *     hands back (the owner of lent memory) is queued and let go here, with
 *     the GIL (tgpy_drain_owners). The one callback that runs Python code,
 *     linear_loss's loss function (loss.c), is made by the library with none
 *     of its locks held and takes the GIL back itself. */
#ifndef TGPY_H
#define TGPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>

#include "tapegrad.h"

/* ---- the Tensor object (tensor.c) --------------------------------------------- */

typedef struct {
    PyObject_HEAD
    tg_tensor *h;            /* owning one reference; NULL only while being made */
    PyObject *weakrefs;
} tgpy_tensor;

/* The base type tapegrad._C.TensorBase, and the type the module makes its
 * tensors of (the package's tapegrad.Tensor, a subclass; the base until the
 * package registers it). */
extern PyTypeObject tgpy_tensor_base;
extern PyTypeObject *tgpy_tensor_type;

/* Whether o is a tapegrad tensor (the base type or a subclass). */
static inline bool tgpy_is_tensor(PyObject *o) {
    return PyObject_TypeCheck(o, &tgpy_tensor_base);
}
static inline tg_tensor *tgpy_handle(PyObject *o) { return ((tgpy_tensor *)o)->h; }

/* A new Tensor owning h (the caller's reference is taken). h NULL: raises
 * the library's pending error and returns NULL. */
PyObject *tgpy_wrap(tg_tensor *h);
/* Gives back one reference to h with the GIL released; then lets go of the
 * owners the library handed back. */
void tgpy_release(tg_tensor *h);

int tgpy_tensor_ready(PyObject *module);

/* ---- errors (module.c) ---------------------------------------------------------- */

/* Raises the exception for status st with the library's message (tapegrad.
 * TapegradError or the subclass registered for st) and clears the thread's
 * library error. Returns NULL. */
PyObject *tgpy_raise_status(tg_status st);
/* tgpy_raise_status(tg_last_status()), or a TapegradError saying the call
 * failed without a status (never expected). */
PyObject *tgpy_raise_last(void);
/* 0 for TG_OK; else raises as tgpy_raise_status and returns -1. */
int tgpy_check(tg_status st);

/* ---- call sites (site.c) --------------------------------------------------------- */

/* The first Python frame outside the package and the directories given to
 * tgpy_site_skip (its file and line), as a
 * tg_site. The file name is kept for the life of the process (the library
 * keeps the pointer in its graphs and reports). Never fails: "<python>", 0
 * when there is no frame or the name cannot be kept. */
tg_site tgpy_site(void);
/* Frames of files under dir (a str) are skipped from now on. */
int tgpy_site_skip(PyObject *dir);

/* ---- memory lent by Python objects (owners.c) ------------------------------------- */

/* A context for tg_from_blob / a DLPack deleter: holds a new reference to
 * owner, given back (later, with the GIL) once the library calls
 * tgpy_owner_release. NULL with MemoryError. */
void *tgpy_owner_new(PyObject *owner);
/* The release callback: callable from any thread, with or without the GIL,
 * with or without library locks held: it only queues the owner. */
void tgpy_owner_release(void *ctx);
/* Lets go of the queued owners (the GIL held). Reentrant: an owner's
 * deallocation may release tensors and queue more. */
void tgpy_drain_owners(void);
/* Takes back an owner whose call failed (the library did not take it). */
void tgpy_owner_discard(void *ctx);
int tgpy_owners_ready(PyObject *module);

/* ---- argument conversion (convert.c) ---------------------------------------------- */

/* One binding call: the op's name for messages, and what it made for the
 * call (tensors from numbers and lists, arrays, sequences whose items it
 * borrows) to let go of afterwards. The lists start inline and grow on the
 * heap. */
typedef struct tgpy_list {
    int n, cap;
    void **v;               /* inline[] until it grows */
    void *inline_v[4];
} tgpy_list;

typedef struct tgpy_call {
    const char *op;         /* "add", "Tensor.__add__": how messages name the call */
    tgpy_list temps;        /* tg_tensor *: new references */
    tgpy_list mem;          /* PyMem_Malloc'd arrays */
    tgpy_list keep;         /* PyObject *: new references */
} tgpy_call;

static inline void tgpy_list_init(tgpy_list *l) {
    l->n = 0;
    l->cap = 4;
    l->v = l->inline_v;
}
static inline void tgpy_call_init(tgpy_call *c, const char *op) {
    c->op = op;
    tgpy_list_init(&c->temps);
    tgpy_list_init(&c->mem);
    tgpy_list_init(&c->keep);
}
/* Releases what the call made (the GIL held). */
void tgpy_call_done(tgpy_call *c);

/* Maps positional and keyword arguments onto names[0..n): out[i] borrowed,
 * NULL where absent. self (or NULL) is the first argument (a method call).
 * TypeError naming the op for too many, unknown, repeated or missing ones
 * (the first n_required are required). */
int tgpy_parse(const char *op, const char *const *names, int n, int n_required, PyObject *self,
               PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out);

/* The dtype numbers and lists become beside the tensors among objs[0..n):
 * PyTorch's result_type of the Tensor arguments, or -1 when there is none
 * (then a float number becomes f32, an int i64, a bool bool). */
int tgpy_like_dtype(PyObject *const *objs, int n);

/* A tensor argument: a Tensor (borrowed), None where `nullable` (NULL,
 * *out = NULL), or a number, a (nested) sequence of numbers or an object
 * with the buffer protocol converted to a new tensor held by the call
 * (numbers of the `like` dtype, as PyTorch's wrapped numbers: see
 * tgpy_scalar_dtype). TypeError naming the op and the argument otherwise. */
int tgpy_tensor_arg(tgpy_call *c, PyObject *o, const char *name, bool nullable, int like,
                    tg_tensor **out);
int tgpy_int_arg(tgpy_call *c, PyObject *o, const char *name, int *out);
int tgpy_int64_arg(tgpy_call *c, PyObject *o, const char *name, int64_t *out);
int tgpy_uint64_arg(tgpy_call *c, PyObject *o, const char *name, uint64_t *out);
int tgpy_double_arg(tgpy_call *c, PyObject *o, const char *name, double *out);
int tgpy_bool_arg(tgpy_call *c, PyObject *o, const char *name, bool *out);
/* An enum by name (the C name or the part after the common prefix, any case)
 * or by value: names[i] for value values[i]. ValueError naming the choices
 * (and enum_name, the C enum, unless NULL). */
int tgpy_enum_arg(tgpy_call *c, PyObject *o, const char *name, const char *enum_name,
                  const char *prefix, const char *const *names, const int *values, int n,
                  int *out);
/* A sequence of ints (or one int) into an array the call owns. dims: the
 * values are dims (out of range of int: IndexError). */
int tgpy_int64s_arg(tgpy_call *c, PyObject *o, const char *name, int *n, const int64_t **out);
int tgpy_ints_arg(tgpy_call *c, PyObject *o, const char *name, int *n, const int **out);
/* A sequence of tensor arguments into an array the call owns. */
int tgpy_tensors_arg(tgpy_call *c, PyObject *o, const char *name, int like, int *n,
                     tg_tensor *const **out);

/* 0 for a bool, 1 for an int (any object with __index__), 2 for a float
 * (any other object with __float__) that is not a sequence; -1 for anything
 * else (no error set). */
int tgpy_number_kind(PyObject *o);
/* The dtype numbers of kind `kind` become beside tensors of dtype like (-1:
 * none), as tgpy_scalar_dtype. */
tg_dtype tgpy_kind_dtype(int kind, int like);
/* The dtype a Python number becomes beside tensors of dtype like (-1: none),
 * as PyTorch's wrapped numbers: a bool is bool; an int is like's dtype when
 * like is a float or i64, else i64; a float is like's dtype when like is a
 * float dtype, else f32. */
tg_dtype tgpy_scalar_dtype(PyObject *num, int like);
/* A new tensor holding data (a number, a nested sequence of numbers and
 * one-element Tensors, an object with the buffer protocol, a Tensor:
 * copied), of dtype dt; dt -1: an array's own dtype, and for numbers the one
 * they take beside tensors of dtype like (tgpy_kind_dtype), or with like -1
 * the one torch.tensor infers (f64 when a NumPy float64 is among them). NULL
 * with the exception set. op names the caller. */
tg_tensor *tgpy_tensor_from_data(const char *op, PyObject *data, int dt, int like);

/* ---- dtype names (convert.c) -------------------------------------------------------- */

/* "f32" ... for a tg_dtype; NULL for another value. */
const char *tgpy_dtype_str(int dt);
/* The tg_dtype named s ("f32", "float32", "torch.float32", ...), or -1. */
int tgpy_dtype_from_str(const char *s);
/* The tg_dtype of o (a str name, an int value), or -1 with ValueError /
 * TypeError naming op. */
int tgpy_dtype_arg(const char *op, PyObject *o);

/* ---- the generated ops (ops_gen.c, run by ops_run.c) ----------------------------------- */

typedef enum tgpy_kind {
    TGPY_TENSOR,      /* tg_tensor *: a Tensor, a number, a nested sequence */
    TGPY_TENSOR_OPT,  /* the same, or None for NULL */
    TGPY_INT,         /* int, range-checked */
    TGPY_INT64,
    TGPY_UINT64,
    TGPY_DOUBLE,
    TGPY_BOOL,        /* a bool, nothing else */
    TGPY_ENUM,        /* an int given by name (tgpy_enum_def) */
    TGPY_INT64S,      /* (int n, const int64_t *v) */
    TGPY_INTS,        /* (int n, const int *v) */
    TGPY_TENSORS,     /* (int n, tg_tensor *const *v) */
    TGPY_OUT          /* tg_tensor **: an extra output, not an argument */
} tgpy_kind;

typedef struct tgpy_enum_def {
    const char *name;            /* "tg_reduction" */
    const char *prefix;          /* "tg_reduction_": the C names' common part */
    int n;
    const char *const *names;    /* lower-case, without the prefix */
    const int *values;
} tgpy_enum_def;

typedef struct tgpy_param {
    const char *name;
    tgpy_kind kind;
    const tgpy_enum_def *enum_def; /* TGPY_ENUM */
} tgpy_param;

/* One converted argument. */
typedef union tgpy_arg {
    tg_tensor *t;                /* TGPY_TENSOR(_OPT), TGPY_OUT (the output slot) */
    int i;
    int64_t l;
    uint64_t u;
    double d;
    bool b;
    struct {
        int n;
        const void *v;
    } arr;                       /* TGPY_INT64S, TGPY_INTS, TGPY_TENSORS */
} tgpy_arg;

typedef struct tgpy_op_def {
    const char *name;            /* "softmax_dim" */
    const char *method_name;     /* "Tensor.softmax_dim" */
    int n_params;                /* TGPY_OUT included */
    const tgpy_param *params;
    bool returns_status;         /* an in-place op: returns its first argument */
    tg_tensor *(*call_tensor)(tg_site s, tgpy_arg *a);
    tg_status (*call_status)(tg_site s, tgpy_arg *a);
} tgpy_op_def;

/* Parses, converts, calls (the GIL released), wraps: the body of every
 * generated function (self NULL) and method. */
PyObject *tgpy_run_op(const tgpy_op_def *def, PyObject *self, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames);

/* The generated op functions (ops_gen.c): PyMethodDef arrays ending in a
 * NULL entry, for the module and for the Tensor type. */
extern PyMethodDef tgpy_op_functions[];
extern PyMethodDef tgpy_op_methods[];

/* Hand-written module functions, by file (NULL-ended arrays). */
extern PyMethodDef tgpy_exchange_functions[];
extern PyMethodDef tgpy_report_functions[];
extern PyMethodDef tgpy_fused_functions[];
extern PyMethodDef tgpy_loss_functions[];
extern PyMethodDef tgpy_module_functions[];

int tgpy_reports_ready(PyObject *module);
/* Adds the type LinearLossChunk (loss.c). */
int tgpy_loss_ready(PyObject *module);

/* Runs stmt with the GIL released. */
#define TGPY_NOGIL(stmt)                                                               \
    do {                                                                               \
        PyThreadState *tgpy_ts_ = PyEval_SaveThread();                                 \
        stmt;                                                                          \
        PyEval_RestoreThread(tgpy_ts_);                                                \
    } while (0)

#endif
