/* test_bundle_fixtures.c - every variables bundle TensorFlow wrote under SM_SHARED_DIR/fixtures/
 * tf-serving opens, every checksum verifies and every value equals _inventory/NAME.vars.txt; our writer
 * reproduces TF's data files byte for byte (and the index too where TF did not compress it);
 * damaging a real Snappy-compressed index never yields wrong values. Then every bundle of the
 * committed zoo (tests/fixtures/zoo, TF 2.x: all dtypes, sharded, partitioned) reads back exactly
 * its golden/vars.json + vars/ files. */
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
    CHECK_OK(sm__file_read_all(a, &x, &xl));
    CHECK_OK(sm__file_read_all(b, &y, &yl));
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
  CHECK_OK(sm__file_read_all(ipath, &idx, &il));
  snprintf(dpath, sizeof dpath, "%s.data-00000-of-00001", src);
  CHECK_OK(sm__file_read_all(dpath, &dat, &dl));
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


/* ---- the committed zoo ------------------------------------------------------------------------ */

#include <dirent.h>

static int b64val(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Decodes base64 text [p, end) into out (large enough); returns the byte count. */
static size_t b64dec(const char *p, const char *end, uint8_t *out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (; p < end; p++) {
    int v = b64val((unsigned char)*p);
    if (v < 0) continue; /* '=' padding */
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (uint8_t)(acc >> bits);
    }
  }
  return n;
}

/* The text of JSON string field `name` in line (no escapes in these files), copied into buf. */
static int json_field(const char *line, const char *name, char *buf, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", name);
  const char *p = strstr(line, pat);
  if (!p) return 0;
  p += strlen(pat);
  const char *q = strchr(p, '"');
  if (!q || (size_t)(q - p) >= cap) return 0;
  memcpy(buf, p, (size_t)(q - p));
  buf[q - p] = 0;
  return 1;
}

/* Reads a golden file whole; on failure reports it as a failed check and returns 0. */
static int read_golden(const char *what, const char *file, char **d, size_t *n) {
  sm_status *s = sm__file_read_all(file, d, n);
  if (!s) return 1;
  fprintf(stderr, "%s: %s\n", what, sm_status_message(s));
  sm_status_free(s);
  CHECK(0);
  return 0;
}

static void check_npy(const char *what, const sm_tensor *t, const char *file) {
  char *d;
  size_t n;
  if (!read_golden(what, file, &d, &n)) return;
  size_t off = 0;
  if (n >= 10 && memcmp(d, "\x93NUMPY", 6) == 0) {
    if (d[6] == 1)
      off = 10 + ((size_t)(uint8_t)d[8] | (size_t)(uint8_t)d[9] << 8);
    else if (n >= 12)
      off = 12 + ((size_t)(uint8_t)d[8] | (size_t)(uint8_t)d[9] << 8 | (size_t)(uint8_t)d[10] << 16);
  }
  int ok = off && off <= n && n - off == sm_tensor_nbytes(t) && memcmp(d + off, sm_tensor_data(t), n - off) == 0;
  if (!ok) fprintf(stderr, "%s: values differ from %s\n", what, file);
  CHECK(ok);
  free(d);
}

static void check_strings(const char *what, const sm_tensor *t, const char *file) {
  char *d;
  size_t n;
  if (!read_golden(what, file, &d, &n)) return;
  const char *p = strstr(d, "\"value\":");
  int64_t i = 0;
  int ok = p != NULL;
  uint8_t *buf = malloc(n + 1);
  while (ok && (p = strchr(p + (i ? 1 : 8), '"'))) {
    const char *q = strchr(p + 1, '"');
    if (!q) break;
    size_t bl = b64dec(p + 1, q, buf), tl;
    const char *ts = sm_tensor_string(t, i, &tl);
    if (!ts || tl != bl || memcmp(ts, buf, bl) != 0) ok = 0;
    i++;
    p = q;
  }
  if (!ok || i != sm_tensor_num_elements(t)) {
    fprintf(stderr, "%s: strings differ from %s (%lld read)\n", what, file, (long long)i);
    CHECK(0);
  }
  free(buf);
  free(d);
}

static int zoo_models(void) {
  const char *zoo = SM_SOURCE_DIR "/tests/fixtures/zoo";
  DIR *dp = opendir(zoo);
  if (!dp) {
    fprintf(stderr, "zoo absent: %s\n", zoo);
    return 0;
  }
  struct dirent *de;
  int models = 0;
  while ((de = readdir(dp))) {
    if (de->d_name[0] == '.') continue;
    char prefix[1024], golden[1024];
    snprintf(prefix, sizeof prefix, "%s/%s/model/variables/variables", zoo, de->d_name);
    snprintf(golden, sizeof golden, "%s/%s/golden/vars.json", zoo, de->d_name);
    char idx[1100];
    snprintf(idx, sizeof idx, "%s.index", prefix);
    if (!sm__path_exists(idx) || !sm__path_exists(golden)) continue;
    char *g;
    size_t gl;
    CHECK_OK(sm__file_read_all(golden, &g, &gl));
    if (!g) continue;
    sm_bundle *b;
    sm_status *s = sm_bundle_open(prefix, &b);
    if (s) {
      fprintf(stderr, "zoo %s: %s\n", de->d_name, sm_status_message(s));
      sm_status_free(s);
      CHECK(0);
      free(g);
      continue;
    }
    models++;
    if (strcmp(de->d_name, "tf1_sharded") == 0) CHECK_EQ_INT(sm_bundle_num_shards(b), 2);
    if (strcmp(de->d_name, "tf1_partitioned") == 0) { /* TF's own slice keys find their data */
      sm_bundle_entry e;
      CHECK_OK(sm_bundle_lookup(b, "w", &e));
      CHECK_EQ_INT(e.sliced, 1);
      CHECK_OK(sm_bundle_lookup(b, "emb", &e));
      CHECK_EQ_INT(e.sliced, 1);
    }
    size_t nkeys = 0;
    for (char *line = strtok(g, "\n"); line; line = strtok(NULL, "\n")) {
      char key[512], dtype[64], file[256], what[1024], path[1400];
      if (!json_field(line, "key", key, sizeof key)) continue;
      nkeys++;
      snprintf(what, sizeof what, "zoo %s: %s", de->d_name, key);
      CHECK(json_field(line, "dtype", dtype, sizeof dtype) && json_field(line, "file", file, sizeof file));
      sm_tensor *t;
      s = sm_bundle_read(b, key, &t);
      if (s) {
        fprintf(stderr, "%s: %s\n", what, sm_status_message(s));
        sm_status_free(s);
        CHECK(0);
        continue;
      }
      CHECK_EQ_STR(sm_dtype_name(sm_tensor_dtype(t)), dtype);
      snprintf(path, sizeof path, "%s/%s/golden/%s", zoo, de->d_name, file);
      if (sm_tensor_dtype(t) == SM_STRING)
        check_strings(what, t, path);
      else
        check_npy(what, t, path);
      sm_tensor_free(t);
    }
    CHECK_EQ_INT(sm_bundle_num_entries(b), nkeys);
    sm_bundle_close(b);
    free(g);
  }
  closedir(dp);
  return models;
}

int main(void) {
  int zoo = zoo_models();
  fprintf(stderr, "zoo bundles checked: %d\n", zoo);
  if (!sm__is_dir(FIX)) {
    printf("skipped: %s absent\n", FIX);
    return sm_test_failures ? 1 : (zoo ? 0 : SM_TEST_SKIP);
  }
  snprintf(tmpdir, sizeof tmpdir, "%s/test_bundle_fixtures_tmp", SM_BINARY_DIR);
  mkdir(tmpdir, 0755);
  for (size_t i = 0; i < NFIX; i++) rewrite(&fixtures[i], (int)i);
  damage(&fixtures[4]);  /* TF 1.14, Snappy */
  damage(&fixtures[11]); /* TF 2.14, Snappy, a string entry */
  TEST_MAIN_END();
}
