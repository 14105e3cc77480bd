/* test_vmath.c - the vectorised exp / sigmoid / tanh / erf of src/base/vmath.c against double-precision
 * libm (the reference is computed, not recorded): error in units of the float result's last place
 * over a sweep of the float range, the special values, and that an element's result does not
 * depend on its position or on the array length. TF's own agreement is checked by the zoo and
 * interop goldens of the models that use them. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/vmath.h"
#include "test.h"

#define MAX_ULP 3.0

static double ulps(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e9;
  if (isinf(want) || fabs(want) > FLT_MAX) return got == (float)want ? 0 : 1e9;
  double unit = fabs(want) < FLT_MIN ? ldexp(1.0, -149) : ldexp(1.0, ilogb(want) - 23);
  return fabs((double)got - want) / unit;
}

static double ref(int f, double x) {
  if (f == 0) return exp(x);
  if (f == 1) return 1 / (1 + exp(-x));
  if (f == 2) return tanh(x);
  return erf(x);
}

static void run(int f, const float *x, float *y, int64_t n) {
  if (f == 0)
    sm__vexp_f32(x, y, n);
  else if (f == 1)
    sm__vsigmoid_f32(x, y, n);
  else if (f == 2)
    sm__vtanh_f32(x, y, n);
  else
    sm__verf_f32(x, y, n);
}

enum { N = 4096 };

int main(void) {
  static float x[N], y[N];
  static const char *const names[] = {"exp", "sigmoid", "tanh", "erf"};
  printf("avx2 path: %d, lanes: %d\n", sm__vmath_avx2(), sm__vmath_lanes());
  for (int f = 0; f < 4; f++) {
    /* every 2039th bit pattern of the finite floats of both signs */
    double worst = 0;
    float worst_x = 0;
    int64_t k = 0;
    for (uint64_t b = 0; b < 0x100000000ull; b += 2039) {
      uint32_t u = (uint32_t)b;
      float v;
      memcpy(&v, &u, sizeof v);
      if (!isfinite(v)) continue;
      x[k++] = v;
      if (k == N || b + 2039 >= 0x100000000ull) {
        run(f, x, y, k);
        for (int64_t i = 0; i < k; i++) {
          double e = ulps(y[i], ref(f, x[i]));
          /* tanh and sigmoid of a tiny x: the result is x or 0.5, the sweep's denormals included */
          if (e > worst) worst = e, worst_x = x[i];
        }
        k = 0;
      }
    }
    printf("%s: worst %.2f ulp at %.9g\n", names[f], worst, (double)worst_x);
    CHECK(worst <= MAX_ULP);
  }
  /* special values */
  float sp[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 88.7f, 89.0f, -87.0f, -104.0f, -120.0f, 50.0f, -50.0f};
  float o[12];
  sm__vexp_f32(sp, o, 12);
  CHECK(isinf(o[0]) && o[0] > 0 && o[1] == 0 && isnan(o[2]) && o[3] == 1 && o[4] == 1);
  CHECK(isinf(o[6]) && o[8] >= 0 && o[9] == 0);
  CHECK(ulps(o[5], exp(88.7f)) <= MAX_ULP);
  CHECK(ulps(o[7], exp(-87.0)) <= MAX_ULP);
  sm__vsigmoid_f32(sp, o, 12);
  CHECK(o[0] == 1 && o[1] == 0 && isnan(o[2]) && o[3] == 0.5f && o[4] == 0.5f && o[10] == 1);
  CHECK(ulps(o[11], 1 / (1 + exp(50.0))) <= MAX_ULP);
  sm__vtanh_f32(sp, o, 12);
  CHECK(o[0] == 1 && o[1] == -1 && isnan(o[2]) && o[3] == 0 && o[4] == 0 && signbit(o[4]));
  CHECK(o[10] == 1 && o[11] == -1);
  sm__verf_f32(sp, o, 12);
  CHECK(o[0] == 1 && o[1] == -1 && isnan(o[2]) && o[3] == 0 && o[4] == 0 && signbit(o[4]));
  CHECK(o[10] == 1 && o[11] == -1 && o[5] == 1 && o[7] == -1);
  /* position and length do not change an element's result; in place works */
  for (int i = 0; i < 19; i++) x[i] = (float)(i - 9) * 0.37f;
  for (int f = 0; f < 4; f++) {
    float a[19], b[19], c[19];
    run(f, x, a, 19);
    for (int i = 0; i < 19; i++) {
      run(f, x + i, b + i, 1);
      c[i] = x[i];
    }
    run(f, c, c, 19);
    CHECK(!memcmp(a, b, sizeof a) && !memcmp(a, c, sizeof a));
  }
  /* the erf GELU: the bits of its unfused chain v = x + b, e = erf(v c1), (c0 v) (c2 + e), at
   * every position and length (37: two sixteen-lane steps and a tail), with and without a bias,
   * in place too, over arguments where erf takes both its branches */
  {
    enum { G = 37 };
    float gx[G], gb[G], v[G], e[G], want[G], got[G], nob[G], one[G], inplace[G];
    const float c0 = 0.5f, c1 = 0.70710678f, c2 = 1.0f;
    for (int i = 0; i < G; i++) gx[i] = (float)(i - 18) * 0.29f, gb[i] = (float)(i % 5) * 0.13f - 0.2f;
    for (int i = 0; i < G; i++) v[i] = gx[i] + gb[i], e[i] = v[i] * c1;
    sm__verf_f32(e, e, G);
    for (int i = 0; i < G; i++) want[i] = (c0 * v[i]) * (c2 + e[i]);
    sm__vgelu_erf_f32(gx, gb, got, G, c0, c1, c2);
    sm__vgelu_erf_f32(v, NULL, nob, G, c0, c1, c2);
    for (int i = 0; i < G; i++) sm__vgelu_erf_f32(gx + i, gb + i, one + i, 1, c0, c1, c2);
    memcpy(inplace, gx, sizeof inplace);
    sm__vgelu_erf_f32(inplace, gb, inplace, G, c0, c1, c2);
    CHECK(!memcmp(got, want, sizeof got) && !memcmp(nob, want, sizeof nob) && !memcmp(one, want, sizeof one) &&
          !memcmp(inplace, want, sizeof inplace));
    CHECK(got[0] < 0 && got[0] > -0.2f && fabsf(got[G - 1] - v[G - 1]) < 1e-3f); /* GELU's shape: ~0 left, ~x right */
  }
  /* swish is x times the sigmoid, to the bit (a fused epilogue against Sigmoid then Mul; a NaN is a
   * NaN), over every 104729th bit pattern, infinities and NaNs included */
  {
    int64_t k = 0, bad = 0;
    static float s[N], w[N];
    for (uint64_t b = 0; b < 0x100000000ull; b += 104729) {
      uint32_t u = (uint32_t)b;
      memcpy(&x[k++], &u, sizeof u);
      if (k == N || b + 104729 >= 0x100000000ull) {
        sm__vsigmoid_f32(x, s, k);
        sm__vswish_f32(x, w, k);
        for (int64_t i = 0; i < k; i++) {
          float want = x[i] * s[i];
          bad += isnan(want) ? !isnan(w[i]) : memcmp(&want, &w[i], sizeof want) != 0;
        }
        k = 0;
      }
    }
    CHECK_EQ_INT(bad, 0);
    sm__vswish_f32(sp, o, 12);
    CHECK(isinf(o[0]) && o[0] > 0 && isnan(o[1]) && isnan(o[2]) && o[3] == 0 && o[10] == 50.0f);
  }
  /* softmax rows (and of x * scale): the bits of the eight-lane max, sm__vexp_shift_sum_f32 and y *= 1 / sum at every
   * length 1..80 (sixteen-lane steps, eight-lane pieces of the tail, single tail elements), within
   * 2e-6 relative of a double softmax, a NaN or +inf anywhere makes the row NaN (as TF's) */
  {
    enum { S = 80 };
    float sx[S], want[S], got[S];
    for (int i = 0; i < S; i++) sx[i] = (float)((i * 37) % 101) * 0.19f - 9.5f;
    double worst = 0;
    for (int n = 1; n <= S; n++) {
      float m = sx[0];
      for (int i = 1; i < n; i++) m = sx[i] > m ? sx[i] : m;
      float inv = 1 / sm__vexp_shift_sum_f32(sx, m, want, n);
      for (int i = 0; i < n; i++) want[i] *= inv;
      sm__vsoftmax_f32(sx, got, n);
      CHECK(!memcmp(got, want, (size_t)n * sizeof *got));
      for (int c = 0; c < 2; c++) { /* scaled: the softmax of the float products x * scale */
        float scale = c ? 0.3f : 0.125f, prod[S], ref[S], inplace[S], sg[S];
        for (int i = 0; i < n; i++) prod[i] = sx[i] * scale;
        sm__vsoftmax_f32(prod, ref, n);
        sm__vsoftmax_scaled_f32(sx, sg, n, scale);
        CHECK(!memcmp(sg, ref, (size_t)n * sizeof *sg));
        memcpy(inplace, sx, (size_t)n * sizeof *sx);
        sm__vsoftmax_scaled_f32(inplace, inplace, n, scale);
        CHECK(!memcmp(inplace, ref, (size_t)n * sizeof *got));
      }
      double sum = 0;
      for (int i = 0; i < n; i++) sum += exp((double)sx[i] - m);
      for (int i = 0; i < n; i++) {
        double r = exp((double)sx[i] - m) / sum, e = fabs(got[i] - r) / r;
        if (e > worst) worst = e;
      }
    }
    printf("softmax: worst relative error %.3g\n", worst);
    CHECK(worst < 2e-6);
    for (int n = 1; n <= 40; n += 13)
      for (int p = 0; p < n; p++) {
        float t[40];
        memcpy(t, sx, sizeof t);
        t[p] = NAN;
        sm__vsoftmax_f32(t, got, n);
        int all = 1;
        for (int i = 0; i < n; i++) all &= isnan(got[i]) != 0;
        CHECK(all);
      }
    float inf[33];
    for (int i = 0; i < 33; i++) inf[i] = (float)i;
    inf[20] = INFINITY;
    sm__vsoftmax_f32(inf, got, 33);
    CHECK(isnan(got[20]) && isnan(got[0]) && isnan(got[32])); /* inf - inf in the sum: TF's NaN row */
  }
  TEST_MAIN_END();
}
