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

static void test_hand(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  /* a shuffle buffer of 2^40 over an infinite input: it fills until the run's budget stops it */
  o.max_run_bytes = 2 << 20;
  o.deadline_us = sm_monotonic_us() + 1000000; /* (a budget may wait for memory until the deadline) */
  sm_status *st = ds_run_i64(m, "hand_shuffle_forever", (int64_t)1 << 40, &o, &out);
  CHECK(st && (sm_status_code(st) == SM_RESOURCE_EXHAUSTED || sm_status_code(st) == SM_DEADLINE_EXCEEDED));
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  o.deadline_us = 0;
  /* a buffer of 4 over the same input is fine: 5 elements of 0..2 */
  CHECK_OK(ds_run_i64(m, "hand_shuffle_forever", 4, &o, &out));
  sm_tensor_free(out), out = NULL;
  /* cache() of an infinite input read partly: the iterator's copy stays under the budget (take 5) */
  CHECK_OK(ds_run_i64(m, "hand_cache_forever", 3, &o, &out));
  CHECK(out && *(const int64_t *)sm_tensor_data(out) == ((((0 * 3 + 0) * 3 + 1) * 3 + 2) * 3 + 0) * 3 + 1);
  sm_tensor_free(out), out = NULL;
  /* seeds 0/0 (no seed anywhere): TF's order is random; every element once */
  CHECK_OK(ds_run_i64(m, "hand_unseeded", 50, NULL, &out));
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
  sm_model *m = ds_run_fixture("tfdata", td_feeds, NFEEDS, td_rows, NROWS);
  if (!m) TEST_MAIN_END();
  test_hand(m);
  sm_model_free(m);
  TEST_MAIN_END();
}
