/* nn_fuse.c - what the nn family fuses: its graph rewrite rules (sm_rewrites_nn, which the plan's
 * rewrite pass runs, src/runtime/rewrite.h) and the reading of the fused nodes' attrs that the
 * _FusedConv2D / _FusedMatMul kernels' prepare share (nn_conv.c, nn_matmul.c).
 *
 * The rules, TensorFlow's grappler remapper's contraction fusions:
 *   - a float Conv2D (NHWC) or MatMul whose only reader is a BiasAdd (NHWC) / BiasAddV1 becomes one
 *     _FusedConv2D / _FusedMatMul node with fused_ops ["BiasAdd"], num_args 1, args [bias];
 *   - for a convolution, a residual AddV2 / Add that is the BiasAdd's only reader and adds another
 *     float value (the shortcut) joins as TF's oneDNN remapper fuses it: fused_ops [..., "Add"],
 *     num_args 2, args [bias, addend]; then a Relu or Relu6 that is the Add's only reader joins;
 *     TF's AddV2 broadcasts, and the shapes are only known at run time: the kernel computes an
 *     addend of another shape too (nn_conv.c);
 *   - else a Relu, Relu6 or Sigmoid that is the BiasAdd's only reader joins (fused_ops [..., "Relu"]);
 *   - a float NHWC DepthwiseConv2dNative (padding SAME or VALID) + BiasAdd [+ Relu | Relu6 | Sigmoid]
 *     becomes TF's _FusedDepthwiseConv2dNative (its remapper's CPU fusion), with no Add and no MaxPool;
 *   - swish (anchored at the Sigmoid: fuse_swish): a fused product without an activation (made by
 *     these rules or nn_fold.c's, or carried by the graph) whose value y is read only by Sigmoid(y)
 *     and Mul(y, Sigmoid(y)) [and tf.nn.silu's IdentityN, when its other outputs are unread] gets
 *     TF's "_MklSwish" after its fused_ops;
 *   - then, for a convolution, a MaxPool (float, NHWC, VALID or SAME, windows that do not overlap
 *     vertically: stride >= window height) that is the only reader of the last value joins too, and
 *     the convolution writes only the pooled output. TensorFlow's _FusedConv2D has no pooling: this
 *     is this library's extension, spelt fused_ops [..., "MaxPool"] with the pool in attrs
 *     _sm_pool_ksize, _sm_pool_strides, _sm_pool_padding (MaxPool's ksize, strides, padding; a
 *     leading underscore is TF's mark of an attr outside the OpDef). TensorFlow would refuse such a
 *     node; only this rule makes one;
 *   - a zero Pad (H and W only, Const paddings) read only by a VALID NHWC float MaxPool joins it
 *     (fuse_pool_pad, anchored at the MaxPool): one MaxPool, EXPLICIT padding, with this library's
 *     attr _sm_pad_zero (windows past the edge count a 0: nn_pool.c).
 * The fused node is named after the Conv2D / MatMul (errors then name the node they named before)
 * and carries its attrs (T, strides, padding, explicit_paddings, data_format, dilations,
 * use_cudnn_on_gpu / transpose_a, transpose_b) as TF's remapper copies them; TArgs = [T]. When the
 * rewrite driver refuses the whole chain (a control edge, a ref read that would move past an
 * assignment), the longest prefix it allows is fused. Results are those of the unfused nodes to
 * the bit: the kernels run the same loops, with the bias and activation applied as each block of
 * the product is finished.
 *
 * A graph may also carry _FusedConv2D / _FusedMatMul nodes itself (TF's grappler writes them):
 * their fused_ops may be "BiasAdd" (then "Add" for a convolution) then at most one of Relu, Relu6,
 * Elu, LeakyRelu (with leakyrelu_alpha), Sigmoid, Tanh, _MklSwish; anything else fails at load,
 * naming the list. */
#include <stdio.h>
#include <string.h>

#include "graph/synth.h"
#include "ops/nn_internal.h"
#include "runtime/rewrite.h"

static const struct {
  const char *name;
  int act;
} acts[] = {{"Relu", SM_NN_ACT_RELU},        {"Relu6", SM_NN_ACT_RELU6},     {"Elu", SM_NN_ACT_ELU},
            {"LeakyRelu", SM_NN_ACT_LEAKY_RELU}, {"Sigmoid", SM_NN_ACT_SIGMOID}, {"Tanh", SM_NN_ACT_TANH},
            {"_MklSwish", SM_NN_ACT_SWISH}};

static int str_is(const char *s, size_t len, const char *lit) { return strlen(lit) == len && !memcmp(s, lit, len); }
static int op_is(const sm_node *n, const char *op) { return !strcmp(sm__node_op(n), op); }

/* ---- the fused nodes' attrs (prepare) ------------------------------------------------------ */
/* Four entries [1, h, w, 1] of a pool attr into hw. */
static sm_status *pool_four(const sm_node *n, const char *attr, int64_t hw[2]) {
  const int64_t *v;
  size_t cnt;
  sm_status *st = sm__node_attr_ints(n, attr, &v, &cnt);
  if (st) return st;
  if (cnt != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr '%s' must be [1, h, w, 1] with h, w >= 1", attr);
  hw[0] = v[1];
  hw[1] = v[2];
  return NULL;
}

static sm_status *pool_prepare(const sm_node *n, sm__nn_pool_fuse *p) {
  int64_t k[2] = {0, 0}, s[2] = {0, 0};
  const char *pad;
  size_t len;
  sm_status *st = pool_four(n, "_sm_pool_ksize", k);
  if (!st) st = pool_four(n, "_sm_pool_strides", s);
  if (!st) st = sm__node_attr_string(n, "_sm_pool_padding", &pad, &len);
  if (st) return st;
  if (str_is(pad, len, "VALID"))
    p->padding = SM_NN_VALID;
  else if (str_is(pad, len, "SAME"))
    p->padding = SM_NN_SAME;
  else
    return sm_status_new(SM_UNIMPLEMENTED, "fused MaxPool padding '%.*s' is not supported (VALID, SAME)",
                         (int)(len > 32 ? 32 : len), pad);
  if (s[0] < k[0])
    return sm_status_new(SM_UNIMPLEMENTED, "fused MaxPool windows overlap vertically (stride %lld < window %lld)",
                         (long long)s[0], (long long)k[0]);
  p->kh = k[0], p->kw = k[1], p->sh = s[0], p->sw = s[1];
  return NULL;
}

sm_status *sm__nn_fused_prepare(const sm_node *n, int conv, sm__nn_fused *f) {
  memset(f, 0, sizeof *f);
  int dt;
  sm_status *st = sm__node_attr_type(n, "T", &dt);
  if (st) return st;
  if (dt != SM_FLOAT)
    return sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (float only)",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  int64_t nargs, nhost = 0;
  if ((st = sm__node_attr_int(n, "num_args", &nargs))) return st;
  if (conv && sm__node_attr(n, "num_host_args") && (st = sm__node_attr_int(n, "num_host_args", &nhost))) return st;
  const ProtobufCBinaryData *ops;
  size_t nops;
  if ((st = sm__node_attr_strings(n, "fused_ops", &ops, &nops))) return st;
  char list[160];
  size_t at = 0;
  list[0] = 0;
  for (size_t i = 0; i < nops && at < sizeof list - 8; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%.*s", i ? ", " : "",
                           (int)(ops[i].len > 32 ? 32 : ops[i].len), (const char *)ops[i].data);
  int ok = nops >= 1 && str_is((const char *)ops[0].data, ops[0].len, "BiasAdd");
  size_t k = ok ? 1 : 0;
  if (ok && conv && k < nops && str_is((const char *)ops[k].data, ops[k].len, "Add")) f->has_add = 1, k++;
  for (size_t a = 0; ok && k < nops && a < sizeof acts / sizeof *acts; a++)
    if (str_is((const char *)ops[k].data, ops[k].len, acts[a].name)) {
      f->act = acts[a].act;
      k++;
      break;
    }
  if (ok && conv && !f->has_add && k < nops && str_is((const char *)ops[k].data, ops[k].len, "MaxPool"))
    f->has_pool = 1, k++;
  if (!ok || k != nops)
    return sm_status_new(SM_UNIMPLEMENTED,
                         "fused_ops [%s] is not supported: this runtime fuses BiasAdd, %sthen at most one of Relu, "
                         "Relu6, Elu, LeakyRelu, Sigmoid, Tanh, _MklSwish%s",
                         list, conv ? "maybe Add, " : "", conv ? ", then MaxPool (without Add)" : "");
  int want = 1 + f->has_add;
  if (nargs != want || nhost != 0 || sm__node_num_inputs(n) != 2 + want)
    return sm_status_new(SM_INVALID_ARGUMENT, "fused_ops [%s] takes %s, not num_args=%lld%s", list,
                         f->has_add ? "two args (the bias, the addend)" : "one arg (the bias)", (long long)nargs,
                         nhost ? " and host args" : "");
  for (int i = 2; i < 2 + want; i++)
    if (sm__node_input_dtype(n, i) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "the %s (args) is %s, not float", i == 2 ? "bias" : "addend",
                           sm_dtype_name(sm__node_input_dtype(n, i)) ? sm_dtype_name(sm__node_input_dtype(n, i)) : "?");
  if (f->act == SM_NN_ACT_LEAKY_RELU && (st = sm__node_attr_float(n, "leakyrelu_alpha", &f->alpha))) return st;
  if (f->has_pool && (st = pool_prepare(n, &f->pool))) return st;
  return NULL;
}

/* ---- the rules ------------------------------------------------------------------------------ */
/* data_format absent or NHWC */
static int nhwc(const sm_node *n) {
  int nchw = 1;
  sm_status *st = sm__nn_data_format(n, 0, &nchw);
  sm_status_free(st);
  return !st && !nchw;
}

/* A MaxPool the convolution before it can compute (its attrs; a bad one is left to its own prepare). */
static int pool_fusable(const sm_rewrite *rw, int q) {
  const sm_node *n = sm__rewrite_node(rw, q);
  if (!op_is(n, "MaxPool") || sm__node_num_inputs(n) != 1 || sm__node_num_outputs(n) != 1 ||
      sm__node_output_dtype(n, 0) != SM_FLOAT || sm__rewrite_reads_ref(rw, q, 0))
    return 0;
  sm__nn_window w;
  sm_status *st = sm__nn_window_prepare(n, 1, 0, 1, &w);
  sm_status_free(st);
  return !st && !w.nchw && (w.padding == SM_NN_VALID || w.padding == SM_NN_SAME) && w.stride[0] >= w.ksize[0] &&
         w.stride[1] >= 1;
}

#define CONV_RULE "Conv2D+BiasAdd[+Add[+Relu|Relu6]|[+Relu|Relu6|Sigmoid][+MaxPool]] -> _FusedConv2D"
#define MATMUL_RULE "MatMul+BiasAdd[+Relu|Relu6|Sigmoid] -> _FusedMatMul"
#define DW_RULE "DepthwiseConv2dNative+BiasAdd[+Relu|Relu6|Sigmoid] -> _FusedDepthwiseConv2dNative"
#define SWISH_RULE                                                                                      \
  "_FusedConv2D|_FusedDepthwiseConv2dNative|_FusedMatMul (no activation) + Sigmoid + Mul [+ IdentityN] " \
  "(swish) -> the same with _MklSwish"

/* A DepthwiseConv2dNative that _FusedDepthwiseConv2dNative can stand for: float NHWC, padding SAME
 * or VALID (TF's fused op has no explicit_paddings). */
int sm__nn_depthwise_fusable(const sm_node *n) {
  const char *pad;
  size_t len;
  if (!op_is(n, "DepthwiseConv2dNative") || sm__node_num_inputs(n) != 2 || sm__node_num_outputs(n) != 1 ||
      sm__node_output_dtype(n, 0) != SM_FLOAT || !nhwc(n))
    return 0;
  sm_status *st = sm__node_attr_string(n, "padding", &pad, &len);
  sm_status_free(st);
  return !st && (str_is(pad, len, "SAME") || str_is(pad, len, "VALID"));
}

sm_status *sm__nn_fused_node(sm_rewrite *rw, int product, sm_edge a, sm_edge b, sm_edge bias, sm_edge addend,
                             const char *const *ops, int nops, sm_node **out) {
  const sm_node *c = sm__rewrite_node(rw, product);
  int conv = op_is(c, "Conv2D"), dw = op_is(c, "DepthwiseConv2dNative");
  sm_node *f;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(c),
                                conv ? "_FusedConv2D" : dw ? "_FusedDepthwiseConv2dNative" : "_FusedMatMul", &f);
  if (st) return st;
  st = sm__synth_add_input(f, a);
  if (!st) st = sm__synth_add_input(f, b);
  if (!st) st = sm__synth_add_input(f, bias);
  int nargs = addend.node >= 0 ? 2 : 1;
  if (!st && nargs == 2) st = sm__synth_add_input(f, addend);
  static const char *const conv_attrs[] = {"T", "strides", "padding", "explicit_paddings", "data_format", "dilations",
                                           "use_cudnn_on_gpu"};
  static const char *const mm_attrs[] = {"T", "transpose_a", "transpose_b"};
  /* TF's _FusedDepthwiseConv2dNative has no explicit_paddings (the rules fuse SAME / VALID only) */
  static const char *const dw_attrs[] = {"T", "strides", "padding", "data_format", "dilations"};
  const char *const *copy = conv ? conv_attrs : dw ? dw_attrs : mm_attrs;
  size_t ncopy = conv ? sizeof conv_attrs / sizeof *conv_attrs
                 : dw ? sizeof dw_attrs / sizeof *dw_attrs
                      : sizeof mm_attrs / sizeof *mm_attrs;
  for (size_t i = 0; i < ncopy && !st; i++) st = sm__synth_copy_attr(f, copy[i], c, copy[i]);
  if (!st) st = sm__synth_set_strings(f, "fused_ops", ops, (size_t)nops);
  if (!st) st = sm__synth_set_int(f, "num_args", nargs);
  if (!st && conv) {
    int targs[2] = {SM_FLOAT, SM_FLOAT};
    st = sm__synth_set_types(f, "TArgs", targs, (size_t)nargs);
  }
  if (st) {
    sm__synth_free(f);
    return st;
  }
  *out = f;
  return NULL;
}

/* The residual Add after chain[*n - 1]: see nn_internal.h. */
int sm__nn_residual(const sm_rewrite *rw, int *chain, int *n, sm_edge *addend, const char **act) {
  sm_edge v = {chain[*n - 1], 0};
  int r = sm__rewrite_only_reader(rw, v);
  if (r < 0) return 0;
  const sm_node *rn = sm__rewrite_node(rw, r);
  if (!(op_is(rn, "AddV2") || op_is(rn, "Add")) || sm__node_num_inputs(rn) != 2 || sm__node_num_outputs(rn) != 1 ||
      sm__node_output_dtype(rn, 0) != SM_FLOAT || sm__node_input_dtype(rn, 0) != SM_FLOAT ||
      sm__node_input_dtype(rn, 1) != SM_FLOAT)
    return 0;
  sm_edge a = sm__rewrite_input(rw, r, 0), b = sm__rewrite_input(rw, r, 1);
  int va = a.node == v.node && a.index == v.index, vb = b.node == v.node && b.index == v.index;
  if (va == vb || sm__rewrite_reads_ref(rw, r, va ? 1 : 0)) return 0; /* Add(v, v), or a ref read */
  *addend = va ? b : a;
  chain[(*n)++] = r;
  *act = NULL;
  int q = sm__rewrite_only_reader(rw, (sm_edge){r, 0});
  const sm_node *qn = q >= 0 ? sm__rewrite_node(rw, q) : NULL;
  if (qn && (op_is(qn, "Relu") || op_is(qn, "Relu6")) && sm__node_num_inputs(qn) == 1 &&
      sm__node_num_outputs(qn) == 1 && sm__node_output_dtype(qn, 0) == SM_FLOAT) {
    chain[(*n)++] = q;
    *act = sm__node_op(qn);
  }
  return 1;
}

/* chain[0] the product, [1] the BiasAdd, then the Add (addend.node >= 0), the activation (act) and
 * the pool (pool). */
static sm_status *emit(sm_rewrite *rw, const int *chain, int n, sm_edge addend, const char *act, int pool) {
  int conv = op_is(sm__rewrite_node(rw, chain[0]), "Conv2D"), dw = op_is(sm__rewrite_node(rw, chain[0]), "DepthwiseConv2dNative");
  const char *ops[4] = {"BiasAdd"};
  int nops = 1;
  if (addend.node >= 0) ops[nops++] = "Add";
  if (act) ops[nops++] = act;
  if (pool) ops[nops++] = "MaxPool";
  sm_node *f;
  sm_status *st = sm__nn_fused_node(rw, chain[0], sm__rewrite_input(rw, chain[0], 0), sm__rewrite_input(rw, chain[0], 1),
                                    sm__rewrite_input(rw, chain[1], 1), addend, ops, nops, &f);
  if (st) return st;
  if (pool) {
    const sm_node *q = sm__rewrite_node(rw, chain[n - 1]);
    st = sm__synth_copy_attr(f, "_sm_pool_ksize", q, "ksize");
    if (!st) st = sm__synth_copy_attr(f, "_sm_pool_strides", q, "strides");
    if (!st) st = sm__synth_copy_attr(f, "_sm_pool_padding", q, "padding");
  }
  if (!st) st = sm__synth_finish(f);
  if (st) {
    sm__synth_free(f);
    return st;
  }
  return sm__rewrite_replace(rw, conv ? CONV_RULE : dw ? DW_RULE : MATMUL_RULE, chain, n, f);
}

/* Conv2D / MatMul -> BiasAdd [-> Add (conv) [-> Relu | Relu6] | [-> Relu | Relu6] [-> MaxPool]]. */
static sm_status *fuse_contraction(sm_rewrite *rw, int anchor) {
  const sm_node *c = sm__rewrite_node(rw, anchor);
  int conv = op_is(c, "Conv2D");
  if (sm__node_num_outputs(c) != 1 || sm__node_output_dtype(c, 0) != SM_FLOAT || (conv && !nhwc(c))) return NULL;
  if (op_is(c, "DepthwiseConv2dNative") && !sm__nn_depthwise_fusable(c)) return NULL;
  int chain[5] = {anchor}, n = 1;
  int b = sm__rewrite_only_reader(rw, (sm_edge){anchor, 0});
  if (b < 0) return NULL;
  const sm_node *bn = sm__rewrite_node(rw, b);
  sm_edge in0 = sm__rewrite_input(rw, b, 0);
  if (!(op_is(bn, "BiasAddV1") || (op_is(bn, "BiasAdd") && nhwc(bn))) || sm__node_num_inputs(bn) != 2 ||
      sm__node_output_dtype(bn, 0) != SM_FLOAT || in0.node != anchor || in0.index != 0 || sm__rewrite_reads_ref(rw, b, 1))
    return NULL;
  chain[n++] = b;
  const char *act = NULL;
  sm_edge addend = {-1, -1};
  int pool = 0, add = conv && sm__nn_residual(rw, chain, &n, &addend, &act);
  int r = add ? -1 : sm__rewrite_only_reader(rw, (sm_edge){b, 0});
  if (r >= 0) {
    const sm_node *rn = sm__rewrite_node(rw, r);
    if ((op_is(rn, "Relu") || op_is(rn, "Relu6") || op_is(rn, "Sigmoid")) && sm__node_num_inputs(rn) == 1 &&
        sm__node_num_outputs(rn) == 1 &&
        sm__node_output_dtype(rn, 0) == SM_FLOAT) {
      chain[n++] = r;
      act = sm__node_op(rn);
    }
  }
  if (conv && !add) {
    int q = sm__rewrite_only_reader(rw, (sm_edge){chain[n - 1], 0});
    if (q >= 0 && pool_fusable(rw, q)) {
      chain[n++] = q;
      pool = 1;
    }
  }
  /* the longest prefix the driver allows (a control edge or a ref read may stop a later stage) */
  while (n >= 2 && !sm__rewrite_can_fuse(rw, chain, n)) {
    n--;
    if (pool)
      pool = 0;
    else if (act)
      act = NULL;
    else if (add)
      add = 0, addend = (sm_edge){-1, -1};
  }
  return n >= 2 ? emit(rw, chain, n, addend, act, pool) : NULL;
}

/* The zero Pad before a VALID Conv2D or depthwise (Keras' ZeroPadding2D before a stride-2 one):
 * see nn_internal.h. */
sm_status *sm__nn_depthwise_pad(const sm_rewrite *rw, int conv, int *pad_id, int64_t pads[4]) {
  *pad_id = -1;
  const sm_node *c = sm__rewrite_node(rw, conv);
  const char *p;
  size_t len;
  sm_status *st = sm__node_attr_string(c, "padding", &p, &len);
  if (st || !str_is(p, len, "VALID")) {
    sm_status_free(st);
    return NULL;
  }
  sm_edge in = sm__rewrite_input(rw, conv, 0);
  const sm_node *pn = in.node >= 0 ? sm__rewrite_node(rw, in.node) : NULL;
  if (!pn || !op_is(pn, "Pad") || sm__node_num_inputs(pn) != 2 || sm__node_num_outputs(pn) != 1 ||
      sm__node_output_dtype(pn, 0) != SM_FLOAT || sm__rewrite_only_reader(rw, in) != conv ||
      sm__rewrite_reads_ref(rw, in.node, 0))
    return NULL;
  sm_tensor *t;
  if ((st = sm__rewrite_const_value(rw, sm__rewrite_input(rw, in.node, 1), &t)) || !t) return st;
  int ok = sm_tensor_rank(t) == 2 && sm_tensor_dims(t)[0] == 4 && sm_tensor_dims(t)[1] == 2 &&
           (sm_tensor_dtype(t) == SM_INT32 || sm_tensor_dtype(t) == SM_INT64);
  int64_t v[8] = {0};
  for (int i = 0; ok && i < 8; i++) {
    v[i] = sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
    ok = v[i] >= 0 && v[i] <= (1 << 20) && (i < 2 || i > 5 ? v[i] == 0 : 1); /* none over N or C */
  }
  sm_tensor_free(t);
  if (!ok) return NULL;
  for (int i = 0; i < 4; i++) pads[i] = v[2 + i];
  *pad_id = in.node;
  return NULL;
}

/* y = a fused product without an activation (what the rules above or nn_fold.c made, or the graph
 * carried); Sigmoid(y) = s, read only by Mul(y, s) (either order) = z: the swish of Keras /
 * tf.nn.silu (whose Mul(1, y) math_fwd.c has already dropped: that node comes before the Sigmoid).
 * tf.nn.silu's custom gradient then passes z through IdentityN(z, y, beta), whose other outputs
 * inference leaves unread: when none of them is read or fetched the IdentityN joins the chain, so
 * y has no reader left outside it. The product becomes a copy of itself with "_MklSwish" (TF's
 * fused-op name for it) after its fused_ops: the epilogue computes y * sigmoid(y) with the
 * Sigmoid kernel's function (base/vmath.h), the bits of the two nodes. */
static sm_status *fuse_swish(sm_rewrite *rw, int sig) {
  const sm_node *sn = sm__rewrite_node(rw, sig);
  if (sm__node_num_inputs(sn) != 1 || sm__node_num_outputs(sn) != 1 || sm__node_output_dtype(sn, 0) != SM_FLOAT ||
      sm__rewrite_reads_ref(rw, sig, 0))
    return NULL;
  sm_edge y = sm__rewrite_input(rw, sig, 0), z = {sig, 0};
  const sm_node *f = y.node >= 0 ? sm__rewrite_node(rw, y.node) : NULL;
  int conv = f && op_is(f, "_FusedConv2D");
  if (!f || y.index != 0 || sm__node_num_outputs(f) != 1 || sm__node_output_dtype(f, 0) != SM_FLOAT ||
      !(conv || op_is(f, "_FusedDepthwiseConv2dNative") || op_is(f, "_FusedMatMul")))
    return NULL;
  sm__nn_fused fz;
  sm_status *st = sm__nn_fused_prepare(f, conv, &fz);
  if (st || fz.act != SM_NN_ACT_NONE || fz.has_pool) { /* one it cannot run is left to its own prepare */
    sm_status_free(st);
    return NULL;
  }
  int m = sm__rewrite_only_reader(rw, z);
  const sm_node *mn = m >= 0 ? sm__rewrite_node(rw, m) : NULL;
  if (!mn || !op_is(mn, "Mul") || sm__node_num_inputs(mn) != 2 || sm__node_output_dtype(mn, 0) != SM_FLOAT ||
      sm__node_input_dtype(mn, 0) != SM_FLOAT || sm__node_input_dtype(mn, 1) != SM_FLOAT)
    return NULL;
  sm_edge a = sm__rewrite_input(rw, m, 0), b = sm__rewrite_input(rw, m, 1);
  int ay = a.node == y.node && a.index == y.index, by = b.node == y.node && b.index == y.index;
  int az = a.node == z.node && a.index == z.index, bz = b.node == z.node && b.index == z.index;
  if (!((ay && bz) || (az && by)) || sm__rewrite_reads_ref(rw, m, 0) || sm__rewrite_reads_ref(rw, m, 1)) return NULL;
  int chain[4] = {y.node, sig, m}, n = 3;
  int q = sm__rewrite_only_reader(rw, (sm_edge){m, 0});
  const sm_node *qn = q >= 0 ? sm__rewrite_node(rw, q) : NULL;
  if (qn && op_is(qn, "IdentityN") && sm__node_num_inputs(qn) == sm__node_num_outputs(qn) &&
      sm__node_output_dtype(qn, 0) == SM_FLOAT) {
    sm_edge q0 = sm__rewrite_input(rw, q, 0);
    int unread = q0.node == m && q0.index == 0;
    for (int k = 1; unread && k < sm__node_num_outputs(qn); k++) unread = !sm__rewrite_is_used(rw, (sm_edge){q, k});
    if (unread) chain[n++] = q;
  }
  while (n > 3 && !sm__rewrite_can_fuse(rw, chain, n)) n--;
  if (!sm__rewrite_can_fuse(rw, chain, n)) return NULL;
  /* the copy: f's inputs, every attr its OpDef has and this library's extensions, one op more */
  const sm_cgraph *g = sm__rewrite_graph(rw);
  const Tensorflow__OpDef *def = sm__cgraph_op_def(g, sm__node_op(f));
  const ProtobufCBinaryData *ops;
  size_t nops;
  if (!def || (st = sm__node_attr_strings(f, "fused_ops", &ops, &nops)) || nops > 3) {
    sm_status_free(st);
    return NULL;
  }
  char names[4][16];
  const char *list[4];
  for (size_t i = 0; i < nops; i++) { /* BiasAdd, Add: prepare accepted them */
    snprintf(names[i], sizeof names[i], "%.*s", (int)ops[i].len, (const char *)ops[i].data);
    list[i] = names[i];
  }
  list[nops] = "_MklSwish";
  sm_node *nf;
  if ((st = sm__synth_new(g, sm__node_name(f), sm__node_op(f), &nf))) return st;
  for (int i = 0; !st && i < sm__node_num_inputs(f); i++) st = sm__synth_add_input(nf, sm__rewrite_input(rw, y.node, i));
  for (size_t i = 0; !st && i < def->n_attr; i++)
    if (strcmp(def->attr[i]->name, "fused_ops")) st = sm__synth_copy_attr(nf, def->attr[i]->name, f, def->attr[i]->name);
  if (!st) st = sm__synth_copy_attr(nf, "_sm_explicit_paddings", f, "_sm_explicit_paddings");
  if (!st) st = sm__synth_set_strings(nf, "fused_ops", list, nops + 1);
  if (!st) st = sm__synth_finish(nf);
  if (st) {
    sm__synth_free(nf);
    return st;
  }
  return sm__rewrite_replace(rw, SWISH_RULE, chain, n, nf);
}

#define POOL_PAD_RULE "Pad+MaxPool"

/* A zero Pad (H and W only, Const paddings) read only by a VALID NHWC float MaxPool (Keras'
 * ZeroPadding2D before ResNet50's pool1): one MaxPool over the Pad's input, padding EXPLICIT by
 * the pads, with attr _sm_pad_zero: a window that reaches into the padding counts a 0 in its max
 * (nn_pool.c), as it read the padded copy's zeros, without that copy. */
static sm_status *fuse_pool_pad(sm_rewrite *rw, int anchor) {
  const sm_node *mp = sm__rewrite_node(rw, anchor);
  if (sm__node_num_inputs(mp) != 1 || sm__node_num_outputs(mp) != 1 || sm__node_output_dtype(mp, 0) != SM_FLOAT ||
      !nhwc(mp) || sm__node_attr(mp, "_sm_pad_zero"))
    return NULL;
  int pad_id;
  int64_t pads[4];
  sm_status *st = sm__nn_depthwise_pad(rw, anchor, &pad_id, pads);
  if (st || pad_id < 0) return st;
  int chain[2] = {pad_id, anchor};
  if (!sm__rewrite_can_fuse(rw, chain, 2)) return NULL;
  sm_node *nf;
  if ((st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(mp), "MaxPool", &nf))) return st;
  int64_t ep[8] = {0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0};
  st = sm__synth_add_input(nf, sm__rewrite_input(rw, pad_id, 0));
  if (!st) st = sm__synth_copy_attr(nf, "T", mp, "T");
  if (!st) st = sm__synth_copy_attr(nf, "ksize", mp, "ksize");
  if (!st) st = sm__synth_copy_attr(nf, "strides", mp, "strides");
  if (!st) st = sm__synth_copy_attr(nf, "data_format", mp, "data_format");
  if (!st) st = sm__synth_set_string(nf, "padding", "EXPLICIT");
  if (!st) st = sm__synth_set_ints(nf, "explicit_paddings", ep, 8);
  if (!st) st = sm__synth_set_bool(nf, "_sm_pad_zero", 1);
  if (!st) st = sm__synth_finish(nf);
  if (st) {
    sm__synth_free(nf);
    return st;
  }
  return sm__rewrite_replace(rw, POOL_PAD_RULE, chain, 2, nf);
}

const sm_rewrite_rule sm_rewrites_nn[] = {
    {"Sigmoid", SWISH_RULE, fuse_swish},
    {"MaxPool", POOL_PAD_RULE, fuse_pool_pad},
    {"Conv2D", CONV_RULE, fuse_contraction},
    {"MatMul", MATMUL_RULE, fuse_contraction},
    {"DepthwiseConv2dNative", DW_RULE, fuse_contraction},
    {0},
};
