/* plan.h - the immutable compiled plan (internal to src/runtime: plan.c builds it, rewrite.c
 * rewrites its node order once while it is built, executor.c runs it).
 *
 * A plan is built from an sm_cgraph and feeds, fetches and targets already resolved (sm_edge, node
 * indices), in the order the caller gives them: no names, no sorting inside. It holds, per step of
 * the pruned node order, the node, its kernel and prepared state, and the slots its inputs come
 * from; a slot for every value the run produces (fed tensors first, in feed order, then each
 * node's outputs); when each slot can be released; the feed and fetch slots. Once built it never
 * changes, so any number of threads may run it at once (each run owns only its slot values). */
#ifndef SM_RUNTIME_PLAN_H
#define SM_RUNTIME_PLAN_H

#include "runtime/kernel.h"
#include "runtime/rewrite.h"

/* How deep sub-plans may nest (a function compiled by a kernel's prepare whose body has a kernel
 * that compiles another, ...), at build and at run time. */
#define SM_PLAN_MAX_DEPTH 32

enum { SM_IN_PASS = 0, SM_IN_READ_REF = 1 };

/* TF1 conditionals (Switch / Merge, dead tensors; executor.c): what a step is to deadness. */
enum { SM_CF_NONE = 0, SM_CF_SWITCH = 1, SM_CF_MERGE = 2, SM_CF_TRIGGER = 3 };

typedef struct sm_step {
  const sm_node *node; /* need not be a node of the plan's graph (a rewrite may add its own) */
  const sm_kernel *k;  /* NULL for an unfed Placeholder/_Arg: running it is the "must feed" error */
  sm_backend backend;  /* where k runs (device.h: placement) */
  void *state;
  int nin;
  int *in_slot;
  unsigned char *in_mode; /* SM_IN_* */
  /* per input: this step is the value's only and last reader (so it may be written in place
   * when nothing outside the run holds it) */
  unsigned char *in_last;
  int nout, out_base;
  int nrelease;
  int *release; /* slots freed after this step */
  /* only in a plan with dead tensors (has_dead): the steps this one has control edges from */
  unsigned char cf; /* SM_CF_* */
  int nctl;
  int *ctl_step;
} sm_step;

struct sm_plan {
  const sm_cgraph *g; /* the graph the plan was built from (for messages) */
  sm_rewrite *rw;     /* the rewritten order (rewrite.h): its synthetic nodes (ids from
                       * sm__cgraph_num_nodes(g) up, e.g. _FusedConv2D) are the steps' nodes too */
  sm_cgraph *owned_g; /* a function's plan owns its graph (sm__prepare_function_plan) */
  const char *fname;  /* that function's name, NULL otherwise */
  int nsteps;
  sm_step *steps;
  int nslots;
  int max_in; /* most inputs of any step */
  int nfeeds, nfetches;
  sm_edge *feed_edges;
  int *feed_slot;
  char **feed_labels; /* the names messages use: as the caller gave them, else "node:k" */
  sm_edge *fetch_edges;
  int *fetch_slot; /* fetches may repeat a slot */
  char **fetch_labels;
  unsigned char *slot_ref; /* the slot holds a TF1 ref variable handle, read when consumed as a value */
  int *slot_dtype;         /* dtype the graph declares for the slot (base for feeds) */
  /* The plan runs a Switch: values may be dead (TensorFlow's executor: a Switch's untaken output
   * is dead, so is every node with a dead data or control input, but a Merge, live when one data
   * input is, and a ControlTrigger). A plan without one never looks at deadness. */
  int has_dead;
  /* Placement (device.h), only in a plan built for a device backend (dev != NULL): slots from
   * nslots_values up are copies, xsrc[slot] the slot each copies (-1 for the others), xdir[slot]
   * 1 for an upload, 0 for a download; xcache[slot] 1 where an upload is cached (cache_host,
   * cache_dev under cache_mu). ncopies = nslots - nslots_values, ndevice the steps on the device. */
  const struct sm_device *dev;
  sm_backend backend;
  int nslots_values;
  int *xsrc;
  unsigned char *xdir, *xcache;
  sm_tensor **cache_host, **cache_dev;
  void *cache_mu; /* a pthread_mutex_t */
  int ncopies, ndevice;
  struct sm_step_prof *prof; /* SM_STEP_PROFILE set at build: per-step timings (step_profile.h), else NULL */
};

/* What to build a plan for: sm_plan_spec (kernel.h). */

/* Builds the plan: prunes g to what the fetches and targets need given the feeds, finds every
 * kernel (failing, SM_UNIMPLEMENTED, with every node lacking one, grouped by op), fuses, prepares
 * every kernel (each prepare may compile sub-plans: sm__prepare_function_plan). *out is owned by
 * the caller (sm__plan_free, kernel.h); g must outlive it. */
sm_status *sm__plan_build(const sm_cgraph *g, const sm_plan_spec *spec, sm_plan **out);
/* The same, placing what it can on `backend` (device.h; SM_BACKEND_CPU: sm__plan_build), whose
 * device must be open (sm__device_open). Sub-plans of kernels run on the CPU. */
sm_status *sm__plan_build_on(const sm_cgraph *g, const sm_plan_spec *spec, sm_backend backend, sm_plan **out);
/* The same placement without a device (its kernels registered: sm__device_plan_only), for
 * inspection (validate --device gpu): running the plan fails. */
sm_status *sm__plan_build_placed(const sm_cgraph *g, const sm_plan_spec *spec, sm_backend backend, sm_plan **out);
/* What placement did, as one line (malloc'd; NULL when out of memory): "K of N steps on CUDA, C
 * host<->device copies; on the CPU: 'name' (Op), ..." leaving out what is host-side by nature
 * (Placeholder, Const, NoOp, and nodes of resource, string or variant values). */
char *sm__plan_placement_text(const sm_plan *p);

/* The slot a consumer reads for edge e: the feed if it is fed, else the output of the node that
 * makes the value now (sm__rewrite_edge; its first output slot node_base[id], -1 when the plan does
 * not run it). */
int sm__plan_slot_of(const sm_plan *p, const int *node_base, sm_edge e);

#endif
