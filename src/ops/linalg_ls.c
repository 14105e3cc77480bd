/* linalg_ls.c - MatrixSolveLs (tf.linalg.lstsq): least-squares solutions of batches of matrix
 * [..., M, N] with right-hand sides [..., M, K], float / double / complex64 / complex128.
 * As TF's kernel (matrix_solve_ls_op_impl.h): fast=true solves the regularized normal equations by
 * Cholesky, (A^H A + l2 I) X = A^H B when M >= N, else X = A^H (A A^H + l2 I)^-1 B, and fails with
 * TF's message when the Gramian is not positive definite; fast=false gives the minimum-norm
 * least-squares solution by a complete orthogonal decomposition (column-pivoted Householder QR, rank
 * from Eigen's default threshold epsilon * min(M, N) * |R00|, then a QR of [R11 R12]^H), the
 * l2_regularizer unused as in TF. Arithmetic in complex double. Checked against TensorFlow by
 * tests/unit/test_ops_e6.c (tools/gen_e6_cases.py). */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

typedef double complex zd;

static zd mkz(double re, double im) { /* re + i im without arithmetic on infinities */
  zd z;
  double *p = (double *)&z;
  p[0] = re, p[1] = im;
  return z;
}

static zd get_z(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_FLOAT: return ((const float *)p)[i];
  case SM_DOUBLE: return ((const double *)p)[i];
  case SM_COMPLEX64: return mkz(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
  default: return mkz(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
  }
}

static void put_z(sm_tensor *t, int64_t i, zd v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_FLOAT: ((float *)p)[i] = (float)creal(v); break;
  case SM_DOUBLE: ((double *)p)[i] = creal(v); break;
  case SM_COMPLEX64: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
  default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
  }
}

/* In-place Cholesky of the n x n Hermitian g (lower triangle used); 0 when not positive definite. */
static int llt(zd *g, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    double d = creal(g[j * n + j]);
    for (int64_t k = 0; k < j; k++) d -= creal(g[j * n + k] * conj(g[j * n + k]));
    if (!(d > 0)) return 0;
    double l = sqrt(d);
    g[j * n + j] = l;
    for (int64_t i = j + 1; i < n; i++) {
      zd v = g[i * n + j];
      for (int64_t k = 0; k < j; k++) v -= g[i * n + k] * conj(g[j * n + k]);
      g[i * n + j] = v / l;
    }
  }
  return 1;
}

/* Solves L L^H X = B in place (B n x k). */
static void llt_solve(const zd *l, int64_t n, zd *b, int64_t k) {
  for (int64_t c = 0; c < k; c++) {
    for (int64_t i = 0; i < n; i++) {
      zd v = b[i * k + c];
      for (int64_t j = 0; j < i; j++) v -= l[i * n + j] * b[j * k + c];
      b[i * k + c] = v / l[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
      zd v = b[i * k + c];
      for (int64_t j = i + 1; j < n; j++) v -= conj(l[j * n + i]) * b[j * k + c];
      b[i * k + c] = v / l[i * n + i];
    }
  }
}

/* Householder QR of the m x n row-major a in place (R above the diagonal, reflectors below, LAPACK's
 * zgeqrf convention: H = I - tau v v^H, H^H x = beta e1), with column pivoting when perm. */
static void qr(zd *a, int64_t m, int64_t n, zd *tau, int64_t *perm) {
  int64_t p = m < n ? m : n;
  if (perm)
    for (int64_t j = 0; j < n; j++) perm[j] = j;
  for (int64_t k = 0; k < p; k++) {
    if (perm) {
      int64_t best = k;
      double bn = -1;
      for (int64_t j = k; j < n; j++) {
        double s = 0;
        for (int64_t i = k; i < m; i++) s += creal(a[i * n + j] * conj(a[i * n + j]));
        if (s > bn) bn = s, best = j;
      }
      if (best != k) {
        for (int64_t i = 0; i < m; i++) {
          zd t = a[i * n + k];
          a[i * n + k] = a[i * n + best], a[i * n + best] = t;
        }
        int64_t t = perm[k];
        perm[k] = perm[best], perm[best] = t;
      }
    }
    zd alpha = a[k * n + k];
    double xn = 0;
    for (int64_t i = k + 1; i < m; i++) xn += creal(a[i * n + k] * conj(a[i * n + k]));
    if (xn == 0 && cimag(alpha) == 0) {
      tau[k] = 0;
      continue;
    }
    double beta = -copysign(sqrt(creal(alpha * conj(alpha)) + xn), creal(alpha));
    tau[k] = (beta - alpha) / beta;
    zd s = 1.0 / (alpha - beta);
    for (int64_t i = k + 1; i < m; i++) a[i * n + k] *= s;
    a[k * n + k] = beta;
    for (int64_t j = k + 1; j < n; j++) { /* column j -= conj(tau) v (v^H column j) */
      zd w = a[k * n + j];
      for (int64_t i = k + 1; i < m; i++) w += conj(a[i * n + k]) * a[i * n + j];
      w *= conj(tau[k]);
      a[k * n + j] -= w;
      for (int64_t i = k + 1; i < m; i++) a[i * n + j] -= w * a[i * n + k];
    }
  }
}

/* The minimum-norm least-squares X (n x k) of A X = B: a is m x n, b m x k (both overwritten);
 * w scratch of n * n + 2 * n + n (zd) and perm n. */
static void cod_solve(zd *a, int64_t m, int64_t n, zd *b, int64_t k, zd *x, zd *w, int64_t *perm, double eps) {
  int64_t p = m < n ? m : n;
  zd *tau = w, *tau2 = w + n, *wt = w + 2 * n; /* wt: n x r, W^H */
  qr(a, m, n, tau, perm);
  for (int64_t c = 0; c < k; c++) /* B := Q^H B */
    for (int64_t j = 0; j < p; j++) {
      zd s = b[j * k + c];
      for (int64_t i = j + 1; i < m; i++) s += conj(a[i * n + j]) * b[i * k + c];
      s *= conj(tau[j]);
      b[j * k + c] -= s;
      for (int64_t i = j + 1; i < m; i++) b[i * k + c] -= s * a[i * n + j];
    }
  int64_t r = 0;
  double top = p ? cabs(a[0]) : 0, thr = eps * (double)p * top;
  while (r < p && cabs(a[r * n + r]) > thr) r++;
  memset(x, 0, (size_t)(n * k) * sizeof *x);
  if (r == 0) return;
  /* W = [R11 R12] (r x n); W^H = Q2 R2; y = Q2 [R2^-H c1; 0] */
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < r; j++) wt[i * r + j] = i >= j ? conj(a[j * n + i]) : 0;
  qr(wt, n, r, tau2, NULL);
  zd *y = w + 2 * n + n * r; /* n values per column, reused */
  for (int64_t c = 0; c < k; c++) {
    for (int64_t i = 0; i < r; i++) { /* R2^H z = c1: forward, R2^H lower */
      zd v = b[i * k + c];
      for (int64_t j = 0; j < i; j++) v -= conj(wt[j * r + i]) * y[j];
      y[i] = v / conj(wt[i * r + i]);
    }
    for (int64_t i = r; i < n; i++) y[i] = 0;
    for (int64_t j = r - 1; j >= 0; j--) { /* y = H_0 ... H_{r-1} y */
      zd s = y[j];
      for (int64_t i = j + 1; i < n; i++) s += conj(wt[i * r + j]) * y[i];
      s *= tau2[j];
      y[j] -= s;
      for (int64_t i = j + 1; i < n; i++) y[i] -= s * wt[i * r + j];
    }
    for (int64_t i = 0; i < n; i++) x[perm[i] * k + c] = y[i];
  }
}

static sm_status *ls_prepare(const sm_node *node, void **state) {
  int fast = 1;
  sm_status *st = sm__node_attr(node, "fast") ? sm__node_attr_bool(node, "fast", &fast) : NULL;
  *state = (void *)(intptr_t)fast;
  return st;
}

static sm_status *ls_compute(const void *state, sm_kctx *ctx) {
  int fast = (int)(intptr_t)state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1), *l2t = sm__kctx_input(ctx, 2);
  char s1[128];
  int dt = sm_tensor_dtype(a), ra = sm_tensor_rank(a), rb = sm_tensor_rank(b);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_COMPLEX64 && dt != SM_COMPLEX128) return sm__math_bad_dtype("MatrixSolveLs", dt);
  if (sm_tensor_dtype(b) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "MatrixSolveLs: matrix and rhs must have one dtype");
  if (sm_tensor_rank(l2t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "l2_regularizer must be scalar, got shape %s", sm__array_shape_str(l2t, s1, sizeof s1));
  if (sm_tensor_dtype(l2t) != SM_DOUBLE) return sm_status_new(SM_INVALID_ARGUMENT, "MatrixSolveLs: l2_regularizer must be double");
  double l2 = *(const double *)sm_tensor_data(l2t);
  if (ra < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", ra);
  if (rb < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 1 must have rank >= 2, got %d", rb);
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  int same = ra == rb;
  for (int i = 0; same && i < ra - 2; i++) same = ad[i] == bd[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "All input tensors must have the same outer dimensions.");
  int64_t m = ad[ra - 2], n = ad[ra - 1], k = bd[rb - 1];
  if (bd[rb - 2] != m)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.");
  int64_t od[SM_MAX_RANK];
  memcpy(od, ad, (size_t)ra * sizeof *od);
  od[ra - 2] = n, od[ra - 1] = k;
  sm_tensor *x;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, ra, od, &x);
  if (st || sm_tensor_num_elements(x) == 0 || m == 0) return st; /* no equations: X = 0, as TF */
  int64_t batch = sm_tensor_num_elements(x) / (n * k), g = m >= n ? n : m;
  size_t cnt = (size_t)(m * n + m * k + n * k + g * g + n * n + 4 * n + n * k);
  zd *A = sm__kctx_scratch(ctx, cnt * sizeof(zd) + (size_t)n * sizeof(int64_t), &st);
  if (!A) return st;
  zd *B = A + m * n, *X = B + m * k, *G = X + n * k, *W = G + g * g;
  int64_t *perm = (int64_t *)(W + n * n + 4 * n + n * k);
  double eps = dt == SM_FLOAT || dt == SM_COMPLEX64 ? FLT_EPSILON : DBL_EPSILON;
  for (int64_t bi = 0; bi < batch; bi++) {
    for (int64_t i = 0; i < m * n; i++) A[i] = get_z(a, bi * m * n + i);
    for (int64_t i = 0; i < m * k; i++) B[i] = get_z(b, bi * m * k + i);
    if (!fast) {
      cod_solve(A, m, n, B, k, X, W, perm, eps);
    } else {
      for (int64_t i = 0; i < g; i++) /* Gramian A^H A (n x n) or A A^H (m x m) */
        for (int64_t j = 0; j <= i; j++) {
          zd s = 0;
          if (m >= n)
            for (int64_t q = 0; q < m; q++) s += conj(A[q * n + i]) * A[q * n + j];
          else
            for (int64_t q = 0; q < n; q++) s += A[i * n + q] * conj(A[j * n + q]);
          if (i == j && l2 > 0) s += l2;
          G[i * g + j] = s, G[j * g + i] = conj(s);
        }
      if (!llt(G, g))
        return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix was rank deficient or ill-conditioned. Try setting fast=False "
                             "or provide a larger l2_regularizer > 0.");
      if (m >= n) {
        for (int64_t i = 0; i < n; i++) /* X = A^H B, then solved */
          for (int64_t c = 0; c < k; c++) {
            zd s = 0;
            for (int64_t q = 0; q < m; q++) s += conj(A[q * n + i]) * B[q * k + c];
            X[i * k + c] = s;
          }
        llt_solve(G, n, X, k);
      } else {
        llt_solve(G, m, B, k);
        for (int64_t i = 0; i < n; i++)
          for (int64_t c = 0; c < k; c++) {
            zd s = 0;
            for (int64_t q = 0; q < m; q++) s += conj(A[q * n + i]) * B[q * k + c];
            X[i * k + c] = s;
          }
      }
    }
    for (int64_t i = 0; i < n * k; i++) put_z(x, bi * n * k + i, X[i]);
  }
  return NULL;
}

const sm_kernel sm_kernels_linalg_ls[] = {
    {"MatrixSolveLs", ls_prepare, ls_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
