/* tftext_more.c - more of TensorFlow Text's custom kernels, with tensorflow_text 2.21's semantics
 * (its kernels in tensorflow_text/core/kernels are the reference):
 *   TFText>ByteSplitWithOffsets (text.ByteSplitter.split_with_offsets: each string's bytes as uint8,
 *     int64 row splits, int32 start/end offsets) and TFText>ByteSplitByOffsets (split_by_offsets:
 *     substrings by int32 [start, end) offsets per row; offsets outside the string, a start after
 *     its end, and row splits that do not fit the inputs are refused - TF Text reads past them);
 *   TFText>Utf8Binarize (text.utf8_binarize: the first word_length code points of each string, the
 *     low bits_per_char bits of each little-endian as 0/1 floats, an ill-formed sequence (ICU's
 *     U8_NEXT maximal subpart) replaced by replacement_char, the rest zero);
 *   TFText>RoundRobinGenerateMasks (RoundRobinTrimmer.generate_masks: a bool mask per segment of the
 *     values RoundRobinTrim keeps, through tftext.c's sm__tftext_rr_used);
 *   SplitMergeTokenizeWithOffsets (text.SplitMergeTokenizer: a label 0 per character starts a token,
 *     1 merges it into the previous one) and TokenizerFromLogits (text.SplitMergeFromLogitsTokenizer:
 *     split when logit[0] > logit[1]): characters by their lead byte's length as TF Text counts them,
 *     Unicode white space (ICU's u_isUWhiteSpace, through the system's libicuuc) dropped and, with
 *     force_split_at_break_character, ending the token; a string whose last character runs past its
 *     end is refused (TF Text reads past the string). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ops/text_internal.h"
#include "runtime/kernel.h"

/* A rank-1 input of dtype dt, or the error naming op and the input. */
static sm_status *want_vec(const sm_tensor *t, const char *op, const char *what, int dt) {
  if (sm_tensor_dtype(t) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be %s, got %s", op, what, sm_dtype_name(dt), sm_dtype_name(sm_tensor_dtype(t)));
  if (sm_tensor_rank(t) == 1) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be rank 1, got shape %s", op, what, tx_shape_of(t).s);
}

/* ---- TFText>ByteSplitWithOffsets, TFText>ByteSplitByOffsets ---------------------------------- */

static sm_status *byte_split_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  sm_status *s = want_vec(in, "ByteSplitWithOffsets", "input_values", SM_STRING);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(in), total = 0, nsp = n + 1;
  for (int64_t i = 0; i < n; i++) {
    size_t len;
    sm_tensor_string(in, i, &len);
    if (len > INT32_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "ByteSplitWithOffsets: string %" PRId64 " is over 2^31 bytes", i);
    total += (int64_t)len;
  }
  sm_tensor *ob, *os, *ost, *oe;
  s = sm__kctx_alloc_output(ctx, 0, SM_UINT8, 1, &total, &ob);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &nsp, &os);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT32, 1, &total, &ost);
  if (!s) s = sm__kctx_alloc_output(ctx, 3, SM_INT32, 1, &total, &oe);
  if (s) return s;
  uint8_t *b = sm_tensor_data(ob);
  int64_t *sp = sm_tensor_data(os);
  int32_t *st = sm_tensor_data(ost), *en = sm_tensor_data(oe);
  int64_t at = 0;
  sp[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len;
    const char *p = sm_tensor_string(in, i, &len);
    if (len) memcpy(b + at, p, len);
    for (size_t j = 0; j < len; j++) st[at + (int64_t)j] = (int32_t)j, en[at + (int64_t)j] = (int32_t)j + 1;
    at += (int64_t)len;
    sp[i + 1] = at;
  }
  return NULL;
}

static sm_status *byte_split_by_offsets_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const char op[] = "ByteSplitByOffsets";
  const sm_tensor *in = sm__kctx_input(ctx, 0), *bt = sm__kctx_input(ctx, 1), *et = sm__kctx_input(ctx, 2),
                  *rt = sm__kctx_input(ctx, 3);
  sm_status *s = want_vec(in, op, "input_values", SM_STRING);
  if (!s) s = want_vec(bt, op, "input_start_offsets", SM_INT32);
  if (!s) s = want_vec(et, op, "input_end_offsets", SM_INT32);
  if (!s) s = want_vec(rt, op, "input_row_splits", SM_INT64);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(in), nb = sm_tensor_num_elements(bt), ne = sm_tensor_num_elements(et);
  const int32_t *b = sm_tensor_data(bt), *e = sm_tensor_data(et);
  const int64_t *rs = sm_tensor_data(rt);
  if (sm_tensor_num_elements(rt) != n + 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_row_splits has %" PRId64 " elements for %" PRId64 " strings (want %" PRId64 ")",
                         op, sm_tensor_num_elements(rt), n, n + 1);
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    if (rs[i] < 0 || rs[i + 1] < rs[i] || rs[i + 1] > nb || rs[i + 1] > ne)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_row_splits [%" PRId64 ", %" PRId64 "] of row %" PRId64
                           " is not an ordered range within the %" PRId64 " start and %" PRId64 " end offsets",
                           op, rs[i], rs[i + 1], i, nb, ne);
    size_t len;
    sm_tensor_string(in, i, &len);
    for (int64_t j = rs[i]; j < rs[i + 1]; j++) {
      if (b[j] < 0 || (size_t)b[j] > len) return sm_status_new(SM_INVALID_ARGUMENT, "Start offsets out of range.");
      if (e[j] < 0 || (size_t)e[j] > len) return sm_status_new(SM_INVALID_ARGUMENT, "End offsets out of range.");
      if (b[j] > e[j]) return sm_status_new(SM_INVALID_ARGUMENT, "Start offset after end offset.");
    }
    total += rs[i + 1] - rs[i];
  }
  sm_tensor *ov, *os;
  int64_t nsp = n + 1;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &total, &ov);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &nsp, &os);
  if (s) return s;
  int64_t *osp = sm_tensor_data(os), at = 0;
  osp[0] = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    size_t len;
    const char *p = sm_tensor_string(in, i, &len);
    for (int64_t j = rs[i]; j < rs[i + 1] && !s; j++) s = sm_tensor_set_string(ov, at++, p + b[j], (size_t)(e[j] - b[j]));
    osp[i + 1] = at;
  }
  return s;
}

/* ---- TFText>Utf8Binarize ---------------------------------------------------------------------- */

/* ICU's U8_NEXT at s[0..n) (n > 0): the code point (-1 when ill-formed) and the bytes taken (a
 * well-formed character, or the maximal subpart of an ill-formed one). */
static int32_t u8_next(const unsigned char *s, size_t n, size_t *took) {
  unsigned c = s[0];
  *took = 1;
  if (c < 0x80) return (int32_t)c;
  size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c >= 0xE0 && c <= 0xEF) need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return -1;
  int32_t cp = (int32_t)(c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07));
  size_t k = 1;
  if (k < n && s[k] >= lo && s[k] <= hi) {
    cp = (cp << 6) | (s[k] & 0x3F), k++;
    while (k < need && k < n && (s[k] & 0xC0) == 0x80) cp = (cp << 6) | (s[k] & 0x3F), k++;
  }
  *took = k;
  return k == need ? cp : -1;
}

static sm_status *utf8_binarize_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_node *node = sm__kctx_node(ctx);
  int64_t wl = 0, bpc = 0, rep = 0;
  sm_status *s = sm__node_attr_int(node, "word_length", &wl);
  if (!s) s = sm__node_attr_int(node, "bits_per_char", &bpc);
  if (!s) s = sm__node_attr_int(node, "replacement_char", &rep);
  if (s) return s;
  if (wl < 0 || bpc < 0 || wl > INT32_MAX || bpc > INT32_MAX || (wl && bpc > INT32_MAX / wl))
    return sm_status_new(SM_INVALID_ARGUMENT, "Utf8Binarize: word_length %" PRId64 " and bits_per_char %" PRId64
                         " must be >= 0 with a product below 2^31", wl, bpc);
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if ((s = want_vec(in, "Utf8Binarize", "input_tokens", SM_STRING))) return s;
  int64_t dims[2] = {sm_tensor_num_elements(in), wl * bpc};
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 2, dims, &out))) return s;
  float *o = sm_tensor_data(out);
  for (int64_t i = 0; i < dims[0]; i++, o += dims[1]) {
    size_t len, at = 0, took;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(in, i, &len);
    int64_t pos = 0;
    for (int64_t c = 0; at < len && c < wl; c++, at += took) {
      int32_t cp = u8_next(p + at, len - at, &took);
      if (cp < 0) cp = (int32_t)rep; /* TF Text's int: the attr's low 32 bits, shifted arithmetically */
      for (int64_t k = 0; k < bpc; k++, cp >>= 1) o[pos++] = (cp & 1) ? 1.0f : 0.0f;
    }
  }
  return NULL;
}

/* ---- TFText>RoundRobinGenerateMasks ----------------------------------------------------------- */

static sm_status *rr_masks_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int64_t nseg, nb, *used;
  sm_status *s = sm__tftext_rr_used(ctx, "RoundRobinGenerateMasks", &nseg, &nb, &used);
  for (int64_t k = 0; k < nseg && !s; k++) {
    const sm_tensor *sp = sm__kctx_input(ctx, (int)(1 + nseg + k));
    int64_t len = tx_int(sp, nb);
    sm_tensor *om;
    if ((s = sm__kctx_alloc_output(ctx, (int)k, SM_BOOL, 1, &len, &om))) break;
    uint8_t *m = sm_tensor_data(om);
    for (int64_t b = 0; b < nb; b++) {
      int64_t from = tx_int(sp, b), to = tx_int(sp, b + 1), u = used[b * nseg + k];
      for (int64_t j = from; j < to; j++) m[j] = j - from < u;
    }
  }
  return s;
}

/* ---- SplitMergeTokenizeWithOffsets, TokenizerFromLogits --------------------------------------- */

static struct {
  int8_t (*is_ws)(int32_t c);
  int ok;
} ws;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;
static void ws_load(void) {
  int v;
  void *h = sm__icu_lib(&v);
  if (h) ws.ok = (*(void **)&ws.is_ws = sm__icu_sym(h, "u_isUWhiteSpace", v)) != NULL;
}

/* Tokens by a split decision per character: each token's bytes and length, begin, end; rows. */
typedef struct sm_toks {
  tx_buf bytes, lens, begins, ends;
  int64_t n;
} sm_toks;

typedef struct sm_split_src {
  const int32_t *labels; /* SplitMerge: label 0 splits */
  const float *logits;   /* FromLogits: logit[2i] > logit[2i+1] splits */
} sm_split_src;

static sm_status *split_merge_string(sm_kctx *ctx, const char *op, const char *p, size_t len, int64_t avail,
                                     sm_split_src src, int force, sm_toks *t, int64_t *ntok) {
  static const unsigned char clen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  int64_t nch = 0;
  for (size_t at = 0; at < len; nch++) {
    size_t k = clen[(unsigned char)p[at] >> 4];
    if (k > len - at)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: Input string is not utf8 valid: its last character (byte %zu) runs past its %zu bytes",
                           op, at, len);
    at += k;
  }
  if (nch > avail)
    return sm_status_new(SM_INVALID_ARGUMENT, src.labels ? "Number of labels %" PRId64 " is insufficient for text %.*s"
                                                         : "Number of logits, %" PRId64 ", is insufficient for text \"%.*s\"",
                         avail, (int)(len > 200 ? 200 : len), p);
  int last_break = 0, have = 0;
  sm_status *s = NULL;
  size_t at = 0;
  for (int64_t i = 0; i < nch && !s; i++) {
    size_t k = clen[(unsigned char)p[at] >> 4], took;
    int32_t c = u8_next((const unsigned char *)p + at, k, &took);
    if (took != k) c = -1;
    int brk = c >= 0 && ws.is_ws(c);
    if (!brk) {
      int split = src.labels ? src.labels[i] == 0 : src.logits[2 * i] > src.logits[2 * i + 1];
      if (split || !have || (last_break && force)) {
        int64_t b = (int64_t)at, e = (int64_t)(at + k), l = (int64_t)k;
        s = tx_put(ctx, &t->bytes, p + at, k);
        if (!s) s = tx_put(ctx, &t->lens, &l, 8);
        if (!s) s = tx_put(ctx, &t->begins, &b, 8);
        if (!s) s = tx_put(ctx, &t->ends, &e, 8);
        if (!s) t->n++, (*ntok)++;
        have = 1;
      } else {
        s = tx_put(ctx, &t->bytes, p + at, k);
        ((int64_t *)(void *)t->lens.p)[t->n - 1] += (int64_t)k;
        ((int64_t *)(void *)t->ends.p)[t->n - 1] = (int64_t)(at + k);
      }
    }
    at += k;
    last_break = brk;
  }
  return s;
}

/* Runs split_merge_string over the n strings (string i's decisions from src_of(i)) and writes the
 * four outputs: tokens, int64 row splits, int64 starts and limits. */
static sm_status *split_merge_run(sm_kctx *ctx, const char *op, const sm_tensor *in, const int64_t *avail,
                                  const sm_split_src *srcs, int force) {
  pthread_once(&ws_once, ws_load);
  if (!ws.ok) return sm_status_new(SM_UNIMPLEMENTED, "%s needs the system's ICU (libicuuc), which could not be opened", op);
  int64_t n = sm_tensor_num_elements(in), nsp = n + 1;
  sm_toks t = {0};
  sm_tensor *os, *ov, *ob, *oe;
  sm_status *s = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &nsp, &os);
  if (s) return s;
  int64_t *sp = sm_tensor_data(os);
  sp[0] = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    size_t len;
    const char *p = sm_tensor_string(in, i, &len);
    int64_t k = 0;
    s = split_merge_string(ctx, op, p, len, avail[i], srcs[i], force, &t, &k);
    sp[i + 1] = sp[i] + k;
  }
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &t.n, &ov);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &t.n, &ob);
  if (!s) s = sm__kctx_alloc_output(ctx, 3, SM_INT64, 1, &t.n, &oe);
  if (!s && t.n) {
    memcpy(sm_tensor_data(ob), t.begins.p, (size_t)t.n * 8);
    memcpy(sm_tensor_data(oe), t.ends.p, (size_t)t.n * 8);
    const int64_t *l = (const int64_t *)(void *)t.lens.p;
    size_t at = 0;
    for (int64_t i = 0; i < t.n && !s; i++) s = sm_tensor_set_string(ov, i, t.bytes.p + at, (size_t)l[i]), at += (size_t)l[i];
  }
  sm__kctx_scratch_free(ctx, t.bytes.p);
  sm__kctx_scratch_free(ctx, t.lens.p);
  sm__kctx_scratch_free(ctx, t.begins.p);
  sm__kctx_scratch_free(ctx, t.ends.p);
  return s;
}

static sm_status *split_merge_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const char op[] = "SplitMergeTokenizeWithOffsets";
  int force = 1;
  sm_status *s = NULL;
  if (sm__node_attr(sm__kctx_node(ctx), "force_split_at_break_character"))
    s = sm__node_attr_bool(sm__kctx_node(ctx), "force_split_at_break_character", &force);
  const sm_tensor *in = sm__kctx_input(ctx, 0), *lt = sm__kctx_input(ctx, 1), *rt = sm__kctx_input(ctx, 2);
  if (!s) s = want_vec(in, op, "input_values", SM_STRING);
  if (!s) s = want_vec(lt, op, "labels", SM_INT32);
  if (!s) s = want_vec(rt, op, "row_splits", SM_INT32);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(in), nl = sm_tensor_num_elements(lt);
  if (sm_tensor_num_elements(rt) != n + 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expecting row_splits have %" PRId64 " elements, got %" PRId64, n + 1,
                         sm_tensor_num_elements(rt));
  const int32_t *rs = sm_tensor_data(rt), *lab = sm_tensor_data(lt);
  for (int64_t i = 0; i < n; i++)
    if (rs[i] < 0 || rs[i + 1] < rs[i] || rs[i + 1] > nl)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: row_splits [%d, %d] of row %" PRId64 " is not an ordered range within the %" PRId64
                           " labels", op, rs[i], rs[i + 1], i, nl);
  int64_t *avail = sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *avail, &s);
  sm_split_src *srcs = avail ? sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *srcs, &s) : NULL;
  if (!srcs) return s;
  for (int64_t i = 0; i < n; i++) avail[i] = rs[i + 1] - rs[i], srcs[i].labels = lab + rs[i], srcs[i].logits = NULL;
  return split_merge_run(ctx, op, in, avail, srcs, force);
}

static sm_status *from_logits_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const char op[] = "TokenizerFromLogits";
  const sm_tensor *in = sm__kctx_input(ctx, 0), *lg = sm__kctx_input(ctx, 1), *ft = sm__kctx_input(ctx, 2);
  sm_status *s = want_vec(in, op, "strings", SM_STRING);
  if (s) return s;
  if (sm_tensor_dtype(lg) != SM_FLOAT || sm_tensor_dtype(ft) != SM_BOOL)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: logits must be float and force_split_at_break_character bool", op);
  if (sm_tensor_rank(lg) != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: logits must be rank 3 [strings, characters, 2], got shape %s", op, tx_shape_of(lg).s);
  if (sm_tensor_rank(ft) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: force_split_at_break_character must be a scalar, got shape %s", op, tx_shape_of(ft).s);
  const int64_t *d = sm_tensor_dims(lg);
  int64_t n = sm_tensor_num_elements(in);
  if (d[0] != n) return sm_status_new(SM_INVALID_ARGUMENT, "Expecting logits to have %" PRId64 " rows, got %" PRId64, n, d[0]);
  if (d[2] != 2) return sm_status_new(SM_INTERNAL, "Bad logits dimension #2: %" PRId64 " != 2", d[2]);
  int64_t *avail = sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *avail, &s);
  sm_split_src *srcs = avail ? sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *srcs, &s) : NULL;
  if (!srcs) return s;
  const float *l = sm_tensor_data(lg);
  for (int64_t i = 0; i < n; i++) avail[i] = d[1], srcs[i].labels = NULL, srcs[i].logits = l + i * d[1] * 2;
  return split_merge_run(ctx, op, in, avail, srcs, *(const uint8_t *)sm_tensor_data(ft) != 0);
}

const sm_kernel sm_kernels_tftext_more[] = {
    {"TFText>ByteSplitWithOffsets", NULL, byte_split_compute, NULL, 0},
    {"TFText>ByteSplitByOffsets", NULL, byte_split_by_offsets_compute, NULL, 0},
    {"TFText>Utf8Binarize", NULL, utf8_binarize_compute, NULL, 0},
    {"TFText>RoundRobinGenerateMasks", NULL, rr_masks_compute, NULL, 0},
    {"SplitMergeTokenizeWithOffsets", NULL, split_merge_compute, NULL, 0},
    {"TokenizerFromLogits", NULL, from_logits_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
