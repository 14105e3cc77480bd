/* json_fast.c - the predict decoder's fast path for numeric tensors: a body such as
 * {"instances": [[0.1, 0.2, ...], ...]} or {"inputs": ...} (optionally with "signature_name")
 * for a signature with one DT_FLOAT or DT_DOUBLE input is read in one scan straight into the
 * tensor's buffer: no DOM, no intermediate values. Anything else - another key, an object, a
 * string, NaN, an empty or ragged array, escapes, a signature_name after the tensor, a signature
 * with several inputs or another dtype - makes it decline, and the general decoder (json_tensor.c) takes the body and gives TF
 * Serving's answer or error for it. So this file decides nothing TF Serving-visible on its own:
 * on every body it accepts, the result equals the general decoder's (tests/unit/test_serve_json.c
 * checks both paths side by side). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "serve/json_dom.h"
#include "serve/json_tensor.h"

typedef struct scan {
  const char *p, *end;
} scan;

static int is_ws(char c);
static inline void ws(scan *s) {
  while (s->p < s->end && is_ws(*s->p)) s->p++;
}

static int eat(scan *s, char c) {
  ws(s);
  if (s->p >= s->end || *s->p != c) return 0;
  s->p++;
  return 1;
}

/* A string of plain ASCII (no escapes, no control bytes): its bytes in [*b, *b + *n). */
static int plain_string(scan *s, const char **b, size_t *n) {
  if (!eat(s, '"')) return 0;
  *b = s->p;
  while (s->p < s->end && *s->p != '"') {
    unsigned char c = (unsigned char)*s->p;
    if (c < 0x20 || c >= 0x80 || c == '\\') return 0;
    s->p++;
  }
  if (s->p >= s->end) return 0;
  *n = (size_t)(s->p - *b);
  s->p++;
  return 1;
}

static int is_key(const char *b, size_t n, const char *k) { return n == strlen(k) && !memcmp(b, k, n); }

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Eight ASCII digits at p as a number (SWAR: all eight checked and combined in a few word
 * operations); 0 when they are not all digits. Little-endian machines only. */
static inline int eight_digits(const char *p, uint64_t *out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t x;
  memcpy(&x, p, sizeof x);
  if (((x & 0xF0F0F0F0F0F0F0F0ULL) | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) !=
      0x3333333333333333ULL)
    return 0;
  x -= 0x3030303030303030ULL;
  x = x * 10 + (x >> 8); /* pairs: byte 2k holds digits 2k, 2k+1 as a number below 100 */
  x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
       (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
  *out = x;
  return 1;
#else
  (void)p, (void)out;
  return 0;
#endif
}

/* One JSON number, strictly (no NaN/Infinity, no leading zeros), as the nearest double; 0 to
 * decline (not a plain number, overflow to infinity, out of memory). */
static int number(scan *s, double *out) {
  const char *b = s->p, *p = s->p, *end = s->end;
  int neg = p < end && *p == '-';
  p += neg;
  if (p >= end || (unsigned)(*p - '0') > 9) return 0;
  uint64_t m = 0;
  long frac = 0, e10 = 0;
  int exact = 1, decimal = 0;
  if (*p == '0') {
    if (++p < end && (unsigned)(*p - '0') <= 9) return 0;
  } else {
    for (; p < end && (unsigned)(*p - '0') <= 9; p++) {
      if (m < 100000000000000000ULL) m = m * 10 + (uint64_t)(*p - '0');
      else exact = 0, e10++; /* digits past 18: strtod rounds */
    }
  }
  if (p < end && *p == '.') {
    decimal = 1;
    if (++p >= end || (unsigned)(*p - '0') > 9) return 0;
    const char *f = p;
    uint64_t v8;
    while (end - p >= 8 && m < 10000000000ULL && eight_digits(p, &v8)) m = m * 100000000ULL + v8, p += 8;
    for (; p < end && (unsigned)(*p - '0') <= 9; p++) {
      if (m < 100000000000000000ULL) m = m * 10 + (uint64_t)(*p - '0');
      else break;
    }
    frac = (long)(p - f);
    for (; p < end && (unsigned)(*p - '0') <= 9; p++) exact = 0;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    decimal = 1;
    p++;
    int eneg = 0;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    if (p >= end || (unsigned)(*p - '0') > 9) return 0;
    long x = 0;
    for (; p < end && (unsigned)(*p - '0') <= 9; p++)
      if (x < 1000000) x = x * 10 + (*p - '0');
    e10 += eneg ? -x : x;
  }
  s->p = p;
  /* integers: rapidjson keeps them as int64 ("-0" is 0), exact as a double below 2^53 */
  if (!decimal) {
    if (!exact || m > ((uint64_t)1 << 53)) return 0;
    *out = neg && m ? -(double)m : (double)m;
    return 1;
  }
  double d;
  if (!sm__json_decimal(b, (size_t)(p - b), m, e10 - frac, exact, neg, &d)) return 0;
  if (d - d != 0) return 0; /* infinite: the general decoder reports it */
  *out = d;
  return 1;
}

/* Reads the value at s into buf (cap elements of dtype), its shape into dims/rank: rectangular
 * nested arrays of numbers, or one number (rank 0). 0 to decline. */
static int numeric_value(scan *s, int dtype, void *buf, int64_t cap, int64_t *dims, int *rank, int64_t *count) {
  int64_t cnt[SM_MAX_RANK + 1], n = 0;
  int depth = 0, leaf = -1;
  for (int k = 0; k <= SM_MAX_RANK; k++) dims[k] = -1;
  ws(s);
  for (;;) {
    ws(s);
    if (s->p >= s->end) return 0;
    if (*s->p == '[') {
      if (depth == SM_MAX_RANK || (leaf >= 0 && depth >= leaf)) return 0;
      if (depth > 0) cnt[depth]++;
      s->p++;
      cnt[++depth] = 0;
      ws(s);
      if (s->p < s->end && *s->p == ']') return 0; /* empty */
      continue;
    }
    double v;
    if (leaf < 0) leaf = depth;
    if (depth != leaf || n >= cap || !number(s, &v)) return 0;
    if (dtype == SM_FLOAT) ((float *)buf)[n++] = (float)v;
    else ((double *)buf)[n++] = v;
    if (depth > 0) cnt[depth]++;
    /* close as many arrays as end here, then expect ',' or the end of the value */
    for (;;) {
      if (depth == 0) {
        *rank = 0;
        *count = n;
        return 1;
      }
      ws(s);
      if (s->p < s->end && *s->p == ',') {
        s->p++;
        break;
      }
      if (s->p >= s->end || *s->p != ']') return 0;
      s->p++;
      if (dims[depth - 1] < 0) dims[depth - 1] = cnt[depth];
      else if (dims[depth - 1] != cnt[depth]) return 0; /* ragged */
      depth--;
      if (depth == 0) {
        *rank = leaf;
        *count = n;
        return 1;
      }
    }
  }
}

static void free_buf(void *p) { sm__free(p); }

/* The signature's one input, when it is DT_FLOAT or DT_DOUBLE; 0 otherwise (fn's error included:
 * the general decoder asks again and reports it in its order). */
static int one_float_input(sm_json_inputs_fn fn, void *ctx, const char *sig, size_t siglen, char **name,
                           const sm_json_input **in) {
  *name = malloc(siglen + 1);
  if (!*name) return 0;
  memcpy(*name, sig, siglen);
  (*name)[siglen] = 0;
  int nin = 0;
  sm_status *st = fn(ctx, *name, in, &nin);
  if (!st && nin == 1 && ((*in)[0].dtype == SM_FLOAT || (*in)[0].dtype == SM_DOUBLE)) return 1;
  sm_status_free(st);
  free(*name);
  *name = NULL;
  return 0;
}

int sm__json_fast_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx, sm_predict_request *out) {
  scan s = {body, body + len};
  const char *sig = "";
  size_t siglen = 0;
  int row = 0, seen_sig = 0, ok = 1, rank = 0;
  char *name = NULL, *alias = NULL, **aliases = NULL;
  const sm_json_input *in = NULL;
  void *buf = NULL;
  size_t es = 0;
  int64_t count = 0, dims[SM_MAX_RANK + 1];
  sm_tensor *t = NULL, **tensors = NULL;
  if (!eat(&s, '{')) return 0;
  /* One scan: the value is read when its key comes, for the signature named before it (or the
   * default one); a signature_name after the value declines, as does anything unexpected. */
  do {
    const char *k;
    size_t kn;
    ok = plain_string(&s, &k, &kn) && eat(&s, ':');
    if (ok && is_key(k, kn, "signature_name") && !seen_sig && !buf) {
      ok = plain_string(&s, &sig, &siglen);
      seen_sig = 1;
    } else if (ok && (is_key(k, kn, "instances") || is_key(k, kn, "inputs")) && !buf) {
      row = k[1] == 'n' && k[2] == 's';
      ws(&s);
      ok = (!row || (s.p < s.end && *s.p == '[')) && one_float_input(fn, ctx, sig, siglen, &name, &in);
      if (ok) {
        es = in[0].dtype == SM_FLOAT ? sizeof(float) : sizeof(double);
        int64_t cap = (int64_t)((size_t)(s.end - s.p) / 2 + 1);
        buf = sm__alloc((size_t)cap * es);
        ok = buf && numeric_value(&s, in[0].dtype, buf, cap, dims, &rank, &count);
      }
    } else {
      ok = 0;
    }
  } while (ok && eat(&s, ','));
  ok = ok && buf && eat(&s, '}');
  if (ok) {
    ws(&s);
    ok = s.p == s.end;
  }
  if (ok) {
    size_t alen = strlen(in[0].alias);
    alias = malloc(alen + 1);
    aliases = malloc(sizeof *aliases);
    tensors = malloc(sizeof *tensors);
    ok = alias && aliases && tensors;
    if (alias) memcpy(alias, in[0].alias, alen + 1);
  }
  if (ok) {
    void *shrunk = sm__realloc(buf, (size_t)count * es); /* count >= 1 */
    if (shrunk) buf = shrunk;
    sm_status *st = sm_tensor_wrap(in[0].dtype, rank, dims, buf, (size_t)count * es, free_buf, buf, &t);
    ok = !st;
    sm_status_free(st);
    if (ok) buf = NULL; /* the tensor owns it */
  }
  if (!ok) {
    sm__free(buf);
    free(name);
    free(alias);
    free(aliases);
    free(tensors);
    return 0;
  }
  aliases[0] = alias;
  tensors[0] = t;
  out->signature_name = name;
  out->format = row ? SM_JSON_ROW : SM_JSON_COLUMNAR;
  out->n = 1;
  out->aliases = aliases;
  out->tensors = tensors;
  return 1;
}
