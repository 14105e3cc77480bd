/* test_ops_conv_transpose.c - the nn_conv_transpose kernels (Conv2DBackpropInput, Conv3D,
 * Conv3DBackpropInputV2, MaxPool3D, AvgPool3D) run through a session:
 *   - conv_transpose_cases.h: small cases whose answers TensorFlow computed
 *     (tools/gen_conv_transpose_cases.py), graphs exported by TF with stripped default attrs;
 *   - larger random cases (parallel paths) checked by the adjoint identity that defines the
 *     input gradient: sum(conv(x, f) * dy) == sum(x * backprop_input(f, dy)), with our Conv2D
 *     (nn family) and Conv3D as the forward ops;
 *   - bad attrs and hostile shapes, which must fail with a message, never crash. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_transpose_cases.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#define TFC_NN_ELEMS
#define TFC_CASE nn_case
#define TFC_INPUT nn_input
#define TFC_OUTPUT nn_output
#define TFC_OPDEFS nn_opdefs
#define TFC_INPUT_VALUE nn_input_value
#include "tf_case_run.h"

/* ---- hand-built graphs ----------------------------------------------------------------------- */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static sm_tensor *rand_tensor(int rank, const int64_t *dims) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (!t) exit(1);
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) p[i] = frand();
  return t;
}

static sm_tensor *sizes_tensor(int n, const int64_t *v) {
  int64_t d = n;
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d, &t));
  if (!t) exit(1);
  for (int i = 0; i < n; i++) ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v[i];
  return t;
}

/* One op `op` over placeholders in0.. of the given dtypes (DT_...), with `attrs`. */
static char *graph_n(const char *op, int nin, const char *const *dtypes, const char *attrs) {
  size_t cap = 4096 + strlen(attrs);
  char *g = malloc(cap);
  size_t n = 0;
  for (int i = 0; i < nin; i++)
    n += (size_t)snprintf(g + n, cap - n, "node { name: \"in%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } } ",
                          i, dtypes[i]);
  n += (size_t)snprintf(g + n, cap - n, "node { name: \"y\" op: \"%s\"", op);
  for (int i = 0; i < nin; i++) n += (size_t)snprintf(g + n, cap - n, " input: \"in%d\"", i);
  snprintf(g + n, cap - n, " attr { key: \"T\" value { type: DT_FLOAT } } %s }", attrs);
  char *mg = metagraph(op, g);
  free(g);
  return mg;
}

static sm_tensor *run1(const char *op, int nin, const char *const *dtypes, const char *attrs, sm_tensor **ins) {
  char *mg = graph_n(op, nin, dtypes, attrs);
  sm_tensor *out = NULL;
  int f0 = 0;
  sm_status *st = run_graph(mg, ins, nin, &f0, 1, &out);
  if (st) {
    fprintf(stderr, "%s with %s: %s\n", op, attrs, sm_status_message(st));
    sm_test_failures++;
    sm_status_free(st);
  }
  free(mg);
  return out;
}

static double dot(const sm_tensor *a, const sm_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(a); i++)
    s += (double)((const float *)sm_tensor_data(a))[i] * (double)((const float *)sm_tensor_data(b))[i];
  return s;
}

static double asum(const sm_tensor *a) {
  double s = 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(a); i++) s += fabs((double)((const float *)sm_tensor_data(a))[i]);
  return s;
}

/* <conv(x, f), dy> == <x, backprop_input(sizes(x), f, dy)> for random x, f, dy; nd = 2 or 3
 * spatial dims; xd is NHWC / NDHWC, fd the filter, st/dl the spatial strides/dilations. */
static void adjoint(int nd, const int64_t *xd, const int64_t *fd, const int64_t *st, const int64_t *dl, int same) {
  int r = nd + 2;
  char attrs[512], sl[64] = "i: 1 ", dlst[64] = "i: 1 ";
  for (int a = 0; a < nd; a++) {
    size_t n = strlen(sl), m = strlen(dlst);
    snprintf(sl + n, sizeof sl - n, "i: %lld ", (long long)st[a]);
    snprintf(dlst + m, sizeof dlst - m, "i: %lld ", (long long)dl[a]);
  }
  snprintf(attrs, sizeof attrs,
           "attr { key: \"strides\" value { list { %si: 1 } } } attr { key: \"padding\" value { s: \"%s\" } } "
           "attr { key: \"dilations\" value { list { %si: 1 } } }",
           sl, same ? "SAME" : "VALID", dlst);
  sm_tensor *x = rand_tensor(r, xd), *f = rand_tensor(r, fd);
  sm_tensor *fin[2] = {x, f};
  const char *ff[2] = {"DT_FLOAT", "DT_FLOAT"}, *bf[3] = {"DT_INT32", "DT_FLOAT", "DT_FLOAT"};
  sm_tensor *y = run1(nd == 2 ? "Conv2D" : "Conv3D", 2, ff, attrs, fin);
  if (!y) goto out1;
  sm_tensor *dy = rand_tensor(r, sm_tensor_dims(y)), *sz = sizes_tensor(r, xd);
  sm_tensor *bin[3] = {sz, f, dy};
  sm_tensor *dx = run1(nd == 2 ? "Conv2DBackpropInput" : "Conv3DBackpropInputV2", 3, bf, attrs, bin);
  if (dx) {
    CHECK(sm_tensor_rank(dx) == r && !memcmp(sm_tensor_dims(dx), xd, (size_t)r * sizeof *xd));
    double lhs = dot(y, dy), rhs = dot(x, dx), scale = asum(y) + asum(dx) + 1.0;
    if (fabs(lhs - rhs) > 1e-5 * scale) {
      fprintf(stderr, "adjoint %dd: <conv x, dy> = %.9g, <x, dx> = %.9g\n", nd, lhs, rhs);
      sm_test_failures++;
    }
    CHECK(asum(dx) > 0); /* not vacuous */
  }
  sm_tensor_free(dx);
  sm_tensor_free(dy);
  sm_tensor_free(sz);
  sm_tensor_free(y);
out1:
  sm_tensor_free(x);
  sm_tensor_free(f);
}

/* One op over inputs of the given ranks/dims must fail at load or run with `needle`. */
static void expect_error(const char *op, int nin, const char *const *dtypes, sm_tensor **ins, const char *attrs,
                         const char *needle) {
  char *mg = graph_n(op, nin, dtypes, attrs);
  sm_tensor *out = NULL;
  int f0 = 0;
  sm_status *st = run_graph(mg, ins, nin, &f0, 1, &out);
  if (!st) {
    fprintf(stderr, "%s with %s: succeeded, expected \"%s\"\n", op, attrs, needle);
    sm_test_failures++;
  } else if (!strstr(sm_status_message(st), needle)) {
    fprintf(stderr, "%s with %s: error \"%s\" lacks \"%s\"\n", op, attrs, sm_status_message(st), needle);
    sm_test_failures++;
  }
  sm_status_free(st);
  sm_tensor_free(out);
  free(mg);
}

#define ATTRS(strides, pad, extra) \
  "attr { key: \"strides\" value { list { " strides " } } } attr { key: \"padding\" value { s: \"" pad "\" } } " extra
#define S5 "i: 1 i: 1 i: 1 i: 1 i: 1"
#define K5 "attr { key: \"ksize\" value { list { i: 1 i: 2 i: 2 i: 2 i: 1 } } }"

static void bad_attrs(void) {
  const int64_t x5[5] = {1, 4, 4, 4, 2}, f5[5] = {2, 2, 2, 2, 2}, f4[4] = {3, 3, 2, 2},
                g4[4] = {1, 3, 3, 2}, m2[2] = {2, 2};
  const char *ff[2] = {"DT_FLOAT", "DT_FLOAT"}, *bf[3] = {"DT_INT32", "DT_FLOAT", "DT_FLOAT"};
  sm_tensor *c[2] = {rand_tensor(5, x5), rand_tensor(5, f5)};
  expect_error("Conv3D", 2, ff, c, ATTRS("i: 1 i: 1 i: 1 i: 1", "SAME", ""), "must specify 5 dimensions");
  expect_error("Conv3D", 2, ff, c, ATTRS("i: 2 i: 1 i: 1 i: 1 i: 1", "SAME", ""), "strides in the batch and depth");
  expect_error("Conv3D", 2, ff, c, ATTRS("i: 1 i: 0 i: 1 i: 1 i: 1", "SAME", ""), "strides must be positive");
  expect_error("Conv3D", 2, ff, c, ATTRS(S5, "EXPLICIT", ""), "padding 'EXPLICIT'");
  expect_error("Conv3D", 2, ff, c,
               ATTRS(S5, "SAME", "attr { key: \"dilations\" value { list { i: 1 i: 0 i: 1 i: 1 i: 1 } } }"),
               "Dilated rates should be larger than 0");
  expect_error("Conv3D", 2, ff, c,
               ATTRS(S5, "SAME", "attr { key: \"dilations\" value { list { i: 1 i: 1 i: 1 i: 1 i: 2 } } }"),
               "dilation rates in the batch and depth");
  expect_error("MaxPool3D", 1, ff, c, ATTRS(S5, "VALID", ""), "ksize");
  expect_error("AvgPool3D", 1, ff, c,
               ATTRS(S5, "VALID", "attr { key: \"ksize\" value { list { i: 1 i: 0 i: 2 i: 2 i: 1 } } }"),
               "ksize field must have non-negative dimensions");
  expect_error("AvgPool3D", 1, ff, c,
               ATTRS(S5, "VALID", "attr { key: \"ksize\" value { list { i: 2 i: 1 i: 2 i: 2 i: 1 } } }"),
               "Pooling is not yet supported on the batch dimension.");
  expect_error("MaxPool3D", 1, ff, c, ATTRS("i: 1 i: 1 i: 1 i: 1 i: 2", "VALID", K5),
               "Pooling is not yet supported on the depth dimension.");
  sm_tensor_free(c[0]);
  /* no input channels: C / filter depth is 0 groups (a division by zero before) */
  const int64_t x0[5] = {1, 4, 4, 4, 0};
  c[0] = rand_tensor(5, x0);
  expect_error("Conv3D", 2, ff, c, ATTRS(S5, "SAME", ""), "smaller than the filter depth");
  sm_tensor_free(c[0]);
  const int64_t x0n[5] = {1, 0, 4, 4, 4}; /* the same in NCDHW */
  c[0] = rand_tensor(5, x0n);
  expect_error("Conv3D", 2, ff, c, ATTRS(S5, "SAME", "attr { key: \"data_format\" value { s: \"NCDHW\" } }"),
               "smaller than the filter depth");
  sm_tensor_free(c[0]);
  sm_tensor_free(c[1]);
  /* Conv2DBackpropInput: hostile input_sizes and shapes */
  const int64_t bad_sizes[4] = {1, 5, 5, 3};
  sm_tensor *b[3] = {sizes_tensor(4, bad_sizes), rand_tensor(4, f4), rand_tensor(4, g4)};
  expect_error("Conv2DBackpropInput", 3, bf, b, ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID", ""),
               "Gradients for grouped convolutions are not supported on CPU");
  expect_error("Conv2DBackpropInput", 3, bf, b, ATTRS("i: 1 i: 1 i: 1", "VALID", ""), "must specify 4 dimensions");
  expect_error("Conv2DBackpropInput", 3, bf, b,
               ATTRS("i: 1 i: 1 i: 1 i: 1", "EXPLICIT", "attr { key: \"explicit_paddings\" value { list { i: 1 } } }"),
               "explicit_paddings attribute must contain 8 values");
  sm_tensor_free(b[0]);
  b[0] = rand_tensor(2, m2); /* float sizes: refused by the placeholder's dtype check or the kernel */
  const char *bf2[3] = {"DT_FLOAT", "DT_FLOAT", "DT_FLOAT"};
  expect_error("Conv2DBackpropInput", 3, bf2, b, ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID", ""), "input_sizes");
  sm_tensor_free(b[0]);
  CHECK_OK(sm_tensor_new(SM_INT32, 2, (int64_t[]){2, 2}, &b[0]));
  for (int i = 0; b[0] && i < 4; i++) ((int32_t *)sm_tensor_data(b[0]))[i] = 5;
  expect_error("Conv2DBackpropInput", 3, bf, b, ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID", ""), "must be 1-dim, not 2");
  sm_tensor_free(b[0]);
  const int64_t huge[4] = {1, 2000000000, 5, 2};
  b[0] = sizes_tensor(4, huge);
  expect_error("Conv2DBackpropInput", 3, bf, b, ATTRS("i: 1 i: 1 i: 1 i: 1", "VALID", ""),
               "Size of out_backprop doesn't match computed");
  sm_tensor_free(b[0]);
  for (int i = 1; i < 3; i++) sm_tensor_free(b[i]);
}

int main(void) {
  for (size_t i = 0; i < sizeof nn_cases / sizeof *nn_cases; i++) run_tf_case(&nn_cases[i]);
  /* adjoint identity at sizes that take the parallel paths */
  adjoint(2, (int64_t[]){3, 17, 19, 8}, (int64_t[]){3, 3, 8, 16}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 1);
  adjoint(2, (int64_t[]){2, 20, 23, 6}, (int64_t[]){4, 3, 6, 12}, (int64_t[]){2, 3}, (int64_t[]){1, 1}, 1);
  adjoint(2, (int64_t[]){2, 21, 18, 4}, (int64_t[]){3, 2, 4, 8}, (int64_t[]){2, 2}, (int64_t[]){2, 3}, 0);
  adjoint(3, (int64_t[]){2, 7, 9, 8, 4}, (int64_t[]){3, 3, 2, 4, 8}, (int64_t[]){1, 2, 2}, (int64_t[]){1, 1, 1}, 1);
  adjoint(3, (int64_t[]){1, 9, 8, 7, 3}, (int64_t[]){2, 2, 3, 3, 5}, (int64_t[]){2, 1, 2}, (int64_t[]){2, 1, 2}, 0);
  bad_attrs();
  printf("%zu TensorFlow cases, adjoint identities and bad-attr checks run\n", sizeof nn_cases / sizeof *nn_cases);
  TEST_MAIN_END();
}
