/* sparse_internal.h - what kernel files outside sparse_more.c share of its SparseTensor checks:
 * TensorFlow's sparse_utils::ValidateSparseTensor (ranks, counts, int64 indices and shape) and,
 * with `bounds`, its kUnordered index check, with TF's messages. Used by unique.c (SparseBincount). */
#ifndef SM_OPS_SPARSE_INTERNAL_H
#define SM_OPS_SPARSE_INTERNAL_H
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

sm_status *sm__sparse_validate(const sm_tensor *indices, const sm_tensor *values, const sm_tensor *dense_shape, int bounds);

/* sparse_ser.c: stores t as element i of the DT_VARIANT tensor out, in a "tensorflow::Tensor"
 * variant (the form SerializeSparse(out_type=variant) and DeserializeSparse use); the variant takes
 * over the caller's reference to t, also on failure. */
sm_status *sm__tensor_variant_put(sm_tensor *out, int64_t i, sm_tensor *t);

#endif
