/* session.h - run a compiled MetaGraph: the layer under sm_model, also used directly by tests.
 *
 * An sm_session owns an sm_cgraph compiled from a MetaGraphDef it borrows, the resources of that
 * graph, its thread pool, and a cache of immutable plans (plan.h) keyed by the sorted (feeds,
 * fetches, targets) names. sm__session_run is TF1's Session.run: feed tensors by name, fetch tensors
 * by name, run targets; every needed node runs at most once per run; ops without a kernel fail
 * when the plan is built, naming op and node. Many threads may call sm__session_run on one session
 * at once: the cache is looked up without a lock, and a plan is built outside any lock, so runs
 * never wait for each other or for a plan being compiled.
 *
 * Callers that run the same names over and over (sm_model's signatures) take the plan once with
 * sm__session_plan and run it with sm__plan_run (executor.h) and sm__session_env: no names, no
 * sorting, no lookup per run. */
#ifndef SM_RUNTIME_SESSION_H
#define SM_RUNTIME_SESSION_H
#include "graph/graph.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/resource.h"
#include "savedmodel/model.h"

typedef struct sm_session sm_session;

/* mg must outlive the session. export_dir may be NULL (graphs built in memory). nthreads as in
 * sm_load_options. */
sm_status *sm__session_new(const Tensorflow__MetaGraphDef *mg, const char *export_dir, int nthreads,
                          sm_session **out);
/* The same under a load budget (graph.h; copied: the session keeps its own counts), which its
 * graph's compilation and every plan it builds charge. NULL: only the hard limits. */
sm_status *sm__session_new_budget(const Tensorflow__MetaGraphDef *mg, const char *export_dir, int nthreads,
                                 const sm_load_budget *budget, sm_session **out);
/* The load budget sm_load_options ask for, for the export in export_dir (NULL: no files to size,
 * the floors): max_nodes = opt_nodes, or max(SM_LOAD_NODES_FLOOR, bytes of saved_model.pb / 16);
 * max_bytes = opt_bytes, or max(SM_LOAD_BYTES_FLOOR, 4 x (saved_model.pb + variables/ files)). */
#define SM_LOAD_NODES_FLOOR ((int64_t)1 << 17)
#define SM_LOAD_BYTES_FLOOR ((int64_t)128 << 20)
void sm__load_budget_for(const char *export_dir, int64_t opt_nodes, int64_t opt_bytes, sm_load_budget *out);
void sm__session_free(sm_session *s); /* NULL-safe */
const sm_cgraph *sm__session_graph(const sm_session *s);
sm_resources *sm__session_resources(sm_session *s);
/* What sm__plan_run needs to run this session's plans (resources, pool, export dir); owned by s. */
const sm_exec_env *sm__session_env(const sm_session *s);
/* The confinement policy of the files kernels read (sm_exec_env.allow_external_files); set it
 * before the first run. */
void sm__session_allow_external_files(sm_session *s, int allow);
/* Where the plans the session builds from now on run what they can (device.h: placement); plans
 * already cached stay as they are. The backend's device must be open (sm__device_open). */
void sm__session_set_backend(sm_session *s, sm_backend b);
/* How a plan for these names would be placed on backend b (its kernels registered:
 * sm__device_plan_only), as sm__plan_placement_text's line (*text malloc'd); builds a plan that is
 * not cached and never runs. */
sm_status *sm__session_placement(sm_session *s, const char *const *feed_names, int nfeeds,
                                const char *const *fetch_names, int nfetches, sm_backend b, char **text);

/* Build (and cache) the plan for these names without running it: the load-time check. */
sm_status *sm__session_prepare(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                              int nfetches, const char *const *targets, int ntargets);
/* The cached plan for these names (built if absent, and kept, past the cache's limit too), a handle
 * owned by the session and valid until sm__session_free. The plan's feeds and fetches are in its
 * own order; feed_pos[i] is the plan feed index of feed_names[i] and fetch_pos[j] the plan fetch
 * index of fetch_names[j] (arrays of nfeeds and nfetches ints the caller gives; either may be
 * NULL). Run it with sm__plan_run(*out, sm__session_env(s), ...). */
sm_status *sm__session_plan(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                           int nfetches, const char *const *targets, int ntargets, const sm_plan **out, int *feed_pos,
                           int *fetch_pos);
/* Outputs are new tensors the caller owns (ref outputs give the variable's value). */
sm_status *sm__session_run(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                          const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                          sm_tensor **outputs);
/* The same, stopping between steps when opts' deadline passes or its cancel flag is set
 * (opts NULL: as sm__session_run). */
sm_status *sm__session_run_opts(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                               const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                               sm_tensor **outputs, const sm_run_options *opts);

/* For tests: a session over a MetaGraphDef given as pbtxt text (a GraphDef under `graph_def {}`,
 * optional `meta_info_def { stripped_op_list {} }`). The session owns the parsed message. */
sm_status *sm__session_from_pbtxt(const char *metagraph_pbtxt, sm_session **out);

#endif
