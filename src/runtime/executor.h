/* executor.h - running a plan (internal to src/runtime; kernels see only kernel.h's sm_kctx).
 *
 * sm__plan_run runs an immutable plan once: it holds no lock and touches nothing shared but the
 * resources the kernels use, so any number of threads may run the same or different plans at once,
 * and a kernel may run a sub-plan from inside its compute (sm__kctx_run_plan). */
#ifndef SM_RUNTIME_EXECUTOR_H
#define SM_RUNTIME_EXECUTOR_H

#include "runtime/kernel.h"
#include "savedmodel/model.h"

/* What a run needs besides the plan and its feeds: it outlives every run that uses it (a session
 * owns one). Sub-plans run with their parent run's env. */
typedef struct sm_exec_env {
  sm_resources *res;      /* variables and tables */
  sm_threadpool *pool;    /* NULL: kernels run their loops on the caller's thread */
  const char *export_dir; /* "" when there is none */
  /* 0: kernels read files only inside export_dir (sm__kctx_open_file); 1: anywhere
   * (sm_load_options.allow_external_files). With no export_dir (a graph built in memory) there is
   * nothing to confine to, and files are read where the graph says. */
  int allow_external_files;
} sm_exec_env;

/* Runs p: feeds in the plan's feed order (borrowed; each is checked against the dtype the graph
 * declares), outputs (new tensors the caller owns; a ref output gives the variable's value) in its
 * fetch order. ro NULL: no deadline, no cancel; otherwise both are checked before every step. On
 * error no outputs are left (all NULL) and the message names the node and op that failed. */
sm_status *sm__plan_run(const sm_plan *p, const sm_exec_env *env, sm_tensor *const *feeds, sm_tensor **outputs,
                       const sm_run_options *ro);

/* Runs once, with no feeds, the steps of p that no feed reaches and whose kernels are registered
 * SM_KERNEL_PRELOAD (kernel.h), dropping their outputs, so that what such a kernel computes once
 * and keeps (a BatchNorm folded into its filter: nn_fold.c) is made before the first call (the
 * loader, model.c). Errors are not reported: a step that fails is left to the first run. */
void sm__plan_preload(const sm_plan *p, const sm_exec_env *env);

/* ---- stopping inside a step ----------------------------------------------------------------
 * The executor marks each compute call with a stop source (thread-local, set on the thread that
 * calls compute); sm__parallel_for reads it on entry and checks it before every chunk, on
 * whatever thread runs the chunk. */
typedef struct sm_stop_src {
  const sm_run_options *ro;
  int stopped; /* atomic: 0 running, SM_CANCELLED or SM_DEADLINE_EXCEEDED once a chunk saw it */
} sm_stop_src;
/* Makes s the calling thread's stop source (NULL: none); returns the one it replaces. */
sm_stop_src *sm__stop_src_swap(sm_stop_src *s);
sm_stop_src *sm__stop_src_current(void);
/* 1 (and s->stopped set) once s's run must stop. Thread-safe; one clock read. */
int sm__stop_src_check(sm_stop_src *s);
/* For tests: called by every sm__stop_src_check before it reads the flag and the clock (so a test
 * can set a cancel flag from inside a kernel's loop, deterministically). NULL normally. */
extern void (*sm__stop_probe)(void);

#endif
