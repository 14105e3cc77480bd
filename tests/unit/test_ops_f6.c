/* test_ops_f6.c - tf.data inside saved functions (src/ops/dataset.c) against TensorFlow.
 *
 * tests/fixtures/datasets/pipes, a tf.Module of tf.data pipelines saved by tools/gen_f6_cases.py
 * (map, filter, batch, padded_batch, take, skip, repeat, zip, concatenate, flat_map, scan,
 * take_while, unbatch, range, pass-through stages; consumed by reduce, for-loops, iterators,
 * optionals and cardinality), is loaded with the C API and every signature run with its feed: the
 * outputs must equal TF's (f6_models.h) bit for bit, or the run fail with TF's error text. By hand,
 * what TF cannot answer: an infinite repeat() consumed by reduce, and a filter that never passes
 * an element of an infinite input, stop at the run's deadline; a batch past the run's memory
 * budget fails with RESOURCE_EXHAUSTED; a run repeated gives the same (iterators are per run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "f6_models.h"
#include "tc_case_run.h"

#define NROWS ((int)(sizeof f6_rows / sizeof *f6_rows))
#define NFEEDS ((int)(sizeof f6_feeds / sizeof *f6_feeds))

static void run_sig(sm_model *m, const f6_feed *f) {
  const char *keys[16];
  tc_tensor want[16];
  const char *err = NULL;
  int n = 0;
  for (int i = 0; i < NROWS && n < 16; i++)
    if (!strcmp(f6_rows[i].sig, f->sig)) {
      keys[n] = f6_rows[i].key;
      want[n++] = f6_rows[i].want;
      if (f6_rows[i].err) err = f6_rows[i].err;
    }
  sm_tensor *in[2] = {0}, *out[16] = {0};
  for (int i = 0; i < f->n; i++) in[i] = make_tensor(&f->in[i]);
  for (int rep = 0; rep < 2; rep++) { /* twice: nothing of a run's iterators outlives it */
    sm_status *st = sm_model_run(m, f->sig, f->names, in, f->n, keys, n, out);
    for (int k = 0; k < n; k += 8) {
      char nm[200];
      snprintf(nm, sizeof nm, "%s run %d [exact] (%s..)", f->sig, rep, keys[k]);
      tc_check(nm, err, st, n - k < 8 ? n - k : 8, want + k, out + k);
      if (err) break;
    }
    sm_status_free(st);
    for (int k = 0; k < n; k++) sm_tensor_free(out[k]), out[k] = NULL;
  }
  for (int i = 0; i < f->n; i++) sm_tensor_free(in[i]);
}

static sm_status *run_i64(sm_model *m, const char *sig, int64_t v, const sm_run_options *o, sm_tensor **out) {
  sm_tensor *in = NULL;
  sm_status *st = sm_tensor_new(SM_INT64, 0, NULL, &in);
  if (st) return st;
  *(int64_t *)sm_tensor_data(in) = v;
  const char *name = "n";
  st = sm_model_run_opts(m, sig, &name, &in, 1, (const char *[]){"x"}, 1, out, o);
  sm_tensor_free(in);
  return st;
}

static void test_limits(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  o.deadline_us = sm_monotonic_us() + 200000;
  sm_status *st = run_i64(m, "hand_infinite", 3, &o, &out);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  o.deadline_us = sm_monotonic_us() + 200000;
  st = run_i64(m, "hand_filter_forever", 3, &o, &out);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  /* infinite repeat of an empty dataset ends (TF: a pass with no element ends the repeat) */
  CHECK_OK(run_i64(m, "hand_infinite", 0, NULL, &out));
  CHECK(out && *(const int64_t *)sm_tensor_data(out) == 0);
  sm_tensor_free(out), out = NULL;
  /* 1e9 elements of 8 KB in one batch: the budget stops it long before */
  o.deadline_us = 0;
  o.max_run_bytes = 64 << 20;
  st = run_i64(m, "hand_big_batch", 1000000000, &o, &out);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  /* and a small one works under the same budget: 5 rows of 1024 of 0..4 */
  CHECK_OK(run_i64(m, "hand_big_batch", 5, &o, &out));
  CHECK(out && *(const int64_t *)sm_tensor_data(out) == 1024 * 10);
  sm_tensor_free(out), out = NULL;
  /* a shuffle whose order TF's would differ from is refused, saying so */
  st = run_i64(m, "hand_shuffle", 5, NULL, &out);
  CHECK(st && sm_status_code(st) == SM_UNIMPLEMENTED && strstr(sm_status_message(st), "not reproduced"));
  sm_status_free(st);
  sm_tensor_free(out);
}

int main(void) {
  (void)run_case;
  (void)run_node;
  tc_tolerance = 0;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/datasets/pipes", SM_SOURCE_DIR);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  if (!m) TEST_MAIN_END();
  for (int i = 0; i < NFEEDS; i++) run_sig(m, &f6_feeds[i]);
  printf("f6: %d signatures, %d rows\n", NFEEDS, NROWS);
  test_limits(m);
  sm_model_free(m);
  TEST_MAIN_END();
}
