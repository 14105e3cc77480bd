/* layers.c - forward and backward of the layers Keras configs bring beyond the seed CNN's:
 * BatchNormalization (over the last axis; batch statistics and the moving-statistics update in
 * training, the moving statistics at inference, as keras/src/layers/normalization/
 * batch_normalization.py), AveragePooling2D (TF's AvgPool: SAME divides each window by its
 * in-bounds count), GlobalAveragePooling2D, Rescaling and LeakyReLU. fit.c and grad.c dispatch
 * here; the scratch comes from sm__train_scratch (batch norm keeps its batch mean and inverse
 * standard deviation and its accumulators in tr->mask[l], SM_BN_SCRATCH bytes). Batch norm without
 * scale or center keeps gamma 1 / beta 0: their gradients are 0 and the optimizer skips them
 * (optim.c). Every loop runs over rows outer and channels (contiguous) inner, so it vectorizes. */
/* GCC's -O2 "very cheap" cost model vectorizes no loop of unknown trip count (as in grad.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <math.h>
#include <string.h>

#include "train/train_internal.h"

static int64_t window_pad(int64_t in, int64_t out, int64_t k, int64_t s, int same) {
  if (!same) return 0;
  int64_t total = (out - 1) * s + k - in;
  return total > 0 ? total / 2 : 0;
}

/* The in-bounds part of output (oy, ox)'s pooling window. */
typedef struct win {
  int64_t y0, y1, x0, x1; /* in-bounds rows [y0, y1), columns [x0, x1) */
} win;
static win window_at(const sm__layer *L, int64_t oy, int64_t ox) {
  int same = L->padding == SM_PAD_SAME;
  int64_t h = L->in_shape[0], w = L->in_shape[1];
  int64_t pt = window_pad(h, L->out_shape[0], L->kh, L->sh, same), pl = window_pad(w, L->out_shape[1], L->kw, L->sw, same);
  win r;
  r.y0 = oy * L->sh - pt, r.x0 = ox * L->sw - pl;
  r.y1 = r.y0 + L->kh, r.x1 = r.x0 + L->kw;
  if (r.y0 < 0) r.y0 = 0;
  if (r.x0 < 0) r.x0 = 0;
  if (r.y1 > h) r.y1 = h;
  if (r.x1 > w) r.x1 = w;
  return r;
}

static void avgpool(const sm__layer *L, const float *x, float *y, int64_t n, float *gx, const float *gy) {
  int64_t h = L->in_shape[0], w = L->in_shape[1], c = L->in_shape[2], oh = L->out_shape[0], ow = L->out_shape[1];
  if (gx) memset(gx, 0, (size_t)(n * h * w * c) * sizeof *gx);
  for (int64_t b = 0; b < n; b++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++) {
        win r = window_at(L, oy, ox);
        float inv = 1.0f / (float)((r.y1 - r.y0) * (r.x1 - r.x0));
        int64_t o = ((b * oh + oy) * ow + ox) * c;
        for (int64_t ch = 0; ch < c; ch++) {
          if (gx) {
            float g = gy[o + ch] * inv;
            for (int64_t iy = r.y0; iy < r.y1; iy++)
              for (int64_t ix = r.x0; ix < r.x1; ix++) gx[((b * h + iy) * w + ix) * c + ch] += g;
          } else {
            float s = 0.0f;
            for (int64_t iy = r.y0; iy < r.y1; iy++)
              for (int64_t ix = r.x0; ix < r.x1; ix++) s += x[((b * h + iy) * w + ix) * c + ch];
            y[o + ch] = s * inv;
          }
        }
      }
}

/* ---- batch normalization ---------------------------------------------------------------------- */
/* Rows outer, channels inner: each pass streams x once, contiguously, with a vector of per-channel
 * double accumulators. The scratch (stats, SM_BN_SCRATCH(c) bytes from fit.c) holds 6 x channels
 * floats (the mean and inverse deviation, then the backward's factors) and 2 x channels doubles.
 * Channels are independent: the pool takes ranges of them (at least 8), and per channel the sums
 * run over the rows in order, so the results are the same bits for any thread count. */
typedef struct bnjob {
  const sm__layer *L;
  const float *x, *gy;
  float *y, *gx, *gk, *gb, *stats;
  int64_t c, rows;
  int training;
} bnjob;

static double *bn_dacc(float *stats, int64_t c) { return (double *)(void *)(stats + 6 * c); }

static void bn_forward_range(void *ctx, int64_t c0, int64_t c1) {
  const bnjob *j = ctx;
  const sm__layer *L = j->L;
  const int64_t c = j->c, rows = j->rows;
  const float *x = j->x, *gamma = sm_tensor_data(L->kernel), *beta = sm_tensor_data(L->bias);
  float *mm = sm_tensor_data(L->moving_mean), *mv = sm_tensor_data(L->moving_var);
  float *mean = j->stats, *inv = j->stats + c;
  if (j->training) {
    double *s = bn_dacc(j->stats, c), *q = s + c;
    for (int64_t ch = c0; ch < c1; ch++) s[ch] = q[ch] = 0.0;
    for (int64_t r = 0; r < rows; r++) {
      const float *xr = x + r * c;
      for (int64_t ch = c0; ch < c1; ch++) s[ch] += (double)xr[ch];
    }
    for (int64_t ch = c0; ch < c1; ch++) mean[ch] = (float)(s[ch] / (double)rows);
    for (int64_t r = 0; r < rows; r++) {
      const float *xr = x + r * c;
      for (int64_t ch = c0; ch < c1; ch++) {
        double d = (double)xr[ch] - (double)mean[ch];
        q[ch] += d * d;
      }
    }
    for (int64_t ch = c0; ch < c1; ch++) {
      float var = (float)(q[ch] / (double)rows);
      inv[ch] = 1.0f / sqrtf(var + L->epsilon);
      mm[ch] = mm[ch] * L->momentum + mean[ch] * (1.0f - L->momentum);
      mv[ch] = mv[ch] * L->momentum + var * (1.0f - L->momentum);
    }
  } else {
    for (int64_t ch = c0; ch < c1; ch++) {
      mean[ch] = mm[ch];
      inv[ch] = 1.0f / sqrtf(mv[ch] + L->epsilon);
    }
  }
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * c;
    float *yr = j->y + r * c;
    for (int64_t ch = c0; ch < c1; ch++) yr[ch] = (xr[ch] - mean[ch]) * inv[ch] * gamma[ch] + beta[ch];
  }
}

static void bn_backward_range(void *ctx, int64_t c0, int64_t c1) {
  const bnjob *j = ctx;
  const sm__layer *L = j->L;
  const int64_t c = j->c, rows = j->rows;
  const float *x = j->x, *gy = j->gy, *gamma = sm_tensor_data(L->kernel), *mean = j->stats, *inv = j->stats + c;
  double *sb = bn_dacc(j->stats, c), *sg = sb + c;
  for (int64_t ch = c0; ch < c1; ch++) sb[ch] = sg[ch] = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * c, *gr = gy + r * c;
    for (int64_t ch = c0; ch < c1; ch++) {
      float g = gr[ch], xh = (xr[ch] - mean[ch]) * inv[ch];
      sb[ch] += (double)g;
      sg[ch] += (double)g * (double)xh;
    }
  }
  for (int64_t ch = c0; ch < c1; ch++) {
    j->gk[ch] = L->use_scale ? (float)sg[ch] : 0.0f;
    j->gb[ch] = L->center ? (float)sb[ch] : 0.0f;
  }
  if (!j->gx || rows == 0) return;
  /* gx = gamma * inv / rows * (rows * g - sum(g) - xh * sum(g * xh)), per channel */
  float *k = j->stats + 2 * c, *db = k + c, *dg = db + c;
  for (int64_t ch = c0; ch < c1; ch++) {
    db[ch] = (float)sb[ch];
    dg[ch] = (float)sg[ch];
    k[ch] = gamma[ch] * inv[ch] / (float)rows;
  }
  const float fr = (float)rows;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * c, *gr = gy + r * c;
    float *o = j->gx + r * c;
    for (int64_t ch = c0; ch < c1; ch++) {
      float xh = (xr[ch] - mean[ch]) * inv[ch];
      o[ch] = k[ch] * (fr * gr[ch] - db[ch] - xh * dg[ch]);
    }
  }
}

static void bn_run(sm_seq *m, int l, const float *x, float *y, const float *gy, float *gx, float *gk, float *gb, int64_t n,
                   int training, int backward) {
  const sm__layer *L = &m->layers[l];
  sm__train *tr = m->priv;
  bnjob j = {L, x, gy, y, gx, gk, gb, tr->mask[l], L->units, n * sm__elems(L->in_rank, L->in_shape) / L->units, training};
  /* an empty shard (MPI, more ranks than samples): no statistics to take, nothing to train */
  if (j.rows == 0 && !backward) return;
  sm__parallel_for(tr->pool, j.c, 8, backward ? bn_backward_range : bn_forward_range, &j);
}

/* Global average pooling over samples [b0, b1): per channel the positions in order. */
typedef struct gapjob {
  const float *x, *gy;
  float *y, *gx;
  int64_t hw, c;
} gapjob;

static void gap_range(void *ctx, int64_t b0, int64_t b1) {
  const gapjob *j = ctx;
  const int64_t hw = j->hw, c = j->c;
  for (int64_t b = b0; b < b1; b++) {
    if (j->gx) { /* backward: gy / hw to every position */
      const float *g = j->gy + b * c;
      for (int64_t p = 0; p < hw; p++) {
        float *o = j->gx + (b * hw + p) * c;
        for (int64_t ch = 0; ch < c; ch++) o[ch] = g[ch] / (float)hw;
      }
      continue;
    }
    float *yb = j->y + b * c;
    for (int64_t ch = 0; ch < c; ch++) yb[ch] = 0.0f;
    for (int64_t p = 0; p < hw; p++) {
      const float *xp = j->x + (b * hw + p) * c;
      for (int64_t ch = 0; ch < c; ch++) yb[ch] += xp[ch];
    }
    for (int64_t ch = 0; ch < c; ch++) yb[ch] /= (float)hw;
  }
}

/* ---- dispatch ----------------------------------------------------------------------------------- */
void sm__layer_forward_extra(sm_seq *m, int l, const float *x, float *y, int64_t n, int training) {
  const sm__layer *L = &m->layers[l];
  sm__train *tr = m->priv;
  int64_t in_per = sm__elems(L->in_rank, L->in_shape), total = n * in_per;
  switch (L->kind) {
    case SM_LAYER_BATCHNORM: bn_run(m, l, x, y, NULL, NULL, NULL, NULL, n, training, 0); break;
    case SM_LAYER_AVGPOOL2D: avgpool(L, x, y, n, NULL, NULL); break;
    case SM_LAYER_GAP2D: {
      gapjob j = {x, NULL, y, NULL, L->in_shape[0] * L->in_shape[1], L->in_shape[2]};
      sm__parallel_for(tr->pool, n, 1, gap_range, &j);
      break;
    }
    case SM_LAYER_RESCALING:
      for (int64_t i = 0; i < total; i++) y[i] = x[i] * L->scale + L->offset;
      break;
    default: /* leaky relu */
      for (int64_t i = 0; i < total; i++) y[i] = x[i] > 0.0f ? x[i] : x[i] * L->scale;
      break;
  }
}

void sm__layer_backward_extra(sm_seq *m, int l, const float *x, const float *gy, float *gx, float *gk, float *gb,
                              int64_t n) {
  const sm__layer *L = &m->layers[l];
  sm__train *tr = m->priv;
  int64_t in_per = sm__elems(L->in_rank, L->in_shape), total = n * in_per;
  switch (L->kind) {
    case SM_LAYER_BATCHNORM: bn_run(m, l, x, NULL, gy, gx, gk, gb, n, 1, 1); break;
    case SM_LAYER_AVGPOOL2D:
      if (gx) avgpool(L, x, NULL, n, gx, gy);
      break;
    case SM_LAYER_GAP2D:
      if (gx) {
        gapjob j = {x, gy, NULL, gx, L->in_shape[0] * L->in_shape[1], L->in_shape[2]};
        sm__parallel_for(tr->pool, n, 1, gap_range, &j);
      }
      break;
    case SM_LAYER_RESCALING:
      if (gx)
        for (int64_t i = 0; i < total; i++) gx[i] = gy[i] * L->scale;
      break;
    default:
      if (gx)
        for (int64_t i = 0; i < total; i++) gx[i] = x[i] > 0.0f ? gy[i] : gy[i] * L->scale;
      break;
  }
}
