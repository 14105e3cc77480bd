// re2_shim.cc - the only C++ in libsavedmodel: a thin extern "C" face over RE2 (Debian's
// libre2), built as its own module (libsavedmodel_re2.so) that src/ops/regex.c dlopens at the
// first regex op, so that the library and the CLI build and run without RE2 or libstdc++.
// TensorFlow's regex kernels construct RE2(pattern) with default options (UTF-8) and call
// RE2::FullMatch, RE2::Replace or RE2::GlobalReplace; these functions do exactly that, quietly
// (no logging to stderr), and never let a C++ exception cross into C.
#include <re2/re2.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cxx_shim.h"

#define SM_RE2_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sm_shim::dup_cstr;

}  // namespace

// Compiles pattern[0..len); NULL with *err (malloc'd, may be NULL on OOM) when RE2 refuses it.
SM_RE2_EXPORT void *sm_re2_compile(const char *pattern, size_t len, char **err) {
  *err = nullptr;
  try {
    RE2::Options opt;
    opt.set_log_errors(false);
    RE2 *re = new RE2(re2::StringPiece(pattern, len), opt);
    if (!re->ok()) {
      *err = dup_cstr(re->error());
      delete re;
      return nullptr;
    }
    return re;
  } catch (...) {
    return nullptr;
  }
}

SM_RE2_EXPORT void sm_re2_free(void *re) { delete static_cast<RE2 *>(re); }

// 1 when the whole of s[0..n) matches, 0 when not.
SM_RE2_EXPORT int sm_re2_full_match(const void *re, const char *s, size_t n) {
  return RE2::FullMatch(re2::StringPiece(s, n), *static_cast<const RE2 *>(re)) ? 1 : 0;
}

// One step of RE2::FindAndConsume(&in, re, &group1) on s[0..n) taken as the whole text: 1 when
// it matches (*gb, *ge: group 1's bytes; *end: the end of the whole match), 0 when it does not or
// the pattern has no group 1 (RE2 then returns false), -1 when group 1 took no part in the match.
SM_RE2_EXPORT int sm_re2_find_group1(const void *re, const char *s, size_t n, size_t *gb, size_t *ge, size_t *end) {
  const RE2 &r = *static_cast<const RE2 *>(re);
  if (r.NumberOfCapturingGroups() < 1) return 0;
  if (!s) s = "";
  re2::StringPiece in(s, n), sub[2];
  if (!r.Match(in, 0, n, RE2::UNANCHORED, sub, 2)) return 0;
  if (sub[1].data() == nullptr) return -1;
  *gb = (size_t)(sub[1].data() - s);
  *ge = *gb + sub[1].size();
  *end = (size_t)(sub[0].data() - s) + sub[0].size();
  return 1;
}

// s[0..n) with the first (global 0) or every (global 1) match replaced by rewrite (\0..\9 name
// groups): *out malloc'd (*out_len bytes, NUL-terminated). 0 on success, -1 out of memory.
SM_RE2_EXPORT int sm_re2_replace(const void *re, const char *s, size_t n, const char *rewrite, size_t rlen,
                                 int global, char **out, size_t *out_len) {
  try {
    std::string str(s, n);
    const RE2 &r = *static_cast<const RE2 *>(re);
    re2::StringPiece rw(rewrite, rlen);
    if (global)
      RE2::GlobalReplace(&str, r, rw);
    else
      RE2::Replace(&str, r, rw);
    *out = dup_cstr(str);
    *out_len = str.size();
    return *out ? 0 : -1;
  } catch (...) {
    return -1;
  }
}
