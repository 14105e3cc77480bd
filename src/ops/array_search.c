/* array_search.c - the array_search kernel family: LowerBound and UpperBound (per row of a batch
 * of sorted rows, the first index whose value is >= / > each query, as std::lower_bound /
 * upper_bound with operator<: NaN never compares) and Cross (3-vectors along the last axis), over
 * float, double, int32, int64, with TensorFlow's messages (searchsorted_op.cc, cross_op.cc).
 * keras.ops.searchsorted and keras.ops.cross export them. Checked against TensorFlow by
 * tests/unit/test_ops_linalg.c (tools/gen_linalg_cases.py). */
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h"

static double elem(const void *p, int dt, int64_t i) {
  switch (dt) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
  }
}

/* a < b for element i of p and j of q, exactly (int64 compared as integers, not as doubles). */
static int less(const void *p, int64_t i, const void *q, int64_t j, int dt) {
  if (dt == SM_INT64) return ((const int64_t *)p)[i] < ((const int64_t *)q)[j];
  return elem(p, dt, i) < elem(q, dt, j);
}

static int num_dtype(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_INT32 || dt == SM_INT64; }

static sm_status *bound_prepare(const sm_node *node, void **state) {
  int out = SM_INT32;
  if (sm__node_attr(node, "out_type")) {
    sm_status *st = sm__node_attr_type(node, "out_type", &out);
    if (st) return st;
  }
  if (out != SM_INT32 && out != SM_INT64) return sm__math_bad_dtype("out_type", out);
  int upper = strcmp(sm__node_op(node), "UpperBound") == 0;
  *state = (void *)(intptr_t)(1 + (upper | (out == SM_INT64) << 1));
  return NULL;
}

static sm_status *bound_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, upper = code & 1, out64 = code >> 1;
  const sm_tensor *s = sm__kctx_input(ctx, 0), *v = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(s);
  if (!num_dtype(dt) || sm_tensor_dtype(v) != dt) return sm__math_bad_dtype(upper ? "UpperBound" : "LowerBound", dt);
  int rs = sm_tensor_rank(s), rv = sm_tensor_rank(v);
  if (rs < 1 || rv < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Input sorted_inputs and values should be at least 1D");
  const int64_t *sd = sm_tensor_dims(s), *vd = sm_tensor_dims(v);
  if (sd[0] != vd[0]) return sm_status_new(SM_INVALID_ARGUMENT, "Leading dim_size of both tensors must match.");
  int64_t rows = sd[0], n = rows ? sm_tensor_num_elements(s) / rows : 0, m = rows ? sm_tensor_num_elements(v) / rows : 0;
  if (out64 == 0 && n >= INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "trailing dim_size must less than INT_MAX for int32 output type, was %lld",
                         (long long)n);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, out64 ? SM_INT64 : SM_INT32, rv, vd, &z);
  if (st) return st;
  const void *sp = sm_tensor_data(s), *vp = sm_tensor_data(v);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < m; j++) {
      int64_t lo = 0, hi = n, q = r * m + j;
      while (lo < hi) { /* lower: first s >= v, i.e. !(s < v); upper: first v < s */
        int64_t mid = lo + (hi - lo) / 2, i = r * n + mid;
        int go_right = upper ? !less(vp, q, sp, i, dt) : less(sp, i, vp, q, dt);
        if (go_right)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (out64)
        ((int64_t *)sm_tensor_data(z))[q] = lo;
      else
        ((int32_t *)sm_tensor_data(z))[q] = (int32_t)lo;
    }
  return NULL;
}

#define CROSS(T)                                                                                   \
  do {                                                                                             \
    const T *x = sm_tensor_data(a), *y = sm_tensor_data(b);                                        \
    T *o = sm_tensor_data(z);                                                                      \
    for (int64_t i = 0; i < n; i++, x += 3, y += 3, o += 3) {                                      \
      o[0] = x[1] * y[2] - x[2] * y[1];                                                            \
      o[1] = x[2] * y[0] - x[0] * y[2];                                                            \
      o[2] = x[0] * y[1] - x[1] * y[0];                                                            \
    }                                                                                              \
  } while (0)

static sm_status *cross_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a);
  if ((dt != SM_FLOAT && dt != SM_DOUBLE) || sm_tensor_dtype(b) != dt) return sm__math_bad_dtype("Cross", dt);
  if (r != sm_tensor_rank(b) || memcmp(sm_tensor_dims(a), sm_tensor_dims(b), (size_t)r * sizeof(int64_t))) {
    char s1[256], s2[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "Both inputs must be of same shape: %s vs. %s",
                         sm_shape_str(r, sm_tensor_dims(a), s1, sizeof s1),
                         sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), s2, sizeof s2));
  }
  if (r < 1 || sm_tensor_dims(a)[r - 1] != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "Cross-products are only defined for 3-element vectors.");
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r, sm_tensor_dims(a), &z);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(a) / 3;
  if (dt == SM_FLOAT)
    CROSS(float);
  else
    CROSS(double);
  return NULL;
}

const sm_kernel sm_kernels_array_search[] = {
    {"LowerBound", bound_prepare, bound_compute, NULL, 0},
    {"UpperBound", bound_prepare, bound_compute, NULL, 0},
    {"Cross", NULL, cross_compute, NULL, 0},
    {0},
};
