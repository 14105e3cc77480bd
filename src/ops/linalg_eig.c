/* linalg_eig.c - the linalg_eig kernel family: the symmetric eigendecomposition and the SVD
 * (found missing by tools/sweep_ops.py, session 17): SelfAdjointEigV2 (tf.linalg.eigh /
 * eigvalsh: the lower triangle read, as Eigen's solver does; eigenvalues ascending) and Svd
 * (tf.linalg.svd, tf.linalg.pinv, matrix_rank, norm(ord=2): singular values descending;
 * compute_uv, full_matrices) over batches of real float / double matrices, by cyclic Jacobi
 * rotations in double (two-sided for eigh, one-sided Hestenes for the SVD; a left basis that
 * the nonzero singular values leave open, or full_matrices asks for, is completed by
 * Gram-Schmidt). Values agree with TF's to rounding; eigen- and singular vectors are determined
 * up to sign (and within repeated values up to rotation), so they can differ from TF's by sign:
 * they satisfy A v = v diag(e), A = U diag(s) V^T with orthonormal columns. Complex input is
 * refused by dtype. Checked by tests/unit/test_ops_api.c (values against TensorFlow from
 * tools/gen_api_cases.py, vectors by those identities). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

static double getd(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_FLOAT ? ((const float *)sm_tensor_data(t))[i] : ((const double *)sm_tensor_data(t))[i];
}
static void putd(sm_tensor *t, int64_t i, double v) {
  if (sm_tensor_dtype(t) == SM_FLOAT) ((float *)sm_tensor_data(t))[i] = (float)v;
  else ((double *)sm_tensor_data(t))[i] = v;
}

/* ---- symmetric eigendecomposition (cyclic Jacobi) ----------------------------------------- */
/* a: n x n symmetric (row-major, destroyed), v: n x n out (columns = vectors), e: n out, ascending. */
static void jacobi_eig(double *a, double *v, double *e, int64_t n) {
  for (int64_t i = 0; i < n * n; i++) v[i] = i / n == i % n;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, tot = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        if (i == j) tot += a[i * n + j] * a[i * n + j];
        else off += a[i * n + j] * a[i * n + j];
      }
    if (off <= 1e-30 * (tot + off) || off == 0) break;
    for (int64_t p = 0; p < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double apq = a[p * n + q];
        if (apq == 0) continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; k++) { /* columns p, q */
          double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq, a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; k++) { /* rows p, q */
          double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk, a[q * n + k] = s * apk + c * aqk;
        }
        for (int64_t k = 0; k < n; k++) {
          double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq, v[k * n + q] = s * vkp + c * vkq;
        }
      }
  }
  for (int64_t i = 0; i < n; i++) e[i] = a[i * n + i];
  for (int64_t i = 1; i < n; i++) /* insertion sort, ascending, vectors along */
    for (int64_t j = i; j > 0 && e[j] < e[j - 1]; j--) {
      double t = e[j];
      e[j] = e[j - 1], e[j - 1] = t;
      for (int64_t k = 0; k < n; k++) {
        t = v[k * n + j];
        v[k * n + j] = v[k * n + j - 1], v[k * n + j - 1] = t;
      }
    }
}

static sm_status *eig_prepare(const sm_node *node, void **state) {
  int cv = 1;
  sm_status *st = sm__node_attr(node, "compute_v") ? sm__node_attr_bool(node, "compute_v", &cv) : NULL;
  if (st) return st;
  *state = (void *)(intptr_t)(1 + cv);
  return NULL;
}

static sm_status *eig_compute(const void *state, sm_kctx *ctx) {
  int cv = (intptr_t)state == 2;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm__math_bad_dtype("SelfAdjointEigV2", dt);
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  const int64_t *d = sm_tensor_dims(x);
  int64_t n = d[r - 1];
  if (d[r - 2] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix must be square.");
  int64_t vd[SM_MAX_RANK];
  memcpy(vd, d, (size_t)r * sizeof *vd);
  sm_tensor *e, *v;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r - 1, d, &e);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, cv ? r : 0, vd, &v); /* no vectors: a scalar, as TF */
  if (st) return st;
  int64_t batch = n ? sm_tensor_num_elements(x) / (n * n) : 0;
  if (!batch) return NULL;
  double *a = sm__kctx_scratch(ctx, (size_t)(2 * n * n + n) * sizeof *a, &st);
  if (!a) return st;
  double *vv = a + n * n, *ee = vv + n * n;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) a[i * n + j] = a[j * n + i] = getd(x, b * n * n + i * n + j);
    jacobi_eig(a, vv, ee, n);
    for (int64_t i = 0; i < n; i++) putd(e, b * n + i, ee[i]);
    if (cv)
      for (int64_t i = 0; i < n * n; i++) putd(v, b * n * n + i, vv[i]);
  }
  return NULL;
}

/* ---- SVD (one-sided Jacobi) --------------------------------------------------------------------- */
/* u: m x n (m >= n) in, left vectors out (columns, unit or 0 where s = 0); v: n x n; s: n. */
static void jacobi_svd(double *u, double *v, double *s, int64_t m, int64_t n) {
  for (int64_t i = 0; i < n * n; i++) v[i] = i / n == i % n;
  for (int sweep = 0; sweep < 100; sweep++) {
    int rotated = 0;
    for (int64_t p = 0; p < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double al = 0, be = 0, ga = 0;
        for (int64_t k = 0; k < m; k++) {
          double up = u[k * n + p], uq = u[k * n + q];
          al += up * up, be += uq * uq, ga += up * uq;
        }
        if (ga == 0 || fabs(ga) <= 1e-15 * sqrt(al * be)) continue;
        rotated = 1;
        double zeta = (be - al) / (2 * ga);
        double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        double c = 1 / sqrt(1 + t * t), sn = c * t;
        for (int64_t k = 0; k < m; k++) {
          double up = u[k * n + p], uq = u[k * n + q];
          u[k * n + p] = c * up - sn * uq, u[k * n + q] = sn * up + c * uq;
        }
        for (int64_t k = 0; k < n; k++) {
          double vp = v[k * n + p], vq = v[k * n + q];
          v[k * n + p] = c * vp - sn * vq, v[k * n + q] = sn * vp + c * vq;
        }
      }
    if (!rotated) break;
  }
  for (int64_t j = 0; j < n; j++) {
    double nn = 0;
    for (int64_t k = 0; k < m; k++) nn += u[k * n + j] * u[k * n + j];
    s[j] = sqrt(nn);
  }
  for (int64_t i = 1; i < n; i++) /* descending, vectors along */
    for (int64_t j = i; j > 0 && s[j] > s[j - 1]; j--) {
      double t = s[j];
      s[j] = s[j - 1], s[j - 1] = t;
      for (int64_t k = 0; k < m; k++) t = u[k * n + j], u[k * n + j] = u[k * n + j - 1], u[k * n + j - 1] = t;
      for (int64_t k = 0; k < n; k++) t = v[k * n + j], v[k * n + j] = v[k * n + j - 1], v[k * n + j - 1] = t;
    }
}

/* Orthonormal columns 0..cols-1 of q (rows x ld, row-major): column j < nknown kept when its
 * singular value norms[j] > tol (then orthogonalized against the earlier ones), else replaced by the first unit vector
 * that is not in their span. */
static void complete_basis(double *q, int64_t rows, int64_t ld, int64_t cols, const double *norms, int64_t nknown,
                           double tol) {
  for (int64_t j = 0; j < cols; j++) {
    int ok = j < nknown && norms[j] > tol;
    for (int64_t trial = -1; trial < rows; trial++) {
      if (trial >= 0 || !ok)
        for (int64_t k = 0; k < rows; k++) q[k * ld + j] = trial >= 0 && k == trial;
      if (trial < 0 && !ok) continue;
      for (int pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < j; i++) {
          double dot = 0;
          for (int64_t k = 0; k < rows; k++) dot += q[k * ld + i] * q[k * ld + j];
          for (int64_t k = 0; k < rows; k++) q[k * ld + j] -= dot * q[k * ld + i];
        }
      double nn = 0;
      for (int64_t k = 0; k < rows; k++) nn += q[k * ld + j] * q[k * ld + j];
      nn = sqrt(nn);
      if (nn > 1e-8) {
        for (int64_t k = 0; k < rows; k++) q[k * ld + j] /= nn;
        break;
      }
    }
  }
}

typedef struct svd_state {
  int uv, full;
} svd_state;

static sm_status *svd_prepare(const sm_node *node, void **state) {
  svd_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->uv = 1;
  sm_status *st = NULL;
  if (sm__node_attr(node, "compute_uv")) st = sm__node_attr_bool(node, "compute_uv", &s->uv);
  if (!st && sm__node_attr(node, "full_matrices")) st = sm__node_attr_bool(node, "full_matrices", &s->full);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *svd_compute(const void *state, sm_kctx *ctx) {
  const svd_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm__math_bad_dtype("Svd", dt);
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  const int64_t *d = sm_tensor_dims(x);
  int64_t m = d[r - 2], n = d[r - 1], p = m < n ? m : n;
  int64_t sd[SM_MAX_RANK], ud[SM_MAX_RANK], vd[SM_MAX_RANK];
  memcpy(sd, d, (size_t)r * sizeof *sd), memcpy(ud, d, (size_t)r * sizeof *ud), memcpy(vd, d, (size_t)r * sizeof *vd);
  sd[r - 2] = p;
  int64_t ucols = s->full ? m : p, vcols = s->full ? n : p;
  ud[r - 2] = m, ud[r - 1] = ucols, vd[r - 2] = n, vd[r - 1] = vcols;
  sm_tensor *so, *uo, *vo;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, r - 1, sd, &so); /* without compute_uv u, v are scalars, as TF */
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, s->uv ? r : 0, ud, &uo);
  if (!st) st = sm__kctx_alloc_output(ctx, 2, dt, s->uv ? r : 0, vd, &vo);
  if (st) return st;
  int64_t batch = m && n ? sm_tensor_num_elements(x) / (m * n) : 0;
  if (!batch) return NULL;
  int tr = m < n; /* work on A^T so that rows >= cols */
  int64_t R = tr ? n : m, Cc = tr ? m : n; /* Cc = p */
  double *w = sm__kctx_scratch(ctx, (size_t)(R * R + Cc * Cc + Cc + R + 1) * sizeof *w, &st);
  if (!w) return st;
  double *vv = w + R * R, *ss = vv + Cc * Cc; /* w: R x R, its first Cc columns the work matrix (ld R) */
  for (int64_t b = 0; b < batch; b++) {
    double *u = sm__kctx_scratch(ctx, (size_t)(R * Cc) * sizeof *u + 1, &st);
    if (!u) return st;
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < Cc; j++) u[i * Cc + j] = tr ? getd(x, b * m * n + j * n + i) : getd(x, b * m * n + i * n + j);
    jacobi_svd(u, vv, ss, R, Cc);
    for (int64_t j = 0; j < p; j++) putd(so, b * p + j, ss[j]);
    if (s->uv) {
      /* the R-side basis: normalized columns, completed to R (full) or Cc columns */
      double tol = (ss[0] > 0 ? ss[0] : 1) * 1e-13 * (double)R;
      int64_t rc = s->full ? R : Cc;
      for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < R; j++) w[i * R + j] = j < Cc && ss[j] > tol ? u[i * Cc + j] / ss[j] : 0;
      complete_basis(w, R, R, rc, ss, Cc, tol);
      /* the Cc-side basis is vv (Cc x Cc); with full_matrices its size is already complete */
      double *Lm = tr ? vv : w, *Rm = tr ? w : vv; /* left (m side), right (n side) */
      int64_t lld = tr ? Cc : R, rld = tr ? R : Cc;
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ucols; j++) putd(uo, b * m * ucols + i * ucols + j, Lm[i * lld + j]);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < vcols; j++) putd(vo, b * n * vcols + i * vcols + j, Rm[i * rld + j]);
    }
    sm__kctx_scratch_free(ctx, u);
  }
  return NULL;
}

const sm_kernel sm_kernels_linalg_eig[] = {
    {"SelfAdjointEigV2", eig_prepare, eig_compute, NULL, 0},
    {"Svd", svd_prepare, svd_compute, free, 0},
    {0},
};
