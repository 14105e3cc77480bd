/* test_ops_readers.c - TF1's readers and the compressed file datasets (session 23, h1) against
 * TensorFlow: the TF1 SavedModel that tools/gen_readers_cases.py writes (tests/fixtures/readers:
 * a FIFOQueue of file names and a TextLineReaderV2 / WholeFileReaderV2 / IdentityReaderV2 /
 * FixedLengthRecordReaderV2 (hop_bytes, GZIP, ZLIB) / TFRecordReaderV2 (GZIP, ZLIB) each, the V1 ref
 * WholeFileReader on a V1 FIFOQueue, and TextLine/TFRecord/FixedLengthRecord datasets with a
 * compression_type) is loaded and its signatures are called in TF's order (readers_calls.h: inputs
 * and TF's outputs or error text, paths written "@D@"), so each call sees what the earlier ones left:
 * keys, header lines, records across files, ReadUpTo stopping at a file's end, counters, reset,
 * SerializeState/RestoreState, truncated and corrupted records, closed queues. By hand: a gzip bomb
 * ends at the run's memory budget (dataset and reader), a read on an empty queue ends at the
 * deadline, a file outside the export is refused, a reload starts with fresh readers. The calls include
 * a tf.compat.v1.train.string_input_producer queue (its queue runner's enqueue run as a signature)
 * feeding a TextLineReader's read_up_to, end to end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_call.h"
#include "e5_run.h"

#include "readers_calls.h"

#define FIXDIR SM_SOURCE_DIR "/tests/fixtures/readers"

static sm_model *load(void) { return e5_load(FIXDIR); }

/* s with every "@D@" replaced by the fixture directory (malloc'd; *n its length). */
static char *subst(const char *s, size_t len, size_t *n) {
  size_t dl = strlen(FIXDIR), cap = len + 1, k = 0;
  for (size_t i = 0; i + 3 <= len; i++)
    if (!memcmp(s + i, "@D@", 3)) cap += dl;
  char *o = malloc(cap);
  if (!o) return NULL;
  for (size_t i = 0; i < len;) {
    if (i + 3 <= len && !memcmp(s + i, "@D@", 3)) {
      memcpy(o + k, FIXDIR, dl);
      k += dl, i += 3;
    } else {
      o[k++] = s[i++];
    }
  }
  o[k] = 0;
  *n = k;
  return o;
}

/* A serialized ReaderBaseState (fields 1-3 varints, 4 current_work bytes, last) whose work unit held
 * "@D@": its length prefix is TF's, of TF's fixture path; rewritten for the path substituted here,
 * which differs in length from checkout to checkout. v has room for 8 more bytes. */
static void fix_state_length(char *v, size_t *n) {
  size_t i = 0;
  while (i < *n && (v[i] == 0x08 || v[i] == 0x10 || v[i] == 0x18)) {
    i++;
    while (i < *n && (v[i] & 0x80)) i++;
    i++;
  }
  if (i >= *n || v[i] != 0x22) return;
  size_t j = i + 1;
  while (j < *n && (v[j] & 0x80)) j++;
  if (j >= *n) return;
  j++; /* the payload starts at j */
  size_t payload = *n - j;
  unsigned char var[10];
  size_t k = 0;
  size_t x = payload;
  while (x >= 0x80) {
    var[k++] = (unsigned char)((x & 0x7f) | 0x80);
    x >>= 7;
  }
  var[k++] = (unsigned char)x;
  memmove(v + i + 1 + k, v + j, payload);
  memcpy(v + i + 1, var, k);
  *n = i + 1 + k + payload;
}

/* e5_run.h's string hook: the fixture directory for "@D@", and a reader state's length fixed. */
static char *subst_state(const char *s, size_t len, size_t *n) {
  char *v = subst(s, len, n);
  if (v && *n != len) {
    char *w = realloc(v, *n + 8);
    if (!w) {
      free(v);
      return NULL;
    }
    v = w;
    fix_state_length(v, n);
  }
  return v;
}

static void test_calls(void) {
  sm_model *m = load();
  if (!m) return;
  e5_string_hook = subst_state;
  e5_run_calls(m, readers_calls, (int)(sizeof readers_calls / sizeof readers_calls[0]), NULL);
  e5_string_hook = NULL;
  sm_model_free(m);
}

/* ---- by hand ------------------------------------------------------------------------------------ */

static sm_tensor *strs(int n, const char *const *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, (int64_t[]){n}, &t));
  for (int i = 0; t && i < n; i++) CHECK_OK(sm_tensor_set_string(t, i, v[i], strlen(v[i])));
  return t;
}

static sm_tensor *str0(const char *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &t));
  if (t) CHECK_OK(sm_tensor_set_string(t, 0, v, strlen(v)));
  return t;
}

static sm_tensor *i64(int64_t v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 0, NULL, &t));
  if (t) *(int64_t *)sm_tensor_data(t) = v;
  return t;
}

static sm_status *enq(sm_model *m, const char *tag, const char *file) {
  char sig[64];
  snprintf(sig, sizeof sig, "%s_enq", tag);
  const char *in = "files", *on = "size";
  sm_tensor *x = strs(1, &file), *out = NULL;
  sm_status *st = sm_model_run(m, sig, &in, &x, 1, &on, 1, &out);
  sm_tensor_free(x);
  sm_tensor_free(out);
  return st;
}

static sm_status *upto(sm_model *m, const char *tag, int64_t n, const sm_run_options *ro, int64_t *got) {
  char sig[64];
  snprintf(sig, sizeof sig, "%s_upto", tag);
  const char *in = "n", *on[2] = {"keys", "values"};
  sm_tensor *x = i64(n), *out[2] = {0};
  sm_status *st = sm_model_run_opts(m, sig, &in, &x, 1, on, 2, out, ro);
  if (!st && got) *got = sm_tensor_num_elements(out[0]);
  sm_tensor_free(x);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  return st;
}

static void test_bomb(void) {
  sm_model *m = load();
  if (!m) return;
  sm_run_options ro;
  memset(&ro, 0, sizeof ro);
  ro.max_run_bytes = 1 << 20; /* the bomb inflates to 8 MiB */
  /* a GZIP dataset */
  const char *in[2] = {"files", "comp"}, *on = "lines";
  const char *bomb = FIXDIR "/data/bomb.gz";
  sm_tensor *x[2] = {strs(1, &bomb), str0("GZIP")}, *out = NULL;
  sm_status *st = sm_model_run_opts(m, "ds_text", in, x, 2, &on, 1, &out, &ro);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_tensor_free(out);
  /* the same without a budget: the 8 MiB of zeros are one line */
  out = NULL;
  CHECK_OK(sm_model_run(m, "ds_text", in, x, 2, &on, 1, &out));
  CHECK(out && sm_tensor_num_elements(out) == 1);
  sm_tensor_free(out);
  sm_tensor_free(x[0]);
  sm_tensor_free(x[1]);
  /* a GZIP FixedLengthRecordReader */
  CHECK_OK(enq(m, "fixgz", bomb));
  st = upto(m, "fixgz", 4, &ro, NULL);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm_model_free(m);
}

static void test_hand(void) {
  sm_model *m = load();
  if (!m) return;
  /* a read on an empty queue waits, until the deadline */
  sm_run_options ro;
  memset(&ro, 0, sizeof ro);
  ro.deadline_us = sm_monotonic_us() + 100 * 1000;
  sm_status *st = upto(m, "text", 2, &ro, NULL);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  /* a file outside the export is refused, naming it; the next file reads on */
  CHECK_OK(enq(m, "whole", "/etc/hostname"));
  CHECK_OK(enq(m, "whole", FIXDIR "/data/b.txt"));
  st = upto(m, "whole", 1, NULL, NULL);
  CHECK(st && sm_status_code(st) == SM_FAILED_PRECONDITION && strstr(sm_status_message(st), "/etc/hostname"));
  sm_status_free(st);
  int64_t got = 0;
  CHECK_OK(upto(m, "whole", 1, NULL, &got));
  CHECK(got == 1);
  /* a missing file */
  CHECK_OK(enq(m, "tfr", FIXDIR "/data/nope.tfrecord"));
  st = upto(m, "tfr", 1, NULL, NULL);
  CHECK(st && sm_status_code(st) == SM_NOT_FOUND);
  sm_status_free(st);
  /* num_records < 0 */
  st = upto(m, "tfr", -1, NULL, NULL);
  CHECK(st && sm_status_code(st) == SM_INVALID_ARGUMENT && strstr(sm_status_message(st), "num_records"));
  sm_status_free(st);
  sm_model_free(m);
  /* a reload starts with fresh readers and queues */
  m = load();
  if (!m) return;
  CHECK_OK(enq(m, "text", FIXDIR "/data/b.txt"));
  const char *on[2] = {"key", "value"};
  sm_tensor *out[2] = {0};
  CHECK_OK(sm_model_run(m, "text_read", NULL, NULL, 0, on, 2, out));
  size_t n;
  const char *v = out[0] ? sm_tensor_string(out[0], 0, &n) : "";
  CHECK(out[0] && strstr(v, "b.txt:2"));
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_bomb();
  test_hand();
  TEST_MAIN_END();
}
