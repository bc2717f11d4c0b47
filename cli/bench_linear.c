/* cli/bench_linear.c - `tapegrad bench linear-logprob`: the output layer's
 * log-prob and entropy from hidden states, the logits made (matmul then the
 * fused logits op) against the fused linear op that never makes them; and
 * (--mode loss) a loss known in forward, tg_linear_loss, against the fused
 * op followed by the same loss.
 *
 * Contract:
 *   tapegrad bench linear-logprob [--device cpu|cuda] [--seq N,...]
 *       [--hidden D,...] [--vocab V,...] [--shapes NxDxV,...] [--chunk C,...]
 *       [--mode materialized,fused,fused-no-entropy-grad,loss] [--workspace-mib M]
 *       [--dtype f32,bf16,f64] [--tf32 on|off] [--reps R] [--seed S] [--threads T] [--json]
 *   (also --opt=value). Shapes: every seq x hidden x vocab, or the --shapes
 *   list. CPU defaults: seq 4096,8192, hidden 1024, vocab 32000,128256.
 *   CUDA defaults: shapes 8192x4096x128256 (a 8B-class output layer) and
 *   262144x4096x62080 (262144 tokens on one rank holding 62080 vocabulary
 *   rows). chunk 0 (from the budget), the first three modes, workspace the
 *   default (cpu: an eighth of the logits, at most 256 MiB; cuda: the
 *   device's, tg_linear_logprob_default_workspace),
 *   dtypes f32,bf16 (cuda: bf16), reps 3, seed 1, threads omp_get_max_threads().
 *   bf16: hidden and weight in bf16; materialized is tg_matmul of the two
 *   (f32 logits, from f32 copies of both) then the fused logits op; fused
 *   converts a chunk and a block at a time.
 *  - Inputs per shape (cli/linstep.h): hidden (N, D) and weight (V, D), both
 *    requiring grad, targets with 1% ignored; made once per shape.
 *  - Each repetition is one step of cli_lin_step (forward, loss -mean(logprob)
 *    - 0.01 mean(entropy) when the entropy has a gradient, backward, both
 *    gradients dropped). --mode loss gives two configurations whose steps
 *    alternate (each first every other repetition): "loss", one step of
 *    cli_lin_step's CLI_LIN_LOSS (tg_linear_loss with a PPO loss: clipped
 *    surrogate and entropy bonus, token-mean, on seeded old log-probs and
 *    advantages made once per shape), and "fused+loss", CLI_LIN_FUSED_LOSS
 *    (tg_linear_logprob_entropy, then the same loss on the whole batch).
 *    Reported per configuration (medians over reps):
 *    median_ms, fwd_ms, bwd_ms; peak_bytes (the library's exact peak during a
 *    step beyond the inputs, the largest over reps); saved_bytes;
 *    grad_bytes (dh + dW); logits_bytes (N V elements, for scale);
 *    workspace_bytes, chunk_rows, vocab_block (fused, fused+loss: the plan);
 *    loss: chunks and chunk_rows (how many chunks its callback saw, and the
 *    rows of the largest), "interleaved": true on both of its rows; and the
 *    host's rss_peak_growth_bytes (VmHWM at the end minus at the start; VmHWM
 *    reset at each start where the kernel allows; not for loss and
 *    fused+loss, whose steps share the heap: "-" in the table).
 *  - A configuration whose estimate passes 80% of the RAM (cpu) or 90% of the
 *    device's memory (cuda), or that runs out of device memory, is reported
 *    as skipped with the reason (JSON: "skipped":true, "reason").
 *  - Output: a table, with per shape the ratios fused / materialized of
 *    time and peak, and loss / fused+loss; or with --json one object per
 *    configuration per line.
 *    bench/linear_targets.py checks the targets from the JSON lines.
 *  - Exit: 0; 1 a configuration failed; 2 bad usage (one line on stderr);
 *    1 with one line when --device cuda has no device.
 */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad.h>

#include "bench.h"
#include "cli.h"
#include "common.h"
#include "linstep.h"

#define MAXL 16
#define MIB (1024.0 * 1024.0)

typedef struct shape3 {
    int64_t n, d, v;
} shape3;

typedef struct shape_list {
    shape3 v[MAXL * MAXL];
    int n;
} shape_list;

typedef struct lb_opts {
    int device; /* tg_device */
    int64_t seq[MAXL], hidden[MAXL], vocab[MAXL]; /* shapes: every seq x hidden x vocab */
    int n_seq, n_hidden, n_vocab;
    shape_list shapes; /* or these (--shapes); made from the lists after parsing */
    int64_t chunks[MAXL];
    int nchunks;
    int modes[4]; /* 0 materialized, 1 fused, 2 fused-no-entropy-grad, 3 loss */
    int nmodes;
    int64_t ws_mib, reps, threads;
    uint64_t seed;
    int dts[3]; /* tg_dtype */
    int ndts;
    bool tf32; /* tg_set_allow_tf32 for the run (f32 GEMMs on the device) */
    bool json;
} lb_opts;

/* The rows: the three modes, then the two sides of --mode loss. */
enum { ROW_LOSS = 3, ROW_FUSED_LOSS = 4 };
static const char *const MODE_NAMES[5] = {"materialized", "fused", "fused-no-entropy-grad", "loss",
                                          "fused+loss"};

static const cli_word MODE_WORDS[] = {{"materialized", 0},
                                      {"fused", 1},
                                      {"fused-no-entropy-grad", 2},
                                      {"loss", 3},
                                      {NULL, 0}};

/* --shapes NxDxV,...: into the shape_list at field. */
static bool parse_shapes(const char *name, const char *val, void *field) {
    shape_list *list = field;
    list->n = 0;
    for (const char *p = val; *p;) {
        long long n, d, v;
        int used = 0;
        if (sscanf(p, "%lldx%lldx%lld%n", &n, &d, &v, &used) != 3 || n < 1 || d < 1 || v < 1 ||
            list->n >= MAXL * MAXL || (p[used] != ',' && p[used] != '\0')) {
            cli_usage_error("invalid value '%s' for %s (expected NxDxV,... with positive sizes)",
                            val, name);
            return false;
        }
        list->v[list->n++] = (shape3){n, d, v};
        p += used + (p[used] == ',');
    }
    return true;
}

static const cli_opt LB_OPTS[] = {
    {.name = "--device", CLI_WORD(lb_opts, device, CLI_DEVICE_WORDS), .help = "where to run"},
    {.name = "--seq", CLI_INT_LIST(lb_opts, seq, n_seq, 1, (int64_t)1 << 24),
     .help = "rows; the shapes are every seq x hidden x vocab"},
    {.name = "--hidden", CLI_INT_LIST(lb_opts, hidden, n_hidden, 1, 65536), .meta = "D,...",
     .help = "hidden size"},
    {.name = "--vocab", CLI_INT_LIST(lb_opts, vocab, n_vocab, 1, (int64_t)1 << 22),
     .meta = "V,...", .help = "vocabulary"},
    {.name = "--shapes", CLI_CUSTOM(lb_opts, shapes, parse_shapes), .meta = "NxDxV,...",
     .help = "explicit shapes instead of the three lists",
     .default_text = "cpu: the lists; cuda: 8192x4096x128256,262144x4096x62080"},
    {.name = "--chunk", CLI_INT_LIST(lb_opts, chunks, nchunks, 0, (int64_t)1 << 24),
     .meta = "C,...", .help = "fused, loss: rows per chunk, 0 = from the budget"},
    {.name = "--mode", CLI_WORD_LIST(lb_opts, modes, nmodes, MODE_WORDS), .meta = "MODE,...",
     .help = "the ways to run: materialized, fused, fused-no-entropy-grad, loss"},
    {.name = "--workspace-mib", CLI_INT(lb_opts, ws_mib, 1, 1 << 20), .meta = "M",
     .help = "fused, loss: workspace budget",
     .default_text = "cpu: an eighth of the logits, at most 256; cuda: the device's"},
    {.name = "--dtype", CLI_WORD_LIST(lb_opts, dts, ndts, CLI_FLOAT_DTYPE_WORDS),
     .help = "dtypes of hidden and weight", .default_text = "f32,bf16; cuda: bf16"},
    {.name = "--tf32", CLI_SWITCH(lb_opts, tf32),
     .help = "f32 GEMMs on the device may use TF32"},
    {.name = "--reps", CLI_INT(lb_opts, reps, 1, 1000), .meta = "R",
     .help = "repetitions, medians kept"},
    {.name = "--seed", CLI_SEED(lb_opts, seed), .help = "seed of the inputs"},
    {.name = "--threads", CLI_INT(lb_opts, threads, 1, 4096), .meta = "T",
     .help = "OpenMP threads"},
    {.name = "--json", CLI_FLAG(lb_opts, json),
     .help = "one JSON object per configuration per line"},
};

const cli_command cli_bench_linear_command = {
    .name = "bench linear-logprob",
    .opts = LB_OPTS,
    .n_opts = CLI_N(LB_OPTS),
    .about =
        "The output layer's log-prob and entropy from hidden states, three ways, side\n"
        "by side: materialized (logits = hidden @ weight^T, then the fused logits op),\n"
        "fused (tg_linear_logprob_entropy: the logits never exist) and fused with the\n"
        "entropy's gradient off. Time (medians), the library's exact peak memory,\n"
        "saved bytes, RSS growth.\n"
        "--mode loss: a PPO loss (clipped surrogate, entropy bonus) two ways, their\n"
        "steps interleaved: tg_linear_loss (the gradient made in forward, three GEMMs)\n"
        "and fused+loss (tg_linear_logprob_entropy, then the same loss: four).\n",
    .exit_status = "0 success, 1 a configuration failed, 2 bad usage.",
};

static lb_opts lb_defaults(void) {
    lb_opts o;
    memset(&o, 0, sizeof o);
    o.device = TG_CPU;
    o.seq[0] = 4096;
    o.seq[1] = 8192;
    o.n_seq = 2;
    o.hidden[0] = 1024;
    o.n_hidden = 1;
    o.vocab[0] = 32000;
    o.vocab[1] = 128256;
    o.n_vocab = 2;
    o.nchunks = 1; /* chunk 0 */
    o.nmodes = 3;
    for (int k = 0; k < 3; k++)
        o.modes[k] = k;
    o.ws_mib = 0; /* the default budget (the plan's) */
    o.reps = 3;
    o.seed = 1;
    o.threads = omp_get_max_threads();
    o.dts[0] = TG_F32;
    o.dts[1] = TG_BF16;
    o.ndts = 2;
    return o;
}

void cli_bench_linear_help(FILE *f) {
    lb_opts d = lb_defaults();
    cli_help(f, &cli_bench_linear_command, &d);
}

static int parse(int argc, char **argv, lb_opts *o) {
    uint64_t given = 0;
    *o = lb_defaults();
    int rc = cli_options_parse(&cli_bench_linear_command, argc, argv, o, &given);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o->device == TG_CUDA && !cli_option_given(&cli_bench_linear_command, given, "--dtype")) {
        o->dts[0] = TG_BF16;
        o->ndts = 1;
    }
    if (cli_option_given(&cli_bench_linear_command, given, "--shapes"))
        return CLI_EXIT_OK;
    bool lists = cli_option_given(&cli_bench_linear_command, given, "--seq") ||
                 cli_option_given(&cli_bench_linear_command, given, "--hidden") ||
                 cli_option_given(&cli_bench_linear_command, given, "--vocab");
    shape_list *sl = &o->shapes;
    const int64_t n_shapes = (int64_t)o->n_seq * o->n_hidden * o->n_vocab;
    if (n_shapes > CLI_CAPACITY(shape_list, v))
        return cli_usage_error("bench linear-logprob: --seq x --hidden x --vocab make %" PRId64
                               " shapes, at most %d", n_shapes, CLI_CAPACITY(shape_list, v));
    if (o->device == TG_CUDA && !lists) {
        sl->v[sl->n++] = (shape3){8192, 4096, 128256};   /* an 8B-class output layer */
        sl->v[sl->n++] = (shape3){262144, 4096, 62080}; /* one rank's vocabulary rows */
        return CLI_EXIT_OK;
    }
    for (int a = 0; a < o->n_seq; a++)
        for (int b = 0; b < o->n_hidden; b++)
            for (int c = 0; c < o->n_vocab; c++)
                sl->v[sl->n++] = (shape3){o->seq[a], o->hidden[b], o->vocab[c]};
    return CLI_EXIT_OK;
}

static bool reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Bytes a configuration needs beyond its inputs, roughly (for skipping).
 * bf16: f32 logits; materialized also holds f32 copies of both inputs and
 * f32 gradients before they are rounded; fused its f32 accumulators. */
static double estimate(const shape3 *s, int mode, tg_dtype dt, size_t ws) {
    const bool bf = dt == TG_BF16;
    const double es = (double)tg_dtype_size(dt), les = bf ? 4.0 : es;
    const double nv = (double)s->n * (double)s->v * les;
    const double rows = ((double)s->n + (double)s->v) * (double)s->d;
    return mode == 0 ? 2.0 * nv + rows * (es + (bf ? 8.0 : 0.0))
                     : rows * (es + (bf ? 4.0 : 0.0)) + (double)ws;
}

typedef struct result {
    bool skipped;
    char reason[160];
    cli_lin_measure m; /* medians for the times, largest bytes */
    double total_ms;
    size_t rss_growth;
    tg_linear_logprob_plan plan; /* the fused op's (fused modes, fused+loss) */
    int64_t chunks, chunk_rows;  /* loss: the chunks its callback saw, the largest */
} result;

/* A configuration's repetitions: fwd, bwd and total times (reps each) and, in
 * r, the largest byte counts. */
typedef struct series {
    double *t; /* (3, reps) */
    int64_t reps;
    result *r;
} series;

static void series_add(series *se, int64_t k, const cli_lin_measure *m) {
    se->t[k] = m->fwd_ms;
    se->t[se->reps + k] = m->bwd_ms;
    se->t[2 * se->reps + k] = m->fwd_ms + m->bwd_ms;
    result *r = se->r;
    if (m->peak_bytes > r->m.peak_bytes) r->m.peak_bytes = m->peak_bytes;
    if (m->saved_bytes > r->m.saved_bytes) r->m.saved_bytes = m->saved_bytes;
    r->m.grad_bytes = m->grad_bytes;
}

static void series_end(series *se) {
    const int n = (int)se->reps;
    se->r->m.fwd_ms = cli_median(se->t, n);
    se->r->m.bwd_ms = cli_median(se->t + se->reps, n);
    se->r->total_ms = cli_median(se->t + 2 * se->reps, n);
}

/* The fused op's plan for this configuration (as the op will make it). */
static int fused_plan(const lb_opts *o, const shape3 *s, tg_dtype dt, int64_t chunk,
                      bool entropy_grad, tg_linear_logprob_plan *plan) {
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.chunk_rows = chunk;
    lo.workspace_bytes = (size_t)o->ws_mib << 20;
    lo.entropy_grad = entropy_grad;
    lo.device = o->device; /* the plan the op will make there */
    if (tg_linear_logprob_plan_for(s->n, s->d, s->v, dt, false, &lo, plan) != TG_OK)
        return cli_fail("bench linear-logprob", "%s", tg_last_error());
    return CLI_EXIT_OK;
}

static void skip_nomem(result *r) {
    r->skipped = true;
    snprintf(r->reason, sizeof r->reason, "out of device memory");
    tg_cuda_empty_cache();
}

static int run_config(const lb_opts *o, const shape3 *s, tg_dtype dt, int mode, int64_t chunk,
                      tg_tensor *h, tg_tensor *w, tg_tensor *y, result *r) {
    memset(r, 0, sizeof *r);
    cli_lin_config c = {mode == 0 ? CLI_LIN_MATERIALIZED : CLI_LIN_FUSED, mode != 2, chunk,
                        (size_t)o->ws_mib << 20, o->device, NULL};
    int rc = fused_plan(o, s, dt, chunk, mode != 2, &r->plan);
    if (rc != CLI_EXIT_OK) return rc;
    series se = {calloc((size_t)o->reps * 3, sizeof(double)), o->reps, r};
    if (!se.t) return cli_fail("bench linear-logprob", "out of memory");
    char who[160];
    snprintf(who, sizeof who, "bench linear-logprob: %s %s N=%" PRId64 " D=%" PRId64
             " V=%" PRId64, MODE_NAMES[mode], tg_dtype_name(dt), s->n, s->d, s->v);
    tg_peak_rss_bytes();
    reset_peak_rss();
    const size_t rss0 = tg_peak_rss_bytes();
    for (int64_t k = 0; k < o->reps; k++) {
        cli_progress("%s: rep %" PRId64 "/%" PRId64, who + 22, k + 1, o->reps);
        cli_lin_measure m;
        rc = cli_lin_step(who, h, w, y, &c, &m, NULL, NULL);
        if (rc == CLI_LIN_NOMEM) {
            skip_nomem(r);
            rc = CLI_EXIT_OK;
            break;
        }
        if (rc != CLI_EXIT_OK) break;
        series_add(&se, k, &m);
    }
    cli_progress_clear();
    if (rc == CLI_EXIT_OK && !r->skipped) {
        series_end(&se);
        size_t rss1 = tg_peak_rss_bytes();
        r->rss_growth = rss1 > rss0 ? rss1 - rss0 : 0;
    }
    free(se.t);
    return rc;
}

/* --mode loss: r[0] the loss entry (tg_linear_loss with the PPO loss), r[1]
 * the fused op followed by the same loss. Their steps alternate, each side
 * first every other repetition, so that both see the same machine. No RSS
 * growth: the two share the process's heap, and what the first step maps
 * the other reuses. */
static int run_pair(const lb_opts *o, const shape3 *s, tg_dtype dt, int64_t chunk, tg_tensor *h,
                    tg_tensor *w, tg_tensor *y, result r[2]) {
    memset(r, 0, 2 * sizeof *r);
    int rc = fused_plan(o, s, dt, chunk, true, &r[1].plan);
    if (rc != CLI_EXIT_OK) return rc;
    char who[2][160];
    for (int side = 0; side < 2; side++)
        snprintf(who[side], sizeof who[side], "bench linear-logprob: %s %s N=%" PRId64
                 " D=%" PRId64 " V=%" PRId64, MODE_NAMES[ROW_LOSS + side], tg_dtype_name(dt),
                 s->n, s->d, s->v);
    cli_lin_ppo ppo;
    if ((rc = cli_lin_ppo_inputs(who[0], h, w, y, o->seed, &ppo)) != CLI_EXIT_OK) return rc;
    const size_t ws = (size_t)o->ws_mib << 20;
    const cli_lin_config c[2] = {{CLI_LIN_LOSS, true, chunk, ws, o->device, &ppo},
                                 {CLI_LIN_FUSED_LOSS, true, chunk, ws, o->device, &ppo}};
    series se[2] = {{calloc((size_t)o->reps * 3, sizeof(double)), o->reps, &r[0]},
                    {calloc((size_t)o->reps * 3, sizeof(double)), o->reps, &r[1]}};
    if (!se[0].t || !se[1].t) rc = cli_fail("bench linear-logprob", "out of memory");
    for (int64_t k = 0; k < o->reps && rc == CLI_EXIT_OK && !r[0].skipped; k++) {
        for (int j = 0; j < 2 && rc == CLI_EXIT_OK; j++) {
            const int side = k % 2 ? 1 - j : j;
            cli_progress("%s: rep %" PRId64 "/%" PRId64, who[side] + 22, k + 1, o->reps);
            ppo.chunks = ppo.max_chunk_rows = 0;
            cli_lin_measure m;
            rc = cli_lin_step(who[side], h, w, y, &c[side], &m, NULL, NULL);
            if (rc == CLI_LIN_NOMEM) {
                skip_nomem(&r[0]);
                skip_nomem(&r[1]);
                rc = CLI_EXIT_OK;
                break;
            }
            if (rc != CLI_EXIT_OK) break;
            series_add(&se[side], k, &m);
            if (side == 0) r[0].chunks = ppo.chunks, r[0].chunk_rows = ppo.max_chunk_rows;
        }
    }
    cli_progress_clear();
    if (rc == CLI_EXIT_OK && !r[0].skipped) {
        series_end(&se[0]);
        series_end(&se[1]);
    }
    free(se[0].t);
    free(se[1].t);
    cli_lin_ppo_release(&ppo);
    return rc;
}

static void print_json(const lb_opts *o, const shape3 *s, tg_dtype dt, int row, int64_t chunk,
                       const result *r, const char *devname) {
    const size_t es = dt == TG_BF16 ? 4 : tg_dtype_size(dt); /* the logits' */
    cli_json j = cli_json_begin(stdout);
    cli_json_str(&j, "bench", "linear-logprob");
    cli_json_str(&j, "device", o->device == TG_CUDA ? "cuda" : "cpu");
    cli_json_str(&j, "device_name", devname);
    cli_json_str(&j, "dtype", tg_dtype_name(dt));
    cli_json_str(&j, "mode", MODE_NAMES[row]);
    cli_json_int(&j, "seq", s->n);
    cli_json_int(&j, "hidden", s->d);
    cli_json_int(&j, "vocab", s->v);
    cli_json_int(&j, "chunk", chunk);
    cli_json_int(&j, "threads", o->threads);
    cli_json_bool(&j, "tf32", o->tf32);
    if (o->device == TG_CPU) { /* which CPU kernels ran (tg_cpu_kernels) */
        cli_json_str(&j, "cpu_kernels", tg_cpu_kernels());
        cli_json_bool(&j, "stream_stores", tg_cpu_stream_stores());
    }
    cli_json_num(&j, "logits_bytes", "%.0f", (double)s->n * (double)s->v * (double)es);
    if (row >= ROW_LOSS) cli_json_bool(&j, "interleaved", true);
    if (row == ROW_LOSS && !r->skipped) { /* what the loss's callback saw */
        cli_json_int(&j, "chunks", r->chunks);
        cli_json_int(&j, "chunk_rows", r->chunk_rows);
    } else if (row != 0 && row != ROW_LOSS) {
        cli_json_int(&j, "chunk_rows", r->plan.chunk_rows);
        cli_json_int(&j, "vocab_block", r->plan.vocab_block);
        cli_json_uint(&j, "workspace_bytes",
                      r->plan.forward_workspace > r->plan.backward_workspace
                          ? r->plan.forward_workspace
                          : r->plan.backward_workspace);
    }
    cli_json_bool(&j, "skipped", r->skipped);
    if (r->skipped) {
        cli_json_str(&j, "reason", r->reason);
    } else {
        cli_json_int(&j, "reps", o->reps);
        cli_json_num(&j, "median_ms", "%.3f", r->total_ms);
        cli_json_num(&j, "fwd_ms", "%.3f", r->m.fwd_ms);
        cli_json_num(&j, "bwd_ms", "%.3f", r->m.bwd_ms);
        cli_json_uint(&j, "peak_bytes", r->m.peak_bytes);
        cli_json_uint(&j, "saved_bytes", r->m.saved_bytes);
        cli_json_uint(&j, "grad_bytes", r->m.grad_bytes);
        if (row < ROW_LOSS) cli_json_uint(&j, "rss_peak_growth_bytes", r->rss_growth);
    }
    cli_json_end(&j);
}

static void print_row(int row, int64_t chunk, const result *r) {
    char ck[48] = "";
    if (row == ROW_LOSS)
        snprintf(ck, sizeof ck, "%" PRId64 " chunk%s of %" PRId64, r->chunks,
                 r->chunks == 1 ? "" : "s", r->chunk_rows);
    else if (row != 0)
        snprintf(ck, sizeof ck, "%" PRId64 "x%" PRId64 "%s", r->plan.chunk_rows,
                 r->plan.vocab_block, chunk ? "" : " (budget)");
    if (r->skipped) {
        printf("  %-22s %-18s skipped: %s\n", MODE_NAMES[row], row == ROW_LOSS ? "" : ck,
               r->reason);
        return;
    }
    char rss[32] = "-"; /* not for the interleaved pair (run_pair) */
    if (row < ROW_LOSS) snprintf(rss, sizeof rss, "%.1f", r->rss_growth / MIB);
    printf("  %-22s %-18s %9.1f %9.1f %9.1f %10.1f %9.2f %9.1f %9s\n", MODE_NAMES[row], ck,
           r->m.fwd_ms, r->m.bwd_ms, r->total_ms, r->m.peak_bytes / MIB, r->m.saved_bytes / MIB,
           r->m.grad_bytes / MIB, rss);
}

static void print_result(const lb_opts *o, const shape3 *s, tg_dtype dt, int row, int64_t chunk,
                         const result *r, const char *devname) {
    if (o->json) print_json(o, s, dt, row, chunk, r, devname);
    else print_row(row, chunk, r);
    fflush(stdout);
}

int cli_bench_linear(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_bench_linear_help(stdout);
        return CLI_EXIT_OK;
    }
    lb_opts o;
    int rc = parse(argc, argv, &o);
    if (rc != CLI_EXIT_OK) return rc;
    omp_set_num_threads((int)o.threads);
    tg_set_allow_tf32(o.tf32);
    char devname[128] = "cpu";
    size_t dev_total = 0;
    if (o.device == TG_CUDA) {
        if (tg_cuda_device_count() == 0) {
            fprintf(stderr, "tapegrad: bench linear-logprob: no CUDA device: %s\n",
                    tg_cuda_unavailable_reason());
            return CLI_EXIT_FAIL;
        }
        tg_cuda_props p;
        if (tg_cuda_get_props(&p) == TG_OK) {
            snprintf(devname, sizeof devname, "%s", p.name);
            dev_total = p.total_bytes;
        }
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const double ram = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    char budget[96]; /* the default on the CPU depends on the shape */
    if (o.ws_mib)
        snprintf(budget, sizeof budget, "%" PRId64 " MiB", o.ws_mib);
    else if (o.device == TG_CPU)
        snprintf(budget, sizeof budget, "an eighth of the logits, at most %zu MiB (the default)",
                 tg_linear_logprob_default_workspace(TG_CPU) >> 20);
    else
        snprintf(budget, sizeof budget, "%zu MiB (the device's default)",
                 tg_linear_logprob_default_workspace(o.device) >> 20);
    if (!o.json)
        printf("tapegrad bench linear-logprob: %s (%s), %" PRId64 " threads, %" PRId64
               " reps (medians), workspace budget %s%s\n"
               "  %-22s %-18s %9s %9s %9s %10s %9s %9s %9s\n",
               o.device == TG_CUDA ? "cuda" : "cpu", devname, o.threads, o.reps, budget,
               o.tf32 ? ", TF32 allowed" : "", "mode", "chunk x block", "fwd ms", "bwd ms",
               "total ms", "peak MiB", "saved MiB", "grads MiB", "RSS+ MiB");
    for (int si = 0; si < o.shapes.n * o.ndts && rc == CLI_EXIT_OK; si++) {
        const shape3 *s = &o.shapes.v[si / o.ndts];
        const tg_dtype dt = o.dts[si % o.ndts];
        const size_t es = dt == TG_BF16 ? 4 : tg_dtype_size(dt); /* the logits' */
        if (!o.json)
            printf("N %" PRId64 ", D %" PRId64 ", V %" PRId64 ", %s (logits %.0f MiB)\n", s->n,
                   s->d, s->v, tg_dtype_name(dt), (double)s->n * (double)s->v * (double)es / MIB);
        tg_tensor *h = NULL, *w = NULL, *y = NULL;
        double t_mat = 0, t_fused = 0, p_mat = 0, p_fused = 0;
        for (int mi = 0; mi < o.nmodes && rc == CLI_EXIT_OK; mi++) {
            const int mode = o.modes[mi];
            for (int ci = 0; ci < (mode == 0 ? 1 : o.nchunks) && rc == CLI_EXIT_OK; ci++) {
                const int64_t chunk = mode == 0 ? 0 : o.chunks[ci];
                result r[2];
                memset(r, 0, sizeof r);
                const double need = estimate(s, mode == ROW_LOSS ? 1 : mode, dt,
                                             o.ws_mib ? (size_t)o.ws_mib << 20
                                                      : tg_linear_logprob_default_workspace(o.device));
                const double inputs =
                    ((double)s->n + (double)s->v) * (double)s->d * (double)tg_dtype_size(dt);
                const double cap = o.device == TG_CUDA ? 0.9 * (double)dev_total : 0.8 * ram;
                if (cap > 0 && need + inputs > cap) {
                    r[0].skipped = r[1].skipped = true;
                    snprintf(r[0].reason, sizeof r[0].reason, "needs ~%.1f GiB of %.1f GiB",
                             (need + inputs) / (MIB * 1024), cap / (MIB * 1024));
                    memcpy(r[1].reason, r[0].reason, sizeof r[1].reason);
                } else {
                    if (!h && (rc = cli_lin_inputs("bench linear-logprob", s->n, s->d, s->v, dt,
                                                   o.device, o.seed, &h, &w, &y)) != CLI_EXIT_OK)
                        break;
                    rc = mode == ROW_LOSS ? run_pair(&o, s, dt, chunk, h, w, y, r)
                                          : run_config(&o, s, dt, mode, chunk, h, w, y, r);
                    if (rc != CLI_EXIT_OK) break;
                }
                if (!r[0].skipped && mode == 0)
                    t_mat = r[0].total_ms, p_mat = (double)r[0].m.peak_bytes;
                if (!r[0].skipped && mode == 1 && !t_fused)
                    t_fused = r[0].total_ms, p_fused = (double)r[0].m.peak_bytes;
                if (mode != ROW_LOSS) {
                    print_result(&o, s, dt, mode, chunk, &r[0], devname);
                    continue;
                }
                print_result(&o, s, dt, ROW_LOSS, chunk, &r[0], devname);
                print_result(&o, s, dt, ROW_FUSED_LOSS, chunk, &r[1], devname);
                if (!o.json && !r[0].skipped && r[0].total_ms > 0 && r[1].m.peak_bytes > 0)
                    printf("  loss / fused+loss: time %.2fx (speed-up %.2fx), peak memory %.2fx "
                           "(%.1f MiB against %.1f)\n",
                           r[0].total_ms / r[1].total_ms, r[1].total_ms / r[0].total_ms,
                           (double)r[0].m.peak_bytes / (double)r[1].m.peak_bytes,
                           r[0].m.peak_bytes / MIB, r[1].m.peak_bytes / MIB);
            }
        }
        if (!o.json && t_mat > 0 && t_fused > 0)
            printf("  fused / materialized: time %.2fx, peak memory %.2fx (%.1fx less)\n",
                   t_fused / t_mat, p_fused / p_mat, p_mat / p_fused);
        tg_release(h);
        tg_release(w);
        tg_release(y);
    }
    return rc;
}
