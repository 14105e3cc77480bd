/* linalg.c - the linear-algebra kernel family over batches of matrices [..., M, N]:
 * MatrixBandPart and MatrixDiag / MatrixDiagPart / MatrixSetDiag (V1-V3: bands of diagonals, the
 * align attr; any fixed-size dtype), and through one LU factorization with partial pivoting
 * (Eigen's PartialPivLU, which TensorFlow uses: the largest |pivot| of the column, the first on a
 * tie) MatrixSolve, MatrixInverse and MatrixDeterminant over float, double, complex64, complex128.
 *
 * The factorization works in double (complex double for every dtype: a real matrix stays real
 * through it), results are rounded to the input's dtype. As TensorFlow, an exactly zero pivot is
 * "not invertible" (MatrixSolve, MatrixInverse); the determinant is sign * exp(sum log|u_ii|), 0 for
 * a singular matrix, 1 for an empty one. Keras exports MatrixBandPart (MultiHeadAttention's causal
 * mask), MatrixSolve (RandomPerspective) and MatrixDiagV3 (keras.ops.eye). Checked against TensorFlow by
 * tests/unit/test_ops_linalg.c (tools/gen_linalg_cases.py). */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h"

/* ---- MatrixBandPart ------------------------------------------------------------------------ */
static sm_status *band_scalar(const sm_tensor *t, const char *what, int64_t *v) {
  if (sm_tensor_rank(t) != 0) {
    char s[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be scalar, got shape %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), s, sizeof s));
  }
  if (sm_tensor_dtype(t) == SM_INT32)
    *v = *(const int32_t *)sm_tensor_data(t);
  else if (sm_tensor_dtype(t) == SM_INT64)
    *v = *(const int64_t *)sm_tensor_data(t);
  else
    return sm__math_bad_dtype("MatrixBandPart", sm_tensor_dtype(t));
  return NULL;
}

static sm_status *band_part_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  char s[256];
  if (r < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be at least 2-dim, received shape: %s",
                         sm_shape_str(r, sm_tensor_dims(x), s, sizeof s));
  size_t es = sm_dtype_size(dt);
  if (!es || dt == SM_STRING) return sm__math_bad_dtype("MatrixBandPart", dt);
  int64_t lo, hi, m = sm_tensor_dims(x)[r - 2], n = sm_tensor_dims(x)[r - 1];
  sm_status *st = band_scalar(sm__kctx_input(ctx, 1), "num_lower", &lo);
  if (!st) st = band_scalar(sm__kctx_input(ctx, 2), "num_upper", &hi);
  if (st) return st;
  if (lo > m)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "num_lower must be negative or less or equal to number of rows (%lld) got: %lld",
                         (long long)m, (long long)lo);
  if (hi > n)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "num_upper must be negative or less or equal to number of columns (%lld) got: %lld",
                         (long long)n, (long long)hi);
  sm_tensor *z;
  st = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(x), &z); /* zeroed: only the band is copied */
  if (st || m == 0 || n == 0) return st;
  int64_t batch = sm_tensor_num_elements(x) / (m * n);
  const char *src = sm_tensor_data(x);
  char *dst = sm_tensor_data(z);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < m; i++) {
      /* columns j with i - j <= lo and j - i <= hi (a negative bound: the whole side) */
      int64_t j0 = lo < 0 ? 0 : (i - lo > 0 ? i - lo : 0);
      int64_t j1 = hi < 0 ? n : (i + hi + 1 < n ? i + hi + 1 : n);
      if (j1 > j0) {
        size_t off = (size_t)((b * m + i) * n + j0) * es;
        memcpy(dst + off, src + off, (size_t)(j1 - j0) * es);
      }
    }
  return NULL;
}

/* ---- MatrixDiag / MatrixDiagPart / MatrixSetDiag (V1, V2, V3) ------------------------------
 * A band of diagonals lo..hi of [..., R, C] matrices in the compact form [..., hi - lo + 1, L]
 * ([..., L] for one diagonal), row m holding diagonal d = hi - m, aligned left or right in its
 * row as the align attr says (V3; V1/V2 are LEFT_LEFT), as TF's matrix_diag_op.cc. */
enum { DG_DIAG, DG_PART, DG_SET };
enum { DG_V1 = 0, DG_V2 = 1, DG_V3 = 2 };

typedef struct dg_geom {
  int64_t lo, hi, rows, cols, len; /* len: the compact rows' length (max_diag_len) */
  int left_super, left_sub;
} dg_geom;

/* The content offset of diagonal d in its compact row, and its length. */
static int64_t dg_offset(const dg_geom *g, int64_t d, int64_t *dlen) {
  int left = (d >= 0 && g->left_super) || (d <= 0 && g->left_sub);
  int64_t a = g->rows + (d < 0 ? d : 0), b = g->cols - (d > 0 ? d : 0);
  *dlen = a < b ? a : b;
  return left ? 0 : g->len - *dlen;
}

static sm_status *int_scalar(const sm_tensor *t, const char *what, int64_t *v) {
  char s[128];
  if (sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar, received shape: %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), s, sizeof s));
  if (sm_tensor_dtype(t) != SM_INT32) return sm__math_bad_dtype(what, sm_tensor_dtype(t));
  *v = *(const int32_t *)sm_tensor_data(t);
  return NULL;
}

/* k: a scalar or one or two int32 values. */
static sm_status *dg_k(const sm_tensor *k, dg_geom *g) {
  char s[128];
  if (sm_tensor_rank(k) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "diag_index must be a scalar or vector, received shape: %s",
                         sm_shape_str(sm_tensor_rank(k), sm_tensor_dims(k), s, sizeof s));
  if (sm_tensor_dtype(k) != SM_INT32) return sm__math_bad_dtype("diag_index", sm_tensor_dtype(k));
  int64_t n = sm_tensor_num_elements(k);
  if (n < 1 || n > 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "diag_index must have only one or two elements, received %lld elements.",
                         (long long)n);
  const int32_t *v = sm_tensor_data(k);
  g->lo = v[0];
  g->hi = v[n - 1];
  if (g->lo > g->hi)
    return sm_status_new(SM_INVALID_ARGUMENT, "lower_diag_index must not be larger than upper_diag_index: %lld > %lld",
                         (long long)g->lo, (long long)g->hi);
  return NULL;
}

static sm_status *dg_prepare(const sm_node *node, void **state) {
  const char *name = sm__node_op(node);
  int op = strstr(name, "Part") ? DG_PART : strstr(name, "Set") ? DG_SET : DG_DIAG;
  int version = strstr(name, "V3") ? DG_V3 : strstr(name, "V2") ? DG_V2 : DG_V1;
  int ls = 1, lb = 1;
  if (version == DG_V3 && sm__node_attr(node, "align")) {
    const char *a;
    size_t n;
    sm_status *st = sm__node_attr_string(node, "align", &a, &n);
    if (st) return st;
    ls = (n == 9 && !memcmp(a, "LEFT_LEFT", 9)) || (n == 10 && !memcmp(a, "LEFT_RIGHT", 10));
    lb = (n == 9 && !memcmp(a, "LEFT_LEFT", 9)) || (n == 10 && !memcmp(a, "RIGHT_LEFT", 10));
  }
  /* everything fits in the pointer: op (2 bits), version (2), the two alignments */
  *state = (void *)(intptr_t)(1 + (op | version << 2 | ls << 4 | lb << 5));
  return NULL;
}

static sm_status *dg_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, op = code & 3, version = code >> 2 & 3;
  dg_geom g = {0};
  g.left_super = code >> 4 & 1, g.left_sub = code >> 5 & 1;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  size_t es = sm_dtype_size(dt);
  if (!es || dt == SM_STRING) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), dt);
  const int64_t *xd = sm_tensor_dims(x);
  char s[256];
  sm_status *st = NULL;
  const char *pad = NULL; /* the padding value's bytes; NULL: zero */
  if (version != DG_V1 && (st = dg_k(sm__kctx_input(ctx, op == DG_SET ? 2 : 1), &g))) return st;
  if (version != DG_V1 && op != DG_SET) {
    const sm_tensor *p = sm__kctx_input(ctx, op == DG_DIAG ? 4 : 2);
    if (sm_tensor_num_elements(p) != 1 || sm_tensor_rank(p) != 0) {
      if (op == DG_PART) return sm_status_new(SM_INVALID_ARGUMENT, "Padding must be scalar.");
      return sm_status_new(SM_INVALID_ARGUMENT, "padding_value must be a scalar, received shape: %s",
                           sm_shape_str(sm_tensor_rank(p), sm_tensor_dims(p), s, sizeof s));
    }
    if (sm_tensor_dtype(p) != dt) return sm__math_bad_dtype("padding_value", sm_tensor_dtype(p));
    pad = sm_tensor_data(p);
  }
  int64_t nd = g.hi - g.lo + 1;
  if (op == DG_DIAG) {
    int need = g.lo == g.hi ? 1 : 2;
    if (r < need)
      return sm_status_new(SM_INVALID_ARGUMENT, "diagonal must be at least %d-dim, received shape: %s", need,
                           sm_shape_str(r, xd, s, sizeof s));
    if (need == 2 && xd[r - 2] != nd)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "The number of diagonals provided in the input does not match the lower_diag_index and "
                           "upper_diag_index range.");
    g.len = xd[r - 1];
    int64_t nr = -1, nc = -1;
    if (version != DG_V1 && ((st = int_scalar(sm__kctx_input(ctx, 2), "num_rows", &nr)) ||
                             (st = int_scalar(sm__kctx_input(ctx, 3), "num_cols", &nc))))
      return st;
    int64_t min_r = g.len - (g.hi < 0 ? g.hi : 0), min_c = g.len + (g.lo > 0 ? g.lo : 0);
    if (nr == -1 && nc == -1) {
      nr = nc = min_r > min_c ? min_r : min_c;
    } else if (nr == -1) {
      nr = min_r;
    } else if (nc == -1) {
      nc = min_c;
    }
    if (nr < min_r) return sm_status_new(SM_INVALID_ARGUMENT, "The number of rows is too small.");
    if (nc < min_c) return sm_status_new(SM_INVALID_ARGUMENT, "The number of columns is too small.");
    if (nr != min_r && nc != min_c)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "The number of rows or columns is not consistent with the specified d_lower, d_upper, and "
                           "diagonal.");
    g.rows = nr, g.cols = nc;
    int64_t od[SM_MAX_RANK];
    int orank = r - need + 2;
    if (orank > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "MatrixDiag: output rank %d too large", orank);
    memcpy(od, xd, (size_t)(r - need) * sizeof *od);
    od[orank - 2] = nr, od[orank - 1] = nc;
    sm_tensor *z;
    if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, orank, od, &z))) return st;
    /* nothing to write: the loops below would still walk a batch dim of 2^40 beside a zero one */
    if (!sm_tensor_num_elements(z)) return NULL;
    int64_t batch = 1;
    for (int i = 0; i < r - need; i++) batch *= xd[i];
    const char *src = sm_tensor_data(x);
    char *dst = sm_tensor_data(z);
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < nr; i++)
        for (int64_t j = 0; j < nc; j++) {
          int64_t d = j - i, dl;
          char *o = dst + (size_t)((b * nr + i) * nc + j) * es;
          if (d < g.lo || d > g.hi) {
            if (pad)
              memcpy(o, pad, es);
            else
              memset(o, 0, es);
            continue;
          }
          int64_t idx = j - (d > 0 ? d : 0) + dg_offset(&g, d, &dl);
          memcpy(o, src + (size_t)((b * nd + (g.hi - d)) * g.len + idx) * es, es);
        }
    return NULL;
  }
  /* Part and Set: x is the [..., R, C] matrix */
  if (r < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be at least 2-dim, received shape: %s",
                         sm_shape_str(r, xd, s, sizeof s));
  g.rows = xd[r - 2], g.cols = xd[r - 1];
  if (!((-g.rows < g.lo && g.lo < g.cols) || g.rows == 0 || g.cols == 0))
    return sm_status_new(SM_INVALID_ARGUMENT, "lower_diag_index is out of bound: %lld. It must be between %lld and %lld",
                         (long long)g.lo, (long long)-g.rows, (long long)g.cols);
  if (!((-g.rows < g.hi && g.hi < g.cols) || g.rows == 0 || g.cols == 0))
    return sm_status_new(SM_INVALID_ARGUMENT, "upper_diag_index is out of bound: %lld It must be between %lld and %lld",
                         (long long)g.hi, (long long)-g.rows, (long long)g.cols);
  int64_t a = g.rows + (g.hi < 0 ? g.hi : 0), c = g.cols - (g.lo > 0 ? g.lo : 0);
  g.len = a < c ? a : c;
  if (g.len < 0) g.len = 0;
  int64_t batch = 1;
  for (int i = 0; i < r - 2; i++) batch *= xd[i];
  const char *src = sm_tensor_data(x);
  if (op == DG_PART) {
    int64_t od[SM_MAX_RANK];
    int orank = r - 2 + (nd > 1 ? 2 : 1);
    memcpy(od, xd, (size_t)(r - 2) * sizeof *od);
    if (nd > 1) od[r - 2] = nd;
    od[orank - 1] = g.len;
    sm_tensor *z;
    if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, orank, od, &z))) return st;
    if (!sm_tensor_num_elements(z)) return NULL; /* as above: no walk over an empty output's batch */
    char *dst = sm_tensor_data(z);
    for (int64_t b = 0; b < batch; b++)
      for (int64_t m = 0; m < nd; m++) {
        int64_t d = g.hi - m, dl, off = dg_offset(&g, d, &dl);
        for (int64_t n = 0; n < g.len; n++) {
          char *o = dst + (size_t)((b * nd + m) * g.len + n) * es;
          int64_t t = n - off;
          if (t < 0 || t >= dl) {
            if (pad)
              memcpy(o, pad, es);
            else
              memset(o, 0, es);
            continue;
          }
          int64_t i = t + (d < 0 ? -d : 0), j = t + (d > 0 ? d : 0);
          memcpy(o, src + (size_t)((b * g.rows + i) * g.cols + j) * es, es);
        }
      }
    return NULL;
  }
  /* Set: the diagonals' shape must be what Part would give */
  const sm_tensor *dg = sm__kctx_input(ctx, 1);
  int dr = sm_tensor_rank(dg), want_r = r - 2 + (nd > 1 ? 2 : 1);
  const int64_t *ddims = sm_tensor_dims(dg);
  int ok = dr == want_r && sm_tensor_dtype(dg) == dt && ddims[dr - 1] == g.len && (nd == 1 || ddims[dr - 2] == nd);
  for (int i = 0; ok && i < r - 2; i++) ok = ddims[i] == xd[i];
  if (!ok) {
    char s2[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "diagonal shape %s does not fit input %s and diag_index [%lld, %lld]",
                         sm_shape_str(dr, ddims, s2, sizeof s2), sm_shape_str(r, xd, s, sizeof s), (long long)g.lo,
                         (long long)g.hi);
  }
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r, xd, &z))) return st;
  if (!sm_tensor_num_elements(z)) return NULL;
  char *dst = sm_tensor_data(z);
  if (sm_tensor_nbytes(x)) memcpy(dst, src, sm_tensor_nbytes(x));
  const char *dsrc = sm_tensor_data(dg);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t m = 0; m < nd; m++) {
      int64_t d = g.hi - m, dl, off = dg_offset(&g, d, &dl);
      for (int64_t t = 0; t < dl; t++) {
        int64_t i = t + (d < 0 ? -d : 0), j = t + (d > 0 ? d : 0);
        memcpy(dst + (size_t)((b * g.rows + i) * g.cols + j) * es, dsrc + (size_t)((b * nd + m) * g.len + t + off) * es,
               es);
      }
    }
  return NULL;
}

/* ---- LU ------------------------------------------------------------------------------------ */
typedef double complex zd;

static int is_lu_dtype(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

/* re + i im without arithmetic (an infinite or NaN part stays in its place); CMPLX is not in every
 * libc's headers for every compiler. A complex is laid out as double[2] (C11 6.2.5). */
static zd mkz(double re, double im) {
  zd z;
  double *p = (double *)&z;
  p[0] = re, p[1] = im;
  return z;
}

static zd get_z(const void *p, int dt, int64_t i) {
  switch (dt) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_COMPLEX64: return mkz(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
    default: return mkz(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
  }
}

static void put_z(void *p, int dt, int64_t i, zd v) {
  switch (dt) {
    case SM_FLOAT: ((float *)p)[i] = (float)creal(v); break;
    case SM_DOUBLE: ((double *)p)[i] = creal(v); break;
    case SM_COMPLEX64: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
    default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
  }
}

/* Loads matrix b (n x n at element offset b*n*n) into a, conjugate-transposed when adjoint. */
static void load_matrix(zd *a, const void *src, int dt, int64_t b, int64_t n, int adjoint) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      zd v = get_z(src, dt, (b * n + i) * n + j);
      if (adjoint)
        a[j * n + i] = conj(v);
      else
        a[i * n + j] = v;
    }
}

/* In-place LU of the n x n matrix a (row-major) with partial pivoting: perm[k] is the row swapped
 * into place k. Returns the number of swaps; *zero_pivot set when some pivot is exactly 0. */
static int lu_factor(zd *a, int64_t n, int64_t *perm, int *zero_pivot) {
  int swaps = 0;
  *zero_pivot = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k;
    double best = cabs(a[k * n + k]);
    for (int64_t i = k + 1; i < n; i++) {
      double v = cabs(a[i * n + k]);
      if (v > best) best = v, p = i;
    }
    perm[k] = p;
    if (p != k) {
      swaps++;
      for (int64_t j = 0; j < n; j++) {
        zd t = a[k * n + j];
        a[k * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
    }
    zd piv = a[k * n + k];
    if (piv == 0) {
      *zero_pivot = 1;
      continue; /* as Eigen: the column below stays, nothing is eliminated */
    }
    for (int64_t i = k + 1; i < n; i++) {
      zd f = a[i * n + k] / piv;
      a[i * n + k] = f;
      if (f != 0)
        for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return swaps;
}

/* Solves LU x = P b for the k columns of x (n x k, row-major), in place. */
static void lu_solve(const zd *a, int64_t n, const int64_t *perm, zd *x, int64_t k) {
  for (int64_t i = 0; i < n; i++)
    if (perm[i] != i)
      for (int64_t c = 0; c < k; c++) {
        zd t = x[i * k + c];
        x[i * k + c] = x[perm[i] * k + c];
        x[perm[i] * k + c] = t;
      }
  for (int64_t i = 0; i < n; i++) /* L y = b, unit diagonal */
    for (int64_t j = 0; j < i; j++)
      if (a[i * n + j] != 0)
        for (int64_t c = 0; c < k; c++) x[i * k + c] -= a[i * n + j] * x[j * k + c];
  for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
    for (int64_t j = i + 1; j < n; j++)
      if (a[i * n + j] != 0)
        for (int64_t c = 0; c < k; c++) x[i * k + c] -= a[i * n + j] * x[j * k + c];
    for (int64_t c = 0; c < k; c++) x[i * k + c] /= a[i * n + i];
  }
}

enum { LA_SOLVE, LA_INVERSE, LA_DET };

/* The op and its adjoint attr travel in the state pointer ((op << 1 | adjoint) + 1). */
static sm_status *la_prepare(const sm_node *node, void **state) {
  const char *name = sm__node_op(node);
  int op = !strcmp(name, "MatrixSolve") ? LA_SOLVE : !strcmp(name, "MatrixInverse") ? LA_INVERSE : LA_DET;
  int adjoint = 0;
  if (op != LA_DET && sm__node_attr(node, "adjoint")) {
    sm_status *st = sm__node_attr_bool(node, "adjoint", &adjoint);
    if (st) return st;
  }
  *state = (void *)(intptr_t)(((op << 1) | (adjoint != 0)) + 1);
  return NULL;
}

/* TF's LinearAlgebraOp input checks: rank >= 2, and (MatrixSolve) the same batch dims. */
static sm_status *check_rank(const sm_tensor *t, int idx) {
  if (sm_tensor_rank(t) < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor %d must have rank >= 2, got %d", idx, sm_tensor_rank(t));
  return NULL;
}

static sm_status *la_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, op = code >> 1, adjoint = code & 1;
  static const char *const names[] = {"MatrixSolve", "MatrixInverse", "MatrixDeterminant"};
  const sm_tensor *a = sm__kctx_input(ctx, 0), *rhs = op == LA_SOLVE ? sm__kctx_input(ctx, 1) : NULL;
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a);
  if (!is_lu_dtype(dt)) return sm__math_bad_dtype(names[op], dt);
  sm_status *st = check_rank(a, 0);
  if (!st && rhs) st = check_rank(rhs, 1);
  if (st) return st;
  const int64_t *ad = sm_tensor_dims(a);
  int64_t n = ad[r - 1], k = 0;
  if (ad[r - 2] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, op == LA_SOLVE ? "First input (lhs) must be a square matrix."
                                                             : "Input matrix must be square.");
  if (rhs) {
    if (sm_tensor_dtype(rhs) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "MatrixSolve: matrix and rhs dtypes differ");
    const int64_t *rd = sm_tensor_dims(rhs);
    int rr = sm_tensor_rank(rhs);
    int same = rr == r;
    for (int i = 0; same && i < r - 2; i++) same = rd[i] == ad[i];
    if (!same) return sm_status_new(SM_INVALID_ARGUMENT, "All input tensors must have the same outer dimensions.");
    if (rd[rr - 2] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.");
    k = rd[rr - 1];
  }
  sm_tensor *z;
  if (op == LA_DET)
    st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r - 2, ad, &z);
  else if (op == LA_SOLVE)
    st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r, sm_tensor_dims(rhs), &z);
  else
    st = sm__kctx_alloc_output_uninit(ctx, 0, dt, r, ad, &z);
  if (st) return st;
  int64_t batch = 1;
  for (int i = 0; i < r - 2; i++) batch *= ad[i];
  /* an empty output (0 x 0 matrices) has nothing to compute, however large the batch dim */
  if (batch == 0 || !sm_tensor_num_elements(z)) return NULL;
  int64_t cols = op == LA_SOLVE ? k : n;
  /* n and cols are dims of tensors that exist, so n * n and n * cols fit; their doubles' bytes may not */
  if ((uint64_t)n > (uint64_t)1 << 30 || (uint64_t)(n * n + n * cols) > SIZE_MAX / (2 * sizeof(zd)))
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: a %lld x %lld matrix is too large to factor", names[op],
                         (long long)n, (long long)n);
  size_t bytes = (size_t)(n * n + n * cols) * sizeof(zd) + (size_t)n * sizeof(int64_t);
  zd *lu = sm__kctx_scratch(ctx, bytes ? bytes : 1, &st);
  if (!lu) return st;
  zd *x = lu + n * n;
  int64_t *perm = (int64_t *)(x + n * cols);
  const void *src = sm_tensor_data(a);
  void *dst = sm_tensor_data(z);
  for (int64_t b = 0; b < batch; b++) {
    if ((b & 63) == 63 && (st = sm__kctx_check_stop(ctx))) return st;
    load_matrix(lu, src, dt, b, n, adjoint);
    int zero = 0, swaps = lu_factor(lu, n, perm, &zero);
    if (op == LA_DET) {
      zd sign = (swaps & 1) ? -1 : 1;
      double logabs = 0;
      for (int64_t i = 0; i < n; i++) {
        double m = cabs(lu[i * n + i]);
        if (m == 0) {
          sign = 0;
          logabs = -INFINITY;
          break;
        }
        sign *= lu[i * n + i] / m;
        logabs += log(m);
      }
      put_z(dst, dt, b, sign * exp(logabs));
      continue;
    }
    if (zero)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           op == LA_SOLVE ? "Input matrix is not invertible." : "Input is not invertible.");
    if (op == LA_SOLVE)
      for (int64_t i = 0; i < n * k; i++) x[i] = get_z(sm_tensor_data(rhs), dt, b * n * k + i);
    else
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) x[i * n + j] = i == j;
    lu_solve(lu, n, perm, x, cols);
    for (int64_t i = 0; i < n * cols; i++) put_z(dst, dt, b * n * cols + i, x[i]);
  }
  return NULL;
}

/* ---- LogMatrixDeterminant, Lu ------------------------------------------------------------ */
/* The same factorization: LogMatrixDeterminant gives sign (a unit complex for complex input; 0
 * with log |det| = -inf for a singular matrix) and log |det|; Lu gives the packed factors and
 * p, row i of P A being row p[i] of A (tf.linalg.lu), and refuses a singular matrix as TF does. */
static sm_status *lu_op_prepare(const sm_node *node, void **state) {
  int idx = SM_INT32;
  if (!strcmp(sm__node_op(node), "Lu") && sm__node_attr(node, "output_idx_type")) {
    sm_status *st = sm__node_attr_type(node, "output_idx_type", &idx);
    if (st) return st;
  }
  *state = (void *)(intptr_t)(strcmp(sm__node_op(node), "Lu") ? 1 : idx == SM_INT64 ? 3 : 2);
  return NULL;
}

static sm_status *lu_op_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state, is_lu = code >= 2, idx64 = code == 3;
  const char *name = is_lu ? "Lu" : "LogMatrixDeterminant";
  const sm_tensor *a = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a);
  if (!is_lu_dtype(dt)) return sm__math_bad_dtype(name, dt);
  char sh[128];
  if (r < 2)
    return is_lu ? sm_status_new(SM_INVALID_ARGUMENT, "input must have rank >= 2, got %d", r)
                 : sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  const int64_t *ad = sm_tensor_dims(a);
  int64_t n = ad[r - 1];
  if (ad[r - 2] != n)
    return is_lu ? sm_status_new(SM_INVALID_ARGUMENT, "input matrix must be square, got %s",
                                 sm_shape_str(r, ad, sh, sizeof sh))
                 : sm_status_new(SM_INVALID_ARGUMENT, "Input matrix must be square.");
  sm_tensor *z0, *z1;
  sm_status *st;
  if (is_lu) {
    st = sm__kctx_alloc_output(ctx, 0, dt, r, ad, &z0);
    if (!st) st = sm__kctx_alloc_output(ctx, 1, idx64 ? SM_INT64 : SM_INT32, r - 1, ad, &z1);
  } else {
    st = sm__kctx_alloc_output(ctx, 0, dt, r - 2, ad, &z0);
    if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, r - 2, ad, &z1);
  }
  if (st) return st;
  int64_t batch = 1;
  for (int i = 0; i < r - 2; i++) batch *= ad[i];
  if (batch == 0 || sm_tensor_num_elements(z0) + sm_tensor_num_elements(z1) == 0) return NULL; /* as in la_compute */
  if ((uint64_t)n > (uint64_t)1 << 30 || (uint64_t)(n * n) > SIZE_MAX / (2 * sizeof(zd)))
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: a %lld x %lld matrix is too large to factor", name, (long long)n,
                         (long long)n);
  zd *lu = sm__kctx_scratch(ctx, (size_t)(n * n) * sizeof(zd) + 2 * (size_t)n * sizeof(int64_t) + 1, &st);
  if (!lu) return st;
  int64_t *perm = (int64_t *)(lu + n * n), *p = perm + n;
  for (int64_t b = 0; b < batch; b++) {
    load_matrix(lu, sm_tensor_data(a), dt, b, n, 0);
    int zero = 0, swaps = lu_factor(lu, n, perm, &zero);
    if (is_lu) {
      if (zero) return sm_status_new(SM_INVALID_ARGUMENT, "Input is not invertible.");
      for (int64_t i = 0; i < n; i++) p[i] = i;
      for (int64_t k = 0; k < n; k++) {
        int64_t t = p[k];
        p[k] = p[perm[k]], p[perm[k]] = t;
      }
      for (int64_t i = 0; i < n * n; i++) put_z(sm_tensor_data(z0), dt, b * n * n + i, lu[i]);
      for (int64_t i = 0; i < n; i++) {
        if (idx64) ((int64_t *)sm_tensor_data(z1))[b * n + i] = p[i];
        else ((int32_t *)sm_tensor_data(z1))[b * n + i] = (int32_t)p[i];
      }
      continue;
    }
    zd sign = (swaps & 1) ? -1 : 1;
    double logabs = 0;
    for (int64_t i = 0; i < n; i++) {
      double m = cabs(lu[i * n + i]);
      if (m == 0) {
        sign = 0;
        logabs = -INFINITY;
        break;
      }
      sign *= lu[i * n + i] / m;
      logabs += log(m);
    }
    put_z(sm_tensor_data(z0), dt, b, sign);
    put_z(sm_tensor_data(z1), dt, b, logabs);
  }
  return NULL;
}

/* ---- Cholesky, MatrixTriangularSolve -------------------------------------------------------- */
/* Cholesky reads the lower triangle only (Eigen's LLT), writes L with a zero upper triangle; a
 * matrix that is not positive definite gets NaN in its lower triangle, as TF 2.21 gives (its upper
 * triangle is left unwritten there; here it is 0), not an error. */
static sm_status *cholesky_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *a = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a);
  if (!is_lu_dtype(dt)) return sm__math_bad_dtype("Cholesky", dt);
  sm_status *st = check_rank(a, 0);
  if (st) return st;
  const int64_t *ad = sm_tensor_dims(a);
  int64_t n = ad[r - 1];
  if (ad[r - 2] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix must be square.");
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, r, ad, &z))) return st;
  int64_t batch = n ? sm_tensor_num_elements(a) / (n * n) : 0;
  if (!batch) return NULL;
  zd *l = sm__kctx_scratch(ctx, (size_t)(n * n) * sizeof(zd), &st);
  if (!l) return st;
  const void *src = sm_tensor_data(a);
  void *dst = sm_tensor_data(z);
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t j = 0; j < n; j++) {
      double d = creal(get_z(src, dt, (b * n + j) * n + j));
      for (int64_t k = 0; k < j; k++) d -= creal(l[j * n + k] * conj(l[j * n + k]));
      if (!(d > 0)) { /* not positive definite: TF 2.21 gives NaN for the whole lower triangle */
        for (int64_t i = 0; i < n * n; i++) l[i] = (i / n >= i % n) ? NAN : 0;
        break;
      }
      double ljj = sqrt(d);
      l[j * n + j] = ljj;
      for (int64_t i = j + 1; i < n; i++) {
        zd v = get_z(src, dt, (b * n + i) * n + j);
        for (int64_t k = 0; k < j; k++) v -= l[i * n + k] * conj(l[j * n + k]);
        l[i * n + j] = v / ljj;
      }
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) put_z(dst, dt, (b * n + i) * n + j, l[i * n + j]);
  }
  return NULL;
}

/* The flat offset of batch index b of the broadcast batch shape od[0..rank) in a tensor whose
 * batch dims are d[0..dr) (right-aligned; a dim of 1 repeats). */
static int64_t bcast_batch(int64_t b, const int64_t *od, int rank, const int64_t *d, int dr) {
  int64_t off = 0, mul = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int64_t idx = b % od[i];
    b /= od[i];
    int k = i - (rank - dr);
    if (k >= 0) {
      if (d[k] != 1) off += idx * mul;
      mul *= d[k];
    }
  }
  return off;
}

/* MatrixTriangularSolve: the lower (or upper) triangle of matrix, adjointed when asked; batch dims
 * broadcast (TF's V2 kernel). A zero on the diagonal divides by zero, as TF's does. */
static sm_status *trisolve_prepare(const sm_node *node, void **state) {
  int lower = 1, adjoint = 0;
  sm_status *st = NULL;
  if (sm__node_attr(node, "lower")) st = sm__node_attr_bool(node, "lower", &lower);
  if (!st && sm__node_attr(node, "adjoint")) st = sm__node_attr_bool(node, "adjoint", &adjoint);
  if (st) return st;
  *state = (void *)(intptr_t)(1 + ((lower != 0) | (adjoint != 0) << 1));
  return NULL;
}

static sm_status *trisolve_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, lower = code & 1, adjoint = code >> 1 & 1;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *rhs = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a), rr = sm_tensor_rank(rhs);
  if (!is_lu_dtype(dt) || sm_tensor_dtype(rhs) != dt) return sm__math_bad_dtype("MatrixTriangularSolve", dt);
  sm_status *st = check_rank(a, 0);
  if (!st) st = check_rank(rhs, 1);
  if (st) return st;
  const int64_t *ad = sm_tensor_dims(a), *rd = sm_tensor_dims(rhs);
  int64_t n = ad[r - 1], k = rd[rr - 1];
  if (ad[r - 2] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Input matrix must be square.");
  if (rd[rr - 2] != n) {
    char s1[256], s2[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "In[0] mismatch In[1] shape: %lld vs. %lld: %s %s %d %d", (long long)n,
                         (long long)rd[rr - 2], sm_shape_str(r, ad, s1, sizeof s1), sm_shape_str(rr, rd, s2, sizeof s2),
                         lower, adjoint);
  }
  sm_bcast bc;
  const int ranks[2] = {r - 2, rr - 2};
  const int64_t *bd[2] = {ad, rd};
  if (!sm__math_bcast_init(&bc, 2, ranks, bd)) {
    char s1[256], s2[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", sm_shape_str(r, ad, s1, sizeof s1),
                         sm_shape_str(rr, rd, s2, sizeof s2));
  }
  int64_t od[SM_MAX_RANK];
  int orank = bc.out_rank + 2;
  if (orank > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "MatrixTriangularSolve: rank %d too large", orank);
  memcpy(od, bc.out_dims, (size_t)bc.out_rank * sizeof *od);
  od[orank - 2] = n, od[orank - 1] = k;
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, orank, od, &z))) return st;
  int64_t batch = bc.n;
  if (batch == 0 || n * k == 0) return NULL;
  zd *m = sm__kctx_scratch(ctx, (size_t)(n * n + n * k) * sizeof(zd), &st);
  if (!m) return st;
  zd *x = m + n * n;
  const void *asrc = sm_tensor_data(a), *bsrc = sm_tensor_data(rhs);
  void *dst = sm_tensor_data(z);
  int low = lower != adjoint; /* the triangle of the matrix actually solved with */
  for (int64_t b = 0; b < batch; b++) {
    int64_t ab = bcast_batch(b, bc.out_dims, bc.out_rank, ad, r - 2);
    int64_t rb = bcast_batch(b, bc.out_dims, bc.out_rank, rd, rr - 2);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        int in = lower ? j <= i : j >= i;
        zd v = in ? get_z(asrc, dt, (ab * n + i) * n + j) : 0;
        if (adjoint)
          m[j * n + i] = conj(v);
        else
          m[i * n + j] = v;
      }
    for (int64_t i = 0; i < n * k; i++) x[i] = get_z(bsrc, dt, rb * n * k + i);
    for (int64_t t = 0; t < n; t++) {
      int64_t i = low ? t : n - 1 - t;
      for (int64_t c = 0; c < k; c++) {
        zd v = x[i * k + c];
        if (low)
          for (int64_t j = 0; j < i; j++) v -= m[i * n + j] * x[j * k + c];
        else
          for (int64_t j = i + 1; j < n; j++) v -= m[i * n + j] * x[j * k + c];
        x[i * k + c] = v / m[i * n + i];
      }
    }
    for (int64_t i = 0; i < n * k; i++) put_z(dst, dt, b * n * k + i, x[i]);
  }
  return NULL;
}

/* ---- Qr -------------------------------------------------------------------------------------
 * Householder QR as Eigen's HouseholderQR (which TF's Qr runs): column k's reflector has
 * beta = -sign(re a_kk) * |a_k|, R_kk = beta, tau = conj((beta - a_kk) / beta), v = [1, tail /
 * (a_kk - beta)], H_k = I - tau v v^H; a column with nothing below the diagonal gets tau 0. Q is
 * the product of the reflectors with conj(tau) applied to the identity's first M (full_matrices)
 * or P = min(M, N) columns. */
static void house_apply(zd *a, int64_t lda, int64_t rows, int64_t c0, int64_t c1, const zd *v, zd tau) {
  if (tau == 0) return;
  for (int64_t j = c0; j < c1; j++) { /* a[:, j] -= tau * v * (v^H a[:, j]) */
    zd dot = 0;
    for (int64_t i = 0; i < rows; i++) dot += conj(v[i]) * a[i * lda + j];
    dot *= tau;
    for (int64_t i = 0; i < rows; i++) a[i * lda + j] -= v[i] * dot;
  }
}

static sm_status *qr_prepare(const sm_node *node, void **state) {
  int full = 0;
  if (sm__node_attr(node, "full_matrices")) {
    sm_status *st = sm__node_attr_bool(node, "full_matrices", &full);
    if (st) return st;
  }
  *state = (void *)(intptr_t)(1 + (full != 0));
  return NULL;
}

static sm_status *qr_compute(const void *state, sm_kctx *ctx) {
  int full = (int)(intptr_t)state - 1;
  const sm_tensor *a = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(a), r = sm_tensor_rank(a);
  if (!is_lu_dtype(dt)) return sm__math_bad_dtype("Qr", dt);
  sm_status *st = check_rank(a, 0);
  if (st) return st;
  const int64_t *ad = sm_tensor_dims(a);
  int64_t m = ad[r - 2], n = ad[r - 1], p = m < n ? m : n, qc = full ? m : p, rr = full ? m : p;
  int64_t qd[SM_MAX_RANK], rd[SM_MAX_RANK];
  memcpy(qd, ad, (size_t)r * sizeof *qd);
  memcpy(rd, ad, (size_t)r * sizeof *rd);
  qd[r - 1] = qc, rd[r - 2] = rr;
  sm_tensor *q, *rt;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, r, qd, &q)) || (st = sm__kctx_alloc_output(ctx, 1, dt, r, rd, &rt)))
    return st;
  int64_t batch = 1;
  for (int i = 0; i < r - 2; i++) batch *= ad[i];
  /* both outputs empty (n == 0, reduced): nothing to walk, however large the batch dim */
  if (batch == 0 || m == 0 || sm_tensor_num_elements(q) + sm_tensor_num_elements(rt) == 0) return NULL;
  zd *w = sm__kctx_scratch(ctx, (size_t)(m * n + m * m + p * m + p) * sizeof(zd), &st);
  if (!w) return st;
  zd *qm = w + m * n, *vs = qm + m * m, *taus = vs + p * m;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t i = 0; i < m * n; i++) w[i] = get_z(sm_tensor_data(a), dt, b * m * n + i);
    for (int64_t k = 0; k < p; k++) {
      zd c0 = w[k * n + k], *v = vs + k * m;
      double tail = 0;
      for (int64_t i = k + 1; i < m; i++) tail += creal(w[i * n + k] * conj(w[i * n + k]));
      zd tau = 0, beta = creal(c0);
      memset(v, 0, (size_t)m * sizeof *v);
      v[k] = 1;
      if (tail > DBL_MIN || cimag(c0) * cimag(c0) > DBL_MIN) {
        double bn = sqrt(creal(c0 * conj(c0)) + tail);
        beta = creal(c0) >= 0 ? -bn : bn;
        for (int64_t i = k + 1; i < m; i++) v[i] = w[i * n + k] / (c0 - beta);
        tau = conj((beta - c0) / beta);
      }
      taus[k] = tau;
      w[k * n + k] = beta;
      for (int64_t i = k + 1; i < m; i++) w[i * n + k] = 0;
      /* rows k.. of columns k+1..: H_k = I - tau v v^H from the left (Eigen's hCoeffs) */
      house_apply(w + k * n, n, m - k, k + 1, n, v + k, tau);
    }
    for (int64_t i = 0; i < m * m; i++) qm[i] = (i / m == i % m);
    /* Q = householderSequence(qr, conj(hCoeffs)): the conjugate coefficients, last reflector first */
    for (int64_t k = p - 1; k >= 0; k--) house_apply(qm + k * m, m, m - k, 0, m, vs + k * m + k, conj(taus[k]));
    void *qo = sm_tensor_data(q), *ro = sm_tensor_data(rt);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < qc; j++) put_z(qo, dt, (b * m + i) * qc + j, qm[i * m + j]);
    for (int64_t i = 0; i < rr; i++)
      for (int64_t j = i; j < n; j++) put_z(ro, dt, (b * rr + i) * n + j, w[i * n + j]);
  }
  return NULL;
}

#define LA(name) {name, la_prepare, la_compute, NULL, 0}
const sm_kernel sm_kernels_linalg[] = {
    {"MatrixBandPart", NULL, band_part_compute, NULL, 0},
    LA("MatrixSolve"),
    LA("MatrixInverse"),
    LA("MatrixDeterminant"),
    {"LogMatrixDeterminant", lu_op_prepare, lu_op_compute, NULL, 0},
    {"Lu", lu_op_prepare, lu_op_compute, NULL, 0},
    {"Cholesky", NULL, cholesky_compute, NULL, 0},
    {"Qr", qr_prepare, qr_compute, NULL, 0},
    {"MatrixTriangularSolve", trisolve_prepare, trisolve_compute, NULL, 0},
#define DG(name) {name, dg_prepare, dg_compute, NULL, 0}
    DG("MatrixDiag"), DG("MatrixDiagV2"), DG("MatrixDiagV3"), DG("MatrixDiagPart"), DG("MatrixDiagPartV2"),
    DG("MatrixDiagPartV3"), DG("MatrixSetDiag"), DG("MatrixSetDiagV2"), DG("MatrixSetDiagV3"),
#undef DG
    {0},
};
