/* cli/demo_leak.c - `tapegrad demo leak`: a microbatch loop keeps each loss
 * "for logging" without detaching it; every kept loss keeps its graph, and
 * through it the microbatch's logits and their gradient, alive. The leak
 * checker shows the growth microbatch by microbatch and names the reference
 * that keeps each graph alive; with --detach the growth disappears.
 *
 * Contract:
 *  - Uses only the public API (<tapegrad.h>), as a user's program would.
 *  - Per microbatch k (0-based): logits "logits[k]" [seq, vocab] f32 from
 *    tg_randn (seed BASE_SEED + k), requiring grad; seeded targets; the fused
 *    tg_logprob_entropy with entropy_grad off (its coefficient is 0);
 *    loss = -mean(logprob); tg_backward(loss); then the loss is kept in
 *    losses[k] (named "losses[k]"): the loss itself (mode "retain", the bug)
 *    or tg_detach(loss) (mode "detach", --detach). With
 *    --log-entropy-with-grad, the entropy for logging comes from a second call
 *    with grad on and entropy_grad on, never backpropagated; its mean is kept
 *    in entropies[k]: its node still holds its saved tensors (the logits).
 *    Everything else made in the microbatch is released, then
 *    tg_step_mark("microbatch k") and tg_leak_scan() give one row: kept bytes,
 *    live graph nodes, library live bytes, process peak RSS.
 *  - Text output (default): explanations, the table, the full leak report,
 *    the cause and the fix. --json: exactly one JSON object per line on
 *    stdout, one per microbatch, then {"report": <tg_leak_report_json>};
 *    nothing else on stdout.
 *  - Progress ("microbatch 3/8", cli_progress) goes to stderr only when
 *    stderr is a terminal and stdout is not (otherwise the rows themselves
 *    show progress).
 *  - The demo checks what it claims: without --detach kept bytes grow at
 *    every microbatch and the report has one root per microbatch; with
 *    --detach (and no entropy kept with grad) nothing is kept; with
 *    --log-entropy-with-grad the report shows live saved tensors. At the end
 *    it releases everything; tg_shutdown() must report nothing alive.
 *    Returns CLI_EXIT_OK, or CLI_EXIT_FAIL saying which check failed (on
 *    stderr). The checks hold at every valid size.
 *  - --trace/--plot (cli/common.h): the memory timeline of the loop, with a
 *    step mark per microbatch; --dot: after the loop, the graphs of the kept
 *    losses (roots "losses[k]", and "entropies[k]" when kept). The lines
 *    announcing the files go to stdout, or to stderr with --json.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad.h>

#include "cli.h"

#define BASE_SEED 1234u
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_LOGITS_ELEMS ((int64_t)1 << 28)        /* 1 GiB of f32 per microbatch */
#define MAX_KEPT_BYTES ((uint64_t)16 << 30)        /* what the bug may keep in all */

/* ---- options ------------------------------------------------------------------- */

cli_leak_opts cli_leak_defaults(void) {
    cli_leak_opts o;
    memset(&o, 0, sizeof o);
    o.microbatches = 8;
    o.seq = 512;
    o.vocab = 8192;
    return o;
}

static const cli_opt LEAK_OPTS[] = {
    {.name = "--microbatches", CLI_INT(cli_leak_opts, microbatches, 1, CLI_LEAK_MAX_MICROBATCHES),
     .meta = "K", .help = "microbatches"},
    {.name = "--seq", CLI_INT(cli_leak_opts, seq, 1, CLI_LEAK_MAX_SEQ),
     .help = "rows (tokens) of the logits"},
    {.name = "--vocab", CLI_INT(cli_leak_opts, vocab, 2, CLI_LEAK_MAX_VOCAB), .meta = "V",
     .help = "vocabulary size"},
    {.name = "--detach", CLI_FLAG(cli_leak_opts, detach),
     .help = "keep tg_detach(loss) instead: nothing grows"},
    {.name = "--log-entropy-with-grad", CLI_FLAG(cli_leak_opts, entropy_with_grad),
     .help = "also keep an entropy computed with its gradient recorded and never "
             "backpropagated: its node keeps the logits alive as a saved tensor"},
    {.name = "--json", CLI_FLAG(cli_leak_opts, json),
     .help = "one JSON object per microbatch, then the report"},
    CLI_OUTPUT_OPTS(cli_leak_opts, out, "the kept losses' graphs after the loop"),
};

const cli_command cli_leak_command = {
    .name = "demo leak",
    .opts = LEAK_OPTS,
    .n_opts = CLI_N(LEAK_OPTS),
    .about = "A microbatch loop keeps each loss for logging (losses[k] = loss). Each kept\n"
             "loss keeps its graph alive, and with it the microbatch's logits and their\n"
             "gradient: memory grows every microbatch. The leak checker shows the growth\n"
             "and names the reference (\"losses[3]\") and the path to what it keeps.\n",
    .notes = "seq x vocab is at most 2^28 (1 GiB of f32 logits per microbatch), and what\n"
             "the loop can keep alive in all at most 16 GiB.\n",
    .exit_status = CLI_DEMO_EXIT_STATUS,
};

void cli_leak_help(void) {
    cli_leak_opts d = cli_leak_defaults();
    cli_help(stdout, &cli_leak_command, &d);
}

/* Bytes the loop keeps alive at most after k microbatches (the bug's cost):
 * logits and gradient per microbatch when losses are kept as they are, the
 * logits (saved by the entropy's node) with --detach --log-entropy-with-grad. */
static uint64_t worst_kept(const cli_leak_opts *o, int64_t k) {
    uint64_t per = (uint64_t)o->seq * (uint64_t)o->vocab * sizeof(float);
    if (!o->detach)
        per *= 2;
    else if (!o->entropy_with_grad)
        per = 0;
    return per * (uint64_t)k;
}

int cli_leak_parse(int argc, char **argv, cli_leak_opts *o) {
    int rc = cli_options_parse(&cli_leak_command, argc, argv, o, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o->seq * o->vocab > MAX_LOGITS_ELEMS)
        return cli_usage_error("--seq %" PRId64 " x --vocab %" PRId64 " is %.2f GiB of f32 "
                               "logits per microbatch (at most 1 GiB)",
                               o->seq, o->vocab, (double)(o->seq * o->vocab) * 4.0 / GIB);
    if (worst_kept(o, o->microbatches) > MAX_KEPT_BYTES)
        return cli_usage_error("%" PRId64 " microbatches of [%" PRId64 ", %" PRId64
                               "] logits would keep %.1f GiB alive (at most 16 GiB): "
                               "lower --microbatches, --seq or --vocab",
                               o->microbatches, o->seq, o->vocab,
                               (double)worst_kept(o, o->microbatches) / GIB);
    return CLI_EXIT_OK;
}

/* ---- output helpers ------------------------------------------------------------- */

typedef struct run_state {
    const cli_leak_opts *o;
    bool progress; /* "microbatch k/K" on stderr */
    tg_tensor **losses;    /* [K], what the loop keeps "for logging" */
    tg_tensor **entropies; /* [K], with --log-entropy-with-grad */
    uint64_t *kept;        /* [K] kept bytes after each microbatch */
    int64_t *nodes;        /* [K] live graph nodes after each microbatch */
} run_state;

/* Text for people: on stdout, except in --json mode where it is dropped. */
static void say(const run_state *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(const run_state *s, const char *fmt, ...) {
    if (s->o->json)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* A failure: on stderr (cli/cli.h). */
static int fail(const run_state *s, const char *what, bool lib_error) {
    (void)s;
    if (lib_error)
        return cli_fail("demo leak", "FAILED: %s: %s: %s", what,
                        tg_status_name(tg_last_status()), tg_last_error());
    return cli_fail("demo leak", "FAILED: %s", what);
}

static const char *mode_name(const cli_leak_opts *o) { return o->detach ? "detach" : "retain"; }

/* ---- one microbatch ---------------------------------------------------------------- */

/* Forward, backward and "logging" of microbatch k. Fills s->losses[k] (and
 * s->entropies[k]); releases everything else it makes. *loss_value receives
 * the loss. Returns TG_OK or the failing status (tg_last_error says why). */
static tg_status microbatch(run_state *s, int64_t k, double *loss_value) {
    const cli_leak_opts *o = s->o;
    char name[48];
    tg_tensor *logits = NULL, *targets = NULL, *lp = NULL, *ent = NULL, *mean = NULL,
              *loss = NULL, *lp2 = NULL, *ent2 = NULL;
    tg_status st = TG_ERR_INTERNAL; /* TG_OK once losses[k] is kept */

    snprintf(name, sizeof name, "logits[%" PRId64 "]", k);
    logits = tg_set_name(tg_randn(TG_F32, TG_SHAPE(o->seq, o->vocab), BASE_SEED + (uint64_t)k,
                                  0.0, 1.0),
                         name);
    if (!logits || tg_set_requires_grad(logits, true) != TG_OK)
        goto out;
    snprintf(name, sizeof name, "targets[%" PRId64 "]", k);
    targets = tg_set_name(tg_randint(TG_SHAPE(o->seq), BASE_SEED ^ (0xA5A5ull + (uint64_t)k), 0,
                                     o->vocab),
                          name);

    /* The loss. The entropy is only logged (its coefficient is 0), so its
     * gradient is not recorded: nothing is saved for it. */
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.entropy_grad = false;
    if (!targets || tg_logprob_entropy(logits, targets, &lo, &lp, &ent) != TG_OK)
        goto out;
    mean = tg_mean(lp);
    loss = tg_neg(mean);
    if (!loss || tg_item(loss, loss_value) != TG_OK)
        goto out;

    if (o->entropy_with_grad) {
        /* The large case: the entropy for logging from a call that records
         * its gradient. Nobody backpropagates through it, so its node keeps
         * its saved tensors (a reference to the logits) for as long as the
         * logged entropy lives. */
        tg_logprob_opts eo = tg_logprob_opts_default();
        eo.entropy_grad = true;
        if (tg_logprob_entropy(logits, targets, &eo, &lp2, &ent2) != TG_OK)
            goto out;
        snprintf(name, sizeof name, "entropies[%" PRId64 "]", k);
        s->entropies[k] = tg_set_name(tg_mean(ent2), name);
        if (!s->entropies[k])
            goto out;
    }

    if (tg_backward(loss, NULL, false) != TG_OK)
        goto out;

    /* Keep the loss "for logging". */
    snprintf(name, sizeof name, "losses[%" PRId64 "]", k);
    if (o->detach)
        s->losses[k] = tg_set_name(tg_detach(loss), name); /* PyTorch: loss.detach() */
    else
        s->losses[k] = tg_set_name(tg_retain(loss), name); /* PyTorch: losses.append(loss) */
    if (s->losses[k])
        st = TG_OK;

out:
    tg_release(ent2);
    tg_release(lp2);
    tg_release(loss);
    tg_release(mean);
    tg_release(ent);
    tg_release(lp);
    tg_release(targets);
    tg_release(logits);
    if (st != TG_OK && tg_last_status() != TG_OK)
        st = tg_last_status();
    return st;
}

/* ---- the loop ------------------------------------------------------------------------- */

static void intro(const run_state *s) {
    const cli_leak_opts *o = s->o;
    double mb = (double)(o->seq * o->vocab) * 4.0 / MIB;
    say(s,
        "A trainer runs %" PRId64 " microbatches. Each: logits [%" PRId64 ", %" PRId64
        "] f32 (%.2f MiB,\n"
        "requiring grad), the fused log-prob/entropy op (the entropy is only logged:\n"
        "entropy_grad off), loss = -mean(logprob), backward. Then it keeps the loss\n"
        "for logging:\n"
        "    %s\n",
        o->microbatches, o->seq, o->vocab, mb,
        o->detach ? "losses[k] = tg_detach(loss)   (PyTorch: losses.append(loss.detach()))"
                  : "losses[k] = loss              (PyTorch: losses.append(loss))");
    if (o->entropy_with_grad)
        say(s,
            "and the entropy for logging, from a second call with its gradient recorded\n"
            "(entropy_grad on) that is never backpropagated:\n"
            "    entropies[k] = mean(entropy)\n");
    say(s,
        "After each microbatch, tg_step_mark(\"microbatch k\") ends the step and\n"
        "tg_leak_scan() lists the graph nodes of earlier steps that are still alive,\n"
        "and the bytes that only they keep.\n");
}

static void print_row(const run_state *s, int64_t k, double loss, const tg_mem_stats *m,
                      size_t rss) {
    if (s->o->json) {
        cli_json j = cli_json_begin(stdout);
        cli_json_int(&j, "microbatch", k);
        cli_json_str(&j, "mode", mode_name(s->o));
        cli_json_bool(&j, "entropy_with_grad", s->o->entropy_with_grad);
        cli_json_num(&j, "loss", "%.6f", loss);
        cli_json_uint(&j, "kept_bytes", s->kept[k]);
        cli_json_int(&j, "live_nodes", s->nodes[k]);
        cli_json_uint(&j, "live_bytes", m->live_total);
        cli_json_uint(&j, "rss_bytes", rss);
        cli_json_end(&j);
        return;
    }
    printf("%10" PRId64 "  %8.4f  %15.2f  %10" PRId64 "  %12.2f  %12.1f\n", k, loss,
           (double)s->kept[k] / MIB, s->nodes[k], (double)m->live_total / MIB,
           (double)rss / MIB);
    fflush(stdout);
}

/* Checks what the demo claims about the rows and the final report. */
static int check(const run_state *s, const tg_leak_report *r) {
    const cli_leak_opts *o = s->o;
    const int64_t K = o->microbatches;
    char msg[200];
    bool grows = !o->detach || o->entropy_with_grad;
    for (int64_t k = 0; k < K; k++) {
        bool ok = grows ? s->kept[k] > (k ? s->kept[k - 1] : 0) : s->kept[k] == 0;
        if (!ok) {
            snprintf(msg, sizeof msg, "kept bytes after microbatch %" PRId64 " are %" PRIu64
                     ", expected %s", k, s->kept[k],
                     grows ? "more than after the one before" : "0");
            return fail(s, msg, false);
        }
        if (!grows && s->nodes[k] != 0) {
            snprintf(msg, sizeof msg, "%" PRId64 " graph nodes alive after microbatch %" PRId64
                     ", expected 0", s->nodes[k], k);
            return fail(s, msg, false);
        }
    }
    int64_t want_roots = (o->detach ? 0 : K) + (o->entropy_with_grad ? K : 0);
    if (tg_leak_report_nroots(r) != want_roots) {
        snprintf(msg, sizeof msg, "the report has %" PRId64 " roots, expected %" PRId64,
                 tg_leak_report_nroots(r), want_roots);
        return fail(s, msg, false);
    }
    if (tg_leak_report_unreachable(r) != 0)
        return fail(s, "the report finds objects in reference cycles", false);
    if (o->entropy_with_grad) {
        int64_t with_saved = 0;
        for (int64_t i = 0; i < tg_leak_report_nroots(r); i++) {
            const tg_leak_root *q = tg_leak_report_root(r, i);
            with_saved += q->nodes_with_saved > 0 && q->saved_bytes > 0;
        }
        if (with_saved < K) {
            snprintf(msg, sizeof msg, "%" PRId64 " roots report live saved tensors, expected %"
                     PRId64 " (one per entropies[k])", with_saved, K);
            return fail(s, msg, false);
        }
    }
    return CLI_EXIT_OK;
}

static void explain(const run_state *s) {
    const cli_leak_opts *o = s->o;
    const double mib_logits = (double)(o->seq * o->vocab) * 4.0 / MIB;
    if (!o->detach) {
        say(s,
            "Why it grows: a loss that is kept as it is still carries its grad_fn\n"
            "(NegBackward), which references MeanBackward, which references\n"
            "LogprobEntropyBackward, which references the microbatch's logits leaf;\n"
            "the leaf holds its .grad. Backward freed the saved tensors, but not this\n"
            "chain: every kept loss keeps %.2f MiB alive (the logits and their\n"
            "gradient) for a 4-byte number. In a real trainer these are device\n"
            "buffers: the process runs out of memory after enough microbatches.\n"
            "\n"
            "The fix: keep a detached copy, or just the number.\n"
            "    PyTorch:  losses.append(loss)  ->  losses.append(loss.detach())\n"
            "              or                       losses.append(loss.item())\n"
            "    tapegrad: losses[k] = loss     ->  losses[k] = tg_detach(loss)\n"
            "              or                       tg_item(loss, &value)\n"
            "A detached tensor shares the loss's 4-byte storage, and has no grad_fn.\n"
            "Run it: tapegrad demo leak --detach%s\n",
            2.0 * mib_logits, o->entropy_with_grad ? " --log-entropy-with-grad" : "");
    } else {
        say(s,
            "With tg_detach(loss) the kept tensor shares the loss's 4-byte storage but\n"
            "has no grad_fn: when the loop releases the loss, its graph, the logits and\n"
            "their gradient go with it (PyTorch: losses.append(loss.detach()), or\n"
            "loss.item()).\n%s",
            o->entropy_with_grad
                ? "The kept losses keep nothing; what grows here is the entropy kept for\n"
                  "logging.\n"
                : "Kept bytes stay at 0 and no graph node survives its microbatch.\n");
    }
    if (o->entropy_with_grad)
        say(s,
            "\n"
            "The entropy kept for logging was computed with its gradient recorded\n"
            "(entropy_grad on) and never backpropagated. Its LogprobEntropyBackward\n"
            "node still holds its saved tensors (a reference to the logits, %.2f MiB),\n"
            "and its input edge holds the logits leaf, with the gradient the loss's\n"
            "backward put there: %.2f MiB per microbatch%s.\n"
            "Detaching the loss does not help; do not record what is only logged:\n"
            "    PyTorch:  with torch.no_grad(): entropy = ...   or  entropy.detach()\n"
            "    tapegrad: entropy_grad = false in tg_logprob_opts (the loss's own call\n"
            "              then returns the entropy without recording anything for\n"
            "              it), TG_NO_GRAD { ... }, or tg_detach(entropy).\n",
            mib_logits, 2.0 * mib_logits,
            o->detach ? "" : "\n(the same buffers as the kept loss's graph)");
}

/* --dot: the kept losses (and entropies) as roots, after the loop. */
static int write_dot(const run_state *s) {
    const cli_leak_opts *o = s->o;
    const int64_t K = o->microbatches;
    int n = 0;
    tg_tensor **roots = calloc((size_t)K * 2, sizeof *roots);
    const char **names = calloc((size_t)K * 2, sizeof *names);
    int rc = CLI_EXIT_FAIL;
    if (!roots || !names) {
        cli_fail("demo leak", "out of memory");
        goto out;
    }
    for (int64_t k = 0; k < K; k++) {
        if (s->losses[k]) {
            names[n] = tg_name(s->losses[k]); /* "losses[k]" */
            roots[n++] = s->losses[k];
        }
        if (s->entropies[k]) {
            names[n] = tg_name(s->entropies[k]);
            roots[n++] = s->entropies[k];
        }
    }
    rc = cli_outputs_dot(&o->out, roots, n, names, o->json ? stderr : stdout);
out:
    free(roots);
    free(names);
    return rc;
}

/* The microbatch loop: K steps, each followed by a leak scan (the last
 * scan's report into *r) and its row. Returns CLI_EXIT_OK or
 * CLI_EXIT_FAIL (reported). */
static int run_loop(run_state *s, tg_leak_report **r) {
    const int64_t K = s->o->microbatches;
    for (int64_t k = 0; k < K; k++) {
        double loss = 0.0;
        char label[48];
        if (s->progress)
            cli_progress("microbatch %" PRId64 "/%" PRId64 " ...", k + 1, K);
        if (microbatch(s, k, &loss) != TG_OK)
            return fail(s, "microbatch", true);
        snprintf(label, sizeof label, "microbatch %" PRId64, k);
        tg_step_mark(label);
        tg_leak_report_free(*r);
        *r = tg_leak_scan();
        tg_mem_stats m;
        if (!*r || tg_mem_get(TG_CPU, &m) != TG_OK)
            return fail(s, "leak scan", true);
        s->kept[k] = tg_leak_report_kept_bytes(*r);
        s->nodes[k] = tg_live().nodes;
        print_row(s, k, loss, &m, tg_peak_rss_bytes());
    }
    return CLI_EXIT_OK;
}

/* The last scan's report: one JSON line, or printed with its heading. */
static int show_report(run_state *s, tg_leak_report *r) {
    const cli_leak_opts *o = s->o;
    if (o->json) {
        cli_json j = cli_json_begin(stdout);
        cli_json_key(&j, "report");
        tg_status st = tg_leak_report_json(stdout, r);
        cli_json_end(&j);
        return st == TG_OK ? CLI_EXIT_OK : fail(s, "write the report", true);
    }
    if (!o->brief)
        cli_heading("Step 2: the leak checker's report (tg_leak_report_print)");
    else
        printf("\nThe leak checker's report:\n");
    if (tg_leak_report_print(stdout, r) != TG_OK)
        return fail(s, "print the report", true);
    if (!o->brief)
        cli_heading(o->detach && !o->entropy_with_grad ? "Step 3: why nothing grows"
                                                       : "Step 3: the cause and the fix");
    else
        putchar('\n');
    return CLI_EXIT_OK;
}

int cli_leak_run(cli_leak_opts *o) {
    const int64_t K = o->microbatches;
    /* on a terminal the rows show the progress themselves */
    run_state s = {o, isatty(STDOUT_FILENO) != 1, NULL, NULL, NULL, NULL};
    tg_leak_report *r = NULL;
    int rc = CLI_EXIT_FAIL;
    s.losses = calloc((size_t)K, sizeof *s.losses);
    s.entropies = calloc((size_t)K, sizeof *s.entropies);
    s.kept = calloc((size_t)K, sizeof *s.kept);
    s.nodes = calloc((size_t)K, sizeof *s.nodes);
    if (!s.losses || !s.entropies || !s.kept || !s.nodes) {
        cli_fail("demo leak", "out of memory");
        goto out;
    }
    tg_clear_error();
    if ((rc = cli_outputs_begin(&o->out)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_FAIL;

    if (!o->brief)
        intro(&s);
    if (!o->json && !o->brief) {
        cli_heading("Step 1: the microbatch loop");
        printf("kept: bytes that only graph nodes of earlier microbatches keep alive\n"
               "      (tg_leak_report_kept_bytes); live nodes: graph nodes alive (tg_live);\n"
               "live: all the library's bytes (tg_mem_get); peak RSS: the process's.\n\n");
    }
    if (!o->json) {
        printf("%10s  %8s  %15s  %10s  %12s  %12s\n", "microbatch", "loss", "kept (MiB)",
               "live nodes", "live (MiB)", "peak RSS MiB");
    }
    if (run_loop(&s, &r) != CLI_EXIT_OK)
        goto out;
    cli_progress_clear();
    if (write_dot(&s) != CLI_EXIT_OK)
        goto out;

    if (show_report(&s, r) != CLI_EXIT_OK)
        goto out;
    explain(&s);
    rc = check(&s, r);

out:
    tg_leak_report_free(r);
    r = NULL;
    for (int64_t k = 0; s.losses && k < K; k++)
        tg_release(s.losses[k]);
    for (int64_t k = 0; s.entropies && k < K; k++)
        tg_release(s.entropies[k]);
    free(s.losses);
    free(s.entropies);
    free(s.kept);
    free(s.nodes);
    if (rc == CLI_EXIT_OK) {
        /* The list is gone: no graph survives, nothing grows any more. */
        tg_step_mark("after the loop");
        tg_status st = tg_leak_check();
        if (!o->json) {
            if (!o->brief)
                cli_heading("Step 4: release the kept tensors");
            printf("After releasing losses[]%s: tg_leak_check() returns %s.\n",
                   o->entropy_with_grad ? " and entropies[]" : "", tg_status_name(st));
        }
        if (st == TG_ERR_LEAK)
            rc = cli_fail("demo leak", "FAILED: tg_leak_check after releasing everything: %s",
                          tg_leak_check_report());
        else if (st != TG_OK)
            rc = fail(&s, "tg_leak_check after releasing everything", true);
    }
    fflush(stdout);
    if (cli_outputs_end(&o->out, o->detach ? "tapegrad demo leak --detach: kept losses detached"
                                           : "tapegrad demo leak: kept losses keep their graphs",
                        rc == CLI_EXIT_OK, o->json ? stderr : stdout) != CLI_EXIT_OK)
        rc = CLI_EXIT_FAIL;
    int64_t alive = tg_shutdown(stderr);
    if (alive != 0) {
        rc = cli_fail("demo leak", "LEAK: %" PRId64 " objects still alive after the demo "
                      "(listed above)", alive);
    }
    if (rc == CLI_EXIT_OK)
        say(&s, "tg_shutdown() reports nothing alive. Demo passed.\n");
    return rc;
}
