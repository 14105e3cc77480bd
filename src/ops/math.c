/* math.c - the math kernel family: its op table, and what its files share (NumPy broadcasting
 * collapsed to strided rows, fp16/bf16 conversion, TF-worded errors).
 * Kernels live in math_binary.c, math_unary.c (with Softmax), math_cast.c, math_reduce.c (with
 * ArgMax) and math_select.c (Select, ClipByValue, AddN). Semantics: shared/spec/ops.md §1, §3.5,
 * §3.6, §3.8, checked against TensorFlow 2.21 (tests/unit/test_ops_math.c). */
#include <stdlib.h>

#include "ops/math_int.h"

void sm__math_to_f32(int dtype, const void *src, float *dst, int64_t n) {
  const uint16_t *s = src;
  if (dtype == SM_HALF)
    for (int64_t i = 0; i < n; i++) dst[i] = sm__half_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = sm__bf16_to_f32(s[i]);
}

void sm__math_from_f32(int dtype, const float *src, void *dst, int64_t n) {
  uint16_t *d = dst;
  if (dtype == SM_HALF)
    for (int64_t i = 0; i < n; i++) d[i] = sm__f32_to_half(src[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = sm__f32_to_bf16(src[i]);
}

int sm__math_bcast_init(sm_bcast *b, int nin, const int *ranks, const int64_t *const *dims) {
  int r = 0;
  for (int k = 0; k < nin; k++)
    if (ranks[k] > r) r = ranks[k];
  b->out_rank = r;
  b->n = 1;
  /* The output's dims first (the one place they are checked). One with a zero dim has no elements,
   * whatever its other dims (2^40 beside 0): one empty run, before any product could overflow. */
  int empty = 0;
  for (int d = 0; d < r; d++) {
    int64_t od = 1;
    for (int k = 0; k < nin; k++) {
      int kd = d - (r - ranks[k]);
      int64_t v = kd >= 0 ? dims[k][kd] : 1;
      if (v == 1) continue;
      if (od != 1 && v != od) return 0;
      od = v;
    }
    b->out_dims[d] = od;
    empty |= od == 0;
  }
  if (empty) {
    b->n = 0;
    b->rank = 1;
    b->dims[0] = 0;
    for (int k = 0; k < nin; k++) b->strides[k][0] = 0;
    return 1;
  }
  /* full[k][d]: input k has dimension d of the output in full (not broadcast along it) */
  unsigned char full[SM_BCAST_MAX_IN][SM_MAX_RANK];
  int64_t cd[SM_MAX_RANK];
  int nc = 0;
  for (int d = 0; d < r; d++) {
    int64_t od = b->out_dims[d];
    /* more elements than an int64 counts: refused (every product below is at most this one) */
    if (__builtin_mul_overflow(b->n, od, &b->n)) return 0;
    if (od == 1) continue;
    unsigned char f[SM_BCAST_MAX_IN];
    for (int k = 0; k < nin; k++) {
      int kd = d - (r - ranks[k]);
      f[k] = kd >= 0 && dims[k][kd] != 1;
    }
    if (nc > 0) {
      int same = 1;
      for (int k = 0; k < nin; k++) same &= f[k] == full[k][nc - 1];
      if (same) {
        cd[nc - 1] *= od;
        continue;
      }
    }
    for (int k = 0; k < nin; k++) full[k][nc] = f[k];
    cd[nc++] = od;
  }
  if (nc == 0) {
    cd[0] = b->n; /* 1, or 0 when some dim is 0 */
    for (int k = 0; k < nin; k++) full[k][0] = 0;
    nc = 1;
  }
  b->rank = nc;
  for (int d = 0; d < nc; d++) b->dims[d] = cd[d];
  for (int k = 0; k < nin; k++) {
    int64_t s = 1;
    for (int d = nc - 1; d >= 0; d--) {
      b->strides[k][d] = full[k][d] ? s : 0;
      if (full[k][d]) s *= cd[d];
    }
  }
  return 1;
}

void sm__math_bcast_seek(const sm_bcast *b, int nin, int64_t row, sm_bcast_it *it) {
  for (int k = 0; k < nin; k++) it->off[k] = 0;
  for (int d = b->rank - 2; d >= 0; d--) {
    int64_t i = row % b->dims[d];
    row /= b->dims[d];
    it->idx[d] = i;
    for (int k = 0; k < nin; k++) it->off[k] += i * b->strides[k][d];
  }
}

void sm__math_bcast_next(const sm_bcast *b, int nin, sm_bcast_it *it) {
  for (int d = b->rank - 2; d >= 0; d--) {
    for (int k = 0; k < nin; k++) it->off[k] += b->strides[k][d];
    if (++it->idx[d] < b->dims[d]) return;
    for (int k = 0; k < nin; k++) it->off[k] -= b->dims[d] * b->strides[k][d];
    it->idx[d] = 0;
  }
}

sm_status *sm__math_incompatible(const sm_tensor *a, const sm_tensor *b) {
  char sa[256], sb[256];
  return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                       sm_shape_str(sm_tensor_rank(a), sm_tensor_dims(a), sa, sizeof sa),
                       sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), sb, sizeof sb));
}

sm_status *sm__math_bad_dtype(const char *op, int dtype) {
  const char *n = sm_dtype_name(dtype);
  return sm_status_new(SM_UNIMPLEMENTED, "%s does not support %s", op, n ? n : "this dtype");
}

#define BIN(name) {name, sm__math_binary_prepare, sm__math_binary_compute, free, 0}
#define UN(name) {name, sm__math_unary_prepare, sm__math_unary_compute, free, 0}
#define RED(name) {name, sm__math_reduce_prepare, sm__math_reduce_compute, free, 0}

const sm_kernel sm_kernels_math[] = {
    BIN("Add"), BIN("AddV2"), BIN("Sub"), BIN("Mul"), BIN("RealDiv"), BIN("Div"), BIN("FloorDiv"),
    BIN("FloorMod"), BIN("Maximum"), BIN("Minimum"), BIN("Pow"), BIN("SquaredDifference"),
    BIN("DivNoNan"), BIN("Less"), BIN("LessEqual"), BIN("Greater"), BIN("GreaterEqual"), BIN("Equal"),
    BIN("NotEqual"), BIN("LogicalAnd"), BIN("LogicalOr"), BIN("Atan2"), BIN("Xlogy"), BIN("Xdivy"),
    BIN("Xlog1py"), BIN("TruncateDiv"), BIN("TruncateMod"), BIN("Mod"), BIN("Igamma"), BIN("Igammac"), BIN("IgammaGradA"), BIN("RandomGammaGrad"), BIN("NextAfter"),
    BIN("Zeta"), BIN("Polygamma"),

    UN("Neg"), UN("Square"), UN("Sqrt"), UN("Rsqrt"), UN("Exp"), UN("Log"), UN("Log1p"), UN("Expm1"),
    UN("Abs"), UN("Sign"), UN("Reciprocal"), UN("Floor"), UN("Ceil"), UN("Round"), UN("Erf"), UN("Erfc"), UN("Relu"),
    UN("Relu6"), UN("LeakyRelu"), UN("Elu"), UN("Selu"), UN("Softplus"), UN("Softsign"), UN("Sigmoid"),
    UN("Tanh"), UN("LogicalNot"), UN("IsNan"), UN("IsFinite"), UN("Sin"), UN("Cos"), UN("Tan"), UN("Asin"),
    UN("Acos"), UN("Atan"), UN("Sinh"), UN("Cosh"), UN("Asinh"), UN("Acosh"), UN("Atanh"), UN("Lgamma"),
    UN("Digamma"), UN("Erfinv"), UN("Ndtri"), UN("Rint"), UN("IsInf"), UN("Inv"), UN("BesselI0e"), UN("BesselI1e"),
    UN("BesselJ0"), UN("BesselJ1"), UN("BesselY0"), UN("BesselY1"), UN("BesselK0"), UN("BesselK1"), UN("BesselK0e"),
    UN("BesselK1e"),

    {"Cumsum", sm__math_scan_prepare, sm__math_scan_compute, free, 0},
    {"Cumprod", sm__math_scan_prepare, sm__math_scan_compute, free, 0},
    {"Softmax", sm__math_softmax_prepare, sm__math_softmax_compute, free, 0},
    {"LogSoftmax", sm__math_softmax_prepare, sm__math_softmax_compute, free, 0},
    {"_SmScaledSoftmax", sm__math_softmax_prepare, sm__math_softmax_compute, free, 0},
    {"Cast", sm__math_cast_prepare, sm__math_cast_compute, free, 0},

    RED("Mean"), RED("Sum"), RED("Max"), RED("Min"), RED("Prod"), RED("All"), RED("Any"),
    {"ArgMax", sm__math_argmax_prepare, sm__math_argmax_compute, free, 0},
    {"ArgMin", sm__math_argmax_prepare, sm__math_argmax_compute, free, 0},

    {"Select", sm__math_select_prepare, sm__math_select_compute, free, 0},
    {"SelectV2", sm__math_select_prepare, sm__math_select_compute, free, 0},
    {"ClipByValue", NULL, sm__math_clip_compute, NULL, 0},
    {"AddN", NULL, sm__math_addn_compute, NULL, 0},
    /* tf.math.accumulate_n's op: TF rewrites it into an AddN before running it (accumulate_n_optimizer.cc) */
    {"AccumulateNV2", NULL, sm__math_addn_compute, NULL, 0},
    {0},
};
