/* test_rewrite.c - the plan-time graph rewrite (src/runtime/rewrite.c), the nn family's fusion
 * rules (src/ops/nn_fuse.c), synthetic nodes (src/graph/synth.c), the _FusedConv2D /
 * _FusedMatMul kernels, and the pass-through rules (array_fwd.c, math_fwd.c).
 *
 * For each rule, small pbtxt graphs are pruned and rewritten as a plan would be, and the emitted
 * node is checked (op, fused_ops, inputs, attrs, its place in the order), then the cases that must
 * not fuse: a fetched or fed intermediate, a second reader, NCHW, double, control edges,
 * overlapping pool windows, a ref (TF1 variable) read that would move past an assignment. Fused
 * and unfused runs (fetching the intermediate prevents fusion) must agree to the bit. Graphs that
 * carry _FusedConv2D / _FusedMatMul nodes themselves, as TF's grappler writes them, run and match
 * the unfused ops for every activation supported; unsupported ones fail at load. The driver is also
 * exercised with a rule table of this file's own (Neg(Neg(x)) -> Identity): chained rewrites, the
 * edge map, the reader books, and a faulty rule refused. The residual Add joined to a conv (also
 * after a folded BatchNorm), fused == unfused on oneDNN and on the kernels' own loops; pass-through
 * nodes dropped (array_fwd.c) and the ones that must stay; a Mul by a Const 1 dropped and a Mul by
 * a scalar Const before a Softmax folded into it (math_fwd.c);
 * swish (Sigmoid + Mul, and tf.nn.silu's IdentityN) fused into the product before it, fused ==
 * unfused to the bit. BatchNorm folding, Keras' BatchNorm, LayerNorm and erf-GELU, and the
 * variable read (state.c) are test_rewrite_bn.c's; the helpers both use are in rewrite_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/synth.h"
#include "rewrite_util.h"

/* The conv chain most cases start from: x, f, bias -> c -> b -> r (Relu) -> p (MaxPool 2x2/2). */
#define CHAIN PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Relu", "b")
static const char *conv_chain = G(CHAIN POOL("p", "r", "2", "2", "VALID"));

/* ---- the Conv2D rule --------------------------------------------------------------------------- */
static void test_conv_rule(void) {
  /* the whole chain: the node is named after the conv and takes the pool's place */
  expect(conv_chain, "x f bias", "p", NULL, "c=_FusedConv2D[BiasAdd,Relu,MaxPool](x:0,f:0,bias:0)", "p");
  expect(G(CHAIN), "x f bias", "r", NULL, "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", "r");
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Relu6", "b")),
         "x f bias", "r", NULL, "c=_FusedConv2D[BiasAdd,Relu6](x:0,f:0,bias:0)", "r");
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias")), "x f bias", "b", NULL,
         "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") NODE2("b", "BiasAddV1", "c", "bias")), "x f bias", "b",
         NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  /* no activation, then a pool; an activation that is not fused stays (Elu) */
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") POOL("p", "b", "2", "2", "SAME")),
         "x f bias", "p", NULL, "c=_FusedConv2D[BiasAdd,MaxPool](x:0,f:0,bias:0)", "p");
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("e", "Elu", "b")), "x f bias",
         "e", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  /* the bias is made after the conv in the order: the fused node stands after it (where b was) */
  expect(G(PH("x") PH("f") CONV("c", "x", "f") PH("bias0") NODE1("bias", "Identity", "bias0") BIAS("b", "c", "bias")),
         "x f bias0", "b", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  /* two layers: the second conv reads the first fused node */
  expect(G(CHAIN POOL("p", "r", "2", "2", "VALID") PH("f2") PH("bias2") CONV("c2", "p", "f2")
               BIAS("b2", "c2", "bias2") NODE1("r2", "Relu", "b2")),
         "x f bias f2 bias2", "r2", NULL,
         "c=_FusedConv2D[BiasAdd,Relu,MaxPool](x:0,f:0,bias:0) c2=_FusedConv2D[BiasAdd,Relu](c:0,f2:0,bias2:0)", NULL);

  /* the attrs: copied from the conv and the pool, TF's defaults, TArgs [T], num_args 1 */
  rewritten r;
  if (rewrite(G(PH("x") PH("f") PH("bias")
                    "node { name: \"c\" op: \"Conv2D\" input: \"x\" input: \"f\" " TF
                    "attr { key: \"strides\" value { list { i: 1 i: 2 i: 1 i: 1 } } } "
                    "attr { key: \"padding\" value { s: \"VALID\" } } "
                    "attr { key: \"dilations\" value { list { i: 1 i: 1 i: 2 i: 1 } } } } "
                    BIAS("b", "c", "bias") NODE1("r", "Relu", "b") POOL("p", "r", "3", "3", "SAME")),
              "x f bias", "p", NULL, &r)) {
    const sm_node *n = sm__rewrite_node(r.rw, sm__cgraph_num_nodes(r.g));
    CHECK(n != NULL);
    if (n) {
      const int64_t *v;
      size_t cnt;
      const char *s;
      size_t len;
      int64_t i;
      float fl;
      int dt;
      const int *types;
      CHECK_OK(sm__node_attr_ints(n, "strides", &v, &cnt));
      CHECK(cnt == 4 && v[1] == 2 && v[2] == 1);
      CHECK_OK(sm__node_attr_ints(n, "dilations", &v, &cnt));
      CHECK(cnt == 4 && v[2] == 2);
      CHECK_OK(sm__node_attr_string(n, "padding", &s, &len));
      CHECK(len == 5 && !memcmp(s, "VALID", 5));
      CHECK_OK(sm__node_attr_string(n, "data_format", &s, &len));
      CHECK(len == 4 && !memcmp(s, "NHWC", 4));
      CHECK_OK(sm__node_attr_int(n, "num_args", &i));
      CHECK(i == 1);
      CHECK_OK(sm__node_attr_float(n, "epsilon", &fl)); /* TF's default, from the OpDef */
      CHECK(fl > 0);
      CHECK_OK(sm__node_attr_type(n, "T", &dt));
      CHECK(dt == SM_FLOAT);
      CHECK_OK(sm__node_attr_types(n, "TArgs", &types, &cnt));
      CHECK(cnt == 1 && types[0] == SM_FLOAT);
      CHECK_OK(sm__node_attr_ints(n, "_sm_pool_ksize", &v, &cnt));
      CHECK(cnt == 4 && v[1] == 3 && v[2] == 3);
      CHECK_OK(sm__node_attr_ints(n, "_sm_pool_strides", &v, &cnt));
      CHECK(cnt == 4 && v[1] == 3);
      CHECK_OK(sm__node_attr_string(n, "_sm_pool_padding", &s, &len));
      CHECK(len == 4 && !memcmp(s, "SAME", 4));
      CHECK(sm__node_num_inputs(n) == 3 && sm__node_num_outputs(n) == 1 && sm__node_output_dtype(n, 0) == SM_FLOAT);
      int cnt2 = 0;
      CHECK(sm__node_input_arg(n, "args", &cnt2) == 2 && cnt2 == 1);
      CHECK(sm__node_input_dtype(n, 2) == SM_FLOAT);
    }
  }
  rewritten_free(&r);

  /* must not fuse */
  /* a fetched intermediate: the conv's value, then the BiasAdd's (the conv + bias still fuse) */
  expect(conv_chain, "x f bias", "p c", NULL, "", NULL);
  expect(conv_chain, "x f bias", "p b", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  expect(conv_chain, "x f bias", "p r", NULL, "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", "r");
  /* a fed value: the conv's output is fed while the conv runs as a target */
  expect(conv_chain, "x f bias c", "r", "c", "", NULL);
  /* a second reader of the conv's value, of the BiasAdd's */
  expect(G(CHAIN NODE1("c2", "Identity", "c")), "x f bias", "r c2", NULL, "", NULL);
  expect(G(CHAIN NODE1("b2", "Identity", "b")), "x f bias", "r b2", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)",
         "b");
  /* one node reading the value twice */
  expect(G(PH("x") PH("f") CONV("c", "x", "f") BIAS("b", "c", "c")), "x f", "b", NULL, "", NULL);
  /* the conv's value as the bias */
  expect(G(PH("x") PH("f") PH("y") CONV("c", "x", "f") BIAS("b", "y", "c")), "x f y", "b", NULL, "", NULL);
  /* NCHW conv; NCHW BiasAdd */
  expect(G(PH("x") PH("f") PH("bias")
               "node { name: \"c\" op: \"Conv2D\" input: \"x\" input: \"f\" " TF CONV_ATTRS
               "attr { key: \"data_format\" value { s: \"NCHW\" } } } " BIAS("b", "c", "bias")),
         "x f bias", "b", NULL, "", NULL);
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f")
               "node { name: \"b\" op: \"BiasAdd\" input: \"c\" input: \"bias\" " TF
               "attr { key: \"data_format\" value { s: \"NCHW\" } } } "),
         "x f bias", "b", NULL, "", NULL);
  /* double */
  expect(G(PHD("x") PHD("f") PHD("bias")
               "node { name: \"c\" op: \"Conv2D\" input: \"x\" input: \"f\" " TD CONV_ATTRS "} "
               "node { name: \"b\" op: \"BiasAdd\" input: \"c\" input: \"bias\" " TD "} "),
         "x f bias", "b", NULL, "", NULL);
  /* control edges: a node waits for the BiasAdd (it may only end a chain: the Relu stays), for the
   * Relu (the chain's last node: it fuses); the wait is then on the fused node (rewrite.h) */
  expect(G(CHAIN "node { name: \"w\" op: \"NoOp\" input: \"^b\" } "), "x f bias", "r", "w",
         "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", "b");
  expect(G(CHAIN "node { name: \"w\" op: \"NoOp\" input: \"^r\" } "), "x f bias", "r", "w",
         "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", "r");
  /* a chain node that waits for another: fused, and the fused node keeps the wait */
  {
    rewritten r2;
    if (rewrite(G(PH("x") PH("f") PH("bias") "node { name: \"z\" op: \"NoOp\" } " CONV("c", "x", "f")
                      "node { name: \"b\" op: \"BiasAdd\" input: \"c\" input: \"bias\" input: \"^z\" " TF "} "),
                "x f bias", "b", NULL, &r2)) {
      char got[256];
      synthetic(&r2, got, sizeof got);
      CHECK_EQ_STR(got, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)");
      const sm_node *n = sm__rewrite_node(r2.rw, sm__cgraph_num_nodes(r2.g));
      CHECK(n && sm__node_num_control_inputs(n) == 1 && sm__node_control_input(n, 0) == sm__cgraph_find(r2.g, "z"));
    }
    rewritten_free(&r2);
  }
  /* overlapping pool windows (3x3 / 2), an NCHW pool, a MaxPoolV2: the pool stays */
  expect(G(CHAIN POOL("p", "r", "3", "2", "VALID")), "x f bias", "p", NULL,
         "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", "r");
  expect(G(CHAIN "node { name: \"p\" op: \"MaxPool\" input: \"r\" " TF
                 "attr { key: \"ksize\" value { list { i: 1 i: 1 i: 2 i: 2 } } } "
                 "attr { key: \"strides\" value { list { i: 1 i: 1 i: 2 i: 2 } } } "
                 "attr { key: \"padding\" value { s: \"VALID\" } } "
                 "attr { key: \"data_format\" value { s: \"NCHW\" } } } "),
         "x f bias", "p", NULL, "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", "r");
}

/* ---- ref (TF1 variable) reads ---------------------------------------------------------------- */
#define VAR(n, shape)                                                                                \
  "node { name: \"" n "\" op: \"VariableV2\" attr { key: \"dtype\" value { type: DT_FLOAT } } "     \
  "attr { key: \"shape\" value { shape { " shape " } } } } "
#define DIM(d) "dim { size: " d " } "
/* conv reads the filter variable w itself (a ref read); an AssignAdd of another variable may run
 * between the conv and the BiasAdd (bias waits for it) */
#define REF_GRAPH(bias_wait)                                                                                      \
  G(PH("x") VAR("w", DIM("1") DIM("1") DIM("1") DIM("2")) VAR("v", "")                                            \
        "node { name: \"one\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "                     \
        "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } } "           \
        "node { name: \"wval\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "                    \
        "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { " DIM("1") DIM("1") DIM("1")        \
        DIM("2") "} float_val: 0.5 float_val: -2 } } } } "                                                        \
        "node { name: \"winit\" op: \"Assign\" input: \"w\" input: \"wval\" " TF "} "                             \
        "node { name: \"vinit\" op: \"Assign\" input: \"v\" input: \"one\" " TF "} "                              \
        PH("bias0") CONV("c", "x", "w") "node { name: \"asg\" op: \"AssignAdd\" input: \"v\" input: \"one\" " TF \
        "} node { name: \"bias\" op: \"Identity\" input: \"bias0\" " bias_wait TF "} " BIAS("b", "c", "bias"))

static void test_ref_reads(void) {
  /* an AssignAdd (not stateful per its OpDef: its ref input is how it writes) stands between the
   * conv and the BiasAdd: the conv's read of w must not move past it */
  rewritten r;
  if (rewrite(REF_GRAPH("input: \"^asg\" "), "x bias0", "b", NULL, &r)) {
    int c = sm__cgraph_find(r.g, "c"), a = sm__cgraph_find(r.g, "asg"), b = sm__cgraph_find(r.g, "b");
    int pc = pos_of(r.pruned, r.npruned, c), pa = pos_of(r.pruned, r.npruned, a), pb = pos_of(r.pruned, r.npruned, b);
    CHECK(pc < pa && pa < pb); /* the case this is about */
    CHECK(sm__rewrite_num_synthetic(r.rw) == 0);
  }
  rewritten_free(&r);
  /* no assignment in between: fused, reading the variable where the BiasAdd stood */
  expect(REF_GRAPH(""), "x bias0", "b", NULL, "c=_FusedConv2D[BiasAdd](x:0,w:0,bias0:0)", "b"); /* Identity dropped */
  /* a bias read from a variable directly: not fused */
  expect(G(PH("x") PH("f") VAR("bv", DIM("2")) CONV("c", "x", "f") BIAS("b", "c", "bv")), "x f", "b", NULL, "", NULL);

  /* and it runs: the fused node reads the ref variable w */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(REF_GRAPH(""), &s));
  if (!s) return;
  sm_tensor *o[2] = {NULL, NULL};
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"winit"}, 1, o));
  sm_tensor *x, *bias;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, (int64_t[]){1, 2, 1, 1}, &x));
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, (int64_t[]){2}, &bias));
  if (x && bias) {
    float *xp = sm_tensor_data(x), *bp = sm_tensor_data(bias);
    xp[0] = 3, xp[1] = -1, bp[0] = 0.25f, bp[1] = 1;
    CHECK_OK(sm__session_run(s, (const char *[]){"x", "bias0"}, (sm_tensor *[]){x, bias}, 2, (const char *[]){"b"}, 1,
                            NULL, 0, o));
    if (o[0]) { /* [3, -1] * [0.5, -2] + [0.25, 1], worked by hand */
      const float *p = sm_tensor_data(o[0]);
      CHECK(sm_tensor_num_elements(o[0]) == 4 && p[0] == 1.75f && p[1] == -5 && p[2] == -0.25f && p[3] == 3);
      sm_tensor_free(o[0]);
    }
  }
  sm_tensor_free(x);
  sm_tensor_free(bias);
  sm__session_free(s);
}

/* ---- the MatMul rule --------------------------------------------------------------------------- */
#define MM(n, a, b, extra) "node { name: \"" n "\" op: \"MatMul\" input: \"" a "\" input: \"" b "\" " TF extra "} "
static void test_matmul_rule(void) {
  const char *g = G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "attr { key: \"transpose_b\" value { b: true } } ")
                        BIAS("b", "m", "bias") NODE1("r", "Relu", "b") POOL("p", "r", "1", "1", "VALID"));
  /* a MaxPool never joins a MatMul */
  expect(g, "a w bias", "p", NULL, "m=_FusedMatMul[BiasAdd,Relu](a:0,w:0,bias:0)", "r");
  expect(G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "") BIAS("b", "m", "bias") NODE1("r", "Relu6", "b")),
         "a w bias", "r", NULL, "m=_FusedMatMul[BiasAdd,Relu6](a:0,w:0,bias:0)", "r");
  expect(G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "") NODE2("b", "BiasAddV1", "m", "bias")), "a w bias", "b",
         NULL, "m=_FusedMatMul[BiasAdd](a:0,w:0,bias:0)", "b");
  rewritten r;
  if (rewrite(g, "a w bias", "r", NULL, &r)) {
    const sm_node *n = sm__rewrite_node(r.rw, sm__cgraph_num_nodes(r.g));
    int ta = -1, tb = -1;
    CHECK(n != NULL);
    if (n) {
      CHECK_OK(sm__node_attr_bool(n, "transpose_a", &ta));
      CHECK_OK(sm__node_attr_bool(n, "transpose_b", &tb));
      CHECK(ta == 0 && tb == 1);
      CHECK(sm__node_attr(n, "TArgs") == NULL); /* not in _FusedMatMul's OpDef */
    }
  }
  rewritten_free(&r);
  /* must not fuse: fetched product, a second reader, double */
  expect(g, "a w bias", "r m", NULL, "", NULL);
  expect(G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "") BIAS("b", "m", "bias") NODE1("m2", "Neg", "m")), "a w bias",
         "b m2", NULL, "", NULL);
  expect(G(PHD("a") PHD("w") PHD("bias") "node { name: \"m\" op: \"MatMul\" input: \"a\" input: \"w\" " TD "} "
               "node { name: \"b\" op: \"BiasAdd\" input: \"m\" input: \"bias\" " TD "} "),
         "a w bias", "b", NULL, "", NULL);
}

/* ---- fused vs unfused, to the bit -------------------------------------------------------------- */
/* Runs fetch `want` of graph a and of graph b (with `extra` fetched too, so nothing fuses there)
 * and compares them bit for bit. */
static void same_run(const char *ga, const char *gb, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                     const char *want, const char *extra, const char *label) {
  sm_session *sa = NULL, *sb = NULL;
  CHECK_OK(sm__session_from_pbtxt(ga, &sa));
  CHECK_OK(sm__session_from_pbtxt(gb, &sb));
  sm_tensor *oa[1] = {NULL}, *ob[3] = {NULL, NULL, NULL};
  const char *fa[1] = {want}, *fb[3] = {want, extra, NULL};
  int nfb = 1;
  char ebuf[128];
  snprintf(ebuf, sizeof ebuf, "%s", extra ? extra : "");
  for (char *t = strtok(ebuf, " "); t && nfb < 3; t = strtok(NULL, " ")) fb[nfb++] = t;
  if (sa) CHECK_OK(sm__session_run(sa, feed_names, feeds, nfeeds, fa, 1, NULL, 0, oa));
  if (sb) CHECK_OK(sm__session_run(sb, feed_names, feeds, nfeeds, fb, nfb, NULL, 0, ob));
  if (oa[0] && ob[0]) {
    int64_t n = sm_tensor_num_elements(oa[0]);
    CHECK(n > 0 && n == sm_tensor_num_elements(ob[0]) && sm_tensor_rank(oa[0]) == sm_tensor_rank(ob[0]));
    int bad = n != sm_tensor_num_elements(ob[0]) ||
              memcmp(sm_tensor_data(oa[0]), sm_tensor_data(ob[0]), (size_t)n * sizeof(float)) != 0;
    if (bad) fprintf(stderr, "%s: fused and unfused differ\n", label);
    CHECK(!bad);
  }
  sm_tensor_free(oa[0]);
  for (int i = 0; i < 3; i++) sm_tensor_free(ob[i]);
  sm__session_free(sa);
  sm__session_free(sb);
}

static void test_fused_runs(void) {
  /* a small conv, and one 4x4 image through 96 filters of 3x3x128 (1.8M multiply-adds: oneDNN over
   * the pool in two slices of the filters, each writing through a dense copy; nn_dnnl.c
   * sm__dnnl_conv_split) */
  static const int64_t shapes[2][9] = {{2, 9, 7, 3, 3, 3, 3, 20, 20}, {1, 4, 4, 128, 3, 3, 128, 96, 96}};
  static const struct {
    const char *act, *extra;
  } acts[] = {{"Relu", ""}, {"Relu6", ""}, {"Elu", ""}, {"Sigmoid", ""}, {"Tanh", ""},
              {"LeakyRelu", "attr { key: \"alpha\" value { f: 0.3 } } "}};
  for (int sh = 0; sh < 2; sh++) {
    const int64_t *xd = shapes[sh], *fd = shapes[sh] + 4, *bd = shapes[sh] + 8;
    sm_tensor *feeds[3] = {filled(4, xd, 1), filled(4, fd, 2), filled(1, bd, 3)};
    const char *fn[3] = {"x", "f", "bias"};
    /* the rule's fusions vs the same graph with the intermediates fetched */
    same_run(conv_chain, conv_chain, fn, feeds, 3, "p", "c b", "conv+bias+relu+pool");
    const char *relu6 =
        G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Relu6", "b"));
    same_run(relu6, relu6, fn, feeds, 3, "r", "c b", "conv+bias+relu6");
    /* a graph carrying _FusedConv2D itself, as grappler writes it, vs Conv2D -> BiasAdd -> act */
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
      char ga[2048], gb[2048];
      snprintf(ga, sizeof ga,
               G(PH("x") PH("f") PH("bias") "node { name: \"r\" op: \"_FusedConv2D\" input: \"x\" input: \"f\" input: "
                 "\"bias\" " TF CONV_ATTRS "attr { key: \"num_args\" value { i: 1 } } "
                 "attr { key: \"TArgs\" value { list { type: DT_FLOAT } } } "
                 "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" s: \"%s\" } } } %s} "),
               acts[i].act, strstr(acts[i].act, "Leaky") ? "attr { key: \"leakyrelu_alpha\" value { f: 0.3 } } " : "");
      snprintf(gb, sizeof gb,
               G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias")
                     "node { name: \"r\" op: \"%s\" input: \"b\" " TF "%s} "),
               acts[i].act, acts[i].extra);
      same_run(ga, gb, fn, feeds, 3, "r", "c b", acts[i].act);
    }
    for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  }

  /* MatMul: one row (gemv), several rows (gemm), 4 rows by a 1024 x 1040 B (slices of its
   * columns through dense copies, nn_dnnl.c split_ncols), and one row by a 1027 x 1000 B (its
   * rows split over the pool, the bias and activation after the pieces' sum: nn_matmul.c) */
  static const int64_t mms[4][3] = {{1, 50, 24}, {37, 50, 24}, {4, 1024, 1040}, {1, 1027, 1000}};
  for (int mi = 0; mi < 4; mi++) {
    int64_t ad[2] = {mms[mi][0], mms[mi][1]}, wd[2] = {mms[mi][1], mms[mi][2]}, bd2[1] = {mms[mi][2]};
    sm_tensor *mf[3] = {filled(2, ad, 4), filled(2, wd, 5), filled(1, bd2, 6)};
    const char *mn[3] = {"a", "w", "bias"};
    const char *mm = G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "") BIAS("b", "m", "bias") NODE1("r", "Relu", "b"));
    same_run(mm, mm, mn, mf, 3, "r", "m b", "matmul+bias+relu");
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
      char ga[2048], gb[2048];
      snprintf(ga, sizeof ga,
               G(PH("a") PH("w") PH("bias") "node { name: \"r\" op: \"_FusedMatMul\" input: \"a\" input: \"w\" input: "
                 "\"bias\" " TF "attr { key: \"num_args\" value { i: 1 } } "
                 "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" s: \"%s\" } } } %s} "),
               acts[i].act, strstr(acts[i].act, "Leaky") ? "attr { key: \"leakyrelu_alpha\" value { f: 0.3 } } " : "");
      snprintf(gb, sizeof gb,
               G(PH("a") PH("w") PH("bias") MM("m", "a", "w", "") BIAS("b", "m", "bias")
                     "node { name: \"r\" op: \"%s\" input: \"b\" " TF "%s} "),
               acts[i].act, acts[i].extra);
      same_run(ga, gb, mn, mf, 3, "r", "m b", acts[i].act);
    }
    for (int i = 0; i < 3; i++) sm_tensor_free(mf[i]);
  }
}

/* ---- pass-through nodes dropped (array_fwd.c) ------------------------------------------------- */
/* Whether node `name` is still in the rewritten order, and what edge `name`:0 resolves to. */
static void expect_drop(const char *graph, const char *feeds, const char *fetches, const char *targets,
                        const char *name, int dropped, const char *to) {
  rewritten r;
  if (rewrite(graph, feeds, fetches, targets, &r)) {
    int id = sm__cgraph_find(r.g, name);
    CHECK(id >= 0);
    int gone = pos_of(r.order, r.norder, id) < 0;
    if (gone != dropped) fprintf(stderr, "node %s: %s, want %s\n", name, gone ? "dropped" : "kept", dropped ? "dropped" : "kept");
    CHECK(gone == dropped);
    sm_edge e = sm__rewrite_edge(r.rw, (sm_edge){id, 0});
    CHECK_EQ_STR(e.node >= 0 ? sm__node_name(sm__rewrite_node(r.rw, e.node)) : "-", to);
  }
  rewritten_free(&r);
}

static void test_drop_rule(void) {
  const char *chain = G(PH("x") NODE1("i1", "Identity", "x") NODE1("i2", "StopGradient", "i1")
                            NODE1("i3", "Snapshot", "i2") NODE1("n", "Neg", "i3"));
  expect_drop(chain, "x", "n", NULL, "i1", 1, "x");
  expect_drop(chain, "x", "n", NULL, "i3", 1, "x");
  /* kept: a fetched one (those before it still go), a fed one, one with a control input or that is
   * one, a read of a TF1 ref variable */
  expect_drop(chain, "x", "n i2", NULL, "i2", 0, "i2");
  expect_drop(chain, "x", "n i2", NULL, "i1", 1, "x");
  expect_drop(chain, "x i2", "n", NULL, "i3", 1, "i2");
  expect_drop(G(PH("x") "node { name: \"z\" op: \"NoOp\" } node { name: \"i\" op: \"Identity\" input: \"x\" "
                          "input: \"^z\" " TF "} " NODE1("n", "Neg", "i")),
              "x", "n", NULL, "i", 0, "i");
  expect_drop(G(PH("x") NODE1("i", "Identity", "x") NODE1("n", "Neg", "i")
                    "node { name: \"t\" op: \"NoOp\" input: \"^i\" } "),
              "x", "n", "t", "i", 0, "i");
  expect_drop(G(PH("x") VAR("v", DIM("2")) NODE1("i", "Identity", "v") NODE2("n", "Mul", "x", "i")), "x", "n", NULL,
              "i", 0, "i");
  /* the values are the ones the nodes compute */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(chain, &s));
  int64_t d[1] = {5};
  sm_tensor *x = filled(1, d, 21), *out[2] = {NULL, NULL};
  if (s) CHECK_OK(sm__session_run(s, (const char *[]){"x"}, &x, 1, (const char *[]){"n", "i2"}, 2, NULL, 0, out));
  for (int i = 0; out[0] && out[1] && i < 5; i++) {
    float v = ((const float *)sm_tensor_data(x))[i];
    CHECK(((const float *)sm_tensor_data(out[0]))[i] == -v && ((const float *)sm_tensor_data(out[1]))[i] == v);
  }
  sm_tensor_free(x);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm__session_free(s);
}

/* An attention's scale into its Softmax (math_fwd.c): Mul(x, Const c) -> Softmax as one
 * _SmScaledSoftmax, the same bits as the two nodes (any c: the same products) */
static void test_softmax_scale(void) {
  const char *l = G(PH("x") FCONST("c", "0.125") NODE2("m", "Mul", "c", "x") NODE1("s", "Softmax", "m")),
             *r = G(PH("x") FCONST("c", "0.3") NODE2("m", "Mul", "x", "c") NODE1("s", "Softmax", "m"));
  expect(l, "x", "s", NULL, "s=_SmScaledSoftmax[](x:0)", "s");
  expect(r, "x", "s", NULL, "s=_SmScaledSoftmax[](x:0)", "s");
  /* kept: the product fetched or read twice, the constant fed, one of shape [1], a LogSoftmax, a
   * Mul of two values */
  expect(l, "x", "s m", NULL, "", NULL);
  expect(G(PH("x") FCONST("c", "0.125") NODE2("m", "Mul", "c", "x") NODE1("s", "Softmax", "m") NODE1("n", "Neg", "m")),
         "x", "s n", NULL, "", NULL);
  expect(l, "x c", "s", NULL, "", NULL);
  expect(G(PH("x")
           "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
           "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 0.125 } } } } "
           NODE2("m", "Mul", "x", "c") NODE1("s", "Softmax", "m")),
         "x", "s", NULL, "", NULL);
  expect(G(PH("x") FCONST("c", "0.125") NODE2("m", "Mul", "c", "x") NODE1("s", "LogSoftmax", "m")), "x", "s", NULL, "",
         NULL);
  expect(G(PH("x") PH("y") NODE2("m", "Mul", "x", "y") NODE1("s", "Softmax", "m")), "x y", "s", NULL, "", NULL);
  /* fused and unfused (the product fetched) to the bit: rows of 1, 7, 128 (sixteen-lane steps), 133
   * and 1000 (several pool units), a 4-D tensor as an attention's scores, and extreme values: -inf,
   * inf (a NaN row), a NaN, products that overflow */
  static const int64_t shapes[][4] = {{3, 1}, {5, 7}, {2, 3, 16, 128}, {9, 133}, {40, 1000}};
  for (int i = 0; i < 5; i++) {
    int rank = i == 2 ? 4 : 2;
    sm_tensor *x = filled(rank, shapes[i], 41 + (uint32_t)i);
    float *xv = sm_tensor_data(x);
    if (i == 3) {
      xv[0] = -INFINITY, xv[133] = INFINITY, xv[266] = NAN, xv[400] = 3e38f, xv[401] = -3e38f;
      for (int k = 533; k < 666; k++) xv[k] = 1e38f * (float)(k % 3);
    }
    for (int w = 0; w < 2; w++) {
      const char *g = w ? r : l;
      same_run(g, g, (const char *[]){"x"}, &x, 1, "s", "m", w ? "Mul(x, 0.3) + Softmax" : "Mul(0.125, x) + Softmax");
    }
    sm_tensor_free(x);
  }
}

/* Mul by a Const 1 (math_fwd.c): tf.nn.silu's beta */
static void test_mul_one(void) {
  const char *l = G(PH("x") FCONST("one", "1") NODE2("m", "Mul", "one", "x") NODE1("n", "Neg", "m")),
             *r = G(PH("x") FCONST("one", "1") NODE2("m", "Mul", "x", "one") NODE1("n", "Neg", "m"));
  expect_drop(l, "x", "n", NULL, "m", 1, "x");
  expect_drop(r, "x", "n", NULL, "m", 1, "x");
  /* kept: another value, a fed one, one of shape [1] (it would broadcast a scalar x to [1]), a
   * fetched product */
  expect_drop(G(PH("x") FCONST("two", "2") NODE2("m", "Mul", "x", "two") NODE1("n", "Neg", "m")), "x", "n", NULL, "m",
              0, "m");
  expect_drop(l, "x one", "n", NULL, "m", 0, "m");
  expect_drop(G(PH("x")
                "node { name: \"one\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
                "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 } } } } "
                NODE2("m", "Mul", "x", "one") NODE1("n", "Neg", "m")),
              "x", "n", NULL, "m", 0, "m");
  expect_drop(l, "x", "n m", NULL, "m", 0, "m");
  /* the value: -x, signed zeros, infinities and NaN included */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(r, &s));
  int64_t d[1] = {6};
  sm_tensor *x = filled(1, d, 31), *out = NULL;
  float *xv = sm_tensor_data(x);
  xv[0] = 0.0f, xv[1] = -0.0f, xv[2] = INFINITY, xv[3] = NAN;
  if (s) CHECK_OK(sm__session_run(s, (const char *[]){"x"}, &x, 1, (const char *[]){"n"}, 1, NULL, 0, &out));
  for (int i = 0; out && i < 6; i++) {
    float v = ((const float *)sm_tensor_data(out))[i];
    CHECK(i == 3 ? isnan(v) : v == -xv[i] && signbit(v) != signbit(xv[i]));
  }
  sm_tensor_free(x);
  sm_tensor_free(out);
  sm__session_free(s);
}

/* ---- _FusedConv2D / _FusedMatMul the kernels refuse -------------------------------------------- */
static sm_status *prepare_graph(const char *graph, const char *fetch) {
  sm_session *s = NULL;
  sm_status *st = sm__session_from_pbtxt(graph, &s);
  if (!st) st = sm__session_prepare(s, NULL, 0, &fetch, 1, NULL, 0);
  sm__session_free(s);
  return st;
}

#define FCONV(ops, extra)                                                                                   \
  G(PH("x") PH("f") PH("bias") "node { name: \"r\" op: \"_FusedConv2D\" input: \"x\" input: \"f\" input: " \
    "\"bias\" " TF CONV_ATTRS "attr { key: \"num_args\" value { i: 1 } } "                                 \
    "attr { key: \"TArgs\" value { list { type: DT_FLOAT } } } "                                           \
    "attr { key: \"fused_ops\" value { list { " ops " } } } " extra "} ")

static void test_fused_refused(void) {
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"Add\"", ""), "r"),
            "node 'r' (_FusedConv2D): fused_ops [BiasAdd, Add] takes two args (the bias, the addend), not num_args=1");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"Add\" s: \"MaxPool\"", ""), "r"), "is not supported");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"Relu\" s: \"Add\"", ""), "r"), "is not supported");
  CHECK_ERR(prepare_graph(FCONV("s: \"FusedBatchNorm\" s: \"Relu\"", ""), "r"), "fused_ops [FusedBatchNorm, Relu]");
  CHECK_ERR(prepare_graph(FCONV("", ""), "r"), "fused_ops [] is not supported");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"Relu\" s: \"Tanh\"", ""), "r"), "[BiasAdd, Relu, Tanh]");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\"", "attr { key: \"data_format\" value { s: \"NCHW\" } } "), "r"),
            "data_format NCHW is not supported");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\"", "attr { key: \"filter_format\" value { s: \"OIHW\" } } "), "r"),
            "filter_format 'OIHW'");
  /* the pool extension needs its attrs, and windows that do not overlap */
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"MaxPool\"", ""), "r"), "_sm_pool_ksize");
  CHECK_ERR(prepare_graph(FCONV("s: \"BiasAdd\" s: \"MaxPool\"",
                                "attr { key: \"_sm_pool_ksize\" value { list { i: 1 i: 3 i: 3 i: 1 } } } "
                                "attr { key: \"_sm_pool_strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } } "
                                "attr { key: \"_sm_pool_padding\" value { s: \"VALID\" } } "),
                          "r"),
            "overlap");
  CHECK_ERR(prepare_graph(G(PHD("x") PHD("f") PHD("bias")
                                "node { name: \"r\" op: \"_FusedConv2D\" input: \"x\" input: \"f\" input: \"bias\" " TD
                                CONV_ATTRS "attr { key: \"num_args\" value { i: 1 } } "
                                "attr { key: \"TArgs\" value { list { type: DT_DOUBLE } } } "
                                "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" } } } } "),
                          "r"),
            "T=DT_DOUBLE is not supported");
  CHECK_ERR(prepare_graph(G(PH("a") PH("w") PH("bias") "node { name: \"r\" op: \"_FusedMatMul\" input: \"a\" input: "
                                                       "\"w\" input: \"bias\" " TF
                                                       "attr { key: \"num_args\" value { i: 1 } } "
                                                       "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" s: "
                                                       "\"GeluExact\" } } } } "),
                          "r"),
            "node 'r' (_FusedMatMul): fused_ops [BiasAdd, GeluExact] is not supported");
  /* a MatMul pools nothing */
  CHECK_ERR(prepare_graph(G(PH("a") PH("w") PH("bias") "node { name: \"r\" op: \"_FusedMatMul\" input: \"a\" input: "
                                                       "\"w\" input: \"bias\" " TF
                                                       "attr { key: \"num_args\" value { i: 1 } } "
                                                       "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" s: "
                                                       "\"MaxPool\" } } } } "),
                          "r"),
            "[BiasAdd, MaxPool] is not supported");
  /* two args where one is fused */
  CHECK_ERR(prepare_graph(G(PH("a") PH("w") PH("bias") PH("bias2")
                                "node { name: \"r\" op: \"_FusedMatMul\" input: \"a\" input: \"w\" input: \"bias\" "
                                "input: \"bias2\" " TF "attr { key: \"num_args\" value { i: 2 } } "
                                "attr { key: \"fused_ops\" value { list { s: \"BiasAdd\" } } } } "),
                          "r"),
            "not num_args=2");
}

/* ---- synthetic nodes ---------------------------------------------------------------------------- */
static void test_synth(void) {
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(G(PH("x") PH("f") CONV("c", "x", "f")), &s));
  if (!s) return;
  const sm_cgraph *g = sm__session_graph(s);
  const sm_node *c = sm__cgraph_node(g, sm__cgraph_find(g, "c"));
  sm_node *n = NULL;
  CHECK_ERR(sm__synth_new(g, "n", "NoSuchOp", &n), "op 'NoSuchOp' has no OpDef");
  CHECK_OK(sm__synth_new(g, "n", "_FusedConv2D", &n));
  if (!n) return;
  CHECK_OK(sm__synth_copy_attr(n, "T", c, "T"));
  CHECK_OK(sm__synth_copy_attr(n, "strides", c, "strides"));
  CHECK_OK(sm__synth_copy_attr(n, "explicit_paddings", c, "no_such_attr")); /* nothing set */
  CHECK_OK(sm__synth_set_string(n, "padding", "VALID"));
  CHECK_OK(sm__synth_set_string(n, "padding", "SAME")); /* replaces */
  CHECK_OK(sm__synth_set_strings(n, "fused_ops", (const char *[]){"BiasAdd", "Relu"}, 2));
  CHECK_OK(sm__synth_set_types(n, "TArgs", (const int[]){SM_FLOAT}, 1));
  CHECK_OK(sm__synth_set_int(n, "x_int", -7));
  CHECK_OK(sm__synth_set_float(n, "x_float", 2.5f));
  CHECK_OK(sm__synth_set_bool(n, "x_bool", 1));
  CHECK_OK(sm__synth_set_type(n, "x_type", SM_INT64));
  CHECK_OK(sm__synth_set_ints(n, "x_ints", (const int64_t[]){3, 4, 5}, 3));
  CHECK_ERR(sm__synth_finish(n), "required attr 'num_args' is not set");
  CHECK_OK(sm__synth_set_int(n, "num_args", 1));
  CHECK_OK(sm__synth_add_input(n, sm__node_input(c, 0)));
  CHECK_OK(sm__synth_add_input(n, sm__node_input(c, 1)));
  CHECK_ERR(sm__synth_finish(n), "has 2 data inputs, its OpDef wants 3");
  CHECK_OK(sm__synth_add_input(n, sm__node_input(c, 0)));
  CHECK_OK(sm__synth_add_control(n, 0));
  CHECK_OK(sm__synth_add_control(n, 0)); /* a repeat is ignored */
  CHECK_OK(sm__synth_finish(n));
  const char *str;
  size_t len, cnt;
  int64_t i;
  float f;
  int b, dt;
  const int64_t *v;
  CHECK_OK(sm__node_attr_string(n, "padding", &str, &len));
  CHECK(len == 4 && !memcmp(str, "SAME", 4));
  CHECK_OK(sm__node_attr_string(n, "data_format", &str, &len)); /* the OpDef's default */
  CHECK(len == 4 && !memcmp(str, "NHWC", 4));
  CHECK_OK(sm__node_attr_int(n, "x_int", &i));
  CHECK(i == -7);
  CHECK_OK(sm__node_attr_float(n, "x_float", &f));
  CHECK(f == 2.5f);
  CHECK_OK(sm__node_attr_bool(n, "x_bool", &b));
  CHECK(b == 1);
  CHECK_OK(sm__node_attr_type(n, "x_type", &dt));
  CHECK(dt == SM_INT64);
  CHECK_OK(sm__node_attr_ints(n, "x_ints", &v, &cnt));
  CHECK(cnt == 3 && v[0] == 3 && v[2] == 5);
  CHECK_ERR(sm__node_attr_int(n, "padding", &i), "is a string, not an int");
  CHECK(!strcmp(sm__node_name(n), "n") && !strcmp(sm__node_op(n), "_FusedConv2D"));
  CHECK(sm__node_num_inputs(n) == 3 && sm__node_num_outputs(n) == 1 && sm__node_output_dtype(n, 0) == SM_FLOAT);
  CHECK(sm__node_num_control_inputs(n) == 1 && sm__node_control_input(n, 0) == 0);
  int k = 0;
  CHECK(sm__node_input_arg(n, "filter", &k) == 1 && k == 1);
  CHECK(sm__node_output_arg(n, "output", &k) == 0 && k == 1);
  /* a kind the OpDef does not allow */
  sm_node *bad = NULL;
  CHECK_OK(sm__synth_new(g, "bad", "_FusedMatMul", &bad));
  if (bad) {
    CHECK_OK(sm__synth_set_type(bad, "T", SM_FLOAT));
    CHECK_OK(sm__synth_set_string(bad, "num_args", "one"));
    CHECK_ERR(sm__synth_finish(bad), "attr 'num_args' should be an int");
  }
  sm__synth_free(bad);
  sm__synth_free(n);
  sm__synth_free(NULL);
  sm__session_free(s);
}

/* ---- the driver, with rules of this file's own ------------------------------------------------ */
/* Neg(Neg(x)) -> Identity(x), at the second Neg's place. */
static sm_status *double_neg(sm_rewrite *rw, int anchor) {
  int r = sm__rewrite_only_reader(rw, (sm_edge){anchor, 0});
  if (r < 0 || strcmp(sm__node_op(sm__rewrite_node(rw, r)), "Neg")) return NULL;
  int chain[2] = {anchor, r};
  if (!sm__rewrite_can_fuse(rw, chain, 2)) return NULL;
  sm_node *n;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm__rewrite_node(rw, r)), "Identity", &n);
  if (st) return st;
  st = sm__synth_add_input(n, sm__rewrite_input(rw, anchor, 0));
  if (!st) st = sm__synth_copy_attr(n, "T", sm__rewrite_node(rw, anchor), "T");
  if (!st) st = sm__synth_finish(n);
  if (st) {
    sm__synth_free(n);
    return st;
  }
  return sm__rewrite_replace(rw, "double Neg", chain, 2, n);
}
static const sm_rewrite_rule neg_rules[] = {{"Neg", "double Neg", double_neg}, {0}};
static const sm_rewrite_rule *const neg_tables[] = {neg_rules, NULL};

/* A faulty rule: fuses an Exp with its first reader whatever else reads the Exp. */
static sm_status *greedy(sm_rewrite *rw, int anchor) {
  int r = -1;
  int nids = sm__rewrite_num_ids(rw);
  for (int id = 0; id < nids && r < 0; id++) {
    const sm_node *nd = sm__rewrite_node(rw, id);
    if (nd && sm__node_num_inputs(nd) == 1 && sm__rewrite_input(rw, id, 0).node == anchor) r = id;
  }
  if (r < 0) return NULL;
  sm_node *n;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), "greedy", "Identity", &n);
  if (!st) st = sm__synth_add_input(n, sm__rewrite_input(rw, anchor, 0));
  if (!st) st = sm__synth_copy_attr(n, "T", sm__rewrite_node(rw, anchor), "T");
  if (!st) st = sm__synth_finish(n);
  if (st) {
    sm__synth_free(n);
    return st;
  }
  return sm__rewrite_replace(rw, "greedy", (const int[]){anchor, r}, 2, n);
}
static const sm_rewrite_rule greedy_rules[] = {{"Exp", "greedy", greedy}, {0}};
static const sm_rewrite_rule *const greedy_tables[] = {greedy_rules, NULL};

static void test_driver(void) {
  sm_session *s = NULL;
  /* n1..n4: four Negs in a row, then e = Exp, read by e1 and e2 */
  CHECK_OK(sm__session_from_pbtxt(G(PH("x") NODE1("n1", "Neg", "x") NODE1("n2", "Neg", "n1") NODE1("n3", "Neg", "n2")
                                       NODE1("n4", "Neg", "n3") NODE1("e", "Exp", "n4") NODE1("e1", "Neg", "e")
                                           NODE1("e2", "Sqrt", "e")),
                                 &s));
  if (!s) return;
  const sm_cgraph *g = sm__session_graph(s);
  int nn = sm__cgraph_num_nodes(g);
  sm_edge x = {sm__cgraph_find(g, "x"), 0}, n4 = {sm__cgraph_find(g, "n4"), 0}, e1 = {sm__cgraph_find(g, "e1"), 0};
  int *order = NULL, norder = 0;
  CHECK_OK(sm__cgraph_prune(g, &x, 1, &e1, 1, NULL, 0, &order, &norder));
  sm_rewrite *rw = NULL;
  CHECK_OK(sm__rewrite_run_rules(g, order, norder, &x, 1, &e1, 1, neg_tables, &rw));
  if (rw) {
    /* n1 n2 -> i1 (named n2, at n2's place, reading x), then n3 (which reads i1 now) n4 -> i2 (named
     * n4, reading i1): a rule's inputs are resolved edges */
    int n;
    const int *o = sm__rewrite_order(rw, &n);
    CHECK_EQ_INT(sm__rewrite_num_synthetic(rw), 2);
    CHECK_EQ_INT(sm__rewrite_num_ids(rw), nn + 2);
    CHECK_EQ_INT(n, norder - 2);
    char d[128];
    describe(rw, nn, d, sizeof d);
    CHECK_EQ_STR(d, "n2=Identity[](x:0)");
    describe(rw, nn + 1, d, sizeof d);
    CHECK_EQ_STR(d, "n4=Identity[](n2:0)");
    sm_edge r = sm__rewrite_edge(rw, n4);
    CHECK(r.node == nn + 1 && r.index == 0);
    r = sm__rewrite_edge(rw, (sm_edge){sm__cgraph_find(g, "n2"), 0});
    CHECK(r.node == nn && r.index == 0);
    r = sm__rewrite_edge(rw, (sm_edge){sm__cgraph_find(g, "n1"), 0});
    CHECK(r.node == -1);
    r = sm__rewrite_edge(rw, x);
    CHECK(r.node == x.node && r.index == 0);
    CHECK(pos_of(o, n, nn + 1) == pos_of(o, n, sm__cgraph_find(g, "e")) - 1);
    CHECK(sm__rewrite_node(rw, nn + 2) == NULL && sm__rewrite_node(rw, -1) == NULL);
  }
  sm__rewrite_free(rw);
  /* a faulty rule is refused, naming it, and nothing leaks */
  rw = NULL;
  int *order2 = NULL, norder2 = 0;
  sm_edge e2 = {sm__cgraph_find(g, "e2"), 0};
  sm_edge both[2] = {e1, e2};
  CHECK_OK(sm__cgraph_prune(g, &x, 1, both, 2, NULL, 0, &order2, &norder2));
  CHECK_ERR(sm__rewrite_run_rules(g, order2, norder2, &x, 1, both, 2, greedy_tables, &rw), "graph rewrite 'greedy'");
  CHECK(rw == NULL);
  /* no rules: the order as it was */
  CHECK_OK(sm__rewrite_run_rules(g, order2, norder2, &x, 1, both, 2, NULL, &rw));
  if (rw) {
    int n;
    const int *o = sm__rewrite_order(rw, &n);
    CHECK(n == norder2 && !memcmp(o, order2, (size_t)n * sizeof *o));
  }
  sm__rewrite_free(rw);
  free(order);
  free(order2);
  sm__session_free(s);
}

/* ---- the residual Add (nn_fuse.c's rule, nn_conv.c's conv_add) ---------------------------------- */
#define RES(act) PH("x") PH("f") PH("bias") PH("sc") CONV("c", "x", "f") BIAS("b", "c", "bias") \
  NODE2("y", "AddV2", "sc", "b") act
static void test_residual(void) {
  expect(G(RES(NODE1("r", "Relu", "y"))), "x f bias sc", "r", NULL,
         "c=_FusedConv2D[BiasAdd,Add,Relu](x:0,f:0,bias:0,sc:0)", "r");
  expect(G(RES(NODE1("r", "Relu6", "y"))), "x f bias sc", "r", NULL,
         "c=_FusedConv2D[BiasAdd,Add,Relu6](x:0,f:0,bias:0,sc:0)", "r");
  expect(G(RES("")), "x f bias sc", "y", NULL, "c=_FusedConv2D[BiasAdd,Add](x:0,f:0,bias:0,sc:0)", "y");
  /* an activation that does not fuse stays; the Add's value fetched: no activation; the biased
   * value read twice (Add(b, b)) or fetched: no Add */
  expect(G(RES(NODE1("r", "Elu", "y"))), "x f bias sc", "r", NULL, "c=_FusedConv2D[BiasAdd,Add](x:0,f:0,bias:0,sc:0)",
         NULL);
  expect(G(RES(NODE1("r", "Relu", "y"))), "x f bias sc", "r y", NULL,
         "c=_FusedConv2D[BiasAdd,Add](x:0,f:0,bias:0,sc:0)", NULL);
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE2("y", "AddV2", "b", "b")),
         "x f bias", "y", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  expect(G(RES(NODE1("r", "Relu", "y"))), "x f bias sc", "r b", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  /* after a folded BatchNorm, the shortcut on either side */
  expect_fold(fold_graph(4, 1, NULL, 0, 0, PH("sc") NODE2("y", "AddV2", "a", "sc") NODE1("r", "Relu", "y")),
              "x s t bias sc", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0,bias:0) "
              "c=_FusedConv2D[BiasAdd,Add,Relu](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1,sc:0)");
  expect_fold(fold_graph(4, 0, NULL, 0, 0, PH("sc") NODE2("y", "Add", "sc", "a")), "x s t sc", "y", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedConv2D[BiasAdd,Add](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1,sc:0)");

  /* fused vs unfused, bit for bit: oneDNN's sum post-op (patch 72 > 32, so oneDNN runs it where
   * present) and the kernels' own loops (SM_DNNL=0), a shortcut of the output's shape and ones
   * that broadcast (the output then has the broadcast shape), every activation */
  int64_t xd[4] = {2, 9, 7, 8}, fd[4] = {3, 3, 8, 20}, bd[1] = {20};
  static const int64_t scd[][6] = {{4, 2, 9, 7, 20}, {1, 20}, {4, 1, 9, 7, 20}, {5, 3, 1, 1, 1, 20}};
  const char *fn[4] = {"x", "f", "bias", "sc"};
  static const char *const acts[] = {"", "Relu", "Relu6"};
  const char *saved = getenv("SM_DNNL");
  char keep[16];
  snprintf(keep, sizeof keep, "%s", saved ? saved : "");
  for (int off = 0; off < 2; off++) {
    if (off) setenv("SM_DNNL", "0", 1);
    for (size_t k = 0; k < sizeof scd / sizeof *scd; k++) {
      sm_tensor *feeds[4] = {filled(4, xd, 1), filled(4, fd, 2), filled(1, bd, 3), filled((int)scd[k][0], scd[k] + 1, 4)};
      for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        char g[2048], label[64];
        snprintf(g, sizeof g, G(RES("%s%s%s%s")), *acts[a] ? "node { name: \"r\" op: \"" : "", acts[a],
                 *acts[a] ? "\" input: \"y\" " TF "} " : "", "");
        snprintf(label, sizeof label, "residual %s shortcut %zu dnnl %s", acts[a], k, off ? "off" : "default");
        same_run(g, g, fn, feeds, 4, *acts[a] ? "r" : "y", "b", label);
      }
      if (k == 0) { /* a shortcut computed in the run: the fused node may sum onto its buffer in place */
        const char *g = G(PH("x") PH("f") PH("bias") PH("sc") NODE1("n", "Neg", "sc") CONV("c", "x", "f")
                              BIAS("b", "c", "bias") NODE2("y", "AddV2", "n", "b") NODE1("r", "Relu", "y"));
        same_run(g, g, fn, feeds, 4, "r", "b", off ? "residual in place, dnnl off" : "residual in place");
      }
      for (int i = 0; i < 4; i++) sm_tensor_free(feeds[i]);
    }
  }
  if (saved)
    setenv("SM_DNNL", keep, 1);
  else
    unsetenv("SM_DNNL");
  /* one 4x4 image through 96 filters of 3x3x128: oneDNN in two slices of the filters, the addend
   * copied into each slice's dense output (nn_dnnl.c sm__dnnl_conv_split); 8 images of 2x2x512 through 16
   * filters: oneDNN's blocked layout, the addend reordered into it (blocked_conv); the shortcut
   * fed and computed in the run; 32 images of 8x8x64 through 64 filters (pieces of 8+ images): nChw8c on a CPU without
   * AVX-512 (nn_dnnl.c blocked8_conv); 16 images of 4x4x128 through 256 filters: im2col + matmul
   * there (im2col_conv) */
  static const int64_t big[4][4][4] = {{{1, 4, 4, 128}, {3, 3, 128, 96}, {96}, {1, 4, 4, 96}},
                                       {{8, 2, 2, 512}, {3, 3, 512, 16}, {16}, {8, 2, 2, 16}},
                                       {{32, 8, 8, 64}, {3, 3, 64, 64}, {64}, {32, 8, 8, 64}},
                                       {{16, 4, 4, 128}, {3, 3, 128, 256}, {256}, {16, 4, 4, 256}}};
  static const char *const big_what[4] = {"filter slices", "blocked", "blocked 8c", "im2col"};
  for (int sh = 0; sh < 4; sh++) {
    const int64_t *bx = big[sh][0], *bf = big[sh][1], *bb = big[sh][2], *bs = big[sh][3];
    sm_tensor *feeds[4] = {filled(4, bx, 1), filled(4, bf, 2), filled(1, bb, 3), filled(4, bs, 4)};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
      char g[2048], label[64];
      snprintf(g, sizeof g, G(RES("%s%s%s%s")), *acts[a] ? "node { name: \"r\" op: \"" : "", acts[a],
               *acts[a] ? "\" input: \"y\" " TF "} " : "", "");
      snprintf(label, sizeof label, "residual %s, %s", acts[a], big_what[sh]);
      same_run(g, g, fn, feeds, 4, *acts[a] ? "r" : "y", "b", label);
    }
    const char *g = G(PH("x") PH("f") PH("bias") PH("sc") NODE1("n", "Neg", "sc") CONV("c", "x", "f")
                          BIAS("b", "c", "bias") NODE2("y", "AddV2", "n", "b") NODE1("r", "Relu", "y"));
    char label[64];
    snprintf(label, sizeof label, "residual in place, %s", big_what[sh]);
    same_run(g, g, fn, feeds, 4, "r", "b", label);
    for (int i = 0; i < 4; i++) sm_tensor_free(feeds[i]);
  }
  /* a shortcut that does not broadcast fails the run naming both shapes */
  {
    int64_t bad[4] = {2, 9, 7, 3};
    sm_tensor *feeds[4] = {filled(4, xd, 1), filled(4, fd, 2), filled(1, bd, 3), filled(4, bad, 4)};
    sm_session *s = NULL;
    CHECK_OK(sm__session_from_pbtxt(G(RES(NODE1("r", "Relu", "y"))), &s));
    sm_tensor *out = NULL;
    const char *f1[1] = {"r"};
    if (s) CHECK_ERR(sm__session_run(s, fn, feeds, 4, f1, 1, NULL, 0, &out), "Incompatible shapes: [2,9,7,20] vs. [2,9,7,3]");
    sm_tensor_free(out);
    sm__session_free(s);
    for (int i = 0; i < 4; i++) sm_tensor_free(feeds[i]);
  }
}

/* ---- swish (nn_fuse.c fuse_swish) -------------------------------------------------------------- */
/* tf.nn.silu of y as Keras 3 exports it: Mul(1, y), Sigmoid, Mul(y, sigmoid), and its custom
 * gradient's IdentityN(z, y, beta), whose output 0 is the activation */
#define SILU(y)                                                                                            \
  FCONST("one", "1") NODE2("mb", "Mul", "one", y) NODE1("sg", "Sigmoid", "mb") NODE2("z", "Mul", y, "sg") \
  "node { name: \"idn\" op: \"IdentityN\" input: \"z\" input: \"" y "\" input: \"one\" "                    \
  "attr { key: \"T\" value { list { type: DT_FLOAT type: DT_FLOAT type: DT_FLOAT } } } } "
#define MMS(n, a, b)                                                                                       \
  "node { name: \"" n "\" op: \"MatMul\" input: \"" a "\" input: \"" b "\" " TF "} "

static void test_swish(void) {
  /* after a folded BatchNorm (Conv2D, depthwise), a conv + bias, a matmul + bias; the bare pair */
  expect_fold(fold_graph(4, 0, NULL, 0, 0, SILU("a")), "x s t", "idn", NULL, FOLDED("f:0,s:0,t:0", ",_MklSwish"));
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 2, 1, NULL, 1, 0, SILU("a")), "x s t bias", "idn", NULL,
              DW_FOLDED("f:0,s:0,t:0,bias:0", ",_MklSwish"));
  expect_fold(fold_graph(4, 0, NULL, 0, 0, NODE1("sg", "Sigmoid", "a") NODE2("z", "Mul", "sg", "a")), "x s t", "z",
              NULL, FOLDED("f:0,s:0,t:0", ",_MklSwish"));
  const char *cb = G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") SILU("b"));
  expect(cb, "x f bias", "idn", NULL, "c=_FusedConv2D[BiasAdd,_MklSwish](x:0,f:0,bias:0)", NULL);
  const char *mb = G(PH("a") PH("w") PH("bias") MMS("m", "a", "w") BIAS("b", "m", "bias") SILU("b"));
  expect(mb, "a w bias", "idn", NULL, "m=_FusedMatMul[BiasAdd,_MklSwish](a:0,w:0,bias:0)", NULL);
  /* a plain Sigmoid after a conv + bias is an activation of its own now */
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Sigmoid", "b")),
         "x f bias", "r", NULL, "c=_FusedConv2D[BiasAdd,Sigmoid](x:0,f:0,bias:0)", "r");
  /* must not fuse: the sigmoid, the product or IdentityN's copy of it read; an activation already
   * fused (Relu, then swish of that); a Mul by another value */
  expect(cb, "x f bias", "idn sg", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  expect(cb, "x f bias", "idn b", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  expect(cb, "x f bias", "idn idn:1", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  expect(G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Relu", "b") SILU("r")),
         "x f bias", "idn", NULL, "c=_FusedConv2D[BiasAdd,Relu](x:0,f:0,bias:0)", NULL);
  expect(G(PH("x") PH("f") PH("bias") PH("y") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("sg", "Sigmoid", "b")
               NODE2("z", "Mul", "y", "sg")),
         "x f bias y", "z", NULL, "c=_FusedConv2D[BiasAdd,Sigmoid](x:0,f:0,bias:0)", NULL);

  /* fused and unfused (the sigmoid fetched too) to the bit: a small conv and one image through 96
   * filters of 3x3x128 (oneDNN, split over the pool), a BatchNorm fold, a depthwise fold, matmuls */
  static const int64_t shapes[2][9] = {{2, 9, 7, 3, 3, 3, 3, 20, 20}, {1, 8, 8, 128, 3, 3, 128, 96, 96}};
  for (int sh = 0; sh < 2; sh++) {
    sm_tensor *feeds[3] = {filled(4, shapes[sh], 31), filled(4, shapes[sh] + 4, 32), filled(1, shapes[sh] + 8, 33)};
    same_run(cb, cb, (const char *[]){"x", "f", "bias"}, feeds, 3, "idn", "sg", "conv+bias+swish");
    for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  }
  int64_t xd[4] = {2, 6, 5, 3}, c7[1] = {7}, c6[1] = {6};
  sm_tensor *ff[4] = {filled(4, xd, 34), filled(1, c7, 35), filled(1, c7, 36), filled(1, c6, 37)};
  sm_tensor *fd[4] = {ff[0], filled(1, c6, 38), filled(1, c6, 39), ff[3]};
  const char *fn[4] = {"x", "s", "t", "bias"};
  char *g = fold_graph(7, 0, NULL, 0, 0, SILU("a"));
  same_run(g, g, fn, ff, 3, "idn", "sg", "fold+swish");
  free(g);
  g = fold_graph_op("DepthwiseConv2dNative", 2, 1, NULL, 1, 0, SILU("a"));
  same_run(g, g, fn, fd, 4, "idn", "sg", "depthwise fold+swish");
  free(g);
  static const int64_t mms[2][3] = {{37, 50, 24}, {4, 1024, 1040}};
  for (int mi = 0; mi < 2; mi++) {
    int64_t ad[2] = {mms[mi][0], mms[mi][1]}, wd[2] = {mms[mi][1], mms[mi][2]}, bd[1] = {mms[mi][2]};
    sm_tensor *mf[3] = {filled(2, ad, 40), filled(2, wd, 41), filled(1, bd, 42)};
    same_run(mb, mb, (const char *[]){"a", "w", "bias"}, mf, 3, "idn", "sg", "matmul+bias+swish");
    for (int i = 0; i < 3; i++) sm_tensor_free(mf[i]);
  }
  for (int i = 0; i < 4; i++) sm_tensor_free(ff[i]);
  sm_tensor_free(fd[1]);
  sm_tensor_free(fd[2]);
  /* Sigmoid as the activation before a fused MaxPool: a grey 3x3 input (the direct loops) and 3x3x3 */
  const char *sp = G(PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Sigmoid", "b")
                         POOL("p", "r", "2", "2", "VALID"));
  expect(sp, "x f bias", "p", NULL, "c=_FusedConv2D[BiasAdd,Sigmoid,MaxPool](x:0,f:0,bias:0)", "p");
  static const int64_t ps[2][9] = {{2, 9, 7, 1, 3, 3, 1, 16, 16}, {2, 9, 7, 3, 3, 3, 3, 20, 20}};
  for (int k = 0; k < 2; k++) {
    sm_tensor *pf[3] = {filled(4, ps[k], 43), filled(4, ps[k] + 4, 44), filled(1, ps[k] + 8, 45)};
    same_run(sp, sp, (const char *[]){"x", "f", "bias"}, pf, 3, "p", "c b", "conv+bias+sigmoid+pool");
    for (int i = 0; i < 3; i++) sm_tensor_free(pf[i]);
  }
}

/* A zero Pad before a VALID MaxPool (Keras' ZeroPadding2D before ResNet50's pool1) joins it: one
 * MaxPool over x, EXPLICIT padding, attr _sm_pad_zero, whose windows past the edge count a 0 as the
 * padded copy's zeros did (checked on mostly negative inputs against the Pad fetched, which keeps
 * the plain nodes); a Pad over C stays. */
static const char *pool_pad_graph(const char *c_pad) {
  static char g[2048];
  snprintf(g, sizeof g,
           G(PH("x") "node { name: \"pd\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
                     "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } dim { size: 2 } } "
                     "int_val: 0 int_val: 0 int_val: 1 int_val: 0 int_val: 1 int_val: 1 int_val: 0 int_val: %s } } } } "
                     "node { name: \"p\" op: \"Pad\" input: \"x\" input: \"pd\" " TF
                     "attr { key: \"Tpaddings\" value { type: DT_INT32 } } } "
                     "node { name: \"mp\" op: \"MaxPool\" input: \"p\" " TF
                     "attr { key: \"ksize\" value { list { i: 1 i: 3 i: 3 i: 1 } } } "
                     "attr { key: \"strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } } "
                     "attr { key: \"padding\" value { s: \"VALID\" } } } "),
           c_pad);
  return g;
}

static void test_pool_pad(void) {
  for (int cpad = 0; cpad < 2; cpad++) {
    rewritten r;
    if (rewrite(pool_pad_graph(cpad ? "1" : "0"), "x", "mp", NULL, &r)) {
      const sm_node *h = sm__rewrite_num_synthetic(r.rw) ? sm__rewrite_node(r.rw, sm__cgraph_num_nodes(r.g)) : NULL;
      CHECK_EQ_INT(h != NULL, !cpad);
      if (h) {
        int z = 0;
        CHECK(!strcmp(sm__node_op(h), "MaxPool"));
        CHECK_OK(sm__node_attr_bool(h, "_sm_pad_zero", &z));
        CHECK_EQ_INT(z, 1);
        CHECK(sm__rewrite_edge(r.rw, sm__node_input(h, 0)).node == 0); /* reads x */
      }
    }
    rewritten_free(&r);
  }
  int64_t xd[4] = {2, 6, 5, 3};
  sm_tensor *x = filled(4, xd, 51);
  float *xv = sm_tensor_data(x);
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) xv[i] -= 0.4f; /* mostly negative */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(pool_pad_graph("0"), &s));
  if (s) {
    sm_tensor *oa = NULL, *ob[2] = {NULL, NULL};
    const char *fx[1] = {"x"}, *fa[1] = {"mp"}, *fb[2] = {"mp", "p"};
    CHECK_OK(sm__session_run(s, fx, &x, 1, fa, 1, NULL, 0, &oa));
    CHECK_OK(sm__session_run(s, fx, &x, 1, fb, 2, NULL, 0, ob));
    if (oa && ob[0]) {
      int64_t n = sm_tensor_num_elements(oa);
      CHECK(n == 2 * 3 * 3 * 3 && n == sm_tensor_num_elements(ob[0]));
      CHECK(!memcmp(sm_tensor_data(oa), sm_tensor_data(ob[0]), (size_t)n * sizeof(float)));
      int zeros = 0;
      for (int64_t i = 0; i < n; i++) zeros += ((const float *)sm_tensor_data(oa))[i] == 0.0f;
      CHECK(zeros > 0); /* the padding won some windows */
    }
    sm_tensor_free(oa);
    sm_tensor_free(ob[0]);
    sm_tensor_free(ob[1]);
  }
  sm__session_free(s);
  sm_tensor_free(x);
}

int main(void) {
  test_synth();
  test_pool_pad();
  test_driver();
  test_conv_rule();
  test_ref_reads();
  test_matmul_rule();
  test_fused_runs();
  test_fused_refused();
  test_residual();
  test_drop_rule();
  test_mul_one();
  test_softmax_scale();
  test_swish();
  TEST_MAIN_END();
}
