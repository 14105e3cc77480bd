/* test_ops_groupwin.c - tf.data's grouping datasets inside saved functions (src/ops/dataset_group.c:
 * GroupByWindowDataset, bucket_by_sequence_length built on it, GroupByReducerDataset) against
 * TensorFlow.
 *
 * tests/fixtures/datasets/groupwin, a tf.Module saved by tools/gen_groupwin_cases.py (window sizes
 * 1/2/3/past the input and from window_size_func, captured tensors, two-component elements, nested
 * windows, negative keys, empty inputs, bucket_by_sequence_length with padding and drop_remainder,
 * group_by_reducer with tuple states and captured tensors; bad keys, window size 0, a failing
 * reduce_func), is loaded with the C API and every signature run twice with its feed: the outputs
 * must equal TF's (groupwin_models.h) in TF's order, or the run fail with TF's error text. By hand:
 * an infinite input with a window larger than the run's budget allows stops with RESOURCE_EXHAUSTED
 * (or the deadline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "groupwin_models.h"
#include "tc_case_run.h"

#define NROWS ((int)(sizeof gw_rows / sizeof *gw_rows))
#define NFEEDS ((int)(sizeof gw_feeds / sizeof *gw_feeds))

static void test_hand(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  /* range(3).repeat() grouped by value with windows of 2^40: no group fills; the budget stops it */
  o.max_run_bytes = 2 << 20;
  o.deadline_us = sm_monotonic_us() + 2000000;
  sm_status *st = ds_run_i64(m, "hand_forever", (int64_t)1 << 40, &o, &out);
  CHECK(st && (sm_status_code(st) == SM_RESOURCE_EXHAUSTED || sm_status_code(st) == SM_DEADLINE_EXCEEDED));
  sm_status_free(st);
  sm_tensor_free(out);
}

int main(void) {
  (void)run_case;
  (void)run_node;
  tc_tolerance = 0;
  sm_model *m = ds_run_fixture("groupwin", gw_feeds, NFEEDS, gw_rows, NROWS);
  if (!m) TEST_MAIN_END();
  test_hand(m);
  sm_model_free(m);
  TEST_MAIN_END();
}
