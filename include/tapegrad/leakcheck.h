/* tapegrad/leakcheck.h - finding graphs kept alive by references the program
 * forgot: per-step marks, a scan of the live objects, reports for people (text)
 * and programs (JSON), an assertion for tests, and a teardown check.
 *
 * The registry behind it is weak: it lists every live tensor, storage and
 * graph node with its creation site, step and bytes, without owning them. A
 * scan counts, for each object, the references other live objects hold on it;
 * what is left of its reference count is held from outside the library (by
 * the program, or an open scope): those objects are the roots. It then
 * reports every graph node created in an earlier step that is still alive,
 * grouped by the root that keeps it, with the path from that root, and every
 * object that is alive but reachable from no root (a reference cycle).
 */
#ifndef TAPEGRAD_LEAKCHECK_H
#define TAPEGRAD_LEAKCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ends the current step (a microbatch, an optimizer step...) and starts the
 * next; label (copied, may be NULL) names the step that ends, in reports
 * (cut to 31 bytes, ending with "...", when longer).
 * Also records the bytes live and the graph nodes left over from earlier
 * steps, for growth detection. Returns the new step number. */
uint64_t tg_step_mark(const char *label);

/* The current step number (0 before the first tg_step_mark). */
uint64_t tg_step_current(void);

/* One root that keeps graph nodes of earlier steps alive. */
typedef struct tg_leak_root {
    char name[48];             /* tensor name, or "tensor #id" */
    char shape[64];            /* "f32 []" */
    const char *file;          /* creation site of the root tensor */
    int line;
    uint64_t step;             /* step the root was created in */
    char step_label[32];       /* that step's tg_step_mark label, if remembered */
    int64_t nodes;             /* outlived nodes reachable from it */
    int64_t nodes_with_saved;  /* of which still hold saved tensors */
    uint64_t bytes;            /* bytes of storages this root keeps alive that no
                                  root without leaked nodes reaches */
    uint64_t shared_bytes;     /* of which also kept by other such roots */
    uint64_t saved_bytes;      /* of which held as saved tensors */
    char path[512];            /* "root \"losses[3]\" (f32 []) -> SumBackward -> ...":
                                  when the steps do not all fit (or there are more
                                  than 64), those nearest the root are replaced by
                                  " -> ..."; the last step, what the root keeps, is
                                  always there (cut with "..." if it alone is too
                                  long) */
} tg_leak_root;

typedef struct tg_leak_report tg_leak_report;

/* Scans every live object. Returns a new report (free it with
 * tg_leak_report_free) or NULL with TG_ERR_NOMEM. Threads: the scan reads
 * the objects of every thread. It may run while other threads work: it
 * waits for a backward in progress, and while it reads, other threads'
 * backward, frees and object creation wait for it; it never reads freed
 * memory, but what it reports is a snapshot of objects in motion (a
 * reference being handed over, an op being recorded). Check for leaks when
 * the other threads are done or idle (docs/api.md, "Threads"). */
tg_leak_report *tg_leak_scan(void);
void tg_leak_report_free(tg_leak_report *r);

/* Summary figures of a report (0 for NULL). */
int64_t tg_leak_report_nroots(const tg_leak_report *r);        /* roots with outlived nodes */
const tg_leak_root *tg_leak_report_root(const tg_leak_report *r, int64_t i); /* NULL if out of range */
int64_t tg_leak_report_outlived_nodes(const tg_leak_report *r); /* all outlived nodes */
/* Bytes that would be freed if the reported roots let go (each storage once). */
uint64_t tg_leak_report_kept_bytes(const tg_leak_report *r);
int64_t tg_leak_report_unreachable(const tg_leak_report *r);    /* objects in cycles */
/* Average growth of live bytes per step over the last steps when it grew at
 * every one of the last 3 or more marks by 4 KiB or more on average, else 0;
 * *steps receives how many steps that covers (0 when no growth). */
double tg_leak_report_growth(const tg_leak_report *r, int *steps);

/* Writes the report for people / as one JSON object (no trailing newline).
 * Errors: TG_ERR_NULL, TG_ERR_IO (write failed). */
tg_status tg_leak_report_print(FILE *f, const tg_leak_report *r);
tg_status tg_leak_report_json(FILE *f, const tg_leak_report *r);

/* TG_OK when no graph node from an earlier step is alive and no object is in
 * a cycle; otherwise TG_ERR_LEAK, with the text report in
 * tg_leak_check_report(). A leak is a finding, not a failed call: the
 * thread's error (tg_last_status / tg_last_error) is left as it was, so a
 * leak found on purpose leaves nothing behind. Errors (with the thread's
 * error set): TG_ERR_NOMEM when the scan itself could not run. */
tg_status tg_leak_check(void);

/* The text report of this thread's last tg_leak_check: "" when it passed,
 * else the roots and paths keeping graphs alive (cut at 4095 bytes, ending
 * with "...": tg_leak_report_print writes all of it). Valid until the next
 * tg_leak_check on this thread. */
const char *tg_leak_check_report(void);

/* For test frameworks: calls FAIL(fmt, report) when tg_leak_check() fails,
 * e.g. TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail) in a Criterion test. */
#define TG_ASSERT_NO_LEAKED_GRAPH(FAIL)                                                     \
    do {                                                                                 \
        if (tg_leak_check() != TG_OK)                                                    \
            FAIL("%s", tg_leak_check_report()[0] ? tg_leak_check_report() : tg_last_error()); \
    } while (0)

/* Prints every object still alive (with its creation site) to f (stderr if
 * NULL) and returns how many there are: 0 means a clean exit. */
int64_t tg_shutdown(FILE *f);

/* Turns the registry's object lists on or off (on by default; the
 * TAPEGRAD_LEAKCHECK=0 environment variable starts it off). Objects created
 * while off are not listed (live counts stay exact). */
void tg_leakcheck_set_enabled(bool on);
bool tg_leakcheck_enabled(void);

#ifdef __cplusplus
}
#endif
#endif
