/* array_shape.c - kernels that change or report a shape, or make a tensor from one: Reshape,
 * Squeeze, ExpandDims (views, no copy), Shape, ShapeN, Size, Rank, Fill, ZerosLike, OnesLike,
 * Range, BroadcastArgs, BroadcastGradientArgs. Error texts follow TensorFlow's kernels (reshape_op.h,
 * shape_ops.h, sequence_ops.cc, bcast_ops.cc) so
 * messages read the same as TF's. Spec: shared/spec/ops.md §3.9. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"

/* ---- Reshape -------------------------------------------------------------------------------- */

sm_status *sm__array_compute_reshape(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *sizes = sm__kctx_input(ctx, 1);
  int64_t dims[SM_MAX_RANK], n;
  char a[256];
  if (sm_tensor_rank(sizes) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "sizes input must be 1-D, not %s", sm__array_shape_str(sizes, a, sizeof a));
  sm_status *s = sm__array_read_ints(sizes, "Reshape shape", dims, SM_MAX_RANK, &n);
  if (s) return s;
  /* TF: zero sizes do not enter the product, so a -1 next to a 0 can still be inferred from the
   * input's non-zero dims ([0,3] -> [-1,0] is [3,0]). */
  int64_t product = 1;
  int unknown = -1, zero_in_sizes = 0;
  for (int d = 0; d < n; d++) {
    if (dims[d] == -1) {
      if (unknown != -1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Only one input size may be -1, not both %d and %d", unknown, d);
      unknown = d;
    } else if (dims[d] < 0) {
      return sm_status_new(SM_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", d, (long long)dims[d]);
    } else if (dims[d] == 0) {
      zero_in_sizes = 1;
    } else if (__builtin_mul_overflow(product, dims[d], &product)) {
      return sm_status_new(SM_INVALID_ARGUMENT, "Reshape: the requested shape's element count overflows");
    }
  }
  int64_t nin = sm_tensor_num_elements(x);
  if (unknown != -1) {
    int64_t in_elems = 1;
    int input_has_zero = 0;
    for (int d = 0; d < sm_tensor_rank(x); d++) {
      int64_t k = sm_tensor_dims(x)[d];
      if (k > 0 || !zero_in_sizes)
        in_elems *= k;
      else
        input_has_zero = 1;
    }
    int64_t missing = in_elems / product;
    if (!input_has_zero && product * missing != in_elems)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Input to reshape is a tensor with %lld values, but the requested shape requires a multiple of %lld",
                           (long long)in_elems, (long long)product);
    dims[unknown] = missing;
  }
  int64_t nout = 1;
  for (int d = 0; d < n; d++)
    if (__builtin_mul_overflow(nout, dims[d], &nout))
      return sm_status_new(SM_INVALID_ARGUMENT, "Reshape: the requested shape's element count overflows");
  if (nout != nin)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the requested shape has %lld",
                         (long long)nin, (long long)nout);
  sm_tensor *out;
  s = sm_tensor_view((sm_tensor *)x, (int)n, dims, &out);
  if (s) return s;
  sm__kctx_set_output(ctx, 0, out);
  return NULL;
}

/* ---- Squeeze -------------------------------------------------------------------------------- */

typedef struct {
  int n;
  int64_t dims[];
} squeeze_state;

sm_status *sm__array_prepare_squeeze(const sm_node *node, void **state) {
  const int64_t *v = NULL;
  size_t count = 0;
  sm_status *s = sm__node_attr_ints(node, "squeeze_dims", &v, &count);
  if (s) {
    sm_status_free(s);
    count = 0;
  }
  if (count > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "squeeze_dims lists %zu dims", count);
  squeeze_state *st = malloc(sizeof *st + (count ? count : 1) * sizeof(int64_t));
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->n = (int)count;
  if (count) memcpy(st->dims, v, count * sizeof *v);
  *state = st;
  return NULL;
}

sm_status *sm__array_compute_squeeze(const void *state, sm_kctx *ctx) {
  const squeeze_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int drop[SM_MAX_RANK] = {0};
  for (int i = 0; i < st->n; i++) {
    int64_t d = st->dims[i];
    if (d < -rank || d >= rank)
      return sm_status_new(SM_INVALID_ARGUMENT, "Tried to squeeze dim index %lld for tensor with %d dimensions.",
                           (long long)d, rank);
    if (d < 0) d += rank;
    if (xd[d] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Can not squeeze dim[%lld], expected a dimension of 1, got %lld",
                           (long long)d, (long long)xd[d]);
    drop[d] = 1;
  }
  int64_t dims[SM_MAX_RANK];
  int n = 0;
  for (int i = 0; i < rank; i++) {
    if (st->n ? drop[i] : xd[i] == 1) continue;
    dims[n++] = xd[i];
  }
  sm_tensor *out;
  sm_status *s = sm_tensor_view((sm_tensor *)x, n, dims, &out);
  if (s) return s;
  sm__kctx_set_output(ctx, 0, out);
  return NULL;
}

/* ---- ExpandDims ----------------------------------------------------------------------------- */

sm_status *sm__array_compute_expand_dims(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *dim = sm__kctx_input(ctx, 1);
  char a[256];
  if (sm_tensor_num_elements(dim) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "'dim' must be a tensor with a single value, got %s",
                         sm__array_shape_str(dim, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(dim)))
    return sm_status_new(SM_INVALID_ARGUMENT, "'dim' must be int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(dim)));
  int rank = sm_tensor_rank(x);
  int64_t d = sm__array_int_at(dim, 0);
  if (d < -1 - rank || d > rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tried to expand dim index %lld for tensor with %d dimensions.",
                         (long long)d, rank);
  if (rank >= SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "ExpandDims: rank %d is the most this library allows", rank);
  if (d < 0) d += rank + 1;
  int64_t dims[SM_MAX_RANK];
  for (int i = 0, j = 0; i <= rank; i++) dims[i] = i == d ? 1 : sm_tensor_dims(x)[j++];
  sm_tensor *out;
  sm_status *s = sm_tensor_view((sm_tensor *)x, rank + 1, dims, &out);
  if (s) return s;
  sm__kctx_set_output(ctx, 0, out);
  return NULL;
}

/* ---- Shape, ShapeN, Size, Rank ---------------------------------------------------------------- */

static sm_status *put_int(sm_tensor *t, int64_t i, int64_t v) {
  if (sm_tensor_dtype(t) == SM_INT64) {
    ((int64_t *)sm_tensor_data(t))[i] = v;
    return NULL;
  }
  if (sm_tensor_dtype(t) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "out_type must be int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(t)));
  if (v > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "value %lld is too large for an int32 output; use out_type int64", (long long)v);
  ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
  return NULL;
}

static sm_status *shape_of(sm_kctx *ctx, int in, int outi) {
  const sm_tensor *x = sm__kctx_input(ctx, in);
  int64_t r = sm_tensor_rank(x);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, outi, sm__node_output_dtype(sm__kctx_node(ctx), outi), 1, &r, &out);
  for (int i = 0; !s && i < r; i++) s = put_int(out, i, sm_tensor_dims(x)[i]);
  return s;
}

sm_status *sm__array_compute_shape(const void *state, sm_kctx *ctx) {
  (void)state;
  return shape_of(ctx, 0, 0);
}

sm_status *sm__array_compute_shape_n(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_status *s = NULL;
  for (int i = 0; !s && i < sm__kctx_num_inputs(ctx) && i < sm__kctx_num_outputs(ctx); i++) s = shape_of(ctx, i, i);
  return s;
}

sm_status *sm__array_compute_size(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sm__node_output_dtype(sm__kctx_node(ctx), 0), 0, NULL, &out);
  return s ? s : put_int(out, 0, sm_tensor_num_elements(sm__kctx_input(ctx, 0)));
}

sm_status *sm__array_compute_rank(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out);
  return s ? s : put_int(out, 0, sm_tensor_rank(sm__kctx_input(ctx, 0)));
}

/* ---- Fill, ZerosLike, OnesLike ---------------------------------------------------------------- */

sm_status *sm__array_compute_fill(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *dims_t = sm__kctx_input(ctx, 0), *value = sm__kctx_input(ctx, 1);
  char a[256];
  if (sm_tensor_rank(dims_t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "dims must represent a vector, got shape %s", sm__array_shape_str(dims_t, a, sizeof a));
  if (sm_tensor_rank(value) > 1 || sm_tensor_num_elements(value) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "value must be a scalar, got shape %s", sm__array_shape_str(value, a, sizeof a));
  int64_t dims[SM_MAX_RANK], n;
  sm_status *s = sm__array_read_ints(dims_t, "Fill dims", dims, SM_MAX_RANK, &n);
  if (s) return s;
  for (int i = 0; i < n; i++)
    if (dims[i] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)dims[i]);
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(value), (int)n, dims, &out);
  return s ? s : sm__array_fill(out, value);
}

sm_status *sm__array_compute_zeros_like(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_tensor *out;
  return sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), sm_tensor_rank(x), sm_tensor_dims(x), &out);
}

sm_status *sm__array_compute_ones_like(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  unsigned char one[16] = {0};
  switch (dt) {
  case SM_FLOAT: { float v = 1; memcpy(one, &v, 4); break; }
  case SM_DOUBLE: { double v = 1; memcpy(one, &v, 8); break; }
  case SM_COMPLEX64: { float v = 1; memcpy(one, &v, 4); break; }
  case SM_COMPLEX128: { double v = 1; memcpy(one, &v, 8); break; }
  case SM_HALF: { uint16_t v = 0x3c00; memcpy(one, &v, 2); break; }
  case SM_BFLOAT16: { uint16_t v = 0x3f80; memcpy(one, &v, 2); break; }
  case SM_BOOL: case SM_INT8: case SM_UINT8: case SM_INT16: case SM_UINT16: case SM_INT32: case SM_UINT32:
  case SM_INT64: case SM_UINT64: one[0] = 1; break; /* little-endian */
  default:
    return sm_status_new(SM_INVALID_ARGUMENT, "OnesLike is not defined for %s", sm__array_dtype_str(dt));
  }
  sm_tensor *out, *v;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(x), sm_tensor_dims(x), &out);
  if (s) return s;
  s = sm_tensor_wrap(dt, 0, NULL, one, sm_dtype_size(dt), NULL, NULL, &v);
  if (s) return s;
  s = sm__array_fill(out, v);
  sm_tensor_free(v);
  return s;
}

/* ---- Range ---------------------------------------------------------------------------------- */

static int scalar_like(const sm_tensor *t) {
  return sm_tensor_rank(t) == 0 || (sm_tensor_rank(t) == 1 && sm_tensor_dims(t)[0] == 1);
}

/* bfloat16 <-> float (round to nearest even; NaN stays NaN), for Range's bfloat16 arithmetic. */
static float bf16_f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static float bf(float f) { return bf16_f(f_bf16(f)); } /* f rounded to bfloat16 */

static double real_at(const sm_tensor *t) {
  if (sm_tensor_dtype(t) == SM_BFLOAT16) return bf16_f(((const uint16_t *)sm_tensor_data(t))[0]);
  return sm_tensor_dtype(t) == SM_FLOAT ? ((const float *)sm_tensor_data(t))[0] : ((const double *)sm_tensor_data(t))[0];
}

/* TF prints floats in messages with the shortest round-trip text. */
static const char *num_str(const sm_tensor *t, char *buf, size_t cap) {
  int dt = sm_tensor_dtype(t);
  if (sm__array_is_int(dt)) {
    snprintf(buf, cap, "%lld", (long long)sm__array_int_at(t, 0));
    return buf;
  }
  double v = real_at(t);
  for (int p = dt == SM_FLOAT ? 6 : 15; p <= 17; p++) {
    snprintf(buf, cap, "%.*g", p, v);
    if (dt == SM_FLOAT ? (float)strtod(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
  }
  return buf;
}

sm_status *sm__array_compute_range(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in[3] = {sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2)};
  static const char *const names[3] = {"start", "limit", "delta"};
  char a[256], b[64], c[64];
  int dt = sm_tensor_dtype(in[0]);
  for (int i = 0; i < 3; i++) {
    if (!scalar_like(in[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar, not shape %s", names[i],
                           sm__array_shape_str(in[i], a, sizeof a));
    if (sm_tensor_dtype(in[i]) != dt)
      return sm_status_new(SM_INVALID_ARGUMENT, "Range inputs must share one dtype (%s vs %s)", sm__array_dtype_str(dt),
                           sm__array_dtype_str(sm_tensor_dtype(in[i])));
  }
  int is_int = dt == SM_INT32 || dt == SM_INT64;
  if (!is_int && dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_BFLOAT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "Range is not defined for %s", sm__array_dtype_str(dt));
  int sign;
  if (is_int) {
    int64_t d = sm__array_int_at(in[2], 0);
    sign = d > 0 ? 1 : d < 0 ? -1 : 0;
  } else {
    double d = real_at(in[2]);
    sign = d > 0 ? 1 : d < 0 ? -1 : 0; /* NaN: 0, refused below like a zero delta */
  }
  if (sign == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Requires delta != 0: %s", num_str(in[2], b, sizeof b));
  int ordered = is_int ? (sign > 0 ? sm__array_int_at(in[0], 0) <= sm__array_int_at(in[1], 0)
                                   : sm__array_int_at(in[0], 0) >= sm__array_int_at(in[1], 0))
                       : (sign > 0 ? real_at(in[0]) <= real_at(in[1]) : real_at(in[0]) >= real_at(in[1]));
  if (!ordered)
    return sm_status_new(SM_INVALID_ARGUMENT, "Requires start %s limit when delta %s 0: %s/%s", sign > 0 ? "<=" : ">=",
                         sign > 0 ? ">" : "<", num_str(in[0], b, sizeof b), num_str(in[1], c, sizeof c));
  int64_t size;
  if (is_int) {
    /* In the dtype's own width, like TF (int32 wraps the same way). */
    int64_t st = sm__array_int_at(in[0], 0), li = sm__array_int_at(in[1], 0), de = sm__array_int_at(in[2], 0);
    uint64_t span = st <= li ? (uint64_t)li - (uint64_t)st : (uint64_t)st - (uint64_t)li;
    uint64_t ad = de < 0 ? (uint64_t)0 - (uint64_t)de : (uint64_t)de;
    size = (int64_t)(span / ad + (span % ad != 0));
  } else {
    double sz;
    if (dt == SM_FLOAT) {
      float st = (float)real_at(in[0]), li = (float)real_at(in[1]), de = (float)real_at(in[2]);
      sz = ceilf(fabsf((li - st) / de));
    } else if (dt == SM_BFLOAT16) { /* each step rounded to bfloat16, as Eigen's bfloat16 arithmetic */
      float st = (float)real_at(in[0]), li = (float)real_at(in[1]), de = (float)real_at(in[2]);
      sz = bf(ceilf(fabsf(bf(bf(li - st) / de))));
    } else {
      sz = ceil(fabs((real_at(in[1]) - real_at(in[0])) / real_at(in[2])));
    }
    if (!(sz >= 0) || sz > 9.2e18)
      return sm_status_new(SM_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= 9223372036854775807");
    size = (int64_t)sz;
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, 1, &size, &out);
  if (s) return s;
  void *p = sm_tensor_data(out);
  /* start + i * delta in the dtype, as TF 2.21 computes it (not accumulated), so float results
   * match bit for bit. */
  switch (dt) {
  case SM_INT32: {
    uint32_t v = (uint32_t)sm__array_int_at(in[0], 0), d = (uint32_t)sm__array_int_at(in[2], 0);
    for (int64_t i = 0; i < size; i++, v += d) ((int32_t *)p)[i] = (int32_t)v;
    break;
  }
  case SM_INT64: {
    uint64_t v = (uint64_t)sm__array_int_at(in[0], 0), d = (uint64_t)sm__array_int_at(in[2], 0);
    for (int64_t i = 0; i < size; i++, v += d) ((int64_t *)p)[i] = (int64_t)v;
    break;
  }
  case SM_FLOAT: {
    float st = (float)real_at(in[0]), d = (float)real_at(in[2]);
    for (int64_t i = 0; i < size; i++) ((float *)p)[i] = st + (float)i * d;
    break;
  }
  case SM_BFLOAT16: { /* Keras's RandomErasing, RandomGaussianBlur, ... under mixed_bfloat16 */
    float st = (float)real_at(in[0]), d = (float)real_at(in[2]);
    for (int64_t i = 0; i < size; i++) ((uint16_t *)p)[i] = f_bf16(st + bf(bf((float)i) * d));
    break;
  }
  default: {
    double st = real_at(in[0]), d = real_at(in[2]);
    for (int64_t i = 0; i < size; i++) ((double *)p)[i] = st + (double)i * d;
    break;
  }
  }
  return NULL;
}

/* ---- BroadcastArgs, BroadcastGradientArgs ----------------------------------------------------- */

/* The two shape vectors (inputs 0, 1) and their broadcast shape, right-aligned: a[i], b[i] are the
 * dims at output axis i (1 where a shape is shorter). Messages as TF's BCastArgsOp. */
static sm_status *bcast_shapes(sm_kctx *ctx, int64_t *a, int64_t *b, int64_t *out, int64_t *rank) {
  int64_t s[2][SM_MAX_RANK], n[2];
  char x[256], y[256];
  for (int k = 0; k < 2; k++) {
    const sm_tensor *t = sm__kctx_input(ctx, k);
    if (sm_tensor_rank(t) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "In[%d] must be a vector.%s", k, sm__array_shape_str(t, x, sizeof x));
    sm_status *st = sm__array_read_ints(t, "broadcast shape", s[k], SM_MAX_RANK, &n[k]);
    if (st) return st;
  }
  int64_t r = n[0] > n[1] ? n[0] : n[1];
  for (int64_t i = 0; i < r; i++) {
    a[i] = i < r - n[0] ? 1 : s[0][i - (r - n[0])];
    b[i] = i < r - n[1] ? 1 : s[1][i - (r - n[1])];
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", sm_shape_str((int)n[0], s[0], x, sizeof x),
                           sm_shape_str((int)n[1], s[1], y, sizeof y));
    out[i] = a[i] == 1 ? b[i] : a[i];
  }
  *rank = r;
  return NULL;
}

sm_status *sm__array_compute_broadcast_args(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t a[SM_MAX_RANK], b[SM_MAX_RANK], o[SM_MAX_RANK], r;
  sm_status *s = bcast_shapes(ctx, a, b, o, &r);
  sm_tensor *out;
  if (!s) s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(sm__kctx_input(ctx, 0)), 1, &r, &out);
  for (int64_t i = 0; !s && i < r; i++) s = put_int(out, i, o[i]);
  return s;
}

/* r0, r1: the output axes each input's gradient is summed over (where its dim is 1 and the output's
 * is not, or where every dim is 1), ascending. */
sm_status *sm__array_compute_broadcast_gradient_args(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t d[2][SM_MAX_RANK], o[SM_MAX_RANK], r;
  sm_status *s = bcast_shapes(ctx, d[0], d[1], o, &r);
  for (int k = 0; !s && k < 2; k++) {
    int64_t idx[SM_MAX_RANK], n = 0;
    for (int64_t i = 0; i < r; i++)
      if (d[k][i] == 1 && (o[i] != 1 || d[1 - k][i] == 1)) idx[n++] = i;
    sm_tensor *out;
    s = sm__kctx_alloc_output(ctx, k, sm_tensor_dtype(sm__kctx_input(ctx, 0)), 1, &n, &out);
    for (int64_t i = 0; !s && i < n; i++) s = put_int(out, i, idx[i]);
  }
  return s;
}
