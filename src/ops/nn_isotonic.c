/* nn_isotonic.c - the isotonic kernel family: IsotonicRegression (tf.nn.isotonic_regression), as TF's
 * CPU kernel (isotonic_regression_op.cc): every row of the input seen as [rows, last dim] is fitted
 * by the non-increasing sequence nearest in squared error, with the pool-adjacent-violators
 * algorithm: left to right, each point a new pool, and while the last pool's mean is above the one
 * before, the two merge (sum of inputs, mean = sum / count, computed in the output type: half and
 * bfloat16 round after every operation as Eigen's do). Outputs: the fitted values (half, bfloat16,
 * float, double keep their type; int8 / int16 give float, int32 / int64 double) and, as int32, the
 * index of each point's pool within its row. */
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef struct pool {
  int64_t start, limit;
  double sum, mean; /* in the output type's precision (rounded to it after each step) */
} pool;

static double round_to(int dt, double v) {
  switch (dt) {
  case SM_FLOAT: return (float)v;
  case SM_HALF: return sm__half_to_f32(sm__f32_to_half((float)v));
  case SM_BFLOAT16: return sm__bf16_to_f32(sm__f32_to_bf16((float)v));
  default: return v;
  }
}

static sm_status *iso_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), odt;
  switch (dt) {
  case SM_HALF: case SM_BFLOAT16: case SM_FLOAT: case SM_DOUBLE: odt = dt; break;
  case SM_INT8: case SM_INT16: odt = SM_FLOAT; break;
  case SM_INT32: case SM_INT64: odt = SM_DOUBLE; break;
  default: return sm__math_bad_dtype("IsotonicRegression", dt);
  }
  int r = sm_tensor_rank(x);
  int64_t n = sm_tensor_num_elements(x), cols = r ? sm_tensor_dims(x)[r - 1] : 1;
  int64_t rows = cols ? n / cols : 0;
  if (rows > INT32_MAX || cols > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Tensor too large");
  sm_tensor *y, *seg;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, odt, r, sm_tensor_dims(x), &y);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, SM_INT32, r, sm_tensor_dims(x), &seg);
  if (st || n == 0) return st;
  pool *pools = sm__kctx_scratch(ctx, (size_t)cols * sizeof *pools, &st);
  if (!pools) return st;
  int32_t *sg = sm_tensor_data(seg);
  for (int64_t row = 0; row < rows; row++) {
    int64_t np = 0;
    for (int64_t c = 0; c < cols; c++) {
      double v = round_to(odt, sm__math_get_f64(x, row * cols + c));
      pools[np++] = (pool){c, c + 1, v, v};
      while (np > 1 && pools[np - 1].mean > pools[np - 2].mean) {
        pool *a = &pools[np - 2], *b = &pools[np - 1];
        a->limit = b->limit;
        a->sum = round_to(odt, a->sum + b->sum);
        a->mean = round_to(odt, a->sum / round_to(odt, (double)(a->limit - a->start)));
        np--;
      }
    }
    for (int64_t p = 0; p < np; p++)
      for (int64_t c = pools[p].start; c < pools[p].limit; c++) {
        int64_t i = row * cols + c;
        double m = pools[p].mean;
        switch (odt) {
        case SM_FLOAT: ((float *)sm_tensor_data(y))[i] = (float)m; break;
        case SM_DOUBLE: ((double *)sm_tensor_data(y))[i] = m; break;
        case SM_HALF: ((uint16_t *)sm_tensor_data(y))[i] = sm__f32_to_half((float)m); break;
        default: ((uint16_t *)sm_tensor_data(y))[i] = sm__f32_to_bf16((float)m); break;
        }
        sg[i] = (int32_t)p;
      }
  }
  sm__kctx_scratch_free(ctx, pools);
  return NULL;
}

const sm_kernel sm_kernels_isotonic[] = {
    {"IsotonicRegression", NULL, iso_compute, NULL, 0},
    {0},
};
