// internal.cuh - what the module's .cu files share: the pooled stream (with its cuBLAS and cuDNN
// handles), error formatting that names the call, the launch shape of elementwise kernels and a
// pooling output's window.
#ifndef SM_CUDA_INTERNAL_CUH
#define SM_CUDA_INTERNAL_CUH
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>

#include "cuda/smcu.h"

// One stream of the pool, with its own handles (a cuBLAS / cuDNN handle is bound to one stream at
// a time, so runs on different streams never share one).
struct smcu_stream {
  cudaStream_t s;
  cublasHandle_t blas;
  cudnnHandle_t dnn;
  smcu_stream *next_free;
};

static inline smcu_stream *S_(void *p) { return static_cast<smcu_stream *>(p); }
static inline cudaStream_t stream_of(void *p) { return p ? S_(p)->s : cudaStreamPerThread; }

// "call: message (code)" into err; returns 1 (for `return fail_...`).
static inline int fail_cuda(char *err, const char *call, cudaError_t e) {
  snprintf(err, SMCU_ERR, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
  return 1;
}
static inline int fail_blas(char *err, const char *call, cublasStatus_t e) {
  snprintf(err, SMCU_ERR, "%s: %s (%d)", call, cublasGetStatusString(e), (int)e);
  return 1;
}
static inline int fail_dnn(char *err, const char *call, cudnnStatus_t e) {
  snprintf(err, SMCU_ERR, "%s: %s", call, cudnnGetErrorString(e));
  return 1;
}
static inline int fail_msg(char *err, const char *what) {
  snprintf(err, SMCU_ERR, "%s", what);
  return 1;
}

#define CU(call)                                        \
  do {                                                  \
    cudaError_t e_ = (call);                            \
    if (e_ != cudaSuccess) return fail_cuda(err, #call, e_); \
  } while (0)
#define BL(call)                                                    \
  do {                                                              \
    cublasStatus_t e_ = (call);                                     \
    if (e_ != CUBLAS_STATUS_SUCCESS) return fail_blas(err, #call, e_); \
  } while (0)

// After a kernel launch: a bad configuration is reported here, a fault in the kernel at the
// run's end (stream_put).
#define LAUNCHED(name)                                              \
  do {                                                              \
    cudaError_t e_ = cudaGetLastError();                            \
    if (e_ != cudaSuccess) return fail_cuda(err, name " launch", e_); \
  } while (0)

static const int kThreads = 256;
static inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 65535 * 16 ? 65535 * 16 : (b < 1 ? 1 : b)); // grid-stride loops cover the rest
}
#define GRID_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

// Output i of a pooling over NHWC (i runs over [n, oh, ow, c]): its sample b, channel c and the
// in-bounds part of its window, rows [h0, h1) and columns [w0, w1) (empty when h0 >= h1 or w0 >= w1).
struct pool_win {
  int64_t b, c, h0, h1, w0, w1;
};
__device__ static inline pool_win pool_window(const smcu_pool &p, int64_t i) {
  pool_win q;
  int64_t r = i / p.c, ow = r % p.ow, oh = (r / p.ow) % p.oh;
  q.c = i % p.c, q.b = r / (p.ow * p.oh);
  q.h0 = oh * p.sh - p.pad_top, q.w0 = ow * p.sw - p.pad_left;
  q.h1 = q.h0 + p.kh < p.h ? q.h0 + p.kh : p.h, q.w1 = q.w0 + p.kw < p.w ? q.w0 + p.kw : p.w;
  q.h0 = q.h0 > 0 ? q.h0 : 0;
  q.w0 = q.w0 > 0 ? q.w0 : 0;
  return q;
}

// Implemented in the other files, listed in module.cu's table.
int cu_unary(void *stream, int act, float alpha, const float *x, float *y, int64_t n, char *err);
int cu_binary(void *stream, int op, const float *a, const float *b, float *y, const smcu_bcast *bc, char *err);
int cu_bias_act(void *stream, const float *x, const float *bias, float *y, int64_t rows, int64_t cols, int act,
                  float alpha, char *err);
int cu_batchnorm(void *stream, const float *x, const float *gamma, const float *beta, const float *mean,
                   const float *var, float eps, float *y, int64_t rows, int64_t cols, char *err);
int cu_pool(void *stream, const smcu_pool *pl, const float *x, float *y, char *err);
int cu_mean_mid(void *stream, const float *x, float *y, int64_t outer, int64_t inner, int64_t cols, char *err);
int cu_softmax(void *stream, const float *x, float *y, int64_t rows, int64_t cols, char *err);
int cu_transpose(void *stream, const void *x, void *y, int rank, const int64_t *xdims, const int *perm, size_t es,
                   char *err);
int cu_pad(void *stream, const float *x, float *y, int rank, const int64_t *xdims, const int64_t *before,
             const int64_t *ydims, float value, char *err);
int cu_gemm(void *stream, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t sa,
              const float *b, int64_t sb, float *c, int64_t sc, int64_t batch, char *err);
int cu_conv2d(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err);
int cu_alloc(void *stream, size_t bytes, void **p, char *err);
void cu_release(void *stream, void *p);
extern const smcu_train_api smcu_train_table; // train_kernels.cu (backward convolutions in train_dnn.cu)
extern int smcu_tf32; // SM_CUDA_TF32=1: let cuBLAS / cuDNN use TF32 tensor cores (faster, ~1e-3 relative)

#endif
