/* kernel.h - what a kernel is, and what it may ask of the runtime while it runs.
 *
 * A kernel implements one op type. `prepare` runs once when a plan is built (at load): it reads
 * the node's attrs (graph.h accessors) into a private state struct, checks them, and fails with a
 * message naming what is wrong; `compute` runs on every execution with that state (read-only: many
 * threads run one plan at once) and an sm_kctx that gives inputs and takes outputs. Kernels never
 * read attrs by name in compute, never open a file but through sm__kctx_open_file (which confines
 * paths to the export directory and opens regular files only; RestoreV2 hands it to the bundle
 * reader), and keep no global state.
 *
 * Families register a table each (src/ops/<family>.c defines `const sm_kernel sm_kernels_<family>[]`,
 * ended by an entry with op == NULL); src/runtime/registry.c lists the families. Fusion is not the
 * executor's business: a family's graph rewrite rules (rewrite.h) replace a chain such as Conv2D +
 * BiasAdd + Relu with one node (_FusedConv2D) whose kernel reads what it fuses from attrs in prepare.
 *
 * Values: inputs are borrowed (const: never write them). Outputs are new tensors the kernel makes
 * with sm__kctx_alloc_output, or existing ones it passes on with sm__kctx_forward / sm__kctx_set_output
 * (e.g. Identity, Reshape through sm_tensor_view). To update in place, a kernel checks
 * sm_tensor_is_shared and copies when shared.
 *
 * Ref dtypes (TF1 VariableV2): an input whose declared dtype is a ref dtype (sm__node_input_dtype >=
 * 100, e.g. Assign's `ref`) arrives as a DT_RESOURCE scalar holding an sm_variable *; the executor
 * reads the variable's current value for every other input. So VariableV2 outputs a DT_RESOURCE
 * handle, and Assign/AssignAdd output the same handle back. Fetching a ref output gives the value. */
#ifndef SM_RUNTIME_KERNEL_H
#define SM_RUNTIME_KERNEL_H
#include <stddef.h>
#include <stdint.h>

#include "base/file.h"
#include "graph/graph.h"
#include "runtime/resource.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

typedef struct sm_kctx sm_kctx;
typedef struct sm_threadpool sm_threadpool;
typedef struct sm_plan sm_plan; /* an immutable compiled plan (src/runtime/plan.h) */

enum {
  /* The op exists (scan and load accept it in unreached subgraphs: save paths) but has no compute
   * here; a plan that needs it fails at load, naming it. */
  SM_KERNEL_PARSE_ONLY = 1u << 0,
  /* Running it depends on nothing but its inputs, the model's variables and constants, and has no
   * effect but its outputs and its own state's cache: the loader runs such steps of a signature's
   * plan that no feed reaches once (sm__plan_preload, executor.h), so what a first call would
   * compute and cache there (a BatchNorm folded into its filter) is done at load. */
  SM_KERNEL_PRELOAD = 1u << 3,
};
/* A device backend's kernel reads input i from host memory (TensorFlow's HostMemory: a shape, an
 * axis, a permutation): the plan gives it the host value. Inputs 0..23. */
#define SM_KERNEL_HOST_IN(i) (1u << (8 + (i)))
/* The same for the last input, whatever the node's input count (ConcatV2's axis). */
#define SM_KERNEL_HOST_LAST_IN (1u << 1)
/* A device backend's kernel whose outputs are host tensors (Shape: the dims of a device tensor). */
#define SM_KERNEL_HOST_OUT (1u << 2)

/* Where a kernel runs (and where the buffers of the tensors it makes live). A backend other than
 * the CPU registers its own kernels for the same op names. */
typedef enum sm_backend { SM_BACKEND_CPU = 0, SM_BACKEND_CUDA = 1 } sm_backend;
#define SM_NUM_BACKENDS 2
const char *sm__backend_name(int backend); /* "CPU", "CUDA" */

typedef struct sm_kernel {
  const char *op;
  /* May be NULL (state = NULL). *state is released with `release`. */
  sm_status *(*prepare)(const sm_node *node, void **state);
  sm_status *(*compute)(const void *state, sm_kctx *ctx);
  void (*release)(void *state); /* may be NULL: free() is not called either */
  unsigned flags;
} sm_kernel;

/* The registry (registry.c): kernel tables are registered per backend (the CPU's are the generated
 * list of src/ops families, registry_families.c); the kernel for (op, backend). *out NULL when there is none; an error
 * only when the registry itself cannot be built (out of memory: the next call tries again; an
 * (op, backend) registered twice). */
sm_status *sm__kernel_lookup(const char *op, sm_backend backend, const sm_kernel **out);
/* The same, NULL for "none" and for a registry that cannot be built. */
const sm_kernel *sm__kernel_find(const char *op, sm_backend backend);
/* Every registered op name (any backend), sorted (for scan and docs). Owned by the registry. */
const char *const *sm__kernel_ops(int *count);
/* Registers a further table (ended by op == NULL) of one backend's kernels; it must outlive the
 * process: tests' kernels, later a backend opened at run time. Lookups already under way keep the
 * index they had. Fails, registering nothing, when an (op, backend) of it is registered already. */
sm_status *sm__kernels_add(const sm_kernel *table, sm_backend backend);

/* The most elements one TensorList or TensorArray may hold (SM_MAX_SEQ_ELEMENTS, 16M; tests lower
 * sm__seq_max_elements to reach it): one a loop grows without bound is refused past it with
 * SM_RESOURCE_EXHAUSTED instead of taking the machine's memory. The one bound both families use. */
#define SM_MAX_SEQ_ELEMENTS ((int64_t)1 << 24)
extern int64_t sm__seq_max_elements;

/* ---- during compute ---------------------------------------------------------------------- */
const sm_node *sm__kctx_node(const sm_kctx *c);
int sm__kctx_num_inputs(const sm_kctx *c);
const sm_tensor *sm__kctx_input(const sm_kctx *c, int i);
int sm__kctx_num_outputs(const sm_kctx *c);
/* A new zero-filled tensor set as output i; *out stays owned by the context (write it, do not
 * free it). Fails on bad shapes and size limits with a message naming the node. */
sm_status *sm__kctx_alloc_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out);
/* As sm__kctx_alloc_output, but the elements are not zeroed: for kernels that write every one. */
sm_status *sm__kctx_alloc_output_uninit(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out);
/* Forward-or-allocate: when this step is input `in`'s only reader, nothing outside the run holds
 * it (sm_tensor_is_shared) and its dtype and shape are these, it becomes output `out` and is
 * returned for the kernel to overwrite in place (elementwise: out[i] may depend only on in[i]);
 * otherwise NULL, and the kernel allocates. */
sm_tensor *sm__kctx_reuse_input(sm_kctx *c, int in, int out, int dtype, int rank, const int64_t *dims);
/* Scratch memory for this compute call, from the one allocator (src/base/alloc.h) that tensors'
 * buffers come from too: valid until compute returns, when the executor releases whatever the
 * kernel did not give back with sm__kctx_scratch_free. NULL when it cannot be had, with *st set to
 * an SM_RESOURCE_EXHAUSTED status naming the size (the kernel returns it; the executor adds the
 * node). Kernels allocate nothing else while they compute, but for a buffer each worker of a
 * parallel loop keeps (the context is not thread-safe): that one comes from sm__alloc itself and
 * its failure is returned as the same status after the loop. */
void *sm__kctx_scratch(sm_kctx *c, size_t bytes, sm_status **st);
/* Resizes a block of this compute's scratch (p NULL: a new one), keeping its contents as realloc
 * does; on failure NULL with *st set, and p stays valid and the context's. */
void *sm__kctx_scratch_realloc(sm_kctx *c, void *p, size_t bytes, sm_status **st);
void sm__kctx_scratch_free(sm_kctx *c, void *p); /* NULL-safe */
/* Output i = t; the context takes over the caller's reference. */
void sm__kctx_set_output(sm_kctx *c, int i, sm_tensor *t);
/* Output out = input in (one more reference on the same tensor, no copy). */
void sm__kctx_forward(sm_kctx *c, int in, int out);
/* The loaded model's resources (variables, tables). */
sm_resources *sm__kctx_resources(sm_kctx *c);
/* Worker threads kernels may split large loops over; NULL means run on the caller's thread. */
sm_threadpool *sm__kctx_pool(sm_kctx *c);
/* The run's sm_run_options, for a kernel that loops long (or waits): a CANCELLED or
 * DEADLINE_EXCEEDED status ("... during step K of N"; the executor adds the node) when the run's
 * cancel flag is set or its deadline has passed, NULL otherwise (and always for a run without
 * options). The executor checks both before every step; this lets one step stop early too: a
 * kernel that loops (While) calls it once per iteration, so a loop whose body has no steps still
 * stops. */
sm_status *sm__kctx_check_stop(const sm_kctx *c);
/* For memory a kernel makes other than through sm__kctx_alloc_output* or scratch (a TensorList's
 * vector of elements): NULL when `bytes` more fit the run's memory budget now (always, for a run
 * without one), else an SM_RESOURCE_EXHAUSTED status naming `what` and the budget. Checks only:
 * nothing stays charged. */
sm_status *sm__kctx_charge_check(const sm_kctx *c, size_t bytes, const char *what);
/* Memory a kernel's object keeps past the step that made it (a TensorList's or TensorArray's
 * elements and vector), which no output slot's charge covers: the object keeps an account and
 * charges what it holds to the run it grows in. The account holds a reference on the run's budget
 * (not on the run), so an object that outlives its run (fetched, or kept by a resource) gives its
 * bytes back harmlessly when it goes. Zero-initialise one (mem NULL, held 0). */
typedef struct sm_mem_account {
  struct sm_run_mem *mem; /* NULL: nothing charged (a run without a budget) */
  size_t held;
} sm_mem_account;
/* Charges `bytes` more to a, in the budget of c's run: SM_RESOURCE_EXHAUSTED naming `what` and the
 * budget (nothing taken) when they would pass it. An account of an earlier run moves here first
 * (what it holds is given back there and taken here); in a run without a budget the account is
 * closed and nothing is charged. */
sm_status *sm__kctx_hold(const sm_kctx *c, sm_mem_account *a, size_t bytes, const char *what);
void sm__mem_give(sm_mem_account *a, size_t bytes); /* gives back up to what a holds */
void sm__mem_close(sm_mem_account *a);              /* gives back all, drops the budget reference */
/* The same for one tensor the object keeps (t NULL: nothing), charged as an output of its dtype
 * and shape would be; and giving it back. Neither measures t when no budget is involved. */
sm_status *sm__kctx_hold_tensor(const sm_kctx *c, sm_mem_account *a, const sm_tensor *t, const char *what);
void sm__mem_give_tensor(sm_mem_account *a, const sm_tensor *t);
/* The SavedModel's directory (for ops whose paths are relative; normally paths come as inputs). */
const char *sm__kctx_export_dir(const sm_kctx *c);
/* The one way a kernel reads a file (a vocabulary, a checkpoint's index and shards): maps path
 * when the load's policy allows it. Confinement: unless the model was loaded with
 * sm_load_options.allow_external_files (or has no export directory: a graph built in memory), the
 * path, after realpath ("..", symlinks), must lie inside the export directory; else
 * SM_FAILED_PRECONDITION naming the path, where it resolves, and the opt-in. Then only a regular
 * file of at most max_bytes is opened (O_NONBLOCK + fstat: a FIFO, a device or /dev/zero is
 * refused without blocking or reading). Release *out with sm__file_map_close. */
sm_status *sm__kctx_open_file(const sm_kctx *c, const char *path, uint64_t max_bytes, sm_file_map *out);

/* ---- sub-plans: a function of the model's library run from inside a kernel ------------------
 * The seam for control flow (While/If/Case bodies) and map_fn-style kernels: the kernel compiles
 * the function once, in prepare, and runs it as often as it likes in compute. */

/* In prepare only. Compiles function `function_name` of the library of the graph being planned
 * (sm__cgraph_compile_function: its flat inputs become the plan's feeds, its flat outputs its
 * fetches, its control outputs run as targets; arg dtypes given by a type attr come from
 * `caller`'s attrs, so pass the node prepare got) into *out, a plan the kernel's state owns: free
 * it with sm__plan_free in `release`. The body's kernels are found and prepared now, so a missing
 * kernel fails the load, naming the function and the node.
 *
 * How it reaches the build: plan building (plan.c) sets a thread-local build context around every
 * prepare call it makes, which names the graph and the chain of functions being compiled; prepare's
 * signature (node, state) stays as it is. So it fails (SM_FAILED_PRECONDITION) when called from
 * anywhere but a prepare that plan building runs. A function that reaches itself (f -> f,
 * f -> g -> f) is refused, and sub-plans nest at most SM_PLAN_MAX_DEPTH (plan.h) deep. */
sm_status *sm__prepare_function_plan(const sm_node *caller, const char *function_name, sm_plan **out);
void sm__plan_free(sm_plan *p); /* NULL-safe */
/* What to build a plan for. Feeds must be distinct tensors; fetches may repeat. The labels name
 * feeds and fetches in messages (NULL: "node:k" from the edge). */
typedef struct sm_plan_spec {
  const sm_edge *feeds;
  int nfeeds;
  const sm_edge *fetches;
  int nfetches;
  const int *targets; /* node indices run for their effects */
  int ntargets;
  const char *const *feed_labels;
  const char *const *fetch_labels;
} sm_plan_spec;
/* In prepare only. A plan over the graph being planned itself (the graph `caller` is a node of):
 * spec's feeds, fetches and targets (edges and node indices of that graph).
 * For kernels whose body is a part of the graph rather than a function: a TF1 loop frame (its cond
 * and body, control_v1.c). Nests like sm__prepare_function_plan. */
sm_status *sm__prepare_graph_plan(const sm_node *caller, const sm_plan_spec *spec, sm_plan **out);
/* In prepare only. sm__prepare_function_plan, with `edit` called on the function's compiled graph
 * and the spec made from it (args as feeds, rets as fetches, control rets as targets) before the
 * plan is built: it may point the spec's arrays at others (edges and nodes of fg) that it keeps
 * alive until this returns, e.g. feed an inner value the kernel computes itself (so the nodes
 * that made it are pruned) or fetch an inner value. It sets *build to 0 to build nothing (*out
 * stays NULL, no error). */
typedef sm_status *(*sm_plan_edit_fn)(const sm_cgraph *fg, sm_plan_spec *spec, void *arg, int *build);
sm_status *sm__prepare_function_plan_edit(const sm_node *caller, const char *function_name, sm_plan_edit_fn edit,
                                         void *arg, sm_plan **out);
/* How many tensors sm__kctx_run_plan takes and gives for p. */
int sm__plan_num_feeds(const sm_plan *p);
int sm__plan_num_fetches(const sm_plan *p);
/* In compute. Runs `sub` with this run's resources, thread pool, export dir and run options (its
 * steps check the deadline and the cancel flag too): inputs (borrowed) in the function's input
 * order, checked against its arg dtypes; outputs new tensors the caller owns, in its output order
 * (all NULL on error). Re-entrant: a kernel of the sub-plan may run sub-plans of its own; and
 * thread-safe: several threads may run plans through one ctx at once (e.g. the iterations of a
 * map_fn split with sm__parallel_for). Errors are prefixed "function 'f': ". */
sm_status *sm__kctx_run_plan(sm_kctx *c, const sm_plan *sub, sm_tensor *const *inputs, int ninputs,
                            sm_tensor **outputs, int noutputs);

/* ---- thread pool (src/runtime/threadpool.c) -------------------------------------------------- */
/* Run fn(ctx, begin, end) over [0, n) split in chunks of at least `grain`, on the pool's threads
 * and the caller's; returns when all are done. pool NULL or n small: runs fn(ctx, 0, n) inline.
 * Inside a step of a run with a deadline or a cancel flag (sm_run_options), the loop is cut finer
 * (up to 16 chunks a thread, at least `grain` each; the inline case too) and each chunk checks
 * them before it starts: once the run must stop, the remaining chunks are skipped and the executor
 * turns the step's result into the CANCELLED / DEADLINE_EXCEEDED error ("during step K of N"). So
 * fn must not depend on how [0, n) is cut (it never could: the pool cuts it as it likes). */
void sm__parallel_for(sm_threadpool *pool, int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                     void *ctx);
sm_status *sm__threadpool_new(int nthreads, sm_threadpool **out);
/* The poll before sleeping (threadpool.c) in microseconds where SM_POOL_SPIN_US is not set: 100
 * unless a program says otherwise before its first pool. A server sets 0: its request threads keep
 * the cores busy, and a polling worker would take CPU from them (bench_serve.py, seed CNN with
 * batching: 113 us CPU per image with the poll, 83 without). */
void sm__threadpool_spin_default(int us);
void sm__threadpool_free(sm_threadpool *p); /* NULL-safe */
/* Threads a parallel_for may use, the caller's included (1 for NULL): what a library with its own
 * threads (oneDNN's OpenMP, nn_dnnl.c) is told to use instead. */
int sm__threadpool_nthreads(const sm_threadpool *p);

#endif
