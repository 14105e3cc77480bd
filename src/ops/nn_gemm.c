/* nn_gemm.c - float GEMM for few rows (nn_internal.h, sm__nn_sgemm_small): C = A B, row-major, no
 * transposes, for the convolutions and matmuls of batch-1 inference whose product has a handful
 * of rows (ResNet50's last stages at 64x64 input: 4 or 16 output pixels against a 4608 x 512
 * filter). OpenBLAS packs the whole filter into its panel layout on every call, which then costs
 * more than the product itself; here each filter row is read once per four rows of A, straight
 * from the tensor, and multiplied in registers (4 rows x 16 columns of accumulators, k in slices). Eight-lane
 * GCC/Clang vectors, with an AVX2+FMA clone picked at run time as nn_conv.c's direct convolution
 * does. Each C element is the sum over k in order (one rounding per step, or per FMA in the
 * clone; a slice's partial sum goes through C unchanged): within an ulp or so of OpenBLAS's order, as any two BLAS builds are.
 *
 * Also sm__nn_sgemv_narrow (nn_raw.h): one row times a B of at most 128 columns (a batch-1 Dense:
 * the seed CNN's 5408 x 64), AVX-512 only: all of y stays in registers while B streams through once
 * with aligned loads whatever B's alignment (gemv_flat). From L2 on this project's Xeon: 8-9 us
 * against OpenBLAS sgemv's 11.6-13 us for 5408 x 64 (bench/RESULTS.md, 2026-12-02, h7). Each y is
 * the sum over k in two interleaved chains (even and odd rows), then the two added.
 * sm__nn_sgemv_rows streams any B four rows at a time (one row of A), sm__nn_sgemm_rows the same
 * for up to SM_NN_STREAM_M rows of A (nn_conv.c's conv_stream), each B row read once for all.
 * On CPUs with AVX2 + FMA and no AVX-512, sm__nn_sgemv_rows has an 8-lane clone (gemv_rows_avx2,
 * the same bits) for B up to 2048 columns: ResNet50's / MobileNetV2's batch-1 Dense (2048 or 1280
 * x 1000) split by rows over both threads, 0.5-0.7x OpenBLAS sgemv's time over column slices from
 * cache; wider B (VGG16's 4096-column fc1 / fc2) stay OpenBLAS's (equal or faster there). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

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

/* ---- one row, narrow B (AVX-512) ------------------------------------------------------------- */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMV_AVX512 __attribute__((target("avx512f")))

/* y[0..n) = x[0..k) B (+ y when acc), n in (16 (NV - 1), 16 NV]: NV vectors of accumulators; with
 * NV <= 4 two chains (even and odd k, added at the end) so that the FMAs' latency never waits. */
static inline __attribute__((always_inline)) GEMV_AVX512 void gemv_nv(int64_t k, int64_t n, const float *x,
                                                                       const float *b, int64_t ldb, float *y,
                                                                       int acc, int NV) {
  __m512 a[8], c[4];
  const __mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1 : 0xffffu);
#define GEMV_LD(row, v) ((v) == NV - 1 ? _mm512_maskz_loadu_ps(last, (row) + 16 * (v)) : _mm512_loadu_ps((row) + 16 * (v)))
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) a[v] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) c[v] = _mm512_setzero_ps();
  int64_t p = 0;
  if (NV <= 4)
    for (; p + 2 <= k; p += 2) {
      const float *r0 = b + p * ldb, *r1 = r0 + ldb;
      __m512 x0 = _mm512_set1_ps(x[p]), x1 = _mm512_set1_ps(x[p + 1]);
#pragma GCC unroll 4
      for (int v = 0; v < (NV <= 4 ? NV : 4); v++) {
        a[v] = _mm512_fmadd_ps(x0, GEMV_LD(r0, v), a[v]);
        c[v] = _mm512_fmadd_ps(x1, GEMV_LD(r1, v), c[v]);
      }
    }
  for (; p < k; p++) {
    const float *r0 = b + p * ldb;
    __m512 x0 = _mm512_set1_ps(x[p]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) a[v] = _mm512_fmadd_ps(x0, GEMV_LD(r0, v), a[v]);
  }
#undef GEMV_LD
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) {
    __m512 r = NV <= 4 && v < 4 ? _mm512_add_ps(a[v], c[v]) : a[v];
    __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffffu;
    if (acc) r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + 16 * v), r);
    _mm512_mask_storeu_ps(y + 16 * v, m, r);
  }
}

/* gemv_nv for a B whose rows are contiguous (ldb == n == 16 NV) and which starts h floats (1..15)
 * before a 64-byte boundary, as tensors do (16-byte aligned): so that no load straddles two cache
 * lines (that took the seed CNN's 5408 x 64 from ~9 to ~13.5 us), every load is aligned. The vector
 * of row p at b + h + p n + 16 v holds columns h + 16 v + l (lane l) of row p, except that in the
 * last one (v = NV - 1) lanes 16 - h .. 15 are columns 0 .. h - 1 of row p + 1: that vector is
 * multiplied by x[p] in its low lanes and x[p + 1] in the others, and the sums are rotated back to
 * column order at the end. Rows alternate between two sets of accumulators. */
static inline __attribute__((always_inline)) GEMV_AVX512 void gemv_flat(int64_t k, const float *x, const float *b,
                                                                         float *y, int acc, int h, int NV) {
  __m512 a[2][8];
  const __mmask16 next = (__mmask16)(0xffffu << (16 - h)); /* lanes of the next row */
  const float *base = b + h;                                /* 64-byte aligned */
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) a[0][v] = a[1][v] = _mm512_setzero_ps();
  /* row 0's columns 0 .. h - 1: the upper lanes of the vector before base */
  a[1][NV - 1] = _mm512_fmadd_ps(_mm512_set1_ps(x[0]), _mm512_maskz_load_ps(next, base - 16), a[1][NV - 1]);
#define GEMV_ROW(c, p)                                                                                       \
  do {                                                                                                       \
    const float *r_ = base + (p) * 16 * NV;                                                                  \
    __m512 xk_ = _mm512_set1_ps(x[p]);                                                                       \
    for (int v = 0; v < NV - 1; v++) a[c][v] = _mm512_fmadd_ps(xk_, _mm512_load_ps(r_ + 16 * v), a[c][v]); \
    __m512 xm_ = _mm512_mask_blend_ps(next, xk_, _mm512_set1_ps(x[(p) + 1]));                                \
    a[c][NV - 1] = _mm512_fmadd_ps(xm_, _mm512_load_ps(r_ + 16 * (NV - 1)), a[c][NV - 1]);                   \
  } while (0)
  int64_t p = 0;
  for (; p + 2 < k; p += 2) { /* rows p, p + 1 < k - 1: x[p + 2] exists */
    GEMV_ROW(0, p);
    GEMV_ROW(1, p + 1);
  }
  if (p + 1 < k) {
    GEMV_ROW(0, p);
    p++;
  }
#undef GEMV_ROW
  { /* the last row: its last vector's upper lanes lie past the end of B */
    const float *r = base + p * 16 * NV;
    __m512 xk = _mm512_set1_ps(x[p]);
    for (int v = 0; v < NV - 1; v++) a[1][v] = _mm512_fmadd_ps(xk, _mm512_load_ps(r + 16 * v), a[1][v]);
    a[1][NV - 1] = _mm512_fmadd_ps(xk, _mm512_maskz_load_ps((__mmask16)~next, r + 16 * (NV - 1)), a[1][NV - 1]);
  }
  /* column 16 u + t: lane t - h of sum u for t >= h, else lane t + 16 - h of sum u - 1 (mod NV) */
  const __m512i idx = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                       _mm512_set1_epi32(16 - h));
  __m512 sum[8];
#pragma GCC unroll 8
  for (int v = 0; v < NV; v++) sum[v] = _mm512_add_ps(a[0][v], a[1][v]);
#pragma GCC unroll 8
  for (int u = 0; u < NV; u++) {
    __m512 r = _mm512_permutex2var_ps(sum[(u + NV - 1) % NV], idx, sum[u]);
    if (acc) r = _mm512_add_ps(_mm512_loadu_ps(y + 16 * u), r);
    _mm512_storeu_ps(y + 16 * u, r);
  }
}

GEMV_AVX512 static void gemv_avx512(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y,
                                    int acc) {
  int h = (int)((16 - ((uintptr_t)b >> 2)) & 15);
  if (ldb == n && n % 16 == 0 && h && !((uintptr_t)b & 3)) {
    switch (n / 16) {
      case 1: gemv_flat(k, x, b, y, acc, h, 1); return;
      case 2: gemv_flat(k, x, b, y, acc, h, 2); return;
      case 3: gemv_flat(k, x, b, y, acc, h, 3); return;
      case 4: gemv_flat(k, x, b, y, acc, h, 4); return;
      case 5: gemv_flat(k, x, b, y, acc, h, 5); return;
      case 6: gemv_flat(k, x, b, y, acc, h, 6); return;
      case 7: gemv_flat(k, x, b, y, acc, h, 7); return;
      default: gemv_flat(k, x, b, y, acc, h, 8); return;
    }
  }
  switch ((n + 15) / 16) {
    case 1: gemv_nv(k, n, x, b, ldb, y, acc, 1); break;
    case 2: gemv_nv(k, n, x, b, ldb, y, acc, 2); break;
    case 3: gemv_nv(k, n, x, b, ldb, y, acc, 3); break;
    case 4: gemv_nv(k, n, x, b, ldb, y, acc, 4); break;
    case 5: gemv_nv(k, n, x, b, ldb, y, acc, 5); break;
    case 6: gemv_nv(k, n, x, b, ldb, y, acc, 6); break;
    case 7: gemv_nv(k, n, x, b, ldb, y, acc, 7); break;
    default: gemv_nv(k, n, x, b, ldb, y, acc, 8); break;
  }
}

/* ---- one row, any B, streamed in row order (AVX-512) ------------------------------------------ */
/* y[0..n) = x[0..k) B (+ y when acc): B's rows four at a time, each group one pass over y (in L1
 * for n up to a few thousand: 16 KB at 4096), so that B is read exactly once and in address order,
 * four contiguous streams, with the group after next prefetched (ldb * 4 floats ahead in each
 * stream). A range of B's rows is one contiguous block: sm__nn_sgemv_rows's callers split k, not
 * n, over threads. Each y is the sum over k in order, one FMA per row (the first group stores
 * without reading y when not acc). */
GEMV_AVX512 static void gemv_rows_avx512(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y,
                                         int acc) {
  const __mmask16 tail = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1 : 0);
  const int64_t nv = n / 16 * 16, ahead = 4 * ldb;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float *r0 = b + p * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
    const __m512 x0 = _mm512_set1_ps(x[p]), x1 = _mm512_set1_ps(x[p + 1]), x2 = _mm512_set1_ps(x[p + 2]),
                 x3 = _mm512_set1_ps(x[p + 3]);
    const int load = acc || p > 0, pf = p + 8 <= k; /* prefetch only rows that exist */
    for (int64_t j = 0; j < nv; j += 16) {
      if (pf) {
        _mm_prefetch((const char *)(r0 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r1 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r2 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r3 + j + ahead), _MM_HINT_T0);
      }
      __m512 c = _mm512_mul_ps(x0, _mm512_loadu_ps(r0 + j));
      if (load) c = _mm512_add_ps(_mm512_loadu_ps(y + j), c);
      c = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r1 + j), c);
      c = _mm512_fmadd_ps(x2, _mm512_loadu_ps(r2 + j), c);
      c = _mm512_fmadd_ps(x3, _mm512_loadu_ps(r3 + j), c);
      _mm512_storeu_ps(y + j, c);
    }
    if (tail) {
      __m512 c = _mm512_mul_ps(x0, _mm512_maskz_loadu_ps(tail, r0 + nv));
      if (load) c = _mm512_add_ps(_mm512_maskz_loadu_ps(tail, y + nv), c);
      c = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(tail, r1 + nv), c);
      c = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(tail, r2 + nv), c);
      c = _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(tail, r3 + nv), c);
      _mm512_mask_storeu_ps(y + nv, tail, c);
    }
  }
  for (; p < k; p++) { /* the last k % 4 rows */
    const float *r0 = b + p * ldb;
    const __m512 x0 = _mm512_set1_ps(x[p]);
    const int load = acc || p > 0;
    for (int64_t j = 0; j < nv; j += 16) {
      __m512 c = _mm512_mul_ps(x0, _mm512_loadu_ps(r0 + j));
      _mm512_storeu_ps(y + j, load ? _mm512_add_ps(_mm512_loadu_ps(y + j), c) : c);
    }
    if (tail) {
      __m512 c = _mm512_mul_ps(x0, _mm512_maskz_loadu_ps(tail, r0 + nv));
      _mm512_mask_storeu_ps(y + nv, tail, load ? _mm512_add_ps(_mm512_maskz_loadu_ps(tail, y + nv), c) : c);
    }
  }
}

/* ---- one row, any B, streamed in row order (AVX2 + FMA, CPUs without AVX-512) ------------------ */
/* gemv_rows_avx512 with 8-lane vectors, two per step (one 64-byte line of each of the four rows):
 * the same order per y element (x0 r0, + y, then three FMAs), so the same bits as the AVX-512
 * loop. The last n % 16 columns: one full vector, then a masked one. */
#define GEMV_AVX2 __attribute__((target("avx2,fma")))
#define GEMV_AVX2_MAX_N 2048
#define GEMV_STEP8(off, LOAD, STORE)                                                                \
  do {                                                                                             \
    __m256 c_ = _mm256_mul_ps(x0, LOAD(r0 + (off)));                                               \
    if (load) c_ = _mm256_add_ps(LOAD(y + (off)), c_);                                             \
    c_ = _mm256_fmadd_ps(x1, LOAD(r1 + (off)), c_);                                                \
    c_ = _mm256_fmadd_ps(x2, LOAD(r2 + (off)), c_);                                                \
    c_ = _mm256_fmadd_ps(x3, LOAD(r3 + (off)), c_);                                                \
    STORE(y + (off), c_);                                                                          \
  } while (0)
GEMV_AVX2 static void gemv_rows_avx2(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y,
                                     int acc) {
  const int64_t n16 = n / 16 * 16, n8 = n / 8 * 8, rem = n - n8, ahead = 4 * ldb;
  int32_t mbits[8];
  for (int i = 0; i < 8; i++) mbits[i] = i < rem ? -1 : 0;
  const __m256i mask = _mm256_loadu_si256((const __m256i *)mbits);
#define GEMV_LD(p) _mm256_loadu_ps(p)
#define GEMV_ST(p, v) _mm256_storeu_ps((p), (v))
#define GEMV_MLD(p) _mm256_maskload_ps((p), mask)
#define GEMV_MST(p, v) _mm256_maskstore_ps((p), mask, (v))
  for (int64_t p = 0; p < k; p += 4) {
    const int64_t rows = k - p < 4 ? k - p : 4;
    const float *r0 = b + p * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
    const __m256 x0 = _mm256_set1_ps(x[p]), x1 = _mm256_set1_ps(rows > 1 ? x[p + 1] : 0.0f),
                 x2 = _mm256_set1_ps(rows > 2 ? x[p + 2] : 0.0f), x3 = _mm256_set1_ps(rows > 3 ? x[p + 3] : 0.0f);
    const int load = acc || p > 0, pf = p + 8 <= k;
    if (rows < 4) { /* the last k % 4 rows: one row at a time, as the AVX-512 loop */
      for (int64_t q = 0; q < rows; q++) {
        const float *rq = r0 + q * ldb;
        const __m256 xq = _mm256_set1_ps(x[p + q]);
        const int ld = load || q > 0;
        for (int64_t j = 0; j < n8; j += 8) {
          __m256 c = _mm256_mul_ps(xq, _mm256_loadu_ps(rq + j));
          _mm256_storeu_ps(y + j, ld ? _mm256_add_ps(_mm256_loadu_ps(y + j), c) : c);
        }
        if (rem) {
          __m256 c = _mm256_mul_ps(xq, _mm256_maskload_ps(rq + n8, mask));
          _mm256_maskstore_ps(y + n8, mask, ld ? _mm256_add_ps(_mm256_maskload_ps(y + n8, mask), c) : c);
        }
      }
      break;
    }
    for (int64_t j = 0; j < n16; j += 16) {
      if (pf) {
        _mm_prefetch((const char *)(r0 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r1 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r2 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r3 + j + ahead), _MM_HINT_T0);
      }
      GEMV_STEP8(j, GEMV_LD, GEMV_ST);
      GEMV_STEP8(j + 8, GEMV_LD, GEMV_ST);
    }
    if (n8 > n16) GEMV_STEP8(n16, GEMV_LD, GEMV_ST);
    if (rem) GEMV_STEP8(n8, GEMV_MLD, GEMV_MST);
  }
#undef GEMV_LD
#undef GEMV_ST
#undef GEMV_MLD
#undef GEMV_MST
}
#undef GEMV_STEP8

/* Rows [0, m) of y (m <= SM_NN_STREAM_M) = a[m, 0..k) B (+ y when acc): as gemv_rows_avx512, B's
 * rows four at a time in address order, each group of four 16-float pieces loaded once and used
 * for all m rows of y (all m * n of y stays in L1: 16 KB at m 8, n 512). Each y is the sum over k
 * in order, one FMA per row. */
GEMV_AVX512 static void gemm_rows_avx512(int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b,
                                         int64_t ldb, float *y, int64_t ldy, int acc) {
  const __mmask16 full = (__mmask16)0xffff, tail = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1 : 0xffff);
  const int64_t ahead = 4 * ldb;
  int64_t p = 0;
  for (; p < k; p += 4) {
    const int64_t rows = k - p < 4 ? k - p : 4;
    const float *r0 = b + p * ldb, *r1 = rows > 1 ? r0 + ldb : r0, *r2 = rows > 2 ? r0 + 2 * ldb : r0,
                *r3 = rows > 3 ? r0 + 3 * ldb : r0;
    const int load = acc || p > 0, pf = p + 8 <= k;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 mk = j + 16 <= n ? full : tail;
      if (pf) {
        _mm_prefetch((const char *)(r0 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r1 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r2 + j + ahead), _MM_HINT_T0);
        _mm_prefetch((const char *)(r3 + j + ahead), _MM_HINT_T0);
      }
      const __m512 b0 = _mm512_maskz_loadu_ps(mk, r0 + j), b1 = _mm512_maskz_loadu_ps(mk, r1 + j),
                   b2 = _mm512_maskz_loadu_ps(mk, r2 + j), b3 = _mm512_maskz_loadu_ps(mk, r3 + j);
      for (int64_t i = 0; i < m; i++) {
        const float *x = a + i * lda + p;
        float *yi = y + i * ldy + j;
        __m512 c = _mm512_mul_ps(_mm512_set1_ps(x[0]), b0);
        if (load) c = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, yi), c);
        if (rows > 1) c = _mm512_fmadd_ps(_mm512_set1_ps(x[1]), b1, c);
        if (rows > 2) c = _mm512_fmadd_ps(_mm512_set1_ps(x[2]), b2, c);
        if (rows > 3) c = _mm512_fmadd_ps(_mm512_set1_ps(x[3]), b3, c);
        _mm512_mask_storeu_ps(yi, mk, c);
      }
    }
  }
}
#endif

/* AVX-512 present and not switched off by the environment variable `env` (=0), read once */
static int avx512_on(int *have, const char *env) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  int h = __atomic_load_n(have, __ATOMIC_RELAXED); /* a race only computes it twice */
  if (h < 0) {
    __builtin_cpu_init();
    const char *e = getenv(env);
    h = __builtin_cpu_supports("avx512f") && !(e && !strcmp(e, "0"));
    __atomic_store_n(have, h, __ATOMIC_RELAXED);
  }
  return h;
#else
  (void)have, (void)env;
  return 0;
#endif
}

/* SM_NN_GEMV_ROWS=0 (bench/'s A/B switch) leaves these products to the caller's other paths */
static int rows_have = -1;
int sm__nn_sgemv_rows_on(void) { return avx512_on(&rows_have, "SM_NN_GEMV_ROWS"); }

/* The AVX2 clone (gemv_rows_avx2): a CPU with AVX2 + FMA and without AVX-512, for n <= GEMV_AVX2_MAX_N
 * (wider: OpenBLAS's sgemv over column slices was as fast or faster here, bench/RESULTS.md session
 * 18 b2), unless SM_NN_GEMV_AVX2=0 (bench/'s A/B switch: OpenBLAS's sgemv as before). Read once. */
static int avx2_rows = -1;
int sm__nn_sgemv_rows_avx2_on(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  int h = __atomic_load_n(&avx2_rows, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    const char *e = getenv("SM_NN_GEMV_AVX2");
    h = !__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        !(e && !strcmp(e, "0"));
    __atomic_store_n(&avx2_rows, h, __ATOMIC_RELAXED);
  }
  return h;
#else
  return 0;
#endif
}

int sm__nn_sgemv_rows(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y, int acc) {
  if (k <= 0 || n <= 0) return 0;
#ifdef GEMV_AVX512
  if (sm__nn_sgemv_rows_on()) {
    gemv_rows_avx512(k, n, x, b, ldb, y, acc);
    return 1;
  }
  if (n <= GEMV_AVX2_MAX_N && sm__nn_sgemv_rows_avx2_on()) {
    gemv_rows_avx2(k, n, x, b, ldb, y, acc);
    return 1;
  }
#endif
  (void)x, (void)b, (void)ldb, (void)y, (void)acc;
  return 0;
}

/* SM_NN_GEMV_NARROW=0 (bench/'s A/B switch) leaves every one-row product to OpenBLAS; read once */
int sm__nn_sgemv_narrow(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y, int acc) {
  static int have = -1;
  if (n <= 0 || n > 128 || k <= 0 || !avx512_on(&have, "SM_NN_GEMV_NARROW")) return 0;
#ifdef GEMV_AVX512
  gemv_avx512(k, n, x, b, ldb, y, acc);
  return 1;
#else
  (void)x, (void)b, (void)ldb, (void)y, (void)acc;
  return 0;
#endif
}

int sm__nn_sgemm_rows(int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,
                      float *y, int64_t ldy, int acc) {
  if (m <= 0 || m > SM_NN_STREAM_M || k <= 0 || n <= 0 || !sm__nn_sgemv_rows_on()) return 0;
#ifdef GEMV_AVX512
  gemm_rows_avx512(m, k, n, a, lda, b, ldb, y, ldy, acc);
  return 1;
#else
  (void)a, (void)lda, (void)b, (void)ldb, (void)y, (void)ldy, (void)acc;
  return 0;
#endif
}
