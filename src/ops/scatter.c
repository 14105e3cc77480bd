/* scatter.c - kernels that sort, scatter and bucket by index: TopKV2, ApproxTopK, ScatterNd,
 * TensorScatterUpdate/Add/Sub/Min/Max, Bucketize, SparseToDense. The ScatterNd core (do_scatter) takes
 * every real type, bool (update; add as or and sub as exclusive or, as TF's ScatterNd, ScatterNdNonAliasingAdd and
 * ResourceScatterNdAdd/Sub), half/bfloat16 (in float) and complex (no min/max).
 *
 * TensorFlow's CPU kernels are the reference (topk_op.cc, scatter_nd_op.cc, bucketize_op.cc,
 * sparse_to_dense_op.cc): the same checks in the same order with the same messages, every index
 * checked before it is used (an out-of-range one is an InvalidArgument naming it, never a write).
 * TopKV2 orders by value, ties by lower index first, with TF's algorithms followed step by step
 * (k == 1: the max, NaN never winning; k == n: introsort; else gtl::TopN's heap). Matched against
 * TF 2.21 except for two cases TF leaves to its algorithm: sorted=false with 1 < k < n (TF's order
 * differs from this heap's) and NaN rows with 1 < k < n (tools/gen_scatter_cases.py KNOWN_GAPS).
 * ApproxTopK (tf.math.approx_max_k / approx_min_k) is, as TF's CPU kernel, the exact sorted TopKV2
 * with k an attr; TF's CPU has it only for the last dimension and max_k, this one also reduces any
 * reduction_dimension and gives min_k (the k smallest, ascending: TopKV2 of the negated row). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

/* ---- element access ----------------------------------------------------------------------- */

static int is_real(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16 || dt == SM_INT32 || dt == SM_INT64 || dt == SM_INT16 || dt == SM_INT8 ||
         dt == SM_UINT8 || dt == SM_UINT16 || dt == SM_UINT32 || dt == SM_UINT64;
}

/* "[2,3]" of an arbitrary shape. */
static const char *shape_str(int rank, const int64_t *dims, char *buf, size_t cap) {
  return sm_shape_str(rank, dims, buf, cap);
}

/* ---- TopKV2 --------------------------------------------------------------------------------- */

typedef struct {
  int sorted;
  int approx, is_max; /* ApproxTopK: k and the dimension from attrs */
  int k_attr;         /* TopK (V1): k from an attr */
  int64_t k, dim;
} topk_state;

static sm_status *topk_prepare(const sm_node *node, void **state) {
  topk_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int b = 1;
  sm_status *s = sm__node_attr_bool(node, "sorted", &b);
  if (s) {
    sm_status_free(s);
    b = 1;
  }
  st->sorted = b;
  st->is_max = 1, st->dim = -1;
  if (!strcmp(sm__node_op(node), "TopK")) {
    st->k_attr = 1;
    s = sm__node_attr_int(node, "k", &st->k);
    if (s) {
      free(st);
      return s;
    }
  }
  if (!strcmp(sm__node_op(node), "ApproxTopK")) {
    st->approx = 1, st->sorted = 1;
    s = sm__node_attr_int(node, "k", &st->k);
    if (!s && sm__node_attr(node, "reduction_dimension")) s = sm__node_attr_int(node, "reduction_dimension", &st->dim);
    if (!s && sm__node_attr(node, "is_max_k")) s = sm__node_attr_bool(node, "is_max_k", &st->is_max);
    if (!s && st->k < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)st->k);
    if (s) {
      free(st);
      return s;
    }
  }
  *state = st;
  return NULL;
}

/* One row of the input, and TF's two orders on column indices a, b: `gt` (x[b] < x[a]) for the
 * full sort, `stable` (x[b] < x[a], else x[b] > x[a] false, else a < b) for the TopN heap. Under
 * NaN neither is a strict weak order, so the result depends on the exact algorithm: these are
 * followed step by step (libstdc++'s introsort and heap operations, gtl::TopN). */
typedef struct {
  const void *p;
  int dt;
} topk_row;

/* half / bfloat16 as float (exact): TopKV2 of a keras.ops.sort / top_k under mixed_float16 */
static float f16(const topk_row *r, int64_t i) {
  uint16_t h = ((const uint16_t *)r->p)[i];
  uint32_t u, sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (r->dt == SM_BFLOAT16)
    u = (uint32_t)h << 16;
  else if (exp == 0x1f)
    u = sign | 0x7f800000u | (man << 13);
  else if (exp == 0)
    return sign ? -(float)man * 5.9604644775390625e-8f : (float)man * 5.9604644775390625e-8f; /* man * 2^-24 */
  else
    u = sign | ((exp + 112) << 23) | (man << 13);
  memcpy(&f, &u, 4);
  return f;
}

static int lt(const topk_row *r, int64_t a, int64_t b) { /* x[a] < x[b] */
  switch (r->dt) {
  case SM_HALF:
  case SM_BFLOAT16: return f16(r, a) < f16(r, b);
  case SM_FLOAT: return ((const float *)r->p)[a] < ((const float *)r->p)[b];
  case SM_DOUBLE: return ((const double *)r->p)[a] < ((const double *)r->p)[b];
  case SM_INT32: return ((const int32_t *)r->p)[a] < ((const int32_t *)r->p)[b];
  case SM_INT64: return ((const int64_t *)r->p)[a] < ((const int64_t *)r->p)[b];
  case SM_INT16: return ((const int16_t *)r->p)[a] < ((const int16_t *)r->p)[b];
  case SM_INT8: return ((const int8_t *)r->p)[a] < ((const int8_t *)r->p)[b];
  case SM_UINT8: return ((const uint8_t *)r->p)[a] < ((const uint8_t *)r->p)[b];
  case SM_UINT16: return ((const uint16_t *)r->p)[a] < ((const uint16_t *)r->p)[b];
  case SM_UINT32: return ((const uint32_t *)r->p)[a] < ((const uint32_t *)r->p)[b];
  default: return ((const uint64_t *)r->p)[a] < ((const uint64_t *)r->p)[b];
  }
}
static int eq(const topk_row *r, int64_t a, int64_t b) {
  if (r->dt == SM_FLOAT) return ((const float *)r->p)[a] == ((const float *)r->p)[b];
  if (r->dt == SM_DOUBLE) return ((const double *)r->p)[a] == ((const double *)r->p)[b];
  if (r->dt == SM_HALF || r->dt == SM_BFLOAT16) return f16(r, a) == f16(r, b);
  return !lt(r, a, b) && !lt(r, b, a);
}
static int gt(const topk_row *r, int64_t a, int64_t b) { return lt(r, b, a); }
static int stable(const topk_row *r, int64_t a, int64_t b) {
  if (lt(r, b, a)) return 1;
  if (lt(r, a, b)) return 0;
  return a < b;
}

typedef int (*topk_cmp)(const topk_row *, int64_t, int64_t);

/* Binary heap operations with the same hole-moving steps as libstdc++'s. */
static void push_hole(const topk_row *r, topk_cmp c, int64_t *v, int64_t hole, int64_t top, int64_t val) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && c(r, v[parent], val)) {
    v[hole] = v[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  v[hole] = val;
}
static void adjust_heap(const topk_row *r, topk_cmp c, int64_t *v, int64_t hole, int64_t len, int64_t val) {
  int64_t top = hole, second = hole;
  while (second < (len - 1) / 2) {
    second = 2 * (second + 1);
    if (c(r, v[second], v[second - 1])) second--;
    v[hole] = v[second];
    hole = second;
  }
  if ((len & 1) == 0 && second == (len - 2) / 2) {
    second = 2 * (second + 1);
    v[hole] = v[second - 1];
    hole = second - 1;
  }
  push_hole(r, c, v, hole, top, val);
}
static void make_heap(const topk_row *r, topk_cmp c, int64_t *v, int64_t len) {
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; parent--) {
    adjust_heap(r, c, v, parent, len, v[parent]);
    if (parent == 0) return;
  }
}
static void pop_heap(const topk_row *r, topk_cmp c, int64_t *v, int64_t len) { /* top to v[len-1] */
  if (len < 2) return;
  int64_t val = v[len - 1];
  v[len - 1] = v[0];
  adjust_heap(r, c, v, 0, len - 1, val);
}
static void sort_heap(const topk_row *r, topk_cmp c, int64_t *v, int64_t len) {
  for (; len > 1; len--) pop_heap(r, c, v, len);
}

/* gtl::TopN(k, stable) fed 0..n-1 (k < n): v has room for k + 1; afterwards v[0..k) holds the
 * kept indices, in heap order (TF's unsorted output) or sorted. */
static void topn(const topk_row *r, int64_t *v, int64_t n, int64_t k, int sorted) {
  int64_t size = 0;
  for (int64_t i = 0; i < n; i++) {
    if (size < k + 1) {
      v[size++] = i;
      if (size == k + 1) {
        make_heap(r, stable, v, size);
        pop_heap(r, stable, v, size);
      }
    } else if (stable(r, i, v[0])) {
      v[k] = i;
      push_hole(r, stable, v, k, 0, v[k]);
      pop_heap(r, stable, v, k + 1);
    }
  }
  if (sorted) sort_heap(r, stable, v, k);
}

/* std::sort(v, v + n, gt) as libstdc++ does it: introsort (median-of-three, unguarded partition,
 * heap sort past the depth limit) down to runs of 16, then insertion sort. The unguarded scans are
 * bounded here: with NaN they could leave the range (where TF's behaviour is undefined). */
static void insertion(const topk_row *r, int64_t *v, int64_t lo, int64_t hi, int guarded_from) {
  for (int64_t i = lo + 1; i < hi; i++) {
    int64_t val = v[i];
    if (i < guarded_from && gt(r, val, v[lo])) {
      memmove(v + lo + 1, v + lo, (size_t)(i - lo) * sizeof *v);
      v[lo] = val;
    } else {
      int64_t j = i;
      while (j > 0 && gt(r, val, v[j - 1])) {
        v[j] = v[j - 1];
        j--;
      }
      v[j] = val;
    }
  }
}
static void swap_i(int64_t *a, int64_t *b) {
  int64_t t = *a;
  *a = *b;
  *b = t;
}
static void introsort(const topk_row *r, int64_t *v, int64_t lo, int64_t hi, int depth) {
  while (hi - lo > 16) {
    if (depth == 0) {
      make_heap(r, gt, v + lo, hi - lo);
      sort_heap(r, gt, v + lo, hi - lo);
      return;
    }
    depth--;
    int64_t a = lo + 1, b = lo + (hi - lo) / 2, c = hi - 1;
    if (gt(r, v[a], v[b])) {
      if (gt(r, v[b], v[c])) swap_i(&v[lo], &v[b]);
      else if (gt(r, v[a], v[c])) swap_i(&v[lo], &v[c]);
      else swap_i(&v[lo], &v[a]);
    } else if (gt(r, v[a], v[c])) swap_i(&v[lo], &v[a]);
    else if (gt(r, v[b], v[c])) swap_i(&v[lo], &v[c]);
    else swap_i(&v[lo], &v[b]);
    int64_t f = lo + 1, l = hi;
    for (;;) {
      while (f < hi - 1 && gt(r, v[f], v[lo])) f++;
      l--;
      while (l > lo && gt(r, v[lo], v[l])) l--;
      if (!(f < l)) break;
      swap_i(&v[f], &v[l]);
      f++;
    }
    introsort(r, v, f, hi, depth);
    hi = f;
  }
}
static void tf_sort(const topk_row *r, int64_t *v, int64_t n) {
  if (n < 2) return;
  int lg = 0;
  while ((n >> (lg + 1)) > 0) lg++;
  introsort(r, v, 0, n, 2 * lg);
  if (n > 16) {
    insertion(r, v, 0, 16, 16);
    insertion(r, v, 15, n, 0); /* unguarded part: every element from 16 on */
  } else {
    insertion(r, v, 0, n, (int)n);
  }
  /* runs of equal values in index order */
  for (int64_t b = 0; b < n;) {
    int64_t e = b + 1;
    if (e == n) break;
    if (eq(r, v[b], v[e])) {
      while (++e < n && eq(r, v[b], v[e])) {}
      for (int64_t i = b + 1; i < e; i++)
        for (int64_t j = i; j > b && v[j] < v[j - 1]; j--) swap_i(&v[j], &v[j - 1]);
    }
    b = e;
  }
}

/* ApproxTopK along any dimension, max or min: each row gathered into a float buffer (negated for
 * min; half / bfloat16 / float convert exactly) and run through TopKV2's selection; values are
 * copied from the input. */
static sm_status *topk_general(sm_kctx *ctx, const sm_tensor *x, int64_t k, int axis, int is_max) {
  int R = sm_tensor_rank(x), dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_HALF && dt != SM_BFLOAT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "ApproxTopK is not defined for %s", sm__array_dtype_str(dt));
  const int64_t *xd = sm_tensor_dims(x);
  int64_t n = xd[axis], outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= xd[i];
  for (int i = axis + 1; i < R; i++) inner *= xd[i];
  if (n < k)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld", (long long)n, (long long)k);
  int64_t od[SM_MAX_RANK];
  memcpy(od, xd, (size_t)R * sizeof *od);
  od[axis] = k;
  sm_tensor *vals, *idxs;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, R, od, &vals);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_INT32, R, od, &idxs);
  if (s || k == 0 || sm_tensor_num_elements(vals) == 0) return s;
  int64_t *v = sm__kctx_scratch(ctx, ((size_t)n + 1) * sizeof *v, &s);
  float *buf = v ? sm__kctx_scratch(ctx, (size_t)n * sizeof *buf, &s) : NULL;
  if (!buf) return s;
  size_t es = sm__array_esize(dt);
  topk_row row = {buf, SM_FLOAT};
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      for (int64_t c = 0; c < n; c++) {
        int64_t i = (o * n + c) * inner + in;
        float f = dt == SM_FLOAT ? ((const float *)sm_tensor_data(x))[i] : f16(&(topk_row){sm_tensor_data(x), dt}, i);
        buf[c] = is_max ? f : -f;
      }
      if (k == 1) {
        int64_t best = -1;
        for (int64_t c = 0; c < n; c++)
          if (eq(&row, c, c) && (best < 0 || lt(&row, best, c))) best = c;
        v[0] = best < 0 ? 0 : best;
      } else if (k == n) {
        for (int64_t c = 0; c < n; c++) v[c] = c;
        tf_sort(&row, v, n);
      } else {
        topn(&row, v, n, k, 1);
      }
      for (int64_t c = 0; c < k; c++) {
        int64_t oi = (o * k + c) * inner + in, xi = (o * n + v[c]) * inner + in;
        memcpy((char *)sm_tensor_data(vals) + (size_t)oi * es, (const char *)sm_tensor_data(x) + (size_t)xi * es, es);
        ((int32_t *)sm_tensor_data(idxs))[oi] = (int32_t)v[c];
      }
    }
  sm__kctx_scratch_free(ctx, buf);
  sm__kctx_scratch_free(ctx, v);
  return NULL;
}

static sm_status *topk_compute(const void *state, sm_kctx *ctx) {
  const topk_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  char a[128];
  int64_t k = st->k;
  if (!st->approx && !st->k_attr) {
    const sm_tensor *kt = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(kt) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "k must be scalar, got shape %s", sm__array_shape_str(kt, a, sizeof a));
    if (!sm__array_is_int(sm_tensor_dtype(kt))) return sm_status_new(SM_INVALID_ARGUMENT, "k must be an integer");
    k = sm__array_int_at(kt, 0);
  }
  if (k < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
  int R = sm_tensor_rank(x);
  if (R < 1) return sm_status_new(SM_INVALID_ARGUMENT, "input must be >= 1-D, got shape %s", sm__array_shape_str(x, a, sizeof a));
  int dt = sm_tensor_dtype(x);
  if (!is_real(dt)) return sm_status_new(SM_INVALID_ARGUMENT, "TopKV2 is not defined for %s", sm__array_dtype_str(dt));
  const int64_t *xd = sm_tensor_dims(x);
  int64_t axis = st->dim < 0 ? st->dim + R : st->dim;
  if (axis < 0 || axis >= R)
    return sm_status_new(SM_INVALID_ARGUMENT, "reduction_dimension %lld is out of range for an input of rank %d", (long long)st->dim, R);
  if (axis != R - 1 || !st->is_max) return topk_general(ctx, x, k, (int)axis, st->is_max);
  int64_t n = xd[R - 1];
  if (n < k)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld", (long long)n,
                         (long long)k);
  int idt = SM_INT32;
  const sm_node *node = sm__kctx_node(ctx);
  if (sm__node_num_outputs(node) > 1) idt = sm__node_output_dtype(node, 1);
  if (idt != SM_INT16 && idt != SM_INT32 && idt != SM_INT64) idt = SM_INT32;
  int64_t od[SM_MAX_RANK];
  memcpy(od, xd, (size_t)R * sizeof *od);
  od[R - 1] = k;
  sm_tensor *vals, *idxs;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, R, od, &vals);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, idt, R, od, &idxs);
  if (s || k == 0 || sm_tensor_num_elements(vals) == 0) return s;
  int64_t rows = sm_tensor_num_elements(x) / n;
  int64_t *v = sm__kctx_scratch(ctx, ((size_t)n + 1) * sizeof *v, &s);
  if (!v) return s;
  size_t es = sm__array_esize(dt);
  int64_t work = 0; /* elements since the last deadline check */
  for (int64_t r = 0; r < rows; r++) {
    if ((work += n) >= (1 << 20)) {
      work = 0;
      if ((s = sm__kctx_check_stop(ctx))) return s;
    }
    topk_row row = {(const char *)sm_tensor_data(x) + (size_t)(r * n) * es, dt};
    if (k == 1) { /* TF: the row's max (NaN never wins), then the first column equal to it, else 0 */
      int64_t best = -1;
      for (int64_t c = 0; c < n; c++)
        if ((dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF && dt != SM_BFLOAT16) || eq(&row, c, c))
          if (best < 0 || lt(&row, best, c)) best = c;
      v[0] = best < 0 ? 0 : best;
    } else if (k == n) {
      for (int64_t c = 0; c < n; c++) v[c] = c;
      tf_sort(&row, v, n);
    } else {
      topn(&row, v, n, k, st->sorted);
    }
    for (int64_t c = 0; c < k; c++) {
      memcpy((char *)sm_tensor_data(vals) + (size_t)(r * k + c) * es, (const char *)sm_tensor_data(x) + (size_t)(r * n + v[c]) * es, es);
      void *ip = sm_tensor_data(idxs);
      if (idt == SM_INT64) ((int64_t *)ip)[r * k + c] = v[c];
      else if (idt == SM_INT16) ((int16_t *)ip)[r * k + c] = (int16_t)v[c];
      else ((int32_t *)ip)[r * k + c] = (int32_t)v[c];
    }
  }
  sm__kctx_scratch_free(ctx, v);
  return NULL;
}

/* ---- ScatterNd, TensorScatter* ------------------------------------------------------------ */

enum { SC_ADD = SM_SCATTER_ADD, SC_UPDATE = SM_SCATTER_UPDATE, SC_SUB = SM_SCATTER_SUB, SC_MIN = SM_SCATTER_MIN, SC_MAX = SM_SCATTER_MAX };

typedef struct {
  int op;
} scatter_state;

static sm_status *scatter_prepare(const sm_node *node, void **state) {
  scatter_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  st->op = !strcmp(op, "TensorScatterUpdate") ? SC_UPDATE
           : !strcmp(op, "TensorScatterSub")  ? SC_SUB
           : !strcmp(op, "TensorScatterMin")  ? SC_MIN
           : !strcmp(op, "TensorScatterMax")  ? SC_MAX
                                              : SC_ADD;
  *state = st;
  return NULL;
}

/* ValidEmptyOutputShape: indices and updates both empty, or all three non-empty. */
static int valid_empty(int64_t ninputs, int64_t nidx, int64_t nupd) {
  if (nidx == 0 && nupd == 0) return 1;
  return ninputs != 0 && nidx != 0 && nupd != 0;
}

#define APPLY(T)                                                                                     \
  do {                                                                                               \
    T *o = (T *)sm_tensor_data(out) + off;                                                           \
    const T *u = (const T *)sm_tensor_data(upd) + i * slice;                                         \
    for (int64_t e = 0; e < slice; e++) switch (op) {                                                \
      case SC_ADD: o[e] = (T)(o[e] + u[e]); break;                                                   \
      case SC_SUB: o[e] = (T)(o[e] - u[e]); break;                                                   \
      case SC_MIN: if (u[e] < o[e]) o[e] = u[e]; break;                                              \
      case SC_MAX: if (u[e] > o[e]) o[e] = u[e]; break;                                              \
      default: o[e] = u[e]; break;                                                                   \
      }                                                                                              \
  } while (0)

#define APPLY_C(T)                                                                 \
  do {                                                                             \
    T *o = (T *)sm_tensor_data(out) + off;                                         \
    const T *u = (const T *)sm_tensor_data(upd) + i * slice;                       \
    for (int64_t e = 0; e < slice; e++)                                            \
      o[e] = op == SC_ADD ? o[e] + u[e] : op == SC_SUB ? o[e] - u[e] : u[e];       \
  } while (0)

/* half / bfloat16: each element in float, rounded once (TF's Eigen half arithmetic). */
static void apply_f16(int op, int dt, uint16_t *o, const uint16_t *u, int64_t n) {
  for (int64_t e = 0; e < n; e++) {
    float a, b;
    sm__math_to_f32(dt, o + e, &a, 1);
    sm__math_to_f32(dt, u + e, &b, 1);
    float r = op == SC_ADD ? a + b : op == SC_SUB ? a - b : op == SC_MIN ? (b < a ? b : a) : op == SC_MAX ? (b > a ? b : a) : b;
    if (op == SC_UPDATE) o[e] = u[e];
    else sm__math_from_f32(dt, &r, o + e, 1);
  }
}

/* The shared tail (TF's DoScatterNd): out holds the starting values (zeros or a copy of the
 * tensor) and has shape (rank, dims). */
static sm_status *do_scatter(int op, const sm_tensor *ind, const sm_tensor *upd, sm_tensor *out, int rank,
                             const int64_t *dims) {
  char a[256], b[256];
  int64_t nout = sm_tensor_num_elements(out);
  if (rank < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Output must be at least 1-D, got shape: %s", shape_str(rank, dims, a, sizeof a));
  if (!valid_empty(nout, sm_tensor_num_elements(ind), sm_tensor_num_elements(upd)))
    return sm_status_new(SM_INVALID_ARGUMENT, "Indices and updates specified for empty output.  indices shape: %s",
                         sm__array_shape_str(ind, a, sizeof a));
  int ir = sm_tensor_rank(ind);
  const int64_t *id = sm_tensor_dims(ind);
  int64_t slice_dim = ir > 1 ? id[ir - 1] : 1, slice = 1;
  for (int64_t i = slice_dim; i < rank; i++) slice *= dims[i];
  int64_t nupd = sm_tensor_num_elements(ind) / (slice_dim < 1 ? 1 : slice_dim);
  if (nout == 0) return NULL;
  if (slice_dim < 1 || slice_dim > 7)
    return sm_status_new(SM_INVALID_ARGUMENT, "Only indices.shape[-1] values between 1 and 5 are currently supported.  Requested rank: %lld",
                         (long long)slice_dim);
  if (sm_tensor_num_elements(upd) != nupd * slice)
    return sm_status_new(SM_INVALID_ARGUMENT, "updates has %lld elements, expected %lld", (long long)sm_tensor_num_elements(upd),
                         (long long)(nupd * slice));
  /* Check every index first: no partial result on bad input. */
  for (int64_t i = 0; i < nupd; i++)
    for (int64_t k = 0; k < slice_dim; k++) {
      int64_t v = sm__array_int_at(ind, i * slice_dim + k);
      if (v < 0 || v >= dims[k]) {
        size_t w = 0;
        b[0] = 0;
        for (int64_t j = 0; j < slice_dim && w + 24 < sizeof b; j++)
          w += (size_t)snprintf(b + w, sizeof b - w, "%s%lld", j ? ", " : "", (long long)sm__array_int_at(ind, i * slice_dim + j));
        /* TF's SliceDebugString of the index's position in indices.shape[:-1] */
        int64_t pos[SM_MAX_RANK], rem = i;
        for (int d = ir - 2; d >= 0; d--) {
          pos[d] = id[d] ? rem % id[d] : 0;
          rem = id[d] ? rem / id[d] : 0;
        }
        char p[160];
        size_t q = 0;
        p[0] = 0;
        for (int d = 0; d < ir - 1 && q + 24 < sizeof p; d++) q += (size_t)snprintf(p + q, sizeof p - q, "[%lld]", (long long)pos[d]);
        if (ir - 1 == 0) snprintf(p, sizeof p, "[%lld]", (long long)i);
        char c[128];
        return sm_status_new(SM_INVALID_ARGUMENT, "indices%s = [%s] does not index into shape %s", p, b,
                             shape_str(rank, dims, c, sizeof c));
      }
    }
  int dt = sm_tensor_dtype(out);
  for (int64_t i = 0; i < nupd; i++) {
    int64_t off = 0;
    for (int64_t k = 0; k < slice_dim; k++) off = off * dims[k] + sm__array_int_at(ind, i * slice_dim + k);
    off *= slice;
    switch (dt) {
    case SM_FLOAT: APPLY(float); break;
    case SM_DOUBLE: APPLY(double); break;
    case SM_INT32: APPLY(int32_t); break;
    case SM_INT64: APPLY(int64_t); break;
    case SM_INT16: APPLY(int16_t); break;
    case SM_INT8: APPLY(int8_t); break;
    case SM_UINT8: APPLY(uint8_t); break;
    case SM_UINT16: APPLY(uint16_t); break;
    case SM_UINT32: APPLY(uint32_t); break;
    case SM_UINT64: APPLY(uint64_t); break;
    case SM_BOOL: { /* TF's bool add is an or, its sub an exclusive or (Eigen's bool arithmetic) */
      if (op == SC_MIN || op == SC_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "scatter min/max is not defined for bool");
      uint8_t *o = (uint8_t *)sm_tensor_data(out) + off;
      const uint8_t *u = (const uint8_t *)sm_tensor_data(upd) + i * slice;
      for (int64_t e = 0; e < slice; e++)
        o[e] = op == SC_ADD ? (uint8_t)(o[e] || u[e]) : op == SC_SUB ? (uint8_t)((o[e] != 0) != (u[e] != 0)) : u[e];
      break;
    }
    case SM_COMPLEX64:
    case SM_COMPLEX128:
      if (op == SC_MIN || op == SC_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "scatter min/max is not defined for %s", sm__array_dtype_str(dt));
      if (dt == SM_COMPLEX64) APPLY_C(float complex);
      else APPLY_C(double complex);
      break;
    case SM_HALF:
    case SM_BFLOAT16: apply_f16(op, dt, (uint16_t *)sm_tensor_data(out) + off, (const uint16_t *)sm_tensor_data(upd) + i * slice, slice); break;
    default: return sm_status_new(SM_INVALID_ARGUMENT, "scatter is not defined for %s", sm__array_dtype_str(dt));
    }
  }
  return NULL;
}

/* The op-level shape checks both kernels make (TF's Compute). */
static sm_status *scatter_shapes(const sm_tensor *ind, const sm_tensor *upd, int rank, const int64_t *dims, int64_t ninputs,
                                 int tensor_op) {
  char a[128], b[128], c[128];
  if (sm_tensor_rank(ind) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Indices shape must have rank at least one. Found:%s", sm__array_shape_str(ind, a, sizeof a));
  if (sm_tensor_rank(upd) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Updates shape must have rank at least one. Found:%s", sm__array_shape_str(upd, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(ind)))
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int16, int32 or int64, not %s", sm__array_dtype_str(sm_tensor_dtype(ind)));
  if (!valid_empty(ninputs, sm_tensor_num_elements(ind), sm_tensor_num_elements(upd)))
    return sm_status_new(SM_INVALID_ARGUMENT, "Indices and updates specified for empty output shape");
  int ir = sm_tensor_rank(ind), ur = sm_tensor_rank(upd);
  const int64_t *id = sm_tensor_dims(ind), *ud = sm_tensor_dims(upd);
  int64_t outer = ir - 1;
  for (int i = 0; i < outer; i++)
    if (i >= ur || id[i] != ud[i]) {
      sm__array_shape_str(ind, a, sizeof a);
      sm__array_shape_str(upd, b, sizeof b);
      if (tensor_op)
        return sm_status_new(SM_INVALID_ARGUMENT, "Outer dimensions of indices and update must match. Indices shape: %s, updates shape:%s", a, b);
      return sm_status_new(SM_INVALID_ARGUMENT, "Dimensions [0,%lld) of indices[shape=%s] must match dimensions [0,%lld) of updates[shape=%s]",
                           (long long)outer, a, (long long)outer, b);
    }
  int64_t ix = id[outer];
  shape_str(rank, dims, c, sizeof c);
  sm__array_shape_str(upd, b, sizeof b);
  int bad = ur - outer != rank - ix;
  for (int64_t i = 0; !bad && i + outer < ur; i++) bad = ud[i + outer] != dims[ix + i];
  if (bad) {
    if (!tensor_op)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dimensions [%lld,%d) of input[shape=%s] must match dimensions [%lld,%d) of updates[shape=%s]",
                           (long long)ix, rank, c, (long long)outer, ur, b);
    if (ur - outer != rank - ix)
      return sm_status_new(SM_INVALID_ARGUMENT, "Inner dimensions of output shape must match inner dimensions of updates shape. Output: %s updates: %s",
                           c, b);
    return sm_status_new(SM_INVALID_ARGUMENT, "The inner %lld dimensions of output.shape=%s must match the inner %lld dimensions of updates.shape=%s",
                         (long long)(rank - ix), c, (long long)(ur - outer), b);
  }
  return NULL;
}

static sm_status *scatter_nd_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *upd = sm__kctx_input(ctx, 1), *sh = sm__kctx_input(ctx, 2);
  if (!sm__array_is_int(sm_tensor_dtype(sh))) return sm_status_new(SM_INVALID_ARGUMENT, "shape must be int32 or int64");
  int64_t dims[SM_MAX_RANK], n = sm_tensor_num_elements(sh);
  if (n > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "ScatterNd: shape has %lld dimensions, past this library's limit", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    dims[i] = sm__array_int_at(sh, i);
    if (dims[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)dims[i]);
  }
  sm_status *s = scatter_shapes(ind, upd, (int)n, dims, n, 0);
  if (s) return s;
  if (sm_tensor_rank(sh) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be a vector");
  if (sm_tensor_dtype(ind) == SM_INT16 || sm_tensor_dtype(ind) == SM_INT8 || sm_tensor_dtype(ind) == SM_UINT8)
    return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int32 or int64");
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(upd), (int)n, dims, &out);
  return s ? s : do_scatter(SC_ADD, ind, upd, out, (int)n, dims);
}

static sm_status *tensor_scatter_compute(const void *state, sm_kctx *ctx) {
  const scatter_state *st = state;
  const sm_tensor *t = sm__kctx_input(ctx, 0), *ind = sm__kctx_input(ctx, 1), *upd = sm__kctx_input(ctx, 2);
  int rank = sm_tensor_rank(t);
  const int64_t *dims = sm_tensor_dims(t);
  sm_status *s = scatter_shapes(ind, upd, rank, dims, sm_tensor_num_elements(t), 1);
  if (s) return s;
  if (sm_tensor_dtype(t) == SM_BOOL && st->op != SC_UPDATE) /* TF registers only TensorScatterUpdate for bool */
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorScatter arithmetic is not defined for bool (TensorFlow has no kernel for it)");
  if (sm_tensor_dtype(upd) != sm_tensor_dtype(t))
    return sm_status_new(SM_INVALID_ARGUMENT, "updates is %s but tensor is %s", sm__array_dtype_str(sm_tensor_dtype(upd)),
                         sm__array_dtype_str(sm_tensor_dtype(t)));
  sm_tensor *out = sm__kctx_reuse_input(ctx, 0, 0, sm_tensor_dtype(t), rank, dims);
  if (!out) {
    s = sm__kctx_alloc_output_uninit(ctx, 0, sm_tensor_dtype(t), rank, dims, &out);
    if (!s) s = sm__array_copy(out, 0, t, 0, sm_tensor_num_elements(t));
    if (s) return s;
  }
  return do_scatter(st->op, ind, upd, out, rank, dims);
}

sm_status *sm__scatter_nd_into(int op, const sm_tensor *ind, const sm_tensor *upd, sm_tensor *out) {
  int rank = sm_tensor_rank(out);
  const int64_t *dims = sm_tensor_dims(out);
  sm_status *s = scatter_shapes(ind, upd, rank, dims, sm_tensor_num_elements(out), 0);
  if (!s && sm_tensor_dtype(upd) != sm_tensor_dtype(out))
    s = sm_status_new(SM_INVALID_ARGUMENT, "updates is %s but the variable is %s", sm__array_dtype_str(sm_tensor_dtype(upd)),
                      sm__array_dtype_str(sm_tensor_dtype(out)));
  return s ? s : do_scatter(op, ind, upd, out, rank, dims);
}

/* ---- Bucketize ------------------------------------------------------------------------------ */

typedef struct {
  int n;
  float b[];
} bucketize_state;

static sm_status *bucketize_prepare(const sm_node *node, void **state) {
  const Tensorflow__AttrValue *av = sm__node_attr(node, "boundaries");
  if (!av || av->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !av->list)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bucketize needs a boundaries attr (a list of floats)");
  const float *f = av->list->f;
  if (av->list->n_f > 1u << 30) return sm_status_new(SM_INVALID_ARGUMENT, "too many boundaries");
  int n = (int)av->list->n_f;
  bucketize_state *st = malloc(sizeof *st + (size_t)n * sizeof(float));
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->n = n;
  if (n) memcpy(st->b, f, (size_t)n * sizeof(float));
  for (int i = 1; i < n; i++)
    if (!(st->b[i - 1] <= st->b[i])) {
      free(st);
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected sorted boundaries");
    }
  *state = st;
  return NULL;
}

static sm_status *bucketize_compute(const void *state, sm_kctx *ctx) {
  const bucketize_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bucketize is not defined for %s", sm__array_dtype_str(dt));
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output_uninit(ctx, 0, SM_INT32, sm_tensor_rank(x), sm_tensor_dims(x), &out);
  if (s) return s;
  int32_t *o = sm_tensor_data(out);
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    /* upper_bound: the first boundary greater than the value (C++ promotion: an integer value
     * meets a float boundary as float, a double meets it as double). */
    int lo = 0, hi = st->n;
    double dv = dt == SM_DOUBLE ? ((const double *)sm_tensor_data(x))[i] : 0;
    float fv = dt == SM_FLOAT ? ((const float *)sm_tensor_data(x))[i] : (float)sm__array_int_at(x, i);
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      int less = dt == SM_DOUBLE ? dv < (double)st->b[mid] : fv < st->b[mid];
      if (less) hi = mid;
      else lo = mid + 1;
    }
    o[i] = lo;
  }
  return NULL;
}

/* ---- SparseToDense -------------------------------------------------------------------------- */

typedef struct {
  int validate;
} s2d_state;

static sm_status *s2d_prepare(const sm_node *node, void **state) {
  s2d_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int b = 1;
  sm_status *s = sm__node_attr_bool(node, "validate_indices", &b);
  if (s) {
    sm_status_free(s);
    b = 1;
  }
  st->validate = b;
  *state = st;
  return NULL;
}

static const char *index_str(const sm_tensor *ind, int64_t row, int64_t nd, char *buf, size_t cap) {
  size_t w = 0;
  buf[0] = 0;
  for (int64_t j = 0; j < nd && w + 24 < cap; j++)
    w += (size_t)snprintf(buf + w, cap - w, "%s%lld", j ? "," : "", (long long)sm__array_int_at(ind, row * nd + j));
  return buf;
}

static sm_status *s2d_compute(const void *state, sm_kctx *ctx) {
  const s2d_state *st = state;
  const sm_tensor *ind = sm__kctx_input(ctx, 0), *osh = sm__kctx_input(ctx, 1), *vals = sm__kctx_input(ctx, 2),
                  *def = sm__kctx_input(ctx, 3);
  char a[256], b[256];
  int ir = sm_tensor_rank(ind);
  if (ir > 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "sparse_indices should be a scalar, vector, or matrix, got shape %s",
                         sm__array_shape_str(ind, a, sizeof a));
  if (!sm__array_is_int(sm_tensor_dtype(ind)) || !sm__array_is_int(sm_tensor_dtype(osh)))
    return sm_status_new(SM_INVALID_ARGUMENT, "sparse_indices and output_shape must be int32 or int64");
  int64_t nel = ir > 0 ? sm_tensor_dims(ind)[0] : 1, nd = ir > 1 ? sm_tensor_dims(ind)[1] : 1;
  if (sm_tensor_rank(osh) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "output_shape must be rank 1, got shape %s", sm__array_shape_str(osh, a, sizeof a));
  if (sm_tensor_num_elements(osh) != nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "output_shape has incorrect number of elements: %lld should be: %lld",
                         (long long)sm_tensor_num_elements(osh), (long long)nd);
  int64_t nv = sm_tensor_num_elements(vals);
  if (!(sm_tensor_rank(vals) == 0 || (sm_tensor_rank(vals) == 1 && nv == nel)))
    return sm_status_new(SM_INVALID_ARGUMENT, "sparse_values has incorrect shape %s, should be [] or [%lld]",
                         sm__array_shape_str(vals, a, sizeof a), (long long)nel);
  if (sm_tensor_rank(def) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "default_value should be a scalar.");
  if (sm_tensor_dtype(def) != sm_tensor_dtype(vals))
    return sm_status_new(SM_INVALID_ARGUMENT, "default_value is %s but sparse_values is %s", sm__array_dtype_str(sm_tensor_dtype(def)),
                         sm__array_dtype_str(sm_tensor_dtype(vals)));
  if (nd > SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "SparseToDense: output rank %lld is past this library's limit", (long long)nd);
  int64_t dims[SM_MAX_RANK];
  for (int64_t i = 0; i < nd; i++) {
    dims[i] = sm__array_int_at(osh, i);
    if (dims[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)dims[i]);
  }
  shape_str((int)nd, dims, b, sizeof b);
  for (int64_t n = 0; n < nel; n++) {
    int oob = 0, cmp = 0;
    for (int64_t d = 0; d < nd; d++) {
      int64_t v = sm__array_int_at(ind, n * nd + d);
      if (v < 0 || v >= dims[d]) oob = 1;
      if (n > 0 && !cmp) {
        int64_t p = sm__array_int_at(ind, (n - 1) * nd + d);
        cmp = (v > p) - (v < p);
      }
    }
    if (oob) {
      if (st->validate)
        return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = [%s] is out of bounds: need 0 <= index < %s", (long long)n,
                             index_str(ind, n, nd, a, sizeof a), b);
      return sm_status_new(SM_INVALID_ARGUMENT, "Indices are not valid (out of bounds).  Shape: %s", b);
    }
    if (st->validate && n > 0 && cmp < 0)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "indices[%lld] = [%s] is out of order. Many sparse ops require sorted indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n",
                           (long long)n, index_str(ind, n, nd, a, sizeof a));
    if (st->validate && n > 0 && cmp == 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = [%s] is repeated", (long long)n, index_str(ind, n, nd, a, sizeof a));
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(vals), (int)nd, dims, &out);
  if (!s) s = sm__array_fill(out, def);
  if (s || sm_tensor_num_elements(out) == 0) return s;
  for (int64_t n = 0; n < nel && !s; n++) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; d++) off = off * dims[d] + sm__array_int_at(ind, n * nd + d);
    s = sm__array_copy(out, off, vals, sm_tensor_rank(vals) == 0 ? 0 : n, 1);
  }
  return s;
}

const sm_kernel sm_kernels_scatter[] = {
    {"TopKV2", topk_prepare, topk_compute, free, 0},
    {"TopK", topk_prepare, topk_compute, free, 0},
    {"ApproxTopK", topk_prepare, topk_compute, free, 0},
    {"ScatterNd", NULL, scatter_nd_compute, NULL, 0},
    {"TensorScatterUpdate", scatter_prepare, tensor_scatter_compute, free, 0},
    {"TensorScatterAdd", scatter_prepare, tensor_scatter_compute, free, 0},
    {"TensorScatterSub", scatter_prepare, tensor_scatter_compute, free, 0},
    {"TensorScatterMin", scatter_prepare, tensor_scatter_compute, free, 0},
    {"TensorScatterMax", scatter_prepare, tensor_scatter_compute, free, 0},
    {"Bucketize", bucketize_prepare, bucketize_compute, free, 0},
    {"SparseToDense", s2d_prepare, s2d_compute, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
