/* tests/tsan/main.c - runs the suites compiled against tests/tsan's
 * criterion.h: every Test in the order written, with its suite's init and
 * fini, `reps` times (argv[1], default 1). Exit status 0 when all passed (a
 * failed assertion aborts). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

tgt_tsan_test *tgt_tsan_tests;
tgt_tsan_suite *tgt_tsan_suites;

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 1;
    tgt_tsan_test *in_order = NULL; /* registered newest first */
    while (tgt_tsan_tests) {
        tgt_tsan_test *t = tgt_tsan_tests;
        tgt_tsan_tests = t->next;
        t->next = in_order;
        in_order = t;
    }
    int ran = 0;
    for (int r = 0; r < reps; r++) {
        for (tgt_tsan_test *t = in_order; t; t = t->next, ran++) {
            const tgt_tsan_suite *s = tgt_tsan_suites;
            while (s && strcmp(s->name, t->suite) != 0) s = s->next;
            fprintf(stderr, "[RUN ] %s::%s\n", t->suite, t->name);
            if (s && s->init) s->init();
            t->fn();
            if (s && s->fini) s->fini();
        }
    }
    fprintf(stderr, "[PASS] %d tests\n", ran);
    return 0;
}
