/* test_graph.c - the compiled graph: every zoo SavedModel compiles, signatures resolve and prune;
 * function inlining, attr defaults and placeholders; one function compiled as its own graph;
 * hostile graphs fail with clear messages; TensorProto decoding by TensorFlow's rules. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/graph_internal.h"
#include "graph/op_defs.h"
#include "graph_check.h"
#include "savedmodel/format.h"
#include "savedmodel/pbtxt.h"
#include "test.h"

static Tensorflow__MetaGraphDef *parse_mg(const char *text) {
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(&tensorflow__meta_graph_def__descriptor, text, strlen(text), "test graph", &m);
  if (s) {
    fprintf(stderr, "pbtxt: %s\n", sm_status_message(s));
    sm_status_free(s);
    sm_test_failures++;
    return NULL;
  }
  return (Tensorflow__MetaGraphDef *)m;
}

static void free_mg(Tensorflow__MetaGraphDef *mg) {
  if (mg) protobuf_c_message_free_unpacked(&mg->base, NULL);
}

/* Compiles text; returns the error (NULL on success, graph in *g if g given). */
static sm_status *compile_text(const char *text, Tensorflow__MetaGraphDef **mgp, sm_cgraph **g) {
  Tensorflow__MetaGraphDef *mg = parse_mg(text);
  if (!mg) return sm_status_new(SM_INTERNAL, "unparsable test graph");
  sm_cgraph *cg = NULL;
  sm_status *s = sm__cgraph_compile(mg, &cg);
  if (g && !s) {
    *g = cg;
    *mgp = mg;
    return NULL;
  }
  sm__cgraph_free(cg);
  free_mg(mg);
  return s;
}

/* ---- the zoo --------------------------------------------------------------------------------- */
static void test_zoo(void) {
  const char *zoo = SM_SOURCE_DIR "/tests/fixtures/zoo";
  DIR *d = opendir(zoo);
  CHECK(d != NULL);
  if (!d) return;
  int models = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model", zoo, e->d_name);
    Tensorflow__SavedModel *sm = NULL;
    sm_status *s = sm_saved_model_read(path, &sm);
    if (s) { /* MANIFEST.json and other files */
      sm_status_free(s);
      continue;
    }
    CHECK(check_saved_model(sm, e->d_name) > 0);
    models++;
    sm_saved_model_free(sm);
  }
  closedir(d);
  CHECK(models >= 10);
}

static void test_keras_cnn(void) {
  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(SM_SOURCE_DIR "/tests/fixtures/zoo/tf2_keras_cnn/model", &sm));
  if (!sm) return;
  const char *tags[] = {"serve"};
  const Tensorflow__MetaGraphDef *mg = NULL;
  CHECK_OK(sm_saved_model_find_meta_graph(sm, tags, 1, &mg));
  sm_cgraph *g = NULL;
  CHECK_OK(sm__cgraph_compile(mg, &g));
  if (!g) {
    sm_saved_model_free(sm);
    return;
  }
  sm_edge in, out;
  int ctl = -1;
  CHECK_OK(sm__cgraph_resolve(g, "serving_default_inputs:0", &in, &ctl));
  CHECK_EQ_INT(ctl, 0);
  CHECK_OK(sm__cgraph_resolve(g, "StatefulPartitionedCall:0", &out, NULL));
  const sm_node *call = sm__cgraph_node(g, out.node);
  CHECK_EQ_STR(sm__node_op(call), "IdentityN");
  CHECK_EQ_INT(sm__node_output_dtype(call, 0), SM_FLOAT);
  CHECK_EQ_INT(sm__node_num_inputs(call), 1);
  /* the call's output comes from inside the inlined body */
  const sm_node *src = sm__cgraph_node(g, sm__node_input(call, 0).node);
  CHECK(!strncmp(sm__node_name(src), "StatefulPartitionedCall/", 24));
  const int64_t *T = NULL;
  (void)T;
  const int *types = NULL;
  size_t nt = 0;
  CHECK_OK(sm__node_attr_types(call, "T", &types, &nt));
  CHECK_EQ_INT(nt, 1);
  int cnt = -1;
  CHECK_EQ_INT(sm__node_output_arg(call, "output", &cnt), 0);
  CHECK_EQ_INT(cnt, 1);
  CHECK_EQ_INT(sm__node_input_arg(call, "nope", &cnt), -1);

  int *order = NULL, n = 0;
  CHECK_OK(sm__cgraph_prune(g, &in, 1, &out, 1, NULL, 0, &order, &n));
  int conv = 0, reshape = 0, matmul = 0, placeholder = 0, restore = 0;
  for (int i = 0; i < n; i++) {
    const sm_node *x = sm__cgraph_node(g, order[i]);
    if (!strcmp(sm__node_op(x), "Conv2D")) {
      conv++;
      const int64_t *strides;
      size_t ns;
      CHECK_OK(sm__node_attr_ints(x, "strides", &strides, &ns));
      CHECK_EQ_INT(ns, 4);
      const char *pad;
      size_t pl;
      CHECK_OK(sm__node_attr_string(x, "padding", &pad, &pl));
      CHECK(pl == 4 || pl == 5);
      int b = -1;
      CHECK_OK(sm__node_attr_bool(x, "use_cudnn_on_gpu", &b)); /* a default */
      CHECK_EQ_INT(b, 1);
      CHECK_ERR(sm__node_attr_int(x, "padding", &(int64_t){0}), "is a string, not an int");
      CHECK_ERR(sm__node_attr_int(x, "no_such_attr", &(int64_t){0}), "no attr 'no_such_attr'");
      CHECK_EQ_INT(sm__node_input_arg(x, "filter", &cnt), 1);
    }
    if (!strcmp(sm__node_op(x), "Reshape")) {
      reshape++;
      int t = 0;
      CHECK_OK(sm__node_attr_type(x, "Tshape", &t)); /* stripped from the file, filled from the OpDef */
      CHECK_EQ_INT(t, SM_INT32);
    }
    if (!strcmp(sm__node_op(x), "MatMul")) matmul++;
    if (!strcmp(sm__node_op(x), "Placeholder")) placeholder++;
    if (!strcmp(sm__node_op(x), "RestoreV2")) restore++;
  }
  CHECK(conv >= 1);
  CHECK(reshape >= 1);
  CHECK(matmul >= 1);
  CHECK_EQ_INT(placeholder, 0); /* fed */
  CHECK_EQ_INT(restore, 0);     /* the save/restore functions are not needed */
  CHECK(n < sm__cgraph_num_nodes(g));
  free(order);

  /* Feeding the output itself: nothing to run. */
  CHECK_OK(sm__cgraph_prune(g, &out, 1, &out, 1, NULL, 0, &order, &n));
  CHECK_EQ_INT(n, 0);
  free(order);

  int nops = 0;
  const char *const *ops = sm__cgraph_all_ops(g, &nops);
  int has_save = 0, has_spc = 0;
  for (int i = 0; i < nops; i++) {
    has_save |= !strcmp(ops[i], "SaveV2");
    has_spc |= !strcmp(ops[i], "StatefulPartitionedCall");
  }
  CHECK(has_save && has_spc);
  CHECK(sm__cgraph_op_def(g, "Conv2D") != NULL);
  CHECK(sm__cgraph_op_def(g, "NoSuchOp") == NULL);

  CHECK_ERR(sm__cgraph_resolve(g, "StatefulPartitionedCall:7", &out, NULL), "has 1 outputs");
  CHECK_ERR(sm__cgraph_resolve(g, "nothere:0", &out, NULL), "no node 'nothere'");
  CHECK_ERR(sm__cgraph_resolve(g, "^NoOp", &out, NULL), "control input");
  CHECK_ERR(sm__cgraph_resolve(g, "NoOp", &out, NULL), "run it as a target");
  CHECK_ERR(sm__cgraph_resolve(g, "x:y", &out, NULL), "not a tensor name");
  CHECK_OK(sm__cgraph_resolve(g, "^NoOp", &out, &ctl));
  CHECK_EQ_INT(ctl, 1);
  sm__cgraph_free(g);
  sm_saved_model_free(sm);
}

/* ---- hand-written graphs --------------------------------------------------------------------- */
static const char *LIB_GRAPH =
    "graph_def {\n"
    "  node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "  node { name: 'v' op: 'VarHandleOp' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "         attr { key: 'shape' value { shape { } } } }\n"
    "  node { name: 'pre' op: 'NoOp' }\n"
    "  node { name: 'call' op: 'StatefulPartitionedCall' input: 'x' input: 'v' input: '^pre'\n"
    "         attr { key: 'Tin' value { list { type: DT_FLOAT type: DT_RESOURCE } } }\n"
    "         attr { key: 'Tout' value { list { type: DT_FLOAT type: DT_FLOAT } } }\n"
    "         attr { key: 'f' value { func { name: 'outer' attr { key: 'U' value { type: DT_FLOAT } } } } } }\n"
    "  node { name: 'y' op: 'Identity' input: 'call:1' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "  node { name: 'z' op: 'Square' input: 'call' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "  library {\n"
    "    function {\n"
    "      signature { name: 'outer' input_arg { name: 'a' type_attr: 'U' } input_arg { name: 'h' type: DT_RESOURCE }\n"
    "        output_arg { name: 'o1' type: DT_FLOAT } output_arg { name: 'o2' type: DT_FLOAT }\n"
    "        attr { name: 'U' type: 'type' } is_stateful: true }\n"
    "      node_def { name: 'r' op: 'ReadVariableOp' input: 'h' attr { key: 'dtype' value { placeholder: 'U' } } }\n"
    "      node_def { name: 'inner' op: 'PartitionedCall' input: 'a' input: 'r:value:0'\n"
    "        attr { key: 'Tin' value { list { type: DT_FLOAT type: DT_FLOAT } } }\n"
    "        attr { key: 'Tout' value { list { type: DT_FLOAT } } }\n"
    "        attr { key: 'f' value { func { name: 'mul2' } } } }\n"
    "      node_def { name: 'split' op: 'Unpack' input: 'inner:output:0'\n"
    "        attr { key: 'T' value { placeholder: 'U' } } attr { key: 'num' value { i: 2 } } }\n"
    "      node_def { name: 'asg' op: 'AssignVariableOp' input: 'h' input: 'split:output:1'\n"
    "        attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "      ret { key: 'o1' value: 'inner:output:0' } ret { key: 'o2' value: 'split:output:1' }\n"
    "      control_ret { key: 'asg' value: 'asg' }\n"
    "    }\n"
    "    function {\n"
    "      signature { name: 'mul2' input_arg { name: 'p' type: DT_FLOAT } input_arg { name: 'q' type: DT_FLOAT }\n"
    "        output_arg { name: 'prod' type: DT_FLOAT } }\n"
    "      node_def { name: 'm' op: 'Mul' input: 'p' input: 'q' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "      node_def { name: 'unused' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "        attr { key: 'value' value { tensor { dtype: DT_INT32 int_val: 7 } } } }\n"
    "      ret { key: 'prod' value: 'm:z:0' }\n"
    "    }\n"
    "    function {\n"
    "      signature { name: 'never_called' output_arg { name: 'o' type: DT_STRING } }\n"
    "      node_def { name: 'c' op: 'StringJoin' attr { key: 'N' value { i: 0 } } }\n"
    "      ret { key: 'o' value: 'c:output:0' }\n"
    "    }\n"
    "  }\n"
    "}\n";

static int find(const sm_cgraph *g, const char *name) {
  int i = sm__cgraph_find(g, name);
  if (i < 0) {
    fprintf(stderr, "no node '%s'\n", name);
    sm_test_failures++;
  }
  return i;
}

static void test_inlining(void) {
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL;
  CHECK_OK(compile_text(LIB_GRAPH, &mg, &g));
  if (!g) return;
  check_invariants(g, "lib graph");
  int call = find(g, "call"), r = find(g, "call/r"), inner = find(g, "call/inner"), m = find(g, "call/inner/m");
  int split = find(g, "call/split"), asg = find(g, "call/asg"), x = find(g, "x"), v = find(g, "v");
  int pre = find(g, "pre"), y = find(g, "y"), un = find(g, "call/inner/unused");
  if (call < 0 || r < 0 || inner < 0 || m < 0 || split < 0 || asg < 0 || un < 0) goto out;
  const sm_node *c = sm__cgraph_node(g, call);
  CHECK_EQ_STR(sm__node_op(c), "IdentityN");
  CHECK_EQ_INT(sm__node_num_inputs(c), 2);
  CHECK_EQ_INT(sm__node_input(c, 0).node, inner);
  CHECK_EQ_INT(sm__node_input(c, 1).node, split);
  CHECK_EQ_INT(sm__node_input(c, 1).index, 1);
  CHECK_EQ_INT(sm__node_num_outputs(c), 2);
  /* control inputs: its own (^pre) and the control_ret */
  int has_pre = 0, has_asg = 0;
  for (int i = 0; i < sm__node_num_control_inputs(c); i++) {
    has_pre |= sm__node_control_input(c, i) == pre;
    has_asg |= sm__node_control_input(c, i) == asg;
  }
  CHECK(has_pre && has_asg);
  /* the placeholder $U became DT_FLOAT */
  int t = 0;
  CHECK_OK(sm__node_attr_type(sm__cgraph_node(g, r), "dtype", &t));
  CHECK_EQ_INT(t, SM_FLOAT);
  CHECK_EQ_INT(sm__node_input(sm__cgraph_node(g, r), 0).node, v);
  CHECK_EQ_INT(sm__node_input_dtype(sm__cgraph_node(g, r), 0), SM_RESOURCE);
  CHECK(sm__node_is_stateful(sm__cgraph_node(g, r)));
  /* the body root r waits for the call's control input */
  const sm_node *rn = sm__cgraph_node(g, r);
  CHECK(sm__node_num_control_inputs(rn) == 1 && sm__node_control_input(rn, 0) == pre);
  /* the nested call's body reads the outer argument and r's output */
  const sm_node *mn = sm__cgraph_node(g, m);
  CHECK_EQ_INT(sm__node_input(mn, 0).node, x);
  CHECK_EQ_INT(sm__node_input(mn, 1).node, r);
  const sm_node *sn = sm__cgraph_node(g, split);
  CHECK_EQ_INT(sm__node_num_outputs(sn), 2);
  int cnt = 0;
  CHECK_EQ_INT(sm__node_output_arg(sn, "output", &cnt), 0);
  CHECK_EQ_INT(cnt, 2);
  int64_t axis = -1;
  CHECK_OK(sm__node_attr_int(sn, "axis", &axis)); /* default */
  CHECK_EQ_INT(axis, 0);
  /* the inner call (no control_ret, not stateful) has no control inputs but its own */
  const sm_node *in = sm__cgraph_node(g, inner);
  CHECK_EQ_STR(sm__node_op(in), "IdentityN");
  CHECK_EQ_INT(sm__node_num_control_inputs(in), 0);
  CHECK_EQ_INT(sm__node_input(in, 0).node, m);

  /* prune: y needs the call's control rets too (assignment), not the unused const */
  sm_edge fy = {y, 0}, fx = {x, 0};
  int *order = NULL, n = 0;
  CHECK_OK(sm__cgraph_prune(g, &fx, 1, &fy, 1, NULL, 0, &order, &n));
  int saw_asg = 0, saw_un = 0, saw_x = 0;
  for (int i = 0; i < n; i++) {
    saw_asg |= order[i] == asg;
    saw_un |= order[i] == un;
    saw_x |= order[i] == x;
  }
  CHECK(saw_asg && !saw_un && !saw_x);
  free(order);
  /* without the feed, x must run */
  CHECK_OK(sm__cgraph_prune(g, NULL, 0, &fy, 1, NULL, 0, &order, &n));
  saw_x = 0;
  for (int i = 0; i < n; i++) saw_x |= order[i] == x;
  CHECK(saw_x);
  free(order);
  /* feed the inner call's output: m not needed, unless something else needs it */
  sm_edge fin = {inner, 0}, fz = {find(g, "z"), 0};
  CHECK_OK(sm__cgraph_prune(g, &fin, 1, &fz, 1, NULL, 0, &order, &n));
  int saw_m = 0;
  for (int i = 0; i < n; i++) saw_m |= order[i] == m;
  CHECK(!saw_m); /* split and the call read the fed inner:0 */
  free(order);
  /* a target only */
  int tgt = pre;
  CHECK_OK(sm__cgraph_prune(g, NULL, 0, NULL, 0, &tgt, 1, &order, &n));
  CHECK(n == 1 && order[0] == pre);
  free(order);
  sm_edge badf = {call, 9};
  CHECK_ERR(sm__cgraph_prune(g, NULL, 0, &badf, 1, NULL, 0, &order, &n), "not an output");
  tgt = 1 << 30;
  CHECK_ERR(sm__cgraph_prune(g, NULL, 0, NULL, 0, &tgt, 1, &order, &n), "not a node");
  int nops = 0;
  const char *const *ops = sm__cgraph_all_ops(g, &nops);
  int sj = 0;
  for (int i = 0; i < nops; i++) sj |= !strcmp(ops[i], "StringJoin");
  CHECK(sj); /* from a function nobody calls */
out:
  sm__cgraph_free(g);
  free_mg(mg);
}

/* ---- one function as its own graph (sub-plans) ---------------------------------------------- */
static const char *FN_GRAPH =
    "meta_info_def { stripped_op_list {\n"
    "  op { name: 'Caller' attr { name: 'T' type: 'type' } attr { name: 'N' type: 'int' }\n"
    "       attr { name: 'f' type: 'func' } }\n"
    "} }\n"
    "graph_def {\n"
    "  node { name: 'caller' op: 'Caller' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "         attr { key: 'N' value { i: 3 } }\n"
    "         attr { key: 'f' value { func { name: 'lf' attr { key: 'N' value { i: 2 } } } } } }\n"
    "  node { name: 'untyped' op: 'Caller' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "         attr { key: 'N' value { i: 1 } }\n"
    "         attr { key: 'f' value { func { name: 'other' } } } }\n"
    "  library {\n"
    "    function {\n"
    "      signature { name: 'lf' input_arg { name: 'xs' type_attr: 'T' number_attr: 'N' }\n"
    "        input_arg { name: 'k' type: DT_INT32 } output_arg { name: 'y' type_attr: 'T' }\n"
    "        output_arg { name: 'n' type: DT_INT32 } attr { name: 'T' type: 'type' }\n"
    "        attr { name: 'N' type: 'int' } }\n"
    "      node_def { name: 'sum' op: 'AddN' input: 'xs' attr { key: 'T' value { placeholder: 'T' } }\n"
    "        attr { key: 'N' value { placeholder: 'N' } } }\n"
    "      node_def { name: 'ki' op: 'Identity' input: 'k' input: '^xs'\n"
    "        attr { key: 'T' value { type: DT_INT32 } } }\n"
    "      node_def { name: 'v' op: 'VarHandleOp' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "        attr { key: 'shape' value { shape { } } } }\n"
    "      node_def { name: 'pc' op: 'PartitionedCall' input: 'sum:sum:0' input: 'sum:sum:0'\n"
    "        attr { key: 'Tin' value { list { type: DT_FLOAT type: DT_FLOAT } } }\n"
    "        attr { key: 'Tout' value { list { type: DT_FLOAT } } }\n"
    "        attr { key: 'f' value { func { name: 'mul2' } } } }\n"
    "      ret { key: 'y' value: 'pc:output:0' } ret { key: 'n' value: 'ki:output:0' }\n"
    "    }\n"
    "    function {\n"
    "      signature { name: 'mul2' input_arg { name: 'p' type: DT_FLOAT } input_arg { name: 'q' type: DT_FLOAT }\n"
    "        output_arg { name: 'prod' type: DT_FLOAT } }\n"
    "      node_def { name: 'm' op: 'Mul' input: 'p' input: 'q' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "      ret { key: 'prod' value: 'm:z:0' }\n"
    "    }\n"
    "    function {\n"
    "      signature { name: 'rec' input_arg { name: 'p' type: DT_FLOAT } output_arg { name: 'o' type: DT_FLOAT } }\n"
    "      node_def { name: 'again' op: 'PartitionedCall' input: 'p'\n"
    "        attr { key: 'Tin' value { list { type: DT_FLOAT } } }\n"
    "        attr { key: 'Tout' value { list { type: DT_FLOAT } } }\n"
    "        attr { key: 'f' value { func { name: 'rec' } } } }\n"
    "      ret { key: 'o' value: 'again:output:0' }\n"
    "    }\n"
    "    function {\n"
    "      signature { name: 'other' input_arg { name: 'p' type_attr: 'U' } output_arg { name: 'o' type_attr: 'U' }\n"
    "        attr { name: 'U' type: 'type' } }\n"
    "      node_def { name: 'i' op: 'Identity' input: 'p' attr { key: 'T' value { placeholder: 'U' } } }\n"
    "      ret { key: 'o' value: 'i:output:0' }\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_compile_function(void) {
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL, *fg = NULL;
  CHECK_OK(compile_text(FN_GRAPH, &mg, &g));
  if (!g) return;
  const sm_edge *e;
  const int *ctl;
  int n = -1;
  CHECK(sm__cgraph_function_name(g) == NULL);
  sm__cgraph_function_args(g, &e, &n);
  CHECK(e == NULL && n == 0);
  const sm_node *caller = sm__cgraph_node(g, find(g, "caller"));
  /* N: the func attr's own entry (2) over the caller's attr (3); T from the caller */
  CHECK_OK(sm__cgraph_compile_function(mg, "lf", caller, &fg));
  if (fg) {
    CHECK_EQ_STR(sm__cgraph_function_name(fg), "lf");
    CHECK(sm__cgraph_meta_graph(fg) == mg);
    const char *names[] = {"xs_0", "xs_1", "k"};
    const int dts[] = {SM_FLOAT, SM_FLOAT, SM_INT32};
    sm__cgraph_function_args(fg, &e, &n);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n && i < 3; i++) {
      const sm_node *a = sm__cgraph_node(fg, e[i].node);
      CHECK_EQ_STR(sm__node_name(a), names[i]);
      CHECK_EQ_STR(sm__node_op(a), "_Arg");
      CHECK_EQ_INT(e[i].index, 0);
      CHECK_EQ_INT(sm__node_num_outputs(a), 1);
      CHECK_EQ_INT(sm__node_output_dtype(a, 0), dts[i]);
      int64_t idx = -1;
      int t = 0;
      CHECK_OK(sm__node_attr_int(a, "index", &idx));
      CHECK_OK(sm__node_attr_type(a, "T", &t));
      CHECK(idx == i && t == dts[i]);
      CHECK_EQ_INT(sm__node_output_arg(a, "output", NULL), 0);
    }
    int sum = find(fg, "sum"), ki = find(fg, "ki"), v = find(fg, "v"), pc = find(fg, "pc"), m = find(fg, "pc/m");
    if (sum >= 0 && ki >= 0 && v >= 0 && pc >= 0 && m >= 0) {
      const sm_node *sn = sm__cgraph_node(fg, sum);
      CHECK_EQ_INT(sm__node_num_inputs(sn), 2);
      CHECK(sm__node_input(sn, 0).node == e[0].node && sm__node_input(sn, 1).node == e[1].node);
      /* ^xs: after both list elements */
      CHECK_EQ_INT(sm__node_num_control_inputs(sm__cgraph_node(fg, ki)), 2);
      /* the call inside is inlined as sm__cgraph_compile does */
      CHECK_EQ_STR(sm__node_op(sm__cgraph_node(fg, pc)), "IdentityN");
      CHECK_EQ_INT(sm__node_input(sm__cgraph_node(fg, m), 0).node, sum);
      sm__cgraph_function_rets(fg, &e, &n);
      CHECK(n == 2 && e[0].node == pc && e[0].index == 0 && e[1].node == ki && e[1].index == 0);
      /* no control_ret listed: the stateful body nodes */
      sm__cgraph_function_control_rets(fg, &ctl, &n);
      CHECK(n == 1 && ctl[0] == v);
      /* the function graph prunes like any other: feeds = args, fetches = rets */
      sm__cgraph_function_args(fg, &e, &n);
      const sm_edge *rets;
      int nr, *order = NULL, no = 0;
      sm__cgraph_function_rets(fg, &rets, &nr);
      CHECK_OK(sm__cgraph_prune(fg, e, n, rets, nr, ctl, 1, &order, &no));
      CHECK_EQ_INT(no, 7); /* sum, ki and the two fed xs args it waits on, v, pc/m, pc */
      free(order);
    }
    sm__cgraph_free(fg);
    fg = NULL;
  }
  /* arg dtypes from an attr nobody binds */
  CHECK_ERR(sm__cgraph_compile_function(mg, "lf", NULL, &fg), "arg 'xs' needs int attr 'N', which is missing");
  CHECK_ERR(sm__cgraph_compile_function(mg, "other", caller, &fg), "arg 'p' needs type attr 'U', which is missing");
  CHECK_ERR(sm__cgraph_compile_function(mg, "nope", caller, &fg), "function 'nope' is not in the graph's library");
  CHECK_ERR(sm__cgraph_compile_function(mg, "rec", NULL, &fg), "function 'rec' calls itself");
  CHECK(fg == NULL);
  CHECK_OK(sm__cgraph_compile_function(mg, "mul2", NULL, &fg));
  sm__cgraph_function_args(fg, &e, &n);
  CHECK(n == 2 && fg && !strcmp(sm__node_name(sm__cgraph_node(fg, e[1].node)), "q"));
  sm__cgraph_free(fg);
  const Tensorflow__OpDef *arg = sm__builtin_op_def("_Arg");
  CHECK(arg && arg->is_stateful && arg->n_output_arg == 1);
  sm__cgraph_free(g);
  free_mg(mg);
}

static void test_prune_feeds(void) {
  const char *text =
      "graph_def {\n"
      "  node { name: 'a' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
      "  node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'c' op: 'Mul' input: 'b:0' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'd' op: 'Neg' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'e' op: 'AddV2' input: 'b' input: 'd' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'init' op: 'NoOp' input: '^e' input: '^a' }\n"
      "}\n";
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL;
  CHECK_OK(compile_text(text, &mg, &g));
  if (!g) return;
  int a = find(g, "a"), b = find(g, "b"), c = find(g, "c"), d = find(g, "d"), e = find(g, "e");
  sm_edge fb = {b, 0}, fc = {c, 0}, fe = {e, 0};
  int *order = NULL, n = 0;
  CHECK_OK(sm__cgraph_prune(g, &fc, 1, &fe, 1, NULL, 0, &order, &n));
  /* e needs b (not fed) and d; d needs c, which is fed: a, b, d, e */
  CHECK_EQ_INT(n, 4);
  if (n == 4) { /* ready nodes go in node order: a and d first */
    CHECK_EQ_INT(order[0], a);
    CHECK_EQ_INT(order[1], d);
    CHECK_EQ_INT(order[2], b);
    CHECK_EQ_INT(order[3], e);
  }
  free(order);
  sm_edge feeds[2] = {fc, fb};
  CHECK_OK(sm__cgraph_prune(g, feeds, 2, &fe, 1, NULL, 0, &order, &n));
  CHECK_EQ_INT(n, 2); /* d, e */
  free(order);
  int init = find(g, "init");
  CHECK_OK(sm__cgraph_prune(g, feeds, 2, NULL, 0, &init, 1, &order, &n));
  CHECK_EQ_INT(n, 4); /* a (control), d, e, init */
  if (n == 4) CHECK_EQ_INT(order[3], init);
  free(order);
  sm__cgraph_free(g);
  free_mg(mg);
}

static void test_hostile(void) {
  /* a cycle compiles (TF1 loops are cycles too) but cannot be pruned into an order */
  const char *cyc =
      "graph_def {\n"
      "  node { name: 'a' op: 'Neg' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'b' op: 'Neg' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'c' op: 'Neg' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'd' op: 'Neg' input: 'c' attr { key: 'T' value { type: DT_FLOAT } } }\n"
      "  node { name: 'k' op: 'NoOp' input: '^k' }\n"
      "}\n";
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL;
  CHECK_OK(compile_text(cyc, &mg, &g));
  if (g) {
    sm_edge f = {sm__cgraph_find(g, "d"), 0};
    int *order = NULL, n = 0;
    CHECK_ERR(sm__cgraph_prune(g, NULL, 0, &f, 1, NULL, 0, &order, &n), "cycle through node '");
    CHECK(order == NULL);
    sm_edge fed = {sm__cgraph_find(g, "b"), 0};
    CHECK_OK(sm__cgraph_prune(g, &fed, 1, &f, 1, NULL, 0, &order, &n)); /* feeding cuts the cycle */
    CHECK_EQ_INT(n, 2);
    free(order);
    int k = sm__cgraph_find(g, "k");
    CHECK_ERR(sm__cgraph_prune(g, NULL, 0, NULL, 0, &k, 1, &order, &n), "cycle through node 'k'");
    sm__cgraph_free(g);
    free_mg(mg);
  }

  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'Neg' input: 'nope' attr { key: 'T' value { type: DT_FLOAT } } } }",
                         NULL, NULL),
            "node 'a': input 'nope' names no node");
  CHECK_ERR(compile_text("graph_def { node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                         " node { name: 'a' op: 'Neg' input: 'p:3' attr { key: 'T' value { type: DT_FLOAT } } } }",
                         NULL, NULL),
            "input 'p:3' is out of range");
  CHECK_ERR(compile_text("graph_def { node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }"
                         " node { name: 'a' op: 'Neg' input: 'p' input: 'p' attr { key: 'T' value { type: DT_FLOAT } } } }",
                         NULL, NULL),
            "has 2 data inputs, its OpDef wants 1");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'FancyNewOp' } }", NULL, NULL),
            "node 'a': op 'FancyNewOp' is unknown");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'NoOp' } node { name: 'a' op: 'NoOp' } }", NULL, NULL),
            "two nodes are named 'a'");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'Neg' attr { key: 'T' value { s: 'float' } } } }", NULL,
                         NULL),
            "attr 'T' should be a type");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'Placeholder' } }", NULL, NULL),
            "required attr 'dtype' is missing");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'Pack' attr { key: 'T' value { type: DT_FLOAT } }"
                         " attr { key: 'N' value { i: -3 } } } }",
                         NULL, NULL),
            "attr 'N' = -3 is not a valid length");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'StatefulPartitionedCall'"
                         " attr { key: 'Tin' value { list { } } } attr { key: 'Tout' value { list { } } }"
                         " attr { key: 'f' value { func { name: 'missing_fn' } } } } }",
                         NULL, NULL),
            "function 'missing_fn' is not in the graph's library");
  CHECK_ERR(compile_text("graph_def { node { name: 'a' op: 'PartitionedCall'"
                         " attr { key: 'Tin' value { list { } } } attr { key: 'Tout' value { list { } } }"
                         " attr { key: 'f' value { s: 'x' } } } }",
                         NULL, NULL),
            "attr 'f' should be a function");
  /* self-recursive and mutually recursive functions */
  const char *rec =
      "graph_def { node { name: 'top' op: 'PartitionedCall'"
      " attr { key: 'Tin' value { list { } } } attr { key: 'Tout' value { list { } } }"
      " attr { key: 'f' value { func { name: 'f1' } } } }\n"
      " library { function { signature { name: 'f1' }"
      "   node_def { name: 'again' op: 'PartitionedCall' attr { key: 'Tin' value { list { } } }"
      "   attr { key: 'Tout' value { list { } } } attr { key: 'f' value { func { name: '%s' } } } } }\n"
      " function { signature { name: 'f2' }"
      "   node_def { name: 'back' op: 'PartitionedCall' attr { key: 'Tin' value { list { } } }"
      "   attr { key: 'Tout' value { list { } } } attr { key: 'f' value { func { name: 'f1' } } } } } } }";
  char buf[2048];
  snprintf(buf, sizeof buf, rec, "f1");
  CHECK_ERR(compile_text(buf, NULL, NULL), "function 'f1' calls itself");
  snprintf(buf, sizeof buf, rec, "f2");
  CHECK_ERR(compile_text(buf, NULL, NULL), "node 'top/again/back': function 'f1' calls itself");
  /* legacy direct call: op is a function name */
  const char *direct =
      "graph_def { node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }"
      " node { name: 'dc' op: 'twice' input: 'p' }\n"
      " library { function { signature { name: 'twice' input_arg { name: 'i' type: DT_INT32 }"
      "   output_arg { name: 'o' type: DT_INT32 } }"
      "   node_def { name: 'add' op: 'AddV2' input: 'i' input: 'i' attr { key: 'T' value { type: DT_INT32 } } }"
      "   ret { key: 'o' value: 'add:z:0' } } } }";
  mg = NULL;
  g = NULL;
  CHECK_OK(compile_text(direct, &mg, &g));
  if (g) {
    int dc = sm__cgraph_find(g, "dc"), add = sm__cgraph_find(g, "dc/add");
    CHECK(dc >= 0 && add >= 0);
    if (dc >= 0) CHECK_EQ_STR(sm__node_op(sm__cgraph_node(g, dc)), "IdentityN");
    if (dc >= 0) CHECK_EQ_INT(sm__node_input(sm__cgraph_node(g, dc), 0).node, add);
    if (dc >= 0) CHECK_EQ_INT(sm__node_output_dtype(sm__cgraph_node(g, dc), 0), SM_INT32);
    sm__cgraph_free(g);
    free_mg(mg);
  }
  /* bad function-body references */
  const char *bodyref =
      "graph_def { node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }"
      " node { name: 'dc' op: 'fn' input: 'p' }\n"
      " library { function { signature { name: 'fn' input_arg { name: 'i' type: DT_INT32 }"
      "   output_arg { name: 'o' type: DT_INT32 } }"
      "   node_def { name: 'add' op: 'AddV2' input: 'i' input: '%s' attr { key: 'T' value { type: DT_INT32 } } }"
      "   ret { key: 'o' value: '%s' } } } }";
  snprintf(buf, sizeof buf, bodyref, "j", "add:z:0");
  CHECK_ERR(compile_text(buf, NULL, NULL), "input 'j' is no argument of function 'fn'");
  snprintf(buf, sizeof buf, bodyref, "add:zz:0", "add:z:0");
  CHECK_ERR(compile_text(buf, NULL, NULL), "has no output 'zz'");
  snprintf(buf, sizeof buf, bodyref, "i:1", "add:z:0");
  CHECK_ERR(compile_text(buf, NULL, NULL), "input 'i:1' is out of range");
  snprintf(buf, sizeof buf, bodyref, "nonode:z:0", "add:z:0");
  CHECK_ERR(compile_text(buf, NULL, NULL), "names no node of function 'fn'");
  snprintf(buf, sizeof buf, bodyref, "i", "add:z:1");
  CHECK_ERR(compile_text(buf, NULL, NULL), "out of range (output 'z' has 1)");
  snprintf(buf, sizeof buf, bodyref, "i", "i");
  CHECK_OK(compile_text(buf, NULL, NULL)); /* a function may return its argument */
  snprintf(buf, sizeof buf, bodyref, "i:0:1:2", "i");
  CHECK_ERR(compile_text(buf, NULL, NULL), "not a valid reference");
  /* unbound placeholder */
  CHECK_ERR(compile_text("graph_def { node { name: 'dc' op: 'fn' }\n"
                         " library { function { signature { name: 'fn' }"
                         "   node_def { name: 'k' op: 'Placeholder' attr { key: 'dtype' value { placeholder: 'Q' } } } } } }",
                         NULL, NULL),
            "refers to $Q");
  /* exponential inlining stops at the node limit (lowered here so that the test is quick) */
  {
    sm__graph_max_nodes = 100000;
    char *big = malloc(1 << 16);
    size_t o = 0;
    o += (size_t)snprintf(big + o, 65536 - o,
                          "graph_def { node { name: 'top' op: 'f0' }\n library {\n");
    for (int i = 0; i < 30; i++)
      o += (size_t)snprintf(big + o, 65536 - o,
                            " function { signature { name: 'f%d' } node_def { name: 'a' op: 'f%d' }"
                            " node_def { name: 'b' op: 'f%d' } node_def { name: 'c' op: 'f%d' }"
                            " node_def { name: 'd' op: 'f%d' } }\n",
                            i, i + 1, i + 1, i + 1, i + 1);
    snprintf(big + o, 65536 - o, " function { signature { name: 'f30' } node_def { name: 'n' op: 'NoOp' } } } }");
    CHECK_ERR(compile_text(big, NULL, NULL), "more than 100000 nodes after inlining");
    sm__graph_max_nodes = SM_GRAPH_MAX_NODES;
    free(big);
  }
  /* deep nesting stops at the depth limit */
  {
    char *big = malloc(1 << 16);
    size_t o = 0;
    o += (size_t)snprintf(big + o, 65536 - o, "graph_def { node { name: 'top' op: 'f0' }\n library {\n");
    for (int i = 0; i < 100; i++)
      o += (size_t)snprintf(big + o, 65536 - o, " function { signature { name: 'f%d' } node_def { name: 'a' op: 'f%d' } }\n",
                            i, i + 1);
    snprintf(big + o, 65536 - o, " function { signature { name: 'f100' } } } }");
    CHECK_ERR(compile_text(big, NULL, NULL), "nest deeper than 64");
    free(big);
  }
  /* nodes declaring million-long output lists stop at the size limit, before inputs are read */
  {
    char *big = malloc(1 << 16);
    size_t o = (size_t)snprintf(big, 65536, "graph_def {\n");
    for (int i = 0; i < 200; i++)
      o += (size_t)snprintf(big + o, 65536 - o,
                            " node { name: 'u%d' op: 'Unpack' input: 'nothing' attr { key: 'T' value { type: DT_FLOAT } }"
                            " attr { key: 'num' value { i: 1048576 } } }\n",
                            i);
    snprintf(big + o, 65536 - o, "}");
    CHECK_ERR(compile_text(big, NULL, NULL), "inputs and outputs after inlining");
    free(big);
  }
  sm_cgraph *none = NULL;
  CHECK_ERR(sm__cgraph_compile(NULL, &none), "no MetaGraphDef");
  sm__cgraph_free(NULL);
}

/* stripped_op_list OpDefs win over the built-in ones */
static void test_stripped_opdefs(void) {
  const char *text =
      "meta_info_def { stripped_op_list { op { name: 'Neg' input_arg { name: 'x' type_attr: 'T' }"
      "  output_arg { name: 'y' type_attr: 'T' } attr { name: 'T' type: 'type' default_value { type: DT_DOUBLE } }"
      "  attr { name: 'extra' type: 'int' default_value { i: 42 } } } } }\n"
      "graph_def { node { name: 'p' op: 'Placeholder' attr { key: 'dtype' value { type: DT_DOUBLE } } }"
      " node { name: 'n' op: 'Neg' input: 'p' } }";
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL;
  CHECK_OK(compile_text(text, &mg, &g));
  if (!g) return;
  const sm_node *n = sm__cgraph_node(g, sm__cgraph_find(g, "n"));
  int64_t extra = 0;
  CHECK_OK(sm__node_attr_int(n, "extra", &extra));
  CHECK_EQ_INT(extra, 42);
  CHECK_EQ_INT(sm__node_output_dtype(n, 0), SM_DOUBLE);
  sm__cgraph_free(g);
  free_mg(mg);
}

static void test_builtin_ops(void) {
  const char *must[] = {"Conv2D", "MatMul", "BiasAdd", "MaxPool", "AvgPool", "Relu", "Softmax", "Reshape",
                        "StridedSlice", "ConcatV2", "GatherV2", "Cast", "Mean", "FusedBatchNormV3", "ParseExample",
                        "ParseExampleV2", "HashTableV2", "LookupTableFindV2", "VariableV2", "Assign", "AssignAdd",
                        "RestoreV2", "StatefulPartitionedCall", "PartitionedCall", "IdentityN", "Squeeze", "Add"};
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
    const Tensorflow__OpDef *d = sm__builtin_op_def(must[i]);
    if (!d) fprintf(stderr, "no built-in OpDef for %s\n", must[i]);
    CHECK(d != NULL);
    if (d) CHECK(!d->summary || !*d->summary);
  }
  const Tensorflow__OpDef *v = sm__builtin_op_def("VariableV2");
  CHECK(v && v->n_output_arg == 1 && v->output_arg[0]->is_ref);
  CHECK(sm__builtin_op_def("NotAnOp") == NULL);
  CHECK(sm__builtin_op_def(NULL) == NULL);
}

/* ---- TensorProto ----------------------------------------------------------------------------- */
static sm_status *decode(const char *text, sm_tensor **t) {
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(&tensorflow__tensor_proto__descriptor, text, strlen(text), "tensor", &m);
  if (s) return s;
  s = sm__tensor_from_proto((Tensorflow__TensorProto *)m, t);
  protobuf_c_message_free_unpacked(m, NULL);
  return s;
}

static void test_tensor_proto(void) {
  sm_tensor *t = NULL;
  CHECK_OK(decode("dtype: DT_FLOAT tensor_shape { dim { size: 1 } dim { size: 4 } } float_val: 1.5 float_val: 2", &t));
  if (t) {
    const float *f = sm_tensor_data(t);
    CHECK(sm_tensor_rank(t) == 2 && f[0] == 1.5f && f[1] == 2 && f[2] == 2 && f[3] == 2);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_FLOAT tensor_shape { dim { size: 3 } }", &t)); /* zeros */
  if (t) {
    const float *f = sm_tensor_data(t);
    CHECK(f[0] == 0 && f[2] == 0);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: '\\001\\000\\000\\000\\377\\377\\377\\377'"
                  " int_val: 9",
                  &t)); /* content wins */
  if (t) {
    const int32_t *v = sm_tensor_data(t);
    CHECK(v[0] == 1 && v[1] == -1);
    sm_tensor_free(t);
  }
  CHECK_ERR(decode("dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: '\\001\\000\\000\\000'", &t),
            "tensor_content has 4 bytes");
  CHECK_OK(decode("dtype: DT_INT8 tensor_shape { dim { size: 3 } } int_val: -2 int_val: 300", &t));
  if (t) {
    const int8_t *v = sm_tensor_data(t);
    CHECK(v[0] == -2 && v[1] == (int8_t)300 && v[2] == (int8_t)300);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_UINT16 tensor_shape { dim { size: 1 } } int_val: 65535", &t));
  if (t) {
    CHECK(((const uint16_t *)sm_tensor_data(t))[0] == 65535);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15360", &t)); /* 1.0 */
  if (t) {
    const uint16_t *h = sm_tensor_data(t);
    CHECK(h[0] == 0x3c00 && h[1] == 0x3c00);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_BFLOAT16 half_val: 16256", &t)); /* scalar 1.0 */
  if (t) {
    CHECK(sm_tensor_rank(t) == 0 && ((const uint16_t *)sm_tensor_data(t))[0] == 0x3f80);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_INT64 tensor_shape { dim { size: 2 } } int64_val: -9000000000", &t));
  if (t) {
    CHECK(((const int64_t *)sm_tensor_data(t))[1] == -9000000000LL);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: false bool_val: true", &t));
  if (t) {
    const uint8_t *b = sm_tensor_data(t);
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1);
    sm_tensor_free(t);
  }
  /* more values than elements: the extra ones are ignored, as TF's FromProtoField ignores them */
  CHECK_OK(decode("dtype: DT_DOUBLE tensor_shape { dim { size: 1 } } double_val: 0.25 double_val: 7", &t));
  if (t) {
    CHECK(sm_tensor_num_elements(t) == 1 && ((const double *)sm_tensor_data(t))[0] == 0.25);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: 'ab' string_val: 'cdef'", &t));
  if (t) {
    size_t len = 0;
    const char *s0 = sm_tensor_string(t, 0, &len);
    CHECK(sm_tensor_num_elements(t) == 1 && len == 2 && s0 && !memcmp(s0, "ab", 2));
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_UINT32 tensor_shape { dim { size: 1 } } uint32_val: 4000000000", &t));
  if (t) {
    CHECK(((const uint32_t *)sm_tensor_data(t))[0] == 4000000000u);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_UINT64 uint64_val: 18000000000000000000", &t));
  if (t) {
    CHECK(((const uint64_t *)sm_tensor_data(t))[0] == 18000000000000000000ull);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_COMPLEX64 tensor_shape { dim { size: 2 } } scomplex_val: 1 scomplex_val: -2", &t));
  if (t) {
    const float *c = sm_tensor_data(t);
    CHECK(c[0] == 1 && c[1] == -2 && c[2] == 1 && c[3] == -2);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_STRING tensor_shape { dim { size: 3 } } string_val: 'ab' string_val: 'c\\000d'", &t));
  if (t) {
    size_t len = 0;
    const char *s = sm_tensor_string(t, 2, &len);
    CHECK(len == 3 && !memcmp(s, "c\0d", 3));
    s = sm_tensor_string(t, 0, &len);
    CHECK(len == 2 && !memcmp(s, "ab", 2));
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_STRING tensor_shape { dim { size: 2 } }", &t));
  if (t) {
    size_t len = 9;
    sm_tensor_string(t, 1, &len);
    CHECK_EQ_INT(len, 0);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_STRING tensor_shape { dim { size: 2 } } tensor_content: '\\002\\001hiX'", &t));
  if (t) {
    size_t len = 0;
    const char *s = sm_tensor_string(t, 1, &len);
    CHECK(len == 1 && s[0] == 'X');
    sm_tensor_free(t);
  }
  CHECK_ERR(decode("dtype: DT_STRING tensor_shape { dim { size: 2 } } tensor_content: '\\002\\011hiX'", &t),
            "runs past the end");
  CHECK_ERR(decode("dtype: DT_FLOAT tensor_shape { dim { size: -1 } }", &t), "dimension 0 is -1");
  CHECK_ERR(decode("dtype: DT_FLOAT tensor_shape { unknown_rank: true }", &t), "unknown rank");
  CHECK_ERR(decode("dtype: DT_INVALID", &t), "not a value dtype");
  CHECK_ERR(decode("dtype: DT_FLOAT_REF", &t), "not a value dtype");
  CHECK_ERR(decode("dtype: DT_RESOURCE", &t), "not supported");
  CHECK_ERR(decode("dtype: DT_FLOAT tensor_shape { dim { size: 4000000000 } dim { size: 4000000000 } }", &t),
            "TensorProto");
  CHECK(t == NULL);
  /* tf.zeros([0], tf.string) as TF saves it: shape [0], one value */
  CHECK_OK(decode("dtype: DT_STRING tensor_shape { dim { size: 0 } } string_val: ''", &t));
  if (t) {
    CHECK_EQ_INT(sm_tensor_num_elements(t), 0);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_FLOAT tensor_shape { dim { size: 0 } } float_val: 3", &t));
  if (t) {
    CHECK_EQ_INT(sm_tensor_num_elements(t), 0);
    sm_tensor_free(t);
  }
  CHECK_OK(decode("dtype: DT_FLOAT tensor_shape { dim { size: 0 } }", &t));
  if (t) {
    CHECK_EQ_INT(sm_tensor_num_elements(t), 0);
    sm_tensor_free(t);
  }

  /* through a node attr */
  const char *text =
      "graph_def { node { name: 'k' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
      " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 5 } } } }"
      " node { name: 'bad' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
      " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: -5 } } } } } } }";
  Tensorflow__MetaGraphDef *mg = NULL;
  sm_cgraph *g = NULL;
  CHECK_OK(compile_text(text, &mg, &g));
  if (g) {
    CHECK_OK(sm__node_attr_tensor(sm__cgraph_node(g, sm__cgraph_find(g, "k")), "value", &t));
    if (t) {
      CHECK(((const int32_t *)sm_tensor_data(t))[1] == 5);
      sm_tensor_free(t);
    }
    CHECK_ERR(sm__node_attr_tensor(sm__cgraph_node(g, sm__cgraph_find(g, "bad")), "value", &t),
              "node 'bad' (Const): attr 'value'");
    CHECK_ERR(sm__node_attr_tensor(sm__cgraph_node(g, sm__cgraph_find(g, "k")), "dtype", &t), "is a type, not a tensor");
    int rank = 0;
    int64_t dims[SM_MAX_RANK];
    CHECK_ERR(sm__node_attr_shape(sm__cgraph_node(g, sm__cgraph_find(g, "k")), "value", &rank, dims), "not a shape");
    sm__cgraph_free(g);
    free_mg(mg);
  }
}

int main(void) {
  test_builtin_ops();
  test_tensor_proto();
  test_prune_feeds();
  test_inlining();
  test_compile_function();
  test_stripped_opdefs();
  test_hostile();
  test_zoo();
  test_keras_cnn();
  TEST_MAIN_END();
}
