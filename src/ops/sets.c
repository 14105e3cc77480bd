/* sets.c - the sets kernel family (tf.sets), as TF's set_kernels.cc: SetSize,
 * DenseToDenseSetOperation, DenseToSparseSetOperation, SparseToSparseSetOperation.
 *
 * A set is the last dimension of a dense tensor or of a SparseTensor (indices [n, R] int64, values
 * [n], shape [R]); groups are the first R - 1 coordinates (a SparseTensor's: runs of rows with an
 * equal prefix, in the order given, as TF's SparseTensor::group). Element types int8, int16,
 * int32, int64, uint8, uint16 and string. Each group's values are deduplicated; set_operation is
 * "a-b", "b-a", "intersection" or "union" (any case). The result is a SparseTensor over the group
 * shape + [largest result set], each group's non-empty result in ascending order (strings by
 * bytes), groups in row-major order. SetSize gives the distinct count per group (int32, 0 where a
 * group has no entries). validate_indices (default true) checks the SparseTensors' indices are in
 * bounds, in order and unrepeated, as SparseTensor::IndicesValid. TF's messages, in its order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "runtime/kernel.h"

enum { OP_A_MINUS_B, OP_B_MINUS_A, OP_INTERSECTION, OP_UNION };

typedef struct set_state {
  int validate;
  int op;
  int kind; /* 0 dense-dense, 1 dense-sparse, 2 sparse-sparse (SetSize: unused) */
  const char *name; /* the op's name (a static string) */
} set_state;

static sm_status *set_prepare(const sm_node *node, void **state) {
  set_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->validate = 1;
  s->op = OP_UNION;
  const char *opn = sm__node_op(node);
  s->kind = !strcmp(opn, "DenseToDenseSetOperation") ? 0 : !strcmp(opn, "DenseToSparseSetOperation") ? 1 : 2;
  s->name = s->kind == 0 ? "DenseToDenseSetOperation" : s->kind == 1 ? "DenseToSparseSetOperation" : "SparseToSparseSetOperation";
  sm_status *st = NULL;
  if (sm__node_attr(node, "validate_indices")) st = sm__node_attr_bool(node, "validate_indices", &s->validate);
  if (!st && strcmp(sm__node_op(node), "SetSize")) {
    const char *p;
    size_t n;
    if (!sm__node_attr(node, "set_operation")) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "Missing set_operation.");
    } else if (!(st = sm__node_attr_string(node, "set_operation", &p, &n))) {
      char low[32];
      size_t k = n < sizeof low - 1 ? n : sizeof low - 1;
      for (size_t i = 0; i < k; i++) low[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
      low[k] = 0;
      if (n == k && !strcmp(low, "a-b")) s->op = OP_A_MINUS_B;
      else if (n == k && !strcmp(low, "b-a")) s->op = OP_B_MINUS_A;
      else if (n == k && !strcmp(low, "intersection")) s->op = OP_INTERSECTION;
      else if (!(n == k && !strcmp(low, "union")))
        st = sm_status_new(SM_INVALID_ARGUMENT, "Invalid set_operation %.*s.", (int)(n < 200 ? n : 200), low);
    }
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* One element: an integer, or a string's bytes. */
typedef struct item {
  int64_t i;
  const char *s;
  size_t n;
} item;

static int supported(int dt) {
  return dt == SM_INT8 || dt == SM_INT16 || dt == SM_INT32 || dt == SM_INT64 || dt == SM_UINT8 || dt == SM_UINT16 ||
         dt == SM_STRING;
}

static item get_item(const sm_tensor *t, int64_t k) {
  item it = {0, NULL, 0};
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_INT8: it.i = ((const int8_t *)d)[k]; break;
  case SM_INT16: it.i = ((const int16_t *)d)[k]; break;
  case SM_INT32: it.i = ((const int32_t *)d)[k]; break;
  case SM_INT64: it.i = ((const int64_t *)d)[k]; break;
  case SM_UINT8: it.i = ((const uint8_t *)d)[k]; break;
  case SM_UINT16: it.i = ((const uint16_t *)d)[k]; break;
  default: it.s = sm_tensor_string(t, k, &it.n); break;
  }
  return it;
}

static int cmp_item(const item *a, const item *b) {
  if (!a->s && !b->s) return a->i < b->i ? -1 : a->i > b->i;
  size_t m = a->n < b->n ? a->n : b->n;
  int c = m ? memcmp(a->s, b->s, m) : 0;
  return c ? c : a->n < b->n ? -1 : a->n > b->n;
}

static int cmp_qsort(const void *a, const void *b) { return cmp_item(a, b); }

/* Sort and deduplicate v[0..n): the new count. */
static int64_t uniq(item *v, int64_t n) {
  if (n < 2) return n;
  qsort(v, (size_t)n, sizeof *v, cmp_qsort);
  int64_t k = 1;
  for (int64_t i = 1; i < n; i++)
    if (cmp_item(&v[i], &v[k - 1])) v[k++] = v[i];
  return k;
}

/* The result so far: items, and per non-empty group its coordinates (R - 1) and count. */
typedef struct result {
  item *v;
  int64_t n, cap;
  int64_t *coords, *count;
  int64_t ng, gcap;
  int gr; /* group rank */
  int64_t longest;
} result;

static sm_status *grow(void **p, int64_t *cap, int64_t need, size_t es) {
  if (need <= *cap) return NULL;
  int64_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * es);
  if (!q) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = q;
  *cap = c;
  return NULL;
}

/* Merge the sorted unique a and b into r under op, as one group at coords. */
static sm_status *apply(result *r, int op, const item *a, int64_t na, const item *b, int64_t nb, const int64_t *coords) {
  sm_status *st = grow((void **)&r->v, &r->cap, r->n + na + nb, sizeof *r->v);
  if (st) return st;
  int64_t i = 0, j = 0, n0 = r->n;
  if (op == OP_B_MINUS_A) {
    const item *t = a;
    a = b, b = t;
    int64_t tn = na;
    na = nb, nb = tn;
  }
  while (i < na || j < nb) {
    int c = i >= na ? 1 : j >= nb ? -1 : cmp_item(&a[i], &b[j]);
    const item *take = NULL;
    if (c < 0) take = op == OP_INTERSECTION ? NULL : &a[i];
    else if (c > 0) take = op == OP_UNION ? &b[j] : NULL;
    else take = op == OP_INTERSECTION || op == OP_UNION ? &a[i] : NULL;
    if (take) r->v[r->n++] = *take;
    if (c <= 0) i++;
    if (c >= 0) j++;
  }
  int64_t k = r->n - n0;
  if (!k) return NULL;
  if (r->ng == r->gcap) {
    int64_t c = r->gcap ? 2 * r->gcap : 16;
    int64_t *nc = realloc(r->coords, (size_t)(c * (r->gr ? r->gr : 1)) * sizeof *nc);
    if (!nc) return sm_status_new(SM_NO_MEMORY, "out of memory");
    r->coords = nc;
    int64_t *nn = realloc(r->count, (size_t)c * sizeof *nn);
    if (!nn) return sm_status_new(SM_NO_MEMORY, "out of memory");
    r->count = nn;
    r->gcap = c;
  }
  if (r->gr) memcpy(r->coords + r->ng * r->gr, coords, (size_t)r->gr * sizeof *coords);
  r->count[r->ng++] = k;
  if (k > r->longest) r->longest = k;
  return NULL;
}

/* The result as the three outputs: indices [n, gr + 1], values [n], shape gshape + [longest]. */
static sm_status *emit(sm_kctx *ctx, const result *r, int dt, const int64_t *gshape) {
  sm_tensor *ix, *vals, *shape;
  int R = r->gr + 1;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){r->n, R}, &ix)) ||
      (st = sm__kctx_alloc_output(ctx, 1, dt, 1, (int64_t[]){r->n}, &vals)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){R}, &shape)))
    return st;
  int64_t *ip = sm_tensor_data(ix), o = 0;
  void *vp = sm_tensor_data(vals);
  for (int64_t g = 0; g < r->ng; g++)
    for (int64_t k = 0; k < r->count[g]; k++, o++) {
      for (int d = 0; d < r->gr; d++) ip[o * R + d] = r->coords[g * r->gr + d];
      ip[o * R + r->gr] = k;
      const item *it = &r->v[o];
      switch (dt) {
      case SM_INT8: ((int8_t *)vp)[o] = (int8_t)it->i; break;
      case SM_INT16: ((int16_t *)vp)[o] = (int16_t)it->i; break;
      case SM_INT32: ((int32_t *)vp)[o] = (int32_t)it->i; break;
      case SM_INT64: ((int64_t *)vp)[o] = it->i; break;
      case SM_UINT8: ((uint8_t *)vp)[o] = (uint8_t)it->i; break;
      case SM_UINT16: ((uint16_t *)vp)[o] = (uint16_t)it->i; break;
      default:
        if ((st = sm_tensor_set_string(vals, o, it->s, it->n))) return st;
      }
    }
  int64_t *sp = sm_tensor_data(shape);
  for (int d = 0; d < r->gr; d++) sp[d] = gshape[d];
  sp[r->gr] = r->longest;
  return NULL;
}

/* "[1,2,3]" */
static void dims_text(const int64_t *v, int n, char *buf, size_t cap) {
  size_t o = 0;
  buf[o++] = '[';
  for (int i = 0; i < n && o + 24 < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)v[i]);
  snprintf(buf + o, cap - o, "]");
}

/* A SparseTensor from inputs base..base+2, checked as TF's SparseTensorFromContext. */
typedef struct sparse_in {
  const int64_t *ix;
  const sm_tensor *vals;
  const int64_t *shape;
  int64_t n;
  int R;
} sparse_in;

static sm_status *sparse_from(sm_kctx *ctx, int base, int validate, sparse_in *sp) {
  const sm_tensor *ix = sm__kctx_input(ctx, base), *vals = sm__kctx_input(ctx, base + 1),
                  *shape = sm__kctx_input(ctx, base + 2);
  if (sm_tensor_rank(shape) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be a 1D tensor.");
  int64_t R = sm_tensor_dims(shape)[0];
  const int64_t *sh = sm_tensor_data(shape);
  if (R > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Too many dimensions in tensor");
  for (int64_t d = 0; d < R; d++)
    if (sh[d] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape dimensions to be non-negative, got %lld", (long long)sh[d]);
  if (R < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid rank %lld.", (long long)R);
  if (sm_tensor_rank(vals) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "vals must be a vec, but got: %d-D", sm_tensor_rank(vals));
  if (sm_tensor_rank(ix) < 1 || sm_tensor_dims(ix)[0] != sm_tensor_dims(vals)[0])
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "indices and values rows (indexing dimension) must match. (indices = %lld, values = %lld)",
                         (long long)(sm_tensor_rank(ix) ? sm_tensor_dims(ix)[0] : 1), (long long)sm_tensor_dims(vals)[0]);
  if (sm_tensor_rank(ix) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "indices must be a matrix, but got: %d-D", sm_tensor_rank(ix));
  if (sm_tensor_dims(ix)[1] != R) return sm_status_new(SM_INVALID_ARGUMENT, "Order length must be SparseTensor rank.");
  sp->ix = sm_tensor_data(ix), sp->vals = vals, sp->shape = sh, sp->n = sm_tensor_dims(ix)[0], sp->R = (int)R;
  for (int64_t i = 0; validate && i < sp->n; i++) { /* IndicesValid */
    const int64_t *r = sp->ix + i * R, *p = r - R;
    int valid = 1, incr = i == 0, diff = i == 0;
    for (int64_t d = 0; d < R; d++) {
      if (r[d] < 0 || r[d] >= sh[d]) valid = 0;
      if (i && !diff && r[d] != p[d]) {
        diff = 1;
        incr = r[d] > p[d];
      }
    }
    if (!valid || !incr) {
      char ib[512], sb[512];
      dims_text(r, (int)R, ib, sizeof ib);
      dims_text(sh, (int)R, sb, sizeof sb);
      if (!valid)
        return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = %s is out of bounds: need 0 <= index < %s", (long long)i, ib, sb);
      if (!diff) return sm_status_new(SM_INVALID_ARGUMENT, "indices[%lld] = %s is repeated", (long long)i, ib);
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "indices[%lld] = %s is out of order. Many sparse ops require sorted indices.\n    Use "
                           "`tf.sparse.reorder` to create a correctly ordered copy.\n\n",
                           (long long)i, ib);
    }
  }
  return NULL;
}

/* The end of the group (run of rows with row i's first R - 1 coordinates) starting at row i. */
static int64_t group_end(const sparse_in *sp, int64_t i) {
  int64_t j = i + 1;
  while (j < sp->n && !memcmp(sp->ix + j * sp->R, sp->ix + i * sp->R, (size_t)(sp->R - 1) * sizeof(int64_t))) j++;
  return j;
}

/* A sparse group's values into v (TF's CheckGroup: every dim > 0, indices under the dims). */
static sm_status *sparse_group(const sparse_in *sp, int64_t i0, int64_t i1, item *v, int64_t *n) {
  for (int d = 0; d < sp->R; d++) {
    if (sp->shape[d] <= 0) return sm_status_new(SM_INTERNAL, "Invalid dim_size[%d] = %lld.", d, (long long)sp->shape[d]);
    for (int64_t i = i0; i < i1; i++)
      if (sp->ix[i * sp->R + d] >= sp->shape[d])
        return sm_status_new(SM_INTERNAL, "indices[%lld, %d] expected < %lld, got %lld.", (long long)(i - i0), d,
                             (long long)sp->shape[d], (long long)sp->ix[i * sp->R + d]);
  }
  for (int64_t i = i0; i < i1; i++) v[i - i0] = get_item(sp->vals, i);
  *n = uniq(v, i1 - i0);
  return NULL;
}

static sm_status *set_size_compute(const void *state, sm_kctx *ctx) {
  const set_state *s = state;
  sparse_in sp;
  int dt = sm_tensor_dtype(sm__kctx_input(ctx, 1));
  if (!supported(dt)) return sm_status_new(SM_UNIMPLEMENTED, "SetSize of %s is not supported", sm_dtype_name(dt));
  sm_status *st = sparse_from(ctx, 0, s->validate, &sp);
  if (st) return st;
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT32, sp.R - 1, sp.shape, &out))) return st;
  int64_t total = sm_tensor_num_elements(out);
  int32_t *o = sm_tensor_data(out);
  item *v = malloc((size_t)(sp.n + 1) * sizeof *v);
  if (!v) return sm_status_new(SM_NO_MEMORY, "out of memory");
  for (int64_t i = 0; i < sp.n && !st;) {
    int64_t j = group_end(&sp, i), k, flat = 0;
    if ((st = sparse_group(&sp, i, j, v, &k))) break;
    for (int d = 0; d < sp.R - 1; d++) flat = flat * sp.shape[d] + sp.ix[i * sp.R + d];
    if (flat >= total) {
      char sb[512];
      dims_text(sp.shape, sp.R - 1, sb, sizeof sb);
      st = sm_status_new(SM_INVALID_ARGUMENT, "Index out of range vs %s", sb);
      break;
    }
    o[flat] = (int32_t)k;
    i = j;
  }
  free(v);
  return st;
}

/* The group shapes of two sets (rank >= 2, all but the last dim equal). */
static sm_status *group_shapes(const int64_t *s1, int r1, const int64_t *s2, int r2) {
  char b1[512], b2[512];
  if (r1 < 2 || r2 < 2) {
    const int64_t *s = r1 < 2 ? s1 : s2;
    int r = r1 < 2 ? r1 : r2;
    dims_text(s, r, b1, sizeof b1);
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape %s has rank %d < 2", b1, r);
  }
  if (r1 != r2 || memcmp(s1, s2, (size_t)(r1 - 1) * sizeof *s1)) {
    dims_text(s1, r1 - 1, b1, sizeof b1);
    dims_text(s2, r2 - 1, b2, sizeof b2);
    return sm_status_new(SM_INVALID_ARGUMENT, "Mismatched shapes %s vs %s", b1, b2);
  }
  return NULL;
}

static sm_status *set_op_compute(const void *state, sm_kctx *ctx) {
  const set_state *s = state;
  const char *op = s->name;
  int kind = s->kind;
  int dt = sm_tensor_dtype(sm__kctx_input(ctx, kind == 2 ? 1 : 0));
  if (!supported(dt)) return sm_status_new(SM_UNIMPLEMENTED, "%s of %s is not supported", op, sm_dtype_name(dt));
  sparse_in a = {0}, b = {0};
  const sm_tensor *da = kind < 2 ? sm__kctx_input(ctx, 0) : NULL, *db = kind == 0 ? sm__kctx_input(ctx, 1) : NULL;
  sm_status *st = NULL;
  if (kind == 2 && (st = sparse_from(ctx, 0, s->validate, &a))) return st;
  if (kind == 1 && (st = sparse_from(ctx, 1, s->validate, &b))) return st;
  if (kind == 2 && (st = sparse_from(ctx, 3, s->validate, &b))) return st;
  const int64_t *s1 = da ? sm_tensor_dims(da) : a.shape, *s2 = db ? sm_tensor_dims(db) : b.shape;
  int r1 = da ? sm_tensor_rank(da) : a.R, r2 = db ? sm_tensor_rank(db) : b.R;
  if ((st = group_shapes(s1, r1, s2, r2))) return st;
  int gr = r1 - 1;
  uint64_t groups = 1;
  for (int d = 0; d < gr; d++)
    if (sm__mul_u64(groups, (uint64_t)s1[d], &groups) || groups > INT64_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "%s: the group shape is too large", op);
  int64_t la = da ? s1[gr] : a.n, lb = db ? s2[gr] : b.n;
  item *va = malloc((size_t)(la + 1) * sizeof *va), *vb = malloc((size_t)(lb + 1) * sizeof *vb);
  result r = {0};
  r.gr = gr;
  int64_t coords[SM_MAX_RANK];
  if (!va || !vb) st = sm_status_new(SM_NO_MEMORY, "out of memory");
  if (kind < 2) { /* every group of the dense set1, in order; set2's sparse groups matched as they come */
    int64_t bi = 0;
    for (int64_t g = 0; g < (int64_t)groups && !st; g++) {
      int64_t rem = g;
      for (int d = gr - 1; d >= 0; d--) coords[d] = rem % s1[d], rem /= s1[d];
      int64_t na = s1[gr], nb = 0;
      for (int64_t k = 0; k < na; k++) va[k] = get_item(da, g * s1[gr] + k);
      na = uniq(va, na);
      if (db) {
        nb = s2[gr];
        for (int64_t k = 0; k < nb; k++) vb[k] = get_item(db, g * s2[gr] + k);
        nb = uniq(vb, nb);
      } else if (bi < b.n && !memcmp(b.ix + bi * b.R, coords, (size_t)gr * sizeof *coords)) {
        int64_t j = group_end(&b, bi);
        st = sparse_group(&b, bi, j, vb, &nb);
        bi = j;
      }
      if (!st) st = apply(&r, s->op, va, na, vb, nb, coords);
    }
  } else { /* both sparse: their groups merged in row-major order */
    int64_t ai = 0, bi = 0;
    while (!st && (ai < a.n || bi < b.n)) {
      int64_t c = 0;
      if (ai >= a.n) c = 1;
      else if (bi >= b.n) c = -1;
      else
        for (int d = 0; d < gr && !c; d++) c = a.ix[ai * a.R + d] - b.ix[bi * b.R + d];
      int64_t na = 0, nb = 0;
      if (c <= 0) {
        int64_t j = group_end(&a, ai);
        memcpy(coords, a.ix + ai * a.R, (size_t)gr * sizeof *coords);
        st = sparse_group(&a, ai, j, va, &na);
        ai = j;
      }
      if (!st && c >= 0) {
        int64_t j = group_end(&b, bi);
        memcpy(coords, b.ix + bi * b.R, (size_t)gr * sizeof *coords);
        st = sparse_group(&b, bi, j, vb, &nb);
        bi = j;
      }
      if (!st) st = apply(&r, s->op, va, na, vb, nb, coords);
    }
  }
  if (!st) st = emit(ctx, &r, dt, s1);
  free(va);
  free(vb);
  free(r.v);
  free(r.coords);
  free(r.count);
  return st;
}

const sm_kernel sm_kernels_sets[] = {
    {"SetSize", set_prepare, set_size_compute, free, 0},
    {"DenseToDenseSetOperation", set_prepare, set_op_compute, free, 0},
    {"DenseToSparseSetOperation", set_prepare, set_op_compute, free, 0},
    {"SparseToSparseSetOperation", set_prepare, set_op_compute, free, 0},
    {0},
};
