/* candidate_sampler.c - the candidate samplers of sampled softmax / NCE losses
 * (tf.random.*_candidate_sampler, tf.nn.sampled_softmax_loss): UniformCandidateSampler,
 * LogUniformCandidateSampler, LearnedUnigramCandidateSampler, ThreadUnsafeUnigramCandidateSampler
 * and AllCandidateSampler, bit-exact with TF's CPU kernels (candidate_sampler_ops.cc,
 * range_sampler.cc, weighted_picker.cc).
 *
 * Each run reserves 512 * num_sampled Philox calls of the node's generator (TF's
 * ReserveSamples32(2048 * num_sampled)) and draws from them one uint32 at a time (SimplePhilox):
 * uniform takes Rand64() % range, log-uniform exp(RandDouble() * log1p(range)) - 1, the unigram
 * samplers an unbiased uniform below the total weight mapped through the cumulative weights. With
 * `unique` a value already drawn is drawn again, and the expected counts are 1 - (1 - p)^tries
 * (in float, as TF), else p * num_sampled. The unigram samplers start with every weight 1 and add
 * one for each true class after every run (TF's Update), under a lock: a node's draws depend on
 * its earlier runs, as in TF. Their range is capped at 2^26 here (a Fenwick tree of that many
 * weights, 256 MB); TF's cap is 2^31 - 1. FixedUnigramCandidateSampler (TF's FixedUnigramSampler):
 * the reserved ids of this shard (weight 0), then the unigrams attr or the vocabulary file's last CSV
 * field of each line for this shard, each raised to `distortion` (in float, as TF), drawn from
 * Walker's alias table as TF's DistributionSampler builds it (a RandFloat, then an exact uniform
 * index); the file is read through the confined opener at the first run, once. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ops/philox.h"
#include "runtime/kernel.h"

enum { S_UNIFORM, S_LOG_UNIFORM, S_UNIGRAM, S_ALL, S_FIXED };
#define FIXED_MAX_RANGE ((int64_t)1 << 28) /* weights of a fixed unigram sampler (8 bytes and a float each) */
#define UNIGRAM_MAX_RANGE ((int64_t)1 << 26)

typedef struct cs_state {
  int kind, unique;
  int64_t num_true, num_sampled, range;
  philox gen;
  _Atomic uint64_t *used;
  /* unigram: weights in a Fenwick tree (1-based), their total, under mu */
  pthread_mutex_t mu;
  int64_t *tree;
  int64_t total;
  /* fixed unigram: the attrs; the weights, their float total and the alias table once loaded (mu) */
  char *vocab_file;
  float *unigrams, distortion;
  size_t nunigrams;
  int64_t reserved, num_shards, shard;
  _Atomic int loaded;
  float *w, *prob, wtotal;
  int32_t *alt;
  int64_t nonzero;
} cs_state;

static void cs_release(void *p) {
  cs_state *s = p;
  if (s) {
    free(s->vocab_file);
    free(s->unigrams);
    free(s->w);
    free(s->prob);
    free(s->alt);
    if (s->kind == S_FIXED) pthread_mutex_destroy(&s->mu);
  }
  if (!s) return;
  free((void *)s->used);
  if (s->kind == S_UNIGRAM) pthread_mutex_destroy(&s->mu);
  free(s->tree);
  free(s);
}

static void fen_add(cs_state *s, int64_t i, int64_t d) {
  for (int64_t k = i + 1; k <= s->range; k += k & -k) s->tree[k] += d;
}
static int64_t fen_weight(const cs_state *s, int64_t i) { /* w[i] = prefix(i + 1) - prefix(i) */
  int64_t a = 0, b = 0;
  for (int64_t k = i + 1; k > 0; k -= k & -k) a += s->tree[k];
  for (int64_t k = i; k > 0; k -= k & -k) b += s->tree[k];
  return a - b;
}
/* The index i whose cumulative interval [sum w[<i], sum w[<=i]) holds x (WeightedPicker::PickAt). */
static int64_t fen_find(const cs_state *s, int64_t x) {
  int64_t pos = 0, step = 1;
  while (step * 2 <= s->range) step *= 2;
  for (; step; step /= 2)
    if (pos + step <= s->range && s->tree[pos + step] <= x) {
      pos += step;
      x -= s->tree[pos];
    }
  return pos;
}

/* ---- FixedUnigramCandidateSampler ------------------------------------------------------------ */

static sm_status *fixed_attrs(const sm_node *node, cs_state *s) {
  const char *vf = "";
  size_t vn = 0;
  sm_status *st = sm__node_attr(node, "vocab_file") ? sm__node_attr_string(node, "vocab_file", &vf, &vn) : NULL;
  s->distortion = 1;
  if (!st && sm__node_attr(node, "distortion")) st = sm__node_attr_float(node, "distortion", &s->distortion);
  if (!st && sm__node_attr(node, "num_reserved_ids")) st = sm__node_attr_int(node, "num_reserved_ids", &s->reserved);
  s->num_shards = 1;
  if (!st && sm__node_attr(node, "num_shards")) st = sm__node_attr_int(node, "num_shards", &s->num_shards);
  if (!st && sm__node_attr(node, "shard")) st = sm__node_attr_int(node, "shard", &s->shard);
  if (st) return st;
  if (s->num_shards < 1 || s->shard < 0 || s->reserved < 0 || s->reserved > INT32_MAX || s->num_shards > INT32_MAX ||
      s->shard > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "FixedUnigramCandidateSampler: num_shards must be >= 1 and shard, num_reserved_ids >= 0 "
                         "(int32), got %lld, %lld, %lld",
                         (long long)s->num_shards, (long long)s->shard, (long long)s->reserved);
  if (s->range > FIXED_MAX_RANGE)
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "FixedUnigramCandidateSampler: range_max %lld is over this runtime's limit of %lld",
                         (long long)s->range, (long long)FIXED_MAX_RANGE);
  if (!(s->vocab_file = malloc(vn + 1))) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  if (vn) memcpy(s->vocab_file, vf, vn);
  s->vocab_file[vn] = 0;
  const Tensorflow__AttrValue *u = sm__node_attr(node, "unigrams");
  if (u && u->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && u->list && u->list->n_f) {
    if (u->list->n_f > (size_t)FIXED_MAX_RANGE)
      return sm_status_new(SM_RESOURCE_EXHAUSTED, "FixedUnigramCandidateSampler: %zu unigrams", u->list->n_f);
    if (!(s->unigrams = malloc(u->list->n_f * sizeof *s->unigrams))) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    memcpy(s->unigrams, u->list->f, u->list->n_f * sizeof *s->unigrams);
    s->nunigrams = u->list->n_f;
  }
  if (pthread_mutex_init(&s->mu, NULL)) {
    s->kind = S_UNIFORM; /* nothing to destroy */
    return sm_status_new(SM_INTERNAL, "FixedUnigramCandidateSampler: cannot make a lock");
  }
  return NULL;
}

/* absl::SimpleAtof as TF's safe_strtof: the whole field a float, ASCII blanks around it allowed. */
static int parse_weight(const char *p, size_t n, float *out) {
  while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\v' || *p == '\f')) p++, n--;
  while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == '\v' ||
               p[n - 1] == '\f'))
    n--;
  if (!n || n > 63) return 0;
  char buf[64];
  memcpy(buf, p, n);
  buf[n] = 0;
  char *e;
  *out = strtof(buf, &e);
  return *e == 0;
}

/* Counts word id `id` when it is this shard's and keeps its weight w^distortion while they fit
 * range_max (past it TF's range check fails; only the count is needed). */
static void fixed_push(cs_state *s, int64_t id, float w, int64_t *n) {
  if (id % s->num_shards != s->shard) return;
  if (*n < s->range) {
    w = (float)pow((double)w, (double)s->distortion);
    s->wtotal += w;
    s->w[*n] = w;
  }
  (*n)++;
}

/* The weights and the alias table (TF's FixedUnigramSampler and DistributionSampler), once. */
static sm_status *fixed_load(cs_state *s, sm_kctx *ctx) {
  if (atomic_load(&s->loaded)) return NULL;
  pthread_mutex_lock(&s->mu);
  sm_status *st = NULL;
  if (atomic_load(&s->loaded)) goto done;
  if (!s->vocab_file[0] && !s->nunigrams) {
    st = sm_status_new(SM_INVALID_ARGUMENT, "Must provide either vocab_file or unigrams.");
    goto done;
  }
  if (s->vocab_file[0] && s->nunigrams) {
    st = sm_status_new(SM_INVALID_ARGUMENT, "Must only provide one of vocab_file and unigrams.");
    goto done;
  }
  free(s->w);
  s->w = malloc((size_t)s->range * sizeof *s->w);
  if (!s->w) {
    st = sm_status_new(SM_RESOURCE_EXHAUSTED, "FixedUnigramCandidateSampler: out of memory for %lld weights", (long long)s->range);
    goto done;
  }
  int64_t n = 0, id = 0;
  s->wtotal = 0;
  for (; id < s->reserved; id++)
    if (id % s->num_shards == s->shard) {
      if (n < s->range) s->w[n] = 0;
      n++;
    }
  id = n; /* TF's quirk: the next ids count from the reserved ids this shard kept, not from num_reserved_ids */
  if (s->nunigrams) {
    for (size_t i = 0; i < s->nunigrams; i++, id++) fixed_push(s, id, s->unigrams[i], &n);
  } else {
    sm_file_map fm = {0};
    if ((st = sm__kctx_open_file(ctx, s->vocab_file, (uint64_t)1 << 32, &fm))) goto done;
    const char *p = (const char *)fm.data, *end = p + fm.size;
    while (p < end && !st) {
      const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
      const char *lf = p; /* the last comma-separated field */
      for (const char *q = p; q < le; q++)
        if (*q == ',') lf = q + 1;
      if (id % s->num_shards == s->shard) {
        float w;
        size_t ll = (size_t)(le - p);
        if (!parse_weight(lf, (size_t)(le - lf), &w))
          st = sm_status_new(SM_INVALID_ARGUMENT, "Wrong vocabulary format at line: %.*s", (int)(ll > 200 ? 200 : ll), p);
        else
          fixed_push(s, id, w, &n);
      }
      id++;
      p = nl ? nl + 1 : end;
    }
    sm__file_map_close(&fm);
    if (st) goto done;
  }
  if (n != s->range) { /* TF's text, its two spaces included */
    st = sm_status_new(SM_INVALID_ARGUMENT, "range is %lld must be equal to weights size  %lld", (long long)s->range,
                       (long long)n);
    goto done;
  }
  /* Walker's alias table, as DistributionSampler builds it */
  int32_t nn = (int32_t)n;
  double *pr = malloc((size_t)n * sizeof *pr);
  int32_t *hi = malloc((size_t)n * sizeof *hi), *lo = malloc((size_t)n * sizeof *lo);
  free(s->prob);
  free(s->alt);
  s->prob = malloc((size_t)n * sizeof *s->prob);
  s->alt = malloc((size_t)n * sizeof *s->alt);
  if (!pr || !hi || !lo || !s->prob || !s->alt) {
    st = sm_status_new(SM_RESOURCE_EXHAUSTED, "FixedUnigramCandidateSampler: out of memory for the alias table");
  } else {
    double sum = 0;
    int32_t nh = 0, nlo = 0;
    s->nonzero = 0;
    for (int32_t i = 0; i < nn; i++) sum += s->w[i], s->alt[i] = -1, s->nonzero += s->w[i] != 0;
    for (int32_t i = 0; i < nn; i++) {
      double q = (double)(s->w[i] * (float)nn) / sum;
      pr[i] = q;
      if (q < 1.0)
        lo[nlo++] = i;
      else
        hi[nh++] = i;
    }
    while (nh && nlo) {
      int32_t l = lo[--nlo], h = hi[--nh];
      s->alt[l] = h;
      double rem = pr[h] - (1.0 - pr[l]);
      pr[h] = rem;
      if (rem < 1.0)
        lo[nlo++] = h;
      else
        hi[nh++] = h;
    }
    for (int32_t i = 0; i < nn; i++) s->prob[i] = (float)pr[i];
    for (int32_t i = 0; i < nh; i++) s->prob[hi[i]] = 1, s->alt[hi[i]] = hi[i];
    for (int32_t i = 0; i < nlo; i++) s->prob[lo[i]] = 1, s->alt[lo[i]] = lo[i];
    atomic_store(&s->loaded, 1);
  }
  free(pr);
  free(hi);
  free(lo);
done:
  pthread_mutex_unlock(&s->mu);
  return st;
}

static sm_status *cs_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  cs_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->kind = !strcmp(op, "UniformCandidateSampler")      ? S_UNIFORM
            : !strcmp(op, "LogUniformCandidateSampler") ? S_LOG_UNIFORM
            : !strcmp(op, "AllCandidateSampler")        ? S_ALL
            : !strcmp(op, "FixedUnigramCandidateSampler") ? S_FIXED
                                                        : S_UNIGRAM;
  int unique = 0;
  sm_status *st = sm__node_attr_int(node, "num_true", &s->num_true);
  if (!st) st = sm__node_attr_int(node, "num_sampled", &s->num_sampled);
  if (!st) st = sm__node_attr_bool(node, "unique", &unique);
  s->unique = unique;
  if (!st && s->kind != S_ALL) st = sm__node_attr_int(node, "range_max", &s->range);
  if (!st && s->kind == S_ALL) s->range = s->num_sampled;
  if (!st && (s->num_true < 1 || s->num_sampled < 1 || s->num_true > INT32_MAX || s->num_sampled > INT32_MAX))
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s: num_true and num_sampled must be in [1, 2^31), got %lld and %lld", op,
                       (long long)s->num_true, (long long)s->num_sampled);
  if (!st && s->kind != S_ALL && s->range <= 0) st = sm_status_new(SM_INVALID_ARGUMENT, "range_max must be positive");
  if (!st && s->kind == S_UNIGRAM && s->range >= INT32_MAX)
    st = sm_status_new(SM_INVALID_ARGUMENT, "range_max must be less than 2147483647 for unigram samplers, got %lld", (long long)s->range);
  if (!st && s->kind == S_UNIGRAM && s->range > UNIGRAM_MAX_RANGE)
    st = sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: range_max %lld is over this runtime's limit of %lld for unigram samplers", op,
                       (long long)s->range, (long long)UNIGRAM_MAX_RANGE);
  if (!st && s->kind == S_FIXED) st = fixed_attrs(node, s);
  if (!st) st = sm__random_node_gen(node, &s->gen, &s->used);
  if (!st && s->kind == S_UNIGRAM) {
    if (pthread_mutex_init(&s->mu, NULL)) {
      s->kind = S_UNIFORM; /* nothing to destroy */
      st = sm_status_new(SM_INTERNAL, "%s: cannot make a lock", op);
    } else if (!(s->tree = calloc((size_t)s->range + 1, sizeof *s->tree))) {
      st = sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: out of memory for %lld weights", op, (long long)s->range);
    } else {
      for (int64_t i = 0; i < s->range; i++) fen_add(s, i, 1);
      s->total = s->range;
    }
  }
  if (st) {
    cs_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* SimplePhilox over the reserved stream. */
static uint64_t rand64(single *r) {
  const uint32_t lo = single_next(r), hi = single_next(r);
  return lo | (uint64_t)hi << 32;
}

/* WeightedPicker's UnbiasedUniform(n), n > 0. */
static int64_t unbiased_uniform(single *r, int64_t n) {
  const uint32_t un = (uint32_t)n;
  if (!(un & (un - 1))) return single_next(r) & (un - 1);
  const uint32_t rem = (UINT32_MAX % un) + 1;
  uint32_t v;
  do v = single_next(r);
  while (v < rem);
  return v % un;
}

static int64_t cs_sample(const cs_state *s, single *r) {
  switch (s->kind) {
    case S_UNIFORM: return (int64_t)(rand64(r) % (uint64_t)s->range);
    case S_LOG_UNIFORM: {
      const uint32_t x0 = single_next(r), x1 = single_next(r);
      const int64_t v = (int64_t)exp(u64_to_double(x0, x1) * log1p((double)s->range)) - 1;
      return v % s->range;
    }
    case S_FIXED: { /* DistributionSampler::Sample: RandFloat, then Uniform(n) */
      const uint32_t x = single_next(r), bits = (127u << 23) | (x & 0x7fffffu);
      float f;
      memcpy(&f, &bits, sizeof f);
      const int64_t idx = unbiased_uniform(r, s->range);
      return f - 1.0f < s->prob[idx] ? idx : s->alt[idx];
    }
    default: return fen_find(s, unbiased_uniform(r, s->total));
  }
}

static float cs_prob(const cs_state *s, int64_t v) {
  switch (s->kind) {
    case S_UNIFORM: return (float)(1.0 / (double)s->range);
    case S_LOG_UNIFORM: return (float)(log((v + 2.0) / (v + 1.0)) / log1p((double)s->range));
    case S_FIXED: return v < 0 || v >= s->range ? 0.0f : s->w[v] / s->wtotal;
    default: return (float)fen_weight(s, v) / (float)s->total;
  }
}

static float expected_count(float p, int64_t batch, int64_t tries) {
  if (tries == batch) return p * (float)batch;
  return -expm1f((float)tries * log1pf(-p));
}

static sm_status *cs_compute(const void *state, sm_kctx *ctx) {
  cs_state *s = (cs_state *)state; /* the unigram weights change under s->mu */
  const sm_tensor *tc = sm__kctx_input(ctx, 0);
  if (sm_tensor_rank(tc) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "true_classes must be a matrix");
  if (sm_tensor_dtype(tc) != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "true_classes must be int64");
  const int64_t batch = sm_tensor_dims(tc)[0];
  if (sm_tensor_dims(tc)[1] != s->num_true)
    return sm_status_new(SM_INVALID_ARGUMENT, "true_classes must have num_true columns, expected: %lld was: %lld",
                         (long long)sm_tensor_dims(tc)[1], (long long)s->num_true);
  if (s->unique && s->num_sampled > s->range) return sm_status_new(SM_INVALID_ARGUMENT, "Sampler's range is too small.");
  if (s->kind == S_FIXED) {
    sm_status *ls = fixed_load(s, ctx);
    if (ls) return ls;
    if (s->unique && s->num_sampled > s->nonzero) /* TF's unique draw never ends on it */
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "FixedUnigramCandidateSampler: %lld unique samples asked of %lld ids with a nonzero weight "
                           "(TensorFlow's sampler loops forever on it)",
                           (long long)s->num_sampled, (long long)s->nonzero);
  }
  sm_tensor *cand, *tec, *sec;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, &s->num_sampled, &cand);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 2, (int64_t[]){batch, s->num_true}, &tec);
  if (!st) st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 1, &s->num_sampled, &sec);
  if (st) return st;
  const int64_t *t = sm_tensor_data(tc), nt = batch * s->num_true;
  for (int64_t i = 0; i < nt; i++)
    if (t[i] < 0 || t[i] >= s->range)
      return sm_status_new(SM_INVALID_ARGUMENT, "`true_candidate` out of range [0, %lld), received %lld", (long long)s->range,
                           (long long)t[i]);
  int64_t *out = sm_tensor_data(cand);
  float *sc = sm_tensor_data(sec), *tcnt = sm_tensor_data(tec);
  const int64_t n = s->num_sampled;
  if (s->kind == S_ALL) {
    for (int64_t i = 0; i < n; i++) out[i] = i, sc[i] = 1;
    for (int64_t i = 0; i < nt; i++) tcnt[i] = 1;
    atomic_fetch_add(s->used, (uint64_t)n * 512);
    return NULL;
  }
  philox g = s->gen;
  philox_skip(&g, atomic_fetch_add(s->used, (uint64_t)n * 512));
  single r = {&g, {0}, 4};
  int64_t tries = 0;
  int64_t *set = NULL;
  uint64_t mask = 0;
  if (s->unique) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap *= 2;
    if (!(set = sm__kctx_scratch(ctx, cap * sizeof *set, &st))) return st;
    memset(set, 0xff, cap * sizeof *set); /* -1: empty */
    mask = cap - 1;
  }
  if (s->kind == S_UNIGRAM) pthread_mutex_lock(&s->mu);
  if (s->unique) {
    for (int64_t picked = 0; picked < n;) {
      tries++;
      const int64_t v = cs_sample(s, &r);
      uint64_t h = ((uint64_t)v * 0x9e3779b97f4a7c15ull) & mask;
      while (set[h] != -1 && set[h] != v) h = (h + 1) & mask;
      if (set[h] == -1) {
        set[h] = v;
        out[picked++] = v;
      }
      if (!(tries & 0xffff) && (st = sm__kctx_check_stop(ctx))) break;
    }
  } else {
    for (int64_t i = 0; i < n; i++) out[i] = cs_sample(s, &r);
    tries = n;
  }
  if (!st) {
    for (int64_t i = 0; i < n; i++) sc[i] = expected_count(cs_prob(s, out[i]), n, tries);
    for (int64_t i = 0; i < nt; i++) tcnt[i] = expected_count(cs_prob(s, t[i]), n, tries);
  }
  if (!st && s->kind == S_UNIGRAM) { /* Update: one more for each true class, while the total fits int32 */
    int64_t k = nt < INT32_MAX - s->total ? nt : INT32_MAX - s->total;
    for (int64_t i = 0; i < k; i++) fen_add(s, t[i], 1);
    s->total += k > 0 ? k : 0;
  }
  if (s->kind == S_UNIGRAM) pthread_mutex_unlock(&s->mu);
  return st;
}

const sm_kernel sm_kernels_candidate_sampler[] = {
    {"UniformCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {"LogUniformCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {"LearnedUnigramCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {"ThreadUnsafeUnigramCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {"AllCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {"FixedUnigramCandidateSampler", cs_prepare, cs_compute, cs_release, 0},
    {0},
};
