/* cli/demo_entropy.c - `tapegrad demo entropy`: an entropy that is only
 * logged (its coefficient in the loss is 0) but computed with its gradient
 * recorded makes autograd keep [seq, vocab] activations for nothing; the fix
 * is to not record it. Measured on the composite path (generic ops) and on
 * the fused op.
 *
 * Contract:
 *  - Uses only the public API (<tapegrad.h>), as a user's program would.
 *  - Seeded f32 logits (seq, vocab) requiring grad and targets (cli_lp_inputs).
 *    Four configurations, in this order:
 *      (a) composite, entropy recorded (entropy_grad on: the bug)
 *      (b) composite, entropy_grad off (the fix: the entropy under no-grad)
 *      (c) fused, entropy_grad on
 *      (d) fused, entropy_grad off
 *    Each runs cli_lp_steps (`reps` steps, more when they are short): loss =
 *    -mean(logprob), minus
 *    0 * mean(entropy) when the entropy is recorded; the mean entropy is
 *    logged in every case. Reported per configuration: peak bytes above the
 *    inputs and saved bytes right after forward (the largest over the reps;
 *    the accounting is exact), bytes the forward left live, forward/backward/
 *    total time (medians), the loss, the mean entropy, and the largest
 *    difference of the logits' gradient (sampled rows) from (a)'s, relative
 *    to (a)'s largest entry.
 *  - Text output: what runs, the table, the differences, what is saved and
 *    why, the fix in tapegrad and PyTorch terms. --json: exactly one JSON
 *    object per configuration per line on stdout, nothing else there.
 *  - Checks what it claims and fails (exit 1, saying which on stderr)
 *    otherwise; the claims hold at every valid size:
 *    saved(a) - saved(b) >= 2 x seq x vocab x 4 bytes; saved(c) - saved(d) at
 *    most 64 bytes per row; peak(b) < peak(a); the four losses, entropies and
 *    gradients agree (relative 1e-4).
 *  - --trace/--plot/--dot (cli/common.h): the timeline covers the inputs and
 *    all four configurations, with a step mark "(a)".."(d)" after each; the
 *    graph is (a)'s loss just before its first backward. Progress on stderr
 *    only when it is a terminal. Releases everything it makes; fails if
 *    objects stay alive.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"
#include "lpstep.h"
#include "options.h"

#define MIB (1024.0 * 1024.0)
#define NCONF 4
#define NSAMPLE 32    /* rows of the gradient compared across configurations */
#define REL_TOL 1e-4

typedef struct ent_conf {
    const char *tag;  /* "a" */
    const char *what; /* "composite, entropy recorded" */
    tg_logprob_impl impl;
    bool entropy_grad;
} ent_conf;

static const ent_conf CONF[NCONF] = {
    {"a", "composite, entropy recorded", TG_LOGPROB_COMPOSITE, true},
    {"b", "composite, entropy_grad off", TG_LOGPROB_COMPOSITE, false},
    {"c", "fused, entropy_grad on", TG_LOGPROB_FUSED, true},
    {"d", "fused, entropy_grad off", TG_LOGPROB_FUSED, false},
};

typedef struct ent_result {
    cli_lp_measure m; /* memory: largest over the steps; times: medians */
    double total_ms;
    int steps;        /* steps run (reps, or more when they are short) */
    double grad_diff; /* max |g - g(a)| / max |g(a)| over the sampled rows */
} ent_result;

/* ---- options ------------------------------------------------------------------- */

cli_entropy_opts cli_entropy_defaults(void) {
    cli_entropy_opts o;
    memset(&o, 0, sizeof o);
    o.seq = 1024;
    o.vocab = 32000;
    o.reps = 3;
    o.seed = 7;
    return o;
}

static const cli_opt ENTROPY_OPTS[] = {
    {.name = "--seq", CLI_INT(cli_entropy_opts, seq, 1, CLI_LP_MAX_SEQ),
     .help = "rows (tokens) of the f32 logits"},
    {.name = "--vocab", CLI_INT(cli_entropy_opts, vocab, 2, CLI_LP_MAX_VOCAB), .meta = "V",
     .help = "vocabulary size"},
    {.name = "--reps", CLI_INT(cli_entropy_opts, reps, 1, 100), .meta = "R",
     .help = "steps per configuration, median time kept; short ones run more steps, up to "
             "10R or 0.3 s"},
    {.name = "--seed", CLI_SEED(cli_entropy_opts, seed), .help = "seed of logits and targets"},
    {.name = "--json", CLI_FLAG(cli_entropy_opts, json),
     .help = "one JSON object per configuration per line"},
    CLI_OUTPUT_OPTS(cli_entropy_opts, out, "(a)'s loss just before backward"),
};

const cli_command cli_entropy_command = {
    .name = "demo entropy",
    .opts = ENTROPY_OPTS,
    .n_opts = CLI_N(ENTROPY_OPTS),
    .about =
        "A loss computes the entropy of each token's distribution only to log it (its\n"
        "coefficient is 0), but with its gradient recorded: autograd keeps [seq, vocab]\n"
        "activations for a backward that contributes nothing. Four configurations:\n"
        "(a) composite ops, entropy recorded (the bug), (b) composite, entropy_grad off\n"
        "(the fix), (c) fused op, entropy_grad on, (d) fused, entropy_grad off. For\n"
        "each: the exact peak bytes above the inputs, the bytes saved for backward, and\n"
        "the forward+backward time.\n",
    .exit_status = CLI_DEMO_EXIT_STATUS,
};

void cli_entropy_help(void) {
    cli_entropy_opts d = cli_entropy_defaults();
    cli_help(stdout, &cli_entropy_command, &d);
}

int cli_entropy_parse(int argc, char **argv, cli_entropy_opts *o) {
    int rc = cli_options_parse(&cli_entropy_command, argc, argv, o, NULL);
    return rc != CLI_EXIT_OK ? rc : cli_lp_check_size(o->seq, o->vocab, true);
}

/* ---- running ------------------------------------------------------------------------ */

typedef struct dot_user {
    const cli_outputs *out;
    bool done; /* the graph was written */
} dot_user;

static int dot_hook(tg_tensor *loss, void *user) {
    dot_user *u = user;
    if (u->done)
        return CLI_EXIT_OK;
    u->done = true;
    const char *names[1] = {"loss (a): composite, entropy recorded"};
    return cli_outputs_dot(u->out, &loss, 1, names, NULL);
}

static int run_conf(const cli_entropy_opts *o, int k, tg_tensor *logits, tg_tensor *targets,
                    const int64_t *rows, int nrows, float *gref, float *gcur, dot_user *du,
                    ent_result *r) {
    cli_lp_config c = {CONF[k].impl, 0, CONF[k].entropy_grad, 0.0, TG_CPU};
    char label[80];
    snprintf(label, sizeof label, "[%d/%d] (%s) %s", k + 1, NCONF, CONF[k].tag, CONF[k].what);
    memset(r, 0, sizeof *r);
    int rc = cli_lp_steps("demo entropy", label, logits, targets, &c, (int)o->reps, &r->m,
                          &r->total_ms, &r->steps, k == 0 && du->out->dot ? dot_hook : NULL, du,
                          k == 0 ? gref : gcur, rows, nrows);
    if (rc == CLI_EXIT_OK) {
        double gmax = 0.0, dmax = 0.0;
        for (int64_t j = 0; k > 0 && j < (int64_t)nrows * o->vocab; j++) {
            gmax = fmax(gmax, fabs((double)gref[j]));
            dmax = fmax(dmax, fabs((double)gcur[j] - (double)gref[j]));
        }
        r->grad_diff = gmax > 0.0 ? dmax / gmax : dmax;
    }
    return rc;
}

/* ---- output ---------------------------------------------------------------------------- */

static double mib(size_t b) { return (double)b / MIB; }

static void print_json(const cli_entropy_opts *o, int k, const ent_result *r) {
    cli_json j = cli_json_begin(stdout);
    cli_json_str(&j, "demo", "entropy");
    cli_json_str(&j, "config", CONF[k].tag);
    cli_json_str(&j, "what", CONF[k].what);
    cli_json_str(&j, "impl", CONF[k].impl == TG_LOGPROB_FUSED ? "fused" : "composite");
    cli_json_bool(&j, "entropy_grad", CONF[k].entropy_grad);
    cli_json_int(&j, "seq", o->seq);
    cli_json_int(&j, "vocab", o->vocab);
    cli_json_int(&j, "steps", r->steps);
    cli_json_uint(&j, "peak_bytes", r->m.peak_bytes);
    cli_json_uint(&j, "saved_bytes", r->m.saved_bytes);
    cli_json_uint(&j, "held_bytes", r->m.held_bytes);
    cli_json_num(&j, "fwd_ms", "%.4f", r->m.fwd_ms);
    cli_json_num(&j, "bwd_ms", "%.4f", r->m.bwd_ms);
    cli_json_num(&j, "time_ms", "%.4f", r->total_ms);
    cli_json_num(&j, "loss", "%.8g", r->m.loss);
    cli_json_num(&j, "entropy_mean", "%.8g", r->m.entropy_mean);
    cli_json_num(&j, "grad_rel_diff", "%.3g", r->grad_diff);
    cli_json_end(&j);
}

static void print_table(const cli_entropy_opts *o, const ent_result *res) {
    const double nv = (double)o->seq * (double)o->vocab * 4.0;
    printf("%-31s %8s %9s %4s %7s %7s %8s\n", "configuration", "peak MiB", "saved MiB",
           "xNV", "fwd ms", "bwd ms", "total ms");
    for (int k = 0; k < NCONF; k++) {
        const ent_result *r = &res[k];
        char label[64];
        snprintf(label, sizeof label, "(%s) %s", CONF[k].tag, CONF[k].what);
        printf("%-31s %8.1f %9.1f %4.2f %7.1f %7.1f %8.1f\n", label, mib(r->m.peak_bytes),
               mib(r->m.saved_bytes), (double)r->m.saved_bytes / nv, r->m.fwd_ms, r->m.bwd_ms,
               r->total_ms);
    }
    printf("(xNV: saved bytes in units of one [seq, vocab] f32 tensor, %.1f MiB)\n", nv / MIB);
}

static double pct(size_t from, size_t to) {
    return from ? 100.0 * ((double)to - (double)from) / (double)from : 0.0;
}

static void print_findings(const cli_entropy_opts *o, const ent_result *r) {
    const double nv = (double)o->seq * (double)o->vocab * 4.0;
    const double dcomp = (double)r[0].m.saved_bytes - (double)r[1].m.saved_bytes;
    const double dfused = (double)r[2].m.saved_bytes - (double)r[3].m.saved_bytes;
    double gd = fmax(r[1].grad_diff, fmax(r[2].grad_diff, r[3].grad_diff));
    printf("\nWhat turning the entropy's gradient off changes\n");
    printf("  composite: saved %.1f -> %.1f MiB (-%.1f MiB = %.2f x [seq, vocab] f32),\n"
           "             peak %.1f -> %.1f MiB (%+.0f%%), time %.1f -> %.1f ms\n",
           mib(r[0].m.saved_bytes), mib(r[1].m.saved_bytes), dcomp / MIB, dcomp / nv,
           mib(r[0].m.peak_bytes), mib(r[1].m.peak_bytes),
           pct(r[0].m.peak_bytes, r[1].m.peak_bytes), r[0].total_ms, r[1].total_ms);
    printf("  fused:     saved -%.0f bytes (%.0f bytes per row), peak %.1f -> %.1f MiB,\n"
           "             time %.1f -> %.1f ms\n",
           dfused, dfused / (double)o->seq, mib(r[2].m.peak_bytes), mib(r[3].m.peak_bytes),
           r[2].total_ms, r[3].total_ms);
    printf("  unchanged: the loss (%.6f), the logged entropy (%.6f) and the\n"
           "             gradient of the logits (largest difference from (a): %.1e of\n"
           "             its largest entry)\n",
           r[0].m.loss, r[0].m.entropy_mean, gd);
}

static void print_explanation(const cli_entropy_opts *o, const ent_result *r) {
    const double nvm = (double)o->seq * (double)o->vocab * 4.0 / MIB;
    printf(
        "\nWhat is saved, and why\n"
        "  (a) The composite path builds the entropy from generic ops:\n"
        "      H = -sum(p * log_softmax(z)), p = softmax(z). To differentiate it, each op\n"
        "      saves what its backward needs: softmax and log_softmax keep their outputs,\n"
        "      the product keeps both factors. These are [seq, vocab] tensors (%.1f MiB\n"
        "      each here), held until backward runs. The loss multiplies the entropy by\n"
        "      0, so backward even spends time computing a zero gradient through them.\n"
        "  (b) With entropy_grad off the entropy is computed under no-grad: the same\n"
        "      numbers, nothing recorded or saved for it. What is left is the\n"
        "      log-prob's own log_softmax output, needed for its gradient.\n"
        "  (c), (d) The fused op computes log-prob and entropy in one pass over the\n"
        "      logits and saves, per row, the max and log-sum-exp (and the entropy when\n"
        "      its gradient is wanted: the 8 bytes per row above), plus references to\n"
        "      the logits and targets themselves, which are alive anyway: the %.1f MiB\n"
        "      of saved bytes are the inputs, not a copy. Its peak is the logits'\n"
        "      gradient, which any backward must produce.\n"
        "\n"
        "The fix, when the entropy is only logged (coefficient 0)\n"
        "  tapegrad: tg_logprob_opts opts = tg_logprob_opts_default();\n"
        "            opts.entropy_grad = false;   /* nothing saved for the entropy */\n"
        "            or compute it inside TG_NO_GRAD { ... }, or log tg_detach(entropy)\n"
        "            and release the entropy itself at once\n"
        "  PyTorch:  with torch.no_grad(): entropy = entropy_from_logits(logits)\n"
        "            or entropy.detach() (its graph is freed once the attached tensor is\n"
        "            dropped; no_grad never builds it), and leave the 0 * entropy term\n"
        "            out of the loss\n"
        "At a trainer's sizes (seq 32k, vocab 128k, f32) one [seq, vocab] tensor is\n"
        "16 GiB: the %.1f x that (a) saves beyond (b) is what ran it out of memory.\n",
        nvm, mib(r[2].m.saved_bytes),
        ((double)r[0].m.saved_bytes - (double)r[1].m.saved_bytes) /
            ((double)o->seq * (double)o->vocab * 4.0));
}

/* The claims of the demo; NULL when they hold, else what failed (in buf). */
static const char *check(const cli_entropy_opts *o, const ent_result *r, char *buf, size_t n) {
    const double nv = (double)o->seq * (double)o->vocab * 4.0;
    const double dcomp = (double)r[0].m.saved_bytes - (double)r[1].m.saved_bytes;
    const double dfused = (double)r[2].m.saved_bytes - (double)r[3].m.saved_bytes;
    if (dcomp < 2.0 * nv)
        snprintf(buf, n, "composite saved bytes drop by %.0f, expected at least 2 x seq x vocab "
                 "x 4 = %.0f", dcomp, 2.0 * nv);
    else if (dfused < 0.0 || dfused > 64.0 * (double)o->seq)
        snprintf(buf, n, "fused saved bytes change by %.0f, expected 0..64 per row", dfused);
    else if (r[1].m.peak_bytes >= r[0].m.peak_bytes)
        snprintf(buf, n, "composite peak does not drop (%zu -> %zu bytes)", r[0].m.peak_bytes,
                 r[1].m.peak_bytes);
    else {
        for (int k = 1; k < NCONF; k++) {
            double dl = fabs(r[k].m.loss - r[0].m.loss) / fmax(fabs(r[0].m.loss), 1e-30);
            double dh = fabs(r[k].m.entropy_mean - r[0].m.entropy_mean) /
                        fmax(fabs(r[0].m.entropy_mean), 1e-30);
            if (dl > REL_TOL || dh > REL_TOL || r[k].grad_diff > REL_TOL) {
                snprintf(buf, n, "(%s) differs from (a): loss %.3g, entropy %.3g, gradient %.3g "
                         "(relative; tolerance %g)", CONF[k].tag, dl, dh, r[k].grad_diff,
                         REL_TOL);
                return buf;
            }
        }
        return NULL;
    }
    return buf;
}

int cli_entropy_run(cli_entropy_opts *o) {
    FILE *note = o->json ? stderr : stdout;
    const int64_t V = o->vocab;
    const int nrows = o->seq < NSAMPLE ? (int)o->seq : NSAMPLE;
    int64_t rows[NSAMPLE];
    for (int i = 0; i < nrows; i++)
        rows[i] = (int64_t)i * o->seq / nrows;
    float *gref = malloc((size_t)nrows * (size_t)V * sizeof *gref);
    float *gcur = malloc((size_t)nrows * (size_t)V * sizeof *gcur);
    tg_tensor *logits = NULL, *targets = NULL;
    ent_result res[NCONF];
    dot_user du = {&o->out, false};
    int rc = CLI_EXIT_FAIL;
    if (!gref || !gcur) {
        cli_fail("demo entropy", "out of memory");
        goto out;
    }
    if ((rc = cli_outputs_begin(&o->out)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_FAIL;
    if (!o->json) {
        printf("A policy-gradient loss needs the log-probability of each sampled token.\n"
               "The trainer also computes the entropy of each token's distribution, but\n"
               "only to log it: its coefficient in the loss is 0. Logits [%" PRId64 ", %" PRId64
               "] f32\n(%.1f MiB), requiring grad; loss = -mean(logprob) - 0 * mean(entropy)\n"
               "when the entropy is recorded, -mean(logprob) when it is not.\n\n",
               o->seq, V, (double)o->seq * (double)V * 4.0 / MIB);
        printf("  (a) composite, entropy recorded  generic ops (log_softmax, softmax, mul,\n"
               "                                   sum), the entropy's gradient recorded:\n"
               "                                   the bug\n"
               "  (b) composite, entropy_grad off  the same ops, the entropy under no-grad:\n"
               "                                   the fix\n"
               "  (c) fused, entropy_grad on       tg_logprob_entropy's one-pass kernels\n"
               "  (d) fused, entropy_grad off      the same, nothing recorded for the entropy\n\n"
               "peak: the library's exact peak above the inputs during forward + backward;\n"
               "saved: bytes held by saved tensors right after forward;\n"
               "times: median of %" PRId64 " or more steps (up to %d while they take less than\n"
               "%.1f s in all).\n\n",
               o->reps, (int)o->reps * CLI_LP_MORE, CLI_LP_SHORT_S);
        fflush(stdout);
    }
    cli_progress("making the logits [%" PRId64 ", %" PRId64 "]", o->seq, V);
    if (cli_lp_inputs("demo entropy", o->seq, V, o->seed, &logits, &targets) != CLI_EXIT_OK)
        goto out;
    for (int k = 0; k < NCONF; k++) {
        if (run_conf(o, k, logits, targets, rows, nrows, gref, gcur, &du, &res[k]) !=
            CLI_EXIT_OK)
            goto out;
        char label[8];
        snprintf(label, sizeof label, "(%s)", CONF[k].tag);
        cli_outputs_mark(&o->out, label);
    }
    cli_progress_clear();
    char buf[256];
    const char *bad = check(o, res, buf, sizeof buf);
    if (o->json) {
        for (int k = 0; k < NCONF; k++)
            print_json(o, k, &res[k]);
    } else {
        print_table(o, res);
        print_findings(o, res);
        print_explanation(o, res);
    }
    fflush(stdout);
    if (bad) {
        cli_fail("demo entropy", "FAILED: %s", bad);
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
    free(gref);
    free(gcur);
    char title[160];
    snprintf(title, sizeof title, "tapegrad demo entropy [%" PRId64 " x %" PRId64 "]: (a), (b) "
             "composite, entropy grad on, off; (c), (d) fused", o->seq, o->vocab);
    return cli_demo_end("demo entropy", &o->out, title, rc, note);
}
