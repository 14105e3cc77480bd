/* list.c - the TensorList kernel family: the list object (a DT_VARIANT value) and the
 * TensorList* / EmptyTensorList ops, with TensorFlow's semantics and messages
 * (tensorflow/core/kernels/list_kernels.{h,cc}, core/ops/list_ops.cc).
 *
 * A list is a refcounted variant object (base/variant.h): element dtype, element shape (partial:
 * -1 dims, or unknown rank), max_num_elements and a vector of element tensors, each held by
 * reference (NULL = not set yet: reads as zeros of the element shape when that shape is fully
 * known, else an error). Element tensors are never written once in a list.
 *
 * Copy-on-write: a list is immutable once two values reference it. The ops that "modify" a list
 * (SetItem, PushBack, PopBack, Resize, ScatterIntoExistingList) change it in place only when this
 * step is the input's last reader, nothing else holds the variant tensor (sm__kctx_reuse_input) and
 * nothing else holds the list object; otherwise they copy the vector of references (never the
 * elements) into a new list. So a loop that SetItem's every iteration costs O(1) per step.
 *
 * Memory: a list charges its vector and every element it holds to the run's budget
 * (sm_run_options.max_run_bytes) through its account (kernel.h sm__kctx_hold), and gives each back
 * when it lets go, so a loop that grows a list without bound is refused past the budget while one
 * that builds and drops a list per iteration is not. An element also held elsewhere (a slot, a
 * clone of the list) is counted by each holder: the budget errs on the safe side. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "base/variant.h"
#include "ops/array_internal.h"
#include "ops/control_internal.h"
#include "runtime/kernel.h"

#define LIST_TYPE "tensorflow::TensorList"

/* A partial shape: rank -1 = unknown rank; a dim -1 = unknown. */
typedef struct pshape {
  int rank;
  int64_t d[SM_MAX_RANK];
} pshape;

typedef struct tlist {
  sm_variant v; /* first: the tensor holds &v */
  int dtype;
  pshape shape;
  int64_t max; /* max_num_elements; -1 = unbounded */
  int64_t n, cap;
  sm_tensor **items;   /* n entries; NULL = unset */
  sm_mem_account acct; /* the run's budget: the vector and the elements held (kernel.h) */
} tlist;

/* ---- partial shapes ------------------------------------------------------------------------ */

/* PartialTensorShape::DebugString: "<unknown>", "[2,?]". */
static const char *pshape_str(const pshape *p, char *buf, size_t cap) {
  if (p->rank < 0) {
    snprintf(buf, cap, "<unknown>");
    return buf;
  }
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < p->rank && k < cap; i++) {
    if (p->d[i] < 0) k += (size_t)snprintf(buf + k, cap - k, i ? ",?" : "?");
    else k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)p->d[i]);
  }
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

static void pshape_of(const sm_tensor *t, pshape *p) {
  p->rank = sm_tensor_rank(t);
  if (p->rank) memcpy(p->d, sm_tensor_dims(t), (size_t)p->rank * sizeof p->d[0]);
}

static int fully_defined(const pshape *p) {
  if (p->rank < 0) return 0;
  for (int i = 0; i < p->rank; i++)
    if (p->d[i] < 0) return 0;
  return 1;
}

/* PartialTensorShape::IsCompatibleWith for a known shape. */
static int compatible(const pshape *p, int rank, const int64_t *dims) {
  if (p->rank < 0) return 1;
  if (p->rank != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (p->d[i] >= 0 && p->d[i] != dims[i]) return 0;
  return 1;
}

/* PartialTensorShape::MergeWith: *out = a merged with b (out may be a). */
static sm_status *merge(const pshape *a, const pshape *b, pshape *out) {
  if (a->rank < 0) {
    *out = *b;
    return NULL;
  }
  if (b->rank < 0) {
    *out = *a;
    return NULL;
  }
  int ok = a->rank == b->rank;
  for (int i = 0; ok && i < a->rank; i++) ok = a->d[i] < 0 || b->d[i] < 0 || a->d[i] == b->d[i];
  if (!ok) {
    char x[256], y[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "PartialTensorShape: Incompatible shapes during merge: %s vs. %s",
                         pshape_str(a, x, sizeof x), pshape_str(b, y, sizeof y));
  }
  pshape m = *a;
  for (int i = 0; i < a->rank; i++)
    if (m.d[i] < 0) m.d[i] = b->d[i];
  *out = m;
  return NULL;
}

static const char *tfname(int dtype, char *b, size_t cap) {
  const char *n = sm_dtype_name(dtype);
  if (!n) return "unknown";
  if (!strncmp(n, "DT_", 3)) n += 3;
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) b[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
  b[i] = 0;
  return b;
}

static int is_int(const sm_tensor *t) { return sm_tensor_dtype(t) == SM_INT32 || sm_tensor_dtype(t) == SM_INT64; }

static int64_t int_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
}

/* A scalar int32/int64 input, named in the message. */
static sm_status *scalar_int(const sm_tensor *t, const char *what, int64_t *v) {
  if (!is_int(t) || sm_tensor_rank(t) != 0) {
    char sh[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be an int32 or int64 scalar, saw shape %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sh, sizeof sh));
  }
  *v = int_at(t, 0);
  return NULL;
}

/* TensorShapeFromTensor: -1 scalar = unknown rank; else a vector of dims (-1 unknown). */
static sm_status *shape_from_tensor(const sm_tensor *t, pshape *p) {
  if (sm_tensor_rank(t) == 0) {
    if (is_int(t) && int_at(t, 0) == -1) {
      p->rank = -1;
      return NULL;
    }
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "The only valid scalar shape tensor is the fully unknown shape specified as -1.");
  }
  if (!is_int(t)) {
    char b[32];
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected an int32 or int64 shape tensor; found %s",
                         tfname(sm_tensor_dtype(t), b, sizeof b));
  }
  if (sm_tensor_rank(t) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be a vector of dimensions");
  int64_t n = sm_tensor_num_elements(t);
  if (n > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "element shape of rank %lld is over %d", (long long)n, SM_MAX_RANK);
  p->rank = (int)n;
  for (int i = 0; i < p->rank; i++) {
    p->d[i] = int_at(t, i);
    if (p->d[i] < -1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= -1", (long long)p->d[i]);
  }
  return NULL;
}

/* ---- the list object ------------------------------------------------------------------------ */

static void list_release(sm_variant *v) {
  tlist *l = (tlist *)v;
  for (int64_t i = 0; i < l->n; i++) sm_tensor_free(l->items[i]);
  sm__mem_close(&l->acct);
  sm__free(l->items);
  sm__free(l);
}

/* Room for `want` items (new slots beyond n are not initialised), the growth of the vector charged
 * to the run's budget. */
static sm_status *list_reserve(const sm_kctx *ctx, tlist *l, int64_t want) {
  if (want <= l->cap) return NULL;
  int64_t ncap = l->cap ? l->cap : 4;
  while (ncap < want) ncap = ncap > INT64_MAX / 2 ? want : ncap * 2;
  if (ncap > sm__seq_max_elements) ncap = want;
  char what[64];
  snprintf(what, sizeof what, "a TensorList of %lld elements", (long long)want);
  uint64_t more = (uint64_t)(ncap - l->cap);
  size_t bytes = more > SIZE_MAX / sizeof(sm_tensor *) ? SIZE_MAX : (size_t)more * sizeof(sm_tensor *);
  sm_status *s = sm__kctx_hold(ctx, &l->acct, bytes, what);
  if (s) return s;
  if (want > sm__seq_max_elements) {
    sm__mem_give(&l->acct, bytes);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "TensorList of %lld elements is more than the limit of %lld",
                         (long long)want, (long long)sm__seq_max_elements);
  }
  sm_tensor **ni = sm__realloc(l->items, (size_t)ncap * sizeof *ni);
  if (!ni) {
    sm__mem_give(&l->acct, bytes);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a TensorList of %lld elements", (long long)ncap);
  }
  l->items = ni;
  l->cap = ncap;
  return NULL;
}

/* Item i (< n) = t, a reference the list takes over (NULL: unset), charged to the run's budget; the
 * item it replaces goes, and so does its charge. On failure t is released and item i stays. */
static sm_status *list_put(const sm_kctx *ctx, tlist *l, int64_t i, sm_tensor *t) {
  sm_status *s = sm__kctx_hold_tensor(ctx, &l->acct, t, "a TensorList element");
  if (s) {
    sm_tensor_free(t);
    return s;
  }
  sm__mem_give_tensor(&l->acct, l->items[i]);
  sm_tensor_free(l->items[i]);
  l->items[i] = t;
  return NULL;
}

/* Sets the length to n: new slots unset, dropped ones released (and their charges). */
static sm_status *list_resize(const sm_kctx *ctx, tlist *l, int64_t n) {
  sm_status *s = list_reserve(ctx, l, n);
  if (s) return s;
  for (int64_t i = n; i < l->n; i++) {
    sm__mem_give_tensor(&l->acct, l->items[i]);
    sm_tensor_free(l->items[i]);
  }
  for (int64_t i = l->n; i < n; i++) l->items[i] = NULL;
  l->n = n;
  return NULL;
}

static sm_status *list_new(const sm_kctx *ctx, int dtype, const pshape *shape, int64_t n, tlist **out) {
  *out = NULL;
  tlist *l = sm__calloc(sizeof *l);
  if (!l) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a TensorList");
  sm__variant_init(&l->v, LIST_TYPE, list_release);
  l->dtype = dtype;
  l->shape = *shape;
  l->max = -1;
  sm_status *s = list_resize(ctx, l, n);
  if (s) {
    list_release(&l->v);
    return s;
  }
  *out = l;
  return NULL;
}

/* A new list with the same items (references, not copies; each list charges what it holds). */
static sm_status *list_clone(const sm_kctx *ctx, const tlist *src, tlist **out) {
  sm_status *s = list_new(ctx, src->dtype, &src->shape, 0, out);
  if (!s) s = list_reserve(ctx, *out, src->n);
  for (int64_t i = 0; !s && i < src->n; i++) {
    (*out)->items[i] = NULL;
    (*out)->n = i + 1;
    s = list_put(ctx, *out, i, sm_tensor_ref(src->items[i]));
  }
  if (s) {
    if (*out) list_release(&(*out)->v);
    *out = NULL;
    return s;
  }
  (*out)->max = src->max;
  return NULL;
}

/* Output i = a new DT_VARIANT scalar holding l (the output takes over the caller's reference; on
 * failure l is released). */
static sm_status *set_list_output(sm_kctx *ctx, int i, tlist *l) {
  sm_tensor *t;
  sm_status *s = sm__kctx_alloc_output(ctx, i, SM_VARIANT, 0, NULL, &t);
  if (s) {
    list_release(&l->v);
    return s;
  }
  sm__tensor_variants(t)[0] = &l->v;
  return NULL;
}

/* GetInputList. */
static sm_status *input_list(sm_kctx *ctx, int i, const tlist **out) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  if (sm_tensor_rank(t) != 0) {
    char sh[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "Input list must be a scalar saw: %s",
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sh, sizeof sh));
  }
  sm_variant **vs = sm__tensor_variants(t);
  sm_variant *v = vs ? vs[0] : NULL;
  if (!v || strcmp(v->type_name, LIST_TYPE)) {
    char b[32];
    return sm_status_new(SM_INVALID_ARGUMENT, "Input handle is not a list. Saw: '%s'",
                         v ? v->type_name : vs ? "[empty variant]" : tfname(sm_tensor_dtype(t), b, sizeof b));
  }
  *out = (const tlist *)v;
  return NULL;
}

/* ForwardInputOrCreateNewList: the list of input `in` as output `out`, writable. In place when
 * nothing else can see it, else a copy of its vector of references. */
static sm_status *writable_list(sm_kctx *ctx, int in, int out, const tlist *l, tlist **w) {
  if (!sm__variant_is_shared(&l->v) && sm__kctx_reuse_input(ctx, in, out, SM_VARIANT, 0, NULL)) {
    *w = (tlist *)l;
    return NULL;
  }
  sm_status *s = list_clone(ctx, l, w);
  if (!s) s = set_list_output(ctx, out, *w);
  return s;
}

static sm_status *dtype_mismatch(int op, int list) {
  char a[32], b[32];
  return sm_status_new(SM_INVALID_ARGUMENT, "Invalid data types; op elements %s but list elements %s",
                       tfname(op, a, sizeof a), tfname(list, b, sizeof b));
}

/* ---- element moves ------------------------------------------------------------------------ */

/* A new tensor of `rank`/`dims` holding src's rows [row, row + rows) (rows of `per` elements). */
static sm_status *slice_rows(const sm_tensor *src, int64_t row, int64_t per, int rank, const int64_t *dims, sm_tensor **out) {
  sm_status *s = sm__tensor_new_uninit(sm_tensor_dtype(src), rank, dims, out);
  if (!s) s = sm__array_copy(*out, 0, src, row * per, sm_tensor_num_elements(*out));
  if (s) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return s;
}

/* ---- kernel state -------------------------------------------------------------------------- */

typedef struct kstate {
  int dtype;            /* element_dtype (-1 when the op has none) */
  int shape_type;       /* ElementShape's output dtype */
  int64_t num_elements; /* Stack's attr */
  int resize;           /* SetItem's resize_if_index_out_of_bounds */
  pshape concat_rest;   /* TensorListConcat (V1): its element_shape attr without the first dim */
} kstate;

static int supported_dtype(int dt) { return dt == SM_STRING || dt == SM_VARIANT || sm_dtype_size(dt) > 0; }

static sm_status *list_prepare(const sm_node *node, void **state) {
  kstate *k = sm__calloc(sizeof *k);
  if (!k) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  k->dtype = -1;
  k->shape_type = SM_INT32;
  k->num_elements = -1;
  k->concat_rest.rank = -1;
  sm_status *s = NULL;
  if (sm__node_attr(node, "element_dtype")) {
    s = sm__node_attr_type(node, "element_dtype", &k->dtype);
    if (!s && !supported_dtype(k->dtype)) {
      const char *n = sm_dtype_name(k->dtype);
      s = sm_status_new(SM_UNIMPLEMENTED, "TensorList elements of dtype %s are not supported", n ? n : "(unknown)");
    }
  }
  if (!s && sm__node_attr(node, "shape_type")) {
    s = sm__node_attr_type(node, "shape_type", &k->shape_type);
    if (!s && k->shape_type != SM_INT32 && k->shape_type != SM_INT64)
      s = sm_status_new(SM_INVALID_ARGUMENT, "shape_type must be int32 or int64");
  }
  if (!s && sm__node_attr(node, "num_elements")) s = sm__node_attr_int(node, "num_elements", &k->num_elements);
  if (!s && sm__node_attr(node, "resize_if_index_out_of_bounds"))
    s = sm__node_attr_bool(node, "resize_if_index_out_of_bounds", &k->resize);
  if (!s && !strcmp(sm__node_op(node), "TensorListConcat") && sm__node_attr(node, "element_shape")) {
    int rank;
    int64_t dims[SM_MAX_RANK];
    s = sm__node_attr_shape(node, "element_shape", &rank, dims);
    if (!s && rank >= 1) {
      k->concat_rest.rank = rank - 1;
      memcpy(k->concat_rest.d, dims + 1, (size_t)(rank - 1) * sizeof dims[0]);
    } else if (!s && rank == 0) {
      k->concat_rest.rank = 0;
    }
  }
  if (s) {
    sm__free(k);
    return s;
  }
  *state = k;
  return NULL;
}

static void list_state_release(void *state) { sm__free(state); }

/* ---- creating lists ------------------------------------------------------------------------ */

static sm_status *empty_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const sm_tensor *mx = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(mx) != 0) {
    char sh[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "max_num_elements expected to be a scalar but got shape: %s",
                         sm_shape_str(sm_tensor_rank(mx), sm_tensor_dims(mx), sh, sizeof sh));
  }
  int64_t max;
  pshape es;
  sm_status *s = scalar_int(mx, "max_num_elements", &max);
  if (!s) s = shape_from_tensor(sm__kctx_input(ctx, 0), &es);
  tlist *l = NULL;
  if (!s) s = list_new(ctx, k->dtype, &es, 0, &l);
  if (s) return s;
  l->max = max;
  return set_list_output(ctx, 0, l);
}

static sm_status *reserve_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  pshape es;
  int64_t n;
  sm_status *s = shape_from_tensor(sm__kctx_input(ctx, 0), &es);
  if (!s) s = scalar_int(sm__kctx_input(ctx, 1), "num_elements", &n);
  if (s) return s;
  if (n < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "The num_elements to reserve must be a non negative number, but got %lld",
                         (long long)n);
  tlist *l;
  if ((s = list_new(ctx, k->dtype, &es, n, &l))) return s;
  return set_list_output(ctx, 0, l);
}

/* The rows of `t` (rank >= 1) as the elements of list l (l->n == rows). */
static sm_status *fill_rows(const sm_kctx *ctx, tlist *l, const sm_tensor *t, const int64_t *idx) {
  int rank = sm_tensor_rank(t) - 1;
  const int64_t *dims = sm_tensor_dims(t) + 1;
  int64_t rows = sm_tensor_dims(t)[0], per = 1;
  for (int i = 0; i < rank; i++) per *= dims[i];
  for (int64_t r = 0; r < rows; r++) {
    sm_tensor *e;
    sm_status *s = slice_rows(t, r, per, rank, dims, &e);
    if (s) return s;
    if ((s = list_put(ctx, l, idx ? idx[r] : r, e))) return s;
  }
  return NULL;
}

static sm_status *need_vector(const sm_tensor *t) {
  if (sm_tensor_rank(t) >= 1) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "Tensor must be at least a vector, but saw shape: []");
}

static sm_status *from_tensor_shape_check(const pshape *es, const sm_tensor *t) {
  if (compatible(es, sm_tensor_rank(t) - 1, sm_tensor_dims(t) + 1)) return NULL;
  char a[256], b[256];
  return sm_status_new(SM_INVALID_ARGUMENT, "Specified a list with shape %s from a tensor with shape %s",
                       pshape_str(es, a, sizeof a), sm_shape_str(sm_tensor_rank(t) - 1, sm_tensor_dims(t) + 1, b, sizeof b));
}

static sm_status *from_tensor_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  pshape es;
  sm_status *s = shape_from_tensor(sm__kctx_input(ctx, 1), &es);
  if (!s) s = need_vector(t);
  if (!s) s = from_tensor_shape_check(&es, t);
  tlist *l = NULL;
  if (!s) s = list_new(ctx, sm_tensor_dtype(t), &es, sm_tensor_dims(t)[0], &l);
  if (!s) s = fill_rows(ctx, l, t, NULL);
  if (s) {
    if (l) list_release(&l->v);
    return s;
  }
  return set_list_output(ctx, 0, l);
}

/* Scatter's index checks: every index >= 0; *hi = the highest (-1 when none). */
static sm_status *scatter_indices(const sm_tensor *idx, const sm_tensor *t, int64_t *hi) {
  int64_t n = sm_tensor_num_elements(idx);
  if (n != sm_tensor_dims(t)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid number of rows in input tensor. Expected: %lld Actual: %lld",
                         (long long)n, (long long)sm_tensor_dims(t)[0]);
  *hi = -1;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = int_at(idx, i);
    if (v < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Indices in TensorListScatter must all be non-negative.");
    if (v > *hi) *hi = v;
  }
  return NULL;
}

/* Scatters t's rows into l at idx (already checked: in range). */
static sm_status *scatter_rows(sm_kctx *ctx, tlist *l, const sm_tensor *t, const sm_tensor *idx) {
  int64_t n = sm_tensor_num_elements(idx);
  sm_status *s = NULL;
  int64_t *iv = sm__kctx_scratch(ctx, (size_t)(n ? n : 1) * sizeof *iv, &s);
  if (!iv) return s;
  for (int64_t i = 0; i < n; i++) iv[i] = int_at(idx, i);
  s = fill_rows(ctx, l, t, iv);
  sm__kctx_scratch_free(ctx, iv);
  return s;
}

/* TensorListScatter (3 inputs) and TensorListScatterV2 (4: num_elements). */
static sm_status *scatter_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0), *idx = sm__kctx_input(ctx, 1);
  pshape es;
  int64_t num = -1, hi;
  sm_status *s = shape_from_tensor(sm__kctx_input(ctx, 2), &es);
  if (!s && sm__kctx_num_inputs(ctx) > 3) {
    s = scalar_int(sm__kctx_input(ctx, 3), "num_elements", &num);
    if (!s && num < -1)
      s = sm_status_new(SM_INVALID_ARGUMENT, "TensorListScatter expects num_elements >= -1, found: %lld", (long long)num);
  }
  if (!s) s = need_vector(t);
  if (!s) s = from_tensor_shape_check(&es, t);
  if (!s) s = scatter_indices(idx, t, &hi);
  if (s) return s;
  if (num == -1) num = hi + 1;
  else if (hi >= num)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorListScatter: Trying to scatter at index %lld in list with size %lld",
                         (long long)hi, (long long)num);
  tlist *l;
  if ((s = list_new(ctx, sm_tensor_dtype(t), &es, num, &l))) return s;
  if ((s = scatter_rows(ctx, l, t, idx))) {
    list_release(&l->v);
    return s;
  }
  return set_list_output(ctx, 0, l);
}

static sm_status *split_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0), *lens = sm__kctx_input(ctx, 2);
  pshape es;
  char a[256], b[256];
  sm_status *s = shape_from_tensor(sm__kctx_input(ctx, 1), &es);
  if (s) return s;
  if (es.rank == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorListSplit requires element_shape to be at least of rank 1, but saw: %s",
                         pshape_str(&es, a, sizeof a));
  if ((s = need_vector(t))) return s;
  pshape rest = es;
  if (rest.rank > 0) {
    rest.rank--;
    memmove(rest.d, rest.d + 1, (size_t)rest.rank * sizeof rest.d[0]);
  }
  if (!compatible(&rest, sm_tensor_rank(t) - 1, sm_tensor_dims(t) + 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "tensor shape %s is not compatible with element_shape %s",
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b), pshape_str(&es, a, sizeof a));
  if (sm_tensor_rank(lens) != 1 || !is_int(lens))
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected lengths to be a vector, received shape: %s",
                         sm_shape_str(sm_tensor_rank(lens), sm_tensor_dims(lens), b, sizeof b));
  int64_t n = sm_tensor_num_elements(lens), rows = sm_tensor_dims(t)[0], per = 1;
  int rank = sm_tensor_rank(t);
  int64_t dims[SM_MAX_RANK];
  memcpy(dims, sm_tensor_dims(t), (size_t)rank * sizeof dims[0]);
  for (int i = 1; i < rank; i++) per *= dims[i];
  tlist *l;
  if ((s = list_new(ctx, sm_tensor_dtype(t), &es, n, &l))) return s;
  int64_t start = 0, end = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    int64_t len = int_at(lens, i);
    if (len < 0) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid value in lengths: %lld", (long long)len);
      break;
    }
    end = start + len;
    if (end > rows) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Attempting to slice [%lld, %lld] from tensor with length %lld",
                        (long long)start, (long long)end, (long long)rows);
      break;
    }
    dims[0] = len;
    sm_tensor *e;
    if (!(s = slice_rows(t, start, per, rank, dims, &e))) s = list_put(ctx, l, i, e);
    start = end;
  }
  if (!s && end != rows)
    s = sm_status_new(SM_INVALID_ARGUMENT, "Unused values in tensor. Length of tensor: %lld Values used: %lld",
                      (long long)rows, (long long)end);
  if (s) {
    list_release(&l->v);
    return s;
  }
  return set_list_output(ctx, 0, l);
}

/* ---- reading lists ------------------------------------------------------------------------- */

static sm_status *length_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const tlist *l;
  sm_tensor *o;
  sm_status *s = input_list(ctx, 0, &l);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &o);
  if (!s) *(int32_t *)sm_tensor_data(o) = (int32_t)l->n;
  return s;
}

static sm_status *element_shape_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  sm_tensor *o;
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  int64_t d = l->shape.rank < 0 ? 0 : l->shape.rank;
  if ((s = sm__kctx_alloc_output(ctx, 0, k->shape_type, l->shape.rank < 0 ? 0 : 1, &d, &o))) return s;
  for (int64_t i = 0; i < (l->shape.rank < 0 ? 1 : d); i++) {
    int64_t v = l->shape.rank < 0 ? -1 : l->shape.d[i];
    if (k->shape_type == SM_INT32) ((int32_t *)sm_tensor_data(o))[i] = (int32_t)v;
    else ((int64_t *)sm_tensor_data(o))[i] = v;
  }
  return NULL;
}

/* GetElementShapeFromInput: the element_shape input merged with the list's. */
static sm_status *input_element_shape(sm_kctx *ctx, int i, const tlist *l, pshape *out) {
  pshape in;
  sm_status *s = shape_from_tensor(sm__kctx_input(ctx, i), &in);
  return s ? s : merge(&in, &l->shape, out);
}

/* Merges *p with the shapes of the set items among idx (all items when idx NULL). */
static sm_status *merge_items(const tlist *l, const int64_t *idx, int64_t n, pshape *p) {
  for (int64_t j = 0; j < n; j++) {
    const sm_tensor *t = l->items[idx ? idx[j] : j];
    if (!t) continue;
    pshape ts;
    pshape_of(t, &ts);
    sm_status *s = merge(p, &ts, p);
    if (s) return s;
  }
  return NULL;
}

static sm_status *get_item_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  int64_t i;
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  if ((s = scalar_int(sm__kctx_input(ctx, 1), "index", &i))) return s;
  if (i < 0 || i >= l->n)
    return sm_status_new(SM_INVALID_ARGUMENT, "Trying to access element %lld in a list with %lld elements.", (long long)i,
                         (long long)l->n);
  if (l->items[i]) {
    sm__kctx_set_output(ctx, 0, sm_tensor_ref(l->items[i]));
    return NULL;
  }
  pshape es;
  if ((s = input_element_shape(ctx, 2, l, &es))) return s;
  if (!fully_defined(&es) && (s = merge_items(l, NULL, l->n, &es))) return s;
  if (!fully_defined(&es)) {
    char b[256];
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Trying to read an uninitialized tensor but element_shape is not fully defined: %s and no list "
                         "element is set.",
                         pshape_str(&es, b, sizeof b));
  }
  sm_tensor *o;
  return sm__kctx_alloc_output(ctx, 0, k->dtype, es.rank, es.d, &o);
}

/* Stacks items idx[0..n) (all when idx NULL) into output 0 of shape [n] + es; unset items are
 * zeros (the output starts zeroed). */
static sm_status *stack_into(sm_kctx *ctx, const tlist *l, const int64_t *idx, int64_t n, const pshape *es) {
  int64_t dims[SM_MAX_RANK + 1];
  if (es->rank + 1 > SM_MAX_RANK)
    return sm_status_new(SM_INVALID_ARGUMENT, "stacked rank %d is over %d", es->rank + 1, SM_MAX_RANK);
  dims[0] = n;
  memcpy(dims + 1, es->d, (size_t)es->rank * sizeof dims[0]);
  sm_tensor *o;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, l->dtype, es->rank + 1, dims, &o);
  if (s) return s;
  int64_t per = 1;
  for (int i = 0; i < es->rank; i++) per *= es->d[i];
  for (int64_t j = 0; j < n && !s; j++) {
    const sm_tensor *t = l->items[idx ? idx[j] : j];
    if (t && sm_tensor_num_elements(t) != per)
      s = sm_status_new(SM_INTERNAL, "TensorList element %lld has %lld values, expected %lld", (long long)(idx ? idx[j] : j),
                        (long long)sm_tensor_num_elements(t), (long long)per);
    else if (t) s = sm__array_copy(o, j * per, t, 0, per);
  }
  return s;
}

static sm_status *stack_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  char b[256];
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  if (k->num_elements != -1 && l->n != k->num_elements)
    return sm_status_new(SM_INVALID_ARGUMENT, "Operation expected a list with %lld elements but got a list with %lld elements.",
                         (long long)k->num_elements, (long long)l->n);
  pshape es;
  if ((s = input_element_shape(ctx, 1, l, &es))) return s;
  if (!fully_defined(&es) && l->n == 0)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Tried to stack elements of an empty list with non-fully-defined element_shape: %s",
                         pshape_str(&es, b, sizeof b));
  if (!fully_defined(&l->shape) && (s = merge_items(l, NULL, l->n, &es))) return s;
  if (!fully_defined(&es))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Tried to stack list which only contains uninitialized tensors and has a non-fully-defined "
                         "element_shape: %s",
                         pshape_str(&es, b, sizeof b));
  return stack_into(ctx, l, NULL, l->n, &es);
}

static sm_status *gather_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  char b[256];
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  const sm_tensor *idx = sm__kctx_input(ctx, 1);
  if (!is_int(idx)) return sm_status_new(SM_INVALID_ARGUMENT, "indices must be int32");
  pshape es;
  if ((s = input_element_shape(ctx, 2, l, &es))) return s;
  int64_t n = sm_tensor_num_elements(idx);
  if (!fully_defined(&es) && n == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tried to gather 0-elements from a list with non-fully-defined shape: %s",
                         pshape_str(&es, b, sizeof b));
  int64_t *iv = sm__kctx_scratch(ctx, (size_t)(n ? n : 1) * sizeof *iv, &s);
  if (!iv) return s;
  for (int64_t j = 0; j < n; j++) {
    iv[j] = int_at(idx, j);
    if (iv[j] < 0 || iv[j] >= l->n)
      return sm_status_new(SM_INVALID_ARGUMENT, "Index %lld out o range; list only has %lld elements.", (long long)iv[j],
                           (long long)l->n);
  }
  if (!fully_defined(&l->shape) && (s = merge_items(l, iv, n, &es))) return s;
  if (!fully_defined(&es))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Tried to gather uninitialized tensors from a list with non-fully-defined element_shape: %s",
                         pshape_str(&es, b, sizeof b));
  return stack_into(ctx, l, iv, n, &es);
}

/* TensorListConcat (1 input; element_shape attr) and TensorListConcatV2 (element_shape and
 * leading_dims inputs). Output 0 = the items concatenated along dim 0, output 1 = their lengths. */
static sm_status *concat_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  char b[256];
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  int v2 = sm__kctx_num_inputs(ctx) > 1;
  int64_t first = -1;
  pshape rest = k->concat_rest;
  if (v2) {
    pshape es;
    if ((s = input_element_shape(ctx, 1, l, &es))) return s;
    if (es.rank == 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Concat requires elements to be at least vectors, found scalars instead.");
    rest.rank = -1;
    if (es.rank > 0) {
      first = es.d[0];
      rest.rank = es.rank - 1;
      memcpy(rest.d, es.d + 1, (size_t)rest.rank * sizeof rest.d[0]);
    }
  }
  if (l->n == 0 && !fully_defined(&rest))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "All except the first dimension must be fully defined when concating an empty tensor list. "
                         "element_shape: %s",
                         pshape_str(&rest, b, sizeof b));
  if (!fully_defined(&l->shape)) {
    int check = first == -1;
    int64_t inferred = first;
    for (int64_t i = 0; i < l->n; i++) {
      const sm_tensor *t = l->items[i];
      if (!t) continue;
      if (sm_tensor_rank(t) < 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Concat saw a scalar shape at index %lld but requires at least vectors.",
                             (long long)i);
      pshape ts;
      pshape_of(t, &ts);
      ts.rank--;
      memmove(ts.d, ts.d + 1, (size_t)ts.rank * sizeof ts.d[0]);
      if ((s = merge(&rest, &ts, &rest))) return s;
      int64_t d0 = sm_tensor_dims(t)[0];
      if (first != -1 && first != d0)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "First entry of element_shape input does not match the first dim of list element at index: "
                             "%lld Expected: %lld Actual: %lld",
                             (long long)i, (long long)first, (long long)d0);
      if (check) {
        if (inferred == -1) inferred = d0;
        else if (inferred != d0) {
          inferred = -1;
          check = 0;
        }
      }
    }
    first = inferred;
  } else if (l->shape.rank == 0) {
    return sm_status_new(SM_INVALID_ARGUMENT, "Concat requires elements to be at least vectors, found scalars instead.");
  }
  if (!fully_defined(&rest))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Trying to concat list with only uninitialized tensors but element_shape_except_first_dim_ is not "
                         "fully defined: %s",
                         pshape_str(&rest, b, sizeof b));
  const sm_tensor *lead = v2 && sm__kctx_num_inputs(ctx) > 2 ? sm__kctx_input(ctx, 2) : NULL;
  if (lead && !is_int(lead)) return sm_status_new(SM_INVALID_ARGUMENT, "leading_dims must be int64");
  int64_t nlead = lead ? sm_tensor_num_elements(lead) : 0;
  sm_tensor *lengths;
  int64_t n = l->n;
  if ((s = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &n, &lengths))) return s;
  int64_t *lv = sm_tensor_data(lengths), total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t d;
    if (l->items[i]) {
      d = sm_tensor_dims(l->items[i])[0];
    } else if (i >= nlead && first != -1) {
      d = first;
    } else {
      if (!v2)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Concating lists with uninitialized tensors is not supported in this version of "
                             "TensorListConcat. Consider updating your GraphDef to run the newer version.");
      if (i >= nlead)
        return sm_status_new(SM_INVALID_ARGUMENT, "List contains uninitialized tensor at index %lld but leading_dims has only %lld elements.",
                             (long long)i, (long long)nlead);
      d = int_at(lead, i);
      if (d < 0) return sm_status_new(SM_INVALID_ARGUMENT, "leading_dims[%lld] is negative (%lld)", (long long)i, (long long)d);
    }
    lv[i] = d;
    if (__builtin_add_overflow(total, d, &total))
      return sm_status_new(SM_OUT_OF_RANGE, "concatenated length overflows");
  }
  if (rest.rank + 1 > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "concat rank is over %d", SM_MAX_RANK);
  int64_t dims[SM_MAX_RANK + 1];
  dims[0] = total;
  memcpy(dims + 1, rest.d, (size_t)rest.rank * sizeof dims[0]);
  sm_tensor *o;
  if ((s = sm__kctx_alloc_output(ctx, 0, l->dtype, rest.rank + 1, dims, &o))) return s;
  int64_t per = 1, off = 0;
  for (int i = 0; i < rest.rank; i++) per *= rest.d[i];
  for (int64_t i = 0; i < n && !s; i++) {
    if (l->items[i] && sm_tensor_num_elements(l->items[i]) != lv[i] * per)
      s = sm_status_new(SM_INTERNAL, "TensorList element %lld does not fit the concatenated shape", (long long)i);
    else if (l->items[i]) s = sm__array_copy(o, off, l->items[i], 0, sm_tensor_num_elements(l->items[i]));
    off += lv[i] * per;
  }
  return s;
}

/* ---- changing lists (copy-on-write) ------------------------------------------------------- */

static sm_status *set_item_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  int64_t i;
  char a[256], b[256];
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  if ((s = scalar_int(sm__kctx_input(ctx, 1), "index", &i))) return s;
  if (i < 0 || (i >= l->n && !k->resize))
    return sm_status_new(SM_INVALID_ARGUMENT, "Trying to modify element %lld in a list with %lld elements.", (long long)i,
                         (long long)l->n);
  const sm_tensor *v = sm__kctx_input(ctx, 2);
  if (!compatible(&l->shape, sm_tensor_rank(v), sm_tensor_dims(v)))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Tried to set a tensor with incompatible shape at a list index. Item element shape: %s list shape: %s",
                         sm_shape_str(sm_tensor_rank(v), sm_tensor_dims(v), a, sizeof a), pshape_str(&l->shape, b, sizeof b));
  tlist *w;
  if ((s = writable_list(ctx, 0, 0, l, &w))) return s;
  if (i >= w->n && (s = list_resize(ctx, w, i + 1))) return s;
  return list_put(ctx, w, i, sm_tensor_ref((sm_tensor *)v));
}

static sm_status *push_back_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  char a[256], b[256];
  const sm_tensor *v = sm__kctx_input(ctx, 1);
  if (k->dtype != sm_tensor_dtype(v))
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid data types; list elements %s but tried to append %s",
                         tfname(k->dtype, a, sizeof a), tfname(sm_tensor_dtype(v), b, sizeof b));
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (!compatible(&l->shape, sm_tensor_rank(v), sm_tensor_dims(v)))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Tried to append a tensor with incompatible shape to a list. Op element shape: %s list shape: %s",
                         sm_shape_str(sm_tensor_rank(v), sm_tensor_dims(v), a, sizeof a), pshape_str(&l->shape, b, sizeof b));
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  if (l->max != -1 && l->n >= l->max)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tried to push item into a full list list size: %lld max_num_elements: %lld",
                         (long long)l->n, (long long)l->max);
  tlist *w;
  if ((s = writable_list(ctx, 0, 0, l, &w))) return s;
  if ((s = list_reserve(ctx, w, w->n + 1))) return s;
  w->items[w->n] = NULL;
  if ((s = list_put(ctx, w, w->n, sm_tensor_ref((sm_tensor *)v)))) return s;
  w->n++;
  return NULL;
}

static sm_status *pop_back_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  if (l->n == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Trying to pop from an empty list.");
  const sm_tensor *t = l->items[l->n - 1];
  if (t) {
    sm__kctx_set_output(ctx, 1, sm_tensor_ref((sm_tensor *)t));
  } else {
    pshape es;
    if ((s = input_element_shape(ctx, 1, l, &es))) return s;
    if (!fully_defined(&es)) {
      char b[256];
      return sm_status_new(SM_INVALID_ARGUMENT, "Trying to read an uninitialized tensor but element_shape is not fully defined.%s",
                           pshape_str(&es, b, sizeof b));
    }
    sm_tensor *o;
    if ((s = sm__kctx_alloc_output(ctx, 1, k->dtype, es.rank, es.d, &o))) return s;
  }
  tlist *w;
  if ((s = writable_list(ctx, 0, 0, l, &w))) return s;
  return list_resize(ctx, w, w->n - 1);
}

static sm_status *resize_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const tlist *l;
  int64_t n;
  sm_status *s = input_list(ctx, 0, &l);
  if (!s) s = scalar_int(sm__kctx_input(ctx, 1), "size", &n);
  if (s) return s;
  if (n < 0) return sm_status_new(SM_INVALID_ARGUMENT, "TensorListSlice expects size to be non-negative. Got: %lld", (long long)n);
  tlist *w;
  if ((s = writable_list(ctx, 0, 0, l, &w))) return s;
  return list_resize(ctx, w, n);
}

static sm_status *scatter_existing_compute(const void *state, sm_kctx *ctx) {
  const kstate *k = state;
  const tlist *l;
  sm_status *s = input_list(ctx, 0, &l);
  if (s) return s;
  if (k->dtype != l->dtype) return dtype_mismatch(k->dtype, l->dtype);
  const sm_tensor *t = sm__kctx_input(ctx, 1), *idx = sm__kctx_input(ctx, 2);
  int64_t hi;
  if ((s = need_vector(t))) return s;
  if ((s = from_tensor_shape_check(&l->shape, t))) return s;
  if ((s = scatter_indices(idx, t, &hi))) return s;
  tlist *w;
  if ((s = writable_list(ctx, 0, 0, l, &w))) return s;
  if (hi >= w->n && (s = list_resize(ctx, w, hi + 1))) return s;
  return scatter_rows(ctx, w, t, idx);
}

/* control_internal.h: the While hoist reads the items of its loop's input list. */
int sm__list_view(const sm_tensor *t, int *dtype, int64_t *n, sm_tensor *const **items, const void **id) {
  if (!t || sm_tensor_dtype(t) != SM_VARIANT || sm_tensor_rank(t) != 0) return 0;
  sm_variant **vs = sm__tensor_variants(t);
  sm_variant *v = vs ? vs[0] : NULL;
  if (!v || strcmp(v->type_name, LIST_TYPE)) return 0;
  const tlist *l = (const tlist *)v;
  *dtype = l->dtype;
  *n = l->n;
  *items = l->items;
  *id = l;
  return 1;
}

const sm_kernel sm_kernels_list[] = {
    {"EmptyTensorList", list_prepare, empty_compute, list_state_release, 0},
    {"TensorListReserve", list_prepare, reserve_compute, list_state_release, 0},
    {"TensorListFromTensor", list_prepare, from_tensor_compute, list_state_release, 0},
    {"TensorListScatter", list_prepare, scatter_compute, list_state_release, 0},
    {"TensorListScatterV2", list_prepare, scatter_compute, list_state_release, 0},
    {"TensorListSplit", list_prepare, split_compute, list_state_release, 0},
    {"TensorListLength", list_prepare, length_compute, list_state_release, 0},
    {"TensorListElementShape", list_prepare, element_shape_compute, list_state_release, 0},
    {"TensorListGetItem", list_prepare, get_item_compute, list_state_release, 0},
    {"TensorListStack", list_prepare, stack_compute, list_state_release, 0},
    {"TensorListGather", list_prepare, gather_compute, list_state_release, 0},
    {"TensorListConcat", list_prepare, concat_compute, list_state_release, 0},
    {"TensorListConcatV2", list_prepare, concat_compute, list_state_release, 0},
    {"TensorListSetItem", list_prepare, set_item_compute, list_state_release, 0},
    {"TensorListPushBack", list_prepare, push_back_compute, list_state_release, 0},
    {"TensorListPopBack", list_prepare, pop_back_compute, list_state_release, 0},
    {"TensorListResize", list_prepare, resize_compute, list_state_release, 0},
    {"TensorListScatterIntoExistingList", list_prepare, scatter_existing_compute, list_state_release, 0},
    {NULL, NULL, NULL, NULL, 0},
};
