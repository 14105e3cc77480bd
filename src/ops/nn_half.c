/* nn_half.c - half and bfloat16 products (Keras mixed precision: dtype policy "mixed_float16" or
 * "mixed_bfloat16" computes Dense, Conv*, attention and RNN cells in 16 bits) as a plan-time graph
 * rewrite (sm_rewrites_nn_half, run by src/runtime/rewrite.h): a MatMul, BatchMatMul[V2],
 * Einsum, Conv2D, DepthwiseConv2dNative, Conv3D, Conv2DBackpropInput[V2], Conv3DBackpropInput[V2] (and
 * the BiasAdd / BiasAddV1 that follows one, and the pools: MaxPool, AvgPool, MaxPool3D, AvgPool3D)
 * whose T is DT_HALF or DT_BFLOAT16 becomes
 *     Cast(each 16-bit operand -> float), the same op on float (same attrs, T = float), Cast(-> T)
 * so that the float kernels (and their fusions' absence: the float node is made here, after the
 * fusion rules looked at the 16-bit one) compute it. That is TensorFlow's CPU arithmetic for half:
 * Eigen and oneDNN widen each operand to float, accumulate in float and round the result once, and
 * TF 2.21's half MatMul, BatchMatMulV2 and Conv2D equal the float op's result cast to half bit for
 * bit (checked on random operands, K up to 1000). For bfloat16, TF 2.21's CPU MatMul, BatchMatMul,
 * BatchMatMulV2 compute in float and narrow the result by truncation (TF's FloatToBFloat16: the low
 * 16 bits dropped, not rounded; 200 random shapes up to 40x40x40 bit-exact against the float op's
 * result truncated, none rounded), so their Cast back is a Truncate = true one (trunc_bf16); its
 * Conv2D and BiasAdd round to nearest even, as the plain Cast does. Its bfloat16 Einsum, depthwise
 * and 3-D convolutions and pools match neither (partial sums in bfloat16 on some paths): results
 * agree within a bfloat16 ulp or so (tools/sweep_layers.py).
 * The float node keeps the original node's name (errors name the node the graph has); the casts are
 * named after it (NAME/_sm_f32_in<i>, NAME/_sm_f32_out). */
#include <stdio.h>
#include <string.h>

#include "graph/synth.h"
#include "ops/nn_internal.h"
#include "runtime/rewrite.h"

#define HALF_RULE "half/bfloat16 product or pool -> Cast + float op + Cast"

static const struct {
  const char *op;
  unsigned mask; /* the inputs of type T (bit i: input i); ~0u: all of them (Einsum's list) */
  const char *attrs[7];
  int trunc_bf16; /* a bfloat16 result is the float one truncated (TF's FloatToBFloat16) */
} prods[] = {
    {"MatMul", 3u, {"transpose_a", "transpose_b", "grad_a", "grad_b"}, 1},
    {"BatchMatMul", 3u, {"adj_x", "adj_y"}, 1},
    {"BatchMatMulV2", 3u, {"adj_x", "adj_y", "grad_x", "grad_y"}, 1},
    {"Einsum", ~0u, {"equation", "N"}, 0},
    {"Conv2D", 3u, {"strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu"}, 0},
    {"DepthwiseConv2dNative", 3u, {"strides", "padding", "explicit_paddings", "data_format", "dilations"}, 0},
    {"Conv3D", 3u, {"strides", "padding", "data_format", "dilations"}, 0},
    {"Conv2DBackpropInput", 6u,
     {"strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu"}, 0},
    {"Conv3DBackpropInputV2", 6u, {"strides", "padding", "data_format", "dilations", "Tshape"}, 0},
    {"Conv2DBackpropInputV2", 7u, {"strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu"}, 0},
    {"Conv3DBackpropInput", 7u, {"strides", "padding", "dilations"}, 0},
    {"BiasAdd", 3u, {"data_format"}, 0},
    {"BiasAddV1", 3u, {NULL}, 0},
    {"MaxPool", 1u, {"ksize", "strides", "padding", "explicit_paddings", "data_format"}, 0},
    {"AvgPool", 1u, {"ksize", "strides", "padding", "data_format"}, 0},
    {"MaxPool3D", 1u, {"ksize", "strides", "padding", "data_format"}, 0},
    {"AvgPool3D", 1u, {"ksize", "strides", "padding", "data_format"}, 0},
};

static sm_status *cast_node(sm_rewrite *rw, const char *name, sm_edge in, int from, int to, int truncate,
                            sm_node **out) {
  sm_node *c;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), name, "Cast", &c);
  if (st) return st;
  st = sm__synth_add_input(c, in);
  if (!st) st = sm__synth_set_type(c, "SrcT", from);
  if (!st) st = sm__synth_set_type(c, "DstT", to);
  if (!st) st = sm__synth_set_bool(c, "Truncate", truncate);
  if (!st) st = sm__synth_finish(c);
  if (st) {
    sm__synth_free(c);
    return st;
  }
  *out = c;
  return NULL;
}

#define MAX_IN 8

static sm_status *widen(sm_rewrite *rw, int anchor) {
  const sm_node *p = sm__rewrite_node(rw, anchor);
  const char *op = sm__node_op(p);
  size_t k = 0;
  while (k < sizeof prods / sizeof *prods && strcmp(prods[k].op, op)) k++;
  if (k == sizeof prods / sizeof *prods || sm__node_num_outputs(p) != 1) return NULL;
  int t = sm__node_output_dtype(p, 0), nin = sm__node_num_inputs(p);
  if ((t != SM_HALF && t != SM_BFLOAT16) || nin < 1 || nin > MAX_IN) return NULL;
  int chain[1] = {anchor};
  if (!sm__rewrite_can_fuse(rw, chain, 1)) return NULL;
  for (int i = 0; i < nin; i++)
    if (sm__rewrite_reads_ref(rw, anchor, i)) return NULL;
  sm_node *nodes[MAX_IN + 2] = {0};
  int nn = 0, base = sm__rewrite_next_id(rw);
  sm_edge ins[MAX_IN];
  char name[512];
  const char *pname = sm__node_name(p);
  sm_status *st = NULL;
  for (int i = 0; i < nin && !st; i++) {
    ins[i] = sm__rewrite_input(rw, anchor, i);
    if (!(prods[k].mask >> (i < 31 ? i : 31) & 1u)) continue;
    snprintf(name, sizeof name, "%s/_sm_f32_in%d", pname, i);
    if (!(st = cast_node(rw, name, ins[i], t, SM_FLOAT, 0, &nodes[nn]))) ins[i] = (sm_edge){base + nn++, 0};
  }
  sm_node *f = NULL;
  if (!st) st = sm__synth_new(sm__rewrite_graph(rw), pname, op, &f);
  for (int i = 0; i < nin && !st; i++) st = sm__synth_add_input(f, ins[i]);
  for (int a = 0; a < 7 && prods[k].attrs[a] && !st; a++)
    st = sm__synth_copy_attr(f, prods[k].attrs[a], p, prods[k].attrs[a]);
  if (!st) st = sm__synth_set_type(f, "T", SM_FLOAT);
  if (!st) st = sm__synth_finish(f);
  if (f) {
    nodes[nn++] = f;
    f = NULL;
  }
  snprintf(name, sizeof name, "%s/_sm_f32_out", pname);
  if (!st) st = cast_node(rw, name, (sm_edge){base + nn - 1, 0}, SM_FLOAT, t, t == SM_BFLOAT16 && prods[k].trunc_bf16,
                            &nodes[nn]);
  if (!st) nn++;
  if (st) {
    for (int i = 0; i < nn; i++) sm__synth_free(nodes[i]);
    return st;
  }
  return sm__rewrite_replace_n(rw, HALF_RULE, chain, 1, nodes, nn);
}

const sm_rewrite_rule sm_rewrites_nn_half[] = {
    {"MatMul", HALF_RULE, widen},
    {"BatchMatMul", HALF_RULE, widen},
    {"BatchMatMulV2", HALF_RULE, widen},
    {"Einsum", HALF_RULE, widen},
    {"Conv2D", HALF_RULE, widen},
    {"DepthwiseConv2dNative", HALF_RULE, widen},
    {"Conv3D", HALF_RULE, widen},
    {"Conv2DBackpropInput", HALF_RULE, widen},
    {"Conv3DBackpropInputV2", HALF_RULE, widen},
    {"Conv2DBackpropInputV2", HALF_RULE, widen},
    {"Conv3DBackpropInput", HALF_RULE, widen},
    {"BiasAdd", HALF_RULE, widen},
    {"BiasAddV1", HALF_RULE, widen},
    {"MaxPool", HALF_RULE, widen},
    {"AvgPool", HALF_RULE, widen},
    {"MaxPool3D", HALF_RULE, widen},
    {"AvgPool3D", HALF_RULE, widen},
    {0},
};
