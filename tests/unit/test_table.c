/* test_table.c - SSTable writer/reader round trips, TF's exact bytes, Snappy blocks, damage. */
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "format/crc32c.h"
#include "format/table.h"
#include "test.h"

typedef struct {
  uint8_t k[40];
  size_t kl;
  uint8_t v[300];
  size_t vl;
} kv;

static int kv_cmp(const void *a, const void *b) {
  const kv *x = a, *y = b;
  size_t n = x->kl < y->kl ? x->kl : y->kl;
  int c = memcmp(x->k, y->k, n);
  return c ? c : (x->kl < y->kl ? -1 : x->kl > y->kl);
}

static uint32_t rng = 1;
static uint32_t rnd(void) {
  rng = rng * 1103515245u + 12345u;
  return rng >> 8;
}

/* Random binary keys with shared prefixes, NULs and 0xff bytes; sorted, unique. */
static size_t make_kvs(kv *a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    a[i].kl = rnd() % 12;
    for (size_t j = 0; j < a[i].kl; j++) {
      uint32_t r = rnd() % 6;
      a[i].k[j] = r == 0 ? 0 : r == 1 ? 0xff : r == 2 ? 'a' : (uint8_t)rnd();
    }
    a[i].vl = rnd() % 3 == 0 ? 0 : rnd() % 300;
    for (size_t j = 0; j < a[i].vl; j++) a[i].v[j] = (uint8_t)rnd();
  }
  qsort(a, n, sizeof *a, kv_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || kv_cmp(&a[m - 1], &a[i]) != 0) a[m++] = a[i];
  return m;
}

static sm_status *build(const kv *a, size_t n, size_t block_size, int interval, uint8_t **out, size_t *len) {
  sm_table_builder *b;
  sm_status *s = sm__table_builder_new(&b);
  if (s) return s;
  sm__table_builder_set_options(b, block_size, interval);
  for (size_t i = 0; i < n && !s; i++) s = sm__table_builder_add(b, a[i].k, a[i].kl, a[i].v, a[i].vl);
  if (!s) s = sm__table_builder_finish(b, out, len);
  sm__table_builder_free(b);
  return s;
}

/* Reads every entry; returns NULL and 1 in *same when they equal a[0..n). */
static sm_status *scan(const uint8_t *data, size_t len, const kv *a, size_t n, int *same) {
  sm_table *t;
  *same = 0;
  sm_status *s = sm__table_open("t.index", data, len, &t);
  if (s) return s;
  sm_table_iter *it;
  s = sm__table_iter_new(t, &it);
  if (s) {
    sm__table_free(t);
    return s;
  }
  size_t i = 0;
  int ok = 1;
  for (s = sm__table_iter_first(it); !s && sm__table_iter_valid(it); s = sm__table_iter_next(it), i++) {
    size_t kl, vl;
    const uint8_t *k = sm__table_iter_key(it, &kl), *v = sm__table_iter_value(it, &vl);
    if (i >= n || kl != a[i].kl || vl != a[i].vl || memcmp(k, a[i].k, kl) || memcmp(v, a[i].v, vl)) ok = 0;
  }
  *same = ok && i == n;
  sm__table_iter_free(it);
  sm__table_free(t);
  return s;
}

static void test_round_trip(size_t block_size, int interval, size_t nkeys) {
  kv *a = malloc(nkeys * sizeof *a);
  size_t n = make_kvs(a, nkeys);
  uint8_t *data;
  size_t len;
  CHECK_OK(build(a, n, block_size, interval, &data, &len));
  int same;
  CHECK_OK(scan(data, len, a, n, &same));
  CHECK(same);
  sm_table *t;
  CHECK_OK(sm__table_open("t.index", data, len, &t));
  if (block_size < 10000) CHECK(sm__table_num_blocks(t) > 5);
  sm_table_iter *it;
  CHECK_OK(sm__table_iter_new(t, &it));
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t *v;
    size_t vl;
    sm_status *s = sm__table_get(t, a[i].k, a[i].kl, &v, &vl);
    if (s || vl != a[i].vl || memcmp(v, a[i].v, vl)) bad++;
    sm_status_free(s);
    free(v);
    /* Seek to a key just after a[i] (append a 0 byte): lands on a[i+1] or the end. */
    uint8_t k2[41];
    memcpy(k2, a[i].k, a[i].kl);
    k2[a[i].kl] = 0;
    s = sm__table_iter_seek(it, k2, a[i].kl + 1);
    size_t kl;
    const uint8_t *k = sm__table_iter_key(it, &kl);
    if (s) bad++;
    else if (i + 1 < n) {
      if (!sm__table_iter_valid(it) || kl != a[i + 1].kl || memcmp(k, a[i + 1].k, kl)) bad++;
    } else if (sm__table_iter_valid(it)) {
      bad++;
    }
    sm_status_free(s);
    /* Seeking exactly and then stepping continues in order. */
    s = sm__table_iter_seek(it, a[i].k, a[i].kl);
    if (s || !sm__table_iter_valid(it)) bad++;
    sm_status_free(s);
    s = sm__table_iter_next(it);
    if (s || (i + 1 < n) != sm__table_iter_valid(it)) bad++;
    sm_status_free(s);
  }
  CHECK_EQ_INT(bad, 0);
  uint8_t *v;
  size_t vl;
  CHECK_ERR(sm__table_get(t, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 13, &v, &vl), "not found");
  sm__table_iter_free(it);
  sm__table_free(t);
  free(data);
  free(a);
}

/* Spec §11.1: the builder reproduces TF's 123-byte index of saved_model_counter. */
static const uint8_t counter_entry[11] = {0x08, 0x01, 0x12, 0x00, 0x28, 0x04, 0x35, 0xa6, 0x7b, 0x11, 0x3a};
static const uint8_t header[6] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};

static void test_counter_bytes(void) {
  sm_table_builder *b;
  CHECK_OK(sm__table_builder_new(&b));
  CHECK_OK(sm__table_builder_add(b, "", 0, header, 6));
  CHECK_OK(sm__table_builder_add(b, "counter", 7, counter_entry, 11));
  CHECK_ERR(sm__table_builder_add(b, "counter", 7, "", 0), "increasing");
  CHECK_ERR(sm__table_builder_add(b, "a", 1, "", 0), "increasing");
  uint8_t *data;
  size_t len;
  CHECK_OK(sm__table_builder_finish(b, &data, &len));
  sm__table_builder_free(b);
  CHECK_EQ_INT(len, 123);
  char *path = sm__path_join(SM_SHARED_DIR, "fixtures/tf-serving/saved_model_counter/00000123/variables/variables.index");
  char *want;
  size_t wl;
  sm_status *s = sm__file_read_all(path, &want, &wl);
  if (s) {
    fprintf(stderr, "skipped fixture comparison: %s\n", sm_status_message(s));
    sm_status_free(s);
  } else {
    CHECK(wl == len && memcmp(want, data, len) == 0);
    free(want);
  }
  free(path);
  /* Exact bytes of the footer and the trailers from the spec. */
  static const uint8_t footer_head[4] = {0x2b, 0x08, 0x38, 0x0e};
  static const uint8_t magic[8] = {0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb};
  static const uint8_t meta_trailer[5] = {0x00, 0xc0, 0xf2, 0xa1, 0xb0};
  CHECK(len == 123 && memcmp(data + 0x4b, footer_head, 4) == 0 && memcmp(data + 0x73, magic, 8) == 0 &&
        memcmp(data + 0x33, meta_trailer, 5) == 0 && data[0x3b] == 'd');
  sm_table *t;
  CHECK_OK(sm__table_open("counter.index", data, len, &t));
  uint8_t *v;
  size_t vl;
  CHECK_OK(sm__table_get(t, "counter", 7, &v, &vl));
  CHECK(vl == 11 && memcmp(v, counter_entry, 11) == 0);
  free(v);
  CHECK_OK(sm__table_get(t, "", 0, &v, &vl));
  CHECK(vl == 6 && memcmp(v, header, 6) == 0);
  free(v);
  CHECK_ERR(sm__table_get(t, "count", 5, &v, &vl), "not found");
  CHECK_ERR(sm__table_get(t, "d", 1, &v, &vl), "not found");
  sm__table_free(t);
  free(data);
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static size_t put_block(uint8_t *out, const uint8_t *blk, size_t n, uint8_t type) {
  memcpy(out, blk, n);
  out[n] = type;
  put32(out + n + 1, sm__crc32c_mask(sm__crc32c_extend(sm__crc32c_value(blk, n), &type, 1)));
  return n + 5;
}

/* A table whose one data block is Snappy-compressed, as TF 1.14+ writes with default options. */
static void test_snappy(void) {
  kv a[200];
  for (int i = 0; i < 200; i++) {
    a[i].kl = (size_t)snprintf((char *)a[i].k, sizeof a[i].k, "layer_%03d/kernel", i);
    a[i].vl = 40;
    memset(a[i].v, 'x', 40);
  }
  uint8_t *plain;
  size_t plen;
  CHECK_OK(build(a, 200, 1 << 20, 16, &plain, &plen));
  /* The data block starts at 0; its size is in the one index entry (shared 0, key, handle 0 S). */
  sm_table *t;
  CHECK_OK(sm__table_open("p", plain, plen, &t));
  CHECK_EQ_INT(sm__table_num_blocks(t), 1);
  sm__table_free(t);
  /* raw block size: the trailer sits right before the 13-byte metaindex block + trailer. */
  size_t metaoff = plen - 48;
  /* footer: metaindex handle first */
  size_t raw = 0;
  {
    uint64_t off = plain[plen - 48];
    if (off & 0x80) off = (off & 0x7f) | ((uint64_t)plain[plen - 47] << 7);
    metaoff = (size_t)off;
    raw = metaoff - 5;
  }
  size_t clen = snappy_max_compressed_length(raw);
  char *comp = malloc(clen);
  CHECK(snappy_compress((const char *)plain, raw, comp, &clen) == SNAPPY_OK);
  CHECK(clen < raw);
  uint8_t *f = malloc(clen + 200);
  size_t n = put_block(f, (uint8_t *)comp, clen, 1);
  static const uint8_t empty[8] = {0, 0, 0, 0, 1, 0, 0, 0};
  size_t meta_at = n;
  n += put_block(f + n, empty, 8, 0);
  uint8_t idx[64];
  size_t k = 0;
  idx[k++] = 0;
  idx[k++] = 1;  /* key "m" */
  idx[k++] = 0;  /* value length, fixed below */
  idx[k++] = 'm';
  size_t vstart = k;
  idx[k++] = 0; /* offset 0 */
  size_t c = clen;
  do {
    idx[k++] = (uint8_t)((c & 0x7f) | (c > 0x7f ? 0x80 : 0));
    c >>= 7;
  } while (c);
  idx[2] = (uint8_t)(k - vstart);
  put32(idx + k, 0);
  put32(idx + k + 4, 1);
  k += 8;
  size_t idx_at = n;
  n += put_block(f + n, idx, k, 0);
  uint8_t *foot = f + n;
  memset(foot, 0, 48);
  size_t fk = 0;
  uint64_t vals[4] = {meta_at, 8, idx_at, k};
  for (int i = 0; i < 4; i++) {
    uint64_t v = vals[i];
    do {
      foot[fk++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      v >>= 7;
    } while (v);
  }
  put32(foot + 40, 0x8B80FB57u);
  put32(foot + 44, 0xDB477524u);
  n += 48;
  int same;
  CHECK_OK(scan(f, n, a, 200, &same));
  CHECK(same);
  /* Corrupt Snappy with a matching checksum: a clear error. */
  comp[0] = (char)0xff;
  comp[1] = (char)0xff;
  put_block(f, (uint8_t *)comp, clen, 1);
  CHECK_ERR(scan(f, n, a, 200, &same), "Snappy");
  /* Unknown block type */
  put_block(f, (uint8_t *)comp, clen, 7);
  CHECK_ERR(scan(f, n, a, 200, &same), "bad block type");
  free(f);
  free(comp);
  free(plain);
}

static void test_damage(void) {
  kv a[120];
  size_t n = make_kvs(a, 120);
  for (size_t i = 0; i < n; i++) a[i].vl %= 24; /* small, so flipping every bit stays quick */
  uint8_t *data;
  size_t len;
  CHECK_OK(build(a, n, 512, 4, &data, &len));
  int same;
  CHECK_OK(scan(data, len, a, n, &same));
  CHECK(same);
  /* Every truncation fails. */
  int bad = 0;
  for (size_t l = 0; l < len; l++) {
    uint8_t *cp = malloc(l ? l : 1);
    memcpy(cp, data, l);
    sm_status *s = scan(cp, l, a, n, &same);
    if (!s) bad++;
    if (l < 48 && (!s || !strstr(sm_status_message(s), "too short"))) bad++;
    sm_status_free(s);
    free(cp);
  }
  CHECK_EQ_INT(bad, 0);
  /* Every bit flip: an error, or (only in the footer padding) the same content. */
  uint8_t *cp = malloc(len);
  int silent = 0;
  for (size_t pos = 0; pos < len; pos++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(cp, data, len);
      cp[pos] ^= (uint8_t)(1 << bit);
      sm_status *s = scan(cp, len, a, n, &same);
      if (!s && !same) bad++;
      if (!s && pos < len - 48) silent++;
      sm_status_free(s);
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(silent, 0);
  memcpy(cp, data, len);
  cp[len - 1] ^= 1;
  CHECK_ERR(scan(cp, len, a, n, &same), "t.index: not an sstable (bad magic number)");
  memcpy(cp, data, len);
  cp[10] ^= 1;
  CHECK_ERR(scan(cp, len, a, n, &same), "block checksum mismatch at offset 0");
  CHECK_ERR(scan(cp, 10, a, n, &same), "t.index: file is too short to be an sstable");
  /* A footer handle far past the end. */
  memcpy(cp, data, len);
  memset(cp + len - 48, 0xff, 9);
  cp[len - 48 + 9] = 0x01;
  CHECK_ERR(scan(cp, len, a, n, &same), "t.index");
  free(cp);
  free(data);
}

int main(void) {
  test_round_trip(SM_TABLE_BLOCK_SIZE, SM_TABLE_RESTART_INTERVAL, 3000);
  test_round_trip(512, 3, 3000);
  test_round_trip(64, 1, 500);
  test_round_trip(4096, 16, 20000);
  test_counter_bytes();
  test_snappy();
  test_damage();
  /* The empty table. */
  uint8_t *data;
  size_t len;
  CHECK_OK(build(NULL, 0, 0, 0, &data, &len));
  int same;
  CHECK_OK(scan(data, len, NULL, 0, &same));
  CHECK(same);
  free(data);
  TEST_MAIN_END();
}
