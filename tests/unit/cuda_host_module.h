/* cuda_host_module.h - a module of host loops standing in for libsavedmodel_cuda.so (no GPU): the
 * smcu.h table the .cu files fill, "device memory" being host memory, for tests of the code that
 * drives the module (test_cuda.c: the CUDA kernels of src/ops/gpu; test_train_gpu.c: the GPU
 * trainer, src/train/fit_gpu.c). Plain loops, double accumulators: slow and obviously right. */
#ifndef SM_TESTS_CUDA_HOST_MODULE_H
#define SM_TESTS_CUDA_HOST_MODULE_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/smcu.h"

static int f_open(char *err) { (void)err; return 0; }
static void f_describe(char *buf, size_t cap) { snprintf(buf, cap, "host loops standing in for a GPU"); }
static int f_stream_get(void **s, char *err) { (void)err; static int tok; *s = &tok; return 0; }
static int f_stream_put(void *s, char *err) { (void)s, (void)err; return 0; }
static int f_alloc(void *s, size_t bytes, void **p, char *err) {
  (void)s;
  *p = malloc(bytes ? bytes : 1);
  return *p ? 0 : (snprintf(err, SMCU_ERR, "malloc"), 1);
}
static void f_release(void *s, void *p) { (void)s, free(p); }
static int f_copy(void *s, void *dst, const void *src, size_t n, char *err) { (void)s, (void)err, memcpy(dst, src, n); return 0; }
static int f_copy2d(void *s, void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, char *err) {
  (void)s, (void)err;
  for (size_t r = 0; r < h; r++) memcpy((char *)dst + r * dp, (const char *)src + r * sp, w);
  return 0;
}
static float f_act(int act, float alpha, float v) {
  switch (act) {
    case SMCU_RELU: return v > 0 ? v : 0;
    case SMCU_RELU6: return fminf(fmaxf(v, 0), 6);
    case SMCU_ELU: return v > 0 ? v : expm1f(v);
    case SMCU_SIGMOID: return 1 / (1 + expf(-v));
    case SMCU_TANH: return tanhf(v);
    case SMCU_LEAKY_RELU: return v > 0 ? v : alpha * v;
    case SMCU_NEG: return -v;
    case SMCU_RSQRT: return 1 / sqrtf(v);
    case SMCU_SQRT: return sqrtf(v);
    case SMCU_SQUARE: return v * v;
    case SMCU_EXP: return expf(v);
  }
  return v;
}
static int f_unary(void *s, int act, float alpha, const float *x, float *y, int64_t n, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) y[i] = f_act(act, alpha, x[i]);
  return 0;
}
static int f_binary(void *s, int op, const float *a, const float *b, float *y, const smcu_bcast *bc, char *err) {
  (void)s, (void)err;
  int64_t n = 1;
  for (int d = 0; d < bc->rank; d++) n *= bc->dims[d];
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int d = bc->rank - 1; d >= 0; d--) {
      int64_t q = rem % bc->dims[d];
      rem /= bc->dims[d];
      ia += q * bc->astr[d], ib += q * bc->bstr[d];
    }
    float u = a[ia], v = b[ib];
    y[i] = op == SMCU_ADD ? u + v : op == SMCU_SUB ? u - v : op == SMCU_MUL ? u * v : op == SMCU_DIV ? u / v
           : op == SMCU_MAX ? fmaxf(u, v) : fminf(u, v);
  }
  return 0;
}
static int f_bias_act(void *s, const float *x, const float *bias, float *y, int64_t rows, int64_t cols, int act,
                      float alpha, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < rows * cols; i++) y[i] = f_act(act, alpha, x[i] + (bias ? bias[i % cols] : 0));
  return 0;
}
static int f_batchnorm(void *s, const float *x, const float *g, const float *b, const float *m, const float *v,
                       float eps, float *y, int64_t rows, int64_t cols, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < rows * cols; i++) {
    int64_t c = i % cols;
    y[i] = (x[i] - m[c]) * (g[c] / sqrtf(v[c] + eps)) + b[c];
  }
  return 0;
}
static int f_gemm(void *s, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t sa, const float *b,
                  int64_t sb, float *c, int64_t sc, int64_t batch, char *err) {
  (void)s, (void)err;
  for (int64_t q = 0; q < batch; q++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t l = 0; l < k; l++)
          acc += (double)a[q * sa + (ta ? l * m + i : i * k + l)] * b[q * sb + (tb ? j * k + l : l * n + j)];
        c[q * sc + i * n + j] = (float)acc;
      }
  return 0;
}
static int f_conv2d(void *s, const smcu_conv *v, const float *x, const float *w, float *y, char *err) {
  (void)s, (void)err;
  int64_t cg = v->c / v->groups, kg = v->k / v->groups;
  for (int64_t b = 0; b < v->n; b++)
    for (int64_t oh = 0; oh < v->oh; oh++)
      for (int64_t ow = 0; ow < v->ow; ow++)
        for (int64_t o = 0; o < v->k; o++) {
          double acc = 0;
          int64_t g = o / kg;
          for (int64_t r = 0; r < v->kh; r++)
            for (int64_t q = 0; q < v->kw; q++) {
              int64_t ih = oh * v->stride_h - v->pad_h + r * v->dil_h, iw = ow * v->stride_w - v->pad_w + q * v->dil_w;
              if (ih < 0 || ih >= v->h || iw < 0 || iw >= v->w) continue;
              for (int64_t ci = 0; ci < cg; ci++)
                acc += (double)x[((b * v->h + ih) * v->w + iw) * v->c + g * cg + ci] * w[((r * v->kw + q) * cg + ci) * v->k + o];
            }
          y[((b * v->oh + oh) * v->ow + ow) * v->k + o] = (float)acc;
        }
  return 0;
}
static int f_pool(void *s, const smcu_pool *p, const float *x, float *y, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < p->n * p->oh * p->ow * p->c; i++) {
    int64_t c = i % p->c, r = i / p->c, ow = r % p->ow, oh = (r / p->ow) % p->oh, b = r / (p->ow * p->oh);
    int64_t h0 = oh * p->sh - p->pad_top, w0 = ow * p->sw - p->pad_left, cnt = 0;
    float acc = p->avg ? 0 : -INFINITY;
    for (int64_t h = h0 < 0 ? 0 : h0; h < h0 + p->kh && h < p->h; h++)
      for (int64_t ww = w0 < 0 ? 0 : w0; ww < w0 + p->kw && ww < p->w; ww++, cnt++) {
        float v = x[((b * p->h + h) * p->w + ww) * p->c + c];
        acc = p->avg ? acc + v : fmaxf(acc, v);
      }
    y[i] = p->avg ? acc / (float)cnt : acc;
  }
  return 0;
}
static int f_mean_mid(void *s, const float *x, float *y, int64_t outer, int64_t inner, int64_t cols, char *err) {
  (void)s, (void)err;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < cols; c++) {
      double acc = 0;
      for (int64_t j = 0; j < inner; j++) acc += x[(o * inner + j) * cols + c];
      y[o * cols + c] = (float)(acc / (double)inner);
    }
  return 0;
}
static int f_softmax(void *s, const float *x, float *y, int64_t rows, int64_t cols, char *err) {
  (void)s, (void)err;
  for (int64_t r = 0; r < rows; r++) {
    float m = -INFINITY;
    double sum = 0;
    for (int64_t j = 0; j < cols; j++) m = fmaxf(m, x[r * cols + j]);
    for (int64_t j = 0; j < cols; j++) sum += exp((double)x[r * cols + j] - m);
    for (int64_t j = 0; j < cols; j++) y[r * cols + j] = (float)(exp((double)x[r * cols + j] - m) / sum);
  }
  return 0;
}
static int f_transpose(void *s, const void *x, void *y, int rank, const int64_t *xd, const int *perm, size_t es,
                       char *err) {
  (void)s, (void)err;
  int64_t xs[8], n = 1, s_ = 1;
  for (int k = rank - 1; k >= 0; k--) xs[k] = s_, s_ *= xd[k];
  for (int k = 0; k < rank; k++) n *= xd[perm[k]];
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, src = 0;
    for (int k = rank - 1; k >= 0; k--) src += (rem % xd[perm[k]]) * xs[perm[k]], rem /= xd[perm[k]];
    memcpy((char *)y + (size_t)i * es, (const char *)x + (size_t)src * es, es);
  }
  return 0;
}
static int f_pad(void *s, const float *x, float *y, int rank, const int64_t *xd, const int64_t *before,
                 const int64_t *yd, float value, char *err) {
  (void)s, (void)err;
  int64_t n = 1;
  for (int k = 0; k < rank; k++) n *= yd[k];
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, src = 0, stride = 1;
    int inside = 1;
    for (int k = rank - 1; k >= 0; k--) {
      int64_t q = rem % yd[k] - before[k];
      rem /= yd[k];
      if (q < 0 || q >= xd[k]) inside = 0;
      src += q * stride, stride *= xd[k];
    }
    y[i] = inside ? x[src] : value;
  }
  return 0;
}

/* ---- the training kernels ---------------------------------------------------------------------- */
/* conv2d's input (x_grad) and filter (w_grad) gradients, accumulated over every output */
static void f_conv_bwd(const smcu_conv *v, const float *x, const float *w, const float *gy, float *gx, float *gw) {
  int64_t cg = v->c / v->groups, kg = v->k / v->groups;
  if (gx) memset(gx, 0, (size_t)(v->n * v->h * v->w * v->c) * sizeof *gx);
  if (gw) memset(gw, 0, (size_t)(v->kh * v->kw * cg * v->k) * sizeof *gw);
  for (int64_t b = 0; b < v->n; b++)
    for (int64_t oh = 0; oh < v->oh; oh++)
      for (int64_t ow = 0; ow < v->ow; ow++)
        for (int64_t o = 0; o < v->k; o++) {
          float g = gy[((b * v->oh + oh) * v->ow + ow) * v->k + o];
          int64_t grp = o / kg;
          for (int64_t r = 0; r < v->kh; r++)
            for (int64_t q = 0; q < v->kw; q++) {
              int64_t ih = oh * v->stride_h - v->pad_h + r * v->dil_h, iw = ow * v->stride_w - v->pad_w + q * v->dil_w;
              if (ih < 0 || ih >= v->h || iw < 0 || iw >= v->w) continue;
              for (int64_t ci = 0; ci < cg; ci++) {
                int64_t xi = ((b * v->h + ih) * v->w + iw) * v->c + grp * cg + ci, wi = ((r * v->kw + q) * cg + ci) * v->k + o;
                if (gx) gx[xi] += g * w[wi];
                if (gw) gw[wi] += g * x[xi];
              }
            }
        }
}
static int f_conv_bwd_data(void *s, const smcu_conv *v, const float *gy, const float *w, float *gx, char *err) {
  (void)s, (void)err;
  f_conv_bwd(v, NULL, w, gy, gx, NULL);
  return 0;
}
static int f_conv_bwd_filter(void *s, const smcu_conv *v, const float *x, const float *gy, float *gw, char *err) {
  (void)s, (void)err;
  f_conv_bwd(v, x, NULL, gy, NULL, gw);
  return 0;
}
static int f_maxpool_fwd(void *s, const smcu_pool *p, const float *x, float *y, int64_t *am, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < p->n * p->oh * p->ow * p->c; i++) {
    int64_t c = i % p->c, r = i / p->c, ow = r % p->ow, oh = (r / p->ow) % p->oh, b = r / (p->ow * p->oh);
    int64_t h0 = oh * p->sh - p->pad_top, w0 = ow * p->sw - p->pad_left, arg = -1;
    float best = -INFINITY;
    for (int64_t h = h0 < 0 ? 0 : h0; h < h0 + p->kh && h < p->h; h++)
      for (int64_t ww = w0 < 0 ? 0 : w0; ww < w0 + p->kw && ww < p->w; ww++) {
        int64_t k = ((b * p->h + h) * p->w + ww) * p->c + c;
        if (arg < 0 || x[k] > best) best = x[k], arg = k;
      }
    y[i] = best;
    am[i] = arg;
  }
  return 0;
}
static int f_maxpool_bwd(void *s, const smcu_pool *p, const float *gy, const int64_t *am, float *gx, char *err) {
  (void)s, (void)err;
  int64_t nx = p->n * p->h * p->w * p->c;
  memset(gx, 0, (size_t)nx * sizeof *gx);
  for (int64_t i = 0; i < p->n * p->oh * p->ow * p->c; i++)
    if (am[i] >= 0 && am[i] < nx) gx[am[i]] += gy[i];
  return 0;
}
static int f_relu_bwd(void *s, const float *y, float *g, int64_t n, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) g[i] = y[i] > 0 ? g[i] : 0;
  return 0;
}
static int f_mul(void *s, const float *a, const float *b, float *y, int64_t n, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
  return 0;
}
static int f_fill(void *s, float *y, float v, int64_t n, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) y[i] = v;
  return 0;
}
static int f_gather32(void *s, const void *src, const int32_t *idx, int64_t rows, int64_t per, void *dst, char *err) {
  (void)s, (void)err;
  for (int64_t r = 0; r < rows; r++) memcpy((char *)dst + r * per * 4, (const char *)src + (int64_t)idx[r] * per * 4, (size_t)per * 4);
  return 0;
}
static int f_dropout(void *s, const float *x, float *y, float *mask, int64_t n, float rate, uint64_t seed, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    mask[i] = (float)(z >> 40) / 16777216.0f >= rate ? 1.0f / (1.0f - rate) : 0.0f;
    y[i] = x[i] * mask[i];
  }
  return 0;
}
static int f_sparse_xent(void *s, const float *out, const int32_t *lab, int64_t rows, int64_t k, int mode, float *g,
                         double *rowbuf, double *acc, char *err) {
  (void)s, (void)err, (void)rowbuf;
  for (int64_t i = 0; i < rows; i++) {
    const float *r = out + i * k;
    int64_t best = 0;
    double se = 0;
    float mx = r[0];
    for (int64_t j = 1; j < k; j++) best = r[j] > r[best] ? j : best, mx = fmaxf(mx, r[j]);
    for (int64_t j = 0; j < k; j++) se += exp((double)r[j] - mx);
    acc[1] += best == lab[i];
    acc[0] += mode == 0 ? log(se) - ((double)r[lab[i]] - mx) : -log(fmax(r[lab[i]], 1.17549435e-38));
    for (int64_t j = 0; g && j < k; j++)
      g[i * k + j] = ((mode == 0 ? (float)(exp((double)r[j] - mx) / se) : r[j]) - (j == lab[i])) / (float)rows;
  }
  return 0;
}
static int f_opt_update(void *s, const smcu_opt *u, float *w, const float *g, float *s0, float *s1, float *s2, int64_t n,
                        char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i];
    if (u->kind == 2) w[i] -= w[i] * u->wd * u->lr;
    if (u->kind == 3) {
      s0[i] = u->rho * s0[i] + u->omrho * gi * gi;
      float den = s0[i] + u->eps;
      if (u->centered) s2[i] = u->rho * s2[i] + u->omrho * gi, den -= s2[i] * s2[i];
      float inc = u->lr * gi / sqrtf(den);
      if (s1) s1[i] = u->mom * s1[i] + inc, inc = s1[i];
      w[i] -= inc;
    } else if (u->kind == 1 || u->kind == 2) {
      s0[i] += (gi - s0[i]) * u->omb1;
      s1[i] += (gi * gi - s1[i]) * u->omb2;
      w[i] -= s0[i] * u->alpha / (sqrtf(s1[i]) + u->eps);
    } else if (s0) {
      s0[i] = s0[i] * u->mom - gi * u->lr;
      w[i] += u->nesterov ? s0[i] * u->mom - gi * u->lr : s0[i];
    } else {
      w[i] -= gi * u->lr;
    }
  }
  return 0;
}
static int f_affine(void *s, const float *x, float *y, int64_t n, float scale, float offset, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale + offset;
  return 0;
}
static int f_leaky_bwd(void *s, const float *x, const float *gy, float *gx, int64_t n, float slope, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n; i++) gx[i] = x[i] > 0 ? gy[i] : gy[i] * slope;
  return 0;
}
static int f_gap_bwd(void *s, const float *gy, float *gx, int64_t n, int64_t hw, int64_t c, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < n * hw * c; i++) gx[i] = gy[i / (hw * c) * c + i % c] / (float)hw;
  return 0;
}
static int f_avgpool_bwd(void *s, const smcu_pool *p, const float *gy, float *gx, char *err) {
  (void)s, (void)err;
  memset(gx, 0, (size_t)(p->n * p->h * p->w * p->c) * sizeof *gx);
  for (int64_t i = 0; i < p->n * p->oh * p->ow * p->c; i++) {
    int64_t c = i % p->c, r = i / p->c, ow = r % p->ow, oh = (r / p->ow) % p->oh, b = r / (p->ow * p->oh);
    int64_t h0 = oh * p->sh - p->pad_top, w0 = ow * p->sw - p->pad_left, cnt = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int64_t h = h0 < 0 ? 0 : h0; h < h0 + p->kh && h < p->h; h++)
        for (int64_t ww = w0 < 0 ? 0 : w0; ww < w0 + p->kw && ww < p->w; ww++) {
          if (!pass) cnt++;
          else gx[((b * p->h + h) * p->w + ww) * p->c + c] += gy[i] / (float)cnt;
        }
  }
  return 0;
}
static int f_bn_stats(void *s, const float *x, float *mm, float *mv, int64_t rows, int64_t c, int training, float mom,
                      float eps, float *st, char *err) {
  (void)s, (void)err;
  for (int64_t ch = 0; ch < c && (rows > 0 || !training); ch++) {
    if (!training) {
      st[ch] = mm[ch], st[c + ch] = 1 / sqrtf(mv[ch] + eps);
      continue;
    }
    double sum = 0, q = 0;
    for (int64_t r = 0; r < rows; r++) sum += x[r * c + ch];
    float mu = (float)(sum / (double)rows);
    for (int64_t r = 0; r < rows; r++) q += ((double)x[r * c + ch] - mu) * ((double)x[r * c + ch] - mu);
    float var = (float)(q / (double)rows);
    st[ch] = mu, st[c + ch] = 1 / sqrtf(var + eps);
    mm[ch] = mm[ch] * mom + mu * (1 - mom), mv[ch] = mv[ch] * mom + var * (1 - mom);
  }
  return 0;
}
static int f_bn_apply(void *s, const float *x, const float *g, const float *b, const float *st, float *y, int64_t rows,
                      int64_t c, char *err) {
  (void)s, (void)err;
  for (int64_t i = 0; i < rows * c; i++) y[i] = (x[i] - st[i % c]) * st[c + i % c] * g[i % c] + b[i % c];
  return 0;
}
static int f_bn_bwd(void *s, const float *x, const float *gy, const float *g, const float *st, int64_t rows, int64_t c,
                    int use_scale, int center, float *gx, float *gk, float *gb, char *err) {
  (void)s, (void)err;
  for (int64_t ch = 0; ch < c; ch++) {
    double sb = 0, sg = 0;
    for (int64_t r = 0; r < rows; r++) {
      sb += gy[r * c + ch];
      sg += (double)gy[r * c + ch] * ((x[r * c + ch] - st[ch]) * st[c + ch]);
    }
    gk[ch] = use_scale ? (float)sg : 0, gb[ch] = center ? (float)sb : 0;
    for (int64_t r = 0; gx && r < rows; r++) {
      float xh = (x[r * c + ch] - st[ch]) * st[c + ch];
      gx[r * c + ch] = g[ch] * st[c + ch] / (float)rows * ((float)rows * gy[r * c + ch] - (float)sb - xh * (float)sg);
    }
  }
  return 0;
}
static const smcu_train_api host_train = {f_conv2d, f_conv_bwd_data, f_conv_bwd_filter, f_maxpool_fwd, f_maxpool_bwd,
                                          f_relu_bwd,      f_mul,             f_fill,        f_gather32,
                                          f_dropout,       f_sparse_xent,     f_opt_update,  f_affine,
                                          f_leaky_bwd,     f_gap_bwd,         f_avgpool_bwd, f_bn_stats,
                                          f_bn_apply,      f_bn_bwd};
static const smcu_api host_module = {SMCU_ABI_VERSION, f_open, f_describe, f_stream_get, f_stream_put, f_alloc,
                                     f_release, f_copy, f_copy, f_copy2d, f_unary, f_binary, f_bias_act, f_batchnorm,
                                     f_gemm, f_conv2d, f_pool, f_mean_mid, f_softmax, f_transpose, f_pad, &host_train};

#endif
