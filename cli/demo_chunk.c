/* cli/demo_chunk.c - `tapegrad demo chunk`: chunking the log-prob/entropy
 * computation along the sequence, composite vs fused, as the table RL
 * trainers publish (seq x chunk: time, peak bytes, saved bytes, vs unchunked).
 *
 * Contract:
 *  - Uses only the public API (<tapegrad.h>), as a user's program would.
 *  - For each seq (in the order given): seeded f32 logits (seq, vocab)
 *    requiring grad and targets (cli_lp_inputs); for each chunk size in
 *    ascending order (0, the unchunked baseline, is always run first; sizes
 *    >= seq are skipped: they are the unchunked computation), for composite
 *    then fused: cli_lp_steps (`reps` steps, more when they are short) with
 *    loss = -mean(logprob) -
 *    0.01 * mean(entropy) (entropy_grad on, the default) or -mean(logprob)
 *    (--entropy-grad off). One row per (seq, chunk, impl): median
 *    forward+backward time, exact peak bytes above the inputs and saved bytes
 *    after forward (largest over the reps), and the ratios of time and peak
 *    to the same impl's unchunked row.
 *  - Text output: what runs, the table (grouped by seq), what it shows at the
 *    largest seq, why. --json: exactly one JSON object per row per line on
 *    stdout, nothing else there.
 *  - Checks (exit 1, on stderr, saying which when false): a chunked composite
 *    row saves no more than the unchunked one, and peaks lower where that
 *    claim applies (peak_claim_applies: the chunk at most half the sequence
 *    and vocab >= CHUNK_PEAK_MIN_VOCAB; elsewhere the text says why it is not
 *    compared, and the JSON row has "peak_checked":false); a chunked fused
 *    row's peak and saved bytes are the unchunked ones within 64 bytes per
 *    row (+1% for the peak). These hold at every valid size. Times are
 *    reported, not checked.
 *  - --trace/--plot/--dot (cli/common.h): the timeline covers every row, with
 *    a step mark after each ("comp 1024/128", "fused 1024/-"); the graph is
 *    the loss of the composite row with the smallest chunk of the first seq
 *    (the unchunked one when no chunk is run), just before its first
 *    backward. Progress on stderr only when it is a terminal. Releases
 *    everything it makes; fails if objects stay alive.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"
#include "lpstep.h"
#include "options.h"

#define MIB (1024.0 * 1024.0)
#define ENTROPY_COEF 0.01
/* Below this vocabulary a row of logits (4 x vocab bytes) weighs no more than
 * the per-row bookkeeping of either path (targets, row statistics: tens of
 * bytes), so the [rows, vocab] tensors chunking bounds are not what sets the
 * peak. */
#define CHUNK_PEAK_MIN_VOCAB 16

/* Whether "a chunked composite row peaks lower than the unchunked one" is a
 * claim at this size. Chunked, the peak is the logits' gradient plus one
 * chunk's recomputed temporaries (several [chunk, vocab] tensors at once);
 * unchunked, several [seq, vocab] tensors. Chunks of more than half the
 * sequence can weigh as much as what they save. */
static bool peak_claim_applies(int64_t seq, int64_t chunk, int64_t vocab) {
    return chunk > 0 && 2 * chunk <= seq && vocab >= CHUNK_PEAK_MIN_VOCAB;
}

static const char *impl_name(tg_logprob_impl i) {
    return i == TG_LOGPROB_FUSED ? "fused" : "composite";
}

typedef struct chunk_row {
    int64_t seq, chunk;
    tg_logprob_impl impl;
    cli_lp_measure m; /* memory: largest over the steps; times: medians */
    double total_ms;
    int steps;        /* steps run (reps, or more when they are short) */
    double t_ratio, p_ratio; /* vs the same impl's unchunked row */
} chunk_row;

/* ---- options ------------------------------------------------------------------- */

cli_chunk_opts cli_chunk_defaults(void) {
    cli_chunk_opts o;
    memset(&o, 0, sizeof o);
    o.seq[0] = 256;
    o.seq[1] = 1024;
    o.n_seq = 2;
    o.chunk[0] = 0;
    o.chunk[1] = 128;
    o.chunk[2] = 512;
    o.n_chunk = 3;
    o.vocab = 32000;
    o.reps = 3;
    o.entropy_grad = true;
    o.seed = 11;
    return o;
}

static const cli_opt CHUNK_OPTS[] = {
    {.name = "--seq", CLI_INT_LIST(cli_chunk_opts, seq, n_seq, 1, CLI_LP_MAX_SEQ),
     .help = "rows (tokens) of the f32 logits"},
    {.name = "--vocab", CLI_INT(cli_chunk_opts, vocab, 2, CLI_LP_MAX_VOCAB), .meta = "V",
     .help = "vocabulary size"},
    /* one slot of the list is kept free for the 0 added after parsing */
    {.name = "--chunk", .kind = CLI_OPT_INT_LIST, .at = CLI_AT_ARRAY(cli_chunk_opts, chunk, int64_t),
     .count_at = CLI_AT(cli_chunk_opts, n_chunk, int), .max = CLI_CHUNK_MAX_LIST - 1, .lo = 0,
     .hi = CLI_LP_MAX_SEQ, .meta = "C,...",
     .help = "rows per chunk; 0 (unchunked) is always run"},
    {.name = "--reps", CLI_INT(cli_chunk_opts, reps, 1, 100), .meta = "R",
     .help = "steps per row, median time kept; short rows run more steps, up to 10R or "
             "0.3 s"},
    {.name = "--entropy-grad", CLI_SWITCH(cli_chunk_opts, entropy_grad),
     .help = "the entropy in the loss with coefficient 0.01 (on) or only logged (off)"},
    {.name = "--seed", CLI_SEED(cli_chunk_opts, seed), .help = "seed of logits and targets"},
    {.name = "--json", CLI_FLAG(cli_chunk_opts, json), .help = "one JSON object per row per line"},
    CLI_OUTPUT_OPTS(cli_chunk_opts, out, "the composite loss at the smallest chunk"),
};

const cli_command cli_chunk_command = {
    .name = "demo chunk",
    .opts = CHUNK_OPTS,
    .n_opts = CLI_N(CHUNK_OPTS),
    .about =
        "Log-prob and entropy of [seq, vocab] logits, forward + backward, computed all\n"
        "at once (chunk 0) or chunk rows at a time, by the composite path (generic ops;\n"
        "chunks are checkpoints recomputed in backward) and by the fused op. One row per\n"
        "seq x chunk x impl: median time, exact peak and saved bytes, and the time and\n"
        "memory ratios to the unchunked row.\n",
    .exit_status = CLI_DEMO_EXIT_STATUS,
};

void cli_chunk_help(void) {
    cli_chunk_opts d = cli_chunk_defaults();
    cli_help(stdout, &cli_chunk_command, &d);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int cli_chunk_parse(int argc, char **argv, cli_chunk_opts *o) {
    uint64_t given = 0;
    int rc = cli_options_parse(&cli_chunk_command, argc, argv, o, &given);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_option_given(&cli_chunk_command, given, "--chunk")) { /* ascending, distinct, 0 first */
        o->chunk[o->n_chunk++] = 0;
        qsort(o->chunk, (size_t)o->n_chunk, sizeof o->chunk[0], cmp_i64);
        int n = 0;
        for (int k = 0; k < o->n_chunk; k++)
            if (n == 0 || o->chunk[k] != o->chunk[n - 1])
                o->chunk[n++] = o->chunk[k];
        o->n_chunk = n;
    }
    for (int k = 0; rc == CLI_EXIT_OK && k < o->n_seq; k++)
        rc = cli_lp_check_size(o->seq[k], o->vocab, true);
    return rc;
}

/* ---- running ------------------------------------------------------------------------ */

typedef struct dot_user {
    const cli_outputs *out;
    const chunk_row *row; /* the row whose loss is drawn */
    bool done;            /* the graph was written */
} dot_user;

static int dot_hook(tg_tensor *loss, void *user) {
    dot_user *u = user;
    char name[96];
    snprintf(name, sizeof name, "loss (%s, seq %" PRId64 ", chunk %" PRId64 ")",
             impl_name(u->row->impl), u->row->seq, u->row->chunk);
    const char *names[1] = {name};
    u->done = true;
    return cli_outputs_dot(u->out, &loss, 1, names, NULL);
}

static int run_row(const cli_chunk_opts *o, int idx, int total, tg_tensor *logits,
                   tg_tensor *targets, chunk_row *r, dot_user *du) {
    cli_lp_config c = {r->impl, r->chunk, o->entropy_grad, ENTROPY_COEF, TG_CPU};
    char label[96];
    snprintf(label, sizeof label, "[%d/%d] %s seq=%" PRId64 " chunk=%" PRId64, idx + 1, total,
             impl_name(r->impl), r->seq, r->chunk);
    return cli_lp_steps("demo chunk", label, logits, targets, &c, (int)o->reps, &r->m,
                        &r->total_ms, &r->steps, du->row == r && du->out->dot ? dot_hook : NULL, du, NULL, NULL,
                        0);
}

/* ---- output ------------------------------------------------------------------------ */

static double mib(size_t b) { return (double)b / MIB; }

static void print_json(const cli_chunk_opts *o, const chunk_row *r) {
    cli_json j = cli_json_begin(stdout);
    cli_json_str(&j, "demo", "chunk");
    cli_json_int(&j, "seq", r->seq);
    cli_json_int(&j, "vocab", o->vocab);
    cli_json_int(&j, "chunk", r->chunk);
    cli_json_str(&j, "impl", impl_name(r->impl));
    cli_json_bool(&j, "entropy_grad", o->entropy_grad);
    cli_json_int(&j, "steps", r->steps);
    cli_json_num(&j, "time_ms", "%.4f", r->total_ms);
    cli_json_num(&j, "fwd_ms", "%.4f", r->m.fwd_ms);
    cli_json_num(&j, "bwd_ms", "%.4f", r->m.bwd_ms);
    cli_json_uint(&j, "peak_bytes", r->m.peak_bytes);
    cli_json_uint(&j, "saved_bytes", r->m.saved_bytes);
    cli_json_num(&j, "time_vs_unchunked", "%.4f", r->t_ratio);
    cli_json_num(&j, "peak_vs_unchunked", "%.4f", r->p_ratio);
    cli_json_bool(&j, "peak_checked", r->impl == TG_LOGPROB_COMPOSITE &&
                                          peak_claim_applies(r->seq, r->chunk, o->vocab));
    cli_json_end(&j);
}

static void print_table(const chunk_row *rows, int n) {
    printf("%7s %6s  %-9s %10s %9s %10s %9s %10s\n", "seq", "chunk", "impl", "time ms",
           "vs unch.", "peak MiB", "vs unch.", "saved MiB");
    for (int i = 0; i < n; i++) {
        const chunk_row *r = &rows[i];
        if (i > 0 && r->seq != rows[i - 1].seq)
            putchar('\n');
        char chunk[24];
        if (r->chunk)
            snprintf(chunk, sizeof chunk, "%" PRId64, r->chunk);
        else
            snprintf(chunk, sizeof chunk, "-");
        printf("%7" PRId64 " %6s  %-9s %10.1f %8.2fx %10.1f %8.2fx %10.1f\n", r->seq, chunk,
               impl_name(r->impl), r->total_ms, r->t_ratio, mib(r->m.peak_bytes), r->p_ratio,
               mib(r->m.saved_bytes));
    }
    printf("(chunk -: unchunked; vs unch.: this row / the same impl's unchunked row;\n"
           " peak: the library's exact peak above the logits and targets during\n"
           " forward + backward; saved: bytes held for backward right after forward)\n");
}

static const chunk_row *find(const chunk_row *rows, int n, int64_t seq, int64_t chunk,
                             tg_logprob_impl impl) {
    for (int i = 0; i < n; i++)
        if (rows[i].seq == seq && rows[i].chunk == chunk && rows[i].impl == impl)
            return &rows[i];
    return NULL;
}

/* "875.0 MiB", "12.3 KiB", "764 B": small runs do not read as 0.0 MiB. */
static const char *human(char *buf, size_t b) {
    if ((double)b >= MIB)
        snprintf(buf, 32, "%.1f MiB", (double)b / MIB);
    else if (b >= 1024)
        snprintf(buf, 32, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, 32, "%zu B", b);
    return buf;
}

/* The composite rows whose peak is not compared with the unchunked one
 * (peak_claim_applies), and why. Nothing when every row is compared. */
static void print_not_compared(const cli_chunk_opts *o, const chunk_row *rows, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const chunk_row *r = &rows[i];
        if (r->impl != TG_LOGPROB_COMPOSITE || r->chunk == 0 ||
            peak_claim_applies(r->seq, r->chunk, o->vocab))
            continue;
        if (k++ == 0)
            printf("\nPeak not compared with the unchunked row (saved bytes still are):\n");
        printf("  seq %" PRId64 ", chunk %" PRId64 ": ", r->seq, r->chunk);
        if (o->vocab < CHUNK_PEAK_MIN_VOCAB)
            printf("vocab %" PRId64 " < %d: a row of logits weighs no more than the\n"
                   "    per-row bookkeeping (targets, row statistics), so bounding the\n"
                   "    [rows, vocab] tensors does not set the peak.\n",
                   o->vocab, CHUNK_PEAK_MIN_VOCAB);
        else
            printf("the chunk is more than half the sequence: the logits' gradient\n"
                   "    plus one chunk's recomputed temporaries (several [chunk, vocab]\n"
                   "    tensors) can weigh as much as the unchunked path's.\n");
    }
}

static void print_findings(const cli_chunk_opts *o, const chunk_row *rows, int n) {
    int64_t seq = rows[n - 1].seq; /* the last seq group */
    const chunk_row *c0 = find(rows, n, seq, 0, TG_LOGPROB_COMPOSITE);
    const chunk_row *f0 = find(rows, n, seq, 0, TG_LOGPROB_FUSED);
    const chunk_row *cbest = NULL;
    double fmin = 0.0, fmax = 0.0;
    bool any = false;
    for (int i = 0; i < n; i++) {
        const chunk_row *r = &rows[i];
        if (r->seq != seq || r->chunk == 0)
            continue;
        if (r->impl == TG_LOGPROB_COMPOSITE && (!cbest || r->p_ratio < cbest->p_ratio))
            cbest = r;
        if (r->impl == TG_LOGPROB_FUSED) {
            fmin = any ? (r->t_ratio < fmin ? r->t_ratio : fmin) : r->t_ratio;
            fmax = any ? (r->t_ratio > fmax ? r->t_ratio : fmax) : r->t_ratio;
            any = true;
        }
    }
    printf("\nWhat the table shows at seq %" PRId64 " (vocab %" PRId64 ", %s)\n", seq, o->vocab,
           o->entropy_grad ? "entropy in the loss" : "entropy only logged");
    char b1[32], b2[32], b3[32], b4[32];
    if (cbest && c0 && cbest->p_ratio < 1.0)
        printf("  composite: chunks of %" PRId64 " rows cut its peak from %s to %s "
               "(%.2fx)\n             and its saved bytes from %s to %s; a step "
               "takes %.2fx the\n             unchunked time.\n",
               cbest->chunk, human(b1, c0->m.peak_bytes), human(b2, cbest->m.peak_bytes),
               cbest->p_ratio, human(b3, c0->m.saved_bytes), human(b4, cbest->m.saved_bytes),
               cbest->t_ratio);
    else if (cbest && c0)
        printf("  composite: at this size no chunk size lowers its peak (%s unchunked,\n"
               "             %s with chunks of %" PRId64 "); chunking only cuts its saved\n"
               "             bytes, from %s to %s (see below).\n",
               human(b1, c0->m.peak_bytes), human(b2, cbest->m.peak_bytes), cbest->chunk,
               human(b3, c0->m.saved_bytes), human(b4, cbest->m.saved_bytes));
    if (cbest && c0 && cbest->t_ratio < 1.0 && cbest->p_ratio < 1.0)
        printf("             (Faster, not slower, here: one chunk's temporaries, %.1f MiB each,\n"
               "             stay in the CPU's caches, while the unchunked ones, %.1f MiB\n"
               "             each, go through DRAM at every op. At a trainer's sizes a chunk\n"
               "             is hundreds of MiB and the recomputation shows.)\n",
               (double)cbest->chunk * (double)o->vocab * 4.0 / MIB,
               (double)seq * (double)o->vocab * 4.0 / MIB);
    if (any && f0)
        printf("  fused:     peak %s at every chunk size; a step takes %.2fx to "
               "%.2fx\n             the unchunked time.\n",
               human(b1, f0->m.peak_bytes), fmin, fmax);
    if (c0 && f0 && f0->total_ms > 0.0 && c0->m.peak_bytes > 0)
        printf("  unchunked, fused vs composite: %.1fx faster, %.2fx the peak.\n",
               c0->total_ms / f0->total_ms,
               (double)f0->m.peak_bytes / (double)c0->m.peak_bytes);
    printf(
        "\nWhy\n"
        "  The composite path materialises [rows, vocab] tensors (log_softmax, softmax,\n"
        "  products) and, unchunked, keeps them for backward: its peak grows with\n"
        "  seq x vocab times several. Chunked, each chunk is a checkpoint: forward keeps\n"
        "  only a reference to the logits, and backward recomputes the chunk's forward\n"
        "  with grad on before going back through it. Memory is bounded by one chunk's\n"
        "  temporaries plus the logits' gradient; the price is a second forward and\n"
        "  many more, smaller ops: the time ratio above. RL trainers report the same\n"
        "  trade at their sizes: tens of GB saved, a step 2.4-4.5x slower; how much\n"
        "  slower depends on the machine and on how much of a chunk stays in cache.\n"
        "  The fused op has no [seq, vocab] temporaries to bound: forward reads the\n"
        "  logits once and keeps 16-24 bytes per row, backward reads them once and\n"
        "  writes the gradient. Chunking only changes the order in which rows are\n"
        "  visited (the results are bitwise identical), so it costs nothing, and its\n"
        "  peak is the gradient, which every implementation must produce.\n");
    print_not_compared(o, rows, n);
}

/* The claims of the demo; NULL when they hold, else what failed (in buf). */
static const char *check(const chunk_row *rows, int n, int64_t vocab, char *buf, size_t len) {
    for (int i = 0; i < n; i++) {
        const chunk_row *r = &rows[i], *z = find(rows, n, r->seq, 0, r->impl);
        if (r->chunk == 0 || !z)
            continue;
        double slack = 64.0 * (double)r->seq;
        if (r->impl == TG_LOGPROB_COMPOSITE &&
            ((peak_claim_applies(r->seq, r->chunk, vocab) &&
              r->m.peak_bytes >= z->m.peak_bytes) ||
             r->m.saved_bytes > z->m.saved_bytes)) {
            snprintf(buf, len, "composite seq %" PRId64 " chunk %" PRId64 ": peak %zu, saved %zu "
                     "bytes; unchunked %zu, %zu (expected a lower peak and no more saved)",
                     r->seq, r->chunk, r->m.peak_bytes, r->m.saved_bytes, z->m.peak_bytes,
                     z->m.saved_bytes);
            return buf;
        }
        if (r->impl == TG_LOGPROB_FUSED &&
            ((double)r->m.peak_bytes > 1.01 * (double)z->m.peak_bytes + slack ||
             (double)r->m.saved_bytes > (double)z->m.saved_bytes + slack)) {
            snprintf(buf, len, "fused seq %" PRId64 " chunk %" PRId64 ": peak %zu, saved %zu "
                     "bytes; unchunked %zu, %zu (expected the same)", r->seq, r->chunk,
                     r->m.peak_bytes, r->m.saved_bytes, z->m.peak_bytes, z->m.saved_bytes);
            return buf;
        }
    }
    return NULL;
}

int cli_chunk_run(cli_chunk_opts *o) {
    FILE *note = o->json ? stderr : stdout;
    /* the rows, in the order they run and print */
    int total = 0;
    chunk_row *rows = calloc((size_t)o->n_seq * (size_t)o->n_chunk * 2, sizeof *rows);
    tg_tensor *logits = NULL, *targets = NULL;
    dot_user du = {&o->out, NULL, false};
    int rc = CLI_EXIT_FAIL;
    if (!rows) {
        cli_fail("demo chunk", "out of memory");
        goto out;
    }
    for (int a = 0; a < o->n_seq; a++)
        for (int k = 0; k < o->n_chunk; k++) {
            if (o->chunk[k] != 0 && o->chunk[k] >= o->seq[a])
                continue;
            for (int m = 0; m < 2; m++) {
                chunk_row *r = &rows[total++];
                r->seq = o->seq[a];
                r->chunk = o->chunk[k];
                r->impl = m == 0 ? TG_LOGPROB_COMPOSITE : TG_LOGPROB_FUSED;
            }
        }
    du.row = &rows[0];
    for (int i = 0; i < total && rows[i].seq == rows[0].seq; i++)
        if (rows[i].impl == TG_LOGPROB_COMPOSITE && rows[i].chunk > 0) {
            du.row = &rows[i];
            break;
        }
    if ((rc = cli_outputs_begin(&o->out)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_FAIL;
    if (!o->json) {
        printf("Forward + backward of the log-prob and entropy of seeded f32 logits\n"
               "[seq, vocab = %" PRId64 "], loss = %s,\n"
               "computed all at once or chunk rows at a time, by the composite path\n"
               "(generic ops) and by the fused op. Times: median of %" PRId64 " or more steps\n"
               "(up to %d while they take less than %.1f s in all).\n\n",
               o->vocab,
               o->entropy_grad ? "-mean(logprob) - 0.01 * mean(entropy)" : "-mean(logprob)",
               o->reps, (int)o->reps * CLI_LP_MORE, CLI_LP_SHORT_S);
        fflush(stdout);
    }
    for (int i = 0; i < total; i++) {
        chunk_row *r = &rows[i];
        if (i == 0 || r->seq != rows[i - 1].seq) {
            tg_release(targets);
            tg_release(logits);
            logits = targets = NULL;
            cli_progress("making the logits [%" PRId64 ", %" PRId64 "]", r->seq, o->vocab);
            if (cli_lp_inputs("demo chunk", r->seq, o->vocab, o->seed, &logits, &targets) !=
                CLI_EXIT_OK)
                goto out;
        }
        if (run_row(o, i, total, logits, targets, r, &du) != CLI_EXIT_OK)
            goto out;
        const chunk_row *z = r->chunk ? find(rows, i, r->seq, 0, r->impl) : r;
        r->t_ratio = z && z->total_ms > 0.0 ? r->total_ms / z->total_ms : 1.0;
        r->p_ratio = z && z->m.peak_bytes ? (double)r->m.peak_bytes / (double)z->m.peak_bytes
                                          : 1.0;
        char label[48];
        if (r->chunk)
            snprintf(label, sizeof label, "%s %" PRId64 "/%" PRId64,
                     r->impl == TG_LOGPROB_FUSED ? "fused" : "comp", r->seq, r->chunk);
        else
            snprintf(label, sizeof label, "%s %" PRId64 "/-",
                     r->impl == TG_LOGPROB_FUSED ? "fused" : "comp", r->seq);
        cli_outputs_mark(&o->out, label);
        if (o->json) {
            cli_progress_clear();
            print_json(o, r);
            fflush(stdout);
        }
    }
    cli_progress_clear();
    char buf[256];
    const char *bad = check(rows, total, o->vocab, buf, sizeof buf);
    if (!o->json) {
        print_table(rows, total);
        print_findings(o, rows, total);
    }
    fflush(stdout);
    if (bad) {
        cli_fail("demo chunk", "FAILED: %s", bad);
        goto out;
    }
    rc = CLI_EXIT_OK;
out:
    if (du.done && rc == CLI_EXIT_OK) {
        if (!o->json)
            putchar('\n');
        cli_outputs_dot_note(&o->out, note);
    }
    tg_release(targets);
    tg_release(logits);
    free(rows);
    char title[120];
    snprintf(title, sizeof title, "tapegrad demo chunk, vocab %" PRId64 ": step marks "
             "\"impl seq/chunk\" (comp = composite)", o->vocab);
    return cli_demo_end("demo chunk", &o->out, title, rc, note);
}
