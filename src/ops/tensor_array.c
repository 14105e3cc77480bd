/* tensor_array.c - the TensorArrayV3 kernel family (TF1's TensorArray, what dynamic_rnn and
 * tf.compat.v1.while_loop carry values in): TensorArrayV3, Write, Read, Gather, Scatter, Concat,
 * Split, Size, Close, with the semantics and messages of tensorflow/core/kernels/tensor_array.h and
 * tensor_array_ops.cc.
 *
 * An array is a mutable object shared by reference: TensorArrayV3 outputs a DT_RESOURCE scalar
 * handle holding a pointer to it (the handle tensor wraps the pointer and drops the array's
 * reference when it goes, so the array lives as long as a value of the run refers to it) and a
 * float "flow" scalar that only orders the ops that use it (each op that changes the array outputs
 * a new flow). Per index: the element (held by reference, never copied on write or read), whether
 * it was written, read and cleared (clear_after_read drops the reference on read, and a second
 * read is TensorFlow's error). element_shape (partial) is checked on every write and, with
 * identical_element_shapes, set by the first. A dynamic_size array grows by writes; growth is
 * bounded by sm__seq_max_elements (kernel.h, shared with TensorLists) and the elements' bytes by
 * SM_MAX_TENSOR_BYTES, and the vector and elements are charged to the run's memory budget
 * (sm_run_options.max_run_bytes, through the array's account: kernel.h sm__kctx_hold) until the
 * array lets them go, so a loop that writes without end is refused instead of eating memory. The
 * ops of one array run in the order their flows give, never at once, so the object has no lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/array_internal.h"
#include "runtime/kernel.h"

#define TA_MAGIC 0x54417633u /* "TAv3" */

typedef struct ta_elem {
  sm_tensor *t; /* NULL: not written, or cleared */
  unsigned char written, read, cleared;
} ta_elem;

typedef struct tarray {
  void *self; /* first: the handle tensor's one element, pointing here */
  unsigned magic;
  int refs; /* handle tensors that point here; one per run step, never shared across threads */
  int dtype;
  int erank; /* element_shape: -1 unknown rank; dims -1 unknown */
  int64_t edims[SM_MAX_RANK];
  int dynamic, clear_after_read, identical, closed;
  int64_t n, cap;
  uint64_t bytes;      /* of the elements held */
  sm_mem_account acct; /* the run's budget: the vector and the elements held (kernel.h) */
  ta_elem *v;
  char name[128];
} tarray;

static void ta_unref(void *p) {
  tarray *a = p;
  if (--a->refs > 0) return;
  for (int64_t i = 0; i < a->n; i++) sm_tensor_free(a->v[i].t);
  sm__mem_close(&a->acct);
  sm__free(a->v);
  sm__free(a);
}

/* The array a handle input points to. */
static sm_status *ta_get(sm_kctx *ctx, tarray **out) {
  const sm_tensor *h = sm__kctx_input(ctx, 0);
  *out = NULL;
  if (!h || sm_tensor_dtype(h) != SM_RESOURCE || sm_tensor_num_elements(h) != 1 || !sm_tensor_data(h))
    return sm_status_new(SM_INVALID_ARGUMENT, "the handle is not a TensorArray handle");
  tarray *a = *(tarray **)sm_tensor_data(h);
  if (!a || a->magic != TA_MAGIC) return sm_status_new(SM_INVALID_ARGUMENT, "the handle is not a TensorArray handle");
  if (a->closed) return sm_status_new(SM_INVALID_ARGUMENT, "TensorArray %s has already been closed.", a->name);
  *out = a;
  return NULL;
}

/* PartialTensorShape::DebugString of rank/dims ("<unknown>", "[2,?]"). */
static const char *pshape_str(int rank, const int64_t *d, char *b, size_t cap) {
  if (rank < 0) return snprintf(b, cap, "<unknown>"), b;
  size_t k = (size_t)snprintf(b, cap, "[");
  for (int i = 0; i < rank && k < cap; i++)
    k += (size_t)(d[i] < 0 ? snprintf(b + k, cap - k, i ? ",?" : "?")
                           : snprintf(b + k, cap - k, i ? ",%lld" : "%lld", (long long)d[i]));
  if (k < cap) snprintf(b + k, cap - k, "]");
  return b;
}

static int fully_defined(int rank, const int64_t *d) {
  if (rank < 0) return 0;
  for (int i = 0; i < rank; i++)
    if (d[i] < 0) return 0;
  return 1;
}

static int int_scalar(const sm_tensor *t, int64_t *v) {
  if (!t || sm_tensor_num_elements(t) != 1 || !sm__array_is_int(sm_tensor_dtype(t))) return 0;
  *v = sm__array_int_at(t, 0);
  return 1;
}

/* Output `i` = a new flow scalar (its value is never read). */
static sm_status *flow_out(sm_kctx *ctx, int i) {
  sm_tensor *f;
  return sm__kctx_alloc_output(ctx, i, SM_FLOAT, 0, NULL, &f);
}

/* Room for index `idx` (growing a dynamic array), the growth of the vector charged to the run's
 * budget. */
static sm_status *ta_reserve(const sm_kctx *ctx, tarray *a, int64_t want) {
  if (want <= a->n) return NULL;
  if (want > sm__seq_max_elements)
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "TensorArray %s: %lld elements are more than the limit of %lld",
                         a->name, (long long)want, (long long)sm__seq_max_elements);
  if (want > a->cap) {
    int64_t nc = a->cap ? a->cap : 8;
    while (nc < want) nc *= 2;
    if (nc > sm__seq_max_elements) nc = sm__seq_max_elements;
    char what[200];
    snprintf(what, sizeof what, "TensorArray %s of %lld elements", a->name, (long long)want);
    size_t bytes = (size_t)(nc - a->cap) * sizeof(ta_elem);
    sm_status *st = sm__kctx_hold(ctx, &a->acct, bytes, what);
    if (st) return st;
    ta_elem *nv = sm__realloc(a->v, (size_t)nc * sizeof *nv);
    if (!nv) {
      sm__mem_give(&a->acct, bytes);
      return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a TensorArray of %lld elements", (long long)nc);
    }
    a->v = nv;
    a->cap = nc;
  }
  memset(a->v + a->n, 0, (size_t)(want - a->n) * sizeof *a->v);
  a->n = want;
  return NULL;
}

/* ---- TensorArrayV3 -------------------------------------------------------------------------- */
typedef struct ta_attrs {
  int dtype, erank, dynamic, clear_after_read, identical;
  int64_t edims[SM_MAX_RANK];
  char name[128];
} ta_attrs;

static sm_status *ta_prepare(const sm_node *node, void **state) {
  ta_attrs *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "TensorArrayV3: out of memory");
  const char *nm = NULL;
  size_t len = 0;
  sm_status *st = sm__node_attr_type(node, "dtype", &s->dtype);
  if (!st) st = sm__node_attr_shape(node, "element_shape", &s->erank, s->edims);
  if (!st) st = sm__node_attr_bool(node, "dynamic_size", &s->dynamic);
  if (!st) st = sm__node_attr_bool(node, "clear_after_read", &s->clear_after_read);
  if (!st) st = sm__node_attr_bool(node, "identical_element_shapes", &s->identical);
  if (!st) st = sm__node_attr_string(node, "tensor_array_name", &nm, &len);
  if (st) {
    free(s);
    return st;
  }
  if (len)
    snprintf(s->name, sizeof s->name, "%.*s", (int)(len < 100 ? len : 100), nm);
  else
    snprintf(s->name, sizeof s->name, "%s", sm__node_name(node));
  *state = s;
  return NULL;
}

static sm_status *ta_compute(const void *state, sm_kctx *ctx) {
  const ta_attrs *s = state;
  int64_t size;
  if (!int_scalar(sm__kctx_input(ctx, 0), &size)) return sm_status_new(SM_INVALID_ARGUMENT, "size must be a scalar");
  if (size < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Size should be >= 0.");
  tarray *a = sm__calloc(sizeof *a);
  if (!a) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a TensorArray");
  a->self = a;
  a->magic = TA_MAGIC;
  a->refs = 1;
  a->dtype = s->dtype;
  a->erank = s->erank;
  memcpy(a->edims, s->edims, sizeof a->edims);
  a->dynamic = s->dynamic;
  a->clear_after_read = s->clear_after_read;
  a->identical = s->identical;
  memcpy(a->name, s->name, sizeof a->name);
  sm_status *st = ta_reserve(ctx, a, size);
  sm_tensor *h = NULL;
  if (!st) st = sm_tensor_wrap(SM_RESOURCE, 0, NULL, &a->self, sizeof a->self, ta_unref, a, &h);
  if (st) {
    ta_unref(a);
    return st;
  }
  sm__kctx_set_output(ctx, 0, h);
  return flow_out(ctx, 1);
}

/* ---- element access --------------------------------------------------------------------------- */
/* TensorArray::LockedWriteOrAggregate without aggregation: takes a reference to t. */
static sm_status *ta_write(const sm_kctx *ctx, tarray *a, int64_t idx, sm_tensor *t) {
  if (idx < 0 || (!a->dynamic && idx >= a->n))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray %s: Tried to write to index %lld but array is not resizeable and size is: %lld",
                         a->name, (long long)idx, (long long)a->n);
  if (sm_tensor_dtype(t) != a->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorArray dtype is %s but Op is trying to write dtype %s.",
                         sm__array_dtype_str(a->dtype), sm__array_dtype_str(sm_tensor_dtype(t)));
  int r = sm_tensor_rank(t);
  const int64_t *d = sm_tensor_dims(t);
  int ok = a->erank < 0 || a->erank == r;
  for (int i = 0; ok && a->erank >= 0 && i < r; i++) ok = a->edims[i] < 0 || a->edims[i] == d[i];
  if (!ok) {
    char x[128], y[128];
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray %s: Could not write to TensorArray index %lld because the value shape is %s "
                         "which is incompatible with the TensorArray's inferred element shape: %s (consider setting "
                         "infer_shape=False).",
                         a->name, (long long)idx, pshape_str(r, d, x, sizeof x),
                         pshape_str(a->erank, a->edims, y, sizeof y));
  }
  uint64_t nb = (uint64_t)sm_tensor_num_elements(t) * (sm__array_esize(a->dtype) ? sm__array_esize(a->dtype) : 16);
  if (a->bytes + nb > SM_MAX_TENSOR_BYTES)
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "TensorArray %s: its elements would take more than %llu bytes", a->name,
                         (unsigned long long)SM_MAX_TENSOR_BYTES);
  sm_status *st = ta_reserve(ctx, a, idx + 1);
  if (st) return st;
  ta_elem *e = &a->v[idx];
  if (e->read)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray %s: Could not write to TensorArray index %lld because it has already been read.",
                         a->name, (long long)idx);
  if (e->written)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray %s: Could not write to TensorArray index %lld because it has already been "
                         "written to.",
                         a->name, (long long)idx);
  if (a->identical && !fully_defined(a->erank, a->edims)) {
    a->erank = r;
    memcpy(a->edims, d, (size_t)r * sizeof *d);
  }
  char what[200];
  snprintf(what, sizeof what, "TensorArray %s element %lld", a->name, (long long)idx);
  if ((st = sm__kctx_hold_tensor(ctx, &a->acct, t, what))) return st;
  e->t = sm_tensor_ref(t);
  e->written = 1;
  a->bytes += nb;
  return NULL;
}

/* TensorArray::LockedRead: *out a new reference (zeros for an unwritten index of a fully known
 * element shape). */
static sm_status *ta_read(tarray *a, int64_t idx, sm_tensor **out) {
  *out = NULL;
  if (idx < 0 || idx >= a->n)
    return sm_status_new(SM_INVALID_ARGUMENT, "Tried to read from index %lld but array size is: %lld", (long long)idx,
                         (long long)a->n);
  ta_elem *e = &a->v[idx];
  if (e->cleared)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray %s: Could not read index %lld twice because it was cleared after a previous read "
                         "(perhaps try setting clear_after_read = false?).",
                         a->name, (long long)idx);
  if (!e->written) {
    if (!fully_defined(a->erank, a->edims)) {
      char b[128];
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "TensorArray %s: Could not read from TensorArray index %lld.  Furthermore, the element "
                           "shape is not fully defined: %s.  It is possible you are working with a resizeable "
                           "TensorArray and stop_gradients is not allowing the gradients to be written.  If you set "
                           "the full element_shape property on the forward TensorArray, the proper all-zeros tensor "
                           "will be returned instead of incurring this error.",
                           a->name, (long long)idx, pshape_str(a->erank, a->edims, b, sizeof b));
    }
    return sm_tensor_new(a->dtype, a->erank, a->edims, out);
  }
  *out = sm_tensor_ref(e->t);
  if (a->clear_after_read) {
    a->bytes -= (uint64_t)sm_tensor_num_elements(e->t) * (sm__array_esize(a->dtype) ? sm__array_esize(a->dtype) : 16);
    sm__mem_give_tensor(&a->acct, e->t);
    sm_tensor_free(e->t);
    e->t = NULL;
    e->cleared = 1;
  }
  e->read = 1;
  return NULL;
}

static sm_status *ta_write_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  int64_t idx;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  if (!int_scalar(sm__kctx_input(ctx, 1), &idx)) return sm_status_new(SM_INVALID_ARGUMENT, "index must be a scalar");
  if ((st = ta_write(ctx, a, idx, (sm_tensor *)sm__kctx_input(ctx, 2)))) return st;
  return flow_out(ctx, 0);
}

static sm_status *ta_read_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  int64_t idx;
  sm_tensor *t;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  if (!int_scalar(sm__kctx_input(ctx, 1), &idx)) return sm_status_new(SM_INVALID_ARGUMENT, "index must be a scalar");
  if ((st = ta_read(a, idx, &t))) return st;
  sm__kctx_set_output(ctx, 0, t);
  return NULL;
}

static sm_status *ta_size_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  sm_tensor *t;
  sm_status *st = ta_get(ctx, &a);
  if (!st) st = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &t);
  if (st) return st;
  *(int32_t *)sm_tensor_data(t) = (int32_t)a->n;
  return NULL;
}

static sm_status *ta_close_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  for (int64_t i = 0; i < a->n; i++) sm_tensor_free(a->v[i].t);
  sm__mem_close(&a->acct);
  a->n = 0;
  a->bytes = 0;
  a->closed = 1;
  return NULL;
}

/* ---- Gather / Concat: many elements into one tensor -------------------------------------------- */
/* The element_shape attr of a Gather ("element_shape") or Concat ("element_shape_except0"). */
typedef struct shape_attr {
  int rank;
  int64_t dims[SM_MAX_RANK];
} shape_attr;

static sm_status *shape_attr_prepare(const sm_node *node, const char *attr, void **state) {
  shape_attr *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_shape(node, attr, &s->rank, s->dims);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}
static sm_status *gather_prepare(const sm_node *node, void **state) {
  return shape_attr_prepare(node, "element_shape", state);
}
static sm_status *concat_prepare(const sm_node *node, void **state) {
  return shape_attr_prepare(node, "element_shape_except0", state);
}

/* Reads the elements at idx[0..n) into a scratch array of new references. */
static sm_status *read_many(sm_kctx *ctx, tarray *a, const int64_t *idx, int64_t n, sm_tensor ***out) {
  sm_status *st = NULL;
  sm_tensor **v = sm__kctx_scratch(ctx, ((size_t)n + 1) * sizeof *v, &st);
  if (!v) return st;
  memset(v, 0, ((size_t)n + 1) * sizeof *v);
  for (int64_t i = 0; i < n && !st; i++) st = ta_read(a, idx[i], &v[i]);
  if (st)
    for (int64_t i = 0; i < n; i++) sm_tensor_free(v[i]);
  *out = st ? NULL : v;
  return st;
}

static void free_many(sm_tensor **v, int64_t n) {
  for (int64_t i = 0; i < n; i++) sm_tensor_free(v[i]);
}

static sm_status *ta_gather_compute(const void *state, sm_kctx *ctx) {
  const shape_attr *es = state;
  tarray *a;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  const sm_tensor *it = sm__kctx_input(ctx, 1);
  int64_t n = sm_tensor_num_elements(it);
  int64_t *idx = sm__kctx_scratch(ctx, ((size_t)n + 1) * sizeof *idx, &st);
  if (!idx) return st;
  for (int64_t i = 0; i < n; i++) idx[i] = sm__array_int_at(it, i);
  int64_t dims[SM_MAX_RANK + 1];
  dims[0] = n;
  if (n == 0) {
    int r = es->rank;
    const int64_t *d = es->dims;
    if (!fully_defined(r, d) && fully_defined(a->erank, a->edims)) {
      r = a->erank;
      d = a->edims;
    }
    if (!fully_defined(r, d)) {
      char b[128];
      return sm_status_new(SM_UNIMPLEMENTED,
                           "TensorArray has size zero, but element shape %s is not fully defined. Currently only "
                           "static shapes are supported when packing zero-size TensorArrays.",
                           pshape_str(r, d, b, sizeof b));
    }
    memcpy(dims + 1, d, (size_t)r * sizeof *d);
    sm_tensor *o;
    return sm__kctx_alloc_output(ctx, 0, a->dtype, r + 1, dims, &o);
  }
  sm_tensor **v;
  if ((st = read_many(ctx, a, idx, n, &v))) return st;
  int r = sm_tensor_rank(v[0]);
  for (int64_t i = 1; i < n && !st; i++)
    if (sm_tensor_rank(v[i]) != r || memcmp(sm_tensor_dims(v[i]), sm_tensor_dims(v[0]), (size_t)r * sizeof(int64_t))) {
      char x[128], y[128];
      st = sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray has inconsistent shapes.  Index 0 has shape: %s but index %lld has shape: %s",
                         pshape_str(r, sm_tensor_dims(v[0]), x, sizeof x), (long long)i,
                         pshape_str(sm_tensor_rank(v[i]), sm_tensor_dims(v[i]), y, sizeof y));
    }
  if (!st && r + 1 > SM_MAX_RANK)
    st = sm_status_new(SM_INVALID_ARGUMENT, "stacked elements would pass rank %d", SM_MAX_RANK);
  sm_tensor *o = NULL;
  if (!st) {
    memcpy(dims + 1, sm_tensor_dims(v[0]), (size_t)r * sizeof(int64_t));
    st = sm__kctx_alloc_output_uninit(ctx, 0, a->dtype, r + 1, dims, &o);
  }
  int64_t per = n ? sm_tensor_num_elements(v[0]) : 0;
  for (int64_t i = 0; i < n && !st; i++) st = sm__array_copy(o, i * per, v[i], 0, per);
  free_many(v, n);
  return st;
}

static sm_status *ta_concat_compute(const void *state, sm_kctx *ctx) {
  const shape_attr *es = state;
  tarray *a;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  int64_t n = a->n, dims[SM_MAX_RANK + 1];
  sm_tensor *o, *lens;
  if ((st = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &n, &lens))) return st;
  if (n == 0) {
    if (!fully_defined(es->rank, es->dims)) {
      char b[128];
      return sm_status_new(SM_UNIMPLEMENTED,
                           "TensorArray has size zero, but element_shape_except0 %s is not fully defined. Currently "
                           "only static shapes are supported when concatenating zero-size TensorArrays.",
                           pshape_str(es->rank, es->dims, b, sizeof b));
    }
    dims[0] = 0;
    memcpy(dims + 1, es->dims, (size_t)es->rank * sizeof *dims);
    return sm__kctx_alloc_output(ctx, 0, a->dtype, es->rank + 1, dims, &o);
  }
  int64_t *idx = sm__kctx_scratch(ctx, (size_t)n * sizeof *idx, &st);
  if (!idx) return st;
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  sm_tensor **v;
  if ((st = read_many(ctx, a, idx, n, &v))) return st;
  int r = sm_tensor_rank(v[0]);
  int64_t total = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    if (sm_tensor_rank(v[i]) == 0) {
      st = sm_status_new(SM_INVALID_ARGUMENT,
                         "Concat saw a scalar shape at index %lld but requires at least vectors.  Did you mean to call "
                         "stack?",
                         (long long)i);
      break;
    }
    if (sm_tensor_rank(v[i]) != r ||
        memcmp(sm_tensor_dims(v[i]) + 1, sm_tensor_dims(v[0]) + 1, (size_t)(r - 1) * sizeof(int64_t))) {
      char x[128], y[128];
      st =
          sm_status_new(SM_INVALID_ARGUMENT,
                        "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: %s but index "
                        "%lld has (excepting dimension 0) shape: %s",
                        pshape_str(r - 1, sm_tensor_dims(v[0]) + 1, x, sizeof x), (long long)i,
                        pshape_str(sm_tensor_rank(v[i]) - 1, sm_tensor_dims(v[i]) + 1, y, sizeof y));
      break;
    }
    ((int64_t *)sm_tensor_data(lens))[i] = sm_tensor_dims(v[i])[0];
    total += sm_tensor_dims(v[i])[0];
  }
  if (!st) {
    memcpy(dims, sm_tensor_dims(v[0]), (size_t)r * sizeof *dims);
    dims[0] = total;
    st = sm__kctx_alloc_output_uninit(ctx, 0, a->dtype, r, dims, &o);
  }
  for (int64_t i = 0, off = 0; i < n && !st; i++) {
    st = sm__array_copy(o, off, v[i], 0, sm_tensor_num_elements(v[i]));
    off += sm_tensor_num_elements(v[i]);
  }
  free_many(v, n);
  return st;
}

/* ---- Scatter / Split: one tensor into many elements -------------------------------------------- */
/* Element = rows [row0, row0 + nrows) of value (dim 0 dropped when drop0), written at idx. */
static sm_status *write_rows(const sm_kctx *ctx, tarray *a, int64_t idx, const sm_tensor *value, int64_t row0,
                             int64_t nrows, int drop0) {
  int r = sm_tensor_rank(value);
  int64_t dims[SM_MAX_RANK], per = 1;
  memcpy(dims, sm_tensor_dims(value), (size_t)r * sizeof *dims);
  for (int i = 1; i < r; i++) per *= dims[i];
  dims[0] = nrows;
  sm_tensor *t;
  sm_status *st = drop0 ? sm_tensor_new(sm_tensor_dtype(value), r - 1, dims + 1, &t)
                        : sm_tensor_new(sm_tensor_dtype(value), r, dims, &t);
  if (st) return st;
  st = sm__array_copy(t, 0, value, row0 * per, nrows * per);
  if (!st) st = ta_write(ctx, a, idx, t);
  sm_tensor_free(t);
  return st;
}

static sm_status *ta_scatter_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  const sm_tensor *it = sm__kctx_input(ctx, 1), *value = sm__kctx_input(ctx, 2);
  int64_t n = sm_tensor_num_elements(it);
  if (sm_tensor_rank(value) < 1 || sm_tensor_dims(value)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected len(indices) == values.shape[0], but saw: %lld vs. %lld",
                         (long long)n, (long long)(sm_tensor_rank(value) ? sm_tensor_dims(value)[0] : 0));
  int64_t mx = -1;
  for (int64_t i = 0; i < n; i++)
    if (sm__array_int_at(it, i) > mx) mx = sm__array_int_at(it, i);
  if (!a->dynamic && mx >= a->n)
    return sm_status_new(SM_INVALID_ARGUMENT, "Max scatter index must be < array size (%lld vs. %lld)", (long long)mx,
                         (long long)a->n);
  for (int64_t i = 0; i < n && !st; i++) st = write_rows(ctx, a, sm__array_int_at(it, i), value, i, 1, 1);
  return st ? st : flow_out(ctx, 0);
}

static sm_status *ta_split_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tarray *a;
  sm_status *st = ta_get(ctx, &a);
  if (st) return st;
  const sm_tensor *value = sm__kctx_input(ctx, 1), *lens = sm__kctx_input(ctx, 2);
  char b[128];
  if (sm_tensor_rank(value) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected value to be at least a vector, but received shape: %s",
                         pshape_str(sm_tensor_rank(value), sm_tensor_dims(value), b, sizeof b));
  if (sm_tensor_rank(lens) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected lengths to be a vector, received shape: %s",
                         pshape_str(sm_tensor_rank(lens), sm_tensor_dims(lens), b, sizeof b));
  int64_t n = sm_tensor_num_elements(lens), sum = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t l = sm__array_int_at(lens, i);
    if (l < 0 || sum > INT64_MAX - l)
      return sm_status_new(SM_INVALID_ARGUMENT, "lengths[%lld] is %lld", (long long)i, (long long)l);
    sum += l;
  }
  if (sum != sm_tensor_dims(value)[0])
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is %lld and "
                         "value's shape is: %s",
                         (long long)sum, pshape_str(sm_tensor_rank(value), sm_tensor_dims(value), b, sizeof b));
  if (!a->dynamic && n != a->n)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "TensorArray's size is not equal to the size of lengths (%lld vs. %lld), and the "
                         "TensorArray is not marked as dynamically resizeable",
                         (long long)a->n, (long long)n);
  for (int64_t i = 0, row = 0; i < n && !st; i++) {
    int64_t l = sm__array_int_at(lens, i);
    st = write_rows(ctx, a, i, value, row, l, 0);
    row += l;
  }
  return st ? st : flow_out(ctx, 0);
}

const sm_kernel sm_kernels_tensor_array[] = {
    {"TensorArrayV3", ta_prepare, ta_compute, free, 0},
    {"TensorArrayWriteV3", NULL, ta_write_compute, NULL, 0},
    {"TensorArrayReadV3", NULL, ta_read_compute, NULL, 0},
    {"TensorArrayGatherV3", gather_prepare, ta_gather_compute, free, 0},
    {"TensorArrayScatterV3", NULL, ta_scatter_compute, NULL, 0},
    {"TensorArrayConcatV3", concat_prepare, ta_concat_compute, free, 0},
    {"TensorArraySplitV3", NULL, ta_split_compute, NULL, 0},
    {"TensorArraySizeV3", NULL, ta_size_compute, NULL, 0},
    {"TensorArrayCloseV3", NULL, ta_close_compute, NULL, 0},
    {0},
};
