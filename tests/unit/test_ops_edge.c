/* test_ops_edge.c - hostile and edge inputs for the fast paths of sessions 14-15 against TensorFlow
 * (edge_cases.h, tools/gen_edge_cases.py): the own AVX-512 3x3 depthwise and its fused bias +
 * Relu / Relu6 (odd and tiny images, VALID to one pixel, stride 2 over odd sizes, explicit pads,
 * channel tails, batch 0 and 3, Inf / NaN beside the padding), the row-tiled binary ops
 * (broadcast rows either side, rows wider than a tile, int and double, scalars, rank 5-6, zero-size
 * dims, IEEE division), the AVX-512 exp through Exp / Sigmoid / Softmax / a fused swish (NaN, Inf,
 * -0.0, denormals, the overflow and underflow edges), float Sum / Mean along a strided axis (column
 * blocks and tails, axes of size 0 and 1, keep_dims, NaN / Inf columns, int types), MatMul with 0
 * units, FusedBatchNormV3 with epsilon 0 and zero or negative variance; denormals, which TF flushes
 * (FTZ + DAZ, base/fpmode.h here): every case's TF zeros must be 0 here and its subnormals sit where
 * TF's do (recheck), and the "denormal" cases (division by one, rsqrt, log, a BatchNorm
 * variance of 1e-38) hold TF's flushed answers, left out with SM_FLUSH_DENORMALS=0.
 * NaN through oneDNN's Relu / Relu6 post-ops (the fused convolutions and matmuls it runs): oneDNN
 * maps it to 0, TF keeps NaN; nn_dnnl.c redoes such a product (bench/RESULTS.md, session 17 k1), and
 * with SM_DNNL_RELU_NAN=0 (or off x86-64) those cases are checked only where our own loops run
 * them (test_ops_edge_nodnnl, SM_DNNL=0) and reported here.
 * Floats within 1e-5: of the largest |value| of the expected tensor for sums of products (TF adds
 * in its own order), of each value for the elementwise functions; NaN and Inf exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "base/fpmode.h"
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

/* NaN through a Relu / Relu6 that oneDNN applies (a post-op): its max(x, 0) returns 0, which
 * nn_dnnl.c notices (the invalid flag the max raises) and redoes on x86-64, unless
 * SM_DNNL_RELU_NAN=0: then these cases are left out. The 3x3 depthwise is oneDNN's too without
 * AVX-512 or with SM_NN_DW3X3=0. */
static int relu_nan_redone(void) {
#if defined(__x86_64__)
  const char *e = getenv("SM_DNNL_RELU_NAN");
  return !(e && !strcmp(e, "0"));
#else
  return 0;
#endif
}

static int dnnl_nan_relu(const char *name) {
  const char *a = strrchr(name, ' ');
  int dw = !strncmp(name, "fused dw", 8) && !sm__nn_dw3x3_ok(3, 3, 1, 1, 1, 1, 1);
  return sm__dnnl_enabled() && !relu_nan_redone() &&
         (dw || !strncmp(name, "fused conv nan", 14) || !strncmp(name, "fused matmul nan 4x", 19)) &&
         (!strcmp(a, " Relu") || !strcmp(a, " Relu6"));
}

/* ---- hostile shapes: sizes whose products overflow, outputs no memory holds ---------------- */
#define T_F "attr { key: \"T\" value { type: DT_FLOAT } } "
#define DW_ATTRS(s, pad) \
  T_F "attr { key: \"strides\" value { list { i: 1 i: " s " i: " s " i: 1 } } } attr { key: \"padding\" value { s: \"" pad "\" } } "

/* A float tensor of `dims` (rank r), zero-filled; NULL (a failed check) when it cannot be made. */
static sm_tensor *zeros(int r, const int64_t *dims) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, r, dims, &t));
  return t;
}

/* Runs node over the inputs: it must fail with `needle` in its message, or (needle NULL) succeed. */
static void hostile(const char *what, const char *node, int nin, sm_tensor **in, const char *needle) {
  sm_tensor *out[1] = {0};
  for (int i = 0; i < nin; i++)
    if (!in[i]) return;
  sm_status *st = run_node(node, nin, in, 1, out);
  fprintf(stderr, "hostile %s: %s\n", what, st ? sm_status_message(st) : "ok");
  if (needle && (!st || !strstr(sm_status_message(st), needle))) {
    fprintf(stderr, "hostile %s: want an error with \"%s\"\n", what, needle);
    sm_test_failures++;
  } else if (!needle && st) {
    sm_test_failures++;
  }
  sm_status_free(st);
  sm_tensor_free(out[0]);
  for (int i = 0; i < nin; i++) sm_tensor_free(in[i]);
}

static void test_hostile(void) {
  const int64_t big = (int64_t)1 << 40;
  /* zero-size inputs with huge other dims: empty outputs, nothing read */
  hostile("dw empty batch, huge image", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("1", "SAME"), 2,
          (sm_tensor *[]){zeros(4, (int64_t[]){0, big, big, 17}), zeros(4, (int64_t[]){3, 3, 17, 1})}, NULL);
  hostile("dw huge explicit pads", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("1", "EXPLICIT")
          "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 i: 4611686018427387904 i: 4611686018427387904 i: 0 i: 0 i: 0 i: 0 } } }",
          2, (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 1})}, "window too large");
  hostile("dw pads of 2^40", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("1", "EXPLICIT")
          "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 i: 1099511627776 i: 0 i: 0 i: 1099511627776 i: 0 i: 0 } } }",
          2, (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 1})}, "element count overflows");
  hostile("dw stride 2^62", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("4611686018427387904", "SAME"), 2,
          (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 1})}, "window too large");
  hostile("dw stride 2^30 (TF: one pixel)", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("1073741824", "SAME"), 2,
          (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 1})}, NULL);
  hostile("conv stride 2^30 (TF: one pixel)", "op: \"Conv2D\" " DW_ATTRS("1073741824", "SAME"), 2,
          (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 4})}, NULL);
  hostile("dw dilation 2^62", "op: \"DepthwiseConv2dNative\" " DW_ATTRS("1", "SAME")
          "attr { key: \"dilations\" value { list { i: 1 i: 4611686018427387904 i: 4611686018427387904 i: 1 } } }", 2,
          (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 1})}, "window too large");
  hostile("conv pads 2^62", "op: \"Conv2D\" " DW_ATTRS("1", "EXPLICIT")
          "attr { key: \"explicit_paddings\" value { list { i: 0 i: 0 i: 4611686018427387904 i: 4611686018427387904 i: 0 i: 0 i: 0 i: 0 } } }",
          2, (sm_tensor *[]){zeros(4, (int64_t[]){1, 3, 3, 16}), zeros(4, (int64_t[]){3, 3, 16, 4})}, "window too large");
  /* outputs of 2^40 floats from small operands */
  hostile("Add to 2^40", "op: \"Add\" " T_F, 2,
          (sm_tensor *[]){zeros(2, (int64_t[]){1 << 20, 1}), zeros(2, (int64_t[]){1, 1 << 20})}, "is larger than");
  hostile("Sub to 2^41 rank 6", "op: \"Sub\" " T_F, 2,
          (sm_tensor *[]){zeros(6, (int64_t[]){1 << 20, 1, 1, 1, 2, 1}), zeros(6, (int64_t[]){1, 1 << 20, 1, 1, 1, 1})},
          "is larger than");
  hostile("MatMul to 2^40", "op: \"MatMul\" " T_F, 2,
          (sm_tensor *[]){zeros(2, (int64_t[]){1 << 20, 1}), zeros(2, (int64_t[]){1, 1 << 20})}, "is larger than");
  hostile("Dense of 2^40 units, K 0", "op: \"MatMul\" " T_F, 2,
          (sm_tensor *[]){zeros(2, (int64_t[]){1, 0}), zeros(2, (int64_t[]){0, big})}, "is larger than");
  /* constants and shapes that ask for 2^32+ .. 2^64+ elements from a few bytes (a loaded model's
   * constants are held to the load budget too, sm_load_options; this session has none) */
  hostile("Const splat of 2^32 + 2^16 floats",
          "op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value { tensor { "
          "dtype: DT_FLOAT tensor_shape { dim { size: 65536 } dim { size: 65537 } } float_val: 1 } } }",
          0, NULL, "larger than");
  hostile("Const of 2^62 x 8 floats",
          "op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value { tensor { "
          "dtype: DT_FLOAT tensor_shape { dim { size: 4611686018427387904 } dim { size: 8 } } float_val: 1 } } }",
          0, NULL, "element count overflows");
  sm_tensor *fd = NULL, *fv = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){3}, &fd));
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &fv));
  if (fd) memcpy(sm_tensor_data(fd), (int64_t[]){(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31}, 24);
  hostile("Fill of 2^93 elements", "op: \"Fill\" " T_F "attr { key: \"index_type\" value { type: DT_INT64 } }", 2,
          (sm_tensor *[]){fd, fv}, "element count overflows");
  sm_tensor *bs = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, (int64_t[]){2}, &bs));
  if (bs) memcpy(sm_tensor_data(bs), (int64_t[]){(int64_t)1 << 20, (int64_t)1 << 20}, 16);
  hostile("BroadcastTo 2^40", "op: \"BroadcastTo\" " T_F "attr { key: \"Tidx\" value { type: DT_INT64 } }", 2,
          (sm_tensor *[]){zeros(1, (int64_t[]){1}), bs}, "larger than");
  sm_tensor *axis = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &axis));
  hostile("Sum of 2^40 empty rows", "op: \"Sum\" " T_F "attr { key: \"Tidx\" value { type: DT_INT32 } }", 2,
          (sm_tensor *[]){zeros(2, (int64_t[]){big, 0}), axis}, NULL);
}

/* ---- oneDNN's per-thread memory-object sets (nn_dnnl.c, MEM_SETS 1024, direct-mapped by primitive
 * id): one session's convolution kept while 1100 other sessions' (new primitives, ids running past
 * it, so one of them takes its set) are made, run and freed; after each, the kept one runs again.
 * Every result stays the one its shape gave first. */
static sm_session *conv_session(int64_t co) {
  char g[2048];
  snprintf(g, sizeof g,
           "graph_def { node { name: \"i0\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } } "
           "node { name: \"f\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" "
           "value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 3 } dim { size: 8 } dim { size: "
           "%lld } } float_val: 0.25 } } } } node { name: \"y\" op: \"Conv2D\" input: \"i0\" input: \"f\" %s } }",
           (long long)co, DW_ATTRS("1", "SAME"));
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &s));
  return s;
}

static sm_tensor *conv_run(sm_session *s, sm_tensor *x) {
  const char *feed[1] = {"i0"}, *fetch[1] = {"y"};
  sm_tensor *o = NULL;
  CHECK_OK(sm__session_run(s, feed, &x, 1, fetch, 1, NULL, 0, &o));
  return o;
}

static void test_dnnl_sets(void) {
  int64_t xd[4] = {1, 4, 4, 8};
  sm_tensor *x = zeros(4, xd), *first[6] = {0};
  if (!x) return;
  for (int64_t i = 0; i < 128; i++) ((float *)sm_tensor_data(x))[i] = (float)((i * 37) % 19 - 9) / 8.0f;
  sm_session *kept = conv_session(16);
  if (!kept) goto out;
  first[0] = conv_run(kept, x);
  int bad = 0;
  for (int i = 0; i < 1100 && !bad; i++) {
    int shape = 1 + i % 5;
    sm_session *s = conv_session(4 + shape);
    sm_tensor *o = s ? conv_run(s, x) : NULL, *k = conv_run(kept, x);
    if (!first[shape]) first[shape] = o, o = NULL;
    bad = !o && !first[shape] ? 1 : (o && !sm_tensor_equal(o, first[shape])) || !k || !sm_tensor_equal(k, first[0]);
    sm_tensor_free(o);
    sm_tensor_free(k);
    sm__session_free(s);
  }
  CHECK(!bad);
  sm__session_free(kept);
out:
  for (int i = 0; i < 6; i++) sm_tensor_free(first[i]);
  sm_tensor_free(x);
}

/* Within the tolerance, not the same class: TF's Maximum / Minimum return the flushed operand (+-0,
 * maxps), ours the operand itself; TF's Sign and Log1p of a subnormal differ between its packet
 * path (these cases) and its scalar tail (libm), so neither is TF's one answer. */
static int denormal_unmatched(const char *name) {
  static const char *const n[] = {"Maximum denormal", "Minimum denormal", "Sign denormal", "Log1p denormal"};
  for (size_t i = 0; i < sizeof n / sizeof *n; i++)
    if (!strcmp(name, n[i])) return 1;
  return 0;
}

static int subnormal(int dt, double v) {
  return dt == SM_FLOAT ? fpclassify((float)v) == FP_SUBNORMAL : fpclassify(v) == FP_SUBNORMAL;
}

/* Checks the tolerances of run_case cannot see; runs the case again for its outputs.
 * CHECK_SIGNS, a "signed zero" case: each float 0 of TF's outputs has TF's sign in ours too.
 * CHECK_FLUSHED: TF flushes denormals (FTZ + DAZ around every kernel; base/fpmode.h does the same
 * here): where TF's float or double output is 0, ours is 0 too (not a subnormal left over:
 * exp(-103), tanh(1e-45)), and ours is subnormal exactly where TF's is (a value passed through
 * untouched). Not checked with SM_FLUSH_DENORMALS=0 (IEEE), where TF's zeros are subnormals here. */
enum { CHECK_SIGNS, CHECK_FLUSHED };
static int recheck(const tc_case *c, int what) {
  sm_tensor *in[8] = {0}, *out[8] = {0};
  int bad = 0;
  for (int i = 0; i < c->nin; i++) in[i] = make_tensor(&c->in[i]);
  sm_status *st = run_node(c->node, c->nin, in, c->nout, out);
  for (int k = 0; !st && k < c->nout; k++) {
    int dt = sm_tensor_dtype(out[k]);
    if (dt != SM_FLOAT && (what == CHECK_SIGNS || dt != SM_DOUBLE)) continue;
    sm_tensor *want = make_tensor(&c->out[k]);
    for (int64_t e = 0; want && e < sm_tensor_num_elements(want); e++) {
      double w = tc_elem(want, e), g = tc_elem(out[k], e);
      int off = what == CHECK_SIGNS ? w == 0 && (g != 0 || signbit(g) != signbit(w))
                                    : (w == 0 && g != 0 && fabs(g) < 1e-30) || subnormal(dt, w) != subnormal(dt, g);
      if (off && !bad++)
        fprintf(stderr, "case '%s': output %d [%lld] is %g, TF's %g (%s)\n", c->name, k, (long long)e, g, w,
                what == CHECK_SIGNS ? "signed zero" : "denormals");
    }
    sm_tensor_free(want);
  }
  if (st) bad++;
  sm_status_free(st);
  for (int i = 0; i < 8; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]);
  if (bad) sm_test_failures++;
  return bad != 0;
}

/* ---- row tiles split over the pool (math_binary.c bin_tiled): outputs of 2^16+ elements, pieces
 * that start and end inside a block of rows; each element one IEEE operation, so C's own float /
 * double arithmetic is the exact answer (TF's too). x [n0, n1, c] against y [c] or [n0, 1, c],
 * either side. */
static void tiled_vs_exact(int64_t n0, int64_t n1, int64_t c, int per_image, int swap, int dbl) {
  int dt = dbl ? SM_DOUBLE : SM_FLOAT;
  int64_t xd[3] = {n0, n1, c}, yd[3] = {n0, 1, c};
  sm_tensor *x = NULL, *y = NULL, *out[1] = {0};
  CHECK_OK(sm_tensor_new(dt, 3, xd, &x));
  CHECK_OK(sm_tensor_new(dt, per_image ? 3 : 1, per_image ? yd : yd + 2, &y));
  if (!x || !y) goto out;
  int64_t nx = sm_tensor_num_elements(x), ny = sm_tensor_num_elements(y);
  for (int64_t i = 0; i < nx; i++) {
    double v = (double)((i * 7919) % 2003 - 1001) / 64.0;
    dbl ? (void)(((double *)sm_tensor_data(x))[i] = v) : (void)(((float *)sm_tensor_data(x))[i] = (float)v);
  }
  for (int64_t i = 0; i < ny; i++) {
    double v = (double)((i * 104729) % 997 + 1) / 32.0 * (i % 3 ? 1 : -1);
    dbl ? (void)(((double *)sm_tensor_data(y))[i] = v) : (void)(((float *)sm_tensor_data(y))[i] = (float)v);
  }
  static const char *const ops[] = {"Sub", "RealDiv", "Mul"};
  for (int o = 0; o < 3; o++) {
    char node[160];
    snprintf(node, sizeof node, "op: \"%s\" attr { key: \"T\" value { type: %s } }", ops[o], dbl ? "DT_DOUBLE" : "DT_FLOAT");
    sm_tensor *in[2] = {swap ? y : x, swap ? x : y};
    CHECK_OK(run_node(node, 2, in, 1, out));
    if (!out[0]) continue;
    int64_t bad = 0;
    for (int64_t i = 0; i < nx; i++) {
      int64_t yi = per_image ? (i / (n1 * c)) * c + i % c : i % c;
      double a = dbl ? ((double *)sm_tensor_data(x))[i] : ((float *)sm_tensor_data(x))[i];
      double b = dbl ? ((double *)sm_tensor_data(y))[yi] : ((float *)sm_tensor_data(y))[yi];
      if (swap) {
        double t = a;
        a = b, b = t;
      }
      if (dbl) {
        double w = o == 0 ? a - b : o == 1 ? a / b : a * b;
        bad += memcmp(&w, (double *)sm_tensor_data(out[0]) + i, sizeof w) != 0;
      } else {
        float fa = (float)a, fb = (float)b, w = o == 0 ? fa - fb : o == 1 ? fa / fb : fa * fb;
        bad += memcmp(&w, (float *)sm_tensor_data(out[0]) + i, sizeof w) != 0;
      }
    }
    if (bad) {
      fprintf(stderr, "%s [%lld,%lld,%lld] against %s%s: %lld elements differ\n", ops[o], (long long)n0, (long long)n1,
              (long long)c, per_image ? "[n0,1,c]" : "[c]", swap ? " (swapped)" : "", (long long)bad);
      sm_test_failures++;
    }
    sm_tensor_free(out[0]);
    out[0] = NULL;
  }
out:
  sm_tensor_free(x);
  sm_tensor_free(y);
}

/* ---- float Sum / Mean along a strided axis split over the pool (math_reduce.c: columns split
 * for one outer block, pieces starting off a 64-column boundary; outer blocks split otherwise): each
 * output is row 0 + row 1 + ... in order, then + 0, then / count for Mean: C's float sum in that
 * order is the exact answer bit for bit (TF's sum, in its own order, is within tolerance). */
static void strided_sum_exact(int64_t outer, int64_t r, int64_t inner) {
  int64_t xd[3] = {outer, r, inner};
  sm_tensor *in[2] = {zeros(3, xd), NULL}, *out[1] = {0};
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &in[1]));
  if (!in[0] || !in[1]) goto out;
  float *x = sm_tensor_data(in[0]);
  for (int64_t i = 0; i < outer * r * inner; i++) x[i] = (float)((i * 7919) % 4001 - 2000) / 3.0f;
  *(int32_t *)sm_tensor_data(in[1]) = 1;
  for (int mean = 0; mean < 2; mean++) {
    CHECK_OK(run_node(mean ? "op: \"Mean\" " T_F "attr { key: \"Tidx\" value { type: DT_INT32 } }"
                           : "op: \"Sum\" " T_F "attr { key: \"Tidx\" value { type: DT_INT32 } }",
                      2, in, 1, out));
    if (!out[0]) continue;
    int64_t bad = 0;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        float acc = x[o * r * inner + i];
        for (int64_t k = 1; k < r; k++) acc += x[(o * r + k) * inner + i];
        acc += 0.0f;
        if (mean) acc /= (float)r;
        bad += memcmp(&acc, (float *)sm_tensor_data(out[0]) + o * inner + i, sizeof acc) != 0;
      }
    if (bad) {
      fprintf(stderr, "%s [%lld,%lld,%lld] axis 1: %lld outputs differ\n", mean ? "Mean" : "Sum", (long long)outer,
              (long long)r, (long long)inner, (long long)bad);
      sm_test_failures++;
    }
    sm_tensor_free(out[0]);
    out[0] = NULL;
  }
out:
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
}

/* NaN through oneDNN's Relu / Relu6 post-ops, called directly: a 1x1 convolution over 16 channels
 * to 32 with a bias, a residual addend (apart from the output, or the output itself: summed in
 * place, where nn_dnnl.c runs the activation after the product) and act, and a matmul with act;
 * NaN in the input, in the addend, and made on the way (Inf - Inf); -Inf to 0 / 6 rather than NaN.
 * Every element against the plain loop: NaN where it is, the rest within 1e-5. */
static void dnnl_relu_nan(void) {
  if (!relu_nan_redone()) return;
  sm__dnnl_cache *c = NULL;
  CHECK_OK(sm__dnnl_cache_new(&c));
  if (!c) return;
  enum { P = 36, CI = 16, CO = 32 };
  static float x[P * CI], w[CI * CO], b[CO], add[P * CO], y[P * CO], want[P * CO];
  for (int i = 0; i < P * CI; i++) x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  for (int i = 0; i < CI * CO; i++) w[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
  for (int i = 0; i < CO; i++) b[i] = (float)(i % 5) / 8.0f - 0.25f;
  x[3 * CI + 2] = NAN;                           /* pixel 3: NaN in every channel out */
  x[7 * CI + 1] = INFINITY, x[7 * CI + 2] = INFINITY; /* pixel 7: +-Inf, so Inf - Inf where w differ in sign */
  x[11 * CI + 0] = -INFINITY;                    /* pixel 11: -Inf or +Inf by w's sign */
  for (int k = 0; k < 6; k++) {
    int act = k % 3 == 0 ? SM_NN_ACT_RELU : k % 3 == 1 ? SM_NN_ACT_RELU6 : SM_NN_ACT_NONE, inplace = k >= 3;
    for (int i = 0; i < P * CO; i++) add[i] = (float)((i * 29) % 89) / 89.0f - 0.5f;
    add[20 * CO + 5] = NAN; /* pixel 20, channel 5: NaN from the addend */
    for (int o = 0; o < P * CO; o++) {
      float v = b[o % CO];
      for (int i = 0; i < CI; i++) v += x[(o / CO) * CI + i] * w[i * CO + o % CO];
      v += add[o];
      want[o] = act == SM_NN_ACT_NONE ? v : !(v <= 0) ? (act == SM_NN_ACT_RELU6 && v > 6 ? 6 : v) : 0;
    }
    float *out = y;
    if (inplace) memcpy(y, add, sizeof y), out = y;
    sm__dnnl_conv_args a = {1, 6, 6, CI, 6, 6, 1, 1, CO, 1, 1, 1, 1, 1, 0, 0, x, w, b, 900 + (uint64_t)k,
                            out, act, 0.0f, inplace ? y : add};
    int declined = 0;
    CHECK_OK(sm__dnnl_conv(c, &a, NULL, &declined));
    if (declined) break; /* no oneDNN here */
    int bad = 0;
    for (int o = 0; o < P * CO; o++) {
      int ok = isnan(want[o]) ? isnan(y[o]) : y[o] == want[o] || fabsf(y[o] - want[o]) <= 1e-5f * (1 + fabsf(want[o]));
      if (!ok && !bad++)
        fprintf(stderr, "dnnl conv act %d %s: [%d] is %g, want %g\n", act, inplace ? "in place" : "addend", o, y[o],
                want[o]);
    }
    CHECK_EQ_INT(bad, 0);
    /* the same product as a matmul [36 x 16] x [16 x 32] with bias and act, no addend */
    sm__dnnl_mm_args m = {P, CO, CI, CI, 0, 0, x, w, b, 950 + (uint64_t)k, y, act, 0.0f};
    CHECK_OK(sm__dnnl_matmul(c, &m, NULL, &declined));
    bad = 0;
    for (int o = 0; !declined && o < P * CO; o++) {
      float v = b[o % CO]; /* as above without the addend */
      for (int i = 0; i < CI; i++) v += x[(o / CO) * CI + i] * w[i * CO + o % CO];
      if (act != SM_NN_ACT_NONE) v = !(v <= 0) ? (act == SM_NN_ACT_RELU6 && v > 6 ? 6 : v) : 0;
      int ok = isnan(v) ? isnan(y[o]) : y[o] == v || fabsf(y[o] - v) <= 1e-5f * (1 + fabsf(v));
      if (!ok && !bad++) fprintf(stderr, "dnnl matmul act %d: [%d] is %g, want %g\n", act, o, y[o], v);
    }
    CHECK_EQ_INT(bad, 0);
  }
  sm__dnnl_cache_free(c);
}

int main(void) {
  tc_tolerance = 1e-5;
  int bad = 0, known = 0, ieee = 0;
  size_t n = sizeof edge_cases / sizeof *edge_cases;
  for (size_t i = 0; i < n; i++) {
    tc_scale_tolerance = !elementwise(edge_cases[i].name);
    if (dnnl_nan_relu(edge_cases[i].name)) {
      known++;
      continue;
    }
    if (!sm__fpmode_flushes() && strstr(edge_cases[i].name, "denormal")) { /* IEEE: not TF's answers */
      ieee++;
      continue;
    }
    int failed = run_case(&edge_cases[i]);
    if (!failed && strstr(edge_cases[i].name, "signed zero")) failed = recheck(&edge_cases[i], CHECK_SIGNS);
    if (!failed && !edge_cases[i].err && sm__fpmode_flushes() && !denormal_unmatched(edge_cases[i].name))
      failed = recheck(&edge_cases[i], CHECK_FLUSHED);
    bad += failed;
  }
  test_hostile();
  dnnl_relu_nan();
  test_dnnl_sets();
  strided_sum_exact(1, 200, 1000); /* columns split: grain 327, off the 64-column blocks */
  strided_sum_exact(1, 70, 1111);
  strided_sum_exact(5, 3, 4500);  /* outer blocks split */
  strided_sum_exact(3, 150, 700);
  for (int k = 0; k < 4; k++) {
    tiled_vs_exact(5, 13, 1000, k & 1, k >> 1, 0); /* 65000 elements: split, blocks of 13 rows */
    tiled_vs_exact(3, 1031, 33, k & 1, k >> 1, 0); /* rows of 132 bytes, 62 to a tile */
    tiled_vs_exact(7, 9, 1111, k & 1, k >> 1, 1);  /* double rows of 8888 bytes: none to a tile */
    tiled_vs_exact(2, 4097, 9, k & 1, k >> 1, 1);
  }
  printf("edge: %zu cases, %d failed, %d left to SM_DNNL=0 (oneDNN's Relu maps NaN to 0), %d to flushed denormals\n", n,
         bad, known, ieee);
  (void)run_node;
  TEST_MAIN_END();
}
