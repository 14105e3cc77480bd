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

#define SMCU_ABI_VERSION 1
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
} smcu_api;

/* The module's one export: its table, or NULL when abi is not the version it was built for. */
const smcu_api *smcu_get_api(int abi);
typedef const smcu_api *(*smcu_get_api_fn)(int abi);

#ifdef __cplusplus
}
#endif
#endif
