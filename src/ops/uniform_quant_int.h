/* uniform_quant_int.h - what the uniform quantized kernel files (uniform_quant.c,
 * quantize_uniform.c) share: the per-quantization attrs, TF's QuantizationAxisAndShapeValid,
 * QuantizeMultiplier / MultiplyByQuantizedMultiplier (uniform_quant_ops/math_utils.h) and how TF's
 * kernels read a quantized element as an int32. Defined in uniform_quant.c. */
#ifndef SM_OPS_UNIFORM_QUANT_INT_H
#define SM_OPS_UNIFORM_QUANT_INT_H
#include <stdint.h>

#include "runtime/kernel.h"

/* one quantization's attrs: <prefix>quantization_axis (default -1), _min_val, _max_val */
typedef struct sm__uq_params {
  int64_t axis, lo, hi;
} sm__uq_params;

sm_status *sm__uq_read_params(const sm_node *n, const char *prefix, sm__uq_params *p);

/* TF's QuantizationAxisAndShapeValid for data of rank r, dims d */
sm_status *sm__uq_axis_shape_valid(int r, const int64_t *d, const sm_tensor *scales, const sm_tensor *zps, int64_t axis);

/* TF's QuantizeMultiplier (its error for a multiplier that is not positive and finite) */
sm_status *sm__uq_quantize_multiplier(double m, int32_t *qm, int32_t *shift);

/* TF's AffineRequantizeWithQuantizedMultiplierAndShift (int32 in, int32 out, wrapping like x86) */
int32_t sm__uq_requant(int32_t x, int32_t qm, int shift, int32_t in_zp, int32_t out_zp, int64_t lo, int64_t hi);

/* element i of a quantized buffer as TF's kernels cast it to int32 (qint32 goes through float) */
int32_t sm__uq_qint_as_int(const void *p, int T, int64_t i);

/* a float to int32 as x86's cvttss2si does (NaN and out of range: INT32_MIN) */
int32_t sm__uq_f2i32(float v);

/* TF's AsymmetricQuantize into [-128, 127] (the hybrid ops' float lhs): the parameters for values
 * in [mn, mx] (a degenerate range gives scale 1, inv 0, zero point 0), then one value */
void sm__uq_asym_params(float mn, float mx, float *scale, float *inv, int32_t *zp);
int8_t sm__uq_asym_one(float x, float inv, int32_t zp);

/* all of a float tensor's elements > 0 (TF's AllElementsPositive) */
int sm__uq_all_positive(const sm_tensor *t);
/* TF's checks of a dot / conv's lhs, rhs and output scales (all positive) and lhs scale / zero point (scalars) */
sm_status *sm__uq_scales_positive(const sm_tensor *lsc, const sm_tensor *rsc, const sm_tensor *osc);
sm_status *sm__uq_lhs_scalar(const sm_tensor *lsc, const sm_tensor *lzp);
/* attr `attr` (absent: fine) is dtype `want`, else op's error naming both */
sm_status *sm__uq_want_type(const sm_node *n, const char *op, const char *attr, int want);
/* input i is dtype `want`, else op's error naming both */
sm_status *sm__uq_want_input(sm_kctx *ctx, const char *op, int i, int want);
#endif
