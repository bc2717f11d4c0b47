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

/* Register and scope bookkeeping (prog.c). */
void tgp__set(tgp_exec *e, int r, tg_tensor *t);
void tgp__drop(tgp_exec *e, int r);
bool tgp__scope_owns(const tgp_exec *e, const tg_tensor *t);
tg_status tgp__scope_begin(tgp_exec *e);
tg_status tgp__scope_end(tgp_exec *e, bool bad);
tg_status tgp__scope_keep(tgp_exec *e, int r);
tg_status tgp__release(tgp_exec *e, int r);

#endif
