/* fuzz_bundle.c - libFuzzer target: a variables bundle (index + data) through the bundle reader.
 *
 * Input layout: a 4-byte little-endian length L, then L bytes of PREFIX.index, then the rest as
 * the data shard (L is clamped to what is there). The bundle reader opens files, so the two parts
 * are written into a per-process temporary directory; the data file is also linked under every
 * shard name of 1 to 4 shards, so headers with several shards reach the readers too. Every entry
 * is looked up and read (borrowing and copying). tests/unit/test_fuzz_regressions.c includes this
 * file with FUZZ_BUNDLE_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "savedmodel/bundle.h"

#ifndef FUZZ_BUNDLE_ENTRY
#define FUZZ_BUNDLE_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_BUNDLE_ENTRY(const uint8_t *data, size_t size);

static char fbd_dir[256];
static char fbd_prefix[300];

static void fbd_cleanup(void) {
  char p[400];
  snprintf(p, sizeof p, "%s.index", fbd_prefix);
  unlink(p);
  snprintf(p, sizeof p, "%s/data", fbd_dir);
  unlink(p);
  for (int n = 1; n <= 4; n++)
    for (int i = 0; i < n; i++) {
      snprintf(p, sizeof p, "%s.data-%05d-of-%05d", fbd_prefix, i, n);
      unlink(p);
    }
  rmdir(fbd_dir);
}

static void fbd_init(void) {
  if (fbd_dir[0]) return;
  const char *tmp = getenv("TMPDIR");
  snprintf(fbd_dir, sizeof fbd_dir, "%s/sm-fuzz-bundle-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(fbd_dir)) {
    perror("mkdtemp");
    abort();
  }
  snprintf(fbd_prefix, sizeof fbd_prefix, "%s/variables", fbd_dir);
  for (int n = 1; n <= 4; n++)
    for (int i = 0; i < n; i++) {
      char p[400];
      snprintf(p, sizeof p, "%s.data-%05d-of-%05d", fbd_prefix, i, n);
      if (symlink("data", p) != 0) {
        perror("symlink");
        abort();
      }
    }
  atexit(fbd_cleanup);
}

static void fbd_write(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

static void fbd_touch(const sm_tensor *t) {
  size_t nb = sm_tensor_nbytes(t);
  const uint8_t *d = sm_tensor_data(t);
  volatile uint8_t sink = 0;
  if (nb && d) sink ^= d[0] ^ d[nb - 1];
  if (!d) { /* DT_STRING: look at the first few elements */
    int64_t ne = sm_tensor_num_elements(t);
    for (int64_t i = 0; i < ne && i < 1000; i++) {
      size_t l = 0;
      const char *e = sm_tensor_string(t, i, &l);
      if (e && l) sink ^= (uint8_t)(e[0] ^ e[l - 1]);
    }
  }
  (void)sink;
}

int FUZZ_BUNDLE_ENTRY(const uint8_t *data, size_t size) {
  fbd_init();
  if (size < 4) return 0;
  size_t ilen = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
  if (ilen > size - 4) ilen = size - 4;
  char path[400];
  snprintf(path, sizeof path, "%s.index", fbd_prefix);
  fbd_write(path, data + 4, ilen);
  snprintf(path, sizeof path, "%s/data", fbd_dir);
  fbd_write(path, data + 4 + ilen, size - 4 - ilen);

  sm_bundle *b = NULL;
  sm_status *s = sm_bundle_open(fbd_prefix, &b);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  (void)sm_bundle_num_shards(b);
  size_t n = sm_bundle_num_entries(b);
  for (size_t i = 0; i < n; i++) {
    sm_bundle_entry e;
    if ((s = sm_bundle_entry_at(b, i, &e))) {
      sm_status_free(s);
      continue;
    }
    sm_bundle_entry e2;
    s = sm_bundle_lookup(b, e.key, &e2);
    sm_status_free(s);
    sm_tensor *t = NULL;
    s = sm_bundle_read(b, e.key, &t);
    if (!s) fbd_touch(t);
    sm_status_free(s);
    sm_tensor_free(t);
    t = NULL;
    s = sm_bundle_read_copy(b, e.key, &t);
    if (!s) fbd_touch(t);
    sm_status_free(s);
    sm_tensor_free(t);
  }
  sm_bundle_close(b);
  return 0;
}
