/* json_dom.h - the JSON DOM the serve layer's codec reads requests into (json_dom.c builds it,
 * json_tensor.c walks it): values in an arena, with the small accessors the decoders use. Private
 * to src/serve. */
#ifndef SM_SERVE_JSON_DOM_H
#define SM_SERVE_JSON_DOM_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>


typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk;

typedef struct arena {
  chunk *head;
  int oom;
} arena;

/* n bytes (16-aligned) that live until the arena is freed; NULL (and a->oom set) on failure. */
void *sm__json_arena_alloc(arena *a, size_t n);
void sm__json_arena_free(arena *a);

enum { J_NULL, J_FALSE, J_TRUE, J_OBJ, J_ARR, J_STR, J_NUM };
enum { N_INT, N_UINT, N_DBL }; /* N_INT: fits int64; N_UINT: > INT64_MAX; N_DBL: not an integer */

typedef struct jv {
  uint8_t type, nk;
  uint32_t n;       /* array elements, object members, string bytes */
  union {
    struct jv **items; /* arrays: n values; objects: 2n (key, value) */
    const char *s;
  } u;
  double d;
  int64_t i;
  uint64_t ui;
} jv;

static inline const char *jtype_name(const jv *v) {
  switch (v->type) {
    case J_NULL: return "Null";
    case J_FALSE: return "False";
    case J_TRUE: return "True";
    case J_OBJ: return "Object";
    case J_ARR: return "Array";
    case J_STR: return "String";
    default: return "Number";
  }
}

static inline const jv *jobj_find(const jv *o, const char *key) {
  size_t kl = strlen(key);
  for (uint32_t i = 0; i < o->n; i++) {
    const jv *k = o->u.items[2 * i];
    if (k->n == kl && !memcmp(k->u.s, key, kl)) return o->u.items[2 * i + 1];
  }
  return NULL;
}

static inline int j_is_int(const jv *v) { return v->type == J_NUM && v->nk == N_INT && v->i >= INT32_MIN && v->i <= INT32_MAX; }
static inline int j_is_int64(const jv *v) { return v->type == J_NUM && v->nk == N_INT; }
static inline int j_is_uint(const jv *v) { return v->type == J_NUM && v->nk == N_INT && v->i >= 0 && v->i <= UINT32_MAX; }
static inline int j_is_uint64(const jv *v) { return v->type == J_NUM && (v->nk == N_UINT || (v->nk == N_INT && v->i >= 0)); }
static inline double j_double(const jv *v) {
  return v->nk == N_DBL ? v->d : v->nk == N_UINT ? (double)v->ui : (double)v->i;
}


/* Reads one JSON document of body[0, len) into the arena, with rapidjson's rules (NaN and
 * Infinity accepted, any nesting depth: the reader keeps its own stack, what follows the top-level
 * value ignored). NULL on a syntax error (*err = rapidjson's message, *err_off its offset) or when
 * the arena ran out (a->oom, *err NULL). */
jv *sm__json_read(const char *body, size_t len, arena *a, const char **err, size_t *err_off);

#endif
