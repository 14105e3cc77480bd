/* nn.c - the nn kernel family's table (sm_kernels_nn) and what its kernels share: window attrs
 * (strides, dilations, padding, data_format), TF's windowed output size, NCHW<->NHWC transposes
 * and the one-time OpenBLAS set-up. The kernels live in nn_matmul.c, nn_conv.c, nn_pool.c and
 * nn_norm.c; the family's graph rewrites (fusion) and the fused ops' attrs in nn_fuse.c. Spec:
 * shared/spec/ops.md §3.7, §3.8; TF's conv_ops.cc/pooling_ops_common.cc messages.
 *
 * Threading choice: OpenBLAS runs single-threaded (openblas_set_num_threads(1), once) and every
 * large kernel splits its rows over the runtime's pool with sm__parallel_for, each chunk calling
 * sgemm on its own slice. One scheduler then owns the cores: OpenBLAS's own threads would
 * oversubscribe them when several plan threads or pool chunks call gemm at once (and OpenBLAS
 * 0.3.21 serialises concurrent threaded calls behind one lock). A pool of NULL (nthreads = 1) then
 * means one thread, as the caller asked. The setting is process-wide: a host program that also
 * calls OpenBLAS gets it single-threaded after the first model with gemm kernels loads. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single(void) { openblas_set_num_threads(1); }
void sm__nn_blas_init(void) { pthread_once(&blas_once, blas_single); }

sm_status *sm__nn_out_size(int64_t in, int64_t k, int64_t dilation, int64_t stride, int padding,
                           int64_t pad_before, int64_t pad_after, int64_t *out, int64_t *pad_lead) {
  if (stride <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Stride must be > 0, but got %lld", (long long)stride);
  if (dilation < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Dilation rate must be >= 1, but got %lld", (long long)dilation);
  int64_t eff;
  if (k < 0 || __builtin_mul_overflow(k > 0 ? k - 1 : 0, dilation, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
      in > INT64_MAX / 4 || pad_before > INT64_MAX / 4 || pad_after > INT64_MAX / 4 || eff > INT64_MAX / 4 ||
      stride > INT64_MAX / 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "window too large (input %lld, filter %lld, dilation %lld)",
                         (long long)in, (long long)k, (long long)dilation);
  if (k == 0) eff = 0; /* TF: (0 - 1) * d + 1; only reachable with empty filters */
  int64_t o, lead = 0;
  switch (padding) {
    case SM_NN_VALID:
      o = (in - eff + stride) / stride;
      break;
    case SM_NN_EXPLICIT:
      o = (in + pad_before + pad_after - eff + stride) / stride;
      lead = pad_before;
      break;
    default: { /* SAME */
      o = (in + stride - 1) / stride;
      int64_t need = (o - 1) * stride + eff - in;
      if (need < 0) need = 0;
      lead = need / 2;
      break;
    }
  }
  if (o < 0)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Computed output size would be negative: %lld [input_size: %lld, effective_filter_size: "
                         "%lld, stride: %lld]",
                         (long long)o, (long long)in, (long long)eff, (long long)stride);
  *out = o;
  *pad_lead = lead;
  return NULL;
}

static int str_is(const char *s, size_t len, const char *lit) { return strlen(lit) == len && memcmp(s, lit, len) == 0; }

sm_status *sm__nn_data_format(const sm_node *n, int allow5d, int *nchw) {
  const char *s = "NHWC";
  size_t len = 4;
  *nchw = 0;
  if (sm__node_attr(n, "data_format")) {
    sm_status *st = sm__node_attr_string(n, "data_format", &s, &len);
    if (st) return st;
  }
  if (str_is(s, len, "NHWC") || (allow5d && str_is(s, len, "NDHWC"))) return NULL;
  if (str_is(s, len, "NCHW") || (allow5d && str_is(s, len, "NCDHW"))) {
    *nchw = 1;
    return NULL;
  }
  return sm_status_new(SM_UNIMPLEMENTED, "data_format '%.*s' is not supported (NHWC or NCHW)", (int)(len > 32 ? 32 : len), s);
}

sm_status *sm__nn_same_padding(const sm_node *n, int *same) {
  const char *p;
  size_t len;
  sm_status *st = sm__node_attr_string(n, "padding", &p, &len);
  if (st) return st;
  *same = str_is(p, len, "SAME");
  if (*same || str_is(p, len, "VALID")) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "padding must be SAME or VALID, not '%.*s'", (int)(len > 32 ? 32 : len), p);
}

static double par_min_macs = 262144.0; /* nn_raw.h says why */
static pthread_once_t par_min_once = PTHREAD_ONCE_INIT;
static void par_min_read(void) {
  const char *e = getenv("SM_NN_PAR_MIN_MACS");
  char *end = NULL;
  double x = e && *e ? strtod(e, &end) : 0;
  if (end && !*end && x >= 1 && x < 1e18) par_min_macs = x;
}
double sm__nn_par_min_macs(void) {
  pthread_once(&par_min_once, par_min_read);
  return par_min_macs;
}

/* Four entries of a list(int) attr; H, W into hw[2] in NHWC order; checks batch/depth are 1. */
static sm_status *four(const sm_node *n, const char *attr, const char *what, int nchw, int64_t hw[2], int64_t nc[2]) {
  const int64_t *v;
  size_t cnt;
  sm_status *st = sm__node_attr_ints(n, attr, &v, &cnt);
  if (st) return st;
  if (cnt != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s field must specify 4 dimensions (got %zu)", what, cnt);
  hw[0] = nchw ? v[2] : v[1];
  hw[1] = nchw ? v[3] : v[2];
  nc[0] = v[0];
  nc[1] = nchw ? v[1] : v[3];
  return NULL;
}

sm_status *sm__nn_window_prepare(const sm_node *n, int has_ksize, int dilations_ok, int explicit_ok,
                                 sm__nn_window *w) {
  memset(w, 0, sizeof *w);
  w->dilation[0] = w->dilation[1] = 1;
  sm_status *st = sm__nn_data_format(n, 0, &w->nchw);
  if (st) return st;
  const char *p;
  size_t plen;
  if ((st = sm__node_attr_string(n, "padding", &p, &plen))) return st;
  if (str_is(p, plen, "VALID"))
    w->padding = SM_NN_VALID;
  else if (str_is(p, plen, "SAME"))
    w->padding = SM_NN_SAME;
  else if (explicit_ok && str_is(p, plen, "EXPLICIT"))
    w->padding = SM_NN_EXPLICIT;
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "padding '%.*s' is not supported",
                         (int)(plen > 32 ? 32 : plen), p);
  int64_t nc[2] = {0, 0};
  if ((st = four(n, "strides", "stride", w->nchw, w->stride, nc))) return st;
  if (nc[0] != 1 || nc[1] != 1)
    return sm_status_new(has_ksize ? SM_UNIMPLEMENTED : SM_INVALID_ARGUMENT,
                         "Current implementation does not yet support strides in the batch and depth "
                         "dimensions.");
  if (w->stride[0] < 1 || w->stride[1] < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Row and column strides should be larger than 0.");
  if (has_ksize) {
    if ((st = four(n, "ksize", "ksize", w->nchw, w->ksize, nc))) return st;
    if (nc[0] != 1)
      return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch dimension.");
    if (nc[1] != 1)
      return sm_status_new(SM_UNIMPLEMENTED, "depthwise pooling (ksize over channels) is not supported");
    if (w->ksize[0] < 1 || w->ksize[1] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize must be positive.");
  }
  if (dilations_ok && sm__node_attr(n, "dilations")) {
    if ((st = four(n, "dilations", "dilations", w->nchw, w->dilation, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Current implementation does not yet support dilations in the batch and "
                           "depth dimensions.");
    if (w->dilation[0] < 1 || w->dilation[1] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dilated rates should be larger than 0.");
  }
  const int64_t *ep = NULL;
  size_t epn = 0;
  if (sm__node_attr(n, "explicit_paddings") && (st = sm__node_attr_ints(n, "explicit_paddings", &ep, &epn))) return st;
  if (w->padding == SM_NN_EXPLICIT) {
    if (epn != 8)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "explicit_paddings attribute must contain 8 values, but got: %zu", epn);
    for (int i = 0; i < 8; i++)
      if (ep[i] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "All elements of explicit_paddings must be nonnegative");
    int hd = w->nchw ? 2 : 1, cd = w->nchw ? 1 : 3;
    if (ep[0] || ep[1] || ep[2 * cd] || ep[2 * cd + 1])
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Nonzero explicit padding in the batch or depth dimensions is not supported");
    w->pad[0] = ep[2 * hd];
    w->pad[1] = ep[2 * hd + 1];
    w->pad[2] = ep[2 * hd + 2];
    w->pad[3] = ep[2 * hd + 3];
  } else if (epn) {
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "explicit_paddings attribute must be empty if the padding attribute is not "
                         "EXPLICIT");
  }
  return NULL;
}

#define TRANSPOSE(T)                                                                          \
  do {                                                                                        \
    const T *s = src;                                                                         \
    T *d = dst;                                                                               \
    for (int64_t a = 0; a < d0; a++)                                                          \
      for (int64_t b = 0; b < d1; b++)                                                        \
        for (int64_t c = 0; c < d2; c++)                                                      \
          for (int64_t e = 0; e < d3; e++) d[((a * d2 + c) * d3 + e) * d1 + b] = *s++;        \
  } while (0)

/* [d0,d1,d2,d3] -> [d0,d2,d3,d1] */
void sm__nn_nchw_to_nhwc(const void *src, void *dst, const int64_t *dims, size_t es) {
  int64_t d0 = dims[0], d1 = dims[1], d2 = dims[2], d3 = dims[3];
  if (es == 8)
    TRANSPOSE(uint64_t);
  else
    TRANSPOSE(uint32_t);
}

#undef TRANSPOSE
#define TRANSPOSE(T)                                                                          \
  do {                                                                                        \
    const T *s = src;                                                                         \
    T *d = dst;                                                                               \
    for (int64_t a = 0; a < d0; a++)                                                          \
      for (int64_t b = 0; b < d1; b++)                                                        \
        for (int64_t c = 0; c < d2; c++)                                                      \
          for (int64_t e = 0; e < d3; e++) d[((a * d3 + e) * d1 + b) * d2 + c] = *s++;        \
  } while (0)

/* [d0,d1,d2,d3] -> [d0,d3,d1,d2] */
void sm__nn_nhwc_to_nchw(const void *src, void *dst, const int64_t *dims, size_t es) {
  int64_t d0 = dims[0], d1 = dims[1], d2 = dims[2], d3 = dims[3];
  if (es == 8)
    TRANSPOSE(uint64_t);
  else
    TRANSPOSE(uint32_t);
}
#undef TRANSPOSE

const sm_kernel sm_kernels_nn[] = {
    {"AvgPool", sm__nn_pool_prepare, sm__nn_pool, free, 0},
    {"BatchMatMul", sm__nn_batch_matmul_prepare, sm__nn_batch_matmul, sm__nn_matmul_release, 0},
    {"BatchMatMulV2", sm__nn_batch_matmul_prepare, sm__nn_batch_matmul, sm__nn_matmul_release, 0},
    {"BatchMatMulV3", sm__nn_batch_matmul_prepare, sm__nn_batch_matmul, sm__nn_matmul_release, 0},
    {"BiasAdd", sm__nn_bias_add_prepare, sm__nn_bias_add, free, 0},
    {"BiasAddV1", sm__nn_bias_add_prepare, sm__nn_bias_add, free, 0},
    {"Conv2D", sm__nn_conv2d_prepare, sm__nn_conv2d, sm__nn_conv_release, 0},
    {"DepthwiseConv2dNative", sm__nn_depthwise_prepare, sm__nn_depthwise, sm__nn_conv_release, 0},
    {"FusedBatchNorm", sm__nn_batch_norm_prepare, sm__nn_batch_norm, free, 0},
    {"FusedBatchNormV2", sm__nn_batch_norm_prepare, sm__nn_batch_norm, free, 0},
    {"FusedBatchNormV3", sm__nn_batch_norm_prepare, sm__nn_batch_norm, free, 0},
    {"MatMul", sm__nn_matmul_prepare, sm__nn_matmul, sm__nn_matmul_release, 0},
    {"MaxPool", sm__nn_pool_prepare, sm__nn_pool, free, 0},
    {"MaxPoolV2", sm__nn_pool_v2_prepare, sm__nn_pool, free, 0},
    {"_FusedConv2D", sm__nn_fused_conv2d_prepare, sm__nn_fused_conv2d, sm__nn_conv_release, 0},
    {"_FusedDepthwiseConv2dNative", sm__nn_fused_depthwise_prepare, sm__nn_fused_depthwise, sm__nn_conv_release, 0},
    {"_FusedMatMul", sm__nn_fused_matmul_prepare, sm__nn_matmul, sm__nn_matmul_release, 0},
    {0},
};
