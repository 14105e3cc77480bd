/* array_slice.c - kernels that take parts of a tensor: StridedSlice, Slice, Split, SplitV, Unpack, and
 * TensorStridedSliceUpdate (puts one back).
 *
 * StridedSlice follows TensorFlow's ValidateStridedSliceOp (tensorflow/core/util/strided_slice_op.cc)
 * step by step: sparse spec (the masks as given, an implicit trailing ellipsis), dense spec (one
 * entry per input dim, ellipsis expanded, new axes recorded), canonical begin/end per dim with
 * clamping, then the final shape (new axes added, shrunk dims dropped). The move itself is one
 * strided copy (array_util.c). Tests: tests/unit/strided_slice_cases.h, generated from TF by
 * tools/gen_strided_slice_cases.py. Spec: shared/spec/ops.md §3.9. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"

/* ---- StridedSlice --------------------------------------------------------------------------- */

typedef struct {
  int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
} ss_state;

sm_status *sm__array_prepare_strided_slice(const sm_node *node, void **state) {
  ss_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  static const char *const names[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
  int64_t *dst[] = {&st->begin_mask, &st->end_mask, &st->ellipsis_mask, &st->new_axis_mask, &st->shrink_axis_mask};
  for (int i = 0; i < 5; i++) {
    sm_status *s = sm__node_attr_int(node, names[i], dst[i]);
    if (s) {
      sm_status_free(s);
      *dst[i] = 0;
    }
    /* TF keeps masks in int32: only the low 32 bits mean anything. */
    *dst[i] &= 0xffffffff;
  }
  *state = st;
  return NULL;
}

enum { SS_SHRINK = -1, SS_NEW_AXIS = -2 };

/* The result of validating a strided slice against an input shape. */
typedef struct {
  int rank;                   /* input rank = processing rank */
  int64_t begin[SM_MAX_RANK]; /* canonical per input dim */
  int64_t stride[SM_MAX_RANK];
  int64_t proc[SM_MAX_RANK]; /* processing shape */
  int final_rank;
  int64_t final[SM_MAX_RANK];
  int is_identity;
} ss_plan;

static sm_status *ss_validate(const ss_state *m, const sm_tensor *input, const sm_tensor *bt, const sm_tensor *et,
                              const sm_tensor *st, ss_plan *p) {
  char a[128], b[128], c[128];
  int64_t n = sm_tensor_num_elements(st);
  int begin_wrong = !(sm_tensor_rank(bt) == 1 && sm_tensor_num_elements(bt) == n && sm_tensor_num_elements(bt) < 32);
  int end_wrong = !(sm_tensor_rank(et) == 1 && sm_tensor_num_elements(et) == n);
  if (begin_wrong || end_wrong || sm_tensor_rank(st) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Expected begin, end, and strides to be 1D equal size tensors, but got shapes %s, %s, and %s instead.",
                         sm__array_shape_str(bt, a, sizeof a), sm__array_shape_str(et, b, sizeof b),
                         sm__array_shape_str(st, c, sizeof c));
  int idt = sm_tensor_dtype(st);
  if ((idt != SM_INT32 && idt != SM_INT64) || sm_tensor_dtype(bt) != idt || sm_tensor_dtype(et) != idt)
    return sm_status_new(SM_INVALID_ARGUMENT, "begin, end and strides must all be int32 or all int64 (got %s, %s, %s)",
                         sm__array_dtype_str(sm_tensor_dtype(bt)), sm__array_dtype_str(sm_tensor_dtype(et)),
                         sm__array_dtype_str(idt));
  if (m->ellipsis_mask & (m->ellipsis_mask - 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");

  /* Step 1: the sparse spec; with no ellipsis, one is implied after the last entry. */
  int64_t sparse_dims = n, ellipsis = m->ellipsis_mask;
  int num_add_axis_after_ellipsis = 0, seen = 0;
  for (int i = 0; i < n; i++) {
    if (seen && ((1LL << i) & m->new_axis_mask)) num_add_axis_after_ellipsis++;
    if ((1LL << i) & ellipsis) seen = 1;
  }
  if (!seen) {
    ellipsis |= 1LL << sparse_dims;
    sparse_dims++;
  }

  /* Step 2: the dense spec, one entry per input dim. */
  const int R = sm_tensor_rank(input);
  const int64_t *dims = sm_tensor_dims(input);
  int64_t dbegin[SM_MAX_RANK] = {0}, dend[SM_MAX_RANK] = {0}, dstride[SM_MAX_RANK] = {0};
  uint64_t dbm = 0, dem = 0, dshrink = 0;
  int gather[SM_MAX_RANK + 33]; /* final shape: a dense index, SS_NEW_AXIS or SS_SHRINK */
  int ng = 0, full = 0;
  for (int i = 0; i < sparse_dims; i++) {
    if ((1LL << i) & ellipsis) {
      int64_t next = R - (sparse_dims - i) + 1 + num_add_axis_after_ellipsis;
      if (next > R) next = R;
      for (; full < next; full++) {
        dbegin[full] = dend[full] = 0;
        dstride[full] = 1;
        dbm |= 1ULL << full;
        dem |= 1ULL << full;
        gather[ng++] = full;
      }
    } else if ((1LL << i) & m->new_axis_mask) {
      gather[ng++] = SS_NEW_AXIS;
    } else {
      if (full == R) {
        if (R == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Attempting to slice scalar input.");
        return sm_status_new(SM_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims", full, R);
      }
      dbegin[full] = sm__array_int_at(bt, i);
      dend[full] = sm__array_int_at(et, i);
      dstride[full] = sm__array_int_at(st, i);
      if (m->begin_mask & (1LL << i)) dbm |= 1ULL << full;
      if (m->end_mask & (1LL << i)) dem |= 1ULL << full;
      if (m->shrink_axis_mask & (1LL << i)) {
        gather[ng++] = SS_SHRINK;
        dshrink |= 1ULL << full;
      } else {
        gather[ng++] = full;
      }
      full++;
    }
  }

  /* Step 3: canonical begin/end per dim, bounds checks, the processing shape. */
  p->rank = R;
  p->is_identity = 1;
  for (int i = 0; i < R; i++) {
    int64_t bi = dbegin[i], ei = dend[i], si = dstride[i], dim = dims[i];
    if (si == 0) return sm_status_new(SM_INVALID_ARGUMENT, "strides[%d] must be non-zero", i);
    int shrink = (dshrink >> i) & 1;
    if (shrink && si <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "only stride 1 allowed on non-range indexing.");
    const int64_t lo = si > 0 ? 0 : -1, hi = si > 0 ? dim : dim - 1;
    if (shrink) {
      /* foo[-1] arrives as begin -1, end 0: end is rebuilt as begin + 1. */
      int64_t fwd = bi < 0 ? dim + bi : bi;
      bi = fwd;
      ei = bi + 1;
      if (fwd < 0 || fwd >= dim)
        return sm_status_new(SM_INVALID_ARGUMENT, "slice index %lld of dimension %d out of bounds.", (long long)bi, i);
    } else {
      if ((dbm >> i) & 1) {
        bi = si > 0 ? lo : hi;
      } else {
        int64_t fwd = bi < 0 ? dim + bi : bi;
        bi = fwd < lo ? lo : fwd > hi ? hi : fwd;
      }
      if ((dem >> i) & 1) {
        ei = si > 0 ? hi : lo;
      } else {
        int64_t fwd = ei < 0 ? dim + ei : ei;
        ei = fwd < lo ? lo : fwd > hi ? hi : fwd;
      }
    }
    p->is_identity &= si == 1 && bi == 0 && ei == dim;
    int64_t len = ei - bi, size;
    if (len == 0 || ((len < 0) != (si < 0)))
      size = 0;
    else
      size = len / si + (len % si != 0);
    p->begin[i] = bi;
    p->stride[i] = si;
    p->proc[i] = size;
  }

  /* Step 4: the final shape. */
  p->final_rank = 0;
  for (int g = 0; g < ng; g++) {
    if (gather[g] == SS_SHRINK) continue;
    if (p->final_rank >= SM_MAX_RANK)
      return sm_status_new(SM_OUT_OF_RANGE, "StridedSlice: the result has more than %d dims", SM_MAX_RANK);
    p->final[p->final_rank++] = gather[g] >= 0 ? p->proc[gather[g]] : 1;
  }
  return NULL;
}

/* The slice's elements in a tensor of shape dims: the offset of the first, str[] the steps per dim. */
static int64_t ss_walk(const ss_plan *p, const int64_t *dims, int64_t *str) {
  int64_t in_str[SM_MAX_RANK], off = 0;
  sm__array_strides(p->rank, dims, in_str);
  for (int i = 0; i < p->rank; i++) {
    off += p->begin[i] * in_str[i];
    str[i] = p->stride[i] * in_str[i];
  }
  return off;
}

sm_status *sm__array_compute_strided_slice(const void *state, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  ss_plan p;
  sm_status *s = ss_validate(state, x, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), &p);
  if (s) return s;
  if (p.is_identity) {
    /* The whole input: same elements, maybe new axes or shrunk size-1 dims. */
    sm_tensor *out;
    s = sm_tensor_view((sm_tensor *)x, p.final_rank, p.final, &out);
    if (s) return s;
    sm__kctx_set_output(ctx, 0, out);
    return NULL;
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), p.final_rank, p.final, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  int64_t out_str[SM_MAX_RANK], src_str[SM_MAX_RANK], off = ss_walk(&p, sm_tensor_dims(x), src_str);
  sm__array_strides(p.rank, p.proc, out_str);
  return sm__array_strided_copy(out, 0, out_str, x, off, src_str, p.rank, p.proc);
}

/* TensorStridedSliceUpdate (tf.tensor_strided_slice_update, TF's `x[...].assign` on a tensor): x with
 * the slice StridedSlice would take replaced by value, broadcast to the slice's shape as TF does. */
sm_status *sm__array_compute_tensor_strided_slice_update(const void *state, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  ss_plan p;
  sm_status *s = ss_validate(state, x, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), &p);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), p.rank, sm_tensor_dims(x), &out);
  if (!s) s = sm__array_copy(out, 0, x, 0, sm_tensor_num_elements(x));
  return s ? s : sm__array_strided_slice_put(state, out, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2),
                                             sm__kctx_input(ctx, 3), sm__kctx_input(ctx, 4));
}

/* The slice of x (in place) that StridedSlice with these begin/end/strides would take, set to v
 * broadcast to its shape: TensorStridedSliceUpdate's core, and StridedSliceAssign's on a copy of
 * the variable's value (scatter_resource.c). */
sm_status *sm__array_strided_slice_put(const void *state, sm_tensor *x, const sm_tensor *begin, const sm_tensor *end,
                                       const sm_tensor *strides, const sm_tensor *v) {
  ss_plan p;
  sm_status *s = ss_validate(state, x, begin, end, strides, &p);
  if (s) return s;
  int64_t count = 1;
  for (int i = 0; i < p.rank; i++) count *= p.proc[i];
  if (count == 0) return NULL; /* TF checks value's shape only for a slice that is not empty */
  /* value broadcasts to the slice's shape (numpy rules; extra leading dims of 1 allowed) */
  int vr = sm_tensor_rank(v), ok = sm_tensor_dtype(v) == sm_tensor_dtype(x);
  const int64_t *vd = sm_tensor_dims(v);
  int64_t bstr[SM_MAX_RANK], vstr[SM_MAX_RANK];
  sm__array_strides(vr, vd, vstr);
  for (int i = 0; ok && i < vr - p.final_rank; i++) ok = vd[i] == 1;
  for (int i = 0; ok && i < p.final_rank; i++) {
    int k = vr - p.final_rank + i; /* v's dim aligned with final dim i */
    int64_t d = k >= 0 ? vd[k] : 1;
    ok = d == p.final[i] || d == 1;
    bstr[i] = k >= 0 && d == p.final[i] ? vstr[k] : 0;
  }
  if (!ok) {
    char a[128], b[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "Cannot broadcast input shape %s into final shape %s",
                         sm__array_shape_str(v, a, sizeof a), sm_shape_str(p.final_rank, p.final, b, sizeof b));
  }
  sm_tensor *out = x;
  /* the broadcast value, contiguous in the slice's shape (which is its processing shape's layout) */
  sm_tensor *bv = NULL;
  s = sm_tensor_new(sm_tensor_dtype(x), p.final_rank, p.final, &bv);
  int64_t fstr[SM_MAX_RANK];
  sm__array_strides(p.final_rank, p.final, fstr);
  if (!s) s = sm__array_strided_copy(bv, 0, fstr, v, 0, bstr, p.final_rank, p.final);
  if (s) {
    sm_tensor_free(bv);
    return s;
  }
  int64_t v_str[SM_MAX_RANK], dst_str[SM_MAX_RANK], off = ss_walk(&p, sm_tensor_dims(x), dst_str);
  sm__array_strides(p.rank, p.proc, v_str);
  s = sm__array_strided_copy(out, off, dst_str, bv, 0, v_str, p.rank, p.proc);
  sm_tensor_free(bv);
  return s;
}

/* ---- Slice ---------------------------------------------------------------------------------- */

sm_status *sm__array_compute_slice(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *bt = sm__kctx_input(ctx, 1), *zt = sm__kctx_input(ctx, 2);
  int R = sm_tensor_rank(x);
  const int64_t *dims = sm_tensor_dims(x);
  char a[128], b[128];
  if (sm_tensor_rank(bt) != 1 || sm_tensor_rank(zt) != 1 || sm_tensor_num_elements(bt) != R ||
      sm_tensor_num_elements(zt) != R)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Expected begin and size arguments to be 1-D tensors of size %d, but got shapes %s and %s instead.", R,
                         sm__array_shape_str(bt, a, sizeof a), sm__array_shape_str(zt, b, sizeof b));
  int64_t begin[SM_MAX_RANK], size[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(bt, "Slice begin", begin, SM_MAX_RANK, &n);
  if (!s) s = sm__array_read_ints(zt, "Slice size", size, SM_MAX_RANK, &n);
  if (s) return s;
  for (int i = 0; i < R; i++) {
    int64_t bi = begin[i], si = size[i] == -1 ? dims[i] - bi : size[i];
    if (dims[i] == 0) {
      if (bi != 0 || si != 0)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Expected begin[%d] == 0 (got %lld) and size[%d] == 0 (got %lld) when input.dim_size(%d) == 0", i,
                             (long long)bi, i, (long long)si, i);
    } else {
      if (bi < 0 || bi > dims[i])
        return sm_status_new(SM_INVALID_ARGUMENT, "Expected begin[%d] in [0, %lld], but got %lld", i, (long long)dims[i],
                             (long long)bi);
      if (si < 0 || si > dims[i] - bi)
        return sm_status_new(SM_INVALID_ARGUMENT, "Expected size[%d] in [0, %lld], but got %lld", i,
                             (long long)(dims[i] - bi), (long long)si);
    }
    size[i] = si;
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, size, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  int64_t in_str[SM_MAX_RANK], out_str[SM_MAX_RANK], off = 0;
  sm__array_strides(R, dims, in_str);
  sm__array_strides(R, size, out_str);
  for (int i = 0; i < R; i++) off += begin[i] * in_str[i];
  return sm__array_strided_copy(out, 0, out_str, x, off, in_str, R, size);
}

/* ---- Split, SplitV, Unpack -------------------------------------------------------------------- */

/* Output k takes [start, start + len) of x along `axis`, for each of the pieces. */
static sm_status *split_pieces(sm_kctx *ctx, const sm_tensor *x, int axis, int num, const int64_t *lens) {
  int R = sm_tensor_rank(x);
  const int64_t *dims = sm_tensor_dims(x);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= dims[i];
  for (int i = axis + 1; i < R; i++) inner *= dims[i];
  int64_t start = 0;
  for (int k = 0; k < num; k++) {
    int64_t od[SM_MAX_RANK];
    memcpy(od, dims, (size_t)R * sizeof *od);
    od[axis] = lens[k];
    sm_tensor *out; /* every element is copied below: not zeroed first (an LSTM cell's gate Split) */
    sm_status *s = sm__kctx_alloc_output_uninit(ctx, k, sm_tensor_dtype(x), R, od, &out);
    if (s) return s;
    int64_t cd[2] = {outer, lens[k] * inner}, ds[2] = {lens[k] * inner, 1}, ss[2] = {dims[axis] * inner, 1};
    if (outer && cd[1]) s = sm__array_strided_copy(out, 0, ds, x, start * inner, ss, 2, cd);
    if (s) return s;
    start += lens[k];
  }
  return NULL;
}

static sm_status *split_axis(const sm_tensor *t, int rank, int *axis) {
  char a[128];
  if (sm_tensor_num_elements(t) != 1 || !sm__array_is_int(sm_tensor_dtype(t)))
    return sm_status_new(SM_INVALID_ARGUMENT, "split_dim must be a scalar int32 or int64, got %s %s",
                         sm__array_dtype_str(sm_tensor_dtype(t)), sm__array_shape_str(t, a, sizeof a));
  int64_t d = sm__array_int_at(t, 0);
  if (d < -rank || d >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "-input rank(-%d) <= split_dim < input rank (%d), but got %lld", rank, rank,
                         (long long)d);
  *axis = (int)(d < 0 ? d + rank : d);
  return NULL;
}

sm_status *sm__array_compute_split(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 1);
  int axis, num = sm__kctx_num_outputs(ctx);
  sm_status *s = split_axis(sm__kctx_input(ctx, 0), sm_tensor_rank(x), &axis);
  if (s) return s;
  int64_t d = sm_tensor_dims(x)[axis];
  if (num <= 0 || d % num)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Number of ways to split should evenly divide the split dimension, but got split_dim %d (size = %lld) and num_split %d",
                         axis, (long long)d, num);
  int64_t *lens = sm__kctx_scratch(ctx, (size_t)num * sizeof *lens, &s);
  if (!lens) return s;
  for (int k = 0; k < num; k++) lens[k] = d / num;
  s = split_pieces(ctx, x, axis, num, lens);
  sm__kctx_scratch_free(ctx, lens);
  return s;
}

sm_status *sm__array_compute_split_v(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *sizes = sm__kctx_input(ctx, 1);
  int axis, num = sm__kctx_num_outputs(ctx);
  char a[128];
  sm_status *s = split_axis(sm__kctx_input(ctx, 2), sm_tensor_rank(x), &axis);
  if (s) return s;
  if (sm_tensor_rank(sizes) != 1 || sm_tensor_num_elements(sizes) != num)
    return sm_status_new(SM_INVALID_ARGUMENT, "size_splits must be a 1-D tensor of %d elements, got shape %s", num,
                         sm__array_shape_str(sizes, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(sizes)))
    return sm_status_new(SM_INVALID_ARGUMENT, "size_splits must be int32 or int64, not %s",
                         sm__array_dtype_str(sm_tensor_dtype(sizes)));
  int64_t *lens = sm__kctx_scratch(ctx, (size_t)num * sizeof *lens, &s);
  if (!lens) return s;
  int64_t d = sm_tensor_dims(x)[axis], known = 0;
  int neg = -1;
  for (int k = 0; k < num; k++) {
    lens[k] = sm__array_int_at(sizes, k);
    if (lens[k] == -1) {
      if (neg != -1) {
        sm__kctx_scratch_free(ctx, lens);
        return sm_status_new(SM_INVALID_ARGUMENT, "There can only be one -1 in the input.");
      }
      neg = k;
    } else if (lens[k] < 0) {
      long long bad = (long long)lens[k];
      sm__kctx_scratch_free(ctx, lens);
      return sm_status_new(SM_INVALID_ARGUMENT, "Split size at index %d must be >= 0. Got: %lld", k, bad);
    } else {
      known += lens[k];
    }
  }
  if ((neg == -1 && known != d) || (neg != -1 && known > d)) {
    sm__kctx_scratch_free(ctx, lens);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Determined shape must either match input shape along split_dim exactly if fully specified, or be "
                         "less than the size of the input along split_dim if not fully specified.  Got: %lld",
                         (long long)known);
  }
  if (neg != -1) lens[neg] = d - known;
  s = split_pieces(ctx, x, axis, num, lens);
  sm__kctx_scratch_free(ctx, lens);
  return s;
}

typedef struct {
  int64_t axis;
} axis_state;

sm_status *sm__array_prepare_unpack(const sm_node *node, void **state) {
  axis_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_int(node, "axis", &st->axis);
  if (s) sm_status_free(s); /* default 0 */
  *state = st;
  return NULL;
}

sm_status *sm__array_compute_unpack(const void *state, sm_kctx *ctx) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int R = sm_tensor_rank(x), num = sm__kctx_num_outputs(ctx);
  int64_t axis = ((const axis_state *)state)->axis;
  char a[128];
  if (axis < -R || axis >= R)
    return sm_status_new(SM_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)axis, -R, R);
  if (axis < 0) axis += R;
  const int64_t *dims = sm_tensor_dims(x);
  if (dims[axis] != num)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape axis %lld must equal %d, got shape %s", (long long)axis, num,
                         sm__array_shape_str(x, a, sizeof a));
  int64_t od[SM_MAX_RANK], outer = 1, inner = 1;
  for (int i = 0, j = 0; i < R; i++) {
    if (i < axis) outer *= dims[i];
    if (i > axis) inner *= dims[i];
    if (i != axis) od[j++] = dims[i];
  }
  for (int k = 0; k < num; k++) {
    sm_tensor *out;
    sm_status *s = sm__kctx_alloc_output(ctx, k, sm_tensor_dtype(x), R - 1, od, &out);
    if (s) return s;
    int64_t cd[2] = {outer, inner}, ds[2] = {inner, 1}, ss[2] = {num * inner, 1};
    if (outer && inner) s = sm__array_strided_copy(out, 0, ds, x, k * inner, ss, 2, cd);
    if (s) return s;
  }
  return NULL;
}

/* ---- StridedSliceGrad ------------------------------------------------------------------------ */
/* StridedSlice's gradient (grad_array.c registers it, with StridedSlice's prepare): a zero tensor
 * of `shape` whose sliced elements are dy's. The slice is validated against that shape exactly as
 * StridedSlice's, and dy must have the slice's final shape. */
sm_status *sm__array_compute_strided_slice_grad(const void *state, sm_kctx *ctx) {
  const sm_tensor *sh = sm__kctx_input(ctx, 0), *dy = sm__kctx_input(ctx, 4);
  char a[128], b[128];
  if (sm_tensor_rank(sh) != 1 || !(sm_tensor_dtype(sh) == SM_INT32 || sm_tensor_dtype(sh) == SM_INT64))
    return sm_status_new(SM_INVALID_ARGUMENT, "StridedSliceGrad: shape must be a 1-D int32 or int64 tensor, got %s %s",
                         sm__array_dtype_str(sm_tensor_dtype(sh)), sm__array_shape_str(sh, a, sizeof a));
  int R = (int)sm_tensor_num_elements(sh);
  if (sm_tensor_num_elements(sh) > SM_MAX_RANK)
    return sm_status_new(SM_INVALID_ARGUMENT, "StridedSliceGrad: shape has %lld dims, more than %d",
                         (long long)sm_tensor_num_elements(sh), SM_MAX_RANK);
  int64_t dims[SM_MAX_RANK];
  for (int i = 0; i < R; i++)
    if ((dims[i] = sm__array_int_at(sh, i)) < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "StridedSliceGrad: shape[%d] is negative: %lld", i, (long long)dims[i]);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(dy), R, dims, &out);
  if (s) return s;
  ss_plan p;
  s = ss_validate(state, out, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), &p);
  if (s) return s;
  int same = sm_tensor_rank(dy) == p.final_rank;
  for (int i = 0; same && i < p.final_rank; i++) same = sm_tensor_dims(dy)[i] == p.final[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "shape of dy was %s instead of %s", sm__array_shape_str(dy, a, sizeof a),
                         sm_shape_str(p.final_rank, p.final, b, sizeof b));
  if (sm_tensor_num_elements(dy) == 0) return NULL;
  int64_t out_str[SM_MAX_RANK], dy_str[SM_MAX_RANK], dst_str[SM_MAX_RANK], off = 0;
  sm__array_strides(p.rank, dims, out_str);
  sm__array_strides(p.rank, p.proc, dy_str);
  for (int i = 0; i < p.rank; i++) {
    off += p.begin[i] * out_str[i];
    dst_str[i] = p.stride[i] * out_str[i];
  }
  return sm__array_strided_copy(out, off, dst_str, dy, 0, dy_str, p.rank, p.proc);
}
