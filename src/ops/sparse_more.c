/* sparse_more.c - the rest of the SparseTensor kernels tf.sparse reaches (found missing by
 * tools/sweep_ops.py; session 19, c2), with TF's semantics (sparse_concat_op.cc, sparse_slice_op.cc,
 * sparse_split_op.cc, sparse_softmax_op.cc, sparse_reduce_op.cc, count_ops.cc,
 * candidate_sampler_ops.cc are the reference):
 *   SparseConcat (tf.sparse.concat: concat_dim 0 keeps the inputs' order, any other sorts the result
 *   row-major as TF's Reorder does), SparseSlice (entries in input order), SparseSplit (TF's slice
 *   sizes: the first dim % num_split slices one larger), SparseSoftmax (float/double; the values in
 *   row-major order of their indices, as TF writes them), SparseReduceSumSparse /
 *   SparseReduceMaxSparse (one entry per non-empty group, groups row-major), the count family
 *   DenseCountSparseOutput / SparseCountSparseOutput / RaggedCountSparseOutput (tf.sparse.bincount,
 *   tf.math.bincount with a sparse output: per batch row the values' counts or weight sums, sorted
 *   by value) and ComputeAccidentalHits (tf.nn.compute_accidental_hits, sampled softmax).
 * A SparseTensor is (indices int64 [N, rank], values [N], dense_shape int64 [rank]). Dtypes as TF's
 * CPU kernels register them; TF's messages for bad input. Checked against TensorFlow by
 * tests/unit/test_ops_c2.c (tools/gen_c2_cases.py). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/sparse_internal.h"

#define BAD(...) sm_status_new(SM_INVALID_ARGUMENT, __VA_ARGS__)

typedef struct shs {
  char s[160];
} shs;
static shs shape_of(const sm_tensor *t) {
  shs b;
  sm__array_shape_str(t, b.s, sizeof b.s);
  return b;
}
static int64_t i64at(const sm_tensor *t, int64_t i) { return ((const int64_t *)sm_tensor_data(t))[i]; }

/* ---- a stable merge sort of positions under a comparator -------------------------------------- */
typedef int (*pos_less_fn)(const void *ctx, int64_t a, int64_t b);
static void msort(int64_t *p, int64_t *tmp, int64_t n, pos_less_fn less, const void *ctx) {
  if (n < 2) return;
  int64_t h = n / 2;
  msort(p, tmp, h, less, ctx);
  msort(p + h, tmp, n - h, less, ctx);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = less(ctx, p[j], p[i]) ? p[j++] : p[i++];
  while (i < h) tmp[o++] = p[i++];
  while (j < n) tmp[o++] = p[j++];
  memcpy(p, tmp, (size_t)n * sizeof *p);
}

/* Index rows compared over dims order[0..nord) (a row-major order: order = 0..rank-1). */
typedef struct ix_order {
  const int64_t *ix;
  int64_t rank;
  const int64_t *order;
  int nord;
} ix_order;
static int ix_less(const void *c, int64_t a, int64_t b) {
  const ix_order *o = c;
  for (int k = 0; k < o->nord; k++) {
    int64_t d = o->order[k], x = o->ix[a * o->rank + d], y = o->ix[b * o->rank + d];
    if (x != y) return x < y;
  }
  return 0;
}
/* positions 0..n-1 sorted by o (scratch from ctx). */
static int64_t *sorted_positions(sm_kctx *ctx, int64_t n, const ix_order *o, sm_status **st) {
  int64_t *p = sm__kctx_scratch(ctx, (size_t)(2 * n + 1) * sizeof *p, st);
  if (!p) return NULL;
  for (int64_t i = 0; i < n; i++) p[i] = i;
  msort(p, p + n, n, ix_less, o);
  return p;
}

/* ---- element arithmetic over every number dtype ------------------------------------------------ */
enum { K_FLOAT, K_SINT, K_UINT, K_COMPLEX, K_OTHER };
static int num_kind(int dt) {
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: return K_FLOAT;
    case SM_INT8: case SM_INT16: case SM_INT32: case SM_INT64: return K_SINT;
    case SM_UINT8: case SM_UINT16: case SM_UINT32: case SM_UINT64: return K_UINT;
    case SM_COMPLEX64: case SM_COMPLEX128: return K_COMPLEX;
    default: return K_OTHER;
  }
}
typedef struct numv {
  double re, im;
  uint64_t u; /* integers, two's complement */
} numv;
static numv num_get(const sm_tensor *t, int64_t i) {
  numv v = {0, 0, 0};
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: v.re = ((const float *)p)[i]; break;
    case SM_DOUBLE: v.re = ((const double *)p)[i]; break;
    case SM_HALF: v.re = sm__half_to_f32(((const uint16_t *)p)[i]); break;
    case SM_BFLOAT16: v.re = sm__bf16_to_f32(((const uint16_t *)p)[i]); break;
    case SM_COMPLEX64: v.re = ((const float *)p)[2 * i], v.im = ((const float *)p)[2 * i + 1]; break;
    case SM_COMPLEX128: v.re = ((const double *)p)[2 * i], v.im = ((const double *)p)[2 * i + 1]; break;
    default: v.u = (uint64_t)sm__array_int_at(t, i); break;
  }
  return v;
}
static void num_put(sm_tensor *t, int64_t i, numv v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = (float)v.re; break;
    case SM_DOUBLE: ((double *)p)[i] = v.re; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v.re); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v.re); break;
    case SM_COMPLEX64: ((float *)p)[2 * i] = (float)v.re, ((float *)p)[2 * i + 1] = (float)v.im; break;
    case SM_COMPLEX128: ((double *)p)[2 * i] = v.re, ((double *)p)[2 * i + 1] = v.im; break;
    case SM_INT8: case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)v.u; break;
    case SM_INT16: case SM_UINT16: ((uint16_t *)p)[i] = (uint16_t)v.u; break;
    case SM_INT32: case SM_UINT32: ((uint32_t *)p)[i] = (uint32_t)v.u; break;
    case SM_INT64: case SM_UINT64: ((uint64_t *)p)[i] = v.u; break;
    default: break;
  }
}
/* a += b in dtype dt (floats rounded to it after each step, as TF's sum in T). */
static void num_add(int dt, numv *a, numv b) {
  a->u += b.u;
  a->re += b.re, a->im += b.im;
  if (dt == SM_FLOAT || dt == SM_COMPLEX64) a->re = (float)a->re, a->im = (float)a->im;
  else if (dt == SM_HALF) a->re = sm__half_to_f32(sm__f32_to_half((float)a->re));
  else if (dt == SM_BFLOAT16) a->re = sm__bf16_to_f32(sm__f32_to_bf16((float)a->re));
}
static int num_less(int kind, numv a, numv b) {
  if (kind == K_FLOAT) return a.re < b.re;
  if (kind == K_SINT) return (int64_t)a.u < (int64_t)b.u;
  return a.u < b.u;
}
static numv num_lowest(int dt) {
  numv v = {0, 0, 0};
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: v.re = -INFINITY; break;
    case SM_INT8: v.u = (uint64_t)(int64_t)INT8_MIN; break;
    case SM_INT16: v.u = (uint64_t)(int64_t)INT16_MIN; break;
    case SM_INT32: v.u = (uint64_t)(int64_t)INT32_MIN; break;
    case SM_INT64: v.u = (uint64_t)INT64_MIN; break;
    default: break; /* unsigned: 0 */
  }
  return v;
}

/* Sorts entries [at, at + m) of (ix [., rank], v) row-major, stably, in place. */
static sm_status *sort_entries(sm_kctx *ctx, int64_t *ix, sm_tensor *v, int64_t at, int64_t m, int64_t rank) {
  if (m < 2) return NULL;
  int64_t order[SM_MAX_RANK];
  for (int64_t d = 0; d < rank; d++) order[d] = d;
  int64_t *seg = ix + at * rank;
  ix_order io = {seg, rank, order, (int)rank};
  sm_status *st = NULL;
  int64_t *p = sorted_positions(ctx, m, &io, &st);
  int64_t *ti = p ? sm__kctx_scratch(ctx, (size_t)(m * rank + 1) * sizeof *ti, &st) : NULL;
  if (!ti) return st;
  memcpy(ti, seg, (size_t)(m * rank) * sizeof *ti);
  sm_tensor *tv = NULL;
  if ((st = sm_tensor_new(sm_tensor_dtype(v), 1, &m, &tv))) return st;
  if (!(st = sm__array_copy(tv, 0, v, at, m)))
    for (int64_t k = 0; k < m && !st; k++) {
      memcpy(seg + k * rank, ti + p[k] * rank, (size_t)rank * sizeof *seg);
      st = sm__array_copy(v, at + k, tv, p[k], 1);
    }
  sm_tensor_free(tv);
  sm__kctx_scratch_free(ctx, ti);
  sm__kctx_scratch_free(ctx, p);
  return st;
}

/* ---- SparseConcat ------------------------------------------------------------------------------ */
typedef struct concat_state {
  int64_t dim;
} concat_state;
static sm_status *concat_prepare(const sm_node *node, void **state) {
  concat_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "concat_dim", &s->dim);
  int64_t n = 2;
  if (!st && sm__node_attr(node, "N")) st = sm__node_attr_int(node, "N", &n);
  if (!st && n < 2) st = BAD("Value for attr 'N' of %" PRId64 " must be at least minimum 2", n);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *concat_compute(const void *state, sm_kctx *ctx) {
  const concat_state *s = state;
  int n = sm__kctx_num_inputs(ctx) / 3;
  if (n < 1) return BAD("SparseConcat needs at least one input");
  const sm_tensor *in0 = sm__kctx_input(ctx, 0), *sh0 = sm__kctx_input(ctx, 2 * n);
  for (int i = 0; i < n; i++)
    if (sm_tensor_rank(sm__kctx_input(ctx, i)) != 2)
      return BAD("Input indices should be a matrix but received shape %s at position %d", shape_of(sm__kctx_input(ctx, i)).s, i);
  for (int i = 0; i < n; i++)
    if (sm_tensor_rank(sm__kctx_input(ctx, n + i)) != 1)
      return BAD("Input values should be a vector but received shape %s at position %d", shape_of(sm__kctx_input(ctx, n + i)).s, i);
  for (int i = 0; i < n; i++)
    if (sm_tensor_rank(sm__kctx_input(ctx, 2 * n + i)) != 1)
      return BAD("Input shapes should be a vector but received shape %s at position %d", shape_of(sm__kctx_input(ctx, 2 * n + i)).s, i);
  int64_t rank = sm_tensor_dims(sh0)[0];
  for (int i = 0; i < n; i++)
    if (sm_tensor_dtype(sm__kctx_input(ctx, i)) != SM_INT64 || sm_tensor_dtype(sm__kctx_input(ctx, 2 * n + i)) != SM_INT64)
      return BAD("sparse indices and shapes must be int64");
  for (int64_t d = 0; d < rank; d++)
    if (i64at(sh0, d) < 0) return sm_status_new(SM_INTERNAL, "Encountered overflow from large input shape.");
  int64_t cd = s->dim < 0 ? rank + s->dim : s->dim;
  if (cd < 0 || cd >= rank)
    return BAD("Concat dimension must be in range [%" PRId64 ", %" PRId64 "), got %" PRId64, -rank, rank, s->dim);
  int64_t total = 0, cat = 0;
  for (int i = 0; i < n; i++) {
    const sm_tensor *ix = sm__kctx_input(ctx, i), *v = sm__kctx_input(ctx, n + i), *sh = sm__kctx_input(ctx, 2 * n + i);
    if (sm_tensor_dtype(v) != sm_tensor_dtype(sm__kctx_input(ctx, n))) return BAD("values of different dtypes");
    if (i) {
      if (sm_tensor_dims(sh)[0] != rank)
        return BAD("Ranks of all input tensors must match: expected %" PRId64 " but got %" PRId64 " at position %d", rank,
                   sm_tensor_dims(sh)[0], i);
      for (int64_t j = 0; j < rank; j++)
        if (j != cd && i64at(sh, j) != i64at(sh0, j))
          return BAD("Input shapes must match: expected %" PRId64 " for dimension %" PRId64 " but got %" PRId64
                     " at position %d", i64at(sh0, j), j, i64at(sh, j), i);
    }
    if (sm_tensor_dims(ix)[0] != sm_tensor_dims(v)[0])
      return BAD("indices and values rows (indexing dimension) must match. (indices = %" PRId64 ", values = %" PRId64 ")",
                 sm_tensor_dims(ix)[0], sm_tensor_dims(v)[0]);
    if (sm_tensor_dims(ix)[1] != rank) return BAD("Order length must be SparseTensor rank.");
    total += sm_tensor_dims(ix)[0];
    if (i64at(sh, cd) < 0 || __builtin_add_overflow(cat, i64at(sh, cd), &cat))
      return sm_status_new(SM_INTERNAL, "Encountered overflow from large input shape.");
  }
  (void)in0;
  sm_tensor *oi, *ov, *os;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, rank}, &oi)) ||
      (st = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(sm__kctx_input(ctx, n)), 1, &total, &ov)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &rank, &os)))
    return st;
  int64_t *op = sm_tensor_data(oi), o = 0, off = 0;
  for (int i = 0; i < n; i++) {
    const sm_tensor *ix = sm__kctx_input(ctx, i), *v = sm__kctx_input(ctx, n + i);
    int64_t m = sm_tensor_dims(ix)[0];
    const int64_t *ip = sm_tensor_data(ix);
    for (int64_t k = 0; k < m * rank; k++) op[o * rank + k] = (int64_t)((uint64_t)ip[k] + (uint64_t)(k % rank == cd ? off : 0));
    if (m && (st = sm__array_copy(ov, o, v, 0, m))) return st;
    o += m;
    if (__builtin_add_overflow(off, i64at(sm__kctx_input(ctx, 2 * n + i), cd), &off))
      return sm_status_new(SM_INTERNAL, "Encountered overflow from large input shape.");
  }
  for (int64_t d = 0; d < rank; d++) ((int64_t *)sm_tensor_data(os))[d] = d == cd ? cat : i64at(sh0, d);
  if (rank > SM_MAX_RANK) return BAD("rank %" PRId64 " too large", rank);
  /* TF reorders each input (concat_dim first), concatenates them and reorders the whole row-major */
  return sort_entries(ctx, op, ov, 0, total, rank);
}

/* ---- shared: TF's ValidateSparseTensor (kNone) ------------------------------------------------- */
static sm_status *validate_sparse(const sm_tensor *ix, const sm_tensor *v, const sm_tensor *sh) {
  if (sm_tensor_rank(ix) != 2) return BAD("Sparse indices must be rank 2 but is rank %d", sm_tensor_rank(ix));
  if (sm_tensor_rank(v) != 1) return BAD("Sparse values must be rank 1 but is rank %d", sm_tensor_rank(v));
  if (sm_tensor_rank(sh) != 1) return BAD("Sparse shape must be rank 1 but is rank %d", sm_tensor_rank(sh));
  int64_t nnz = sm_tensor_dims(ix)[0], nd = sm_tensor_dims(ix)[1];
  if (sm_tensor_dims(v)[0] != nnz)
    return BAD("Number of elements in indices (%" PRId64 ") and values (%" PRId64 ") do not match", nnz, sm_tensor_dims(v)[0]);
  if (sm_tensor_dims(sh)[0] != nd)
    return BAD("Index rank (%" PRId64 ") and shape rank (%" PRId64 ") do not match", nd, sm_tensor_dims(sh)[0]);
  if (sm_tensor_dtype(ix) != SM_INT64 || sm_tensor_dtype(sh) != SM_INT64) return BAD("sparse indices and shape must be int64");
  if (nd > SM_MAX_RANK) return BAD("sparse rank %" PRId64 " too large", nd);
  return NULL;
}
/* SparseTensor::Create's checks (SparseSoftmax, the reductions). */
static sm_status *create_sparse(const sm_tensor *ix, const sm_tensor *v, const sm_tensor *sh) {
  if (sm_tensor_rank(ix) != 2) return BAD("indices must be a matrix, got shape %s", shape_of(ix).s);
  if (sm_tensor_rank(v) != 1) return BAD("values must be a vector, got shape %s", shape_of(v).s);
  if (sm_tensor_dims(ix)[0] != sm_tensor_dims(v)[0])
    return BAD("indices and values rows (indexing dimension) must match. (indices = %" PRId64 ", values = %" PRId64 ")",
               sm_tensor_dims(ix)[0], sm_tensor_dims(v)[0]);
  if (sm_tensor_dims(ix)[1] != sm_tensor_num_elements(sh)) return BAD("Order length must be SparseTensor rank.");
  if (sm_tensor_dtype(ix) != SM_INT64 || sm_tensor_dtype(sh) != SM_INT64) return BAD("sparse indices and shape must be int64");
  if (sm_tensor_dims(ix)[1] > SM_MAX_RANK) return BAD("sparse rank %" PRId64 " too large", sm_tensor_dims(ix)[1]);
  return NULL;
}
/* ValidateSparseTensor's bounds check (kUnordered). */
static sm_status *check_bounds(const sm_tensor *ix, const sm_tensor *sh) {
  int64_t n = sm_tensor_dims(ix)[0], r = sm_tensor_dims(ix)[1];
  const int64_t *ip = sm_tensor_data(ix);
  for (int64_t i = 0; i < n; i++)
    for (int64_t d = 0; d < r; d++)
      if (ip[i * r + d] < 0 || ip[i * r + d] >= i64at(sh, d)) {
        char b[256];
        size_t o = 0;
        for (int64_t k = 0; k < r && o + 28 < sizeof b; k++) o += (size_t)snprintf(b + o, sizeof b - o, "%s%" PRId64, k ? ", " : "", ip[i * r + k]);
        if (!r) b[0] = 0;
        return BAD("Sparse index tuple indices[%" PRId64 ", :] = [%s] is out of bounds", i, b);
      }
  return NULL;
}
sm_status *sm__sparse_validate(const sm_tensor *indices, const sm_tensor *values, const sm_tensor *dense_shape, int bounds) {
  sm_status *st = validate_sparse(indices, values, dense_shape);
  if (!st && bounds) st = check_bounds(indices, dense_shape);
  return st;
}
/* TensorShape's checks of a dense_shape: non-negative dims, a representable element count. */
static sm_status *check_dense_shape(const sm_tensor *sh) {
  int64_t n = sm_tensor_num_elements(sh), total = 1;
  for (int64_t d = 0; d < n; d++) {
    int64_t v = i64at(sh, d);
    if (v < 0) return BAD("Expected shape dimensions to be non-negative, got %" PRId64, v);
    if (__builtin_mul_overflow(total, v, &total))
      return BAD("Encountered overflow when multiplying %" PRId64 " with %" PRId64 ", result: -1", total, v);
  }
  return NULL;
}

/* ---- SparseSlice -------------------------------------------------------------------------------- */
static sm_status *slice_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *v = sm__kctx_input(ctx, 1), *sh = sm__kctx_input(ctx, 2),
                  *start = sm__kctx_input(ctx, 3), *size = sm__kctx_input(ctx, 4);
  sm_status *st = validate_sparse(ix, v, sh);
  if (st) return st;
  if (sm_tensor_rank(start) != 1) return BAD("Input start should be a vector but received shape %s", shape_of(start).s);
  if (sm_tensor_rank(size) != 1) return BAD("Input size should be a vector but received shape %s", shape_of(size).s);
  int64_t r = sm_tensor_num_elements(sh);
  if (sm_tensor_num_elements(start) != r)
    return BAD("Expected start to be a vector of length %" PRId64 " but got length %" PRId64, r, sm_tensor_num_elements(start));
  if (sm_tensor_num_elements(size) != r)
    return BAD("Expected size to be a vector of length %" PRId64 " but got length %" PRId64, r, sm_tensor_num_elements(size));
  if ((st = check_dense_shape(sh))) return st;
  int64_t od[SM_MAX_RANK];
  const int64_t *b = sm_tensor_data(start), *z = sm_tensor_data(size), *ip = sm_tensor_data(ix);
  int64_t end[SM_MAX_RANK]; /* start + size, saturated */
  for (int64_t d = 0; d < r; d++) {
    int64_t in = i64at(sh, d), lim;
    if (__builtin_add_overflow(b[d], z[d], &end[d])) end[d] = z[d] > 0 ? INT64_MAX : INT64_MIN;
    int big = __builtin_sub_overflow(in, z[d], &lim); /* in - size out of range: size <= 0 wraps high */
    if (big) lim = z[d] < 0 ? INT64_MAX : INT64_MIN;
    od[d] = b[d] < lim ? z[d] : b[d] < in ? (int64_t)((uint64_t)in - (uint64_t)b[d]) : 0;
    if (od[d] < 0) return BAD("Expected a non-negative size, got %" PRId64, od[d]);
  }
  int64_t n = sm_tensor_dims(ix)[0], cnt = 0;
  uint8_t *hit = sm__kctx_scratch(ctx, (size_t)n + 1, &st);
  if (!hit) return st;
  for (int64_t i = 0; i < n; i++) {
    hit[i] = 1;
    for (int64_t d = 0; d < r && hit[i]; d++)
      if (!(b[d] <= ip[i * r + d] && ip[i * r + d] < end[d])) hit[i] = 0;
    cnt += hit[i];
  }
  sm_tensor *oi, *ov, *os;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){cnt, r}, &oi)) ||
      (st = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(v), 1, &cnt, &ov)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &r, &os)))
    return st;
  int64_t *op = sm_tensor_data(oi), o = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    if (!hit[i]) continue;
    for (int64_t d = 0; d < r; d++) op[o * r + d] = (int64_t)((uint64_t)ip[i * r + d] - (uint64_t)b[d]);
    st = sm__array_copy(ov, o++, v, i, 1);
  }
  if (r) memcpy(sm_tensor_data(os), od, (size_t)r * sizeof *od);
  return st;
}

/* ---- SparseSplit -------------------------------------------------------------------------------- */
typedef struct split_state {
  int64_t num;
} split_state;
static sm_status *split_prepare(const sm_node *node, void **state) {
  split_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "num_split", &s->num);
  if (!st && s->num < 1) st = BAD("num_split must be >= 1, got %" PRId64, s->num);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}
static int split_index(int dim, int size, int res) {
  if (!res) return dim / size;
  int off = res * (size + 1);
  return dim < off ? dim / (size + 1) : res + (dim - off) / size;
}
static int split_in_slice(int dim, int size, int res) {
  if (!res) return dim % size;
  int off = res * (size + 1);
  return dim < off ? dim % (size + 1) : (dim - off) % size;
}

static sm_status *split_compute(const void *state, sm_kctx *ctx) {
  const split_state *s = state;
  const sm_tensor *sd = sm__kctx_input(ctx, 0), *ix = sm__kctx_input(ctx, 1), *v = sm__kctx_input(ctx, 2),
                  *sh = sm__kctx_input(ctx, 3);
  if (sm_tensor_num_elements(sd) != 1) return BAD("split_dim must be a scalar, got shape %s", shape_of(sd).s);
  int64_t dim = sm__array_int_at(sd, 0);
  if (sm_tensor_rank(ix) != 2) return BAD("Input indices should be a matrix but received shape %s", shape_of(ix).s);
  if (sm_tensor_rank(v) != 1) return BAD("Input values should be a vector but received shape %s", shape_of(v).s);
  if (sm_tensor_rank(sh) != 1) return BAD("Input shape should be a vector but received shape %s", shape_of(sh).s);
  int64_t r = sm_tensor_num_elements(sh);
  sm_status *st = validate_sparse(ix, v, sh);
  if (!st) st = check_bounds(ix, sh);
  if (st) return st;
  int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r) return BAD("Input axis should be in range [%" PRId64 ", %" PRId64 "), got %" PRId64, -r, r, dim);
  int64_t dsz = i64at(sh, d);
  if (s->num > dsz)
    return BAD("Input num_split should be between 1 and the splitting dimension size (%" PRId64 "), got %" PRId64, dsz, s->num);
  if (dsz > INT32_MAX) return BAD("split dimension %" PRId64 " too large", dsz);
  int num = (int)s->num, size = (int)(dsz / num), res = (int)(dsz % num);
  int64_t n = sm_tensor_dims(ix)[0];
  const int64_t *ip = sm_tensor_data(ix);
  int64_t *cnt = sm__kctx_scratch(ctx, (size_t)(2 * num) * sizeof *cnt, &st);
  if (!cnt) return st;
  memset(cnt, 0, (size_t)(2 * num) * sizeof *cnt);
  for (int64_t i = 0; i < n; i++) {
    int si = split_index((int)ip[i * r + d], size, res);
    if (si < 0 || si >= num) return BAD("Slice index %d is larger than num_split.", si);
    cnt[si]++;
  }
  sm_tensor **outs = sm__kctx_scratch(ctx, (size_t)(2 * num) * sizeof *outs, &st);
  if (!outs) return st;
  for (int k = 0; k < num; k++) {
    sm_tensor *os;
    if ((st = sm__kctx_alloc_output(ctx, k, SM_INT64, 2, (int64_t[]){cnt[k], r}, &outs[k])) ||
        (st = sm__kctx_alloc_output(ctx, num + k, sm_tensor_dtype(v), 1, &cnt[k], &outs[num + k])) ||
        (st = sm__kctx_alloc_output(ctx, 2 * num + k, SM_INT64, 1, &r, &os)))
      return st;
    for (int64_t j = 0; j < r; j++) ((int64_t *)sm_tensor_data(os))[j] = j == d ? (k < res ? size + 1 : size) : i64at(sh, j);
  }
  int64_t *at = cnt + num;
  for (int64_t i = 0; i < n && !st; i++) {
    int si = split_index((int)ip[i * r + d], size, res);
    int64_t o = at[si]++, *op = sm_tensor_data(outs[si]);
    for (int64_t j = 0; j < r; j++) op[o * r + j] = j == d ? split_in_slice((int)ip[i * r + d], size, res) : ip[i * r + j];
    st = sm__array_copy(outs[num + si], o, v, i, 1);
  }
  return st;
}

/* ---- SparseSoftmax ----------------------------------------------------------------------------- */
/* TF's SummarizeValue(3) of an int64 vector: "2 3 4", "..." after three. */
static shs summarize3(const sm_tensor *t) {
  shs b;
  size_t o = 0;
  b.s[0] = 0;
  int64_t n = sm_tensor_num_elements(t);
  for (int64_t i = 0; i < n && i < 3; i++) o += (size_t)snprintf(b.s + o, sizeof b.s - o, "%s%" PRId64, i ? " " : "", i64at(t, i));
  if (n > 3) snprintf(b.s + o, sizeof b.s - o, "...");
  return b;
}

static sm_status *softmax_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *v = sm__kctx_input(ctx, 1), *sh = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(v);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF)
    return BAD("Value for attr 'T' of %s is not in the list of allowed values: half, float, double", sm__array_dtype_str(dt));
  if (sm_tensor_rank(ix) != 2) return BAD("Input sp_indices should be a matrix but received shape: %s", shape_of(ix).s);
  if (sm_tensor_rank(v) != 1 || sm_tensor_rank(sh) != 1)
    return BAD("Inputs sp_values and sp_shape should be vectors but received shapes: %s and %s", shape_of(v).s, shape_of(sh).s);
  if (sm_tensor_num_elements(sh) < 2) return BAD("Input should have rank >= 2, but received shape: %s", summarize3(sh).s);
  sm_status *st = check_dense_shape(sh);
  if (!st) st = create_sparse(ix, v, sh);
  if (st) return st;
  int64_t n = sm_tensor_dims(ix)[0], r = sm_tensor_dims(ix)[1];
  int64_t order[SM_MAX_RANK];
  for (int64_t d = 0; d < r; d++) order[d] = d;
  const int64_t *ip = sm_tensor_data(ix);
  ix_order io = {ip, r, order, (int)r}, gio = {ip, r, order, (int)r - 1};
  int64_t *p = sorted_positions(ctx, n, &io, &st);
  if (!p) return st;
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &out))) return st;
  for (int64_t g = 0; g < n;) {
    int64_t e = g + 1;
    while (e < n && !ix_less(&gio, p[g], p[e])) e++;
    if (dt == SM_HALF) { /* Eigen's half arithmetic: each step in float, rounded to half */
      const uint16_t *x = sm_tensor_data(v);
      uint16_t *y = sm_tensor_data(out);
      float mx = sm__half_to_f32(x[p[g]]), sum = 0;
      for (int64_t k = g + 1; k < e; k++) mx = sm__half_to_f32(x[p[k]]) > mx ? sm__half_to_f32(x[p[k]]) : mx;
      for (int64_t k = g; k < e; k++) {
        float d = sm__half_to_f32(sm__f32_to_half(sm__half_to_f32(x[p[k]]) - mx));
        y[k] = sm__f32_to_half(expf(d));
        sum = sm__half_to_f32(sm__f32_to_half(sum + sm__half_to_f32(y[k])));
      }
      float inv = sm__half_to_f32(sm__f32_to_half(1.0f / sum));
      for (int64_t k = g; k < e; k++) y[k] = sm__f32_to_half(sm__half_to_f32(y[k]) * inv);
    } else if (dt == SM_FLOAT) {
      const float *x = sm_tensor_data(v);
      float *y = sm_tensor_data(out), mx = x[p[g]], sum = 0;
      for (int64_t k = g + 1; k < e; k++) mx = x[p[k]] > mx ? x[p[k]] : mx;
      for (int64_t k = g; k < e; k++) y[k] = expf(x[p[k]] - mx), sum += y[k];
      float inv = 1.0f / sum;
      for (int64_t k = g; k < e; k++) y[k] *= inv;
    } else {
      const double *x = sm_tensor_data(v);
      double *y = sm_tensor_data(out), mx = x[p[g]], sum = 0;
      for (int64_t k = g + 1; k < e; k++) mx = x[p[k]] > mx ? x[p[k]] : mx;
      for (int64_t k = g; k < e; k++) y[k] = exp(x[p[k]] - mx), sum += y[k];
      double inv = 1.0 / sum;
      for (int64_t k = g; k < e; k++) y[k] *= inv;
    }
    g = e;
  }
  return NULL;
}

/* ---- SparseReduceSumSparse / SparseReduceMaxSparse ---------------------------------------------- */
typedef struct red_state {
  int max, keep;
} red_state;
static sm_status *red_prepare(const sm_node *node, void **state) {
  red_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->max = !strcmp(sm__node_op(node), "SparseReduceMaxSparse");
  sm_status *st = sm__node_attr(node, "keep_dims") ? sm__node_attr_bool(node, "keep_dims", &s->keep) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *red_compute(const void *state, sm_kctx *ctx) {
  const red_state *s = state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *v = sm__kctx_input(ctx, 1), *sh = sm__kctx_input(ctx, 2),
                  *ax = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(v), kind = num_kind(dt);
  if (kind == K_OTHER || (s->max && kind == K_COMPLEX))
    return sm__math_bad_dtype(s->max ? "SparseReduceMaxSparse" : "SparseReduceSumSparse", dt);
  if (sm_tensor_rank(sh) != 1) return BAD("Expected input_shape to be a vector; got shape: %s", shape_of(sh).s);
  if (sm_tensor_rank(ax) > 1) return BAD("Expected reduction_axes to be a scalar or a vector; got shape: %s", shape_of(ax).s);
  int64_t r = sm_tensor_num_elements(sh);
  int red[SM_MAX_RANK] = {0};
  for (int64_t i = 0; i < sm_tensor_num_elements(ax); i++) {
    int64_t a = sm__array_int_at(ax, i);
    if (a < -r || a >= r)
      return BAD("Invalid reduction dimension %" PRId64 ", for input with %" PRId64 " dimensions.", a, r);
  }
  sm_status *st = check_dense_shape(sh);
  if (!st) st = create_sparse(ix, v, sh);
  if (st) return st;
  for (int64_t i = 0; i < sm_tensor_num_elements(ax); i++) {
    int64_t a = sm__array_int_at(ax, i);
    red[a < 0 ? a + r : a] = 1;
  }
  int64_t order[SM_MAX_RANK], ng = 0, orank = 0, od[SM_MAX_RANK];
  for (int64_t d = 0; d < r; d++)
    if (!red[d]) order[ng++] = d;
  for (int64_t d = 0, k = ng; d < r; d++)
    if (red[d]) order[k++] = d;
  for (int64_t d = 0; d < r; d++)
    if (s->keep || !red[d]) od[orank++] = red[d] ? 1 : i64at(sh, d);
  int64_t n = sm_tensor_dims(ix)[0];
  const int64_t *ip = sm_tensor_data(ix);
  ix_order io = {ip, r, order, (int)r}, gio = {ip, r, order, (int)ng};
  int64_t *p = sorted_positions(ctx, n, &io, &st);
  if (!p) return st;
  int64_t groups = 0;
  for (int64_t k = 0; k < n; k++)
    if (!k || ix_less(&gio, p[k - 1], p[k])) groups++;
  sm_tensor *oi, *ov, *os;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){groups, orank}, &oi)) ||
      (st = sm__kctx_alloc_output(ctx, 1, dt, 1, &groups, &ov)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &orank, &os)))
    return st;
  int64_t *op = sm_tensor_data(oi), o = 0;
  for (int64_t g = 0; g < n; o++) {
    int64_t e = g + 1;
    numv acc = num_get(v, p[g]);
    if (s->max) { /* Eigen's MaxReducer: from the lowest value, acc = x < acc ? acc : x */
      acc = num_lowest(dt);
      e = g;
    }
    for (; e < n && !ix_less(&gio, p[g], p[e]); e++) {
      numv x = num_get(v, p[e]);
      if (!s->max) num_add(dt, &acc, x);
      else if (!num_less(kind, x, acc)) acc = x;
    }
    num_put(ov, o, acc);
    for (int64_t j = 0; j < ng; j++) op[o * orank + (s->keep ? order[j] : j)] = ip[p[g] * r + order[j]];
    g = e;
  }
  if (orank) memcpy(sm_tensor_data(os), od, (size_t)orank * sizeof *od);
  return NULL;
}

/* ---- DenseCountSparseOutput / SparseCountSparseOutput / RaggedCountSparseOutput ------------------ */
typedef struct count_state {
  int64_t minlength, maxlength;
  int binary;
  int kind; /* 0 dense, 1 sparse, 2 ragged */
} count_state;
static sm_status *count_prepare(const sm_node *node, void **state) {
  count_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  s->kind = !strcmp(op, "DenseCountSparseOutput") ? 0 : !strcmp(op, "SparseCountSparseOutput") ? 1 : 2;
  s->minlength = s->maxlength = -1;
  sm_status *st = NULL;
  if (sm__node_attr(node, "minlength")) st = sm__node_attr_int(node, "minlength", &s->minlength);
  if (!st && sm__node_attr(node, "maxlength")) st = sm__node_attr_int(node, "maxlength", &s->maxlength);
  if (!st) st = sm__node_attr_bool(node, "binary_output", &s->binary);
  if (!st && s->minlength < -1) st = BAD("Value for attr 'minlength' of %" PRId64 " must be at least minimum -1", s->minlength);
  if (!st && s->maxlength < -1) st = BAD("Value for attr 'maxlength' of %" PRId64 " must be at least minimum -1", s->maxlength);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct count_key {
  const int64_t *batch, *value;
} count_key;
static int count_less(const void *c, int64_t a, int64_t b) {
  const count_key *k = c;
  return k->batch[a] != k->batch[b] ? k->batch[a] < k->batch[b] : k->value[a] < k->value[b];
}

static sm_status *non_negative(const sm_tensor *vals) {
  for (int64_t i = 0; i < sm_tensor_num_elements(vals); i++)
    if (sm__array_int_at(vals, i) < 0) return BAD("Input values must all be non-negative");
  return NULL;
}

static sm_status *count_compute(const void *state, sm_kctx *ctx) {
  const count_state *s = state;
  const sm_tensor *vals, *w, *ix = NULL, *sh = NULL, *splits = NULL;
  if (s->kind == 0) vals = sm__kctx_input(ctx, 0), w = sm__kctx_input(ctx, 1);
  else if (s->kind == 1) ix = sm__kctx_input(ctx, 0), vals = sm__kctx_input(ctx, 1), sh = sm__kctx_input(ctx, 2), w = sm__kctx_input(ctx, 3);
  else splits = sm__kctx_input(ctx, 0), vals = sm__kctx_input(ctx, 1), w = sm__kctx_input(ctx, 2);
  int wdt = sm_tensor_dtype(w);
  if (sm_tensor_dtype(vals) != SM_INT32 && sm_tensor_dtype(vals) != SM_INT64) return sm__math_bad_dtype("Count", sm_tensor_dtype(vals));
  if (wdt != SM_INT32 && wdt != SM_INT64 && wdt != SM_FLOAT && wdt != SM_DOUBLE) return sm__math_bad_dtype("Count", wdt);
  int use_w = sm_tensor_num_elements(w) > 0, is_1d = 0;
  int64_t nb = 1, nv = sm_tensor_num_elements(vals);
  int same = sm_tensor_rank(w) == sm_tensor_rank(vals);
  for (int d = 0; same && d < sm_tensor_rank(w); d++) same = sm_tensor_dims(w)[d] == sm_tensor_dims(vals)[d];
  sm_status *st = NULL;
  int64_t *batch = sm__kctx_scratch(ctx, (size_t)(4 * nv + 2) * sizeof *batch, &st);
  if (!batch) return st;
  if (s->kind == 0) {
    if (sm_tensor_rank(vals) != 1 && sm_tensor_rank(vals) != 2)
      return BAD("Input must be a 1 or 2-dimensional tensor. Got: %s", shape_of(vals).s);
    if ((st = non_negative(vals))) return st;
    if (use_w && !same)
      return BAD("Weights and data must have the same shape. Weight shape: %s; data shape: %s", shape_of(w).s, shape_of(vals).s);
    is_1d = sm_tensor_rank(vals) == 1;
    if (!is_1d) {
      if (!sm_tensor_dims(vals)[0]) return BAD("Invalid input: Shapes dimension cannot be 0.");
      nb = sm_tensor_dims(vals)[0];
    }
    int64_t per = nb ? nv / nb : 0;
    for (int64_t i = 0; i < nv; i++) batch[i] = per ? i / per : 0;
  } else if (s->kind == 1) {
    if (sm_tensor_rank(ix) != 2) return BAD("Input indices must be a 2-dimensional tensor. Got: %s", shape_of(ix).s);
    if (sm_tensor_rank(vals) != 1) return BAD("Input values must be a vector. Got: %s", shape_of(vals).s);
    if (sm_tensor_rank(sh) != 1) return BAD("Input shape must be a vector. Got: %s", shape_of(sh).s);
    if (sm_tensor_dims(vals)[0] != sm_tensor_dims(ix)[0])
      return BAD("Number of values must match first dimension of indices.Got %" PRId64 " values, indices shape: %s",
                 sm_tensor_dims(vals)[0], shape_of(ix).s);
    if (sm_tensor_dims(sh)[0] != sm_tensor_dims(ix)[1])
      return BAD("Number of dimensions must match second dimension of indices.Got %" PRId64 " dimensions, indices shape: %s",
                 sm_tensor_dims(sh)[0], shape_of(ix).s);
    if (sm_tensor_num_elements(sh) < 1) return BAD("The shape argument requires at least one element.");
    if (sm_tensor_dtype(ix) != SM_INT64 || sm_tensor_dtype(sh) != SM_INT64) return BAD("sparse indices and shape must be int64");
    int64_t r = sm_tensor_dims(ix)[1];
    const int64_t *ip = sm_tensor_data(ix);
    for (int64_t i = 0; i < nv; i++)
      for (int64_t j = 0; j < r; j++)
        if (ip[i * r + j] < 0 || ip[i * r + j] >= i64at(sh, j)) {
          char dims[200];
          size_t o = 0;
          for (int64_t k = 0; k < r && k < 10 && o + 24 < sizeof dims; k++) o += (size_t)snprintf(dims + o, sizeof dims - o, "%s%" PRId64, k ? " " : "", i64at(sh, k));
          if (r > 10 && o + 4 < sizeof dims) snprintf(dims + o, sizeof dims - o, "...");
          if (!r) dims[0] = 0;
          return BAD("Invalid index value at %" PRId64 ": dimension %" PRId64 " has value %" PRId64 " which is not in [0, %" PRId64
                     ") (as given by dense shape Tensor<type: int64 shape: [%" PRId64 "] values: %s>", i, j, ip[i * r + j], i64at(sh, j), r, dims);
        }
    if ((st = non_negative(vals))) return st;
    if (use_w && !same)
      return BAD("Weights and values must have the same shape. Weight shape: %s; values shape: %s", shape_of(w).s, shape_of(vals).s);
    is_1d = r == 1;
    nb = is_1d ? 1 : i64at(sh, 0);
    if (!(nb > 0 && nb < INT32_MAX)) return BAD("Cannot allocate %" PRId64 " batches, is the dense shape too wide?", nb);
    for (int64_t i = 0; i < nv; i++) batch[i] = is_1d ? 0 : ip[i * r];
  } else {
    if (use_w && !same)
      return BAD("Weights and values must have the same shape. Weight shape: %s; values shape: %s", shape_of(w).s, shape_of(vals).s);
    if (sm_tensor_dtype(splits) != SM_INT64) return BAD("splits must be int64");
    nb = sm_tensor_num_elements(splits) - 1;
    if (nb <= 0) return BAD("Must provide at least 2 elements for the splits argument");
    if (i64at(splits, 0) != 0) return BAD("Splits must start with 0, not with %" PRId64, i64at(splits, 0));
    if (i64at(splits, nb) != nv)
      return BAD("Splits must end with the number of values, got %" PRId64 " instead of %" PRId64, i64at(splits, nb), nv);
    if ((st = non_negative(vals))) return st;
    /* TF's walk (no order check): value i is in the row before the first split above i; splits[nb]
     * is the count, so the walk ends in range */
    for (int64_t i = 0, bi = 0; i < nv; i++) {
      while (i >= i64at(splits, bi)) bi++;
      batch[i] = bi - 1;
    }
  }
  /* the values counted: >= 0 and under maxlength (when it is > 0) */
  int64_t *value = batch + nv, *p = value + nv, m = 0, maxv = 0;
  for (int64_t i = 0; i < nv; i++) {
    int64_t x = sm__array_int_at(vals, i);
    if (x >= 0 && (s->maxlength <= 0 || x < s->maxlength)) {
      value[i] = x;
      p[m++] = i;
      if (x > maxv) maxv = x;
    }
  }
  count_key key = {batch, value};
  msort(p, p + m, m, count_less, &key);
  int64_t groups = 0;
  for (int64_t k = 0; k < m; k++)
    if (!k || count_less(&key, p[k - 1], p[k])) groups++;
  int64_t top = maxv < INT64_MAX ? maxv + 1 : INT64_MAX;
  int64_t cols = is_1d ? 1 : 2, size = s->maxlength > 0 ? s->maxlength : (top > s->minlength ? top : s->minlength);
  sm_tensor *oi, *ov, *os;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){groups, cols}, &oi)) ||
      (st = sm__kctx_alloc_output(ctx, 1, wdt, 1, &groups, &ov)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &cols, &os)))
    return st;
  int64_t *op = sm_tensor_data(oi), o = 0;
  for (int64_t g = 0; g < m; o++) {
    int64_t e = g;
    double fsum = 0;
    float f32 = 0;
    uint64_t isum = 0;
    for (; e < m && !count_less(&key, p[g], p[e]); e++) {
      if (s->binary) continue;
      if (!use_w) isum++, fsum += 1, f32 += 1;
      else if (wdt == SM_FLOAT) f32 += ((const float *)sm_tensor_data(w))[p[e]];
      else if (wdt == SM_DOUBLE) fsum += ((const double *)sm_tensor_data(w))[p[e]];
      else isum += (uint64_t)sm__array_int_at(w, p[e]);
    }
    void *vp = sm_tensor_data(ov);
    switch (wdt) {
      case SM_FLOAT: ((float *)vp)[o] = s->binary ? 1.0f : f32; break;
      case SM_DOUBLE: ((double *)vp)[o] = s->binary ? 1.0 : fsum; break;
      case SM_INT32: ((int32_t *)vp)[o] = s->binary ? 1 : (int32_t)(uint32_t)isum; break;
      default: ((int64_t *)vp)[o] = s->binary ? 1 : (int64_t)isum; break;
    }
    if (is_1d) op[o] = value[p[g]];
    else op[2 * o] = batch[p[g]], op[2 * o + 1] = value[p[g]];
    g = e;
  }
  int64_t *sp = sm_tensor_data(os);
  if (is_1d) sp[0] = size;
  else sp[0] = nb, sp[1] = size;
  return NULL;
}

/* ---- ComputeAccidentalHits ----------------------------------------------------------------------- */
typedef struct hits_state {
  int64_t num_true;
} hits_state;
static sm_status *hits_prepare(const sm_node *node, void **state) {
  hits_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "num_true", &s->num_true);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}
static int hits_less(const void *c, int64_t a, int64_t b) {
  const int64_t *v = c;
  return v[a] < v[b];
}

static sm_status *hits_compute(const void *state, sm_kctx *ctx) {
  const hits_state *s = state;
  const sm_tensor *tc = sm__kctx_input(ctx, 0), *sc = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(tc) != 2 || sm_tensor_dims(tc)[1] != s->num_true)
    return BAD("true_candidates must be a batch_size * num_true matrix");
  if (sm_tensor_rank(sc) != 1) return BAD("sampled_candidates must be a vector, which is typically an output from CandidateSampler");
  if (sm_tensor_dtype(tc) != SM_INT64 || sm_tensor_dtype(sc) != SM_INT64) return BAD("candidates must be int64");
  int64_t ns = sm_tensor_dims(sc)[0], nt = sm_tensor_num_elements(tc);
  const int64_t *sv = sm_tensor_data(sc), *tv = sm_tensor_data(tc);
  sm_status *st = NULL;
  int64_t *p = sm__kctx_scratch(ctx, (size_t)(2 * ns + 2 * nt + 2) * sizeof *p, &st);
  if (!p) return st;
  int64_t *hit_row = p + 2 * ns, *hit_pos = hit_row + nt;
  for (int64_t i = 0; i < ns; i++) p[i] = i;
  msort(p, p + ns, ns, hits_less, sv); /* equal candidates in position order: the last one wins */
  int64_t k = 0;
  for (int64_t i = 0; i < nt; i++) {
    int64_t lo = 0, hi = ns; /* the first sorted position whose candidate is > tv[i] */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (sv[p[mid]] <= tv[i]) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && sv[p[lo - 1]] == tv[i]) hit_row[k] = i / s->num_true, hit_pos[k++] = p[lo - 1];
  }
  sm_tensor *oi, *oid, *ow;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT32, 1, &k, &oi)) || (st = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &k, &oid)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 1, &k, &ow)))
    return st;
  for (int64_t i = 0; i < k; i++) {
    ((int32_t *)sm_tensor_data(oi))[i] = (int32_t)hit_row[i];
    ((int64_t *)sm_tensor_data(oid))[i] = hit_pos[i];
    ((float *)sm_tensor_data(ow))[i] = -FLT_MAX;
  }
  return NULL;
}

const sm_kernel sm_kernels_sparse_more[] = {
    {"SparseConcat", concat_prepare, concat_compute, free, 0},
    {"SparseSlice", NULL, slice_compute, NULL, 0},
    {"SparseSplit", split_prepare, split_compute, free, 0},
    {"SparseSoftmax", NULL, softmax_compute, NULL, 0},
    {"SparseReduceSumSparse", red_prepare, red_compute, free, 0},
    {"SparseReduceMaxSparse", red_prepare, red_compute, free, 0},
    {"DenseCountSparseOutput", count_prepare, count_compute, free, 0},
    {"SparseCountSparseOutput", count_prepare, count_compute, free, 0},
    {"RaggedCountSparseOutput", count_prepare, count_compute, free, 0},
    {"ComputeAccidentalHits", hits_prepare, hits_compute, free, 0},
    {0},
};
