/* test_fpmode.c - TensorFlow's floating-point mode around runs and training (src/base/fpmode.c):
 * denormals flushed (exp(-103) is 0, a product of 1e-20 * 1e-20 is 0) on the caller's thread and
 * on the pool's workers (an Exp over 2^20 elements split over the pool: every element 0), rounding
 * to nearest inside a run whatever the host set, and the host's own mode back after every run,
 * fit, evaluate and predict, and inside fit's callback; a Conv2D and a MatMul of subnormal products
 * (oneDNN's where it is loaded, split over the pool) all 0. Also run as test_fpmode_ieee
 * (SM_FLUSH_DENORMALS=0): IEEE subnormals everywhere, the host's mode never touched.
 * x86-64 only (MXCSR); elsewhere skipped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/fpmode.h"
#include "runtime/session.h"
#include "savedmodel/train.h"
#include "test.h"
#include "train/train_internal.h"

#if defined(__x86_64__)
#include <xmmintrin.h>

#define MODE_BITS 0xFFC0u /* everything but the exception flags */
static int flush;

/* A one-node graph over one float input run once: out[0] (caller frees). */
static sm_tensor *run1(const char *op, const sm_tensor *x) {
  char g[512];
  snprintf(g, sizeof g,
           "graph_def {\n node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           " node { name: \"y\" op: \"%s\" input: \"x\" attr { key: \"T\" value { type: DT_FLOAT } } }\n}\n",
           op);
  sm_session *s = NULL;
  sm_tensor *out[1] = {0};
  const char *feed[1] = {"x"}, *fetch[1] = {"y:0"};
  sm_tensor *const in[1] = {(sm_tensor *)x};
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  if (s) CHECK_OK(sm__session_run(s, feed, in, 1, fetch, 1, NULL, 0, out));
  sm__session_free(s);
  return out[0];
}

static sm_tensor *filled(int64_t n, float v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &n, &t));
  for (int64_t i = 0; t && i < n; i++) ((float *)sm_tensor_data(t))[i] = v;
  return t;
}

/* exp(-103): 0 flushed, the subnormal 1.4e-45 in IEEE, for every element (the big one split over
 * the pool's workers); the host's mode the same after the run. */
static void check_exp(int64_t n, unsigned host) {
  _mm_setcsr(host);
  sm_tensor *x = filled(n, -103.0f), *y = x ? run1("Exp", x) : NULL;
  unsigned after = _mm_getcsr();
  if ((after & MODE_BITS) != (host & MODE_BITS)) {
    fprintf(stderr, "Exp over %lld: MXCSR %#x after the run, %#x before\n", (long long)n, after, host);
    sm_test_failures++;
  }
  _mm_setcsr(0x1F80);
  int64_t bad = 0;
  int own = !flush && (host & 0x8040); /* IEEE: the host's flushing thread computes its part flushed */
  for (int64_t i = 0; y && !own && i < n; i++) {
    float v = ((const float *)sm_tensor_data(y))[i];
    bad += flush ? v != 0.0f : fpclassify(v) != FP_SUBNORMAL;
  }
  if (bad) {
    fprintf(stderr, "Exp(-103) over %lld elements (host MXCSR %#x): %lld not %s\n", (long long)n, host, (long long)bad,
            flush ? "0" : "subnormal");
    sm_test_failures++;
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
}

/* A Conv2D [1,32,32,16] (*) [3,3,16,32] and a MatMul [64,512] x [512,256], the weights Consts of
 * 1e-20 (so oneDNN runs them where it is loaded, split over the pool: 4.7M and 8.4M multiply-adds),
 * the input 1e-20: every product the subnormal 1e-40, so every output 0 flushed (whichever thread
 * ran it: the caller's, a pool worker, or one of oneDNN's or OpenBLAS's own) and > 0 in IEEE. */
static void check_products(void) {
  static const char *const graphs[2] = {
      "graph_def {\n node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
      " node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value {"
      " tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 3 } dim { size: 16 } dim { size: 32 } }"
      " float_val: 1e-20 } } } }\n"
      " node { name: \"y\" op: \"Conv2D\" input: \"x\" input: \"f\" attr { key: \"T\" value { type: DT_FLOAT } }"
      " attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: \"padding\" value { s: \"SAME\" } } }\n}\n",
      "graph_def {\n node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
      " node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value {"
      " tensor { dtype: DT_FLOAT tensor_shape { dim { size: 512 } dim { size: 256 } } float_val: 1e-20 } } } }\n"
      " node { name: \"y\" op: \"MatMul\" input: \"x\" input: \"f\" attr { key: \"T\" value { type: DT_FLOAT } } }\n}\n"};
  static const int64_t dims[2][4] = {{1, 32, 32, 16}, {64, 512}};
  for (int k = 0; k < 2; k++) {
    sm_tensor *x = NULL, *y = NULL;
    CHECK_OK(sm_tensor_new(SM_FLOAT, k ? 2 : 4, dims[k], &x));
    if (!x) return;
    for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) ((float *)sm_tensor_data(x))[i] = 1e-20f;
    sm_session *s = NULL;
    const char *feed[1] = {"x"}, *fetch[1] = {"y:0"};
    sm_tensor *const in[1] = {x};
    CHECK_OK(sm__session_from_pbtxt(graphs[k], &s));
    for (int run = 0; s && run < 3; run++) { /* the pool's workers join in as they wake */
      _mm_setcsr(0x1F80);
      CHECK_OK(sm__session_run(s, feed, in, 1, fetch, 1, NULL, 0, &y));
      int64_t bad = 0, n = y ? sm_tensor_num_elements(y) : 0;
      for (int64_t i = 0; i < n; i++) {
        float v = ((const float *)sm_tensor_data(y))[i];
        bad += flush ? v != 0.0f : !(v > 0.0f);
      }
      if (bad) {
        fprintf(stderr, "%s of 1e-20s, run %d: %lld of %lld outputs not %s\n", k ? "MatMul" : "Conv2D", run,
                (long long)bad, (long long)n, flush ? "0" : "> 0");
        sm_test_failures++;
      }
      sm_tensor_free(y);
      y = NULL;
    }
    sm__session_free(s);
    sm_tensor_free(x);
  }
}

/* Host rounding toward zero: 1 / 3 rounds to nearest inside a run (TF's mode), to zero without. */
static void check_rounding(void) {
  _mm_setcsr(0x1F80 | 0x6000);
  sm_tensor *x = filled(3, 3.0f), *y = x ? run1("Reciprocal", x) : NULL;
  unsigned after = _mm_getcsr();
  _mm_setcsr(0x1F80);
  CHECK_EQ_INT((int)(after & MODE_BITS), (int)((0x1F80 | 0x6000) & MODE_BITS));
  if (y) {
    float v = ((const float *)sm_tensor_data(y))[0], nearest = 1.0f / 3.0f;
    uint32_t got, want;
    memcpy(&got, &v, 4);
    memcpy(&want, &nearest, 4);
    CHECK_EQ_INT((int)got, (int)(flush ? want : want - 1)); /* 0x3eaaaaab nearest, ...aa toward zero */
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
}

static int cb_calls, cb_bad;
static unsigned cb_host;
static int callback(const sm_fit_progress *p, void *ctx) {
  (void)p, (void)ctx;
  cb_calls++;
  cb_bad += (_mm_getcsr() & MODE_BITS) != (cb_host & MODE_BITS);
  return 0;
}

/* Training: a Dense(1) whose output is 1e-20 * 1e-20 summed (subnormal): predict gives 0 flushed;
 * the host's mode inside fit's callback and after fit / evaluate / predict. */
static void check_train(void) {
  int64_t in[1] = {4};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(1, in, &m));
  if (!m) return;
  CHECK_OK(sm_seq_dense(m, 1, SM_ACT_NONE));
  sm_optimizer o = sm_sgd_defaults();
  sm_loss l = {SM_LOSS_MSE, 0};
  CHECK_OK(sm_seq_compile(m, &o, &l, 1));
  float *w = sm_tensor_data(m->layers[0].kernel);
  for (int i = 0; i < 4; i++) w[i] = 1e-20f;
  memset(sm_tensor_data(m->layers[0].bias), 0, sizeof(float));
  int64_t xd[2] = {8, 4}, yd[2] = {8, 1};
  sm_tensor *x = NULL, *y = NULL, *p = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, xd, &x));
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, yd, &y));
  if (!x || !y) goto out;
  for (int i = 0; i < 32; i++) ((float *)sm_tensor_data(x))[i] = 1e-20f;
  cb_host = 0x1F80 | 0x2000; /* the host rounds down, denormals kept */
  _mm_setcsr(cb_host);
  CHECK_OK(sm_seq_predict(m, x, 8, &p));
  unsigned after = _mm_getcsr();
  _mm_setcsr(0x1F80);
  CHECK_EQ_INT((int)(after & MODE_BITS), (int)(cb_host & MODE_BITS));
  for (int i = 0; p && i < 8; i++) {
    float v = ((const float *)sm_tensor_data(p))[i];
    if (flush ? v != 0.0f : !(v > 0.0f && v < 1e-38f)) {
      fprintf(stderr, "predict [%d] = %g: want %s\n", i, v, flush ? "0" : "the subnormal 4e-40");
      sm_test_failures++;
      break;
    }
  }
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 2;
  fo.batch_size = 4;
  fo.callback = callback;
  _mm_setcsr(cb_host);
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  double loss = 0;
  CHECK_OK(sm_seq_evaluate(m, x, y, 4, &loss, NULL));
  after = _mm_getcsr();
  _mm_setcsr(0x1F80);
  CHECK_EQ_INT((int)(after & MODE_BITS), (int)(cb_host & MODE_BITS));
  CHECK(cb_calls > 0);
  CHECK_EQ_INT(cb_bad, 0);
out:
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_tensor_free(p);
  sm_seq_free(m);
}

int main(void) {
  flush = sm__fpmode_flushes();
  printf("fpmode: SM_FLUSH_DENORMALS %s\n", flush ? "on (TF's mode)" : "0 (IEEE)");
  check_exp(17, 0x1F80);            /* the caller's thread alone */
  check_exp(1 << 20, 0x1F80);       /* split over the pool */
  check_exp(1 << 20, 0x1F80 | 0x8040); /* a host that flushes itself: kept */
  check_exp(1 << 20, 0x1F80);       /* the workers, started, keep their mode */
  if (flush) check_rounding();
  check_products();
  check_train();
  TEST_MAIN_END();
}
#else
int main(void) {
  printf("fpmode: x86-64 only, skipped\n");
  return SM_TEST_SKIP;
}
#endif
