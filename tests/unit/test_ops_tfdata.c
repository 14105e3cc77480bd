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
  sm_model_free(m);
  TEST_MAIN_END();
}
