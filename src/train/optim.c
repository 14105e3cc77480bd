/* optim.c - SGD (momentum, Nesterov) and Adam, operation for operation as Keras 3 writes them in
 * keras/src/optimizers/{sgd,adam}.py, in float32 as its TensorFlow backend runs them:
 *   SGD:  m = m*momentum - g*lr;  w += m  (Nesterov: w += m*momentum - g*lr);  no momentum: w -= g*lr
 *   Adam: t = iterations + 1;  alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
 *         m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2);  w -= m*alpha / (sqrt(v) + eps)
 * Keras computes `1 - beta_1` in Python doubles from the decimal it was given (0.9), then casts to
 * float32; the C API holds beta_1 as a float (0.9f), so it is read back as its shortest decimal
 * first, which gives the same float32 factors as Keras for the values people type. */
/* The update loops are elementwise over every weight on every step: let GCC vectorize them
 * (its -O2 cost model does not, and sqrtf's errno blocks it); results are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap", "no-math-errno")
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "train/train_internal.h"

static double shortest_decimal(float f) {
  char buf[32];
  for (int p = 6; p <= 9; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, (double)f);
    double d = strtod(buf, NULL);
    if ((float)d == f) return d;
  }
  return (double)f;
}

typedef struct upd {
  int kind, nesterov;
  float lr, mom, alpha, omb1, omb2, eps;
  float *w, *s0, *s1;
  const float *g;
} upd;

static void upd_range(void *ctx, int64_t b, int64_t e) {
  const upd *u = ctx;
  float *w = u->w, *m = u->s0, *v = u->s1;
  const float *g = u->g;
  if (u->kind == SM_OPT_ADAM) {
    const float alpha = u->alpha, omb1 = u->omb1, omb2 = u->omb2, eps = u->eps;
#ifdef __SSE2__
    /* four at a time; each SSE operation rounds exactly as its scalar twin, so the results are
     * the same bits as the loop below */
    const __m128 va = _mm_set1_ps(alpha), v1 = _mm_set1_ps(omb1), v2 = _mm_set1_ps(omb2), ve = _mm_set1_ps(eps);
    for (; b + 4 <= e; b += 4) {
      __m128 gi = _mm_loadu_ps(g + b), mi = _mm_loadu_ps(m + b), vi = _mm_loadu_ps(v + b);
      mi = _mm_add_ps(mi, _mm_mul_ps(_mm_sub_ps(gi, mi), v1));
      vi = _mm_add_ps(vi, _mm_mul_ps(_mm_sub_ps(_mm_mul_ps(gi, gi), vi), v2));
      _mm_storeu_ps(m + b, mi);
      _mm_storeu_ps(v + b, vi);
      __m128 step = _mm_div_ps(_mm_mul_ps(mi, va), _mm_add_ps(_mm_sqrt_ps(vi), ve));
      _mm_storeu_ps(w + b, _mm_sub_ps(_mm_loadu_ps(w + b), step));
    }
#endif
    for (int64_t i = b; i < e; i++) {
      float gi = g[i];
      float mi = m[i] + (gi - m[i]) * omb1;
      float vi = v[i] + (gi * gi - v[i]) * omb2;
      m[i] = mi;
      v[i] = vi;
      w[i] -= (mi * alpha) / (sqrtf(vi) + eps);
    }
  } else if (m) {
    const float lr = u->lr, mom = u->mom;
    for (int64_t i = b; i < e; i++) {
      float mi = m[i] * mom - g[i] * lr;
      m[i] = mi;
      w[i] += u->nesterov ? mi * mom - g[i] * lr : mi; /* loop-invariant: unswitched */
    }
  } else {
    const float lr = u->lr;
    for (int64_t i = b; i < e; i++) w[i] -= g[i] * lr;
  }
}

static void upd_init(upd *u, const sm_optimizer *o, int64_t iterations) {
  u->kind = o->kind;
  u->nesterov = o->nesterov;
  u->lr = o->learning_rate;
  u->mom = o->momentum;
  if (o->kind == SM_OPT_ADAM) {
    float t = (float)(iterations + 1);
    float b1p = powf(o->beta_1, t), b2p = powf(o->beta_2, t);
    u->alpha = o->learning_rate * sqrtf(1.0f - b2p) / (1.0f - b1p);
    u->omb1 = (float)(1.0 - shortest_decimal(o->beta_1));
    u->omb2 = (float)(1.0 - shortest_decimal(o->beta_2));
    u->eps = (float)shortest_decimal(o->epsilon);
  }
}

void sm__apply_update(const sm_optimizer *o, int64_t iterations, float *w, const float *g, float *s0, float *s1,
                      int64_t n) {
  upd u;
  upd_init(&u, o, iterations);
  u.w = w, u.g = g, u.s0 = s0, u.s1 = s1;
  upd_range(&u, 0, n);
}

void sm__optimizer_step(sm_seq *m) {
  sm__train *tr = m->priv;
  upd u;
  upd_init(&u, &m->opt, m->iterations);
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    if (!L->kernel) continue;
    for (int which = 0; which < 2; which++) {
      sm_tensor *w = which ? L->bias : L->kernel;
      sm_tensor **slot = which ? L->bias_slot : L->kernel_slot;
      u.w = sm_tensor_data(w);
      u.g = which ? tr->gb[i] : tr->gk[i];
      u.s0 = slot[0] ? sm_tensor_data(slot[0]) : NULL;
      u.s1 = slot[1] ? sm_tensor_data(slot[1]) : NULL;
      sm__parallel_for(tr->pool, sm_tensor_num_elements(w), 16384, upd_range, &u);
    }
  }
  m->iterations++;
}
