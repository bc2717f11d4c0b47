/* cli/demo_linear.c - `tapegrad demo linear`: the logits never exist. The
 * output layer's log-prob and entropy computed from the hidden states, once
 * with the logits made (matmul, then the fused logits op) and once with the
 * fused linear op, which holds at most one chunk x block of them.
 *
 * Contract:
 *  - Uses only the public API (<tapegrad.h>) and cli/linstep.h.
 *  - Inputs (cli_lin_inputs): hidden (seq, hidden) and weight (vocab,
 *    hidden) f32 requiring grad, targets with 1% ignored. Three
 *    configurations, in order: (a) materialized, (b) fused, (c) fused with
 *    entropy_grad off. Each runs `reps` steps of cli_lin_step; reported: the
 *    exact peak bytes above the inputs (largest over the steps), bytes saved
 *    after forward, the two gradients' bytes, forward / backward / total
 *    time (medians), the loss; for (b) and (c) the plan (chunk rows,
 *    vocabulary block, workspace).
 *  - Then, computed from the same accounting (tg_linear_logprob_plan_for,
 *    not run): the peak of both ways at a trainer's size, 65536 tokens x
 *    hidden 4096 x vocabulary 128256, f32.
 *  - Checks (exit 1 naming the failed one): loss(b) within 1e-4 relative of
 *    loss(a) (loss(c) has no entropy term); peak(b) < peak(a); peak(b) <= gradients +
 *    workspace + 64 bytes per row (outputs, statistics, upstream gradients).
 *  - --json: one JSON object per configuration per line, nothing else on
 *    stdout. --trace/--plot/--dot (cli/common.h): the timeline of the three
 *    configurations with a step mark after each; the graph of (b)'s loss.
 *  - Releases everything; fails if library objects stay alive.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"
#include "options.h"
#include "linstep.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

cli_linear_opts cli_linear_defaults(void) {
    cli_linear_opts o;
    memset(&o, 0, sizeof o);
    o.seq = 2048;
    o.hidden = 512;
    o.vocab = 32000;
    o.workspace_mib = 64;
    o.reps = 1;
    o.seed = 13;
    return o;
}

static const cli_opt LINEAR_OPTS[] = {
    {.name = "--seq", CLI_INT(cli_linear_opts, seq, 1, 1 << 22), .help = "rows (tokens)"},
    {.name = "--hidden", CLI_INT(cli_linear_opts, hidden, 1, 65536), .meta = "D",
     .help = "hidden size"},
    {.name = "--vocab", CLI_INT(cli_linear_opts, vocab, 2, 1 << 22), .meta = "V",
     .help = "vocabulary size"},
    {.name = "--workspace-mib", CLI_INT(cli_linear_opts, workspace_mib, 1, 1 << 20),
     .meta = "M", .help = "the fused op's workspace budget"},
    {.name = "--reps", CLI_INT(cli_linear_opts, reps, 1, 100), .meta = "R",
     .help = "steps per configuration, median time kept"},
    {.name = "--seed", CLI_SEED(cli_linear_opts, seed), .help = "seed of the inputs"},
    {.name = "--json", CLI_FLAG(cli_linear_opts, json),
     .help = "one JSON object per configuration per line"},
    CLI_OUTPUT_OPTS(cli_linear_opts, out, "(b)'s loss just before backward"),
};

const cli_command cli_linear_command = {
    .name = "demo linear",
    .opts = LINEAR_OPTS,
    .n_opts = CLI_N(LINEAR_OPTS),
    .about = "The logits never exist: log-prob and entropy from the hidden states,\n"
             "(a) with the logits made (hidden @ weight^T, then the fused logits op),\n"
             "(b) with tg_linear_logprob_entropy (one chunk x block of logits at a time),\n"
             "(c) the same with the entropy's gradient off. The exact peak of each, the\n"
             "bytes saved, the time; then the same accounting at a trainer's size.\n",
    .exit_status = CLI_DEMO_EXIT_STATUS,
};

void cli_linear_help(void) {
    cli_linear_opts d = cli_linear_defaults();
    cli_help(stdout, &cli_linear_command, &d);
}

int cli_linear_parse(int argc, char **argv, cli_linear_opts *o) {
    int rc = cli_options_parse(&cli_linear_command, argc, argv, o, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    /* the materialized way needs the logits and their gradient */
    if ((double)o->seq * (double)o->vocab * 8.0 > 8.0 * GIB)
        return cli_usage_error("demo linear: seq %" PRId64 " x vocab %" PRId64 " needs %.1f GiB "
                               "for the materialized logits and their gradient (at most 8 GiB "
                               "here; 'tapegrad bench linear-logprob' runs bigger ones)",
                               o->seq, o->vocab, (double)o->seq * (double)o->vocab * 8.0 / GIB);
    return CLI_EXIT_OK;
}

typedef struct lin_result {
    cli_lin_measure m;
    double total_ms;
} lin_result;

typedef struct dot_user {
    const cli_outputs *out;
    bool done;
} dot_user;

static int dot_hook(tg_tensor *loss, void *user) {
    dot_user *u = user;
    if (u->done) return CLI_EXIT_OK;
    u->done = true;
    const char *names[1] = {"loss (b): fused linear log-prob"};
    return cli_outputs_dot(u->out, &loss, 1, names, NULL);
}

static int run_conf(const cli_linear_opts *o, const cli_lin_config *c, tg_tensor *h,
                    tg_tensor *w, tg_tensor *y, dot_user *du, lin_result *r) {
    double t[100];
    memset(r, 0, sizeof *r);
    for (int64_t k = 0; k < o->reps; k++) {
        cli_progress("%s: step %" PRId64 "/%" PRId64, cli_lin_mode_name(c), k + 1, o->reps);
        cli_lin_measure m;
        int rc = cli_lin_step("demo linear", h, w, y, c, &m,
                              c->mode == CLI_LIN_FUSED && c->entropy_grad && du->out->dot
                                  ? dot_hook
                                  : NULL,
                              du);
        if (rc != CLI_EXIT_OK) return CLI_EXIT_FAIL;
        t[k] = m.fwd_ms + m.bwd_ms;
        if (k == 0 || m.fwd_ms < r->m.fwd_ms) r->m.fwd_ms = m.fwd_ms;
        if (k == 0 || m.bwd_ms < r->m.bwd_ms) r->m.bwd_ms = m.bwd_ms;
        if (m.peak_bytes > r->m.peak_bytes) r->m.peak_bytes = m.peak_bytes;
        if (m.saved_bytes > r->m.saved_bytes) r->m.saved_bytes = m.saved_bytes;
        r->m.grad_bytes = m.grad_bytes;
        r->m.loss = m.loss;
    }
    r->total_ms = cli_median(t, (int)o->reps);
    return CLI_EXIT_OK;
}

/* The fused op's peak at (n, d, v), f32, from its plan: gradients + workspace
 * + 64 bytes per row; the materialized way's: the logits and their gradient +
 * the gradients. */
static void trainer_sizes(void) {
    const int64_t n = 65536, d = 4096, v = 128256;
    tg_linear_logprob_plan p;
    if (tg_linear_logprob_plan_for(n, d, v, TG_F32, false, NULL, &p) != TG_OK) return;
    const double grads = (double)(n + v) * (double)d * 4.0;
    const double ws = (double)(p.forward_workspace > p.backward_workspace ? p.forward_workspace
                                                                          : p.backward_workspace);
    const double fused = grads + ws + 64.0 * (double)n, logits = (double)n * (double)v * 4.0;
    printf("\nAt a trainer's size (65536 tokens, hidden 4096, vocabulary 128256, f32), from\n"
           "the same accounting (not run here): the logits are %.1f GiB and their gradient\n"
           "as much again, so the materialized step needs %.1f GiB beyond its inputs; the\n"
           "fused op needs the gradients of hidden and weight (%.1f GiB) plus its %.0f MiB\n"
           "workspace (%" PRId64 " rows x %" PRId64 " vocabulary entries at a time): %.1f GiB, "
           "%.0fx less.\n",
           logits / GIB, (2.0 * logits + grads) / GIB, grads / GIB, ws / MIB, p.chunk_rows,
           p.vocab_block, fused / GIB, (2.0 * logits + grads) / fused);
}

static const char *const TAGS[3] = {"a", "b", "c"};
static const char *const WHAT[3] = {"materialized: matmul, then the fused logits op",
                                    "fused linear op", "fused linear op, entropy_grad off"};

/* The larger of the plan's forward and backward workspace. */
static size_t plan_workspace(const tg_linear_logprob_plan *p) {
    return p->forward_workspace > p->backward_workspace ? p->forward_workspace
                                                        : p->backward_workspace;
}

static void print_intro(const cli_linear_opts *o, const tg_linear_logprob_plan *fused) {
    printf("An LM or RL loss needs the log-probability of each target token, and often\n"
           "the entropy, from the last hidden states h [%" PRId64 ", %" PRId64 "] and the "
           "output\nlayer's weight W [%" PRId64 ", %" PRId64 "], f32, both requiring grad. "
           "The logits h W^T would be\n[%" PRId64 ", %" PRId64 "]: %.1f MiB, and their "
           "gradient as much again.\n\n",
           o->seq, o->hidden, o->vocab, o->hidden, o->seq, o->vocab,
           (double)o->seq * (double)o->vocab * 4.0 / MIB);
    for (int k = 0; k < 3; k++) printf("  (%s) %s\n", TAGS[k], WHAT[k]);
    printf("\nThe fused op takes %" PRId64 " rows x %" PRId64 " vocabulary entries at a time "
           "(its %" PRId64 " MiB budget):\none GEMM into the workspace, the row statistics "
           "merged across blocks; backward\nrecomputes each block and turns it into its "
           "gradient in place.\n"
           "peak: the library's exact peak above the inputs during forward + backward.\n\n",
           fused->chunk_rows, fused->vocab_block, o->workspace_mib);
    fflush(stdout);
}

static void print_json_rows(const cli_linear_opts *o, const cli_lin_config *cf,
                            const lin_result *res, const tg_linear_logprob_plan *plan) {
    for (int k = 0; k < 3; k++) {
        cli_json j = cli_json_begin(stdout);
        cli_json_str(&j, "demo", "linear");
        cli_json_str(&j, "config", TAGS[k]);
        cli_json_str(&j, "mode", cli_lin_mode_name(&cf[k]));
        cli_json_int(&j, "seq", o->seq);
        cli_json_int(&j, "hidden", o->hidden);
        cli_json_int(&j, "vocab", o->vocab);
        cli_json_uint(&j, "peak_bytes", res[k].m.peak_bytes);
        cli_json_uint(&j, "saved_bytes", res[k].m.saved_bytes);
        cli_json_uint(&j, "grad_bytes", res[k].m.grad_bytes);
        cli_json_num(&j, "fwd_ms", "%.3f", res[k].m.fwd_ms);
        cli_json_num(&j, "bwd_ms", "%.3f", res[k].m.bwd_ms);
        cli_json_num(&j, "total_ms", "%.3f", res[k].total_ms);
        cli_json_num(&j, "loss", "%.9g", res[k].m.loss);
        if (k > 0) {
            cli_json_int(&j, "chunk_rows", plan[k].chunk_rows);
            cli_json_int(&j, "vocab_block", plan[k].vocab_block);
            cli_json_uint(&j, "workspace_bytes", plan_workspace(&plan[k]));
        }
        cli_json_end(&j);
    }
}

static void print_table(const lin_result *res, const tg_linear_logprob_plan *fused) {
    printf("  %-52s %9s %9s %9s %8s %8s\n", "", "peak MiB", "saved MiB", "grads MiB",
           "fwd ms", "bwd ms");
    for (int k = 0; k < 3; k++)
        printf("  (%s) %-48s %9.1f %9.1f %9.1f %8.1f %8.1f\n", TAGS[k], WHAT[k],
               res[k].m.peak_bytes / MIB, res[k].m.saved_bytes / MIB,
               res[k].m.grad_bytes / MIB, res[k].m.fwd_ms, res[k].m.bwd_ms);
    printf("\n(b) needs %.1fx less memory than (a) and takes %.2fx its time: it computes\n"
           "the logits twice (once more in backward), but holds at most %" PRId64 " x %" PRId64
           " of them\nat a time, which become their own gradient in place. Losses: (a) "
           "%.7f,\n(b) %.7f (the same step); (c) %.7f (-mean(logprob) alone: its entropy\n"
           "is computed but not differentiated).\n",
           (double)res[0].m.peak_bytes / (double)res[1].m.peak_bytes,
           res[1].total_ms / res[0].total_ms, fused->chunk_rows, fused->vocab_block,
           res[0].m.loss, res[1].m.loss, res[2].m.loss);
    trainer_sizes();
}

/* The demo's claims; NULL when they hold, else which failed. */
static const char *check(const cli_linear_opts *o, const lin_result *res,
                         const tg_linear_logprob_plan *fused) {
    const double l0 = res[0].m.loss;
    if (fabs(res[1].m.loss - l0) > 1e-4 * fabs(l0))
        return "the fused loss differs from the materialized one by more than 1e-4";
    if (res[1].m.peak_bytes >= res[0].m.peak_bytes)
        return "the fused peak is not below the materialized one";
    if ((double)res[1].m.peak_bytes >
        (double)res[1].m.grad_bytes + (double)plan_workspace(fused) + 64.0 * (double)o->seq)
        return "the fused peak is above gradients + workspace + 64 bytes per row";
    return NULL;
}

int cli_linear_run(cli_linear_opts *o) {
    FILE *note = o->json ? stderr : stdout;
    cli_lin_config cf[3] = {
        {CLI_LIN_MATERIALIZED, true, 0, 0, TG_CPU, NULL},
        {CLI_LIN_FUSED, true, 0, (size_t)o->workspace_mib << 20, TG_CPU, NULL},
        {CLI_LIN_FUSED, false, 0, (size_t)o->workspace_mib << 20, TG_CPU, NULL},
    };
    lin_result res[3];
    tg_linear_logprob_plan plan[3];
    tg_tensor *h = NULL, *w = NULL, *y = NULL;
    dot_user du = {&o->out, false};
    int rc = cli_outputs_begin(&o->out);
    if (rc != CLI_EXIT_OK) return rc;
    rc = CLI_EXIT_FAIL;
    for (int k = 1; k < 3; k++) {
        tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
        lo.workspace_bytes = cf[k].workspace_bytes;
        lo.entropy_grad = cf[k].entropy_grad;
        if (tg_linear_logprob_plan_for(o->seq, o->hidden, o->vocab, TG_F32, false, &lo,
                                       &plan[k]) != TG_OK) {
            cli_fail("demo linear", "%s", tg_last_error());
            goto out;
        }
    }
    if (!o->json) print_intro(o, &plan[1]);
    cli_progress("making the inputs");
    if (cli_lin_inputs("demo linear", o->seq, o->hidden, o->vocab, TG_F32, TG_CPU, o->seed, &h,
                       &w, &y) != CLI_EXIT_OK)
        goto out;
    for (int k = 0; k < 3; k++) {
        if (run_conf(o, &cf[k], h, w, y, &du, &res[k]) != CLI_EXIT_OK) goto out;
        char label[8];
        snprintf(label, sizeof label, "(%s)", TAGS[k]);
        cli_outputs_mark(&o->out, label);
    }
    cli_progress_clear();
    if (o->json) print_json_rows(o, cf, res, plan);
    else print_table(res, &plan[1]);
    fflush(stdout);
    const char *bad = check(o, res, &plan[1]);
    if (bad) {
        cli_fail("demo linear", "FAILED: %s", bad);
        goto out;
    }
    rc = CLI_EXIT_OK;
out:
    if (du.done && rc == CLI_EXIT_OK) {
        if (!o->json) putchar('\n');
        cli_outputs_dot_note(&o->out, note);
    }
    tg_release(h);
    tg_release(w);
    tg_release(y);
    char title[160];
    snprintf(title, sizeof title, "tapegrad demo linear [%" PRId64 " x %" PRId64 " x %" PRId64
             "]: (a) materialized, (b) fused, (c) fused, entropy grad off",
             o->seq, o->hidden, o->vocab);
    return cli_demo_end("demo linear", &o->out, title, rc, note);
}
