/* queue.c - TF1's queues: FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, PriorityQueue (V2 resource
 * handles and the V1 ref-string forms), FakeQueue, and what uses them: QueueEnqueue(Many),
 * QueueDequeue(Many/UpTo), QueueClose, QueueSize, QueueIsClosed.
 *
 * A queue is an object of the model's resources (resource.h: sm__resources_object, kind
 * SM_RES_QUEUE) keyed by (container, shared_name) as TF keys it; one with no shared_name belongs to
 * its node (TF gives each kernel its own). Every run of the loaded model sees the same queue, so one
 * signature call enqueues and a later one dequeues. A mutex and a condition variable guard it:
 * concurrent runs enqueue and dequeue. A dequeue on a queue with too few elements waits, as TF's
 * does, until enough arrive, the queue is closed (then TF's OutOfRange error: "... is closed and has
 * insufficient elements"), or the run's deadline or cancel flag ends it (checked every 10 ms); an
 * enqueue on a full queue waits likewise for room. Elements are copies of what was enqueued, held
 * in the queue's memory account and charged to the run that enqueues them (SM_RESOURCE_EXHAUSTED past
 * its budget). RandomShuffleQueue draws as TF's: Philox(seed, seed2) through SingleSampleAdapter,
 * index = draw % size, the last element moved into the hole; PriorityQueue dequeues the smallest
 * int64 priority first (ties in enqueue order). sm__queue_dequeue_work (ops/queue.h) is how TF1's
 * readers (reader.c) take their work units. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_internal.h"
#include "philox.h"
#include "ops/queue.h"
#include "runtime/kernel.h"
#include "state_internal.h"

enum { Q_FIFO, Q_PAD, Q_SHUFFLE, Q_PRIO };
enum { QMAXC = 64 };
#define QUEUE_MAGIC 0x51554555u

static const char *const qtype_name[] = {"FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue"};

typedef struct qelem {
  int64_t prio;
  uint64_t seq;
  sm_tensor *c[]; /* ncomp components */
} qelem;

typedef struct queue {
  uint32_t magic;
  int type;
  char *name;
  int ncomp; /* with a priority queue's leading int64 */
  int dtypes[QMAXC];
  int shaped; /* shapes given for every component */
  int rank[QMAXC];
  int64_t dims[QMAXC][SM_MAX_RANK];
  int64_t capacity; /* < 0: unbounded */
  int64_t min_after;
  philox parent;
  single gen;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  qelem **items; /* FIFO: a ring from head; shuffle: an array; priority: a binary heap */
  size_t head, n, cap;
  uint64_t seq;
  int closed;
  sm_mem_account acct;
} queue;

/* ---- the object ------------------------------------------------------------------------------ */

static void elem_free(const queue *q, qelem *e) {
  if (!e) return;
  for (int i = 0; i < q->ncomp; i++) sm_tensor_free(e->c[i]);
  free(e);
}

static qelem *item_at(const queue *q, size_t i) { return q->items[q->type == Q_FIFO || q->type == Q_PAD ? (q->head + i) % q->cap : i]; }

static void queue_destroy(void *obj) {
  queue *q = obj;
  if (!q) return;
  for (size_t i = 0; i < q->n; i++) elem_free(q, item_at(q, i));
  free(q->items);
  sm__mem_close(&q->acct);
  sm__state_free(q, q->name, &q->mu, &q->cv);
}

typedef struct qspec {
  sm__state_key key; /* first: sm__state_spec_release */
  int type;
  int ncomp;
  int dtypes[QMAXC];
  int shaped;
  int rank[QMAXC];
  int64_t dims[QMAXC][SM_MAX_RANK];
  int64_t capacity, min_after, seed, seed2;
} qspec;

static sm_status *queue_make(void *arg, const char *dname, void **obj) {
  const qspec *sp = arg;
  queue *q = sm__state_alloc(sizeof *q, QUEUE_MAGIC, offsetof(queue, name), dname);
  if (!q) return sm_status_new(SM_NO_MEMORY, "%s '%s': out of memory", qtype_name[sp->type], dname);
  q->type = sp->type;
  q->ncomp = sp->ncomp;
  memcpy(q->dtypes, sp->dtypes, sizeof q->dtypes);
  q->shaped = sp->shaped;
  memcpy(q->rank, sp->rank, sizeof q->rank);
  memcpy(q->dims, sp->dims, sizeof q->dims);
  q->capacity = sp->capacity;
  q->min_after = sp->min_after;
  uint64_t s1 = (uint64_t)sp->seed, s2 = (uint64_t)sp->seed2;
  if (!s1 && !s2) { /* TF seeds from the clock; here from the address and the time */
    s1 = (uint64_t)(uintptr_t)q ^ (uint64_t)time(NULL);
    s2 = s1 * 0x9E3779B97F4A7C15ull + 1;
  }
  q->parent = philox_seeded(s1, s2);
  q->gen.g = &q->parent;
  q->gen.used = 4;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  *obj = q;
  return NULL;
}

/* ---- the handle ops: FIFOQueue(V2), PaddingFIFOQueue(V2), RandomShuffleQueue(V2), PriorityQueue(V2) */

static sm_status *queue_prepare(const sm_node *node, void **state, int type) {
  qspec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sp->type = type;
  const int *types = NULL;
  size_t nt = 0;
  sm_status *s = sm__node_attr_types(node, "component_types", &types, &nt);
  int off = type == Q_PRIO;
  if (!s && nt + (size_t)off > QMAXC) s = sm_status_new(SM_UNIMPLEMENTED, "%s: more than %d components", qtype_name[type], QMAXC);
  if (!s && !nt && !off) s = sm_status_new(SM_INVALID_ARGUMENT, "%s: component_types is empty", qtype_name[type]);
  if (!s) {
    sp->ncomp = (int)nt + off;
    if (off) sp->dtypes[0] = SM_INT64;
    for (size_t i = 0; i < nt; i++) sp->dtypes[i + off] = types[i];
    const Tensorflow__AttrValue *sh = sm__node_attr(node, "shapes");
    size_t ns = sh && sh->list ? sh->list->n_shape : 0;
    if (ns && ns != nt)
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: %zu shapes for %zu component types", qtype_name[type], ns, nt);
    else if (!ns && type == Q_PRIO && nt)
      s = sm_status_new(SM_INVALID_ARGUMENT, "PriorityQueue needs the shapes of its components");
    sp->shaped = ns > 0 || (type == Q_PRIO && !nt);
    if (off) sp->rank[0] = 0;
    for (size_t i = 0; !s && i < ns; i++) {
      const Tensorflow__TensorShapeProto *tp = sh->list->shape[i];
      if (tp->unknown_rank || tp->n_dim > SM_MAX_RANK) {
        s = sm_status_new(SM_UNIMPLEMENTED, "%s: component %zu has an unknown or too large rank", qtype_name[type], i);
        break;
      }
      sp->rank[i + off] = (int)tp->n_dim;
      for (size_t d = 0; !s && d < tp->n_dim; d++) {
        int64_t v = tp->dim[d]->size;
        if (v < 0 && type != Q_PAD)
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: component %zu's shape is not fully defined", qtype_name[type], i);
        sp->dims[i + off][d] = v;
      }
    }
    if (type == Q_PAD && !ns) s = sm_status_new(SM_INVALID_ARGUMENT, "PaddingFIFOQueue needs the shapes of its components");
  }
  sp->capacity = -1;
  if (!s && sm__node_attr(node, "capacity")) s = sm__node_attr_int(node, "capacity", &sp->capacity);
  if (!s && type == Q_SHUFFLE) {
    if (sm__node_attr(node, "min_after_dequeue")) s = sm__node_attr_int(node, "min_after_dequeue", &sp->min_after);
    if (!s && sm__node_attr(node, "seed")) s = sm__node_attr_int(node, "seed", &sp->seed);
    if (!s && sm__node_attr(node, "seed2")) s = sm__node_attr_int(node, "seed2", &sp->seed2);
  }
  if (!s) s = sm__state_names(node, &sp->key.container, &sp->key.name);
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *fifo_prepare(const sm_node *n, void **st) { return queue_prepare(n, st, Q_FIFO); }
static sm_status *pad_prepare(const sm_node *n, void **st) { return queue_prepare(n, st, Q_PAD); }
static sm_status *shuffle_prepare(const sm_node *n, void **st) { return queue_prepare(n, st, Q_SHUFFLE); }
static sm_status *prio_prepare(const sm_node *n, void **st) { return queue_prepare(n, st, Q_PRIO); }

static sm_status *queue_handle_compute(const void *state, sm_kctx *ctx) {
  const qspec *sp = state;
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_QUEUE, &sp->key, queue_make, (void *)sp, queue_destroy, &obj);
  if (s) return s;
  queue *q = obj;
  if (q->type != sp->type || q->ncomp != sp->ncomp || memcmp(q->dtypes, sp->dtypes, sizeof q->dtypes))
    return sm_status_new(SM_INVALID_ARGUMENT, "queue '%s' exists as a %s of other component types or shapes", q->name,
                         qtype_name[q->type]);
  return sm__state_output(ctx, q);
}

/* FakeQueue: a resource handle as a ref handle (the same object here). */
static sm_status *fake_queue_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* ---- shared by the users ---------------------------------------------------------------------- */

static sm_status *queue_of(const sm_tensor *t, queue **out) {
  void *o;
  sm_status *s = sm__state_of(t, QUEUE_MAGIC, NULL, "a queue", &o);
  *out = o;
  return s;
}

static sm_status *input_queue(sm_kctx *ctx, queue **out) { return queue_of(sm__kctx_input(ctx, 0), out); }

/* Waits on q->cv (q->mu held) for up to 10 ms, then the run's deadline / cancel flag. */
static sm_status *queue_wait(queue *q, sm_kctx *ctx) { return sm__state_wait(&q->cv, &q->mu, ctx); }

/* Does an element of shape (rank, dims) fit component i's shape? */
static int shape_fits(const queue *q, int i, int rank, const int64_t *dims) {
  if (!q->shaped) return 1;
  if (rank != q->rank[i]) return 0;
  for (int d = 0; d < rank; d++)
    if (q->dims[i][d] >= 0 && q->dims[i][d] != dims[d]) return 0;
  return 1;
}

static sm_status *shape_mismatch(const queue *q, int i, int rank, const int64_t *dims) {
  char a[160], b[160];
  sm__array_partial_shape_str(q->rank[i], q->dims[i], a, sizeof a);
  sm__array_partial_shape_str(rank, dims, b, sizeof b);
  return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch in tuple component %d. Expected %s, got %s", i, a, b);
}

static sm_status *check_components(const queue *q, sm_kctx *ctx) {
  int n = sm__kctx_num_inputs(ctx) - 1;
  if (n != q->ncomp)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s '%s': %d components given, the queue has %d", qtype_name[q->type],
                         q->name, n, q->ncomp);
  for (int i = 0; i < n; i++) {
    int dt = sm_tensor_dtype(sm__kctx_input(ctx, i + 1));
    if (dt != q->dtypes[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "Type mismatch for component %d: expected %s, got %s", i,
                           sm__array_dtype_str(q->dtypes[i]), sm__array_dtype_str(dt));
  }
  return NULL;
}

static sm_status *push_locked(queue *q, qelem *e) {
  if (q->n == q->cap) {
    size_t nc = q->cap ? q->cap * 2 : 16;
    qelem **ni = malloc(nc * sizeof *ni);
    if (!ni) return sm_status_new(SM_NO_MEMORY, "%s '%s': out of memory", qtype_name[q->type], q->name);
    for (size_t i = 0; i < q->n; i++) ni[i] = item_at(q, i);
    free(q->items);
    q->items = ni;
    q->cap = nc;
    q->head = 0;
  }
  e->seq = q->seq++;
  if (q->type == Q_FIFO || q->type == Q_PAD) {
    q->items[(q->head + q->n) % q->cap] = e;
  } else if (q->type == Q_SHUFFLE) {
    q->items[q->n] = e;
  } else { /* heap: smallest (prio, seq) on top */
    size_t i = q->n;
    while (i) {
      size_t p = (i - 1) / 2;
      qelem *pe = q->items[p];
      if (pe->prio < e->prio || (pe->prio == e->prio && pe->seq < e->seq)) break;
      q->items[i] = pe;
      i = p;
    }
    q->items[i] = e;
  }
  q->n++;
  return NULL;
}

static int heap_less(const qelem *a, const qelem *b) { return a->prio < b->prio || (a->prio == b->prio && a->seq < b->seq); }

static qelem *pop_locked(queue *q) {
  qelem *e;
  if (q->type == Q_FIFO || q->type == Q_PAD) {
    e = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
  } else if (q->type == Q_SHUFFLE) {
    size_t idx = single_next(&q->gen) % q->n;
    e = q->items[idx];
    q->items[idx] = q->items[--q->n];
  } else {
    e = q->items[0];
    qelem *last = q->items[--q->n];
    size_t i = 0;
    for (;;) {
      size_t l = 2 * i + 1, m = i;
      const qelem *best = last;
      if (l < q->n && heap_less(q->items[l], best)) m = l, best = q->items[l];
      if (l + 1 < q->n && heap_less(q->items[l + 1], best)) m = l + 1;
      if (m == i) break;
      q->items[i] = q->items[m];
      i = m;
    }
    if (q->n) q->items[i] = last;
  }
  for (int i = 0; i < q->ncomp; i++) sm__mem_give_tensor(&q->acct, e->c[i]);
  return e;
}

/* ---- QueueEnqueue(V2) / QueueEnqueueMany(V2) --------------------------------------------------- */

static sm_status *closed_error(const queue *q) {
  return sm_status_new(SM_CANCELLED, "%s '%s' is closed.", qtype_name[q->type], q->name);
}

/* Builds element `row` (-1: the whole inputs) of the tuple being enqueued. */
static sm_status *make_elem(const queue *q, sm_kctx *ctx, int64_t row, qelem **out) {
  *out = NULL;
  qelem *e = calloc(1, sizeof *e + (size_t)q->ncomp * sizeof(sm_tensor *));
  if (!e) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  for (int i = 0; !s && i < q->ncomp; i++) {
    const sm_tensor *in = sm__kctx_input(ctx, i + 1);
    if (row < 0) {
      s = sm_tensor_copy(in, &e->c[i]);
      continue;
    }
    int rank = sm_tensor_rank(in) - 1;
    const int64_t *dims = sm_tensor_dims(in) + 1;
    int64_t per = 1;
    for (int d = 0; d < rank; d++) per *= dims[d];
    if (!(s = sm_tensor_new(q->dtypes[i], rank, dims, &e->c[i]))) s = sm__array_copy(e->c[i], 0, in, row * per, per);
  }
  if (!s && q->type == Q_PRIO) e->prio = ((const int64_t *)sm_tensor_data(e->c[0]))[0];
  if (s) {
    elem_free(q, e);
    return s;
  }
  *out = e;
  return NULL;
}

static sm_status *enqueue_one(queue *q, sm_kctx *ctx, qelem *e) {
  sm_status *s = NULL;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    if (q->closed) { /* TF's pending enqueues fail on a close too, cancel_pending_enqueues or not */
      s = closed_error(q);
      break;
    }
    if (q->capacity < 0 || (int64_t)q->n < q->capacity) {
      for (int i = 0; !s && i < q->ncomp; i++) s = sm__kctx_hold_tensor(ctx, &q->acct, e->c[i], "a queue element");
      if (!s) s = push_locked(q, e);
      if (s) {
        for (int i = 0; i < q->ncomp; i++) sm__mem_give_tensor(&q->acct, e->c[i]);
      } else {
        e = NULL;
        pthread_cond_broadcast(&q->cv);
      }
      break;
    }
    if ((s = queue_wait(q, ctx))) break;
  }
  pthread_mutex_unlock(&q->mu);
  elem_free(q, e);
  return s;
}

static sm_status *enqueue_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  queue *q;
  sm_status *s = input_queue(ctx, &q);
  if (!s) s = check_components(q, ctx);
  for (int i = 0; !s && i < q->ncomp; i++) {
    const sm_tensor *in = sm__kctx_input(ctx, i + 1);
    if (q->type == Q_PRIO && i == 0 && sm_tensor_num_elements(in) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected the priority element to be a scalar, but received shape: %s",
                           sm__array_shape_str(in, (char[96]){0}, 96));
    if (!shape_fits(q, i, sm_tensor_rank(in), sm_tensor_dims(in)))
      return shape_mismatch(q, i, sm_tensor_rank(in), sm_tensor_dims(in));
  }
  if (s) return s;
  pthread_mutex_lock(&q->mu);
  int closed = q->closed;
  pthread_mutex_unlock(&q->mu);
  if (closed) return closed_error(q);
  qelem *e;
  if ((s = make_elem(q, ctx, -1, &e))) return s;
  return enqueue_one(q, ctx, e);
}

static sm_status *enqueue_many_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  queue *q;
  sm_status *s = input_queue(ctx, &q);
  if (!s) s = check_components(q, ctx);
  if (s) return s;
  int64_t rows = -1;
  for (int i = 0; i < q->ncomp; i++) {
    const sm_tensor *in = sm__kctx_input(ctx, i + 1);
    if (sm_tensor_rank(in) < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected component %d to have rank at least 1, got a scalar", i);
    int64_t r = sm_tensor_dims(in)[0];
    if (rows >= 0 && r != rows) /* TF's text: the batch size component 0 set */
      return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch in tuple component %d. Expected [%lld], got [%lld]", i,
                           (long long)rows, (long long)r);
    rows = r;
    if (!shape_fits(q, i, sm_tensor_rank(in) - 1, sm_tensor_dims(in) + 1)) {
      int64_t want[SM_MAX_RANK + 1];
      want[0] = rows;
      memcpy(want + 1, q->dims[i], (size_t)q->rank[i] * sizeof(int64_t));
      char a[160], b[160];
      sm__array_partial_shape_str(q->rank[i] + 1, want, a, sizeof a);
      sm__array_partial_shape_str(sm_tensor_rank(in), sm_tensor_dims(in), b, sizeof b);
      return sm_status_new(SM_INVALID_ARGUMENT, "Shape mismatch in tuple component %d. Expected %s, got %s", i, a, b);
    }
  }
  pthread_mutex_lock(&q->mu);
  int closed = q->closed;
  pthread_mutex_unlock(&q->mu);
  if (closed) return closed_error(q);
  for (int64_t r = 0; !s && r < rows; r++) {
    qelem *e;
    if (!(s = make_elem(q, ctx, r, &e))) s = enqueue_one(q, ctx, e);
  }
  return s;
}

/* ---- QueueDequeue(V2) / QueueDequeueMany(V2) / QueueDequeueUpTo(V2) ---------------------------- */

enum { DQ_ONE, DQ_MANY, DQ_UPTO };

/* Takes up to `want` elements into es once enough are there: `want` (or, with up_to or a closed
 * shuffle queue below its min_after_dequeue, at least one). */
static sm_status *take(queue *q, sm_kctx *ctx, int64_t want, int mode, qelem ***out, int64_t *got) {
  sm_status *s = NULL;
  qelem **es = NULL;
  *got = 0;
  *out = NULL;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    int64_t avail = (int64_t)q->n;
    if (q->type == Q_SHUFFLE && !q->closed) avail -= q->min_after;
    if (avail >= want) break;
    if (q->closed) {
      if (mode == DQ_UPTO && q->n > 0) {
        want = (int64_t)q->n;
        break;
      }
      s = sm_status_new(SM_OUT_OF_RANGE, "%s '%s' is closed and has insufficient elements (requested %lld, current size %zu)",
                        qtype_name[q->type], q->name, (long long)want, q->n);
      break;
    }
    if ((s = queue_wait(q, ctx))) break;
  }
  /* the array is had once the elements are there: never more than the queue holds */
  if (!s && !(es = malloc((size_t)want * sizeof *es)))
    s = sm_status_new(SM_NO_MEMORY, "%s '%s': out of memory", qtype_name[q->type], q->name);
  if (!s) {
    for (int64_t i = 0; i < want; i++) es[i] = pop_locked(q);
    *got = want;
    *out = es;
    pthread_cond_broadcast(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
  return s;
}

typedef struct {
  int mode;
  int ntypes;
  int types[QMAXC];
} dq_state;

static sm_status *dq_prepare(const sm_node *node, void **state, int mode) {
  const int *types = NULL;
  size_t nt = 0;
  sm_status *s = sm__node_attr_types(node, "component_types", &types, &nt);
  if (!s && nt > QMAXC) s = sm_status_new(SM_UNIMPLEMENTED, "more than %d components", QMAXC);
  if (s) return s;
  dq_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->mode = mode;
  st->ntypes = (int)nt;
  for (size_t i = 0; i < nt; i++) st->types[i] = types[i];
  *state = st;
  return NULL;
}
static sm_status *dq_one_prepare(const sm_node *n, void **st) { return dq_prepare(n, st, DQ_ONE); }
static sm_status *dq_many_prepare(const sm_node *n, void **st) { return dq_prepare(n, st, DQ_MANY); }
static sm_status *dq_upto_prepare(const sm_node *n, void **st) { return dq_prepare(n, st, DQ_UPTO); }

static sm_status *dequeue_compute(const void *state, sm_kctx *ctx) {
  const dq_state *ds = state;
  queue *q;
  sm_status *s = input_queue(ctx, &q);
  if (s) return s;
  if (ds->ntypes != q->ncomp || memcmp(ds->types, q->dtypes, (size_t)q->ncomp * sizeof(int)))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s '%s': the dequeue's component_types are not the queue's",
                         qtype_name[q->type], q->name);
  int64_t want = 1;
  if (ds->mode != DQ_ONE) {
    const sm_tensor *nt = sm__kctx_input(ctx, 1);
    if (sm_tensor_dtype(nt) != SM_INT32 || sm_tensor_num_elements(nt) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "n must be an int32 scalar");
    want = ((const int32_t *)sm_tensor_data(nt))[0];
    if (want < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s requested %lld < 0 elements",
                           ds->mode == DQ_MANY ? "DequeueManyOp" : "DequeueUpToOp", (long long)want);
    if (!q->shaped && q->type != Q_PAD)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s's DequeueMany and DequeueUpTo require the components to have specified shapes.",
                           qtype_name[q->type]);
  }
  qelem **es = NULL;
  int64_t got = 0;
  if (want && (s = take(q, ctx, want, ds->mode, &es, &got))) return s;
  if (ds->mode == DQ_ONE) {
    for (int i = 0; i < q->ncomp; i++) {
      sm__kctx_set_output(ctx, i, es[0]->c[i]);
      es[0]->c[i] = NULL;
    }
    free(es[0]);
    free(es);
    return NULL;
  }
  for (int i = 0; !s && i < q->ncomp; i++) {
    int64_t dims[SM_MAX_RANK + 1];
    int rank = q->rank[i];
    dims[0] = got;
    for (int d = 0; d < rank; d++) {
      int64_t m = q->dims[i][d] < 0 ? 0 : q->dims[i][d];
      for (int64_t k = 0; k < got; k++)
        if (sm_tensor_dims(es[k]->c[i])[d] > m) m = sm_tensor_dims(es[k]->c[i])[d];
      dims[d + 1] = m;
    }
    sm_tensor *out;
    if ((s = sm__kctx_alloc_output(ctx, i, q->dtypes[i], rank + 1, dims, &out))) break;
    int64_t ostr[SM_MAX_RANK + 1], estr[SM_MAX_RANK];
    sm__array_strides(rank + 1, dims, ostr);
    for (int64_t k = 0; !s && k < got; k++) {
      const sm_tensor *e = es[k]->c[i];
      sm__array_strides(rank, sm_tensor_dims(e), estr);
      if (sm_tensor_num_elements(e))
        s = sm__array_strided_copy(out, k * ostr[0], ostr + 1, e, 0, estr, rank, sm_tensor_dims(e));
    }
  }
  for (int64_t k = 0; k < got; k++) elem_free(q, es[k]);
  free(es);
  return s;
}

/* ---- a reader's work queue (ops/queue.h) --------------------------------------------------------- */

sm_status *sm__queue_dequeue_work(sm_kctx *ctx, const sm_tensor *handle, char **work, size_t *len) {
  queue *q;
  *work = NULL;
  *len = 0;
  sm_status *s = queue_of(handle, &q);
  if (s) return s;
  if (q->ncomp != 1) return sm_status_new(SM_INVALID_ARGUMENT, "Expected single component queue");
  if (q->dtypes[0] != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "Expected queue with single string component");
  qelem **es = NULL;
  int64_t got = 0;
  if ((s = take(q, ctx, 1, DQ_ONE, &es, &got))) return s;
  const sm_tensor *t = es[0]->c[0];
  if (sm_tensor_num_elements(t) != 1) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Expected to dequeue a one-element string tensor");
  } else {
    size_t n;
    const char *v = sm_tensor_string(t, 0, &n);
    char *d = malloc(n + 1);
    if (!d) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
    } else {
      if (n) memcpy(d, v, n);
      d[n] = 0;
      *work = d;
      *len = n;
    }
  }
  elem_free(q, es[0]);
  free(es);
  return s;
}

/* ---- QueueClose(V2) / QueueSize(V2) / QueueIsClosed(V2) ---------------------------------------- */

static sm_status *close_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  queue *q;
  sm_status *s = input_queue(ctx, &q);
  if (s) return s;
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

/* QueueSize (int32 count) and QueueIsClosed (bool): state NULL for size, non-NULL for closed. */
static sm_status *status_compute(const void *state, sm_kctx *ctx) {
  queue *q;
  sm_tensor *out;
  sm_status *s = input_queue(ctx, &q);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, state ? SM_BOOL : SM_INT32, 0, NULL, &out);
  if (s) return s;
  pthread_mutex_lock(&q->mu);
  if (state)
    ((uint8_t *)sm_tensor_data(out))[0] = (uint8_t)q->closed;
  else
    ((int32_t *)sm_tensor_data(out))[0] = (int32_t)q->n;
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static sm_status *is_closed_prepare(const sm_node *node, void **state) {
  (void)node;
  static const int flag = 1;
  *state = (void *)&flag;
  return NULL;
}

#define QK(name, prep, comp, rel) {name, prep, comp, rel, 0}
#define QK2(name, prep, comp, rel) QK(name, prep, comp, rel), QK(name "V2", prep, comp, rel)
const sm_kernel sm_kernels_queue[] = {
    QK2("FIFOQueue", fifo_prepare, queue_handle_compute, sm__state_spec_release),
    QK2("PaddingFIFOQueue", pad_prepare, queue_handle_compute, sm__state_spec_release),
    QK2("RandomShuffleQueue", shuffle_prepare, queue_handle_compute, sm__state_spec_release),
    QK2("PriorityQueue", prio_prepare, queue_handle_compute, sm__state_spec_release),
    QK("FakeQueue", NULL, fake_queue_compute, NULL),
    QK2("QueueEnqueue", NULL, enqueue_compute, NULL),
    QK2("QueueEnqueueMany", NULL, enqueue_many_compute, NULL),
    QK2("QueueDequeue", dq_one_prepare, dequeue_compute, free),
    QK2("QueueDequeueMany", dq_many_prepare, dequeue_compute, free),
    QK2("QueueDequeueUpTo", dq_upto_prepare, dequeue_compute, free),
    QK2("QueueClose", NULL, close_compute, NULL),
    QK2("QueueSize", NULL, status_compute, NULL),
    QK2("QueueIsClosed", is_closed_prepare, status_compute, NULL),
    {NULL, NULL, NULL, NULL, 0},
};
