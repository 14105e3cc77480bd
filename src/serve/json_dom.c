/* json_dom.c - the JSON reader of the serve layer's codec: rapidjson's behaviour and messages as
 * TF Serving configures it, into the arena DOM of json_dom.h. Two passes over the body with an
 * explicit stack (hostile nesting never costs C stack): the first checks the syntax and counts
 * each container's children, the second builds the DOM into one block of exactly the size the
 * first computed, so memory is known, and refused past its limit, before any of it is taken. */
#include "serve/json_dom.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "serve/limits.h"

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

static atomic_size_t dom_reserved;
static atomic_size_t dom_budget = SM_JSON_DOM_BUDGET;

void sm__json_set_dom_budget(size_t bytes) { atomic_store(&dom_budget, bytes); }

/* Takes n bytes of the budget for a; 0 when others hold too much of it. */
static int reserve(arena *a, size_t n) {
  size_t before = atomic_fetch_add(&dom_reserved, n);
  if (before && before + n > atomic_load(&dom_budget)) {
    atomic_fetch_sub(&dom_reserved, n);
    a->busy = 1;
    return 0;
  }
  a->reserved += n;
  return 1;
}

void sm__json_arena_free(arena *a) {
  if (a->reserved) atomic_fetch_sub(&dom_reserved, a->reserved);
  a->reserved = 0;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  a->head = NULL;
}

/* ======================================================================== the reader ==== */

#define PACKED 0x80000000u /* in a count: an array of numbers only */

typedef struct frame { /* 16 bytes: hostile nesting costs one per level */
  union {
    jv *node;     /* pass 2: the container being filled */
    size_t cnt_i; /* pass 1: its slot in counts */
  };
  uint32_t idx; /* children so far */
  uint8_t type, nums;
} frame;

typedef struct reader {
  const char *p, *end, *start;
  arena *a;
  const char *err; /* rapidjson's message */
  size_t err_off;
  int build;       /* 0: pass 1 (check and size), 1: pass 2 (build) */
  size_t limit;    /* pass 1 gives up when its own bookkeeping passes this */
  /* pass 1's results: per non-empty container in opening order, its children (| PACKED) */
  uint32_t *counts;
  size_t ncounts, capcounts;
  size_t node_bytes, str_bytes, max_depth;
  int over;        /* pass 1 stopped at the limit */
  /* pass 2 */
  size_t ci;
  unsigned char *nodes, *strs; /* bump pointers into the one block */
} reader;

static int fail(reader *r, const char *msg, const char *at) {
  if (!r->err) {
    r->err = msg;
    r->err_off = (size_t)(at - r->start);
  }
  return 0;
}

static int oom(reader *r) {
  r->a->oom = 1;
  return fail(r, "Out of memory.", r->p);
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

static void *take_nodes(reader *r, size_t n) {
  void *p = r->nodes;
  r->nodes += (n + 15) & ~(size_t)15;
  return p;
}

/* At the opening quote. Pass 1 checks and sizes it; pass 2 decodes it into `v` (the decoded bytes
 * are never longer than the escaped text). */
static int read_string(reader *r, jv *v) {
  const char *q = r->p + 1;
  const char *e = q;
  while (e < r->end && *e != '"') e += (*e == '\\' && e + 1 < r->end) ? 2 : 1;
  if (e >= r->end) return fail(r, "Missing a closing quotation mark in string.", r->end);
  char *out = r->build && e > q ? (char *)r->strs : NULL;
#define PUT(c) (out ? (void)(out[n] = (char)(c)) : (void)0, n++)
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
        case '"': PUT('"'); break;
        case '\\': PUT('\\'); break;
        case '/': PUT('/'); break;
        case 'b': PUT('\b'); break;
        case 'f': PUT('\f'); break;
        case 'n': PUT('\n'); break;
        case 'r': PUT('\r'); break;
        case 't': PUT('\t'); break;
        case 'u': {
          unsigned cp;
          if (!read_hex4(r, &cp)) return 0;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
              return fail(r, "The surrogate pair in string is invalid.", r->p);
            r->p += 2;
            if (!read_hex4(r, &lo)) return 0;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail(r, "The surrogate pair in string is invalid.", r->p);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail(r, "The surrogate pair in string is invalid.", r->p);
          }
          /* at most 4 bytes out for at least 6 bytes in */
          if (cp < 0x80) {
            PUT(cp);
          } else if (cp < 0x800) {
            PUT(0xC0 | (cp >> 6));
            PUT(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            PUT(0xE0 | (cp >> 12));
            PUT(0x80 | ((cp >> 6) & 0x3F));
            PUT(0x80 | (cp & 0x3F));
          } else {
            PUT(0xF0 | (cp >> 18));
            PUT(0x80 | ((cp >> 12) & 0x3F));
            PUT(0x80 | ((cp >> 6) & 0x3F));
            PUT(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          return fail(r, "Invalid escape character in string.", esc);
      }
      continue;
    }
    if (c < 0x20) return fail(r, "Invalid encoding in string.", r->p);
    PUT(c);
    r->p++;
  }
#undef PUT
  if (n > UINT32_MAX - 1) return fail(r, "Number too big to be stored in double.", q);
  if (!r->build) {
    if (n) r->str_bytes += n + 1;
    return 1;
  }
  if (out) {
    out[n] = 0;
    r->strs += n + 1;
  }
  memset(v, 0, sizeof *v);
  v->type = J_STR;
  v->n = (uint32_t)n;
  v->s = out ? out : "";
  return 1;
}

static int match(reader *r, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n)) return 0;
  r->p += n;
  return 1;
}

int sm__json_decimal(const char *s, size_t n, uint64_t m, long e, int exact, int neg, double *out) {
  static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (exact && m <= ((uint64_t)1 << 53) && e >= -22 && e <= 22) {
    double d = (double)m;
    d = e < 0 ? d / p10[-e] : d * p10[e];
    *out = neg ? -d : d;
    return 1;
  }
#if LDBL_MANT_DIG >= 64
  /* long double must really carry 64 bits here: an emulator may run x87 code in double precision
   * (valgrind does), and then this path is left to strtod */
  static atomic_int ld_ok; /* 0: not known yet, 1: yes, 2: no */
  int ok = atomic_load_explicit(&ld_ok, memory_order_relaxed);
  if (!ok) {
    volatile long double one = 1.0L, tiny = 0x1p-63L;
    ok = one + tiny != one ? 1 : 2;
    atomic_store_explicit(&ld_ok, ok, memory_order_relaxed);
  }
  /* Up to 18 digits (17-digit doubles as clients print them) with 10^|e| <= 10^27, exact in a
   * 64-bit significand: one long double operation is within 2^-64 of the value, so its nearest
   * double is strtod's unless the value lies that close to a midpoint between two doubles. */
  static const long double p10l[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                     1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                     1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
  if (ok == 1 && exact && m > 0 && e >= -27 && e <= 27) {
    long double x = e < 0 ? (long double)m / p10l[-e] : (long double)m * p10l[e];
    double d = (double)x;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    double up, down;
    uint64_t ub = bits + 1, db = bits - 1; /* d is positive, normal and finite here */
    memcpy(&up, &ub, sizeof up);
    memcpy(&down, &db, sizeof down);
    long double hi = ((long double)d + up) / 2, lo = ((long double)d + down) / 2, eps = x * 0x1p-62L;
    if (fabsl(x - hi) > eps && fabsl(x - lo) > eps) {
      *out = neg ? -d : d;
      return 1;
    }
  }
#endif
  char buf[128];
  char *b = n < sizeof buf ? buf : malloc(n + 1);
  if (!b) return 0;
  memcpy(b, s, n);
  b[n] = 0;
  *out = strtod(b, NULL);
  if (b != buf) free(b);
  return 1;
}

/* Pass 1 checks it (strtod only when the digits say it may overflow); pass 2 converts it. */
static int read_number(reader *r, jv *v) {
  const char *s = r->p;
  jv tmp;
  if (!v) v = &tmp;
  memset(v, 0, sizeof *v);
  v->type = J_NUM;
  int neg = 0;
  if (r->p < r->end && *r->p == '-') {
    neg = 1;
    r->p++;
  }
  if (r->p < r->end && *r->p == 'N') {
    if (!match(r, "NaN")) return fail(r, "Invalid value.", s);
    v->nk = N_DBL;
    v->d = neg ? -NAN : NAN;
    return 1;
  }
  if (r->p < r->end && *r->p == 'I') {
    if (!match(r, "Inf")) return fail(r, "Invalid value.", s);
    if (r->p < r->end && *r->p == 'i' && !match(r, "inity")) return fail(r, "Invalid value.", s);
    v->nk = N_DBL;
    v->d = neg ? -INFINITY : INFINITY;
    return 1;
  }
  if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Invalid value.", s);
  uint64_t u = 0;
  int overflow = 0;
  long digits = 0, exp10 = 0;
  if (*r->p == '0') {
    r->p++;
  } else {
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      unsigned dgt = (unsigned)(*r->p - '0');
      if (u > (UINT64_MAX - dgt) / 10) overflow = 1;
      else u = u * 10 + dgt;
      if (digits < 1000000) digits++;
      r->p++;
    }
  }
  int is_double = overflow;
  /* the significant digits for sm__json_decimal's exact path (m < 10^18 while exact) */
  uint64_t m = u;
  long frac = 0;
  int exact = !overflow && u < 100000000000000000ULL;
  if (r->p < r->end && *r->p == '.') {
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Miss fraction part in number.", r->p);
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      if (m < 100000000000000000ULL) { /* 10^17: room for one more digit, 18 significant in all */
        m = m * 10 + (uint64_t)(*r->p - '0');
        frac++;
      } else {
        exact = 0;
      }
      r->p++;
    }
    is_double = 1;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    r->p++;
    int eneg = 0;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) eneg = *r->p++ == '-';
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return fail(r, "Miss exponent in number.", r->p);
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
      if (exp10 < 1000000) exp10 = exp10 * 10 + (*r->p - '0');
      r->p++;
    }
    if (eneg) exp10 = -exp10;
    is_double = 1;
  }
  if (!is_double && neg && u > (uint64_t)INT64_MAX + 1) is_double = 1;
  if (is_double) {
    /* below 10^(digits + exp10): no overflow is possible under 10^308 */
    if (!r->build && digits + exp10 <= 308) {
      v->nk = N_DBL;
      return 1;
    }
    if (!sm__json_decimal(s, (size_t)(r->p - s), m, exp10 - frac, exact, neg, &v->d)) return oom(r);
    if (isinf(v->d)) return fail(r, "Number too big to be stored in double.", s);
    v->nk = N_DBL;
    return 1;
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
  return 1;
}

/* Pass 1's bookkeeping (the counts and its stack, grown by doubling) stays under twice the limit:
 * past that the DOM cannot fit, whatever the rest of the body holds. */
static int within(reader *r, size_t capst) {
  size_t used = r->capcounts * sizeof *r->counts + capst * sizeof(frame);
  if (used <= 4096 || used / 2 <= r->limit) return 1;
  r->over = 1;
  return fail(r, "Out of memory.", r->p);
}

/* Opens a non-empty container: pass 1 takes a count slot, pass 2 its children's storage. */
static int open_container(reader *r, frame *f, jv *v, int type, size_t depth, size_t capst) {
  memset(f, 0, sizeof *f);
  f->type = (uint8_t)type;
  f->nums = 1;
  if (!r->build) {
    if (r->ncounts == r->capcounts) {
      size_t cap = r->capcounts ? r->capcounts * 2 : 64;
      uint32_t *c = realloc(r->counts, cap * sizeof *c);
      if (!c) return oom(r);
      r->counts = c;
      r->capcounts = cap;
    }
    f->cnt_i = r->ncounts++;
    if (depth > r->max_depth) r->max_depth = depth;
    return within(r, capst);
  }
  uint32_t c = r->counts[r->ci++];
  memset(v, 0, sizeof *v);
  v->type = (uint8_t)type;
  v->n = c & ~PACKED;
  v->packed = (c & PACKED) != 0;
  if (v->packed) v->raw = take_nodes(r, (size_t)v->n * 9);
  else v->items = take_nodes(r, (size_t)v->n * (type == J_OBJ ? 2 : 1) * sizeof(jv));
  f->node = v;
  return 1;
}

static void close_container(reader *r, frame *f) {
  if (r->build) return;
  int packed = f->type == J_ARR && f->nums;
  r->counts[f->cnt_i] = f->idx | (packed ? PACKED : 0);
  size_t n = packed ? (size_t)f->idx * 9 : (size_t)f->idx * (f->type == J_OBJ ? 2 : 1) * sizeof(jv);
  r->node_bytes += (n + 15) & ~(size_t)15;
}

/* Where the container's next child goes (pass 2), or NULL (pass 1). */
static jv *child_slot(reader *r, frame *f, jv *tmp) {
  if (!r->build) return NULL;
  if (f->node->packed) return tmp;
  return &f->node->items[f->type == J_OBJ ? 2 * (size_t)f->idx + 1 : f->idx];
}

static int add_child(reader *r, frame *f, const jv *v, int is_num) {
  if (r->build && f->node->packed) {
    memcpy(f->node->raw + (size_t)f->idx * 8, &v->ui, 8);
    f->node->raw[(size_t)f->node->n * 8 + f->idx] = v->nk;
  }
  if (f->idx == (PACKED - 1)) return fail(r, "Out of memory.", r->p);
  f->idx++;
  f->nums &= (uint8_t)is_num;
  return 1;
}

/* An object member's name and its colon, rapidjson's messages on failure; 0 when it failed. */
static int read_member_name(reader *r, frame *f) {
  if (r->p >= r->end || *r->p != '"') return fail(r, "Missing a name for object member.", r->p);
  if (!read_string(r, r->build ? &f->node->items[2 * (size_t)f->idx] : NULL)) return 0;
  skip_ws(r);
  if (r->p >= r->end || *r->p != ':') return fail(r, "Missing a colon after a name of object member.", r->p);
  r->p++;
  return 1;
}

static int literal(reader *r, jv *v, const char *lit, int type) {
  if (!match(r, lit)) return fail(r, "Invalid value.", r->p);
  if (v) {
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)type;
  }
  return 1;
}

/* One pass over the document: pass 1 into the counts, pass 2 into root. 1 when it parsed. */
static int parse(reader *r, jv *root) {
  frame *st = NULL;
  size_t nst = 0, capst = 0;
  int ok = 0;
  jv tmp;
  skip_ws(r);
  if (r->p >= r->end) {
    fail(r, "The document is empty.", r->p);
    goto out;
  }
  for (;;) {
    /* ---- parse a value (or open a container) ---- */
    skip_ws(r);
    jv *v = nst ? child_slot(r, &st[nst - 1], &tmp) : root;
    int is_num = 0;
    if (r->p >= r->end) {
      fail(r, "Invalid value.", r->p);
      goto out;
    }
    char c = *r->p;
    if (c == '{' || c == '[') {
      int type = c == '{' ? J_OBJ : J_ARR;
      r->p++;
      skip_ws(r);
      if (r->p < r->end && *r->p == (c == '{' ? '}' : ']')) {
        r->p++;
        if (v) {
          memset(v, 0, sizeof *v);
          v->type = (uint8_t)type;
        }
      } else {
        if (nst == capst) {
          size_t cap = capst ? capst * 2 : 64;
          frame *ns = realloc(st, cap * sizeof *ns);
          if (!ns) {
            oom(r);
            goto out;
          }
          st = ns;
          capst = cap;
        }
        if (!open_container(r, &st[nst], v, type, nst + 1, capst)) goto out;
        nst++;
        if (c == '{' && !read_member_name(r, &st[nst - 1])) goto out;
        continue;
      }
    } else if (c == '"') {
      if (!read_string(r, v)) goto out;
    } else if (c == 'n') {
      if (!literal(r, v, "null", J_NULL)) goto out;
    } else if (c == 't') {
      if (!literal(r, v, "true", J_TRUE)) goto out;
    } else if (c == 'f') {
      if (!literal(r, v, "false", J_FALSE)) goto out;
    } else if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') {
      if (!read_number(r, v)) goto out;
      is_num = 1;
    } else {
      fail(r, "Invalid value.", r->p);
      goto out;
    }
    /* ---- a value is complete: count it, close containers that end here ---- */
    for (;;) {
      if (nst == 0) {
        skip_ws(r);
        if (r->p < r->end) {
          fail(r, "The document root must not be followed by other values.", r->p);
          goto out;
        }
        ok = 1;
        goto out;
      }
      frame *f = &st[nst - 1];
      if (!add_child(r, f, v, is_num)) goto out;
      skip_ws(r);
      char close = f->type == J_ARR ? ']' : '}';
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        if (f->type == J_OBJ) {
          skip_ws(r);
          if (!read_member_name(r, f)) goto out;
        }
        break;
      }
      if (r->p < r->end && *r->p == close) {
        r->p++;
        close_container(r, f);
        v = r->build ? f->node : NULL;
        is_num = 0;
        nst--;
        continue;
      }
      fail(r, f->type == J_ARR ? "Missing a comma or ']' after an array element."
                               : "Missing a comma or '}' after an object member.",
           r->p);
      goto out;
    }
  }
out:
  free(st);
  return ok && !r->err;
}

size_t sm__json_dom_limit(size_t body_len) {
  if (body_len > (SIZE_MAX - SM_JSON_DOM_FLOOR) / SM_JSON_DOM_FACTOR) return SIZE_MAX;
  return body_len * SM_JSON_DOM_FACTOR + SM_JSON_DOM_FLOOR;
}

jv *sm__json_read(const char *body, size_t len, arena *a, size_t max_bytes, const char **err, size_t *err_off,
                  size_t *need) {
  reader r = {.p = body, .end = body + len, .start = body, .a = a, .limit = max_bytes, .node_bytes = sizeof(jv)};
  jv *root = NULL;
  *need = 0;
  int ok = parse(&r, NULL);
  size_t total = r.node_bytes + r.str_bytes;
  size_t bookkeeping = r.ncounts * sizeof *r.counts + r.max_depth * sizeof(frame);
  if (r.over) {
    *need = r.capcounts * sizeof *r.counts + r.max_depth * sizeof(frame);
    r.err = NULL;
  } else if (ok) {
    *need = total + bookkeeping;
  }
  if (ok && *need > max_bytes) {
    ok = 0;
  } else if (ok && !reserve(a, total)) {
    ok = 0;
  } else if (ok) {
    unsigned char *block = sm__json_arena_alloc(a, total);
    if (!block) {
      ok = 0;
    } else {
      r.build = 1;
      r.p = body;
      r.nodes = block;
      r.strs = block + r.node_bytes;
      root = take_nodes(&r, sizeof *root);
      ok = parse(&r, root);
    }
  }
  free(r.counts);
  *err = r.over || a->oom ? NULL : r.err;
  *err_off = r.err_off;
  return ok ? root : NULL;
}
