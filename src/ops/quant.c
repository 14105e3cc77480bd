/* quant.c - the quant kernel family: the fake-quantization ops quantization-aware training leaves
 * in an exported graph (tf.quantization.fake_quant_with_min_max_args / _vars / _vars_per_channel;
 * found missing by tools/sweep_ops.py, session 17): FakeQuantWithMinMaxArgs (attrs min, max),
 * FakeQuantWithMinMaxVars (scalar min, max inputs) and FakeQuantWithMinMaxVarsPerChannel (one
 * [min, max] per last-axis channel), with num_bits and narrow_range. As TF's functor
 * (fake_quant_ops_functor.h): the range is nudged so that zero is exactly representable
 * (zero point rounded half away from zero, clamped to [quant_min, quant_max]), inputs are
 * clamped to the nudged range and rounded to the grid with floor(x / scale + 0.5), all in
 * float; a [0, 0] range gives zeros. TF's messages for bad attrs. And their gradients
 * (FakeQuantWithMinMaxArgsGradient, ...VarsGradient, ...VarsPerChannelGradient: session 20, e1,
 * tests/unit/test_ops_e1.c). Checked against TensorFlow by
 * tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef struct fq_state {
  int kind; /* 0 args, 1 vars, 2 per channel */
  float min, max;
  int64_t bits;
  int narrow;
} fq_state;

static sm_status *fq_prepare(const sm_node *node, void **state) {
  fq_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  s->kind = !strncmp(op, "FakeQuantWithMinMaxArgs", 23) ? 0 : strstr(op, "PerChannel") ? 2 : 1;
  s->min = -6, s->max = 6, s->bits = 8;
  sm_status *st = NULL;
  if (sm__node_attr(node, "num_bits")) st = sm__node_attr_int(node, "num_bits", &s->bits);
  if (!st && sm__node_attr(node, "narrow_range")) st = sm__node_attr_bool(node, "narrow_range", &s->narrow);
  if (!st && s->kind == 0 && sm__node_attr(node, "min")) st = sm__node_attr_float(node, "min", &s->min);
  if (!st && s->kind == 0 && sm__node_attr(node, "max")) st = sm__node_attr_float(node, "max", &s->max);
  if (!st && (s->bits < 2 || s->bits > 16))
    st = sm_status_new(SM_INVALID_ARGUMENT, "num_bits must be between 2 and 16, inclusive");
  if (!st && s->kind == 0 && !(s->min < s->max))
    st = sm_status_new(SM_INVALID_ARGUMENT, "min has to be smaller than max, was: %g >= %g", s->min, s->max);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* TF's Nudge: the range moved so that zero is on the grid. */
static void fq_nudge(float min, float max, int qmin, int qmax, float *nmin, float *nmax, float *scale) {
  float qminf = (float)qmin, qmaxf = (float)qmax;
  *scale = (max - min) / (qmaxf - qminf);
  float zp_from_min = qminf - min / *scale;
  /* a NaN min or max: TF's cast of the NaN gives 0 on x86 (cvttss2si); the outputs are NaN either way */
  uint16_t zp = zp_from_min != zp_from_min ? 0
                : zp_from_min < qminf      ? (uint16_t)qmin
                : zp_from_min > qmaxf      ? (uint16_t)qmax
                                           : (uint16_t)roundf(zp_from_min);
  *nmin = (qminf - zp) * *scale, *nmax = (qmaxf - zp) * *scale;
}

/* one channel: x[i * stride] for i < n */
static void fq_run(const float *x, float *y, int64_t n, int64_t stride, float min, float max, int qmin, int qmax) {
  if (min == 0.0f && max == 0.0f) {
    for (int64_t i = 0; i < n; i++) y[i * stride] = 0.0f;
    return;
  }
  float nmin, nmax, scale;
  fq_nudge(min, max, qmin, qmax, &nmin, &nmax, &scale);
  float inv = 1.0f / scale;
  for (int64_t i = 0; i < n; i++) {
    float v = x[i * stride];
    float c = fmaxf(fminf(v, nmax), nmin); /* Eigen cwiseMin then cwiseMax */
    if (v != v) c = v;
    y[i * stride] = floorf((c - nmin) * inv + 0.5f) * scale + nmin;
  }
}

static sm_status *fq_compute(const void *state, sm_kctx *ctx) {
  const fq_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_FLOAT) return sm__math_bad_dtype("FakeQuantWithMinMax", sm_tensor_dtype(x));
  int qmin = s->narrow ? 1 : 0, qmax = (1 << s->bits) - 1;
  sm_tensor *y;
  sm_status *st;
  if (s->kind == 2) {
    const sm_tensor *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
    int r = sm_tensor_rank(x);
    if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "inputs must be at least rank 1");
    int64_t c = sm_tensor_dims(x)[r - 1];
    if (sm_tensor_rank(mn) != 1 || sm_tensor_dims(mn)[0] != c)
      return sm_status_new(SM_INVALID_ARGUMENT, "min has incompatible shape");
    if (sm_tensor_rank(mx) != 1 || sm_tensor_dims(mx)[0] != c)
      return sm_status_new(SM_INVALID_ARGUMENT, "max has incompatible shape");
    if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, r, sm_tensor_dims(x), &y))) return st;
    int64_t rows = c ? sm_tensor_num_elements(x) / c : 0;
    for (int64_t k = 0; k < c; k++)
      fq_run((const float *)sm_tensor_data(x) + k, (float *)sm_tensor_data(y) + k, rows, c,
             ((const float *)sm_tensor_data(mn))[k], ((const float *)sm_tensor_data(mx))[k], qmin, qmax);
    return NULL;
  }
  float min = s->min, max = s->max;
  if (s->kind == 1) {
    const sm_tensor *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
    if (sm_tensor_num_elements(mn) != 1 || sm_tensor_num_elements(mx) != 1 || sm_tensor_dtype(mn) != SM_FLOAT ||
        sm_tensor_dtype(mx) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "min and max must be float scalars");
    min = *(const float *)sm_tensor_data(mn), max = *(const float *)sm_tensor_data(mx);
  }
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, sm_tensor_rank(x), sm_tensor_dims(x), &y))) return st;
  fq_run(sm_tensor_data(x), sm_tensor_data(y), sm_tensor_num_elements(x), 1, min, max, qmin, qmax);
  return NULL;
}

/* ---- the gradients (quantization-aware training's train step) ------------------------------
 * FakeQuantWithMinMaxArgsGradient: gradients where the input lies in the nudged range, 0 outside.
 * The Vars forms add the sums of the gradients below the range (wrt min) and above it (wrt max),
 * per channel for PerChannel; a [0, 0] range passes every gradient to the input (TF's functor). */
static void fqg_run(const float *g, const float *x, float *dx, int64_t n, int64_t stride, float min, float max, int qmin,
                    int qmax, float *dmin, float *dmax, int args) {
  double lo = 0, hi = 0; /* TF's Eigen sum: in float, in its own order; double is nearer both */
  if (!args && min == 0.0f && max == 0.0f) {
    for (int64_t i = 0; i < n; i++) dx[i * stride] = g[i * stride];
    *dmin = *dmax = 0;
    return;
  }
  float nmin, nmax, scale;
  fq_nudge(min, max, qmin, qmax, &nmin, &nmax, &scale);
  for (int64_t i = 0; i < n; i++) {
    float v = x[i * stride], gi = g[i * stride];
    dx[i * stride] = gi * (float)(v >= nmin && v <= nmax);
    lo += gi * (float)(v < nmin);
    hi += gi * (float)(v > nmax);
  }
  *dmin = (float)lo, *dmax = (float)hi;
}

static sm_status *fqg_compute(const void *state, sm_kctx *ctx) {
  const fq_state *s = state;
  const sm_tensor *g = sm__kctx_input(ctx, 0), *x = sm__kctx_input(ctx, 1);
  static const char *const names[] = {"FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
                                      "FakeQuantWithMinMaxVarsPerChannelGradient"};
  if (sm_tensor_dtype(x) != SM_FLOAT || sm_tensor_dtype(g) != SM_FLOAT)
    return sm__math_bad_dtype(names[s->kind], sm_tensor_dtype(x) != SM_FLOAT ? sm_tensor_dtype(x) : sm_tensor_dtype(g));
  int r = sm_tensor_rank(x), same = r == sm_tensor_rank(g);
  for (int i = 0; same && i < r; i++) same = sm_tensor_dims(x)[i] == sm_tensor_dims(g)[i];
  char a[128], b[128];
  if (!same && s->kind == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs to operation %s must have the same size and shape.  Input 0: %s != input 1: %s",
                         names[0], sm_shape_str(sm_tensor_rank(g), sm_tensor_dims(g), a, sizeof a),
                         sm_shape_str(r, sm_tensor_dims(x), b, sizeof b));
  if (!same) return sm_status_new(SM_INVALID_ARGUMENT, "gradient and input must be the same size");
  int qmin = s->narrow ? 1 : 0, qmax = (1 << s->bits) - 1;
  sm_tensor *dx, *dmn, *dmx;
  sm_status *st;
  const float *gp = sm_tensor_data(g), *xp = sm_tensor_data(x);
  if (s->kind == 2) {
    const sm_tensor *mn = sm__kctx_input(ctx, 2), *mx = sm__kctx_input(ctx, 3);
    if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "inputs must be at least rank 1");
    int64_t c = sm_tensor_dims(x)[r - 1];
    if (sm_tensor_rank(mn) != 1 || sm_tensor_dims(mn)[0] != c || sm_tensor_dtype(mn) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "min has incorrect size, expected %lld was %lld", (long long)c,
                           (long long)sm_tensor_num_elements(mn));
    if (sm_tensor_rank(mx) != 1 || sm_tensor_dims(mx)[0] != c || sm_tensor_dtype(mx) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "max has incorrect size, expected %lld was %lld", (long long)c,
                           (long long)sm_tensor_num_elements(mx));
    if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, r, sm_tensor_dims(x), &dx)) ||
        (st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 1, &c, &dmn)) || (st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 1, &c, &dmx)))
      return st;
    int64_t rows = c ? sm_tensor_num_elements(x) / c : 0;
    for (int64_t k = 0; k < c; k++)
      fqg_run(gp + k, xp + k, (float *)sm_tensor_data(dx) + k, rows, c, ((const float *)sm_tensor_data(mn))[k],
              ((const float *)sm_tensor_data(mx))[k], qmin, qmax, (float *)sm_tensor_data(dmn) + k,
              (float *)sm_tensor_data(dmx) + k, 0);
    return NULL;
  }
  float min = s->min, max = s->max, dmin, dmax;
  if (s->kind == 1) {
    const sm_tensor *mn = sm__kctx_input(ctx, 2), *mx = sm__kctx_input(ctx, 3);
    if (sm_tensor_num_elements(mn) != 1 || sm_tensor_num_elements(mx) != 1 || sm_tensor_dtype(mn) != SM_FLOAT ||
        sm_tensor_dtype(mx) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "min and max must be float scalars");
    min = *(const float *)sm_tensor_data(mn), max = *(const float *)sm_tensor_data(mx);
  }
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, r, sm_tensor_dims(x), &dx))) return st;
  fqg_run(gp, xp, sm_tensor_data(dx), sm_tensor_num_elements(x), 1, min, max, qmin, qmax, &dmin, &dmax, s->kind == 0);
  if (s->kind == 0) return NULL;
  if ((st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 0, NULL, &dmn)) || (st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 0, NULL, &dmx)))
    return st;
  *(float *)sm_tensor_data(dmn) = dmin;
  *(float *)sm_tensor_data(dmx) = dmax;
  return NULL;
}

const sm_kernel sm_kernels_quant[] = {
    {"FakeQuantWithMinMaxArgsGradient", fq_prepare, fqg_compute, free, 0},
    {"FakeQuantWithMinMaxVarsGradient", fq_prepare, fqg_compute, free, 0},
    {"FakeQuantWithMinMaxVarsPerChannelGradient", fq_prepare, fqg_compute, free, 0},
    {"FakeQuantWithMinMaxArgs", fq_prepare, fq_compute, free, 0},
    {"FakeQuantWithMinMaxVars", fq_prepare, fq_compute, free, 0},
    {"FakeQuantWithMinMaxVarsPerChannel", fq_prepare, fq_compute, free, 0},
    {0},
};
