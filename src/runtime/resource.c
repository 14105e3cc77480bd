/* resource.c - variables and hash tables that live across runs of one loaded model.
 *
 * The registry is a small open-addressing map from (kind, container, name) to the object, under one
 * mutex (lookups happen when kernels resolve handles, not per element). A variable holds its value
 * as a refcounted tensor swapped under the variable's own mutex, so a reader keeps a reference and
 * a concurrent assign never frees what it reads. A hash table is open addressing over 64-bit
 * hashes under a reader-writer lock: a static one is written once by its initializer, a mutable
 * or dense one by insert, remove and import (an anonymous table is made here but owned by its
 * handle, not the registry). */
#include "runtime/resource.h"

#include "runtime/kernel.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_VARIABLE = 1, KIND_TABLE = 2, KIND_OBJECT = 16 /* + the caller's kind */ };

#define VARIABLE_MAGIC 0x56415231u /* "VAR1": what sm__is_variable checks */
struct sm_variable {
  uint32_t magic; /* first, so that any resource object's first bytes can be checked */
  pthread_mutex_t mu;
  int dtype;
  char *name; /* "container/name" style text for messages: just the name when container is "" */
  sm_tensor *value;
};

typedef struct entry {
  uint64_t hash;
  char *key; /* string keys: an owned copy */
  size_t klen;
  int64_t ikey;
  union {
    int64_t i;
    double d;
    float f;
    int32_t i32;
    uint8_t b[8];
  } v;       /* a scalar numeric value */
  char *sval; /* a string value's bytes, or a value of vn > 1 numeric elements */
  size_t slen;
  int used;
} entry;

#define TABLE_MAGIC 0x54424c31u /* "TBL1": what sm__is_table checks */
struct sm_table {
  void *self; /* points here: an anonymous table's handle tensor wraps this word */
  uint32_t magic; /* second, as a TensorArray's (every resource object is larger than 16 bytes) */
  pthread_rwlock_t rw; /* readers: find, size, export; writers: init, insert, remove, import */
  int key_dtype, value_dtype, kind;
  int vrank;
  int64_t vdims[SM_MAX_RANK];
  int64_t vn; /* elements per value (1 for scalars) */
  char *name;
  atomic_int initialized;
  entry *slots;
  size_t cap, n;
  /* dense tables: the reserved keys and TF's bucket bookkeeping (what export's length shows) */
  entry ekey, dkey;
  int64_t nbuckets, dense_entries;
  float max_load;
  sm_mem_account acct; /* what inserts hold, charged to the run that inserts */
  size_t held;         /* the bytes the entries take, as charged */
};

typedef struct res_slot {
  int kind;
  char *container, *name;
  uint64_t hash;
  void *obj;
  void (*destroy)(void *obj); /* KIND_OBJECT + k: the maker's */
} res_slot;

struct sm_resources {
  pthread_mutex_t mu;
  res_slot *slots;
  size_t cap, n;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

sm_status *sm__resources_new(sm_resources **out) {
  *out = NULL;
  sm_resources *r = calloc(1, sizeof *r);
  if (!r) return sm_status_new(SM_NO_MEMORY, "resources: out of memory");
  pthread_mutex_init(&r->mu, NULL);
  *out = r;
  return NULL;
}

static void variable_free(sm_variable *v) {
  if (!v) return;
  sm_tensor_free(v->value);
  pthread_mutex_destroy(&v->mu);
  free(v->name);
  free(v);
}

static void slots_free(entry *slots, size_t cap) {
  for (size_t i = 0; i < cap; i++) {
    free(slots[i].sval);
    free(slots[i].key);
  }
  free(slots);
}

static void table_free(sm_table *t) {
  if (!t) return;
  slots_free(t->slots, t->cap);
  free(t->ekey.key);
  free(t->dkey.key);
  sm__mem_close(&t->acct);
  pthread_rwlock_destroy(&t->rw);
  free(t->name);
  free(t);
}

void sm__resources_free(sm_resources *r) {
  if (!r) return;
  for (size_t i = 0; i < r->cap; i++) {
    res_slot *s = &r->slots[i];
    if (!s->kind) continue;
    if (s->kind == KIND_VARIABLE)
      variable_free(s->obj);
    else if (s->kind == KIND_TABLE)
      table_free(s->obj);
    else if (s->destroy)
      s->destroy(s->obj);
    free(s->container);
    free(s->name);
  }
  free(r->slots);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static uint64_t res_hash(int kind, const char *container, const char *name) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
  h = fnv(container, strlen(container) + 1, h);
  return fnv(name, strlen(name), h);
}

/* Finds (kind, container, name) or the empty slot where it goes. Caller holds r->mu. */
static res_slot *res_probe(sm_resources *r, int kind, const char *container, const char *name, uint64_t h) {
  size_t mask = r->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    res_slot *s = &r->slots[i];
    if (!s->kind) return s;
    if (s->hash == h && s->kind == kind && !strcmp(s->container, container) && !strcmp(s->name, name)) return s;
  }
}

static sm_status *res_grow(sm_resources *r) {
  size_t ncap = r->cap ? r->cap * 2 : 16;
  res_slot *ns = calloc(ncap, sizeof *ns);
  if (!ns) return sm_status_new(SM_NO_MEMORY, "resources: out of memory");
  res_slot *old = r->slots;
  size_t ocap = r->cap;
  r->slots = ns;
  r->cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].kind) *res_probe(r, old[i].kind, old[i].container, old[i].name, old[i].hash) = old[i];
  free(old);
  return NULL;
}

/* Looks up or inserts; *created says which. Caller holds r->mu. */
static sm_status *res_get(sm_resources *r, int kind, const char *container, const char *name, res_slot **out) {
  if (!container) container = "";
  if (!name) name = "";
  if ((r->n + 1) * 2 > r->cap) {
    sm_status *s = res_grow(r);
    if (s) return s;
  }
  uint64_t h = res_hash(kind, container, name);
  res_slot *s = res_probe(r, kind, container, name, h);
  if (!s->kind) {
    s->container = dupstr(container);
    s->name = dupstr(name);
    if (!s->container || !s->name) {
      free(s->container);
      free(s->name);
      s->container = s->name = NULL;
      return sm_status_new(SM_NO_MEMORY, "resources: out of memory");
    }
    s->hash = h;
    s->obj = NULL;
    /* kind is set by the caller once obj exists, so a failed creation leaves the slot empty */
  }
  *out = s;
  return NULL;
}

static char *display_name(const char *container, const char *name) {
  if (!container || !*container) return dupstr(name ? name : "");
  size_t n = strlen(container) + strlen(name) + 2;
  char *d = malloc(n);
  if (d) snprintf(d, n, "%s/%s", container, name);
  return d;
}

static void slot_abandon(sm_resources *r, res_slot *s) {
  (void)r;
  free(s->container);
  free(s->name);
  s->container = s->name = NULL;
  s->kind = 0;
}

sm_status *sm__resources_variable(sm_resources *r, const char *container, const char *name, int dtype,
                                 sm_variable **out) {
  *out = NULL;
  if (!r) return sm_status_new(SM_INVALID_ARGUMENT, "variable '%s': no resource container", name ? name : "");
  if (dtype >= SM_DTYPE_REF_OFFSET) dtype -= SM_DTYPE_REF_OFFSET;
  pthread_mutex_lock(&r->mu);
  res_slot *s;
  sm_status *st = res_get(r, KIND_VARIABLE, container, name, &s);
  if (st) {
    pthread_mutex_unlock(&r->mu);
    return st;
  }
  if (s->kind) {
    sm_variable *v = s->obj;
    pthread_mutex_unlock(&r->mu);
    if (v->dtype != dtype) {
      const char *a = sm_dtype_name(v->dtype), *b = sm_dtype_name(dtype);
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "variable '%s' exists with dtype %s, and is now asked for with dtype %s", v->name,
                           a ? a : "?", b ? b : "?");
    }
    *out = v;
    return NULL;
  }
  sm_variable *v = calloc(1, sizeof *v);
  char *dn = display_name(container, name);
  if (!v || !dn) {
    free(v);
    free(dn);
    slot_abandon(r, s);
    pthread_mutex_unlock(&r->mu);
    return sm_status_new(SM_NO_MEMORY, "variable '%s': out of memory", name ? name : "");
  }
  pthread_mutex_init(&v->mu, NULL);
  v->magic = VARIABLE_MAGIC;
  v->dtype = dtype;
  v->name = dn;
  s->obj = v;
  s->kind = KIND_VARIABLE;
  r->n++;
  pthread_mutex_unlock(&r->mu);
  *out = v;
  return NULL;
}

sm_status *sm__resources_object(sm_resources *r, int kind, const char *container, const char *name,
                                sm_resource_make_fn make, void *arg, void (*destroy)(void *obj), void **out) {
  *out = NULL;
  if (!r) return sm_status_new(SM_INVALID_ARGUMENT, "resource '%s': no resource container", name ? name : "");
  if (kind < 0 || kind >= 1 << 20) return sm_status_new(SM_INTERNAL, "resource '%s': bad kind %d", name, kind);
  pthread_mutex_lock(&r->mu);
  res_slot *s;
  sm_status *st = res_get(r, KIND_OBJECT + kind, container, name, &s);
  if (!st && s->kind) {
    *out = s->obj;
  } else if (!st) {
    char *dn = display_name(container, name);
    void *obj = NULL;
    st = dn ? make(arg, dn, &obj) : sm_status_new(SM_NO_MEMORY, "resource '%s': out of memory", name ? name : "");
    free(dn);
    if (st) {
      slot_abandon(r, s);
    } else {
      s->obj = obj;
      s->destroy = destroy;
      s->kind = KIND_OBJECT + kind;
      r->n++;
      *out = obj;
    }
  }
  pthread_mutex_unlock(&r->mu);
  return st;
}

/* The variable lock is recursive so that read/assign work between sm__variable_lock/unlock. A
 * thread may hold several variables' locks at once (an optimizer op locks var and its slots, in
 * address order): the ones it holds are kept here. */
#define SM_MAX_HELD_VARIABLES 8
static __thread sm_variable *held_by_me[SM_MAX_HELD_VARIABLES];
static __thread int nheld;

static int held(const sm_variable *v) {
  for (int i = 0; i < nheld; i++)
    if (held_by_me[i] == v) return 1;
  return 0;
}

void sm__variable_lock(sm_variable *v) {
  pthread_mutex_lock(&v->mu);
  if (nheld == SM_MAX_HELD_VARIABLES) abort(); /* a kernel bug: at most 8 at once (resource.h) */
  held_by_me[nheld++] = v;
}

void sm__variable_unlock(sm_variable *v) {
  for (int i = nheld - 1; i >= 0; i--)
    if (held_by_me[i] == v) {
      held_by_me[i] = held_by_me[--nheld];
      break;
    }
  pthread_mutex_unlock(&v->mu);
}

static void vlock(sm_variable *v) {
  if (!held(v)) pthread_mutex_lock(&v->mu);
}
static void vunlock(sm_variable *v) {
  if (!held(v)) pthread_mutex_unlock(&v->mu);
}

int sm__is_variable(const void *obj) {
  uint32_t m;
  if (!obj) return 0;
  memcpy(&m, obj, sizeof m); /* every resource object is larger than 4 bytes */
  return m == VARIABLE_MAGIC;
}

int sm__is_table(const void *obj) {
  const sm_table *t = obj;
  return t && t->self == obj && t->magic == TABLE_MAGIC;
}

static const char *held_kind(const void *obj) {
  return sm__is_variable(obj) ? "a variable" : sm__is_table(obj) ? "a lookup table" : "another kind of resource";
}

static sm_status *handle_object(const sm_tensor *h, int i, void **out) {
  *out = NULL;
  if (!h || sm_tensor_dtype(h) != SM_RESOURCE || sm_tensor_num_elements(h) != 1 || !sm_tensor_data(h))
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d is not a resource handle scalar", i);
  *out = ((void *const *)sm_tensor_data(h))[0];
  if (!*out) return sm_status_new(SM_INVALID_ARGUMENT, "input %d is an empty resource handle", i);
  return NULL;
}

sm_status *sm__handle_variable(const sm_tensor *h, int i, sm_variable **out) {
  void *obj;
  sm_status *s = handle_object(h, i, &obj);
  *out = NULL;
  if (s) return s;
  if (!sm__is_variable(obj))
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d is a handle to %s, not to a variable", i, held_kind(obj));
  *out = obj;
  return NULL;
}

sm_status *sm__handle_table(const sm_tensor *h, int i, sm_table **out) {
  void *obj;
  sm_status *s = handle_object(h, i, &obj);
  *out = NULL;
  if (s) return s;
  if (!sm__is_table(obj))
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d is a handle to %s, not to a lookup table", i, held_kind(obj));
  *out = obj;
  return NULL;
}

sm_status *sm__variable_read(sm_variable *v, sm_tensor **out) {
  *out = NULL;
  if (!v) return sm_status_new(SM_INVALID_ARGUMENT, "reading a variable: null handle");
  vlock(v);
  sm_tensor *t = v->value ? sm_tensor_ref(v->value) : NULL;
  vunlock(v);
  if (!t)
    return sm_status_new(SM_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->name);
  *out = t;
  return NULL;
}

static _Atomic uint64_t assignments; /* sm__variables_generation */

uint64_t sm__variables_generation(void) { return atomic_load_explicit(&assignments, memory_order_acquire); }

sm_status *sm__variable_assign(sm_variable *v, sm_tensor *t) {
  if (!v) {
    sm_tensor_free(t);
    return sm_status_new(SM_INVALID_ARGUMENT, "assigning a variable: null handle");
  }
  if (!t) return sm_status_new(SM_INVALID_ARGUMENT, "assigning variable '%s': no value", v->name);
  if (sm_tensor_dtype(t) != v->dtype) {
    const char *a = sm_dtype_name(v->dtype), *b = sm_dtype_name(sm_tensor_dtype(t));
    sm_status *s = sm_status_new(SM_INVALID_ARGUMENT, "assigning variable '%s' of dtype %s a value of dtype %s",
                                 v->name, a ? a : "?", b ? b : "?");
    sm_tensor_free(t);
    return s;
  }
  vlock(v);
  sm_tensor *old = v->value;
  v->value = t;
  atomic_fetch_add_explicit(&assignments, 1, memory_order_acq_rel);
  vunlock(v);
  sm_tensor_free(old); /* readers hold their own references */
  return NULL;
}

int sm__variable_is_initialized(sm_variable *v) {
  if (!v) return 0;
  vlock(v);
  int r = v->value != NULL;
  vunlock(v);
  return r;
}

int sm__variable_dtype(const sm_variable *v) { return v ? v->dtype : 0; }
const char *sm__variable_name(const sm_variable *v) { return v ? v->name : ""; }

/* ---- hash tables --------------------------------------------------------------------------
 * Open addressing with linear probing over 64-bit hashes; removal shifts the run back (no
 * tombstones). Static tables are filled once by their initializer; mutable ones (MutableHashTable,
 * MutableHashTableOfTensors, MutableDenseHashTable) are changed by insert, remove and import under
 * the table's write lock, and every reader takes the read lock, as TF's tables lock. */

static int key_ok(int dt) { return dt == SM_STRING || dt == SM_INT64 || dt == SM_INT32; }
static int value_ok(int dt) {
  return dt == SM_STRING || dt == SM_INT64 || dt == SM_INT32 || dt == SM_FLOAT || dt == SM_DOUBLE ||
         dt == SM_BOOL;
}
static const char *dn(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "?";
}

static int64_t int_key(const sm_tensor *k, int64_t i) {
  if (sm_tensor_dtype(k) == SM_INT32) return ((const int32_t *)sm_tensor_data(k))[i];
  return ((const int64_t *)sm_tensor_data(k))[i];
}

static uint64_t key_hash(const sm_table *t, const sm_tensor *keys, int64_t i, const char **s, size_t *len,
                         int64_t *ik) {
  if (t->key_dtype == SM_STRING) {
    *s = sm_tensor_string(keys, i, len);
    if (!*s) *s = "", *len = 0;
    return mix64(fnv(*s, *len, 1469598103934665603ull));
  }
  *ik = int_key(keys, i);
  return mix64((uint64_t)*ik);
}

static int key_eq(const sm_table *t, const entry *e, const char *s, size_t len, int64_t ik) {
  return t->key_dtype == SM_STRING ? (e->klen == len && (!len || !memcmp(e->key, s, len))) : e->ikey == ik;
}

/* A dense table refuses its empty and deleted keys as keys (TF's messages); NULL for any other key or table. */
static sm_status *dense_reserved_key(const sm_table *t, const char *s, size_t len, int64_t ik) {
  if (t->kind != SM_TABLE_DENSE) return NULL;
  if (key_eq(t, &t->ekey, s, len, ik)) return sm_status_new(SM_INVALID_ARGUMENT, "Using the empty_key as a table key is not allowed");
  if (key_eq(t, &t->dkey, s, len, ik)) return sm_status_new(SM_INVALID_ARGUMENT, "Using the deleted_key as a table key is not allowed");
  return NULL;
}

static entry *tprobe_in(const sm_table *t, entry *slots, size_t cap, uint64_t h, const char *s, size_t len,
                        int64_t ik) {
  size_t mask = cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    entry *e = &slots[i];
    if (!e->used) return e;
    if (e->hash == h && key_eq(t, e, s, len, ik)) return e;
  }
}
static entry *tprobe(const sm_table *t, uint64_t h, const char *s, size_t len, int64_t ik) {
  return tprobe_in(t, t->slots, t->cap, h, s, len, ik);
}

static size_t elem_size(int dt) { return dt == SM_STRING ? 0 : sm_dtype_size(dt); }

/* What one entry is charged: its share of the slot array (kept at most half full) and its bytes. */
static size_t entry_bytes(const sm_table *t, size_t klen, size_t vbytes) {
  return 2 * sizeof(entry) + klen + (t->vn > 1 || t->value_dtype == SM_STRING ? vbytes : 0);
}

/* A new table named dname (taken over, freed on failure too). */
static sm_status *table_make(char *dname, const sm_table_spec *spec, int64_t vn, sm_table **out) {
  sm_table *t = calloc(1, sizeof *t);
  if (!t) {
    free(dname);
    return sm_status_new(SM_NO_MEMORY, "table: out of memory");
  }
  pthread_rwlock_init(&t->rw, NULL);
  atomic_init(&t->initialized, spec->kind != SM_TABLE_STATIC);
  t->self = t;
  t->magic = TABLE_MAGIC;
  t->key_dtype = spec->key_dtype;
  t->value_dtype = spec->value_dtype;
  t->kind = spec->kind;
  t->vrank = spec->vrank;
  for (int i = 0; i < spec->vrank; i++) t->vdims[i] = spec->vdims[i];
  t->vn = vn;
  t->name = dname;
  t->nbuckets = spec->num_buckets;
  t->max_load = spec->max_load_factor;
  sm_status *st = NULL;
  if (spec->kind == SM_TABLE_DENSE) {
    const sm_tensor *rk[2] = {spec->empty_key, spec->deleted_key};
    entry *re[2] = {&t->ekey, &t->dkey};
    for (int j = 0; j < 2 && !st; j++) {
      const char *ks = NULL;
      size_t kl = 0;
      re[j]->hash = key_hash(t, rk[j], 0, &ks, &kl, &re[j]->ikey);
      if (spec->key_dtype == SM_STRING) {
        re[j]->key = malloc(kl ? kl : 1);
        if (!re[j]->key) st = sm_status_new(SM_NO_MEMORY, "table '%s': out of memory", dname);
        else if (kl) memcpy(re[j]->key, ks, kl);
        re[j]->klen = kl;
      }
    }
  }
  if (st) {
    table_free(t);
    return st;
  }
  *out = t;
  return NULL;
}

static sm_status *spec_check(const char *name, const sm_table_spec *spec, int64_t *vn_out) {
  int key_dtype = spec->key_dtype, value_dtype = spec->value_dtype;
  if (!key_ok(key_dtype) || !value_ok(value_dtype))
    return sm_status_new(SM_UNIMPLEMENTED, "table '%s': hash tables from %s to %s are not supported here",
                         name ? name : "", dn(key_dtype), dn(value_dtype));
  int64_t vn = 1;
  if (spec->vrank < 0 || spec->vrank > SM_MAX_RANK)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': value_shape of rank %d", name ? name : "", spec->vrank);
  for (int i = 0; i < spec->vrank; i++) {
    if (spec->vdims[i] < 0 || (spec->vdims[i] && vn > ((int64_t)1 << 40) / spec->vdims[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': value_shape must be fully defined and small",
                           name ? name : "");
    vn *= spec->vdims[i];
  }
  if (vn != 1 && value_dtype == SM_STRING)
    return sm_status_new(SM_UNIMPLEMENTED, "table '%s': string values of a shape other than [] are not supported here",
                         name ? name : "");
  if (spec->kind == SM_TABLE_DENSE && (!spec->empty_key || !spec->deleted_key))
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': a dense table needs its empty and deleted keys",
                         name ? name : "");
  *vn_out = vn;
  return NULL;
}

sm_status *sm__htable_new(const char *name, const sm_table_spec *spec, sm_table **out) {
  *out = NULL;
  int64_t vn;
  sm_status *st = spec_check(name, spec, &vn);
  if (st) return st;
  char *d = dupstr(name ? name : "");
  if (!d) return sm_status_new(SM_NO_MEMORY, "table: out of memory");
  return table_make(d, spec, vn, out);
}
void sm__htable_free(sm_table *t) { table_free(t); }
void *sm__htable_self(sm_table *t) { return &t->self; }

sm_status *sm__resources_table_spec(sm_resources *r, const char *container, const char *name,
                                    const sm_table_spec *spec, sm_table **out) {
  *out = NULL;
  int key_dtype = spec->key_dtype, value_dtype = spec->value_dtype;
  if (!r) return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': no resource container", name ? name : "");
  int64_t vn;
  sm_status *st = spec_check(name, spec, &vn);
  if (st) return st;
  pthread_mutex_lock(&r->mu);
  res_slot *s;
  st = res_get(r, KIND_TABLE, container, name, &s);
  if (st) {
    pthread_mutex_unlock(&r->mu);
    return st;
  }
  if (s->kind) {
    sm_table *t = s->obj;
    pthread_mutex_unlock(&r->mu);
    if (t->key_dtype != key_dtype || t->value_dtype != value_dtype || t->kind != spec->kind || t->vn != vn)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "table '%s' exists from %s to %s (kind %d, %lld values per key), and is now asked for "
                           "from %s to %s (kind %d, %lld values per key)",
                           t->name, dn(t->key_dtype), dn(t->value_dtype), t->kind, (long long)t->vn, dn(key_dtype),
                           dn(value_dtype), spec->kind, (long long)vn);
    *out = t;
    return NULL;
  }
  sm_table *t = NULL;
  char *dname = display_name(container, name);
  st = dname ? table_make(dname, spec, vn, &t) : sm_status_new(SM_NO_MEMORY, "table '%s': out of memory", name ? name : "");
  if (st) {
    slot_abandon(r, s);
    pthread_mutex_unlock(&r->mu);
    return st;
  }
  s->obj = t;
  s->kind = KIND_TABLE;
  r->n++;
  pthread_mutex_unlock(&r->mu);
  *out = t;
  return NULL;
}

sm_status *sm__resources_table(sm_resources *r, const char *container, const char *name, int key_dtype,
                              int value_dtype, sm_table **out) {
  sm_table_spec spec = {.key_dtype = key_dtype, .value_dtype = value_dtype, .kind = SM_TABLE_STATIC};
  return sm__resources_table_spec(r, container, name, &spec, out);
}

int sm__table_key_dtype(const sm_table *t) { return t ? t->key_dtype : 0; }
int sm__table_value_dtype(const sm_table *t) { return t ? t->value_dtype : 0; }
int sm__table_kind(const sm_table *t) { return t ? t->kind : 0; }
int sm__table_value_shape(const sm_table *t, const int64_t **dims) {
  *dims = t->vdims;
  return t->vrank;
}
const char *sm__table_name(const sm_table *t) { return t ? t->name : ""; }
int sm__table_is_initialized(const sm_table *t) {
  return t ? atomic_load_explicit(&((sm_table *)t)->initialized, memory_order_acquire) : 0;
}
int64_t sm__table_size(const sm_table *t) {
  if (!sm__table_is_initialized(t)) return 0;
  pthread_rwlock_rdlock(&((sm_table *)t)->rw);
  int64_t n = (int64_t)t->n;
  pthread_rwlock_unlock(&((sm_table *)t)->rw);
  return n;
}

static void value_text(const sm_table *t, const entry *e, char *buf, size_t cap) {
  switch (t->value_dtype) {
    case SM_STRING: snprintf(buf, cap, "'%.*s'", (int)(e->slen > 64 ? 64 : e->slen), e->sval ? e->sval : ""); break;
    case SM_FLOAT: snprintf(buf, cap, "%g", (double)e->v.f); break;
    case SM_DOUBLE: snprintf(buf, cap, "%g", e->v.d); break;
    case SM_INT32: snprintf(buf, cap, "%" PRId32, e->v.i32); break;
    case SM_BOOL: snprintf(buf, cap, "%s", e->v.b[0] ? "true" : "false"); break;
    default: snprintf(buf, cap, "%" PRId64, e->v.i); break;
  }
}

/* The value of row i of vals into e (borrowed: sval points into vals for strings and vectors). */
static void get_value(const sm_table *t, const sm_tensor *vals, int64_t i, entry *e) {
  int dt = t->value_dtype;
  memset(&e->v, 0, sizeof e->v);
  e->sval = NULL;
  e->slen = 0;
  if (dt == SM_STRING) {
    size_t len;
    const char *p = sm_tensor_string(vals, i, &len);
    e->sval = (char *)p;
    e->slen = p ? len : 0;
    return;
  }
  size_t es = sm_dtype_size(dt);
  const char *src = (const char *)sm_tensor_data(vals) + (size_t)i * es * (size_t)t->vn;
  if (t->vn == 1) {
    memcpy(e->v.b, src, es);
  } else {
    e->sval = (char *)src;
    e->slen = es * (size_t)t->vn;
  }
}

static int same_value(const sm_table *t, const entry *a, const entry *b) {
  if (t->value_dtype == SM_STRING || t->vn != 1)
    return a->slen == b->slen && (!a->slen || !memcmp(a->sval, b->sval, a->slen));
  return !memcmp(a->v.b, b->v.b, sm_dtype_size(t->value_dtype));
}

/* Stores value nv (borrowed) into e, replacing what e holds. */
static int put_value(const sm_table *t, entry *e, const entry *nv) {
  if (t->value_dtype == SM_STRING || t->vn != 1) {
    char *p = NULL;
    if (nv->slen || t->value_dtype == SM_STRING) {
      if (e->sval && e->slen == nv->slen) {
        p = e->sval; /* same size: reuse */
      } else {
        p = malloc(nv->slen ? nv->slen : 1);
        if (!p) return 0;
        free(e->sval);
      }
      if (nv->slen) memcpy(p, nv->sval, nv->slen);
    }
    e->sval = p;
    e->slen = nv->slen;
  } else {
    e->v = nv->v;
  }
  return 1;
}

/* Grows the slot array so that `more` new entries keep it at most half full. */
static sm_status *reserve(sm_table *t, size_t more) {
  size_t need = t->n + more, cap = t->cap ? t->cap : 16;
  while (cap / 2 < need) {
    if (cap > ((size_t)1 << 40)) return sm_status_new(SM_OUT_OF_RANGE, "table '%s': %zu entries is too many", t->name, need);
    cap *= 2;
  }
  if (cap == t->cap) return NULL;
  entry *ns = calloc(cap, sizeof *ns);
  if (!ns) return sm_status_new(SM_RESOURCE_EXHAUSTED, "table '%s': out of memory for %zu entries", t->name, need);
  for (size_t i = 0; i < t->cap; i++) {
    entry *e = &t->slots[i];
    if (!e->used) continue;
    *tprobe_in(t, ns, cap, e->hash, e->key, e->klen, e->ikey) = *e;
  }
  free(t->slots);
  t->slots = ns;
  t->cap = cap;
  return NULL;
}

/* Removes e (a used slot), shifting the rest of its run back. */
static void erase_slot(sm_table *t, entry *e) {
  free(e->key);
  free(e->sval);
  size_t mask = t->cap - 1, i = (size_t)(e - t->slots);
  t->slots[i].used = 0;
  for (size_t j = (i + 1) & mask; t->slots[j].used; j = (j + 1) & mask) {
    size_t home = t->slots[j].hash & mask;
    /* j's entry may move to i when its home is not in the cyclic range (i, j] */
    int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (in_range) continue;
    t->slots[i] = t->slots[j];
    t->slots[j].used = 0;
    i = j;
  }
  memset(&t->slots[i], 0, sizeof t->slots[i]);
  t->n--;
}

static void key_text(const sm_table *t, const char *s, size_t len, int64_t ik, char *kb, size_t cap) {
  if (t->key_dtype == SM_STRING)
    snprintf(kb, cap, "'%.*s'", (int)(len > 64 ? 64 : len), s);
  else
    snprintf(kb, cap, "%" PRId64, ik);
}

/* Inserts (or, with `replace`, overwrites) keys[i] -> values[i]; with !replace a differing value of
 * an existing key is TF's HashTable error. Caller holds the write lock. On failure what was
 * inserted stays (as TF, whose inserts are not transactional either). */
static sm_status *put_all(sm_table *t, const sm_kctx *c, const sm_tensor *keys, const sm_tensor *values, int replace) {
  int64_t n = sm_tensor_num_elements(keys);
  sm_status *st = reserve(t, (size_t)n);
  for (int64_t i = 0; i < n && !st; i++) {
    const char *s = NULL;
    size_t len = 0;
    int64_t ik = 0;
    uint64_t h = key_hash(t, keys, i, &s, &len, &ik);
    sm_status *bad = dense_reserved_key(t, s, len, ik);
    if (bad) return bad;
    entry nv;
    get_value(t, values, i, &nv);
    entry *e = tprobe(t, h, s, len, ik);
    if (e->used) {
      if (replace) {
        if (!put_value(t, e, &nv)) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "table '%s': out of memory", t->name);
      } else if (!same_value(t, e, &nv)) {
        char a[96], b[96], kb[96];
        value_text(t, e, a, sizeof a);
        value_text(t, &nv, b, sizeof b);
        key_text(t, s, len, ik, kb, sizeof kb);
        st = sm_status_new(SM_FAILED_PRECONDITION,
                           "HashTable has different value for same key. Key %s has %s and trying to add value %s", kb,
                           a, b);
      }
      continue;
    }
    size_t eb = entry_bytes(t, len, nv.slen);
    if (c && (st = sm__kctx_hold(c, &t->acct, eb, "a hash table's entries"))) break;
    entry ne = {.hash = h, .ikey = ik, .klen = len, .used = 1};
    if (t->key_dtype == SM_STRING) {
      ne.key = malloc(len ? len : 1);
      if (!ne.key) {
        st = sm_status_new(SM_RESOURCE_EXHAUSTED, "table '%s': out of memory", t->name);
        break;
      }
      if (len) memcpy(ne.key, s, len);
    }
    if (!put_value(t, &ne, &nv)) {
      free(ne.key);
      st = sm_status_new(SM_RESOURCE_EXHAUSTED, "table '%s': out of memory", t->name);
      break;
    }
    *e = ne;
    t->n++;
    t->held += eb;
  }
  return st;
}

static void clear_all(sm_table *t) {
  slots_free(t->slots, t->cap);
  t->slots = NULL;
  t->cap = t->n = 0;
  sm__mem_give(&t->acct, t->held);
  t->held = 0;
}

static sm_status *check_pairs(const sm_table *t, const sm_tensor *keys, const sm_tensor *values, const char *what) {
  int kdt = sm_tensor_dtype(keys), vdt = sm_tensor_dtype(values);
  int kmatch = kdt == t->key_dtype || (t->kind == SM_TABLE_STATIC && t->key_dtype == SM_INT64 && kdt == SM_INT32);
  if (!kmatch || vdt != t->value_dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s' maps %s to %s, %s gives %s to %s", t->name,
                         dn(t->key_dtype), dn(t->value_dtype), what, dn(kdt), dn(vdt));
  /* values must have keys' shape followed by the value shape */
  int kr = sm_tensor_rank(keys), vr = sm_tensor_rank(values);
  int ok = vr == kr + t->vrank && !memcmp(sm_tensor_dims(values), sm_tensor_dims(keys), (size_t)kr * sizeof(int64_t)) &&
           !memcmp(sm_tensor_dims(values) + kr, t->vdims, (size_t)t->vrank * sizeof(int64_t));
  if (!ok) {
    char b1[128], b2[128], b3[128];
    int64_t want[2 * SM_MAX_RANK];
    int wr = kr + t->vrank <= 2 * SM_MAX_RANK ? kr + t->vrank : 0;
    if (wr) {
      memcpy(want, sm_tensor_dims(keys), (size_t)kr * sizeof(int64_t));
      memcpy(want + kr, t->vdims, (size_t)t->vrank * sizeof(int64_t));
    }
    (void)b3;
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape %s for value, got %s",
                         sm_shape_str(wr, want, b1, sizeof b1), sm_shape_str(vr, sm_tensor_dims(values), b2, sizeof b2));
  }
  return NULL;
}

sm_status *sm__table_init(sm_table *t, const sm_tensor *keys, const sm_tensor *values) {
  if (!t || !keys || !values) return sm_status_new(SM_INVALID_ARGUMENT, "initializing a table: null argument");
  sm_status *err = check_pairs(t, keys, values, "initializer");
  if (err) return err;
  if (sm_tensor_rank(keys) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': keys must be a vector, got rank %d", t->name,
                         sm_tensor_rank(keys));
  pthread_rwlock_wrlock(&t->rw);
  if (atomic_load_explicit(&t->initialized, memory_order_acquire)) {
    pthread_rwlock_unlock(&t->rw);
    return NULL; /* TF's initializers run once; the second run is a no-op */
  }
  err = put_all(t, NULL, keys, values, 0);
  if (err) {
    clear_all(t); /* leave the table uninitialized and empty so a later init can try again */
    pthread_rwlock_unlock(&t->rw);
    return sm_status_prefix(err, "initializing table '%s'", t->name);
  }
  atomic_store_explicit(&t->initialized, 1, memory_order_release);
  pthread_rwlock_unlock(&t->rw);
  return NULL;
}

static sm_status *check_keys(const sm_table *t, const sm_tensor *keys) {
  if (sm_tensor_dtype(keys) != t->key_dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': keys must be %s, got %s", t->name, dn(t->key_dtype),
                         dn(sm_tensor_dtype(keys)));
  return NULL;
}

/* TF's MutableDenseHashTable grows by doubling when the entries it counts and the batch would pass
 * max_load_factor of its buckets; export shows that many buckets. */
static void dense_grow(sm_table *t, int64_t batch) {
  int64_t want = t->dense_entries + batch;
  while (t->nbuckets > 0 && t->nbuckets < ((int64_t)1 << 50) && (double)want > (double)t->nbuckets * t->max_load)
    t->nbuckets *= 2;
}

sm_status *sm__table_insert(sm_table *t, const sm_kctx *c, const sm_tensor *keys, const sm_tensor *values) {
  sm_status *st = check_keys(t, keys);
  if (!st) st = check_pairs(t, keys, values, "insert");
  if (st) return st;
  pthread_rwlock_wrlock(&t->rw);
  size_t before = t->n;
  if (t->kind == SM_TABLE_DENSE) dense_grow(t, sm_tensor_num_elements(keys));
  st = put_all(t, c, keys, values, 1);
  if (t->kind == SM_TABLE_DENSE) t->dense_entries += (int64_t)(t->n - before);
  pthread_rwlock_unlock(&t->rw);
  return st;
}

sm_status *sm__table_remove(sm_table *t, const sm_kctx *c, const sm_tensor *keys) {
  (void)c;
  sm_status *st = check_keys(t, keys);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(keys);
  pthread_rwlock_wrlock(&t->rw);
  for (int64_t i = 0; i < n && !st; i++) {
    const char *s = NULL;
    size_t len = 0;
    int64_t ik = 0;
    uint64_t h = key_hash(t, keys, i, &s, &len, &ik);
    if ((st = dense_reserved_key(t, s, len, ik))) break;
    if (!t->cap) continue;
    entry *e = tprobe(t, h, s, len, ik);
    if (!e->used) continue;
    size_t eb = entry_bytes(t, e->klen, e->slen);
    erase_slot(t, e);
    if (t->kind == SM_TABLE_DENSE) t->dense_entries--;
    sm__mem_give(&t->acct, eb);
    t->held -= eb < t->held ? eb : t->held;
  }
  pthread_rwlock_unlock(&t->rw);
  return st;
}

sm_status *sm__table_import(sm_table *t, const sm_kctx *c, const sm_tensor *keys, const sm_tensor *values) {
  sm_status *st = check_keys(t, keys);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(keys);
  if (t->kind == SM_TABLE_DENSE) {
    /* the saved buckets: [n, 1] keys and [n, value elements] values */
    int64_t kd[2] = {n, 1}, vd[2] = {n, t->vn};
    char b1[64], b2[64];
    if (sm_tensor_rank(keys) != 2 || sm_tensor_dims(keys)[1] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape %s for key, got %s", sm_shape_str(2, kd, b1, sizeof b1),
                           sm_shape_str(sm_tensor_rank(keys), sm_tensor_dims(keys), b2, sizeof b2));
    if (sm_tensor_dtype(values) != t->value_dtype || sm_tensor_rank(values) != 2 || sm_tensor_dims(values)[0] != n ||
        sm_tensor_dims(values)[1] != t->vn)
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape %s for value, got %s", sm_shape_str(2, vd, b1, sizeof b1),
                           sm_shape_str(sm_tensor_rank(values), sm_tensor_dims(values), b2, sizeof b2));
    if (n < 4 || (n & (n - 1)))
      return sm_status_new(SM_INVALID_ARGUMENT, "Number of buckets must be at least 4 and a power of 2, got: %lld",
                           (long long)n);
  } else if ((st = check_pairs(t, keys, values, "import"))) {
    return st;
  }
  pthread_rwlock_wrlock(&t->rw);
  clear_all(t);
  if (t->kind == SM_TABLE_DENSE) {
    /* the saved buckets: skip the empty and deleted ones */
    size_t es = elem_size(t->value_dtype);
    sm_tensor *k1 = NULL, *v1 = NULL;
    int64_t live = 0;
    for (int64_t i = 0; i < n; i++) {
      const char *s = NULL;
      size_t len = 0;
      int64_t ik = 0;
      key_hash(t, keys, i, &s, &len, &ik);
      if (!key_eq(t, &t->ekey, s, len, ik) && !key_eq(t, &t->dkey, s, len, ik)) live++;
    }
    int64_t vd[SM_MAX_RANK + 1] = {live};
    memcpy(vd + 1, t->vdims, (size_t)t->vrank * sizeof(int64_t));
    st = sm_tensor_new(t->key_dtype, 1, &live, &k1);
    if (!st) st = sm_tensor_new(t->value_dtype, 1 + t->vrank, vd, &v1);
    for (int64_t i = 0, j = 0; i < n && !st; i++) {
      const char *s = NULL;
      size_t len = 0;
      int64_t ik = 0;
      key_hash(t, keys, i, &s, &len, &ik);
      if (key_eq(t, &t->ekey, s, len, ik) || key_eq(t, &t->dkey, s, len, ik)) continue;
      if (t->key_dtype == SM_STRING)
        st = sm_tensor_set_string(k1, j, s, len);
      else
        ((int64_t *)sm_tensor_data(k1))[j] = ik;
      if (!st && t->value_dtype == SM_STRING) {
        size_t vl;
        const char *vs = sm_tensor_string(values, i, &vl);
        st = sm_tensor_set_string(v1, j, vs ? vs : "", vs ? vl : 0);
      } else if (!st) {
        memcpy((char *)sm_tensor_data(v1) + (size_t)j * es * (size_t)t->vn,
               (const char *)sm_tensor_data(values) + (size_t)i * es * (size_t)t->vn, es * (size_t)t->vn);
      }
      j++;
    }
    if (!st) st = put_all(t, c, k1, v1, 1);
    if (!st) {
      t->nbuckets = n;
      t->dense_entries = (int64_t)t->n;
    }
    sm_tensor_free(k1);
    sm_tensor_free(v1);
  } else {
    sm_tensor *k1 = NULL, *v1 = NULL;
    int64_t vd[SM_MAX_RANK + 1] = {n};
    memcpy(vd + 1, t->vdims, (size_t)t->vrank * sizeof(int64_t));
    st = sm_tensor_view((sm_tensor *)keys, 1, &n, &k1);
    if (!st) st = sm_tensor_view((sm_tensor *)values, 1 + t->vrank, vd, &v1);
    if (!st) st = put_all(t, c, k1, v1, 1);
    sm_tensor_free(k1);
    sm_tensor_free(v1);
  }
  atomic_store_explicit(&t->initialized, 1, memory_order_release);
  pthread_rwlock_unlock(&t->rw);
  return st;
}

sm_status *sm__table_export(sm_table *t, sm_tensor **keys_out, sm_tensor **values_out) {
  *keys_out = *values_out = NULL;
  pthread_rwlock_rdlock(&t->rw);
  int64_t n = (int64_t)t->n, rows = n;
  if (t->kind == SM_TABLE_DENSE && t->nbuckets > rows) rows = t->nbuckets;
  int64_t vd[SM_MAX_RANK + 1] = {rows}, kd[2] = {rows, 1};
  memcpy(vd + 1, t->vdims, (size_t)t->vrank * sizeof(int64_t));
  sm_tensor *k = NULL, *v = NULL;
  /* a dense table's buckets are matrices: [buckets, 1] keys and [buckets, value elements] values */
  int dense = t->kind == SM_TABLE_DENSE;
  if (dense) vd[1] = t->vn;
  sm_status *st = sm_tensor_new(t->key_dtype, dense ? 2 : 1, kd, &k);
  if (!st) st = sm_tensor_new(t->value_dtype, dense ? 2 : 1 + t->vrank, vd, &v);
  size_t es = elem_size(t->value_dtype), ks = elem_size(t->key_dtype);
  int64_t j = 0;
  for (size_t i = 0; i < t->cap && !st; i++) {
    const entry *e = &t->slots[i];
    if (!e->used) continue;
    if (t->key_dtype == SM_STRING)
      st = sm_tensor_set_string(k, j, e->key, e->klen);
    else if (ks == 4)
      ((int32_t *)sm_tensor_data(k))[j] = (int32_t)e->ikey;
    else
      ((int64_t *)sm_tensor_data(k))[j] = e->ikey;
    if (st) break;
    if (t->value_dtype == SM_STRING)
      st = sm_tensor_set_string(v, j, e->sval ? e->sval : "", e->slen);
    else
      memcpy((char *)sm_tensor_data(v) + (size_t)j * es * (size_t)t->vn, t->vn == 1 ? (const void *)e->v.b : e->sval,
             es * (size_t)t->vn);
    j++;
  }
  /* a dense table's free buckets hold its empty key */
  for (; j < rows && !st; j++) {
    if (t->key_dtype == SM_STRING)
      st = sm_tensor_set_string(k, j, t->ekey.key, t->ekey.klen);
    else if (ks == 4)
      ((int32_t *)sm_tensor_data(k))[j] = (int32_t)t->ekey.ikey;
    else
      ((int64_t *)sm_tensor_data(k))[j] = t->ekey.ikey;
  }
  pthread_rwlock_unlock(&t->rw);
  if (st) {
    sm_tensor_free(k);
    sm_tensor_free(v);
    return st;
  }
  *keys_out = k;
  *values_out = v;
  return NULL;
}

sm_status *sm__table_find(const sm_table *ct, const sm_tensor *keys, const sm_tensor *default_value, sm_tensor *out) {
  sm_table *t = (sm_table *)ct;
  if (!t || !keys || !default_value || !out)
    return sm_status_new(SM_INVALID_ARGUMENT, "table lookup: null argument");
  if (!sm__table_is_initialized(t))
    return sm_status_new(SM_FAILED_PRECONDITION, "Table not initialized: table '%s'", t->name);
  int kdt = sm_tensor_dtype(keys);
  int kmatch = kdt == t->key_dtype || (t->kind == SM_TABLE_STATIC && t->key_dtype == SM_INT64 && kdt == SM_INT32);
  if (!kmatch)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': keys must be %s, got %s", t->name, dn(t->key_dtype), dn(kdt));
  int vdt = t->value_dtype;
  int64_t n = sm_tensor_num_elements(keys), nd = sm_tensor_num_elements(default_value), vn = t->vn;
  if (sm_tensor_dtype(default_value) != vdt || sm_tensor_dtype(out) != vdt || sm_tensor_num_elements(out) != n * vn ||
      (nd != vn && nd != n * vn))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "table '%s': default value must be %lld %s and the output %" PRId64
                         " values of that dtype (default is %s with %" PRId64 " elements)",
                         t->name, (long long)vn, dn(vdt), n * vn, dn(sm_tensor_dtype(default_value)), nd);
  size_t es = elem_size(vdt) * (size_t)vn;
  sm_status *st = NULL;
  pthread_rwlock_rdlock(&t->rw);
  for (int64_t i = 0; i < n && !st; i++) {
    const char *s = NULL;
    size_t len = 0;
    int64_t ik = 0;
    uint64_t h = key_hash(t, keys, i, &s, &len, &ik);
    if ((st = dense_reserved_key(t, s, len, ik))) break;
    const entry *e = t->cap ? tprobe(t, h, s, len, ik) : NULL;
    int64_t di = nd == vn ? 0 : i;
    if (vdt == SM_STRING) {
      const char *src;
      size_t sl;
      if (e && e->used) {
        src = e->sval;
        sl = e->slen;
      } else {
        src = sm_tensor_string(default_value, di, &sl);
      }
      st = sm_tensor_set_string(out, i, src ? src : "", src ? sl : 0);
    } else {
      char *dst = (char *)sm_tensor_data(out) + (size_t)i * es;
      if (e && e->used)
        memcpy(dst, vn == 1 ? (const void *)e->v.b : e->sval, es);
      else
        memcpy(dst, (const char *)sm_tensor_data(default_value) + (size_t)di * es, es);
    }
  }
  pthread_rwlock_unlock(&t->rw);
  return st;
}
