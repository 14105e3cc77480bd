/* nn_internal.h - what the nn kernel files (nn.c, nn_matmul.c, nn_conv.c, nn_dwconv.c, nn_pool.c, nn_norm.c,
 * nn_fuse.c) share: attr parsing for windows (strides, dilations, padding, data_format), TF's
 * windowed output size rule (ops.md §3.8), NCHW<->NHWC transposes, BLAS set-up, the fused-op attrs
 * of _FusedConv2D / _FusedMatMul, and the kernel entry points that nn.c lists in sm_kernels_nn.
 * Nothing here is visible outside src/ops/nn*.c. */
#ifndef SM_OPS_NN_INTERNAL_H
#define SM_OPS_NN_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "ops/nn_raw.h"
#include "runtime/kernel.h"

/* The nn loops (im2col, pooling, bias epilogue) are written to vectorise, but GCC at -O2 (the
 * default RelWithDebInfo build) vectorises only loops whose trip count it knows; -O3 here lets it
 * version them (measured: the seed CNN's pool and bias passes ~4x fewer instructions). Clang
 * vectorises them at -O2 already. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__)
#pragma GCC optimize("O3")
#endif

enum { SM_NN_VALID = 0, SM_NN_SAME = 1, SM_NN_EXPLICIT = 2 };

/* A 2-D window op's attrs, in NHWC order whatever data_format says (prepare reorders). */
typedef struct sm__nn_window {
  int nchw;                    /* data_format == "NCHW" */
  int padding;                 /* SM_NN_VALID / SAME / EXPLICIT */
  int64_t ksize[2];            /* pools: window H, W (0 for convs: the filter says) */
  int64_t stride[2];           /* H, W */
  int64_t dilation[2];         /* H, W (1 for pools) */
  int64_t pad[4];              /* EXPLICIT: top, bottom, left, right */
} sm__nn_window;

/* A MaxPool fused into the float NHWC _FusedConv2D before it: the convolution then writes only
 * the pooled output, computing a window's worth of rows at a time into a small scratch. Only for
 * windows that do not overlap vertically (sh >= kh), so no conv row is computed twice. padding is
 * SM_NN_VALID / SM_NN_SAME. */
typedef struct sm__nn_pool_fuse {
  int64_t kh, kw, sh, sw;
  int padding;
} sm__nn_pool_fuse;

/* What a _FusedConv2D / _FusedMatMul node fuses after its product, read from its attrs at prepare
 * (nn_fuse.c): always a bias (input 2), then for a convolution maybe a residual Add (has_add: the
 * addend is input 3), then `act` (SM_NN_ACT_*, alpha for LeakyRelu), then for a convolution without
 * an Add maybe a MaxPool. */
typedef struct sm__nn_fused {
  int act;
  float alpha;
  int has_add;
  int has_pool;
  sm__nn_pool_fuse pool;
} sm__nn_fused;

/* Reads and checks n's fused_ops, num_args, T, the bias's dtype (and for a convolution
 * num_host_args and the pool attrs); fails SM_UNIMPLEMENTED naming a fused_ops list it cannot run. */
sm_status *sm__nn_fused_prepare(const sm_node *n, int conv, sm__nn_fused *f);

/* C [m,k] x op(B) -> C [m,n], float, for a kernel other than MatMul (the While hoist,
 * control_hoist.c), run as MatMul runs it (nn_matmul.c): oneDNN for more than one row with the
 * caller's cache (nn_dnnl.h; NULL: none), B identified by b_uid (sm__tensor_uid) for its packing,
 * else the pool's gemm. */
struct sm__dnnl_cache;
sm_status *sm__nn_matmul_f32_kctx(sm_kctx *ctx, struct sm__dnnl_cache *dnnl, int trans_b, int64_t m, int64_t n,
                                 int64_t k, const float *a, const float *b, uint64_t b_uid, float *c);
/* For rewrite rules (nn_fuse.c, nn_fold.c): a new _FusedConv2D / _FusedDepthwiseConv2dNative /
 * _FusedMatMul named after node `product` (a Conv2D, DepthwiseConv2dNative or MatMul) with its attrs, inputs a, b and the bias (then the addend when
 * addend.node >= 0: num_args 2, else 1), fused_ops `ops`: not finished (sm__synth_finish), so the
 * caller may add attrs. */
struct sm_rewrite;
sm_status *sm__nn_fused_node(struct sm_rewrite *rw, int product, sm_edge a, sm_edge b, sm_edge bias, sm_edge addend,
                             const char *const *ops, int nops, sm_node **out);
/* For the conv rules: after chain[*n - 1] (the conv's biased float value), a residual Add: its only
 * reader an Add/AddV2 of it and another float value (not itself), then maybe a Relu/Relu6 that is
 * the Add's only reader. Appends them to chain (room for 2 more), sets *addend and *act (the
 * activation's op name, or NULL); 0 with nothing changed when no Add follows. */
int sm__nn_residual(const struct sm_rewrite *rw, int *chain, int *n, sm_edge *addend, const char **act);
/* Whether n is a DepthwiseConv2dNative that _FusedDepthwiseConv2dNative can replace (float, NHWC,
 * padding SAME or VALID: TF's fused op has no explicit_paddings). */
int sm__nn_depthwise_fusable(const sm_node *n);
/* For the BatchNorm fold and the Pad+MaxPool rule (nn_fuse.c, which sets the pads as a MaxPool's
 * EXPLICIT padding): when the VALID Conv2D, depthwise or MaxPool `conv` reads a zero Pad (op Pad, float)
 * that only it reads, whose paddings are a Const (not fed) of [4, 2] ints padding H and W only,
 * *pad_id = the Pad's id and pads = top, bottom, left, right; else *pad_id = -1. The fused node
 * then reads the Pad's input and carries the pads as attr _sm_explicit_paddings (this library's
 * extension: [0, 0, top, bottom, left, right, 0, 0], padding VALID), which its kernel reads as
 * EXPLICIT padding: the same zeros in every window, without the padded copy. Fails only when
 * out of memory. */
sm_status *sm__nn_depthwise_pad(const struct sm_rewrite *rw, int conv, int *pad_id, int64_t pads[4]);

/* Keras' inference BatchNormalization computes its per-channel scale s and shift t in the graph,
 * every run, from its four variables (the epsilon a float Const of one element, not fed; Mul and
 * AddV2|Add operands either way):
 *   s = Mul(Rsqrt(AddV2(var', eps)), gamma')      t = Sub(beta', Mul(mean', s))
 * where Keras 3 first Reshapes each of the four to [1, .., 1, C] (Consts of the shapes).
 * sm__nn_bn_params_match (nn_fold.c) recognises that from the edges s and t (nodes float, not
 * fed, no ref reads): *ok = 1 with eps and the four vectors. The Reshape form (all four Reshaped
 * to one shape, eps of no higher rank): rank and C that shape's, the vectors the Reshapes' inputs,
 * and the nodes that compute s and t (the shape and eps Consts only when nothing else reads them)
 * for the caller's chain, which must also hold every other reader of s (sm__rewrite_can_fuse
 * checks). Otherwise the plain form: rank 0, the nodes that compute s and t (as above, without
 * Reshapes), the vectors var', gamma', ... themselves, eps of rank <= 4 (it must not widen a conv
 * output's rank).
 * Fails only when out of memory. */
typedef struct sm__nn_bn_params {
  sm_edge gamma, beta, mean, var;
  float eps;
  int64_t c;
  int rank;
  int nodes[16], n;
} sm__nn_bn_params;
/* The erf GELU chain gchain (gn nodes, BiasAdd first when bias), whose value x comes from a Dense
 * layer's product and Reshape, as one _SmMatMulEp with the product (nn_matmul_ep.c): *done = 1
 * when it replaced them; 0 (nothing done) when x is not such a product, the constants c are not
 * 0.5, 0.70710677, 1, or the driver refuses the chain. */
sm_status *sm__nn_ep_fuse_gelu(struct sm_rewrite *rw, const int *gchain, int gn, sm_edge x, const sm_edge *bias,
                              const sm_edge c[3], int *done);

sm_status *sm__nn_bn_params_match(const struct sm_rewrite *rw, sm_edge scale, sm_edge shift, sm__nn_bn_params *p,
                                  int *ok);
/* For tests: how many folded results the _SmFoldBN helpers of all plans share now (nn_fold.c). */
size_t sm__nn_fold_shared_entries(void);

/* One spatial dimension's output size and leading pad, TF's GetWindowedOutputSize. Fails with TF's
 * "Computed output size would be negative" message. */
sm_status *sm__nn_out_size(int64_t in, int64_t k, int64_t dilation, int64_t stride, int padding,
                           int64_t pad_before, int64_t pad_after, int64_t *out, int64_t *pad_lead);

/* Reads data_format ("NHWC"/"NCHW"; others refused), padding (+ explicit_paddings when
 * `explicit_ok`), strides, and dilations (when `dilations_ok`) into w. `ksize` too when
 * `has_ksize` (pools). Checks what TF checks at construction (4 entries, batch/depth entries 1). */
sm_status *sm__nn_window_prepare(const sm_node *n, int has_ksize, int dilations_ok, int explicit_ok,
                                 sm__nn_window *w);
/* A 5-entry list attr (NDHWC, or NCDHW when ncdhw) into dhw[3]; batch and channel entries into nc[2];
 * `what` names it in the message (nn_conv_transpose.c). */
sm_status *sm__nn_five(const sm_node *n, const char *attr, const char *what, int ncdhw, int64_t dhw[3], int64_t nc[2]);
/* data_format only: *nchw = 1 for "NCHW"; `allow5d` also takes NDHWC/NCDHW (channel last/second). */
sm_status *sm__nn_data_format(const sm_node *n, int allow5d, int *nchw);
/* The attr padding, "SAME" (*same = 1) or "VALID" (*same = 0); others refused, naming the value. */
sm_status *sm__nn_same_padding(const sm_node *n, int *same);

/* Transposes a 4-D tensor's elements of es (4 or 8) bytes: NCHW [a,b,c,d] -> NHWC [a,c,d,b] and
 * back. dims are the source's. */
void sm__nn_nchw_to_nhwc(const void *src, void *dst, const int64_t *dims, size_t es);
void sm__nn_nhwc_to_nchw(const void *src, void *dst, const int64_t *dims, size_t es);

/* Makes OpenBLAS single-threaded, once per process: the nn kernels split their own work over the
 * runtime's pool (see nn.c for why). Called from the prepare of every kernel that calls BLAS. */
void sm__nn_blas_init(void);
/* C[0..m, n0..n1) = A[m, k] B[k, n] (row-major, leading dims lda, ldb, ldc), for products with few
 * rows (nn_gemm.c): reads B once per four rows, never packs it. */
#define SM_NN_SMALL_M 16
void sm__nn_sgemm_small(int64_t m, int64_t n0, int64_t n1, int64_t k, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc);

/* out[r, c] = act(in[r, c] + bias[c]) over rows x C, float; bias may be NULL, act an SM_NN_ACT_*
 * (nn_raw.h), alpha LeakyRelu's; in == out is allowed. nn_norm.c. */
void sm__nn_bias_act_f32(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act,
                         float alpha);

/* The float NHWC 3x3 convolution, stride 1, dilation 1, one group, as Winograd F(m x m, 3x3), m 2, 3
 * or 4, on AVX2 + FMA (nn_winograd_avx2.c): U the filter [3, 3, C, K] packed by sm__wino_pack (sm__wino_packed_floats
 * floats); sm__wino_run does tiles [t0, t1) of sm__wino_tiles in blocks of T (sm__wino_block), the
 * output channels [16 kb0, min(16 kb1, K)), with
 * sm__wino_scratch_floats(C, K, T) floats of scratch: y = act((conv + bias) + addend), bias and addend
 * may be NULL, addend may be y (a tile that meets NaN or Inf is summed directly from filt instead, so NaN
 * and Inf stay where a direct convolution puts them). sm__wino_cpu_ok: AVX2 and FMA present (the build has the loops). */
typedef struct sm__wino_args {
  int m; /* 2: F(2x2, 3x3), 3: F(3x3, 3x3), 4: F(4x4, 3x3) */
  int64_t N, H, W, C, OH, OW, K, pt, pl;
  const float *x, *U, *bias, *addend;
  const float *filt; /* [3, 3, C, K]: the direct sums of a tile that met NaN */
  float *y;
  int act;
  float alpha;
  int64_t cb; /* channels summed apart before they are added (rounded up to 8; 0: all in one sum) */
} sm__wino_args;
int sm__wino_cpu_ok(void);
size_t sm__wino_packed_floats(int m, int64_t C, int64_t K);
void sm__wino_pack(int m, const float *filt, int64_t C, int64_t K, float *U);
int64_t sm__wino_block(int64_t C, int64_t K);
size_t sm__wino_scratch_floats(int64_t C, int64_t K, int64_t T);
int64_t sm__wino_tiles(const sm__wino_args *a);
void sm__wino_run(const sm__wino_args *a, int64_t t0, int64_t t1, int64_t kb0, int64_t kb1, int64_t T,
                  float *scratch);

/* The float NHWC 3x3 depthwise convolution on AVX-512 (nn_dwconv.c): out = act(conv + bias) over
 * output rows [begin, end) (n * OH + oh) of in [N, H, W, C] with filter [3, 3, C, 1]; bias may be
 * NULL; pt / pl the top / left padding. sm__nn_dw3x3_ok says whether it runs the shape. */
typedef struct sm__nn_dw_args {
  const float *in, *filt, *bias;
  float *out;
  int64_t N, H, W, C, OH, OW, sh, sw, pt, pl;
  int act;
  float alpha;
} sm__nn_dw_args;
int sm__nn_dw3x3_ok(int64_t KH, int64_t KW, int64_t mult, int64_t sh, int64_t sw, int64_t dh, int64_t dw);
void sm__nn_dw3x3_rows(const sm__nn_dw_args *d, int64_t begin, int64_t end);
/* Its AVX2 + FMA clone for CPUs without AVX-512 (nn_dwconv_avx2.c, the same bits), for the shapes
 * sm__nn_dw3x3_avx2_ok accepts (the caller has checked the window, multiplier, strides, dilation). */
int sm__nn_dw3x3_avx2_ok(const sm__nn_dw_args *d);
void sm__nn_dw3x3_rows_avx2(const sm__nn_dw_args *d, int64_t begin, int64_t end);

/* The kernels (op names in nn.c's table). */
sm_status *sm__nn_matmul_prepare(const sm_node *n, void **state);
sm_status *sm__nn_matmul(const void *state, sm_kctx *ctx);
sm_status *sm__nn_batch_matmul_prepare(const sm_node *n, void **state);
sm_status *sm__nn_batch_matmul(const void *state, sm_kctx *ctx);
sm_status *sm__nn_einsum_prepare(const sm_node *n, void **state);
sm_status *sm__nn_einsum(const void *state, sm_kctx *ctx);
void sm__nn_einsum_release(void *state);

sm_status *sm__nn_fused_matmul_prepare(const sm_node *n, void **state);

sm_status *sm__nn_conv2d_prepare(const sm_node *n, void **state);
sm_status *sm__nn_conv2d(const void *state, sm_kctx *ctx);
sm_status *sm__nn_fused_conv2d_prepare(const sm_node *n, void **state);
sm_status *sm__nn_fused_conv2d(const void *state, sm_kctx *ctx);
sm_status *sm__nn_depthwise_prepare(const sm_node *n, void **state);
sm_status *sm__nn_depthwise(const void *state, sm_kctx *ctx);
sm_status *sm__nn_fused_depthwise_prepare(const sm_node *n, void **state);
sm_status *sm__nn_fused_depthwise(const void *state, sm_kctx *ctx);
void sm__nn_conv_release(void *state); /* the three convolutions' */
void sm__nn_matmul_release(void *state); /* MatMul's and _FusedMatMul's */

sm_status *sm__nn_pool_prepare(const sm_node *n, void **state);
sm_status *sm__nn_pool_v2_prepare(const sm_node *n, void **state);
sm_status *sm__nn_pool(const void *state, sm_kctx *ctx);

sm_status *sm__nn_bias_add_prepare(const sm_node *n, void **state);
sm_status *sm__nn_bias_add(const void *state, sm_kctx *ctx);
sm_status *sm__nn_batch_norm_prepare(const sm_node *n, void **state);
sm_status *sm__nn_batch_norm(const void *state, sm_kctx *ctx);

#endif
