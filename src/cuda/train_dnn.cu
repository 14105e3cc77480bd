// train_dnn.cu - the convolutions of training through cuDNN: the forward, the gradient with respect
// to the input (cudnnConvolutionBackwardData) and to the filter (cudnnConvolutionBackwardFilter),
// NHWC, float32, the same descriptors as dnn.cu's forward (TF's HWIO filter transposed to cuDNN's
// KRSC in a scratch buffer on the stream, and the filter gradient transposed back). Algorithms
// from cuDNN's heuristics, asked once per convolution shape and kept (a training step repeats the
// same shapes thousands of times; the query costs more than a small convolution); FMA math unless
// SM_CUDA_TF32=1.
#include <limits.h>
#include <string.h>

#include <mutex>

#include "cuda/internal.cuh"

#define DN(call)                                                                   \
  do {                                                                             \
    cudnnStatus_t e_ = (call);                                                     \
    if (e_ != CUDNN_STATUS_SUCCESS) {                                              \
      rc = fail_dnn(err, #call, e_);                                               \
      goto out;                                                                    \
    }                                                                              \
  } while (0)

namespace {
// The descriptors of one convolution (destroyed by the destructor, whatever happened).
struct convdesc {
  cudnnTensorDescriptor_t x = NULL, y = NULL;
  cudnnFilterDescriptor_t f = NULL;
  cudnnConvolutionDescriptor_t c = NULL;
  ~convdesc() {
    if (c) cudnnDestroyConvolutionDescriptor(c);
    if (f) cudnnDestroyFilterDescriptor(f);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};
} // namespace

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

static int describe(const smcu_conv *cv, convdesc *d, char *err) {
  const int64_t vals[] = {cv->n, cv->h, cv->w, cv->c, cv->k, cv->kh, cv->kw, cv->oh, cv->ow, cv->pad_h, cv->pad_w,
                          cv->stride_h, cv->stride_w, cv->dil_h, cv->dil_w, cv->groups};
  for (int64_t v : vals)
    if (!fits_int(v)) return fail_msg(err, "conv2d (training): a dimension passes cuDNN's 32-bit limit");
  if (cv->groups < 1 || cv->c % cv->groups || cv->k % cv->groups)
    return fail_msg(err, "conv2d (training): bad group count");
  int rc = 0, on, oc, oh, ow;
  int cg = (int)(cv->c / cv->groups);
  DN(cudnnCreateTensorDescriptor(&d->x));
  DN(cudnnCreateTensorDescriptor(&d->y));
  DN(cudnnCreateFilterDescriptor(&d->f));
  DN(cudnnCreateConvolutionDescriptor(&d->c));
  DN(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, (int)cv->n, (int)cv->c, (int)cv->h,
                                (int)cv->w));
  DN(cudnnSetFilter4dDescriptor(d->f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, (int)cv->k, cg, (int)cv->kh, (int)cv->kw));
  DN(cudnnSetConvolution2dDescriptor(d->c, (int)cv->pad_h, (int)cv->pad_w, (int)cv->stride_h, (int)cv->stride_w,
                                     (int)cv->dil_h, (int)cv->dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DN(cudnnSetConvolutionGroupCount(d->c, (int)cv->groups));
  DN(cudnnSetConvolutionMathType(d->c, smcu_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  DN(cudnnGetConvolution2dForwardOutputDim(d->c, d->x, d->f, &on, &oc, &oh, &ow));
  if (on != cv->n || oc != cv->k || oh != cv->oh || ow != cv->ow) {
    snprintf(err, SMCU_ERR, "conv2d (training): cuDNN's output shape [%d,%d,%d,%d] is not TF's [%lld,%lld,%lld,%lld]",
             on, oh, ow, oc, (long long)cv->n, (long long)cv->oh, (long long)cv->ow, (long long)cv->k);
    return 1;
  }
  DN(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, on, oc, oh, ow));
out:
  return rc;
}

static size_t filter_bytes(const smcu_conv *cv) {
  return (size_t)(cv->kh * cv->kw * (cv->c / cv->groups) * cv->k) * sizeof(float);
}

// ---- the algorithm cache ------------------------------------------------------------------------
enum { OP_FWD = 0, OP_BWD_DATA = 1, OP_BWD_FILTER = 2, kAlgos = 8 };
namespace {
struct algo_entry {
  smcu_conv cv; // n included: the batch's last step has its own entry
  int op, tf32, algo;
  size_t ws;
};
} // namespace
static std::mutex cache_mu;
static algo_entry cache[128];
static int cache_n, cache_next; // when full, the oldest entry goes

static int pick(cudnnHandle_t h, const smcu_conv *cv, const convdesc &d, int op, int *algo, size_t *ws, char *err) {
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    for (int i = 0; i < cache_n; i++)
      if (cache[i].op == op && cache[i].tf32 == smcu_tf32 && !memcmp(&cache[i].cv, cv, sizeof *cv)) {
        *algo = cache[i].algo;
        *ws = cache[i].ws;
        return 0;
      }
  }
  // cuDNN's ranking, best first; the first that can run this convolution (status success)
  int rc = 0, returned = 0, found = 0;
  if (op == OP_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[kAlgos];
    DN(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.f, d.c, d.y, kAlgos, &returned, perf));
    for (int i = 0; i < returned && !found; i++)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        *algo = (int)perf[i].algo, found = 1;
        DN(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.f, d.c, d.y, perf[i].algo, ws));
      }
  } else if (op == OP_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kAlgos];
    DN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.f, d.y, d.c, d.x, kAlgos, &returned, perf));
    for (int i = 0; i < returned && !found; i++)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        *algo = (int)perf[i].algo, found = 1;
        DN(cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.f, d.y, d.c, d.x, perf[i].algo, ws));
      }
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kAlgos];
    DN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.c, d.f, kAlgos, &returned, perf));
    for (int i = 0; i < returned && !found; i++)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        *algo = (int)perf[i].algo, found = 1;
        DN(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.c, d.f, perf[i].algo, ws));
      }
  }
  if (!found) {
    static const char *what[] = {"forward", "backward data", "backward filter"};
    snprintf(err, SMCU_ERR, "cudnnGetConvolution*Algorithm_v7: no %s algorithm for this convolution", what[op]);
    return 1;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    algo_entry &e = cache[cache_next];
    e.cv = *cv, e.op = op, e.tf32 = smcu_tf32, e.algo = *algo, e.ws = *ws;
    cache_next = (cache_next + 1) % 128;
    if (cache_n < 128) cache_n++;
  }
out:
  return rc;
}

// One call: the descriptors, the filter in cuDNN's KRSC layout (the filter, transposed from HWIO;
// or room for the filter gradient), the cached algorithm and its workspace; the scratch is released
// (stream-ordered, after the call's work) by the destructor.
namespace {
struct conv_call {
  void *stream = NULL, *wt = NULL, *ws = NULL;
  convdesc d;
  int algo = 0;
  size_t wsize = 0;
  ~conv_call() {
    cu_release(stream, ws);
    cu_release(stream, wt);
  }
};
} // namespace

static int prepare(void *stream, const smcu_conv *cv, int op, const float *w, conv_call *c, char *err) {
  if (!stream) return fail_msg(err, "conv2d (training): no stream");
  c->stream = stream;
  if (describe(cv, &c->d, err) || cu_alloc(stream, filter_bytes(cv), &c->wt, err)) return 1;
  if (w) { // HWIO [kh, kw, cg, k] -> KRSC [k, kh, kw, cg]
    const int64_t hwio[4] = {cv->kh, cv->kw, cv->c / cv->groups, cv->k};
    const int perm[4] = {3, 0, 1, 2};
    if (cu_transpose(stream, w, c->wt, 4, hwio, perm, sizeof(float), err)) return 1;
  }
  if (pick(S_(stream)->dnn, cv, c->d, op, &c->algo, &c->wsize, err)) return 1;
  return c->wsize && cu_alloc(stream, c->wsize, &c->ws, err);
}

static const float one = 1.f, zero = 0.f;

int cu_conv2d_fwd_cached(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err) {
  conv_call c;
  int rc = prepare(stream, cv, OP_FWD, w, &c, err);
  if (rc) return rc;
  DN(cudnnConvolutionForward(S_(stream)->dnn, &one, c.d.x, x, c.d.f, c.wt, c.d.c, (cudnnConvolutionFwdAlgo_t)c.algo,
                             c.ws, c.wsize, &zero, c.d.y, y));
out:
  return rc;
}

int cu_conv2d_bwd_data(void *stream, const smcu_conv *cv, const float *gy, const float *w, float *gx, char *err) {
  conv_call c;
  int rc = prepare(stream, cv, OP_BWD_DATA, w, &c, err);
  if (rc) return rc;
  DN(cudnnConvolutionBackwardData(S_(stream)->dnn, &one, c.d.f, c.wt, c.d.y, gy, c.d.c,
                                  (cudnnConvolutionBwdDataAlgo_t)c.algo, c.ws, c.wsize, &zero, c.d.x, gx));
out:
  return rc;
}

int cu_conv2d_bwd_filter(void *stream, const smcu_conv *cv, const float *x, const float *gy, float *gw, char *err) {
  conv_call c;
  int rc = prepare(stream, cv, OP_BWD_FILTER, NULL, &c, err);
  if (rc) return rc;
  DN(cudnnConvolutionBackwardFilter(S_(stream)->dnn, &one, c.d.x, x, c.d.y, gy, c.d.c,
                                    (cudnnConvolutionBwdFilterAlgo_t)c.algo, c.ws, c.wsize, &zero, c.d.f, c.wt));
  {
    // KRSC [k, kh, kw, cg] -> HWIO [kh, kw, cg, k]
    const int64_t krsc[4] = {cv->k, cv->kh, cv->kw, cv->c / cv->groups};
    const int perm[4] = {1, 2, 3, 0};
    if (cu_transpose(stream, c.wt, gw, 4, krsc, perm, sizeof(float), err)) rc = 1;
  }
out:
  return rc;
}
