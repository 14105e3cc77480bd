/* crc32c.h - CRC-32C (Castagnoli) and TensorFlow's checksum masking.
 *
 * Every checksum in a variables bundle and its index table is a masked CRC-32C (spec §5.4). */
#ifndef SM_FORMAT_CRC32C_H
#define SM_FORMAT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of `crc`'s data followed by data[0..n): Extend(Extend(0, a), b) == Value(a ‖ b). */
uint32_t sm__crc32c_extend(uint32_t crc, const void *data, size_t n);

static inline uint32_t sm__crc32c_value(const void *data, size_t n) { return sm__crc32c_extend(0, data, n); }

#define SM_CRC32C_MASK_DELTA 0xA282EAD8u

/* Why masking: a CRC stored next to the data it covers would make CRCs of CRCs degenerate. */
static inline uint32_t sm__crc32c_mask(uint32_t c) {
  return ((c >> 15) | (c << 17)) + SM_CRC32C_MASK_DELTA;
}

static inline uint32_t sm__crc32c_unmask(uint32_t m) {
  uint32_t r = m - SM_CRC32C_MASK_DELTA;
  return (r >> 17) | (r << 15);
}

/* Which path runs, for tests and benchmarks: 0 tables, 1 the SSE4.2 crc32 instruction, 2 that
 * and VPCLMULQDQ folding for buffers of 1 KiB or more. */
int sm__crc32c_hw(void);

#endif
