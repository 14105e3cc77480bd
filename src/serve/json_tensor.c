/* json_tensor.c - TF Serving's JSON <-> tensor codec: the request decoders and the response
 * writers of tensorflow_serving/util/json_tensor.cc, over the DOM json_dom.c reads. Everything
 * that walks the DOM recursively is bounded: tensor shapes stop at SM_MAX_RANK, debug text at
 * 256 bytes. */
#include "serve/json_tensor.h"

#include "serve/json_dom.h"
#include "serve/limits.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/example.h"

/* ================================================================ status helpers ==== */

static sm_status *inval(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static sm_status *inval(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sm_status *s = sm_status_newv(SM_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

/* TF's Status::ToString prefix for a nested message. */
static const char *code_prefix(sm_status *s) { return sm_code_name(sm_status_code(s)); }

const char *sm__json_dtype_string(int dt) {
  static const char *names[] = {"invalid", "float", "double", "int32", "uint8", "int16", "int8", "string",
                                "complex64", "int64", "bool", "qint8", "quint8", "qint32", "bfloat16", "qint16",
                                "quint16", "uint16", "complex128", "half", "resource", "variant", "uint32",
                                "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
                                "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn"};
  if (dt >= 0 && dt < (int)(sizeof names / sizeof *names)) return names[dt];
  return "unknown";
}

/* ================================================================ the writer ==== */

void sm__jbuf_free(sm_jbuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

static int jbuf_reserve(sm_jbuf *b, size_t n) {
  if (b->oom) return 0;
  if (b->cap - b->len >= n + 1) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < n + 1) {
    if (cap > SIZE_MAX / 2) {
      b->oom = 1;
      return 0;
    }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

int sm__jbuf_reserve_exact(sm_jbuf *b, size_t n) {
  if (b->oom || b->cap >= n + 1) return !b->oom;
  char *p = realloc(b->p, n + 1);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = n + 1;
  return 1;
}

void sm__jbuf_put(sm_jbuf *b, const char *s, size_t n) {
  if (!jbuf_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void sm__jbuf_puts(sm_jbuf *b, const char *s) { sm__jbuf_put(b, s, strlen(s)); }

static void jbuf_putc(sm_jbuf *b, char c) {
  if (!jbuf_reserve(b, 1)) return;
  b->p[b->len++] = c;
  b->p[b->len] = 0;
}

void sm__jbuf_str(sm_jbuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  if (!jbuf_reserve(b, n + 2)) return;
  jbuf_putc(b, '"');
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\') j++;
    if (j > i) sm__jbuf_put(b, s + i, j - i);
    if (j >= n) break;
    unsigned char c = (unsigned char)s[j];
    char esc[7] = {'\\', 0};
    size_t el = 2;
    switch (c) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case '\b': esc[1] = 'b'; break;
      case '\f': esc[1] = 'f'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      default:
        esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
        el = 6;
    }
    sm__jbuf_put(b, esc, el);
    i = j + 1;
  }
  jbuf_putc(b, '"');
}

/* rapidjson's PrettyWriter (indent 4), including its kFormatSingleLineArray switch, so responses
 * come out laid out as TF Serving's do. */
#define PW_MAX 300 /* > DEBUG_MAX, and response nesting is at most SM_MAX_RANK + 3 */
typedef struct pw {
  sm_jbuf *b;
  int single_line;
  int depth;
  struct {
    int in_array;
    int64_t count;
  } lv[PW_MAX];
} pw;

static void pw_indent(pw *w) {
  int n = w->depth * 4;
  if (!jbuf_reserve(w->b, (size_t)n + 1)) return;
  w->b->p[w->b->len++] = '\n';
  memset(w->b->p + w->b->len, ' ', (size_t)n);
  w->b->len += (size_t)n;
  w->b->p[w->b->len] = 0;
}

static void pw_prefix(pw *w) {
  if (!w->depth || w->depth > PW_MAX) return;
  int d = w->depth - 1;
  if (w->lv[d].in_array) {
    if (w->lv[d].count > 0) sm__jbuf_put(w->b, w->single_line ? ", " : ",", w->single_line ? 2 : 1);
    if (!w->single_line) pw_indent(w);
  } else {
    if (w->lv[d].count > 0) {
      if (w->lv[d].count % 2 == 0) jbuf_putc(w->b, ',');
      else sm__jbuf_put(w->b, ": ", 2);
    }
    if (w->lv[d].count % 2 == 0) pw_indent(w);
  }
  w->lv[d].count++;
}

static void pw_open(pw *w, int array) {
  pw_prefix(w);
  jbuf_putc(w->b, array ? '[' : '{');
  if (w->depth < PW_MAX) {
    w->lv[w->depth].in_array = array;
    w->lv[w->depth].count = 0;
  }
  w->depth++;
}

static void pw_close(pw *w) {
  w->depth--;
  int array = w->depth < PW_MAX ? w->lv[w->depth].in_array : 1;
  int empty = w->depth < PW_MAX ? w->lv[w->depth].count == 0 : 1;
  if (!empty && (!array || !w->single_line)) pw_indent(w);
  jbuf_putc(w->b, array ? ']' : '}');
}

static void pw_raw(pw *w, const char *s, size_t n) {
  pw_prefix(w);
  sm__jbuf_put(w->b, s, n);
}

static void pw_str(pw *w, const char *s, size_t n) {
  pw_prefix(w);
  sm__jbuf_str(w->b, s, n);
}

int sm__json_format_decimal(double v, int single, char *buf, size_t cap) {
  int n;
  if (isnan(v)) {
    n = snprintf(buf, cap, "NaN");
  } else if (isinf(v)) {
    n = snprintf(buf, cap, "%s", v < 0 ? "-Infinity" : "Infinity");
  } else {
    /* absl::StrCat prints six significant digits; if that does not read back, full precision */
    n = snprintf(buf, cap, "%.6g", v);
    int same = single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v;
    if (!same) n = snprintf(buf, cap, "%.*g", single ? 9 : 17, v);
    if (!strchr(buf, '.') && !strchr(buf, 'e') && (size_t)n + 2 < cap) {
      memcpy(buf + n, ".0", 3);
      n += 2;
    }
  }
  return n;
}

static void pw_decimal(pw *w, double v, int single) {
  char buf[48];
  int n = sm__json_format_decimal(v, single, buf, sizeof buf);
  pw_raw(w, buf, (size_t)n);
}

void sm__jbuf_base64(sm_jbuf *b, const unsigned char *s, size_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (!jbuf_reserve(b, (n + 2) / 3 * 4 + 2)) return;
  char *o = b->p + b->len;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    unsigned x = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
    *o++ = tab[x >> 18], *o++ = tab[(x >> 12) & 63], *o++ = tab[(x >> 6) & 63], *o++ = tab[x & 63];
  }
  if (n - i == 1) {
    unsigned x = (unsigned)s[i] << 16;
    *o++ = tab[x >> 18], *o++ = tab[(x >> 12) & 63], *o++ = '=', *o++ = '=';
  } else if (n - i == 2) {
    unsigned x = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8;
    *o++ = tab[x >> 18], *o++ = tab[(x >> 12) & 63], *o++ = tab[(x >> 6) & 63], *o++ = '=';
  }
  b->len = (size_t)(o - b->p);
  b->p[b->len] = 0;
}

/* The 6-bit value of a standard-alphabet base64 character, -1 for any other byte. (Computed, not
 * a table filled on first use: request threads decode at once.) */
static int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* absl::Base64Unescape: standard alphabet, padding optional but, when present, right. */
static int base64_decode(const char *s, size_t n, unsigned char *out, size_t *outlen) {
  size_t pad = 0;
  while (n > 0 && s[n - 1] == '=' && pad < 2) n--, pad++;
  if (pad && (n + pad) % 4) return 0;
  if (n % 4 == 1) return 0;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = base64_value((unsigned char)s[i]);
    if (v < 0) return 0;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc) return 0; /* stray bits in the last character */
  *outlen = o;
  return 1;
}

/* ============================================================ debug text of a value ==== */

#define DEBUG_MAX 256

static void shortest_double(double d, char *buf, size_t cap) {
  /* rapidjson's Writer::Double: shortest digits; 1.0 stays "1.0", exponents like "1e21", "1.5e-7" */
  char tmp[40];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
    if (strtod(tmp, NULL) == d) break;
  }
  /* tmp = "[-]D.DDDe[+-]X" */
  char digits[24];
  int nd = 0, neg = tmp[0] == '-';
  const char *q = tmp + neg;
  for (; *q && *q != 'e'; q++)
    if (*q != '.') digits[nd++] = *q;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  int e10 = atoi(q + 1);
  int k = e10 + 1; /* position of the decimal point */
  char *o = buf;
  size_t left = cap;
#define OUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); if (w_ < 0 || (size_t)w_ >= left) return; o += w_; left -= (size_t)w_; } while (0)
  if (neg) OUT("-");
  if (nd <= k && k <= 21) {
    OUT("%.*s", nd, digits);
    for (int i = nd; i < k; i++) OUT("0");
    OUT(".0");
  } else if (0 < k && k <= 21) {
    OUT("%.*s.%.*s", k, digits, nd - k, digits + k);
  } else if (-6 < k && k <= 0) {
    OUT("0.");
    for (int i = k; i < 0; i++) OUT("0");
    OUT("%.*s", nd, digits);
  } else if (nd == 1) {
    OUT("%ce%d", digits[0], k - 1);
  } else {
    OUT("%c.%.*se%d", digits[0], nd - 1, digits + 1, k - 1);
  }
#undef OUT
}

/* Returns 0 when writing stopped (limit reached or a non-finite number, as rapidjson's Writer). */
static int debug_value(pw *w, const jv *v) {
  if (w->b->len >= DEBUG_MAX || w->depth >= PW_MAX - 1) return 0;
  char buf[48];
  switch (v->type) {
    case J_NULL: pw_raw(w, "null", 4); return 1;
    case J_TRUE: pw_raw(w, "true", 4); return 1;
    case J_FALSE: pw_raw(w, "false", 5); return 1;
    case J_STR: /* cut, unlike rapidjson: error messages stay small */
      pw_str(w, v->s, v->n < DEBUG_MAX ? v->n : DEBUG_MAX);
      return 1;
    case J_NUM:
      if (v->nk == N_INT) snprintf(buf, sizeof buf, "%" PRId64, v->i);
      else if (v->nk == N_UINT) snprintf(buf, sizeof buf, "%" PRIu64, v->ui);
      else if (!isfinite(v->d)) return 0;
      else shortest_double(v->d, buf, sizeof buf);
      pw_raw(w, buf, strlen(buf));
      return 1;
    case J_ARR:
      pw_open(w, 1);
      for (uint32_t i = 0; i < v->n; i++) {
        jv t;
        if (!debug_value(w, jarr_at(v, i, &t))) return 0;
      }
      if (w->b->len >= DEBUG_MAX) return 0;
      pw_close(w);
      return 1;
    default:
      pw_open(w, 0);
      for (uint32_t i = 0; i < v->n; i++) {
        if (w->b->len >= DEBUG_MAX) return 0;
        pw_str(w, jobj_key(v, i)->s, jobj_key(v, i)->n < DEBUG_MAX ? jobj_key(v, i)->n : DEBUG_MAX);
        if (!debug_value(w, jobj_val(v, i))) return 0;
      }
      if (w->b->len >= DEBUG_MAX) return 0;
      pw_close(w);
      return 1;
  }
}

/* JsonValueToDebugString into a static-size buffer the caller frees. */
static char *debug_string(const jv *v) {
  sm_jbuf b = {0};
  pw w = {.b = &b, .single_line = 1};
  debug_value(&w, v);
  if (!b.p) return calloc(1, 1);
  return b.p;
}

static sm_status *type_error(const jv *v, int dtype) {
  char *d = debug_string(v);
  sm_status *s = inval("JSON Value: %s Type: %s is not of expected type: %s", d ? d : "", jtype_name(v),
                       sm__json_dtype_string(dtype));
  free(d);
  return s;
}

static sm_status *format_error(const jv *v, const char *what) {
  char *d = debug_string(v);
  sm_status *s = inval("JSON Value: %s %s", d ? d : "", what);
  free(d);
  return s;
}

/* ================================================================ predict decoding ==== */

/* Values gathered for one input: fixed-size elements in `bytes`, strings as (ptr,len) pairs. */
typedef struct acc {
  const char *alias;
  int dtype;
  int seen;          /* has a first item fixed size and shape */
  int64_t size;      /* values per item */
  int rank;          /* per item */
  int64_t dims[SM_MAX_RANK];
  char *bytes;
  size_t nbytes, capbytes;
  const char **strs;
  size_t *lens;
  int64_t nstr, capstr;
  int64_t count;     /* values so far */
  int64_t max_values; /* what the body can hold at most (a value takes 2 bytes) */
} acc;

static void acc_free(acc *a) {
  free(a->bytes);
  free(a->strs);
  free(a->lens);
}

static sm_status *acc_oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory decoding the request"); }

static int acc_grow_bytes(acc *a, size_t n) {
  if (a->capbytes - a->nbytes >= n) return 1;
  size_t cap = a->capbytes ? a->capbytes : 256;
  while (cap - a->nbytes < n) cap *= 2;
  char *p = realloc(a->bytes, cap);
  if (!p) return 0;
  a->bytes = p;
  a->capbytes = cap;
  return 1;
}

/* Room for all `n` values of a fixed-size input at once, when their number is known: the buffer
 * is then the tensor's size, not up to twice it. Best effort (growing still works). */
static void acc_expect(acc *a, int64_t n) {
  size_t es = a->dtype == SM_STRING ? 0 : sm_dtype_size(a->dtype);
  if (!es || n <= 0 || n > a->max_values || (uint64_t)n > SIZE_MAX / es || a->capbytes >= (size_t)n * es) return;
  char *p = realloc(a->bytes, (size_t)n * es);
  if (p) {
    a->bytes = p;
    a->capbytes = (size_t)n * es;
  }
}

static int acc_add_str(acc *a, const char *s, size_t n) {
  if (a->nstr == a->capstr) {
    int64_t cap = a->capstr ? a->capstr * 2 : 64;
    const char **ns = realloc(a->strs, (size_t)cap * sizeof *ns);
    if (!ns) return 0;
    a->strs = ns;
    size_t *nl = realloc(a->lens, (size_t)cap * sizeof *nl);
    if (!nl) return 0;
    a->lens = nl;
    a->capstr = cap;
  }
  a->strs[a->nstr] = s;
  a->lens[a->nstr] = n;
  a->nstr++;
  return 1;
}

static int is_b64_object(const jv *v) {
  return v->type == J_OBJ && v->n == 1 && jobj_key(v, 0)->n == 3 && !memcmp(jobj_key(v, 0)->s, "b64", 3) &&
         jobj_val(v, 0)->type == J_STR;
}

static sm_status *decode_b64(const jv *v, arena *ar, const char **out, size_t *outlen) {
  if (!is_b64_object(v)) {
    char *d = debug_string(v);
    sm_status *s = inval("JSON Value: %s not formatted correctly for base64 data", d ? d : "");
    free(d);
    return s;
  }
  const jv *sv = jobj_val(v, 0);
  unsigned char *buf = sm__json_arena_alloc(ar, (size_t)sv->n / 4 * 3 + 4);
  if (!buf) return acc_oom();
  if (!base64_decode(sv->s, sv->n, buf, outlen)) return inval("Unable to base64 decode");
  *out = (const char *)buf;
  return NULL;
}

/* AddValueToTensor */
static sm_status *add_value(acc *a, const jv *v) {
  size_t es = sm_dtype_size(a->dtype);
  union {
    float f;
    double d;
    int32_t i32;
    int16_t i16;
    int8_t i8;
    uint8_t u8;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
  } x;
  switch (a->dtype) {
    case SM_FLOAT:
      if (v->type != J_NUM) return type_error(v, a->dtype);
      x.f = (float)j_double(v);
      break;
    case SM_DOUBLE:
      if (v->type != J_NUM) return type_error(v, a->dtype);
      x.d = j_double(v);
      break;
    case SM_INT32:
    case SM_INT16:
    case SM_INT8:
    case SM_UINT8:
      if (!j_is_int(v)) return type_error(v, a->dtype);
      if (a->dtype == SM_INT32) x.i32 = (int32_t)v->i;
      else if (a->dtype == SM_INT16) x.i16 = (int16_t)v->i;
      else if (a->dtype == SM_INT8) x.i8 = (int8_t)v->i;
      else x.u8 = (uint8_t)v->i;
      break;
    case SM_STRING:
      if (v->type != J_STR) return type_error(v, a->dtype);
      if (!acc_add_str(a, v->s, v->n)) return acc_oom();
      a->count++;
      return NULL;
    case SM_INT64:
      if (!j_is_int64(v)) return type_error(v, a->dtype);
      x.i64 = v->i;
      break;
    case SM_BOOL:
      if (v->type != J_TRUE && v->type != J_FALSE) return type_error(v, a->dtype);
      x.u8 = v->type == J_TRUE;
      break;
    case SM_UINT32:
      if (!j_is_uint(v)) return type_error(v, a->dtype);
      x.u32 = (uint32_t)v->i;
      break;
    case SM_UINT64:
      if (!j_is_uint64(v)) return type_error(v, a->dtype);
      x.u64 = v->nk == N_UINT ? v->ui : (uint64_t)v->i;
      break;
    default: {
      char *d = debug_string(v);
      sm_status *s = sm_status_new(SM_UNIMPLEMENTED, "Conversion of JSON Value: %s to type: %s", d ? d : "",
                                   sm__json_dtype_string(a->dtype));
      free(d);
      return s;
    }
  }
  if (!acc_grow_bytes(a, es)) return acc_oom();
  memcpy(a->bytes + a->nbytes, &x, es);
  a->nbytes += es;
  a->count++;
  return NULL;
}

/* GetDenseTensorShape, bounded. */
static sm_status *dense_shape(const jv *v, int *rank, int64_t *dims) {
  jv t;
  *rank = 0;
  while (v->type == J_ARR) {
    if (*rank >= SM_MAX_RANK) return inval("JSON list nested deeper than %d levels", SM_MAX_RANK);
    dims[(*rank)++] = v->n;
    if (!v->n) break;
    v = jarr_at(v, 0, &t);
  }
  return NULL;
}

/* FillTensorProto: values of `v` at `level` of a tensor of shape (rank, dims). */
static sm_status *fill(acc *a, arena *ar, const jv *v, int level, int rank, const int64_t *dims) {
  if (v->type != J_ARR) {
    if (level != rank) {
      char *d = debug_string(v);
      sm_status *s = inval("JSON Value: %s found at incorrect level: %d in the JSON DOM. Expected at level: %d",
                           d ? d : "", level + 1, rank);
      free(d);
      return s;
    }
    if (v->type == J_OBJ) {
      if (a->dtype != SM_STRING) return type_error(v, a->dtype);
      const char *s;
      size_t n;
      sm_status *st = decode_b64(v, ar, &s, &n);
      if (st) return st;
      if (!acc_add_str(a, s, n)) return acc_oom();
      a->count++;
      return NULL;
    }
    return add_value(a, v);
  }
  if (level >= rank) return inval("Encountered list at unexpected level: %d expected < %d", level, rank);
  if ((int64_t)v->n != dims[level])
    return inval("Encountered list at unexpected size: %u at level: %d expected size: %" PRId64, v->n, level,
                 dims[level]);
  for (uint32_t i = 0; i < v->n; i++) {
    jv t;
    sm_status *s = fill(a, ar, jarr_at(v, i, &t), level + 1, rank, dims);
    if (s) return s;
  }
  return NULL;
}

static void shape_string(int rank, const int64_t *dims, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? "," : "", dims[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* AddInstanceItem */
static sm_status *add_instance_item(acc *accs, int nacc, arena *ar, const jv *item, const char *name, size_t namelen,
                                    uint32_t items) {
  acc *a = NULL;
  for (int i = 0; i < nacc; i++)
    if (strlen(accs[i].alias) == namelen && !memcmp(accs[i].alias, name, namelen)) a = &accs[i];
  if (!a) return inval("JSON object: does not have named input: %.*s", (int)namelen, name);
  int rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *s = dense_shape(item, &rank, dims);
  if (s) return s;
  int64_t before = a->count;
  s = fill(a, ar, item, 0, rank, dims);
  if (s) return s;
  int64_t size = a->count - before;
  if (!a->seen) {
    a->seen = 1;
    a->size = size;
    if (items && size <= INT64_MAX / items) acc_expect(a, size * items);
    a->rank = rank;
    memcpy(a->dims, dims, sizeof(int64_t) * (size_t)rank);
  } else if (a->size != size) {
    return inval("Expecting tensor size: %" PRId64 " but got: %" PRId64, a->size, size);
  } else {
    int same = a->rank == rank;
    for (int i = 0; same && i < rank; i++) same = a->dims[i] == dims[i];
    if (!same) {
      char x[512], y[512];
      shape_string(a->rank, a->dims, x, sizeof x);
      shape_string(rank, dims, y, sizeof y);
      return inval("Expecting shape %s but got: %s", x, y);
    }
  }
  return NULL;
}

static int is_element_object(const jv *v) { return v->type == J_OBJ && !is_b64_object(v); }

static sm_status *make_tensor(acc *a, int rank, const int64_t *dims, sm_tensor **out) {
  if (a->dtype != SM_STRING && a->nbytes >= 4096) { /* big: the tensor takes the values' buffer, no copy */
    char *p = a->capbytes > a->nbytes ? realloc(a->bytes, a->nbytes) : a->bytes;
    if (p) {
      a->bytes = p;
      a->capbytes = a->nbytes;
      sm_status *w = sm_tensor_wrap(a->dtype, rank, dims, p, a->nbytes, free, p, out);
      if (!w) {
        a->bytes = NULL;
        a->nbytes = a->capbytes = 0;
        return NULL;
      }
      sm_status_free(w); /* shape and size disagree: the path below says so */
      *out = NULL;
    }
  }
  sm_status *s = sm_tensor_new(a->dtype, rank, dims, out);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(*out);
  if (a->dtype == SM_STRING) {
    if (n != a->nstr) goto mismatch;
    for (int64_t i = 0; i < n; i++) {
      s = sm_tensor_set_string(*out, i, a->strs[i], a->lens[i]);
      if (s) {
        sm_tensor_free(*out);
        *out = NULL;
        return s;
      }
    }
    return NULL;
  }
  if (sm_tensor_nbytes(*out) != a->nbytes) goto mismatch;
  if (a->nbytes) memcpy(sm_tensor_data(*out), a->bytes, a->nbytes);
  return NULL;
mismatch:
  sm_tensor_free(*out);
  *out = NULL;
  return sm_status_new(SM_INTERNAL, "input %s: %" PRId64 " values for its shape", a->alias, a->count);
}

static sm_status *parse_doc(const char *body, size_t len, arena *ar, const jv **doc) {
  if (!len) return inval("JSON Parse error: The document is empty");
  const char *err;
  size_t err_off;
  size_t need, limit = sm__json_dom_limit(len);
  const jv *d = sm__json_read(body, len, ar, limit, &err, &err_off, &need);
  if (!d) {
    if (ar->oom) return acc_oom();
    if (ar->busy)
      return sm_status_new(SM_RESOURCE_EXHAUSTED,
                           "Server busy: decoding the request needs %zu bytes, and requests being decoded hold most "
                           "of the %zu-byte budget; retry",
                           need, (size_t)SM_JSON_DOM_BUDGET);
    if (!err)
      return inval("JSON Parse error: decoding the request needs at least %zu bytes, over the limit of %zu bytes (%d x "
                   "its %zu-byte body + %zu)",
                   need, limit, SM_JSON_DOM_FACTOR, len, SM_JSON_DOM_FLOOR);
    return inval("JSON Parse error: %s at offset: %zu", err ? err : "Invalid value.", err_off);
  }
  if (d->type != J_OBJ) return format_error(d, "Is not object");
  *doc = d;
  return NULL;
}

static sm_status *fill_signature(const jv *doc, char **out) {
  const jv *v = jobj_find(doc, "signature_name");
  if (v && v->type != J_STR)
    return format_error(doc, "not formatted correctly. 'signature_name' key must be a string value.");
  /* TF Serving would look the whole name up and find nothing; cut at the NUL it would name another */
  const char *nul = v ? memchr(v->s, 0, v->n) : NULL;
  if (nul) return inval("'signature_name' has a NUL byte at offset %zu: no signature has such a name", (size_t)(nul - v->s));
  *out = strndup(v ? v->s : "", v ? v->n : 0);
  return *out ? NULL : acc_oom();
}

static int cmp_alias(const void *a, const void *b) {
  return strcmp(((const acc *)a)->alias, ((const acc *)b)->alias);
}

void sm__predict_request_clear(sm_predict_request *r) {
  if (!r) return;
  free(r->signature_name);
  for (int i = 0; i < r->n; i++) {
    free(r->aliases[i]);
    sm_tensor_free(r->tensors[i]);
  }
  free(r->aliases);
  free(r->tensors);
  memset(r, 0, sizeof *r);
}

sm_status *sm__json_parse_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx,
                                 sm_predict_request *out) {
  memset(out, 0, sizeof *out);
  if (sm__json_fast_predict(body, len, fn, ctx, out)) return NULL;
  return sm__json_dom_predict(body, len, fn, ctx, out);
}

sm_status *sm__json_dom_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx,
                                sm_predict_request *out) {
  memset(out, 0, sizeof *out);
  arena ar = {0};
  acc *accs = NULL;
  int nacc = 0;
  const jv *doc = NULL;
  sm_status *s = parse_doc(body, len, &ar, &doc);
  if (s) goto done;
  s = fill_signature(doc, &out->signature_name);
  if (s) goto done;
  const sm_json_input *ins = NULL;
  int nin = 0;
  s = fn(ctx, out->signature_name, &ins, &nin);
  if (s) goto done;
  if (nin <= 0) {
    s = inval("Failed to get input map for signature: %s", out->signature_name[0] ? out->signature_name : "DEFAULT");
    goto done;
  }
  accs = calloc((size_t)nin, sizeof *accs);
  if (!accs) {
    s = acc_oom();
    goto done;
  }
  nacc = nin;
  for (int i = 0; i < nin; i++) {
    accs[i].alias = ins[i].alias;
    accs[i].dtype = ins[i].dtype;
    accs[i].max_values = (int64_t)(len / 2 + 1);
  }
  qsort(accs, (size_t)nacc, sizeof *accs, cmp_alias);
  const jv *inst = jobj_find(doc, "instances");
  const jv *inputs = jobj_find(doc, "inputs");
  if (inst && inputs) {
    s = format_error(doc, "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist ");
    goto done;
  }
  int64_t dims[SM_MAX_RANK + 1];
  if (inst) {
    if (inst->type != J_ARR) {
      s = format_error(doc, "Expecting 'instances' to be an list/array");
      goto done;
    }
    if (!inst->n) {
      s = format_error(doc, "No values in 'instances' array");
      goto done;
    }
    out->format = SM_JSON_ROW;
    jv t0, te;
    if (jarr_at(inst, 0, &t0)->type != J_OBJ && nacc > 1) {
      s = inval("instances is a plain list, but expecting list of objects as multiple input tensors required as "
                "per tensorinfo_map");
      goto done;
    }
    int objects = is_element_object(jarr_at(inst, 0, &t0));
    for (uint32_t e = 0; e < inst->n; e++) {
      const jv *elem = jarr_at(inst, e, &te);
      if (objects) {
        if (!is_element_object(elem)) {
          s = inval("Expecting object but got list at item %u of input list", e);
          goto done;
        }
        for (uint32_t k = 0; k < elem->n; k++) {
          const jv *key = jobj_key(elem, k);
          sm_status *t = add_instance_item(accs, nacc, &ar, jobj_val(elem, k), key->s, key->n, inst->n);
          if (t) {
            s = inval("Failed to process element: %u key: %.*s of 'instances' list. Error: %s: %s", e, (int)key->n,
                      key->s, code_prefix(t), sm_status_message(t));
            sm_status_free(t);
            goto done;
          }
        }
        /* the object's keys must be exactly the signature's inputs */
        int same = 1;
        for (int i = 0; same && i < nacc; i++) {
          size_t al = strlen(accs[i].alias);
          int found = 0;
          for (uint32_t k = 0; k < elem->n && !found; k++)
            found = jobj_key(elem, k)->n == al && !memcmp(jobj_key(elem, k)->s, accs[i].alias, al);
          same = found;
        }
        for (uint32_t k = 0; same && k < elem->n; k++) {
          int found = 0;
          for (int i = 0; i < nacc && !found; i++)
            found = strlen(accs[i].alias) == jobj_key(elem, k)->n &&
                    !memcmp(jobj_key(elem, k)->s, accs[i].alias, jobj_key(elem, k)->n);
          same = found;
        }
        if (!same) {
          sm_jbuf names = {0};
          for (int i = 0; i < nacc; i++) {
            if (i) sm__jbuf_puts(&names, ",");
            sm__jbuf_puts(&names, accs[i].alias);
          }
          char *d = debug_string(elem);
          s = inval("Failed to process element: %u of 'instances' list. JSON object: %s keys must be equal to: %s", e,
                    d ? d : "", names.p ? names.p : "");
          free(d);
          sm__jbuf_free(&names);
          goto done;
        }
      } else {
        if (is_element_object(elem)) {
          s = inval("Expecting value/list but got object at item %u of input list", e);
          goto done;
        }
        sm_status *t = add_instance_item(accs, nacc, &ar, elem, accs[0].alias, strlen(accs[0].alias), inst->n);
        if (t) {
          s = inval("Failed to process element: %u of 'instances' list. Error: %s: %s", e, code_prefix(t),
                    sm_status_message(t));
          sm_status_free(t);
          goto done;
        }
      }
    }
    /* the batch dimension goes in front of each item's shape */
    int nt = 0;
    for (int i = 0; i < nacc; i++) nt += accs[i].seen;
    out->aliases = calloc((size_t)nt + 1, sizeof *out->aliases);
    out->tensors = calloc((size_t)nt + 1, sizeof *out->tensors);
    if (!out->aliases || !out->tensors) {
      s = acc_oom();
      goto done;
    }
    for (int i = 0; i < nacc; i++) {
      if (!accs[i].seen) continue;
      if (accs[i].rank >= SM_MAX_RANK) {
        s = inval("input %s: more than %d dimensions", accs[i].alias, SM_MAX_RANK);
        goto done;
      }
      dims[0] = inst->n;
      memcpy(dims + 1, accs[i].dims, sizeof(int64_t) * (size_t)accs[i].rank);
      out->aliases[out->n] = strdup(accs[i].alias);
      if (!out->aliases[out->n]) {
        s = acc_oom();
        goto done;
      }
      s = make_tensor(&accs[i], accs[i].rank + 1, dims, &out->tensors[out->n]);
      out->n++;
      if (s) goto done;
    }
  } else if (inputs) {
    out->format = SM_JSON_COLUMNAR;
    out->aliases = calloc((size_t)nacc + 1, sizeof *out->aliases);
    out->tensors = calloc((size_t)nacc + 1, sizeof *out->tensors);
    if (!out->aliases || !out->tensors) {
      s = acc_oom();
      goto done;
    }
    int single = inputs->type != J_OBJ || is_b64_object(inputs);
    if (single && nacc > 1) {
      s = inval("inputs is a plain value/list, but expecting an object as multiple input tensors required as per "
                "tensorinfo_map");
      goto done;
    }
    for (int i = 0; i < (single ? 1 : nacc); i++) {
      const jv *item = inputs;
      if (!single) {
        item = jobj_find(inputs, accs[i].alias);
        if (!item) {
          s = inval("Missing named input: %s in 'inputs' object.", accs[i].alias);
          goto done;
        }
      }
      int rank;
      s = dense_shape(item, &rank, dims);
      if (s) goto done;
      int64_t nv = 1;
      for (int d = 0; d < rank && nv >= 0; d++) nv = dims[d] && nv > INT64_MAX / dims[d] ? -1 : nv * dims[d];
      acc_expect(&accs[i], nv);
      s = fill(&accs[i], &ar, item, 0, rank, dims);
      if (s) goto done;
      out->aliases[out->n] = strdup(accs[i].alias);
      if (!out->aliases[out->n]) {
        s = acc_oom();
        goto done;
      }
      s = make_tensor(&accs[i], rank, dims, &out->tensors[out->n]);
      out->n++;
      if (s) goto done;
    }
  } else {
    s = inval("Missing 'inputs' or 'instances' key");
  }
done:
  for (int i = 0; i < nacc; i++) acc_free(&accs[i]);
  free(accs);
  sm__json_arena_free(&ar);
  if (s) sm__predict_request_clear(out);
  return s;
}

/* ============================================================ classify / regress ==== */

enum { K_NONE, K_BYTES, K_FLOAT, K_INT64 };

typedef struct feat {
  const char *name;
  size_t namelen;
  int kind;
  float *f;
  int64_t *i;
  const char **b;
  size_t *bl;
  size_t n, cap;
} feat;

static void feat_free(feat *f) {
  free(f->f);
  free(f->i);
  free(f->b);
  free(f->bl);
  memset(f, 0, sizeof *f);
}

static int feat_grow(feat *f) {
  if (f->n < f->cap) return 1;
  size_t cap = f->cap ? f->cap * 2 : 8;
  if (f->kind == K_FLOAT) {
    float *p = realloc(f->f, cap * sizeof *p);
    if (!p) return 0;
    f->f = p;
  } else if (f->kind == K_INT64) {
    int64_t *p = realloc(f->i, cap * sizeof *p);
    if (!p) return 0;
    f->i = p;
  } else {
    const char **p = realloc(f->b, cap * sizeof *p);
    if (!p) return 0;
    f->b = p;
    size_t *q = realloc(f->bl, cap * sizeof *q);
    if (!q) return 0;
    f->bl = q;
  }
  f->cap = cap;
  return 1;
}

static sm_status *kind_error(const feat *f) {
  const char *k = f->kind == K_BYTES ? "bytes" : f->kind == K_FLOAT ? "float" : f->kind == K_INT64 ? "int64" : "UNKNOWN";
  return inval("Unexpected element type in feature: %.*s expecting type: %s", (int)f->namelen, f->name, k);
}

static sm_status *feat_set_kind(feat *f, int kind) {
  if (f->kind != K_NONE && f->kind != kind) return kind_error(f);
  if (f->kind == K_NONE) f->kind = kind;
  if (!feat_grow(f)) return acc_oom();
  return NULL;
}

/* AddValueToFeature */
static sm_status *add_feature_value(feat *f, const jv *v, arena *ar) {
  sm_status *s;
  switch (v->type) {
    case J_NULL:
    case J_ARR:
      return inval("Feature: %.*s has element with unexpected JSON type: %s", (int)f->namelen, f->name,
                   jtype_name(v));
    case J_TRUE:
    case J_FALSE:
      if ((s = feat_set_kind(f, K_INT64))) return s;
      f->i[f->n++] = v->type == J_TRUE;
      return NULL;
    case J_OBJ: {
      if (!is_b64_object(v))
        return inval("Feature: %.*s has element with unexpected JSON type: %s", (int)f->namelen, f->name,
                     jtype_name(v));
      if ((s = feat_set_kind(f, K_BYTES))) return s;
      const char *p;
      size_t n;
      if ((s = decode_b64(v, ar, &p, &n))) return s;
      f->b[f->n] = p;
      f->bl[f->n++] = n;
      return NULL;
    }
    case J_STR:
      if ((s = feat_set_kind(f, K_BYTES))) return s;
      f->b[f->n] = v->s;
      f->bl[f->n++] = v->n;
      return NULL;
    default:
      if (v->nk == N_DBL) {
        if ((s = feat_set_kind(f, K_FLOAT))) return s;
        f->f[f->n++] = (float)v->d;
        return NULL;
      }
      if (f->kind != K_NONE && f->kind != K_INT64) return kind_error(f);
      if (v->nk == N_UINT)
        return inval("Feature: %.*s has uint64_t element. Only int64_t is supported.", (int)f->namelen, f->name);
      if ((s = feat_set_kind(f, K_INT64))) return s;
      f->i[f->n++] = v->i;
      return NULL;
  }
}

/* MakeExampleFromJsonObject, adding to `e` (context features first, then the example's). */
static sm_status *add_json_features(sm_example *e, const jv *obj, arena *ar) {
  if (obj->type != J_OBJ) return inval("Example must be JSON object but got JSON %s", jtype_name(obj));
  for (uint32_t k = 0; k < obj->n; k++) {
    const jv *key = jobj_key(obj, k), *content = jobj_val(obj, k);
    feat f = {.name = key->s, .namelen = key->n};
    sm_status *s = NULL;
    if (content->type == J_ARR) {
      for (uint32_t i = 0; i < content->n && !s; i++) {
        jv t;
        s = add_feature_value(&f, jarr_at(content, i, &t), ar);
      }
    } else {
      s = add_feature_value(&f, content, ar);
    }
    if (!s && memchr(key->s, 0, key->n)) s = inval("Feature name with a NUL byte");
    if (!s) {
      if (f.kind == K_FLOAT) s = sm_example_add_floats(e, key->s, f.f, f.n);
      else if (f.kind == K_INT64) s = sm_example_add_int64s(e, key->s, f.i, f.n);
      else if (f.kind == K_BYTES) s = sm_example_add_bytes(e, key->s, f.b, f.bl, f.n);
      /* a feature with no values has no kind: nothing a parser could read, so it is left out */
    }
    feat_free(&f);
    if (s) return s;
  }
  return NULL;
}

void sm__examples_request_clear(sm_examples_request *r) {
  if (!r) return;
  free(r->signature_name);
  for (int i = 0; i < r->n; i++) free(r->examples[i]);
  free(r->examples);
  free(r->lens);
  memset(r, 0, sizeof *r);
}

sm_status *sm__json_parse_examples(const char *body, size_t len, sm_examples_request *out) {
  memset(out, 0, sizeof *out);
  arena ar = {0};
  const jv *doc = NULL;
  sm_example *e = NULL;
  sm_status *s = parse_doc(body, len, &ar, &doc);
  if (s) goto done;
  s = fill_signature(doc, &out->signature_name);
  if (s) goto done;
  const jv *ctx = jobj_find(doc, "context");
  if (ctx) {
    /* checked once up front, as TF Serving fills the context before the examples */
    s = sm_example_new(&e);
    if (!s) s = add_json_features(e, ctx, &ar);
    sm_example_free(e);
    e = NULL;
    if (s) goto done;
  }
  const jv *ex = jobj_find(doc, "examples");
  if (!ex) {
    s = format_error(doc, "When method is classify, key 'examples' is expected and was not found");
    goto done;
  }
  if (ex->type != J_ARR) {
    s = format_error(doc, "Expecting 'examples' value to be an list/array");
    goto done;
  }
  if (!ex->n) {
    s = format_error(doc, "'examples' value is an empty array");
    goto done;
  }
  out->examples = calloc(ex->n, sizeof *out->examples);
  out->lens = calloc(ex->n, sizeof *out->lens);
  if (!out->examples || !out->lens) {
    s = acc_oom();
    goto done;
  }
  for (uint32_t i = 0; i < ex->n; i++) {
    s = sm_example_new(&e);
    if (!s && ctx) s = add_json_features(e, ctx, &ar);
    jv t;
    if (!s) s = add_json_features(e, jarr_at(ex, i, &t), &ar);
    if (!s) s = sm_example_serialize(e, &out->examples[i], &out->lens[i]);
    sm_example_free(e);
    e = NULL;
    if (s) goto done;
    out->n++;
  }
done:
  sm__json_arena_free(&ar);
  if (s) sm__examples_request_clear(out);
  return s;
}

/* ================================================================ response writers ==== */

static int ends_with_bytes(const char *name) {
  size_t n = strlen(name);
  return n >= 6 && !memcmp(name + n - 6, "_bytes", 6);
}

static sm_status *write_scalar(pw *w, const sm_tensor *t, int64_t i, int as_bytes) {
  const void *d = sm_tensor_data(t);
  char buf[32];
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: pw_decimal(w, ((const float *)d)[i], 1); return NULL;
    case SM_DOUBLE: pw_decimal(w, ((const double *)d)[i], 0); return NULL;
    case SM_INT32: snprintf(buf, sizeof buf, "%" PRId32, ((const int32_t *)d)[i]); break;
    case SM_INT16: snprintf(buf, sizeof buf, "%d", ((const int16_t *)d)[i]); break;
    case SM_INT8: snprintf(buf, sizeof buf, "%d", ((const int8_t *)d)[i]); break;
    case SM_UINT8: snprintf(buf, sizeof buf, "%u", ((const uint8_t *)d)[i]); break;
    case SM_INT64: snprintf(buf, sizeof buf, "%" PRId64, ((const int64_t *)d)[i]); break;
    case SM_UINT32: snprintf(buf, sizeof buf, "%" PRIu32, ((const uint32_t *)d)[i]); break;
    case SM_UINT64: snprintf(buf, sizeof buf, "%" PRIu64, ((const uint64_t *)d)[i]); break;
    case SM_BOOL: snprintf(buf, sizeof buf, "%s", ((const uint8_t *)d)[i] ? "true" : "false"); break;
    case SM_STRING: {
      size_t n;
      const char *s = sm_tensor_string(t, i, &n);
      if (!s) s = "", n = 0;
      if (as_bytes) {
        pw_open(w, 0);
        pw_str(w, "b64", 3);
        pw_prefix(w);
        jbuf_putc(w->b, '"');
        sm__jbuf_base64(w->b, (const unsigned char *)s, n);
        jbuf_putc(w->b, '"');
        pw_close(w);
      } else {
        pw_str(w, s, n);
      }
      return NULL;
    }
    default:
      return inval("Failed to write JSON value for tensor type: %s", sm__json_dtype_string(sm_tensor_dtype(t)));
  }
  pw_raw(w, buf, strlen(buf));
  return NULL;
}

/* AddTensorValues: dims from `dim` on, starting at element *off. */
static sm_status *write_values(pw *w, const sm_tensor *t, int as_bytes, int dim, int64_t *off) {
  int rank = sm_tensor_rank(t);
  const int64_t *dims = sm_tensor_dims(t);
  if (dim > rank - 1) {
    sm_status *s = write_scalar(w, t, *off, as_bytes);
    (*off)++;
    return s;
  }
  pw_open(w, 1);
  for (int64_t i = 0; i < dims[dim]; i++) {
    sm_status *s;
    if (dim == rank - 1) {
      s = write_scalar(w, t, *off, as_bytes);
      (*off)++;
    } else {
      s = write_values(w, t, as_bytes, dim + 1, off);
    }
    if (s) return s;
  }
  pw_close(w);
  return NULL;
}

static sm_status *check_writable(const sm_tensor *t) {
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: case SM_DOUBLE: case SM_INT32: case SM_INT16: case SM_INT8: case SM_UINT8: case SM_INT64:
    case SM_UINT32: case SM_UINT64: case SM_BOOL: case SM_STRING:
      return NULL;
    default:
      return inval("Failed to write JSON value for tensor type: %s", sm__json_dtype_string(sm_tensor_dtype(t)));
  }
}

sm_status *sm__json_write_tensors(sm_jbuf *b, const char *const *names, sm_tensor *const *tensors, int n,
                                 int format) {
  if (n <= 0) return inval("Cannot convert empty tensor map to JSON");
  if (format != SM_JSON_ROW && format != SM_JSON_COLUMNAR) return inval("Invalid request format");
  for (int i = 0; i < n; i++) {
    sm_status *s = check_writable(tensors[i]);
    if (s) return s;
  }
  size_t start = b->len;
  pw w = {.b = b};
  sm_status *s = NULL;
  if (format == SM_JSON_ROW) {
    int64_t batch = -1;
    for (int i = 0; i < n; i++) {
      if (sm_tensor_rank(tensors[i]) == 0) return inval("Tensor name: %s has no shape information ", names[i]);
      int64_t cur = sm_tensor_dims(tensors[i])[0];
      if (batch >= 0 && batch != cur)
        return inval("Tensor name: %s has inconsistent batch size: %" PRId64 " expecting: %" PRId64, names[i], cur,
                     batch);
      batch = cur;
    }
    int64_t *offs = calloc((size_t)n, sizeof *offs);
    if (!offs) return sm_status_new(SM_NO_MEMORY, "out of memory writing the response");
    pw_open(&w, 0);
    pw_str(&w, "predictions", 11);
    pw_open(&w, 1);
    int objects = n > 1;
    for (int64_t item = 0; item < batch && !s; item++) {
      if (objects) pw_open(&w, 0);
      w.single_line = 1;
      for (int i = 0; i < n && !s; i++) {
        if (objects) pw_str(&w, names[i], strlen(names[i]));
        s = write_values(&w, tensors[i], ends_with_bytes(names[i]) && sm_tensor_dtype(tensors[i]) == SM_STRING, 1,
                         &offs[i]);
      }
      w.single_line = 0;
      if (objects) pw_close(&w);
    }
    pw_close(&w);
    pw_close(&w);
    free(offs);
  } else {
    pw_open(&w, 0);
    pw_str(&w, "outputs", 7);
    int objects = n > 1;
    if (objects) pw_open(&w, 0);
    for (int i = 0; i < n && !s; i++) {
      if (objects) pw_str(&w, names[i], strlen(names[i]));
      int64_t off = 0;
      s = write_values(&w, tensors[i], ends_with_bytes(names[i]) && sm_tensor_dtype(tensors[i]) == SM_STRING, 0,
                       &off);
    }
    if (objects) pw_close(&w);
    pw_close(&w);
  }
  if (s) {
    b->len = start;
    if (b->p) b->p[start] = 0;
    return s;
  }
  if (b->oom) return sm_status_new(SM_NO_MEMORY, "out of memory writing the response");
  return NULL;
}

sm_status *sm__json_write_classification(sm_jbuf *b, int64_t n, int64_t k, const sm_tensor *labels,
                                        const float *scores) {
  if (n <= 0) return inval("Cannot convert empty ClassificationResults to JSON");
  pw w = {.b = b};
  pw_open(&w, 0);
  pw_str(&w, "results", 7);
  pw_open(&w, 1);
  for (int64_t i = 0; i < n; i++) {
    w.single_line = 1;
    pw_open(&w, 1);
    for (int64_t c = 0; c < k; c++) {
      pw_open(&w, 1);
      size_t ln = 0;
      const char *l = labels ? sm_tensor_string(labels, i * k + c, &ln) : NULL;
      pw_str(&w, l ? l : "", l ? ln : 0);
      pw_decimal(&w, scores ? scores[i * k + c] : 0.0f, 1);
      pw_close(&w);
    }
    pw_close(&w);
    w.single_line = 0;
  }
  pw_close(&w);
  pw_close(&w);
  if (b->oom) return sm_status_new(SM_NO_MEMORY, "out of memory writing the response");
  return NULL;
}

sm_status *sm__json_write_regression(sm_jbuf *b, const float *values, int64_t n) {
  if (n <= 0) return inval("Cannot convert empty RegressionResults to JSON");
  pw w = {.b = b};
  pw_open(&w, 0);
  pw_str(&w, "results", 7);
  w.single_line = 1;
  pw_open(&w, 1);
  for (int64_t i = 0; i < n; i++) pw_decimal(&w, values[i], 1);
  pw_close(&w);
  w.single_line = 0;
  pw_close(&w);
  if (b->oom) return sm_status_new(SM_NO_MEMORY, "out of memory writing the response");
  return NULL;
}

void sm__json_write_error(sm_jbuf *b, const char *msg) {
  pw w = {.b = b};
  pw_open(&w, 0);
  pw_str(&w, "error", 5);
  pw_str(&w, msg, strlen(msg));
  pw_close(&w);
}
