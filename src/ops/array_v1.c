/* array_v1.c - the array ops of tf.raw_ops that TF1 graphs and a few public functions still leave
 * behind: Reverse (the V1 form: one bool per dimension), SpaceToBatch / BatchToSpace (V1: 4-D
 * input, one block_size attr), InplaceAdd / InplaceSub / InplaceUpdate (rows of x at indices i
 * combined with v; an index outside x is a clear error where TF's kernel writes out of bounds),
 * DataFormatDimMap and DataFormatVecPermute (tf.nn's layout helpers, 4- and 5-letter formats,
 * spatial-only inputs) and ParallelConcat (tf.raw_ops / tf.parallel_stack). Every dtype TF's CPU
 * kernels register, TF's messages for bad input (inplace_ops.cc, reverse_op.cc,
 * spacetobatch_op.cc, batchtospace_op.cc, data_format_ops.cc). Checked against TensorFlow by
 * tests/unit/test_ops_e6.c (tools/gen_e6_cases.py). */
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

/* ---- Reverse --------------------------------------------------------------------------------- */

static sm_status *reverse_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *dims = sm__kctx_input(ctx, 1);
  int r = sm_tensor_rank(x);
  if (sm_tensor_rank(dims) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "'dims' must be 1-dimension, not %d", sm_tensor_rank(dims));
  if (sm_tensor_dims(dims)[0] != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "'dims' must have the same number of values as 'input' has dimensions. "
                         "'input' has %d'dims' has %lld values", r, (long long)sm_tensor_dims(dims)[0]);
  if (sm_tensor_dtype(dims) != SM_BOOL) return sm_status_new(SM_INVALID_ARGUMENT, "Reverse: dims must be bool");
  const int64_t *d = sm_tensor_dims(x);
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), r, d, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  int64_t dstr[SM_MAX_RANK], sstr[SM_MAX_RANK], soff = 0;
  sm__array_strides(r, d, dstr);
  const uint8_t *rev = sm_tensor_data(dims);
  for (int i = 0; i < r; i++) {
    sstr[i] = rev[i] ? -dstr[i] : dstr[i];
    if (rev[i]) soff += (d[i] - 1) * dstr[i];
  }
  return sm__array_strided_copy(out, 0, dstr, x, soff, sstr, r, d);
}

/* ---- SpaceToBatch, BatchToSpace (V1) --------------------------------------------------------- */

static sm_status *block_prepare(const sm_node *node, void **state) {
  int64_t b = 0;
  sm_status *st = sm__node_attr_int(node, "block_size", &b);
  if (st) return st;
  if (b < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: block_size must be at least 2, got %lld", sm__node_op(node), (long long)b);
  *state = (void *)(intptr_t)b;
  return NULL;
}

/* input [batch, h, w, depth] and paddings / crops [2, 2] (int32 or int64) */
static sm_status *read_v1(const sm_tensor *x, const sm_tensor *pt, const char *pname, int64_t (*pad)[2]) {
  char a[64];
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input rank should be: 4instead of: %d", sm_tensor_rank(x));
  if (sm_tensor_rank(pt) != 2 || sm_tensor_dims(pt)[0] != 2 || sm_tensor_dims(pt)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s should have shape [2, 2] instead of %s", pname,
                         sm__array_shape_str(pt, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(pt))) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be int32 or int64", pname);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      pad[i][j] = sm__array_int_at(pt, 2 * i + j);
      if (pad[i][j] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s must be non-negative", pname[0] == 'p' ? "Paddings" : "Crops");
    }
  return NULL;
}

static sm_status *space_to_batch_compute(const void *state, sm_kctx *ctx) {
  int64_t b = (intptr_t)state, block[2] = {b, b}, pad[2][2];
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_status *st = read_v1(x, sm__kctx_input(ctx, 1), "paddings", pad);
  if (st) return st;
  const int64_t *xd = sm_tensor_dims(x);
  int64_t od[4] = {0, 0, 0, xd[3]};
  for (int i = 0; i < 2; i++) {
    int64_t padded = xd[1 + i] + pad[i][0] + pad[i][1];
    if (padded % b)
      return sm_status_new(SM_INVALID_ARGUMENT, "padded_shape[%d]=%lld is not divisible by block_shape[%d]=%lld", i,
                           (long long)padded, i, (long long)b);
    od[1 + i] = padded / b;
  }
  if (__builtin_mul_overflow(xd[0], b * b, &od[0])) return sm_status_new(SM_INVALID_ARGUMENT, "SpaceToBatch: output batch overflows");
  sm_tensor *out;
  st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), 4, od, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  return sm__array_space_batch_walk(x, out, out, 1, 2, block, pad);
}

static sm_status *batch_to_space_compute(const void *state, sm_kctx *ctx) {
  int64_t b = (intptr_t)state, block[2] = {b, b}, crop[2][2];
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_status *st = read_v1(x, sm__kctx_input(ctx, 1), "crops", crop);
  if (st) return st;
  const int64_t *xd = sm_tensor_dims(x);
  if (xd[0] % (b * b))
    return sm_status_new(SM_INVALID_ARGUMENT, "Input batch dimension (%lld) is not divisible by product of block sizes (%lld)",
                         (long long)xd[0], (long long)(b * b));
  int64_t od[4] = {xd[0] / (b * b), 0, 0, xd[3]};
  for (int i = 0; i < 2; i++) {
    int64_t full;
    if (__builtin_mul_overflow(xd[1 + i], b, &full)) return sm_status_new(SM_INVALID_ARGUMENT, "BatchToSpace: output overflows");
    od[1 + i] = full - crop[i][0] - crop[i][1];
    if (od[1 + i] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "cropped_shape[%d]=%lld must be non-negative", i, (long long)od[1 + i]);
  }
  sm_tensor *out;
  st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), 4, od, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  return sm__array_space_batch_walk(out, x, out, 0, 2, block, crop);
}

/* ---- InplaceAdd, InplaceSub, InplaceUpdate ---------------------------------------------------- */

enum { IP_ADD, IP_SUB, IP_UPDATE };

static sm_status *inplace_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  *state = (void *)(intptr_t)(!strcmp(op, "InplaceAdd") ? IP_ADD : !strcmp(op, "InplaceSub") ? IP_SUB : IP_UPDATE);
  return NULL;
}

/* y[0..n) op= v[0..n) in y's dtype (half and bfloat16 through float, as Eigen's operators) */
static sm_status *combine(void *y, const void *v, int dt, int64_t n, int sub) {
#define IP_LOOP(T)                                                                                                    \
  for (int64_t k = 0; k < n; k++) ((T *)y)[k] = sub ? (T)(((T *)y)[k] - ((const T *)v)[k]) : (T)(((T *)y)[k] + ((const T *)v)[k]); \
  break;
  switch (dt) {
  case SM_FLOAT: IP_LOOP(float)
  case SM_DOUBLE: IP_LOOP(double)
  case SM_INT8: IP_LOOP(int8_t)
  case SM_UINT8: IP_LOOP(uint8_t)
  case SM_INT16: IP_LOOP(int16_t)
  case SM_UINT16: IP_LOOP(uint16_t)
  case SM_INT32: IP_LOOP(uint32_t) /* wraps, as TF's two's complement arithmetic */
  case SM_UINT32: IP_LOOP(uint32_t)
  case SM_INT64: IP_LOOP(uint64_t)
  case SM_UINT64: IP_LOOP(uint64_t)
  case SM_COMPLEX64: n *= 2; IP_LOOP(float)
  case SM_COMPLEX128: n *= 2; IP_LOOP(double)
  case SM_HALF:
  case SM_BFLOAT16:
    for (int64_t k = 0; k < n; k++) {
      uint16_t *p = (uint16_t *)y + k, q = ((const uint16_t *)v)[k];
      float a = dt == SM_HALF ? sm__half_to_f32(*p) : sm__bf16_to_f32(*p);
      float b = dt == SM_HALF ? sm__half_to_f32(q) : sm__bf16_to_f32(q);
      float c = sub ? a - b : a + b;
      *p = dt == SM_HALF ? sm__f32_to_half(c) : sm__f32_to_bf16(c);
    }
    break;
  default: return sm_status_new(SM_INVALID_ARGUMENT, "%s is not supported by InplaceAdd / InplaceSub", sm__array_dtype_str(dt));
  }
#undef IP_LOOP
  return NULL;
}

static sm_status *inplace_compute(const void *state, sm_kctx *ctx) {
  int kind = (int)(intptr_t)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *it = sm__kctx_input(ctx, 1), *v = sm__kctx_input(ctx, 2);
  char a[128], b[128];
  if (sm_tensor_rank(it) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "i must be a vector. %s", sm__array_shape_str(it, a, sizeof a));
  int r = sm_tensor_rank(x);
  if (r != sm_tensor_rank(v))
    return sm_status_new(SM_INVALID_ARGUMENT, "x and v shape doesn't match (ranks differ): %s vs. %s",
                         sm__array_shape_str(x, a, sizeof a), sm__array_shape_str(v, b, sizeof b));
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "x must be at least 1-D, got shape []");
  const int64_t *xd = sm_tensor_dims(x), *vd = sm_tensor_dims(v);
  for (int k = 1; k < r; k++)
    if (xd[k] != vd[k])
      return sm_status_new(SM_INVALID_ARGUMENT, "x and v shape doesn't match at index %d : %s vs. %s", k,
                           sm__array_shape_str(x, a, sizeof a), sm__array_shape_str(v, b, sizeof b));
  if (sm_tensor_dims(it)[0] != vd[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "i and x shape doesn't match at index 0: %s vs. %s",
                         sm__array_shape_str(it, a, sizeof a), sm__array_shape_str(v, b, sizeof b));
  if (sm_tensor_dtype(x) != sm_tensor_dtype(v) || !sm__array_is_int(sm_tensor_dtype(it)))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: x and v must have one dtype and i must be int32", sm__node_op(sm__kctx_node(ctx)));
  int64_t m = vd[0], row = 1;
  for (int k = 1; k < r; k++) row *= xd[k];
  for (int64_t j = 0; j < m; j++) {
    int64_t i = sm__array_int_at(it, j);
    if (i < 0 || i >= xd[0])
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: i[%lld] = %lld is not in [0, %lld)", sm__node_op(sm__kctx_node(ctx)),
                           (long long)j, (long long)i, (long long)xd[0]);
  }
  int dt = sm_tensor_dtype(x);
  if (kind != IP_UPDATE && (dt == SM_STRING || dt == SM_BOOL || !sm__array_esize(dt)))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s is not supported by %s", sm__array_dtype_str(dt), sm__node_op(sm__kctx_node(ctx)));
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r, xd, &y);
  if (!st) st = sm__array_copy(y, 0, x, 0, sm_tensor_num_elements(x));
  if (st || row == 0) return st;
  size_t es = sm__array_esize(dt);
  for (int64_t j = 0; j < m && !st; j++) {
    int64_t i = sm__array_int_at(it, j);
    if (kind == IP_UPDATE) st = sm__array_copy(y, i * row, v, j * row, row);
    else st = combine((char *)sm_tensor_data(y) + (size_t)(i * row) * es, (const char *)sm_tensor_data(v) + (size_t)(j * row) * es,
                      dt, row, kind == IP_SUB);
  }
  return st;
}

/* ---- DataFormatDimMap, DataFormatVecPermute --------------------------------------------------- */

typedef struct fmt_state {
  char src[8], dst[8];
  int n;
} fmt_state;

static sm_status *fmt_prepare(const sm_node *node, void **state) {
  fmt_state s = {{0}, {0}, 0};
  const char *names[2] = {"src_format", "dst_format"}, *defs[2] = {"NHWC", "NCHW"};
  char *outs[2] = {s.src, s.dst};
  size_t len[2];
  for (int k = 0; k < 2; k++) {
    const char *v = defs[k];
    len[k] = strlen(v);
    if (sm__node_attr(node, names[k])) {
      sm_status *st = sm__node_attr_string(node, names[k], &v, &len[k]);
      if (st) return st;
    }
    size_t c = len[k] < 7 ? len[k] : 7;
    memcpy(outs[k], v, c);
    outs[k][c] = 0;
  }
  int ok = len[0] == len[1] && (len[0] == 4 || len[0] == 5);
  for (size_t i = 0; ok && i < len[0]; i++) ok = strchr(s.dst, s.src[i]) && strchr(s.src, s.dst[i]) && s.src[i];
  if (!ok)
    return sm_status_new(SM_INVALID_ARGUMENT, "Destination and source format must determine a permutation, got %s and %s",
                         s.src, s.dst);
  s.n = (int)len[0];
  fmt_state *p = malloc(sizeof *p);
  if (!p) return oom();
  *p = s;
  *state = p;
  return NULL;
}

static int64_t int_get(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT64 ? ((const int64_t *)sm_tensor_data(t))[i] : ((const int32_t *)sm_tensor_data(t))[i];
}
static void int_put(sm_tensor *t, int64_t i, int64_t v) {
  if (sm_tensor_dtype(t) == SM_INT64) ((int64_t *)sm_tensor_data(t))[i] = v;
  else ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
}

static sm_status *dim_map_compute(const void *state, sm_kctx *ctx) {
  const fmt_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_INT32 && dt != SM_INT64) return sm__math_bad_dtype("DataFormatDimMap", dt);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
    int64_t v = int_get(x, i) % s->n;
    if (v < 0) v += s->n;
    int_put(y, i, strchr(s->dst, s->src[v]) - s->dst);
  }
  return NULL;
}

static sm_status *vec_permute_compute(const void *state, sm_kctx *ctx) {
  const fmt_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  char a[64];
  if (dt != SM_INT32 && dt != SM_INT64) return sm__math_bad_dtype("DataFormatVecPermute", dt);
  if (r != 1 && r != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a vector or 2D tensor, but got shape %s", sm__array_shape_str(x, a, sizeof a));
  int64_t n0 = sm_tensor_dims(x)[0], full = s->n, spatial = s->n - 2;
  if (r == 1 && n0 != spatial && n0 != full)
    return sm_status_new(SM_INVALID_ARGUMENT, "1D input must be of size %lld or %lld, but got shape %s", (long long)spatial,
                         (long long)full, sm__array_shape_str(x, a, sizeof a));
  if (r == 2 && n0 != spatial && n0 != full)
    return sm_status_new(SM_INVALID_ARGUMENT, "First dimension of 2D input must be of size %lld or %lld, but got shape %s",
                         (long long)spatial, (long long)full, sm__array_shape_str(x, a, sizeof a));
  if (r == 2 && sm_tensor_dims(x)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Second dimension of 2D input must be of size 2, but got shape %s",
                         sm__array_shape_str(x, a, sizeof a));
  char src[8], dst[8];
  int m = 0, k = 0;
  for (int i = 0; i < s->n; i++) { /* spatial only: the formats without N and C */
    if (n0 == full || (s->src[i] != 'N' && s->src[i] != 'C')) src[m++] = s->src[i];
    if (n0 == full || (s->dst[i] != 'N' && s->dst[i] != 'C')) dst[k++] = s->dst[i];
  }
  src[m] = dst[k] = 0;
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t w = r == 2 ? 2 : 1;
  for (int i = 0; i < k; i++) {
    int64_t from = strchr(src, dst[i]) - src;
    for (int64_t c = 0; c < w; c++) int_put(y, i * w + c, int_get(x, from * w + c));
  }
  return NULL;
}

/* ---- ParallelConcat --------------------------------------------------------------------------- */

typedef struct pc_state {
  int rank;
  int64_t dims[SM_MAX_RANK];
} pc_state;

static sm_status *pc_prepare(const sm_node *node, void **state) {
  pc_state s;
  sm_status *st = sm__node_attr_shape(node, "shape", &s.rank, s.dims);
  if (st) return st;
  pc_state *p = malloc(sizeof *p);
  if (!p) return oom();
  *p = s;
  *state = p;
  return NULL;
}

static sm_status *pc_compute(const void *state, sm_kctx *ctx) {
  const pc_state *s = state;
  int n = sm__kctx_num_inputs(ctx);
  const sm_tensor *v0 = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(v0), dt = sm_tensor_dtype(v0);
  int64_t od[SM_MAX_RANK];
  char a[128], b[128];
  if (s->rank >= 1) {
    memcpy(od, s->dims, sizeof od);
    r = s->rank;
  } else { /* shape unknown: [N, value dims after the first] */
    if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "ParallelConcat: values must be at least 1-D");
    memcpy(od, sm_tensor_dims(v0), sizeof od);
    od[0] = n;
  }
  for (int i = 0; i < r; i++)
    if (od[i] < 0)
      for (int j = 0; j < r; j++) od[j] = j ? sm_tensor_dims(v0)[j] : n;
  if (od[0] < n)
    return sm_status_new(SM_INVALID_ARGUMENT, "ParallelConcat: %d values do not fit shape[0] = %lld", n, (long long)od[0]);
  int64_t row = 1;
  for (int i = 1; i < r; i++) row *= od[i];
  for (int j = 0; j < n; j++) {
    const sm_tensor *v = sm__kctx_input(ctx, j);
    const int64_t *vd = sm_tensor_dims(v);
    if (sm_tensor_rank(v) < 1 || vd[0] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "update shape doesn't match: %s", sm__array_shape_str(v, a, sizeof a));
    int same = sm_tensor_rank(v) == r && sm_tensor_dtype(v) == dt;
    for (int i = 1; same && i < r; i++) same = vd[i] == od[i];
    if (!same)
      return sm_status_new(SM_INVALID_ARGUMENT, "value and update shape doesn't match %s vs. %s",
                           sm_shape_str(r, od, b, sizeof b), sm__array_shape_str(v, a, sizeof a));
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r, od, &y);
  for (int j = 0; j < n && !st && row; j++) st = sm__array_copy(y, j * row, sm__kctx_input(ctx, j), 0, row);
  return st;
}

const sm_kernel sm_kernels_array_v1[] = {
    {"Reverse", NULL, reverse_compute, NULL, 0},
    {"SpaceToBatch", block_prepare, space_to_batch_compute, NULL, 0},
    {"BatchToSpace", block_prepare, batch_to_space_compute, NULL, 0},
    {"InplaceAdd", inplace_prepare, inplace_compute, NULL, 0},
    {"InplaceSub", inplace_prepare, inplace_compute, NULL, 0},
    {"InplaceUpdate", inplace_prepare, inplace_compute, NULL, 0},
    {"DataFormatDimMap", fmt_prepare, dim_map_compute, free, 0},
    {"DataFormatVecPermute", fmt_prepare, vec_permute_compute, free, 0},
    {"ParallelConcat", pc_prepare, pc_compute, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
