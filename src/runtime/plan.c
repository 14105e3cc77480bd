/* plan.c - building the immutable plan (plan.h) from an sm_cgraph and resolved feeds, fetches and
 * targets; compiling a function of the library into a sub-plan from a kernel's prepare
 * (sm__prepare_function_plan); freeing plans.
 *
 * Building: prune the graph, rewrite the pruned order with the op families' rules (rewrite.h:
 * fusion replaces a Conv2D + BiasAdd + Relu chain by one _FusedConv2D node, ...), give every value
 * a slot (feeds first, in the caller's order, then each node's outputs in step order), find each
 * node's kernel (every missing one reported at once, grouped by op), resolve each input to a slot,
 * prepare every kernel, and record after which step each slot has no more readers so a run frees
 * it as soon as it can.
 *
 * Prepare runs inside the build, and a kernel's prepare may compile a function of the model's
 * library into a plan of its own: the build context (graph, the chain of functions being compiled,
 * depth) reaches it through a thread-local set around each prepare call, so the prepare signature
 * stays (node, state). The chain makes f -> f (and f -> g -> f) an error instead of an endless
 * recursion, and SM_PLAN_MAX_DEPTH bounds nesting. */
#include "runtime/plan.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/step_profile.h"

/* ---- small string builder ------------------------------------------------------------------ */
typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if (b->p && (size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = (b->cap ? b->cap * 2 : 256);
    while (ncap < b->len + (size_t)n + 1) ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

/* ---- the build context a kernel's prepare sees --------------------------------------------- */
typedef struct build_ctx {
  const sm_cgraph *g; /* the graph being planned; its MetaGraphDef holds the function library */
  const char *fname;  /* the function this plan runs, NULL for a top-level plan */
  int depth;          /* 0 for a top-level plan, +1 per sub-plan */
  const struct build_ctx *parent;
  const sm_node *owner; /* the node whose part of the graph this plan runs (sm__prepare_graph_plan) */
  sm_backend backend;   /* where nodes go when their op has a kernel there (sub-plans: the CPU) */
} build_ctx;

/* Set by plan_build around each kernel's prepare call, read by sm__prepare_function_plan. */
static _Thread_local const build_ctx *tls_build;

static sm_status *plan_build(const sm_cgraph *g, const sm_plan_spec *spec, const build_ctx *self, sm_plan **out);
static int device_dtypes_ok(const sm_plan *p, const sm_step *sp);

/* ---- freeing --------------------------------------------------------------------------------- */
void sm__plan_free(sm_plan *p) {
  if (!p) return;
  sm__step_prof_free(p->prof, p); /* before the steps' nodes go */
  for (int i = 0; i < p->nsteps; i++) {
    sm_step *st = &p->steps[i];
    if (st->k && st->k->release && st->state) st->k->release(st->state);
    free(st->in_slot);
    free(st->in_mode);
    free(st->release);
    free(st->in_last);
    free(st->ctl_step);
  }
  free(p->steps);
  if (p->feed_labels)
    for (int i = 0; i < p->nfeeds; i++) free(p->feed_labels[i]);
  if (p->fetch_labels)
    for (int i = 0; i < p->nfetches; i++) free(p->fetch_labels[i]);
  free(p->feed_labels);
  free(p->fetch_labels);
  free(p->feed_edges);
  free(p->feed_slot);
  free(p->fetch_edges);
  free(p->fetch_slot);
  free(p->slot_ref);
  free(p->slot_dtype);
  if (p->cache_dev)
    for (int i = 0; i < p->nslots; i++) {
      sm_tensor_free(p->cache_host[i]);
      sm_tensor_free(p->cache_dev[i]);
    }
  free(p->cache_host);
  free(p->cache_dev);
  if (p->cache_mu) pthread_mutex_destroy(p->cache_mu);
  free(p->cache_mu);
  free(p->xsrc);
  free(p->xdir);
  free(p->xcache);
  sm__rewrite_free(p->rw);     /* after the states: they may borrow its nodes' attrs */
  sm__cgraph_free(p->owned_g); /* after the states: a kernel's state may point into the graph */
  free(p);
}

int sm__plan_num_feeds(const sm_plan *p) { return p ? p->nfeeds : 0; }
int sm__plan_num_fetches(const sm_plan *p) { return p ? p->nfetches : 0; }

/* ---- building -------------------------------------------------------------------------------- */
/* Ops whose value must be fed: running one unfed is the "You must feed" error. */
static int is_placeholder(const char *op) { return !strcmp(op, "Placeholder") || !strcmp(op, "PlaceholderV2"); }
static int is_arg(const char *op) { return !strcmp(op, "_Arg"); }

/* A function's _Arg node is always fed (a Placeholder may be); it runs only when something waits on
 * it through a control edge, and then has nothing to do (its consumers read the feed). */
static sm_status *arg_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  (void)ctx;
  return NULL;
}
static const sm_kernel arg_kernel = {"_Arg", NULL, arg_compute, NULL, 0};

int sm__plan_slot_of(const sm_plan *p, const int *node_base, sm_edge e) {
  /* the edge itself, then where the value is made now (a rule may have fused its maker, or dropped
   * an Identity: then its input, which may be fed) */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < p->nfeeds; i++)
      if (p->feed_edges[i].node == e.node && p->feed_edges[i].index == e.index) return p->feed_slot[i];
    if (!pass) e = sm__rewrite_edge(p->rw, e);
  }
  if (e.node < 0 || node_base[e.node] < 0) return -1;
  return node_base[e.node] + e.index;
}

static int is_fed(const sm_plan *p, sm_edge e) {
  for (int i = 0; i < p->nfeeds; i++)
    if (p->feed_edges[i].node == e.node && p->feed_edges[i].index == e.index) return 1;
  return 0;
}

/* Copies of the caller's labels, or "node:k" for each edge. */
static sm_status *make_labels(const sm_cgraph *g, const sm_edge *e, int n, const char *const *given, char ***out) {
  char **l = calloc((size_t)n + 1, sizeof *l);
  if (!l) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  *out = l;
  for (int i = 0; i < n; i++) {
    if (given && given[i]) {
      size_t len = strlen(given[i]) + 1;
      if ((l[i] = malloc(len))) memcpy(l[i], given[i], len);
    } else {
      const sm_node *nd = sm__cgraph_node(g, e[i].node);
      const char *name = nd ? sm__node_name(nd) : "?";
      size_t len = strlen(name) + 16;
      if ((l[i] = malloc(len))) snprintf(l[i], len, "%s:%d", name, e[i].index);
    }
    if (!l[i]) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  }
  return NULL;
}

/* The "no kernel" error: one group per op type, with every node that needs it. */
static sm_status *missing_kernels(const sm_plan *p, int norder, int nmissing) {
  sbuf missing = {0};
  sb_printf(&missing, "this runtime has no kernel for %d node(s) this run needs:", nmissing);
  int ngroups = 0;
  for (int i = 0; i < norder; i++) {
    const sm_step *sp = &p->steps[i];
    const char *op = sm__node_op(sp->node);
    if (sp->k || is_placeholder(op) || is_arg(op)) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++)
      if (!p->steps[j].k && !strcmp(sm__node_op(p->steps[j].node), op)) seen = 1;
    if (seen) continue;
    const sm_kernel *k = sm__kernel_find(op, SM_BACKEND_CPU);
    sb_printf(&missing, "%s %s%s (node", ngroups++ ? ";" : "", op, k ? " [parsed but not executable here]" : "");
    int cnt = 0;
    for (int j = i; j < norder; j++)
      if (!p->steps[j].k && !strcmp(sm__node_op(p->steps[j].node), op)) cnt++;
    sb_printf(&missing, "%s", cnt > 1 ? "s" : "");
    int first = 1;
    for (int j = i; j < norder; j++)
      if (!p->steps[j].k && !strcmp(sm__node_op(p->steps[j].node), op)) {
        sb_printf(&missing, "%s '%s'", first ? "" : ",", sm__node_name(p->steps[j].node));
        first = 0;
      }
    sb_printf(&missing, ")");
  }
  sm_status *st = missing.oom ? sm_status_new(SM_UNIMPLEMENTED,
                                              "this runtime has no kernel for %d node(s) this run needs", nmissing)
                              : sm_status_new(SM_UNIMPLEMENTED, "%s", missing.p);
  free(missing.p);
  return st;
}

/* TF1 conditionals: each step's SM_CF_* kind; when a Switch runs, the plan has dead tensors and
 * every step records the steps it has control edges from (its deadness depends on theirs). */
static sm_status *mark_dead_steps(sm_plan *p, const int *ord, int norder, int nn) {
  for (int i = 0; i < norder; i++) {
    const char *op = sm__node_op(p->steps[i].node);
    sm_step *sp = &p->steps[i];
    sp->cf = !strcmp(op, "Switch") || !strcmp(op, "RefSwitch")  ? SM_CF_SWITCH
             : !strcmp(op, "Merge") || !strcmp(op, "RefMerge") ? SM_CF_MERGE
             : !strcmp(op, "ControlTrigger")                   ? SM_CF_TRIGGER
                                                               : SM_CF_NONE;
    if (sp->cf == SM_CF_SWITCH) p->has_dead = 1;
  }
  if (!p->has_dead) return NULL;
  int *step_of = malloc(((size_t)nn + 1) * sizeof *step_of);
  if (!step_of) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  for (int i = 0; i < nn; i++) step_of[i] = -1;
  for (int i = 0; i < norder; i++) step_of[ord[i]] = i;
  for (int i = 0; i < norder; i++) {
    sm_step *sp = &p->steps[i];
    int nc = sm__node_num_control_inputs(sp->node);
    if (!nc) continue;
    if (!(sp->ctl_step = malloc((size_t)nc * sizeof *sp->ctl_step))) {
      free(step_of);
      return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    }
    for (int k = 0; k < nc; k++) {
      int id = sm__node_control_input(sp->node, k);
      if (id >= 0 && id < nn && step_of[id] < 0) { /* fused away as a chain's last node: the new node */
        sm_edge e = sm__rewrite_edge(p->rw, (sm_edge){id, 0});
        id = e.node >= 0 && e.node != id ? e.node : -1;
      }
      if (id >= 0 && id < nn && step_of[id] >= 0 && step_of[id] < i) sp->ctl_step[sp->nctl++] = step_of[id];
    }
  }
  free(step_of);
  return NULL;
}

sm_status *sm__plan_build(const sm_cgraph *g, const sm_plan_spec *spec, sm_plan **out) {
  build_ctx top = {g, NULL, 0, NULL, NULL, SM_BACKEND_CPU};
  return plan_build(g, spec, &top, out);
}

sm_status *sm__plan_build_on(const sm_cgraph *g, const sm_plan_spec *spec, sm_backend backend, sm_plan **out) {
  *out = NULL;
  if (backend != SM_BACKEND_CPU && !sm__device_get(backend))
    return sm_status_new(SM_FAILED_PRECONDITION, "plan: the %s device is not open", sm__backend_name(backend));
  build_ctx top = {g, NULL, 0, NULL, NULL, backend};
  return plan_build(g, spec, &top, out);
}

sm_status *sm__plan_build_placed(const sm_cgraph *g, const sm_plan_spec *spec, sm_backend backend, sm_plan **out) {
  build_ctx top = {g, NULL, 0, NULL, NULL, backend};
  return plan_build(g, spec, &top, out);
}

char *sm__plan_placement_text(const sm_plan *p) {
  sbuf b = {0};
  sb_printf(&b, "%d of %d steps on %s, %d host<->device copies", p->ndevice, p->nsteps, sm__backend_name(p->backend),
            p->ncopies);
  int n = 0;
  for (int i = 0; i < p->nsteps; i++) {
    const sm_step *sp = &p->steps[i];
    const char *op = sm__node_op(sp->node);
    if (sp->backend != SM_BACKEND_CPU || !sp->k || is_arg(op) || !strcmp(op, "Const") || !strcmp(op, "NoOp") ||
        !device_dtypes_ok(p, sp))
      continue;
    sb_printf(&b, "%s '%s' (%s)", n++ ? "," : "; on the CPU:", sm__node_name(sp->node), op);
  }
  if (!n) sb_printf(&b, "; nothing falls back to the CPU");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* ---- placement (device.h) -------------------------------------------------------------------- */

/* Can node nd run on a device at all: no resource, string, variant or ref values in or out. */
static int device_dtypes_ok(const sm_plan *p, const sm_step *sp) {
  for (int j = 0; j < sp->nin; j++) {
    int dt = sm__node_input_dtype(sp->node, j);
    if (dt >= SM_DTYPE_REF_OFFSET || dt == SM_RESOURCE || dt == SM_STRING || dt == SM_VARIANT ||
        p->slot_ref[sp->in_slot[j]] || sp->in_mode[j] != SM_IN_PASS)
      return 0;
  }
  for (int k = 0; k < sp->nout; k++) {
    int dt = sm__node_output_dtype(sp->node, k);
    if (dt >= SM_DTYPE_REF_OFFSET || dt == SM_RESOURCE || dt == SM_STRING || dt == SM_VARIANT) return 0;
  }
  return 1;
}

/* The copy slot of `src` in the other space (dir 1: an upload), made when absent. */
static int copy_slot(sm_plan *p, int src, int dir, int *cap) {
  for (int sl = p->nslots_values; sl < p->nslots; sl++)
    if (p->xsrc[sl] == src && p->xdir[sl] == dir) return sl;
  if (p->nslots == *cap) {
    int ncap = *cap * 2;
    int *nx = realloc(p->xsrc, (size_t)ncap * sizeof *nx);
    if (nx) p->xsrc = nx;
    unsigned char *nd = nx ? realloc(p->xdir, (size_t)ncap) : NULL;
    if (nd) p->xdir = nd;
    if (!nd) return -1;
    *cap = ncap;
  }
  p->xsrc[p->nslots] = src;
  p->xdir[p->nslots] = (unsigned char)dir;
  return p->nslots++;
}

/* Gives each value a space and every reader the value in the space it needs, through copy slots
 * (device.h). Grows p->nslots and the per-slot arrays (last_use too). */
static sm_status *place_copies(sm_plan *p, int norder, int **last_use) {
  int nv = p->nslots, cap = nv * 2 + 16;
  p->nslots_values = nv;
  unsigned char *on_dev = calloc((size_t)nv + 1, 1);
  p->xsrc = malloc((size_t)cap * sizeof *p->xsrc);
  p->xdir = malloc((size_t)cap);
  if (!on_dev || !p->xsrc || !p->xdir) {
    free(on_dev);
    return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  }
  for (int i = 0; i < nv; i++) p->xsrc[i] = -1, p->xdir[i] = 0;
  sm_status *st = NULL;
  for (int i = 0; i < norder && !st; i++) {
    sm_step *sp = &p->steps[i];
    if (sp->backend != SM_BACKEND_CPU) {
      p->ndevice++;
      for (int k = 0; k < sp->nout; k++) on_dev[sp->out_base + k] = !(sp->k->flags & SM_KERNEL_HOST_OUT);
    }
    for (int j = 0; j < sp->nin && sp->in_slot; j++) {
      unsigned f = sp->k ? sp->k->flags : 0;
      int host = (j < 24 && (f & SM_KERNEL_HOST_IN(j))) || (j == sp->nin - 1 && (f & SM_KERNEL_HOST_LAST_IN));
      int need = sp->backend != SM_BACKEND_CPU && !host;
      int sl = sp->in_slot[j];
      if (on_dev[sl] == need) continue;
      int c = copy_slot(p, sl, need, &cap);
      if (c < 0) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
      else sp->in_slot[j] = c;
    }
  }
  for (int i = 0; i < p->nfetches && !st; i++) {
    int sl = p->fetch_slot[i];
    if (!on_dev[sl]) continue;
    int c = copy_slot(p, sl, 0, &cap);
    if (c < 0) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    else p->fetch_slot[i] = c;
  }
  free(on_dev);
  if (st) return st;
  int n = p->nslots;
  p->ncopies = n - nv;
  unsigned char *ref = realloc(p->slot_ref, (size_t)n + 1);
  if (ref) p->slot_ref = ref;
  int *dt = ref ? realloc(p->slot_dtype, ((size_t)n + 1) * sizeof *dt) : NULL;
  if (dt) p->slot_dtype = dt;
  int *lu = dt ? realloc(*last_use, ((size_t)n + 1) * sizeof *lu) : NULL;
  if (lu) *last_use = lu;
  p->xcache = lu ? calloc((size_t)n + 1, 1) : NULL;
  p->cache_host = p->xcache ? calloc((size_t)n + 1, sizeof *p->cache_host) : NULL;
  p->cache_dev = p->cache_host ? calloc((size_t)n + 1, sizeof *p->cache_dev) : NULL;
  p->cache_mu = p->cache_dev ? malloc(sizeof(pthread_mutex_t)) : NULL;
  if (!p->cache_mu) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  pthread_mutex_init(p->cache_mu, NULL);
  for (int sl = nv; sl < n; sl++) {
    int src = p->xsrc[sl];
    p->slot_ref[sl] = p->slot_ref[src];
    p->slot_dtype[sl] = p->slot_dtype[src];
    lu[sl] = -1;
    if (!p->xdir[sl]) continue;
    /* the weights: an upload of a Const's or a variable read's value, cached while it is the same */
    for (int i = 0; i < norder; i++) {
      const sm_step *sp = &p->steps[i];
      if (src >= sp->out_base && src < sp->out_base + sp->nout) {
        const char *op = sm__node_op(sp->node);
        p->xcache[sl] = !strcmp(op, "Const") || !strcmp(op, "ReadVariableOp") || !strcmp(op, "_SmReadVariable");
        break;
      }
    }
  }
  return NULL;
}

/* For a device plan: a device step whose prepare cannot do this node goes back to the CPU. */
static sm_status *prepare_step(sm_step *sp) {
  sm_status *st = sp->k->prepare(sp->node, &sp->state);
  if (!st || sp->backend == SM_BACKEND_CPU || sm_status_code(st) != SM_UNIMPLEMENTED) return st;
  const sm_kernel *cpu = sm__kernel_find(sm__node_op(sp->node), SM_BACKEND_CPU);
  if (!cpu || (cpu->flags & SM_KERNEL_PARSE_ONLY) || !cpu->compute) return st;
  sm_status_free(st);
  sp->state = NULL;
  sp->k = cpu;
  sp->backend = SM_BACKEND_CPU;
  return cpu->prepare ? cpu->prepare(sp->node, &sp->state) : NULL;
}

static sm_status *plan_build(const sm_cgraph *g, const sm_plan_spec *spec, const build_ctx *self, sm_plan **out) {
  *out = NULL;
  if (!g || !spec) return sm_status_new(SM_INVALID_ARGUMENT, "plan: no graph or no spec");
  int nfeeds = spec->nfeeds, nfetches = spec->nfetches, ntargets = spec->ntargets;
  if (nfeeds < 0 || nfetches < 0 || ntargets < 0 || (nfeeds && !spec->feeds) || (nfetches && !spec->fetches) ||
      (ntargets && !spec->targets))
    return sm_status_new(SM_INVALID_ARGUMENT, "plan: bad feed, fetch or target arrays");
  int nn = sm__cgraph_num_nodes(g);
  sm_plan *p = calloc(1, sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  p->g = g;
  p->nfeeds = nfeeds;
  p->nfetches = nfetches;
  int *order = NULL, norder = 0, *node_base = NULL, *last_use = NULL;
  sm_status *st = NULL;
  p->feed_edges = malloc(((size_t)nfeeds + 1) * sizeof *p->feed_edges);
  p->feed_slot = calloc((size_t)nfeeds + 1, sizeof *p->feed_slot);
  p->fetch_edges = malloc(((size_t)nfetches + 1) * sizeof *p->fetch_edges);
  p->fetch_slot = calloc((size_t)nfetches + 1, sizeof *p->fetch_slot);
  if (!p->feed_edges || !p->feed_slot || !p->fetch_edges || !p->fetch_slot) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }
  if (nfeeds) memcpy(p->feed_edges, spec->feeds, (size_t)nfeeds * sizeof *p->feed_edges);
  if (nfetches) memcpy(p->fetch_edges, spec->fetches, (size_t)nfetches * sizeof *p->fetch_edges);
  if ((st = make_labels(g, p->feed_edges, nfeeds, spec->feed_labels, &p->feed_labels))) goto fail;
  if ((st = make_labels(g, p->fetch_edges, nfetches, spec->fetch_labels, &p->fetch_labels))) goto fail;
  for (int i = 0; i < nfeeds; i++) {
    for (int j = 0; j < i; j++)
      if (p->feed_edges[j].node == p->feed_edges[i].node && p->feed_edges[j].index == p->feed_edges[i].index) {
        st = sm_status_new(SM_INVALID_ARGUMENT, "feeds '%s' and '%s' name the same tensor", p->feed_labels[j],
                           p->feed_labels[i]);
        goto fail;
      }
    p->feed_slot[i] = i;
  }
  if ((st = sm__cgraph_prune(g, p->feed_edges, nfeeds, p->fetch_edges, nfetches, spec->targets, ntargets, &order,
                            &norder)))
    goto fail;
  /* graph rewrites (fusion, by the op families' rules): from here the plan runs the rewritten
   * order, whose ids from nn up are the rules' new nodes (sm__rewrite_node), and reads every edge
   * through it (sm__plan_slot_of) */
  if ((st = sm__rewrite_run(g, order, norder, p->feed_edges, nfeeds, p->fetch_edges, nfetches, &p->rw))) goto fail;
  const int *ord = sm__rewrite_order(p->rw, &norder);
  nn = sm__rewrite_num_ids(p->rw);
  /* Per node id, its first output slot (-1: not run). */
  if (!(node_base = malloc(((size_t)nn + 1) * sizeof *node_base))) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }

  /* slots: feeds first, then each node's outputs */
  for (int i = 0; i < nn; i++) node_base[i] = -1;
  int nslots = nfeeds, max_in = 0;
  for (int i = 0; i < norder; i++) {
    const sm_node *nd = sm__rewrite_node(p->rw, ord[i]);
    node_base[ord[i]] = nslots;
    nslots += sm__node_num_outputs(nd);
    if (sm__node_num_inputs(nd) > max_in) max_in = sm__node_num_inputs(nd);
  }
  p->nslots = nslots;
  p->max_in = max_in;
  p->steps = calloc((size_t)norder + 1, sizeof *p->steps);
  p->slot_ref = calloc((size_t)nslots + 1, 1);
  p->slot_dtype = calloc((size_t)nslots + 1, sizeof *p->slot_dtype);
  last_use = malloc(((size_t)nslots + 1) * sizeof *last_use);
  if (!p->steps || !p->slot_ref || !p->slot_dtype || !last_use) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }
  for (int i = 0; i < nslots; i++) last_use[i] = -1;
  for (int i = 0; i < nfeeds; i++) {
    const sm_node *nd = sm__rewrite_node(p->rw, p->feed_edges[i].node);
    int dt = sm__node_output_dtype(nd, p->feed_edges[i].index);
    p->slot_dtype[i] = sm_dtype_base(dt);
    p->slot_ref[i] = dt >= SM_DTYPE_REF_OFFSET; /* e.g. a RefEnter fed a ref variable's handle */
  }
  for (int i = 0; i < norder; i++) {
    const sm_node *nd = sm__rewrite_node(p->rw, ord[i]);
    for (int k = 0; k < sm__node_num_outputs(nd); k++) {
      int dt = sm__node_output_dtype(nd, k);
      p->slot_dtype[node_base[ord[i]] + k] = dt;
      p->slot_ref[node_base[ord[i]] + k] = dt >= SM_DTYPE_REF_OFFSET;
    }
  }

  /* steps: kernels (collecting every missing one), input slots */
  int nmissing = 0;
  for (int i = 0; i < norder; i++) {
    sm_step *sp = &p->steps[i];
    const sm_node *nd = sm__rewrite_node(p->rw, ord[i]);
    const char *op = sm__node_op(nd);
    sp->node = nd;
    sp->backend = SM_BACKEND_CPU;
    sp->nin = sm__node_num_inputs(nd);
    sp->nout = sm__node_num_outputs(nd);
    sp->out_base = node_base[ord[i]];
    p->nsteps = i + 1;
    /* a fed Placeholder is in the order when a control edge waits on it (tf.CriticalSection's
     * group_deps): as TF's _Recv in its place, it has nothing to do */
    if (is_arg(op) || is_placeholder(op)) {
      int fed = 1;
      for (int k = 0; k < sp->nout && fed; k++) fed = is_fed(p, (sm_edge){ord[i], k});
      sp->k = fed ? &arg_kernel : NULL;
    } else if (!is_placeholder(op)) {
      const sm_kernel *k;
      if ((st = sm__kernel_lookup(op, sp->backend, &k))) goto fail;
      if (!k || (k->flags & SM_KERNEL_PARSE_ONLY) || !k->compute) {
        nmissing++;
        continue;
      }
      sp->k = k;
    }
    sp->in_slot = malloc(((size_t)sp->nin + 1) * sizeof *sp->in_slot);
    sp->in_mode = calloc((size_t)sp->nin + 1, 1);
    if (!sp->in_slot || !sp->in_mode) {
      st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
      goto fail;
    }
    for (int j = 0; j < sp->nin; j++) {
      sm_edge e = sm__node_input(nd, j);
      int sl = sm__plan_slot_of(p, node_base, e);
      if (sl < 0) {
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): input %d comes from a node the plan does not run",
                           sm__node_name(nd), op, j);
        goto fail;
      }
      sp->in_slot[j] = sl;
      if (p->slot_ref[sl] && sm__node_input_dtype(nd, j) < SM_DTYPE_REF_OFFSET) sp->in_mode[j] = SM_IN_READ_REF;
    }
    if (self->backend != SM_BACKEND_CPU && sp->k && sp->k != &arg_kernel && device_dtypes_ok(p, sp)) {
      const sm_kernel *k;
      if ((st = sm__kernel_lookup(op, self->backend, &k))) goto fail;
      if (k && !(k->flags & SM_KERNEL_PARSE_ONLY) && k->compute) {
        sp->k = k;
        sp->backend = self->backend;
      }
    }
  }
  if (nmissing) {
    st = missing_kernels(p, norder, nmissing);
    goto fail;
  }
  if ((st = mark_dead_steps(p, ord, norder, nn))) goto fail;
  if (self->backend != SM_BACKEND_CPU) {
    p->dev = sm__device_get(self->backend); /* NULL: sm__plan_build_placed */
    p->backend = self->backend;
    for (int i = 0; i < norder && p->has_dead; i++) /* dead tensors: the CPU's executor path only */
      if (p->steps[i].backend != SM_BACKEND_CPU) {
        p->steps[i].k = sm__kernel_find(sm__node_op(p->steps[i].node), SM_BACKEND_CPU);
        p->steps[i].backend = SM_BACKEND_CPU;
      }
  }
  for (int i = 0; i < norder; i++) {
    sm_step *sp = &p->steps[i];
    if (!sp->k || !sp->k->prepare) continue;
    const build_ctx *saved = tls_build;
    tls_build = self;
    sm_load_budget *saved_budget = sm__load_budget_swap(sm__cgraph_budget(g)); /* Const charges it */
    st = prepare_step(sp);
    sm__load_budget_swap(saved_budget);
    tls_build = saved;
    if (st) {
      sp->state = NULL;
      st = sm_status_prefix(st, "node '%s' (%s)", sm__node_name(sp->node), sm__node_op(sp->node));
      goto fail;
    }
  }
  for (int i = 0; i < nfetches; i++) {
    p->fetch_slot[i] = sm__plan_slot_of(p, node_base, p->fetch_edges[i]);
    if (p->fetch_slot[i] < 0) {
      st = sm_status_new(SM_INTERNAL, "fetch '%s' is not computed by the plan", p->fetch_labels[i]);
      goto fail;
    }
  }
  if (self->backend != SM_BACKEND_CPU && (st = place_copies(p, norder, &last_use))) goto fail;
  nslots = p->nslots;

  /* each input's last-reader flag */
  {
    int *nreaders = calloc((size_t)nslots + 1, sizeof *nreaders);
    unsigned char *fetched = calloc((size_t)nslots + 1, 1);
    if (!nreaders || !fetched) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    for (int i = 0; i < nfetches && !st; i++) {
      int sl = p->fetch_slot[i];
      fetched[sl] = 1;
      if (p->xsrc && p->xsrc[sl] >= 0) fetched[p->xsrc[sl]] = 1;
    }
    for (int i = 0; i < norder && !st; i++)
      for (int j = 0; j < p->steps[i].nin; j++)
        if (p->steps[i].in_slot) {
          int sl = p->steps[i].in_slot[j];
          nreaders[sl]++;
          if (p->xsrc && p->xsrc[sl] >= 0) nreaders[p->xsrc[sl]]++; /* a copy reads its source */
        }
    for (int i = 0; i < norder && !st; i++) {
      sm_step *sp = &p->steps[i];
      if (sp->nin > 0 && sp->in_slot) {
        if (!(sp->in_last = calloc((size_t)sp->nin, 1))) {
          st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
          break;
        }
        for (int j = 0; j < sp->nin; j++)
          sp->in_last[j] =
              nreaders[sp->in_slot[j]] == 1 && !fetched[sp->in_slot[j]] && sp->in_mode[j] == SM_IN_PASS;
      }
    }
    free(nreaders);
    free(fetched);
    if (st) goto fail;
  }
  for (int i = 0; i < norder; i++)
    for (int j = 0; j < p->steps[i].nin; j++)
      if (p->steps[i].in_slot) {
        int sl = p->steps[i].in_slot[j];
        last_use[sl] = i;
        if (p->xsrc && p->xsrc[sl] >= 0) last_use[p->xsrc[sl]] = i; /* the copy is made from it then */
      }
  /* fetch slots are kept to the end; the others are released after their last reader */
  for (int i = 0; i < nfetches; i++) {
    last_use[p->fetch_slot[i]] = norder; /* past every step: freed at the end */
    if (p->xsrc && p->xsrc[p->fetch_slot[i]] >= 0) last_use[p->xsrc[p->fetch_slot[i]]] = norder;
  }
  for (int i = 0; i < norder; i++) {
    sm_step *sp = &p->steps[i];
    for (int k = 0; k < sp->nout; k++)
      if (last_use[sp->out_base + k] < 0) last_use[sp->out_base + k] = i; /* nobody reads it */
  }
  int *cnt = calloc((size_t)norder + 1, sizeof *cnt);
  if (!cnt) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }
  for (int sl = 0; sl < nslots; sl++)
    if (last_use[sl] >= 0 && last_use[sl] < norder) cnt[last_use[sl]]++;
  for (int i = 0; i < norder && !st; i++) {
    if (!cnt[i]) continue;
    p->steps[i].release = malloc((size_t)cnt[i] * sizeof(int));
    if (!p->steps[i].release) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  }
  free(cnt);
  if (st) goto fail;
  for (int sl = 0; sl < nslots; sl++)
    if (last_use[sl] >= 0 && last_use[sl] < norder) {
      sm_step *sp = &p->steps[last_use[sl]];
      sp->release[sp->nrelease++] = sl;
    }
  free(order);
  free(node_base);
  free(last_use);
  p->prof = sm__step_prof_new(p->nsteps);
  *out = p;
  return NULL;
fail:
  free(order);
  free(node_base);
  free(last_use);
  sm__plan_free(p);
  return st;
}

/* ---- sub-plans ------------------------------------------------------------------------------- */
sm_status *sm__prepare_graph_plan(const sm_node *caller, const sm_plan_spec *spec, sm_plan **out) {
  if (!out) return sm_status_new(SM_INVALID_ARGUMENT, "sm__prepare_graph_plan: no output");
  *out = NULL;
  const build_ctx *b = tls_build;
  if (!caller || !spec) return sm_status_new(SM_INVALID_ARGUMENT, "sm__prepare_graph_plan: no caller or no spec");
  if (!b)
    return sm_status_new(SM_FAILED_PRECONDITION,
                         "node '%s': a sub-plan can only be compiled from a kernel's prepare while a plan is built",
                         sm__node_name(caller));
  if (b->depth + 1 > SM_PLAN_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "node '%s': sub-plans nest deeper than %d", sm__node_name(caller),
                         SM_PLAN_MAX_DEPTH);
  for (const build_ctx *q = b; q; q = q->parent)
    if (q->owner == caller)
      return sm_status_new(SM_INVALID_ARGUMENT, "node '%s' (%s) reaches itself: its body needs its own result",
                           sm__node_name(caller), sm__node_op(caller));
  build_ctx child = {b->g, b->fname, b->depth + 1, b, caller, SM_BACKEND_CPU};
  return plan_build(b->g, spec, &child, out);
}

sm_status *sm__prepare_function_plan(const sm_node *caller, const char *function_name, sm_plan **out) {
  return sm__prepare_function_plan_edit(caller, function_name, NULL, NULL, out);
}

sm_status *sm__prepare_function_plan_edit(const sm_node *caller, const char *function_name, sm_plan_edit_fn edit,
                                         void *arg, sm_plan **out) {
  if (!out) return sm_status_new(SM_INVALID_ARGUMENT, "sm__prepare_function_plan: no output");
  *out = NULL;
  if (!caller || !function_name || !*function_name)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm__prepare_function_plan: no caller node or no function name");
  const build_ctx *b = tls_build;
  if (!b)
    return sm_status_new(SM_FAILED_PRECONDITION,
                         "function '%s': a sub-plan can only be compiled from a kernel's prepare while a plan is built",
                         function_name);
  for (const build_ctx *q = b; q; q = q->parent)
    if (q->fname && !strcmp(q->fname, function_name))
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "function '%s' calls itself (through node '%s'): recursion is not supported", function_name,
                           sm__node_name(caller));
  if (b->depth + 1 > SM_PLAN_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "function '%s' (node '%s'): sub-plans nest deeper than %d", function_name,
                         sm__node_name(caller), SM_PLAN_MAX_DEPTH);
  sm_cgraph *fg;
  sm_status *st = sm__cgraph_compile_function(sm__cgraph_meta_graph(b->g), function_name, caller, &fg);
  if (st) return st;
  sm_plan_spec spec = {0};
  sm__cgraph_function_args(fg, &spec.feeds, &spec.nfeeds);
  sm__cgraph_function_rets(fg, &spec.fetches, &spec.nfetches);
  sm__cgraph_function_control_rets(fg, &spec.targets, &spec.ntargets);
  if (edit) {
    int build = 0;
    if ((st = edit(fg, &spec, arg, &build)) || !build) {
      sm__cgraph_free(fg);
      return st ? sm_status_prefix(st, "function '%s'", function_name) : NULL;
    }
  }
  build_ctx child = {fg, sm__cgraph_function_name(fg), b->depth + 1, b, NULL, SM_BACKEND_CPU};
  sm_plan *p;
  if ((st = plan_build(fg, &spec, &child, &p))) {
    sm__cgraph_free(fg);
    return sm_status_prefix(st, "function '%s'", function_name);
  }
  p->owned_g = fg;
  p->fname = sm__cgraph_function_name(fg);
  *out = p;
  return NULL;
}
