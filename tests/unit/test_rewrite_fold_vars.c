/* test_rewrite_fold_vars.c - BatchNorm folding (src/ops/nn_fold.c) where the filter, scale and shift
 * are variable reads, as in a TF2 function: each read (_SmReadVariable, state.c) is also a control
 * input of the function's final NoOp (automatic control dependencies). The rewrite driver
 * (src/runtime/rewrite.c) then lets the fold take the reads into its chain and the helper
 * (_SmFoldBNVars) read the variables itself: one step instead of four. Checked: the rule, the
 * reads kept where an assignment comes between a read and the fold (it must see the value read
 * before the assignment), and runs against the unfolded graph, following assignments between runs.
 * The fold's own cases are test_rewrite_bn.c's; the helpers are in rewrite_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"
#include "rewrite_util.h"

#define DTF(k) "attr { key: \"" k "\" value { type: DT_FLOAT } } "
#define VH(n, shared)                                                                                       \
  "node { name: \"" n "\" op: \"VarHandleOp\" " DTF("dtype")                                             \
  "attr { key: \"shape\" value { shape { unknown_rank: true } } } attr { key: \"shared_name\" value { s: \"" shared \
  "\" } } } "
#define RD(n, h, ctl) "node { name: \"" n "\" op: \"ReadVariableOp\" input: \"" h "\" " ctl DTF("dtype") "} "
#define ASG(n, h, v, ctl) \
  "node { name: \"" n "\" op: \"AssignVariableOp\" input: \"" h "\" input: \"" v "\" " ctl DTF("dtype") "} "
#define VEC2(n, a, b)                                                                                         \
  "node { name: \"" n "\" op: \"Const\" " DTF("dtype") "attr { key: \"value\" value { tensor { dtype: DT_FLOAT " \
  "tensor_shape { dim { size: 2 } } float_val: " a " float_val: " b " } } } } "

/* x -> Conv2D c (filter: variable "f", [2, 2, 3, 2]) -> Mul m (variable "s") -> AddV2 a (variable
 * "t") -> Relu r; NoOp ret waits on the three reads; init assigns all three, s2 assigns s anew.
 * `conv_ctl` goes into c, `as2_ctl` into s2 (control inputs). */
static char *vars_graph(const char *conv_ctl, const char *as2_ctl) {
  size_t cap = 16384, at = 0;
  char *g = malloc(cap);
  if (!g) exit(1);
  at += (size_t)snprintf(g + at, cap - at,
                         "graph_def { " PH("x") VH("hf", "f") VH("hs", "s") VH("ht", "t") RD("rf", "hf", "")
                             RD("rs", "hs", "") RD("rt", "ht", "") VEC2("cs", "1.5", "-0.5") VEC2("ct", "0.25", "2")
                                 VEC2("cs2", "-3", "0.75")
                         "node { name: \"cf\" op: \"Const\" " DTF("dtype")
                         "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } "
                         "dim { size: 2 } dim { size: 3 } dim { size: 2 } }");
  for (int i = 0; i < 24; i++)
    at += (size_t)snprintf(g + at, cap - at, " float_val: %g", (double)((i * 37 % 23) - 11) / 16.0);
  snprintf(g + at, cap - at,
           " } } } } " VH("hf1", "f") VH("hs1", "s") VH("ht1", "t") VH("hs2", "s") ASG("af", "hf1", "cf", "")
               ASG("as", "hs1", "cs", "") ASG("at", "ht1", "ct", "") "node { name: \"as2\" op: \"AssignVariableOp\" input: \"hs2\" input: \"cs2\" %s" DTF("dtype") "} "
           "node { name: \"init\" op: \"NoOp\" input: \"^af\" input: \"^as\" input: \"^at\" } "
           "node { name: \"c\" op: \"Conv2D\" input: \"x\" input: \"rf\" %s" TF CONV_ATTRS "} " NODE2("m", "Mul", "c", "rs")
               NODE2("a", "AddV2", "m", "rt") NODE1("r", "Relu", "a")
           "node { name: \"ret\" op: \"NoOp\" input: \"^rf\" input: \"^rs\" input: \"^rt\" } }",
           as2_ctl, conv_ctl);
  return g;
}

#define VARS_FOLDED                                                                  \
  "c/_sm_fold_bn=_SmFoldBNVars[) c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0," \
  "c/_sm_fold_bn:1)"

static void test_rule(void) {
  char *g = vars_graph("", "");
  /* the three reads join the fold, their control edges to ret go with them */
  expect(g, "x", "r", "ret", VARS_FOLDED, NULL);
  rewritten r;
  if (rewrite(g, "x", "r", "ret", &r)) {
    const sm_node *h = NULL;
    for (int i = 0; i < r.norder && !h; i++)
      if (!strcmp(sm__node_op(sm__rewrite_node(r.rw, r.order[i])), "_SmFoldBNVars")) h = sm__rewrite_node(r.rw, r.order[i]);
    const ProtobufCBinaryData *names = NULL;
    size_t n = 0;
    CHECK(h && !strcmp(sm__node_op(h), "_SmFoldBNVars"));
    if (h) CHECK_OK(sm__node_attr_strings(h, "_sm_vars", &names, &n));
    CHECK(n == 3 && names && names[0].len == 1 && !memcmp(names[0].data, "f", 1) && !memcmp(names[1].data, "s", 1) &&
          !memcmp(names[2].data, "t", 1));
    CHECK_EQ_INT(pos_of(r.order, r.norder, sm__cgraph_find(r.g, "ret")) >= 0, 1);
  }
  rewritten_free(&r);
  free(g);
  /* an assignment of s between its read and the fold (ordered after the read, the conv after it):
   * the reads stay steps of their own (the driver does not tell which variable a write assigns, so
   * none moves past it) and the helper is the plain one */
  /* (the assignment waits on the read, as TF2's automatic control dependencies order it) */
  g = vars_graph("input: \"^as2\" ", "input: \"^rs\" ");
  expect(g, "x", "r", "ret",
         "rf=_SmReadVariable[) rs=_SmReadVariable[) rt=_SmReadVariable[) c/_sm_fold_bn=_SmFoldBN[](rf:0,rs:0,rt:0) "
         "c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0,"
         "c/_sm_fold_bn:1)",
         NULL);
  /* it runs: the fold sees s as read before the assignment, then the assigned value the next run */
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  if (s) {
    int64_t xd[4] = {1, 3, 3, 3};
    sm_tensor *x = filled(4, xd, 41), *o = NULL;
    const char *fx[1] = {"x"}, *fr[1] = {"r"}, *tr[1] = {"ret"};
    CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"init"}, 1, &o));
    sm_tensor *o1 = NULL, *o2 = NULL;
    CHECK_OK(sm__session_run(s, fx, &x, 1, fr, 1, tr, 1, &o1));
    CHECK_OK(sm__session_run(s, fx, &x, 1, fr, 1, tr, 1, &o2));
    /* channel 0: scale 1.5 then -3 (shift 0.25): a Relu output positive in the first run is 0 in
     * the second, never the other way round; some output of channel 0 is positive */
    if (o1 && o2) {
      const float *p1 = sm_tensor_data(o1), *p2 = sm_tensor_data(o2);
      int pos = 0, ok = 1;
      for (int64_t i = 0; i < sm_tensor_num_elements(o1); i += 2) {
        pos += p1[i] > 0.25f;
        ok &= !(p1[i] > 0.25f) || p2[i] == 0;
      }
      CHECK(pos > 0 && ok);
    }
    sm_tensor_free(o1);
    sm_tensor_free(o2);
    sm_tensor_free(x);
  }
  sm__session_free(s);
  free(g);
}

/* Runs target `init` in both sessions, then r on x in sa (folded) and r with m in sb (m fetched
 * keeps the chain apart): r equal (float rounding apart), and not all zero. */
static void folded_vs_plain(sm_session *sa, sm_session *sb, const char *init, sm_tensor *x) {
  const char *fx[1] = {"x"}, *fa[1] = {"r"}, *fb[2] = {"r", "m"}, *tr[1] = {"ret"};
  sm_tensor *o = NULL, *oa = NULL, *ob[2] = {NULL, NULL};
  CHECK_OK(sm__session_run(sa, NULL, NULL, 0, NULL, 0, &init, 1, &o));
  CHECK_OK(sm__session_run(sb, NULL, NULL, 0, NULL, 0, &init, 1, &o));
  CHECK_OK(sm__session_run(sa, fx, &x, 1, fa, 1, tr, 1, &oa));
  CHECK_OK(sm__session_run(sb, fx, &x, 1, fb, 2, tr, 1, ob));
  if (oa && ob[0]) {
    int64_t n = sm_tensor_num_elements(oa);
    const float *pa = sm_tensor_data(oa), *pb = sm_tensor_data(ob[0]);
    int bad = n != sm_tensor_num_elements(ob[0]), nonzero = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
      bad = !(fabsf(pa[i] - pb[i]) <= 1e-5f * (1 + fabsf(pb[i])));
      nonzero += pb[i] != 0;
    }
    CHECK(!bad && nonzero > 0);
  }
  sm_tensor_free(oa);
  sm_tensor_free(ob[0]);
  sm_tensor_free(ob[1]);
}

/* Folded (fetching r) against unfolded (m fetched too keeps the chain apart), after init and after
 * s is assigned anew: the helper reads the variables each run and folds again when they change. */
static void test_runs(void) {
  char *g = vars_graph("", "");
  sm_session *sa = NULL, *sb = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &sa));
  CHECK_OK(sm__session_from_pbtxt(g, &sb));
  int64_t xd[4] = {2, 4, 5, 3};
  sm_tensor *x = filled(4, xd, 42);
  const char *fx[1] = {"x"}, *fa[1] = {"r"}, *tr[1] = {"ret"};
  /* before init: the helper's read fails as the read would */
  sm_tensor *o = NULL;
  if (sa) CHECK_ERR(sm__session_run(sa, fx, &x, 1, fa, 1, tr, 1, &o), "uninitialized");
  sm_tensor_free(o);
  for (int round = 0; round < 3 && sa && sb; round++)
    folded_vs_plain(sa, sb, round == 1 ? "as2" : round == 2 ? "as" : "init", x);
  sm_tensor_free(x);
  sm__session_free(sa);
  sm__session_free(sb);
  free(g);
}

/* Two plans of one session (r with target ret, and r alone) each fold the same variables: they
 * share one folded result (nn_fold.c, as a model's signatures do), and both stay exact when a
 * variable is assigned between runs (each refolds or takes the other's refold). */
static void test_shared_between_plans(void) {
  char *g = vars_graph("", "");
  sm_session *sa = NULL, *sb = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &sa));
  CHECK_OK(sm__session_from_pbtxt(g, &sb));
  int64_t xd[4] = {1, 4, 5, 3};
  sm_tensor *x = filled(4, xd, 46);
  const char *fx[1] = {"x"}, *fa[1] = {"r"};
  for (int round = 0; round < 3 && sa && sb; round++) {
    folded_vs_plain(sa, sb, round == 1 ? "as2" : round == 2 ? "as" : "init", x); /* plan r + ret */
    /* after an assignment the other plan's helper still holds the old fold, until its next run */
    CHECK(sm__nn_fold_shared_entries() == (round ? 2u : 1u));
    sm_tensor *o1 = NULL, *o2 = NULL, *ob[2] = {NULL, NULL};
    const char *fb[2] = {"r", "m"};
    CHECK_OK(sm__session_run(sa, fx, &x, 1, fa, 1, NULL, 0, &o1)); /* plan r: its own helper */
    CHECK_OK(sm__session_run(sa, fx, &x, 1, fa, 1, (const char *[]){"ret"}, 1, &o2));
    CHECK_OK(sm__session_run(sb, fx, &x, 1, fb, 2, NULL, 0, ob));
    CHECK(sm__nn_fold_shared_entries() == 1);
    if (o1 && o2 && ob[0]) {
      CHECK(sm_tensor_num_elements(o1) == sm_tensor_num_elements(ob[0]));
      const float *p1 = sm_tensor_data(o1), *p2 = sm_tensor_data(o2), *pb = sm_tensor_data(ob[0]);
      for (int64_t i = 0; i < sm_tensor_num_elements(o1); i++)
        CHECK(p1[i] == p2[i] && fabsf(p1[i] - pb[i]) <= 1e-5f * (1 + fabsf(pb[i])));
    }
    sm_tensor_free(o1);
    sm_tensor_free(o2);
    sm_tensor_free(ob[0]);
    sm_tensor_free(ob[1]);
  }
  sm_tensor_free(x);
  sm__session_free(sa);
  sm__session_free(sb);
  CHECK(sm__nn_fold_shared_entries() == 0);
  free(g);
}

/* Keras 3's BatchNorm in its plain form (scale and shift computed in the graph, no Reshapes) from
 * variables g, b, mu, v (each read a control input of ret), after a Conv2D of filter "f":
 *   sc = Mul(Rsqrt(AddV2(v, eps)), g), sh = Sub(b, Mul(mu, sc)), r = Relu(AddV2(Mul(c, sc), sh)).
 * The nodes computing sc and sh join the fold's chain, so the five reads do too. */
static const char *keras_vars_graph =
    "graph_def { " PH("x") VH("hf", "f") VH("hg", "g") VH("hb", "b") VH("hm", "mu") VH("hv", "v") RD("rf", "hf", "")
    RD("rg", "hg", "") RD("rb", "hb", "") RD("rm", "hm", "") RD("rv", "hv", "") VEC2("cg", "1.5", "-0.5")
    VEC2("cb", "0.25", "2") VEC2("cm", "-1", "0.5") VEC2("cv", "0.5", "3")
    "node { name: \"cf\" op: \"Const\" " DTF("dtype")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } dim { size: 1 } "
    "dim { size: 3 } dim { size: 2 } } float_val: 0.5 float_val: -1 float_val: 2 float_val: 0.25 float_val: -0.75 "
    "float_val: 1 } } } } " VH("hf1", "f") VH("hg1", "g") VH("hb1", "b") VH("hm1", "mu") VH("hv1", "v")
    ASG("af", "hf1", "cf", "") ASG("ag", "hg1", "cg", "") ASG("ab", "hb1", "cb", "") ASG("am", "hm1", "cm", "")
    ASG("av", "hv1", "cv", "")
    "node { name: \"init\" op: \"NoOp\" input: \"^af\" input: \"^ag\" input: \"^ab\" input: \"^am\" "
    "input: \"^av\" } " FCONST("eps", "0.001") CONV("c", "x", "rf") NODE2("ad", "AddV2", "rv", "eps")
    NODE1("rs", "Rsqrt", "ad") NODE2("sc", "Mul", "rs", "rg") NODE2("m2", "Mul", "rm", "sc") NODE2("sh", "Sub", "rb", "m2")
    NODE2("m", "Mul", "c", "sc") NODE2("a", "AddV2", "m", "sh") NODE1("r", "Relu", "a")
    "node { name: \"ret\" op: \"NoOp\" input: \"^rf\" input: \"^rg\" input: \"^rb\" input: \"^rm\" "
    "input: \"^rv\" } }";

/* folded_vs_plain on two sessions of graph g after "init", x [2, 3, 4, 3] filled from seed. */
static void graph_folded_vs_plain(const char *g, uint32_t seed) {
  sm_session *sa = NULL, *sb = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &sa));
  CHECK_OK(sm__session_from_pbtxt(g, &sb));
  int64_t xd[4] = {2, 3, 4, 3};
  sm_tensor *x = filled(4, xd, seed);
  if (sa && sb) folded_vs_plain(sa, sb, "init", x);
  sm_tensor_free(x);
  sm__session_free(sa);
  sm__session_free(sb);
}

static void test_keras_plain(void) {
  expect(keras_vars_graph, "x", "r", "ret", VARS_FOLDED, NULL);
  graph_folded_vs_plain(keras_vars_graph, 43);
}

/* keras_vars_graph with a conv bias as Keras 3 exports it, BiasAdd(c, Squeeze(Reshape(read of
 * variable "bb", [1, 1, 1, 2]))), the bias assigned `bias` (a tensor proto's shape and values):
 * the view's Squeeze, Reshape and shape Const join the chain, so the bias read does too (one
 * helper step for the lot instead of four more steps a run). */
static char *keras_bias_graph(const char *bias) {
  const char *conv = CONV("c", "x", "rf");
  const char *at = strstr(keras_vars_graph, conv), *mul = strstr(keras_vars_graph, NODE2("m", "Mul", "c", "sc"));
  size_t cap = strlen(keras_vars_graph) + 4096;
  char *g = malloc(cap);
  if (!g || !at || !mul) exit(1);
  snprintf(g, cap,
           "%.*s" VH("hbb", "bb") VH("hbb1", "bb") RD("rbb", "hbb", "")
           "node { name: \"cbb\" op: \"Const\" " DTF("dtype") "attr { key: \"value\" value { tensor { "
           "dtype: DT_FLOAT %s } } } } " ASG("abb", "hbb1", "cbb", "")
           "node { name: \"bshape\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } "
           "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1 "
           "int_val: 1 int_val: 1 int_val: 2 } } } } "
           "node { name: \"brs\" op: \"Reshape\" input: \"rbb\" input: \"bshape\" " TF
           "attr { key: \"Tshape\" value { type: DT_INT32 } } } " NODE1("bsq", "Squeeze", "brs") "%s" BIAS("cba", "c", "bsq")
               NODE2("m", "Mul", "cba", "sc") "%.*s",
           (int)(at - keras_vars_graph), keras_vars_graph, bias, conv, (int)(mul - at - strlen(conv)), at + strlen(conv));
  /* the rest after the Mul, with init and ret also covering bb */
  size_t len = strlen(g);
  const char *rest = mul + strlen(NODE2("m", "Mul", "c", "sc"));
  snprintf(g + len, cap - len, "%s", rest);
  char *p = strstr(g, "input: \"^av\" } ");
  char *q = p ? strstr(p + 1, "input: \"^rv\" } ") : NULL;
  if (!p || !q) exit(1);
  /* "^av" (init) and "^rv" (ret): add "^abb" and "^rbb" behind them */
  char *h = malloc(cap);
  if (!h) exit(1);
  snprintf(h, cap, "%.*sinput: \"^av\" input: \"^abb\" } %.*sinput: \"^rv\" input: \"^rbb\" } %s", (int)(p - g), g,
           (int)(q - p - strlen("input: \"^av\" } ")), p + strlen("input: \"^av\" } "), q + strlen("input: \"^rv\" } "));
  free(g);
  return h;
}

static void test_keras_bias_view(void) {
  char *g = keras_bias_graph("tensor_shape { dim { size: 2 } } float_val: 0.75 float_val: -1.25");
  expect(g, "x", "r", "ret", VARS_FOLDED, NULL);
  /* the helper reads the bias variable itself, the view's nodes gone */
  rewritten r;
  if (rewrite(g, "x", "r", "ret", &r))
    for (int i = 0; i < r.norder; i++) {
      const char *op = sm__node_op(sm__rewrite_node(r.rw, r.order[i]));
      CHECK(strcmp(op, "Reshape") && strcmp(op, "Squeeze") && strcmp(op, "_SmReadVariable"));
    }
  rewritten_free(&r);
  /* the bias view kept where its value is fetched too: the old form */
  expect(g, "x", "r bsq", "ret",
         "rbb=_SmReadVariable[) c/_sm_fold_bn=_SmFoldBNVars[](bsq:0) c=_FusedConv2D[BiasAdd,Relu](x:0,c/_sm_fold_bn:0,c/_sm_fold_bn:1)", NULL);
  /* a bias variable [2] or [1, 2] (the Reshape and Squeeze make [2] of either): folded as plain */
  for (int shape = 0; shape < 2; shape++) {
    if (shape) {
      free(g);
      g = keras_bias_graph("tensor_shape { dim { size: 1 } dim { size: 2 } } float_val: 0.75 float_val: -1.25");
    }
    graph_folded_vs_plain(g, 44);
  }
  free(g);
  /* three floats for two channels: TF's Reshape fails; the fold fails the run naming the count */
  g = keras_bias_graph("tensor_shape { dim { size: 3 } } float_val: 0.75 float_val: -1.25 float_val: 2");
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  if (s) {
    int64_t xd[4] = {1, 3, 4, 3};
    sm_tensor *x = filled(4, xd, 45), *o = NULL;
    const char *fx[1] = {"x"}, *fr[1] = {"r"}, *tr[1] = {"ret"};
    CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"init"}, 1, &o));
    CHECK_ERR(sm__session_run(s, fx, &x, 1, fr, 1, tr, 1, &o), "as many biases");
    sm_tensor_free(o);
    sm_tensor_free(x);
  }
  sm__session_free(s);
  free(g);
}

int main(void) {
  test_rule();
  test_runs();
  test_shared_between_plans();
  test_keras_plain();
  test_keras_bias_view();
  TEST_MAIN_END();
}
