// module.cu - libsavedmodel_cuda.so's entry point (smcu_get_api) and its runtime side: finding a
// GPU, the stream pool (each stream with its cuBLAS and cuDNN handles), device memory from a
// stream-ordered pool that keeps what is freed (the arena: cudaMallocAsync with the release
// threshold at its maximum), and host<->device copies. Everything is C-callable (smcu.h).
#include <stdlib.h>
#include <string.h>

#include <mutex>

#include "cuda/internal.cuh"

int smcu_tf32 = 0;

static std::mutex mu;
static int opened;
static char device_desc[300];
static smcu_stream *free_streams; // under mu

static int m_open(char *err) {
  std::lock_guard<std::mutex> lock(mu);
  if (opened) return 0;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return fail_cuda(err, "cudaGetDeviceCount (is the NVIDIA driver installed?)", e);
  if (n < 1) return fail_msg(err, "cudaGetDeviceCount: no CUDA GPU found");
  CU(cudaSetDevice(0));
  cudaDeviceProp p;
  CU(cudaGetDeviceProperties(&p, 0));
  snprintf(device_desc, sizeof device_desc, "%.200s (sm_%d%d, %.0f GiB)", p.name, p.major, p.minor,
           (double)p.totalGlobalMem / (1024.0 * 1024 * 1024));
  cudaMemPool_t pool;
  CU(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t keep = UINT64_MAX; // the arena: freed blocks stay in the pool for the next run
  CU(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  size_t ver = cudnnGetVersion();
  if (ver < 90000) {
    snprintf(err, SMCU_ERR, "cudnnGetVersion: cuDNN %zu is older than 9", ver);
    return 1;
  }
  const char *tf32 = getenv("SM_CUDA_TF32");
  smcu_tf32 = tf32 && !strcmp(tf32, "1");
  opened = 1;
  return 0;
}

static void m_describe(char *buf, size_t cap) { snprintf(buf, cap, "%s", opened ? device_desc : "(not open)"); }

static int m_stream_get(void **out, char *err) {
  *out = NULL;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (free_streams) {
      *out = free_streams;
      free_streams = free_streams->next_free;
      return 0;
    }
  }
  smcu_stream *s = static_cast<smcu_stream *>(calloc(1, sizeof *s));
  if (!s) return fail_msg(err, "stream: out of host memory");
  cudaError_t e = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    free(s);
    return fail_cuda(err, "cudaStreamCreateWithFlags", e);
  }
  cublasStatus_t b = cublasCreate(&s->blas);
  if (b == CUBLAS_STATUS_SUCCESS) b = cublasSetStream(s->blas, s->s);
  if (b == CUBLAS_STATUS_SUCCESS)
    b = cublasSetMathMode(s->blas, smcu_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH);
  if (b != CUBLAS_STATUS_SUCCESS) {
    if (s->blas) cublasDestroy(s->blas);
    cudaStreamDestroy(s->s);
    free(s);
    return fail_blas(err, "cublasCreate/cublasSetStream/cublasSetMathMode", b);
  }
  cudnnStatus_t d = cudnnCreate(&s->dnn);
  if (d == CUDNN_STATUS_SUCCESS) d = cudnnSetStream(s->dnn, s->s);
  if (d != CUDNN_STATUS_SUCCESS) {
    if (s->dnn) cudnnDestroy(s->dnn);
    cublasDestroy(s->blas);
    cudaStreamDestroy(s->s);
    free(s);
    return fail_dnn(err, "cudnnCreate/cudnnSetStream", d);
  }
  *out = s;
  return 0;
}

static int m_stream_put(void *p, char *err) {
  smcu_stream *s = S_(p);
  if (!s) return 0;
  cudaError_t e = cudaStreamSynchronize(s->s);
  if (e != cudaSuccess) {
    // a sticky error (a kernel fault) leaves the context unusable: the stream is not reused
    return fail_cuda(err, "cudaStreamSynchronize (the run's GPU work)", e);
  }
  std::lock_guard<std::mutex> lock(mu);
  s->next_free = free_streams;
  free_streams = s;
  return 0;
}

int cu_alloc(void *stream, size_t bytes, void **p, char *err) {
  *p = NULL;
  if (!stream) {
    CU(cudaMalloc(p, bytes ? bytes : 1));
    return 0;
  }
  CU(cudaMallocAsync(p, bytes ? bytes : 1, stream_of(stream)));
  return 0;
}

void cu_release(void *stream, void *p) {
  if (!p) return;
  if (stream) cudaFreeAsync(p, stream_of(stream)); // ordered after the work queued on it
  else cudaFree(p);
}

static int m_h2d(void *stream, void *dst, const void *src, size_t bytes, char *err) {
  CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(stream)));
  if (!stream) CU(cudaStreamSynchronize(cudaStreamPerThread));
  return 0;
}

static int m_d2h(void *stream, void *dst, const void *src, size_t bytes, char *err) {
  CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(stream)));
  CU(cudaStreamSynchronize(stream_of(stream)));
  return 0;
}

static int m_copy2d(void *stream, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                    char *err) {
  CU(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, stream_of(stream)));
  return 0;
}

static const smcu_api table = {
    SMCU_ABI_VERSION, m_open,         m_describe, m_stream_get,   m_stream_put, cu_alloc, cu_release,
    m_h2d,            m_d2h,          m_copy2d,   cu_unary,     cu_binary,  cu_bias_act,
    cu_batchnorm,   cu_gemm,      cu_conv2d, cu_pool,     cu_mean_mid, cu_softmax,
    cu_transpose,   cu_pad,       &smcu_train_table,
};

extern "C" __attribute__((visibility("default"))) const smcu_api *smcu_get_api(int abi) {
  return abi == SMCU_ABI_VERSION ? &table : NULL;
}
