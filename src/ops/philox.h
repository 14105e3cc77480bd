/* philox.h - TensorFlow's Philox-4x32-10 generator (tensorflow/core/lib/random/philox_random.h)
 * as the random kernels use it: the generator, its skip, TF's PhiloxRandom(seed, seed2) seeding,
 * the two-uint32 double of random_distributions.h and SingleSampleAdapter. Static inline: shared
 * by random.c and image_random.c (the fractional pools, the bounding-box samplers). */
#ifndef SM_OPS_PHILOX_H
#define SM_OPS_PHILOX_H
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct philox {
  uint32_t ctr[4], key[2];
} philox;

static inline void philox_skip(philox *p, uint64_t n) {
  uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
  p->ctr[0] += lo;
  if (p->ctr[0] < lo) hi++;
  p->ctr[1] += hi;
  if (p->ctr[1] < hi && ++p->ctr[2] == 0) ++p->ctr[3];
}

static inline void philox_next(philox *p, uint32_t out[4]) {
  uint32_t c[4] = {p->ctr[0], p->ctr[1], p->ctr[2], p->ctr[3]}, k0 = p->key[0], k1 = p->key[1];
  for (int r = 0; r < 10; r++) {
    uint64_t a = (uint64_t)0xD2511F53u * c[0], b = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(b >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(a >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = (uint32_t)b;
    c[2] = n2;
    c[3] = (uint32_t)a;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
  if (++p->ctr[0] == 0 && ++p->ctr[1] == 0 && ++p->ctr[2] == 0) ++p->ctr[3];
}

/* TF's PhiloxRandom(seed_lo, seed_hi): the key from the first, the counter's high half the second. */
static inline philox philox_seeded(uint64_t lo, uint64_t hi) {
  philox p = {{0, 0, (uint32_t)hi, (uint32_t)(hi >> 32)}, {(uint32_t)lo, (uint32_t)(lo >> 32)}};
  return p;
}

/* TF's GenerateKey: the two seeds scrambled by one Philox call under a fixed key. */
static inline philox philox_from_seeds(uint64_t s0, uint64_t s1) {
  philox p = {{(uint32_t)s0, (uint32_t)(s0 >> 32), (uint32_t)s1, (uint32_t)(s1 >> 32)}, {0x3ec8f720u, 0x02461e29u}};
  uint32_t mix[4];
  philox_next(&p, mix);
  philox q = {{0, 0, mix[2], mix[3]}, {mix[0], mix[1]}};
  return q;
}

static inline double u64_to_double(uint32_t x0, uint32_t x1) {
  uint64_t v = (uint64_t)1023 << 52 | (uint64_t)(x0 & 0xfffffu) << 32 | x1;
  double d;
  memcpy(&d, &v, 8);
  return d - 1.0;
}
/* TF's SingleSampleAdapter: one uint32 at a time out of the 4 of each Philox call. */
typedef struct single {
  philox *g;
  uint32_t buf[4];
  int used;
} single;
static inline uint32_t single_next(single *s) {
  if (s->used == 4) {
    philox_next(s->g, s->buf);
    s->used = 0;
  }
  return s->buf[s->used++];
}

/* TF's UniformDistribution<PhiloxRandom, double> as its samplers take it (SampleBuffer): two doubles a
 * Philox call, the next one last-first; a buffer of normals refills the same way. */
typedef struct dbuf {
  double v[2];
  int left;
} dbuf;
static inline double next_uniform(philox *g, dbuf *b) {
  if (!b->left) {
    uint32_t s[4];
    philox_next(g, s);
    b->v[0] = u64_to_double(s[0], s[1]);
    b->v[1] = u64_to_double(s[2], s[3]);
    b->left = 2;
  }
  return b->v[--b->left];
}
/* random.c's fill (TF's FillPhiloxRandom as its stateful and stateless kernels run it): t's
 * elements, of t's dtype, drawn from gen by distribution `dist` (SM_RNG_*); SM_RNG_INT draws
 * lo + bits % (hi - lo), hi > lo checked by the caller. random_stateful.c's ops share it. */
enum { SM_RNG_UNIFORM, SM_RNG_NORMAL, SM_RNG_TRUNCATED, SM_RNG_INT, SM_RNG_FULLINT };
void sm__random_fill(sm_kctx *ctx, int dist, philox gen, int64_t lo, int64_t hi, sm_tensor *t);
/* A seeded stateful op's generator (prepare): TF's PhiloxRandom(seed, seed2) from the node's attrs
 * (both 0, where TF seeds from the clock: one hashed from the node name), and *used, a new zeroed
 * counter (free it) of the Philox calls its runs have reserved (TF's GuardedPhiloxRandom). */
sm_status *sm__random_node_gen(const sm_node *node, philox *gen, _Atomic uint64_t **used);
/* A kernel state of just that generator and its reservation count (RandomCrop,
 * ParameterizedTruncatedNormal): prepare and release for a kernel table. */
typedef struct sm__random_gen_state {
  philox gen;
  _Atomic uint64_t *used;
} sm__random_gen_state;
sm_status *sm__random_gen_prepare(const sm_node *node, void **state);
void sm__random_gen_release(void *p);
/* TF's MakeShape over a shape input (a vector of int32 / int64 dimensions, each >= 0). */
sm_status *sm__random_shape(const sm_tensor *t, int *rank, int64_t dims[SM_MAX_RANK]);
/* Element i of an int32, uint32 or int64 (uint64 as its bits) tensor. */
int64_t sm__random_int_at(const sm_tensor *t, int64_t i);

#endif
