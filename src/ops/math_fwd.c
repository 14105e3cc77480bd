/* math_fwd.c - what the math family drops at plan time: the graph rewrite rules (sm_rewrites_math,
 * run by the plan's rewrite pass, src/runtime/rewrite.h) that take a multiplication by a constant
 * one out of the order, and an attention's scale into its Softmax (below). TF's tf.nn.silu (Keras 3's "swish", EfficientNet's activation) computes
 * x * sigmoid(beta * x) with beta a Const 1.0, so every activation pays a whole pass over its
 * tensor for Mul(beta, x). A float or double Mul whose one operand is a rank-0 Const (not fed) of
 * value exactly 1 has the other operand's shape and dtype, and x * 1 is x in IEEE arithmetic (signed
 * zeros, infinities and denormals included; a NaN stays a NaN): its readers read x itself.
 * sm__rewrite_forward refuses what must stay (a fetched or fed output, control edges, a TF1 ref
 * read), as for array_fwd.c's pass-through nodes.
 *
 * Also the attention scale folded into the Softmax (SCALE_RULE, anchored at the Softmax): Keras'
 * MultiHeadAttention computes Softmax(Mul(Einsum(query, key), 1/sqrt(key_dim))), a whole pass over
 * the scores (batch x heads x T x S floats) for the Mul. A float Mul whose one operand is a rank-0
 * Const (not fed) and whose only reader is a Softmax becomes one _SmScaledSoftmax(x, scale), which
 * computes x * scale row by row into its output and takes the softmax there (math_unary.c): the
 * same float products, so the same bits. */
#include <string.h>

#include "base/tensor_internal.h"
#include "graph/graph.h"
#include "graph/synth.h"
#include "runtime/rewrite.h"

#define ONE_RULE "Mul(x, Const 1) | Mul(Const 1, x) -> x"

/* Whether edge e is a rank-0 Const of dtype dt and value 1, not fed. */
static sm_status *is_one(const sm_rewrite *rw, sm_edge e, int dt, int *ok) {
  *ok = 0;
  const sm_node *n = sm__rewrite_node(rw, e.node); /* NULL for e.node < 0 */
  if (!n || sm__node_output_dtype(n, 0) != dt) return NULL;
  sm_tensor *t;
  sm_status *st = sm__rewrite_const_value(rw, e, &t);
  if (st || !t) return st;
  if (sm_tensor_rank(t) == 0 && sm_tensor_dtype(t) == dt)
    *ok = dt == SM_FLOAT ? *(const float *)sm_tensor_data(t) == 1.0f : *(const double *)sm_tensor_data(t) == 1.0;
  sm_tensor_free(t);
  return NULL;
}

static sm_status *drop_mul_one(sm_rewrite *rw, int id) {
  const sm_node *n = sm__rewrite_node(rw, id);
  int dt = sm__node_output_dtype(n, 0);
  if (sm__node_num_inputs(n) != 2 || sm__node_num_outputs(n) != 1 || (dt != SM_FLOAT && dt != SM_DOUBLE)) return NULL;
  for (int c = 0; c < 2; c++) { /* c: the constant's side */
    int ok;
    sm_status *st = is_one(rw, sm__rewrite_input(rw, id, c), dt, &ok);
    if (st) return st;
    if (ok && sm__node_input_dtype(n, 1 - c) == dt && sm__rewrite_can_forward(rw, id, 1 - c))
      return sm__rewrite_forward(rw, ONE_RULE, id, 1 - c);
  }
  return NULL;
}

#define SCALE_RULE "Mul(x, Const c) | Mul(Const c, x) + Softmax -> _SmScaledSoftmax(x, scale c)"

static sm_status *fold_softmax_scale(sm_rewrite *rw, int id) {
  const sm_node *sm = sm__rewrite_node(rw, id);
  if (sm__node_num_inputs(sm) != 1 || sm__node_output_dtype(sm, 0) != SM_FLOAT) return NULL;
  sm_edge me = sm__rewrite_input(rw, id, 0);
  const sm_node *mul = sm__rewrite_node(rw, me.node);
  if (!mul || me.index != 0 || strcmp(sm__node_op(mul), "Mul") || sm__node_num_inputs(mul) != 2 ||
      sm__node_output_dtype(mul, 0) != SM_FLOAT || sm__rewrite_only_reader(rw, me) != id)
    return NULL;
  for (int c = 0; c < 2; c++) { /* c: the constant's side */
    sm_tensor *t = NULL;
    sm_edge ce = sm__rewrite_input(rw, me.node, c);
    const sm_node *cn = sm__rewrite_node(rw, ce.node);
    if (!cn || sm__node_output_dtype(cn, ce.index) != SM_FLOAT) continue;
    sm_status *st = sm__rewrite_const_value(rw, ce, &t);
    if (st) return st;
    if (!t) continue;
    int ok = sm_tensor_rank(t) == 0 && sm_tensor_dtype(t) == SM_FLOAT;
    float scale = ok ? *(const float *)sm_tensor_data(t) : 0;
    sm_tensor_free(t);
    if (!ok || sm__node_input_dtype(mul, 1 - c) != SM_FLOAT || sm__rewrite_reads_ref(rw, me.node, 1 - c)) continue;
    int chain[2] = {me.node, id};
    if (!sm__rewrite_can_fuse(rw, chain, 2)) return NULL;
    sm_node *f = NULL;
    st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm), "_SmScaledSoftmax", &f);
    if (!st) st = sm__synth_add_input(f, sm__rewrite_input(rw, me.node, 1 - c));
    if (!st) st = sm__synth_set_type(f, "T", SM_FLOAT);
    if (!st) st = sm__synth_set_float(f, "scale", scale);
    if (!st) st = sm__synth_finish(f);
    if (st) {
      sm__synth_free(f);
      return st;
    }
    return sm__rewrite_replace(rw, SCALE_RULE, chain, 2, f);
  }
  return NULL;
}

const sm_rewrite_rule sm_rewrites_math[] = {
    {"Mul", ONE_RULE, drop_mul_one},
    {"Softmax", SCALE_RULE, fold_softmax_scale},
    {0},
};
