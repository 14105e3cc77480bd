/* test_idx.c - IDX reading (plain and gzipped) and the MNIST directory layout, on files written
 * here: good ones of every element type, and every way a file can be damaged or lie about its
 * size. Reads the real Fashion-MNIST too when Debian's dataset-fashion-mnist is installed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "savedmodel/idx.h"
#include "savedmodel/tensor.h"
#include "test.h"

static char tmpdir[] = "/tmp/test_idx.XXXXXX";
static char made[128][256];
static int nmade;

static const char *tpath(const char *name) {
  static char buf[4][256];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 256, "%s/%s", tmpdir, name);
  return p;
}

static void remember(const char *path) {
  for (int i = 0; i < nmade; i++)
    if (strcmp(made[i], path) == 0) return;
  if (nmade < 128) snprintf(made[nmade++], 256, "%s", path);
}

static void write_raw(const char *name, const void *data, size_t n) {
  const char *p = tpath(name);
  FILE *f = fopen(p, "wb");
  if (!f) {
    perror(p);
    exit(1);
  }
  if (n) fwrite(data, 1, n, f);
  fclose(f);
  remember(p);
}

static void write_gz(const char *name, const void *data, size_t n) {
  const char *p = tpath(name);
  gzFile g = gzopen(p, "wb");
  if (!g) exit(1);
  if (n) gzwrite(g, data, (unsigned)n);
  gzclose(g);
  remember(p);
}

/* Reads back a file written here (to damage it). */
static uint8_t *slurp(const char *name, size_t *n) {
  FILE *f = fopen(tpath(name), "rb");
  if (!f) exit(1);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  if (fread(b, 1, (size_t)len, f) != (size_t)len) exit(1);
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* An IDX header + data in a malloc'ed buffer. */
static uint8_t *idx_bytes(int type, int rank, const uint32_t *dims, const void *data, size_t dn, size_t *n) {
  size_t h = 4 + 4 * (size_t)rank;
  uint8_t *b = malloc(h + dn + 1);
  b[0] = b[1] = 0;
  b[2] = (uint8_t)type;
  b[3] = (uint8_t)rank;
  for (int i = 0; i < rank; i++) {
    b[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
    b[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
    b[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
    b[7 + 4 * i] = (uint8_t)dims[i];
  }
  if (dn) memcpy(b + h, data, dn);
  *n = h + dn;
  return b;
}

static void write_idx(const char *name, int gz, int type, int rank, const uint32_t *dims, const void *data, size_t dn) {
  size_t n;
  uint8_t *b = idx_bytes(type, rank, dims, data, dn, &n);
  if (gz)
    write_gz(name, b, n);
  else
    write_raw(name, b, n);
  free(b);
}

/* The error must name the file. */
#define CHECK_FILE_ERR(name, needle)                                                             \
  do {                                                                                           \
    sm_tensor *_t = NULL;                                                                        \
    const char *_p = tpath(name);                                                                \
    sm_status *_s = sm_idx_read(_p, &_t);                                                        \
    CHECK(_s != NULL);                                                                           \
    CHECK(_t == NULL);                                                                           \
    if (_s && (!strstr(sm_status_message(_s), needle) || !strstr(sm_status_message(_s), _p))) { \
      fprintf(stderr, "%s:%d: %s: error \"%s\" lacks \"%s\" or the path\n", __FILE__, __LINE__, name, \
              sm_status_message(_s), needle);                                                    \
      sm_test_failures++;                                                                        \
    }                                                                                            \
    sm_status_free(_s);                                                                          \
    sm_tensor_free(_t);                                                                          \
  } while (0)

static void test_good_types(void) {
  /* uint8 rank 3, plain and gzipped: same tensor. */
  uint8_t px[2 * 3 * 2];
  for (int i = 0; i < 12; i++) px[i] = (uint8_t)(i * 20);
  uint32_t d3[3] = {2, 3, 2};
  write_idx("u8", 0, 0x08, 3, d3, px, sizeof px);
  write_idx("u8.gz", 1, 0x08, 3, d3, px, sizeof px);
  sm_tensor *a = NULL, *b = NULL;
  CHECK_OK(sm_idx_read(tpath("u8"), &a));
  CHECK_OK(sm_idx_read(tpath("u8.gz"), &b));
  if (a && b) {
    CHECK_EQ_INT(sm_tensor_dtype(a), SM_UINT8);
    CHECK_EQ_INT(sm_tensor_rank(a), 3);
    CHECK_EQ_INT(sm_tensor_dims(a)[1], 3);
    CHECK(memcmp(sm_tensor_data(a), px, sizeof px) == 0);
    CHECK(sm_tensor_equal(a, b));
  }
  sm_tensor_free(a);
  sm_tensor_free(b);

  /* gzip detected by its magic even without ".gz" in the name. */
  write_idx("u8gz_noext", 1, 0x08, 3, d3, px, sizeof px);
  CHECK_OK(sm_idx_read(tpath("u8gz_noext"), &a));
  if (a) CHECK(memcmp(sm_tensor_data(a), px, sizeof px) == 0);
  sm_tensor_free(a);

  /* Multi-byte types are big-endian on disk. */
  uint32_t d1[1] = {2};
  uint8_t i16[4] = {0xff, 0xfe, 0x01, 0x02};          /* -2, 258 */
  uint8_t i32[8] = {0x80, 0, 0, 0, 0, 0, 0x01, 0x00}; /* INT32_MIN, 256 */
  uint8_t f32[8] = {0x3f, 0xc0, 0, 0, 0xc0, 0x20, 0, 0}; /* 1.5, -2.5 */
  uint8_t f64[16] = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18, 0, 0, 0, 0, 0, 0, 0, 0}; /* pi, 0 */
  int8_t i8[2] = {-5, 7};
  write_idx("i8", 0, 0x09, 1, d1, i8, 2);
  write_idx("i16", 0, 0x0B, 1, d1, i16, 4);
  write_idx("i32.gz", 1, 0x0C, 1, d1, i32, 8);
  write_idx("f32", 0, 0x0D, 1, d1, f32, 8);
  write_idx("f64", 0, 0x0E, 1, d1, f64, 16);
  CHECK_OK(sm_idx_read(tpath("i8"), &a));
  if (a) CHECK(sm_tensor_dtype(a) == SM_INT8 && ((int8_t *)sm_tensor_data(a))[0] == -5);
  sm_tensor_free(a);
  CHECK_OK(sm_idx_read(tpath("i16"), &a));
  if (a) CHECK(sm_tensor_dtype(a) == SM_INT16 && ((int16_t *)sm_tensor_data(a))[0] == -2 && ((int16_t *)sm_tensor_data(a))[1] == 258);
  sm_tensor_free(a);
  CHECK_OK(sm_idx_read(tpath("i32.gz"), &a));
  if (a) CHECK(sm_tensor_dtype(a) == SM_INT32 && ((int32_t *)sm_tensor_data(a))[0] == INT32_MIN && ((int32_t *)sm_tensor_data(a))[1] == 256);
  sm_tensor_free(a);
  CHECK_OK(sm_idx_read(tpath("f32"), &a));
  if (a) CHECK(sm_tensor_dtype(a) == SM_FLOAT && ((float *)sm_tensor_data(a))[0] == 1.5f && ((float *)sm_tensor_data(a))[1] == -2.5f);
  sm_tensor_free(a);
  CHECK_OK(sm_idx_read(tpath("f64"), &a));
  if (a) CHECK(sm_tensor_dtype(a) == SM_DOUBLE && ((double *)sm_tensor_data(a))[0] > 3.14159 && ((double *)sm_tensor_data(a))[0] < 3.1416);
  sm_tensor_free(a);

  /* Rank 0 (a scalar) and an empty dimension are legal IDX. */
  uint8_t one = 42;
  write_idx("scalar", 0, 0x08, 0, NULL, &one, 1);
  CHECK_OK(sm_idx_read(tpath("scalar"), &a));
  if (a) CHECK(sm_tensor_rank(a) == 0 && *(uint8_t *)sm_tensor_data(a) == 42);
  sm_tensor_free(a);
  uint32_t d0[2] = {0, 28};
  write_idx("empty.gz", 1, 0x08, 2, d0, NULL, 0);
  CHECK_OK(sm_idx_read(tpath("empty.gz"), &a));
  if (a) CHECK(sm_tensor_num_elements(a) == 0 && sm_tensor_dims(a)[1] == 28);
  sm_tensor_free(a);

  /* Concatenated gzip members read as one stream, as gzip -d does; zero padding after is ignored. */
  size_t n;
  uint8_t *whole = idx_bytes(0x08, 3, d3, px, sizeof px, &n);
  write_gz("m1", whole, 10);
  write_gz("m2", whole + 10, n - 10);
  size_t n1, n2;
  uint8_t *g1 = slurp("m1", &n1), *g2 = slurp("m2", &n2);
  uint8_t *cat = malloc(n1 + n2 + 8);
  memcpy(cat, g1, n1);
  memcpy(cat + n1, g2, n2);
  memset(cat + n1 + n2, 0, 8);
  write_raw("multi.gz", cat, n1 + n2 + 8);
  CHECK_OK(sm_idx_read(tpath("multi.gz"), &a));
  if (a) CHECK(memcmp(sm_tensor_data(a), px, sizeof px) == 0);
  sm_tensor_free(a);
  /* ... but garbage after the stream is an error. */
  memcpy(cat + n1 + n2, "GARBAGE!", 8);
  write_raw("garbage.gz", cat, n1 + n2 + 8);
  CHECK_FILE_ERR("garbage.gz", "garbage after the gzip data");
  free(g1);
  free(g2);
  free(cat);
  free(whole);
}

static void test_bad_files(void) {
  uint8_t px[12] = {0};
  uint32_t d3[3] = {2, 3, 2};
  size_t n;

  CHECK_ERR(sm_idx_read(tpath("does-not-exist"), &(sm_tensor *){NULL}), "does-not-exist");
  write_raw("zero", NULL, 0);
  CHECK_FILE_ERR("zero", "truncated IDX header");
  write_gz("zero.gz", NULL, 0);
  CHECK_FILE_ERR("zero.gz", "truncated IDX header");

  /* Truncated data, plain and gzipped; a short header. */
  write_idx("short", 0, 0x08, 3, d3, px, 11);
  CHECK_FILE_ERR("short", "says 12 bytes of data, the file holds 11");
  write_idx("short.gz", 1, 0x08, 3, d3, px, 5);
  CHECK_FILE_ERR("short.gz", "says 12 bytes of data, the inflated file holds 5");
  uint8_t *b = idx_bytes(0x08, 3, d3, px, 0, &n);
  write_raw("shorthdr", b, 9);
  CHECK_FILE_ERR("shorthdr", "truncated IDX header (9 of 16 bytes)");
  free(b);
  /* Padded. */
  uint8_t px13[13] = {0};
  write_idx("long", 0, 0x08, 3, d3, px13, 13);
  CHECK_FILE_ERR("long", "file holds 13");
  write_idx("long.gz", 1, 0x08, 3, d3, px13, 13);
  CHECK_FILE_ERR("long.gz", "the inflated file holds 13");

  /* A gzip file cut short, and one with flipped bits. */
  uint8_t big[4096];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + (i >> 5));
  uint32_t dbig[1] = {4096};
  write_idx("big.gz", 1, 0x08, 1, dbig, big, sizeof big);
  uint8_t *g = slurp("big.gz", &n);
  write_raw("cut.gz", g, n / 2);
  CHECK_FILE_ERR("cut.gz", "truncated gzip data");
  write_raw("cut_tail.gz", g, n - 3); /* inside the CRC/length trailer */
  CHECK_FILE_ERR("cut_tail.gz", "truncated gzip data");
  uint8_t *c = malloc(n);
  memcpy(c, g, n);
  for (size_t i = 20; i < 40 && i < n - 8; i++) c[i] ^= 0x5a;
  write_raw("flipped.gz", c, n);
  CHECK_FILE_ERR("flipped.gz", "gzip data");
  memcpy(c, g, n);
  c[n - 6] ^= 1; /* CRC-32 */
  write_raw("badcrc.gz", c, n);
  CHECK_FILE_ERR("badcrc.gz", "corrupt gzip data");
  c[n - 6] ^= 1;
  c[3] = 0xe0; /* reserved flag bits */
  write_raw("badflags.gz", c, n);
  CHECK_FILE_ERR("badflags.gz", "corrupt gzip data");
  free(c);
  free(g);
  /* Named .gz but not gzip. */
  write_idx("plain.gz", 0, 0x08, 3, d3, px, 12);
  CHECK_FILE_ERR("plain.gz", "not gzip data");

  /* Wrong magic, wrong type byte, absurd rank. */
  b = idx_bytes(0x08, 3, d3, px, 12, &n);
  b[0] = 0x12;
  write_raw("magic", b, n);
  CHECK_FILE_ERR("magic", "bad magic 12 00 08 03");
  write_gz("magic.gz", b, n);
  CHECK_FILE_ERR("magic.gz", "bad magic");
  b[0] = 0;
  b[2] = 0x0A;
  write_raw("type", b, n);
  CHECK_FILE_ERR("type", "unknown IDX element type 0x0a");
  b[2] = 0x08;
  b[3] = 200;
  write_raw("rank", b, n);
  CHECK_FILE_ERR("rank", "IDX rank 200");
  free(b);

  /* Huge dims: past the library's limit, or within it but far more than the file holds. Neither
   * may allocate what the header claims (ASan would refuse a multi-GiB allocation). */
  uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  write_idx("huge", 0, 0x08, 3, huge, px, 12);
  CHECK_FILE_ERR("huge", "claim more than");
  write_idx("huge.gz", 1, 0x08, 3, huge, px, 12);
  CHECK_FILE_ERR("huge.gz", "claim more than");
  uint32_t lie[2] = {0x40000000u, 8}; /* 8 GiB claimed, 12 bytes present */
  write_idx("lie", 0, 0x08, 2, lie, px, 12);
  CHECK_FILE_ERR("lie", "says 8589934592 bytes of data, the file holds 12");
  write_idx("lie.gz", 1, 0x08, 2, lie, px, 12);
  CHECK_FILE_ERR("lie.gz", "the inflated file holds 12");
  /* A gzip bomb: the header claims 12 bytes, the stream inflates to 8 MiB; reading stops early. */
  size_t bomb_n = (size_t)8 << 20;
  uint8_t *bomb = calloc(1, bomb_n);
  uint8_t *hb = idx_bytes(0x08, 3, d3, NULL, 0, &n);
  memcpy(bomb, hb, n);
  write_gz("bomb.gz", bomb, bomb_n);
  CHECK_FILE_ERR("bomb.gz", "inflates to more than the 28 bytes");
  free(hb);
  free(bomb);
}

/* An MNIST-format directory under tmpdir/<sub>. */
static void write_split(const char *sub, const char *prefix, int gz, uint32_t nimg, uint32_t nlab, uint8_t bad_label) {
  char dir[256], name[300];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
  if (mkdir(dir, 0700) != 0 && access(dir, F_OK) != 0) exit(1);
  uint8_t px[5 * 4 * 3];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 4);
  uint8_t lab[5] = {9, 0, 3, 1, 2};
  if (bad_label) lab[2] = bad_label;
  uint32_t di[3] = {nimg, 4, 3}, dl[1] = {nlab};
  snprintf(name, sizeof name, "%s/%s-images-idx3-ubyte%s", sub, prefix, gz ? ".gz" : "");
  write_idx(name, gz, 0x08, 3, di, px, nimg * 12);
  snprintf(name, sizeof name, "%s/%s-labels-idx1-ubyte%s", sub, prefix, gz ? ".gz" : "");
  write_idx(name, gz, 0x08, 1, dl, lab, nlab);
}

static void test_mnist_layout(void) {
  sm_tensor *x = NULL, *y = NULL;
  write_split("ok", "train", 0, 5, 5, 0);
  write_split("ok", "t10k", 1, 3, 3, 0);
  char dir[256];
  snprintf(dir, sizeof dir, "%s/ok", tmpdir);
  CHECK_OK(sm_mnist_load(dir, "train", 0, &x, &y));
  if (x && y) {
    CHECK_EQ_INT(sm_tensor_dtype(x), SM_FLOAT);
    CHECK_EQ_INT(sm_tensor_rank(x), 4);
    CHECK(sm_tensor_dims(x)[0] == 5 && sm_tensor_dims(x)[1] == 4 && sm_tensor_dims(x)[2] == 3 && sm_tensor_dims(x)[3] == 1);
    const float *f = sm_tensor_data(x);
    CHECK(f[0] == 0.0f && f[1] == (float)(4 / 255.0));
    CHECK_EQ_INT(sm_tensor_dtype(y), SM_INT32);
    CHECK_EQ_INT(((int32_t *)sm_tensor_data(y))[0], 9);
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
  CHECK_OK(sm_mnist_load(dir, "test", 0, &x, &y));
  if (x) CHECK_EQ_INT(sm_tensor_dims(x)[0], 3);
  sm_tensor_free(x);
  sm_tensor_free(y);
  CHECK_OK(sm_mnist_load(dir, "t10k", 0, &x, &y));
  sm_tensor_free(x);
  sm_tensor_free(y);
  CHECK_ERR(sm_mnist_load(dir, "valid", 0, &x, &y), "unknown MNIST split \"valid\"");
  /* max_label narrows the range: label 9 is out of [0, 5). */
  CHECK_ERR(sm_mnist_load(dir, "train", 5, &x, &y), "train-labels-idx1-ubyte: label 9 of image 0 is out of range [0, 5)");
  CHECK(x == NULL && y == NULL);

  write_split("count", "train", 1, 5, 4, 0);
  snprintf(dir, sizeof dir, "%s/count", tmpdir);
  CHECK_ERR(sm_mnist_load(dir, "train", 0, &x, &y), "train-images-idx3-ubyte.gz holds 5 images but");
  CHECK_ERR(sm_mnist_load(dir, "t10k", 0, &x, &y), "neither t10k-images-idx3-ubyte nor t10k-images-idx3-ubyte.gz");

  write_split("range", "train", 0, 5, 5, 10);
  snprintf(dir, sizeof dir, "%s/range", tmpdir);
  CHECK_ERR(sm_mnist_load(dir, "train", 0, &x, &y), "label 10 of image 2 is out of range [0, 10)");
  CHECK_OK(sm_mnist_load(dir, "train", 11, &x, &y));
  sm_tensor_free(x);
  sm_tensor_free(y);

  /* Images of the wrong rank or type; a corrupt labels file. */
  write_split("shape", "train", 0, 5, 5, 0);
  uint8_t px[60] = {0};
  uint32_t d2[2] = {5, 12};
  write_idx("shape/train-images-idx3-ubyte", 0, 0x08, 2, d2, px, 60);
  snprintf(dir, sizeof dir, "%s/shape", tmpdir);
  CHECK_ERR(sm_mnist_load(dir, "train", 0, &x, &y), "shape/train-images-idx3-ubyte: MNIST images must be uint8");
  uint32_t d3[3] = {5, 4, 3};
  write_idx("shape/train-images-idx3-ubyte", 0, 0x0D, 3, d3, px, 0);
  CHECK_ERR(sm_mnist_load(dir, "train", 0, &x, &y), "train-images-idx3-ubyte");
  write_idx("shape/train-images-idx3-ubyte", 0, 0x08, 3, d3, px, 60);
  write_raw("shape/train-labels-idx1-ubyte", "\0\0\x08\x01\0\0\0\x05\x01", 9);
  CHECK_ERR(sm_mnist_load(dir, "train", 0, &x, &y), "train-labels-idx1-ubyte: the IDX header says 5 bytes");

  CHECK_ERR(sm_mnist_load("/nonexistent/mnist", "train", 0, &x, &y), "/nonexistent/mnist: no such data directory");
}

static void test_labels(void) {
  CHECK_EQ_STR(sm_fashion_mnist_labels[0], "T-shirt/top");
  CHECK_EQ_STR(sm_fashion_mnist_labels[5], "Sandal");
  CHECK_EQ_STR(sm_fashion_mnist_labels[9], "Ankle boot");
}

/* The real Fashion-MNIST (Debian's dataset-fashion-mnist), when installed. */
static void test_fashion_mnist(void) {
  if (access(SM_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz", R_OK) != 0) {
    printf("skipped: %s absent (the rest ran)\n", SM_FASHION_MNIST_DIR);
    return;
  }
  sm_tensor *x = NULL, *y = NULL;
  CHECK_OK(sm_mnist_load(SM_FASHION_MNIST_DIR, "train", 0, &x, &y));
  if (x && y) {
    const int64_t *d = sm_tensor_dims(x);
    CHECK(d[0] == 60000 && d[1] == 28 && d[2] == 28 && d[3] == 1);
    CHECK_EQ_INT(sm_tensor_dims(y)[0], 60000);
    const int32_t *l = sm_tensor_data(y);
    int count[10] = {0};
    for (int i = 0; i < 60000; i++) count[l[i]]++;
    for (int k = 0; k < 10; k++) CHECK_EQ_INT(count[k], 6000); /* balanced classes */
    CHECK_EQ_INT(l[0], 9);                                      /* the first image is an ankle boot */
    const float *f = sm_tensor_data(x);
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
      if (f[i] < lo) lo = f[i];
      if (f[i] > hi) hi = f[i];
    }
    CHECK(lo == 0.0f && hi == 1.0f);
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
  CHECK_OK(sm_mnist_load(SM_FASHION_MNIST_DIR, "t10k", 0, &x, &y));
  if (x && y) {
    CHECK_EQ_INT(sm_tensor_dims(x)[0], 10000);
    CHECK_EQ_INT(((int32_t *)sm_tensor_data(y))[0], 9);
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
}

static void cleanup(void) {
  for (int i = nmade - 1; i >= 0; i--) unlink(made[i]);
  const char *subs[] = {"ok", "count", "range", "shape"};
  for (int i = 0; i < 4; i++) rmdir(tpath(subs[i]));
  rmdir(tmpdir);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_labels();
  test_good_types();
  test_bad_files();
  test_mnist_layout();
  cleanup();
  test_fashion_mnist();
  TEST_MAIN_END();
}
