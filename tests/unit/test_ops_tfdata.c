/* test_ops_tfdata.c - tf.data shuffle, parallel interleave and parallel batch inside saved
 * functions (src/ops/dataset_shuffle.c, dataset.c) against TensorFlow.
 *
 * tests/fixtures/datasets/tfdata, a tf.Module saved by tools/gen_tfdata_cases.py (shuffle with
 * seeds, buffers smaller/larger than the input and UNKNOWN_CARDINALITY, reshuffle_each_iteration
 * with repeat, a dataset iterated twice in one call, zipped components, iterators; interleave and
 * batch with num_parallel_calls), is loaded with the C API and every signature run twice with its
 * feed: the outputs must equal TF's (tfdata_models.h) element for element and in TF's order, or
 * the run fail with TF's error text. By hand: shuffle with seeds 0/0 (TF: a random order) keeps
 * the multiset; a shuffle buffer past the run's memory budget fails with RESOURCE_EXHAUSTED. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "tc_case_run.h"
#include "tfdata_models.h"

#define NROWS ((int)(sizeof td_rows / sizeof *td_rows))
#define NFEEDS ((int)(sizeof td_feeds / sizeof *td_feeds))

static void run_sig(sm_model *m, const td_feed *f) {
  const char *keys[16];
  tc_tensor want[16];
  const char *err = NULL;
  int n = 0;
  for (int i = 0; i < NROWS && n < 16; i++)
    if (!strcmp(td_rows[i].sig, f->sig)) {
      keys[n] = td_rows[i].key;
      want[n++] = td_rows[i].want;
      if (td_rows[i].err) err = td_rows[i].err;
    }
  sm_tensor *in = make_tensor(&f->in), *out[16] = {0};
  for (int rep = 0; rep < 2; rep++) { /* twice: a call starts the seed generators again */
    sm_status *st = sm_model_run(m, f->sig, &f->name, &in, 1, keys, n, out);
    for (int k = 0; k < n; k += 8) {
      char nm[200];
      snprintf(nm, sizeof nm, "%s run %d [exact] (%s..)", f->sig, rep, keys[k]);
      tc_check(nm, err, st, n - k < 8 ? n - k : 8, want + k, out + k);
      if (err) break;
    }
    sm_status_free(st);
    for (int k = 0; k < n; k++) sm_tensor_free(out[k]), out[k] = NULL;
  }
  sm_tensor_free(in);
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

static void test_hand(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  /* a shuffle buffer of 2^40 over an infinite input: it fills until the run's budget stops it */
  o.max_run_bytes = 2 << 20;
  o.deadline_us = sm_monotonic_us() + 1000000; /* (a budget may wait for memory until the deadline) */
  sm_status *st = run_i64(m, "hand_shuffle_forever", (int64_t)1 << 40, &o, &out);
  CHECK(st && (sm_status_code(st) == SM_RESOURCE_EXHAUSTED || sm_status_code(st) == SM_DEADLINE_EXCEEDED));
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  o.deadline_us = 0;
  /* a buffer of 4 over the same input is fine: 5 elements of 0..2 */
  CHECK_OK(run_i64(m, "hand_shuffle_forever", 4, &o, &out));
  sm_tensor_free(out), out = NULL;
  /* cache() of an infinite input read partly: the iterator's copy stays under the budget (take 5) */
  CHECK_OK(run_i64(m, "hand_cache_forever", 3, &o, &out));
  CHECK(out && *(const int64_t *)sm_tensor_data(out) == ((((0 * 3 + 0) * 3 + 1) * 3 + 2) * 3 + 0) * 3 + 1);
  sm_tensor_free(out), out = NULL;
  /* seeds 0/0 (no seed anywhere): TF's order is random; every element once */
  CHECK_OK(run_i64(m, "hand_unseeded", 50, NULL, &out));
  if (out && sm_tensor_num_elements(out) == 50) {
    int seen[50] = {0}, ok = 1;
    const int64_t *v = sm_tensor_data(out);
    for (int i = 0; i < 50; i++) ok &= v[i] >= 0 && v[i] < 50 && !seen[v[i]]++;
    CHECK(ok);
  } else {
    CHECK(!"hand_unseeded: 50 elements");
  }
  sm_tensor_free(out);
}

int main(void) {
  (void)run_case;
  (void)run_node;
  tc_tolerance = 0;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/datasets/tfdata", SM_SOURCE_DIR);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  if (!m) TEST_MAIN_END();
  for (int i = 0; i < NFEEDS; i++) run_sig(m, &td_feeds[i]);
  printf("tfdata: %d signatures, %d rows\n", NFEEDS, NROWS);
  test_hand(m);
  sm_model_free(m);
  TEST_MAIN_END();
}
