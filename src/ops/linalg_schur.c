/* linalg_schur.c - the linalg_schur kernel family: what TF computes through a Schur decomposition
 * of a general square matrix: MatrixSquareRoot (tf.linalg.sqrtm; float, double, complex64,
 * complex128), MatrixLogarithm (tf.linalg.logm; complex64, complex128) and Eig (tf.linalg.eig /
 * eigvals; float -> complex64, double -> complex128, complex -> the same), over batches.
 *
 * The decompositions follow the algorithms of Eigen, which TF calls, step for step, so that the
 * results come out as TF's do where they are not unique: Householder reduction to Hessenberg
 * form, then for a real matrix Eigen's RealSchur (Francis double-shift QR: its deflation test,
 * exceptional shifts at iterations 16 and 32, 2 x 2 blocks with real eigenvalues split by a
 * rotation; 40 iterations per row) and for a complex one ComplexSchur (single-shift QR by Givens
 * rotations, the shift the eigenvalue of the trailing 2 x 2 block nearer its last entry, EISPACK's
 * exceptional shifts at iterations 10 and 20; 30 per row). The real path (linalg_schur_real.h) runs
 * in float for float input, as TF's does (which eigenvalue converges first, so their order, and
 * the signs of the vectors follow the iteration's rounding), in double for double; likewise Eig's
 * complex path (linalg_schur_cplx.h) in float complex for complex64 (its deflation test's epsilon
 * decides when the iteration stops, so the eigenvectors' phases). sqrtm and logm of complex input
 * run in complex double, rounded to the dtype at the end.
 *
 * Eig: a real matrix's eigenvalues in the order of its real Schur form's blocks, a complex pair as
 * (re + i im, re - i im), eigenvectors by EigenSolver's back-substitution, each normalized; a
 * complex matrix's through ComplexEigenSolver: unit triangular back-substitution, normalized, then
 * sorted by increasing |lambda| (selection, first on ties). What is not exact: Eigen's vectorized
 * sums round differently in the last bit, and where the QR iteration is that sensitive (a block
 * nearly deflated when exact shifts meet it) the order of a real matrix's eigenvalues can differ
 * from TF's (1 of 300 random matrices, session 19 - c3), and eigenvectors can differ from TF's
 * by a unit factor: a real matrix's complex pair (its 2 x 2 block's orientation is set by tiny
 * subdiagonals in the last sweeps) and some complex64 ones; of 300 random matrices, the vectors
 * of all 75 complex128, 62 of 75 complex64 and a third of the real ones equal TF's outright. A non-finite eigenvalue or no
 * convergence is TF's "Eigen decomposition was not successful. The input might not be valid."
 * MatrixSquareRoot: real, Eigen's quasi-triangular square root (a negative real eigenvalue gives
 * NaN everywhere, as TF; 2 x 2 blocks by the closed form of the principal root); complex, the
 * triangular recurrence. MatrixLogarithm: the principal logarithm of the triangular factor by
 * inverse scaling and squaring (square roots until ||T - I||_1 <= 0.25, a degree-8 Gauss-Legendre
 * Pade approximant, the diagonal set to log t_ii), not Eigen's Schur-Parlett blocking: the same
 * function, equal to rounding. Checked against TensorFlow by tests/unit/test_ops_c3.c. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <tgmath.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef double complex cd;

static cd mkc(double re, double im) {
  cd z;
  double *p = (double *)&z;
  p[0] = re, p[1] = im;
  return z;
}
static double abs2c(cd z) { return creal(z) * creal(z) + cimag(z) * cimag(z); }
static void normalize_c(cd *v, int64_t n, int64_t stride) {
  double z = 0;
  for (int64_t i = 0; i < n; i++) z += abs2c(v[i * stride]);
  if (z > 0) {
    double r = sqrt(z);
    for (int64_t i = 0; i < n; i++) v[i * stride] /= r;
  }
}

/* ---- Householder Hessenberg reduction (Eigen's HessenbergDecomposition) ------------------- */
/* In place: a (n x n, row-major) becomes H; q (may be NULL) gets Q with A = Q H Q^*. w: n scratch. */
#define DEF_HESS(T, SFX, CONJ, ABS2, RE, IM, RT, RMIN)                                                            \
  static void hessenberg_##SFX(T *a, T *q, int64_t n, T *tau, T *w) {                                   \
    for (int64_t i = 0; i + 1 < n; i++) {                                                                \
      int64_t r = n - i - 1;                                                                             \
      T c0 = a[(i + 1) * n + i], h;                                                                      \
      RT tail = 0, beta;                                                                                 \
      for (int64_t k = i + 2; k < n; k++) tail += ABS2(a[k * n + i]);                                    \
      if (tail <= RMIN && IM(c0) * IM(c0) <= RMIN) {                                                     \
        h = 0, beta = RE(c0);                                                                            \
        for (int64_t k = i + 2; k < n; k++) a[k * n + i] = 0;                                            \
      } else {                                                                                           \
        beta = sqrt(ABS2(c0) + tail);                                                                    \
        if (RE(c0) >= 0) beta = -beta;                                                                   \
        for (int64_t k = i + 2; k < n; k++) a[k * n + i] = a[k * n + i] / (c0 - beta);                   \
        h = CONJ((beta - c0) / beta);                                                                    \
      }                                                                                                  \
      a[(i + 1) * n + i] = beta;                                                                         \
      tau[i] = h;                                                                                        \
      /* A = H A on rows i+1.., columns i+1.. (v = [1, a[i+2.., i]]) */                                 \
      if (r == 1) {                                                                                      \
        a[(i + 1) * n + i + 1] *= 1 - h;                                                                 \
      } else if (h != 0) {                                                                               \
        for (int64_t j = i + 1; j < n; j++) {                                                            \
          T t = a[(i + 1) * n + j];                                                                      \
          for (int64_t k = i + 2; k < n; k++) t += CONJ(a[k * n + i]) * a[k * n + j];                    \
          w[j] = t;                                                                                      \
        }                                                                                                \
        for (int64_t j = i + 1; j < n; j++) a[(i + 1) * n + j] -= h * w[j];                              \
        for (int64_t k = i + 2; k < n; k++)                                                              \
          for (int64_t j = i + 1; j < n; j++) a[k * n + j] -= h * a[k * n + i] * w[j];                   \
      }                                                                                                  \
      /* A = A H^* on all rows, columns i+1.. */                                                        \
      T hc = CONJ(h);                                                                                    \
      if (r == 1) {                                                                                      \
        for (int64_t k = 0; k < n; k++) a[k * n + i + 1] *= 1 - hc;                                      \
      } else if (hc != 0) {                                                                              \
        for (int64_t k = 0; k < n; k++) {                                                                \
          T t = a[k * n + i + 1];                                                                        \
          for (int64_t j = i + 2; j < n; j++) t += a[k * n + j] * a[j * n + i];                          \
          w[k] = t;                                                                                      \
        }                                                                                                \
        for (int64_t k = 0; k < n; k++) {                                                                \
          a[k * n + i + 1] -= hc * w[k];                                                                 \
          for (int64_t j = i + 2; j < n; j++) a[k * n + j] -= hc * w[k] * CONJ(a[j * n + i]);            \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
    if (q) { /* Q = H_0^* H_1^* ... applied to I from the left, last first */                          \
      for (int64_t i = 0; i < n * n; i++) q[i] = (i / n == i % n);                                       \
      for (int64_t k = n - 2; k >= 0; k--) {                                                             \
        int64_t c = k + 1; /* the corner's first row/column */                                         \
        T hk = CONJ(tau[k]);                                                                             \
        if (n - c == 1) {                                                                                \
          q[c * n + c] *= 1 - hk;                                                                        \
        } else if (hk != 0) {                                                                            \
          for (int64_t j = c; j < n; j++) {                                                              \
            T t = q[c * n + j];                                                                          \
            for (int64_t r2 = c + 1; r2 < n; r2++) t += CONJ(a[r2 * n + k]) * q[r2 * n + j];             \
            w[j] = t;                                                                                    \
          }                                                                                              \
          for (int64_t j = c; j < n; j++) q[c * n + j] -= hk * w[j];                                     \
          for (int64_t r2 = c + 1; r2 < n; r2++)                                                         \
            for (int64_t j = c; j < n; j++) q[r2 * n + j] -= hk * a[r2 * n + k] * w[j];                  \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
    for (int64_t i = 0; i < n; i++) /* H: zero below the subdiagonal */                                \
      for (int64_t j = 0; j + 1 < i; j++) a[i * n + j] = 0;                                              \
  }
#define ID_(x) (x)
#define SQ_(x) ((x) * (x))
#define ZERO_(x) 0
DEF_HESS(double, r_d, ID_, SQ_, ID_, ZERO_, double, DBL_MIN)
DEF_HESS(float, r_f, ID_, SQ_, ID_, ZERO_, float, FLT_MIN)
#define ABS2G_(z) (creal(z) * creal(z) + cimag(z) * cimag(z))
DEF_HESS(cd, c_d, conj, ABS2G_, creal, cimag, double, DBL_MIN)
DEF_HESS(float complex, c_f, conj, ABS2G_, creal, cimag, float, FLT_MIN)

/* ---- rotations (Eigen's JacobiRotation) ------------------------------------------------------ */
static cd get_c(const void *p, int dt, int64_t i) {
  switch (dt) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_COMPLEX64: return mkc(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
    default: return mkc(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
  }
}
static void put_c(void *p, int dt, int64_t i, cd v) {
  switch (dt) {
    case SM_FLOAT: ((float *)p)[i] = (float)creal(v); break;
    case SM_DOUBLE: ((double *)p)[i] = creal(v); break;
    case SM_COMPLEX64: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
    default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
  }
}

/* ---- the real path, in float and in double ------------------------------------------------ */
#define RT float
#define CT float complex
#define RN(x) x##_f
#define R_EPS FLT_EPSILON
#define R_MIN FLT_MIN
#include "ops/linalg_schur_real.h"
#undef RT
#undef CT
#undef RN
#undef R_EPS
#undef R_MIN
#define RT double
#define CT double complex
#define RN(x) x##_d
#define R_EPS DBL_EPSILON
#define R_MIN DBL_MIN
#include "ops/linalg_schur_real.h"
#undef RT
#undef CT
#undef RN
#undef R_EPS
#undef R_MIN

/* ---- the complex path, in float complex and in double complex ---------------------------- */
#define RT float
#define CT float complex
#define CN(x) x##_f
#define R_EPS FLT_EPSILON
#define R_MIN FLT_MIN
#include "ops/linalg_schur_cplx.h"
#undef RT
#undef CT
#undef CN
#undef R_EPS
#undef R_MIN
#define RT double
#define CT double complex
#define CN(x) x##_d
#define R_EPS DBL_EPSILON
#define R_MIN DBL_MIN
#include "ops/linalg_schur_cplx.h"
#undef RT
#undef CT
#undef CN
#undef R_EPS
#undef R_MIN

/* ---- square roots ------------------------------------------------------------------------- */
/* The principal square root of upper triangular t into s (Eigen's matrix_sqrt_triangular). */
static void sqrt_tri(const cd *t, cd *s, int64_t n) {
  memset(s, 0, (size_t)(n * n) * sizeof *s);
  for (int64_t i = 0; i < n; i++) s[i * n + i] = csqrt(t[i * n + i]);
  for (int64_t j = 1; j < n; j++)
    for (int64_t i = j - 1; i >= 0; i--) {
      cd tmp = 0;
      for (int64_t k = i + 1; k < j; k++) tmp += s[i * n + k] * s[k * n + j];
      s[i * n + j] = (t[i * n + j] - tmp) / (s[i * n + i] + s[j * n + j]);
    }
}

/* y = u m u^* (all n x n complex); w: n x n scratch. */
static void similarity_c(const cd *u, const cd *m, cd *y, int64_t n, cd *w) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      cd s = 0;
      for (int64_t k = 0; k < n; k++) s += m[i * n + k] * conj(u[j * n + k]);
      w[i * n + j] = s;
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      cd s = 0;
      for (int64_t k = 0; k < n; k++) s += u[i * n + k] * w[k * n + j];
      y[i * n + j] = s;
    }
}

/* ---- logarithm ---------------------------------------------------------------------------- */
/* The principal logarithm of upper triangular t (destroyed) into l; w: 2 n n scratch. */
static void log_tri(cd *t, cd *l, int64_t n, cd *w) {
  static const double X8[8] = {0.019855071751231856, 0.10166676129318664, 0.2372337950418355, 0.4082826787521751,
                               0.5917173212478249,   0.7627662049581645,  0.8983332387068134, 0.9801449282487681};
  static const double W8[8] = {0.05061426814518813, 0.11119051722668724, 0.15685332293894363, 0.18134189168918100,
                               0.18134189168918100, 0.15685332293894363, 0.11119051722668724, 0.05061426814518813};
  cd *r = w, *y = w + n * n;
  int sq = 0;
  for (; sq < 100; sq++) {
    double nrm = 0; /* ||T - I||_1 */
    for (int64_t j = 0; j < n; j++) {
      double c = 0;
      for (int64_t i = 0; i <= j; i++) c += cabs(t[i * n + j] - (i == j));
      nrm = c > nrm ? c : nrm;
    }
    if (!(nrm > 0.25)) break;
    sqrt_tri(t, r, n);
    memcpy(t, r, (size_t)(n * n) * sizeof *t);
  }
  for (int64_t i = 0; i < n; i++) t[i * n + i] -= 1; /* X = T - I */
  memset(l, 0, (size_t)(n * n) * sizeof *l);
  for (int q = 0; q < 8; q++) {
    /* (I + x_q X) Y = X, upper triangular: column by column, bottom up */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j; i >= 0; i--) {
        cd s = t[i * n + j];
        for (int64_t k = i + 1; k <= j; k++) s -= X8[q] * t[i * n + k] * y[k * n + j];
        y[i * n + j] = s / (1 + X8[q] * t[i * n + i]);
      }
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i <= j; i++) l[i * n + j] += W8[q] * y[i * n + j];
  }
  double f = ldexp(1.0, sq);
  for (int64_t i = 0; i < n * n; i++) l[i] *= f;
}

/* ---- kernels ------------------------------------------------------------------------------- */
enum { K_SQRTM, K_LOGM, K_EIG };

static sm_status *schur_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int kind = !strcmp(op, "MatrixSquareRoot") ? K_SQRTM : !strcmp(op, "MatrixLogarithm") ? K_LOGM : K_EIG, cv = 1;
  if (kind == K_EIG && sm__node_attr(node, "compute_v")) {
    sm_status *st = sm__node_attr_bool(node, "compute_v", &cv);
    if (st) return st;
  }
  *state = (void *)(intptr_t)(1 + kind + 4 * cv);
  return NULL;
}

static sm_status *schur_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, kind = code & 3, cv = code >> 2 & 1;
  const char *op = sm__node_op(sm__kctx_node(ctx));
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x), cplx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
  if (!(cplx || ((dt == SM_FLOAT || dt == SM_DOUBLE) && kind != K_LOGM))) return sm__math_bad_dtype(op, dt);
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  const int64_t *d = sm_tensor_dims(x);
  int64_t n = d[r - 1];
  if (d[r - 2] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix must be square.");
  int64_t batch = n ? sm_tensor_num_elements(x) / (n * n) : 1;
  for (int i = 0; !n && i < r - 2; i++) batch *= d[i];
  sm_tensor *y = NULL, *v = NULL;
  sm_status *st;
  int odt = kind != K_EIG ? dt : (dt == SM_FLOAT || dt == SM_COMPLEX64) ? SM_COMPLEX64 : SM_COMPLEX128;
  if (kind == K_EIG) {
    if ((st = sm__kctx_alloc_output(ctx, 0, odt, r - 1, d, &y))) return st;
    if (cv)
      st = sm__kctx_alloc_output(ctx, 1, odt, r, d, &v);
    else
      st = sm__kctx_alloc_output(ctx, 1, odt, 0, NULL, &v); /* TF: a scalar it leaves unset */
  } else {
    st = sm__kctx_alloc_output(ctx, 0, odt, r, d, &y);
  }
  if (st || n == 0 || batch == 0) return st;
  size_t nn = (size_t)(n * n);
  /* scratch: 5 n n complex + 4 n complex (real paths use the same bytes as doubles) */
  cd *m = sm__kctx_scratch(ctx, (5 * nn + 4 * (size_t)n) * sizeof(cd), &st);
  if (!m) return st;
  cd *u = m + nn, *s = u + nn, *x2 = s + nn, *w = x2 + nn, *ev = w + nn + 2 * (size_t)n;
  const void *xp = sm_tensor_data(x);
  void *yp = sm_tensor_data(y), *vp = kind == K_EIG && cv ? sm_tensor_data(v) : NULL;
  for (int64_t b = 0; b < batch && !st; b++) {
    int64_t off = b * (int64_t)nn;
    if (!cplx && kind != K_LOGM) {
      int fail = dt == SM_FLOAT ? real_path_f(xp, off, n, kind == K_SQRTM, cv, m, ev, x2, yp, vp, b)
                                : real_path_d(xp, off, n, kind == K_SQRTM, cv, m, ev, x2, yp, vp, b);
      if (fail)
        st = sm_status_new(SM_INVALID_ARGUMENT, "Eigen decomposition was not successful. The input might not be valid.");
      continue;
    }
    if (kind == K_EIG) {
      int fail = dt == SM_COMPLEX64 ? eig_path_f(xp, dt, off, n, cv, m, yp, vp, odt, b)
                                    : eig_path_d(xp, dt, off, n, cv, m, yp, vp, odt, b);
      if (fail)
        st = sm_status_new(SM_INVALID_ARGUMENT, "Eigen decomposition was not successful. The input might not be valid.");
      continue;
    }
    for (size_t i = 0; i < nn; i++) m[i] = get_c(xp, dt, off + (int64_t)i);
    if (n == 1) {
      put_c(yp, odt, off, kind == K_SQRTM ? csqrt(m[0]) : clog(m[0]));
      continue;
    }
    hessenberg_c_d(m, u, n, w, w + n);
    complex_schur_d(m, u, n);
    if (kind == K_SQRTM) {
      sqrt_tri(m, s, n);
    } else {
      cd *dg = ev;
      for (int64_t i = 0; i < n; i++) dg[i] = clog(m[i * n + i]);
      log_tri(m, s, n, x2); /* x2 and w: 2 n n */
      for (int64_t i = 0; i < n; i++) s[i * n + i] = dg[i];
    }
    similarity_c(u, s, m, n, x2);
    for (size_t i = 0; i < nn; i++) put_c(yp, odt, off + (int64_t)i, m[i]);
  }
  sm__kctx_scratch_free(ctx, m);
  return st;
}

const sm_kernel sm_kernels_linalg_schur[] = {
    {"MatrixSquareRoot", schur_prepare, schur_compute, NULL, 0},
    {"MatrixLogarithm", schur_prepare, schur_compute, NULL, 0},
    {"Eig", schur_prepare, schur_compute, NULL, 0},
    {0},
};
