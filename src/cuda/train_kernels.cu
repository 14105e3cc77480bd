// train_kernels.cu - the elementwise and small kernels of training on the GPU (smcu_train_api,
// used by src/train/fit_gpu.c): max pooling with its argmax and backward, relu's backward, the
// dropout mask (a counter-based hash, not the CPU's RNG stream), a row gather (the shuffled
// batch from the device-resident data set), sparse categorical cross-entropy with its gradient
// and a fixed-order sum of the per-row losses, the optimizer updates, written operation for
// operation as src/train/optim.c's loops, and the Keras-config layers' (rescaling, leaky relu,
// global average and average pooling, batch normalization: one block per channel for its sums). Grid-stride loops with bounds checks throughout.
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

// ---- the Keras-config layers (src/train/layers.c) --------------------------------------------------
__global__ void k_affine(const float *x, float *y, int64_t n, float scale, float offset) {
  GRID_LOOP(i, n) y[i] = x[i] * scale + offset;
}
__global__ void k_leaky_bwd(const float *x, const float *gy, float *gx, int64_t n, float slope) {
  GRID_LOOP(i, n) gx[i] = x[i] > 0.f ? gy[i] : gy[i] * slope;
}
__global__ void k_gap_bwd(const float *gy, float *gx, int64_t n, int64_t hw, int64_t c) {
  GRID_LOOP(i, n * hw * c) {
    int64_t ch = i % c, b = i / (hw * c);
    gx[i] = gy[b * c + ch] / (float)hw;
  }
}
__global__ void k_avgpool_bwd(smcu_pool p, const float *gy, float *gx, int64_t n) {
  GRID_LOOP(i, n) {
    pool_win q = pool_window(p, i);
    int64_t cnt = (q.h1 - q.h0) * (q.w1 - q.w0);
    if (cnt <= 0) continue;
    float g = gy[i] * (1.0f / (float)cnt);
    for (int64_t h = q.h0; h < q.h1; h++)
      for (int64_t w = q.w0; w < q.w1; w++) atomicAdd(gx + ((q.b * p.h + h) * p.w + w) * p.c + q.c, g);
  }
}

// One block per channel (grid-stride over channels): a double sum over the rows in shared memory.
__device__ static double block_sum(double v, double *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  double r = red[0];
  __syncthreads();
  return r;
}
__global__ void k_bn_stats(const float *x, float *mm, float *mv, int64_t rows, int64_t c, int training, float mom,
                           float eps, float *stats) {
  __shared__ double red[kThreads];
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    if (!training) {
      if (threadIdx.x == 0) stats[ch] = mm[ch], stats[c + ch] = 1.0f / sqrtf(mv[ch] + eps);
      continue;
    }
    double s = 0.0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += x[r * c + ch];
    float mu = (float)(block_sum(s, red) / (double)rows);
    double q = 0.0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      double d = (double)x[r * c + ch] - mu;
      q += d * d;
    }
    float var = (float)(block_sum(q, red) / (double)rows);
    if (threadIdx.x == 0) {
      stats[ch] = mu;
      stats[c + ch] = 1.0f / sqrtf(var + eps);
      mm[ch] = mm[ch] * mom + mu * (1.0f - mom);
      mv[ch] = mv[ch] * mom + var * (1.0f - mom);
    }
  }
}
__global__ void k_bn_apply(const float *x, const float *gamma, const float *beta, const float *st, float *y,
                           int64_t rows, int64_t c) {
  GRID_LOOP(i, rows * c) {
    int64_t ch = i % c;
    y[i] = (x[i] - st[ch]) * st[c + ch] * gamma[ch] + beta[ch];
  }
}
__global__ void k_bn_bwd_sums(const float *x, const float *gy, const float *st, int64_t rows, int64_t c, int use_scale,
                              int center, float *gk, float *gb) {
  __shared__ double red[kThreads];
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double sb = 0.0, sg = 0.0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      float g = gy[r * c + ch], xh = (x[r * c + ch] - st[ch]) * st[c + ch];
      sb += g;
      sg += (double)g * xh;
    }
    sb = block_sum(sb, red);
    sg = block_sum(sg, red);
    if (threadIdx.x == 0) gk[ch] = use_scale ? (float)sg : 0.f, gb[ch] = center ? (float)sb : 0.f;
  }
}
// gx from the sums, which bn_bwd asks for unconditionally (gk, gb hold them when both are trained;
// else the kernel reads its own copies in sums [2c])
__global__ void k_bn_bwd_dx(const float *x, const float *gy, const float *gamma, const float *st, const float *sums,
                            int64_t rows, int64_t c, float *gx) {
  GRID_LOOP(i, rows * c) {
    int64_t ch = i % c;
    float k = gamma[ch] * st[c + ch] / (float)rows, db = sums[c + ch], dg = sums[ch];
    float xh = (x[i] - st[ch]) * st[c + ch];
    gx[i] = k * ((float)rows * gy[i] - db - xh * dg);
  }
}

static int t_affine(void *stream, const float *x, float *y, int64_t n, float scale, float offset, char *err) {
  if (n <= 0) return 0;
  k_affine<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, y, n, scale, offset);
  LAUNCHED("affine");
  return 0;
}
static int t_leaky_bwd(void *stream, const float *x, const float *gy, float *gx, int64_t n, float slope, char *err) {
  if (n <= 0) return 0;
  k_leaky_bwd<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(x, gy, gx, n, slope);
  LAUNCHED("leaky_bwd");
  return 0;
}
static int t_gap_bwd(void *stream, const float *gy, float *gx, int64_t n, int64_t hw, int64_t c, char *err) {
  if (n * hw * c <= 0) return 0;
  k_gap_bwd<<<blocks_for(n * hw * c), kThreads, 0, stream_of(stream)>>>(gy, gx, n, hw, c);
  LAUNCHED("gap_bwd");
  return 0;
}
static int t_avgpool_bwd(void *stream, const smcu_pool *pl, const float *gy, float *gx, char *err) {
  if (!stream) return fail_msg(err, "avgpool_bwd: no stream");
  int64_t n = pl->n * pl->oh * pl->ow * pl->c, nx = pl->n * pl->h * pl->w * pl->c;
  if (nx <= 0) return 0;
  k_zero<<<blocks_for(nx), kThreads, 0, stream_of(stream)>>>(gx, nx);
  LAUNCHED("avgpool_bwd zero");
  if (n <= 0) return 0;
  k_avgpool_bwd<<<blocks_for(n), kThreads, 0, stream_of(stream)>>>(*pl, gy, gx, n);
  LAUNCHED("avgpool_bwd");
  return 0;
}
static unsigned channel_blocks(int64_t c) { return (unsigned)(c > 65535 ? 65535 : (c < 1 ? 1 : c)); }
static int t_bn_stats(void *stream, const float *x, float *mm, float *mv, int64_t rows, int64_t c, int training,
                      float momentum, float eps, float *stats, char *err) {
  if (c <= 0 || (training && rows <= 0)) return 0; // an empty batch: no statistics to take (as the CPU's)
  k_bn_stats<<<channel_blocks(c), kThreads, 0, stream_of(stream)>>>(x, mm, mv, rows, c, training, momentum, eps, stats);
  LAUNCHED("bn_stats");
  return 0;
}
static int t_bn_apply(void *stream, const float *x, const float *gamma, const float *beta, const float *stats, float *y,
                      int64_t rows, int64_t c, char *err) {
  if (rows * c <= 0) return 0;
  k_bn_apply<<<blocks_for(rows * c), kThreads, 0, stream_of(stream)>>>(x, gamma, beta, stats, y, rows, c);
  LAUNCHED("bn_apply");
  return 0;
}
static int t_bn_bwd(void *stream, const float *x, const float *gy, const float *gamma, const float *stats, int64_t rows,
                    int64_t c, int use_scale, int center, float *gx, float *gk, float *gb, char *err) {
  if (!stream) return fail_msg(err, "bn_bwd: no stream");
  if (c <= 0) return 0;
  if (rows <= 0) {
    CU(cudaMemsetAsync(gk, 0, (size_t)c * sizeof(float), stream_of(stream)));
    CU(cudaMemsetAsync(gb, 0, (size_t)c * sizeof(float), stream_of(stream)));
    return 0;
  }
  // the sums, untouched by use_scale / center, for gx: [sum(gy * xhat), sum(gy)] in scratch
  float *sums = NULL;
  if (gx && cu_alloc(stream, 2 * (size_t)c * sizeof(float), (void **)&sums, err)) return 1;
  if (gx) {
    k_bn_bwd_sums<<<channel_blocks(c), kThreads, 0, stream_of(stream)>>>(x, gy, stats, rows, c, 1, 1, sums, sums + c);
    LAUNCHED("bn_bwd sums");
    k_bn_bwd_dx<<<blocks_for(rows * c), kThreads, 0, stream_of(stream)>>>(x, gy, gamma, stats, sums, rows, c, gx);
    cu_release(stream, sums);
    LAUNCHED("bn_bwd dx");
  }
  k_bn_bwd_sums<<<channel_blocks(c), kThreads, 0, stream_of(stream)>>>(x, gy, stats, rows, c, use_scale, center, gk, gb);
  LAUNCHED("bn_bwd");
  return 0;
}

// ---- the table ---------------------------------------------------------------------------------
int cu_conv2d_fwd_cached(void *stream, const smcu_conv *cv, const float *x, const float *w, float *y, char *err);
int cu_conv2d_bwd_data(void *stream, const smcu_conv *cv, const float *gy, const float *w, float *gx, char *err);
int cu_conv2d_bwd_filter(void *stream, const smcu_conv *cv, const float *x, const float *gy, float *gw, char *err);

const smcu_train_api smcu_train_table = {
    cu_conv2d_fwd_cached, cu_conv2d_bwd_data, cu_conv2d_bwd_filter, t_maxpool_fwd, t_maxpool_bwd, t_relu_bwd,
    t_mul,                t_fill,             t_gather32,           t_dropout,     t_sparse_xent, t_opt_update,
    t_affine,             t_leaky_bwd,        t_gap_bwd,            t_avgpool_bwd, t_bn_stats,    t_bn_apply,
    t_bn_bwd,
};
