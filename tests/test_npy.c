/* tests/test_npy.c - the .npy reader and writer of the `tapegrad` command
 * (cli/npy.c).
 *
 * Covers: files written by NumPy itself (their exact bytes, below, so NumPy
 * is not needed to run the tests) for format versions 1.0, 2.0 and 3.0,
 * '<f4', '<f8', '<i8', '<i4' (widened), Fortran order, 0-d, 8-d and empty
 * arrays; the writer producing NumPy's bytes exactly; round trips of every
 * dtype, of 0-d and 8-d tensors and of strided views (written in C order);
 * header variants NumPy accepts; every malformed file -> TG_ERR_IO with a
 * message naming the file and the problem; files read through a pipe (size
 * unknown in advance); write errors; allocation failures injected at every
 * step. The fixture checks after each test that nothing leaked.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"
#include "tg_test_util.h"

TestSuite(npy, .init = tgt_setup, .fini = tgt_teardown);

/* ---- bytes written by NumPy 1.24 (np.save / np.lib.format.write_array) ---- */

/* np.save(np.arange(6, dtype='<f4').reshape(2, 3)): version 1.0 */
static const char NP_F4_2x3[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, '"
    "shape': (2, 3), }                                               "
    "           \012\000\000\000\000\000\000\200\077\000\000\000@\000"
    "\000@@\000\000\200@\000\000\240@";

/* np.save(np.array(2.5)): a 0-d '<f8' */
static const char NP_F8_SCALAR[] =
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, '"
    "shape': (), }                                                   "
    "           \012\000\000\000\000\000\000\004@";

/* write_array(np.array([1.0, -2.0, 3.5]), version=(2, 0)) */
static const char NP_F8_V2[] =
    "\223NUMPY\002\000t\000\000\000{'descr': '<f8', 'fortran_order': "
    "False, 'shape': (3,), }                                         "
    "                 \012\000\000\000\000\000\000\360\077\000\000\000"
    "\000\000\000\000\300\000\000\000\000\000\000\014@";

/* write_array(np.array([[1, -2], [3, 4]]), version=(3, 0)): UTF-8 header */
static const char NP_I8_V3[] =
    "\223NUMPY\003\000t\000\000\000{'descr': '<i8', 'fortran_order': "
    "False, 'shape': (2, 2), }                                       "
    "                 \012\001\000\000\000\000\000\000\000\376\377\377"
    "\377\377\377\377\377\003\000\000\000\000\000\000\000\004\000\000"
    "\000\000\000\000\000";

/* np.save(np.array([0, -1, 7, -100], dtype='<i4')) */
static const char NP_I4[] =
    "\223NUMPY\001\000v\000{'descr': '<i4', 'fortran_order': False, '"
    "shape': (4,), }                                                 "
    "           \012\000\000\000\000\377\377\377\377\007\000\000\000\234"
    "\377\377\377";

/* np.save(np.array([[True, False, True], [False, False, True]])) */
static const char NP_B1[] =
    "\223NUMPY\001\000v\000{'descr': '|b1', 'fortran_order': False, '"
    "shape': (2, 3), }                                               "
    "           \012\001\000\001\000\000\001";

/* np.save(np.asfortranarray(np.arange(6.0).reshape(2, 3))) */
static const char NP_F8_FORTRAN[] =
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': True, 's"
    "hape': (2, 3), }                                                "
    "           \012\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\010@\000\000\000\000\000\000\360\077\000\000\000\000\000\000"
    "\020@\000\000\000\000\000\000\000@\000\000\000\000\000\000\024@";

/* np.save(np.asfortranarray(np.arange(24, dtype='<i4').reshape(2, 3, 4))) */
static const char NP_I4_FORTRAN_3D[] =
    "\223NUMPY\001\000v\000{'descr': '<i4', 'fortran_order': True, 's"
    "hape': (2, 3, 4), }                                             "
    "           \012\000\000\000\000\014\000\000\000\004\000\000\000\020"
    "\000\000\000\010\000\000\000\024\000\000\000\001\000\000\000\015"
    "\000\000\000\005\000\000\000\021\000\000\000\011\000\000\000\025"
    "\000\000\000\002\000\000\000\016\000\000\000\006\000\000\000\022"
    "\000\000\000\012\000\000\000\026\000\000\000\003\000\000\000\017"
    "\000\000\000\007\000\000\000\023\000\000\000\013\000\000\000\027"
    "\000\000\000";

/* np.save(np.zeros((0, 3), dtype='<f4')) */
static const char NP_F4_EMPTY[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, '"
    "shape': (0, 3), }                                               "
    "           \012";

/* np.save(np.arange(4.0).reshape(1, 2, 1, 1, 1, 1, 1, 2)) */
static const char NP_F8_8D[] =
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, '"
    "shape': (1, 2, 1, 1, 1, 1, 1, 2), }                             "
    "           \012\000\000\000\000\000\000\000\000\000\000\000\000\000"
    "\000\360\077\000\000\000\000\000\000\000@\000\000\000\000\000\000"
    "\010@";

/* np.save(np.zeros(0, dtype='<i8')) */
static const char NP_I8_ZERO[] =
    "\223NUMPY\001\000v\000{'descr': '<i8', 'fortran_order': False, '"
    "shape': (0,), }                                                 "
    "           \012";

/* ---- helpers ------------------------------------------------------------------- */

#define LEN(lit) (sizeof(lit) - 1) /* a string literal's bytes, without the final NUL */

static int g_sentinel; /* *out is set to NULL on failure: start from non-NULL */
#define NOT_NULL ((tg_tensor *)(void *)&g_sentinel)

/* A new empty temporary file; its name in path (64 bytes). */
static void tmp_new(char *path) {
    snprintf(path, 64, "%s", "/tmp/tg_npy_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    close(fd);
}

static void write_file(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(b, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Reads a whole (small) file; returns its size. */
static size_t read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, cap, f);
    cr_assert(feof(f) || n < cap, "%s is larger than %zu bytes", path, cap);
    fclose(f);
    return n;
}

/* Loads bytes through a temporary file and asserts success. */
static tg_tensor *load_bytes(const void *b, size_t n) {
    char path[64];
    tmp_new(path);
    write_file(path, b, n);
    tg_tensor *t = NOT_NULL;
    tg_status st = tgcli_npy_load(path, &t);
    unlink(path);
    cr_assert_eq(st, TG_OK, "%s: %s", tg_status_name(st), tg_last_error());
    cr_assert_not_null(t);
    return t;
}

/* Loading the bytes fails with TG_ERR_IO, *out NULL, and a message that names
 * the file and contains sub. */
static void expect_bad(const void *b, size_t n, const char *sub) {
    char path[64];
    tmp_new(path);
    write_file(path, b, n);
    tg_clear_error();
    tg_tensor *t = NOT_NULL;
    tg_status st = tgcli_npy_load(path, &t);
    unlink(path);
    cr_assert_null(t, "output not reset (expected failure containing \"%s\")", sub);
    cr_assert_eq(st, TG_ERR_IO, "got %s (%s), expected TG_ERR_IO containing \"%s\"",
                 tg_status_name(st), tg_last_error(), sub);
    tgt_assert_error(TG_ERR_IO, path, sub, NULL);
    tg_clear_error();
}

/* A .npy file: magic, version major.0, header text padded like NumPy (spaces
 * and a final '\n' up to a multiple of 64), then n data bytes. Returns its
 * size. */
static size_t mk(unsigned char *buf, size_t cap, int major, const char *hdr, const void *data,
                 size_t n) {
    size_t pre = major == 1 ? 10 : 12, hl = strlen(hdr);
    size_t pad = 64 - (pre + hl + 1) % 64;
    size_t field = hl + pad + 1;
    cr_assert(pre + field + n <= cap);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t k = 0; k < pre - 8; k++)
        buf[8 + k] = (unsigned char)(field >> (8 * k) & 0xff);
    memcpy(buf + pre, hdr, hl);
    memset(buf + pre + hl, ' ', pad);
    buf[pre + hl + pad] = '\n';
    if (n)
        memcpy(buf + pre + field, data, n);
    return pre + field + n;
}

/* A version 1.0 file with header hdr and n zero bytes of data must fail. */
static void bad_header(const char *hdr, size_t n, const char *sub) {
    static const unsigned char zeros[256];
    unsigned char buf[4096];
    cr_assert(n <= sizeof zeros);
    expect_bad(buf, mk(buf, sizeof buf, 1, hdr, zeros, n), sub);
}

static const float F6[6] = {0, 1, 2, 3, 4, 5};

static void assert_shape(const tg_tensor *t, tg_dtype dt, int ndim, const int64_t *shape) {
    cr_assert_eq(tg_get_dtype(t), dt, "dtype %s, expected %s", tg_dtype_name(tg_get_dtype(t)),
                 tg_dtype_name(dt));
    cr_assert_eq(tg_ndim(t), ndim, "ndim %d, expected %d", tg_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(tg_size(t, d), shape[d], "dim %d: %lld, expected %lld", d,
                     (long long)tg_size(t, d), (long long)shape[d]);
    cr_assert(tg_is_contiguous(t));
}

static void assert_i64(const tg_tensor *t, const int64_t *want, int64_t n) {
    int64_t got[64];
    cr_assert(n <= 64 && tg_numel(t) == n);
    cr_assert_eq(tg_copy_out(t, TG_I64, got, sizeof got), TG_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "element %lld: %lld, expected %lld", (long long)i,
                     (long long)got[i], (long long)want[i]);
}

/* Saves t to a temporary file and loads it back; the file's bytes go to buf
 * (when not NULL) and their count to *nbytes. */
static tg_tensor *round_trip(const tg_tensor *t, unsigned char *buf, size_t cap, size_t *nbytes) {
    char path[64];
    tmp_new(path);
    cr_assert_eq(tgcli_npy_save(path, t), TG_OK, "%s", tg_last_error());
    if (buf)
        *nbytes = read_file(path, buf, cap);
    tg_tensor *back = NULL;
    cr_assert_eq(tgcli_npy_load(path, &back), TG_OK, "%s", tg_last_error());
    unlink(path);
    return back;
}

/* a and b have the same shape, dtype and bytes in C order. */
static void assert_same(const tg_tensor *a, const tg_tensor *b) {
    cr_assert_eq(tg_get_dtype(a), tg_get_dtype(b));
    cr_assert_eq(tg_ndim(a), tg_ndim(b));
    for (int d = 0; d < tg_ndim(a); d++)
        cr_assert_eq(tg_size(a, d), tg_size(b, d), "dim %d differs", d);
    size_t n = (size_t)tg_numel(a) * tg_dtype_size(tg_get_dtype(a));
    unsigned char *x = malloc(n + 1), *y = malloc(n + 1);
    cr_assert(x && y);
    cr_assert_eq(tg_copy_out(a, tg_get_dtype(a), x, n), TG_OK);
    cr_assert_eq(tg_copy_out(b, tg_get_dtype(b), y, n), TG_OK);
    int diff = memcmp(x, y, n);
    free(x);
    free(y);
    cr_assert_eq(diff, 0, "values differ");
}

/* ---- files written by NumPy ---------------------------------------------------------- */

Test(npy, numpy_v1_f32) {
    tg_tensor *t = load_bytes(NP_F4_2x3, LEN(NP_F4_2x3));
    assert_shape(t, TG_F32, 2, (const int64_t[]){2, 3});
    tgt_assert_values(t, (const double[]){0, 1, 2, 3, 4, 5}, 6, 0);
    tg_release(t);
}

Test(npy, numpy_scalar_0d) {
    tg_tensor *t = load_bytes(NP_F8_SCALAR, LEN(NP_F8_SCALAR));
    assert_shape(t, TG_F64, 0, NULL);
    double v = 0;
    cr_assert_eq(tg_item(t, &v), TG_OK);
    cr_assert_eq(v, 2.5);
    tg_release(t);
}

Test(npy, numpy_v2_and_v3) {
    tg_tensor *t = load_bytes(NP_F8_V2, LEN(NP_F8_V2));
    assert_shape(t, TG_F64, 1, (const int64_t[]){3});
    tgt_assert_values(t, (const double[]){1.0, -2.0, 3.5}, 3, 0);
    tg_release(t);
    t = load_bytes(NP_I8_V3, LEN(NP_I8_V3));
    assert_shape(t, TG_I64, 2, (const int64_t[]){2, 2});
    assert_i64(t, (const int64_t[]){1, -2, 3, 4}, 4);
    tg_release(t);
}

Test(npy, numpy_i4_is_widened) {
    tg_tensor *t = load_bytes(NP_I4, LEN(NP_I4));
    assert_shape(t, TG_I64, 1, (const int64_t[]){4});
    assert_i64(t, (const int64_t[]){0, -1, 7, -100}, 4);
    tg_release(t);
}

static void assert_writes(const tg_tensor *t, const char *want, size_t n);

Test(npy, numpy_bool) {
    tg_tensor *t = load_bytes(NP_B1, LEN(NP_B1));
    assert_shape(t, TG_BOOL, 2, (const int64_t[]){2, 3});
    tgt_assert_values(t, (const double[]){1, 0, 1, 0, 0, 1}, 6, 0);
    assert_writes(t, NP_B1, LEN(NP_B1)); /* byte for byte what NumPy writes */
    tg_release(t);
    /* a byte other than 0 and 1 is read as true and stored as 1 */
    char odd[sizeof NP_B1];
    memcpy(odd, NP_B1, sizeof NP_B1);
    odd[LEN(NP_B1) - 6] = 7;
    t = load_bytes(odd, LEN(NP_B1));
    uint8_t v[6];
    cr_assert_eq(tg_copy_out(t, TG_BOOL, v, sizeof v), TG_OK);
    cr_assert_eq(v[0], 1);
    tg_release(t);
}

Test(npy, numpy_fortran_order) {
    tg_tensor *t = load_bytes(NP_F8_FORTRAN, LEN(NP_F8_FORTRAN));
    assert_shape(t, TG_F64, 2, (const int64_t[]){2, 3});
    tgt_assert_values(t, (const double[]){0, 1, 2, 3, 4, 5}, 6, 0);
    tg_release(t);
    t = load_bytes(NP_I4_FORTRAN_3D, LEN(NP_I4_FORTRAN_3D));
    assert_shape(t, TG_I64, 3, (const int64_t[]){2, 3, 4});
    int64_t want[24];
    for (int i = 0; i < 24; i++)
        want[i] = i;
    assert_i64(t, want, 24);
    tg_release(t);
}

Test(npy, numpy_empty_and_8d) {
    tg_tensor *t = load_bytes(NP_F4_EMPTY, LEN(NP_F4_EMPTY));
    assert_shape(t, TG_F32, 2, (const int64_t[]){0, 3});
    tg_release(t);
    t = load_bytes(NP_I8_ZERO, LEN(NP_I8_ZERO));
    assert_shape(t, TG_I64, 1, (const int64_t[]){0});
    tg_release(t);
    t = load_bytes(NP_F8_8D, LEN(NP_F8_8D));
    assert_shape(t, TG_F64, 8, (const int64_t[]){1, 2, 1, 1, 1, 1, 1, 2});
    tgt_assert_values(t, (const double[]){0, 1, 2, 3}, 4, 0);
    tg_release(t);
}

/* The writer produces NumPy's bytes exactly. */
static void assert_writes(const tg_tensor *t, const char *want, size_t n) {
    unsigned char buf[1024];
    size_t got = 0;
    tg_tensor *back = round_trip(t, buf, sizeof buf, &got);
    cr_assert_eq(got, n, "wrote %zu bytes, NumPy writes %zu", got, n);
    cr_assert_eq(memcmp(buf, want, n), 0, "bytes differ from NumPy's");
    assert_same(t, back);
    tg_release(back);
}

Test(npy, writer_matches_numpy) {
    tg_tensor *a = tg_from_data(TG_F32, TG_SHAPE(2, 3), F6);
    assert_writes(a, NP_F4_2x3, LEN(NP_F4_2x3));
    tg_release(a);
    a = tg_full(TG_F64, TG_SCALAR, 2.5);
    assert_writes(a, NP_F8_SCALAR, LEN(NP_F8_SCALAR));
    tg_release(a);
    a = tg_from_data(TG_F64, TG_SHAPE(1, 2, 1, 1, 1, 1, 1, 2), ((const double[]){0, 1, 2, 3}));
    assert_writes(a, NP_F8_8D, LEN(NP_F8_8D));
    tg_release(a);
    a = tg_zeros(TG_F32, TG_SHAPE(0, 3));
    assert_writes(a, NP_F4_EMPTY, LEN(NP_F4_EMPTY));
    tg_release(a);
    a = tg_zeros(TG_I64, TG_SHAPE(0));
    assert_writes(a, NP_I8_ZERO, LEN(NP_I8_ZERO));
    tg_release(a);
    /* NumPy's Fortran-order file, loaded and saved: the same array in C order */
    a = load_bytes(NP_F8_FORTRAN, LEN(NP_F8_FORTRAN));
    tg_tensor *c = tg_arange(TG_F64, 0, 6, 1), *c23 = tg_view(c, TG_SHAPE(2, 3));
    tg_tensor *back = round_trip(a, NULL, 0, NULL);
    assert_same(back, c23);
    tg_release(back);
    tg_release(c23);
    tg_release(c);
    tg_release(a);
}

/* ---- round trips ------------------------------------------------------------------------------ */

Test(npy, round_trip_every_dtype) {
    const float f[8] = {0.0f, -1.5f, 3.25f, INFINITY, -INFINITY, NAN, 1e-40f, 3.4028235e38f};
    const double d[8] = {0.0, -0.0, 1.0 / 3.0, INFINITY, -INFINITY, NAN, 4.9e-324, -1e308};
    const int64_t i[5] = {INT64_MIN, -1, 0, 42, INT64_MAX};
    const uint16_t h[6] = {0x3f80, 0xbfc0, 0x7f80, 0xff80, 0x7fc1, 0x0001}; /* bf16 bits */
    tg_tensor *ts[4] = {tg_from_data(TG_F32, TG_SHAPE(2, 4), f),
                        tg_from_data(TG_F64, TG_SHAPE(8), d),
                        tg_from_data(TG_I64, TG_SHAPE(5, 1), i),
                        tg_from_data(TG_BF16, TG_SHAPE(3, 2), h)};
    for (int k = 0; k < 4; k++) {
        cr_assert_not_null(ts[k]);
        tg_tensor *back = round_trip(ts[k], NULL, 0, NULL);
        assert_same(ts[k], back);
        tg_release(back);
        tg_release(ts[k]);
    }
}

Test(npy, round_trip_0d_and_8d) {
    tg_tensor *s = tg_full(TG_I64, TG_SCALAR, -7);
    tg_tensor *back = round_trip(s, NULL, 0, NULL);
    assert_shape(back, TG_I64, 0, NULL);
    assert_same(s, back);
    tg_release(back);
    tg_release(s);
    tg_tensor *e = tg_randn(TG_F64, TG_SHAPE(2, 1, 3, 1, 2, 1, 1, 2), 5, 0.0, 1.0);
    back = round_trip(e, NULL, 0, NULL);
    assert_shape(back, TG_F64, 8, (const int64_t[]){2, 1, 3, 1, 2, 1, 1, 2});
    assert_same(e, back);
    tg_release(back);
    tg_release(e);
}

/* Views with any strides and offsets are written in C order. */
Test(npy, round_trip_strided_views) {
    int s = tg_scope_begin(); /* owns the views and the nested calls' results */
    tg_tensor *m = tg_view(tg_arange(TG_F64, 0, 12, 1), TG_SHAPE(3, 4));
    tg_tensor *views[4] = {
        tg_transpose(m, 0, 1),                              /* (4, 3), strides (1, 4) */
        tg_slice(m, 1, 1, 4, 2),                             /* (3, 2), offset 1 */
        tg_expand(tg_slice(m, 0, 2, 3, 1), TG_SHAPE(5, 4)), /* stride 0 */
        tg_slice(tg_transpose(m, 0, 1), 0, 3, 4, 1),        /* (1, 3), offset 3 */
    };
    for (int k = 0; k < 4; k++) {
        cr_assert_not_null(views[k], "view %d: %s", k, tg_last_error());
        cr_assert(k == 3 || !tg_is_contiguous(views[k]), "view %d is contiguous", k);
        tg_tensor *back = round_trip(views[k], NULL, 0, NULL);
        cr_assert(tg_is_contiguous(back));
        assert_same(views[k], back);
    }
    cr_assert_eq(tg_scope_end(s), TG_OK);
}

/* A strided tensor larger than the writer's staging buffer. */
Test(npy, round_trip_large_transpose) {
    int s = tg_scope_begin();
    tg_tensor *a = tg_randn(TG_F32, TG_SHAPE(300, 257), 9, 0.0, 1.0);
    tg_tensor *t = tg_transpose(a, 0, 1);
    tg_tensor *back = round_trip(t, NULL, 0, NULL);
    assert_same(t, back);
    tg_scope_end(s);
}

/* A tensor loaded inside a scope belongs to it, like any new tensor. */
Test(npy, load_inside_scope) {
    int s = tg_scope_begin();
    tg_tensor *t = load_bytes(NP_I4_FORTRAN_3D, LEN(NP_I4_FORTRAN_3D));
    cr_assert_eq(tg_numel(t), 24);
    cr_assert_eq(tg_scope_end(s), TG_OK);
    tgt_assert_nothing_live();
}

/* ---- header variants NumPy accepts ------------------------------------------------------------ */

Test(npy, header_variants) {
    static const char *const HDRS[] = {
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
        "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3)}",
        "{ 'descr' : '|f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (2L, 3L), }",
        "{'descr': 'f4',\n\t'fortran_order': False,\r\n 'shape': (2, 3)}",
    };
    unsigned char buf[512];
    for (int major = 1; major <= 3; major++)
        for (size_t k = 0; k < sizeof HDRS / sizeof HDRS[0]; k++) {
            tg_tensor *t = load_bytes(buf, mk(buf, sizeof buf, major, HDRS[k], F6, sizeof F6));
            assert_shape(t, TG_F32, 2, (const int64_t[]){2, 3});
            tgt_assert_values(t, (const double[]){0, 1, 2, 3, 4, 5}, 6, 0);
            tg_release(t);
        }
    /* no padding and no newline: the data follows the dict directly */
    static const char RAW[] = "\x93NUMPY\x01\x00\x37\x00"
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"
                              "\x00\x00\x80\x3f";
    cr_assert_eq(LEN(RAW), 10 + 55 + 4);
    tg_tensor *t = load_bytes(RAW, LEN(RAW));
    tgt_assert_values(t, (const double[]){1.0}, 1, 0);
    tg_release(t);
}

/* ---- malformed files -------------------------------------------------------------------------- */

Test(npy, bad_prefix) {
    expect_bad("", 0, "too short to be a .npy file (0 bytes)");
    expect_bad("\x93NUM", 4, "too short");
    expect_bad("\x93NUMPZ\x01\x00\x10\x00{}", 12, "magic string");
    static const char ZIP[] = "PK\x03\x04 an npz is a zip";
    expect_bad(ZIP, LEN(ZIP), "magic string");
    unsigned char buf[512];
    size_t n = mk(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                  F6, sizeof F6);
    buf[6] = 4;
    expect_bad(buf, n, "unsupported .npy format version 4.0");
    buf[6] = 0;
    expect_bad(buf, n, "version 0.0");
    buf[6] = 1;
    buf[7] = 1;
    expect_bad(buf, n, "version 1.1");
    expect_bad("\x93NUMPY\x02\x00\x10", 9, "too short");
    expect_bad("\x93NUMPY\x02\x00\x10\x00\x00", 11, "header length field");
}

Test(npy, bad_header_length) {
    unsigned char buf[512];
    size_t n = mk(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                  F6, sizeof F6);
    buf[8] = 0x00;
    buf[9] = 0x10; /* 4096 bytes of header in a 152-byte file */
    expect_bad(buf, n, "header length 4096 runs past the end of the file (152 bytes)");
    buf[8] = 0xff;
    buf[9] = 0xff;
    expect_bad(buf, n, "header length 65535 runs past the end");
    /* version 2.0: a 4-byte length, limited to 1 MiB whatever the file's size */
    n = mk(buf, sizeof buf, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", F6,
           sizeof F6);
    memcpy(buf + 8, "\xff\xff\xff\x7f", 4);
    expect_bad(buf, n, "header length 2147483647 exceeds the limit of 1048576 bytes");
    memcpy(buf + 8, "\x01\x00\x10\x00", 4);
    expect_bad(buf, n, "header length 1048577 exceeds the limit");
    memcpy(buf + 8, "\x00\x00\x10\x00", 4); /* exactly 1 MiB: allowed, but past the file */
    expect_bad(buf, n, "header length 1048576 runs past the end");
}

Test(npy, bad_dict) {
    bad_header("", 0, "expected '{' at the start of the header dict");
    bad_header("['descr', '<f4']", 0, "expected '{'");
    bad_header("{}", 0, "lacks the key 'descr'");
    bad_header("{'descr': '<f4', 'fortran_order': False}", 0, "lacks the key 'shape'");
    bad_header("{'descr': '<f4', 'shape': (2,)}", 8, "lacks the key 'fortran_order'");
    bad_header("{'fortran_order': False, 'shape': (2,)}", 8, "lacks the key 'descr'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8,
               "unknown key 'extra'");
    bad_header("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 8,
               "key 'descr' appears twice");
    bad_header("{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
               "expected ':' after a header key");
    bad_header("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8,
               "expected ',' or '}' after the value of 'descr'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8,
               "expected ',' or '}' after the value of 'shape'");
    bad_header("{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
               "unknown key 'descr: '");
    bad_header("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8,
               "unsupported dtype '<f4, '");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8,
               "unexpected text after the header dict: 'x'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}}", 8,
               "unexpected text after the header dict");
    bad_header("{descr: '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
               "expected a quoted string for a header key");
    bad_header("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (2,)}", 8,
               "escape sequences are not supported");
    bad_header("{'descr': '<f4', 'fortran_order': 'False', 'shape': (2,)}", 8,
               "'fortran_order' must be True or False");
    bad_header("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", 8,
               "'fortran_order' must be True or False");
    bad_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8, "True or False");
    /* a NUL byte inside the header */
    unsigned char buf[512];
    size_t n = mk(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                  F6, 8);
    buf[10 + 20] = '\0';
    expect_bad(buf, n, "NUL byte");
}

Test(npy, bad_dtype) {
    bad_header("{'descr': '>f8', 'fortran_order': False, 'shape': (2,)}", 16,
               "big-endian dtype '>f8' is not supported");
    bad_header("{'descr': '>i4', 'fortran_order': False, 'shape': (2,)}", 8, "big-endian");
    bad_header("{'descr': '<c16', 'fortran_order': False, 'shape': (2,)}", 32,
               "unsupported dtype '<c16' (supported: '<f4', '<f8', '<i8', '<i4', '|b1', "
               "'<V2' as bf16)");
    bad_header("{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}", 4,
               "unsupported dtype '<f2'");
    bad_header("{'descr': '<u8', 'fortran_order': False, 'shape': (2,)}", 16,
               "unsupported dtype '<u8'");
    bad_header("{'descr': '|u1', 'fortran_order': False, 'shape': (2,)}", 2,
               "unsupported dtype '|u1'");
    bad_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 16, "unsupported dtype");
    bad_header("{'descr': '', 'fortran_order': False, 'shape': (2,)}", 16, "unsupported dtype ''");
    bad_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8,
               "structured dtypes are not supported");
    bad_header("{'descr': 4, 'fortran_order': False, 'shape': (2,)}", 8,
               "expected a quoted string for 'descr'");
    /* UTF-8 in a version 3.0 header: still an unknown dtype */
    unsigned char buf[512];
    expect_bad(buf,
               mk(buf, sizeof buf, 3,
                  "{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (2,)}", F6, 8),
               "unsupported dtype");
}

Test(npy, bad_shape) {
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}", 0,
               "negative dimension in 'shape'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", 0, "negative");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 0,
               "dimension 0 of 'shape' overflows a 64-bit integer");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}", 0,
               "overflows");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 0,
               "shape (4294967296, 4294967296) is too large");
    bad_header("{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807,)}", 0,
               "too large");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}",
               0, "too large");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}",
               4, "'shape' has more than 8 dimensions");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12,
               "'shape' (3) is not a tuple (a 1-d shape is written (3,))");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", 24,
               "'shape' must be a tuple such as (2, 3)");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': 6}", 24, "must be a tuple");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", 8,
               "'shape' must hold integers");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", 8,
               "expected ',' or ')' in 'shape'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 24,
               "expected ',' or ')'");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", 0, "must hold integers");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", 8,
               "must hold integers");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", 24,
               "expected ',' or ')'");
}

Test(npy, bad_data_size) {
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 20,
               "data is truncated: shape (2, 3) of '<f4' needs 24 bytes, the file has 20");
    bad_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 28,
               "4 unexpected bytes after the data (shape (2, 3) of '<f4' needs 24 bytes)");
    bad_header("{'descr': '<i4', 'fortran_order': False, 'shape': (5,)}", 16,
               "needs 20 bytes, the file has 16");
    bad_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3)}", 40, "truncated");
    bad_header("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", 0,
               "shape () of '<f8' needs 8 bytes, the file has 0");
    bad_header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5)}", 8,
               "8 unexpected bytes");
    /* a huge declared shape is refused from the file size, before any allocation */
    bad_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,)}", 16,
               "needs 8000000000000 bytes, the file has 16");
    /* NumPy's own files with one byte cut or added */
    expect_bad(NP_I4_FORTRAN_3D, LEN(NP_I4_FORTRAN_3D) - 1, "truncated");
    unsigned char buf[512];
    memcpy(buf, NP_F4_2x3, LEN(NP_F4_2x3));
    buf[LEN(NP_F4_2x3)] = 0;
    expect_bad(buf, LEN(NP_F4_2x3) + 1, "1 unexpected bytes after the data");
    expect_bad(NP_F4_2x3, 100, "runs past the end");
}

/* ---- files that cannot be opened or read -------------------------------------------------------- */

Test(npy, unreadable_paths) {
    tg_tensor *t = NOT_NULL;
    cr_assert_eq(tgcli_npy_load("/nonexistent-dir-tg/x.npy", &t), TG_ERR_IO);
    cr_assert_null(t);
    tgt_assert_error(TG_ERR_IO, "/nonexistent-dir-tg/x.npy: cannot open: ",
                     strerror(ENOENT), NULL);
    char dir[64];
    snprintf(dir, sizeof dir, "%s", "/tmp/tg_npy_dir_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    t = NOT_NULL;
    tg_status st = tgcli_npy_load(dir, &t);
    rmdir(dir);
    cr_assert_eq(st, TG_ERR_IO);
    cr_assert_null(t);
    tgt_assert_error(TG_ERR_IO, dir, strerror(EISDIR), NULL);
    tg_clear_error();
    cr_assert_eq(tgcli_npy_load(NULL, &t), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "path", NULL);
    cr_assert_eq(tgcli_npy_load("x.npy", NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "out", NULL);
}

/* Loads bytes written by a child process into a FIFO: the reader cannot know
 * the size in advance, so truncation and trailing bytes are found by reading. */
static tg_status load_fifo(const void *b, size_t n, tg_tensor **out, char *path_out) {
    char dir[64];
    snprintf(dir, sizeof dir, "%s", "/tmp/tg_npy_fifo_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path_out, 96, "%s/pipe.npy", dir);
    cr_assert_eq(mkfifo(path_out, 0600), 0, "mkfifo: %s", strerror(errno));
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        int fd = open(path_out, O_WRONLY);
        if (fd >= 0 && n > 0 && write(fd, b, n) < 0)
            _exit(1);
        _exit(0);
    }
    tg_status st = tgcli_npy_load(path_out, out);
    int status = 0;
    waitpid(pid, &status, 0);
    unlink(path_out);
    rmdir(dir);
    return st;
}

Test(npy, read_from_a_pipe) {
    char path[96];
    tg_tensor *t = NULL;
    cr_assert_eq(load_fifo(NP_F4_2x3, LEN(NP_F4_2x3), &t, path), TG_OK, "%s", tg_last_error());
    tgt_assert_values(t, (const double[]){0, 1, 2, 3, 4, 5}, 6, 0);
    tg_release(t);

    t = NOT_NULL;
    cr_assert_eq(load_fifo(NP_F4_2x3, LEN(NP_F4_2x3) - 3, &t, path), TG_ERR_IO);
    cr_assert_null(t);
    tgt_assert_error(TG_ERR_IO, path, "data is truncated", "needs 24 bytes, the file has 21",
                     NULL);
    unsigned char buf[512];
    memcpy(buf, NP_I4, LEN(NP_I4));
    memcpy(buf + LEN(NP_I4), "junk", 4);
    cr_assert_eq(load_fifo(buf, LEN(NP_I4) + 4, &t, path), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, path, "unexpected bytes after the data", NULL);
    cr_assert_eq(load_fifo(NP_F4_2x3, 60, &t, path), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, path, "header length 118 runs past the end of the file", NULL);
}

/* ---- write errors ------------------------------------------------------------------------------ */

Test(npy, save_errors) {
    tg_tensor *a = tg_from_data(TG_F32, TG_SHAPE(2, 3), F6);
    cr_assert_eq(tgcli_npy_save("/nonexistent-dir-tg/out.npy", a), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, "/nonexistent-dir-tg/out.npy: cannot create: ",
                     strerror(ENOENT), NULL);
    cr_assert_eq(tgcli_npy_save("/tmp", a), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, "/tmp: cannot create: ", strerror(EISDIR), NULL);
    struct stat sb;
    if (stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode)) {
        cr_assert_eq(tgcli_npy_save("/dev/full", a), TG_ERR_IO);
        tgt_assert_error(TG_ERR_IO, "/dev/full: write failed: ", strerror(ENOSPC), NULL);
        cr_assert_eq(stat("/dev/full", &sb), 0, "the device was removed");
    }
    tg_clear_error();
    cr_assert_eq(tgcli_npy_save(NULL, a), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "path", NULL);
    tg_clear_error();
    cr_assert_eq(tgcli_npy_save("/tmp/x.npy", NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "'t' is NULL", NULL);
    /* NULL propagation: the first error is kept */
    tg_clear_error();
    tg_tensor *bad = tg_empty(TG_F32, TG_SHAPE(-1));
    cr_assert_null(bad);
    tg_status first = tg_last_status();
    cr_assert_eq(tgcli_npy_save("/tmp/x.npy", bad), TG_ERR_NULL);
    cr_assert_eq(tg_last_status(), first);
    tg_clear_error();
    tg_release(a);
}

/* ---- allocation failures ------------------------------------------------------------------------- */

/* Fails the k-th allocation (and, if persistent, all later ones) for k = 1, 2,
 * ... until a load succeeds with no failure injected: each attempt returns
 * TG_OK or TG_ERR_NOMEM and leaves nothing alive. */
static void fault_sweep(const void *b, size_t n, bool persistent, bool in_scope) {
    char path[64];
    tmp_new(path);
    write_file(path, b, n);
    bool done = false;
    for (uint64_t k = 1; k < 200 && !done; k++) {
        tg_clear_error();
        int s = in_scope ? tg_scope_begin() : 0;
        cr_assert(s >= 0);
        tg_fault_inject(k, persistent);
        tg_tensor *t = NOT_NULL;
        tg_status st = tgcli_npy_load(path, &t);
        uint64_t fired = tg_fault_inject(0, false);
        if (fired) {
            cr_assert_eq(st, TG_ERR_NOMEM, "k=%llu: %s (%s)", (unsigned long long)k,
                         tg_status_name(st), tg_last_error());
            cr_assert_null(t);
        } else {
            cr_assert_eq(st, TG_OK, "k=%llu: %s", (unsigned long long)k, tg_last_error());
            cr_assert_not_null(t);
            done = true;
            if (!in_scope)
                tg_release(t);
        }
        if (in_scope)
            cr_assert_eq(tg_scope_end(s), TG_OK);
        tgt_assert_nothing_live();
    }
    unlink(path);
    cr_assert(done, "load never succeeded");
}

Test(npy, allocation_failures) {
    for (int p = 0; p < 2; p++)
        for (int sc = 0; sc < 2; sc++) {
            fault_sweep(NP_F4_2x3, LEN(NP_F4_2x3), p, sc);
            fault_sweep(NP_I4, LEN(NP_I4), p, sc);
            fault_sweep(NP_I4_FORTRAN_3D, LEN(NP_I4_FORTRAN_3D), p, sc);
            fault_sweep(NP_F8_SCALAR, LEN(NP_F8_SCALAR), p, sc);
        }
}
