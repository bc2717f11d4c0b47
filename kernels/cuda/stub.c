/* kernels/cuda/stub.c - the CUDA table of a build without the CUDA backend:
 * no device, and every entry answers TG_ERR_DEVICE (the ops refuse CUDA
 * tensors before reaching a kernel: these answers are the last line). */
#include "../kernel.h"

#define NO_BACKEND "this build of tapegrad has no CUDA backend"

static tg_status none(void) { return tg__k_fail(TG_ERR_DEVICE, NO_BACKEND); }

static int count(void) { return 0; }
static const char *reason(void) { return NO_BACKEND; }
static tg_status alloc(void **p, size_t n) { (void)p, (void)n; return none(); }
static void release(void *p, size_t n) { (void)p, (void)n; }
static size_t cached(void) { return 0; }
static tg_status ok(void) { return TG_OK; }
static tg_status h2d(void *d, const void *s, size_t n) { (void)d, (void)s, (void)n; return none(); }
static tg_status d2h(void *d, const void *s, size_t n) { (void)d, (void)s, (void)n; return none(); }
static tg_status props(char *name, size_t len, double *bw, size_t *total, size_t *free_b,
                       int *sms) {
    (void)name, (void)len, (void)bw, (void)total, (void)free_b, (void)sms;
    return none();
}
/* Every kernel entry: TG_ERR_DEVICE, whatever its arguments (one function
 * per entry of TG__KERNELS, named stub_<entry>). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUB_KERNEL(name, params) static tg_status stub_##name params { return none(); }
TG__KERNELS(STUB_KERNEL)
#pragma GCC diagnostic pop
#define STUB_ENTRY(name, params) .name = stub_##name,

const tg__backend tg__cuda_backend = {
    .name = "cuda",
    .compiled_in = false,
    .device_count = count,
    .unavailable_reason = reason,
    .alloc = alloc,
    .free = release,
    .cached_bytes = cached,
    .empty_cache = ok,
    .copy_h2d = h2d,
    .copy_d2h = d2h,
    .get_props = props,
    .synchronize = ok,
    TG__KERNELS(STUB_ENTRY)
};
