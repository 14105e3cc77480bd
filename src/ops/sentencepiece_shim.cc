// sentencepiece_shim.cc - a thin extern "C" face over SentencePiece (Debian's libsentencepiece),
// built as its own module (libsavedmodel_sp.so) that src/ops/tftext_sp.c dlopens at the first
// SentencePiece op, so that the library and the CLI build and run without it or libstdc++.
// TF Text's SentencePiece kernels (sentencepiece_kernels.cc) call LoadFromSerializedProto,
// Set{En,De}codeExtraOptions, Encode / SampleEncode (to a SentencePieceText: ids, pieces, byte
// offsets), Decode, GetPieceSize, IdToPiece and PieceToId; these functions do exactly that and
// never let a C++ exception cross into C. Errors come back as malloc'd text (TF's message).
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cxx_shim.h"
#include <vector>

#define SM_SP_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sm_shim::dup_cstr;

// 0 when ok; else the status's code (absl codes, as TF's ToTFStatus keeps them) with *err set.
int fail(const sentencepiece::util::Status &st, char **err) {
  if (st.ok()) return 0;
  *err = dup_cstr(st.ToString());
  int c = static_cast<int>(st.code());
  return c ? c : 13;
}

}  // namespace

// One encoding: n pieces; ids[n], begin/end[n] (byte offsets into the input), pieces: the pieces'
// bytes back to back, plen[n] their lengths. Every array malloc'd; sm_sp_enc_free frees them.
typedef struct sm_sp_enc {
  size_t n;
  int32_t *ids;
  int64_t *begin, *end;
  char *pieces;
  size_t *plen;
} sm_sp_enc;

SM_SP_EXPORT void sm_sp_enc_free(sm_sp_enc *e) {
  std::free(e->ids);
  std::free(e->begin);
  std::free(e->end);
  std::free(e->pieces);
  std::free(e->plen);
  std::memset(e, 0, sizeof *e);
}

// A processor from a serialized ModelProto; NULL with *err (malloc'd; NULL on OOM) when refused.
SM_SP_EXPORT void *sm_sp_load(const char *bytes, size_t n, char **err) {
  *err = nullptr;
  try {
    auto *p = new sentencepiece::SentencePieceProcessor();
    auto st = p->LoadFromSerializedProto(std::string(bytes, n));
    if (!st.ok()) {
      *err = dup_cstr(st.ToString());
      delete p;
      return nullptr;
    }
    return p;
  } catch (...) {
    return nullptr;
  }
}

SM_SP_EXPORT void sm_sp_free(void *p) { delete static_cast<sentencepiece::SentencePieceProcessor *>(p); }

// Both extra options ("bos:eos:reverse" and subsets, as HandleExtraOptions builds them).
SM_SP_EXPORT int sm_sp_set_options(void *p, const char *opts, char **err) {
  *err = nullptr;
  try {
    auto *sp = static_cast<sentencepiece::SentencePieceProcessor *>(p);
    int rc = fail(sp->SetEncodeExtraOptions(opts), err);
    return rc ? rc : fail(sp->SetDecodeExtraOptions(opts), err);
  } catch (...) {
    return 8;
  }
}

namespace {
// *e from one encoding (pieces, ids, byte offsets); 0, or 8 out of memory.
int fill(const sentencepiece::ImmutableSentencePieceText &spt, sm_sp_enc *e) {
  size_t k = spt.pieces_size(), total = 0;
  for (size_t i = 0; i < k; i++) total += spt.pieces(static_cast<int>(i)).piece().size();
  e->ids = static_cast<int32_t *>(std::malloc((k ? k : 1) * sizeof(int32_t)));
  e->begin = static_cast<int64_t *>(std::malloc((k ? k : 1) * sizeof(int64_t)));
  e->end = static_cast<int64_t *>(std::malloc((k ? k : 1) * sizeof(int64_t)));
  e->plen = static_cast<size_t *>(std::malloc((k ? k : 1) * sizeof(size_t)));
  e->pieces = static_cast<char *>(std::malloc(total ? total : 1));
  if (!e->ids || !e->begin || !e->end || !e->plen || !e->pieces) {
    sm_sp_enc_free(e);
    return 8;
  }
  size_t at = 0;
  for (size_t i = 0; i < k; i++) {
    const auto pc = spt.pieces(static_cast<int>(i));
    e->ids[i] = static_cast<int32_t>(pc.id());
    e->begin[i] = pc.begin();
    e->end[i] = pc.end();
    e->plen[i] = pc.piece().size();
    std::memcpy(e->pieces + at, pc.piece().data(), pc.piece().size());
    at += pc.piece().size();
  }
  e->n = k;
  return 0;
}
}  // namespace

// Encode (nbest 0 or 1) or SampleEncode(nbest, alpha) of s[0..n) into *e.
SM_SP_EXPORT int sm_sp_encode(const void *p, const char *s, size_t n, int nbest, float alpha, sm_sp_enc *e,
                              char **err) {
  *err = nullptr;
  std::memset(e, 0, sizeof *e);
  try {
    auto *sp = static_cast<const sentencepiece::SentencePieceProcessor *>(p);
    sentencepiece::ImmutableSentencePieceText spt;
    absl::string_view in(s ? s : "", n);
    int rc = (nbest == 0 || nbest == 1) ? fail(sp->Encode(in, spt.mutable_proto()), err)
                                        : fail(sp->SampleEncode(in, nbest, alpha, spt.mutable_proto()), err);
    return rc ? rc : fill(spt, e);
  } catch (...) {
    sm_sp_enc_free(e);
    return 8;
  }
}

// NBestEncode(s[0..n), nbest): *count encodings in *out (malloc'd array; each freed with
// sm_sp_enc_free, then the array with free()).
SM_SP_EXPORT int sm_sp_nbest(const void *p, const char *s, size_t n, int nbest, sm_sp_enc **out, size_t *count,
                             char **err) {
  *err = nullptr;
  *out = nullptr;
  *count = 0;
  try {
    auto *sp = static_cast<const sentencepiece::SentencePieceProcessor *>(p);
    sentencepiece::ImmutableNBestSentencePieceText nb;
    int rc = fail(sp->NBestEncode(absl::string_view(s ? s : "", n), nbest, nb.mutable_proto()), err);
    if (rc) return rc;
    size_t k = nb.nbests_size();
    sm_sp_enc *a = static_cast<sm_sp_enc *>(std::calloc(k ? k : 1, sizeof(sm_sp_enc)));
    if (!a) return 8;
    for (size_t i = 0; i < k; i++)
      if (fill(nb.nbests(static_cast<int>(i)), &a[i])) {
        for (size_t j = 0; j < i; j++) sm_sp_enc_free(&a[j]);
        std::free(a);
        return 8;
      }
    *out = a;
    *count = k;
    return 0;
  } catch (...) {
    return 8;
  }
}

// Decode of ids[0..n) (pieces NULL) or of the pieces pieces[i][0..plen[i]) (ids NULL).
SM_SP_EXPORT int sm_sp_decode(const void *p, const int32_t *ids, const char *const *pieces, const size_t *plen,
                              size_t n, char **out, size_t *out_len, char **err) {
  *err = nullptr;
  *out = nullptr;
  try {
    auto *sp = static_cast<const sentencepiece::SentencePieceProcessor *>(p);
    std::string text;
    int rc;
    if (ids) {
      std::vector<int> v(ids, ids + n);
      rc = fail(sp->Decode(v, &text), err);
    } else {
      std::vector<absl::string_view> v;
      v.reserve(n);
      for (size_t i = 0; i < n; i++) v.emplace_back(pieces[i], plen[i]);
      rc = fail(sp->Decode(v, &text), err);
    }
    if (rc) return rc;
    *out = dup_cstr(text);
    *out_len = text.size();
    return *out ? 0 : 8;
  } catch (...) {
    return 8;
  }
}

SM_SP_EXPORT int sm_sp_piece_size(const void *p) {
  return static_cast<const sentencepiece::SentencePieceProcessor *>(p)->GetPieceSize();
}

// IdToPiece: a pointer into the model (valid while it lives) and its length; an id out of range
// gives SentencePiece's answer (its unknown piece's text, as TF Text returns).
SM_SP_EXPORT const char *sm_sp_id_to_piece(const void *p, int id, size_t *len) {
  const auto *sp = static_cast<const sentencepiece::SentencePieceProcessor *>(p);
  const std::string &s = sp->IdToPiece(id);
  *len = s.size();
  return s.data();
}

SM_SP_EXPORT int sm_sp_piece_to_id(const void *p, const char *s, size_t n) {
  return static_cast<const sentencepiece::SentencePieceProcessor *>(p)->PieceToId(
      absl::string_view(s ? s : "", n));
}
