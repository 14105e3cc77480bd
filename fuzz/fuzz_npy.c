/* fuzz_npy.c - libFuzzer target: bytes as a .npy image and as an .npz archive.
 *
 * A .npy that decodes is encoded again and decoded once more: the second decode must succeed and
 * give the same dtype, shape and bytes (np.save of what np.load read reads back the same). An
 * .npz that opens has every member (at most 16) read. tests/unit/test_fuzz_regressions.c includes
 * this file with FUZZ_NPY_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/npy.h"

#ifndef FUZZ_NPY_ENTRY
#define FUZZ_NPY_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_NPY_ENTRY(const uint8_t *data, size_t size);

static void fnp_touch(const sm_tensor *t) {
  size_t nb = sm_tensor_nbytes(t);
  const uint8_t *d = sm_tensor_data(t);
  volatile uint8_t sink = 0;
  if (nb && d) sink ^= d[0] ^ d[nb - 1];
  if (!d) {
    int64_t ne = sm_tensor_num_elements(t);
    for (int64_t i = 0; i < ne && i < 1000; i++) {
      size_t l = 0;
      const char *e = sm_tensor_string(t, i, &l);
      if (e && l) sink ^= (uint8_t)(e[0] ^ e[l - 1]);
    }
  }
  (void)sink;
}

static void fnp_same(const sm_tensor *a, const sm_tensor *b) {
  if (sm_tensor_dtype(a) != sm_tensor_dtype(b) || sm_tensor_rank(a) != sm_tensor_rank(b)) abort();
  for (int i = 0; i < sm_tensor_rank(a); i++)
    if (sm_tensor_dims(a)[i] != sm_tensor_dims(b)[i]) abort();
  const uint8_t *da = sm_tensor_data(a), *db = sm_tensor_data(b);
  if (da && db) {
    if (sm_tensor_nbytes(a) != sm_tensor_nbytes(b)) abort();
    if (sm_tensor_nbytes(a) && memcmp(da, db, sm_tensor_nbytes(a)) != 0) {
      /* NaN payloads survive a byte copy, so bytes must match exactly */
      abort();
    }
  }
}

int FUZZ_NPY_ENTRY(const uint8_t *data, size_t size) {
  sm_tensor *t = NULL;
  sm_status *s = sm_npy_decode(data, size, "fuzz.npy", &t);
  if (!s) {
    fnp_touch(t);
    uint8_t *enc = NULL;
    size_t elen = 0;
    sm_status *e = sm_npy_encode(t, &enc, &elen);
    if (!e) {
      sm_tensor *t2 = NULL;
      sm_status *d2 = sm_npy_decode(enc, elen, "fuzz.npy (re-encoded)", &t2);
      if (d2) {
        fprintf(stderr, "re-encoded .npy does not decode: %s\n", sm_status_message(d2));
        abort();
      }
      fnp_same(t, t2);
      sm_tensor_free(t2);
    }
    sm_status_free(e);
    free(enc);
  }
  sm_status_free(s);
  sm_tensor_free(t);

  sm_npz *z = NULL;
  s = sm_npz_open_memory(data, size, "fuzz.npz", &z);
  if (!s) {
    int n = sm_npz_count(z);
    for (int i = 0; i < n && i < 16; i++) {
      const char *name = sm_npz_name(z, i);
      if (!name) abort();
      sm_tensor *m = NULL;
      sm_status *g = sm_npz_get(z, name, &m);
      if (!g) fnp_touch(m);
      sm_status_free(g);
      sm_tensor_free(m);
    }
  }
  sm_status_free(s);
  sm_npz_free(z);
  return 0;
}
