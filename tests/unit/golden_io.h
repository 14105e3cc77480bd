/* golden_io.h - reading the values tools/make_zoo.py records: .npy files, and DT_STRING tensors
 * as JSON ({"dtype": "DT_STRING", "shape": [..], "encoding": "base64", "value": [...]}). Shared by
 * the tests that run the zoo's golden cases (test_model, test_alloc_fail). */
#ifndef SM_TEST_GOLDEN_IO_H
#define SM_TEST_GOLDEN_IO_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "savedmodel/npy.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

static int b64v(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* {"dtype": "DT_STRING", "shape": [..], "encoding": "base64", "value": [...]} */
static sm_status *read_json_strings(const char *path, sm_tensor **out) {
  char *text;
  size_t len;
  sm_status *st = sm__file_read_all(path, &text, &len);
  if (st) return st;
  int64_t dims[SM_MAX_RANK];
  int rank = 0;
  const char *sp = strstr(text, "\"shape\"");
  const char *vp = strstr(text, "\"value\"");
  if (!sp || !vp) {
    free(text);
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: no shape or value", path);
  }
  sp = strchr(sp, '[');
  for (sp++; sp && *sp && *sp != ']';) {
    char *end;
    long long v = strtoll(sp, &end, 10);
    if (end == sp) {
      sp++;
      continue;
    }
    if (rank < SM_MAX_RANK) dims[rank++] = v;
    sp = end;
  }
  st = sm_tensor_new(SM_STRING, rank, dims, out);
  int64_t i = 0, n = st ? 0 : sm_tensor_num_elements(*out);
  for (const char *q = strchr(vp + 7, '"'); !st && q && i < n; i++) {
    const char *e = strchr(q + 1, '"');
    if (!e) break;
    char *buf = malloc((size_t)(e - q) + 1);
    if (!buf) abort();
    size_t bl = 0;
    unsigned acc = 0;
    int bits = 0;
    for (const char *c = q + 1; c < e; c++) {
      int v = b64v((unsigned char)*c);
      if (v < 0) continue;
      acc = (acc << 6) | (unsigned)v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        buf[bl++] = (char)((acc >> bits) & 0xff);
      }
    }
    st = sm_tensor_set_string(*out, i, buf, bl);
    free(buf);
    q = strchr(e + 1, '"');
  }
  free(text);
  return st;
}

static sm_status *read_value(const char *path, sm_tensor **out) {
  size_t n = strlen(path);
  if (n > 5 && !strcmp(path + n - 5, ".json")) return read_json_strings(path, out);
  return sm_npy_read(path, out);
}

#endif
