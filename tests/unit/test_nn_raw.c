/* test_nn_raw.c - src/ops/nn_raw.h against naive loops: conv2d (SAME/VALID, strides, 1x1, fused
 * bias + relu), matmul (every transpose pair, accumulate, bias, relu), maxpool with argmax (ties
 * go to the first maximum in window order), each with and without a thread pool, plus the empty
 * and refused cases. */
#include <math.h>
#include <stdint.h>

#include "ops/nn_raw.h"
#include "test.h"

static uint32_t rng = 12345;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}
static void fill(float *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = frand();
}

static int close_all(const float *a, const float *b, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    float d = fabsf(a[i] - b[i]), m = fabsf(b[i]) > 1 ? fabsf(b[i]) : 1;
    if (!(d <= 1e-4f * m)) {
      fprintf(stderr, "%s: element %lld: %g vs expected %g\n", what, (long long)i, a[i], b[i]);
      return 0;
    }
  }
  return 1;
}

static void naive_conv(const float *x, int64_t n, int64_t h, int64_t w, int64_t c, const float *f, int64_t kh,
                       int64_t kw, int64_t co, int64_t sh, int64_t sw, int same, const float *bias, int act,
                       float *y, int64_t oh, int64_t ow) {
  int64_t pt = 0, pl = 0;
  if (same) {
    int64_t nh = (oh - 1) * sh + kh - h, nw = (ow - 1) * sw + kw - w;
    pt = nh > 0 ? nh / 2 : 0;
    pl = nw > 0 ? nw / 2 : 0;
  }
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t o = 0; o < co; o++) {
          double s = bias ? bias[o] : 0;
          for (int64_t a = 0; a < kh; a++)
            for (int64_t e = 0; e < kw; e++) {
              int64_t ih = i * sh - pt + a, iw = j * sw - pl + e;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              for (int64_t q = 0; q < c; q++)
                s += (double)x[((b * h + ih) * w + iw) * c + q] * f[((a * kw + e) * c + q) * co + o];
            }
          if ((act == SM_NN_ACT_RELU || act == SM_NN_ACT_RELU6) && s < 0) s = 0;
          if (act == SM_NN_ACT_RELU6 && s > 6) s = 6;
          y[((b * oh + i) * ow + j) * co + o] = (float)s;
        }
}

static void check_conv(sm_threadpool *pool, int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                       int64_t co, int64_t sh, int64_t sw, int same, int with_bias, int act) {
  int64_t oh, ow;
  sm__nn_conv2d_out_size(h, w, kh, kw, sh, sw, same, &oh, &ow);
  if (same) {
    CHECK_EQ_INT(oh, (h + sh - 1) / sh);
    CHECK_EQ_INT(ow, (w + sw - 1) / sw);
  } else {
    CHECK_EQ_INT(oh, (h - kh) / sh + 1);
    CHECK_EQ_INT(ow, (w - kw) / sw + 1);
  }
  int64_t nx = n * h * w * c, nf = kh * kw * c * co, ny = n * oh * ow * co;
  float *x = malloc(sizeof(float) * (size_t)nx), *f = malloc(sizeof(float) * (size_t)nf);
  float *b = malloc(sizeof(float) * (size_t)co), *y = malloc(sizeof(float) * (size_t)ny + 4);
  float *e = malloc(sizeof(float) * (size_t)ny + 4);
  fill(x, nx);
  fill(f, nf);
  fill(b, co);
  for (int64_t i = 0; i < ny; i++) y[i] = 1e30f; /* every element must be written */
  CHECK_OK(sm__nn_conv2d_f32(pool, x, n, h, w, c, f, kh, kw, co, sh, sw, same, with_bias ? b : NULL, act, y));
  naive_conv(x, n, h, w, c, f, kh, kw, co, sh, sw, same, with_bias ? b : NULL, act, e, oh, ow);
  char what[160];
  snprintf(what, sizeof what, "conv n%lld %lldx%lldx%lld k%lldx%lld->%lld s%lld,%lld %s bias%d act%d pool%d",
           (long long)n, (long long)h, (long long)w, (long long)c, (long long)kh, (long long)kw, (long long)co,
           (long long)sh, (long long)sw, same ? "SAME" : "VALID", with_bias, act, pool != NULL);
  CHECK(close_all(y, e, ny, what));
  free(x), free(f), free(b), free(y), free(e);
}

static void check_matmul(sm_threadpool *pool, int ta, int tb, int64_t m, int64_t n, int64_t k, int with_bias, int act,
                         int accumulate) {
  float *a = malloc(sizeof(float) * (size_t)(m * k + 1)), *b = malloc(sizeof(float) * (size_t)(k * n + 1));
  float *bias = malloc(sizeof(float) * (size_t)n), *c = malloc(sizeof(float) * (size_t)(m * n));
  float *e = malloc(sizeof(float) * (size_t)(m * n));
  fill(a, m * k);
  fill(b, k * n);
  fill(bias, n);
  fill(c, m * n);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = accumulate ? c[i * n + j] : (with_bias ? bias[j] : 0);
      for (int64_t q = 0; q < k; q++)
        s += (double)(ta ? a[q * m + i] : a[i * k + q]) * (tb ? b[j * k + q] : b[q * n + j]);
      if (!accumulate && act == SM_NN_ACT_RELU && s < 0) s = 0;
      e[i * n + j] = (float)s;
    }
  if (!accumulate)
    for (int64_t i = 0; i < m * n; i++) c[i] = 1e30f;
  sm__nn_matmul_f32(pool, ta, tb, m, n, k, a, b, with_bias ? bias : NULL, act, accumulate, c);
  char what[128];
  snprintf(what, sizeof what, "matmul %lldx%lldx%lld ta%d tb%d bias%d act%d acc%d pool%d", (long long)m,
           (long long)n, (long long)k, ta, tb, with_bias, act, accumulate, pool != NULL);
  CHECK(close_all(c, e, m * n, what));
  free(a), free(b), free(bias), free(c), free(e);
}

/* sm__nn_sgemv_narrow (nn_gemm.c, AVX-512 CPUs; elsewhere it declines and nothing is checked):
 * y = x B against double sums, B at every offset from a 64-byte boundary (the aligned-loads path
 * for contiguous rows of 16 n columns, the plain one otherwise), with and without accumulating. */
static void check_gemv_narrow(int64_t k, int64_t n, int64_t ldb, int acc) {
  size_t bytes = sizeof(float) * (size_t)(k * ldb + 16); /* room for any offset; a multiple of 64 */
  float *x = malloc(sizeof(float) * (size_t)k), *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
  float y[128], e[128];
  fill(x, k);
  for (int off = 0; off < 16; off++) {
    float *b = mem + off;
    fill(b, k * ldb);
    for (int64_t j = 0; j < n; j++) {
      y[j] = acc ? 0.25f * (float)j - 3.0f : 1e30f;
      double s_ = acc ? y[j] : 0;
      for (int64_t q = 0; q < k; q++) s_ += (double)x[q] * b[q * ldb + j];
      e[j] = (float)s_;
    }
    if (!sm__nn_sgemv_narrow(k, n, x, b, ldb, y, acc)) break; /* no AVX-512 */
    char what[128];
    snprintf(what, sizeof what, "gemv narrow k%lld n%lld ldb%lld acc%d offset %d", (long long)k, (long long)n,
             (long long)ldb, acc, off);
    CHECK(close_all(y, e, n, what));
  }
  free(x), free(mem);
}

/* sm__nn_sgemv_rows (nn_gemm.c, AVX-512 CPUs, or AVX2 + FMA up to 2048 columns; elsewhere it declines
 * and nothing is checked): y = x B (+ y) against double sums, any width, B's rows four at a time
 * and the rest one by one. */
static void check_gemv_rows(int64_t k, int64_t n, int64_t ldb, int acc) {
  float *x = malloc(sizeof(float) * (size_t)k), *b = malloc(sizeof(float) * (size_t)(k * ldb));
  float *y = malloc(sizeof(float) * (size_t)n), *e = malloc(sizeof(float) * (size_t)n);
  fill(x, k);
  fill(b, k * ldb);
  for (int64_t j = 0; j < n; j++) {
    y[j] = acc ? 0.25f * (float)(j % 32) - 3.0f : 1e30f;
    double s_ = acc ? y[j] : 0;
    for (int64_t q = 0; q < k; q++) s_ += (double)x[q] * b[q * ldb + j];
    e[j] = (float)s_;
  }
  if (sm__nn_sgemv_rows(k, n, x, b, ldb, y, acc)) {
    char what[128];
    snprintf(what, sizeof what, "gemv rows k%lld n%lld ldb%lld acc%d", (long long)k, (long long)n, (long long)ldb, acc);
    CHECK(close_all(y, e, n, what));
  } else {
    CHECK(!sm__nn_sgemv_rows_on() && (n > 2048 || !sm__nn_sgemv_rows_avx2_on()));
  }
  free(x), free(b), free(y), free(e);
}

/* sm__nn_sgemm_rows (nn_gemm.c, AVX-512 CPUs; elsewhere it declines and nothing is checked): m rows
 * of y = a B (+ y), lda and ldy wider than k and n, against double sums; rows beyond m untouched. */
static void check_gemm_rows(int64_t m, int64_t k, int64_t n, int acc) {
  const int64_t lda = k + 3, ldb = n + 5, ldy = n + 7;
  float *a = malloc(sizeof(float) * (size_t)(m * lda)), *b = malloc(sizeof(float) * (size_t)(k * ldb));
  float *y = malloc(sizeof(float) * (size_t)((m + 1) * ldy)), *e = malloc(sizeof(float) * (size_t)((m + 1) * ldy));
  fill(a, m * lda);
  fill(b, k * ldb);
  for (int64_t i = 0; i < (m + 1) * ldy; i++) {
    y[i] = acc ? 0.25f * (float)(i % 32) - 3.0f : 1e30f;
    e[i] = y[i];
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s_ = acc ? y[i * ldy + j] : 0;
      for (int64_t q = 0; q < k; q++) s_ += (double)a[i * lda + q] * b[q * ldb + j];
      e[i * ldy + j] = (float)s_;
    }
  if (sm__nn_sgemm_rows(m, k, n, a, lda, b, ldb, y, ldy, acc)) {
    char what[128];
    snprintf(what, sizeof what, "gemm rows m%lld k%lld n%lld acc%d", (long long)m, (long long)k, (long long)n, acc);
    CHECK(close_all(y, e, (m + 1) * ldy, what));
  } else {
    CHECK(!sm__nn_sgemv_rows_on());
  }
  CHECK(!sm__nn_sgemm_rows(SM_NN_STREAM_M + 1, k, n, a, lda, b, ldb, y, ldy, acc)); /* too many rows: declined */
  free(a), free(b), free(y), free(e);
}

static void check_maxpool(sm_threadpool *pool, int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw,
                          int64_t sh, int64_t sw, int same, int ties) {
  int64_t oh, ow;
  sm__nn_conv2d_out_size(h, w, ph, pw, sh, sw, same, &oh, &ow);
  int64_t nx = n * h * w * c, ny = n * oh * ow * c;
  float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)ny);
  float *y2 = malloc(sizeof(float) * (size_t)ny);
  int64_t *am = malloc(sizeof(int64_t) * (size_t)ny);
  fill(x, nx);
  if (ties) /* few distinct values: many ties */
    for (int64_t i = 0; i < nx; i++) x[i] = floorf(x[i] * 2);
  CHECK_OK(sm__nn_maxpool_f32(pool, x, n, h, w, c, ph, pw, sh, sw, same, y, am));
  CHECK_OK(sm__nn_maxpool_f32(pool, x, n, h, w, c, ph, pw, sh, sw, same, y2, NULL));
  int64_t pt = 0, pl = 0;
  if (same) {
    int64_t nh = (oh - 1) * sh + ph - h, nw = (ow - 1) * sw + pw - w;
    pt = nh > 0 ? nh / 2 : 0;
    pl = nw > 0 ? nw / 2 : 0;
  }
  int bad = 0;
  for (int64_t b = 0; b < n && !bad; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t q = 0; q < c; q++) {
          float best = 0;
          int64_t bi = -1;
          for (int64_t a = 0; a < ph; a++)
            for (int64_t e = 0; e < pw; e++) {
              int64_t ih = i * sh - pt + a, iw = j * sw - pl + e;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              int64_t idx = ((b * h + ih) * w + iw) * c + q;
              if (bi < 0 || x[idx] > best) best = x[idx], bi = idx;
            }
          int64_t o = ((b * oh + i) * ow + j) * c + q;
          if (y[o] != best || y2[o] != best || am[o] != bi) {
            if (!bad)
              fprintf(stderr, "maxpool %lldx%lld s%lld %s: output %lld: %g/%g (argmax %lld) vs %g (argmax %lld)\n",
                      (long long)ph, (long long)pw, (long long)sh, same ? "SAME" : "VALID", (long long)o, y[o], y2[o],
                      (long long)am[o], best, (long long)bi);
            bad = 1;
          }
        }
  CHECK(!bad);
  free(x), free(y), free(y2), free(am);
}

int main(void) {
  sm_threadpool *pool = NULL;
  CHECK_OK(sm__threadpool_new(3, &pool));
  for (int p = 0; p < 2; p++) {
    sm_threadpool *tp = p ? pool : NULL;
    /* the seed CNN's shapes, small odd ones, strides, 1x1 (the plain-gemm path) */
    check_conv(tp, 1, 28, 28, 1, 3, 3, 32, 1, 1, 0, 1, SM_NN_ACT_RELU);
    check_conv(tp, 2, 13, 13, 32, 3, 3, 64, 1, 1, 0, 1, SM_NN_ACT_RELU);
    check_conv(tp, 3, 7, 9, 3, 3, 2, 5, 2, 3, 1, 1, SM_NN_ACT_NONE);
    check_conv(tp, 2, 8, 8, 4, 5, 5, 6, 2, 2, 1, 0, SM_NN_ACT_RELU);
    check_conv(tp, 4, 6, 5, 16, 1, 1, 8, 1, 1, 0, 1, SM_NN_ACT_RELU);
    check_conv(tp, 1, 5, 5, 2, 1, 1, 3, 2, 2, 1, 0, SM_NN_ACT_NONE);
    check_conv(tp, 64, 12, 12, 8, 3, 3, 16, 1, 1, 1, 1, SM_NN_ACT_RELU);
    /* the direct path (short patches): SAME borders, channel tails, Relu6, with and without bias */
    check_conv(tp, 2, 11, 13, 3, 3, 3, 20, 1, 1, 1, 1, SM_NN_ACT_RELU6);
    check_conv(tp, 3, 9, 10, 1, 3, 3, 32, 2, 1, 1, 0, SM_NN_ACT_RELU);
    check_conv(tp, 1, 6, 7, 2, 2, 3, 17, 1, 2, 0, 1, SM_NN_ACT_NONE);
    check_conv(tp, 2, 9, 17, 1, 3, 3, 48, 1, 1, 1, 1, SM_NN_ACT_RELU6); /* 16-channel vectors: 32 + 16 */
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        check_matmul(tp, ta, tb, 7, 5, 3, 1, SM_NN_ACT_RELU, 0);
        check_matmul(tp, ta, tb, 300, 128, 200, 1, SM_NN_ACT_RELU, 0);
        check_matmul(tp, ta, tb, 33, 17, 65, 0, SM_NN_ACT_NONE, 1);
        check_matmul(tp, ta, tb, 130, 10, 1600, 1, SM_NN_ACT_NONE, 0);
      }
    /* one row by a B of 1M floats: with the pool (3 threads) its rows in 3 pieces, the y's added,
     * then bias and relu; accumulating into C */
    check_matmul(tp, 0, 0, 1, 1000, 1027, 1, SM_NN_ACT_RELU, 0);
    check_matmul(tp, 1, 0, 1, 1000, 1027, 0, SM_NN_ACT_NONE, 1);
    check_matmul(tp, 0, 0, 4, 3, 0, 1, SM_NN_ACT_RELU, 0); /* empty product: bias, relu */
    check_matmul(tp, 0, 0, 4, 3, 0, 0, SM_NN_ACT_NONE, 1);
    check_maxpool(tp, 2, 26, 26, 32, 2, 2, 2, 2, 0, 0);
    check_maxpool(tp, 2, 7, 7, 3, 3, 3, 2, 2, 1, 1);
    check_maxpool(tp, 3, 9, 6, 5, 2, 3, 1, 2, 1, 1);
    check_maxpool(tp, 64, 16, 16, 8, 2, 2, 2, 2, 0, 1);
  }
  /* one row times a narrow B: the seed CNN's Dense (5408 x 64), widths with and without a masked
   * tail, one row of B, an odd count of rows, a leading dimension past n (not contiguous) */
  for (int acc = 0; acc < 2; acc++) {
    check_gemv_narrow(5408, 64, 64, acc);
    check_gemv_narrow(77, 16, 16, acc);
    check_gemv_narrow(3, 128, 128, acc);
    check_gemv_narrow(1, 48, 48, acc);
    check_gemv_narrow(2, 112, 112, acc);
    check_gemv_narrow(64, 10, 10, acc);
    check_gemv_narrow(33, 100, 100, acc);
    check_gemv_narrow(9, 32, 40, acc);
    /* any width, rows in order: VGG16's 512 x 4096 piece, a masked tail (1000), fewer than 16
     * columns, k % 4 = 1, 2, 3 and k < 4, a leading dimension past n */
    check_gemv_rows(256, 4096, 4096, acc);
    check_gemv_rows(513, 1000, 1000, acc);
    check_gemv_rows(6, 7, 7, acc);
    check_gemv_rows(3, 300, 300, acc);
    check_gemv_rows(1, 33, 33, acc);
    check_gemv_rows(11, 200, 260, acc);
    /* the AVX2 clone's bounds: 16-column steps, one 8-column step, a masked tail of 1-7; the widest
     * it takes and one column more (OpenBLAS's there) */
    for (int64_t n = 1; n <= 33; n++) check_gemv_rows(4 + n % 5, n, n + n % 3, acc);
    check_gemv_rows(9, 2048, 2048, acc);
    check_gemv_rows(9, 2049, 2049, acc);
    for (int64_t m = 1; m <= SM_NN_STREAM_M; m++) check_gemm_rows(m, 4 * m + m % 3, 16 * m + 9 * (m % 2), acc);
    check_gemm_rows(4, 1000, 512, acc);
  }
  /* an empty window dimension (zero-size filter): y = act(bias) */
  float x[4] = {1, 2, 3, 4}, b[2] = {-1, 2}, y[8];
  float f0[1];
  CHECK_OK(sm__nn_conv2d_f32(NULL, x, 1, 2, 2, 0, f0, 1, 1, 2, 1, 1, 0, b, SM_NN_ACT_RELU, y));
  CHECK(y[0] == 0 && y[1] == 2 && y[6] == 0 && y[7] == 2);
  /* refused geometry */
  CHECK_ERR(sm__nn_conv2d_f32(NULL, x, 1, 2, 2, 1, x, 4, 4, 1, 1, 1, 0, NULL, 0, y), "negative");
  CHECK_ERR(sm__nn_conv2d_f32(NULL, x, 1, 2, 2, 1, x, 1, 1, 1, 0, 1, 0, NULL, 0, y), "Stride");
  CHECK_ERR(sm__nn_conv2d_f32(NULL, x, -1, 2, 2, 1, x, 1, 1, 1, 1, 1, 0, NULL, 0, y), "negative");
  CHECK_ERR(sm__nn_maxpool_f32(NULL, x, 1, 2, 2, 1, 0, 1, 1, 1, 0, y, NULL), "window");
  CHECK_ERR(sm__nn_maxpool_f32(NULL, x, 1, 2, 2, 1, 4, 1, 1, 1, 0, y, NULL), "negative");
  CHECK_ERR(sm__nn_maxpool_f32(NULL, x, 1, 2, 2, 1, 1, 1, 0, 1, 0, y, NULL), "Stride");
  sm__threadpool_free(pool);
  TEST_MAIN_END();
}
