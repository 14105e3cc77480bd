/* ds_sig_run.h - running the signatures of a saved tf.data test model (test_ops_f6, test_ops_tfdata):
 * the generated headers' feed and row types, a signature run twice against TF's rows, and a
 * run of a signature that takes one int64 scalar `n` and gives `x`, and a fixture model loaded and
 * all its signatures run. */
#ifndef SM_TEST_DS_SIG_RUN_H
#define SM_TEST_DS_SIG_RUN_H
#include <stdio.h>
#include <string.h>

#include "array_case.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "tc_case_run.h"
#include "test.h"

/* a signature's feeds (in its input-name order), then its outputs: key, TF's value or error */
typedef struct ds_feed { const char *sig; int n; const char *names[2]; tc_tensor in[2]; } ds_feed;
typedef struct ds_row { const char *sig; const char *key; tc_tensor want; const char *err; } ds_row;

/* Runs f's signature twice (nothing of a run's iterators or seed generators outlives it): its
 * outputs must equal the rows' bit for bit, or the run fail with their error text. */
static void ds_run_sig(sm_model *m, const ds_feed *f, const ds_row *rows, int nrows) {
  const char *keys[16];
  tc_tensor want[16];
  const char *err = NULL;
  int n = 0;
  for (int i = 0; i < nrows && n < 16; i++)
    if (!strcmp(rows[i].sig, f->sig)) {
      keys[n] = rows[i].key;
      want[n++] = rows[i].want;
      if (rows[i].err) err = rows[i].err;
    }
  sm_tensor *in[2] = {0}, *out[16] = {0};
  for (int i = 0; i < f->n; i++) in[i] = make_tensor(&f->in[i]);
  for (int rep = 0; rep < 2; rep++) {
    sm_status *st = sm_model_run(m, f->sig, f->names, in, f->n, keys, n, out);
    for (int k = 0; k < n; k += 8) {
      char nm[200];
      snprintf(nm, sizeof nm, "%s run %d [exact] (%s..)", f->sig, rep, keys[k]);
      tc_check(nm, err, st, n - k < 8 ? n - k : 8, want + k, out + k);
      if (err) break;
    }
    sm_status_free(st);
    for (int k = 0; k < n; k++) sm_tensor_free(out[k]), out[k] = NULL;
  }
  for (int i = 0; i < f->n; i++) sm_tensor_free(in[i]);
}

static sm_status *ds_run_i64(sm_model *m, const char *sig, int64_t v, const sm_run_options *o, sm_tensor **out) {
  sm_tensor *in = NULL;
  sm_status *st = sm_tensor_new(SM_INT64, 0, NULL, &in);
  if (st) return st;
  *(int64_t *)sm_tensor_data(in) = v;
  const char *name = "n";
  st = sm_model_run_opts(m, sig, &name, &in, 1, (const char *[]){"x"}, 1, out, o);
  sm_tensor_free(in);
  return st;
}

/* tests/fixtures/datasets/<name> loaded and every feed's signature run against rows; the model
 * (NULL if it did not load: a check failed). */
static inline sm_model *ds_run_fixture(const char *name, const ds_feed *feeds, int nfeeds, const ds_row *rows, int nrows) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/datasets/%s", SM_SOURCE_DIR, name);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  if (!m) return NULL;
  for (int i = 0; i < nfeeds; i++) ds_run_sig(m, &feeds[i], rows, nrows);
  printf("%s: %d signatures, %d rows\n", name, nfeeds, nrows);
  return m;
}

#endif
