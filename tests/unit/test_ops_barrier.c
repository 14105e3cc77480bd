/* test_ops_barrier.c - TF1's barriers (session 23, i1) against TensorFlow: the TF1 SavedModel that
 * tools/gen_barrier_cases.py writes (tests/fixtures/barrier: a (float [2], int32 []) barrier and a
 * string one; inserts of either component, takes with and without allow_small_batch, closes with and
 * without cancel_pending_enqueues, sizes, shared-name clashes, TF's refused capacity and timeout) is
 * loaded with the C API and its signatures are called in TF's order (barrier_cases.h: inputs and
 * TF's outputs or error text), so each call sees the barriers the calls before it left. By hand: a
 * take with too few ready tuples ends at the run's deadline; a waiting take gets what another
 * thread's run completes; a negative num_elements is an error; a reload starts empty. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_run.h"

#include "barrier_cases.h"

static sm_model *load(void) {
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(SM_SOURCE_DIR "/tests/fixtures/barrier", tags, 1, NULL, &m));
  return m;
}

static void test_calls(void) {
  sm_model *m = load();
  if (!m) return;
  e5_run_calls(m, barrier_calls, (int)(sizeof barrier_calls / sizeof barrier_calls[0]), NULL);
  sm_model_free(m);
}

/* ---- by hand ------------------------------------------------------------------------------------ */

static const char *const TAKE[] = {"idx", "keys", "v0"}, *const SIZES[] = {"ready", "inc"};

/* s_take of n with a deadline; the first key's first byte in *first. */
static sm_status *take(sm_model *m, int32_t n, int64_t deadline_ms, int64_t *count, char *first) {
  sm_tensor *nt = NULL, *out[3] = {0};
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &nt));
  *(int32_t *)sm_tensor_data(nt) = n;
  const char *in = "n";
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + deadline_ms * 1000};
  sm_status *st = sm_model_run_opts(m, "s_take", &in, &nt, 1, TAKE, 3, out, &ro);
  if (!st) {
    *count = sm_tensor_num_elements(out[1]);
    size_t len = 0;
    const char *k = *count ? sm_tensor_string(out[1], 0, &len) : "";
    if (first) *first = len ? k[0] : 0;
  }
  sm_tensor_free(nt);
  for (int i = 0; i < 3; i++) sm_tensor_free(out[i]);
  return st;
}

static void insert(sm_model *m, const char *key) {
  int64_t one = 1;
  sm_tensor *in[2] = {0}, *out[2] = {0};
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &in[0]));
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &in[1]));
  CHECK_OK(sm_tensor_set_string(in[0], 0, key, strlen(key)));
  CHECK_OK(sm_tensor_set_string(in[1], 0, "v", 1));
  const char *names[2] = {"k", "v"};
  CHECK_OK(sm_model_run(m, "s_ins0", names, in, 2, SIZES, 2, out));
  for (int i = 0; i < 2; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]);
}

typedef struct {
  sm_model *m;
  int64_t count;
  char first;
  sm_status *st;
} worker;

static void *run_worker(void *p) {
  worker *w = p;
  w->st = take(w->m, 2, 20 * 1000, &w->count, &w->first);
  return NULL;
}

static void test_blocking(void) {
  sm_model *m = load();
  if (!m) return;
  int64_t count = 0;
  insert(m, "a");
  sm_status *st = take(m, 2, 50, &count, NULL); /* one ready of two: the deadline ends the wait */
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  worker w = {.m = m};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, run_worker, &w) == 0);
  insert(m, "b"); /* whenever the worker starts waiting, it gets a and b */
  pthread_join(th, NULL);
  CHECK_OK(w.st);
  CHECK(w.count == 2 && w.first == 'a');
  st = take(m, -1, 1000, &count, NULL);
  CHECK(st && sm_status_code(st) == SM_INVALID_ARGUMENT);
  sm_status_free(st);
  insert(m, "c"); /* left ready: freed with the model */
  sm_model_free(m);
  m = load(); /* a reload starts empty */
  if (!m) return;
  st = take(m, 1, 50, &count, NULL);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_blocking();
  TEST_MAIN_END();
}
