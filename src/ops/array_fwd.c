/* array_fwd.c - what the array family drops at plan time: the graph rewrite rule (sm_rewrites_array,
 * run by the plan's rewrite pass, src/runtime/rewrite.h) that takes pass-through nodes out of the
 * order. Identity, Snapshot, StopGradient and PreventGradient hand their input on unchanged at
 * inference (array.c runs them as a forward of the reference), so their readers may read the input
 * itself: one step less per node, and a chain (Identity of an Identity, as tf.function outputs and
 * Keras exports are full of) goes in one pass. sm__rewrite_forward refuses what must stay: an
 * output that is fetched or fed, a node with control inputs or that is a control input (Identity
 * as a control pivot or ordering a read after an assignment), a TF1 ref read (Identity of a
 * VariableV2 snapshots the value where it stands). */
#include <string.h>

#include "runtime/rewrite.h"

#define DROP_RULE "Identity|Snapshot|StopGradient|PreventGradient -> its input"

static sm_status *drop_pass_through(sm_rewrite *rw, int id) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (sm__node_num_inputs(n) != 1 || !sm__rewrite_can_forward(rw, id, 0)) return NULL;
  return sm__rewrite_forward(rw, DROP_RULE, id, 0);
}

const sm_rewrite_rule sm_rewrites_array[] = {
    {"Identity", DROP_RULE, drop_pass_through},
    {"Snapshot", DROP_RULE, drop_pass_through},
    {"StopGradient", DROP_RULE, drop_pass_through},
    {"PreventGradient", DROP_RULE, drop_pass_through},
    {0},
};
