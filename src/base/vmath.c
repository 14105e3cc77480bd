/* vmath.c - vectorised float32 exp, sigmoid, tanh and erf (vmath.h): eight lanes per step with GCC/Clang
 * vector extensions, one body compiled twice (baseline x86-64 / any target, and an AVX2+FMA clone
 * picked at run time where the CPU has it, as nn_conv.c's direct convolution does).
 *
 * exp(x): x clamped to [-104, 88.73] (past those ends the result is 0 or inf anyway; NaN passes
 * the clamp), n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two parts (Cody-Waite),
 * exp(r) = 1 + r + r^2 P(r) with the degree-5 minimax P of the Cephes library's expf, then the
 * scaling by 2^n in two factors 2^(n/2) 2^(n - n/2) so that neither leaves the normal range
 * (results near the bottom are denormals rounded once, as libm's).
 * tanh(x): |x| < 0.625, the odd minimax polynomial of Cephes' tanhf; else 1 - 2 / (exp(2|x|) + 1)
 * with x's sign. sigmoid(x): e = exp(-|x|), 1 / (1 + e) for x >= 0, e / (1 + e) below (TF's form,
 * which never overflows). */
#include "base/vmath.h"

#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
#define ISPLAT(x) ((v8i){(x), (x), (x), (x), (x), (x), (x), (x)})
#define SEL(m, a, b) ((v8f)(((v8i)(a) & (m)) | ((v8i)(b) & ~(m))))
#define ALWAYS static inline __attribute__((always_inline))

/* In place through a pointer: a vector passed or returned by value changes the baseline ABI. */
ALWAYS void vexp(v8f *v) {
  v8f x = *v;
  x = SEL(x < SPLAT(-104.0f), SPLAT(-104.0f), x);
  x = SEL(x > SPLAT(88.73f), SPLAT(88.73f), x);
  const v8f magic = SPLAT(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
  v8f t = x * SPLAT(1.44269504088896341f) + magic;
  v8i n = (v8i)t - (v8i)magic;
  v8f nf = t - magic;
  v8f r = x - nf * SPLAT(0.693359375f);
  r = r - nf * SPLAT(-2.12194440e-4f);
  v8f p = SPLAT(1.9875691500e-4f);
  p = p * r + SPLAT(1.3981999507e-3f);
  p = p * r + SPLAT(8.3334519073e-3f);
  p = p * r + SPLAT(4.1665795894e-2f);
  p = p * r + SPLAT(1.6666665459e-1f);
  p = p * r + SPLAT(5.0000001201e-1f);
  p = p * (r * r) + r + SPLAT(1.0f);
  v8i n1 = n >> 1, n2 = n - n1;
  v8f s1 = (v8f)((n1 + ISPLAT(127)) << 23), s2 = (v8f)((n2 + ISPLAT(127)) << 23);
  *v = p * s1 * s2;
}

#define VABS(x) ((v8f)((v8i)(x) & ISPLAT(0x7fffffff)))

ALWAYS void vsigmoid(v8f *v) {
  v8f x = *v, e = -VABS(x);
  vexp(&e);
  v8f d = SPLAT(1.0f) + e;
  /* one division: the numerator picked first gives each lane the quotient it had (1/d or e/d) */
  *v = SEL(x >= SPLAT(0.0f), SPLAT(1.0f), e) / d;
}

ALWAYS void vtanh(v8f *v) {
  v8f x = *v, a = VABS(x);
  v8f z = x * x;
  v8f p = SPLAT(-5.70498872745e-3f);
  p = p * z + SPLAT(2.06390887954e-2f);
  p = p * z + SPLAT(-5.37397155531e-2f);
  p = p * z + SPLAT(1.33314422036e-1f);
  p = p * z + SPLAT(-3.33332819422e-1f);
  v8f small = p * z * a + a;
  v8f e = a + a;
  vexp(&e);
  v8f big = SPLAT(1.0f) - SPLAT(2.0f) / (e + SPLAT(1.0f));
  /* both are tanh(|x|) >= 0: x's sign goes on after (so tanh(-0) is -0) */
  *v = (v8f)((v8i)SEL(a < SPLAT(0.625f), small, big) | ((v8i)x & ISPLAT((int32_t)0x80000000u)));
}

/* erf(x) on |x| (the sign put back after): below 1, |x| P(x^2), P of degree 6; from 1 on,
 * 1 - exp(-x^2) R(1/|x|), R of degree 9 fitting erfc(a) exp(a^2) on [1, 4] (least squares in double,
 * relative error 1.6e-9 and 3.1e-8); past 4 the result is 1 to float precision (|x| is clamped
 * there, NaN passes the clamp and comes out NaN). */
ALWAYS void verf(v8f *v) {
  v8f x = *v, a = VABS(x);
  a = SEL(a > SPLAT(4.0f), SPLAT(4.0f), a);
  v8f z = a * a;
  v8f p = SPLAT(7.933422394239024e-05f);
  p = p * z + SPLAT(-8.034827976001666e-04f);
  p = p * z + SPLAT(5.191216606600586e-03f);
  p = p * z + SPLAT(-2.685539872166895e-02f);
  p = p * z + SPLAT(1.1283625713183888e-01f);
  p = p * z + SPLAT(-3.7612629877299e-01f);
  p = p * z + SPLAT(1.1283791665933636f);
  v8f small = p * a;
  v8f t = SPLAT(1.0f) / a, r = SPLAT(2.6025723169407704e-02f);
  r = r * t + SPLAT(-1.5350190423742768e-01f);
  r = r * t + SPLAT(3.7459802510617185e-01f);
  r = r * t + SPLAT(-4.490048277815535e-01f);
  r = r * t + SPLAT(1.6223747939795985e-01f);
  r = r * t + SPLAT(2.730871098525699e-01f);
  r = r * t + SPLAT(-3.913706321600456e-01f);
  r = r * t + SPLAT(2.40486702964793e-02f);
  r = r * t + SPLAT(5.613180419318146e-01f);
  r = r * t + SPLAT(1.4589363945522528e-04f);
  v8f e = -z;
  vexp(&e);
  v8f big = SPLAT(1.0f) - e * r;
  *v = (v8f)((v8i)SEL(a < SPLAT(1.0f), small, big) | ((v8i)x & ISPLAT((int32_t)0x80000000u)));
}

/* One array loop per function and build: full vectors, then the tail through a padded vector. */
#define ARRAY_LOOP(name, fn, attr)                                   \
  attr static void name(const float *x, float *y, int64_t n) {       \
    int64_t i = 0;                                                   \
    for (; i + 8 <= n; i += 8) {                                     \
      v8f v;                                                         \
      memcpy(&v, x + i, sizeof v);                                   \
      fn(&v);                                                        \
      memcpy(y + i, &v, sizeof v);                                   \
    }                                                                \
    if (i < n) {                                                     \
      float buf[8] = {0};                                            \
      memcpy(buf, x + i, (size_t)(n - i) * sizeof *buf);             \
      v8f v;                                                         \
      memcpy(&v, buf, sizeof v);                                     \
      fn(&v);                                                        \
      memcpy(buf, &v, sizeof v);                                     \
      memcpy(y + i, buf, (size_t)(n - i) * sizeof *buf);             \
    }                                                                \
  }

ARRAY_LOOP(exp_base, vexp, )
ARRAY_LOOP(sigmoid_base, vsigmoid, )
ARRAY_LOOP(tanh_base, vtanh, )
ARRAY_LOOP(erf_base, verf, )

typedef void (*array_fn)(const float *x, float *y, int64_t n);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VMATH_AVX2 1
/* FMA contraction in the clone (clang contracts by default; GCC in ISO C mode needs the option):
 * one rounding less per polynomial step, still within the accuracy above. */
#if defined(__clang__)
#define AVX2_FN __attribute__((target("avx2,fma")))
#else
#define AVX2_FN __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#endif
ARRAY_LOOP(exp_avx2, vexp, AVX2_FN)
ARRAY_LOOP(sigmoid_avx2, vsigmoid, AVX2_FN)
ARRAY_LOOP(tanh_avx2, vtanh, AVX2_FN)
ARRAY_LOOP(erf_avx2, verf, AVX2_FN)
#endif

int sm__vmath_avx2(void) {
#ifdef VMATH_AVX2
  static int have = -1; /* computed once; a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
#else
  return 0;
#endif
}

#ifdef VMATH_AVX2
#define PICK(base, avx2) (sm__vmath_avx2() ? (avx2) : (base))
#else
#define PICK(base, avx2) (base)
#endif

void sm__vexp_f32(const float *x, float *y, int64_t n) { PICK(exp_base, exp_avx2)(x, y, n); }
void sm__vsigmoid_f32(const float *x, float *y, int64_t n) { PICK(sigmoid_base, sigmoid_avx2)(x, y, n); }
void sm__vtanh_f32(const float *x, float *y, int64_t n) { PICK(tanh_base, tanh_avx2)(x, y, n); }
void sm__verf_f32(const float *x, float *y, int64_t n) { PICK(erf_base, erf_avx2)(x, y, n); }
