/* kernels/cpu/backend.c - the CPU backend's table (kernels/kernel.h). Host
 * memory is managed by the core (tape/alloc.c), so the runtime entries that
 * move memory are NULL. */
#include "cpu.h"

static int cpu_count(void) { return 1; }
static const char *cpu_reason(void) { return ""; }
static tg_status cpu_sync(void) { return TG_OK; }

const tg__backend tg__cpu_backend = {
    .name = "cpu",
    .compiled_in = true,
    .device_count = cpu_count,
    .unavailable_reason = cpu_reason,
    .synchronize = cpu_sync,
    .unary = tg__cpu_unary,
    .unary_grad = tg__cpu_unary_grad,
    .binary = tg__cpu_binary,
    .ternary = tg__cpu_ternary,
    .where = tg__cpu_where,
    .test = tg__cpu_test,
    .int_op = tg__cpu_int_op,
    .copy = tg__cpu_copy,
    .accumulate = tg__cpu_accumulate,
    .fill = tg__cpu_fill,
    .sum_reduce = tg__cpu_sum_reduce,
    .reduce_dim = tg__cpu_reduce_dim,
    .scan = tg__cpu_scan,
    .softmax_forward = tg__cpu_softmax_forward,
    .softmax_backward = tg__cpu_softmax_backward,
    .gather_find_bad = tg__cpu_gather_find_bad,
    .gather_forward = tg__cpu_gather_forward,
    .gather_backward = tg__cpu_gather_backward,
    .argsort = tg__cpu_argsort,
    .matmul = tg__cpu_matmul,
    .lpe_forward = tg__cpu_lpe_forward,
    .lpe_check_rows = tg__cpu_lpe_check_rows,
    .lpe_backward = tg__cpu_lpe_backward,
};
