/* fuzz_table.c - libFuzzer target: bytes as an SSTable (variables.index) through the reader.
 *
 * Opens the table, walks every entry, then seeks to and looks up keys taken from the walk and
 * from the input's tail, walking a little from each. tests/unit/test_fuzz_regressions.c includes
 * this file with FUZZ_TABLE_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/table.h"

#ifndef FUZZ_TABLE_ENTRY
#define FUZZ_TABLE_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_TABLE_ENTRY(const uint8_t *data, size_t size);

/* Bounds the walk: hostile tables may hold millions of tiny entries. */
#define FTB_MAX_STEPS 100000
#define FTB_MAX_KEYS 64

static void ftb_touch(const sm_table_iter *it) {
  size_t kl = 0, vl = 0;
  const uint8_t *k = sm__table_iter_key(it, &kl), *v = sm__table_iter_value(it, &vl);
  volatile uint8_t sink = 0;
  /* Reads the first and last byte of each, so ASan sees any pointer past the block. */
  if (kl) sink ^= k[0] ^ k[kl - 1];
  if (vl) sink ^= v[0] ^ v[vl - 1];
  (void)sink;
}

static void ftb_seek(const sm_table *t, sm_table_iter *it, const uint8_t *key, size_t klen) {
  sm_status *s = sm__table_iter_seek(it, key, klen);
  for (int i = 0; !s && i < 4 && sm__table_iter_valid(it); i++) {
    ftb_touch(it);
    s = sm__table_iter_next(it);
  }
  sm_status_free(s);
  uint8_t *v = NULL;
  size_t vl = 0;
  s = sm__table_get(t, key, klen, &v, &vl);
  if (!s && (!v || v[vl] != 0)) abort(); /* documented: NUL-terminated copy */
  sm_status_free(s);
  free(v);
}

int FUZZ_TABLE_ENTRY(const uint8_t *data, size_t size) {
  sm_table *t = NULL;
  sm_status *s = sm__table_open("fuzz.index", data, size, &t);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  (void)sm__table_num_blocks(t);
  sm_table_iter *it = NULL;
  if ((s = sm__table_iter_new(t, &it))) {
    sm_status_free(s);
    sm__table_free(t);
    return 0;
  }
  /* Copies of some keys seen on the walk, to seek to afterwards. */
  uint8_t *keys[FTB_MAX_KEYS];
  size_t klens[FTB_MAX_KEYS], nkeys = 0;
  long steps = 0;
  for (s = sm__table_iter_first(it); !s && sm__table_iter_valid(it) && steps < FTB_MAX_STEPS;
       s = sm__table_iter_next(it), steps++) {
    ftb_touch(it);
    if (nkeys < FTB_MAX_KEYS && (steps & 3) == 0) {
      size_t kl;
      const uint8_t *k = sm__table_iter_key(it, &kl);
      keys[nkeys] = malloc(kl ? kl : 1);
      if (!keys[nkeys]) abort();
      memcpy(keys[nkeys], k, kl);
      klens[nkeys++] = kl;
    }
  }
  sm_status_free(s);
  for (size_t i = 0; i < nkeys; i++) {
    ftb_seek(t, it, keys[i], klens[i]);
    free(keys[i]);
  }
  /* Keys the reader has not seen: the empty key, one past everything, the input's last bytes. */
  static const uint8_t hi[] = {0xff, 0xff, 0xff, 0xff};
  ftb_seek(t, it, hi, 0);
  ftb_seek(t, it, hi, sizeof hi);
  size_t tail = size < 16 ? size : 16;
  ftb_seek(t, it, data + size - tail, tail);
  sm__table_iter_free(it);
  sm__table_free(t);
  return 0;
}
