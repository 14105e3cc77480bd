/* manager.c - the model manager of `savedmodel serve`: TF Serving's FileSystemStoragePathSource
 * (which versions are on disk and wanted), AspiredVersionsManager with its default
 * AvailabilityPreservingPolicy (load the new before unloading the old), ServableStateMonitor
 * (the states GET /v1/models/M reports) and ServerCore's version labels, in one file.
 *
 * Locking: `mu` guards every version's state and reference count and the label maps; requests
 * only ever take `mu`, briefly. `pass_mu` serializes poll passes and config changes, so the
 * config (model list, base paths, policies) only changes while no pass runs; a pass reads it
 * without `mu`. Model loads and frees run with no lock held, so requests keep being served from
 * the old version while the new one loads.
 *
 * Version and model records are never freed before the manager: a version that was unloaded
 * stays listed in END state (as in TF Serving's status), and a model removed from the config
 * keeps its record (marked inactive) so that a later config can bring it back. */
#include "serve/manager.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/file.h"
#include "savedmodel/bundle.h"
#include "savedmodel/format.h"
#include "serve/limits.h"

enum { ST_START, ST_LOADING, ST_AVAILABLE, ST_UNLOADING, ST_END };
static const char *const state_names[] = {"START", "LOADING", "AVAILABLE", "UNLOADING", "END"};

typedef struct sm_servable mversion;
typedef struct mmodel mmodel;

/* A servable handed to requests is the version record itself: acquire counts a reference. */
struct sm_servable {
  sm_manager *mgr;
  mmodel *owner;
  int64_t version;
  char *path;         /* the version's directory (set when a load starts) */
  int state;          /* ST_* */
  sm_code err;        /* SM_OK unless the last load failed */
  char *err_msg;
  sm_model *model;    /* non-NULL while AVAILABLE or UNLOADING */
  int refs;           /* requests holding it */
  int aspired;        /* wanted by the policy at the last pass */
  int failures;       /* failed loads while aspired (and its files unchanged) */
  /* the version directory as the passes see it (only passes touch these, under pass_mu) */
  uint64_t fp;        /* fingerprint: names, sizes, mtimes */
  int64_t fp_since_us; /* when it was first seen with this fingerprint */
  uint64_t fail_fp;   /* the fingerprint of its last failed load */
  uint64_t said_fp;   /* the fingerprint it was last said to be incomplete at */
  struct sm_servable *next;
};

typedef struct vlabel { /* a version label: name -> version */
  char *label;
  int64_t version;
} vlabel;

struct mmodel {
  char *name;
  char *base_path;
  int policy;
  int64_t latest_n;
  int64_t *versions;
  int nversions;
  vlabel *labels;     /* guarded by mu: requests resolve them */
  int nlabels;
  int active;         /* in the current config */
  int warned_empty;   /* the "No versions of servable" hint was printed for this base path */
  mversion *vers;     /* guarded by mu; sorted by descending version */
  mmodel *next;
};

struct sm_manager {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* signalled when a reference drops or stop is set */
  pthread_mutex_t pass_mu;
  mmodel *models;
  char **tags;
  int ntags;
  int num_threads;
  int allow_unavailable_labels;
  int allow_external_files;
  int device;
  int max_load_retries;
  double retry_interval;
  sm_manager_counts counts;
  double poll_wait;
  double settle;
  int stop;
  pthread_t poll_thread;
  int has_poll_thread;
  /* model_config_file watching */
  char *config_path;
  double config_wait;
  char *config_text; /* last applied file contents */
  pthread_t config_thread;
  int has_config_thread;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

/* TF's error code names; our IO and NO_MEMORY have no TF twin. */
static const char *tf_code_name(sm_code c) {
  switch (c) {
    case SM_OK: return "OK";
    case SM_IO: return "UNKNOWN";
    case SM_NO_MEMORY: return "RESOURCE_EXHAUSTED";
    default: return sm_code_name(c);
  }
}

static mmodel *find_model(sm_manager *m, const char *name) {
  for (mmodel *mm = m->models; mm; mm = mm->next)
    if (strcmp(mm->name, name) == 0) return mm;
  return NULL;
}

static mversion *find_version(mmodel *mm, int64_t v) {
  for (mversion *x = mm->vers; x; x = x->next)
    if (x->version == v) return x;
  return NULL;
}

/* Inserts keeping descending order. */
static mversion *add_version(sm_manager *m, mmodel *mm, int64_t v) {
  mversion *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->mgr = m;
  x->owner = mm;
  x->version = v;
  x->state = ST_START;
  mversion **pp = &mm->vers;
  while (*pp && (*pp)->version > v) pp = &(*pp)->next;
  x->next = *pp;
  *pp = x;
  return x;
}

static int label_find(const mmodel *mm, const char *l, int64_t *v) {
  for (int i = 0; i < mm->nlabels; i++)
    if (strcmp(mm->labels[i].label, l) == 0) {
      if (v) *v = mm->labels[i].version;
      return 1;
    }
  return 0;
}

static void labels_free(vlabel *ls, int n) {
  for (int i = 0; i < n; i++) free(ls[i].label);
  free(ls);
}

/* ---- manager lifetime ------------------------------------------------------------------- */

static void *poll_main(void *arg);

sm_status *sm__manager_new(const sm_manager_options *opts, sm_manager **out) {
  *out = NULL;
  sm_manager_options def = {0};
  if (!opts) opts = &def;
  if (opts->poll_wait_seconds < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "file_system_poll_wait_seconds must not be negative, got %g",
                         opts->poll_wait_seconds);
  if (opts->ntags < 0 || (opts->ntags > 0 && !opts->tags))
    return sm_status_new(SM_INVALID_ARGUMENT, "manager options: %d tags given without a tag array", opts->ntags);
  sm_manager *m = calloc(1, sizeof *m);
  if (!m) return sm_status_new(SM_NO_MEMORY, "out of memory creating the model manager");
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  pthread_mutex_init(&m->pass_mu, NULL);
  m->num_threads = opts->num_threads;
  m->allow_unavailable_labels = opts->allow_version_labels_for_unavailable_models;
  m->allow_external_files = opts->allow_external_files;
  m->device = opts->device;
  m->max_load_retries = opts->max_num_load_retries > 0 ? opts->max_num_load_retries : 0;
  m->retry_interval = opts->load_retry_interval_micros > 0 ? (double)opts->load_retry_interval_micros / 1e6 : 0;
  m->poll_wait = opts->poll_wait_seconds;
  m->settle = opts->settle_seconds;
  static const char *const serve_tag[] = {"serve"};
  const char *const *tags = opts->tags ? opts->tags : serve_tag;
  int ntags = opts->tags ? opts->ntags : 1;
  m->tags = calloc(ntags ? (size_t)ntags : 1, sizeof *m->tags);
  if (!m->tags) {
    sm__manager_free(m);
    return sm_status_new(SM_NO_MEMORY, "out of memory creating the model manager");
  }
  m->ntags = ntags;
  for (int i = 0; i < ntags; i++)
    if (!(m->tags[i] = xstrdup(tags[i]))) {
      sm__manager_free(m);
      return sm_status_new(SM_NO_MEMORY, "out of memory creating the model manager");
    }
  if (m->poll_wait > 0) {
    if (pthread_create(&m->poll_thread, NULL, poll_main, m) != 0) {
      sm__manager_free(m);
      return sm_status_new(SM_INTERNAL, "cannot start the file system poll thread");
    }
    m->has_poll_thread = 1;
  }
  *out = m;
  return NULL;
}

static void model_free_record(mmodel *mm) {
  mversion *x = mm->vers;
  while (x) {
    mversion *n = x->next;
    sm_model_free(x->model);
    free(x->path);
    free(x->err_msg);
    free(x);
    x = n;
  }
  free(mm->name);
  free(mm->base_path);
  free(mm->versions);
  labels_free(mm->labels, mm->nlabels);
  free(mm);
}

void sm__manager_free(sm_manager *m) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  m->stop = 1;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  if (m->has_poll_thread) pthread_join(m->poll_thread, NULL);
  if (m->has_config_thread) pthread_join(m->config_thread, NULL);
  /* No pass runs now (the threads are gone; a caller's own pass would be a use after free).
   * Unload everything once the requests in flight have released it. */
  pthread_mutex_lock(&m->mu);
  for (;;) {
    int busy = 0;
    for (mmodel *mm = m->models; mm; mm = mm->next)
      for (mversion *x = mm->vers; x; x = x->next) busy |= x->refs > 0;
    if (!busy) break;
    pthread_cond_wait(&m->cv, &m->mu);
  }
  pthread_mutex_unlock(&m->mu);
  mmodel *mm = m->models;
  while (mm) {
    mmodel *n = mm->next;
    model_free_record(mm);
    mm = n;
  }
  for (int i = 0; i < m->ntags; i++) free(m->tags[i]);
  free(m->tags);
  free(m->config_path);
  free(m->config_text);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv);
  pthread_mutex_destroy(&m->pass_mu);
  free(m);
}

/* ---- the poll pass ------------------------------------------------------------------------ */

/* One version directory found on disk. */
typedef struct found {
  int64_t version;
  char *dir;
} found;

static int cmp_found_desc(const void *a, const void *b) {
  int64_t x = ((const found *)a)->version, y = ((const found *)b)->version;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* A child name is a version when it is all decimal digits and fits int64 (TF parses the name
 * as a number and ignores children that are not). */
static int parse_version(const char *s, int64_t *v) {
  if (!*s) return 0;
  int64_t r = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    if (r > (INT64_MAX - (*p - '0')) / 10) return 0;
    r = r * 10 + (*p - '0');
  }
  *v = r;
  return 1;
}

/* Lists base_path's version children, sorted by descending version. -1 when the base path cannot
 * be read (TF Serving logs it and leaves the model's aspired versions as they were). */
static int scan_base_path(const char *base, found **out, int *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(base);
  if (!d) return -1;
  found *fs = NULL;
  int nf = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t v;
    if (!parse_version(e->d_name, &v)) continue;
    int dup = 0;
    for (int i = 0; i < nf; i++) dup |= fs[i].version == v; /* "1" and "01": keep the first */
    if (dup) continue;
    if (nf == cap) {
      int nc = cap ? cap * 2 : 8;
      found *g = realloc(fs, (size_t)nc * sizeof *g);
      if (!g) break;
      fs = g;
      cap = nc;
    }
    fs[nf].version = v;
    if (!(fs[nf].dir = sm__path_join(base, e->d_name))) break;
    nf++;
  }
  closedir(d);
  if (nf > 1) qsort(fs, (size_t)nf, sizeof *fs, cmp_found_desc);
  *out = fs;
  *n = nf;
  return 0;
}

static void found_free(found *fs, int n) {
  for (int i = 0; i < n; i++) free(fs[i].dir);
  free(fs);
}

/* Does the policy want version fs[i] (fs sorted descending)? */
static int policy_wants(const mmodel *mm, const found *fs, int i) {
  switch (mm->policy) {
    case SM_POLICY_ALL: return 1;
    case SM_POLICY_SPECIFIC:
      for (int k = 0; k < mm->nversions; k++)
        if (mm->versions[k] == fs[i].version) return 1;
      return 0;
    default: return i < (mm->latest_n > 0 ? mm->latest_n : 1);
  }
}

typedef struct load_job {
  sm_manager *m;
  mversion *v;
  char *path;
  sm_model *model;
  sm_status *st;
  pthread_t th;
  int started;
} load_job;

static int wait_or_stop(sm_manager *m, double seconds);

/* TF Serving's LoaderHarness::Load with its Retrier: up to --max_num_load_retries more tries,
 * --load_retry_interval_micros apart (cut short by stop), each failure logged as TF Serving does.
 * The name is read without mu: a model record's name never changes. */
static void *load_main(void *arg) {
  load_job *j = arg;
  sm_manager *m = j->m;
  const char *name = j->v->owner->name;
  long long ver = (long long)j->v->version;
  sm_load_options lo = {.num_threads = m->num_threads, .allow_external_files = m->allow_external_files,
                        .device = m->device};
  fprintf(stderr, "Loading servable version {name: %s version: %lld}\n", name, ver);
  for (int tries = 0;; tries++) {
    if (tries) fprintf(stderr, "Retrying of Loading servable: {name: %s version: %lld} retry: %d\n", name, ver, tries);
    j->st = sm_model_load(j->path, (const char *const *)m->tags, m->ntags, &lo, &j->model);
    if (!j->st) return NULL;
    fprintf(stderr, "Loading servable: {name: %s version: %lld} failed: %s\n", name, ver, sm_status_message(j->st));
    if (tries >= m->max_load_retries) break;
    if (wait_or_stop(m, m->retry_interval)) break;
    sm_status_free(j->st);
    j->st = NULL;
  }
  if (m->max_load_retries)
    fprintf(stderr, "Retrying of Loading servable: {name: %s version: %lld} exhausted max_num_load_retries: %d\n",
            name, ver, m->max_load_retries);
  return NULL;
}

static void log_unloaded(const mversion *x) {
  fprintf(stderr, "Done unloading servable version {name: %s version: %lld}\n", x->owner->name,
          (long long)x->version);
}

/* Collects models to free once mu is dropped. */
typedef struct free_list {
  sm_model **v;
  int n, cap;
} free_list;

static void free_list_add(free_list *fl, sm_model *model) {
  if (!model) return;
  if (fl->n == fl->cap) {
    int nc = fl->cap ? fl->cap * 2 : 8;
    sm_model **g = realloc(fl->v, (size_t)nc * sizeof *g);
    if (!g) { /* freeing under the lock is slower but correct */
      sm_model_free(model);
      return;
    }
    fl->v = g;
    fl->cap = nc;
  }
  fl->v[fl->n++] = model;
}

static void free_list_run(free_list *fl) {
  for (int i = 0; i < fl->n; i++) sm_model_free(fl->v[i]);
  free(fl->v);
  fl->v = NULL;
  fl->n = fl->cap = 0;
}

/* Under mu: start unloading x; the model is freed now if no request holds it. */
static void begin_unload(sm_manager *m, mversion *x, free_list *fl) {
  x->state = ST_UNLOADING;
  if (x->refs == 0) {
    free_list_add(fl, x->model);
    x->model = NULL;
    x->state = ST_END;
    m->counts.unloads++;
    log_unloaded(x);
  }
}

/* Under mu: TF's AvailabilityPreservingPolicy, applied until it has nothing left to unload: an
 * AVAILABLE version no longer aspired is unloaded when the model has no aspired version, or one
 * aspired version is AVAILABLE, or more than one unaspired version is AVAILABLE (lowest first). */
static void unload_unaspired(sm_manager *m, mmodel *mm, free_list *fl) {
  for (;;) {
    int has_aspired = 0, has_ready = 0, nun = 0;
    mversion *lowest = NULL;
    for (mversion *x = mm->vers; x; x = x->next) {
      if (x->aspired) {
        has_aspired = 1;
        has_ready |= x->state == ST_AVAILABLE;
      } else if (x->state == ST_AVAILABLE) {
        nun++;
        lowest = x; /* the list is descending: the last seen is the lowest */
      }
    }
    if (!nun || !(!has_aspired || has_ready || nun > 1)) return;
    begin_unload(m, lowest, fl);
  }
}

/* ---- is a version directory ready? ------------------------------------------------------ */

static int64_t clock_us(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

typedef struct dirprint {
  uint64_t sum;      /* of each entry's hash: the order readdir gives does not matter */
  int64_t newest_us; /* newest mtime (wall clock) */
  int entries;
} dirprint;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211u;
  return h;
}

/* Every entry under dir (8 levels, 100,000 entries at most): relative name, type, size, mtime. */
static void print_dir(const char *dir, const char *rel, int depth, dirprint *p) {
  DIR *d = opendir(dir);
  if (!d) {
    p->sum += fnv(14695981039346656037u, rel, strlen(rel)) ^ 1;
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) && p->entries < 100000) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *path = sm__path_join(dir, e->d_name), *name = sm__path_join(rel, e->d_name);
    struct stat st;
    if (path && name && stat(path, &st) == 0) {
      int64_t v[4] = {(int64_t)(st.st_mode & S_IFMT), (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                      (int64_t)st.st_mtim.tv_nsec};
      p->sum += fnv(fnv(14695981039346656037u, name, strlen(name)), v, sizeof v);
      int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
      if (mt > p->newest_us) p->newest_us = mt;
      p->entries++;
      if (S_ISDIR(st.st_mode) && depth < 8) print_dir(path, name, depth + 1, p);
    } else if (name) {
      p->sum += fnv(14695981039346656037u, name, strlen(name)) ^ 2; /* vanished while listed */
    }
    free(path);
    free(name);
  }
  closedir(d);
}

/* Has x's directory stopped changing? Stable for settle seconds across passes, or every file
 * older than that. Updates x's fingerprint. */
static int settled(const sm_manager *m, mversion *x, const char *dir) {
  dirprint p = {0};
  print_dir(dir, ".", 0, &p);
  int64_t now = clock_us(CLOCK_MONOTONIC);
  if (p.sum != x->fp || !x->fp_since_us) {
    x->fp = p.sum;
    x->fp_since_us = now;
  }
  if (m->settle <= 0) return 1;
  int64_t settle_us = (int64_t)(m->settle * 1e6);
  return now - x->fp_since_us >= settle_us || clock_us(CLOCK_REALTIME) - p.newest_us >= settle_us;
}

/* NULL when dir holds a whole SavedModel, else what is missing (the caller frees it): a graph
 * that restores variables (a saver_def), or a variables/ directory, needs a bundle that opens
 * (the index and every data shard it names). A saved_model.pb that does not parse is the load's
 * to report. */
static char *incomplete(const char *dir) {
  Tensorflow__SavedModel *smp = NULL;
  sm_status *s = sm_saved_model_read(dir, &smp);
  if (s) {
    sm_status_free(s);
    return NULL;
  }
  int needs = 0;
  for (size_t i = 0; i < smp->n_meta_graphs; i++) {
    const Tensorflow__SaverDef *sd = smp->meta_graphs[i]->saver_def;
    needs |= sd && sd->restore_op_name && *sd->restore_op_name;
  }
  sm_saved_model_free(smp);
  char *vdir = sm__path_join(dir, "variables");
  char *prefix = vdir ? sm__path_join(vdir, "variables") : NULL;
  struct stat st;
  needs |= vdir && stat(vdir, &st) == 0;
  char *why = NULL;
  if (!prefix) {
    why = strdup("out of memory");
  } else if (needs) {
    sm_bundle *b = NULL;
    s = sm_bundle_open(prefix, &b);
    sm_bundle_close(b);
    if (s) {
      why = xstrdup(sm_status_message(s));
      if (!why) why = strdup("out of memory");
      sm_status_free(s);
    }
  }
  free(vdir);
  free(prefix);
  return why;
}

/* May candidate x (START, or END after an unload or a failed load) be loaded from dir now?
 * *unsettled counts those still changing. */
static int ready_to_load(sm_manager *m, mversion *x, const char *dir, int *unsettled) {
  if (!settled(m, x, dir)) {
    ++*unsettled;
    return 0;
  }
  if (x->state == ST_END) {
    if (x->failures && x->fp != x->fail_fp) x->failures = 0; /* its files changed: start afresh */
    if (x->failures >= SM_SERVE_LOAD_RETRIES) return 0;
  }
  char *why = incomplete(dir);
  if (!why) return 1;
  if (x->said_fp != x->fp) {
    fprintf(stderr, "savedmodel serve: servable {name: %s version: %lld} is not complete yet, not loading it: %s\n",
            x->owner->name, (long long)x->version, why);
    x->said_fp = x->fp;
  }
  free(why);
  return 0;
}

/* One pass over every model; pass_mu held by the caller. Returns how many wanted versions were
 * left for a later pass because their files were still changing. */
static int poll_pass_locked(sm_manager *m) {
  int nmodels = 0;
  for (mmodel *mm = m->models; mm; mm = mm->next) nmodels++;
  size_t cap = nmodels ? (size_t)nmodels : 1;
  found **fss = calloc(cap, sizeof *fss);
  int *nfs = calloc(cap, sizeof *nfs);
  int *ok = calloc(cap, sizeof *ok);
  if (!fss || !nfs || !ok) {
    free(fss);
    free(nfs);
    free(ok);
    return 0;
  }
  /* Disk first, with no lock: the config cannot change under us (pass_mu). */
  int i = 0;
  for (mmodel *mm = m->models; mm; mm = mm->next, i++) {
    if (!mm->active) continue;
    if (scan_base_path(mm->base_path, &fss[i], &nfs[i]) == 0) {
      ok[i] = 1;
      /* TF Serving's hint, once per base path (it would repeat it every poll) */
      if (!nfs[i] && !mm->warned_empty)
        fprintf(stderr,
                "No versions of servable %s found under base path %s. Did you forget to name your leaf directory "
                "as a number (eg. '/1/')?\n",
                mm->name, mm->base_path);
      mm->warned_empty = !nfs[i];
    } else
      fprintf(stderr, "savedmodel serve: Could not find base path %s for servable %s\n", mm->base_path, mm->name);
  }

  /* What is aspired, and what to load. */
  load_job *jobs = NULL;
  int njobs = 0, capjobs = 0;
  free_list fl = {0};
  pthread_mutex_lock(&m->mu);
  i = 0;
  for (mmodel *mm = m->models; mm; mm = mm->next, i++) {
    if (mm->active && !ok[i]) continue; /* unreadable base path: keep what is aspired */
    for (mversion *x = mm->vers; x; x = x->next) x->aspired = 0;
    if (!mm->active) continue;
    for (int k = 0; k < nfs[i]; k++) {
      if (!policy_wants(mm, fss[i], k)) continue;
      mversion *x = find_version(mm, fss[i][k].version);
      if (!x && !(x = add_version(m, mm, fss[i][k].version))) continue;
      x->aspired = 1;
      if (x->state != ST_START && x->state != ST_END) continue;
      if (njobs == capjobs) {
        int nc = capjobs ? capjobs * 2 : 8;
        load_job *g = realloc(jobs, (size_t)nc * sizeof *g);
        if (!g) continue;
        jobs = g;
        capjobs = nc;
      }
      char *p = strdup(fss[i][k].dir);
      if (!p) continue;
      jobs[njobs] = (load_job){.m = m, .v = x, .path = p};
      njobs++;
    }
    /* A failed version no longer wanted may be tried afresh if it is wanted again. */
    for (mversion *x = mm->vers; x; x = x->next)
      if (!x->aspired && x->state == ST_END) x->failures = 0;
  }
  pthread_mutex_unlock(&m->mu);

  /* Which candidates are whole and settled on disk (no lock: only passes touch what this reads
   * and writes); the others stay as they are and are looked at again next pass. */
  int nready = 0, unsettled = 0;
  for (int k = 0; k < njobs; k++) {
    if (ready_to_load(m, jobs[k].v, jobs[k].path, &unsettled)) jobs[nready++] = jobs[k];
    else free(jobs[k].path);
  }
  njobs = nready;
  pthread_mutex_lock(&m->mu);
  for (int k = 0; k < njobs; k++) {
    free(jobs[k].v->path);
    jobs[k].v->path = jobs[k].path;
    jobs[k].v->state = ST_LOADING;
  }
  pthread_mutex_unlock(&m->mu);

  /* Load in parallel with no lock held: requests keep using the versions already there. x->path
   * is only replaced by a pass, and passes are serialized, so the jobs may read it. */
  for (int k = 0; k < njobs; k++)
    jobs[k].started = njobs > 1 && pthread_create(&jobs[k].th, NULL, load_main, &jobs[k]) == 0;
  for (int k = 0; k < njobs; k++) {
    if (jobs[k].started)
      pthread_join(jobs[k].th, NULL);
    else
      load_main(&jobs[k]);
  }

  pthread_mutex_lock(&m->mu);
  for (int k = 0; k < njobs; k++) {
    mversion *x = jobs[k].v;
    m->counts.loads++;
    free(x->err_msg);
    x->err_msg = NULL;
    if (!jobs[k].st) {
      x->model = jobs[k].model;
      x->state = ST_AVAILABLE;
      x->err = SM_OK;
      x->failures = 0;
      fprintf(stderr, "Successfully loaded servable version {name: %s version: %lld}\n", x->owner->name,
              (long long)x->version);
      /* available, but some signatures cannot run: say which and why (predict on them fails) */
      for (int w = 0; w < sm_model_num_warnings(x->model); w++)
        fprintf(stderr, "savedmodel serve: servable {name: %s version: %lld} is available, but %s\n", x->owner->name,
                (long long)x->version, sm_model_warning(x->model, w));
    } else {
      m->counts.load_failures++;
      x->state = ST_END;
      x->err = sm_status_code(jobs[k].st);
      x->err_msg = xstrdup(sm_status_message(jobs[k].st));
      x->failures++;
      x->fail_fp = x->fp;
      fprintf(stderr, "Encountered an error for servable version {name: %s version: %lld}: %s\n", x->owner->name,
              (long long)x->version, sm_status_message(jobs[k].st));
      sm_status_free(jobs[k].st);
    }
  }
  for (mmodel *mm = m->models; mm; mm = mm->next) unload_unaspired(m, mm, &fl);
  pthread_mutex_unlock(&m->mu);
  free_list_run(&fl);
  free(jobs);
  for (i = 0; i < nmodels; i++) found_free(fss[i], nfs[i]);
  free(fss);
  free(nfs);
  free(ok);
  return unsettled;
}

void sm__manager_poll(sm_manager *m) {
  if (!m) return;
  pthread_mutex_lock(&m->pass_mu);
  poll_pass_locked(m);
  pthread_mutex_unlock(&m->pass_mu);
}

/* Waits up to `seconds` or until stop; returns the stop flag. */
static int wait_or_stop(sm_manager *m, double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double whole = (double)(time_t)seconds;
  ts.tv_sec += (time_t)seconds;
  ts.tv_nsec += (long)((seconds - whole) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&m->mu);
  while (!m->stop)
    if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT) break;
  int stop = m->stop;
  pthread_mutex_unlock(&m->mu);
  return stop;
}

static void *poll_main(void *arg) {
  sm_manager *m = arg;
  while (!wait_or_stop(m, m->poll_wait)) sm__manager_poll(m);
  return NULL;
}

/* ---- configuration ------------------------------------------------------------------------ */

static int label_version_available(const mmodel *mm, int64_t v) {
  if (!mm) return 0;
  for (const mversion *x = mm->vers; x; x = x->next)
    if (x->version == v) return x->state == ST_AVAILABLE;
  return 0;
}

sm_status *sm__manager_set_config(sm_manager *m, const sm_model_config *models, int n) {
  if (n < 0 || (n > 0 && !models))
    return sm_status_new(SM_INVALID_ARGUMENT, "model config list: %d models given without an array", n);
  for (int i = 0; i < n; i++) {
    const sm_model_config *c = &models[i];
    if (!c->name || !*c->name) return sm_status_new(SM_INVALID_ARGUMENT, "model config %d has no name", i);
    if (!c->base_path || !*c->base_path)
      return sm_status_new(SM_INVALID_ARGUMENT, "model %s has no base_path", c->name);
    for (int k = 0; k < i; k++)
      if (strcmp(models[k].name, c->name) == 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "Illegal to list model %s multiple times in config list", c->name);
    if (c->policy < SM_POLICY_LATEST || c->policy > SM_POLICY_SPECIFIC)
      return sm_status_new(SM_INVALID_ARGUMENT, "model %s: unknown version policy %d", c->name, c->policy);
    if (c->policy == SM_POLICY_SPECIFIC && (c->nversions < 0 || (c->nversions > 0 && !c->versions)))
      return sm_status_new(SM_INVALID_ARGUMENT, "model %s: %d specific versions given without an array", c->name,
                           c->nversions);
    if (c->nlabels < 0 || (c->nlabels > 0 && !c->labels))
      return sm_status_new(SM_INVALID_ARGUMENT, "model %s: %d labels given without an array", c->name, c->nlabels);
    for (int k = 0; k < c->nlabels; k++) {
      if (!c->labels[k].label || !*c->labels[k].label)
        return sm_status_new(SM_INVALID_ARGUMENT, "model %s: version label %d is empty", c->name, k);
      for (int j = 0; j < k; j++)
        if (strcmp(c->labels[j].label, c->labels[k].label) == 0)
          return sm_status_new(SM_INVALID_ARGUMENT, "model %s: label %s given twice", c->name, c->labels[k].label);
    }
  }

  pthread_mutex_lock(&m->pass_mu);
  /* Labels first, against the states before this config loads anything (ServerCore's
   * UpdateModelVersionLabelMap runs before AddModelsViaModelConfigList). */
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < n; i++) {
    const sm_model_config *c = &models[i];
    mmodel *mm = find_model(m, c->name);
    for (int k = 0; k < c->nlabels; k++) {
      int64_t old;
      int allow = m->allow_unavailable_labels &&
                  !(mm && mm->active && label_find(mm, c->labels[k].label, &old) && old != c->labels[k].version);
      if (!allow && !label_version_available(mm, c->labels[k].version)) {
        pthread_mutex_unlock(&m->mu);
        pthread_mutex_unlock(&m->pass_mu);
        return sm_status_new(SM_FAILED_PRECONDITION,
                             "Request to assign label to version %lld of model %s, which is not currently available "
                             "for inference",
                             (long long)c->labels[k].version, c->name);
      }
    }
  }
  pthread_mutex_unlock(&m->mu);

  /* Build the new per-model settings outside the lock, then swap them in. */
  typedef struct staged {
    mmodel *mm; /* existing record or a new one */
    int fresh;
    char *base_path;
    int64_t *versions;
    vlabel *labels;
  } staged;
  staged *st = calloc(n ? (size_t)n : 1, sizeof *st);
  sm_status *err = NULL;
  if (!st) err = sm_status_new(SM_NO_MEMORY, "out of memory applying the model config");
  for (int i = 0; i < n && !err; i++) {
    const sm_model_config *c = &models[i];
    st[i].mm = find_model(m, c->name);
    if (!st[i].mm) {
      st[i].fresh = 1;
      st[i].mm = calloc(1, sizeof *st[i].mm);
      if (!st[i].mm || !(st[i].mm->name = strdup(c->name))) {
        err = sm_status_new(SM_NO_MEMORY, "out of memory applying the model config");
        break;
      }
    }
    st[i].base_path = strdup(c->base_path);
    int nv = c->policy == SM_POLICY_SPECIFIC ? c->nversions : 0;
    st[i].versions = calloc(nv ? (size_t)nv : 1, sizeof(int64_t));
    st[i].labels = calloc(c->nlabels ? (size_t)c->nlabels : 1, sizeof(vlabel));
    if (!st[i].base_path || !st[i].versions || !st[i].labels) {
      err = sm_status_new(SM_NO_MEMORY, "out of memory applying the model config");
      break;
    }
    if (nv) memcpy(st[i].versions, c->versions, (size_t)nv * sizeof(int64_t));
    for (int k = 0; k < c->nlabels; k++) {
      st[i].labels[k].version = c->labels[k].version;
      if (!(st[i].labels[k].label = strdup(c->labels[k].label))) {
        err = sm_status_new(SM_NO_MEMORY, "out of memory applying the model config");
        break;
      }
    }
  }
  if (err) {
    for (int i = 0; st && i < n; i++) {
      if (st[i].fresh && st[i].mm) {
        free(st[i].mm->name);
        free(st[i].mm);
      }
      free(st[i].base_path);
      free(st[i].versions);
      labels_free(st[i].labels, models[i].nlabels);
    }
    free(st);
    pthread_mutex_unlock(&m->pass_mu);
    return err;
  }

  pthread_mutex_lock(&m->mu);
  for (mmodel *mm = m->models; mm; mm = mm->next) {
    mm->active = 0;
    labels_free(mm->labels, mm->nlabels);
    mm->labels = NULL;
    mm->nlabels = 0;
  }
  mmodel **tail = &m->models;
  while (*tail) tail = &(*tail)->next;
  for (int i = 0; i < n; i++) {
    const sm_model_config *c = &models[i];
    mmodel *mm = st[i].mm;
    free(mm->base_path);
    mm->base_path = st[i].base_path;
    free(mm->versions);
    mm->versions = st[i].versions;
    mm->nversions = c->policy == SM_POLICY_SPECIFIC ? c->nversions : 0;
    mm->policy = c->policy;
    mm->latest_n = c->latest_n > 0 ? c->latest_n : 1;
    mm->labels = st[i].labels;
    mm->nlabels = c->nlabels;
    mm->active = 1;
    if (st[i].fresh) {
      *tail = mm;
      tail = &mm->next;
    }
  }
  pthread_mutex_unlock(&m->mu);
  free(st);
  /* the first versions are loaded (or have failed) on return: those still being written in are
   * waited for, a few settle times at most */
  int64_t until = clock_us(CLOCK_MONOTONIC) + (int64_t)((m->settle * 3 + 1) * 1e6);
  while (poll_pass_locked(m) > 0 && clock_us(CLOCK_MONOTONIC) < until) {
    struct timespec t = {0, 100 * 1000 * 1000};
    nanosleep(&t, NULL);
  }
  pthread_mutex_unlock(&m->pass_mu);
  return NULL;
}

/* Reads and applies the config file when its text changed since the last applied one. */
static sm_status *config_file_apply(sm_manager *m, const char *path, int force) {
  char *text = NULL;
  size_t len = 0;
  sm_status *s = sm__file_read_all(path, &text, &len);
  if (s) return sm_status_prefix(s, "model_config_file");
  pthread_mutex_lock(&m->mu);
  int same = m->config_text && strcmp(m->config_text, text) == 0;
  pthread_mutex_unlock(&m->mu);
  if (same && !force) {
    free(text);
    return NULL;
  }
  sm_model_config_list *l = NULL;
  s = sm__model_config_list_read(path, &l);
  if (!s) {
    int n = sm__model_config_list_count(l);
    sm_model_config *cs = calloc(n ? (size_t)n : 1, sizeof *cs);
    if (!cs) s = sm_status_new(SM_NO_MEMORY, "out of memory applying %s", path);
    for (int i = 0; cs && i < n; i++) cs[i] = *sm__model_config_list_at(l, i);
    if (cs) s = sm_status_prefix(sm__manager_set_config(m, cs, n), "applying %s", path);
    free(cs);
  }
  sm__model_config_list_free(l);
  if (s) {
    free(text);
    return s;
  }
  pthread_mutex_lock(&m->mu);
  free(m->config_text);
  m->config_text = text;
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

static void *config_main(void *arg) {
  sm_manager *m = arg;
  for (;;) {
    pthread_mutex_lock(&m->mu);
    double wait = m->config_wait;
    char *path = xstrdup(m->config_path);
    pthread_mutex_unlock(&m->mu);
    if (wait <= 0 || !path || wait_or_stop(m, wait)) {
      free(path);
      break;
    }
    sm_status *s = config_file_apply(m, path, 0);
    if (s) fprintf(stderr, "savedmodel serve: model_config_file reload failed, keeping the old config: %s\n",
                   sm_status_message(s));
    sm_status_free(s);
    free(path);
  }
  return NULL;
}

sm_status *sm__manager_watch_config_file(sm_manager *m, const char *path, double seconds) {
  if (!path || !*path) return sm_status_new(SM_INVALID_ARGUMENT, "model_config_file: no path given");
  if (seconds < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "model_config_file_poll_wait_seconds must not be negative, got %g",
                         seconds);
  sm_status *s = config_file_apply(m, path, 1);
  if (s) return s;
  char *p = strdup(path);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory watching %s", path);
  pthread_mutex_lock(&m->mu);
  free(m->config_path);
  m->config_path = p;
  m->config_wait = seconds;
  int start = seconds > 0 && !m->has_config_thread;
  pthread_mutex_unlock(&m->mu);
  if (start) {
    if (pthread_create(&m->config_thread, NULL, config_main, m) != 0)
      return sm_status_new(SM_INTERNAL, "cannot start the thread watching %s", path);
    m->has_config_thread = 1;
  }
  return NULL;
}

/* ---- requests ----------------------------------------------------------------------------- */

sm_status *sm__manager_acquire(sm_manager *m, const char *name, int64_t version, const char *label,
                              sm_servable **out) {
  *out = NULL;
  if (!name) name = "";
  pthread_mutex_lock(&m->mu);
  mmodel *mm = find_model(m, name);
  if (version <= 0 && label) {
    if (!mm || !label_find(mm, label, &version)) {
      pthread_mutex_unlock(&m->mu);
      return sm_status_new(SM_INVALID_ARGUMENT, "Unrecognized servable version label: %s", label);
    }
  }
  mversion *x = NULL;
  if (version > 0) {
    x = mm ? find_version(mm, version) : NULL;
    if (!x || x->state != ST_AVAILABLE) {
      pthread_mutex_unlock(&m->mu);
      return sm_status_new(SM_NOT_FOUND, "Servable not found for request: Specific(%s, %lld)", name,
                           (long long)version);
    }
  } else {
    for (mversion *y = mm ? mm->vers : NULL; y && !x; y = y->next)
      if (y->state == ST_AVAILABLE) x = y;
    if (!x) {
      pthread_mutex_unlock(&m->mu);
      return sm_status_new(SM_NOT_FOUND, "Servable not found for request: Latest(%s)", name);
    }
  }
  x->refs++;
  pthread_mutex_unlock(&m->mu);
  *out = x;
  return NULL;
}

void sm__servable_release(sm_servable *s) {
  if (!s) return;
  sm_manager *m = s->mgr;
  sm_model *dead = NULL;
  pthread_mutex_lock(&m->mu);
  if (--s->refs == 0) {
    if (s->state == ST_UNLOADING) {
      dead = s->model;
      s->model = NULL;
      s->state = ST_END;
      m->counts.unloads++;
      log_unloaded(s);
    }
    /* only sm__manager_free waits for the last reference (after setting stop); the poll thread
     * sleeps on the same condition variable, and waking it on every request's release cost two
     * context switches per request */
    if (m->stop) pthread_cond_broadcast(&m->cv);
  }
  pthread_mutex_unlock(&m->mu);
  sm_model_free(dead);
}

sm_model *sm__servable_model(const sm_servable *s) { return s ? s->model : NULL; }
const char *sm__servable_name(const sm_servable *s) { return s ? s->owner->name : NULL; }
int64_t sm__servable_version(const sm_servable *s) { return s ? s->version : 0; }
const char *sm__servable_path(const sm_servable *s) { return s ? s->path : NULL; }

/* ---- status ------------------------------------------------------------------------------- */

sm_status *sm__manager_status(sm_manager *m, const char *name, int64_t version, const char *label,
                             sm_version_status **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!name) name = "";
  pthread_mutex_lock(&m->mu);
  mmodel *mm = find_model(m, name);
  if (version <= 0 && label) {
    if (!mm || !label_find(mm, label, &version)) {
      pthread_mutex_unlock(&m->mu);
      return sm_status_new(SM_INVALID_ARGUMENT, "Unrecognized servable version label: %s", label);
    }
  }
  int cnt = 0;
  for (mversion *x = mm ? mm->vers : NULL; x; x = x->next)
    if (version <= 0 || x->version == version) cnt++;
  if (!cnt) {
    pthread_mutex_unlock(&m->mu);
    if (version > 0)
      return sm_status_new(SM_NOT_FOUND, "Could not find version %lld of model %s", (long long)version, name);
    return sm_status_new(SM_NOT_FOUND, "Could not find any versions of model %s", name);
  }
  sm_version_status *v = calloc((size_t)cnt, sizeof *v);
  int k = 0;
  for (mversion *x = mm->vers; v && x; x = x->next) {
    if (version > 0 && x->version != version) continue;
    v[k].version = x->version;
    v[k].state = state_names[x->state];
    v[k].error_code = tf_code_name(x->err);
    v[k].error_message = xstrdup(x->err_msg ? x->err_msg : "");
    if (!v[k].error_message) break;
    k++;
  }
  pthread_mutex_unlock(&m->mu);
  if (k < cnt) {
    sm__version_status_free(v, k);
    return sm_status_new(SM_NO_MEMORY, "out of memory reporting the status of model %s", name);
  }
  *out = v;
  *n = cnt;
  return NULL;
}

void sm__version_status_free(sm_version_status *v, int n) {
  if (!v) return;
  for (int i = 0; i < n; i++) free((char *)v[i].error_message);
  free(v);
}

sm_manager_counts sm__manager_counts_get(sm_manager *m) {
  pthread_mutex_lock(&m->mu);
  sm_manager_counts c = m->counts;
  pthread_mutex_unlock(&m->mu);
  return c;
}
