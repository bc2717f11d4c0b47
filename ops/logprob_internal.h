/* ops/logprob_internal.h - shared by the fused (ops/logprob.c) and composite
 * (ops/logprob_composite.c) implementations of tg_logprob_entropy. */
#ifndef TG_OPS_LOGPROB_INTERNAL_H
#define TG_OPS_LOGPROB_INTERNAL_H

#include "ops_internal.h"

/* Validates dtypes, shapes and options (not the target values). */
tg_status tg__lpe_check(const char *who, const tg_tensor *z, const tg_tensor *y,
                        const tg_logprob_opts *o);
/* A contiguous copy (or reference) of y with every non-ignored target checked
 * to be in [0, V); NULL with TG_ERR_VALUE naming the row otherwise. */
tg_tensor *tg__lpe_targets(tg_site s, const char *who, tg_tensor *y, int64_t V, int64_t ignore);
/* The values of a contiguous targets tensor yc on the host: its own data on
 * the CPU, else a copy put in *owned (give it to free()). NULL with the
 * error set. */
const int64_t *tg__lpe_targets_host(const char *who, const tg_tensor *yc, void **owned);
/* For a kernel that rejected row bad->row of z without saying where
 * (bad->col == TG__LPE_COL_UNKNOWN): finds the offending column and value on
 * a host copy of that row and fills them in. TG_OK, or the error of the
 * copy. */
tg_status tg__lpe_locate_bad(const char *who, const tg_tensor *z, tg__lpe_bad *bad,
                             double inv_t);
/* A flat (N) alias of a tensor of N elements (an upstream gradient of the
 * leading shape) when its dims merge, else of a contiguous copy of it. A
 * NULL t gives NULL with *ok true; a failure NULL with *ok false. */
tg_tensor *tg__lpe_flat(tg_site s, tg_tensor *t, int64_t N, bool *ok);
/* The dtype of the outputs for logits z: z's, or f32 for bf16 logits. */
tg_dtype tg__lpe_out_dtype(const tg_tensor *z);
/* The row log-sum-exp of z / T from saved statistics st (N, nstat) f64:
 * M inv_t + ls (0 on ignored rows, whose statistics are 0), a new tensor of
 * tg__lpe_out_dtype(z) and z's leading shape (its shape without the last dim). */
tg_tensor *tg__lpe_lse_of(tg_site s, const char *who, const tg_tensor *z, tg_tensor *st,
                          int nstat, double inv_t);
/* Hands the outputs that were asked for to the caller (scope): lp always,
 * h when entropy is not NULL (else releases it), lse when lse_out is not
 * NULL. Takes over the references. */
tg_status tg__lpe_hand_out(tg_tensor *lp, tg_tensor *h, tg_tensor *lse, tg_tensor **logprob,
                           tg_tensor **entropy, tg_tensor **lse_out);
/* Sets the error for a row of z the forward kernel rejected (looking the
 * column up when the backend did not give it). Returns it. */
tg_status tg__lpe_bad_row_error(const char *who, const tg_tensor *z, const tg__lpe_bad *bad,
                                double inv_t);
/* The composite implementation; outputs are new references (not in scopes). */
tg_status tg__lpe_composite(tg_site s, tg_tensor *z, tg_tensor *y, const tg_logprob_opts *o,
                            tg_tensor **lp, tg_tensor **h);

#endif
