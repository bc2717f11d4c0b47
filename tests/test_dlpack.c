/* tests/test_dlpack.c - tg_to_dlpack / tg_from_dlpack: the struct's fields
 * for every dtype (DLPack's codes and bits), strided views, a round trip
 * that shares memory, the producer's deleter called exactly once when the
 * last tensor goes and never when the import fails (each refusal with its
 * status), and the device's round trip on the (emulated) CUDA device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

TestSuite(dlpack, .init = tgt_setup, .fini = tgt_teardown);

/* A producer's managed tensor over a static buffer, counting its deleter. */
typedef struct producer {
    tg_dl_managed_tensor m;
    int64_t shape[2], strides[2];
    int deleted;
} producer;

static void producer_delete(tg_dl_managed_tensor *self) { ((producer *)self->manager_ctx)->deleted++; }

static void producer_init(producer *p, void *data, tg_dl_dtype dt, int ndim) {
    memset(p, 0, sizeof *p);
    p->shape[0] = 2;
    p->shape[1] = 3;
    p->m.dl_tensor.data = data;
    p->m.dl_tensor.device.device_type = TG_DL_CPU;
    p->m.dl_tensor.ndim = ndim;
    p->m.dl_tensor.dtype = dt;
    p->m.dl_tensor.shape = p->shape;
    p->m.manager_ctx = p;
    p->m.deleter = producer_delete;
}

Test(dlpack, export_describes_the_tensor_and_holds_it) {
    const tg_dtype dts[5] = {TG_F32, TG_F64, TG_I64, TG_BOOL, TG_BF16};
    const tg_dl_dtype want[5] = {{TG_DL_FLOAT, 32, 1}, {TG_DL_FLOAT, 64, 1}, {TG_DL_INT, 64, 1},
                                 {TG_DL_BOOL, 8, 1}, {TG_DL_BFLOAT, 16, 1}};
    for (int k = 0; k < 5; k++) {
        tg_tensor *base = tg_zeros(dts[k], TG_SHAPE(3, 4));
        tg_tensor *t = tg_transpose(base, 0, 1); /* (4, 3), strides (1, 4) */
        tg_dl_managed_tensor *m = tg_to_dlpack(t);
        cr_assert_not_null(m, "%s", tg_last_error());
        const tg_dl_tensor *x = &m->dl_tensor;
        cr_assert_eq(x->data, tg_data(t));
        cr_assert_eq(x->byte_offset, 0);
        cr_assert_eq(x->device.device_type, TG_DL_CPU);
        cr_assert_eq(x->device.device_id, 0);
        cr_assert_eq(x->ndim, 2);
        cr_assert_eq(x->shape[0], 4);
        cr_assert_eq(x->shape[1], 3);
        cr_assert_eq(x->strides[0], 1);
        cr_assert_eq(x->strides[1], 4);
        cr_assert(x->dtype.code == want[k].code && x->dtype.bits == want[k].bits &&
                      x->dtype.lanes == 1,
                  "%s: code %u bits %u", tg_dtype_name(dts[k]), x->dtype.code, x->dtype.bits);
        tg_release(t);
        tg_release(base);
        m->deleter(m); /* the consumer is done: the last reference goes (no leak: teardown) */
    }
    cr_assert_null(tg_to_dlpack(NULL));
    tgt_assert_error(TG_ERR_NULL, "tg_to_dlpack", NULL);
    tg_clear_error();
}

Test(dlpack, round_trip_shares_memory) {
    tg_tensor *t = tg_arange(TG_F64, 0.0, 6.0, 1.0);
    tg_dl_managed_tensor *m = tg_to_dlpack(t);
    tg_tensor *u = tg_from_dlpack(m);
    cr_assert_not_null(u, "%s", tg_last_error());
    cr_assert_eq(tg_data(u), tg_data(t), "no copy");
    cr_assert_eq(tg_fill_(u, 2.5), TG_OK);
    cr_assert_eq(tgt_at(t, 4), 2.5, "a write on one side is seen on the other");
    tg_release(t); /* the export's reference keeps the storage */
    cr_assert_eq(tgt_at(u, 0), 2.5);
    tg_release(u); /* the deleter runs: the export's reference goes; no leak (teardown) */
}

Test(dlpack, import_owns_the_producer_until_the_last_tensor) {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    producer p;
    producer_init(&p, buf, (tg_dl_dtype){TG_DL_FLOAT, 32, 1}, 2);
    p.m.dl_tensor.byte_offset = sizeof(float); /* from the second element */
    p.shape[1] = 2;                            /* (2, 2) with strides (3, 1) */
    p.strides[0] = 3;
    p.strides[1] = 1;
    p.m.dl_tensor.strides = p.strides;
    tg_tensor *t = tg_from_dlpack(&p.m);
    cr_assert_not_null(t, "%s", tg_last_error());
    const double want[4] = {2, 3, 5, 6};
    tg_tensor *c = tg_contiguous(t);
    for (int i = 0; i < 4; i++) cr_assert_eq(tgt_at(c, i), want[i], "[%d]", i);
    tg_tensor *v = tg_select(t, 0, 1);
    tg_release(t);
    tg_release(c);
    cr_assert_eq(p.deleted, 0, "a view still reads it");
    tg_release(v);
    cr_assert_eq(p.deleted, 1, "deleted exactly once");
    /* C order (NULL strides) and a 0-d tensor */
    int64_t i64 = 42;
    producer q;
    producer_init(&q, &i64, (tg_dl_dtype){TG_DL_INT, 64, 1}, 0);
    tg_tensor *s = tg_from_dlpack(&q.m);
    cr_assert_not_null(s, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(s), TG_I64);
    cr_assert_eq(tgt_at(s, 0), 42.0);
    tg_release(s);
    cr_assert_eq(q.deleted, 1);
}

Test(dlpack, refused_imports_leave_the_producer_alone) {
    float buf[6] = {0};
    struct {
        tg_dl_dtype dt;
        int32_t dev, id, ndim;
        tg_status st;
        const char *msg;
    } cases[] = {
        {{TG_DL_FLOAT, 16, 1}, TG_DL_CPU, 0, 2, TG_ERR_DTYPE, "code 2, 16 bits"},
        {{TG_DL_FLOAT, 32, 2}, TG_DL_CPU, 0, 2, TG_ERR_DTYPE, "2 lanes"},
        {{TG_DL_UINT, 8, 1}, TG_DL_CPU, 0, 2, TG_ERR_DTYPE, "code 1, 8 bits"},
        {{TG_DL_FLOAT, 32, 1}, 7, 0, 2, TG_ERR_DEVICE, "type 7"},
        {{TG_DL_FLOAT, 32, 1}, TG_DL_CUDA, 1, 2, TG_ERR_DEVICE, "id 1"},
        {{TG_DL_FLOAT, 32, 1}, TG_DL_CPU, 0, -1, TG_ERR_VALUE, "ndim -1"},
        {{TG_DL_FLOAT, 32, 1}, TG_DL_CPU, 0, TG_MAX_DIMS + 1, TG_ERR_VALUE, "ndim"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        producer p;
        producer_init(&p, buf, cases[k].dt, cases[k].ndim);
        p.m.dl_tensor.device.device_type = cases[k].dev;
        p.m.dl_tensor.device.device_id = cases[k].id;
        cr_assert_null(tg_from_dlpack(&p.m), "case %zu accepted", k);
        tgt_assert_error(cases[k].st, "tg_from_dlpack", cases[k].msg, NULL);
        tg_clear_error();
        cr_assert_eq(p.deleted, 0, "case %zu: the caller still owns it", k);
    }
    producer p;
    producer_init(&p, buf, (tg_dl_dtype){TG_DL_FLOAT, 32, 1}, 2);
    p.m.dl_tensor.shape = NULL;
    cr_assert_null(tg_from_dlpack(&p.m));
    tgt_assert_error(TG_ERR_NULL, "tg_from_dlpack", "shape", NULL);
    tg_clear_error();
    producer_init(&p, NULL, (tg_dl_dtype){TG_DL_FLOAT, 32, 1}, 2);
    cr_assert_null(tg_from_dlpack(&p.m));
    tgt_assert_error(TG_ERR_NULL, "tg_from_dlpack", "data", NULL);
    tg_clear_error();
    producer_init(&p, buf, (tg_dl_dtype){TG_DL_FLOAT, 32, 1}, 2);
    p.m.dl_tensor.byte_offset = 2; /* not on a float */
    cr_assert_null(tg_from_dlpack(&p.m));
    tgt_assert_error(TG_ERR_VALUE, "tg_from_dlpack", "aligned", NULL);
    tg_clear_error();
    cr_assert_eq(p.deleted, 0);
    cr_assert_null(tg_from_dlpack(NULL));
    tgt_assert_error(TG_ERR_NULL, "tg_from_dlpack", NULL);
    tg_clear_error();
}

Test(dlpack, device_round_trip) {
    TGT_NEED_CUDA();
    tg_tensor *h = tg_arange(TG_F32, 0.0, 8.0, 1.0);
    tg_tensor *d = tg_to_device(h, TG_CUDA);
    tg_dl_managed_tensor *m = tg_to_dlpack(d);
    cr_assert_not_null(m, "%s", tg_last_error());
    cr_assert_eq(m->dl_tensor.device.device_type, TG_DL_CUDA);
    tg_tensor *u = tg_from_dlpack(m);
    cr_assert_not_null(u, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(u), TG_CUDA);
    cr_assert_eq(tg_data(u), tg_data(d));
    cr_assert_eq(tg_scale_(u, 3.0), TG_OK);
    double v;
    cr_assert_eq(tg_get(d, (int64_t[]){7}, &v), TG_OK);
    cr_assert_eq(v, 21.0);
    tg_release(d);
    tg_release(u);
    tg_release(h);
}

/* An empty tensor over no memory (data NULL, as NumPy and PyTorch export one)
 * on dev: imported, computed with and differentiated, exported with data NULL
 * again; the producer's deleter runs once. */
static void empty_over_null_on(tg_device dev) {
    producer p;
    producer_init(&p, NULL, (tg_dl_dtype){TG_DL_FLOAT, 32, 1}, 2);
    p.shape[0] = 0;
    p.m.dl_tensor.device.device_type = dev == TG_CUDA ? TG_DL_CUDA : TG_DL_CPU;
    p.m.dl_tensor.byte_offset = 64; /* ignored with no data */
    tg_tensor *u = tg_from_dlpack(&p.m);
    cr_assert_not_null(u, "%s", tg_last_error());
    cr_assert(tg_get_device(u) == dev && tg_numel(u) == 0 && tg_shape(u)[1] == 3);
    cr_assert_null(tg_data(u), "the producer's NULL comes back");
    cr_assert_eq(tg_set_requires_grad(u, true), TG_OK);
    tg_tensor *e = tg_exp(u), *s = tg_sum(e);
    cr_assert_not_null(s, "%s", tg_last_error());
    cr_assert_eq(tgt_at(s, 0), 0.0);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(u);
    cr_assert(g && tg_get_device(g) == dev && tg_numel(g) == 0 && tg_ndim(g) == 2);
    tg_dl_managed_tensor *m = tg_to_dlpack(u);
    cr_assert_not_null(m, "%s", tg_last_error());
    cr_assert_null(m->dl_tensor.data, "exported as it came: no memory");
    cr_assert(m->dl_tensor.shape[0] == 0 && m->dl_tensor.shape[1] == 3);
    tg_tensor *v = tg_from_dlpack(m); /* and back: the export's own deleter */
    cr_assert_not_null(v, "%s", tg_last_error());
    cr_assert_null(tg_data(v));
    tg_release(g);
    tg_release(s);
    tg_release(e);
    tg_release(u);
    cr_assert_eq(p.deleted, 0, "the round trip still holds the producer's tensor");
    tg_release(v);
    cr_assert_eq(p.deleted, 1);
}

Test(dlpack, empty_over_no_memory_both_ways) { empty_over_null_on(TG_CPU); }

Test(dlpack, empty_over_a_null_device_pointer) {
    TGT_NEED_CUDA();
    empty_over_null_on(TG_CUDA);
}
