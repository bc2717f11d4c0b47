/* cli/npy.c - NumPy .npy reader and writer for the `tapegrad` command.
 *
 * Contract: see cli/npy.h. In short, tgcli_npy_load() accepts format versions
 * 1.0-3.0 with dtypes <f4, <f8, <i8, <i4 (widened to i64) and |b1 (bool), C or Fortran
 * order, 0 to 8 dims, and rejects anything malformed with TG_ERR_IO and a
 * message "PATH: what is wrong"; tgcli_npy_save() writes what NumPy writes
 * (version 1.0, C order, data aligned to 64 bytes). Uses the public tapegrad
 * API only; never aborts or exits; leaks nothing on any path, including
 * allocation failures injected with tg_fault_inject().
 *
 * File layout (NumPy's "format" module):
 *   "\x93NUMPY" major minor  header_len (u16 LE for 1.0, u32 LE for 2.0/3.0)
 *   header: a Python dict literal, e.g.
 *           {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *           then spaces and '\n' up to the alignment (latin-1; UTF-8 in 3.0)
 *   data:   numel * itemsize bytes, nothing after them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "npy.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* NumPy >= 1.24 leaves room to grow the first axis in place: it pads the
 * header with 21 - len(str(shape[0])) spaces before aligning. */
#define NPY_GROWTH_DIGITS 21
#define NPY_WRITE_BUF 65536 /* bytes staged per fwrite for strided tensors */

/* ---- errors ------------------------------------------------------------------ */

/* Records "PATH: message" with status st for tg_last_error() and returns st.
 * The public API's way to record an error from outside the library is
 * tg_set_error(). */
static tg_status npy_fail(tg_status st, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tg_status npy_fail(tg_status st, const char *path, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tg_set_error(st, "%s: %s", path, msg);
}

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* ---- header parsing --------------------------------------------------------------- */

typedef struct npy_header {
    tg_dtype dtype;  /* dtype of the tensor made */
    size_t file_isz; /* bytes per element in the file (4 for <i4) */
    char descr[32];  /* as written in the file, for messages */
    bool fortran;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
} npy_header;

typedef struct parser {
    const char *s; /* header text: n bytes, NUL-terminated, no NUL inside */
    size_t n, i;
    char err[256];
} parser;

static bool perr(parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static bool perr(parser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    return false;
}

/* Up to 24 bytes of the text at the cursor, unprintable bytes as '?'. */
static const char *snippet(const parser *p, char *buf, size_t cap) {
    size_t k = 0;
    for (size_t j = p->i; j < p->n && k + 1 < cap && k < 24; j++) {
        unsigned char c = (unsigned char)p->s[j];
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    while (k > 0 && buf[k - 1] == ' ') /* the header's padding */
        k--;
    if (k == 0 && cap > 5) {
        memcpy(buf, "(end)", 6);
        return buf;
    }
    buf[k] = '\0';
    return buf;
}

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void skip_ws(parser *p) {
    while (p->i < p->n && is_ws(p->s[p->i]))
        p->i++;
}

static bool at_char(const parser *p, char c) { return p->i < p->n && p->s[p->i] == c; }

static bool expect(parser *p, char c, const char *where) {
    char sn[32];
    if (!at_char(p, c))
        return perr(p, "expected '%c' %s, found '%s'", c, where, snippet(p, sn, sizeof sn));
    p->i++;
    return true;
}

/* A Python string literal in single or double quotes, without escapes. */
static bool parse_str(parser *p, char *buf, size_t cap, const char *what) {
    char sn[32];
    if (!at_char(p, '\'') && !at_char(p, '"'))
        return perr(p, "expected a quoted string for %s, found '%s'", what,
                    snippet(p, sn, sizeof sn));
    char q = p->s[p->i++];
    size_t k = 0;
    for (;;) {
        if (p->i >= p->n || p->s[p->i] == '\n')
            return perr(p, "unterminated string in %s", what);
        char c = p->s[p->i++];
        if (c == q)
            break;
        if (c == '\\')
            return perr(p, "escape sequences are not supported in %s", what);
        if (k + 1 >= cap)
            return perr(p, "%s is too long", what);
        buf[k++] = c;
    }
    buf[k] = '\0';
    return true;
}

/* True / False. */
static bool parse_bool(parser *p, bool *out) {
    char sn[32];
    if (p->n - p->i >= 4 && memcmp(p->s + p->i, "True", 4) == 0) {
        p->i += 4;
        *out = true;
    } else if (p->n - p->i >= 5 && memcmp(p->s + p->i, "False", 5) == 0) {
        p->i += 5;
        *out = false;
    } else {
        return perr(p, "'fortran_order' must be True or False, found '%s'",
                    snippet(p, sn, sizeof sn));
    }
    if (p->i < p->n && (p->s[p->i] == '_' || (p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
                        (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z') ||
                        (p->s[p->i] >= '0' && p->s[p->i] <= '9')))
        return perr(p, "'fortran_order' must be True or False");
    return true;
}

/* A tuple of non-negative integers: (), (3,), (2, 3), (2, 3,). A Python 2
 * long suffix (3L) is accepted, as NumPy does for old files. */
static bool parse_shape(parser *p, npy_header *h) {
    char sn[32];
    if (!at_char(p, '('))
        return perr(p, "'shape' must be a tuple such as (2, 3), found '%s'",
                    snippet(p, sn, sizeof sn));
    p->i++;
    skip_ws(p);
    int n = 0;
    bool trailing_comma = false;
    while (!at_char(p, ')')) {
        if (at_char(p, '-'))
            return perr(p, "negative dimension in 'shape'");
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
            return perr(p, "'shape' must hold integers, found '%s'", snippet(p, sn, sizeof sn));
        if (n == TG_MAX_DIMS)
            return perr(p, "'shape' has more than %d dimensions", TG_MAX_DIMS);
        int64_t v = 0;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            int d = p->s[p->i++] - '0';
            if (v > (INT64_MAX - d) / 10)
                return perr(p, "dimension %d of 'shape' overflows a 64-bit integer", n);
            v = v * 10 + d;
        }
        if (at_char(p, 'L') || at_char(p, 'l'))
            p->i++;
        h->shape[n++] = v;
        skip_ws(p);
        if (at_char(p, ',')) {
            p->i++;
            skip_ws(p);
            trailing_comma = true;
        } else if (at_char(p, ')')) {
            trailing_comma = false;
        } else {
            return perr(p, "expected ',' or ')' in 'shape', found '%s'",
                        snippet(p, sn, sizeof sn));
        }
    }
    p->i++;
    if (n == 1 && !trailing_comma)
        return perr(p, "'shape' (%" PRId64 ") is not a tuple (a 1-d shape is written (%" PRId64
                       ",))",
                    h->shape[0], h->shape[0]);
    h->ndim = n;
    return true;
}

/* Maps a dtype string to the tensor dtype and the file's element size. */
static bool map_descr(parser *p, npy_header *h) {
    const char *c = h->descr;
    char order = '=';
    if (*c == '<' || *c == '>' || *c == '|' || *c == '=')
        order = *c++;
    if (order == '>')
        return perr(p, "big-endian dtype '%s' is not supported (save the array as "
                       "little-endian, e.g. a.astype('<%s'))",
                    h->descr, c);
    if (!strcmp(c, "f4")) {
        h->dtype = TG_F32;
        h->file_isz = 4;
    } else if (!strcmp(c, "f8")) {
        h->dtype = TG_F64;
        h->file_isz = 8;
    } else if (!strcmp(c, "i8")) {
        h->dtype = TG_I64;
        h->file_isz = 8;
    } else if (!strcmp(c, "i4")) {
        h->dtype = TG_I64;
        h->file_isz = 4;
    } else if (!strcmp(c, "b1")) {
        h->dtype = TG_BOOL;
        h->file_isz = 1;
    } else if (!strcmp(c, "V2")) { /* bfloat16: what NumPy writes for ml_dtypes.bfloat16 */
        h->dtype = TG_BF16;
        h->file_isz = 2;
    } else {
        return perr(p, "unsupported dtype '%s' (supported: '<f4', '<f8', '<i8', '<i4', '|b1', "
                    "'<V2' as bf16)", h->descr);
    }
    return true;
}

/* Parses the header dict; exactly the keys descr, fortran_order and shape. */
static bool parse_header(parser *p, npy_header *h) {
    static const char *const KEYS[3] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    char sn[32];
    skip_ws(p);
    if (!expect(p, '{', "at the start of the header dict"))
        return false;
    for (;;) {
        skip_ws(p);
        if (at_char(p, '}'))
            break;
        char key[32];
        if (!parse_str(p, key, sizeof key, "a header key"))
            return false;
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (!strcmp(key, KEYS[j]))
                k = j;
        if (k < 0)
            return perr(p, "unknown key '%s' (expected 'descr', 'fortran_order', 'shape')", key);
        if (seen[k])
            return perr(p, "key '%s' appears twice", key);
        seen[k] = true;
        skip_ws(p);
        if (!expect(p, ':', "after a header key"))
            return false;
        skip_ws(p);
        bool ok;
        if (k == 0) {
            if (at_char(p, '[') || at_char(p, '(') || at_char(p, '{'))
                return perr(p, "structured dtypes are not supported");
            ok = parse_str(p, h->descr, sizeof h->descr, "'descr'") && map_descr(p, h);
        } else if (k == 1) {
            ok = parse_bool(p, &h->fortran);
        } else {
            ok = parse_shape(p, h);
        }
        if (!ok)
            return false;
        skip_ws(p);
        if (at_char(p, ',')) {
            p->i++;
            continue;
        }
        if (!at_char(p, '}'))
            return perr(p, "expected ',' or '}' after the value of '%s', found '%s'", key,
                        snippet(p, sn, sizeof sn));
    }
    p->i++; /* '}' */
    skip_ws(p);
    if (p->i < p->n)
        return perr(p, "unexpected text after the header dict: '%s'", snippet(p, sn, sizeof sn));
    for (int j = 0; j < 3; j++)
        if (!seen[j])
            return perr(p, "the header lacks the key '%s'", KEYS[j]);
    return true;
}

/* "(2, 3)" like Python's repr of the shape tuple (cut with "..." to cap). */
static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t k = cli_appendf(buf, cap, 0, "(");
    for (int d = 0; d < ndim; d++)
        k = cli_appendf(buf, cap, k, "%s%" PRId64, d ? ", " : "", shape[d]);
    cli_appendf(buf, cap, k, "%s)", ndim == 1 ? "," : "");
}

/* ---- loading -------------------------------------------------------------------------- */

/* Widens n int32 values at the start of buf to int64 in place (back to front,
 * so no value is overwritten before it is read). */
static void widen_i32(void *buf, int64_t n) {
    unsigned char *b = buf;
    for (int64_t e = n - 1; e >= 0; e--) {
        int32_t v;
        memcpy(&v, b + (size_t)e * 4, 4);
        int64_t w = v;
        memcpy(b + (size_t)e * 8, &w, 8);
    }
}

/* Copies numel elements of size isz stored in Fortran order (src) to C order
 * (dst), for the given shape. */
static void fortran_to_c(void *dst, const void *src, int ndim, const int64_t *shape, size_t isz,
                         int64_t numel) {
    int64_t fstride[TG_MAX_DIMS], idx[TG_MAX_DIMS] = {0}, off = 0;
    for (int j = 0; j < ndim; j++)
        fstride[j] = j == 0 ? 1 : fstride[j - 1] * shape[j - 1];
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (int64_t e = 0; e < numel; e++) {
        memcpy(d + (size_t)e * isz, s + (size_t)off * isz, isz);
        for (int j = ndim - 1; j >= 0; j--) {
            idx[j]++;
            off += fstride[j];
            if (idx[j] < shape[j])
                break;
            off -= fstride[j] * shape[j];
            idx[j] = 0;
        }
    }
}

/* Reads the magic string, version and header length. On success *prefix is
 * the number of bytes read so far and *hlen the header length. */
static tg_status read_prefix(FILE *f, const char *path, size_t *prefix, uint32_t *hlen) {
    unsigned char pre[12];
    size_t got = fread(pre, 1, 10, f);
    if (got < 10) {
        if (ferror(f))
            return npy_fail(TG_ERR_IO, path, "read failed: %s", strerror(errno));
        return npy_fail(TG_ERR_IO, path, "too short to be a .npy file (%zu bytes)", got);
    }
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return npy_fail(TG_ERR_IO, path,
                        "not a .npy file (it does not start with the magic string \\x93NUMPY)");
    unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return npy_fail(TG_ERR_IO, path,
                        "unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)", major,
                        minor);
    if (major == 1) {
        *hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
        *prefix = 10;
    } else {
        if (fread(pre + 10, 1, 2, f) != 2) {
            if (ferror(f))
                return npy_fail(TG_ERR_IO, path, "read failed: %s", strerror(errno));
            return npy_fail(TG_ERR_IO, path, "the file ends inside the header length field");
        }
        *hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
                (uint32_t)pre[11] << 24;
        *prefix = 12;
    }
    if (*hlen > TGCLI_NPY_MAX_HEADER)
        return npy_fail(TG_ERR_IO, path, "header length %" PRIu32 " exceeds the limit of %u bytes",
                        *hlen, TGCLI_NPY_MAX_HEADER);
    return TG_OK;
}

/* Reads and parses the header of hlen bytes. */
static tg_status read_header(FILE *f, const char *path, uint32_t hlen, int64_t file_size,
                             size_t prefix, npy_header *h) {
    if (file_size >= 0 && (int64_t)prefix + (int64_t)hlen > file_size)
        return npy_fail(TG_ERR_IO, path,
                        "header length %" PRIu32 " runs past the end of the file (%" PRId64
                        " bytes)",
                        hlen, file_size);
    char *text = malloc((size_t)hlen + 1);
    if (!text)
        return npy_fail(TG_ERR_NOMEM, path, "out of memory reading a %" PRIu32 "-byte header",
                        hlen);
    tg_status st = TG_OK;
    size_t got = fread(text, 1, hlen, f);
    if (got < hlen) {
        st = ferror(f) ? npy_fail(TG_ERR_IO, path, "read failed: %s", strerror(errno))
                       : npy_fail(TG_ERR_IO, path,
                                  "header length %" PRIu32 " runs past the end of the file",
                                  hlen);
    } else if (memchr(text, '\0', hlen)) {
        st = npy_fail(TG_ERR_IO, path, "malformed header: it contains a NUL byte");
    } else {
        text[hlen] = '\0';
        parser p = {.s = text, .n = hlen, .i = 0, .err = ""};
        memset(h, 0, sizeof *h);
        if (!parse_header(&p, h))
            st = npy_fail(TG_ERR_IO, path, "malformed header: %s", p.err);
    }
    free(text);
    return st;
}

/* Reads the data after a parsed header into a new tensor (owned by the open
 * scope). need = numel * file_isz bytes. */
static tg_status read_data(FILE *f, const char *path, const npy_header *h, int64_t numel,
                           int64_t need, tg_tensor **out) {
    char shp[200];
    shape_str(shp, sizeof shp, h->ndim, h->shape);
    bool reorder = h->fortran && h->ndim > 1;
    const int64_t flat[1] = {numel};
    /* Fortran data is read flat, then reordered into a tensor of the shape. */
    tg_tensor *t = reorder ? tg_empty(h->dtype, 1, flat) : tg_empty(h->dtype, h->ndim, h->shape);
    if (!t)
        return tg_last_status();
    if (need > 0) {
        size_t got = fread(tg_data(t), 1, (size_t)need, f);
        if (got < (size_t)need) {
            if (ferror(f))
                return npy_fail(TG_ERR_IO, path, "read failed: %s", strerror(errno));
            return npy_fail(TG_ERR_IO, path,
                            "data is truncated: shape %s of '%s' needs %" PRId64
                            " bytes, the file has %zu",
                            shp, h->descr, need, got);
        }
    }
    int c = fgetc(f);
    if (c != EOF)
        return npy_fail(TG_ERR_IO, path, "unexpected bytes after the data (shape %s of '%s')", shp,
                        h->descr);
    if (ferror(f))
        return npy_fail(TG_ERR_IO, path, "read failed: %s", strerror(errno));
    if (h->file_isz == 4 && h->dtype == TG_I64)
        widen_i32(tg_data(t), numel);
    if (h->dtype == TG_BOOL) /* NumPy writes 0 and 1; any other byte is read as true */
        for (int64_t i = 0; i < numel; i++)
            ((uint8_t *)tg_data(t))[i] = ((uint8_t *)tg_data(t))[i] != 0;
    if (reorder) {
        tg_tensor *c_order = tg_empty(h->dtype, h->ndim, h->shape);
        if (!c_order)
            return tg_last_status();
        fortran_to_c(tg_data(c_order), tg_data(t), h->ndim, h->shape, tg_dtype_size(h->dtype),
                     numel);
        t = c_order;
    }
    *out = t;
    return TG_OK;
}

static tg_status load_file(FILE *f, const char *path, tg_tensor **out) {
    size_t prefix = 0;
    uint32_t hlen = 0;
    tg_status st = read_prefix(f, path, &prefix, &hlen);
    if (st != TG_OK)
        return st;

    struct stat sb;
    int64_t file_size = -1; /* known only for regular files */
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode))
        file_size = (int64_t)sb.st_size;

    npy_header h;
    st = read_header(f, path, hlen, file_size, prefix, &h);
    if (st != TG_OK)
        return st;

    /* Element count and byte size, with every product checked (zero-size
     * dims still must not hide an overflowing product of the others). */
    char shp[200];
    shape_str(shp, sizeof shp, h.ndim, h.shape);
    int64_t numel = 1, nonzero = 1;
    for (int d = 0; d < h.ndim; d++) {
        int64_t n = h.shape[d];
        if (n != 0 && nonzero > INT64_MAX / 8 / n)
            return npy_fail(TG_ERR_IO, path, "malformed header: shape %s is too large", shp);
        if (n != 0)
            nonzero *= n;
        numel *= n;
    }
    int64_t need = numel * (int64_t)h.file_isz;
    if (file_size >= 0) {
        int64_t avail = file_size - (int64_t)prefix - (int64_t)hlen;
        if (avail < need)
            return npy_fail(TG_ERR_IO, path,
                            "data is truncated: shape %s of '%s' needs %" PRId64
                            " bytes, the file has %" PRId64,
                            shp, h.descr, need, avail);
        if (avail > need)
            return npy_fail(TG_ERR_IO, path,
                            "%" PRId64 " unexpected bytes after the data (shape %s of '%s' needs %" PRId64
                            " bytes)",
                            avail - need, shp, h.descr, need);
    }

    int scope = tg_scope_begin();
    if (scope < 0)
        return tg_last_status();
    tg_tensor *t = NULL;
    st = read_data(f, path, &h, numel, need, &t);
    if (st == TG_OK) {
        /* to the enclosing scope (which may fail to grow) or to the caller */
        *out = tg_scope_keep(t);
        if (!*out)
            st = tg_last_status();
    }
    tg_scope_end(scope);
    return st;
}

/* Reads the .npy file at path into a new contiguous CPU tensor (*out, a new
 * reference; NULL on failure). TG_ERR_NULL, TG_ERR_IO (message "PATH: ..."),
 * TG_ERR_NOMEM. Contract in npy.h. */
tg_status tgcli_npy_load(const char *path, tg_tensor **out) {
    if (out)
        *out = NULL;
    if (!path || !out)
        return tg_set_error(TG_ERR_NULL, "tgcli_npy_load: argument '%s' is NULL",
                           path ? "out" : "path");
    if (!host_is_little_endian())
        return npy_fail(TG_ERR_IO, path, ".npy files are supported on little-endian machines only");
    FILE *f = fopen(path, "rb");
    if (!f)
        return npy_fail(TG_ERR_IO, path, "cannot open: %s", strerror(errno));
    tg_status st = load_file(f, path, out);
    fclose(f); /* read-only: nothing to lose */
    return st;
}

/* ---- saving ------------------------------------------------------------------------------- */

/* Writes numel elements of t (CPU, any strides) in C order. */
static bool write_strided(FILE *f, const tg_tensor *t, size_t isz, int64_t numel) {
    const unsigned char *base = tg_data((tg_tensor *)t); /* read only */
    int nd = tg_ndim(t);
    if (tg_is_contiguous(t))
        return fwrite(base, isz, (size_t)numel, f) == (size_t)numel;
    int64_t shape[TG_MAX_DIMS], stride[TG_MAX_DIMS], idx[TG_MAX_DIMS] = {0}, off = 0;
    for (int d = 0; d < nd; d++) {
        shape[d] = tg_size(t, d);
        stride[d] = tg_stride(t, d);
    }
    unsigned char buf[NPY_WRITE_BUF];
    size_t used = 0;
    for (int64_t e = 0; e < numel; e++) {
        memcpy(buf + used, base + off * (int64_t)isz, isz);
        used += isz;
        if (used + isz > sizeof buf) {
            if (fwrite(buf, 1, used, f) != used)
                return false;
            used = 0;
        }
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            off += stride[d];
            if (idx[d] < shape[d])
                break;
            off -= stride[d] * shape[d];
            idx[d] = 0;
        }
    }
    return used == 0 || fwrite(buf, 1, used, f) == used;
}

/* The full header (prefix, dict, padding, newline) for t in hdr; returns its
 * length. hdr must hold 512 bytes. */
static size_t build_header(unsigned char *hdr, const char *descr, int ndim, const int64_t *shape) {
    char dict[400], shp[200];
    shape_str(shp, sizeof shp, ndim, shape);
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descr, shp);
    if (ndim > 0) {
        char first[24];
        int digits = snprintf(first, sizeof first, "%" PRId64, shape[0]);
        for (int k = digits; k < NPY_GROWTH_DIGITS; k++)
            dict[len++] = ' ';
    }
    size_t hlen = (size_t)len + 1; /* + '\n' */
    size_t pre = 10;
    size_t pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
    if (hlen + pad > 65535) { /* never for <= 8 dims; kept for NumPy's rule */
        pre = 12;
        pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
    }
    uint32_t field = (uint32_t)(hlen + pad);
    memcpy(hdr, NPY_MAGIC, NPY_MAGIC_LEN);
    hdr[6] = pre == 10 ? 1 : 2;
    hdr[7] = 0;
    hdr[8] = (unsigned char)(field & 0xff);
    hdr[9] = (unsigned char)(field >> 8 & 0xff);
    if (pre == 12) {
        hdr[10] = (unsigned char)(field >> 16 & 0xff);
        hdr[11] = (unsigned char)(field >> 24 & 0xff);
    }
    memcpy(hdr + pre, dict, (size_t)len);
    memset(hdr + pre + (size_t)len, ' ', pad);
    hdr[pre + (size_t)len + pad] = '\n';
    return pre + hlen + pad;
}

/* Checks path and t and gives the header and the host copy of t's data (or
 * NULL: t's own data is read). TG_OK, or the error recorded. */
static tg_status save_prepare(const char *path, const tg_tensor *t, unsigned char *hdr,
                              size_t *hn, size_t *isz, void **host) {
    *host = NULL;
    if (!path)
        return tg_set_error(TG_ERR_NULL, "tgcli_npy_save: argument 'path' is NULL");
    if (!t) {
        if (tg_last_status() == TG_OK)
            tg_set_error(TG_ERR_NULL, "tgcli_npy_save: argument 't' is NULL");
        return TG_ERR_NULL;
    }
    if (!host_is_little_endian())
        return npy_fail(TG_ERR_IO, path, ".npy files are supported on little-endian machines only");
    tg_dtype dt = tg_get_dtype(t);
    const char *descr = dt == TG_F32 ? "<f4" : dt == TG_F64 ? "<f8" : dt == TG_I64 ? "<i8"
                        : dt == TG_BOOL ? "|b1" : dt == TG_BF16 ? "<V2" : NULL;
    if (!descr)
        return npy_fail(TG_ERR_DTYPE, path, "cannot save a tensor of dtype %d", (int)dt);
    *isz = tg_dtype_size(dt);
    int64_t numel = tg_numel(t);
    /* A non-CPU tensor is copied out first (that copy may fail). */
    if (numel > 0 && tg_get_device(t) != TG_CPU) {
        size_t bytes = (size_t)numel * *isz;
        *host = malloc(bytes);
        if (!*host)
            return npy_fail(TG_ERR_NOMEM, path, "out of memory copying %zu bytes to the host",
                            bytes);
        tg_status st = tg_copy_out(t, dt, *host, bytes);
        if (st != TG_OK) {
            free(*host);
            *host = NULL;
            return st;
        }
    }
    *hn = build_header(hdr, descr, tg_ndim(t), tg_shape(t));
    return TG_OK;
}

/* Writes t's file to f (path names it in messages); write errors are left to
 * the caller's close. */
static void save_stream(FILE *f, const tg_tensor *t, const unsigned char *hdr, size_t hn,
                        size_t isz, const void *host) {
    int64_t numel = tg_numel(t);
    bool ok = fwrite(hdr, 1, hn, f) == hn;
    if (ok && numel > 0)
        ok = host ? fwrite(host, isz, (size_t)numel, f) == (size_t)numel
                  : write_strided(f, t, isz, numel);
    (void)ok; /* the stream's error flag says it */
}

tg_status tgcli_npy_write(FILE *f, const char *path, const tg_tensor *t) {
    if (!f)
        return tg_set_error(TG_ERR_NULL, "tgcli_npy_write: argument 'f' is NULL");
    unsigned char hdr[512];
    size_t hn = 0, isz = 0;
    void *host = NULL;
    tg_status st = save_prepare(path ? path : "(stream)", t, hdr, &hn, &isz, &host);
    if (st != TG_OK)
        return st;
    save_stream(f, t, hdr, hn, isz, host);
    free(host);
    return TG_OK;
}

/* Writes t in C order as a version 1.0 .npy file, byte for byte as NumPy
 * does, through a temporary file renamed onto path (cli/common.h).
 * TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_IO (message "PATH: ..."), TG_ERR_NOMEM.
 * Contract in npy.h. */
tg_status tgcli_npy_save(const char *path, const tg_tensor *t) {
    unsigned char hdr[512];
    size_t hn = 0, isz = 0;
    void *host = NULL;
    tg_status st = save_prepare(path, t, hdr, &hn, &isz, &host);
    if (st != TG_OK)
        return st;
    cli_file cf;
    int err = cli_file_open(&cf, path);
    if (err) {
        free(host);
        return npy_fail(TG_ERR_IO, path, "cannot create: %s", strerror(err));
    }
    save_stream(cf.f, t, hdr, hn, isz, host);
    free(host);
    if ((err = cli_file_commit(&cf)) != 0)
        return npy_fail(TG_ERR_IO, path, "write failed: %s", strerror(err));
    return TG_OK;
}
