/* json.c - the small JSON reader of json.h: recursive descent over the text into a tree of nodes
 * allocated through base/alloc.h (fault injection reaches every node). One error path: the first
 * failure records a message with its offset and every caller above returns. */
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define JSON_MAX_DEPTH 128

typedef struct reader {
  const char *p, *end, *start, *what;
  sm_status *err;
} reader;

static void *fail(reader *r, int code, const char *msg) {
  if (!r->err) r->err = sm_status_new(code, "%s: %s at byte %zu", r->what, msg, (size_t)(r->p - r->start));
  return NULL;
}
static void *oom(reader *r) { return fail(r, SM_RESOURCE_EXHAUSTED, "out of memory"); }

static void skip_ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) return (size_t)(o[0] = (char)cp, 1);
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* At the opening quote; the unescaped string (escapes never lengthen it: \uXXXX is 6 bytes for
 * at most 4, a surrogate pair 12 for 4). */
static char *read_string(reader *r) {
  const char *q = ++r->p;
  while (q < r->end && *q != '"') q += *q == '\\' ? 2 : 1;
  if (q >= r->end) return fail(r, SM_INVALID_ARGUMENT, "unterminated string");
  char *s = sm__alloc((size_t)(q - r->p) + 1), *o = s;
  if (!s) return oom(r);
  while (*r->p != '"') {
    unsigned char c = (unsigned char)*r->p;
    if (c < 0x20) {
      sm__free(s);
      return fail(r, SM_INVALID_ARGUMENT, "control character in a string");
    }
    if (c != '\\') {
      *o++ = (char)c, r->p++;
      continue;
    }
    char e = r->p[1];
    r->p += 2;
    const char *simple = strchr("\"\\/bfnrt", e), *to = "\"\\/\b\f\n\r\t";
    if (e && simple) {
      *o++ = to[simple - "\"\\/bfnrt"];
      continue;
    }
    unsigned cp, lo;
    if (e != 'u' || r->end - r->p < 4 || !hex4(r->p, &cp)) {
      sm__free(s);
      return fail(r, SM_INVALID_ARGUMENT, "bad escape in a string");
    }
    r->p += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' &&
        hex4(r->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      r->p += 6;
    }
    if (cp == 0 || (cp >= 0xD800 && cp < 0xE000)) {
      sm__free(s);
      return fail(r, SM_INVALID_ARGUMENT, "NUL or unpaired surrogate in a string");
    }
    o += put_utf8(o, cp);
  }
  r->p++;
  *o = 0;
  return s;
}

static sm__json *read_value(reader *r, int depth);

/* Appends v (and key) to container c; frees both on failure. */
static int push(reader *r, sm__json *c, char *key, sm__json *v) {
  if ((c->n & (c->n - 1)) == 0) { /* grow at powers of two */
    size_t cap = c->n ? c->n * 2 : 1;
    sm__json **ni = sm__realloc(c->items, cap * sizeof *ni);
    if (ni) c->items = ni;
    char **nk = ni && c->type == SM_JSON_OBJ ? sm__realloc(c->keys, cap * sizeof *nk) : NULL;
    if (nk) c->keys = nk;
    if (!ni || (c->type == SM_JSON_OBJ && !nk)) {
      sm__free(key);
      sm__json_free(v);
      oom(r);
      return 0;
    }
  }
  if (c->type == SM_JSON_OBJ) c->keys[c->n] = key;
  c->items[c->n++] = v;
  return 1;
}

static sm__json *read_container(reader *r, sm__json *c, int depth) {
  char close = c->type == SM_JSON_OBJ ? '}' : ']';
  r->p++;
  skip_ws(r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    return c;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(r);
    if (c->type == SM_JSON_OBJ) {
      if (r->p >= r->end || *r->p != '"') return fail(r, SM_INVALID_ARGUMENT, "expected a member name");
      if (!(key = read_string(r))) return NULL;
      skip_ws(r);
      if (r->p >= r->end || *r->p != ':') {
        sm__free(key);
        return fail(r, SM_INVALID_ARGUMENT, "expected ':'");
      }
      r->p++;
    }
    sm__json *v = read_value(r, depth + 1);
    if (!v) {
      sm__free(key);
      return NULL;
    }
    if (!push(r, c, key, v)) return NULL;
    skip_ws(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return c;
    }
    return fail(r, SM_INVALID_ARGUMENT, c->type == SM_JSON_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int word(reader *r, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n)) return 0;
  r->p += n;
  return 1;
}

static sm__json *read_value(reader *r, int depth) {
  if (depth > JSON_MAX_DEPTH) return fail(r, SM_INVALID_ARGUMENT, "nested too deeply");
  skip_ws(r);
  if (r->p >= r->end) return fail(r, SM_INVALID_ARGUMENT, "unexpected end of input");
  sm__json *v = sm__calloc(sizeof *v);
  if (!v) return oom(r);
  char c = *r->p;
  sm__json *ok = v;
  if (c == '{' || c == '[') {
    v->type = c == '{' ? SM_JSON_OBJ : SM_JSON_ARR;
    ok = read_container(r, v, depth);
  } else if (c == '"') {
    v->type = SM_JSON_STR;
    if (!(v->str = read_string(r))) ok = NULL;
  } else if (word(r, "true") || word(r, "false")) {
    v->type = SM_JSON_BOOL;
    v->b = r->p[-1] == 'e' && r->p[-2] == 'u';
  } else if (word(r, "null")) {
    v->type = SM_JSON_NULL;
  } else if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') {
    /* Python's json writes NaN / Infinity / -Infinity; accept them as it reads them */
    v->type = SM_JSON_NUM;
    if (word(r, "NaN")) {
      v->num = (double)NAN;
    } else if (word(r, "Infinity")) {
      v->num = (double)INFINITY;
    } else if (word(r, "-Infinity")) {
      v->num = -(double)INFINITY;
    } else if (c == 'N' || c == 'I') {
      ok = fail(r, SM_INVALID_ARGUMENT, "unexpected character");
    } else {
      char buf[64];
      size_t k = 0;
      while (r->p + k < r->end && k < sizeof buf - 1 && strchr("+-.eE0123456789", r->p[k])) k++;
      memcpy(buf, r->p, k);
      buf[k] = 0;
      char *e;
      v->num = strtod(buf, &e);
      if (k == 0 || e != buf + k) ok = fail(r, SM_INVALID_ARGUMENT, "bad number");
      r->p += k;
    }
  } else {
    ok = fail(r, SM_INVALID_ARGUMENT, "unexpected character");
  }
  if (!ok) sm__json_free(v);
  return ok;
}

sm_status *sm__json_parse(const char *text, size_t len, const char *what, sm__json **out) {
  reader r = {text, text + len, text, what ? what : "JSON", NULL};
  *out = NULL;
  sm__json *v = read_value(&r, 0);
  skip_ws(&r);
  if (v && r.p != r.end) fail(&r, SM_INVALID_ARGUMENT, "text after the value");
  if (r.err) {
    sm__json_free(v);
    return r.err;
  }
  *out = v;
  return NULL;
}

void sm__json_free(sm__json *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) {
    sm__json_free(v->items[i]);
    if (v->keys) sm__free(v->keys[i]);
  }
  sm__free(v->items);
  sm__free(v->keys);
  sm__free(v->str);
  sm__free(v);
}

const sm__json *sm__json_get(const sm__json *o, const char *key) {
  if (!o || o->type != SM_JSON_OBJ) return NULL;
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return o->items[i];
  return NULL;
}

const char *sm__json_type_name(const sm__json *v) {
  static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
  return v ? names[v->type] : "missing";
}
