/* nn_raw.h - the float32 NHWC compute behind the nn kernels, callable without a graph.
 *
 * The Conv2D / MatMul / MaxPool / BiasAdd kernels and the trainer (src/train) both run through
 * these functions, so that a model trained here computes its forward pass with exactly the code
 * that later serves it. Plain arrays in, plain arrays out, row-major, no allocation visible to the
 * caller (scratch, when needed, is bounded and internal; a failure to get it is reported).
 *
 * `pool` may be NULL: the work then runs on the caller's thread. Outputs never alias inputs. */
#ifndef SM_OPS_NN_RAW_H
#define SM_OPS_NN_RAW_H
#include <stdint.h>

#include "runtime/kernel.h"

/* What may follow a product in the same pass over the output (a fused epilogue). The raw
 * functions below take NONE, RELU and RELU6 (what the trainer's layers use); the others are for
 * the _FusedConv2D / _FusedMatMul kernels, which read them from fused_ops (LEAKY_RELU's alpha comes
 * from the node). Each computes what the op of that name computes on its own, to the bit. */
enum {
  SM_NN_ACT_NONE = 0,
  SM_NN_ACT_RELU = 1,
  SM_NN_ACT_RELU6 = 2, /* min(max(x, 0), 6) */
  SM_NN_ACT_ELU = 3,
  SM_NN_ACT_LEAKY_RELU = 4,
  SM_NN_ACT_SIGMOID = 5,
  SM_NN_ACT_TANH = 6,
  SM_NN_ACT_SWISH = 7, /* x * sigmoid(x): TF's fused "_MklSwish", the pair Sigmoid + Mul */
  SM_NN_ACT_GELU_ERF = 8, /* (0.5 x) (1 + erf(x * 0.70710677f)): the erf GELU with Keras' / BERT's
                           * constants, as _SmGeluErf computes it (vmath's erf) */
};
#define SM_NN_GELU_C1 0.70710677f /* (float)(1 / sqrt 2): Keras' 0.7071067811865476 */

/* Below this many multiply-adds a product (conv, matmul) runs on the caller's thread: handing
 * work to a pool worker costs a wake-up (tens of microseconds when the worker sleeps; a few when
 * it is still polling, threadpool.c's SM_POOL_SPIN_US) and another core's cold cache. Was 4M while
 * workers went to sleep at once (1M then split the LSTM(128) batch-32 step's product and lost,
 * 3.6-4.1 ms against 2.5-2.9); with the pool's poll, 256K measured best on the Intel VM (bench
 * medians, 2 threads, bench/RESULTS.md session 12 notes): MobileNetV2 b16 4.95 -> 4.13 ms, b1 0.80
 * -> 0.69, EfficientNetB0 b1 1.50 -> 1.27, b16 9.7 -> 7.9, DenseNet121 b1 3.36 -> 3.01, the
 * Transformer b1 3.49 -> 3.25, LSTM(128) b32 2.45-2.52 -> 2.06; the seed CNN b1 16.4 -> 17.8 us and
 * LSTM b1 0.36 -> 0.38 ms lose a little (their mid-sized products now split). */
#define SM_NN_PAR_MIN_MACS sm__nn_par_min_macs()
/* 256K (262,144), or SM_NN_PAR_MIN_MACS from the environment (read once; for tuning). */
double sm__nn_par_min_macs(void);

/* 2-D convolution, NHWC input x [n,h,w,c], HWIO filter [kh,kw,c,cout], strides sh/sw, no
 * dilation, padding SAME (same=1) or VALID (same=0) with TensorFlow's rule for where SAME puts the
 * odd pixel. y [n,oh,ow,cout] with oh/ow from sm__nn_conv2d_out_size. bias [cout] may be NULL;
 * act is applied after the bias. */
void sm__nn_conv2d_out_size(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int same,
                           int64_t *oh, int64_t *ow);
sm_status *sm__nn_conv2d_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                            const float *filter, int64_t kh, int64_t kw, int64_t cout, int64_t sh, int64_t sw,
                            int same, const float *bias, int act, float *y);
/* The same for float or double (dtype) with dilations and any padding already resolved: in = {n, h,
 * w, c}, win = {kh, kw, sh, sw, dh, dw, pad_top, pad_left}, the output [n, oh, ow, cout] as the
 * caller computed it (sm__nn_out_size). bias and act (float only) may be NULL / 0. The generic Conv
 * op (nn_conv_nd.c) runs its 2-D float and double convolutions through it. */
sm_status *sm__nn_conv2d_nhwc(sm_threadpool *pool, int dtype, const void *x, const int64_t in[4], const void *filter,
                              int64_t cout, const int64_t win[8], int64_t oh, int64_t ow, const float *bias, int act,
                              void *y);

/* y[0..n) = x[0..k) B[k, n] (row-major, leading dim ldb; + y when acc) where the CPU has AVX-512
 * and 0 < n <= 128, k > 0 (nn_gemm.c): 1 when done, 0 when the caller must (OpenBLAS's sgemv). */
int sm__nn_sgemv_narrow(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y, int acc);
/* The same for any n > 0, B's rows streamed in order four at a time (y in L1 meanwhile): a range of
 * B's rows is one contiguous block, so threads split k and add their y's (nn_matmul.c). 1 when
 * done, 0 without AVX-512 or AVX2 + FMA, or with SM_NN_GEMV_ROWS=0 (AVX-512) / SM_NN_GEMV_AVX2=0 (nn_gemm.c). */
int sm__nn_sgemv_rows(int64_t k, int64_t n, const float *x, const float *b, int64_t ldb, float *y, int acc);
int sm__nn_sgemv_rows_on(void); /* whether sm__nn_sgemv_rows computes (else it returns 0) */
/* whether it computes on a CPU without AVX-512 (its AVX2 clone, for n <= 2048 only; SM_NN_GEMV_AVX2=0
 * turns it off): sm__nn_sgemv_rows_on() stays AVX-512 only, for sm__nn_sgemm_rows' callers */
int sm__nn_sgemv_rows_avx2_on(void);
/* The same for m rows of A at once (0 < m <= SM_NN_STREAM_M, lda apart; y's rows ldy apart): each
 * B row is read once for all m (nn_conv.c's batch-1 convolutions with few output pixels). */
#define SM_NN_STREAM_M 8
int sm__nn_sgemm_rows(int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,
                      float *y, int64_t ldy, int acc);

/* C [m,n] = op(A) op(B) (+ bias [n]) (then act), op = transpose when trans_* is set: A is [m,k]
 * (or [k,m] transposed), B is [k,n] (or [n,k]). accumulate=1 adds into C instead (no bias/act
 * then). Split over the pool by rows of C. */
void sm__nn_matmul_f32(sm_threadpool *pool, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      const float *a, const float *b, const float *bias, int act, int accumulate, float *c);

/* Max pooling NHWC x [n,h,w,c] with window ph/pw and strides sh/sw, SAME or VALID; y as for conv.
 * argmax (may be NULL) receives, per output element, the flat index into x of the maximum
 * (the first one in window order on ties, as TensorFlow's MaxPoolGrad routes the gradient). */
sm_status *sm__nn_maxpool_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                             int64_t ph, int64_t pw, int64_t sh, int64_t sw, int same, float *y, int64_t *argmax);

#endif
