/* cli/bandwidth.h - the machine's memory bandwidth, measured by the bench.
 *
 * Contract:
 *  - cli_bandwidth_measure() streams b[i] = a[i] + 1 (float) over two buffers
 *    of total_bytes / 2 each, with `threads` OpenMP threads (static schedule,
 *    buffers first touched by the same schedule), `passes` times, and returns
 *    the best pass in GB/s (1e9 bytes per second), counting the bytes read
 *    plus the bytes written (total_bytes per pass; write-allocate traffic is
 *    not counted).
 *  - The buffers come from malloc, not from the library's allocator, so the
 *    library's memory accounting is untouched; they are freed before return.
 *  - Returns a value <= 0 when the buffers cannot be allocated or the
 *    arguments are out of range (total_bytes < 4096, threads < 1, passes < 1).
 */
#ifndef TAPEGRAD_CLI_BANDWIDTH_H
#define TAPEGRAD_CLI_BANDWIDTH_H

#include <stddef.h>

double cli_bandwidth_measure(size_t total_bytes, int threads, int passes);

/* Seconds on CLOCK_MONOTONIC, for the bench's timings. */
double cli_now_s(void);

#endif
