/* test_ops_imgsum.c - session 23's h4 ops against TensorFlow: ImageSummary and AudioSummaryV2
 * (summary.c; their Summary protos byte for byte, TF's errors) and Unbatch / UnbatchGrad / Batch's
 * deterministic answers (batch_fn.c), from tools/gen_imgsum_cases.py. By hand, what TF answers only
 * with a random id or across runs: a lone Batch request (padding, batch_index, a fresh id each
 * run), a Batch -> model -> Unbatch graph and its UnbatchGrad, Unbatch's pieces kept for a later
 * run and its timeout, a run waiting for its piece from a concurrent one, UnbatchGrad gathering
 * the grads of two runs, and hostile batch_index rows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "imgsum_cases.h"
#include "tc_case_run.h"

static sm_tensor *ft(int rank, const int64_t *dims, const float *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (t && v) memcpy(sm_tensor_data(t), v, sizeof(float) * (size_t)sm_tensor_num_elements(t));
  return t;
}

static sm_tensor *it64(int rank, const int64_t *dims, const int64_t *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, rank, dims, &t));
  if (t && v) memcpy(sm_tensor_data(t), v, sizeof(int64_t) * (size_t)sm_tensor_num_elements(t));
  return t;
}

#define PH(name, type) "node { name: \"" name "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: " type " } } }\n"
#define BATCH_ATTRS                                                                                                    \
  "attr { key: \"num_batch_threads\" value { i: 1 } } attr { key: \"max_batch_size\" value { i: 4 } } "              \
  "attr { key: \"batch_timeout_micros\" value { i: 100000 } } attr { key: \"grad_timeout_micros\" value { i: 100000 } } " \
  "attr { key: \"allowed_batch_sizes\" value { list { i: 2 i: 4 } } } "

/* A lone request: padded to 4 rows with its first row, batch_index [[id, 0, 3]], a new id each run. */
static void test_batch_lone(void) {
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt("graph_def {\n" PH("x", "DT_FLOAT") PH("n", "DT_INT32")
                                  "node { name: \"b\" op: \"Batch\" input: \"x\" input: \"n\" " BATCH_ATTRS
                                  "attr { key: \"T\" value { list { type: DT_FLOAT type: DT_INT32 } } } }\n}\n", &s));
  if (!s) return;
  static const float xv[6] = {1, 2, 3, 4, 5, 6};
  sm_tensor *in[2] = {ft(2, (int64_t[]){3, 2}, xv), NULL};
  CHECK_OK(sm_tensor_new(SM_INT32, 1, (int64_t[]){3}, &in[1]));
  for (int i = 0; in[1] && i < 3; i++) ((int32_t *)sm_tensor_data(in[1]))[i] = 10 + i;
  const char *feeds[] = {"x", "n"}, *fetch[] = {"b:0", "b:1", "b:2", "b:3"};
  int64_t last = 0;
  for (int run = 0; run < 2; run++) {
    sm_tensor *out[4] = {0};
    CHECK_OK(sm__session_run(s, feeds, in, 2, fetch, 4, NULL, 0, out));
    if (!out[3]) break;
    static const float wx[8] = {1, 2, 3, 4, 5, 6, 1, 2};
    static const int32_t wn[4] = {10, 11, 12, 10};
    CHECK(sm_tensor_dims(out[0])[0] == 4 && !memcmp(sm_tensor_data(out[0]), wx, sizeof wx));
    CHECK(sm_tensor_dims(out[1])[0] == 4 && !memcmp(sm_tensor_data(out[1]), wn, sizeof wn));
    const int64_t *bi = sm_tensor_data(out[2]), id = *(const int64_t *)sm_tensor_data(out[3]);
    CHECK(sm_tensor_rank(out[2]) == 2 && sm_tensor_dims(out[2])[0] == 1 && sm_tensor_dims(out[2])[1] == 3);
    CHECK(bi[0] == id && bi[1] == 0 && bi[2] == 3);
    CHECK(run == 0 || id != last);
    last = id;
    for (int i = 0; i < 4; i++) sm_tensor_free(out[i]);
  }
  for (int i = 0; i < 2; i++) sm_tensor_free(in[i]);
  sm__session_free(s);
}

/* Batch -> x * 2 -> Unbatch: the request's rows of the model's output; UnbatchGrad of ones gives
 * the request's rows of the grad (not the padding). */
static void test_batch_model_unbatch(void) {
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(
      "graph_def {\n" PH("x", "DT_FLOAT")
      "node { name: \"b\" op: \"Batch\" input: \"x\" " BATCH_ATTRS "attr { key: \"T\" value { list { type: DT_FLOAT } } } }\n"
      "node { name: \"two\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
      "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }\n"
      "node { name: \"m\" op: \"Mul\" input: \"b\" input: \"two\" attr { key: \"T\" value { type: DT_FLOAT } } }\n"
      "node { name: \"u\" op: \"Unbatch\" input: \"m\" input: \"b:1\" input: \"b:2\" attr { key: \"T\" value { type: DT_FLOAT } } "
      "attr { key: \"timeout_micros\" value { i: 1000000 } } }\n"
      "node { name: \"g\" op: \"UnbatchGrad\" input: \"b\" input: \"b:1\" input: \"u\" input: \"b:2\" "
      "attr { key: \"T\" value { type: DT_FLOAT } } }\n}\n", &s));
  if (!s) return;
  static const float xv[6] = {1, 2, 3, 4, 5, 6};
  sm_tensor *x = ft(2, (int64_t[]){3, 2}, xv), *out[2] = {0};
  const char *feeds[] = {"x"}, *fetch[] = {"u:0", "g:0"};
  for (int run = 0; run < 3; run++) {
    CHECK_OK(sm__session_run(s, feeds, &x, 1, fetch, 2, NULL, 0, out));
    static const float want[6] = {2, 4, 6, 8, 10, 12};
    CHECK(out[0] && sm_tensor_dims(out[0])[0] == 3 && !memcmp(sm_tensor_data(out[0]), want, sizeof want));
    CHECK(out[1] && sm_tensor_dims(out[1])[0] == 3 && !memcmp(sm_tensor_data(out[1]), want, sizeof want));
    for (int i = 0; i < 2; i++) sm_tensor_free(out[i]), out[i] = NULL;
  }
  sm_tensor_free(x);
  sm__session_free(s);
}

static sm_session *unbatch_session(int64_t timeout_us) {
  char g[1024];
  snprintf(g, sizeof g,
           "graph_def {\n" PH("d", "DT_FLOAT") PH("bi", "DT_INT64") PH("id", "DT_INT64")
           "node { name: \"u\" op: \"Unbatch\" input: \"d\" input: \"bi\" input: \"id\" attr { key: \"T\" value { type: DT_FLOAT } } "
           "attr { key: \"timeout_micros\" value { i: %lld } } }\n}\n", (long long)timeout_us);
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  return s;
}

static sm_status *unbatch_run(sm_session *s, int64_t rows, const int64_t *bi, int64_t nbi, int64_t id, sm_tensor **out) {
  float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  sm_tensor *in[3] = {ft(2, (int64_t[]){rows, 2}, v), it64(2, (int64_t[]){nbi, 3}, bi), it64(0, NULL, &id)};
  const char *feeds[] = {"d", "bi", "id"}, *fetch[] = {"u:0"};
  sm_status *st = sm__session_run(s, feeds, in, 3, fetch, 1, NULL, 0, out);
  for (int i = 0; i < 3; i++) sm_tensor_free(in[i]);
  return st;
}

/* A piece for another id is kept for a later run; a run whose piece never comes times out. */
static void test_unbatch_across_runs(void) {
  sm_session *s = unbatch_session(300000);
  if (!s) return;
  sm_tensor *out = NULL;
  CHECK_OK(unbatch_run(s, 3, (int64_t[]){5, 0, 1, 6, 1, 3}, 2, 6, &out));
  CHECK(out && sm_tensor_dims(out)[0] == 2 && ((float *)sm_tensor_data(out))[0] == 2);
  sm_tensor_free(out), out = NULL;
  CHECK_OK(unbatch_run(s, 0, NULL, 0, 5, &out));
  CHECK(out && sm_tensor_dims(out)[0] == 1 && ((float *)sm_tensor_data(out))[1] == 1);
  sm_tensor_free(out), out = NULL;
  sm_status *st = unbatch_run(s, 0, NULL, 0, 5, &out); /* taken already: waits, then TF's timeout */
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED && strstr(sm_status_message(st), "did not arrive within timeout window"));
  sm_status_free(st);
  /* hostile rows: a negative size, sizes past the rows, huge values */
  st = unbatch_run(s, 3, (int64_t[]){5, 2, 1}, 1, 5, &out);
  CHECK(st && strstr(sm_status_message(st), "negative size"));
  sm_status_free(st);
  st = unbatch_run(s, 3, (int64_t[]){5, INT64_MIN, INT64_MAX}, 1, 5, &out);
  CHECK(st && strstr(sm_status_message(st), "Sum of split sizes"));
  sm_status_free(st);
  st = unbatch_run(s, 3, (int64_t[]){5, 0, 2, 6, 0, INT64_MAX}, 2, 5, &out);
  CHECK(st && strstr(sm_status_message(st), "Sum of split sizes"));
  sm_status_free(st);
  CHECK(out == NULL);
  sm__session_free(s);
}

typedef struct {
  sm_session *s;
  sm_tensor *out;
  sm_status *st;
} waiter_arg;

static void *unbatch_waiter(void *p) {
  waiter_arg *a = p;
  a->st = unbatch_run(a->s, 0, NULL, 0, 7, &a->out);
  return NULL;
}

/* A run waiting for its piece gets it from a concurrent run's batch. */
static void test_unbatch_concurrent(void) {
  sm_session *s = unbatch_session(20000000);
  if (!s) return;
  waiter_arg a = {s, NULL, NULL};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, unbatch_waiter, &a) == 0);
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL); /* whichever comes first, the piece meets its run */
  sm_tensor *out = NULL;
  CHECK_OK(unbatch_run(s, 3, (int64_t[]){7, 0, 1, 8, 1, 3}, 2, 8, &out));
  pthread_join(th, NULL);
  CHECK_OK(a.st);
  CHECK(out && sm_tensor_dims(out)[0] == 2);
  CHECK(a.out && sm_tensor_dims(a.out)[0] == 1 && ((float *)sm_tensor_data(a.out))[1] == 1);
  sm_tensor_free(out);
  sm_tensor_free(a.out);
  sm__session_free(s);
}

/* UnbatchGrad: a run without the batch leaves its grad (and gets an empty one); the batch's run
 * concatenates its tasks' grads in batch_index order. */
static void test_unbatch_grad_across_runs(void) {
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt("graph_def {\n" PH("o", "DT_FLOAT") PH("bi", "DT_INT64") PH("gr", "DT_FLOAT") PH("id", "DT_INT64")
                                  "node { name: \"g\" op: \"UnbatchGrad\" input: \"o\" input: \"bi\" input: \"gr\" input: \"id\" "
                                  "attr { key: \"T\" value { type: DT_FLOAT } } }\n}\n", &s));
  if (!s) return;
  const char *feeds[] = {"o", "bi", "gr", "id"}, *fetch[] = {"g:0"};
  int64_t id9 = 9, id10 = 10;
  sm_tensor *in1[4] = {ft(2, (int64_t[]){0, 2}, NULL), it64(2, (int64_t[]){0, 3}, NULL), ft(2, (int64_t[]){2, 2}, (float[]){1, 2, 3, 4}),
                       it64(0, NULL, &id9)};
  sm_tensor *out = NULL;
  CHECK_OK(sm__session_run(s, feeds, in1, 4, fetch, 1, NULL, 0, &out));
  CHECK(out && sm_tensor_dims(out)[0] == 0 && sm_tensor_dims(out)[1] == 2);
  sm_tensor_free(out), out = NULL;
  sm_tensor *in2[4] = {ft(2, (int64_t[]){3, 2}, NULL), it64(2, (int64_t[]){2, 3}, (int64_t[]){9, 0, 2, 10, 2, 3}),
                       ft(2, (int64_t[]){1, 2}, (float[]){11, 12}), it64(0, NULL, &id10)};
  CHECK_OK(sm__session_run(s, feeds, in2, 4, fetch, 1, NULL, 0, &out));
  static const float want[6] = {1, 2, 3, 4, 11, 12};
  CHECK(out && sm_tensor_dims(out)[0] == 3 && !memcmp(sm_tensor_data(out), want, sizeof want));
  sm_tensor_free(out);
  for (int i = 0; i < 4; i++) sm_tensor_free(in1[i]), sm_tensor_free(in2[i]);
  sm__session_free(s);
}

/* Attrs TF's op registration refuses before a kernel runs: refused here with a message. */
static void test_attr_errors(void) {
#define BOP "op: \"Batch\" attr { key: \"T\" value { list { type: DT_FLOAT } } } attr { key: \"max_batch_size\" value { i: 4 } } " \
            "attr { key: \"grad_timeout_micros\" value { i: 0 } } attr { key: \"batch_timeout_micros\" value { i: 0 } } "
  static const struct { const char *node, *want; } c[] = {
      {"op: \"ImageSummary\" attr { key: \"T\" value { type: DT_FLOAT } } attr { key: \"max_images\" value { i: 0 } }", "max_images must be at least 1"},
      {"op: \"ImageSummary\" attr { key: \"T\" value { type: DT_FLOAT } } attr { key: \"bad_color\" value { tensor { dtype: DT_INT32 "
       "tensor_shape { dim { size: 1 } } int_val: 1 } } }", "bad_color must be uint8, got int32"},
      {"op: \"AudioSummaryV2\" attr { key: \"max_outputs\" value { i: -1 } }", "max_outputs must be at least 1"},
      {BOP "attr { key: \"num_batch_threads\" value { i: 1 } } attr { key: \"allowed_batch_sizes\" value { list { i: 2 i: 3 } } }",
       "final entry in allowed_batch_sizes must equal max_batch_size"},
      {BOP "attr { key: \"num_batch_threads\" value { i: 1 } } attr { key: \"allowed_batch_sizes\" value { list { i: 3 i: 2 i: 4 } } }",
       "monotonically increasing"},
      {BOP "attr { key: \"num_batch_threads\" value { i: 0 } }", "num_batch_threads must be positive"},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    sm_tensor *in[3] = {0}, *out[3] = {0};
    CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &in[0]));
    CHECK_OK(sm_tensor_new(SM_FLOAT, 4, (int64_t[]){1, 2, 2, 1}, &in[1]));
    CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &in[2]));
    int batch = strstr(c[i].node, "Batch") != NULL;
    sm_status *st = batch ? run_node(c[i].node, 1, &in[1], 3, out) : run_node(c[i].node, strstr(c[i].node, "Audio") ? 3 : 2, in, 1, out);
    if (!st || !strstr(sm_status_message(st), c[i].want)) fprintf(stderr, "attr case %zu: %s\n", i, st ? sm_status_message(st) : "ok");
    CHECK(st && strstr(sm_status_message(st), c[i].want));
    sm_status_free(st);
    for (int k = 0; k < 3; k++) sm_tensor_free(in[k]), sm_tensor_free(out[k]);
  }
}

int main(void) {
  int bad = 0;
  size_t n = sizeof imgsum_cases / sizeof *imgsum_cases;
  for (size_t i = 0; i < n; i++) bad += run_case(&imgsum_cases[i]);
  printf("imgsum: %zu cases, %d failed\n", n, bad);
  CHECK(bad == 0);
  test_attr_errors();
  test_batch_lone();
  test_batch_model_unbatch();
  test_unbatch_across_runs();
  test_unbatch_concurrent();
  test_unbatch_grad_across_runs();
  TEST_MAIN_END();
}
