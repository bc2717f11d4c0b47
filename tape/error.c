/* tape/error.c - the per-thread status and message (tg_last_status/error),
 * NULL propagation, shape formatting, and bounded text building
 * (tg__appendf): every text built piecewise in the library goes through it,
 * so that no sum of snprintf results can run past a buffer. A message longer
 * than TG__MSG_LEN - 1 bytes is cut the same way, ending with "...". */
#include <stdio.h>
#include <string.h>

#include "errors.h"

static _Thread_local tg_status tl_status = TG_OK;
static _Thread_local char tl_msg[TG__MSG_LEN];

tg_status tg_last_status(void) { return tl_status; }
const char *tg_last_error(void) { return tl_msg; }

void tg_clear_error(void) {
    tl_status = TG_OK;
    tl_msg[0] = '\0';
}

const char *tg_status_name(tg_status s) {
    switch (s) {
    case TG_OK: return "TG_OK";
    case TG_ERR_NULL: return "TG_ERR_NULL";
    case TG_ERR_SHAPE: return "TG_ERR_SHAPE";
    case TG_ERR_DTYPE: return "TG_ERR_DTYPE";
    case TG_ERR_DIM: return "TG_ERR_DIM";
    case TG_ERR_VALUE: return "TG_ERR_VALUE";
    case TG_ERR_LAYOUT: return "TG_ERR_LAYOUT";
    case TG_ERR_NOMEM: return "TG_ERR_NOMEM";
    case TG_ERR_INPLACE: return "TG_ERR_INPLACE";
    case TG_ERR_AUTOGRAD: return "TG_ERR_AUTOGRAD";
    case TG_ERR_FREED: return "TG_ERR_FREED";
    case TG_ERR_STATE: return "TG_ERR_STATE";
    case TG_ERR_GRADCHECK: return "TG_ERR_GRADCHECK";
    case TG_ERR_DEVICE: return "TG_ERR_DEVICE";
    case TG_ERR_IO: return "TG_ERR_IO";
    case TG_ERR_CUDA: return "TG_ERR_CUDA";
    case TG_ERR_LEAK: return "TG_ERR_LEAK";
    case TG_ERR_INTERNAL: return "TG_ERR_INTERNAL";
    case TG_ERR_COMM: return "TG_ERR_COMM";
    case TG_ERR_READONLY: return "TG_ERR_READONLY";
    }
    return "TG_ERR_UNKNOWN";
}

/* The public op the user called, while it runs, when it is composed of
 * other ops (tg__caller_enter): their errors are told in its name. */
static _Thread_local const char *tl_caller;

const char *tg__caller_enter(const char *who) {
    const char *prev = tl_caller;
    if (!prev) tl_caller = who;
    return prev;
}

void tg__caller_leave(const char *prev) { tl_caller = prev; }

const char *tg__caller_suspend(void) {
    const char *prev = tl_caller;
    tl_caller = NULL;
    return prev;
}

/* Length of the "tg_name: " prefix msg starts with (the op that set it), or 0. */
static size_t op_prefix(const char *msg) {
    if (strncmp(msg, "tg_", 3) != 0) return 0;
    size_t k = 3;
    while ((msg[k] >= 'a' && msg[k] <= 'z') || (msg[k] >= '0' && msg[k] <= '9') || msg[k] == '_')
        k++;
    return msg[k] == ':' && msg[k + 1] == ' ' ? k : 0;
}

tg_status tg__set_errorv(tg_status st, const char *fmt, va_list ap) {
    /* Format into a scratch buffer first: fmt's arguments may point into tl_msg. */
    char buf[TG__MSG_LEN];
    buf[0] = '\0';
    tg__vappendf(buf, sizeof buf, 0, fmt, ap);
    const size_t k = tl_caller ? op_prefix(buf) : 0;
    if (tl_caller && (k != strlen(tl_caller) || strncmp(buf, tl_caller, k) != 0)) {
        /* an op inside a composite one failed: "tg_kl_div: <what> (in tg_sub)" */
        char inner[TG__MSG_LEN];
        memcpy(inner, buf, sizeof buf);
        size_t n = tg__appendf(buf, sizeof buf, 0, "%s: %s", tl_caller, inner + (k ? k + 2 : 0));
        if (k) tg__appendf(buf, sizeof buf, n, " (in %.*s)", (int)k, inner);
    }
    memcpy(tl_msg, buf, sizeof buf);
    tl_status = st;
    return st;
}

tg_status tg__set_error(tg_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tg__set_errorv(st, fmt, ap);
    va_end(ap);
    return st;
}

tg_status tg_set_error(tg_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tg__set_errorv(st, fmt ? fmt : "", ap);
    va_end(ap);
    return st;
}

void *tg__fail(tg_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tg__set_errorv(st, fmt, ap);
    va_end(ap);
    return NULL;
}

bool tg__null_arg(const void *p, const char *fn, const char *arg) {
    if (p) return false;
    if (tl_status == TG_OK)
        tg__set_error(TG_ERR_NULL, "%s: argument '%s' is NULL", fn, arg);
    return true;
}

const char *tg__shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    if (n == 0) return buf;
    size_t k = tg__appendf(buf, n, 0, "[");
    for (int d = 0; d < ndim; d++)
        k = tg__appendf(buf, n, k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    tg__appendf(buf, n, k, "]");
    return buf;
}

const char *tg__label(char *buf, size_t n, const char *name, uint64_t id) {
    if (n == 0) return buf;
    if (name && name[0]) tg__appendf(buf, n, 0, "tensor '%s'", name);
    else tg__appendf(buf, n, 0, "tensor #%llu", (unsigned long long)id);
    return buf;
}

/* Marks buf (cap >= 1 bytes) as cut: "..." at the end, not inside a UTF-8
 * character. */
static void mark_cut(char *buf, size_t cap) {
    size_t p = cap > 4 ? cap - 4 : 0; /* first byte replaced */
    while (p > 0 && ((unsigned char)buf[p] & 0xC0) == 0x80) p--; /* a continuation byte */
    size_t dots = cap - 1 - p < 3 ? cap - 1 - p : 3;
    memcpy(buf + p, "...", dots);
    buf[p + dots] = '\0';
}

size_t tg__vappendf(char *buf, size_t cap, size_t len, const char *fmt, va_list ap) {
    if (!buf || cap == 0) return 0;
    if (len >= cap - 1) {
        len = cap - 1;
        if (memchr(buf, '\0', len)) return len; /* cut before: it stays as it is */
    }
    int n = vsnprintf(buf + len, cap - len, fmt, ap);
    if (n < 0) { /* an encoding error: nothing appended */
        buf[len] = '\0';
        return len;
    }
    if ((size_t)n < cap - len) return len + (size_t)n;
    mark_cut(buf, cap);
    return cap - 1;
}

size_t tg__appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t k = tg__vappendf(buf, cap, len, fmt, ap);
    va_end(ap);
    return k;
}
