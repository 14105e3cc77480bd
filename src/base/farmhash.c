/* farmhash.c - the 64-bit fingerprint TensorFlow stores in fingerprint.pb: FarmHash's
 * Fingerprint64 (the "na" 64-bit variant, unseeded, little-endian reads), and
 * TensorFlow's FingerprintCat64 that chains two fingerprints. Written in C from the published
 * algorithm; the values are part of TensorFlow's on-disk format and must never change. */
#include <string.h>

#include "base/farmhash.h"

/* primes between 2^63 and 2^64 */
#define P0 0xc3a5c85c97cb3127ULL
#define P1 0xb492b66fbe98f273ULL
#define P2 0x9ae16a3b2f90404fULL

static uint64_t le64(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
         (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
static uint64_t le32(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}
static uint64_t ror(uint64_t v, int r) { return (v >> r) | (v << (64 - r)); } /* r is never 0 here */
static uint64_t mix47(uint64_t v) { return v ^ (v >> 47); }

/* Two words into one, Murmur style, with multiplier m. */
static uint64_t pair_hash(uint64_t u, uint64_t v, uint64_t m) {
  uint64_t a = mix47((u ^ v) * m);
  uint64_t b = mix47((v ^ a) * m);
  return b * m;
}

static uint64_t short_hash(const uint8_t *s, size_t n) { /* n <= 16 */
  uint64_t m = P2 + (uint64_t)n * 2;
  if (n >= 8) {
    uint64_t a = le64(s) + P2, b = le64(s + n - 8);
    return pair_hash(ror(b, 37) * m + a, (ror(a, 25) + b) * m, m);
  }
  if (n >= 4) return pair_hash((uint64_t)n + (le32(s) << 3), le32(s + n - 4), m);
  if (n == 0) return P2;
  uint32_t lo = (uint32_t)s[0] + ((uint32_t)s[n >> 1] << 8);
  uint32_t hi = (uint32_t)n + ((uint32_t)s[n - 1] << 2);
  return mix47((uint64_t)lo * P2 ^ (uint64_t)hi * P0) * P2;
}

static uint64_t medium_hash(const uint8_t *s, size_t n) { /* 17..32 */
  uint64_t m = P2 + (uint64_t)n * 2;
  uint64_t a = le64(s) * P1, b = le64(s + 8), c = le64(s + n - 8) * m, d = le64(s + n - 16) * P2;
  return pair_hash(ror(a + b, 43) + ror(c, 30) + d, a + ror(b + P2, 18) + c, m);
}

static uint64_t long_hash(const uint8_t *s, size_t n) { /* 33..64 */
  uint64_t m = P2 + (uint64_t)n * 2;
  uint64_t a = le64(s) * P2, b = le64(s + 8), c = le64(s + n - 8) * m, d = le64(s + n - 16) * P2;
  uint64_t y = ror(a + b, 43) + ror(c, 30) + d;
  uint64_t z = pair_hash(y, a + ror(b + P2, 18) + c, m);
  uint64_t e = le64(s + 16) * m, f = le64(s + 24);
  uint64_t g = (y + le64(s + n - 32)) * m, h = (z + le64(s + n - 24)) * m;
  return pair_hash(ror(e + f, 43) + ror(g, 30) + h, e + ror(f + a, 18) + g, m);
}

/* 32 bytes of input plus two seeds -> two words (the weak 32-byte step of the long loop). */
static void step32(const uint8_t *s, uint64_t a, uint64_t b, uint64_t out[2]) {
  uint64_t w = le64(s), x = le64(s + 8), y = le64(s + 16), z = le64(s + 24);
  a += w;
  b = ror(b + a + z, 21);
  uint64_t c = a;
  a += x + y;
  b += ror(a, 44);
  out[0] = a + z;
  out[1] = b + c;
}

uint64_t sm__fingerprint64(const void *data, size_t n) {
  const uint8_t *s = data;
  if (n <= 16) return short_hash(s, n);
  if (n <= 32) return medium_hash(s, n);
  if (n <= 64) return long_hash(s, n);
  /* 64-byte blocks; state x, y, z and the pairs v, w */
  uint64_t x = 81, y = 81 * P1 + 113, z = mix47(y * P2 + 113) * P2, t;
  uint64_t v[2] = {0, 0}, w[2] = {0, 0};
  x = x * P2 + le64(s);
  const uint8_t *end = s + ((n - 1) / 64) * 64, *last = s + n - 64;
  do {
    x = ror(x + y + v[0] + le64(s + 8), 37) * P1;
    y = ror(y + v[1] + le64(s + 48), 42) * P1;
    x ^= w[1];
    y += v[0] + le64(s + 40);
    z = ror(z + w[0], 33) * P1;
    step32(s, v[1] * P1, x + w[0], v);
    step32(s + 32, z + w[1], y + le64(s + 16), w);
    t = z, z = x, x = t;
    s += 64;
  } while (s != end);
  uint64_t m = P1 + ((z & 0xff) << 1);
  s = last;
  w[0] += (n - 1) & 63;
  v[0] += w[0];
  w[0] += v[0];
  x = ror(x + y + v[0] + le64(s + 8), 37) * m;
  y = ror(y + v[1] + le64(s + 48), 42) * m;
  x ^= w[1] * 9;
  y += v[0] * 9 + le64(s + 40);
  z = ror(z + w[0], 33) * m;
  step32(s, v[1] * m, x + w[0], v);
  step32(s + 32, z + w[1], y + le64(s + 16), w);
  t = z, z = x, x = t;
  return pair_hash(pair_hash(v[0], w[0], m) + mix47(y) * P0 + z, pair_hash(v[1], w[1], m) + x, m);
}

uint64_t sm__fingerprint_cat64(uint64_t a, uint64_t b) {
  const uint64_t k = 0xc6a4a7935bd1e995ULL;
  uint64_t r = a ^ k;
  r ^= mix47(b * k) * k;
  r *= k;
  r = mix47(r) * k;
  return mix47(r);
}
