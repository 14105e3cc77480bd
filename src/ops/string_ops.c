/* string_ops.c - the string kernels tf.strings and TextVectorization export, with TensorFlow's
 * semantics (its CPU kernels are the reference): StringLower, StringUpper, StringStrip, Substr,
 * StringToNumber, ReduceJoin, StringToHashBucketFast (FarmHash Fingerprint64) and
 * StringToHashBucketStrong (SipHash-2-4), StringToHashBucket (TF's legacy Hash64, a MurmurHash2-64
 * variant seeded 0xDECAFCAFFE), Fingerprint (farmhash64 of each row's bytes) and DecodeCSV (TF's field
 * scanner: quotes, select_cols, na_value, defaults; numbers parsed as StringToNumber). StringLength lives in string.c, StringJoin in io.c; the
 * regex ops need RE2 and are not here. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/checked.h"
#include "base/farmhash.h"
#include "runtime/kernel.h"

/* ---- shared -------------------------------------------------------------------------------- */

static sm_status *want_strings(sm_kctx *ctx, int i, const sm_tensor **t) {
  *t = sm__kctx_input(ctx, i);
  if (sm_tensor_dtype(*t) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be a string tensor, not %s", i,
                         sm_dtype_name(sm_tensor_dtype(*t)));
  return NULL;
}

/* A string-valued attr (absent: dflt) copied into a NUL-padded buffer the state owns. */
typedef struct str_attr {
  char *s;
  size_t len;
} str_attr;

static sm_status *read_str_attr(const sm_node *node, const char *name, const char *dflt, str_attr *out) {
  const char *s = dflt;
  size_t len = strlen(dflt);
  if (sm__node_attr(node, name)) {
    sm_status *st = sm__node_attr_string(node, name, &s, &len);
    if (st) return st;
  }
  out->s = sm__alloc(len + 1);
  if (!out->s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory reading attr %s", name);
  if (len) memcpy(out->s, s, len);
  out->s[len] = 0;
  out->len = len;
  return NULL;
}

static int attr_is(const str_attr *a, const char *v) { return a->len == strlen(v) && !memcmp(a->s, v, a->len); }

/* ---- StringLower / StringUpper / StringStrip: one string in, one out ----------------------- */

enum { MAP_LOWER, MAP_UPPER, MAP_STRIP };

typedef struct map_state {
  int kind;
  int utf8; /* encoding "utf-8": Latin-1 and Greek/Cyrillic letters too, not only ASCII */
} map_state;

static sm_status *map_prepare_kind(const sm_node *node, void **state, int kind) {
  map_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->kind = kind;
  st->utf8 = 0;
  if (kind != MAP_STRIP) {
    str_attr enc;
    sm_status *s = read_str_attr(node, "encoding", "", &enc);
    if (s) {
      sm__free(st);
      return s;
    }
    st->utf8 = attr_is(&enc, "utf-8");
    int ok = st->utf8 || enc.len == 0;
    sm__free(enc.s);
    if (!ok) {
      sm__free(st);
      return sm_status_new(SM_INVALID_ARGUMENT, "encoding must be \"\" or \"utf-8\"");
    }
  }
  *state = st;
  return NULL;
}
static sm_status *lower_prepare(const sm_node *n, void **s) { return map_prepare_kind(n, s, MAP_LOWER); }
static sm_status *upper_prepare(const sm_node *n, void **s) { return map_prepare_kind(n, s, MAP_UPPER); }
static sm_status *strip_prepare(const sm_node *n, void **s) { return map_prepare_kind(n, s, MAP_STRIP); }

/* Simple one-to-one case mapping of a code point outside ASCII, for the alphabets whose mapping is
 * an offset: Latin-1, Greek, Cyrillic. Others are left as they are. */
static uint32_t case_map(uint32_t c, int upper) {
  if (!upper) {
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3AB && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
      return c + 0x20;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  } else {
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
      return c - 0x20;
    if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  }
  return c;
}

/* Maps s[0..n) into out (room for 3n bytes: under "utf-8" an ill-formed byte becomes U+FFFD, as
 * ICU converts); the result length. */
static size_t map_string(const map_state *st, const unsigned char *s, size_t n, unsigned char *out) {
  if (st->kind == MAP_STRIP) { /* absl::StripAsciiWhitespace */
    size_t a = 0, b = n;
    while (a < b && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r'))) a++;
    while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= '\t' && s[b - 1] <= '\r'))) b--;
    if (b > a) memcpy(out, s + a, b - a);
    return b - a;
  }
  int upper = st->kind == MAP_UPPER;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c < 0x80 || !st->utf8) {
      out[o++] = upper ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c);
      i++;
      continue;
    }
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    size_t k = 1;
    while (len && k < len && i + k < n && (s[i + k] & 0xC0) == 0x80) k++;
    if (!len || k < len) { /* ill-formed: U+FFFD */
      out[o++] = 0xEF, out[o++] = 0xBF, out[o++] = 0xBD;
      i += len ? k : 1;
      continue;
    }
    if (len == 2) {
      uint32_t cp = case_map((uint32_t)(c & 0x1F) << 6 | (s[i + 1] & 0x3F), upper);
      if (cp < 0x80 || cp >= 0x800) cp = (uint32_t)(c & 0x1F) << 6 | (s[i + 1] & 0x3F);
      out[o++] = (unsigned char)(0xC0 | cp >> 6);
      out[o++] = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
      memcpy(out + o, s + i, len);
      o += len;
    }
    i += len;
  }
  return o;
}

static sm_status *map_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *x;
  sm_status *s = want_strings(ctx, 0, &x);
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  unsigned char *buf = NULL;
  for (int64_t i = 0; !s && i < sm_tensor_num_elements(x); i++) {
    size_t n;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(x, i, &n);
    unsigned char *nb = n > SIZE_MAX / 3 ? NULL : sm__kctx_scratch_realloc(ctx, buf, 3 * n + 1, &s);
    if (!nb && !s) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "string too long");
    if (!nb) break;
    buf = nb;
    s = sm_tensor_set_string(y, i, buf, map_string(state, p, n, buf));
  }
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

/* ---- Substr ---------------------------------------------------------------------------------- */

typedef struct substr_state {
  int utf8;
} substr_state;

static sm_status *substr_prepare(const sm_node *node, void **state) {
  str_attr unit;
  sm_status *s = read_str_attr(node, "unit", "BYTE", &unit);
  if (s) return s;
  int utf8 = attr_is(&unit, "UTF8_CHAR"), ok = utf8 || attr_is(&unit, "BYTE");
  if (!ok) s = sm_status_new(SM_INVALID_ARGUMENT, "unit must be BYTE or UTF8_CHAR, not '%s'", unit.s);
  sm__free(unit.s);
  if (s) return s;
  substr_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->utf8 = utf8;
  *state = st;
  return NULL;
}

static int is_trail(unsigned char c) { return (c & 0xC0) == 0x80; }

static int forward_chars(const unsigned char *s, int64_t size, int64_t n, int64_t *pos) {
  int64_t counted = 0;
  while (counted < n && *pos < size) {
    do ++*pos;
    while (*pos < size && is_trail(s[*pos]));
    counted++;
  }
  return counted == n;
}

static int back_chars(const unsigned char *s, int64_t n, int64_t *pos) {
  int64_t counted = 0;
  while (counted < n && *pos > 0) {
    do --*pos;
    while (is_trail(s[*pos]) && *pos > 0);
    counted++;
  }
  return counted == n;
}

/* TF's UpdatePosAndLenForUtf8: character pos/len into bytes; 0 when pos is out of range. */
static int utf8_pos_len(const unsigned char *s, int64_t size, int64_t *pos, int64_t *len) {
  if (*pos >= 0) {
    int64_t p = 0;
    if (!forward_chars(s, size, *pos, &p)) return 0;
    int64_t e = p;
    forward_chars(s, size, *len, &e);
    *pos = p;
    *len = e - p;
    return 1;
  }
  int64_t end = size, skip = -*pos - *len;
  if (skip < 0) skip = 0;
  if (!back_chars(s, skip, &end)) return 0;
  int64_t start = end;
  if (!back_chars(s, -*pos - skip, &start)) return 0;
  *pos = start;
  *len = end - start;
  return 1;
}

static int64_t int_elem(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
}

static sm_status *substr_compute(const void *state, sm_kctx *ctx) {
  const substr_state *st = state;
  const sm_tensor *x, *pt = sm__kctx_input(ctx, 1), *lt = sm__kctx_input(ctx, 2);
  sm_status *s = want_strings(ctx, 0, &x);
  if (s) return s;
  char a[128], b[128];
  int pr = sm_tensor_rank(pt), xr = sm_tensor_rank(x);
  if ((sm_tensor_dtype(pt) != SM_INT32 && sm_tensor_dtype(pt) != SM_INT64) || sm_tensor_dtype(lt) != sm_tensor_dtype(pt))
    return sm_status_new(SM_INVALID_ARGUMENT, "pos and len must be both int32 or both int64");
  if (pr != sm_tensor_rank(lt) || memcmp(sm_tensor_dims(pt), sm_tensor_dims(lt), (size_t)pr * sizeof(int64_t)))
    return sm_status_new(SM_INVALID_ARGUMENT, "pos and len should have the same shape, got: %s vs. %s",
                         sm_shape_str(pr, sm_tensor_dims(pt), a, sizeof a),
                         sm_shape_str(sm_tensor_rank(lt), sm_tensor_dims(lt), b, sizeof b));
  if (sm_tensor_num_elements(pt) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "received empty tensor pos_tensor");
  /* The output shape: the input's when pos/len are scalars or of its shape, else broadcast. */
  int same = pr == 0 || (pr == xr && !memcmp(sm_tensor_dims(pt), sm_tensor_dims(x), (size_t)xr * sizeof(int64_t)));
  int r = same ? xr : (xr > pr ? xr : pr);
  int64_t dims[SM_MAX_RANK], xs[SM_MAX_RANK], ps[SM_MAX_RANK];
  if (!same) {
    int64_t xstride = 1, pstride = 1;
    for (int d = r - 1; d >= 0; d--) {
      int64_t xd = d - (r - xr) >= 0 ? sm_tensor_dims(x)[d - (r - xr)] : 1;
      int64_t pd = d - (r - pr) >= 0 ? sm_tensor_dims(pt)[d - (r - pr)] : 1;
      if (xd != pd && xd != 1 && pd != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", sm_shape_str(xr, sm_tensor_dims(x), a, sizeof a),
                             sm_shape_str(pr, sm_tensor_dims(pt), b, sizeof b));
      dims[d] = xd == 1 ? pd : xd;
      xs[d] = xd == 1 ? 0 : xstride;
      ps[d] = pd == 1 ? 0 : pstride;
      xstride *= xd;
      pstride *= pd;
    }
    if (r > 2) return sm_status_new(SM_UNIMPLEMENTED, "Substr broadcast not implemented for %d dimensions", r);
  }
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, r, same ? sm_tensor_dims(x) : dims, &y);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(y), cols = r == 2 ? dims[1] : 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t xi = i, pi = pr == 0 ? 0 : i;
    if (!same) {
      int64_t row = r == 2 ? i / cols : 0, col = r == 2 ? i % cols : i;
      xi = r == 2 ? row * xs[0] + col * xs[1] : col * xs[0];
      pi = r == 2 ? row * ps[0] + col * ps[1] : col * ps[0];
    }
    size_t size;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(x, xi, &size);
    int64_t pos = int_elem(pt, pi), len = int_elem(lt, pi), bpos = pos, blen = len;
    if (sm_tensor_dtype(pt) == SM_INT32) { /* TF's arithmetic is in T */
      bpos = (int32_t)bpos;
      blen = (int32_t)blen;
    }
    if (st->utf8) {
      if (!utf8_pos_len(p, (int64_t)size, &bpos, &blen))
        return sm_status_new(SM_INVALID_ARGUMENT, "pos %" PRId64 " out of range for string at index %" PRId64, pos,
                             same || r < 2 ? i : i / cols);
    } else {
      if (bpos < 0) bpos += (int64_t)size;
      if (bpos < 0 || bpos > (int64_t)size) {
        if (!same && r == 2)
          return sm_status_new(SM_INVALID_ARGUMENT, "pos %" PRId64 " out of range for string b'%.*s' at index (%" PRId64 ", %" PRId64 ")",
                               pos, (int)size, (const char *)p, i / cols, i % cols);
        return sm_status_new(SM_INVALID_ARGUMENT, "pos %" PRId64 " out of range for string b'%.*s' at index %" PRId64, pos,
                             (int)size, (const char *)p, i);
      }
    }
    /* StringPiece::substr(pos, n): n is unsigned, so a negative length means "to the end". */
    uint64_t room = (uint64_t)size - (uint64_t)bpos, want = (uint64_t)blen;
    s = sm_tensor_set_string(y, i, p + bpos, (size_t)(want < room ? want : room));
    if (s) return s;
  }
  return NULL;
}

/* ---- StringToNumber ------------------------------------------------------------------------- */

typedef struct to_number_state {
  int dtype;
} to_number_state;

static sm_status *to_number_prepare(const sm_node *node, void **state) {
  int dt = SM_FLOAT;
  if (sm__node_attr(node, "out_type")) {
    sm_status *s = sm__node_attr_type(node, "out_type", &dt);
    if (s) return s;
  }
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "out_type must be float, double, int32 or int64, not %s", sm_dtype_name(dt));
  to_number_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->dtype = dt;
  *state = st;
  return NULL;
}

static int is_ws(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int ascii_ieq(const char *a, const char *b) { /* b lower case */
  for (; *a && *b; a++, b++)
    if ((*a >= 'A' && *a <= 'Z' ? *a + 32 : *a) != *b) return 0;
  return *a == *b;
}

/* TF's safe_strto64: optional whitespace, sign, decimal digits, whitespace; no overflow. */
static int parse_int(const char *p, size_t n, int64_t lo, int64_t hi, int64_t *out) {
  size_t i = 0;
  while (i < n && is_ws(p[i])) i++;
  while (n > i && is_ws(p[n - 1])) n--;
  int neg = 0;
  if (i < n && (p[i] == '-' || p[i] == '+')) neg = p[i++] == '-';
  if (i == n) return 0;
  uint64_t v = 0, lim = neg ? (uint64_t)-(lo + 1) + 1 : (uint64_t)hi;
  for (; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return 0;
    unsigned d = (unsigned)(p[i] - '0');
    if (v > (lim - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return 1;
}

/* TF's safe_strtod / safe_strtof: double-conversion with leading/trailing spaces allowed; "inf",
 * "nan" (any case, signed), decimal and exponent forms; nothing else (no hex). outf set: the float
 * itself, rounded once by strtof (as TF's StringToFloat; a double rounded to float would round
 * twice, and a subnormal would flush in a run's mode, base/fpmode.h: TF parses it in software). */
static int parse_float(const char *p, size_t n, double *out, float *outf) {
  size_t i = 0;
  while (i < n && is_ws(p[i])) i++;
  while (n > i && is_ws(p[n - 1])) n--;
  if (i == n || n - i > 400) return 0;
  char buf[402];
  memcpy(buf, p + i, n - i);
  buf[n - i] = 0;
  const char *q = buf + (buf[0] == '-' || buf[0] == '+');
  if (ascii_ieq(q, "inf") || ascii_ieq(q, "infinity")) {
    *out = buf[0] == '-' ? -INFINITY : INFINITY;
    if (outf) *outf = (float)*out;
    return 1;
  }
  if (ascii_ieq(q, "nan")) {
    *out = buf[0] == '-' ? -NAN : NAN;
    if (outf) *outf = (float)*out;
    return 1;
  }
  for (const char *c = q; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') || *c == '.' || *c == 'x' ||
          *c == 'X' || *c == '-' || *c == '+'))
      return 0; /* hex integers are accepted (double-conversion's ALLOW_HEX), hex floats not */
  char *end;
  if (outf) *outf = strtof(buf, &end);
  else *out = strtod(buf, &end);
  return end == buf + (n - i);
}

static sm_status *to_number_compute(const void *state, sm_kctx *ctx) {
  const to_number_state *st = state;
  const sm_tensor *x;
  sm_status *s = want_strings(ctx, 0, &x);
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, st->dtype, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (s) return s;
  void *d = sm_tensor_data(y);
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
    size_t n;
    const char *p = sm_tensor_string(x, i, &n);
    int ok;
    double f = 0;
    float ff = 0;
    int64_t v;
    switch (st->dtype) {
    case SM_FLOAT:
      ok = parse_float(p, n, &f, &ff);
      ((float *)d)[i] = ff;
      break;
    case SM_DOUBLE:
      ok = parse_float(p, n, &f, NULL);
      ((double *)d)[i] = f;
      break;
    case SM_INT32:
      ok = parse_int(p, n, INT32_MIN, INT32_MAX, &v);
      ((int32_t *)d)[i] = (int32_t)v;
      break;
    default:
      ok = parse_int(p, n, INT64_MIN, INT64_MAX, &v);
      ((int64_t *)d)[i] = v;
    }
    if (!ok) return sm_status_new(SM_INVALID_ARGUMENT, "StringToNumberOp could not correctly convert string: %.*s", (int)n, p);
  }
  return NULL;
}

/* ---- ReduceJoin ----------------------------------------------------------------------------- */

typedef struct reduce_join_state {
  int keep_dims;
  str_attr sep;
} reduce_join_state;

static void reduce_join_release(void *p) {
  reduce_join_state *st = p;
  if (st) sm__free(st->sep.s);
  sm__free(st);
}

static sm_status *reduce_join_prepare(const sm_node *node, void **state) {
  reduce_join_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->keep_dims = 0;
  st->sep.s = NULL;
  sm_status *s = sm__node_attr(node, "keep_dims") ? sm__node_attr_bool(node, "keep_dims", &st->keep_dims) : NULL;
  if (!s) s = read_str_attr(node, "separator", "", &st->sep);
  if (s) {
    reduce_join_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *reduce_join_compute(const void *state, sm_kctx *ctx) {
  const reduce_join_state *st = state;
  const sm_tensor *x, *ax = sm__kctx_input(ctx, 1);
  sm_status *s = want_strings(ctx, 0, &x);
  if (s) return s;
  if (sm_tensor_dtype(ax) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "reduction_indices must be int32");
  int r = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int reduced[SM_MAX_RANK] = {0}, order[SM_MAX_RANK], nr = 0;
  for (int64_t k = 0; k < sm_tensor_num_elements(ax); k++) {
    int32_t a = ((const int32_t *)sm_tensor_data(ax))[k];
    int64_t d = a < 0 ? (int64_t)a + r : a;
    if (d < 0 || d >= r)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction dimension %d for input with %d dimension(s)", (int)a, r);
    if (reduced[d]) return sm_status_new(SM_INVALID_ARGUMENT, "Duplicate reduction dimension %d", (int)a);
    reduced[d] = 1;
    order[nr++] = (int)d;
  }
  /* Output dims: kept ones (reduced ones as 1 with keep_dims); strides of kept and reduced dims.
   * As TF, the strings of a group are joined with the first listed axis varying fastest. */
  int64_t od[SM_MAX_RANK], kd[SM_MAX_RANK], ks[SM_MAX_RANK], rd[SM_MAX_RANK], rs[SM_MAX_RANK], stride = 1;
  int orank = 0, nk = 0;
  int64_t strides[SM_MAX_RANK];
  for (int d = r - 1; d >= 0; d--) strides[d] = stride, stride *= xd[d];
  int64_t group = 1;
  for (int k = 0; k < nr; k++) rd[k] = xd[order[k]], rs[k] = strides[order[k]], group *= rd[k];
  for (int d = 0; d < r; d++) {
    if (reduced[d]) {
      if (st->keep_dims) od[orank++] = 1;
    } else {
      kd[nk] = xd[d], ks[nk++] = strides[d], od[orank++] = xd[d];
    }
  }
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, orank, od, &y);
  if (s) return s;
  char *buf = NULL;
  size_t cap = 0;
  for (int64_t o = 0; o < sm_tensor_num_elements(y) && !s; o++) {
    int64_t base = 0, rem = o;
    for (int k = nk - 1; k >= 0; k--) base += (rem % kd[k]) * ks[k], rem /= kd[k];
    size_t at = 0;
    for (int64_t g = 0; g < group && !s; g++) {
      int64_t off = base;
      rem = g;
      for (int k = 0; k < nr; k++) off += (rem % rd[k]) * rs[k], rem /= rd[k];
      size_t len, need;
      const char *p = sm_tensor_string(x, off, &len);
      if (sm__add_size(at, len, &need) || sm__add_size(need, g ? st->sep.len : 0, &need) || need > SM_MAX_TENSOR_BYTES) {
        s = sm_status_new(SM_OUT_OF_RANGE, "joined string is too long");
        break;
      }
      if (need > cap) {
        size_t ncap = need > 2 * cap ? need : 2 * cap;
        char *nb = sm__kctx_scratch_realloc(ctx, buf, ncap, &s);
        if (!nb) break;
        buf = nb, cap = ncap;
      }
      if (g && st->sep.len) memcpy(buf + at, st->sep.s, st->sep.len), at += st->sep.len;
      if (len) memcpy(buf + at, p, len), at += len;
    }
    if (!s) s = sm_tensor_set_string(y, o, buf ? buf : "", at);
  }
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

/* ---- StringToHashBucketFast / StringToHashBucketStrong -------------------------------------- */

typedef struct hash_state {
  int64_t buckets;
  int strong;
  uint64_t key[2];
} hash_state;

static sm_status *hash_prepare_kind(const sm_node *node, void **state, int strong) {
  int64_t b = 0;
  sm_status *s = sm__node_attr_int(node, "num_buckets", &b);
  if (s) return s;
  if (b < 1) return sm_status_new(SM_INVALID_ARGUMENT, "num_buckets must be at least 1, not %" PRId64, b);
  hash_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->buckets = b;
  st->strong = strong;
  if (strong == 1) {
    const int64_t *k;
    size_t n;
    s = sm__node_attr_ints(node, "key", &k, &n);
    if (!s && n != 2) s = sm_status_new(SM_INVALID_ARGUMENT, "Key must have 2 elements");
    if (s) {
      sm__free(st);
      return s;
    }
    st->key[0] = (uint64_t)k[0], st->key[1] = (uint64_t)k[1];
  }
  *state = st;
  return NULL;
}
static sm_status *hash_fast_prepare(const sm_node *n, void **s) { return hash_prepare_kind(n, s, 0); }
static sm_status *hash_legacy_prepare(const sm_node *n, void **s) { return hash_prepare_kind(n, s, 2); }
static sm_status *hash_strong_prepare(const sm_node *n, void **s) { return hash_prepare_kind(n, s, 1); }

static uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

#define SIP_ROUND(v0, v1, v2, v3)                                                                              \
  do {                                                                                                         \
    v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32);                                                  \
    v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;                                                                     \
    v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;                                                                     \
    v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32);                                                  \
  } while (0)

/* SipHash-2-4 of s with the 128-bit key (k0, k1), as highwayhash's SipHash that TF's
 * StrongKeyedHash calls. */
static uint64_t siphash24(const uint64_t key[2], const unsigned char *s, size_t n) {
  uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL, v1 = key[1] ^ 0x646f72616e646f6dULL;
  uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL, v3 = key[1] ^ 0x7465646279746573ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m = 0;
    for (int b = 7; b >= 0; b--) m = m << 8 | s[i + (size_t)b];
    v3 ^= m;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t m = (uint64_t)(n & 0xff) << 56;
  for (size_t b = 0; i + b < n; b++) m |= (uint64_t)s[i + b] << (8 * b);
  v3 ^= m;
  SIP_ROUND(v0, v1, v2, v3);
  SIP_ROUND(v0, v1, v2, v3);
  v0 ^= m;
  v2 ^= 0xff;
  for (int r = 0; r < 4; r++) SIP_ROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

/* TensorFlow's Hash64 (tensorflow/core/lib/hash/hash.cc, what StringToHashBucket calls): 64-bit
 * MurmurHash2 over little-endian 8-byte words, the tail bytes folded high to low, seed 0xDECAFCAFFE. */
static uint64_t tf_hash64(const unsigned char *p, size_t n) {
  const uint64_t m = 0xc6a4a7935bd1e995ULL;
  const int r = 47;
  uint64_t h = 0xDECAFCAFFEULL ^ ((uint64_t)n * m);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; b--) k = k << 8 | p[b];
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (n) {
    for (size_t b = n; b-- > 0;) h ^= (uint64_t)p[b] << (8 * b);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

static sm_status *hash_compute(const void *state, sm_kctx *ctx) {
  const hash_state *st = state;
  const sm_tensor *x;
  sm_status *s = want_strings(ctx, 0, &x);
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_INT64, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (s) return s;
  int64_t *out = sm_tensor_data(y);
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
    size_t n;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(x, i, &n);
    uint64_t h = st->strong == 1 ? siphash24(st->key, p, n) : st->strong == 2 ? tf_hash64(p, n) : sm__fingerprint64(p, n);
    out[i] = (int64_t)(h % (uint64_t)st->buckets);
  }
  return NULL;
}

/* ---- DecodeCSV ------------------------------------------------------------------------------ */

typedef struct csv_state {
  int *types; /* OUT_TYPE */
  size_t ntypes;
  int64_t *cols; /* select_cols, ncols = 0: all */
  size_t ncols;
  char delim;
  int quote;
  str_attr na;
} csv_state;

static void csv_release(void *p) {
  csv_state *st = p;
  if (!st) return;
  sm__free(st->cols);
  sm__free(st->types);
  sm__free(st->na.s);
  sm__free(st);
}

static sm_status *csv_prepare(const sm_node *node, void **state) {
  csv_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->quote = 1;
  const int *ty = NULL;
  sm_status *s = sm__node_attr_types(node, "OUT_TYPE", &ty, &st->ntypes);
  if (!s && !(st->types = sm__alloc((st->ntypes + 1) * sizeof *st->types))) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  if (!s && st->ntypes) memcpy(st->types, ty, st->ntypes * sizeof *ty);
  for (size_t i = 0; !s && i < st->ntypes; i++)
    if (st->types[i] != SM_FLOAT && st->types[i] != SM_DOUBLE && st->types[i] != SM_INT32 && st->types[i] != SM_INT64 &&
        st->types[i] != SM_STRING)
      s = sm_status_new(SM_INVALID_ARGUMENT, "DecodeCSV: OUT_TYPE %s is not one of float, double, int32, int64, string",
                        sm_dtype_name(st->types[i]));
  if (!s && sm__node_attr(node, "use_quote_delim")) s = sm__node_attr_bool(node, "use_quote_delim", &st->quote);
  if (!s && sm__node_attr(node, "select_cols")) {
    const int64_t *c;
    s = sm__node_attr_ints(node, "select_cols", &c, &st->ncols);
    if (!s && st->ncols) {
      if (!(st->cols = sm__alloc(st->ncols * sizeof *st->cols))) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
      else memcpy(st->cols, c, st->ncols * sizeof *c);
    }
  }
  if (!s && st->ncols && st->ncols != st->ntypes) s = sm_status_new(SM_INVALID_ARGUMENT, "select_cols should match output size");
  for (size_t i = 1; !s && i < st->ncols; i++)
    if (st->cols[i - 1] >= st->cols[i]) s = sm_status_new(SM_INVALID_ARGUMENT, "select_cols should be strictly increasing indices");
  if (!s && st->ncols && st->cols[0] < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "select_cols should be non-negative indices");
  str_attr d = {0};
  if (!s) s = read_str_attr(node, "field_delim", ",", &d);
  if (!s && d.len != 1) s = sm_status_new(SM_INVALID_ARGUMENT, "field_delim should be only 1 char");
  if (!s) st->delim = d.s[0];
  sm__free(d.s);
  if (!s) s = read_str_attr(node, "na_value", "", &st->na);
  if (s) {
    csv_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* One field found by csv_fields: where its text is; quoted ones have "" to unescape. */
typedef struct csv_field {
  const char *p;
  size_t n;
  int quoted;
} csv_field;

/* TF's DecodeCSVOp::ExtractFields over record r: the selected fields into f (at most max), their
 * count in *nf (max + 1: more than expected). */
static sm_status *csv_fields(const csv_state *st, const char *in, size_t n, csv_field *f, size_t max, size_t *nf) {
  size_t at = 0, parsed = 0, sel = 0, k = 0;
  int all = st->ncols == 0;
  *nf = 0;
  if (n == 0) return NULL;
  while (at < n) {
    if (in[at] == '\n' || in[at] == '\r') {
      at++;
      continue;
    }
    int include = all || (sel < st->ncols && st->cols[sel] == (int64_t)parsed), quoted = 0;
    if (st->quote && in[at] == '"') quoted = 1, at++;
    size_t start = at;
    if (!quoted) {
      while (at < n && in[at] != st->delim) {
        if ((st->quote && in[at] == '"') || in[at] == '\n' || in[at] == '\r')
          return sm_status_new(SM_INVALID_ARGUMENT, "Unquoted fields cannot have quotes/CRLFs inside");
        at++;
      }
      if (include && k < max) f[k] = (csv_field){in + start, at - start, 0};
      at++;
    } else {
      while (at < n - 1 && (in[at] != '"' || in[at + 1] != st->delim)) {
        if (in[at] != '"') {
          at++;
        } else {
          if (in[at + 1] != '"') return sm_status_new(SM_INVALID_ARGUMENT, "Quote inside a string has to be escaped by another quote");
          at += 2;
        }
      }
      if (!(at < n && in[at] == '"' && (at == n - 1 || in[at + 1] == st->delim)))
        return sm_status_new(SM_INVALID_ARGUMENT, "Quoted field has to end with quote followed by delim or end");
      if (include && k < max) f[k] = (csv_field){in + start, at - start, 1};
      at += 2;
    }
    parsed++;
    if (include) {
      k++;
      sel++;
      if (!all && sel == st->ncols) {
        *nf = k;
        return NULL;
      }
    }
  }
  int include = all || (sel < st->ncols && st->cols[sel] == (int64_t)parsed);
  if (include && in[n - 1] == st->delim) {
    if (k < max) f[k] = (csv_field){in + n, 0, 0};
    k++;
  }
  *nf = k;
  return NULL;
}

static sm_status *csv_compute(const void *state, sm_kctx *ctx) {
  const csv_state *st = state;
  const sm_tensor *rec;
  sm_status *s = want_strings(ctx, 0, &rec);
  if (s) return s;
  size_t nt = st->ntypes;
  if ((size_t)sm__kctx_num_inputs(ctx) != nt + 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "DecodeCSV: %zu record_defaults for %zu output types", (size_t)sm__kctx_num_inputs(ctx) - 1, nt);
  for (size_t i = 0; i < nt; i++) {
    const sm_tensor *d = sm__kctx_input(ctx, (int)i + 1);
    if (sm_tensor_rank(d) > 1) return sm_status_new(SM_INVALID_ARGUMENT, "Each record default should be at most rank 1");
    if (sm_tensor_num_elements(d) >= 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "There should only be 1 default per field but field %zu has %" PRId64, i,
                           sm_tensor_num_elements(d));
    if (sm_tensor_dtype(d) != st->types[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "record_defaults[%zu] is %s, OUT_TYPE says %s", i,
                           sm_dtype_name(sm_tensor_dtype(d)), sm_dtype_name(st->types[i]));
  }
  sm_tensor **out = sm__kctx_scratch(ctx, (nt + 1) * sizeof *out, &s);
  csv_field *f = out ? sm__kctx_scratch(ctx, (nt + 1) * sizeof *f, &s) : NULL;
  if (!f) return s;
  for (size_t i = 0; i < nt; i++)
    if ((s = sm__kctx_alloc_output(ctx, (int)i, st->types[i], sm_tensor_rank(rec), sm_tensor_dims(rec), &out[i]))) return s;
  char *buf = NULL;
  size_t cap = 0;
  for (int64_t r = 0; r < sm_tensor_num_elements(rec) && !s; r++) {
    size_t n, nf;
    const char *in = sm_tensor_string(rec, r, &n);
    if ((s = csv_fields(st, in, n, f, nt, &nf))) break;
    if (nf != nt) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Expect %zu fields but have %zu in record %" PRId64, nt, nf, r);
      break;
    }
    for (size_t c = 0; c < nt && !s; c++) {
      const char *p = f[c].p;
      size_t len = f[c].n;
      if (f[c].quoted) { /* "" -> " */
        if (len > cap) {
          char *nb = sm__kctx_scratch_realloc(ctx, buf, len, &s);
          if (!nb) break;
          buf = nb, cap = len;
        }
        size_t m = 0;
        for (size_t k = 0; k < len; k++) {
          buf[m++] = p[k];
          if (p[k] == '"') k++;
        }
        p = buf, len = m;
      }
      const sm_tensor *dflt = sm__kctx_input(ctx, (int)c + 1);
      int missing = len == 0 || (len == st->na.len && !memcmp(p, st->na.s, len));
      if (missing && sm_tensor_num_elements(dflt) != 1) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "Field %zu is required but missing in record %" PRId64 "!", c, r);
        break;
      }
      int t = st->types[c], ok = 1;
      void *d = sm_tensor_data(out[c]);
      if (t == SM_STRING) {
        if (missing) {
          size_t dl;
          const char *dv = sm_tensor_string(dflt, 0, &dl);
          s = sm_tensor_set_string(out[c], r, dv, dl);
        } else {
          s = sm_tensor_set_string(out[c], r, p, len);
        }
        continue;
      }
      if (missing) {
        size_t es = sm_tensor_nbytes(dflt);
        memcpy((char *)d + (size_t)r * es, sm_tensor_data(dflt), es);
        continue;
      }
      double fv = 0;
      float ff = 0;
      int64_t iv = 0;
      const char *what = "float";
      if (t == SM_FLOAT) ok = parse_float(p, len, &fv, &ff), ((float *)d)[r] = ff;
      else if (t == SM_DOUBLE) ok = parse_float(p, len, &fv, NULL), ((double *)d)[r] = fv, what = "double";
      else if (t == SM_INT32) ok = parse_int(p, len, INT32_MIN, INT32_MAX, &iv), ((int32_t *)d)[r] = (int32_t)iv, what = "int32";
      else ok = parse_int(p, len, INT64_MIN, INT64_MAX, &iv), ((int64_t *)d)[r] = iv, what = "int64";
      if (!ok)
        s = sm_status_new(SM_INVALID_ARGUMENT, "Field %zu in record %" PRId64 " is not a valid %s: %.*s", c, r, what,
                          (int)(len > 200 ? 200 : len), p);
    }
  }
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

/* ---- Fingerprint ---------------------------------------------------------------------------- */

static void put_fp(uint8_t *o, uint64_t h) {
  for (int j = 0; j < 8; j++, h >>= 8) o[j] = (uint8_t)(h & 0xff);
}

/* data [d0, ...] -> uint8 [d0, 8]: farmhash64 of each row's bytes (little-endian output). A row of
 * several strings is hashed as the bytes of its strings' fingerprints, one string alone as itself. */
static sm_status *fingerprint_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mt = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(mt) != SM_STRING || sm_tensor_rank(mt) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "`method` should be a scalar string");
  size_t ml;
  const char *meth = sm_tensor_string(mt, 0, &ml);
  if (ml != 10 || memcmp(meth, "farmhash64", 10))
    return sm_status_new(SM_INVALID_ARGUMENT, "Unsupported fingerprint method: %.*s", (int)(ml > 64 ? 64 : ml), meth);
  if (sm_tensor_rank(x) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "`data` should have at least one dimension: []");
  int64_t d0 = sm_tensor_dims(x)[0], n = sm_tensor_num_elements(x), d1 = d0 ? n / d0 : 0;
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_UINT8, 2, (int64_t[]){d0, 8}, &y);
  if (s) return s;
  uint8_t *out = sm_tensor_data(y);
  if (sm_tensor_dtype(x) == SM_STRING) {
    uint8_t *tmp = d1 > 1 ? sm__kctx_scratch(ctx, (size_t)d1 * 8, &s) : NULL;
    if (s) return s;
    for (int64_t i = 0; i < d0; i++) {
      if (d1 == 1 || d1 == 0) {
        size_t len = 0;
        const char *p = d1 ? sm_tensor_string(x, i, &len) : "";
        put_fp(out + i * 8, sm__fingerprint64(p, len));
        continue;
      }
      for (int64_t j = 0; j < d1; j++) {
        size_t len;
        const char *p = sm_tensor_string(x, i * d1 + j, &len);
        put_fp(tmp + j * 8, sm__fingerprint64(p, len));
      }
      put_fp(out + i * 8, sm__fingerprint64(tmp, (size_t)d1 * 8));
    }
    sm__kctx_scratch_free(ctx, tmp);
    return NULL;
  }
  const uint8_t *p = sm_tensor_data(x);
  if (!p || sm_tensor_dtype(x) == SM_RESOURCE)
    return sm_status_new(SM_INVALID_ARGUMENT, "Fingerprint of a %s tensor is not supported", sm_dtype_name(sm_tensor_dtype(x)));
  size_t es = n ? sm_tensor_nbytes(x) / (size_t)n : 0;
  for (int64_t i = 0; i < d0; i++)
    put_fp(out + i * 8, sm__fingerprint64(p + (size_t)i * (size_t)d1 * es, (size_t)d1 * es));
  return NULL;
}

const sm_kernel sm_kernels_string_ops[] = {
    {"StringLower", lower_prepare, map_compute, sm__free, 0},
    {"StringUpper", upper_prepare, map_compute, sm__free, 0},
    {"StringStrip", strip_prepare, map_compute, sm__free, 0},
    {"Substr", substr_prepare, substr_compute, sm__free, 0},
    {"StringToNumber", to_number_prepare, to_number_compute, sm__free, 0},
    {"ReduceJoin", reduce_join_prepare, reduce_join_compute, reduce_join_release, 0},
    {"StringToHashBucketFast", hash_fast_prepare, hash_compute, sm__free, 0},
    {"StringToHashBucketStrong", hash_strong_prepare, hash_compute, sm__free, 0},
    {"StringToHashBucket", hash_legacy_prepare, hash_compute, sm__free, 0},
    {"Fingerprint", NULL, fingerprint_compute, NULL, 0},
    {"DecodeCSV", csv_prepare, csv_compute, csv_release, 0},
    {0},
};
