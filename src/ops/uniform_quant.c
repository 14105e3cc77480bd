/* uniform_quant.c - TF's uniform quantized ops (scale and zero point per tensor or per axis, the
 * ones StableHLO-quantized SavedModels carry): UniformQuantize (float -> qint8 / qint32),
 * UniformDequantize (qint8 / qint32 -> float), UniformRequantize (qint8 / qint32 -> qint8, any mix
 * of per-tensor and per-axis input and output) and UniformQuantizedClipByValue (qint32). The
 * arithmetic is TF's (uniform_quant_ops/math_utils.h): quantize as floor(x * (1 / scale) + 0.5) +
 * zero point clamped to [quantization_min_val, quantization_max_val], in float; requantize with
 * the fixed-point multiplier and shift of QuantizeMultiplier (round to nearest, 31-bit), so the
 * integers are TF's bit for bit. TF's checks and messages (QuantizationAxisAndShapeValid).
 * Checked against TensorFlow by tests/unit/test_ops_e7.c (tools/gen_e7_cases.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/quant_int.h"
#include "ops/uniform_quant_int.h"

typedef sm__uq_params uq_params;

typedef struct uq_state {
  int tout;
  uq_params in, out; /* in: the op's only quantization when it has one */
} uq_state;

/* a prepare's state: a heap copy of s */
static sm_status *keep(const void *s, size_t n, void **state) {
  void *p = malloc(n);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(p, s, n);
  *state = p;
  return NULL;
}

sm_status *sm__uq_read_params(const sm_node *n, const char *prefix, uq_params *p) {
  char name[64];
  snprintf(name, sizeof name, "%squantization_axis", prefix);
  p->axis = -1;
  sm_status *st = sm__node_attr(n, name) ? sm__node_attr_int(n, name, &p->axis) : NULL;
  snprintf(name, sizeof name, "%squantization_min_val", prefix);
  if (!st) st = sm__node_attr_int(n, name, &p->lo);
  snprintf(name, sizeof name, "%squantization_max_val", prefix);
  if (!st) st = sm__node_attr_int(n, name, &p->hi);
  return st;
}

static sm_status *uq_prepare_common(const sm_node *n, void **state, const char *in_prefix, const char *out_prefix,
                                    const char *tout_attr) {
  uq_state s = {0};
  s.tout = -1;
  sm_status *st = sm__uq_read_params(n, in_prefix, &s.in);
  if (!st && out_prefix) st = sm__uq_read_params(n, out_prefix, &s.out);
  if (!st && tout_attr) st = sm__node_attr_type(n, tout_attr, &s.tout);
  if (st) return st;
  return keep(&s, sizeof s, state);
}

static sm_status *quantize_prepare(const sm_node *n, void **state) { return uq_prepare_common(n, state, "", NULL, "Tout"); }
static sm_status *clip_prepare(const sm_node *n, void **state) { return uq_prepare_common(n, state, "", NULL, NULL); }
static sm_status *requantize_prepare(const sm_node *n, void **state) {
  return uq_prepare_common(n, state, "input_", "output_", "Tout");
}

/* TF's QuantizationAxisAndShapeValid */
sm_status *sm__uq_axis_shape_valid(int rank, const int64_t *dims, const sm_tensor *scales, const sm_tensor *zps,
                                   int64_t axis) {
  char a[128], b[128];
  int rs = sm_tensor_rank(scales), rz = sm_tensor_rank(zps);
  sm_shape_str(rs, sm_tensor_dims(scales), a, sizeof a);
  sm_shape_str(rz, sm_tensor_dims(zps), b, sizeof b);
  int same = rs == rz;
  for (int i = 0; same && i < rs; i++) same = sm_tensor_dims(scales)[i] == sm_tensor_dims(zps)[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "scales and zero_points shape must be same, but given scales shape %s and "
                         "zero_points shape %s", a, b);
  if (axis < -1 || axis >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "quantization_axis must be -1 or in range [0, input.rank), but given %lld",
                         (long long)axis);
  if (axis == -1) {
    if (rs != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "If quantization_axis is -1, scales and zero_points must be scalar tensors, "
                           "but given scales shape %s and zero_points shape %s", a, b);
  } else if (rs != 1 || sm_tensor_dims(scales)[0] != dims[axis]) {
    return sm_status_new(SM_INVALID_ARGUMENT, "If quantization_axis is not -1, scales and zero_points must be a tensor of rank 1 "
                         "and the size must be equal to the input.dim_size(quantization_axis), but given quantization_axis %lld, "
                         "scales shape %s and zero_points shape %s", (long long)axis, a, b);
  }
  if (sm_tensor_dtype(scales) != SM_FLOAT || sm_tensor_dtype(zps) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "scales must be float and zero_points int32");
  return NULL;
}

static sm_status *axis_shape_valid(const sm_tensor *data, const sm_tensor *scales, const sm_tensor *zps, int64_t axis) {
  return sm__uq_axis_shape_valid(sm_tensor_rank(data), sm_tensor_dims(data), scales, zps, axis);
}

/* which scale and zero point element i of data uses: its index along axis (0 when axis is -1) */
typedef struct chans {
  int64_t mid, post;
  int per_axis;
} chans;

static chans chans_of(const sm_tensor *t, int64_t axis) {
  chans c = {1, 1, axis >= 0};
  for (int i = 0; i < sm_tensor_rank(t); i++)
    if (i == axis) c.mid = sm_tensor_dims(t)[i];
    else if (i > axis && axis >= 0) c.post *= sm_tensor_dims(t)[i];
  return c;
}

static int64_t chan(const chans *c, int64_t i) { return c->per_axis ? (i / c->post) % c->mid : 0; }

int32_t sm__uq_f2i32(float v) { /* cvttss2si: NaN and out of range give INT32_MIN */
  return (v >= -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : INT32_MIN;
}

/* A quantized element as TF's kernels cast it to int32: Eigen's QInt32 converts through float, so
 * 2^31 - 1 reads as 2^31 and becomes INT32_MIN. */
int32_t sm__uq_qint_as_int(const void *p, int T, int64_t i) { return sm__uq_f2i32((float)sm__qload(p, T, i)); }

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { /* TF's order: min with hi, then max with lo */
  v = v > hi ? hi : v;
  return v < lo ? lo : v;
}

/* TF's AsymmetricQuantize into [-128, 127] of values whose min and max are mn, mx: the scale, its
 * inverse and the zero point (a zero or non-finite range: scale 1, inverse 0, zero point 0, so every
 * value quantizes to 0) */
void sm__uq_asym_params(float mn, float mx, float *scale, float *inv, int32_t *zp) {
  const double qmin = -128.0, qmax = 127.0;
  double rmin = (double)fminf(0.0f, mn), rmax = (double)fmaxf(0.0f, mx);
  *inv = 0;
  *scale = (float)((rmax - rmin) / (qmax - qmin));
  if (rmax - rmin != 0) *inv = (float)((qmax - qmin) / (rmax - rmin));
  if (*scale == 0 || !isfinite(*inv)) {
    *scale = 1.0f, *inv = 0, *zp = 0;
    return;
  }
  double s = *scale, zmin = qmin - rmin / s, zmax = qmax - rmax / s;
  double emin = fabs(qmin) + fabs(rmin / s), emax = fabs(qmax) + fabs(rmax / s);
  double z = emin < emax ? zmin : zmax;
  *zp = z <= qmin ? -128 : z >= qmax ? 127 : (int8_t)round(z);
}

int8_t sm__uq_asym_one(float x, float inv, int32_t zp) {
  if (inv == 0) return 0;
  int32_t v = (int32_t)((uint32_t)sm__uq_f2i32(floorf(x * inv + 0.5f)) + (uint32_t)zp);
  return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

int sm__uq_all_positive(const sm_tensor *t) {
  const float *p = sm_tensor_data(t);
  for (int64_t i = 0, n = sm_tensor_num_elements(t); i < n; i++)
    if (!(p[i] > 0)) return 0;
  return 1;
}

sm_status *sm__uq_scales_positive(const sm_tensor *lsc, const sm_tensor *rsc, const sm_tensor *osc) {
  if (!sm__uq_all_positive(lsc)) return sm_status_new(SM_INVALID_ARGUMENT, "lhs scales elements must be all positive.");
  if (!sm__uq_all_positive(rsc)) return sm_status_new(SM_INVALID_ARGUMENT, "rhs scales elements must be all positive.");
  if (!sm__uq_all_positive(osc)) return sm_status_new(SM_INVALID_ARGUMENT, "output scales elements must be all positive.");
  return NULL;
}

sm_status *sm__uq_lhs_scalar(const sm_tensor *lsc, const sm_tensor *lzp) {
  int same = sm_tensor_rank(lsc) == sm_tensor_rank(lzp);
  for (int i = 0; same && i < sm_tensor_rank(lsc); i++) same = sm_tensor_dims(lsc)[i] == sm_tensor_dims(lzp)[i];
  if (!same || sm_tensor_rank(lsc) != 0) {
    char a[128], b[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs scales/zero_points must be all scalar tensors. Given: %s%s",
                         sm__array_shape_str(lsc, a, sizeof a), sm__array_shape_str(lzp, b, sizeof b));
  }
  return NULL;
}

sm_status *sm__uq_want_type(const sm_node *n, const char *op, const char *attr, int want) {
  int t = want;
  sm_status *st = sm__node_attr(n, attr) ? sm__node_attr_type(n, attr, &t) : NULL;
  if (st) return st;
  if (t != want)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: Value for attr '%s' of %s is not in the list of allowed values: %s", op, attr,
                         sm__array_dtype_str(t), sm__array_dtype_str(want));
  return NULL;
}

sm_status *sm__uq_want_input(sm_kctx *ctx, const char *op, int i, int want) {
  int t = sm_tensor_dtype(sm__kctx_input(ctx, i));
  if (t != want)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input %d must be %s, got %s", op, i, sm__array_dtype_str(want),
                         sm__array_dtype_str(t));
  return NULL;
}

/* ---- UniformQuantize, UniformDequantize ------------------------------------------------------- */

static sm_status *uquantize_compute(const void *state, sm_kctx *ctx) {
  const uq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *sc = sm__kctx_input(ctx, 1), *zp = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(x) != SM_FLOAT) return sm__math_bad_dtype("UniformQuantize", sm_tensor_dtype(x));
  if (s->tout != SM_QINT8 && s->tout != SM_QINT32) return sm__math_bad_dtype("UniformQuantize", s->tout);
  sm_status *st = axis_shape_valid(x, sc, zp, s->in.axis);
  if (st) return st;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, s->tout, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  chans c = chans_of(x, s->in.axis);
  const float *X = sm_tensor_data(x), *S = sm_tensor_data(sc);
  const int32_t *Z = sm_tensor_data(zp);
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    int64_t k = chan(&c, i);
    int32_t v = (int32_t)((uint32_t)sm__uq_f2i32(floorf(X[i] * (1.0f / S[k]) + 0.5f)) + (uint32_t)Z[k]);
    sm__qstore(sm_tensor_data(y), s->tout, i, clamp64(v, s->in.lo, s->in.hi));
  }
  return NULL;
}

static sm_status *udequantize_compute(const void *state, sm_kctx *ctx) {
  const uq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *sc = sm__kctx_input(ctx, 1), *zp = sm__kctx_input(ctx, 2);
  int T = sm_tensor_dtype(x);
  if (T != SM_QINT8 && T != SM_QINT32) return sm__math_bad_dtype("UniformDequantize", T);
  if (s->tout != SM_FLOAT) return sm__math_bad_dtype("UniformDequantize", s->tout);
  sm_status *st = axis_shape_valid(x, sc, zp, s->in.axis);
  if (st) return st;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  chans c = chans_of(x, s->in.axis);
  const float *S = sm_tensor_data(sc);
  const int32_t *Z = sm_tensor_data(zp);
  float *Y = sm_tensor_data(y);
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    int64_t k = chan(&c, i);
    Y[i] = (float)(int32_t)((uint32_t)sm__uq_qint_as_int(sm_tensor_data(x), T, i) - (uint32_t)Z[k]) * S[k];
  }
  return NULL;
}

/* ---- UniformRequantize ------------------------------------------------------------------------ */

/* TF's QuantizeMultiplier: m = q * 2^shift, q a 31-bit fixed-point fraction */
sm_status *sm__uq_quantize_multiplier(double m, int32_t *qm, int32_t *shift) {
  if (!isfinite(m) || m <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "double_multiplier must be a poisitive finite number. Given %g", m);
  int sh = 0;
  double q = frexp(m, &sh);
  int64_t fixed = (int64_t)round(q * (double)(1LL << 31));
  if (fixed == (1LL << 31)) fixed /= 2, sh++;
  if (sh < -31) sh = 0, fixed = 0;
  if (sh > 30) sh = 30, fixed = (1LL << 31) - 1;
  *qm = (int32_t)fixed;
  *shift = sh;
  return NULL;
}

static int32_t mul_by_quantized(int32_t x, int32_t qm, int shift) {
  int total = 31 - shift;
  int64_t r = (int64_t)x * qm + ((int64_t)1 << (total - 1));
  r >>= total;
  return (int32_t)clamp64(r, INT32_MIN, INT32_MAX);
}

int32_t sm__uq_requant(int32_t x, int32_t qm, int shift, int32_t in_zp, int32_t out_zp, int64_t lo, int64_t hi) {
  int32_t in = (int32_t)((uint32_t)x - (uint32_t)in_zp);
  int32_t v = (int32_t)((uint32_t)mul_by_quantized(in, qm, shift) + (uint32_t)out_zp);
  return (int32_t)clamp64(v, lo, hi);
}

static sm_status *urequantize_compute(const void *state, sm_kctx *ctx) {
  const uq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  const sm_tensor *isc = sm__kctx_input(ctx, 1), *izp = sm__kctx_input(ctx, 2), *osc = sm__kctx_input(ctx, 3),
                  *ozp = sm__kctx_input(ctx, 4);
  int T = sm_tensor_dtype(x);
  if (T != SM_QINT8 && T != SM_QINT32) return sm__math_bad_dtype("UniformRequantize", T);
  if (s->tout != SM_QINT8)
    return sm_status_new(SM_UNIMPLEMENTED, "UniformRequantize: no kernel for Tout %s (TensorFlow registers qint8 only)",
                         sm__array_dtype_str(s->tout));
  sm_status *st = axis_shape_valid(x, isc, izp, s->in.axis);
  if (!st) st = axis_shape_valid(x, osc, ozp, s->out.axis);
  if (st) return st;
  if (s->in.axis >= 0 && s->out.axis >= 0 && s->in.axis != s->out.axis)
    return sm_status_new(SM_INVALID_ARGUMENT, "If input and output is both per-axis quantized, the quantization axis must be same.");
  const float *IS = sm_tensor_data(isc), *OS = sm_tensor_data(osc);
  for (int64_t i = 0; i < sm_tensor_num_elements(isc); i++)
    if (!(IS[i] > 0)) return sm_status_new(SM_INVALID_ARGUMENT, "input/output scales elements must be all positive.");
  for (int64_t i = 0; i < sm_tensor_num_elements(osc); i++)
    if (!(OS[i] > 0)) return sm_status_new(SM_INVALID_ARGUMENT, "input/output scales elements must be all positive.");
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, s->tout, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  chans c = chans_of(x, s->in.axis >= 0 ? s->in.axis : s->out.axis);
  const int32_t *IZ = sm_tensor_data(izp), *OZ = sm_tensor_data(ozp);
  int32_t *qm = sm__kctx_scratch(ctx, (size_t)(c.mid + 1) * 2 * sizeof *qm, &st);
  if (!qm) return st;
  for (int64_t m = 0; m < c.mid; m++) { /* one multiplier and shift a channel */
    double mult = (double)IS[s->in.axis >= 0 ? m : 0] / (double)OS[s->out.axis >= 0 ? m : 0];
    st = sm__uq_quantize_multiplier(mult, &qm[2 * m], &qm[2 * m + 1]);
    if (st) {
      sm__kctx_scratch_free(ctx, qm);
      return st;
    }
  }
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    int64_t m = chan(&c, i), ki = s->in.axis >= 0 ? m : 0, ko = s->out.axis >= 0 ? m : 0;
    sm__qstore(sm_tensor_data(y), s->tout, i,
               sm__uq_requant(sm__uq_qint_as_int(sm_tensor_data(x), T, i), qm[2 * m], qm[2 * m + 1], IZ[ki], OZ[ko],
                              s->out.lo, s->out.hi));
  }
  sm__kctx_scratch_free(ctx, qm);
  return NULL;
}

/* ---- UniformQuantizedClipByValue -------------------------------------------------------------- */

static sm_status *uclip_compute(const void *state, sm_kctx *ctx) {
  const uq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2),
                  *sc = sm__kctx_input(ctx, 3), *zp = sm__kctx_input(ctx, 4);
  if (sm_tensor_dtype(x) != SM_QINT32) return sm__math_bad_dtype("UniformQuantizedClipByValue", sm_tensor_dtype(x));
  sm_status *st = axis_shape_valid(x, sc, zp, s->in.axis);
  if (st) return st;
  const sm_tensor *lim[2] = {mn, mx};
  static const char *const names[2] = {"min", "max"};
  for (int j = 0; j < 2; j++) {
    int same = sm_tensor_rank(lim[j]) == sm_tensor_rank(sc) && sm_tensor_dtype(lim[j]) == SM_QINT32;
    for (int i = 0; same && i < sm_tensor_rank(sc); i++) same = sm_tensor_dims(lim[j])[i] == sm_tensor_dims(sc)[i];
    if (!same) {
      char a[128], b[128];
      return sm_status_new(SM_INVALID_ARGUMENT, "Input %s shape must be same as scales/zero_points. Given %s of shape %s and "
                           "scales/zero_points of shape %s", names[j], names[j],
                           sm_shape_str(sm_tensor_rank(lim[j]), sm_tensor_dims(lim[j]), a, sizeof a),
                           sm_shape_str(sm_tensor_rank(sc), sm_tensor_dims(sc), b, sizeof b));
    }
  }
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  chans c = chans_of(x, s->in.axis);
  const int32_t *X = sm_tensor_data(x), *LO = sm_tensor_data(mn), *HI = sm_tensor_data(mx);
  int32_t *Y = sm_tensor_data(y);
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    int64_t k = chan(&c, i);
    int32_t v = X[i] < LO[k] ? LO[k] : X[i]; /* cwiseMax(min) then cwiseMin(max) */
    Y[i] = v > HI[k] ? HI[k] : v;
  }
  return NULL;
}

const sm_kernel sm_kernels_uniform_quant[] = {
    {"UniformQuantize", quantize_prepare, uquantize_compute, free, 0},
    {"UniformDequantize", quantize_prepare, udequantize_compute, free, 0},
    {"UniformRequantize", requantize_prepare, urequantize_compute, free, 0},
    {"UniformQuantizedClipByValue", clip_prepare, uclip_compute, free, 0},
    {0},
};
