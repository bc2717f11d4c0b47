/* tests/prog/prog.h - op programs: a small instruction set over a register file
 * of tensors, an executor that runs them through tapegrad's public API and
 * checks every failure contract it can, and two front-ends (a byte decoder for
 * fuzzing, a readable text format with parser and printer).
 *
 * Contract of the module:
 *  - Built on the public API only (<tapegrad.h>). Used by the libFuzzer
 *    harness tests/fuzz/fuzz_ops.c and by the differential driver
 *    tests/diff/tg_diff_run.c; docs/testing.md describes the text format.
 *  - A program is a list of instructions; each names an op, up to two
 *    destination registers, up to three source registers, and op-specific
 *    fields (dtype, shape, integers, doubles, literal values). Registers are
 *    r0..r23 and start empty (NULL); an empty source register passes NULL to
 *    the library, which must then fail cleanly.
 *  - Any byte string decodes to a valid program (bounded: at most
 *    TGP_MAX_INSNS instructions, small shapes), so one input runs in
 *    milliseconds. Every program prints as text and parses back to the same
 *    instructions.
 *  - The executor never aborts: it records, per instruction, the status the
 *    library returned, and a list of contract violations (see tgp_run). At
 *    the end it releases every register, closes every scope it opened and
 *    checks that no tensor, storage or graph node created by the program is
 *    still alive and no byte is still counted.
 */
#ifndef TG_TESTS_PROG_H
#define TG_TESTS_PROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "registry.h"
#include "tapegrad.h"

#define TGP_NREG 24        /* registers r0..r23 */
#define TGP_MAX_INSNS 64   /* longest program the byte decoder makes */
#define TGP_MAX_SHAPE TGR_MAX_SHAPE /* one more than TG_MAX_DIMS, to test the limit */
#define TGP_MAX_VALS TGR_MAX_VALS   /* literal values of one from_data */
#define TGP_MAX_SCOPES 8   /* deepest scope nesting the executor opens */
#define TGP_NI TGR_NI      /* integer fields per instruction */
#define TGP_NF TGR_NF      /* double fields per instruction */
#define TGP_NONE (-1)      /* no register */

/* The instructions that are not ops: autograd state, custom functions,
 * ownership, scopes and the memory tools. Every op is an instruction too: the
 * registry's rows (tests/registry), opcode TGP_NCONTROL + the row's index,
 * named as the row (tgp_op_by_name("sum_dim")), its arguments the row's. */
typedef enum tgp_opcode {
    /* autograd state */
    TGP_REQUIRES_GRAD, TGP_GRAD_MODE, TGP_BACKWARD, TGP_GRAD, TGP_ZERO_GRAD,
    /* custom functions (defined in prog_ops.c) */
    TGP_SQUARE, TGP_CEXP, TGP_MULSUB,
    /* ownership, scopes, memory tools (no PyTorch counterpart) */
    TGP_SCOPE_BEGIN, TGP_SCOPE_END, TGP_SCOPE_KEEP, TGP_RELEASE, TGP_LEAK_SCAN,
    TGP_STEP_MARK, TGP_FAULT, TGP_PRINT, TGP_DOT,
    TGP_NCONTROL
} tgp_opcode;

/* The number of opcodes: the control instructions and the registry's rows. */
int tgp_nops(void);

/* The registry row of opcode op, or NULL for a control instruction. */
const tgr_op *tgp_row(int op);

/* One instruction. Which fields an op reads is given by its descriptor
 * (tgp_op_desc); the others are ignored and printed nowhere. */
typedef struct tgp_insn {
    int op;                        /* a tgp_opcode, or TGP_NCONTROL + a registry row */
    int dst[TGR_MAX_OUT];          /* destination registers or TGP_NONE */
    int src[TGR_MAX_IN];           /* source registers or TGP_NONE */
    int dtype;                     /* tg_dtype, for creation and to_dtype */
    int ndim;                      /* shape length (0..TGP_MAX_SHAPE) */
    int64_t shape[TGP_MAX_SHAPE];
    int64_t iv[TGP_NI];            /* integer fields, see the descriptor's keys */
    double fv[TGP_NF];             /* double fields */
    int nvals;                     /* literal values (from_data) */
    double vals[TGP_MAX_VALS];
    bool keep_err;                 /* do not clear the thread's error first */
} tgp_insn;

typedef struct tgp_prog {
    tgp_insn *insns;
    int n, cap;
} tgp_prog;

/* What an op reads: the text form is
 *   [rD[,rE] =] name [rA [rB [rC]]] [dtype] [shape] [key=value ...]
 * with `_` for an empty optional source register. */
typedef struct tgp_op_desc {
    const char *name;
    int ndst;             /* destination registers */
    int nsrc;             /* source registers */
    int nsrc_required;    /* the first nsrc_required must be tensors (else TG_ERR_NULL) */
    bool has_dtype, has_shape, has_vals;
    bool c_only;          /* no PyTorch counterpart: memory tools, scopes */
    const char *keys[TGP_NI + TGP_NF + 1]; /* key names, NULL-terminated */
    int slots[TGP_NI + TGP_NF];        /* 0..5: iv[k]; 10..12: fv[k - 10] */
} tgp_op_desc;

/* The descriptor of op, or NULL when op is out of range. */
const tgp_op_desc *tgp_op_desc_get(int op);

/* The opcode named name, or -1. */
int tgp_op_by_name(const char *name);

/* ---- programs ---------------------------------------------------------------- */

/* Appends a copy of in to p (growing it). Returns false on allocation failure. */
bool tgp_push(tgp_prog *p, const tgp_insn *in);

/* Frees p's instructions and empties it (p itself is the caller's). */
void tgp_free(tgp_prog *p);

/* An instruction with every register TGP_NONE, dtype f64, no shape, zero
 * fields, for op. */
tgp_insn tgp_insn_init(int op);

/* Decodes any byte string into a program (replacing p's contents): at most
 * TGP_MAX_INSNS instructions, shapes of at most 5 dims of size at most 7.
 * Never fails except on allocation failure (returns false). */
bool tgp_decode_bytes(const uint8_t *data, size_t size, tgp_prog *p);

/* Encodes p as bytes that tgp_decode_bytes turns back into p (up to the
 * decoder's bounds: registers, sizes and values it cannot express change),
 * for seed corpora. Returns a malloc'd buffer (*size bytes) or NULL. */
uint8_t *tgp_encode_bytes(const tgp_prog *p, size_t *size);

/* Prints one instruction / a whole program in the text form (one line each). */
void tgp_print_insn(FILE *f, const tgp_insn *in);
void tgp_print(FILE *f, const tgp_prog *p);

/* Parses one line of the text form. Blank lines and lines starting with '#'
 * give 0 (nothing parsed); a parsed instruction gives 1; an error gives -1
 * with a message (at most errcap bytes) in err. */
int tgp_parse_line(const char *line, tgp_insn *out, char *err, size_t errcap);

/* Parses text (many lines) into p (appending). Stops at a line "---" or at
 * the end; *consumed (may be NULL) receives the bytes read, including that
 * line. Returns false with a message "line N: ..." in err on a parse error. */
bool tgp_parse(const char *text, tgp_prog *p, size_t *consumed, char *err, size_t errcap);

/* ---- the executor ------------------------------------------------------------- */

typedef struct tgp_exec tgp_exec;

/* Called after each instruction (i, its status) with the executor, whose
 * registers can be read with tgp_reg; and once at the end (i == -1) before
 * the registers are released. */
typedef void (*tgp_hook)(void *user, tgp_exec *e, int i, const tgp_insn *in, tg_status st);

typedef struct tgp_result {
    int n;                 /* instructions run */
    tg_status *status;     /* n statuses (TG_OK for a skipped instruction) */
    int nviol;             /* contract violations found */
    char viol[16][320];    /* the first 16, "insn 3 (add_): ..." */
    bool leaked;           /* something was alive at the end (one of the violations) */
} tgp_result;

/* Runs p and checks the library's contracts on every instruction:
 *  - a NULL tensor result (or a status other than TG_OK) comes with
 *    tg_last_status() != TG_OK, a non-empty tg_last_error() and a valid
 *    status name, and a success leaves the (cleared) error untouched;
 *  - a missing required input gives TG_ERR_NULL, or keeps the first error
 *    when the instruction has keep_err;
 *  - a failed call leaves its outputs NULL, its inputs' versions and values
 *    unchanged; a failed in-place op changes neither the data nor the version
 *    of its target; a successful one moves the version by exactly 1; no
 *    other op moves any register's version;
 *  - an op result requires grad exactly when grad mode is on and a
 *    differentiable input requires grad;
 *  - a failed backward leaves every register's .grad as it was;
 *  - grad mode and scope depth are what the program set; tg_release and
 *    tg_scope_keep/tg_scope_end succeed or fail (TG_ERR_STATE) as the
 *    ownership rules say; a leak scan finds no unreachable object;
 *  - under injected allocation failures a failing call reports TG_ERR_NOMEM;
 *  - at the end nothing the program created is alive.
 * hook may be NULL. res->status is malloc'd: free it with tgp_result_free.
 * Returns res->nviol == 0. Runs with the thread's grad mode on and no scope
 * open at start, and leaves it so. */
bool tgp_run(const tgp_prog *p, tgp_hook hook, void *user, tgp_result *res);

/* Frees res->status. */
void tgp_result_free(tgp_result *res);

/* With max_elems > 0, tgp_run skips (status TG_OK, nothing run, nothing
 * checked) every op instruction with an input of more elements, and every
 * tg_repeat whose result would have more: ops that multiply sizes (tg_repeat
 * by up to 5 per dim) would otherwise make a few instructions slow and big
 * (the fuzzer's inputs must each run in milliseconds).
 * 0 (the default) runs everything. Process-wide. */
void tgp_set_input_budget(int64_t max_elems);

/* The tensor in register r (borrowed; NULL when empty or r out of range). */
tg_tensor *tgp_reg(const tgp_exec *e, int r);

/* The number of the registers that were emptied by instruction i of the last
 * hook call (release, scope_end): their indices are written to out[0..]. */
int tgp_cleared(const tgp_exec *e, int *out);

/* t's accumulated gradient, borrowed (valid while t keeps it), or NULL. Takes
 * no reference the caller must give back, inside a scope or not. */
tg_tensor *tgp_grad_peek(const tg_tensor *t);

/* Copies t's elements (any dtype) as doubles into a new malloc'd array;
 * *n receives the count. NULL (n = 0) for a NULL t or a failed copy. */
double *tgp_values(const tg_tensor *t, int64_t *n);

#endif
