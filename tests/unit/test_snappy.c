/* test_snappy.c - the library's lazily bound Snappy functions (src/base/lazylib.c, which dlopen
 * libsnappy at the first compressed block) against libsnappy's own: streams libsnappy wrote must
 * decode to the original bytes, and for truncated, bit-flipped and absurd streams both must agree
 * on valid/invalid (and on the bytes when valid). The library's snappy_* forwarders win at link
 * time; libsnappy's own are reached through dlopen here. */
#include <dlfcn.h>
#include <snappy-c.h>
#include <stdint.h>

#include "test.h"

typedef snappy_status (*len_fn)(const char *, size_t, size_t *);
typedef snappy_status (*valid_fn)(const char *, size_t);
typedef snappy_status (*unc_fn)(const char *, size_t, char *, size_t *);
static len_fn ref_len;
static valid_fn ref_valid;
static unc_fn ref_unc;

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)rng;
}

/* Both decoders on one stream: same verdicts, same bytes. Returns 1 if it decoded. */
static int agree(const char *c, size_t n) {
  size_t a = 0, b = 0;
  snappy_status sa = snappy_uncompressed_length(c, n, &a), sb = ref_len(c, n, &b);
  CHECK_EQ_INT(sa, sb);
  if (sa == SNAPPY_OK && sb == SNAPPY_OK) CHECK_EQ_INT(a, b);
  snappy_status va = snappy_validate_compressed_buffer(c, n), vb = ref_valid(c, n);
  CHECK_EQ_INT(va == SNAPPY_OK, vb == SNAPPY_OK);
  if (va != SNAPPY_OK || sa != SNAPPY_OK || a > (1u << 24)) return 0;
  char *oa = malloc(a + 1), *ob = malloc(a + 1);
  size_t la = a, lb = a;
  snappy_status ua = snappy_uncompress(c, n, oa, &la), ub = ref_unc(c, n, ob, &lb);
  CHECK_EQ_INT(ua, SNAPPY_OK);
  CHECK_EQ_INT(ua == SNAPPY_OK, ub == SNAPPY_OK);
  if (ua == SNAPPY_OK && ub == SNAPPY_OK) {
    CHECK_EQ_INT(la, lb);
    CHECK(la == lb && memcmp(oa, ob, la) == 0);
  }
  free(oa);
  free(ob);
  return 1;
}

static void roundtrip(const char *data, size_t n, int hostile) {
  size_t cl = snappy_max_compressed_length(n);
  char *c = malloc(cl + 1);
  CHECK(snappy_compress(data, n, c, &cl) == SNAPPY_OK);
  size_t got = 0;
  CHECK(snappy_uncompressed_length(c, cl, &got) == SNAPPY_OK && got == n);
  char *out = malloc(n + 1);
  size_t ol = n;
  CHECK(snappy_uncompress(c, cl, out, &ol) == SNAPPY_OK && ol == n && memcmp(out, data, n) == 0);
  if (n > 0) {
    ol = n - 1; /* a buffer one byte short */
    CHECK_EQ_INT(snappy_uncompress(c, cl, out, &ol), SNAPPY_BUFFER_TOO_SMALL);
  }
  free(out);
  if (hostile) {
    for (size_t k = 0; k < cl; k += cl > 300 ? cl / 97 + 1 : 1) agree(c, k); /* truncated */
    char *m = malloc(cl);
    for (int t = 0; t < 400; t++) {
      memcpy(m, c, cl);
      int flips = 1 + (int)(next() % 3);
      for (int f = 0; f < flips; f++) {
        size_t at = next() % cl;
        if (next() & 1)
          m[at] ^= (char)(1u << (next() % 8));
        else
          m[at] = (char)next();
      }
      agree(m, cl);
    }
    free(m);
  }
  free(c);
}

int main(void) {
  void *h = dlopen("libsnappy.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libsnappy.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("skipped: libsnappy not loadable (%s)\n", dlerror());
    return SM_TEST_SKIP;
  }
  *(void **)&ref_len = dlsym(h, "snappy_uncompressed_length");
  *(void **)&ref_valid = dlsym(h, "snappy_validate_compressed_buffer");
  *(void **)&ref_unc = dlsym(h, "snappy_uncompress");
  CHECK(ref_len && ref_valid && ref_unc);
  if (!ref_len || !ref_valid || !ref_unc) TEST_MAIN_END();

  enum { N = 200000 };
  char *buf = malloc(N);
  /* empty, tiny, zeros (long back-references), a short repeating pattern (overlapping copies),
   * text-like (mixed literals and copies, 2-byte offsets), random (long literals) */
  roundtrip(buf, 0, 1);
  memcpy(buf, "a", 1);
  roundtrip(buf, 1, 1);
  memset(buf, 0, N);
  roundtrip(buf, N, 1);
  for (size_t i = 0; i < N; i++) buf[i] = "abc"[i % 3];
  roundtrip(buf, 1000, 1);
  for (size_t i = 0; i < N; i++) buf[i] = (char)("the quick brown fox "[next() % 20] + (next() % 64 == 0));
  roundtrip(buf, N, 1);
  roundtrip(buf, 5000, 1);
  for (size_t i = 0; i < N; i++) buf[i] = (char)next();
  roundtrip(buf, N, 0);
  roundtrip(buf, 700, 1);
  for (size_t n = 0; n < 80; n++) roundtrip(buf, n, 0);

  /* hand-made streams: each literal-length width, copies at the 1/2/4-byte offset forms,
   * absurd lengths, offsets before the start, output past the announced length */
  static const struct {
    const char *b;
    size_t n;
  } cases[] = {
      {"\x00", 1},                                   /* empty */
      {"\x03\x08" "abc", 5},                         /* 3-byte literal */
      {"\x03\xf0\x02" "abc", 6},                     /* literal, length in 1 byte (60) */
      {"\x03\xf4\x02\x00" "abc", 7},                 /* literal, length in 2 bytes (61) */
      {"\x03\xf8\x02\x00\x00" "abc", 8},             /* 3 bytes (62) */
      {"\x03\xfc\x02\x00\x00\x00" "abc", 9},         /* 4 bytes (63) */
      {"\x03\xfc\xff\xff\xff\xff" "abc", 9},         /* literal of 4 GiB */
      {"\x08\x00" "a\x0d\x01", 5},                   /* 'a' then copy len 7 off 1 (overlap) */
      {"\x08\x00" "a\x0d\x02", 5},                   /* offset past the start */
      {"\x08\x00" "a\x0d\x00", 5},                   /* offset 0 */
      {"\x08\x00" "a\x1a\x01\x00", 6},               /* 2-byte offset, len 7 */
      {"\x08\x00" "a\x1b\x01\x00\x00\x00", 8},       /* 4-byte offset, len 7 */
      {"\x08\x00" "a\x1b\x01\x00\x00\x80", 8},       /* 4-byte offset, 2 GiB */
      {"\x07\x00" "a\x0d\x01", 5},                   /* copy past the announced length */
      {"\x09\x00" "a\x0d\x01", 5},                   /* one byte short at the end */
      {"\xff\xff\xff\xff\x0f", 5},                   /* 4 GiB - 1 announced, nothing follows */
      {"\xff\xff\xff\xff\x10", 5},                   /* 33 bits */
      {"\xff\xff\xff\xff\xff\x01", 6},               /* six-byte varint */
      {"\x80", 1},                                   /* varint cut */
      {"", 0},                                       /* nothing */
      {"\x02\x00", 2},                               /* literal cut */
      {"\x02\x05", 2},                               /* copy cut */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) agree(cases[i].b, cases[i].n);
  CHECK(agree("\x08\x00" "a\x0d\x01", 5) == 1);
  CHECK(agree("\x08\x00" "a\x0d\x02", 5) == 0);
  free(buf);
  dlclose(h);
  TEST_MAIN_END();
}
