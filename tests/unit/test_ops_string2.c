/* test_ops_string2.c - the regex kernels (src/ops/regex.c, RE2 through its module), the text
 * kernels (src/ops/text.c) and the ragged ones (src/ops/ragged.c) against TensorFlow: the cases
 * tools/gen_string2_cases.py generated (TF 2.21's outputs and error texts), each run as a one-node
 * graph; plus the regex ops without RE2 (SM_RE2_MODULE pointing at nothing) failing UNIMPLEMENTED.
 * Skips the regex cases (77 when nothing else ran) when the library was built without RE2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "string2_cases.h"
#include "tc_case_run.h"

static int is_regex(const char *name) {
  return !strncmp(name, "StaticRegex", 11) || !strncmp(name, "Regex", 5);
}

int main(int argc, char **argv) {
  /* A child run (argv[1] "nore2") checks the missing-module path in a fresh process: the module is
   * opened once per process. */
  if (argc > 1 && !strcmp(argv[1], "nore2")) {
    setenv("SM_RE2_MODULE", "/nonexistent/libsavedmodel_re2.so", 1);
    sm_tensor *in[1] = {NULL}, *out[1] = {0};
    CHECK_OK(sm_tensor_new(SM_STRING, 1, (int64_t[]){1}, &in[0]));
    sm_status *s = run_node("op: \"StaticRegexReplace\" attr { key: \"pattern\" value { s: \"a\" } } "
                            "attr { key: \"rewrite\" value { s: \"b\" } }", 1, in, 1, out);
    CHECK(s && sm_status_code(s) == SM_UNIMPLEMENTED && strstr(sm_status_message(s), "RE2"));
    sm_status_free(s);
    sm_tensor_free(in[0]);
    TEST_MAIN_END();
  }
  int have_re2 = access(SM_BINARY_DIR "/libsavedmodel_re2.so", R_OK) == 0;
  int bad = 0, ran = 0;
  size_t n = sizeof string2_cases / sizeof *string2_cases;
  for (size_t i = 0; i < n; i++) {
    if (is_regex(string2_cases[i].name) && !have_re2) continue;
    bad += run_case(&string2_cases[i]);
    ran++;
  }
  printf("string2: %d of %zu cases run, %d failed\n", ran, n, bad);
  CHECK(bad == 0);
  /* RaggedBincount with weights of another length than values: TF reads past the weights; refused */
  {
    sm_tensor *in[4] = {0}, *out[1] = {0};
    CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){2}, &in[0]));
    CHECK_OK(sm_tensor_new(SM_INT32, 1, (int64_t[]){3}, &in[1]));
    CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &in[2]));
    CHECK_OK(sm_tensor_new(SM_FLOAT, 1, (int64_t[]){2}, &in[3]));
    ((int64_t *)sm_tensor_data(in[0]))[1] = 3;
    *(int32_t *)sm_tensor_data(in[2]) = 4;
    CHECK_ERR(run_node("op: \"RaggedBincount\" attr { key: \"T\" value { type: DT_FLOAT } } "
                       "attr { key: \"Tidx\" value { type: DT_INT32 } }", 4, in, 1, out),
              "Weights and values must have the same shape");
    for (int i = 0; i < 4; i++) sm_tensor_free(in[i]);
  }
  /* StringNGrams: one short sequence kept and padded 2^30 times each side: refused, not built (TF
   * would overflow an int and fill the memory) */
  {
    sm_tensor *in[2] = {0}, *out[2] = {0};
    CHECK_OK(sm_tensor_new(SM_STRING, 1, (int64_t[]){1}, &in[0]));
    CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){2}, &in[1]));
    ((int64_t *)sm_tensor_data(in[1]))[1] = 1;
    CHECK_ERR(run_node("op: \"StringNGrams\" attr { key: \"Tsplits\" value { type: DT_INT64 } } "
                       "attr { key: \"ngram_widths\" value { list { } } } "
                       "attr { key: \"pad_width\" value { i: 1073741824 } } attr { key: \"left_pad\" value { s: \"L\" } } "
                       "attr { key: \"right_pad\" value { s: \"R\" } } attr { key: \"separator\" value { s: \" \" } } "
                       "attr { key: \"preserve_short_sequences\" value { b: true } }", 2, in, 2, out),
              "over 2^31 bytes");
    for (int i = 0; i < 2; i++) sm_tensor_free(in[i]);
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' nore2", argv[0]);
  CHECK(system(cmd) == 0);
  TEST_MAIN_END();
}
