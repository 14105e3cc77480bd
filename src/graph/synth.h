/* synth.h - synthetic nodes: sm_nodes that are not in the GraphDef, made by graph rewrites.
 *
 * A rewrite (src/runtime/rewrite.h; the rules live with their ops, e.g. src/ops/nn_fuse.c) replaces
 * a chain of compiled nodes with one node of another op (Conv2D + BiasAdd + Relu -> _FusedConv2D).
 * That node is built here: a name, an op that has an OpDef (the graph's stripped_op_list or the
 * built-in table), data inputs (edges of the graph, in the OpDef's flat input order), control
 * inputs, and attrs, copied from existing nodes or set here. sm__synth_finish then fills every attr
 * still missing from the OpDef's defaults and derives the input and output dtypes from the OpDef
 * exactly as compilation does. The result is an sm_node like any other: sm_node_* and the typed
 * attr getters work on it unchanged, so a kernel's prepare cannot tell it from a compiled node.
 *
 * Ownership: the creator owns the node until it hands it on (sm__rewrite_replace takes it) and frees
 * it with sm__synth_free, never with anything else. Every attr value is a deep copy owned by the node
 * (protobuf-c messages built in memory), so it outlives the nodes it was copied from; names and
 * lists given are copied too. The node borrows only its OpDef, which lives as long as the graph. */
#ifndef SM_GRAPH_SYNTH_H
#define SM_GRAPH_SYNTH_H
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* A new node named `name` of op `op` with no inputs and no attrs. Fails when g knows no OpDef for
 * `op`. */
sm_status *sm__synth_new(const sm_cgraph *g, const char *name, const char *op, sm_node **out);
void sm__synth_free(sm_node *n); /* NULL-safe; only for nodes made by sm__synth_new */

/* Appends a data input (in the OpDef's flat order) / a control input (node index; a repeat is
 * ignored). */
sm_status *sm__synth_add_input(sm_node *n, sm_edge e);
sm_status *sm__synth_add_control(sm_node *n, int node);

/* Attr `name` = from's attr `from_name` (deep copy). When `from` has no such attr nothing is set
 * (sm__synth_finish then fills the OpDef's default). */
sm_status *sm__synth_copy_attr(sm_node *n, const char *name, const sm_node *from, const char *from_name);
/* Attr setters; each replaces an attr of that name already set. */
sm_status *sm__synth_set_int(sm_node *n, const char *name, int64_t v);
sm_status *sm__synth_set_float(sm_node *n, const char *name, float v);
sm_status *sm__synth_set_bool(sm_node *n, const char *name, int v);
sm_status *sm__synth_set_type(sm_node *n, const char *name, int dtype);
sm_status *sm__synth_set_string(sm_node *n, const char *name, const char *s);
sm_status *sm__synth_set_ints(sm_node *n, const char *name, const int64_t *v, size_t count);
sm_status *sm__synth_set_types(sm_node *n, const char *name, const int *dtypes, size_t count);
sm_status *sm__synth_set_strings(sm_node *n, const char *name, const char *const *s, size_t count);

/* Completes the node: the OpDef's defaults for the attrs not set, each attr set checked against
 * the kind its OpDef declares, the input and output dtypes from the OpDef, and the number of data
 * inputs added checked against the OpDef's. Errors name the node and the op. Call once, after the
 * inputs and attrs and before anything reads the node. */
sm_status *sm__synth_finish(sm_node *n);

#endif
