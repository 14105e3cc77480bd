/* test_bundle.c - bundle writer/reader round trips for every dtype, TF's exact bytes, zero-copy,
 * partitioned tensors, crafted hostile entries and damage (truncation, bit flips), and the
 * resident pages of a zero-copy tensor given back (sm__tensor_drop_pages) without changing it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/tensor_internal.h"
#include "format/bundle_internal.h"
#include "format/crc32c.h"
#include "format/table.h"
#include "savedmodel/bundle.h"
#include "tensor_bundle.pb-c.h"
#include "test.h"

static char dir[512];

/* Plain write: the damage loops write thousands of files, and fsync would dominate. */
static sm_status *put_file(const char *p, const void *data, size_t n) {
  FILE *f = fopen(p, "wb");
  if (!f) return sm_status_new(SM_IO, "cannot write %s", p);
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  fclose(f);
  return w == n ? NULL : sm_status_new(SM_IO, "short write to %s", p);
}

static const char *path(const char *name) {
  static char buf[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static sm_tensor *pattern(int dtype, int rank, const int64_t *dims, unsigned seed) {
  sm_tensor *t;
  sm_status *s = sm_tensor_new(dtype, rank, dims, &t);
  if (s) {
    fprintf(stderr, "%s\n", sm_status_message(s));
    exit(2);
  }
  if (dtype == SM_STRING) {
    for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) {
      char b[64];
      size_t l = (size_t)((i * 7 + seed) % 40);
      for (size_t j = 0; j < l; j++) b[j] = (char)((j * 31 + (size_t)i + seed) % 256); /* NULs included */
      sm_status_free(sm_tensor_set_string(t, i, b, l));
    }
  } else {
    uint8_t *p = sm_tensor_data(t);
    size_t n = sm_tensor_nbytes(t);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      p[i] = (uint8_t)(x >> 16);
    }
    if (dtype == SM_BOOL)
      for (size_t i = 0; i < n; i++) p[i] &= 1;
  }
  return t;
}

typedef struct {
  char key[64];
  sm_tensor *t;
} item;

static int item_cmp(const void *a, const void *b) { return strcmp(((const item *)a)->key, ((const item *)b)->key); }

static sm_status *write_items(const char *prefix, item *it, size_t n) {
  sm_bundle_writer *w;
  sm_status *s = sm_bundle_writer_open(prefix, &w);
  if (s) return s;
  for (size_t i = 0; i < n && !s; i++) s = sm_bundle_writer_add(w, it[i].key, it[i].t);
  if (!s) s = sm_bundle_writer_finish(w);
  sm_bundle_writer_free(w);
  return s;
}

/* Opens prefix and reads every item: 0 = all equal; 1 = an error on open or on some read;
 * -1 = some read succeeded with different data (the one outcome that must never happen). */
static int verify(const char *prefix, const item *it, size_t n, char *msg, size_t cap) {
  sm_bundle *b;
  sm_status *s = sm_bundle_open(prefix, &b);
  if (s) {
    snprintf(msg, cap, "%s", sm_status_message(s));
    sm_status_free(s);
    return 1;
  }
  int r = 0;
  for (size_t i = 0; i < n; i++) {
    sm_tensor *t;
    s = sm_bundle_read(b, it[i].key, &t);
    if (s) {
      snprintf(msg, cap, "%s", sm_status_message(s));
      sm_status_free(s);
      r = 1;
      continue;
    }
    if (!sm_tensor_equal(t, it[i].t)) {
      sm_tensor_free(t);
      sm_bundle_close(b);
      return -1;
    }
    sm_tensor_free(t);
  }
  sm_bundle_close(b);
  return r;
}

static const int all_dtypes[] = {SM_FLOAT,  SM_DOUBLE, SM_INT32,    SM_UINT8,  SM_INT16,  SM_INT8,
                                 SM_STRING, SM_COMPLEX64, SM_INT64, SM_BOOL,   SM_QINT8,  SM_QUINT8,
                                 SM_QINT32, SM_BFLOAT16, SM_QINT16, SM_QUINT16, SM_UINT16, SM_COMPLEX128,
                                 SM_HALF,   SM_UINT32, SM_UINT64};
#define NDT (sizeof all_dtypes / sizeof all_dtypes[0])

static void test_round_trip(void) {
  item it[4 * NDT + 8];
  size_t n = 0;
  /* A large float tensor first, so it sits at offset 0 and can be borrowed from the mapping. */
  int64_t big[2] = {512, 1024};
  snprintf(it[n].key, 64, "big/kernel");
  it[n++].t = pattern(SM_FLOAT, 2, big, 99);
  for (size_t i = 0; i < NDT; i++) {
    int dt = all_dtypes[i];
    int64_t d3[3] = {2, 3, 5}, d0[2] = {0, 7}, d1[1] = {17};
    snprintf(it[n].key, 64, "%s/scalar", sm_dtype_name(dt));
    it[n++].t = pattern(dt, 0, NULL, (unsigned)i);
    snprintf(it[n].key, 64, "%s/matrix", sm_dtype_name(dt));
    it[n++].t = pattern(dt, 3, d3, (unsigned)i + 100);
    snprintf(it[n].key, 64, "%s/empty", sm_dtype_name(dt));
    it[n++].t = pattern(dt, 2, d0, 0);
    snprintf(it[n].key, 64, "%s/vector", sm_dtype_name(dt));
    it[n++].t = pattern(dt, 1, d1, (unsigned)i + 7);
  }
  /* Strings: empty ones, NULs, one long one. */
  int64_t d4[1] = {4};
  sm_tensor *st = pattern(SM_STRING, 1, d4, 0);
  sm_status_free(sm_tensor_set_string(st, 0, "", 0));
  sm_status_free(sm_tensor_set_string(st, 1, "a\0b\0", 4));
  char *longs = malloc(300000);
  memset(longs, 'z', 300000);
  sm_status_free(sm_tensor_set_string(st, 2, longs, 300000));
  free(longs);
  sm_status_free(sm_tensor_set_string(st, 3, "\xff", 1));
  snprintf(it[n].key, 64, "strings/mixed");
  it[n++].t = st;
  char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s", path("rt/variables"));
  mkdir(path("rt"), 0755);
  CHECK_OK(write_items(prefix, it, n));
  CHECK(sm__path_exists(path("rt/variables.index")));
  CHECK(sm__path_exists(path("rt/variables.data-00000-of-00001")));
  char msg[512] = "";
  CHECK_EQ_INT(verify(prefix, it, n, msg, sizeof msg), 0);
  if (msg[0]) fprintf(stderr, "round trip: %s\n", msg);

  sm_bundle *b;
  CHECK_OK(sm_bundle_open(prefix, &b));
  if (!b) return;
  CHECK_EQ_INT(sm_bundle_num_shards(b), 1);
  CHECK_EQ_INT(sm_bundle_num_entries(b), n);
  qsort(it, n, sizeof *it, item_cmp);
  for (size_t i = 0; i < n && i < sm_bundle_num_entries(b); i++) {
    sm_bundle_entry e;
    CHECK_OK(sm_bundle_entry_at(b, i, &e));
    CHECK_EQ_STR(e.key, it[i].key);
    CHECK_EQ_INT(e.dtype, sm_tensor_dtype(it[i].t));
    CHECK_EQ_INT(e.rank, sm_tensor_rank(it[i].t));
    CHECK_EQ_INT(e.sliced, 0);
    for (int d = 0; d < e.rank; d++) CHECK_EQ_INT(e.dims[d], sm_tensor_dims(it[i].t)[d]);
    sm_bundle_entry e2;
    CHECK_OK(sm_bundle_lookup(b, it[i].key, &e2));
    CHECK(e2.key == e.key);
  }
  sm_bundle_entry e;
  CHECK_ERR(sm_bundle_entry_at(b, n, &e), "past");
  CHECK_ERR(sm_bundle_lookup(b, "nope", &e), "key nope not found");
  CHECK_ERR(sm_bundle_lookup(b, "", &e), "not found");
  sm_tensor *t1, *t2, *t3;
  CHECK_ERR(sm_bundle_read(b, "nope", &t1), "not found");
  /* Zero copy: two reads of the big tensor share the mapping; the copy variant does not. */
  CHECK_OK(sm_bundle_read(b, "big/kernel", &t1));
  CHECK_OK(sm_bundle_read(b, "big/kernel", &t2));
  CHECK_OK(sm_bundle_read_copy(b, "big/kernel", &t3));
  CHECK(t1 && t2 && t3 && sm_tensor_data(t1) == sm_tensor_data(t2) && sm_tensor_data(t3) != sm_tensor_data(t1));
  sm_tensor *small1, *small2;
  CHECK_OK(sm_bundle_read(b, "DT_FLOAT/matrix", &small1));
  CHECK_OK(sm_bundle_read(b, "DT_FLOAT/matrix", &small2));
  CHECK(sm_tensor_data(small1) != sm_tensor_data(small2));
  sm_tensor_free(small1);
  sm_tensor_free(small2);
  sm_bundle_close(b);
  /* The borrowed tensors outlive the bundle. */
  CHECK(sm_tensor_equal(t1, t3) && sm_tensor_equal(t2, t3));
  sm_tensor_free(t1);
  CHECK(sm_tensor_equal(t2, t3));
  sm_tensor_free(t2);
  sm_tensor_free(t3);

  /* Writer misuse. */
  sm_bundle_writer *w;
  CHECK_OK(sm_bundle_writer_open(path("rt/dup"), &w));
  CHECK_OK(sm_bundle_writer_add(w, "x", it[0].t));
  CHECK_ERR(sm_bundle_writer_add(w, "x", it[0].t), "duplicate key x");
  CHECK_ERR(sm_bundle_writer_add(w, "", it[0].t), "reserved");
  sm_bundle_writer_free(w); /* not finished: no files left behind */
  CHECK(!sm__path_exists(path("rt/dup.index")));
  CHECK(!sm__path_exists(path("rt/dup.data-00000-of-00001")));
  CHECK_ERR(sm_bundle_writer_open(path("no/such/dir/variables"), &w), "no/such/dir");
  for (size_t i = 0; i < n; i++) sm_tensor_free(it[i].t);
}

/* Spec §11.1: a scalar float 0.0 under "counter" gives TF's exact 123-byte index. */
static void test_counter_exact(void) {
  sm_tensor *t;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &t));
  sm_bundle_writer *w;
  mkdir(path("counter"), 0755);
  CHECK_OK(sm_bundle_writer_open(path("counter/variables"), &w));
  CHECK_OK(sm_bundle_writer_add(w, "counter", t));
  CHECK_OK(sm_bundle_writer_finish(w));
  CHECK_ERR(sm_bundle_writer_add(w, "late", t), "already finished");
  sm_bundle_writer_free(w);
  sm_tensor_free(t);
  char *mine, *theirs;
  size_t ml, tl;
  CHECK_OK(sm__file_read_all(path("counter/variables.index"), &mine, &ml));
  CHECK_EQ_INT(ml, 123);
  static const uint8_t entry[11] = {0x08, 0x01, 0x12, 0x00, 0x28, 0x04, 0x35, 0xa6, 0x7b, 0x11, 0x3a};
  static const uint8_t header[6] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};
  CHECK(ml == 123 && memcmp(mine + 3, header, 6) == 0 && memcmp(mine + 0x13, entry, 11) == 0);
  sm_status *s = sm__file_read_all(
      SM_SHARED_DIR "/fixtures/tf-serving/saved_model_counter/00000123/variables/variables.index", &theirs, &tl);
  if (!s) {
    CHECK(ml == tl && memcmp(mine, theirs, ml) == 0);
    free(theirs);
  }
  sm_status_free(s);
  free(mine);
  CHECK_OK(sm__file_read_all(path("counter/variables.data-00000-of-00001"), &mine, &ml));
  CHECK(ml == 4 && memcmp(mine, "\0\0\0\0", 4) == 0);
  free(mine);
}

static void test_ordered_code(void) {
  size_t l;
  uint8_t *k = sm__encode_tensor_name_slice("Variable", 8, 0, NULL, NULL, &l);
  CHECK(l == 12 && memcmp(k, "\x00Variable\x00\x01\x00", 12) == 0);
  free(k);
  int64_t st[2] = {0, 3}, ln[2] = {-1, 2};
  k = sm__encode_tensor_name_slice("a\0\xff", 3, 2, st, ln, &l);
  CHECK(l == 14 && memcmp(k, "\x00" "a\x00\xff\xff\x00\x00\x01" "\x01\x02" "\x80\x7f\x83\x82", 14) == 0);
  free(k);
  struct {
    int64_t v;
    const char *enc;
    size_t n;
  } cases[] = {{0, "\x80", 1},          {1, "\x81", 1},         {-1, "\x7f", 1},
               {63, "\xbf", 1},         {-64, "\x40", 1},       {64, "\xc0\x40", 2},
               {-65, "\x3f\xbf", 2},    {0x424242, "\xf0\x42\x42\x42", 4},
               {-0x800, "\x38\x00", 2}, {INT64_MAX, "\xff\xc0\x7f\xff\xff\xff\xff\xff\xff\xff", 10},
               {INT64_MIN, "\x00\x3f\x80\x00\x00\x00\x00\x00\x00\x00", 10}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t out[10];
    size_t n = sm__ordered_signed_num_increasing(out, cases[i].v);
    if (n != cases[i].n || memcmp(out, cases[i].enc, n) != 0) {
      fprintf(stderr, "signed %lld: got %zu bytes %02x %02x\n", (long long)cases[i].v, n, out[0], out[1]);
      CHECK(0);
    }
  }
  uint8_t out[10];
  CHECK(sm__ordered_num_increasing(out, 0) == 1 && out[0] == 0);
  CHECK(sm__ordered_num_increasing(out, 0x1234) == 3 && out[0] == 2 && out[1] == 0x12 && out[2] == 0x34);
}

static void test_slices(void) {
  /* A [4,6] float tensor stored as four slices, as a TF1 partitioned variable. */
  int64_t full[2] = {4, 6};
  sm_tensor *whole = pattern(SM_FLOAT, 2, full, 5);
  const float *src = sm_tensor_data(whole);
  sm_bundle_writer *w;
  mkdir(path("sl"), 0755);
  CHECK_OK(sm_bundle_writer_open(path("sl/variables"), &w));
  /* rows 0..1 full width; rows 2..3 split at column 4 */
  struct {
    int64_t st[2], ln[2];
  } parts[3] = {{{0, 0}, {2, -1}}, {{2, 0}, {2, 4}}, {{2, 4}, {2, 2}}};
  for (int p = 0; p < 3; p++) {
    int64_t d[2] = {parts[p].ln[0], parts[p].ln[1] < 0 ? 6 : parts[p].ln[1]};
    sm_tensor *t;
    CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d, &t));
    float *dst = sm_tensor_data(t);
    for (int64_t r = 0; r < d[0]; r++)
      for (int64_t c = 0; c < d[1]; c++) dst[r * d[1] + c] = src[(parts[p].st[0] + r) * 6 + parts[p].st[1] + c];
    CHECK_OK(sm__bundle_writer_add_slice(w, "part/w", 2, full, parts[p].st, parts[p].ln, t));
    sm_tensor_free(t);
  }
  sm_tensor *other = pattern(SM_INT32, 1, full, 1);
  CHECK_OK(sm_bundle_writer_add(w, "plain", other));
  {
    int64_t d[2] = {2, 6};
    sm_tensor *t = pattern(SM_FLOAT, 2, d, 1);
    CHECK_ERR(sm__bundle_writer_add_slice(w, "plain", 2, full, parts[0].st, parts[0].ln, t), "different tensor");
    sm_tensor_free(t);
  }
  CHECK_OK(sm_bundle_writer_finish(w));
  sm_bundle_writer_free(w);
  sm_bundle *b;
  CHECK_OK(sm_bundle_open(path("sl/variables"), &b));
  if (b) {
    CHECK_EQ_INT(sm_bundle_num_entries(b), 2); /* slice entries are hidden */
    sm_bundle_entry e;
    CHECK_OK(sm_bundle_lookup(b, "part/w", &e));
    CHECK(e.sliced == 1 && e.rank == 2 && e.dims[0] == 4 && e.dims[1] == 6);
    sm_tensor *t;
    CHECK_OK(sm_bundle_read(b, "part/w", &t));
    CHECK(t && sm_tensor_equal(t, whole));
    sm_tensor_free(t);
    CHECK_OK(sm_bundle_read(b, "plain", &t));
    CHECK(t && sm_tensor_equal(t, other));
    sm_tensor_free(t);
    sm_bundle_close(b);
  }
  /* Only two of the three slices: the reader says the coverage is short. */
  CHECK_OK(sm_bundle_writer_open(path("sl/short"), &w));
  for (int p = 0; p < 2; p++) {
    int64_t d[2] = {parts[p].ln[0], parts[p].ln[1] < 0 ? 6 : parts[p].ln[1]};
    sm_tensor *t = pattern(SM_FLOAT, 2, d, 1);
    CHECK_OK(sm__bundle_writer_add_slice(w, "part/w", 2, full, parts[p].st, parts[p].ln, t));
    sm_tensor_free(t);
  }
  CHECK_OK(sm_bundle_writer_finish(w));
  sm_bundle_writer_free(w);
  CHECK_OK(sm_bundle_open(path("sl/short"), &b));
  if (b) {
    sm_tensor *t;
    CHECK_ERR(sm_bundle_read(b, "part/w", &t), "cover 20 of 24");
    sm_bundle_close(b);
  }
  sm_tensor_free(whole);
  sm_tensor_free(other);
}

/* ---- crafted indexes ------------------------------------------------------------------------- */

static void write_index(const char *prefix, const uint8_t *hdr, size_t hl, const char *key,
                        const Tensorflow__BundleEntryProto *e) {
  sm_table_builder *tb;
  sm_status_free(sm__table_builder_new(&tb));
  sm_status_free(sm__table_builder_add(tb, "", 0, hdr, hl));
  if (key) {
    uint8_t buf[4096];
    size_t n = tensorflow__bundle_entry_proto__pack(e, buf);
    sm_status_free(sm__table_builder_add(tb, key, strlen(key), buf, n));
  }
  uint8_t *out;
  size_t len;
  sm_status_free(sm__table_builder_finish(tb, &out, &len));
  sm__table_builder_free(tb);
  char p[1024];
  snprintf(p, sizeof p, "%s.index", prefix);
  CHECK_OK(put_file(p, out, len));
  free(out);
}

static const uint8_t hdr1[6] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};

static sm_status *open_read(const char *prefix, const char *key) {
  sm_bundle *b;
  sm_status *s = sm_bundle_open(prefix, &b);
  if (s) return s;
  sm_tensor *t = NULL;
  s = sm_bundle_read(b, key, &t);
  sm_tensor_free(t);
  sm_bundle_close(b);
  return s;
}

static void test_crafted(void) {
  mkdir(path("cr"), 0755);
  char prefix[1024]; /* path() reuses its buffers */
  snprintf(prefix, sizeof prefix, "%s", path("cr/variables"));
  uint8_t data[64];
  for (int i = 0; i < 64; i++) data[i] = (uint8_t)i;
  CHECK_OK(put_file(path("cr/variables.data-00000-of-00001"), data, 64));
  Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  Tensorflow__TensorShapeProto__Dim dv[3] = {TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT,
                                             TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT,
                                             TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT};
  Tensorflow__TensorShapeProto__Dim *dp[3] = {&dv[0], &dv[1], &dv[2]};
  shape.dim = dp;
  Tensorflow__BundleEntryProto e = TENSORFLOW__BUNDLE_ENTRY_PROTO__INIT;
  e.shape = &shape;
#define RESET(dt, nd, off, sz)                                                      \
  do {                                                                              \
    e.dtype = (Tensorflow__DataType)(dt);                                           \
    shape.n_dim = (nd);                                                             \
    e.shard_id = 0;                                                                 \
    e.offset = (off);                                                               \
    e.size = (sz);                                                                  \
    e.crc32c = sm__crc32c_mask(sm__crc32c_value(data + (off), (size_t)(sz)));         \
  } while (0)
  /* A good float vector of 4 at offset 8. */
  dv[0].size = 4;
  RESET(SM_FLOAT, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_OK(open_read(prefix, "v"));
  /* Absurd offsets and sizes. */
  e.offset = (int64_t)1 << 62;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "entry v: offset/size past the end of shard 0");
  e.offset = 60;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "past the end of shard 0");
  e.offset = INT64_MAX;
  e.size = INT64_MAX;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "past the end");
  e.offset = -1;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "offset -1");
  /* Size that does not match the shape. */
  RESET(SM_FLOAT, 1, 8, 12);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid size 12");
  /* Bad checksum */
  RESET(SM_FLOAT, 1, 8, 16);
  e.crc32c ^= 1;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "checksum mismatch on entry v in");
  /* Dims that overflow, negative dims, too many dims. */
  dv[0].size = (int64_t)1 << 40;
  dv[1].size = (int64_t)1 << 40;
  RESET(SM_FLOAT, 2, 0, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid shape");
  dv[0].size = (int64_t)1 << 40;
  RESET(SM_DOUBLE, 1, 0, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid size");
  dv[0].size = -3;
  RESET(SM_FLOAT, 1, 0, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid shape");
  shape.unknown_rank = 1;
  dv[0].size = 4;
  RESET(SM_FLOAT, 0, 0, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "unknown rank");
  shape.unknown_rank = 0;
  /* Bad shard, bad dtype, unsupported dtypes. */
  dv[0].size = 4;
  RESET(SM_FLOAT, 1, 8, 16);
  e.shard_id = 3;
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "shard 3");
  RESET(999, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid dtype 999");
  RESET(SM_FLOAT + SM_DTYPE_REF_OFFSET, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "invalid dtype 101");
  RESET(SM_VARIANT, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  sm_status *s = open_read(prefix, "v");
  CHECK(sm_status_code(s) == SM_UNIMPLEMENTED && strstr(sm_status_message(s), "DT_VARIANT"));
  sm_status_free(s);
  RESET(SM_RESOURCE, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "DT_RESOURCE");
  RESET(SM_INT4, 1, 8, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "DT_INT4");
  /* Strings: a huge count in few bytes; lengths past the end. */
  dv[0].size = 1000;
  RESET(SM_STRING, 1, 0, 16);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "cannot fit");
  uint8_t sdata[16] = {0x05, 0, 0, 0, 0, 'a', 'b'};
  CHECK_OK(put_file(path("cr/variables.data-00000-of-00001"), sdata, 16));
  dv[0].size = 1;
  RESET(SM_STRING, 1, 0, 7);
  write_index(prefix, hdr1, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "checksum"); /* the length checksum is wrong first */
  uint32_t m = sm__crc32c_mask(sm__crc32c_value("\x05\0\0\0", 4));
  for (int i = 0; i < 4; i++) sdata[1 + i] = (uint8_t)(m >> (8 * i));
  CHECK_OK(put_file(path("cr/variables.data-00000-of-00001"), sdata, 16));
  CHECK_ERR(open_read(prefix, "v"), "the strings take 5 bytes but the entry has 2 left");
  CHECK_OK(put_file(path("cr/variables.data-00000-of-00001"), data, 64));
  /* Header problems. */
  dv[0].size = 4;
  RESET(SM_FLOAT, 1, 8, 16);
  static const uint8_t hdr_newer[8] = {0x08, 0x01, 0x1a, 0x04, 0x08, 0x01, 0x10, 0x02}; /* min_consumer 2 */
  write_index(prefix, hdr_newer, 8, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "needs reader version 2");
  static const uint8_t hdr_bad_consumer[8] = {0x08, 0x01, 0x1a, 0x04, 0x08, 0x01, 0x18, 0x01};
  write_index(prefix, hdr_bad_consumer, 8, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "disallows");
  static const uint8_t hdr_two[6] = {0x08, 0x02, 0x1a, 0x02, 0x08, 0x01};
  write_index(prefix, hdr_two, 6, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "variables.data-00000-of-00002");
  static const uint8_t hdr_zero[4] = {0x1a, 0x02, 0x08, 0x01};
  write_index(prefix, hdr_zero, 4, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "num_shards 0");
  static const uint8_t hdr_garbage[3] = {0x0a, 0x05, 0x01};
  write_index(prefix, hdr_garbage, 3, "v", &e);
  CHECK_ERR(open_read(prefix, "v"), "header");
  write_index(prefix, hdr1, 6, NULL, NULL);
  CHECK_ERR(open_read(prefix, "v"), "not found");
  /* Big-endian data: byte-swapped after the checksum check. */
  static const uint8_t hdr_big[8] = {0x08, 0x01, 0x10, 0x01, 0x1a, 0x02, 0x08, 0x01};
  write_index(prefix, hdr_big, 8, "v", &e);
  sm_bundle *b;
  CHECK_OK(sm_bundle_open(prefix, &b));
  if (b) {
    sm_tensor *t;
    CHECK_OK(sm_bundle_read(b, "v", &t));
    const uint8_t *p = t ? sm_tensor_data(t) : NULL;
    CHECK(p && p[0] == 11 && p[1] == 10 && p[2] == 9 && p[3] == 8 && p[15] == 20);
    sm_tensor_free(t);
    sm_bundle_close(b);
  }
  /* Two shards, the entry in the second. */
  CHECK_OK(put_file(path("cr/two.data-00000-of-00002"), "", 0));
  CHECK_OK(put_file(path("cr/two.data-00001-of-00002"), data, 64));
  dv[0].size = 4;
  RESET(SM_FLOAT, 1, 8, 16);
  e.shard_id = 1;
  write_index(path("cr/two"), hdr_two, 6, "v", &e);
  CHECK_OK(sm_bundle_open(path("cr/two"), &b));
  if (b) {
    sm_tensor *t;
    CHECK_EQ_INT(sm_bundle_num_shards(b), 2);
    CHECK_OK(sm_bundle_read(b, "v", &t));
    CHECK(t && memcmp(sm_tensor_data(t), data + 8, 16) == 0);
    sm_tensor_free(t);
    sm_bundle_close(b);
  }
  /* Partitioned entries whose slices are missing, overlap or do not fit. */
  {
    Tensorflow__TensorSliceProto__Extent x0 = TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__INIT;
    x0.has_length_case = TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__HAS_LENGTH_LENGTH;
    x0.length = 3;
    Tensorflow__TensorSliceProto__Extent *xp[1] = {&x0};
    Tensorflow__TensorSliceProto sp = TENSORFLOW__TENSOR_SLICE_PROTO__INIT;
    sp.n_extent = 1;
    sp.extent = xp;
    Tensorflow__TensorSliceProto *spp[2] = {&sp, &sp};
    RESET(SM_FLOAT, 1, 0, 0);
    e.crc32c = 0;
    e.n_slices = 1;
    e.slices = spp;
    write_index(prefix, hdr1, 6, "p", &e);
    CHECK_ERR(open_read(prefix, "p"), "entry p: the data of slice 0 is missing");
    e.n_slices = 2;
    write_index(prefix, hdr1, 6, "p", &e);
    CHECK_ERR(open_read(prefix, "p"), "overlap");
    x0.start = 2;
    e.n_slices = 1;
    write_index(prefix, hdr1, 6, "p", &e);
    CHECK_ERR(open_read(prefix, "p"), "bad extent in dimension 0");
    e.n_slices = 0;
    e.slices = NULL;
  }
  /* Missing index, missing shard, a file that is not a table. */
  CHECK_ERR(open_read(path("cr/none"), "v"), "cr/none.index");
  write_index(prefix, hdr1, 6, "v", &e);
  unlink(path("cr/variables.data-00000-of-00001"));
  CHECK_ERR(open_read(prefix, "v"), "data shard 0 of 1 is missing");
  CHECK_OK(put_file(path("cr/variables.index"), data, 64));
  CHECK_ERR(open_read(prefix, "v"), "variables.index: not an sstable (bad magic number)");
}

/* ---- damage ---------------------------------------------------------------------------------- */

static void test_damage(void) {
  mkdir(path("dm"), 0755);
  item it[4];
  int64_t d2[2] = {3, 2}, d1[1] = {3};
  snprintf(it[0].key, 64, "a");
  it[0].t = pattern(SM_FLOAT, 2, d2, 1);
  snprintf(it[1].key, 64, "b/strings");
  it[1].t = pattern(SM_STRING, 1, d1, 3);
  snprintf(it[2].key, 64, "c");
  it[2].t = pattern(SM_INT64, 0, NULL, 2);
  snprintf(it[3].key, 64, "d/empty");
  int64_t d0[1] = {0};
  it[3].t = pattern(SM_FLOAT, 1, d0, 0);
  CHECK_OK(write_items(path("dm/good"), it, 4));
  char *idx, *dat;
  size_t il, dl;
  CHECK_OK(sm__file_read_all(path("dm/good.index"), &idx, &il));
  CHECK_OK(sm__file_read_all(path("dm/good.data-00000-of-00001"), &dat, &dl));
  char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s", path("dm/bad"));
  char ipath[1100], dpath[1100], msg[512];
  snprintf(ipath, sizeof ipath, "%s.index", prefix);
  snprintf(dpath, sizeof dpath, "%s.data-00000-of-00001", prefix);
  CHECK_OK(put_file(dpath, dat, dl));
  int wrong = 0, silent = 0;
  /* Every truncation of the index fails on open. */
  for (size_t l = 0; l < il; l++) {
    sm_status_free(put_file(ipath, idx, l));
    int r = verify(prefix, it, 4, msg, sizeof msg);
    if (r == -1) wrong++;
    if (r == 0) silent++;
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(silent, 0);
  /* Every bit of the index: an error, or (footer padding only) exactly the right values. */
  char *cp = malloc(il > dl ? il : dl);
  for (size_t pos = 0; pos < il; pos++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(cp, idx, il);
      cp[pos] ^= (char)(1 << bit);
      sm_status_free(put_file(ipath, cp, il));
      int r = verify(prefix, it, 4, msg, sizeof msg);
      if (r == -1) wrong++;
      if (r == 0 && pos < il - 48) silent++;
    }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(silent, 0);
  /* Every bit of the data file: the entry holding it fails with a checksum mismatch. */
  sm_status_free(put_file(ipath, idx, il));
  int not_checksum = 0;
  for (size_t pos = 0; pos < dl; pos++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(cp, dat, dl);
      cp[pos] ^= (char)(1 << bit);
      sm_status_free(put_file(dpath, cp, dl));
      msg[0] = 0;
      int r = verify(prefix, it, 4, msg, sizeof msg);
      if (r == -1) wrong++;
      if (r == 0) silent++;
      if (r == 1 && !strstr(msg, "checksum mismatch")) {
        if (not_checksum++ < 3) fprintf(stderr, "data flip at %zu: %s\n", pos, msg);
      }
    }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(silent, 0);
  CHECK_EQ_INT(not_checksum, 0);
  /* Truncated data file: entries past the end fail, nothing succeeds wrongly. */
  for (size_t l = 0; l < dl; l++) {
    sm_status_free(put_file(dpath, dat, l));
    int r = verify(prefix, it, 4, msg, sizeof msg);
    if (r == -1) wrong++;
    if (r == 0) silent++;
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(silent, 0);
  free(cp);
  free(idx);
  free(dat);
  for (int i = 0; i < 4; i++) sm_tensor_free(it[i].t);
}

/* Writes t as entry "big" of SUB/variables and opens that bundle (NULL on failure, checked). */
static sm_bundle *write_big(const char *sub, const sm_tensor *t) {
  char d[64], pre[80];
  snprintf(d, sizeof d, "%s", sub);
  snprintf(pre, sizeof pre, "%s/variables", sub);
  mkdir(path(d), 0755);
  sm_bundle_writer *w;
  CHECK_OK(sm_bundle_writer_open(path(pre), &w));
  CHECK_OK(sm_bundle_writer_add(w, "big", t));
  CHECK_OK(sm_bundle_writer_finish(w));
  sm_bundle_writer_free(w);
  sm_bundle *b = NULL;
  CHECK_OK(sm_bundle_open(path(pre), &b));
  return b;
}

static void remove_big(const char *sub) {
  char f[96];
  snprintf(f, sizeof f, "%s/variables.index", sub);
  unlink(path(f));
  snprintf(f, sizeof f, "%s/variables.data-00000-of-00001", sub);
  unlink(path(f));
}

/* A 64 MiB tensor: the zero-copy read and the copying read both return the written values.
 * (Speed is measured in bench/, not here.) */
static void test_large(void) {
  int64_t d[1] = {16 * 1024 * 1024};
  sm_tensor *t;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, d, &t));
  if (!t) return;
  memset(sm_tensor_data(t), 0x3f, sm_tensor_nbytes(t));
  sm_bundle *b = write_big("large", t);
  sm_tensor *r = NULL, *r2 = NULL;
  if (b) {
    CHECK_OK(sm_bundle_read(b, "big", &r));
    CHECK_OK(sm_bundle_read_copy(b, "big", &r2));
    CHECK(r && r2 && sm_tensor_equal(r, t) && sm_tensor_equal(r2, t));
    CHECK(r && r2 && sm_tensor_data(r) != sm_tensor_data(r2));
    sm_tensor_free(r);
    sm_tensor_free(r2);
    sm_bundle_close(b);
  }
  sm_tensor_free(t);
  remove_big("large");
}

/* RssFile of /proc/self/status in KiB; -1 where there is none (not Linux). */
static long rss_file_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "RssFile:", 8)) kib = atol(line + 8);
  fclose(f);
  return kib;
}

/* A 32 MiB zero-copy tensor: the read (its checksum touches every page) leaves the pages out of
 * the resident set; reading the elements brings them back with the same values; dropping them
 * again (through a view too) gives back the resident memory, and the values read after that are
 * still the written ones. A tensor that owns its memory is not touched by a drop. */
static void test_drop_pages(void) {
  int64_t d[1] = {8 * 1024 * 1024}, d2[2] = {4 * 1024 * 1024, 2};
  sm_tensor *t;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, d, &t));
  if (!t) return;
  float *v = sm_tensor_data(t);
  for (int64_t i = 0; i < d[0]; i++) v[i] = (float)(i % 1009) - 500.0f;
  sm_bundle *b = write_big("drop", t);
  sm_tensor *r = NULL, *view = NULL, *own = NULL;
  if (b) {
    long before = rss_file_kib();
    CHECK_OK(sm_bundle_read(b, "big", &r));
    long after_read = rss_file_kib();
    CHECK(r && sm_tensor_data(r) != sm_tensor_data(t)); /* over the mapping */
    CHECK(r && sm_tensor_equal(r, t));                   /* faults every page in again */
    long touched = rss_file_kib();
    if (r) CHECK_OK(sm_tensor_view(r, 2, d2, &view));
    sm__tensor_drop_pages(view);
    long dropped = rss_file_kib();
    if (before >= 0) {
      CHECK(after_read - before < 8 * 1024);   /* not 32 MiB resident after the read */
      CHECK(touched - after_read > 24 * 1024); /* read: resident */
      CHECK(touched - dropped > 24 * 1024);    /* dropped through the view */
    }
    CHECK(r && sm_tensor_equal(r, t));
    sm__tensor_drop_pages(r);
    CHECK(view && r && !memcmp(sm_tensor_data(view), sm_tensor_data(r), sm_tensor_nbytes(r)));
    CHECK_OK(sm_bundle_read_copy(b, "big", &own));
    sm__tensor_drop_pages(own); /* owned memory: nothing happens */
    CHECK(own && sm_tensor_equal(own, t));
    sm_tensor_free(view);
    sm_tensor_free(r);
    sm_tensor_free(own);
    sm_bundle_close(b);
  }
  sm_tensor_free(t);
  remove_big("drop");
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/test_bundle_tmp", SM_BINARY_DIR);
  mkdir(dir, 0755);
  test_ordered_code();
  test_round_trip();
  test_counter_exact();
  test_slices();
  test_crafted();
  test_damage();
  test_large();
  test_drop_pages();
  TEST_MAIN_END();
}
