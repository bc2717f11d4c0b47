/* tape/defs.h - the limits and forward declarations every tape/ header
 * shares. Internal (not installed); tape/core.h gathers every tape/ header
 * for the layers above. */
#ifndef TG_TAPE_DEFS_H
#define TG_TAPE_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tapegrad/status.h"
#include "tapegrad/tensor.h"

#define TG__MAX_IO 16            /* inputs/outputs of one node */
#define TG__VERSION_HISTORY 8    /* in-place events remembered per storage */
#define TG__NAME_LEN 48

#if defined(__GNUC__)
#define TG__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TG__PRINTF(a, b)
#endif

typedef struct tg__storage tg__storage;
typedef struct tg__node tg__node;
typedef struct tg__leafref tg__leafref;

#endif
