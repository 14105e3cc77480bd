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
  int busy;        /* sm__json_read: the process-wide DOM budget is taken by other requests */
  size_t reserved; /* of that budget, released when the arena is freed */
} arena;

/* n bytes (16-aligned) that live until the arena is freed; NULL (and a->oom set) on failure. */
void *sm__json_arena_alloc(arena *a, size_t n);
void sm__json_arena_free(arena *a);

enum { J_NULL, J_FALSE, J_TRUE, J_OBJ, J_ARR, J_STR, J_NUM };
enum { N_INT, N_UINT, N_DBL }; /* N_INT: fits int64; N_UINT: > INT64_MAX; N_DBL: not an integer */

/* One value in 16 bytes. Arrays and objects hold their children inline: an object's n members are
 * 2n values (key, value); an array whose elements are all numbers is "packed": n 8-byte payloads
 * followed by n kind bytes (read it with jarr_at). Empty containers and strings allocate nothing. */
typedef struct jv {
  uint8_t type, nk; /* nk: N_* for a number */
  uint8_t packed;   /* arrays: elements stored packed */
  uint32_t n;       /* array elements, object members, string bytes */
  union {
    struct jv *items;
    const char *s;
    unsigned char *raw; /* packed arrays */
    double d;
    int64_t i;
    uint64_t ui;
  };
} jv;

/* Element i of array a; a packed element is unpacked into *tmp (the result lives as long as it). */
static inline const jv *jarr_at(const jv *a, uint32_t i, jv *tmp) {
  if (!a->packed) return &a->items[i];
  memset(tmp, 0, sizeof *tmp);
  tmp->type = J_NUM;
  tmp->nk = a->raw[(size_t)a->n * 8 + i];
  memcpy(&tmp->ui, a->raw + (size_t)i * 8, 8);
  return tmp;
}
static inline const jv *jobj_key(const jv *o, uint32_t k) { return &o->items[2 * (size_t)k]; }
static inline const jv *jobj_val(const jv *o, uint32_t k) { return &o->items[2 * (size_t)k + 1]; }

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
    const jv *k = jobj_key(o, i);
    if (k->n == kl && !memcmp(k->s, key, kl)) return jobj_val(o, i);
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


/* The process-wide budget for the DOMs of all requests being read at once (default
 * SM_JSON_DOM_BUDGET). A DOM that would pass it is not built (a->busy), unless no other is held. */
void sm__json_set_dom_budget(size_t bytes);
/* The double nearest the JSON number text s[0..n) (neg: it starts with '-'). When `exact`, m holds
 * all its significant digits (m < 10^18) and the value is m * 10^e: one correctly rounded IEEE
 * operation when m <= 2^53 and |e| <= 22 (Clinger's fast path); else, for |e| <= 27, one long
 * double operation whose nearest double is taken unless it lies within 2^-62 of a midpoint; else
 * strtod. The result is always strtod's. Returns 0 when out of memory. */
int sm__json_decimal(const char *s, size_t n, uint64_t m, long e, int exact, int neg, double *out);

/* Bytes of DOM a body may cost: SM_JSON_DOM_FACTOR x its size + SM_JSON_DOM_FLOOR (src/serve/limits.h). */
size_t sm__json_dom_limit(size_t body_len);

/* Reads one JSON document of body[0, len) into the arena, with rapidjson's rules as TF Serving
 * sets them (NaN and Infinity accepted, any nesting depth: the reader keeps its own stack; anything
 * but whitespace after the value is an error). Two passes: the first checks the syntax and sizes
 * the DOM, the second builds it in one block, so a body costs at most sm__json_dom_limit(len)
 * bytes (a packed number 9 bytes, any other value 16) or is refused before the DOM is built.
 * *need is what the DOM and the reader's stack take, once the first pass has read the body (when
 * it stopped early at the limit, the bytes it had reached). NULL on a syntax error (*err =
 * rapidjson's message, *err_off its offset), when that is more than `max_bytes` (*err NULL; the
 * DOM was never allocated), when the budget is taken (a->busy, *err NULL), or when memory ran out
 * (a->oom, *err NULL). */
jv *sm__json_read(const char *body, size_t len, arena *a, size_t max_bytes, const char **err, size_t *err_off,
                  size_t *need);

#endif
