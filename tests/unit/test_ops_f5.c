/* test_ops_f5.c - TF1 queues (session 21, f5) against TensorFlow: the TF1 SavedModel that
 * tools/gen_f5_cases.py writes (tests/fixtures/queues: FIFOQueueV2, PaddingFIFOQueueV2,
 * PriorityQueueV2, a seeded RandomShuffleQueueV2, an unshaped FIFOQueueV2 and the V1 ref FIFOQueue)
 * is loaded with the C API and its signatures are called in TF's order (f5_calls.h: inputs and TF's
 * outputs or error text), so each call sees the queues the calls before it left: enqueues in one
 * run, dequeues in later ones, closes, TF's errors. By hand: a dequeue on an empty queue waits until
 * another thread's run enqueues; one that nothing feeds ends at the run's deadline; a close wakes a
 * waiting dequeue with TF's OutOfRange error; many threads enqueue and dequeue one queue at once; a
 * reload starts with empty queues. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_run.h"

#include "f5_calls.h"

static sm_model *load(void) {
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(SM_SOURCE_DIR "/tests/fixtures/queues", tags, 1, NULL, &m));
  return m;
}

/* TF names a queue without a shared_name with a process-wide count ("'_0_v1q'"): compare from the
 * quote that ends the name. */
static const char *after_private_name(const char *msg) {
  const char *q = strstr(msg, "'_");
  const char *e = q ? strchr(q + 1, '\'') : NULL;
  return e ? e : msg;
}

static void test_calls(void) {
  sm_model *m = load();
  if (!m) return;
  e5_run_calls(m, f5_calls, (int)(sizeof f5_calls / sizeof f5_calls[0]), after_private_name);
  sm_model_free(m);
}

/* ---- by hand ------------------------------------------------------------------------------------ */

static sm_tensor *scalar_i64(int64_t v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 0, NULL, &t));
  if (t) *(int64_t *)sm_tensor_data(t) = v;
  return t;
}

/* v1_enq(x) -> size; v1_deq() -> x, with run options. */
static sm_status *enq(sm_model *m, int64_t v) {
  const char *in = "x", *on = "size";
  sm_tensor *x = scalar_i64(v), *out = NULL;
  sm_status *st = sm_model_run(m, "v1_enq", &in, &x, 1, &on, 1, &out);
  sm_tensor_free(x);
  sm_tensor_free(out);
  return st;
}
static sm_status *deq(sm_model *m, const sm_run_options *ro, int64_t *v) {
  const char *on = "x";
  sm_tensor *out = NULL;
  sm_status *st = sm_model_run_opts(m, "v1_deq", NULL, NULL, 0, &on, 1, &out, ro);
  if (!st && v) *v = *(const int64_t *)sm_tensor_data(out);
  sm_tensor_free(out);
  return st;
}

typedef struct {
  sm_model *m;
  int64_t got;
  sm_status *st;
  int which;
} worker;

static void *dequeuer(void *p) {
  worker *w = p;
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 20 * 1000 * 1000};
  w->st = deq(w->m, &ro, &w->got);
  return NULL;
}

static void *closer(void *p) {
  worker *w = p;
  const char *on = "closed";
  sm_tensor *out = NULL;
  w->st = sm_model_run(w->m, "v1_close", NULL, NULL, 0, &on, 1, &out);
  sm_tensor_free(out);
  return NULL;
}

static void test_blocking(void) {
  sm_model *m = load();
  if (!m) return;
  /* nothing feeds it: the deadline ends the wait */
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 50 * 1000};
  sm_status *st = deq(m, &ro, NULL);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  /* a waiting dequeue gets what another thread's run enqueues (whenever it starts waiting) */
  worker w = {.m = m};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, dequeuer, &w) == 0);
  CHECK_OK(enq(m, 42));
  pthread_join(th, NULL);
  CHECK_OK(w.st);
  CHECK(w.got == 42);
  /* a close wakes a waiting dequeue with TF's error (or the dequeue starts after the close) */
  worker w2 = {.m = m}, wc = {.m = m};
  pthread_t t2, tc;
  CHECK(pthread_create(&t2, NULL, dequeuer, &w2) == 0);
  CHECK(pthread_create(&tc, NULL, closer, &wc) == 0);
  pthread_join(tc, NULL);
  pthread_join(t2, NULL);
  CHECK_OK(wc.st);
  CHECK(w2.st && sm_status_code(w2.st) == SM_OUT_OF_RANGE &&
        strstr(sm_status_message(w2.st), "is closed and has insufficient elements (requested 1, current size 0)"));
  sm_status_free(w2.st);
  st = enq(m, 1);
  CHECK(st && sm_status_code(st) == SM_CANCELLED && strstr(sm_status_message(st), "is closed."));
  sm_status_free(st);
  sm_model_free(m);
  /* a reload starts with an empty, open queue */
  m = load();
  if (!m) return;
  CHECK_OK(enq(m, 5));
  int64_t v = 0;
  CHECK_OK(deq(m, NULL, &v));
  CHECK(v == 5);
  sm_model_free(m);
}

/* A full queue's enqueue waits until the deadline; a huge dequeue_many waits (nothing allocated for
 * it) until the deadline; an element past the run's memory budget is refused. */
static void test_limits(void) {
  sm_model *m = load();
  if (!m) return;
  int64_t d2[2] = {3, 2}, d1 = 3, big = 1 << 20;
  sm_tensor *in[2] = {NULL, NULL}, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d2, &in[0]));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d1, &in[1]));
  const char *names[2] = {"xs", "ys"}, *size = "size", *xn = "x", *nn = "n", *outs[2] = {"x", "y"};
  CHECK_OK(sm_model_run(m, "fifo_enq_many", names, in, 2, &size, 1, &out));
  CHECK(out && *(const int32_t *)sm_tensor_data(out) == 3);
  sm_tensor_free(out);
  out = NULL;
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 50 * 1000};
  sm_status *st = sm_model_run_opts(m, "fifo_enq_many", names, in, 2, &size, 1, &out, &ro);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_tensor *n = NULL, *got[2] = {NULL, NULL};
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &n));
  if (n) *(int32_t *)sm_tensor_data(n) = 0x7fffffff;
  ro.deadline_us = sm_monotonic_us() + 50 * 1000;
  st = sm_model_run_opts(m, "fifo_deq_many", &nn, &n, 1, outs, 2, got, &ro);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  if (n) *(int32_t *)sm_tensor_data(n) = 3; /* the elements are still there */
  CHECK_OK(sm_model_run(m, "fifo_deq_many", &nn, &n, 1, outs, 2, got));
  CHECK(got[1] && sm_tensor_num_elements(got[1]) == 3);
  sm_tensor_free(got[0]);
  sm_tensor_free(got[1]);
  sm_tensor_free(n);
  sm_tensor *x = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &big, &x));
  sm_run_options budget = {.max_run_bytes = 1 << 16};
  st = sm_model_run_opts(m, "u_enq", &xn, &x, 1, &size, 1, &out, &budget);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_tensor_free(x);
  sm_model_free(m);
}

enum { NTHREADS = 4, PER = 200 };
static void *producer(void *p) {
  worker *w = p;
  for (int i = 0; i < PER && !w->st; i++) w->st = enq(w->m, (int64_t)w->which * PER + i + 1);
  return NULL;
}
static void *consumer(void *p) {
  worker *w = p;
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 60 * 1000 * 1000};
  for (int i = 0; i < PER && !w->st; i++) {
    int64_t v = 0;
    w->st = deq(w->m, &ro, &v);
    w->got += v;
  }
  return NULL;
}

/* Every value enqueued by 4 threads is dequeued exactly once by 4 others (sums match). */
static void test_threads(void) {
  sm_model *m = load();
  if (!m) return;
  worker ws[2 * NTHREADS];
  pthread_t th[2 * NTHREADS];
  for (int i = 0; i < 2 * NTHREADS; i++) {
    ws[i] = (worker){.m = m, .which = i % NTHREADS};
    CHECK(pthread_create(&th[i], NULL, i < NTHREADS ? producer : consumer, &ws[i]) == 0);
  }
  int64_t sum = 0;
  for (int i = 0; i < 2 * NTHREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_OK(ws[i].st);
    if (i >= NTHREADS) sum += ws[i].got;
  }
  int64_t n = (int64_t)NTHREADS * PER;
  CHECK(sum == n * (n + 1) / 2);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_blocking();
  test_limits();
  test_threads();
  TEST_MAIN_END();
}
