/* checked.h - overflow-checked size arithmetic for sizes that come from files and requests. */
#ifndef SM_BASE_CHECKED_H
#define SM_BASE_CHECKED_H

#include <stdint.h>
#include <stddef.h>

/* Each returns 1 on overflow and leaves *out unspecified, 0 otherwise. */
static inline int sm__mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline int sm__add_u64(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_add_overflow(a, b, out); }
static inline int sm__mul_size(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline int sm__add_size(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }

/* Product of dims; returns 1 if any dim is negative or the product overflows int64. */
static inline int sm__num_elements(int rank, const int64_t *dims, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n)) return 1;
  }
  *out = n;
  return 0;
}

#endif
