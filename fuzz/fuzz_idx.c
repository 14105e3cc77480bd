/* fuzz_idx.c - libFuzzer target: bytes as an IDX (MNIST-format) file through sm_idx_read.
 *
 * The reader opens paths (and inflates gzip by its magic), so the input is written to a file in
 * a per-process temporary directory first; it is read once under a plain name and once under a
 * ".gz" name. A tensor that comes back is touched at both ends.
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_IDX_ENTRY renamed.
 * fuzz-requires: src/format/idx.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "savedmodel/idx.h"

#ifndef FUZZ_IDX_ENTRY
#define FUZZ_IDX_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_IDX_ENTRY(const uint8_t *data, size_t size);

static char fid_dir[256];

static void fid_path(char *p, size_t cap, const char *name) { snprintf(p, cap, "%s/%s", fid_dir, name); }

static void fid_cleanup(void) {
  char p[400];
  fid_path(p, sizeof p, "x-idx1-ubyte");
  unlink(p);
  fid_path(p, sizeof p, "x-idx1-ubyte.gz");
  unlink(p);
  rmdir(fid_dir);
}

static void fid_init(void) {
  if (fid_dir[0]) return;
  const char *tmp = getenv("TMPDIR");
  snprintf(fid_dir, sizeof fid_dir, "%s/sm-fuzz-idx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(fid_dir)) {
    perror("mkdtemp");
    abort();
  }
  atexit(fid_cleanup);
}

static void fid_read(const char *name, const uint8_t *data, size_t size) {
  char p[400];
  fid_path(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(p);
    abort();
  }
  sm_tensor *t = NULL;
  sm_status *s = sm_idx_read(p, &t);
  if (!s) {
    if (!t) abort();
    const uint8_t *d = sm_tensor_data(t);
    size_t nb = sm_tensor_nbytes(t);
    volatile uint8_t sink = 0;
    if (d && nb) sink ^= d[0] ^ d[nb - 1];
    (void)sink;
  } else {
    (void)sm_status_message(s);
  }
  sm_status_free(s);
  sm_tensor_free(t);
}

int FUZZ_IDX_ENTRY(const uint8_t *data, size_t size) {
  fid_init();
  fid_read("x-idx1-ubyte", data, size);
  fid_read("x-idx1-ubyte.gz", data, size);
  return 0;
}
