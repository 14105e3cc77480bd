/* array_gather.c - kernels that move elements by index: GatherV2 (axis, batch_dims), Gather (v1),
 * OneHot, Where (coordinates of true elements), SpaceToBatchND, BatchToSpaceND.
 *
 * Every index from a tensor is checked before it is used: an out-of-range gather index is an
 * InvalidArgument naming the index position, as TF's CPU kernel does (never the GPU's silent 0).
 * Spec: shared/spec/ops.md §3.9; TF gather_op.cc, one_hot_op.cc, where_op.cc, spacetobatch_op.cc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"

/* "1,0": the multi-index of flat element i of a shape (TF's SliceDebugString). */
static const char *multi_index(int rank, const int64_t *dims, int64_t i, char *buf, size_t cap) {
  int64_t idx[SM_MAX_RANK];
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = dims[k] ? i % dims[k] : 0;
    i = dims[k] ? i / dims[k] : 0;
  }
  size_t o = 0;
  buf[0] = 0;
  for (int k = 0; k < rank && o + 24 < cap; k++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", k ? "," : "", (long long)idx[k]);
  return buf;
}

/* ---- GatherV2, Gather ------------------------------------------------------------------------ */

typedef struct {
  int64_t batch_dims;
} gather_state;

sm_status *sm__array_prepare_gather_v2(const sm_node *node, void **state) {
  gather_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_int(node, "batch_dims", &st->batch_dims);
  if (s) sm_status_free(s); /* default 0 */
  *state = st;
  return NULL;
}

static sm_status *gather(sm_kctx *ctx, const sm_tensor *params, const sm_tensor *indices, int64_t axis, int64_t bd) {
  int pr = sm_tensor_rank(params), ir = sm_tensor_rank(indices);
  const int64_t *pd = sm_tensor_dims(params), *id = sm_tensor_dims(indices);
  char a[256];
  if (!sm__array_is_int(sm_tensor_dtype(indices)))
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int16, int32 or int64, not %s",
                         sm__array_dtype_str(sm_tensor_dtype(indices)));
  if (axis < -pr || axis >= pr)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld (Shape must be at least rank %llu but is rank %d)",
                         -pr, pr, (long long)axis,
                         /* unsigned: -axis of INT64_MIN is not an int64 */
                         axis < 0 ? 0ull - (unsigned long long)axis : (unsigned long long)axis + 1, pr);
  if (axis < 0) axis += pr;
  if (bd < -ir || bd > ir)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected batch_dims in the range [%d, %d], but got %lld", -ir, ir, (long long)bd);
  if (bd < 0) bd += ir;
  if (bd > axis)
    return sm_status_new(SM_INVALID_ARGUMENT, "batch_dims (%lld) must be less than or equal to axis (%lld).", (long long)bd,
                         (long long)axis);
  for (int i = 0; i < bd; i++)
    if (pd[i] != id[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "params.shape[%d]: %lld should be equal to indices.shape[%d]: %lld", i,
                           (long long)pd[i], i, (long long)id[i]);
  int orank = pr - 1 + ir - (int)bd;
  if (orank > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "Gather: result rank %d is past this library's limit", orank);
  int64_t od[SM_MAX_RANK], batch = 1, outer = 1, inner = 1, nidx = 1;
  int o = 0;
  for (int i = 0; i < axis; i++) od[o++] = pd[i];
  for (int i = (int)bd; i < ir; i++) od[o++] = id[i];
  for (int i = (int)axis + 1; i < pr; i++) od[o++] = pd[i];
  for (int i = 0; i < bd; i++) batch *= pd[i];
  for (int i = (int)bd; i < axis; i++) outer *= pd[i];
  for (int i = (int)axis + 1; i < pr; i++) inner *= pd[i];
  for (int i = (int)bd; i < ir; i++) nidx *= id[i];
  const int64_t limit = pd[axis];
  /* Check every index first: no output is made for bad input. */
  int64_t n = sm_tensor_num_elements(indices);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = sm__array_int_at(indices, i);
    if (v < 0 || v >= limit)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices[%s] = %lld is not in [0, %lld)", multi_index(ir, id, i, a, sizeof a),
                           (long long)v, (long long)limit);
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(params), orank, od, &out);
  if (s || sm_tensor_num_elements(out) == 0 || inner == 0) return s;
  int64_t dst = 0;
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t oi = 0; oi < outer; oi++) {
      int64_t base = (bi * outer + oi) * limit * inner;
      for (int64_t k = 0; k < nidx; k++, dst += inner) {
        s = sm__array_copy(out, dst, params, base + sm__array_int_at(indices, bi * nidx + k) * inner, inner);
        if (s) return s;
      }
    }
  return NULL;
}

sm_status *sm__array_compute_gather_v2(const void *state, sm_kctx *ctx) {
  const sm_tensor *at = sm__kctx_input(ctx, 2);
  char a[128];
  if (sm_tensor_num_elements(at) != 1 || sm_tensor_rank(at) > 1 || !sm__array_is_int(sm_tensor_dtype(at)))
    return sm_status_new(SM_INVALID_ARGUMENT, "axis must be a scalar int32 or int64, but got %s %s",
                         sm__array_dtype_str(sm_tensor_dtype(at)), sm__array_shape_str(at, a, sizeof a));
  return gather(ctx, sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1), sm__array_int_at(at, 0),
                ((const gather_state *)state)->batch_dims);
}

sm_status *sm__array_compute_gather(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *params = sm__kctx_input(ctx, 0);
  if (sm_tensor_rank(params) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "params must be at least 1 dimensional");
  return gather(ctx, params, sm__kctx_input(ctx, 1), 0, 0);
}

/* ---- OneHot --------------------------------------------------------------------------------- */

typedef struct {
  int64_t axis;
} onehot_state;

sm_status *sm__array_prepare_one_hot(const sm_node *node, void **state) {
  onehot_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->axis = -1;
  sm_status *s = sm__node_attr_int(node, "axis", &st->axis);
  if (s) {
    sm_status_free(s);
    st->axis = -1;
  }
  *state = st;
  return NULL;
}

sm_status *sm__array_compute_one_hot(const void *state, sm_kctx *ctx) {
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *dt = sm__kctx_input(ctx, 1), *on = sm__kctx_input(ctx, 2),
                  *off = sm__kctx_input(ctx, 3);
  int R = sm_tensor_rank(ix);
  int64_t axis = ((const onehot_state *)state)->axis;
  char a[128];
  if (sm_tensor_rank(dt) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "depth must be a scalar, but got: %s", sm__array_shape_str(dt, a, sizeof a));
  if (sm_tensor_rank(on) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "on_value must be a scalar, but got: %s", sm__array_shape_str(on, a, sizeof a));
  if (sm_tensor_rank(off) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "off_value must be a scalar, but got: %s", sm__array_shape_str(off, a, sizeof a));
  if (axis != -1 && (axis < 0 || axis > R))
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  But received: %lld", R + 1,
                         (long long)axis);
  if (!sm__array_is_int(sm_tensor_dtype(dt)) || !sm__array_is_int(sm_tensor_dtype(ix)))
    return sm_status_new(SM_INVALID_ARGUMENT, "OneHot indices and depth must be integers");
  if (sm_tensor_dtype(on) != sm_tensor_dtype(off))
    return sm_status_new(SM_INVALID_ARGUMENT, "on_value is %s but off_value is %s", sm__array_dtype_str(sm_tensor_dtype(on)),
                         sm__array_dtype_str(sm_tensor_dtype(off)));
  int64_t depth = sm__array_int_at(dt, 0);
  if (depth < 0) return sm_status_new(SM_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)depth);
  if (R + 1 > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "OneHot: rank past this library's limit");
  if (axis == -1) axis = R;
  int64_t od[SM_MAX_RANK], prefix = 1, suffix = 1;
  const int64_t *id = sm_tensor_dims(ix);
  for (int i = 0, j = 0; i <= R; i++) od[i] = i == axis ? depth : id[j++];
  for (int i = 0; i < axis; i++) prefix *= id[i];
  for (int i = (int)axis; i < R; i++) suffix *= id[i];
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(on), R + 1, od, &out);
  if (!s) s = sm__array_fill(out, off);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  for (int64_t p = 0; p < prefix; p++)
    for (int64_t q = 0; q < suffix; q++) {
      int64_t v = sm__array_int_at(ix, p * suffix + q);
      if (v < 0 || v >= depth) continue; /* out of range: an all-off row */
      s = sm__array_copy(out, (p * depth + v) * suffix + q, on, 0, 1);
      if (s) return s;
    }
  return NULL;
}

/* ---- Where ---------------------------------------------------------------------------------- */

static int truthy(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_FLOAT: return ((const float *)p)[i] != 0;
  case SM_DOUBLE: return ((const double *)p)[i] != 0;
  case SM_COMPLEX64: return ((const float *)p)[2 * i] != 0 || ((const float *)p)[2 * i + 1] != 0;
  case SM_COMPLEX128: return ((const double *)p)[2 * i] != 0 || ((const double *)p)[2 * i + 1] != 0;
  case SM_HALF: case SM_BFLOAT16: return (((const uint16_t *)p)[i] & 0x7fff) != 0; /* -0 is false */
  case SM_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return sm__array_int_at(t, i) != 0;
  }
}

sm_status *sm__array_compute_where(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt == SM_STRING || dt == SM_RESOURCE || !sm__array_esize(dt))
    return sm_status_new(SM_INVALID_ARGUMENT, "Where is not defined for %s", sm__array_dtype_str(dt));
  int R = sm_tensor_rank(x);
  int64_t n = sm_tensor_num_elements(x), count = 0;
  for (int64_t i = 0; i < n; i++) count += truthy(x, i);
  int64_t od[2] = {count, R};
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, od, &out);
  if (s) return s;
  int64_t *o = sm_tensor_data(out), idx[SM_MAX_RANK] = {0};
  const int64_t *dims = sm_tensor_dims(x);
  for (int64_t i = 0; i < n; i++) {
    if (truthy(x, i)) {
      memcpy(o, idx, (size_t)R * sizeof *o);
      o += R;
    }
    for (int k = R - 1; k >= 0; k--) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  return NULL;
}

/* ---- SpaceToBatchND, BatchToSpaceND ----------------------------------------------------------- */

/* block_shape [M] and paddings/crops [M,2], checked against an input of rank >= 1 + M. */
static sm_status *read_block(const sm_tensor *x, const sm_tensor *bt, const sm_tensor *pt, const char *pname, int *m,
                             int64_t *block, int64_t (*pad)[2]) {
  char a[128];
  if (sm_tensor_rank(bt) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "block_shape rank should be 1 instead of %d", sm_tensor_rank(bt));
  int64_t M = sm_tensor_dims(bt)[0];
  if (M + 1 > sm_tensor_rank(x))
    return sm_status_new(SM_INVALID_ARGUMENT, "input rank should be >= %lld instead of %d", (long long)(1 + M), sm_tensor_rank(x));
  if (sm_tensor_rank(pt) != 2 || sm_tensor_dims(pt)[0] != M || sm_tensor_dims(pt)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s should have shape [%lld, 2] instead of %s", pname, (long long)M,
                         sm__array_shape_str(pt, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(bt)) || !sm__array_is_int(sm_tensor_dtype(pt)))
    return sm_status_new(SM_INVALID_ARGUMENT, "block_shape and %s must be int32 or int64", pname);
  for (int i = 0; i < M; i++) {
    block[i] = sm__array_int_at(bt, i);
    pad[i][0] = sm__array_int_at(pt, 2 * i);
    pad[i][1] = sm__array_int_at(pt, 2 * i + 1);
    if (block[i] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "All values in block_shape must be positive, got value, %lld at index %d.",
                           (long long)block[i], i);
    if (pad[i][0] < 0 || pad[i][1] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "All values in %s must be non-negative, got %lld, %lld at index %d.", pname,
                           (long long)pad[i][0], (long long)pad[i][1], i);
  }
  *m = (int)M;
  return NULL;
}

/* Shared walk: for each (block offset k, batch b, spatial position j of the "batch" side), the
 * "space" side coordinate is j*block + k - pad0; rows inside the space side move `inner` elements
 * one way or the other. */
sm_status *sm__array_space_batch_walk(const sm_tensor *space, const sm_tensor *batchside, sm_tensor *dst, int to_batch, int M,
                                   const int64_t *block, int64_t (*pad)[2]) {
  const int64_t *sd = sm_tensor_dims(space), *bd = sm_tensor_dims(batchside);
  int R = sm_tensor_rank(space);
  int64_t B = sd[0], P = 1, inner = 1, nsp = 1;
  for (int i = 0; i < M; i++) {
    P *= block[i];
    nsp *= bd[1 + i];
  }
  for (int i = 1 + M; i < R; i++) inner *= sd[i];
  if (inner == 0 || B == 0) return NULL;
  int64_t sstr[SM_MAX_RANK];
  sm__array_strides(1 + M, sd, sstr); /* in rows of `inner` */
  for (int64_t k = 0; k < P; k++) {
    int64_t koff[SM_MAX_RANK], rem = k;
    for (int i = M - 1; i >= 0; i--) {
      koff[i] = rem % block[i];
      rem /= block[i];
    }
    for (int64_t b = 0; b < B; b++) {
      int64_t brow = (k * B + b) * nsp; /* first row of this batch entry on the batch side */
      int64_t j[SM_MAX_RANK] = {0};
      for (int64_t r = 0; r < nsp; r++) {
        int64_t srow = b * sstr[0];
        int inside = 1;
        for (int i = 0; i < M && inside; i++) {
          int64_t c = j[i] * block[i] + koff[i] - pad[i][0];
          inside = c >= 0 && c < sd[1 + i];
          srow += c * sstr[1 + i];
        }
        if (inside) {
          sm_status *s = to_batch ? sm__array_copy(dst, (brow + r) * inner, space, srow * inner, inner)
                                  : sm__array_copy(dst, srow * inner, batchside, (brow + r) * inner, inner);
          if (s) return s;
        }
        for (int i = M - 1; i >= 0; i--) {
          if (++j[i] < bd[1 + i]) break;
          j[i] = 0;
        }
      }
    }
  }
  return NULL;
}

sm_status *sm__array_compute_space_to_batch_nd(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int64_t block[SM_MAX_RANK], pad[SM_MAX_RANK][2];
  int M;
  sm_status *s = read_block(x, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), "paddings", &M, block, pad);
  if (s) return s;
  int R = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], P = 1;
  for (int i = 0; i < M; i++) {
    int64_t padded = xd[1 + i] + pad[i][0] + pad[i][1];
    if (padded % block[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "padded_shape[%d]=%lld is not divisible by block_shape[%d]=%lld", i,
                           (long long)padded, i, (long long)block[i]);
    od[1 + i] = padded / block[i];
    if (__builtin_mul_overflow(P, block[i], &P)) return sm_status_new(SM_INVALID_ARGUMENT, "block_shape product overflows");
  }
  if (__builtin_mul_overflow(xd[0], P, &od[0])) return sm_status_new(SM_INVALID_ARGUMENT, "output batch overflows");
  for (int i = 1 + M; i < R; i++) od[i] = xd[i];
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  return sm__array_space_batch_walk(x, out, out, 1, M, block, pad);
}

sm_status *sm__array_compute_batch_to_space_nd(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int64_t block[SM_MAX_RANK], crop[SM_MAX_RANK][2];
  int M;
  sm_status *s = read_block(x, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), "crops", &M, block, crop);
  if (s) return s;
  int R = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], P = 1;
  for (int i = 0; i < M; i++)
    if (__builtin_mul_overflow(P, block[i], &P)) return sm_status_new(SM_INVALID_ARGUMENT, "block_shape product overflows");
  if (xd[0] % P)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input batch dimension (%lld) is not divisible by product of block sizes (%lld)",
                         (long long)xd[0], (long long)P);
  od[0] = xd[0] / P;
  for (int i = 0; i < M; i++) {
    int64_t full;
    if (__builtin_mul_overflow(xd[1 + i], block[i], &full)) return sm_status_new(SM_INVALID_ARGUMENT, "output dim overflows");
    od[1 + i] = full - crop[i][0] - crop[i][1];
    if (od[1 + i] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Negative output dimension size caused by invalid crop values: crops[%d] = [%lld, %lld] on a dimension of %lld",
                           i, (long long)crop[i][0], (long long)crop[i][1], (long long)full);
  }
  for (int i = 1 + M; i < R; i++) od[i] = xd[i];
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  return sm__array_space_batch_walk(out, x, out, 0, M, block, crop);
}

/* ---- GatherNd ------------------------------------------------------------------------------- */

sm_status *sm__array_compute_gather_nd(const void *state, sm_kctx *ctx) {
  (void)state;
  return sm__array_gather_nd(ctx, sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1));
}

sm_status *sm__array_gather_nd(sm_kctx *ctx, const sm_tensor *params, const sm_tensor *indices) {
  int pr = sm_tensor_rank(params), ir = sm_tensor_rank(indices);
  const int64_t *pd = sm_tensor_dims(params), *id = sm_tensor_dims(indices);
  char a[256], b[256];
  if (pr < 1) return sm_status_new(SM_INVALID_ARGUMENT, "params must be at least a vector");
  if (ir < 1) return sm_status_new(SM_INVALID_ARGUMENT, "indices must be at least a vector");
  if (!sm__array_is_int(sm_tensor_dtype(indices)))
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int16, int32 or int64, not %s",
                         sm__array_dtype_str(sm_tensor_dtype(indices)));
  int64_t K = id[ir - 1];
  if (K > pr)
    return sm_status_new(SM_INVALID_ARGUMENT, "index innermost dimension length must be <= params rank; saw: %lld vs. %d",
                         (long long)K, pr);
  int orank = ir - 1 + pr - (int)K;
  if (orank > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "GatherNd: result rank %d is past this library's limit", orank);
  int64_t od[SM_MAX_RANK], N = 1, slice = 1;
  int o = 0;
  for (int i = 0; i < ir - 1; i++) {
    od[o++] = id[i];
    N *= id[i];
  }
  for (int i = (int)K; i < pr; i++) {
    od[o++] = pd[i];
    slice *= pd[i];
  }
  sm_status *s;
  int64_t *offs = sm__kctx_scratch(ctx, (size_t)N * sizeof *offs, &s);
  if (!offs) return s;
  for (int64_t i = 0; i < N; i++) {
    int64_t off = 0;
    for (int64_t k = 0; k < K; k++) {
      int64_t v = sm__array_int_at(indices, i * K + k);
      if (v < 0 || v >= pd[k]) {
        size_t w = 0;
        for (int64_t j = 0; j < K && w + 24 < sizeof b; j++)
          w += (size_t)snprintf(b + w, sizeof b - w, "%s%lld", j ? ", " : "", (long long)sm__array_int_at(indices, i * K + j));
        char c[256];
        return sm_status_new(SM_INVALID_ARGUMENT, "indices[%s] = [%s] does not index into param shape %s",
                             multi_index(ir - 1, id, i, a, sizeof a), b, sm__array_shape_str(params, c, sizeof c));
      }
      off = off * pd[k] + v;
    }
    offs[i] = off * slice;
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(params), orank, od, &out);
  for (int64_t i = 0; !s && i < N && slice; i++) s = sm__array_copy(out, i * slice, params, offs[i], slice);
  sm__kctx_scratch_free(ctx, offs);
  return s;
}
