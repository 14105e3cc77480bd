/* quantize_per_channel.c - the per-channel requantization pair TF runs as oneDNN kernels on NHWC
 * qint32 input (the calibration step of Intel's quantized conv graphs): RequantizationRangePerChannel
 * (the symmetric range of each channel's used values, the widest one, clipped to clip_value_max)
 * and RequantizePerChannel (qint32 -> qint8 / quint8, one scale a channel:
 * factor * max(|min_c|, |max_c|) / max(|requested_min|, |requested_max|) / 2^31, the product
 * rounded to nearest even and saturated as oneDNN's reorder does). Float arithmetic in TF's order
 * (mkl_requantization_range_per_channel_op.cc, mkl_requantize_per_channel_op.cc); TF's checks and
 * messages; where TF reads past the per-channel ranges (fewer ranges than channels) or aborts (a
 * requested_output_max that is not one element, an empty input) a clean error. Checked against TensorFlow by
 * tests/unit/test_ops_f3.c (tools/gen_f3_cases.py). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/quant_int.h"
#include "ops/uniform_quant_int.h"

static sm_status *want_f32(sm_kctx *ctx, const char *op, int i) {
  int t = sm_tensor_dtype(sm__kctx_input(ctx, i));
  if (t != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input %d must be float, got %s", op, i, sm__array_dtype_str(t));
  return NULL;
}

static sm_status *want_q32(sm_kctx *ctx, const char *op) {
  int t = sm_tensor_dtype(sm__kctx_input(ctx, 0));
  if (t != SM_QINT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: Value for attr 'T' of %s is not in the list of allowed values: qint32", op,
                         sm__array_dtype_str(t));
  return NULL;
}

static int32_t iabs32(int32_t v) { return v < 0 ? (int32_t)(0u - (uint32_t)v) : v; } /* std::abs, INT32_MIN stays */

/* ---- RequantizationRangePerChannel ------------------------------------------------------------ */

static sm_status *rrpc_prepare(const sm_node *n, void **state) {
  float clip = INFINITY;
  sm_status *st = sm__node_attr_float(n, "clip_value_max", &clip);
  if (st) return st;
  float *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = clip;
  *state = p;
  return NULL;
}

static sm_status *rrpc_compute(const void *state, sm_kctx *ctx) {
  const char *op = "RequantizationRangePerChannel";
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
  sm_status *st = want_q32(ctx, op);
  if (!st) st = want_f32(ctx, op, 1);
  if (!st) st = want_f32(ctx, op, 2);
  if (st) return st;
  if (sm_tensor_rank(mn) < 1 || sm_tensor_rank(mx) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_min and input_max must be vectors", op);
  int64_t depth = sm_tensor_num_elements(mx);
  if (sm_tensor_dims(mn)[0] != depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_min has incorrect size, expected %lld was %lld", (long long)depth,
                         (long long)sm_tensor_dims(mn)[0]);
  if (sm_tensor_dims(mx)[0] != depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_max has incorrect size, expected %lld was %lld", (long long)depth,
                         (long long)sm_tensor_dims(mx)[0]);
  if (sm_tensor_num_elements(mn) != depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_min must have the same number of elements as input_max, got %lld and %lld",
                         (long long)sm_tensor_num_elements(mn), (long long)depth);
  if (sm_tensor_num_elements(x) <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "input must not be empty");
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "input must be in NHWC format");
  if (sm_tensor_dims(x)[3] != depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must have same number of channels as length of input_min: %lld vs %lld",
                         (long long)sm_tensor_dims(x)[3], (long long)depth);
  const int32_t *X = sm_tensor_data(x);
  const float *MN = sm_tensor_data(mn), *MX = sm_tensor_data(mx);
  int64_t rows = sm_tensor_num_elements(x) / depth;
  float out = FLT_MIN;
  int non_negative = 1;
  for (int64_t c = 0; c < depth; c++) {
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (int64_t r = 0; r < rows; r++) {
      int32_t v = X[r * depth + c];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    lo = sm__uq_f2i32((float)lo), hi = sm__uq_f2i32((float)hi); /* a qint32 to int32 goes through float: 2^31 - 1 is INT32_MIN */
    int32_t a = iabs32(lo), b = iabs32(hi), abs_max = a > b ? a : b;
    float scale = fmaxf(fabsf(MN[c]), fabsf(MX[c]));
    float range = scale * (float)abs_max / 2147483648.0f;
    if (lo < 0) non_negative = 0;
    out = out > range ? out : range; /* std::max(out, range) */
  }
  float clip = *(const float *)state;
  if (out > clip) out = clip;
  st = sm__q_scalar_out(ctx, 0, non_negative ? 0.0f : -out);
  return st ? st : sm__q_scalar_out(ctx, 1, out);
}

/* ---- RequantizePerChannel --------------------------------------------------------------------- */

static sm_status *rpc_prepare(const sm_node *n, void **state) {
  int out = SM_QINT8;
  sm_status *st = sm__node_attr_type(n, "out_type", &out);
  if (st) return st;
  if (out != SM_QINT8 && out != SM_QUINT8)
    return sm_status_new(SM_INVALID_ARGUMENT, "RequantizePerChannel: Value for attr 'out_type' of %s is not in the list of "
                         "allowed values: qint8, quint8", sm__array_dtype_str(out));
  int *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = out;
  *state = p;
  return NULL;
}

static sm_status *rpc_compute(const void *state, sm_kctx *ctx) {
  const char *op = "RequantizePerChannel";
  int out_type = *(const int *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *mn = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2),
                  *rmn = sm__kctx_input(ctx, 3), *rmx = sm__kctx_input(ctx, 4);
  sm_status *st = want_q32(ctx, op);
  for (int i = 1; i < 5 && !st; i++) st = want_f32(ctx, op, i);
  if (st) return st;
  int64_t depth = sm_tensor_num_elements(mn);
  if (sm_tensor_num_elements(mx) != depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_max has incorrect size, expected %lld was %lld", (long long)depth,
                         (long long)sm_tensor_num_elements(mx));
  if (sm_tensor_num_elements(rmn) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "requested_output_min must be a scalar");
  if (sm_tensor_num_elements(rmx) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "requested_output_max must be a scalar (TensorFlow aborts here)");
  float rlo = *(const float *)sm_tensor_data(rmn), rhi = *(const float *)sm_tensor_data(rmx);
  if (out_type == SM_QINT8 && !(rlo < 0.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "If out_type is QINT8, requested_output_max must be non negative, got %g", (double)rlo);
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "Current RequantizePerChannel operatorsupports 4D tensors only.");
  int64_t C = sm_tensor_dims(x)[3];
  if (sm_tensor_num_elements(x) == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must not be empty (TensorFlow dies of SIGFPE here)", op);
  if (depth < C)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %lld input ranges for %lld channels (TensorFlow reads past them)", op,
                         (long long)depth, (long long)C);
  const float factor = out_type == SM_QINT8 ? 127.0f : 255.0f, rmm = fmaxf(fabsf(rlo), fabsf(rhi));
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, out_type, 4, sm_tensor_dims(x), &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, rlo);
  if (!st) st = sm__q_scalar_out(ctx, 2, rhi);
  if (st) return st;
  float *sc = sm__kctx_scratch(ctx, (size_t)(C + 1) * sizeof *sc, &st);
  if (!sc) return st;
  const float *MN = sm_tensor_data(mn), *MX = sm_tensor_data(mx);
  for (int64_t c = 0; c < C; c++) sc[c] = factor * (fmaxf(fabsf(MN[c]), fabsf(MX[c])) / rmm / 2147483648.0f);
  const int32_t *X = sm_tensor_data(x);
  float lo = out_type == SM_QINT8 ? -128.0f : 0.0f, hi = out_type == SM_QINT8 ? 127.0f : 255.0f;
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    float v = (float)X[i] * sc[C ? i % C : 0];
    v = v < lo ? lo : v > hi ? hi : v; /* oneDNN saturates, then converts rounding to nearest even */
    int32_t q = isnan(v) ? 0 : (int32_t)nearbyintf(v);
    if (out_type == SM_QINT8) ((int8_t *)sm_tensor_data(y))[i] = (int8_t)q;
    else ((uint8_t *)sm_tensor_data(y))[i] = (uint8_t)q;
  }
  sm__kctx_scratch_free(ctx, sc);
  return NULL;
}

const sm_kernel sm_kernels_quantize_per_channel[] = {
    {"RequantizationRangePerChannel", rrpc_prepare, rrpc_compute, free, 0},
    {"RequantizePerChannel", rpc_prepare, rpc_compute, free, 0},
    {0},
};
