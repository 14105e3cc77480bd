/* loss.c - the losses as Keras computes them (mean over the batch, "sum_over_batch_size"), their
 * gradients with respect to the model's output, and sparse categorical accuracy.
 *
 * Cross-entropy on logits: loss = logsumexp(z) - z_y, gradient (softmax(z) - onehot(y)) / n.
 * Cross-entropy on probabilities p: Keras's TensorFlow backend uses the logits behind a softmax
 * activation when there is one (so does this: the gradient goes straight to the softmax's input),
 * otherwise it clips p to [eps, 1 - eps] and renormalises: loss = -log(c_y / sum(c)).
 * MSE: mean over each sample's elements, then over the batch. */
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
