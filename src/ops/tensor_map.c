/* tensor_map.c - DT_VARIANT containers other than TensorList: TensorMap (EmptyTensorMap,
 * TensorMapInsert, TensorMapLookup, TensorMapErase, TensorMapHasKey, TensorMapSize,
 * TensorMapStackKeys) and Optional (OptionalNone, OptionalFromValue, OptionalHasValue,
 * OptionalGetValue), with TensorFlow's messages (kernels/map_kernels.h, data/optional_ops.cc).
 *
 * A map is a variant object (base/variant.h) holding (key, value) tensor pairs by reference and a
 * hash index over the keys' dtype, shape and bytes (TF's TensorKey equality). Insert and erase
 * copy the map unless this step is the only holder of it (copy-on-write, as list.c). The pairs'
 * vector is bounded by sm__seq_max_elements and charged to the run's memory budget. An Optional
 * is a variant holding its components (or none). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/variant.h"
#include "ops/optional.h"
#include "runtime/kernel.h"

#define MAP_TYPE "tensorflow::TensorMap"
#define OPT_TYPE "tensorflow::data::OptionalVariant"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

/* ---- keys ------------------------------------------------------------------------------------ */

static uint64_t key_hash(const sm_tensor *k) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)sm_tensor_dtype(k);
#define MIX(p, n)                                              \
  for (size_t i_ = 0; i_ < (n); i_++) {                        \
    h ^= ((const unsigned char *)(p))[i_];                     \
    h *= 1099511628211ull;                                     \
  }
  int r = sm_tensor_rank(k);
  MIX(sm_tensor_dims(k), (size_t)r * sizeof(int64_t));
  if (sm_tensor_dtype(k) == SM_STRING) {
    for (int64_t i = 0; i < sm_tensor_num_elements(k); i++) {
      size_t len;
      const char *s = sm_tensor_string(k, i, &len);
      MIX(&len, sizeof len);
      if (s) MIX(s, len);
    }
  } else if (sm_tensor_data(k)) {
    MIX(sm_tensor_data(k), sm_tensor_nbytes(k));
  }
#undef MIX
  return h;
}

static int key_eq(const sm_tensor *a, const sm_tensor *b) {
  if (sm_tensor_dtype(a) != sm_tensor_dtype(b) || sm_tensor_rank(a) != sm_tensor_rank(b) ||
      memcmp(sm_tensor_dims(a), sm_tensor_dims(b), (size_t)sm_tensor_rank(a) * sizeof(int64_t)))
    return 0;
  if (sm_tensor_dtype(a) == SM_STRING) {
    for (int64_t i = 0; i < sm_tensor_num_elements(a); i++) {
      size_t la, lb;
      const char *x = sm_tensor_string(a, i, &la), *y = sm_tensor_string(b, i, &lb);
      if (la != lb || (la && memcmp(x, y, la))) return 0;
    }
    return 1;
  }
  return sm_tensor_nbytes(a) == sm_tensor_nbytes(b) &&
         (!sm_tensor_nbytes(a) || !memcmp(sm_tensor_data(a), sm_tensor_data(b), sm_tensor_nbytes(a)));
}

/* TF's SummarizeValue of a key, for messages: its first elements, space-separated. */
static void key_text(const sm_tensor *k, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  int64_t n = sm_tensor_num_elements(k);
  for (int64_t i = 0; i < n && i < 10 && used + 1 < cap; i++) {
    const void *d = sm_tensor_data(k);
    char e[80];
    switch (sm_tensor_dtype(k)) {
      case SM_STRING: {
        size_t len;
        const char *p = sm_tensor_string(k, i, &len);
        snprintf(e, sizeof e, "%.*s", (int)(len > 60 ? 60 : len), p ? p : "");
        break;
      }
      case SM_FLOAT: snprintf(e, sizeof e, "%g", (double)((const float *)d)[i]); break;
      case SM_DOUBLE: snprintf(e, sizeof e, "%g", ((const double *)d)[i]); break;
      case SM_INT32: snprintf(e, sizeof e, "%" PRId32, ((const int32_t *)d)[i]); break;
      case SM_INT64: snprintf(e, sizeof e, "%" PRId64, ((const int64_t *)d)[i]); break;
      case SM_BOOL: snprintf(e, sizeof e, "%d", ((const uint8_t *)d)[i] != 0); break;
      default: snprintf(e, sizeof e, "?"); break;
    }
    int w = snprintf(buf + used, cap - used, "%s%s", i ? " " : "", e);
    if (w < 0) break;
    used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
  }
  if (n > 10 && used + 4 < cap) snprintf(buf + used, cap - used, "...");
}

/* ---- the map object -------------------------------------------------------------------------- */

typedef struct tmap {
  sm_variant v; /* first */
  sm_tensor **keys, **vals;
  uint64_t *hashes;
  int64_t n, cap;
  int64_t *index; /* icap slots: pair index or -1 */
  int64_t icap;
  sm_mem_account acct;
} tmap;

static void map_release(sm_variant *v) {
  tmap *m = (tmap *)v;
  for (int64_t i = 0; i < m->n; i++) {
    sm_tensor_free(m->keys[i]);
    sm_tensor_free(m->vals[i]);
  }
  free(m->keys);
  free(m->vals);
  free(m->hashes);
  free(m->index);
  sm__mem_close(&m->acct);
  free(m);
}

static sm_status *map_new(tmap **out) {
  tmap *m = calloc(1, sizeof *m);
  if (!m) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a TensorMap");
  sm__variant_init(&m->v, MAP_TYPE, map_release);
  *out = m;
  return NULL;
}

static void reindex(tmap *m) {
  for (int64_t i = 0; i < m->icap; i++) m->index[i] = -1;
  for (int64_t j = 0; j < m->n; j++) {
    uint64_t mask = (uint64_t)m->icap - 1;
    uint64_t i = m->hashes[j] & mask;
    while (m->index[i] >= 0) i = (i + 1) & mask;
    m->index[i] = j;
  }
}

/* The pair index of key k (hash h), or -1. */
static int64_t map_find(const tmap *m, const sm_tensor *k, uint64_t h) {
  if (!m->icap) return -1;
  uint64_t mask = (uint64_t)m->icap - 1;
  for (uint64_t i = h & mask; m->index[i] >= 0; i = (i + 1) & mask) {
    int64_t j = m->index[i];
    if (m->hashes[j] == h && key_eq(m->keys[j], k)) return j;
  }
  return -1;
}

static size_t pair_bytes(void) { return 2 * sizeof(sm_tensor *) + sizeof(uint64_t) + 2 * sizeof(int64_t); }

/* Room for one more pair (vectors and index). */
static sm_status *map_reserve(const sm_kctx *ctx, tmap *m) {
  if (m->n >= sm__seq_max_elements)
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "TensorMap: %lld elements are more than the limit of %lld",
                         (long long)m->n + 1, (long long)sm__seq_max_elements);
  if (m->n < m->cap) return NULL;
  int64_t nc = m->cap ? m->cap * 2 : 8;
  sm_status *s = sm__kctx_hold(ctx, &m->acct, (size_t)(nc - m->cap) * pair_bytes(), "a TensorMap's pairs");
  if (s) return s;
  sm_tensor **nk = realloc(m->keys, (size_t)nc * sizeof *nk);
  if (nk) m->keys = nk;
  sm_tensor **nv = nk ? realloc(m->vals, (size_t)nc * sizeof *nv) : NULL;
  if (nv) m->vals = nv;
  uint64_t *nh = nv ? realloc(m->hashes, (size_t)nc * sizeof *nh) : NULL;
  if (nh) m->hashes = nh;
  int64_t *ni = nh ? malloc((size_t)(2 * nc) * sizeof *ni) : NULL;
  if (!ni) {
    sm__mem_give(&m->acct, (size_t)(nc - m->cap) * pair_bytes());
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when growing a TensorMap to %lld pairs", (long long)nc);
  }
  free(m->index);
  m->index = ni;
  m->icap = 2 * nc;
  m->cap = nc;
  reindex(m);
  return NULL;
}

/* Sets k -> v (new references taken), replacing an existing value. */
static sm_status *map_put(const sm_kctx *ctx, tmap *m, const sm_tensor *k, const sm_tensor *v) {
  uint64_t h = key_hash(k);
  int64_t j = map_find(m, k, h);
  sm_status *s = sm__kctx_hold_tensor(ctx, &m->acct, v, "a TensorMap's values");
  if (s) return s;
  if (j >= 0) {
    sm__mem_give_tensor(&m->acct, m->vals[j]);
    sm_tensor_free(m->vals[j]);
    m->vals[j] = sm_tensor_ref((sm_tensor *)v);
    return NULL;
  }
  if ((s = sm__kctx_hold_tensor(ctx, &m->acct, k, "a TensorMap's keys"))) {
    sm__mem_give_tensor(&m->acct, v);
    return s;
  }
  if ((s = map_reserve(ctx, m))) {
    sm__mem_give_tensor(&m->acct, v);
    sm__mem_give_tensor(&m->acct, k);
    return s;
  }
  m->keys[m->n] = sm_tensor_ref((sm_tensor *)k);
  m->vals[m->n] = sm_tensor_ref((sm_tensor *)v);
  m->hashes[m->n] = h;
  uint64_t mask = (uint64_t)m->icap - 1, i = h & mask;
  while (m->index[i] >= 0) i = (i + 1) & mask;
  m->index[i] = m->n++;
  return NULL;
}

static void map_erase(tmap *m, int64_t j) {
  sm__mem_give_tensor(&m->acct, m->keys[j]);
  sm__mem_give_tensor(&m->acct, m->vals[j]);
  sm_tensor_free(m->keys[j]);
  sm_tensor_free(m->vals[j]);
  m->n--;
  m->keys[j] = m->keys[m->n];
  m->vals[j] = m->vals[m->n];
  m->hashes[j] = m->hashes[m->n];
  reindex(m);
}

static sm_status *map_clone(const sm_kctx *ctx, const tmap *src, tmap **out) {
  sm_status *s = map_new(out);
  for (int64_t i = 0; !s && i < src->n; i++) s = map_put(ctx, *out, src->keys[i], src->vals[i]);
  if (s && *out) {
    map_release(&(*out)->v);
    *out = NULL;
  }
  return s;
}

static sm_status *set_variant_output(sm_kctx *ctx, int i, sm_variant *v) {
  sm_tensor *t;
  sm_status *s = sm__kctx_alloc_output(ctx, i, SM_VARIANT, 0, NULL, &t);
  if (s) {
    sm__variant_unref(v);
    return s;
  }
  sm__tensor_variants(t)[0] = v;
  return NULL;
}

static sm_status *input_variant(sm_kctx *ctx, int i, const char *type, const char *what, sm_variant **out) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  sm_variant **vs = t && sm_tensor_dtype(t) == SM_VARIANT && sm_tensor_num_elements(t) == 1 ? sm__tensor_variants(t) : NULL;
  sm_variant *v = vs ? vs[0] : NULL;
  if (!v || strcmp(v->type_name, type))
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be a %s scalar, got %s", i, what,
                         v ? v->type_name : t ? dname(sm_tensor_dtype(t)) : "nothing");
  *out = v;
  return NULL;
}

/* The map of input 0 as output 0, writable (in place when nothing else holds it). */
static sm_status *writable_map(sm_kctx *ctx, tmap **w) {
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  if (!sm__variant_is_shared(v) && sm__kctx_reuse_input(ctx, 0, 0, SM_VARIANT, 0, NULL)) {
    *w = (tmap *)v;
    return NULL;
  }
  if ((s = map_clone(ctx, (const tmap *)v, w))) return s;
  return set_variant_output(ctx, 0, &(*w)->v);
}

/* ---- kernels ----------------------------------------------------------------------------------- */

typedef struct {
  int key_dtype, value_dtype;
} map_state;

static sm_status *map_prepare(const sm_node *node, void **state) {
  map_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->key_dtype = st->value_dtype = -1;
  sm_status *s = NULL;
  if (sm__node_attr(node, "key_dtype")) s = sm__node_attr_type(node, "key_dtype", &st->key_dtype);
  if (!s && sm__node_attr(node, "value_dtype")) s = sm__node_attr_type(node, "value_dtype", &st->value_dtype);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *empty_map_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tmap *m;
  sm_status *s = map_new(&m);
  return s ? s : set_variant_output(ctx, 0, &m->v);
}

static sm_status *map_insert_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  tmap *m;
  sm_status *s = writable_map(ctx, &m);
  return s ? s : map_put(ctx, m, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2));
}

static sm_status *map_lookup_compute(const void *state, sm_kctx *ctx) {
  const map_state *st = state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  const tmap *m = (const tmap *)v;
  const sm_tensor *k = sm__kctx_input(ctx, 1);
  int64_t j = map_find(m, k, key_hash(k));
  if (j < 0) {
    char kb[200];
    key_text(k, kb, sizeof kb);
    return sm_status_new(SM_INVALID_ARGUMENT, "Trying to lookup non-existent key. Could not find key \"%s\".", kb);
  }
  if (st->value_dtype >= 0 && sm_tensor_dtype(m->vals[j]) != st->value_dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorMapLookup: the value is %s, value_dtype is %s",
                         dname(sm_tensor_dtype(m->vals[j])), dname(st->value_dtype));
  sm__kctx_set_output(ctx, 0, sm_tensor_ref(m->vals[j]));
  return NULL;
}

static sm_status *map_erase_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  const sm_tensor *k = sm__kctx_input(ctx, 1);
  uint64_t h = key_hash(k);
  if (map_find((const tmap *)v, k, h) < 0) {
    char kb[200];
    key_text(k, kb, sizeof kb);
    return sm_status_new(SM_INVALID_ARGUMENT, "Trying to erase non-existent item. Could not find key \"%s\".", kb);
  }
  tmap *m;
  if ((s = writable_map(ctx, &m))) return s;
  map_erase(m, map_find(m, k, h));
  return NULL;
}

static sm_status *map_has_key_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  const sm_tensor *k = sm__kctx_input(ctx, 1);
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 0, NULL, &out))) return s;
  *(uint8_t *)sm_tensor_data(out) = map_find((const tmap *)v, k, key_hash(k)) >= 0;
  return NULL;
}

static sm_status *map_size_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out))) return s;
  *(int32_t *)sm_tensor_data(out) = (int32_t)((const tmap *)v)->n;
  return NULL;
}

static sm_status *map_stack_keys_compute(const void *state, sm_kctx *ctx) {
  const map_state *st = state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, MAP_TYPE, "TensorMap", &v);
  if (s) return s;
  const tmap *m = (const tmap *)v;
  if (!m->n) return sm_status_new(SM_INVALID_ARGUMENT, "TensorMapStackKeys cannot be called on empty map.");
  const sm_tensor *k0 = m->keys[0];
  int r = sm_tensor_rank(k0);
  if (r + 1 > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "TensorMapStackKeys: keys of rank %d", r);
  for (int64_t i = 0; i < m->n; i++) {
    const sm_tensor *k = m->keys[i];
    if (sm_tensor_dtype(k) != st->key_dtype) return sm_status_new(SM_INVALID_ARGUMENT, "Key does not match requested dtype.");
    if (sm_tensor_rank(k) != r || memcmp(sm_tensor_dims(k), sm_tensor_dims(k0), (size_t)r * sizeof(int64_t)))
      return sm_status_new(SM_INVALID_ARGUMENT, "Keys must have the same shape.");
  }
  int64_t d[SM_MAX_RANK] = {m->n};
  memcpy(d + 1, sm_tensor_dims(k0), (size_t)r * sizeof(int64_t));
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, st->key_dtype, r + 1, d, &out))) return s;
  int64_t per = sm_tensor_num_elements(k0);
  size_t es = sm_dtype_size(st->key_dtype);
  for (int64_t i = 0; i < m->n && !s; i++) {
    if (st->key_dtype == SM_STRING) {
      for (int64_t e = 0; e < per && !s; e++) {
        size_t len;
        const char *p = sm_tensor_string(m->keys[i], e, &len);
        s = sm_tensor_set_string(out, i * per + e, p ? p : "", p ? len : 0);
      }
    } else if (per) {
      memcpy((char *)sm_tensor_data(out) + (size_t)(i * per) * es, sm_tensor_data(m->keys[i]), (size_t)per * es);
    }
  }
  return s;
}

/* ---- Optional ----------------------------------------------------------------------------------- */

typedef struct topt {
  sm_variant v; /* first */
  int n;        /* -1: none */
  sm_tensor *c[];
} topt;

static void opt_release(sm_variant *v) {
  topt *o = (topt *)v;
  for (int i = 0; i < o->n; i++) sm_tensor_free(o->c[i]);
  free(o);
}

sm_status *sm__optional_new(sm_tensor *const *c, int n, sm_variant **out) {
  topt *o = calloc(1, sizeof *o + (size_t)(n > 0 ? n : 0) * sizeof(sm_tensor *));
  if (!o) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating an Optional");
  sm__variant_init(&o->v, OPT_TYPE, opt_release);
  for (int i = 0; i < n; i++) o->c[i] = sm_tensor_ref(c[i]);
  o->n = n < 0 ? -1 : n;
  *out = &o->v;
  return NULL;
}

static sm_status *opt_none_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = sm__optional_new(NULL, -1, &v);
  return s ? s : set_variant_output(ctx, 0, v);
}

static sm_status *opt_from_value_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int n = sm__kctx_num_inputs(ctx);
  sm_status *s = NULL;
  sm_tensor **c = n ? sm__kctx_scratch(ctx, (size_t)n * sizeof *c, &s) : NULL;
  if (s) return s;
  for (int i = 0; i < n; i++) c[i] = (sm_tensor *)sm__kctx_input(ctx, i);
  sm_variant *v;
  s = sm__optional_new(c, n, &v);
  return s ? s : set_variant_output(ctx, 0, v);
}

static sm_status *opt_has_value_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, OPT_TYPE, "Optional", &v);
  if (s) return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 0, NULL, &out))) return s;
  *(uint8_t *)sm_tensor_data(out) = ((const topt *)v)->n >= 0;
  return NULL;
}

static sm_status *opt_get_value_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant *v;
  sm_status *s = input_variant(ctx, 0, OPT_TYPE, "Optional", &v);
  if (s) return s;
  const topt *o = (const topt *)v;
  if (o->n < 0) return sm_status_new(SM_INVALID_ARGUMENT, "The given optional does not have a value.");
  int nout = sm__kctx_num_outputs(ctx);
  if (o->n != nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "The given optional has %d components, but the op expects %d", o->n, nout);
  for (int i = 0; i < nout; i++) sm__kctx_set_output(ctx, i, sm_tensor_ref(o->c[i]));
  return NULL;
}

const sm_kernel sm_kernels_tensor_map[] = {
    {"EmptyTensorMap", NULL, empty_map_compute, NULL, 0},
    {"TensorMapInsert", NULL, map_insert_compute, NULL, 0},
    {"TensorMapLookup", map_prepare, map_lookup_compute, free, 0},
    {"TensorMapErase", NULL, map_erase_compute, NULL, 0},
    {"TensorMapHasKey", NULL, map_has_key_compute, NULL, 0},
    {"TensorMapSize", NULL, map_size_compute, NULL, 0},
    {"TensorMapStackKeys", map_prepare, map_stack_keys_compute, free, 0},
    {"OptionalNone", NULL, opt_none_compute, NULL, 0},
    {"OptionalFromValue", NULL, opt_from_value_compute, NULL, 0},
    {"OptionalHasValue", NULL, opt_has_value_compute, NULL, 0},
    {"OptionalGetValue", NULL, opt_get_value_compute, NULL, 0},
    {0},
};
