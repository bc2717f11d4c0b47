/* cli/tour.c - `tapegrad tour`: the three stories, one demo each, with short
 * explanations between them.
 *
 * Contract:
 *   tapegrad tour               every section in order: 1 inplace, 2 entropy,
 *                               3 chunk, 4 leak, 5 linear; exit 0 when all
 *                               pass, else 1
 *   tapegrad tour --list        the sections, exit 0
 *   tapegrad tour NAME          one section (same heading and text), exit 0/1
 *   tapegrad tour --quick [NAME]  the same at tiny sizes (for tests, and
 *                               debug or sanitizer builds; the figures are
 *                               then too small to mean much)
 *   tapegrad tour --help | -h   the tour's help, exit 0
 *   anything else               one line on stderr, exit 2 (two sections,
 *                               --list with a section, an unknown option)
 *  - Options follow the command's rule (cli/cli.h): --quick and --list may
 *    come before or after the section, and given twice count once.
 *  - The sizes are chosen so that the whole tour finishes in well under a
 *    minute on 2 cores; each section says which `tapegrad demo` command runs
 *    it at other sizes.
 *  - Output is plain text on stdout. Progress ("tour 3/5 chunk: [5/12] ...")
 *    goes to stderr only when stderr is a terminal.
 *  - Before each section the library's block cache is emptied and the
 *    process's peak RSS reset (Linux, where allowed), so that the figures a
 *    section prints are its own.
 */
#include <stdio.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"

typedef struct tour_section {
    const char *name;  /* argument of `tapegrad tour NAME` */
    const char *title; /* one line */
    int (*run)(void);  /* CLI_EXIT_OK or CLI_EXIT_FAIL */
} tour_section;

static void fresh_rss(void);
static bool g_quick; /* --quick: tiny sizes */

/* ---- 1. in-place ---------------------------------------------------------------- */

static int tour_inplace(void) {
    printf("Story: an entropy backward \"stabilised\" the logits in place (sub_ then add_)\n"
           "while the log-prob op had saved them. The values came back, the version\n"
           "counter did not, and backward failed with PyTorch's \"modified by an inplace\n"
           "operation\" error. Here is the same bug with two small custom ops.\n\n");
    cli_inplace_opts o = cli_inplace_defaults();
    return cli_inplace_run(&o);
}

/* ---- 2. entropy ------------------------------------------------------------------- */

static int tour_entropy(void) {
    printf("Story: an RL trainer computed the entropy of every token's distribution with\n"
           "its gradient recorded although its coefficient in the loss was 0: autograd\n"
           "kept [seq, vocab] softmax/log-softmax activations for nothing, GBs per sample\n"
           "on long sequences. The same measured here, with the library's exact\n"
           "accounting ('tapegrad demo entropy --seq N --vocab V' for other sizes).\n\n");
    cli_entropy_opts o = cli_entropy_defaults();
    if (g_quick) {
        o.seq = 64;
        o.vocab = 2048;
        o.reps = 1;
    }
    return cli_entropy_run(&o);
}

/* ---- 3. chunk ----------------------------------------------------------------------- */

static int tour_chunk(void) {
    printf("Story: even with the entropy fixed, a full-sequence log_softmax materialises\n"
           "several [seq, vocab] f32 tensors. Trainers chunk it along the sequence and\n"
           "recompute in backward: tens of GB saved at long sequences, but each step\n"
           "2.4-4.5x slower. The table below is the one they publish, at a size that runs\n"
           "in seconds ('tapegrad demo chunk --seq N,... --chunk C,...' for others).\n\n");
    cli_chunk_opts o = cli_chunk_defaults();
    if (g_quick) {
        o.seq[0] = 64;
        o.seq[1] = 256;
        o.chunk[1] = 32;
        o.chunk[2] = 128;
        o.vocab = 2048;
        o.reps = 1;
    }
    return cli_chunk_run(&o);
}

/* ---- 4. leak ------------------------------------------------------------------------- */

/* The leak demo, smaller than its defaults so that the tour stays quick: first
 * the bug (losses kept as they are), then the fix (--detach). */
static int tour_leak(void) {
    cli_leak_opts o = cli_leak_defaults();
    o.microbatches = 6;
    o.seq = g_quick ? 32 : 256;
    o.vocab = g_quick ? 512 : 4096;
    printf("Story: per-microbatch losses were appended to a list for logging without\n"
           "detach(). Each kept its graph, and through it the microbatch's buffers:\n"
           "+164 MiB per microbatch, out of memory at 128. The loop of 'tapegrad demo\n"
           "leak', at a smaller size. First the bug: each microbatch's loss is kept for\n"
           "logging as it is.\n\n");
    int rc = cli_leak_run(&o);
    printf("\nNow the fix, the same loop with --detach: each loss is kept as\n"
           "tg_detach(loss). (The process's peak RSS is reset first where Linux allows\n"
           "it; otherwise it keeps the value the first loop reached.)\n\n");
    o.detach = true;
    o.brief = true;
    fresh_rss();
    int rc2 = cli_leak_run(&o);
    printf("\nOne more case: 'tapegrad demo leak --log-entropy-with-grad' keeps an\n"
           "entropy computed with its gradient recorded: its node holds the logits as a\n"
           "saved tensor, even with --detach.\n");
    return rc == CLI_EXIT_OK && rc2 == CLI_EXIT_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- 5. linear ------------------------------------------------------------------------ */

static int tour_linear(void) {
    printf("Story: even fused and chunked, the log-prob op starts from the logits, and\n"
           "the logits and their gradient are two [tokens, vocab] buffers: 32 GiB each\n"
           "in f32 at 65k tokens x 128k vocabulary. Computing them block by block from\n"
           "the last hidden states and the output layer's weight, and turning each block\n"
           "into its gradient in place, they never exist whole. The same step both ways\n"
           "('tapegrad demo linear --seq N --hidden D --vocab V' for other sizes,\n"
           "'tapegrad bench linear-logprob' for the timings at trainer sizes).\n\n");
    cli_linear_opts o = cli_linear_defaults();
    if (g_quick) {
        o.seq = 64;
        o.hidden = 32;
        o.vocab = 2048;
        o.workspace_mib = 1;
    }
    return cli_linear_run(&o);
}

static const tour_section TOUR[] = {
    {"inplace", "An in-place edit of a saved tensor breaks backward (and the fix)",
     tour_inplace},
    {"entropy", "An entropy only logged, but recorded for backward (and the fix)",
     tour_entropy},
    {"chunk", "Chunking the log-prob: memory vs time, composite vs fused", tour_chunk},
    {"leak", "Losses kept for logging keep their graphs alive (and the fix)", tour_leak},
    {"linear", "The logits never exist: log-probs from the hidden states", tour_linear},
};
#define TOUR_N ((int)(sizeof TOUR / sizeof TOUR[0]))

/* Between sections: gives the library's cached blocks back and resets the
 * process's peak RSS (VmHWM) where Linux allows it, so that a section's
 * "peak RSS" is its own, not the high-water mark of the sections before. */
static void fresh_rss(void) {
    tg_mem_empty_cache(TG_CPU);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static void tour_list(void) {
    printf("Sections of the tour:\n");
    for (int i = 0; i < TOUR_N; i++)
        printf("  %d. %-10s %s\n", i + 1, TOUR[i].name, TOUR[i].title);
}

typedef struct tour_opts {
    bool list, quick;
    const tour_section *only; /* the SECTION given, or NULL for all */
} tour_opts;

/* A positional argument: the one section to run. */
static int take_section(const char *arg, void *opts) {
    tour_opts *o = opts;
    if (o->only)
        return cli_usage_error("too many arguments for 'tour': one section at most "
                               "(try 'tapegrad tour --list')");
    for (int k = 0; k < TOUR_N && !o->only; k++)
        if (strcmp(arg, TOUR[k].name) == 0)
            o->only = &TOUR[k];
    if (!o->only)
        return cli_usage_error("unknown tour section '%s' (try 'tapegrad tour --list')", arg);
    return CLI_EXIT_OK;
}

static const cli_opt TOUR_OPTS[] = {
    {.name = "--quick", CLI_FLAG(tour_opts, quick),
     .help = "tiny sizes (for tests and sanitizer builds; the figures are then too small to "
             "mean much)"},
    {.name = "--list", CLI_FLAG(tour_opts, list), .help = "list the sections (no SECTION then)"},
};

const cli_command cli_tour_command = {
    .name = "tour",
    .opts = TOUR_OPTS,
    .n_opts = CLI_N(TOUR_OPTS),
    .args = "[SECTION]",
    .arg = take_section,
    .usage_more = "       tapegrad tour --list\n",
    .about = "Walks through the demos, one section per way a training loss wastes or\n"
             "breaks memory, each running real code and explaining what it shows.\n"
             "SECTION runs only that section (see --list).\n",
    .exit_status = "0 every section passed, 1 a section failed, 2 bad usage.",
};

void cli_tour_help(void) { cli_help(stdout, &cli_tour_command, NULL); }

int cli_tour(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_tour_help();
        return CLI_EXIT_OK;
    }
    tour_opts o = {false, false, NULL};
    int rc = cli_options_parse(&cli_tour_command, argc, argv, &o, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    const tour_section *only = o.only;
    bool list = o.list;
    g_quick = o.quick;
    if (list && only)
        return cli_usage_error("'tour --list' takes no section");
    if (list) {
        tour_list();
        return CLI_EXIT_OK;
    }

    printf("tapegrad %s tour (backends: %s)%s\n", tg_lib_version(), tg_build_backends(),
           g_quick ? ", quick: tiny sizes" : "");
    printf("Each section runs real code against the library and explains what it shows.\n"
           "Every number below is measured now, on this machine.\n\n");
    tour_list();

    int failed = 0;
    for (int i = 0; i < TOUR_N; i++) {
        if (only && only != &TOUR[i])
            continue;
        char title[160], prefix[48];
        snprintf(title, sizeof title, "Section %d/%d: %s", i + 1, TOUR_N, TOUR[i].title);
        snprintf(prefix, sizeof prefix, "tour %d/%d %s:", i + 1, TOUR_N, TOUR[i].name);
        cli_heading(title);
        cli_progress_prefix(prefix);
        cli_progress("starting");
        fresh_rss();
        rc = TOUR[i].run();
        cli_progress_clear();
        if (rc != CLI_EXIT_OK) {
            failed++;
            printf("\n[section '%s' FAILED]\n", TOUR[i].name);
        }
    }
    cli_progress_prefix(NULL);
    printf("\nTour finished: %s.\n", failed ? "some sections FAILED" : "all sections passed");
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
