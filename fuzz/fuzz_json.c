/* fuzz_json.c - libFuzzer target: bytes as a REST request body through the serve layer's JSON
 * decoder (src/serve/json_tensor.c): as a predict body against a signature of five inputs (one of
 * each dtype family: float, int64, string, bool, double), then as a classify/regress body. A
 * predict request that decodes is written back as a response (sm__json_write_tensors, row
 * or columnar, as the request was). tests/unit/test_fuzz_regressions.c includes this
 * file with FUZZ_JSON_ENTRY renamed.
 * fuzz-requires: src/serve/json_tensor.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int FUZZ_JSON_ENTRY(const uint8_t *data, size_t size) {
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
