/* image_patches.c - the image_patches kernel family: ExtractImagePatches (tf.image.extract_patches:
 * ksizes, strides, rates, SAME/VALID) and ExtractVolumePatches (tf.extract_volume_patches: the 3-D
 * form, no rates), found missing by tools/sweep_ops.py (session 17), and Dilation2D (the grayscale
 * morphological dilation of tf.nn.dilation2d / erosion2d: max of input + filter over the strided,
 * dilated window; session 18). Each output position holds
 * the k_1 x ... x k_n x C window at its stride (dilated by the rates), flattened in that order;
 * SAME pads as a convolution does (the extra row or column after), the padding reads 0. Every
 * fixed-size dtype; TF's messages for bad attrs. Checked against TensorFlow by
 * tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/nn_internal.h"

typedef struct patch_state {
  int nsp; /* spatial dims: 2 (images) or 3 (volumes) */
  int64_t k[3], s[3], r[3];
  int same;
} patch_state;

static sm_status *list4(const sm_node *node, const char *name, int n, int64_t *out, int optional) {
  const int64_t *v;
  size_t cnt;
  if (optional && !sm__node_attr(node, name)) {
    for (int i = 0; i < n; i++) out[i] = 1;
    return NULL;
  }
  sm_status *st = sm__node_attr_ints(node, name, &v, &cnt);
  if (st) return st;
  if ((int)cnt != n + 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s expects %s to be %d-dimensional (got %d)",
                         n == 2 ? "ExtractImagePatches" : "ExtractVolumePatches", name, n + 2, (int)cnt);
  if (v[0] != 1 || v[n + 1] != 1)
    return sm_status_new(SM_UNIMPLEMENTED, "Only support %s across space.", name);
  for (int i = 0; i < n; i++) {
    if (v[i + 1] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be positive", name);
    out[i] = v[i + 1];
  }
  return NULL;
}

static sm_status *patch_prepare(const sm_node *node, void **state) {
  patch_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->nsp = strcmp(sm__node_op(node), "ExtractVolumePatches") ? 2 : 3;
  sm_status *st = list4(node, "ksizes", s->nsp, s->k, 0);
  if (!st) st = list4(node, "strides", s->nsp, s->s, 0);
  if (!st) st = list4(node, "rates", s->nsp, s->r, s->nsp == 3);
  if (!st) st = sm__nn_same_padding(node, &s->same);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *patch_compute(const void *state, sm_kctx *ctx) {
  const patch_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int n = s->nsp, dt = sm_tensor_dtype(x);
  size_t es = sm__array_esize(dt);
  if (!es || dt == SM_RESOURCE || dt == SM_VARIANT) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), dt);
  if (sm_tensor_rank(x) != n + 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be %d-dimensional", n + 2);
  const int64_t *d = sm_tensor_dims(x);
  int64_t out[3], pad[3], keff[3], od[5];
  int64_t depth = d[n + 1];
  for (int i = 0; i < n; i++) {
    keff[i] = s->k[i] + (s->k[i] - 1) * (s->r[i] - 1);
    if (s->same) {
      out[i] = (d[i + 1] + s->s[i] - 1) / s->s[i];
      int64_t need = (out[i] - 1) * s->s[i] + keff[i] - d[i + 1];
      pad[i] = need > 0 ? need / 2 : 0;
    } else {
      out[i] = d[i + 1] >= keff[i] ? (d[i + 1] - keff[i]) / s->s[i] + 1 : 0;
      pad[i] = 0;
    }
    depth *= s->k[i];
  }
  od[0] = d[0];
  for (int i = 0; i < n; i++) od[i + 1] = out[i];
  od[n + 1] = depth;
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, n + 2, od, &z);
  if (st || sm_tensor_num_elements(z) == 0) return st;
  int64_t c = d[n + 1];
  const char *src = sm_tensor_data(x);
  char *dst = sm_tensor_data(z);
  int64_t opos[3] = {0}, kpos[3];
  int64_t npos = 1, nk = 1;
  for (int i = 0; i < n; i++) npos *= out[i], nk *= s->k[i];
  for (int64_t b = 0; b < d[0]; b++)
    for (int64_t p = 0; p < npos; p++) {
      int64_t t = p;
      for (int i = n - 1; i >= 0; i--) opos[i] = t % out[i], t /= out[i];
      char *o = dst + (size_t)((b * npos + p) * depth) * es;
      for (int64_t kk = 0; kk < nk; kk++, o += (size_t)c * es) {
        int64_t u = kk, off = b, inb = 1;
        for (int i = n - 1; i >= 0; i--) kpos[i] = u % s->k[i], u /= s->k[i];
        for (int i = 0; i < n; i++) {
          int64_t at = opos[i] * s->s[i] - pad[i] + kpos[i] * s->r[i];
          inb &= at >= 0 && at < d[i + 1];
          off = off * d[i + 1] + at;
        }
        if (inb) memcpy(o, src + (size_t)(off * c) * es, (size_t)c * es);
      }
    }
  return NULL;
}

/* ---- Dilation2D (tf.nn.dilation2d; erosion2d is its negation) ------------------------------- */

typedef struct dil_state {
  int64_t s[2], r[2];
  int same;
} dil_state;

static sm_status *dil_list(const sm_node *node, const char *name, const char *what, int64_t *out) {
  const int64_t *v;
  size_t cnt;
  sm_status *st = sm__node_attr_ints(node, name, &v, &cnt);
  if (st) return st;
  if (cnt != 4) return sm_status_new(SM_INVALID_ARGUMENT, "%s field must specify 4 dimensions", what);
  if (v[0] != 1 || v[3] != 1)
    return sm_status_new(SM_UNIMPLEMENTED, "Current implementation does not yet support %s in the batch and depth dimensions.", name);
  if (v[1] < 1 || v[2] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be positive", name);
  out[0] = v[1], out[1] = v[2];
  return NULL;
}

static sm_status *dil_prepare(const sm_node *node, void **state) {
  dil_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = dil_list(node, "strides", "Sliding window stride", s->s);
  if (!st) st = dil_list(node, "rates", "Input stride (atrous rate)", s->r);
  if (!st) st = sm__nn_same_padding(node, &s->same);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* out[b, y, x, c] = max over the (dilated) window of in + filter, positions outside the input
 * skipped; a window that misses the input entirely gives the dtype's lowest value (TF's). */
#define DILATE(T, LOWEST)                                                                                  \
  do {                                                                                                     \
    const T *in = sm_tensor_data(x), *f = sm_tensor_data(w);                                               \
    T *o = sm_tensor_data(z);                                                                              \
    for (int64_t b = 0; b < d[0]; b++)                                                                     \
      for (int64_t oy = 0; oy < out[0]; oy++)                                                              \
        for (int64_t ox = 0; ox < out[1]; ox++)                                                            \
          for (int64_t c = 0; c < C; c++) {                                                                \
            T cur = LOWEST;                                                                                \
            for (int64_t fy = 0; fy < fd[0]; fy++) {                                                       \
              int64_t iy = oy * s->s[0] - pad[0] + fy * s->r[0];                                           \
              if (iy < 0 || iy >= d[1]) continue;                                                          \
              for (int64_t fx = 0; fx < fd[1]; fx++) {                                                     \
                int64_t ix = ox * s->s[1] - pad[1] + fx * s->r[1];                                         \
                if (ix < 0 || ix >= d[2]) continue;                                                        \
                T v = in[((b * d[1] + iy) * d[2] + ix) * C + c] + f[(fy * fd[1] + fx) * C + c];            \
                if (v > cur) cur = v;                                                                      \
              }                                                                                            \
            }                                                                                              \
            o[((b * out[0] + oy) * out[1] + ox) * C + c] = cur;                                            \
          }                                                                                                \
  } while (0)

static sm_status *dil_compute(const void *state, sm_kctx *ctx) {
  const dil_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *w = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x);
  char b1[128];
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm__math_bad_dtype("Dilation2D", dt);
  if (sm_tensor_dtype(w) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "Dilation2D: input and filter must have the same dtype");
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s", sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
  if (sm_tensor_rank(w) != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "filter must be 3-dimensional: %s", sm_shape_str(sm_tensor_rank(w), sm_tensor_dims(w), b1, sizeof b1));
  const int64_t *d = sm_tensor_dims(x), *fd = sm_tensor_dims(w);
  int64_t C = d[3];
  if (fd[2] != C)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)C, (long long)fd[2]);
  int64_t out[2], pad[2];
  for (int i = 0; i < 2; i++) {
    int64_t eff = fd[i] + (fd[i] - 1) * (s->r[i] - 1), in = d[i + 1];
    if (s->same) {
      out[i] = (in + s->s[i] - 1) / s->s[i];
      int64_t need = (out[i] - 1) * s->s[i] + eff - in;
      pad[i] = need > 0 ? need / 2 : 0;
    } else {
      out[i] = (in - eff + s->s[i]) / s->s[i];
      if (out[i] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "Computed output size would be negative: %lld [input_size: %lld, effective_filter_size: %lld, stride: %lld]",
                             (long long)out[i], (long long)in, (long long)eff, (long long)s->s[i]);
      pad[i] = 0;
    }
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 4, (int64_t[]){d[0], out[0], out[1], C}, &z);
  if (st) return st;
  if (dt == SM_FLOAT) DILATE(float, -FLT_MAX);
  else DILATE(double, -DBL_MAX);
  return NULL;
}

const sm_kernel sm_kernels_image_patches[] = {
    {"ExtractImagePatches", patch_prepare, patch_compute, free, 0},
    {"ExtractVolumePatches", patch_prepare, patch_compute, free, 0},
    {"Dilation2D", dil_prepare, dil_compute, free, 0},
    {0},
};
