/* tests/test_appendf.c - bounded text building (tg__appendf, tape/error.c)
 * and what is built with it: shapes (tg__shape_str) and the thread's error
 * message. Every text that does not fit is cut, never inside a UTF-8
 * character, ends with "...", and never runs past its buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "tg_json_check.h"
#include "tg_test_util.h"

TestSuite(appendf, .init = tgt_setup, .fini = tgt_teardown);

/* A buffer of cap bytes between two guard zones, filled with 'Z': every
 * write outside [0, cap) shows. */
typedef struct guarded {
    char mem[64 + 512 + 64];
    size_t cap;
} guarded;

static char *gbuf(guarded *g, size_t cap) {
    cr_assert_leq(cap, 512);
    memset(g->mem, 'Z', sizeof g->mem);
    g->cap = cap;
    return g->mem + 64;
}

static void assert_guards(const guarded *g) {
    for (size_t i = 0; i < 64; i++) {
        cr_assert_eq(g->mem[i], 'Z', "byte %zu before the buffer written", 64 - i);
        cr_assert_eq(g->mem[64 + g->cap + i], 'Z', "byte %zu past the buffer written", i);
    }
}

Test(appendf, text_that_fits_is_appended_whole) {
    guarded g;
    char *b = gbuf(&g, 8);
    size_t k = tg__appendf(b, 8, 0, "%s", "abc");
    cr_assert_eq(k, 3);
    k = tg__appendf(b, 8, k, "%d%c", 12, 'x');
    cr_assert_eq(k, 6);
    k = tg__appendf(b, 8, k, "y"); /* exactly cap - 1 */
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "abc12xy");
    k = tg__appendf(b, 8, k, "%s", ""); /* nothing to add: not a cut */
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "abc12xy");
    assert_guards(&g);
}

Test(appendf, text_one_byte_too_long_is_cut_with_dots) {
    guarded g;
    char *b = gbuf(&g, 8);
    size_t k = tg__appendf(b, 8, 0, "12345678");
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "1234...");
    assert_guards(&g);

    /* a full text (exactly cap - 1) that gets more is marked cut too */
    b = gbuf(&g, 8);
    k = tg__appendf(b, 8, 0, "1234567");
    k = tg__appendf(b, 8, k, "8");
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "1234...");
    assert_guards(&g);
}

Test(appendf, a_cut_text_stays_cut) {
    guarded g;
    char *b = gbuf(&g, 10);
    size_t k = tg__appendf(b, 10, 0, "abcdefghijklmnop");
    cr_assert_eq(k, 9);
    cr_assert_str_eq(b, "abcdef...");
    for (int i = 0; i < 5; i++) k = tg__appendf(b, 10, k, "x%d", i);
    cr_assert_eq(k, 9);
    cr_assert_str_eq(b, "abcdef...");
    assert_guards(&g);
}

Test(appendf, the_cut_is_never_inside_a_utf8_character) {
    /* "ab€€": € is 3 bytes (E2 82 AC); 8 bytes do not fit in 8 */
    guarded g;
    char *b = gbuf(&g, 8);
    size_t k = tg__appendf(b, 8, 0, "ab\xE2\x82\xAC\xE2\x82\xAC");
    cr_assert_eq(k, 7, "a cut text reports cap - 1");
    cr_assert_str_eq(b, "ab...");
    /* shorter than cap - 1, but full: nothing more goes in */
    k = tg__appendf(b, 8, k, "x");
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "ab...");
    assert_guards(&g);

    /* every buffer size over a text of 2-, 3- and 4-byte characters */
    const char *text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
    size_t full = strlen(text);
    for (size_t cap = 1; cap <= full + 2; cap++) {
        b = gbuf(&g, cap);
        k = tg__appendf(b, cap, 0, "%s", text);
        cr_assert_leq(k, cap - 1);
        cr_assert_leq(strlen(b), k, "cap %zu: the text is longer than the length returned", cap);
        cr_assert_eq(bad_utf8_at(b), -1, "cap %zu: cut inside a character: %s", cap, b);
        if (cap > full) {
            cr_assert_str_eq(b, text);
            cr_assert_eq(k, full);
        } else {
            size_t n = strlen(b), dots = cap - 1 < 3 ? cap - 1 : 3;
            cr_assert_geq(n, dots);
            cr_assert_eq(strncmp(b + n - dots, "...", dots), 0, "cap %zu: %s", cap, b);
            cr_assert_eq(strncmp(b, text, n - dots), 0, "cap %zu: not a prefix: %s", cap, b);
            cr_assert_eq(k, cap - 1);
        }
        assert_guards(&g);
    }
}

Test(appendf, tiny_and_zero_capacities) {
    cr_assert_eq(tg__appendf(NULL, 0, 0, "abc"), 0, "cap 0: nothing written, 0 returned");
    guarded g;
    const char *want[] = {"", ".", "..", "...", "a..."};
    for (size_t cap = 1; cap <= 5; cap++) {
        char *b = gbuf(&g, cap);
        size_t k = tg__appendf(b, cap, 0, "abcdef");
        cr_assert_eq(k, cap - 1);
        cr_assert_str_eq(b, want[cap - 1], "cap %zu", cap);
        assert_guards(&g);
    }
}

Test(appendf, a_length_past_the_buffer_counts_as_full) {
    guarded g;
    char *b = gbuf(&g, 8);
    size_t k = tg__appendf(b, 8, 0, "abc");
    /* what `k += snprintf(...)` would give after an overlong piece */
    k = tg__appendf(b, 8, k + 1000, "defghijk");
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "abc", "a text cut before (shorter than cap - 1) is left alone");
    assert_guards(&g);
}

Test(appendf, shapes_are_cut_with_dots) {
    int64_t big[TG_MAX_DIMS];
    for (int d = 0; d < TG_MAX_DIMS; d++) big[d] = INT64_MAX;
    guarded g;
    char *b = gbuf(&g, 96);
    tg__shape_str(b, 96, TG_MAX_DIMS, big);
    cr_assert_eq(strlen(b), 95);
    cr_assert_eq(strncmp(b, "[9223372036854775807, 9223372036854775807, ", 43), 0, "%s", b);
    cr_assert_str_eq(b + 92, "...");
    assert_guards(&g);
    char wide[TG_MAX_DIMS * 22 + 4];
    tg__shape_str(wide, sizeof wide, TG_MAX_DIMS, big);
    cr_assert_eq(strlen(wide), 1 + 8 * 19 + 7 * 2 + 1, "%s", wide);
    cr_assert_eq(wide[strlen(wide) - 1], ']');
    tg__shape_str(wide, sizeof wide, 0, big);
    cr_assert_str_eq(wide, "[]");
    tg__shape_str(wide, sizeof wide, 2, (const int64_t[]){2, 3});
    cr_assert_str_eq(wide, "[2, 3]");
    b = gbuf(&g, 5);
    tg__shape_str(b, 5, 2, (const int64_t[]){2, 3});
    cr_assert_str_eq(b, "[...");
    assert_guards(&g);
}

/* The thread's message holds 4095 bytes: a longer one ends with "...", and a
 * cut never leaves half a UTF-8 character (the message goes into reports and
 * JSON). */
Test(appendf, long_error_messages_are_cut_with_dots_on_a_character_boundary) {
    size_t n = 3000;
    char *s = malloc(2 * n + 1);
    cr_assert_not_null(s);
    for (size_t i = 0; i < n; i++) memcpy(s + 2 * i, "\xC3\xA9", 2); /* "é" */
    s[2 * n] = '\0';
    for (int shift = 0; shift < 2; shift++) { /* the cut on either byte of a character */
        cr_assert_eq(tg_set_error(TG_ERR_VALUE, "%.*s%s", shift, "x", s), TG_ERR_VALUE);
        const char *m = tg_last_error();
        size_t len = strlen(m);
        cr_assert_leq(len, 4095);
        cr_assert_geq(len, 4092);
        cr_assert_str_eq(m + len - 3, "...");
        cr_assert_eq(bad_utf8_at(m), -1, "shift %d: the message is not valid UTF-8", shift);
    }
    free(s);
    /* one that fits is kept whole */
    tg_set_error(TG_ERR_SHAPE, "tg_add: shapes %s and %s", "[2]", "[3]");
    cr_assert_str_eq(tg_last_error(), "tg_add: shapes [2] and [3]");
    tg_clear_error();
}
