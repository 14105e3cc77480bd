/* grad_array.c - the array ops' gradient kernels a training function holds: StridedSliceGrad
 * (computed in array_slice.c, beside StridedSlice's validation), MirrorPadGrad and ConcatOffset,
 * as TensorFlow computes them (strided_slice_op.cc, mirror_pad_op.cc, concat_op.cc), with TF's
 * error texts; and the SparseSegment{Sum,Mean,SqrtN}Grad(V2) ops (segment_reduction_ops_impl.h).
 * (TileGrad is left out: TF 2.21's only CPU kernel for it wants an attr its OpDef
 * lacks, so no graph can run it there.)
 *
 * MirrorPadGrad is a "scatter-add": every input element is added into the output element it came
 * from (an offset map built per dimension, then one typed loop; half/bfloat16 accumulate in float,
 * integers wrap). */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

/* out[map(i)] += x[i] for every element i of x; out is zero-filled. map(i) = sum over dims of
 * mp[d][index_d(i)]. */
#define DEF_SADD(SFX, T)                                                                           \
  static void sadd_##SFX(const T *x, T *o, int rank, const int64_t *dims, int64_t *const *mp, int64_t n) { \
    int64_t idx[SM_MAX_RANK] = {0}, off = 0;                                                       \
    for (int d = 0; d < rank; d++) off += mp[d][0];                                                \
    for (int64_t i = 0; i < n; i++) {                                                              \
      o[off] += x[i];                                                                              \
      for (int d = rank - 1; d >= 0; d--) {                                                        \
        off -= mp[d][idx[d]];                                                                      \
        if (++idx[d] < dims[d]) {                                                                  \
          off += mp[d][idx[d]];                                                                    \
          break;                                                                                   \
        }                                                                                          \
        idx[d] = 0;                                                                                \
        off += mp[d][0];                                                                           \
      }                                                                                            \
    }                                                                                              \
  }
DEF_SADD(f32, float)
DEF_SADD(f64, double)
DEF_SADD(i8, uint8_t) /* integers add as unsigned: TF's wrap, without C's signed overflow */
DEF_SADD(i16, uint16_t)
DEF_SADD(i32, uint32_t)
DEF_SADD(i64, uint64_t)
DEF_SADD(c64, float complex)
DEF_SADD(c128, double complex)

static sm_status *scatter_add(sm_kctx *ctx, const sm_tensor *x, sm_tensor *out, int64_t *const *mp, const char *op) {
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  const int64_t *dims = sm_tensor_dims(x);
  int64_t n = sm_tensor_num_elements(x);
  const void *xp = sm_tensor_data(x);
  void *op_ = sm_tensor_data(out);
  if (n == 0) return NULL;
  switch (dt) {
    case SM_FLOAT: sadd_f32(xp, op_, rank, dims, mp, n); return NULL;
    case SM_DOUBLE: sadd_f64(xp, op_, rank, dims, mp, n); return NULL;
    case SM_INT8: case SM_UINT8: sadd_i8(xp, op_, rank, dims, mp, n); return NULL;
    case SM_INT16: case SM_UINT16: sadd_i16(xp, op_, rank, dims, mp, n); return NULL;
    case SM_INT32: case SM_UINT32: sadd_i32(xp, op_, rank, dims, mp, n); return NULL;
    case SM_INT64: case SM_UINT64: sadd_i64(xp, op_, rank, dims, mp, n); return NULL;
    case SM_COMPLEX64: sadd_c64(xp, op_, rank, dims, mp, n); return NULL;
    case SM_COMPLEX128: sadd_c128(xp, op_, rank, dims, mp, n); return NULL;
    case SM_HALF:
    case SM_BFLOAT16: {
      int64_t no = sm_tensor_num_elements(out);
      sm_status *s = NULL;
      float *xf = sm__kctx_scratch(ctx, (size_t)(n + no) * sizeof(float), &s);
      if (!xf) return s;
      float *of = xf + n;
      memset(of, 0, (size_t)no * sizeof(float));
      sm__math_to_f32(dt, xp, xf, n);
      sadd_f32(xf, of, rank, dims, mp, n);
      sm__math_from_f32(dt, of, op_, no);
      return NULL;
    }
    default: return sm__math_bad_dtype(op, dt);
  }
}

static int addable(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || sm__math_is_f16(dt) || sm__math_tindex(dt) >= 0 || dt == SM_COMPLEX64 ||
         dt == SM_COMPLEX128;
}

/* ---- MirrorPadGrad ---------------------------------------------------------------------------- */

static sm_status *mirror_pad_grad_compute(const void *state, sm_kctx *ctx) {
  int reflect = *(const int *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *pt = sm__kctx_input(ctx, 1);
  int R = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  if (!addable(dt) || dt == SM_BOOL) return sm__math_bad_dtype("MirrorPadGrad", dt);
  if (R > 5) return sm_status_new(SM_INVALID_ARGUMENT, "inputs rank not in [0,5]: %d", R);
  sm_status *s = sm__array_paddings_shape(x, pt);
  if (s) return s;
  const int64_t *dims = sm_tensor_dims(x);
  int64_t od[SM_MAX_RANK], pad[SM_MAX_RANK][2];
  for (int i = 0; i < R; i++) {
    int64_t lo = sm__array_int_at(pt, 2 * i), hi = sm__array_int_at(pt, 2 * i + 1);
    if (lo < 0 || hi < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Paddings must be non-negative: %lld, %lld", (long long)lo, (long long)hi);
    /* the output dim: input less both paddings, in TF's wrapping int64 (a total that wraps
     * negative passes this check, and the next one refuses it) */
    int64_t total = (int64_t)((uint64_t)lo + (uint64_t)hi);
    if (total >= dims[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "Total paddings must be less than the input dimension size: %lld was not less than %lld",
                           (long long)total, (long long)dims[i]);
    od[i] = (int64_t)((uint64_t)dims[i] - (uint64_t)total);
    if (reflect && (lo >= od[i] || hi >= od[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be less than the output dimension size: %lld, %lld not less than %lld",
                           (long long)lo, (long long)hi, (long long)od[i]);
    if (!reflect && (lo > od[i] || hi > od[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be no greater than the output dimension size: %lld, %lld greater than %lld",
                           (long long)lo, (long long)hi, (long long)od[i]);
    pad[i][0] = lo, pad[i][1] = hi;
  }
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, dt, R, od, &out);
  if (s || sm_tensor_num_elements(x) == 0) return s;
  int64_t ostr[SM_MAX_RANK], total = 0;
  sm__array_strides(R, od, ostr);
  for (int i = 0; i < R; i++) total += dims[i];
  int64_t *map = sm__kctx_scratch(ctx, (size_t)(total ? total : 1) * sizeof *map, &s);
  if (!map) return s;
  int64_t *mp[SM_MAX_RANK], at = 0, shift = reflect ? 1 : 0;
  for (int i = 0; i < R; i++) {
    mp[i] = map + at;
    at += dims[i];
    for (int64_t k = 0; k < dims[i]; k++) {
      int64_t j = k - pad[i][0];
      if (j < 0) j = -j - 1 + shift;
      else if (j >= od[i]) j = 2 * od[i] - j - 1 - shift;
      mp[i][k] = j * ostr[i];
    }
  }
  return scatter_add(ctx, x, out, mp, "MirrorPadGrad");
}

/* ---- ConcatOffset ------------------------------------------------------------------------------- */

/* A shape vector's values as TF prints a vector in this message: "[2 3]" (the first 32). */
static const char *vec_str(const sm_tensor *v, char *buf, size_t cap) {
  int64_t n = sm_tensor_num_elements(v);
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int64_t i = 0; i < n && i < 32 && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? " " : "", (long long)sm__array_int_at(v, i));
  if (o < cap) snprintf(buf + o, cap - o, "]");
  return buf;
}

static sm_status *concat_offset_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *cd = sm__kctx_input(ctx, 0);
  int n = sm__kctx_num_inputs(ctx) - 1;
  char a[128], b[128];
  if (sm_tensor_num_elements(cd) != 1 || sm_tensor_rank(cd) != 0 || !sm__array_is_int(sm_tensor_dtype(cd)))
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat dim tensor should be a scalar integer, but got shape %s",
                         sm__array_shape_str(cd, a, sizeof a));
  if (n < 1) return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOffset needs at least one shape");
  const sm_tensor *s0 = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(s0) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input 0 should be a vector, got shape %s", sm__array_shape_str(s0, a, sizeof a));
  int64_t rank = sm_tensor_num_elements(s0), axis = sm__array_int_at(cd, 0);
  int64_t ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat dim is out of range: %lld vs. %lld", (long long)axis, (long long)rank);
  int dt = sm_tensor_dtype(s0);
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    const sm_tensor *si = sm__kctx_input(ctx, 1 + i);
    if (sm_tensor_rank(si) != 1 || sm_tensor_num_elements(si) != rank)
      return sm_status_new(SM_INVALID_ARGUMENT, "input %d should contain %lld elements, but got %lld", i, (long long)rank,
                           (long long)sm_tensor_num_elements(si));
    if (sm_tensor_dtype(si) != dt)
      return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOffset: input %d is %s, input 0 %s", i, sm__array_dtype_str(sm_tensor_dtype(si)),
                           sm__array_dtype_str(dt));
    for (int64_t j = 0; j < rank; j++)
      if (j != ax && sm__array_int_at(si, j) != sm__array_int_at(s0, j))
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "All dimensions except %lld must match. Input %d has shape %s and doesn't match input 0 with shape %s.",
                             (long long)ax, i, vec_str(si, a, sizeof a), vec_str(s0, b, sizeof b));
    sm_tensor *o;
    sm_status *s = sm__kctx_alloc_output(ctx, i, dt, 1, &rank, &o);
    if (s) return s;
    if (dt == SM_INT32)
      ((int32_t *)sm_tensor_data(o))[ax] = (int32_t)off;
    else
      ((int64_t *)sm_tensor_data(o))[ax] = off;
    off += sm__array_int_at(si, ax);
  }
  return NULL;
}

/* ---- SparseSegmentSumGrad / MeanGrad / SqrtNGrad and their V2 ---------------------------------
 * out[indices[i]] += grad[segment_ids[i]] * scale(segment_ids[i]), scale 1 (sum), 1 / count
 * (mean) or 1 / sqrt(count) (sqrtn), count being how often the segment id occurs (at least 1).
 * The V1 output has output_dim0 rows; V2's has one row per distinct index, with the sorted
 * distinct indices as a second output. Accumulated in the dtype (half/bfloat16 in float). */
typedef struct {
  int kind; /* 0 sum, 1 mean, 2 sqrtn */
  int v2;
} ssg_state;

static sm_status *ssg_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  ssg_state *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->kind = strstr(op, "Mean") ? 1 : strstr(op, "SqrtN") ? 2 : 0;
  s->v2 = strstr(op, "GradV2") != NULL;
  *state = s;
  return NULL;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static sm_status *ssg_compute(const void *state, sm_kctx *ctx) {
  const ssg_state *st = state;
  static const char *const names[2][3] = {{"SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad"},
                                          {"SparseSegmentSumGradV2", "SparseSegmentMeanGradV2", "SparseSegmentSqrtNGradV2"}};
  const char *name = names[st->v2][st->kind];
  const sm_tensor *g = sm__kctx_input(ctx, 0), *ix = sm__kctx_input(ctx, 1), *sg = sm__kctx_input(ctx, 2),
                  *d0 = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(g);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && !sm__math_is_f16(dt)) return sm__math_bad_dtype(name, dt);
  if (sm_tensor_rank(ix) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "indices should be a vector.");
  if (sm_tensor_rank(sg) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids should be a vector.");
  if (sm_tensor_rank(d0) != 0 || !sm__array_is_int(sm_tensor_dtype(d0)))
    return sm_status_new(SM_INVALID_ARGUMENT, "output_dim0 should be a scalar.");
  if (!sm__array_is_int(sm_tensor_dtype(ix)) || !sm__array_is_int(sm_tensor_dtype(sg)))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: indices and segment_ids must be integers", name);
  int64_t n = sm_tensor_num_elements(ix);
  if (sm_tensor_num_elements(sg) != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids and indices should have same size.");
  if (sm_tensor_rank(g) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: grad must be at least 1-D", name);
  int64_t m0 = sm__array_int_at(d0, 0), nseg = sm_tensor_dims(g)[0];
  int64_t inner = 1;
  for (int i = 1; i < sm_tensor_rank(g); i++) inner *= sm_tensor_dims(g)[i];
  if (!st->v2 && m0 < 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: output_dim0 is negative: %lld", name, (long long)m0);
  for (int64_t i = 0; i < n; i++) {
    int64_t id = sm__array_int_at(sg, i), k = sm__array_int_at(ix, i);
    if (id < 0 || id >= nseg)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid number of segments: segment id %lld, grad has %lld rows", (long long)id,
                           (long long)nseg);
    if (k < 0 || k >= m0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Index %lld out of range [0, %lld).", (long long)k, (long long)m0);
  }
  sm_status *s = NULL;
  /* the scale per segment, the output row per position, the distinct indices (V2) */
  size_t words = (size_t)(nseg + 2 * n + 1);
  int64_t *cnt = sm__kctx_scratch(ctx, words * sizeof(int64_t), &s);
  if (!cnt) return s;
  int64_t *row = cnt + nseg, *uniq = row + n;
  memset(cnt, 0, (size_t)nseg * sizeof *cnt);
  for (int64_t i = 0; i < n; i++) cnt[sm__array_int_at(sg, i)]++;
  int64_t rows = m0;
  for (int64_t i = 0; i < n; i++) row[i] = sm__array_int_at(ix, i);
  if (st->v2) {
    memcpy(uniq, row, (size_t)n * sizeof *uniq);
    qsort(uniq, (size_t)n, sizeof *uniq, cmp_i64);
    rows = 0;
    for (int64_t i = 0; i < n; i++)
      if (i == 0 || uniq[i] != uniq[i - 1]) uniq[rows++] = uniq[i];
    for (int64_t i = 0; i < n; i++) {
      const int64_t *p = bsearch(&row[i], uniq, (size_t)rows, sizeof *uniq, cmp_i64);
      row[i] = p - uniq;
    }
  }
  int64_t od[SM_MAX_RANK];
  od[0] = rows;
  for (int i = 1; i < sm_tensor_rank(g); i++) od[i] = sm_tensor_dims(g)[i];
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(g), od, &out))) return s;
  if (st->v2) {
    sm_tensor *u;
    if ((s = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(ix), 1, &rows, &u))) return s;
    for (int64_t i = 0; i < rows; i++)
      if (sm_tensor_dtype(ix) == SM_INT32)
        ((int32_t *)sm_tensor_data(u))[i] = (int32_t)uniq[i];
      else
        ((int64_t *)sm_tensor_data(u))[i] = uniq[i];
  }
  if (n == 0 || inner == 0) return NULL;
  const void *gp = sm_tensor_data(g);
  void *op = sm_tensor_data(out);
  float *acc = NULL;
  if (sm__math_is_f16(dt)) {
    int64_t no = sm_tensor_num_elements(out);
    if (!(acc = sm__kctx_scratch(ctx, (size_t)(no + inner) * sizeof(float), &s))) return s;
    memset(acc, 0, (size_t)no * sizeof(float));
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t id = sm__array_int_at(sg, i), c = cnt[id] > 0 ? cnt[id] : 1;
    double sc = st->kind == 0 ? 1.0 : st->kind == 1 ? 1.0 / (double)c : 1.0 / sqrt((double)c);
    int64_t o = row[i] * inner, at = id * inner;
    if (dt == SM_FLOAT) {
      float f = (float)sc, *y = (float *)op + o;
      const float *x = (const float *)gp + at;
      for (int64_t k = 0; k < inner; k++) y[k] += x[k] * f;
    } else if (dt == SM_DOUBLE) {
      double *y = (double *)op + o;
      const double *x = (const double *)gp + at;
      for (int64_t k = 0; k < inner; k++) y[k] += x[k] * sc;
    } else {
      float *tmp = acc + sm_tensor_num_elements(out), f = (float)sc;
      sm__math_to_f32(dt, (const uint16_t *)gp + at, tmp, inner);
      for (int64_t k = 0; k < inner; k++) acc[o + k] += tmp[k] * f;
    }
  }
  if (acc) sm__math_from_f32(dt, acc, op, sm_tensor_num_elements(out));
  return NULL;
}

/* ---- SparseAddGrad, SparseSliceGrad, SparseFillEmptyRowsGrad -----------------------------------
 * Value moves (any fixed-size dtype) along TF's walks (sparse_add_grad_op.cc, sparse_slice_grad_op.cc,
 * sparse_fill_empty_rows_op.cc); the one sum, FillEmptyRows' d_default_value, in the dtype. */

/* -1, 0, 1: row i of matrix a against row j of matrix b (int64 [n, r]) */
static int row_cmp(const int64_t *a, int64_t i, const int64_t *b, int64_t j, int64_t r) {
  for (int64_t d = 0; d < r; d++)
    if (a[i * r + d] != b[j * r + d]) return a[i * r + d] < b[j * r + d] ? -1 : 1;
  return 0;
}

static int is_matrix_i64(const sm_tensor *t) { return sm_tensor_rank(t) == 2 && sm_tensor_dtype(t) == SM_INT64; }

static sm_status *sparse_add_grad_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *bp = sm__kctx_input(ctx, 0), *ai = sm__kctx_input(ctx, 1), *bi = sm__kctx_input(ctx, 2),
                  *si = sm__kctx_input(ctx, 3);
  char a[64], b[64], c[64], d[64];
  if (sm_tensor_rank(bp) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input backprop_val_grad should be a vector but received shape: %s",
                         sm__array_shape_str(bp, a, sizeof a));
  if (!is_matrix_i64(ai) || !is_matrix_i64(bi) || !is_matrix_i64(si))
    return sm_status_new(SM_INVALID_ARGUMENT, "Input indices should be int64 matrices but received shapes: %s, %s, %s",
                         sm__array_shape_str(ai, b, sizeof b), sm__array_shape_str(bi, c, sizeof c),
                         sm__array_shape_str(si, d, sizeof d));
  int64_t r = sm_tensor_dims(ai)[1];
  if (sm_tensor_dims(bi)[1] != r || sm_tensor_dims(si)[1] != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "The densified operands should have the same ndims; for A, B, sum got: %lld%lld%lld",
                         (long long)r, (long long)sm_tensor_dims(bi)[1], (long long)sm_tensor_dims(si)[1]);
  int64_t na = sm_tensor_dims(ai)[0], nb = sm_tensor_dims(bi)[0], ns = sm_tensor_dims(si)[0];
  if (sm_tensor_dims(bp)[0] != ns)
    return sm_status_new(SM_INVALID_ARGUMENT, "backprop_val_grad has %lld values but sum_indices %lld rows",
                         (long long)sm_tensor_dims(bp)[0], (long long)ns);
  int dt = sm_tensor_dtype(bp);
  size_t es = sm__array_esize(dt);
  if (!es || dt == SM_RESOURCE) return sm__math_bad_dtype("SparseAddGrad", dt);
  sm_tensor *ga, *gb;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 1, &na, &ga)) || (st = sm__kctx_alloc_output(ctx, 1, dt, 1, &nb, &gb))) return st;
  const int64_t *av = sm_tensor_data(ai), *bv = sm_tensor_data(bi);
  const char *v = sm_tensor_data(bp);
  char *oa = sm_tensor_data(ga), *ob = sm_tensor_data(gb);
  const int64_t *sv = sm_tensor_data(si);
  int64_t i = 0, j = 0, k = 0;
  /* TF's walk: a and b in step; each one's index against sum's k-th: equal takes the value, below
   * (an entry the sum dropped) takes nothing and holds k back, above leaves it for later */
#define TAKE(idx, iv, o)                                                                          \
  do {                                                                                            \
    int c_ = row_cmp(iv, idx, sv, k, r);                                                          \
    if (c_ == 0) memcpy(o + idx++ * es, v + k * es, es);                                          \
    else if (c_ < 0) k--, idx++;                                                                  \
  } while (0)
  while (i < na && j < nb && k < ns) {
    int cmp = row_cmp(av, i, bv, j, r);
    if (cmp <= 0) TAKE(i, av, oa);
    if (cmp >= 0 && k >= 0) TAKE(j, bv, ob);
    k++;
  }
  for (; i < na && k < ns; k++) TAKE(i, av, oa);
  for (; j < nb && k < ns; k++) TAKE(j, bv, ob);
#undef TAKE
  return NULL;
}

static sm_status *sparse_slice_grad_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *bp = sm__kctx_input(ctx, 0), *ii = sm__kctx_input(ctx, 1), *start = sm__kctx_input(ctx, 2),
                  *oi = sm__kctx_input(ctx, 3);
  char a[64], b[64], c[64];
  if (!is_matrix_i64(ii) || !is_matrix_i64(oi))
    return sm_status_new(SM_INVALID_ARGUMENT, "Input and output indices should be matrices but received shapes: %s and %s",
                         sm__array_shape_str(ii, a, sizeof a), sm__array_shape_str(oi, b, sizeof b));
  if (sm_tensor_rank(bp) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input backprop_val_grad should be a vector but received shape: %s",
                         sm__array_shape_str(bp, a, sizeof a));
  int64_t r = sm_tensor_dims(ii)[1], nin = sm_tensor_dims(ii)[0], nout = sm_tensor_dims(oi)[0];
  if (sm_tensor_dims(oi)[1] != r)
    return sm_status_new(SM_INVALID_ARGUMENT, "The input and output should have the same ndims: got: %lld and %lld",
                         (long long)r, (long long)sm_tensor_dims(oi)[1]);
  if (sm_tensor_dims(bp)[0] != nout)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "# elements of backprop_val_grad and # rows of output_indices should match (#nnz of sum): got %lld and %lld",
                         (long long)sm_tensor_dims(bp)[0], (long long)nout);
  if (sm_tensor_rank(start) != 1 || sm_tensor_num_elements(start) != r || sm_tensor_dtype(start) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "The input_start should be a vector of %lld int64 but received shape %s %s",
                         (long long)r, sm__array_dtype_str(sm_tensor_dtype(start)), sm__array_shape_str(start, c, sizeof c));
  int dt = sm_tensor_dtype(bp);
  size_t es = sm__array_esize(dt);
  if (!es || dt == SM_RESOURCE) return sm__math_bad_dtype("SparseSliceGrad", dt);
  sm_tensor *g;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, &nin, &g);
  if (st) return st;
  const int64_t *iv = sm_tensor_data(ii), *ov = sm_tensor_data(oi), *sv = sm_tensor_data(start);
  const char *v = sm_tensor_data(bp);
  char *o = sm_tensor_data(g);
  int64_t j = 0;
  for (int64_t i = 0; i < nin && j < nout; i++) {
    int match = 1;
    for (int64_t d = 0; d < r && match; d++) match = iv[i * r + d] - sv[d] == ov[j * r + d];
    if (match) memcpy(o + i * es, v + j++ * es, es);
  }
  if (j != nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "Elements of backprop_val_grad aren't all propagated. Num elements:%lld, used: %lld",
                         (long long)nout, (long long)j);
  return NULL;
}

static sm_status *fill_rows_grad_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *map = sm__kctx_input(ctx, 0), *gv = sm__kctx_input(ctx, 1);
  char a[64];
  if (sm_tensor_rank(map) != 1 || sm_tensor_dtype(map) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "reverse_index_map must be a vector, saw: %s", sm__array_shape_str(map, a, sizeof a));
  if (sm_tensor_rank(gv) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "grad_values must be a vector, saw: %s", sm__array_shape_str(gv, a, sizeof a));
  int dt = sm_tensor_dtype(gv);
  if (!addable(dt) || dt == SM_BOOL) return sm__math_bad_dtype("SparseFillEmptyRowsGrad", dt);
  int64_t n = sm_tensor_dims(map)[0], nf = sm_tensor_dims(gv)[0];
  const int64_t *m = sm_tensor_data(map);
  for (int64_t i = 0; i < n; i++)
    if (m[i] < 0 || m[i] >= nf)
      return sm_status_new(SM_INVALID_ARGUMENT, "Elements in reverse index must be in [0, %lld) but got %lld", (long long)nf,
                           (long long)m[i]);
  sm_tensor *dv, *dd;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &dv)) || (st = sm__kctx_alloc_output(ctx, 1, dt, 0, NULL, &dd))) return st;
  size_t es = sm_dtype_size(dt);
  unsigned char *seen = sm__kctx_scratch(ctx, (size_t)(nf ? nf : 1), &st);
  if (!seen) return st;
  memset(seen, 0, (size_t)nf);
  const char *v = sm_tensor_data(gv);
  for (int64_t i = 0; i < n; i++) {
    memcpy((char *)sm_tensor_data(dv) + i * es, v + m[i] * es, es);
    seen[m[i]] = 1;
  }
  /* d_default_value: the sum of the values no row kept, in the dtype (half/bfloat16 in float) */
  void *o = sm_tensor_data(dd);
#define SUM_UNSEEN(T, ACC)                                                                       \
  {                                                                                              \
    ACC acc = 0;                                                                                 \
    for (int64_t i = 0; i < nf; i++)                                                             \
      if (!seen[i]) acc += (ACC)((const T *)(const void *)v)[i];                                 \
    *(T *)o = (T)acc;                                                                            \
  }
  switch (dt) {
    case SM_FLOAT: SUM_UNSEEN(float, float) break;
    case SM_DOUBLE: SUM_UNSEEN(double, double) break;
    case SM_INT8: case SM_UINT8: SUM_UNSEEN(uint8_t, uint8_t) break;
    case SM_INT16: case SM_UINT16: SUM_UNSEEN(uint16_t, uint16_t) break;
    case SM_INT32: case SM_UINT32: SUM_UNSEEN(uint32_t, uint32_t) break;
    case SM_INT64: case SM_UINT64: SUM_UNSEEN(uint64_t, uint64_t) break;
    case SM_COMPLEX64: SUM_UNSEEN(float complex, float complex) break;
    case SM_COMPLEX128: SUM_UNSEEN(double complex, double complex) break;
    default: { /* half, bfloat16 */
      float acc = 0;
      for (int64_t i = 0; i < nf; i++)
        if (!seen[i]) {
          uint16_t h = ((const uint16_t *)(const void *)v)[i];
          acc += dt == SM_HALF ? sm__half_to_f32(h) : sm__bf16_to_f32(h);
        }
      *(uint16_t *)o = dt == SM_HALF ? sm__f32_to_half(acc) : sm__f32_to_bf16(acc);
    }
  }
#undef SUM_UNSEEN
  return NULL;
}

#define SSG(name) {name, ssg_prepare, ssg_compute, free, 0}

const sm_kernel sm_kernels_grad_array[] = {
    SSG("SparseSegmentSumGrad"), SSG("SparseSegmentMeanGrad"), SSG("SparseSegmentSqrtNGrad"),
    SSG("SparseSegmentSumGradV2"), SSG("SparseSegmentMeanGradV2"), SSG("SparseSegmentSqrtNGradV2"),
    {"SparseAddGrad", NULL, sparse_add_grad_compute, NULL, 0},
    {"SparseSliceGrad", NULL, sparse_slice_grad_compute, NULL, 0},
    {"SparseFillEmptyRowsGrad", NULL, fill_rows_grad_compute, NULL, 0},
    {"StridedSliceGrad", sm__array_prepare_strided_slice, sm__array_compute_strided_slice_grad, free, 0},
    {"MirrorPadGrad", sm__array_prepare_mirror_pad, mirror_pad_grad_compute, free, 0},
    {"ConcatOffset", NULL, concat_offset_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
