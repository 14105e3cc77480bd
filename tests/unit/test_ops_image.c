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

static double im_input_value(char kind, int seed, int64_t i, int dtype) {
  int64_t v = (i * 37 + seed * 11) % 19;
  v = kind == 's' ? v - 9 : v + 1;
  int integer = dtype != SM_FLOAT && dtype != SM_DOUBLE && dtype != SM_HALF && dtype != SM_BFLOAT16;
  return integer ? (double)v : (double)v / 8.0;
}

static void set_elem(sm_tensor *t, int64_t i, double v) {
  void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)d)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)d)[i] = v; break;
    case SM_HALF: ((uint16_t *)d)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)d)[i] = sm__f32_to_bf16((float)v); break;
    case SM_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case SM_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case SM_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
    case SM_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case SM_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case SM_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
  }
}

static double get_elem(const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)d)[i];
    case SM_DOUBLE: return ((const double *)d)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)d)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)d)[i]);
    case SM_INT8: return ((const int8_t *)d)[i];
    case SM_UINT8: return ((const uint8_t *)d)[i];
    case SM_INT16: return ((const int16_t *)d)[i];
    case SM_UINT16: return ((const uint16_t *)d)[i];
    case SM_INT32: return ((const int32_t *)d)[i];
    case SM_INT64: return (double)((const int64_t *)d)[i];
  }
  return NAN;
}

static const char *opdefs_for(const char *op) {
  for (size_t i = 0; i < sizeof im_opdefs / sizeof *im_opdefs; i++)
    if (!strcmp(im_opdefs[i][0], op)) return im_opdefs[i][1];
  return "";
}

static char *metagraph(const char *op, const char *graph_def) {
  const char *ops = opdefs_for(op);
  size_t n = strlen(ops) + strlen(graph_def) + 128;
  char *s = malloc(n);
  snprintf(s, n, "meta_info_def { stripped_op_list { %s } } graph_def { %s }", ops, graph_def);
  return s;
}

/* |got - want| <= tol * (1 + |want|): relative for large values, absolute near zero. */
static int close_enough(double got, double want, double tol) {
  if (isnan(want)) return isnan(got);
  return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* Runs a session over `mg` feeding in0..in{n-1}, fetching y:k for each k; returns the status. */
static sm_status *run_graph(const char *mg, sm_tensor **ins, int nin, const int *fetch, int nfetch, sm_tensor **outs) {
  sm_session *s;
  sm_status *st = sm__session_from_pbtxt(mg, &s);
  if (st) return st;
  char fnames[8][16], onames[8][16];
  const char *feeds[8], *fetches[8];
  for (int i = 0; i < nin; i++) {
    snprintf(fnames[i], sizeof fnames[i], "in%d:0", i);
    feeds[i] = fnames[i];
  }
  for (int i = 0; i < nfetch; i++) {
    snprintf(onames[i], sizeof onames[i], "y:%d", fetch[i]);
    fetches[i] = onames[i];
  }
  st = sm__session_run(s, feeds, ins, nin, fetches, nfetch, NULL, 0, outs);
  sm__session_free(s);
  return st;
}

static void run_tf_case(const im_case *c) {
  sm_tensor *ins[5] = {0}, *outs[6] = {0};
  char *mg = metagraph(c->op, c->graph_def);
  int fetch[6];
  for (int i = 0; i < c->nin; i++) {
    const im_input *in = &c->in[i];
    CHECK_OK(sm_tensor_new(in->dtype, in->rank, in->dims, &ins[i]));
    if (!ins[i]) goto out;
    for (int64_t e = 0; e < sm_tensor_num_elements(ins[i]); e++)
      set_elem(ins[i], e, in->lit ? in->lit[e] : im_input_value(in->kind, in->seed, e, in->dtype));
  }
  int nf = c->err ? 1 : c->nout;
  for (int k = 0; k < nf; k++) fetch[k] = c->err ? 0 : c->out[k].index;
  sm_status *st = run_graph(mg, ins, c->nin, fetch, nf, outs);
  if (c->err) {
    if (!st) {
      fprintf(stderr, "case %s: succeeded, expected error \"%s\"\n", c->name, c->err);
      sm_test_failures++;
    } else if (!strstr(sm_status_message(st), c->err)) {
      fprintf(stderr, "case %s: error \"%s\" lacks \"%s\"\n", c->name, sm_status_message(st), c->err);
      sm_test_failures++;
    }
    sm_status_free(st);
    goto out;
  }
  if (st) {
    fprintf(stderr, "case %s: %s\n", c->name, sm_status_message(st));
    sm_status_free(st);
    sm_test_failures++;
    goto out;
  }
  for (int k = 0; k < c->nout; k++) {
    const im_output *o = &c->out[k];
    const sm_tensor *t = outs[k];
    int ok = sm_tensor_dtype(t) == o->dtype && sm_tensor_rank(t) == o->rank;
    for (int d = 0; ok && d < o->rank; d++) ok = sm_tensor_dims(t)[d] == o->dims[d];
    if (!ok) {
      char b1[128], b2[128];
      fprintf(stderr, "case %s output %d: got %s %s, want %s %s\n", c->name, o->index,
              sm_dtype_name(sm_tensor_dtype(t)), sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b1, sizeof b1),
              sm_dtype_name(o->dtype), sm_shape_str(o->rank, o->dims, b2, sizeof b2));
      sm_test_failures++;
      continue;
    }
    int bad = 0;
    double tol = o->dtype == SM_FLOAT ? 1e-5 : o->dtype == SM_DOUBLE ? 1e-12 : 0;
    for (int64_t e = 0; e < o->n; e++) {
      double g = get_elem(t, e), w = o->vals[e];
      if (!close_enough(g, w, tol)) {
        if (bad++ < 5) fprintf(stderr, "case %s output %d [%lld]: got %.9g, want %.9g\n", c->name, o->index, (long long)e, g, w);
      }
    }
    if (bad) sm_test_failures++;
  }
out:
  for (int i = 0; i < 5; i++) sm_tensor_free(ins[i]);
  for (int i = 0; i < 6; i++) sm_tensor_free(outs[i]);
  free(mg);
}

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
