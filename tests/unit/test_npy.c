/* test_npy.c - .npy/.npz reading and writing against files numpy wrote (tests/fixtures/npy, made
 * by tools/make_npy_fixtures.py), byte-for-byte np.save output, and hostile input. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "savedmodel/npy.h"
#include "test.h"

static char *fx(const char *name) {
  static char buf[4][1024];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, 1024, "%s/tests/fixtures/npy/%s", SM_SOURCE_DIR, name);
  return b;
}

static double elem(const sm_tensor *t, int64_t i) {
  const uint8_t *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_FLOAT: { float v; memcpy(&v, p + 4 * i, 4); return v; }
  case SM_DOUBLE: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  case SM_HALF: { /* only small integers in the fixtures */
    uint16_t h; memcpy(&h, p + 2 * i, 2);
    int e = (h >> 10) & 31, m = h & 1023;
    return e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
  }
  case SM_INT8: return (int8_t)p[i];
  case SM_UINT8: case SM_BOOL: return p[i];
  case SM_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case SM_UINT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case SM_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case SM_UINT32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case SM_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  case SM_UINT64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  case SM_COMPLEX64: { float v; memcpy(&v, p + 8 * i, 4); return v; }   /* real part */
  case SM_COMPLEX128: { double v; memcpy(&v, p + 16 * i, 8); return v; }
  default: return NAN;
  }
}

static void check_shape(const sm_tensor *t, int rank, int64_t d0, int64_t d1) {
  CHECK_EQ_INT(sm_tensor_rank(t), rank);
  if (rank > 0) CHECK_EQ_INT(sm_tensor_dims(t)[0], d0);
  if (rank > 1) CHECK_EQ_INT(sm_tensor_dims(t)[1], d1);
}

/* The file numpy wrote must come back byte for byte from sm_npy_encode. */
static void check_roundtrip(const char *name, const sm_tensor *t) {
  char *want;
  size_t wlen;
  CHECK_OK(sm__file_read_all(fx(name), &want, &wlen));
  uint8_t *got;
  size_t glen;
  CHECK_OK(sm_npy_encode(t, &got, &glen));
  if (glen != wlen || memcmp(got, want, glen) != 0) {
    fprintf(stderr, "encode of %s differs from np.save (%zu vs %zu bytes)\n", name, glen, wlen);
    sm_test_failures++;
  }
  free(got);
  free(want);
}

static void test_numeric(void) {
  static const struct { const char *file; int dtype; int offset; } cases[] = {
      {"f4_2x3.npy", SM_FLOAT, 0},  {"f8_2x3.npy", SM_DOUBLE, 0},  {"f2_2x3.npy", SM_HALF, 0},
      {"i1_2x3.npy", SM_INT8, -2},  {"i2_2x3.npy", SM_INT16, -2},  {"i4_2x3.npy", SM_INT32, -2},
      {"i8_2x3.npy", SM_INT64, -2}, {"u1_2x3.npy", SM_UINT8, 0},   {"u2_2x3.npy", SM_UINT16, 0},
      {"u4_2x3.npy", SM_UINT32, 0}, {"u8_2x3.npy", SM_UINT64, 0},  {"c8_2x3.npy", SM_COMPLEX64, 0},
      {"c16_2x3.npy", SM_COMPLEX128, 0}, {"v2_f4.npy", SM_FLOAT, 0}, {"v3_f4.npy", SM_FLOAT, 0},
      {"be_f4.npy", SM_FLOAT, 0},   {"fortran_2x3.npy", SM_FLOAT, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    sm_tensor *t = NULL;
    CHECK_OK(sm_npy_read(fx(cases[c].file), &t));
    if (!t) continue;
    CHECK_EQ_INT(sm_tensor_dtype(t), cases[c].dtype);
    check_shape(t, 2, 2, 3);
    for (int i = 0; i < 6; i++)
      if (elem(t, i) != i + cases[c].offset) {
        fprintf(stderr, "%s[%d] = %g, want %d\n", cases[c].file, i, elem(t, i), i + cases[c].offset);
        sm_test_failures++;
      }
    if (strstr(cases[c].file, "_2x3.npy") && strncmp(cases[c].file, "fortran", 7) != 0)
      check_roundtrip(cases[c].file, t);
    sm_tensor_free(t);
  }
}

static void test_special(void) {
  sm_tensor *t;
  CHECK_OK(sm_npy_read(fx("be_i8.npy"), &t));
  check_shape(t, 2, 3, 2);
  for (int i = 0; i < 6; i++) CHECK(elem(t, i) == i - 2);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("be_c8.npy"), &t));
  CHECK_EQ_INT(sm_tensor_dtype(t), SM_COMPLEX64);
  for (int i = 0; i < 3; i++) {
    float re, im;
    memcpy(&re, (uint8_t *)sm_tensor_data(t) + 8 * i, 4);
    memcpy(&im, (uint8_t *)sm_tensor_data(t) + 8 * i + 4, 4);
    CHECK(re == i && im == i);
  }
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("fortran_2x3x4.npy"), &t));
  CHECK_EQ_INT(sm_tensor_rank(t), 3);
  for (int i = 0; i < 24; i++) CHECK(elem(t, i) == i);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("b1.npy"), &t));
  CHECK_EQ_INT(sm_tensor_dtype(t), SM_BOOL);
  check_shape(t, 1, 4, 0);
  CHECK(elem(t, 0) == 1 && elem(t, 1) == 0 && elem(t, 2) == 1 && elem(t, 3) == 1);
  check_roundtrip("b1.npy", t);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("scalar_f8.npy"), &t));
  CHECK_EQ_INT(sm_tensor_rank(t), 0);
  CHECK(elem(t, 0) == 2.5);
  check_roundtrip("scalar_f8.npy", t);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("empty_0x3.npy"), &t));
  check_shape(t, 2, 0, 3);
  check_roundtrip("empty_0x3.npy", t);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("long_f4.npy"), &t));
  CHECK_EQ_INT(sm_tensor_num_elements(t), 1500);
  CHECK(elem(t, 1499) == 1499);
  check_roundtrip("long_f4.npy", t);
  sm_tensor_free(t);

  size_t l;
  const char *s;
  CHECK_OK(sm_npy_read(fx("bytes.npy"), &t));
  CHECK_EQ_INT(sm_tensor_dtype(t), SM_STRING);
  s = sm_tensor_string(t, 0, &l);
  CHECK(l == 2 && memcmp(s, "ab", 2) == 0);
  sm_tensor_string(t, 1, &l);
  CHECK(l == 0);
  s = sm_tensor_string(t, 2, &l);
  CHECK(l == 3 && memcmp(s, "xyz", 3) == 0);
  check_roundtrip("bytes.npy", t);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("unicode.npy"), &t));
  s = sm_tensor_string(t, 0, &l);
  CHECK(l == 6 && memcmp(s, "h\xc3\xa9llo", 6) == 0);
  s = sm_tensor_string(t, 2, &l);
  CHECK(l == 3 && memcmp(s, "\xe2\x82\xac", 3) == 0);
  s = sm_tensor_string(t, 3, &l);
  CHECK(l == 4 && memcmp(s, "\xf0\x9f\x98\x80", 4) == 0);
  sm_tensor_free(t);

  CHECK_OK(sm_npy_read(fx("be_unicode.npy"), &t));
  s = sm_tensor_string(t, 0, &l);
  CHECK(l == 2 && memcmp(s, "ab", 2) == 0);
  s = sm_tensor_string(t, 1, &l);
  CHECK(l == 1 && memcmp(s, "c", 1) == 0);
  sm_tensor_free(t);

  CHECK_ERR(sm_npy_read(fx("object.npy"), &t), "pickled");
  CHECK_ERR(sm_npy_read(fx("structured.npy"), &t), "structured");
  CHECK_ERR(sm_npy_read(fx("datetime.npy"), &t), "M8");
  CHECK_ERR(sm_npy_read(fx("missing.npy"), &t), "missing.npy");

  /* A dtype numpy lacks is refused before anything is written, the path put in front once. */
  int64_t two[1] = {2};
  CHECK_OK(sm_tensor_new(SM_BFLOAT16, 1, two, &t));
  CHECK_ERR(sm_npy_write("never/written.npy", t), "never/written.npy: numpy has no type for DT_BFLOAT16");
  sm_tensor_free(t);
}

static void test_npz(void) {
  sm_npz *z;
  sm_tensor *t;
  CHECK_OK(sm_npz_open(fx("stored.npz"), &z));
  CHECK_EQ_INT(sm_npz_count(z), 2);
  CHECK_EQ_STR(sm_npz_name(z, 0), "x");
  CHECK_EQ_STR(sm_npz_name(z, 1), "y");
  CHECK(sm_npz_name(z, 2) == NULL);
  CHECK_OK(sm_npz_get(z, "x", &t));
  CHECK_EQ_INT(sm_tensor_dtype(t), SM_INT64);
  CHECK(elem(t, 2) == 2);
  sm_tensor_free(t);
  CHECK_OK(sm_npz_get(z, "y.npy", &t));
  CHECK(elem(t, 1) == 1.0);
  sm_tensor_free(t);
  CHECK_ERR(sm_npz_get(z, "nope", &t), "no array named 'nope'");
  sm_npz_free(z);

  CHECK_OK(sm_npz_open(fx("deflated.npz"), &z));
  CHECK_OK(sm_npz_get(z, "a", &t));
  check_shape(t, 2, 2, 3);
  CHECK(elem(t, 5) == 5);
  sm_tensor_free(t);
  CHECK_OK(sm_npz_get(z, "b", &t));
  size_t l;
  const char *s = sm_tensor_string(t, 1, &l);
  CHECK(l == 2 && memcmp(s, "rs", 2) == 0);
  sm_tensor_free(t);
  sm_npz_free(z);

  /* a member that inflates to 64 KiB more than its .npy header describes: as np.load, only the
   * described bytes are read (numpy gives [1. 2.]) */
  CHECK_OK(sm_npz_open(fx("oversized_member.npz"), &z));
  if (z) {
    CHECK_OK(sm_npz_get(z, "x", &t));
    CHECK(t && sm_tensor_num_elements(t) == 2 && ((float *)sm_tensor_data(t))[0] == 1.0f &&
          ((float *)sm_tensor_data(t))[1] == 2.0f);
    sm_tensor_free(t);
    sm_npz_free(z);
  }
  CHECK_OK(sm_npz_open(fx("with_object.npz"), &z));
  CHECK_ERR(sm_npz_get(z, "o", &t), "pickled");
  sm_npz_free(z);

  /* write, read back: stored and deflated */
  char dir[] = "/tmp/test_npy_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  for (int compress = 0; compress < 2; compress++) {
    sm_tensor *a, *b;
    int64_t d[2] = {2, 3};
    CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d, &a));
    for (int i = 0; i < 6; i++) ((float *)sm_tensor_data(a))[i] = (float)i * 0.5f;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, d, &b));
    CHECK_OK(sm_tensor_set_string(b, 1, "hello", 5));
    const char *names[] = {"a", "b"};
    const sm_tensor *ts[] = {a, b};
    snprintf(path, sizeof path, "%s/w%d.npz", dir, compress);
    CHECK_OK(sm_npz_write(path, names, ts, 2, compress));
    CHECK_OK(sm_npz_open(path, &z));
    CHECK_EQ_INT(sm_npz_count(z), 2);
    CHECK_OK(sm_npz_get(z, "a", &t));
    CHECK(sm_tensor_equal(t, a));
    sm_tensor_free(t);
    CHECK_OK(sm_npz_get(z, "b", &t));
    CHECK(sm_tensor_equal(t, b));
    sm_tensor_free(t);
    sm_npz_free(z);
    snprintf(path, sizeof path, "%s/a.npy", dir);
    CHECK_OK(sm_npy_write(path, a));
    CHECK_OK(sm_npy_read(path, &t));
    CHECK(sm_tensor_equal(t, a));
    sm_tensor_free(t);
    sm_tensor_free(a);
    sm_tensor_free(b);
  }
  snprintf(path, sizeof path, "rm -rf %s", dir);
  CHECK(system(path) == 0);
}

/* Every prefix and every single-byte flip of a valid file: an error or a tensor, never a crash. */
static void fuzz_file(const char *name, int npz) {
  char *data;
  size_t len;
  CHECK_OK(sm__file_read_all(fx(name), &data, &len));
  for (size_t cut = 0; cut < len; cut++) {
    sm_tensor *t = NULL;
    sm_npz *z = NULL;
    sm_status *st;
    if (npz) {
      st = sm_npz_open_memory(data, cut, "cut", &z);
      if (!st) {
        for (int i = 0; i < sm_npz_count(z); i++) {
          sm_status *g = sm_npz_get(z, sm_npz_name(z, i), &t);
          sm_status_free(g);
          sm_tensor_free(t);
          t = NULL;
        }
      }
    } else {
      st = sm_npy_decode(data, cut, "cut", &t);
      CHECK(st != NULL); /* every proper prefix of these files is short */
    }
    sm_status_free(st);
    sm_tensor_free(t);
    sm_npz_free(z);
  }
  uint8_t *copy = malloc(len);
  for (size_t i = 0; i < len; i++) {
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(copy, data, len);
      copy[i] ^= (uint8_t)(1u << bit);
      sm_tensor *t = NULL;
      sm_npz *z = NULL;
      sm_status *st;
      if (npz) {
        st = sm_npz_open_memory(copy, len, "flip", &z);
        for (int k = 0; !st && k < sm_npz_count(z); k++) {
          sm_status *g = sm_npz_get(z, sm_npz_name(z, k), &t);
          sm_status_free(g);
          sm_tensor_free(t);
          t = NULL;
        }
      } else {
        st = sm_npy_decode(copy, len, "flip", &t);
      }
      sm_status_free(st);
      sm_tensor_free(t);
      sm_npz_free(z);
    }
  }
  free(copy);
  free(data);
}

static sm_status *decode_text(const char *header, const void *body, size_t blen, sm_tensor **t) {
  uint8_t buf[20000];
  size_t h = strlen(header);
  memcpy(buf, SM_NPY_MAGIC "\x01\x00", 8);
  buf[8] = (uint8_t)h;
  buf[9] = (uint8_t)(h >> 8);
  memcpy(buf + 10, header, h);
  if (blen) memcpy(buf + 10 + h, body, blen);
  return sm_npy_decode(buf, 10 + h + blen, "hand", t);
}

static void test_hostile(void) {
  sm_tensor *t = NULL;
  float f[2] = {1, 2};
  CHECK_OK(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", f, 8, &t));
  sm_tensor_free(t);
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", f, 8, &t), "truncated .npy data");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f, 8, &t),
            "overflow");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", f, 8, &t),
            "overflows");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", f, 8, &t),
            "larger than");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f, 8, &t), "non-negative");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", f, 8, &t), "True or False");
  CHECK_ERR(decode_text("{'descr': '<f4', 'shape': (2,), }", f, 8, &t), "once each");
  CHECK_ERR(decode_text("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f, 8, &t), "once each");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f, 8, &t), "unexpected key");
  CHECK_ERR(decode_text("{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }", f, 8, &t), "'<f3'");
  CHECK_ERR(decode_text("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", f, 8, &t), "one-byte");
  CHECK_ERR(decode_text("{'descr': '<U99999999999', 'fortran_order': False, 'shape': (2,), }", f, 8, &t), "absurd");
  CHECK_ERR(decode_text("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", f, 8, &t), "after the dict");
  CHECK_ERR(decode_text("__import__('os')", f, 8, &t), "not a dict");
  uint32_t bad_cp[1] = {0xd800};
  CHECK_ERR(decode_text("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", bad_cp, 4, &t), "unicode");
  /* zero-width strings: many elements from few bytes are refused */
  CHECK_ERR(decode_text("{'descr': '|S0', 'fortran_order': False, 'shape': (1000000000,), }", f, 0, &t), "zero-width");
  /* rank past the limit */
  char big[2000] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 70; i++) strcat(big, "1,");
  strcat(big, "), }");
  CHECK_ERR(decode_text(big, f, 8, &t), "dimensions");
  /* header length past numpy's limit */
  uint8_t hdr[16] = "\x93NUMPY\x02\x00";
  hdr[8] = 0x20; hdr[9] = 0x4e; hdr[10] = 0; hdr[11] = 0; /* 20000 */
  CHECK_ERR(sm_npy_decode(hdr, 12, "big", &t), "limit");
  CHECK_ERR(sm_npy_decode("\x93NUMPY\x04\x00\x00\x00", 10, "v4", &t), "version 4.0");
  CHECK_ERR(sm_npy_decode("PK\x03\x04", 4, "zip", &t), "not a .npy");
  sm_npz *z;
  CHECK_ERR(sm_npz_open_memory("PK\x05\x06", 4, "tiny", &z), "too short");
  CHECK_ERR(sm_npz_open_memory("\x93NUMPY\x01\x00 not a zip at all, really not", 37, "nz", &z), "end of central");

  fuzz_file("f4_2x3.npy", 0);
  fuzz_file("unicode.npy", 0);
  fuzz_file("fortran_2x3x4.npy", 0);
  fuzz_file("stored.npz", 1);
  fuzz_file("deflated.npz", 1);
}

int main(void) {
  test_numeric();
  test_special();
  test_npz();
  test_hostile();
  TEST_MAIN_END();
}
