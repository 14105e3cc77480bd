/* test_ops_ds_more.c - tf.data's re-batching datasets inside saved functions (src/ops/dataset_rebatch.c:
 * DenseToSparseBatchDataset from Dataset.sparse_batch, RebatchDatasetV2 from Dataset.rebatch, the V1
 * RebatchDataset of tf.distribute) against TensorFlow.
 *
 * tests/fixtures/datasets/ds_more, a tf.Module saved by tools/gen_ds_more_cases.py (fixed and unknown
 * row dims, 2-D rows, strings and floats, batch sizes across input batches, a size list with 0,
 * drop_remainder, two components, num_replicas past the batch size, empty inputs, cardinality; rows
 * larger than or of another rank than row_shape, unbatched or unequal components), is loaded with the
 * C API and every signature run twice with its feed: the outputs must equal TF's (ds_more_models.h),
 * or the run fail with TF's error text. By hand: rows of no elements (range(v * 0)) batch to
 * sparse tensors with no values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "ds_more_models.h"
#include "tc_case_run.h"

#define NROWS ((int)(sizeof dm_rows / sizeof *dm_rows))
#define NFEEDS ((int)(sizeof dm_feeds / sizeof *dm_feeds))

static void test_hand(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  sm_status *st = ds_run_i64(m, "err_sparse_large", 0, &o, &out);
  CHECK(!st);
  CHECK(out && sm_tensor_num_elements(out) == 0);
  sm_status_free(st);
  sm_tensor_free(out);
}

int main(void) {
  (void)run_case;
  (void)run_node;
  tc_tolerance = 0;
  sm_model *m = ds_run_fixture("ds_more", dm_feeds, NFEEDS, dm_rows, NROWS);
  if (!m) TEST_MAIN_END();
  test_hand(m);
  sm_model_free(m);
  TEST_MAIN_END();
}
