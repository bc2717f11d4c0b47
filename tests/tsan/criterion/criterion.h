/* tests/tsan/criterion/criterion.h - the part of Criterion's API that
 * test_threads.c and tg_test_util.c use, for the ThreadSanitizer build
 * (tests/CMakeLists.txt, `make test-tsan`): Criterion's runner cannot start
 * under ThreadSanitizer (its shared arena does not fit TSan's memory
 * layout), so tests/tsan/main.c runs every Test in one process, in order,
 * and a failed assertion aborts with its message. */
#ifndef TGT_TSAN_CRITERION_H
#define TGT_TSAN_CRITERION_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct tgt_tsan_test {
    const char *suite, *name;
    void (*fn)(void);
    struct tgt_tsan_test *next;
} tgt_tsan_test;

typedef struct tgt_tsan_suite {
    const char *name;
    void (*init)(void), (*fini)(void);
    struct tgt_tsan_suite *next;
} tgt_tsan_suite;

struct tgt_tsan_suite_opts {
    void (*init)(void), (*fini)(void);
};

/* every Test and TestSuite, registered before main (newest first) */
extern tgt_tsan_test *tgt_tsan_tests;
extern tgt_tsan_suite *tgt_tsan_suites;

/* the message of a failed assertion (printf-style, may be absent) */
static inline void tgt_tsan_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
#define TGT_TSAN_FAIL(what, ...)                                                          \
    do {                                                                                  \
        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, what);      \
        tgt_tsan_say("" __VA_ARGS__);                                                     \
        abort();                                                                          \
    } while (0)
#define cr_assert(c, ...)                                                                 \
    do {                                                                                  \
        if (!(c)) TGT_TSAN_FAIL(#c, __VA_ARGS__);                                         \
    } while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_not_null(a, ...) cr_assert((a) != NULL, __VA_ARGS__)
#define cr_assert_fail(...) TGT_TSAN_FAIL("cr_assert_fail", __VA_ARGS__)
#define cr_skip_test(...)                                                                 \
    do {                                                                                  \
        tgt_tsan_say("skipped: " __VA_ARGS__);                                            \
        return;                                                                           \
    } while (0)

#define TestSuite(sname, ...)                                                             \
    static tgt_tsan_suite tgt_tsan_suite_##sname;                                         \
    __attribute__((constructor)) static void tgt_tsan_add_suite_##sname(void) {           \
        struct tgt_tsan_suite_opts o = {__VA_ARGS__};                                     \
        tgt_tsan_suite_##sname = (tgt_tsan_suite){#sname, o.init, o.fini, tgt_tsan_suites}; \
        tgt_tsan_suites = &tgt_tsan_suite_##sname;                                        \
    }

#define Test(sname, tname, ...)                                                           \
    static void tgt_tsan_fn_##sname##_##tname(void);                                      \
    static tgt_tsan_test tgt_tsan_test_##sname##_##tname;                                 \
    __attribute__((constructor)) static void tgt_tsan_add_##sname##_##tname(void) {       \
        tgt_tsan_test_##sname##_##tname =                                                 \
            (tgt_tsan_test){#sname, #tname, tgt_tsan_fn_##sname##_##tname, tgt_tsan_tests}; \
        tgt_tsan_tests = &tgt_tsan_test_##sname##_##tname;                                \
    }                                                                                     \
    static void tgt_tsan_fn_##sname##_##tname(void)

#endif
