/* unicode.c - the Unicode kernel family with TensorFlow's semantics (its ICU-based kernels are the
 * reference): UnicodeDecode, UnicodeDecodeWithOffsets (strings -> code points, row splits, byte
 * offsets) and UnicodeEncode (code points + splits -> strings), for UTF-8, UTF-16-BE and UTF-32-BE
 * (and ISO-8859-1 in), with errors "strict", "replace" (replacement_char) or "ignore" and
 * replace_control_characters. Ill-formed UTF-8 is replaced one maximal subpart at a time, as ICU's
 * converter does. Other ICU input encodings are refused at load, naming the encoding. */
#include <inttypes.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

enum { ENC_UTF8, ENC_UTF16BE, ENC_UTF32BE, ENC_LATIN1 };
enum { ERR_REPLACE, ERR_IGNORE, ERR_STRICT };

typedef struct uni_state {
  int enc;
  int errors;
  int32_t subst;
  int replace_control;
  int offsets; /* UnicodeDecodeWithOffsets */
} uni_state;

/* ICU matches converter names ignoring case and punctuation: "utf-8", "UTF8", "utf_8". */
static int enc_is(const char *s, size_t n, const char *canon) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '-' || c == '_' || c == ' ') continue;
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (canon[k] != c) return 0;
    k++;
  }
  return canon[k] == 0;
}

static sm_status *error_options(const sm_node *node, uni_state *st) {
  const char *e = "replace";
  size_t en = 7;
  sm_status *s = sm__node_attr(node, "errors") ? sm__node_attr_string(node, "errors", &e, &en) : NULL;
  if (s) return s;
  if (en == 7 && !memcmp(e, "replace", 7)) st->errors = ERR_REPLACE;
  else if (en == 6 && !memcmp(e, "ignore", 6)) st->errors = ERR_IGNORE;
  else if (en == 6 && !memcmp(e, "strict", 6)) st->errors = ERR_STRICT;
  else return sm_status_new(SM_INVALID_ARGUMENT, "errors policy must be one of 'strict', 'replace', or 'ignore'");
  int64_t r = 0xFFFD;
  if (sm__node_attr(node, "replacement_char") && (s = sm__node_attr_int(node, "replacement_char", &r))) return s;
  if (r < 0 || r > 0x10FFFF) return sm_status_new(SM_INVALID_ARGUMENT, "replacement_char out of unicode codepoint range");
  st->subst = (int32_t)r;
  if (sm__node_attr(node, "replace_control_characters"))
    return sm__node_attr_bool(node, "replace_control_characters", &st->replace_control);
  return NULL;
}

static sm_status *uni_prepare(const sm_node *node, void **state, int decode, int offsets) {
  uni_state st = {0};
  st.offsets = offsets;
  sm_status *s = error_options(node, &st);
  if (s) return s;
  const char *name = decode ? "input_encoding" : "output_encoding", *e = "";
  size_t en = 0;
  if ((s = sm__node_attr_string(node, name, &e, &en))) return s;
  if (decode) {
    if (enc_is(e, en, "utf8")) st.enc = ENC_UTF8;
    else if (enc_is(e, en, "utf16be")) st.enc = ENC_UTF16BE;
    else if (enc_is(e, en, "utf32be")) st.enc = ENC_UTF32BE;
    else if (enc_is(e, en, "iso88591") || enc_is(e, en, "latin1")) st.enc = ENC_LATIN1;
    else return sm_status_new(SM_INVALID_ARGUMENT, "Could not create converter for input encoding: %.*s", (int)en, e);
  } else {
    if (en == 5 && !memcmp(e, "UTF-8", 5)) st.enc = ENC_UTF8;
    else if (en == 9 && !memcmp(e, "UTF-16-BE", 9)) st.enc = ENC_UTF16BE;
    else if (en == 9 && !memcmp(e, "UTF-32-BE", 9)) st.enc = ENC_UTF32BE;
    else
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid encoding \"%.*s\": Should be one of: UTF-8, UTF-16-BE, UTF-32-BE",
                           (int)en, e);
  }
  uni_state *p = sm__alloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *p = st;
  *state = p;
  return NULL;
}

static sm_status *decode_prepare(const sm_node *n, void **s) { return uni_prepare(n, s, 1, 0); }
static sm_status *decode_offsets_prepare(const sm_node *n, void **s) { return uni_prepare(n, s, 1, 1); }
static sm_status *encode_prepare(const sm_node *n, void **s) { return uni_prepare(n, s, 0, 0); }

/* ---- decoding -------------------------------------------------------------------------------- */

/* One code point of s[0..n) (n > 0) in encoding enc: its value and the bytes it took; *bad when
 * ill-formed (value 0xFFFD, as ICU substitutes; UTF-8 consumes the maximal subpart). */
static int32_t next_char(int enc, const uint8_t *s, size_t n, size_t *used, int *bad) {
  *bad = 0;
  if (enc == ENC_LATIN1) {
    *used = 1;
    return s[0];
  }
  if (enc == ENC_UTF32BE) {
    if (n < 4) {
      *used = n, *bad = 1;
      return 0xFFFD;
    }
    *used = 4;
    uint32_t c = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
      *bad = 1;
      return 0xFFFD;
    }
    return (int32_t)c;
  }
  if (enc == ENC_UTF16BE) {
    if (n < 2) {
      *used = n, *bad = 1;
      return 0xFFFD;
    }
    uint32_t u = (uint32_t)s[0] << 8 | s[1];
    *used = 2;
    if (u < 0xD800 || u > 0xDFFF) return (int32_t)u;
    if (u <= 0xDBFF && n >= 4) {
      uint32_t v = (uint32_t)s[2] << 8 | s[3];
      if (v >= 0xDC00 && v <= 0xDFFF) {
        *used = 4;
        return (int32_t)(0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00));
      }
    }
    *bad = 1;
    return 0xFFFD;
  }
  uint8_t c = s[0];
  if (c < 0x80) {
    *used = 1;
    return c;
  }
  int need;
  uint8_t lo = 0x80, hi = 0xBF; /* the range of the first trail byte */
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else {
    *used = 1, *bad = 1;
    return 0xFFFD;
  }
  size_t k = 1;
  for (int t = 0; t < need; t++, k++) {
    if (k >= n || s[k] < lo || s[k] > hi) {
      *used = k, *bad = 1;
      return 0xFFFD;
    }
    cp = cp << 6 | (s[k] & 0x3F);
    lo = 0x80, hi = 0xBF;
  }
  *used = k;
  return (int32_t)cp;
}

/* Decodes every string: counts first (out NULL), then fills. */
static sm_status *decode_all(const uni_state *st, const sm_tensor *x, int32_t *chars, sm_tensor *offs, sm_tensor *splits,
                             int64_t *total) {
  int64_t k = 0, n = sm_tensor_num_elements(x);
  int any_bad = 0;
  for (int64_t i = 0; i < n; i++) {
    if (splits) tx_set_int(splits, i, k);
    size_t len;
    const uint8_t *p = (const uint8_t *)sm_tensor_string(x, i, &len);
    for (size_t at = 0; at < len;) {
      size_t used;
      int bad;
      int32_t c = next_char(st->enc, p + at, len - at, &used, &bad);
      any_bad |= bad;
      if (bad || (st->replace_control && c <= 0x1F)) {
        if (st->errors == ERR_IGNORE) {
          at += used;
          continue;
        }
        c = st->subst;
      }
      if (chars) chars[k] = c;
      if (offs) tx_set_int(offs, k, (int64_t)at);
      k++;
      at += used;
    }
  }
  if (splits) tx_set_int(splits, n, k);
  if (any_bad && st->errors == ERR_STRICT) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid formatting on input string");
  *total = k;
  return NULL;
}

static sm_status *decode_compute(const void *state, sm_kctx *ctx) {
  const uni_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "input must be a string tensor");
  const sm_node *node = sm__kctx_node(ctx);
  int sdt = SM_INT64;
  if (sm__node_attr(node, "Tsplits")) {
    sm_status *s = sm__node_attr_type(node, "Tsplits", &sdt);
    if (s) return s;
  }
  if (sdt != SM_INT32 && sdt != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "Tsplits must be int32 or int64");
  int64_t total = 0, n1 = sm_tensor_num_elements(x) + 1;
  sm_status *s = decode_all(st, x, NULL, NULL, NULL, &total);
  if (s) return s;
  sm_tensor *splits, *chars, *offs = NULL;
  s = sm__kctx_alloc_output(ctx, 0, sdt, 1, &n1, &splits);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_INT32, 1, &total, &chars);
  if (!s && st->offsets) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &total, &offs);
  if (!s) s = decode_all(st, x, sm_tensor_data(chars), offs, splits, &total);
  return s;
}

/* ---- encoding -------------------------------------------------------------------------------- */

static int is_scalar_value(int64_t c) { /* a code point, not a surrogate (noncharacters are fine) */
  return c >= 0 && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
}

static size_t put_char(int enc, uint32_t c, uint8_t *o) {
  if (enc == ENC_UTF32BE) {
    o[0] = (uint8_t)(c >> 24), o[1] = (uint8_t)(c >> 16), o[2] = (uint8_t)(c >> 8), o[3] = (uint8_t)c;
    return 4;
  }
  if (enc == ENC_UTF16BE) {
    if (c < 0x10000) {
      o[0] = (uint8_t)(c >> 8), o[1] = (uint8_t)c;
      return 2;
    }
    uint32_t hi = 0xD800 + ((c - 0x10000) >> 10), lo = 0xDC00 + ((c - 0x10000) & 0x3FF);
    o[0] = (uint8_t)(hi >> 8), o[1] = (uint8_t)hi, o[2] = (uint8_t)(lo >> 8), o[3] = (uint8_t)lo;
    return 4;
  }
  if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD; /* a lone surrogate: ICU's toUTF8String substitutes */
  if (c < 0x80) return o[0] = (uint8_t)c, 1;
  if (c < 0x800) return o[0] = (uint8_t)(0xC0 | c >> 6), o[1] = (uint8_t)(0x80 | (c & 0x3F)), 2;
  if (c < 0x10000)
    return o[0] = (uint8_t)(0xE0 | c >> 12), o[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)), o[2] = (uint8_t)(0x80 | (c & 0x3F)), 3;
  o[0] = (uint8_t)(0xF0 | c >> 18), o[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)), o[3] = (uint8_t)(0x80 | (c & 0x3F));
  return 4;
}

static sm_status *encode_compute(const void *state, sm_kctx *ctx) {
  const uni_state *st = state;
  const sm_tensor *v = sm__kctx_input(ctx, 0), *sp = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(v) != SM_INT32 || !tx_is_index(sp))
    return sm_status_new(SM_INVALID_ARGUMENT, "input_values must be int32 and input_splits int32 or int64");
  if (sm_tensor_rank(sp) != 1 || sm_tensor_rank(v) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Both the input_tensor and input_splits should be of rank 1.");
  int64_t nv = sm_tensor_num_elements(v), ns = sm_tensor_dims(sp)[0];
  if (ns < 1) return sm_status_new(SM_INVALID_ARGUMENT, "input_splits must not be empty.");
  if (tx_int(sp, 0) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "First value in input_splits must be zero.");
  for (int64_t i = 1; i < ns; i++)
    if (tx_int(sp, i) < tx_int(sp, i - 1))
      return sm_status_new(SM_INVALID_ARGUMENT, "Values in input_splits must be equal or in ascending order.");
  if (tx_int(sp, ns - 1) != nv)
    return sm_status_new(SM_INVALID_ARGUMENT, "Last value in input_splits must be equal to length of input_tensor.");
  const int32_t *cp = sm_tensor_data(v);
  for (int64_t i = 0; i < nv && st->errors == ERR_STRICT; i++)
    if (!is_scalar_value(cp[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "Code point is out of range for Unicode, or is a surrogate.");
  sm_tensor *y;
  int64_t nout = ns - 1;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &nout, &y);
  tx_buf b = {0};
  for (int64_t i = 0; i < nout && !s; i++) {
    b.len = 0;
    for (int64_t j = tx_int(sp, i); j < tx_int(sp, i + 1) && !s; j++) {
      int64_t c = cp[j];
      if (!is_scalar_value(c)) {
        if (st->errors == ERR_IGNORE) continue;
        c = st->subst;
      }
      uint8_t o[4];
      s = tx_put(ctx, &b, o, put_char(st->enc, (uint32_t)c, o));
    }
    if (!s) s = sm_tensor_set_string(y, i, b.p ? b.p : "", b.len);
  }
  sm__kctx_scratch_free(ctx, b.p);
  return s;
}

const sm_kernel sm_kernels_unicode[] = {
    {"UnicodeDecode", decode_prepare, decode_compute, sm__free, 0},
    {"UnicodeDecodeWithOffsets", decode_offsets_prepare, decode_compute, sm__free, 0},
    {"UnicodeEncode", encode_prepare, encode_compute, sm__free, 0},
    {0},
};
