/* graph.h - the compiled graph: a GraphDef and its function library as one flat array of nodes.
 *
 * The graph layer turns a MetaGraphDef into an sm_cgraph: every node of the GraphDef, plus the
 * bodies of every function reached through StatefulPartitionedCall / PartitionedCall, inlined
 * (body nodes are named "<call node>/<body node>"; the call node itself stays, turned into an
 * "IdentityN" whose data inputs are the body's return values and whose control inputs are the
 * body's control_ret nodes (every stateful body node when the FunctionDef lists none), so that
 * "StatefulPartitionedCall:0" in a signature and "^StatefulPartitionedCall" in an init op keep
 * meaning what they meant; body references to a function argument become the call's input edge), with
 *   - every input resolved to a (node, output index) pair (FunctionDef "node:out_arg:k" and
 *     GraphDef "node:k" forms both), control inputs kept apart;
 *   - every attr the node omits filled from its OpDef's default (stripped_op_list first, then the
 *     built-in OpDefs of src/graph/op_defs.c), function-body attr placeholders substituted;
 *   - the dtype of every output (ref dtypes, DT_*_REF = dtype + 100, kept as TF has them) and of
 *     every input as the node's OpDef declares it;
 *   - every dangling input, unknown op (no OpDef at all), cycle, or recursive call reported with
 *     the node's name.
 * It never runs anything and never touches files. The runtime prunes it per feeds/fetches
 * (sm__cgraph_prune) and looks kernels up by sm__node_op().
 *
 * Ownership: an sm_cgraph owns its nodes; it borrows the MetaGraphDef it was compiled from (attrs
 * point into it), which must outlive it. Everything here is read-only after compilation, so many
 * threads may use one sm_cgraph at once. */
#ifndef SM_GRAPH_GRAPH_H
#define SM_GRAPH_GRAPH_H
#include <stddef.h>
#include <stdint.h>

#include "meta_graph.pb-c.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

typedef struct sm_cgraph sm_cgraph;
typedef struct sm_node sm_node;

/* An output of a node: node index in the graph, output index (flat, over all output args). */
typedef struct sm_edge {
  int node;
  int index;
} sm_edge;

/* A TF1 loop frame (tf.compat.v1.while_loop) as the graph layer turns it into one node of op
 * "_TF1Loop" (frames.c): the node's inputs are the loop vars' initial values (nvars), then the
 * invariants' (ninv); its outputs the loop vars at exit. The edges name what the node's kernel
 * feeds and fetches to compile cond and body as plans over the same graph: cond feeds merge_out
 * and inv_out and fetches pred; body feeds body_in, merge_out and inv_out, fetches next_in and
 * runs next_ctl (node indices) as targets. */
typedef struct sm_frame {
  const char *name; /* frame_name */
  int nvars, ninv;
  sm_edge *enter_in;  /* nvars + ninv: the values entering the frame */
  sm_edge *merge_out; /* per loop var: Merge:0 (the value each iteration starts with) */
  sm_edge *body_in;   /* per loop var: Switch:1 (the same value, where the body reads it) */
  sm_edge *next_in;   /* per loop var: the NextIteration's input (the body's result) */
  sm_edge *inv_out;   /* per invariant: Enter:0 */
  sm_edge pred;       /* LoopCond's input */
  int *next_ctl;
  int nnext_ctl;
  char *error; /* a refused frame: why */
} sm_frame;

/* ---- the load budget (budget.c) -------------------------------------------------------------
 * What loading may materialise, proportional to the export's files (the runtime sets the limits:
 * sm_load_options.max_graph_nodes / max_load_bytes, defaults from the file sizes): nodes after
 * inlining, and bytes of compiled graphs (nodes, names, edges) and of decoded constants. A
 * compilation (sm__cgraph_compile, sm__cgraph_compile_function) charges the budget current on its
 * thread, and its graph gives the charge back when freed; plan building makes the graph's budget
 * current around every kernel prepare, where Const charges its tensor (given back with the plan).
 * With check_only (validate), Const checks its TensorProto without materialising it: such plans
 * are for checking, never run. */
typedef struct sm_load_budget {
  int64_t max_nodes; /* 0: no limit but the hard one (4M nodes) */
  int64_t max_bytes; /* 0: no limit */
  int check_only;
  int64_t nodes, bytes; /* in use (atomic) */
} sm_load_budget;
/* Makes b the calling thread's current budget (NULL: none); returns the one it replaces. */
sm_load_budget *sm__load_budget_swap(sm_load_budget *b);
sm_load_budget *sm__load_budget_current(void);
/* Takes nodes and bytes (b NULL: nothing to do), or refuses with SM_RESOURCE_EXHAUSTED naming
 * `what` (cut to 200 bytes; NULL: the caller prefixes the message) and the limit, taking nothing. */
sm_status *sm__load_budget_take(sm_load_budget *b, int64_t nodes, int64_t bytes, const char *what);
/* The same check for bytes, without taking them. */
sm_status *sm__load_budget_room(const sm_load_budget *b, int64_t bytes, const char *what);
void sm__load_budget_give(sm_load_budget *b, int64_t nodes, int64_t bytes);

/* Compile mg's graph_def + library under the current load budget. *out is owned by the caller
 * (sm__cgraph_free). */
sm_status *sm__cgraph_compile(const Tensorflow__MetaGraphDef *mg, sm_cgraph **out);
void sm__cgraph_free(sm_cgraph *g); /* NULL-safe */
/* The MetaGraphDef g was compiled from. */
const Tensorflow__MetaGraphDef *sm__cgraph_meta_graph(const sm_cgraph *g);

/* One function of mg's library as a graph of its own (the body a While/If/map_fn kernel runs as a
 * sub-plan): every flat input element is an "_Arg" node with one output (named after the input
 * arg, "x"; "x_0", "x_1", ... for a list arg), the body's nodes keep their FunctionDef names, calls
 * inside it are inlined as sm__cgraph_compile does (recursion refused). Arg dtypes and the body's
 * attr placeholders are bound from, in order: the attr entries of the caller's func-valued attr
 * that names fname, the caller's own attrs (a `type_attr: "T"` arg takes the caller's "T"), and
 * the signature's defaults. caller may be NULL; its attrs are borrowed, so caller (its graph) and
 * mg must outlive *out. Errors name the function. sm__cgraph_all_ops is empty for such a graph. */
sm_status *sm__cgraph_compile_function(const Tensorflow__MetaGraphDef *mg, const char *fname, const sm_node *caller,
                                      sm_cgraph **out);
/* Of a graph made by sm__cgraph_compile_function (NULL / 0 for any other): the function's name;
 * the _Arg outputs to feed, the return values to fetch (both flat, in signature order) and the
 * control outputs to run as targets (its control_ret nodes, or every stateful body node when the
 * FunctionDef lists none, as inlining does). Owned by g. */
const char *sm__cgraph_function_name(const sm_cgraph *g);
void sm__cgraph_function_args(const sm_cgraph *g, const sm_edge **args, int *n);
void sm__cgraph_function_rets(const sm_cgraph *g, const sm_edge **rets, int *n);
void sm__cgraph_function_control_rets(const sm_cgraph *g, const int **nodes, int *n);

int sm__cgraph_num_nodes(const sm_cgraph *g);
const sm_node *sm__cgraph_node(const sm_cgraph *g, int i);
/* Index of the node with this (post-inlining) name, or -1. */
int sm__cgraph_find(const sm_cgraph *g, const char *name);
/* Parse a tensor name "node", "node:k" (and "^node" for targets: *is_control = 1) and resolve it.
 * Errors say which name and why (no such node, output k out of range). */
sm_status *sm__cgraph_resolve(const sm_cgraph *g, const char *tensor_name, sm_edge *out, int *is_control);

/* Pruning: which nodes must run to compute `fetches` and the control `targets`, when `feeds` are
 * given (a fed output is not computed, and its node is not needed for it). Writes the needed node
 * indices, in a topological order (every node after its data and control inputs), to a new array
 * *order (caller frees with free()) of *n entries. Each node appears once. */
sm_status *sm__cgraph_prune(const sm_cgraph *g, const sm_edge *feeds, int nfeeds, const sm_edge *fetches,
                           int nfetches, const int *targets, int ntargets, int **order, int *n);

/* ---- one node (what kernels see in prepare) ------------------------------------------------- */
const char *sm__node_name(const sm_node *n);
const char *sm__node_op(const sm_node *n);
const char *sm__node_device(const sm_node *n); /* "" when none; informational only */
int sm__node_num_inputs(const sm_node *n);     /* data inputs, flat over all input args */
sm_edge sm__node_input(const sm_node *n, int i);
/* The dtype input i has as the OpDef declares it (a ref dtype for ref args, e.g. Assign.ref). */
int sm__node_input_dtype(const sm_node *n, int i);
int sm__node_num_control_inputs(const sm_node *n);
int sm__node_control_input(const sm_node *n, int i); /* node index */
int sm__node_num_outputs(const sm_node *n);
int sm__node_output_dtype(const sm_node *n, int i); /* ref dtypes kept (>= 100) */
/* Flat index range of the named input/output arg of the node's OpDef (for list args). -1 if the
 * op has no such arg. */
int sm__node_input_arg(const sm_node *n, const char *arg, int *count);
int sm__node_output_arg(const sm_node *n, const char *arg, int *count);
/* A "_TF1Loop" node's frame, NULL for any other node. */
const sm_frame *sm__node_frame(const sm_node *n);
/* A node of a TF1 frame that could not be turned into a loop: why (NULL otherwise). */
const char *sm__node_cf_error(const sm_node *n);
/* Stateful per its OpDef (is_stateful), e.g. VarHandleOp, AssignVariableOp, RandomUniform. */
int sm__node_is_stateful(const sm_node *n);

/* Attrs, after defaults and substitution. sm__node_attr returns NULL when the node has no such attr.
 * The typed getters fail, naming node and attr, when it is absent or of another kind. Strings and
 * lists are borrowed from the graph. */
const Tensorflow__AttrValue *sm__node_attr(const sm_node *n, const char *name);
sm_status *sm__node_attr_int(const sm_node *n, const char *name, int64_t *v);
sm_status *sm__node_attr_float(const sm_node *n, const char *name, float *v);
sm_status *sm__node_attr_bool(const sm_node *n, const char *name, int *v);
sm_status *sm__node_attr_type(const sm_node *n, const char *name, int *dtype);
sm_status *sm__node_attr_string(const sm_node *n, const char *name, const char **s, size_t *len);
sm_status *sm__node_attr_ints(const sm_node *n, const char *name, const int64_t **v, size_t *count);
sm_status *sm__node_attr_types(const sm_node *n, const char *name, const int **v, size_t *count);
/* list(string): each entry's bytes (not NUL-terminated) and length. */
sm_status *sm__node_attr_strings(const sm_node *n, const char *name, const ProtobufCBinaryData **v, size_t *count);
/* rank -1 = unknown rank; dims of -1 = unknown. */
sm_status *sm__node_attr_shape(const sm_node *n, const char *name, int *rank, int64_t dims[SM_MAX_RANK]);
/* A tensor attr decoded (TF's TensorProto rules: tensor_content first, last typed value repeats,
 * none = zeros, half_val for fp16/bf16 bits). *out is new and owned by the caller. */
sm_status *sm__node_attr_tensor(const sm_node *n, const char *name, sm_tensor **out);

/* Decode a TensorProto the same way (exposed for the loader and tests). Refused before anything
 * is allocated when its tensor does not fit what the current load budget has left. */
sm_status *sm__tensor_from_proto(const Tensorflow__TensorProto *p, sm_tensor **out);
/* Every check sm__tensor_from_proto makes (dtype, shape, tensor_content's size, a typed field for
 * the dtype; typed values past the elements are ignored, as TF ignores them), allocating nothing;
 * *bytes = what the tensor would take (elements, plus string bytes). */
sm_status *sm__tensor_proto_check(const Tensorflow__TensorProto *p, int64_t *bytes);
/* The budget g was compiled under (NULL: none). */
sm_load_budget *sm__cgraph_budget(const sm_cgraph *g);

/* ---- OpDefs ---------------------------------------------------------------------------------- */
/* The OpDef this graph uses for `op` (stripped_op_list first, then built-ins), or NULL. */
const Tensorflow__OpDef *sm__cgraph_op_def(const sm_cgraph *g, const char *op);
/* Every distinct op type in the MetaGraph, including function bodies that are never called, sorted;
 * for `savedmodel scan`. The array is owned by g. */
const char *const *sm__cgraph_all_ops(const sm_cgraph *g, int *count);

#endif
