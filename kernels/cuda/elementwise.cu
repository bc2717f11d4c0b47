/* kernels/cuda/elementwise.cu - elementwise kernels on the GPU: unary,
 * binary, ternary (gradient helpers), f32 and f64; where (any dtype); the
 * exact ops (tests with bool results, i64 arithmetic); broadcast and
 * strided operands, strided output (in-place ops write through it). One
 * thread per element in a grid-stride loop; the formulas are those of
 * kernels/kernel.h, computed in the output's dtype as on the CPU. */
#include "kcommon.cuh"

/* The formulas of kernels/kernel.h, one case per op code. */
#define TGK_UN_CASE(NAME, FWD, ...) case TG__UN_##NAME: return (FWD);
template <class T> __device__ __forceinline__ T un_apply(int op, T x, T p0, T p1) {
    switch (op) { TG__UNARY_OPS(TGK_UN_CASE) }
    return x;
}

#define TGK_UG_CASE(NAME, FWD, BWD, SAVES) case TG__UN_##NAME: return (BWD);
template <class T> __device__ __forceinline__ T ug_apply(int op, T g, T s, T p0, T p1) {
    (void)s;
    switch (op) { TG__UNARY_OPS(TGK_UG_CASE) }
    return g;
}

#define TGK_BIN_CASE(NAME, FWD) case TG__BIN_##NAME: return (FWD);
template <class T> __device__ __forceinline__ T bin_apply(int op, T x, T y, T p0, T p1) {
    (void)p0, (void)p1;
    switch (op) { TG__BINARY_OPS(TGK_BIN_CASE) }
    return x;
}

#define TGK_TER_CASE(NAME, F) case TG__TER_##NAME: return (F);
template <class T> __device__ __forceinline__ T ter_apply(int op, T g, T x, T y) {
    switch (op) { TG__TERNARY_OPS(TGK_TER_CASE) }
    return g;
}

template <class T>
__global__ void k_unary(tgk_iter it, T *o, const T *x, int op, T p0, T p1) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[2];
        tgk_offsets<2>(it, i, off);
        o[off[0]] = un_apply<T>(op, x[off[1]], p0, p1);
    }
}

template <class T>
__global__ void k_binary(tgk_iter it, T *o, const T *a, const T *b, int op, T p0, T p1) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[3];
        tgk_offsets<3>(it, i, off);
        o[off[0]] = bin_apply<T>(op, a[off[1]], b[off[2]], p0, p1);
    }
}

template <class T>
__global__ void k_unary_grad(tgk_iter it, T *o, const T *g, const T *sv, int op, T p0, T p1) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[3];
        tgk_offsets<3>(it, i, off);
        o[off[0]] = ug_apply<T>(op, g[off[1]], sv ? sv[off[2]] : (T)0, p0, p1);
    }
}

template <class T>
__global__ void k_ternary(tgk_iter it, T *o, const T *g, const T *a, const T *b, int op) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[4];
        tgk_offsets<4>(it, i, off);
        o[off[0]] = ter_apply<T>(op, g[off[1]], a[off[2]], b[off[3]]);
    }
}

/* a or b NULL: 0. c of dtype cdt; NaN counts as true (NaN != 0). */
template <class T>
__global__ void k_where(tgk_iter it, T *o, const void *c, int cdt, const T *a, const T *b) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[4];
        tgk_offsets<4>(it, i, off);
        bool take = tgk_read(c, cdt, off[1]) != 0.0;
        T v = take ? (a ? a[off[2]] : (T)0) : (b ? b[off[3]] : (T)0);
        o[off[0]] = v;
    }
}

extern "C" tg_status tg__cuda_unary(int op, const tg__arr *out, const tg__arr *x,
                                    double p0, double p1) {
    const tg__arr *ops[2] = {out, x};
    tgk_iter it = tgk_iter_make(2, ops);
    if (it.n == 0) return TG_OK;
    unsigned g = tgk_grid(it.n, TGK_BLOCK);
    if (out->dtype == TG_F32) {
        auto k = k_unary<float>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, it, (float *)out->data, (const float *)x->data, op,
                          (float)p0, (float)p1);
    }
    auto k = k_unary<double>;
    return TGK_LAUNCH(k, g, TGK_BLOCK, it, (double *)out->data, (const double *)x->data, op, p0, p1);
}

extern "C" tg_status tg__cuda_binary(int op, const tg__arr *out, const tg__arr *a,
                                     const tg__arr *b, double p0, double p1) {
    const tg__arr *ops[3] = {out, a, b};
    tgk_iter it = tgk_iter_make(3, ops);
    if (it.n == 0) return TG_OK;
    unsigned g = tgk_grid(it.n, TGK_BLOCK);
    if (out->dtype == TG_F32) {
        auto k = k_binary<float>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, it, (float *)out->data, (const float *)a->data,
                          (const float *)b->data, op, (float)p0, (float)p1);
    }
    auto k = k_binary<double>;
    return TGK_LAUNCH(k, g, TGK_BLOCK, it, (double *)out->data, (const double *)a->data,
                      (const double *)b->data, op, p0, p1);
}

extern "C" tg_status tg__cuda_unary_grad(int op, const tg__arr *out, const tg__arr *g,
                                         const tg__arr *sv, double p0, double p1) {
    const tg__arr *ops[3] = {out, g, sv};
    tgk_iter it = tgk_iter_make(3, ops);
    if (it.n == 0) return TG_OK;
    unsigned gr = tgk_grid(it.n, TGK_BLOCK);
    if (out->dtype == TG_F32) {
        auto k = k_unary_grad<float>;
        return TGK_LAUNCH(k, gr, TGK_BLOCK, it, (float *)out->data, (const float *)g->data,
                          (const float *)sv->data, op, (float)p0, (float)p1);
    }
    auto k = k_unary_grad<double>;
    return TGK_LAUNCH(k, gr, TGK_BLOCK, it, (double *)out->data, (const double *)g->data,
                      (const double *)sv->data, op, p0, p1);
}

extern "C" tg_status tg__cuda_ternary(int op, const tg__arr *out, const tg__arr *g,
                                      const tg__arr *a, const tg__arr *b) {
    const tg__arr *ops[4] = {out, g, a, b};
    tgk_iter it = tgk_iter_make(4, ops);
    if (it.n == 0) return TG_OK;
    unsigned gr = tgk_grid(it.n, TGK_BLOCK);
    if (out->dtype == TG_F32) {
        auto k = k_ternary<float>;
        return TGK_LAUNCH(k, gr, TGK_BLOCK, it, (float *)out->data, (const float *)g->data,
                          (const float *)a->data, (const float *)b->data, op);
    }
    auto k = k_ternary<double>;
    return TGK_LAUNCH(k, gr, TGK_BLOCK, it, (double *)out->data, (const double *)g->data,
                      (const double *)a->data, (const double *)b->data, op);
}

template <class T>
static tg_status where_as(tgk_iter it, const tg__arr *out, const tg__arr *c, const tg__arr *a,
                         const tg__arr *b) {
    auto k = k_where<T>;
    return TGK_LAUNCH(k, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it, (T *)out->data,
                      (const void *)c->data, c->dtype, (const T *)(a ? a->data : NULL),
                      (const T *)(b ? b->data : NULL));
}

extern "C" tg_status tg__cuda_where(const tg__arr *out, const tg__arr *c,
                                    const tg__arr *a, const tg__arr *b) {
    const tg__arr *ops[4] = {out, c, a, b};
    tgk_iter it = tgk_iter_make(4, ops);
    if (it.n == 0) return TG_OK;
    switch (out->dtype) {
    case TG_F32: return where_as<float>(it, out, c, a, b);
    case TG_F64: return where_as<double>(it, out, c, a, b);
    case TG_I64: return where_as<int64_t>(it, out, c, a, b);
    default: return where_as<uint8_t>(it, out, c, a, b);
    }
}

/* ---- the exact ops: tests (bool results) and i64 arithmetic ---------------------------- */

#define TGK_TEST_CASE_FL(NAME, FL, IN) case TG__TEST_##NAME: return (FL);
#define TGK_TEST_CASE_IN(NAME, FL, IN) case TG__TEST_##NAME: return (IN);
template <class T> __device__ __forceinline__ bool test_apply(int op, T x, T y) {
    switch (op) { TG__TEST_OPS(TGK_TEST_CASE_FL) }
    return false;
}
template <> __device__ __forceinline__ bool test_apply<int64_t>(int op, int64_t x, int64_t y) {
    switch (op) { TG__TEST_OPS(TGK_TEST_CASE_IN) }
    return false;
}
template <> __device__ __forceinline__ bool test_apply<uint8_t>(int op, uint8_t x, uint8_t y) {
    switch (op) { TG__TEST_OPS(TGK_TEST_CASE_IN) }
    return false;
}

template <class T>
__global__ void k_test(tgk_iter it, uint8_t *o, const T *a, const T *b, int op) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[3];
        tgk_offsets<3>(it, i, off);
        o[off[0]] = test_apply<T>(op, a[off[1]], b[off[2]]) ? 1 : 0;
    }
}

template <class T>
static tg_status test_as(tgk_iter it, int op, const tg__arr *out, const tg__arr *a,
                        const tg__arr *b) {
    auto k = k_test<T>;
    return TGK_LAUNCH(k, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it, (uint8_t *)out->data,
                      (const T *)a->data, (const T *)b->data, op);
}

extern "C" tg_status tg__cuda_test(int op, const tg__arr *out, const tg__arr *a,
                                   const tg__arr *b) {
    const tg__arr *ops[3] = {out, a, b};
    tgk_iter it = tgk_iter_make(3, ops);
    if (it.n == 0) return TG_OK;
    switch (a->dtype) {
    case TG_F32: return test_as<float>(it, op, out, a, b);
    case TG_F64: return test_as<double>(it, op, out, a, b);
    case TG_I64: return test_as<int64_t>(it, op, out, a, b);
    default: return test_as<uint8_t>(it, op, out, a, b);
    }
}

#define TGK_INT_CASE(NAME, F) case TG__INT_##NAME: return (F);
__device__ __forceinline__ int64_t int_apply(int op, int64_t x, int64_t y, int64_t p0,
                                             int64_t p1) {
    (void)p0, (void)p1;
    switch (op) { TG__INT_OPS(TGK_INT_CASE) }
    return x;
}

__global__ void k_int_op(tgk_iter it, int64_t *o, const int64_t *a, const int64_t *b, int op,
                         int64_t p0, int64_t p1) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[3];
        tgk_offsets<3>(it, i, off);
        o[off[0]] = int_apply(op, a[off[1]], b[off[2]], p0, p1);
    }
}

extern "C" tg_status tg__cuda_int_op(int op, const tg__arr *out, const tg__arr *a,
                                     const tg__arr *b, int64_t p0, int64_t p1) {
    const tg__arr *ops[3] = {out, a, b};
    tgk_iter it = tgk_iter_make(3, ops);
    if (it.n == 0) return TG_OK;
    return TGK_LAUNCH(k_int_op, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it, (int64_t *)out->data,
                      (const int64_t *)a->data, (const int64_t *)b->data, op, p0, p1);
}
