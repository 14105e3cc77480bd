/* cxx_shim.h - what the thin C++ shims around C++-only libraries share (src/ops/re2_shim.cc,
 * src/ops/sentencepiece_shim.cc): a std::string handed to C as a malloc'd NUL-terminated copy,
 * which the C side frees with free(). C++ only; each shim is its own dlopened module. */
#ifndef SM_CXX_SHIM_H
#define SM_CXX_SHIM_H
#include <cstdlib>
#include <cstring>
#include <string>

namespace sm_shim {

/* A malloc'd copy of s with a NUL after it (s may hold NULs); NULL when malloc fails. */
inline char *dup_cstr(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p) {
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = 0;
  }
  return p;
}

}  // namespace sm_shim
#endif
