/* tape/device.h - devices as the tape sees them (tape/device.c). Internal
 * (not installed); tape/core.h gathers every tape/ header for the layers
 * above. */
#ifndef TG_TAPE_DEVICE_H
#define TG_TAPE_DEVICE_H

#include "defs.h"

/* ---- devices (tape/device.c, ops/to_device.c) ------------------------------ */

/* Host-readable elements of t: for a CPU tensor its storage data (*owned =
 * NULL, *lo = 0); for a CUDA tensor a host copy (*owned, give it to free())
 * of the storage elements [*lo, hi] that t can reach, so element offset o of
 * t (t->offset + strides...) is at index o - *lo of the result (a tensor
 * without elements: its storage data, never NULL, not to be read). NULL
 * only on failure, with the error set (TG_ERR_NOMEM, TG_ERR_CUDA). `who`
 * names the caller. */
const void *tg__host_elems(const char *who, const tg_tensor *t, void **owned, int64_t *lo);
/* A contiguous copy of t on dev (category tg__op_category()), recording no
 * graph; t itself (new reference) if already on dev and contiguous. */
tg_tensor *tg__device_copy(tg_site s, const char *who, tg_tensor *t, tg_device dev);
/* TG_ERR_DEVICE naming `who` unless dev is usable (CPU, or CUDA with a device
 * and the backend built in). */
tg_status tg__check_device_usable(const char *who, tg_device dev);
/* "cpu", "cuda" or "an unknown device". */
const char *tg__device_name(tg_device dev);

#endif
