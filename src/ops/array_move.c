/* array_move.c - kernels that rearrange whole tensors: ConcatV2, Concat, Pack, Transpose (blocked
 * 2-D fast path), Tile, Pad, PadV2, MirrorPad, ReverseV2, BroadcastTo.
 *
 * Each checks its index inputs the way TensorFlow's kernel does (same message wording, so users
 * see the errors they know) and then moves elements with the strided copier of array_util.c,
 * which handles every dtype including strings. Spec: shared/spec/ops.md §3.9. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h" /* SM_MATH_PAR_MIN, sm__parallel_for */

/* ---- ConcatV2, Concat, Pack ------------------------------------------------------------------- */

typedef struct concat_job {
  sm_kctx *ctx;
  sm_tensor *out;
  int first, n, pack;
  int64_t axis, inner, row; /* row: the output's elements per outer index */
} concat_job;

/* Outer rows [begin, end) of every input into place (not strings: their copies may fail). */
static void concat_rows(void *p, int64_t begin, int64_t end) {
  const concat_job *j = p;
  int64_t col = 0;
  for (int k = 0; k < j->n; k++) {
    const sm_tensor *x = sm__kctx_input(j->ctx, j->first + k);
    int64_t chunk = j->pack ? j->inner : sm_tensor_dims(x)[j->axis] * j->inner;
    if (chunk) {
      int64_t cd[2] = {end - begin, chunk}, ds[2] = {j->row, 1}, ss[2] = {chunk, 1};
      sm_status_free(sm__array_strided_copy(j->out, begin * j->row + col, ds, x, begin * chunk, ss, 2, cd));
    }
    col += chunk;
  }
}

/* Concatenate inputs [first, first+n) along axis (already checked against rank R); pack = 1 inserts
 * a new dimension of size n at axis instead. */
static sm_status *concat_inputs(sm_kctx *ctx, int first, int n, int64_t axis_v, int pack) {
  if (n < 1) return sm_status_new(SM_INVALID_ARGUMENT, "nothing to concatenate");
  const sm_tensor *x0 = sm__kctx_input(ctx, first);
  int R = sm_tensor_rank(x0);
  char a[256], b[256];
  int out_rank = pack ? R + 1 : R;
  int64_t axis = axis_v;
  if (pack) {
    if (axis < -out_rank || axis >= out_rank)
      return sm_status_new(SM_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)axis_v, -out_rank, out_rank);
    if (out_rank > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "Pack: rank %d is past this library's limit", out_rank);
  } else if (R == 0) {
    return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Can't concatenate scalars (use tf.stack instead)");
  } else if (axis < -R || axis >= R) {
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -R, R,
                         (long long)axis_v);
  }
  if (axis < 0) axis += out_rank;
  const int64_t *d0 = sm_tensor_dims(x0);
  int64_t total = 0;
  for (int k = 0; k < n; k++) {
    const sm_tensor *x = sm__kctx_input(ctx, first + k);
    if (sm_tensor_dtype(x) != sm_tensor_dtype(x0))
      return sm_status_new(SM_INVALID_ARGUMENT, "input %d is %s, input 0 is %s", k, sm__array_dtype_str(sm_tensor_dtype(x)),
                           sm__array_dtype_str(sm_tensor_dtype(x0)));
    if (pack) {
      int same = sm_tensor_rank(x) == R;
      for (int i = 0; same && i < R; i++) same = sm_tensor_dims(x)[i] == d0[i];
      if (!same)
        return sm_status_new(SM_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0].shape = %s != values[%d].shape = %s",
                             sm__array_shape_str(x0, a, sizeof a), k, sm__array_shape_str(x, b, sizeof b));
      total++;
      continue;
    }
    if (sm_tensor_rank(x) != R)
      return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Ranks of all input tensors should match: shape[0] = %s vs. shape[%d] = %s",
                           sm__array_shape_str(x0, a, sizeof a), k, sm__array_shape_str(x, b, sizeof b));
    for (int i = 0; i < R; i++)
      if (i != axis && sm_tensor_dims(x)[i] != d0[i])
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "ConcatOp : Dimension %d in both shapes must be equal: shape[0] = %s vs. shape[%d] = %s", i,
                             sm__array_shape_str(x0, a, sizeof a), k, sm__array_shape_str(x, b, sizeof b));
    total += sm_tensor_dims(x)[axis];
  }
  /* View every input as [outer, chunk_k]: pack's chunk is the whole tail after axis. */
  int64_t od[SM_MAX_RANK], outer = 1, inner = 1;
  for (int i = 0, j = 0; i < out_rank; i++) {
    if (i == axis) {
      od[i] = total;
      if (!pack) j++;
      continue;
    }
    od[i] = d0[j++];
  }
  for (int i = 0; i < axis; i++) outer *= od[i];
  for (int i = (int)axis + 1; i < out_rank; i++) inner *= od[i];
  sm_tensor *out;
  /* not zeroed: the inputs' chunks cover every element (DenseNet's per-layer concats paid ~2.5% of
   * a batch-16 call in the zero fill, bench/RESULTS.md) */
  sm_status *s = sm__kctx_alloc_output_uninit(ctx, 0, sm_tensor_dtype(x0), out_rank, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  int64_t row = total * inner, col = 0;
  if (sm_tensor_dtype(x0) != SM_STRING && outer > 1 && sm_tensor_num_elements(out) >= 2 * SM_MATH_PAR_MIN) {
    /* large (DenseNet's concats of every earlier feature map): bands of outer rows over the pool */
    concat_job j = {ctx, out, first, n, pack, axis, inner, row};
    int64_t grain = SM_MATH_PAR_MIN / row;
    sm__parallel_for(sm__kctx_pool(ctx), outer, grain > 0 ? grain : 1, concat_rows, &j);
    return NULL;
  }
  for (int k = 0; k < n; k++) {
    const sm_tensor *x = sm__kctx_input(ctx, first + k);
    int64_t chunk = pack ? inner : sm_tensor_dims(x)[axis] * inner;
    if (chunk) {
      int64_t cd[2] = {outer, chunk}, ds[2] = {row, 1}, ss[2] = {chunk, 1};
      s = sm__array_strided_copy(out, col, ds, x, 0, ss, 2, cd);
      if (s) return s;
    }
    col += chunk;
  }
  return NULL;
}

static sm_status *axis_scalar(const sm_tensor *t, int64_t *axis) {
  char a[128];
  if (sm_tensor_rank(t) != 0 && !(sm_tensor_rank(t) == 1 && sm_tensor_dims(t)[0] == 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat dim tensor should be a scalar, but got shape %s",
                         sm__array_shape_str(t, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(t)))
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat dim must be int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(t)));
  *axis = sm__array_int_at(t, 0);
  return NULL;
}

sm_status *sm__array_compute_concat_v2(const void *state, sm_kctx *ctx) {
  (void)state;
  int n = sm__kctx_num_inputs(ctx) - 1;
  int64_t axis;
  sm_status *s = axis_scalar(sm__kctx_input(ctx, n), &axis);
  return s ? s : concat_inputs(ctx, 0, n, axis, 0);
}

sm_status *sm__array_compute_concat(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t axis;
  sm_status *s = axis_scalar(sm__kctx_input(ctx, 0), &axis);
  return s ? s : concat_inputs(ctx, 1, sm__kctx_num_inputs(ctx) - 1, axis, 0);
}

typedef struct {
  int64_t axis;
} axis_state;

sm_status *sm__array_prepare_pack(const sm_node *node, void **state) {
  axis_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_int(node, "axis", &st->axis);
  if (s) sm_status_free(s); /* default 0 */
  *state = st;
  return NULL;
}

sm_status *sm__array_compute_pack(const void *state, sm_kctx *ctx) {
  return concat_inputs(ctx, 0, sm__kctx_num_inputs(ctx), ((const axis_state *)state)->axis, 1);
}

/* ---- Transpose ------------------------------------------------------------------------------ */

/* Cache-blocked 2-D transpose of fixed-size elements: out[c][r] = in[r][c]. */
static void transpose2d(char *out, const char *in, int64_t rows, int64_t cols, size_t es) {
  enum { B = 32 };
  for (int64_t r0 = 0; r0 < rows; r0 += B)
    for (int64_t c0 = 0; c0 < cols; c0 += B) {
      int64_t r1 = r0 + B < rows ? r0 + B : rows, c1 = c0 + B < cols ? c0 + B : cols;
      if (es == 4) {
        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++) memcpy(out + (c * rows + r) * 4, in + (r * cols + c) * 4, 4);
      } else {
        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++) memcpy(out + (size_t)(c * rows + r) * es, in + (size_t)(r * cols + c) * es, es);
      }
    }
}

sm_status *sm__array_compute_transpose(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *pt = sm__kctx_input(ctx, 1);
  int R = sm_tensor_rank(x);
  char a[128];
  if (sm_tensor_rank(pt) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "perm must be a vector, not %s", sm__array_shape_str(pt, a, sizeof a));
  if (sm_tensor_num_elements(pt) != R)
    return sm_status_new(SM_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a vector of size %lld", R,
                         (long long)sm_tensor_num_elements(pt));
  int64_t perm[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(pt, "perm", perm, SM_MAX_RANK, &n);
  if (s) return s;
  int seen[SM_MAX_RANK] = {0};
  for (int i = 0; i < R; i++) {
    if (perm[i] < 0 || perm[i] >= R)
      return sm_status_new(SM_INVALID_ARGUMENT, "%lld is out of range [0 .. %d)", (long long)perm[i], R);
    seen[perm[i]] = 1;
  }
  for (int i = 0; i < R; i++)
    if (!seen[i]) {
      char list[SM_MAX_RANK * 22 + 1];
      size_t o = 0;
      for (int k = 0; k < R; k++) o += (size_t)snprintf(list + o, sizeof list - o, "%s%lld", k ? "," : "", (long long)perm[k]);
      return sm_status_new(SM_INVALID_ARGUMENT, "%d is missing from {%s}.", i, list);
    }
  const int64_t *dims = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], in_str[SM_MAX_RANK], out_str[SM_MAX_RANK], src_str[SM_MAX_RANK];
  int identity = 1;
  for (int i = 0; i < R; i++) {
    od[i] = dims[perm[i]];
    identity &= perm[i] == i;
  }
  if (identity) {
    sm__kctx_forward(ctx, 0, 0);
    return NULL;
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  /* Dims of size 1 do not matter: if the rest are in order it is a plain copy, and when exactly
   * two groups swap it is a 2-D transpose. */
  int order[SM_MAX_RANK], m = 0;
  for (int i = 0; i < R; i++)
    if (od[i] != 1) order[m++] = (int)perm[i];
  int inorder = 1;
  for (int i = 1; i < m; i++) inorder &= order[i] > order[i - 1];
  size_t es = sm__array_esize(sm_tensor_dtype(x));
  if (inorder) return sm__array_copy(out, 0, x, 0, sm_tensor_num_elements(x));
  if (es && m == 2) {
    int64_t rows = dims[order[1]], cols = dims[order[0]];
    transpose2d(sm_tensor_data(out), sm_tensor_data(x), rows, cols, es);
    return NULL;
  }
  sm__array_strides(R, dims, in_str);
  sm__array_strides(R, od, out_str);
  for (int i = 0; i < R; i++) src_str[i] = in_str[perm[i]];
  return sm__array_strided_copy(out, 0, out_str, x, 0, src_str, R, od);
}

/* ---- Tile ----------------------------------------------------------------------------------- */

sm_status *sm__array_compute_tile(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mt = sm__kctx_input(ctx, 1);
  int R = sm_tensor_rank(x);
  char a[128];
  if (sm_tensor_rank(mt) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d but got shape %s", R,
                         sm__array_shape_str(mt, a, sizeof a));
  if (sm_tensor_num_elements(mt) != R)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected multiples argument to be a vector of length %d but got length %lld", R,
                         (long long)sm_tensor_num_elements(mt));
  int64_t mult[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(mt, "multiples", mult, SM_MAX_RANK, &n);
  if (s) return s;
  const int64_t *dims = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK];
  for (int i = 0; i < R; i++) {
    if (mult[i] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", i, (long long)mult[i]);
    if (__builtin_mul_overflow(dims[i], mult[i], &od[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "Tile: dim %d overflows (%lld x %lld)", i, (long long)dims[i], (long long)mult[i]);
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  /* Output dim i is [mult_i, dims_i]: the repeat index steps the output by dims_i rows and the
   * input not at all. */
  int64_t in_str[SM_MAX_RANK], out_str[SM_MAX_RANK];
  sm__array_strides(R, dims, in_str);
  sm__array_strides(R, od, out_str);
  int64_t cd[2 * SM_MAX_RANK], ds[2 * SM_MAX_RANK], ss[2 * SM_MAX_RANK];
  for (int i = 0; i < R; i++) {
    cd[2 * i] = mult[i];
    ds[2 * i] = dims[i] * out_str[i];
    ss[2 * i] = 0;
    cd[2 * i + 1] = dims[i];
    ds[2 * i + 1] = out_str[i];
    ss[2 * i + 1] = in_str[i];
  }
  return sm__array_strided_copy(out, 0, ds, x, 0, ss, 2 * R, cd);
}

/* ---- Pad, PadV2, MirrorPad -------------------------------------------------------------------- */

sm_status *sm__array_paddings_shape(const sm_tensor *x, const sm_tensor *pt) {
  char a[128], b[128];
  if (sm_tensor_rank(pt) != 2 || sm_tensor_dims(pt)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns: %s", sm__array_shape_str(pt, a, sizeof a));
  if (sm_tensor_dims(pt)[0] != sm_tensor_rank(x))
    return sm_status_new(SM_INVALID_ARGUMENT, "The first dimension of paddings must be the rank of inputs%s %s",
                         sm__array_shape_str(pt, a, sizeof a), sm__array_shape_str(x, b, sizeof b));
  if (!sm__array_is_int(sm_tensor_dtype(pt)))
    return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(pt)));
  return NULL;
}

static sm_status *read_paddings(const sm_tensor *x, const sm_tensor *pt, int64_t pad[][2], int64_t *od, int mirror,
                                int reflect) {
  int R = sm_tensor_rank(x);
  sm_status *st = sm__array_paddings_shape(x, pt);
  if (st) return st;
  const int64_t *dims = sm_tensor_dims(x);
  for (int i = 0; i < R; i++) {
    int64_t lo = sm__array_int_at(pt, 2 * i), hi = sm__array_int_at(pt, 2 * i + 1);
    if (lo < 0 || hi < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)lo, (long long)hi);
    if (mirror) {
      int64_t limit = reflect ? dims[i] - 1 : dims[i];
      if (lo > limit || hi > limit)
        return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be %s the dimension size: %lld, %lld %s %lld",
                             reflect ? "less than" : "no greater than", (long long)lo, (long long)hi,
                             reflect ? "not less than" : "greater than", (long long)dims[i]);
    }
    pad[i][0] = lo;
    pad[i][1] = hi;
    if (__builtin_add_overflow(dims[i], lo, &od[i]) || __builtin_add_overflow(od[i], hi, &od[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "padded dim %d overflows", i);
  }
  return NULL;
}

static sm_status *pad_common(sm_kctx *ctx, const sm_tensor *value) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int R = sm_tensor_rank(x);
  int64_t pad[SM_MAX_RANK][2], od[SM_MAX_RANK];
  sm_status *s = read_paddings(x, sm__kctx_input(ctx, 1), pad, od, 0, 0);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s) return s;
  if (value) s = sm__array_fill(out, value);
  if (s || sm_tensor_num_elements(x) == 0) return s;
  int64_t in_str[SM_MAX_RANK], out_str[SM_MAX_RANK], off = 0;
  sm__array_strides(R, sm_tensor_dims(x), in_str);
  sm__array_strides(R, od, out_str);
  for (int i = 0; i < R; i++) off += pad[i][0] * out_str[i];
  return sm__array_strided_copy(out, off, out_str, x, 0, in_str, R, sm_tensor_dims(x));
}

sm_status *sm__array_compute_pad(const void *state, sm_kctx *ctx) {
  (void)state;
  if (sm__kctx_num_inputs(ctx) < 3) return pad_common(ctx, NULL);
  const sm_tensor *v = sm__kctx_input(ctx, 2);
  char a[128];
  if (sm_tensor_rank(v) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "constant_values must be a scalar. Found: %s", sm__array_shape_str(v, a, sizeof a));
  if (sm_tensor_dtype(v) != sm_tensor_dtype(sm__kctx_input(ctx, 0)))
    return sm_status_new(SM_INVALID_ARGUMENT, "constant_values is %s, input is %s", sm__array_dtype_str(sm_tensor_dtype(v)),
                         sm__array_dtype_str(sm_tensor_dtype(sm__kctx_input(ctx, 0))));
  return pad_common(ctx, v);
}

typedef struct {
  int reflect; /* 1 REFLECT (edge not repeated), 0 SYMMETRIC */
} mirror_state;

sm_status *sm__array_prepare_mirror_pad(const sm_node *node, void **state) {
  const char *m;
  size_t len;
  sm_status *s = sm__node_attr_string(node, "mode", &m, &len);
  if (s) return s;
  int reflect;
  if (len == 7 && !memcmp(m, "REFLECT", 7))
    reflect = 1;
  else if (len == 9 && !memcmp(m, "SYMMETRIC", 9))
    reflect = 0;
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "MirrorPad mode must be REFLECT or SYMMETRIC, not '%.*s'", (int)len, m);
  mirror_state *st = malloc(sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->reflect = reflect;
  *state = st;
  return NULL;
}

sm_status *sm__array_compute_mirror_pad(const void *state, sm_kctx *ctx) {
  int reflect = ((const mirror_state *)state)->reflect;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int R = sm_tensor_rank(x);
  int64_t pad[SM_MAX_RANK][2], od[SM_MAX_RANK];
  sm_status *s = read_paddings(x, sm__kctx_input(ctx, 1), pad, od, 1, reflect);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  /* Per output dim, the input index each output index reads (as an element offset). */
  const int64_t *dims = sm_tensor_dims(x);
  int64_t in_str[SM_MAX_RANK], total = 0;
  sm__array_strides(R, dims, in_str);
  for (int i = 0; i < R; i++) total += od[i];
  int64_t *map = sm__kctx_scratch(ctx, (size_t)total * sizeof *map, &s);
  if (!map) return s;
  int64_t *mp[SM_MAX_RANK];
  int64_t at = 0, shift = reflect ? 1 : 0;
  for (int i = 0; i < R; i++) {
    mp[i] = map + at;
    at += od[i];
    for (int64_t o = 0; o < od[i]; o++) {
      int64_t k = o - pad[i][0];
      if (k < 0) k = -k - 1 + shift;
      else if (k >= dims[i]) k = 2 * dims[i] - k - 1 - shift;
      mp[i][o] = k * in_str[i];
    }
  }
  int64_t idx[SM_MAX_RANK] = {0}, n = sm_tensor_num_elements(out);
  for (int64_t e = 0; e < n && !s; e++) {
    int64_t src = 0;
    for (int i = 0; i < R; i++) src += mp[i][idx[i]];
    s = sm__array_copy(out, e, x, src, 1);
    for (int i = R - 1; i >= 0; i--) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
  sm__kctx_scratch_free(ctx, map);
  return s;
}

/* ---- ReverseV2 ------------------------------------------------------------------------------ */

sm_status *sm__array_compute_reverse_v2(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *at = sm__kctx_input(ctx, 1);
  int R = sm_tensor_rank(x);
  char a[128];
  if (sm_tensor_rank(at) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "'axis' must be 1-D, not %s", sm__array_shape_str(at, a, sizeof a));
  int64_t axes[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(at, "axis", axes, SM_MAX_RANK, &n);
  if (s) return s;
  int rev[SM_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    int64_t ax = axes[i] < 0 ? axes[i] + R : axes[i];
    if (ax < 0 || ax >= R)
      return sm_status_new(SM_INVALID_ARGUMENT, "'axis'[%d] = %lld is out of valid range [0, %d", i, (long long)axes[i], R - 1);
    if (rev[ax]) return sm_status_new(SM_INVALID_ARGUMENT, "axis %lld specified more than once.", (long long)ax);
    rev[ax] = 1;
  }
  const int64_t *dims = sm_tensor_dims(x);
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), R, dims, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  int64_t str[SM_MAX_RANK], src_str[SM_MAX_RANK], off = 0;
  sm__array_strides(R, dims, str);
  for (int i = 0; i < R; i++) {
    src_str[i] = rev[i] ? -str[i] : str[i];
    if (rev[i]) off += (dims[i] - 1) * str[i];
  }
  return sm__array_strided_copy(out, 0, str, x, off, src_str, R, dims);
}

/* ---- BroadcastTo ---------------------------------------------------------------------------- */

sm_status *sm__array_compute_broadcast_to(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *st = sm__kctx_input(ctx, 1);
  char a[256], b[256];
  if (sm_tensor_rank(st) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "shape must be 1-D, not %s", sm__array_shape_str(st, a, sizeof a));
  int64_t od[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(st, "shape", od, SM_MAX_RANK, &n);
  if (s) return s;
  int R = sm_tensor_rank(x), on = (int)n;
  const int64_t *dims = sm_tensor_dims(x);
  for (int i = 0; i < on; i++)
    if (od[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)od[i]);
  int ok = R <= on;
  for (int i = 0; ok && i < R; i++) {
    int64_t xd = dims[R - 1 - i], td = od[on - 1 - i];
    ok = xd == td || xd == 1;
  }
  if (!ok) {
    size_t o = 0;
    b[o++] = '[';
    for (int i = 0; i < on && o + 24 < sizeof b; i++) o += (size_t)snprintf(b + o, sizeof b - o, "%s%lld", i ? "," : "", (long long)od[i]);
    snprintf(b + o, sizeof b - o, "]");
    return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", sm__array_shape_str(x, a, sizeof a), b);
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), on, od, &out);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  int64_t in_str[SM_MAX_RANK], out_str[SM_MAX_RANK], src_str[SM_MAX_RANK];
  sm__array_strides(R, dims, in_str);
  sm__array_strides(on, od, out_str);
  for (int i = 0; i < on; i++) {
    int xi = i - (on - R);
    src_str[i] = xi < 0 || dims[xi] == 1 ? 0 : in_str[xi];
  }
  return sm__array_strided_copy(out, 0, out_str, x, 0, src_str, on, od);
}
