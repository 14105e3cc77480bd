/* batch.c - server-side batching, as TF Serving's BatchingSession over a SharedBatchScheduler:
 * callers enqueue a task (one predict request's inputs); batch threads take the oldest task,
 * wait up to batch_timeout_micros for more compatible tasks (same model version, signature,
 * aliases, dtypes, ranks, and dims past 0 unless pad_variable_length_inputs pads every input to
 * the batch's largest, batching_util.cc's AddPadding) until max_batch_size rows are there,
 * concatenate the inputs along dimension 0 (padding up to the next allowed_batch_sizes entry with
 * copies of the last task's first row, as TF Serving pads), run the signature once and hand each task its rows of every output.
 * Tasks that cannot be merged run alone on the caller's thread. With batch_timeout_micros 0 there
 * are no batch threads: the callers run the batches themselves, at most num_batch_threads at once
 * (lead_or_wait; SM_BATCH_THREADS=1 keeps batch threads, for A/B runs). A caller either waits
 * for its answer (sm__batcher_run) or parks its task and is called back (sm__batcher_submit: the
 * REST server suspends the connection rather than hold a thread). Also reads
 * BatchingParameters text files (proto/session_bundle_config.proto). */
#include "serve/batch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "savedmodel/pbtxt.h"
#include "session_bundle_config.pb-c.h"

/* ---- BatchingParameters ------------------------------------------------------------------ */

static sm_status *validate_params(const sm_batching_params *p, const char *what) {
  if (p->max_batch_size <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: max_batch_size must be positive, got %lld", what,
                         (long long)p->max_batch_size);
  if (p->batch_timeout_micros < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: batch_timeout_micros must not be negative, got %lld", what,
                         (long long)p->batch_timeout_micros);
  if (p->num_batch_threads <= 0 || p->num_batch_threads > 1024)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: num_batch_threads must be in [1, 1024], got %d", what,
                         p->num_batch_threads);
  if (p->max_enqueued_batches <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: max_enqueued_batches must be positive, got %lld", what,
                         (long long)p->max_enqueued_batches);
  if (p->nallowed < 0 || (p->nallowed > 0 && !p->allowed_batch_sizes))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %d allowed_batch_sizes given without an array", what, p->nallowed);
  /* BatchingSession's checks (batching_session.cc). */
  for (int i = 0; i < p->nallowed; i++) {
    if (p->allowed_batch_sizes[i] <= 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: allowed_batch_sizes entries must be positive", what);
    if (i > 0 && p->allowed_batch_sizes[i] <= p->allowed_batch_sizes[i - 1])
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: allowed_batch_sizes entries must be monotonically increasing",
                           what);
  }
  if (p->nallowed > 0 && p->allowed_batch_sizes[p->nallowed - 1] != p->max_batch_size)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: final entry in allowed_batch_sizes must equal max_batch_size",
                         what);
  return NULL;
}

static int cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (n > 1024 ? 1024 : (int)n) : 1;
}

sm_status *sm__batching_params_read(const char *path, sm_batching_params *out, int64_t **allowed_storage) {
  *allowed_storage = NULL;
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t len = 0;
  sm_status *s = sm__file_read_all(path, &text, &len);
  if (s) return sm_status_prefix(s, "reading batching parameters");
  ProtobufCMessage *msg = NULL;
  s = sm_pbtxt_parse(&tensorflow__serving__batching_parameters__descriptor, text, len, path, &msg);
  free(text);
  if (s) return s;
  Tensorflow__Serving__BatchingParameters *b = (Tensorflow__Serving__BatchingParameters *)msg;
  out->max_batch_size = b->max_batch_size ? b->max_batch_size->value : 32;
  out->batch_timeout_micros = b->batch_timeout_micros ? b->batch_timeout_micros->value : 1000;
  int64_t nt = b->num_batch_threads ? b->num_batch_threads->value : cores();
  out->num_batch_threads = nt > 1024 ? 1025 : nt < 0 ? -1 : (int)nt; /* out of range: refused below */
  out->max_enqueued_batches = b->max_enqueued_batches ? b->max_enqueued_batches->value : 100;
  out->pad_variable_length_inputs = b->pad_variable_length_inputs;
  if (b->enable_large_batch_splitting && b->enable_large_batch_splitting->value)
    s = sm_status_new(SM_UNIMPLEMENTED, "%s: enable_large_batch_splitting is not supported", path);
  else if (b->n_allowed_batch_sizes > 4096)
    s = sm_status_new(SM_OUT_OF_RANGE, "%s: %zu allowed_batch_sizes", path, b->n_allowed_batch_sizes);
  if (!s && b->n_allowed_batch_sizes) {
    int64_t *a = malloc(b->n_allowed_batch_sizes * sizeof *a);
    if (!a) {
      s = sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
    } else {
      memcpy(a, b->allowed_batch_sizes, b->n_allowed_batch_sizes * sizeof *a);
      out->allowed_batch_sizes = a;
      out->nallowed = (int)b->n_allowed_batch_sizes;
      *allowed_storage = a;
    }
  }
  protobuf_c_message_free_unpacked(msg, NULL);
  if (!s) s = validate_params(out, path);
  if (s) {
    free(*allowed_storage);
    *allowed_storage = NULL;
    memset(out, 0, sizeof *out);
  }
  return s;
}

/* ---- the batcher ---------------------------------------------------------------------------- */

typedef struct task {
  sm_model *model;
  const char *key;
  const char *const *in_aliases;
  sm_tensor *const *inputs;
  int nin;
  const char *const *out_aliases;
  int nout;
  sm_tensor **outputs;
  int64_t rows;
  int64_t deadline_us; /* 0: none */
  size_t max_run_bytes; /* 0: none */
  struct timespec enqueued;
  sm_status *status;
  sm_batch_done_fn done_fn; /* parked (sm__batcher_submit): called when answered, then t is freed */
  void *done_arg;
  pthread_mutex_t tmu; /* guards done, lead; the batcher's mu is never taken while holding it */
  pthread_cond_t cv;   /* signalled when done or lead is set */
  int done;
  int lead; /* callers_run: asked to lead the next batch */
  struct task *next;
} task;

struct sm_batcher {
  sm_batching_params p;
  int64_t *allowed;
  pthread_mutex_t mu;
  pthread_cond_t work; /* a task arrived, or stop */
  task *head, *tail;
  int64_t queued_rows;
  int64_t nbatches, ntasks; /* batches run by the batch threads, tasks in them */
  int stop;
  int hurry; /* sm__batcher_hurry: batches close without waiting for their timeout */
  pthread_t *threads;
  int nthreads;
  int callers_run;  /* batch_timeout_micros 0: no batch threads, callers run batches (lead_or_wait) */
  int running;      /* under mu, callers_run: batches running */
};

/* t is answered. Only its own caller wakes: one condition variable for every waiting caller
 * woke all of them at each batch's end (each went back to sleep but one), a context switch per
 * waiting request per batch. Each task has its own mutex, and a batch's tasks are answered after
 * the batcher's mu is released: a caller woken under mu went back to sleep on it at once (futex
 * traffic on mu was 9% of the server's CPU with batches of 5-10, bench/RESULTS.md). The caller
 * may free t as soon as this returns. */
static void task_done(task *t) {
  if (t->done_fn) { /* parked: nobody waits on the condition variable */
    t->done_fn(t->done_arg, t->status);
    free(t);
    return;
  }
  pthread_mutex_lock(&t->tmu);
  t->done = 1;
  pthread_cond_signal(&t->cv);
  pthread_mutex_unlock(&t->tmu);
}

/* callers_run: asks t's caller to lead the next batch. */
static void task_lead(task *t) {
  pthread_mutex_lock(&t->tmu);
  t->lead = 1;
  pthread_cond_signal(&t->cv);
  pthread_mutex_unlock(&t->tmu);
}

/* Waits until t is answered, or (lead_ok) asked to lead; returns whether it is answered. */
static int task_wait(task *t, int lead_ok) {
  pthread_mutex_lock(&t->tmu);
  while (!t->done && !(lead_ok && t->lead)) pthread_cond_wait(&t->cv, &t->tmu);
  int done = t->done;
  t->lead = 0;
  pthread_mutex_unlock(&t->tmu);
  return done;
}

static int64_t elapsed_us(const struct timespec *since) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)(now.tv_sec - since->tv_sec) * 1000000 + (now.tv_nsec - since->tv_nsec) / 1000;
}

static int same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static int same_aliases(const char *const *a, const char *const *b, int n) {
  if (!a || !b) return a == b;
  for (int i = 0; i < n; i++)
    if (!same_str(a[i], b[i])) return 0;
  return 1;
}

/* Can a and b share one run? With pad_variable_length_inputs, inputs whose dimensions past 0
 * differ can (TF Serving's BatchingSession pads them); without it, such tasks go to separate
 * batches (TF Serving would fail the merged batch). */
static int compatible(const task *a, const task *b, int pad) {
  if (a->model != b->model || !same_str(a->key, b->key) || a->nin != b->nin || a->nout != b->nout) return 0;
  if (!same_aliases(a->in_aliases, b->in_aliases, a->nin) || !same_aliases(a->out_aliases, b->out_aliases, a->nout))
    return 0;
  for (int i = 0; i < a->nin; i++) {
    const sm_tensor *x = a->inputs[i], *y = b->inputs[i];
    int r = sm_tensor_rank(x);
    if (sm_tensor_dtype(x) != sm_tensor_dtype(y) || r != sm_tensor_rank(y)) return 0;
    if (!pad && r > 1 && memcmp(sm_tensor_dims(x) + 1, sm_tensor_dims(y) + 1, (size_t)(r - 1) * sizeof(int64_t)) != 0) return 0;
  }
  return 1;
}

/* Rows of a task that can be batched, or 0 when it must run alone: every input of rank >= 1 with
 * the same dimension 0, of a dtype that can be copied row by row. */
static int64_t batchable_rows(sm_tensor *const *inputs, int nin) {
  if (nin <= 0 || !inputs) return 0;
  int64_t rows = -1;
  for (int i = 0; i < nin; i++) {
    const sm_tensor *t = inputs[i];
    if (!t || sm_tensor_rank(t) < 1) return 0;
    int dt = sm_tensor_dtype(t);
    if (dt == SM_RESOURCE || dt == SM_VARIANT) return 0;
    if (dt != SM_STRING && sm_dtype_size(dt) == 0) return 0;
    int64_t d0 = sm_tensor_dims(t)[0];
    if (d0 <= 0 || (rows >= 0 && d0 != rows)) return 0;
    rows = d0;
  }
  return rows;
}

static int64_t padded_size(const sm_batcher *b, int64_t rows) {
  for (int i = 0; i < b->p.nallowed; i++)
    if (b->allowed[i] >= rows) return b->allowed[i];
  return rows;
}

/* Copies rows [from, from+n) of src into dst starting at row `at` (same dtype and inner dims). */
static sm_status *copy_rows(sm_tensor *dst, int64_t at, const sm_tensor *src, int64_t from, int64_t n) {
  int64_t d0 = sm_tensor_dims(src)[0];
  int64_t row = d0 ? sm_tensor_num_elements(src) / d0 : 0;
  if (sm_tensor_dtype(src) == SM_STRING) {
    for (int64_t i = 0; i < n * row; i++) {
      size_t len = 0;
      const char *s = sm_tensor_string(src, from * row + i, &len);
      sm_status *st = sm_tensor_set_string(dst, at * row + i, s, len);
      if (st) return st;
    }
    return NULL;
  }
  size_t es = sm_dtype_size(sm_tensor_dtype(src));
  if (n > 0 && row > 0)
    memcpy((char *)sm_tensor_data(dst) + (size_t)(at * row) * es, (const char *)sm_tensor_data(src) + (size_t)(from * row) * es,
           (size_t)(n * row) * es);
  return NULL;
}

/* Writes the first n rows of src into dst's rows [at, at+n), each row padded at the end of every
 * dimension past 0 to dst's sizes with src's first element, as TF Serving's AddPadding
 * (batching_util.cc: ranks 1 to 6, an empty tensor cannot be padded). Without padding to do this
 * is copy_rows. */
static sm_status *put_rows(sm_tensor *dst, int64_t at, const sm_tensor *src, int64_t n) {
  int r = sm_tensor_rank(src);
  const int64_t *dd = sm_tensor_dims(dst), *sd = sm_tensor_dims(src);
  if (r <= 1 || !memcmp(dd + 1, sd + 1, (size_t)(r - 1) * sizeof *dd)) return copy_rows(dst, at, src, 0, n);
  if (r > 6) return sm_status_new(SM_INVALID_ARGUMENT, "Only tensors with rank from 1 to 6 can be padded.");
  if (sm_tensor_num_elements(src) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Got empty tensor in batch of non-empty tensors.");
  int dt = sm_tensor_dtype(src);
  size_t es = dt == SM_STRING ? 0 : sm_dtype_size(dt);
  int64_t dstride[6], inner_d = 1, inner_s = 1;
  for (int k = r - 1; k >= 1; k--) {
    dstride[k] = inner_d;
    inner_d *= dd[k];
    inner_s *= sd[k];
  }
  dstride[0] = inner_d;
  /* every element of the block gets the pad value, then src's elements go to their places */
  size_t plen = 0;
  const char *pad = es ? (const char *)sm_tensor_data(src) : sm_tensor_string(src, 0, &plen);
  char *d = es ? sm_tensor_data(dst) : NULL;
  sm_status *st = NULL;
  for (int64_t i = at * inner_d; !st && i < (at + n) * inner_d; i++) {
    if (es) memcpy(d + (size_t)i * es, pad, es);
    else st = sm_tensor_set_string(dst, i, pad, plen);
  }
  int64_t run = sd[r - 1], runs = run ? n * inner_s / run : 0;
  for (int64_t c = 0; !st && c < runs; c++) {
    int64_t rest = c, off = at * inner_d;
    for (int k = r - 2; k >= 0; k--) { /* the run's index in dims 0..r-2 of src */
      off += (rest % sd[k]) * dstride[k];
      rest /= sd[k];
    }
    if (es) {
      memcpy(d + (size_t)off * es, (const char *)sm_tensor_data(src) + (size_t)(c * run) * es, (size_t)run * es);
    } else {
      for (int64_t j = 0; !st && j < run; j++) {
        size_t len = 0;
        const char *v = sm_tensor_string(src, c * run + j, &len);
        st = sm_tensor_set_string(dst, off + j, v, len);
      }
    }
  }
  return st;
}

/* Session::Run on the signature's tensor names, as TF Serving's BatchingSession does: like an
 * unbatched REST request, a batch is not held to the TensorInfo's static shape (TF Serving's
 * tutorial feeds [3] to half_plus_two's [?,1] input). */
static sm_status *run_by_names(sm_model *m, const char *key, const char *const *in_aliases, sm_tensor *const *inputs,
                               int nin, const char *const *out_aliases, int nout, sm_tensor **outputs,
                               const sm_run_options *ro) {
  const sm_tensor_info *ins, *outs;
  int nins, nouts;
  sm_status *s = sm_model_signature_inputs(m, key, &ins, &nins);
  if (!s) s = sm_model_signature_outputs(m, key, &outs, &nouts);
  if (s) return s;
  if (!out_aliases && nout != nouts)
    return sm_status_new(SM_INVALID_ARGUMENT, "signature %s has %d outputs, %d requested", key, nouts, nout);
  const char **feeds = calloc((size_t)nin + 1, sizeof *feeds);
  const char **fetches = calloc((size_t)nout + 1, sizeof *fetches);
  if (!feeds || !fetches) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  for (int i = 0; !s && i < nin; i++) {
    for (int j = 0; j < nins && !feeds[i]; j++)
      if (!strcmp(ins[j].alias, in_aliases[i])) feeds[i] = ins[j].name;
    if (!feeds[i]) s = sm_status_new(SM_INVALID_ARGUMENT, "input tensor alias not found in signature: %s", in_aliases[i]);
  }
  for (int i = 0; !s && i < nout; i++) {
    for (int j = 0; j < nouts && !fetches[i]; j++)
      if (!strcmp(outs[j].alias, out_aliases ? out_aliases[i] : outs[i].alias)) fetches[i] = outs[j].name;
    if (!fetches[i])
      s = sm_status_new(SM_INVALID_ARGUMENT, "output tensor alias not found in signature: %s",
                        out_aliases ? out_aliases[i] : "?");
  }
  if (!s) s = sm_model_session_run_opts(m, feeds, inputs, nin, fetches, nout, NULL, 0, outputs, ro);
  free(feeds);
  free(fetches);
  return s;
}

/* Runs tasks[0..n) as one batch under the latest of their deadlines (none if one has none);
 * sets every task's status and outputs. */
static void run_batch(sm_batcher *b, task **ts, int n) {
  task *t0 = ts[0];
  sm_run_options ro = {0};
  for (int k = 0; k < n; k++) {
    if (!ts[k]->deadline_us) {
      ro.deadline_us = 0;
      break;
    }
    if (ts[k]->deadline_us > ro.deadline_us) ro.deadline_us = ts[k]->deadline_us;
  }
  /* the memory budget: the sum of the requests' (a merged batch holds them all), none if one has none */
  for (int k = 0; k < n; k++) {
    if (!ts[k]->max_run_bytes) {
      ro.max_run_bytes = 0;
      break;
    }
    ro.max_run_bytes += ts[k]->max_run_bytes;
  }
  int64_t total = 0;
  for (int k = 0; k < n; k++) total += ts[k]->rows;
  int64_t padded = padded_size(b, total);
  if (n == 1 && padded == total) {
    t0->status = run_by_names(t0->model, t0->key, t0->in_aliases, t0->inputs, t0->nin, t0->out_aliases, t0->nout,
                              t0->outputs, &ro);
    return;
  }
  sm_status *st = NULL;
  sm_tensor **merged = calloc((size_t)t0->nin, sizeof *merged);
  sm_tensor **outs = calloc((size_t)t0->nout, sizeof *outs);
  if (!merged || !outs) st = sm_status_new(SM_NO_MEMORY, "out of memory merging a batch of %d requests", n);
  for (int i = 0; !st && i < t0->nin; i++) {
    const sm_tensor *x = t0->inputs[i];
    int64_t dims[SM_MAX_RANK];
    int r = sm_tensor_rank(x);
    memcpy(dims, sm_tensor_dims(x), (size_t)r * sizeof *dims);
    for (int k = 1; k < n; k++) /* CalculateMaxDimSizes: equal unless padding is on */
      for (int j = 1; j < r; j++)
        if (sm_tensor_dims(ts[k]->inputs[i])[j] > dims[j]) dims[j] = sm_tensor_dims(ts[k]->inputs[i])[j];
    dims[0] = padded;
    st = sm_tensor_new(sm_tensor_dtype(x), r, dims, &merged[i]);
    int64_t at = 0;
    for (int k = 0; !st && k < n; k++) {
      st = put_rows(merged[i], at, ts[k]->inputs[i], ts[k]->rows);
      at += ts[k]->rows;
    }
    /* up to the allowed batch size: copies of the last task's first row (MergeInputTensors) */
    for (; !st && at < padded; at++) st = put_rows(merged[i], at, ts[n - 1]->inputs[i], 1);
  }
  if (!st) st = run_by_names(t0->model, t0->key, t0->in_aliases, merged, t0->nin, t0->out_aliases, t0->nout, outs, &ro);
  for (int j = 0; !st && j < t0->nout; j++) {
    if (sm_tensor_rank(outs[j]) < 1)
      st = sm_status_new(SM_FAILED_PRECONDITION, "Batched output tensor has 0 dimensions");
    else if (sm_tensor_dims(outs[j])[0] != padded)
      st = sm_status_new(SM_FAILED_PRECONDITION,
                         "Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of "
                         "the input tensors");
  }
  /* Split. */
  int64_t at = 0;
  for (int k = 0; !st && k < n; k++) {
    for (int j = 0; !st && j < t0->nout; j++) {
      int64_t dims[SM_MAX_RANK];
      int r = sm_tensor_rank(outs[j]);
      memcpy(dims, sm_tensor_dims(outs[j]), (size_t)r * sizeof *dims);
      dims[0] = ts[k]->rows;
      st = sm_tensor_new(sm_tensor_dtype(outs[j]), r, dims, &ts[k]->outputs[j]);
      if (!st) st = copy_rows(ts[k]->outputs[j], 0, outs[j], at, ts[k]->rows);
    }
    at += ts[k]->rows;
  }
  if (st) {
    for (int k = 0; k < n; k++) {
      for (int j = 0; j < t0->nout; j++) {
        sm_tensor_free(ts[k]->outputs[j]);
        ts[k]->outputs[j] = NULL;
      }
      ts[k]->status = k == 0 ? st : sm_status_new(sm_status_code(st), "%s", sm_status_message(st));
    }
  }
  for (int i = 0; merged && i < t0->nin; i++) sm_tensor_free(merged[i]);
  for (int j = 0; outs && j < t0->nout; j++) sm_tensor_free(outs[j]);
  free(merged);
  free(outs);
}

/* Under mu: rows queued that could join the head's batch. */
static int64_t compatible_rows(const task *head, int pad) {
  int64_t rows = 0;
  for (const task *t = head; t; t = t->next)
    if (t == head || compatible(head, t, pad)) rows += t->rows;
  return rows;
}

/* Under mu: takes the head's batch out of the queue (the head and the compatible tasks behind it,
 * in order, up to max_batch_size rows) into *picked, grown as needed; returns how many. */
static int take_batch(sm_batcher *b, task ***picked, int *cap) {
  task *head = b->head;
  int n = 0;
  int64_t rows = 0;
  task **pp = &b->head, *prev = NULL;
  while (*pp) {
    task *t = *pp;
    if ((t == head || compatible(head, t, b->p.pad_variable_length_inputs)) && rows + t->rows <= b->p.max_batch_size) {
      if (n == *cap) {
        task **g = realloc(*picked, (size_t)(*cap ? *cap * 2 : 16) * sizeof *g);
        if (!g) break; /* run what we have */
        *picked = g;
        *cap = *cap ? *cap * 2 : 16;
      }
      (*picked)[n++] = t;
      rows += t->rows;
      *pp = t->next;
      if (b->tail == t) b->tail = prev;
      continue;
    }
    prev = t;
    pp = &t->next;
  }
  if (!n) { /* out of memory for even one: the head is refused (and leaves the queue) */
    b->head = head->next;
    if (b->tail == head) b->tail = NULL;
    b->queued_rows -= head->rows;
    head->status = sm_status_new(SM_NO_MEMORY, "out of memory in a batch thread");
    task_done(head);
    return 0;
  }
  b->queued_rows -= rows;
  return n;
}

/* Under mu (released while the batch runs and its tasks are answered): runs picked[0..n) and
 * answers them. As TF Serving's
 * BatchingSession: a batch whose every request's deadline passed while queued is refused
 * (RESOURCE_EXHAUSTED, its words); one with any live request runs whole, under the latest
 * deadline (run_batch). */
static void run_picked(sm_batcher *b, task **picked, int n) {
  int64_t now = sm_monotonic_us();
  int live = 0;
  for (int k = 0; k < n; k++)
    if (!picked[k]->deadline_us || now < picked[k]->deadline_us) live++;
  if (!live) {
    for (int k = 0; k < n; k++) {
      picked[k]->status = sm_status_new(SM_RESOURCE_EXHAUSTED, "Run() timeout exceeded while waiting in batching queue");
      task_done(picked[k]);
    }
    return;
  }
  b->nbatches++;
  b->ntasks += n;
  pthread_mutex_unlock(&b->mu);
  run_batch(b, picked, n);
  for (int k = 0; k < n; k++) task_done(picked[k]);
  pthread_mutex_lock(&b->mu);
}

static void *batch_main(void *arg) {
  sm_batcher *b = arg;
  int cap = 0;
  task **picked = NULL;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->head && !b->stop) pthread_cond_wait(&b->work, &b->mu);
    if (!b->head) break; /* stop, queue drained */
    task *head = b->head;
    /* Wait for a full batch or the head's timeout; on stop, go now. */
    int64_t waited = elapsed_us(&head->enqueued);
    if (!b->stop && !b->hurry && compatible_rows(head, b->p.pad_variable_length_inputs) < b->p.max_batch_size && waited < b->p.batch_timeout_micros) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t left = b->p.batch_timeout_micros - waited;
      ts.tv_sec += (time_t)(left / 1000000);
      ts.tv_nsec += (long)(left % 1000000) * 1000;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&b->work, &b->mu, &ts);
      continue; /* re-examine: the head may have been taken, or the batch may be full */
    }
    int n = take_batch(b, &picked, &cap);
    if (b->head) pthread_cond_signal(&b->work); /* what is left needs a thread to time it */
    if (n) run_picked(b, picked, n);
  }
  pthread_mutex_unlock(&b->mu);
  free(picked);
  return NULL;
}

/* Under mu, batch_timeout_micros 0: the callers run the batches themselves (leader/followers).
 * A caller that finds fewer than num_batch_threads batches running takes the queue's head batch
 * (its own task among them when the queue was empty) and runs it on its thread; callers that
 * come while the batches run wait, and the next batch takes all of them. Batches form exactly as
 * with batch threads and timeout 0 (each takes what queued while the ones before ran), without
 * the two thread switches per request of handing every task to a batch thread and back: with
 * the seed CNN over REST a batch thread mostly ran batches of one (bench/RESULTS.md). Called
 * under mu; returns with mu released. A caller answered by another's batch returns without
 * taking mu again; a leader whose own task is answered hands the lead to the oldest waiting
 * caller when more queued meanwhile. */
static void lead_or_wait(sm_batcher *b, task *t) {
  task **picked = NULL;
  int cap = 0;
  for (;;) {
    if (b->running < b->p.num_batch_threads && b->head) {
      b->running++;
      int n = take_batch(b, &picked, &cap);
      if (n) run_picked(b, picked, n);
      b->running--;
      pthread_mutex_lock(&t->tmu);
      int done = t->done;
      pthread_mutex_unlock(&t->tmu);
      if (!done) continue;
      if (b->head && b->running < b->p.num_batch_threads) {
        task *w = b->head;
        while (w && w->done_fn) w = w->next;
        if (!w) continue; /* only parked tasks are left: nobody else would run them */
        task_lead(w);
      }
      break;
    }
    pthread_mutex_unlock(&b->mu);
    if (task_wait(t, 1)) {
      free(picked);
      return;
    }
    pthread_mutex_lock(&b->mu);
  }
  pthread_mutex_unlock(&b->mu);
  free(picked);
}

sm_status *sm__batcher_new(const sm_batching_params *p, sm_batcher **out) {
  *out = NULL;
  sm_batching_params q = {.max_batch_size = 32, .batch_timeout_micros = 1000, .num_batch_threads = 0,
                          .max_enqueued_batches = 100};
  if (p) q = *p;
  if (q.num_batch_threads == 0) q.num_batch_threads = cores();
  if (q.max_batch_size > (1 << 24))
    return sm_status_new(SM_OUT_OF_RANGE, "max_batch_size %lld is past this server's limit of %d",
                         (long long)q.max_batch_size, 1 << 24);
  sm_status *s = validate_params(&q, "batching parameters");
  if (s) return s;
  sm_batcher *b = calloc(1, sizeof *b);
  if (!b) return sm_status_new(SM_NO_MEMORY, "out of memory creating a batcher");
  b->p = q;
  if (q.nallowed) {
    b->allowed = malloc((size_t)q.nallowed * sizeof *b->allowed);
    if (!b->allowed) {
      free(b);
      return sm_status_new(SM_NO_MEMORY, "out of memory creating a batcher");
    }
    memcpy(b->allowed, q.allowed_batch_sizes, (size_t)q.nallowed * sizeof *b->allowed);
  }
  b->p.allowed_batch_sizes = b->allowed;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->work, NULL);
  b->threads = calloc((size_t)q.num_batch_threads, sizeof *b->threads);
  if (!b->threads) {
    sm__batcher_free(b);
    return sm_status_new(SM_NO_MEMORY, "out of memory creating a batcher");
  }
  const char *mode = getenv("SM_BATCH_THREADS"); /* 1: batch threads even at timeout 0 (A/B runs) */
  b->callers_run = q.batch_timeout_micros == 0 && !(mode && atoi(mode) == 1);
  for (int i = 0; !b->callers_run && i < q.num_batch_threads; i++) {
    if (pthread_create(&b->threads[i], NULL, batch_main, b) != 0) {
      sm__batcher_free(b);
      return sm_status_new(SM_INTERNAL, "cannot start batch thread %d", i);
    }
    b->nthreads++;
  }
  *out = b;
  return NULL;
}

void sm__batcher_free(sm_batcher *b) {
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  b->stop = 1;
  pthread_cond_broadcast(&b->work);
  pthread_mutex_unlock(&b->mu);
  for (int i = 0; i < b->nthreads; i++) pthread_join(b->threads[i], NULL);
  free(b->threads);
  free(b->allowed);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->work);
  free(b);
}

void sm__batcher_hurry(sm_batcher *b) {
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  b->hurry = 1;
  pthread_cond_broadcast(&b->work);
  pthread_mutex_unlock(&b->mu);
}

void sm__batcher_stats(sm_batcher *b, int64_t *batches, int64_t *tasks) {
  pthread_mutex_lock(&b->mu);
  *batches = b->nbatches;
  *tasks = b->ntasks;
  pthread_mutex_unlock(&b->mu);
}

/* Fills t for one request, or returns why it does not go through the queue: *alone set when it
 * runs by itself on the caller's thread (not batchable), else the error. */
static sm_status *task_init(sm_batcher *b, task *t, sm_model *model, const char *key, const char *const *in_aliases,
                            sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                            sm_tensor **outputs, const sm_run_options *opts, int *alone) {
  *alone = 0;
  if (!model) return sm_status_new(SM_INVALID_ARGUMENT, "batcher: no servable given");
  int64_t rows = batchable_rows(inputs, nin);
  if (rows == 0 || nout <= 0 || !outputs) {
    *alone = 1;
    return NULL;
  }
  if (rows > b->p.max_batch_size)
    return sm_status_new(SM_INVALID_ARGUMENT, "Task size %lld is larger than maximum input batch size %lld",
                         (long long)rows, (long long)b->p.max_batch_size);
  for (int j = 0; j < nout; j++) outputs[j] = NULL;
  *t = (task){.model = model, .key = key, .in_aliases = in_aliases, .inputs = inputs, .nin = nin,
              .out_aliases = out_aliases, .nout = nout, .outputs = outputs, .rows = rows,
              .deadline_us = opts ? opts->deadline_us : 0, .max_run_bytes = opts ? opts->max_run_bytes : 0};
  clock_gettime(CLOCK_MONOTONIC, &t->enqueued);
  return NULL;
}

/* Queues t (refused when stopping or full); on success returns with mu held. */
static sm_status *enqueue(sm_batcher *b, task *t) {
  pthread_mutex_lock(&b->mu);
  sm_status *s = NULL;
  /* SharedBatchScheduler's queue limit, counted in batches (its words and code,
   * shared_batch_scheduler.h). */
  int64_t batches = (b->queued_rows + t->rows + b->p.max_batch_size - 1) / b->p.max_batch_size;
  if (b->stop)
    s = sm_status_new(SM_UNAVAILABLE, "the batcher is shutting down");
  else if (batches > b->p.max_enqueued_batches)
    s = sm_status_new(SM_UNAVAILABLE, "The batch scheduling queue to which this task was submitted is full");
  if (s) {
    pthread_mutex_unlock(&b->mu);
    return s;
  }
  int was_empty = !b->head;
  if (b->tail)
    b->tail->next = t;
  else
    b->head = t;
  b->tail = t;
  b->queued_rows += t->rows;
  /* With batch threads, one needs waking only when there is a new head to time, or when the
   * queue may hold a full batch (SharedBatchScheduler also wakes its threads only for a
   * schedulable batch); every other arrival waits for the head's timeout. Waking the thread on
   * each arrival cost a context switch per request, and with batch_timeout_micros > 0 it tripled
   * the server's kernel time per image (bench/RESULTS.md). */
  if (!b->callers_run && (was_empty || b->queued_rows >= b->p.max_batch_size)) pthread_cond_signal(&b->work);
  return NULL;
}

sm_status *sm__batcher_run(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                          sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                          sm_tensor **outputs, const sm_run_options *opts) {
  sm_model *model = sm__servable_model(sv);
  task t;
  int alone = 0;
  sm_status *s = task_init(b, &t, model, key, in_aliases, inputs, nin, out_aliases, nout, outputs, opts, &alone);
  if (s) return s;
  if (alone) return run_by_names(model, key, in_aliases, inputs, nin, out_aliases, nout, outputs, opts);
  pthread_cond_init(&t.cv, NULL);
  pthread_mutex_init(&t.tmu, NULL);
  s = enqueue(b, &t);
  if (!s && b->callers_run) {
    lead_or_wait(b, &t);
  } else if (!s) {
    pthread_mutex_unlock(&b->mu);
    task_wait(&t, 0);
  }
  pthread_cond_destroy(&t.cv);
  pthread_mutex_destroy(&t.tmu);
  return s ? s : t.status;
}

void sm__batcher_submit(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                        sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                        sm_tensor **outputs, const sm_run_options *opts, sm_batch_done_fn done, void *arg) {
  sm_model *model = sm__servable_model(sv);
  task *t = calloc(1, sizeof *t);
  int alone = 0, queued = 0;
  sm_status *s = t ? task_init(b, t, model, key, in_aliases, inputs, nin, out_aliases, nout, outputs, opts, &alone)
                   : sm_status_new(SM_NO_MEMORY, "out of memory queueing a request");
  if (!s && alone) s = run_by_names(model, key, in_aliases, inputs, nin, out_aliases, nout, outputs, opts);
  if (!s && !alone) {
    t->done_fn = done;
    t->done_arg = arg;
    s = enqueue(b, t);
    queued = !s;
  }
  if (!queued) {
    free(t);
    done(arg, s);
    return;
  }
  if (!b->callers_run) {
    pthread_mutex_unlock(&b->mu);
    return;
  }
  /* No batch threads: this caller runs batches until the queue is empty, unless enough already
   * run (they take what queued, this task among it, before they stop). */
  task **picked = NULL;
  int cap = 0;
  while (b->head && b->running < b->p.num_batch_threads) {
    b->running++;
    int n = take_batch(b, &picked, &cap);
    if (n) run_picked(b, picked, n);
    b->running--;
  }
  pthread_mutex_unlock(&b->mu);
  free(picked);
}
