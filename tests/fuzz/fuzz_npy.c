/* tests/fuzz/fuzz_npy.c - libFuzzer harness for the .npy reader of the
 * `tapegrad` command (cli/npy.c, tgcli_npy_load).
 *
 * Each input is the whole file. The reader must never crash, and:
 *  - success <=> *out is a tensor, failure <=> *out is NULL with
 *    tg_last_status() equal to the returned status (TG_ERR_IO or
 *    TG_ERR_NOMEM) and a message that starts with the file's path;
 *  - a tensor it returns is contiguous, f32/f64/i64/bool/bf16, of at most 8 dims, and
 *    survives a round trip: written back with tgcli_npy_save and read again
 *    it has the same dtype, shape and bits;
 *  - with the 1st, 2nd and 3rd allocation made to fail, a load either
 *    succeeds the same way or fails with TG_ERR_NOMEM;
 *  - afterwards no tensor, storage or byte is alive.
 * A broken rule prints what was wrong and calls abort(). The input is written
 * to an in-memory file (memfd) read through its /proc/self/fd path; the round
 * trip writes a real file in a private temporary directory, since the writer
 * creates a temporary file beside its target and renames it into place. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npy.h"

/* libFuzzer entry points: setup once (an in-memory input file, a temporary
 * directory for the round trip), then one input (returns 0; a broken rule
 * aborts). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int g_in = -1;
static char g_in_path[64], g_dir[4096], g_out_path[4200];

static void remove_out(void) {
    unlink(g_out_path);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    setenv("OMP_NUM_THREADS", "1", 0);
    setenv("TAPEGRAD_CPU_CACHE_MB", "0", 0); /* freed blocks go back: ASan sees reuse */
    g_in = memfd_create("tg_fuzz_npy_in", 0);
    if (g_in < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(g_in_path, sizeof g_in_path, "/proc/self/fd/%d", g_in);
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tg_fuzz_npy.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(g_out_path, sizeof g_out_path, "%s/out.npy", g_dir);
    atexit(remove_out);
    return 0;
}

#define FAIL(...)                                                                            \
    do {                                                                                     \
        fprintf(stderr, "fuzz_npy: " __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                               \
        abort();                                                                             \
    } while (0)

static int g_sentinel;

/* Loads path; checks the failure contract; returns the tensor or NULL. */
static tg_tensor *load(const char *path, tg_status *st_out) {
    tg_tensor *t = (tg_tensor *)(void *)&g_sentinel;
    tg_clear_error();
    tg_status st = tgcli_npy_load(path, &t);
    *st_out = st;
    if (st == TG_OK) {
        if (!t || t == (tg_tensor *)(void *)&g_sentinel) FAIL("TG_OK without a tensor");
        if (tg_last_status() != TG_OK) FAIL("TG_OK but the thread's status is %s",
                                            tg_status_name(tg_last_status()));
        return t;
    }
    if (t) FAIL("failed with %s but *out is %p", tg_status_name(st), (void *)t);
    if (tg_last_status() != st) FAIL("returned %s, last status %s", tg_status_name(st),
                                     tg_status_name(tg_last_status()));
    if (st != TG_ERR_IO && st != TG_ERR_NOMEM) FAIL("unexpected status %s: %s",
                                                     tg_status_name(st), tg_last_error());
    if (st == TG_ERR_IO && strncmp(tg_last_error(), path, strlen(path)) != 0)
        FAIL("the message does not start with the path: %s", tg_last_error());
    return NULL;
}

static void put_file(int fd, const uint8_t *data, size_t size) {
    if (ftruncate(fd, 0) != 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t k = pwrite(fd, data + off, size - off, (off_t)off);
        if (k <= 0) abort();
        off += (size_t)k;
    }
}

static void same_tensor(const tg_tensor *a, const tg_tensor *b) {
    if (tg_get_dtype(a) != tg_get_dtype(b) || tg_ndim(a) != tg_ndim(b) ||
        memcmp(tg_shape(a), tg_shape(b), (size_t)tg_ndim(a) * sizeof(int64_t)) != 0)
        FAIL("round trip changed the dtype or shape");
    int64_t n = tg_numel(a);
    size_t bytes = (size_t)n * tg_dtype_size(tg_get_dtype(a));
    if (bytes && memcmp(tg_data((tg_tensor *)a), tg_data((tg_tensor *)b), bytes) != 0)
        FAIL("round trip changed the data");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tg_live_counts base = tg_live();
    put_file(g_in, data, size);
    tg_status st;
    tg_tensor *t = load(g_in_path, &st);
    if (t) {
        tg_dtype dt = tg_get_dtype(t);
        if (dt != TG_F32 && dt != TG_F64 && dt != TG_I64 && dt != TG_BOOL && dt != TG_BF16)
            FAIL("dtype %d", (int)dt);
        if (dt == TG_BOOL) { /* every byte 0 or 1, whatever the file held */
            const uint8_t *b = tg_data(t);
            for (int64_t i = 0; i < tg_numel(t); i++)
                if (b[i] > 1) FAIL("bool element %lld is %d", (long long)i, b[i]);
        }
        if (!tg_is_contiguous(t)) FAIL("a loaded tensor is not contiguous");
        if (tg_ndim(t) < 0 || tg_ndim(t) > TG_MAX_DIMS) FAIL("ndim %d", tg_ndim(t));
        tg_clear_error();
        tg_status ws = tgcli_npy_save(g_out_path, t);
        if (ws != TG_OK) FAIL("saving a loaded tensor failed: %s", tg_last_error());
        tg_status st2;
        tg_tensor *u = load(g_out_path, &st2);
        if (!u) FAIL("reading back a saved tensor failed: %s", tg_last_error());
        same_tensor(t, u);
        tg_release(u);
    }
    /* allocation failures: the 1st, 2nd, 3rd allocation of a load */
    for (uint64_t n = 1; n <= 3; n++) {
        tg_fault_inject(n, false);
        tg_status sf;
        tg_tensor *f = load(g_in_path, &sf);
        uint64_t fired = tg_fault_inject(0, false);
        if (!fired) {
            if (f) tg_release(f);
            break;
        }
        if (f) {
            if (!t) FAIL("a load with an injected failure succeeded where a plain one failed");
            same_tensor(t, f);
            tg_release(f);
        } else if (sf != TG_ERR_NOMEM && !(sf == st && !t)) {
            FAIL("an injected allocation failure gave %s: %s", tg_status_name(sf),
                 tg_last_error());
        }
    }
    tg_release(t);
    tg_clear_error();
    tg_live_counts now = tg_live();
    if (now.tensors != base.tensors || now.storages != base.storages || now.nodes != base.nodes)
        FAIL("still alive after the input: %lld tensors, %lld storages",
             (long long)(now.tensors - base.tensors), (long long)(now.storages - base.storages));
    return 0;
}
