/* nn_dnnl.h - float32 convolutions and matrix products through oneDNN (nn_dnnl.c), for the nn
 * kernels (nn_conv.c, nn_matmul.c) that pick it per shape. Everything here is optional: without
 * oneDNN at build time (no dnnl.h), at run time (no libdnnl.so.2), or with SM_DNNL=0 in the
 * environment, sm__dnnl_enabled says 0 and the kernels run their own loops. */
#ifndef SM_OPS_NN_DNNL_H
#define SM_OPS_NN_DNNL_H
#include <stdint.h>

#include "runtime/kernel.h"

/* 1 when oneDNN is built in, loads and makes its CPU engine, and SM_DNNL is not "0". The
 * environment is read on every call (kernels call it in prepare, so a test or a user switches a
 * load, not a process); the library is loaded once. */
int sm__dnnl_enabled(void);

/* What one kernel instance keeps across runs (in its prepare state): per input shape the primitive,
 * and the weights reordered into oneDNN's layout, keyed by the weight tensor's buffer and
 * sm__tensor_uid (so a variable's assign, which installs a new tensor, repacks). Thread-safe: many
 * runs of one plan use it at once. Out of memory is an error (SM_RESOURCE_EXHAUSTED), never a
 * quiet fallback: the result must not depend on whether an allocation failed. */
typedef struct sm__dnnl_cache sm__dnnl_cache;
sm_status *sm__dnnl_cache_new(sm__dnnl_cache **out);
void sm__dnnl_cache_free(sm__dnnl_cache *c); /* NULL-safe */

/* A float NHWC convolution: x [N,H,W,C], filter HWIO [KH,KW,C/G,Cout] in G groups (G = C and
 * Cout = C * multiplier for a depthwise one, whose filter [KH,KW,C,mult] has the same layout), TF
 * dilations (1 = none), leading pads pt/pl, output y [N,OH,OW,Cout] (every element written);
 * bias [Cout] or NULL, then the addend, then act (SM_NN_ACT_*; alpha LeakyRelu's). */
typedef struct sm__dnnl_conv_args {
  int64_t N, H, W, C, OH, OW, KH, KW, Cout, G;
  int64_t sh, sw, dh, dw, pt, pl;
  const float *x, *filt, *bias;
  uint64_t filt_uid; /* sm__tensor_uid of the filter tensor */
  float *y;
  int act;
  float alpha;
  const float *addend; /* NULL, or [N,OH,OW,Cout] added after the bias, before act (a residual Add) */
} sm__dnnl_conv_args;

/* C [M,N] = op(A) op(B) (+ bias [N], then act), row-major, B the weights that are packed; lda:
 * A's row stride (K, or M when transposed). */
typedef struct sm__dnnl_mm_args {
  int64_t M, N, K, lda;
  int ta, tb;
  const float *a, *b, *bias;
  uint64_t b_uid;
  float *c;
  int act;
  float alpha;
} sm__dnnl_mm_args;

/* A batched product of two activations (Einsum's gemm form, einsum.c): for each of the nbd (1 or
 * 2) batch indices, C[b] [M,N] = A[b] [M,K] B[b] [K,N], every dimension with its own element
 * stride in each tensor (sa, sb, sc: the batch dims, then the two matrix dims). Neither operand is
 * packed or cached (both change every run); the batches of dim 0 are split over the pool. */
typedef struct sm__dnnl_bmm_args {
  int nbd;
  int64_t bd[2];
  int64_t M, N, K;
  int64_t sa[4], sb[4], sc[4];
  const float *a, *b;
  float *c;
} sm__dnnl_bmm_args;

/* Run one product over the run's pool (single-threaded oneDNN calls on pieces of it; ctx NULL:
 * on the calling thread alone, for callers outside a run such as the trainer's grad.c). NULL
 * on success; an error status (out of memory: SM_RESOURCE_EXHAUSTED) the kernel returns; or NULL
 * with *declined = 1 when oneDNN has no primitive for it (the kernel then runs its own loops). */
sm_status *sm__dnnl_conv(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, sm_kctx *ctx, int *declined);
/* How sm__dnnl_conv splits a over the pool: 'i' by images, 'r' by bands of output rows (one
 * image), 'c' by slices of the filters (the cost model in nn_dnnl.c). Reads the shape only. */
int sm__dnnl_conv_split(const sm__dnnl_conv_args *a);
sm_status *sm__dnnl_matmul(sm__dnnl_cache *c, const sm__dnnl_mm_args *a, sm_kctx *ctx, int *declined);
sm_status *sm__dnnl_bmm(sm__dnnl_cache *c, const sm__dnnl_bmm_args *a, sm_kctx *ctx, int *declined);

#endif
