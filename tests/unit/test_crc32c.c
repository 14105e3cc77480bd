/* test_crc32c.c - CRC-32C check values, Extend, masking, hardware path == table path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/crc32c.h"
#include "test.h"

uint32_t sm__crc32c_extend_sw(uint32_t crc, const void *data, size_t n);

int main(void) {
  CHECK_EQ_INT(sm__crc32c_value("123456789", 9), 0xE3069283u);
  uint8_t buf[32];
  memset(buf, 0, sizeof buf);
  CHECK_EQ_INT(sm__crc32c_value(buf, 32), 0x8A9136AAu);
  memset(buf, 0xff, sizeof buf);
  CHECK_EQ_INT(sm__crc32c_value(buf, 32), 0x62A8AB43u); /* RFC 3720 B.4 */
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  CHECK_EQ_INT(sm__crc32c_value(buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
  CHECK_EQ_INT(sm__crc32c_value(buf, 32), 0x113FDB5Cu);
  CHECK_EQ_INT(sm__crc32c_value("", 0), 0);
  CHECK_EQ_INT(sm__crc32c_extend_sw(0, "123456789", 9), 0xE3069283u);

  /* Extend(Value(a), b) == Value(a ‖ b) */
  CHECK_EQ_INT(sm__crc32c_extend(sm__crc32c_value("hello ", 6), "world", 5), sm__crc32c_value("hello world", 11));

  /* Masking (spec §5.4, §11.1): Mask(0) is the delta; a float 0.0 masks to 0x3A117BA6. */
  CHECK_EQ_INT(sm__crc32c_mask(0), 0xA282EAD8u);
  const uint8_t zero4[4] = {0};
  CHECK_EQ_INT(sm__crc32c_mask(sm__crc32c_value(zero4, 4)), 0x3A117BA6u);
  const uint8_t len613[4] = {0x65, 0x02, 0, 0};
  CHECK_EQ_INT(sm__crc32c_mask(sm__crc32c_value(len613, 4)), 0x365EA6B1u);
  /* The empty metaindex block and its type byte (spec §6.3). */
  const uint8_t empty_block[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  CHECK_EQ_INT(sm__crc32c_mask(sm__crc32c_value(empty_block, 9)), 0xB0A1F2C0u);
  uint32_t crc = sm__crc32c_value("foo", 3);
  CHECK(sm__crc32c_mask(crc) != crc);
  CHECK(sm__crc32c_mask(sm__crc32c_mask(crc)) != crc);
  CHECK_EQ_INT(sm__crc32c_unmask(sm__crc32c_mask(crc)), crc);
  CHECK_EQ_INT(sm__crc32c_unmask(sm__crc32c_mask(sm__crc32c_mask(crc))), sm__crc32c_mask(crc));

  /* The (possibly hardware, striped or folded) path equals the table path at every length and
   * alignment, including the 3 x 4096-byte stripes, the folding path's 1024-byte threshold and
   * 256-byte blocks, and splits between Extend calls (a non-zero initial state). */
  size_t big = 3 * 4096 * 3 + 77;
  uint8_t *data = malloc(big + 16);
  uint32_t x = 12345;
  for (size_t i = 0; i < big + 16; i++) {
    x = x * 1103515245u + 12345u;
    data[i] = (uint8_t)(x >> 16);
  }
  int bad = 0;
  for (size_t off = 0; off < 9; off++) {
    size_t lens[] = {0,    1,    7,    8,     9,     63,    1023,  1024,  1025,    1279,
                     1280, 1535, 4095, 4096,  12287, 12288, 12289, 24577, big - 9};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      size_t n = lens[k];
      uint32_t a = sm__crc32c_value(data + off, n), b = sm__crc32c_extend_sw(0, data + off, n);
      if (a != b) bad++;
      size_t h = n / 3;
      if (sm__crc32c_extend(sm__crc32c_value(data + off, h), data + off + h, n - h) != a) bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  free(data);
  /* Random lengths and initial states: 2,000 cases against the table path. */
  uint8_t *r = malloc(70000);
  for (size_t i = 0; i < 70000; i++) {
    x = x * 1103515245u + 12345u;
    r[i] = (uint8_t)(x >> 16);
  }
  for (int i = 0; i < 2000; i++) {
    x = x * 1103515245u + 12345u;
    size_t off = (x >> 8) % 64, n = (x >> 4) % (70000 - 64);
    x = x * 1103515245u + 12345u;
    if (sm__crc32c_extend(x, r + off, n) != sm__crc32c_extend_sw(x, r + off, n)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  free(r);
  static const char *const path[] = {"tables", "crc32 instruction", "crc32 instruction + VPCLMULQDQ folding"};
  fprintf(stderr, "crc32c path: %s\n", path[sm__crc32c_hw()]);
  TEST_MAIN_END();
}
