/* sparse.c - the sparse kernel family: the SparseTensor ops tf.function code reaches through
 * tf.sparse and tf.nn's sparse embedding lookups (found missing by tools/sweep_ops.py, session 17):
 * SparseSegmentSum / Mean / SqrtN and their WithNumSegments forms
 * (tf.nn.embedding_lookup_sparse, tf.sparse.segment_*), SparseFillEmptyRows and SparseReshape
 * (tf.nn.safe_embedding_lookup_sparse, tf.sparse.fill_empty_rows / reshape / expand_dims),
 * SparseReorder (tf.sparse.reorder / transpose / to_indicator), SparseTensorDenseMatMul
 * (tf.sparse.sparse_dense_matmul, both adjoints) and SparseTensorDenseAdd (tf.sparse.add of a
 * dense tensor), SparseDenseCwiseMul / Div / Add (a SparseTensor times a dense one broadcast to
 * it) and SparseReduceSum / SparseReduceMax (dense output; implicit zeros not counted: a group
 * with no values is 0), SparseAdd (tf.sparse.add of two SparseTensors) and SparseSparseMaximum /
 * Minimum (tf.sparse.maximum / minimum; implicit zeros take part). A SparseTensor is (indices int64 [N, rank], values [N], dense_shape int64
 * [rank]). Dtypes as TF's CPU kernels (real numbers; SparseReorder and SparseFillEmptyRows any
 * storable dtype), TF's messages for bad input. Checked against TensorFlow by
 * tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

static const char *shp(const sm_tensor *t, char *b, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, cap);
}

static int is_num(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16 || dt == SM_INT32 || dt == SM_INT64 ||
         dt == SM_INT8 || dt == SM_INT16 || dt == SM_UINT8 || dt == SM_UINT16 || dt == SM_UINT32 || dt == SM_UINT64 ||
         dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
}

/* Element i as double (real dtypes; the real part of a complex). */
static double getd(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)p)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)p)[i]);
    default: return (double)sm__array_int_at(t, i);
  }
}

static void putd(sm_tensor *t, int64_t i, double v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)p)[i] = v; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v); break;
    case SM_INT32: ((int32_t *)p)[i] = (int32_t)(int64_t)v; break;
    case SM_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: break;
  }
}

/* ---- SparseSegmentSum / Mean / SqrtN [WithNumSegments] ----------------------------------------- */
enum { SS_SUM, SS_MEAN, SS_SQRTN };

static sm_status *sseg_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node) + strlen("SparseSegment");
  int k = !strncmp(op, "Sum", 3) ? SS_SUM : !strncmp(op, "Mean", 4) ? SS_MEAN : SS_SQRTN;
  int with_n = strstr(op, "WithNumSegments") != NULL;
  *state = (void *)(intptr_t)(1 + (k << 1 | with_n));
  return NULL;
}

static sm_status *sseg_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, k = code >> 1, with_n = code & 1;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *ix = sm__kctx_input(ctx, 1), *seg = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(x);
  static const char *const names[] = {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"};
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF && dt != SM_BFLOAT16 &&
      !(k == SS_SUM && sm__array_is_int(dt)))
    return sm__math_bad_dtype(names[k], dt);
  char a[128];
  if (sm_tensor_rank(ix) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "indices should be a vector.");
  if (sm_tensor_rank(seg) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids should be a vector.");
  if (sm_tensor_rank(x) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0");
  int64_t n = sm_tensor_num_elements(ix);
  if (sm_tensor_num_elements(seg) != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids and indices should have same size.");
  int64_t rows = sm_tensor_dims(x)[0], inner = 1;
  for (int i = 1; i < sm_tensor_rank(x); i++) inner *= sm_tensor_dims(x)[i];
  int64_t nseg = n ? sm__array_int_at(seg, n - 1) + 1 : 0;
  if (with_n) {
    const sm_tensor *ns = sm__kctx_input(ctx, 3);
    if (sm_tensor_num_elements(ns) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "num_segments should be a scalar, not shape %s", shp(ns, a, sizeof a));
    int64_t want = sm__array_int_at(ns, 0);
    if (want < nseg)
      return sm_status_new(SM_INVALID_ARGUMENT, "segment ids must be < num_segments");
    nseg = want;
  }
  if (n && sm__array_int_at(seg, n - 1) < 0) return sm_status_new(SM_INVALID_ARGUMENT, "segment ids must be >= 0");
  for (int64_t i = 0; i < n; i++) {
    int64_t s = sm__array_int_at(seg, i), r = sm__array_int_at(ix, i);
    if (s < 0) return sm_status_new(SM_INVALID_ARGUMENT, "segment ids must be >= 0");
    if (i && s < sm__array_int_at(seg, i - 1)) return sm_status_new(SM_INVALID_ARGUMENT, "segment ids are not increasing");
    if (r < 0 || r >= rows)
      return sm_status_new(SM_INVALID_ARGUMENT, "Bad: indices[%lld] == %lld out of range [0, %lld)", (long long)i,
                           (long long)r, (long long)rows);
  }
  int64_t od[SM_MAX_RANK];
  od[0] = nseg;
  for (int i = 1; i < sm_tensor_rank(x); i++) od[i] = sm_tensor_dims(x)[i];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(x), od, &z);
  if (st || inner == 0) return st;
  double *acc = sm__kctx_scratch(ctx, (size_t)inner * sizeof *acc, &st);
  if (!acc) return st;
  for (int64_t i = 0; i < n;) {
    int64_t s = sm__array_int_at(seg, i), j = i;
    memset(acc, 0, (size_t)inner * sizeof *acc);
    for (; j < n && sm__array_int_at(seg, j) == s; j++) {
      int64_t r = sm__array_int_at(ix, j);
      for (int64_t q = 0; q < inner; q++) acc[q] += getd(x, r * inner + q);
    }
    double cnt = (double)(j - i), div = k == SS_MEAN ? cnt : k == SS_SQRTN ? sqrt(cnt) : 1;
    for (int64_t q = 0; q < inner; q++) putd(z, s * inner + q, acc[q] / div);
    i = j;
  }
  return NULL;
}

/* ---- shared SparseTensor checks ------------------------------------------------------------------ */
static sm_status *check_sparse(const sm_tensor *ind, const sm_tensor *val, const sm_tensor *shape, const char *in,
                               const char *vn, const char *sn) {
  char a[128];
  if (sm_tensor_rank(ind) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a matrix, got shape: %s", in, shp(ind, a, sizeof a));
  if (sm_tensor_rank(val) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a vector, got shape: %s", vn, shp(val, a, sizeof a));
  if (sm_tensor_rank(shape) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a vector, got shape: %s", sn, shp(shape, a, sizeof a));
  if (sm_tensor_dims(ind)[0] != sm_tensor_dims(val)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Number of values (%lld) must equal number of indices (%lld)",
                         (long long)sm_tensor_dims(val)[0], (long long)sm_tensor_dims(ind)[0]);
  if (sm_tensor_dims(ind)[1] != sm_tensor_dims(shape)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Index rank (%lld) and shape rank (%lld) do not match",
                         (long long)sm_tensor_dims(ind)[1], (long long)sm_tensor_dims(shape)[0]);
  if (sm_tensor_dtype(ind) != SM_INT64 || sm_tensor_dtype(shape) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "sparse indices and shape must be int64");
  return NULL;
}

/* ---- SparseReorder -------------------------------------------------------------------------------- */
typedef struct reorder_ctx {
  const int64_t *ind;
  int64_t r;
} reorder_ctx;

/* a stable row-major order: ties keep their input order (merge sort of positions) */
static int idx_less(const int64_t *ind, int64_t r, int64_t a, int64_t b) {
  for (int64_t k = 0; k < r; k++)
    if (ind[a * r + k] != ind[b * r + k]) return ind[a * r + k] < ind[b * r + k];
  return 0;
}

static void msort(int64_t *p, int64_t *tmp, int64_t n, const int64_t *ind, int64_t r) {
  if (n < 2) return;
  int64_t h = n / 2;
  msort(p, tmp, h, ind, r);
  msort(p + h, tmp, n - h, ind, r);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = idx_less(ind, r, p[j], p[i]) ? p[j++] : p[i++];
  while (i < h) tmp[o++] = p[i++];
  while (j < n) tmp[o++] = p[j++];
  memcpy(p, tmp, (size_t)n * sizeof *p);
}

static sm_status *reorder_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2);
  sm_status *st = check_sparse(ind, val, shape, "input_indices", "input_values",
                               "input_shape");
  if (st) return st;
  int64_t n = sm_tensor_dims(ind)[0], r = sm_tensor_dims(ind)[1];
  const int64_t *iv = sm_tensor_data(ind); /* as TF, indices out of dense_shape are sorted, not refused */
  sm_tensor *oi, *ov;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, sm_tensor_dims(ind), &oi))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(val), 1, &n, &ov))) return st;
  int64_t *p = sm__kctx_scratch(ctx, (size_t)(2 * n + 1) * sizeof *p, &st);
  if (!p) return st;
  for (int64_t i = 0; i < n; i++) p[i] = i;
  msort(p, p + n, n, iv, r);
  for (int64_t i = 0; i < n; i++) {
    memcpy((int64_t *)sm_tensor_data(oi) + i * r, iv + p[i] * r, (size_t)r * sizeof(int64_t));
    if ((st = sm__array_copy(ov, i, val, p[i], 1))) return st;
  }
  return NULL;
}

/* ---- SparseReshape -------------------------------------------------------------------------------- */
static sm_status *sreshape_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *ish = sm__kctx_input(ctx, 1), *nsh = sm__kctx_input(ctx, 2);
  char a[128];
  if (sm_tensor_rank(ind) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input indices should be a matrix but received shape %s", shp(ind, a, sizeof a));
  if (sm_tensor_rank(ish) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape should be a vector but received shape %s", shp(ish, a, sizeof a));
  if (sm_tensor_rank(nsh) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Target shape should be a vector but received shape %s", shp(nsh, a, sizeof a));
  int64_t n = sm_tensor_dims(ind)[0], r = sm_tensor_dims(ind)[1], nr = sm_tensor_num_elements(nsh);
  if (sm_tensor_num_elements(ish) != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor rank must match input shape length: %lld vs. %lld", (long long)r,
                         (long long)sm_tensor_num_elements(ish));
  const int64_t *iv = sm_tensor_data(ind), *is = sm_tensor_data(ish), *ns = sm_tensor_data(nsh);
  int64_t dense = 1, prod = 1, unknown = -1;
  for (int64_t k = 0; k < r; k++) dense *= is[k];
  int64_t out[SM_MAX_RANK];
  if (nr > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Target shape has too many dimensions");
  for (int64_t k = 0; k < nr; k++) {
    out[k] = ns[k];
    if (ns[k] == -1) {
      if (unknown != -1)
        return sm_status_new(SM_INVALID_ARGUMENT, "only one output dimension may be -1, not both %lld and %lld",
                             (long long)unknown, (long long)k);
      unknown = k;
    } else {
      if (ns[k] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "size %lld must be non-negative, not %lld", (long long)k,
                                          (long long)ns[k]);
      prod *= ns[k];
    }
  }
  if (unknown != -1) {
    if (prod == 0 || dense % prod)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Input to reshape is a SparseTensor with %lld dense values, but the requested shape requires a "
                           "multiple of %lld. inputs[0].shape = %s",
                           (long long)dense, (long long)prod, "");
    out[unknown] = dense / prod;
    prod = dense;
  }
  if (prod != dense) {
    char s1[256], s2[256];
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Input to reshape is a tensor with %lld dense values, but the requested shape has %lld. "
                         "input_shape=%s output_shape=%s",
                         (long long)dense, (long long)prod, sm_shape_str((int)r, is, s1, sizeof s1),
                         sm_shape_str((int)nr, out, s2, sizeof s2));
  }
  sm_tensor *oi, *os;
  int64_t od[2] = {n, nr};
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, od, &oi);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &nr, &os);
  if (st) return st;
  memcpy(sm_tensor_data(os), out, (size_t)nr * sizeof(int64_t));
  int64_t istr[SM_MAX_RANK], ostr[SM_MAX_RANK];
  if (r > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Input shape has too many dimensions");
  sm__array_strides((int)r, is, istr);
  sm__array_strides((int)nr, out, ostr);
  for (int64_t i = 0; i < n; i++) {
    int64_t flat = 0;
    for (int64_t k = 0; k < r; k++) flat += iv[i * r + k] * istr[k];
    for (int64_t k = 0; k < nr; k++) {
      ((int64_t *)sm_tensor_data(oi))[i * nr + k] = ostr[k] ? flat / ostr[k] : 0;
      flat = ostr[k] ? flat % ostr[k] : flat;
    }
  }
  return NULL;
}

/* ---- SparseFillEmptyRows ---------------------------------------------------------------------------- */
static sm_status *fill_rows_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2),
                  *def = sm__kctx_input(ctx, 3);
  char a[128];
  if (sm_tensor_rank(shape) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "dense_shape must be a vector, saw: %s", shp(shape, a, sizeof a));
  if (sm_tensor_rank(ind) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be a matrix, saw: %s", shp(ind, a, sizeof a));
  if (sm_tensor_rank(val) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "values must be a vector, saw: %s", shp(val, a, sizeof a));
  if (sm_tensor_rank(def) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "default_value must be a scalar, saw: %s", shp(def, a, sizeof a));
  int64_t n = sm_tensor_dims(ind)[0], r = sm_tensor_dims(ind)[1];
  if (sm_tensor_dims(val)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "The length of `values` (%lld) must match the first dimension of `indices` (%lld).",
                         (long long)sm_tensor_dims(val)[0], (long long)n);
  if (sm_tensor_num_elements(shape) != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "The length of `dense_shape` (%lld) must match the second dimension of `indices` (%lld).",
                         (long long)sm_tensor_num_elements(shape), (long long)r);
  const int64_t *iv = sm_tensor_data(ind), *sv = sm_tensor_data(shape);
  int64_t nrows = r ? sv[0] : 0;
  if (nrows < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dense shape must be non-negative");
  if (r == 0 && n) return sm_status_new(SM_INVALID_ARGUMENT, "indices must have at least one column");
  sm_status *st = NULL;
  int64_t *cnt = sm__kctx_scratch(ctx, (size_t)(nrows + 1) * sizeof *cnt, &st);
  if (!cnt) return st;
  memset(cnt, 0, (size_t)(nrows + 1) * sizeof *cnt);
  for (int64_t i = 0; i < n; i++) {
    int64_t row = iv[i * r];
    if (row < 0 || row >= nrows)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices(%lld, 0) is invalid: %lld >= %lld", (long long)i, (long long)row,
                           (long long)nrows);
    cnt[row]++;
  }
  int64_t empty = 0;
  for (int64_t k = 0; k < nrows; k++) empty += cnt[k] == 0;
  int64_t total = n + empty, od[2] = {total, r};
  sm_tensor *oi, *ov, *oe, *orm;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, od, &oi))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(val), 1, &total, &ov))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 2, SM_BOOL, 1, &nrows, &oe))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 3, SM_INT64, 1, &n, &orm))) return st;
  /* start of each row in the output: rows in order, an empty row one default entry */
  int64_t *start = sm__kctx_scratch(ctx, (size_t)(nrows + 1) * sizeof *start, &st);
  if (!start) return st;
  int64_t pos = 0;
  for (int64_t k = 0; k < nrows; k++) {
    start[k] = pos;
    ((uint8_t *)sm_tensor_data(oe))[k] = cnt[k] == 0;
    if (cnt[k] == 0) {
      ((int64_t *)sm_tensor_data(oi))[pos * r] = k;
      if ((st = sm__array_copy(ov, pos, def, 0, 1))) return st;
    }
    pos += cnt[k] ? cnt[k] : 1;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t row = iv[i * r], o = start[row]++;
    memcpy((int64_t *)sm_tensor_data(oi) + o * r, iv + i * r, (size_t)r * sizeof(int64_t));
    if ((st = sm__array_copy(ov, o, val, i, 1))) return st;
    ((int64_t *)sm_tensor_data(orm))[i] = o;
  }
  return NULL;
}

/* ---- SparseTensorDenseMatMul --------------------------------------------------------------------------- */
typedef struct spmm_state {
  int adj_a, adj_b;
} spmm_state;

static sm_status *spmm_prepare(const sm_node *node, void **state) {
  spmm_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = NULL;
  if (sm__node_attr(node, "adjoint_a")) st = sm__node_attr_bool(node, "adjoint_a", &s->adj_a);
  if (!st && sm__node_attr(node, "adjoint_b")) st = sm__node_attr_bool(node, "adjoint_b", &s->adj_b);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *spmm_compute(const void *state, sm_kctx *ctx) {
  const spmm_state *s = state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2),
                  *b = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(b);
  char a[128], c[128];
  if (!is_num(dt) || dt == SM_COMPLEX64 || dt == SM_COMPLEX128) return sm__math_bad_dtype("SparseTensorDenseMatMul", dt);
  if (sm_tensor_rank(b) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensor 'b' is not a matrix");
  if (sm_tensor_rank(shape) != 1 || sm_tensor_num_elements(shape) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensor 'a_shape' is not a vector of 2 elements");
  if (sm_tensor_rank(ind) != 2 || sm_tensor_dims(ind)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensor 'a_indices' is not a matrix with 2 columns, got %s", shp(ind, a, sizeof a));
  if (sm_tensor_rank(val) != 1 || sm_tensor_dims(val)[0] != sm_tensor_dims(ind)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Number of rows of a_indices does not match number of entries in a_values");
  int64_t sh[2] = {sm__array_int_at(shape, 0), sm__array_int_at(shape, 1)};
  int64_t outer = s->adj_a ? sh[1] : sh[0], inner_a = s->adj_a ? sh[0] : sh[1];
  const int64_t *bd = sm_tensor_dims(b);
  int64_t inner_b = s->adj_b ? bd[1] : bd[0], cols = s->adj_b ? bd[0] : bd[1];
  if (inner_a != inner_b)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Cannot multiply A and B because inner dimension does not match: %lld vs. %lld.  Did you forget a "
                         "transpose?  Dimensions of A: [%lld, %lld).  Dimensions of B: %s",
                         (long long)inner_a, (long long)inner_b, (long long)sh[0], (long long)sh[1], shp(b, c, sizeof c));
  int64_t od[2] = {outer, cols};
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 2, od, &z);
  if (st) return st;
  int64_t n = sm_tensor_dims(ind)[0];
  double *acc = sm__kctx_scratch(ctx, (size_t)(outer * cols + 1) * sizeof *acc, &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)(outer * cols + 1) * sizeof *acc);
  for (int64_t i = 0; i < n; i++) {
    int64_t m = sm__array_int_at(ind, 2 * i + (s->adj_a ? 1 : 0)), k = sm__array_int_at(ind, 2 * i + (s->adj_a ? 0 : 1));
    if (m < 0 || m >= outer)
      return sm_status_new(SM_INVALID_ARGUMENT, "m (%lld) from index[%lld,%d] out of bounds (>=%lld)", (long long)m,
                           (long long)i, s->adj_a ? 1 : 0, (long long)outer);
    if (k < 0 || k >= inner_a)
      return sm_status_new(SM_INVALID_ARGUMENT, "k (%lld) from index[%lld,%d] out of bounds (>=%lld)", (long long)k,
                           (long long)i, s->adj_a ? 0 : 1, (long long)inner_a);
    double v = getd(val, i);
    for (int64_t j = 0; j < cols; j++) acc[m * cols + j] += v * getd(b, s->adj_b ? j * bd[1] + k : k * bd[1] + j);
  }
  for (int64_t i = 0; i < outer * cols; i++) putd(z, i, acc[i]);
  return NULL;
}

/* ---- SparseTensorDenseAdd ------------------------------------------------------------------------------ */
static sm_status *sdadd_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2),
                  *b = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(b);
  char a[128], c[128];
  if (!is_num(dt) || dt == SM_COMPLEX64 || dt == SM_COMPLEX128) return sm__math_bad_dtype("SparseTensorDenseAdd", dt);
  if (sm_tensor_rank(ind) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input sp_indices should be a matrix but received shape: %s", shp(ind, a, sizeof a));
  if (sm_tensor_rank(val) != 1 || sm_tensor_rank(shape) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs sp_values and sp_shape should be vectors but received shapes: %s and %s",
                         shp(val, a, sizeof a), shp(shape, c, sizeof c));
  int64_t r = sm_tensor_num_elements(shape), n = sm_tensor_dims(ind)[0];
  int ok = r == sm_tensor_rank(b);
  for (int64_t k = 0; ok && k < r; k++) ok = sm__array_int_at(shape, k) == sm_tensor_dims(b)[k];
  if (!ok) {
    char s1[256];
    size_t o = 0;
    s1[0] = 0;
    o += (size_t)snprintf(s1 + o, sizeof s1 - o, "[");
    for (int64_t k = 0; k < r && o + 24 < sizeof s1; k++)
      o += (size_t)snprintf(s1 + o, sizeof s1 - o, "%s%lld", k ? "," : "", (long long)sm__array_int_at(shape, k));
    snprintf(s1 + o, sizeof s1 - o, "]");
    return sm_status_new(SM_INVALID_ARGUMENT, "Dimension mismatch: sp_shape %s vs dense %s", s1, shp(b, a, sizeof a));
  }
  if (sm_tensor_dims(ind)[1] != r || sm_tensor_dims(val)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "The sparse tensor's indices, values and shape do not agree");
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(b), sm_tensor_dims(b), &z);
  if (st) return st;
  if ((st = sm__array_copy(z, 0, b, 0, sm_tensor_num_elements(b)))) return st;
  int64_t str[SM_MAX_RANK];
  sm__array_strides(sm_tensor_rank(b), sm_tensor_dims(b), str);
  for (int64_t i = 0; i < n; i++) {
    int64_t flat = 0;
    for (int64_t k = 0; k < r; k++) {
      int64_t v = sm__array_int_at(ind, i * r + k);
      if (v < 0 || v >= sm_tensor_dims(b)[k])
        return sm_status_new(SM_INVALID_ARGUMENT, "Index %lld of dimension %lld is out of bounds [0, %lld)", (long long)v,
                             (long long)k, (long long)sm_tensor_dims(b)[k]);
      flat += v * str[k];
    }
    if (sm__array_is_int(dt) && dt == SM_INT64)
      ((int64_t *)sm_tensor_data(z))[flat] = (int64_t)((uint64_t)((int64_t *)sm_tensor_data(z))[flat] +
                                                        (uint64_t)((const int64_t *)sm_tensor_data(val))[i]);
    else if (dt == SM_INT32)
      ((int32_t *)sm_tensor_data(z))[flat] = (int32_t)((uint32_t)((int32_t *)sm_tensor_data(z))[flat] +
                                                        (uint32_t)((const int32_t *)sm_tensor_data(val))[i]);
    else
      putd(z, flat, getd(z, flat) + getd(val, i));
  }
  return NULL;
}

/* ---- SparseDenseCwiseMul / Div / Add ------------------------------------------------------------- */
/* values[i] op dense[broadcast of index i]: the dense side broadcasts to the sparse shape only. */
enum { CW_MUL, CW_DIV, CW_ADD };

static sm_status *cwise_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node) + strlen("SparseDenseCwise");
  *state = (void *)(intptr_t)(1 + (!strcmp(op, "Mul") ? CW_MUL : !strcmp(op, "Div") ? CW_DIV : CW_ADD));
  return NULL;
}

static sm_status *cwise_compute(const void *state, sm_kctx *ctx) {
  int op = (int)(intptr_t)state - 1;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2),
                  *dn = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(val);
  char a[128], c[128];
  if (!is_num(dt) || dt == SM_COMPLEX64 || dt == SM_COMPLEX128 || sm_tensor_dtype(dn) != dt)
    return sm__math_bad_dtype(op == CW_MUL ? "SparseDenseCwiseMul" : op == CW_DIV ? "SparseDenseCwiseDiv" : "SparseDenseCwiseAdd", dt);
  if (sm_tensor_rank(ind) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input sp_indices should be a matrix but received shape: %s", shp(ind, a, sizeof a));
  if (sm_tensor_rank(val) != 1 || sm_tensor_rank(shape) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs sp_values and sp_shape should be vectors but received shapes: %s and %s",
                         shp(val, a, sizeof a), shp(shape, c, sizeof c));
  int64_t n = sm_tensor_dims(ind)[0], r = sm_tensor_num_elements(shape);
  if (sm_tensor_dims(val)[0] != n || sm_tensor_dims(ind)[1] != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "The sparse tensor's indices, values and shape do not agree");
  int dr = sm_tensor_rank(dn);
  const int64_t *dd = sm_tensor_dims(dn);
  int ok = dr <= r;
  for (int k = 0; ok && k < dr; k++) {
    int64_t sk = sm__array_int_at(shape, r - dr + k);
    ok = dd[k] == sk || dd[k] == 1;
  }
  if (!ok) {
    char s1[256];
    size_t o = (size_t)snprintf(s1, sizeof s1, "[");
    for (int64_t k = 0; k < r && o + 24 < sizeof s1; k++)
      o += (size_t)snprintf(s1 + o, sizeof s1 - o, "%s%lld", k ? "," : "", (long long)sm__array_int_at(shape, k));
    snprintf(s1 + o, sizeof s1 - o, "]");
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible shapes: %s vs. %s", s1,
                         shp(dn, a, sizeof a));
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &z);
  if (st) return st;
  int64_t str[SM_MAX_RANK];
  sm__array_strides(dr, dd, str);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int k = 0; k < dr; k++) {
      int64_t v = sm__array_int_at(ind, i * r + (r - dr + k));
      if (v < 0 || v >= sm__array_int_at(shape, r - dr + k))
        return sm_status_new(SM_INVALID_ARGUMENT, "Provided indices are out-of-bounds w.r.t. dense side with broadcasted shape");
      off += (dd[k] == 1 ? 0 : v) * str[k];
    }
    double x = getd(val, i), y = getd(dn, off);
    if (sm__array_is_int(dt)) {
      int64_t xi = sm__array_int_at(val, i), yi = sm__array_int_at(dn, off), ri;
      if (op == CW_DIV && yi == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Integer division by zero");
      ri = op == CW_MUL ? (int64_t)((uint64_t)xi * (uint64_t)yi) : op == CW_ADD ? (int64_t)((uint64_t)xi + (uint64_t)yi)
                                                                                : (yi == -1 ? (int64_t)(0 - (uint64_t)xi) : xi / yi);
      putd(z, i, (double)ri);
      if (dt == SM_INT64) ((int64_t *)sm_tensor_data(z))[i] = ri;
    } else {
      putd(z, i, op == CW_MUL ? x * y : op == CW_DIV ? x / y : x + y);
    }
  }
  return NULL;
}

/* ---- SparseReduceSum / SparseReduceMax (dense output) ----------------------------------------------- */
typedef struct sred_state {
  int max, keep;
} sred_state;

static sm_status *sred_prepare(const sm_node *node, void **state) {
  sred_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->max = !strcmp(sm__node_op(node), "SparseReduceMax");
  sm_status *st = sm__node_attr(node, "keep_dims") ? sm__node_attr_bool(node, "keep_dims", &s->keep) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *sred_compute(const void *state, sm_kctx *ctx) {
  const sred_state *s = state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *val = sm__kctx_input(ctx, 1), *shape = sm__kctx_input(ctx, 2),
                  *ax = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(val);
  if (!is_num(dt) || dt == SM_COMPLEX64 || dt == SM_COMPLEX128)
    return sm__math_bad_dtype(s->max ? "SparseReduceMax" : "SparseReduceSum", dt);
  sm_status *st = check_sparse(ind, val, shape, "input_indices", "input_values", "input_shape");
  if (st) return st;
  int64_t n = sm_tensor_dims(ind)[0], r = sm_tensor_dims(ind)[1];
  if (r > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "input rank too large");
  const int64_t *iv = sm_tensor_data(ind), *sv = sm_tensor_data(shape);
  int red[SM_MAX_RANK] = {0};
  for (int64_t i = 0; i < sm_tensor_num_elements(ax); i++) {
    int64_t a = sm__array_int_at(ax, i);
    if (a < -r || a >= r)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction dimension %lld, for input with %lld dimensions.",
                           (long long)a, (long long)r);
    red[a < 0 ? a + r : a] = 1;
  }
  int64_t od[SM_MAX_RANK], kd[SM_MAX_RANK], kstr[SM_MAX_RANK];
  int orank = 0;
  for (int k = 0; k < r; k++) {
    kd[k] = red[k] ? 1 : sv[k];
    if (s->keep) od[orank++] = kd[k];
    else if (!red[k]) od[orank++] = sv[k];
  }
  sm_tensor *z;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, orank, od, &z))) return st;
  int64_t m = sm_tensor_num_elements(z), acc = 1;
  for (int k = (int)r - 1; k >= 0; k--) kstr[k] = acc, acc *= kd[k];
  double *v = sm__kctx_scratch(ctx, (size_t)(m + 1) * sizeof *v, &st);
  uint8_t *seen = v ? sm__kctx_scratch(ctx, (size_t)m + 1, &st) : NULL;
  if (!seen) return st;
  memset(seen, 0, (size_t)m + 1);
  for (int64_t i = 0; i < m; i++) v[i] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t o = 0;
    for (int k = 0; k < r; k++) {
      if (iv[i * r + k] < 0 || iv[i * r + k] >= sv[k])
        return sm_status_new(SM_INVALID_ARGUMENT, "Index out of bounds in the sparse input");
      o += (red[k] ? 0 : iv[i * r + k]) * kstr[k];
    }
    double x = getd(val, i);
    if (s->max) v[o] = seen[o] && !(x > v[o]) ? v[o] : x;
    else v[o] += x;
    seen[o] = 1;
  }
  for (int64_t i = 0; i < m; i++) putd(z, i, v[i]);
  return NULL;
}

#define SS(name) {name, sseg_prepare, sseg_compute, NULL, 0}
/* ---- SparseAdd, SparseSparseMaximum, SparseSparseMinimum ----------------------------------------
 * Two SparseTensors of one dense shape, their indices walked together in row-major order (TF
 * assumes both sorted): an index in one only keeps its value (Maximum / Minimum: against 0), one in
 * both gets a + b (SparseAdd: dropped when |a + b| < thresh), max or min. Output indices are those
 * of the operand a entry comes from (a's when in both). */
enum { SS2_ADD, SS2_MAX, SS2_MIN };

static int ss2_dtype_ok(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_INT32 || dt == SM_INT64 || dt == SM_INT8 || dt == SM_INT16 ||
         dt == SM_UINT8 || dt == SM_UINT16;
}

static int64_t ss2_int(const sm_tensor *t, int64_t i) { return sm__array_int_at(t, i); }

/* v as the integer dtype holds it (two's complement wrap). */
static int64_t ss2_wrap(int dt, int64_t v) {
  switch (dt) {
    case SM_INT32: return (int32_t)(uint32_t)(uint64_t)v;
    case SM_INT8: return (int8_t)(uint8_t)(uint64_t)v;
    case SM_INT16: return (int16_t)(uint16_t)(uint64_t)v;
    case SM_UINT8: return (uint8_t)(uint64_t)v;
    case SM_UINT16: return (uint16_t)(uint64_t)v;
    default: return v;
  }
}

static void ss2_put_int(sm_tensor *t, int64_t i, int64_t v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case SM_INT64: ((int64_t *)p)[i] = v; break;
    case SM_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case SM_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
    case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case SM_UINT16: ((uint16_t *)p)[i] = (uint16_t)(uint64_t)v; break;
    default: break;
  }
}

/* An int64 vector's values as TF's SummarizeValue(10): "3 4", "..." after ten. */
static const char *ss2_summary(const sm_tensor *t, char *buf, size_t cap) {
  const int64_t *v = sm_tensor_data(t);
  int64_t n = sm_tensor_num_elements(t);
  size_t o = 0;
  buf[0] = 0;
  for (int64_t i = 0; i < n && i < 10 && o + 24 < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? " " : "", (long long)v[i]);
  if (n > 10 && o + 4 < cap) snprintf(buf + o, cap - o, "...");
  return buf;
}

static sm_status *ss2_compute(const void *state, sm_kctx *ctx) {
  int kind = (int)(intptr_t)state - 1;
  const sm_tensor *ai = sm__kctx_input(ctx, 0), *av = sm__kctx_input(ctx, 1), *as = sm__kctx_input(ctx, 2),
                  *bi = sm__kctx_input(ctx, 3), *bv = sm__kctx_input(ctx, 4), *bs = sm__kctx_input(ctx, 5);
  char b1[128], b2[128];
  int add = kind == SS2_ADD;
  if (sm_tensor_rank(ai) != 2 || sm_tensor_rank(bi) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s should be matrices but received shapes: %s%s%s",
                         add ? "Input indices" : "Inputs a_indices and b_indices", shp(ai, b1, sizeof b1), add ? " and " : ", ",
                         shp(bi, b2, sizeof b2));
  if (sm_tensor_rank(av) != 1 || sm_tensor_rank(bv) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s should be vectors but received shapes: %s%s%s",
                         add ? "Input values" : "Inputs a_values and b_values", shp(av, b1, sizeof b1), add ? " and " : ", ",
                         shp(bv, b2, sizeof b2));
  int64_t an = sm_tensor_dims(ai)[0], bn = sm_tensor_dims(bi)[0];
  if (sm_tensor_dims(av)[0] != an || sm_tensor_dims(bv)[0] != bn)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected %lld and %lld non-empty input values, got %lld and %lld", (long long)an,
                         (long long)bn, (long long)sm_tensor_dims(av)[0], (long long)sm_tensor_dims(bv)[0]);
  if (sm_tensor_rank(as) != 1 || sm_tensor_rank(bs) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shapes should be a vector but received shapes %s and %s",
                         shp(as, b1, sizeof b1), shp(bs, b2, sizeof b2));
  int64_t R = sm_tensor_dims(ai)[1];
  if (!add && sm_tensor_dims(as)[0] != R)
    return sm_status_new(SM_INVALID_ARGUMENT, "Second dimension of a_indices and length of a_shape must match, got %lld and %lld",
                         (long long)R, (long long)sm_tensor_dims(as)[0]);
  if (!add && R <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Tensors must not be empty");
  const int64_t *ash = sm_tensor_data(as), *bsh = sm_tensor_data(bs);
  if (sm_tensor_dims(as)[0] != sm_tensor_dims(bs)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Operands do not have the same ranks; got shapes: %s and %s",
                         ss2_summary(as, b1, sizeof b1), ss2_summary(bs, b2, sizeof b2));
  for (int64_t d = 0; d < sm_tensor_dims(as)[0]; d++)
    if (ash[d] != bsh[d])
      return sm_status_new(SM_INVALID_ARGUMENT, "Operands' shapes do not match: got %lld and %lld for dimension %lld",
                           (long long)ash[d], (long long)bsh[d], (long long)d);
  if (sm_tensor_dims(bi)[1] != R || (add && sm_tensor_dims(as)[0] != R))
    return sm_status_new(SM_INVALID_ARGUMENT, "the indices of a and b and the shapes must have one rank (%lld, %lld, %lld)",
                         (long long)R, (long long)sm_tensor_dims(bi)[1], (long long)sm_tensor_dims(as)[0]);
  int dt = sm_tensor_dtype(av);
  if (!ss2_dtype_ok(dt) || sm_tensor_dtype(bv) != dt)
    return sm_status_new(SM_UNIMPLEMENTED, "%s of %s is not supported", add ? "SparseAdd" : "SparseSparseMaximum/Minimum",
                         sm_dtype_name(dt));
  double thresh = 0;
  if (add) {
    const sm_tensor *th = sm__kctx_input(ctx, 6);
    if (sm_tensor_rank(th) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "The magnitude threshold must be a scalar: got shape %s", shp(th, b1, sizeof b1));
    thresh = getd(th, 0);
  }
  const int64_t *ap = sm_tensor_data(ai), *bp = sm_tensor_data(bi);
  for (int64_t i = 0; i < an + bn; i++) { /* in bounds */
    const int64_t *r = i < an ? ap + i * R : bp + (i - an) * R;
    for (int64_t d = 0; d < R; d++)
      if (r[d] < 0 || r[d] >= ash[d])
        return sm_status_new(SM_INVALID_ARGUMENT, "%s index %lld is out of bounds: [%lld] is not in [0, %lld)",
                             i < an ? "a" : "b", (long long)(i < an ? i : i - an), (long long)r[d], (long long)ash[d]);
  }
  /* the merge: entries (source, row, which of a / b take part) */
  sm_status *st = NULL;
  int64_t *ent = sm__kctx_scratch(ctx, (size_t)(an + bn + 1) * 3 * sizeof *ent, &st), ne = 0;
  if (!ent) return st;
  int64_t i = 0, j = 0;
  while (i < an || j < bn) {
    int c = 0;
    if (i >= an) c = 1;
    else if (j >= bn) c = -1;
    else
      for (int64_t d = 0; d < R && !c; d++) c = ap[i * R + d] < bp[j * R + d] ? -1 : ap[i * R + d] > bp[j * R + d];
    ent[3 * ne] = c <= 0 ? 0 : 1, ent[3 * ne + 1] = c <= 0 ? i : -1, ent[3 * ne + 2] = c >= 0 ? j : -1;
    if (c <= 0) i++;
    if (c >= 0) j++;
    if (add && c == 0) { /* a + b, kept when |a + b| >= thresh */
      int64_t x = ent[3 * ne + 1], y = ent[3 * ne + 2];
      double sum = dt == SM_FLOAT    ? (double)((float)getd(av, x) + (float)getd(bv, y))
                   : dt == SM_DOUBLE ? getd(av, x) + getd(bv, y)
                                     : (double)ss2_wrap(dt, (int64_t)((uint64_t)ss2_int(av, x) + (uint64_t)ss2_int(bv, y)));
      if (!(thresh <= fabs(sum))) continue;
    }
    ne++;
  }
  sm_tensor *oi, *ov;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){ne, R}, &oi)) ||
      (st = sm__kctx_alloc_output(ctx, 1, dt, 1, &ne, &ov)))
    goto out;
  int64_t *op = sm_tensor_data(oi);
  for (int64_t e = 0; e < ne; e++) {
    int64_t x = ent[3 * e + 1], y = ent[3 * e + 2];
    memcpy(op + e * R, x >= 0 ? ap + x * R : bp + y * R, (size_t)R * sizeof *op);
    if (dt == SM_FLOAT || dt == SM_DOUBLE) {
      double va = x >= 0 ? getd(av, x) : 0, vb = y >= 0 ? getd(bv, y) : 0, v;
      if (add) v = x >= 0 && y >= 0 ? (dt == SM_FLOAT ? (double)((float)va + (float)vb) : va + vb) : x >= 0 ? va : vb;
      else if (kind == SS2_MAX) v = va < vb ? vb : va;
      else v = vb < va ? vb : va;
      putd(ov, e, v);
    } else {
      int64_t va = x >= 0 ? ss2_int(av, x) : 0, vb = y >= 0 ? ss2_int(bv, y) : 0, v;
      if (add) v = (int64_t)((uint64_t)va + (uint64_t)vb);
      else if (kind == SS2_MAX) v = va < vb ? vb : va;
      else v = vb < va ? vb : va;
      ss2_put_int(ov, e, v);
    }
  }
  if (add) {
    sm_tensor *os;
    if ((st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){R}, &os))) goto out;
    memcpy(sm_tensor_data(os), ash, (size_t)R * sizeof *ash);
  }
out:
  sm__kctx_scratch_free(ctx, ent);
  return st;
}

static sm_status *ss2_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  *state = (void *)(intptr_t)(1 + (!strcmp(op, "SparseAdd") ? SS2_ADD : !strcmp(op, "SparseSparseMaximum") ? SS2_MAX : SS2_MIN));
  return NULL;
}

const sm_kernel sm_kernels_sparse[] = {
    {"SparseAdd", ss2_prepare, ss2_compute, NULL, 0},
    {"SparseSparseMaximum", ss2_prepare, ss2_compute, NULL, 0},
    {"SparseSparseMinimum", ss2_prepare, ss2_compute, NULL, 0},
    SS("SparseSegmentSum"), SS("SparseSegmentMean"), SS("SparseSegmentSqrtN"),
    SS("SparseSegmentSumWithNumSegments"), SS("SparseSegmentMeanWithNumSegments"), SS("SparseSegmentSqrtNWithNumSegments"),
    {"SparseReorder", NULL, reorder_compute, NULL, 0},
    {"SparseReshape", NULL, sreshape_compute, NULL, 0},
    {"SparseFillEmptyRows", NULL, fill_rows_compute, NULL, 0},
    {"SparseTensorDenseMatMul", spmm_prepare, spmm_compute, free, 0},
    {"SparseTensorDenseAdd", NULL, sdadd_compute, NULL, 0},
    {"SparseDenseCwiseMul", cwise_prepare, cwise_compute, NULL, 0},
    {"SparseDenseCwiseDiv", cwise_prepare, cwise_compute, NULL, 0},
    {"SparseDenseCwiseAdd", cwise_prepare, cwise_compute, NULL, 0},
    {"SparseReduceSum", sred_prepare, sred_compute, free, 0},
    {"SparseReduceMax", sred_prepare, sred_compute, free, 0},
    {0},
};
