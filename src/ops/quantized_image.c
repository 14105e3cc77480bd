/* quantized_image.c - three more of TF1's quantized kernels (next to quantized_nn.c):
 * QuantizedResizeBilinear (quint8, qint32, float; align_corners, half_pixel_centers),
 * QuantizedBatchNormWithGlobalNormalization (quint8 -> qint32, scale_after_normalization) and
 * QuantizedInstanceNorm (quint8; every attr, TF's x86 path: float mean / variance, the range from
 * the normalized values or given). The arithmetic is TF's (quantized_resize_bilinear_op.cc,
 * quantized_batch_norm_op.cc, quantized_instance_norm.cc) in the same
 * integer widths: the resize's fixed-point lerps (7 fraction bits in int16 for quint8; 30 in int64
 * for qint32, each qint32 read through float as Eigen's QInt32 converts; plain float for float; the
 * input copied when the size does not change); the batch norm's FixedPointBatchNorm in qint32 over
 * the fixed range [-2^20, 2^20], int32 products wrapping as TF's do. TF's checks and messages.
 * Checked against TensorFlow by tests/unit/test_ops_qconv.c (tools/gen_qconv_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/quant_int.h"

static sm_status *want_dtype(const char *op, const char *what, int dt, const int *ok) {
  for (; *ok >= 0; ok++)
    if (*ok == dt) return NULL;
  return sm_status_new(SM_UNIMPLEMENTED, "%s: no kernel for %s %s (TensorFlow registers none on CPU)", op, what,
                       sm__array_dtype_str(dt));
}

/* the first element of a float input (TF reads flat<float>()(0)) */
static sm_status *first_float(sm_kctx *ctx, int i, const char *op, const char *name, float *v) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  if (sm_tensor_dtype(t) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be float", op, name);
  if (sm_tensor_num_elements(t) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must hold at least one element", op, name);
  *v = *(const float *)sm_tensor_data(t);
  return NULL;
}

/* ---- QuantizedResizeBilinear ------------------------------------------------------------------ */

typedef struct qresize_state {
  int align, hpc;
} qresize_state;

static sm_status *qresize_prepare(const sm_node *n, void **state) {
  qresize_state s = {0, 0};
  sm_status *st = sm__node_attr(n, "align_corners") ? sm__node_attr_bool(n, "align_corners", &s.align) : NULL;
  if (!st && sm__node_attr(n, "half_pixel_centers")) st = sm__node_attr_bool(n, "half_pixel_centers", &s.hpc);
  if (st) return st;
  qresize_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

/* InterpolationCache: lower / upper source indices (times step) and the lerp, as float and as the
 * fixed-point weight of `res` fraction bits */
typedef struct lerp {
  int64_t lo, hi;
  float f;
  int32_t i;
} lerp;

static void lerp_cache(lerp *c, int64_t out, int64_t in, float scale, int64_t step, int res, int hpc) {
  for (int64_t i = 0; i < out; i++) {
    float v = hpc ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale, vf = floorf(v);
    int64_t lo = (int64_t)vf > 0 ? (int64_t)vf : 0, hi = (int64_t)ceilf(v) < in - 1 ? (int64_t)ceilf(v) : in - 1;
    c[i].lo = (lo < hi ? lo : hi) * step;
    c[i].hi = hi * step;
    c[i].f = v - vf;
    c[i].i = (int32_t)((v - vf) * (float)(1 << res));
  }
}

static const int QRESIZE_T[] = {SM_QUINT8, SM_QINT32, SM_FLOAT, -1};

static sm_status *qresize_compute(const void *state, sm_kctx *ctx) {
  const qresize_state *s = state;
  const char *op = "QuantizedResizeBilinear";
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int T = sm_tensor_dtype(x);
  sm_status *st = want_dtype(op, "T", T, QRESIZE_T);
  if (st) return st;
  if (sm_tensor_rank(sm__kctx_input(ctx, 2)) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "min must be a scalar");
  float mn, mx;
  st = first_float(ctx, 2, op, "min", &mn);
  if (st) return st;
  if (sm_tensor_rank(sm__kctx_input(ctx, 3)) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "max must be a scalar");
  st = first_float(ctx, 3, op, "max", &mx);
  if (st) return st;
  int64_t OH, OW;
  float hs, ws;
  st = sm__image_resize_validate(x, sm__kctx_input(ctx, 1), s->align, &OH, &OW, &hs, &ws);
  if (st) return st;
  const int64_t *d = sm_tensor_dims(x);
  int64_t N = d[0], H = d[1], W = d[2], C = d[3], od[4] = {N, OH, OW, C};
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, T, 4, od, &y);
  if (st) return st;
  if (sm_tensor_num_elements(y) == 0) { /* TF returns before its min / max outputs: eager shows them empty */
    sm_tensor *e;
    int64_t zero = 0;
    st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 1, &zero, &e);
    return st ? st : sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 1, &zero, &e);
  }
  if (OH == H && OW == W) {
    memcpy(sm_tensor_data(y), sm_tensor_data(x), (size_t)sm_tensor_num_elements(x) * sm_dtype_size(T));
  } else {
    int res = T == SM_QUINT8 ? 7 : T == SM_QINT32 ? 30 : 0;
    lerp *xs = sm__kctx_scratch(ctx, (size_t)(OW + OH) * sizeof *xs, &st);
    if (!xs) return st;
    lerp *ys = xs + OW;
    lerp_cache(xs, OW, W, ws, C, res, s->hpc);
    lerp_cache(ys, OH, H, hs, 1, res, s->hpc);
    const unsigned char *X = sm_tensor_data(x);
    unsigned char *Y = sm_tensor_data(y);
    size_t es = sm_dtype_size(T);
    for (int64_t b = 0; b < N; b++)
      for (int64_t oy = 0; oy < OH; oy++) {
        const unsigned char *top = X + (size_t)((b * H + ys[oy].lo) * W * C) * es,
                            *bot = X + (size_t)((b * H + ys[oy].hi) * W * C) * es;
        unsigned char *out = Y + (size_t)((b * OH + oy) * OW * C) * es;
        for (int64_t ox = 0; ox < OW; ox++) {
          const lerp *l = &xs[ox];
          for (int64_t c = 0; c < C; c++) {
            int64_t a = l->lo + c, bb = l->hi + c, o = ox * C + c;
            if (T == SM_FLOAT) {
              const float *t = (const float *)(const void *)top, *u = (const float *)(const void *)bot;
              float tp = t[a] + (t[bb] - t[a]) * l->f, bt = u[a] + (u[bb] - u[a]) * l->f;
              ((float *)(void *)out)[o] = tp + (bt - tp) * ys[oy].f;
            } else if (T == SM_QUINT8) { /* ComputeLerp<7, quint8, int16, int16> */
              int16_t xl = (int16_t)l->i, yl = (int16_t)ys[oy].i;
              int tl = top[a], tr = top[bb], bl = bot[a], br = bot[bb];
              int16_t tp = (int16_t)(tl * 128 + (int16_t)((tr - tl) * xl));
              int16_t bt = (int16_t)(bl * 128 + (int16_t)((br - bl) * xl));
              int16_t v = (int16_t)(tp + (bt - tp) / 128 * yl);
              out[o] = (uint8_t)(int32_t)((v + 64) / 128);
            } else { /* ComputeLerp<30, qint32, int32, int64> */
              const int32_t *t = (const int32_t *)(const void *)top, *u = (const int32_t *)(const void *)bot;
              const int64_t M = (int64_t)1 << 30;
              int64_t ta = (int64_t)(float)t[a], tb = (int64_t)(float)t[bb], ua = (int64_t)(float)u[a],
                      ub = (int64_t)(float)u[bb];
              int64_t tp = ta * M + (tb - ta) * l->i, bt = ua * M + (ub - ua) * l->i;
              int64_t v = tp + (bt - tp) / M * ys[oy].i;
              ((int32_t *)(void *)out)[o] = (int32_t)((v + M / 2) / M);
            }
          }
        }
      }
    sm__kctx_scratch_free(ctx, xs);
  }
  st = sm__q_scalar_out(ctx, 1, mn);
  return st ? st : sm__q_scalar_out(ctx, 2, mx);
}

/* ---- QuantizedBatchNormWithGlobalNormalization ------------------------------------------------ */

typedef struct qbn_state {
  float eps;
  int scale_after;
} qbn_state;

static sm_status *qbn_prepare(const sm_node *n, void **state) {
  qbn_state s = {0, 0};
  int t = SM_QINT32;
  sm_status *st = sm__node_attr_float(n, "variance_epsilon", &s.eps);
  if (!st) st = sm__node_attr_bool(n, "scale_after_normalization", &s.scale_after);
  if (!st && sm__node_attr(n, "out_type")) st = sm__node_attr_type(n, "out_type", &t);
  if (st) return st;
  if (t != SM_QINT32)
    return sm_status_new(SM_UNIMPLEMENTED, "QuantizedBatchNormWithGlobalNormalization: no kernel for out_type %s (TensorFlow "
                         "registers qint32 only)", sm__array_dtype_str(t));
  qbn_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

/* FloatToQuantized<qint32> over [-2^20, 2^20] as TF 2.21's build computes it: a value whose
 * quantization leaves int64 (inf, NaN, huge) gives INT32_MIN, not quant_int.h's wrapped INT32_MAX
 * (TensorFlow's NaN / inf scale of a zero or negative variance shows it) */
static int32_t q32(float x) {
  double sc = 4294967296.0 / (2097152.0 * (4294967296.0 / 4294967295.0));
  double d = round((double)x * sc) - round(-2097152.0 / 2 * sc);
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT32_MIN;
  int64_t q = (int64_t)d + INT32_MIN;
  return (int32_t)(q < INT32_MIN ? INT32_MIN : q > INT32_MAX ? INT32_MAX : q);
}

static sm_status *qbn_compute(const void *state, sm_kctx *ctx) {
  const qbn_state *s = state;
  const char *op = "QuantizedBatchNormWithGlobalNormalization";
  static const char *const names[5] = {"input", "mean", "var", "beta", "gamma"};
  static const int ONLY_QU8[] = {SM_QUINT8, -1};
  float r[10];
  const sm_tensor *t[5];
  char a[128], b[128];
  for (int k = 0; k < 5; k++) {
    t[k] = sm__kctx_input(ctx, 3 * k);
    sm_status *st = want_dtype(op, k ? names[k] : "Tinput", sm_tensor_dtype(t[k]), ONLY_QU8);
    if (st) return st;
    for (int m = 0; m < 2; m++) {
      const sm_tensor *x = sm__kctx_input(ctx, 3 * k + 1 + m);
      if (sm_tensor_num_elements(x) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s_%s must have 1 element", names[k], m ? "max" : "min");
      if (sm_tensor_dtype(x) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "%s: range inputs must be float", op);
      r[2 * k + m] = *(const float *)sm_tensor_data(x);
    }
  }
  for (int k = 0; k < 5; k++)
    if (sm_tensor_rank(t[k]) != (k ? 1 : 4))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be %s-dimensional%s", names[k], k ? "1" : "4",
                           sm__array_shape_str(t[k], a, sizeof a));
  int64_t depth = sm_tensor_dims(t[1])[0], n = sm_tensor_num_elements(t[0]);
  if (depth <= 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Must have at least a mean value%s", sm__array_shape_str(t[4], a, sizeof a));
  if (depth != sm_tensor_dims(t[0])[3])
    return sm_status_new(SM_INVALID_ARGUMENT, "Must provide as many means as the last dimension of the input tensor: %s vs. %s",
                         sm__array_shape_str(t[1], a, sizeof a), sm__array_shape_str(t[0], b, sizeof b));
  static const char *const other[3] = {"variance", "beta", "gamma"};
  for (int k = 2; k < 5; k++)
    if (sm_tensor_dims(t[k])[0] != depth)
      return sm_status_new(SM_INVALID_ARGUMENT, "Mean and %s tensors must have the same shape: %s vs. %s", other[k - 2],
                           sm__array_shape_str(t[1], a, sizeof a), sm__array_shape_str(t[k], b, sizeof b));
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, 4, sm_tensor_dims(t[0]), &y);
  if (st) return st;
  const float omin = -(float)(1 << 20), omax = (float)(1 << 20);
  int32_t *sc = sm__kctx_scratch(ctx, (size_t)depth * 2 * sizeof *sc, &st);
  if (!sc) return st;
  const uint8_t *M = sm_tensor_data(t[1]), *V = sm_tensor_data(t[2]), *B = sm_tensor_data(t[3]), *G = sm_tensor_data(t[4]);
  for (int64_t c = 0; c < depth; c++) {
    float mean = sm__q_to_float(SM_QUINT8, M[c], r[2], r[3]), var = sm__q_to_float(SM_QUINT8, V[c], r[4], r[5]);
    float beta = sm__q_to_float(SM_QUINT8, B[c], r[6], r[7]), gamma = sm__q_to_float(SM_QUINT8, G[c], r[8], r[9]);
    float scale = 1.0f / sqrtf(var + s->eps);
    if (s->scale_after) scale = scale * gamma;
    float offset = (-mean * scale) + beta;
    sc[2 * c] = q32(scale);
    sc[2 * c + 1] = q32(offset);
  }
  int32_t one = q32(1.0f); /* 2048 */
  const uint8_t *X = sm_tensor_data(t[0]);
  int32_t *Y = sm_tensor_data(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = i % depth;
    int32_t v = q32(sm__q_to_float(SM_QUINT8, X[i], r[0], r[1]));
    int32_t prod = (int32_t)((uint32_t)v * (uint32_t)sc[2 * c]); /* qint32 * qint32 wraps */
    Y[i] = (int32_t)((uint32_t)(prod / one) + (uint32_t)sc[2 * c + 1]);
  }
  sm__kctx_scratch_free(ctx, sc);
  st = sm__q_scalar_out(ctx, 1, omin);
  return st ? st : sm__q_scalar_out(ctx, 2, omax);
}

/* ---- QuantizedInstanceNorm ------------------------------------------------------------------- */

typedef struct qin_state {
  float eps, sep, ymin, ymax;
  int given;
} qin_state;

static sm_status *qin_prepare(const sm_node *n, void **state) {
  qin_state s = {1e-5f, 1e-3f, 0, 0, 0};
  sm_status *st = sm__node_attr(n, "variance_epsilon") ? sm__node_attr_float(n, "variance_epsilon", &s.eps) : NULL;
  if (!st && sm__node_attr(n, "min_separation")) st = sm__node_attr_float(n, "min_separation", &s.sep);
  if (!st && sm__node_attr(n, "output_range_given")) st = sm__node_attr_bool(n, "output_range_given", &s.given);
  if (!st && s.given && sm__node_attr(n, "given_y_min")) st = sm__node_attr_float(n, "given_y_min", &s.ymin);
  if (!st && s.given && sm__node_attr(n, "given_y_max")) st = sm__node_attr_float(n, "given_y_max", &s.ymax);
  if (st) return st;
  if (s.given && !(s.ymin < s.ymax))
    return sm_status_new(SM_INVALID_ARGUMENT, "given_y_min must be less than given_y_max : %g >= %g", s.ymin, s.ymax);
  qin_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

/* TF's unoptimized (non-NEON) path: Eigen's mean and variance over H and W in float, then
 * input_scale * (x - mean) * rsqrt(variance + epsilon), quantized over its min and max (or the
 * given range), at least min_separation wide */
static sm_status *qin_compute(const void *state, sm_kctx *ctx) {
  const qin_state *s = state;
  const char *op = "QuantizedInstanceNorm";
  static const int ONLY_QU8[] = {SM_QUINT8, -1};
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_status *st = want_dtype(op, "T", sm_tensor_dtype(x), ONLY_QU8);
  if (st) return st;
  static const char *const names[2] = {"x_min", "x_max"};
  float r[2];
  for (int k = 0; k < 2; k++) {
    const sm_tensor *t = sm__kctx_input(ctx, 1 + k);
    if (sm_tensor_rank(t) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "`%s` must be rank 0 but is rank %d", names[k], sm_tensor_rank(t));
    st = first_float(ctx, 1 + k, op, names[k], &r[k]);
    if (st) return st;
  }
  float in_min = r[0], in_max = r[1], in_scale = (in_max - in_min) / 255.0f;
  if (!(in_min < in_max))
    return sm_status_new(SM_INVALID_ARGUMENT, "input_min must be less than input_max : %g >= %g", in_min, in_max);
  if (sm_tensor_rank(x) != 4) { /* TF CHECK-fails (aborts) here */
    char a[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be 4-dimensional, got shape %s", op,
                         sm__array_shape_str(x, a, sizeof a));
  }
  const int64_t *d = sm_tensor_dims(x);
  int64_t N = d[0], HW = d[1] * d[2], C = d[3], n = sm_tensor_num_elements(x);
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QUINT8, 4, d, &y);
  if (st) return st;
  float *mv = sm__kctx_scratch(ctx, (size_t)(N * C) * 2 * sizeof *mv + 1, &st);
  if (!mv) return st;
  float *mean = mv, *rs = mv + N * C;
  const uint8_t *X = sm_tensor_data(x);
  for (int64_t b = 0; b < N; b++)
    for (int64_t c = 0; c < C; c++) {
      const uint8_t *p = X + b * HW * C + c;
      float sum = 0, sq = 0;
      for (int64_t i = 0; i < HW; i++) sum += (float)p[i * C];
      float m = sum / (float)HW;
      for (int64_t i = 0; i < HW; i++) {
        float t = in_scale * ((float)p[i * C] - m);
        sq += t * t;
      }
      mean[b * C + c] = m;
      rs[b * C + c] = 1.0f / sqrtf(sq / (float)HW + s->eps);
    }
  float lo = INFINITY, hi = -INFINITY;
  if (s->given) {
    lo = s->ymin, hi = s->ymax;
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t k = (i / (HW * C)) * C + i % C;
      float v = in_scale * ((float)X[i] - mean[k]) * rs[k];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  if (hi - lo < s->sep) hi = lo + s->sep;
  sm__requant q;
  sm__requant_init(&q, SM_QUINT8, 0, 1, SM_QUINT8, lo, hi);
  uint8_t *Y = sm_tensor_data(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = (i / (HW * C)) * C + i % C;
    Y[i] = (uint8_t)sm__requant_quantize(&q, in_scale * ((float)X[i] - mean[k]) * rs[k]);
  }
  sm__kctx_scratch_free(ctx, mv);
  st = sm__q_scalar_out(ctx, 1, lo);
  return st ? st : sm__q_scalar_out(ctx, 2, hi);
}

const sm_kernel sm_kernels_quantized_image[] = {
    {"QuantizedResizeBilinear", qresize_prepare, qresize_compute, free, 0},
    {"QuantizedBatchNormWithGlobalNormalization", qbn_prepare, qbn_compute, free, 0},
    {"QuantizedInstanceNorm", qin_prepare, qin_compute, free, 0},
    {0},
};
