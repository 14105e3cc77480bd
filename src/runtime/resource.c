/* resource.c - variables and hash tables that live across runs of one loaded model.
 *
 * The registry is a small open-addressing map from (kind, container, name) to the object, under one
 * mutex (lookups happen when kernels resolve handles, not per element). A variable holds its value
 * as a refcounted tensor swapped under the variable's own mutex, so a reader keeps a reference and
 * a concurrent assign never frees what it reads. A hash table is open addressing over 64-bit
 * hashes, written once by its initializer under a mutex and read lock-free after `initialized` is
 * published with release ordering. */
#include "runtime/resource.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_VARIABLE = 1, KIND_TABLE = 2 };

struct sm_variable {
  pthread_mutex_t mu;
  int dtype;
  char *name; /* "container/name" style text for messages: just the name when container is "" */
  sm_tensor *value;
};

typedef struct entry {
  uint64_t hash;
  const char *key; /* borrowed from the string arrays of the table (strings) */
  size_t klen;
  int64_t ikey;
  union {
    int64_t i;
    double d;
    float f;
    int32_t i32;
    uint8_t b[8];
  } v;
  char *sval; /* string value */
  size_t slen;
  int used;
} entry;

struct sm_table {
  pthread_mutex_t mu;
  int key_dtype, value_dtype;
  char *name;
  atomic_int initialized;
  entry *slots;
  size_t cap, n;
  char **owned_keys; /* copies of string keys, freed with the table */
  size_t nowned;
};

typedef struct res_slot {
  int kind;
  char *container, *name;
  uint64_t hash;
  void *obj;
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

static void table_free(sm_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->cap; i++) free(t->slots[i].sval);
  for (size_t i = 0; i < t->nowned; i++) free(t->owned_keys[i]);
  free(t->owned_keys);
  free(t->slots);
  pthread_mutex_destroy(&t->mu);
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
    else
      table_free(s->obj);
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
  v->dtype = dtype;
  v->name = dn;
  s->obj = v;
  s->kind = KIND_VARIABLE;
  r->n++;
  pthread_mutex_unlock(&r->mu);
  *out = v;
  return NULL;
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

/* ---- hash tables -------------------------------------------------------------------------- */

static int key_ok(int dt) { return dt == SM_STRING || dt == SM_INT64 || dt == SM_INT32; }
static int value_ok(int dt) {
  return dt == SM_STRING || dt == SM_INT64 || dt == SM_INT32 || dt == SM_FLOAT || dt == SM_DOUBLE ||
         dt == SM_BOOL;
}

sm_status *sm__resources_table(sm_resources *r, const char *container, const char *name, int key_dtype,
                              int value_dtype, sm_table **out) {
  *out = NULL;
  const char *kn = sm_dtype_name(key_dtype), *vn = sm_dtype_name(value_dtype);
  if (!r) return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': no resource container", name ? name : "");
  if (!key_ok(key_dtype) || !value_ok(value_dtype))
    return sm_status_new(SM_UNIMPLEMENTED, "table '%s': hash tables from %s to %s are not supported here",
                         name ? name : "", kn ? kn : "?", vn ? vn : "?");
  pthread_mutex_lock(&r->mu);
  res_slot *s;
  sm_status *st = res_get(r, KIND_TABLE, container, name, &s);
  if (st) {
    pthread_mutex_unlock(&r->mu);
    return st;
  }
  if (s->kind) {
    sm_table *t = s->obj;
    pthread_mutex_unlock(&r->mu);
    if (t->key_dtype != key_dtype || t->value_dtype != value_dtype) {
      const char *a = sm_dtype_name(t->key_dtype), *b = sm_dtype_name(t->value_dtype);
      return sm_status_new(SM_INVALID_ARGUMENT, "table '%s' exists from %s to %s, and is now asked for from %s to %s",
                           t->name, a ? a : "?", b ? b : "?", kn ? kn : "?", vn ? vn : "?");
    }
    *out = t;
    return NULL;
  }
  sm_table *t = calloc(1, sizeof *t);
  char *dn = display_name(container, name);
  if (!t || !dn) {
    free(t);
    free(dn);
    slot_abandon(r, s);
    pthread_mutex_unlock(&r->mu);
    return sm_status_new(SM_NO_MEMORY, "table '%s': out of memory", name ? name : "");
  }
  pthread_mutex_init(&t->mu, NULL);
  atomic_init(&t->initialized, 0);
  t->key_dtype = key_dtype;
  t->value_dtype = value_dtype;
  t->name = dn;
  s->obj = t;
  s->kind = KIND_TABLE;
  r->n++;
  pthread_mutex_unlock(&r->mu);
  *out = t;
  return NULL;
}

int sm__table_key_dtype(const sm_table *t) { return t ? t->key_dtype : 0; }
int sm__table_value_dtype(const sm_table *t) { return t ? t->value_dtype : 0; }
int sm__table_is_initialized(const sm_table *t) {
  return t ? atomic_load_explicit(&((sm_table *)t)->initialized, memory_order_acquire) : 0;
}
int64_t sm__table_size(const sm_table *t) {
  return sm__table_is_initialized(t) ? (int64_t)t->n : 0;
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

static entry *tprobe(const sm_table *t, uint64_t h, const char *s, size_t len, int64_t ik) {
  size_t mask = t->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    entry *e = &t->slots[i];
    if (!e->used) return e;
    if (e->hash != h) continue;
    if (t->key_dtype == SM_STRING ? (e->klen == len && !memcmp(e->key, s, len)) : e->ikey == ik) return e;
  }
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

static void get_value(const sm_tensor *vals, int64_t i, int dt, entry *e) {
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
  memcpy(e->v.b, (const char *)sm_tensor_data(vals) + (size_t)i * es, es);
}

static int same_value(int dt, const entry *a, const entry *b) {
  if (dt == SM_STRING) return a->slen == b->slen && (!a->slen || !memcmp(a->sval, b->sval, a->slen));
  return !memcmp(a->v.b, b->v.b, sm_dtype_size(dt));
}

sm_status *sm__table_init(sm_table *t, const sm_tensor *keys, const sm_tensor *values) {
  if (!t || !keys || !values) return sm_status_new(SM_INVALID_ARGUMENT, "initializing a table: null argument");
  int kdt = sm_tensor_dtype(keys), vdt = sm_tensor_dtype(values);
  int kmatch = kdt == t->key_dtype || (t->key_dtype == SM_INT64 && kdt == SM_INT32);
  if (!kmatch || vdt != t->value_dtype) {
    const char *a = sm_dtype_name(t->key_dtype), *b = sm_dtype_name(t->value_dtype), *c = sm_dtype_name(kdt),
               *d = sm_dtype_name(vdt);
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s' maps %s to %s, initializer gives %s to %s", t->name,
                         a ? a : "?", b ? b : "?", c ? c : "?", d ? d : "?");
  }
  if (sm_tensor_rank(keys) != 1 || sm_tensor_rank(values) != 1 ||
      sm_tensor_num_elements(keys) != sm_tensor_num_elements(values)) {
    char b1[64], b2[64];
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "table '%s': keys and values must be vectors of one length, got keys %s and values %s",
                         t->name, sm_shape_str(sm_tensor_rank(keys), sm_tensor_dims(keys), b1, sizeof b1),
                         sm_shape_str(sm_tensor_rank(values), sm_tensor_dims(values), b2, sizeof b2));
  }
  pthread_mutex_lock(&t->mu);
  if (atomic_load_explicit(&t->initialized, memory_order_acquire)) {
    pthread_mutex_unlock(&t->mu);
    return NULL; /* TF's initializers run once; the second run is a no-op */
  }
  int64_t n = sm_tensor_num_elements(keys);
  size_t cap = 16;
  while ((int64_t)(cap / 2) < n) {
    if (cap > ((size_t)1 << 40)) {
      pthread_mutex_unlock(&t->mu);
      return sm_status_new(SM_OUT_OF_RANGE, "table '%s': %" PRId64 " entries is too many", t->name, n);
    }
    cap *= 2;
  }
  entry *slots = calloc(cap, sizeof *slots);
  char **owned = t->key_dtype == SM_STRING ? calloc((size_t)(n ? n : 1), sizeof *owned) : NULL;
  if (!slots || (t->key_dtype == SM_STRING && !owned)) {
    free(slots);
    free(owned);
    pthread_mutex_unlock(&t->mu);
    return sm_status_new(SM_NO_MEMORY, "table '%s': out of memory for %" PRId64 " entries", t->name, n);
  }
  t->slots = slots;
  t->cap = cap;
  t->n = 0;
  t->owned_keys = owned;
  t->nowned = 0;
  sm_status *err = NULL;
  for (int64_t i = 0; i < n && !err; i++) {
    const char *s = NULL;
    size_t len = 0;
    int64_t ik = 0;
    uint64_t h = key_hash(t, keys, i, &s, &len, &ik);
    entry nv;
    get_value(values, i, t->value_dtype, &nv);
    entry *e = tprobe(t, h, s, len, ik);
    if (e->used) {
      if (!same_value(t->value_dtype, e, &nv)) {
        char a[96], b[96], kb[96];
        value_text(t, e, a, sizeof a);
        value_text(t, &nv, b, sizeof b);
        if (t->key_dtype == SM_STRING)
          snprintf(kb, sizeof kb, "'%.*s'", (int)(len > 64 ? 64 : len), s);
        else
          snprintf(kb, sizeof kb, "%" PRId64, ik);
        err = sm_status_new(SM_FAILED_PRECONDITION,
                            "HashTable has different value for same key. Key %s has %s and trying to add value %s",
                            kb, a, b);
      }
      continue;
    }
    e->used = 1;
    e->hash = h;
    e->ikey = ik;
    if (t->key_dtype == SM_STRING) {
      char *k = malloc(len ? len : 1);
      if (!k) {
        err = sm_status_new(SM_NO_MEMORY, "table '%s': out of memory", t->name);
        e->used = 0;
        break;
      }
      if (len) memcpy(k, s, len);
      owned[t->nowned++] = k;
      e->key = k;
      e->klen = len;
    }
    e->v = nv.v;
    if (t->value_dtype == SM_STRING) {
      e->sval = malloc(nv.slen ? nv.slen : 1);
      if (!e->sval) {
        err = sm_status_new(SM_NO_MEMORY, "table '%s': out of memory", t->name);
        break;
      }
      if (nv.slen) memcpy(e->sval, nv.sval, nv.slen);
      e->slen = nv.slen;
    }
    t->n++;
  }
  if (err) {
    /* leave the table uninitialized and empty so a later init can try again */
    for (size_t i = 0; i < t->cap; i++) free(t->slots[i].sval);
    for (size_t i = 0; i < t->nowned; i++) free(t->owned_keys[i]);
    free(t->owned_keys);
    free(t->slots);
    t->slots = NULL;
    t->owned_keys = NULL;
    t->cap = t->n = t->nowned = 0;
    pthread_mutex_unlock(&t->mu);
    return sm_status_prefix(err, "initializing table '%s'", t->name);
  }
  atomic_store_explicit(&t->initialized, 1, memory_order_release);
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

sm_status *sm__table_find(const sm_table *t, const sm_tensor *keys, const sm_tensor *default_value, sm_tensor *out) {
  if (!t || !keys || !default_value || !out)
    return sm_status_new(SM_INVALID_ARGUMENT, "table lookup: null argument");
  if (!sm__table_is_initialized(t))
    return sm_status_new(SM_FAILED_PRECONDITION, "Table not initialized: table '%s'", t->name);
  int kdt = sm_tensor_dtype(keys);
  int kmatch = kdt == t->key_dtype || (t->key_dtype == SM_INT64 && kdt == SM_INT32);
  if (!kmatch) {
    const char *a = sm_dtype_name(t->key_dtype), *b = sm_dtype_name(kdt);
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s': keys must be %s, got %s", t->name, a ? a : "?",
                         b ? b : "?");
  }
  int vdt = t->value_dtype;
  int64_t n = sm_tensor_num_elements(keys), nd = sm_tensor_num_elements(default_value);
  if (sm_tensor_dtype(default_value) != vdt || sm_tensor_dtype(out) != vdt || sm_tensor_num_elements(out) != n ||
      (nd != 1 && nd != n)) {
    const char *a = sm_dtype_name(vdt), *b = sm_dtype_name(sm_tensor_dtype(default_value));
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "table '%s': default value must be a %s scalar and the output %" PRId64
                         " values of that dtype (default is %s with %" PRId64 " elements)",
                         t->name, a ? a : "?", n, b ? b : "?", nd);
  }
  size_t es = vdt == SM_STRING ? 0 : sm_dtype_size(vdt);
  for (int64_t i = 0; i < n; i++) {
    const char *s = NULL;
    size_t len = 0;
    int64_t ik = 0;
    uint64_t h = key_hash(t, keys, i, &s, &len, &ik);
    const entry *e = t->cap ? tprobe(t, h, s, len, ik) : NULL;
    int64_t di = nd == 1 ? 0 : i;
    if (vdt == SM_STRING) {
      const char *src;
      size_t sl;
      if (e && e->used) {
        src = e->sval;
        sl = e->slen;
      } else {
        src = sm_tensor_string(default_value, di, &sl);
      }
      sm_status *st = sm_tensor_set_string(out, i, src ? src : "", src ? sl : 0);
      if (st) return st;
    } else {
      char *dst = (char *)sm_tensor_data(out) + (size_t)i * es;
      if (e && e->used)
        memcpy(dst, e->v.b, es);
      else
        memcpy(dst, (const char *)sm_tensor_data(default_value) + (size_t)di * es, es);
    }
  }
  return NULL;
}
