/* model.h - load a SavedModel by tag set and run its signatures: the runtime's public API.
 *
 *   sm_model *m;
 *   const char *tags[] = {SM_TAG_SERVE};
 *   sm_status *s = sm_model_load("/models/half_plus_two/1", tags, 1, NULL, &m);
 *   ...
 *   const char *in[] = {"x"};  sm_tensor *x = ...;  sm_tensor *y;
 *   const char *out[] = {"y"};
 *   s = sm_model_run(m, "serving_default", in, &x, 1, out, 1, &y);
 *
 * Loading does what TensorFlow's C++ loader does: pick the MetaGraph whose tag set equals `tags`
 * (or fail listing the tag sets there are), restore variables by running the SaverDef's restore op
 * with the variables prefix fed, feed asset paths, run the init op (__saved_model_init_op, main op or
 * legacy init op) and table initializers. It also compiles a plan for every signature (or for those
 * sm_load_options.signatures lists). A signature this runtime cannot run (an op without a kernel
 * here, a sparse or composite input or output) does not fail the load, as TensorFlow would only
 * fail when it is run: the model records a warning for it naming each op and node
 * (sm_model_warning), and running it returns SM_UNIMPLEMENTED with that message. A load fails when
 * no signature it compiles can run (the message names what is missing), and whenever the restore
 * op, the init op or the graph itself cannot run.
 *
 * A loaded model is immutable except for its resources (variables, tables, counters), and
 * sm_model_run / sm_model_session_run may be called from many threads at once. */
#ifndef SAVEDMODEL_MODEL_H
#define SAVEDMODEL_MODEL_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_model sm_model;

typedef struct sm_load_options {
  int num_threads; /* threads for large kernels; 0 = one per core, 1 = only the caller's */
  /* The signatures whose plans the load compiles: NULL = every one; else the nsignatures keys
   * listed (keys the model lacks are ignored: sm_model_run reports them). A signature not compiled
   * at load is compiled by its first sm_model_run, and an op it needs without a kernel fails that
   * run with SM_UNIMPLEMENTED (no load warning says so in advance). */
  const char *const *signatures;
  int nsignatures;
  /* The load budget: what loading may materialise from the export's files, so that a few KB of
   * hostile protobuf cannot take gigabytes (functions calling each other inlined to millions of
   * nodes, a Const of shape [32768, 32768] holding one value). A load that would pass it fails with
   * SM_RESOURCE_EXHAUSTED naming the limit, before allocating. 0 = the default, proportional to the
   * files: max_graph_nodes = max(131072, bytes of saved_model.pb / 16) nodes after inlining
   * functions (never more than 4M); max_load_bytes = max(128 MiB, 4 x the bytes of saved_model.pb
   * and variables/) for the compiled graph (nodes, names, edges) and every constant decoded. */
  int64_t max_graph_nodes;
  int64_t max_load_bytes;
  /* Confinement. 0 (the default): the files the graph's ops read (InitializeTableFromTextFileV2's
   * vocabulary, RestoreV2's checkpoint) must lie inside export_dir once ".." and symlinks are
   * resolved, else the op fails with SM_FAILED_PRECONDITION naming the path; 1: any path the graph
   * names is read, as TensorFlow does (only for models you trust). Either way only regular files
   * are opened (a FIFO or a device is refused without blocking), and a vocabulary file of more
   * than SM_MAX_VOCAB_FILE_BYTES is refused. */
  int allow_external_files;
  /* Where the signatures run: SM_DEVICE_CPU (0, the default) or SM_DEVICE_GPU, which places every
   * node whose op has a CUDA kernel on the GPU and runs the others on the CPU, with the copies
   * between them placed at load (variables are restored, and the init op runs, on the CPU). A load
   * asking for the GPU fails (SM_FAILED_PRECONDITION, naming what is missing) where the CUDA
   * module (libsavedmodel_cuda.so), the driver or a GPU is absent. */
  int device;
} sm_load_options;

enum { SM_DEVICE_CPU = 0, SM_DEVICE_GPU = 1 };

/* The largest text file a table initializer reads (InitializeTableFromTextFileV2): 256 MiB. */
#define SM_MAX_VOCAB_FILE_BYTES ((uint64_t)256 << 20)

/* Load export_dir with exactly this tag set (order does not matter). opts may be NULL. The caller
 * owns *out (sm_model_free). */
SM_API sm_status *sm_model_load(const char *export_dir, const char *const *tags, int ntags, const sm_load_options *opts,
                                sm_model **out);
SM_API void sm_model_free(sm_model *m); /* NULL-safe */

/* ---- signatures --------------------------------------------------------------------------- */
/* One input or output of a signature. rank -1 = unknown rank; a dim of -1 = unknown. Pointers are
 * owned by the model. */
typedef struct sm_tensor_info {
  const char *alias; /* the signature's key, e.g. "x" */
  const char *name;  /* the graph tensor, e.g. "x:0" */
  int dtype;
  int rank;
  const int64_t *dims;
} sm_tensor_info;

SM_API int sm_model_num_signatures(const sm_model *m);
SM_API const char *sm_model_signature_key(const sm_model *m, int i); /* sorted by key */
/* Method name ("tensorflow/serving/predict", ...) of a signature, or NULL if there is no such key. */
SM_API const char *sm_model_signature_method(const sm_model *m, const char *key);
/* Inputs/outputs of signature `key`, sorted by alias. Unknown key: an error that lists the keys. */
SM_API sm_status *sm_model_signature_inputs(const sm_model *m, const char *key, const sm_tensor_info **infos, int *n);
SM_API sm_status *sm_model_signature_outputs(const sm_model *m, const char *key, const sm_tensor_info **infos, int *n);

/* Why signature `key` cannot run ("signature 'k': this runtime has no kernel for 1 node(s) this
 * run needs: Op (node 'n')"), or NULL when it can, was not compiled at load, or there is no such key.
 * Owned by the model. */
SM_API const char *sm_model_signature_warning(const sm_model *m, const char *key);
/* The load's warnings: one per signature that cannot run, in key order, each the text
 * sm_model_signature_warning gives. i out of range: NULL. */
SM_API int sm_model_num_warnings(const sm_model *m);
SM_API const char *sm_model_warning(const sm_model *m, int i);

/* Run signature `key`: inputs[i] feeds alias in_aliases[i]; outputs[j] receives alias
 * out_aliases[j] (out_aliases NULL: every output, in sorted alias order, nout must equal their
 * count). Inputs are borrowed; outputs are new tensors the caller owns. A wrong alias, a dtype or
 * shape the signature's TensorInfo refuses, or a missing input gets an error naming the alias,
 * what was expected and what was given. */
SM_API sm_status *sm_model_run(sm_model *m, const char *key, const char *const *in_aliases, sm_tensor *const *inputs,
                               int nin, const char *const *out_aliases, int nout, sm_tensor **outputs);

/* TF1 Session.run: feed any tensors by name ("x:0" or "x"), fetch tensors by name, run target
 * nodes ("init" or "^init") for their effects. Outputs are new tensors the caller owns. */
SM_API sm_status *sm_model_session_run(sm_model *m, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                                       const char *const *fetch_names, int nfetches, const char *const *targets,
                                       int ntargets, sm_tensor **outputs);

/* ---- run options ------------------------------------------------------------------------- */
/* Limits on one run. Deadline and cancel flag are checked by the executor before every step (one
 * clock read a step), and by large kernels between tiles or chunks (MatMul, BatchMatMul, the
 * convolutions, big elementwise loops and reductions, sorting), so one huge kernel stops near the
 * deadline too. A run stopped by them returns SM_DEADLINE_EXCEEDED or SM_CANCELLED naming the step
 * and node ("before step 3 of 200 (node 'm3', MatMul)", "during step 3 of 200"), and no outputs.
 *
 * The memory budget (max_run_bytes) bounds the bytes the run holds at once: the tensors its steps
 * make (sm__kctx_alloc_output: every kernel output that is not a view or a forwarded input) while a
 * later step still reads them, and kernels' scratch. A step whose output or scratch would take the
 * run past it is refused before anything is allocated, with SM_RESOURCE_EXHAUSTED naming the node
 * and the budget ("node 'f' (Fill): output 0: ... 4294967296 bytes ... max_run_bytes 268435456");
 * so Fill / Tile / BroadcastTo / OneHot / random ops fed huge shapes fail cleanly. Feeds, variables
 * and constants are the model's, not the run's, and are not counted. 0 = no budget (each tensor is
 * still capped at 16 GiB, as always). */
typedef struct sm_run_options {
  int64_t deadline_us;        /* CLOCK_MONOTONIC microseconds (sm_monotonic_us() + timeout); 0 = none */
  const volatile int *cancel; /* NULL = none; the run stops once *cancel is nonzero (set it from any
                               * thread, e.g. with __atomic_store_n) */
  size_t max_run_bytes;       /* the run's memory budget in bytes; 0 = none */
} sm_run_options;

/* CLOCK_MONOTONIC now, in microseconds: the clock of sm_run_options.deadline_us. */
SM_API int64_t sm_monotonic_us(void);

/* sm_model_run and sm_model_session_run with run options (NULL: none, the same as the plain
 * calls). */
SM_API sm_status *sm_model_run_opts(sm_model *m, const char *key, const char *const *in_aliases,
                                    sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                                    sm_tensor **outputs, const sm_run_options *opts);
SM_API sm_status *sm_model_session_run_opts(sm_model *m, const char *const *feed_names, sm_tensor *const *feeds,
                                            int nfeeds, const char *const *fetch_names, int nfetches,
                                            const char *const *targets, int ntargets, sm_tensor **outputs,
                                            const sm_run_options *opts);

/* ---- scan (without loading) ---------------------------------------------------------------- */
/* For the MetaGraph of export_dir matching tags: the op types found (graph and every function) that
 * are on TensorFlow's saved_model_cli denylist (ReadFile, WriteFile, PrintV2, ...) and those this
 * runtime has no kernel for, each sorted, as NULL-terminated arrays the caller frees with
 * sm_string_list_free. */
SM_API sm_status *sm_model_scan(const char *export_dir, const char *const *tags, int ntags, char ***denylisted,
                                char ***unsupported);
SM_API void sm_string_list_free(char **list); /* NULL-safe */

#ifdef __cplusplus
}
#endif
#endif
