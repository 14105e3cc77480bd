/* random_stateful.c - the random ops over an RNG state variable (what tf.random.Generator leaves
 * in a graph), the binomial samplers and NonDeterministicInts, bit-exact with TF's CPU kernels
 * (stateful_random_ops.cc, random_binomial_op.cc).
 *
 * The state is a resource variable holding an int64 vector: for Philox (algorithm 1, the only one
 * TF's CPU kernels run; ThreeFry, 2, is XLA-only) the 128-bit counter in elements 0 and 1 and the
 * key in element 2; StatefulStandardNormal (the V1 op) keeps the algorithm in element 0 and the
 * Philox state after it. An op reads the generator from the state and, under the variable's lock,
 * stores it skipped by 256 Philox calls per output element (TF's UpdateMemWithPhiloxRandom), then
 * draws with random.c's fill: StatefulUniform, StatefulStandardNormal(V2), StatefulTruncatedNormal,
 * StatefulUniformInt, StatefulUniformFullInt. RngSkip skips 256 * delta; RngReadAndSkip (what
 * Generator.normal & co use before a stateless V2 op) returns the old state first.
 * StatefulRandomBinomial and StatelessRandomBinomial: TF's RandomBinomialFunctor: counts and probs
 * broadcast against each other give the batch; the output is shape = samples + batch, and each
 * sample draws from the generator skipped by 256 (BTRS, count * p >= 10) or 42 (inversion) Philox
 * calls per output index; the stateful op advances the state by num_batches * 200 * (samples + 3)
 * / 4 * 256. TF loops until a draw is accepted; a NaN count (or one no draw satisfies) gives NaN
 * here after a bounded number of tries. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ops/math_int.h"
#include "ops/philox.h"
#include "runtime/kernel.h"

enum { ALG_PHILOX = 1, ALG_THREEFRY = 2 };

static void shape_text(const sm_tensor *t, char *buf, size_t cap) { sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap); }

/* TF's GetScalar: input i a scalar of dtype dt. */
static sm_status *scalar_in(sm_kctx *ctx, int i, int dt, int64_t *v) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  char b[64];
  if (sm_tensor_rank(t) != 0) {
    shape_text(t, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d (0-based) must have shape [], not %s", i, b);
  }
  if (sm_tensor_dtype(t) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "dtype of input %d (0-based) must be %s, not %s", i, sm_dtype_numpy_name(dt),
                         sm_dtype_numpy_name(sm_tensor_dtype(t)));
  *v = sm__random_int_at(t, 0);
  return NULL;
}

static sm_status *alg_check(int64_t alg) {
  if (alg == ALG_THREEFRY) return sm_status_new(SM_UNIMPLEMENTED, "Non-XLA devices don't support the ThreeFry algorithm.");
  if (alg != ALG_PHILOX) return sm_status_new(SM_INVALID_ARGUMENT, "Unsupported algorithm id: %lld", (long long)alg);
  return NULL;
}

static philox philox_from_state(const int64_t *s) {
  philox p = {{(uint32_t)s[0], (uint32_t)((uint64_t)s[0] >> 32), (uint32_t)s[1], (uint32_t)((uint64_t)s[1] >> 32)},
              {(uint32_t)s[2], (uint32_t)((uint64_t)s[2] >> 32)}};
  return p;
}

/* The state variable of input 0: its Philox generator (after `skip` elements: V1's algorithm tag,
 * read into *alg when alg_from_state) before this op, stored advanced by `calls` Philox calls;
 * *old (may be NULL) gets the state vector as it was, padded to 3. The algorithm is checked
 * after the variable (TF's order): `alg` when not read from the state. */
static sm_status *advance_state(sm_kctx *ctx, int alg_from_state, int64_t alg, uint64_t calls, philox *gen, sm_tensor *old) {
  sm_variable *v;
  sm_status *hs = sm__handle_variable(sm__kctx_input(ctx, 0), 0, &v);
  if (hs) return hs;
  sm__variable_lock(v);
  sm_tensor *cur = NULL, *nt = NULL;
  sm_status *st = sm__variable_read(v, &cur);
  const int skip = alg_from_state ? 1 : 0;
  if (!st && sm_tensor_dtype(cur) != SM_INT64)
    st = sm_status_new(SM_INVALID_ARGUMENT, "dtype of RNG state variable must be int64, not %s", sm_dtype_numpy_name(sm_tensor_dtype(cur)));
  if (!st && sm_tensor_rank(cur) != 1)
    st = sm_status_new(SM_INVALID_ARGUMENT, "RNG state must have one and only one dimension, not %d", sm_tensor_rank(cur));
  const int64_t n = st ? 0 : sm_tensor_num_elements(cur);
  if (!st && alg_from_state) {
    if (n < 1) st = sm_status_new(SM_INVALID_ARGUMENT, "Size of tensor must be at least 1");
    else alg = ((const int64_t *)sm_tensor_data(cur))[0];
  }
  if (!st && old) {
    int64_t *o = sm_tensor_data(old);
    for (int64_t i = 0; i < 3 && i < n; i++) o[i] = ((const int64_t *)sm_tensor_data(cur))[i];
  }
  if (!st) st = alg_check(alg);
  if (!st && n < skip + 3)
    st = sm_status_new(SM_INVALID_ARGUMENT, "For the Philox algorithm, the size of state must be at least %d; got %lld",
                       skip + 3, (long long)n);
  if (!st) st = sm_tensor_new(SM_INT64, 1, sm_tensor_dims(cur), &nt);
  if (!st) {
    int64_t *d = sm_tensor_data(nt);
    memcpy(d, sm_tensor_data(cur), (size_t)n * sizeof *d);
    *gen = philox_from_state(d + skip);
    philox p = *gen;
    philox_skip(&p, calls);
    d[skip] = (int64_t)(p.ctr[0] | (uint64_t)p.ctr[1] << 32);
    d[skip + 1] = (int64_t)(p.ctr[2] | (uint64_t)p.ctr[3] << 32);
    d[skip + 2] = (int64_t)(p.key[0] | (uint64_t)p.key[1] << 32);
    st = sm__variable_assign(v, nt);
    nt = NULL;
  }
  sm__variable_unlock(v);
  sm_tensor_free(cur);
  sm_tensor_free(nt);
  return st;
}

/* ---- StatefulUniform & co ------------------------------------------------------------------ */

typedef struct sstate {
  int dist, dtype, v1;
} sstate;

static const struct {
  const char *op;
  int dist, v1;
} sops[] = {
    {"StatefulUniform", SM_RNG_UNIFORM, 0},     {"StatefulStandardNormalV2", SM_RNG_NORMAL, 0},
    {"StatefulStandardNormal", SM_RNG_NORMAL, 1}, {"StatefulTruncatedNormal", SM_RNG_TRUNCATED, 0},
    {"StatefulUniformInt", SM_RNG_INT, 0},      {"StatefulUniformFullInt", SM_RNG_FULLINT, 0},
};

static sm_status *stateful_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  size_t k = 0;
  while (k < sizeof sops / sizeof *sops && strcmp(sops[k].op, op)) k++;
  if (k == sizeof sops / sizeof *sops) return sm_status_new(SM_INTERNAL, "%s is not a stateful random op", op);
  int dt;
  sm_status *st = sm__node_attr_type(node, "dtype", &dt);
  if (st) return st;
  const int d = sops[k].dist;
  int ok = d == SM_RNG_INT       ? dt == SM_INT32 || dt == SM_INT64 || dt == SM_UINT32 || dt == SM_UINT64
           : d == SM_RNG_FULLINT ? dt == SM_INT32 || dt == SM_INT64 || dt == SM_UINT32 || dt == SM_UINT64
                                 : dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16;
  if (!ok) return sm_status_new(SM_INVALID_ARGUMENT, "%s: no CPU kernel for dtype %s", op, sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  sstate *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->dist = d;
  s->dtype = dt;
  s->v1 = sops[k].v1;
  *state = s;
  return NULL;
}

static sm_status *stateful_compute(const void *state, sm_kctx *ctx) {
  const sstate *s = state;
  int64_t alg = 0, lo = 0, hi = 0;
  sm_status *st = s->v1 ? NULL : scalar_in(ctx, 1, SM_INT64, &alg);
  if (st) return st;
  if (s->dist == SM_RNG_INT) {
    char b[64];
    for (int k = 0; k < 2; k++) {
      const sm_tensor *t = sm__kctx_input(ctx, 3 + k);
      if (sm_tensor_rank(t) != 0) {
        shape_text(t, b, sizeof b);
        return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", k ? "maxval" : "minval", b);
      }
      if (sm_tensor_dtype(t) != s->dtype) return sm_status_new(SM_INVALID_ARGUMENT, "minval and maxval must be %s", sm_dtype_name(s->dtype));
    }
    lo = sm__random_int_at(sm__kctx_input(ctx, 3), 0);
    hi = sm__random_int_at(sm__kctx_input(ctx, 4), 0);
    int less = s->dtype == SM_UINT64 ? (uint64_t)lo < (uint64_t)hi : lo < hi;
    if (!less) {
      if (s->dtype == SM_UINT64)
        return sm_status_new(SM_INVALID_ARGUMENT, "Need minval < maxval, got %llu >= %llu", (unsigned long long)lo, (unsigned long long)hi);
      return sm_status_new(SM_INVALID_ARGUMENT, "Need minval < maxval, got %lld >= %lld", (long long)lo, (long long)hi);
    }
  }
  int rank;
  int64_t dims[SM_MAX_RANK];
  if ((st = sm__random_shape(sm__kctx_input(ctx, s->v1 ? 1 : 2), &rank, dims))) return st;
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, s->dtype, rank, dims, &out))) return st;
  philox gen;
  const uint64_t n = (uint64_t)sm_tensor_num_elements(out);
  if ((st = advance_state(ctx, s->v1, alg, n * 256, &gen, NULL))) return st;
  if (n) sm__random_fill(ctx, s->dist, gen, lo, hi, out);
  return NULL;
}

/* RngSkip (resource, algorithm int64, delta int64) and RngReadAndSkip (resource, alg int32, delta
 * uint64) -> the state as it was, int64 [3]. */
static sm_status *skip_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const int read = sm__kctx_num_outputs(ctx) == 1;
  int64_t alg, delta;
  sm_status *st = scalar_in(ctx, 1, read ? SM_INT32 : SM_INT64, &alg);
  if (!st) st = scalar_in(ctx, 2, read ? SM_UINT64 : SM_INT64, &delta);
  sm_tensor *old = NULL;
  if (!st && read) st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, (int64_t[]){3}, &old);
  philox gen;
  if (!st) st = advance_state(ctx, 0, alg, (uint64_t)delta * 256, &gen, old);
  return st;
}

/* NonDeterministicInts: integers from the OS's entropy (TF: random::New64), cast to dtype. */
static sm_status *ndi_prepare(const sm_node *node, void **state) {
  int dt = SM_INT64;
  sm_status *st = sm__node_attr(node, "dtype") ? sm__node_attr_type(node, "dtype", &dt) : NULL;
  if (st) return st;
  if (dt != SM_INT32 && dt != SM_INT64 && dt != SM_UINT32 && dt != SM_UINT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Unsupported dtype: %s", sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  int *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *s = dt;
  *state = s;
  return NULL;
}

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static sm_status *ndi_compute(const void *state, sm_kctx *ctx) {
  const int dt = *(const int *)state;
  int rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *st = sm__random_shape(sm__kctx_input(ctx, 0), &rank, dims);
  sm_tensor *out;
  if (st || (st = sm__kctx_alloc_output_uninit(ctx, 0, dt, rank, dims, &out))) return st;
  const int64_t n = sm_tensor_num_elements(out);
  if (!n) return NULL;
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) seed = 0;
  seed ^= (uint64_t)(uintptr_t)out ^ (uint64_t)clock() << 32;
  for (int64_t i = 0; i < n; i++) {
    const uint64_t r = splitmix(&seed);
    if (dt == SM_INT32 || dt == SM_UINT32) ((uint32_t *)sm_tensor_data(out))[i] = (uint32_t)r;
    else ((uint64_t *)sm_tensor_data(out))[i] = r;
  }
  return NULL;
}

/* ---- binomial -------------------------------------------------------------------------------- */

#define BINOM_MAX_TRIES (1 << 20)

static double binomial_inversion(double count, double prob, philox *gen) {
  dbuf ub = {{0, 0}, 0};
  double geom_sum = 0;
  int num_geom = 0;
  const double lq = log1p(-prob);
  for (int tries = 0; tries < BINOM_MAX_TRIES; tries++) {
    const double u = next_uniform(gen, &ub);
    geom_sum += ceil(log(u) / lq);
    if (geom_sum > count) return num_geom;
    ++num_geom;
  }
  return NAN;
}

static double stirling_approx_tail(double k) {
  static const double tail[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983, 0.02079067210376509,
                                0.0166446911898211,  0.0138761288230707,  0.0118967099458917, 0.0104112652619720,
                                0.00925546218271273, 0.00833056343336287};
  if (k <= 9) return tail[(int)k];
  const double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* Hormann's BTRS as TF writes it (count * prob >= 10, prob <= 0.5). */
static double btrs(double count, double prob, philox *gen) {
  const double stddev = sqrt(count * prob * (1 - prob));
  const double b = 1.15 + 2.53 * stddev, a = -0.0873 + 0.0248 * b + 0.01 * prob, c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b, r = prob / (1 - prob), alpha = (2.83 + 5.1 / b) * stddev;
  const double m = floor((count + 1) * prob);
  dbuf ub = {{0, 0}, 0};
  for (int tries = 0; tries < BINOM_MAX_TRIES; tries++) {
    double u = next_uniform(gen, &ub);
    double v = next_uniform(gen, &ub);
    u = u - 0.5;
    const double us = 0.5 - fabs(u), k = floor((2 * a / us + b) * u + c);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || k > count) continue;
    v = log(v * alpha / (a / (us * us) + b));
    const double ub_ = ((m + 0.5) * log((m + 1) / (r * (count - m + 1))) + (count + 1) * log((count - m + 1) / (count - k + 1)) +
                        (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + stirling_approx_tail(m) +
                        stirling_approx_tail(count - m) - stirling_approx_tail(k) - stirling_approx_tail(count - k));
    if (v <= ub_) return k;
  }
  return NAN;
}

/* A parameter of dtype T (half, float, double) as a double, and T's own rounding of a result. */
static double round_t(int dt, double x) {
  if (dt == SM_HALF) return sm__half_to_f32(sm__f32_to_half((float)x));
  if (dt == SM_FLOAT) return (float)x;
  return x;
}

/* static_cast<U>(double) as x86 gives it: NaN and out-of-range to the integer minimum. */
static void binom_store(void *out, int dt, int64_t i, double v) {
  switch (dt) {
    case SM_DOUBLE: ((double *)out)[i] = v; break;
    case SM_FLOAT: ((float *)out)[i] = (float)v; break;
    case SM_HALF: ((uint16_t *)out)[i] = sm__f32_to_half((float)v); break;
    case SM_INT32: ((int32_t *)out)[i] = v >= -2147483648.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; break;
    default: ((int64_t *)out)[i] = v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN; break;
  }
}

typedef struct bstate {
  int stateful, dtype, T;
} bstate;

static sm_status *binom_prepare(const sm_node *node, void **state) {
  bstate s = {!strcmp(sm__node_op(node), "StatefulRandomBinomial"), SM_INT64, SM_DOUBLE};
  sm_status *st = sm__node_attr_type(node, "T", &s.T);
  if (!st && sm__node_attr(node, "dtype")) st = sm__node_attr_type(node, "dtype", &s.dtype);
  if (st) return st;
  if (s.T != SM_HALF && s.T != SM_FLOAT && s.T != SM_DOUBLE)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: no CPU kernel for T=%s (half, float, double)", sm__node_op(node),
                         sm_dtype_name(s.T) ? sm_dtype_name(s.T) : "?");
  if (s.dtype != SM_HALF && s.dtype != SM_FLOAT && s.dtype != SM_DOUBLE && s.dtype != SM_INT32 && s.dtype != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: no CPU kernel for dtype %s (half, float, double, int32, int64)",
                         sm__node_op(node), sm_dtype_name(s.dtype) ? sm_dtype_name(s.dtype) : "?");
  bstate *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

typedef struct bjob {
  philox gen;
  const sm_tensor *counts, *probs;
  int T, dtype, brank;
  int64_t bdims[SM_MAX_RANK], nb, spb;
  void *out;
} bjob;

/* The flat index into t (broadcast to brank / bdims) of element b of the broadcast shape. */
static int64_t bcast_at(const sm_tensor *t, int brank, const int64_t *bdims, int64_t b) {
  const int r = sm_tensor_rank(t);
  const int64_t *d = sm_tensor_dims(t);
  int64_t idx = 0, stride = 1;
  for (int k = brank - 1; k >= 0; k--) {
    const int64_t c = b % bdims[k];
    b /= bdims[k];
    const int pk = k - (brank - r);
    if (pk >= 0) {
      if (d[pk] != 1) idx += c * stride;
      stride *= d[pk];
    }
  }
  return idx;
}

static void binom_fill(void *ctx, int64_t o0, int64_t o1) {
  const bjob *j = ctx;
  for (int64_t o = o0; o < o1; o++) {
    const int64_t batch = o / j->spb, smp = o % j->spb;
    const double count = sm__math_get_f64(j->counts, bcast_at(j->counts, j->brank, j->bdims, batch));
    const double prob = sm__math_get_f64(j->probs, bcast_at(j->probs, j->brank, j->bdims, batch));
    philox g = j->gen;
    double r;
    if (count <= 0.0 || prob <= 0.0) {
      r = 0;
    } else if (prob >= 1.0) {
      r = count;
    } else if (prob <= 0.5) {
      if (round_t(j->T, count * prob) >= 10) {
        philox_skip(&g, 256 * (uint64_t)o);
        r = btrs(count, prob, &g);
      } else {
        philox_skip(&g, 42 * (uint64_t)o);
        r = binomial_inversion(count, prob, &g);
      }
    } else if (prob > 0.5) {
      const double q = round_t(j->T, 1.0 - prob);
      if (round_t(j->T, count * q) >= 10) {
        philox_skip(&g, 256 * (uint64_t)o);
        r = count - btrs(count, q, &g);
      } else {
        philox_skip(&g, 42 * (uint64_t)o);
        r = count - binomial_inversion(count, q, &g);
      }
    } else {
      r = NAN;
    }
    binom_store(j->out, j->dtype, smp * j->nb + batch, r);
  }
}

static sm_status *binom_compute(const void *state, sm_kctx *ctx) {
  const bstate *s = state;
  const int ni = sm__kctx_num_inputs(ctx); /* (resource, algorithm,) shape, (seed,) counts, probs */
  const sm_tensor *shape = sm__kctx_input(ctx, s->stateful ? 2 : 0), *counts = sm__kctx_input(ctx, ni - 2),
                  *probs = sm__kctx_input(ctx, ni - 1);
  char b0[64], b1[64];
  if (!s->stateful) {
    const sm_tensor *seed = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2) {
      shape_text(seed, b0, sizeof b0);
      return sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", b0);
    }
  }
  if (sm_tensor_dtype(counts) != s->T || sm_tensor_dtype(probs) != s->T)
    return sm_status_new(SM_INVALID_ARGUMENT, "counts and probs must be %s", sm_dtype_name(s->T));
  bjob j;
  memset(&j, 0, sizeof j);
  const int rc = sm_tensor_rank(counts), rp = sm_tensor_rank(probs);
  j.brank = rc > rp ? rc : rp;
  for (int k = 0; k < j.brank; k++) {
    const int kc = k - (j.brank - rc), kp = k - (j.brank - rp);
    const int64_t dc = kc >= 0 ? sm_tensor_dims(counts)[kc] : 1, dp = kp >= 0 ? sm_tensor_dims(probs)[kp] : 1;
    if (dc != dp && dc != 1 && dp != 1) {
      shape_text(counts, b0, sizeof b0);
      shape_text(probs, b1, sizeof b1);
      return sm_status_new(SM_INVALID_ARGUMENT, "counts and probs must have compatible batch dimensions: %s vs. %s", b0, b1);
    }
    j.bdims[k] = dc == 1 ? dp : dc;
  }
  if (sm_tensor_rank(shape) != 1) {
    shape_text(shape, b0, sizeof b0);
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape should be a vector, got shape: %s", b0);
  }
  if (sm_tensor_dtype(shape) != SM_INT32 && sm_tensor_dtype(shape) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input shape should have dtype {int32, int64}.");
  int rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *st = sm__random_shape(shape, &rank, dims);
  if (st) return st;
  int ends = rank >= j.brank;
  for (int k = 0; ends && k < j.brank; k++) ends = dims[rank - j.brank + k] == j.bdims[k];
  if (!ends) return sm_status_new(SM_INVALID_ARGUMENT, "Shape passed in must end with broadcasted shape.");
  int64_t alg = ALG_PHILOX;
  if (s->stateful) {
    const sm_tensor *a = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(a) != 0) {
      shape_text(a, b0, sizeof b0);
      return sm_status_new(SM_INVALID_ARGUMENT, "algorithm must be of shape [], not %s", b0);
    }
    alg = sm__random_int_at(a, 0);
  }
  j.spb = 1;
  j.nb = 1;
  for (int k = 0; k < rank - j.brank; k++) j.spb *= dims[k];
  for (int k = rank - j.brank; k < rank; k++) j.nb *= dims[k];
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, s->dtype, rank, dims, &out))) return st;
  const int64_t n = j.nb * j.spb;
  if (s->stateful) {
    const uint64_t calls = (uint64_t)j.nb * 2 * 100 * ((uint64_t)j.spb + 3) / 4 * 256;
    if ((st = advance_state(ctx, 0, alg, calls, &j.gen, NULL))) return st;
  } else {
    if (!n) return NULL;
    const sm_tensor *seed = sm__kctx_input(ctx, 1);
    const int sdt = sm_tensor_dtype(seed);
    if (sdt != SM_INT32 && sdt != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid seed type: %s", sm_dtype_numpy_name(sdt));
    j.gen = philox_from_seeds((uint64_t)sm__random_int_at(seed, 0), (uint64_t)sm__random_int_at(seed, 1));
  }
  if (!n) return NULL;
  j.counts = counts;
  j.probs = probs;
  j.T = s->T;
  j.dtype = s->dtype;
  j.out = sm_tensor_data(out);
  sm__parallel_for(sm__kctx_pool(ctx), n, 64, binom_fill, &j);
  return NULL;
}

/* ---- RandomIndexShuffle ------------------------------------------------------------------------
 * TF's random_index_shuffle.cc: a Simon-style Feistel cipher of block B = max(16, ceil(log2(max)) made
 * even) bits, words of W = B / 2 bits (every value kept to W bits, as std::bitset<W> keeps it), key
 * schedule from the 3 seed words, `rounds` round keys; the index is encrypted until it is <= max_index
 * (cycle walking). TF walks forever when an index > max_index starts a cycle with no value in range:
 * here that is an error after 2^20 steps (every in-range walk of a block up to 2^20 values ends sooner;
 * a larger block's values are at least a quarter in range). */
static uint64_t rotl_w(uint64_t x, int r, int w, uint64_t m) { return ((x << r) | (x >> (w - r))) & m; }
static uint64_t rotr_w(uint64_t x, int r, int w, uint64_t m) { return ((x >> r) | (x << (w - r))) & m; }
static uint64_t simon_f(uint64_t x, int w, uint64_t m) { return (rotl_w(x, 1, w, m) & rotl_w(x, 8, w, m)) ^ rotl_w(x, 2, w, m); }

static int index_shuffle(uint64_t index, const uint32_t key[3], uint64_t max_index, int rounds, uint64_t *out) {
  if (max_index == 0) {
    *out = 0;
    return 1;
  }
  int b = (int)ceil(log2((double)max_index));
  b = b + b % 2;
  if (b < 16) b = 16;
  if (b > 64) b = 64;
  const int w = b / 2;
  const uint64_t m = ((uint64_t)1 << w) - 1;
  uint64_t rk[64], z = 0x7369f885192c0ef5ull & m;
  const uint64_t c = 0xfffffffcull & m;
  for (int i = 0; i < 3; i++) rk[i] = key[i] & m;
  for (int i = 3; i < rounds; i++) {
    rk[i] = c ^ (z & 1) ^ rk[i - 3] ^ rotr_w(rk[i - 1], 3, w, m) ^ rotr_w(rk[i - 1], 4, w, m);
    z >>= 1;
  }
  uint64_t v = index;
  for (int steps = 0; steps < (1 << 20); steps++) {
    uint64_t left = (w == 64 ? 0 : v >> w) & m, right = v & m;
    for (int i = 0; i + 1 < rounds; i += 2) {
      left ^= simon_f(right, w, m);
      left ^= rk[i];
      right ^= simon_f(left, w, m);
      right ^= rk[i + 1];
    }
    v = left << w | right;
    if (v <= max_index) {
      *out = v;
      return 1;
    }
  }
  return 0;
}

static sm_status *shuffle_idx_prepare(const sm_node *node, void **state) {
  int64_t rounds = 4;
  sm_status *st = sm__node_attr(node, "rounds") ? sm__node_attr_int(node, "rounds", &rounds) : NULL;
  if (st) return st;
  if (rounds < 4 || rounds % 2 || rounds > 64)
    return sm_status_new(SM_INVALID_ARGUMENT, "RandomIndexShuffle: rounds must be even, at least 4 and at most 64, not %lld",
                         (long long)rounds);
  int *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *p = (int)rounds;
  *state = p;
  return NULL;
}

static sm_status *shuffle_idx_compute(const void *state, sm_kctx *ctx) {
  const int rounds = *(const int *)state;
  const sm_tensor *idx = sm__kctx_input(ctx, 0), *seed = sm__kctx_input(ctx, 1), *mx = sm__kctx_input(ctx, 2);
  const int dt = sm_tensor_dtype(idx), sdt = sm_tensor_dtype(seed);
  char b[64];
  if (dt != SM_INT32 && dt != SM_INT64 && dt != SM_UINT32 && dt != SM_UINT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "RandomIndexShuffle: no CPU kernel for dtype %s", sm_dtype_name(dt));
  if (sm_tensor_dtype(mx) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "RandomIndexShuffle: max_index must be %s", sm_dtype_name(dt));
  const int all_scalar = sm_tensor_rank(idx) == 0 && sm_tensor_rank(seed) == 1 && sm_tensor_rank(mx) == 0;
  int64_t n = sm_tensor_num_elements(idx) > sm_tensor_num_elements(mx) ? sm_tensor_num_elements(idx) : sm_tensor_num_elements(mx);
  if (sm_tensor_num_elements(seed) / 3 > n) n = sm_tensor_num_elements(seed) / 3;
  if (!(sm_tensor_rank(idx) == 0 || (sm_tensor_rank(idx) == 1 && sm_tensor_dims(idx)[0] == n)))
    return sm_status_new(SM_INVALID_ARGUMENT, "Index bust be a scalar or vector.");
  if (!((sm_tensor_rank(seed) == 1 && sm_tensor_dims(seed)[0] == 3) ||
        (sm_tensor_rank(seed) == 2 && sm_tensor_dims(seed)[0] == n && sm_tensor_dims(seed)[1] == 3))) {
    shape_text(seed, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "Seed must be a vector of size [3] or a matrix of size [%lld, 3] but got %s.", (long long)n, b);
  }
  if (!(sm_tensor_rank(mx) == 0 || (sm_tensor_rank(mx) == 1 && sm_tensor_dims(mx)[0] == n))) {
    shape_text(mx, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "Maxval must be a scalar or a vector of the same size as index but got %s", b);
  }
  if (sdt != SM_INT32 && sdt != SM_INT64 && sdt != SM_UINT32 && sdt != SM_UINT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid seed type: %s", sm_dtype_numpy_name(sdt));
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, all_scalar ? 0 : 1, &n, &out);
  if (st) return st;
  const int wide = dt == SM_INT64 || dt == SM_UINT64;
  for (int64_t i = 0; i < n; i++) {
    const int64_t row = sm_tensor_rank(seed) == 1 ? 0 : i;
    uint32_t key[3];
    for (int k = 0; k < 3; k++) {
      const void *d = sm_tensor_data(seed);
      key[k] = sdt == SM_INT32 || sdt == SM_UINT32 ? ((const uint32_t *)d)[3 * row + k] : (uint32_t)((const uint64_t *)d)[3 * row + k];
    }
    const uint64_t x = wide ? (uint64_t)sm__random_int_at(idx, sm_tensor_rank(idx) ? i : 0) : (uint64_t)sm__random_int_at(idx, sm_tensor_rank(idx) ? i : 0),
                   hi = (uint64_t)sm__random_int_at(mx, sm_tensor_rank(mx) ? i : 0);
    uint64_t r;
    if (!index_shuffle(x, key, hi, rounds, &r))
      return sm_status_new(SM_INVALID_ARGUMENT, "RandomIndexShuffle: index %llu never maps to one <= max_index %llu (TF loops forever)",
                           (unsigned long long)x, (unsigned long long)hi);
    if (wide) ((uint64_t *)sm_tensor_data(out))[i] = r;
    else ((uint32_t *)sm_tensor_data(out))[i] = (uint32_t)r;
  }
  return NULL;
}

/* ---- RandomCrop -------------------------------------------------------------------------------
 * TF's random_crop_op.cc: a [h, w, c] image cropped to size (int64 [2]) at offsets drawn by one
 * reserved Philox call a run (SimplePhilox: the width's offset from the first uint32, then the
 * height's), any element type. */
static sm_status *crop_compute(const void *state, sm_kctx *ctx) {
  const sm__random_gen_state *s = state;
  const sm_tensor *img = sm__kctx_input(ctx, 0), *size = sm__kctx_input(ctx, 1);
  char b[64];
  if (sm_tensor_rank(img) != 3) {
    shape_text(img, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 3-dimensional%s", b);
  }
  if (sm_tensor_rank(size) != 1) {
    shape_text(size, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s", b);
  }
  if (sm_tensor_num_elements(size) != 2 || sm_tensor_dtype(size) != SM_INT64) {
    shape_text(size, b, sizeof b);
    return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must have two elements%s", b);
  }
  const int64_t th = ((const int64_t *)sm_tensor_data(size))[0], tw = ((const int64_t *)sm_tensor_data(size))[1];
  const int64_t *d = sm_tensor_dims(img);
  const int64_t h = d[0], w = d[1], ch = d[2];
  const size_t es = sm_dtype_size(sm_tensor_dtype(img));
  if (!es) return sm_status_new(SM_INVALID_ARGUMENT, "RandomCrop: no CPU kernel for dtype %s", sm_dtype_name(sm_tensor_dtype(img)));
  if (th < 0 || tw < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "RandomCrop: size must not be negative, got [%lld, %lld]", (long long)th, (long long)tw);
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, sm_tensor_dtype(img), 3, (int64_t[]){th, tw, ch}, &out);
  if (st) return st;
  if (w < tw)
    return sm_status_new(SM_FAILED_PRECONDITION, "width must be >= target_width: width = %lld, target_width = %lld", (long long)w, (long long)tw);
  if (h < th)
    return sm_status_new(SM_FAILED_PRECONDITION, "height must be >= target_height: height = %lld, target_height = %lld", (long long)h,
                         (long long)th);
  philox g = s->gen;
  philox_skip(&g, atomic_fetch_add(s->used, 1));
  uint32_t r[4];
  philox_next(&g, r);
  int used = 0;
  int64_t ow = 0, oh = 0;
  if (w > tw) ow = (int64_t)(r[used++] % (uint32_t)(w - tw + 1));
  if (h > th) oh = (int64_t)(r[used++] % (uint32_t)(h - th + 1));
  const size_t row = (size_t)tw * (size_t)ch * es;
  for (int64_t y = 0; y < th && row; y++)
    memcpy((char *)sm_tensor_data(out) + (size_t)y * row, (const char *)sm_tensor_data(img) + (((size_t)(y + oh) * (size_t)w + (size_t)ow) * (size_t)ch) * es,
           row);
  return NULL;
}

const sm_kernel sm_kernels_random_stateful[] = {
    {"StatefulUniform", stateful_prepare, stateful_compute, free, 0},
    {"StatefulStandardNormalV2", stateful_prepare, stateful_compute, free, 0},
    {"StatefulStandardNormal", stateful_prepare, stateful_compute, free, 0},
    {"StatefulTruncatedNormal", stateful_prepare, stateful_compute, free, 0},
    {"StatefulUniformInt", stateful_prepare, stateful_compute, free, 0},
    {"StatefulUniformFullInt", stateful_prepare, stateful_compute, free, 0},
    {"RngSkip", NULL, skip_compute, NULL, 0},
    {"RngReadAndSkip", NULL, skip_compute, NULL, 0},
    {"NonDeterministicInts", ndi_prepare, ndi_compute, free, 0},
    {"StatefulRandomBinomial", binom_prepare, binom_compute, free, 0},
    {"StatelessRandomBinomial", binom_prepare, binom_compute, free, 0},
    {"RandomIndexShuffle", shuffle_idx_prepare, shuffle_idx_compute, free, 0},
    {"RandomCrop", sm__random_gen_prepare, crop_compute, sm__random_gen_release, 0},
    {0},
};
