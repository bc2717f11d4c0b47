/* tests/prog/prog_exec.h - the executor's state, shared by prog.c (ownership,
 * scopes, the run) and prog_step.c (one instruction and its checks). */
#ifndef TG_TESTS_PROG_EXEC_H
#define TG_TESTS_PROG_EXEC_H

#include "prog.h"

typedef struct tgp_own {
    tg_tensor **t;
    int n, cap;
} tgp_own;

struct tgp_exec {
    tg_tensor *reg[TGP_NREG];
    int owner[TGP_NREG];                 /* 0: the program; d: scope at depth d */
    tgp_own own[TGP_MAX_SCOPES + 1];     /* [d]: references scope d owns; [0]: extra */
    int tok[TGP_MAX_SCOPES + 1];
    int depth;                           /* scopes open */
    bool grad_on;                        /* the grad mode the program set */
    bool fault_armed, fault_persistent;  /* inject into the next instruction */
    uint64_t fault_n;
    int cleared[TGP_NREG];               /* registers emptied by this instruction */
    int ncleared;
    tgp_result *res;
    int cur;                             /* instruction running, -1 at the end */
    const char *cur_name;
    FILE *devnull;
    int64_t unreachable0; /* objects in cycles before the program (leaked by an earlier one) */
};

typedef struct tgp_exec_base {
    tg_live_counts live;
    tg_mem_stats mem;
} tgp_exec_base;

/* Records a contract violation for the current instruction. */
void tgp__viol(tgp_exec *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Runs one instruction with its checks; returns its status. */
tg_status tgp__step(tgp_exec *e, const tgp_insn *in);

/* ---- register and scope bookkeeping (prog.c) ---- */

/* Puts t (a new reference just returned, NULL allowed) in register r (TGP_NONE:
 * gives it back at once), giving back what r held first. */
void tgp__set(tgp_exec *e, int r, tg_tensor *t);
/* Gives back register r's reference (or leaves it to its scope) and empties r. */
void tgp__drop(tgp_exec *e, int r);
/* True when an open scope owns a reference to t. */
bool tgp__scope_owns(const tgp_exec *e, const tg_tensor *t);
/* tg_scope_begin, checking the token; a no-op at TGP_MAX_SCOPES. Returns the status. */
tg_status tgp__scope_begin(tgp_exec *e);
/* tg_scope_end of the innermost scope (or, when bad or none is open, of a wrong
 * token, which must be refused with nothing released); empties its registers. */
tg_status tgp__scope_end(tgp_exec *e, bool bad);
/* tg_scope_keep of register r, checked against the ownership model. */
tg_status tgp__scope_keep(tgp_exec *e, int r);
/* tg_release of register r: must succeed for a program-owned reference and
 * be refused (TG_ERR_STATE) while an open scope owns the tensor. */
tg_status tgp__release(tgp_exec *e, int r);

#endif
