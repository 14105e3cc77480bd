/* batch_fn.c - BatchFunction, Batch, Unbatch and UnbatchGrad.
 *
 * BatchFunction (tf.nondifferentiable_batch_function, TF Serving's batching wrapper of a serving
 * function): its function `f` compiled once in prepare as a sub-plan and run on the
 * inputs, as TensorFlow's BatchFunctionKernel does for a request that no other joins within
 * batch_timeout_micros (core/kernels/batching_util/batch_resource_base.cc): the in_tensors'
 * rows padded to the smallest allowed_batch_sizes entry that holds them with copies of their
 * first row, `f` run on them and the captured_tensors, and every output's rows sliced back to the
 * request's. A request larger than max_batch_size is refused as TF does; with
 * enable_large_batch_splitting, max_batch_size bounds a request and the last allowed size the
 * batches `f` runs: a larger request runs in pieces of that many rows (each padded).
 *
 * Requests of concurrent runs are not merged into one batch here: each run computes its own
 * (a row-independent `f` gives the same outputs; the throughput batching buys is the serving
 * layer's business, src/serve batches requests itself).
 *
 * TF1's split form (tf.contrib.batching): Batch, Unbatch, UnbatchGrad. Batch emits each request as
 * its own batch at once (concurrent runs are not merged, so batch_timeout_micros is not waited):
 * padded as above, batch_index [[id, 0, rows]] and a fresh id. Unbatch and UnbatchGrad keep TF's
 * UnbatchResource / UnbatchGradResource state among the model's resources (SM_RES_UNBATCH*, by
 * container and shared_name): pieces and grads meet their runs by id across runs, a waiting run
 * stops at timeout_micros (Unbatch), its deadline or its cancellation. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_internal.h"
#include "ops/state_internal.h"
#include "runtime/kernel.h"

typedef struct {
  sm_plan *f;
  int nin, ncap, nout;
  int64_t max_batch;
  int64_t *allowed;
  size_t nallowed;
  int split;
} bf_state;

static void bf_release(void *p) {
  bf_state *st = p;
  if (!st) return;
  sm__plan_free(st->f);
  free(st->allowed);
  free(st);
}

static sm_status *list_len(const sm_node *node, const char *attr, int *n) {
  const int *v;
  size_t c = 0;
  *n = 0;
  if (!sm__node_attr(node, attr)) return NULL;
  sm_status *s = sm__node_attr_types(node, attr, &v, &c);
  if (!s) *n = (int)c;
  return s;
}

/* max_batch_size, allowed_batch_sizes (and BatchFunction's enable_large_batch_splitting) as TF's
 * ValidateAllowedBatchSizes checks them. */
static sm_status *sizes_prepare(const sm_node *node, bf_state *st, const char *op) {
  sm_status *s = sm__node_attr_int(node, "max_batch_size", &st->max_batch);
  if (!s && sm__node_attr(node, "enable_large_batch_splitting"))
    s = sm__node_attr_bool(node, "enable_large_batch_splitting", &st->split);
  const int64_t *al = NULL;
  if (!s && sm__node_attr(node, "allowed_batch_sizes")) s = sm__node_attr_ints(node, "allowed_batch_sizes", &al, &st->nallowed);
  if (!s && st->max_batch <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "%s: max_batch_size must be positive, got %lld", op, (long long)st->max_batch);
  if (!s && st->nallowed) {
    st->allowed = malloc(st->nallowed * sizeof *st->allowed);
    if (!st->allowed) s = sm_status_new(SM_NO_MEMORY, "out of memory");
    for (size_t i = 0; !s && i < st->nallowed; i++) {
      st->allowed[i] = al[i];
      if (al[i] <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "allowed_batch_sizes entries must be positive");
      else if (i && al[i] <= al[i - 1]) s = sm_status_new(SM_INVALID_ARGUMENT, "allowed_batch_sizes entries must be monotonically increasing");
    }
    if (!s && !st->split && st->allowed[st->nallowed - 1] != st->max_batch)
      s = sm_status_new(SM_INVALID_ARGUMENT, "final entry in allowed_batch_sizes must equal max_batch_size when "
                                             "enable_large_batch_splitting is False");
  }
  return s;
}

static sm_status *bf_prepare(const sm_node *node, void **state) {
  bf_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = list_len(node, "Tin", &st->nin);
  if (!s) s = list_len(node, "Tcaptured", &st->ncap);
  if (!s) s = list_len(node, "Tout", &st->nout);
  if (!s) s = sizes_prepare(node, st, "BatchFunction");
  const Tensorflow__AttrValue *fa = s ? NULL : sm__node_attr(node, "f");
  if (!s && (!fa || fa->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !fa->func || !fa->func->name || !*fa->func->name))
    s = sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: attr 'f' is not a function");
  if (!s) s = sm__prepare_function_plan(node, fa->func->name, &st->f);
  if (!s && (sm__plan_num_feeds(st->f) != st->nin + st->ncap || sm__plan_num_fetches(st->f) != st->nout))
    s = sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: function '%s' takes %d inputs and gives %d outputs; the node passes %d and expects %d",
                      fa->func->name, sm__plan_num_feeds(st->f), sm__plan_num_fetches(st->f), st->nin + st->ncap, st->nout);
  if (s) {
    bf_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static const char *shape_of(const sm_tensor *t, char *buf, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap);
}

/* Bytes of one row (dim 0) of t; strings are copied element by element. */
static int64_t row_elems(const sm_tensor *t) {
  int64_t e = 1;
  for (int d = 1; d < sm_tensor_rank(t); d++) e *= sm_tensor_dims(t)[d];
  return e;
}

/* dst rows [dr, dr + n) = src rows [sr, sr + n). */
static sm_status *copy_rows(sm_tensor *dst, int64_t dr, const sm_tensor *src, int64_t sr, int64_t n) {
  int64_t re = row_elems(src);
  if (sm_tensor_dtype(src) == SM_STRING) {
    for (int64_t i = 0; i < n * re; i++) {
      size_t l;
      const char *p = sm_tensor_string(src, sr * re + i, &l);
      sm_status *s = sm_tensor_set_string(dst, dr * re + i, p, l);
      if (s) return s;
    }
    return NULL;
  }
  size_t rb = (size_t)re * sm_dtype_size(sm_tensor_dtype(src));
  if (n && rb) memcpy((char *)sm_tensor_data(dst) + (size_t)dr * rb, (const char *)sm_tensor_data(src) + (size_t)sr * rb, (size_t)n * rb);
  return NULL;
}

/* The smallest allowed size >= n (n itself when none are given). */
static int64_t padded_size(const bf_state *st, int64_t n) {
  for (size_t i = 0; i < st->nallowed; i++)
    if (st->allowed[i] >= n) return st->allowed[i];
  return n;
}

/* The rows of a request: inputs 0..nin-1's common dim 0, with TF's checks (BatchResourceBase). */
static sm_status *request_rows(sm_kctx *ctx, int nin, int64_t max_batch, const char *op, int64_t *rows) {
  int64_t n = -1;
  for (int i = 0; i < nin; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    int dt = sm_tensor_dtype(t);
    if (dt == SM_VARIANT || dt == SM_RESOURCE)
      return sm_status_new(SM_UNIMPLEMENTED, "%s: batching %s inputs is not supported here", op, sm_dtype_name(dt));
    if (sm_tensor_rank(t) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Batching input tensors must have at least one dimension");
    if (n >= 0 && sm_tensor_dims(t)[0] != n)
      return sm_status_new(SM_INVALID_ARGUMENT, "Batching input tensors supplied in a given op invocation must have equal 0th-dimension size.");
    n = sm_tensor_dims(t)[0];
  }
  if (n > max_batch)
    return sm_status_new(SM_INVALID_ARGUMENT, "Task size %lld is larger than maximum input batch size %lld", (long long)n, (long long)max_batch);
  *rows = n;
  return NULL;
}

static sm_status *bf_compute(const void *state, sm_kctx *ctx) {
  const bf_state *st = state;
  int nin = st->nin, ntot = st->nin + st->ncap;
  if (sm__kctx_num_inputs(ctx) != ntot) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: expected %d inputs", ntot);
  if (nin == 0) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: no in_tensors to batch");
  int64_t n;
  sm_status *s = request_rows(ctx, nin, st->max_batch, "BatchFunction", &n);
  if (s) return s;
  if (n == 0) return sm_status_new(SM_INVALID_ARGUMENT, "BatchFunction: a request of 0 rows cannot be batched");
  sm_tensor **args = calloc((size_t)ntot + (size_t)st->nout, sizeof *args);
  sm_tensor **outs = calloc((size_t)st->nout, sizeof *outs);
  s = args && outs ? NULL : sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_tensor **res = args ? args + ntot : NULL;
  for (int64_t done = 0; !s && done < n;) {
    /* with splitting, the batches the function runs hold at most the last allowed size */
    int64_t chunk = st->split && st->nallowed ? st->allowed[st->nallowed - 1] : st->max_batch;
    int64_t m = n - done < chunk ? n - done : chunk, p = padded_size(st, m);
    for (int i = 0; !s && i < nin; i++) {
      const sm_tensor *t = sm__kctx_input(ctx, i);
      if (p == n && done == 0) {
        args[i] = (sm_tensor *)t; /* borrowed */
        continue;
      }
      int64_t dims[SM_MAX_RANK];
      memcpy(dims, sm_tensor_dims(t), sizeof(int64_t) * (size_t)sm_tensor_rank(t));
      dims[0] = p;
      s = sm_tensor_new(sm_tensor_dtype(t), sm_tensor_rank(t), dims, &args[i]);
      if (!s) s = copy_rows(args[i], 0, t, done, m);
      for (int64_t r = m; !s && r < p; r++) s = copy_rows(args[i], r, t, done, 1); /* TF pads with the first row */
    }
    for (int i = nin; i < ntot; i++) args[i] = (sm_tensor *)sm__kctx_input(ctx, i);
    if (!s) s = sm__kctx_run_plan(ctx, st->f, args, ntot, res, st->nout);
    for (int o = 0; !s && o < st->nout; o++) {
      const sm_tensor *r = res[o];
      if (sm_tensor_rank(r) < 1) {
        s = sm_status_new(SM_FAILED_PRECONDITION, "Batched output tensor has 0 dimensions");
      } else if (sm_tensor_dims(r)[0] != p) {
        s = sm_status_new(SM_FAILED_PRECONDITION, "Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors");
      } else if (!outs[o]) {
        int64_t dims[SM_MAX_RANK];
        memcpy(dims, sm_tensor_dims(r), sizeof(int64_t) * (size_t)sm_tensor_rank(r));
        dims[0] = n;
        sm_tensor *ot;
        s = sm__kctx_alloc_output_uninit(ctx, o, sm_tensor_dtype(r), sm_tensor_rank(r), dims, &ot);
        if (!s) outs[o] = ot;
      }
      if (!s && (sm_tensor_dtype(r) != sm_tensor_dtype(outs[o]) || sm_tensor_rank(r) != sm_tensor_rank(outs[o]) ||
                 memcmp(sm_tensor_dims(r) + 1, sm_tensor_dims(outs[o]) + 1, sizeof(int64_t) * (size_t)(sm_tensor_rank(r) - 1))))
        s = sm_status_new(SM_FAILED_PRECONDITION, "BatchFunction: output %d of the pieces of a split batch differ in dtype or shape", o);
      if (!s) s = copy_rows(outs[o], done, r, 0, m);
    }
    for (int i = 0; i < nin; i++)
      if (args[i] != sm__kctx_input(ctx, i)) sm_tensor_free(args[i]);
    memset(args, 0, sizeof *args * (size_t)ntot);
    for (int o = 0; o < st->nout; o++) sm_tensor_free(res[o]), res[o] = NULL;
    done += m;
  }
  free(args);
  free(outs);
  return s;
}

/* ---- Batch ---------------------------------------------------------------------------------- */

/* A batch id as TF's random::New64 gives one: here a counter through splitmix64 (a bijection), from
 * a seed of the clock, so ids are distinct for the life of the process. */
static uint64_t batch_seed;
static _Atomic uint64_t batch_counter;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;
static void batch_seed_init(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  batch_seed = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int64_t new_batch_id(void) {
  pthread_once(&batch_once, batch_seed_init);
  uint64_t z = batch_seed + atomic_fetch_add(&batch_counter, 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (int64_t)(z ^ (z >> 31));
}

static sm_status *batch_prepare(const sm_node *node, void **state) {
  bf_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int64_t threads = 1;
  sm_status *s = list_len(node, "T", &st->nin);
  if (!s) s = sizes_prepare(node, st, "Batch");
  if (!s && sm__node_attr(node, "num_batch_threads")) s = sm__node_attr_int(node, "num_batch_threads", &threads);
  if (!s && threads <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "num_batch_threads must be positive; was %lld", (long long)threads);
  if (s) {
    bf_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* A lone request's batch, as TF emits it when no other request joins it: the inputs padded to the
 * smallest allowed size with their first row, batch_index [[id, 0, rows]], the id. A request of 0
 * rows is a task TF batches with nothing: each output an empty [0] tensor. */
static sm_status *batch_compute(const void *state, sm_kctx *ctx) {
  const bf_state *st = state;
  int nin = st->nin;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "Batch: expected %d inputs", nin);
  int64_t n = 0, p;
  sm_status *s = nin ? request_rows(ctx, nin, st->max_batch, "Batch", &n) : NULL;
  if (s) return s;
  sm_tensor *t;
  if (n == 0) {
    int64_t zero = 0;
    for (int i = 0; i < nin + 2 && !s; i++) s = sm__kctx_alloc_output(ctx, i, i < nin ? sm_tensor_dtype(sm__kctx_input(ctx, i)) : SM_INT64, 1, &zero, &t);
    return s;
  }
  p = padded_size(st, n);
  for (int i = 0; i < nin && !s; i++) {
    const sm_tensor *x = sm__kctx_input(ctx, i);
    if (p == n) {
      sm__kctx_forward(ctx, i, i);
      continue;
    }
    int64_t dims[SM_MAX_RANK];
    memcpy(dims, sm_tensor_dims(x), sizeof(int64_t) * (size_t)sm_tensor_rank(x));
    dims[0] = p;
    s = sm__kctx_alloc_output_uninit(ctx, i, sm_tensor_dtype(x), sm_tensor_rank(x), dims, &t);
    if (!s) s = copy_rows(t, 0, x, 0, n);
    for (int64_t r = n; !s && r < p; r++) s = copy_rows(t, r, x, 0, 1);
  }
  int64_t id = new_batch_id(), bd[2] = {1, 3};
  if (!s) s = sm__kctx_alloc_output(ctx, nin, SM_INT64, 2, bd, &t);
  if (!s) {
    int64_t *b = sm_tensor_data(t);
    b[0] = id, b[1] = 0, b[2] = n;
    s = sm__kctx_alloc_output(ctx, nin + 1, SM_INT64, 0, NULL, &t);
  }
  if (!s) *(int64_t *)sm_tensor_data(t) = id;
  return s;
}

/* ---- Unbatch / UnbatchGrad: state of the model's resources ----------------------------------- */

#define UNB_MAGIC 0x554e4254u

typedef struct unb_item { /* a piece no run waits for yet (Unbatch), a grad (UnbatchGrad) */
  int64_t key;
  uint64_t deadline_us; /* Unbatch: dropped after it; 0: never */
  sm_tensor *t;
  struct unb_item *next;
} unb_item;

typedef struct unb_waiter { /* a run waiting: for its piece (Unbatch), for its batch's grads */
  int64_t key;
  sm_tensor *result;
  sm_status *err;
  int64_t *missing; /* UnbatchGrad: the keys of its batch (nkeys), and how many are not here yet */
  size_t nkeys, nmissing;
  struct unb_waiter *next;
} unb_waiter;

typedef struct unb_res {
  uint32_t magic;
  int grad;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unb_item *items;
  unb_waiter *waiters;
  sm_mem_account acct;
} unb_res;

static void unb_destroy(void *obj) {
  unb_res *r = obj;
  if (!r) return;
  for (unb_item *it = r->items, *nx; it; it = nx) {
    nx = it->next;
    sm_tensor_free(it->t);
    free(it);
  }
  sm__mem_close(&r->acct);
  sm__state_free(r, NULL, &r->mu, &r->cv);
}

static sm_status *unb_make(void *arg, const char *dname, void **obj) {
  (void)dname;
  unb_res *r = calloc(1, sizeof *r);
  if (!r) return sm_status_new(SM_NO_MEMORY, "out of memory");
  r->magic = UNB_MAGIC;
  r->grad = arg != NULL;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  *obj = r;
  return NULL;
}

typedef struct {
  sm__state_key key; /* first: sm__state_spec_release */
  int64_t timeout_us;
} unb_spec;

static char *attr_dup(const sm_node *node, const char *attr) {
  const char *v = "";
  size_t len = 0;
  if (sm__node_attr(node, attr) && sm__node_attr_string(node, attr, &v, &len)) v = "", len = 0;
  const char *nn = sm__node_name(node);
  if (!len && !strcmp(attr, "shared_name")) v = nn, len = strlen(nn); /* TF: the node's name */
  char *d = malloc(len + 1);
  if (d) memcpy(d, v, len), d[len] = 0;
  return d;
}

static sm_status *unb_prepare(const sm_node *node, void **state) {
  unb_spec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  if (sm__node_attr(node, "timeout_micros")) s = sm__node_attr_int(node, "timeout_micros", &sp->timeout_us);
  sp->key.container = attr_dup(node, "container");
  sp->key.name = attr_dup(node, "shared_name");
  if (!s && (!sp->key.container || !sp->key.name)) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *unb_get(sm_kctx *ctx, const unb_spec *sp, int grad, unb_res **out) {
  void *obj;
  sm_status *s = sm__state_object(ctx, grad ? SM_RES_UNBATCH_GRAD : SM_RES_UNBATCH, &sp->key, unb_make,
                                  grad ? (void *)sp : NULL, unb_destroy, &obj);
  if (!s) *out = obj;
  return s;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Waits on r->cv (r->mu held) for up to 10 ms, then the run's deadline / cancel flag. */
static sm_status *unb_wait(unb_res *r, sm_kctx *ctx) { return sm__state_wait(&r->cv, &r->mu, ctx); }

static unb_item **item_find(unb_res *r, int64_t key) {
  unb_item **pp = &r->items;
  while (*pp && (*pp)->key != key) pp = &(*pp)->next;
  return pp;
}

static unb_waiter **waiter_find(unb_res *r, int64_t key) {
  unb_waiter **pp = &r->waiters;
  while (*pp && (*pp)->key != key) pp = &(*pp)->next;
  return pp;
}

/* Takes the item *pp out of r; its tensor (the reference) is the caller's. */
static sm_tensor *item_take(unb_res *r, unb_item **pp) {
  unb_item *it = *pp;
  sm_tensor *t = it->t;
  *pp = it->next;
  sm__mem_give_tensor(&r->acct, t);
  free(it);
  return t;
}

static sm_status *item_put(unb_res *r, sm_kctx *ctx, int64_t key, uint64_t deadline, sm_tensor *t) {
  unb_item *it = calloc(1, sizeof *it);
  sm_status *s = it ? sm__kctx_hold_tensor(ctx, &r->acct, t, "the pieces Unbatch and UnbatchGrad keep") : sm_status_new(SM_NO_MEMORY, "out of memory");
  if (s) {
    free(it);
    return s;
  }
  it->key = key, it->deadline_us = deadline, it->t = sm_tensor_ref(t);
  it->next = r->items;
  r->items = it;
  return NULL;
}

static void waiter_remove(unb_res *r, unb_waiter *w) {
  unb_waiter **pp = &r->waiters;
  while (*pp && *pp != w) pp = &(*pp)->next;
  if (*pp) *pp = w->next;
}

static void tensor_summary(const sm_tensor *t, char *buf, size_t cap) {
  char sh[96];
  int64_t n = sm_tensor_num_elements(t);
  int k = snprintf(buf, cap, "Tensor<type: %s shape: %s values:", sm__array_dtype_str(sm_tensor_dtype(t)), shape_of(t, sh, sizeof sh));
  for (int64_t i = 0; i < n && i < 3 && k > 0 && (size_t)k < cap; i++)
    k += snprintf(buf + k, cap - (size_t)k, " %lld", sm_tensor_dtype(t) == SM_INT64 ? (long long)((const int64_t *)sm_tensor_data(t))[i] : 0LL);
  if (k > 0 && (size_t)k < cap) snprintf(buf + k, cap - (size_t)k, "%s>", n > 3 ? "..." : "");
}

/* ---- Unbatch ---------------------------------------------------------------------------------- */

/* TF's UnbatchResource: the batched tensor's rows are split into pieces of batch_index's sizes
 * (end - start, taken one after another from row 0, as TF's Split takes them); the piece of this
 * run's id is its output, the others wait for the runs of their ids (those waiting now get them at
 * once; the rest are kept until timeout_micros passes). A run whose piece is not in its input
 * takes one kept for its id, or waits for it until timeout_micros (DeadlineExceeded, TF's text),
 * the run's deadline or its cancellation. */
static sm_status *unbatch_compute(const void *state, sm_kctx *ctx) {
  const unb_spec *sp = state;
  const sm_tensor *data = sm__kctx_input(ctx, 0), *bi = sm__kctx_input(ctx, 1), *idt = sm__kctx_input(ctx, 2);
  char b[160];
  if (sm_tensor_rank(data) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Unbatch: batched_tensor must have at least one dimension");
  if (sm_tensor_rank(bi) != 2 || sm_tensor_dtype(bi) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Unbatch: batch_index must be an int64 matrix, got %s", shape_of(bi, b, sizeof b));
  const int64_t *bd = sm_tensor_dims(bi);
  if (bd[0] > sm_tensor_dims(data)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Wrong shape for index tensor. Expected 0th dimension size to be no greater than %lld; Got: %lld.",
                         (long long)sm_tensor_dims(data)[0], (long long)bd[0]);
  if (bd[1] != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "Wrong shape for index tensor. Expected 1st dimension size to be 3 ; Got: %lld.", (long long)bd[1]);
  if (sm_tensor_rank(idt) != 0 || sm_tensor_dtype(idt) != SM_INT64) {
    tensor_summary(idt, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "Input id should be scalar; Got: %s.", b);
  }
  int64_t key = *(const int64_t *)sm_tensor_data(idt), npieces = bd[0];
  const int64_t *idx = sm_tensor_data(bi);
  int64_t total = 0;
  for (int64_t i = 0; i < npieces; i++) {
    int64_t sz;
    if (idx[3 * i + 2] < idx[3 * i + 1])
      return sm_status_new(SM_INVALID_ARGUMENT, "Unbatch: batch_index row %lld gives a negative size (%lld to %lld)", (long long)i,
                           (long long)idx[3 * i + 1], (long long)idx[3 * i + 2]);
    if (__builtin_sub_overflow(idx[3 * i + 2], idx[3 * i + 1], &sz) || sz > sm_tensor_dims(data)[0] - total)
      return sm_status_new(SM_INVALID_ARGUMENT, "Sum of split sizes must not exceed dim0-size of input tensor");
    total += sz;
  }
  sm_tensor **pieces = NULL;
  sm_status *s = NULL;
  if (npieces) {
    pieces = sm__kctx_scratch(ctx, sizeof *pieces * (size_t)npieces, &s);
    if (!pieces) return s;
    memset(pieces, 0, sizeof *pieces * (size_t)npieces);
  }
  int64_t at = 0;
  for (int64_t i = 0; i < npieces && !s; i++) {
    int64_t dims[SM_MAX_RANK], sz = idx[3 * i + 2] - idx[3 * i + 1];
    memcpy(dims, sm_tensor_dims(data), sizeof(int64_t) * (size_t)sm_tensor_rank(data));
    dims[0] = sz;
    if (!(s = sm_tensor_new(sm_tensor_dtype(data), sm_tensor_rank(data), dims, &pieces[i]))) s = copy_rows(pieces[i], 0, data, at, sz);
    at += sz;
  }
  unb_res *r = NULL;
  if (!s) s = unb_get(ctx, sp, 0, &r);
  sm_tensor *mine = NULL;
  unb_waiter self = {.key = key};
  if (!s) {
    pthread_mutex_lock(&r->mu);
    uint64_t now = now_us(), deadline = now + (uint64_t)(sp->timeout_us > 0 ? sp->timeout_us : 0);
    for (unb_item **pp = &r->items; *pp;) /* TF's timeout enforcer: kept pieces past their deadline go */
      if ((*pp)->deadline_us && (*pp)->deadline_us <= now) sm_tensor_free(item_take(r, pp));
      else pp = &(*pp)->next;
    unb_item **kept = item_find(r, key);
    if (*kept) {
      mine = item_take(r, kept); /* TF returns here: this run's input pieces are dropped */
    } else if (*waiter_find(r, key)) {
      s = sm_status_new(SM_ALREADY_EXISTS, "Multiple session runs with the same batch key.");
    } else {
      for (int64_t i = 0; i < npieces && !s; i++) {
        int64_t k = idx[3 * i];
        unb_waiter **w = waiter_find(r, k);
        if (k == key && !mine) {
          mine = sm_tensor_ref(pieces[i]);
        } else if (k != key && *w && !(*w)->result) {
          (*w)->result = sm_tensor_ref(pieces[i]);
          pthread_cond_broadcast(&r->cv);
        } else if (*item_find(r, k)) {
          s = sm_status_new(SM_ALREADY_EXISTS, "Multiple tensors returned for same batch key.");
        } else {
          s = item_put(r, ctx, k, deadline, pieces[i]);
        }
      }
      if (!s && !mine) {
        self.next = r->waiters;
        r->waiters = &self;
        while (!self.result && !s) {
          if (now_us() >= deadline) s = sm_status_new(SM_DEADLINE_EXCEEDED, "Batched data did not arrive within timeout window.");
          else s = unb_wait(r, ctx);
        }
        waiter_remove(r, &self);
        mine = self.result;
        self.result = NULL;
        if (s) sm_tensor_free(mine), mine = NULL;
      }
    }
    pthread_mutex_unlock(&r->mu);
  }
  for (int64_t i = 0; i < npieces; i++) sm_tensor_free(pieces[i]);
  sm__kctx_scratch_free(ctx, pieces);
  if (s) {
    sm_tensor_free(mine);
    return s;
  }
  if (sm_tensor_dtype(mine) != sm_tensor_dtype(data)) {
    sm_tensor_free(mine);
    return sm_status_new(SM_INVALID_ARGUMENT, "Unbatch: the piece kept for id %lld is %s, this node's is %s", (long long)key,
                         sm_dtype_name(sm_tensor_dtype(mine)), sm_dtype_name(sm_tensor_dtype(data)));
  }
  sm__kctx_set_output(ctx, 0, mine);
  return NULL;
}

/* ---- UnbatchGrad ------------------------------------------------------------------------------ */

/* grads[0..n) (of one dtype and row shape) one after another in a new tensor. */
static sm_status *concat_rows(sm_tensor *const *g, size_t n, sm_tensor **out) {
  const sm_tensor *f = g[0];
  int64_t rows = 0, dims[SM_MAX_RANK];
  for (size_t i = 0; i < n; i++) {
    if (sm_tensor_dtype(g[i]) != sm_tensor_dtype(f) || sm_tensor_rank(g[i]) != sm_tensor_rank(f) || sm_tensor_rank(f) < 1 ||
        memcmp(sm_tensor_dims(g[i]) + 1, sm_tensor_dims(f) + 1, sizeof(int64_t) * (size_t)(sm_tensor_rank(f) - 1)))
      return sm_status_new(SM_INVALID_ARGUMENT, "UnbatchGrad: the grads of one batch differ in dtype, rank or row shape");
    rows += sm_tensor_dims(g[i])[0];
  }
  memcpy(dims, sm_tensor_dims(f), sizeof(int64_t) * (size_t)sm_tensor_rank(f));
  dims[0] = rows;
  sm_status *s = sm_tensor_new(sm_tensor_dtype(f), sm_tensor_rank(f), dims, out);
  rows = 0;
  for (size_t i = 0; i < n && !s; i++) {
    s = copy_rows(*out, rows, g[i], 0, sm_tensor_dims(g[i])[0]);
    rows += sm_tensor_dims(g[i])[0];
  }
  if (s) sm_tensor_free(*out), *out = NULL;
  return s;
}

/* TF's OutputBatch: the grads of keys[0..n) (all kept in r) taken out, concatenated. */
static sm_status *grad_output(unb_res *r, const int64_t *keys, size_t n, sm_tensor **out) {
  sm_tensor **g = calloc(n ? n : 1, sizeof *g);
  if (!g) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  for (size_t i = 0; i < n && !s; i++) {
    unb_item **pp = item_find(r, keys[i]);
    if (!*pp) s = sm_status_new(SM_INTERNAL, "bad bookkeeping of available tensors.");
    else g[i] = item_take(r, pp);
  }
  if (!s) s = concat_rows(g, n, out);
  for (size_t i = 0; i < n; i++) sm_tensor_free(g[i]);
  free(g);
  return s;
}

/* TF's UnbatchGradResource: every run leaves its grad under its id; the run that holds the batch
 * (a non-empty original_input) outputs its tasks' grads concatenated in batch_index's order once all
 * are there (waiting for the others' runs until the run's deadline or cancellation: TF has no
 * timeout); the others output an empty grad. */
static sm_status *unbatch_grad_compute(const void *state, sm_kctx *ctx) {
  const unb_spec *sp = state;
  const sm_tensor *data = sm__kctx_input(ctx, 0), *bi = sm__kctx_input(ctx, 1), *grad = sm__kctx_input(ctx, 2), *idt = sm__kctx_input(ctx, 3);
  char b[160];
  if (sm_tensor_num_elements(idt) != 1 || sm_tensor_dtype(idt) != SM_INT64) {
    tensor_summary(idt, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected `id` to be scalar. Received %s", b);
  }
  if (sm_tensor_rank(grad) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "UnbatchGrad: grad must have at least one dimension");
  if (sm_tensor_dtype(bi) != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "UnbatchGrad: batch_index must be int64");
  int64_t key = *(const int64_t *)sm_tensor_data(idt);
  int64_t nb = sm_tensor_rank(bi) ? sm_tensor_dims(bi)[0] : 1;
  int has_batch = sm_tensor_num_elements(data) > 0;
  if (has_batch) {
    if (sm_tensor_num_elements(bi) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "batch_index is empty while the tensor isn't.");
    if (sm_tensor_num_elements(bi) != nb * 3)
      return sm_status_new(SM_INVALID_ARGUMENT, "batch_index should contain %lld elements. Received %lld", (long long)(nb * 3),
                           (long long)sm_tensor_num_elements(bi));
  }
  unb_res *r;
  sm_status *s = unb_get(ctx, sp, 1, &r);
  if (s) return s;
  int64_t *keys = NULL;
  if (has_batch && !(keys = sm__kctx_scratch(ctx, sizeof *keys * (size_t)nb, &s))) return s;
  sm_tensor *out = NULL;
  pthread_mutex_lock(&r->mu);
  if (*item_find(r, key)) s = sm_status_new(SM_INVALID_ARGUMENT, "Two runs with the same batch key.");
  sm_tensor *g = NULL;
  if (!s) s = sm_tensor_new(sm_tensor_dtype(grad), sm_tensor_rank(grad), sm_tensor_dims(grad), &g);
  if (!s) s = copy_rows(g, 0, grad, 0, sm_tensor_dims(grad)[0]);
  if (!s) s = item_put(r, ctx, key, 0, g);
  sm_tensor_free(g);
  unb_waiter self = {.key = key, .missing = keys, .nkeys = (size_t)(has_batch ? nb : 0)};
  int registered = 0;
  if (!s && has_batch) {
    const int64_t *idx = sm_tensor_data(bi);
    for (int64_t i = 0; i < nb; i++) {
      keys[i] = idx[3 * i];
      if (!*item_find(r, keys[i])) self.nmissing++;
    }
    if (!self.nmissing) {
      s = grad_output(r, keys, self.nkeys, &out);
    } else if (*waiter_find(r, key)) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Batch key with valid batch used twice.");
    } else {
      self.next = r->waiters;
      r->waiters = &self;
      registered = 1;
    }
  } else if (!s) {
    int64_t dims[SM_MAX_RANK];
    memcpy(dims, sm_tensor_dims(grad), sizeof(int64_t) * (size_t)sm_tensor_rank(grad));
    dims[0] = 0;
    s = sm_tensor_new(sm_tensor_dtype(grad), sm_tensor_rank(grad), dims, &out);
  }
  if (!s) { /* a batch waiting for this grad: it may be complete now */
    for (unb_waiter *w = r->waiters; w; w = w->next) {
      if (w == &self || w->result || w->err || !w->nmissing) continue;
      int wants = 0;
      for (size_t i = 0; i < w->nkeys && !wants; i++) wants = w->missing[i] == key;
      if (!wants) continue;
      if (--w->nmissing == 0) w->err = grad_output(r, w->missing, w->nkeys, &w->result);
      pthread_cond_broadcast(&r->cv);
      break;
    }
  }
  while (registered && !s && !self.result && !self.err) s = unb_wait(r, ctx);
  if (registered) {
    waiter_remove(r, &self);
    if (!s) s = self.err, self.err = NULL;
    if (!s) out = self.result, self.result = NULL;
    sm_tensor_free(self.result);
    sm_status_free(self.err);
  }
  pthread_mutex_unlock(&r->mu);
  sm__kctx_scratch_free(ctx, keys);
  if (s) {
    sm_tensor_free(out);
    return s;
  }
  sm__kctx_set_output(ctx, 0, out);
  return NULL;
}

const sm_kernel sm_kernels_batch_fn[] = {
    {"BatchFunction", bf_prepare, bf_compute, bf_release, 0},
    {"Batch", batch_prepare, batch_compute, bf_release, 0},
    {"Unbatch", unb_prepare, unbatch_compute, sm__state_spec_release, 0},
    {"UnbatchGrad", unb_prepare, unbatch_grad_compute, sm__state_spec_release, 0},
    {0},
};
