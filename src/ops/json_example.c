/* json_example.c - DecodeJSONExample (tf.io.decode_json_example): a tf.Example in protobuf's JSON
 * form to its binary serialization, byte for byte what TF's protobuf JSON parser writes.
 *
 * A reader for exactly this schema (Example{features} -> Features{feature: map} -> Feature{one of
 * bytesList / floatList / int64List, also under their proto names} -> {value: [...]}), no tree:
 * bytes are written as the JSON is read, in its order (map entries as they come, every repeated
 * value tagged, not packed, as protobuf's stream writer does); a submessage's length is patched in
 * when it closes. int64 values are read from the token's digits (strings or numbers; exact to
 * 2^63), floats as protobuf reads them (a double, refused outside float's range, then rounded;
 * "NaN", "Infinity", "-Infinity" and numbers in strings too), bytes as base64 (standard or URL-safe,
 * padding optional); null leaves a field unset. Errors say "Error while parsing JSON: " and where,
 * as TF's first words (its rest is protobuf's, whose spacing protobuf varies on purpose). Nesting
 * is fixed by the schema, so hostile input cannot recurse deeply. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct {
  const char *p, *end, *start;
  sm_kctx *ctx;
  uint8_t *out;
  size_t n, cap;
  sm_status *err;
} jx;

static int jfail(jx *j, const char *what) {
  if (!j->err)
    j->err = sm_status_new(SM_INVALID_ARGUMENT, "Error while parsing JSON: invalid JSON in tensorflow.Example near offset %lld: %s",
                           (long long)(j->p - j->start), what);
  return 0;
}

static int reserve(jx *j, size_t more) {
  if (j->cap - j->n >= more) return 1;
  size_t cap = j->cap ? j->cap : 256;
  while (cap - j->n < more) cap *= 2;
  sm_status *s = NULL;
  uint8_t *nb = sm__kctx_scratch_realloc(j->ctx, j->out, cap, &s);
  if (!nb) {
    if (!j->err) j->err = s;
    else sm_status_free(s);
    return 0;
  }
  j->out = nb, j->cap = cap;
  return 1;
}

static int put(jx *j, const void *d, size_t k) {
  if (!reserve(j, k)) return 0;
  memcpy(j->out + j->n, d, k);
  j->n += k;
  return 1;
}

static int put_varint(jx *j, uint64_t v) {
  uint8_t b[10];
  size_t k = 0;
  while (v >= 0x80) b[k++] = (uint8_t)(v | 0x80), v >>= 7;
  b[k++] = (uint8_t)v;
  return put(j, b, k);
}

/* Opens a length-delimited field: its tag and 5 bytes for the length; returns where it starts. */
static size_t open_msg(jx *j, uint8_t tag) {
  uint8_t z[6] = {tag, 0, 0, 0, 0, 0};
  put(j, z, 6);
  return j->n;
}

static void close_msg(jx *j, size_t at) {
  if (j->err) return;
  size_t len = j->n - at;
  uint8_t b[10];
  size_t k = 0;
  uint64_t v = len;
  while (v >= 0x80) b[k++] = (uint8_t)(v | 0x80), v >>= 7;
  b[k++] = (uint8_t)v;
  memcpy(j->out + at - 5, b, k);
  memmove(j->out + at - 5 + k, j->out + at, len);
  j->n -= 5 - k;
}

static void ws(jx *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int eat(jx *j, char c) {
  ws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return 1;
  }
  return 0;
}

static int is_null(jx *j) {
  ws(j);
  if (j->end - j->p >= 4 && !memcmp(j->p, "null", 4)) {
    j->p += 4;
    return 1;
  }
  return 0;
}

static void put_utf8(char *o, size_t *k, uint32_t c) {
  if (c < 0x80) o[(*k)++] = (char)c;
  else if (c < 0x800) o[(*k)++] = (char)(0xc0 | c >> 6), o[(*k)++] = (char)(0x80 | (c & 63));
  else if (c < 0x10000) o[(*k)++] = (char)(0xe0 | c >> 12), o[(*k)++] = (char)(0x80 | (c >> 6 & 63)), o[(*k)++] = (char)(0x80 | (c & 63));
  else
    o[(*k)++] = (char)(0xf0 | c >> 18), o[(*k)++] = (char)(0x80 | (c >> 12 & 63)), o[(*k)++] = (char)(0x80 | (c >> 6 & 63)),
    o[(*k)++] = (char)(0x80 | (c & 63));
}

static int hex4(const char *p, uint32_t *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    *v = *v << 4 | (uint32_t)d;
  }
  return 1;
}

/* A JSON string, unescaped into scratch (*s, *len; free with sm__kctx_scratch_free). */
static int read_string(jx *j, char **s, size_t *len) {
  ws(j);
  if (j->p >= j->end || *j->p != '"') return jfail(j, "expected a string");
  j->p++;
  const char *q = j->p;
  while (q < j->end && *q != '"') q += *q == '\\' && q + 1 < j->end ? 2 : 1;
  if (q >= j->end) return jfail(j, "unterminated string");
  sm_status *st = NULL;
  char *o = sm__kctx_scratch(j->ctx, (size_t)(q - j->p) + 1, &st);
  if (!o) {
    j->err = st;
    return 0;
  }
  size_t k = 0;
  while (j->p < q) {
    char c = *j->p++;
    if ((unsigned char)c < 0x20) {
      sm__kctx_scratch_free(j->ctx, o);
      return jfail(j, "control character in a string");
    }
    if (c != '\\') {
      o[k++] = c;
      continue;
    }
    c = *j->p++;
    uint32_t u;
    switch (c) {
    case '"': case '\\': case '/': o[k++] = c; break;
    case 'b': o[k++] = '\b'; break;
    case 'f': o[k++] = '\f'; break;
    case 'n': o[k++] = '\n'; break;
    case 'r': o[k++] = '\r'; break;
    case 't': o[k++] = '\t'; break;
    case 'u':
      if (q - j->p < 4 || !hex4(j->p, &u)) {
        sm__kctx_scratch_free(j->ctx, o);
        return jfail(j, "bad \\u escape");
      }
      j->p += 4;
      if (u >= 0xd800 && u < 0xdc00 && q - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
        uint32_t lo;
        if (hex4(j->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
          u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
          j->p += 6;
        }
      }
      put_utf8(o, &k, u); /* at most 4 bytes for the 6 or 12 it replaces */
      break;
    default:
      sm__kctx_scratch_free(j->ctx, o);
      return jfail(j, "bad escape");
    }
  }
  j->p = q + 1;
  o[k] = 0;
  *s = o;
  *len = k;
  return 1;
}

/* The raw text of a number token. */
static int number_token(jx *j, const char **t, size_t *len) {
  ws(j);
  const char *q = j->p;
  if (q < j->end && *q == '-') q++;
  while (q < j->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')) q++;
  if (q == j->p) return jfail(j, "expected a value");
  *t = j->p;
  *len = (size_t)(q - j->p);
  j->p = q;
  return 1;
}

static int parse_int64(const char *t, size_t len, int64_t *v) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, t, len);
  buf[len] = 0;
  for (size_t i = buf[0] == '-'; i < len; i++)
    if (buf[i] < '0' || buf[i] > '9') return 0;
  if (buf[0] == '-' && len == 1) return 0;
  errno = 0;
  char *e;
  long long x = strtoll(buf, &e, 10);
  if (errno || *e) return 0;
  *v = x;
  return 1;
}

static int parse_float(const char *t, size_t len, float *v) {
  char buf[400];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, t, len);
  buf[len] = 0;
  if (!strcmp(buf, "NaN")) return *v = NAN, 1;
  if (!strcmp(buf, "Infinity")) return *v = INFINITY, 1;
  if (!strcmp(buf, "-Infinity")) return *v = -INFINITY, 1;
  for (size_t i = 0; i < len; i++)
    if (!strchr("0123456789.eE+-", buf[i])) return 0;
  char *e;
  double d = strtod(buf, &e);
  if (*e || isinf(d) || isnan(d)) return 0;
  if (d > 3.4028234663852886e38 || d < -3.4028234663852886e38) return 0; /* protobuf: outside float's range */
  *v = (float)d;
  return 1;
}

static int b64val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

/* Decodes base64 in place; 0 when it is not base64. */
static int unbase64(char *s, size_t len, size_t *out) {
  while (len && s[len - 1] == '=') len--;
  if (len % 4 == 1) return 0;
  size_t k = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64val(s[i]);
    if (v < 0) return 0;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      s[k++] = (char)(acc >> bits & 0xff);
    }
  }
  *out = k;
  return 1;
}

/* The key of an object's next member, which must be `name` (else fails with msg), and its ':'. */
static int read_field(jx *j, const char *name, const char *msg) {
  char *key;
  size_t kl;
  if (!read_string(j, &key, &kl)) return 0;
  int ok = !strcmp(key, name);
  sm__kctx_scratch_free(j->ctx, key);
  if (!ok) return jfail(j, msg);
  if (!eat(j, ':')) return jfail(j, "expected ':'");
  return 1;
}

enum { K_BYTES = 1, K_FLOAT = 2, K_INT64 = 3 };

/* {"value": [...]} of one kind, written as the list message's fields. */
static int parse_list(jx *j, int kind) {
  if (!eat(j, '{')) return jfail(j, "expected an object");
  if (eat(j, '}')) return 1;
  do {
    if (!read_field(j, "value", "no such field in the list")) return 0;
    if (is_null(j)) continue;
    if (!eat(j, '[')) return jfail(j, "expected an array");
    if (eat(j, ']')) continue;
    do {
      ws(j);
      int quoted = j->p < j->end && *j->p == '"';
      if (kind == K_BYTES) {
        char *s;
        size_t sl, bl;
        if (!quoted) return jfail(j, "bytes must be a base64 string");
        if (!read_string(j, &s, &sl)) return 0;
        if (!unbase64(s, sl, &bl)) {
          sm__kctx_scratch_free(j->ctx, s);
          return jfail(j, "bytes: not base64");
        }
        uint8_t tag = 0x0a;
        int ok2 = put(j, &tag, 1) && put_varint(j, bl) && put(j, s, bl);
        sm__kctx_scratch_free(j->ctx, s);
        if (!ok2) return 0;
        continue;
      }
      const char *t;
      size_t tl;
      char *s = NULL;
      if (quoted) {
        if (!read_string(j, &s, &tl)) return 0;
        t = s;
      } else if (!number_token(j, &t, &tl)) {
        return 0;
      }
      int ok2;
      if (kind == K_FLOAT) {
        float f;
        ok2 = parse_float(t, tl, &f);
        uint8_t b[5] = {0x0d};
        memcpy(b + 1, &f, 4);
        if (ok2) ok2 = put(j, b, 5) ? 1 : -1;
      } else {
        int64_t v;
        ok2 = parse_int64(t, tl, &v);
        uint8_t tag = 0x08;
        if (ok2) ok2 = put(j, &tag, 1) && put_varint(j, (uint64_t)v) ? 1 : -1;
      }
      sm__kctx_scratch_free(j->ctx, s);
      if (ok2 < 0) return 0;
      if (!ok2) return jfail(j, kind == K_FLOAT ? "not a float" : "not an int64");
    } while (eat(j, ','));
    if (!eat(j, ']')) return jfail(j, "expected ']'");
  } while (eat(j, ','));
  if (!eat(j, '}')) return jfail(j, "expected '}'");
  return 1;
}

static int parse_feature(jx *j) {
  if (!eat(j, '{')) return jfail(j, "expected an object");
  if (eat(j, '}')) return 1;
  int have = 0;
  do {
    char *key;
    size_t kl;
    if (!read_string(j, &key, &kl)) return 0;
    int kind = !strcmp(key, "bytesList") || !strcmp(key, "bytes_list")   ? K_BYTES
               : !strcmp(key, "floatList") || !strcmp(key, "float_list") ? K_FLOAT
               : !strcmp(key, "int64List") || !strcmp(key, "int64_list") ? K_INT64
                                                                          : 0;
    sm__kctx_scratch_free(j->ctx, key);
    if (!kind) return jfail(j, "no such field in tensorflow.Feature");
    if (!eat(j, ':')) return jfail(j, "expected ':'");
    if (is_null(j)) continue;
    if (have) return jfail(j, "more than one kind of list in a tensorflow.Feature (a oneof)");
    have = 1;
    size_t at = open_msg(j, (uint8_t)(kind << 3 | 2));
    if (!parse_list(j, kind)) return 0;
    close_msg(j, at);
  } while (eat(j, ','));
  if (!eat(j, '}')) return jfail(j, "expected '}'");
  return !j->err;
}

typedef struct {
  char *p;
  size_t n;
} name_ref;

static int name_cmp(const void *a, const void *b) {
  const name_ref *x = a, *y = b;
  int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The map's keys: a repeated one is protobuf's error. Frees them. */
static int check_names(jx *j, name_ref *names, size_t n) {
  int dup = 0;
  if (n > 1) {
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 1; i < n && !dup; i++) dup = !name_cmp(&names[i - 1], &names[i]);
  }
  for (size_t i = 0; i < n; i++) sm__kctx_scratch_free(j->ctx, names[i].p);
  sm__kctx_scratch_free(j->ctx, names);
  return dup ? jfail(j, "got unexpectedly-repeated repeated map key") : 1;
}

static int parse_features(jx *j) {
  if (!eat(j, '{')) return jfail(j, "expected an object");
  if (eat(j, '}')) return 1;
  do {
    if (!read_field(j, "feature", "no such field in tensorflow.Features")) return 0;
    if (is_null(j)) continue;
    if (!eat(j, '{')) return jfail(j, "expected an object");
    if (eat(j, '}')) continue;
    name_ref *names = NULL;
    size_t nn = 0, ncap = 0;
    int ok2 = 1;
    do {
      char *name;
      size_t nl;
      if (!read_string(j, &name, &nl)) {
        ok2 = 0;
        break;
      }
      if (nn == ncap) {
        sm_status *st = NULL;
        name_ref *g = sm__kctx_scratch_realloc(j->ctx, names, (ncap = ncap ? 2 * ncap : 16) * sizeof *names, &st);
        if (!g) {
          if (!j->err) j->err = st;
          else sm_status_free(st);
          sm__kctx_scratch_free(j->ctx, name);
          ok2 = 0;
          break;
        }
        names = g;
      }
      names[nn].p = name, names[nn++].n = nl;
      if (!eat(j, ':')) {
        ok2 = jfail(j, "expected ':'");
        break;
      }
      size_t entry = open_msg(j, 0x0a);
      uint8_t tag = 0x0a;
      if (!(put(j, &tag, 1) && put_varint(j, nl) && put(j, name, nl))) {
        ok2 = 0;
        break;
      }
      if (!is_null(j)) { /* a null value: the entry holds its key alone */
        size_t val = open_msg(j, 0x12);
        if (!parse_feature(j)) {
          ok2 = 0;
          break;
        }
        close_msg(j, val);
      }
      close_msg(j, entry);
    } while (eat(j, ','));
    if (!check_names(j, names, nn) || !ok2) return 0;
    if (!eat(j, '}')) return jfail(j, "expected '}'");
  } while (eat(j, ','));
  if (!eat(j, '}')) return jfail(j, "expected '}'");
  return !j->err;
}

static int parse_example(jx *j) {
  if (!eat(j, '{')) return jfail(j, "expected '{'");
  if (!eat(j, '}')) {
    do {
      if (!read_field(j, "features", "no such field in tensorflow.Example")) return 0;
      if (is_null(j)) continue;
      size_t at = open_msg(j, 0x0a);
      if (!parse_features(j)) return 0;
      close_msg(j, at);
    } while (eat(j, ','));
    if (!eat(j, '}')) return jfail(j, "expected '}'");
  }
  ws(j);
  if (j->p != j->end) return jfail(j, "text after the value");
  return !j->err;
}

static sm_status *json_example_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(in), sm_tensor_dims(in), &out);
  for (int64_t i = 0; !s && i < sm_tensor_num_elements(in); i++) {
    size_t len;
    const char *t = sm_tensor_string(in, i, &len);
    jx j = {t, t + len, t, ctx, NULL, 0, 0, NULL};
    if (!parse_example(&j) && !j.err) jfail(&j, "malformed");
    s = j.err;
    if (!s) s = sm_tensor_set_string(out, i, j.out ? (const char *)j.out : "", j.n);
    sm__kctx_scratch_free(ctx, j.out);
  }
  return s;
}

const sm_kernel sm_kernels_json_example[] = {
    {"DecodeJSONExample", NULL, json_example_compute, NULL, 0},
    {0},
};
