/* test_ops_image.c - the image resize kernels (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic,
 * ResizeArea) run through a session on image_cases.h: cases whose answers TensorFlow computed
 * (tools/gen_image_cases.py) over every attr combination (align_corners, half_pixel_centers), up-,
 * down- and same-size resizes, size-1 dimensions, every registered input dtype, an empty batch, a
 * case large enough for the parallel path, and TF's error cases with its message substrings. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_cases.h"
#include "ops/math_int.h" /* half / bfloat16 conversions */
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "tf_case_elems.h" /* set_elem, get_elem */

static double im_input_value(char kind, int seed, int64_t i, int dtype) {
  int64_t v = (i * 37 + seed * 11) % 19;
  v = kind == 's' ? v - 9 : v + 1;
  int integer = dtype != SM_FLOAT && dtype != SM_DOUBLE && dtype != SM_HALF && dtype != SM_BFLOAT16;
  return integer ? (double)v : (double)v / 8.0;
}

#define TFC_CASE im_case
#define TFC_INPUT im_input
#define TFC_OUTPUT im_output
#define TFC_OPDEFS im_opdefs
#define TFC_INPUT_VALUE im_input_value
#include "tf_case_run.h"

/* Sizes no allocator can meet, and an op given a dtype it has no kernel for: an error, never a
 * crash (the size checks come before any loop). */
static void hostile(void) {
  char *mg = metagraph(im_cases[0].op, im_cases[0].graph_def);
  int64_t idims[4] = {1, 2, 2, 1}, two = 2;
  sm_tensor *ins[2] = {0}, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, idims, &ins[0]));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &two, &ins[1]));
  if (ins[0] && ins[1]) {
    int32_t *sz = sm_tensor_data(ins[1]);
    sz[0] = 2147483647, sz[1] = 2147483647;
    int f0 = 0;
    sm_status *st = run_graph(mg, ins, 2, &f0, 1, &out);
    CHECK(st != NULL);
    sm_status_free(st);
    sm_tensor_free(out);
  }
  for (int i = 0; i < 2; i++) sm_tensor_free(ins[i]);
  free(mg);
}

int main(void) {
  for (size_t i = 0; i < sizeof im_cases / sizeof *im_cases; i++) run_tf_case(&im_cases[i]);
  hostile();
  printf("%zu TensorFlow cases run\n", sizeof im_cases / sizeof *im_cases);
  TEST_MAIN_END();
}
