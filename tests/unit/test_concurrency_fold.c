/* test_concurrency_fold.c - a model's two serving signatures whose plans share the BatchNorm folds
 * (nn_fold.c's shared folds, made at load by sm__plan_preload or by the first calls) run at once
 * from two threads, before and after an assignment of the BatchNorm variances that makes both
 * plans fold again (their first calls after it race to refold the shared entry), with the load's
 * preload on and off (SM_LOAD_PRELOAD=0: the first folds race too). Every result is checked
 * against TensorFlow's (the zoo model tf2_bn_fold_edge, tools/zoo_fold.py: epsilon 0, tiny, zero and
 * negative variances). Built for the TSan target too (Makefile: test_concurrency*). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "savedmodel/tensor.h"
#include "test.h"

#define ZOO SM_SOURCE_DIR "/tests/fixtures/zoo/tf2_bn_fold_edge"
#define SEQ ZOO "/golden/sequences/serve/"
#define RUNS 12

static int runs_checked;

static sm_tensor *npy(const char *path) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_npy_read(path, &t));
  return t;
}

/* As test_model's zoo check: 1e-5 relative, an absolute floor of 1e-6 of the tensor's scale; NaN
 * for NaN, Inf for the same Inf. */
static int matches(const sm_tensor *got, const sm_tensor *want) {
  if (!got || !want || sm_tensor_num_elements(got) != sm_tensor_num_elements(want)) return 0;
  const float *g = sm_tensor_data(got), *w = sm_tensor_data(want);
  int64_t n = sm_tensor_num_elements(want);
  double scale = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(w[i])) scale = fmax(scale, fabs(w[i]));
  for (int64_t i = 0; i < n; i++) {
    if (isnan(w[i]) ? isnan(g[i]) : isinf(w[i]) ? g[i] == w[i] : fabs(g[i] - w[i]) <= 1e-5 * fmax(fabs(g[i]), fabs(w[i])) + 1e-6 * scale + 1e-6)
      continue;
    fprintf(stderr, "element %lld: got %.9g, want %.9g\n", (long long)i, g[i], w[i]);
    return 0;
  }
  return 1;
}

typedef struct job {
  sm_model *m;
  const char *sig;
  int nout;
  const char *out[3];
  sm_tensor *x, *want[3];
  int bad;
} job;

static void *run_sig(void *p) {
  job *j = p;
  const char *in[1] = {"x"};
  for (int r = 0; r < RUNS; r++) {
    sm_tensor *o[3] = {0};
    sm_status *st = sm_model_run(j->m, j->sig, in, &j->x, 1, j->out, j->nout, o);
    if (st) {
      fprintf(stderr, "%s: %s\n", j->sig, sm_status_message(st));
      sm_status_free(st);
      j->bad++;
    }
    for (int k = 0; k < j->nout; k++) {
      if (!st && !matches(o[k], j->want[k])) {
        fprintf(stderr, "%s run %d: output %s differs from TensorFlow's\n", j->sig, r, j->out[k]);
        j->bad++;
      }
      sm_tensor_free(o[k]);
    }
  }
  return NULL;
}

/* Both signatures at once, each against the golden step files s_y (serving_default) and s_f
 * (features). */
static void both_at_once(sm_model *m, sm_tensor *x, const char *s_y, const char *s_f) {
  char p[512];
  job a = {m, "serving_default", 1, {"y"}, x, {0}, 0}, b = {m, "features", 3, {"h", "y", "z"}, x, {0}, 0};
  snprintf(p, sizeof p, SEQ "%s/outputs/y.npy", s_y);
  a.want[0] = npy(p);
  for (int k = 0; k < 3; k++) {
    snprintf(p, sizeof p, SEQ "%s/outputs/%s.npy", s_f, b.out[k]);
    b.want[k] = npy(p);
  }
  pthread_t t[2];
  CHECK(pthread_create(&t[0], NULL, run_sig, &a) == 0);
  CHECK(pthread_create(&t[1], NULL, run_sig, &b) == 0);
  pthread_join(t[0], NULL);
  pthread_join(t[1], NULL);
  CHECK(a.bad == 0 && b.bad == 0);
  runs_checked += 2 * RUNS;
  sm_tensor_free(a.want[0]);
  for (int k = 0; k < 3; k++) sm_tensor_free(b.want[k]);
}

static void rounds(void) {
  const char *tags[1] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(ZOO "/model", tags, 1, NULL, &m));
  sm_tensor *x = npy(SEQ "00_serving_default/inputs/x.npy");
  if (!m || !x) goto out;
  both_at_once(m, x, "00_serving_default", "01_features");
  /* the degenerate variances: both plans' helpers see the assignment and fold again */
  sm_tensor *v[3] = {npy(SEQ "02_set_bn/inputs/var0.npy"), npy(SEQ "02_set_bn/inputs/var1.npy"),
                     npy(SEQ "02_set_bn/inputs/var2.npy")}, *o[3] = {0};
  const char *vin[3] = {"var0", "var1", "var2"};
  CHECK_OK(sm_model_run(m, "set_bn", vin, v, 3, NULL, 3, o));
  for (int k = 0; k < 3; k++) sm_tensor_free(v[k]), sm_tensor_free(o[k]);
  both_at_once(m, x, "03_serving_default", "04_features");
out:
  sm_tensor_free(x);
  sm_model_free(m);
}

int main(void) {
  rounds();
  setenv("SM_LOAD_PRELOAD", "0", 1); /* the first calls make the folds, both at once */
  rounds();
  unsetenv("SM_LOAD_PRELOAD");
  printf("%d runs of two signatures at once checked against TensorFlow\n", runs_checked);
  CHECK(runs_checked == 8 * RUNS);
  TEST_MAIN_END();
}
