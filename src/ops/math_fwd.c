/* math_fwd.c - what the math family drops at plan time: the graph rewrite rule (sm_rewrites_math,
 * run by the plan's rewrite pass, src/runtime/rewrite.h) that takes a multiplication by a constant
 * one out of the order. TF's tf.nn.silu (Keras 3's "swish", EfficientNet's activation) computes
 * x * sigmoid(beta * x) with beta a Const 1.0, so every activation pays a whole pass over its
 * tensor for Mul(beta, x). A float or double Mul whose one operand is a rank-0 Const (not fed) of
 * value exactly 1 has the other operand's shape and dtype, and x * 1 is x in IEEE arithmetic (signed
 * zeros, infinities and denormals included; a NaN stays a NaN): its readers read x itself.
 * sm__rewrite_forward refuses what must stay (a fetched or fed output, control edges, a TF1 ref
 * read), as for array_fwd.c's pass-through nodes. */
#include "base/tensor_internal.h"
#include "graph/graph.h"
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

const sm_rewrite_rule sm_rewrites_math[] = {
    {"Mul", ONE_RULE, drop_mul_one},
    {0},
};
