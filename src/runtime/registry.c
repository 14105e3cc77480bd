/* registry.c - the op registry: kernels keyed by (op, backend), from one table per kernel family.
 *
 * Each family file in src/ops/ exports `sm_kernels_<family>`, ended by an entry whose op is NULL;
 * the list of families is generated at build time (registry_families.c). The merged index is an
 * immutable snapshot sorted by (op, backend), published through one atomic pointer: lookups never
 * lock, they binary-search the snapshot they load. Building it (first use, or a table added by
 * sm__kernels_add) happens under a mutex; a build that runs out of memory publishes nothing, so
 * the next lookup tries again (an allocation failure is never remembered as "no kernel").
 * Superseded snapshots are kept until exit: a thread may still be searching one, and tables are
 * added a handful of times per process (tests, a backend opened at run time). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "runtime/kernel.h"

/* registry_families.c (generated): every sm_kernels_<family> table (the CPU's), NULL-terminated. */
extern const sm_kernel *const sm__kernel_families[];

typedef struct entry {
  const sm_kernel *k;
  int backend;
} entry;

#define MAX_ADDED_TABLES 64

typedef struct snapshot {
  entry *index; /* sorted by (op, backend) */
  int count;
  const char **names; /* distinct op names, sorted, NULL-terminated */
  int nnames;
  struct snapshot *older;
} snapshot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static snapshot *current; /* atomic */
static const sm_kernel *added[MAX_ADDED_TABLES];
static int added_backend[MAX_ADDED_TABLES];
static int nadded;

static int by_key(const void *a, const void *b) {
  const entry *x = a, *y = b;
  int c = strcmp(x->k->op, y->k->op);
  return c ? c : (x->backend > y->backend) - (x->backend < y->backend);
}

static void snapshot_free(snapshot *s) {
  if (!s) return;
  sm__free(s->index);
  sm__free(s->names);
  sm__free(s);
}

/* A new snapshot of the built-in families plus the added tables. NULL and *st set on failure. */
static snapshot *build(sm_status **st) {
  *st = NULL;
  int n = 0;
  for (int f = 0; sm__kernel_families[f]; f++)
    for (const sm_kernel *k = sm__kernel_families[f]; k->op; k++) n++;
  for (int t = 0; t < nadded; t++)
    for (const sm_kernel *k = added[t]; k->op; k++) n++;
  snapshot *s = sm__calloc(sizeof *s);
  if (s) s->index = sm__alloc((size_t)n * sizeof *s->index);
  if (s) s->names = sm__alloc((size_t)(n + 1) * sizeof *s->names);
  if (!s || !s->index || !s->names) {
    snapshot_free(s);
    *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "kernel registry: out of memory building the index");
    return NULL;
  }
  n = 0;
  for (int f = 0; sm__kernel_families[f]; f++)
    for (const sm_kernel *k = sm__kernel_families[f]; k->op; k++) s->index[n++] = (entry){k, SM_BACKEND_CPU};
  for (int t = 0; t < nadded; t++)
    for (const sm_kernel *k = added[t]; k->op; k++) s->index[n++] = (entry){k, added_backend[t]};
  qsort(s->index, (size_t)n, sizeof *s->index, by_key);
  s->count = n;
  for (int i = 0; i < n; i++) {
    if (i > 0 && !by_key(&s->index[i - 1], &s->index[i])) {
      *st = sm_status_new(SM_INTERNAL, "kernel registry: op '%s' is registered twice for backend %s",
                          s->index[i].k->op, sm__backend_name(s->index[i].backend));
      snapshot_free(s);
      return NULL;
    }
    if (i == 0 || strcmp(s->index[i - 1].k->op, s->index[i].k->op)) s->names[s->nnames++] = s->index[i].k->op;
  }
  s->names[s->nnames] = NULL;
  return s;
}

static sm_status *get(const snapshot **out) {
  snapshot *s = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
  if (s) {
    *out = s;
    return NULL;
  }
  sm_status *st = NULL;
  pthread_mutex_lock(&mu);
  s = current;
  if (!s && (s = build(&st))) __atomic_store_n(&current, s, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&mu);
  *out = s;
  return st;
}

sm_status *sm__kernels_add(const sm_kernel *table, sm_backend backend) {
  if (!table) return sm_status_new(SM_INVALID_ARGUMENT, "kernel registry: no table");
  sm_status *st = NULL;
  pthread_mutex_lock(&mu);
  if (nadded == MAX_ADDED_TABLES) {
    st = sm_status_new(SM_OUT_OF_RANGE, "kernel registry: more than %d tables added", MAX_ADDED_TABLES);
  } else {
    added_backend[nadded] = backend;
    added[nadded++] = table;
    snapshot *s = build(&st);
    if (!s) {
      nadded--; /* the table is not registered: the old snapshot stays in force */
    } else {
      s->older = current;
      __atomic_store_n(&current, s, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&mu);
  return st;
}

sm_status *sm__kernel_lookup(const char *op, sm_backend backend, const sm_kernel **out) {
  *out = NULL;
  const snapshot *s;
  sm_status *st = get(&s);
  if (st) return st;
  int lo = 0, hi = s->count - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(op, s->index[mid].k->op);
    if (!c) c = ((int)backend > s->index[mid].backend) - ((int)backend < s->index[mid].backend);
    if (c == 0) {
      *out = s->index[mid].k;
      return NULL;
    }
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

const sm_kernel *sm__kernel_find(const char *op, sm_backend backend) {
  const sm_kernel *k;
  sm_status_free(sm__kernel_lookup(op, backend, &k));
  return k;
}

const char *const *sm__kernel_ops(int *count) {
  const snapshot *s;
  sm_status *st = get(&s);
  if (st) {
    sm_status_free(st);
    *count = 0;
    static const char *const none[] = {NULL};
    return none;
  }
  *count = s->nnames;
  return s->names;
}

const char *sm__backend_name(int backend) {
  switch (backend) {
  case SM_BACKEND_CPU: return "CPU";
  case SM_BACKEND_CUDA: return "CUDA";
  }
  return "?";
}

/* At exit (and for leak checkers): every snapshot ever published. */
__attribute__((destructor)) static void registry_free(void) {
  snapshot *s = current;
  current = NULL;
  while (s) {
    snapshot *o = s->older;
    snapshot_free(s);
    s = o;
  }
}
