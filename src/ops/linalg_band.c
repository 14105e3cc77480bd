/* linalg_band.c - the linalg_band kernel family: tridiagonal and banded systems, as TF's
 * linalg/tridiagonal_solve_op.cc, tridiagonal_matmul_op.cc and banded_triangular_solve_op.cc:
 * TridiagonalSolve (tf.linalg.tridiagonal_solve, the compact [..., 3, M] diagonals: superdiagonal
 * first, its last element ignored, subdiagonal last, its first ignored; partial_pivoting,
 * perturb_singular), TridiagonalMatMul (tf.linalg.tridiagonal_matmul) and BandedTriangularSolve
 * (tf.linalg.banded_triangular_solve: lower / upper band storage, adjoint), over float, double,
 * complex64 and complex128, each computed in its own type as TF's Eigen code is.
 *
 * TridiagonalSolve follows TF's three routes: the Thomas algorithm without pivoting, LAPACK
 * dgtsv-style Gaussian elimination with row interchanges with partial_pivoting, and the xLAGTF /
 * xLAGTS route that perturbs tiny pivots with perturb_singular. As TF, a singular system is no
 * error: its solution is all NaN (TF logs a warning; complex: all 0, TF's quiet_NaN of
 * std::complex). Batch dimensions: TridiagonalSolve and
 * TridiagonalMatMul need equal ones (LinearAlgebraOp's messages); BandedTriangularSolve
 * broadcasts them (MatMulBCast) and refuses a zero on the first matrix's diagonal ("Input matrix
 * is not invertible.", TF checks only that one). Checked against TensorFlow by
 * tests/unit/test_ops_c3.c (tools/gen_c3_cases.py). */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/math_int.h"

typedef float complex cf;
typedef double complex cd;

static int is_la_dtype(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

static inline float conj_f(float x) { return x; }
static inline double conj_d(double x) { return x; }
static inline cf conj_cf(cf x) { return conjf(x); }
static inline cd conj_cd(cd x) { return conj(x); }
static inline float real_f(float x) { return x; }
static inline double real_d(double x) { return x; }
static inline float real_cf(cf x) { return crealf(x); }
static inline double real_cd(cd x) { return creal(x); }

/* ---- TridiagonalSolve ---------------------------------------------------------------------- */
/* One system: d = the [3, n] diagonals, b = [n, k] right-hand sides, x = [n, k] out, u = scratch
 * of 3 n elements, row = scratch of k. */
#define DEF_TRISOLVE(T, R, SFX, ABS, EPS, RMIN, RMAX, NANV)                                                      \
  static void fill_nan_##SFX(T *x, int64_t n) {                                                              \
    for (int64_t i = 0; i < n; i++) x[i] = NANV;                                                             \
  }                                                                                                          \
  /* LAPACK xLAGTS' pivot adjustment, as TF's MaybePerturbPivot */                                           \
  static void perturb_##SFX(R perturb, T *pivot, T *row, int64_t k) {                                        \
    const R one = 1, tiny = RMIN, small = one / RMAX;                                                        \
    const R safemin = small < tiny ? tiny : (one + EPS) * small;                                             \
    const R bignum = one / safemin;                                                                          \
    R ap = ABS(*pivot);                                                                                      \
    if (ap >= one) return;                                                                                   \
    perturb = fabs(perturb) > safemin ? (R)fabs(perturb) : safemin;                                          \
    perturb = (R)copysign(perturb, real_##SFX(*pivot));                                                      \
    int stop = 0;                                                                                            \
    R maxf = 0;                                                                                              \
    for (int64_t j = 0; j < k; j++)                                                                          \
      if (ABS(row[j]) > maxf || j == 0) maxf = ABS(row[j]);                                                  \
    while (ap < one && !stop) {                                                                              \
      if (ap < safemin) {                                                                                    \
        if (ap == 0 || maxf * safemin > ap) {                                                                \
          *pivot += perturb;                                                                                 \
          perturb *= 2;                                                                                      \
        } else {                                                                                             \
          *pivot *= bignum;                                                                                  \
          for (int64_t j = 0; j < k; j++) row[j] *= bignum;                                                  \
          stop = 1;                                                                                          \
        }                                                                                                    \
      } else if (maxf > ap * bignum) {                                                                       \
        *pivot += perturb;                                                                                   \
        perturb *= 2;                                                                                        \
      } else {                                                                                               \
        stop = 1;                                                                                            \
      }                                                                                                      \
      ap = ABS(*pivot);                                                                                      \
    }                                                                                                        \
  }                                                                                                          \
  static void trisolve_##SFX(const T *d, const T *b, T *x, int64_t n, int64_t k, int pivoting, int perturb, \
                             T *u, T *row) {                                                                 \
    const T *sup = d, *dia = d + n, *sub = d + 2 * n;                                                        \
    const T zero = 0, one = 1;                                                                               \
    if (n == 0) return;                                                                                      \
    if (pivoting && perturb) {                                                                               \
      if (n == 1) {                                                                                          \
        T den = dia[0];                                                                                      \
        memcpy(row, b, (size_t)k * sizeof(T));                                                               \
        perturb_##SFX(EPS * ABS(den), &den, row, k);                                                         \
        T inv = one / den;                                                                                   \
        for (int64_t j = 0; j < k; j++) x[j] = row[j] * inv;                                                 \
        return;                                                                                              \
      }                                                                                                      \
      /* u[3 i + c]: the diagonal, superdiagonal and second superdiagonal of U */                           \
      u[0] = dia[0], u[1] = sup[0];                                                                          \
      R maxu = ABS(u[0]) > ABS(u[1]) ? ABS(u[0]) : ABS(u[1]);                                                \
      R scale1 = ABS(u[0]) + ABS(u[1]);                                                                      \
      memcpy(x, b, (size_t)k * sizeof(T));                                                                   \
      for (int64_t i = 0; i < n - 1; i++) {                                                                  \
        T *xi = x + i * k, *xn = x + (i + 1) * k;                                                            \
        const T *bn = b + (i + 1) * k;                                                                       \
        u[3 * (i + 1)] = dia[i + 1];                                                                         \
        R scale2 = ABS(sub[i + 1]) + ABS(u[3 * (i + 1)]);                                                    \
        if (i < n - 2) scale2 += ABS(sup[i + 1]);                                                            \
        if (sub[i + 1] == zero) {                                                                            \
          scale1 = scale2;                                                                                   \
          u[3 * (i + 1) + 1] = sup[i + 1];                                                                   \
          u[3 * i + 2] = zero;                                                                               \
          memcpy(xn, bn, (size_t)k * sizeof(T));                                                             \
        } else {                                                                                             \
          R piv1 = u[3 * i] == zero ? 0 : ABS(u[3 * i]) / scale1;                                            \
          R piv2 = ABS(sub[i + 1]) / scale2;                                                                 \
          if (piv2 <= piv1) {                                                                                \
            scale1 = scale2;                                                                                 \
            T f = sub[i + 1] / u[3 * i];                                                                     \
            u[3 * (i + 1)] = dia[i + 1] - f * u[3 * i + 1];                                                  \
            u[3 * (i + 1) + 1] = sup[i + 1];                                                                 \
            u[3 * i + 2] = zero;                                                                             \
            for (int64_t j = 0; j < k; j++) xn[j] = bn[j] - f * xi[j];                                       \
          } else {                                                                                           \
            T f = u[3 * i] / sub[i + 1];                                                                     \
            u[3 * i] = sub[i + 1];                                                                           \
            u[3 * (i + 1)] = u[3 * i + 1] - f * dia[i + 1];                                                  \
            u[3 * i + 1] = dia[i + 1];                                                                       \
            if (i < n - 2) {                                                                                 \
              u[3 * i + 2] = sup[i + 1];                                                                     \
              u[3 * (i + 1) + 1] = -f * sup[i + 1];                                                          \
            }                                                                                                \
            for (int64_t j = 0; j < k; j++) xn[j] = xi[j] - f * bn[j];                                       \
            memcpy(xi, bn, (size_t)k * sizeof(T));                                                           \
          }                                                                                                  \
        }                                                                                                    \
        if (i < n - 2)                                                                                       \
          for (int c = 0; c < 3; c++)                                                                        \
            if (ABS(u[3 * i + c]) > maxu) maxu = ABS(u[3 * i + c]);                                          \
      }                                                                                                      \
      if (ABS(u[3 * (n - 1)]) > maxu) maxu = ABS(u[3 * (n - 1)]);                                            \
      R tol = EPS * maxu;                                                                                    \
      T den = u[3 * (n - 1)];                                                                                \
      memcpy(row, x + (n - 1) * k, (size_t)k * sizeof(T));                                                   \
      perturb_##SFX(tol, &den, row, k);                                                                      \
      T inv = one / den;                                                                                     \
      for (int64_t j = 0; j < k; j++) x[(n - 1) * k + j] = row[j] * inv;                                     \
      den = u[3 * (n - 2)];                                                                                  \
      for (int64_t j = 0; j < k; j++) row[j] = x[(n - 2) * k + j] - u[3 * (n - 2) + 1] * x[(n - 1) * k + j]; \
      perturb_##SFX((R)copysign(tol, real_##SFX(den)), &den, row, k);                                        \
      inv = one / den;                                                                                       \
      for (int64_t j = 0; j < k; j++) x[(n - 2) * k + j] = row[j] * inv;                                     \
      for (int64_t i = n - 3; i >= 0; i--) {                                                                 \
        for (int64_t j = 0; j < k; j++)                                                                      \
          row[j] = x[i * k + j] - u[3 * i + 1] * x[(i + 1) * k + j] - u[3 * i + 2] * x[(i + 2) * k + j];     \
        den = u[3 * i];                                                                                      \
        perturb_##SFX((R)copysign(tol, real_##SFX(den)), &den, row, k);                                      \
        inv = one / den;                                                                                     \
        for (int64_t j = 0; j < k; j++) x[i * k + j] = row[j] * inv;                                         \
      }                                                                                                      \
      return;                                                                                                \
    }                                                                                                        \
    if (n == 1) {                                                                                            \
      if (dia[0] == zero)                                                                                    \
        fill_nan_##SFX(x, k);                                                                                \
      else                                                                                                   \
        for (int64_t j = 0; j < k; j++) x[j] = b[j] / dia[0];                                                \
      return;                                                                                                \
    }                                                                                                        \
    if (pivoting) { /* dgtsv */                                                                              \
      u[0] = dia[0], u[1] = sup[0];                                                                          \
      memcpy(x, b, (size_t)k * sizeof(T));                                                                   \
      for (int64_t i = 0; i < n - 1; i++) {                                                                  \
        T *xi = x + i * k, *xn = x + (i + 1) * k;                                                            \
        const T *bn = b + (i + 1) * k;                                                                       \
        if (ABS(u[3 * i]) >= ABS(sub[i + 1])) {                                                              \
          if (u[3 * i] == zero) {                                                                            \
            fill_nan_##SFX(x, n * k);                                                                        \
            return;                                                                                          \
          }                                                                                                  \
          T f = sub[i + 1] / u[3 * i];                                                                       \
          u[3 * (i + 1)] = dia[i + 1] - f * u[3 * i + 1];                                                    \
          for (int64_t j = 0; j < k; j++) xn[j] = bn[j] - f * xi[j];                                         \
          if (i != n - 2) u[3 * (i + 1) + 1] = sup[i + 1], u[3 * i + 2] = 0;                                 \
        } else {                                                                                             \
          T f = u[3 * i] / sub[i + 1];                                                                       \
          u[3 * i] = sub[i + 1];                                                                             \
          u[3 * (i + 1)] = u[3 * i + 1] - f * dia[i + 1];                                                    \
          u[3 * i + 1] = dia[i + 1];                                                                         \
          for (int64_t j = 0; j < k; j++) xn[j] = xi[j] - f * bn[j];                                         \
          memcpy(xi, bn, (size_t)k * sizeof(T));                                                             \
          if (i != n - 2) u[3 * i + 2] = sup[i + 1], u[3 * (i + 1) + 1] = -f * sup[i + 1];                   \
        }                                                                                                    \
      }                                                                                                      \
      if (u[3 * (n - 1)] == zero) {                                                                          \
        fill_nan_##SFX(x, n * k);                                                                            \
        return;                                                                                              \
      }                                                                                                      \
      for (int64_t j = 0; j < k; j++) x[(n - 1) * k + j] /= u[3 * (n - 1)];                                  \
      for (int64_t j = 0; j < k; j++)                                                                        \
        x[(n - 2) * k + j] = (x[(n - 2) * k + j] - u[3 * (n - 2) + 1] * x[(n - 1) * k + j]) / u[3 * (n - 2)]; \
      for (int64_t i = n - 3; i >= 0; i--)                                                                   \
        for (int64_t j = 0; j < k; j++)                                                                      \
          x[i * k + j] =                                                                                     \
              (x[i * k + j] - u[3 * i + 1] * x[(i + 1) * k + j] - u[3 * i + 2] * x[(i + 2) * k + j]) / u[3 * i]; \
      return;                                                                                                \
    }                                                                                                        \
    /* Thomas */                                                                                             \
    if (dia[0] == zero) {                                                                                    \
      fill_nan_##SFX(x, n * k);                                                                              \
      return;                                                                                                \
    }                                                                                                        \
    u[0] = sup[0] / dia[0];                                                                                  \
    for (int64_t j = 0; j < k; j++) x[j] = b[j] / dia[0];                                                    \
    for (int64_t i = 1; i < n; i++) {                                                                        \
      T den = dia[i] - sub[i] * u[i - 1];                                                                    \
      if (den == zero) {                                                                                     \
        fill_nan_##SFX(x, n * k);                                                                            \
        return;                                                                                              \
      }                                                                                                      \
      u[i] = sup[i] / den;                                                                                   \
      for (int64_t j = 0; j < k; j++) x[i * k + j] = (b[i * k + j] - sub[i] * x[(i - 1) * k + j]) / den;     \
    }                                                                                                        \
    for (int64_t i = n - 2; i >= 0; i--)                                                                     \
      for (int64_t j = 0; j < k; j++) x[i * k + j] -= u[i] * x[(i + 1) * k + j];                             \
  }
/* TF fills a singular system's solution with numeric_limits<Scalar>::quiet_NaN(), which for
 * std::complex (not specialised) is 0. */
DEF_TRISOLVE(float, float, f, fabsf, FLT_EPSILON, FLT_MIN, FLT_MAX, NAN)
DEF_TRISOLVE(double, double, d, fabs, DBL_EPSILON, DBL_MIN, DBL_MAX, NAN)
DEF_TRISOLVE(cf, float, cf, cabsf, FLT_EPSILON, FLT_MIN, FLT_MAX, 0)
DEF_TRISOLVE(cd, double, cd, cabs, DBL_EPSILON, DBL_MIN, DBL_MAX, 0)

/* LinearAlgebraOp's checks: input 0 of rank >= 2, the others of its rank and batch dimensions.
 * *batch: the number of matrices. */
static sm_status *la_inputs(sm_kctx *ctx, int nin, int64_t *batch) {
  const sm_tensor *t0 = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(t0), dt = sm_tensor_dtype(t0);
  if (!is_la_dtype(dt)) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), dt);
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  for (int i = 1; i < nin; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    if (sm_tensor_dtype(t) != dt) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), sm_tensor_dtype(t));
    if (sm_tensor_rank(t) != r) return sm_status_new(SM_INVALID_ARGUMENT, "All input tensors must have the same rank.");
    for (int d = 0; d < r - 2; d++)
      if (sm_tensor_dims(t)[d] != sm_tensor_dims(t0)[d])
        return sm_status_new(SM_INVALID_ARGUMENT, "All input tensors must have the same outer dimensions.");
  }
  *batch = 1;
  for (int d = 0; d < r - 2; d++) *batch *= sm_tensor_dims(t0)[d];
  return NULL;
}

static sm_status *trisolve_prepare(const sm_node *node, void **state) {
  int piv = 1, pert = 0;
  sm_status *st = NULL;
  if (sm__node_attr(node, "partial_pivoting")) st = sm__node_attr_bool(node, "partial_pivoting", &piv);
  if (!st && sm__node_attr(node, "perturb_singular")) st = sm__node_attr_bool(node, "perturb_singular", &pert);
  if (st) return st;
  if (pert && !piv)
    return sm_status_new(SM_INVALID_ARGUMENT, "Setting perturb_singular requires also setting partial_pivoting.");
  *state = (void *)(intptr_t)(1 | piv << 1 | pert << 2);
  return NULL;
}

static sm_status *trisolve_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state, piv = code >> 1 & 1, pert = code >> 2 & 1;
  int64_t batch;
  sm_status *st = la_inputs(ctx, 2, &batch);
  if (st) return st;
  const sm_tensor *d = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int r = sm_tensor_rank(d), dt = sm_tensor_dtype(d);
  int64_t nd = sm_tensor_dims(d)[r - 2], n = sm_tensor_dims(d)[r - 1], nb = sm_tensor_dims(b)[r - 2],
          k = sm_tensor_dims(b)[r - 1];
  if (nd != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected diagonals to be provided as a matrix with 3 rows, got %lld rows.",
                         (long long)nd);
  if (n != nb)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Expected the same number of left-hand sides and right-hand sides, got %lld and %lld.",
                         (long long)n, (long long)nb);
  sm_tensor *x;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(b), &x))) return st;
  if (n == 0 || k == 0 || batch == 0) return NULL;
  size_t es = sm_dtype_size(dt);
  char *scratch = sm__kctx_scratch(ctx, (size_t)(3 * n + k) * es, &st);
  if (!scratch) return st;
  const char *dp = sm_tensor_data(d), *bp = sm_tensor_data(b);
  char *xp = sm_tensor_data(x);
  for (int64_t i = 0; i < batch; i++) {
    const void *di = dp + (size_t)(i * 3 * n) * es, *bi = bp + (size_t)(i * n * k) * es;
    void *xi = xp + (size_t)(i * n * k) * es, *u = scratch, *row = scratch + (size_t)(3 * n) * es;
    switch (dt) {
      case SM_FLOAT: trisolve_f(di, bi, xi, n, k, piv, pert, u, row); break;
      case SM_DOUBLE: trisolve_d(di, bi, xi, n, k, piv, pert, u, row); break;
      case SM_COMPLEX64: trisolve_cf(di, bi, xi, n, k, piv, pert, u, row); break;
      default: trisolve_cd(di, bi, xi, n, k, piv, pert, u, row); break;
    }
  }
  sm__kctx_scratch_free(ctx, scratch);
  return NULL;
}

/* ---- TridiagonalMatMul --------------------------------------------------------------------- */
#define DEF_TRIMM(T, SFX)                                                                          \
  static void trimm_##SFX(const T *sup, const T *dia, const T *sub, const T *b, T *y, int64_t m,  \
                          int64_t n) {                                                             \
    for (int64_t i = 0; i < m; i++)                                                                \
      for (int64_t j = 0; j < n; j++) y[i * n + j] = b[i * n + j] * dia[i];                        \
    for (int64_t i = 1; i < m; i++)                                                                \
      for (int64_t j = 0; j < n; j++) y[i * n + j] += b[(i - 1) * n + j] * sub[i];                 \
    for (int64_t i = 0; i + 1 < m; i++)                                                            \
      for (int64_t j = 0; j < n; j++) y[i * n + j] += b[(i + 1) * n + j] * sup[i];                 \
  }
DEF_TRIMM(float, f)
DEF_TRIMM(double, d)
DEF_TRIMM(cf, cf)
DEF_TRIMM(cd, cd)

static sm_status *trimm_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t batch;
  sm_status *st = la_inputs(ctx, 4, &batch);
  if (st) return st;
  const sm_tensor *b = sm__kctx_input(ctx, 3);
  int r = sm_tensor_rank(b), dt = sm_tensor_dtype(b);
  int64_t m = sm_tensor_dims(b)[r - 2], n = sm_tensor_dims(b)[r - 1];
  static const char *what[3] = {"superdiagonal", "main diagonal", "subdiagonal"};
  for (int i = 0; i < 3; i++) {
    const int64_t *dd = sm_tensor_dims(sm__kctx_input(ctx, i));
    if (dd[r - 2] != 1 || dd[r - 1] != m) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid %s shape.", what[i]);
  }
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(b), &y))) return st;
  size_t es = sm_dtype_size(dt);
  const char *p[4];
  for (int i = 0; i < 4; i++) p[i] = sm_tensor_data(sm__kctx_input(ctx, i));
  char *yp = sm_tensor_data(y);
  for (int64_t i = 0; i < batch && m > 0; i++) {
    const void *s0 = p[0] + (size_t)(i * m) * es, *s1 = p[1] + (size_t)(i * m) * es, *s2 = p[2] + (size_t)(i * m) * es,
               *bi = p[3] + (size_t)(i * m * n) * es;
    void *yi = yp + (size_t)(i * m * n) * es;
    switch (dt) {
      case SM_FLOAT: trimm_f(s0, s1, s2, bi, yi, m, n); break;
      case SM_DOUBLE: trimm_d(s0, s1, s2, bi, yi, m, n); break;
      case SM_COMPLEX64: trimm_cf(s0, s1, s2, bi, yi, m, n); break;
      default: trimm_cd(s0, s1, s2, bi, yi, m, n); break;
    }
  }
  return NULL;
}

/* ---- BandedTriangularSolve ----------------------------------------------------------------- */
/* a: [nb, m] band storage (lower: A[r][c] = a[r - c][r]; upper: A[r][c] = a[nb - 1 - (c - r)][r]),
 * b, x: [m, k]. */
#define DEF_BANDSOLVE(T, SFX)                                                                                 \
  static void bandsolve_##SFX(const T *a, const T *b, T *x, int64_t nb, int64_t m, int64_t k, int lower,     \
                              int adj) {                                                                      \
    if (lower && !adj) {                                                                                      \
      for (int64_t i = 0; i < m; i++)                                                                         \
        for (int64_t j = 0; j < k; j++) {                                                                     \
          T s = b[i * k + j];                                                                                 \
          int64_t lo = i - (nb - 1) > 0 ? i - (nb - 1) : 0;                                                   \
          for (int64_t c = lo; c < i; c++) s -= a[(i - c) * m + i] * x[c * k + j];                           \
          x[i * k + j] = s / a[i];                                                                            \
        }                                                                                                     \
    } else if (lower) {                                                                                       \
      for (int64_t i = m - 1; i >= 0; i--)                                                                    \
        for (int64_t j = 0; j < k; j++) {                                                                     \
          T s = b[i * k + j];                                                                                 \
          for (int64_t c = i + 1; c < m && c < i + nb; c++) s -= conj_##SFX(a[(c - i) * m + c]) * x[c * k + j]; \
          x[i * k + j] = s / conj_##SFX(a[i]);                                                                \
        }                                                                                                     \
    } else if (!adj) {                                                                                        \
      for (int64_t i = m - 1; i >= 0; i--)                                                                    \
        for (int64_t j = 0; j < k; j++) {                                                                     \
          T s = b[i * k + j];                                                                                 \
          for (int64_t c = i + 1; c < m && c < i + nb; c++) s -= a[(nb - 1 - (c - i)) * m + i] * x[c * k + j]; \
          x[i * k + j] = s / a[(nb - 1) * m + i];                                                             \
        }                                                                                                     \
    } else {                                                                                                  \
      for (int64_t i = 0; i < m; i++)                                                                         \
        for (int64_t j = 0; j < k; j++) {                                                                     \
          T s = b[i * k + j];                                                                                 \
          int64_t lo = i - (nb - 1) > 0 ? i - (nb - 1) : 0;                                                   \
          for (int64_t c = lo; c < i; c++) s -= conj_##SFX(a[(nb - 1 - (i - c)) * m + c]) * x[c * k + j];   \
          x[i * k + j] = s / conj_##SFX(a[(nb - 1) * m + i]);                                                 \
        }                                                                                                     \
    }                                                                                                         \
  }
DEF_BANDSOLVE(float, f)
DEF_BANDSOLVE(double, d)
DEF_BANDSOLVE(cf, cf)
DEF_BANDSOLVE(cd, cd)

static sm_status *bandsolve_prepare(const sm_node *node, void **state) {
  int lower = 1, adj = 0;
  sm_status *st = NULL;
  if (sm__node_attr(node, "lower")) st = sm__node_attr_bool(node, "lower", &lower);
  if (!st && sm__node_attr(node, "adjoint")) st = sm__node_attr_bool(node, "adjoint", &adj);
  if (st) return st;
  *state = (void *)(intptr_t)(1 | lower << 1 | adj << 2);
  return NULL;
}

static char *tensor_desc(const sm_tensor *t, char *buf, size_t n) {
  char s[200];
  const char *dn = sm_dtype_name(sm_tensor_dtype(t));
  snprintf(buf, n, "Tensor<type: %s shape: %s values: >", dn ? dn : "?",
           sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), s, sizeof s));
  return buf;
}

static sm_status *bandsolve_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state, lower = code >> 1 & 1, adj = code >> 2 & 1;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int ra = sm_tensor_rank(a), rb = sm_tensor_rank(b), dt = sm_tensor_dtype(a);
  if (!is_la_dtype(dt)) return sm__math_bad_dtype("BandedTriangularSolve", dt);
  if (sm_tensor_dtype(b) != dt) return sm__math_bad_dtype("BandedTriangularSolve", sm_tensor_dtype(b));
  char s1[256], s2[256];
  if (ra < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", ra);
  if (rb < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[1] ndims must be >= 2: %d", rb);
  if (sm_tensor_num_elements(a) == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "In[0] must not be an empty tensor: %s", tensor_desc(a, s1, sizeof s1));
  if (sm_tensor_num_elements(b) == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "In[1] must not be an empty tensor: %s", tensor_desc(b, s1, sizeof s1));
  /* batch dimensions broadcast as MatMulBCast */
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  int orank = (ra > rb ? ra : rb) - 2;
  int64_t od[SM_MAX_RANK + 2];
  for (int i = 0; i < orank; i++) {
    int ia = i - (orank - (ra - 2)), ib = i - (orank - (rb - 2));
    int64_t x = ia >= 0 ? ad[ia] : 1, y = ib >= 0 ? bd[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                           sm_shape_str(ra, ad, s1, sizeof s1), sm_shape_str(rb, bd, s2, sizeof s2));
    od[i] = x == 1 ? y : x;
  }
  int64_t nb = ad[ra - 2], m = ad[ra - 1], m2 = bd[rb - 2], k = bd[rb - 1];
  if (m != m2)
    return sm_status_new(SM_INVALID_ARGUMENT, "In[0] mismatch In[1] shape: %lld vs. %lld: %s %s %d %d", (long long)m,
                         (long long)m2, sm_shape_str(ra, ad, s1, sizeof s1), sm_shape_str(rb, bd, s2, sizeof s2), lower,
                         adj);
  if (orank + 2 > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "BandedTriangularSolve: rank too large");
  od[orank] = m, od[orank + 1] = k;
  sm_tensor *x;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, orank + 2, od, &x);
  if (st || sm_tensor_num_elements(x) == 0) return st;
  /* only the first matrix's diagonal is checked, as TF */
  const char *ap = sm_tensor_data(a), *bp = sm_tensor_data(b);
  size_t es = sm_dtype_size(dt);
  for (int64_t c = 0; c < m; c++) {
    int64_t at = (lower ? 0 : nb - 1) * m + c;
    double v;
    switch (dt) {
      case SM_FLOAT: v = fabsf(((const float *)ap)[at]); break;
      case SM_DOUBLE: v = fabs(((const double *)ap)[at]); break;
      case SM_COMPLEX64: v = cabsf(((const cf *)ap)[at]); break;
      default: v = cabs(((const cd *)ap)[at]); break;
    }
    if (!(v > 0)) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix is not invertible.");
  }
  int64_t batch = sm_tensor_num_elements(x) / (m * k);
  char *xp = sm_tensor_data(x);
  for (int64_t i = 0; i < batch; i++) {
    /* the batch index of each input, broadcast */
    int64_t ia = 0, ib = 0, rem = i, sa = 1, sb = 1;
    for (int d = orank - 1; d >= 0; d--) {
      int64_t idx = rem % od[d];
      rem /= od[d];
      int da = d - (orank - (ra - 2)), db = d - (orank - (rb - 2));
      if (da >= 0) {
        if (ad[da] != 1) ia += idx * sa;
        sa *= ad[da];
      }
      if (db >= 0) {
        if (bd[db] != 1) ib += idx * sb;
        sb *= bd[db];
      }
    }
    const void *ai = ap + (size_t)(ia * nb * m) * es, *bi = bp + (size_t)(ib * m * k) * es;
    void *xi = xp + (size_t)(i * m * k) * es;
    switch (dt) {
      case SM_FLOAT: bandsolve_f(ai, bi, xi, nb, m, k, lower, adj); break;
      case SM_DOUBLE: bandsolve_d(ai, bi, xi, nb, m, k, lower, adj); break;
      case SM_COMPLEX64: bandsolve_cf(ai, bi, xi, nb, m, k, lower, adj); break;
      default: bandsolve_cd(ai, bi, xi, nb, m, k, lower, adj); break;
    }
  }
  return NULL;
}

const sm_kernel sm_kernels_linalg_band[] = {
    {"TridiagonalSolve", trisolve_prepare, trisolve_compute, NULL, 0},
    {"TridiagonalMatMul", NULL, trimm_compute, NULL, 0},
    {"BandedTriangularSolve", bandsolve_prepare, bandsolve_compute, NULL, 0},
    {0},
};
