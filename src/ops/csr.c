/* csr.c - TensorFlow's CSRSparseMatrix variant and the ops its CPU kernels register
 * (kernels/sparse/ *.cc): DenseToCSRSparseMatrix, SparseTensorToCSRSparseMatrix, CSRSparseMatrixToDense,
 * CSRSparseMatrixToSparseTensor, CSRSparseMatrixComponents, SparseMatrixNNZ, SparseMatrixTranspose,
 * SparseMatrixMatMul and SparseMatrixSparseMatMul, for float, double, complex64 and complex128, rank 2
 * or batched rank 3, with TF's messages.
 *
 * A matrix is a variant object (base/variant.h, type "tensorflow::CSRSparseMatrix") holding TF's
 * components: dense_shape, batch_pointers [B+1], row_pointers [B*(rows+1)], col_indices [nnz] and
 * values [nnz], all int32 positions as in TF. It is immutable once made. Like TF, the conversions
 * keep the entries in the order the indices give them (they assume row-major sorted input) and the
 * products keep structural zeros (an entry whose terms cancel stays stored). Arithmetic is done in
 * double complex and rounded to the matrix's dtype.
 *
 * Not here: SparseMatrixAdd, SparseMatrixMul, SparseMatrixSoftmax(Grad) and SparseMatrixZeros, which
 * TF 2.21's CPU has no kernel for; SparseMatrixOrderingAMD and SparseMatrixSparseCholesky (Eigen's
 * AMD ordering), not built yet. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/variant.h"
#include "runtime/kernel.h"
#include "savedmodel/dtype.h"

#define CSR_TYPE "tensorflow::CSRSparseMatrix"
/* The most row pointers (batch x (rows + 1)) one matrix may hold: a hostile dense_shape is refused. */
#define CSR_MAX_ROW_PTRS ((int64_t)1 << 28)

typedef double complex cplx;

typedef struct csr {
  sm_variant v; /* first */
  int dtype, rank;
  int64_t shape[3]; /* rank 2: shape[0] = 1 (one batch) */
  int64_t batch, rows, cols, nnz;
  int32_t *bptr, *rptr, *col;
  void *val;
} csr;

static void csr_release(sm_variant *v) {
  csr *m = (csr *)v;
  free(m->bptr), free(m->rptr), free(m->col), free(m->val);
  free(m);
}

static const char *tname(int dt) { return sm_dtype_name(dt) + 3; /* "DT_FLOAT" -> "FLOAT" */ }

static const char *tf_name(int dt) {
  switch (dt) {
    case SM_FLOAT: return "float";
    case SM_DOUBLE: return "double";
    case SM_COMPLEX64: return "complex64";
    case SM_COMPLEX128: return "complex128";
    default: return tname(dt);
  }
}

static int csr_dtype_ok(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

static cplx ld(int dt, const void *p, int64_t i) {
  switch (dt) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_COMPLEX64: {
      float complex z; /* C11 6.2.5: laid out as its two parts */
      memcpy(&z, (const float *)p + 2 * i, sizeof z);
      return z;
    }
    default: {
      cplx z;
      memcpy(&z, (const double *)p + 2 * i, sizeof z);
      return z;
    }
  }
}

static void st(int dt, void *p, int64_t i, cplx v) {
  switch (dt) {
    case SM_FLOAT: ((float *)p)[i] = (float)creal(v); break;
    case SM_DOUBLE: ((double *)p)[i] = creal(v); break;
    case SM_COMPLEX64: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
    default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
  }
}

static int is_cplx(int dt) { return dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

/* A new matrix of dtype dt and shape dims (rank 2 or 3) with room for nnz entries (row pointers
 * zeroed). */
static sm_status *csr_new(const sm_kctx *ctx, int dt, int rank, const int64_t *dims, int64_t nnz, csr **out) {
  *out = NULL;
  int64_t b = rank == 3 ? dims[0] : 1, r = dims[rank - 2], c = dims[rank - 1];
  if (b < 0 || r < 0 || c < 0 || r > INT32_MAX - 1 || c > INT32_MAX || nnz > INT32_MAX || nnz < 0 ||
      (b > 0 && (r + 1) > CSR_MAX_ROW_PTRS / b) || b > CSR_MAX_ROW_PTRS)
    return sm_status_new(SM_INVALID_ARGUMENT, "CSRSparseMatrix of shape [%lld,%lld,%lld] with %lld entries is too large",
                         (long long)b, (long long)r, (long long)c, (long long)nnz);
  size_t es = sm_dtype_size(dt), nrp = (size_t)(b * (r + 1));
  sm_status *s = sm__kctx_charge_check(ctx, (size_t)(b + 1 + (int64_t)nrp + nnz) * 4 + (size_t)nnz * es, "a CSRSparseMatrix");
  if (s) return s;
  csr *m = calloc(1, sizeof *m);
  if (m) {
    sm__variant_init(&m->v, CSR_TYPE, csr_release);
    m->bptr = calloc((size_t)b + 1, 4);
    m->rptr = calloc(nrp ? nrp : 1, 4);
    m->col = calloc(nnz ? (size_t)nnz : 1, 4);
    m->val = calloc(nnz ? (size_t)nnz : 1, es);
  }
  if (!m || !m->bptr || !m->rptr || !m->col || !m->val) {
    if (m) csr_release(&m->v);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a CSRSparseMatrix of %lld entries", (long long)nnz);
  }
  m->dtype = dt, m->rank = rank, m->batch = b, m->rows = r, m->cols = c, m->nnz = nnz;
  for (int i = 0; i < rank; i++) m->shape[i] = dims[i];
  *out = m;
  return NULL;
}

static sm_status *set_matrix_output(sm_kctx *ctx, int i, csr *m) {
  sm_tensor *t;
  sm_status *s = sm__kctx_alloc_output(ctx, i, SM_VARIANT, 0, NULL, &t);
  if (s) {
    sm__variant_unref(&m->v);
    return s;
  }
  sm__tensor_variants(t)[0] = &m->v;
  return NULL;
}

/* Input i as a matrix; dt >= 0: it must be of that dtype. */
static sm_status *input_matrix(sm_kctx *ctx, int i, int dt, const csr **out) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  sm_variant **vs = t && sm_tensor_dtype(t) == SM_VARIANT && sm_tensor_num_elements(t) == 1 ? sm__tensor_variants(t) : NULL;
  sm_variant *v = vs ? vs[0] : NULL;
  if (!v || strcmp(v->type_name, CSR_TYPE))
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be a CSRSparseMatrix scalar, got %s", i,
                         v ? v->type_name : t ? sm_dtype_name(sm_tensor_dtype(t)) : "nothing");
  const csr *m = (const csr *)v;
  if (m->batch == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Variant input %d is not valid.", i);
  if (dt >= 0 && m->dtype != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "Asked for a CSRSparseMatrix of type %s but saw dtype: %s", tf_name(dt),
                         tf_name(m->dtype));
  *out = m;
  return NULL;
}

/* Row pointers of batch b -> cumulative (they hold counts at [r + 1]), batch pointers from them. */
static void finish_pointers(csr *m) {
  for (int64_t b = 0; b < m->batch; b++) {
    int32_t *rp = m->rptr + b * (m->rows + 1);
    for (int64_t r = 0; r < m->rows; r++) rp[r + 1] += rp[r];
    m->bptr[b + 1] = m->bptr[b] + rp[m->rows];
  }
}

/* ---- attrs -------------------------------------------------------------------------------------- */

typedef struct {
  int dtype; /* "type" or "T" */
  int ta, tb, adja, adjb, tout, cout, conj;
} csr_attrs;

static sm_status *csr_prepare(const sm_node *node, void **state) {
  csr_attrs *a = calloc(1, sizeof *a);
  if (!a) return sm_status_new(SM_NO_MEMORY, "out of memory");
  a->dtype = -1;
  sm_status *s = NULL;
  const char *tn = sm__node_attr(node, "type") ? "type" : sm__node_attr(node, "T") ? "T" : NULL;
  if (tn && !(s = sm__node_attr_type(node, tn, &a->dtype)) && !csr_dtype_ok(a->dtype))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Value for attr '%s' of %s is not in the list of allowed values: float, double, complex64, complex128",
                      tn, tf_name(a->dtype));
  struct {
    const char *name;
    int *v;
  } flags[] = {{"transpose_a", &a->ta}, {"transpose_b", &a->tb}, {"adjoint_a", &a->adja}, {"adjoint_b", &a->adjb},
               {"transpose_output", &a->tout}, {"conjugate_output", &a->cout}, {"conjugate", &a->conj}};
  for (size_t i = 0; !s && i < sizeof flags / sizeof flags[0]; i++)
    if (sm__node_attr(node, flags[i].name)) s = sm__node_attr_bool(node, flags[i].name, flags[i].v);
  if (!s && a->ta && a->adja) s = sm_status_new(SM_INVALID_ARGUMENT, "Only one of adjoint_a and transpose_a may be true.");
  if (!s && a->tb && a->adjb) s = sm_status_new(SM_INVALID_ARGUMENT, "Only one of adjoint_b and transpose_b may be true.");
  if (s) {
    free(a);
    return s;
  }
  *state = a;
  return NULL;
}

static void shape_sep(const int64_t *d, int rank, const char *sep, char *buf, size_t n) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? sep : "", (long long)d[i]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

static void shape_text(const int64_t *d, int rank, char *buf, size_t n) { shape_sep(d, rank, ",", buf, n); }

/* ---- conversions in ----------------------------------------------------------------------------- */

static sm_status *dense_to_csr_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *ix = sm__kctx_input(ctx, 1);
  int rank = sm_tensor_rank(x);
  const int64_t *dims = sm_tensor_dims(x);
  char sh[128];
  shape_text(dims, rank, sh, sizeof sh);
  if (rank != 2 && rank != 3) return sm_status_new(SM_INVALID_ARGUMENT, "params must have rank == 2 or 3; but saw shape: %s", sh);
  if (sm_tensor_rank(ix) != 2) {
    char is[128];
    shape_text(sm_tensor_dims(ix), sm_tensor_rank(ix), is, sizeof is);
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be a matrix, but saw shape: %s", is);
  }
  if (sm_tensor_dims(ix)[1] != rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "indices.shape[1] must be equal to the rank of params, but saw: %lld vs. %d",
                         (long long)sm_tensor_dims(ix)[1], rank);
  if (!csr_dtype_ok(sm_tensor_dtype(x)))
    return sm_status_new(SM_INVALID_ARGUMENT, "DenseToCSRSparseMatrix: unsupported dtype %s", tf_name(sm_tensor_dtype(x)));
  int64_t nnz = sm_tensor_dims(ix)[0];
  const int64_t *id = sm_tensor_data(ix);
  for (int64_t i = 0; i < nnz; i++)
    for (int k = 0; k < rank; k++)
      if (id[i * rank + k] < 0 || id[i * rank + k] >= dims[k]) {
        char buf[160];
        shape_sep(id + i * rank, rank, ", ", buf, sizeof buf);
        shape_text(dims, rank, sh, sizeof sh);
        return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = %s does not index into param shape %s", (long long)i, buf, sh);
      }
  csr *m;
  sm_status *s = csr_new(ctx, sm_tensor_dtype(x), rank, dims, nnz, &m);
  if (s) return s;
  const void *xd = sm_tensor_data(x);
  int64_t r = m->rows, c = m->cols;
  for (int64_t i = 0; i < nnz; i++) {
    const int64_t *e = id + i * rank;
    int64_t b = rank == 3 ? e[0] : 0, row = e[rank - 2], cc = e[rank - 1];
    m->rptr[b * (r + 1) + row + 1]++;
    m->col[i] = (int32_t)cc;
    st(m->dtype, m->val, i, ld(m->dtype, xd, (b * r + row) * c + cc));
  }
  finish_pointers(m);
  return set_matrix_output(ctx, 0, m);
}

static sm_status *sparse_to_csr_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *shp = sm__kctx_input(ctx, 2);
  if (sm_tensor_rank(ix) != 2 || sm_tensor_rank(vals) != 1 || sm_tensor_rank(shp) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "SparseTensorToCSRSparseMatrix: indices must be a matrix, values and dense_shape vectors");
  int64_t rank = sm_tensor_dims(shp)[0], nnz = sm_tensor_dims(ix)[0];
  if (sm_tensor_dims(ix)[1] != rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Index rank (%lld) and shape rank (%lld) do not match", (long long)sm_tensor_dims(ix)[1],
                         (long long)rank);
  if (rank != 2 && rank != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "SparseTensor must have rank 2 or 3; but indices has rank: %lld", (long long)rank);
  if (sm_tensor_dims(vals)[0] != nnz)
    return sm_status_new(SM_INVALID_ARGUMENT, "Number of elements in indices (%lld) and values (%lld) do not match", (long long)nnz,
                         (long long)sm_tensor_dims(vals)[0]);
  if (!csr_dtype_ok(sm_tensor_dtype(vals)))
    return sm_status_new(SM_INVALID_ARGUMENT, "SparseTensorToCSRSparseMatrix: unsupported dtype %s", tf_name(sm_tensor_dtype(vals)));
  const int64_t *id = sm_tensor_data(ix), *dims = sm_tensor_data(shp);
  for (int64_t i = 0; i < nnz; i++)
    for (int64_t k = 0; k < rank; k++)
      if (id[i * rank + k] < 0 || id[i * rank + k] >= dims[k]) {
        char buf[160];
        shape_sep(id + i * rank, (int)rank, ", ", buf, sizeof buf);
        return sm_status_new(SM_INVALID_ARGUMENT, "Sparse index tuple indices[%lld, :] = %s is out of bounds", (long long)i, buf);
      }
  csr *m;
  sm_status *s = csr_new(ctx, sm_tensor_dtype(vals), (int)rank, dims, nnz, &m);
  if (s) return s;
  memcpy(m->val, sm_tensor_data(vals), (size_t)nnz * sm_dtype_size(m->dtype));
  for (int64_t i = 0; i < nnz; i++) {
    const int64_t *e = id + i * rank;
    int64_t b = rank == 3 ? e[0] : 0;
    m->rptr[b * (m->rows + 1) + e[rank - 2] + 1]++;
    m->col[i] = (int32_t)e[rank - 1];
  }
  finish_pointers(m);
  return set_matrix_output(ctx, 0, m);
}

/* ---- conversions out ---------------------------------------------------------------------------- */

static sm_status *csr_to_dense_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, a->dtype, &m);
  if (s) return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, m->dtype, m->rank, m->shape, &out))) return s;
  void *od = sm_tensor_data(out);
  for (int64_t b = 0; b < m->batch; b++) {
    const int32_t *rp = m->rptr + b * (m->rows + 1);
    for (int64_t r = 0; r < m->rows; r++)
      for (int64_t j = rp[r]; j < rp[r + 1]; j++) {
        int64_t k = m->bptr[b] + j;
        st(m->dtype, od, (b * m->rows + r) * m->cols + m->col[k], ld(m->dtype, m->val, k));
      }
  }
  return NULL;
}

static sm_status *csr_to_sparse_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, a->dtype, &m);
  if (s) return s;
  int64_t id[2] = {m->nnz, m->rank}, rk = m->rank;
  sm_tensor *ix, *vals, *shp;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, id, &ix)) || (s = sm__kctx_alloc_output(ctx, 1, m->dtype, 1, &m->nnz, &vals)) ||
      (s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &rk, &shp)))
    return s;
  int64_t *ip = sm_tensor_data(ix), *sp = sm_tensor_data(shp);
  memcpy(sp, m->shape, (size_t)rk * sizeof *sp);
  if (m->nnz) memcpy(sm_tensor_data(vals), m->val, (size_t)m->nnz * sm_dtype_size(m->dtype));
  for (int64_t b = 0; b < m->batch; b++) {
    const int32_t *rp = m->rptr + b * (m->rows + 1);
    for (int64_t r = 0; r < m->rows; r++)
      for (int64_t j = rp[r]; j < rp[r + 1]; j++) {
        int64_t *e = ip + (m->bptr[b] + j) * rk;
        if (rk == 3) *e++ = b;
        e[0] = r, e[1] = m->col[m->bptr[b] + j];
      }
  }
  return NULL;
}

static sm_status *csr_components_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, a->dtype, &m);
  if (s) return s;
  const sm_tensor *it = sm__kctx_input(ctx, 1);
  if (sm_tensor_num_elements(it) != 1 || sm_tensor_rank(it) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "index must be a scalar");
  int32_t b = *(const int32_t *)sm_tensor_data(it);
  if (b < 0 || b >= m->batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "index (%d) not in [0, %lld)", (int)b, (long long)m->batch);
  int64_t nr = m->rows + 1, n = m->bptr[b + 1] - m->bptr[b];
  sm_tensor *rp, *ci, *vs;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 1, &nr, &rp)) || (s = sm__kctx_alloc_output(ctx, 1, SM_INT32, 1, &n, &ci)) ||
      (s = sm__kctx_alloc_output(ctx, 2, m->dtype, 1, &n, &vs)))
    return s;
  memcpy(sm_tensor_data(rp), m->rptr + b * nr, (size_t)nr * 4);
  if (n) {
    memcpy(sm_tensor_data(ci), m->col + m->bptr[b], (size_t)n * 4);
    size_t es = sm_dtype_size(m->dtype);
    memcpy(sm_tensor_data(vs), (const char *)m->val + (size_t)m->bptr[b] * es, (size_t)n * es);
  }
  return NULL;
}

static sm_status *csr_nnz_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, -1, &m);
  if (s) return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT32, m->rank == 3 ? 1 : 0, &m->batch, &out))) return s;
  int32_t *o = sm_tensor_data(out);
  for (int64_t b = 0; b < m->batch; b++) o[b] = m->bptr[b + 1] - m->bptr[b];
  return NULL;
}

/* ---- transpose ---------------------------------------------------------------------------------- */

/* The (conjugate) transpose of m: entries of each new row in the order of their old rows. */
static sm_status *csr_transpose(const sm_kctx *ctx, const csr *m, int cj, csr **out) {
  int64_t dims[3];
  memcpy(dims, m->shape, sizeof dims);
  dims[m->rank - 2] = m->cols, dims[m->rank - 1] = m->rows;
  csr *t;
  sm_status *s = csr_new(ctx, m->dtype, m->rank, dims, m->nnz, &t);
  if (s) return s;
  int64_t tr = t->rows;
  for (int64_t b = 0; b < m->batch; b++)
    for (int64_t k = m->bptr[b]; k < m->bptr[b + 1]; k++) t->rptr[b * (tr + 1) + m->col[k] + 1]++;
  finish_pointers(t);
  /* next free slot of each new row, reusing a pass over the old rows in order */
  int32_t *next = malloc((size_t)(tr ? tr : 1) * 4);
  if (!next) {
    csr_release(&t->v);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when transposing a CSRSparseMatrix");
  }
  for (int64_t b = 0; b < m->batch; b++) {
    const int32_t *rp = m->rptr + b * (m->rows + 1), *tp = t->rptr + b * (tr + 1);
    memcpy(next, tp, (size_t)tr * 4);
    for (int64_t r = 0; r < m->rows; r++)
      for (int64_t j = rp[r]; j < rp[r + 1]; j++) {
        int64_t k = m->bptr[b] + j, d = t->bptr[b] + next[m->col[k]]++;
        t->col[d] = (int32_t)r;
        cplx v = ld(m->dtype, m->val, k);
        st(t->dtype, t->val, d, cj ? conj(v) : v);
      }
  }
  free(next);
  *out = t;
  return NULL;
}

static sm_status *transpose_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, a->dtype, &m);
  csr *t;
  if (s || (s = csr_transpose(ctx, m, a->conj && is_cplx(m->dtype), &t))) return s;
  return set_matrix_output(ctx, 0, t);
}

/* ---- products ----------------------------------------------------------------------------------- */

static sm_status *matmul_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *m;
  sm_status *s = input_matrix(ctx, 0, -1, &m);
  if (s) return s;
  const sm_tensor *bt = sm__kctx_input(ctx, 1);
  int dt = m->dtype;
  if (sm_tensor_dtype(bt) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input types don't match.  a.dtype == %s vs. b.dtype == %s", tf_name(dt),
                         tf_name(sm_tensor_dtype(bt)));
  if (sm_tensor_rank(bt) != m->rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Ranks of a and b must match, saw: %d vs. %d.", m->rank, sm_tensor_rank(bt));
  const int64_t *bd = sm_tensor_dims(bt);
  int rk = m->rank;
  if (rk == 3 && bd[0] != m->batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "Batch sizes of a and b must match, saw: %lld vs. %lld.", (long long)m->batch,
                         (long long)bd[0]);
  int ta = a->ta || a->adja, tb = a->tb || a->adjb;
  int64_t am = ta ? m->cols : m->rows, ak = ta ? m->rows : m->cols;
  int64_t bk = tb ? bd[rk - 1] : bd[rk - 2], bn = tb ? bd[rk - 2] : bd[rk - 1], brows = bd[rk - 2], bcols = bd[rk - 1];
  if (ak != bk) {
    char sa[96], sb[96];
    shape_text(m->shape, rk, sa, sizeof sa);
    shape_text(bd, rk, sb, sizeof sb);
    return sm_status_new(SM_INVALID_ARGUMENT, "Inner product dimensions of A and B do not agree. Shapes are: %s vs. %s", sa, sb);
  }
  int64_t od[3] = {m->batch, a->tout ? bn : am, a->tout ? am : bn};
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, dt, rk, od + (3 - rk), &out))) return s;
  if (!am || !bn) return NULL;
  cplx *acc = sm__kctx_scratch(ctx, (size_t)(am * bn) * sizeof *acc, &s);
  if (!acc) return s;
  const void *bdat = sm_tensor_data(bt);
  void *o = sm_tensor_data(out);
  int ca = a->adja && is_cplx(dt), cb = a->adjb && is_cplx(dt), co = a->cout && is_cplx(dt);
  for (int64_t b = 0; b < m->batch; b++) {
    memset(acc, 0, (size_t)(am * bn) * sizeof *acc);
    const int32_t *rp = m->rptr + b * (m->rows + 1);
    int64_t boff = b * brows * bcols;
    for (int64_t r = 0; r < m->rows; r++)
      for (int64_t j = rp[r]; j < rp[r + 1]; j++) {
        int64_t k = m->bptr[b] + j, c = m->col[k];
        cplx v = ld(dt, m->val, k);
        if (ca) v = conj(v);
        int64_t i = ta ? c : r, kk = ta ? r : c; /* op(a)[i][kk] = v */
        cplx *row = acc + i * bn;
        for (int64_t n = 0; n < bn; n++) {
          cplx w = tb ? ld(dt, bdat, boff + n * bcols + kk) : ld(dt, bdat, boff + kk * bcols + n);
          row[n] += v * (cb ? conj(w) : w);
        }
      }
    int64_t ooff = b * am * bn;
    for (int64_t i = 0; i < am; i++)
      for (int64_t n = 0; n < bn; n++) {
        cplx v = acc[i * bn + n];
        st(dt, o, ooff + (a->tout ? n * am + i : i * bn + n), co ? conj(v) : v);
      }
  }
  return NULL;
}

/* op(x): x itself, its transpose or its adjoint (a new reference or a new matrix). */
static sm_status *op_of(const sm_kctx *ctx, const csr *x, int t, int adj, csr **out) {
  if (!t && !adj) {
    *out = (csr *)sm__variant_ref((sm_variant *)&x->v);
    return NULL;
  }
  return csr_transpose(ctx, x, adj && is_cplx(x->dtype), out);
}

static sm_status *spmatmul_compute(const void *state, sm_kctx *ctx) {
  const csr_attrs *a = state;
  const csr *ma, *mb;
  sm_status *s = input_matrix(ctx, 0, a->dtype, &ma);
  if (!s) s = input_matrix(ctx, 1, a->dtype, &mb);
  if (s) return s;
  if (ma->rank != mb->rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs a and b must have the same rank, saw: %d vs. %d", ma->rank, mb->rank);
  if (ma->batch != mb->batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "Batch sizes of a and b must match, saw: %lld vs. %lld", (long long)ma->batch,
                         (long long)mb->batch);
  int64_t ak = (a->ta || a->adja) ? ma->rows : ma->cols, bk = (a->tb || a->adjb) ? mb->cols : mb->rows;
  if (ak != bk) {
    char sa[96], sb[96];
    shape_text(ma->shape, ma->rank, sa, sizeof sa);
    shape_text(mb->shape, mb->rank, sb, sizeof sb);
    return sm_status_new(SM_INVALID_ARGUMENT, "Inner product dimensions of A and B do not agree.  Shapes are: %s vs. %s", sa, sb);
  }
  csr *oa = NULL, *ob = NULL, *c = NULL;
  if ((s = op_of(ctx, ma, a->ta, a->adja, &oa)) || (s = op_of(ctx, mb, a->tb, a->adjb, &ob))) goto done;
  int dt = ma->dtype;
  int64_t M = oa->rows, N = ob->cols, B = oa->batch;
  /* Gustavson: a dense accumulator and a mark per column of the row being made */
  cplx *acc = sm__kctx_scratch(ctx, (size_t)(N ? N : 1) * sizeof *acc, &s);
  int32_t *mark = acc ? sm__kctx_scratch(ctx, (size_t)(N ? N : 1) * 4, &s) : NULL;
  int32_t *cols = mark ? sm__kctx_scratch(ctx, (size_t)(N ? N : 1) * 4, &s) : NULL;
  if (!cols) goto done;
  /* first pass: the structure's size */
  int64_t total = 0;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t i = 0; i < N; i++) mark[i] = -1;
    const int32_t *ap = oa->rptr + b * (M + 1), *bp = ob->rptr + b * (ob->rows + 1);
    for (int64_t r = 0; r < M; r++)
      for (int64_t j = oa->bptr[b] + ap[r]; j < oa->bptr[b] + ap[r + 1]; j++) {
        int64_t kk = oa->col[j];
        for (int64_t q = ob->bptr[b] + bp[kk]; q < ob->bptr[b] + bp[kk + 1]; q++)
          if (mark[ob->col[q]] != (int32_t)r) mark[ob->col[q]] = (int32_t)r, total++;
      }
  }
  if (total > INT32_MAX) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "SparseMatrixSparseMatMul: the product has %lld entries, more than int32 positions hold",
                      (long long)total);
    goto done;
  }
  int64_t dims[3];
  memcpy(dims, oa->shape, sizeof dims);
  dims[oa->rank - 1] = N;
  if ((s = csr_new(ctx, dt, oa->rank, dims, total, &c))) goto done;
  for (int64_t i = 0; i < N; i++) mark[i] = -1;
  int64_t w = 0;
  for (int64_t b = 0; b < B; b++) {
    const int32_t *ap = oa->rptr + b * (M + 1), *bp = ob->rptr + b * (ob->rows + 1);
    int32_t *cp = c->rptr + b * (M + 1);
    int64_t start = w;
    for (int64_t r = 0; r < M; r++) {
      int64_t nc = 0;
      for (int64_t j = oa->bptr[b] + ap[r]; j < oa->bptr[b] + ap[r + 1]; j++) {
        int64_t kk = oa->col[j];
        cplx v = ld(dt, oa->val, j);
        for (int64_t q = ob->bptr[b] + bp[kk]; q < ob->bptr[b] + bp[kk + 1]; q++) {
          int32_t col = ob->col[q];
          if (mark[col] != (int32_t)r) mark[col] = (int32_t)r, acc[col] = 0, cols[nc++] = col;
          acc[col] += v * ld(dt, ob->val, q);
        }
      }
      /* sorted columns (insertion sort: a row's entries are few) */
      for (int64_t i = 1; i < nc; i++) {
        int32_t x = cols[i];
        int64_t j = i;
        for (; j > 0 && cols[j - 1] > x; j--) cols[j] = cols[j - 1];
        cols[j] = x;
      }
      for (int64_t i = 0; i < nc; i++) c->col[w] = cols[i], st(dt, c->val, w++, acc[cols[i]]);
      cp[r + 1] = (int32_t)(w - start);
    }
    for (int64_t i = 0; i < N; i++) mark[i] = -1;
    c->bptr[b + 1] = (int32_t)w;
  }
  s = set_matrix_output(ctx, 0, c);
  c = NULL;
done:
  if (oa) sm__variant_unref(&oa->v);
  if (ob) sm__variant_unref(&ob->v);
  if (c) sm__variant_unref(&c->v);
  return s;
}

const sm_kernel sm_kernels_csr[] = {
    {"DenseToCSRSparseMatrix", NULL, dense_to_csr_compute, NULL, 0},
    {"SparseTensorToCSRSparseMatrix", NULL, sparse_to_csr_compute, NULL, 0},
    {"CSRSparseMatrixToDense", csr_prepare, csr_to_dense_compute, free, 0},
    {"CSRSparseMatrixToSparseTensor", csr_prepare, csr_to_sparse_compute, free, 0},
    {"CSRSparseMatrixComponents", csr_prepare, csr_components_compute, free, 0},
    {"SparseMatrixNNZ", NULL, csr_nnz_compute, NULL, 0},
    {"SparseMatrixTranspose", csr_prepare, transpose_compute, free, 0},
    {"SparseMatrixMatMul", csr_prepare, matmul_compute, free, 0},
    {"SparseMatrixSparseMatMul", csr_prepare, spmatmul_compute, free, 0},
    {0},
};
