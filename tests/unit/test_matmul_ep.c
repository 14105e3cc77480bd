/* test_matmul_ep.c - _SmMatMulEp (src/ops/nn_matmul_ep.c): a Dense layer's product with its
 * Reshape, bias and erf GELU as one node. Where the rules fuse and where they must not (a value
 * fetched mid-chain, other GELU constants, a fed bias, SM_MATMUL_EP=0); the fused runs (with a
 * residual Add after them, unfused) against naive loops in double and against the unfused nodes
 * (SM_MATMUL_EP=0 when the plan is built), biases of several shapes, and the bias the kernel
 * refuses. The ctest list runs it with SM_DNNL=0 too (the pool's gemm and vmath's GELU instead of
 * oneDNN's gelu_erf post-op). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite_util.h"

#define ICONST(n, dims, vals)                                                                           \
  "node { name: \"" n "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "             \
  "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: " dims " } } " vals \
  " } } } } "
#define RESHAPE(n, in, shp) \
  "node { name: \"" n "\" op: \"Reshape\" input: \"" in "\" input: \"" shp "\" " TF "attr { key: \"Tshape\" value { type: DT_INT32 } } } "

/* Tensordot's form: mm = MatMul(x [6, 8], w [8, 12]) -> r = Reshape [2, 3, 12] -> b = BiasAdd(bias
 * [12]) -> y = 0.5 b (1 + erf(b * c1)) with c1 `c1` ("m" is 0.5 b). */
static char *ffn_graph_shape(const char *c1, int d0, int d1, int n) {
  char *g = malloc(8192);
  if (!g) exit(1);
  snprintf(g, 8192,
           G(PH("x") PH("w") PH("bias") FCONST("c0", "0.5") FCONST("c1", "%s") FCONST("c2", "1")
                 ICONST("shp", "3", "int_val: %d int_val: %d int_val: %d") NODE2("mm", "MatMul", "x", "w")
                     RESHAPE("r", "mm", "shp") BIAS("b", "r", "bias") NODE2("m", "Mul", "c0", "b")
                         NODE2("m1", "Mul", "b", "c1") NODE1("e", "Erf", "m1") NODE2("a", "AddV2", "c2", "e")
                             NODE2("y", "Mul", "m", "a")),
           c1, d0, d1, n);
  return g;
}

static char *ffn_graph(const char *c1) { return ffn_graph_shape(c1, 2, 3, 12); }

/* EinsumDense's form: wr = Reshape(w [8, 3, 4], [8, 12]); bm = BatchMatMulV2(x [2, 5, 8], wr) ->
 * r = Reshape [2, 5, 3, 4] -> q = AddV2(r, bias: a Const of dims `bdims`, values i / 8 - 0.7) ->
 * y = AddV2(q, res) (the residual). */
static char *dense_graph(const char *bdims, int nb) {
  char *g = malloc(16384);
  if (!g) exit(1);
  size_t at = (size_t)snprintf(g, 16384,
                               "graph_def { " PH("x") PH("w") PH("res") ICONST("wshp", "2", "int_val: 8 int_val: 12")
                                   ICONST("shp", "4", "int_val: 2 int_val: 5 int_val: 3 int_val: 4")
                                       "node { name: \"bias\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                                       "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { %s }",
                               bdims);
  for (int i = 0; i < nb; i++) at += (size_t)snprintf(g + at, 16384 - at, " float_val: %g", i / 8.0 - 0.7);
  snprintf(g + at, 16384 - at,
           " } } } } " RESHAPE("wr", "w", "wshp") NODE2("bm", "BatchMatMulV2", "x", "wr") RESHAPE("r", "bm", "shp")
               NODE2("q", "AddV2", "r", "bias") NODE2("y", "AddV2", "q", "res") "}");
  return g;
}

/* Dense(x) + x with x [2, 5, 12]: bm = BatchMatMulV2(x, Reshape(w [12, 12])) -> q = AddV2(bm, bias
 * (a scalar Const)) -> y = AddV2(q, x): the product's own output, no Reshape. */
static const char *self_graph =
    G(PH("x") PH("w") ICONST("wshp", "2", "int_val: 12 int_val: 12") FCONST("bias", "0.25") RESHAPE("wr", "w", "wshp")
          NODE2("bm", "BatchMatMulV2", "x", "wr") NODE2("q", "AddV2", "bm", "bias") NODE2("y", "AddV2", "q", "x"));

static void test_rules(void) {
  char *f = ffn_graph("0.70710678"), *f2 = ffn_graph("0.7071"), *d = dense_graph("dim { size: 3 } dim { size: 4 }", 12);
  expect(f, "x w bias", "y", NULL, "y=_SmMatMulEp[](x:0,w:0,shp:0,bias:0)", NULL); /* two rules' work */
  /* other constants: the bias joins the product, the GELU stays _SmGeluErf */
  expect(f2, "x w bias", "y", NULL, "b=_SmMatMulEp[](x:0,w:0,shp:0,bias:0) y=_SmGeluErf[](b:0,c0:0,c1:0,c2:0)", NULL);
  expect(f, "x w bias", "y b", NULL, "b=_SmMatMulEp[](x:0,w:0,shp:0,bias:0) y=_SmGeluErf[](b:0,c0:0,c1:0,c2:0)", NULL);
  expect(f, "x w bias", "y r", NULL, "y=_SmGeluErf[](r:0,bias:0,c0:0,c1:0,c2:0)", NULL); /* the Reshape fetched */
  expect(d, "x w res", "y", NULL, "q=_SmMatMulEp[](x:0,wr:0,shp:0,bias:0)", "q");
  expect(d, "x w res", "y r", NULL, "", NULL); /* the Reshape fetched */
  expect(self_graph, "x w", "y", NULL, "q=_SmMatMulEp[](x:0,wr:0,bias:0)", "q");
  /* a fed bias is not known to be small: AddV2 stays */
  expect(d, "x w res bias", "y", NULL, "", NULL);
  setenv("SM_MATMUL_EP", "0", 1);
  expect(d, "x w res", "y", NULL, "", NULL);
  expect(f, "x w bias", "y", NULL, "y=_SmGeluErf[](r:0,bias:0,c0:0,c1:0,c2:0)", NULL);
  unsetenv("SM_MATMUL_EP");
  free(f);
  free(f2);
  free(d);
}

/* Runs graph g (fetch y) fused and unfused (SM_MATMUL_EP=0 while its plan is built); both against
 * want (n values, computed in double) within 1e-5 relative. */
static void run_both(const char *g, const char *const *names, sm_tensor *const *feeds, int nfeeds, const double *want,
                     int64_t n) {
  const char *fy[1] = {"y"};
  for (int plain = 0; plain < 2; plain++) {
    if (plain) setenv("SM_MATMUL_EP", "0", 1);
    sm_session *s = NULL;
    sm_tensor *o = NULL;
    CHECK_OK(sm__session_from_pbtxt(g, &s));
    for (int round = 0; round < 2 && s; round++) { /* a second run: the cached primitive and packed weights */
      CHECK_OK(sm__session_run(s, names, feeds, nfeeds, fy, 1, NULL, 0, &o));
      if (o) {
        CHECK_EQ_INT(sm_tensor_num_elements(o), n);
        const float *y = sm_tensor_data(o);
        int bad = -1;
        for (int64_t i = 0; i < n && bad < 0 && sm_tensor_num_elements(o) == n; i++)
          if (!(fabs(y[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])))) bad = (int)i;
        if (bad >= 0) fprintf(stderr, "plain %d: y[%d] = %.9g, want %.9g\n", plain, bad, y[bad], want[bad]);
        CHECK(bad < 0);
      }
      sm_tensor_free(o);
      o = NULL;
    }
    sm__session_free(s);
    if (plain) unsetenv("SM_MATMUL_EP");
  }
}

/* Running graph g (fetch y) fails with a message holding needle. */
static void run_err(const char *g, const char *const *names, sm_tensor *const *feeds, int nfeeds, const char *needle) {
  sm_session *s = NULL;
  sm_tensor *o = NULL;
  const char *fy[1] = {"y"};
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  if (s) CHECK_ERR(sm__session_run(s, names, feeds, nfeeds, fy, 1, NULL, 0, &o), needle);
  sm_tensor_free(o);
  sm__session_free(s);
}

static void test_ffn_runs(void) {
  int64_t xd[2] = {6, 8}, wd[2] = {8, 12}, bd[1] = {12};
  sm_tensor *x = filled(2, xd, 1), *w = filled(2, wd, 2), *bias = filled(1, bd, 3);
  const float *X = sm_tensor_data(x), *W = sm_tensor_data(w), *B = sm_tensor_data(bias);
  double want[72];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 12; j++) {
      double v = B[j];
      for (int k = 0; k < 8; k++) v += (double)X[i * 8 + k] * W[k * 12 + j];
      want[i * 12 + j] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
    }
  char *g = ffn_graph("0.70710678");
  const char *names[3] = {"x", "w", "bias"};
  sm_tensor *feeds[3] = {x, w, bias};
  run_both(g, names, feeds, 3, want, 72);
  /* a bias of another length: BiasAdd's message */
  int64_t b5d[1] = {5};
  sm_tensor *b5 = filled(1, b5d, 4), *f5[3] = {x, w, b5};
  run_err(g, names, f5, 3, "Must provide as many biases");
  sm_tensor_free(b5);
  free(g);
  sm_tensor_free(x);
  sm_tensor_free(w);
  sm_tensor_free(bias);
}

/* The FFN at the Transformer's proportions (x [rows, K], w [K, N], N >= 2K, K >= 128, rows <= 512):
 * on a CPU without AVX-512 oneDNN declines these (nn_dnnl.c mm_wide_to_blas) and the pool's sgemm
 * plus vmath's bias and GELU compute them; with N < 2K (and with AVX-512) oneDNN does, its
 * gelu_erf post-op. Both against the double loops, fused and unfused. */
static void test_ffn_wide(void) {
  static const int shapes[][3] = {{128, 128, 256}, {64, 128, 255}, {34, 128, 384}, {514, 128, 256}};
  for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
    int rows = shapes[t][0], K = shapes[t][1], N = shapes[t][2];
    int64_t xd[2] = {rows, K}, wd[2] = {K, N}, bd[1] = {N};
    sm_tensor *x = filled(2, xd, 11), *w = filled(2, wd, 12), *bias = filled(1, bd, 13);
    float *W = sm_tensor_data(w);
    for (int64_t i = 0; i < (int64_t)K * N; i++) W[i] /= 16.0f; /* sums of order 1 */
    const float *X = sm_tensor_data(x), *B = sm_tensor_data(bias);
    double *want = malloc(sizeof *want * (size_t)rows * (size_t)N);
    if (!want) exit(1);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < N; j++) {
        double v = B[j];
        for (int k = 0; k < K; k++) v += (double)X[i * K + k] * W[k * N + j];
        want[(size_t)i * (size_t)N + (size_t)j] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
      }
    char *g = ffn_graph_shape("0.70710678", 2, rows / 2, N);
    const char *names[3] = {"x", "w", "bias"};
    sm_tensor *feeds[3] = {x, w, bias};
    run_both(g, names, feeds, 3, want, (int64_t)rows * N);
    free(g);
    free(want);
    sm_tensor_free(x);
    sm_tensor_free(w);
    sm_tensor_free(bias);
  }
}

static void test_dense_runs(void) {
  int64_t xd[3] = {2, 5, 8}, wd[3] = {8, 3, 4}, rd[4] = {2, 5, 3, 4}, rbd[3] = {5, 3, 4};
  sm_tensor *x = filled(3, xd, 5), *w = filled(3, wd, 6), *res = filled(4, rd, 7), *resb = filled(3, rbd, 8);
  const float *X = sm_tensor_data(x), *W = sm_tensor_data(w);
  const char *names[3] = {"x", "w", "res"};
  for (int bcast = 0; bcast < 2; bcast++) { /* a residual of y's shape, then one broadcast over the batch */
    const float *R = sm_tensor_data(bcast ? resb : res);
    double want[120];
    for (int i = 0; i < 10; i++)
      for (int j = 0; j < 12; j++) {
        double v = 0;
        for (int k = 0; k < 8; k++) v += (double)X[i * 8 + k] * W[k * 12 + j];
        want[i * 12 + j] = v + (j / 8.0 - 0.7) + R[bcast ? (i % 5) * 12 + j : i * 12 + j];
      }
    char *g = dense_graph("dim { size: 3 } dim { size: 4 }", 12);
    sm_tensor *feeds[3] = {x, w, bcast ? resb : res};
    run_both(g, names, feeds, 3, want, 120);
    free(g);
    /* the bias with leading 1s: the same values */
    g = dense_graph("dim { size: 1 } dim { size: 3 } dim { size: 4 }", 12);
    run_both(g, names, feeds, 3, want, 120);
    free(g);
  }
  /* a bias along the last dim only ([4], repeating every 4 columns) */
  {
    double want[120];
    for (int i = 0; i < 10; i++)
      for (int j = 0; j < 12; j++) {
        double v = 0;
        for (int k = 0; k < 8; k++) v += (double)X[i * 8 + k] * W[k * 12 + j];
        want[i * 12 + j] = v + ((j % 4) / 8.0 - 0.7) + ((const float *)sm_tensor_data(res))[i * 12 + j];
      }
    char *g = dense_graph("dim { size: 4 }", 4);
    sm_tensor *feeds[3] = {x, w, res};
    run_both(g, names, feeds, 3, want, 120);
    free(g);
  }
  /* a bias that broadcasts over a leading dim: the fused kernel cannot, and says so */
  {
    char *g = dense_graph("dim { size: 2 } dim { size: 1 } dim { size: 1 } dim { size: 1 }", 2);
    sm_tensor *feeds[3] = {x, w, res};
    run_err(g, names, feeds, 3, "is not a per-column bias");
    free(g);
  }
  sm_tensor_free(x);
  sm_tensor_free(w);
  sm_tensor_free(res);
  sm_tensor_free(resb);
}

static void test_self_residual(void) {
  int64_t xd[3] = {2, 5, 12}, wd[2] = {12, 12};
  sm_tensor *x = filled(3, xd, 9), *w = filled(2, wd, 10);
  const float *X = sm_tensor_data(x), *W = sm_tensor_data(w);
  double want[120];
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 12; j++) {
      double v = 0.25 + X[i * 12 + j];
      for (int k = 0; k < 12; k++) v += (double)X[i * 12 + k] * W[k * 12 + j];
      want[i * 12 + j] = v;
    }
  const char *names[2] = {"x", "w"};
  sm_tensor *feeds[2] = {x, w};
  run_both(self_graph, names, feeds, 2, want, 120);
  sm_tensor_free(x);
  sm_tensor_free(w);
}

int main(void) {
  test_rules();
  test_ffn_runs();
  test_ffn_wide();
  test_dense_runs();
  test_self_residual();
  TEST_MAIN_END();
}
