/* staging.c - TF's staging areas: Stage, Unstage, StagePeek, StageSize, StageClear (a FIFO buffer of
 * tuples, tf.contrib.staging.StagingArea) and the keyed maps MapStage, MapUnstage, MapUnstageNoKey,
 * MapPeek, MapSize, MapIncompleteSize, MapClear with their OrderedMap* forms (MapStagingArea).
 *
 * As TF's stage_op.cc and map_stage_op.cc: an area is an object of the model's resources
 * (resource.h, kind SM_RES_STAGE) keyed by (container, shared_name), the node's name standing for an
 * empty shared_name (TF's ContainerInfo with use_node_name_as_default); a Stage buffer, an unordered
 * map and an ordered map of one name are three objects, as TF's resource types keep them apart. The
 * first op to reach an area makes it with its own capacity, memory_limit and (maps) dtypes count.
 * Every run of the loaded model sees it. A mutex and a condition variable guard it; a waiting op
 * (an Unstage on an empty buffer, a peek past its end, a map get of an absent key, a put into a
 * full area) waits as TF's does, but ends with the run's deadline or cancel flag (checked every
 * 10 ms). Tuples are copies of the inputs held in the area's memory account and charged to the run
 * that stages them (SM_RESOURCE_EXHAUSTED past its budget).
 *
 * Maps: a put with fewer indices than the map's dtypes fills an incomplete entry (its key's
 * components, each set once), which moves to the map when its last component arrives; as TF,
 * incomplete puts wait only for memory, not capacity, and a complete put of a key already in the
 * map is dropped (std::map::insert) though its bytes are counted. A get names its indices; a pop
 * removes those components and the entry once it has none left. The ordered map pops the smallest
 * key first; the unordered one here does too (TF's order there is its hash table's). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_internal.h"
#include "ops/state_internal.h"
#include "runtime/kernel.h"

#define STAGE_MAGIC 0x53544147u
enum { A_STAGE, A_MAP, A_OMAP };
static const char *const area_kind[] = {"stage", "map", "omap"};

typedef struct mentry {
  int64_t key;
  size_t bytes;
  sm_tensor **c; /* ncomp slots; NULL: not there */
} mentry;

typedef struct area {
  uint32_t magic;
  int type;
  char *name;
  int64_t capacity, memory_limit;
  int ncomp;   /* maps: the creating op's dtypes count */
  size_t bytes; /* TF's current_bytes_ */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  mentry *items; /* stage: FIFO order (key unused); maps: the complete entries by key */
  size_t n, cap;
  mentry *inc; /* maps: the incomplete entries by key */
  size_t ninc, capinc;
  sm_mem_account acct;
} area;

typedef struct aspec {
  sm__state_key key; /* first: sm__state_spec_release */
  int type;
  int64_t capacity, memory_limit;
  int ndtypes;
  int dtypes[64];
} aspec;

/* ---- the object ------------------------------------------------------------------------------ */

/* A stage tuple's slots end with NULL; a map entry has ncomp slots, NULL where absent. */
static void entry_free(area *a, mentry *e, int ncomp) {
  if (!e->c) return;
  for (int i = 0; i < ncomp; i++)
    if (e->c[i]) {
      sm__mem_give_tensor(&a->acct, e->c[i]);
      sm_tensor_free(e->c[i]);
    }
  free(e->c);
  e->c = NULL;
}

static int entry_width(const mentry *e) {
  int n = 0;
  while (e->c[n]) n++;
  return n;
}

static void area_clear_locked(area *a) {
  for (size_t i = 0; i < a->n; i++) entry_free(a, &a->items[i], a->type == A_STAGE ? entry_width(&a->items[i]) : a->ncomp);
  for (size_t i = 0; i < a->ninc; i++) entry_free(a, &a->inc[i], a->ncomp);
  a->n = a->ninc = 0;
  a->bytes = 0;
}

static void area_destroy(void *obj) {
  area *a = obj;
  if (!a) return;
  area_clear_locked(a);
  free(a->items);
  free(a->inc);
  sm__mem_close(&a->acct);
  sm__state_free(a, a->name, &a->mu, &a->cv);
}

static sm_status *area_make(void *arg, const char *dname, void **obj) {
  const aspec *sp = arg;
  area *a = sm__state_alloc(sizeof *a, STAGE_MAGIC, offsetof(area, name), dname);
  if (!a) return sm_status_new(SM_NO_MEMORY, "staging area '%s': out of memory", dname);
  a->type = sp->type;
  a->capacity = sp->capacity;
  a->memory_limit = sp->memory_limit;
  a->ncomp = sp->ndtypes;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  *obj = a;
  return NULL;
}

static char *dup_str(const char *v, size_t len) {
  char *d = malloc(len + 1);
  if (d) {
    memcpy(d, v, len);
    d[len] = 0;
  }
  return d;
}

/* Every op of this file: the area's attrs (capacity, memory_limit, dtypes, container, shared_name). */
static sm_status *area_prepare(const sm_node *node, void **state, int type) {
  aspec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sp->type = type;
  sm_status *s = NULL;
  if (sm__node_attr(node, "capacity")) s = sm__node_attr_int(node, "capacity", &sp->capacity);
  if (!s && sm__node_attr(node, "memory_limit")) s = sm__node_attr_int(node, "memory_limit", &sp->memory_limit);
  if (!s && (sp->capacity < 0 || sp->memory_limit < 0))
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: capacity and memory_limit must be >= 0", sm__node_op(node));
  if (!s && sm__node_attr(node, "dtypes")) {
    const int *types = NULL;
    size_t nt = 0;
    s = sm__node_attr_types(node, "dtypes", &types, &nt);
    if (!s && nt > 64) s = sm_status_new(SM_UNIMPLEMENTED, "%s: more than 64 dtypes", sm__node_op(node));
    if (!s) {
      sp->ndtypes = (int)nt;
      if (nt) memcpy(sp->dtypes, types, nt * sizeof(int));
    }
  }
  const char *c = "", *n = "";
  size_t cl = 0, nl = 0;
  if (!s && sm__node_attr(node, "container") && sm__node_attr_string(node, "container", &c, &cl)) c = "", cl = 0;
  if (!s && sm__node_attr(node, "shared_name") && sm__node_attr_string(node, "shared_name", &n, &nl)) n = "", nl = 0;
  if (!s && !nl) n = sm__node_name(node), nl = strlen(n); /* TF: the node's name */
  if (!s) {
    const char *k = area_kind[type];
    sp->key.container = dup_str(c, cl);
    sp->key.name = malloc(strlen(k) + nl + 2);
    if (sp->key.name) snprintf(sp->key.name, strlen(k) + nl + 2, "%s|%.*s", k, (int)nl, n);
    if (!sp->key.container || !sp->key.name) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *stage_prepare(const sm_node *n, void **st) { return area_prepare(n, st, A_STAGE); }
static sm_status *map_prepare(const sm_node *n, void **st) { return area_prepare(n, st, A_MAP); }
static sm_status *omap_prepare(const sm_node *n, void **st) { return area_prepare(n, st, A_OMAP); }

static sm_status *get_area(const aspec *sp, sm_kctx *ctx, area **out) {
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_STAGE, &sp->key, area_make, (void *)sp, area_destroy, &obj);
  *out = s ? NULL : obj;
  return s;
}

/* Waits on a->cv (a->mu held) for up to 10 ms, then the run's deadline / cancel flag. */
static sm_status *area_wait(area *a, sm_kctx *ctx) { return sm__state_wait(&a->cv, &a->mu, ctx); }

/* TF's Tensor::TotalBytes: the elements (a string: its 24-byte tstring and its bytes). */
static size_t tensor_bytes(const sm_tensor *t) {
  if (sm_tensor_dtype(t) != SM_STRING) return sm_tensor_nbytes(t);
  int64_t n = sm_tensor_num_elements(t);
  size_t b = (size_t)n * 24;
  for (int64_t i = 0; i < n; i++) {
    size_t len = 0;
    sm_tensor_string(t, i, &len);
    b += len;
  }
  return b;
}

static sm_status *limit_error(const area *a, size_t bytes) {
  return sm_status_new(SM_RESOURCE_EXHAUSTED,
                       "Attempted to insert tensors with combined size of '%zu' bytes into Staging Area with a memory "
                       "limit of '%lld'.",
                       bytes, (long long)a->memory_limit);
}

static int would_exceed(const area *a, size_t bytes) {
  return a->memory_limit > 0 && bytes + a->bytes > (size_t)a->memory_limit;
}

/* Copies inputs [first, first + n) into c[] and charges them to the run; bytes summed. */
static sm_status *copy_inputs(area *a, sm_kctx *ctx, int first, int n, sm_tensor **c, size_t *bytes) {
  sm_status *s = NULL;
  *bytes = 0;
  for (int i = 0; !s && i < n; i++) {
    const sm_tensor *in = sm__kctx_input(ctx, first + i);
    *bytes += tensor_bytes(in);
    if (!(s = sm_tensor_copy(in, &c[i]))) s = sm__kctx_hold_tensor(ctx, &a->acct, c[i], "a staged tensor");
    if (s && c[i]) {
      sm_tensor_free(c[i]);
      c[i] = NULL;
    }
  }
  if (s)
    for (int i = 0; i < n; i++)
      if (c[i]) {
        sm__mem_give_tensor(&a->acct, c[i]);
        sm_tensor_free(c[i]);
        c[i] = NULL;
      }
  return s;
}

static sm_status *grow(mentry **arr, size_t *cap, size_t need) {
  if (need <= *cap) return NULL;
  size_t nc = *cap ? *cap * 2 : 8;
  mentry *ni = realloc(*arr, nc * sizeof *ni);
  if (!ni) return sm_status_new(SM_NO_MEMORY, "staging area: out of memory");
  *arr = ni;
  *cap = nc;
  return NULL;
}

/* ---- Stage / Unstage / StagePeek / StageSize / StageClear ------------------------------------- */

static sm_status *stage_compute(const void *state, sm_kctx *ctx) {
  area *a;
  sm_status *s = get_area(state, ctx, &a);
  if (s) return s;
  int n = sm__kctx_num_inputs(ctx);
  size_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += tensor_bytes(sm__kctx_input(ctx, i));
  if (a->memory_limit > 0 && bytes > (size_t)a->memory_limit) return limit_error(a, bytes);
  mentry e = {0, 0, calloc((size_t)n + 1, sizeof(sm_tensor *))};
  if (!e.c) return sm_status_new(SM_NO_MEMORY, "Stage: out of memory");
  if ((s = copy_inputs(a, ctx, 0, n, e.c, &bytes))) {
    free(e.c);
    return s;
  }
  e.bytes = bytes;
  pthread_mutex_lock(&a->mu);
  while (!s && ((a->capacity > 0 && (int64_t)a->n >= a->capacity) || would_exceed(a, bytes))) s = area_wait(a, ctx);
  if (!s) s = grow(&a->items, &a->cap, a->n + 1);
  if (!s) {
    a->items[a->n++] = e;
    a->bytes += bytes;
    pthread_cond_broadcast(&a->cv);
  }
  pthread_mutex_unlock(&a->mu);
  if (s) entry_free(a, &e, n);
  return s;
}

/* Unstage (peek = 0) and StagePeek (peek = 1). */
static sm_status *unstage_common(const void *state, sm_kctx *ctx, int peek) {
  const aspec *sp = state;
  area *a;
  sm_status *s = get_area(state, ctx, &a);
  if (s) return s;
  int64_t index = 0;
  if (peek) {
    const sm_tensor *it = sm__kctx_input(ctx, 0);
    if (sm_tensor_rank(it) != 0 || sm_tensor_dtype(it) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "StagePeek: index must be scalar");
    index = ((const int32_t *)sm_tensor_data(it))[0];
    if (index < 0) /* TF waits forever (the index cast to size_t) */
      return sm_status_new(SM_INVALID_ARGUMENT, "StagePeek: index %lld is negative", (long long)index);
  }
  int nout = sm__kctx_num_outputs(ctx);
  pthread_mutex_lock(&a->mu);
  while (!s && (int64_t)a->n <= index) s = area_wait(a, ctx);
  if (!s) {
    mentry *e = &a->items[index];
    int w = entry_width(e);
    if (w != nout)
      s = sm_status_new(SM_INVALID_ARGUMENT, "Mismatch stage/unstage: %d vs. %d", w, nout);
    for (int i = 0; !s && i < w; i++) {
      int want = i < sp->ndtypes ? sp->dtypes[i] : -1;
      if (want >= 0 && want != sm_tensor_dtype(e->c[i]))
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: staged component %d is %s, the op's dtypes say %s",
                          peek ? "StagePeek" : "Unstage", i, sm__array_dtype_str(sm_tensor_dtype(e->c[i])),
                          sm__array_dtype_str(want));
    }
    if (!s && peek) {
      for (int i = 0; i < w; i++) sm__kctx_set_output(ctx, i, sm_tensor_ref(e->c[i]));
    } else if (!peek) { /* TF pops the tuple before it checks it */
      for (int i = 0; i < w; i++) {
        sm__mem_give_tensor(&a->acct, e->c[i]);
        if (s)
          sm_tensor_free(e->c[i]);
        else
          sm__kctx_set_output(ctx, i, e->c[i]);
      }
      free(e->c);
      a->bytes -= e->bytes;
      memmove(a->items, a->items + 1, (a->n - 1) * sizeof *a->items);
      a->n--;
      pthread_cond_broadcast(&a->cv);
    }
  }
  pthread_mutex_unlock(&a->mu);
  return s;
}
static sm_status *unstage_compute(const void *st, sm_kctx *ctx) { return unstage_common(st, ctx, 0); }
static sm_status *peek_compute(const void *st, sm_kctx *ctx) { return unstage_common(st, ctx, 1); }

/* StageSize / MapSize (which = 0), MapIncompleteSize (1): an int32 count. */
static sm_status *count_common(const void *state, sm_kctx *ctx, int which) {
  area *a;
  sm_tensor *out;
  sm_status *s = get_area(state, ctx, &a);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  ((int32_t *)sm_tensor_data(out))[0] = (int32_t)(which ? a->ninc : a->n);
  pthread_mutex_unlock(&a->mu);
  return NULL;
}
static sm_status *size_compute(const void *st, sm_kctx *ctx) { return count_common(st, ctx, 0); }
static sm_status *isize_compute(const void *st, sm_kctx *ctx) { return count_common(st, ctx, 1); }

static sm_status *clear_compute(const void *state, sm_kctx *ctx) {
  area *a;
  sm_status *s = get_area(state, ctx, &a);
  if (s) return s;
  pthread_mutex_lock(&a->mu);
  area_clear_locked(a);
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* ---- the maps --------------------------------------------------------------------------------- */

/* Index of the first entry with key >= k in arr[0, n). */
static size_t lower(const mentry *arr, size_t n, int64_t k) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    if (arr[m].key < k)
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

static sm_status *insert_at(mentry **arr, size_t *n, size_t *cap, size_t at, mentry e) {
  sm_status *s = grow(arr, cap, *n + 1);
  if (s) return s;
  memmove(*arr + at + 1, *arr + at, (*n - at) * sizeof **arr);
  (*arr)[at] = e;
  (*n)++;
  return NULL;
}

static void remove_at(mentry *arr, size_t *n, size_t at) {
  memmove(arr + at, arr + at + 1, (*n - at - 1) * sizeof *arr);
  (*n)--;
}

static sm_status *scalar_key(const sm_tensor *t, const char *op, int64_t *key) {
  if (sm_tensor_num_elements(t) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: key must not be empty", op);
  if (sm_tensor_dtype(t) != SM_INT64 || sm_tensor_num_elements(t) != 1) {
    char b[96];
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: key must be an int64 scalar, got tensor with shape: %s", op,
                         sm__array_shape_str(t, b, sizeof b));
  }
  *key = ((const int64_t *)sm_tensor_data(t))[0];
  return NULL;
}

/* TF's check_index_ordering: indices non-empty and strictly increasing. */
static sm_status *check_indices(const sm_tensor *t, const char *op, const int32_t **idx, int64_t *n) {
  if (sm_tensor_dtype(t) != SM_INT32 || sm_tensor_rank(t) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: indices must be an int32 vector", op);
  *n = sm_tensor_num_elements(t);
  *idx = sm_tensor_data(t);
  if (!*n) return sm_status_new(SM_INVALID_ARGUMENT, "Indices are empty");
  for (int64_t i = 0; i + 1 < *n; i++)
    if ((*idx)[i] >= (*idx)[i + 1]) return sm_status_new(SM_INVALID_ARGUMENT, "Indices are not strictly ordered");
  return NULL;
}

static sm_status *index_oob(const area *a, int64_t key, int64_t index) {
  return sm_status_new(SM_INVALID_ARGUMENT, "Index '%lld' for key '%lld' was out of bounds '%d'.",
                       (long long)(uint64_t)(uint32_t)index, (long long)key, a->ncomp);
}

static sm_status *map_stage_compute(const void *state, sm_kctx *ctx) {
  area *a;
  sm_status *s = get_area(state, ctx, &a);
  if (s) return s;
  int64_t key, ni;
  const int32_t *idx;
  if ((s = scalar_key(sm__kctx_input(ctx, 0), "MapStage", &key))) return s;
  int nv = sm__kctx_num_inputs(ctx) - 2;
  pthread_mutex_lock(&a->mu);
  s = check_indices(sm__kctx_input(ctx, 1), "MapStage", &idx, &ni);
  pthread_mutex_unlock(&a->mu);
  if (s) return s;
  if (ni != nv)
    return sm_status_new(SM_INVALID_ARGUMENT, "MapStage: %lld indices for %d values", (long long)ni, nv);
  int complete = ni == a->ncomp;
  for (int64_t i = 0; !complete && i < ni; i++)
    if (idx[i] < 0 || idx[i] >= a->ncomp) return index_oob(a, key, idx[i]);
  size_t bytes = 0;
  for (int i = 0; i < nv; i++) bytes += tensor_bytes(sm__kctx_input(ctx, 2 + i));
  if (a->memory_limit > 0 && bytes > (size_t)a->memory_limit) return limit_error(a, bytes);
  sm_tensor **vals = calloc((size_t)nv + 1, sizeof *vals);
  if (!vals) return sm_status_new(SM_NO_MEMORY, "MapStage: out of memory");
  if ((s = copy_inputs(a, ctx, 2, nv, vals, &bytes))) {
    free(vals);
    return s;
  }
  pthread_mutex_lock(&a->mu);
  if (complete) {
    while (!s && ((a->capacity > 0 && (int64_t)a->n >= a->capacity) || would_exceed(a, bytes))) s = area_wait(a, ctx);
    size_t at = lower(a->items, a->n, key);
    if (!s && at < a->n && a->items[at].key == key) { /* TF: std::map::insert keeps the old entry */
      a->bytes += bytes;
      mentry dropped = {key, 0, vals};
      entry_free(a, &dropped, nv);
      vals = NULL;
    } else if (!s && !(s = insert_at(&a->items, &a->n, &a->cap, at, (mentry){key, bytes, vals}))) {
      a->bytes += bytes;
      vals = NULL;
      pthread_cond_broadcast(&a->cv);
    }
  } else {
    while (!s && would_exceed(a, bytes)) s = area_wait(a, ctx);
    size_t at = lower(a->inc, a->ninc, key);
    mentry *e = !s && at < a->ninc && a->inc[at].key == key ? &a->inc[at] : NULL;
    for (int64_t i = 0; !s && e && i < ni; i++)
      if (e->c[idx[i]])
        s = sm_status_new(SM_INVALID_ARGUMENT, "The tensor for index '%d' for key '%lld' was already initialized '%d'.",
                          idx[i], (long long)key, a->ncomp);
    if (!s && !e) {
      mentry ne = {key, 0, calloc((size_t)a->ncomp + 1, sizeof(sm_tensor *))};
      if (!ne.c) s = sm_status_new(SM_NO_MEMORY, "MapStage: out of memory");
      if (!s && (s = insert_at(&a->inc, &a->ninc, &a->capinc, at, ne))) free(ne.c);
      if (!s) e = &a->inc[at];
    }
    if (!s) {
      for (int64_t i = 0; i < ni; i++) {
        e->c[idx[i]] = vals[i];
        vals[i] = NULL;
      }
      e->bytes += bytes;
      a->bytes += bytes;
      int full = 1;
      for (int i = 0; i < a->ncomp; i++) full &= e->c[i] != NULL;
      if (full) {
        mentry done = *e;
        remove_at(a->inc, &a->ninc, at);
        size_t at2 = lower(a->items, a->n, key);
        if (at2 < a->n && a->items[at2].key == key) {
          entry_free(a, &done, a->ncomp);
        } else if ((s = insert_at(&a->items, &a->n, &a->cap, at2, done))) {
          entry_free(a, &done, a->ncomp);
        }
        pthread_cond_broadcast(&a->cv);
      }
    }
  }
  pthread_mutex_unlock(&a->mu);
  if (vals) {
    mentry left = {key, 0, vals};
    entry_free(a, &left, nv);
  }
  return s;
}

enum { M_PEEK, M_POP, M_POPITEM };

/* MapPeek, MapUnstage, MapUnstageNoKey (and the ordered ones): TF's copy_or_move_tensors. */
static sm_status *map_get_common(const void *state, sm_kctx *ctx, int mode) {
  const aspec *sp = state;
  area *a;
  sm_status *s = get_area(state, ctx, &a);
  if (s) return s;
  const char *op = sm__node_op(sm__kctx_node(ctx));
  int64_t key = 0, ni;
  const int32_t *idx;
  if (mode != M_POPITEM && (s = scalar_key(sm__kctx_input(ctx, 0), op, &key))) return s;
  int off = mode == M_POPITEM; /* NoKey: output 0 is the key */
  int nout = sm__kctx_num_outputs(ctx) - off;
  if ((s = check_indices(sm__kctx_input(ctx, mode == M_POPITEM ? 0 : 1), op, &idx, &ni))) return s;
  if (ni != nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %lld indices for %d outputs", op, (long long)ni, nout);
  pthread_mutex_lock(&a->mu);
  size_t at = 0;
  for (;;) {
    if (mode == M_POPITEM) {
      if (a->n) break;
    } else {
      at = lower(a->items, a->n, key);
      if (at < a->n && a->items[at].key == key) break;
    }
    if ((s = area_wait(a, ctx))) break;
  }
  if (!s) {
    mentry *e = &a->items[at];
    key = e->key;
    size_t got = 0;
    for (int64_t i = 0; !s && i < ni; i++) {
      int64_t index = idx[i];
      if (index < 0 || index >= a->ncomp) {
        s = index_oob(a, key, index);
      } else if (!e->c[index]) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "Tensor at index '%lld' for key '%lld' has already been removed.",
                          (long long)index, (long long)key);
      } else {
        int want = i < sp->ndtypes ? sp->dtypes[i] : -1;
        sm_tensor *t = e->c[index];
        if (want >= 0 && want != sm_tensor_dtype(t)) {
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: component %lld is %s, the op's dtypes say %s", op, (long long)index,
                            sm__array_dtype_str(sm_tensor_dtype(t)), sm__array_dtype_str(want));
        } else if (mode == M_PEEK) {
          sm__kctx_set_output(ctx, (int)i + off, sm_tensor_ref(t));
        } else { /* moved out, as TF's (an error at a later index leaves these removed) */
          got += tensor_bytes(t);
          sm__mem_give_tensor(&a->acct, t);
          sm__kctx_set_output(ctx, (int)i + off, t);
          e->c[index] = NULL;
        }
      }
    }
    if (mode != M_PEEK) {
      int any = 0;
      for (int i = 0; i < a->ncomp; i++) any |= e->c[i] != NULL;
      if (!any) {
        free(e->c);
        remove_at(a->items, &a->n, at);
      }
      if (!s) a->bytes -= got < a->bytes ? got : a->bytes;
      pthread_cond_broadcast(&a->cv);
    }
  }
  pthread_mutex_unlock(&a->mu);
  if (!s && off) {
    sm_tensor *kt;
    if (!(s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 0, NULL, &kt))) ((int64_t *)sm_tensor_data(kt))[0] = key;
  }
  return s;
}
static sm_status *map_peek_compute(const void *st, sm_kctx *ctx) { return map_get_common(st, ctx, M_PEEK); }
static sm_status *map_unstage_compute(const void *st, sm_kctx *ctx) { return map_get_common(st, ctx, M_POP); }
static sm_status *map_nokey_compute(const void *st, sm_kctx *ctx) { return map_get_common(st, ctx, M_POPITEM); }

#define AK(name, prep, comp) {name, prep, comp, sm__state_spec_release, 0}
#define MK(name, comp) AK("Map" name, map_prepare, comp), AK("OrderedMap" name, omap_prepare, comp)
const sm_kernel sm_kernels_staging[] = {
    AK("Stage", stage_prepare, stage_compute),
    AK("Unstage", stage_prepare, unstage_compute),
    AK("StagePeek", stage_prepare, peek_compute),
    AK("StageSize", stage_prepare, size_compute),
    AK("StageClear", stage_prepare, clear_compute),
    MK("Stage", map_stage_compute),
    MK("Unstage", map_unstage_compute),
    MK("UnstageNoKey", map_nokey_compute),
    MK("Peek", map_peek_compute),
    MK("Size", size_compute),
    MK("IncompleteSize", isize_compute),
    MK("Clear", clear_compute),
    {NULL, NULL, NULL, NULL, 0},
};
