/* tests/tg_json_check.h - a minimal JSON checker for the suites that test
 * JSON output (the leak reports): RFC 8259 syntax, UTF-8, and the object keys
 * met. Header-only (static functions); include it after Criterion. */
#ifndef TG_JSON_CHECK_H
#define TG_JSON_CHECK_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct json {
    const char *p;
    char keys[64][32]; /* every object key met, in order (truncated) */
    int nkeys;
} json;

static inline void jws(json *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

static inline bool jvalue(json *j, int depth);

static inline bool jstring(json *j, char *out, size_t outn) {
    size_t k = 0;
    if (*j->p != '"') return false;
    j->p++;
    while (*j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c == '\0' || c < 0x20) return false;
        if (c == '\\') {
            j->p++;
            if (*j->p && strchr("\"\\/bfnrt", *j->p)) {
                c = (unsigned char)*j->p;
                j->p++;
            } else if (*j->p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", j->p[i]) || !j->p[i]) return false;
                j->p += 5;
                c = '?';
            } else {
                return false;
            }
        } else {
            j->p++;
        }
        if (out && k + 1 < outn) out[k++] = (char)c;
    }
    j->p++;
    if (out) out[k] = '\0';
    return true;
}

static inline bool jnumber(json *j) {
    const char *p = j->p;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return false;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    j->p = p;
    return true;
}

static inline bool jvalue(json *j, int depth) {
    if (depth > 32) return false;
    jws(j);
    if (*j->p == '{') {
        j->p++;
        jws(j);
        if (*j->p == '}') return j->p++, true;
        for (;;) {
            jws(j);
            char key[32];
            if (!jstring(j, key, sizeof key)) return false;
            if (j->nkeys < 64) strcpy(j->keys[j->nkeys++], key);
            jws(j);
            if (*j->p++ != ':') return false;
            if (!jvalue(j, depth + 1)) return false;
            jws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == '}') return j->p++, true;
            return false;
        }
    }
    if (*j->p == '[') {
        j->p++;
        jws(j);
        if (*j->p == ']') return j->p++, true;
        for (;;) {
            if (!jvalue(j, depth + 1)) return false;
            jws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == ']') return j->p++, true;
            return false;
        }
    }
    if (*j->p == '"') return jstring(j, NULL, 0);
    if (!strncmp(j->p, "true", 4)) return j->p += 4, true;
    if (!strncmp(j->p, "false", 5)) return j->p += 5, true;
    if (!strncmp(j->p, "null", 4)) return j->p += 4, true;
    return jnumber(j);
}

/* Offset of the first byte that is not part of valid UTF-8, or -1. */
static inline ptrdiff_t bad_utf8_at(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *start = p;
        int n = *p < 0x80 ? 0 : (*p >> 5) == 6 ? 1 : (*p >> 4) == 14 ? 2 : (*p >> 3) == 30 ? 3 : -1;
        if (n < 0) return (const char *)start - s;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80) return (const char *)start - s;
    }
    return -1;
}

/* Parses s as exactly one JSON object; fills j->keys. */
static inline void assert_json_object(const char *s, json *j) {
    memset(j, 0, sizeof *j);
    j->p = s;
    jws(j);
    cr_assert_eq(*j->p, '{', "not a JSON object: %s", s);
    cr_assert(jvalue(j, 0), "invalid JSON near offset %td: %s", j->p - s, s);
    jws(j);
    cr_assert_eq(*j->p, '\0', "trailing characters after the JSON object: %s", j->p);
    ptrdiff_t bad = bad_utf8_at(s);
    cr_assert_eq(bad, -1, "the JSON text is not valid UTF-8 at byte %td (of %zu)", bad, strlen(s));
}

static inline int json_key_count(const json *j, const char *key) {
    int c = 0;
    for (int i = 0; i < j->nkeys; i++) c += strcmp(j->keys[i], key) == 0;
    return c;
}

#endif
