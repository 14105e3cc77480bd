/* test_ops_csr.c - the CSRSparseMatrix ops (src/ops/csr.c) against TensorFlow: chain cases generated
 * by tools/gen_csr_cases.py (a matrix made from placeholders, the op under test, the result read back
 * as a SparseTensor, a dense tensor, components or NNZ; or TF's error text), floats within 1e-5
 * relative; every case again with a mutated input (hostile indices and shapes: an error, never a
 * crash); and hand tests for what TF's chains cannot show (a variant of another type, a hostile
 * dense_shape). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "csr_cases.h"
#include "tc_case_run.h"
#include "tc_chain_run.h"

/* A SparseTensor of dense_shape [2^40, 2^40]: refused with a message, nothing huge allocated. */
static void test_hostile_shape(void) {
  static const tc_case c = {"hostile", "input: \"i0\" input: \"i1\" input: \"i2\" op: \"SparseTensorToCSRSparseMatrix\" attr { key: \"T\" value { type: DT_FLOAT } }|"
                                       "input: \"n0\" op: \"SparseMatrixNNZ\"",
                            3,
                            {{SM_INT64, 2, {1, 2}, "0 0"}, {SM_FLOAT, 1, {1}, "1.0"}, {SM_INT64, 1, {2}, "1099511627776 1099511627776"}},
                            0,
                            {{0}},
                            "too large"};
  CHECK(run_chain(&c) == 0);
}

/* A variant of another kind (a TensorMap) fed to a CSR op. */
static void test_wrong_variant(void) {
  static const tc_case c = {"wrong variant", "op: \"EmptyTensorMap\"|input: \"n0\" op: \"SparseMatrixNNZ\"", 0, {{0}}, 0, {{0}},
                            "must be a CSRSparseMatrix"};
  CHECK(run_chain(&c) == 0);
}

int main(void) {
  (void)run_case; /* tc_case_run.h's single-node runner: every case here is a chain */
  tc_tolerance = 1e-5;
  int bad = 0;
  size_t n = sizeof csr_cases / sizeof *csr_cases;
  for (size_t i = 0; i < n; i++) bad += run_chain(&csr_cases[i]);
  printf("csr: %zu cases, %d failed\n", n, bad);
  CHECK(bad == 0);
  test_hostile_shape();
  test_wrong_variant();
  test_mutations("csr", csr_cases, n, 1);
  TEST_MAIN_END();
}
