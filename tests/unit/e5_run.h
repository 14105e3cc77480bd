/* e5_run.h - replays a generated call sequence (e5_call.h: f5_calls.h, accum_calls.h, staging_cases.h) on a loaded
 * model: each call's inputs in, TF's outputs or TF's error text compared (err_tail, when given, picks
 * the part of TF's text to look for). Tests that include it define nothing else of its names. */
#ifndef SM_TEST_E5_RUN_H
#define SM_TEST_E5_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e5_call.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

/* The TF1 SavedModel in dir, tag "serve" (NULL, a failure counted, when it does not load). */
static inline sm_model *e5_load(const char *dir) {
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  return m;
}

/* An int32 or int64 scalar. */
static inline sm_tensor *e5_scalar(int dtype, int64_t v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dtype, 0, NULL, &t));
  if (t && dtype == SM_INT64) *(int64_t *)sm_tensor_data(t) = v;
  if (t && dtype == SM_INT32) *(int32_t *)sm_tensor_data(t) = (int32_t)v;
  return t;
}

/* When set, every string of the calls (inputs, TF's outputs and error texts) passes through it: a
 * malloc'd replacement of s[0..len) (*n its length; NULL: out of memory). test_ops_readers puts its
 * fixture directory in place of TF's. */
static char *(*e5_string_hook)(const char *s, size_t len, size_t *n);

static sm_tensor *e5_tensor_of(const e5_tensor *e) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(e->dtype, e->rank, e->dims, &t));
  for (int64_t i = 0; t && i < e->n; i++) {
    if (e->dtype == SM_STRING && e5_string_hook) {
      size_t n;
      char *v = e5_string_hook(e->s[i], e->l[i], &n);
      CHECK(v != NULL);
      if (v) CHECK_OK(sm_tensor_set_string(t, i, v, n));
      free(v);
    } else if (e->dtype == SM_STRING)
      CHECK_OK(sm_tensor_set_string(t, i, e->s[i], e->l[i]));
    else
      memcpy((char *)sm_tensor_data(t) + (size_t)i * sm_dtype_size(e->dtype),
             (const char *)e->data + (size_t)i * sm_dtype_size(e->dtype), sm_dtype_size(e->dtype));
  }
  return t;
}

/* Every call gets a 20 s deadline: none of the generated ones waits. */
static void e5_run_calls(sm_model *m, const e5_call *calls, int ncalls, const char *(*err_tail)(const char *)) {
  for (int ci = 0; ci < ncalls; ci++) {
    const e5_call *c = &calls[ci];
    sm_tensor *in[8] = {0}, *out[8] = {0};
    const char *inames[8], *onames[8];
    for (int i = 0; i < c->nin; i++) {
      inames[i] = c->in[i].name;
      in[i] = e5_tensor_of(&c->in[i].t);
    }
    int nout = c->nout;
    if (c->err) {
      const sm_tensor_info *infos;
      CHECK_OK(sm_model_signature_outputs(m, c->sig, &infos, &nout));
      for (int i = 0; i < nout && i < 8; i++) onames[i] = infos[i].alias;
    } else {
      for (int i = 0; i < nout; i++) onames[i] = c->out[i].name;
    }
    sm_run_options ro = {.deadline_us = sm_monotonic_us() + 20 * 1000 * 1000};
    sm_status *st = sm_model_run_opts(m, c->sig, inames, in, c->nin, onames, nout, out, &ro);
    if (c->err) {
      size_t wn;
      char *hooked = e5_string_hook ? e5_string_hook(c->err, strlen(c->err), &wn) : NULL;
      const char *want = hooked ? hooked : c->err;
      if (!st || !strstr(sm_status_message(st), err_tail ? err_tail(want) : want)) {
        fprintf(stderr, "call %d (%s): got \"%s\", TF fails with \"%s\"\n", ci, c->sig, st ? sm_status_message(st) : "ok",
                want);
        sm_test_failures++;
      }
      free(hooked);
      sm_status_free(st);
    } else if (st) {
      fprintf(stderr, "call %d (%s): %s\n", ci, c->sig, sm_status_message(st));
      sm_test_failures++;
      sm_status_free(st);
    } else {
      for (int i = 0; i < nout; i++) {
        sm_tensor *want = e5_tensor_of(&c->out[i].t);
        if (!want || !sm_tensor_equal(out[i], want)) {
          fprintf(stderr, "call %d (%s): output '%s' differs from TF\n", ci, c->sig, onames[i]);
          sm_test_failures++;
        }
        sm_tensor_free(want);
      }
    }
    for (int i = 0; i < 8; i++) {
      sm_tensor_free(in[i]);
      sm_tensor_free(out[i]);
    }
  }
}

#endif
