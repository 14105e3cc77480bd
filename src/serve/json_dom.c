/* json_dom.c - the JSON reader of the serve layer's codec: rapidjson's behaviour and messages as
 * TF Serving configures it, into the arena DOM of json_dom.h. It builds the DOM with an explicit
 * stack, so hostile nesting costs memory proportional to the body (which the server bounds) and
 * never C stack. */
#include "serve/json_dom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void *sm__json_arena_alloc(arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!a->head || a->head->cap - a->head->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    chunk *c = malloc(sizeof *c + cap);
    if (!c) {
      a->oom = 1;
      return NULL;
    }
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = a->head->data + a->head->used;
  a->head->used += n;
  return p;
}

void sm__json_arena_free(arena *a) {
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  a->head = NULL;
}

/* ======================================================================== the reader ==== */

typedef struct reader {
  const char *p, *end, *start;
  arena *a;
  const char *err; /* rapidjson's message */
  size_t err_off;
  /* child pointers of the containers being built */
  jv **kids;
  size_t nkids, capkids;
} reader;

static int fail(reader *r, const char *msg, const char *at) {
  if (!r->err) {
    r->err = msg;
    r->err_off = (size_t)(at - r->start);
  }
  return 0;
}

static void skip_ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t')) r->p++;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_hex4(reader *r, unsigned *out) {
  if (r->end - r->p < 4) return fail(r, "Incorrect hex digit after \\u escape in string.", r->p);
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval((unsigned char)r->p[i]);
    if (h < 0) return fail(r, "Incorrect hex digit after \\u escape in string.", r->p);
    v = v * 16 + (unsigned)h;
  }
  r->p += 4;
  *out = v;
  return 1;
}

/* At the opening quote. The decoded bytes are never longer than the escaped text. */
static jv *read_string(reader *r) {
  const char *q = r->p + 1;
  /* find the closing quote to size the buffer */
  const char *e = q;
  while (e < r->end && *e != '"') e += (*e == '\\' && e + 1 < r->end) ? 2 : 1;
  if (e >= r->end) {
    fail(r, "Missing a closing quotation mark in string.", r->end);
    return NULL;
  }
  jv *v = sm__json_arena_alloc(r->a, sizeof *v);
  char *out = sm__json_arena_alloc(r->a, (size_t)(e - q) + 1);
  if (!v || !out) {
    fail(r, "Out of memory.", r->p);
    return NULL;
  }
  size_t n = 0;
  r->p = q;
  for (;;) {
    unsigned char c = (unsigned char)*r->p;
    if (c == '"') {
      r->p++;
      break;
    }
    if (c == '\\') {
      const char *esc = r->p;
      r->p++;
      char x = *r->p++;
      switch (x) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
          unsigned cp;
          if (!read_hex4(r, &cp)) return NULL;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
              return fail(r, "The surrogate pair in string is invalid.", r->p), NULL;
            r->p += 2;
            if (!read_hex4(r, &lo)) return NULL;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail(r, "The surrogate pair in string is invalid.", r->p), NULL;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail(r, "The surrogate pair in string is invalid.", r->p), NULL;
          }
          /* at most 4 bytes out for at least 6 bytes in */
          if (cp < 0x80) {
            out[n++] = (char)cp;
          } else if (cp < 0x800) {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            out[n++] = (char)(0xE0 | (cp >> 12));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
          } else {
            out[n++] = (char)(0xF0 | (cp >> 18));
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          return fail(r, "Invalid escape character in string.", esc), NULL;
      }
      continue;
    }
    if (c < 0x20) return fail(r, "Invalid encoding in string.", r->p), NULL;
    out[n++] = (char)c;
    r->p++;
  }
  out[n] = 0;
  v->type = J_STR;
  v->n = (uint32_t)n;
  v->u.s = out;
  if (n > UINT32_MAX - 1) return fail(r, "Number too big to be stored in double.", q), NULL;
  return v;
}

static int match(reader *r, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n)) return 0;
  r->p += n;
  return 1;
}

static jv *read_number(reader *r) {
  const char *s = r->p;
  jv *v = sm__json_arena_alloc(r->a, sizeof *v);
  if (!v) return fail(r, "Out of memory.", s), NULL;
  memset(v, 0, sizeof *v);
  v->type = J_NUM;
  int neg = 0;
  if (r->p < r->end && *r->p == '-') {
    neg = 1;
    r->p++;
  }
  if (r->p < r->end && *r->p == 'N') {
    if (!match(r, "NaN")) return fail(r, "Invalid value.", s), NULL;
    v->nk = N_DBL;
    v->d = neg ? -NAN : NAN;
    return v;
  }
  if (r->p < r->end && *r->p == 'I') {
    if (!match(r, "Inf")) return fail(r, "Invalid value.", s), NULL;
    if (r->p < r->end && *r->p == 'i' && !match(r, "inity")) return fail(r, "Invalid value.", s), NULL;
    v->nk = N_DBL;
    v->d = neg ? -INFINITY : INFINITY;
    return v;
  }
  if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Invalid value.", s), NULL;
  uint64_t u = 0;
  int overflow = 0;
  if (*r->p == '0') {
    r->p++;
  } else {
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      unsigned dgt = (unsigned)(*r->p - '0');
      if (u > (UINT64_MAX - dgt) / 10) overflow = 1;
      else u = u * 10 + dgt;
      r->p++;
    }
  }
  int is_double = overflow;
  if (r->p < r->end && *r->p == '.') {
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Miss fraction part in number.", r->p), NULL;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    is_double = 1;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Miss exponent in number.", r->p), NULL;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    is_double = 1;
  }
  if (!is_double && neg && u > (uint64_t)INT64_MAX + 1) is_double = 1;
  if (is_double) {
    char tmp[128];
    size_t n = (size_t)(r->p - s);
    char *buf = n < sizeof tmp ? tmp : malloc(n + 1);
    if (!buf) return fail(r, "Out of memory.", s), NULL;
    memcpy(buf, s, n);
    buf[n] = 0;
    v->d = strtod(buf, NULL);
    if (buf != tmp) free(buf);
    if (isinf(v->d)) return fail(r, "Number too big to be stored in double.", s), NULL;
    v->nk = N_DBL;
    return v;
  }
  if (neg) {
    v->nk = N_INT;
    v->i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
  } else if (u > (uint64_t)INT64_MAX) {
    v->nk = N_UINT;
    v->ui = u;
  } else {
    v->nk = N_INT;
    v->i = (int64_t)u;
  }
  return v;
}

typedef struct frame {
  jv *node;
  size_t kid0;
} frame;

static int push_kid(reader *r, jv *v) {
  if (r->nkids == r->capkids) {
    size_t cap = r->capkids ? r->capkids * 2 : 256;
    jv **k = realloc(r->kids, cap * sizeof *k);
    if (!k) return fail(r, "Out of memory.", r->p);
    r->kids = k;
    r->capkids = cap;
  }
  r->kids[r->nkids++] = v;
  return 1;
}

/* An object member's name and its colon, rapidjson's messages on failure; 0 when it failed. */
static int read_member_name(reader *r) {
  if (r->p >= r->end || *r->p != '"') return fail(r, "Missing a name for object member.", r->p);
  jv *k = read_string(r);
  if (!k || !push_kid(r, k)) return 0;
  skip_ws(r);
  if (r->p >= r->end || *r->p != ':') return fail(r, "Missing a colon after a name of object member.", r->p);
  r->p++;
  return 1;
}


/* Closes the container on top of the stack: its kids move into the arena. */
static jv *close_frame(reader *r, frame *f) {
  size_t n = r->nkids - f->kid0;
  jv *v = f->node;
  v->u.items = sm__json_arena_alloc(r->a, (n ? n : 1) * sizeof(jv *));
  if (!v->u.items) return fail(r, "Out of memory.", r->p), NULL;
  if (n) memcpy(v->u.items, r->kids + f->kid0, n * sizeof(jv *));
  v->n = (uint32_t)(v->type == J_OBJ ? n / 2 : n);
  r->nkids = f->kid0;
  return v;
}

/* Reads one JSON value (iteratively); the root when the stack empties. */
static jv *read_document(reader *r) {
  frame *st = NULL;
  size_t nst = 0, capst = 0;
  jv *root = NULL;
  skip_ws(r);
  if (r->p >= r->end) {
    fail(r, "The document is empty.", r->p);
    goto out;
  }
  for (;;) {
    /* ---- parse a value (or open a container) ---- */
    skip_ws(r);
    jv *v = NULL;
    if (r->p >= r->end) {
      fail(r, "Invalid value.", r->p);
      goto out;
    }
    char c = *r->p;
    if (c == '{' || c == '[') {
      if (nst == capst) {
        size_t cap = capst ? capst * 2 : 64;
        frame *ns = realloc(st, cap * sizeof *ns);
        if (!ns) {
          fail(r, "Out of memory.", r->p);
          goto out;
        }
        st = ns;
        capst = cap;
      }
      jv *node = sm__json_arena_alloc(r->a, sizeof *node);
      if (!node) {
        fail(r, "Out of memory.", r->p);
        goto out;
      }
      memset(node, 0, sizeof *node);
      node->type = c == '{' ? J_OBJ : J_ARR;
      st[nst].node = node;
      st[nst].kid0 = r->nkids;
      nst++;
      r->p++;
      skip_ws(r);
      if (r->p < r->end && *r->p == (c == '{' ? '}' : ']')) {
        r->p++;
        v = close_frame(r, &st[--nst]);
        if (!v) goto out;
      } else if (c == '{') {
        if (!read_member_name(r)) goto out;
        continue;
      } else {
        continue;
      }
    } else if (c == '"') {
      v = read_string(r);
    } else if (c == 'n') {
      if (match(r, "null")) {
        v = sm__json_arena_alloc(r->a, sizeof *v);
        if (v) memset(v, 0, sizeof *v), v->type = J_NULL;
      } else {
        fail(r, "Invalid value.", r->p);
      }
    } else if (c == 't' || c == 'f') {
      if (match(r, c == 't' ? "true" : "false")) {
        v = sm__json_arena_alloc(r->a, sizeof *v);
        if (v) memset(v, 0, sizeof *v), v->type = c == 't' ? J_TRUE : J_FALSE;
      } else {
        fail(r, "Invalid value.", r->p);
      }
    } else if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') {
      v = read_number(r);
    } else {
      fail(r, "Invalid value.", r->p);
    }
    if (!v) {
      fail(r, "Out of memory.", r->p);
      goto out;
    }
    /* ---- a value is complete: attach it, close containers that end here ---- */
    for (;;) {
      if (nst == 0) {
        root = v;
        goto out;
      }
      if (!push_kid(r, v)) goto out;
      frame *f = &st[nst - 1];
      skip_ws(r);
      if (f->node->type == J_ARR) {
        if (r->p < r->end && *r->p == ',') {
          r->p++;
          break;
        }
        if (r->p < r->end && *r->p == ']') {
          r->p++;
          v = close_frame(r, &st[--nst]);
          if (!v) goto out;
          continue;
        }
        fail(r, "Missing a comma or ']' after an array element.", r->p);
        goto out;
      }
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        skip_ws(r);
        if (!read_member_name(r)) goto out;
        break;
      }
      if (r->p < r->end && *r->p == '}') {
        r->p++;
        v = close_frame(r, &st[--nst]);
        if (!v) goto out;
        continue;
      }
      fail(r, "Missing a comma or '}' after an object member.", r->p);
      goto out;
    }
  }
out:
  free(st);
  free(r->kids);
  r->kids = NULL;
  r->nkids = r->capkids = 0;
  return r->err ? NULL : root;
}

jv *sm__json_read(const char *body, size_t len, arena *a, const char **err, size_t *err_off) {
  reader r = {.p = body, .end = body + len, .start = body, .a = a};
  jv *d = read_document(&r);
  *err = r.err;
  *err_off = r.err_off;
  return d;
}
