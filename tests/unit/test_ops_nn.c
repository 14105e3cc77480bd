/* test_ops_nn.c - the nn kernels (MatMul, BatchMatMul, BiasAdd, Conv2D, DepthwiseConv2dNative,
 * MaxPool/V2, AvgPool, FusedBatchNorm*) run through a session:
 *   - nn_cases.h: small cases whose answers TensorFlow computed (tools/gen_nn_cases.py), graphs
 *     exported by TF with stripped default attrs;
 *   - larger random cases (parallel paths, several im2col blocks) against naive loops here;
 *   - bad attrs and hostile shapes, which must fail with a message, never crash. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/tensor_internal.h"
#include "nn_cases.h"
#include "ops/nn_dnnl.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#define TFC_NN_ELEMS
#define TFC_CASE nn_case
#define TFC_INPUT nn_input
#define TFC_OUTPUT nn_output
#define TFC_OPDEFS nn_opdefs
#define TFC_INPUT_VALUE nn_input_value
#include "tf_case_run.h"

/* ---- hand-built graphs: one op between float placeholders -------------------------------------- */
static char *graph1(const char *op, int nin, const char *dtype, const char *attrs) {
  size_t cap = 4096 + strlen(attrs);
  char *g = malloc(cap);
  size_t n = 0;
  for (int i = 0; i < nin; i++)
    n += (size_t)snprintf(g + n, cap - n, "node { name: \"in%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } } ",
                          i, dtype);
  n += (size_t)snprintf(g + n, cap - n, "node { name: \"y\" op: \"%s\"", op);
  for (int i = 0; i < nin; i++) n += (size_t)snprintf(g + n, cap - n, " input: \"in%d\"", i);
  snprintf(g + n, cap - n, " attr { key: \"T\" value { type: %s } } %s }", dtype, attrs);
  char *mg = metagraph(op, g);
  free(g);
  return mg;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static sm_tensor *rand_tensor(int rank, const int64_t *dims) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (!t) exit(1);
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) p[i] = frand();
  return t;
}

static void compare(const char *what, const sm_tensor *got, const double *want, int64_t n, double tol) {
  if (!got || sm_tensor_num_elements(got) != n) {
    fprintf(stderr, "%s: wrong element count\n", what);
    sm_test_failures++;
    return;
  }
  int bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (!close_enough(((const float *)sm_tensor_data(got))[i], want[i], tol) && bad++ < 5)
      fprintf(stderr, "%s [%lld]: got %.9g want %.9g\n", what, (long long)i, ((const float *)sm_tensor_data(got))[i], want[i]);
  if (bad) sm_test_failures++;
}

/* The convolution by definition, in doubles: a new [N, OH, OW, CO] array (the caller frees it). */
static double *naive_conv_ref(const float *x, const float *f, int64_t N, int64_t H, int64_t W, int64_t C, int64_t KH,
                              int64_t KW, int64_t Cf, int64_t Co, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                              int same, int depthwise, int64_t *oh_out, int64_t *ow_out) {
  int64_t ekh = (KH - 1) * dh + 1, ekw = (KW - 1) * dw + 1;
  int64_t OH = same ? (H + sh - 1) / sh : (H - ekh + sh) / sh, OW = same ? (W + sw - 1) / sw : (W - ekw + sw) / sw;
  int64_t pt = same ? ((OH - 1) * sh + ekh - H > 0 ? ((OH - 1) * sh + ekh - H) / 2 : 0) : 0;
  int64_t pl = same ? ((OW - 1) * sw + ekw - W > 0 ? ((OW - 1) * sw + ekw - W) / 2 : 0) : 0;
  int64_t CO = depthwise ? C * Co : Co, G = depthwise ? 1 : C / Cf, CoG = Co / (G ? G : 1);
  double *want = calloc((size_t)(N * OH * OW * CO), sizeof *want);
  for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++)
        for (int64_t o = 0; o < CO; o++) {
          double acc = 0;
          for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
              int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const float *px = x + ((n * H + ih) * W + iw) * C;
              if (depthwise) {
                acc += (double)px[o / Co] * f[((kh * KW + kw) * C + o / Co) * Co + o % Co];
              } else {
                int64_t g = o / CoG;
                for (int64_t ci = 0; ci < Cf; ci++) acc += (double)px[g * Cf + ci] * f[((kh * KW + kw) * Cf + ci) * Co + o];
              }
            }
          want[((n * OH + oh) * OW + ow) * CO + o] = acc;
        }
  *oh_out = OH;
  *ow_out = OW;
  return want;
}

static double naive_tol = 1e-5; /* conv_vs_naive's and matmul_vs_naive's */

/* Conv2D NHWC against direct loops: several im2col blocks, both pool threads, groups. */
static void conv_vs_naive(int64_t N, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, int64_t Cf, int64_t Co,
                          int64_t sh, int64_t sw, int64_t dh, int64_t dw, int same, int depthwise) {
  int64_t xd[4] = {N, H, W, C}, fd[4] = {KH, KW, Cf, Co};
  sm_tensor *in[2] = {rand_tensor(4, xd), rand_tensor(4, fd)}, *out = NULL;
  char attrs[512];
  snprintf(attrs, sizeof attrs,
           "attr { key: \"strides\" value { list { i: 1 i: %lld i: %lld i: 1 } } } attr { key: \"padding\" value { s: "
           "\"%s\" } } attr { key: \"dilations\" value { list { i: 1 i: %lld i: %lld i: 1 } } }",
           (long long)sh, (long long)sw, same ? "SAME" : "VALID", (long long)dh, (long long)dw);
  const char *op = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
  char *mg = graph1(op, 2, "DT_FLOAT", attrs);
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 2, &f0, 1, &out));
  int64_t OH, OW;
  double *want = naive_conv_ref(sm_tensor_data(in[0]), sm_tensor_data(in[1]), N, H, W, C, KH, KW, Cf, Co, sh, sw, dh,
                                dw, same, depthwise, &OH, &OW);
  int64_t CO = depthwise ? C * Co : Co;
  char what[128];
  snprintf(what, sizeof what, "%s %lldx%lldx%lldx%lld k%lldx%lld", op, (long long)N, (long long)H, (long long)W,
           (long long)C, (long long)KH, (long long)KW);
  compare(what, out, want, N * OH * OW * CO, naive_tol);
  free(want);
  free(mg);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_tensor_free(out);
}

/* _FusedConv2D (bias, maybe a residual Add, an activation) against naive_conv_ref + the epilogue in
 * doubles. With few output pixels and a filter of 1 MB or more this is nn_conv.c's streamed path
 * (conv_stream: taps wholly in the padding skipped, the filter's rows split over the pool). */
static void fused_vs_naive(int64_t N, int64_t H, int64_t W, int64_t C, int64_t KH, int64_t KW, int64_t Co, int64_t sh,
                           int64_t sw, int64_t dh, int64_t dw, int same, int add, const char *act) {
  int64_t xd[4] = {N, H, W, C}, fd[4] = {KH, KW, C, Co}, bd[1] = {Co}, OH, OW;
  sm_tensor *in[4] = {rand_tensor(4, xd), rand_tensor(4, fd), rand_tensor(1, bd), NULL}, *out = NULL;
  double *want = naive_conv_ref(sm_tensor_data(in[0]), sm_tensor_data(in[1]), N, H, W, C, KH, KW, C, Co, sh, sw, dh, dw,
                                same, 0, &OH, &OW);
  int64_t od[4] = {N, OH, OW, Co}, n = N * OH * OW * Co;
  if (add) in[3] = rand_tensor(4, od);
  const float *bias = sm_tensor_data(in[2]), *addend = add ? sm_tensor_data(in[3]) : NULL;
  for (int64_t i = 0; i < n; i++) {
    double v = want[i] + bias[i % Co] + (add ? addend[i] : 0.0);
    if (!strcmp(act, "Relu")) v = v > 0 ? v : 0;
    else if (!strcmp(act, "Relu6")) v = v < 0 ? 0 : v > 6 ? 6 : v;
    else if (!strcmp(act, "Elu")) v = v > 0 ? v : expm1(v);
    else if (!strcmp(act, "LeakyRelu")) v = v > 0 ? v : 0.2 * v;
    else if (!strcmp(act, "Sigmoid")) v = 1 / (1 + exp(-v));
    else if (!strcmp(act, "Tanh")) v = tanh(v);
    want[i] = v;
  }
  char attrs[1024], ops[128];
  snprintf(ops, sizeof ops, "s: \"BiasAdd\" %s%s%s%s", add ? "s: \"Add\" " : "", *act ? "s: \"" : "", act,
           *act ? "\"" : "");
  snprintf(attrs, sizeof attrs,
           "attr { key: \"strides\" value { list { i: 1 i: %lld i: %lld i: 1 } } } attr { key: \"padding\" value { s: "
           "\"%s\" } } attr { key: \"dilations\" value { list { i: 1 i: %lld i: %lld i: 1 } } } attr { key: "
           "\"fused_ops\" value { list { %s } } } attr { key: \"num_args\" value { i: %d } } attr { key: "
           "\"leakyrelu_alpha\" value { f: 0.2 } } attr { key: \"TArgs\" value { list { type: DT_FLOAT %s} } }",
           (long long)sh, (long long)sw, same ? "SAME" : "VALID", (long long)dh, (long long)dw, ops, 1 + add,
           add ? "type: DT_FLOAT " : "");
  char *mg = graph1("_FusedConv2D", 3 + add, "DT_FLOAT", attrs);
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 3 + add, &f0, 1, &out));
  char what[160];
  snprintf(what, sizeof what, "_FusedConv2D %lldx%lldx%lldx%lld k%lldx%lldx%lld s%lld d%lld %s add%d %s", (long long)N,
           (long long)H, (long long)W, (long long)C, (long long)KH, (long long)KW, (long long)Co, (long long)sh,
           (long long)dh, same ? "SAME" : "VALID", add, act);
  compare(what, out, want, n, 1e-4);
  free(want);
  free(mg);
  for (int i = 0; i < 4; i++) sm_tensor_free(in[i]);
  sm_tensor_free(out);
}

/* _FusedDepthwiseConv2dNative (3x3, multiplier 1, bias, an activation) against naive_conv_ref over the
 * input zero-padded by pads [top, bottom, left, right] (then VALID) + the epilogue in doubles. With
 * explicit pads the node carries them as the fold leaves a zero Pad (_sm_explicit_paddings, padding
 * VALID); else SAME (same) or VALID. On AVX-512 these are nn_dwconv.c's loops: edge pixels, rows in
 * the padding, channel tails, strides, pads of 2 (its masked path), images of 1 and 2 columns; on
 * AVX2 nn_dwconv_avx2.c's for the shapes it takes (C % 8 == 0, one dead row / column at most). */
static void fused_dw_vs_naive(int64_t N, int64_t H, int64_t W, int64_t C, int64_t s, int same, const int64_t *pads,
                              const char *act) {
  int64_t xd[4] = {N, H, W, C}, fd[4] = {3, 3, C, 1}, bd[1] = {C}, OH, OW;
  sm_tensor *in[3] = {rand_tensor(4, xd), rand_tensor(4, fd), rand_tensor(1, bd)}, *out = NULL;
  const float *x = sm_tensor_data(in[0]);
  float *xp = NULL;
  int64_t Hp = H, Wp = W;
  if (pads) { /* the reference runs VALID over a zero-padded copy */
    Hp = H + pads[0] + pads[1], Wp = W + pads[2] + pads[3];
    xp = calloc((size_t)(N * Hp * Wp * C), sizeof *xp);
    for (int64_t n = 0; n < N; n++)
      for (int64_t h = 0; h < H; h++)
        memcpy(xp + ((n * Hp + h + pads[0]) * Wp + pads[2]) * C, x + ((n * H + h) * W) * C, (size_t)(W * C) * sizeof *xp);
  }
  double *want = naive_conv_ref(xp ? xp : x, sm_tensor_data(in[1]), N, Hp, Wp, C, 3, 3, C, 1, s, s, 1, 1,
                                pads ? 0 : same, 1, &OH, &OW);
  int64_t n = N * OH * OW * C;
  const float *bias = sm_tensor_data(in[2]);
  for (int64_t i = 0; i < n; i++) {
    double v = want[i] + bias[i % C];
    if (!strcmp(act, "Relu")) v = v > 0 ? v : 0;
    else if (!strcmp(act, "Relu6")) v = v < 0 ? 0 : v > 6 ? 6 : v;
    else if (!strcmp(act, "Sigmoid")) v = 1 / (1 + exp(-v));
    want[i] = v;
  }
  char attrs[1024], ops[128], ex[256] = "";
  snprintf(ops, sizeof ops, "s: \"BiasAdd\" %s%s%s", *act ? "s: \"" : "", act, *act ? "\"" : "");
  if (pads)
    snprintf(ex, sizeof ex,
             "attr { key: \"_sm_explicit_paddings\" value { list { i: 0 i: 0 i: %lld i: %lld i: %lld i: %lld i: 0 "
             "i: 0 } } } ",
             (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3]);
  snprintf(attrs, sizeof attrs,
           "attr { key: \"strides\" value { list { i: 1 i: %lld i: %lld i: 1 } } } attr { key: \"padding\" value { s: "
           "\"%s\" } } attr { key: \"dilations\" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "
           "\"fused_ops\" value { list { %s } } } attr { key: \"num_args\" value { i: 1 } } attr { key: \"TArgs\" "
           "value { list { type: DT_FLOAT } } } %s",
           (long long)s, (long long)s, same && !pads ? "SAME" : "VALID", ops, ex);
  char *mg = graph1("_FusedDepthwiseConv2dNative", 3, "DT_FLOAT", attrs);
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 3, &f0, 1, &out));
  char what[160];
  snprintf(what, sizeof what, "_FusedDepthwiseConv2dNative %lldx%lldx%lldx%lld s%lld %s %s", (long long)N, (long long)H,
           (long long)W, (long long)C, (long long)s, pads ? "pads" : same ? "SAME" : "VALID", act);
  compare(what, out, want, n, 1e-5);
  free(want);
  free(xp);
  free(mg);
  for (int i = 0; i < 3; i++) sm_tensor_free(in[i]);
  sm_tensor_free(out);
}

static void matmul_vs_naive(int64_t M, int64_t K, int64_t N, int ta, int tb) {
  int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
  sm_tensor *in[2] = {rand_tensor(2, ad), rand_tensor(2, bd)}, *out = NULL;
  char attrs[256];
  snprintf(attrs, sizeof attrs,
           "attr { key: \"transpose_a\" value { b: %s } } attr { key: \"transpose_b\" value { b: %s } }",
           ta ? "true" : "false", tb ? "true" : "false");
  char *mg = graph1("MatMul", 2, "DT_FLOAT", attrs);
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 2, &f0, 1, &out));
  double *want = calloc((size_t)(M * N), sizeof *want);
  const float *a = sm_tensor_data(in[0]), *b = sm_tensor_data(in[1]);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)(ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
      want[i * N + j] = acc;
    }
  compare("MatMul big", out, want, M * N, naive_tol);
  free(want);
  free(mg);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_tensor_free(out);
}

static void pool_vs_naive(int is_max, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k, int64_t s, int same) {
  int64_t xd[4] = {N, H, W, C};
  sm_tensor *in = rand_tensor(4, xd), *out = NULL;
  char attrs[512];
  snprintf(attrs, sizeof attrs,
           "attr { key: \"ksize\" value { list { i: 1 i: %lld i: %lld i: 1 } } } attr { key: \"strides\" value { list { "
           "i: 1 i: %lld i: %lld i: 1 } } } attr { key: \"padding\" value { s: \"%s\" } }",
           (long long)k, (long long)k, (long long)s, (long long)s, same ? "SAME" : "VALID");
  char *mg = graph1(is_max ? "MaxPool" : "AvgPool", 1, "DT_FLOAT", attrs);
  int f0 = 0;
  CHECK_OK(run_graph(mg, &in, 1, &f0, 1, &out));
  int64_t OH = same ? (H + s - 1) / s : (H - k + s) / s, OW = same ? (W + s - 1) / s : (W - k + s) / s;
  int64_t pt = same && (OH - 1) * s + k - H > 0 ? ((OH - 1) * s + k - H) / 2 : 0;
  int64_t pl = same && (OW - 1) * s + k - W > 0 ? ((OW - 1) * s + k - W) / 2 : 0;
  double *want = calloc((size_t)(N * OH * OW * C), sizeof *want);
  const float *x = sm_tensor_data(in);
  for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++)
        for (int64_t c = 0; c < C; c++) {
          double m = -INFINITY, sum = 0;
          int cnt = 0;
          for (int64_t ih = oh * s - pt; ih < oh * s - pt + k; ih++)
            for (int64_t iw = ow * s - pl; iw < ow * s - pl + k; iw++) {
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              double v = x[((n * H + ih) * W + iw) * C + c];
              m = v > m ? v : m;
              sum += v;
              cnt++;
            }
          want[((n * OH + oh) * OW + ow) * C + c] = is_max ? m : sum / cnt;
        }
  compare(is_max ? "MaxPool big" : "AvgPool big", out, want, N * OH * OW * C, 1e-5);
  free(want);
  free(mg);
  sm_tensor_free(in);
  sm_tensor_free(out);
}

static void bias_vs_naive(int nchw) {
  int64_t xd[4] = {16, 12, 20, 24};
  int64_t C = nchw ? xd[1] : xd[3], bd[1] = {C};
  sm_tensor *in[2] = {rand_tensor(4, xd), rand_tensor(1, bd)}, *out = NULL;
  char *mg = graph1("BiasAdd", 2, "DT_FLOAT",
                    nchw ? "attr { key: \"data_format\" value { s: \"NCHW\" } }" : "");
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 2, &f0, 1, &out));
  int64_t n = sm_tensor_num_elements(in[0]);
  double *want = malloc((size_t)n * sizeof *want);
  const float *x = sm_tensor_data(in[0]), *b = sm_tensor_data(in[1]);
  for (int64_t i = 0; i < n; i++) want[i] = (double)x[i] + b[nchw ? (i / (xd[2] * xd[3])) % C : i % C];
  compare(nchw ? "BiasAdd NCHW big" : "BiasAdd big", out, want, n, 1e-6);
  free(want);
  free(mg);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_tensor_free(out);
}

/* A graph that must fail (at plan building or run) with `needle` in the message. */
static void expect_error(const char *op, int nin, const int64_t dims[][4], const int *ranks, const char *attrs,
                         const char *needle) {
  sm_tensor *in[3] = {0}, *out = NULL;
  for (int i = 0; i < nin; i++) in[i] = rand_tensor(ranks[i], dims[i]);
  char *mg = graph1(op, nin, "DT_FLOAT", attrs);
  int f0 = 0;
  sm_status *st = run_graph(mg, in, nin, &f0, 1, &out);
  if (!st) {
    fprintf(stderr, "%s with %s: succeeded, expected \"%s\"\n", op, attrs, needle);
    sm_test_failures++;
  } else if (!strstr(sm_status_message(st), needle)) {
    fprintf(stderr, "%s with %s: error \"%s\" lacks \"%s\"\n", op, attrs, sm_status_message(st), needle);
    sm_test_failures++;
  }
  sm_status_free(st);
  sm_tensor_free(out);
  for (int i = 0; i < nin; i++) sm_tensor_free(in[i]);
  free(mg);
}

#define CONV_ATTRS(strides, pad, extra) \
  "attr { key: \"strides\" value { list { " strides " } } } attr { key: \"padding\" value { s: \"" pad "\" } } " extra

static void bad_attrs(void) {
  const int64_t cd[2][4] = {{1, 5, 5, 2}, {3, 3, 2, 2}};
  const int cr[2] = {4, 4};
  expect_error("Conv2D", 2, cd, cr, CONV_ATTRS("i: 1 i: 1 i: 1", "SAME", ""), "must specify 4 dimensions");
  expect_error("Conv2D", 2, cd, cr, CONV_ATTRS("i: 2 i: 1 i: 1 i: 1", "SAME", ""),
               "does not yet support strides in the batch and depth dimensions");
  expect_error("Conv2D", 2, cd, cr, CONV_ATTRS("i: 1 i: 0 i: 1 i: 1", "SAME", ""), "strides should be larger than 0");
  expect_error("Conv2D", 2, cd, cr, CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "FOO", ""), "padding 'FOO'");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME", "attr { key: \"dilations\" value { list { i: 1 i: 0 i: 1 i: 1 } } }"),
               "Dilated rates should be larger than 0");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "EXPLICIT",
                          "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 i: 1 i: 1 } } }"),
               "must contain 8 values");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "EXPLICIT",
                          "attr { key: \"explicit_paddings\" value { list { i: 1 i: 0 i: 1 i: 1 i: 0 i: 0 i: 0 i: 0 } } }"),
               "batch or depth dimensions");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME",
                          "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 i: 1 i: 1 i: 0 i: 0 i: 0 i: 0 } } }"),
               "must be empty");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME", "attr { key: \"data_format\" value { s: \"NCHW_VECT_C\" } }"),
               "data_format 'NCHW_VECT_C'");
  /* absurd dilations and strides: a clear error or an empty/valid result, never a crash */
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID",
                          "attr { key: \"dilations\" value { list { i: 1 i: 4611686018427387904 i: 1 i: 1 } } }"),
               "too large");
  expect_error("Conv2D", 2, cd, cr,
               CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID",
                          "attr { key: \"dilations\" value { list { i: 1 i: 3 i: 1 i: 1 } } }"),
               "Computed output size would be negative");
  const int64_t fd1[2][4] = {{1, 5, 5, 2}, {3, 3, 0, 2}};
  expect_error("Conv2D", 2, fd1, cr, CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME", ""), "filter depth must be positive");
  const int64_t fr[2][4] = {{1, 5, 5, 2}, {3, 3, 2}};
  const int fr3[2] = {4, 3};
  expect_error("Conv2D", 2, fr, fr3, CONV_ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME", ""), "filter must be 4-dimensional");
  const int64_t pd[1][4] = {{1, 5, 5, 2}};
  const int pr[1] = {4};
  expect_error("MaxPool", 1, pd, pr,
               "attr { key: \"ksize\" value { list { i: 2 i: 2 i: 2 i: 1 } } } attr { key: \"strides\" value { list { i: 1 "
               "i: 1 i: 1 i: 1 } } } attr { key: \"padding\" value { s: \"VALID\" } }",
               "batch dimension");
  expect_error("MaxPool", 1, pd, pr,
               "attr { key: \"ksize\" value { list { i: 1 i: 2 i: 2 } } } attr { key: \"strides\" value { list { i: 1 "
               "i: 1 i: 1 i: 1 } } } attr { key: \"padding\" value { s: \"VALID\" } }",
               "ksize field must specify 4 dimensions");
  expect_error("AvgPool", 1, pd, pr,
               "attr { key: \"ksize\" value { list { i: 1 i: 9 i: 2 i: 1 } } } attr { key: \"strides\" value { list { i: 1 "
               "i: 1 i: 1 i: 1 } } } attr { key: \"padding\" value { s: \"VALID\" } }",
               "Computed output size would be negative");
  expect_error("AvgPool", 1, pd, pr,
               "attr { key: \"ksize\" value { list { i: 1 i: 2 i: 2 i: 1 } } } attr { key: \"strides\" value { list { i: 1 "
               "i: 1 i: 1 i: 1 } } } attr { key: \"padding\" value { s: \"EXPLICIT\" } }",
               "padding 'EXPLICIT'");
  const int64_t md[2][4] = {{0, 3}, {3, 2}};
  const int mr[2] = {2, 2};
  sm_tensor *in[2] = {rand_tensor(2, md[0]), rand_tensor(2, md[1])}, *out = NULL;
  char *mg = graph1("MatMul", 2, "DT_FLOAT", "");
  int f0 = 0;
  CHECK_OK(run_graph(mg, in, 2, &f0, 1, &out)); /* empty M: an empty [0,2] product */
  CHECK(out && sm_tensor_num_elements(out) == 0 && sm_tensor_rank(out) == 2 && sm_tensor_dims(out)[1] == 2);
  sm_tensor_free(out);
  free(mg);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  (void)mr;
  /* K = 0: zeros */
  const int64_t kd[2][2] = {{2, 0}, {0, 3}};
  in[0] = rand_tensor(2, kd[0]);
  in[1] = rand_tensor(2, kd[1]);
  out = NULL;
  mg = graph1("MatMul", 2, "DT_FLOAT", "");
  CHECK_OK(run_graph(mg, in, 2, &f0, 1, &out));
  CHECK(out && sm_tensor_num_elements(out) == 6 && ((float *)sm_tensor_data(out))[5] == 0.0f);
  sm_tensor_free(out);
  free(mg);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
}

/* ---- weights from a variable: an assign between runs changes the output ---------------------
 * oneDNN's kernels keep the weights packed across runs (nn_dnnl.c), keyed by the weight tensor;
 * an AssignVariableOp installs a new tensor, so the next run must see the new weights (as TF
 * would), also when the new value is the first one again or reuses a freed buffer. Checked
 * against the naive loops for Conv2D, DepthwiseConv2dNative, MatMul and BatchMatMulV2, with oneDNN on or off. */
/* SAME, stride 1, K x K; want gets [N, H, W, CO] */
static void naive_conv(const float *x, const float *f, int64_t N, int64_t H, int64_t W, int64_t C, int64_t K,
                       int64_t Co, int depthwise, double *want) {
  int64_t oh, ow, CO = depthwise ? C * Co : Co;
  double *w = naive_conv_ref(x, f, N, H, W, C, K, K, C, Co, 1, 1, 1, 1, 1, depthwise, &oh, &ow);
  memcpy(want, w, (size_t)(N * oh * ow * CO) * sizeof *want);
  free(w);
}

/* want [M, N] = a [M, K] b [K, N] */
static void naive_mm(const float *a, const float *b, int64_t M, int64_t K, int64_t N, double *want) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t o = 0; o < N; o++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + o];
      want[i * N + o] = acc;
    }
}

static void variable_weights(const char *op) {
  /* BatchMatMulV2: x [1, N*H, C] by one matrix, a Dense on a 3-D input at batch 1 (the MatMul form),
   * the weights seen through a Reshape (a view made each run) as Keras' EinsumDense has them */
  int bmm = !strcmp(op, "BatchMatMulV2"), mm = bmm || !strcmp(op, "MatMul"), dw = !strcmp(op, "DepthwiseConv2dNative");
  const int64_t N = 2, H = 9, W = 7, C = 16, K = 3, Co = mm ? 40 : dw ? 2 : 24;
  int64_t xd[4] = {N, H, W, C}, fd[4] = {K, K, C, Co}, md[3] = {1, N * H, C}, wd[2] = {C, Co};
  char g[4096], reshape[1024] = "";
  if (bmm)
    snprintf(reshape, sizeof reshape,
             "node { name: \"rs\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: \"value\" "
             "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: %d int_val: %d } } } }\n"
             "node { name: \"r\" op: \"Reshape\" input: \"r0\" input: \"rs\" attr { key: \"T\" value { type: DT_FLOAT } } "
             "attr { key: \"Tshape\" value { type: DT_INT32 } } }\n",
             (int)C, (int)Co);
  snprintf(g, sizeof g,
           "node { name: \"in0\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "node { name: \"wv\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "node { name: \"v\" op: \"VarHandleOp\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
           "attr { key: \"shared_name\" value { s: \"v\" } } attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"
           "node { name: \"assign\" op: \"AssignVariableOp\" input: \"v\" input: \"wv\" "
           "attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "node { name: \"%s\" op: \"ReadVariableOp\" input: \"v\" attr { key: \"dtype\" value { type: DT_FLOAT } } }\n"
           "%s"
           "node { name: \"y\" op: \"%s\" input: \"in0\" input: \"r\" attr { key: \"T\" value { type: DT_FLOAT } } %s }",
           bmm ? "r0" : "r", reshape, op,
           mm ? ""
              : "attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } "
                "attr { key: \"padding\" value { s: \"SAME\" } }");
  char *mg = metagraph(op, g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(mg, &s));
  free(mg);
  if (!s) return;
  sm_tensor *x = rand_tensor(bmm ? 3 : mm ? 2 : 4, mm ? md + !bmm : xd);
  sm_tensor *w[2] = {rand_tensor(mm ? 2 : 4, mm ? wd : fd), rand_tensor(mm ? 2 : 4, mm ? wd : fd)};
  int64_t nout = mm ? N * H * Co : N * H * W * (dw ? C * Co : Co);
  double *want = calloc((size_t)nout, sizeof *want);
  /* A, B, A again, then B assigned from a copy (a new tensor, maybe at A's old address) */
  for (int step = 0; step < 4; step++) {
    sm_tensor *wt = w[step & 1], *copy = NULL;
    if (step == 3) CHECK_OK(sm_tensor_copy(wt, &copy));
    sm_tensor *feed = copy ? copy : wt;
    CHECK_OK(sm__session_run(s, (const char *[]){"wv:0"}, &feed, 1, NULL, 0, (const char *[]){"assign"}, 1, NULL));
    sm_tensor_free(copy);
    for (int rep = 0; rep < 2; rep++) { /* the second run uses what the first packed */
      sm_tensor *out = NULL;
      CHECK_OK(sm__session_run(s, (const char *[]){"in0:0"}, &x, 1, (const char *[]){"y:0"}, 1, NULL, 0, &out));
      const float *xp = sm_tensor_data(x), *fp = sm_tensor_data(wt);
      if (mm)
        naive_mm(xp, fp, N * H, C, Co, want);
      else
        naive_conv(xp, fp, N, H, W, C, K, Co, dw, want);
      char what[96];
      snprintf(what, sizeof what, "%s after assign %d, run %d", op, step, rep);
      compare(what, out, want, nout, 1e-5);
      sm_tensor_free(out);
    }
  }
  free(want);
  sm_tensor_free(x);
  sm_tensor_free(w[0]);
  sm_tensor_free(w[1]);
  sm__session_free(s);
}

/* ---- one session run from several threads at once ---------------------------------------------
 * The kernels' oneDNN caches (primitives per shape, packed weights) are shared by every run of a
 * plan: four threads run one Conv2D session (batch 3: pieces of 2 and 1 images, two primitives
 * built while the other threads run) and a MatMul one, each output checked against naive loops. */
typedef struct conc {
  sm_session *s;
  sm_tensor *in[2];
  const double *want;
  int64_t n;
  int bad;
} conc;

static void *conc_thread(void *arg) {
  conc *c = arg;
  for (int r = 0; r < 10; r++) {
    sm_tensor *out = NULL;
    sm_status *st = sm__session_run(c->s, (const char *[]){"in0:0", "in1:0"}, c->in, 2, (const char *[]){"y:0"}, 1,
                                    NULL, 0, &out);
    if (st || !out || sm_tensor_num_elements(out) != c->n) {
      __atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
    } else {
      const float *o = sm_tensor_data(out);
      for (int64_t i = 0; i < c->n; i++)
        if (!close_enough(o[i], c->want[i], 1e-5)) {
          __atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
          break;
        }
    }
    sm_status_free(st);
    sm_tensor_free(out);
  }
  return NULL;
}

static void concurrent_runs(int mm) {
  const int64_t N = 3, H = 20, W = 18, C = 16, K = 3, Co = 32;
  int64_t xd[4] = {N, H, W, C}, fd[4] = {K, K, C, Co}, ad[2] = {N * H * W, C}, bd[2] = {C, Co};
  conc c = {0};
  c.in[0] = rand_tensor(mm ? 2 : 4, mm ? ad : xd);
  c.in[1] = rand_tensor(mm ? 2 : 4, mm ? bd : fd);
  c.n = N * H * W * Co;
  double *want = calloc((size_t)c.n, sizeof *want);
  const float *x = sm_tensor_data(c.in[0]), *f = sm_tensor_data(c.in[1]);
  if (mm)
    naive_mm(x, f, N * H * W, C, Co, want);
  else
    naive_conv(x, f, N, H, W, C, K, Co, 0, want);
  c.want = want;
  char *mg = graph1(mm ? "MatMul" : "Conv2D", 2, "DT_FLOAT",
                    mm ? "" : "attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } "
                              "attr { key: \"padding\" value { s: \"SAME\" } }");
  CHECK_OK(sm__session_from_pbtxt(mg, &c.s));
  free(mg);
  pthread_t t[4];
  for (int i = 0; c.s && i < 4; i++) CHECK(pthread_create(&t[i], NULL, conc_thread, &c) == 0);
  for (int i = 0; c.s && i < 4; i++) pthread_join(t[i], NULL);
  if (c.bad) fprintf(stderr, "%s from 4 threads: %d bad runs\n", mm ? "MatMul" : "Conv2D", c.bad);
  CHECK(c.bad == 0);
  sm__session_free(c.s);
  sm_tensor_free(c.in[0]);
  sm_tensor_free(c.in[1]);
  free(want);
}

/* ---- a thread's oneDNN call objects (nn_dnnl.c thread_mem) -------------------------------------
 * Each thread keeps its memory objects per primitive (64 sets, direct-mapped by the primitive's
 * id) and points them at each call's buffers. One Conv2D session run on 70 input heights (70
 * primitives: the node's cache keeps 8, so the others are freed, and the thread's sets are taken
 * over again and again), each on a new input tensor, then the first heights again: every output
 * against the naive loops. */
static void call_objects(void) {
  const int64_t W = 5, C = 16, K = 3, Co = 24;
  int64_t fd[4] = {K, K, C, Co};
  char *mg = graph1("Conv2D", 2, "DT_FLOAT",
                    "attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } "
                    "attr { key: \"padding\" value { s: \"SAME\" } }");
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(mg, &s));
  free(mg);
  sm_tensor *f = rand_tensor(4, fd);
  for (int i = 0; s && i < 74; i++) {
    int64_t H = 1 + i % 70, xd[4] = {1, H, W, C};
    sm_tensor *in[2] = {rand_tensor(4, xd), f}, *out = NULL;
    CHECK_OK(sm__session_run(s, (const char *[]){"in0:0", "in1:0"}, in, 2, (const char *[]){"y:0"}, 1, NULL, 0, &out));
    double *want = calloc((size_t)(H * W * Co), sizeof *want);
    naive_conv(sm_tensor_data(in[0]), sm_tensor_data(f), 1, H, W, C, K, Co, 0, want);
    char what[64];
    snprintf(what, sizeof what, "Conv2D of height %lld (call %d)", (long long)H, i);
    compare(what, out, want, H * W * Co, 1e-5);
    free(want);
    sm_tensor_free(out);
    sm_tensor_free(in[0]);
  }
  sm_tensor_free(f);
  sm__session_free(s);
}

/* ---- how oneDNN's convolutions are split over the pool (nn_dnnl.c sm__dnnl_conv_split) ----------
 * The cost model's choice for layers of the bench_nets models it was measured on (bench/RESULTS.md
 * "session 13, h1"): filters that fit in L2 go by images / bands, larger ones by filter slices, one
 * image's small outputs by slices too; groups and under 64 filters never by slices. */
static void split_policy(void) {
  static const struct {
    int64_t N, H, W, C, K, Cout, G, OH;
    int want;
    const char *what;
  } cases[] = {
      {1, 16, 16, 64, 3, 64, 1, 16, 'r', "ResNet50 b1 3x3 64 @16x16 (filters in L2: bands)"},
      {1, 16, 16, 64, 1, 256, 1, 16, 'r', "ResNet50 b1 1x1 64->256 @16x16"},
      {1, 4, 4, 256, 3, 256, 1, 4, 'c', "ResNet50 b1 3x3 256 @4x4 (a band is 2 rows)"},
      {1, 2, 2, 960, 1, 160, 1, 2, 'c', "MobileNetV2 b1 1x1 960->160 @2x2"},
      {1, 8, 8, 512, 3, 512, 1, 8, 'c', "one image, 9 MB of filters"},
      {16, 4, 4, 96, 1, 576, 1, 4, 'i', "MobileNetV2 b16 1x1 96->576 @4x4 (filters in L2: images)"},
      {16, 2, 2, 960, 1, 320, 1, 2, 'i', "MobileNetV2 b16 1x1 960->320 @2x2"},
      {16, 2, 2, 320, 1, 1280, 1, 2, 'c', "MobileNetV2 b16 1x1 320->1280 @2x2 (1.6 MB of filters)"},
      {16, 4, 4, 256, 3, 256, 1, 4, 'c', "ResNet50 b16 3x3 256 @4x4"},
      {16, 8, 8, 512, 1, 128, 1, 8, 'i', "ResNet50 b16 1x1 512->128 @8x8"},
      {16, 32, 32, 3, 3, 64, 1, 32, 'i', "VGG16 b16 3x3 3->64 @32x32"},
      {16, 64, 64, 512, 1, 1024, 1, 64, 'i', "16 large images outweigh 2 MB of filters"},
      {1, 4, 4, 576, 3, 576, 576, 4, 'r', "depthwise: never slices"},
      {1, 2, 2, 1024, 3, 32, 1, 2, 'r', "32 filters: never slices"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    sm__dnnl_conv_args a = {0};
    a.N = cases[i].N, a.H = cases[i].H, a.W = cases[i].W, a.C = cases[i].C, a.KH = a.KW = cases[i].K;
    a.Cout = cases[i].Cout, a.G = cases[i].G, a.OH = a.OW = cases[i].OH;
    a.sh = a.sw = a.dh = a.dw = 1;
    int got = sm__dnnl_conv_split(&a);
    if (got != cases[i].want) {
      fprintf(stderr, "%s: split '%c', want '%c'\n", cases[i].what, got, cases[i].want);
      sm_test_failures++;
    }
  }
}

static void unmap_file(void *ctx) {
  sm__file_map_close(ctx);
  free(ctx);
}

/* A batch-1 MatMul whose B (1024 x 1024, 4 MiB) is a file mapping marked as a checkpoint's (as a
 * zero-copy variable is): the first run copies B onto huge pages (nn_matmul.c hugeb: the peak of
 * the allocator's live bytes grows by B's size) and drops the file's pages; the product is right
 * on the first and on a later run (the copy then), and again for a second MatMul over the same B. */
static void matmul_file_b(void) {
  enum { K = 1024, N = 1024 };
  char path[] = "/tmp/sm_mm_b_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "wb");
  float *bv = malloc((size_t)K * N * sizeof *bv);
  for (int64_t i = 0; bv && i < (int64_t)K * N; i++) bv[i] = frand();
  CHECK(f && bv && fwrite(bv, sizeof *bv, (size_t)K * N, f) == (size_t)K * N);
  if (f) fclose(f);
  sm_file_map *m = calloc(1, sizeof *m);
  sm_tensor *b = NULL, *a = NULL, *out = NULL;
  int64_t bd[2] = {K, N}, ad[2] = {1, K};
  CHECK(m && bv);
  if (m && bv) {
    CHECK_OK(sm__file_map_open(path, m));
    if (m->mapped) CHECK_OK(sm_tensor_wrap(SM_FLOAT, 2, bd, (void *)m->data, m->size, unmap_file, m, &b));
    else free(m);
    if (b) sm__tensor_set_file_backed(b);
  }
  a = rand_tensor(2, ad);
  double *want = calloc(N, sizeof *want);
  if (b && a && want) {
    naive_mm(sm_tensor_data(a), bv, 1, K, N, want);
    char *mg = graph1("MatMul", 2, "DT_FLOAT", "");
    sm_session *s = NULL;
    CHECK_OK(sm__session_from_pbtxt(mg, &s));
    const char *feeds[2] = {"in0:0", "in1:0"}, *fetch[1] = {"y:0"};
    sm_tensor *in[2] = {a, b};
    sm_alloc_stats st0, st1;
    sm__alloc_stats(&st0);
    sm__alloc_peak_reset();
    for (int run = 0; s && run < 2; run++) {
      CHECK_OK(sm__session_run(s, feeds, in, 2, fetch, 1, NULL, 0, &out));
      if (out) compare("MatMul, B from a file", out, want, N, naive_tol);
      sm_tensor_free(out);
      out = NULL;
      sm__alloc_stats(&st1);
      CHECK(st1.peak_bytes - st0.live_bytes >= (size_t)K * N * sizeof(float)); /* the copy */
    }
    sm__session_free(s);
    free(mg);
  }
  free(want);
  free(bv);
  sm_tensor_free(a);
  sm_tensor_free(b);
  remove(path);
}

int main(void) {
  /* the copy of a checkpoint's B onto huge pages (matmul_file_b), in sanitizer builds too */
  setenv("SM_HUGEPAGES", "1", 1);
  /* nn_conv.c's streamed path for every convolution it fits (by default only where it skips half
   * the filter): the cases below that have few output pixels and a 1 MB+ filter check it */
  setenv("SM_NN_CONV_STREAM", "1", 1);
  matmul_file_b();
  for (size_t i = 0; i < sizeof nn_cases / sizeof *nn_cases; i++) run_tf_case(&nn_cases[i]);
  /* seed CNN layer at batch 4: several parallel chunks */
  conv_vs_naive(4, 28, 28, 1, 3, 3, 1, 32, 1, 1, 1, 1, 0, 0);
  /* patch matrix larger than one im2col block (K = 72: blocks of 1820 rows) */
  conv_vs_naive(4, 30, 30, 8, 3, 3, 8, 16, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(3, 17, 19, 6, 3, 2, 3, 4, 2, 1, 2, 1, 1, 0); /* groups, stride, dilation */
  conv_vs_naive(8, 16, 16, 16, 1, 1, 16, 24, 1, 1, 1, 1, 0, 0); /* 1x1 fast path */
  conv_vs_naive(4, 20, 21, 8, 3, 3, 8, 2, 2, 2, 1, 1, 1, 1);   /* depthwise, multiplier 2 */
  conv_vs_naive(2, 15, 15, 32, 5, 5, 32, 1, 1, 1, 2, 2, 1, 1);  /* depthwise, dilated */
  /* depthwise, multiplier 1 (the AVX-512 rows where oneDNN is off: 16-channel vectors, 4-pixel
   * blocks between the padded borders): channel tails, strides 1 and 2, SAME / VALID, 5x5, wide */
  conv_vs_naive(2, 9, 13, 20, 3, 3, 20, 1, 1, 1, 1, 1, 1, 1);
  conv_vs_naive(3, 12, 17, 37, 3, 3, 37, 1, 2, 2, 1, 1, 1, 1);
  conv_vs_naive(2, 11, 19, 48, 3, 3, 48, 1, 1, 1, 1, 1, 0, 1);
  conv_vs_naive(1, 14, 15, 21, 3, 3, 21, 1, 2, 2, 1, 1, 0, 1);
  conv_vs_naive(2, 10, 23, 32, 5, 5, 32, 1, 1, 2, 1, 1, 1, 1);
  conv_vs_naive(4, 6, 6, 7, 3, 3, 7, 1, 1, 1, 1, 1, 1, 1);     /* under one vector */
  conv_vs_naive(2, 4, 3, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1);   /* no pixel clear of the padding */
  conv_vs_naive(2, 9, 13, 20, 3, 3, 20, 3, 2, 1, 1, 1, 1, 1);  /* multiplier 3 (the generic loops) */
  /* direct path (short patches, K <= 64, Cout >= 16): borders, channel tails, strides, dilation */
  conv_vs_naive(2, 13, 11, 3, 3, 3, 3, 20, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(2, 15, 17, 2, 5, 3, 2, 16, 2, 3, 1, 1, 0, 0);
  conv_vs_naive(1, 12, 14, 1, 3, 3, 1, 32, 1, 1, 2, 2, 1, 0);
  conv_vs_naive(3, 9, 40, 4, 2, 2, 4, 48, 2, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 5, 3, 1, 3, 3, 1, 33, 1, 1, 1, 1, 0, 0); /* one output pixel per row */
  /* one image split in bands of output rows (oneDNN over the pool): SAME/VALID, strides, dilation */
  conv_vs_naive(1, 40, 37, 16, 3, 3, 16, 32, 2, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 41, 40, 16, 5, 3, 16, 32, 3, 2, 2, 1, 0, 0);
  conv_vs_naive(1, 33, 20, 12, 7, 7, 12, 24, 2, 2, 1, 1, 1, 0);
  conv_vs_naive(1, 64, 64, 32, 3, 3, 32, 1, 2, 2, 1, 1, 1, 1); /* depthwise */
  conv_vs_naive(5, 20, 20, 16, 3, 3, 16, 32, 1, 1, 1, 1, 1, 0); /* batch split 3 + 2 */
  /* strided 1x1s in bands (each band reads sh - 1 rows past its last used one, nn_dnnl.c
   * piece_conv): even and odd heights, SAME and VALID, strides 2 and 3 (sums of 128 terms) */
  naive_tol = 5e-5;
  conv_vs_naive(1, 16, 16, 128, 1, 1, 128, 64, 2, 2, 1, 1, 1, 0);
  conv_vs_naive(1, 17, 15, 128, 1, 1, 128, 64, 2, 2, 1, 1, 1, 0);
  conv_vs_naive(1, 17, 16, 128, 1, 1, 128, 64, 2, 2, 1, 1, 0, 0);
  conv_vs_naive(1, 22, 20, 128, 1, 1, 128, 64, 3, 3, 1, 1, 1, 0);
  conv_vs_naive(1, 23, 19, 128, 1, 1, 128, 64, 3, 2, 1, 1, 0, 0);
  naive_tol = 1e-5;
  /* split in slices of the filters (nn_dnnl.c sm__dnnl_conv_split: 64+ filters, and one image's
   * output of 16 pixels or fewer, or 384K+ floats of filters): one image (slices of 48 + 32, SAME,
   * VALID with stride 2, dilation), three images (176 filters of 3x3x256), a 1x1. Sums of 576+
   * terms: float rounding reaches ~2e-5 near 0 */
  naive_tol = 5e-5;
  conv_vs_naive(1, 4, 4, 64, 3, 3, 64, 80, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 9, 10, 64, 3, 3, 64, 96, 2, 2, 1, 1, 0, 0);
  conv_vs_naive(1, 4, 4, 64, 3, 3, 64, 64, 1, 1, 2, 2, 1, 0);
  conv_vs_naive(1, 4, 4, 64, 1, 1, 64, 1040, 1, 1, 1, 1, 1, 0);
  naive_tol = 1e-4;
  conv_vs_naive(3, 4, 4, 256, 3, 3, 256, 176, 1, 1, 1, 1, 1, 0);
  naive_tol = 1e-5;
  split_policy();
  /* oneDNN's blocked layout (nn_dnnl.c blocked_conv: 8+ images, 512+ channels, <= 4x4 outputs):
   * one piece (SAME; VALID with stride 2), and slices of the filters of 16 images (96 filters, 1.8
   * MB: sm__dnnl_conv_split). The patches are 4608 long: float sums of that many terms of either
   * sign are good to ~1e-5 absolute near 0 */
  naive_tol = 1e-4;
  conv_vs_naive(8, 2, 2, 512, 3, 3, 512, 16, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(8, 5, 5, 512, 3, 3, 512, 16, 2, 2, 1, 1, 0, 0);
  conv_vs_naive(16, 2, 2, 512, 3, 3, 512, 96, 1, 1, 1, 1, 1, 0);
  /* few output pixels against a filter of 1 MB or more (nn_conv.c conv_stream): ResNet50's and
   * VGG16's 2x2 late stages (SAME 3x3), batch 2, VALID stride 2 (one pixel), dilation (SAME 3x3
   * at dilation 2 over 2x2: only the centre tap meets the input, the other 8 taps' rows skipped),
   * one pixel with every tap but the centre in the padding, 1x1s at batch 1 and 2 */
  conv_vs_naive(1, 2, 2, 512, 3, 3, 512, 128, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(2, 2, 2, 256, 3, 3, 256, 160, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 3, 3, 256, 3, 3, 256, 130, 2, 2, 1, 1, 0, 0);
  conv_vs_naive(1, 2, 2, 256, 3, 3, 256, 130, 1, 1, 2, 2, 1, 0);
  conv_vs_naive(1, 1, 1, 512, 3, 3, 512, 64, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 2, 2, 2048, 1, 1, 2048, 200, 1, 1, 1, 1, 0, 0);
  conv_vs_naive(2, 2, 2, 1280, 1, 1, 1280, 256, 1, 1, 1, 1, 0, 0);
  {
    const char *acts[] = {"", "Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh"};
    for (int a = 0; a < 7; a++) fused_vs_naive(1, 2, 2, 512, 3, 3, 96, 1, 1, 1, 1, 1, a % 2, acts[a]);
    fused_vs_naive(2, 2, 2, 1024, 1, 1, 256, 1, 1, 1, 1, 0, 1, "Relu"); /* the residual 1x1 at batch 2 */
    fused_vs_naive(1, 4, 4, 256, 3, 3, 160, 2, 2, 1, 1, 1, 0, "Relu"); /* stride 2, SAME */
    fused_vs_naive(1, 16, 16, 128, 1, 1, 64, 2, 2, 1, 1, 1, 1, "Relu"); /* a strided 1x1 in bands */
    fused_vs_naive(1, 15, 16, 128, 1, 1, 64, 2, 2, 1, 1, 0, 1, "Relu");
  }
  { /* few output pixels (N * OH * OW <= 16: batch-1 late stages; filters under 1 MB so that the
     * streamed path set on above does not take them): 16, 12, 9, 8 (two images), 6, 4 and 1 pixels;
     * 1x1 and 3x3, stride 1 and 2, SAME / VALID, dilation, channels and filters not multiples of
     * 16, under one vector; fused: bias, residual Add, Relu / Relu6 / Elu (written for session 16's
     * own small-pixel kernel, not kept: bench/RESULTS.md "Session 16 - h1") */
    naive_tol = 5e-5;
    conv_vs_naive(1, 4, 4, 200, 1, 1, 200, 100, 1, 1, 1, 1, 0, 0);
    conv_vs_naive(1, 8, 8, 72, 1, 1, 72, 130, 2, 2, 1, 1, 0, 0);  /* a stage's first 1x1, stride 2 */
    conv_vs_naive(1, 4, 4, 70, 3, 3, 70, 40, 1, 1, 1, 1, 1, 0);
    conv_vs_naive(1, 3, 4, 33, 3, 3, 33, 48, 1, 1, 1, 1, 1, 0);   /* 12 pixels */
    conv_vs_naive(1, 3, 3, 17, 3, 3, 17, 20, 1, 1, 1, 1, 1, 0);   /* 9 */
    conv_vs_naive(1, 2, 2, 100, 3, 3, 100, 72, 1, 1, 1, 1, 1, 0); /* 4, SAME: taps half in the padding */
    conv_vs_naive(2, 2, 2, 64, 3, 3, 64, 50, 1, 1, 1, 1, 1, 0);   /* 8 over 2 images */
    conv_vs_naive(1, 5, 5, 24, 3, 3, 24, 7, 2, 2, 1, 1, 0, 0);    /* 4, VALID stride 2, 7 filters */
    conv_vs_naive(1, 4, 4, 16, 3, 3, 16, 33, 1, 1, 2, 2, 1, 0);   /* dilation 2 */
    conv_vs_naive(1, 1, 1, 300, 1, 1, 300, 90, 1, 1, 1, 1, 0, 0); /* one pixel */
    conv_vs_naive(1, 2, 3, 5, 2, 3, 5, 3, 1, 1, 1, 1, 1, 0);      /* 6 pixels, 3 filters */
    const char *acts[] = {"", "Relu", "Relu6", "Elu"};
    for (int a = 0; a < 4; a++) {
      fused_vs_naive(1, 4, 4, 96, 1, 1, 80, 1, 1, 1, 1, 0, a % 2, acts[a]);
      fused_vs_naive(1, 2, 2, 160, 3, 3, 36, 1, 1, 1, 1, 1, (a + 1) % 2, acts[a]);
      fused_vs_naive(1, 8, 8, 40, 3, 3, 24, 2, 2, 1, 1, 1, 1, acts[a]); /* stride 2, SAME: 16 */
    }
    naive_tol = 1e-5;
  }
  { /* the fused depthwise (MobileNetV2's shapes and the edges around them) */
    const char *acts[] = {"", "Relu", "Relu6", "Sigmoid"};
    const int64_t p01[4] = {0, 1, 0, 1}, p11[4] = {1, 1, 1, 1}, p22[4] = {2, 1, 2, 2}, p10[4] = {1, 0, 0, 1};
    for (int a = 0; a < 4; a++) {
      fused_dw_vs_naive(1, 32, 32, 32, 1, 1, NULL, acts[a]);
      fused_dw_vs_naive(2, 16, 16, 96, 2, 1, NULL, acts[a]);
      fused_dw_vs_naive(1, 4, 4, 384, 1, 1, NULL, acts[a]);
      fused_dw_vs_naive(1, 2, 2, 960, 1, 1, NULL, acts[a]);
      fused_dw_vs_naive(1, 8, 8, 144, 2, 0, p01, acts[a]); /* Keras' ZeroPadding2D before a stride 2, folded */
    }
    fused_dw_vs_naive(2, 9, 13, 40, 1, 1, NULL, "Relu6"); /* a channel tail, odd sizes */
    fused_dw_vs_naive(1, 11, 11, 24, 2, 1, NULL, "Relu6"); /* stride 2, odd: padding both sides */
    fused_dw_vs_naive(1, 7, 10, 16, 2, 0, NULL, "Relu6"); /* VALID */
    fused_dw_vs_naive(1, 5, 6, 48, 1, 0, p11, "Relu");
    fused_dw_vs_naive(1, 5, 6, 48, 1, 0, p22, "Relu6"); /* pads of 2: rows and columns wholly in the padding */
    fused_dw_vs_naive(1, 5, 6, 48, 2, 0, p10, "");
    fused_dw_vs_naive(3, 1, 1, 20, 1, 1, NULL, "Relu6"); /* one pixel */
    fused_dw_vs_naive(1, 3, 1, 32, 1, 1, NULL, "Relu6"); /* one column */
    fused_dw_vs_naive(1, 1, 5, 16, 2, 1, NULL, "Relu"); /* one row */
    /* nn_dwconv_avx2.c's bounds (AVX2 CPUs): one vector of 8, 2x2 and 2x3 images, a pad of 1 on one
     * side only, odd sizes at stride 2, the activation after the rows (Sigmoid) */
    fused_dw_vs_naive(1, 2, 3, 8, 1, 1, NULL, "Relu6");
    fused_dw_vs_naive(2, 6, 7, 8, 2, 1, NULL, "");
    fused_dw_vs_naive(1, 9, 8, 24, 2, 0, p01, "Sigmoid");
    fused_dw_vs_naive(1, 8, 9, 16, 2, 0, p10, "Relu");
    fused_dw_vs_naive(1, 2, 2, 8, 2, 1, NULL, "Relu6");
  }
  { /* the split rules at odd sizes (session 16 h7): the own depthwise over the pool from 64K
     * multiply-adds, a <=16-pixel convolution with under 64K floats of filters from 2x
     * SM_NN_PAR_MIN_MACS (nn_dnnl.c), with channel and pixel counts that leave tails */
    fused_dw_vs_naive(1, 15, 15, 33, 1, 1, NULL, "Relu6");
    fused_dw_vs_naive(3, 17, 5, 65, 2, 1, NULL, "Relu");
    fused_dw_vs_naive(2, 23, 23, 17, 2, 0, NULL, "");
    conv_vs_naive(1, 4, 4, 255, 1, 1, 255, 241, 1, 1, 1, 1, 1, 0);
    /* sums of up to 1161 terms: as above, float rounding reaches ~2e-5 near 0 (AVX2's jit:avx2
     * kernel: 1.3e-5 at one element, 1.1 eps times the sum of the terms' magnitudes, as large as a
     * sequential FMA sum's worst here: bench/RESULTS.md "Session 17 - k6") */
    naive_tol = 5e-5;
    conv_vs_naive(1, 3, 5, 129, 3, 3, 129, 47, 1, 1, 1, 1, 1, 0);
    naive_tol = 1e-5;
    conv_vs_naive(1, 5, 3, 65, 3, 3, 65, 1, 2, 1, 1, 1, 1, 1); /* depthwise, stride 2 down, 1 across */
    fused_vs_naive(1, 4, 4, 255, 1, 1, 241, 1, 1, 1, 1, 1, 1, "Relu6");
  }
  naive_tol = 1e-5;
  matmul_vs_naive(256, 300, 64, 0, 0);
  matmul_vs_naive(130, 70, 90, 1, 0);
  matmul_vs_naive(90, 200, 33, 0, 1);
  matmul_vs_naive(77, 128, 100, 1, 1);
  /* one row: gemv */
  matmul_vs_naive(1, 300, 64, 0, 0);
  matmul_vs_naive(1, 70, 90, 1, 0);
  matmul_vs_naive(1, 200, 33, 0, 1);
  matmul_vs_naive(1, 128, 100, 1, 1);
  /* few rows, a B of 1M+ floats: slices of its columns (nn_dnnl.c split_ncols), every transpose
   * (sums of 1024+ terms: float rounding reaches ~2e-5 near 0) */
  naive_tol = 5e-5;
  matmul_vs_naive(4, 1024, 1040, 0, 0);
  matmul_vs_naive(4, 1024, 1040, 1, 0);
  matmul_vs_naive(5, 1024, 1040, 0, 1);
  matmul_vs_naive(3, 1536, 1024, 1, 1);
  /* one row by a B of 4M+ floats: gemv over slices of B's columns (nn_matmul.c gemv_cols) */
  naive_tol = 1e-4;
  matmul_vs_naive(1, 2048, 2064, 0, 0);
  matmul_vs_naive(1, 2048, 2064, 1, 0);
  matmul_vs_naive(1, 2048, 2064, 0, 1);
  matmul_vs_naive(1, 2048, 2064, 1, 1);
  /* the same untransposed B split by its rows over the pool (nn_matmul.c gemv_krows): an odd k,
   * a width with a masked tail */
  matmul_vs_naive(1, 1027, 1000, 0, 0);
  matmul_vs_naive(1, 1027, 1000, 1, 0);
  /* a narrow B (at most 128 columns) past one core's L2: split by rows too (the seed CNN's 5408 x
   * 64 Dense, 1.4 MB; nn_matmul.c krows_pieces), and an odd k with a 72-wide masked tail */
  matmul_vs_naive(1, 5408, 64, 0, 0);
  matmul_vs_naive(1, 4099, 72, 1, 0);
  naive_tol = 1e-5;
  pool_vs_naive(1, 8, 26, 26, 32, 2, 2, 0);
  pool_vs_naive(1, 4, 27, 25, 16, 3, 2, 1);
  pool_vs_naive(0, 4, 27, 25, 16, 3, 2, 1);
  pool_vs_naive(0, 8, 26, 26, 32, 2, 2, 0);
  bias_vs_naive(0);
  bias_vs_naive(1);
  bad_attrs();
  variable_weights("Conv2D");
  variable_weights("DepthwiseConv2dNative");
  variable_weights("MatMul");
  variable_weights("BatchMatMulV2");
  concurrent_runs(0);
  concurrent_runs(1);
  /* the direct path's 16-channel-vector clone (AVX-512 CPUs): blocks of 8, 4, 2 and 1 pixels
   * (OW 15), 32 + 16 channels, 32 + 16 + a tail of 8, 64; SAME borders, strides, dilation (last,
   * so that the random inputs of the cases above stay as they were) */
  conv_vs_naive(2, 9, 17, 2, 3, 3, 2, 48, 1, 1, 1, 1, 0, 0);
  conv_vs_naive(2, 11, 15, 1, 3, 3, 1, 56, 1, 1, 1, 1, 1, 0);
  conv_vs_naive(1, 13, 29, 3, 3, 3, 3, 64, 2, 2, 1, 1, 1, 0);
  conv_vs_naive(2, 12, 21, 1, 3, 3, 1, 16, 1, 1, 2, 2, 0, 0);
  call_objects();
  printf("%zu TensorFlow cases, naive comparisons and bad-attr checks run\n", sizeof nn_cases / sizeof *nn_cases);
  TEST_MAIN_END();
}
