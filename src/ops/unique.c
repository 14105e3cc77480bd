/* unique.c - the unique-and-count kernel family: Unique, UniqueV2 (along an axis),
 * UniqueWithCounts, UniqueWithCountsV2, Bincount, DenseBincount and SparseBincount (weights,
 * binary_output; a SparseTensor's values counted per row of its first index column, or all
 * together when its dense_shape has one entry).
 *
 * Unique keeps values (or slices along the axis) in order of first occurrence, through an open
 * addressing hash table of indices; equality is TF's element ==: 0.0 and -0.0 are one value (but
 * not in half and bfloat16, which TF hashes by their bits), each NaN is its own. Bincount counts (or sums weights of) values in [0, size); values >= size are
 * dropped and negative ones are an error, as TF's CPU kernels. Messages are TF's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/sparse_internal.h"
#include "runtime/kernel.h"

/* ---- Unique -------------------------------------------------------------------------------- */

typedef struct uview {
  const sm_tensor *t;
  int dtype;
  size_t esize;
  int64_t outer, len, inner; /* x viewed as [outer, len, inner]; unique along len */
} uview;

/* Element e of x as comparable bits: floats canonical (-0 -> 0), so equal values hash equally. */
static uint64_t elem_bits(const uview *v, int64_t e, int *nan) {
  const char *p = (const char *)sm_tensor_data(v->t) + (size_t)e * v->esize;
  uint64_t u = 0;
  *nan = 0;
  if (v->dtype == SM_FLOAT) {
    float f;
    memcpy(&f, p, 4);
    *nan = f != f;
    if (f == 0) f = 0;
    memcpy(&u, &f, 4);
  } else if (v->dtype == SM_DOUBLE) {
    double d;
    memcpy(&d, p, 8);
    *nan = d != d;
    if (d == 0) d = 0;
    memcpy(&u, &d, 8);
  } else if (v->dtype == SM_HALF || v->dtype == SM_BFLOAT16) {
    uint16_t h;
    memcpy(&h, p, 2);
    int exp_all = v->dtype == SM_HALF ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    *nan = exp_all;
    u = h; /* TF hashes half's bits: -0 and 0 stay apart */
  } else {
    memcpy(&u, p, v->esize);
  }
  return u;
}

/* Slice s (index along len) of x: element k of it (k < outer * inner). */
static int64_t slice_elem(const uview *v, int64_t s, int64_t k) {
  int64_t o = k / v->inner, i = k % v->inner;
  return (o * v->len + s) * v->inner + i;
}

static uint64_t slice_hash(const uview *v, int64_t s) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t k = 0; k < v->outer * v->inner; k++) {
    int64_t e = slice_elem(v, s, k);
    int nan;
    uint64_t b;
    if (v->dtype == SM_STRING) {
      size_t n;
      const char *str = sm_tensor_string(v->t, e, &n);
      for (size_t j = 0; j < n; j++) h = (h ^ (uint8_t)str[j]) * 1099511628211ull;
      b = n;
    } else {
      b = elem_bits(v, e, &nan);
    }
    h = (h ^ b) * 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

static int slice_eq(const uview *v, int64_t s1, int64_t s2) {
  for (int64_t k = 0; k < v->outer * v->inner; k++) {
    int64_t a = slice_elem(v, s1, k), b = slice_elem(v, s2, k);
    if (v->dtype == SM_STRING) {
      size_t na, nb;
      const char *x = sm_tensor_string(v->t, a, &na), *y = sm_tensor_string(v->t, b, &nb);
      if (na != nb || (na && memcmp(x, y, na))) return 0;
      continue;
    }
    int n1, n2;
    if (elem_bits(v, a, &n1) != elem_bits(v, b, &n2) || n1 || n2) return 0;
  }
  return 1;
}

typedef struct ustate {
  int v2, counts;
  int out_idx;
} ustate;

static sm_status *unique_prepare(const sm_node *node, void **state) {
  ustate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  const char *op = sm__node_op(node);
  s->v2 = !strcmp(op, "UniqueV2") || !strcmp(op, "UniqueWithCountsV2");
  s->counts = !strncmp(op, "UniqueWithCounts", 16);
  s->out_idx = SM_INT32;
  sm_status *st = sm__node_attr(node, "out_idx") ? sm__node_attr_type(node, "out_idx", &s->out_idx) : NULL;
  if (!st && s->out_idx != SM_INT32 && s->out_idx != SM_INT64)
    st = sm_status_new(SM_INVALID_ARGUMENT, "out_idx must be int32 or int64");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static void put_index(sm_tensor *t, int64_t i, int64_t v) {
  if (sm_tensor_dtype(t) == SM_INT64) ((int64_t *)sm_tensor_data(t))[i] = v;
  else ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
}

static sm_status *unique_compute(const void *state, sm_kctx *ctx) {
  const ustate *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x), axis = -1;
  const int64_t *xd = sm_tensor_dims(x);
  if (s->v2) {
    const sm_tensor *a = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(a) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "axis expects a 1D vector.");
    if (sm_tensor_num_elements(a) > 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "axis does not support input tensors larger than 1 elements");
    if (sm_tensor_num_elements(a) == 1) {
      int64_t ax = sm_tensor_dtype(a) == SM_INT64 ? *(const int64_t *)sm_tensor_data(a) : *(const int32_t *)sm_tensor_data(a);
      if (ax < 0) ax += r;
      if (ax < 0 || ax >= r) return sm_status_new(SM_INVALID_ARGUMENT, "axis has to be between [0, %d)", r);
      axis = (int)ax;
    }
  }
  if (axis < 0 && r != 1) return sm_status_new(SM_INVALID_ARGUMENT, "unique expects a 1D vector.");
  if (axis < 0) axis = 0;
  uview v = {x, sm_tensor_dtype(x), sm_dtype_size(sm_tensor_dtype(x)), 1, xd[axis], 1};
  if (v.dtype != SM_STRING && (v.esize == 0 || v.esize > 8 || v.dtype == SM_RESOURCE || v.dtype == SM_VARIANT))
    return sm_status_new(SM_UNIMPLEMENTED, "Unique does not support %s", sm_dtype_name(v.dtype));
  for (int i = 0; i < axis; i++) v.outer *= xd[i];
  for (int i = axis + 1; i < r; i++) v.inner *= xd[i];
  int64_t n = v.len, cap = 16;
  while (cap < 2 * n) cap <<= 1;
  sm_status *st = NULL;
  int64_t *table = sm__kctx_scratch(ctx, (size_t)cap * sizeof(int64_t) + (size_t)(2 * n + 1) * sizeof(int64_t), &st);
  if (!table) return st;
  int64_t *first = table + cap, *idx = first + n + 1, nu = 0; /* first[u]: slice of unique u */
  for (int64_t i = 0; i < cap; i++) table[i] = -1;
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = slice_hash(&v, i) & (uint64_t)(cap - 1);
    while (table[h] >= 0 && !slice_eq(&v, first[table[h]], i)) h = (h + 1) & (uint64_t)(cap - 1);
    if (table[h] < 0) {
      table[h] = nu;
      first[nu++] = i;
    }
    idx[i] = table[h];
  }
  int64_t yd[SM_MAX_RANK];
  memcpy(yd, xd, (size_t)r * sizeof *yd);
  yd[axis] = nu;
  sm_tensor *y, *ix, *cnt = NULL;
  if (!(st = sm__kctx_alloc_output(ctx, 0, v.dtype, r, yd, &y)) && !(st = sm__kctx_alloc_output(ctx, 1, s->out_idx, 1, &n, &ix)) &&
      s->counts)
    st = sm__kctx_alloc_output(ctx, 2, s->out_idx, 1, &nu, &cnt);
  for (int64_t u = 0; !st && u < nu; u++)
    for (int64_t k = 0; !st && k < v.outer * v.inner; k++) {
      int64_t src = slice_elem(&v, first[u], k), dst = (k / v.inner * nu + u) * v.inner + k % v.inner;
      if (v.dtype == SM_STRING) {
        size_t len;
        const char *str = sm_tensor_string(x, src, &len);
        st = sm_tensor_set_string(y, dst, str, len);
      } else {
        memcpy((char *)sm_tensor_data(y) + (size_t)dst * v.esize, (const char *)sm_tensor_data(x) + (size_t)src * v.esize, v.esize);
      }
    }
  for (int64_t i = 0; !st && i < n; i++) {
    put_index(ix, i, idx[i]);
    if (cnt) put_index(cnt, idx[i], (sm_tensor_dtype(cnt) == SM_INT64 ? ((int64_t *)sm_tensor_data(cnt))[idx[i]]
                                                                       : ((int32_t *)sm_tensor_data(cnt))[idx[i]]) + 1);
  }
  sm__kctx_scratch_free(ctx, table);
  return st;
}

/* ---- Bincount, DenseBincount ---------------------------------------------------------------- */

static double get_num(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
  }
}

static void add_num(sm_tensor *t, int64_t i, const sm_tensor *w, int64_t wi, int binary) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = binary ? 1.0f : ((float *)p)[i] + (w ? (float)get_num(w, wi) : 1.0f); break;
    case SM_DOUBLE: ((double *)p)[i] = binary ? 1.0 : ((double *)p)[i] + (w ? get_num(w, wi) : 1.0); break;
    case SM_INT32: ((int32_t *)p)[i] = binary ? 1 : (int32_t)((uint32_t)((int32_t *)p)[i] + (uint32_t)(w ? ((const int32_t *)sm_tensor_data(w))[wi] : 1)); break;
    default: ((int64_t *)p)[i] = binary ? 1 : (int64_t)((uint64_t)((int64_t *)p)[i] + (uint64_t)(w ? ((const int64_t *)sm_tensor_data(w))[wi] : 1)); break;
  }
}

typedef struct bstate {
  int dense, sparse, binary, dtype;
} bstate;

static sm_status *bincount_prepare(const sm_node *node, void **state) {
  bstate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->dense = !strcmp(sm__node_op(node), "DenseBincount");
  s->sparse = !strcmp(sm__node_op(node), "SparseBincount");
  sm_status *st = sm__node_attr_type(node, "T", &s->dtype);
  if (!st && sm__node_attr(node, "binary_output")) st = sm__node_attr_bool(node, "binary_output", &s->binary);
  if (!st && s->dtype != SM_FLOAT && s->dtype != SM_DOUBLE && s->dtype != SM_INT32 && s->dtype != SM_INT64)
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s of %s is not supported", sm__node_op(node), sm_dtype_name(s->dtype));
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static int64_t idx_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT64 ? ((const int64_t *)sm_tensor_data(t))[i] : ((const int32_t *)sm_tensor_data(t))[i];
}

/* SparseBincount: indices [nnz, rank] int64, values [nnz] Tidx, dense_shape [rank] int64, size,
 * weights (empty or one per value). TF's checks and messages (bincount_op.cc SparseBincountOp), and
 * where TF reads out of bounds (a short values or weights, a negative batch or bin, indices not a
 * matrix) a refusal naming it. */
static sm_status *sparse_bincount(const bstate *s, sm_kctx *ctx) {
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *ds = sm__kctx_input(ctx, 2),
                  *size_t_ = sm__kctx_input(ctx, 3), *w = sm__kctx_input(ctx, 4);
  if (sm_tensor_rank(size_t_) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d", sm_tensor_rank(size_t_));
  int64_t size = idx_at(size_t_, 0);
  if (size < 0) return sm_status_new(SM_INVALID_ARGUMENT, "size (%lld) must be non-negative", (long long)size);
  sm_status *st = sm__sparse_validate(ix, vals, ds, 1);
  if (st) return st;
  int64_t nv = sm_tensor_num_elements(vals), nw = sm_tensor_num_elements(w);
  if (nw && nw < nv) /* TF reads past the weights */
    return sm_status_new(SM_INVALID_ARGUMENT, "SparseBincount: %lld weights for %lld values", (long long)nw, (long long)nv);
  if (nw && sm_tensor_dtype(w) != s->dtype) return sm_status_new(SM_INVALID_ARGUMENT, "weights must be %s", sm_dtype_name(s->dtype));
  sm_tensor *out;
  if (sm_tensor_num_elements(ds) == 1) {
    for (int64_t i = 0; i < nv; i++)
      if (idx_at(vals, i) < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Input arr must be non-negative!");
    if ((st = sm__kctx_alloc_output(ctx, 0, s->dtype, 1, &size, &out))) return st;
    for (int64_t i = 0; i < nv; i++) {
      int64_t v = idx_at(vals, i);
      if (v < size) add_num(out, v, nw ? w : NULL, i, s->binary);
    }
    return NULL;
  }
  if (sm_tensor_num_elements(ds) == 0) /* TF reads dense_shape[0] of an empty shape */
    return sm_status_new(SM_INVALID_ARGUMENT, "SparseBincount: dense_shape must not be empty");
  int64_t nnz = sm_tensor_dims(ix)[0], ncol = sm_tensor_dims(ix)[1];
  int64_t rows = ((const int64_t *)sm_tensor_data(ds))[0];
  if ((st = sm__kctx_alloc_output(ctx, 0, s->dtype, 2, (int64_t[]){rows, size}, &out))) return st;
  const int64_t *ip = sm_tensor_data(ix);
  for (int64_t i = 0; i < nnz; i++) {
    int64_t batch = ip[i * ncol], bin = idx_at(vals, i);
    if (bin < 0) /* TF writes before its output; batch is in bounds (validated) */
      return sm_status_new(SM_INVALID_ARGUMENT, "SparseBincount: negative bin (%lld) at index %lld", (long long)bin, (long long)i);
    if (bin < size) add_num(out, batch * size + bin, nw ? w : NULL, i, s->binary);
  }
  return NULL;
}

static sm_status *bincount_compute(const void *state, sm_kctx *ctx) {
  const bstate *s = state;
  if (s->sparse) return sparse_bincount(s, ctx);
  const sm_tensor *arr = sm__kctx_input(ctx, 0), *size_t_ = sm__kctx_input(ctx, 1), *w = sm__kctx_input(ctx, 2);
  char b[64];
  if (sm_tensor_rank(size_t_) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d", sm_tensor_rank(size_t_));
  int64_t size = sm_tensor_dtype(size_t_) == SM_INT64 ? *(const int64_t *)sm_tensor_data(size_t_) : *(const int32_t *)sm_tensor_data(size_t_);
  if (size < 0) return sm_status_new(SM_INVALID_ARGUMENT, "size (%lld) must be non-negative", (long long)size);
  int r = sm_tensor_rank(arr);
  if (s->dense && r > 2) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be at most rank 2 but is rank %d", r);
  int64_t n = sm_tensor_num_elements(arr);
  int has_w = sm_tensor_num_elements(w) > 0;
  int same = sm_tensor_rank(w) == r;
  for (int i = 0; same && i < r; i++) same = sm_tensor_dims(w)[i] == sm_tensor_dims(arr)[i];
  if (has_w && !s->dense && sm_tensor_num_elements(w) != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input indices and weights must have the same size.");
  if (has_w && s->dense && !same)
    return sm_status_new(SM_INVALID_ARGUMENT, "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which "
                                              "case it acts as all weights equal to 1. Received %s",
                         sm_shape_str(sm_tensor_rank(w), sm_tensor_dims(w), b, sizeof b));
  if (has_w && sm_tensor_dtype(w) != s->dtype) return sm_status_new(SM_INVALID_ARGUMENT, "weights must be %s", sm_dtype_name(s->dtype));
  for (int64_t i = 0; i < n; i++)
    if ((sm_tensor_dtype(arr) == SM_INT64 ? ((const int64_t *)sm_tensor_data(arr))[i] : ((const int32_t *)sm_tensor_data(arr))[i]) < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input arr must be non-negative!");
  int64_t rows = s->dense && r == 2 ? sm_tensor_dims(arr)[0] : 1, od[2] = {rows, size};
  sm_tensor *out;
  sm_status *st = s->dense && r == 2 ? sm__kctx_alloc_output(ctx, 0, s->dtype, 2, od, &out)
                                     : sm__kctx_alloc_output(ctx, 0, s->dtype, 1, &size, &out);
  if (st) return st;
  int64_t per = rows ? n / rows : 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = sm_tensor_dtype(arr) == SM_INT64 ? ((const int64_t *)sm_tensor_data(arr))[i] : ((const int32_t *)sm_tensor_data(arr))[i];
    if (v < size) add_num(out, (per ? i / per : 0) * size + v, has_w ? w : NULL, i, s->binary);
  }
  return NULL;
}

const sm_kernel sm_kernels_unique[] = {
    {"Unique", unique_prepare, unique_compute, free, 0},
    {"UniqueV2", unique_prepare, unique_compute, free, 0},
    {"UniqueWithCounts", unique_prepare, unique_compute, free, 0},
    {"UniqueWithCountsV2", unique_prepare, unique_compute, free, 0},
    {"Bincount", bincount_prepare, bincount_compute, free, 0},
    {"DenseBincount", bincount_prepare, bincount_compute, free, 0},
    {"SparseBincount", bincount_prepare, bincount_compute, free, 0},
    {0},
};
