/* python/src/site.c - the caller's Python file and line for the library's
 * call sites (tg_site): messages, leak reports and in-place histories name
 * the user's line, never the package's own (nor PyTorch's, for the adapters).
 *
 * The library keeps the file name's pointer for the life of its graphs, so
 * every name is encoded once (the file system's encoding with
 * surrogateescape, as os.fsencode: a path that is not UTF-8 keeps its bytes)
 * and kept in a dict for the life of the process. A name with a NUL byte
 * (never a real path) is kept as "<python>". */
#include "tgpy.h"

#include <string.h>

static PyObject *g_names;        /* str -> bytes kept for the library */
static PyObject *g_skip;         /* a list of directories + "/" whose frames are skipped: the
                                    package's own, and those the package adds (PyTorch's, for
                                    the adapters: torch.autograd.Function.apply calls them) */

/* Code objects recently seen: whether their file is the package's, and the
 * kept name. A small direct-mapped cache by pointer; a code object freed and
 * another made at its address is told apart by its filename object. */
typedef struct {
    PyCodeObject *code;
    PyObject *filename;   /* a reference: while cached it cannot be freed and another
                             string made at its address */
    const char *file;     /* NULL: a package file */
} code_entry;
#define CACHE_SIZE 64
static code_entry g_cache[CACHE_SIZE];

int tgpy_site_skip(PyObject *dir) {
    if (!PyUnicode_Check(dir)) {
        PyErr_SetString(PyExc_TypeError, "a directory (str) whose frames calls sites skip");
        return -1;
    }
    PyObject *with_sep = PyUnicode_FromFormat("%U/", dir);
    if (!with_sep || (!g_skip && !(g_skip = PyList_New(0))) ||
        PyList_Append(g_skip, with_sep) < 0) {
        Py_XDECREF(with_sep);
        return -1;
    }
    Py_DECREF(with_sep);
    for (int i = 0; i < CACHE_SIZE; i++) {
        g_cache[i].code = NULL;
        Py_CLEAR(g_cache[i].filename);
    }
    return 0;
}

/* The kept bytes of filename (a str), or NULL (no error set) if it cannot be. */
static const char *kept_name(PyObject *filename) {
    if (!g_names && !(g_names = PyDict_New())) goto fail;
    PyObject *b = PyDict_GetItemWithError(g_names, filename);
    if (b) return PyBytes_AS_STRING(b);
    if (PyErr_Occurred()) goto fail;
    b = PyUnicode_EncodeFSDefault(filename);
    if (!b) goto fail;
    if (strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b) ||
        PyDict_SetItem(g_names, filename, b) < 0) {
        Py_DECREF(b);
        goto fail;
    }
    Py_DECREF(b);  /* the dict holds it for the life of the process */
    return PyBytes_AS_STRING(b);
fail:
    PyErr_Clear();
    return NULL;
}

static bool in_package(PyObject *filename) {
    Py_ssize_t n = g_skip ? PyList_GET_SIZE(g_skip) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = PyUnicode_Tailmatch(filename, PyList_GET_ITEM(g_skip, i), 0, PY_SSIZE_T_MAX, -1);
        if (r < 0) PyErr_Clear();
        if (r > 0) return true;
    }
    return false;
}

/* The entry of code, filled on a miss. */
static code_entry *entry_of(PyCodeObject *code) {
    static code_entry odd = {NULL, NULL, "<python>"};
    PyObject *filename = code->co_filename;
    /* an exact str only: a subclass's __hash__ or __eq__ could run any code here,
     * after the call's arguments were converted */
    if (!PyUnicode_CheckExact(filename)) return &odd;
    code_entry *e = &g_cache[((uintptr_t)code >> 4) % CACHE_SIZE];
    if (e->code == code && e->filename == filename) return e;
    e->code = code;
    Py_INCREF(filename);
    Py_XSETREF(e->filename, filename);
    if (in_package(filename)) {
        e->file = NULL;
    } else {
        const char *kept = kept_name(filename);
        e->file = kept ? kept : "<python>";
    }
    return e;
}

tg_site tgpy_site(void) {
    tg_site s = {"<python>", 0};
    PyFrameObject *f = PyEval_GetFrame();  /* borrowed */
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        const char *file = entry_of(code)->file;
        Py_DECREF(code);
        if (file) {
            s.file = file;
            s.line = PyFrame_GetLineNumber(f);
            Py_DECREF(f);
            return s;
        }
        PyFrameObject *back = PyFrame_GetBack(f);  /* new reference or NULL */
        Py_DECREF(f);
        f = back;
    }
    return s;
}
