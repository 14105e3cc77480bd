/* vmath.h - vectorised float32 exp, sigmoid, tanh and erf over arrays (vmath.c).
 *
 * For the kernels whose time is transcendental functions: Exp, Sigmoid, Tanh, Erf, Softmax, the
 * fused conv/matmul epilogues, and so the Swish and LSTM cells and the erf GELU built of them. Eight lanes at a time
 * (GCC/Clang vector extensions, plain C); an AVX2+FMA build of the same code, or a sixteen-lane
 * AVX-512 one, is picked at run time where the CPU has it. Accuracy: within 2 ulp of the correctly rounded result over the whole
 * float range (checked against double libm in tests/unit/test_vmath.c); inf, -inf and NaN map as
 * libm's expf / tanhf and TF's sigmoid do. The result of an element does not depend on its
 * position or on n (tails run through the same vector code), so a fused epilogue and the unfused op
 * agree to the bit. x and y may be the same array (in place); otherwise they must not overlap. */
#ifndef SM_BASE_VMATH_H
#define SM_BASE_VMATH_H
#include <stdint.h>

void sm__vexp_f32(const float *x, float *y, int64_t n);
/* 1 / (1 + exp(-x)), as TF computes it: e / (1 + e) with e = exp(x) for x < 0. */
void sm__vsigmoid_f32(const float *x, float *y, int64_t n);
void sm__vtanh_f32(const float *x, float *y, int64_t n);
void sm__verf_f32(const float *x, float *y, int64_t n);
/* x * sigmoid(x) (swish, SiLU): to the bit what Mul(x, Sigmoid(x)) gives with sm__vsigmoid_f32. */
void sm__vswish_f32(const float *x, float *y, int64_t n);
/* y[i] = exp(x[i] - shift) (Softmax's shifted exponentials) and their sum, in eight partial sums
 * by lane (i % 8) in order, the tail elements after them one by one, then the lanes pairwise as
 * ((0+4)+(2+6))+((1+5)+(3+7)): the same at every vector width. */
float sm__vexp_shift_sum_f32(const float *x, float shift, float *y, int64_t n);
/* A Softmax row (n >= 1): y = exp(x - max x) / sum, at the CPU's width (sixteen lanes on AVX-512) in
 * three passes (max; exp and sum; scale), with the bits of the eight-lane maximum,
 * sm__vexp_shift_sum_f32 and y *= 1 / sum (a NaN in x makes every y NaN). y may be x (in place); else
 * the two must not overlap. */
void sm__vsoftmax_f32(const float *x, float *y, int64_t n);
/* The same of x * scale (each product a float multiply, as a Mul before the Softmax computes it). */
void sm__vsoftmax_scaled_f32(const float *x, float *y, int64_t n, float scale);
/* The erf GELU as graphs spell it, y = (c0 v) (c2 + erf(v c1)) with v = x + bias (bias NULL: v =
 * x; else bias[i] is added to x[i], so a caller passes one row of a BiasAdd at a time): the
 * float operations of the unfused BiasAdd, Mul, Erf, AddV2, Mul kernels, so the same bits. */
void sm__vgelu_erf_f32(const float *x, const float *bias, float *y, int64_t n, float c0, float c1, float c2);
/* 1 when the AVX2+FMA (or the AVX-512) code runs on this CPU; the lanes per step (8 or 16), for
 * tests and benchmarks to say. */
int sm__vmath_avx2(void);
int sm__vmath_lanes(void);

#endif
