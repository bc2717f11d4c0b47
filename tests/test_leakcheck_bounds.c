/* tests/test_leakcheck_bounds.c - the leak checker's reports at and beyond
 * the size of every buffer they are built in: the root's path (512 bytes,
 * at most 64 steps), names (47 bytes), step labels (31), the lines of the
 * objects in cycles (199), the text report and the error message of
 * tg_leak_check (4095), and the JSON report of all of them. What does not
 * fit is cut with "...", never inside a UTF-8 character, and the JSON stays
 * valid. (Found by fuzzing: a chain of 30 ops under a 46-byte name overflowed
 * the path's buffer on the stack.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "tg_json_check.h"
#include "tg_ops_test_util.h"

TestSuite(leakcheck_bounds, .init = tgt_setup, .fini = tgt_teardown);

#define PATH_CAP (sizeof(((tg_leak_root *)0)->path)) /* 512 */
#define STEP " -> ExpBackward"                         /* one step of the chains below */
#define TARGET " -> ExpBackward (saved: f64 [2], 16 B in all)"

/* ---- helpers -------------------------------------------------------------------------------- */

/* x (a leaf requiring grad, which the caller keeps) -> n x tg_exp, named name
 * (tg_set_name cuts it to 47 bytes). The chain's root, after tg_step_mark. */
static tg_tensor *exp_chain(int n, const char *name, tg_tensor **leaf) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2), 1, true);
    tg_tensor *t = tg_retain(x);
    for (int i = 0; i < n; i++) {
        tg_tensor *u = tg_exp(t);
        TGO_RELEASE(t);
        t = u;
    }
    cr_assert_not_null(t, "%s", tg_last_error());
    tg_set_name(t, name);
    *leaf = x;
    return t;
}

static char *report_text(const tg_leak_report *r) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert_eq(tg_leak_report_print(f, r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static char *report_json(const tg_leak_report *r) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert_eq(tg_leak_report_json(f, r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static int count(const char *s, const char *sub) {
    int c = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + strlen(sub), sub)) c++;
    return c;
}

static bool ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* The path of a chain of n exp ops under root t: the root's name, then every
 * step when they all fit, else " -> ..." and as many of the last steps as
 * fit; always the target's step at the end; valid UTF-8 in its buffer. */
static void assert_chain_path(const char *path, const tg_tensor *t, int n) {
    char head[128];
    if (tg_name(t)[0])
        snprintf(head, sizeof head, "root \"%s\" (f64 [2])", tg_name(t));
    else
        snprintf(head, sizeof head, "root \"tensor #%llu\" (f64 [2])",
                 (unsigned long long)t->id);
    size_t len = strlen(path);
    cr_assert_lt(len, PATH_CAP);
    cr_assert_eq(bad_utf8_at(path), -1, "n %d: the path is not valid UTF-8: %s", n, path);
    cr_assert_eq(strncmp(path, head, strlen(head)), 0, "n %d: path %s, expected it to start "
                 "with %s", n, path, head);
    cr_assert(ends_with(path, TARGET), "n %d: the target's step is missing: %s", n, path);
    size_t full = strlen(head) + (size_t)(n - 1) * strlen(STEP) + strlen(TARGET);
    if (full < PATH_CAP) {
        cr_assert_eq(len, full, "n %d: every step fits, path %s", n, path);
        cr_assert_eq(count(path, STEP), n);
        cr_assert_null(strstr(path, " -> ..."), "n %d: %s", n, path);
    } else {
        char elided[160];
        snprintf(elided, sizeof elided, "%s -> ... -> ExpBackward", head);
        cr_assert_eq(strncmp(path, elided, strlen(elided)), 0, "n %d: %s", n, path);
        cr_assert_lt(count(path, STEP), n);
        cr_assert_geq(len + strlen(STEP), PATH_CAP, "n %d: room left for one more step (%zu "
                      "bytes): %s", n, len, path);
    }
}

/* ---- the path ------------------------------------------------------------------------------- */

Test(leakcheck_bounds, chain_of_30_exp_under_a_46_byte_name) {
    tg_tensor *x, *t = exp_chain(30, "0123456789012345678901234567890123456789012345", &x);
    tg_step_mark(NULL);
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    tgt_assert_leak_report("root \"0123456789012345678901234567890123456789012345\" "
                     "(f64 [2]) -> ... -> ExpBackward", TARGET, NULL);
    tg_leak_report *r = tg_leak_scan();
    cr_assert_not_null(r);
    cr_assert_eq(tg_leak_report_nroots(r), 1);
    assert_chain_path(tg_leak_report_root(r, 0)->path, t, 30);
    tg_leak_report_free(r);
    tg_clear_error();
    TGO_RELEASE(x, t);
}

/* Names of 0..60 bytes (ASCII, 2-, 3- and 4-byte characters, characters
 * JSON escapes) over chains from 1 step to past the 64 steps a path looks
 * at: the lengths around the buffer's 511 bytes are all met (a 44-byte name
 * and 28 steps make exactly 511). */
Test(leakcheck_bounds, paths_at_and_beyond_their_buffer) {
    char n44[45], n45[46], n46[47], n47[48], n48[49], n60[61], e47[48], e48[49], u48[49],
        q48[49];
    memset(n44, 'a', 44), n44[44] = '\0';
    memset(n45, 'b', 45), n45[45] = '\0';
    memset(n46, 'c', 46), n46[46] = '\0';
    memset(n47, 'd', 47), n47[47] = '\0';
    memset(n48, 'e', 48), n48[48] = '\0';
    memset(n60, 'f', 60), n60[60] = '\0';
    for (int i = 0; i < 23; i++) memcpy(e47 + 2 * i, "\xC3\xA9", 2); /* é x 23 + "a": 47 */
    memcpy(e47 + 46, "a", 2);
    for (int i = 0; i < 24; i++) memcpy(e48 + 2 * i, "\xC3\xA9", 2); /* é x 24: 48 -> 46 */
    e48[48] = '\0';
    for (int i = 0; i < 12; i++) memcpy(u48 + 4 * i, "\xF0\x9F\x98\x80", 4); /* 48 -> 44 */
    u48[48] = '\0';
    for (int i = 0; i < 16; i++) { /* "\" x 16: each byte escaped in JSON */
        q48[3 * i] = '"';
        q48[3 * i + 1] = '\\';
        q48[3 * i + 2] = '"';
    }
    q48[48] = '\0';
    const char *names[] = {"", "r", n44, n45, n46, n47, n48, n60, e47, e48, u48, q48};
    const int chains[] = {1, 2, 20, 26, 27, 28, 29, 30, 63, 64, 65, 200};
    for (size_t a = 0; a < sizeof names / sizeof *names; a++)
        for (size_t c = 0; c < sizeof chains / sizeof *chains; c++) {
            tg_tensor *x, *t = exp_chain(chains[c], names[a], &x);
            tg_step_mark(NULL);
            tg_leak_report *r = tg_leak_scan();
            cr_assert_not_null(r);
            cr_assert_eq(tg_leak_report_nroots(r), 1);
            const tg_leak_root *q = tg_leak_report_root(r, 0);
            cr_assert_eq(q->nodes, chains[c]);
            assert_chain_path(q->path, t, chains[c]);
            if (names[a] == n44 && chains[c] == 28)
                cr_assert_eq(strlen(q->path), PATH_CAP - 1, "%s", q->path);
            char *text = report_text(r), *js = report_json(r);
            cr_assert_not_null(strstr(text, q->path), "the text report lacks the path");
            json j;
            assert_json_object(js, &j);
            cr_assert_eq(json_key_count(&j, "path"), 1);
            free(text);
            free(js);
            tg_leak_report_free(r);
            TGO_RELEASE(x, t);
        }
}

/* A step longer than the path's buffer (a custom function's name has no
 * limit): cut with "..." (on a character boundary), the root's name kept. */
static tg_status ident_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                           tg_tensor **out, void *user) {
    (void)ctx, (void)n_in, (void)n_out, (void)user;
    out[0] = tg_scale(in[0], 1.0);
    return out[0] ? TG_OK : tg_last_status();
}

static tg_status ident_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                           tg_tensor **gin, void *user) {
    (void)ctx, (void)n_out, (void)n_in, (void)user;
    gin[0] = tg_retain(gout[0]);
    return TG_OK;
}

Test(leakcheck_bounds, a_step_longer_than_the_path_is_cut) {
    char name[1200];
    strcpy(name, "Long");
    for (int i = 0; i < 300; i++) strcat(name, "\xE2\x82\xAC"); /* € */
    strcat(name, "Backward");
    const tg_function fn = {name, ident_fwd, ident_bwd};
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2), 1, true), *out[1] = {NULL};
    cr_assert_eq(tg_function_apply(&fn, NULL, 1, (tg_tensor *const[]){x}, 1, out), TG_OK, "%s",
                 tg_last_error());
    tg_set_name(out[0], "kept");
    tg_step_mark(NULL);
    tg_leak_report *r = tg_leak_scan();
    const tg_leak_root *q = tg_leak_report_root(r, 0);
    cr_assert_not_null(q);
    cr_assert_lt(strlen(q->path), PATH_CAP);
    cr_assert_eq(bad_utf8_at(q->path), -1, "%s", q->path);
    /* one step only: nothing left out, the step itself cut */
    cr_assert_eq(strncmp(q->path, "root \"kept\" (f64 [2]) -> Long\xE2\x82\xAC", 32), 0, "%s",
                 q->path);
    cr_assert_geq(strlen(q->path), PATH_CAP - 4);
    cr_assert(ends_with(q->path, "..."), "%s", q->path);
    char *js = report_json(r);
    json j;
    assert_json_object(js, &j);
    free(js);
    tg_leak_report_free(r);
    TGO_RELEASE(x, out[0]);
}

/* ---- step labels, sites, cycles, the error message ----------------------------------------- */

/* Labels are kept in 32 bytes: cut with "..." on a character boundary (a cut
 * inside "é" made the JSON report invalid UTF-8). */
Test(leakcheck_bounds, step_labels_are_cut_on_a_character_boundary) {
    char label[64] = "", fits[32], over[33];
    for (int i = 0; i < 20; i++) strcat(label, "\xC3\xA9"); /* 40 bytes */
    memset(fits, 'L', 31), fits[31] = '\0';
    memset(over, 'M', 32), over[32] = '\0';
    const char *labels[] = {label, label + 1 /* starts inside a character */, fits, over};
    char cut_e[32] = "", cut_m[32];
    for (int i = 0; i < 14; i++) strcat(cut_e, "\xC3\xA9"); /* 28 bytes, then "..." */
    strcat(cut_e, "...");
    memset(cut_m, 'M', 28);
    strcpy(cut_m + 28, "...");
    const char *want[] = {cut_e, NULL, fits, cut_m};
    for (int k = 0; k < 4; k++) {
        tg_tensor *x, *t = exp_chain(1, "kept", &x);
        tg_step_mark(labels[k]);
        tg_leak_report *r = tg_leak_scan();
        const tg_leak_root *q = tg_leak_report_root(r, 0);
        cr_assert_not_null(q);
        cr_assert_lt(strlen(q->step_label), sizeof q->step_label);
        if (want[k])
            cr_assert_str_eq(q->step_label, want[k]);
        char *text = report_text(r), *js = report_json(r);
        json j;
        assert_json_object(js, &j);
        if (k != 1) cr_assert_eq(bad_utf8_at(text), -1, "label %d: %s", k, text);
        free(text);
        free(js);
        tg_leak_report_free(r);
        TGO_RELEASE(x, t);
    }
}

/* Invalid UTF-8 in a name (tg_set_name copies bytes) is '?' in the JSON. */
Test(leakcheck_bounds, invalid_utf8_in_a_name_keeps_the_json_valid) {
    tg_tensor *x, *t = exp_chain(2, "bad\xFF\xFE\xC3(name\xE2\x82", &x);
    tg_step_mark("also\xC0\xAF" "bad");
    tg_leak_report *r = tg_leak_scan();
    char *js = report_json(r);
    json j;
    assert_json_object(js, &j);
    cr_assert_not_null(strstr(js, "\"name\":\"bad?" "?" "?(name?"), "%s", js);
    free(js);
    tg_leak_report_free(r);
    TGO_RELEASE(x, t);
}

/* A creation site longer than any buffer: whole in the JSON ("site") and the
 * text report; cut with "..." in the 199-byte lines on objects in cycles.
 * Two prefixes put the cut on either byte of a 2-byte character. */
Test(leakcheck_bounds, long_creation_sites) {
    for (int shift = 0; shift < 2; shift++) {
        char file[700];
        strcpy(file, shift ? "/src/x" : "/src/");
        for (int i = 0; i < 300; i++) strcat(file, "\xC3\xA9");
        strcat(file, ".c");
        tg_site s1 = {file, 11}, s2 = {file, 12};

        /* a root created there */
        tg_tensor *x = tg_randn_at(s1, TG_F64, TG_SHAPE(2), 1, 0.0, 1.0);
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_tensor *y = tg_exp_at(s2, x);
        cr_assert_not_null(y, "%s", tg_last_error());
        tg_step_mark(NULL);
        tg_leak_report *r = tg_leak_scan();
        char *text = report_text(r), *js = report_json(r);
        json j;
        assert_json_object(js, &j);
        char want[800];
        snprintf(want, sizeof want, "\"site\":\"%s:12\"", file);
        cr_assert_not_null(strstr(js, want), "the JSON site is not whole");
        snprintf(want, sizeof want, "root created at %s:12 in step", file);
        cr_assert_not_null(strstr(text, want), "the text report's site is not whole");
        free(text);
        free(js);
        tg_leak_report_free(r);

        /* the same two tensors in a cycle: listed in lines of 199 bytes */
        x->grad = tg_retain(y);
        TGO_RELEASE(x, y);
        r = tg_leak_scan();
        cr_assert_eq(tg_leak_report_unreachable(r), 5);
        text = report_text(r);
        js = report_json(r);
        assert_json_object(js, &j);
        cr_assert_eq(bad_utf8_at(text), -1, "shift %d: %s", shift, text);
        cr_assert_geq(count(text, "...\n"), 3, "the lines naming the site are cut: %s", text);
        tg_clear_error();
        cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
        cr_assert_eq(bad_utf8_at(tg_leak_check_report()), -1);
        tg_clear_error();
        free(text);
        free(js);
        tg_leak_report_free(r);
        tg_tensor *g = x->grad; /* break the cycle */
        x->grad = NULL;
        tg__tensor_release(g);
        tgt_assert_nothing_live();
    }
}

/* The report of many long paths is longer than the 4095 bytes of the
 * check's report: tg_leak_check_report() ends with "..." (on a character
 * boundary); the printed report is whole. */
Test(leakcheck_bounds, long_reports_in_the_error_message_are_cut_with_dots) {
    enum { K = 12 };
    tg_tensor *x[K], *t[K];
    for (int k = 0; k < K; k++) {
        char name[48] = "";
        name[0] = (char)('A' + k); /* distinct names: "Az", "Bz", ... then é x 22 */
        name[1] = 'z';
        name[2] = '\0';
        for (int i = 0; i < 22; i++) strcat(name, "\xC3\xA9");
        t[k] = exp_chain(30, name, &x[k]);
    }
    tg_step_mark(NULL);
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    const char *m = tg_leak_check_report();
    size_t len = strlen(m);
    cr_assert_leq(len, 4095);
    cr_assert_geq(len, 4092);
    cr_assert(ends_with(m, "..."), "%s", m + len - 40);
    cr_assert_eq(bad_utf8_at(m), -1);
    tg_clear_error();
    tg_leak_report *r = tg_leak_scan();
    char *text = report_text(r), *js = report_json(r);
    cr_assert_gt(strlen(text), 4096);
    for (int k = 0; k < K; k++)
        cr_assert_not_null(strstr(text, tg_leak_report_root(r, k)->path), "root %d", k);
    json j;
    assert_json_object(js, &j);
    cr_assert_eq(count(js, "\"path\":"), K);
    free(text);
    free(js);
    tg_leak_report_free(r);
    for (int k = 0; k < K; k++) TGO_RELEASE(x[k], t[k]);
}
