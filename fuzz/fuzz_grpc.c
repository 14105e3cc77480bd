/* fuzz_grpc.c - libFuzzer target: bytes as a gRPC request through serve/grpc_api.c. The first
 * byte picks the method (Predict, Classify, Regress, MultiInference, GetModelMetadata,
 * GetModelStatus); the rest is the request message, decoded, checked and run against a real
 * model (the zoo's tf1_classify_regress, served as model "m" and loaded once). Reload is left
 * out: a fuzzed config would point the manager at arbitrary paths.
 * The model is found under $SM_FUZZ_ROOT (default: the current directory, the repository root).
 * fuzz-requires: src/serve/grpc_api.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/lsan_interface.h>

#include "serve/grpc_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static sm_rest *fg_rest;

/* The model loads once, before any input, with leak checking off: it stays loaded for the whole
 * run, and part of what points at its tensors lives where LeakSanitizer does not look. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  static char base[] = "/tmp/sm_fuzz_grpc_XXXXXX";
  if (!mkdtemp(base)) abort();
  const char *root = getenv("SM_FUZZ_ROOT") ? getenv("SM_FUZZ_ROOT") : ".";
  char model[4096], link[4200];
  if (!realpath(root, model)) abort();
  strncat(model, "/tests/fixtures/zoo/tf1_classify_regress/model", sizeof model - strlen(model) - 1);
  snprintf(link, sizeof link, "%s/1", base);
  if (symlink(model, link)) abort();
  __lsan_disable();
  sm_manager *m = NULL;
  sm_manager_options mo = {.num_threads = 1};
  sm_model_config mc = {.name = "m", .base_path = base, .policy = SM_POLICY_LATEST, .latest_n = 1};
  sm_rest_options ro = {0};
  if (sm__manager_new(&mo, &m) || sm__manager_set_config(m, &mc, 1)) abort();
  ro.manager = m;
  if (sm__rest_new(&ro, &fg_rest)) abort();
  __lsan_enable();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const methods[] = {
      "/tensorflow.serving.PredictionService/Predict",        "/tensorflow.serving.PredictionService/Classify",
      "/tensorflow.serving.PredictionService/Regress",        "/tensorflow.serving.PredictionService/MultiInference",
      "/tensorflow.serving.PredictionService/GetModelMetadata", "/tensorflow.serving.ModelService/GetModelStatus"};
  if (!size) return 0;
  sm_grpc_reply rep;
  sm__grpc_api_call(fg_rest, methods[data[0] % 6], data + 1, size - 1, 0, &rep);
  if ((rep.code == SM_GRPC_OK) != (rep.body != NULL) || !rep.message) abort();
  sm__grpc_reply_clear(&rep);
  return 0;
}
