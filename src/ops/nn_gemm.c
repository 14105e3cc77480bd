/* nn_gemm.c - float GEMM for few rows (nn_internal.h, sm__nn_sgemm_small): C = A B, row-major, no
 * transposes, for the convolutions and matmuls of batch-1 inference whose product has a handful
 * of rows (ResNet50's last stages at 64x64 input: 4 or 16 output pixels against a 4608 x 512
 * filter). OpenBLAS packs the whole filter into its panel layout on every call, which then costs
 * more than the product itself; here each filter row is read once per four rows of A, straight
 * from the tensor, and multiplied in registers (4 rows x 16 columns of accumulators, k in slices). Eight-lane
 * GCC/Clang vectors, with an AVX2+FMA clone picked at run time as nn_conv.c's direct convolution
 * does. Each C element is the sum over k in order (one rounding per step, or per FMA in the
 * clone; a slice's partial sum goes through C unchanged): within an ulp or so of OpenBLAS's order, as any two BLAS builds are. */
#include <string.h>

#include "ops/nn_internal.h"

typedef float v8f __attribute__((vector_size(32)));
#define LOAD8(p) (__extension__({ v8f v_; memcpy(&v_, (p), sizeof v_); v_; }))
#define SPLAT8(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})

/* Rows [0, m) (m <= 4) x columns [n0, n0 + 16) of C: C += A[:, 0..k) B[0..k, :) (acc: start from C). */
static inline __attribute__((always_inline)) void block_4x16(int64_t m, int64_t k, const float *a, int64_t lda,
                                                              const float *b, int64_t ldb, float *c, int64_t ldc,
                                                              int acc) {
  v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
  if (acc) {
    c00 = LOAD8(c), c01 = LOAD8(c + 8);
    if (m > 1) c10 = LOAD8(c + ldc), c11 = LOAD8(c + ldc + 8);
    if (m > 2) c20 = LOAD8(c + 2 * ldc), c21 = LOAD8(c + 2 * ldc + 8);
    if (m > 3) c30 = LOAD8(c + 3 * ldc), c31 = LOAD8(c + 3 * ldc + 8);
  }
  const float *a0 = a, *a1 = a + (m > 1 ? lda : 0), *a2 = a + (m > 2 ? 2 * lda : 0), *a3 = a + (m > 3 ? 3 * lda : 0);
  for (int64_t p = 0; p < k; p++, b += ldb) {
    v8f b0 = LOAD8(b), b1 = LOAD8(b + 8);
    v8f x0 = SPLAT8(a0[p]), x1 = SPLAT8(a1[p]), x2 = SPLAT8(a2[p]), x3 = SPLAT8(a3[p]);
    c00 += x0 * b0, c01 += x0 * b1, c10 += x1 * b0, c11 += x1 * b1;
    c20 += x2 * b0, c21 += x2 * b1, c30 += x3 * b0, c31 += x3 * b1;
  }
  memcpy(c, &c00, 32), memcpy(c + 8, &c01, 32);
  if (m > 1) memcpy(c + ldc, &c10, 32), memcpy(c + ldc + 8, &c11, 32);
  if (m > 2) memcpy(c + 2 * ldc, &c20, 32), memcpy(c + 2 * ldc + 8, &c21, 32);
  if (m > 3) memcpy(c + 3 * ldc, &c30, 32), memcpy(c + 3 * ldc + 8, &c31, 32);
}

#define KSLICE 128

static inline __attribute__((always_inline)) void gemm_body(int64_t m, int64_t n0, int64_t n1, int64_t k,
                                                             const float *a, int64_t lda, const float *b, int64_t ldb,
                                                             float *c, int64_t ldc) {
  int64_t nv = n0 + (n1 - n0) / 16 * 16;
  for (int64_t i = 0; i < m; i += 4) {
    int64_t rows = m - i < 4 ? m - i : 4;
    /* k in slices of KSLICE filter rows, all column blocks per slice: the slice (KSLICE x n floats)
     * stays in cache across the blocks and spans few pages, where whole-k column strips would walk
     * every page of the filter once per strip */
    for (int64_t p0 = 0; p0 < k; p0 += KSLICE) {
      int64_t kk = k - p0 < KSLICE ? k - p0 : KSLICE;
      for (int64_t j = n0; j < nv; j += 16)
        block_4x16(rows, kk, a + i * lda + p0, lda, b + p0 * ldb + j, ldb, c + i * ldc + j, ldc, p0 > 0);
    }
    for (int64_t r = i; r < i + rows; r++) /* columns past the last 16 */
      for (int64_t j = nv; j < n1; j++) {
        float s = 0;
        for (int64_t p = 0; p < k; p++) s += a[r * lda + p] * b[p * ldb + j];
        c[r * ldc + j] = s;
      }
  }
}

static void gemm_base(int64_t m, int64_t n0, int64_t n1, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc) {
  gemm_body(m, n0, n1, k, a, lda, b, ldb, c, ldc);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_AVX2 1
#if defined(__clang__)
__attribute__((target("avx2,fma")))
#else
__attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#endif
static void gemm_avx2(int64_t m, int64_t n0, int64_t n1, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc) {
  gemm_body(m, n0, n1, k, a, lda, b, ldb, c, ldc);
}
#endif

void sm__nn_sgemm_small(int64_t m, int64_t n0, int64_t n1, int64_t k, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc) {
#ifdef GEMM_AVX2
  static int have = -1; /* computed once; a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  if (h) {
    gemm_avx2(m, n0, n1, k, a, lda, b, ldb, c, ldc);
    return;
  }
#endif
  gemm_base(m, n0, n1, k, a, lda, b, ldb, c, ldc);
}
