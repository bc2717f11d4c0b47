/* tests/prog/prog_text.c - the two front-ends of op programs: the text form
 * (printer and parser) and the byte form (decoder for fuzzing, and an encoder
 * that turns a text program into bytes for a seed corpus).
 *
 * Text: one instruction per line,
 *   [rD[,rE] =] name [rA [rB [rC]]] [dtype] [shape] [vals=[...]] [key=value ...]
 * `_` is an empty register slot, dtypes are f32 f64 i64 (dtN for an invalid
 * value N), shapes and value lists have no spaces ([2,3], [], vals=[1,-inf]),
 * doubles print with 17 significant digits (inf, -inf, nan), keep_err=1 keeps
 * the thread's error from the previous instruction. '#' starts a comment line.
 *
 * Bytes: per instruction an op byte, then one byte per destination and source
 * register, a dtype byte, the shape, the values and each key's value, as the
 * descriptor lists them, and a flags byte. Integers, sizes and doubles use one
 * byte for common values (small numbers, a table of edge cases) and nine for
 * anything else, so every program prints, parses, encodes and decodes back to
 * the same text. Missing bytes read as 0. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* ---- printing ---------------------------------------------------------------------------- */

static void print_double(FILE *f, double v) {
    if (isnan(v)) fputs("nan", f);
    else if (isinf(v)) fputs(v > 0 ? "inf" : "-inf", f);
    else fprintf(f, "%.17g", v);
}

static void print_reg(FILE *f, int r) {
    if (r >= 0 && r < TGP_NREG) fprintf(f, "r%d", r);
    else fputc('_', f);
}

static const char *dtype_token(int dt, char *buf) {
    if (dt == TG_F32) return "f32";
    if (dt == TG_F64) return "f64";
    if (dt == TG_I64) return "i64";
    if (dt == TG_BOOL) return "bool";
    sprintf(buf, "dt%d", dt);
    return buf;
}

void tgp_print_insn(FILE *f, const tgp_insn *in) {
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    if (!d) {
        fprintf(f, "# unknown op %d\n", in->op);
        return;
    }
    if (d->ndst) {
        for (int k = 0; k < d->ndst; k++) {
            if (k) fputc(',', f);
            print_reg(f, in->dst[k]);
        }
        fputs(" = ", f);
    }
    fputs(d->name, f);
    int nsrc = d->nsrc; /* trailing empty optional slots are left out */
    while (nsrc > d->nsrc_required && in->src[nsrc - 1] == TGP_NONE) nsrc--;
    for (int i = 0; i < nsrc; i++) {
        fputc(' ', f);
        print_reg(f, in->src[i]);
    }
    char buf[16];
    if (d->has_dtype) fprintf(f, " %s", dtype_token(in->dtype, buf));
    if (d->has_shape) {
        fputs(" [", f);
        for (int i = 0; i < in->ndim; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)in->shape[i]);
        fputc(']', f);
    }
    if (d->has_vals) {
        fputs(" vals=[", f);
        for (int i = 0; i < in->nvals; i++) {
            if (i) fputc(',', f);
            print_double(f, in->vals[i]);
        }
        fputc(']', f);
    }
    for (int k = 0; d->keys[k]; k++) {
        fprintf(f, " %s=", d->keys[k]);
        int sl = d->slots[k];
        if (sl >= 10) print_double(f, in->fv[sl - 10]);
        else fprintf(f, "%lld", (long long)in->iv[sl]);
    }
    if (in->keep_err) fputs(" keep_err=1", f);
    fputc('\n', f);
}

void tgp_print(FILE *f, const tgp_prog *p) {
    for (int i = 0; i < p->n; i++) tgp_print_insn(f, &p->insns[i]);
}

/* ---- parsing ------------------------------------------------------------------------------- */

static bool perr(char *err, size_t cap, const char *msg, const char *tok) {
    snprintf(err, cap, "%s: '%.40s'", msg, tok);
    return false;
}

/* "r12" -> 12, "_" -> TGP_NONE; -2 if not a register token */
static int parse_reg(const char *t) {
    if (strcmp(t, "_") == 0) return TGP_NONE;
    if (t[0] != 'r' || !isdigit((unsigned char)t[1])) return -2;
    char *end;
    long v = strtol(t + 1, &end, 10);
    if (*end || v < 0 || v >= TGP_NREG) return -2;
    return (int)v;
}

static bool parse_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno) return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) return false;
    *out = v;
    return true;
}

/* "[a,b,...]" into up to cap items (as text, NUL-separated in place). */
static int split_list(char *s, char **items, int cap) {
    size_t n = strlen(s);
    if (n < 2 || s[0] != '[' || s[n - 1] != ']') return -1;
    s[n - 1] = '\0';
    s++;
    if (!*s) return 0;
    int k = 0;
    for (char *p = s;; p++) {
        if (k == cap) return -1;
        items[k++] = p;
        p = strchr(p, ',');
        if (!p) break;
        *p = '\0';
    }
    return k;
}

static bool parse_token(char *t, const tgp_op_desc *d, tgp_insn *in, int *nsrc, char *err,
                        size_t cap) {
    int r = parse_reg(t);
    if (r != -2) {
        if (*nsrc >= d->nsrc) return perr(err, cap, "too many registers", t);
        in->src[(*nsrc)++] = r;
        return true;
    }
    if (d->has_dtype && (!strcmp(t, "f32") || !strcmp(t, "f64") || !strcmp(t, "i64") ||
                         !strcmp(t, "bool") ||
                         (t[0] == 'd' && t[1] == 't' && isdigit((unsigned char)t[2])))) {
        in->dtype = !strcmp(t, "f32") ? TG_F32 : !strcmp(t, "f64") ? TG_F64
                  : !strcmp(t, "i64") ? TG_I64 : !strcmp(t, "bool") ? TG_BOOL : atoi(t + 2);
        return true;
    }
    if (t[0] == '[') {
        if (!d->has_shape) return perr(err, cap, "this op takes no shape", t);
        char *items[TGP_MAX_SHAPE + 1];
        int n = split_list(t, items, TGP_MAX_SHAPE);
        if (n < 0) return perr(err, cap, "bad shape", t);
        in->ndim = n;
        for (int i = 0; i < n; i++)
            if (!parse_i64(items[i], &in->shape[i])) return perr(err, cap, "bad size", items[i]);
        return true;
    }
    char *eq = strchr(t, '=');
    if (!eq) return perr(err, cap, "unexpected token", t);
    *eq = '\0';
    const char *key = t, *val = eq + 1;
    if (!strcmp(key, "keep_err")) {
        int64_t v;
        if (!parse_i64(val, &v)) return perr(err, cap, "bad keep_err", val);
        in->keep_err = v != 0;
        return true;
    }
    if (!strcmp(key, "vals")) {
        if (!d->has_vals) return perr(err, cap, "this op takes no vals", key);
        char *items[TGP_MAX_VALS + 1];
        int n = split_list(eq + 1, items, TGP_MAX_VALS);
        if (n < 0) return perr(err, cap, "bad vals list (at most 64)", val);
        in->nvals = n;
        for (int i = 0; i < n; i++)
            if (!parse_f64(items[i], &in->vals[i])) return perr(err, cap, "bad value", items[i]);
        return true;
    }
    for (int k = 0; d->keys[k]; k++) {
        if (strcmp(d->keys[k], key) != 0) continue;
        int sl = d->slots[k];
        bool ok = sl >= 10 ? parse_f64(val, &in->fv[sl - 10]) : parse_i64(val, &in->iv[sl]);
        return ok ? true : perr(err, cap, "bad number", val);
    }
    return perr(err, cap, "unknown key", key);
}

int tgp_parse_line(const char *line, tgp_insn *out, char *err, size_t errcap) {
    char buf[4096];
    size_t len = strlen(line);
    if (len >= sizeof buf) return perr(err, errcap, "line too long", line), -1;
    memcpy(buf, line, len + 1);
    char *tok[128];
    int nt = 0;
    for (char *p = strtok(buf, " \t\r\n"); p; p = strtok(NULL, " \t\r\n")) {
        if (nt == 128) return perr(err, errcap, "too many tokens", line), -1;
        tok[nt++] = p;
    }
    if (nt == 0 || tok[0][0] == '#') return 0;
    int k = 0;
    int dst[TGR_MAX_OUT] = {TGP_NONE, TGP_NONE, TGP_NONE}, ndst = 0;
    if (nt >= 2 && !strcmp(tok[1], "=")) {
        char *r = tok[0];
        for (;;) { /* rD[,rE[,rF]] */
            char *comma = strchr(r, ',');
            if (comma) *comma = '\0';
            if (ndst == TGR_MAX_OUT) return perr(err, errcap, "too many destinations", r), -1;
            dst[ndst] = parse_reg(r);
            if (dst[ndst++] == -2) return perr(err, errcap, "bad destination", r), -1;
            if (!comma) break;
            r = comma + 1;
        }
        k = 2;
    }
    if (k >= nt) return perr(err, errcap, "no op", line), -1;
    int op = tgp_op_by_name(tok[k]);
    if (op < 0) return perr(err, errcap, "unknown op", tok[k]), -1;
    const tgp_op_desc *d = tgp_op_desc_get(op);
    if (ndst > d->ndst) return perr(err, errcap, "too many destinations for", d->name), -1;
    *out = tgp_insn_init(op);
    for (int i = 0; i < TGR_MAX_OUT; i++) out->dst[i] = dst[i];
    int nsrc = 0;
    for (k++; k < nt; k++)
        if (!parse_token(tok[k], d, out, &nsrc, err, errcap)) return -1;
    return 1;
}

bool tgp_parse(const char *text, tgp_prog *p, size_t *consumed, char *err, size_t errcap) {
    const char *s = text;
    int lineno = 0;
    bool ok = true;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        const char *next = nl ? nl + 1 : s + len;
        lineno++;
        char line[4096];
        if (len >= sizeof line) {
            snprintf(err, errcap, "line %d: too long", lineno);
            ok = false;
            s = next;
            break;
        }
        memcpy(line, s, len);
        line[len] = '\0';
        s = next;
        if (!strcmp(line, "---") || !strcmp(line, "---\r")) break;
        tgp_insn in;
        char e[200];
        int r = tgp_parse_line(line, &in, e, sizeof e);
        if (r < 0) {
            snprintf(err, errcap, "line %d: %s", lineno, e);
            ok = false;
            break;
        }
        if (r > 0 && !tgp_push(p, &in)) {
            snprintf(err, errcap, "line %d: out of memory", lineno);
            ok = false;
            break;
        }
    }
    if (consumed) *consumed = (size_t)(s - text);
    return ok;
}

/* ---- bytes --------------------------------------------------------------------------------- */

static const int64_t k_wild_int[20] = {
    INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, 2147483648LL, -2147483648LL,
    4294967296LL, 4611686018427387904LL, -4611686018427387904LL, 1099511627776LL, -100, 100,
    1000, -1000, 2147483647LL, -2147483649LL, 64, 128, 255, 256};
static const int64_t k_wild_size[10] = {-1, -2, 2199023255552LL /* 2^41 */,
                                        4611686018427387904LL, INT64_MAX, INT64_MIN, 6, 7, 8, 16};
static const double k_nice[40] = {0,   1,    -1,  2,    -2,   0.5,  -0.5, 3,   -3,   0.25,
                                  1.5, -1.5, 4,   10,   -10,  0.1,  -0.1, 100, 1e-3, 7,
                                  -4,  0.75, 5,   -0.25, 2.5, -2.5, 8,    -8,  0.125, 6,
                                  -6,  1.25, 0.2, -0.2, 20,   -20,  0.9,  1.1, 50,   -50};
static const double k_special[20] = {INFINITY, -INFINITY, NAN,    -0.0,    1e300, -1e300, 1e-300,
                                     5e-324,   DBL_MAX,   -DBL_MAX, 1e10,  -1e10,  1e-10,  700,
                                     -700,     1e-5,      0.3,    1.0 / 3, 2.0 / 3, 1e5};

typedef struct rd {
    const uint8_t *p;
    size_t n, i;
} rd;

static unsigned u8(rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }

static uint64_t u64(rd *r) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v |= (uint64_t)u8(r) << (8 * k);
    return v;
}

static int64_t dec_int(rd *r) {
    unsigned b = u8(r);
    if (b < 220) return (int64_t)(b % 22) - 8;
    if (b < 240) return k_wild_int[b - 220];
    return (int64_t)u64(r);
}

/* creation: any size from the tables (huge ones must fail cleanly); other
 * ops: sizes above 16 become -1 (a huge expand would be a legal, endless view) */
static int64_t dec_size(rd *r, bool creation) {
    unsigned b = u8(r);
    int64_t v;
    if (b < 230) v = b % 6;
    else if (b < 240) v = k_wild_size[b - 230];
    else {
        v = (int64_t)u64(r);
        if (v > 16 && v < 2199023255552LL) v = v % 17;
    }
    if (!creation && (v > 16 || v < -2)) v = -1;
    return v;
}

static double dec_double(rd *r) {
    unsigned b = u8(r);
    if (b < 200) return k_nice[b % 40];
    if (b < 220) return k_special[b - 200];
    uint64_t bits = u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static int dec_reg(rd *r, bool *assigned, int last) {
    unsigned b = u8(r);
    if (b == 255) return TGP_NONE;
    int reg = (int)((b & 127u) % TGP_NREG);
    if (b < 128 && !assigned[reg] && last >= 0) reg = last; /* prefer a filled register */
    return reg;
}

static bool is_creation(int op) {
    const tgr_op *row = tgp_row(op);
    return row && (row->flags & TGR_CREATE);
}

static bool is_arange(int op) {
    const tgr_op *row = tgp_row(op);
    return row && !strcmp(row->name, "arange");
}

/* Keeps one input fast: ordinary sizes (0..16) multiply to at most 4096 elements;
 * the huge sizes of the edge-case table (which must fail) are left alone. */
static void cap_numel(tgp_insn *in) {
    int64_t n = 1;
    for (int k = 0; k < in->ndim; k++) {
        int64_t v = in->shape[k];
        if (v < 2 || v > 16) continue;
        if (n * v > 4096) in->shape[k] = 1;
        else n *= v;
    }
}

/* The same for arange (start, end, step in fv[0..2]): a count between 4096 and
 * 2^40 elements (which would allocate, slowly or past the fuzzer's memory
 * limit) becomes 4096 by moving end; counts too large to allocate, and bad
 * arguments, are left alone. Applying it twice changes nothing more. */
static void cap_arange(tgp_insn *in) {
    double start = in->fv[0], end = in->fv[1], step = in->fv[2];
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0) return;
    double n = ceil((end - start) / step);
    if (n > 4096 && n < 1099511627776.0) in->fv[1] = start + step * 4096;
}

bool tgp_decode_bytes(const uint8_t *data, size_t size, tgp_prog *p) {
    p->n = 0;
    rd r = {data, size, 0};
    bool assigned[TGP_NREG] = {false};
    int last = -1;
    while (r.i < r.n && p->n < TGP_MAX_INSNS) {
        tgp_insn in = tgp_insn_init((int)(u8(&r) % (unsigned)tgp_nops()));
        const tgp_op_desc *d = tgp_op_desc_get(in.op);
        for (int k = 0; k < d->ndst; k++) {
            unsigned b = u8(&r);
            in.dst[k] = b == 255 ? TGP_NONE : (int)(b % TGP_NREG);
        }
        for (int k = 0; k < d->nsrc; k++) in.src[k] = dec_reg(&r, assigned, last);
        if (d->has_dtype) {
            static const int dts[8] = {TG_F64, TG_F64, TG_F64, TG_F32, TG_F64, TG_I64, TG_F32, 3};
            in.dtype = dts[u8(&r) % 8];
        }
        if (d->has_shape) {
            unsigned b = u8(&r);
            in.ndim = b < 240 ? (int)(b % 6) : (int)(b - 240 > 9 ? 9 : b - 240);
            for (int k = 0; k < in.ndim; k++) in.shape[k] = dec_size(&r, is_creation(in.op));
            cap_numel(&in);
        }
        if (d->has_vals) {
            in.nvals = (int)(u8(&r) % (TGP_MAX_VALS + 1));
            for (int k = 0; k < in.nvals; k++) in.vals[k] = dec_double(&r);
        }
        for (int k = 0; d->keys[k]; k++) {
            int sl = d->slots[k];
            if (sl >= 10) in.fv[sl - 10] = dec_double(&r);
            else in.iv[sl] = dec_int(&r);
        }
        if (is_arange(in.op)) cap_arange(&in);
        in.keep_err = u8(&r) % 16 == 15;
        for (int k = 0; k < d->ndst; k++)
            if (in.dst[k] != TGP_NONE) assigned[last = in.dst[k]] = true;
        if (!tgp_push(p, &in)) return false;
    }
    return true;
}

/* ---- encoding (text program -> bytes) -------------------------------------------------------- */

typedef struct wr {
    uint8_t *p;
    size_t n, cap;
} wr;

static bool put(wr *w, unsigned b) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        uint8_t *np = realloc(w->p, cap);
        if (!np) return false;
        w->p = np;
        w->cap = cap;
    }
    w->p[w->n++] = (uint8_t)b;
    return true;
}

static bool put64(wr *w, unsigned lead, uint64_t v) {
    bool ok = put(w, lead);
    for (int k = 0; k < 8; k++) ok &= put(w, (unsigned)(v >> (8 * k)) & 255u);
    return ok;
}

static bool enc_int(wr *w, int64_t v) {
    if (v >= -8 && v <= 13) return put(w, (unsigned)(v + 8));
    for (int i = 0; i < 20; i++)
        if (k_wild_int[i] == v) return put(w, 220u + (unsigned)i);
    return put64(w, 240, (uint64_t)v);
}

static bool enc_size(wr *w, int64_t v) {
    if (v >= 0 && v <= 5) return put(w, (unsigned)v);
    for (int i = 0; i < 10; i++)
        if (k_wild_size[i] == v) return put(w, 230u + (unsigned)i);
    return put64(w, 240, (uint64_t)v);
}

static bool enc_double(wr *w, double v) {
    for (int i = 0; i < 40; i++)
        if (!memcmp(&k_nice[i], &v, sizeof v)) return put(w, (unsigned)i);
    for (int i = 0; i < 20; i++)
        if (!memcmp(&k_special[i], &v, sizeof v) || (isnan(v) && isnan(k_special[i])))
            return put(w, 200u + (unsigned)i);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put64(w, 220, bits);
}

uint8_t *tgp_encode_bytes(const tgp_prog *p, size_t *size) {
    wr w = {NULL, 0, 0};
    bool ok = true;
    bool assigned[TGP_NREG] = {false};
    for (int i = 0; i < p->n && ok; i++) {
        const tgp_insn *in = &p->insns[i];
        const tgp_op_desc *d = tgp_op_desc_get(in->op);
        if (!d) continue;
        ok &= put(&w, (unsigned)in->op);
        for (int k = 0; k < d->ndst; k++)
            ok &= put(&w, in->dst[k] == TGP_NONE ? 255u : (unsigned)in->dst[k]);
        for (int k = 0; k < d->nsrc; k++) {
            int r = in->src[k];
            ok &= put(&w, r == TGP_NONE ? 255u : assigned[r] ? (unsigned)r : 128u + (unsigned)r);
        }
        if (d->has_dtype)
            ok &= put(&w, in->dtype == TG_F64 ? 0u : in->dtype == TG_F32 ? 3u
                        : in->dtype == TG_I64 ? 5u : 7u);
        if (d->has_shape) {
            ok &= put(&w, in->ndim <= 5 ? (unsigned)in->ndim : 240u + (unsigned)in->ndim);
            for (int k = 0; k < in->ndim; k++) ok &= enc_size(&w, in->shape[k]);
        }
        if (d->has_vals) {
            ok &= put(&w, (unsigned)in->nvals);
            for (int k = 0; k < in->nvals; k++) ok &= enc_double(&w, in->vals[k]);
        }
        for (int k = 0; d->keys[k]; k++) {
            int sl = d->slots[k];
            ok &= sl >= 10 ? enc_double(&w, in->fv[sl - 10]) : enc_int(&w, in->iv[sl]);
        }
        ok &= put(&w, in->keep_err ? 15u : 0u);
        for (int k = 0; k < d->ndst; k++)
            if (in->dst[k] != TGP_NONE) assigned[in->dst[k]] = true;
    }
    if (!ok) {
        free(w.p);
        return NULL;
    }
    *size = w.n;
    return w.p;
}
