/* python/src/reports.c - the library's reports as Python values: the leak
 * checker's scan (figures, roots with their paths, text and JSON), the graph
 * as DOT, the memory timeline, step marks. Text the library writes to a
 * FILE * is caught in memory (open_memstream); bytes that are not UTF-8 (a
 * name set from C) come back as \xNN escapes, never as an exception. Paths
 * are os.fsencode'd (a path with a NUL is a ValueError, never cut short). */
#include "tgpy.h"

#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

static PyObject *text_of(const char *s, size_t n) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "backslashreplace");
}

typedef tg_status (*write_fn)(FILE *f, const void *what);

/* What write(f, what) writes, as a str; NULL with the error. */
static PyObject *written(write_fn write, const void *what) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return PyErr_NoMemory();
    tg_status st;
    TGPY_NOGIL(st = write(f, what));
    int closed = fclose(f);
    PyObject *r = NULL;
    if (st != TG_OK) tgpy_raise_status(st);
    else if (closed != 0) PyErr_NoMemory();
    else r = text_of(buf, n);
    free(buf);
    return r;
}

static tg_status print_report(FILE *f, const void *r) { return tg_leak_report_print(f, r); }
static tg_status json_report(FILE *f, const void *r) { return tg_leak_report_json(f, r); }

static PyObject *root_entry(const tg_leak_root *e) {
    return Py_BuildValue(
        "{sNsNsNsisKsNsLsLsKsKsKsN}", "name", text_of(e->name, strnlen(e->name, sizeof e->name)),
        "shape", text_of(e->shape, strnlen(e->shape, sizeof e->shape)), "file",
        text_of(e->file ? e->file : "", e->file ? strlen(e->file) : 0), "line", e->line, "step",
        (unsigned long long)e->step, "step_label",
        text_of(e->step_label, strnlen(e->step_label, sizeof e->step_label)), "nodes",
        (long long)e->nodes, "nodes_with_saved", (long long)e->nodes_with_saved, "bytes",
        (unsigned long long)e->bytes, "shared_bytes", (unsigned long long)e->shared_bytes,
        "saved_bytes", (unsigned long long)e->saved_bytes, "path",
        text_of(e->path, strnlen(e->path, sizeof e->path)));
}

/* leak_scan() -> dict: the figures, "entries" (one dict per root), "text", "json". */
static PyObject *f_leak_scan(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tgpy_drain_owners();
    tg_leak_report *r;  /* (freed below with the GIL released too) */
    TGPY_NOGIL(r = tg_leak_scan());
    if (!r) return tgpy_raise_last();
    PyObject *entries = PyList_New(0), *text = NULL, *json = NULL, *out = NULL;
    int64_t n = tg_leak_report_nroots(r);
    for (int64_t i = 0; entries && i < n; i++) {
        PyObject *e = root_entry(tg_leak_report_root(r, i));
        if (!e || PyList_Append(entries, e) < 0) Py_CLEAR(entries);
        Py_XDECREF(e);
    }
    if (entries && (text = written(print_report, r)) && (json = written(json_report, r))) {
        int steps = 0;
        double growth = tg_leak_report_growth(r, &steps);
        out = Py_BuildValue("{sLsLsKsLsdsisOsOsO}", "roots", (long long)n, "outlived_nodes",
                            (long long)tg_leak_report_outlived_nodes(r), "kept_bytes",
                            (unsigned long long)tg_leak_report_kept_bytes(r), "in_cycles",
                            (long long)tg_leak_report_unreachable(r), "growth", growth,
                            "growth_steps", steps, "entries", entries, "text", text, "json",
                            json);
    }
    Py_XDECREF(entries);
    Py_XDECREF(text);
    Py_XDECREF(json);
    TGPY_NOGIL(tg_leak_report_free(r));
    return out;
}

/* ---- the graph as DOT ------------------------------------------------------------------ */

typedef struct {
    tg_tensor *const *roots;
    int n;
    const char *const *names;
} dot_args;

static tg_status write_dot(FILE *f, const void *what) {
    const dot_args *a = what;
    return tg_graph_dot(f, a->roots, a->n, a->names);
}

/* The UTF-8 names (NULL for None) of names_o, a sequence as long as n, in a
 * PyMem array; the strs are borrowed from *seq (a new reference). */
static const char **names_of(PyObject *names_o, Py_ssize_t n, PyObject **seq) {
    *seq = PySequence_Tuple(names_o);  /* a snapshot: the strs stay alive with it */
    if (!*seq) return NULL;
    if (PyTuple_GET_SIZE(*seq) != n) {
        PyErr_Format(PyExc_ValueError, "tapegrad.graph: %zd names for %zd tensors (one name per "
                     "tensor, None for none)", PyTuple_GET_SIZE(*seq), n);
        return NULL;
    }
    const char **names = PyMem_Calloc((size_t)n + 1, sizeof *names);
    if (!names) return (const char **)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(*seq, i);
        Py_ssize_t len = 0;
        if (s == Py_None) continue;
        if (!PyUnicode_Check(s) || !(names[i] = PyUnicode_AsUTF8AndSize(s, &len)) ||
            (size_t)len != strlen(names[i])) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "tapegrad.graph: name %zd must be a str without "
                             "NUL, or None", i);
            PyMem_Free(names);
            return NULL;
        }
    }
    return names;
}

/* graph_dot(roots, names=None): roots a sequence of Tensors, names None or a
 * sequence of str / None as long as roots. */
static PyObject *f_graph_dot(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *roots_o, *names_o = Py_None, *names_seq = NULL, *r = NULL;
    if (!PyArg_ParseTuple(args, "O|O", &roots_o, &names_o)) return NULL;
    PyObject *seq = PySequence_Tuple(roots_o);  /* a snapshot that keeps the Tensors alive */
    if (!seq) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    tg_tensor **roots = PyMem_Calloc((size_t)n + 1, sizeof *roots);
    const char **names = NULL;
    if (!roots) {
        PyErr_NoMemory();
        goto done;
    }
    if (n < 1 || n > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "tapegrad.graph: give at least one tensor");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(seq, i);
        if (!tgpy_is_tensor(item)) {
            PyErr_Format(PyExc_TypeError, "tapegrad.graph: root %zd is a %.100s, not a Tensor",
                         i, Py_TYPE(item)->tp_name);
            goto done;
        }
        roots[i] = tgpy_handle(item);  /* alive: seq holds the Tensors */
    }
    if (names_o != Py_None && !(names = names_of(names_o, n, &names_seq))) goto done;
    dot_args a = {roots, (int)n, names};
    r = written(write_dot, &a);
done:
    PyMem_Free(roots);
    PyMem_Free(names);
    Py_XDECREF(names_seq);
    Py_DECREF(seq);
    return r;
}

/* ---- steps and the timeline --------------------------------------------------------------- */

static PyObject *f_step_mark(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    const char *label = NULL;
    if (nargs > 1 || (nargs == 1 && args[0] != Py_None && !PyUnicode_Check(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "tapegrad.step_mark(label: str | None = None)");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        Py_ssize_t len;
        if (!(label = PyUnicode_AsUTF8AndSize(args[0], &len))) return NULL;
        if ((size_t)len != strlen(label)) {
            PyErr_SetString(PyExc_ValueError, "tapegrad.step_mark: embedded null character");
            return NULL;
        }
    }
    tgpy_drain_owners();
    uint64_t step;
    TGPY_NOGIL(step = tg_step_mark(label));
    return PyLong_FromUnsignedLongLong(step);
}

static PyObject *f_timeline_start(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tg_status st;
    TGPY_NOGIL(tg_timeline_clear(); st = tg_timeline_start());
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *f_timeline_stop(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tgpy_drain_owners();
    tg_status st;
    TGPY_NOGIL(st = tg_timeline_stop());
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

/* timeline_write(path, title): the SVG when title is a str, the trace when None. */
static PyObject *f_timeline_write(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *path = NULL, *title_o = Py_None;
    if (!PyArg_ParseTuple(args, "O&|O", PyUnicode_FSConverter, &path, &title_o)) return NULL;
    const char *title = NULL;
    Py_ssize_t len;
    if (title_o != Py_None &&
        (!PyUnicode_Check(title_o) || !(title = PyUnicode_AsUTF8AndSize(title_o, &len)) ||
         (size_t)len != strlen(title))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "timeline: the title must be a str without NUL");
        Py_DECREF(path);
        return NULL;
    }
    const char *p = PyBytes_AS_STRING(path);
    tg_status st;
    TGPY_NOGIL(st = title ? tg_timeline_write_svg(p, title) : tg_timeline_write_trace(p));
    Py_DECREF(path);
    if (tgpy_check(st) < 0) return NULL;
    Py_RETURN_NONE;
}

PyMethodDef tgpy_report_functions[] = {
    {"leak_scan", f_leak_scan, METH_NOARGS, "tg_leak_scan as a dict (figures, entries, text, json)."},
    {"graph_dot", f_graph_dot, METH_VARARGS, "graph_dot(roots, names=None): tg_graph_dot as a str."},
    {"step_mark", (PyCFunction)(void (*)(void))f_step_mark, METH_FASTCALL,
     "step_mark(label=None): tg_step_mark."},
    {"timeline_start", f_timeline_start, METH_NOARGS, "Clears, then tg_timeline_start."},
    {"timeline_stop", f_timeline_stop, METH_NOARGS, "tg_timeline_stop."},
    {"timeline_write", f_timeline_write, METH_VARARGS,
     "timeline_write(path, title=None): the SVG (with a title) or the Chrome trace."},
    {NULL, NULL, 0, NULL}};

int tgpy_reports_ready(PyObject *module) {
    (void)module;
    return 0;
}
