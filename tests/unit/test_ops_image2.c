/* test_ops_image2.c - the colour and geometric image kernels (RGBToHSV, HSVToRGB, AdjustContrastv2,
 * AdjustHue, AdjustSaturation, ImageProjectiveTransformV3, CropAndResize) run through a session on
 * image2_cases.h: TensorFlow's answers (tools/gen_image2_cases.py) for every fill mode and
 * interpolation, perspective transforms, boxes inside, outside and flipped, every dtype TF's CPU
 * kernels take, empty inputs and TF's error cases; then inputs TF itself cannot take (a hue delta
 * its loop never finishes, sizes no allocator meets), which must give an answer or an error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image2_cases.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "tf_case_elems.h" /* set_elem, get_elem */

static double i2_input_value(char kind, int seed, int64_t i, int dtype) {
  if (kind == 'b') return (double)((i * 37 + seed * 11) % 256);
  int64_t v = (i * 37 + seed * 11) % 19;
  if (kind == 'u') return (double)v / 18.0;
  v = kind == 's' ? v - 9 : v + 1;
  int integer = dtype != SM_FLOAT && dtype != SM_DOUBLE && dtype != SM_HALF && dtype != SM_BFLOAT16;
  return integer ? (double)v : (double)v / 8.0;
}

#define TFC_CASE i2_case
#define TFC_INPUT i2_input
#define TFC_OUTPUT i2_output
#define TFC_OPDEFS i2_opdefs
#define TFC_INPUT_VALUE i2_input_value
#include "tf_case_run.h"

static const i2_case *find_case(const char *name) {
  for (size_t i = 0; i < sizeof i2_cases / sizeof *i2_cases; i++)
    if (!strcmp(i2_cases[i].name, name)) return &i2_cases[i];
  return NULL;
}

/* Runs case `name`'s graph on the given scalar/vector literal inputs over a small image. */
static sm_status *run_with(const char *name, sm_tensor **ins, int nin, sm_tensor **out) {
  const i2_case *c = find_case(name);
  CHECK(c != NULL);
  if (!c) return sm_status_new(SM_INTERNAL, "no case %s", name);
  char *mg = metagraph(c->op, c->graph_def);
  int f0 = 0;
  sm_status *st = run_graph(mg, ins, nin, &f0, 1, out);
  free(mg);
  return st;
}

static sm_tensor *scalar_f(float v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &t));
  if (t) *(float *)sm_tensor_data(t) = v;
  return t;
}

static sm_tensor *vec_i32(int32_t a, int32_t b) {
  int64_t two = 2;
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &two, &t));
  if (t) ((int32_t *)sm_tensor_data(t))[0] = a, ((int32_t *)sm_tensor_data(t))[1] = b;
  return t;
}

static void hostile(void) {
  int64_t idims[4] = {1, 2, 2, 3};
  sm_tensor *img = NULL, *out = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, idims, &img));
  if (!img) return;
  for (int i = 0; i < 12; i++) ((float *)sm_tensor_data(img))[i] = (float)i / 11.0f;
  /* TF loops forever on these deltas (h - 6 == h); here they end, in range */
  float deltas[] = {1e30f, -3e38f, INFINITY, NAN};
  for (int k = 0; k < 4; k++) {
    sm_tensor *ins[2] = {img, scalar_f(deltas[k])};
    sm_status *st = run_with("hue_grey", ins, 2, &out);
    CHECK(st == NULL);
    sm_status_free(st);
    sm_tensor_free(out), out = NULL;
    sm_tensor_free(ins[1]);
  }
  /* an output no allocator can meet: an error, not a crash */
  int64_t tdims[2] = {1, 8};
  sm_tensor *tr = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, tdims, &tr));
  if (tr) {
    float *t = sm_tensor_data(tr);
    memset(t, 0, 8 * sizeof *t);
    t[0] = t[4] = 1;
    sm_tensor *ins[4] = {img, tr, vec_i32(2147483647, 2147483647), scalar_f(0)};
    sm_status *st = run_with("proj_default_mode", ins, 4, &out);
    CHECK(st != NULL);
    sm_status_free(st);
    sm_tensor_free(out), out = NULL;
    /* NaN and huge transforms land on the fill value or a clamped pixel, never out of bounds */
    float bad[] = {NAN, 1e30f, -1e30f, INFINITY};
    for (int k = 0; k < 4; k++) {
      for (int e = 0; e < 8; e++) t[e] = e == 6 || e == 7 ? 0 : bad[(k + e) % 4];
      sm_tensor_free(ins[2]);
      ins[2] = vec_i32(3, 3);
      const char *names[] = {"proj_default_mode", "proj_bcast_resize", "proj_rot_BILINEAR_WRAP", "proj_rot_NEAREST_REFLECT"};
      for (int m = 0; m < 4; m++) {
        st = run_with(names[m], ins, 4, &out);
        CHECK(st == NULL);
        sm_status_free(st);
        sm_tensor_free(out), out = NULL;
      }
    }
    sm_tensor_free(ins[2]);
    sm_tensor_free(ins[3]);
    sm_tensor_free(tr);
  }
  /* a crop size no allocator can meet */
  int64_t bd[2] = {1, 4}, one = 1;
  sm_tensor *boxes = NULL, *bi = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, bd, &boxes));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &one, &bi));
  if (boxes && bi) {
    float *b = sm_tensor_data(boxes);
    b[0] = b[1] = 0, b[2] = b[3] = 1;
    *(int32_t *)sm_tensor_data(bi) = 0;
    sm_tensor *ins[4] = {img, boxes, bi, vec_i32(2147483647, 2147483647)};
    sm_status *st = run_with("crop_inside_bilinear_4x5", ins, 4, &out);
    CHECK(st != NULL);
    sm_status_free(st);
    sm_tensor_free(out), out = NULL;
    sm_tensor_free(ins[3]);
    /* finite boxes whose span overflows float: inf - inf sample positions are extrapolated */
    b[0] = b[1] = -3e38f, b[2] = b[3] = 3e38f;
    ins[3] = vec_i32(3, 3);
    st = run_with("crop_inside_bilinear_4x5", ins, 4, &out);
    CHECK(st == NULL);
    sm_status_free(st);
    sm_tensor_free(out);
    sm_tensor_free(ins[3]);
  }
  sm_tensor_free(boxes);
  sm_tensor_free(bi);
  sm_tensor_free(img);
}

int main(void) {
  for (size_t i = 0; i < sizeof i2_cases / sizeof *i2_cases; i++) run_tf_case(&i2_cases[i]);
  hostile();
  printf("%zu TensorFlow cases run\n", sizeof i2_cases / sizeof *i2_cases);
  TEST_MAIN_END();
}
