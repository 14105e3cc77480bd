/* tftext.c - TensorFlow Text's kernels that text.BertTokenizer and text.normalize_utf8 export
 * (tensorflow_text's custom ops, which TF Serving links in: a BERT preprocessing SavedModel holds
 * them), with tensorflow_text 2.21's semantics (its kernels are the reference):
 *   CaseFoldUTF8, NormalizeUTF8 (NFC, NFD, NFKC, NFKD): ICU's Normalizer2 (NFKC_Casefold for the
 *     fold) through the system's libicuuc, opened at first use as unicode.c opens it; ill-formed
 *     UTF-8 bytes are copied through unchanged, as ICU's normalizeUTF8 copies them (each one is a
 *     normalization boundary, so the well-formed runs between them are normalized one by one);
 *   RegexSplitWithOffsets: RE2::FindAndConsume steps with group 1 as the delimiter (the Python
 *     wrapper puts the patterns in parentheses), the delimiter kept when it fully matches the
 *     keep pattern; a delimiter pattern that matches the empty string is refused (TF Text's loop
 *     never ends on it);
 *   WordpieceTokenizeWithOffsets: greedy longest-match-first over the vocabulary table (a string ->
 *     int64 table; a key is in it when its value is not -1), suffix_indicator, max_bytes_per_word,
 *     max_chars_per_token, use_unknown_token, split_unknown_characters, row lengths or splits;
 *   TFText>WhitespaceTokenizeWithOffsetsV2, WhitespaceTokenizeWithOffsets, UnicodeScriptTokenizeWithOffsets
 *     (ICU's white space and script properties), TFText>RoundRobinTrim (RoundRobinTrimmer.trim: the BERT
 *     input packer's trimming; its checks and shares, sm__tftext_rr_used, also serve tftext_more.c)
 *     and TFText>NgramsStringJoin (text.ngrams with STRING_JOIN). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/regex.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"
#include "runtime/resource.h"

/* ---- UTF-8 ------------------------------------------------------------------------------------ */

/* The length of the well-formed UTF-8 character at s[0..n) (n > 0), or 0 when it is ill-formed. */
static size_t utf8_char(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* ICU's U8_NEXT: the bytes one step takes at s[0..n) (n > 0): a well-formed character, or the
 * maximal subpart of an ill-formed one (at least one byte). */
static size_t utf8_step(const unsigned char *s, size_t n) {
  size_t k = utf8_char(s, n);
  if (k) return k;
  unsigned c = s[0], lo = 0x80, hi = 0xBF;
  size_t need;
  if (c >= 0xE0 && c <= 0xEF) {
    need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 1; /* a lone continuation byte, C0/C1, F5..FF, or C2..DF without its trail byte */
  }
  k = 1;
  if (k < n && s[k] >= lo && s[k] <= hi) {
    k++;
    while (k < need && k < n && (s[k] & 0xC0) == 0x80) k++;
  }
  return k;
}

/* ---- ICU's normalizers ------------------------------------------------------------------------ */

typedef uint16_t uchar16;
static struct {
  const void *(*inst[5])(int *err); /* NFC, NFD, NFKC, NFKD, NFKC_Casefold */
  int32_t (*normalize)(const void *norm, const uchar16 *src, int32_t len, uchar16 *dst, int32_t cap, int *err);
  uchar16 *(*from_utf8)(uchar16 *dst, int32_t cap, int32_t *dlen, const char *src, int32_t slen, int *err);
  char *(*to_utf8)(char *dst, int32_t cap, int32_t *dlen, const uchar16 *src, int32_t slen, int *err);
  int ok;
} nz;
static pthread_once_t nz_once = PTHREAD_ONCE_INIT;
enum { NF_C, NF_D, NF_KC, NF_KD, NF_CASEFOLD };

static void nz_load(void) {
  int v;
  void *h = sm__icu_lib(&v);
  if (!h) return;
  static const char *const names[5] = {"unorm2_getNFCInstance", "unorm2_getNFDInstance", "unorm2_getNFKCInstance",
                                       "unorm2_getNFKDInstance", "unorm2_getNFKCCasefoldInstance"};
  int ok = 1;
  for (int i = 0; i < 5; i++) ok &= (*(void **)&nz.inst[i] = sm__icu_sym(h, names[i], v)) != NULL;
  ok &= (*(void **)&nz.normalize = sm__icu_sym(h, "unorm2_normalize", v)) != NULL;
  ok &= (*(void **)&nz.from_utf8 = sm__icu_sym(h, "u_strFromUTF8", v)) != NULL;
  ok &= (*(void **)&nz.to_utf8 = sm__icu_sym(h, "u_strToUTF8", v)) != NULL;
  nz.ok = ok;
}

/* Appends the normalization of the well-formed UTF-8 run s[0..n) to out. u16 and u16b are the
 * caller's UTF-16 buffers (grown here, freed by the caller). */
static sm_status *nz_run(sm_kctx *ctx, const void *norm, const char *s, size_t n, tx_buf *out, uchar16 **u16,
                         size_t *cap16, uchar16 **n16, size_t *capn) {
  if (n > INT32_MAX / 4) return sm_status_new(SM_INVALID_ARGUMENT, "a string of %zu bytes is too long to normalize", n);
  sm_status *s2 = NULL;
  if (*cap16 < n + 1) {
    uchar16 *p = sm__kctx_scratch_realloc(ctx, *u16, (n + 1) * sizeof(uchar16), &s2);
    if (!p) return s2;
    *u16 = p, *cap16 = n + 1;
  }
  int err = 0;
  int32_t len16 = 0;
  nz.from_utf8(*u16, (int32_t)*cap16, &len16, s, (int32_t)n, &err);
  if (err > 0) return sm_status_new(SM_INTERNAL, "ICU could not read a UTF-8 run (error %d)", err);
  for (int attempt = 0; attempt < 2; attempt++) { /* the first guess, then the size ICU asks for */
    size_t want = attempt ? *capn : (size_t)len16 * 3 + 16;
    if (*capn < want || !*n16) {
      uchar16 *p = sm__kctx_scratch_realloc(ctx, *n16, want * sizeof(uchar16), &s2);
      if (!p) return s2;
      *n16 = p, *capn = want;
    }
    err = 0;
    int32_t nl = nz.normalize(norm, *u16, len16, *n16, (int32_t)*capn, &err);
    if (err == 15 /* U_BUFFER_OVERFLOW_ERROR */ && !attempt) {
      *capn = (size_t)nl + 1;
      uchar16 *p = sm__kctx_scratch_realloc(ctx, *n16, *capn * sizeof(uchar16), &s2);
      if (!p) return s2;
      *n16 = p;
      continue;
    }
    if (err > 0) return sm_status_new(SM_INTERNAL, "ICU could not normalize a string (error %d)", err);
    int32_t n8 = 0;
    err = 0;
    nz.to_utf8(NULL, 0, &n8, *n16, nl, &err); /* preflight: U_BUFFER_OVERFLOW_ERROR */
    size_t at = out->len;
    sm_status *st = NULL;
    if (out->cap - out->len < (size_t)n8 + 1) { /* room for n8 bytes and ICU's NUL */
      size_t cap = out->len + (size_t)n8 + 1 + out->cap;
      char *np = sm__kctx_scratch_realloc(ctx, out->p, cap, &st);
      if (!np) return st;
      out->p = np, out->cap = cap;
    }
    err = 0;
    nz.to_utf8(out->p + at, n8 + 1, &n8, *n16, nl, &err);
    if (err > 0) return sm_status_new(SM_INTERNAL, "ICU could not write UTF-8 (error %d)", err);
    out->len = at + (size_t)n8;
    return NULL;
  }
  return sm_status_new(SM_INTERNAL, "ICU's normalized length kept growing");
}

static sm_status *normalize_strings(sm_kctx *ctx, int form, const char *op) {
  pthread_once(&nz_once, nz_load);
  if (!nz.ok)
    return sm_status_new(SM_UNIMPLEMENTED,
                         "%s needs the system's ICU library (libicuuc with unorm2_normalize), and none was found", op);
  int err = 0;
  const void *norm = nz.inst[form](&err);
  if (!norm || err > 0) return sm_status_new(SM_INTERNAL, "%s: ICU gave no normalizer (error %d)", op, err);
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(in) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be a string tensor", op);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(in), sm_tensor_dims(in), &out);
  if (s) return s;
  tx_buf b = {0};
  uchar16 *u16 = NULL, *n16 = NULL;
  size_t cap16 = 0, capn = 0;
  int64_t ne = sm_tensor_num_elements(in);
  for (int64_t i = 0; i < ne && !s; i++) {
    size_t n;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(in, i, &n);
    b.len = 0;
    size_t a = 0;
    while (a < n && !s) {
      size_t e = a, k;
      while (e < n && (k = utf8_char(p + e, n - e))) e += k;
      if (e > a) s = nz_run(ctx, norm, (const char *)p + a, e - a, &b, &u16, &cap16, &n16, &capn);
      if (!s && e < n) s = tx_put(ctx, &b, p + e, 1); /* an ill-formed byte, copied */
      a = e + (e < n);
    }
    if (!s) s = sm_tensor_set_string(out, i, b.p, b.len);
  }
  sm__kctx_scratch_free(ctx, b.p);
  sm__kctx_scratch_free(ctx, u16);
  sm__kctx_scratch_free(ctx, n16);
  return s;
}

static sm_status *casefold_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  return normalize_strings(ctx, NF_CASEFOLD, "CaseFoldUTF8");
}

static sm_status *normalize_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *f = "";
  size_t fn = 0;
  sm_status *s = sm__node_attr_string(sm__kctx_node(ctx), "normalization_form", &f, &fn);
  if (s) return s;
  char up[8] = {0};
  for (size_t i = 0; i < fn && i < sizeof up - 1; i++) up[i] = (char)(f[i] >= 'a' && f[i] <= 'z' ? f[i] - 32 : f[i]);
  int form = fn > 4 ? -1
             : !strcmp(up, "NFC")  ? NF_C
             : !strcmp(up, "NFD")  ? NF_D
             : !strcmp(up, "NFKC") ? NF_KC
             : !strcmp(up, "NFKD") ? NF_KD
                                   : -1;
  if (form < 0) {
    char shown[64];
    size_t k = 0;
    for (size_t i = 0; i < fn && k < sizeof shown - 1; i++)
      shown[k++] = (char)(f[i] >= 'a' && f[i] <= 'z' ? f[i] - 32 : f[i]);
    shown[k] = 0;
    return sm_status_new(SM_INVALID_ARGUMENT, "Unknown normalization form requrested: %s", shown);
  }
  return normalize_strings(ctx, form, "NormalizeUTF8");
}

/* ---- growable outputs ------------------------------------------------------------------------- */

/* Tokens as bytes in one buffer, their lengths, begin and end offsets, and a row partition. */
typedef struct toks {
  tx_buf bytes, lens, begins, ends, rows;
  int64_t n, nrows;
} toks;

static sm_status *put_i64(sm_kctx *ctx, tx_buf *b, int64_t v) { return tx_put(ctx, b, &v, sizeof v); }

/* A token: prefix[0..pn) then s[0..n) (either may be empty). */
static sm_status *toks_add(sm_kctx *ctx, toks *t, const char *prefix, size_t pn, const char *s, size_t n, int64_t begin,
                           int64_t end) {
  sm_status *st = tx_put(ctx, &t->bytes, prefix, pn);
  if (!st) st = tx_put(ctx, &t->bytes, s, n);
  if (!st) st = put_i64(ctx, &t->lens, (int64_t)(pn + n));
  if (!st) st = put_i64(ctx, &t->begins, begin);
  if (!st) st = put_i64(ctx, &t->ends, end);
  if (!st) t->n++;
  return st;
}

static sm_status *toks_row(sm_kctx *ctx, toks *t, int64_t v) {
  t->nrows++;
  return put_i64(ctx, &t->rows, v);
}

static void toks_free(sm_kctx *ctx, toks *t) {
  sm__kctx_scratch_free(ctx, t->bytes.p);
  sm__kctx_scratch_free(ctx, t->lens.p);
  sm__kctx_scratch_free(ctx, t->begins.p);
  sm__kctx_scratch_free(ctx, t->ends.p);
  sm__kctx_scratch_free(ctx, t->rows.p);
}

/* Outputs: strings at out_str, begins/ends at out_begin/out_end (int64, or int32 when off32), the
 * row partition (int64) at out_rows. */
static sm_status *toks_emit(sm_kctx *ctx, toks *t, int out_str, int out_rows, int out_begin, int out_end, int off32) {
  sm_tensor *vs, *r, *b, *e;
  int odt = off32 ? SM_INT32 : SM_INT64;
  sm_status *s = sm__kctx_alloc_output(ctx, out_str, SM_STRING, 1, &t->n, &vs);
  if (!s) s = sm__kctx_alloc_output(ctx, out_rows, SM_INT64, 1, &t->nrows, &r);
  if (!s) s = sm__kctx_alloc_output(ctx, out_begin, odt, 1, &t->n, &b);
  if (!s) s = sm__kctx_alloc_output(ctx, out_end, odt, 1, &t->n, &e);
  if (s) return s;
  const int64_t *lens = (const int64_t *)(void *)t->lens.p;
  size_t at = 0;
  for (int64_t i = 0; i < t->n && !s; i++) {
    s = sm_tensor_set_string(vs, i, t->bytes.p + at, (size_t)lens[i]);
    at += (size_t)lens[i];
  }
  const int64_t *tb = (const int64_t *)(void *)t->begins.p, *te = (const int64_t *)(void *)t->ends.p;
  for (int64_t i = 0; i < t->n; i++) {
    tx_set_int(b, i, tb[i]);
    tx_set_int(e, i, te[i]);
  }
  if (t->nrows) memcpy(sm_tensor_data(r), t->rows.p, (size_t)t->nrows * 8);
  return s;
}

/* ---- RegexSplitWithOffsets -------------------------------------------------------------------- */

static sm_status *scalar_pattern(sm_kctx *ctx, int i, const char *what, const char **p, size_t *n) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  if (sm_tensor_dtype(t) != SM_STRING || sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be scalar, but received %s", what, tx_shape_of(t).s);
  *p = sm_tensor_string(t, 0, n);
  return NULL;
}

static sm_status *regex_split_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *dp, *kp;
  size_t dn, kn;
  sm_status *s = scalar_pattern(ctx, 1, "Pattern", &dp, &dn);
  if (!s) s = scalar_pattern(ctx, 2, "Pattern", &kp, &kn);
  if (s) return s;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(in) != SM_STRING || sm_tensor_rank(in) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a 1-D string tensor, got shape %s", tx_shape_of(in).s);
  void *dre = NULL, *kre = NULL;
  s = sm__re2_compile("RegexSplitWithOffsets", dp, dn, &dre);
  if (!s) s = sm__re2_compile("RegexSplitWithOffsets", kp, kn, &kre);
  toks t = {0};
  int keep = kn > 0;
  if (!s) s = toks_row(ctx, &t, 0);
  int64_t rows = sm_tensor_num_elements(in);
  for (int64_t i = 0; i < rows && !s; i++) {
    size_t n;
    const char *str = sm_tensor_string(in, i, &n);
    const char *nul = n ? memchr(str, 0, n) : NULL; /* TF Text reads the element as a C string */
    if (nul) n = (size_t)(nul - str);
    size_t pos = 0, last_end = 0;
    for (;;) {
      size_t gb, ge, end;
      int m = sm__re2_find_group1(dre, str + pos, n - pos, &gb, &ge, &end);
      if (m == 0) break;
      if (m < 0) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "RegexSplitWithOffsets: the delimiter pattern %.*s matched without its group 1",
                          (int)dn, dp);
        break;
      }
      if (end == 0) {
        s = sm_status_new(SM_INVALID_ARGUMENT,
                          "RegexSplitWithOffsets: the delimiter pattern %.*s matches the empty string (at byte %zu of "
                          "input %" PRId64 "): TensorFlow Text's kernel never ends on it",
                          (int)dn, dp, pos, i);
        break;
      }
      size_t db = pos + gb, de = pos + ge;
      if (db > last_end) s = toks_add(ctx, &t, NULL, 0, str + last_end, db - last_end, (int64_t)last_end, (int64_t)db);
      if (!s && keep && sm__re2_full_match(kre, str + db, de - db))
        s = toks_add(ctx, &t, NULL, 0, str + db, de - db, (int64_t)db, (int64_t)de);
      if (s) break;
      pos += end;
      last_end = pos;
    }
    if (!s && pos < n) s = toks_add(ctx, &t, NULL, 0, str + pos, n - pos, (int64_t)pos, (int64_t)n);
    if (!s) s = toks_row(ctx, &t, t.n);
  }
  if (!s) s = toks_emit(ctx, &t, 0, 3, 1, 2, 0);
  toks_free(ctx, &t);
  sm__re2_free(dre);
  sm__re2_free(kre);
  return s;
}

/* ---- WordpieceTokenizeWithOffsets ------------------------------------------------------------- */

typedef struct wp_state {
  char *suffix, *unk;
  size_t suffix_n, unk_n;
  int64_t max_bytes, max_chars;
  int use_unk, split_unk, row_splits;
} wp_state;

static void wp_release(void *p) {
  wp_state *st = p;
  if (!st) return;
  free(st->suffix);
  free(st->unk);
  free(st);
}

static char *dup_bytes(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    if (n) memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

static sm_status *wp_prepare(const sm_node *node, void **state) {
  wp_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  const char *a = "", *b = "", *rp = "row_lengths";
  size_t an = 0, bn = 0, rn = 11;
  st->max_chars = 0;
  sm_status *s = sm__node_attr_string(node, "suffix_indicator", &a, &an);
  if (!s) s = sm__node_attr_int(node, "max_bytes_per_word", &st->max_bytes);
  if (!s && sm__node_attr(node, "max_chars_per_token")) s = sm__node_attr_int(node, "max_chars_per_token", &st->max_chars);
  if (!s) s = sm__node_attr_bool(node, "use_unknown_token", &st->use_unk);
  if (!s) s = sm__node_attr_string(node, "unknown_token", &b, &bn);
  if (!s && sm__node_attr(node, "split_unknown_characters"))
    s = sm__node_attr_bool(node, "split_unknown_characters", &st->split_unk);
  if (!s && sm__node_attr(node, "output_row_partition_type"))
    s = sm__node_attr_string(node, "output_row_partition_type", &rp, &rn);
  if (!s) {
    if (rn == 10 && !memcmp(rp, "row_splits", 10))
      st->row_splits = 1;
    else if (!(rn == 11 && !memcmp(rp, "row_lengths", 11)))
      s = sm_status_new(SM_INVALID_ARGUMENT, "Unexpected value for output_row_partition_type");
  }
  if (!s) {
    st->suffix = dup_bytes(a, an), st->suffix_n = an;
    st->unk = dup_bytes(b, bn), st->unk_n = bn;
    if (!st->suffix || !st->unk) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (s) {
    wp_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

typedef struct wp_vocab {
  sm_table *t;
  sm_tensor *key, *dflt, *val;
  tx_buf kb; /* suffix + piece */
} wp_vocab;

static sm_status *wp_contains(sm_kctx *ctx, wp_vocab *v, const char *pre, size_t pn, const char *s, size_t n, int *in) {
  v->kb.len = 0;
  sm_status *st = tx_put(ctx, &v->kb, pre, pn);
  if (!st) st = tx_put(ctx, &v->kb, s, n);
  if (!st) st = sm_tensor_set_string(v->key, 0, v->kb.p, v->kb.len);
  if (!st) st = sm__table_find(v->t, v->key, v->dflt, v->val);
  if (!st) *in = *(const int64_t *)sm_tensor_data(v->val) != -1;
  return st;
}

/* One word: its pieces appended to t (or the whole word / the unknown token), *count of them. */
static sm_status *wp_word(sm_kctx *ctx, const wp_state *st, wp_vocab *v, const char *w, size_t n, toks *t,
                          int64_t *count) {
  if ((int64_t)n > st->max_bytes) { /* TF Text's end offset is the unknown token's length here */
    *count = 1;
    return st->use_unk ? toks_add(ctx, t, NULL, 0, st->unk, st->unk_n, 0, (int64_t)st->unk_n)
                       : toks_add(ctx, t, NULL, 0, w, n, 0, (int64_t)n);
  }
  int64_t mark = t->n;
  size_t mark_bytes = t->bytes.len, mark_lens = t->lens.len, mark_b = t->begins.len, mark_e = t->ends.len;
  sm_status *s = NULL;
  for (size_t start = 0; start < n && !s;) {
    /* the character ends from start, at most max_chars of them */
    size_t ends_cap = 0, nends = 0, *ends = NULL, at = start;
    tx_buf eb = {0};
    while (at < n && !s) {
      at += utf8_step((const unsigned char *)w + at, n - at);
      s = tx_put(ctx, &eb, &at, sizeof at);
      nends++;
      if (st->max_chars > 0 && (int64_t)nends == st->max_chars) break;
    }
    ends = (size_t *)(void *)eb.p;
    (void)ends_cap;
    int found = 0, unknown_char = 0;
    size_t end = 0;
    for (size_t k = nends; k-- > 0 && !s;) {
      int in = 0;
      s = wp_contains(ctx, v, st->suffix, start > 0 ? st->suffix_n : 0, w + start, ends[k] - start, &in);
      if (s) break;
      if (in) {
        found = 1, end = ends[k];
        break;
      }
      if (k == 0 && st->split_unk) {
        found = 1, unknown_char = 1, end = ends[0];
        break;
      }
    }
    sm__kctx_scratch_free(ctx, eb.p);
    if (s) break;
    if (!found) { /* the whole word, or the unknown token, in place of any pieces found */
      t->n = mark, t->bytes.len = mark_bytes, t->lens.len = mark_lens, t->begins.len = mark_b, t->ends.len = mark_e;
      *count = 1;
      return st->use_unk ? toks_add(ctx, t, NULL, 0, st->unk, st->unk_n, 0, (int64_t)n)
                         : toks_add(ctx, t, NULL, 0, w, n, 0, (int64_t)n);
    }
    const char *pre = start > 0 ? st->suffix : NULL;
    size_t pn = start > 0 ? st->suffix_n : 0;
    if (unknown_char && st->use_unk)
      s = toks_add(ctx, t, pre, pn, st->unk, st->unk_n, (int64_t)start, (int64_t)end);
    else
      s = toks_add(ctx, t, pre, pn, w + start, end - start, (int64_t)start, (int64_t)end);
    start = end;
  }
  *count = t->n - mark;
  return s;
}

static sm_status *wp_compute(const void *state, sm_kctx *ctx) {
  const wp_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(in) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "input_values must be strings");
  wp_vocab v = {0};
  sm_status *s = sm__handle_table(sm__kctx_input(ctx, 1), 1, &v.t);
  if (s) return s;
  if (sm__table_key_dtype(v.t) != SM_STRING || sm__table_value_dtype(v.t) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "the vocabulary table %s maps %s to %s; WordpieceTokenizeWithOffsets needs string to int64",
                         sm__table_name(v.t), sm_dtype_name(sm__table_key_dtype(v.t)),
                         sm_dtype_name(sm__table_value_dtype(v.t)));
  int64_t one = 1;
  s = sm_tensor_new(SM_STRING, 1, &one, &v.key);
  if (!s) s = sm_tensor_new(SM_INT64, 1, &one, &v.dflt);
  if (!s) s = sm_tensor_new(SM_INT64, 1, &one, &v.val);
  if (!s) *(int64_t *)sm_tensor_data(v.dflt) = -1;
  toks t = {0};
  if (!s && st->row_splits) s = toks_row(ctx, &t, 0);
  int64_t ne = sm_tensor_num_elements(in);
  for (int64_t i = 0; i < ne && !s; i++) {
    size_t n;
    const char *w = sm_tensor_string(in, i, &n);
    int64_t c = 0;
    s = wp_word(ctx, st, &v, w, n, &t, &c);
    if (!s) s = toks_row(ctx, &t, st->row_splits ? t.n : c);
  }
  if (!s) s = toks_emit(ctx, &t, 0, 1, 2, 3, 0);
  toks_free(ctx, &t);
  sm__kctx_scratch_free(ctx, v.kb.p);
  sm_tensor_free(v.key);
  sm_tensor_free(v.dflt);
  sm_tensor_free(v.val);
  return s;
}

/* ---- TFText>WhitespaceTokenizeWithOffsetsV2 -------------------------------------------------- */

/* The config is a bitmap of whitespace code points (bit c of byte c / 8), as TF Text's config builder
 * writes it. As TF Text: a token ends one byte before the position after the whitespace character
 * that ends it (a multi-byte whitespace leaves its leading bytes in the token), an ill-formed
 * sequence (ICU's U8_NEXT step) is never whitespace. */
static sm_status *ws_v2_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0), *cfg = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(in) != SM_STRING || sm_tensor_rank(in) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_values must be a 1-D string tensor, got shape %s", tx_shape_of(in).s);
  if (sm_tensor_dtype(cfg) != SM_STRING || sm_tensor_num_elements(cfg) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_config must be a string scalar, got shape %s", tx_shape_of(cfg).s);
  size_t cn;
  const unsigned char *config = (const unsigned char *)sm_tensor_string(cfg, 0, &cn);
  uint64_t maxcp = (uint64_t)cn * 8;
  toks t = {0};
  sm_status *s = toks_row(ctx, &t, 0);
  int64_t rows = sm_tensor_num_elements(in);
  for (int64_t i = 0; i < rows && !s; i++) {
    size_t n;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(in, i, &n);
    size_t pos = 0, start = 0;
    int inside = 0;
    while (pos < n && !s) {
      size_t prev = pos, k = utf8_step(p + pos, n - pos);
      int64_t cp = -1;
      if (utf8_char(p + pos, n - pos) == k) { /* a well-formed character: its code point */
        cp = k == 1 ? p[pos] : k == 2 ? p[pos] & 0x1F : k == 3 ? p[pos] & 0x0F : p[pos] & 0x07;
        for (size_t j = 1; j < k; j++) cp = cp << 6 | (p[pos + j] & 0x3F);
      }
      pos += k;
      int ws = cp >= 0 && (uint64_t)cp < maxcp && (config[cp >> 3] & (1u << (cp & 7)));
      if (ws) {
        if (inside) {
          size_t end = pos - 1;
          s = toks_add(ctx, &t, NULL, 0, (const char *)p + start, end - start, (int64_t)start, (int64_t)end);
          inside = 0;
        }
      } else if (!inside) {
        start = prev, inside = 1;
      }
    }
    if (!s && inside) s = toks_add(ctx, &t, NULL, 0, (const char *)p + start, pos - start, (int64_t)start, (int64_t)pos);
    if (!s) s = toks_row(ctx, &t, t.n);
  }
  if (!s) s = toks_emit(ctx, &t, 0, 1, 2, 3, 1);
  toks_free(ctx, &t);
  return s;
}

/* ---- UnicodeScriptTokenizeWithOffsets, WhitespaceTokenizeWithOffsets ------------------------- */

static struct {
  int8_t (*is_uwhite)(int32_t c);
  int (*script)(int32_t c, int *err);
  int ok;
} us;
static pthread_once_t us_once = PTHREAD_ONCE_INIT;
static void us_load(void) {
  int v;
  void *h = sm__icu_lib(&v);
  if (!h) return;
  *(void **)&us.is_uwhite = sm__icu_sym(h, "u_isUWhiteSpace", v);
  *(void **)&us.script = sm__icu_sym(h, "uscript_getScript", v);
  us.ok = us.is_uwhite && us.script;
}

/* Code points (int32) in rows given by splits: tokens of code points split at whitespace (TF Text's
 * WhitespaceTokenizeWithOffsets) or also where ICU's script changes (UnicodeScriptTokenizeWithOffsets,
 * keep_whitespace), with TF Text's offsets (code-point indices in the row). Outputs: values, inner
 * splits (Tsplits), offset starts and limits (int64), outer splits (Tsplits, splits' shape). */
static sm_status *cp_tokenize(sm_kctx *ctx, int by_script, int keep_ws, const char *op) {
  pthread_once(&us_once, us_load);
  if (!us.ok)
    return sm_status_new(SM_UNIMPLEMENTED, "%s needs the system's ICU library (libicuuc), and none was found", op);
  const sm_tensor *vals = sm__kctx_input(ctx, 0), *sp = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(vals) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_values must be int32", op);
  if (!tx_is_index(sp)) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_splits must be int32 or int64", op);
  int64_t nv = sm_tensor_num_elements(vals), ns = sm_tensor_num_elements(sp);
  if (ns < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_splits must have at least one element", op);
  for (int64_t i = 0; i < ns; i++) {
    int64_t v = tx_int(sp, i);
    if (v < 0 || v > nv || (i && v < tx_int(sp, i - 1)))
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "%s: input_splits[%" PRId64 "] = %" PRId64 " is out of order or outside [0, %" PRId64 "]", op, i,
                           v, nv);
  }
  const int32_t *cp = sm_tensor_data(vals);
  int sdt = sm_tensor_dtype(sp);
  sm_tensor *outer;
  sm_status *s = sm__kctx_alloc_output(ctx, 4, sdt, sm_tensor_rank(sp), sm_tensor_dims(sp), &outer);
  if (s) return s;
  tx_buf ov = {0}, inner = {0}, starts = {0}, limits = {0};
  int64_t nvals = 0, ntok = 0;
  for (int64_t r = 0; r + 1 < ns && !s; r++) {
    tx_set_int(outer, r, ntok);
    int64_t w0 = tx_int(sp, r), w1 = tx_int(sp, r + 1), skipped = 0;
    int prev_script = -1 /* USCRIPT_INVALID_CODE */, has_start = 0, was_space = 0;
    for (int64_t k = w0; k < w1 && !s; k++) {
      int32_t c = cp[k];
      int space = us.is_uwhite(c) != 0;
      if (by_script) {
        int err = 0, script = us.script(c, &err);
        if (err > 0) script = -1;
        if (script != prev_script || (keep_ws && space != was_space)) {
          if (has_start) s = put_i64(ctx, &limits, k - w0 - skipped);
          prev_script = script, has_start = 0;
        }
      } else if (space) {
        if (has_start) s = put_i64(ctx, &limits, k - w0 - skipped);
        has_start = 0;
      }
      if (!s && (!space || (by_script && keep_ws))) {
        if (!has_start) {
          s = put_i64(ctx, &starts, k - w0);
          if (!s) s = put_i64(ctx, &inner, nvals);
          ntok++, has_start = 1;
        }
        if (!s) s = tx_put(ctx, &ov, &c, sizeof c);
        nvals++;
      }
      if (!keep_ws || !by_script) skipped = space ? skipped + 1 : 0;
      was_space = space;
    }
    if (!s && has_start) s = put_i64(ctx, &limits, w1 - w0 - skipped);
  }
  if (!s) {
    tx_set_int(outer, ns - 1, ntok);
    s = put_i64(ctx, &inner, nvals);
  }
  sm_tensor *o0, *o1, *o2, *o3;
  int64_t ni = ntok + 1;
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 1, &nvals, &o0);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, sdt, 1, &ni, &o1);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &ntok, &o2);
  if (!s) s = sm__kctx_alloc_output(ctx, 3, SM_INT64, 1, &ntok, &o3);
  if (!s) {
    if (nvals) memcpy(sm_tensor_data(o0), ov.p, (size_t)nvals * 4);
    const int64_t *pi = (const int64_t *)(void *)inner.p;
    for (int64_t i = 0; i < ni; i++) tx_set_int(o1, i, pi[i]);
    if (ntok) {
      memcpy(sm_tensor_data(o2), starts.p, (size_t)ntok * 8);
      memcpy(sm_tensor_data(o3), limits.p, (size_t)ntok * 8);
    }
  }
  sm__kctx_scratch_free(ctx, ov.p);
  sm__kctx_scratch_free(ctx, inner.p);
  sm__kctx_scratch_free(ctx, starts.p);
  sm__kctx_scratch_free(ctx, limits.p);
  return s;
}

static sm_status *script_tok_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int keep = 0;
  const sm_node *n = sm__kctx_node(ctx);
  sm_status *s = sm__node_attr(n, "keep_whitespace") ? sm__node_attr_bool(n, "keep_whitespace", &keep) : NULL;
  return s ? s : cp_tokenize(ctx, 1, keep, "UnicodeScriptTokenizeWithOffsets");
}

static sm_status *ws_v1_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  return cp_tokenize(ctx, 0, 0, "WhitespaceTokenizeWithOffsets");
}

/* ---- TFText>RoundRobinTrim ------------------------------------------------------------------- */

typedef struct rr_row {
  int64_t idx, size, used;
} rr_row;

static int rr_by_size(const void *a, const void *b) {
  const rr_row *x = a, *y = b;
  return x->size < y->size ? -1 : x->size > y->size;
}
static int rr_by_idx(const void *a, const void *b) {
  const rr_row *x = a, *y = b;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* TF Text's RoundRobinTrimmer::ProcessBatch: the rows that fit whole (smallest first), then an even
 * share for the others, then one more each in segment order while room is left. */
static void rr_process(rr_row *r, int64_t n, int64_t maxlen) {
  int64_t left = maxlen < 0 ? 0 : maxlen, filled = 0;
  qsort(r, (size_t)n, sizeof *r, rr_by_size);
  for (int64_t i = 0; i < n; i++) {
    if (r[i].size * (n - filled) > left) break;
    r[i].used = r[i].size;
    left -= r[i].used;
    filled++;
  }
  if (filled < n) {
    int64_t count = left / (n - filled);
    for (int64_t i = filled; i < n; i++) r[i].used = count, left -= count;
  }
  qsort(r, (size_t)n, sizeof *r, rr_by_idx);
  for (int64_t i = 0; i < n && left > 0; i++)
    if (r[i].used < r[i].size) r[i].used++, left--;
}

/* The inputs of TFText>RoundRobinTrim and TFText>RoundRobinGenerateMasks (max_sequence_length, N
 * values, N row splits) checked, and the values each segment keeps per batch row: used[b * nseg + k]
 * (scratch), with nseg and the batch size nb. Shared with tftext_more.c. */
sm_status *sm__tftext_rr_used(sm_kctx *ctx, const char *op, int64_t *nseg_out, int64_t *nb_out, int64_t **used_out) {
  int64_t nseg = 0;
  *nseg_out = 0, *nb_out = 0, *used_out = NULL;
  sm_status *s = sm__node_attr_int(sm__kctx_node(ctx), "N", &nseg);
  if (s) return s;
  if (nseg < 1 || 2 * nseg + 1 != sm__kctx_num_inputs(ctx))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: N = %lld does not match its %d inputs", op, (long long)nseg,
                         sm__kctx_num_inputs(ctx));
  const sm_tensor *ml = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(ml) != SM_INT32 || sm_tensor_rank(ml) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Shape must be a scalar: %s", tx_shape_of(ml).s);
  const int64_t maxlen = *(const int32_t *)sm_tensor_data(ml);
  int64_t nb = -1;
  for (int64_t k = 0; k < nseg; k++) { /* TF Text takes the batch from the first segment's splits, unchecked */
    const sm_tensor *v = sm__kctx_input(ctx, (int)(1 + k)), *sp = sm__kctx_input(ctx, (int)(1 + nseg + k));
    if (sm_tensor_rank(v) != 1 || sm_tensor_rank(sp) != 1 || !tx_is_index(sp))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: segment %lld's values and row splits must be rank 1 (%s, %s)", op,
                           (long long)k, tx_shape_of(v).s, tx_shape_of(sp).s);
    int64_t ns = sm_tensor_num_elements(sp), nv = sm_tensor_num_elements(v);
    if (ns < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: segment %lld has no row splits", op, (long long)k);
    if (nb < 0) nb = ns - 1;
    if (ns - 1 != nb)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: segment %lld has %lld rows, segment 0 has %lld", op, (long long)k,
                           (long long)(ns - 1), (long long)nb);
    for (int64_t i = 0; i < ns; i++) {
      int64_t x = tx_int(sp, i);
      if (x < 0 || x > nv || (i && x < tx_int(sp, i - 1)) || (i == 0 && x != 0))
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: segment %lld's row splits are not 0, ..., %lld in order", op,
                             (long long)k, (long long)nv);
    }
  }
  rr_row *rows = sm__kctx_scratch(ctx, (size_t)nseg * sizeof *rows, &s);
  int64_t *used = rows ? sm__kctx_scratch(ctx, (size_t)(nb * nseg + 1) * sizeof *used, &s) : NULL;
  if (!used) return s;
  for (int64_t b = 0; b < nb; b++) {
    for (int64_t k = 0; k < nseg; k++) {
      const sm_tensor *sp = sm__kctx_input(ctx, (int)(1 + nseg + k));
      rows[k].idx = k, rows[k].size = tx_int(sp, b + 1) - tx_int(sp, b), rows[k].used = 0;
    }
    rr_process(rows, nseg, maxlen);
    for (int64_t k = 0; k < nseg; k++) used[b * nseg + k] = rows[k].used;
  }
  *nseg_out = nseg, *nb_out = nb, *used_out = used;
  return NULL;
}

static sm_status *rr_trim_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t nseg, nb, *used;
  sm_status *s = sm__tftext_rr_used(ctx, "RoundRobinTrim", &nseg, &nb, &used);
  int64_t *tot = s ? NULL : sm__kctx_scratch(ctx, (size_t)nseg * sizeof *tot, &s);
  if (!tot) return s;
  memset(tot, 0, (size_t)nseg * sizeof *tot);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t k = 0; k < nseg; k++) tot[k] += used[b * nseg + k];
  for (int64_t k = 0; k < nseg && !s; k++) {
    const sm_tensor *v = sm__kctx_input(ctx, (int)(1 + k)), *sp = sm__kctx_input(ctx, (int)(1 + nseg + k));
    int dt = sm_tensor_dtype(v);
    sm_tensor *ov, *os;
    int64_t nsp = nb + 1;
    s = sm__kctx_alloc_output(ctx, (int)k, dt, 1, &tot[k], &ov);
    if (!s) s = sm__kctx_alloc_output(ctx, (int)(nseg + k), sm_tensor_dtype(sp), 1, &nsp, &os);
    if (s) break;
    size_t es = dt == SM_STRING ? 0 : sm_dtype_size(dt);
    int64_t at = 0;
    tx_set_int(os, 0, 0);
    for (int64_t b = 0; b < nb && !s; b++) {
      int64_t from = tx_int(sp, b), u = used[b * nseg + k];
      for (int64_t j = 0; j < u && !s; j++) {
        if (dt == SM_STRING) {
          size_t len;
          const char *str = sm_tensor_string(v, from + j, &len);
          s = sm_tensor_set_string(ov, at + j, str, len);
        } else {
          memcpy((char *)sm_tensor_data(ov) + (size_t)(at + j) * es, (const char *)sm_tensor_data(v) + (size_t)(from + j) * es, es);
        }
      }
      at += u;
      tx_set_int(os, b + 1, at);
    }
  }
  return s;
}

/* ---- TFText>NgramsStringJoin ----------------------------------------------------------------- */

/* Windows of `width` tokens joined by the separator, within each innermost row: the rows of a
 * tensor's last dimension (RAGGED_RANK 0: the output keeps the shape, its last dimension
 * max(0, d - width + 1)) or of the innermost row splits (the outer splits pass through). */
static sm_status *ngrams_join_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_node *node = sm__kctx_node(ctx);
  int64_t width = 0, rr = 0;
  const char *sep = "";
  size_t sn = 0;
  sm_status *s = sm__node_attr_int(node, "width", &width);
  if (!s && sm__node_attr(node, "RAGGED_RANK")) s = sm__node_attr_int(node, "RAGGED_RANK", &rr);
  if (!s && sm__node_attr(node, "string_separator")) s = sm__node_attr_string(node, "string_separator", &sep, &sn);
  if (s) return s;
  if (width < 1) return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: width must be at least 1, got %lld", (long long)width);
  if (rr < 0 || rr + 1 != sm__kctx_num_inputs(ctx))
    return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: RAGGED_RANK %lld with %d inputs", (long long)rr,
                         sm__kctx_num_inputs(ctx));
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(in) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: input_values must be strings");
  int64_t total = sm_tensor_num_elements(in), nrows, per = 0;
  const sm_tensor *inner = NULL;
  if (rr == 0) {
    if (sm_tensor_rank(in) < 1) return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: input_values must have a dimension");
    per = sm_tensor_dims(in)[sm_tensor_rank(in) - 1];
    nrows = per ? total / per : 0;
  } else {
    for (int64_t k = 0; k < rr; k++) {
      const sm_tensor *sp = sm__kctx_input(ctx, (int)(1 + k));
      int64_t ns = sm_tensor_num_elements(sp),
              lim = k + 1 < rr ? sm_tensor_num_elements(sm__kctx_input(ctx, (int)(2 + k))) - 1 : total;
      if (sm_tensor_rank(sp) != 1 || !tx_is_index(sp) || ns < 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: row splits %lld must be a non-empty vector", (long long)k);
      for (int64_t i = 0; i < ns; i++) {
        int64_t x = tx_int(sp, i);
        if (x < 0 || x > lim || (i && x < tx_int(sp, i - 1)))
          return sm_status_new(SM_INVALID_ARGUMENT, "NgramsStringJoin: row splits %lld are out of order or past %lld",
                               (long long)k, (long long)lim);
      }
      if (k + 1 < rr) {
        sm_tensor *o;
        s = sm__kctx_alloc_output(ctx, (int)(1 + k), sm_tensor_dtype(sp), 1, &ns, &o);
        if (s) return s;
        memcpy(sm_tensor_data(o), sm_tensor_data(sp), sm_tensor_nbytes(sp));
      }
    }
    inner = sm__kctx_input(ctx, (int)rr);
    nrows = sm_tensor_num_elements(inner) - 1;
  }
  tx_buf bytes = {0}, lens = {0};
  int64_t nout = 0;
  sm_tensor *osp = NULL;
  if (inner) {
    int64_t ns = nrows + 1;
    s = sm__kctx_alloc_output(ctx, (int)rr, sm_tensor_dtype(inner), 1, &ns, &osp);
  }
  for (int64_t r = 0; r < nrows && !s; r++) {
    int64_t a = inner ? tx_int(inner, r) : r * per, b = inner ? tx_int(inner, r + 1) : (r + 1) * per;
    if (osp) tx_set_int(osp, r, nout);
    for (int64_t j = a; j + width <= b && !s; j++) {
      size_t at = bytes.len;
      for (int64_t t = 0; t < width && !s; t++) {
        size_t n;
        const char *str = sm_tensor_string(in, j + t, &n);
        if (t) s = tx_put(ctx, &bytes, sep, sn);
        if (!s) s = tx_put(ctx, &bytes, str, n);
      }
      if (!s) s = put_i64(ctx, &lens, (int64_t)(bytes.len - at));
      nout++;
    }
  }
  if (!s && osp) tx_set_int(osp, nrows, nout);
  sm_tensor *ov = NULL;
  if (!s) {
    if (rr == 0) {
      int rank = sm_tensor_rank(in);
      int64_t d[SM_MAX_RANK];
      memcpy(d, sm_tensor_dims(in), (size_t)rank * sizeof *d);
      d[rank - 1] = d[rank - 1] - width + 1 > 0 ? d[rank - 1] - width + 1 : 0;
      s = sm__kctx_alloc_output(ctx, 0, SM_STRING, rank, d, &ov);
    } else {
      s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &nout, &ov);
    }
  }
  const int64_t *l = (const int64_t *)(void *)lens.p;
  size_t at = 0;
  for (int64_t i = 0; i < nout && !s; i++) {
    s = sm_tensor_set_string(ov, i, bytes.p + at, (size_t)l[i]);
    at += (size_t)l[i];
  }
  sm__kctx_scratch_free(ctx, bytes.p);
  sm__kctx_scratch_free(ctx, lens.p);
  return s;
}

const sm_kernel sm_kernels_tftext[] = {
    {"CaseFoldUTF8", NULL, casefold_compute, NULL, 0},
    {"NormalizeUTF8", NULL, normalize_compute, NULL, 0},
    {"RegexSplitWithOffsets", NULL, regex_split_compute, NULL, 0},
    {"WordpieceTokenizeWithOffsets", wp_prepare, wp_compute, wp_release, 0},
    {"TFText>WhitespaceTokenizeWithOffsetsV2", NULL, ws_v2_compute, NULL, 0},
    {"WhitespaceTokenizeWithOffsets", NULL, ws_v1_compute, NULL, 0},
    {"UnicodeScriptTokenizeWithOffsets", NULL, script_tok_compute, NULL, 0},
    {"TFText>RoundRobinTrim", NULL, rr_trim_compute, NULL, 0},
    {"TFText>NgramsStringJoin", NULL, ngrams_join_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
