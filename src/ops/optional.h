/* optional.h - the Optional variant (tensor_map.c) for other families: IteratorGetNextAsOptional
 * (dataset.c) makes one. */
#ifndef SM_OPS_OPTIONAL_H
#define SM_OPS_OPTIONAL_H
#include "base/variant.h"
#include "savedmodel/status.h"

/* A new Optional holding references to c[0..n) (n < 0: none), refs 1. */
sm_status *sm__optional_new(sm_tensor *const *c, int n, sm_variant **out);

#endif
