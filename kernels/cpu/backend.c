/* kernels/cpu/backend.c - the CPU backend's table (kernels/kernel.h). Host
 * memory is managed by the core (tape/alloc.c), so the runtime entries that
 * move memory are NULL. */
#include "cpu.h"

static int cpu_count(void) { return 1; }
static const char *cpu_reason(void) { return ""; }
static tg_status cpu_sync(void) { return TG_OK; }

/* every kernel entry `name` is tg__cpu_name (kernels/cpu/cpu.h) */
#define CPU_KERNEL(name, params) .name = tg__cpu_##name,

const tg__backend tg__cpu_backend = {
    .name = "cpu",
    .compiled_in = true,
    .device_count = cpu_count,
    .unavailable_reason = cpu_reason,
    .synchronize = cpu_sync,
    .kernel_variant = tg__cpu_lpe_variant,
    .stream_stores = tg__cpu_lpe_streams,
    TG__KERNELS(CPU_KERNEL)
};
