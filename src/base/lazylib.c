/* lazylib.c - the OpenBLAS and Snappy functions the library calls, without linking either.
 * Why: linked the ordinary way, every program using the library (the CLI's `run` of a two-op
 * model included) pays at exec for OpenBLAS's constructor (CPU probing, its thread pool,
 * libgfortran, libquadmath) and for libstdc++ (Snappy is C++): about 3 MiB of resident memory and
 * most of a cold start's instructions (relocations), though a model without a large MatMul or
 * Conv never calls OpenBLAS.
 *
 * Both are bound with dlopen at their first call. The functions carry the libraries' own names
 * and prototypes (checked against their headers), so callers are unchanged; they are hidden, so a host program's own
 * OpenBLAS or Snappy is not interposed. A kernel that starts using another cblas_* or snappy_*
 * function needs it here (the link fails until then). Should OpenBLAS be missing at run time (a
 * declared dependency, so only on a broken install), gemm falls back to plain loops: correct,
 * slow. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/lazylib.h"

#ifndef SM_OPENBLAS_SONAME
#define SM_OPENBLAS_SONAME "libopenblas.so.0"
#endif


/* ---- OpenBLAS -------------------------------------------------------------------------------- */

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                         blasint, float, const float *, blasint, const float *, blasint, float, float *, blasint);
typedef void (*dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                         blasint, double, const double *, blasint, const double *, blasint, double, double *,
                         blasint);
typedef void (*sgemv_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, blasint, blasint, float, const float *, blasint,
                         const float *, blasint, float, float *, blasint);
typedef void (*dgemv_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, blasint, blasint, double, const double *, blasint,
                         const double *, blasint, double, double *, blasint);
typedef void (*cgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         const void *, const void *, blasint, const void *, blasint, const void *, void *, blasint);
typedef void (*setthreads_fn)(int);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static sgemm_fn real_sgemm;
static dgemm_fn real_dgemm;
static sgemv_fn real_sgemv;
static dgemv_fn real_dgemv;
static cgemm_fn real_cgemm, real_zgemm;
static setthreads_fn real_set_num_threads;
static void (*real_thread_shutdown)(void);

static void blas_load(void) {
  void *h = dlopen(SM_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  SM_BIND(h, real_sgemm, "cblas_sgemm");
  SM_BIND(h, real_dgemm, "cblas_dgemm");
  SM_BIND(h, real_sgemv, "cblas_sgemv");
  SM_BIND(h, real_dgemv, "cblas_dgemv");
  SM_BIND(h, real_cgemm, "cblas_cgemm");
  SM_BIND(h, real_zgemm, "cblas_zgemm");
  SM_BIND(h, real_set_num_threads, "openblas_set_num_threads");
  SM_BIND(h, real_thread_shutdown, "blas_thread_shutdown_"); /* NULL: not a pthread build */
}

/* C = alpha * op(A) op(B) + beta * C with CBLAS's layout and leading-dimension rules: only for a
 * missing OpenBLAS. beta == 0 overwrites C (NaN in C does not survive), as BLAS does. */
#define REF_GEMM(T, order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)                  \
  do {                                                                                            \
    int rm_ = (order) == CblasRowMajor, at_ = (ta) != CblasNoTrans, bt_ = (tb) != CblasNoTrans;   \
    for (blasint i_ = 0; i_ < (M); i_++)                                                          \
      for (blasint j_ = 0; j_ < (N); j_++) {                                                      \
        T s_ = 0;                                                                                 \
        for (blasint k_ = 0; k_ < (K); k_++) {                                                    \
          /* element (r, c) of a matrix with leading dimension ld, in this order */              \
          T a_ = at_ ? (rm_ ? (A)[(size_t)k_ * (lda) + i_] : (A)[(size_t)i_ * (lda) + k_])        \
                     : (rm_ ? (A)[(size_t)i_ * (lda) + k_] : (A)[(size_t)k_ * (lda) + i_]);       \
          T b_ = bt_ ? (rm_ ? (B)[(size_t)j_ * (ldb) + k_] : (B)[(size_t)k_ * (ldb) + j_])        \
                     : (rm_ ? (B)[(size_t)k_ * (ldb) + j_] : (B)[(size_t)j_ * (ldb) + k_]);       \
          s_ += a_ * b_;                                                                          \
        }                                                                                         \
        T *c_ = rm_ ? &(C)[(size_t)i_ * (ldc) + j_] : &(C)[(size_t)j_ * (ldc) + i_];              \
        *c_ = (beta) == 0 ? (alpha) * s_ : (alpha) * s_ + (beta) * *c_;                           \
      }                                                                                           \
  } while (0)

SM_HIDDEN void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                           OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                           OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha,
                           OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B,
                           OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
                           OPENBLAS_CONST blasint ldc) {
  pthread_once(&blas_once, blas_load);
  if (real_sgemm) {
    real_sgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  REF_GEMM(float, Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

SM_HIDDEN void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                           OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                           OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST double alpha,
                           OPENBLAS_CONST double *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST double *B,
                           OPENBLAS_CONST blasint ldb, OPENBLAS_CONST double beta, double *C,
                           OPENBLAS_CONST blasint ldc) {
  pthread_once(&blas_once, blas_load);
  if (real_dgemm) {
    real_dgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  REF_GEMM(double, Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The complex gemms (complex64 / complex128 MatMul, nn_matmul.c): (re, im) pairs of T; the
 * fallback computes C = alpha op(A) op(B) + beta C (beta 0 overwrites), ConjTrans conjugating. */
#define REF_ZGEMM(T, order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)                           \
  do {                                                                                                     \
    int rm_ = (order) == CblasRowMajor, at_ = (ta) != CblasNoTrans, bt_ = (tb) != CblasNoTrans;            \
    T ac_ = (ta) == CblasConjTrans ? -1 : 1, bc_ = (tb) == CblasConjTrans ? -1 : 1;                        \
    const T *al_ = (alpha), *be_ = (beta), *A_ = (A), *B_ = (B);                                           \
    T *C_ = (C);                                                                                           \
    for (blasint i_ = 0; i_ < (M); i_++)                                                                   \
      for (blasint j_ = 0; j_ < (N); j_++) {                                                               \
        T sr_ = 0, si_ = 0;                                                                                \
        for (blasint k_ = 0; k_ < (K); k_++) {                                                             \
          size_t ai_ = at_ ? (rm_ ? (size_t)k_ * (lda) + i_ : (size_t)i_ * (lda) + k_)                     \
                           : (rm_ ? (size_t)i_ * (lda) + k_ : (size_t)k_ * (lda) + i_);                    \
          size_t bi_ = bt_ ? (rm_ ? (size_t)j_ * (ldb) + k_ : (size_t)k_ * (ldb) + j_)                     \
                           : (rm_ ? (size_t)k_ * (ldb) + j_ : (size_t)j_ * (ldb) + k_);                    \
          T ar_ = A_[2 * ai_], aim_ = ac_ * A_[2 * ai_ + 1], br_ = B_[2 * bi_], bim_ = bc_ * B_[2 * bi_ + 1]; \
          sr_ += ar_ * br_ - aim_ * bim_;                                                                  \
          si_ += ar_ * bim_ + aim_ * br_;                                                                  \
        }                                                                                                  \
        T *c_ = rm_ ? &C_[2 * ((size_t)i_ * (ldc) + j_)] : &C_[2 * ((size_t)j_ * (ldc) + i_)];             \
        T cr_ = al_[0] * sr_ - al_[1] * si_, ci_ = al_[0] * si_ + al_[1] * sr_;                            \
        if (be_[0] != 0 || be_[1] != 0) {                                                                  \
          cr_ += be_[0] * c_[0] - be_[1] * c_[1];                                                          \
          ci_ += be_[0] * c_[1] + be_[1] * c_[0];                                                          \
        }                                                                                                  \
        c_[0] = cr_, c_[1] = ci_;                                                                          \
      }                                                                                                    \
  } while (0)

SM_HIDDEN void cblas_cgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                           OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                           OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST void *alpha,
                           OPENBLAS_CONST void *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST void *B,
                           OPENBLAS_CONST blasint ldb, OPENBLAS_CONST void *beta, void *C, OPENBLAS_CONST blasint ldc) {
  pthread_once(&blas_once, blas_load);
  if (real_cgemm) {
    real_cgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  REF_ZGEMM(float, Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

SM_HIDDEN void cblas_zgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                           OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                           OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST void *alpha,
                           OPENBLAS_CONST void *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST void *B,
                           OPENBLAS_CONST blasint ldb, OPENBLAS_CONST void *beta, void *C, OPENBLAS_CONST blasint ldc) {
  pthread_once(&blas_once, blas_load);
  if (real_zgemm) {
    real_zgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  REF_ZGEMM(double, Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* y = alpha * op(A) x + beta * y, A m x n in this order; a negative increment walks from the end. */
#define REF_GEMV(T, order, trans, M, N, alpha, A, lda, X, incx, beta, Y, incy)                        \
  do {                                                                                              \
    int t_ = ((order) == CblasRowMajor) != ((trans) != CblasNoTrans); /* 1: A[i][k] at i*lda + k */ \
    blasint ny_ = (trans) != CblasNoTrans ? (N) : (M), nx_ = (trans) != CblasNoTrans ? (M) : (N);   \
    for (blasint i_ = 0; i_ < ny_; i_++) {                                                          \
      T s_ = 0;                                                                                     \
      for (blasint k_ = 0; k_ < nx_; k_++) {                                                        \
        T a_ = t_ ? (A)[(size_t)i_ * (lda) + k_] : (A)[(size_t)k_ * (lda) + i_];                    \
        T x_ = (X)[(incx) > 0 ? (size_t)k_ * (incx) : (size_t)(nx_ - 1 - k_) * (size_t)-(incx)];    \
        s_ += a_ * x_;                                                                              \
      }                                                                                             \
      T *y_ = &(Y)[(incy) > 0 ? (size_t)i_ * (incy) : (size_t)(ny_ - 1 - i_) * (size_t)-(incy)];    \
      *y_ = (beta) == 0 ? (alpha) * s_ : (alpha) * s_ + (beta) * *y_;                               \
    }                                                                                               \
  } while (0)

SM_HIDDEN void cblas_sgemv(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE trans,
                           OPENBLAS_CONST blasint m, OPENBLAS_CONST blasint n, OPENBLAS_CONST float alpha,
                           OPENBLAS_CONST float *a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *x,
                           OPENBLAS_CONST blasint incx, OPENBLAS_CONST float beta, float *y,
                           OPENBLAS_CONST blasint incy) {
  pthread_once(&blas_once, blas_load);
  if (real_sgemv) {
    real_sgemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
    return;
  }
  REF_GEMV(float, order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

SM_HIDDEN void cblas_dgemv(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE trans,
                           OPENBLAS_CONST blasint m, OPENBLAS_CONST blasint n, OPENBLAS_CONST double alpha,
                           OPENBLAS_CONST double *a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST double *x,
                           OPENBLAS_CONST blasint incx, OPENBLAS_CONST double beta, double *y,
                           OPENBLAS_CONST blasint incy) {
  pthread_once(&blas_once, blas_load);
  if (real_dgemv) {
    real_dgemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
    return;
  }
  REF_GEMV(double, order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

/* One thread also stops OpenBLAS's server threads. Its pthread build starts nproc - 1 of them
 * when it is loaded, and each polls (sched_yield) for 2^28 cycles, ~0.1 s, before it sleeps: on a
 * 2-core machine that took one core from the run's pool for the first 5-10 calls of a model
 * (MobileNetV2 at batch 16: 8.6-10 ms a call instead of 4.1-4.4, bench/RESULTS.md). With one
 * thread OpenBLAS never hands work to them, so they are not started again (a later call asking
 * for more threads starts them anew, as OpenBLAS does after a fork). */
SM_HIDDEN void openblas_set_num_threads(int num_threads) {
  pthread_once(&blas_once, blas_load);
  if (real_set_num_threads) real_set_num_threads(num_threads);
  if (num_threads == 1 && real_thread_shutdown) real_thread_shutdown();
}

/* ---- Snappy (TF's table blocks, type 1) ------------------------------------------------------ */
/* libsnappy is bound like OpenBLAS, at the first compressed block: TF's own index files are often
 * Snappy-compressed, but many are not (ours never are), and libsnappy is C++, so linking it would
 * make every program load libstdc++ at exec. Missing at run time (a declared dependency, so only
 * on a broken install), the forwarders answer SNAPPY_INVALID_INPUT and sm__lazy_snappy_missing()
 * lets the caller say why. */

#ifndef SM_SNAPPY_SONAME
#define SM_SNAPPY_SONAME "libsnappy.so.1"
#endif

typedef snappy_status (*sn_len_fn)(const char *, size_t, size_t *);
typedef snappy_status (*sn_valid_fn)(const char *, size_t);
typedef snappy_status (*sn_unc_fn)(const char *, size_t, char *, size_t *);

static pthread_once_t snappy_once = PTHREAD_ONCE_INIT;
static sn_len_fn real_sn_len;
static sn_valid_fn real_sn_valid;
static sn_unc_fn real_sn_unc;

static void snappy_load(void) {
  void *h = dlopen(SM_SNAPPY_SONAME, RTLD_LAZY | RTLD_LOCAL);
  SM_BIND(h, real_sn_len, "snappy_uncompressed_length");
  SM_BIND(h, real_sn_valid, "snappy_validate_compressed_buffer");
  SM_BIND(h, real_sn_unc, "snappy_uncompress");
  if (!real_sn_len || !real_sn_valid || !real_sn_unc) real_sn_len = NULL, real_sn_valid = NULL, real_sn_unc = NULL;
}

SM_HIDDEN int sm__lazy_snappy_missing(void) {
  pthread_once(&snappy_once, snappy_load);
  return real_sn_unc == NULL;
}

SM_HIDDEN snappy_status snappy_uncompressed_length(const char *compressed, size_t compressed_length,
                                                   size_t *result) {
  pthread_once(&snappy_once, snappy_load);
  return real_sn_len ? real_sn_len(compressed, compressed_length, result) : SNAPPY_INVALID_INPUT;
}

SM_HIDDEN snappy_status snappy_validate_compressed_buffer(const char *compressed, size_t compressed_length) {
  pthread_once(&snappy_once, snappy_load);
  return real_sn_valid ? real_sn_valid(compressed, compressed_length) : SNAPPY_INVALID_INPUT;
}

SM_HIDDEN snappy_status snappy_uncompress(const char *compressed, size_t compressed_length, char *uncompressed,
                                          size_t *uncompressed_length) {
  pthread_once(&snappy_once, snappy_load);
  return real_sn_unc ? real_sn_unc(compressed, compressed_length, uncompressed, uncompressed_length)
                     : SNAPPY_INVALID_INPUT;
}
