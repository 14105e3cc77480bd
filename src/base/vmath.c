/* vmath.c - vectorised float32 exp, sigmoid, tanh, erf, the erf GELU, softmax's exp-and-sum and whole Softmax rows (vmath.h) with GCC/Clang
 * vector extensions: one body (vmath_lanes.h) at eight lanes, compiled for baseline x86-64 / any
 * target and as an AVX2+FMA clone, and at sixteen lanes as an AVX-512 clone, the best the CPU has
 * picked at run time (as nn_conv.c's direct convolution does).
 *
 * exp(x): x clamped to [-104, 88.73] (past those ends the result is 0 or inf anyway; NaN passes
 * the clamp), n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two parts (Cody-Waite),
 * exp(r) = 1 + r + r^2 P(r) with the degree-5 minimax P of the Cephes library's expf, then the
 * scaling by 2^n in two factors 2^(n/2) 2^(n - n/2) so that neither leaves the normal range
 * (results near the bottom are denormals rounded once, as libm's; the AVX-512 build does it in one
 * scalef, which rounds the same product once).
 * tanh(x): |x| < 0.625, the odd minimax polynomial of Cephes' tanhf; else 1 - 2 / (exp(2|x|) + 1)
 * with x's sign. sigmoid(x): e = exp(-|x|), 1 / (1 + e) for x >= 0, e / (1 + e) below (TF's form,
 * which never overflows). */
#include "base/vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

#define ALWAYS static inline __attribute__((always_inline))
#define SEL(m, a, b) ((VF)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))
#define VABS(x) ((VF)((VI)(x) & ISPLAT(0x7fffffff)))

#define SPLAT8(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})

/* eight lanes: vexp8, verf8, ... */
#define VF v8f
#define VI v8i
#define VM_FN(name) name##8
#define SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
#define ISPLAT(x) ((v8i){(x), (x), (x), (x), (x), (x), (x), (x)})
#include "base/vmath_lanes.h"
#undef VF
#undef VI
#undef VM_FN
#undef SPLAT
#undef ISPLAT

/* sixteen lanes (the AVX-512 build): vexp16, verf16, ...; on x86 built for AVX-512 themselves, so
 * that the exponential's scaling by 2^n is one scalef (the same bits as two multiplies: p 2^n
 * rounded once either way, checked over all 2^32 inputs), and sigmoid's exp(-|x|) skips the upper
 * clamp, which never acts there: exp / sigmoid / swish / tanh 0.23 / 0.33 / 0.37 / 0.43 -> 0.16 /
 * 0.24 / 0.25 / 0.34 ns an element (loops bound by the vector ports; bench/RESULTS.md session 15, h3) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#undef ALWAYS
#define ALWAYS static inline __attribute__((always_inline, target("avx512f,avx512dq,avx2,fma")))
#define VM_SCALE(p, e) ((VF)_mm512_scalef_ps((__m512)(p), (__m512)(e)))
#endif
#define VF v16f
#define VI v16i
#define VM_FN(name) name##16
#define SPLAT(x) ((v16f){(x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x)})
#define ISPLAT(x) ((v16i){(x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x)})
#include "base/vmath_lanes.h"
#undef VF
#undef VI
#undef VM_FN
#undef SPLAT
#undef ISPLAT
#undef VM_SCALE

/* One array loop per function, width and build: full vectors, then the tail through a padded
 * vector. GELU_LOOP adds the optional bias (bc values along rows of bc; b NULL: none) first. */
#define ARRAY_LOOP(name, W, VT, fn, attr)                            \
  attr static void name(const float *x, float *y, int64_t n) {       \
    int64_t i = 0;                                                   \
    for (; i + W <= n; i += W) {                                     \
      VT v;                                                          \
      memcpy(&v, x + i, sizeof v);                                   \
      fn(&v);                                                        \
      memcpy(y + i, &v, sizeof v);                                   \
    }                                                                \
    if (i < n) {                                                     \
      float buf[W] = {0};                                            \
      memcpy(buf, x + i, (size_t)(n - i) * sizeof *buf);             \
      VT v;                                                          \
      memcpy(&v, buf, sizeof v);                                     \
      fn(&v);                                                        \
      memcpy(buf, &v, sizeof v);                                     \
      memcpy(y + i, buf, (size_t)(n - i) * sizeof *buf);             \
    }                                                                \
  }
#define GELU_LOOP(name, W, VT, fn, attr)                                                              \
  attr static void name(const float *x, const float *b, float *y, int64_t n, const float *c) {        \
    int64_t i = 0;                                                                                    \
    for (; i + W <= n; i += W) {                                                                      \
      VT v;                                                                                           \
      memcpy(&v, x + i, sizeof v);                                                                    \
      if (b) {                                                                                        \
        VT bv;                                                                                        \
        memcpy(&bv, b + i, sizeof bv);                                                                \
        v = v + bv;                                                                                   \
      }                                                                                               \
      fn(&v, c);                                                                                      \
      memcpy(y + i, &v, sizeof v);                                                                    \
    }                                                                                                 \
    if (i < n) {                                                                                      \
      float buf[W] = {0};                                                                             \
      for (int64_t k = i; k < n; k++) buf[k - i] = b ? x[k] + b[k] : x[k];                            \
      VT v;                                                                                           \
      memcpy(&v, buf, sizeof v);                                                                      \
      fn(&v, c);                                                                                      \
      memcpy(buf, &v, sizeof v);                                                                      \
      memcpy(y + i, buf, (size_t)(n - i) * sizeof *buf);                                              \
    }                                                                                                 \
  }

/* y = exp(x - shift) and their sum, added as Eigen's vectorised reductions add (lane i % 8 of
 * eight partial sums in order, the tail after them one by one, then the lanes pairwise): eight
 * lanes at every width, so the sum's bits do not depend on the build. */
#define EXP_SUM_LOOP(name, attr)                                                         \
  attr static float name(const float *x, float shift, float *y, int64_t n) {             \
    v8f acc = SPLAT8(0.0f), sh = SPLAT8(shift);                                           \
    float sum = 0;                                                                        \
    int64_t i = 0;                                                                        \
    for (; i + 8 <= n; i += 8) {                                                          \
      v8f v;                                                                              \
      memcpy(&v, x + i, sizeof v);                                                        \
      v = v - sh;                                                                         \
      vexp8(&v);                                                                          \
      memcpy(y + i, &v, sizeof v);                                                        \
      acc += v;                                                                           \
    }                                                                                     \
    if (i < n) {                                                                          \
      float buf[8] = {0};                                                                 \
      for (int64_t q = i; q < n; q++) buf[q - i] = x[q] - shift;                          \
      v8f v;                                                                              \
      memcpy(&v, buf, sizeof v);                                                          \
      vexp8(&v);                                                                          \
      memcpy(buf, &v, sizeof v);                                                          \
      for (int64_t q = i; q < n; q++) sum += y[q] = buf[q - i];                           \
    }                                                                                     \
    return sum + (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))); \
  }

/* A whole Softmax row: its maximum (NaN when it holds one, as a scalar loop gives it: a max is
 * exact, so W lanes find the same value), y = exp(x - max) at W lanes with the sum in EXP_SUM_LOOP's
 * order (each W-wide step added to eight partial sums by eight-lane halves in order, the tail's whole
 * eight-lane pieces after them, its rest one by one), then y *= 1 / sum: the bits of the eight-lane
 * max, sm__vexp_shift_sum_f32 and the scale loop, at every width. With a scale, y = x * scale is
 * written first (the float products of a Mul) and the row is that. */
#define SOFTMAX_LOOP(name, W, VT, VIT, fn, attr)                                                     \
  attr static void name(const float *x, float *y, int64_t n, const float *scale) {                   \
    if (scale) { /* y = x * scale first, then the softmax of y in place */                           \
      VT cv;                                                                                         \
      for (int l = 0; l < W; l++) cv[l] = *scale;                                                    \
      int64_t q = 0;                                                                                 \
      for (; q + W <= n; q += W) {                                                                   \
        VT v;                                                                                        \
        memcpy(&v, x + q, sizeof v);                                                                 \
        v = v * cv;                                                                                  \
        memcpy(y + q, &v, sizeof v);                                                                 \
      }                                                                                              \
      for (; q < n; q++) y[q] = x[q] * *scale;                                                       \
      x = y;                                                                                         \
    }                                                                                                \
    float m = x[0];                                                                                  \
    int64_t i = 1;                                                                                   \
    if (n >= 2 * W) {                                                                                \
      VT acc;                                                                                        \
      memcpy(&acc, x, sizeof acc);                                                                   \
      VIT nan = (VIT)(acc != acc);                                                                   \
      for (i = W; i + W <= n; i += W) {                                                              \
        VT v;                                                                                        \
        memcpy(&v, x + i, sizeof v);                                                                 \
        VIT gt = v > acc;                                                                            \
        acc = (VT)(((VIT)v & gt) | ((VIT)acc & ~gt));                                                \
        nan |= (VIT)(v != v);                                                                        \
      }                                                                                              \
      int any = 0;                                                                                   \
      m = acc[0];                                                                                    \
      for (int l = 0; l < W; l++) any |= nan[l] != 0, m = acc[l] > m ? acc[l] : m;                   \
      if (any) m = NAN;                                                                           \
    }                                                                                                \
    for (; i < n; i++) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;                                    \
    v8f acc8 = SPLAT8(0.0f);                                                                         \
    VT sh;                                                                                           \
    for (int l = 0; l < W; l++) sh[l] = m;                                                           \
    float sum = 0;                                                                                   \
    for (i = 0; i + W <= n; i += W) {                                                                \
      VT v;                                                                                          \
      memcpy(&v, x + i, sizeof v);                                                                   \
      v = v - sh;                                                                                    \
      fn(&v);                                                                                        \
      memcpy(y + i, &v, sizeof v);                                                                   \
      for (int h = 0; h < W; h += 8) {                                                               \
        v8f p;                                                                                       \
        memcpy(&p, (const float *)&v + h, sizeof p);                                                 \
        acc8 += p;                                                                                   \
      }                                                                                              \
    }                                                                                                \
    if (i < n) {                                                                                     \
      float buf[W] = {0};                                                                            \
      for (int64_t q = i; q < n; q++) buf[q - i] = x[q] - m;                                         \
      VT v;                                                                                          \
      memcpy(&v, buf, sizeof v);                                                                     \
      fn(&v);                                                                                        \
      memcpy(buf, &v, sizeof v);                                                                     \
      int64_t r = n - i, h = 0;                                                                      \
      memcpy(y + i, buf, (size_t)r * sizeof *buf);                                                   \
      for (; h + 8 <= r; h += 8) {                                                                   \
        v8f p;                                                                                       \
        memcpy(&p, buf + h, sizeof p);                                                               \
        acc8 += p;                                                                                   \
      }                                                                                              \
      for (; h < r; h++) sum += buf[h];                                                              \
    }                                                                                                \
    sum += ((acc8[0] + acc8[4]) + (acc8[2] + acc8[6])) + ((acc8[1] + acc8[5]) + (acc8[3] + acc8[7])); \
    float inv = 1 / sum;                                                                             \
    VT iv;                                                                                           \
    for (int l = 0; l < W; l++) iv[l] = inv;                                                         \
    for (i = 0; i + W <= n; i += W) {                                                                \
      VT v;                                                                                          \
      memcpy(&v, y + i, sizeof v);                                                                   \
      v = v * iv;                                                                                    \
      memcpy(y + i, &v, sizeof v);                                                                   \
    }                                                                                                \
    for (; i < n; i++) y[i] *= inv;                                                                  \
  }

ARRAY_LOOP(exp_base, 8, v8f, vexp8, )
EXP_SUM_LOOP(exp_sum_base, )
SOFTMAX_LOOP(softmax_base, 8, v8f, v8i, vexp8, )
ARRAY_LOOP(sigmoid_base, 8, v8f, vsigmoid8, )
ARRAY_LOOP(swish_base, 8, v8f, vswish8, )
ARRAY_LOOP(tanh_base, 8, v8f, vtanh8, )
ARRAY_LOOP(erf_base, 8, v8f, verf8, )
GELU_LOOP(gelu_base, 8, v8f, vgelu8, )

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VMATH_X86 1
/* FMA contraction in the clones (clang contracts by default; GCC in ISO C mode needs the option):
 * one rounding less per polynomial step, still within the accuracy above. */
#if defined(__clang__)
#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f,avx512dq,avx2,fma")))
#else
#define AVX2_FN __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#define AVX512_FN __attribute__((target("avx512f,avx512dq,avx2,fma"), optimize("fp-contract=fast")))
#endif
ARRAY_LOOP(exp_avx2, 8, v8f, vexp8, AVX2_FN)
EXP_SUM_LOOP(exp_sum_avx2, AVX2_FN)
SOFTMAX_LOOP(softmax_avx2, 8, v8f, v8i, vexp8, AVX2_FN)
ARRAY_LOOP(sigmoid_avx2, 8, v8f, vsigmoid8, AVX2_FN)
ARRAY_LOOP(swish_avx2, 8, v8f, vswish8, AVX2_FN)
ARRAY_LOOP(tanh_avx2, 8, v8f, vtanh8, AVX2_FN)
ARRAY_LOOP(erf_avx2, 8, v8f, verf8, AVX2_FN)
GELU_LOOP(gelu_avx2, 8, v8f, vgelu8, AVX2_FN)
ARRAY_LOOP(exp_avx512, 16, v16f, vexp16, AVX512_FN)
EXP_SUM_LOOP(exp_sum_avx512, AVX512_FN)
SOFTMAX_LOOP(softmax_avx512, 16, v16f, v16i, vexp16, AVX512_FN)
ARRAY_LOOP(sigmoid_avx512, 16, v16f, vsigmoid16, AVX512_FN)
ARRAY_LOOP(swish_avx512, 16, v16f, vswish16, AVX512_FN)
ARRAY_LOOP(tanh_avx512, 16, v16f, vtanh16, AVX512_FN)
ARRAY_LOOP(erf_avx512, 16, v16f, verf16, AVX512_FN)
GELU_LOOP(gelu_avx512, 16, v16f, vgelu16, AVX512_FN)
#endif

/* 0 baseline, 1 AVX2+FMA, 2 AVX-512 (F and DQ); computed once (a race only computes it twice).
 * SM_VMATH_LANES=8 keeps an AVX-512 CPU on the eight-lane code (bench/'s A/B switch). */
static int vmath_level(void) {
#ifdef VMATH_X86
  static int level = -1;
  int h = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (h && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
      const char *e = getenv("SM_VMATH_LANES");
      h = e && !strcmp(e, "8") ? 1 : 2;
    }
    __atomic_store_n(&level, h, __ATOMIC_RELAXED);
  }
  return h;
#else
  return 0;
#endif
}

int sm__vmath_avx2(void) { return vmath_level() >= 1; }
int sm__vmath_lanes(void) { return vmath_level() == 2 ? 16 : 8; }

#ifdef VMATH_X86
#define PICK(f) (vmath_level() == 2 ? f##_avx512 : vmath_level() ? f##_avx2 : f##_base)
#else
#define PICK(f) (f##_base)
#endif

void sm__vexp_f32(const float *x, float *y, int64_t n) { PICK(exp)(x, y, n); }
void sm__vsigmoid_f32(const float *x, float *y, int64_t n) { PICK(sigmoid)(x, y, n); }
void sm__vtanh_f32(const float *x, float *y, int64_t n) { PICK(tanh)(x, y, n); }
void sm__vswish_f32(const float *x, float *y, int64_t n) { PICK(swish)(x, y, n); }
void sm__verf_f32(const float *x, float *y, int64_t n) { PICK(erf)(x, y, n); }
float sm__vexp_shift_sum_f32(const float *x, float shift, float *y, int64_t n) { return PICK(exp_sum)(x, shift, y, n); }
void sm__vsoftmax_f32(const float *x, float *y, int64_t n) { PICK(softmax)(x, y, n, NULL); }
void sm__vsoftmax_scaled_f32(const float *x, float *y, int64_t n, float scale) { PICK(softmax)(x, y, n, &scale); }
void sm__vgelu_erf_f32(const float *x, const float *bias, float *y, int64_t n, float c0, float c1, float c2) {
  const float c[3] = {c0, c1, c2};
  PICK(gelu)(x, bias, y, n, c);
}
