// train_kernels.cu - the elementwise and small kernels of training on the GPU (smcu_train_api,
// used by src/train/fit_gpu.c): max pooling with its argmax and backward, relu's backward, the
// dropout mask (a counter-based hash, not the CPU's RNG stream), a row gather (the shuffled
// batch from the device-resident data set), sparse categorical cross-entropy with its gradient
// and a fixed-order sum of the per-row losses, and the optimizer updates, written operation for
// operation as src/train/optim.c's loops. Grid-stride loops with bounds checks throughout.
#include <math.h>

#include "cuda/internal.cuh"

// ---- max pooling -------------------------------------------------------------------------------
// The first maximum in window order (a strictly greater value takes over), as the CPU's
// (src/ops/nn_pool.c) and TF's MaxPoolGrad; an empty window gives -inf and argmax -1.
__global__ void k_maxpool_fwd(smcu_pool p, const float *x, float *y, int64_t *am, int64_t n) {
  GRID_LOOP(i, n) {
    pool_win q = pool_window(p, i);
    float best = -INFINITY;
    int64_t arg = -1;
    for (int64_t h = q.h0; h < q.h1; h++)
      for (int64_t w = q.w0; w < q.w1; w++) {
        int64_t k = ((q.b * p.h + h) * p.w + w) * p.c + q.c;
        float v = x[k];
        if (arg < 0 || v > best) {
          best = v;
          arg = k;
        }
      }
    y[i] = best;
    am[i] = arg;
  }
}

__global__ void k_zero(float *y, int64_t n) {
  GRID_LOOP(i, n) y[i] = 0.f;
}

__global__ void k_maxpool_bwd(const float *gy, const int64_t *am, float *gx, int64_t n, int64_t nx) {
  GRID_LOOP(i, n) {
    int64_t a = am[i];
    if (a >= 0 && a < nx) atomicAdd(gx + a, gy[i]); // overlapping windows share inputs
  }
}

static int t_maxpool_fwd(void *stream, const smcu_pool *pl, const float *x, float *y, int64_t *argmax, char *err) {
  if (!stream) return fail_msg(err, "maxpool_fwd: no stream");
  int64_t n = pl->n * pl->oh * pl->ow * pl->c;
  if (n <= 0) return 0;
  k_maxpool_fwd<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(*pl, x, y, argmax, n);
  LAUNCHED("maxpool_fwd");
  return 0;
}

static int t_maxpool_bwd(void *stream, const smcu_pool *pl, const float *gy, const int64_t *argmax, float *gx,
                         char *err) {
  if (!stream) return fail_msg(err, "maxpool_bwd: no stream");
  int64_t n = pl->n * pl->oh * pl->ow * pl->c, nx = pl->n * pl->h * pl->w * pl->c;
  if (nx <= 0) return 0;
  k_zero<<<blocks_for(nx), kThreads, 0, stream_of(stream)>>>(gx, nx);
  LAUNCHED("maxpool_bwd zero");
  if (n <= 0) return 0;
  k_maxpool_bwd<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(gy, argmax, gx, n, nx);
  LAUNCHED("maxpool_bwd");
  return 0;
}

// ---- elementwise -------------------------------------------------------------------------------
__global__ void k_relu_bwd(const float *y, float *g, int64_t n) {
  GRID_LOOP(i, n) g[i] = y[i] > 0.f ? g[i] : 0.f;
}
__global__ void k_mul(const float *a, const float *b, float *y, int64_t n) {
  GRID_LOOP(i, n) y[i] = a[i] * b[i];
}
__global__ void k_fill(float *y, float v, int64_t n) {
  GRID_LOOP(i, n) y[i] = v;
}
__global__ void k_gather32(const uint32_t *src, const int32_t *idx, int64_t rows, int64_t per, uint32_t *dst) {
  GRID_LOOP(i, rows * per) {
    int64_t r = i / per, e = i % per;
    dst[i] = src[(int64_t)idx[r] * per + e];
  }
}

// splitmix64 of (seed + i): independent 24-bit uniforms in [0, 1), the same for a seed on every GPU.
__device__ static float hash_uniform(uint64_t seed, int64_t i) {
  uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f);
}
__global__ void k_dropout(const float *x, float *y, float *mask, int64_t n, float rate, float scale, uint64_t seed) {
  GRID_LOOP(i, n) {
    float m = hash_uniform(seed, i) >= rate ? scale : 0.f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

static int t_relu_bwd(void *stream, const float *y, float *g, int64_t n, char *err) {
  if (n <= 0) return 0;
  k_relu_bwd<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(y, g, n);
  LAUNCHED("relu_bwd");
  return 0;
}
static int t_mul(void *stream, const float *a, const float *b, float *y, int64_t n, char *err) {
  if (n <= 0) return 0;
  k_mul<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(a, b, y, n);
  LAUNCHED("mul");
  return 0;
}
static int t_fill(void *stream, float *y, float value, int64_t n, char *err) {
  if (n <= 0) return 0;
  k_fill<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(y, value, n);
  LAUNCHED("fill");
  return 0;
}
static int t_gather32(void *stream, const void *src, const int32_t *idx, int64_t rows, int64_t per, void *dst,
                      char *err) {
  if (rows <= 0 || per <= 0) return 0;
  k_gather32<<<blocks_for(rows * per), kThreads, 0, stream_of(stream)>>>(
      static_cast<const uint32_t *>(src), idx, rows, per, static_cast<uint32_t *>(dst));
  LAUNCHED("gather32");
  return 0;
}
static int t_dropout(void *stream, const float *x, float *y, float *mask, int64_t n, float rate, uint64_t seed,
                     char *err) {
  if (!(rate >= 0.f && rate < 1.f)) return fail_msg(err, "dropout: rate must be in [0, 1)");
  if (n <= 0) return 0;
  k_dropout<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, y, mask, n, rate, 1.0f / (1.0f - rate), seed);
  LAUNCHED("dropout");
  return 0;
}

// ---- sparse categorical cross-entropy ------------------------------------------------------------
// One thread per row (k is a class count: small), as src/train/loss.c: logits: loss =
// log(sum exp(z - max)) - (z_y - max), g = (softmax(z) - onehot) / rows; probabilities behind a
// softmax: loss = -log(max(p_y, FLT_MIN)), g = (p - onehot) / rows. A label outside [0, k) gives
// a NaN loss (the host checked them).
__global__ void k_xent(const float *out, const int32_t *lab, int64_t rows, int64_t k, int mode, float *g,
                       double *rl, double *rc) {
  const float inv_n = 1.0f / (float)rows;
  GRID_LOOP(i, rows) {
    const float *r = out + i * k;
    int32_t y = lab[i];
    int64_t best = 0;
    for (int64_t j = 1; j < k; j++)
      if (r[j] > r[best]) best = j;
    rc[i] = best == y ? 1.0 : 0.0;
    if (y < 0 || y >= k) {
      rl[i] = NAN;
      continue;
    }
    float *gr = g ? g + i * k : NULL;
    if (mode == 0) {
      float mx = r[0];
      for (int64_t j = 1; j < k; j++) mx = r[j] > mx ? r[j] : mx;
      double se = 0.0;
      for (int64_t j = 0; j < k; j++) se += exp((double)(r[j] - mx));
      rl[i] = log(se) - (double)(r[y] - mx);
      if (gr) {
        float inv = (float)(1.0 / se);
        for (int64_t j = 0; j < k; j++) gr[j] = expf(r[j] - mx) * inv * inv_n;
        gr[y] -= inv_n;
      }
    } else {
      double p = r[y] > 1.17549435e-38f ? (double)r[y] : 1.17549435e-38;
      rl[i] = -log(p);
      if (gr) {
        for (int64_t j = 0; j < k; j++) gr[j] = r[j] * inv_n;
        gr[y] -= inv_n;
      }
    }
  }
}

// One block: acc[0] += sum(rl), acc[1] += sum(rc), in a fixed order (reproducible).
__global__ void k_sum2(const double *rl, const double *rc, int64_t rows, double *acc) {
  __shared__ double s0[kThreads], s1[kThreads];
  double a = 0.0, b = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    a += rl[i];
    b += rc[i];
  }
  s0[threadIdx.x] = a;
  s1[threadIdx.x] = b;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      s0[threadIdx.x] += s0[threadIdx.x + s];
      s1[threadIdx.x] += s1[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    acc[0] += s0[0];
    acc[1] += s1[0];
  }
}

static int t_sparse_xent(void *stream, const float *out, const int32_t *labels, int64_t rows, int64_t k, int mode,
                         float *g, double *rowbuf, double *acc, char *err) {
  if (!stream) return fail_msg(err, "sparse_xent: no stream");
  if (k < 1 || (mode != 0 && mode != 1)) return fail_msg(err, "sparse_xent: bad class count or mode");
  if (rows <= 0) return 0;
  k_xent<<<blocks_for(rows), kThreads, 0, stream_of(stream)>>>(out, labels, rows, k, mode, g, rowbuf, rowbuf + rows);
  LAUNCHED("sparse_xent");
  k_sum2<<<1, kThreads, 0, stream_of(stream)>>>(rowbuf, rowbuf + rows, rows, acc);
  LAUNCHED("sparse_xent sum");
  return 0;
}

// ---- optimizers (src/train/optim.c's upd_range, the same operations in the same order) ---------
__global__ void k_opt(smcu_opt u, float *w, const float *g, float *s0, float *s1, float *s2, int64_t n) {
  GRID_LOOP(i, n) {
    float gi = g[i];
    if (u.kind == 2) w[i] -= (w[i] * u.wd) * u.lr; // AdamW's decoupled decay first
    if (u.kind == 3) {                             // RMSprop: s0 velocity, s1 momentum, s2 average gradient
      float vi = u.rho * s0[i] + u.omrho * (gi * gi), den;
      s0[i] = vi;
      if (u.centered) {
        float ai = u.rho * s2[i] + u.omrho * gi;
        s2[i] = ai;
        den = vi - ai * ai + u.eps;
      } else {
        den = vi + u.eps;
      }
      float inc = (u.lr * gi) / sqrtf(den);
      if (s1) {
        s1[i] = u.mom * s1[i] + inc;
        w[i] -= s1[i];
      } else {
        w[i] -= inc;
      }
    } else if (u.kind == 1 || u.kind == 2) { // Adam(W): s0 m, s1 v
      float mi = s0[i] + (gi - s0[i]) * u.omb1;
      float vi = s1[i] + (gi * gi - s1[i]) * u.omb2;
      s0[i] = mi;
      s1[i] = vi;
      w[i] -= (mi * u.alpha) / (sqrtf(vi) + u.eps);
    } else if (s0) { // SGD with momentum
      float mi = s0[i] * u.mom - gi * u.lr;
      s0[i] = mi;
      w[i] += u.nesterov ? mi * u.mom - gi * u.lr : mi;
    } else {
      w[i] -= gi * u.lr;
    }
  }
}

static int t_opt_update(void *stream, const smcu_opt *o, float *w, const float *g, float *s0, float *s1, float *s2,
                        int64_t n, char *err) {
  if (!stream) return fail_msg(err, "opt_update: no stream");
  if (o->kind < 0 || o->kind > 3) return fail_msg(err, "opt_update: unknown optimizer");
  if ((o->kind == 1 || o->kind == 2) && (!s0 || !s1)) return fail_msg(err, "opt_update: Adam needs two slots");
  if (o->kind == 3 && (!s0 || (o->centered && !s2))) return fail_msg(err, "opt_update: RMSprop's slots are missing");
  if (n <= 0) return 0;
  k_opt<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(*o, w, g, s0, s1, s2, n);
  LAUNCHED("opt_update");
  return 0;
}

// ---- the table ---------------------------------------------------------------------------------
int cu_conv2d_fwd_cached(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err);
int cu_conv2d_bwd_data(void *stream, const smcu_conv *cv, const float *gy, const float *w, float *gx, char *err);
int cu_conv2d_bwd_filter(void *stream, const smcu_conv *cv, const float *x, const float *gy, float *gw, char *err);

const smcu_train_api smcu_train_table = {
    cu_conv2d_fwd_cached, cu_conv2d_bwd_data, cu_conv2d_bwd_filter, t_maxpool_fwd, t_maxpool_bwd, t_relu_bwd,
    t_mul,                t_fill,             t_gather32,           t_dropout,     t_sparse_xent, t_opt_update,
};
