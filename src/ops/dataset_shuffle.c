/* dataset_shuffle.c - ShuffleDataset / ShuffleDatasetV2 / ShuffleDatasetV3 in TensorFlow's order,
 * RandomDataset(V2), and the seed generator resources they take (AnonymousSeedGenerator,
 * DummySeedGenerator, DeleteSeedGenerator; DummyMemoryCache / AnonymousMemoryCache handles too).
 *
 * TF's algorithm (core/kernels/data/shuffle_dataset_op.cc, random_seed_ops.cc), reproduced:
 * a dataset owns a seed generator made from RandomSeeds(seed, seed2) - both 0 means two random
 * 64-bit seeds (TF: random::New64; here the OS's entropy, so any order, as in TF). Each iterator
 * made over the dataset asks it for its seeds: a FixedSeedGenerator
 * (reshuffle_each_iteration false) gives (seed, seed2) every time, a RandomSeedGenerator the next
 * two uint32 of its SingleSampleAdapter<PhiloxRandom(seed, seed2)>, so each pass of a repeat()
 * (a new iterator) has a new order and a new dataset (a new call) starts the sequence again. The
 * iterator fills a ring buffer of buffer_size elements (-2, UNKNOWN_CARDINALITY: unbounded),
 * then each next() takes the element at offset Random() % n from the ring's head (Random: its
 * own SingleSampleAdapter<PhiloxRandom(seed1, seed2)>), moves the head element into its slot
 * and refills one. V2 takes its generator from an AnonymousSeedGenerator handle; V3 from the
 * handle when that is an AnonymousSeedGenerator's, else (DummySeedGenerator) makes its own from
 * its seed inputs; V1 makes its own (TF 1.x's V1 with reshuffle keeps its generator in the
 * resource manager across calls; here it lives with the dataset). The buffered elements are
 * charged to the run's memory budget. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ops/dataset.h"
#include "ops/philox.h"
#include "runtime/kernel.h"

#define SEEDGEN_MAGIC 0x73656564u /* "seed" */
#define UNKNOWN_CARD (-2)

/* A seed generator: shared by its handle tensor and the datasets using it. */
typedef struct seedgen {
  void *self; /* the word a handle tensor wraps */
  unsigned magic;
  atomic_int refs;
  int dummy; /* DummySeedGenerator: no seeds of its own */
  int reshuffle;
  int64_t seed, seed2;
  pthread_mutex_t mu;
  philox p;
  single g;
} seedgen;

static sm_status *oom(void) { return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when making a shuffle dataset"); }

static void seedgen_unref(void *p) {
  seedgen *g = p;
  if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
    pthread_mutex_destroy(&g->mu);
    free(g);
  }
}

/* RandomSeeds(seed, seed2) and the generator over them. */
static seedgen *seedgen_new(int dummy, int64_t seed, int64_t seed2, int reshuffle) {
  seedgen *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->self = g;
  g->magic = SEEDGEN_MAGIC;
  atomic_init(&g->refs, 1);
  g->dummy = dummy;
  g->reshuffle = reshuffle;
  if ((seed | seed2) == 0 && !dummy) {
    uint64_t r[2] = {0, 0};
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r[0] = (uint64_t)(uintptr_t)g, r[1] = ~r[0];
    seed = (int64_t)r[0], seed2 = (int64_t)r[1];
  }
  g->seed = seed, g->seed2 = seed2;
  pthread_mutex_init(&g->mu, NULL);
  g->p = philox_seeded((uint64_t)seed, (uint64_t)seed2);
  g->g = (single){&g->p, {0}, 4};
  return g;
}

/* SeedGenerator::GenerateSeeds. */
static void seedgen_draw(seedgen *g, int64_t *s1, int64_t *s2) {
  if (!g->reshuffle) {
    *s1 = g->seed, *s2 = g->seed2;
    return;
  }
  pthread_mutex_lock(&g->mu);
  *s1 = single_next(&g->g);
  *s2 = single_next(&g->g);
  pthread_mutex_unlock(&g->mu);
}

static seedgen *input_seedgen(sm_kctx *c, int i) {
  const sm_tensor *h = sm__kctx_input(c, i);
  seedgen *g = h && sm_tensor_dtype(h) == SM_RESOURCE && sm_tensor_num_elements(h) == 1 && sm_tensor_data(h)
                   ? ((void *const *)sm_tensor_data(h))[0]
                   : NULL;
  return g && g->self == g && g->magic == SEEDGEN_MAGIC ? g : NULL;
}

static sm_status *seed_input(sm_kctx *c, int i, const char *what, int64_t *v) {
  const sm_tensor *t = sm__kctx_input(c, i);
  if (!t || sm_tensor_dtype(t) != SM_INT64 || sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be an int64 scalar", sm__node_op(sm__kctx_node(c)), what);
  *v = *(const int64_t *)sm_tensor_data(t);
  return NULL;
}

sm_status *sm__ds_shuffle_setup(sm_kctx *c, ds *d) {
  const char *op = sm__node_op(sm__kctx_node(c));
  int nin = sm__kctx_num_inputs(c), v3 = !strcmp(op, "ShuffleDatasetV3"), v2 = !strcmp(op, "ShuffleDatasetV2");
  if (nin != (v3 ? 5 : v2 ? 3 : 4))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %d inputs, expected %d", op, nin, v3 ? 5 : v2 ? 3 : 4);
  int64_t bs, seed = 0, seed2 = 0;
  sm_status *s = sm__ds_scalar_i64(c, 1, "buffer_size", &bs);
  if (s) return s;
  if (bs <= 0 && bs != UNKNOWN_CARD)
    return sm_status_new(SM_INVALID_ARGUMENT, "buffer_size must be greater than zero or UNKNOWN_CARDINALITY");
  if (!v2 && ((s = seed_input(c, 2, "seed", &seed)) || (s = seed_input(c, 3, "seed2", &seed2)))) return s;
  int reshuffle = 1;
  if (sm__node_attr(sm__kctx_node(c), "reshuffle_each_iteration") &&
      (s = sm__node_attr_bool(sm__kctx_node(c), "reshuffle_each_iteration", &reshuffle)))
    return s;
  seedgen *g = NULL;
  if (v2 || v3) {
    seedgen *h = input_seedgen(c, v3 ? 4 : 2);
    if (!h) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input %d must be a seed generator handle", op, v3 ? 4 : 2);
    if (!h->dummy) atomic_fetch_add(&h->refs, 1), g = h;
    else if (v2)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: its seed generator must be an AnonymousSeedGenerator's, not a DummySeedGenerator's", op);
  }
  if (!g && !(g = seedgen_new(0, seed, seed2, reshuffle))) return oom();
  d->ext = g;
  d->ext_free = seedgen_unref;
  d->a = bs;
  return NULL;
}

/* A shuffle iterator's state: its generator and the ring of buffered elements (ncomp each). */
typedef struct shuf {
  philox p;
  single g;
  sm_tensor **ring;
  int64_t cap, head, n;
  int in_end;
} shuf;

static void shuf_free(dit *it) {
  shuf *sh = it->ext;
  if (!sh) return;
  int nc = it->d->ncomp;
  for (int64_t i = 0; i < sh->n; i++) {
    sm_tensor **e = sh->ring + ((sh->head + i) % sh->cap) * nc;
    for (int j = 0; j < nc; j++) sm_tensor_free(e[j]);
  }
  free(sh->ring);
  free(sh);
  it->ext = NULL;
}

/* Room for one more element: the ring doubles (up to buffer_size), unrolled from its head. */
static sm_status *shuf_grow(shuf *sh, int nc, int64_t bs) {
  if (sh->n < sh->cap) return NULL;
  int64_t ncap = sh->cap ? sh->cap * 2 : 16;
  if (bs > 0 && ncap > bs) ncap = bs;
  if (ncap > INT64_MAX / 8 / (nc + 1)) return oom();
  sm_tensor **r = malloc((size_t)(ncap * nc) * sizeof *r);
  if (!r) return oom();
  for (int64_t i = 0; i < sh->n; i++)
    memcpy(r + i * nc, sh->ring + ((sh->head + i) % sh->cap) * nc, (size_t)nc * sizeof *r);
  free(sh->ring);
  sh->ring = r, sh->cap = ncap, sh->head = 0;
  return NULL;
}

sm_status *sm__ds_shuffle_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nc = d->ncomp;
  int64_t bs = d->a;
  shuf *sh = it->ext;
  sm_status *s = NULL;
  if (!sh) { /* the iterator's seeds from the dataset's generator */
    if (!(sh = calloc(1, sizeof *sh))) return oom();
    int64_t s1, s2;
    seedgen_draw(d->ext, &s1, &s2);
    sh->p = philox_seeded((uint64_t)s1, (uint64_t)s2);
    sh->g = (single){&sh->p, {0}, 4};
    it->ext = sh;
    it->ext_free = shuf_free;
  }
  while (!s && !sh->in_end && (bs < 0 || sh->n < bs)) {
    if ((s = shuf_grow(sh, nc, bs))) return s;
    sm_tensor **e = sh->ring + ((sh->head + sh->n) % sh->cap) * nc;
    if ((s = sm__ds_it_next(it->in[0], c, e, &sh->in_end)) || sh->in_end) break;
    for (int j = 0; j < nc && !s; j++) s = sm__kctx_hold_tensor(c, &it->acct, e[j], "a shuffle buffer");
    sh->n++;
  }
  if (s) return s;
  if (!sh->n) {
    *end = 1;
    return NULL;
  }
  int64_t off = (int64_t)single_next(&sh->g) % sh->n;
  sm_tensor **pick = sh->ring + ((sh->head + off) % sh->cap) * nc, **head = sh->ring + sh->head * nc;
  for (int j = 0; j < nc; j++) {
    out[j] = pick[j];
    sm__mem_give_tensor(&it->acct, out[j]);
    pick[j] = head[j];
  }
  sh->head = (sh->head + 1) % sh->cap;
  sh->n--;
  return NULL;
}

/* RandomDataset(seed, seed2): a FixedSeedGenerator; RandomDatasetV2(seed, seed2, seed_generator)
 * as ShuffleDatasetV3 with its rerandomize_each_iteration. Infinite, int64 scalars: each the next
 * uint32 of the iterator's SingleSampleAdapter<PhiloxRandom(seeds)>. */
sm_status *sm__ds_random_setup(sm_kctx *c, ds *d) {
  const char *op = sm__node_op(sm__kctx_node(c));
  int v2 = !strcmp(op, "RandomDatasetV2");
  int64_t seed, seed2;
  sm_status *s;
  if (sm__kctx_num_inputs(c) != (v2 ? 3 : 2))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %d inputs, expected %d", op, sm__kctx_num_inputs(c), v2 ? 3 : 2);
  if ((s = seed_input(c, 0, "seed", &seed)) || (s = seed_input(c, 1, "seed2", &seed2))) return s;
  int re = 0;
  if (v2 && sm__node_attr(sm__kctx_node(c), "rerandomize_each_iteration") &&
      (s = sm__node_attr_bool(sm__kctx_node(c), "rerandomize_each_iteration", &re)))
    return s;
  seedgen *g = NULL, *h = v2 ? input_seedgen(c, 2) : NULL;
  if (v2 && !h) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input 2 must be a seed generator handle", op);
  if (h && !h->dummy) atomic_fetch_add(&h->refs, 1), g = h;
  if (!g && !(g = seedgen_new(0, seed, seed2, re))) return oom();
  d->ext = g;
  d->ext_free = seedgen_unref;
  return NULL;
}

static void rnd_free(dit *it) {
  free(it->ext);
  it->ext = NULL;
}

sm_status *sm__ds_random_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  (void)c;
  *end = 0;
  shuf *r = it->ext;
  if (!r) {
    if (!(r = calloc(1, sizeof *r))) return oom();
    int64_t s1, s2;
    seedgen_draw(it->d->ext, &s1, &s2);
    r->p = philox_seeded((uint64_t)s1, (uint64_t)s2);
    r->g = (single){&r->p, {0}, 4};
    it->ext = r;
    it->ext_free = rnd_free;
  }
  sm_status *s = sm_tensor_new(SM_INT64, 0, NULL, out);
  if (!s) *(int64_t *)sm_tensor_data(out[0]) = single_next(&r->g);
  return s;
}

/* AnonymousSeedGenerator(seed, seed2, reshuffle) -> handle, deleter; DummySeedGenerator -> handle. */
static sm_status *seed_gen_compute(const void *state, sm_kctx *c) {
  (void)state;
  int anon = sm__kctx_num_inputs(c) == 3;
  int64_t seed = 0, seed2 = 0, reshuffle = 0;
  sm_status *s = NULL;
  if (anon && ((s = seed_input(c, 0, "seed", &seed)) || (s = seed_input(c, 1, "seed2", &seed2)) ||
               (s = sm__ds_scalar_i64(c, 2, "reshuffle", &reshuffle))))
    return s;
  seedgen *g = seedgen_new(!anon, seed, seed2, (int)reshuffle);
  if (!g) return oom();
  sm_tensor *h;
  if ((s = sm_tensor_wrap(SM_RESOURCE, 0, NULL, &g->self, sizeof g->self, seedgen_unref, g, &h))) {
    seedgen_unref(g);
    return s;
  }
  sm__kctx_set_output(c, 0, h);
  if (sm__kctx_num_outputs(c) > 1) { /* the deleter: an empty variant */
    sm_tensor *dl;
    return sm__kctx_alloc_output(c, 1, SM_VARIANT, 0, NULL, &dl);
  }
  return NULL;
}

static sm_status *noop_compute(const void *state, sm_kctx *c) {
  (void)state, (void)c;
  return NULL;
}

const sm_kernel sm_kernels_dataset_shuffle[] = {
    {"AnonymousSeedGenerator", NULL, seed_gen_compute, NULL, 0},
    {"DummySeedGenerator", NULL, seed_gen_compute, NULL, 0},
    {"DeleteSeedGenerator", NULL, noop_compute, NULL, 0},
    /* cache()'s memory cache handles: the cache itself lives with the CacheDatasetV2 (dataset_more.c) */
    {"DummyMemoryCache", NULL, seed_gen_compute, NULL, 0},
    {"AnonymousMemoryCache", NULL, seed_gen_compute, NULL, 0},
    {"DeleteMemoryCache", NULL, noop_compute, NULL, 0},
    {0},
};
