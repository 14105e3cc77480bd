/* unicode.c - the Unicode kernel family with TensorFlow's semantics (its ICU-based kernels are the
 * reference): UnicodeDecode, UnicodeDecodeWithOffsets (strings -> code points, row splits, byte
 * offsets), UnicodeEncode (code points + splits -> strings), UnicodeTranscode (strings -> strings)
 * and UnicodeScript (code point -> ICU UScriptCode). UTF-8, UTF-16-BE, UTF-32-BE and ISO-8859-1 are
 * decoded here, with errors "strict", "replace" (replacement_char) or "ignore" and
 * replace_control_characters; ill-formed UTF-8 is replaced one maximal subpart at a time, as ICU's
 * converter does. Every other input encoding TF accepts (any ICU converter name: "UTF-16",
 * "UTF-16LE", "US-ASCII", "windows-1252", "Shift_JIS", ...) and UnicodeScript go through the
 * system's ICU (libicuuc), opened at the first use: no build dependency, the version found at run
 * time (libicuuc.so.N and its _N symbol suffix); without it those ops fail with a message saying so.
 * Outputs are UTF-8, UTF-16-BE or UTF-32-BE. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lazylib.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

enum { ENC_UTF8, ENC_UTF16BE, ENC_UTF32BE, ENC_LATIN1, ENC_ICU };
enum { ERR_REPLACE, ERR_IGNORE, ERR_STRICT };

typedef struct uni_state {
  int enc;
  int transcode;     /* UnicodeTranscode: out_enc is the output's */
  int out_enc;
  char icu_name[64]; /* ENC_ICU: the converter's name */
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

/* ---- the system's ICU, bound at first use ------------------------------------------------------
 * Only C entry points with plain types are used, declared here (no ICU headers at build time):
 * UErrorCode and UScriptCode are ints (failure: > 0), converters are opaque. */
typedef void (*icu_to_u_cb)(const void *context, void *args, const char *units, int32_t length, int reason, int *err);
static struct {
  int (*get_script)(int32_t c, int *err);
  void *(*cnv_open)(const char *name, int *err);
  void (*cnv_close)(void *cnv);
  int32_t (*next_uchar)(void *cnv, const char **src, const char *limit, int *err);
  void (*set_to_u)(void *cnv, icu_to_u_cb cb, const void *ctx, icu_to_u_cb *old_cb, const void **old_ctx, int *err);
  icu_to_u_cb substitute;
  int version; /* the N of libicuuc.so.N; 0 when none was found */
} icu;
static pthread_once_t icu_once = PTHREAD_ONCE_INIT;

void *sm__icu_sym(void *h, const char *name, int v) {
  void *p = dlsym(h, name);
  char buf[96];
  if (!p && v) {
    snprintf(buf, sizeof buf, "%s_%d", name, v);
    p = dlsym(h, buf);
  }
  return p;
}

static void *icu_handle;
static int icu_found_version;
static pthread_once_t icu_lib_once = PTHREAD_ONCE_INIT;
static void icu_lib_load(void) {
  void *h = NULL;
  int v = 0;
  char lib[40];
  for (int n = 99; n >= 50 && !h; n--) { /* the newest installed */
    snprintf(lib, sizeof lib, "libicuuc.so.%d", n);
    if ((h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) v = n;
  }
  if (!h && (h = dlopen("libicuuc.so", RTLD_NOW | RTLD_LOCAL))) /* a development link: find the suffix */
    for (int n = 99; n >= 50 && !v; n--) {
      char buf[48];
      snprintf(buf, sizeof buf, "ucnv_open_%d", n);
      if (dlsym(h, buf)) v = n;
    }
  icu_handle = h, icu_found_version = v;
}

void *sm__icu_lib(int *version) {
  pthread_once(&icu_lib_once, icu_lib_load);
  *version = icu_found_version;
  return icu_handle;
}

static void icu_load(void) {
  int v;
  void *h = sm__icu_lib(&v);
  if (!h) return;
  *(void **)&icu.get_script = sm__icu_sym(h, "uscript_getScript", v);
  *(void **)&icu.cnv_open = sm__icu_sym(h, "ucnv_open", v);
  *(void **)&icu.cnv_close = sm__icu_sym(h, "ucnv_close", v);
  *(void **)&icu.next_uchar = sm__icu_sym(h, "ucnv_getNextUChar", v);
  *(void **)&icu.set_to_u = sm__icu_sym(h, "ucnv_setToUCallBack", v);
  *(void **)&icu.substitute = sm__icu_sym(h, "UCNV_TO_U_CALLBACK_SUBSTITUTE", v);
  if (icu.get_script && icu.cnv_open && icu.cnv_close && icu.next_uchar && icu.set_to_u && icu.substitute)
    icu.version = v ? v : 1;
}

static int icu_ready(void) {
  pthread_once(&icu_once, icu_load);
  return icu.version != 0;
}

static const char icu_missing[] = " (this runtime decodes it with the system's ICU library, libicuuc, and found none)";

/* As TF's callback: an unassigned, illegal or irregular sequence marks a format error, then ICU's
 * substitution handler replaces it with U+FFFD. */
static void icu_error_cb(const void *context, void *args, const char *units, int32_t length, int reason, int *err) {
  if (reason == 0 || reason == 1 || reason == 2) *(int *)context = 1; /* UNASSIGNED, ILLEGAL, IRREGULAR */
  icu.substitute(NULL, args, units, length, reason, err);
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
  const char *e = "";
  size_t en = 0;
  st.transcode = decode == 2;
  if (!decode || st.transcode) {
    if ((s = sm__node_attr_string(node, "output_encoding", &e, &en))) return s;
    int *out = st.transcode ? &st.out_enc : &st.enc;
    if (en == 5 && !memcmp(e, "UTF-8", 5)) *out = ENC_UTF8;
    else if (en == 9 && !memcmp(e, "UTF-16-BE", 9)) *out = ENC_UTF16BE;
    else if (en == 9 && !memcmp(e, "UTF-32-BE", 9)) *out = ENC_UTF32BE;
    else
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid encoding \"%.*s\": Should be one of: UTF-8, UTF-16-BE, UTF-32-BE",
                           (int)en, e);
  }
  if (decode) {
    if ((s = sm__node_attr_string(node, "input_encoding", &e, &en))) return s;
    if (enc_is(e, en, "utf8")) st.enc = ENC_UTF8;
    else if (enc_is(e, en, "utf16be")) st.enc = ENC_UTF16BE;
    else if (enc_is(e, en, "utf32be")) st.enc = ENC_UTF32BE;
    else if (enc_is(e, en, "iso88591") || enc_is(e, en, "latin1")) st.enc = ENC_LATIN1;
    else {
      st.enc = ENC_ICU;
      if (en >= sizeof st.icu_name || memchr(e, 0, en))
        return sm_status_new(SM_INVALID_ARGUMENT, "Could not create converter for input encoding: %.*s", (int)en, e);
      memcpy(st.icu_name, e, en);
      st.icu_name[en] = 0;
      if (!icu_ready())
        return sm_status_new(SM_INVALID_ARGUMENT, "Could not create converter for input encoding: %s%s", st.icu_name, icu_missing);
      int err = 0;
      void *cnv = icu.cnv_open(st.icu_name, &err);
      if (cnv) icu.cnv_close(cnv);
      if (!cnv || err > 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "Could not create converter for input encoding: %s", st.icu_name);
    }
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
static sm_status *transcode_prepare(const sm_node *n, void **s) { return uni_prepare(n, s, 2, 0); }

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

/* The input decoder of one compute: the built-in ones, or an ICU converter (opened per compute, one
 * for all the strings, as TF's kernels keep theirs: a UTF-16 BOM's byte order carries over). */
typedef struct reader {
  int enc;
  void *cnv;
  int fmt_err, status;
} reader;

static sm_status *reader_open(const uni_state *st, reader *r) {
  memset(r, 0, sizeof *r);
  r->enc = st->enc;
  if (st->enc != ENC_ICU) return NULL;
  int err = 0;
  if (!icu_ready() || !(r->cnv = icu.cnv_open(st->icu_name, &err)) || err > 0) {
    if (r->cnv) icu.cnv_close(r->cnv);
    r->cnv = NULL;
    return sm_status_new(SM_INVALID_ARGUMENT, "Could not create converter for input encoding: %s", st->icu_name);
  }
  icu_to_u_cb old;
  const void *old_ctx;
  icu.set_to_u(r->cnv, icu_error_cb, &r->fmt_err, &old, &old_ctx, &err);
  if (err > 0) {
    icu.cnv_close(r->cnv);
    r->cnv = NULL;
    return sm_status_new(SM_INTERNAL, "Could not set unicode error callback on converter");
  }
  return NULL;
}

static void reader_close(reader *r) {
  if (r->cnv) icu.cnv_close(r->cnv);
  r->cnv = NULL;
}

/* The code point at p[at..len) (at < len), as TF's IterateUnicodeString sees it. */
static int32_t read_char(reader *r, const uint8_t *p, size_t len, size_t at, size_t *used, int *bad) {
  if (r->enc != ENC_ICU) return next_char(r->enc, p + at, len - at, used, bad);
  if (at == 0) r->status = 0; /* one status per string */
  const char *src = (const char *)p + at, *limit = (const char *)p + len;
  r->fmt_err = 0;
  int32_t c = icu.next_uchar(r->cnv, &src, limit, &r->status);
  if (r->status > 0 || src <= (const char *)p + at) src = limit; /* a failure ends the string */
  *used = (size_t)(src - ((const char *)p + at));
  *bad = r->fmt_err;
  return c;
}

/* Decodes every string: counts first (out NULL), then fills. */
static sm_status *decode_all(const uni_state *st, reader *rd, const sm_tensor *x, int32_t *chars, sm_tensor *offs,
                             sm_tensor *splits, int64_t *total) {
  int64_t k = 0, n = sm_tensor_num_elements(x);
  int any_bad = 0;
  for (int64_t i = 0; i < n; i++) {
    if (splits) tx_set_int(splits, i, k);
    size_t len;
    const uint8_t *p = (const uint8_t *)sm_tensor_string(x, i, &len);
    for (size_t at = 0; at < len;) {
      size_t used;
      int bad;
      int32_t c = read_char(rd, p, len, at, &used, &bad);
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
  reader rd;
  sm_status *s = reader_open(st, &rd);
  if (!s) s = decode_all(st, &rd, x, NULL, NULL, NULL, &total);
  reader_close(&rd);
  if (s) return s;
  sm_tensor *splits, *chars, *offs = NULL;
  s = sm__kctx_alloc_output(ctx, 0, sdt, 1, &n1, &splits);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_INT32, 1, &total, &chars);
  if (!s && st->offsets) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &total, &offs);
  if (!s) s = reader_open(st, &rd); /* the second pass starts from a fresh converter too */
  if (!s) s = decode_all(st, &rd, x, sm_tensor_data(chars), offs, splits, &total);
  reader_close(&rd);
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

/* ---- transcoding ----------------------------------------------------------------------------- */

/* As TF's UnicodeTranscode: every code point decoded, replaced (or dropped) when ill-formed or, with
 * replace_control_characters, below 0x20 (both count as format errors for "strict"), written in
 * the output encoding (a lone surrogate replacement_char: U+FFFD in UTF-8, as ICU writes it). */
static sm_status *transcode_compute(const void *state, sm_kctx *ctx) {
  const uni_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "input must be a string tensor");
  reader rd;
  sm_status *s = reader_open(st, &rd);
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  tx_buf b = {0};
  int any = 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(x) && !s; i++) {
    size_t len;
    const uint8_t *p = (const uint8_t *)sm_tensor_string(x, i, &len);
    b.len = 0;
    for (size_t at = 0; at < len && !s;) {
      size_t used;
      int bad;
      int32_t c = read_char(&rd, p, len, at, &used, &bad);
      at += used;
      if (bad || (st->replace_control && c <= 0x1F)) {
        any = 1;
        if (st->errors == ERR_IGNORE) continue;
        c = st->subst;
      }
      uint8_t o[4];
      s = tx_put(ctx, &b, o, put_char(st->out_enc, (uint32_t)c, o));
    }
    if (!s) s = sm_tensor_set_string(y, i, b.p ? b.p : "", b.len);
  }
  sm__kctx_scratch_free(ctx, b.p);
  reader_close(&rd);
  if (!s && any && st->errors == ERR_STRICT) s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid formatting on input string");
  return s;
}

/* ---- scripts ---------------------------------------------------------------------------------- */

static sm_status *script_prepare(const sm_node *node, void **state) {
  (void)node, (void)state;
  if (!icu_ready())
    return sm_status_new(SM_UNIMPLEMENTED, "UnicodeScript needs the system's ICU library (libicuuc.so.N), and none was found");
  return NULL;
}

/* uscript_getScript per code point; -1 where ICU reports an error (negative, past U+10FFFF). */
static sm_status *script_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "UnicodeScript: input must be int32");
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT32, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (s) return s;
  const int32_t *in = sm_tensor_data(x);
  int32_t *out = sm_tensor_data(y);
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
    int err = 0;
    int code = icu.get_script(in[i], &err);
    out[i] = err > 0 ? -1 : code;
  }
  return NULL;
}

const sm_kernel sm_kernels_unicode[] = {
    {"UnicodeDecode", decode_prepare, decode_compute, sm__free, 0},
    {"UnicodeDecodeWithOffsets", decode_offsets_prepare, decode_compute, sm__free, 0},
    {"UnicodeEncode", encode_prepare, encode_compute, sm__free, 0},
    {"UnicodeTranscode", transcode_prepare, transcode_compute, sm__free, 0},
    {"UnicodeScript", script_prepare, script_compute, NULL, 0},
    {0},
};
