/* test_ops_staging.c - TF's staging areas (session 23, h2) against TensorFlow: the TF1 SavedModel that
 * tools/gen_staging_cases.py writes (tests/fixtures/staging: Stage/Unstage/StagePeek/StageSize/StageClear
 * areas, a memory-limited one, a string one, an unordered and an ordered map with full and partial
 * puts, peeks, pops, sizes and clears, a memory-limited map) is loaded with the C API and its
 * signatures are called in TF's order (staging_cases.h: inputs and TF's outputs or error text), so
 * each call sees the areas the calls before it left. By hand: an Unstage on an empty area and a map
 * peek of an absent key end at the run's deadline; a waiting Unstage / map get gets what another
 * thread's run stages; a put into a full area waits until another thread's run takes one; partial
 * map puts ignore capacity as TF's; a negative StagePeek index is an error (TF waits forever); a
 * tuple past the run's memory budget is refused; a reload starts empty. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_run.h"

#include "staging_cases.h"

static sm_model *load(void) { return e5_load(SM_SOURCE_DIR "/tests/fixtures/staging"); }

static void test_calls(void) {
  sm_model *m = load();
  if (!m) return;
  e5_run_calls(m, staging_calls, (int)(sizeof staging_calls / sizeof staging_calls[0]), NULL);
  sm_model_free(m);
}

/* ---- by hand ------------------------------------------------------------------------------------ */

static sm_tensor *scalar(int dtype, int64_t v) { return e5_scalar(dtype, v); }

static sm_tensor *vec_f32(int64_t n, float v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &n, &t));
  for (int64_t i = 0; t && i < n; i++) ((float *)sm_tensor_data(t))[i] = v;
  return t;
}

/* Runs sig with inputs named "k", "x", "y" (those not NULL) and outputs onames[0, nout); the int32 or
 * int64 scalar first output lands in *v. */
static sm_status *call(sm_model *m, const char *sig, int64_t k, int64_t x, const char *const *onames, int nout,
                       int64_t *v, int64_t deadline_ms) {
  const char *inames[3];
  sm_tensor *in[3], *out[4] = {0};
  int nin = 0;
  if (k >= 0) inames[nin] = "k", in[nin++] = scalar(SM_INT64, k);
  if (x >= 0) {
    inames[nin] = "x", in[nin++] = vec_f32(x, 1.f);
    inames[nin] = "y", in[nin++] = scalar(SM_INT32, x);
  }
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + deadline_ms * 1000};
  sm_status *st = sm_model_run_opts(m, sig, inames, in, nin, onames, nout, out, &ro);
  if (!st && v && out[0])
    *v = sm_tensor_dtype(out[0]) == SM_INT64 ? *(const int64_t *)sm_tensor_data(out[0])
                                              : *(const int32_t *)sm_tensor_data(out[0]);
  for (int i = 0; i < nin; i++) sm_tensor_free(in[i]);
  for (int i = 0; i < 4; i++) sm_tensor_free(out[i]);
  return st;
}

static const char *const SIZE[] = {"size", "isize"}, *const XY[] = {"x", "y"}, *const Y[] = {"y"};
static const char *const KXY[] = {"key", "x", "y"};

typedef struct {
  sm_model *m;
  const char *sig;
  int64_t k, x, got;
  const char *const *on;
  int nout;
  sm_status *st;
} worker;

static void *run_worker(void *p) {
  worker *w = p;
  w->st = call(w->m, w->sig, w->k, w->x, w->on, w->nout, &w->got, 20 * 1000);
  return NULL;
}

static void check_code(sm_status *st, sm_code code) {
  CHECK(st && sm_status_code(st) == code);
  if (st && sm_status_code(st) != code) fprintf(stderr, "  got: %s\n", sm_status_message(st));
  sm_status_free(st);
}

static void test_blocking(void) {
  sm_model *m = load();
  if (!m) return;
  int64_t v = 0;
  /* nothing feeds them: the deadline ends the waits */
  check_code(call(m, "st_get", -1, -1, XY, 2, NULL, 50), SM_DEADLINE_EXCEEDED);
  check_code(call(m, "mp_peek", 9, -1, XY, 2, NULL, 50), SM_DEADLINE_EXCEEDED);
  check_code(call(m, "om_pop", -1, -1, KXY, 3, NULL, 50), SM_DEADLINE_EXCEEDED);
  /* a waiting Unstage gets what another thread's run stages (whenever it starts waiting) */
  worker w = {.m = m, .sig = "st_get", .k = -1, .x = -1, .on = Y, .nout = 1};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, run_worker, &w) == 0);
  CHECK_OK(call(m, "st_put", -1, 42, SIZE, 1, NULL, 20 * 1000));
  pthread_join(th, NULL);
  CHECK_OK(w.st);
  CHECK(w.got == 42);
  /* a waiting map get of key 9 gets it once a partial put completes it */
  worker wm = {.m = m, .sig = "om_get", .k = 9, .x = -1, .on = Y, .nout = 1};
  CHECK(pthread_create(&th, NULL, run_worker, &wm) == 0);
  const char *xn[2] = {"k", "x"}, *yn[2] = {"k", "y"};
  sm_tensor *in[2] = {scalar(SM_INT64, 9), vec_f32(2, 3.f)}, *out[2] = {0};
  CHECK_OK(sm_model_run(m, "om_put0", xn, in, 2, SIZE, 2, out));
  sm_tensor_free(in[1]);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  in[1] = scalar(SM_INT32, 90);
  CHECK_OK(sm_model_run(m, "om_put1", yn, in, 2, SIZE, 2, out));
  for (int i = 0; i < 2; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]);
  pthread_join(th, NULL);
  CHECK_OK(wm.st);
  CHECK(wm.got == 90);
  /* a full area (capacity 3) makes a put wait until another run takes a tuple */
  for (int i = 1; i <= 3; i++) CHECK_OK(call(m, "st_put", -1, i, SIZE, 1, &v, 1000));
  CHECK(v == 3);
  check_code(call(m, "st_put", -1, 4, SIZE, 1, NULL, 50), SM_DEADLINE_EXCEEDED);
  worker wp = {.m = m, .sig = "st_put", .k = -1, .x = 5, .on = SIZE, .nout = 1};
  CHECK(pthread_create(&th, NULL, run_worker, &wp) == 0);
  CHECK_OK(call(m, "st_get", -1, -1, Y, 1, &v, 1000));
  CHECK(v == 1);
  pthread_join(th, NULL);
  CHECK_OK(wp.st);
  for (int want = 2; want <= 5; want += want == 3 ? 2 : 1) { /* 4 timed out, nothing staged */
    CHECK_OK(call(m, "st_get", -1, -1, Y, 1, &v, 1000));
    CHECK(v == want);
  }
  /* a full map (capacity 2) makes a complete put wait; a partial put does not wait for capacity */
  CHECK_OK(call(m, "mp_put", 1, 1, SIZE, 2, NULL, 1000));
  CHECK_OK(call(m, "mp_put", 2, 2, SIZE, 2, NULL, 1000));
  check_code(call(m, "mp_put", 3, 3, SIZE, 2, NULL, 50), SM_DEADLINE_EXCEEDED);
  const char *k1[1] = {"k"};
  sm_tensor *k3 = scalar(SM_INT64, 3), *xv = vec_f32(1, 1.f), *ins[2] = {k3, xv}, *o2[2] = {0};
  CHECK_OK(sm_model_run(m, "mp_put0", xn, ins, 2, SIZE, 2, o2));
  CHECK(o2[1] && *(const int32_t *)sm_tensor_data(o2[1]) == 1);
  for (int i = 0; i < 2; i++) sm_tensor_free(o2[i]), o2[i] = NULL;
  sm_tensor_free(xv);
  CHECK_OK(sm_model_run(m, "mp_clear", NULL, NULL, 0, SIZE, 2, o2));
  CHECK(o2[0] && o2[1] && !*(const int32_t *)sm_tensor_data(o2[0]) && !*(const int32_t *)sm_tensor_data(o2[1]));
  for (int i = 0; i < 2; i++) sm_tensor_free(o2[i]), o2[i] = NULL;
  (void)k1;
  sm_tensor_free(k3);
  /* a negative peek index is an error, not a wait */
  sm_tensor *ni = scalar(SM_INT32, -1), *po[2] = {0};
  const char *iname = "i";
  check_code(sm_model_run(m, "st_peek", &iname, &ni, 1, XY, 2, po), SM_INVALID_ARGUMENT);
  sm_tensor_free(ni);
  /* a tuple past the run's memory budget is refused */
  const char *pn[2] = {"x", "y"};
  sm_tensor *big[2] = {vec_f32(1 << 20, 0.f), scalar(SM_INT32, 0)}, *so = NULL;
  sm_run_options budget = {.max_run_bytes = 1 << 16};
  check_code(sm_model_run_opts(m, "st_put", pn, big, 2, SIZE, 1, &so, &budget), SM_RESOURCE_EXHAUSTED);
  sm_tensor_free(big[0]);
  sm_tensor_free(big[1]);
  CHECK_OK(call(m, "st_put", -1, 7, SIZE, 1, NULL, 1000)); /* left staged: freed with the model */
  CHECK_OK(call(m, "om_put", 8, 8, SIZE, 2, NULL, 1000));
  sm_model_free(m);
  /* a reload starts empty */
  m = load();
  if (!m) return;
  CHECK_OK(call(m, "st_size", -1, -1, SIZE, 1, &v, 1000));
  CHECK(v == 0);
  CHECK_OK(call(m, "om_sizes", -1, -1, SIZE, 1, &v, 1000));
  CHECK(v == 0);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_blocking();
  TEST_MAIN_END();
}
