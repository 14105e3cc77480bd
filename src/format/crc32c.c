/* crc32c.c - CRC-32C: SSE4.2 instructions when the CPU has them, slicing-by-8 tables otherwise.
 *
 * The hardware path runs three independent CRC streams over long buffers (the crc32 instruction
 * has a latency of 3 cycles but a throughput of 1) and joins them with precomputed "append N zero
 * bytes" operators, so reading a large tensor is bound by memory, not by the checksum. */
#include "format/crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table8[8][256];
static int use_hw;

/* Raw CRC state update (no pre/post inversion), table path. */
static uint32_t sw_update(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = table8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    n--;
  }
  while (n >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= c;
    c = table8[7][lo & 0xff] ^ table8[6][(lo >> 8) & 0xff] ^ table8[5][(lo >> 16) & 0xff] ^
        table8[4][lo >> 24] ^ table8[3][hi & 0xff] ^ table8[2][(hi >> 8) & 0xff] ^
        table8[1][(hi >> 16) & 0xff] ^ table8[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = table8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Each hardware stream covers STRIPE bytes; shift[k][b] applies "append STRIPE zero bytes" to
 * byte k of a raw CRC state (the operation is linear over GF(2), so a table per byte suffices). */
#define STRIPE 4096
static uint32_t shift_tab[4][256];

__attribute__((target("sse4.2"))) static uint32_t hw_run(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = _mm_crc32_u8(c, *p++);
    n--;
  }
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  c = (uint32_t)c64;
  while (n--) c = _mm_crc32_u8(c, *p++);
  return c;
}

static uint32_t shift_stripe(uint32_t c) {
  return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^ shift_tab[2][(c >> 16) & 0xff] ^
         shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t hw_update(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = _mm_crc32_u8(c, *p++);
    n--;
  }
  while (n >= 3 * STRIPE) {
    uint64_t a = c, b = 0, d = 0;
    const uint8_t *pa = p, *pb = p + STRIPE, *pd = p + 2 * STRIPE;
    for (size_t i = 0; i < STRIPE; i += 8) {
      uint64_t va, vb, vd;
      memcpy(&va, pa + i, 8);
      memcpy(&vb, pb + i, 8);
      memcpy(&vd, pd + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      d = _mm_crc32_u64(d, vd);
    }
    c = shift_stripe(shift_stripe((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
    p += 3 * STRIPE;
    n -= 3 * STRIPE;
  }
  return hw_run(c, p, n);
}

static void init_shift(void) {
  static uint8_t zeros[STRIPE];
  uint32_t col[32];
  for (int i = 0; i < 32; i++) col[i] = hw_run(1u << i, zeros, STRIPE);
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < 256; v++) {
      uint32_t r = 0;
      for (int bit = 0; bit < 8; bit++)
        if (v & (1 << bit)) r ^= col[k * 8 + bit];
      shift_tab[k][v] = r;
    }
}
#endif

/* Runs before main: the tables are then read-only and safe to share between threads. */
__attribute__((constructor)) static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
    table8[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) table8[t][i] = (table8[t - 1][i] >> 8) ^ table8[0][table8[t - 1][i] & 0xff];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    init_shift();
    use_hw = 1;
  }
#endif
}

uint32_t sm_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  uint32_t c = crc ^ 0xffffffffu;
  if (n == 0) return crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (use_hw) return hw_update(c, data, n) ^ 0xffffffffu;
#endif
  return sw_update(c, data, n) ^ 0xffffffffu;
}

int sm_crc32c_hw(void) { return use_hw; }

/* Test hook: the table path regardless of the CPU (declared in the test, not in a header). */
uint32_t sm_crc32c_extend_sw(uint32_t crc, const void *data, size_t n);
uint32_t sm_crc32c_extend_sw(uint32_t crc, const void *data, size_t n) {
  if (n == 0) return crc;
  return sw_update(crc ^ 0xffffffffu, data, n) ^ 0xffffffffu;
}
