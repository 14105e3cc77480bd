/* ragged_internal.h - what the ragged kernels share (ragged_variant.c defines them; cross.c's
 * RaggedCross uses them): TF's RaggedTensorVerifySplits and reading an int32/int64 splits element. */
#ifndef SM_OPS_RAGGED_INTERNAL_H
#define SM_OPS_RAGGED_INTERNAL_H
#include <stdint.h>

#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

/* Element i of an int32 or int64 splits tensor. */
int64_t sm__ragged_split_at(const sm_tensor *t, int64_t i);
/* TF's RaggedTensorVerifySplits(splits, true, nvalues): rank 1, int32/int64, not empty, starts at 0,
 * non-decreasing, ends at nvalues; TF's messages. */
sm_status *sm__ragged_verify_splits(const sm_tensor *splits, int64_t nvalues);

#endif
