// dnn.cu - the products: matrix products through cuBLAS (strided batches, row-major via the
// transposed column-major product) and 2-D convolutions through cuDNN (NHWC, grouped for
// depthwise; TF's HWIO filter is transposed to cuDNN's KRSC in a scratch buffer on the stream).
// Float32; FMA math unless SM_CUDA_TF32=1 (then TF32 tensor cores, as TF and PyTorch allow).
#include <limits.h>

#include "cuda/internal.cuh"

#define DN(call)                                                     \
  do {                                                               \
    cudnnStatus_t e_ = (call);                                       \
    if (e_ != CUDNN_STATUS_SUCCESS) { rc = fail_dnn(err, #call, e_); goto out; } \
  } while (0)

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

int cu_gemm(void *stream, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t sa,
              const float *b, int64_t sb, float *c, int64_t sc, int64_t batch, char *err) {
  if (!stream) return fail_msg(err, "gemm: no stream");
  if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(batch))
    return fail_msg(err, "gemm: a dimension passes cuBLAS's 32-bit limit");
  if (!m || !n || !batch) return 0;
  const float one = 1.f, zero = 0.f;
  // row-major C[m,n] = op(A) op(B)  <=>  column-major C^T[n,m] = op(B)^T op(A)^T
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n), ldc = (int)n;
  if (k == 0) { // an empty sum: zeros (cuBLAS would leave C as it is with beta 0? it scales by beta)
    for (int64_t i = 0; i < batch; i++)
      CU(cudaMemsetAsync(c + i * sc, 0, (size_t)(m * n) * sizeof(float), stream_of(stream)));
    return 0;
  }
  BL(cublasSgemmStridedBatched(S_(stream)->blas, opb, opa, (int)n, (int)m, (int)k, &one, b, ldb, sb, a, lda, sa, &zero,
                               c, ldc, sc, (int)batch));
  return 0;
}

int cu_conv2d(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err) {
  if (!stream) return fail_msg(err, "conv2d: no stream");
  const int64_t vals[] = {cv->n, cv->h, cv->w, cv->c, cv->k, cv->kh, cv->kw, cv->oh, cv->ow, cv->pad_h, cv->pad_w,
                          cv->stride_h, cv->stride_w, cv->dil_h, cv->dil_w, cv->groups};
  for (int64_t v : vals)
    if (!fits_int(v)) return fail_msg(err, "conv2d: a dimension passes cuDNN's 32-bit limit");
  if (cv->groups < 1 || cv->c % cv->groups || cv->k % cv->groups) return fail_msg(err, "conv2d: bad group count");
  int rc = 0;
  cudnnHandle_t h = S_(stream)->dnn;
  cudnnTensorDescriptor_t xd = NULL, yd = NULL;
  cudnnFilterDescriptor_t fd = NULL;
  cudnnConvolutionDescriptor_t cd = NULL;
  void *wt = NULL, *ws = NULL;
  int64_t cg = cv->c / cv->groups;
  size_t wbytes = (size_t)(cv->kh * cv->kw * cg * cv->k) * sizeof(float), wsize = 0;
  int on, oc, oh, ow, returned = 0;
  cudnnConvolutionFwdAlgoPerf_t perf;
  const float one = 1.f, zero = 0.f;
  {
    // HWIO [kh, kw, cg, k] -> KRSC [k, kh, kw, cg]
    if (cu_alloc(stream, wbytes, &wt, err)) return 1;
    const int64_t hwio[4] = {cv->kh, cv->kw, cg, cv->k};
    const int perm[4] = {3, 0, 1, 2};
    if (cu_transpose(stream, w, wt, 4, hwio, perm, sizeof(float), err)) {
      rc = 1;
      goto out;
    }
  }
  DN(cudnnCreateTensorDescriptor(&xd));
  DN(cudnnCreateTensorDescriptor(&yd));
  DN(cudnnCreateFilterDescriptor(&fd));
  DN(cudnnCreateConvolutionDescriptor(&cd));
  DN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, (int)cv->n, (int)cv->c, (int)cv->h, (int)cv->w));
  DN(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, (int)cv->k, (int)cg, (int)cv->kh, (int)cv->kw));
  DN(cudnnSetConvolution2dDescriptor(cd, (int)cv->pad_h, (int)cv->pad_w, (int)cv->stride_h, (int)cv->stride_w,
                                     (int)cv->dil_h, (int)cv->dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DN(cudnnSetConvolutionGroupCount(cd, (int)cv->groups));
  DN(cudnnSetConvolutionMathType(cd, smcu_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  DN(cudnnGetConvolution2dForwardOutputDim(cd, xd, fd, &on, &oc, &oh, &ow));
  if (on != cv->n || oc != cv->k || oh != cv->oh || ow != cv->ow) {
    snprintf(err, SMCU_ERR, "conv2d: cuDNN's output shape [%d,%d,%d,%d] is not TF's [%lld,%lld,%lld,%lld]", on, oh, ow,
             oc, (long long)cv->n, (long long)cv->oh, (long long)cv->ow, (long long)cv->k);
    rc = 1;
    goto out;
  }
  DN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, on, oc, oh, ow));
  DN(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, fd, cd, yd, 1, &returned, &perf));
  if (returned < 1 || perf.status != CUDNN_STATUS_SUCCESS) {
    snprintf(err, SMCU_ERR, "cudnnGetConvolutionForwardAlgorithm_v7: no algorithm for this convolution");
    rc = 1;
    goto out;
  }
  DN(cudnnGetConvolutionForwardWorkspaceSize(h, xd, fd, cd, yd, perf.algo, &wsize));
  if (wsize && cu_alloc(stream, wsize, &ws, err)) {
    rc = 1;
    goto out;
  }
  DN(cudnnConvolutionForward(h, &one, xd, x, fd, wt, cd, perf.algo, ws, wsize, &zero, yd, y));
out:
  cu_release(stream, ws); // stream-ordered: after the convolution
  cu_release(stream, wt);
  if (cd) cudnnDestroyConvolutionDescriptor(cd);
  if (fd) cudnnDestroyFilterDescriptor(fd);
  if (yd) cudnnDestroyTensorDescriptor(yd);
  if (xd) cudnnDestroyTensorDescriptor(xd);
  return rc;
}
