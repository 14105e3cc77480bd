/* barrier.c - TF1's barriers (tf.compat.v1 data_flow_ops.Barrier): Barrier, BarrierInsertMany,
 * BarrierTakeMany, BarrierClose, BarrierReadySize, BarrierIncompleteSize.
 *
 * As TF's barrier_ops.cc: a barrier is an object of the model's resources (resource.h, kind
 * SM_RES_BARRIER) keyed by (container, shared_name) (sm__state_names), its handle (TF's string ref
 * [2]) a DT_RESOURCE scalar here, as queue.c's V1 handles. It holds incomplete tuples by string key
 * and a ready queue. An InsertMany fills one component of each of its keys; a key first seen gets the
 * barrier's insertion index (INT64_MIN first, one more after each InsertMany that brought a new key);
 * a tuple whose components are all set moves to the ready queue, a priority queue on that index which
 * pops in libstdc++'s std::priority_queue order (ties as TF's heap leaves them). TakeMany waits until
 * num_elements tuples are ready (with the run's deadline / cancel flag: sm__state_wait) and returns
 * (indices, keys, values...) stacked. Close as TF's: later inserts may only complete existing keys
 * (none with cancel_pending_enqueues, which drops the incomplete ones); takes past what can come
 * fail OutOfRange. TF's quirks kept: wait_for_incomplete is ignored, timeout_ms other than -1 and
 * capacity other than -1 are refused, the ready queue stays open once a Close left incomplete keys.
 * Differences: a TakeMany takes nothing until all it asked for is ready (TF's moves tuples out as they
 * come and loses them on cancellation); a negative num_elements or too few value rows is an error
 * (TF waits forever / reads past the values). Tuples are copies charged to the inserting run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_internal.h"
#include "ops/state_internal.h"
#include "runtime/kernel.h"

#define BARRIER_MAGIC 0x42415252u
#define BMAXC 64

typedef struct btuple {
  int64_t index;
  char *key;
  size_t klen;
  sm_tensor **c; /* ncomp slots, NULL: not set yet */
} btuple;

typedef struct barrier {
  uint32_t magic;
  char *name;
  int ncomp;
  int dtypes[BMAXC], rank[BMAXC];
  int64_t dims[BMAXC][SM_MAX_RANK];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int closed, cancel_pending, queue_closed;
  int64_t input_index;
  btuple *inc; /* incomplete, sorted by key */
  size_t ninc, capinc;
  btuple *ready; /* a binary heap as libstdc++'s (smallest index on top) */
  size_t nready, capready;
  sm_mem_account acct;
} barrier;

typedef struct bspec {
  sm__state_key key; /* first: sm__state_spec_release */
  int ncomp;
  int dtypes[BMAXC], rank[BMAXC];
  int64_t dims[BMAXC][SM_MAX_RANK];
  char err[160]; /* TF's kernel-construction error, given at run time */
  int64_t component_index;
  int allow_small;
} bspec;

/* ---- the object ------------------------------------------------------------------------------ */

static void tuple_free(barrier *b, btuple *t) {
  for (int i = 0; t->c && i < b->ncomp; i++)
    if (t->c[i]) {
      sm__mem_give_tensor(&b->acct, t->c[i]);
      sm_tensor_free(t->c[i]);
    }
  free(t->c);
  free(t->key);
  t->c = NULL;
  t->key = NULL;
}

static void barrier_destroy(void *obj) {
  barrier *b = obj;
  if (!b) return;
  for (size_t i = 0; i < b->ninc; i++) tuple_free(b, &b->inc[i]);
  for (size_t i = 0; i < b->nready; i++) tuple_free(b, &b->ready[i]);
  free(b->inc);
  free(b->ready);
  sm__mem_close(&b->acct);
  sm__state_free(b, b->name, &b->mu, &b->cv);
}

static sm_status *barrier_make(void *arg, const char *dname, void **obj) {
  const bspec *sp = arg;
  barrier *b = sm__state_alloc(sizeof *b, BARRIER_MAGIC, offsetof(barrier, name), sp->key.name);
  if (!b) return sm_status_new(SM_NO_MEMORY, "barrier '%s': out of memory", dname);
  b->ncomp = sp->ncomp;
  memcpy(b->dtypes, sp->dtypes, sizeof b->dtypes);
  memcpy(b->rank, sp->rank, sizeof b->rank);
  memcpy(b->dims, sp->dims, sizeof b->dims);
  b->input_index = INT64_MIN;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  *obj = b;
  return NULL;
}

/* Every op: container/shared_name; Barrier: its types, shapes, capacity; the users: their attrs. */
static sm_status *barrier_prepare(const sm_node *node, void **state) {
  bspec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  sm_status *s = NULL;
  if (!strcmp(op, "Barrier")) {
    const int *types = NULL;
    size_t nt = 0;
    s = sm__node_attr_types(node, "component_types", &types, &nt);
    if (!s && (nt > BMAXC || !nt))
      s = sm_status_new(SM_INVALID_ARGUMENT, "Barrier: %zu component types (1 to %d here)", nt, BMAXC);
    const Tensorflow__AttrValue *sh = sm__node_attr(node, "shapes");
    size_t ns = sh && sh->list ? sh->list->n_shape : 0;
    int64_t cap = -1;
    if (!s && sm__node_attr(node, "capacity")) s = sm__node_attr_int(node, "capacity", &cap);
    if (!s && ns != nt) {
      snprintf(sp->err, sizeof sp->err, "All of the component shapes must be specified");
    } else if (!s && cap != -1) {
      snprintf(sp->err, sizeof sp->err,
               "Barrier only accepts capacity=-1.  Feed the inputs to your Barrier through a queue to enforce a "
               "limited capacity.");
    }
    for (size_t i = 0; !s && !sp->err[0] && i < ns; i++) {
      const Tensorflow__TensorShapeProto *tp = sh->list->shape[i];
      if (tp->unknown_rank || tp->n_dim > SM_MAX_RANK) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "Barrier: component %zu's shape is unknown or too large", i);
        break;
      }
      sp->rank[i] = (int)tp->n_dim;
      for (size_t d = 0; d < tp->n_dim; d++) {
        sp->dims[i][d] = tp->dim[d]->size;
        if (tp->dim[d]->size < 0)
          s = sm_status_new(SM_INVALID_ARGUMENT, "Barrier: component %zu's shape is not fully defined", i);
      }
    }
    if (!s) {
      sp->ncomp = (int)nt;
      if (nt) memcpy(sp->dtypes, types, nt * sizeof(int));
    }
  }
  if (!s && !strcmp(op, "BarrierInsertMany")) s = sm__node_attr_int(node, "component_index", &sp->component_index);
  if (!s && !strcmp(op, "BarrierTakeMany")) {
    int64_t timeout = -1;
    if (sm__node_attr(node, "timeout_ms")) s = sm__node_attr_int(node, "timeout_ms", &timeout);
    if (!s && sm__node_attr(node, "allow_small_batch")) s = sm__node_attr_bool(node, "allow_small_batch", &sp->allow_small);
    if (!s && timeout != -1) snprintf(sp->err, sizeof sp->err, "Timeout not supported yet.");
  }
  if (!s) s = sm__state_names(node, &sp->key.container, &sp->key.name);
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static void shapes_str(const int *rank, int64_t (*dims)[SM_MAX_RANK], int n, char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && at < cap; i++) {
    char one[96];
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", sm_shape_str(rank[i], dims[i], one, sizeof one));
  }
  if (at < cap) snprintf(buf + at, cap - at, "]");
}

static void types_str(const int *t, int n, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", sm__array_dtype_str(t[i]));
}

static sm_status *handle_compute(const void *state, sm_kctx *ctx) {
  bspec *sp = (bspec *)state;
  if (sp->err[0]) return sm_status_new(SM_INVALID_ARGUMENT, "%s", sp->err);
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_BARRIER, &sp->key, barrier_make, sp, barrier_destroy, &obj);
  if (s) return s;
  barrier *b = obj;
  char have[512], want[512];
  if (b->ncomp != sp->ncomp || memcmp(b->dtypes, sp->dtypes, sizeof b->dtypes)) {
    types_str(b->dtypes, b->ncomp, have, sizeof have);
    types_str(sp->dtypes, sp->ncomp, want, sizeof want);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Shared barrier '%s' has component types %s but requested component types were %s", b->name,
                         have, want);
  }
  if (memcmp(b->rank, sp->rank, sizeof b->rank) || memcmp(b->dims, sp->dims, sizeof b->dims)) {
    shapes_str(b->rank, b->dims, b->ncomp, have, sizeof have);
    shapes_str(sp->rank, sp->dims, sp->ncomp, want, sizeof want);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Shared barrier '%s' has component shapes %s but requested component shapes were %s", b->name,
                         have, want);
  }
  return sm__state_output(ctx, b);
}

static sm_status *input_barrier(sm_kctx *ctx, barrier **out) {
  void *o;
  sm_status *s = sm__state_of(sm__kctx_input(ctx, 0), BARRIER_MAGIC, sm__node_op(sm__kctx_node(ctx)), "a barrier", &o);
  *out = o;
  return s;
}

/* ---- the ready queue: libstdc++'s push_heap / pop_heap with TF's comparator (a.index > b.index) */

static int later(const btuple *a, const btuple *b) { return a->index > b->index; }

static void heap_sift_up(btuple *h, size_t hole, size_t top, btuple v) {
  while (hole > top) {
    size_t parent = (hole - 1) / 2;
    if (!later(&h[parent], &v)) break;
    h[hole] = h[parent];
    hole = parent;
  }
  h[hole] = v;
}

static sm_status *heap_push(barrier *b, btuple v) {
  if (b->nready == b->capready) {
    size_t nc = b->capready ? b->capready * 2 : 8;
    btuple *n = realloc(b->ready, nc * sizeof *n);
    if (!n) return sm_status_new(SM_NO_MEMORY, "BarrierInsertMany: out of memory");
    b->ready = n;
    b->capready = nc;
  }
  heap_sift_up(b->ready, b->nready++, 0, v);
  return NULL;
}

static btuple heap_pop(barrier *b) {
  btuple *h = b->ready, top = h[0];
  size_t len = --b->nready;
  btuple v = h[len];
  h[len] = top;
  if (!len) return top;
  size_t hole = 0, child = 0; /* __adjust_heap(h, 0, len, v) */
  while (len > 2 && child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (later(&h[child], &h[child - 1])) child--;
    h[hole] = h[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    h[hole] = h[child - 1];
    hole = child - 1;
  }
  heap_sift_up(h, hole, 0, v);
  return top;
}

/* ---- InsertMany ------------------------------------------------------------------------------- */

static size_t key_lower(const barrier *b, const char *k, size_t kl, int *found) {
  size_t lo = 0, hi = b->ninc;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    const btuple *e = &b->inc[m];
    size_t n = e->klen < kl ? e->klen : kl;
    int c = memcmp(e->key, k, n);
    if (!c) c = e->klen < kl ? -1 : e->klen > kl;
    if (c < 0)
      lo = m + 1;
    else
      hi = m;
  }
  *found = lo < b->ninc && b->inc[lo].klen == kl && !memcmp(b->inc[lo].key, k, kl);
  return lo;
}

/* Key i's value: row i of values (values' shape less its first dim) as a new tensor held by b. */
static sm_status *value_row(barrier *b, sm_kctx *ctx, const sm_tensor *values, int64_t i, sm_tensor **out) {
  int rank = sm_tensor_rank(values);
  const int64_t *dims = sm_tensor_dims(values);
  int er = rank ? rank - 1 : 0;
  int64_t n = 1;
  for (int d = 0; d < er; d++) n *= dims[d + 1];
  sm_status *s = sm_tensor_new(sm_tensor_dtype(values), er, rank ? dims + 1 : NULL, out);
  if (!s) s = sm__array_copy(*out, 0, values, i * n, n);
  if (!s) s = sm__kctx_hold_tensor(ctx, &b->acct, *out, "a barrier's value");
  if (s) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return s;
}

static sm_status *insert_compute(const void *state, sm_kctx *ctx) {
  const bspec *sp = state;
  barrier *b;
  sm_status *s = input_barrier(ctx, &b);
  if (s) return s;
  int64_t ci = sp->component_index;
  if (ci >= b->ncomp || ci < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "The component ID is out of range %lld > num_components (= %d)",
                         (long long)ci, b->ncomp);
  const sm_tensor *keys = sm__kctx_input(ctx, 1), *values = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(values) != b->dtypes[ci]) {
    char want[512];
    types_str(b->dtypes, b->ncomp, want, sizeof want);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Signature mismatch, have: string_ref, string, %s-> expected: string_ref, string, %s->",
                         sm__array_dtype_str(sm_tensor_dtype(values)), sm__array_dtype_str(b->dtypes[ci]));
  }
  if (sm_tensor_dtype(keys) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "BarrierInsertMany: keys must be strings");
  int64_t nk = sm_tensor_num_elements(keys);
  char shp[128];
  if (nk && !sm_tensor_num_elements(values))
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensors with no elements are not supported %s: received shape %s",
                         b->name, sm__array_shape_str(values, shp, sizeof shp));
  int64_t rows = sm_tensor_rank(values) ? sm_tensor_dims(values)[0] : 1;
  if (rows < nk)
    return sm_status_new(SM_INVALID_ARGUMENT, "BarrierInsertMany: %lld keys but values has %lld rows", (long long)nk,
                         (long long)rows);
  pthread_mutex_lock(&b->mu);
  if (b->closed && (b->cancel_pending || (nk && !b->ninc))) {
    s = sm_status_new(SM_CANCELLED,
                      "Barrier %s is closed.  Pending enqueues cancelled: %d.  Number of new insertions: %lld.  "
                      "Number of incomplete keys: %zu.",
                      b->name, b->cancel_pending, (long long)nk, b->ninc);
    pthread_mutex_unlock(&b->mu);
    return s;
  }
  int fresh = 0;
  btuple *done = nk ? calloc((size_t)nk, sizeof *done) : NULL;
  size_t ndone = 0;
  if (nk && !done) s = sm_status_new(SM_NO_MEMORY, "BarrierInsertMany: out of memory");
  for (int64_t i = 0; !s && i < nk; i++) {
    size_t kl = 0;
    const char *k = sm_tensor_string(keys, i, &kl);
    int found;
    size_t at = key_lower(b, k, kl, &found);
    if (!found && b->closed) {
      s = sm_status_new(SM_CANCELLED,
                        "Barrier %s is closed, but attempted to insert a brand new key: %.*s.  Pending enqueues "
                        "cancelled: %d.  Insertion index: %lld.  Number of incomplete keys: %zu.",
                        b->name, (int)kl, k, b->cancel_pending, (long long)i, b->ninc);
      break;
    }
    if (!found) {
      btuple e = {b->input_index, malloc(kl + 1), kl, calloc((size_t)b->ncomp, sizeof(sm_tensor *))};
      if (b->ninc == b->capinc) {
        size_t nc = b->capinc ? b->capinc * 2 : 8;
        btuple *ni = realloc(b->inc, nc * sizeof *ni);
        if (ni) b->inc = ni, b->capinc = nc;
      }
      if (!e.key || !e.c || b->ninc == b->capinc) {
        free(e.key);
        free(e.c);
        s = sm_status_new(SM_NO_MEMORY, "BarrierInsertMany: out of memory");
        break;
      }
      memcpy(e.key, k, kl);
      e.key[kl] = 0;
      memmove(b->inc + at + 1, b->inc + at, (b->ninc - at) * sizeof *b->inc);
      b->inc[at] = e;
      b->ninc++;
      fresh = 1;
    }
    btuple *e = &b->inc[at];
    if (e->c[ci]) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Key %.*s already has a value for component %lld in barrier %s", (int)kl,
                        k, (long long)ci, b->name);
      break;
    }
    if ((s = value_row(b, ctx, values, i, &e->c[ci]))) break;
    int full = 1;
    for (int j = 0; j < b->ncomp; j++) full &= e->c[j] != NULL;
    if (!full) continue;
    btuple t = *e;
    memmove(b->inc + at, b->inc + at + 1, (b->ninc - at - 1) * sizeof *b->inc);
    b->ninc--;
    for (int j = 0; j < b->ncomp && !s; j++) { /* TF's ValidateTuple on the completed tuple */
      const sm_tensor *c = t.c[j];
      if (sm_tensor_rank(c) == b->rank[j] && !memcmp(sm_tensor_dims(c), b->dims[j], (size_t)b->rank[j] * sizeof(int64_t)))
        continue;
      char want[96];
      s = sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch in tuple component %d. Expected %s, got %s", j + 2,
                        sm_shape_str(b->rank[j], b->dims[j], want, sizeof want), sm__array_shape_str(c, shp, sizeof shp));
    }
    if (s) {
      tuple_free(b, &t);
      break;
    }
    done[ndone++] = t;
  }
  if (!s) {
    if (fresh) b->input_index++;
    for (size_t i = 0; !s && i < ndone; i++)
      if (!(s = heap_push(b, done[i]))) done[i].c = NULL;
    if (ndone) pthread_cond_broadcast(&b->cv);
  }
  for (size_t i = 0; i < ndone; i++)
    if (done[i].c) tuple_free(b, &done[i]);
  free(done);
  pthread_mutex_unlock(&b->mu);
  return s;
}

/* ---- TakeMany, Close, sizes ------------------------------------------------------------------- */

static sm_status *take_compute(const void *state, sm_kctx *ctx) {
  const bspec *sp = state;
  if (sp->err[0]) return sm_status_new(SM_INVALID_ARGUMENT, "%s", sp->err);
  barrier *b;
  sm_status *s = input_barrier(ctx, &b);
  if (s) return s;
  const sm_tensor *nt = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(nt) != 0 || sm_tensor_dtype(nt) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "num_elements must be a scalar.");
  int64_t num = ((const int32_t *)sm_tensor_data(nt))[0];
  if (sm__kctx_num_outputs(ctx) != 2 + b->ncomp)
    return sm_status_new(SM_INVALID_ARGUMENT, "BarrierTakeMany: %d outputs for a barrier of %d components",
                         sm__kctx_num_outputs(ctx), b->ncomp);
  for (int i = 0; i < b->ncomp; i++)
    if (sm__node_output_dtype(sm__kctx_node(ctx), 2 + i) != b->dtypes[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "BarrierTakeMany: output %d's type is not the barrier's %s", 2 + i,
                           sm__array_dtype_str(b->dtypes[i]));
  pthread_mutex_lock(&b->mu);
  int64_t deliver = num;
  if (b->closed) {
    int64_t avail = (int64_t)b->nready;
    if (sp->allow_small)
      deliver = num < avail ? num : avail;
    else
      avail += (int64_t)b->ninc;
    if (avail < (deliver > 1 ? deliver : 1))
      s = sm_status_new(SM_OUT_OF_RANGE, "Barrier '%s' is closed and has insufficient elements (requested %lld, total size %lld)",
                        b->name, (long long)deliver, (long long)avail);
  }
  if (!s && deliver < 0)
    s = sm_status_new(SM_INVALID_ARGUMENT, "BarrierTakeMany: num_elements %lld is negative", (long long)deliver);
  while (!s && (int64_t)b->nready < deliver) {
    if (b->queue_closed) {
      if (sp->allow_small && b->nready) {
        deliver = (int64_t)b->nready;
        break;
      }
      s = sm_status_new(SM_OUT_OF_RANGE,
                        "PriorityQueue '%s_queue' is closed and has insufficient elements (requested %lld, current size %zu)",
                        b->name, (long long)deliver, b->nready);
      break;
    }
    s = sm__state_wait(&b->cv, &b->mu, ctx);
  }
  btuple *got = NULL;
  if (!s && deliver && !(got = calloc((size_t)deliver, sizeof *got)))
    s = sm_status_new(SM_NO_MEMORY, "BarrierTakeMany: out of memory");
  for (int64_t i = 0; !s && i < deliver; i++) {
    got[i] = heap_pop(b);
    for (int j = 0; j < b->ncomp; j++) sm__mem_give_tensor(&b->acct, got[i].c[j]);
  }
  pthread_mutex_unlock(&b->mu);
  if (s) return s;
  sm_tensor *ix, *ks;
  s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, &deliver, &ix);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_STRING, 1, &deliver, &ks);
  for (int64_t i = 0; !s && i < deliver; i++) {
    ((int64_t *)sm_tensor_data(ix))[i] = got[i].index;
    s = sm_tensor_set_string(ks, i, got[i].key, got[i].klen);
  }
  for (int j = 0; !s && j < b->ncomp; j++) {
    int64_t dims[SM_MAX_RANK + 1] = {deliver};
    if (b->rank[j] >= SM_MAX_RANK) {
      s = sm_status_new(SM_UNIMPLEMENTED, "BarrierTakeMany: component %d's rank is too large to stack", j);
      break;
    }
    memcpy(dims + 1, b->dims[j], (size_t)b->rank[j] * sizeof(int64_t));
    sm_tensor *o;
    int64_t n = 1;
    for (int d = 0; d < b->rank[j]; d++) n *= b->dims[j][d];
    s = sm__kctx_alloc_output(ctx, 2 + j, b->dtypes[j], b->rank[j] + 1, dims, &o);
    for (int64_t i = 0; !s && i < deliver; i++) s = sm__array_copy(o, i * n, got[i].c[j], 0, n);
  }
  for (int64_t i = 0; i < deliver; i++) {
    for (int j = 0; j < b->ncomp; j++) sm_tensor_free(got[i].c[j]);
    free(got[i].c);
    free(got[i].key);
  }
  free(got);
  return s;
}

static sm_status *close_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  barrier *b;
  sm_status *s = input_barrier(ctx, &b);
  if (s) return s;
  int cancel = 0;
  const sm_node *node = sm__kctx_node(ctx);
  if (sm__node_attr(node, "cancel_pending_enqueues") && (s = sm__node_attr_bool(node, "cancel_pending_enqueues", &cancel)))
    return s;
  pthread_mutex_lock(&b->mu);
  if (b->closed && (b->cancel_pending || !cancel)) {
    s = sm_status_new(SM_CANCELLED, "Barrier '%s' is already closed.", b->name);
  } else {
    b->cancel_pending = cancel;
    b->closed = 1;
    if (cancel || !b->ninc) {
      for (size_t i = 0; i < b->ninc; i++) tuple_free(b, &b->inc[i]);
      b->ninc = 0;
      b->queue_closed = 1;
    }
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return s;
}

static sm_status *size_common(sm_kctx *ctx, int incomplete) {
  barrier *b;
  sm_tensor *out;
  sm_status *s = input_barrier(ctx, &b);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out);
  if (s) return s;
  pthread_mutex_lock(&b->mu);
  ((int32_t *)sm_tensor_data(out))[0] = (int32_t)(incomplete ? b->ninc : b->nready);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}
static sm_status *ready_compute(const void *st, sm_kctx *ctx) {
  (void)st;
  return size_common(ctx, 0);
}
static sm_status *incomplete_compute(const void *st, sm_kctx *ctx) {
  (void)st;
  return size_common(ctx, 1);
}

#define BK(name, comp) {name, barrier_prepare, comp, sm__state_spec_release, 0}
const sm_kernel sm_kernels_barrier[] = {
    BK("Barrier", handle_compute),
    BK("BarrierInsertMany", insert_compute),
    BK("BarrierTakeMany", take_compute),
    BK("BarrierClose", close_compute),
    BK("BarrierReadySize", ready_compute),
    BK("BarrierIncompleteSize", incomplete_compute),
    {NULL, NULL, NULL, NULL, 0},
};
