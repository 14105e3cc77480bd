/* test_bundle_fixtures.c - every variables bundle TensorFlow wrote under SM_SHARED_DIR/fixtures/
 * tf-serving opens, every checksum verifies and every value equals _inventory/NAME.vars.txt; our writer
 * reproduces TF's data files byte for byte (and the index too where TF did not compress it);
 * damaging a real Snappy-compressed index never yields wrong values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "savedmodel/bundle.h"
#include "test.h"

#define FIX SM_SHARED_DIR "/fixtures/tf-serving/"

typedef struct {
  const char *key;
  int dtype;
  int rank;
  int64_t dims[4];
  double value;     /* floats: the one element; strings: the string's length */
} want;

typedef struct {
  const char *dir;
  int snappy; /* TF wrote the index data block Snappy-compressed */
  want w[16];
} fixture;

#define SCALAR(k, v) {k, SM_FLOAT, 0, {0}, v}
#define ABC SCALAR("a", 0.5), SCALAR("b", 2.0), SCALAR("c", 3.0)
#define A2C2 SCALAR("a", 0.5), SCALAR("a2", 0.5), SCALAR("b", 2.0), SCALAR("c", 3.0), SCALAR("c2", 3.0)

/* Keys in data-file order (the order TF appended them), values from _inventory/NAME.vars.txt. */
static const fixture fixtures[] = {
    {"saved_model_counter/00000123", 0, {SCALAR("counter", 0.0)}},
    {"saved_model_half_plus_three/00000123", 0, {SCALAR("a", 0.5), SCALAR("b", 3.0), SCALAR("c", 3.0)}},
    {"saved_model_half_plus_two_2_versions/00000123", 0, {ABC}},
    {"saved_model_half_plus_two_2_versions/00000124", 0, {ABC}},
    {"saved_model_half_plus_two_cpu/00000123", 1, {A2C2}},
    {"saved_model_half_plus_two_cpu_with_empty_saved_model_config/00000123", 1, {A2C2}},
    {"saved_model_half_plus_two_cpu_with_saved_model_config/00000123", 1, {A2C2}},
    {"saved_model_half_plus_two_gpu/00000123", 0, {ABC}},
    {"saved_model_half_plus_two_gpu_trt/00000123", 1, {A2C2}},
    {"saved_model_half_plus_two_mlmd/00000123", 1, {A2C2}},
    {"saved_model_half_plus_two_mkl/00000123",
     0,
     {ABC,
      {"conv2d/bias", SM_FLOAT, 1, {1}, 0.0},
      {"conv2d/kernel", SM_FLOAT, 4, {1, 1, 1, 1}, -0.5223959684371948},
      {"conv2d_1/bias", SM_FLOAT, 1, {1}, 0.0},
      {"conv2d_1/kernel", SM_FLOAT, 4, {1, 1, 1, 1}, -1.0451120138168335},
      {"conv2d_2/bias", SM_FLOAT, 1, {1}, 0.0},
      {"conv2d_2/kernel", SM_FLOAT, 4, {1, 1, 1, 1}, 1.577943205833435}}},
    {"saved_model_half_plus_two_tf2_cpu/00000123",
     1,
     {SCALAR("a/.ATTRIBUTES/VARIABLE_VALUE", 0.5), SCALAR("b/.ATTRIBUTES/VARIABLE_VALUE", 2.0),
      SCALAR("c/.ATTRIBUTES/VARIABLE_VALUE", 3.0),
      {"_CHECKPOINTABLE_OBJECT_GRAPH", SM_STRING, 0, {0}, 613}}},
    {"tf_text_regression/01", 0, {{"_CHECKPOINTABLE_OBJECT_GRAPH", SM_STRING, 0, {0}, 921}}},
};
#define NFIX (sizeof fixtures / sizeof fixtures[0])

static size_t count(const fixture *f) {
  size_t n = 0;
  while (n < 16 && f->w[n].key) n++;
  return n;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static char tmpdir[512];

/* Reads every expected entry of the bundle at prefix and checks it; returns the tensors in data
 * order when `keep` is not NULL. */
static void check_bundle(const fixture *f, const char *prefix, sm_tensor **keep) {
  sm_bundle *b;
  sm_status *s = sm_bundle_open(prefix, &b);
  if (s) {
    fprintf(stderr, "%s: %s\n", f->dir, sm_status_message(s));
    sm_status_free(s);
    CHECK(0);
    return;
  }
  size_t n = count(f);
  CHECK_EQ_INT(sm_bundle_num_shards(b), 1);
  CHECK_EQ_INT(sm_bundle_num_entries(b), n);
  /* Listing is in key order. */
  const char *sorted[16];
  for (size_t i = 0; i < n; i++) sorted[i] = f->w[i].key;
  qsort(sorted, n, sizeof *sorted, str_cmp);
  for (size_t i = 0; i < n && i < sm_bundle_num_entries(b); i++) {
    sm_bundle_entry e;
    CHECK_OK(sm_bundle_entry_at(b, i, &e));
    CHECK_EQ_STR(e.key, sorted[i]);
  }
  for (size_t i = 0; i < n; i++) {
    const want *w = &f->w[i];
    sm_bundle_entry e;
    CHECK_OK(sm_bundle_lookup(b, w->key, &e));
    sm_tensor *t = NULL;
    s = sm_bundle_read(b, w->key, &t);
    if (s) {
      fprintf(stderr, "%s: %s: %s\n", f->dir, w->key, sm_status_message(s));
      sm_status_free(s);
      CHECK(0);
      continue;
    }
    CHECK_EQ_INT(sm_tensor_dtype(t), w->dtype);
    CHECK_EQ_INT(sm_tensor_rank(t), w->rank);
    for (int d = 0; d < w->rank && d < sm_tensor_rank(t); d++) CHECK_EQ_INT(sm_tensor_dims(t)[d], w->dims[d]);
    CHECK_EQ_INT(sm_tensor_num_elements(t), 1);
    if (w->dtype == SM_FLOAT) {
      float v;
      memcpy(&v, sm_tensor_data(t), 4);
      if (v != (float)w->value) {
        fprintf(stderr, "%s: %s = %.9g, want %.9g\n", f->dir, w->key, v, w->value);
        CHECK(0);
      }
    } else {
      size_t len;
      const char *p = sm_tensor_string(t, 0, &len);
      CHECK(p != NULL);
      CHECK_EQ_INT(len, (long long)w->value);
    }
    if (keep)
      keep[i] = t;
    else
      sm_tensor_free(t);
  }
  sm_bundle_close(b);
}

static void rewrite(const fixture *f, int idx) {
  sm_tensor *ts[16] = {0};
  char src[1024], dst[1024];
  snprintf(src, sizeof src, FIX "%s/variables/variables", f->dir);
  check_bundle(f, src, ts);
  snprintf(dst, sizeof dst, "%s/fx%d", tmpdir, idx);
  sm_bundle_writer *w;
  CHECK_OK(sm_bundle_writer_open(dst, &w));
  size_t n = count(f);
  for (size_t i = 0; i < n; i++)
    if (ts[i]) CHECK_OK(sm_bundle_writer_add(w, f->w[i].key, ts[i]));
  CHECK_OK(sm_bundle_writer_finish(w));
  sm_bundle_writer_free(w);
  for (size_t i = 0; i < n; i++) sm_tensor_free(ts[i]);
  /* The data file equals TF's byte for byte; the index too unless TF compressed it. */
  for (int which = 0; which < 2; which++) {
    char a[1100], b[1100];
    const char *suffix = which ? ".index" : ".data-00000-of-00001";
    snprintf(a, sizeof a, "%s%s", src, suffix);
    snprintf(b, sizeof b, "%s%s", dst, suffix);
    char *x, *y;
    size_t xl, yl;
    CHECK_OK(sm_file_read_all(a, &x, &xl));
    CHECK_OK(sm_file_read_all(b, &y, &yl));
    int same = xl == yl && memcmp(x, y, xl) == 0;
    if (which == 0 || !f->snappy) {
      if (!same) fprintf(stderr, "%s: our %s differs from TF's\n", f->dir, suffix);
      CHECK(same);
    }
    free(x);
    free(y);
  }
  check_bundle(f, dst, NULL);
}

static void put(const char *p, const void *d, size_t n) {
  FILE *fp = fopen(p, "wb");
  if (fp) {
    if (n) fwrite(d, 1, n, fp);
    fclose(fp);
  }
}

/* Every bit flip and truncation of a real Snappy index: an error, or exactly the right values. */
static void damage(const fixture *f) {
  char src[1024], dst[1024], ipath[1100], dpath[1100];
  snprintf(src, sizeof src, FIX "%s/variables/variables", f->dir);
  snprintf(dst, sizeof dst, "%s/dmg", tmpdir);
  snprintf(ipath, sizeof ipath, "%s.index", src);
  char *idx, *dat;
  size_t il, dl;
  CHECK_OK(sm_file_read_all(ipath, &idx, &il));
  snprintf(dpath, sizeof dpath, "%s.data-00000-of-00001", src);
  CHECK_OK(sm_file_read_all(dpath, &dat, &dl));
  snprintf(dpath, sizeof dpath, "%s.data-00000-of-00001", dst);
  put(dpath, dat, dl);
  snprintf(ipath, sizeof ipath, "%s.index", dst);
  char *cp = malloc(il);
  size_t n = count(f);
  int wrong = 0, silent = 0;
  for (size_t pos = 0; pos <= il * 8; pos++) {
    size_t len = il;
    memcpy(cp, idx, il);
    if (pos < il * 8)
      cp[pos / 8] ^= (char)(1 << (pos % 8));
    else
      len = 0;
    put(ipath, cp, len);
    sm_bundle *b;
    sm_status *s = sm_bundle_open(dst, &b);
    if (s) {
      sm_status_free(s);
      continue;
    }
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
      sm_tensor *t;
      s = sm_bundle_read(b, f->w[i].key, &t);
      if (s) {
        ok = 0;
        sm_status_free(s);
        continue;
      }
      if (f->w[i].dtype == SM_FLOAT) {
        float v;
        memcpy(&v, sm_tensor_data(t), 4);
        if (v != (float)f->w[i].value) wrong++;
      }
      sm_tensor_free(t);
    }
    if (ok && pos / 8 < il - 48) silent++;
    sm_bundle_close(b);
  }
  /* and every truncation */
  for (size_t l = 0; l < il; l++) {
    put(ipath, idx, l);
    sm_bundle *b;
    sm_status *s = sm_bundle_open(dst, &b);
    if (!s) {
      silent++;
      sm_bundle_close(b);
    }
    sm_status_free(s);
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(silent, 0);
  free(cp);
  free(idx);
  free(dat);
}

int main(void) {
  if (!sm_is_dir(FIX)) {
    printf("skipped: %s absent\n", FIX);
    return SM_TEST_SKIP;
  }
  snprintf(tmpdir, sizeof tmpdir, "%s/test_bundle_fixtures_tmp", SM_BINARY_DIR);
  mkdir(tmpdir, 0755);
  for (size_t i = 0; i < NFIX; i++) rewrite(&fixtures[i], (int)i);
  damage(&fixtures[4]);  /* TF 1.14, Snappy */
  damage(&fixtures[11]); /* TF 2.14, Snappy, a string entry */
  TEST_MAIN_END();
}
