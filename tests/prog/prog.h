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

#include "tapegrad.h"

#define TGP_NREG 24        /* registers r0..r23 */
#define TGP_MAX_INSNS 64   /* longest program the byte decoder makes */
#define TGP_MAX_SHAPE 9    /* one more than TG_MAX_DIMS, to test the limit */
#define TGP_MAX_VALS 64    /* literal values of one from_data */
#define TGP_MAX_SCOPES 8   /* deepest scope nesting the executor opens */
#define TGP_NI 6           /* integer fields per instruction */
#define TGP_NF 3           /* double fields per instruction */
#define TGP_NONE (-1)      /* no register */

typedef enum tgp_opcode {
    /* creation: dst = op(dtype, shape, ...) */
    TGP_ZEROS, TGP_ONES, TGP_FULL, TGP_RANDN, TGP_RAND, TGP_ARANGE, TGP_FROM_DATA,
    /* autograd state */
    TGP_REQUIRES_GRAD, TGP_GRAD_MODE, TGP_BACKWARD, TGP_GRAD, TGP_ZERO_GRAD, TGP_DETACH,
    /* views and copies */
    TGP_SLICE, TGP_VIEW, TGP_RESHAPE, TGP_TRANSPOSE, TGP_EXPAND, TGP_CONTIGUOUS, TGP_CLONE,
    TGP_TO_DTYPE,
    /* binary, broadcasting */
    TGP_ADD, TGP_SUB, TGP_MUL, TGP_DIV, TGP_MAXIMUM, TGP_MINIMUM, TGP_WHERE,
    /* unary */
    TGP_NEG, TGP_EXP, TGP_LOG, TGP_SCALE, TGP_ADD_SCALAR, TGP_CLAMP,
    /* reductions */
    TGP_SUM, TGP_MEAN, TGP_SUM_DIM, TGP_MEAN_DIM,
    /* matmul, softmax family, gather, the log-prob op */
    TGP_MATMUL, TGP_SOFTMAX, TGP_LOG_SOFTMAX, TGP_GATHER, TGP_LOGPROB,
    /* in-place */
    TGP_ADD_, TGP_SUB_, TGP_MUL_, TGP_SCALE_, TGP_COPY_, TGP_FILL_,
    /* custom functions (defined in prog.c) */
    TGP_SQUARE, TGP_CEXP, TGP_MULSUB,
    /* ownership, scopes, memory tools (no PyTorch counterpart) */
    TGP_SCOPE_BEGIN, TGP_SCOPE_END, TGP_SCOPE_KEEP, TGP_RELEASE, TGP_LEAK_SCAN,
    TGP_STEP_MARK, TGP_FAULT, TGP_PRINT, TGP_DOT,
    /* the rest of the unary vocabulary (appended: encoded programs keep their meaning) */
    TGP_RSQRT, TGP_ABS, TGP_SIGN, TGP_SQUARE_OP, TGP_POW_SCALAR, TGP_LOG1P, TGP_EXPM1,
    TGP_SIGMOID, TGP_LOGSIGMOID, TGP_SOFTPLUS, TGP_TANH, TGP_RELU, TGP_GELU, TGP_SILU,
    TGP_RECIPROCAL, TGP_FLOOR, TGP_CEIL, TGP_ROUND, TGP_POW,
    /* shape ops and joining (permute's dims are its shape field) */
    TGP_PERMUTE, TGP_NARROW, TGP_SQUEEZE, TGP_UNSQUEEZE, TGP_FLATTEN, TGP_CAT, TGP_STACK,
    /* comparisons and logic (bool results), i64 division (cmp_scalar: which = 0..5 for
     * eq, ne, lt, le, gt, ge) */
    TGP_EQ, TGP_NE, TGP_LT, TGP_LE, TGP_GT, TGP_GE, TGP_CMP_SCALAR, TGP_LOGICAL_AND,
    TGP_LOGICAL_OR, TGP_LOGICAL_XOR, TGP_LOGICAL_NOT, TGP_ISNAN, TGP_ISINF, TGP_ISFINITE,
    TGP_REMAINDER, TGP_FLOOR_DIVIDE,
    /* reductions along a dim, scans, indexing (flip's dims are its shape field) */
    TGP_AMAX_DIM, TGP_AMIN_DIM, TGP_LOGSUMEXP_DIM, TGP_PROD_DIM, TGP_ANY_DIM, TGP_ARGMAX_DIM,
    TGP_CUMSUM, TGP_CUMPROD, TGP_VAR_DIM, TGP_STD_DIM, TGP_NORM_DIM, TGP_FLIP,
    TGP_INDEX_SELECT,
    TGP_NOPS
} tgp_opcode;

/* One instruction. Which fields an op reads is given by its descriptor
 * (tgp_op_desc); the others are ignored and printed nowhere. */
typedef struct tgp_insn {
    int op;                        /* tgp_opcode */
    int dst[2];                    /* destination registers or TGP_NONE */
    int src[3];                    /* source registers or TGP_NONE */
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
    const char *keys[TGP_NI + TGP_NF]; /* key names, NULL-terminated */
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
