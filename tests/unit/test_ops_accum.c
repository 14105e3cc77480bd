/* test_ops_accum.c - TF1 gradient accumulators, TemporaryVariable and bool scatters (session 23, h3)
 * against TensorFlow: the TF1 SavedModel that tools/gen_accum_cases.py writes (tests/fixtures/accum:
 * ConditionalAccumulator float MEAN and double SUM, ResourceConditionalAccumulator half,
 * SparseConditionalAccumulator float MEAN and double SUM, TemporaryVariable + DestroyTemporaryVariable,
 * ResourceScatterNdAdd/Sub/Update on a bool variable, ScatterNd and ScatterNdNonAliasingAdd on bool, a
 * tf.CriticalSection: MutexV2, MutexLock, ConsumeMutexLock) is
 * loaded with the C API and its signatures are called in TF's order (accum_calls.h: inputs and TF's
 * outputs or error text), so each call sees what the calls before it left: gradients applied in one
 * run and taken in a later one, stale ones dropped, global steps moved, TF's shape errors. By hand: a
 * take that waits until another thread's run applies enough gradients; one that nothing feeds ends at
 * the run's deadline and leaves the sum as it was; a gradient past the run's memory budget is
 * refused; many threads apply at once and the sum counts every one; a reload starts empty; 4 threads
 * add through a CriticalSection's read-then-assign and no add is lost (the mutex excludes them). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_call.h"
#include "e5_run.h"

#include "accum_calls.h"

static sm_model *load(void) { return e5_load(SM_SOURCE_DIR "/tests/fixtures/accum"); }

static void test_calls(void) {
  sm_model *m = load();
  if (!m) return;
  e5_run_calls(m, accum_calls, (int)(sizeof accum_calls / sizeof accum_calls[0]), NULL);
  sm_model_free(m);
}

/* ---- by hand ------------------------------------------------------------------------------------ */

static sm_tensor *scalar(int dtype, int64_t v) { return e5_scalar(dtype, v); }

/* acc_apply(g = [a, b], step) -> num */
static sm_status *apply(sm_model *m, float a, float b, int64_t step, const sm_run_options *ro) {
  int64_t two = 2;
  sm_tensor *in[2] = {NULL, scalar(SM_INT64, step)}, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &two, &in[0]));
  if (in[0]) {
    ((float *)sm_tensor_data(in[0]))[0] = a;
    ((float *)sm_tensor_data(in[0]))[1] = b;
  }
  const char *names[2] = {"g", "step"}, *on = "num";
  sm_status *st = sm_model_run_opts(m, "acc_apply", names, in, 2, &on, 1, &out, ro);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_tensor_free(out);
  return st;
}
/* acc_take(n) -> avg into got[2] */
static sm_status *take(sm_model *m, int n, const sm_run_options *ro, float *got) {
  sm_tensor *in = scalar(SM_INT32, n), *out = NULL;
  const char *iname = "n", *on = "avg";
  sm_status *st = sm_model_run_opts(m, "acc_take", &iname, &in, 1, &on, 1, &out, ro);
  if (!st && got) memcpy(got, sm_tensor_data(out), 2 * sizeof(float));
  sm_tensor_free(in);
  sm_tensor_free(out);
  return st;
}
static int num(sm_model *m) {
  const char *on = "num";
  sm_tensor *out = NULL;
  int v = -1;
  sm_status *st = sm_model_run(m, "acc_num", NULL, NULL, 0, &on, 1, &out);
  CHECK_OK(st);
  if (out) v = *(const int32_t *)sm_tensor_data(out);
  sm_tensor_free(out);
  return v;
}

typedef struct {
  sm_model *m;
  sm_status *st;
  float got[2];
  int which;
} worker;

static void *taker(void *p) {
  worker *w = p;
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 20 * 1000 * 1000};
  w->st = take(w->m, 2, &ro, w->got);
  return NULL;
}

static void test_blocking(void) {
  sm_model *m = load();
  if (!m) return;
  /* too few gradients and nothing feeds more: the deadline ends the wait, the sum stays */
  CHECK_OK(apply(m, 1, 1, 0, NULL));
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 50 * 1000};
  sm_status *st = take(m, 2, &ro, NULL);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  CHECK(num(m) == 1);
  /* a waiting take gets the mean once another thread's run applies the second gradient */
  worker w = {.m = m};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, taker, &w) == 0);
  CHECK_OK(apply(m, 3, 5, 0, NULL));
  pthread_join(th, NULL);
  CHECK_OK(w.st);
  CHECK(w.got[0] == 2 && w.got[1] == 3);
  CHECK(num(m) == 0);
  /* the take moved the global step to 1: step 0 is stale now */
  CHECK_OK(apply(m, 1, 1, 0, NULL));
  CHECK(num(m) == 0);
  sm_model_free(m);
  /* a reload starts with an empty accumulator at global step 0 */
  m = load();
  if (!m) return;
  CHECK(num(m) == 0);
  CHECK_OK(apply(m, 1, 1, 0, NULL));
  CHECK(num(m) == 1);
  /* a gradient past the run's memory budget is refused (a [1M] one into the unshaped half accumulator) */
  int64_t big = 1 << 20;
  sm_tensor *in[2] = {NULL, scalar(SM_INT64, 0)}, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &big, &in[0]));
  const char *names[2] = {"g", "step"}, *on = "num";
  sm_run_options budget = {.max_run_bytes = 1 << 16};
  st = sm_model_run_opts(m, "r_apply", names, in, 2, &on, 1, &out, &budget);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_model_free(m);
}

enum { NTHREADS = 4, PER = 100 };

/* Runs fn on NTHREADS threads (ws[i].which = i) and joins them; each must end without error. */
static void run_workers(sm_model *m, void *(*fn)(void *), worker *ws) {
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    ws[i] = (worker){.m = m, .which = i};
    CHECK(pthread_create(&th[i], NULL, fn, &ws[i]) == 0);
  }
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_OK(ws[i].st);
  }
}
static void *applier(void *p) {
  worker *w = p;
  for (int i = 0; i < PER && !w->st; i++) w->st = apply(w->m, 1, (float)w->which, 0, NULL);
  return NULL;
}

/* 4 threads apply 100 gradients each: the count and the mean hold every one. */
static void test_threads(void) {
  sm_model *m = load();
  if (!m) return;
  worker ws[NTHREADS];
  run_workers(m, applier, ws);
  CHECK(num(m) == NTHREADS * PER);
  float got[2] = {0, 0};
  CHECK_OK(take(m, NTHREADS * PER, NULL, got));
  CHECK(got[0] == 1 && got[1] == 1.5f); /* (0 + 1 + 2 + 3) * 100 / 400 */
  sm_model_free(m);
}

/* 4 threads add 1 through cs_add (CriticalSection.execute around v = v + x, a read then an assign)
 * 50 times each: without the mutex, two runs would read the same value and lose an add. */
static void *cs_adder(void *p) {
  worker *w = p;
  sm_tensor *x = NULL, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &x));
  if (x) *(float *)sm_tensor_data(x) = 1;
  const char *in = "x", *on = "v";
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 60 * 1000 * 1000};
  for (int i = 0; i < 50 && !w->st; i++) {
    w->st = sm_model_run_opts(w->m, "cs_add", &in, &x, 1, &on, 1, &out, &ro);
    if (!w->st && out) w->got[0] = *(const float *)sm_tensor_data(out);
    sm_tensor_free(out);
    out = NULL;
  }
  sm_tensor_free(x);
  return NULL;
}

static void test_critical_section(void) {
  sm_model *m = load();
  if (!m) return;
  worker ws[NTHREADS];
  run_workers(m, cs_adder, ws);
  float best = 0;
  for (int i = 0; i < NTHREADS; i++)
    if (ws[i].got[0] > best) best = ws[i].got[0];
  CHECK(best == NTHREADS * 50);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_blocking();
  test_threads();
  test_critical_section();
  TEST_MAIN_END();
}
