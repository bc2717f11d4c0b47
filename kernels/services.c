/* kernels/services.c - what a kernel may ask for (kernels/kernel.h): its
 * failures' reasons and workspace go to the services the core installed. */
#include <stdarg.h>
#include <stdio.h>

#include "kernel.h"

static const tg__kernel_services *g_services;

void tg__kernel_services_install(const tg__kernel_services *s) { g_services = s; }

tg_status tg__k_fail(tg_status st, const char *fmt, ...) {
    char reason[4096]; /* the core keeps messages up to this, cutting them with "..." */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return g_services ? g_services->fail(st, reason) : st;
}

void *tg__k_workspace(tg_device dev, size_t nbytes) {
    return g_services ? g_services->workspace(dev, nbytes) : NULL;
}

void tg__k_workspace_free(tg_device dev, void *p, size_t nbytes) {
    if (g_services && p) g_services->workspace_free(dev, p, nbytes);
}
