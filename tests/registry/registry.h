/* tests/registry/registry.h - the op registry: one row per public op, the
 * single list every test suite walks (PyTorch's OpInfo in spirit).
 *
 * A row says what the op is (its C function, its PyTorch spelling, its
 * tensor inputs and parameters, which inputs are differentiable, whether it
 * makes a view, writes in place or creates), how to call it (apply: the
 * public API only), which sample inputs exercise it (leading dims 0-3,
 * broadcast partners, transposed and strided inputs, empty dims, special
 * values, the dtypes it takes), and where there is one, a reference in
 * double for its values (the elementwise ops) and PyTorch's gradient at its
 * kinks. Test-only knowledge lives here, never in the library.
 *
 * Who walks it: test_registry.c (values, leading-dim consistency, strided =
 * contiguous, f32 against f64, gradcheck, saved tensors edited in place
 * after the forward, NULL and bad inputs naming the op called, allocation
 * failures), test_backends.c (every row on the CUDA device, real or
 * emulated, against the CPU), the op programs (tests/prog: the instruction
 * set is the registry plus the autograd and memory tools), the fuzzer, and
 * through the manifest (tgr_manifest, printed by tests/registry/
 * tg_registry) the differential suites against PyTorch (tests/diff,
 * tests/registry/torch_ops.py). test_registry.c also fails when a public
 * function of include/ is neither a row nor listed in TGR_NOT_OPS.
 *
 * Adding an op: its code, one row in the rows_*.c file of its family (a
 * sample builder from registry.c usually fits), and its docs/api.md entry.
 */
#ifndef TG_TESTS_REGISTRY_H
#define TG_TESTS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tapegrad.h"

#define TGR_MAX_IN 4     /* tensor inputs of one op */
#define TGR_MAX_OUT 3    /* tensor outputs of one op */
#define TGR_MAX_SHAPE 9  /* the shape field: one more than TG_MAX_DIMS, to test the limit */
#define TGR_NI 6         /* integer fields */
#define TGR_NF 3         /* double fields */
#define TGR_MAX_VALS 64  /* literal values */
#define TGR_MAX_PARAMS 8

/* An op's non-tensor arguments: the fields an op program's instruction
 * carries (tests/prog). Which fields an op reads is its row's `params`. */
typedef struct tgr_args {
    int dtype;                       /* a tg_dtype */
    int ndim;                        /* the shape field's length (0..TGR_MAX_SHAPE) */
    int64_t shape[TGR_MAX_SHAPE];    /* a shape, or a list of dims */
    int64_t iv[TGR_NI];
    double fv[TGR_NF];
    int nvals;
    double vals[TGR_MAX_VALS];
} tgr_args;

/* Parameter kinds (the letter before ':' in a row's params string). */
typedef enum tgr_pkind {
    TGR_P_INT = 'i',   /* an integer: iv[k] */
    TGR_P_BOOL = 'b',  /* an integer read as true (non-zero) or false: iv[k] */
    TGR_P_DIM = 'd',   /* a dim of input 0 (negative from the end): iv[k] */
    TGR_P_REAL = 'r',  /* a double: fv[k] */
    TGR_P_DTYPE = 'T', /* the dtype field */
    TGR_P_SHAPE = 'S', /* the shape field: a shape */
    TGR_P_DIMS = 'D',  /* the shape field: a list of dims of input 0 */
    TGR_P_VALS = 'V'   /* the literal values */
} tgr_pkind;

typedef struct tgr_param {
    char name[16];
    char kind;     /* a tgr_pkind */
    int slot;      /* iv[slot] / fv[slot]; -1 for the dtype, shape and values fields */
} tgr_param;

/* Row flags. */
enum {
    TGR_VIEW = 1 << 0,      /* returns a view of input 0 (shares its storage) */
    TGR_INPLACE = 1 << 1,   /* writes input 0 in place, returns a status, no tensor */
    TGR_CREATE = 1 << 2,    /* makes a tensor from its parameters alone (no input) */
    TGR_RANDOM = 1 << 3,    /* values from tapegrad's generator: not PyTorch's */
    TGR_UNINIT = 1 << 4,    /* values undefined (tg_empty): only shape and dtype compare */
    TGR_NO_DEVICE = 1 << 5, /* not run with its inputs on a CUDA device */
    TGR_MAYBE_SELF = 1 << 6,/* may return input 0 itself (tg_contiguous, tg_to_dtype) */
    TGR_COMPOSITE = 1 << 7, /* made of other public ops (its errors must still name it) */
    TGR_NO_BATCH = 1 << 8,  /* dim 0 of its samples is never a batch dim it maps over */
};

enum { TGR_SAVES_UNSAID = 0, TGR_SAVES_NONE, TGR_SAVES_INPUT, TGR_SAVES_OUTPUT };

/* Sample flags. */
enum {
    TGR_S_SMOOTH = 1 << 0,  /* no ties, kinks or special values: gradcheck, f32 vs f64 */
    TGR_S_EMPTY = 1 << 2,   /* an input has a dim of size 0 */
    TGR_S_STRIDED = 1 << 3, /* an input is not contiguous */
    TGR_S_BCAST = 1 << 4,   /* operands broadcast */
    TGR_S_SPECIAL = 1 << 5, /* NaN, +-inf, +-0 among the values */
    TGR_S_DTYPES = 1 << 6,  /* operands of other dtypes than the sample's float one */
    TGR_S_BAD = 1 << 7,     /* the op must refuse it with `want` (a bad input) */
};

typedef struct tgr_sample {
    char what[48];                   /* "lead 2 transposed", for messages */
    unsigned batch;                  /* bit k: input k's dim 0 is a batch dim the op maps
                                        over, as outputs' dim 0 (0: no batch check) */
    int nin;
    tg_tensor *in[TGR_MAX_IN];       /* new references, or NULL for an absent input */
    tgr_args a;
    unsigned flags;
    tg_status want;                  /* TGR_S_BAD: the status the op must return */
} tgr_sample;

typedef struct tgr_samples {
    int n, cap;
    tgr_sample *s;
} tgr_samples;

typedef struct tgr_op tgr_op;

/* Calls the op on in[0..nin) with a's parameters through the public API:
 * out[0..nout) receive new references (NULL where the op gives none). Returns
 * the op's status (TG_OK, or the failure with every out NULL). */
typedef tg_status (*tgr_apply_fn)(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                                  tg_tensor **out);
/* Appends the op's samples with floating inputs of dtype dt (TG_F32 or
 * TG_F64) to out. Deterministic. */
typedef void (*tgr_sample_fn)(const tgr_op *op, tg_dtype dt, tgr_samples *out);
/* An elementwise op's value in double for the parameters a. */
typedef double (*tgr_ref_fn)(double x, const tgr_args *a);

struct tgr_op {
    const char *name;      /* the registry name, the op programs' instruction: "sum_dim" */
    const char *c_name;    /* the public function (its _at form is declared in include/) */
    const char *torch;     /* PyTorch's spelling, a Python expression of the inputs a, b, c, d,
                              the parameters by name and torch_ref.py's helpers R */
    const char *params;    /* "d:dim b:keepdim": kind letter, ':', name; in call order */
    int nin;               /* tensor inputs */
    int nin_required;      /* the first nin_required must be tensors (NULL: TG_ERR_NULL) */
    int nout;              /* tensor outputs (0 for the in-place ops) */
    unsigned diff;         /* bit k: the gradient reaches input k when it requires grad */
    unsigned flags;        /* TGR_VIEW ... */
    unsigned dtypes;       /* bit (1 << tg_dtype): the dtypes its samples also try for the
                              data inputs beyond f32/f64 (i64, bool) */
    tgr_apply_fn apply;
    tgr_sample_fn samples;
    /* elementwise ops: the reference, the range of smooth inputs and the kinks
     * with PyTorch's gradient there ({x, dy/dx}) */
    tgr_ref_fn ref;
    double lo, hi;
    int saves;             /* what backward keeps, checked exactly when declared:
                              TGR_SAVES_NONE, _INPUT or _OUTPUT (input / output 0) */
    int nkinks;
    double kinks[4][2];
    /* filled by tgr_init from `params` */
    int nparams;
    tgr_param p[TGR_MAX_PARAMS];
};

/* The rows, in a fixed order (the op programs' byte encoding numbers them). */
extern tgr_op **tgr_ops;
extern int tgr_nops;

/* Fills every row's parsed parameters; call once before anything else
 * (idempotent). */
void tgr_init(void);
/* The row named name, or NULL. */
const tgr_op *tgr_find(const char *name);
/* The row whose c_name is name, or NULL. */
const tgr_op *tgr_find_c(const char *c_name);
/* The public `tg_*_at` functions of include/ that are not ops (custom
 * functions, marking a hand-made write), NULL-ended: test_registry.c fails
 * for any other one without a row. */
extern const char *const TGR_NOT_OPS[];

/* The op's samples for dtype dt (tgr_samples_free releases them). */
void tgr_samples_of(const tgr_op *op, tg_dtype dt, tgr_samples *out);
void tgr_samples_free(tgr_samples *s);

/* Runs op on sample s: out[] as apply gives them (new references). An
 * in-place row runs on a clone of its target (recorded, so gradients reach
 * the target), which is then out[0]: every row is a function of its inputs
 * here. The op programs call apply itself. */
tg_status tgr_call(const tgr_op *op, const tgr_sample *s, tg_tensor **out);
/* The same with inputs and arguments given. */
tg_status tgr_call_in(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                      tg_tensor **out);
/* The number of outputs tgr_call gives (1 for an in-place row). */
static inline int tgr_nout(const tgr_op *op) { return op->flags & TGR_INPLACE ? 1 : op->nout; }

/* The weights of output k in the gradient checks: fixed values in [0.5, 1.5)
 * of o's shape and dtype (seed 991 + k), so that every element reaches the loss. */
tg_tensor *tgr_weights(const tg_tensor *o, int k);
/* sum over the float outputs in mask (bit k; ~0u: those that require grad) of
 * sum(out_k * tgr_weights(out_k, k)); NULL when there is none, or with the
 * error pending when a step failed. New reference. */
tg_tensor *tgr_loss(tg_tensor *const *out, int nout, unsigned mask);

/* The parameter of op named name, or NULL. */
const tgr_param *tgr_param_of(const tgr_op *op, const char *name);

/* Writes the manifest: one JSON object per line, one per row (name, c_name, saves_output,
 * torch, params, nin, nout, diff, flags), then, when with_samples, one per
 * f64 sample (its inputs' dtypes, shapes, strides-kind and values; its
 * arguments; its flags). The differential suites read it. */
void tgr_manifest(FILE *f, bool with_samples);
/* For every f64 sample of every row (or of the row named only, when not NULL),
 * one JSON line: the sample as tgr_manifest writes it, then what tapegrad
 * gives: "status" and "message"; on success "outputs", "weights" (of
 * tgr_loss) and "grads" (of the differentiable inputs, made leaves that
 * require grad; null for the others). */
void tgr_run_json(FILE *f, const char *only);

/* ---- sample building (for the rows) ---------------------------------------------- */

/* Appends a sample (what, flags) with nin inputs (new references, consumed)
 * and arguments a (NULL: all zero, dtype f64). An input without elements is
 * replaced by its tgr_over_null form (data NULL), and the sample is flagged
 * TGR_S_EMPTY. Returns it. */
tgr_sample *tgr_add(tgr_samples *out, const char *what, unsigned flags, const tgr_args *a,
                    int nin, ...);
/* A tensor of dtype dt and shape (ndim, shape) of seeded values uniform in
 * [lo, hi) (i64: integers in [lo, hi); bool: 0/1); distinct values for
 * floats. */
tg_tensor *tgr_rand(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed, double lo,
                    double hi);
/* t seen through a non-contiguous view with the same shape and values: a
 * transpose of a copy of its last two dims transposed (1-D: every second
 * element of a longer tensor), detached. Consumes t. */
tg_tensor *tgr_strided(tg_tensor *t);
/* An empty tensor over no memory, as NumPy and DLPack hand one over: t's
 * dtype, shape and strides on dev with data NULL, made by tg_from_blob, or
 * by tg_from_dlpack when dlpack. A leaf, requiring grad when rg (and t is a
 * float tensor). NULL when t is NULL or has elements. tgr_add gives every
 * empty sample input this form, and the walks make their empty leaves with
 * it, so that every suite meets a NULL data pointer where a caller can pass
 * one. */
tg_tensor *tgr_over_null(const tg_tensor *t, tg_device dev, bool dlpack, bool rg);
/* Small integers in [-1, 2] (ties, zeros) of dtype dt. */
tg_tensor *tgr_ties(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed);
/* The values NaN, +inf, -inf, +0, -0, 1e-300, -1e300, 1, -2.5 repeated over
 * the shape, dtype dt. */
tg_tensor *tgr_specials(tg_dtype dt, int ndim, const int64_t *shape);
/* An all-zero tgr_args with dtype dt. */
tgr_args tgr_args0(tg_dtype dt);

/* Sample builders shared by rows (registry.c):
 * unary: shapes with 0-3 dims, empty, transposed, strided, specials, values
 *   in [op->lo, op->hi);
 * binary: the same shape, broadcast both ways, 0-d with 2-D, leading dims,
 *   empty, strided, and mixed dtypes (f32 with f64, with i64, with a bool);
 * compare: binary's pairs plus ties and i64/bool operands;
 * reduce_dim: every dim (and its negative) of shapes with 1-3 dims, keepdim
 *   both, ties, specials, strided, empty others and an empty line;
 *   reduce_all: shapes with 0-3 dims, empty (the max, min and their indices
 *   refuse an empty line: no identity, as PyTorch). */
void tgr_samples_unary(const tgr_op *op, tg_dtype dt, tgr_samples *out);
void tgr_samples_binary(const tgr_op *op, tg_dtype dt, tgr_samples *out);
void tgr_samples_compare(const tgr_op *op, tg_dtype dt, tgr_samples *out);
void tgr_samples_reduce_dim(const tgr_op *op, tg_dtype dt, tgr_samples *out);
void tgr_samples_reduce_all(const tgr_op *op, tg_dtype dt, tgr_samples *out);

/* The rows of each family (rows_*.c), gathered by registry.c (the table of
 * pointers there is made from these arrays at tgr_init). */
extern tgr_op TGR_ROWS_ELEMENTWISE[];
extern const int TGR_N_ELEMENTWISE;
extern tgr_op TGR_ROWS_REDUCE[];
extern const int TGR_N_REDUCE;
extern tgr_op TGR_ROWS_SHAPE[];
extern const int TGR_N_SHAPE;
extern tgr_op TGR_ROWS_INDEX[];
extern const int TGR_N_INDEX;
extern tgr_op TGR_ROWS_LOSS[];
extern const int TGR_N_LOSS;

#endif
