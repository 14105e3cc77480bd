/* random.c - the random kernel family: TensorFlow's Philox-4x32-10 generator, its distributions,
 * and the ops over them, bit-exact with TF's CPU kernels.
 *
 * Stateless: StatelessRandom{Uniform,Normal,UniformInt,UniformFullInt}, StatelessTruncatedNormal
 * (seed -> key and counter as TF's GenerateKey), their V2 forms over (key, counter, alg),
 * StatelessRandomGetKeyCounter / GetKeyCounterAlg / GetAlg, StatelessRandomGammaV2/V3,
 * StatelessRandomPoisson, StatelessMultinomial, StatelessShuffle and StatelessParameterizedTruncatedNormal. Stateful: ParameterizedTruncatedNormal, RandomUniform,
 * RandomStandardNormal, TruncatedNormal, RandomUniformInt, RandomGamma, RandomPoissonV2,
 * Multinomial and RandomShuffle, whose generator is TF's PhiloxRandom(seed, seed2) and advances on
 * every run by what TF's GuardedPhiloxRandom reserves (256 Philox calls per output element for
 * most), so a node seeded with (seed, seed2) not both 0 gives TF's values on every run of a
 * session. With both 0 TF seeds from the clock; here the seed is a hash of the node name, so a
 * node gives the same values in every process.
 *
 * The stream (tensorflow/core/lib/random/random_distributions.h, kernels/random_op_cpu.h): each
 * Philox call gives 4 uint32. Uniform float/half/bfloat16 and Box-Muller float use one uint32 per
 * element (Box-Muller in pairs); double and 64-bit integers two. Truncated normal is drawn in
 * groups of 4 (float) or 2 (double) elements; group g starts 256 * 4 / 4 * g Philox calls (128 * g for
 * double) into the stream and rejects |x| >= 2 from a single-sample adapter. Normal uses logf,
 * sqrtf and sincosf (log, sqrt, sincos for double) exactly as TF does, so values are bit-exact
 * with a TF linked to the same libm. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sincos, sincosf */
#endif
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "ops/philox.h"
#include "runtime/kernel.h"

/* ---- Philox-4x32-10 (ops/philox.h) ------------------------------------------------------- */

/* ---- distributions -------------------------------------------------------------------------- */

enum { D_UNIFORM = SM_RNG_UNIFORM, D_NORMAL = SM_RNG_NORMAL, D_TRUNCATED = SM_RNG_TRUNCATED, D_INT = SM_RNG_INT, D_FULLINT = SM_RNG_FULLINT };

static float u32_to_float(uint32_t x) { return sm__f32_from_bits(0x3f800000u | (x & 0x7fffffu)) - 1.0f; }
static void box_muller_f(uint32_t x0, uint32_t x1, float *f0, float *f1) {
  float u1 = u32_to_float(x0);
  if (u1 < 1.0e-7f) u1 = 1.0e-7f;
  const float v1 = (float)(2.0f * M_PI * u32_to_float(x1)); /* in double, as TF's 2.0f * M_PI */
  const float u2 = sqrtf(-2.0f * logf(u1));
  sincosf(v1, f0, f1);
  *f0 *= u2;
  *f1 *= u2;
}
static void box_muller_d(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double *d0, double *d1) {
  double u1 = u64_to_double(x0, x1);
  if (u1 < 1.0e-7) u1 = 1.0e-7;
  const double v1 = 2 * M_PI * u64_to_double(x2, x3);
  const double u2 = sqrt(-2.0 * log(u1));
  sincos(v1, d0, d1);
  *d0 *= u2;
  *d1 *= u2;
}

typedef struct rjob {
  int dist, dtype;
  philox base;
  int64_t n, group; /* elements, elements per group */
  uint64_t lo, range; /* D_INT: minval and maxval - minval, as unsigned */
  void *out;
} rjob;

static int is_wide(int dtype) { return dtype == SM_DOUBLE || dtype == SM_INT64 || dtype == SM_UINT64; }

/* The elements of group g into f (float-like dtypes), d (double) or u (integers). */
static void draw_group(const rjob *j, int64_t g, float *f, double *d, uint64_t *u) {
  philox gen = j->base;
  uint32_t s[4];
  if (j->dist == D_TRUNCATED) {
    philox_skip(&gen, (uint64_t)g * (uint64_t)j->group * 256 / 4);
    single ss = {&gen, {0}, 4};
    for (int k = 0; k < j->group;) {
      if (j->dtype == SM_DOUBLE) {
        uint32_t x0 = single_next(&ss), x1 = single_next(&ss), x2 = single_next(&ss), x3 = single_next(&ss);
        double a[2];
        box_muller_d(x0, x1, x2, x3, &a[0], &a[1]);
        for (int i = 0; i < 2 && k < j->group; i++)
          if (fabs(a[i]) < 2.0) d[k++] = a[i];
      } else {
        uint32_t x0 = single_next(&ss), x1 = single_next(&ss);
        float a[2];
        box_muller_f(x0, x1, &a[0], &a[1]);
        for (int i = 0; i < 2 && k < j->group; i++)
          if (fabsf(a[i]) < 2.0f) f[k++] = a[i];
      }
    }
    return;
  }
  philox_skip(&gen, (uint64_t)g);
  philox_next(&gen, s);
  int wide = is_wide(j->dtype);
  switch (j->dist) {
    case D_UNIFORM:
      for (int i = 0; i < j->group; i++) {
        if (j->dtype == SM_DOUBLE) d[i] = u64_to_double(s[2 * i], s[2 * i + 1]);
        else if (j->dtype == SM_HALF) f[i] = sm__half_to_f32((uint16_t)(0x3c00u | (s[i] & 0x3ffu))) - 1.0f;
        else if (j->dtype == SM_BFLOAT16) f[i] = sm__bf16_to_f32((uint16_t)(0x3f80u | (s[i] & 0x7fu))) - 1.0f;
        else f[i] = u32_to_float(s[i]);
      }
      break;
    case D_NORMAL:
      if (j->dtype == SM_DOUBLE) box_muller_d(s[0], s[1], s[2], s[3], &d[0], &d[1]);
      else {
        box_muller_f(s[0], s[1], &f[0], &f[1]);
        box_muller_f(s[2], s[3], &f[2], &f[3]);
      }
      break;
    default: /* D_INT, D_FULLINT */
      for (int i = 0; i < j->group; i++) {
        uint64_t bits = wide ? s[2 * i] | (uint64_t)s[2 * i + 1] << 32 : s[i];
        u[i] = j->dist == D_FULLINT ? bits : j->lo + bits % j->range;
      }
      break;
  }
}

static void fill_groups(void *ctx, int64_t g0, int64_t g1) {
  const rjob *j = ctx;
  float f[4];
  double d[4];
  uint64_t u[4];
  for (int64_t g = g0; g < g1; g++) {
    draw_group(j, g, f, d, u);
    int64_t e0 = g * j->group, m = j->n - e0 < j->group ? j->n - e0 : j->group;
    for (int64_t i = 0; i < m; i++) {
      int64_t e = e0 + i;
      switch (j->dtype) {
        case SM_FLOAT: ((float *)j->out)[e] = f[i]; break;
        case SM_DOUBLE: ((double *)j->out)[e] = d[i]; break;
        case SM_HALF: ((uint16_t *)j->out)[e] = sm__f32_to_half(f[i]); break;
        case SM_BFLOAT16: ((uint16_t *)j->out)[e] = sm__f32_to_bf16(f[i]); break;
        case SM_INT32:
        case SM_UINT32: ((uint32_t *)j->out)[e] = (uint32_t)u[i]; break;
        default: ((uint64_t *)j->out)[e] = u[i]; break;
      }
    }
  }
}

/* Fills t (n elements of j->dtype) from generator gen. */
static void fill(sm_kctx *ctx, rjob *j, philox gen, sm_tensor *t) {
  j->base = gen;
  j->n = sm_tensor_num_elements(t);
  j->out = sm_tensor_data(t);
  j->group = is_wide(j->dtype) ? 2 : 4;
  if (j->n == 0) return;
  int64_t groups = (j->n + j->group - 1) / j->group;
  sm__parallel_for(sm__kctx_pool(ctx), groups, j->dist == D_TRUNCATED ? 256 : 4096, fill_groups, j);
}

void sm__random_fill(sm_kctx *ctx, int dist, philox gen, int64_t lo, int64_t hi, sm_tensor *t) {
  rjob j = {dist, sm_tensor_dtype(t), {{0}, {0}}, 0, 0, (uint64_t)lo, (uint64_t)hi - (uint64_t)lo, NULL};
  if (!is_wide(j.dtype)) {
    j.lo = (uint32_t)lo;
    j.range = (uint32_t)hi - (uint32_t)lo;
  }
  fill(ctx, &j, gen, t);
}

/* ---- inputs --------------------------------------------------------------------------------- */

static void shape_text(const sm_tensor *t, char *buf, size_t cap) { sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap); }

int64_t sm__random_int_at(const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_INT32: return ((const int32_t *)d)[i];
    case SM_UINT32: return ((const uint32_t *)d)[i];
    default: return ((const int64_t *)d)[i];
  }
}

/* TF's MakeShape: a vector of int32/int64 dimensions, each >= 0. */
sm_status *sm__random_shape(const sm_tensor *t, int *rank, int64_t dims[SM_MAX_RANK]) {
  char b[64];
  int dt = sm_tensor_dtype(t);
  if (sm_tensor_rank(t) != 1 || (dt != SM_INT32 && dt != SM_INT64)) {
    shape_text(t, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "shape must be a vector of {int32,int64}, got shape %s", b);
  }
  int64_t n = sm_tensor_num_elements(t);
  if (n > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "shape has %lld dimensions, more than %d", (long long)n, SM_MAX_RANK);
  for (int64_t i = 0; i < n; i++) {
    dims[i] = sm__random_int_at(t, i);
    if (dims[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)dims[i]);
  }
  *rank = (int)n;
  return NULL;
}

static sm_status *seed_input(const sm_tensor *seed, philox *out) {
  char b[64];
  int dt = sm_tensor_dtype(seed);
  if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2) {
    shape_text(seed, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", b);
  }
  if (dt != SM_INT32 && dt != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid seed type: %s", sm_dtype_numpy_name(dt));
  *out = philox_from_seeds((uint64_t)sm__random_int_at(seed, 0), (uint64_t)sm__random_int_at(seed, 1));
  return NULL;
}

/* TF's GetKeyCounterAlgFromInputs for Philox (alg 1, or 3: auto-select). */
static sm_status *key_counter_input(sm_kctx *ctx, int first, philox *out) {
  const sm_tensor *key = sm__kctx_input(ctx, first), *ctr = sm__kctx_input(ctx, first + 1),
                  *alg = sm__kctx_input(ctx, first + 2);
  char b[64];
  if (sm_tensor_rank(alg) != 0 || sm_tensor_dtype(alg) != SM_INT32) {
    shape_text(alg, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "alg must be a scalar int32, got shape %s", b);
  }
  int32_t a = *(const int32_t *)sm_tensor_data(alg);
  if (a != 1 && a != 3) return sm_status_new(SM_INVALID_ARGUMENT, "Unsupported algorithm id: %d", a);
  if (sm_tensor_rank(key) != 1 || sm_tensor_dims(key)[0] != 1) {
    shape_text(key, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "key must have shape [1], not %s. (Note that batched keys are not supported yet.)", b);
  }
  if (sm_tensor_rank(ctr) != 1 || sm_tensor_dims(ctr)[0] < 2) {
    shape_text(ctr, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "counter must be a vector with length at least 2; got shape: %s. (Note that batched counters "
                         "are not supported yet.)", b);
  }
  if (sm_tensor_dtype(key) != SM_UINT64 || sm_tensor_dtype(ctr) != SM_UINT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "key and counter must be uint64");
  uint64_t k = *(const uint64_t *)sm_tensor_data(key);
  const uint64_t *c = sm_tensor_data(ctr);
  philox p = {{(uint32_t)c[0], (uint32_t)(c[0] >> 32), (uint32_t)c[1], (uint32_t)(c[1] >> 32)}, {(uint32_t)k, (uint32_t)(k >> 32)}};
  *out = p;
  return NULL;
}

/* minval / maxval (inputs i, i+1, scalars checked before): minval < maxval, once there is output. */
static sm_status *int_range(sm_kctx *ctx, int i, rjob *j) {
  int64_t l = sm__random_int_at(sm__kctx_input(ctx, i), 0), h = sm__random_int_at(sm__kctx_input(ctx, i + 1), 0);
  if (l >= h) return sm_status_new(SM_INVALID_ARGUMENT, "Need minval < maxval, got %lld >= %lld", (long long)l, (long long)h);
  j->lo = (uint64_t)l;
  j->range = (uint64_t)h - (uint64_t)l;
  if (!is_wide(j->dtype)) {
    j->lo = (uint32_t)l;
    j->range = (uint32_t)h - (uint32_t)l;
  }
  return NULL;
}

/* The stateful ops' generator: TF's PhiloxRandom(seed, seed2); both 0 (TF: the clock) gives one
 * hashed from the node name, so a node draws the same in every process. */
sm_status *sm__random_node_gen(const sm_node *node, philox *gen, _Atomic uint64_t **used) {
  int64_t seed = 0, seed2 = 0;
  sm_status *st = NULL;
  if (sm__node_attr(node, "seed")) st = sm__node_attr_int(node, "seed", &seed);
  if (!st && sm__node_attr(node, "seed2")) st = sm__node_attr_int(node, "seed2", &seed2);
  if (st) return st;
  if (!seed && !seed2) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = sm__node_name(node); *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    seed = (int64_t)h;
    seed2 = (int64_t)(h * 0x9e3779b97f4a7c15ull);
  }
  *gen = philox_seeded((uint64_t)seed, (uint64_t)seed2);
  if (!(*used = calloc(1, sizeof **used))) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

void sm__random_gen_release(void *p) {
  sm__random_gen_state *s = p;
  if (s) free((void *)s->used);
  free(s);
}

sm_status *sm__random_gen_prepare(const sm_node *node, void **state) {
  sm__random_gen_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  sm_status *st = sm__random_node_gen(node, &s->gen, &s->used);
  if (st) {
    sm__random_gen_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* ---- kernels -------------------------------------------------------------------------------- */

enum { K_STATELESS, K_V2, K_STATEFUL };

typedef struct rstate {
  int kind, dist, dtype;
  philox gen;                /* K_STATEFUL: the generator before any run */
  _Atomic uint64_t *used;    /* K_STATEFUL: Philox calls reserved by earlier runs */
} rstate;

static const struct {
  const char *op;
  int kind, dist;
  const char *dtype_attr;
} rops[] = {
    {"StatelessRandomUniform", K_STATELESS, D_UNIFORM, "dtype"},
    {"StatelessRandomNormal", K_STATELESS, D_NORMAL, "dtype"},
    {"StatelessTruncatedNormal", K_STATELESS, D_TRUNCATED, "dtype"},
    {"StatelessRandomUniformInt", K_STATELESS, D_INT, "dtype"},
    {"StatelessRandomUniformFullInt", K_STATELESS, D_FULLINT, "dtype"},
    {"StatelessRandomUniformV2", K_V2, D_UNIFORM, "dtype"},
    {"StatelessRandomNormalV2", K_V2, D_NORMAL, "dtype"},
    {"StatelessTruncatedNormalV2", K_V2, D_TRUNCATED, "dtype"},
    {"StatelessRandomUniformIntV2", K_V2, D_INT, "dtype"},
    {"StatelessRandomUniformFullIntV2", K_V2, D_FULLINT, "dtype"},
    {"RandomUniform", K_STATEFUL, D_UNIFORM, "dtype"},
    {"RandomStandardNormal", K_STATEFUL, D_NORMAL, "dtype"},
    {"TruncatedNormal", K_STATEFUL, D_TRUNCATED, "dtype"},
    {"RandomUniformInt", K_STATEFUL, D_INT, "Tout"},
};

static void rand_release(void *p) {
  rstate *s = p;
  if (s) free((void *)s->used);
  free(s);
}

static sm_status *rand_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  size_t k = 0;
  while (k < sizeof rops / sizeof *rops && strcmp(rops[k].op, op)) k++;
  if (k == sizeof rops / sizeof *rops) return sm_status_new(SM_INTERNAL, "%s is not a random op", op);
  rstate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->kind = rops[k].kind;
  s->dist = rops[k].dist;
  sm_status *st = sm__node_attr_type(node, rops[k].dtype_attr, &s->dtype);
  int dt = s->dtype, intd = s->dist == D_INT || s->dist == D_FULLINT;
  int ok = intd ? dt == SM_INT32 || dt == SM_INT64 || (s->dist == D_FULLINT && (dt == SM_UINT32 || dt == SM_UINT64))
                : dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16;
  if (!st && !ok)
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s of dtype %s is not supported", op, sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  if (!st && s->kind == K_STATEFUL) st = sm__random_node_gen(node, &s->gen, &s->used);
  if (st) {
    rand_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *rand_compute(const void *state, sm_kctx *ctx) {
  const rstate *s = state;
  int rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *st = sm__random_shape(sm__kctx_input(ctx, 0), &rank, dims);
  philox gen = {{0}, {0}};
  int range_in = s->kind == K_STATELESS ? 2 : s->kind == K_V2 ? 4 : 1;
  if (!st && s->kind == K_STATELESS) {
    const sm_tensor *seed = sm__kctx_input(ctx, 1);
    char b[64];
    if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2) {
      shape_text(seed, b, sizeof b);
      st = sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", b);
    }
  }
  if (!st && s->kind == K_V2) st = key_counter_input(ctx, 1, &gen);
  rjob j = {s->dist, s->dtype, {{0}, {0}}, 0, 0, 0, 1, NULL};
  if (!st && s->dist == D_INT) {
    const sm_tensor *lo = sm__kctx_input(ctx, range_in), *hi = sm__kctx_input(ctx, range_in + 1);
    char b[64];
    for (int k = 0; !st && k < 2; k++)
      if (sm_tensor_rank(k ? hi : lo) != 0) {
        shape_text(k ? hi : lo, b, sizeof b);
        st = sm_status_new(SM_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", k ? "maxval" : "minval", b);
      } else if (sm_tensor_dtype(k ? hi : lo) != s->dtype) {
        st = sm_status_new(SM_INVALID_ARGUMENT, "minval and maxval must be %s", sm_dtype_name(s->dtype));
      }
  }
  sm_tensor *out = NULL;
  if (!st) st = sm__kctx_alloc_output_uninit(ctx, 0, s->dtype, rank, dims, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  if (s->dist == D_INT && (st = int_range(ctx, range_in, &j))) return st;
  if (s->kind == K_STATELESS && (st = seed_input(sm__kctx_input(ctx, 1), &gen))) return st;
  if (s->kind == K_STATEFUL) {
    uint64_t n = (uint64_t)sm_tensor_num_elements(out) * 256;
    gen = s->gen;
    philox_skip(&gen, atomic_fetch_add(s->used, n));
  }
  fill(ctx, &j, gen, out);
  return NULL;
}

/* ---- Gamma and Poisson ---------------------------------------------------------------------
 * StatelessRandomGammaV2 (shape, seed, alpha), StatelessRandomGammaV3 (shape, key, counter, alg,
 * alpha) and the stateful RandomGamma (shape, alpha; seed, seed2): TF's Marsaglia-Tsang
 * transformation-rejection (stateless_random_gamma_op.cc, random_op.cc), in double. Output element
 * e = sample * num_alphas + a draws from the generator skipped 256 * e Philox calls, so values do not
 * depend on how the work is split; normals and uniforms (two doubles a Philox call each) are taken
 * last-first from their buffers, as TF's SampleBuffer does. alpha == 1 is an exponential
 * (-log1p(-u)); alpha < 1 boosts d by one and scales by u^(1/alpha). The stateless ops need `shape`
 * to end with alpha's shape; RandomGamma's output is shape + alpha's shape. StatelessRandomPoisson
 * (shape, seed, lam), RandomPoissonV2 (shape, rate; seed, seed2) and the older RandomPoisson (rate
 * of the output's dtype) draw the same way, one
 * sample per 256 Philox calls, from TF's PoissonFunctor (uniform doubles, last-first). */
typedef struct gjob {
  philox base;
  const double *alpha; /* alpha or rate, per parameter */
  int64_t num_alphas, per_alpha;
  int dtype, poisson;
  double highest; /* Poisson: the output dtype's largest value */
  void *out;
} gjob;

static void gamma_store(const gjob *j, int64_t e, double v) {
  switch (j->dtype) {
    case SM_DOUBLE: ((double *)j->out)[e] = v; break;
    case SM_HALF: ((uint16_t *)j->out)[e] = sm__f32_to_half((float)v); break;
    /* a Poisson count in [0, highest]; NaN / inf (an inf rate) as 0 / the maximum, never UB */
    case SM_INT32: ((int32_t *)j->out)[e] = !(v >= 0) ? 0 : v < 2147483647.0 ? (int32_t)v : INT32_MAX; break;
    case SM_INT64: ((int64_t *)j->out)[e] = !(v >= 0) ? 0 : v < 9.2233720368547758e18 ? (int64_t)v : INT64_MAX; break;
    default: ((float *)j->out)[e] = (float)v; break;
  }
}

static double next_normal(philox *g, dbuf *b) {
  if (!b->left) {
    uint32_t s[4];
    philox_next(g, s);
    box_muller_d(s[0], s[1], s[2], s[3], &b->v[0], &b->v[1]);
    b->left = 2;
  }
  return b->v[--b->left];
}

/* TF's PoissonFunctor in double: Knuth's product of uniforms below rate 10, Hormann's transformed
 * rejection above. TF retries forever; a rate no draw satisfies (NaN, inf) gives NaN (0 for an
 * integer output) after 1024 tries here. */
static double poisson_draw(const gjob *j, philox *gen, double rate) {
  dbuf ub = {{0, 0}, 0};
  if (rate < 10) {
    const double limit = exp(-rate);
    double prod = 1, x = 0;
    for (;;) {
      prod = prod * next_uniform(gen, &ub);
      if (prod <= limit && x <= j->highest) return x;
      x += 1;
    }
  }
  const double log_rate = log(rate), b = 0.931 + 2.53 * sqrt(rate), a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  for (int tries = 0; tries < 1024; tries++) {
    double u = next_uniform(gen, &ub);
    u -= 0.5;
    const double v = next_uniform(gen, &ub), us = 0.5 - fabs(u);
    const double k = floor((2 * a / us + b) * u + rate + 0.43);
    if (k > j->highest) continue;
    if (us >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2)) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    const double sv = log(v * inv_alpha / (a / (us * us) + b)), t = -rate + k * log_rate - lgamma(k + 1);
    if (sv <= t) return k;
  }
  return j->dtype == SM_INT32 || j->dtype == SM_INT64 ? 0 : NAN;
}

static void gamma_fill(void *ctx, int64_t e0, int64_t e1) {
  const gjob *j = ctx;
  for (int64_t out_idx = e0; out_idx < e1; out_idx++) {
    /* TF walks alphas outer, samples inner: output_idx = alpha_idx * per_alpha + sample_idx */
    const int64_t a = out_idx / j->per_alpha, smp = out_idx % j->per_alpha;
    const double alpha = j->alpha[a];
    philox gen = j->base;
    philox_skip(&gen, (uint64_t)out_idx * 256);
    dbuf nb = {{0, 0}, 0}, ub = {{0, 0}, 0};
    double res;
    if (j->poisson) {
      res = poisson_draw(j, &gen, alpha);
    } else if (alpha == 1.0) {
      res = -log1p(-next_uniform(&gen, &ub));
    } else {
      const int lt1 = alpha < 1;
      const double d = alpha + (lt1 ? 2.0 / 3 : -1.0 / 3), c = 1.0 / 3 / sqrt(d);
      /* TF loops until a draw is accepted (95%+ each); a NaN alpha never is: give NaN after
       * as many tries as TF's 256 reserved calls a sample could hold */
      res = NAN;
      for (int tries = 0; tries < 128; tries++) {
        const double x = next_normal(&gen, &nb);
        double v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        const double u = next_uniform(&gen, &ub);
        if ((u < 1 - 0.0331 * (x * x) * (x * x)) || (log(u) < 0.5 * x * x + d * (1 - v + log(v)))) {
          res = d * v;
          if (lt1) res *= pow(next_uniform(&gen, &ub), 1 / alpha);
          break;
        }
      }
    }
    gamma_store(j, smp * j->num_alphas + a, res);
  }
}

typedef struct gstate {
  int kind, poisson, dtype, pdtype; /* output and parameter dtypes */
  philox gen;             /* RandomGamma: the generator before any run */
  _Atomic uint64_t *used; /* RandomGamma: Philox calls reserved by earlier runs */
} gstate;

static void gamma_release(void *p) {
  gstate *s = p;
  if (s) free((void *)s->used);
  free(s);
}

static sm_status *gamma_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  gstate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->poisson = strstr(op, "Poisson") != NULL;
  s->kind = !strcmp(op, "StatelessRandomGammaV2") || !strcmp(op, "StatelessRandomPoisson") ? K_STATELESS
            : !strcmp(op, "StatelessRandomGammaV3")                                         ? K_V2
                                                                                            : K_STATEFUL;
  const char *oattr = s->kind == K_STATEFUL && !s->poisson ? "T" : "dtype";
  sm_status *st = sm__node_attr_type(node, oattr, &s->dtype);
  s->pdtype = s->dtype;
  /* RandomPoisson (V1): the rate's dtype is the output's */
  if (!st && s->poisson && strcmp(op, "RandomPoisson"))
    st = sm__node_attr_type(node, s->kind == K_STATEFUL ? "R" : "Rtype", &s->pdtype);
  for (int k = 0; !st && k < 2; k++) {
    const int dt = k ? s->pdtype : s->dtype;
    if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF && (!s->poisson || (dt != SM_INT32 && dt != SM_INT64)))
      st = sm_status_new(SM_INVALID_ARGUMENT, "Value for attr '%s' of %s is not in the list of allowed values: half, float, double%s",
                         k ? (s->kind == K_STATEFUL ? "R" : "Rtype") : oattr, sm_dtype_numpy_name(dt),
                         s->poisson ? ", int32, int64" : "");
  }
  if (!st && s->kind == K_STATEFUL) st = sm__random_node_gen(node, &s->gen, &s->used);
  if (st) {
    gamma_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

static double real_at(const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_DOUBLE: return ((const double *)d)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)d)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)d)[i]);
    case SM_INT32: return ((const int32_t *)d)[i];
    case SM_INT64: return (double)((const int64_t *)d)[i];
    default: return ((const float *)d)[i];
  }
}

static sm_status *gamma_compute(const void *state, sm_kctx *ctx) {
  const gstate *s = state;
  int rank;
  int64_t dims[SM_MAX_RANK];
  char b[64];
  sm_status *st = sm__random_shape(sm__kctx_input(ctx, 0), &rank, dims);
  if (st) return st;
  const sm_tensor *alpha = sm__kctx_input(ctx, s->kind == K_STATELESS ? 2 : s->kind == K_V2 ? 4 : 1);
  const int ar = sm_tensor_rank(alpha);
  const int64_t *ad = sm_tensor_dims(alpha);
  const char *pname = s->poisson ? "rate" : "alpha";
  if (sm_tensor_dtype(alpha) != s->pdtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be %s, not %s", pname, sm_dtype_name(s->pdtype),
                         sm_dtype_name(sm_tensor_dtype(alpha)));
  philox gen = {{0}, {0}};
  if (s->kind == K_STATEFUL) {
    if (rank + ar > SM_MAX_RANK)
      return sm_status_new(SM_INVALID_ARGUMENT, "shape + %s's shape has more than %d dimensions", pname, SM_MAX_RANK);
    for (int i = 0; i < ar; i++) dims[rank + i] = ad[i];
    rank += ar;
  } else {
    if (s->kind == K_STATELESS) {
      const sm_tensor *seed = sm__kctx_input(ctx, 1);
      if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2) {
        shape_text(seed, b, sizeof b);
        return sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", b);
      }
    } else if ((st = key_counter_input(ctx, 1, &gen))) {
      return st;
    }
  }
  sm_tensor *out = NULL;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, s->dtype, rank, dims, &out))) return st;
  const int64_t n = sm_tensor_num_elements(out), na = sm_tensor_num_elements(alpha);
  if (n == 0) return NULL;
  if (s->kind == K_STATELESS && (st = seed_input(sm__kctx_input(ctx, 1), &gen))) return st;
  if (s->kind != K_STATEFUL) {
    int ends = ar <= rank;
    for (int i = 1; ends && i <= ar; i++) ends = dims[rank - i] == ad[ar - i];
    if (!ends) return sm_status_new(SM_INVALID_ARGUMENT, "Shape passed in must end with broadcasted shape.");
  }
  if (na <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input alpha should have non-zero element count, got: %lld", (long long)na);
  double *al = sm__kctx_scratch(ctx, (size_t)na * sizeof *al, &st);
  if (!al) return st;
  for (int64_t i = 0; i < na; i++) al[i] = real_at(alpha, i);
  if (s->kind == K_STATEFUL) {
    gen = s->gen;
    philox_skip(&gen, atomic_fetch_add(s->used, (uint64_t)n * 256));
  }
  const double highest = s->dtype == SM_HALF ? 65504.0 : s->dtype == SM_INT32 ? 2147483647.0
                         : s->dtype == SM_INT64 ? 9.2233720368547758e18 : s->dtype == SM_FLOAT ? FLT_MAX : DBL_MAX;
  gjob j = {gen, al, na, n / na, s->dtype, s->poisson, highest, sm_tensor_data(out)};
  sm__parallel_for(sm__kctx_pool(ctx), n, 256, gamma_fill, &j);
  return NULL;
}

/* ---- Multinomial ---------------------------------------------------------------------------
 * StatelessMultinomial (logits, num_samples, seed) and Multinomial (logits, num_samples; seed,
 * seed2): TF's CPU MultinomialFunctor. Per row: the unnormalised CDF of exp(logit - max finite
 * logit) over the finite logits, then per sample the first class whose CDF exceeds RandDouble()
 * times the total (upper_bound). The doubles come two uint32 each, in order, from one Philox
 * stream over the rows; TF restarts that stream at row r * (num_samples + 3) / 4 Philox calls where
 * its thread pool cuts the batch (only when the work is large), so this, like a TF run that does
 * not split the batch (total cost under 20000: 50 * (samples * log2(classes) + classes) a row),
 * draws the rows one after another. */
typedef struct mstate {
  int stateful, out_dtype;
  philox gen;
  _Atomic uint64_t *used;
} mstate;

static void multinomial_release(void *p) {
  mstate *s = p;
  if (s) free((void *)s->used);
  free(s);
}

static sm_status *multinomial_prepare(const sm_node *node, void **state) {
  mstate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->stateful = !strcmp(sm__node_op(node), "Multinomial");
  s->out_dtype = SM_INT64;
  sm_status *st = NULL;
  if (sm__node_attr(node, "output_dtype")) st = sm__node_attr_type(node, "output_dtype", &s->out_dtype);
  if (!st && s->out_dtype != SM_INT32 && s->out_dtype != SM_INT64)
    st = sm_status_new(SM_INVALID_ARGUMENT, "output_dtype must be int32 or int64, not %s", sm_dtype_numpy_name(s->out_dtype));
  if (!st && s->stateful) st = sm__random_node_gen(node, &s->gen, &s->used);
  if (st) {
    multinomial_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *multinomial_compute(const void *state, sm_kctx *ctx) {
  const mstate *s = state;
  const sm_tensor *logits = sm__kctx_input(ctx, 0), *ns = sm__kctx_input(ctx, 1);
  char b[64];
  const int ldt = sm_tensor_dtype(logits);
  if (sm_tensor_rank(logits) != 2) {
    shape_text(logits, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "logits should be a matrix, got shape %s", b);
  }
  if (ldt != SM_FLOAT && ldt != SM_DOUBLE && ldt != SM_HALF && ldt != SM_BFLOAT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "logits of %s are not supported", sm_dtype_name(ldt));
  if (sm_tensor_rank(ns) != 0 || sm_tensor_dtype(ns) != SM_INT32) {
    shape_text(ns, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "num_samples should be a scalar, got shape %s", b);
  }
  philox gen = {{0}, {0}};
  if (!s->stateful) {
    const sm_tensor *seed = sm__kctx_input(ctx, 2);
    if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2) {
      shape_text(seed, b, sizeof b);
      return sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", b);
    }
  }
  const int32_t nsamp = *(const int32_t *)sm_tensor_data(ns);
  if (nsamp < 0) return sm_status_new(SM_INVALID_ARGUMENT, "num_samples should be non-negative, got %d", nsamp);
  const int64_t rows = sm_tensor_dims(logits)[0], classes = sm_tensor_dims(logits)[1];
  if (rows > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "batch_size cannot exceed max int");
  if (classes > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "num_classes cannot exceed max int");
  if (classes <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "num_classes should be positive, got %lld", (long long)classes);
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, s->out_dtype, 2, (int64_t[]){rows, nsamp}, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  if (!s->stateful && (st = seed_input(sm__kctx_input(ctx, 2), &gen))) return st;
  if (s->stateful) {
    const uint64_t ceil4 = ((uint64_t)nsamp + 3) / 4 * 4 * 2;
    gen = s->gen;
    philox_skip(&gen, atomic_fetch_add(s->used, (uint64_t)rows * ceil4 * 256));
  }
  double *cdf = sm__kctx_scratch(ctx, (size_t)classes * sizeof *cdf, &st), *lg = cdf ? sm__kctx_scratch(ctx, (size_t)classes * sizeof *lg, &st) : NULL;
  if (!lg) return st;
  single ss = {&gen, {0}, 4};
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < classes; c++) lg[c] = ldt == SM_DOUBLE ? ((const double *)sm_tensor_data(logits))[r * classes + c] :
                                                  real_at(logits, r * classes + c);
    double mx = ldt == SM_DOUBLE ? -DBL_MAX : ldt == SM_FLOAT ? -FLT_MAX : ldt == SM_HALF ? -65504.0 : -3.38953139e38;
    for (int64_t c = 0; c < classes; c++)
      if (isfinite(lg[c]) && mx < lg[c]) mx = lg[c];
    double total = 0;
    for (int64_t c = 0; c < classes; c++) {
      const double e = exp(lg[c] - mx);
      if (isfinite(lg[c])) total += e;
      cdf[c] = total;
    }
    for (int32_t k = 0; k < nsamp; k++) {
      const uint32_t x0 = single_next(&ss), x1 = single_next(&ss);
      const double find = u64_to_double(x0, x1) * total;
      int64_t lo = 0, hi = classes; /* upper_bound: the first cdf[i] > find */
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (find < cdf[mid]) hi = mid;
        else lo = mid + 1;
      }
      if (s->out_dtype == SM_INT32) ((int32_t *)sm_tensor_data(out))[r * nsamp + k] = (int32_t)lo;
      else ((int64_t *)sm_tensor_data(out))[r * nsamp + k] = lo;
    }
  }
  return NULL;
}

/* ---- Shuffle ---------------------------------------------------------------------------------
 * StatelessShuffle (value, key, counter, alg) and RandomShuffle (value; seed, seed2): TF's
 * shuffle_common.h. The first dimension is permuted by a Fisher-Yates pass taking one uint32 per
 * step (i + u % (n - i), in order from the Philox stream); a value of at most one element or one
 * row passes through. RandomShuffle reserves (n - 1 + 3) / 4 Philox calls a run. Any dtype. */
static sm_status *shuffle_prepare(const sm_node *node, void **state) {
  mstate *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->stateful = !strcmp(sm__node_op(node), "RandomShuffle");
  sm_status *st = s->stateful ? sm__random_node_gen(node, &s->gen, &s->used) : NULL;
  if (st) {
    multinomial_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *shuffle_compute(const void *state, sm_kctx *ctx) {
  const mstate *s = state;
  const sm_tensor *v = sm__kctx_input(ctx, 0);
  philox gen = {{0}, {0}};
  sm_status *st = s->stateful ? NULL : key_counter_input(ctx, 1, &gen);
  if (st) return st;
  const int64_t n = sm_tensor_num_elements(v), rows = sm_tensor_rank(v) ? sm_tensor_dims(v)[0] : 1;
  if (n <= 1 || rows <= 1) {
    sm__kctx_forward(ctx, 0, 0);
    return NULL;
  }
  if (s->stateful) {
    gen = s->gen;
    philox_skip(&gen, atomic_fetch_add(s->used, ((uint64_t)rows - 1 + 3) / 4));
  }
  int64_t *perm = sm__kctx_scratch(ctx, (size_t)rows * sizeof *perm, &st);
  if (!perm) return st;
  for (int64_t i = 0; i < rows; i++) perm[i] = i;
  single ss = {&gen, {0}, 4};
  for (int64_t i = 0; i < rows - 1; i++) {
    const int64_t j = i + (int64_t)(single_next(&ss) % (uint32_t)(rows - i)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  const int dt = sm_tensor_dtype(v);
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, sm_tensor_rank(v), sm_tensor_dims(v), &out))) return st;
  const int64_t per_row = n / rows;
  if (dt == SM_STRING) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t k = 0; k < per_row; k++) {
        size_t len;
        const char *p = sm_tensor_string(v, perm[i] * per_row + k, &len);
        if ((st = sm_tensor_set_string(out, i * per_row + k, p, len))) return st;
      }
    return NULL;
  }
  const size_t row_bytes = (size_t)per_row * sm_dtype_size(dt);
  if (!row_bytes) return sm_status_new(SM_UNIMPLEMENTED, "shuffling %s tensors is not supported", sm_dtype_name(dt));
  for (int64_t i = 0; i < rows; i++)
    memcpy((char *)sm_tensor_data(out) + (size_t)i * row_bytes, (const char *)sm_tensor_data(v) + (size_t)perm[i] * row_bytes,
           row_bytes);
  return NULL;
}

/* StatelessRandomGetKeyCounter(Alg): the key and counter GenerateKey makes of a seed; GetAlg: Philox. */
static sm_status *key_counter_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int nout = sm__kctx_num_outputs(ctx);
  sm_tensor *key = NULL, *ctr = NULL, *alg = NULL;
  sm_status *st = NULL;
  if (nout >= 2) {
    philox p;
    if ((st = seed_input(sm__kctx_input(ctx, 0), &p))) return st;
    if ((st = sm__kctx_alloc_output(ctx, 0, SM_UINT64, 1, (int64_t[]){1}, &key)) ||
        (st = sm__kctx_alloc_output(ctx, 1, SM_UINT64, 1, (int64_t[]){2}, &ctr)))
      return st;
    *(uint64_t *)sm_tensor_data(key) = p.key[0] | (uint64_t)p.key[1] << 32;
    uint64_t *c = sm_tensor_data(ctr);
    c[0] = p.ctr[0] | (uint64_t)p.ctr[1] << 32;
    c[1] = p.ctr[2] | (uint64_t)p.ctr[3] << 32;
  }
  if (nout != 2) {
    if ((st = sm__kctx_alloc_output(ctx, nout - 1, SM_INT32, 0, NULL, &alg))) return st;
    *(int32_t *)sm_tensor_data(alg) = 1; /* RNG_ALG_PHILOX, what TF's CPU picks */
  }
  return NULL;
}

/* ---- StatelessParameterizedTruncatedNormal ------------------------------------------------------- */

/* TF's TruncatedNormalFunctorV2 (parameterized_truncated_normal_op.cc) as one shard runs it: the
 * outputs batch by batch (the parameters broadcast over the trailing dims), each batch by the randn,
 * uniform or exponential rejection sampler its bounds select, from one Philox stream started at the
 * seed's key and counter; T's own arithmetic (expf / logf / sqrtf for float, each step rounded to half
 * for half as Eigen::half computes). TF shards an output
 * whose cost passes Eigen's one-thread threshold (a few hundred elements) and skips the stream at
 * every shard start, so beyond that its draws depend on its thread count (as Multinomial's). */
/* T: the arithmetic type (float for half), ST: the tensors' element type, R: rounds a result to the
 * op's type (Eigen::half rounds every operation: R = half_round), LD / STO: element load / store. */
#define PTN_BODY(T, ST, R, LD, STO, EXP, LOG, SQRT, NORMAL_DRAW, UNIFORM_DRAW, NRES)                                  \
  do {                                                                                                                 \
    ST *out = sm_tensor_data(y);                                                                                       \
    const ST *pm = sm_tensor_data(prm[0]), *ps = sm_tensor_data(prm[1]), *pl = sm_tensor_data(prm[2]),                 \
             *ph = sm_tensor_data(prm[3]);                                                                             \
    T rv[4];                                                                                                           \
    const T k13 = R((T)1.3);                                                                                           \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      int64_t ix[4];                                                                                                   \
      bcast_index(b, brank, bdims, prm, ix);                                                                           \
      T mean = LD(pm[ix[0]]), sd = LD(ps[ix[1]]), lo = LD(pl[ix[2]]), hi = LD(ph[ix[3]]);                              \
      if (!(sd > (T)0 && lo < hi && (isfinite(lo) || isfinite(hi))))                                                   \
        return sm_status_new(SM_INVALID_ARGUMENT, "Invalid parameters");                                               \
      const int64_t klim = total - b * spb < spb ? total - b * spb : spb;                                                     \
      int iters = 0;                                                                                                   \
      if ((isinf(lo) && lo < (T)0) || hi < mean) {                                                                     \
        T t = lo;                                                                                                      \
        lo = hi;                                                                                                       \
        hi = t;                                                                                                        \
        sd = -sd;                                                                                                      \
      }                                                                                                                \
      const T nmin = R(R(lo - mean) / sd), nmax = R(R(hi - mean) / sd);                                                \
      const T sqf = R(SQRT(R(R(nmin * nmin) + (T)4)));                                                                 \
      const T cutoff = R(R((T)2 * R(EXP(R((T)0.5 + R(R(nmin * R(nmin - sqf)) / (T)4))))) / R(nmin + sqf));           \
      const T diff = R(nmax - nmin);                                                                                   \
      int64_t k = 0;                                                                                                   \
      if ((nmin < -k13 && nmax >= (T)0) || (nmax > k13 && nmin <= (T)0)) {                                             \
        while (k < klim) {                                                                                              \
          NORMAL_DRAW;                                                                                                 \
          for (int i = 0; i < NRES; i++) {                                                                             \
            if (rv[i] >= nmin && rv[i] <= nmax) {                                                                      \
              out[b * bstride + k * kstride] = STO(R(R(rv[i] * sd) + mean));                                                          \
              if (++k >= klim) break;                                                                                   \
              iters = 0;                                                                                               \
            } else if (++iters > 1000) {                                                                               \
              return sm_status_new(SM_INTERNAL, "TruncatedNormal randn rejection sampler failed to accept a sample."); \
            }                                                                                                          \
          }                                                                                                            \
        }                                                                                                              \
      } else if (diff < cutoff) {                                                                                      \
        const T plus = nmin < (T)0 ? (T)0 : R(nmin * nmin);                                                            \
        T z[4], g[4], u[4];                                                                                            \
        while (k < klim) {                                                                                              \
          UNIFORM_DRAW;                                                                                                \
          for (int i = 0; i < NRES; i++) {                                                                             \
            z[i] = R(R(rv[i] * diff) + nmin);                                                                          \
            g[i] = R(R(plus - R(z[i] * z[i])) / (T)2.0);                                                               \
          }                                                                                                            \
          UNIFORM_DRAW;                                                                                                \
          memcpy(u, rv, sizeof u);                                                                                     \
          for (int i = 0; i < NRES; i++) {                                                                             \
            int acc = u[i] <= R(EXP(g[i]));                                                                            \
            if (acc || iters + 1 >= 1000) {                                                                            \
              if (!acc)                                                                                                \
                return sm_status_new(SM_INTERNAL, "TruncatedNormal uniform rejection sampler failed to  accept a sample."); \
              out[b * bstride + k * kstride] = STO(R(R(z[i] * sd) + mean));                                                           \
              if (++k >= klim) break;                                                                                   \
              iters = 0;                                                                                               \
            } else {                                                                                                   \
              iters++;                                                                                                 \
            }                                                                                                          \
          }                                                                                                            \
        }                                                                                                              \
      } else {                                                                                                         \
        const T alpha = R(R(nmin + R(SQRT(R(R(nmin * nmin) + (T)4)))) / (T)2);                                        \
        while (k < klim) {                                                                                              \
          UNIFORM_DRAW;                                                                                                \
          for (int i = 0; i < NRES;) {                                                                                 \
            const T zz = R(R(-R(LOG(rv[i])) / alpha) + nmin);                                                          \
            i++;                                                                                                       \
            const T xx = nmin < alpha ? R(alpha - zz) : R(nmin - alpha);                                               \
            const T gg = R(EXP(R(R(-xx * xx) / (T)2.0)));                                                             \
            const T uu = rv[i];                                                                                        \
            i++;                                                                                                       \
            int acc = uu <= gg && zz < nmax;                                                                           \
            if (acc || iters + 1 >= 1000) {                                                                            \
              if (!acc)                                                                                                \
                return sm_status_new(SM_INTERNAL, "TruncatedNormal exponential distribution rejection sampler failed to accept a sample."); \
              out[b * bstride + k * kstride] = STO(R(R(zz * sd) + mean));                                                             \
              if (++k >= klim) break;                                                                                   \
              iters = 0;                                                                                               \
            } else {                                                                                                   \
              iters++;                                                                                                 \
            }                                                                                                          \
          }                                                                                                            \
        }                                                                                                              \
      }                                                                                                                \
    }                                                                                                                  \
  } while (0)

#define PTN_ID(x) (x)
static float half_round(float x) { return sm__half_to_f32(sm__f32_to_half(x)); }

/* The flat index into each parameter of element b of their broadcast shape (numpy's rules). */
static void bcast_index(int64_t b, int brank, const int64_t *bdims, const sm_tensor *const *prm, int64_t ix[4]) {
  for (int p = 0; p < 4; p++) {
    int r = sm_tensor_rank(prm[p]);
    const int64_t *d = sm_tensor_dims(prm[p]);
    int64_t rem = b, idx = 0, stride = 1;
    for (int k = brank - 1; k >= 0; k--) {
      int64_t c = rem % bdims[k];
      rem /= bdims[k];
      int pk = k - (brank - r);
      if (pk >= 0) {
        if (d[pk] != 1) idx += c * stride;
        stride *= d[pk];
      }
    }
    ix[p] = idx;
  }
}

static sm_status *ptn_sample(int dt, const sm_tensor *const *prm, int brank, const int64_t *bdims, int64_t nb, int64_t spb,
                             int64_t total, int64_t bstride, int64_t kstride, philox gen, sm_tensor *y);

static sm_status *ptn_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *shape = sm__kctx_input(ctx, 0), *seed = sm__kctx_input(ctx, 1);
  const sm_tensor *prm[4] = {sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), sm__kctx_input(ctx, 4), sm__kctx_input(ctx, 5)};
  char b0[64], b1[64], b2[64], b3[64];
  philox gen;
  sm_status *s = seed_input(seed, &gen);
  if (s) return s;
  int dt = sm_tensor_dtype(prm[0]);
  for (int p = 1; p < 4; p++)
    if (sm_tensor_dtype(prm[p]) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "means, stddevs, minvals, maxvals must have one dtype");
  if (dt != SM_HALF && dt != SM_FLOAT && dt != SM_DOUBLE)
    return sm_status_new(SM_INVALID_ARGUMENT, "StatelessParameterizedTruncatedNormal: no kernel for %s (half, float32, float64)", sm_dtype_name(dt));
  /* BCastList<4>: the parameters' broadcast shape */
  int brank = 0;
  int64_t bdims[SM_MAX_RANK];
  for (int p = 0; p < 4; p++) brank = sm_tensor_rank(prm[p]) > brank ? sm_tensor_rank(prm[p]) : brank;
  for (int k = 0; k < brank; k++) {
    int64_t v = 1;
    int ok = 1;
    for (int p = 0; p < 4; p++) {
      int pk = k - (brank - sm_tensor_rank(prm[p]));
      if (pk < 0) continue;
      int64_t d = sm_tensor_dims(prm[p])[pk];
      if (d == v || d == 1) continue;
      if (v == 1) v = d;
      else ok = 0;
    }
    if (!ok) {
      shape_text(prm[0], b0, sizeof b0), shape_text(prm[1], b1, sizeof b1), shape_text(prm[2], b2, sizeof b2), shape_text(prm[3], b3, sizeof b3);
      return sm_status_new(SM_INVALID_ARGUMENT, "means, stddevs, minvals, maxvals must have compatible batch dimensions: %s vs. %s vs. %s vs. %s",
                           b0, b1, b2, b3);
    }
    bdims[k] = v;
  }
  if (sm_tensor_rank(shape) != 1) {
    shape_text(shape, b0, sizeof b0);
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape should be a vector, got shape: %s", b0);
  }
  int rank;
  int64_t dims[SM_MAX_RANK];
  if ((s = sm__random_shape(shape, &rank, dims))) return s;
  int ends = rank >= brank;
  for (int k = 0; ends && k < brank; k++) ends = dims[rank - brank + k] == bdims[k];
  if (!ends) return sm_status_new(SM_INVALID_ARGUMENT, "Shape passed in must end with broadcasted shape.");
  int64_t spb = 1, nb = 1;
  for (int k = 0; k < rank - brank; k++) spb *= dims[k];
  for (int k = rank - brank; k < rank; k++) nb *= dims[k];
  sm_tensor *y;
  if ((s = sm__kctx_alloc_output(ctx, 0, dt, rank, dims, &y))) return s;
  if (nb * spb == 0) return NULL;
  return ptn_sample(dt, prm, brank, bdims, nb, spb, nb * spb, 1, nb, gen, y);
}

/* The samplers over nb batches of spb samples (the last one cut at total), element k of batch b at
 * b * bstride + k * kstride, batch b's parameters at bcast_index(b) of the broadcast shape bdims,
 * all from one Philox stream (TF's one shard). */
static sm_status *ptn_sample(int dt, const sm_tensor *const *prm, int brank, const int64_t *bdims, int64_t nb, int64_t spb,
                             int64_t total, int64_t bstride, int64_t kstride, philox gen, sm_tensor *y) {
  if (dt == SM_HALF) { /* Eigen::half: every operation in float, rounded to half; draws as NormalDistribution /
                        * UniformDistribution<half>: Box-Muller in float then rounded, 10 random mantissa bits */
    PTN_BODY(float, uint16_t, half_round, sm__half_to_f32, sm__f32_to_half, expf, logf, sqrtf,
             {
               uint32_t w[4];
               philox_next(&gen, w);
               box_muller_f(w[0], w[1], &rv[0], &rv[1]);
               box_muller_f(w[2], w[3], &rv[2], &rv[3]);
               for (int q = 0; q < 4; q++) rv[q] = half_round(rv[q]);
             },
             {
               uint32_t w[4];
               philox_next(&gen, w);
               for (int q = 0; q < 4; q++) rv[q] = sm__half_to_f32((uint16_t)(0x3c00u | (w[q] & 0x3ffu))) - 1.0f;
             },
             4);
  } else if (dt == SM_FLOAT) {
    PTN_BODY(float, float, PTN_ID, PTN_ID, PTN_ID, expf, logf, sqrtf,
             {
               uint32_t w[4];
               philox_next(&gen, w);
               box_muller_f(w[0], w[1], &rv[0], &rv[1]);
               box_muller_f(w[2], w[3], &rv[2], &rv[3]);
             },
             {
               uint32_t w[4];
               philox_next(&gen, w);
               for (int q = 0; q < 4; q++) rv[q] = u32_to_float(w[q]);
             },
             4);
  } else {
    PTN_BODY(double, double, PTN_ID, PTN_ID, PTN_ID, exp, log, sqrt,
             {
               uint32_t w[4];
               philox_next(&gen, w);
               box_muller_d(w[0], w[1], w[2], w[3], &rv[0], &rv[1]);
             },
             {
               uint32_t w[4];
               philox_next(&gen, w);
               rv[0] = u64_to_double(w[0], w[1]);
               rv[1] = u64_to_double(w[2], w[3]);
             },
             2);
  }
  return NULL;
}

/* ParameterizedTruncatedNormal (shape, means, stddevs, minvals, maxvals; seed, seed2): TF's
 * TruncatedNormalFunctor (V1). shape[0] batches of the other dims' product, batch-major; each
 * parameter a scalar or a vector of 1 or shape[0]; all of them one value (means and stddevs of
 * length <= 1, minvals and maxvals scalars) makes batches of 100 (the last one short). Each run
 * reserves batches * 2000 * (per batch + 3) / 4 Philox calls of the node's generator; draws as
 * StatelessParameterizedTruncatedNormal, bit-exact while TF runs it in one shard. */
static sm_status *ptn1_compute(const void *state, sm_kctx *ctx) {
  const sm__random_gen_state *s = state;
  const sm_tensor *shape = sm__kctx_input(ctx, 0);
  const sm_tensor *prm[4] = {sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2), sm__kctx_input(ctx, 3), sm__kctx_input(ctx, 4)};
  static const char *const names[4] = {"means", "stdevs", "minvals", "maxvals"};
  char b0[64];
  int dt = sm_tensor_dtype(prm[0]);
  for (int p = 1; p < 4; p++)
    if (sm_tensor_dtype(prm[p]) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "means, stddevs, minvals, maxvals must have one dtype");
  if (dt != SM_HALF && dt != SM_FLOAT && dt != SM_DOUBLE)
    return sm_status_new(SM_INVALID_ARGUMENT, "ParameterizedTruncatedNormal: no kernel for %s (half, float32, float64)", sm_dtype_name(dt));
  if (sm_tensor_rank(shape) != 1) {
    shape_text(shape, b0, sizeof b0);
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape should be a vector, got shape: %s", b0);
  }
  if (sm_tensor_dims(shape)[0] == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Shape tensor must not be empty, got Tensor<type: %s shape: [0] values: >",
                                                       sm_dtype_numpy_name(sm_tensor_dtype(shape)));
  int rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *st = sm__random_shape(shape, &rank, dims);
  if (st) return st;
  int64_t nb = dims[0], spb = 1;
  for (int k = 1; k < rank; k++) spb *= dims[k];
  if (nb * spb > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "ParameterizedTruncatedNormal: %lld elements, over 2^31 - 1", (long long)(nb * spb));
  const int64_t total = nb * spb;
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, rank, dims, &y))) return st;
  for (int p = 0; p < 4; p++)
    if (sm_tensor_rank(prm[p]) > 1) {
      shape_text(prm[p], b0, sizeof b0);
      return sm_status_new(SM_INVALID_ARGUMENT, "Input %s should be a scalar or vector, got shape: %s", names[p], b0);
    }
  int one = 1;
  for (int p = 0; p < 4; p++) one &= p < 2 ? sm_tensor_rank(prm[p]) == 0 || sm_tensor_dims(prm[p])[0] == 1 : sm_tensor_rank(prm[p]) == 0;
  if (one) {
    spb = 100;
    nb = (total + 99) / 100;
  } else {
    for (int p = 0; p < 4; p++)
      if (sm_tensor_rank(prm[p]) == 1 && sm_tensor_dims(prm[p])[0] != 1 && sm_tensor_dims(prm[p])[0] != nb) {
        shape_text(prm[p], b0, sizeof b0);
        return sm_status_new(SM_INVALID_ARGUMENT, "Input %s should have length 1 or shape[0], got shape: %s", names[p], b0);
      }
  }
  philox gen = s->gen;
  philox_skip(&gen, atomic_fetch_add(s->used, (uint64_t)nb * 2 * 1000 * (uint64_t)(spb + 3) / 4));
  if (!total) return NULL;
  return ptn_sample(dt, prm, 1, (int64_t[]){nb}, nb, spb, total, spb, 1, gen, y);
}

const sm_kernel sm_kernels_random[] = {
    {"StatelessRandomUniform", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomNormal", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessTruncatedNormal", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomUniformInt", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomUniformFullInt", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomUniformV2", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomNormalV2", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessTruncatedNormalV2", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomUniformIntV2", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomUniformFullIntV2", rand_prepare, rand_compute, rand_release, 0},
    {"RandomUniform", rand_prepare, rand_compute, rand_release, 0},
    {"RandomStandardNormal", rand_prepare, rand_compute, rand_release, 0},
    {"TruncatedNormal", rand_prepare, rand_compute, rand_release, 0},
    {"RandomUniformInt", rand_prepare, rand_compute, rand_release, 0},
    {"StatelessRandomGetKeyCounter", NULL, key_counter_compute, NULL, 0},
    {"StatelessRandomGetKeyCounterAlg", NULL, key_counter_compute, NULL, 0},
    {"StatelessRandomGetAlg", NULL, key_counter_compute, NULL, 0},
    {"StatelessRandomGammaV2", gamma_prepare, gamma_compute, gamma_release, 0},
    {"StatelessRandomGammaV3", gamma_prepare, gamma_compute, gamma_release, 0},
    {"RandomGamma", gamma_prepare, gamma_compute, gamma_release, 0},
    {"StatelessRandomPoisson", gamma_prepare, gamma_compute, gamma_release, 0},
    {"StatelessParameterizedTruncatedNormal", NULL, ptn_compute, NULL, 0},
    {"ParameterizedTruncatedNormal", sm__random_gen_prepare, ptn1_compute, sm__random_gen_release, 0},
    {"RandomPoissonV2", gamma_prepare, gamma_compute, gamma_release, 0},
    {"RandomPoisson", gamma_prepare, gamma_compute, gamma_release, 0},
    {"StatelessShuffle", shuffle_prepare, shuffle_compute, multinomial_release, 0},
    {"RandomShuffle", shuffle_prepare, shuffle_compute, multinomial_release, 0},
    {"StatelessMultinomial", multinomial_prepare, multinomial_compute, multinomial_release, 0},
    {"Multinomial", multinomial_prepare, multinomial_compute, multinomial_release, 0},
    {0},
};
