/* test_ops_edge.c - hostile and edge inputs for the fast paths of sessions 14-15 against TensorFlow
 * (edge_cases.h, tools/gen_edge_cases.py): the own AVX-512 3x3 depthwise and its fused bias +
 * Relu / Relu6 (odd and tiny images, VALID to one pixel, stride 2 over odd sizes, explicit pads,
 * channel tails, batch 0 and 3, Inf / NaN beside the padding), the row-tiled binary ops
 * (broadcast rows either side, rows wider than a tile, int and double, scalars, rank 5-6, zero-size
 * dims, IEEE division), the AVX-512 exp through Exp / Sigmoid / Softmax / a fused swish (NaN, Inf,
 * -0.0, denormals, the overflow and underflow edges), float Sum / Mean along a strided axis (column
 * blocks and tails, axes of size 0 and 1, keep_dims, NaN / Inf columns, int types), MatMul with 0
 * units, FusedBatchNormV3 with epsilon 0 and zero or negative variance.
 * Known difference, not fixed: oneDNN's Relu / Relu6 post-ops (the fused convolutions and matmuls
 * it runs) map NaN to 0 where TF keeps NaN (bench/RESULTS.md, session 16 h7); those cases are
 * checked where our own loops run them (test_ops_edge_nodnnl, SM_DNNL=0) and reported here.
 * Floats within 1e-5: of the largest |value| of the expected tensor for sums of products (TF adds
 * in its own order), of each value for the elementwise functions; NaN and Inf exactly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "edge_cases.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"
#include "tc_case_run.h"

/* Elementwise functions of one value: each within 1e-5 of itself, not of the tensor's largest. */
static int elementwise(const char *name) {
  static const char *const pre[] = {"Exp", "Sigmoid", "Tanh", "Elu", "Selu", "Softplus", "Expm1", "Softmax",
                                    "LogSoftmax", "fused matmul"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
    if (!strncmp(name, pre[i], strlen(pre[i]))) return 1;
  return 0;
}

/* NaN through a Relu / Relu6 that oneDNN applies (a post-op): its max(x, 0) returns 0. The 3x3
 * depthwise is oneDNN's too without AVX-512 or with SM_NN_DW3X3=0. */
static int dnnl_nan_relu(const char *name) {
  const char *a = strrchr(name, ' ');
  int dw = !strncmp(name, "fused dw", 8) && !sm__nn_dw3x3_ok(3, 3, 1, 1, 1, 1, 1);
  return sm__dnnl_enabled() &&
         (dw || !strncmp(name, "fused conv nan", 14) || !strncmp(name, "fused matmul nan 4x", 19)) &&
         (!strcmp(a, " Relu") || !strcmp(a, " Relu6"));
}

int main(void) {
  tc_tolerance = 1e-5;
  int bad = 0, known = 0;
  size_t n = sizeof edge_cases / sizeof *edge_cases;
  for (size_t i = 0; i < n; i++) {
    tc_scale_tolerance = !elementwise(edge_cases[i].name);
    if (dnnl_nan_relu(edge_cases[i].name)) {
      known++;
      continue;
    }
    bad += run_case(&edge_cases[i]);
  }
  printf("edge: %zu cases, %d failed, %d left to SM_DNNL=0 (oneDNN's Relu maps NaN to 0)\n", n, bad, known);
  (void)run_node;
  TEST_MAIN_END();
}
