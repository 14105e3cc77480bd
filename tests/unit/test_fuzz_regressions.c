/* test_fuzz_regressions.c - replays inputs through the fuzz targets' own entry points in the
 * normal build: every file under tests/fixtures/fuzz-regressions/fuzz_<target>/ (crashes the
 * fuzzers once found), the hand-written seeds in fuzz/seeds/, the zoo's models, indexes and
 * single-shard bundles, the .npy fixtures, and the malformed-model corpus's graphs. The one-op
 * targets' seeds (fuzz_media, fuzz_records: valid files written by tools/make_decode_seeds.py) must
 * also decode without an error. A target
 * aborts on any invariant it checks, so a failure here is a crash. The CLI's Python-literal
 * parser is not in the library: its two files are compiled into this test. The REST JSON target
 * is replayed when the serve layer's decoder (src/serve/json_tensor.h) is there. */
#define FUZZ_SAVED_MODEL_ENTRY fuzz_saved_model_one
#define FUZZ_PBTXT_ENTRY fuzz_pbtxt_one
#define FUZZ_TABLE_ENTRY fuzz_table_one
#define FUZZ_BUNDLE_ENTRY fuzz_bundle_one
#define FUZZ_NPY_ENTRY fuzz_npy_one
#define FUZZ_PYLITERAL_ENTRY fuzz_pyliteral_one
#define FUZZ_EXAMPLE_ENTRY fuzz_example_one
#define FUZZ_GRAPH_ENTRY fuzz_graph_one
#define FUZZ_IDX_ENTRY fuzz_idx_one
#include "../../fuzz/fuzz_saved_model.c"
#include "../../fuzz/fuzz_pbtxt.c"
#include "../../fuzz/fuzz_table.c"
#include "../../fuzz/fuzz_bundle.c"
#include "../../fuzz/fuzz_npy.c"
#include "../../src/cli/pyfmt.c"
#include "../../src/cli/pyliteral.c"
#include "../../fuzz/fuzz_pyliteral.c"
#include "../../fuzz/fuzz_example.c"
#include "../../fuzz/fuzz_graph.c"
#include "../../fuzz/fuzz_idx.c"
#define FUZZ_MEDIA_ENTRY fuzz_media_one
#define FUZZ_RECORDS_ENTRY fuzz_records_one
#include "../../fuzz/fuzz_media.c"
#include "../../fuzz/fuzz_records.c"
#if __has_include("serve/json_tensor.h")
#define FUZZ_JSON_ENTRY fuzz_json_one
#include "../../fuzz/fuzz_json.c"
#define HAVE_FUZZ_JSON 1
#endif

#include <dirent.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "test.h"

typedef int (*entry_fn)(const uint8_t *, size_t);

/* snprintf that reports truncation (paths here are short; a long one is skipped). */
static int pathf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n >= 0 && (size_t)n < cap;
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  uint8_t *b = malloc(cap);
  size_t r;
  while (b && (r = fread(b + len, 1, cap - len, f)) > 0) {
    len += r;
    if (len == cap) {
      uint8_t *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
    }
  }
  fclose(f);
  *n = len;
  return b;
}

static int replay_file(entry_fn fn, const char *path) {
  size_t n = 0;
  uint8_t *d = slurp(path, &n);
  CHECK(d != NULL);
  if (!d) return 0;
  fn(d, n); /* aborts on a failure: ctest then reports the crash */
  free(d);
  return 1;
}

/* Every regular file in dir (absent dir: nothing to do). */
static int replay_dir(entry_fn fn, const char *dir) {
  DIR *dh = opendir(dir);
  if (!dh) return 0;
  int count = 0;
  struct dirent *de;
  while ((de = readdir(dh))) {
    if (de->d_name[0] == '.') continue;
    char p[4096];
    pathf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && strcmp(de->d_name, "README.md") != 0)
      count += replay_file(fn, p);
  }
  closedir(dh);
  return count;
}

/* A one-op target's seeds: each must run without an error status. */
static int replay_valid_seeds(entry_fn fn, const char *dir) {
  DIR *dh = opendir(dir);
  CHECK(dh != NULL);
  if (!dh) return 0;
  int count = 0;
  struct dirent *de;
  while ((de = readdir(dh))) {
    if (de->d_name[0] == '.') continue;
    char p[4096];
    pathf(p, sizeof p, "%s/%s", dir, de->d_name);
    fop_last_ok = 0;
    count += replay_file(fn, p);
    if (!fop_last_ok) fprintf(stderr, "seed %s: the op failed on it: %s\n", p, fop_last_err);
    CHECK(fop_last_ok);
  }
  closedir(dh);
  return count;
}

/* The bundle target's input: LE32 index length, the index, the single data shard. */
static int replay_bundle(const char *prefix) {
  char ip[4096], dp[4096];
  pathf(ip, sizeof ip, "%s.index", prefix);
  pathf(dp, sizeof dp, "%s.data-00000-of-00001", prefix);
  size_t ni = 0, nd = 0;
  uint8_t *ib = slurp(ip, &ni), *db = slurp(dp, &nd);
  int ok = ib && db;
  if (ok) {
    uint8_t *in = malloc(4 + ni + nd);
    CHECK(in != NULL);
    if (in) {
      in[0] = (uint8_t)ni, in[1] = (uint8_t)(ni >> 8), in[2] = (uint8_t)(ni >> 16), in[3] = (uint8_t)(ni >> 24);
      memcpy(in + 4, ib, ni);
      memcpy(in + 4 + ni, db, nd);
      fuzz_bundle_one(in, 4 + ni + nd);
      free(in);
    }
  }
  free(ib);
  free(db);
  return ok;
}

int main(void) {
  static const struct {
    const char *name;
    entry_fn fn;
  } targets[] = {{"fuzz_saved_model", fuzz_saved_model_one},
                 {"fuzz_pbtxt", fuzz_pbtxt_one},
                 {"fuzz_table", fuzz_table_one},
                 {"fuzz_bundle", fuzz_bundle_one},
                 {"fuzz_npy", fuzz_npy_one},
                 {"fuzz_pyliteral", fuzz_pyliteral_one},
                 {"fuzz_example", fuzz_example_one},
                 {"fuzz_graph", fuzz_graph_one},
                 {"fuzz_idx", fuzz_idx_one},
                 {"fuzz_media", fuzz_media_one},
                 {"fuzz_records", fuzz_records_one},
#ifdef HAVE_FUZZ_JSON
                 {"fuzz_json", fuzz_json_one},
#endif
  };
  int total = 0;
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    char d[4096];
    pathf(d, sizeof d, "%s/tests/fixtures/fuzz-regressions/%s", SM_SOURCE_DIR, targets[i].name);
    int a = replay_dir(targets[i].fn, d);
    pathf(d, sizeof d, "%s/fuzz/seeds/%s", SM_SOURCE_DIR, targets[i].name);
    int b = replay_dir(targets[i].fn, d);
    printf("%s: %d regression inputs, %d seeds\n", targets[i].name, a, b);
    total += a + b;
  }

  /* The zoo, so the entry points are known to take real files without tripping their checks. */
  char zoo[4096];
  pathf(zoo, sizeof zoo, "%s/tests/fixtures/zoo", SM_SOURCE_DIR);
  DIR *dh = opendir(zoo);
  CHECK(dh != NULL);
  int nzoo = 0;
  struct dirent *de;
  while (dh && (de = readdir(dh))) {
    if (de->d_name[0] == '.') continue;
    char p[4096];
    pathf(p, sizeof p, "%s/%s/model/saved_model.pb", zoo, de->d_name);
    if (access(p, R_OK) == 0) nzoo += replay_file(fuzz_saved_model_one, p) + replay_file(fuzz_graph_one, p);
    pathf(p, sizeof p, "%s/%s/model/saved_model.pbtxt", zoo, de->d_name);
    if (access(p, R_OK) == 0) nzoo += replay_file(fuzz_pbtxt_one, p);
    pathf(p, sizeof p, "%s/%s/model/variables/variables.index", zoo, de->d_name);
    if (access(p, R_OK) == 0) nzoo += replay_file(fuzz_table_one, p);
    pathf(p, sizeof p, "%s/%s/model/variables/variables", zoo, de->d_name);
    nzoo += replay_bundle(p);
  }
  if (dh) closedir(dh);
  printf("zoo: %d inputs\n", nzoo);

  /* the .npy / .npz fixtures */
  char npy[4096];
  pathf(npy, sizeof npy, "%s/tests/fixtures/npy", SM_SOURCE_DIR);
  int nnpy = replay_dir(fuzz_npy_one, npy);
  printf("npy fixtures: %d inputs\n", nnpy);
  CHECK(nnpy > 10);
  char sd[4096];
  pathf(sd, sizeof sd, "%s/fuzz/seeds/fuzz_media", SM_SOURCE_DIR);
  int nmedia = replay_valid_seeds(fuzz_media_one, sd);
  pathf(sd, sizeof sd, "%s/fuzz/seeds/fuzz_records", SM_SOURCE_DIR);
  int nrec = replay_valid_seeds(fuzz_records_one, sd);
  printf("one-op seeds that decode: media %d, records %d\n", nmedia, nrec);
  /* fuzz_media's first crash: DecodeWebP fed a GIF copied every frame into a one-frame output. TF
   * (2.21, eager) refuses any GIF in DecodeWebP with "Bad op type DecodeWebP". */
  pathf(sd, sizeof sd, "%s/fuzz/seeds/fuzz_media/gif_two_frames", SM_SOURCE_DIR);
  size_t gn = 0;
  uint8_t *gif = slurp(sd, &gn);
  CHECK(gif && gn > 1);
  for (int k = 0; gif && gn > 1 && k < 2; k++) {
    gif[0] = (uint8_t)(5 + k); /* DecodeWebP channels 0, then 3 */
    fop_last_ok = 1;
    fuzz_media_one(gif, gn);
    CHECK(!fop_last_ok && strstr(fop_last_err, "Bad op type DecodeWebP"));
  }
  free(gif);
  CHECK(nmedia > 20);
  CHECK(nrec > 15);
  CHECK(nzoo > 10);
  CHECK(total > 0);
  TEST_MAIN_END();
}
