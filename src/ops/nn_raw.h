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

/* What may follow a product in the same pass over the output (a fused epilogue). */
enum { SM_NN_ACT_NONE = 0, SM_NN_ACT_RELU = 1, SM_NN_ACT_RELU6 = 2 /* min(max(x, 0), 6) */ };

/* Below this many multiply-adds a product (conv, matmul) runs on the caller's thread: handing
 * work to a pool worker (a futex wake, another core's cold cache, and on a shared VM a worker that
 * may not be scheduled soon) costs tens of microseconds, about what ~1M multiply-adds take. */
#define SM_NN_PAR_MIN_MACS 1048576.0

/* A MaxPool fused into the float NHWC Conv2D (+ BiasAdd + Relu) before it, at plan time: the
 * convolution then writes only the pooled output, computing a window's worth of rows at a time
 * into a small scratch. Only for windows that do not overlap vertically (sh >= kh), so no conv
 * row is computed twice. padding is nn_internal.h's SM_NN_VALID / SM_NN_SAME. */
typedef struct sm_nn_pool_fuse {
  int64_t kh, kw, sh, sw;
  int padding;
} sm_nn_pool_fuse;

/* 1 and *f filled when the prepared state of a "MaxPool" kernel (nn_pool.c) describes a pool
 * that sm_nn_pool_fuse can express (NHWC, attrs fixed at prepare, sh >= kh); else 0. */
int sm_nn_maxpool_fusable(const void *maxpool_state, sm_nn_pool_fuse *f);
/* The MaxPool fused into the running Conv2D step, or NULL (session.c). */
const sm_nn_pool_fuse *sm_kctx_fused_pool(const sm_kctx *c);

/* 2-D convolution, NHWC input x [n,h,w,c], HWIO filter [kh,kw,c,cout], strides sh/sw, no
 * dilation, padding SAME (same=1) or VALID (same=0) with TensorFlow's rule for where SAME puts the
 * odd pixel. y [n,oh,ow,cout] with oh/ow from sm_nn_conv2d_out_size. bias [cout] may be NULL;
 * act is applied after the bias. */
void sm_nn_conv2d_out_size(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int same,
                           int64_t *oh, int64_t *ow);
sm_status *sm_nn_conv2d_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                            const float *filter, int64_t kh, int64_t kw, int64_t cout, int64_t sh, int64_t sw,
                            int same, const float *bias, int act, float *y);

/* C [m,n] = op(A) op(B) (+ bias [n]) (then act), op = transpose when trans_* is set: A is [m,k]
 * (or [k,m] transposed), B is [k,n] (or [n,k]). accumulate=1 adds into C instead (no bias/act
 * then). Split over the pool by rows of C. */
void sm_nn_matmul_f32(sm_threadpool *pool, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      const float *a, const float *b, const float *bias, int act, int accumulate, float *c);

/* Max pooling NHWC x [n,h,w,c] with window ph/pw and strides sh/sw, SAME or VALID; y as for conv.
 * argmax (may be NULL) receives, per output element, the flat index into x of the maximum
 * (the first one in window order on ties, as TensorFlow's MaxPoolGrad routes the gradient). */
sm_status *sm_nn_maxpool_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                             int64_t ph, int64_t pw, int64_t sh, int64_t sw, int same, float *y, int64_t *argmax);

#endif
