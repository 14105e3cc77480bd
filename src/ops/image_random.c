/* image_random.c - the seeded-random image and pooling ops, bit-exact with TF's CPU kernels for
 * a given seed: FractionalMaxPool and FractionalAvgPool (tensorflow/core/kernels/
 * fractional_{max,avg}_pool_op.cc, fractional_pool_common.cc), SampleDistortedBoundingBox / V2 and
 * StatelessSampleDistortedBoundingBox (kernels/image/sample_distorted_bounding_box_op.cc: its
 * GenerateRandomCrop float arithmetic and ExactUniformInt rejection draws over SimplePhilox; the
 * stateful ones reserve max_attempts blocks a run from PhiloxRandom(seed, seed2), the stateless one
 * starts at the key and counter of TF's GenerateKey(seed)), and ExtractGlimpse / V2 (kernels/
 * attention_ops.cc over eigen_attention.h: version 1's and 2's offset arithmetic, truncated; the
 * noise under a glimpse that leaves the image is drawn here as TF's distribution, since TF's own
 * generators are seeded from the clock).
 *
 * The pooling sequences come from TF's GuardedPhiloxRandom: PhiloxRandom(seed, seed2) (ops/philox.h),
 * rows then columns each reserving their 128-bit blocks (ReserveSamples32: pseudo_random one block
 * for one RandDouble; random ceil(n/4) blocks for a Fisher-Yates shuffle of the gaps through a
 * SingleSampleAdapter, `sample % n`). With deterministic=true (tf.nn.fractional_*_pool with a seed)
 * TF builds a fresh generator from (seed, seed2) on every run, so the sequences, and the outputs,
 * are TF's. TF refuses a seed without deterministic; with deterministic=false it seeds from the
 * clock, and here from a hash of the node name, advancing on every run (a new draw each run). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/philox.h"
#include "runtime/kernel.h"

/* ---- the fractional pools ---------------------------------------------------------------------- */

typedef struct fpool_state {
  int avg, pseudo, overlapping, deterministic;
  float ratio[4];
  philox gen;              /* (seed, seed2), or the node's hashed seed when not deterministic */
  _Atomic uint64_t *used;  /* not deterministic: 128-bit blocks reserved by earlier runs */
} fpool_state;

static void fpool_release(void *p) {
  fpool_state *st = p;
  if (st) free(st->used);
  free(st);
}

static sm_status *fpool_prepare_op(const sm_node *node, void **state, int avg) {
  fpool_state *st = calloc(1, sizeof *st);
  if (!st || !(st->used = calloc(1, sizeof *st->used))) {
    fpool_release(st);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  }
  st->avg = avg;
  sm_status *s = NULL;
  const Tensorflow__AttrValue *av = sm__node_attr(node, "pooling_ratio");
  if (!av || av->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !av->list)
    s = sm_status_new(SM_INVALID_ARGUMENT, "pooling_ratio field must specify 4 dimensions");
  else if (av->list->n_f < 4) /* the OpDef's minimum, as TF's node validation words it */
    s = sm_status_new(SM_INVALID_ARGUMENT, "Length for attr 'pooling_ratio' of %zu must be at least minimum 4", av->list->n_f);
  else if (av->list->n_f != 4)
    s = sm_status_new(SM_INVALID_ARGUMENT, "pooling_ratio field must specify 4 dimensions");
  for (int i = 0; !s && i < 4; i++) {
    st->ratio[i] = av->list->f[i];
    if (!(st->ratio[i] >= 1)) s = sm_status_new(SM_INVALID_ARGUMENT, "pooling_ratio cannot be smaller than 1, got: %g", (double)st->ratio[i]);
  }
  if (!s && (st->ratio[0] != 1 || st->ratio[3] != 1))
    s = sm_status_new(SM_UNIMPLEMENTED, "Fractional %s pooling is not yet supported on the batch nor channel dimension.",
                      avg ? "average" : "max");
  int64_t seed = 0, seed2 = 0;
  if (!s && sm__node_attr(node, "pseudo_random")) s = sm__node_attr_bool(node, "pseudo_random", &st->pseudo);
  if (!s && sm__node_attr(node, "overlapping")) s = sm__node_attr_bool(node, "overlapping", &st->overlapping);
  if (!s && sm__node_attr(node, "deterministic")) s = sm__node_attr_bool(node, "deterministic", &st->deterministic);
  if (!s && sm__node_attr(node, "seed")) s = sm__node_attr_int(node, "seed", &seed);
  if (!s && sm__node_attr(node, "seed2")) s = sm__node_attr_int(node, "seed2", &seed2);
  if (!s && !st->deterministic && (seed || seed2))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Both seed and seed2 should be 0 if deterministic is false.");
  if (s) {
    fpool_release(st);
    return s;
  }
  if (!seed && !seed2) { /* TF: the clock (random::New64); here a hash of the node name */
    uint64_t h = 1469598103934665603ull;
    for (const char *p = sm__node_name(node); *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    seed = (int64_t)h, seed2 = (int64_t)(h * 0x9e3779b97f4a7c15ull);
  }
  st->gen = philox_seeded((uint64_t)seed, (uint64_t)seed2);
  *state = st;
  return NULL;
}
static sm_status *fmax_prepare(const sm_node *n, void **s) { return fpool_prepare_op(n, s, 0); }
static sm_status *favg_prepare(const sm_node *n, void **s) { return fpool_prepare_op(n, s, 1); }

/* TF's GeneratePoolingSequence into cum[0..out]; *gen advanced by the blocks it reserves. */
static void pooling_sequence(int in, int out, philox *gen, int pseudo, int64_t *cum, int64_t *diff) {
  int k = in / out;
  if (pseudo) {
    double alpha = (double)in / out;
    double u_max1 = (k + 2) / alpha - 1, u_max2 = (in + 1 - k) / alpha - (out - 1);
    double max_u = u_max1 < u_max2 ? u_max1 : u_max2;
    philox local = *gen;
    philox_skip(gen, 1); /* ReserveSamples32(2): one block */
    single sp = {&local, {0}, 4};
    uint32_t x0 = single_next(&sp), x1 = single_next(&sp);
    double u = u64_to_double(x0, x1) * max_u;
    cum[0] = 1, cum[out] = in + 1;
    for (int i = 1; i < out; i++) cum[i] = (int)ceil(alpha * (i + u));
    for (int i = 0; i < out; i++) diff[i] = cum[i + 1] - cum[i];
  } else {
    for (int i = 0; i < out; i++) diff[i] = k + (i < in % out);
    philox local = *gen;
    philox_skip(gen, ((uint64_t)out + 3) / 4); /* ReserveSamples32(out) */
    single sp = {&local, {0}, 4};
    for (int i = 0; i < out - 1; i++) { /* TF's RandomShuffle */
      int j = i + (int)(single_next(&sp) % (uint32_t)(out - i));
      int64_t t = diff[i];
      diff[i] = diff[j], diff[j] = t;
    }
  }
  cum[0] = 0;
  for (int i = 1; i <= out; i++) cum[i] = cum[i - 1] + diff[i - 1];
}

#define FPOOL_LOOP(T, BODY_INIT, BODY_ACC, BODY_FIN)                                                              \
  do {                                                                                                            \
    const T *x = sm_tensor_data(in);                                                                              \
    T *o = sm_tensor_data(y);                                                                                     \
    for (int64_t b = 0; b < osz[0]; b++)                                                                          \
      for (int64_t hs = 0; hs < osz[1]; hs++) {                                                                   \
        int64_t h0 = hc[hs], h1 = st->overlapping ? hc[hs + 1] : hc[hs + 1] - 1;                                  \
        if (h1 > isz[1] - 1) h1 = isz[1] - 1;                                                                     \
        for (int64_t ws = 0; ws < osz[2]; ws++) {                                                                 \
          int64_t w0 = wc[ws], w1 = st->overlapping ? wc[ws + 1] : wc[ws + 1] - 1;                                \
          if (w1 > isz[2] - 1) w1 = isz[2] - 1;                                                                   \
          T *op = o + ((b * osz[1] + hs) * osz[2] + ws) * d;                                                      \
          int64_t cnt = 0;                                                                                        \
          for (int64_t c = 0; c < d; c++) BODY_INIT;                                                              \
          for (int64_t h = h0; h <= h1; h++)                                                                      \
            for (int64_t w = w0; w <= w1; w++, cnt++) {                                                           \
              const T *ip = x + ((b * isz[1] + h) * isz[2] + w) * d;                                              \
              for (int64_t c = 0; c < d; c++) BODY_ACC;                                                           \
            }                                                                                                     \
          for (int64_t c = 0; c < d; c++) BODY_FIN;                                                               \
        }                                                                                                         \
      }                                                                                                           \
  } while (0)

static sm_status *fpool_compute(const void *state, sm_kctx *ctx) {
  const fpool_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(in);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "Fractional%sPool: no kernel for %s", st->avg ? "Avg" : "Max", sm_dtype_name(dt));
  if (sm_tensor_rank(in) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "tensor_in must be 4-dimensional");
  const int64_t *dims = sm_tensor_dims(in);
  int64_t isz[4], osz[4];
  for (int i = 0; i < 4; i++) {
    if (dims[i] > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "tensor_in dimension %d too large: %" PRId64, i, dims[i]);
    isz[i] = dims[i];
    if (!((float)isz[i] >= st->ratio[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "Pooling ratio is higher than input dimension size for dimension %d. Input dim size: %" PRId64
                                                " pooling ratio: %g", i, isz[i], (double)st->ratio[i]);
  }
  for (int i = 0; i < 4; i++) osz[i] = (int64_t)floorf((float)isz[i] / st->ratio[i]);
  if (osz[1] <= 0 || osz[2] <= 0 || osz[0] != isz[0] || osz[3] != isz[3])
    return sm_status_new(SM_INVALID_ARGUMENT, "fractional pool: bad output size");
  sm_tensor *y, *rs, *cs;
  sm_status *s = sm__kctx_alloc_output_uninit(ctx, 0, dt, 4, osz, &y);
  if (!s) s = sm__kctx_alloc_output_uninit(ctx, 1, SM_INT64, 1, (int64_t[]){osz[1] + 1}, &rs);
  if (!s) s = sm__kctx_alloc_output_uninit(ctx, 2, SM_INT64, 1, (int64_t[]){osz[2] + 1}, &cs);
  if (s) return s;
  int64_t *hc = sm_tensor_data(rs), *wc = sm_tensor_data(cs);
  int64_t *diff = sm__kctx_scratch(ctx, (size_t)(osz[1] > osz[2] ? osz[1] : osz[2]) * sizeof(int64_t), &s);
  if (!diff) return s;
  philox gen = st->gen;
  if (!st->deterministic) { /* a new draw each run: skip what earlier runs reserved */
    uint64_t blocks = st->pseudo ? 2 : ((uint64_t)osz[1] + 3) / 4 + ((uint64_t)osz[2] + 3) / 4;
    philox_skip(&gen, atomic_fetch_add(st->used, blocks));
  }
  pooling_sequence((int)isz[1], (int)osz[1], &gen, st->pseudo, hc, diff);
  pooling_sequence((int)isz[2], (int)osz[2], &gen, st->pseudo, wc, diff);
  sm__kctx_scratch_free(ctx, diff);
  int64_t d = isz[3];
  if (!st->avg) {
    switch (dt) {
      case SM_FLOAT: FPOOL_LOOP(float, op[c] = -FLT_MAX, if (op[c] < ip[c]) op[c] = ip[c], (void)0); break;
      case SM_DOUBLE: FPOOL_LOOP(double, op[c] = -DBL_MAX, if (op[c] < ip[c]) op[c] = ip[c], (void)0); break;
      case SM_INT32: FPOOL_LOOP(int32_t, op[c] = INT32_MIN, if (op[c] < ip[c]) op[c] = ip[c], (void)0); break;
      default: FPOOL_LOOP(int64_t, op[c] = INT64_MIN, if (op[c] < ip[c]) op[c] = ip[c], (void)0); break;
    }
  } else { /* summed in T in (h, w) order, then divided by the count in T, as TF's Eigen code */
    switch (dt) {
      case SM_FLOAT: FPOOL_LOOP(float, op[c] = 0, op[c] += ip[c], op[c] /= (float)cnt); break;
      case SM_DOUBLE: FPOOL_LOOP(double, op[c] = 0, op[c] += ip[c], op[c] /= (double)cnt); break;
      case SM_INT32: FPOOL_LOOP(int32_t, op[c] = 0, op[c] = (int32_t)((uint32_t)op[c] + (uint32_t)ip[c]), op[c] = (int32_t)(op[c] / (int32_t)cnt)); break;
      default: FPOOL_LOOP(int64_t, op[c] = 0, op[c] = (int64_t)((uint64_t)op[c] + (uint64_t)ip[c]), op[c] = op[c] / cnt); break;
    }
  }
  return NULL;
}

/* ---- SampleDistortedBoundingBox (V1, V2, Stateless) ---------------------------------------------- */

enum { SDB_V1, SDB_V2, SDB_STATELESS };

typedef struct sdb_state {
  int kind, use_image, max_attempts;
  float min_covered; /* V1's attr */
  float aspect[2], area[2];
  philox gen;             /* stateful: (seed, seed2) or the node's hashed seed */
  _Atomic uint64_t *used; /* stateful: blocks reserved by earlier runs */
} sdb_state;

static sm_status *float_pair(const sm_node *node, const char *name, float def0, float def1, float out[2], const char *what) {
  const Tensorflow__AttrValue *av = sm__node_attr(node, name);
  out[0] = def0, out[1] = def1;
  if (!av) return NULL;
  if (av->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !av->list || av->list->n_f != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s field must specify 2 dimensions", what);
  out[0] = av->list->f[0], out[1] = av->list->f[1];
  return NULL;
}

static sm_status *sdb_prepare_op(const sm_node *node, void **state, int kind) {
  sdb_state *st = calloc(1, sizeof *st);
  if (!st || !(st->used = calloc(1, sizeof *st->used))) {
    if (st) free(st);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  }
  st->kind = kind, st->max_attempts = 100, st->min_covered = 0.1f;
  sm_status *s = NULL;
  int64_t v;
  if (kind == SDB_V1 && sm__node_attr(node, "min_object_covered")) s = sm__node_attr_float(node, "min_object_covered", &st->min_covered);
  if (!s && kind == SDB_V1 && !(st->min_covered >= 0))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Min object covered must be non-negative: %g", (double)st->min_covered);
  if (!s && sm__node_attr(node, "use_image_if_no_bounding_boxes"))
    s = sm__node_attr_bool(node, "use_image_if_no_bounding_boxes", &st->use_image);
  if (!s) s = float_pair(node, "aspect_ratio_range", 0.75f, 1.33f, st->aspect, "Aspect ratio range");
  if (!s && !(st->aspect[0] > 0 && st->aspect[1] > 0))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Aspect ratio range must be non-negative: [%g, %g]", (double)st->aspect[0], (double)st->aspect[1]);
  if (!s) s = float_pair(node, "area_range", 0.05f, 1.0f, st->area, "Area range");
  if (!s && !(st->area[0] > 0 && st->area[1] > 0))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Area range must be non-negative: [%g, %g]", (double)st->area[0], (double)st->area[1]);
  if (!s && !(st->area[0] <= 1 && st->area[1] <= 1))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Area range must be less then or equal to 1.0: [%g, %g]", (double)st->area[0], (double)st->area[1]);
  if (!s && sm__node_attr(node, "max_attempts") && !(s = sm__node_attr_int(node, "max_attempts", &v))) st->max_attempts = (int)v;
  if (!s && st->max_attempts <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Max attempts must be non-negative: %d", st->max_attempts);
  int64_t seed = 0, seed2 = 0;
  if (!s && kind != SDB_STATELESS && sm__node_attr(node, "seed")) s = sm__node_attr_int(node, "seed", &seed);
  if (!s && kind != SDB_STATELESS && sm__node_attr(node, "seed2")) s = sm__node_attr_int(node, "seed2", &seed2);
  if (s) {
    free(st->used), free(st);
    return s;
  }
  if (!seed && !seed2) { /* TF: the clock; here a hash of the node name */
    uint64_t h = 1469598103934665603ull;
    for (const char *p = sm__node_name(node); *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    seed = (int64_t)h, seed2 = (int64_t)(h * 0x9e3779b97f4a7c15ull);
  }
  st->gen = philox_seeded((uint64_t)seed, (uint64_t)seed2);
  *state = st;
  return NULL;
}
static void sdb_release(void *p) {
  sdb_state *st = p;
  if (st) free(st->used);
  free(st);
}
static sm_status *sdb_v1_prepare(const sm_node *n, void **s) { return sdb_prepare_op(n, s, SDB_V1); }
static sm_status *sdb_v2_prepare(const sm_node *n, void **s) { return sdb_prepare_op(n, s, SDB_V2); }
static sm_status *sdb_sl_prepare(const sm_node *n, void **s) { return sdb_prepare_op(n, s, SDB_STATELESS); }

typedef struct rect {
  int x0, y0, x1, y1;
} rect;
static float rect_area(rect r) { return (float)((int64_t)(r.x1 - r.x0) * (r.y1 - r.y0)); }
/* float -> int as static_cast<int> where that is defined; clamped where C++ would be undefined */
static int f2i(double v) { return v != v ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int)v; }

/* random::ExactUniformInt<uint32> over SimplePhilox::Rand32 */
static uint32_t exact_uniform(single *sp, uint32_t n) {
  if (n == 0) return single_next(sp) * n;
  if (!(n & (n - 1))) return single_next(sp) & (n - 1);
  uint32_t rem = (UINT32_MAX % n) + 1, r;
  do r = single_next(sp);
  while (r < rem);
  return r % n;
}
static float rand_float(single *sp) {
  uint32_t b = 0x3f800000u | (single_next(sp) & 0x7fffffu);
  float f;
  memcpy(&f, &b, 4);
  return f - 1.0f;
}

/* TF's GenerateRandomCrop, its float arithmetic statement by statement. */
static int random_crop(int ow, int oh, float min_rel, float max_rel, float aspect, single *sp, rect *crop) {
  if (max_rel <= 0.0 || aspect <= 0.0 || ow <= 0 || oh <= 0 || min_rel > max_rel) return 0;
  const float min_area = min_rel * (float)ow * (float)oh, max_area = max_rel * (float)ow * (float)oh;
  int height = (int)lrintf(sqrtf(min_area / aspect)), max_height = (int)lrintf(sqrtf(max_area / aspect));
  if (lrintf((float)max_height * aspect) > ow) {
    const float eps = 0.0000001f;
    max_height = f2i((ow + 0.5 - (double)eps) / (double)aspect);
    if (lrintf((float)max_height * aspect) > ow) max_height -= 1;
  }
  if (max_height > oh) max_height = oh;
  if (height >= max_height) height = max_height;
  if (height < max_height) height += (int)exact_uniform(sp, (uint32_t)(max_height - height + 1));
  int width = (int)lrintf((float)height * aspect);
  float area = (float)((int64_t)width * height);
  if (area < min_area) {
    height += 1;
    width = (int)lrintf((float)height * aspect);
    area = (float)((int64_t)width * height);
  }
  if (area > max_area) {
    height -= 1;
    width = (int)lrintf((float)height * aspect);
    area = (float)((int64_t)width * height);
  }
  if (area < min_area || area > max_area || width > ow || height > oh || width <= 0 || height <= 0) return 0;
  int y = height < oh ? (int)exact_uniform(sp, (uint32_t)(oh - height)) : 0;
  int x = width < ow ? (int)exact_uniform(sp, (uint32_t)(ow - width)) : 0;
  *crop = (rect){x, y, x + width, y + height};
  return 1;
}

static int covers(rect crop, float min_cov, const rect *boxes, int64_t n) {
  if (rect_area(crop) < 1.0f) return 0;
  for (int64_t i = 0; i < n; i++) {
    float oa = rect_area(boxes[i]);
    if (oa < 1.0f) continue;
    rect r = {crop.x0 > boxes[i].x0 ? crop.x0 : boxes[i].x0, crop.y0 > boxes[i].y0 ? crop.y0 : boxes[i].y0,
              crop.x1 < boxes[i].x1 ? crop.x1 : boxes[i].x1, crop.y1 < boxes[i].y1 ? crop.y1 : boxes[i].y1};
    if (r.x0 > r.x1 || r.y0 > r.y1) r = (rect){0, 0, 0, 0};
    if (rect_area(r) / oa >= min_cov) return 1;
  }
  return 0;
}

static int64_t int_elem(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_UINT8: return ((const uint8_t *)p)[i];
    case SM_INT8: return ((const int8_t *)p)[i];
    case SM_INT16: return ((const int16_t *)p)[i];
    case SM_UINT16: return ((const uint16_t *)p)[i];
    case SM_INT32: return ((const int32_t *)p)[i];
    case SM_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
  }
}
static void int_store(sm_tensor *t, int64_t i, int64_t v) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SM_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case SM_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case SM_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case SM_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SM_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
  }
}

static sm_status *sdb_compute(const void *state, sm_kctx *ctx) {
  const sdb_state *st = state;
  const sm_tensor *isz = sm__kctx_input(ctx, 0), *boxes = sm__kctx_input(ctx, 1);
  char b[96];
  int dt = sm_tensor_dtype(isz);
  if (dt != SM_UINT8 && dt != SM_INT8 && dt != SM_INT16 && dt != SM_UINT16 && dt != SM_INT32 && dt != SM_UINT32 && dt != SM_INT64 &&
      dt != SM_UINT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "image_size must be an integer tensor, not %s", sm_dtype_name(dt));
  philox gen = st->gen;
  if (st->kind != SDB_STATELESS) /* ReserveSamples32(4 * max_attempts): max_attempts blocks a run, as TF before its checks */
    philox_skip(&gen, atomic_fetch_add(st->used, (uint64_t)st->max_attempts));
  if (st->kind == SDB_STATELESS) {
    const sm_tensor *seed = sm__kctx_input(ctx, 3);
    if (sm_tensor_rank(seed) != 1 || sm_tensor_dims(seed)[0] != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "seed must have shape [2], not %s", sm_shape_str(sm_tensor_rank(seed), sm_tensor_dims(seed), b, sizeof b));
    int sdt = sm_tensor_dtype(seed);
    if (sdt != SM_INT32 && sdt != SM_INT64) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid seed type: %s", sm_dtype_numpy_name(sdt));
    gen = philox_from_seeds((uint64_t)int_elem(seed, 0), (uint64_t)int_elem(seed, 1));
  }
  if (sm_tensor_rank(isz) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "image_size must be 1-dimensional%s", sm_shape_str(sm_tensor_rank(isz), sm_tensor_dims(isz), b, sizeof b));
  if (sm_tensor_dims(isz)[0] != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "image_size must contain 3 elements%s", sm_shape_str(1, sm_tensor_dims(isz), b, sizeof b));
  uint64_t hr = (uint64_t)int_elem(isz, 0), wr = (uint64_t)int_elem(isz, 1);
  if (hr >= INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "image height cannot be >= int32 max");
  if (wr >= INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "image width cannot be >= int32 max");
  const int height = (int)hr, width = (int)wr;
  if (sm_tensor_rank(boxes) != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "input boxes must be 3-dimensional [batch, num_boxes, coords]: %s",
                         sm_shape_str(sm_tensor_rank(boxes), sm_tensor_dims(boxes), b, sizeof b));
  if (sm_tensor_dims(boxes)[2] != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "bounding boxes must have shape [4] or [*, 4], got %s", sm_shape_str(3, sm_tensor_dims(boxes), b, sizeof b));
  if (sm_tensor_dtype(boxes) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "bounding boxes must be float32");
  float min_cov = st->min_covered;
  if (st->kind != SDB_V1) {
    const sm_tensor *mc = sm__kctx_input(ctx, 2);
    if (sm_tensor_rank(mc) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "min_object_covered must be 0-D, got shape %s", sm_shape_str(sm_tensor_rank(mc), sm_tensor_dims(mc), b, sizeof b));
    if (sm_tensor_dtype(mc) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "min_object_covered must be float32");
    min_cov = *(const float *)sm_tensor_data(mc);
    if (!(min_cov >= 0)) return sm_status_new(SM_INVALID_ARGUMENT, "Min object covered must be non-negative: %g", (double)min_cov);
  }
  int64_t nb = sm_tensor_num_elements(boxes) / 4;
  sm_status *s = NULL;
  rect *rects = sm__kctx_scratch(ctx, (size_t)(nb + 1) * sizeof(rect), &s);
  if (!rects) return s;
  const float *bx = sm_tensor_data(boxes);
  for (int64_t i = 0; i < nb; i++) {
    for (int k = 0; k < 4; k++)
      if (!(bx[i * 4 + k] >= 0.0f && bx[i * 4 + k] <= 1.0f)) {
        float bad = bx[i * 4 + k];
        sm__kctx_scratch_free(ctx, rects);
        return sm_status_new(SM_INVALID_ARGUMENT, "All bounding box coordinates must be in [0.0, 1.0]: %g", (double)bad);
      }
    rects[i] = (rect){f2i(bx[i * 4 + 1] * (float)width), f2i(bx[i * 4 + 0] * (float)height), f2i(bx[i * 4 + 3] * (float)width),
                      f2i(bx[i * 4 + 2] * (float)height)};
  }
  const rect image = {0, 0, width, height};
  if (nb == 0) {
    if (!st->use_image) {
      sm__kctx_scratch_free(ctx, rects);
      return sm_status_new(SM_INVALID_ARGUMENT, "No bounding boxes provided as input. One must enable use_image_if_no_bounding_boxes "
                                                "if you wish to not provide any bounding boxes.");
    }
    rects[nb++] = image;
  }
  single sp = {&gen, {0}, 4};
  rect crop = image;
  int found = 0;
  for (int i = 0; i < st->max_attempts && !found; i++) {
    const float ar = rand_float(&sp) * (st->aspect[1] - st->aspect[0]) + st->aspect[0];
    rect c;
    if (random_crop(width, height, st->area[0], st->area[1], ar, &sp, &c) && covers(c, min_cov, rects, nb)) crop = c, found = 1;
  }
  sm__kctx_scratch_free(ctx, rects);
  sm_tensor *begin, *size, *bb;
  if ((s = sm__kctx_alloc_output(ctx, 0, dt, 1, (int64_t[]){3}, &begin)) || (s = sm__kctx_alloc_output(ctx, 1, dt, 1, (int64_t[]){3}, &size)) ||
      (s = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 3, (int64_t[]){1, 1, 4}, &bb)))
    return s;
  int_store(begin, 0, crop.y0), int_store(size, 0, crop.y1 - crop.y0);
  int_store(begin, 1, crop.x0), int_store(size, 1, crop.x1 - crop.x0);
  int_store(begin, 2, 0), int_store(size, 2, -1);
  float *o = sm_tensor_data(bb);
  o[0] = (float)crop.y0 / (float)height, o[1] = (float)crop.x0 / (float)width;
  o[2] = (float)crop.y1 / (float)height, o[3] = (float)crop.x1 / (float)width;
  return NULL;
}

/* ---- ExtractGlimpse / ExtractGlimpseV2 ------------------------------------------------------------ */

enum { NOISE_UNIFORM, NOISE_GAUSSIAN, NOISE_ZERO };

typedef struct glimpse_state {
  int version, normalized, centered, noise;
  philox gen;             /* the noise: TF's Eigen generators seed from the clock; here the node's hash */
  _Atomic uint64_t *used; /* Philox calls of earlier runs */
} glimpse_state;

static void glimpse_release(void *p) {
  glimpse_state *st = p;
  if (st) free(st->used);
  free(st);
}

static sm_status *glimpse_prepare_op(const sm_node *node, void **state, int version) {
  glimpse_state *st = calloc(1, sizeof *st);
  if (!st || !(st->used = calloc(1, sizeof *st->used))) {
    if (st) free(st);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  }
  st->version = version, st->normalized = 1, st->centered = 1;
  int uniform = 1;
  const char *nz = version == 2 ? "uniform" : "";
  size_t nl = strlen(nz);
  sm_status *s = NULL;
  if (sm__node_attr(node, "normalized")) s = sm__node_attr_bool(node, "normalized", &st->normalized);
  if (!s && sm__node_attr(node, "centered")) s = sm__node_attr_bool(node, "centered", &st->centered);
  if (!s && sm__node_attr(node, "uniform_noise")) s = sm__node_attr_bool(node, "uniform_noise", &uniform);
  if (!s && sm__node_attr(node, "noise")) s = sm__node_attr_string(node, "noise", &nz, &nl);
  if (!s && uniform && nl && !(nl == 7 && !memcmp(nz, "uniform", 7)))
    s = sm_status_new(SM_INVALID_ARGUMENT, "The uniform_noise and noise could not be specified at the same time");
  if (!s) {
    if (nl == 0) st->noise = uniform ? NOISE_UNIFORM : NOISE_GAUSSIAN;
    else if (nl == 7 && !memcmp(nz, "uniform", 7)) st->noise = NOISE_UNIFORM;
    else if (nl == 8 && !memcmp(nz, "gaussian", 8)) st->noise = NOISE_GAUSSIAN;
    else if (nl == 4 && !memcmp(nz, "zero", 4)) st->noise = NOISE_ZERO;
    else s = sm_status_new(SM_INVALID_ARGUMENT, "The noise could only be uniform, gaussian, or zero, got%.*s", (int)(nl > 40 ? 40 : nl), nz);
  }
  if (s) {
    glimpse_release(st);
    return s;
  }
  uint64_t h = 1469598103934665603ull;
  for (const char *p = sm__node_name(node); *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  st->gen = philox_seeded(h, h * 0x9e3779b97f4a7c15ull);
  *state = st;
  return NULL;
}
static sm_status *glimpse1_prepare(const sm_node *n, void **s) { return glimpse_prepare_op(n, s, 1); }
static sm_status *glimpse2_prepare(const sm_node *n, void **s) { return glimpse_prepare_op(n, s, 2); }

/* The noise under a glimpse that leaves the image (TF's draws are from an unseeded generator, so
 * only their distribution is TF's): uniform over [min, max) of the image, or per channel a
 * gaussian of the channel's mean and deviation clamped to its [min, max]; or zeros. */
static void glimpse_noise(const glimpse_state *st, single *sp, const float *img, int64_t ih, int64_t iw, int64_t c, float *o, int64_t oh,
                          int64_t ow) {
  int64_t n = ih * iw, on = oh * ow;
  if (st->noise == NOISE_ZERO) {
    memset(o, 0, (size_t)(on * c) * sizeof(float));
    return;
  }
  if (st->noise == NOISE_UNIFORM) {
    float mn = img[0], mx = img[0];
    for (int64_t i = 1; i < n * c; i++) mn = img[i] < mn ? img[i] : mn, mx = img[i] > mx ? img[i] : mx;
    float range = mx - mn;
    for (int64_t i = 0; i < on * c; i++) {
      uint32_t b = 0x3f800000u | (single_next(sp) & 0x7fffffu);
      float u;
      memcpy(&u, &b, 4);
      o[i] = mn + (u - 1.0f) * range;
    }
    return;
  }
  for (int64_t ch = 0; ch < c; ch++) {
    double sum = 0, sq = 0;
    float mn = img[ch], mx = img[ch];
    for (int64_t i = 0; i < n; i++) {
      float v = img[i * c + ch];
      sum += v, mn = v < mn ? v : mn, mx = v > mx ? v : mx;
    }
    double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) sq += (img[i * c + ch] - mean) * (img[i * c + ch] - mean);
    float sigma = (float)sqrt(sq / (double)n);
    for (int64_t i = 0; i < on; i++) {
      double u1 = (single_next(sp) + 1.0) / 4294967297.0, u2 = single_next(sp) / 4294967296.0;
      float g = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
      float v = (float)mean + g * sigma;
      o[i * c + ch] = v > mx ? mx : v < mn ? mn : v;
    }
  }
}

static sm_status *glimpse_compute(const void *state, sm_kctx *ctx) {
  const glimpse_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0), *size = sm__kctx_input(ctx, 1), *offs = sm__kctx_input(ctx, 2);
  char b[96];
  if (sm_tensor_rank(in) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional (batch_size, height, width, depth)%s", sm_shape_str(sm_tensor_rank(in), sm_tensor_dims(in), b, sizeof b));
  if (sm_tensor_dtype(in) != SM_FLOAT || sm_tensor_dtype(offs) != SM_FLOAT || sm_tensor_dtype(size) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "ExtractGlimpse takes float32 input and offsets and an int32 size");
  const int64_t *d = sm_tensor_dims(in);
  if (sm_tensor_rank(size) != 1 || sm_tensor_dims(size)[0] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a vector of size 2 (height, width)%s",
                         sm_shape_str(sm_tensor_rank(size), sm_tensor_dims(size), b, sizeof b));
  const int32_t *sz = sm_tensor_data(size);
  int64_t oh = sz[0], ow = sz[1];
  if (oh < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Expected a non-negative size, got %" PRId64, oh);
  if (ow < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Expected a non-negative size, got %" PRId64, ow);
  if (sm_tensor_rank(offs) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be a matrix%s", sm_shape_str(sm_tensor_rank(offs), sm_tensor_dims(offs), b, sizeof b));
  if (sm_tensor_dims(offs)[0] != d[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "first dimension should be batch%s", sm_shape_str(2, sm_tensor_dims(offs), b, sizeof b));
  if (sm_tensor_dims(offs)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "second dimension should be of size 2 (y,x)%s", sm_shape_str(2, sm_tensor_dims(offs), b, sizeof b));
  sm_tensor *y;
  int64_t od[4] = {d[0], oh, ow, d[3]};
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 4, od, &y);
  if (s || sm_tensor_num_elements(y) == 0) return s;
  const int64_t ih = d[1], iw = d[2], c = d[3];
  if (ih <= 0 || iw <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "ExtractGlimpse of an empty image (%" PRId64 "x%" PRId64 ")", ih, iw);
  const float *x = sm_tensor_data(in), *of = sm_tensor_data(offs);
  float *o = sm_tensor_data(y);
  philox gen = st->gen;
  philox_skip(&gen, atomic_fetch_add(st->used, (uint64_t)(d[0] * oh * ow * c)));
  single sp = {&gen, {0}, 4};
  for (int64_t bi = 0; bi < d[0]; bi++) {
    float fx = of[bi * 2 + 1], fy = of[bi * 2]; /* Eigen's (x, y) */
    if (st->version == 1) {
      if (st->normalized) fx *= (float)iw, fy *= (float)ih;
      if (st->centered) {
        fx /= 2.0f, fy /= 2.0f;
        fx += (float)iw / 2.0f, fy += (float)ih / 2.0f;
      }
      fx -= (float)ow / 2.0f, fy -= (float)oh / 2.0f;
    } else if (st->normalized) {
      fx *= (float)iw, fy *= (float)ih;
      if (st->centered) {
        fx /= 2.0f, fy /= 2.0f;
        fx += (float)iw / 2.0f, fy += (float)ih / 2.0f;
        fx -= (float)ow / 2.0f, fy -= (float)oh / 2.0f;
      }
    } else if (st->centered) {
      fx += (float)iw / 2.0f, fy += (float)ih / 2.0f;
    }
    /* (Index)x: truncation; a float beyond the int64 range is clamped (undefined in C++) */
    const int64_t offx = fx != fx ? 0 : fx >= 9e18f ? INT64_MAX / 4 : fx <= -9e18f ? -INT64_MAX / 4 : (int64_t)fx;
    const int64_t offy = fy != fy ? 0 : fy >= 9e18f ? INT64_MAX / 4 : fy <= -9e18f ? -INT64_MAX / 4 : (int64_t)fy;
    int64_t gw = ow, gh = oh, sx = offx, sy = offy, ex = ow, ey = oh, bx = 0, by = 0;
    int partial = 0;
    if (offx < 0) {
      sx = 0, gw = ow + offx > 0 ? ow + offx : 0, ex = gw, bx = ow - gw, partial = 1;
    } else if (offx + ow >= iw) {
      gw = iw - offx > 0 ? iw - offx : 0, ex = gw, partial = 1;
    }
    if (offy < 0) {
      sy = 0, gh = oh + offy > 0 ? oh + offy : 0, ey = gh, by = oh - gh, partial = 1;
    } else if (offy + oh >= ih) {
      gh = ih - offy > 0 ? ih - offy : 0, ey = gh, partial = 1;
    }
    if (ex > iw) ex = iw;
    if (ey > ih) ey = ih;
    const float *img = x + bi * ih * iw * c;
    float *out = o + bi * oh * ow * c;
    if (partial) {
      glimpse_noise(st, &sp, img, ih, iw, c, out, oh, ow);
      if (gw == 0 || gh == 0) continue;
    }
    for (int64_t r = 0; r < ey; r++)
      memcpy(out + ((by + r) * ow + bx) * c, img + ((sy + r) * iw + sx) * c, (size_t)(ex * c) * sizeof(float));
  }
  return NULL;
}

const sm_kernel sm_kernels_image_random[] = {
    {"FractionalMaxPool", fmax_prepare, fpool_compute, fpool_release, 0},
    {"FractionalAvgPool", favg_prepare, fpool_compute, fpool_release, 0},
    {"SampleDistortedBoundingBox", sdb_v1_prepare, sdb_compute, sdb_release, 0},
    {"SampleDistortedBoundingBoxV2", sdb_v2_prepare, sdb_compute, sdb_release, 0},
    {"StatelessSampleDistortedBoundingBox", sdb_sl_prepare, sdb_compute, sdb_release, 0},
    {"ExtractGlimpse", glimpse1_prepare, glimpse_compute, glimpse_release, 0},
    {"ExtractGlimpseV2", glimpse2_prepare, glimpse_compute, glimpse_release, 0},
    {0},
};
