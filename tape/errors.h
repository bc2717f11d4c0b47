/* tape/errors.h - the thread's error, composite callers' names and bounded
 * text formatting (tape/error.c). Internal (not installed); tape/core.h
 * gathers every tape/ header for the layers above. */
#ifndef TG_TAPE_ERRORS_H
#define TG_TAPE_ERRORS_H

#include <stdarg.h>

#include "defs.h"

/* ---- errors (tape/error.c) ----------------------------------------------- */

/* The longest message kept (with its '\0'); longer ones are cut, ending "...". */
#define TG__MSG_LEN 4096
/* Records st and the formatted message for this thread (overwriting any
 * previous error) and returns st. */
tg_status tg__set_error(tg_status st, const char *fmt, ...) TG__PRINTF(2, 3);
tg_status tg__set_errorv(tg_status st, const char *fmt, va_list ap);
/* A public op composed of others (the losses, tg_stack, ...) brackets its
 * work with prev = tg__caller_enter("tg_kl_div") ... tg__caller_leave(prev):
 * meanwhile an error set by an inner op ("tg_sub: shapes ... cannot be
 * broadcast") is recorded in the caller's name ("tg_kl_div: shapes ...
 * cannot be broadcast (in tg_sub)"), so the user always reads the op they
 * called. Nested composites keep the outermost name. */
const char *tg__caller_enter(const char *who);
void tg__caller_leave(const char *prev);
/* No caller until tg__caller_leave(the value returned): errors set meanwhile
 * are the inner op's own, for a caller that rewrites them (tg__storage_new). */
const char *tg__caller_suspend(void);
/* Same, returning NULL: `return tg__fail(TG_ERR_SHAPE, "tg_add: ...");` */
void *tg__fail(tg_status st, const char *fmt, ...) TG__PRINTF(2, 3);
/* NULL propagation: if p is NULL, records TG_ERR_NULL "fn: argument 'arg' is
 * NULL" unless an error is already pending on this thread (the first error is
 * kept), and returns true. */
bool tg__null_arg(const void *p, const char *fn, const char *arg);
/* Formats a shape as "[2, 3]" into buf (always NUL-terminated). */
const char *tg__shape_str(char *buf, size_t n, int ndim, const int64_t *shape);
/* How every message names a tensor, as the leak reports do: "tensor 'loss'"
 * when it has a name, else "tensor #12" (its id). Writes buf (n bytes,
 * TG__LABEL_LEN is enough) and returns it. */
#define TG__LABEL_LEN (TG__NAME_LEN + 32)
const char *tg__label(char *buf, size_t n, const char *name, uint64_t id);
#define TG__LABEL(t) tg__label((char[TG__LABEL_LEN]){0}, TG__LABEL_LEN, (t)->name, (t)->id)
/* Appends the formatted text to the text of length len in buf (cap bytes) and
 * returns the length to pass to the next call: never more than cap - 1, and
 * buf stays NUL-terminated (nothing is written when cap is 0; it returns 0).
 * Text that does not fit is cut, never inside a UTF-8 character, and ends
 * with "..." (as many dots as fit when cap < 4); the text is then full: the
 * return value is cap - 1 (buf may be up to 3 bytes shorter, where the cut
 * went back to the start of a character) and later calls add nothing. The
 * way to build a text piecewise: `k = tg__appendf(buf, sizeof buf, k, ...)`,
 * never `k += snprintf(...)`, whose sum can pass the end of buf. A len past
 * cap - 1 counts as full. */
size_t tg__appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) TG__PRINTF(4, 5);
size_t tg__vappendf(char *buf, size_t cap, size_t len, const char *fmt, va_list ap);

#endif
