/* quant_int.h - what the quantized kernel families (quantize.c, quantized_nn.c) share: a quantized
 * dtype's integer range, loading and storing its elements as int64, and TF's float<->quantized
 * conversions (quantization_utils.h) in TF's precision: the exact scalar ones (FloatToQuantized,
 * QuantizedToFloat, in double) and the Eigen-expression ones (QUANTIZE_WITH_EIGEN /
 * DEQUANTIZE_WITH_EIGEN, in float) as one requantizer from one range and dtype into another; and a
 * float scalar output (the min / max outputs these ops carry). */
#ifndef SM_OPS_QUANT_INT_H
#define SM_OPS_QUANT_INT_H
#include <math.h>
#include <stdint.h>

#include "runtime/kernel.h"
#include "savedmodel/tensor.h"

/* the integer range of a quantized dtype; 0 for any other */
static inline int sm__qtype_range(int dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case SM_QINT8: *lo = -128, *hi = 127; return 1;
  case SM_QUINT8: *lo = 0, *hi = 255; return 1;
  case SM_QINT16: *lo = -32768, *hi = 32767; return 1;
  case SM_QUINT16: *lo = 0, *hi = 65535; return 1;
  case SM_QINT32: *lo = INT32_MIN, *hi = INT32_MAX; return 1;
  default: return 0;
  }
}

static inline void sm__qstore(void *p, int dt, int64_t i, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
  case SM_QINT8: case SM_QUINT8: ((uint8_t *)p)[i] = (uint8_t)u; break;
  case SM_QINT16: case SM_QUINT16: ((uint16_t *)p)[i] = (uint16_t)u; break;
  default: ((uint32_t *)p)[i] = (uint32_t)u; break;
  }
}

static inline int64_t sm__qload(const void *p, int dt, int64_t i) {
  switch (dt) {
  case SM_QINT8: return ((const int8_t *)p)[i];
  case SM_QUINT8: return ((const uint8_t *)p)[i];
  case SM_QINT16: return ((const int16_t *)p)[i];
  case SM_QUINT16: return ((const uint16_t *)p)[i];
  default: return ((const int32_t *)p)[i];
  }
}

/* number_of_steps: 2^bits of the dtype, as a double */
static inline double sm__qsteps(int dt) {
  int64_t lo = 0, hi = 0;
  sm__qtype_range(dt, &lo, &hi);
  return (double)(hi - lo) + 1.0;
}

/* A double to int64 as x86 converts it (NaN and out of range: INT64_MIN). */
static inline int64_t sm__q_f2i64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)v;
}

/* TF's FloatToQuantizedUnclamped<T> */
static inline int64_t sm__q_from_float_unclamped(int dt, float x, float mn, float mx) {
  int64_t lo = 0, hi = 0;
  sm__qtype_range(dt, &lo, &hi);
  if (mn == mx) return lo;
  double steps = sm__qsteps(dt), range = (double)(mx - mn) * (steps / (steps - 1.0)), scale = steps / range;
  int64_t q = sm__q_f2i64(round((double)x * scale) - round((double)mn * scale));
  return (int64_t)((uint64_t)q + (uint64_t)lo);
}

/* TF's FloatToQuantized<T>: clamped to the dtype */
static inline int64_t sm__q_from_float(int dt, float x, float mn, float mx) {
  int64_t lo = 0, hi = 0;
  sm__qtype_range(dt, &lo, &hi);
  int64_t q = sm__q_from_float_unclamped(dt, x, mn, mx);
  return q < lo ? lo : q > hi ? hi : q;
}

/* TF's QuantizedToFloat<T> */
static inline float sm__q_to_float(int dt, int64_t v, float mn, float mx) {
  if (mn == mx) return mn;
  int64_t lo = 0, hi = 0;
  sm__qtype_range(dt, &lo, &hi);
  double steps = sm__qsteps(dt), range = (double)(mx - mn) * (steps / (steps - 1.0)), scale = range / steps;
  float fs = (float)scale;
  double rmin = (double)(roundf(mn / fs) * fs);
  return (float)(rmin + ((double)v - (double)lo) * scale);
}

/* One element requantized from [in_min, in_max] of dtype tin to [out_min, out_max] of dtype tout,
 * as TF's Eigen expressions do it (DEQUANTIZE_WITH_EIGEN then QUANTIZE_WITH_EIGEN, in float). */
typedef struct sm__requant {
  int same;
  float a, b;                 /* x -> b + x * a */
  float scale, off, lob, hib; /* f -> clamp(round(f * scale) - off) */
} sm__requant;

static inline void sm__requant_init(sm__requant *q, int tin, float in_min, float in_max, int tout, float out_min,
                                    float out_max) {
  int64_t ilo = 0, ihi = 0, olo = 0, ohi = 0;
  sm__qtype_range(tin, &ilo, &ihi);
  sm__qtype_range(tout, &olo, &ohi);
  q->same = tin == tout && in_min == out_min && in_max == out_max;
  q->a = (float)((double)(in_max - in_min) / (sm__qsteps(tin) - 1.0));
  float rmin = in_max == in_min ? in_min : roundf(in_min / q->a) * q->a;
  q->b = rmin - (float)ilo * q->a;
  float span = out_max - out_min;
  q->scale = out_max == out_min ? 0.0f : (float)((sm__qsteps(tout) - 1.0) / (double)span);
  q->off = roundf(out_min * q->scale) - (float)olo;
  q->lob = fmaxf((float)olo, -2.147483648e+09f);
  q->hib = fminf((float)ohi, +2.147483520e+09f);
}

static inline float sm__requant_float(const sm__requant *q, int64_t v) { return q->b + (float)v * q->a; }

/* QUANTIZE_WITH_EIGEN of one float */
static inline int64_t sm__requant_quantize(const sm__requant *q, float f) {
  float t = roundf(f * q->scale) - q->off;
  t = t < q->lob ? q->lob : t;
  t = t > q->hib ? q->hib : t;
  return (t >= -2147483648.0f && t < 2147483648.0f) ? (int64_t)(int32_t)t : (int64_t)INT32_MIN;
}

static inline int64_t sm__requant_one(const sm__requant *q, int64_t v) {
  return sm__requant_quantize(q, sm__requant_float(q, v));
}

/* output i as a float scalar holding v */
static inline sm_status *sm__q_scalar_out(sm_kctx *ctx, int i, float v) {
  sm_tensor *t;
  sm_status *st = sm__kctx_alloc_output(ctx, i, SM_FLOAT, 0, NULL, &t);
  if (!st) *(float *)sm_tensor_data(t) = v;
  return st;
}

/* ResizeBilinear's input checks and scales (ImageResizerState, half_pixel_centers false); image.c */
sm_status *sm__image_resize_validate(const sm_tensor *img, const sm_tensor *size, int align_corners, int64_t *oh,
                                     int64_t *ow, float *hs, float *ws);

#endif
