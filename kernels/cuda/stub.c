/* kernels/cuda/stub.c - the CUDA table of a build without the CUDA backend:
 * no device, and every entry answers TG_ERR_DEVICE (the ops refuse CUDA
 * tensors before reaching a kernel: these answers are the last line). */
#include "../kernel.h"

#define NO_BACKEND "this build of tapegrad has no CUDA backend"

static tg_status none(void) { return tg__set_error(TG_ERR_DEVICE, NO_BACKEND); }

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
static tg_status unary(int op, const tg__arr *o, const tg__arr *x, double p0, double p1) {
    (void)op, (void)o, (void)x, (void)p0, (void)p1;
    return none();
}
static tg_status binary(int op, const tg__arr *o, const tg__arr *a, const tg__arr *b, double p0,
                        double p1) {
    (void)op, (void)o, (void)a, (void)b, (void)p0, (void)p1;
    return none();
}
static tg_status ternary(int op, const tg__arr *o, const tg__arr *g, const tg__arr *a,
                         const tg__arr *b) {
    (void)op, (void)o, (void)g, (void)a, (void)b;
    return none();
}
static tg_status where(const tg__arr *o, const tg__arr *c, const tg__arr *a, const tg__arr *b) {
    (void)o, (void)c, (void)a, (void)b;
    return none();
}
static tg_status test(int op, const tg__arr *o, const tg__arr *a, const tg__arr *b) {
    (void)op, (void)o, (void)a, (void)b;
    return none();
}
static tg_status int_op(int op, const tg__arr *o, const tg__arr *a, const tg__arr *b, int64_t p0,
                        int64_t p1) {
    (void)op, (void)o, (void)a, (void)b, (void)p0, (void)p1;
    return none();
}
static tg_status red_dim(int op, const tg__arr *o, const tg__arr *i, const tg__arr *x, int d) {
    (void)op, (void)o, (void)i, (void)x, (void)d;
    return none();
}
static tg_status scan(int op, const tg__arr *o, const tg__arr *x, const tg__arr *g, int d,
                      double gamma) {
    (void)op, (void)o, (void)x, (void)g, (void)d, (void)gamma;
    return none();
}
static tg_status copy2(const tg__arr *o, const tg__arr *s) { (void)o, (void)s; return none(); }
static tg_status fill(const tg__arr *o, double v) { (void)o, (void)v; return none(); }
static tg_status sum_reduce(const tg__arr *o, const tg__arr *x, const bool *red, double sc) {
    (void)o, (void)x, (void)red, (void)sc;
    return none();
}
static tg_status sm_fwd(const tg__arr *x, const tg__arr *y, bool l) {
    (void)x, (void)y, (void)l;
    return none();
}
static tg_status sm_bwd(const tg__arr *y, const tg__arr *g, const tg__arr *dx, bool l) {
    (void)y, (void)g, (void)dx, (void)l;
    return none();
}
static tg_status g_bad(const tg__arr *i, int64_t V, int64_t *b) { (void)i, (void)V, (void)b; return none(); }
static tg_status g_fwd(const tg__arr *t, const tg__arr *i, void *o) { (void)t, (void)i, (void)o; return none(); }
static tg_status g_bwd(const tg__arr *g, const tg__arr *i, void *d, int64_t V) {
    (void)g, (void)i, (void)d, (void)V;
    return none();
}
static tg_status argsort(const tg__arr *i, const tg__arr *v, const tg__arr *x, int d, bool desc) {
    (void)i, (void)v, (void)x, (void)d, (void)desc;
    return none();
}
static tg_status mm(int dt, int nb, const int64_t *bs, const tg__mat *a, const tg__mat *b,
                    const tg__mat *c, bool r, bool acc) {
    (void)dt, (void)nb, (void)bs, (void)a, (void)b, (void)c, (void)r, (void)acc;
    return none();
}
static tg_status lpe_f(const tg__arr *z, const int64_t *y, int64_t ig, double it, int64_t ch,
                       void *lp, void *H, double *st, int ns, tg__lpe_bad *bad) {
    (void)z, (void)y, (void)ig, (void)it, (void)ch, (void)lp, (void)H, (void)st, (void)ns, (void)bad;
    return none();
}
static tg_status lpe_c(const tg__arr *z, const int64_t *y, int64_t ig, double it, tg__lpe_bad *b) {
    (void)z, (void)y, (void)ig, (void)it, (void)b;
    return none();
}
static tg_status lpe_b(const tg__arr *z, const int64_t *y, int64_t ig, double it, int64_t ch,
                       const double *st, int ns, const tg__arr *gl, const tg__arr *gh,
                       const tg__arr *gs, void *dz, int dzt) {
    (void)z, (void)y, (void)ig, (void)it, (void)ch, (void)st, (void)ns, (void)gl, (void)gh, (void)gs;
    (void)dz, (void)dzt;
    return none();
}

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
    .unary = unary,
    .unary_grad = binary,
    .binary = binary,
    .ternary = ternary,
    .where = where,
    .test = test,
    .int_op = int_op,
    .copy = copy2,
    .accumulate = copy2,
    .fill = fill,
    .sum_reduce = sum_reduce,
    .reduce_dim = red_dim,
    .scan = scan,
    .softmax_forward = sm_fwd,
    .softmax_backward = sm_bwd,
    .gather_find_bad = g_bad,
    .gather_forward = g_fwd,
    .gather_backward = g_bwd,
    .argsort = argsort,
    .matmul = mm,
    .lpe_forward = lpe_f,
    .lpe_check_rows = lpe_c,
    .lpe_backward = lpe_b,
};
