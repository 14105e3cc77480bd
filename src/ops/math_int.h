/* math_int.h - what the math kernel files share: fp16/bf16 conversion, the broadcasting
 * iterator, the kernels each file exports to the table in math.c, and small helpers.
 * Private to src/ops/math*.c. */
#ifndef SM_OPS_MATH_INT_H
#define SM_OPS_MATH_INT_H
#include <stdint.h>
#include <string.h>

#include "runtime/kernel.h"

/* ---- half / bfloat16 ------------------------------------------------------------------------ */
static inline float sm__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t sm__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float sm__half_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return sm__f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24, exact in float */
    float f = (float)man * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return sm__f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round to nearest even, as Eigen's float_to_half_rtne. */
static inline uint16_t sm__f32_to_half(float f) {
  uint32_t u = sm__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  u &= 0x7fffffffu;
  if (u >= 0x7f800000u) return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00 : 0x7c00));
  if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504: inf */
  if (u < 0x38800000u) {
    /* subnormal half (or zero): add 0.5 so the FPU rounds the mantissa for us */
    float a = sm__f32_from_bits(u) + 0.5f;
    return (uint16_t)(sign | (uint16_t)(sm__f32_bits(a) - 0x3f000000u));
  }
  uint32_t odd = (u >> 13) & 1;
  u += 0xc8000fffu + odd; /* rebias exponent (-112 << 23) and round half to even */
  return (uint16_t)(sign | (uint16_t)(u >> 13));
}

static inline float sm__bf16_to_f32(uint16_t h) { return sm__f32_from_bits((uint32_t)h << 16); }
static inline uint16_t sm__f32_to_bf16(float f) {
  uint32_t u = sm__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000) | 0x7fc0); /* as Eigen */
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* Convert n half/bf16 elements to float and back (dtype SM_HALF or SM_BFLOAT16). */
void sm__math_to_f32(int dtype, const void *src, float *dst, int64_t n);
void sm__math_from_f32(int dtype, const float *src, void *dst, int64_t n);
static inline int sm__math_is_f16(int dtype) { return dtype == SM_HALF || dtype == SM_BFLOAT16; }

/* Element i of a real or integer tensor as a double (0 for other dtypes). */
static inline double sm__math_get_f64(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)p)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)p)[i]);
    case SM_INT8: return ((const int8_t *)p)[i];
    case SM_UINT8: return ((const uint8_t *)p)[i];
    case SM_INT16: return ((const int16_t *)p)[i];
    case SM_UINT16: return ((const uint16_t *)p)[i];
    case SM_INT32: return ((const int32_t *)p)[i];
    case SM_UINT32: return ((const uint32_t *)p)[i];
    case SM_INT64: return (double)((const int64_t *)p)[i];
    case SM_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
  }
}
/* Element i of a float, double, half or bfloat16 tensor set to v, rounded to its dtype (others: nothing). */
static inline void sm__math_put_f64(sm_tensor *t, int64_t i, double v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)p)[i] = v; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v); break;
    default: break;
  }
}

/* ---- broadcasting --------------------------------------------------------------------------- */
/* NumPy broadcasting of up to 3 inputs, collapsed: output dims of size 1 dropped, neighbours
 * with the same broadcast pattern merged, so the innermost stride of every input is 0 or 1 and
 * the fast cases (same shape, scalar, row vector) come out as rank 1 or 2 with no extra code. */
#define SM_BCAST_MAX_IN 3
typedef struct sm_bcast {
  int out_rank;
  int64_t out_dims[SM_MAX_RANK];
  int64_t n; /* output elements */
  int rank;  /* collapsed, >= 1 */
  int64_t dims[SM_MAX_RANK];
  int64_t strides[SM_BCAST_MAX_IN][SM_MAX_RANK]; /* in elements; 0 = broadcast */
} sm_bcast;

/* 0 when the shapes do not broadcast. */
int sm__math_bcast_init(sm_bcast *b, int nin, const int *ranks, const int64_t *const *dims);

/* A position in the collapsed iteration: a row index over dims[0..rank-2], with the element
 * offset of each input at the start of that row. */
typedef struct sm_bcast_it {
  int64_t idx[SM_MAX_RANK];
  int64_t off[SM_BCAST_MAX_IN];
} sm_bcast_it;
void sm__math_bcast_seek(const sm_bcast *b, int nin, int64_t row, sm_bcast_it *it);
void sm__math_bcast_next(const sm_bcast *b, int nin, sm_bcast_it *it);

/* "Incompatible shapes: [2,3] vs. [4]" */
sm_status *sm__math_incompatible(const sm_tensor *a, const sm_tensor *b);
/* "Foo does not support DT_BOOL" */
sm_status *sm__math_bad_dtype(const char *op, int dtype);

/* A unary math op (Exp, Log, Sqrt, Sin, Tanh, ...: TF's name) over complex64/complex128 input 0
 * (complex.c); unsupported ones are refused by dtype. */
sm_status *sm__complex_unary_compute(const char *op, sm_kctx *ctx);

/* Special functions (math_special.c), in double; lgamma without touching the global signgam. */
double sm__lgamma(double x);
float sm__lgammaf(float x);
double sm__digamma(double x);
double sm__ndtri(double p);
double sm__erfinv(double x);
float sm__erfinvf(float x);
double sm__bessel_i0e(double x);
double sm__bessel_i1e(double x);
double sm__zeta(double x, double q);
double sm__polygamma(double n, double x);
double sm__bessel_j0(double x);
double sm__bessel_j1(double x);
double sm__bessel_y0(double x);
double sm__bessel_y1(double x);
float sm__bessel_y1f(float x);
double sm__bessel_k0(double x);
double sm__bessel_k1(double x);
double sm__bessel_k0e(double x);
double sm__bessel_k1e(double x);
double sm__igamma(double a, double x, int upper); /* regularized P(a, x), or Q(a, x) when upper */
double sm__igamma_der_a(double a, double x, int sample); /* dP/da (IgammaGradA), or RandomGammaGrad's */

/* Grain for sm__parallel_for: elements below this run inline. */
#define SM_MATH_PAR_MIN ((int64_t)1 << 16)

/* Small dtype indices for op x dtype tables (T_b = bool). */
enum { T_f32, T_f64, T_i8, T_i16, T_i32, T_i64, T_u8, T_u16, T_u32, T_u64, T_b, NT };

static inline int sm__math_tindex(int dtype) {
  switch (dtype) {
    case SM_FLOAT: return T_f32;
    case SM_DOUBLE: return T_f64;
    case SM_INT8: return T_i8;
    case SM_INT16: return T_i16;
    case SM_INT32: return T_i32;
    case SM_INT64: return T_i64;
    case SM_UINT8: return T_u8;
    case SM_UINT16: return T_u16;
    case SM_UINT32: return T_u32;
    case SM_UINT64: return T_u64;
    case SM_BOOL: return T_b;
    default: return -1;
  }
}

/* Dtype classes for generating loops: X(NAME, SFX, T, UT, K, expr...) once per C type, UT being
 * the unsigned type of at least 32 bits that T's wrapping arithmetic is done in. */
#define FOR_FLOAT(X, NAME, K, ...) X(NAME, f32, float, uint32_t, K, __VA_ARGS__) X(NAME, f64, double, uint64_t, K, __VA_ARGS__)
#define FOR_SINT(X, NAME, K, ...)                                                            \
  X(NAME, i8, int8_t, uint32_t, K, __VA_ARGS__) X(NAME, i16, int16_t, uint32_t, K, __VA_ARGS__) \
  X(NAME, i32, int32_t, uint32_t, K, __VA_ARGS__) X(NAME, i64, int64_t, uint64_t, K, __VA_ARGS__)
#define FOR_UINT(X, NAME, K, ...)                                                             \
  X(NAME, u8, uint8_t, uint32_t, K, __VA_ARGS__) X(NAME, u16, uint16_t, uint32_t, K, __VA_ARGS__) \
  X(NAME, u32, uint32_t, uint32_t, K, __VA_ARGS__) X(NAME, u64, uint64_t, uint64_t, K, __VA_ARGS__)
#define FOR_INT(X, NAME, K, ...) FOR_SINT(X, NAME, K, __VA_ARGS__) FOR_UINT(X, NAME, K, __VA_ARGS__)
#define FOR_NUM(X, NAME, K, ...) FOR_FLOAT(X, NAME, K, __VA_ARGS__) FOR_INT(X, NAME, K, __VA_ARGS__)
#define FOR_BOOL(X, NAME, K, ...) X(NAME, b, uint8_t, uint32_t, K, __VA_ARGS__)

#define OUT_SAME(T) T
#define OUT_BOOL(T) uint8_t

/* ---- kernels exported to the table in math.c -------------------------------------------------- */
sm_status *sm__math_binary_prepare(const sm_node *node, void **state);
sm_status *sm__math_binary_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_unary_prepare(const sm_node *node, void **state);
sm_status *sm__math_unary_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_softmax_prepare(const sm_node *node, void **state);
sm_status *sm__math_scan_prepare(const sm_node *node, void **state);
sm_status *sm__math_scan_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_softmax_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_cast_prepare(const sm_node *node, void **state);
sm_status *sm__math_cast_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_reduce_prepare(const sm_node *node, void **state);
sm_status *sm__math_reduce_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_argmax_prepare(const sm_node *node, void **state);
sm_status *sm__math_argmax_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_select_prepare(const sm_node *node, void **state);
sm_status *sm__math_select_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_clip_compute(const void *state, sm_kctx *ctx);
sm_status *sm__math_addn_compute(const void *state, sm_kctx *ctx);

#endif
