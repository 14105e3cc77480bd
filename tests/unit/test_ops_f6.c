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

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "f6_models.h"
#include "tc_case_run.h"

#define NROWS ((int)(sizeof f6_rows / sizeof *f6_rows))
#define NFEEDS ((int)(sizeof f6_feeds / sizeof *f6_feeds))

static void test_limits(sm_model *m) {
  sm_run_options o = {0};
  sm_tensor *out = NULL;
  o.deadline_us = sm_monotonic_us() + 200000;
  sm_status *st = ds_run_i64(m, "hand_infinite", 3, &o, &out);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  o.deadline_us = sm_monotonic_us() + 200000;
  st = ds_run_i64(m, "hand_filter_forever", 3, &o, &out);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  /* infinite repeat of an empty dataset ends (TF: a pass with no element ends the repeat) */
  CHECK_OK(ds_run_i64(m, "hand_infinite", 0, NULL, &out));
  CHECK(out && sm_tensor_dtype(out) == SM_INT32 && *(const int32_t *)sm_tensor_data(out) == 0);
  sm_tensor_free(out), out = NULL;
  /* 1e9 elements of 8 KB in one batch: the budget stops it long before */
  o.deadline_us = 0;
  o.max_run_bytes = 64 << 20;
  st = ds_run_i64(m, "hand_big_batch", 1000000000, &o, &out);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_tensor_free(out), out = NULL;
  /* and a small one works under the same budget: 5 rows of 1024 of 0..4 */
  CHECK_OK(ds_run_i64(m, "hand_big_batch", 5, &o, &out));
  CHECK(out && sm_tensor_dtype(out) == SM_INT32 && *(const int32_t *)sm_tensor_data(out) == 1024 * 10);
  sm_tensor_free(out), out = NULL;
  /* a shuffle with a buffer of 4 keeps every element (its order: test_ops_tfdata) */
  CHECK_OK(ds_run_i64(m, "hand_shuffle", 5, NULL, &out));
  CHECK(out && sm_tensor_dtype(out) == SM_INT32 && *(const int32_t *)sm_tensor_data(out) == 10);
  sm_tensor_free(out);
}

/* ---- by hand: graphs of raw dataset ops (sessions from pbtxt) ---------------------------------- */

#define I64_LIST "attr { key: \"output_types\" value { list { type: DT_INT64 } } } " \
                 "attr { key: \"output_shapes\" value { list { shape { } } } } "
#define PH(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"

/* A graph: placeholders a, b, c (int64), `ds` (a node named "d" making a dataset of one int64
 * scalar component from them), its cardinality, an iterator over it and two get_next in order. */
static sm_status *range_like(const char *ds, const int64_t abc[3], sm_tensor **out /* card, g1, g2 */, int nfetch) {
  char g[4096];
  snprintf(g, sizeof g,
           "graph_def {\n" PH("a") PH("b") PH("c") "%s\n"
           "node { name: \"card\" op: \"DatasetCardinality\" input: \"d\" }\n"
           "node { name: \"it\" op: \"AnonymousIteratorV3\" " I64_LIST "}\n"
           "node { name: \"mk\" op: \"MakeIterator\" input: \"d\" input: \"it\" }\n"
           "node { name: \"g1\" op: \"IteratorGetNext\" input: \"it\" input: \"^mk\" " I64_LIST "}\n"
           "node { name: \"g2\" op: \"IteratorGetNext\" input: \"it\" input: \"^g1\" " I64_LIST "}\n"
           "}\n",
           ds);
  sm_session *s = NULL;
  sm_status *st = sm__session_from_pbtxt(g, &s);
  sm_tensor *in[3] = {0};
  for (int i = 0; i < 3 && !st; i++)
    if (!(st = sm_tensor_new(SM_INT64, 0, NULL, &in[i]))) *(int64_t *)sm_tensor_data(in[i]) = abc[i];
  if (!st)
    st = sm__session_run(s, (const char *[]){"a", "b", "c"}, in, 3, (const char *[]){"card", "g1", "g2"}, nfetch, NULL, 0,
                         out);
  for (int i = 0; i < 3; i++) sm_tensor_free(in[i]);
  sm__session_free(s);
  return st;
}

static int64_t i64_of(const sm_tensor *t) { return t && sm_tensor_dtype(t) == SM_INT64 ? *(const int64_t *)sm_tensor_data(t) : -999; }

static void test_raw_graphs(void) {
  const char *range = "node { name: \"d\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}";
  sm_tensor *o[3] = {0};
  /* the top of int64: no wrap-around */
  CHECK_OK(range_like(range, (int64_t[]){INT64_MAX - 2, INT64_MAX, 1}, o, 3));
  CHECK(i64_of(o[0]) == 2 && i64_of(o[1]) == INT64_MAX - 2 && i64_of(o[2]) == INT64_MAX - 1);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_ERR(range_like(range, (int64_t[]){INT64_MAX - 1, INT64_MAX, 5}, o, 3), "End of sequence");
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_OK(range_like(range, (int64_t[]){INT64_MIN, INT64_MAX, INT64_MAX}, o, 3));
  CHECK(i64_of(o[0]) == 3 && i64_of(o[1]) == INT64_MIN && i64_of(o[2]) == -1);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_OK(range_like(range, (int64_t[]){5, -5, -4}, o, 3));
  CHECK(i64_of(o[0]) == 3 && i64_of(o[1]) == 5 && i64_of(o[2]) == 1);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_ERR(range_like(range, (int64_t[]){0, 5, 0}, o, 1), "step must be a non-zero integer.");
  /* take/skip/repeat counts of any sign; skip past the end; a huge repeat of a range */
  CHECK_OK(range_like("node { name: \"r\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}"
                      "node { name: \"d\" op: \"RepeatDataset\" input: \"r\" input: \"b\" " I64_LIST "}",
                      (int64_t[]){0, 2, 1}, o, 3));
  CHECK(i64_of(o[0]) == 4 && i64_of(o[1]) == 0 && i64_of(o[2]) == 1);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_OK(range_like("node { name: \"r\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}"
                      "node { name: \"d\" op: \"SkipDataset\" input: \"r\" input: \"c\" " I64_LIST "}",
                      (int64_t[]){0, 3, -1}, o, 1));
  CHECK(i64_of(o[0]) == 0);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_ERR(range_like("node { name: \"r\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}"
                       "node { name: \"d\" op: \"TakeDataset\" input: \"r\" input: \"c\" " I64_LIST "}",
                       (int64_t[]){0, 3, 1}, o, 3),
            "End of sequence");
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]), o[i] = NULL;
  /* bad inputs: not a dataset, a batch of 0, slices of a scalar, windows of no size or past int64 */
  CHECK_ERR(range_like("node { name: \"d\" op: \"TakeDataset\" input: \"a\" input: \"b\" " I64_LIST "}",
                       (int64_t[]){0, 3, 1}, o, 1),
            "input 0 must be a dataset variant scalar, got DT_INT64");
  CHECK_ERR(range_like("node { name: \"r\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}"
                       "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_BOOL } } "
                       "attr { key: \"value\" value { tensor { dtype: DT_BOOL tensor_shape { } bool_val: false } } } }"
                       "node { name: \"d\" op: \"BatchDatasetV2\" input: \"r\" input: \"a\" input: \"f\" "
                       "attr { key: \"output_types\" value { list { type: DT_INT64 } } } "
                       "attr { key: \"output_shapes\" value { list { shape { dim { size: -1 } } } } } }",
                       (int64_t[]){0, 3, 1}, o, 1),
            "Batch size must be greater than zero.");
  CHECK_ERR(range_like("node { name: \"d\" op: \"TensorSliceDataset\" input: \"a\" "
                       "attr { key: \"Toutput_types\" value { list { type: DT_INT64 } } } "
                       "attr { key: \"output_shapes\" value { list { shape { } } } } }",
                       (int64_t[]){0, 3, 1}, o, 1),
            "All components must be at least 1-dimensional");
  CHECK_ERR(range_like("node { name: \"r\" op: \"RangeDataset\" input: \"a\" input: \"b\" input: \"c\" " I64_LIST "}"
                       "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_BOOL } } "
                       "attr { key: \"value\" value { tensor { dtype: DT_BOOL tensor_shape { } bool_val: false } } } }"
                       "node { name: \"d\" op: \"WindowDataset\" input: \"r\" input: \"b\" input: \"c\" input: \"b\" input: \"f\" "
                       "attr { key: \"output_types\" value { list { type: DT_VARIANT } } } "
                       "attr { key: \"output_shapes\" value { list { shape { } } } } }",
                       (int64_t[]){0, INT64_MAX, 1}, o, 1),
            "span past int64");
  /* an iterator never initialized */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt("graph_def { node { name: \"it\" op: \"AnonymousIteratorV3\" " I64_LIST "}\n"
                                  "node { name: \"g\" op: \"IteratorGetNext\" input: \"it\" " I64_LIST "} }\n",
                                  &s));
  if (s) CHECK_ERR(sm__session_run(s, NULL, NULL, 0, (const char *[]){"g"}, 1, NULL, 0, o), "has not been initialized");
  sm_tensor_free(o[0]);
  sm__session_free(s);
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
  for (int i = 0; i < NFEEDS; i++) ds_run_sig(m, &f6_feeds[i], f6_rows, NROWS);
  printf("f6: %d signatures, %d rows\n", NFEEDS, NROWS);
  test_limits(m);
  sm_model_free(m);
  test_raw_graphs();
  TEST_MAIN_END();
}
