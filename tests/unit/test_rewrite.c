/* test_rewrite.c - the plan-time graph rewrite (src/runtime/rewrite.c), the nn family's fusion
 * rules (src/ops/nn_fuse.c), synthetic nodes (src/graph/synth.c) and the _FusedConv2D /
 * _FusedMatMul kernels.
 *
 * For each rule, small pbtxt graphs are pruned and rewritten as a plan would be, and the emitted
 * node is checked (op, fused_ops, inputs, attrs, its place in the order), then the cases that must
 * not fuse: a fetched or fed intermediate, a second reader, NCHW, double, control edges,
 * overlapping pool windows, a ref (TF1 variable) read that would move past an assignment. Fused
 * and unfused runs (fetching the intermediate prevents fusion) must agree to the bit. Graphs that
 * carry _FusedConv2D / _FusedMatMul nodes themselves, as TF's grappler writes them, run and match
 * the unfused ops for every activation supported; unsupported ones fail at load. The driver is also
 * exercised with a rule table of this file's own (Neg(Neg(x)) -> Identity): chained rewrites, the
 * edge map, the reader books, and a faulty rule refused. BatchNorm folding (nn_fold.c): where the
 * rule applies and where it must not, folded vs unfolded runs, the fold following changed inputs;
 * Keras 3's BatchNorm (its scale and shift computed in the graph from the variables) folded or
 * fused into one pass (_SmBatchNorm, nn_fuse_norm.c), against the plain nodes, with changed
 * parameters and the inputs it refuses; a variable handle and its one read as one step (state.c),
 * also when a control edge leaves the read; pass-through nodes dropped (array_fwd.c) and the ones
 * that must stay; swish (Sigmoid + Mul, and tf.nn.silu's IdentityN) fused into the product before
 * it, fused == unfused to the bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/synth.h"
#include "runtime/rewrite.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

/* ---- graph text ---------------------------------------------------------------------------- */
#define TF "attr { key: \"T\" value { type: DT_FLOAT } } "
#define TD "attr { key: \"T\" value { type: DT_DOUBLE } } "
#define PH(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } } "
#define PHD(n) "node { name: \"" n "\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_DOUBLE } } } "
#define STRIDES1 "attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } "
#define CONV_ATTRS STRIDES1 "attr { key: \"padding\" value { s: \"SAME\" } } "
#define CONV(n, in, f) "node { name: \"" n "\" op: \"Conv2D\" input: \"" in "\" input: \"" f "\" " TF CONV_ATTRS "} "
#define NODE1(n, op, in) "node { name: \"" n "\" op: \"" op "\" input: \"" in "\" " TF "} "
#define NODE2(n, op, a, b) "node { name: \"" n "\" op: \"" op "\" input: \"" a "\" input: \"" b "\" " TF "} "
#define BIAS(n, in, b) NODE2(n, "BiasAdd", in, b)
#define POOL(n, in, k, s, pad)                                                                              \
  "node { name: \"" n "\" op: \"MaxPool\" input: \"" in "\" " TF "attr { key: \"ksize\" value { list { i: 1 i: " k \
  " i: " k " i: 1 } } } attr { key: \"strides\" value { list { i: 1 i: " s " i: " s                          \
  " i: 1 } } } attr { key: \"padding\" value { s: \"" pad "\" } } } "
#define G(body) "graph_def { " body "}"

/* The conv chain most cases start from: x, f, bias -> c -> b -> r (Relu) -> p (MaxPool 2x2/2). */
#define CHAIN PH("x") PH("f") PH("bias") CONV("c", "x", "f") BIAS("b", "c", "bias") NODE1("r", "Relu", "b")
static const char *conv_chain = G(CHAIN POOL("p", "r", "2", "2", "VALID"));

/* ---- running the rewrite as a plan does ------------------------------------------------------ */
typedef struct rewritten {
  sm_session *s;
  const sm_cgraph *g;
  int *pruned, npruned; /* the order before the rewrite */
  sm_rewrite *rw;
  const int *order; /* after */
  int norder;
} rewritten;

/* Space-separated tensor names into edges. */
static int edges_of(const sm_cgraph *g, const char *names, sm_edge *out, int cap) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", names ? names : "");
  for (char *t = strtok(buf, " "); t && n < cap; t = strtok(NULL, " "))
    CHECK_OK(sm__cgraph_resolve(g, t, &out[n++], NULL));
  return n;
}

/* Prunes the graph for feeds/fetches/targets (space-separated names) and rewrites the order. */
static int rewrite(const char *graph, const char *feeds, const char *fetches, const char *targets, rewritten *r) {
  memset(r, 0, sizeof *r);
  CHECK_OK(sm__session_from_pbtxt(graph, &r->s));
  if (!r->s) return 0;
  r->g = sm__session_graph(r->s);
  sm_edge fd[8], ft[8];
  int t[8], nt = 0;
  int nfd = edges_of(r->g, feeds, fd, 8), nft = edges_of(r->g, fetches, ft, 8);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", targets ? targets : "");
  for (char *tok = strtok(buf, " "); tok && nt < 8; tok = strtok(NULL, " ")) t[nt++] = sm__cgraph_find(r->g, tok);
  CHECK_OK(sm__cgraph_prune(r->g, fd, nfd, ft, nft, t, nt, &r->pruned, &r->npruned));
  CHECK_OK(sm__rewrite_run(r->g, r->pruned, r->npruned, fd, nfd, ft, nft, &r->rw));
  if (!r->rw) return 0;
  r->order = sm__rewrite_order(r->rw, &r->norder);
  return 1;
}

static void rewritten_free(rewritten *r) {
  sm__rewrite_free(r->rw);
  free(r->pruned);
  sm__session_free(r->s);
}

/* "name=op[fused_ops](in:k,...)" for the node of id; "name" alone for an original node. */
static void describe(const sm_rewrite *rw, int id, char *buf, size_t cap) {
  const sm_node *n = sm__rewrite_node(rw, id);
  size_t at = (size_t)snprintf(buf, cap, "%s", sm__node_name(n));
  if (id < sm__cgraph_num_nodes(sm__rewrite_graph(rw)) || at >= cap) return;
  at += (size_t)snprintf(buf + at, cap - at, "=%s[", sm__node_op(n));
  const ProtobufCBinaryData *ops = NULL;
  size_t nops = 0;
  sm_status *st = sm__node_attr_strings(n, "fused_ops", &ops, &nops);
  sm_status_free(st);
  for (size_t i = 0; i < nops && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%.*s", i ? "," : "", (int)ops[i].len, (const char *)ops[i].data);
  for (int i = 0; i < sm__node_num_inputs(n) && at < cap; i++) {
    sm_edge e = sm__node_input(n, i);
    at += (size_t)snprintf(buf + at, cap - at, "%s%s:%d", i ? "," : "](", sm__node_name(sm__rewrite_node(rw, e.node)),
                           e.index);
  }
  if (at < cap) snprintf(buf + at, cap - at, ")");
}

/* Every synthetic node of the order, described, joined by spaces ("" when none). */
static void synthetic(const rewritten *r, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < r->norder && at < cap; i++) {
    if (r->order[i] < sm__cgraph_num_nodes(r->g)) continue;
    char one[256];
    describe(r->rw, r->order[i], one, sizeof one);
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? " " : "", one);
  }
}

static int pos_of(const int *order, int n, int id) {
  for (int i = 0; i < n; i++)
    if (order[i] == id) return i;
  return -1;
}

/* Rewrites and checks the synthetic nodes against `want` ("" for none). When `last` is given there
 * is one fused node and it must stand where node `last` stood, the removed nodes (all before it)
 * taken out. */
static void expect(const char *graph, const char *feeds, const char *fetches, const char *targets, const char *want,
                   const char *last) {
  rewritten r;
  if (rewrite(graph, feeds, fetches, targets, &r)) {
    char got[1024];
    synthetic(&r, got, sizeof got);
    if (strcmp(got, want)) fprintf(stderr, "fetches '%s' feeds '%s':\n", fetches, feeds ? feeds : "");
    CHECK_EQ_STR(got, want);
    if (last) {
      int fid = sm__cgraph_num_nodes(r.g), lid = sm__cgraph_find(r.g, last);
      int removed = r.npruned - r.norder;
      CHECK(sm__rewrite_num_synthetic(r.rw) == 1);
      CHECK_EQ_INT(pos_of(r.order, r.norder, fid), pos_of(r.pruned, r.npruned, lid) - removed);
      CHECK_EQ_INT(pos_of(r.order, r.norder, lid), -1);
      /* the last node's value is the fused node's now; the others' are gone */
      sm_edge e = sm__rewrite_edge(r.rw, (sm_edge){lid, 0});
      CHECK(e.node == fid && e.index == 0);
    }
  }
  rewritten_free(&r);
}

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
static sm_tensor *filled(int rank, const int64_t *dims, uint32_t seed) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (!t) exit(1);
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    p[i] = (float)(((uint32_t)i * 2654435761u + seed * 40503u) >> 8) / 4194304.0f - 2.0f;
  return t;
}

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
  /* a small conv, and one image through 96 filters of 3x3x128 (7M multiply-adds: oneDNN over the
   * pool in two slices of the filters, each writing through a dense copy; nn_dnnl.c split_couts) */
  static const int64_t shapes[2][9] = {{2, 9, 7, 3, 3, 3, 3, 20, 20}, {1, 8, 8, 128, 3, 3, 128, 96, 96}};
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

  /* MatMul: one row (gemv), several rows (gemm), and 4 rows by a 1024 x 1040 B (slices of its
   * columns through dense copies, nn_dnnl.c split_ncols) */
  static const int64_t mms[3][3] = {{1, 50, 24}, {37, 50, 24}, {4, 1024, 1040}};
  for (int mi = 0; mi < 3; mi++) {
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

/* ---- BatchNorm folding (nn_fold.c) ------------------------------------------------------------- */
/* x -> `op` c (Conv2D or DepthwiseConv2dNative; filter f: a Const [2, 2, 3, cout] (for a depthwise
 * cout is the multiplier), or a Placeholder when fed_filter) [-> BiasAdd b (bias)] -> Mul m (scale
 * s, on the side `mul_left` says) -> AddV2 a (shift t) [-> act r], plus `extra` nodes. */
static char *fold_graph_op(const char *op, int cout, int bias, const char *act, int mul_left, int fed_filter,
                           const char *extra) {
  size_t cap = 16384, at = 0;
  char *g = malloc(cap);
  if (!g) exit(1);
  at += (size_t)snprintf(g + at, cap - at, "graph_def { " PH("x") PH("s") PH("t") "%s", bias ? PH("bias") : "");
  if (fed_filter)
    at += (size_t)snprintf(g + at, cap - at, PH("f"));
  else {
    at += (size_t)snprintf(g + at, cap - at,
                           "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
                           "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } "
                           "dim { size: 2 } dim { size: 3 } dim { size: %d } }",
                           cout);
    for (int i = 0; i < 12 * cout; i++)
      at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
    at += (size_t)snprintf(g + at, cap - at, " } } } } ");
  }
  const char *prev = bias ? "b" : "c";
  at += (size_t)snprintf(g + at, cap - at,
                         "node { name: \"c\" op: \"%s\" input: \"x\" input: \"f\" " TF CONV_ATTRS "} %s", op,
                         bias ? BIAS("b", "c", "bias") : "");
  at += (size_t)snprintf(g + at, cap - at, "node { name: \"m\" op: \"Mul\" input: \"%s\" input: \"%s\" " TF "} ",
                         mul_left ? "s" : prev, mul_left ? prev : "s");
  at += (size_t)snprintf(g + at, cap - at, NODE2("a", "AddV2", "m", "t"));
  if (act) at += (size_t)snprintf(g + at, cap - at, "node { name: \"r\" op: \"%s\" input: \"a\" " TF "} ", act);
  snprintf(g + at, cap - at, "%s}", extra ? extra : "");
  return g;
}

static char *fold_graph(int cout, int bias, const char *act, int mul_left, int fed_filter, const char *extra) {
  return fold_graph_op("Conv2D", cout, bias, act, mul_left, fed_filter, extra);
}

/* x -> Pad p (paddings Const pd: `pads`, 8 ints) -> DepthwiseConv2dNative c (3x3, multiplier 2,
 * stride 2, VALID) -> Mul m (s) -> AddV2 a (t) -> Relu6 r: Keras' ZeroPadding2D + DepthwiseConv2D +
 * BatchNormalization + ReLU6, as MobileNetV2 exports it. */
static char *dw_pad_graph(const char *pads) {
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
                         "dim { size: 3 } dim { size: 3 } dim { size: 2 } }",
                         pads);
  for (int i = 0; i < 54; i++) at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
  snprintf(g + at, cap - at,
           " } } } } node { name: \"c\" op: \"DepthwiseConv2dNative\" input: \"p\" input: \"f\" " TF
           "attr { key: \"strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } } "
           "attr { key: \"padding\" value { s: \"VALID\" } } } " NODE2("m", "Mul", "c", "s") NODE2("a", "AddV2", "m", "t")
               NODE1("r", "Relu6", "a") "}");
  return g;
}

static void expect_fold(char *graph, const char *feeds, const char *fetches, const char *targets, const char *want) {
  expect(graph, feeds, fetches, targets, want, NULL);
  free(graph);
}

#define FOLDED(in, act) \
  "c/_sm_fold_bn=_SmFoldBN[](" in ") c=_FusedConv2D[BiasAdd" act "](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)"

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
    char *tr = strstr(g, "b: false");
    if (tr) memcpy(tr, "b: true ", 8);
    expect(g, "x s t bias mu var", "r2", NULL, "c=_FusedConv2D[BiasAdd](x:0,f:0,bias:0)", NULL);
  }
  CHECK(fbn && end);
  free(g);

  /* a depthwise heads the same chains (no residual Add): TF's _FusedDepthwiseConv2dNative */
#define DW_FOLDED(in, act)                                                                 \
  "c/_sm_fold_bn=_SmFoldBN[](" in ") c=_FusedDepthwiseConv2dNative[BiasAdd" act "](x:0," \
  "c/_sm_fold_bn:0,c/_sm_fold_bn:1)"
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 2, 1, "Relu6", 0, 0, NULL), "x s t bias", "r", NULL,
              DW_FOLDED("f:0,s:0,t:0,bias:0", ",Relu6"));
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 1, 0, NULL, 1, 0, PH("sc") NODE2("y", "AddV2", "a", "sc")),
              "x s t sc", "y", NULL, DW_FOLDED("f:0,s:0,t:0", ""));
  expect_fold(fold_graph_op("DepthwiseConv2dNative", 1, 0, "Relu", 0, 1, NULL), "x f s t", "r", NULL, "");
  /* a zero Pad over H and W before it joins (the fused node reads x); one over C, or a fetched
   * one, stays */
#define DW_PADS(c) "int_val: 0 int_val: 0 int_val: 0 int_val: 1 int_val: 1 int_val: 1 int_val: 0 int_val: " c
  expect_fold(dw_pad_graph(DW_PADS("0")), "x s t", "r", NULL, DW_FOLDED("f:0,s:0,t:0", ",Relu6"));
  expect_fold(dw_pad_graph(DW_PADS("1")), "x s t", "r", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedDepthwiseConv2dNative[BiasAdd,Relu6](p:0,"
              "c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
  expect_fold(dw_pad_graph(DW_PADS("0")), "x s t", "r p", NULL,
              "c/_sm_fold_bn=_SmFoldBN[](f:0,s:0,t:0) c=_FusedDepthwiseConv2dNative[BiasAdd,Relu6](p:0,"
              "c/_sm_fold_bn:0,c/_sm_fold_bn:1)");
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
  /* the Pad absorbed (top 0, bottom 1, left 1, right 1 over a 6x5 input, 3x3 stride 2) */
  char *gp = dw_pad_graph(DW_PADS("0"));
  sm_session *sp = NULL;
  CHECK_OK(sm__session_from_pbtxt(gp, &sp));
  if (sp) CHECK_OK(fold_vs_plain(gp, names, d6, 3, "r", sp));
  sm__session_free(sp);
  free(gp);
  sm__session_free(sd);
  sm__session_free(sd1);
  free(gd);
  free(gd1);
  for (int i = 1; i < 4; i++) sm_tensor_free(d6[i]);
  for (int i = 1; i < 3; i++) sm_tensor_free(d3[i]);
  for (int i = 0; i < 4; i++) sm_tensor_free(feeds[i]);
}

#define FCONST(n, v)                                                                                   \
  "node { name: \"" n "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } "            \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: " v " } } } } "
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
  for (int fed = 0; fed < 2; fed++) {
    rewritten rv;
    if (rewrite(fed ? g : gv, fed ? "x g be mu v" : "x", "r", NULL, &rv)) {
      const sm_node *h = sm__rewrite_node(rv.rw, sm__cgraph_num_nodes(rv.g));
      int ci = 0;
      if (h && sm__node_attr(h, "_sm_cache_inputs")) CHECK_OK(sm__node_attr_bool(h, "_sm_cache_inputs", &ci));
      CHECK_EQ_INT(ci, !fed);
    }
    rewritten_free(&rv);
  }
  sm_session *sv = NULL, *sp = NULL;
  CHECK_OK(sm__session_from_pbtxt(gv, &sv));
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
  /* one image through 96 filters of 3x3x128: oneDNN in two slices of the filters, the addend
   * copied into each slice's dense output (nn_dnnl.c split_couts); 8 images of 2x2x512 through 16
   * filters: oneDNN's blocked layout, the addend reordered into it (blocked_conv); the shortcut
   * fed and computed in the run */
  static const int64_t big[2][4][4] = {{{1, 8, 8, 128}, {3, 3, 128, 96}, {96}, {1, 8, 8, 96}},
                                       {{8, 2, 2, 512}, {3, 3, 512, 16}, {16}, {8, 2, 2, 16}}};
  for (int sh = 0; sh < 2; sh++) {
    const int64_t *bx = big[sh][0], *bf = big[sh][1], *bb = big[sh][2], *bs = big[sh][3];
    sm_tensor *feeds[4] = {filled(4, bx, 1), filled(4, bf, 2), filled(1, bb, 3), filled(4, bs, 4)};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
      char g[2048], label[64];
      snprintf(g, sizeof g, G(RES("%s%s%s%s")), *acts[a] ? "node { name: \"r\" op: \"" : "", acts[a],
               *acts[a] ? "\" input: \"y\" " TF "} " : "", "");
      snprintf(label, sizeof label, "residual %s, %s", acts[a], sh ? "blocked" : "filter slices");
      same_run(g, g, fn, feeds, 4, *acts[a] ? "r" : "y", "b", label);
    }
    const char *g = G(PH("x") PH("f") PH("bias") PH("sc") NODE1("n", "Neg", "sc") CONV("c", "x", "f")
                          BIAS("b", "c", "bias") NODE2("y", "AddV2", "n", "b") NODE1("r", "Relu", "y"));
    same_run(g, g, fn, feeds, 4, "r", "b", sh ? "residual in place, blocked" : "residual in place, filter slices");
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

int main(void) {
  test_synth();
  test_driver();
  test_conv_rule();
  test_ref_reads();
  test_matmul_rule();
  test_fused_runs();
  test_fused_refused();
  test_fold_rule();
  test_residual();
  test_fold_runs();
  test_keras_bn();
  test_norm_rules();
  test_keras_bn_rules();
  test_keras_bn_runs();
  test_read_variable();
  test_drop_rule();
  test_mul_one();
  test_swish();
  TEST_MAIN_END();
}
