/* leakcheck/leakcheck_internal.h - the layout of a leak report, shared by the
 * scan (scan.c) and the writers (report.c, graph_dot.c). */
#ifndef TG_LEAKCHECK_INTERNAL_H
#define TG_LEAKCHECK_INTERNAL_H

#include "tapegrad.h"
#include "../tape/core.h"

#define MAX_UNREACH_LINES 10

struct tg_leak_report {
    uint64_t step;              /* the current step at scan time */
    int64_t nroots;
    tg_leak_root *roots;        /* [nroots], heaviest first */
    int64_t outlived;           /* graph nodes from earlier steps, alive */
    uint64_t kept_bytes;        /* bytes only those roots keep alive */
    int64_t unreachable;        /* objects reachable from no root */
    int n_lines;
    char lines[MAX_UNREACH_LINES][200]; /* the first unreachable objects */
    double growth;              /* bytes per step, see tg_leak_report_growth */
    int growth_steps;
    int n_hist;
    tg__step_rec hist[TG__STEP_HISTORY];
};

/* "1.5 MiB", "12.0 KiB", "40 B". */
const char *tg__fmt_bytes(char *buf, size_t n, double bytes);

/* Length (1..4) of the valid UTF-8 character at s (s[0] != 0), 0 if the
 * bytes there are not one (leakcheck/graph_dot.c). */
int tg__utf8_len(const unsigned char *s);

#endif
