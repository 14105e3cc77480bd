/* quantize_uniform.c - TF's uniform quantized arithmetic (the ops StableHLO-quantized SavedModels
 * carry next to uniform_quant.c's quantize / requantize): UniformQuantizedAdd (qint32, numpy
 * broadcasting, per-tensor or per-axis lhs / rhs / output), UniformQuantizedDot (qint8 x qint8 ->
 * qint32, per-tensor lhs, per-tensor or per-channel rhs and output) and UniformQuantizedDotHybrid
 * (float x qint8 -> float, the float lhs quantized per row on the fly, TFLite's asymmetric way).
 * The arithmetic is TF's (uniform_quantized_add_op.cc, uniform_quantized_dot_ops.cc,
 * uniform_quant_ops/math_utils.h) step for step, so the integers are TF's bit for bit: the
 * fixed-point requantization, the per-tensor dot's accumulation through float (TF adds a qint32
 * term to an int32 accumulator, which C++ does in float), int32 wrapping where TF overflows. TF's
 * checks and messages; where TF aborts the process (UniformQuantizedAdd with a per-tensor lhs and
 * a per-axis output, or a per-tensor rhs whose rank differs from the output's with a per-axis
 * output) a clean error. Checked against TensorFlow by tests/unit/test_ops_f3.c
 * (tools/gen_f3_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/quant_int.h"
#include "ops/uniform_quant_int.h"

/* a prepare's state: a heap copy of s */
static sm_status *keep(const void *s, size_t n, void **state) {
  void *p = malloc(n);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(p, s, n);
  *state = p;
  return NULL;
}

/* the eight inputs of UniformQuantizedAdd / Dot (lhs, rhs, then scales and zero points of lhs, rhs
 * and output), lhs and rhs of dtype T */
static sm_status *inputs8(sm_kctx *ctx, const char *op, int T, const sm_tensor *in[8]) {
  sm_status *st = NULL;
  for (int i = 0; i < 8; i++) in[i] = sm__kctx_input(ctx, i);
  for (int i = 0; i < 8 && !st; i++) st = sm__uq_want_input(ctx, op, i, i < 2 ? T : i % 2 ? SM_INT32 : SM_FLOAT);
  return st;
}

/* ---- UniformQuantizedAdd ---------------------------------------------------------------------- */

typedef struct add_state {
  int64_t lax, rax, oax, lo, hi;
} add_state;

static sm_status *add_prepare(const sm_node *n, void **state) {
  add_state s;
  sm__uq_params l, r, o;
  sm_status *st = sm__uq_want_type(n, "UniformQuantizedAdd", "T", SM_QINT32);
  if (!st) st = sm__uq_read_params(n, "lhs_", &l);
  if (!st) st = sm__uq_read_params(n, "rhs_", &r);
  if (!st) st = sm__uq_read_params(n, "output_", &o);
  if (st) return st;
  if (l.axis < -1 || r.axis < -1 || o.axis < -1)
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs, rhs and output quantization_axis must be -1 or within [0, dims)");
  s.lax = l.axis, s.rax = r.axis, s.oax = o.axis, s.lo = o.lo, s.hi = o.hi;
  return keep(&s, sizeof s, state);
}

/* EvalRequantize<qint32, qint32> of x into y (int32): from (isc, izp) quantized along iax to
 * output_scales quantized along oax with zero points 0, TF's per-tensor or per-axis path */
static sm_status *add_requant(sm_kctx *ctx, const sm_tensor *x, const sm_tensor *isc, const sm_tensor *izp,
                              const sm_tensor *osc, int64_t iax, int64_t oax, int32_t *y) {
  const float *IS = sm_tensor_data(isc), *OS = sm_tensor_data(osc);
  const int32_t *IZ = sm_tensor_data(izp);
  int64_t n = sm_tensor_num_elements(x);
  const void *X = sm_tensor_data(x);
  if (iax == -1 && oax == -1) {
    int32_t qm, sh;
    sm_status *st = sm__uq_quantize_multiplier((double)IS[0] / (double)OS[0], &qm, &sh);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) y[i] = sm__uq_requant(sm__uq_qint_as_int(X, SM_QINT32, i), qm, sh, IZ[0], 0, INT32_MIN, INT32_MAX);
    return NULL;
  }
  int64_t ax = iax >= 0 ? iax : oax, mid = sm_tensor_dims(x)[ax], post = 1;
  for (int i = (int)ax + 1; i < sm_tensor_rank(x); i++) post *= sm_tensor_dims(x)[i];
  int pin = sm_tensor_rank(isc) == 1, pout = sm_tensor_rank(osc) == 1;
  sm_status *st = NULL;
  int32_t *qm = sm__kctx_scratch(ctx, (size_t)(mid + 1) * 2 * sizeof *qm, &st);
  if (!qm) return st;
  for (int64_t m = 0; m < mid; m++) {
    st = sm__uq_quantize_multiplier((double)IS[pin ? m : 0] / (double)OS[pout ? m : 0], &qm[2 * m], &qm[2 * m + 1]);
    if (st) {
      sm__kctx_scratch_free(ctx, qm);
      return st;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t m = (i / post) % mid;
    y[i] = sm__uq_requant(sm__uq_qint_as_int(X, SM_QINT32, i), qm[2 * m], qm[2 * m + 1], IZ[pin ? m : 0], 0, INT32_MIN,
                          INT32_MAX);
  }
  sm__kctx_scratch_free(ctx, qm);
  return NULL;
}

static sm_status *uadd_compute(const void *state, sm_kctx *ctx) {
  const add_state *s = state;
  const char *op = "UniformQuantizedAdd";
  const sm_tensor *in[8];
  sm_status *st = inputs8(ctx, op, SM_QINT32, in);
  const sm_tensor *l = in[0], *r = in[1], *lsc = in[2], *lzp = in[3], *rsc = in[4], *rzp = in[5], *osc = in[6], *ozp = in[7];
  if (!st) st = sm__uq_axis_shape_valid(sm_tensor_rank(l), sm_tensor_dims(l), lsc, lzp, s->lax);
  if (!st) st = sm__uq_axis_shape_valid(sm_tensor_rank(r), sm_tensor_dims(r), rsc, rzp, s->rax);
  if (st) return st;
  /* CalculateOutputShape */
  int rl = sm_tensor_rank(l), rr = sm_tensor_rank(r), ro = rl > rr ? rl : rr;
  int64_t od[SM_MAX_RANK];
  if (rl == 0 || rr == 0) {
    ro = rl == 0 ? rr : rl;
    memcpy(od, sm_tensor_dims(rl == 0 ? r : l), sizeof(int64_t) * (size_t)ro);
  } else {
    for (int k = 0; k < ro; k++) {
      int il = rl - ro + k, ir = rr - ro + k;
      int64_t a = il >= 0 ? sm_tensor_dims(l)[il] : 1, b = ir >= 0 ? sm_tensor_dims(r)[ir] : 1;
      if (a != 1 && b != 1 && a != b) {
        char sa[128], sb[128];
        return sm_status_new(SM_INVALID_ARGUMENT, "Cannot Add tensors of shapes: %s%s", sm__array_shape_str(l, sa, sizeof sa),
                             sm__array_shape_str(r, sb, sizeof sb));
      }
      od[k] = a == 1 ? b : a;
    }
  }
  st = sm__uq_axis_shape_valid(ro, od, osc, ozp, s->oax);
  if (st) return st;
  if (s->lax >= 0 && s->oax >= 0 && rl - s->lax != ro - s->oax)
    return sm_status_new(SM_INVALID_ARGUMENT, "If lhs and output is both per-axis quantized, the quantization axis must match.");
  if (s->rax >= 0 && s->oax >= 0 && rr - s->rax != ro - s->oax)
    return sm_status_new(SM_INVALID_ARGUMENT, "If rhs and output is both per-axis quantized, the quantization axis must match.");
  if (!sm__uq_all_positive(lsc) || !sm__uq_all_positive(rsc) || !sm__uq_all_positive(osc))
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs/rhs/output scales elements must be all positive.");
  if (s->oax >= 0 && (s->lax < 0 || (s->rax < 0 && rr != ro)))
    return sm_status_new(SM_UNIMPLEMENTED, "%s: a per-tensor %s with a per-axis output (TensorFlow aborts here)", op,
                         s->lax < 0 ? "lhs" : "rhs of another rank");
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, ro, od, &y);
  if (st) return st;
  int64_t nl = sm_tensor_num_elements(l), nr = sm_tensor_num_elements(r);
  int32_t *lq = sm__kctx_scratch(ctx, (size_t)(nl + nr + 1) * sizeof *lq, &st);
  if (!lq) return st;
  int32_t *rq = lq + nl;
  st = add_requant(ctx, l, lsc, lzp, osc, s->lax, s->oax == -1 ? -1 : s->lax, lq);
  if (!st) st = add_requant(ctx, r, rsc, rzp, osc, s->rax, s->oax, rq);
  if (st) {
    sm__kctx_scratch_free(ctx, lq);
    return st;
  }
  const int32_t *OZ = sm_tensor_data(ozp);
  int32_t *Y = sm_tensor_data(y);
  for (int64_t o = 0, n = sm_tensor_num_elements(y); o < n; o++) {
    int64_t rem = o, li = 0, ri = 0, lin = 1, rin = 1, zi = 0;
    for (int d = ro - 1; d >= 0; d--) {
      int64_t k = rem % od[d];
      rem /= od[d];
      if (d == s->oax) zi = k;
      int dl = d - (ro - rl), dr = d - (ro - rr);
      if (dl >= 0) {
        li += (sm_tensor_dims(l)[dl] == 1 ? 0 : k) * lin;
        lin *= sm_tensor_dims(l)[dl];
      }
      if (dr >= 0) {
        ri += (sm_tensor_dims(r)[dr] == 1 ? 0 : k) * rin;
        rin *= sm_tensor_dims(r)[dr];
      }
    }
    /* the requantized qint32s are read back through float (2^31 - 1 reads as INT32_MIN) */
    int32_t v = (int32_t)((uint32_t)sm__uq_f2i32((float)lq[li]) + (uint32_t)sm__uq_f2i32((float)rq[ri]) + (uint32_t)OZ[zi]);
    Y[o] = v < s->lo ? (int32_t)s->lo : s->hi < v ? (int32_t)s->hi : v; /* std::clamp */
  }
  sm__kctx_scratch_free(ctx, lq);
  return NULL;
}

/* ---- UniformQuantizedDot, UniformQuantizedDotHybrid ------------------------------------------- */

typedef struct dot_state {
  int64_t lo, hi;
} dot_state;

static sm_status *axis_is(const sm_node *n, const char *attr, int allow_minus1, int allow1, const char *msg) {
  int64_t a = -1;
  sm_status *st = sm__node_attr(n, attr) ? sm__node_attr_int(n, attr, &a) : NULL;
  if (st) return st;
  if (!((a == -1 && allow_minus1) || (a == 1 && allow1))) return sm_status_new(SM_INVALID_ARGUMENT, "%s", msg);
  return NULL;
}

static sm_status *dot_prepare(const sm_node *n, void **state) {
  sm__uq_params o;
  sm_status *st = sm__uq_want_type(n, "UniformQuantizedDot", "Tin", SM_QINT8);
  if (!st) st = sm__uq_want_type(n, "UniformQuantizedDot", "Tout", SM_QINT32);
  if (!st) st = sm__uq_read_params(n, "output_", &o);
  if (!st) st = axis_is(n, "lhs_quantization_axis", 1, 0, "lhs_quantization_axis Attr must be -1 (per-tensor).");
  if (!st) st = axis_is(n, "rhs_quantization_axis", 1, 1, "rhs_quantization_axis Attr must be 1 (per-channel) or -1 (per-tensor).");
  if (!st)
    st = axis_is(n, "output_quantization_axis", 1, 1, "output_quantization_axis Attr must be 1 (per-channel) or -1 (per-tensor).");
  if (st) return st;
  dot_state s = {o.lo, o.hi};
  return keep(&s, sizeof s, state);
}

static sm_status *hybrid_prepare(const sm_node *n, void **state) {
  (void)state;
  sm_status *st = sm__uq_want_type(n, "UniformQuantizedDotHybrid", "Tlhs", SM_FLOAT);
  if (!st) st = sm__uq_want_type(n, "UniformQuantizedDotHybrid", "Trhs", SM_QINT8);
  if (!st) st = sm__uq_want_type(n, "UniformQuantizedDotHybrid", "Tout", SM_FLOAT);
  if (!st) st = axis_is(n, "rhs_quantization_axis", 1, 1, "rhs_quantization_axis Attr must be 1 (per-channel) or -1 (per-tensor).");
  return st;
}

/* DotInputShapeValid */
static sm_status *dot_shapes(const sm_tensor *l, const sm_tensor *r) {
  char a[128], b[128];
  sm__array_shape_str(l, a, sizeof a);
  sm__array_shape_str(r, b, sizeof b);
  if (sm_tensor_rank(l) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "lhs rank must be 2, but given lhs shape %s", a);
  if (sm_tensor_rank(r) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "rhs rank must be 2, but given rhs shape %s", b);
  if (sm_tensor_dims(l)[1] != sm_tensor_dims(r)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs.dim_size(1) and rhs.dim_size(0) must be equal, but given lhs shape %s and "
                         "rhs shape %s", a, b);
  return NULL;
}

static sm_status *udot_compute(const void *state, sm_kctx *ctx) {
  const dot_state *s = state;
  const char *op = "UniformQuantizedDot";
  const sm_tensor *in[8];
  sm_status *st = inputs8(ctx, op, SM_QINT8, in);
  const sm_tensor *l = in[0], *r = in[1], *lsc = in[2], *lzp = in[3], *rsc = in[4], *rzp = in[5], *osc = in[6], *ozp = in[7];
  if (st) return st;
  st = sm__uq_scales_positive(lsc, rsc, osc);
  if (st) return st;
  st = dot_shapes(l, r);
  if (st) return st;
  st = sm__uq_lhs_scalar(lsc, lzp);
  if (st) return st;
  int64_t B = sm_tensor_dims(l)[0], K = sm_tensor_dims(l)[1], C = sm_tensor_dims(r)[1], od[2] = {B, C};
  int pc = sm_tensor_rank(rsc) != 0, po = sm_tensor_rank(osc) != 0;
  st = sm__uq_axis_shape_valid(2, sm_tensor_dims(r), rsc, rzp, pc ? 1 : -1);
  if (!st) st = sm__uq_axis_shape_valid(2, od, osc, ozp, po ? 1 : -1);
  if (st) return st;
  if (!pc && po) {
    char a[128], b[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "If rhs is per-tensor quantized, output must be also per-tensor quantized. Given rhs "
                         "scales and zero_points of shape %s but given output scales and zero_points of shape %s",
                         sm__array_shape_str(rsc, a, sizeof a), sm__array_shape_str(osc, b, sizeof b));
  }
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, 2, od, &y);
  if (st) return st;
  const float *LS = sm_tensor_data(lsc), *RS = sm_tensor_data(rsc), *OS = sm_tensor_data(osc);
  const int32_t *LZ = sm_tensor_data(lzp), *RZ = sm_tensor_data(rzp), *OZ = sm_tensor_data(ozp);
  int32_t *qm = sm__kctx_scratch(ctx, (size_t)(C + 1) * 2 * sizeof *qm, &st);
  if (!qm) return st;
  for (int64_t c = 0; c < (pc ? C : 1) && !st; c++)
    st = sm__uq_quantize_multiplier((double)LS[0] * RS[c] / OS[po ? c : 0], &qm[2 * c], &qm[2 * c + 1]);
  if (st) {
    sm__kctx_scratch_free(ctx, qm);
    return st;
  }
  const int8_t *X = sm_tensor_data(l), *W = sm_tensor_data(r);
  int32_t *Y = sm_tensor_data(y);
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      int32_t acc = 0;
      if (pc) { /* int32 terms, int32 accumulation */
        for (int64_t d = 0; d < K; d++)
          acc = (int32_t)((uint32_t)acc + (uint32_t)(int32_t)(((uint32_t)X[b * K + d] - (uint32_t)LZ[0]) *
                                                              ((uint32_t)W[d * C + c] - (uint32_t)RZ[c])));
      } else { /* the term is a qint32, and int32 += qint32 goes through float */
        for (int64_t d = 0; d < K; d++) {
          int32_t t = (int32_t)(((uint32_t)X[b * K + d] - (uint32_t)LZ[0]) * ((uint32_t)W[d * C + c] - (uint32_t)RZ[0]));
          acc = sm__uq_f2i32((float)acc + (float)t);
        }
      }
      int64_t k = pc ? c : 0;
      Y[b * C + c] = sm__uq_requant(acc, qm[2 * k], qm[2 * k + 1], 0, OZ[po ? c : 0], s->lo, s->hi);
    }
  sm__kctx_scratch_free(ctx, qm);
  return NULL;
}

/* TF's AsymmetricQuantize of one float row into [-128, 127] */
static void asym_quantize(const float *x, int64_t n, int8_t *q, float *scale, int32_t *zp) {
  float mn = n ? x[0] : 0.0f, mx = mn, inv;
  for (int64_t i = 1; i < n; i++) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  sm__uq_asym_params(mn, mx, scale, &inv, zp);
  for (int64_t i = 0; i < n; i++) q[i] = sm__uq_asym_one(x[i], inv, *zp);
}

static sm_status *uhybrid_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *op = "UniformQuantizedDotHybrid";
  const sm_tensor *l = sm__kctx_input(ctx, 0), *r = sm__kctx_input(ctx, 1), *rsc = sm__kctx_input(ctx, 2),
                  *rzp = sm__kctx_input(ctx, 3);
  sm_status *st = sm__uq_want_input(ctx, op, 0, SM_FLOAT);
  if (!st) st = sm__uq_want_input(ctx, op, 1, SM_QINT8);
  if (!st) st = sm__uq_want_input(ctx, op, 2, SM_FLOAT);
  if (!st) st = sm__uq_want_input(ctx, op, 3, SM_INT32);
  if (!st) st = dot_shapes(l, r);
  if (st) return st;
  int pc = sm_tensor_rank(rsc) != 0;
  st = sm__uq_axis_shape_valid(2, sm_tensor_dims(r), rsc, rzp, pc ? 1 : -1);
  if (st) return st;
  if (!sm__uq_all_positive(rsc)) return sm_status_new(SM_INVALID_ARGUMENT, "rhs scales elements must be all positive.");
  int64_t B = sm_tensor_dims(l)[0], K = sm_tensor_dims(l)[1], C = sm_tensor_dims(r)[1];
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, 2, (int64_t[]){B, C}, &y);
  if (st) return st;
  int8_t *q = sm__kctx_scratch(ctx, (size_t)K + 1, &st);
  if (!q) return st;
  const float *X = sm_tensor_data(l), *RS = sm_tensor_data(rsc);
  const int8_t *W = sm_tensor_data(r);
  const int32_t *RZ = sm_tensor_data(rzp);
  float *Y = sm_tensor_data(y);
  for (int64_t b = 0; b < B; b++) {
    float ls;
    int32_t lz;
    asym_quantize(X + b * K, K, q, &ls, &lz);
    for (int64_t c = 0; c < C; c++) {
      int32_t acc = 0, rz = RZ[pc ? c : 0];
      for (int64_t d = 0; d < K; d++)
        acc = (int32_t)((uint32_t)acc + (uint32_t)(int32_t)(((uint32_t)q[d] - (uint32_t)lz) * ((uint32_t)W[d * C + c] - (uint32_t)rz)));
      Y[b * C + c] = (float)acc * ls * RS[pc ? c : 0];
    }
  }
  sm__kctx_scratch_free(ctx, q);
  return NULL;
}

const sm_kernel sm_kernels_quantize_uniform[] = {
    {"UniformQuantizedAdd", add_prepare, uadd_compute, free, 0},
    {"UniformQuantizedDot", dot_prepare, udot_compute, free, 0},
    {"UniformQuantizedDotHybrid", hybrid_prepare, uhybrid_compute, NULL, 0},
    {0},
};
