/* fuzz_json.c - libFuzzer target: bytes as a REST request body through the serve layer's JSON
 * decoder (src/serve/json_tensor.c): as a predict body against a signature of five inputs (one of
 * each dtype family: float, int64, string, bool, double), then as a classify/regress body. A
 * predict request that decodes is written back as a response (sm__json_write_tensors, row
 * or columnar, as the request was). The DOM reader (json_dom.c) is also driven directly: a body
 * that reads must read again under a limit of exactly what its first read said it needs, must be
 * refused one byte under it, and its DOM is walked to the last value (packed arrays unpacked).
 * A body the numeric fast path (json_fast.c) takes must decode to the same request through the
 * DOM decoder.
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_JSON_ENTRY renamed.
 * fuzz-requires: src/serve/json_tensor.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/json_dom.h"
#include "serve/json_tensor.h"

#ifndef FUZZ_JSON_ENTRY
#define FUZZ_JSON_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_JSON_ENTRY(const uint8_t *data, size_t size);

static const sm_json_input fjs_inputs[] = {
    {"b", SM_BOOL}, {"d", SM_DOUBLE}, {"i", SM_INT64}, {"s", SM_STRING}, {"x", SM_FLOAT}};

static sm_status *fjs_sig(void *ctx, const char *name, const sm_json_input **inputs, int *n) {
  (void)ctx;
  if (name && *name && strcmp(name, "serving_default") && strcmp(name, "one")) {
    return sm_status_new(SM_INVALID_ARGUMENT, "no signature '%s'", name);
  }
  if (name && !strcmp(name, "one")) { /* a single input: the bare-value forms apply */
    *inputs = &fjs_inputs[4];
    *n = 1;
    return NULL;
  }
  *inputs = fjs_inputs;
  *n = (int)(sizeof fjs_inputs / sizeof fjs_inputs[0]);
  return NULL;
}

/* Touches every value; returns how many there are. */
static size_t fjs_walk(const jv *v) {
  size_t n = 1;
  if (v->type == J_STR && v->s[v->n]) abort(); /* NUL-terminated */
  if (v->type == J_ARR)
    for (uint32_t i = 0; i < v->n; i++) {
      jv t;
      n += fjs_walk(jarr_at(v, i, &t));
    }
  if (v->type == J_OBJ)
    for (uint32_t i = 0; i < v->n; i++) {
      if (jobj_key(v, i)->type != J_STR) abort();
      n += fjs_walk(jobj_val(v, i));
    }
  return n;
}

static void fjs_dom(const char *body, size_t size) {
  arena a = {0};
  const char *err;
  size_t off, need = 0, need2 = 0;
  jv *d = sm__json_read(body, size, &a, (size_t)1 << 30, &err, &off, &need);
  sm__json_arena_free(&a);
  if (!d) return;
  /* a body that reads says exactly what it needs: it reads under that limit, not one byte under */
  if (!need) abort();
  arena c = {0};
  d = sm__json_read(body, size, &c, need, &err, &off, &need2);
  if (!d || need2 != need) abort();
  (void)fjs_walk(d);
  sm__json_arena_free(&c);
  arena e = {0};
  if (sm__json_read(body, size, &e, need - 1, &err, &off, &need2) || need2 != need || e.head) abort();
  sm__json_arena_free(&e);
}

/* The fast path against the DOM decoder, on the bodies it takes. */
static void fjs_fast(const char *body, size_t size) {
  sm_predict_request f = {0}, d = {0};
  if (!sm__json_fast_predict(body, size, fjs_sig, NULL, &f)) {
    if (f.n || f.tensors || f.signature_name) abort(); /* declining leaves nothing behind */
    return;
  }
  sm_status *s = sm__json_dom_predict(body, size, fjs_sig, NULL, &d);
  if (s || f.n != 1 || d.n != 1 || f.format != d.format || strcmp(f.signature_name, d.signature_name) ||
      strcmp(f.aliases[0], d.aliases[0]) || !sm_tensor_equal(f.tensors[0], d.tensors[0]))
    abort();
  sm__predict_request_clear(&f);
  sm__predict_request_clear(&d);
}

int FUZZ_JSON_ENTRY(const uint8_t *data, size_t size) {
  fjs_dom((const char *)data, size);
  fjs_fast((const char *)data, size);
  sm_predict_request r = {0};
  sm_status *s = sm__json_parse_predict((const char *)data, size, fjs_sig, NULL, &r);
  if (!s) {
    for (int i = 0; i < r.n; i++)
      if (!r.tensors[i] || !r.aliases[i]) abort();
    sm_jbuf b = {0};
    sm_status *w = sm__json_write_tensors(&b, (const char *const *)r.aliases, r.tensors, r.n, r.format);
    sm_status_free(w);
    sm__jbuf_free(&b);
  } else {
    (void)sm_status_message(s);
    sm_status_free(s);
  }
  sm__predict_request_clear(&r);

  sm_examples_request e = {0};
  s = sm__json_parse_examples((const char *)data, size, &e);
  if (!s)
    for (int i = 0; i < e.n; i++)
      if (!e.examples[i] && e.lens[i]) abort();
  sm_status_free(s);
  sm__examples_request_clear(&e);
  return 0;
}
