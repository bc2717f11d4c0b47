/* tape/core.h - every tape/ header at once, for the layers above the tape
 * (ops/, leakcheck/): errors, memory, storages, tensors, shapes, views,
 * graph nodes, dispatch to the kernels, devices, the memory timeline's hooks,
 * the live-object registry and the locks. The tape's own files include only the
 * headers they use. Not installed. Internal non-static names use the tg__
 * prefix. ops/ops_internal.h adds what only the ops share.
 */
#ifndef TG_CORE_H
#define TG_CORE_H

#include "defs.h"
#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "device.h"
#include "timeline_hooks.h"
#include "live_objects.h"
#include "sync.h"

#endif
