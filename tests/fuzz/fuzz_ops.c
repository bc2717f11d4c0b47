/* tests/fuzz/fuzz_ops.c - libFuzzer harness: bytes -> op program -> executor.
 *
 * Every input decodes to a program (tests/prog/prog.h), which must print as
 * text, parse back and print the same, and encode back to bytes that decode to
 * the same program. The executor runs it through the public API, checks every
 * failure contract on every instruction, then releases every register and
 * checks that nothing is alive. A contract violation prints the program in its
 * text form and the violations on stderr, then calls abort(), so libFuzzer
 * reports the input as a crash; sanitizer reports do the same on their own.
 * TG_FUZZ_PRINT=1 in the environment prints each program before it runs (to
 * read what a crash input does: or use `tg_diff_run --decode FILE`).
 * TG_FUZZ_IGNORE="text1|text2" makes violations whose message contains one of
 * the texts non-fatal, to look past a problem already known while exploring. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

static bool g_print;
static const char *g_ignore;

/* libFuzzer entry points: setup once (environment), then one input (returns 0;
 * a broken contract aborts). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    setenv("OMP_NUM_THREADS", "1", 0);        /* one input at a time, reproducible, fast */
    setenv("TAPEGRAD_CPU_CACHE_MB", "0", 0);  /* freed blocks go back: ASan sees reuse */
    const char *p = getenv("TG_FUZZ_PRINT");
    g_print = p && *p && strcmp(p, "0") != 0;
    g_ignore = getenv("TG_FUZZ_IGNORE");
    return 0;
}

/* Whether violation v contains one of the '|'-separated texts of TG_FUZZ_IGNORE. */
static bool ignored(const char *v) {
    if (!g_ignore || !*g_ignore) return false;
    const char *p = g_ignore;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        char buf[200];
        if (n && n < sizeof buf) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            if (strstr(v, buf)) return true;
        }
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static char *to_text(const tgp_prog *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) abort();
    tgp_print(f, p);
    fclose(f);
    return buf;
}

/* print -> parse -> print gives the same text; encode -> decode too. */
static void check_forms(const tgp_prog *p, const char *text) {
    tgp_prog q = {0};
    char err[256];
    if (!tgp_parse(text, &q, NULL, err, sizeof err)) {
        fprintf(stderr, "fuzz_ops: the printed program does not parse: %s\n%s", err, text);
        abort();
    }
    char *again = to_text(&q);
    if (strcmp(text, again) != 0) {
        fprintf(stderr, "fuzz_ops: print/parse round trip differs:\n%s---\n%s", text, again);
        abort();
    }
    size_t n = 0;
    uint8_t *bytes = tgp_encode_bytes(p, &n);
    if (!bytes && p->n) abort();
    tgp_prog r = {0};
    tgp_decode_bytes(bytes, n, &r);
    char *dec = to_text(&r);
    if (strcmp(text, dec) != 0) {
        fprintf(stderr, "fuzz_ops: encode/decode round trip differs:\n%s---\n%s", text, dec);
        abort();
    }
    free(dec);
    free(bytes);
    free(again);
    tgp_free(&q);
    tgp_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tgp_set_input_budget(1 << 12); /* ops on tensors grown by tg_repeat: skipped */
    tgp_prog p = {0};
    if (!tgp_decode_bytes(data, size, &p)) abort();
    char *text = to_text(&p);
    if (g_print) fprintf(stderr, "---- program\n%s", text);
    check_forms(&p, text);
    tgp_result res;
    int fatal = 0;
    if (!tgp_run(&p, NULL, NULL, &res))
        for (int i = 0; i < res.nviol && i < 16; i++) fatal += !ignored(res.viol[i]);
    if (fatal || res.nviol > 16) {
        fprintf(stderr, "==== tapegrad contract violation; the program:\n%s==== violations:\n", text);
        for (int i = 0; i < res.nviol && i < 16; i++) fprintf(stderr, "  %s\n", res.viol[i]);
        if (res.nviol > 16) fprintf(stderr, "  ... %d in all\n", res.nviol);
        abort();
    }
    tgp_result_free(&res);
    free(text);
    tgp_free(&p);
    return 0;
}
