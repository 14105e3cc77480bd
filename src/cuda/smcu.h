/* smcu.h - the C ABI between the core library and libsavedmodel_cuda.so (the .cu files of src/cuda), the
 * one part of the project compiled by nvcc. The core dlopens the module at first use
 * (src/runtime/gpu/cuda_backend.c) and asks smcu_get_api for this table; the module links
 * libcudart, libcublas and libcudnn, so nothing CUDA is loaded where the GPU is not asked for.
 *
 * Every call that can fail returns 0 on success, else nonzero with a message in err (SMCU_ERR
 * bytes) naming the CUDA / cuBLAS / cuDNN call and its status. Work is queued on `stream` (a
 * stream of the module's pool: stream_get / stream_put); pointers are device memory but where
 * said. Elements are float32, tensors row-major, images NHWC, filters TF's HWIO. */
#ifndef SM_CUDA_SMCU_H
#define SM_CUDA_SMCU_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SMCU_ABI_VERSION 2
#define SMCU_ERR 320
#define SMCU_MAX_RANK 8

/* Activations (unary ops, and the epilogue of bias_act). */
enum {
  SMCU_ID = 0, SMCU_RELU, SMCU_RELU6, SMCU_ELU, SMCU_SIGMOID, SMCU_TANH, SMCU_SWISH, SMCU_LEAKY_RELU,
  SMCU_NEG, SMCU_RSQRT, SMCU_SQRT, SMCU_SQUARE, SMCU_EXP
};
/* Binary elementwise ops. */
enum { SMCU_ADD = 0, SMCU_SUB, SMCU_MUL, SMCU_DIV, SMCU_MAX, SMCU_MIN };

/* y = a op b with broadcasting: y has rank dims; a and b are read at sum(i_k * stride_k) (stride
 * 0 on a broadcast dimension). */
typedef struct smcu_bcast {
  int rank;
  int64_t dims[SMCU_MAX_RANK];
  int64_t astr[SMCU_MAX_RANK], bstr[SMCU_MAX_RANK];
} smcu_bcast;

/* A 2-D convolution, NHWC input [n, h, w, c], filter HWIO [kh, kw, c / groups, k], output
 * [n, oh, ow, k], symmetric padding (the caller pads asymmetric SAME itself). groups == c for a
 * depthwise convolution (k = c x multiplier). */
typedef struct smcu_conv {
  int64_t n, h, w, c, k, kh, kw, oh, ow;
  int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups;
} smcu_conv;

/* A 2-D pooling window over NHWC [n, h, w, c] -> [n, oh, ow, c]; pad_top/left leading pads (SAME);
 * avg: TF's AvgPool divides by the number of elements inside the input. */
typedef struct smcu_pool {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pad_top, pad_left;
  int avg;
} smcu_pool;

/* One optimizer step's factors (src/train/optim.c computes them on the host, as Keras does):
 * kind is sm_optimizer's (SM_OPT_SGD 0, ADAM 1, ADAMW 2, RMSPROP 3 as include/savedmodel/train.h). */
typedef struct smcu_opt {
  int kind, nesterov, centered;
  float lr, mom, alpha, omb1, omb2, eps, wd, rho, omrho;
} smcu_opt;

/* The training kernels (src/cuda/train_*.cu), used by the trainer's GPU backend
 * (src/train/fit_gpu.c). Same conventions as smcu_api; every call needs a stream. */
typedef struct smcu_train_api {
  /* conv2d as smcu_api's, with cuDNN's algorithm choice kept per shape (a step repeats them). */
  int (*conv2d_fwd)(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err);
  /* gx = the gradient of conv2d(x, w) w.r.t. x from gy ([n, oh, ow, k]); w HWIO. */
  int (*conv2d_bwd_data)(void *stream, const smcu_conv *cv, const float *gy, const float *w, float *gx, char *err);
  /* gw (HWIO) = the gradient w.r.t. the filter from x and gy. */
  int (*conv2d_bwd_filter)(void *stream, const smcu_conv *cv, const float *x, const float *gy, float *gw, char *err);
  /* Max pooling (not avg) that keeps each output's argmax (an index into x, the first maximum of
   * the window in row-major order, as the CPU's), and its backward: gx = 0, then each gy added at
   * its argmax. */
  int (*maxpool_fwd)(void *stream, const smcu_pool *pl, const float *x, float *y, int64_t *argmax, char *err);
  int (*maxpool_bwd)(void *stream, const smcu_pool *pl, const float *gy, const int64_t *argmax, float *gx, char *err);
  /* g = y > 0 ? g : 0 (relu's backward from its output). */
  int (*relu_bwd)(void *stream, const float *y, float *g, int64_t n, char *err);
  /* y = a * b elementwise. */
  int (*mul)(void *stream, const float *a, const float *b, float *y, int64_t n, char *err);
  int (*fill)(void *stream, float *y, float value, int64_t n, char *err);
  /* dst row i = src row idx[i] (rows of `per` 4-byte words), i < rows. */
  int (*gather32)(void *stream, const void *src, const int32_t *idx, int64_t rows, int64_t per, void *dst, char *err);
  /* Inverted dropout: mask = U >= rate ? 1 / (1 - rate) : 0, y = x * mask; U from a counter-based
   * hash of (seed, i). */
  int (*dropout)(void *stream, const float *x, float *y, float *mask, int64_t n, float rate, uint64_t seed, char *err);
  /* Sparse categorical cross-entropy over out [rows, k] with labels [rows]: logits (mode 0) or
   * softmax probabilities whose gradient is taken w.r.t. the softmax's input (mode 1). g (NULL:
   * not wanted) = the gradient of the batch's mean loss; acc[0] += the summed loss, acc[1] += the
   * number of correct argmaxes (doubles in device memory; rowbuf: 2 x rows doubles of scratch). */
  int (*sparse_xent)(void *stream, const float *out, const int32_t *labels, int64_t rows, int64_t k, int mode,
                     float *g, double *rowbuf, double *acc, char *err);
  /* One optimizer update of n weights w by gradient g (slots s0, s1, s2 as src/train/optim.c). */
  int (*opt_update)(void *stream, const smcu_opt *o, float *w, const float *g, float *s0, float *s1, float *s2,
                    int64_t n, char *err);
  /* The Keras-config layers (src/train/layers.c's formulas). y = x * scale + offset (Rescaling, and
   * its backward with offset 0); leaky relu's backward gx = x > 0 ? gy : gy * slope. */
  int (*affine)(void *stream, const float *x, float *y, int64_t n, float scale, float offset, char *err);
  int (*leaky_bwd)(void *stream, const float *x, const float *gy, float *gx, int64_t n, float slope, char *err);
  /* GlobalAveragePooling2D's backward: gx [n, hw, c] = gy [n, c] / hw. */
  int (*gap_bwd)(void *stream, const float *gy, float *gx, int64_t n, int64_t hw, int64_t c, char *err);
  /* AvgPool's backward (pl->avg: each window divides by its in-bounds count): gx = 0, then each gy /
   * count added over its window. */
  int (*avgpool_bwd)(void *stream, const smcu_pool *pl, const float *gy, float *gx, char *err);
  /* Batch normalization over the last axis of x [rows, c]: stats [2c] = the mean and 1 / sqrt(var +
   * eps) of each channel, from the batch (training: the moving mean mm and variance mv updated with
   * momentum) or from mm, mv; then y = (x - mean) * inv * gamma + beta. */
  int (*bn_stats)(void *stream, const float *x, float *mm, float *mv, int64_t rows, int64_t c, int training,
                  float momentum, float eps, float *stats, char *err);
  int (*bn_apply)(void *stream, const float *x, const float *gamma, const float *beta, const float *stats, float *y,
                  int64_t rows, int64_t c, char *err);
  /* Its backward: gk (gamma's gradient, 0 unless use_scale), gb (beta's, 0 unless center) and gx (NULL:
   * not wanted) = gamma * inv / rows * (rows * gy - sum(gy) - xhat * sum(gy * xhat)). */
  int (*bn_bwd)(void *stream, const float *x, const float *gy, const float *gamma, const float *stats, int64_t rows,
                int64_t c, int use_scale, int center, float *gx, float *gk, float *gb, char *err);
} smcu_train_api;

typedef struct smcu_api {
  int abi; /* SMCU_ABI_VERSION */
  /* Finds the driver and a GPU (device 0), makes the cuBLAS and cuDNN handles and the memory
   * arena (a stream-ordered pool that keeps what it frees). Once per process; idempotent. */
  int (*open)(char *err);
  /* "NVIDIA H200 (sm_90, 139 GiB)" */
  void (*describe)(char *buf, size_t cap);
  int (*stream_get)(void **stream, char *err);
  /* Waits for the stream's work (reporting a failure in it) and gives it back to the pool. */
  int (*stream_put)(void *stream, char *err);
  /* Device memory from the arena, ordered on stream (NULL: usable by every stream at once). */
  int (*alloc)(void *stream, size_t bytes, void **p, char *err);
  void (*release)(void *stream, void *p); /* stream: the one it was allocated on (NULL too) */
  /* src is host memory (h2d) / dst is host memory (d2h, which waits for the copy). */
  int (*h2d)(void *stream, void *dst, const void *src, size_t bytes, char *err);
  int (*d2h)(void *stream, void *dst, const void *src, size_t bytes, char *err);
  /* height rows of width bytes, from src (row pitch spitch) to dst (dpitch), device to device. */
  int (*copy2d)(void *stream, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                char *err);
  int (*unary)(void *stream, int act, float alpha, const float *x, float *y, int64_t n, char *err);
  int (*binary)(void *stream, int op, const float *a, const float *b, float *y, const smcu_bcast *bc, char *err);
  /* y[r, c] = act(x[r, c] + bias[c]) (bias NULL: no bias); x == y allowed. */
  int (*bias_act)(void *stream, const float *x, const float *bias, float *y, int64_t rows, int64_t cols, int act,
                  float alpha, char *err);
  /* y[r, c] = x[r, c] * scale[c] + shift[c], with scale, shift computed from a batch norm's
   * gamma, beta, mean, variance, epsilon (inference). */
  int (*batchnorm)(void *stream, const float *x, const float *gamma, const float *beta, const float *mean,
                   const float *var, float eps, float *y, int64_t rows, int64_t cols, char *err);
  /* batch of C[m, n] = op(A) op(B), row-major; op(A) is [m, k], transposed when ta. Strides
   * between the batch's matrices (0: the same matrix for each). */
  int (*gemm)(void *stream, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t sa, const float *b,
              int64_t sb, float *c, int64_t sc, int64_t batch, char *err);
  int (*conv2d)(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err);
  int (*pool)(void *stream, const smcu_pool *pl, const float *x, float *y, char *err);
  /* y[i, c] = mean over j of x[i, j, c] (x [outer, inner, cols]): a spatial mean, a reduction. */
  int (*mean_mid)(void *stream, const float *x, float *y, int64_t outer, int64_t inner, int64_t cols, char *err);
  /* softmax over the last dimension (rows x cols). */
  int (*softmax)(void *stream, const float *x, float *y, int64_t rows, int64_t cols, char *err);
  /* y = transpose(x, perm): x's dims xdims, y's dims[i] = xdims[perm[i]]; es bytes per element. */
  int (*transpose)(void *stream, const void *x, void *y, int rank, const int64_t *xdims, const int *perm, size_t es,
                   char *err);
  /* y (dims ydims) = x (dims xdims) placed at offset before[] in a field of `value`. */
  int (*pad)(void *stream, const float *x, float *y, int rank, const int64_t *xdims, const int64_t *before,
             const int64_t *ydims, float value, char *err);
  const smcu_train_api *train; /* the training kernels (ABI 2) */
} smcu_api;

/* The module's one export: its table, or NULL when abi is not the version it was built for. */
const smcu_api *smcu_get_api(int abi);
typedef const smcu_api *(*smcu_get_api_fn)(int abi);

#ifdef __cplusplus
}
#endif
#endif
