/* python/src/loss.c - the loss known in forward (tapegrad/logprob.h,
 * tg_linear_loss): linear_loss(hidden, weight, targets, loss_fn, ...) with a
 * Python callable as the loss, returning (loss, logprob, entropy).
 *
 * The library calls back for each chunk of rows; the callback runs the
 * Python callable on a LinearLossChunk and hands the library the tensor it
 * returns. How it keeps the binding's rules (tgpy.h):
 *   - the GIL: tg_linear_loss is called with the GIL released, as every
 *     library call that allocates and takes the library's locks (between
 *     chunks it does both; on CUDA its allocations may go to PyTorch's
 *     allocator through callbacks that take the GIL themselves, so holding
 *     it across the call could deadlock a thread waiting for the library).
 *     The callback takes the GIL back with PyGILState_Ensure, which finds
 *     the thread state this thread released (the library calls back on the
 *     calling thread) and would make one for any other thread;
 *   - the chunk's tensors are borrowed from the library for the callback
 *     only: the chunk's Tensors hold references of their own, so a callable
 *     that keeps them keeps valid tensors (the library then refuses a loss
 *     of a later chunk that uses them, naming its rows);
 *   - a Python exception (raised by the callable, or a result that is not
 *     a Tensor) is kept, the callback returns an error, and once
 *     tg_linear_loss has returned the library's error is cleared and the
 *     same exception is raised again, with a note naming the chunk. After
 *     a failure the callable is not called again. */
#include "tgpy.h"

/* Py_NewRef, which Python 3.9 lacks */
static PyObject *new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}

/* ---- the chunk object ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *index;      /* int */
    PyObject *rows;       /* slice(row_start, row_end) */
    PyObject *logprob;    /* Tensor: the chunk's leaves (own references) */
    PyObject *entropy;
    PyObject *lse;
    PyObject *targets;    /* Tensor: i64 (rows), a copy, on the CPU */
} tgpy_chunk;

static void chunk_dealloc(tgpy_chunk *self) {
    Py_XDECREF(self->index);
    Py_XDECREF(self->rows);
    Py_XDECREF(self->logprob);
    Py_XDECREF(self->entropy);
    Py_XDECREF(self->lse);
    Py_XDECREF(self->targets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CHUNK_GET(field)                                                                       \
    static PyObject *chunk_get_##field(PyObject *self, void *u) {                            \
        (void)u;                                                                               \
        PyObject *v = ((tgpy_chunk *)self)->field;                                             \
        return new_ref(v ? v : Py_None);                                                     \
    }
CHUNK_GET(index)
CHUNK_GET(rows)
CHUNK_GET(logprob)
CHUNK_GET(entropy)
CHUNK_GET(lse)
CHUNK_GET(targets)

static PyGetSetDef chunk_getset[] = {
    {"index", chunk_get_index, NULL, "0, 1, ... in row order.", NULL},
    {"rows", chunk_get_rows, NULL,
     "slice(row_start, row_end): the chunk's rows among hidden's N rows (row-major over its "
     "leading dims); per-token constants of shape (N,) are sliced with it.",
     NULL},
    {"logprob", chunk_get_logprob, NULL,
     "(rows,) log softmax(z / T)[target], 0 where ignored: a leaf requiring grad when the call "
     "records a gradient.",
     NULL},
    {"entropy", chunk_get_entropy, NULL,
     "(rows,) the entropy of softmax(z / T): requiring grad only with entropy_grad.", NULL},
    {"lse", chunk_get_lse, NULL, "(rows,) logsumexp(z / T).", NULL},
    {"targets", chunk_get_targets, NULL,
     "(rows,) the chunk's targets: an int64 CPU Tensor (a copy).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyObject *chunk_repr(PyObject *self) {
    tgpy_chunk *c = (tgpy_chunk *)self;
    return PyUnicode_FromFormat("LinearLossChunk(index=%R, rows=%R)", c->index, c->rows);
}

static PyTypeObject chunk_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tapegrad._C.LinearLossChunk",
    .tp_basicsize = sizeof(tgpy_chunk),
    .tp_dealloc = (destructor)chunk_dealloc,
    .tp_repr = chunk_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One chunk of rows of tapegrad.linear_loss, given to its loss_fn: index, rows "
              "(a slice), logprob, entropy, lse (Tensors of the chunk's rows) and targets. "
              "Made by the library's loop only.",
    .tp_getset = chunk_getset,
};

/* A Tensor holding a new reference to h, or None for NULL. */
static PyObject *wrap_borrowed(tg_tensor *h) {
    if (!h) return new_ref(Py_None);
    return tgpy_wrap(tg_retain(h));
}

static PyObject *chunk_new(const tg_linear_loss_chunk *ch) {
    tgpy_chunk *c = PyObject_New(tgpy_chunk, &chunk_type);
    if (!c) return NULL;
    c->index = c->rows = c->logprob = c->entropy = c->lse = c->targets = NULL;
    int64_t n = ch->row_end - ch->row_start;
    PyObject *start = PyLong_FromLongLong(ch->row_start);
    PyObject *end = start ? PyLong_FromLongLong(ch->row_end) : NULL;
    if (end) c->rows = PySlice_New(start, end, NULL);
    Py_XDECREF(start);
    Py_XDECREF(end);
    if (!c->rows || !(c->index = PyLong_FromLongLong(ch->index)) ||
        !(c->logprob = wrap_borrowed(ch->logprob)) ||
        !(c->entropy = wrap_borrowed(ch->entropy)) || !(c->lse = wrap_borrowed(ch->lse))) {
        Py_DECREF(c);
        return NULL;
    }
    static const int64_t none = 0;
    tg_tensor *y;
    tg_site s = tgpy_site();
    TGPY_NOGIL(y = tg_from_data_at(s, TG_I64, 1, &n, ch->targets ? ch->targets : &none));
    if (!(c->targets = tgpy_wrap(y))) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

/* ---- the callback -------------------------------------------------------------------- */

typedef struct {
    PyObject *fn;         /* the loss function (borrowed: an argument of the call) */
    PyObject *exc;        /* the exception it raised, NULL while none */
    unsigned long thread; /* the calling thread */
    int64_t index, row_start, row_end; /* the chunk it raised on */
} loss_user;

/* The pending exception, taken (PyErr_Fetch's three parts folded into one). */
static PyObject *take_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

static void raise_exception(PyObject *exc) {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(new_ref((PyObject *)Py_TYPE(exc)), exc, tb);
#endif
}

static tg_status run_loss(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    loss_user *u = user;
    *loss = NULL;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (u->exc) {  /* never expected: the loop stops at the first failure */
        PyGILState_Release(gil);
        return tg_set_error(TG_ERR_STATE, "the loss function already raised an exception");
    }
    PyObject *chunk = chunk_new(ch);
    PyObject *r = chunk ? PyObject_CallOneArg(u->fn, chunk) : NULL;
    Py_XDECREF(chunk);
    if (r && !tgpy_is_tensor(r)) {
        PyErr_Format(PyExc_TypeError,
                     "tapegrad.linear_loss: loss_fn must return a tapegrad Tensor (the loss of "
                     "rows [%lld, %lld)), not %.100s",
                     (long long)ch->row_start, (long long)ch->row_end, Py_TYPE(r)->tp_name);
        Py_CLEAR(r);
    }
    tg_status st = TG_OK;
    if (r) {
        *loss = tg_retain(tgpy_handle(r));
        Py_DECREF(r);  /* the library now holds its own reference */
    } else {
        u->exc = take_exception();
        u->index = ch->index;
        u->row_start = ch->row_start;
        u->row_end = ch->row_end;
        st = tg_set_error(TG_ERR_VALUE, "the loss function raised %s for rows [%lld, %lld)",
                          u->exc ? Py_TYPE(u->exc)->tp_name : "an exception",
                          (long long)ch->row_start, (long long)ch->row_end);
    }
    PyGILState_Release(gil);
    return st;
}

/* Raises u->exc (taken) with a note naming the chunk (Python >= 3.11). */
static void reraise(loss_user *u) {
    PyObject *exc = u->exc;
    u->exc = NULL;
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *note = PyUnicode_FromFormat(
        "(raised by loss_fn of tapegrad.linear_loss on chunk %lld, rows [%lld, %lld))",
        (long long)u->index, (long long)u->row_start, (long long)u->row_end);
    PyObject *r = note ? PyObject_CallMethod(exc, "add_note", "O", note) : NULL;
    if (!r) PyErr_Clear();  /* the exception goes up as it is */
    Py_XDECREF(r);
    Py_XDECREF(note);
#endif
    raise_exception(exc);
}

/* ---- linear_loss ------------------------------------------------------------------------ */

static PyObject *f_linear_loss(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames) {
    (void)mod;
    static const char *const names[] = {
        "hidden",         "weight",         "targets",    "loss_fn",   "bias",
        "temperature",    "ignore_index",   "entropy_grad", "grad_f32", "workspace_bytes",
        "chunk_rows",     "vocab_block",    "seq_lens"};
    enum { N_ARGS = sizeof names / sizeof *names };
    PyObject *a[N_ARGS];
    if (tgpy_parse("linear_loss", names, N_ARGS, 4, NULL, args, nargs, kwnames, a) < 0)
        return NULL;
    tgpy_call c;
    tgpy_call_init(&c, "linear_loss");
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    /* Python's tensors own their references (tgpy_wrap): no scope around
     * the callable, whose Tensors would otherwise hold the scope's reference */
    o.callback_scope = false;
    tg_tensor *hid, *w, *y, *b = NULL;
    int64_t ws = (int64_t)o.workspace_bytes;
    int n_seqs = 0;
    PyObject *r = NULL;
    if (tgpy_tensor_arg(&c, a[0], "hidden", false, -1, &hid) < 0 ||
        tgpy_tensor_arg(&c, a[1], "weight", false, -1, &w) < 0 ||
        tgpy_tensor_arg(&c, a[2], "targets", false, -1, &y) < 0 ||
        (a[4] && tgpy_tensor_arg(&c, a[4], "bias", true, -1, &b) < 0) ||
        (a[5] && tgpy_double_arg(&c, a[5], "temperature", &o.temperature) < 0) ||
        (a[6] && tgpy_int64_arg(&c, a[6], "ignore_index", &o.ignore_index) < 0) ||
        (a[7] && tgpy_bool_arg(&c, a[7], "entropy_grad", &o.entropy_grad) < 0) ||
        (a[8] && tgpy_bool_arg(&c, a[8], "grad_f32", &o.grad_f32) < 0) ||
        (a[9] && tgpy_int64_arg(&c, a[9], "workspace_bytes", &ws) < 0) ||
        (a[10] && tgpy_int64_arg(&c, a[10], "chunk_rows", &o.chunk_rows) < 0) ||
        (a[11] && tgpy_int64_arg(&c, a[11], "vocab_block", &o.vocab_block) < 0) ||
        (a[12] && a[12] != Py_None &&
         tgpy_int64s_arg(&c, a[12], "seq_lens", &n_seqs, &o.seq_lens) < 0))
        goto done;
    if (!PyCallable_Check(a[3])) {
        PyErr_Format(PyExc_TypeError,
                     "tapegrad.linear_loss: argument 'loss_fn' must be callable, not %.100s",
                     Py_TYPE(a[3])->tp_name);
        goto done;
    }
    if (ws < 0) {
        PyErr_SetString(PyExc_ValueError, "tapegrad.linear_loss: workspace_bytes must be >= 0");
        goto done;
    }
    o.workspace_bytes = (size_t)ws;
    o.n_seqs = n_seqs;
    /* a[3] (the callable) and the tensor arguments are held by the caller
     * through the call, the converted ones and seq_lens by c */
    loss_user u = {a[3], NULL, PyThread_get_thread_ident(), 0, 0, 0};
    tg_tensor *loss = NULL, *lp = NULL, *h = NULL;
    tg_site s = tgpy_site();
    tg_status st;
    TGPY_NOGIL(st = tg_linear_loss_at(s, hid, w, b, y, run_loss, &u, &o, &loss, &lp, &h));
    if (st != TG_OK && u.exc) {
        tg_clear_error();
        tgpy_release(loss);
        tgpy_release(lp);
        tgpy_release(h);
        reraise(&u);
        goto done;
    }
    Py_CLEAR(u.exc);  /* kept by a call that succeeded: never expected */
    tg_tensor *hs[3] = {loss, lp, h};
    if (st != TG_OK) {
        tgpy_raise_status(st);  /* first: releasing could run an owner's code */
        for (int i = 0; i < 3; i++) tgpy_release(hs[i]);
        goto done;
    }
    r = PyTuple_New(3);
    for (int i = 0; i < 3; i++) {
        PyObject *t = !r ? NULL : hs[i] ? tgpy_wrap(hs[i]) : new_ref(Py_None);
        if (!t) {
            for (int j = r ? i + 1 : i; j < 3; j++) tgpy_release(hs[j]);
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, t);
    }
done:
    tgpy_call_done(&c);
    return r;
}

PyMethodDef tgpy_loss_functions[] = {
    {"linear_loss", (PyCFunction)(void (*)(void))f_linear_loss, METH_FASTCALL | METH_KEYWORDS,
     "linear_loss(hidden, weight, targets, loss_fn, bias=None, temperature=1.0, "
     "ignore_index=-100, entropy_grad=True, grad_f32=False, workspace_bytes=0, chunk_rows=0, "
     "vocab_block=0, seq_lens=None) -> (loss, logprob, entropy): tg_linear_loss, loss_fn(chunk) "
     "called for each chunk of rows (a LinearLossChunk) returning that chunk's loss."},
    {NULL, NULL, 0, NULL}};

int tgpy_loss_ready(PyObject *module) {
    if (PyType_Ready(&chunk_type) < 0) return -1;
    Py_INCREF(&chunk_type);
    if (PyModule_AddObject(module, "LinearLossChunk", (PyObject *)&chunk_type) < 0) {
        Py_DECREF(&chunk_type);
        return -1;
    }
    return 0;
}
