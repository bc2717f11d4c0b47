/* tests/diff/tg_diff_run.c - runs op programs (tests/prog) in their text form
 * and reports what happened, for people and for the differential suite.
 *
 *   tg_diff_run [--json] FILE|-     run every program in FILE (programs are
 *                                   separated by lines "---")
 *   tg_diff_run --decode BYTES      print the program a fuzz input decodes to
 *   tg_diff_run --encode TEXT OUT   write the bytes a text program encodes to
 *                                   (a seed for tests/fuzz/corpus/ops)
 *   tg_diff_run --manifest          the op registry's rows, one JSON line each (the
 *                                   instructions that are ops: tests/registry)
 *   tg_diff_run --samples           the rows, each followed by its f64 samples
 *   tg_diff_run --forms FILE        check that every program of FILE prints, parses,
 *                                   encodes and decodes back to the same text
 *
 * Without --json it prints, per instruction, the line and the status, then
 * every contract violation the executor found. With --json it prints one JSON
 * object per program on one line: "steps" (per instruction: "st", the status
 * name; "out", the values of the registers it wrote, or of the in-place
 * target; "grads", after a backward, the .grad of every leaf register that
 * has one; "cleared", registers it emptied), "final" (every register and every
 * .grad before the final release), "violations" and "leaked". A tensor is
 * {"dtype", "shape", "data", "rg", "leaf"} or null; NaN and infinities are
 * written as NaN, Infinity, -Infinity (as Python's json reads them).
 * Exit status: 0 when no program broke a contract, 1 when one did, 2 on bad
 * usage or a parse error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

static void json_double(FILE *f, double v) {
    if (isnan(v)) fputs("NaN", f);
    else if (isinf(v)) fputs(v > 0 ? "Infinity" : "-Infinity", f);
    else fprintf(f, "%.17g", v);
}

static void json_tensor(FILE *f, const tg_tensor *t) {
    if (!t) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"dtype\":\"%s\",\"shape\":[", tg_dtype_name(tg_get_dtype(t)));
    const int64_t *sh = tg_shape(t);
    for (int i = 0; i < tg_ndim(t); i++) fprintf(f, "%s%lld", i ? "," : "", (long long)sh[i]);
    fputs("],\"data\":", f);
    int64_t n;
    double *v = tgp_values(t, &n);
    if (!v && tg_numel(t) != 0) {
        fprintf(f, "\"unreadable: %s\"", tg_status_name(tg_last_status()));
    } else {
        fputc('[', f);
        for (int64_t i = 0; i < n; i++) {
            if (i) fputc(',', f);
            json_double(f, v[i]);
        }
        fputc(']', f);
    }
    free(v);
    fprintf(f, ",\"rg\":%s,\"leaf\":%s}", tg_requires_grad(t) ? "true" : "false",
            tg_is_leaf(t) ? "true" : "false");
}

static void json_grads(FILE *f, tgp_exec *e) {
    fputc('{', f);
    int k = 0;
    for (int r = 0; r < TGP_NREG; r++) {
        /* the leaves' only, as PyTorch's side reads them: a view that
         * required grad as a leaf keeps its .grad after its base's in-place
         * history made it an interior tensor */
        tg_tensor *t = tgp_reg(e, r), *g = t && tg_is_leaf(t) ? tgp_grad_peek(t) : NULL;
        if (!g) continue;
        fprintf(f, "%s\"r%d\":", k++ ? "," : "", r);
        json_tensor(f, g);
    }
    fputc('}', f);
}

typedef struct run_ctx {
    FILE *out;
    bool json;
    int nsteps;
} run_ctx;

static bool is_inplace(int op) {
    const tgr_op *row = tgp_row(op);
    return row && (row->flags & TGR_INPLACE);
}

static void hook(void *user, tgp_exec *e, int i, const tgp_insn *in, tg_status st) {
    run_ctx *c = user;
    FILE *f = c->out;
    if (!c->json) {
        if (i >= 0) {
            fprintf(f, "%3d  %-14s ", i, tg_status_name(st));
            tgp_print_insn(f, in);
        }
        return;
    }
    if (i < 0) {
        fputs("],\"final\":{\"regs\":{", f);
        int k = 0;
        for (int r = 0; r < TGP_NREG; r++) {
            tg_tensor *t = tgp_reg(e, r);
            if (!t) continue;
            fprintf(f, "%s\"r%d\":", k++ ? "," : "", r);
            json_tensor(f, t);
        }
        fputs("},\"grads\":", f);
        json_grads(f, e);
        fputc('}', f);
        return;
    }
    const tgp_op_desc *d = tgp_op_desc_get(in->op);
    fprintf(f, "%s{\"st\":\"%s\",\"out\":[", c->nsteps++ ? "," : "", tg_status_name(st));
    if (is_inplace(in->op)) {
        json_tensor(f, tgp_reg(e, in->src[0]));
    } else {
        for (int k = 0; k < d->ndst; k++) {
            if (k) fputc(',', f);
            json_tensor(f, tgp_reg(e, in->dst[k]));
        }
    }
    fputc(']', f);
    if (in->op == TGP_BACKWARD) {
        fputs(",\"grads\":", f);
        json_grads(f, e);
    }
    int cl[TGP_NREG];
    int n = tgp_cleared(e, cl);
    if (n) {
        fputs(",\"cleared\":[", f);
        for (int k = 0; k < n; k++) fprintf(f, "%s%d", k ? "," : "", cl[k]);
        fputc(']', f);
    }
    fputc('}', f);
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* The whole file (or stdin for "-"), NUL-terminated; NULL after saying so on
 * stderr. */
static char *read_all(const char *path, size_t *size) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "tg_diff_run: cannot read %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    if (f != stdin) fclose(f);
    if (b) b[n] = '\0';
    else fprintf(stderr, "tg_diff_run: cannot read %s\n", path);
    *size = n;
    return b;
}

static int run_file(const char *path, bool json) {
    size_t size;
    char *text = read_all(path, &size);
    if (!text) return 2;
    int rc = 0, idx = 0;
    const char *s = text;
    while (*s) {
        tgp_prog p = {0};
        size_t used;
        char err[256];
        if (!tgp_parse(s, &p, &used, err, sizeof err)) {
            fprintf(stderr, "tg_diff_run: %s: program %d: %s\n", path, idx, err);
            tgp_free(&p);
            free(text);
            return 2;
        }
        s += used;
        if (p.n == 0) {
            tgp_free(&p);
            continue;
        }
        run_ctx c = {stdout, json, 0};
        tgp_result res;
        if (json) printf("{\"prog\":%d,\"steps\":[", idx);
        else printf("== program %d\n", idx);
        bool ok = tgp_run(&p, hook, &c, &res);
        if (json) {
            fputs(",\"violations\":[", stdout);
            for (int v = 0; v < res.nviol && v < 16; v++) {
                if (v) fputc(',', stdout);
                json_string(stdout, res.viol[v]);
            }
            printf("],\"nviol\":%d,\"leaked\":%s}\n", res.nviol, res.leaked ? "true" : "false");
        } else {
            for (int v = 0; v < res.nviol && v < 16; v++)
                printf("VIOLATION %s\n", res.viol[v]);
            if (res.nviol > 16) printf("... %d violations in all\n", res.nviol);
        }
        fflush(stdout);
        if (!ok) rc = 1;
        tgp_result_free(&res);
        tgp_free(&p);
        idx++;
    }
    free(text);
    return rc;
}

static int decode(const char *path) {
    size_t size;
    char *b = read_all(path, &size);
    if (!b) return 2;
    tgp_prog p = {0};
    tgp_decode_bytes((const uint8_t *)b, size, &p);
    tgp_print(stdout, &p);
    tgp_free(&p);
    free(b);
    return 0;
}

static int encode(const char *in, const char *out) {
    size_t size;
    char *text = read_all(in, &size);
    if (!text) return 2;
    tgp_prog p = {0};
    char err[256];
    if (!tgp_parse(text, &p, NULL, err, sizeof err)) {
        fprintf(stderr, "tg_diff_run: %s: %s\n", in, err);
        free(text);
        tgp_free(&p);
        return 2;
    }
    size_t n = 0;
    uint8_t *bytes = tgp_encode_bytes(&p, &n);
    FILE *f = fopen(out, "wb");
    int rc = bytes && f && fwrite(bytes, 1, n, f) == n ? 0 : 2;
    if (f && fclose(f) != 0) rc = 2;
    if (rc) fprintf(stderr, "tg_diff_run: cannot write %s\n", out);
    free(bytes);
    free(text);
    tgp_free(&p);
    return rc;
}

static char *to_text(const tgp_prog *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    tgp_print(f, p);
    fclose(f);
    return buf;
}

/* print -> parse -> print and print -> encode -> decode -> print give one text. */
static int forms(const char *path) {
    size_t size;
    char *text = read_all(path, &size);
    if (!text) return 2;
    int rc = 0, idx = 0;
    for (const char *s = text; *s; idx++) {
        tgp_prog p = {0}, q = {0}, r = {0};
        size_t used, nb = 0;
        char err[256];
        if (!tgp_parse(s, &p, &used, err, sizeof err)) {
            fprintf(stderr, "tg_diff_run: %s: program %d: %s\n", path, idx, err);
            rc = 2;
            tgp_free(&p);
            break;
        }
        s += used;
        char *t1 = to_text(&p);
        bool ok = t1 && tgp_parse(t1, &q, NULL, err, sizeof err);
        char *t2 = ok ? to_text(&q) : NULL;
        uint8_t *bytes = tgp_encode_bytes(&p, &nb);
        if (bytes || p.n == 0) tgp_decode_bytes(bytes, nb, &r);
        char *t3 = to_text(&r);
        if (!ok || !t2 || !t3 || strcmp(t1, t2) != 0 || strcmp(t1, t3) != 0) {
            printf("program %d: the text and byte forms do not give it back:\n%s---\n%s---\n%s",
                   idx, t1 ? t1 : "", t2 ? t2 : "", t3 ? t3 : "");
            rc = 1;
        }
        free(t1);
        free(t2);
        free(t3);
        free(bytes);
        tgp_free(&p);
        tgp_free(&q);
        tgp_free(&r);
    }
    free(text);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--manifest")) return tgr_manifest(stdout, false), 0;
    if (argc == 2 && !strcmp(argv[1], "--samples")) return tgr_manifest(stdout, true), 0;
    if (argc == 3 && !strcmp(argv[1], "--forms")) return forms(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--decode")) return decode(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--encode")) return encode(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "--json")) return run_file(argv[2], true);
    if (argc == 2 && argv[1][0] != '-') return run_file(argv[1], false);
    if (argc == 2 && !strcmp(argv[1], "-")) return run_file(argv[1], false);
    fprintf(stderr, "usage: tg_diff_run [--json] FILE|-\n"
                    "       tg_diff_run --decode FUZZ_INPUT\n"
                    "       tg_diff_run --encode PROGRAM.txt OUT.bin\n"
                    "       tg_diff_run --forms FILE\n"
                    "       tg_diff_run --manifest | --samples\n");
    return 2;
}
