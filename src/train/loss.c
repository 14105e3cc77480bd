/* loss.c - the losses as Keras computes them (mean over the batch, "sum_over_batch_size"), their
 * gradients with respect to the model's output, and sparse categorical accuracy.
 *
 * Cross-entropy on logits: loss = logsumexp(z) - z_y, gradient (softmax(z) - onehot(y)) / n.
 * Cross-entropy on probabilities p: Keras's TensorFlow backend uses the logits behind a softmax
 * activation when there is one (so does this: the gradient goes straight to the softmax's input),
 * otherwise it clips p to [eps, 1 - eps] and renormalises: loss = -log(c_y / sum(c)).
 * MSE: mean over each sample's elements, then over the batch.
 * Categorical cross-entropy takes target distributions t (one-hot or soft) instead of class ids:
 * on logits loss = logsumexp(z) - sum(t * z), gradient (softmax(z) * sum(t) - t) / n; behind a
 * softmax the same w.r.t. its input; on plain probabilities, as Keras: normalise, clip to
 * [eps, 1 - eps], loss = -sum(t * log(q)). Accuracy compares argmaxes. */
#include <float.h>
#include <math.h>

#include "train/train_internal.h"

#define CE_EPS 1e-7f

static int last_is_softmax(const sm_seq *m) {
  const sm__layer *L = &m->layers[m->nlayers - 1];
  return (L->kind == SM_LAYER_DENSE || L->kind == SM_LAYER_CONV2D || L->kind == SM_LAYER_ACTIVATION) &&
         L->activation == SM_ACT_SOFTMAX;
}

static int64_t argmax_row(const float *r, int64_t k) {
  int64_t b = 0;
  for (int64_t j = 1; j < k; j++)
    if (r[j] > r[b]) b = j;
  return b;
}

/* Categorical cross-entropy's summed loss over n rows (see the top). */
static double categorical(const float *out, int64_t n, int64_t k, const float *t, float *g, int logits, int soft,
                          int64_t *good) {
  const float inv_n = 1.0f / (float)n;
  double total = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const float *r = out + i * k, *ti = t + i * k;
    float *gr = g ? g + i * k : NULL;
    double tsum = 0.0;
    for (int64_t j = 0; j < k; j++) tsum += ti[j];
    if (argmax_row(r, k) == argmax_row(ti, k)) (*good)++;
    if (logits || soft) {
      float mx = r[0];
      double se = 0.0, tz = 0.0;
      if (logits) {
        for (int64_t j = 1; j < k; j++) mx = r[j] > mx ? r[j] : mx;
        for (int64_t j = 0; j < k; j++) se += exp((double)(r[j] - mx));
        for (int64_t j = 0; j < k; j++) tz += (double)ti[j] * (double)(r[j] - mx);
        total += tsum * log(se) - tz;
      } else {
        for (int64_t j = 0; j < k; j++) tz -= (double)ti[j] * log(r[j] > FLT_MIN ? (double)r[j] : (double)FLT_MIN);
        total += tz;
      }
      if (gr) {
        float inv = logits ? (float)(1.0 / se) : 1.0f;
        for (int64_t j = 0; j < k; j++) {
          float p = logits ? expf(r[j] - mx) * inv : r[j];
          gr[j] = (p * (float)tsum - ti[j]) * inv_n;
        }
      }
    } else {
      /* Keras: q = r / sum(r), clipped to [eps, 1 - eps]; dL/dr_i = (sum of t_j over unclipped j
       * - [i unclipped] t_i / q_i) / S */
      double s = 0.0, l = 0.0, tu = 0.0;
      for (int64_t j = 0; j < k; j++) s += r[j];
      for (int64_t j = 0; j < k; j++) {
        float q = (float)(r[j] / s), c = q < CE_EPS ? CE_EPS : (q > 1.0f - CE_EPS ? 1.0f - CE_EPS : q);
        l -= (double)ti[j] * log((double)c);
        if (c == q) tu += ti[j];
      }
      for (int64_t j = 0; gr && j < k; j++) {
        float q = (float)(r[j] / s);
        int clipped = q < CE_EPS || q > 1.0f - CE_EPS;
        gr[j] = (float)((tu - (clipped ? 0.0 : (double)ti[j] / q)) / s) * inv_n;
      }
      total += l;
    }
  }
  return total;
}

double sm__loss(const sm_seq *m, const float *out, int64_t n, int64_t k, const int32_t *labels, const float *targets,
                float *g, int64_t *correct, int *fused) {
  double total = 0.0;
  int64_t good = 0;
  if (fused) *fused = 0;
  if (n <= 0) {
    if (correct) *correct = 0;
    return 0.0;
  }
  const float inv_n = 1.0f / (float)n;
  if (m->loss.kind == SM_LOSS_MSE) {
    const float scale = 2.0f / ((float)n * (float)k);
    for (int64_t i = 0; i < n; i++) {
      double s = 0.0;
      for (int64_t j = 0; j < k; j++) {
        float d = out[i * k + j] - targets[i * k + j];
        s += (double)d * d;
        if (g) g[i * k + j] = scale * d;
      }
      total += s / (double)k;
    }
    if (correct) *correct = 0;
    return total / (double)n;
  }
  const int logits = m->loss.from_logits;
  const int soft = !logits && last_is_softmax(m);
  if (soft && fused) *fused = 1;
  if (m->loss.kind == SM_LOSS_CATEGORICAL_CROSSENTROPY) {
    total = categorical(out, n, k, targets, g, logits, soft, &good);
    if (correct) *correct = good;
    return total / (double)n;
  }
  for (int64_t i = 0; i < n; i++) {
    const float *r = out + i * k;
    int32_t y = labels[i];
    if (argmax_row(r, k) == y) good++;
    float *gr = g ? g + i * k : NULL;
    if (logits) {
      float mx = r[0];
      for (int64_t j = 1; j < k; j++) mx = r[j] > mx ? r[j] : mx;
      double se = 0.0;
      for (int64_t j = 0; j < k; j++) se += exp((double)(r[j] - mx));
      total += log(se) - (double)(r[y] - mx);
      if (gr) {
        float inv = (float)(1.0 / se);
        for (int64_t j = 0; j < k; j++) gr[j] = expf(r[j] - mx) * inv * inv_n;
        gr[y] -= inv_n;
      }
    } else if (soft) {
      /* r is softmax(z): the gradient w.r.t. z is (p - onehot) / n */
      double p = r[y] > FLT_MIN ? (double)r[y] : (double)FLT_MIN;
      total += -log(p);
      if (gr) {
        for (int64_t j = 0; j < k; j++) gr[j] = r[j] * inv_n;
        gr[y] -= inv_n;
      }
    } else {
      double s = 0.0;
      for (int64_t j = 0; j < k; j++) {
        float c = r[j] < CE_EPS ? CE_EPS : (r[j] > 1.0f - CE_EPS ? 1.0f - CE_EPS : r[j]);
        s += c;
      }
      float cy = r[y] < CE_EPS ? CE_EPS : (r[y] > 1.0f - CE_EPS ? 1.0f - CE_EPS : r[y]);
      total += -log((double)cy / s);
      if (gr) {
        /* d/dc_j = 1/S - [j == y]/c_y; zero where the clip held the value */
        for (int64_t j = 0; j < k; j++) {
          int clipped = r[j] < CE_EPS || r[j] > 1.0f - CE_EPS;
          float d = (float)(1.0 / s) - (j == y ? 1.0f / cy : 0.0f);
          gr[j] = clipped ? 0.0f : d * inv_n;
        }
      }
    }
  }
  if (correct) *correct = good;
  return total / (double)n;
}
