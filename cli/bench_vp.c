/* cli/bench_vp.c - `tapegrad bench vocab-parallel`: the vocab-parallel
 * log-prob op across MPI ranks. Run it under mpirun:
 *
 *   mpirun -np P build/bin/tapegrad bench vocab-parallel [options]
 *
 * (alone it is one rank). Contract:
 *   [--op logits|linear] [--seq N] [--vocab V] [--hidden D] [--reps R] [--json]
 *   Defaults: logits, seq 8192, vocab 32000, hidden 1024 (linear only), reps 3.
 *  - Each rank holds its slice of the vocabulary (V / P rows, the first V % P
 *    ranks one more): f32 logits (N, V_r) requiring grad (logits), or the
 *    weight rows (V_r, D) and a hidden (N, D) both requiring grad (linear);
 *    targets the same on every rank, 1% ignored.
 *  - A step: forward with the communicator, loss -mean(logprob) - 0.01
 *    mean(entropy), backward, everything released. Per rank: the median time
 *    of R steps, the library's exact peak beyond the inputs (the largest),
 *    and, from the communicator's counters, the collectives and the bytes this
 *    rank sent per step.
 *  - Rank 0 prints a table (one row per rank) and the collectives per step
 *    beside Megatron's vocab-parallel cross-entropy and slime's log-prob +
 *    entropy for the same shape (computed from what those implementations
 *    do, not run here); or, with --json, one object per rank per line.
 *  - Exit: 0; 1 when the library fails or this build has no MPI (one line);
 *    2 bad usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "bandwidth.h"
#include "bench.h"
#include "cli.h"
#include "common.h"
#include "linstep.h"

#ifdef TG_HAVE_MPI
#include <mpi.h>
#endif

#define MIB (1024.0 * 1024.0)

typedef struct vp_opts {
    int linear; /* --op: 0 logits, 1 linear */
    int64_t seq, vocab, hidden, reps;
    bool json;
} vp_opts;

static const cli_word OP_WORDS[] = {{"logits", 0}, {"linear", 1}, {NULL, 0}};

static const cli_opt VP_OPTS[] = {
    {.name = "--op", CLI_WORD(vp_opts, linear, OP_WORDS),
     .help = "the logits op, or the fused linear op"},
    {.name = "--seq", CLI_INT(vp_opts, seq, 1, 1 << 22), .help = "rows"},
    {.name = "--vocab", CLI_INT(vp_opts, vocab, 1, 1 << 22), .meta = "V",
     .help = "the whole vocabulary"},
    {.name = "--hidden", CLI_INT(vp_opts, hidden, 1, 65536), .meta = "D",
     .help = "hidden size, linear only"},
    {.name = "--reps", CLI_INT(vp_opts, reps, 1, 1000), .meta = "R",
     .help = "steps, median kept"},
    {.name = "--json", CLI_FLAG(vp_opts, json),
     .help = "one JSON object per rank per line (rank 0 prints)"},
};

const cli_command cli_bench_vp_command = {
    .name = "bench vocab-parallel",
    .opts = VP_OPTS,
    .n_opts = CLI_N(VP_OPTS),
    .usage_more = "Run it under MPI: mpirun -np P tapegrad bench vocab-parallel [options]\n",
    .about = "The vocab-parallel log-prob and entropy across MPI ranks, each holding a\n"
             "slice of the vocabulary: per rank the median step time, the exact peak\n"
             "memory, and the collectives and bytes per step, beside Megatron's and\n"
             "slime's counts for the same shape.\n",
    .exit_status = "0 success, 1 the library failed or no MPI in this build, 2 bad usage.",
};

static const vp_opts VP_DEFAULTS = {.linear = 0, .seq = 8192, .vocab = 32000, .hidden = 1024,
                                    .reps = 3};

void cli_bench_vp_help(FILE *f) { cli_help(f, &cli_bench_vp_command, &VP_DEFAULTS); }

#ifndef TG_HAVE_MPI
int cli_bench_vp(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_bench_vp_help(stdout);
        return CLI_EXIT_OK;
    }
    fprintf(stderr, "tapegrad: bench vocab-parallel: this build has no MPI "
                    "(scripts/setup-deps.sh installs Open MPI; then rebuild)\n");
    return CLI_EXIT_FAIL;
}
#else

typedef struct vp_row {
    double ms, fwd_ms, bwd_ms;
    double peak, saved, vlocal, collectives, bytes;
} vp_row;

static int lib_fail(const char *what) {
    fprintf(stderr, "tapegrad: bench vocab-parallel: %s failed: %s: %s\n", what,
            tg_status_name(tg_last_status()), tg_last_error());
    return CLI_EXIT_FAIL;
}

/* One step on this rank; times in ms, bytes from the accounting. */
static int step(bool linear, tg_tensor *a, tg_tensor *w, tg_tensor *y, tg_comm *comm,
                int64_t start, vp_row *r) {
    tg_mem_stats m0, m1, m2;
    tg_mem_get(TG_CPU, &m0);
    tg_mem_reset_peak(TG_CPU);
    uint64_t c0, b0, c1, b1;
    tg_comm_counters(comm, &c0, &b0);
    int sc = tg_scope_begin();
    double t0 = cli_now_s();
    tg_tensor *lp = NULL, *H = NULL;
    tg_status st;
    if (linear) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.comm = comm;
        o.vocab_start = start;
        st = tg_linear_logprob_entropy(a, w, NULL, y, &o, &lp, &H, NULL);
    } else {
        tg_logprob_opts o = tg_logprob_opts_default();
        o.comm = comm;
        o.vocab_start = start;
        st = tg_logprob_entropy(a, y, &o, &lp, &H);
    }
    double t1 = cli_now_s();
    tg_mem_get(TG_CPU, &m1);
    if (st == TG_OK) {
        tg_tensor *loss = tg_sub(tg_neg(tg_mean(lp)), tg_scale(tg_mean(H), 0.01));
        st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
    }
    double t2 = cli_now_s();
    tg_mem_get(TG_CPU, &m2);
    tg_scope_end(sc);
    tg_zero_grad(a);
    if (w) tg_zero_grad(w);
    if (st != TG_OK) return lib_fail("a step");
    tg_comm_counters(comm, &c1, &b1);
    r->fwd_ms = (t1 - t0) * 1e3;
    r->bwd_ms = (t2 - t1) * 1e3;
    r->ms = r->fwd_ms + r->bwd_ms;
    r->peak = (double)(m2.peak_total - m0.live_total);
    r->saved = (double)(m1.saved - m0.saved);
    r->collectives = (double)(c1 - c0);
    r->bytes = (double)(b1 - b0);
    return CLI_EXIT_OK;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* This rank's inputs: its slice of the logits (N, len), or the whole hidden
 * and its rows [start, start + len) of the weight; the targets the same on
 * every rank. Returns CLI_EXIT_OK or CLI_EXIT_FAIL (reported). */
static int rank_inputs(const vp_opts *o, int rank, int64_t start, int64_t len, tg_tensor **a,
                       tg_tensor **w, tg_tensor **y) {
    if (o->linear) { /* the whole layer's inputs (the same on every rank), then this rank's rows */
        tg_tensor *wall = NULL;
        int rc = cli_lin_inputs("bench vocab-parallel", o->seq, o->hidden, o->vocab, TG_F32,
                                TG_CPU, 1, a, &wall, y);
        *w = wall ? tg_contiguous(tg_narrow(wall, 0, start, len)) : NULL;
        tg_release(wall);
        if (rc == CLI_EXIT_OK && (!*w || tg_set_requires_grad(*w, true) != TG_OK))
            rc = lib_fail("slicing the weight");
        return rc;
    }
    *a = tg_randn(TG_F32, TG_SHAPE(o->seq, len), 100 + (uint64_t)rank, 0.0, 2.0);
    *y = tg_randint(TG_SHAPE(o->seq), 7, 0, o->vocab);
    if (!*a || !*y || tg_set_requires_grad(*a, true) != TG_OK)
        return lib_fail("making the inputs");
    for (int64_t i = 37; i < o->seq; i += 100)
        ((int64_t *)tg_data(*y))[i] = -100;
    return CLI_EXIT_OK;
}

/* R steps on this rank into *best: median times, the largest peak, the
 * last step's saved bytes and counters. */
static int time_steps(const vp_opts *o, tg_tensor *a, tg_tensor *w, tg_tensor *y, tg_comm *comm,
                      int64_t start, double *t, vp_row *best) {
    const int64_t reps = o->reps; /* t: (3, reps): total, forward, backward */
    int rc = CLI_EXIT_OK;
    memset(best, 0, sizeof *best);
    for (int64_t k = 0; rc == CLI_EXIT_OK && k < reps; k++) {
        vp_row r;
        memset(&r, 0, sizeof r);
        rc = step(o->linear, a, w, y, comm, start, &r);
        t[k] = r.ms;
        t[reps + k] = r.fwd_ms;
        t[2 * reps + k] = r.bwd_ms;
        if (r.peak > best->peak) best->peak = r.peak;
        best->saved = r.saved;
        best->collectives = r.collectives;
        best->bytes = r.bytes;
    }
    if (rc == CLI_EXIT_OK) {
        for (int q = 0; q < 3; q++)
            qsort(t + q * reps, (size_t)reps, sizeof *t, cmp_d);
        best->ms = t[reps / 2];
        best->fwd_ms = t[reps + reps / 2];
        best->bwd_ms = t[2 * reps + reps / 2];
    }
    return rc;
}

/* The worst rc of all ranks, on every rank: a rank that failed before the
 * steps must not leave the others waiting in the op's collectives. */
static int agree_rc(int rc) {
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != CLI_EXIT_OK && rc == CLI_EXIT_OK)
        cli_fail("bench vocab-parallel", "another rank failed before the steps");
    return worst;
}

/* Rank 0: one JSON line per rank, or the table and the comparison. */
static void print_ranks(const vp_opts *o, const vp_row *rows, int P) {
    const double n = (double)o->seq;
    const bool linear = o->linear;
    if (o->json) {
        for (int r = 0; r < P; r++) {
            const vp_row *q = &rows[r];
            cli_json j = cli_json_begin(stdout);
            cli_json_str(&j, "bench", "vocab-parallel");
            cli_json_str(&j, "op", linear ? "linear" : "logits");
            cli_json_int(&j, "ranks", P);
            cli_json_int(&j, "rank", r);
            cli_json_int(&j, "seq", o->seq);
            cli_json_int(&j, "vocab", o->vocab);
            cli_json_num(&j, "vocab_rank", "%.0f", q->vlocal);
            cli_json_int(&j, "hidden", linear ? o->hidden : 0);
            cli_json_num(&j, "median_ms", "%.3f", q->ms);
            cli_json_num(&j, "fwd_ms", "%.3f", q->fwd_ms);
            cli_json_num(&j, "bwd_ms", "%.3f", q->bwd_ms);
            cli_json_num(&j, "peak_bytes", "%.0f", q->peak);
            cli_json_num(&j, "saved_bytes", "%.0f", q->saved);
            cli_json_num(&j, "collectives_per_step", "%.0f", q->collectives);
            cli_json_num(&j, "bytes_sent_per_step", "%.0f", q->bytes);
            cli_json_end(&j);
        }
        return;
    }
    printf("tapegrad bench vocab-parallel: %s, %d rank%s, seq %" PRId64 ", vocab %" PRId64
           "%s, f32, median of %" PRId64 " steps\n",
           linear ? "fused linear op" : "logits op", P, P == 1 ? "" : "s", o->seq, o->vocab,
           linear ? " (hidden given)" : "", o->reps);
    printf("  %4s %8s %10s %9s %9s %10s %10s %12s %14s\n", "rank", "V_r", "total ms",
           "fwd ms", "bwd ms", "peak MiB", "saved MiB", "collectives", "bytes sent");
    for (int r = 0; r < P; r++)
        printf("  %4d %8.0f %10.1f %9.1f %9.1f %10.1f %10.2f %12.0f %14.0f\n", r,
               rows[r].vlocal, rows[r].ms, rows[r].fwd_ms, rows[r].bwd_ms,
               rows[r].peak / MIB, rows[r].saved / MIB, rows[r].collectives, rows[r].bytes);
    printf("Per step, for the same shape (f32, %d rank%s): tapegrad %.0f collective(s), "
           "%.0f bytes sent by a rank;\n  Megatron's vocab-parallel cross-entropy: 3 "
           "all-reduces (max, target logit, sum-exp), %.0f bytes, no entropy;\n  slime's "
           "log-prob + entropy: 5 all-reduces, %.0f bytes, each on its own clone of the "
           "logits (+%.0f MiB each).\n",
           P, P == 1 ? "" : "s", rows[0].collectives, rows[0].bytes, 3 * 4 * n, 5 * 4 * n,
           n * rows[0].vlocal * 4 / MIB);
}

int cli_bench_vp(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_bench_vp_help(stdout);
        return CLI_EXIT_OK;
    }
    vp_opts o = VP_DEFAULTS;
    int rc = cli_options_parse(&cli_bench_vp_command, argc, argv, &o, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    int init = 0;
    MPI_Initialized(&init);
    if (!init) MPI_Init(NULL, NULL);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (o.vocab < P) {
        if (rank == 0)
            cli_usage_error("bench vocab-parallel: vocab %" PRId64 " < %d ranks", o.vocab, P);
        MPI_Finalize();
        return CLI_EXIT_USAGE;
    }
    int64_t start = 0, len = 0; /* this rank's rows of the vocabulary */
    for (int r = 0; r <= rank; r++) {
        len = o.vocab / P + (r < o.vocab % P);
        if (r < rank) start += len;
    }
    MPI_Comm world = MPI_COMM_WORLD;
    tg_comm *comm = NULL;
    tg_tensor *a = NULL, *w = NULL, *y = NULL;
    rc = tg_comm_from_mpi(&world, &comm) != TG_OK ? lib_fail("tg_comm_from_mpi")
                                                   : rank_inputs(&o, rank, start, len, &a, &w, &y);
    vp_row best, *rows = NULL;
    double *t = calloc((size_t)o.reps * 3, sizeof *t);
    if (rc == CLI_EXIT_OK && !t)
        rc = cli_fail("bench vocab-parallel", "out of memory");
    rc = agree_rc(rc);
    if (rc == CLI_EXIT_OK)
        rc = time_steps(&o, a, w, y, comm, start, t, &best);
    /* a failure on one rank fails them all (the op saw to it): every rank is here */
    if (rc == CLI_EXIT_OK) {
        best.vlocal = (double)len;
        rows = rank == 0 ? malloc((size_t)P * sizeof *rows) : NULL;
        MPI_Gather(&best, (int)(sizeof best / sizeof(double)), MPI_DOUBLE, rows,
                   (int)(sizeof best / sizeof(double)), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    if (rc == CLI_EXIT_OK && rank == 0)
        print_ranks(&o, rows, P);
    free(rows);
    free(t);
    tg_release(a);
    tg_release(w);
    tg_release(y);
    tg_comm_free(comm);
    if (!init) MPI_Finalize();
    return rc;
}
#endif
