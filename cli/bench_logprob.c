/* cli/bench_logprob.c - `tapegrad bench logprob`: time, exact memory and
 * roofline of tg_logprob_entropy, fused vs composite, on the CPU or a GPU.
 *
 * Contract:
 *   tapegrad bench logprob [--device cpu|cuda] [--seq N,...] [--vocab V,...]
 *       [--chunk C,...] [--impl fused,composite] [--entropy-grad on,off]
 *       [--threads T] [--reps R] [--dtype f32|f64|bf16] [--seed S]
 *       [--bandwidth-mib M] [--json] [--trace FILE.json] [--plot FILE.svg]
 *       [--dot FILE]
 *   (also --opt=value). Defaults: device cpu, seq 2048,8192,32768, vocab
 *   32000,128256 (configurations above 80% of RAM skipped), chunk 0,
 *   both impls, entropy-grad on,off, threads omp_get_max_threads(), reps 5,
 *   f32, seed 1, bandwidth buffer 1024 MiB. With --device cuda the defaults
 *   of the lists are the GPU table's: seq 32768,65536,131072, vocab
 *   32000,128256, chunk 0,8192 (the options given still override them).
 *  - At start, cpu: the machine's bandwidth (cli_bandwidth_measure over M MiB
 *    with T threads, best of 3), reported as machine_gbps (the table's
 *    header, the JSON). cuda: no bandwidth pass (--bandwidth-mib is ignored);
 *    the device's name and theoretical peak bandwidth (tg_cuda_get_props:
 *    2 x memory clock x bus width) are in the table's header and the JSON,
 *    and the peak in GB/s is machine_gbps, called "device peak"; when the device does not
 *    report it, machine_gbps and every roofline are 0 and the table's header
 *    says so. Without a CUDA device: one line "tapegrad: bench logprob: no
 *    CUDA device: <tg_cuda_unavailable_reason()>", exit 1.
 *  - One configuration per element of seq x vocab x impl x chunk x
 *    entropy_grad, in that nesting order. Logits: tg_randn (normal, std 2,
 *    seeded by seed, seq, vocab), shape (seq, vocab), requiring grad; they are
 *    made once per (seq, vocab) and shared by that pair's configurations.
 *    Targets: seeded, uniform in [0, vocab), 1% of the rows -100 (ignored).
 *    cuda: the host generates only the first R = min(seq, 256) rows of those
 *    logits (drawing 131072 x 128256 normals on the host would take several
 *    minutes per pair), copies them to the device and tiles them there to
 *    (seq, vocab) (tg_expand to (ceil(seq/R), R, vocab), tg_contiguous,
 *    tg_reshape, rows [0, seq), copied once more when seq is not a multiple
 *    of R so that the logits' storage is exactly seq x vocab), then makes
 *    that a leaf requiring grad (tg_detach). GPU logits therefore repeat every
 *    R rows: fine for what is measured (time, bytes, bandwidth), not for
 *    comparing values with the cpu run. The targets are the cpu run's, copied
 *    to the device.
 *  - cuda, memory: a configuration whose estimate (see estimate_bytes) is
 *    above 90% of the device's memory is not run and is reported as skipped
 *    (table: "skipped: needs ~X GiB of Y GiB ..."; JSON: the configuration's
 *    keys with "skipped":true and "reason"); so is one that fails with
 *    TG_ERR_NOMEM on the device (the device cache is then emptied,
 *    tg_cuda_empty_cache, and the bench goes on). Skipped configurations are
 *    not errors and take no part in the ratios. A (seq, vocab) pair whose
 *    configurations are all skipped by the estimate gets no inputs made.
 *  - Each of the R repetitions: reset the library's peaks; forward
 *    (tg_logprob_entropy, want_entropy on, the configuration's impl, chunk and
 *    entropy_grad); loss = sum(logprob) (+ 0.01 * sum(entropy) when
 *    entropy_grad is on); tg_backward; release every tensor and the logits'
 *    gradient. fwd = the op's call, bwd = loss + backward, both on
 *    CLOCK_MONOTONIC; cuda: after tg_cuda_synchronize() (cli/lpstep.h). A
 *    repetition that leaves library bytes live (on the host or the device) is
 *    an error.
 *  - Reported per configuration: median_ms (fwd + bwd), fwd_ms, bwd_ms
 *    (medians); peak_bytes = the library's exact peak_total during a
 *    repetition minus the bytes live before it (the logits and targets; the
 *    largest over repetitions); saved_bytes = tg_mem_stats.saved right after
 *    the forward call (both from the device the configuration runs on);
 *    rss_peak_growth_bytes (always the host's) = VmHWM at the end of the
 *    configuration minus VmHWM at its start (VmHWM is reset to the current RSS
 *    at each start through /proc/self/clear_refs when the kernel allows);
 *    gbps = 3 * elem * seq * vocab / median time (one read forward, one read
 *    and one write backward); roofline_fraction = gbps / machine_gbps.
 *  - Output: a table on stdout (bench/ratios.py turns --json lines into the
 *    ratios the project tracks, with their targets), or with --json one JSON
 *    object per configuration per line (nothing else on stdout); cuda adds
 *    "device":"cuda", "device_name" and "skipped" to every object. Progress
 *    (the bandwidth pass, each repetition, each skipped configuration) on
 *    stderr only when it is a terminal, one line rewritten in place
 *    (cli/common.h): on success nothing else goes to a stderr that is not a
 *    terminal, except the lines announcing files with --json.
 *  - --trace/--plot (cli/common.h): the memory timeline of every
 *    configuration (after the bandwidth pass), a step mark after each; --dot:
 *    the loss of the first configuration run, just before its first backward.
 *    The lines announcing the files go to stdout after the table, or to
 *    stderr with --json.
 *  - Exit: 0; 2 with one line on stderr for a bad option (unknown, missing
 *    value, bad list element, zero or negative size, a --device other than
 *    cpu or cuda) or, cpu, configurations estimated above 80% of the physical
 *    RAM; 1 when the library fails (the configuration and tg_last_error() on
 *    one line) or --device cuda finds no device.
 */
#include <inttypes.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad.h>

#include "bandwidth.h"
#include "bench.h"
#include "lpstep.h"
#include "cli.h"
#include "common.h"

#define LP_MAX_LIST 16
#define LP_MAX_CONFIGS 4096
#define LP_MAX_DIM ((int64_t)1 << 31)
#define LP_BW_PASSES 3
#define LP_IGNORE (-100)
#define LP_TILE_ROWS 256     /* rows generated on the host for the device's logits */
#define LP_DEVICE_USABLE 0.9 /* share of the device's memory a configuration may need */
#define MIB (1024.0 * 1024.0)

typedef struct lp_opts {
    int64_t seq[LP_MAX_LIST], vocab[LP_MAX_LIST], chunk[LP_MAX_LIST];
    int impl[LP_MAX_LIST], eg[LP_MAX_LIST]; /* tg_logprob_impl; 1 = on */
    int n_seq, n_vocab, n_chunk, n_impl, n_eg;
    int64_t threads, reps, bw_mib;
    uint64_t seed;
    int dtype;  /* tg_dtype */
    int device; /* tg_device */
    bool json;
    bool fit_skip;    /* cpu: a default list is in use: skip, not refuse, what does not fit */
    cli_outputs out;
} lp_opts;

typedef struct lp_config {
    int64_t seq, vocab, chunk;
    tg_logprob_impl impl;
    bool eg;
} lp_config;

typedef struct lp_result {
    lp_config c;
    double median_ms, fwd_ms, bwd_ms, gbps, roofline;
    size_t peak_bytes, saved_bytes, rss_growth;
    bool skipped;     /* not run (too big for the device, or for RAM in the CPU's
                         default series); reason says why */
    char reason[192];
} lp_result;

/* cuda: the device's description (from tg_cuda_get_props), for the output. */
static tg_cuda_props g_props;

static const char *impl_name(tg_logprob_impl i) {
    return i == TG_LOGPROB_FUSED ? "fused" : "composite";
}
static const char *on_off(bool b) { return b ? "on" : "off"; }

/* ---- options --------------------------------------------------------------------- */


static const cli_opt LP_OPTS[] = {
    {.name = "--device", CLI_WORD(lp_opts, device, CLI_DEVICE_WORDS),
     .help = "where the logits live; cuda changes the list defaults to seq "
             "32768,65536,131072, chunk 0,8192"},
    {.name = "--seq", CLI_INT_LIST(lp_opts, seq, n_seq, 1, LP_MAX_DIM - 1),
     .help = "rows of the logits"},
    {.name = "--vocab", CLI_INT_LIST(lp_opts, vocab, n_vocab, 1, LP_MAX_DIM - 1),
     .meta = "V,...",
     .help = "columns, the vocabulary size; with a default list, configurations above 80% "
             "of RAM are reported as skipped"},
    {.name = "--chunk", CLI_INT_LIST(lp_opts, chunk, n_chunk, 0, LP_MAX_DIM - 1),
     .meta = "C,...", .help = "rows per chunk, 0 = all at once"},
    {.name = "--impl", CLI_WORD_LIST(lp_opts, impl, n_impl, CLI_IMPL_WORDS),
     .help = "the implementations to run"},
    {.name = "--entropy-grad", CLI_WORD_LIST(lp_opts, eg, n_eg, CLI_ON_OFF_WORDS),
     .help = "the entropy's gradient recorded, not recorded, or both"},
    {.name = "--threads", CLI_INT(lp_opts, threads, 1, 4096), .meta = "T",
     .help = "OpenMP threads"},
    {.name = "--reps", CLI_INT(lp_opts, reps, 1, 10000), .meta = "R",
     .help = "repetitions per configuration, median kept"},
    {.name = "--dtype", CLI_WORD(lp_opts, dtype, CLI_FLOAT_DTYPE_WORDS),
     .help = "dtype of the logits; bf16 gives f32 outputs"},
    {.name = "--seed", CLI_SEED(lp_opts, seed), .help = "seed of logits and targets"},
    {.name = "--bandwidth-mib", CLI_INT(lp_opts, bw_mib, 1, 1 << 20), .meta = "M",
     .help = "buffer of the bandwidth pass at start; cpu only, cuda uses the device's peak"},
    {.name = "--json", CLI_FLAG(lp_opts, json),
     .help = "one JSON object per configuration per line"},
    CLI_OUTPUT_OPTS(lp_opts, out, "the loss of the first configuration run, before backward"),
};

const cli_command cli_bench_logprob_command = {
    .name = "bench logprob",
    .opts = LP_OPTS,
    .n_opts = CLI_N(LP_OPTS),
    .about = "Forward + backward of tg_logprob_entropy on seeded random logits, for every\n"
             "combination of the listed values (comma-separated lists).\n",
    .notes =
        "Columns: median ms (forward + backward), fwd/bwd ms, peak MiB (the library's\n"
        "exact peak above the logits and targets), saved MiB (bytes held for backward\n"
        "after forward), rss MiB (growth of the process's peak RSS), GB/s (3 passes\n"
        "over the logits' bytes per step), roofline (GB/s / the bandwidth measured at\n"
        "start, or with cuda the device's peak). With cuda, configurations that do not\n"
        "fit in 90% of the device's memory are reported as skipped. See\n"
        "bench/README.md.\n",
    .exit_status = "0 success, 1 a configuration failed or no CUDA device, 2 bad usage or "
                   "too big.",
};

/* The defaults: the CPU series (lp_device_defaults changes the lists for cuda). */
static lp_opts lp_defaults(void) {
    lp_opts o;
    memset(&o, 0, sizeof o);
    const int64_t seq[] = {2048, 8192, 32768}, vocab[] = {32000, 128256};
    for (int k = 0; k < 3; k++)
        o.seq[o.n_seq++] = seq[k];
    for (int k = 0; k < 2; k++)
        o.vocab[o.n_vocab++] = vocab[k];
    o.chunk[o.n_chunk++] = 0;
    o.impl[o.n_impl++] = TG_LOGPROB_FUSED;
    o.impl[o.n_impl++] = TG_LOGPROB_COMPOSITE;
    o.eg[o.n_eg++] = 1;
    o.eg[o.n_eg++] = 0;
    o.threads = omp_get_max_threads();
    o.reps = 5;
    o.bw_mib = 1024;
    o.seed = 1;
    o.dtype = TG_F32;
    o.device = TG_CPU;
    return o;
}

/* cuda: the GPU table's lists where none was given (sequence lengths of
 * current models, and a chunked run). */
static void lp_device_defaults(lp_opts *o, uint64_t given) {
    if (!cli_option_given(&cli_bench_logprob_command, given, "--seq")) {
        o->n_seq = 0;
        for (int64_t n = 32768; n <= 131072; n *= 2)
            o->seq[o->n_seq++] = n;
    }
    if (!cli_option_given(&cli_bench_logprob_command, given, "--chunk")) {
        o->chunk[0] = 0;
        o->chunk[1] = 8192;
        o->n_chunk = 2;
    }
}

void cli_bench_logprob_help(FILE *f) {
    lp_opts d = lp_defaults();
    cli_help(f, &cli_bench_logprob_command, &d);
}

static int parse_opts(int argc, char **argv, lp_opts *o) {
    uint64_t given = 0;
    int rc = cli_options_parse(&cli_bench_logprob_command, argc, argv, o, &given);
    if (rc != CLI_EXIT_OK)
        return rc;
    o->fit_skip = o->device == TG_CPU && (!cli_option_given(&cli_bench_logprob_command, given, "--seq") ||
                                          !cli_option_given(&cli_bench_logprob_command, given, "--vocab"));
    if (o->device == TG_CUDA)
        lp_device_defaults(o, given);
    return CLI_EXIT_OK;
}

/* ---- sizes and the RAM guard --------------------------------------------------- */

/* Rough bytes a configuration needs: composite keeps about 8 (N, V) tensors
 * alive at its peak (logits, log-probs, probabilities, products, gradients);
 * fused only the logits and their gradient (3 for headroom on the host, whose
 * RAM also holds everything else; on a device, where the library's exact
 * peak is the logits' size above them plus 24 bytes a row, 2.05). */
static double fused_factor(bool device) { return device ? 2.05 : 3.0; }
static double estimate_bytes(int64_t n, int64_t v, tg_logprob_impl impl, size_t elem,
                             bool device) {
    return (double)n * (double)v * (double)elem *
               (impl == TG_LOGPROB_COMPOSITE ? 8.0 : fused_factor(device)) +
           (double)n * 64.0;
}

static double phys_ram_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

static int check_ram(const lp_opts *o) {
    double ram = phys_ram_bytes(), limit = 0.8 * ram;
    if (ram <= 0.0)
        return CLI_EXIT_OK; /* unknown: nothing to compare with */
    if ((double)o->bw_mib * MIB > limit)
        return cli_usage_error("--bandwidth-mib %" PRId64 " is more than 80%% of this machine's "
                               "%.1f GiB of RAM",
                               o->bw_mib, ram / (MIB * 1024.0));
    if (o->fit_skip)
        return CLI_EXIT_OK; /* the default series: what does not fit is skipped (ram_fit) */
    size_t elem = tg_dtype_size(o->dtype);
    for (int a = 0; a < o->n_seq; a++)
        for (int b = 0; b < o->n_vocab; b++)
            for (int k = 0; k < o->n_impl; k++) {
                tg_logprob_impl impl = (tg_logprob_impl)o->impl[k];
                double need = estimate_bytes(o->seq[a], o->vocab[b], impl, elem, false);
                if (need > limit)
                    return cli_usage_error(
                        "%s seq=%" PRId64 " vocab=%" PRId64 " needs about %.1f GiB "
                        "(%s x seq x vocab x %zu bytes), more than 80%% of this machine's "
                        "%.1f GiB of RAM; refusing",
                        impl_name(impl), o->seq[a], o->vocab[b], need / (MIB * 1024.0),
                        impl == TG_LOGPROB_COMPOSITE ? "8" : "3", elem, ram / (MIB * 1024.0));
            }
    return CLI_EXIT_OK;
}

/* cpu, default series: a configuration estimated above 80% of RAM is skipped. */
static void check_ram_fit(const lp_opts *o, lp_result *r) {
    double ram = phys_ram_bytes();
    double need = estimate_bytes(r->c.seq, r->c.vocab, r->c.impl, tg_dtype_size(o->dtype), false);
    if (ram <= 0.0 || need <= 0.8 * ram)
        return;
    r->skipped = true;
    snprintf(r->reason, sizeof r->reason,
             "needs ~%.1f GiB of %.1f GiB RAM (%s x seq x vocab x %zu bytes; 80%% usable)",
             need / (MIB * 1024.0), ram / (MIB * 1024.0),
             r->c.impl == TG_LOGPROB_COMPOSITE ? "8" : "3", tg_dtype_size(o->dtype));
}

/* ---- progress on stderr ------------------------------------------------------- */

/* Progress goes through cli/common.c: one line rewritten in place when stderr
 * is a terminal, nothing otherwise (cli/cli.h). */
#define progress cli_progress
#define progress_done cli_progress_clear

/* ---- data ------------------------------------------------------------------------ */

/* Seeded normal logits of dtype dt (bf16: drawn in f32, rounded). */
static tg_tensor *randn_of(tg_dtype dt, int64_t n, int64_t v, uint64_t seed) {
    if (dt != TG_BF16) return tg_randn(dt, TG_SHAPE(n, v), seed, 0.0, 2.0);
    tg_tensor *f = tg_randn(TG_F32, TG_SHAPE(n, v), seed, 0.0, 2.0);
    tg_tensor *b = f ? tg_to_dtype(f, TG_BF16) : NULL;
    tg_release(f);
    return b;
}

/* Device logits (n, v) requiring grad: the seeded host block (r, v) copied
 * to the device, repeated there ceil(n / r) times and cut to n rows (see the
 * contract). Every intermediate is released; NULL on failure. */
static tg_tensor *tile_on_device(const lp_opts *o, int64_t n, int64_t v, uint64_t seed) {
    const int64_t r = n < LP_TILE_ROWS ? n : LP_TILE_ROWS, b = (n + r - 1) / r;
    tg_tensor *host = NULL, *blk = NULL, *ex = NULL, *full = NULL, *flat = NULL, *rows = NULL,
              *cut = NULL, *leaf = NULL;
    host = randn_of(o->dtype, r, v, seed);
    if (host)
        blk = tg_to_device(host, TG_CUDA);
    if (blk)
        ex = tg_expand(blk, TG_SHAPE(b, r, v)); /* a stride-0 view: no bytes yet */
    if (ex)
        full = tg_contiguous(ex); /* the one device-side copy of b x r rows */
    if (full)
        flat = tg_reshape(full, TG_SHAPE(b * r, v)); /* a view of the contiguous copy */
    if (flat)
        rows = tg_slice(flat, 0, 0, n, 1);
    /* A cut that leaves rows unused would make the logits' storage bigger than
     * seq x vocab, and saved_bytes counts a saved tensor's whole storage. */
    if (rows)
        cut = b * r == n ? tg_contiguous(rows) : tg_clone(rows);
    if (cut)
        leaf = tg_detach(cut);
    if (leaf && tg_set_requires_grad(leaf, true) != TG_OK) {
        tg_release(leaf);
        leaf = NULL;
    }
    tg_release(cut);
    tg_release(rows);
    tg_release(flat);
    tg_release(full);
    tg_release(ex);
    tg_release(blk);
    tg_release(host);
    return leaf;
}

/* Seeded logits (n, v) requiring grad, and targets (n) with 1% ignored rows,
 * on the configured device. */
static bool make_inputs(const lp_opts *o, int64_t n, int64_t v, tg_tensor **logits,
                        tg_tensor **targets) {
    const uint64_t s = cli_seed_mix(o->seed, n, v);
    *targets = NULL;
    if (o->device == TG_CUDA) {
        *logits = tile_on_device(o, n, v, s);
        if (!*logits)
            return false;
    } else {
        *logits = randn_of(o->dtype, n, v, s);
        if (!*logits || tg_set_requires_grad(*logits, true) != TG_OK)
            return false;
    }
    /* targets in [0, v), one row in 100 ignored */
    tg_tensor *y = tg_randint(TG_SHAPE(n), s + 1, 0, v), *u = tg_randint(TG_SHAPE(n), s + 2, 0, 100);
    if (y && u) {
        int64_t *yv = tg_data(y); // (n)
        const int64_t *uv = tg_data(u); // (n)
        for (int64_t i = 0; i < n; i++)
            if (uv[i] == 0)
                yv[i] = LP_IGNORE;
        *targets = o->device == TG_CUDA ? tg_to_device(y, TG_CUDA) : tg_retain(y);
    }
    tg_release(y);
    tg_release(u);
    return *targets != NULL;
}

/* ---- one configuration --------------------------------------------------------------- */

/* Resets VmHWM to the current RSS; false when the kernel does not allow it. */
static bool reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static void describe(char *buf, size_t n, const lp_config *c) {
    snprintf(buf, n, "%s seq=%" PRId64 " vocab=%" PRId64 " chunk=%" PRId64 " entropy_grad=%s",
             impl_name(c->impl), c->seq, c->vocab, c->chunk, on_off(c->eg));
}

static int lib_fail(const lp_config *c, const char *what) {
    char d[160];
    describe(d, sizeof d, c);
    progress_done();
    fflush(stdout);
    fprintf(stderr, "tapegrad: bench logprob: %s: %s failed: %s: %s\n", d, what,
            tg_status_name(tg_last_status()), tg_last_error());
    return CLI_EXIT_FAIL;
}

static bool g_dot_written; /* announced with the other files, at the end */

/* --dot: draws the first configuration's loss before its backward (untimed). */
static int dot_hook(tg_tensor *loss, void *user) {
    const cli_outputs *dot = ((const void *const *)user)[0];
    const lp_config *c = ((const void *const *)user)[1];
    char name[160];
    describe(name, sizeof name, c);
    const char *names[1] = {name};
    progress_done();
    int rc = cli_outputs_dot(dot, &loss, 1, names, NULL);
    g_dot_written = rc == CLI_EXIT_OK;
    return rc;
}

/* One repetition: the shared measured step (cli/lpstep.c) with loss
 * -mean(logprob), minus 0.01 * mean(entropy) when entropy-grad is on.
 * CLI_LP_NOMEM (nothing printed) when the device ran out of memory. */
static int run_rep(const lp_config *c, tg_device dev, tg_tensor *logits, tg_tensor *targets,
                   double *fwd, double *bwd, size_t *peak, size_t *saved,
                   const cli_outputs *dot) {
    char who[192];
    describe(who, sizeof who, c);
    cli_lp_config lc = {c->impl, c->chunk, c->eg, 0.01, dev};
    cli_lp_measure m;
    const void *hook_args[2] = {dot, c};
    int rc = cli_lp_step(who, logits, targets, &lc, &m, dot ? dot_hook : NULL, (void *)hook_args,
                         NULL, NULL, 0);
    if (rc != CLI_EXIT_OK) {
        progress_done();
        return rc;
    }
    *fwd = m.fwd_ms;
    *bwd = m.bwd_ms;
    *peak = m.peak_bytes;
    *saved = m.saved_bytes;
    return CLI_EXIT_OK;
}

/* All repetitions of one configuration; dot: draw its first loss. Returns
 * CLI_EXIT_OK, CLI_EXIT_FAIL (printed) or CLI_LP_NOMEM (not printed). */
static int run_config(const lp_opts *o, int idx, int total, double machine_gbps,
                      tg_tensor *logits, tg_tensor *targets, bool dot, lp_result *r) {
    const lp_config *c = &r->c;
    int reps = (int)o->reps;
    double *fwd = calloc((size_t)reps * 3, sizeof *fwd);
    if (!fwd) {
        progress_done();
        fprintf(stderr, "tapegrad: bench logprob: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    double *bwd = fwd + reps, *tot = bwd + reps;
    char d[160];
    describe(d, sizeof d, c);

    reset_peak_rss();
    size_t rss0 = tg_peak_rss_bytes();
    r->peak_bytes = r->saved_bytes = 0;
    int rc = CLI_EXIT_OK;
    for (int k = 0; k < reps && rc == CLI_EXIT_OK; k++) {
        progress("[%d/%d] %s rep %d/%d", idx + 1, total, d, k + 1, reps);
        size_t peak = 0, saved = 0;
        rc = run_rep(c, o->device, logits, targets, &fwd[k], &bwd[k], &peak, &saved,
                     dot && k == 0 ? &o->out : NULL);
        tot[k] = fwd[k] + bwd[k];
        if (peak > r->peak_bytes)
            r->peak_bytes = peak;
        if (saved > r->saved_bytes)
            r->saved_bytes = saved;
    }
    if (rc == CLI_EXIT_OK) {
        size_t rss1 = tg_peak_rss_bytes();
        r->rss_growth = rss1 > rss0 ? rss1 - rss0 : 0;
        r->median_ms = cli_median(tot, reps);
        r->fwd_ms = cli_median(fwd, reps);
        r->bwd_ms = cli_median(bwd, reps);
        double bytes = 3.0 * (double)tg_dtype_size(o->dtype) * (double)c->seq * (double)c->vocab;
        r->gbps = r->median_ms > 0.0 ? bytes / (r->median_ms * 1e-3) / 1e9 : 0.0;
        r->roofline = machine_gbps > 0.0 ? r->gbps / machine_gbps : 0.0;
    }
    free(fwd);
    return rc;
}

/* ---- output ------------------------------------------------------------------------------- */

static void print_json(const lp_opts *o, const lp_result *r, double machine_gbps) {
    cli_json j = cli_json_begin(stdout);
    cli_json_str(&j, "impl", impl_name(r->c.impl));
    cli_json_int(&j, "seq", r->c.seq);
    cli_json_int(&j, "vocab", r->c.vocab);
    cli_json_int(&j, "chunk", r->c.chunk);
    cli_json_bool(&j, "entropy_grad", r->c.eg);
    cli_json_int(&j, "threads", o->threads);
    cli_json_str(&j, "dtype", tg_dtype_name(o->dtype));
    if (!r->skipped) { /* a skipped configuration: where and why, no measurements */
        cli_json_num(&j, "median_ms", "%.4f", r->median_ms);
        cli_json_num(&j, "fwd_ms", "%.4f", r->fwd_ms);
        cli_json_num(&j, "bwd_ms", "%.4f", r->bwd_ms);
        cli_json_uint(&j, "peak_bytes", r->peak_bytes);
        cli_json_uint(&j, "saved_bytes", r->saved_bytes);
        cli_json_uint(&j, "rss_peak_growth_bytes", r->rss_growth);
        cli_json_num(&j, "gbps", "%.4f", r->gbps);
        cli_json_num(&j, "roofline_fraction", "%.5f", r->roofline);
        cli_json_num(&j, "machine_gbps", "%.4f", machine_gbps);
    }
    if (o->device == TG_CUDA) { /* where it ran */
        cli_json_str(&j, "device", "cuda");
        cli_json_str(&j, "device_name", g_props.name);
    } else { /* which CPU kernels ran (tg_cpu_kernels) */
        cli_json_str(&j, "cpu_kernels", tg_cpu_kernels());
        cli_json_bool(&j, "stream_stores", tg_cpu_stream_stores());
    }
    cli_json_bool(&j, "skipped", r->skipped); /* too big for the device, or the RAM */
    if (r->skipped)
        cli_json_str(&j, "reason", r->reason);
    cli_json_end(&j);
}

static void print_table(const lp_opts *o, const lp_result *res, int n, double machine_gbps,
                        bool rss_reset) {
    const char *rss = rss_reset
                          ? "peak RSS reset at the start of each configuration"
                          : "peak RSS not resettable here, growth over the process's earlier peak";
    if (o->device == TG_CUDA) {
        printf("tapegrad bench logprob: %s, cuda (%s, %.1f GiB), %" PRId64
               " host threads, %" PRId64 " reps (medians), ",
               tg_dtype_name(o->dtype), g_props.name, (double)g_props.total_bytes / (MIB * 1024.0),
               o->threads, o->reps);
        if (machine_gbps > 0.0)
            printf("device peak %.2f GB/s\n", machine_gbps);
        else
            printf("device peak unknown: roofline reported as 0\n");
        printf("(device peak: 2 x memory clock x bus width, as the device reports them; "
               "logits tiled from min(seq, %d) host rows; rss: the host's, %s)\n\n",
               LP_TILE_ROWS, rss);
    } else {
        printf("tapegrad bench logprob: %s, %" PRId64 " threads, %" PRId64
               " reps (medians), machine bandwidth %.2f GB/s\n"
               "CPU kernels: %s, non-temporal stores %s\n",
               tg_dtype_name(o->dtype), o->threads, o->reps, machine_gbps, tg_cpu_kernels(),
               tg_cpu_stream_stores() ? "on" : "off");
        printf("(bandwidth: b[i] = a[i] + 1 over %" PRId64 " MiB read+write, best of %d; "
               "rss growth: %s)\n\n",
               o->bw_mib, LP_BW_PASSES, rss);
    }
    printf("%-9s %7s %7s %6s %12s %7s %10s %9s %9s %9s %9s %9s %8s %8s\n", "impl", "seq",
           "vocab", "chunk", "entropy_grad", "threads", "median_ms", "fwd_ms", "bwd_ms",
           "peak_MiB", "saved_MiB", "rss_MiB", "GB/s", "roofline");
    for (int i = 0; i < n; i++) {
        const lp_result *r = &res[i];
        if (r->skipped) {
            printf("%-9s %7" PRId64 " %7" PRId64 " %6" PRId64 " %12s %7" PRId64
                   "  skipped: %s\n",
                   impl_name(r->c.impl), r->c.seq, r->c.vocab, r->c.chunk, on_off(r->c.eg),
                   o->threads, r->reason);
            continue;
        }
        printf("%-9s %7" PRId64 " %7" PRId64 " %6" PRId64 " %12s %7" PRId64
               " %10.2f %9.2f %9.2f %9.1f %9.1f %9.1f %8.2f %8.3f\n",
               impl_name(r->c.impl), r->c.seq, r->c.vocab, r->c.chunk, on_off(r->c.eg),
               o->threads, r->median_ms, r->fwd_ms, r->bwd_ms, (double)r->peak_bytes / MIB,
               (double)r->saved_bytes / MIB, (double)r->rss_growth / MIB, r->gbps,
               r->roofline);
    }
}

/* ---- the command ------------------------------------------------------------------------------ */

/* cuda: the estimate against the device's memory; a configuration that does
 * not fit is marked skipped (not an error: the table keeps its row). */
static void check_device_fit(const lp_opts *o, lp_result *r) {
    double need =
        estimate_bytes(r->c.seq, r->c.vocab, r->c.impl, tg_dtype_size(o->dtype), true);
    double total = (double)g_props.total_bytes;
    if (need <= LP_DEVICE_USABLE * total)
        return;
    r->skipped = true;
    snprintf(r->reason, sizeof r->reason,
             "needs ~%.1f GiB of %.1f GiB (%.2f x seq x vocab x %zu bytes; %.0f%% usable)",
             need / (MIB * 1024.0), total / (MIB * 1024.0),
             r->c.impl == TG_LOGPROB_COMPOSITE ? 8.0 : fused_factor(true), tg_dtype_size(o->dtype),
             LP_DEVICE_USABLE * 100.0);
}

/* cuda: marks r skipped after the device ran out of memory (what: where),
 * and gives the device's cached blocks back so the next configuration starts
 * from an empty cache. */
static void skip_nomem(lp_result *r, const char *what) {
    r->skipped = true;
    snprintf(r->reason, sizeof r->reason, "out of device memory %s (%s)", what,
             tg_last_error());
    tg_cuda_empty_cache();
}

/* cuda: the device's description as a progress line (it is also in the
 * table's header and the JSON), and its peak in GB/s (0 when unknown), or -1
 * after printing why it cannot be read. */
static double device_peak_gbps(void) {
    if (tg_cuda_get_props(&g_props) != TG_OK) {
        fprintf(stderr, "tapegrad: bench logprob: tg_cuda_get_props failed: %s: %s\n",
                tg_status_name(tg_last_status()), tg_last_error());
        return -1.0;
    }
    double gbps = g_props.peak_bytes_per_s / 1e9;
    progress("device: %s, %.1f GiB, %d SMs, peak bandwidth %s", g_props.name,
             (double)g_props.total_bytes / (MIB * 1024.0), g_props.sm_count,
             gbps > 0.0 ? "known" : "unknown: roofline reported as 0");
    return gbps;
}

/* The bandwidth the rooflines divide by: the device's peak (cuda) or the
 * pass measured at start (cpu). Returns it, or -1 after one line on stderr. */
static double machine_bandwidth(const lp_opts *o) {
    if (o->device == TG_CUDA)
        return device_peak_gbps();
    progress("measuring memory bandwidth: b[i] = a[i] + 1 over %" PRId64
             " MiB, %" PRId64 " threads, best of %d",
             o->bw_mib, o->threads, LP_BW_PASSES);
    double gbps = cli_bandwidth_measure((size_t)o->bw_mib << 20, (int)o->threads, LP_BW_PASSES);
    progress_done();
    if (gbps <= 0.0) {
        fprintf(stderr, "tapegrad: bench logprob: cannot allocate the %" PRId64
                        " MiB bandwidth buffer\n",
                o->bw_mib);
        return -1.0;
    }
    /* also in the table's header and the JSON (machine_gbps) */
    progress("machine bandwidth: %.2f GB/s (read+write, %" PRId64 " threads)", gbps,
             o->threads);
    return gbps;
}

/* The configurations of one (seq, vocab) pair, in the nesting order, into
 * res[0 .. n_impl x n_chunk x n_eg); those too big for the device (cuda) or
 * the RAM (cpu, default series) marked skipped. Returns how many can run. */
static int plan_pair(const lp_opts *o, int64_t seq, int64_t vocab, lp_result *res) {
    int runnable = 0, j = 0;
    for (int k = 0; k < o->n_impl; k++)
        for (int ch = 0; ch < o->n_chunk; ch++)
            for (int e = 0; e < o->n_eg; e++, j++) {
                lp_result *r = &res[j];
                r->c = (lp_config){seq, vocab, o->chunk[ch], (tg_logprob_impl)o->impl[k],
                                   o->eg[e] != 0};
                if (o->device == TG_CUDA)
                    check_device_fit(o, r);
                else if (o->fit_skip)
                    check_ram_fit(o, r);
                runnable += !r->skipped;
            }
    return runnable;
}

/* The inputs of a pair into *logits and *targets (NULL when none can run).
 * cuda out of memory: every configuration of the pair is skipped, not an
 * error. Returns CLI_EXIT_OK or CLI_EXIT_FAIL (reported). */
static int pair_inputs(const lp_opts *o, int64_t seq, int64_t vocab, lp_result *res,
                       int per_pair, tg_tensor **logits, tg_tensor **targets) {
    const bool gpu = o->device == TG_CUDA;
    progress("making logits (%" PRId64 ", %" PRId64 ") %s and targets%s", seq, vocab,
             tg_dtype_name(o->dtype), gpu ? " on the device" : "");
    tg_clear_error();
    if (make_inputs(o, seq, vocab, logits, targets))
        return CLI_EXIT_OK;
    tg_release(*targets);
    tg_release(*logits);
    *logits = *targets = NULL;
    if (!gpu || tg_last_status() != TG_ERR_NOMEM) {
        lp_config c = {seq, vocab, 0, TG_LOGPROB_FUSED, true};
        return lib_fail(&c, "making the inputs");
    }
    for (int j = 0; j < per_pair; j++)
        if (!res[j].skipped)
            skip_nomem(&res[j], "making the inputs");
    return CLI_EXIT_OK;
}

/* Every configuration, pair by pair, into res[0..total); the JSON line of
 * each as it ends. dot: the --dot graph is still to draw (the first run). */
static int run_all(const lp_opts *o, lp_result *res, int total, double machine_gbps, bool dot) {
    const int per_pair = o->n_impl * o->n_chunk * o->n_eg;
    int rc = CLI_EXIT_OK, idx = 0;
    for (int a = 0; a < o->n_seq && rc == CLI_EXIT_OK; a++)
        for (int b = 0; b < o->n_vocab && rc == CLI_EXIT_OK; b++) {
            /* the pair's configurations first: with cuda, those too big for the
             * device are known before anything is allocated for them */
            tg_tensor *logits = NULL, *targets = NULL;
            if (plan_pair(o, o->seq[a], o->vocab[b], &res[idx]) > 0)
                rc = pair_inputs(o, o->seq[a], o->vocab[b], &res[idx], per_pair, &logits,
                                 &targets);
            for (int j = 0; j < per_pair && rc == CLI_EXIT_OK; j++, idx++) {
                lp_result *r = &res[idx];
                char label[160];
                describe(label, sizeof label, &r->c);
                if (!r->skipped) {
                    rc = run_config(o, idx, total, machine_gbps, logits, targets, dot, r);
                    dot = false;
                    if (rc == CLI_LP_NOMEM) {
                        skip_nomem(r, "during a repetition");
                        rc = CLI_EXIT_OK;
                    } else if (rc == CLI_EXIT_OK) {
                        cli_outputs_mark(&o->out, label);
                    }
                }
                if (rc == CLI_EXIT_OK && r->skipped)
                    progress("[%d/%d] %s skipped: %s", idx + 1, total, label, r->reason);
                if (rc == CLI_EXIT_OK && o->json) {
                    progress_done();
                    print_json(o, r, machine_gbps);
                }
            }
            tg_release(targets);
            tg_release(logits);
        }
    return rc;
}

int cli_bench_logprob(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_bench_logprob_help(stdout);
        return CLI_EXIT_OK;
    }
    lp_opts o = lp_defaults();
    int rc = parse_opts(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc;
    const bool gpu = o.device == TG_CUDA;
    int total = o.n_seq * o.n_vocab * o.n_impl * o.n_chunk * o.n_eg;
    if (total > LP_MAX_CONFIGS)
        return cli_usage_error("%d configurations; at most %d", total, LP_MAX_CONFIGS);
    if (!gpu && (rc = check_ram(&o)) != CLI_EXIT_OK)
        return rc;
    if (gpu && tg_cuda_device_count() == 0) {
        fprintf(stderr, "tapegrad: bench logprob: no CUDA device: %s\n",
                tg_cuda_unavailable_reason());
        return CLI_EXIT_FAIL;
    }
    omp_set_num_threads((int)o.threads);
    if ((rc = cli_outputs_begin(&o.out)) != CLI_EXIT_OK)
        return rc;
    FILE *note = o.json ? stderr : stdout;
    double machine_gbps = machine_bandwidth(&o);
    lp_result *res = machine_gbps >= 0.0 ? calloc((size_t)total, sizeof *res) : NULL;
    if (!res) {
        if (machine_gbps >= 0.0)
            fprintf(stderr, "tapegrad: bench logprob: out of memory\n");
        cli_outputs_end(&o.out, NULL, false, stderr);
        return CLI_EXIT_FAIL;
    }
    bool rss_reset = reset_peak_rss();
    rc = run_all(&o, res, total, machine_gbps, o.out.dot != NULL);
    progress_done();
    if (rc == CLI_EXIT_OK && !o.json)
        print_table(&o, res, total, machine_gbps, rss_reset);
    fflush(stdout);
    if (rc == CLI_EXIT_OK && g_dot_written)
        cli_outputs_dot_note(&o.out, note);
    if (cli_outputs_end(&o.out, "tapegrad bench logprob", rc == CLI_EXIT_OK, note) !=
        CLI_EXIT_OK)
        rc = CLI_EXIT_FAIL;
    free(res);
    return rc;
}
