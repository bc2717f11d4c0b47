/* cli/bandwidth.c - a read+write streaming pass that measures the memory
 * bandwidth the bench compares its kernels with (its roofline).
 *
 * Contract: see bandwidth.h. The pass is b[i] = a[i] + 1 over float buffers,
 * which the compiler vectorises; a, b are 64-byte aligned, first touched in
 * parallel with the schedule of the timed loop so that pages are local to
 * the threads that use them. The best of `passes` passes is kept (the first
 * pass may still pay for page faults or frequency ramp-up).
 */
#include "bandwidth.h"

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Keeps the compiler from dropping the passes as dead stores. */
static volatile float g_sink;

double cli_bandwidth_measure(size_t total_bytes, int threads, int passes) {
    if (total_bytes < 4096 || threads < 1 || passes < 1)
        return -1.0;
    size_t half = (total_bytes / 2) & ~(size_t)63; /* bytes per buffer */
    int64_t n = (int64_t)(half / sizeof(float));
    float *a = aligned_alloc(64, half);
    float *b = aligned_alloc(64, half);
    if (!a || !b) {
        free(a);
        free(b);
        return -1.0;
    }

#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)(i & 1023);
        b[i] = 0.0f;
    }

    double best = 0.0;
    for (int p = 0; p < passes; p++) {
        double t0 = cli_now_s();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t i = 0; i < n; i++)
            b[i] = a[i] + 1.0f;
        double dt = cli_now_s() - t0;
        g_sink = b[(p * 7919) % n];
        /* the next pass reads what this one wrote */
        float *t = a;
        a = b;
        b = t;
        double gbps = dt > 0.0 ? (double)(2 * half) / dt / 1e9 : 0.0;
        if (gbps > best)
            best = gbps;
    }
    free(a);
    free(b);
    return best;
}
