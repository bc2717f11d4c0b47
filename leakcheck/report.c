/* leakcheck/report.c - leak reports as text and JSON, the test assertion
 * (tg_leak_check) and the teardown check (tg_shutdown). */
#include <stdlib.h>
#include <string.h>

#include "leakcheck_internal.h"

void tg_leak_report_free(tg_leak_report *r) {
    if (!r) return;
    free(r->roots);
    free(r);
}

int64_t tg_leak_report_nroots(const tg_leak_report *r) { return r ? r->nroots : 0; }
const tg_leak_root *tg_leak_report_root(const tg_leak_report *r, int64_t i) {
    return r && i >= 0 && i < r->nroots ? &r->roots[i] : NULL;
}
int64_t tg_leak_report_outlived_nodes(const tg_leak_report *r) { return r ? r->outlived : 0; }
uint64_t tg_leak_report_kept_bytes(const tg_leak_report *r) { return r ? r->kept_bytes : 0; }
int64_t tg_leak_report_unreachable(const tg_leak_report *r) { return r ? r->unreachable : 0; }
double tg_leak_report_growth(const tg_leak_report *r, int *steps) {
    if (steps) *steps = r ? r->growth_steps : 0;
    return r ? r->growth : 0.0;
}

/* Bytes for people: MiB, KiB or B so that small amounts do not read as 0. */
#define B(x) tg__fmt_bytes((char[32]){0}, 32, (double)(x))

/* The text report (malloc'd; NULL on NOMEM), also used as an error message.
 * The buffer is sized from the report (the paths, the creation sites and the
 * fixed text around them); tg__appendf keeps it bounded all the same. */
static char *report_text(const tg_leak_report *r) {
    size_t cap = 4096 + (size_t)r->n_lines * (sizeof r->lines[0] + 8);
    for (int64_t i = 0; i < r->nroots; i++)
        cap += 600 + strlen(r->roots[i].path) + strlen(r->roots[i].file ? r->roots[i].file : "?");
    char *b = malloc(cap);
    if (!b) return NULL;
    b[0] = '\0';
    size_t k = 0;
#define OUT(...) (k = tg__appendf(b, cap, k, __VA_ARGS__))
    if (!r->nroots && !r->unreachable) {
        OUT("no graph node from an earlier step is alive; no reference cycle (step %llu)",
            (unsigned long long)r->step);
    } else {
        if (r->nroots)
            OUT("%lld graph node%s from earlier steps still alive (step %llu), keeping %s, "
                "held by %lld root%s:\n",
                (long long)r->outlived, r->outlived == 1 ? "" : "s", (unsigned long long)r->step,
                B(r->kept_bytes), (long long)r->nroots, r->nroots == 1 ? "" : "s");
        for (int64_t i = 0; i < r->nroots; i++) {
            const tg_leak_root *q = &r->roots[i];
            OUT("  %s\n", q->path);
            char shared[64] = "", label[sizeof q->step_label + 8] = "";
            if (q->shared_bytes)
                tg__appendf(shared, sizeof shared, 0, " (%s shared with other roots)",
                            B(q->shared_bytes));
            if (q->step_label[0])
                tg__appendf(label, sizeof label, 0, " (\"%s\")", q->step_label);
            OUT("      root created at %s:%d in step %llu%s; %lld node%s (%s); keeps %s%s\n",
                q->file ? q->file : "?", q->line, (unsigned long long)q->step, label,
                (long long)q->nodes, q->nodes == 1 ? "" : "s",
                q->nodes_with_saved
                    ? "saved tensors still live: backward never ran through them"
                    : "saved tensors already freed: only the node chain and its inputs",
                B(q->bytes), shared);
            if (q->saved_bytes) OUT("      of which %s held as saved tensors\n", B(q->saved_bytes));
        }
        if (r->nroots)
            OUT("  fix: keep a detached copy for logging (tg_detach, or tg_item for a number), "
                "or release the tensor once the step is done\n");
        if (r->unreachable) {
            OUT("%lld object%s alive but reachable from no reference held by the program "
                "(a reference cycle):\n", (long long)r->unreachable, r->unreachable == 1 ? "" : "s");
            for (int i = 0; i < r->n_lines; i++) OUT("  %s\n", r->lines[i]);
        }
    }
    if (r->growth_steps)
        OUT("%slive memory grew at each of the last %d steps: +%s per step\n",
            (r->nroots || r->unreachable) ? "" : "\n", r->growth_steps, B(r->growth));
#undef OUT
    return b;
}

tg_status tg_leak_report_print(FILE *f, const tg_leak_report *r) {
    if (tg__null_arg(f, "tg_leak_report_print", "f") ||
        tg__null_arg(r, "tg_leak_report_print", "r"))
        return tg_last_status();
    char *t = report_text(r);
    if (!t) return tg__set_error(TG_ERR_NOMEM, "tg_leak_report_print: out of memory");
    int rc = fprintf(f, "%s%s", t, t[0] && t[strlen(t) - 1] == '\n' ? "" : "\n");
    free(t);
    if (fflush(f) != 0) rc = -1;
    return rc < 0 || ferror(f) ? tg__set_error(TG_ERR_IO, "tg_leak_report_print: write failed")
                               : TG_OK;
}

/* The inside of a JSON string: '"', '\\' and control characters escaped,
 * invalid UTF-8 as '?' (JSON text is UTF-8, RFC 8259 section 8.1). */
static void json_chars(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = tg__utf8_len(p);
        if (n == 0) {
            fputc('?', f);
            p++;
        } else if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        } else {
            unsigned char c = *p++;
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    json_chars(f, s);
    fputc('"', f);
}

tg_status tg_leak_report_json(FILE *f, const tg_leak_report *r) {
    if (tg__null_arg(f, "tg_leak_report_json", "f") ||
        tg__null_arg(r, "tg_leak_report_json", "r"))
        return tg_last_status();
    fprintf(f, "{\"step\":%llu,\"outlived_nodes\":%lld,\"kept_bytes\":%llu,\"unreachable\":%lld,"
            "\"growth_bytes_per_step\":%.0f,\"growth_steps\":%d,\"roots\":[",
            (unsigned long long)r->step, (long long)r->outlived,
            (unsigned long long)r->kept_bytes, (long long)r->unreachable, r->growth,
            r->growth_steps);
    for (int64_t i = 0; i < r->nroots; i++) {
        const tg_leak_root *q = &r->roots[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, q->name);
        fprintf(f, ",\"shape\":");
        json_str(f, q->shape);
        fprintf(f, ",\"site\":\"");
        json_chars(f, q->file ? q->file : "?");
        fprintf(f, ":%d\"", q->line);
        fprintf(f, ",\"step_label\":");
        json_str(f, q->step_label);
        fprintf(f, ",\"step\":%llu,\"nodes\":%lld,\"nodes_with_saved\":%lld,\"bytes\":%llu,"
                "\"shared_bytes\":%llu,\"saved_bytes\":%llu,\"path\":",
                (unsigned long long)q->step, (long long)q->nodes, (long long)q->nodes_with_saved,
                (unsigned long long)q->bytes, (unsigned long long)q->shared_bytes,
                (unsigned long long)q->saved_bytes);
        json_str(f, q->path);
        fputc('}', f);
    }
    fprintf(f, "],\"unreachable_objects\":[");
    for (int i = 0; i < r->n_lines; i++) {
        if (i) fputc(',', f);
        json_str(f, r->lines[i]);
    }
    fprintf(f, "]}");
    return fflush(f) != 0 || ferror(f)
               ? tg__set_error(TG_ERR_IO, "tg_leak_report_json: write failed")
               : TG_OK;
}

/* The text report of this thread's last tg_leak_check ("" when it passed). */
static _Thread_local char tl_check_report[4096];

tg_status tg_leak_check(void) {
    tl_check_report[0] = '\0';
    tg_leak_report *r = tg_leak_scan();
    if (!r) return tg_last_status();
    tg_status st = TG_OK;
    if (r->nroots || r->unreachable) {
        char *t = report_text(r);
        tg__appendf(tl_check_report, sizeof tl_check_report, 0, "%s",
                    t ? t : "graph nodes from earlier steps are alive");
        free(t);
        st = TG_ERR_LEAK; /* a finding, not a failed call: the thread's error is untouched */
    }
    tg_leak_report_free(r);
    return st;
}

const char *tg_leak_check_report(void) { return tl_check_report; }

int64_t tg_shutdown(FILE *f) {
    if (!f) f = stderr;
    tg_live_counts c = tg_live();
    int64_t n = c.tensors + c.storages + c.nodes;
    if (n == 0) return 0;
    fprintf(f, "tapegrad: %lld tensor%s, %lld storage%s and %lld graph node%s still alive:\n",
            (long long)c.tensors, c.tensors == 1 ? "" : "s", (long long)c.storages,
            c.storages == 1 ? "" : "s", (long long)c.nodes, c.nodes == 1 ? "" : "s");
    tg__reg_dump(f);
    return n;
}
