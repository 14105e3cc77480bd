/* test_ops_string.c - the string kernels of src/ops/string_ops.c (StringLower/Upper, StringStrip,
 * Substr, StringToNumber, ReduceJoin, StringToHashBucketFast/Strong) against TensorFlow: the cases
 * tools/gen_string_cases.py generated (TF 2.21's outputs and error texts; strings with spaces,
 * empty strings and UTF-8 bytes), each run as a one-node graph; plus hostile attrs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "string_cases.h"
#include "tc_case_run.h"

/* Bad attrs fail at load, naming what is wrong. */
static void test_bad_attrs(void) {
  sm_tensor *in[1] = {NULL}, *out[1] = {0};
  CHECK_OK(sm_tensor_new(SM_STRING, 1, (int64_t[]){1}, &in[0]));
  CHECK_ERR(run_node("op: \"StringToHashBucketFast\" attr { key: \"num_buckets\" value { i: 0 } }", 1, in, 1, out),
            "num_buckets");
  CHECK_ERR(run_node("op: \"StringLower\" attr { key: \"encoding\" value { s: \"latin1\" } }", 1, in, 1, out), "encoding");
  CHECK_ERR(run_node("op: \"StringToHashBucketStrong\" attr { key: \"num_buckets\" value { i: 3 } } "
                     "attr { key: \"key\" value { list { i: 1 } } }", 1, in, 1, out), "Key must have 2 elements");
  sm_tensor_free(in[0]);
}

int main(void) {
  int bad = 0;
  size_t n = sizeof string_cases / sizeof *string_cases;
  for (size_t i = 0; i < n; i++) bad += run_case(&string_cases[i]);
  printf("string: %zu cases, %d failed\n", n, bad);
  test_bad_attrs();
  TEST_MAIN_END();
}
