/* tftext_fast.c - TensorFlow Text's Fast WordPiece kernels (text.FastWordpieceTokenizer), with
 * tensorflow_text 2.21's semantics (fast_wordpiece_tokenizer.cc is the reference):
 *   TFText>FastWordpieceDetokenize: int32 ids with int64 row splits -> one string per row; the
 *     vocabulary comes from the model's FastWordpieceTokenizerConfig flatbuffer (a uint8 tensor,
 *     saved as a Const by the Python wrapper), read with the bounds-checked src/format/flatbuf.c.
 * Not yet here: TFText>FastWordpieceTokenizeWithOffsets (the trie walk with failure links) and
 * TFText>FastBertNormalize. */
#include <stdint.h>
#include <string.h>

#include "format/flatbuf.h"
#include "ops/text_internal.h"
#include "runtime/kernel.h"

/* FastWordpieceTokenizerConfig's fields, in schema order (fast_wordpiece_tokenizer_model.fbs). */
enum {
  FW_TRIE_ARRAY,
  FW_FAILURE_STRUCTS,
  FW_FAILURE_POPS,
  FW_SUFFIX_ROOT,
  FW_MAX_BYTES,
  FW_SUFFIX_INDICATOR,
  FW_UNK_TOKEN,
  FW_UNK_ID,
  FW_PRECOMPUTED_SUFFIX,
  FW_PUNCT_FAILURE,
  FW_END_TO_END,
  FW_SUPPORT_DETOK,
  FW_VOCAB,
  FW_VOCAB_IS_SUFFIX,
};

static sm_status *bad_model(const char *op) {
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: the model buffer is not a valid FastWordpieceTokenizerConfig flatbuffer", op);
}

static sm_status *detok_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const char op[] = "FastWordpieceDetokenize";
  const sm_tensor *ids = sm__kctx_input(ctx, 0), *sp = sm__kctx_input(ctx, 1), *m = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(ids) != SM_INT32 || sm_tensor_rank(ids) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_values must be an int32 vector, got shape %s", op, tx_shape_of(ids).s);
  if (sm_tensor_dtype(sp) != SM_INT64 || sm_tensor_rank(sp) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_row_splits must be an int64 vector, got shape %s", op, tx_shape_of(sp).s);
  if (sm_tensor_dtype(m) != SM_UINT8 || sm_tensor_rank(m) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: wp_model must be a uint8 vector, got shape %s", op, tx_shape_of(m).s);
  sm_fb b = {(const uint8_t *)sm_tensor_data(m), (size_t)sm_tensor_num_elements(m)};
  size_t root, vocab, is_suf;
  uint32_t nv, ns;
  uint8_t support = 0;
  const char *sfx;
  size_t sfx_n;
  if (sm__fb_root(&b, &root) || sm__fb_u8(&b, root, FW_SUPPORT_DETOK, 0, &support)) return bad_model(op);
  if (!support)
    return sm_status_new(SM_FAILED_PRECONDITION,
                         "%s: Detokenize function is only enabled when support_detokenization is true in the config "
                         "flatbuffer. Please rebuild the model flatbuffer by setting support_detokenization=true.",
                         op);
  int rv = sm__fb_vector(&b, root, FW_VOCAB, 4, &vocab, &nv), rs = sm__fb_vector(&b, root, FW_VOCAB_IS_SUFFIX, 1, &is_suf, &ns);
  int rx = sm__fb_string(&b, root, FW_SUFFIX_INDICATOR, &sfx, &sfx_n);
  if (rv < 0 || rs < 0 || rx < 0) return bad_model(op);
  if (!rv || !rs) return sm_status_new(SM_INTERNAL, "%s: Missing vocab_array or vocab_is_suffix_array in config.", op);
  int64_t nsp = sm_tensor_num_elements(sp), nid = sm_tensor_num_elements(ids);
  const int64_t *split = (const int64_t *)sm_tensor_data(sp);
  const int32_t *id = (const int32_t *)sm_tensor_data(ids);
  for (int64_t i = 0; i < nsp; i++)
    if (split[i] < 0 || split[i] > nid || (i && split[i] < split[i - 1]))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_row_splits must be non-decreasing and within [0, %lld], got %lld at %lld",
                           op, (long long)nid, (long long)split[i], (long long)i);
  int64_t nrows = nsp > 0 ? nsp - 1 : 0;
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &nrows, &out);
  tx_buf buf = {0};
  for (int64_t r = 0; r < nrows && !s; r++) {
    buf.len = 0;
    int in_word = 0;
    for (int64_t j = split[r]; j < split[r + 1] && !s; j++) {
      int32_t t = id[j];
      if (t < 0 || (uint32_t)t >= nv || (uint32_t)t >= ns) {
        s = sm_status_new(SM_OUT_OF_RANGE, "%s: Token ID out of bounds: %d", op, (int)t);
        break;
      }
      const char *w;
      size_t wn;
      if (sm__fb_string_elem(&b, vocab, (uint32_t)t, &w, &wn)) {
        s = bad_model(op);
        break;
      }
      int suffix = b.p[is_suf + (size_t)t] != 0;
      if (in_word && !suffix) s = tx_put(ctx, &buf, " ", 1); /* a new word: StrJoin(words, " ") */
      if (!s && !in_word && suffix) s = tx_put(ctx, &buf, sfx, sfx_n);
      if (!s) s = tx_put(ctx, &buf, w, wn);
      in_word = 1;
    }
    if (!s) s = sm_tensor_set_string(out, r, buf.p ? buf.p : "", buf.len);
  }
  sm__kctx_scratch_free(ctx, buf.p);
  return s;
}

const sm_kernel sm_kernels_tftext_fast[] = {
    {"TFText>FastWordpieceDetokenize", NULL, detok_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
