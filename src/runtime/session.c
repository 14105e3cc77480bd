/* session.c - TF1 Session.run over a compiled graph: plans, their cache, and the executor.
 *
 * A plan is built once per (feeds, fetches, targets) set: the pruned node order, rewritten by the
 * op families' rules (rewrite.h: fusion, which replaces chains with nodes such as _FusedConv2D),
 * each node's kernel and prepared state, and a slot for every value the run produces (fed tensors
 * first, then each node's outputs). Inputs are resolved to slots when the plan is built, and so is
 * the step after which a slot has no more readers, so a run frees every intermediate value as soon
 * as it can.
 * Plans are immutable and cached under a mutex; a run owns only its array of slot values, so many
 * threads can run one plan at once. Variables and tables are shared through sm_resources. */
#include "runtime/session.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "runtime/rewrite.h"
#include "savedmodel/pbtxt.h"

/* More distinct plans than this are built, run and dropped rather than cached (a caller making a
 * new fetch set per call must not grow memory without bound). */
#define MAX_CACHED_PLANS 256

enum { IN_PASS = 0, IN_READ_REF = 1 };

typedef struct step {
  int node;
  const sm_kernel *k; /* NULL for an unfed Placeholder: running it is the "must feed" error */
  void *state;
  int nin;
  int *in_slot;
  unsigned char *in_mode;
  int nout, out_base;
  int nrelease;
  int *release;
  /* per input: this step is the value's only and last reader (so it may be written in place
   * when nothing outside the run holds it) */
  unsigned char *in_last;
} step;

typedef struct plan {
  char *key;
  int nsteps;
  step *steps;
  int nslots;
  int max_in;
  int nfeeds, nfetches;
  char **feed_names; /* sorted, as given */
  sm_edge *feed_edges;
  int *feed_slot;
  char **fetch_names; /* sorted, as given (duplicates kept) */
  int *fetch_slot;
  unsigned char *slot_ref; /* the slot holds a TF1 ref variable handle, read when consumed as a value */
  int *slot_dtype;         /* dtype the graph declares for the slot (base for feeds) */
  sm_rewrite *rw;          /* the rewritten order's nodes: steps' node ids are its ids */
  struct plan *next;
} plan;

struct sm_session {
  Tensorflow__MetaGraphDef *owned_mg;
  const Tensorflow__MetaGraphDef *mg;
  sm_cgraph *g;
  char *export_dir;
  sm_resources *res;
  sm_threadpool *pool;
  pthread_mutex_t mu;
  plan *plans;
  int nplans;
};

struct sm_kctx {
  sm_session *s;
  const step *st;
  const sm_node *node;
  const sm_tensor **in;
  sm_tensor **out;
  void **scratch; /* blocks sm_kctx_scratch handed out during this compute, released after it */
  int nscratch, scratch_cap;
};

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

static const char *dtname(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "DT_INVALID";
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- kernel context -------------------------------------------------------------------------- */
const sm_node *sm_kctx_node(const sm_kctx *c) { return c->node; }
int sm_kctx_num_inputs(const sm_kctx *c) { return c->st->nin; }
const sm_tensor *sm_kctx_input(const sm_kctx *c, int i) {
  return i >= 0 && i < c->st->nin ? c->in[i] : NULL;
}
int sm_kctx_num_outputs(const sm_kctx *c) { return c->st->nout; }

sm_status *sm_kctx_alloc_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  if (i < 0 || i >= c->st->nout)
    return sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d out of range (it has %d)", sm_node_name(c->node),
                         sm_node_op(c->node), i, c->st->nout);
  sm_tensor *t;
  sm_status *s = sm_tensor_new(dtype, rank, dims, &t);
  if (s) return sm_status_prefix(s, "node '%s' (%s): output %d", sm_node_name(c->node), sm_node_op(c->node), i);
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
  *out = t;
  return NULL;
}

void sm_kctx_set_output(sm_kctx *c, int i, sm_tensor *t) {
  if (i < 0 || i >= c->st->nout) {
    sm_tensor_free(t);
    return;
  }
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
}

void sm_kctx_forward(sm_kctx *c, int in, int out) {
  if (in < 0 || in >= c->st->nin || !c->in[in]) return;
  sm_kctx_set_output(c, out, sm_tensor_ref((sm_tensor *)c->in[in]));
}

sm_status *sm_kctx_alloc_output_uninit(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  if (i < 0 || i >= c->st->nout)
    return sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d out of range (it has %d)", sm_node_name(c->node),
                         sm_node_op(c->node), i, c->st->nout);
  sm_tensor *t;
  sm_status *s = sm__tensor_new_uninit(dtype, rank, dims, &t);
  if (s) return sm_status_prefix(s, "node '%s' (%s): output %d", sm_node_name(c->node), sm_node_op(c->node), i);
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
  *out = t;
  return NULL;
}

sm_tensor *sm_kctx_reuse_input(sm_kctx *c, int in, int out, int dtype, int rank, const int64_t *dims) {
  if (in < 0 || in >= c->st->nin || out < 0 || out >= c->st->nout || !c->st->in_last || !c->st->in_last[in])
    return NULL;
  sm_tensor *t = (sm_tensor *)c->in[in];
  /* the run's slot holds one reference; any other (a feed's caller, a Const's state, a variable)
   * makes it shared */
  if (!t || sm_tensor_is_shared(t) || sm_tensor_dtype(t) != dtype || sm_tensor_rank(t) != rank) return NULL;
  if (rank && memcmp(sm_tensor_dims(t), dims, (size_t)rank * sizeof *dims)) return NULL;
  sm_kctx_set_output(c, out, sm_tensor_ref(t));
  return t;
}

void *sm_kctx_scratch(sm_kctx *c, size_t bytes, sm_status **st) {
  *st = NULL;
  if (c->nscratch == c->scratch_cap) {
    int ncap = c->scratch_cap ? c->scratch_cap * 2 : 4;
    void **nv = realloc(c->scratch, (size_t)ncap * sizeof *nv);
    if (!nv) {
      *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of scratch", bytes);
      return NULL;
    }
    c->scratch = nv;
    c->scratch_cap = ncap;
  }
  void *p = sm__alloc(bytes);
  if (!p) {
    *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of scratch", bytes);
    return NULL;
  }
  c->scratch[c->nscratch++] = p;
  return p;
}

void sm_kctx_scratch_free(sm_kctx *c, void *p) {
  if (!p) return;
  for (int i = c->nscratch - 1; i >= 0; i--)
    if (c->scratch[i] == p) {
      c->scratch[i] = c->scratch[--c->nscratch];
      sm__free(p);
      return;
    }
}

/* Releases what the kernel left of its scratch (after each compute). */
static void kctx_scratch_release(sm_kctx *c) {
  for (int i = 0; i < c->nscratch; i++) sm__free(c->scratch[i]);
  free(c->scratch);
  c->scratch = NULL;
  c->nscratch = c->scratch_cap = 0;
}

sm_resources *sm_kctx_resources(sm_kctx *c) { return c->s->res; }
sm_threadpool *sm_kctx_pool(sm_kctx *c) { return c->s->pool; }
const char *sm_kctx_export_dir(const sm_kctx *c) { return c->s->export_dir ? c->s->export_dir : ""; }

/* ---- session --------------------------------------------------------------------------------- */
sm_status *sm_session_new(const Tensorflow__MetaGraphDef *mg, const char *export_dir, int nthreads,
                          sm_session **out) {
  *out = NULL;
  if (!mg) return sm_status_new(SM_INVALID_ARGUMENT, "session: no MetaGraphDef");
  sm_session *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "session: out of memory");
  pthread_mutex_init(&s->mu, NULL);
  s->mg = mg;
  sm_status *st = NULL;
  if (export_dir && !(s->export_dir = dupstr(export_dir))) st = sm_status_new(SM_NO_MEMORY, "session: out of memory");
  if (!st) st = sm_cgraph_compile(mg, &s->g);
  if (!st) st = sm_resources_new(&s->res);
  if (!st) {
    if (nthreads <= 0) {
      long n = sysconf(_SC_NPROCESSORS_ONLN);
      nthreads = n > 0 ? (n > 256 ? 256 : (int)n) : 1;
    }
    if (nthreads > 1) st = sm_threadpool_new(nthreads, &s->pool);
  }
  if (st) {
    sm_session_free(s);
    return st;
  }
  *out = s;
  return NULL;
}

static void plan_free(plan *p) {
  if (!p) return;
  for (int i = 0; i < p->nsteps; i++) {
    step *st = &p->steps[i];
    if (st->k && st->k->release && st->state) st->k->release(st->state);
    free(st->in_slot);
    free(st->in_mode);
    free(st->release);
    free(st->in_last);
  }
  free(p->steps);
  sm_rewrite_free(p->rw); /* after the states: they may borrow its nodes' attrs */
  for (int i = 0; i < p->nfeeds; i++) free(p->feed_names[i]);
  for (int i = 0; i < p->nfetches; i++) free(p->fetch_names[i]);
  free(p->feed_names);
  free(p->fetch_names);
  free(p->feed_edges);
  free(p->feed_slot);
  free(p->fetch_slot);
  free(p->slot_ref);
  free(p->slot_dtype);
  free(p->key);
  free(p);
}

void sm_session_free(sm_session *s) {
  if (!s) return;
  for (plan *p = s->plans; p;) {
    plan *n = p->next;
    plan_free(p);
    p = n;
  }
  sm_threadpool_free(s->pool);
  sm_resources_free(s->res); /* after plans: kernel states may point at resources */
  sm_cgraph_free(s->g);
  if (s->owned_mg) protobuf_c_message_free_unpacked(&s->owned_mg->base, NULL);
  free(s->export_dir);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

const sm_cgraph *sm_session_graph(const sm_session *s) { return s ? s->g : NULL; }
sm_resources *sm_session_resources(sm_session *s) { return s ? s->res : NULL; }

/* ---- plan building --------------------------------------------------------------------------- */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static sm_status *sorted_copy(const char *const *names, int n, const char *what, char ***out) {
  *out = NULL;
  if (n < 0) return sm_status_new(SM_INVALID_ARGUMENT, "negative number of %s", what);
  if (n > 0 && !names) return sm_status_new(SM_INVALID_ARGUMENT, "%d %s but no names", n, what);
  char **c = calloc((size_t)(n ? n : 1), sizeof *c);
  if (!c) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  for (int i = 0; i < n; i++) {
    if (!names[i]) {
      for (int j = 0; j < i; j++) free(c[j]);
      free(c);
      return sm_status_new(SM_INVALID_ARGUMENT, "%s name %d is NULL", what, i);
    }
    if (!(c[i] = dupstr(names[i]))) {
      for (int j = 0; j < i; j++) free(c[j]);
      free(c);
      return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    }
  }
  qsort(c, (size_t)n, sizeof *c, cmp_str);
  *out = c;
  return NULL;
}

static char *make_key(char **f, int nf, char **o, int no, char **t, int nt) {
  sbuf b = {0};
  for (int i = 0; i < nf; i++) sb_printf(&b, "%s\x1f", f[i]);
  sb_printf(&b, "\x1e");
  for (int i = 0; i < no; i++) sb_printf(&b, "%s\x1f", o[i]);
  sb_printf(&b, "\x1e");
  for (int i = 0; i < nt; i++) sb_printf(&b, "%s\x1f", t[i]);
  if (b.oom || !b.p) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

static int is_placeholder(const char *op) { return !strcmp(op, "Placeholder") || !strcmp(op, "PlaceholderV2"); }

/* The slot a consumer reads for edge e: the feed if it is fed, else the output of the node that now
 * produces it (a rewrite may have moved it). */
static int slot_of(const plan *p, const int *node_base, sm_edge e) {
  for (int i = 0; i < p->nfeeds; i++)
    if (p->feed_edges[i].node == e.node && p->feed_edges[i].index == e.index) return p->feed_slot[i];
  e = sm_rewrite_edge(p->rw, e);
  if (e.node < 0 || node_base[e.node] < 0) return -1;
  return node_base[e.node] + e.index;
}

/* Each input's last-reader flag: the step is the value's only reader and nothing fetches it. */
static sm_status *plan_last_readers(plan *p, int norder, int nfetches, const sm_edge *fetch_edges,
                                    const int *node_base) {
  int *nreaders = calloc((size_t)p->nslots + 1, sizeof *nreaders);
  unsigned char *fetched = calloc((size_t)p->nslots + 1, 1);
  sm_status *st = NULL;
  if (!nreaders || !fetched) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  for (int i = 0; i < nfetches && !st; i++) {
    int sl = slot_of(p, node_base, fetch_edges[i]);
    if (sl >= 0) fetched[sl] = 1;
  }
  for (int i = 0; i < norder && !st; i++)
    for (int j = 0; j < p->steps[i].nin; j++)
      if (p->steps[i].in_slot) nreaders[p->steps[i].in_slot[j]]++;
  for (int i = 0; i < norder && !st; i++) {
    step *sp = &p->steps[i];
    if (sp->nin > 0 && sp->in_slot) {
      if (!(sp->in_last = calloc((size_t)sp->nin, 1))) {
        st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
        break;
      }
      for (int j = 0; j < sp->nin; j++)
        sp->in_last[j] = nreaders[sp->in_slot[j]] == 1 && !fetched[sp->in_slot[j]] && sp->in_mode[j] == IN_PASS;
    }
  }
  free(nreaders);
  free(fetched);
  return st;
}

static sm_status *build_plan(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                             int nfetches, const char *const *targets, int ntargets, plan **out) {
  *out = NULL;
  const sm_cgraph *g = s->g;
  int nn = sm_cgraph_num_nodes(g);
  plan *p = calloc(1, sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  char **tg = NULL;
  int *order = NULL, norder = 0, *node_base = NULL, *tnodes = NULL, *last_use = NULL;
  sm_edge *fetch_edges = NULL;
  sbuf missing = {0};
  sm_status *st = sorted_copy(feed_names, nfeeds, "feed", &p->feed_names);
  if (!st) {
    p->nfeeds = nfeeds;
    st = sorted_copy(fetch_names, nfetches, "fetch", &p->fetch_names);
  }
  if (!st) {
    p->nfetches = nfetches;
    st = sorted_copy(targets, ntargets, "target", &tg);
  }
  if (st) goto fail;
  p->feed_edges = calloc((size_t)nfeeds + 1, sizeof *p->feed_edges);
  p->feed_slot = calloc((size_t)nfeeds + 1, sizeof *p->feed_slot);
  fetch_edges = calloc((size_t)nfetches + 1, sizeof *fetch_edges);
  p->fetch_slot = calloc((size_t)nfetches + 1, sizeof *p->fetch_slot);
  tnodes = calloc((size_t)ntargets + 1, sizeof *tnodes);
  if (!p->feed_edges || !p->feed_slot || !fetch_edges || !p->fetch_slot || !tnodes) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }
  for (int i = 0; i < nfeeds; i++) {
    int ctl = 0;
    if ((st = sm_cgraph_resolve(g, p->feed_names[i], &p->feed_edges[i], &ctl))) {
      st = sm_status_prefix(st, "feed '%s'", p->feed_names[i]);
      goto fail;
    }
    if (ctl) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': a control input cannot be fed", p->feed_names[i]);
      goto fail;
    }
    for (int j = 0; j < i; j++)
      if (p->feed_edges[j].node == p->feed_edges[i].node && p->feed_edges[j].index == p->feed_edges[i].index) {
        st = sm_status_new(SM_INVALID_ARGUMENT, "feeds '%s' and '%s' name the same tensor", p->feed_names[j],
                           p->feed_names[i]);
        goto fail;
      }
    p->feed_slot[i] = i;
  }
  for (int i = 0; i < nfetches; i++) {
    int ctl = 0;
    if ((st = sm_cgraph_resolve(g, p->fetch_names[i], &fetch_edges[i], &ctl))) {
      st = sm_status_prefix(st, "fetch '%s'", p->fetch_names[i]);
      goto fail;
    }
    if (ctl) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "fetch '%s': a control input cannot be fetched (run it as a target)",
                         p->fetch_names[i]);
      goto fail;
    }
  }
  for (int i = 0; i < ntargets; i++) {
    const char *t = tg[i];
    int idx = sm_cgraph_find(g, t[0] == '^' ? t + 1 : t);
    if (idx < 0) {
      sm_edge e;
      int ctl = 0;
      if ((st = sm_cgraph_resolve(g, t, &e, &ctl))) {
        st = sm_status_prefix(st, "target '%s'", t);
        goto fail;
      }
      idx = e.node;
    }
    tnodes[i] = idx;
  }
  if ((st = sm_cgraph_prune(g, p->feed_edges, nfeeds, fetch_edges, nfetches, tnodes, ntargets, &order, &norder)))
    goto fail;
  /* graph rewrites (fusion): from here the plan runs the rewritten order, whose ids from nn up are
   * the rules' new nodes (sm_rewrite_node), and reads every edge through it (slot_of) */
  if ((st = sm_rewrite_run(g, order, norder, p->feed_edges, nfeeds, fetch_edges, nfetches, &p->rw))) goto fail;
  const int *ord = sm_rewrite_order(p->rw, &norder);
  nn = sm_rewrite_num_ids(p->rw);
  if (!(node_base = malloc(((size_t)nn + 1) * sizeof *node_base))) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }

  /* slots: feeds first, then each node's outputs */
  for (int i = 0; i < nn; i++) node_base[i] = -1;
  int nslots = nfeeds, max_in = 0;
  for (int i = 0; i < norder; i++) {
    const sm_node *nd = sm_rewrite_node(p->rw, ord[i]);
    node_base[ord[i]] = nslots;
    nslots += sm_node_num_outputs(nd);
    if (sm_node_num_inputs(nd) > max_in) max_in = sm_node_num_inputs(nd);
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
    const sm_node *nd = sm_cgraph_node(g, p->feed_edges[i].node);
    p->slot_dtype[i] = sm_dtype_base(sm_node_output_dtype(nd, p->feed_edges[i].index));
  }
  for (int i = 0; i < norder; i++) {
    const sm_node *nd = sm_rewrite_node(p->rw, ord[i]);
    for (int k = 0; k < sm_node_num_outputs(nd); k++) {
      int dt = sm_node_output_dtype(nd, k);
      p->slot_dtype[node_base[ord[i]] + k] = dt;
      p->slot_ref[node_base[ord[i]] + k] = dt >= SM_DTYPE_REF_OFFSET;
    }
  }

  /* steps: kernels (collecting every missing one), input slots, states */
  int nmissing = 0;
  for (int i = 0; i < norder; i++) {
    step *sp = &p->steps[i];
    const sm_node *nd = sm_rewrite_node(p->rw, ord[i]);
    const char *op = sm_node_op(nd);
    sp->node = ord[i];
    sp->nin = sm_node_num_inputs(nd);
    sp->nout = sm_node_num_outputs(nd);
    sp->out_base = node_base[ord[i]];
    p->nsteps = i + 1;
    if (!is_placeholder(op)) {
      const sm_kernel *k;
      if ((st = sm_kernel_lookup(op, SM_BACKEND_CPU, &k))) goto fail;
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
      sm_edge e = sm_node_input(nd, j);
      int sl = slot_of(p, node_base, e);
      if (sl < 0) {
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): input %d comes from a node the plan does not run",
                           sm_node_name(nd), op, j);
        goto fail;
      }
      sp->in_slot[j] = sl;
      if (p->slot_ref[sl] && sm_node_input_dtype(nd, j) < SM_DTYPE_REF_OFFSET) sp->in_mode[j] = IN_READ_REF;
    }
  }
  if (nmissing) {
    /* one line per op type, with every node that needs it */
    sb_printf(&missing, "this runtime has no kernel for %d node(s) this run needs:", nmissing);
    int ngroups = 0;
    for (int i = 0; i < norder; i++) {
      step *sp = &p->steps[i];
      const sm_node *nd = sm_rewrite_node(p->rw, sp->node);
      const char *op = sm_node_op(nd);
      if (sp->k || is_placeholder(op)) continue;
      int seen = 0;
      for (int j = 0; j < i && !seen; j++) {
        const sm_node *pn = sm_rewrite_node(p->rw, p->steps[j].node);
        if (!p->steps[j].k && !strcmp(sm_node_op(pn), op) && !is_placeholder(op)) seen = 1;
      }
      if (seen) continue;
      const sm_kernel *k = sm_kernel_find(op, SM_BACKEND_CPU);
      sb_printf(&missing, "%s %s%s (node", ngroups++ ? ";" : "", op,
                k ? " [parsed but not executable here]" : "");
      int cnt = 0;
      for (int j = i; j < norder; j++) {
        const sm_node *qn = sm_rewrite_node(p->rw, p->steps[j].node);
        if (!p->steps[j].k && !strcmp(sm_node_op(qn), op)) cnt++;
      }
      sb_printf(&missing, "%s", cnt > 1 ? "s" : "");
      int first = 1;
      for (int j = i; j < norder; j++) {
        const sm_node *qn = sm_rewrite_node(p->rw, p->steps[j].node);
        if (!p->steps[j].k && !strcmp(sm_node_op(qn), op)) {
          sb_printf(&missing, "%s '%s'", first ? "" : ",", sm_node_name(qn));
          first = 0;
        }
      }
      sb_printf(&missing, ")");
    }
    st = missing.oom ? sm_status_new(SM_UNIMPLEMENTED, "this runtime has no kernel for %d node(s) this run needs",
                                     nmissing)
                     : sm_status_new(SM_UNIMPLEMENTED, "%s", missing.p);
    goto fail;
  }
  if ((st = plan_last_readers(p, norder, nfetches, fetch_edges, node_base))) goto fail;
  for (int i = 0; i < norder; i++)
    for (int j = 0; j < p->steps[i].nin; j++)
      if (p->steps[i].in_slot) last_use[p->steps[i].in_slot[j]] = i;
  for (int i = 0; i < norder; i++) {
    step *sp = &p->steps[i];
    if (!sp->k || !sp->k->prepare) continue;
    const sm_node *nd = sm_rewrite_node(p->rw, sp->node);
    if ((st = sp->k->prepare(nd, &sp->state))) {
      sp->state = NULL;
      st = sm_status_prefix(st, "node '%s' (%s)", sm_node_name(nd), sm_node_op(nd));
      goto fail;
    }
  }
  /* fetch slots are kept to the end; the others are released after their last reader */
  for (int i = 0; i < nfetches; i++) {
    p->fetch_slot[i] = slot_of(p, node_base, fetch_edges[i]);
    if (p->fetch_slot[i] < 0) {
      st = sm_status_new(SM_INTERNAL, "fetch '%s' is not computed by the plan", p->fetch_names[i]);
      goto fail;
    }
    last_use[p->fetch_slot[i]] = norder; /* past every step: freed at the end */
  }
  for (int i = 0; i < norder; i++) {
    step *sp = &p->steps[i];
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
      step *sp = &p->steps[last_use[sl]];
      sp->release[sp->nrelease++] = sl;
    }
  p->key = make_key(p->feed_names, nfeeds, p->fetch_names, nfetches, tg, ntargets);
  if (!p->key) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto fail;
  }
  for (int i = 0; i < ntargets; i++) free(tg[i]);
  free(tg);
  free(order);
  free(node_base);
  free(tnodes);
  free(fetch_edges);
  free(last_use);
  *out = p;
  return NULL;
fail:
  if (tg)
    for (int i = 0; i < ntargets; i++) free(tg[i]);
  free(tg);
  free(order);
  free(node_base);
  free(tnodes);
  free(fetch_edges);
  free(last_use);
  free(missing.p);
  plan_free(p);
  return st;
}

/* The cached plan for this name set, built if absent. *transient = 1 when the cache is full and
 * the caller must free the plan after its run. */
static sm_status *get_plan(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                           int nfetches, const char *const *targets, int ntargets, plan **out, int *transient) {
  *out = NULL;
  *transient = 0;
  char **f = NULL, **o = NULL, **t = NULL;
  sm_status *st = sorted_copy(feed_names, nfeeds, "feed", &f);
  if (!st) st = sorted_copy(fetch_names, nfetches, "fetch", &o);
  if (!st) st = sorted_copy(targets, ntargets, "target", &t);
  char *key = st ? NULL : make_key(f, nfeeds, o, nfetches, t, ntargets);
  if (!st && !key) st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  if (f)
    for (int i = 0; i < nfeeds; i++) free(f[i]);
  if (o)
    for (int i = 0; i < nfetches; i++) free(o[i]);
  if (t)
    for (int i = 0; i < ntargets; i++) free(t[i]);
  free(f);
  free(o);
  free(t);
  if (st) return st;
  pthread_mutex_lock(&s->mu);
  for (plan *p = s->plans; p; p = p->next)
    if (!strcmp(p->key, key)) {
      pthread_mutex_unlock(&s->mu);
      free(key);
      *out = p;
      return NULL;
    }
  plan *p;
  st = build_plan(s, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets, &p);
  if (!st) {
    if (s->nplans < MAX_CACHED_PLANS) {
      p->next = s->plans;
      s->plans = p;
      s->nplans++;
    } else {
      *transient = 1;
    }
    *out = p;
  }
  pthread_mutex_unlock(&s->mu);
  free(key);
  return st;
}

sm_status *sm_session_prepare(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                              int nfetches, const char *const *targets, int ntargets) {
  if (!s) return sm_status_new(SM_INVALID_ARGUMENT, "session: NULL");
  plan *p;
  int transient;
  sm_status *st = get_plan(s, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets, &p, &transient);
  if (!st && transient) plan_free(p);
  return st;
}

/* ---- execution ------------------------------------------------------------------------------- */
static int find_name(char *const *names, int n, const char *name) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(name, names[mid]);
    if (!c) return mid;
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return -1;
}

/* The value of a ref-variable handle tensor (a DT_RESOURCE scalar holding an sm_variable *). */
static sm_status *read_ref(const sm_tensor *h, sm_tensor **out) {
  *out = NULL;
  if (sm_tensor_num_elements(h) != 1 || !sm_tensor_data(h))
    return sm_status_new(SM_INTERNAL, "a ref input is not a variable handle");
  sm_variable *v = *(sm_variable **)sm_tensor_data(h);
  if (!v) return sm_status_new(SM_INTERNAL, "a ref input holds a null variable");
  return sm_variable_read(v, out);
}

int64_t sm_monotonic_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* sm_run_options, checked before step i: a deadline passed or a cancel flag set stops the run. */
static sm_status *run_stop(const sm_run_options *ro, int i, int nsteps, const sm_node *nd) {
  if (ro->cancel && __atomic_load_n(ro->cancel, __ATOMIC_RELAXED))
    return sm_status_new(SM_CANCELLED, "run cancelled before step %d of %d (node '%s', %s)", i, nsteps,
                         sm_node_name(nd), sm_node_op(nd));
  if (ro->deadline_us > 0 && sm_monotonic_us() >= ro->deadline_us)
    return sm_status_new(SM_DEADLINE_EXCEEDED, "deadline exceeded before step %d of %d (node '%s', %s)", i, nsteps,
                         sm_node_name(nd), sm_node_op(nd));
  return NULL;
}

static sm_status *execute(sm_session *s, const plan *p, const char *const *feed_names, sm_tensor *const *feeds,
                          const char *const *fetch_names, sm_tensor **outputs, const sm_run_options *ro) {
  sm_tensor **vals = calloc((size_t)p->nslots + 1, sizeof *vals);
  const sm_tensor **in = calloc((size_t)p->max_in + 1, sizeof *in);
  sm_tensor **tmp = calloc((size_t)p->max_in + 1, sizeof *tmp);
  sm_status *st = NULL;
  int nout_done = 0;
  if (!vals || !in || !tmp) {
    st = sm_status_new(SM_NO_MEMORY, "run: out of memory");
    goto done;
  }
  for (int i = 0; i < p->nfeeds; i++) {
    int k = find_name(p->feed_names, p->nfeeds, feed_names[i]);
    if (k < 0) {
      st = sm_status_new(SM_INTERNAL, "feed '%s' is not in the plan", feed_names[i]);
      goto done;
    }
    if (!feeds[i]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': no tensor given", feed_names[i]);
      goto done;
    }
    int want = p->slot_dtype[p->feed_slot[k]], got = sm_tensor_dtype(feeds[i]);
    if (want && got != want) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': expected a tensor of dtype %s, given %s", feed_names[i],
                         dtname(want), dtname(got));
      goto done;
    }
    sm_tensor_free(vals[p->feed_slot[k]]); /* a name fed twice: sorted duplicates map to one slot */
    vals[p->feed_slot[k]] = sm_tensor_ref(feeds[i]);
  }
  for (int i = 0; i < p->nsteps; i++) {
    const step *sp = &p->steps[i];
    const sm_node *nd = sm_rewrite_node(p->rw, sp->node);
    if (ro && (st = run_stop(ro, i, p->nsteps, nd))) goto done;
    if (!sp->k) {
      int dt = sm_node_output_dtype(nd, 0);
      st = sm_status_new(SM_INVALID_ARGUMENT, "You must feed a value for placeholder tensor '%s' with dtype %s",
                         sm_node_name(nd), dtname(sm_dtype_base(dt)));
      goto done;
    }
    for (int j = 0; j < sp->nin; j++) {
      sm_tensor *t = vals[sp->in_slot[j]];
      tmp[j] = NULL;
      if (!t) {
        sm_edge e = sm_node_input(nd, j);
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): input %d ('%s:%d') has no value", sm_node_name(nd),
                           sm_node_op(nd), j, sm_node_name(sm_rewrite_node(p->rw, e.node)), e.index);
        for (int q = 0; q < j; q++) sm_tensor_free(tmp[q]);
        goto done;
      }
      if (sp->in_mode[j] == IN_READ_REF && sm_tensor_dtype(t) == SM_RESOURCE) {
        if ((st = read_ref(t, &tmp[j]))) {
          st = sm_status_prefix(st, "node '%s' (%s): input %d", sm_node_name(nd), sm_node_op(nd), j);
          for (int q = 0; q < j; q++) sm_tensor_free(tmp[q]);
          goto done;
        }
        in[j] = tmp[j];
      } else {
        in[j] = t;
      }
    }
    sm_kctx c = {s, sp, nd, in, vals + sp->out_base, NULL, 0, 0};
    st = sp->k->compute(sp->state, &c);
    kctx_scratch_release(&c);
    for (int j = 0; j < sp->nin; j++) {
      sm_tensor_free(tmp[j]);
      tmp[j] = NULL;
    }
    if (st) {
      st = sm_status_prefix(st, "node '%s' (%s)", sm_node_name(nd), sm_node_op(nd));
      goto done;
    }
    for (int k = 0; k < sp->nout; k++) {
      sm_tensor *t = vals[sp->out_base + k];
      int want = sm_node_output_dtype(nd, k);
      if (!t || !want) continue;
      int got = sm_tensor_dtype(t);
      int ok = want >= SM_DTYPE_REF_OFFSET ? (got == SM_RESOURCE || got == want - SM_DTYPE_REF_OFFSET) : got == want;
      if (!ok) {
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d is %s but the graph says %s", sm_node_name(nd),
                           sm_node_op(nd), k, dtname(got), dtname(want));
        goto done;
      }
    }
    for (int r = 0; r < sp->nrelease; r++) {
      sm_tensor_free(vals[sp->release[r]]);
      vals[sp->release[r]] = NULL;
    }
  }
  for (int i = 0; i < p->nfetches; i++) {
    int k = find_name(p->fetch_names, p->nfetches, fetch_names[i]);
    sm_tensor *t = k >= 0 ? vals[p->fetch_slot[k]] : NULL;
    if (!t) {
      st = sm_status_new(SM_INTERNAL, "fetch '%s': the run produced no value for it", fetch_names[i]);
      goto done;
    }
    if (p->slot_ref[p->fetch_slot[k]] && sm_tensor_dtype(t) == SM_RESOURCE) {
      if ((st = read_ref(t, &outputs[i]))) {
        st = sm_status_prefix(st, "fetch '%s'", fetch_names[i]);
        goto done;
      }
    } else {
      outputs[i] = sm_tensor_ref(t);
    }
    nout_done = i + 1;
  }
done:
  if (st)
    for (int i = 0; i < nout_done; i++) {
      sm_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
  if (vals)
    for (int i = 0; i < p->nslots; i++) sm_tensor_free(vals[i]);
  free(vals);
  free(in);
  free(tmp);
  return st;
}

sm_status *sm_session_run(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                          const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                          sm_tensor **outputs) {
  return sm_session_run_opts(s, feed_names, feeds, nfeeds, fetch_names, nfetches, targets, ntargets, outputs, NULL);
}

sm_status *sm_session_run_opts(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                               const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                               sm_tensor **outputs, const sm_run_options *opts) {
  if (!s) return sm_status_new(SM_INVALID_ARGUMENT, "session: NULL");
  if (nfetches > 0 && !outputs) return sm_status_new(SM_INVALID_ARGUMENT, "run: %d fetches but no outputs", nfetches);
  if (nfeeds > 0 && !feeds) return sm_status_new(SM_INVALID_ARGUMENT, "run: %d feeds but no tensors", nfeeds);
  for (int i = 0; i < nfetches; i++) outputs[i] = NULL;
  plan *p;
  int transient;
  sm_status *st = get_plan(s, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets, &p, &transient);
  if (st) return st;
  st = execute(s, p, feed_names, feeds, fetch_names, outputs, opts);
  if (transient) plan_free(p);
  return st;
}

sm_status *sm_session_from_pbtxt(const char *metagraph_pbtxt, sm_session **out) {
  *out = NULL;
  if (!metagraph_pbtxt) return sm_status_new(SM_INVALID_ARGUMENT, "session from pbtxt: no text");
  ProtobufCMessage *m;
  sm_status *st = sm_pbtxt_parse(&tensorflow__meta_graph_def__descriptor, metagraph_pbtxt, strlen(metagraph_pbtxt),
                                 "metagraph pbtxt", &m);
  if (st) return st;
  Tensorflow__MetaGraphDef *mg = (Tensorflow__MetaGraphDef *)m;
  sm_session *s;
  /* several threads, so kernels' parallel paths run in the kernel tests too */
  st = sm_session_new(mg, NULL, 4, &s);
  if (st) {
    protobuf_c_message_free_unpacked(m, NULL);
    return st;
  }
  s->owned_mg = mg;
  *out = s;
  return NULL;
}
