/* test_ops_cudnn_rnn.c - the cuDNN RNN ops' CPU kernels (src/ops/rnn_cudnn.c: CudnnRNN, CudnnRNNV2,
 * CudnnRNNV3, CudnnRNNParamsSize) against TensorFlow: the raw-op cases tools/gen_cudnn_rnn_cases.py
 * computes with TF's CPU RNN layers over the same weights (TF has no CPU kernel for these ops), floats
 * within 1e-5 relative; and the Keras 3 models it exports as a GPU machine does
 * (tests/fixtures/cudnn_rnn/<name>: CudnnRNNV3 in the graph), run through the public API against the
 * CPU path's answers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "cudnn_rnn_cases.h"
#include "tc_case_run.h"

/* CudnnRNNParamsSize: cuDNN's buffer sizes (both biases): a Keras LSTM(4) over 3 features holds
 * 48 + 64 + 16 = 128 weights, cuDNN 144. */
static void test_params_size(void) {
  static const struct {
    const char *mode, *dir, *S;
    int layers, units, input;
    int64_t want;
  } c[] = {
      {"lstm", "unidirectional", "DT_INT32", 1, 4, 3, 144},
      {"gru", "unidirectional", "DT_INT64", 1, 4, 3, 3 * 4 * 3 + 3 * 4 * 4 + 2 * 3 * 4},
      {"rnn_tanh", "bidirectional", "DT_INT32", 2, 2, 5, 2 * (10 + 4 + 4) + 2 * (8 + 4 + 4)},
      {"gru", "bidirectional", "DT_INT32", 1, 2, 2, 2 * (3 * 4 + 3 * 4 + 12)},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    sm_tensor *in[3] = {0}, *out[1] = {0};
    int v[3] = {c[i].layers, c[i].units, c[i].input};
    for (int k = 0; k < 3; k++) {
      CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &in[k]));
      if (in[k]) *(int32_t *)sm_tensor_data(in[k]) = v[k];
    }
    char node[512];
    snprintf(node, sizeof node,
             "op: \"CudnnRNNParamsSize\" attr { key: \"T\" value { type: DT_FLOAT } } attr { key: \"S\" value { type: %s } } "
             "attr { key: \"rnn_mode\" value { s: \"%s\" } } attr { key: \"direction\" value { s: \"%s\" } }",
             c[i].S, c[i].mode, c[i].dir);
    CHECK_OK(run_node(node, 3, in, 1, out));
    if (out[0]) {
      CHECK(sm_tensor_rank(out[0]) == 1 && sm_tensor_dims(out[0])[0] == 1);
      int64_t got = sm_tensor_dtype(out[0]) == SM_INT64 ? *(int64_t *)sm_tensor_data(out[0]) : *(int32_t *)sm_tensor_data(out[0]);
      if (got != c[i].want) fprintf(stderr, "params size %s: %lld, want %lld\n", c[i].mode, (long long)got, (long long)c[i].want);
      CHECK(got == c[i].want);
    }
    for (int k = 0; k < 3; k++) sm_tensor_free(in[k]);
    sm_tensor_free(out[0]);
  }
}

/* The exported models: every output within 1e-5 relative of the CPU path's. */
static void test_keras_model(const char *name, int nout, const char *const *outs) {
  char dir[1024], p[1100];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/cudnn_rnn/%s", SM_SOURCE_DIR, name);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  snprintf(p, sizeof p, "%s/model", dir);
  CHECK_OK(sm_model_load(p, tags, 1, NULL, &m));
  sm_tensor *x = NULL, *got[4] = {0};
  snprintf(p, sizeof p, "%s/x.npy", dir);
  CHECK_OK(sm_npy_read(p, &x));
  if (!m || !x) goto done;
  const char *in_alias[] = {"x"};
  CHECK_OK(sm_model_run(m, "serving_default", in_alias, &x, 1, outs, nout, got));
  tc_tolerance = 1e-5;
  for (int i = 0; i < nout; i++) {
    sm_tensor *want = NULL;
    snprintf(p, sizeof p, "%s/want_%s.npy", dir, outs[i]);
    CHECK_OK(sm_npy_read(p, &want));
    int ok = want && got[i] && tc_match(want, got[i]);
    if (!ok) {
      fprintf(stderr, "%s: output %s differs\n", name, outs[i]);
      if (want) print_tensor("want", want);
      if (got[i]) print_tensor("got ", got[i]);
    }
    CHECK(ok);
    sm_tensor_free(want);
  }
done:
  for (int i = 0; i < 4; i++) sm_tensor_free(got[i]);
  sm_tensor_free(x);
  sm_model_free(m);
}

int main(void) {
  tc_tolerance = 1e-5;
  int bad = 0;
  size_t n = sizeof cudnn_rnn_cases / sizeof *cudnn_rnn_cases;
  for (size_t i = 0; i < n; i++) bad += run_case(&cudnn_rnn_cases[i]);
  printf("cudnn_rnn: %zu cases, %d failed\n", n, bad);
  CHECK(bad == 0);
  test_params_size();
  static const char *const masked[] = {"gru_last", "gru_state", "lstm_seq"}, *const stacked[] = {"c", "h", "out"};
  test_keras_model("keras_masked", 3, masked);
  test_keras_model("keras_stacked", 3, stacked);
  TEST_MAIN_END();
}
