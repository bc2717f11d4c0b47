/* tests/prog/prog_internal.h - what the files of tests/prog share and nothing
 * else uses. */
#ifndef TG_TESTS_PROG_INTERNAL_H
#define TG_TESTS_PROG_INTERNAL_H

#include "prog.h"

/* The custom function of op TGP_SQUARE, TGP_CEXP or TGP_MULSUB (NULL for any
 * other op); static, outlives every graph. */
const tg_function *tgp__custom_fn(int op);

/* The `user` pointer for a custom function's fail field (0 none, 1 forward
 * refuses, 2 backward refuses; anything else counts as 0). Static. */
const void *tgp__fail_mode(int64_t fail);

#endif
