/* optim.c - SGD (momentum, Nesterov), Adam, AdamW and RMSprop, operation for operation as Keras 3
 * writes them in keras/src/optimizers/{sgd,adam,adamw,rmsprop}.py and base_optimizer.py, in
 * float32 as its TensorFlow backend runs them:
 *   SGD:  m = m*momentum - g*lr;  w += m  (Nesterov: w += m*momentum - g*lr);  no momentum: w -= g*lr
 *   Adam: t = iterations + 1;  alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
 *         m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2);  w -= m*alpha / (sqrt(v) + eps)
 *   AdamW: first w -= w * weight_decay * lr (base_optimizer's _apply_weight_decay), then Adam
 *   RMSprop: v = rho*v + (1 - rho)*g^2;  centered: a = rho*a + (1 - rho)*g, den = v - a^2 + eps,
 *         else den = v + eps;  inc = lr*g / sqrt(den);  momentum > 0: m = momentum*m + inc, w -= m,
 *         else w -= inc
 * lr is the schedule's for the step (keras.optimizers.schedules, float32). Keras computes
 * `1 - beta_1` (and `1 - rho`) in Python doubles from the decimal it was given (0.9), then casts
 * to float32; the C API holds them as floats (0.9f), so each is read back as its shortest decimal
 * first, which gives the same float32 factors as Keras for the values people type. */
/* The update loops are elementwise over every weight on every step: let GCC vectorize them
 * (its -O2 cost model does not, and sqrtf's errno blocks it); results are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap", "no-math-errno")
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  int kind, nesterov, centered;
  float lr, mom, alpha, omb1, omb2, eps, wd, rho, omrho;
  float *w, *s0, *s1, *s2;
  const float *g;
  const float *g2; /* NULL, or added to g as it is read (upd_sum_range) */
} upd;

static void rmsprop_range(const upd *u, int64_t b, int64_t e) {
  float *w = u->w, *v = u->s0, *m = u->s1, *a = u->s2;
  const float *g = u->g;
  for (int64_t i = b; i < e; i++) {
    float gi = g[i], vi = u->rho * v[i] + u->omrho * (gi * gi), den;
    v[i] = vi;
    if (u->centered) {
      float ai = u->rho * a[i] + u->omrho * gi;
      a[i] = ai;
      den = vi - ai * ai + u->eps;
    } else {
      den = vi + u->eps;
    }
    float inc = (u->lr * gi) / sqrtf(den);
    if (m) {
      m[i] = u->mom * m[i] + inc;
      w[i] -= m[i];
    } else {
      w[i] -= inc;
    }
  }
}

static void upd_range(void *ctx, int64_t b, int64_t e) {
  const upd *u = ctx;
  float *w = u->w, *m = u->s0, *v = u->s1;
  const float *g = u->g;
  if (u->kind == SM_OPT_ADAMW)
    for (int64_t i = b; i < e; i++) w[i] -= (w[i] * u->wd) * u->lr;
  if (u->kind == SM_OPT_RMSPROP) {
    rmsprop_range(u, b, e);
  } else if (u->kind == SM_OPT_ADAM || u->kind == SM_OPT_ADAMW) {
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

/* The gradient g + g2 (the sharded optimizer's last received piece, fit_dist.c): summed a block at a
 * time into a buffer that stays in L1, then the update as ever, so that the sum is never written
 * to and read back from memory; the same bits as summing first. */
static void upd_sum_range(void *ctx, int64_t b, int64_t e) {
  const upd *u = ctx;
  float sum[512];
  for (int64_t c = b; c < e; c += 512) {
    int64_t n = e - c < 512 ? e - c : 512;
    for (int64_t i = 0; i < n; i++) sum[i] = u->g[c + i] + u->g2[c + i];
    upd v = *u;
    v.g = sum, v.g2 = NULL, v.w = u->w + c;
    v.s0 = u->s0 ? u->s0 + c : NULL, v.s1 = u->s1 ? u->s1 + c : NULL, v.s2 = u->s2 ? u->s2 + c : NULL;
    upd_range(&v, 0, n);
  }
}

/* ---- schedules, slots, checks ------------------------------------------------------------------ */
float sm__opt_learning_rate(const sm_optimizer *o, int64_t iterations) {
  if (o->schedule == SM_LR_EXPONENTIAL && o->decay_steps > 0) {
    float p = (float)iterations / (float)o->decay_steps;
    if (o->staircase) p = floorf(p);
    return o->learning_rate * powf(o->decay_rate, p);
  }
  if (o->schedule == SM_LR_COSINE && o->decay_steps > 0) {
    float ds = (float)o->decay_steps, step = (float)iterations < ds ? (float)iterations : ds;
    float c = 0.5f * (1.0f + cosf(3.14159265358979323846f * (step / ds)));
    float a = (float)shortest_decimal(o->alpha), decayed = (float)(1.0 - (double)a) * c + a;
    return o->learning_rate * decayed;
  }
  return o->learning_rate;
}

const char *sm__opt_slot_name(const sm_optimizer *o, int k) {
  switch (o->kind) {
    case SM_OPT_ADAM:
    case SM_OPT_ADAMW: return k == 0 ? "momentum" : k == 1 ? "velocity" : NULL;
    case SM_OPT_RMSPROP:
      return k == 0 ? "velocity" : k == 1 && o->momentum > 0.0f ? "momentum" : k == 2 && o->centered ? "average_gradient" : NULL;
    default: return k == 0 && o->momentum != 0.0f ? "momentum" : NULL;
  }
}

sm_status *sm__check_optimizer(const sm_optimizer *o) {
  if (o->kind == SM_OPT_ADAMW && !(o->weight_decay >= 0.0f && isfinite(o->weight_decay)))
    return sm_status_new(SM_INVALID_ARGUMENT, "AdamW weight_decay must be >= 0, got %g", (double)o->weight_decay);
  if (o->kind == SM_OPT_RMSPROP &&
      (!(o->rho >= 0.0f && o->rho < 1.0f) || !(o->momentum >= 0.0f && o->momentum < 1.0f) || !(o->epsilon > 0.0f)))
    return sm_status_new(SM_INVALID_ARGUMENT, "RMSprop needs rho and momentum in [0, 1) and epsilon > 0 (got %g, %g, %g)",
                         (double)o->rho, (double)o->momentum, (double)o->epsilon);
  if (o->schedule < SM_LR_CONSTANT || o->schedule > SM_LR_COSINE)
    return sm_status_new(SM_INVALID_ARGUMENT, "unknown learning-rate schedule %d", o->schedule);
  if (o->schedule != SM_LR_CONSTANT && (o->decay_steps < 1 || o->decay_steps > ((int64_t)1 << 53)))
    return sm_status_new(SM_INVALID_ARGUMENT, "the learning-rate schedule needs decay_steps >= 1, got %lld",
                         (long long)o->decay_steps);
  if (o->schedule == SM_LR_EXPONENTIAL && !(o->decay_rate > 0.0f && isfinite(o->decay_rate)))
    return sm_status_new(SM_INVALID_ARGUMENT, "exponential decay needs decay_rate > 0, got %g", (double)o->decay_rate);
  if (o->schedule == SM_LR_COSINE && !(o->alpha >= 0.0f && o->alpha <= 1.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "cosine decay needs alpha in [0, 1], got %g", (double)o->alpha);
  return NULL;
}

sm_status *sm_optimizer_set_schedule(sm_optimizer *o, const char *spec) {
  if (!o || !spec) return sm_status_new(SM_INVALID_ARGUMENT, "learning-rate schedule: optimizer and spec are required");
  if (!strcmp(spec, "constant")) {
    o->schedule = SM_LR_CONSTANT;
    return NULL;
  }
  int cos = !strncmp(spec, "cosine:", 7), ex = !strncmp(spec, "exponential:", 12);
  const char *p = spec + (cos ? 7 : 12);
  char *end = NULL;
  long long steps = cos || ex ? strtoll(p, &end, 10) : 0;
  double v = cos ? 0.0 : NAN;
  if (end && end != p && *end == ':') {
    const char *q = end + 1;
    v = strtod(q, &end);
    if (end == q) end = NULL;
  }
  int stair = ex && end && !strcmp(end, ":staircase");
  if (stair) end += strlen(end);
  if (!end || *end || (!cos && !ex) || steps < 1 || !isfinite(v))
    return sm_status_new(SM_INVALID_ARGUMENT, "learning-rate schedule \"%.80s\": expected exponential:DECAY_STEPS:DECAY_RATE[:staircase] "
                         "or cosine:DECAY_STEPS[:ALPHA]", spec);
  sm_optimizer t = *o;
  t.schedule = cos ? SM_LR_COSINE : SM_LR_EXPONENTIAL;
  t.decay_steps = steps;
  if (cos) t.alpha = (float)v;
  else t.decay_rate = (float)v;
  t.staircase = stair;
  sm_status *st = sm__check_optimizer(&t);
  if (st) return sm_status_prefix(st, "learning-rate schedule \"%.80s\"", spec);
  *o = t;
  return NULL;
}

/* ---- steps ------------------------------------------------------------------------------------- */
static void upd_init(upd *u, const sm_optimizer *o, int64_t iterations) {
  u->kind = o->kind;
  u->nesterov = o->nesterov;
  u->centered = o->centered;
  u->lr = sm__opt_learning_rate(o, iterations);
  u->mom = o->momentum;
  u->wd = o->weight_decay;
  u->rho = o->rho;
  u->omrho = (float)(1.0 - shortest_decimal(o->rho));
  u->eps = (float)shortest_decimal(o->epsilon);
  if (o->kind == SM_OPT_ADAM || o->kind == SM_OPT_ADAMW) {
    float t = (float)(iterations + 1);
    float b1p = powf(o->beta_1, t), b2p = powf(o->beta_2, t);
    u->alpha = u->lr * sqrtf(1.0f - b2p) / (1.0f - b1p);
    u->omb1 = (float)(1.0 - shortest_decimal(o->beta_1));
    u->omb2 = (float)(1.0 - shortest_decimal(o->beta_2));
    u->eps = (float)shortest_decimal(o->epsilon);
  }
}

void sm__opt_factors_get(const sm_optimizer *o, int64_t iterations, sm__opt_factors *f) {
  upd u;
  memset(&u, 0, sizeof u);
  upd_init(&u, o, iterations);
  f->kind = u.kind, f->nesterov = u.nesterov, f->centered = u.centered;
  f->lr = u.lr, f->mom = u.mom, f->alpha = u.alpha, f->omb1 = u.omb1, f->omb2 = u.omb2, f->eps = u.eps;
  f->wd = u.wd, f->rho = u.rho, f->omrho = u.omrho;
}

void sm__apply_update(const sm_optimizer *o, int64_t iterations, float *w, const float *g, float *s0, float *s1,
                      int64_t n) {
  upd u;
  upd_init(&u, o, iterations);
  u.w = w, u.g = g, u.s0 = s0, u.s1 = s1, u.s2 = NULL, u.g2 = NULL;
  upd_range(&u, 0, n);
}

void sm__optimizer_step_range(sm_seq *m, int64_t lo, int64_t hi, const float *add) {
  sm__train *tr = m->priv;
  upd u;
  memset(&u, 0, sizeof u);
  upd_init(&u, &m->opt, m->iterations);
  int64_t off = 0; /* the flat index of the tensor's first element: layers in order, kernel then bias */
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    if (!L->kernel) continue;
    for (int which = 0; which < 2; which++) {
      sm_tensor *w = which ? L->bias : L->kernel;
      int64_t n = sm_tensor_num_elements(w), b = lo > off ? lo - off : 0, e = hi - off < n ? hi - off : n;
      off += n;
      /* weights Keras does not have (use_bias=False, batch norm without scale / center) stay put */
      if (b >= e || (which ? L->no_bias || (L->kind == SM_LAYER_BATCHNORM && !L->center)
                           : L->kind == SM_LAYER_BATCHNORM && !L->use_scale))
        continue;
      sm_tensor **slot = which ? L->bias_slot : L->kernel_slot;
      u.w = (float *)sm_tensor_data(w) + b;
      u.g = (which ? tr->gb[i] : tr->gk[i]) + b;
      u.s0 = slot[0] ? (float *)sm_tensor_data(slot[0]) + b : NULL;
      u.s1 = slot[1] ? (float *)sm_tensor_data(slot[1]) + b : NULL;
      u.s2 = slot[2] ? (float *)sm_tensor_data(slot[2]) + b : NULL;
      u.g2 = add ? add + (off - n + b - lo) : NULL;
      sm__parallel_for(tr->pool, e - b, 16384, add ? upd_sum_range : upd_range, &u);
    }
  }
}

void sm__optimizer_step_part(sm_seq *m, int64_t lo, int64_t hi, const float *add) {
  sm__optimizer_step_range(m, lo, hi, add);
  m->iterations++;
}

void sm__optimizer_step(sm_seq *m) { sm__optimizer_step_part(m, 0, INT64_MAX, NULL); }
