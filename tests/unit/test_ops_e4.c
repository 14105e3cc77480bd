/* test_ops_e4.c - the random ops of session 20 (e4) against TensorFlow.
 *
 * Resource-state ops (random_stateful.c): tests/fixtures/random_gen/gen, a tf.Module of
 * tf.random.Generator draws and raw stateful ops saved by tools/gen_e4_models.py, is loaded with
 * the C API and each signature called 3 times in a row; every output (and the state after) must
 * equal TF's (e4_models.h) bit for bit, or the call fail with TF's error text. Raw-op cases
 * (tools/gen_e4_cases.py, e4_cases.h) for the ops without state. By hand, what TF cannot answer:
 * the V1 StatefulStandardNormal (TF 2.21 refuses to put it in a graph) against V2 on the same
 * state, RandomPoisson (V1, gone from TF 2.21's graphs) against RandomPoissonV2, and NonDeterministicInts (values differ by nature: shape, dtype, not all equal). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "array_case.h"
#include "e4_cases.h"
#include "e4_models.h"
#include "tc_case_run.h"

#define NROWS ((int)(sizeof e4_rows / sizeof *e4_rows))

/* Runs signature rows[i].sig once (call rows[i].call) and checks the rows of that call; returns
 * the index after them. */
static int run_call(sm_model *m, int i) {
  const char *sig = e4_rows[i].sig;
  const int call = e4_rows[i].call;
  int j = i;
  while (j < NROWS && !strcmp(e4_rows[j].sig, sig) && e4_rows[j].call == call) j++;
  const char *keys[32];
  sm_tensor *out[32] = {0};
  int n = 0;
  for (int k = i; k < j && n < 32; k++)
    if (!e4_rows[k].err) keys[n++] = e4_rows[k].key;
  if (e4_rows[i].err) keys[n++] = "x"; /* the error signatures' one output */
  char name[128];
  snprintf(name, sizeof name, "%s call %d", sig, call);
  sm_status *st = sm_model_run(m, sig, NULL, NULL, 0, keys, n, out);
  if (e4_rows[i].err) {
    tc_check(name, e4_rows[i].err, st, 0, NULL, NULL);
  } else {
    tc_tensor want[32];
    for (int k = 0; k < n; k++) want[k] = e4_rows[i + k].want;
    for (int k = 0; k < n; k += 8) { /* tc_check compares up to 8 at a time by name */
      char nm[200];
      snprintf(nm, sizeof nm, "%s [exact] (%s..)", name, keys[k]);
      tc_check(nm, NULL, st, n - k < 8 ? n - k : 8, want + k, out + k);
    }
  }
  sm_status_free(st);
  for (int k = 0; k < n; k++) sm_tensor_free(out[k]);
  return j;
}

static void test_generator_model(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/random_gen/gen", SM_SOURCE_DIR);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  if (!m) return;
  int calls = 0;
  for (int i = 0; i < NROWS; calls++) i = run_call(m, i);
  printf("e4 models: %d rows in %d calls\n", NROWS, calls);
  sm_model_free(m);
}

/* A graph of one state variable `s` (int64, `init`) and node y = `node` over it. */
static sm_status *state_session(const char *init, const char *node, sm_session **s) {
  char g[4096];
  snprintf(g, sizeof g,
           "graph_def {\n"
           "node { name: \"s\" op: \"VarHandleOp\" attr { key: \"dtype\" value { type: DT_INT64 } } "
           "attr { key: \"shape\" value { shape { unknown_rank: true } } } attr { key: \"shared_name\" value { s: \"s\" } } }\n"
           "node { name: \"init\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT64 } } "
           "attr { key: \"value\" value { tensor { dtype: DT_INT64 %s } } } }\n"
           "node { name: \"assign\" op: \"AssignVariableOp\" input: \"s\" input: \"init\" "
           "attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
           "node { name: \"shape\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
           "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 5 } } } }\n"
           "node { name: \"alg\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT64 } } "
           "attr { key: \"value\" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 1 } } } }\n"
           "node { name: \"y\" %s }\n"
           "node { name: \"read\" op: \"ReadVariableOp\" input: \"s\" input: \"^y\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
           "}\n",
           init, node);
  sm_status *st = sm__session_from_pbtxt(g, s);
  if (!st) st = sm__session_run(*s, NULL, NULL, 0, NULL, 0, (const char *[]){"assign"}, 1, NULL);
  return st;
}

/* StatefulStandardNormal (V1: the algorithm in element 0) draws what V2 draws from the rest. */
static void test_v1_normal(void) {
  sm_session *s1 = NULL, *s2 = NULL;
  CHECK_OK(state_session("tensor_shape { dim { size: 4 } } int64_val: 1 int64_val: 8 int64_val: 0 int64_val: 77",
                         "op: \"StatefulStandardNormal\" input: \"s\" input: \"shape\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                         "attr { key: \"shape_dtype\" value { type: DT_INT32 } }",
                         &s1));
  CHECK_OK(state_session("tensor_shape { dim { size: 3 } } int64_val: 8 int64_val: 0 int64_val: 77",
                         "op: \"StatefulStandardNormalV2\" input: \"s\" input: \"alg\" input: \"shape\" "
                         "attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"shape_dtype\" value { type: DT_INT32 } }",
                         &s2));
  for (int run = 0; s1 && s2 && run < 3; run++) {
    sm_tensor *a[2] = {0}, *b[2] = {0};
    CHECK_OK(sm__session_run(s1, NULL, NULL, 0, (const char *[]){"y", "read"}, 2, NULL, 0, a));
    CHECK_OK(sm__session_run(s2, NULL, NULL, 0, (const char *[]){"y", "read"}, 2, NULL, 0, b));
    CHECK(a[0] && b[0] && sm_tensor_equal(a[0], b[0]));
    if (a[1] && b[1]) {
      const int64_t *sa = sm_tensor_data(a[1]), *sb = sm_tensor_data(b[1]);
      CHECK(sa[0] == 1 && sa[1] == sb[0] && sa[2] == sb[1] && sa[3] == sb[2] && sb[0] == 8 + 5 * 256 * (run + 1));
    }
    for (int k = 0; k < 2; k++) sm_tensor_free(a[k]), sm_tensor_free(b[k]);
  }
  sm__session_free(s1);
  sm__session_free(s2);
  /* V1 with another algorithm tag: TF's message */
  CHECK_OK(state_session("tensor_shape { dim { size: 4 } } int64_val: 7 int64_val: 8 int64_val: 0 int64_val: 77",
                         "op: \"StatefulStandardNormal\" input: \"s\" input: \"shape\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                         "attr { key: \"shape_dtype\" value { type: DT_INT32 } }",
                         &s1));
  sm_tensor *y = NULL;
  sm_status *st = s1 ? sm__session_run(s1, NULL, NULL, 0, (const char *[]){"y"}, 1, NULL, 0, &y) : NULL;
  CHECK(st && strstr(sm_status_message(st), "Unsupported algorithm id: 7"));
  sm_status_free(st);
  sm_tensor_free(y);
  sm__session_free(s1);
  /* V1 state of 3: one short of the tag and Philox's 3 */
  s1 = NULL;
  y = NULL;
  CHECK_OK(state_session("tensor_shape { dim { size: 3 } } int64_val: 1 int64_val: 8 int64_val: 0",
                         "op: \"StatefulStandardNormal\" input: \"s\" input: \"shape\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                         "attr { key: \"shape_dtype\" value { type: DT_INT32 } }",
                         &s1));
  st = s1 ? sm__session_run(s1, NULL, NULL, 0, (const char *[]){"y"}, 1, NULL, 0, &y) : NULL;
  CHECK(st && strstr(sm_status_message(st), "the size of state must be at least 4; got 3"));
  sm_status_free(st);
  sm_tensor_free(y);
  sm__session_free(s1);
}

/* NonDeterministicInts: TF's values are the OS's entropy; shape and dtype are checked, and that
 * 64 draws are not all equal. */
static void test_nondeterministic_ints(void) {
  static const char *dts[] = {"DT_INT32", "DT_INT64", "DT_UINT32", "DT_UINT64"};
  static const int sdt[] = {SM_INT32, SM_INT64, SM_UINT32, SM_UINT64};
  for (int d = 0; d < 4; d++) {
    sm_tensor *shape = NULL, *out = NULL;
    CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){2}, &shape));
    if (!shape) return;
    ((int64_t *)sm_tensor_data(shape))[0] = 8;
    ((int64_t *)sm_tensor_data(shape))[1] = 8;
    char node[256];
    snprintf(node, sizeof node, "op: \"NonDeterministicInts\" attr { key: \"dtype\" value { type: %s } } "
             "attr { key: \"shape_dtype\" value { type: DT_INT64 } }", dts[d]);
    CHECK_OK(run_node(node, 1, &shape, 1, &out));
    if (out) {
      CHECK(sm_tensor_rank(out) == 2 && sm_tensor_dims(out)[0] == 8 && sm_tensor_dims(out)[1] == 8);
      CHECK(sm_tensor_dtype(out) == sdt[d]);
      const size_t es = sm_dtype_size(sm_tensor_dtype(out));
      int same = 1;
      for (int i = 1; i < 64; i++) same &= !memcmp((const char *)sm_tensor_data(out) + i * es, sm_tensor_data(out), es);
      CHECK(!same);
    }
    sm_tensor_free(out);
    sm_tensor_free(shape);
  }
}

/* RandomPoisson (V1, which TF 2.21 no longer runs: removed at GraphDef version 25) draws what
 * RandomPoissonV2 draws with the rate's dtype as output, run after run. */
static void test_poisson_v1(void) {
  static const char *dts[] = {"DT_HALF", "DT_FLOAT", "DT_DOUBLE"};
  static const int sdt[] = {SM_HALF, SM_FLOAT, SM_DOUBLE};
  static const double rates[] = {0.5, 3.0, 25.0, 0.0, 1e3};
  for (int d = 0; d < 3; d++) {
    sm_tensor *in[2] = {0}, *a = NULL, *b = NULL;
    CHECK_OK(sm_tensor_new(SM_INT32, 1, (int64_t[]){1}, &in[0]));
    CHECK_OK(sm_tensor_new(sdt[d], 1, (int64_t[]){5}, &in[1]));
    if (!in[0] || !in[1]) goto next;
    *(int32_t *)sm_tensor_data(in[0]) = 3;
    for (int i = 0; i < 5; i++) {
      if (sdt[d] == SM_HALF) ((uint16_t *)sm_tensor_data(in[1]))[i] = sm__f32_to_half((float)rates[i]);
      else if (sdt[d] == SM_FLOAT) ((float *)sm_tensor_data(in[1]))[i] = (float)rates[i];
      else ((double *)sm_tensor_data(in[1]))[i] = rates[i];
    }
    char n1[400], n2[400];
    snprintf(n1, sizeof n1, "op: \"RandomPoisson\" attr { key: \"dtype\" value { type: %s } } attr { key: \"S\" value { type: DT_INT32 } } "
             "attr { key: \"seed\" value { i: 7 } } attr { key: \"seed2\" value { i: 9 } }", dts[d]);
    snprintf(n2, sizeof n2, "op: \"RandomPoissonV2\" attr { key: \"dtype\" value { type: %s } } attr { key: \"R\" value { type: %s } } "
             "attr { key: \"S\" value { type: DT_INT32 } } attr { key: \"seed\" value { i: 7 } } attr { key: \"seed2\" value { i: 9 } }",
             dts[d], dts[d]);
    CHECK_OK(run_node_n(n1, 2, in, 1, &a, 2));
    CHECK_OK(run_node_n(n2, 2, in, 1, &b, 2));
    CHECK(a && b && sm_tensor_rank(a) == 2 && sm_tensor_equal(a, b));
  next:
    sm_tensor_free(in[0]), sm_tensor_free(in[1]), sm_tensor_free(a), sm_tensor_free(b);
  }
}

/* RandomCrop (removed from TF's graphs at GraphDef version 8: TF 2.21 will not run it): the output
 * is the input's [oh:oh+th, ow:ow+tw] for offsets in range, the same for a given seed in every
 * process and moving from run to run; TF's messages for a crop larger than the image. */
static void test_random_crop(void) {
  sm_tensor *in[2] = {0}, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 3, (int64_t[]){5, 7, 2}, &in[0]));
  CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){2}, &in[1]));
  if (!in[0] || !in[1]) goto done;
  for (int i = 0; i < 70; i++) ((int32_t *)sm_tensor_data(in[0]))[i] = i;
  ((int64_t *)sm_tensor_data(in[1]))[0] = 3;
  ((int64_t *)sm_tensor_data(in[1]))[1] = 4;
  const char *node = "op: \"RandomCrop\" attr { key: \"T\" value { type: DT_INT32 } } attr { key: \"seed\" value { i: 5 } } "
                     "attr { key: \"seed2\" value { i: 6 } }";
  int offsets = 0;
  for (int runs = 1; runs <= 4; runs++) {
    CHECK_OK(run_node_n(node, 2, in, 1, &out, runs));
    if (!out) continue;
    CHECK(sm_tensor_rank(out) == 3 && sm_tensor_dims(out)[0] == 3 && sm_tensor_dims(out)[1] == 4 && sm_tensor_dims(out)[2] == 2);
    const int32_t *o = sm_tensor_data(out);
    const int oh = o[0] / 14, ow = (o[0] % 14) / 2;
    CHECK(o[0] % 2 == 0 && oh <= 2 && ow <= 3);
    for (int y = 0; y < 3; y++)
      for (int x = 0; x < 4; x++)
        for (int c = 0; c < 2; c++) CHECK(o[(y * 4 + x) * 2 + c] == ((y + oh) * 7 + x + ow) * 2 + c);
    offsets |= 1 << (oh * 4 + ow);
    sm_tensor_free(out);
    out = NULL;
  }
  CHECK(offsets & (offsets - 1)); /* not the same crop on all 4 runs */
  ((int64_t *)sm_tensor_data(in[1]))[0] = 6;
  sm_status *st = run_node(node, 2, in, 1, &out);
  CHECK(st && strstr(sm_status_message(st), "height must be >= target_height: height = 5, target_height = 6"));
  sm_status_free(st);
  sm_tensor_free(out);
  out = NULL;
  ((int64_t *)sm_tensor_data(in[1]))[0] = 5;
  ((int64_t *)sm_tensor_data(in[1]))[1] = 7;
  CHECK_OK(run_node(node, 2, in, 1, &out)); /* the whole image */
  CHECK(out && sm_tensor_equal(out, in[0]));
done:
  sm_tensor_free(in[0]), sm_tensor_free(in[1]), sm_tensor_free(out);
}

int main(void) {
  tc_tolerance = 0;
  int bad = 0;
  size_t n = sizeof e4_cases / sizeof *e4_cases;
  for (size_t i = 0; i < n; i++) bad += run_case(&e4_cases[i]);
  printf("e4: %zu cases, %d failed\n", n, bad);
  CHECK(bad == 0);
  test_generator_model();
  test_v1_normal();
  test_nondeterministic_ints();
  test_poisson_v1();
  test_random_crop();
  TEST_MAIN_END();
}
