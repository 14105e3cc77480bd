/* text.c - the text kernels TextVectorization and tf.strings export, with TensorFlow's semantics
 * (its CPU kernels are the reference): StringSplitV2 (Python's str.split, whitespace runs for an
 * empty sep, maxsplit), StringSplit (v1: bytes, or any byte of the delimiter; skip_empty), StringNGrams (padding, preserve_short_sequences), AsString (precision,
 * scientific, shortest, width, fill: TF's printf format) and UnsortedSegmentJoin. The Unicode ops
 * are in unicode.c, the regex ones in regex.c. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/array_internal.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

/* A string attr copied into the state (absent: dflt). */
static sm_status *dup_attr(const sm_node *node, const char *name, const char *dflt, char **out, size_t *len) {
  const char *s = dflt;
  size_t n = strlen(dflt);
  if (sm__node_attr(node, name)) {
    sm_status *st = sm__node_attr_string(node, name, &s, &n);
    if (st) return st;
  }
  *out = sm__alloc(n + 1);
  if (!*out) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory reading attr %s", name);
  if (n) memcpy(*out, s, n);
  (*out)[n] = 0;
  *len = n;
  return NULL;
}

static int64_t int_attr(const sm_node *node, const char *name, int64_t dflt, sm_status **s) {
  int64_t v = dflt;
  if (!*s && sm__node_attr(node, name)) *s = sm__node_attr_int(node, name, &v);
  return v;
}

static int bool_attr(const sm_node *node, const char *name, sm_status **s) {
  int v = 0;
  if (!*s && sm__node_attr(node, name)) *s = sm__node_attr_bool(node, name, &v);
  return v;
}

/* ---- StringSplitV2 --------------------------------------------------------------------------- */

typedef struct split_state {
  int64_t maxsplit;
} split_state;

static sm_status *split_prepare(const sm_node *node, void **state) {
  sm_status *s = NULL;
  int64_t m = int_attr(node, "maxsplit", -1, &s);
  if (s) return s;
  split_state *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->maxsplit = m;
  *state = st;
  return NULL;
}

/* The first occurrence of sep[0..sn) (sn > 0) in s[0..n), or NULL. */
static const char *find_sep(const char *s, size_t n, const char *sep, size_t sn) {
  for (size_t i = 0; i + sn <= n; i++)
    if (s[i] == sep[0] && !memcmp(s + i, sep, sn)) return s + i;
  return NULL;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Python's str.split as TF's SplitV2 has it: the tokens of s[0..n) as (offset, length) pairs into
 * tok (NULL: count only); the count. */
static int64_t split_one(const char *s, size_t n, const char *sep, size_t sn, int64_t maxsplit, int64_t *tok) {
  int64_t k = 0, split = 0;
#define TOK(off, len) (tok ? (tok[2 * k] = (int64_t)(off), tok[2 * k + 1] = (int64_t)(len)) : 0, k++)
  if (maxsplit == 0) {
    TOK(0, n);
    return k;
  }
  size_t i = 0;
  if (sn == 0) {
    while (i < n && is_space((unsigned char)s[i])) i++;
    while (i < n) {
      size_t a = i;
      while (i < n && !is_space((unsigned char)s[i])) i++;
      TOK(a, i - a);
      while (i < n && is_space((unsigned char)s[i])) i++;
      if (maxsplit > 0 && ++split == maxsplit) {
        TOK(i, n - i);
        return k;
      }
    }
    return k;
  }
  for (;;) {
    const char *p = find_sep(s + i, n - i, sep, sn);
    if (!p) break;
    size_t at = (size_t)(p - s);
    TOK(i, at - i);
    i = at + sn;
    if (maxsplit > 0 && ++split == maxsplit) break;
  }
  TOK(i, n - i);
#undef TOK
  return k;
}

/* How one string is cut: SplitV2's (sep, maxsplit) or v1 StringSplit's (any byte of sep, skip_empty). */
typedef struct split_args {
  const char *sep;
  size_t sn;
  int64_t maxsplit;
  int v1, skip;
} split_args;

static int64_t split1_one(const char *s, size_t n, const char *d, size_t dn, int skip, int64_t *tok);

/* The (offset, length) tokens of s[0..n) into tok (NULL: count only); the count. */
static int64_t split_any(const char *s, size_t n, const split_args *a, int64_t *tok) {
  return a->v1 ? split1_one(s, n, a->sep, a->sn, a->skip, tok) : split_one(s, n, a->sep, a->sn, a->maxsplit, tok);
}

/* Both splits' outputs from a vector x of strings: the SparseTensor (indices [total, 2], values,
 * dense shape [batch, widest row]), counted first, then filled. */
static sm_status *split_emit(sm_kctx *ctx, const sm_tensor *x, const split_args *a) {
  int64_t b = sm_tensor_dims(x)[0], total = 0, widest = 0;
  for (int64_t i = 0; i < b; i++) {
    size_t n;
    const char *p = sm_tensor_string(x, i, &n);
    int64_t k = split_any(p, n, a, NULL);
    total += k;
    if (k > widest) widest = k;
  }
  sm_tensor *idx, *vals, *shape;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, 2}, &idx);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_STRING, 1, &total, &vals);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){2}, &shape);
  if (s) return s;
  int64_t *ip = sm_tensor_data(idx), *shp = sm_tensor_data(shape);
  shp[0] = b, shp[1] = widest;
  int64_t *tok = widest ? sm__kctx_scratch(ctx, (size_t)widest * 2 * sizeof(int64_t), &s) : NULL;
  if (s) return s;
  int64_t c = 0;
  for (int64_t i = 0; i < b && !s; i++) {
    size_t n;
    const char *p = sm_tensor_string(x, i, &n);
    int64_t k = split_any(p, n, a, tok);
    for (int64_t j = 0; j < k && !s; j++, c++) {
      ip[2 * c] = i, ip[2 * c + 1] = j;
      s = sm_tensor_set_string(vals, c, p + tok[2 * j], (size_t)tok[2 * j + 1]);
    }
  }
  sm__kctx_scratch_free(ctx, tok);
  return s;
}

static sm_status *split_compute(const void *state, sm_kctx *ctx) {
  const split_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *sp = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(x) != SM_STRING || sm_tensor_dtype(sp) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and sep must be string tensors");
  if (sm_tensor_rank(x) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a vector, got shape: %s", tx_shape_of(x).s);
  if (sm_tensor_rank(sp) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "sep must be a scalar, got shape: %s", tx_shape_of(sp).s);
  split_args a = {0};
  a.sep = sm_tensor_string(sp, 0, &a.sn);
  a.maxsplit = st->maxsplit;
  return split_emit(ctx, x, &a);
}

/* ---- StringSplit (v1: tf.strings.bytes_split, tf.compat.v1.string_split) ---------------------- */

/* skip_empty (default true) in the state pointer's own int. */
static sm_status *split1_prepare(const sm_node *node, void **state) {
  int v = 1;
  if (sm__node_attr(node, "skip_empty")) {
    sm_status *s = sm__node_attr_bool(node, "skip_empty", &v);
    if (s) return s;
  }
  int *st = sm__alloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *st = v;
  *state = st;
  return NULL;
}

/* TF's v1 split: an empty delimiter gives every byte; otherwise every byte of the delimiter is a
 * separator (absl::ByAnyChar), empty tokens dropped when skip_empty. (offset, length) pairs into
 * tok (NULL: count only); the count. */
static int64_t split1_one(const char *s, size_t n, const char *d, size_t dn, int skip, int64_t *tok) {
  int64_t k = 0;
  if (n == 0) return 0; /* an empty string has no tokens, empty ones allowed or not */
  if (dn == 0) {
    for (size_t i = 0; i < n; i++, k++)
      if (tok) tok[2 * k] = (int64_t)i, tok[2 * k + 1] = 1;
    return k;
  }
  size_t a = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && !memchr(d, s[i], dn)) continue;
    if (!(skip && i == a)) {
      if (tok) tok[2 * k] = (int64_t)a, tok[2 * k + 1] = (int64_t)(i - a);
      k++;
    }
    a = i + 1;
  }
  return k;
}

static sm_status *split1_compute(const void *state, sm_kctx *ctx) {
  int skip = *(const int *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *dl = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(x) != SM_STRING || sm_tensor_dtype(dl) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and delimiter must be string tensors");
  if (sm_tensor_rank(x) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a vector, got shape: %s", tx_shape_of(x).s);
  if (sm_tensor_rank(dl) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "delimiter must be a scalar, got shape: %s", tx_shape_of(dl).s);
  split_args a = {0};
  a.sep = sm_tensor_string(dl, 0, &a.sn);
  a.v1 = 1, a.skip = skip;
  return split_emit(ctx, x, &a);
}

/* ---- StringNGrams ---------------------------------------------------------------------------- */

typedef struct ngram_state {
  char *sep, *lpad, *rpad;
  size_t sep_len, lpad_len, rpad_len;
  int64_t *widths;
  size_t nwidths;
  int64_t pad_width;
  int preserve_short;
} ngram_state;

static void ngram_release(void *p) {
  ngram_state *st = p;
  if (!st) return;
  sm__free(st->sep), sm__free(st->lpad), sm__free(st->rpad), sm__free(st->widths);
  sm__free(st);
}

static sm_status *ngram_prepare(const sm_node *node, void **state) {
  ngram_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  sm_status *s = dup_attr(node, "separator", " ", &st->sep, &st->sep_len);
  if (!s) s = dup_attr(node, "left_pad", "", &st->lpad, &st->lpad_len);
  if (!s) s = dup_attr(node, "right_pad", "", &st->rpad, &st->rpad_len);
  st->pad_width = int_attr(node, "pad_width", 0, &s);
  st->preserve_short = bool_attr(node, "preserve_short_sequences", &s);
  const int64_t *w = NULL;
  size_t nw = 0;
  if (!s && sm__node_attr(node, "ngram_widths")) s = sm__node_attr_ints(node, "ngram_widths", &w, &nw);
  if (!s) {
    st->widths = sm__alloc(nw * sizeof *w + 1);
    if (!st->widths) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    else if (nw) memcpy(st->widths, w, nw * sizeof *w);
    st->nwidths = nw;
  }
  if (!s && (st->pad_width > INT32_MAX || st->pad_width < INT32_MIN))
    s = sm_status_new(SM_INVALID_ARGUMENT, "pad_width %" PRId64 " is out of range", st->pad_width);
  for (size_t i = 0; !s && i < nw; i++)
    if (w[i] > INT32_MAX) s = sm_status_new(SM_INVALID_ARGUMENT, "ngram_widths[%zu] %" PRId64 " is too large", i, w[i]);
  if (s) {
    ngram_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static int64_t ng_pad(const ngram_state *st, int64_t width) {
  int64_t p = st->pad_width < 0 ? width - 1 : st->pad_width;
  return p < width - 1 ? p : width - 1;
}

static int64_t ng_count(const ngram_state *st, int64_t len, int64_t width) {
  int64_t n = len + 2 * ng_pad(st, width) - width + 1;
  return n > 0 ? n : 0;
}

/* TF's CreateNgrams: num ngrams of `width` over data[0..) into out[0..num). */
static sm_status *ng_make(const ngram_state *st, sm_kctx *ctx, const sm_tensor *data, int64_t d0, sm_tensor *out,
                          int64_t o0, int64_t num, int64_t width, tx_buf *b) {
  int64_t pad = ng_pad(st, width);
  sm_status *s = NULL;
  for (int64_t g = 0; g < num && !s; g++) {
    int64_t left = pad - g > 0 ? pad - g : 0, right = pad - (num - (g + 1)) > 0 ? pad - (num - (g + 1)) : 0;
    int64_t ntok = width - (left + right), start = left > 0 ? 0 : g - pad;
    /* its size first (TF computes it in an int): a width of 2^31 must fail, not fill the memory */
    uint64_t size = 0, part;
    int over = __builtin_mul_overflow((uint64_t)left, (uint64_t)(st->lpad_len + st->sep_len), &size) ||
               __builtin_mul_overflow((uint64_t)right, (uint64_t)(st->rpad_len + st->sep_len), &part) ||
               __builtin_add_overflow(size, part, &size) ||
               __builtin_mul_overflow((uint64_t)(ntok > 0 ? ntok : 0), (uint64_t)st->sep_len, &part) ||
               __builtin_add_overflow(size, part, &size);
    for (int64_t k = 0; k < ntok && !over && size <= INT32_MAX; k++) {
      size_t n;
      sm_tensor_string(data, d0 + start + k, &n);
      over = __builtin_add_overflow(size, (uint64_t)n, &size);
    }
    if (over || size > INT32_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "an ngram of width %" PRId64 " would be over 2^31 bytes", width);
    if ((s = sm__kctx_charge_check(ctx, (size_t)size, "an ngram"))) return s;
    b->len = 0;
    for (int64_t k = 0; k < left && !s; k++) {
      s = tx_put(ctx, b, st->lpad, st->lpad_len);
      if (!s) s = tx_put(ctx, b, st->sep, st->sep_len);
    }
    for (int64_t k = 0; k < ntok && !s; k++) {
      size_t n;
      const char *p = sm_tensor_string(data, d0 + start + k, &n);
      if (k) s = tx_put(ctx, b, st->sep, st->sep_len);
      if (!s) s = tx_put(ctx, b, p, n);
    }
    for (int64_t k = 0; k < right && !s; k++) {
      if (ntok > 0 || k > 0) s = tx_put(ctx, b, st->sep, st->sep_len);
      if (!s) s = tx_put(ctx, b, st->rpad, st->rpad_len);
    }
    if (!s) s = sm_tensor_set_string(out, o0 + g, b->p ? b->p : "", b->len);
  }
  return s;
}

static sm_status *ngram_compute(const void *state, sm_kctx *ctx) {
  const ngram_state *st = state;
  const sm_tensor *data = sm__kctx_input(ctx, 0), *splits = sm__kctx_input(ctx, 1);
  for (size_t i = 0; i < st->nwidths; i++)
    if (st->widths[i] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "ngram_widths must contain positive values");
  if (sm_tensor_dtype(data) != SM_STRING || !tx_is_index(splits))
    return sm_status_new(SM_INVALID_ARGUMENT, "data must be strings and data_splits int32 or int64");
  int64_t nd = sm_tensor_num_elements(data), ns = sm_tensor_num_elements(splits);
  if (ns > 0) {
    int64_t prev = tx_int(splits, 0);
    if (prev != 0) return sm_status_new(SM_INVALID_ARGUMENT, "First split value must be 0, got %" PRId64, prev);
    for (int64_t i = 1; i < ns; i++) {
      int64_t v = tx_int(splits, i);
      if (v < prev || v > nd)
        return sm_status_new(SM_INVALID_ARGUMENT, "Invalid split value %" PRId64 ", must be in [%" PRId64 ", %" PRId64 "]",
                             v, prev, nd);
      prev = v;
    }
    if (prev != nd)
      return sm_status_new(SM_INVALID_ARGUMENT, "Last split value must be data size. Expected %" PRId64 ", got %" PRId64,
                           nd, prev);
  }
  sm_tensor *osplits, *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 1, sm_tensor_dtype(splits), sm_tensor_rank(splits), sm_tensor_dims(splits), &osplits);
  if (s) return s;
  int64_t nb = ns - 1;
  if (nd == 0 || ns == 0) return sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(data), sm_tensor_dims(data), &out);
  int64_t acc = 0;
  tx_set_int(osplits, 0, 0);
  for (int64_t i = 1; i <= nb; i++) {
    int64_t len = tx_int(splits, i) - tx_int(splits, i - 1), n = 0;
    for (size_t w = 0; w < st->nwidths; w++) n += ng_count(st, len, st->widths[w]);
    if (st->preserve_short && len > 0 && n == 0) n = 1;
    if (__builtin_add_overflow(acc, n, &acc) || (sm_tensor_dtype(splits) == SM_INT32 && acc > INT32_MAX))
      return sm_status_new(SM_INVALID_ARGUMENT, "too many ngrams");
    tx_set_int(osplits, i, acc);
  }
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &acc, &out);
  tx_buf b = {0};
  for (int64_t i = 0; i < nb && !s; i++) {
    int64_t d0 = tx_int(splits, i), len = tx_int(splits, i + 1) - d0, o0 = tx_int(osplits, i), o = o0;
    for (size_t w = 0; w < st->nwidths && !s; w++) {
      int64_t n = ng_count(st, len, st->widths[w]);
      s = ng_make(st, ctx, data, d0, out, o, n, st->widths[w], &b);
      o += n;
    }
    if (!s && st->preserve_short && o == o0 && len > 0) {
      if (st->pad_width < 0)
        s = sm_status_new(SM_INVALID_ARGUMENT, "Pad width should be >= 0 when preserve_short_sequences is True and "
                                               "ngram_widths are not provided, got %" PRId64, st->pad_width);
      else
        s = ng_make(st, ctx, data, d0, out, o, 1, len + 2 * st->pad_width, &b);
    }
  }
  sm__kctx_scratch_free(ctx, b.p);
  return s;
}

/* ---- AsString -------------------------------------------------------------------------------- */

typedef struct as_string_state {
  char fmt[72]; /* printf format of one element (a complex: "(%f,%f)"): 2 x 32 + 3 */
} as_string_state;

static int is_float_type(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16 || dt == SM_COMPLEX64 ||
         dt == SM_COMPLEX128;
}

static sm_status *as_string_prepare(const sm_node *node, void **state) {
  int dt = SM_FLOAT;
  sm_status *s = sm__node_attr_type(node, "T", &dt);
  int64_t precision = int_attr(node, "precision", -1, &s), width = int_attr(node, "width", -1, &s);
  int sci = bool_attr(node, "scientific", &s), shortest = bool_attr(node, "shortest", &s);
  char *fill = NULL;
  size_t fill_len = 0;
  if (!s) s = dup_attr(node, "fill", "", &fill, &fill_len);
  if (s) return s;
  const char *dn = sm__array_dtype_str(dt); /* TF's DataTypeString: "int32" */
  if (!is_float_type(dt) && (sci || shortest))
    s = sm_status_new(SM_INVALID_ARGUMENT, "scientific and shortest format not supported for datatype %s", dn);
  else if (!is_float_type(dt) && precision >= 0)
    s = sm_status_new(SM_INVALID_ARGUMENT, "precision not supported for datatype %s", dn);
  else if (fill_len > 1)
    s = sm_status_new(SM_INVALID_ARGUMENT, "Fill string must be one or fewer characters");
  else if (sci && shortest)
    s = sm_status_new(SM_INVALID_ARGUMENT, "Cannot select both scientific and shortest notation");
  else if (fill_len == 1 && !strchr(" +-0#", fill[0]))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Fill argument not supported: \"%s\"", fill);
  else if (width > 1000000 || precision > 1000000)
    s = sm_status_new(SM_INVALID_ARGUMENT, "width and precision must be at most 1000000");
  as_string_state *st = s ? NULL : sm__calloc(sizeof *st);
  if (!s && !st) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  if (s) {
    sm__free(fill);
    return s;
  }
  char one[32] = "%";
  size_t n = 1;
  if (fill_len) one[n++] = fill[0];
  sm__free(fill);
  if (width > -1) n += (size_t)snprintf(one + n, sizeof one - n, "%d", (int)width);
  if (precision > -1) n += (size_t)snprintf(one + n, sizeof one - n, ".%d", (int)precision);
  const char *conv = "";
  switch (dt) {
    case SM_INT8: case SM_INT16: case SM_INT32: case SM_UINT8: case SM_UINT16: conv = "d"; break;
    case SM_UINT32: conv = "u"; break;
    case SM_INT64: conv = PRId64; break;
    case SM_UINT64: conv = PRIu64; break;
    case SM_BOOL: case SM_STRING: conv = "s"; break;
    default:
      if (!is_float_type(dt)) {
        sm__free(st);
        return sm_status_new(SM_INVALID_ARGUMENT, "Type not supported: %s", dn);
      }
      conv = shortest ? "g" : sci ? "e" : "f";
  }
  snprintf(one + n, sizeof one - n, "%s", conv);
  if (dt == SM_COMPLEX64 || dt == SM_COMPLEX128)
    snprintf(st->fmt, sizeof st->fmt, "(%s,%s)", one, one);
  else
    snprintf(st->fmt, sizeof st->fmt, "%s", one);
  *state = st;
  return NULL;
}

static float half_bits(uint16_t h, int bf16) {
  uint32_t f;
  if (bf16) {
    f = (uint32_t)h << 16;
  } else {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F) f = sign | 0x7F800000u | (m << 13);
    else if (e) f = sign | ((e + 112) << 23) | (m << 13);
    else if (!m) f = sign;
    else {
      e = 113;
      while (!(m & 0x400)) m <<= 1, e--;
      f = sign | (e << 23) | ((m & 0x3FF) << 13);
    }
  }
  float v;
  memcpy(&v, &f, sizeof v);
  return v;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static sm_status *as_string_compute(const void *state, sm_kctx *ctx) {
  const as_string_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  const void *d = sm_tensor_data(x);
  char small[128];
  for (int64_t i = 0; i < sm_tensor_num_elements(x) && !s; i++) {
    char *buf = small;
    size_t cap = sizeof small;
    for (int pass = 0; pass < 2; pass++) {
      int n;
      switch (dt) {
        case SM_INT8: n = snprintf(buf, cap, st->fmt, ((const int8_t *)d)[i]); break;
        case SM_INT16: n = snprintf(buf, cap, st->fmt, ((const int16_t *)d)[i]); break;
        case SM_INT32: n = snprintf(buf, cap, st->fmt, ((const int32_t *)d)[i]); break;
        case SM_UINT8: n = snprintf(buf, cap, st->fmt, ((const uint8_t *)d)[i]); break;
        case SM_UINT16: n = snprintf(buf, cap, st->fmt, ((const uint16_t *)d)[i]); break;
        case SM_UINT32: n = snprintf(buf, cap, st->fmt, ((const uint32_t *)d)[i]); break;
        case SM_INT64: n = snprintf(buf, cap, st->fmt, ((const int64_t *)d)[i]); break;
        case SM_UINT64: n = snprintf(buf, cap, st->fmt, ((const uint64_t *)d)[i]); break;
        case SM_FLOAT: n = snprintf(buf, cap, st->fmt, (double)((const float *)d)[i]); break;
        case SM_DOUBLE: n = snprintf(buf, cap, st->fmt, ((const double *)d)[i]); break;
        case SM_HALF: case SM_BFLOAT16:
          n = snprintf(buf, cap, st->fmt, (double)half_bits(((const uint16_t *)d)[i], dt == SM_BFLOAT16));
          break;
        case SM_COMPLEX64:
          n = snprintf(buf, cap, st->fmt, (double)((const float *)d)[2 * i], (double)((const float *)d)[2 * i + 1]);
          break;
        case SM_COMPLEX128: n = snprintf(buf, cap, st->fmt, ((const double *)d)[2 * i], ((const double *)d)[2 * i + 1]); break;
        case SM_BOOL: n = snprintf(buf, cap, "%s", ((const uint8_t *)d)[i] ? "true" : "false"); break; /* no width */
        case SM_STRING: {
          size_t len;
          const char *p = sm_tensor_string(x, i, &len);
          if (len > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "string too long");
          char f2[80]; /* "%-5s" -> "%-5.*s": the string is bytes, not NUL-terminated */
          size_t fl = strlen(st->fmt);
          snprintf(f2, sizeof f2, "%.*s.*s", (int)(fl - 1), st->fmt);
          n = snprintf(buf, cap, f2, (int)len, p);
          break;
        }
        default: return sm_status_new(SM_INVALID_ARGUMENT, "Type not supported: %s", sm_dtype_name(dt));
      }
      if (n < 0) return sm_status_new(SM_INTERNAL, "formatting failed");
      if ((size_t)n < cap) {
        s = sm_tensor_set_string(y, i, buf, (size_t)n);
        break;
      }
      cap = (size_t)n + 1; /* a wide width: format again into a buffer that fits */
      buf = sm__kctx_scratch(ctx, cap, &s);
      if (!buf) return s;
    }
    if (buf != small) sm__kctx_scratch_free(ctx, buf);
  }
  return s;
}
#pragma GCC diagnostic pop

/* ---- UnsortedSegmentJoin --------------------------------------------------------------------- */

typedef struct seg_join_state {
  char *sep;
  size_t sep_len;
} seg_join_state;

static void seg_join_release(void *p) {
  seg_join_state *st = p;
  if (st) sm__free(st->sep);
  sm__free(st);
}

static sm_status *seg_join_prepare(const sm_node *node, void **state) {
  seg_join_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  sm_status *s = dup_attr(node, "separator", "", &st->sep, &st->sep_len);
  if (s) {
    seg_join_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *seg_join_compute(const void *state, sm_kctx *ctx) {
  const seg_join_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *ids = sm__kctx_input(ctx, 1), *ns = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(x) != SM_STRING || !tx_is_index(ids) || !tx_is_index(ns))
    return sm_status_new(SM_INVALID_ARGUMENT, "inputs must be strings, segment_ids and num_segments int32 or int64");
  int xr = sm_tensor_rank(x), ir = sm_tensor_rank(ids);
  const int64_t *xd = sm_tensor_dims(x), *id = sm_tensor_dims(ids);
  if (sm_tensor_num_elements(ns) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Number of segments cannot be empty.");
  if (sm_tensor_rank(ns) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "Number of segments must be a scalar");
  int64_t nseg = tx_int(ns, 0);
  if (nseg < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Number of segments must be non-negative but got %" PRId64, nseg);
  if (ir == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Segment_id cannot have rank 0");
  if (ir > xr)
    return sm_status_new(SM_OUT_OF_RANGE, "Invalid segment_id rank %d for input with %d dimension(s)", ir, xr);
  for (int d = 0; d < ir; d++)
    if (id[d] != xd[d])
      return sm_status_new(SM_INVALID_ARGUMENT, "Segment dimension is %" PRId64 " while input dimension is %d in rank %d",
                           id[d], xr, d);
  int64_t dims[SM_MAX_RANK], inner = 1, nids = sm_tensor_num_elements(ids);
  dims[0] = nseg;
  for (int d = ir; d < xr; d++) dims[1 + d - ir] = xd[d], inner *= xd[d];
  for (int64_t i = 0; i < nids; i++) {
    int64_t v = tx_int(ids, i);
    if (v < 0 || v >= nseg)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "segment_ids are not allowed to exceed num_segments or to have negative values.");
  }
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1 + xr - ir, dims, &y);
  if (s || !inner) return s;
  int64_t nout = nseg * inner;
  if (!nout) return NULL;
  tx_buf *bufs = sm__kctx_scratch(ctx, (size_t)nout * sizeof *bufs, &s);
  if (!bufs) return s;
  memset(bufs, 0, (size_t)nout * sizeof *bufs);
  for (int64_t i = 0; i < nids && !s; i++) {
    int64_t seg = tx_int(ids, i);
    for (int64_t k = 0; k < inner && !s; k++) {
      int64_t o = seg * inner + k;
      size_t n;
      const char *p = sm_tensor_string(x, i * inner + k, &n);
      /* as TF: a separator only after a non-empty part, and only up to a NUL (c_str) */
      if (bufs[o].len) s = tx_put(ctx, &bufs[o], st->sep, strlen(st->sep));
      if (!s) s = tx_put(ctx, &bufs[o], p, n);
    }
  }
  for (int64_t o = 0; o < nout && !s; o++)
    if (bufs[o].len) s = sm_tensor_set_string(y, o, bufs[o].p, bufs[o].len);
  return s;
}

const sm_kernel sm_kernels_text[] = {
    {"StringSplitV2", split_prepare, split_compute, sm__free, 0},
    {"StringSplit", split1_prepare, split1_compute, sm__free, 0},
    {"StringNGrams", ngram_prepare, ngram_compute, ngram_release, 0},
    {"AsString", as_string_prepare, as_string_compute, sm__free, 0},
    {"UnsortedSegmentJoin", seg_join_prepare, seg_join_compute, seg_join_release, 0},
    {0},
};
