/* debug.c - the tfdbg and ref-forwarding kernel family: DebugIdentity, DebugIdentityV2/V3,
 * DebugNanCount, DebugNumericSummary, DebugNumericSummaryV2 (every tensor_debug_mode TF's CPU
 * kernel has), Copy, CopyHost, DebugGradientIdentity, DebugGradientRefIdentity, RefIdentity and
 * RefSelect, as TensorFlow computes them (core/kernels/debug_ops.h, ref ops of control_flow_ops).
 *
 * The debug ops here compute their outputs only: what TF publishes to debug_urls (file:// dumps,
 * grpc:// streams) is not written or sent (a served model must not write files nor open
 * connections because a debugger was attached when it was exported). Ref ops forward their input
 * as it came (a ref input arrives as the variable's handle, kernel.h, and is passed on). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "math_int.h"
#include "runtime/kernel.h"

/* ---- identities ----------------------------------------------------------------------------- */

static sm_status *forward_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* RefSelect(index int32 scalar, inputs: N x T ref) -> inputs[index]. */
static sm_status *ref_select_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0);
  if (sm_tensor_rank(ix) != 0 || sm_tensor_dtype(ix) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "RefSelect: index must be an int32 scalar");
  int n = sm__kctx_num_inputs(ctx) - 1;
  int32_t i = *(const int32_t *)sm_tensor_data(ix);
  if (i < 0 || i >= n) return sm_status_new(SM_INVALID_ARGUMENT, "Index must be in the range [0, %d) but got %d", n, (int)i);
  sm__kctx_forward(ctx, 1 + i, 0);
  return NULL;
}

/* ---- element reading ------------------------------------------------------------------------ */

static int debug_real_dtype(int dt) {
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: case SM_INT8: case SM_UINT8: case SM_INT16:
    case SM_UINT16: case SM_INT32: case SM_UINT32: case SM_INT64: case SM_UINT64: case SM_BOOL:
      return 1;
    default:
      return 0;
  }
}

static double elem(const sm_tensor *t, int64_t i) {
  if (sm_tensor_dtype(t) == SM_BOOL) return ((const uint8_t *)sm_tensor_data(t))[i] ? 1.0 : 0.0;
  return sm__math_get_f64(t, i);
}

/* ---- DebugNanCount ------------------------------------------------------------------------- */

static sm_status *nan_count_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (!debug_real_dtype(dt) || dt == SM_BOOL) /* TF: no bool kernel */
    return sm_status_new(SM_INVALID_ARGUMENT, "DebugNanCount does not support %s inputs", sm_dtype_name(dt));
  int64_t n = sm_tensor_num_elements(x), c = 0;
  if (dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16)
    for (int64_t i = 0; i < n; i++) c += isnan(elem(x, i)) != 0;
  sm_tensor *o;
  const int64_t one = 1; /* TF: a vector of one */
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, &one, &o);
  if (s) return s;
  *(int64_t *)sm_tensor_data(o) = c;
  return NULL;
}

/* ---- DebugNumericSummary (v1) --------------------------------------------------------------- */

typedef struct {
  float lower, upper;
} dns_state;

static sm_status *dns_prepare(const sm_node *node, void **state) {
  dns_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->lower = -INFINITY;
  st->upper = INFINITY;
  sm_status *s = NULL;
  if (sm__node_attr(node, "lower_bound")) s = sm__node_attr_float(node, "lower_bound", &st->lower);
  if (!s && sm__node_attr(node, "upper_bound")) s = sm__node_attr_float(node, "upper_bound", &st->upper);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *dns_compute(const void *state, sm_kctx *ctx) {
  const dns_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  if (!debug_real_dtype(dt) || dt == SM_HALF || dt == SM_BFLOAT16) /* TF: no 16-bit float kernels */
    return sm_status_new(SM_INVALID_ARGUMENT, "DebugNumericSummary does not support %s inputs", sm_dtype_name(dt));
  int64_t n = sm_tensor_num_elements(x);
  int64_t nan_c = 0, ninf = 0, neg = 0, zero = 0, pos = 0, pinf = 0, finite = 0;
  double mn = INFINITY, mx = -INFINITY, sum = 0, mean = NAN, var = NAN;
  const double lo = st->lower, hi = st->upper;
  const int lo_custom = !isinf(lo), hi_custom = !isinf(hi);
  for (int64_t i = 0; i < n; i++) {
    double v = elem(x, i);
    if (isnan(v)) {
      nan_c++;
    } else if (isinf(v)) {
      if (v < 0) ninf++;
      else pinf++;
    } else {
      if (lo_custom && v <= lo) ninf++;
      else if (hi_custom && v >= hi) pinf++;
      else if (v < 0) neg++;
      else if (v > 0) pos++;
      else zero++;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
      finite++;
      sum += v;
    }
  }
  if (finite > 0) {
    mean = sum / (double)finite;
    var = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = elem(x, i);
      if (!isnan(v) && !isinf(v)) var += (v - mean) * (v - mean);
    }
    var /= (double)finite;
  }
  sm_tensor *o;
  int64_t len = 14 + rank;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_DOUBLE, 1, &len, &o);
  if (s) return s;
  double *d = sm_tensor_data(o);
  const double head[14] = {1, (double)n, (double)nan_c, (double)ninf, (double)neg, (double)zero, (double)pos,
                           (double)pinf, mn, mx, mean, var, (double)dt, (double)rank};
  memcpy(d, head, sizeof head);
  for (int k = 0; k < rank; k++) d[14 + k] = (double)sm_tensor_dims(x)[k];
  return NULL;
}

/* ---- DebugNumericSummaryV2 ------------------------------------------------------------------ */

typedef struct {
  int out_dtype;
  int64_t mode, tensor_id;
} dns2_state;

static sm_status *dns2_prepare(const sm_node *node, void **state) {
  dns2_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->out_dtype = SM_FLOAT;
  st->mode = -1;
  st->tensor_id = -1;
  sm_status *s = NULL;
  if (sm__node_attr(node, "output_dtype")) s = sm__node_attr_type(node, "output_dtype", &st->out_dtype);
  if (!s && sm__node_attr(node, "tensor_debug_mode")) s = sm__node_attr_int(node, "tensor_debug_mode", &st->mode);
  if (!s && sm__node_attr(node, "tensor_id")) s = sm__node_attr_int(node, "tensor_id", &st->tensor_id);
  if (!s && st->out_dtype != SM_FLOAT && st->out_dtype != SM_DOUBLE)
    s = sm_status_new(SM_INVALID_ARGUMENT, "DebugNumericSummaryV2: output_dtype must be float32 or float64, not %s",
                      sm_dtype_name(st->out_dtype));
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *dns2_compute(const void *state, sm_kctx *ctx) {
  const dns2_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  if (!debug_real_dtype(dt))
    return sm_status_new(SM_INVALID_ARGUMENT, "DebugNumericSummaryV2 does not support %s inputs", sm_dtype_name(dt));
  const int dbl = st->out_dtype == SM_DOUBLE;
  const int64_t max_id = dbl ? (int64_t)1 << 53 : (int64_t)1 << 24;
  if (st->tensor_id > max_id)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "DebugNumericSummaryV2Op requires tensor_id to be less than or equal to (2^%d). Given "
                         "tensor_id:%lld",
                         dbl ? 53 : 24, (long long)st->tensor_id);
  int64_t n = sm_tensor_num_elements(x), ninf = 0, pinf = 0, nan_c = 0, neg = 0, zero = 0, pos = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = elem(x, i);
    if (isnan(v)) nan_c++;
    else if (isinf(v)) *(v < 0 ? &ninf : &pinf) += 1;
    else if (v < 0) neg++;
    else if (v > 0) pos++;
    else zero++;
  }
  double out[10];
  int64_t len;
  const double id = dbl ? (double)st->tensor_id : (double)(float)st->tensor_id;
  switch (st->mode) {
    case 2: /* CURT_HEALTH */
      len = 2;
      out[0] = id;
      out[1] = ninf + pinf + nan_c ? 1.0 : 0.0;
      break;
    case 3: /* CONCISE_HEALTH */
      len = 5;
      out[0] = id;
      out[1] = (double)n;
      out[2] = (double)ninf;
      out[3] = (double)pinf;
      out[4] = (double)nan_c;
      break;
    case 5: /* SHAPE: the last 6 dims */
      len = 10;
      memset(out, 0, sizeof out);
      out[0] = id;
      out[1] = dt;
      out[2] = rank;
      out[3] = (double)n;
      for (int k = rank > 6 ? rank - 6 : 0, j = 4; k < rank; k++) out[j++] = (double)sm_tensor_dims(x)[k];
      break;
    case 4: /* FULL_HEALTH */
      len = 11;
      break;
    case 8: /* REDUCE_INF_NAN_THREE_SLOTS */
      len = 3;
      out[0] = ninf ? -INFINITY : 0.0;
      out[1] = pinf ? INFINITY : 0.0;
      out[2] = nan_c ? NAN : 0.0;
      break;
    default:
      return sm_status_new(SM_UNIMPLEMENTED, "Unimplemented tensor debug mode: %lld", (long long)st->mode);
  }
  double full[11];
  const double *src = out;
  if (st->mode == 4) {
    const double f[11] = {id,          -1.0,          dt,         rank,       (double)n,  (double)ninf,
                          (double)pinf, (double)nan_c, (double)neg, (double)zero, (double)pos};
    memcpy(full, f, sizeof f);
    src = full;
  }
  sm_tensor *o;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, st->out_dtype, 1, &len, &o);
  if (s) return s;
  for (int64_t k = 0; k < len; k++) {
    if (dbl) ((double *)sm_tensor_data(o))[k] = src[k];
    else ((float *)sm_tensor_data(o))[k] = (float)src[k];
  }
  return NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_debug[] = {
    {"DebugIdentity", NULL, forward_compute, NULL, 0},
    {"DebugIdentityV2", NULL, forward_compute, NULL, 0},
    {"DebugIdentityV3", NULL, forward_compute, NULL, 0},
    {"DebugNanCount", NULL, nan_count_compute, NULL, 0},
    {"DebugNumericSummary", dns_prepare, dns_compute, free, 0},
    {"DebugNumericSummaryV2", dns2_prepare, dns2_compute, free, 0},
    {"Copy", NULL, forward_compute, NULL, 0},
    {"CopyHost", NULL, forward_compute, NULL, 0},
    {"DebugGradientIdentity", NULL, forward_compute, NULL, 0},
    {"DebugGradientRefIdentity", NULL, forward_compute, NULL, 0},
    {"RefIdentity", NULL, forward_compute, NULL, 0},
    {"RefSelect", NULL, ref_select_compute, NULL, 0},
    {0},
};
