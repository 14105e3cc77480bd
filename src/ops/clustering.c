/* clustering.c - the clustering kernels of TF's KMeans (clustering_ops.cc): NearestNeighbors (the k
 * nearest centers by squared distance, computed as TF: 2 * (|p|^2/2 + (|c|^2/2 - p.c)), ties to
 * the lower center index), KmeansPlusPlusInitialization and KMC2ChainInitialization, with TF's draws: PhiloxRandom(seed)
 * through SimplePhilox (SingleSampleAdapter: Uniform64 = Rand64 % n, Rand64 the low word first;
 * RandFloat from 23 mantissa bits). KMC2's chain is bit-exact with TF. K-means++ draws the same
 * numbers and samples in proportion to the half squared distances to the chosen points, summed
 * here in row order (Eigen's may associate differently: a choice can differ only when two
 * candidates' potentials, or a draw and a cumulative sum, tie within float rounding). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "runtime/kernel.h"

#define BAD(...) sm_status_new(SM_INVALID_ARGUMENT, __VA_ARGS__)

static uint64_t rand64(single *s) {
  uint64_t lo = single_next(s);
  return lo | (uint64_t)single_next(s) << 32;
}

static float rand_float(single *s) {
  uint32_t v = 127u << 23 | (single_next(s) & 0x7fffffu);
  float f;
  memcpy(&f, &v, 4);
  return f - 1.0f;
}

static int64_t scalar_i64(const sm_tensor *t) { return ((const int64_t *)sm_tensor_data(t))[0]; }

/* ---- KMC2ChainInitialization ------------------------------------------------------------------ */

static sm_status *kmc2_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *d = sm__kctx_input(ctx, 0), *seed = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(d) != 1) return BAD("Input distances should be a vector.");
  if (sm_tensor_rank(seed) != 0) return BAD("Input seed should be a scalar.");
  int64_t n = sm_tensor_dims(d)[0];
  if (n <= 0) return BAD("Expected distances_tensor.size() > 0.");
  philox g = philox_seeded((uint64_t)scalar_i64(seed), 0);
  single s = {&g, {0}, 4};
  const float *x = sm_tensor_data(d);
  int64_t sel = 0;
  float sd = x[0];
  for (int64_t i = 1; i < n; i++) {
    if (i % 65536 == 0) {
      sm_status *st = sm__kctx_check_stop(ctx);
      if (st) return st;
    }
    if (x[i] > rand_float(&s) * sd) sel = i, sd = x[i];
  }
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 0, NULL, &out);
  if (!st) *(int64_t *)sm_tensor_data(out) = sel;
  return st;
}

/* ---- KmeansPlusPlusInitialization ------------------------------------------------------------- */

/* out[i] = min(cur[i], half squared distance of point i to point y), as TF: (|x|^2/2 - x.y) + |y|^2/2. */
static void half_dist_min(const float *p, const float *hn, int64_t n, int64_t dim, int64_t y, const float *cur, float *out) {
  const float *py = p + y * dim;
  for (int64_t i = 0; i < n; i++) {
    float dot = 0;
    for (int64_t k = 0; k < dim; k++) dot += p[i * dim + k] * py[k];
    float v = (hn[i] - dot) + hn[y];
    out[i] = cur[i] < v ? cur[i] : v;
  }
}

static sm_status *kpp_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *pt = sm__kctx_input(ctx, 0), *nt = sm__kctx_input(ctx, 1), *st_ = sm__kctx_input(ctx, 2),
                  *rt = sm__kctx_input(ctx, 3);
  if (sm_tensor_rank(pt) != 2) return BAD("Input points should be a matrix.");
  if (sm_tensor_rank(nt) != 0) return BAD("Input num_to_sample should be a scalar.");
  if (sm_tensor_rank(st_) != 0) return BAD("Input seed should be a scalar.");
  if (sm_tensor_rank(rt) != 0) return BAD("Input num_retries_per_sample should be a scalar.");
  int64_t n = sm_tensor_dims(pt)[0], dim = sm_tensor_dims(pt)[1], k = scalar_i64(nt), retries = scalar_i64(rt);
  if (retries < 0) retries = 2 + (int64_t)log((double)k);
  if (n <= 0) return BAD("Expected points.rows() > 0.");
  if (k <= 0) return BAD("Expected num_to_sample > 0.");
  if (k > n) return BAD("Expected num_to_sample <= points.rows(). %" PRId64 " vs %" PRId64 ".", k, n);
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 2, (int64_t[]){k, dim}, &out);
  if (s) return s;
  const float *p = sm_tensor_data(pt);
  float *o = sm_tensor_data(out);
  /* scratch: half norms, min distances, their cumsum, a candidate's and the best candidate's */
  float *hn = sm__kctx_scratch(ctx, (size_t)n * 5 * sizeof(float) + (size_t)n, &s);
  if (!hn) return s;
  float *mind = hn + n, *cum = mind + n, *cand = cum + n, *best = cand + n;
  uint8_t *taken = (uint8_t *)(best + n);
  memset(taken, 0, (size_t)n);
  int64_t ntaken = 0;
  for (int64_t i = 0; i < n; i++) {
    float q = 0;
    for (int64_t d = 0; d < dim; d++) q += p[i * dim + d] * p[i * dim + d];
    hn[i] = 0.5f * q;
    mind[i] = INFINITY;
  }
  philox g = philox_seeded((uint64_t)scalar_i64(st_), 0);
  single r = {&g, {0}, 4};
  for (int64_t j = 0; j < k && !s; j++) {
    if (j > 0) {
      float acc = 0;
      for (int64_t i = 0; i < n; i++) cum[i] = acc += mind[i];
    }
    float best_pot = INFINITY;
    int64_t best_ix = 0;
    for (int64_t t = retries == 0 ? 1 : 1 + retries; t > 0 && !s; t--) {
      int64_t ix;
      do { /* draw_one_sample: uniform first, then in proportion to the distances */
        if (!ntaken) {
          ix = (int64_t)(rand64(&r) % (uint64_t)n);
        } else {
          float total = cum[n - 1];
          if (!(total > 0.0f)) {
            ix = (int64_t)(rand64(&r) % (uint64_t)n);
          } else {
            float v = rand_float(&r) * total;
            int64_t lo = 0, hi = n; /* upper_bound */
            while (lo < hi) {
              int64_t mid = lo + (hi - lo) / 2;
              if (v < cum[mid]) hi = mid;
              else lo = mid + 1;
            }
            ix = lo < n - 1 ? lo : n - 1;
          }
        }
        if ((s = sm__kctx_check_stop(ctx))) break;
      } while (taken[ix]);
      if (s) break;
      if (retries == 0) {
        half_dist_min(p, hn, n, dim, ix, mind, mind);
        best_ix = ix;
        break;
      }
      half_dist_min(p, hn, n, dim, ix, mind, cand);
      float pot = 0;
      for (int64_t i = 0; i < n; i++) pot += cand[i];
      if (pot < best_pot) {
        best_pot = pot, best_ix = ix;
        float *tmp = best;
        best = cand, cand = tmp;
      }
    }
    if (s) break;
    if (retries != 0) memcpy(mind, best, (size_t)n * sizeof *mind);
    memcpy(o + j * dim, p + best_ix * dim, (size_t)dim * sizeof *o);
    if (!taken[best_ix]) taken[best_ix] = 1, ntaken++;
  }
  sm__kctx_scratch_free(ctx, hn);
  return s;
}

/* ---- NearestNeighbors ------------------------------------------------------------------------ */

typedef struct {
  float d;
  int64_t j;
} center_d;

static int center_cmp(const void *a, const void *b) {
  const center_d *x = a, *y = b;
  if (x->d < y->d) return -1;
  if (x->d > y->d) return 1;
  return (x->j > y->j) - (x->j < y->j);
}

static sm_status *nn_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *pt = sm__kctx_input(ctx, 0), *ct = sm__kctx_input(ctx, 1), *kt = sm__kctx_input(ctx, 2);
  if (sm_tensor_rank(pt) != 2) return BAD("Input points should be a matrix.");
  if (sm_tensor_rank(ct) != 2) return BAD("Input centers should be a matrix.");
  if (sm_tensor_rank(kt) != 0) return BAD("Input k should be a scalar.");
  int64_t n = sm_tensor_dims(pt)[0], dim = sm_tensor_dims(pt)[1], nc = sm_tensor_dims(ct)[0], cdim = sm_tensor_dims(ct)[1];
  if (n <= 0) return BAD("Expected points.rows() > 0.");
  if (dim != cdim) return BAD("Expected point_dimensions == center_dimensions: %" PRId64 " vs %" PRId64 ".", dim, cdim);
  int64_t k = scalar_i64(kt);
  if (k < 0) return BAD("Expected k >= 0.");
  if (k > nc) k = nc;
  sm_tensor *oi, *od;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){n, k}, &oi);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 2, (int64_t[]){n, k}, &od);
  if (s || k == 0) return s;
  const float *p = sm_tensor_data(pt), *c = sm_tensor_data(ct);
  float *chn = sm__kctx_scratch(ctx, (size_t)nc * sizeof(float), &s);
  if (!chn) return s;
  center_d *cd = sm__kctx_scratch(ctx, (size_t)nc * sizeof *cd, &s);
  if (!cd) return s;
  for (int64_t j = 0; j < nc; j++) {
    float q = 0;
    for (int64_t d = 0; d < dim; d++) q += c[j * dim + d] * c[j * dim + d];
    chn[j] = 0.5f * q;
  }
  int64_t *oix = sm_tensor_data(oi);
  float *odd = sm_tensor_data(od);
  for (int64_t i = 0; i < n && !s; i++) {
    if (i % 256 == 0 && (s = sm__kctx_check_stop(ctx))) break;
    const float *pi = p + i * dim;
    float q = 0;
    for (int64_t d = 0; d < dim; d++) q += pi[d] * pi[d];
    float phn = 0.5f * q;
    for (int64_t j = 0; j < nc; j++) {
      float dot = 0;
      for (int64_t d = 0; d < dim; d++) dot += pi[d] * c[j * dim + d];
      cd[j] = (center_d){chn[j] - dot, j};
    }
    if (k == 1) { /* the first minimum */
      int64_t b = 0;
      for (int64_t j = 1; j < nc; j++)
        if (cd[j].d < cd[b].d) b = j;
      cd[0] = cd[b];
    } else {
      qsort(cd, (size_t)nc, sizeof *cd, center_cmp);
    }
    for (int64_t j = 0; j < k; j++) {
      oix[i * k + j] = cd[j].j;
      odd[i * k + j] = (float)(2.0 * (double)(phn + cd[j].d));
    }
  }
  sm__kctx_scratch_free(ctx, chn);
  sm__kctx_scratch_free(ctx, cd);
  return s;
}

const sm_kernel sm_kernels_clustering[] = {
    {"KmeansPlusPlusInitialization", NULL, kpp_compute, NULL, 0},
    {"KMC2ChainInitialization", NULL, kmc2_compute, NULL, 0},
    {"NearestNeighbors", NULL, nn_compute, NULL, 0},
    {0},
};
