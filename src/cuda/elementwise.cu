// elementwise.cu - the module's own kernels: activations, broadcast binary ops, the bias +
// activation epilogue, inference batch norm, pooling, the mean over a middle range of axes,
// softmax, transpose and pad. Float32 (transpose: any 4- or 8-byte element), grid-stride loops,
// 64-bit indices; every launch is checked (LAUNCHED).
#include "cuda/internal.cuh"

__device__ __forceinline__ float act_f(int act, float alpha, float v) {
  switch (act) {
    case SMCU_RELU: return v > 0.f ? v : 0.f;
    case SMCU_RELU6: return fminf(fmaxf(v, 0.f), 6.f);
    case SMCU_ELU: return v > 0.f ? v : expm1f(v);
    case SMCU_SIGMOID: return 1.f / (1.f + expf(-v));
    case SMCU_TANH: return tanhf(v);
    case SMCU_SWISH: return v / (1.f + expf(-v));
    case SMCU_LEAKY_RELU: return v > 0.f ? v : alpha * v;
    case SMCU_NEG: return -v;
    case SMCU_RSQRT: return rsqrtf(v);
    case SMCU_SQRT: return sqrtf(v);
    case SMCU_SQUARE: return v * v;
    case SMCU_EXP: return expf(v);
  }
  return v;
}

__global__ void k_unary(int act, float alpha, const float *x, float *y, int64_t n) {
  GRID_LOOP(i, n) y[i] = act_f(act, alpha, x[i]);
}

int cu_unary(void *stream, int act, float alpha, const float *x, float *y, int64_t n, char *err) {
  if (n <= 0) return 0;
  k_unary<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(act, alpha, x, y, n);
  LAUNCHED("unary");
  return 0;
}

__global__ void k_binary(int op, const float *a, const float *b, float *y, smcu_bcast bc, int64_t n) {
  GRID_LOOP(i, n) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int d = bc.rank - 1; d >= 0; d--) {
      int64_t q = rem % bc.dims[d];
      rem /= bc.dims[d];
      ia += q * bc.astr[d];
      ib += q * bc.bstr[d];
    }
    float u = a[ia], v = b[ib];
    y[i] = op == SMCU_ADD   ? u + v
           : op == SMCU_SUB ? u - v
           : op == SMCU_MUL ? u * v
           : op == SMCU_DIV ? u / v
           : op == SMCU_MAX ? fmaxf(u, v)
                            : fminf(u, v);
  }
}

int cu_binary(void *stream, int op, const float *a, const float *b, float *y, const smcu_bcast *bc, char *err) {
  int64_t n = 1;
  for (int d = 0; d < bc->rank; d++) n *= bc->dims[d];
  if (n <= 0) return 0;
  k_binary<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(op, a, b, y, *bc, n);
  LAUNCHED("binary");
  return 0;
}

__global__ void k_bias_act(const float *x, const float *bias, float *y, int64_t n, int64_t cols, int act, float alpha) {
  GRID_LOOP(i, n) y[i] = act_f(act, alpha, x[i] + (bias ? bias[i % cols] : 0.f));
}

int cu_bias_act(void *stream, const float *x, const float *bias, float *y, int64_t rows, int64_t cols, int act,
                  float alpha, char *err) {
  int64_t n = rows * cols;
  if (n <= 0) return 0;
  k_bias_act<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, bias, y, n, cols, act, alpha);
  LAUNCHED("bias_act");
  return 0;
}

// TF's FusedBatchNorm (inference): y = (x - mean) * rsqrt(var + eps) * gamma + beta
__global__ void k_batchnorm(const float *x, const float *g, const float *b, const float *m, const float *v, float eps,
                            float *y, int64_t n, int64_t cols) {
  GRID_LOOP(i, n) {
    int64_t c = i % cols;
    float scale = g[c] * rsqrtf(v[c] + eps);
    y[i] = (x[i] - m[c]) * scale + b[c];
  }
}

int cu_batchnorm(void *stream, const float *x, const float *gamma, const float *beta, const float *mean,
                   const float *var, float eps, float *y, int64_t rows, int64_t cols, char *err) {
  int64_t n = rows * cols;
  if (n <= 0) return 0;
  k_batchnorm<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, gamma, beta, mean, var, eps, y, n, cols);
  LAUNCHED("batchnorm");
  return 0;
}

// One output element per thread: its window, clipped to the input (TF: padding is not counted).
__global__ void k_pool(smcu_pool p, const float *x, float *y, int64_t n) {
  GRID_LOOP(i, n) {
    pool_win q = pool_window(p, i);
    float acc = p.avg ? 0.f : -INFINITY;
    for (int64_t h = q.h0; h < q.h1; h++)
      for (int64_t w = q.w0; w < q.w1; w++) {
        float v = x[((q.b * p.h + h) * p.w + w) * p.c + q.c];
        acc = p.avg ? acc + v : fmaxf(acc, v);
      }
    int64_t cnt = (q.h1 - q.h0) * (q.w1 - q.w0);
    y[i] = p.avg ? (cnt > 0 ? acc / (float)cnt : 0.f) : acc;
  }
}

int cu_pool(void *stream, const smcu_pool *pl, const float *x, float *y, char *err) {
  int64_t n = pl->n * pl->oh * pl->ow * pl->c;
  if (n <= 0) return 0;
  k_pool<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(*pl, x, y, n);
  LAUNCHED("pool");
  return 0;
}

// y[o, c] = mean_j x[o, j, c]: one thread per output, summing in the order TF's CPU does not
// promise either (float tolerance).
__global__ void k_mean_mid(const float *x, float *y, int64_t outer, int64_t inner, int64_t cols) {
  GRID_LOOP(i, outer * cols) {
    int64_t o = i / cols, c = i % cols;
    const float *p = x + o * inner * cols + c;
    float acc = 0.f;
    for (int64_t j = 0; j < inner; j++) acc += p[j * cols];
    y[i] = inner ? acc / (float)inner : NAN;
  }
}

int cu_mean_mid(void *stream, const float *x, float *y, int64_t outer, int64_t inner, int64_t cols, char *err) {
  if (outer * cols <= 0) return 0;
  k_mean_mid<<<blocks_for(outer * cols), kThreads, 0, stream_of(stream)>>>(x, y, outer, inner, cols);
  LAUNCHED("mean");
  return 0;
}

// One block per row: max, sum of exp, normalise (shared-memory reductions).
__global__ void k_softmax(const float *x, float *y, int64_t rows, int64_t cols) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float e = expf(xr[j] - m);
      yr[j] = e;
      sum += e;
    }
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
      __syncthreads();
    }
    sum = red[0];
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] /= sum;
  }
}

int cu_softmax(void *stream, const float *x, float *y, int64_t rows, int64_t cols, char *err) {
  if (rows * cols <= 0) return 0;
  unsigned g = (unsigned)(rows > 65535 ? 65535 : rows);
  k_softmax<<<g, kThreads, 0, stream_of(stream)>>>(x, y, rows, cols);
  LAUNCHED("softmax");
  return 0;
}

struct dims8 {
  int rank;
  int64_t ydims[SMCU_MAX_RANK], xstr[SMCU_MAX_RANK]; // x's stride for each y dimension
};

template <typename T>
__global__ void k_transpose(const T *x, T *y, dims8 d, int64_t n) {
  GRID_LOOP(i, n) {
    int64_t rem = i, src = 0;
    for (int k = d.rank - 1; k >= 0; k--) {
      src += (rem % d.ydims[k]) * d.xstr[k];
      rem /= d.ydims[k];
    }
    y[i] = x[src];
  }
}

int cu_transpose(void *stream, const void *x, void *y, int rank, const int64_t *xdims, const int *perm, size_t es,
                   char *err) {
  if (rank < 0 || rank > SMCU_MAX_RANK) return fail_msg(err, "transpose: rank out of range");
  int64_t xs[SMCU_MAX_RANK], s = 1, n = 1;
  for (int k = rank - 1; k >= 0; k--) xs[k] = s, s *= xdims[k];
  dims8 d;
  d.rank = rank;
  for (int k = 0; k < rank; k++) {
    d.ydims[k] = xdims[perm[k]];
    d.xstr[k] = xs[perm[k]];
    n *= d.ydims[k];
  }
  if (n <= 0) return 0;
  if (es == 4)
    k_transpose<float><<<blocks_for(n), kThreads, 0, stream_of(stream)>>>((const float *)x, (float *)y, d, n);
  else if (es == 8)
    k_transpose<double><<<blocks_for(n), kThreads, 0, stream_of(stream)>>>((const double *)x, (double *)y, d, n);
  else
    return fail_msg(err, "transpose: elements of 4 or 8 bytes only");
  LAUNCHED("transpose");
  return 0;
}

struct pad8 {
  int rank;
  int64_t xdims[SMCU_MAX_RANK], before[SMCU_MAX_RANK], ydims[SMCU_MAX_RANK];
};

__global__ void k_pad(const float *x, float *y, pad8 p, float value, int64_t n) {
  GRID_LOOP(i, n) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int k = p.rank - 1; k >= 0; k--) {
      int64_t q = rem % p.ydims[k] - p.before[k];
      rem /= p.ydims[k];
      if (q < 0 || q >= p.xdims[k]) inside = false;
      src += q * stride;
      stride *= p.xdims[k];
    }
    y[i] = inside ? x[src] : value;
  }
}

int cu_pad(void *stream, const float *x, float *y, int rank, const int64_t *xdims, const int64_t *before,
             const int64_t *ydims, float value, char *err) {
  if (rank < 0 || rank > SMCU_MAX_RANK) return fail_msg(err, "pad: rank out of range");
  pad8 p;
  p.rank = rank;
  int64_t n = 1;
  for (int k = 0; k < rank; k++) {
    p.xdims[k] = xdims[k];
    p.before[k] = before[k];
    p.ydims[k] = ydims[k];
    n *= ydims[k];
  }
  if (n <= 0) return 0;
  k_pad<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, y, p, value, n);
  LAUNCHED("pad");
  return 0;
}
