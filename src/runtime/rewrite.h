/* rewrite.h - graph rewrites at plan time: rules that replace a chain of nodes with one new node
 * (fusion: Conv2D + BiasAdd + Relu -> _FusedConv2D, as TensorFlow's grappler remapper does).
 *
 * Plan building calls sm__rewrite_run once, on the pruned node order, before any slot or step
 * exists. It offers every node of the order, in order, to the rules whose anchor op it has; a rule
 * that matches builds a synthetic node (graph/synth.h) and hands it to sm__rewrite_replace, which
 * removes the chain from the order and puts the new node where the chain's last node was. The
 * result is a new order of node ids, original (< sm__cgraph_num_nodes) or synthetic (from
 * sm__cgraph_num_nodes up, owned by the result), and a map from every original edge a rule removed
 * to the edge that now carries its value. Plan code keyed by node id sizes its arrays by
 * sm__rewrite_num_ids, looks nodes up with sm__rewrite_node, and resolves every edge it reads with
 * sm__rewrite_edge (after checking the feeds: a fed edge is never rewritten).
 *
 * What the driver guarantees, whatever a rule does (sm__rewrite_can_fuse is the check):
 *   - a fed or fetched value is never fused away: no output of a chain node is fed, and only the
 *     chain's last node may have a fetched output (the new node then produces it);
 *   - every value a chain node other than the last produces is read by chain nodes only;
 *   - no chain node but the last is a control input of another node, except a pure variable read
 *     (_SmReadVariable without control inputs): that control edge goes with it (it ordered a read
 *     only; nodes run in the order, and the check below keeps writes out of its way); the new node
 *     takes the union
 *     of the chain's control inputs, all already run where it stands (it is where the last node
 *     was), and a control edge from the last node is one from the new node (plan.c follows it
 *     through sm__rewrite_edge of the last node's output 0: TF2 functions' automatic control
 *     dependencies make every ReadVariableOp one);
 *   - a read of a ref (TF1 variable) input, or a pure variable read in the chain (whose variable
 *     the new node then reads itself: nn_fold.c's _SmFoldBN), is never moved past a node that
 *     could assign a variable (a stateful one other than such a read, or one with a ref input:
 *     Assign, AssignAdd, ...): the new node reads what the chain read, but at the last node's place;
 *   - the new node's inputs are all computed before its place; its outputs match the last node's
 *     (it may have fewer when nothing reads or fetches the others: FusedBatchNorm's statistics).
 *
 * Rules belong to their op family: src/ops/<family>*.c defines `const sm_rewrite_rule
 * sm_rewrites_<family>[]`, ended by an entry with op == NULL, and the build lists the families
 * (registry_families.c, generated as for kernel tables). Rules are offered in family order, then
 * table order. A rule never sees a node that is already fused away. */
#ifndef SM_RUNTIME_REWRITE_H
#define SM_RUNTIME_REWRITE_H
#include "graph/graph.h"
#include "savedmodel/status.h"

typedef struct sm_rewrite sm_rewrite;

typedef struct sm_rewrite_rule {
  const char *op;   /* anchor: the op type of the node a match starts from */
  const char *name; /* what it does, for messages: "Conv2D+BiasAdd[+Relu|Relu6][+MaxPool]" */
  /* Looks at node `anchor`; when the pattern matches and sm__rewrite_can_fuse allows it, builds the
   * new node and calls sm__rewrite_replace. "No match" is NULL with nothing replaced; an error (out
   * of memory) fails the plan. */
  sm_status *(*apply)(sm_rewrite *rw, int anchor);
} sm_rewrite_rule;

/* ---- for plan building --------------------------------------------------------------------- */
/* Runs every registered rule over `order` (norder node ids, topological, as sm__cgraph_prune gives
 * it), with the plan's fed and fetched edges. *out is owned by the caller (sm__rewrite_free) and
 * must outlive everything that holds its nodes (kernel states may borrow their attrs). */
sm_status *sm__rewrite_run(const sm_cgraph *g, const int *order, int norder, const sm_edge *feeds, int nfeeds,
                          const sm_edge *fetches, int nfetches, sm_rewrite **out);
/* The same with the given rule tables only (NULL-terminated list of tables), for tests. */
sm_status *sm__rewrite_run_rules(const sm_cgraph *g, const int *order, int norder, const sm_edge *feeds, int nfeeds,
                                const sm_edge *fetches, int nfetches, const sm_rewrite_rule *const *tables,
                                sm_rewrite **out);
void sm__rewrite_free(sm_rewrite *rw); /* NULL-safe */

/* The rewritten order (owned by rw). */
const int *sm__rewrite_order(const sm_rewrite *rw, int *n);
/* Node ids are below this: the graph's nodes, then the synthetic ones. */
int sm__rewrite_num_ids(const sm_rewrite *rw);
/* The node of an id (original or synthetic); NULL when out of range. */
const sm_node *sm__rewrite_node(const sm_rewrite *rw, int id);
/* The edge that carries e's value now: e itself unless a rule removed it; {-1, -1} when the value
 * no longer exists (an intermediate of a fused chain: nothing outside the chain read it). */
sm_edge sm__rewrite_edge(const sm_rewrite *rw, sm_edge e);
/* How many synthetic nodes the rules made. */
int sm__rewrite_num_synthetic(const sm_rewrite *rw);

/* ---- for rules ----------------------------------------------------------------------------- */
const sm_cgraph *sm__rewrite_graph(const sm_rewrite *rw);
/* Data input i of node id, resolved with sm__rewrite_edge. */
sm_edge sm__rewrite_input(const sm_rewrite *rw, int id, int i);
/* The node that reads e, when exactly one node of the current order reads it, exactly once, and e
 * is neither fed nor fetched; else -1. */
int sm__rewrite_only_reader(const sm_rewrite *rw, sm_edge e);
/* 1 when node id's input i is a read of a ref (TF1 variable) value: the producer's output has a
 * ref dtype and the input is declared a plain one. */
int sm__rewrite_reads_ref(const sm_rewrite *rw, int id, int i);
/* 1 when the chain (n node ids in data order: each reads a value of the one before, the last
 * produces what the new node will) may be replaced, per the guarantees above. */
int sm__rewrite_can_fuse(const sm_rewrite *rw, const int *chain, int n);
/* Replaces the chain with `fused` (a finished synthetic node whose inputs are edges of the graph;
 * rw takes it over, also on failure): it takes the last chain node's place in the order, its
 * outputs carry the last node's, and the other chain nodes' outputs are gone. Fails (SM_INTERNAL,
 * naming `rule`) when the chain or the node breaks a guarantee: a rule's bug. */
sm_status *sm__rewrite_replace(sm_rewrite *rw, const char *rule, const int *chain, int n, sm_node *fused);
/* The same with k new nodes: nodes[k - 1] replaces the chain as above; nodes[0 .. k-2] are helpers
 * placed just before it, in this order (BatchNorm folding: the folded filter, then the fused
 * convolution that reads it). A node may read outputs of the ones before it: the id node j will
 * have is sm__rewrite_next_id(rw) + j. Each node gets the chain's control inputs. rw takes all k
 * over, also on failure. */
sm_status *sm__rewrite_replace_n(sm_rewrite *rw, const char *rule, const int *chain, int n, sm_node **nodes, int k);
/* Drops node id from the order: its one output's readers read its input `in` instead (an
 * Identity). Allowed (sm__rewrite_can_forward) when the output is neither fed nor fetched and has
 * the input's dtype (no ref), the input is not a ref read (a TF1 variable read snapshots the value
 * where it stands), and the node has no control inputs and is no node's control input. Fails
 * (SM_INTERNAL, naming `rule`) otherwise. */
int sm__rewrite_can_forward(const sm_rewrite *rw, int id, int in);
sm_status *sm__rewrite_forward(sm_rewrite *rw, const char *rule, int id, int in);
/* The id the next synthetic node handed to sm__rewrite_replace[_n] will have. */
int sm__rewrite_next_id(const sm_rewrite *rw);
/* 1 when a node of the current order reads edge e (resolved) or it is fetched. */
int sm__rewrite_is_used(const sm_rewrite *rw, sm_edge e);
/* 1 when edge e (resolved) is fed. */
int sm__rewrite_is_fed(const sm_rewrite *rw, sm_edge e);
/* The value of edge e when it is the output of a Const that is not fed (*value, the caller frees
 * it), else *value NULL. An error only when decoding the value runs out of memory: the rule passes
 * it up and the load fails, rather than reading it as "not a constant" and giving another plan. */
sm_status *sm__rewrite_const_value(const sm_rewrite *rw, sm_edge e, sm_tensor **value);

#endif
