/* quantize.c - the quantize kernel family: the real (not fake) quantization ops that
 * tf.quantization.quantize / dequantize / quantize_and_dequantize[_v2] leave in a graph:
 * QuantizeV2 (float -> qint8 / quint8 / qint16 / quint16 / qint32, modes MIN_COMBINED, MIN_FIRST
 * and SCALED, round_mode, narrow_range, a per-channel axis, ensure_minimum_range), Dequantize
 * (those five to float or bfloat16) and QuantizeAndDequantizeV2 / V3 / V4 (float and double,
 * one range or one per channel, given or taken from the input, HALF_UP / HALF_TO_EVEN) and
 * QuantizedConcat (tf.quantization.quantized_concat: quint8 / qint32, every input requantized into
 * the union of the ranges, MIN_FIRST style).
 * The quantized dtypes are carried as the plain integers TF stores (SM_QINT8 is an int8 buffer).
 * The arithmetic is TF's, step for step and in the same precision (quantize_op.cc,
 * dequantize_op.cc, quantization_utils.h, quantize_and_dequantize_op.h): what TF computes in
 * double is computed in double here, the rest in float, so the integers come out equal. Where
 * TF's kernels convert an out-of-range float to an integer (qint32 MIN_COMBINED at the top of the
 * range, NaN) the result is what TF's scalar path gives (the value through a 64-bit integer,
 * truncated to the type's width). TF's messages for bad input. Checked against TensorFlow by
 * tests/unit/test_ops_c5.c (tools/gen_c5_cases.py). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "ops/quant_int.h"

enum { MODE_MIN_COMBINED, MODE_MIN_FIRST, MODE_SCALED };

/* optional attrs (a SavedModel drops those at their default) */
static sm_status *opt_str(const sm_node *n, const char *name, const char *def, char *out, size_t cap) {
  const char *s = def;
  size_t len = strlen(def);
  if (sm__node_attr(n, name)) {
    sm_status *st = sm__node_attr_string(n, name, &s, &len);
    if (st) return st;
  }
  if (len >= cap) len = cap - 1;
  memcpy(out, s, len);
  out[len] = 0;
  return NULL;
}
static sm_status *opt_int(const sm_node *n, const char *name, int64_t def, int64_t *v) {
  *v = def;
  return sm__node_attr(n, name) ? sm__node_attr_int(n, name, v) : NULL;
}
static sm_status *opt_bool(const sm_node *n, const char *name, int def, int *v) {
  *v = def;
  return sm__node_attr(n, name) ? sm__node_attr_bool(n, name, v) : NULL;
}
static sm_status *opt_float(const sm_node *n, const char *name, float def, float *v) {
  *v = def;
  return sm__node_attr(n, name) ? sm__node_attr_float(n, name, v) : NULL;
}

static sm_status *parse_mode(const char *m, int *mode) {
  if (!strcmp(m, "MIN_COMBINED")) *mode = MODE_MIN_COMBINED;
  else if (!strcmp(m, "MIN_FIRST")) *mode = MODE_MIN_FIRST;
  else if (!strcmp(m, "SCALED")) *mode = MODE_SCALED;
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "Value for attr 'mode' of \"%s\" is not in the list of allowed values: "
                         "\"MIN_COMBINED\", \"MIN_FIRST\", \"SCALED\"", m);
  return NULL;
}

/* the float input viewed as [pre, slices, post] around axis (axis < 0: one slice) */
static void axis_split(const sm_tensor *x, int64_t axis, int64_t *pre, int64_t *mid, int64_t *post) {
  int r = sm_tensor_rank(x);
  const int64_t *d = sm_tensor_dims(x);
  *pre = 1, *mid = 1, *post = 1;
  if (axis < 0) {
    *mid = sm_tensor_num_elements(x);
    return;
  }
  for (int i = 0; i < r; i++) {
    if (i < axis) *pre *= d[i];
    else if (i == axis) *mid = d[i];
    else *post *= d[i];
  }
}

/* ---- QuantizeV2 ------------------------------------------------------------------------------ */

typedef struct quant_state {
  int mode, half_even, narrow, T;
  int64_t axis;
  float ensure_min;
} quant_state;

static sm_status *quantize_prepare(const sm_node *node, void **state) {
  quant_state s = {0};
  char mode[32], round[32];
  sm_status *st = opt_str(node, "mode", "MIN_COMBINED", mode, sizeof mode);
  if (!st) st = opt_str(node, "round_mode", "HALF_AWAY_FROM_ZERO", round, sizeof round);
  if (!st) st = opt_bool(node, "narrow_range", 0, &s.narrow);
  if (!st) st = opt_int(node, "axis", -1, &s.axis);
  if (!st) st = opt_float(node, "ensure_minimum_range", 0.01f, &s.ensure_min);
  if (!st) st = sm__node_attr_type(node, "T", &s.T);
  if (!st) st = parse_mode(mode, &s.mode);
  if (st) return st;
  int64_t lo = 0, hi = 0;
  if (!sm__qtype_range(s.T, &lo, &hi)) return sm__math_bad_dtype("QuantizeV2", s.T);
  if (!strcmp(round, "HALF_TO_EVEN")) s.half_even = 1;
  else if (strcmp(round, "HALF_AWAY_FROM_ZERO"))
    return sm_status_new(SM_INVALID_ARGUMENT, "Value for attr 'round_mode' of \"%s\" is not in the list of allowed values: "
                         "\"HALF_AWAY_FROM_ZERO\", \"HALF_TO_EVEN\"", round);
  if (s.half_even && s.mode != MODE_SCALED)
    return sm_status_new(SM_INVALID_ARGUMENT, "Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', but mode is '%s'.", mode);
  quant_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

/* One slice: x[(a * mid + k) * post + b]-style strided walk given as (count, outer, stride). */
typedef struct slice {
  const float *x;
  void *y;
  int64_t pre, mid, post, k; /* elements x[(p * mid + k) * post + q] for p < pre, q < post */
} slice;

static sm_status *quantize_slice(const quant_state *s, const slice *sl, float in_min, float in_max, float *out_min,
                                 float *out_max) {
  if (in_max < in_min) return sm_status_new(SM_INVALID_ARGUMENT, "input_max_range must be larger than input_min_range.");
  int64_t lo = 0, hi = 0;
  sm__qtype_range(s->T, &lo, &hi);
  float min_range = fminf(0.0f, in_min);
  float epsilon = fmaxf(1.0f, fmaxf(fabsf(in_min), fabsf(in_max))) * s->ensure_min;
  float max_range = fmaxf(0.0f, fmaxf(in_max, min_range + epsilon));
  int sign = lo < 0;
  float scale = 0, half = 0, lob = 0, hib = 0, rmin_scaled = 0;
  if (s->mode == MODE_MIN_COMBINED) {
    scale = (float)(((double)hi - (double)lo) / (double)(max_range - min_range));
    half = sign ? (float)(((double)hi - (double)lo + 1) / 2.0) : 0.0f;
  } else if (s->mode == MODE_SCALED) {
    int64_t minv = lo + (s->narrow ? 1 : 0);
    float fmin = (float)minv * min_range > 0 ? (float)minv / min_range : FLT_MAX;
    float fmax = (float)hi * max_range > 0 ? (float)hi / max_range : FLT_MAX;
    scale = fminf(fmin, fmax);
    min_range = (float)minv / scale;
    max_range = (float)hi / scale;
  } else { /* MIN_FIRST: FloatToQuantizedStruct */
    double steps = lo == INT32_MIN ? 4294967296.0 : (double)(hi - lo + 1);
    float span = max_range - min_range;
    scale = span == 0.0f ? 0.0f : (float)((steps - 1.0) / (double)span);
    rmin_scaled = roundf(min_range * scale);
    lob = fmaxf((float)lo, -2.147483648e+09f);
    hib = fminf((float)hi, +2.147483520e+09f);
  }
  float lowf = (float)lo, off = rmin_scaled - lowf;
  for (int64_t p = 0; p < sl->pre; p++)
    for (int64_t q = 0; q < sl->post; q++) {
      int64_t i = (p * sl->mid + sl->k) * sl->post + q;
      float v = sl->x[i], c = v > max_range ? max_range : v; /* NaN stays NaN, as Eigen's scalar min/max */
      c = c < min_range ? min_range : c;
      int64_t out;
      if (s->mode == MODE_MIN_COMBINED) {
        float t = (c - min_range) * scale;
        out = sign ? sm__q_f2i64(roundf(t - half)) : sm__q_f2i64(truncf(t + 0.5f));
      } else if (s->mode == MODE_SCALED) {
        float t = c * scale;
        out = sm__q_f2i64(s->half_even ? rintf(t) : roundf(t));
      } else {
        float t = roundf(v * scale) - off;
        t = t < lob ? lob : t; /* Eigen cwiseMax then cwiseMin */
        t = t > hib ? hib : t;
        out = (t >= -2147483648.0f && t < 2147483648.0f) ? (int64_t)(int32_t)t : (int64_t)INT32_MIN;
      }
      sm__qstore(sl->y, s->T, i, out);
    }
  *out_min = min_range, *out_max = max_range;
  return NULL;
}

static sm_status *quantize_compute(const void *state, sm_kctx *ctx) {
  const quant_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(x) != SM_FLOAT || sm_tensor_dtype(mn) != SM_FLOAT || sm_tensor_dtype(mx) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "QuantizeV2: input, min_range and max_range must be float");
  int r = sm_tensor_rank(x);
  if (s->axis >= r)
    return sm_status_new(SM_INVALID_ARGUMENT, "Axis is on a zero-based index, so its value must always be less than number "
                         "of input's dims, but given axis value was %lld and input's dims was %d", (long long)s->axis, r);
  int64_t slices = s->axis > -1 ? sm_tensor_dims(x)[s->axis] : 1;
  const sm_tensor *rt[2] = {mn, mx};
  static const char *rn[2] = {"min_range", "max_range"};
  for (int k = 0; k < 2; k++) {
    if (s->axis > -1 && sm_tensor_rank(rt[k]) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "If axis is specified, %s must be a 1-D tensor whose size matches the axis "
                           "dimension of the input and output tensors, but %s dims are %d", rn[k], rn[k], sm_tensor_rank(rt[k]));
    if (s->axis > -1 && sm_tensor_dims(rt[k])[0] != slices)
      return sm_status_new(SM_INVALID_ARGUMENT, "If axis is specified, %s must be a 1-D tensor whose size matches the axis "
                           "dimension of the input and output tensors, but %s is a 1-D tensor of size %lld and input's "
                           "axis dimension is of size %lld", rn[k], rn[k], (long long)sm_tensor_dims(rt[k])[0], (long long)slices);
    if (s->axis <= -1 && sm_tensor_num_elements(rt[k]) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "If axis is not specified, %s must contain a single float element, but it "
                           "contains %lld elements", rn[k], (long long)sm_tensor_num_elements(rt[k]));
  }
  if (slices != 1 && s->mode == MODE_MIN_FIRST)
    return sm_status_new(SM_UNIMPLEMENTED, "MIN_FIRST mode is not implemented for Quantize with axis != -1.");
  sm_tensor *y, *omin, *omax;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, s->T, r, sm_tensor_dims(x), &y);
  int mr = slices == 1 ? 0 : 1;
  if (!st) st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, mr, sm_tensor_dims(mn), &omin);
  if (!st) st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, mr, sm_tensor_dims(mn), &omax);
  if (st) return st;
  slice sl = {sm_tensor_data(x), sm_tensor_data(y), 1, 1, 1, 0};
  axis_split(x, slices == 1 ? -1 : s->axis, &sl.pre, &sl.mid, &sl.post);
  if (slices == 1) sl.post = sl.mid, sl.mid = 1;
  const float *vmin = sm_tensor_data(mn), *vmax = sm_tensor_data(mx);
  for (int64_t k = 0; k < slices && !st; k++) {
    sl.k = k;
    st = quantize_slice(s, &sl, vmin[k], vmax[k], (float *)sm_tensor_data(omin) + k, (float *)sm_tensor_data(omax) + k);
  }
  return st;
}

/* ---- Dequantize ------------------------------------------------------------------------------ */

typedef struct dequant_state {
  int mode, narrow, dtype;
  int64_t axis;
} dequant_state;

static sm_status *dequantize_prepare(const sm_node *node, void **state) {
  dequant_state s = {0};
  char mode[32];
  sm_status *st = opt_str(node, "mode", "MIN_COMBINED", mode, sizeof mode);
  if (!st) st = opt_bool(node, "narrow_range", 0, &s.narrow);
  if (!st) st = opt_int(node, "axis", -1, &s.axis);
  s.dtype = SM_FLOAT;
  if (!st && sm__node_attr(node, "dtype")) st = sm__node_attr_type(node, "dtype", &s.dtype);
  if (!st) st = parse_mode(mode, &s.mode);
  if (st) return st;
  if (s.dtype != SM_FLOAT && s.dtype != SM_BFLOAT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "Output type must be bfloat16 or float, is '%s'", sm_dtype_name(s.dtype));
  if (s.dtype == SM_BFLOAT16 && s.mode != MODE_MIN_COMBINED)
    return sm_status_new(SM_INVALID_ARGUMENT, "When output type is bfloat16, Mode string must be 'MIN_COMBINED', is '%s'", mode);
  dequant_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

static void dequantize_slice(const dequant_state *s, int T, const void *x, float *y, int64_t pre, int64_t mid,
                             int64_t post, int64_t k, float min_range, float max_range, int whole) {
  int64_t lo = 0, hi = 0;
  sm__qtype_range(T, &lo, &hi);
  float flo = (float)lo, fhi = (float)hi;
  float half = lo < 0 ? (fhi - flo + 1) / 2.0f : 0.0f;
  float a = 0, b = 0;
  if (s->mode == MODE_MIN_COMBINED) {
    a = (max_range - min_range) / (fhi - flo); /* y = (x + half) * a + min */
  } else if (s->mode == MODE_SCALED) {
    float minv = (float)(lo + (s->narrow ? 1 : 0));
    a = lo == 0 ? max_range / fhi : fmaxf(min_range / minv, max_range / fhi);
  } else { /* MIN_FIRST (whole tensor only): QuantizedToFloatStruct */
    double steps = lo == INT32_MIN ? 4294967296.0 : (double)(hi - lo + 1);
    a = (float)((double)(max_range - min_range) / (steps - 1.0));
    float rmin = max_range == min_range ? min_range : roundf(min_range / a) * a;
    b = rmin - flo * a;
  }
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++) {
      int64_t i = (p * mid + k) * post + q;
      float v = (float)sm__qload(x, T, i);
      /* TF's whole-tensor SCALED path casts to int through float: 2^31 wraps to INT32_MIN */
      if (whole && s->mode == MODE_SCALED && v >= 2147483648.0f) v = -2147483648.0f;
      y[i] = s->mode == MODE_MIN_COMBINED ? (v + half) * a + min_range : s->mode == MODE_SCALED ? v * a : b + v * a;
    }
}

static sm_status *dequantize_compute(const void *state, sm_kctx *ctx) {
  const dequant_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
  int T = sm_tensor_dtype(x);
  int64_t lo = 0, hi = 0;
  if (!sm__qtype_range(T, &lo, &hi)) return sm__math_bad_dtype("Dequantize", T);
  if (sm_tensor_dtype(mn) != SM_FLOAT || sm_tensor_dtype(mx) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "Dequantize: min_range and max_range must be float");
  int r = sm_tensor_rank(x);
  if (s->axis >= r)
    return sm_status_new(SM_INVALID_ARGUMENT, "Axis must be less than input dimension(%d), got %lld", r, (long long)s->axis);
  int64_t slices = s->axis > -1 ? sm_tensor_dims(x)[s->axis] : 1;
  if (sm_tensor_num_elements(mn) != slices)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_min_tensor must have as many elements as input on the dequantization "
                         "axis (%lld), got %lld, expected %lld", (long long)s->axis, (long long)sm_tensor_num_elements(mn), (long long)slices);
  if (sm_tensor_num_elements(mx) != slices)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_max_tensor must have as many elements as input on the dequantization "
                         "axis (%lld), got %lld, expected %lld", (long long)s->axis, (long long)sm_tensor_num_elements(mx), (long long)slices);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, s->dtype, r, sm_tensor_dims(x), &y);
  if (st) return st;
  if (slices != 1 && s->mode == MODE_MIN_FIRST)
    return sm_status_new(SM_UNIMPLEMENTED, "MIN_FIRST mode is not implemented for Dequantize with axis != -1.");
  int64_t n = sm_tensor_num_elements(x);
  float *f = s->dtype == SM_FLOAT ? sm_tensor_data(y) : sm__kctx_scratch(ctx, (size_t)(n ? n : 1) * sizeof(float), &st);
  if (!f) return st;
  int64_t pre, mid, post;
  axis_split(x, slices == 1 ? -1 : s->axis, &pre, &mid, &post);
  if (slices == 1) post = mid, mid = 1;
  const float *vmin = sm_tensor_data(mn), *vmax = sm_tensor_data(mx);
  for (int64_t k = 0; k < slices; k++)
    dequantize_slice(s, T, sm_tensor_data(x), f, pre, mid, post, k, vmin[k], vmax[k], slices == 1);
  if (s->dtype == SM_BFLOAT16) {
    uint16_t *o = sm_tensor_data(y);
    for (int64_t i = 0; i < n; i++) o[i] = sm__f32_to_bf16(f[i]);
    sm__kctx_scratch_free(ctx, f);
  }
  return NULL;
}

/* ---- QuantizeAndDequantizeV2 / V3 / V4 ------------------------------------------------------- */

typedef struct qdq_state {
  int v3, signed_input, range_given, half_up, narrow;
  int64_t num_bits, axis;
} qdq_state;

static sm_status *qdq_prepare(const sm_node *node, void **state) {
  qdq_state s = {0};
  s.v3 = !strcmp(sm__node_op(node), "QuantizeAndDequantizeV3");
  char round[32];
  sm_status *st = opt_bool(node, "signed_input", 1, &s.signed_input);
  if (!st) st = opt_bool(node, "range_given", s.v3 ? 1 : 0, &s.range_given);
  if (!st) st = opt_bool(node, "narrow_range", 0, &s.narrow);
  if (!st) st = opt_int(node, "axis", -1, &s.axis);
  if (!st) st = opt_int(node, "num_bits", 8, &s.num_bits);
  if (!st) st = opt_str(node, "round_mode", "HALF_TO_EVEN", round, sizeof round);
  if (st) return st;
  if (!s.v3) {
    if (!strcmp(round, "HALF_UP")) s.half_up = 1;
    else if (strcmp(round, "HALF_TO_EVEN"))
      return sm_status_new(SM_INVALID_ARGUMENT, "Value for attr 'round_mode' of \"%s\" is not in the list of allowed values: "
                           "\"HALF_TO_EVEN\", \"HALF_UP\"", round);
    if (!(s.num_bits > 0 && s.num_bits < (s.signed_input ? 62 : 63)))
      return sm_status_new(SM_INVALID_ARGUMENT, "num_bits is out of range: %lld with signed_input_ %d", (long long)s.num_bits,
                           s.signed_input);
  }
  if (s.axis < -1) return sm_status_new(SM_INVALID_ARGUMENT, "Axis must be at least -1. Found %lld", (long long)s.axis);
  qdq_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

/* ComputeQuantizationRange, then (Clamp)ScaleAndRound over one channel, in double or float */
#define QDQ_CHANNEL(NAME, T, TMAX, RINT, FLOOR)                                                                     \
  static void NAME(const qdq_state *s, int bits, const T *x, T *y, int64_t pre, int64_t mid, int64_t post, int64_t k, \
                   T min_range, T max_range) {                                                                       \
    int64_t minq = s->signed_input ? (s->narrow ? -(int64_t)(1ULL << (bits - 1)) + 1 : -(int64_t)(1ULL << (bits - 1))) : 0; \
    int64_t maxq = s->signed_input ? (int64_t)(1ULL << (bits - 1)) - 1 : (int64_t)(1ULL << bits) - 1;               \
    T from_min = (T)minq * min_range > 0 ? (T)minq / min_range : TMAX;                                               \
    T from_max = (T)maxq * max_range > 0 ? (T)maxq / max_range : TMAX;                                               \
    T scale, inv;                                                                                                    \
    if (from_min < from_max) {                                                                                       \
      scale = from_min, inv = min_range / (T)minq, max_range = (T)maxq * inv;                                        \
    } else {                                                                                                         \
      scale = from_max, inv = max_range / (T)maxq, min_range = (T)minq * inv;                                        \
    }                                                                                                                \
    for (int64_t p = 0; p < pre; p++)                                                                                \
      for (int64_t q = 0; q < post; q++) {                                                                           \
        int64_t i = (p * mid + k) * post + q;                                                                        \
        T v = x[i];                                                                                                  \
        if (s->range_given) {                                                                                        \
          v = v > max_range ? max_range : v;                                                                         \
          v = v < min_range ? min_range : v;                                                                         \
        }                                                                                                            \
        v = v * scale;                                                                                               \
        y[i] = (s->half_up ? FLOOR(v + (T)0.5) : RINT(v)) * inv;                                                     \
      }                                                                                                              \
  }
QDQ_CHANNEL(qdq_channel_f32, float, FLT_MAX, rintf, floorf)
QDQ_CHANNEL(qdq_channel_f64, double, DBL_MAX, rint, floor)

static double elem(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_FLOAT ? ((const float *)sm_tensor_data(t))[i] : ((const double *)sm_tensor_data(t))[i];
}

static sm_status *qdq_compute(const void *state, sm_kctx *ctx) {
  const qdq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), dt);
  if (sm_tensor_dtype(mn) != dt || sm_tensor_dtype(mx) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_min and input_max must have the input's dtype");
  if (s->axis >= r) {
    if (!s->v3) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be at least rank %lld but is rank %d", (long long)s->axis + 1, r);
    return sm_status_new(SM_INVALID_ARGUMENT, "Axis requested is larger than input dimensions. Axis: %lld Input Dimensions: %d",
                         (long long)s->axis, r);
  }
  int64_t depth = s->axis == -1 ? 1 : sm_tensor_dims(x)[s->axis];
  int64_t bits = s->num_bits;
  if (s->v3) {
    const sm_tensor *nb = sm__kctx_input(ctx, 3);
    if (sm_tensor_dtype(nb) != SM_INT32 || sm_tensor_num_elements(nb) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "num_bits must be an int32 scalar");
    bits = *(const int32_t *)sm_tensor_data(nb);
    if (!(bits > 0 && bits < (s->signed_input ? 62 : 63)))
      return sm_status_new(SM_INVALID_ARGUMENT, "num_bits is out of range: %lld with `signed_input_` %d", (long long)bits,
                           s->signed_input);
  }
  const sm_tensor *rng[2] = {mn, mx};
  static const char *nm[2] = {"input_min", "input_max"};
  if (s->range_given && !s->v3) {
    /* V2 / V4 (TF 2.21): a given range must be one scalar pair, whatever the axis */
    for (int j = 0; j < 2 && s->axis != -1; j++)
      if (sm_tensor_rank(rng[j]) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be rank 1 for %s_tensor when the axis is specified", nm[j]);
    for (int j = 0; j < 2; j++)
      if (sm_tensor_rank(rng[j]) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar.", nm[j]);
  }
  if (s->range_given && s->axis == -1) {
    if (sm_tensor_rank(mn) != 0 || sm_tensor_rank(mx) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "input_min and input_max must be scalars when axis is -1");
    if (!(elem(mn, 0) <= elem(mx, 0)))
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid range: input_min %g > input_max %g", elem(mn, 0), elem(mx, 0));
  } else if (s->range_given) {
    for (int j = 0; j < 2; j++) {
      int64_t d0 = sm_tensor_rank(rng[j]) ? sm_tensor_dims(rng[j])[0] : 1;
      char sh[64];
      if (sm_tensor_rank(rng[j]) != 1 || d0 != depth)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s_tensor has incorrect size, was %lld expected %lld to match dim %lld of the input %s",
                             nm[j], (long long)d0, (long long)depth, (long long)s->axis,
                             sm_shape_str(sm_tensor_rank(rng[j]), sm_tensor_dims(rng[j]), sh, sizeof sh));
    }
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t pre, mid, post;
  axis_split(x, s->axis, &pre, &mid, &post);
  if (s->axis < 0) post = mid, mid = 1;
  for (int64_t k = 0; k < depth; k++) {
    double lo, hi;
    if (s->range_given) {
      lo = elem(mn, k), hi = elem(mx, k);
    } else { /* Eigen's minimum / maximum over the channel */
      lo = INFINITY, hi = -INFINITY;
      for (int64_t p = 0; p < pre; p++)
        for (int64_t q = 0; q < post; q++) {
          double v = elem(x, (p * mid + k) * post + q);
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
    }
    if (dt == SM_FLOAT)
      qdq_channel_f32(s, (int)bits, sm_tensor_data(x), sm_tensor_data(y), pre, mid, post, k, (float)lo, (float)hi);
    else
      qdq_channel_f64(s, (int)bits, sm_tensor_data(x), sm_tensor_data(y), pre, mid, post, k, lo, hi);
  }
  return NULL;
}

/* ---- QuantizedConcat -------------------------------------------------------------------------- */

static sm_status *qconcat_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int nin = sm__kctx_num_inputs(ctx), N = (nin - 1) / 3;
  const sm_tensor *cd = sm__kctx_input(ctx, 0);
  char a[64], b[64];
  if (sm_tensor_rank(cd) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat dim tensor should be a scalar integer, but got shape %s",
                         sm_shape_str(sm_tensor_rank(cd), sm_tensor_dims(cd), a, sizeof a));
  if (sm_tensor_dtype(cd) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConcat: concat_dim must be int32");
  if (N < 1 || nin != 1 + 3 * N) return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConcat: expected 1 + 3N inputs, got %d", nin);
  int32_t dim = *(const int32_t *)sm_tensor_data(cd);
  const sm_tensor *x0 = sm__kctx_input(ctx, 1);
  int T = sm_tensor_dtype(x0), r = sm_tensor_rank(x0);
  if (T != SM_QUINT8 && T != SM_QINT32) return sm__math_bad_dtype("QuantizedConcat", T);
  if (!(0 <= dim && dim < r))
    return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [0, %d), but got %d", r, dim);
  float omin = FLT_MAX, omax = -FLT_MAX;
  for (int i = 0; i < N; i++) {
    const sm_tensor *mn = sm__kctx_input(ctx, 1 + N + i), *mx = sm__kctx_input(ctx, 1 + 2 * N + i);
    if (sm_tensor_num_elements(mn) < 1 || sm_tensor_num_elements(mx) < 1 || sm_tensor_dtype(mn) != SM_FLOAT ||
        sm_tensor_dtype(mx) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConcat: input_mins and input_maxes must be float scalars");
    omin = fminf(omin, *(const float *)sm_tensor_data(mn));
    omax = fmaxf(omax, *(const float *)sm_tensor_data(mx));
  }
  omin = fminf(0.0f, omin);
  if (T == SM_QINT32) { /* signed: a range symmetric about zero */
    float big = fmaxf(fabsf(omin), fabsf(omax));
    omin = -big, omax = big;
  }
  int64_t pre = 1, total = 0;
  const int64_t *d0 = sm_tensor_dims(x0);
  for (int d = 0; d < dim; d++) pre *= d0[d];
  for (int i = 0; i < N; i++) {
    const sm_tensor *x = sm__kctx_input(ctx, 1 + i);
    if (sm_tensor_dtype(x) != T) return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConcat: values must share one dtype");
    int bad = sm_tensor_rank(x) != r;
    for (int d = 0; d < r && !bad; d++) bad = d != dim && sm_tensor_dims(x)[d] != d0[d];
    if (bad)
      return sm_status_new(SM_INVALID_ARGUMENT, sm_tensor_rank(x) != r ? "ConcatOp : Ranks of all input tensors should match: "
                           "shape[0] = %s vs. shape[%d] = %s" : "ConcatOp : Dimensions of inputs should match: shape[0] = %s vs. "
                           "shape[%d] = %s", sm_shape_str(r, d0, a, sizeof a), i,
                           sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b, sizeof b));
    total += sm_tensor_dims(x)[dim];
  }
  int64_t od[SM_MAX_RANK];
  memcpy(od, d0, (size_t)r * sizeof *od);
  od[dim] = total;
  sm_tensor *y, *ymin, *ymax;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, T, r, od, &y);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 0, NULL, &ymin);
  if (!st) st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 0, NULL, &ymax);
  if (st) return st;
  *(float *)sm_tensor_data(ymin) = omin, *(float *)sm_tensor_data(ymax) = omax;
  int64_t orow = pre ? sm_tensor_num_elements(y) / pre : 0, col = 0;
  for (int i = 0; i < N; i++) {
    const sm_tensor *x = sm__kctx_input(ctx, 1 + i);
    int64_t w = pre ? sm_tensor_num_elements(x) / pre : 0;
    sm__requant q;
    sm__requant_init(&q, T, *(const float *)sm_tensor_data(sm__kctx_input(ctx, 1 + N + i)),
                 *(const float *)sm_tensor_data(sm__kctx_input(ctx, 1 + 2 * N + i)), T, omin, omax);
    for (int64_t p = 0; p < pre; p++)
      for (int64_t c = 0; c < w; c++) {
        int64_t v = sm__qload(sm_tensor_data(x), T, p * w + c);
        sm__qstore(sm_tensor_data(y), T, p * orow + col + c, q.same ? v : sm__requant_one(&q, v));
      }
    col += w;
  }
  return NULL;
}

const sm_kernel sm_kernels_quantize[] = {
    {"QuantizeV2", quantize_prepare, quantize_compute, free, 0},
    {"Dequantize", dequantize_prepare, dequantize_compute, free, 0},
    {"QuantizeAndDequantizeV2", qdq_prepare, qdq_compute, free, 0},
    {"QuantizeAndDequantizeV3", qdq_prepare, qdq_compute, free, 0},
    {"QuantizeAndDequantizeV4", qdq_prepare, qdq_compute, free, 0},
    {"QuantizedConcat", NULL, qconcat_compute, NULL, 0},
    {0},
};
