/* array_internal.h - what the array kernel files (src/ops/array*.c) share: element moves that work
 * for every storable dtype (raw bytes, resource handles, strings), index-vector reading, TF's
 * dtype names for messages, and the kernel entry points that array.c lists in sm_kernels_array[].
 * Outside src/ops/array*.c only queue.c (shapes in messages), ragged.c (sm__array_copy), text.c (sm__array_dtype_str), scatter.c
 * Outside src/ops/array*.c only ragged.c and dataset.c (sm__array_copy) and the ragged variant / rebatch kernels (sm__array_rows), text.c (sm__array_dtype_str), scatter.c
 * and scatter_resource.c use it.
 * Semantics: shared/spec/ops.md §3.1, §3.9. */
#ifndef SM_OPS_ARRAY_INTERNAL_H
#define SM_OPS_ARRAY_INTERNAL_H
#include <stdint.h>

#include "runtime/kernel.h"

/* Bytes per element as stored in a tensor's raw buffer: resource handles are pointers; 0 for
 * DT_STRING (moved element by element) and for dtypes with no storage here. */
size_t sm__array_esize(int dtype);

/* TensorFlow's DataTypeString ("float", "int32", "string"), for messages that mirror TF's. */
const char *sm__array_dtype_str(int dtype);

/* A partial shape as TF writes one ("[2,?]", "<unknown>" for rank < 0) into buf. */
const char *sm__array_partial_shape_str(int rank, const int64_t *dims, char *buf, size_t cap);

/* "[2,3]" (TensorShape::DebugString) into buf. */
const char *sm__array_shape_str(const sm_tensor *t, char *buf, size_t cap);

/* Copy n elements src[soff..] -> dst[doff..]; same dtype. Strings are copied one by one (the only
 * way this fails is running out of memory); variants are shared (one more reference each). */
sm_status *sm__array_copy(sm_tensor *dst, int64_t doff, const sm_tensor *src, int64_t soff, int64_t n);
/* A new tensor: rows [a, b) of t along dim 0 (0 <= a <= b <= dim 0; *out NULL on failure). */
sm_status *sm__array_rows(const sm_tensor *t, int64_t a, int64_t b, sm_tensor **out);

/* The general strided move behind slicing, transposing, reversing, tiling and broadcasting: for
 * every index (i_0..i_{r-1}) < dims, dst[doff + sum i_k*dstride_k] = src[soff + sum i_k*sstride_k].
 * Strides are in elements and may be negative or zero (broadcast). Adjacent dimensions that are
 * contiguous in both are merged so the innermost run is one memcpy where possible. */
sm_status *sm__array_strided_copy(sm_tensor *dst, int64_t doff, const int64_t *dstride, const sm_tensor *src,
                                  int64_t soff, const int64_t *sstride, int rank, const int64_t *dims);

/* Row-major element strides of a shape. */
void sm__array_strides(int rank, const int64_t *dims, int64_t *strides);

/* An int32/int64 tensor's elements as int64 (at most `cap`; more is an error naming `what`). */
sm_status *sm__array_read_ints(const sm_tensor *t, const char *what, int64_t *out, int64_t cap, int64_t *n);
/* Element i of an integer tensor (int8..uint64) as int64. */
int64_t sm__array_int_at(const sm_tensor *t, int64_t i);
/* 1 for the integer dtypes sm__array_int_at reads. */
int sm__array_is_int(int dtype);

/* Pad's and MirrorPad(Grad)'s checks of a paddings input against x: an [R, 2] integer matrix. */
sm_status *sm__array_paddings_shape(const sm_tensor *x, const sm_tensor *pt);

/* Set every element of dst to the single element of `value` (a scalar or 1-element tensor of the
 * same dtype). */
sm_status *sm__array_fill(sm_tensor *dst, const sm_tensor *value);

/* GatherNd of params by indices as output 0 of ctx (GatherNd's kernel; ResourceGatherNd gives a
 * variable's value). */
sm_status *sm__array_gather_nd(sm_kctx *ctx, const sm_tensor *params, const sm_tensor *indices);

/* ScatterNd's core (scatter.c), for the variable forms (scatter_resource.c: ResourceScatterNd*,
 * ScatterNd* on refs, ScatterNdNonAliasingAdd): checks indices and updates against out's shape with
 * TF's messages, every index before any write, then combines updates into out in place. */
enum { SM_SCATTER_ADD, SM_SCATTER_UPDATE, SM_SCATTER_SUB, SM_SCATTER_MIN, SM_SCATTER_MAX };
sm_status *sm__scatter_nd_into(int op, const sm_tensor *ind, const sm_tensor *upd, sm_tensor *out);

/* SpaceToBatchND's move (BatchToSpaceND's with to_batch 0) over M block dimensions, block[i] and
 * pad[i] (crops) already checked; dst has the output's shape. Shared with array_v1.c (V1 ops). */
sm_status *sm__array_space_batch_walk(const sm_tensor *space, const sm_tensor *batchside, sm_tensor *dst, int to_batch,
                                      int M, const int64_t *block, int64_t (*pad)[2]);
/* The node's name in messages; prepare functions may keep it (the graph outlives plans). */
#define SM_ARRAY_KERNEL(name)                                                                     \
  sm_status *sm__array_prepare_##name(const sm_node *node, void **state);                         \
  sm_status *sm__array_compute_##name(const void *state, sm_kctx *ctx)

SM_ARRAY_KERNEL(reshape);
SM_ARRAY_KERNEL(squeeze);
SM_ARRAY_KERNEL(expand_dims);
SM_ARRAY_KERNEL(shape);
SM_ARRAY_KERNEL(shape_n);
SM_ARRAY_KERNEL(broadcast_args);
SM_ARRAY_KERNEL(broadcast_gradient_args);
SM_ARRAY_KERNEL(size);
SM_ARRAY_KERNEL(rank);
SM_ARRAY_KERNEL(fill);
SM_ARRAY_KERNEL(zeros_like);
SM_ARRAY_KERNEL(ones_like);
SM_ARRAY_KERNEL(range);
SM_ARRAY_KERNEL(strided_slice);
SM_ARRAY_KERNEL(strided_slice_grad); /* prepare: strided_slice's; registered by grad_array.c */
sm_status *sm__array_compute_tensor_strided_slice_update(const void *state, sm_kctx *ctx);
sm_status *sm__array_strided_slice_put(const void *state, sm_tensor *x, const sm_tensor *begin, const sm_tensor *end,
                                       const sm_tensor *strides, const sm_tensor *v);
/* CheckNumerics' message attr as a string the state owns (free); CheckNumericsV2's too (math_misc.c). */
sm_status *sm__array_prepare_check_numerics(const sm_node *node, void **state);
SM_ARRAY_KERNEL(slice);
SM_ARRAY_KERNEL(split);
SM_ARRAY_KERNEL(split_v);
SM_ARRAY_KERNEL(unpack);
SM_ARRAY_KERNEL(concat_v2);
SM_ARRAY_KERNEL(concat);
SM_ARRAY_KERNEL(pack);
SM_ARRAY_KERNEL(transpose);
SM_ARRAY_KERNEL(tile);
SM_ARRAY_KERNEL(pad);
SM_ARRAY_KERNEL(mirror_pad); /* its prepare is MirrorPadGrad's too (grad_array.c): state starts with int reflect */
SM_ARRAY_KERNEL(reverse_v2);
SM_ARRAY_KERNEL(broadcast_to);
SM_ARRAY_KERNEL(gather_v2);
SM_ARRAY_KERNEL(gather);
SM_ARRAY_KERNEL(gather_nd);
SM_ARRAY_KERNEL(one_hot);
SM_ARRAY_KERNEL(where);
SM_ARRAY_KERNEL(space_to_batch_nd);
SM_ARRAY_KERNEL(batch_to_space_nd);

#endif
