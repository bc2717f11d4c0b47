/* tests/test_timeline.c - the memory timeline: recording a forward and
 * backward with step marks, the Chrome trace (checked with a small JSON parser
 * written here: well-formed, strings escaped, counter tracks whose summed
 * peak equals the allocator's peak), the SVG (well-formed tags, legend, step
 * labels, finite coordinates inside the canvas, at most ~2000 points per
 * series), errors, dropping events when the buffer is full, several threads,
 * and fault injection: recording never makes an op fail. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"
#include "tg_test_util.h"

TestSuite(timeline, .init = tgt_setup, .fini = tgt_teardown);

/* ---- a small JSON parser (a tree of values) ------------------------------------ */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jv {
    jtype t;
    double num;
    char *str;        /* J_STR (decoded, ASCII escapes only) */
    size_t n;         /* J_ARR, J_OBJ: items */
    struct jv *items;
    char **keys;      /* J_OBJ */
} jv;

typedef struct {
    const char *s;
    size_t i;
    const char *err;
} jp;

static void ws(jp *p) {
    while (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\t' || p->s[p->i] == '\r')
        p->i++;
}

static bool parse_value(jp *p, jv *v, int depth);

static bool parse_string(jp *p, char **out) {
    if (p->s[p->i] != '"') return p->err = "expected a string", false;
    p->i++;
    size_t cap = 16, n = 0;
    char *b = malloc(cap);
    for (;;) {
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c == '\0') return free(b), p->err = "unterminated string", false;
        if (c < 0x20) return free(b), p->err = "raw control character in a string", false;
        if (c == '"') break;
        if (c == '\\') {
            char e = p->s[p->i++];
            if (e == 'u') {
                for (int k = 0; k < 4; k++)
                    if (!isxdigit((unsigned char)p->s[p->i++]))
                        return free(b), p->err = "bad \\u escape", false;
                c = '?';
            } else if (strchr("\"\\/bfnrt", e) && e) {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : (unsigned char)e;
            } else {
                return free(b), p->err = "bad escape", false;
            }
        }
        if (n + 2 > cap) b = realloc(b, cap *= 2);
        b[n++] = (char)c;
    }
    b[n] = '\0';
    *out = b;
    return true;
}

static bool parse_number(jp *p, jv *v) {
    size_t st = p->i;
    if (p->s[p->i] == '-') p->i++;
    if (p->s[p->i] == '0') p->i++;
    else if (p->s[p->i] >= '1' && p->s[p->i] <= '9')
        while (isdigit((unsigned char)p->s[p->i])) p->i++;
    else return p->err = "bad number", false;
    if (p->s[p->i] == '.') {
        p->i++;
        if (!isdigit((unsigned char)p->s[p->i])) return p->err = "bad fraction", false;
        while (isdigit((unsigned char)p->s[p->i])) p->i++;
    }
    if (p->s[p->i] == 'e' || p->s[p->i] == 'E') {
        p->i++;
        if (p->s[p->i] == '+' || p->s[p->i] == '-') p->i++;
        if (!isdigit((unsigned char)p->s[p->i])) return p->err = "bad exponent", false;
        while (isdigit((unsigned char)p->s[p->i])) p->i++;
    }
    v->t = J_NUM;
    v->num = strtod(p->s + st, NULL);
    return isfinite(v->num) || (p->err = "number out of range", false);
}

static bool parse_items(jp *p, jv *v, bool obj, int depth) {
    char close = obj ? '}' : ']';
    p->i++;
    v->t = obj ? J_OBJ : J_ARR;
    size_t cap = 0;
    ws(p);
    if (p->s[p->i] == close) return p->i++, true;
    for (;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            v->items = realloc(v->items, cap * sizeof *v->items);
            if (obj) v->keys = realloc(v->keys, cap * sizeof *v->keys);
        }
        jv *it = &v->items[v->n];
        memset(it, 0, sizeof *it);
        if (obj) {
            ws(p);
            if (!parse_string(p, &v->keys[v->n])) return false;
            ws(p);
            if (p->s[p->i++] != ':') return free(v->keys[v->n]), p->err = "expected ':'", false;
        }
        v->n++;
        if (!parse_value(p, it, depth + 1)) return false;
        ws(p);
        char c = p->s[p->i++];
        if (c == close) return true;
        if (c != ',') return p->err = "expected ',' or a closing bracket", false;
    }
}

static bool parse_value(jp *p, jv *v, int depth) {
    if (depth > 64) return p->err = "too deep", false;
    ws(p);
    char c = p->s[p->i];
    if (c == '{' || c == '[') return parse_items(p, v, c == '{', depth);
    if (c == '"') return v->t = J_STR, parse_string(p, &v->str);
    if (strncmp(p->s + p->i, "true", 4) == 0 || strncmp(p->s + p->i, "null", 4) == 0)
        return v->t = c == 't' ? J_BOOL : J_NULL, p->i += 4, true;
    if (strncmp(p->s + p->i, "false", 5) == 0) return v->t = J_BOOL, p->i += 5, true;
    return parse_number(p, v);
}

static void jv_free(jv *v) {
    for (size_t k = 0; k < v->n; k++) {
        jv_free(&v->items[k]);
        if (v->t == J_OBJ) free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

static const jv *get(const jv *o, const char *key) {
    if (!o || o->t != J_OBJ) return NULL;
    for (size_t k = 0; k < o->n; k++)
        if (strcmp(o->keys[k], key) == 0) return &o->items[k];
    return NULL;
}

static const char *get_str(const jv *o, const char *key) {
    const jv *v = get(o, key);
    return v && v->t == J_STR ? v->str : NULL;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

static void parse_file(const char *path, jv *root) {
    char *text = read_file(path);
    jp p = {text, 0, NULL};
    memset(root, 0, sizeof *root);
    bool ok = parse_value(&p, root, 0);
    if (ok) {
        ws(&p);
        if (text[p.i] != '\0') ok = false, p.err = "text after the value";
    }
    cr_assert(ok, "%s is not valid JSON: %s at byte %zu", path, p.err, p.i);
    free(text);
}

/* ---- the trace ----------------------------------------------------------------------- */

typedef struct trace_facts {
    size_t n_live;          /* "live bytes" counter events */
    uint64_t peak_sum, last_sum;
    size_t n_saved;
    uint64_t peak_saved;
    size_t n_begin, n_end, n_alloc_instants;
    bool has_step[4];       /* the labels asked for */
    bool has_node_named[2]; /* MmBackward, a span; an alloc named tg_matmul */
    double dropped;
} trace_facts;

static trace_facts check_trace(const char *path, const char *const *labels, int n_labels) {
    jv root;
    parse_file(path, &root);
    trace_facts f;
    memset(&f, 0, sizeof f);
    cr_assert_eq(root.t, J_OBJ);
    const jv *evs = get(&root, "traceEvents");
    cr_assert(evs && evs->t == J_ARR, "no traceEvents array");
    cr_assert_str_eq(get_str(&root, "displayTimeUnit"), "ms");
    double last_ts = 0;
    for (size_t i = 0; i < evs->n; i++) {
        const jv *e = &evs->items[i];
        cr_assert_eq(e->t, J_OBJ, "event %zu is not an object", i);
        const char *ph = get_str(e, "ph"), *name = get_str(e, "name");
        cr_assert(ph && name, "event %zu lacks ph or name", i);
        cr_assert(get(e, "pid") && get(e, "pid")->t == J_NUM);
        if (strcmp(ph, "M") == 0) continue;
        const jv *ts = get(e, "ts");
        cr_assert(ts && ts->t == J_NUM && ts->num >= 0, "event %zu has no ts", i);
        cr_assert_geq(ts->num, last_ts - 1e-9, "time goes back at event %zu", i);
        last_ts = ts->num;
        const jv *args = get(e, "args");
        if (strcmp(ph, "C") == 0) {
            cr_assert(args && args->t == J_OBJ && args->n > 0, "counter without args");
            uint64_t sum = 0;
            for (size_t k = 0; k < args->n; k++) {
                cr_assert_eq(args->items[k].t, J_NUM, "counter arg %s is not a number",
                             args->keys[k]);
                cr_assert_geq(args->items[k].num, 0);
                sum += (uint64_t)args->items[k].num;
            }
            if (strcmp(name, "live bytes") == 0) {
                cr_assert_eq(args->n, TG_MEM_NCAT);
                for (int c = 0; c < TG_MEM_NCAT; c++)
                    cr_assert(get(args, tg_mem_category_name((tg_mem_category)c)),
                              "no %s in live bytes", tg_mem_category_name((tg_mem_category)c));
                f.n_live++;
                f.last_sum = sum;
                if (sum > f.peak_sum) f.peak_sum = sum;
            } else if (strcmp(name, "saved bytes") == 0) {
                f.n_saved++;
                if (sum > f.peak_saved) f.peak_saved = sum;
            }
        } else if (strcmp(ph, "B") == 0 || strcmp(ph, "E") == 0) {
            if (ph[0] == 'B') f.n_begin++;
            else f.n_end++;
            if (strcmp(name, "MmBackward") == 0) f.has_node_named[0] = true;
        } else if (strcmp(ph, "i") == 0) {
            const char *sc = get_str(e, "s");
            cr_assert(sc && strchr("gpt", sc[0]), "instant without a valid scope");
            if (sc[0] == 'g')
                for (int k = 0; k < n_labels; k++) f.has_step[k] |= strcmp(name, labels[k]) == 0;
            if (strncmp(name, "alloc ", 6) == 0 || strncmp(name, "free ", 5) == 0) {
                f.n_alloc_instants++;
                cr_assert(get_str(args, "op") && get_str(args, "category"));
                cr_assert(get(args, "bytes") && get(args, "bytes")->t == J_NUM);
                if (strcmp(name, "alloc tg_matmul") == 0) f.has_node_named[1] = true;
            }
        } else {
            cr_assert_fail("unexpected ph \"%s\"", ph);
        }
    }
    const jv *od = get(&root, "otherData");
    if (od && get(od, "dropped_events")) f.dropped = get(od, "dropped_events")->num;
    jv_free(&root);
    return f;
}

/* ---- the SVG ------------------------------------------------------------------------- */

typedef struct svg_facts {
    int n_path, n_text, n_line, n_g;
    size_t max_path_cmds; /* H and L commands (one per point and edge) in the longest path */
} svg_facts;

/* Checks the numbers in a tag: finite, and coordinates inside the canvas. */
static void check_tag_numbers(const char *tag, size_t len) {
    char *t = strndup(tag, len);
    for (char *p = t; *p; p++) *p = (char)tolower((unsigned char)*p);
    cr_assert(!strstr(t, "nan") && !strstr(t, "inf"), "non-finite number in <%s>", t);
    free(t);
    static const char *const attrs[] = {" x=\"", " y=\"", " x1=\"", " y1=\"", " x2=\"", " y2=\"",
                                        " cx=\"", " cy=\"", " width=\"", " height=\""};
    for (size_t a = 0; a < sizeof attrs / sizeof *attrs; a++) {
        const char *p = strstr(tag, attrs[a]);
        if (!p || p > tag + len) continue;
        const char *q = p + strlen(attrs[a]);
        if (*q == '1' && q[1] == '0' && q[2] == '0' && q[3] == '%') continue;
        char *end;
        double v = strtod(q, &end);
        cr_assert(end != q && isfinite(v) && v >= -1 && v <= 961, "bad %s%g", attrs[a], v);
    }
    const char *d = strstr(tag, " d=\"");
    if (d && d < tag + len)
        for (const char *p = d + 4; *p && *p != '"'; p++) {
            if (strchr("MHVLZ ", *p)) continue;
            char *end;
            double v = strtod(p, &end);
            cr_assert(end != p && isfinite(v) && v >= 0 && v <= 960, "bad path number near %.20s",
                      p);
            p = end - 1;
        }
}

static svg_facts check_svg(const char *path, const char *const *must, int n_must) {
    char *s = read_file(path);
    svg_facts f = {0};
    cr_assert(strncmp(s, "<svg", 4) == 0, "does not start with <svg");
    cr_assert(strstr(s, "xmlns=\"http://www.w3.org/2000/svg\""));
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) n--;
    cr_assert(n >= 6 && strncmp(s + n - 6, "</svg>", 6) == 0, "does not end with </svg>");
    cr_assert(!strstr(s, "<script") && !strstr(s, "href") && !strstr(s, "@import") &&
              !strstr(s, "url("), "not self-contained");
    char stack[64][16];
    int depth = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        cr_assert_not_null(end, "unterminated tag");
        bool closing = p[1] == '/', self = end[-1] == '/';
        const char *nm = p + (closing ? 2 : 1);
        size_t k = strcspn(nm, " />\n");
        cr_assert(k > 0 && k < 16, "bad tag name");
        char name[16];
        memcpy(name, nm, k);
        name[k] = '\0';
        check_tag_numbers(p, (size_t)(end - p));
        if (closing) {
            cr_assert_gt(depth, 0, "</%s> closes nothing", name);
            cr_assert_str_eq(stack[--depth], name, "tags out of order");
        } else if (!self) {
            cr_assert_lt(depth, 64);
            strcpy(stack[depth++], name);
        }
        if (!closing) {
            f.n_path += strcmp(name, "path") == 0;
            f.n_text += strcmp(name, "text") == 0;
            f.n_line += strcmp(name, "line") == 0;
            f.n_g += strcmp(name, "g") == 0;
        }
        if (strcmp(name, "path") == 0 && !closing) {
            size_t cmds = 0;
            for (const char *q = p; q < end; q++) cmds += *q == 'H' || *q == 'L';
            if (cmds > f.max_path_cmds) f.max_path_cmds = cmds;
        }
        p = end;
    }
    cr_assert_eq(depth, 0, "%d tags left open (innermost <%s>)", depth,
                 depth ? stack[depth - 1] : "");
    for (int k = 0; k < n_must; k++)
        cr_assert(strstr(s, must[k]), "the SVG lacks \"%s\"", must[k]);
    cr_assert(strstr(s, "MiB") || strstr(s, "KiB") || strstr(s, "bytes"));
    cr_assert(strstr(s, "time (ms)"));
    free(s);
    return f;
}

/* ---- a model to record ------------------------------------------------------------- */

/* One microbatch: loss = mean(log_softmax(x @ w)), backward; w.grad kept. */
static tg_status microbatch(tg_tensor *w, uint64_t seed) {
    int sc = tg_scope_begin();
    if (sc < 0) return tg_last_status();
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(16, 32), seed, 0.0, 1.0);
    tg_tensor *loss = tg_mean(tg_log_softmax(tg_matmul(x, w)));
    tg_status st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
    tg_status st2 = tg_scope_end(sc);
    return st != TG_OK ? st : st2;
}

static void tmp_path(char *buf, size_t n, const char *suffix) {
    snprintf(buf, n, "/tmp/tg_timeline_%d_%s", (int)getpid(), suffix);
}

Test(timeline, records_forward_backward_and_writes_a_valid_trace_and_svg) {
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(32, 64), 7, 0.0, 0.1);
    tg_set_name(w, "w");
    tg_set_requires_grad(w, true);
    cr_assert_eq(microbatch(w, 0), TG_OK, "%s", tg_last_error()); /* warm up BLAS */
    cr_assert_eq(tg_mem_reset_peak(TG_CPU), TG_OK);
    cr_assert_eq(tg_timeline_start(), TG_OK);
    cr_assert_eq(microbatch(w, 1), TG_OK, "%s", tg_last_error());
    tg_step_mark("microbatch 0");
    cr_assert_eq(microbatch(w, 2), TG_OK, "%s", tg_last_error());
    tg_step_mark("microbatch 1 <&\"quoted\">");
    tg_step_mark(NULL);
    cr_assert_eq(tg_release(w), TG_OK);
    cr_assert_eq(tg_timeline_stop(), TG_OK);
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    size_t n = tg_timeline_events();
    cr_assert_gt(n, 20, "only %zu events", n);

    char tp[128], sp[128];
    tmp_path(tp, sizeof tp, "trace.json");
    tmp_path(sp, sizeof sp, "plot.svg");
    cr_assert_eq(tg_timeline_write_trace(tp), TG_OK, "%s", tg_last_error());
    static const char *const labels[] = {"microbatch 0", "microbatch 1 <&\"quoted\">", "step 2"};
    trace_facts f = check_trace(tp, labels, 3);
    cr_assert_gt(f.n_live, 10);
    cr_assert_eq(f.peak_sum, m.peak_total, "trace peak %llu, allocator peak %zu",
                 (unsigned long long)f.peak_sum, m.peak_total);
    cr_assert_eq(f.last_sum, m.live_total, "ends at %llu bytes, allocator says %zu",
                 (unsigned long long)f.last_sum, m.live_total);
    cr_assert_eq(f.peak_saved, m.saved_peak);
    cr_assert_gt(f.n_saved, 1);
    cr_assert_gt(f.n_begin, 3, "backward ran nodes");
    cr_assert_eq(f.n_begin, f.n_end, "spans balanced");
    cr_assert(f.has_node_named[0], "a span named MmBackward");
    cr_assert(f.has_node_named[1], "an allocation named by its op");
    cr_assert_gt(f.n_alloc_instants, 10);
    for (int k = 0; k < 3; k++) cr_assert(f.has_step[k], "step mark \"%s\"", labels[k]);
    cr_assert_eq(f.dropped, 0);

    cr_assert_eq(tg_timeline_write_svg(sp, "forward & backward <test>"), TG_OK, "%s",
                 tg_last_error());
    static const char *const must[] = {"leaf", "activation", "gradient", "workspace",
                                       "microbatch 0", "microbatch 1 &lt;&amp;&quot;quoted",
                                       "forward &amp; backward &lt;test&gt;",
                                       "saved for backward", "backward running"};
    svg_facts s = check_svg(sp, must, (int)(sizeof must / sizeof *must));
    cr_assert_geq(s.n_path, TG_MEM_NCAT + 1, "an area per category and the saved line");
    cr_assert_gt(s.n_text, 10);
    cr_assert_gt(s.n_line, 5);
    cr_assert_gt(s.n_g, 1);
    if (!getenv("TG_TIMELINE_KEEP")) {
        remove(tp);
        remove(sp);
    }
    tg_timeline_clear();
    cr_assert_eq(tg_timeline_events(), 0);
}

Test(timeline, errors) {
    char p[128];
    tmp_path(p, sizeof p, "none.json");
    tg_timeline_clear();
    cr_assert_eq(tg_timeline_write_trace(p), TG_ERR_STATE);
    tgt_assert_error(TG_ERR_STATE, "nothing recorded", NULL);
    cr_assert_eq(tg_timeline_write_svg(p, NULL), TG_ERR_STATE);
    cr_assert_eq(tg_timeline_stop(), TG_ERR_STATE);
    tgt_assert_error(TG_ERR_STATE, "not recording", NULL);
    cr_assert_eq(tg_timeline_events(), 0);

    cr_assert_eq(tg_timeline_start(), TG_OK);
    cr_assert_eq(tg_timeline_start(), TG_ERR_STATE);
    tgt_assert_error(TG_ERR_STATE, "already recording", NULL);
    tg_tensor *t = tg_zeros(TG_F32, TG_SHAPE(10));
    tg_release(t);
    cr_assert_eq(tg_timeline_write_trace(NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "path", NULL);
    cr_assert_eq(tg_timeline_write_svg(NULL, "x"), TG_ERR_NULL);
    const char *bad = "/nonexistent-dir-tapegrad/trace.json";
    cr_assert_eq(tg_timeline_write_trace(bad), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, bad, "No such file", NULL);
    cr_assert_eq(tg_timeline_write_svg(bad, NULL), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, bad, NULL);
    cr_assert_eq(tg_timeline_write_trace("/dev/full"), TG_ERR_IO, "a full disk is an error");
    tgt_assert_error(TG_ERR_IO, "cannot write '/dev/full'", NULL);

    /* writing while recording works; so does a second recording after stop */
    cr_assert_eq(tg_timeline_write_trace(p), TG_OK, "%s", tg_last_error());
    check_trace(p, NULL, 0);
    cr_assert_eq(tg_timeline_stop(), TG_OK);
    size_t n = tg_timeline_events();
    cr_assert_eq(n, 3, "the first sample, an allocation and a free");
    cr_assert_eq(tg_timeline_start(), TG_OK, "start drops the earlier recording");
    cr_assert_eq(tg_timeline_events(), 1);
    char sp[128]; /* a recording of nothing still draws (finite numbers, empty areas) */
    tmp_path(sp, sizeof sp, "empty.svg");
    cr_assert_eq(tg_timeline_write_svg(sp, ""), TG_OK, "%s", tg_last_error());
    static const char *const must[] = {"tapegrad memory timeline", "leaf", "workspace"};
    check_svg(sp, must, 3);
    remove(sp);
    tg_timeline_clear(); /* also stops */
    cr_assert_eq(tg_timeline_stop(), TG_ERR_STATE);
    cr_assert_eq(tg_timeline_write_svg(p, NULL), TG_ERR_STATE);
    remove(p);
}

Test(timeline, events_past_the_limit_are_dropped_and_counted_never_failing_ops) {
    tg__timeline_set_limit(12);
    cr_assert_eq(tg_timeline_start(), TG_OK);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(32, 8), 3, 0.0, 1.0);
    tg_set_requires_grad(w, true);
    cr_assert_eq(microbatch(w, 5), TG_OK, "%s", tg_last_error());
    tg_release(w);
    cr_assert_eq(tg_timeline_stop(), TG_OK);
    tg__timeline_set_limit(0);
    cr_assert_eq(tg_timeline_events(), 12);
    uint64_t dropped = tg__timeline_dropped();
    cr_assert_gt(dropped, 10);
    char p[128];
    tmp_path(p, sizeof p, "dropped.json");
    cr_assert_eq(tg_timeline_write_trace(p), TG_OK);
    trace_facts f = check_trace(p, NULL, 0);
    cr_assert_eq(f.dropped, (double)dropped);
    remove(p);
    tmp_path(p, sizeof p, "dropped.svg");
    cr_assert_eq(tg_timeline_write_svg(p, NULL), TG_OK);
    check_svg(p, NULL, 0);
    remove(p);
    tg_timeline_clear();
}

Test(timeline, long_recordings_are_downsampled_keeping_the_peak) {
    cr_assert_eq(tg_mem_reset_peak(TG_CPU), TG_OK);
    cr_assert_eq(tg_timeline_start(), TG_OK);
    tg_tensor *keep = NULL;
    for (int i = 0; i < 3000; i++) {
        tg_tensor *t = tg_zeros(TG_F32, TG_SHAPE(i == 1700 ? 100000 : 16 + i % 64));
        if (i == 1200) keep = t; /* a plateau for a while */
        else tg_release(t);
        if (i == 2200) tg_release(keep);
    }
    cr_assert_eq(tg_timeline_stop(), TG_OK);
    cr_assert_gt(tg_timeline_events(), 6000);
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    char p[128];
    tmp_path(p, sizeof p, "long.svg");
    cr_assert_eq(tg_timeline_write_svg(p, "3000 allocations"), TG_OK, "%s", tg_last_error());
    static const char *const must[] = {"drawn from"};
    svg_facts s = check_svg(p, must, 1);
    /* an area's path goes along its top edge and back along its bottom edge */
    cr_assert_leq(s.max_path_cmds, 2 * (2000 + 1), "%zu points in one path", s.max_path_cmds);
    char peak[64];
    snprintf(peak, sizeof peak, "peak live %.1f KiB", (double)m.peak_total / 1024);
    char *text = read_file(p);
    cr_assert(strstr(text, peak), "the exact peak is shown: %s", peak);
    const char *drawn = strstr(text, "drawn from ");
    cr_assert(drawn && atoi(drawn + 11) > 0 && atoi(drawn + 11) <= 2000);
    free(text);
    remove(p);
    tg_timeline_clear();
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < 300; i++) {
        tg_tensor *a = tg_ones(TG_F64, TG_SHAPE(8 + id, 4));
        tg_tensor *b = tg_scale(a, 2.0);
        tg_release(a);
        tg_release(b);
    }
    return NULL;
}

Test(timeline, several_threads) {
    cr_assert_eq(tg_mem_reset_peak(TG_CPU), TG_OK);
    cr_assert_eq(tg_timeline_start(), TG_OK);
    pthread_t th[4];
    for (int k = 0; k < 4; k++)
        cr_assert_eq(pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k), 0);
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    cr_assert_eq(tg_timeline_stop(), TG_OK);
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    cr_assert_eq(tg_timeline_events(), 1 + 4 * 300 * 4, "every allocation and free");
    char p[128];
    tmp_path(p, sizeof p, "threads.json");
    cr_assert_eq(tg_timeline_write_trace(p), TG_OK);
    trace_facts f = check_trace(p, NULL, 0);
    cr_assert_eq(f.peak_sum, m.peak_total);
    cr_assert_eq(f.last_sum, 0);
    cr_assert_eq(f.n_alloc_instants, 4 * 300 * 4);
    remove(p);
    tg_timeline_clear();
}

/* Runs a microbatch with the nth allocation failing; reports what happened. */
static void faulty_run(uint64_t nth, bool record, tg_status *st, uint64_t *fired,
                       uint64_t *n_alloc) {
    tg_mem_stats m0, m1;
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(32, 8), 9, 0.0, 1.0);
    cr_assert_not_null(w);
    tg_set_requires_grad(w, true);
    if (record) cr_assert_eq(tg_timeline_start(), TG_OK);
    tg_mem_get(TG_CPU, &m0);
    tg_clear_error();
    tg_fault_inject(nth, false);
    *st = microbatch(w, 11);
    *fired = tg_fault_inject(0, false);
    tg_mem_get(TG_CPU, &m1);
    *n_alloc = m1.n_alloc - m0.n_alloc;
    if (record) {
        cr_assert_eq(tg_timeline_stop(), TG_OK);
        tg_timeline_clear();
    }
    tg_release(w);
}

Test(timeline, recording_never_makes_an_op_fail_under_fault_injection) {
    tg_status st;
    uint64_t fired, total;
    faulty_run(0, false, &st, &fired, &total);
    cr_assert_eq(st, TG_OK);
    cr_assert_gt(total, 5);
    int failed = 0;
    for (uint64_t k = 1; k <= 3 * total + 10; k++) {
        tg_status a, b;
        uint64_t fa, fb, na, nb;
        faulty_run(k, false, &a, &fa, &na);
        faulty_run(k, true, &b, &fb, &nb);
        cr_assert_eq(a, b, "failure %llu: %s without recording, %s with",
                     (unsigned long long)k, tg_status_name(a), tg_status_name(b));
        cr_assert_eq(fa, fb, "failure %llu fired differently", (unsigned long long)k);
        cr_assert_eq(na, nb, "failure %llu: allocations differ", (unsigned long long)k);
        failed += a != TG_OK;
    }
    cr_assert_gt(failed, 5, "the injected failures reached the microbatch");
    cr_assert_eq(st, TG_OK);
}
