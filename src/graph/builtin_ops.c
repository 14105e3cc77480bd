/* builtin_ops.c - lookup in the built-in OpDef table (op_defs.c, plus the system ops listed here),
 * parsed once per process. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/op_defs.h"
#include "savedmodel/pbtxt.h"

static Tensorflow__OpList *g_ops, *g_sys;
static sm_smap g_map;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* System ops, kept out of op_defs.c (generated from the ops a SavedModel's graph may hold): "_Arg",
 * the argument node of a function compiled as a graph of its own (sm__cgraph_compile_function), as
 * tensorflow/core/ops/function_ops.cc registers it; "_SmFoldBN", the helper node BatchNorm folding
 * puts before a convolution, and "_SmFoldBNVars", the same reading variables itself
 * (src/ops/nn_fold.c); "_SmLayerNorm" and "_SmGeluErf", a Transformer's per-element chains fused, and "_SmBatchNorm", Keras' inference BatchNorm as one pass
 * (src/ops/nn_fuse_norm.c); "_SmMatMulEp", a Dense layer's product with its Reshape, bias and
 * GELU (src/ops/nn_matmul_ep.c); "_SmScaledSoftmax", Softmax(scale * x) (src/ops/math_fwd.c); "_SmReadVariable", a variable handle and its read as one step
 * (src/ops/state.c). */
static const char system_ops_text[] =
    "op { name: \"_Arg\" output_arg { name: \"output\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" } attr { name: \"index\" type: \"int\" has_minimum: true }\n"
    "  is_stateful: true }\n"
    /* BatchNorm folding's helper (src/ops/nn_fold.c): made by a graph rewrite, not a TF op */
    "op { name: \"_SmFoldBN\" input_arg { name: \"filter\" type_attr: \"T\" }\n"
    "  input_arg { name: \"scale\" type_attr: \"T\" } input_arg { name: \"shift\" type_attr: \"T\" }\n"
    "  input_arg { name: \"bias\" type_attr: \"T\" number_attr: \"num_bias\" }\n"
    "  input_arg { name: \"stats\" type_attr: \"T\" number_attr: \"num_stats\" }\n"
    "  output_arg { name: \"folded_filter\" type_attr: \"T\" } output_arg { name: \"folded_bias\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"num_bias\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"num_stats\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"epsilon\" type: \"float\" default_value { f: 0.0001 } } }\n"
    /* the same helper where it reads some of its inputs from variables itself (attr _sm_vars names
     * them, per input of _SmFoldBN's; the others are its args, in that order) */
    "op { name: \"_SmFoldBNVars\" input_arg { name: \"args\" type_attr: \"T\" number_attr: \"num_args\" }\n"
    "  output_arg { name: \"folded_filter\" type_attr: \"T\" } output_arg { name: \"folded_bias\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"num_args\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"num_bias\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"num_stats\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"epsilon\" type: \"float\" default_value { f: 0.0001 } } is_stateful: true }\n"
    /* a Transformer's LayerNorm and erf GELU chains fused (src/ops/nn_fuse_norm.c) */
    "op { name: \"_SmLayerNorm\" input_arg { name: \"x\" type_attr: \"T\" }\n"
    "  input_arg { name: \"mean_axes\" type_attr: \"Tidx\" } input_arg { name: \"variance_axes\" type_attr: \"Tidx\" }\n"
    "  input_arg { name: \"epsilon\" type_attr: \"T\" } input_arg { name: \"gamma\" type_attr: \"T\" }\n"
    "  input_arg { name: \"beta\" type_attr: \"T\" } output_arg { name: \"y\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"Tidx\" type: \"type\" allowed_values { list { type: DT_INT32 type: DT_INT64 } } } }\n"
    "op { name: \"_SmGeluErf\" input_arg { name: \"x\" type_attr: \"T\" }\n"
    "  input_arg { name: \"bias\" type_attr: \"T\" number_attr: \"num_bias\" }\n"
    "  input_arg { name: \"c0\" type_attr: \"T\" } input_arg { name: \"c1\" type_attr: \"T\" }\n"
    "  input_arg { name: \"c2\" type_attr: \"T\" } output_arg { name: \"y\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"num_bias\" type: \"int\" has_minimum: true } }\n"
    /* Softmax(logits * scale): a Mul by a scalar Const and the Softmax reading it (src/ops/math_fwd.c) */
    "op { name: \"_SmScaledSoftmax\" input_arg { name: \"logits\" type_attr: \"T\" }\n"
    "  output_arg { name: \"softmax\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"scale\" type: \"float\" } }\n"
    /* a Dense layer's product, Reshape and bias [+ erf GELU] as one node (src/ops/nn_matmul_ep.c) */
    "op { name: \"_SmMatMulEp\" input_arg { name: \"a\" type_attr: \"T\" }\n"
    "  input_arg { name: \"b\" type_attr: \"T\" } input_arg { name: \"shape\" type_attr: \"Tshape\" number_attr: \"num_shape\" }\n"
    "  input_arg { name: \"bias\" type_attr: \"T\" number_attr: \"num_bias\" }\n"
    "  output_arg { name: \"y\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"Tshape\" type: \"type\" allowed_values { list { type: DT_INT32 type: DT_INT64 } } }\n"
    "  attr { name: \"num_bias\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"num_shape\" type: \"int\" has_minimum: true }\n"
    "  attr { name: \"product\" type: \"string\" } attr { name: \"bias_add\" type: \"bool\" }\n"
    "  attr { name: \"activation\" type: \"string\" } }\n"
    /* Keras 3's inference BatchNormalization (+ Relu|Relu6) as one pass (src/ops/nn_fuse_norm.c) */
    "op { name: \"_SmBatchNorm\" input_arg { name: \"x\" type_attr: \"T\" }\n"
    "  input_arg { name: \"gamma\" type_attr: \"T\" } input_arg { name: \"beta\" type_attr: \"T\" }\n"
    "  input_arg { name: \"mean\" type_attr: \"T\" } input_arg { name: \"variance\" type_attr: \"T\" }\n"
    "  output_arg { name: \"y\" type_attr: \"T\" }\n"
    "  attr { name: \"T\" type: \"type\" allowed_values { list { type: DT_FLOAT } } }\n"
    "  attr { name: \"epsilon\" type: \"float\" } attr { name: \"num_channels\" type: \"int\" }\n"
    "  attr { name: \"param_rank\" type: \"int\" } attr { name: \"activation_mode\" type: \"string\" } }\n"
    /* a VarHandleOp and its one ReadVariableOp as one step (src/ops/state.c) */
    "op { name: \"_SmReadVariable\" output_arg { name: \"value\" type_attr: \"dtype\" }\n"
    "  attr { name: \"container\" type: \"string\" default_value { s: \"\" } }\n"
    "  attr { name: \"shared_name\" type: \"string\" } attr { name: \"dtype\" type: \"type\" }\n"
    "  is_stateful: true }\n";

static void load(void) {
  ProtobufCMessage *m = NULL;
  sm_status *ss = sm_pbtxt_parse(&tensorflow__op_list__descriptor, system_ops_text, strlen(system_ops_text),
                                 "built-in system op table", &m);
  if (ss) {
    fprintf(stderr, "libsavedmodel: %s\n", sm_status_message(ss));
    sm_status_free(ss);
  } else {
    g_sys = (Tensorflow__OpList *)m; /* process-lifetime, as the main table */
  }
  m = NULL;
  sm_status *s = sm_pbtxt_parse(&tensorflow__op_list__descriptor, sm__builtin_op_list_text,
                                strlen(sm__builtin_op_list_text), "built-in op table", &m);
  if (s) { /* a build defect, not a user error: report loudly once */
    fprintf(stderr, "libsavedmodel: %s\n", sm_status_message(s));
    sm_status_free(s);
    return;
  }
  g_ops = (Tensorflow__OpList *)m;
  for (size_t i = 0; i < g_ops->n_op; i++)
    if (sm__smap_get(&g_map, g_ops->op[i]->name) < 0 && !sm__smap_put(&g_map, g_ops->op[i]->name, (int)i)) {
      fprintf(stderr, "libsavedmodel: out of memory indexing the built-in op table\n");
      sm__smap_free(&g_map);
      g_ops = NULL; /* the parsed message stays: a one-off, process-lifetime table */
      return;
    }
}

const Tensorflow__OpDef *sm__builtin_op_def(const char *op_type) {
  pthread_once(&g_once, load);
  if (!op_type) return NULL;
  int i = g_ops ? sm__smap_get(&g_map, op_type) : -1;
  if (i >= 0) return g_ops->op[i];
  for (size_t k = 0; g_sys && k < g_sys->n_op; k++)
    if (!strcmp(g_sys->op[k]->name, op_type)) return g_sys->op[k];
  return NULL;
}
