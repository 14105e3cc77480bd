/* session.c - the session object (compiled graph, resources, thread pool, export dir) and TF1
 * Session.run by name: the name-keyed cache of plans.
 *
 * sm__session_run sorts the caller's feed, fetch and target names, makes a key of them, and looks
 * the plan up in a lock-free list (entries are only ever prepended, and freed with the session).
 * On a miss it resolves the names and builds the plan (plan.c) outside any lock, then publishes it
 * with a compare-and-swap; two threads building the same plan at once both finish, one publishes,
 * the other frees its copy and uses the published one. So a run never waits for another run or
 * for a plan being compiled. The plan's feeds and fetches are in sorted-name order; the caller's
 * order maps onto them through the sort. Running is executor.c's. */
#include "runtime/session.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/plan.h"
#include "savedmodel/pbtxt.h"

/* More distinct plans than this are built, run and dropped rather than cached by sm__session_run (a
 * caller making a new fetch set per call must not grow memory without bound). sm__session_plan's
 * plans are always kept: their caller holds the handle. */
#define MAX_CACHED_PLANS 256

typedef struct cached {
  char *key;
  sm_plan *plan;
  struct cached *next; /* set before the entry is published, never changed after */
} cached;

struct sm_session {
  Tensorflow__MetaGraphDef *owned_mg;
  const Tensorflow__MetaGraphDef *mg;
  sm_cgraph *g;
  char *export_dir;
  sm_resources *res;
  sm_threadpool *pool;
  sm_exec_env env;
  _Atomic(cached *) plans; /* newest first */
  atomic_int nplans;
  sm_load_budget budget; /* what its graphs and constants may take (all zero: only hard limits) */
  sm_backend backend;    /* where the plans built from now on place what they can (device.h) */
};

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- session --------------------------------------------------------------------------------- */
sm_status *sm__session_new(const Tensorflow__MetaGraphDef *mg, const char *export_dir, int nthreads,
                          sm_session **out) {
  return sm__session_new_budget(mg, export_dir, nthreads, NULL, out);
}

sm_status *sm__session_new_budget(const Tensorflow__MetaGraphDef *mg, const char *export_dir, int nthreads,
                                 const sm_load_budget *budget, sm_session **out) {
  *out = NULL;
  if (!mg) return sm_status_new(SM_INVALID_ARGUMENT, "session: no MetaGraphDef");
  sm_session *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "session: out of memory");
  atomic_init(&s->plans, NULL);
  atomic_init(&s->nplans, 0);
  s->mg = mg;
  sm_status *st = NULL;
  if (export_dir && !(s->export_dir = dupstr(export_dir))) st = sm_status_new(SM_NO_MEMORY, "session: out of memory");
  if (budget) {
    s->budget = *budget;
    s->budget.nodes = s->budget.bytes = 0;
  }
  if (!st) {
    sm_load_budget *outer = sm__load_budget_swap(&s->budget);
    st = sm__cgraph_compile(mg, &s->g);
    sm__load_budget_swap(outer);
  }
  if (!st) st = sm__resources_new(&s->res);
  if (!st) {
    if (nthreads <= 0) {
      long n = sysconf(_SC_NPROCESSORS_ONLN);
      nthreads = n > 0 ? (n > 256 ? 256 : (int)n) : 1;
    }
    if (nthreads > 1) st = sm__threadpool_new(nthreads, &s->pool);
  }
  if (st) {
    sm__session_free(s);
    return st;
  }
  s->env = (sm_exec_env){s->res, s->pool, s->export_dir ? s->export_dir : "", 0};
  *out = s;
  return NULL;
}

/* ---- the load budget's size ------------------------------------------------------------------- */
static int64_t file_size(const char *dir, const char *name) {
  char path[4096];
  struct stat st;
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path || stat(path, &st) || !S_ISREG(st.st_mode))
    return 0;
  return (int64_t)st.st_size;
}

void sm__load_budget_for(const char *export_dir, int64_t opt_nodes, int64_t opt_bytes, sm_load_budget *out) {
  memset(out, 0, sizeof *out);
  int64_t pb = 0, vars = 0;
  if (export_dir) {
    pb = file_size(export_dir, "saved_model.pb");
    if (!pb) pb = file_size(export_dir, "saved_model.pbtxt");
    char vdir[4096];
    DIR *d = snprintf(vdir, sizeof vdir, "%s/variables", export_dir) < (int)sizeof vdir ? opendir(vdir) : NULL;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
      if (e->d_name[0] != '.' && vars < INT64_MAX / 8) vars += file_size(vdir, e->d_name);
    if (d) closedir(d);
  }
  int64_t nodes = pb / 16, bytes = pb + vars > INT64_MAX / 8 ? INT64_MAX / 2 : 4 * (pb + vars);
  out->max_nodes = opt_nodes > 0 ? opt_nodes : nodes > SM_LOAD_NODES_FLOOR ? nodes : SM_LOAD_NODES_FLOOR;
  out->max_bytes = opt_bytes > 0 ? opt_bytes : bytes > SM_LOAD_BYTES_FLOOR ? bytes : SM_LOAD_BYTES_FLOOR;
}

void sm__session_free(sm_session *s) {
  if (!s) return;
  for (cached *c = atomic_load(&s->plans); c;) {
    cached *n = c->next;
    sm__plan_free(c->plan);
    free(c->key);
    free(c);
    c = n;
  }
  sm__threadpool_free(s->pool);
  sm__resources_free(s->res); /* after plans: kernel states may point at resources */
  sm__cgraph_free(s->g);
  if (s->owned_mg) protobuf_c_message_free_unpacked(&s->owned_mg->base, NULL);
  free(s->export_dir);
  free(s);
}

const sm_cgraph *sm__session_graph(const sm_session *s) { return s ? s->g : NULL; }
sm_resources *sm__session_resources(sm_session *s) { return s ? s->res : NULL; }
const sm_exec_env *sm__session_env(const sm_session *s) { return s ? &s->env : NULL; }
void sm__session_allow_external_files(sm_session *s, int allow) {
  if (s) s->env.allow_external_files = allow != 0;
}

void sm__session_set_backend(sm_session *s, sm_backend b) {
  if (s) s->backend = b;
}

/* ---- names -> key ---------------------------------------------------------------------------- */
/* A name and where the caller gave it. */
typedef struct named {
  const char *name;
  int pos;
} named;

static int cmp_named(const void *a, const void *b) {
  const named *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* One Session.run's names, each list sorted, and the cache key they make. */
typedef struct request {
  named *f, *o, *t;
  int nf, no, nt;
  char *key;
  void *block; /* f, o and t live in it */
} request;

static sm_status *sort_names(const char *const *names, int n, const char *what, named *out) {
  for (int i = 0; i < n; i++) {
    if (!names[i]) return sm_status_new(SM_INVALID_ARGUMENT, "%s name %d is NULL", what, i);
    out[i] = (named){names[i], i};
  }
  qsort(out, (size_t)n, sizeof *out, cmp_named);
  return NULL;
}

static void request_free(request *r) {
  free(r->block);
  free(r->key);
}

static sm_status *request_init(request *r, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                               int nfetches, const char *const *targets, int ntargets) {
  memset(r, 0, sizeof *r);
  const char *what[3] = {"feed", "fetch", "target"};
  const char *const *names[3] = {feed_names, fetch_names, targets};
  int n[3] = {nfeeds, nfetches, ntargets};
  for (int i = 0; i < 3; i++) {
    if (n[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "negative number of %s", what[i]);
    if (n[i] > 0 && !names[i]) return sm_status_new(SM_INVALID_ARGUMENT, "%d %s but no names", n[i], what[i]);
  }
  named *block = malloc(((size_t)nfeeds + (size_t)nfetches + (size_t)ntargets + 1) * sizeof *block);
  if (!block) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  r->block = block;
  r->f = block;
  r->o = block + nfeeds;
  r->t = block + nfeeds + nfetches;
  r->nf = nfeeds;
  r->no = nfetches;
  r->nt = ntargets;
  sm_status *st = sort_names(feed_names, nfeeds, "feed", r->f);
  if (!st) st = sort_names(fetch_names, nfetches, "fetch", r->o);
  if (!st) st = sort_names(targets, ntargets, "target", r->t);
  if (st) return st;
  /* key: each name followed by \x1f, the three lists separated by \x1e */
  size_t len = 3;
  for (int i = 0; i < nfeeds + nfetches + ntargets; i++) len += strlen(block[i].name) + 1;
  char *k = r->key = malloc(len);
  if (!k) return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  const named *lists[3] = {r->f, r->o, r->t};
  for (int l = 0; l < 3; l++) {
    for (int i = 0; i < n[l]; i++) {
      size_t m = strlen(lists[l][i].name);
      memcpy(k, lists[l][i].name, m);
      k += m;
      *k++ = '\x1f';
    }
    if (l < 2) *k++ = '\x1e';
  }
  *k = 0;
  return NULL;
}

/* ---- plans by name --------------------------------------------------------------------------- */
/* Resolves the request's names and builds its plan (feeds and fetches in sorted-name order). */
/* placed: for inspection only (sm__plan_build_placed) */
static sm_status *build_named(const sm_session *s, const request *r, sm_backend backend, int placed, sm_plan **out) {
  const sm_cgraph *g = s->g;
  sm_edge *fe = calloc((size_t)r->nf + 1, sizeof *fe), *oe = calloc((size_t)r->no + 1, sizeof *oe);
  int *tn = calloc((size_t)r->nt + 1, sizeof *tn);
  const char **fl = calloc((size_t)r->nf + 1, sizeof *fl), **ol = calloc((size_t)r->no + 1, sizeof *ol);
  sm_status *st = NULL;
  if (!fe || !oe || !tn || !fl || !ol) {
    st = sm_status_new(SM_NO_MEMORY, "plan: out of memory");
    goto done;
  }
  for (int i = 0; i < r->nf; i++) {
    int ctl = 0;
    fl[i] = r->f[i].name;
    if ((st = sm__cgraph_resolve(g, fl[i], &fe[i], &ctl))) {
      st = sm_status_prefix(st, "feed '%s'", fl[i]);
      goto done;
    }
    if (ctl) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': a control input cannot be fed", fl[i]);
      goto done;
    }
  }
  for (int i = 0; i < r->no; i++) {
    int ctl = 0;
    ol[i] = r->o[i].name;
    if ((st = sm__cgraph_resolve(g, ol[i], &oe[i], &ctl))) {
      st = sm_status_prefix(st, "fetch '%s'", ol[i]);
      goto done;
    }
    if (ctl) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "fetch '%s': a control input cannot be fetched (run it as a target)",
                         ol[i]);
      goto done;
    }
  }
  for (int i = 0; i < r->nt; i++) {
    const char *t = r->t[i].name;
    int idx = sm__cgraph_find(g, t[0] == '^' ? t + 1 : t);
    if (idx < 0) {
      sm_edge e;
      int ctl = 0;
      if ((st = sm__cgraph_resolve(g, t, &e, &ctl))) {
        st = sm_status_prefix(st, "target '%s'", t);
        goto done;
      }
      idx = e.node;
    }
    tn[i] = idx;
  }
  sm_plan_spec spec = {fe, r->nf, oe, r->no, tn, r->nt, fl, ol};
  st = placed ? sm__plan_build_placed(g, &spec, backend, out) : sm__plan_build_on(g, &spec, backend, out);
done:
  free(fe);
  free(oe);
  free(tn);
  free(fl);
  free(ol);
  return st;
}

static sm_plan *cache_find(const cached *from, const cached *until, const char *key) {
  for (const cached *c = from; c && c != until; c = c->next)
    if (!strcmp(c->key, key)) return c->plan;
  return NULL;
}

/* The cached plan for the request, built (outside any lock) and published if absent. keep: the
 * plan must stay cached whatever MAX_CACHED_PLANS says; otherwise *transient = 1 when the cache is
 * full and the caller frees the plan after its run. */
static sm_status *get_plan(sm_session *s, request *r, int keep, sm_plan **out, int *transient) {
  *out = NULL;
  *transient = 0;
  cached *head = atomic_load_explicit(&s->plans, memory_order_acquire);
  if ((*out = cache_find(head, NULL, r->key))) return NULL;
  sm_plan *p;
  sm_status *st = build_named(s, r, s->backend, 0, &p);
  if (st) return st;
  /* a place in the cache: always when kept, else while there are fewer than MAX_CACHED_PLANS */
  cached *n = NULL;
  int counted = 1;
  if (atomic_fetch_add(&s->nplans, 1) >= MAX_CACHED_PLANS && !keep) {
    atomic_fetch_sub(&s->nplans, 1);
    counted = 0;
  }
  if (counted && !(n = malloc(sizeof *n))) {
    atomic_fetch_sub(&s->nplans, 1);
    sm__plan_free(p);
    return sm_status_new(SM_NO_MEMORY, "plan: out of memory");
  }
  /* Publish, unless another thread published the same plan since `head` was read: each pass
   * searches only the entries prepended since the one before. */
  const cached *seen = head;
  cached *cur = n ? head : atomic_load_explicit(&s->plans, memory_order_acquire);
  for (;;) {
    sm_plan *other = cache_find(cur, seen, r->key);
    if (other) {
      if (n) atomic_fetch_sub(&s->nplans, 1);
      free(n);
      sm__plan_free(p);
      *out = other;
      return NULL;
    }
    if (!n) { /* the cache is full: this plan runs once and goes */
      *transient = 1;
      *out = p;
      return NULL;
    }
    seen = cur;
    n->key = r->key;
    n->plan = p;
    n->next = cur;
    if (atomic_compare_exchange_weak_explicit(&s->plans, &cur, n, memory_order_acq_rel, memory_order_acquire)) break;
  }
  r->key = NULL; /* the entry owns it now */
  *out = p;
  return NULL;
}

sm_status *sm__session_plan(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                           int nfetches, const char *const *targets, int ntargets, const sm_plan **out, int *feed_pos,
                           int *fetch_pos) {
  if (out) *out = NULL;
  if (!s || !out) return sm_status_new(SM_INVALID_ARGUMENT, "session plan: NULL session or output");
  request r;
  sm_status *st = request_init(&r, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets);
  sm_plan *p = NULL;
  int transient;
  if (!st) st = get_plan(s, &r, 1, &p, &transient);
  if (!st) {
    for (int k = 0; feed_pos && k < r.nf; k++) feed_pos[r.f[k].pos] = k;
    for (int k = 0; fetch_pos && k < r.no; k++) fetch_pos[r.o[k].pos] = k;
    *out = p;
  }
  request_free(&r);
  return st;
}

sm_status *sm__session_placement(sm_session *s, const char *const *feed_names, int nfeeds,
                                const char *const *fetch_names, int nfetches, sm_backend b, char **text) {
  *text = NULL;
  if (!s) return sm_status_new(SM_INVALID_ARGUMENT, "session: NULL");
  request r;
  sm_status *st = request_init(&r, feed_names, nfeeds, fetch_names, nfetches, NULL, 0);
  sm_plan *p = NULL;
  if (!st) st = build_named(s, &r, b, 1, &p);
  if (!st && !(*text = sm__plan_placement_text(p))) st = sm_status_new(SM_NO_MEMORY, "placement: out of memory");
  sm__plan_free(p);
  request_free(&r);
  return st;
}

sm_status *sm__session_prepare(sm_session *s, const char *const *feed_names, int nfeeds, const char *const *fetch_names,
                              int nfetches, const char *const *targets, int ntargets) {
  if (!s) return sm_status_new(SM_INVALID_ARGUMENT, "session: NULL");
  request r;
  sm_status *st = request_init(&r, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets);
  sm_plan *p;
  int transient = 0;
  if (!st) st = get_plan(s, &r, 0, &p, &transient);
  if (!st && transient) sm__plan_free(p);
  request_free(&r);
  return st;
}

/* ---- running by name ------------------------------------------------------------------------- */
sm_status *sm__session_run(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                          const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                          sm_tensor **outputs) {
  return sm__session_run_opts(s, feed_names, feeds, nfeeds, fetch_names, nfetches, targets, ntargets, outputs, NULL);
}

sm_status *sm__session_run_opts(sm_session *s, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                               const char *const *fetch_names, int nfetches, const char *const *targets, int ntargets,
                               sm_tensor **outputs, const sm_run_options *opts) {
  if (!s) return sm_status_new(SM_INVALID_ARGUMENT, "session: NULL");
  if (nfetches > 0 && !outputs) return sm_status_new(SM_INVALID_ARGUMENT, "run: %d fetches but no outputs", nfetches);
  if (nfeeds > 0 && !feeds) return sm_status_new(SM_INVALID_ARGUMENT, "run: %d feeds but no tensors", nfeeds);
  for (int i = 0; i < nfetches; i++) outputs[i] = NULL;
  request r;
  sm_status *st = request_init(&r, feed_names, nfeeds, fetch_names, nfetches, targets, ntargets);
  sm_plan *p = NULL;
  int transient = 0;
  if (!st) st = get_plan(s, &r, 0, &p, &transient);
  sm_tensor **pf = NULL, **po = NULL;
  if (!st) {
    pf = malloc(((size_t)nfeeds + (size_t)nfetches + 1) * sizeof *pf);
    if (!pf) st = sm_status_new(SM_NO_MEMORY, "run: out of memory");
  }
  if (!st) {
    po = pf + nfeeds;
    for (int k = 0; k < nfeeds; k++) pf[k] = feeds[r.f[k].pos];
    st = sm__plan_run(p, &s->env, pf, po, opts);
    for (int k = 0; !st && k < nfetches; k++) outputs[r.o[k].pos] = po[k];
  }
  free(pf);
  if (transient) sm__plan_free(p);
  request_free(&r);
  return st;
}

sm_status *sm__session_from_pbtxt(const char *metagraph_pbtxt, sm_session **out) {
  *out = NULL;
  if (!metagraph_pbtxt) return sm_status_new(SM_INVALID_ARGUMENT, "session from pbtxt: no text");
  ProtobufCMessage *m;
  sm_status *st = sm_pbtxt_parse(&tensorflow__meta_graph_def__descriptor, metagraph_pbtxt, strlen(metagraph_pbtxt),
                                 "metagraph pbtxt", &m);
  if (st) return st;
  Tensorflow__MetaGraphDef *mg = (Tensorflow__MetaGraphDef *)m;
  sm_session *s;
  /* several threads, so kernels' parallel paths run in the kernel tests too */
  st = sm__session_new(mg, NULL, 4, &s);
  if (st) {
    protobuf_c_message_free_unpacked(m, NULL);
    return st;
  }
  s->owned_mg = mg;
  *out = s;
  return NULL;
}
