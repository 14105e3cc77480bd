/* math_extra.c - the math_extra kernel family: math ops of TF's public API that
 * tools/sweep_ops.py found missing (session 17): MulNoNan (tf.math.multiply_no_nan: 0 wherever
 * y is 0, even for x NaN or inf; broadcasting), EuclideanNorm (tf.math.reduce_euclidean_norm,
 * tf.norm's fast path: sqrt of the sum of squares over the axes, keep_dims; integers truncated
 * as TF), CumulativeLogsumexp (tf.math.cumulative_logsumexp: exclusive starts at -inf,
 * reverse) and BesselI0 / BesselI1 (tf.math.bessel_i0 / i1 = exp|x| * I0e / I1e). half,
 * bfloat16, float, double (EuclideanNorm also the integers), computed in double. Checked against
 * TensorFlow by tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

static int is_real(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16; }

static void put(sm_tensor *t, int64_t i, double v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)p)[i] = v; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v); break;
    case SM_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SM_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case SM_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case SM_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SM_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case SM_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case SM_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: break;
  }
}

/* ---- MulNoNan ------------------------------------------------------------------------------- */
static sm_status *mul_no_nan_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x), cx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
  if ((!is_real(dt) && !cx) || sm_tensor_dtype(y) != dt) return sm__math_bad_dtype("MulNoNan", dt);
  sm_bcast b;
  const int ranks[2] = {sm_tensor_rank(x), sm_tensor_rank(y)};
  const int64_t *dims[2] = {sm_tensor_dims(x), sm_tensor_dims(y)};
  if (!sm__math_bcast_init(&b, 2, ranks, dims)) return sm__math_incompatible(x, y);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, b.out_rank, b.out_dims, &z);
  if (st || b.n == 0) return st;
  int last = b.rank - 1;
  int64_t inner = b.dims[last], s0 = b.strides[0][last], s1 = b.strides[1][last];
  sm_bcast_it it;
  sm__math_bcast_seek(&b, 2, 0, &it);
  for (int64_t r = 0; r < b.n / inner; r++) {
    for (int64_t i = 0; i < inner; i++) {
      int64_t o = r * inner + i, a = it.off[0] + i * s0, c = it.off[1] + i * s1;
      if (dt == SM_COMPLEX64) {
        const float *xa = (const float *)sm_tensor_data(x) + 2 * a, *yc = (const float *)sm_tensor_data(y) + 2 * c;
        float *zo = (float *)sm_tensor_data(z) + 2 * o;
        int zero = yc[0] == 0 && yc[1] == 0;
        zo[0] = zero ? 0 : xa[0] * yc[0] - xa[1] * yc[1];
        zo[1] = zero ? 0 : xa[0] * yc[1] + xa[1] * yc[0];
      } else if (dt == SM_COMPLEX128) {
        const double *xa = (const double *)sm_tensor_data(x) + 2 * a, *yc = (const double *)sm_tensor_data(y) + 2 * c;
        double *zo = (double *)sm_tensor_data(z) + 2 * o;
        int zero = yc[0] == 0 && yc[1] == 0;
        zo[0] = zero ? 0 : xa[0] * yc[0] - xa[1] * yc[1];
        zo[1] = zero ? 0 : xa[0] * yc[1] + xa[1] * yc[0];
      } else {
        double yv = sm__math_get_f64(y, c);
        put(z, o, yv == 0 ? 0.0 : (dt == SM_DOUBLE ? sm__math_get_f64(x, a) * yv : (double)((float)sm__math_get_f64(x, a) * (float)yv)));
      }
    }
    sm__math_bcast_next(&b, 2, &it);
  }
  return NULL;
}

/* ---- EuclideanNorm ---------------------------------------------------------------------------- */
typedef struct keep_state {
  int keep;
} keep_state;

static sm_status *enorm_prepare(const sm_node *node, void **state) {
  keep_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr(node, "keep_dims") ? sm__node_attr_bool(node, "keep_dims", &s->keep) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static int64_t int_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT64 ? ((const int64_t *)sm_tensor_data(t))[i] : ((const int32_t *)sm_tensor_data(t))[i];
}

static sm_status *enorm_compute(const void *state, sm_kctx *ctx) {
  const keep_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *ax = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  if (!is_real(dt) && sm__math_tindex(dt) < 0) return sm__math_bad_dtype("EuclideanNorm", dt);
  if (dt == SM_BOOL) return sm__math_bad_dtype("EuclideanNorm", dt);
  if (sm_tensor_rank(ax) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "reduction_indices must be a scalar or a vector, got rank %d", sm_tensor_rank(ax));
  int red[SM_MAX_RANK] = {0};
  for (int64_t i = 0; i < sm_tensor_num_elements(ax); i++) {
    int64_t a = int_at(ax, i);
    if (a < -r || a >= r)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction dimension (%lld for input with %d dimension(s)",
                           (long long)a, r);
    red[a < 0 ? a + r : a] = 1;
  }
  const int64_t *d = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], kd[SM_MAX_RANK];
  int orank = 0;
  for (int i = 0; i < r; i++) {
    kd[i] = red[i] ? 1 : d[i];
    if (s->keep) od[orank++] = kd[i];
    else if (!red[i]) od[orank++] = d[i];
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, orank, od, &z);
  if (st) return st;
  int64_t m = sm_tensor_num_elements(z), n = sm_tensor_num_elements(x);
  double *acc = sm__kctx_scratch(ctx, (size_t)(m + 1) * sizeof *acc, &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)(m + 1) * sizeof *acc);
  int64_t idx[SM_MAX_RANK] = {0}, kstr[SM_MAX_RANK];
  int64_t sacc = 1;
  for (int i = r - 1; i >= 0; i--) kstr[i] = sacc, sacc *= kd[i];
  for (int64_t e = 0; e < n; e++) {
    int64_t o = 0;
    for (int i = 0; i < r; i++) o += (red[i] ? 0 : idx[i]) * kstr[i];
    double v = sm__math_get_f64(x, e);
    acc[o] += v * v;
    for (int k = r - 1; k >= 0 && ++idx[k] == d[k]; k--) idx[k] = 0;
  }
  for (int64_t o = 0; o < m; o++) put(z, o, sqrt(acc[o]));
  return NULL;
}

/* ---- CumulativeLogsumexp ---------------------------------------------------------------------- */
typedef struct clse_state {
  int exclusive, reverse;
} clse_state;

static sm_status *clse_prepare(const sm_node *node, void **state) {
  clse_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = NULL;
  if (sm__node_attr(node, "exclusive")) st = sm__node_attr_bool(node, "exclusive", &s->exclusive);
  if (!st && sm__node_attr(node, "reverse")) st = sm__node_attr_bool(node, "reverse", &s->reverse);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static double lse2(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

static sm_status *clse_compute(const void *state, sm_kctx *ctx) {
  const clse_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *ax = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  if (!is_real(dt)) return sm__math_bad_dtype("CumulativeLogsumexp", dt);
  if (sm_tensor_rank(ax) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "ScanOp: axis must be a scalar, not %d-D", sm_tensor_rank(ax));
  int64_t a = int_at(ax, 0);
  if (a < -r || a >= r)
    return sm_status_new(SM_INVALID_ARGUMENT, "ScanOp: Expected scan axis in the range [%d, %d), but got %lld", -r, r,
                         (long long)a);
  if (a < 0) a += r;
  const int64_t *d = sm_tensor_dims(x);
  int64_t outer = 1, inner = 1, len = d[a];
  for (int i = 0; i < a; i++) outer *= d[i];
  for (int i = (int)a + 1; i < r; i++) inner *= d[i];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r, d, &z);
  if (st) return st;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double acc = -INFINITY;
      for (int64_t k = 0; k < len; k++) {
        int64_t j = s->reverse ? len - 1 - k : k, at = (o * len + j) * inner + in;
        double v = sm__math_get_f64(x, at);
        if (s->exclusive) {
          put(z, at, acc);
          acc = lse2(acc, v);
        } else {
          acc = lse2(acc, v);
          put(z, at, acc);
        }
      }
    }
  return NULL;
}

/* ---- BesselI0 / BesselI1 ----------------------------------------------------------------------- */
static sm_status *bessel_prepare(const sm_node *node, void **state) {
  *state = (void *)(intptr_t)(strcmp(sm__node_op(node), "BesselI1") ? 1 : 2);
  return NULL;
}

static sm_status *bessel_compute(const void *state, sm_kctx *ctx) {
  int one = (intptr_t)state == 2;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (!is_real(dt)) return sm__math_bad_dtype(one ? "BesselI1" : "BesselI0", dt);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(x), sm_tensor_dims(x), &z);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    double v = sm__math_get_f64(x, i);
    put(z, i, exp(fabs(v)) * (one ? sm__bessel_i1e(v) : sm__bessel_i0e(v)));
  }
  return NULL;
}

const sm_kernel sm_kernels_math_extra[] = {
    {"MulNoNan", NULL, mul_no_nan_compute, NULL, 0},
    {"EuclideanNorm", enorm_prepare, enorm_compute, free, 0},
    {"CumulativeLogsumexp", clse_prepare, clse_compute, free, 0},
    {"BesselI0", bessel_prepare, bessel_compute, NULL, 0},
    {"BesselI1", bessel_prepare, bessel_compute, NULL, 0},
    {0},
};
