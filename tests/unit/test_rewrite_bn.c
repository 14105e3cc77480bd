/* test_rewrite_bn.c - the plan-time rewrite's BatchNorm and norm rules, and the variable read.
 *
 * BatchNorm folding (src/ops/nn_fold.c): where the rule applies and where it must not (a value
 * fetched mid-chain, a control input, a fed or computed filter, FusedBatchNormV3 in training),
 * after a Conv2D or a depthwise (a zero Pad absorbed), folded vs unfolded runs, the fold following
 * changed inputs, the errors of what it cannot fold. Keras 3's BatchNorm (its scale and shift
 * computed in the graph from the variables) folded, its computing nodes dropped, its parameters
 * read from variables (the fold's cache keyed by them); the Reshape form fused into one pass
 * (_SmBatchNorm, nn_fuse_norm.c) or folded into the conv before it, against the plain nodes, with
 * changed parameters and the inputs it refuses. Keras' LayerNormalization and erf-GELU chains
 * (_SmLayerNorm, _SmGeluErf, nn_fuse_norm.c). A variable handle and its one read as one step
 * (_SmReadVariable, src/ops/state.c, which nn_fold takes as a variable read), also when a control
 * edge leaves the read. The conv / matmul fusion rules, the residual Add, swish and the driver are
 * test_rewrite.c's; the helpers both use are in rewrite_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite_util.h"

/* ---- BatchNorm folding (nn_fold.c) ------------------------------------------------------------- */
/* x -> Pad p (paddings Const pd: `pads`, 8 ints) -> DepthwiseConv2dNative c (3x3, multiplier 2,
 * stride 2, VALID) -> Mul m (s) -> AddV2 a (t) -> Relu6 r: Keras' ZeroPadding2D + DepthwiseConv2D +
 * BatchNormalization + ReLU6, as MobileNetV2 exports it; with conv, a Conv2D c of the same 6
 * output channels (ResNet50's ZeroPadding2D + 7x7 Conv2D + BatchNormalization). */
static char *pad_graph(int conv, const char *pads) {
  size_t cap = 16384, at = 0;
  char *g = malloc(cap);
  if (!g) exit(1);
  at += (size_t)snprintf(g + at, cap - at,
                         "graph_def { " PH("x") PH("s") PH("t")
                         "node { name: \"pd\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
                         "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } "
                         "dim { size: 2 } } %s } } } } "
                         "node { name: \"p\" op: \"Pad\" input: \"x\" input: \"pd\" " TF
                         "attr { key: \"Tpaddings\" value { type: DT_INT32 } } } "
                         "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                         "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } "
                         "dim { size: 3 } dim { size: 3 } dim { size: %d } }",
                         pads, conv ? 6 : 2);
  for (int i = 0; i < (conv ? 162 : 54); i++)
    at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
  at += (size_t)snprintf(g + at, cap - at, " } } } } node { name: \"c\" op: \"%s\" input: \"p\" input: \"f\" ",
                         conv ? "Conv2D" : "DepthwiseConv2dNative");
  snprintf(g + at, cap - at,
           TF
           "attr { key: \"strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } } "
           "attr { key: \"padding\" value { s: \"VALID\" } } } " NODE2("m", "Mul", "c", "s") NODE2("a", "AddV2", "m", "t")
               NODE1("r", "Relu6", "a") "}");
  return g;
}

/* fold_graph(3 channels, bias, Relu) with the shift t (k 0) or the scale s (k 1) replaced by
 * u = Relu(x): what InceptionResNetV2's residual blocks compute. */
static char *residual_scale_graph(int k) {
  char *g = fold_graph(3, 1, "Relu", 0, 0, NODE1("u", "Relu", "x"));
  char *at = strstr(g, k ? "input: \"b\" input: \"s\"" : "input: \"m\" input: \"t\"");
  if (at) at[strlen("input: \"b\" input: \"")] = 'u';
  CHECK(at != NULL);
  return g;
}

static char *edited(char *g, const char *from, const char *to);

static void test_fold_rule(void) {
  /* the pattern Keras exports: with and without a bias, Relu / Relu6 / no activation, Mul either way */
  expect_fold(fold_graph(4, 1, "Relu", 0, 0, NULL), "x s t bias", "r", NULL, FOLDED("f:0,s:0,t:0,bias:0", ",Relu"));
  expect_fold(fold_graph(4, 0, "Relu6", 1, 0, NULL), "x s t", "r", NULL, FOLDED("f:0,s:0,t:0", ",Relu6"));
  expect_fold(fold_graph(4, 1, NULL, 1, 0, NULL), "x s t bias", "a", NULL, FOLDED("f:0,s:0,t:0,bias:0", ""));
  /* an activation that does not fuse stays after the fused node */
  expect_fold(fold_graph(4, 0, "Elu", 0, 0, NULL), "x s t", "r", NULL, FOLDED("f:0,s:0,t:0", ""));
  /* a control input of a chain node goes to both new nodes; the chain still folds */
  {
    rewritten r;
    char *g = fold_graph(4, 0, "Relu", 0, 0, "node { name: \"z\" op: \"NoOp\" } ");
    char *m = strstr(g, "node { name: \"m\"");
    char *gg = malloc(strlen(g) + 32);
    if (m && gg) {
      size_t cut = (size_t)(strstr(m, TF) - g);
      snprintf(gg, strlen(g) + 32, "%.*sinput: \"^z\" %s", (int)cut, g, g + cut);
      if (rewrite(gg, "x s t", "r", NULL, &r)) {
        int h = sm__cgraph_num_nodes(r.g);
        CHECK(sm__rewrite_num_synthetic(r.rw) == 2);
        for (int k = 0; k < 2 && sm__rewrite_num_synthetic(r.rw) == 2; k++) {
          const sm_node *n = sm__rewrite_node(r.rw, h + k);
          CHECK(sm__node_num_control_inputs(n) == 1 && sm__node_control_input(n, 0) == sm__cgraph_find(r.g, "z"));
        }
        /* the helper stands right before the fused node, after everything it reads */
        CHECK(pos_of(r.order, r.norder, h) + 1 == pos_of(r.order, r.norder, h + 1));
        CHECK(pos_of(r.order, r.norder, sm__cgraph_find(r.g, "z")) < pos_of(r.order, r.norder, h));
      }
      rewritten_free(&r);
    }
    free(gg);
    free(g);
  }
  /* must not fold: a value fetched mid-chain, a chain node that is a control input, a fed filter or
   * one that is computed (the conv and its bias still fuse by the nn rule), Mul(v, v) */
  expect_fold(fold_graph(4, 1, "Relu", 0, 0, NULL), "x s t bias", "r m", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)");
  expect_fold(fold_graph(4, 1, "Relu", 0, 0, "node { name: \"n\" op: \"NoOp\" input: \"^m\" } "), "x s t bias", "r", "n",
              "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)");
  expect_fold(fold_graph(4, 1, "Relu", 0, 1, NULL), "x f s t bias", "r", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)");
  expect_fold(fold_graph(4, 0, "Relu", 0, 0, NULL), "x s t f", "r", NULL, "");
  expect(G(PH("x") PH("f") PH("t") CONV("c", "x", "f") NODE2("m", "Mul", "c", "c") NODE2("a", "AddV2", "m", "t")),
         "x t", "a", NULL, "", NULL);
  /* InceptionResNetV2's residual block, x + (conv(x) + bias) * s: the Add's other operand is computed
   * from the conv's input (here Relu(x)), an activation, not a BatchNorm shift; nor is a scale
   * computed from it (the conv and its bias still fuse) */
  for (int k = 0; k < 2; k++) {
    char *g = residual_scale_graph(k);
    expect_fold(g, "x s t bias", "r", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)");
  }

  /* FusedBatchNormV3 (inference): the statistics go to the helper; ending the chain, its other
   * outputs must be unused; in training mode it is left alone */
#define FBN(train)                                                                                          \
  "node { name: \"n\" op: \"FusedBatchNormV3\" input: \"b\" input: \"s\" input: \"t\" input: \"mu\" "       \
  "input: \"var\" " TF "attr { key: \"U\" value { type: DT_FLOAT } } attr { key: \"epsilon\" value { f: 0.01 } } " \
  "attr { key: \"is_training\" value { b: " train " } } } "
  char *g = fold_graph(4, 1, NULL, 0, 0, PH("mu") PH("var") FBN("false") NODE1("r2", "Relu", "n"));
  char *fbn = strstr(g, "node { name: \"m\""), *end = fbn ? strstr(fbn, PH("mu")) : NULL;
  if (fbn && end) { /* drop m and a: the FBN reads b */
    memmove(fbn, end, strlen(end) + 1);
    expect(g, "x s t bias mu var", "r2", NULL, FOLDED("f:0,s:0,t:0,bias:0,mu:0,var:0", ",Relu"), NULL);
    expect(g, "x s t bias mu var", "n:0", NULL, FOLDED("f:0,s:0,t:0,bias:0,mu:0,var:0", ""), NULL);
    expect(g, "x s t bias mu var", "n:0 n:1", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
    /* epsilon 0 (or subnormal): a variance of 0 is TF's scale Inf, (conv - mean) * Inf + offset +-Inf
     * per element where the folded filter's +-Inf products sum to NaN: left unfolded */
    for (int k = 0; k < 2; k++) {
      char *e0 = edited(strdup(g), "{ f: 0.01 }", k ? "{ f: 1e-40 }" : "{ f: 0 }");
      expect(e0, "x s t bias mu var", "r2", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
      free(e0);
    }
    char *tr = strstr(g, "b: false");
    if (tr) memcpy(tr, "b: true ", 8);
    expect(g, "x s t bias mu var", "r2", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  }
  CHECK(fbn && end);
  free(g);

  /* a depthwise heads the same chains (no residual Add): TF's _FusedDepthwiseConv2dNative */
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 2, 1, "Relu6", 0, 0, NULL), "x s t bias", "r", NULL,
              DW_FOLDED("f:0,s:0,t:0,bias:0", ",Relu6"));
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 1, 0, NULL, 1, 0, PH("sc") NODE2("y", "AddV2", "a", "sc")),
              "x s t sc", "y", NULL, DW_FOLDED("f:0,s:0,t:0", ""));
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 1, 0, "Relu", 0, 1, NULL), "x f s t", "r", NULL, "");
  /* a zero Pad over H and W before it joins (the fused node reads x); one over C, or a fetched
   * one, stays */
#define DW_PADS(c) "int_val: 0 int_val: 0 int_val: 0 int_val: 1 int_val: 1 int_val: 1 int_val: 0 int_val: " c
  expect_fold(pad_graph(0, DW_PADS("0")), "x s t", "r", NULL, DW_FOLDED("f:0,s:0,t:0", ",Relu6"));
  expect_fold(pad_graph(0, DW_PADS("1")), "x s t", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedDepthwiseConv2dNative[BiasAdd,Relu6](p:0,"
              "c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  expect_fold(pad_graph(0, DW_PADS("0")), "x s t", "r p", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedDepthwiseConv2dNative[BiasAdd,Relu6](p:0,"
              "c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  /* the same Pad before a Conv2D joins it too; one over C stays */
  expect_fold(pad_graph(1, DW_PADS("0")), "x s t", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedConv2D[BiasAdd,Relu6](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  expect_fold(pad_graph(1, DW_PADS("1")), "x s t", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedConv2D[BiasAdd,Relu6](p:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  /* the nn rule: DepthwiseConv2dNative + BiasAdd [+ Relu | Relu6]; not with EXPLICIT padding (TF's
   * fused op has no explicit_paddings) */
#define DW(pad)                                                                                  \
  "node { name: \"c\" op: \"DepthwiseConv2dNative\" input: \"x\" input: \"f\" " TF STRIDES1 \
  "attr { key: \"padding\" value { s: \"" pad "\" } } "
  expect(G(PH("x") PH("f") PH("bias") DW("VALID") "} " BIAS("b", "c", "bias") NODE1("r", "Relu6", "b")), "x f bias", "r",
         NULL, "c=_FusedDepthwiseConv2dNative[BiasAdd,Relu6](x:0,f:0,bias:0)", NULL);
  expect(G(PH("x") PH("f") PH("bias") DW("EXPLICIT") "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 "
           "i: 1 i: 1 i: 1 i: 1 i: 0 i: 0 } } } } " BIAS("b", "c", "bias") NODE1("r", "Relu6", "b")),
         "x f bias", "r", NULL, "", NULL);
}

/* Runs `fetch` of the folded graph and of the same graph with m fetched too (nothing folds), with
 * feeds; they must agree to float rounding. Returns the folded run's status. */
static sm_status *fold_vs_plain(const char *g, const char *const *names, sm_tensor *const *feeds, int nfeeds,
                                const char *fetch, sm_session *keep) {
  sm_session *sb = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &sb));
  sm_tensor *oa = NULL, *ob[2] = {NULL, NULL};
  const char *fa[1] = {fetch}, *fb[2] = {fetch, "m"};
  sm_status *st = sm__session_run(keep, names, feeds, nfeeds, fa, 1, NULL, 0, &oa);
  if (sb) CHECK_OK(sm__session_run(sb, names, feeds, nfeeds, fb, 2, NULL, 0, ob));
  if (oa && ob[0]) {
    int64_t n = sm_tensor_num_elements(oa);
    const float *a = sm_tensor_data(oa), *b = sm_tensor_data(ob[0]);
    CHECK(n > 0 && n == sm_tensor_num_elements(ob[0]));
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) bad = !(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i])));
    CHECK(!bad);
  }
  sm_tensor_free(oa);
  sm_tensor_free(ob[0]);
  sm_tensor_free(ob[1]);
  sm__session_free(sb);
  return st;
}

static void test_fold_runs(void) {
  int64_t xd[4] = {2, 6, 5, 3}, cd[1] = {7};
  const char *names[4] = {"x", "s", "t", "bias"};
  sm_tensor *feeds[4] = {filled(4, xd, 11), filled(1, cd, 12), filled(1, cd, 13), filled(1, cd, 14)};
  char *g = fold_graph(7, 1, "Relu", 0, 0, NULL), *g0 = fold_graph(7, 0, "Relu6", 1, 0, NULL);
  sm_session *s = NULL, *s0 = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  CHECK_OK(sm__session_from_pbtxt(g0, &s0));
  if (s && s0) {
    CHECK_OK(fold_vs_plain(g, names, feeds, 4, "r", s));
    CHECK_OK(fold_vs_plain(g0, names, feeds, 3, "r", s0));
    /* new scale and shift values in place: the cached fold must not be reused */
    float *sv = sm_tensor_data(feeds[1]), *tv = sm_tensor_data(feeds[2]);
    for (int i = 0; i < 7; i++) sv[i] = -0.5f * sv[i] + 0.25f, tv[i] += 1.0f;
    CHECK_OK(fold_vs_plain(g, names, feeds, 4, "r", s));
    /* a scalar scale and shift broadcast over the channels */
    sm_tensor *sc = filled(0, NULL, 15), *f2[4] = {feeds[0], sc, sc, feeds[3]};
    CHECK_OK(fold_vs_plain(g, names, f2, 4, "r", s));
    /* a scale TF would broadcast over H: this fold cannot, and says so (no crash, no wrong value) */
    int64_t hd[4] = {1, 6, 1, 7};
    sm_tensor *sh = filled(4, hd, 16), *f3[4] = {feeds[0], sh, feeds[2], feeds[3]};
    const char *fr[1] = {"r"};
    sm_tensor *o = NULL;
    CHECK_ERR(sm__session_run(s, names, f3, 4, fr, 1, NULL, 0, &o), "not one value per output channel (7)");
    sm_tensor_free(o);
    /* a bias of the wrong size: BiasAdd's error */
    int64_t bd[1] = {5};
    sm_tensor *b5 = filled(1, bd, 17), *f4[4] = {feeds[0], feeds[1], feeds[2], b5};
    o = NULL;
    CHECK_ERR(sm__session_run(s, names, f4, 4, fr, 1, NULL, 0, &o), "Must provide as many biases");
    sm_tensor_free(o);
    sm_tensor_free(sc);
    sm_tensor_free(sh);
    sm_tensor_free(b5);
  }
  /* InceptionResNetV2's residual form runs as the plain graph does (a fold failed it: the shift a
   * whole activation, "not one value per output channel") */
  for (int k = 0; k < 2; k++) {
    int64_t c3[1] = {3};
    sm_tensor *f3c[4] = {feeds[0], filled(1, c3, 23), filled(1, c3, 24), filled(1, c3, 25)};
    char *gr = residual_scale_graph(k);
    sm_session *sr = NULL;
    CHECK_OK(sm__session_from_pbtxt(gr, &sr));
    if (sr) CHECK_OK(fold_vs_plain(gr, names, f3c, 4, "r", sr));
    sm__session_free(sr);
    free(gr);
    for (int i = 1; i < 4; i++) sm_tensor_free(f3c[i]);
  }
  sm__session_free(s);
  sm__session_free(s0);
  free(g);
  free(g0);
  /* depthwise, multiplier 2 and 1 (6 and 3 output channels): folded against plain; a scale of the
   * input's channel count (3) instead of the output's (6) fails as a Conv2D's does */
  int64_t c6[1] = {6}, c3[1] = {3};
  sm_tensor *d6[4] = {feeds[0], filled(1, c6, 18), filled(1, c6, 19), filled(1, c6, 20)};
  sm_tensor *d3[3] = {feeds[0], filled(1, c3, 21), filled(1, c3, 22)};
  char *gd = fold_graph_op("DepthwiseConv2dNative", 2, 1, "Relu6", 0, 0, NULL),
       *gd1 = fold_graph_op("DepthwiseConv2dNative", 1, 0, "Relu", 1, 0, NULL);
  sm_session *sd = NULL, *sd1 = NULL;
  CHECK_OK(sm__session_from_pbtxt(gd, &sd));
  CHECK_OK(sm__session_from_pbtxt(gd1, &sd1));
  if (sd && sd1) {
    CHECK_OK(fold_vs_plain(gd, names, d6, 4, "r", sd));
    CHECK_OK(fold_vs_plain(gd1, names, d3, 3, "r", sd1));
    sm_tensor *bad[4] = {feeds[0], d3[1], d6[2], d6[3]}, *o = NULL;
    const char *fr[1] = {"r"};
    CHECK_ERR(sm__session_run(sd, names, bad, 4, fr, 1, NULL, 0, &o), "not one value per output channel (6)");
    sm_tensor_free(o);
  }
  /* the Pad absorbed (top 0, bottom 1, left 1, right 1 over a 6x5 input, 3x3 stride 2), before a
   * depthwise and before a Conv2D */
  for (int conv = 0; conv < 2; conv++) {
    char *gp = pad_graph(conv, DW_PADS("0"));
    sm_session *sp = NULL;
    CHECK_OK(sm__session_from_pbtxt(gp, &sp));
    if (sp) CHECK_OK(fold_vs_plain(gp, names, d6, 3, "r", sp));
    sm__session_free(sp);
    free(gp);
  }
  sm__session_free(sd);
  sm__session_free(sd1);
  free(gd);
  free(gd1);
  for (int i = 1; i < 4; i++) sm_tensor_free(d6[i]);
  for (int i = 1; i < 3; i++) sm_tensor_free(d3[i]);
  for (int i = 0; i < 4; i++) sm_tensor_free(feeds[i]);
}

/* Keras 3's inference BatchNormalization after a conv, as it exports it: the scale and shift made
 * in the graph from gamma g, beta be, mean mu and variance v (fed here, ReadVariableOps there):
 *   sc = Mul(Rsqrt(AddV2(v, eps)), g), sh = Sub(be, Mul(mu, sc)), a = AddV2(Mul(c, sc), sh) -> Relu r
 * `swap` puts every commutative pair the other way round; plus `extra` nodes. */
static char *keras_bn_graph(int cout, int swap, const char *extra) {
  char *g = fold_graph(cout, 0, "Relu", 0, 0, NULL);
  size_t cap = strlen(g) + 4096;
  char *out = malloc(cap);
  if (!out) exit(1);
  /* the fold graph's Placeholders s, t become the computed sc, sh: rename its Mul/AddV2 inputs */
  char *m = strstr(g, "node { name: \"m\"");
  CHECK(m != NULL);
  if (!m) exit(1);
  snprintf(out, cap,
           "%.*snode { name: \"m\" op: \"Mul\" input: \"c\" input: \"sc\" " TF "} " NODE2("a", "AddV2", "m", "sh")
           NODE1("r", "Relu", "a") PH("g") PH("be") PH("mu") PH("v") FCONST("eps", "0.001") "%s%s%s%s%s%s}",
           (int)(m - g), g, swap ? NODE2("ad", "AddV2", "eps", "v") : NODE2("ad", "AddV2", "v", "eps"),
           NODE1("rs", "Rsqrt", "ad"), swap ? NODE2("sc", "Mul", "g", "rs") : NODE2("sc", "Mul", "rs", "g"),
           swap ? NODE2("m2", "Mul", "sc", "mu") : NODE2("m2", "Mul", "mu", "sc"), NODE2("sh", "Sub", "be", "m2"),
           extra ? extra : "");
  free(g);
  return out;
}

/* g (freed) with its first `from` replaced by `to`: a variant of a test graph. */
static char *edited(char *g, const char *from, const char *to) {
  char *at = strstr(g, from);
  CHECK(at != NULL);
  if (!at) return g;
  size_t cap = strlen(g) + strlen(to) + 1;
  char *out = malloc(cap);
  if (!out) exit(1);
  snprintf(out, cap, "%.*s%s%s", (int)(at - g), g, to, at + strlen(from));
  free(g);
  return out;
}

#define EPS_SCALAR "tensor_shape { } float_val: 0.001"
#define EPS_SHAPED(dims) "tensor_shape { " dims "} float_val: 0.001"
#define D1 "dim { size: 1 } "

#define KERAS_FOLDED "c/_sm_fold_bn=_SmFoldBN[](f:0,g:0,be:0,mu:0,v:0) c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)"

static void test_keras_bn(void) {
  static const char *const computed[] = {"ad", "rs", "sc", "m2", "sh", "eps"};
  for (int swap = 0; swap < 2; swap++) {
    char *g = keras_bn_graph(4, swap, NULL);
    rewritten r;
    /* the helper takes the four vectors; the six nodes computing scale and shift are dropped */
    if (rewrite(g, "x g be mu v", "r", NULL, &r)) {
      char got[1024];
      synthetic(&r, got, sizeof got);
      CHECK_EQ_STR(got, KERAS_FOLDED);
      for (int i = 0; i < 6; i++) CHECK_EQ_INT(pos_of(r.order, r.norder, sm__cgraph_find(r.g, computed[i])), -1);
      const sm_node *h = sm__rewrite_node(r.rw, sm__cgraph_num_nodes(r.g));
      float eps = 0;
      int64_t ns = 0;
      CHECK_OK(sm__node_attr_float(h, "epsilon", &eps));
      CHECK_OK(sm__node_attr_int(h, "num_stats", &ns));
      CHECK(eps == 0.001f && ns == 2);
    }
    rewritten_free(&r);
    /* the scale fetched too: it folds as before, and what computes the scale stays, the shift's
     * nodes go */
    if (rewrite(g, "x g be mu v", "r sc", NULL, &r)) {
      char got[1024];
      synthetic(&r, got, sizeof got);
      CHECK_EQ_STR(got, KERAS_FOLDED);
      for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(pos_of(r.order, r.norder, sm__cgraph_find(r.g, computed[i])) >= 0, i < 3 || i == 5);
    }
    rewritten_free(&r);
    free(g);
  }
  /* a node left unread that is a control input, or stateful, stays: the Rsqrt orders a NoOp, and a
   * stateful op orphaned (the variance from a RandomUniform: it stays read by the helper) */
  char *g = keras_bn_graph(4, 0, "node { name: \"n\" op: \"NoOp\" input: \"^rs\" } ");
  expect_fold(g, "x g be mu v", "r", "n", KERAS_FOLDED);
  rewritten r;
  g = keras_bn_graph(4, 0, "node { name: \"n\" op: \"NoOp\" input: \"^rs\" } ");
  if (rewrite(g, "x g be mu v", "r", "n", &r)) {
    CHECK(pos_of(r.order, r.norder, sm__cgraph_find(r.g, "rs")) >= 0);
    CHECK(pos_of(r.order, r.norder, sm__cgraph_find(r.g, "ad")) >= 0);
    CHECK_EQ_INT(pos_of(r.order, r.norder, sm__cgraph_find(r.g, "sh")), -1);
  }
  rewritten_free(&r);
  free(g);
  /* the epsilon's Add an Add, the epsilon of one element with rank up to 4: the same; of rank 5 it
   * would widen the scale and the conv output's rank (TF's output [1, N, H, W, C]): the old fold */
  expect_fold(edited(keras_bn_graph(4, 0, NULL), "op: \"AddV2\" input: \"v\"", "op: \"Add\" input: \"v\""),
              "x g be mu v", "r", NULL, KERAS_FOLDED);
  expect_fold(edited(keras_bn_graph(4, 0, NULL), EPS_SCALAR, EPS_SHAPED(D1 D1 D1 D1)), "x g be mu v", "r", NULL,
              KERAS_FOLDED);
  /* an epsilon of 0: not folded (as FusedBatchNorm's, test_fold_rule) */
  expect_fold(edited(keras_bn_graph(4, 0, NULL), EPS_SCALAR, "tensor_shape { } float_val: 0"), "x g be mu v", "r",
              NULL, "");
  expect_fold(edited(keras_bn_graph(4, 0, NULL), EPS_SCALAR, EPS_SHAPED(D1 D1 D1 D1 D1)), "x g be mu v", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,sc:0,sh:0) c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  /* not Keras' pattern: the scale's Mul over a Sqrt, the shift an AddV2: the old fold (scale and
   * shift computed in the graph) */
  g = keras_bn_graph(4, 0, NULL);
  char *rs = strstr(g, "\"Rsqrt\"");
  if (rs) memcpy(rs, "\"Sqrt\" ", 7);
  expect_fold(g, "x g be mu v", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,sc:0,sh:0) c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)");

  /* runs: folded against plain (m fetched: nothing folds), per-channel vectors and one-value ones,
   * then new values in place (the cached fold must not be reused) */
  int64_t xd[4] = {2, 6, 5, 3}, cd[1] = {7};
  const char *names[5] = {"x", "g", "be", "mu", "v"};
  sm_tensor *feeds[5] = {filled(4, xd, 31), filled(1, cd, 32), filled(1, cd, 33), filled(1, cd, 34), filled(1, cd, 35)};
  float *var = sm_tensor_data(feeds[4]);
  for (int i = 0; i < 7; i++) var[i] = fabsf(var[i]) + 0.1f;
  for (int swap = 0; swap < 2; swap++) {
    g = keras_bn_graph(7, swap, NULL);
    sm_session *s = NULL;
    CHECK_OK(sm__session_from_pbtxt(g, &s));
    if (s) {
      CHECK_OK(fold_vs_plain(g, names, feeds, 5, "r", s));
      float *gv = sm_tensor_data(feeds[1]), *mv = sm_tensor_data(feeds[3]);
      for (int i = 0; i < 7; i++) gv[i] = -0.5f * gv[i] + 0.25f, mv[i] += 1.0f, var[i] *= 2.0f;
      CHECK_OK(fold_vs_plain(g, names, feeds, 5, "r", s));
      sm_tensor *one = filled(0, NULL, 36), *f2[5] = {feeds[0], one, feeds[2], one, feeds[4]};
      CHECK_OK(fold_vs_plain(g, names, f2, 5, "r", s));
      /* a variance of another channel count: an error naming it, no crash */
      int64_t d5[1] = {5};
      sm_tensor *v5 = filled(1, d5, 37), *f3[5] = {feeds[0], feeds[1], feeds[2], feeds[3], v5}, *o = NULL;
      const char *fr[1] = {"r"};
      CHECK_ERR(sm__session_run(s, names, f3, 5, fr, 1, NULL, 0, &o), "variance");
      sm_tensor_free(o);
      sm_tensor_free(one);
      sm_tensor_free(v5);
    }
    sm__session_free(s);
    free(g);
  }
  for (int i = 0; i < 5; i++) sm_tensor_free(feeds[i]);

  /* gamma, beta, mean, variance read from variables (as Keras exports them): the helper keys its
   * cache by the four tensors (attr _sm_cache_inputs; fed ones by their bytes), and an assignment
   * between runs (a new tensor) folds again */
  g = keras_bn_graph(7, 0, NULL);
  size_t cap = strlen(g) + 4096;
  char *gv = malloc(cap);
  if (!gv) exit(1);
  size_t at = 0;
  const char *vars[4] = {"g", "be", "mu", "v"};
  const char *rest = g;
  for (int i = 0; i < 4; i++) {
    char ph[128], rep[1024];
    snprintf(ph, sizeof ph, PH("%s"), vars[i]);
    const char *hit = strstr(rest, ph);
    CHECK(hit != NULL);
    if (!hit) break;
    snprintf(rep, sizeof rep,
             "node { name: \"h%s\" op: \"VarHandleOp\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
             "attr { key: \"shared_name\" value { s: \"h%s\" } } attr { key: \"shape\" value { shape { dim { size: 7 } } } } } "
             PH("p%s") "node { name: \"a%s\" op: \"AssignVariableOp\" input: \"h%s\" input: \"p%s\" "
             "attr { key: \"dtype\" value { type: DT_FLOAT } } } "
             "node { name: \"%s\" op: \"ReadVariableOp\" input: \"h%s\" attr { key: \"dtype\" value { type: DT_FLOAT } } } ",
             vars[i], vars[i], vars[i], vars[i], vars[i], vars[i], vars[i], vars[i]);
    at += (size_t)snprintf(gv + at, cap - at, "%.*s%s", (int)(hit - rest), rest, rep);
    rest = hit + strlen(ph);
  }
  snprintf(gv + at, cap - at, "%s", rest);
  /* the same with the variance read through views (Squeeze(Reshape(read, [1, 7])), as Keras 3 gives
   * a conv's bias): still keyed by reference (the views' data pointer and shape, fresh tensors each
   * run), and an assignment still folds again */
  const char *vread = "node { name: \"v\" op: \"ReadVariableOp\" input: \"hv\" "
                      "attr { key: \"dtype\" value { type: DT_FLOAT } } } ";
  const char *vviews =
      "node { name: \"vread\" op: \"ReadVariableOp\" input: \"hv\" attr { key: \"dtype\" value { type: DT_FLOAT } } } "
      "node { name: \"vshape\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: \"value\" "
      "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 1 int_val: 7 } } } } "
      "node { name: \"vr\" op: \"Reshape\" input: \"vread\" input: \"vshape\" attr { key: \"T\" value { type: DT_FLOAT } } "
      "attr { key: \"Tshape\" value { type: DT_INT32 } } } "
      "node { name: \"v\" op: \"Squeeze\" input: \"vr\" attr { key: \"T\" value { type: DT_FLOAT } } } ";
  char *gvv = malloc(cap + 2048);
  if (!gvv) exit(1);
  const char *vat = strstr(gv, vread);
  CHECK(vat != NULL);
  if (vat) snprintf(gvv, cap + 2048, "%.*s%s%s", (int)(vat - gv), gv, vviews, vat + strlen(vread));
  else snprintf(gvv, cap + 2048, "%s", gv);
  for (int fed = 0; fed < 3; fed++) {
    rewritten rv;
    if (rewrite(fed == 1 ? g : fed ? gvv : gv, fed == 1 ? "x g be mu v" : "x", "r", NULL, &rv)) {
      const sm_node *h = sm__rewrite_node(rv.rw, sm__cgraph_num_nodes(rv.g));
      int ci = 0;
      if (h && sm__node_attr(h, "_sm_cache_inputs")) CHECK_OK(sm__node_attr_bool(h, "_sm_cache_inputs", &ci));
      CHECK_EQ_INT(ci, fed != 1);
    }
    rewritten_free(&rv);
  }
  for (int views = 0; views < 2; views++) {
  sm_session *sv = NULL, *sp = NULL;
  CHECK_OK(sm__session_from_pbtxt(views ? gvv : gv, &sv));
  CHECK_OK(sm__session_from_pbtxt(g, &sp));
  for (int round = 0; round < 3 && sv && sp; round++) {
    sm_tensor *x = filled(4, xd, 40), *vals[4];
    for (int i = 0; i < 4; i++) vals[i] = filled(1, cd, 41 + i + 7 * (round > 0));
    float *vv = sm_tensor_data(vals[3]);
    for (int i = 0; i < 7; i++) vv[i] = fabsf(vv[i]) + 0.1f;
    const char *pn[4] = {"pg", "pbe", "pmu", "pv"}, *an[4] = {"ag", "abe", "amu", "av"};
    if (round < 2) CHECK_OK(sm__session_run(sv, pn, vals, 4, NULL, 0, an, 4, NULL));
    const char *fx[1] = {"x"}, *fr[1] = {"r"}, *fp[2] = {"r", "m"};
    sm_tensor *oa = NULL, *ob[2] = {NULL, NULL}, *pf[5] = {x, vals[0], vals[1], vals[2], vals[3]};
    CHECK_OK(sm__session_run(sv, fx, &x, 1, fr, 1, NULL, 0, &oa));
    CHECK_OK(sm__session_run(sp, names, pf, 5, fp, 2, NULL, 0, ob));
    if (oa && ob[0]) {
      const float *a = sm_tensor_data(oa), *b = sm_tensor_data(ob[0]);
      int bad = sm_tensor_num_elements(oa) != sm_tensor_num_elements(ob[0]);
      for (int64_t i = 0; i < sm_tensor_num_elements(oa) && !bad; i++) bad = !(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i])));
      CHECK(!bad);
    }
    sm_tensor_free(oa);
    sm_tensor_free(ob[0]);
    sm_tensor_free(ob[1]);
    sm_tensor_free(x);
    for (int i = 0; i < 4; i++) sm_tensor_free(vals[i]);
  }
  sm__session_free(sv);
  sm__session_free(sp);
  }
  free(gvv);
  free(gv);
  free(g);
}

/* ---- LayerNorm and erf-GELU chains (nn_fuse_norm.c) -------------------------------------------- */
#define MEAN(n, in)                                                                                    \
  "node { name: \"" n "\" op: \"Mean\" input: \"" in "\" input: \"ax\" " TF                           \
  "attr { key: \"Tidx\" value { type: DT_INT32 } } attr { key: \"keep_dims\" value { b: true } } } "
/* Keras 3's LayerNormalization (center, scale) over the last axis of x; the mean is "m" */
static const char *ln_graph =
    G(PH("x") PH("gamma") PH("beta") FCONST("eps", "0.001")
      "node { name: \"ax\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: \"value\" "
      "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: -1 } } } } "
      MEAN("m", "x") NODE1("sg", "StopGradient", "m") NODE2("sd", "SquaredDifference", "x", "sg") MEAN("v", "sd")
      NODE2("a", "AddV2", "v", "eps") NODE1("r", "Rsqrt", "a") NODE2("s", "Mul", "r", "gamma") NODE1("neg", "Neg", "m")
      NODE2("mul1", "Mul", "neg", "s") NODE2("add1", "AddV2", "mul1", "beta") NODE2("mul2", "Mul", "x", "s")
      NODE2("y", "AddV2", "mul2", "add1"));
/* 0.5 b (1 + erf(b / sqrt 2)), b = BiasAdd(x, bias); 0.5 b is "m" */
static const char *gelu_graph =
    G(PH("x") PH("bias") FCONST("c0", "0.5") FCONST("c1", "0.70710678") FCONST("c2", "1") BIAS("b", "x", "bias")
      NODE2("m", "Mul", "c0", "b") NODE2("m1", "Mul", "b", "c1") NODE1("e", "Erf", "m1") NODE2("a", "AddV2", "c2", "e")
      NODE2("y", "Mul", "m", "a"));

static void test_norm_rules(void) {
  expect(ln_graph, "x gamma beta", "y", NULL, "y=_SmLayerNorm[](x:0,ax:0,ax:0,eps:0,gamma:0,beta:0)", "y");
  expect(ln_graph, "x gamma beta", "y m", NULL, "", NULL); /* the mean fetched: no fusion */
  expect(gelu_graph, "x bias", "y", NULL, "y=_SmGeluErf[](x:0,bias:0,c0:0,c1:0,c2:0)", "y");
  expect(gelu_graph, "x bias", "y b", NULL, "y=_SmGeluErf[](b:0,c0:0,c1:0,c2:0)", NULL); /* BiasAdd kept */
  expect(gelu_graph, "x bias c1", "y", NULL, "", NULL); /* a fed constant: not a Const any more */
  int64_t xd[3] = {3, 4, 24}, cd[1] = {24}, ld[3] = {1, 1, 24}, bd[1] = {5};
  const char *names[3] = {"x", "gamma", "beta"}, *gnames[2] = {"x", "bias"}, *fy[1] = {"y"};
  sm_tensor *feeds[3] = {filled(3, xd, 21), filled(1, cd, 22), filled(3, ld, 23)};
  sm_tensor *gfeeds[2] = {feeds[0], filled(1, cd, 24)}, *b5 = filled(1, bd, 25), *o = NULL;
  sm_session *s = NULL, *sg = NULL;
  CHECK_OK(sm__session_from_pbtxt(ln_graph, &s));
  CHECK_OK(sm__session_from_pbtxt(gelu_graph, &sg));
  if (s && sg) { /* fused (y alone) against the plain nodes (m fetched too) */
    CHECK_OK(fold_vs_plain(ln_graph, names, feeds, 3, "y", s));
    CHECK_OK(fold_vs_plain(gelu_graph, gnames, gfeeds, 2, "y", sg));
    sm_tensor *f2[3] = {feeds[0], b5, feeds[2]}, *f3[2] = {feeds[0], b5};
    CHECK_ERR(sm__session_run(s, names, f2, 3, fy, 1, NULL, 0, &o), "gamma must have one value or one per");
    sm_tensor_free(o);
    o = NULL;
    CHECK_ERR(sm__session_run(sg, gnames, f3, 2, fy, 1, NULL, 0, &o), "Must provide as many biases");
    sm_tensor_free(o);
  }
  sm__session_free(s);
  sm__session_free(sg);
  for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  sm_tensor_free(gfeeds[1]);
  sm_tensor_free(b5);
}

/* ---- Keras 3's inference BatchNorm: its parameters computed in the graph --------------------------- */
/* gamma g, beta bt, mean mu, variance v (Placeholders [7]) each Reshaped (Consts s0..s3 of `shape`,
 * four ints) -> add = v' + eps -> rs = Rsqrt -> mul = rs * g' ; m = Mul(in, mul) ; mul2 = mu' * mul ;
 * sub = bt' - mul2 ; a = m + sub [-> act r]; in is x, or with `conv` a Conv2D c of x and a Const
 * filter f [2, 2, 3, 7]. */
static char *keras_bn_reshaped_graph(int conv, const char *act, const char *shape) {
  size_t cap = 16384, at = 0;
  char *g = malloc(cap);
  if (!g) exit(1);
  at += (size_t)snprintf(g + at, cap - at, "graph_def { " PH("x") PH("g") PH("bt") PH("mu") PH("v") FCONST("eps", "0.001"));
  if (conv) {
    at += (size_t)snprintf(g + at, cap - at,
                           "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                           "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } "
                           "dim { size: 2 } dim { size: 3 } dim { size: 7 } }");
    for (int i = 0; i < 84; i++) at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
    at += (size_t)snprintf(g + at, cap - at, " } } } } " CONV("c", "x", "f"));
  }
  const char *vars[4] = {"g", "bt", "mu", "v"}, *rs[4] = {"rg", "rb", "rm", "rv"};
  for (int i = 0; i < 4; i++)
    at += (size_t)snprintf(g + at, cap - at,
                           "node { name: \"s%d\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
                           "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } } "
                           "%s } } } } node { name: \"%s\" op: \"Reshape\" input: \"%s\" input: \"s%d\" " TF
                           "attr { key: \"Tshape\" value { type: DT_INT32 } } } ",
                           i, shape, rs[i], vars[i], i);
  at += (size_t)snprintf(g + at, cap - at,
                         NODE2("add", "AddV2", "rv", "eps") NODE1("rs", "Rsqrt", "add") NODE2("mul", "Mul", "rs", "rg")
                             "node { name: \"m\" op: \"Mul\" input: \"%s\" input: \"mul\" " TF "} "
                             NODE2("mul2", "Mul", "rm", "mul") NODE2("sub", "Sub", "rb", "mul2") NODE2("a", "AddV2", "m", "sub"),
                         conv ? "c" : "x");
  if (act) at += (size_t)snprintf(g + at, cap - at, "node { name: \"r\" op: \"%s\" input: \"a\" " TF "} ", act);
  snprintf(g + at, cap - at, "}");
  return g;
}

#define BN_SHAPE "int_val: 1 int_val: 1 int_val: 1 int_val: 7"

static void test_keras_bn_rules(void) {
  char *g = keras_bn_reshaped_graph(0, "Relu", BN_SHAPE);
  /* one pass for the whole chain: every parameter node goes, the Consts of the shapes and eps too */
  expect(g, "x g bt mu v", "r", NULL, "r=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)", "r");
  rewritten r;
  if (rewrite(g, "x g bt mu v", "r", NULL, &r)) {
    const char *gone[] = {"s0", "s3", "rg", "rv", "eps", "add", "rs", "mul", "mul2", "sub", "m", "a"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) CHECK(pos_of(r.order, r.norder, sm__cgraph_find(r.g, gone[i])) < 0);
    CHECK_EQ_INT(r.norder, 1); /* the new node alone (the fed Placeholders are not run) */
  }
  rewritten_free(&r);
  free(g);
  expect_fold(keras_bn_reshaped_graph(0, "Relu6", BN_SHAPE), "x g bt mu v", "r", NULL, "r=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)");
  expect_fold(keras_bn_reshaped_graph(0, NULL, BN_SHAPE), "x g bt mu v", "a", NULL, "a=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)");
  /* after a convolution: folded into it from the four vectors (FusedBatchNorm's form) */
  expect_fold(keras_bn_reshaped_graph(1, "Relu", BN_SHAPE), "x g bt mu v", "r", NULL, FOLDED("f:0,g:0,bt:0,mu:0,v:0", ",Relu"));
  /* must not: the scale fetched (a second reader outside: the conv still folds, with s and t), a
   * shape that is not [1, .., 1, C], the same with a fed epsilon */
  expect_fold(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), "x g bt mu v", "r mul", NULL, "");
  expect_fold(keras_bn_reshaped_graph(1, "Relu", BN_SHAPE), "x g bt mu v", "r mul", NULL, FOLDED("f:0,mul:0,sub:0", ",Relu"));
  expect_fold(keras_bn_reshaped_graph(0, "Relu", "int_val: 1 int_val: 1 int_val: 7 int_val: 1"), "x g bt mu v", "r", NULL, "");
  expect_fold(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), "x g bt mu v eps", "r", NULL, "");
  /* the epsilon's Add an Add, the epsilon [1] or [1, 1, 1, 1]: the same one pass; of a rank above
   * the parameters' it would widen the output: left alone (after a conv too: folded with s and t,
   * whose shape the run then refuses) */
  expect_fold(edited(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), "op: \"AddV2\" input: \"rv\"",
                     "op: \"Add\" input: \"rv\""),
              "x g bt mu v", "r", NULL, "r=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)");
  expect_fold(edited(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), EPS_SCALAR, EPS_SHAPED(D1)), "x g bt mu v", "r",
              NULL, "r=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)");
  expect_fold(edited(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), EPS_SCALAR, EPS_SHAPED(D1 D1 D1 D1)),
              "x g bt mu v", "r", NULL, "r=_SmBatchNorm[](x:0,g:0,bt:0,mu:0,v:0)");
  expect_fold(edited(keras_bn_reshaped_graph(0, "Relu", BN_SHAPE), EPS_SCALAR, EPS_SHAPED(D1 D1 D1 D1 D1)),
              "x g bt mu v", "r", NULL, "");
  expect_fold(edited(keras_bn_reshaped_graph(1, "Relu", BN_SHAPE), EPS_SCALAR, EPS_SHAPED(D1 D1 D1 D1 D1)),
              "x g bt mu v", "r", NULL, FOLDED("f:0,mul:0,sub:0", ",Relu"));
  /* Reshapes to a shape that is not [1, .., 1, C] after a conv: the plain form, the Reshapes'
   * outputs the four vectors (the helper checks them per channel at run time) */
  expect_fold(keras_bn_reshaped_graph(1, "Relu", "int_val: 1 int_val: 1 int_val: 7 int_val: 1"), "x g bt mu v", "r", NULL,
              FOLDED("f:0,rg:0,rb:0,rm:0,rv:0", ",Relu"));
}

static void test_keras_bn_runs(void) {
  int64_t xd[4] = {2, 6, 5, 7}, cd[1] = {7}, c5[1] = {5}, x1[1] = {7};
  const char *names[5] = {"x", "g", "bt", "mu", "v"};
  sm_tensor *feeds[5] = {filled(4, xd, 31), filled(1, cd, 32), filled(1, cd, 33), filled(1, cd, 34), filled(1, cd, 35)};
  float *var = sm_tensor_data(feeds[4]);
  for (int i = 0; i < 7; i++) var[i] = fabsf(var[i]) + 0.5f;
  const char *acts[3] = {"Relu", "Relu6", NULL};
  for (int conv = 0; conv < 2; conv++)
    for (int k = 0; k < 3; k++) {
      char *g = keras_bn_reshaped_graph(conv, acts[k], BN_SHAPE);
      const char *y = acts[k] ? "r" : "a";
      sm_session *s = NULL;
      CHECK_OK(sm__session_from_pbtxt(g, &s));
      if (s) {
        /* conv 0 feeds x [2, 6, 5, 7]; conv 1 x [2, 6, 5, 7] too: its 3 input channels are the first
         * three of a fresh one */
        int64_t xc[4] = {2, 6, 5, 3};
        sm_tensor *x3 = filled(4, xc, 36), *f[5] = {conv ? x3 : feeds[0], feeds[1], feeds[2], feeds[3], feeds[4]};
        CHECK_OK(fold_vs_plain(g, names, f, 5, y, s));
        /* new parameter values in place: the kept scale and shift must not be reused */
        float *gm = sm_tensor_data(feeds[1]);
        for (int i = 0; i < 7; i++) gm[i] = -0.5f * gm[i] + 0.25f;
        var[3] += 2.0f;
        CHECK_OK(fold_vs_plain(g, names, f, 5, y, s));
        sm_tensor_free(x3);
      }
      sm__session_free(s);
      free(g);
    }
  /* what the fused node cannot compute fails the run with a message: a variance of 5 values (TF's
   * Reshape fails too), an x whose rank is below the parameters' (TF would broadcast to rank 4) */
  char *g = keras_bn_reshaped_graph(0, "Relu", BN_SHAPE);
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  if (s) {
    const char *fr[1] = {"r"};
    sm_tensor *v5 = filled(1, c5, 37), *xr1 = filled(1, x1, 38), *o = NULL;
    sm_tensor *f1[5] = {feeds[0], feeds[1], feeds[2], feeds[3], v5}, *f2[5] = {xr1, feeds[1], feeds[2], feeds[3], feeds[4]};
    CHECK_ERR(sm__session_run(s, names, f1, 5, fr, 1, NULL, 0, &o), "Input to reshape is a tensor with 5 values");
    sm_tensor_free(o);
    o = NULL;
    CHECK_ERR(sm__session_run(s, names, f2, 5, fr, 1, NULL, 0, &o), "does not keep its shape");
    sm_tensor_free(o);
    sm_tensor_free(v5);
    sm_tensor_free(xr1);
  }
  sm__session_free(s);
  free(g);
  for (int i = 0; i < 5; i++) sm_tensor_free(feeds[i]);
}

/* ---- a variable handle and its one read (state.c) ------------------------------------------------ */
#define DTF(k) "attr { key: \"" k "\" value { type: DT_FLOAT } } "
#define VH(n, shared)                                                                                      \
  "node { name: \"" n "\" op: \"VarHandleOp\" " DTF("dtype") "attr { key: \"shape\" value { shape { dim { " \
  "size: 2 } } } } attr { key: \"shared_name\" value { s: \"" shared "\" } } } "
#define RD(n, h) "node { name: \"" n "\" op: \"ReadVariableOp\" input: \"" h "\" " DTF("dtype") "} "
#define FC2(n, a, b)                                                                                        \
  "node { name: \"" n "\" op: \"Const\" " DTF("dtype") "attr { key: \"value\" value { tensor { dtype: DT_FLOAT " \
  "tensor_shape { dim { size: 2 } } float_val: " a " float_val: " b " } } } } "
#define ASG(n, h, v) "node { name: \"" n "\" op: \"AssignVariableOp\" input: \"" h "\" input: \"" v "\" " DTF("dtype") "} "
/* v (shared "v") read by rd -> n = Neg(rd); ctl waits on rd; hv1, hv2 (also "v") assign c1 / c2 */
static const char *read_graph =
    G(VH("v", "v") RD("rd", "v") NODE1("n", "Neg", "rd") "node { name: \"ctl\" op: \"NoOp\" input: \"^rd\" } "
      VH("hv1", "v") FC2("c1", "1.5", "-2") ASG("a1", "hv1", "c1") VH("hv2", "v") FC2("c2", "4", "0.25") ASG("a2", "hv2", "c2"));

static void test_read_variable(void) {
  expect(read_graph, NULL, "n", NULL, "rd=_SmReadVariable[)", NULL);
  expect(read_graph, NULL, "n", "ctl", "rd=_SmReadVariable[)", NULL); /* a control edge from the read */
  /* must not: a second reader of the handle, no shared_name (the node name is the key) */
  expect(G(VH("v", "v") RD("rd", "v") RD("rd2", "v") NODE2("n", "AddV2", "rd", "rd2")), NULL, "n", NULL, "", NULL);
  expect(G(VH("v", "") RD("rd", "v") NODE1("n", "Neg", "rd")), NULL, "n", NULL, "", NULL);
  /* it runs, and follows assignments between runs (the variable is kept, not its value) */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(read_graph, &s));
  if (!s) return;
  const char *fn[1] = {"n"};
  sm_tensor *o = NULL;
  CHECK_ERR(sm__session_run(s, NULL, NULL, 0, fn, 1, (const char *[]){"ctl"}, 1, &o), "uninitialized value v");
  sm_tensor_free(o);
  for (int k = 0; k < 3; k++) {
    o = NULL;
    CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){k == 1 ? "a2" : "a1"}, 1, &o));
    CHECK_OK(sm__session_run(s, NULL, NULL, 0, fn, 1, (const char *[]){"ctl"}, 1, &o));
    if (o) {
      const float *p = sm_tensor_data(o);
      CHECK(sm_tensor_num_elements(o) == 2 && p[0] == (k == 1 ? -4.0f : -1.5f) && p[1] == (k == 1 ? -0.25f : 2.0f));
      sm_tensor_free(o);
    }
  }
  sm__session_free(s);
}

int main(void) {
  test_fold_rule();
  test_fold_runs();
  test_keras_bn();
  test_norm_rules();
  test_keras_bn_rules();
  test_keras_bn_runs();
  test_read_variable();
  TEST_MAIN_END();
}
