/* nn_pool_argmax.c - the nn_pool_argmax kernel family: MaxPoolWithArgmax
 * (tf.nn.max_pool_with_argmax, found missing by tools/sweep_ops.py, session 17): NHWC max pooling
 * that also gives, per output, the flat index of the input element it took -
 * ((b * H + y) * W + x) * C + c with include_batch_in_index, (y * W + x) * C + c without. As TF's
 * CPU kernel: the window is scanned row by row and a later element replaces the kept one only
 * when strictly greater (so the first of equal maxima wins, and a NaN wins only when it comes
 * first); SAME padding as a convolution's, padded positions never taken. Real number dtypes,
 * Targmax int64 or int32. Checked against TensorFlow by tests/unit/test_ops_api.c
 * (tools/gen_api_cases.py). */
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "ops/nn_internal.h"

typedef struct mpa_state {
  int64_t k[2], s[2];
  int same, with_batch;
} mpa_state;

static sm_status *mpa_prepare(const sm_node *node, void **state) {
  mpa_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const int64_t *v;
  size_t n;
  sm_status *st = sm__node_attr_ints(node, "ksize", &v, &n);
  if (!st && n != 4) st = sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize field must specify 4 dimensions");
  if (!st && (v[0] != 1 || v[3] != 1))
    st = sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch nor depth dimension.");
  if (!st) s->k[0] = v[1], s->k[1] = v[2];
  if (!st) st = sm__node_attr_ints(node, "strides", &v, &n);
  if (!st && n != 4) st = sm_status_new(SM_INVALID_ARGUMENT, "Sliding window stride field must specify 4 dimensions");
  if (!st && (v[0] != 1 || v[3] != 1))
    st = sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch nor depth dimension.");
  if (!st) s->s[0] = v[1], s->s[1] = v[2];
  if (!st && (s->k[0] < 1 || s->k[1] < 1 || s->s[0] < 1 || s->s[1] < 1))
    st = sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize and strides must be positive");
  if (!st) st = sm__nn_same_padding(node, &s->same);
  if (!st && sm__node_attr(node, "include_batch_in_index"))
    st = sm__node_attr_bool(node, "include_batch_in_index", &s->with_batch);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}


static sm_status *mpa_compute(const void *state, sm_kctx *ctx) {
  const mpa_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt == SM_BOOL || dt == SM_STRING || (sm__math_tindex(dt) < 0 && !sm__math_is_f16(dt)))
    return sm__math_bad_dtype("MaxPoolWithArgmax", dt);
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "tensor_in must be 4-dimensional");
  const int64_t *d = sm_tensor_dims(x);
  int64_t B = d[0], H = d[1], W = d[2], C = d[3], out[2], pad[2];
  const int64_t in[2] = {H, W};
  for (int i = 0; i < 2; i++) {
    if (s->same) {
      out[i] = (in[i] + s->s[i] - 1) / s->s[i];
      int64_t need = (out[i] - 1) * s->s[i] + s->k[i] - in[i];
      pad[i] = need > 0 ? need / 2 : 0;
    } else {
      out[i] = in[i] >= s->k[i] ? (in[i] - s->k[i]) / s->s[i] + 1 : 0;
      pad[i] = 0;
    }
  }
  int64_t od[4] = {B, out[0], out[1], C};
  int adt = sm__node_num_outputs(sm__kctx_node(ctx)) > 1 ? sm__node_output_dtype(sm__kctx_node(ctx), 1) : SM_INT64;
  sm_tensor *y, *am;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 4, od, &y);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, adt == SM_INT32 ? SM_INT32 : SM_INT64, 4, od, &am);
  if (st) return st;
  size_t es = sm_dtype_size(dt);
  for (int64_t b = 0; b < B; b++)
    for (int64_t oy = 0; oy < out[0]; oy++)
      for (int64_t ox = 0; ox < out[1]; ox++)
        for (int64_t c = 0; c < C; c++) {
          int64_t best = -1;
          double bv = 0;
          for (int64_t ky = 0; ky < s->k[0]; ky++) {
            int64_t iy = oy * s->s[0] - pad[0] + ky;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < s->k[1]; kx++) {
              int64_t ix = ox * s->s[1] - pad[1] + kx;
              if (ix < 0 || ix >= W) continue;
              int64_t at = ((b * H + iy) * W + ix) * C + c;
              double v = sm__math_get_f64(x, at);
              if (best < 0 || v > bv) best = at, bv = v;
            }
          }
          int64_t o = ((b * out[0] + oy) * out[1] + ox) * C + c;
          if (best >= 0) memcpy((char *)sm_tensor_data(y) + (size_t)o * es, (const char *)sm_tensor_data(x) + (size_t)best * es, es);
          int64_t idx = best < 0 ? -1 : s->with_batch ? best : best - b * H * W * C;
          if (sm_tensor_dtype(am) == SM_INT32) ((int32_t *)sm_tensor_data(am))[o] = (int32_t)idx;
          else ((int64_t *)sm_tensor_data(am))[o] = idx;
        }
  return NULL;
}

const sm_kernel sm_kernels_nn_pool_argmax[] = {
    {"MaxPoolWithArgmax", mpa_prepare, mpa_compute, free, 0},
    {0},
};
