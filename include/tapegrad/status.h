/* tapegrad/status.h - status codes, the per-thread last error, call sites.
 *
 * Every tapegrad function reports failure either by returning a tg_status other
 * than TG_OK or by returning NULL. In both cases the status and a human-readable
 * message are stored per thread and can be read with tg_last_status() and
 * tg_last_error(), like errno / sqlite3_errmsg().
 *
 * NULL propagation: a function given a NULL tensor returns NULL (or an error
 * status) and, when an error is already recorded for this thread, keeps that
 * first error instead of overwriting it. A loss written as nested calls can
 * therefore be checked once, at the end.
 */
#ifndef TAPEGRAD_STATUS_H
#define TAPEGRAD_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_status {
    TG_OK = 0,
    TG_ERR_NULL,       /* a required argument was NULL */
    TG_ERR_SHAPE,      /* shapes do not match / cannot broadcast / bad size */
    TG_ERR_DTYPE,      /* dtype not supported by the call, or operands differ */
    TG_ERR_DIM,        /* dimension index out of range */
    TG_ERR_VALUE,      /* an argument value is invalid (negative size, step <= 0, ...) */
    TG_ERR_LAYOUT,     /* memory layout not supported (e.g. view of non-contiguous data) */
    TG_ERR_NOMEM,      /* an allocation failed (or was made to fail) */
    TG_ERR_INPLACE,    /* a tensor saved for backward was modified in place */
    TG_ERR_AUTOGRAD,   /* autograd misuse: in-place on a leaf requiring grad, no grad_fn, ... */
    TG_ERR_FREED,      /* backward through a graph whose saved tensors were already freed */
    TG_ERR_STATE,      /* call made in the wrong state (unbalanced scope, ...) */
    TG_ERR_GRADCHECK,  /* tg_gradcheck found analytical != numerical gradients */
    TG_ERR_DEVICE,     /* device not available / operands on different devices */
    TG_ERR_IO,         /* file input/output failed or a file is malformed */
    TG_ERR_CUDA,       /* a CUDA or cuBLAS call failed */
    TG_ERR_LEAK,       /* tg_leak_check found graphs kept alive or cycles */
    TG_ERR_INTERNAL,   /* a bug in tapegrad; please report it */
    TG_ERR_COMM,       /* a collective failed, or another rank failed the call */
    TG_ERR_READONLY    /* a write into memory marked read-only (tg_mark_read_only) */
} tg_status;

/* A call site, recorded by every tensor-creating call (through the macros) so
 * that error messages and reports can say where a tensor, a graph node or an
 * in-place modification came from. */
typedef struct tg_site {
    const char *file;
    int line;
} tg_site;

/* The caller's site, for the *_at functions. */
#define TG_SITE ((tg_site){__FILE__, __LINE__})

/* Returns the status of the last failed call on this thread (TG_OK if none since
 * the last tg_clear_error()). Successful calls do not reset it. */
tg_status tg_last_status(void);

/* Returns the message of the last failed call on this thread ("" if none). The
 * string is owned by the library and valid until the next failing call on this
 * thread or tg_clear_error(). A message longer than 4095 bytes is cut, never
 * inside a UTF-8 character, and ends with "...". */
const char *tg_last_error(void);

/* Resets this thread's status to TG_OK and its message to "". */
void tg_clear_error(void);

/* Records st and a printf-style message as this thread's last error and
 * returns st, for code built on tapegrad (file readers, custom ops) that
 * wants to report errors the same way. */
tg_status tg_set_error(tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Returns a static, stable name for a status ("TG_ERR_SHAPE"), or
 * "TG_ERR_UNKNOWN" for a value outside the enum. */
const char *tg_status_name(tg_status s);

#ifdef __cplusplus
}
#endif
#endif
