/* nn_fuse_norm.c - the per-element chains of a Transformer layer fused into one pass each: the
 * graph rewrite rules (sm_rewrites_nn_fuse_norm, run by the plan's rewrite pass,
 * src/runtime/rewrite.h) and the kernels of the nodes they emit (_SmLayerNorm, _SmGeluErf: system
 * ops of src/graph/builtin_ops.c, never in a GraphDef).
 *
 * LayerNorm: Keras 3's LayerNormalization (center and scale on) exports, for x and axes A,
 *   m = Mean(x, A, keep_dims) ; sd = SquaredDifference(x, StopGradient(m)) [or (x, m)]
 *   v = Mean(sd, A, keep_dims) ; r = Rsqrt(AddV2(v, eps)) ; s = Mul(r, gamma)
 *   y = AddV2(Mul(x, s), AddV2(Mul(Neg(m), s), beta))
 * (operands of Mul / AddV2 in either order), 12 nodes and 6 full-size temporaries. It becomes
 *   y = _SmLayerNorm(x, A, A', eps, gamma, beta)
 * which computes, per group of the trailing axes A (checked at run time: the two Means' axes must
 * be the same trailing axes of x, eps one element, gamma and beta per group element (shape the
 * trailing dims with leading 1s) or one element; anything else fails the run naming the node,
 * as the fused kernel cannot compute it), the same float operations in the same order: s =
 * rsqrt(v + eps) * gamma, y = x * s + (-m * s + beta). The two means accumulate in double (TF's
 * float reduction sums in another order: the results agree within float rounding).
 *
 * erf GELU: 0.5 x (1 + erf(x / sqrt 2)) spelt with scalar constants, as Keras' approximate=False
 * gelu and BERT's code write it:
 *   y = Mul(Mul(c0, v), AddV2(c2, Erf(Mul(v, c1))))  [v optionally BiasAdd(x, bias), NHWC]
 * becomes y = _SmGeluErf(x, [bias,] c0, c1, c2), the same float operations per element (so the
 * result is TF's to the bit: the Erf is vmath's, as the Erf kernel's). c0, c1, c2 must be scalar
 * (rank 0) float Const nodes, not fed (rule); the kernel checks them again.
 *
 * Both rules apply only to float chains whose intermediates are read by chain nodes alone (not
 * fetched, not fed, no control edges: sm__rewrite_can_fuse), with no TF1 ref reads. The kernels
 * write their output over x when the executor allows it (sm__kctx_reuse_input: a LayerNorm row
 * is read whole before it is written) and split the rows over the pool. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vmath.h"
#include "graph/synth.h"
#include "ops/math_int.h" /* SM_MATH_PAR_MIN */
#include "ops/nn_internal.h"
#include "runtime/kernel.h"
#include "runtime/rewrite.h"

/* ---- _SmLayerNorm ------------------------------------------------------------------------------- */
typedef struct ln_job {
  const float *x, *gamma, *beta;
  float *y;
  int64_t g;              /* group (row) length */
  int64_t gstep, bstep;   /* 1: per group element; 0: one value */
  float eps;
} ln_job;

/* A sum in eight float lanes the compiler vectorises, the lanes then added in double. */
#define ALWAYS static inline __attribute__((always_inline))
ALWAYS double lanes_sum(const float *x, int64_t g, float sub) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double tail = 0;
  int64_t i = 0;
  if (sub != sub) { /* the plain sum */
    for (; i + 8 <= g; i += 8)
      for (int l = 0; l < 8; l++) acc[l] += x[i + l];
    for (; i < g; i++) tail += x[i];
  } else { /* the sum of squared differences from sub (SquaredDifference's float d * d) */
    for (; i + 8 <= g; i += 8)
      for (int l = 0; l < 8; l++) {
        float d = x[i + l] - sub;
        acc[l] += d * d;
      }
    for (; i < g; i++) {
      float d = x[i] - sub;
      tail += d * d;
    }
  }
  for (int l = 0; l < 8; l++) tail += acc[l];
  return tail;
}

ALWAYS void ln_rows_body(void *ctx, int64_t r0, int64_t r1) {
  const ln_job *j = ctx;
  const int64_t g = j->g;
  for (int64_t r = r0; r < r1; r++) {
    const float *x = j->x + r * g;
    float *y = j->y + r * g;
    float m = (float)(lanes_sum(x, g, NAN) / (double)g);
    float v = (float)(lanes_sum(x, g, m) / (double)g);
    float rs = 1.0f / sqrtf(v + j->eps), nm = -m;
    /* x may be y: x[i] is read before y[i] is written */
    if (j->gstep && j->bstep) {
      const float *gm = j->gamma, *bt = j->beta;
      for (int64_t i = 0; i < g; i++) {
        float s = rs * gm[i];
        y[i] = x[i] * s + (nm * s + bt[i]);
      }
    } else {
      for (int64_t i = 0; i < g; i++) {
        float s = rs * j->gamma[i * j->gstep];
        y[i] = x[i] * s + (nm * s + j->beta[i * j->bstep]);
      }
    }
  }
}

/* The rows built for baseline x86-64 and for AVX2 (picked at run time where the CPU has it), the
 * latter with GCC's "cheap" vectoriser cost model, which the loops over a row need (x may be y:
 * a runtime overlap check). No FMA in the target: the bits of the unfused Mul and AddV2 stay. */
static void ln_rows_base(void *ctx, int64_t r0, int64_t r1) { ln_rows_body(ctx, r0, r1); }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__clang__)
__attribute__((target("avx2")))
#else
__attribute__((target("avx2"), optimize("vect-cost-model=cheap")))
#endif
static void ln_rows_avx2(void *ctx, int64_t r0, int64_t r1) {
  ln_rows_body(ctx, r0, r1);
}
#define LN_ROWS (sm__vmath_avx2() ? ln_rows_avx2 : ln_rows_base)
#else
#define LN_ROWS ln_rows_base
#endif

static sm_status *read_axes(const sm_tensor *t, int rank, int *first) {
  int64_t n = sm_tensor_num_elements(t), seen = 0;
  int dt = sm_tensor_dtype(t);
  if ((dt != SM_INT32 && dt != SM_INT64) || sm_tensor_rank(t) > 1 || n < 1 || n > rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: the reduction axes must be 1 to %d int32/int64 values",
                         rank);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = dt == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || (seen >> a) & 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: reduction axis %lld is out of range or repeated",
                           (long long)a);
    seen |= (int64_t)1 << a;
  }
  *first = rank - (int)n;
  if (seen != ((((int64_t)1 << rank) - 1) & ~(((int64_t)1 << *first) - 1)))
    return sm_status_new(SM_UNIMPLEMENTED, "fused LayerNorm: the reduction axes must be the trailing axes of x");
  return NULL;
}

/* gamma / beta: one value (step 0) or one per group element, shaped as x's trailing dims. */
static sm_status *per_group(const sm_tensor *t, const sm_tensor *x, int first, int64_t g, const char *what,
                            int64_t *step) {
  int64_t n = sm_tensor_num_elements(t);
  int r = sm_tensor_rank(t), rx = sm_tensor_rank(x);
  if (sm_tensor_dtype(t) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: %s is not float", what);
  if (n == 1) {
    *step = 0;
    return NULL;
  }
  int ok = n == g && r <= rx;
  for (int i = 0; ok && i < r; i++) {
    int ax = rx - r + i;
    ok = ax >= first ? sm_tensor_dims(t)[i] == sm_tensor_dims(x)[ax] : sm_tensor_dims(t)[i] == 1;
  }
  if (!ok)
    return sm_status_new(SM_UNIMPLEMENTED, "fused LayerNorm: %s must have one value or one per normalised element",
                         what);
  *step = 1;
  return NULL;
}

static sm_status *ln_prepare(const sm_node *n, void **state) {
  (void)n;
  *state = NULL;
  return NULL;
}

static sm_status *ln_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *eps = sm__kctx_input(ctx, 3);
  const sm_tensor *gamma = sm__kctx_input(ctx, 4), *beta = sm__kctx_input(ctx, 5);
  int rank = sm_tensor_rank(x), first, first2;
  if (sm_tensor_dtype(x) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: x is not float");
  if (rank < 1) return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: x is a scalar");
  sm_status *st = read_axes(sm__kctx_input(ctx, 1), rank, &first);
  if (!st) st = read_axes(sm__kctx_input(ctx, 2), rank, &first2);
  if (st) return st;
  if (first != first2) return sm_status_new(SM_UNIMPLEMENTED, "fused LayerNorm: the mean and variance axes differ");
  if (sm_tensor_dtype(eps) != SM_FLOAT || sm_tensor_num_elements(eps) != 1 || sm_tensor_rank(eps) > rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "fused LayerNorm: epsilon must be one float of rank <= x's");
  int64_t g = 1, rows = 1;
  for (int i = 0; i < rank; i++) *(i >= first ? &g : &rows) *= sm_tensor_dims(x)[i];
  ln_job j = {sm_tensor_data(x), sm_tensor_data(gamma), sm_tensor_data(beta), NULL, g, 0, 0,
              *(const float *)sm_tensor_data(eps)};
  if ((st = per_group(gamma, x, first, g, "gamma", &j.gstep)) || (st = per_group(beta, x, first, g, "beta", &j.bstep)))
    return st;
  sm_tensor *y = sm__kctx_reuse_input(ctx, 0, 0, SM_FLOAT, rank, sm_tensor_dims(x));
  if (!y && (st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, rank, sm_tensor_dims(x), &y))) return st;
  if (g == 0 || rows == 0) return NULL;
  j.y = sm_tensor_data(y);
  double work = (double)rows * (double)g * 8;
  sm__parallel_for(work < SM_NN_PAR_MIN_MACS ? NULL : sm__kctx_pool(ctx), rows, 1, LN_ROWS, &j);
  return NULL;
}

/* ---- _SmGeluErf ----------------------------------------------------------------------------------- */
typedef struct gelu_job {
  const float *x, *bias; /* bias: NULL, or bc values added along the last axis */
  float *y;
  int64_t n, bc; /* elements; row length (the bias's, or n) */
  float c0, c1, c2;
} gelu_job;

#define GELU_BLOCK 1024

/* Units of at most GELU_BLOCK elements within one row of bc (the whole tensor one row without a
 * bias), so that the bias is read contiguously; each one pass of vmath's GELU. */
static void gelu_blocks(void *ctx, int64_t u0, int64_t u1) {
  const gelu_job *j = ctx;
  int64_t per = (j->bc + GELU_BLOCK - 1) / GELU_BLOCK; /* units per row */
  for (int64_t u = u0; u < u1; u++) {
    int64_t row = u / per, col = (u % per) * GELU_BLOCK;
    int64_t len = j->bc - col < GELU_BLOCK ? j->bc - col : GELU_BLOCK, at = row * j->bc + col;
    sm__vgelu_erf_f32(j->x + at, j->bias ? j->bias + col : NULL, j->y + at, len, j->c0, j->c1, j->c2);
  }
}

static sm_status *gelu_prepare(const sm_node *n, void **state) {
  int64_t nb = 0;
  sm_status *st = sm__node_attr_int(n, "num_bias", &nb);
  if (st) return st;
  int *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *s = nb != 0;
  *state = s;
  return NULL;
}

static sm_status *gelu_compute(const void *state, sm_kctx *ctx) {
  int has_bias = *(const int *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *bias = has_bias ? sm__kctx_input(ctx, 1) : NULL;
  if (sm_tensor_dtype(x) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "fused GELU: x is not float");
  float c[3];
  for (int i = 0; i < 3; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, has_bias + 1 + i);
    if (sm_tensor_dtype(t) != SM_FLOAT || sm_tensor_num_elements(t) != 1 || sm_tensor_rank(t) > sm_tensor_rank(x))
      return sm_status_new(SM_UNIMPLEMENTED, "fused GELU: constant %d must be one float of rank <= x's", i);
    c[i] = *(const float *)sm_tensor_data(t);
  }
  int rank = sm_tensor_rank(x);
  gelu_job j = {sm_tensor_data(x), NULL, NULL, sm_tensor_num_elements(x), 0, c[0], c[1], c[2]};
  if (bias) { /* BiasAdd's checks and message */
    if (sm_tensor_dtype(bias) != SM_FLOAT || sm_tensor_rank(bias) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Biases must be 1D");
    if (rank < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor must be at least 2D");
    if (sm_tensor_dims(bias)[0] != sm_tensor_dims(x)[rank - 1])
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Must provide as many biases as the last dimension of the input tensor: %lld vs. %lld",
                           (long long)sm_tensor_dims(bias)[0], (long long)sm_tensor_dims(x)[rank - 1]);
    j.bias = sm_tensor_data(bias);
    j.bc = sm_tensor_dims(bias)[0];
  }
  sm_status *st = NULL;
  sm_tensor *y = sm__kctx_reuse_input(ctx, 0, 0, SM_FLOAT, rank, sm_tensor_dims(x));
  if (!y && (st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, rank, sm_tensor_dims(x), &y))) return st;
  if (j.n == 0 || (bias && j.bc == 0)) return NULL;
  j.y = sm_tensor_data(y);
  if (!bias) j.bc = j.n; /* one row */
  int64_t units = (j.n / j.bc) * ((j.bc + GELU_BLOCK - 1) / GELU_BLOCK);
  double work = (double)j.n * 16;
  sm__parallel_for(work < SM_NN_PAR_MIN_MACS ? NULL : sm__kctx_pool(ctx), units, 1, gelu_blocks, &j);
  return NULL;
}

/* ---- _SmBatchNorm ------------------------------------------------------------------------------- */
typedef struct sbn_state {
  float eps;
  int64_t c;          /* attr num_channels: the Reshapes' K */
  int64_t rank;       /* attr param_rank: their rank */
  int act;            /* 0 none, 1 Relu, 2 Relu6 */
  pthread_mutex_t mu; /* runs of one plan may overlap */
  float *key;         /* gamma, beta, mean, variance of the last run (4c), NULL before the first */
  sm_tensor *st;      /* their scale and shift (2c) */
} sbn_state;

static void sbn_release(void *state) {
  sbn_state *s = state;
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free(s->key);
  sm_tensor_free(s->st);
  free(s);
}

static sm_status *sbn_prepare(const sm_node *n, void **state) {
  sbn_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  pthread_mutex_init(&s->mu, NULL);
  const char *act;
  size_t len;
  sm_status *st = sm__node_attr_float(n, "epsilon", &s->eps);
  if (!st) st = sm__node_attr_int(n, "num_channels", &s->c);
  if (!st) st = sm__node_attr_int(n, "param_rank", &s->rank);
  if (!st) st = sm__node_attr_string(n, "activation_mode", &act, &len);
  if (!st && !(len == 8 && !memcmp(act, "Identity", 8)) && !(s->act = len == 4 && !memcmp(act, "Relu", 4) ? 1
                                                                    : len == 5 && !memcmp(act, "Relu6", 5) ? 2
                                                                                                           : 0))
    st = sm_status_new(SM_UNIMPLEMENTED, "activation_mode '%.*s' is not supported (Identity, Relu, Relu6)",
                       (int)(len > 32 ? 32 : len), act);
  if (!st && (s->c < 1 || s->rank < 1 || s->rank > 4))
    st = sm_status_new(SM_INVALID_ARGUMENT, "num_channels %lld / param_rank %lld out of range", (long long)s->c,
                       (long long)s->rank);
  if (st) {
    sbn_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* The scale and shift of gamma, beta, mean, variance (v, c each): the last run's when all four are
 * the same bytes (a reference to them in *out), else computed and kept. */
static sm_status *sbn_scale_shift(sbn_state *p, const sm_tensor *const *v, sm_tensor **out) {
  size_t row = (size_t)p->c * sizeof(float);
  sm_status *st = NULL;
  pthread_mutex_lock(&p->mu);
  int hit = p->key != NULL;
  for (int i = 0; i < 4 && hit; i++) hit = !memcmp(p->key + i * p->c, sm_tensor_data(v[i]), row);
  if (!hit) {
    sm_tensor *t = NULL;
    if (!p->key && !(p->key = malloc(4 * row)))
      st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the BatchNorm's parameters");
    if (!st) st = sm_tensor_new(SM_FLOAT, 1, (int64_t[]){2 * p->c}, &t);
    if (!st) {
      const float *g = sm_tensor_data(v[0]), *b = sm_tensor_data(v[1]), *m = sm_tensor_data(v[2]),
                  *var = sm_tensor_data(v[3]);
      float *sc = sm_tensor_data(t), *sh = sc + p->c;
      for (int64_t k = 0; k < p->c; k++) { /* the graph's float operations: Rsqrt, Mul, Mul, Sub */
        sc[k] = 1.0f / sqrtf(var[k] + p->eps) * g[k];
        sh[k] = b[k] - m[k] * sc[k];
      }
      for (int i = 0; i < 4; i++) memcpy(p->key + i * p->c, sm_tensor_data(v[i]), row);
      sm_tensor_free(p->st);
      p->st = t;
    } else if (p->key) { /* nothing valid kept */
      sm_tensor_free(p->st);
      p->st = NULL;
      free(p->key);
      p->key = NULL;
    }
  }
  if (!st) *out = sm_tensor_ref(p->st);
  pthread_mutex_unlock(&p->mu);
  return st;
}

typedef struct sbn_job {
  const float *x, *s, *t;
  float *y;
  int64_t c;
  int act;
} sbn_job;

/* y = x * s + t [Relu|Relu6] over one row of c channels: blocks of 16 (a fixed trip count that GCC's
 * -O2 cost model vectorises), then the rest. Relu keeps NaN, as the Relu kernel does. */
#define SBN_BLOCK 16
#define SBN_LOOP(lo, hi, EXPR)                         \
  for (int64_t k = (lo); k < (hi); k++) {              \
    float v = x[k] * s[k] + t[k];                      \
    y[k] = EXPR;                                       \
  }
#define SBN_ROW(EXPR)                                                 \
  do {                                                                \
    int64_t k0 = 0;                                                   \
    for (; k0 + SBN_BLOCK <= c; k0 += SBN_BLOCK) SBN_LOOP(k0, k0 + SBN_BLOCK, EXPR) \
    SBN_LOOP(k0, c, EXPR)                                             \
  } while (0)

static inline __attribute__((always_inline)) void sbn_body(void *ctx, int64_t begin, int64_t end) {
  const sbn_job *j = ctx;
  const float *s = j->s, *t = j->t;
  int64_t c = j->c;
  for (int64_t r = begin; r < end; r++) {
    const float *x = j->x + r * c;
    float *y = j->y + r * c;
    if (j->act == 0)
      SBN_ROW(v);
    else if (j->act == 1)
      SBN_ROW(v < 0 ? 0 : v);
    else
      SBN_ROW(v < 0 ? 0 : v > 6 ? 6 : v);
  }
}

static void sbn_rows(void *ctx, int64_t begin, int64_t end) { sbn_body(ctx, begin, end); }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* 8 lanes where the CPU has AVX2 (no FMA: the graph's Mul and Add round twice, so does this) */
__attribute__((target("avx2"))) static void sbn_rows_avx2(void *ctx, int64_t begin, int64_t end) {
  sbn_body(ctx, begin, end);
}
#endif

static sm_status *sbn_compute(const void *state, sm_kctx *ctx) {
  const sbn_state *p = state;
  static const char *const names[4] = {"gamma", "beta", "mean", "variance"};
  if (sm__kctx_num_inputs(ctx) != 5) return sm_status_new(SM_INVALID_ARGUMENT, "expected 5 inputs");
  const sm_tensor *x = sm__kctx_input(ctx, 0), *v[4];
  int rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  char sh[96];
  if (sm_tensor_dtype(x) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "x must be float");
  if (rank < p->rank || xd[rank - 1] != p->c)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "x%s does not keep its shape under the BatchNorm's per-channel scale of rank %lld and %lld "
                         "channels (the fused node cannot compute the broadcast TensorFlow would)",
                         sm_shape_str(rank, xd, sh, sizeof sh), (long long)p->rank, (long long)p->c);
  for (int i = 0; i < 4; i++) {
    v[i] = sm__kctx_input(ctx, 1 + i);
    if (sm_tensor_dtype(v[i]) != SM_FLOAT || sm_tensor_num_elements(v[i]) != p->c)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Input to reshape is a tensor with %lld values, but the requested shape has %lld (%s)",
                           (long long)sm_tensor_num_elements(v[i]), (long long)p->c, names[i]);
  }
  sm_tensor *stt = NULL;
  sm_status *st = sbn_scale_shift((sbn_state *)p, v, &stt); /* the cache is the one thing a run writes */
  if (st) return st;
  const float *s = sm_tensor_data(stt), *t = s + p->c;
  sm_tensor *y = sm__kctx_reuse_input(ctx, 0, 0, SM_FLOAT, rank, xd);
  if (!y && (st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, rank, xd, &y))) {
    sm_tensor_free(stt);
    return st;
  }
  int64_t rows = sm_tensor_num_elements(x) / p->c;
  sbn_job j = {sm_tensor_data(x), s, t, sm_tensor_data(y), p->c, p->act};
  int64_t grain = SM_MATH_PAR_MIN / p->c; /* a memory-bound pass: split as the elementwise ops it replaces */
  void (*fn)(void *, int64_t, int64_t) = sbn_rows;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (sm__vmath_avx2()) fn = sbn_rows_avx2;
#endif
  sm__parallel_for(sm__kctx_pool(ctx), rows, grain > 0 ? grain : 1, fn, &j);
  sm_tensor_free(stt);
  return NULL;
}

const sm_kernel sm_kernels_nn_fuse_norm[] = {
    {"_SmBatchNorm", sbn_prepare, sbn_compute, sbn_release, 0},
    {"_SmGeluErf", gelu_prepare, gelu_compute, free, 0},
    {"_SmLayerNorm", ln_prepare, ln_compute, free, 0},
    {0},
};

/* ---- the rules --------------------------------------------------------------------------------- */
static int op_is(const sm_node *n, const char *op) { return !strcmp(sm__node_op(n), op); }
static int same(sm_edge a, sm_edge b) { return a.node == b.node && a.index == b.index; }

/* The producer of e when it is a float node of op `op` (one output, n inputs); else -1. */
static int producer(const sm_rewrite *rw, sm_edge e, const char *op, int nin) {
  if (e.node < 0 || e.index != 0) return -1;
  const sm_node *n = sm__rewrite_node(rw, e.node);
  if (!n || !op_is(n, op) || sm__node_num_outputs(n) != 1 || sm__node_num_inputs(n) != nin ||
      sm__node_output_dtype(n, 0) != SM_FLOAT)
    return -1;
  return e.node;
}

/* Node id's two inputs as (an `op` node's output: *p, the other one): 1 when one fits. */
static int pick(const sm_rewrite *rw, int id, const char *op, int nin, int *p, sm_edge *other) {
  for (int k = 0; k < 2; k++)
    if ((*p = producer(rw, sm__rewrite_input(rw, id, k), op, nin)) >= 0) {
      *other = sm__rewrite_input(rw, id, 1 - k);
      return 1;
    }
  return 0;
}

/* A Mean with keep_dims over a float value. */
static int mean_keep(const sm_rewrite *rw, int id) {
  int keep = 0;
  sm_status *st = sm__node_attr_bool(sm__rewrite_node(rw, id), "keep_dims", &keep);
  sm_status_free(st);
  return !st && keep && sm__node_input_dtype(sm__rewrite_node(rw, id), 0) == SM_FLOAT;
}

static int no_ref_reads(const sm_rewrite *rw, const int *chain, int n) {
  for (int k = 0; k < n; k++)
    for (int i = 0; i < sm__node_num_inputs(sm__rewrite_node(rw, chain[k])); i++)
      if (sm__rewrite_reads_ref(rw, chain[k], i)) return 0;
  return 1;
}

static sm_status *emit(sm_rewrite *rw, const char *rule, const int *chain, int n, const char *op, const sm_edge *in,
                       int nin, int nbias, int tidx) {
  sm_node *f;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm__rewrite_node(rw, chain[n - 1])), op, &f);
  if (st) return st;
  for (int i = 0; i < nin && !st; i++) st = sm__synth_add_input(f, in[i]);
  if (!st) st = sm__synth_set_type(f, "T", SM_FLOAT);
  if (!st && nbias >= 0) st = sm__synth_set_int(f, "num_bias", nbias);
  if (!st && tidx) st = sm__synth_set_type(f, "Tidx", tidx);
  if (!st) st = sm__synth_finish(f);
  if (st) {
    sm__synth_free(f);
    return st;
  }
  return sm__rewrite_replace(rw, rule, chain, n, f);
}

/* The Means' axes: a Const (not fed) of negative axes -1..-k (any order, no repeats): trailing
 * whatever x's rank, so the kernel never meets axes it refuses. Positive axes (GroupNormalization's
 * reshaped [.., groups, ..] reductions) stay unfused. */
static sm_status *trailing_axes(const sm_rewrite *rw, sm_edge e, int *ok) {
  *ok = 0;
  sm_tensor *t;
  sm_status *st = sm__rewrite_const_value(rw, e, &t);
  if (st || !t) return st;
  int good = sm_tensor_rank(t) <= 1 && (sm_tensor_dtype(t) == SM_INT32 || sm_tensor_dtype(t) == SM_INT64);
  int64_t k = good ? sm_tensor_num_elements(t) : 0, seen = 0;
  good = good && k >= 1 && k <= 32;
  for (int64_t i = 0; good && i < k; i++) {
    int64_t a = sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i]
                                                : ((const int64_t *)sm_tensor_data(t))[i];
    good = a < 0 && a >= -k && !(seen & ((int64_t)1 << (-a - 1)));
    if (good) seen |= (int64_t)1 << (-a - 1);
  }
  sm_tensor_free(t);
  *ok = good;
  return NULL;
}

#define LN_RULE "Mean+SquaredDifference+Mean+AddV2+Rsqrt+Mul+Neg+Mul+AddV2+Mul+AddV2 (LayerNorm) -> _SmLayerNorm"
#define GELU_RULE "[BiasAdd+]Mul+Erf+AddV2+Mul+Mul (erf GELU) -> _SmGeluErf"

static sm_status *fuse_layer_norm(sm_rewrite *rw, int out) {
  const sm_node *o = sm__rewrite_node(rw, out);
  if (sm__node_num_inputs(o) != 2 || sm__node_num_outputs(o) != 1 || sm__node_output_dtype(o, 0) != SM_FLOAT)
    return NULL;
  for (int k = 0; k < 2; k++) {
    int mul2 = producer(rw, sm__rewrite_input(rw, out, k), "Mul", 2);
    int add1 = producer(rw, sm__rewrite_input(rw, out, 1 - k), "AddV2", 2);
    if (mul2 < 0 || add1 < 0) continue;
    for (int q = 0; q < 2; q++) {
      int s, r, mul1, neg, m, a, var, sd, sg = -1;
      sm_edge x = sm__rewrite_input(rw, mul2, 1 - q), gamma, beta, eps, sv;
      if ((s = producer(rw, sm__rewrite_input(rw, mul2, q), "Mul", 2)) < 0 || !pick(rw, s, "Rsqrt", 1, &r, &gamma) ||
          !pick(rw, add1, "Mul", 2, &mul1, &beta) || !pick(rw, mul1, "Neg", 1, &neg, &sv) || !same(sv, (sm_edge){s, 0}) ||
          (m = producer(rw, sm__rewrite_input(rw, neg, 0), "Mean", 2)) < 0 || !same(sm__rewrite_input(rw, m, 0), x) ||
          (a = producer(rw, sm__rewrite_input(rw, r, 0), "AddV2", 2)) < 0 || !pick(rw, a, "Mean", 2, &var, &eps) ||
          (sd = producer(rw, sm__rewrite_input(rw, var, 0), "SquaredDifference", 2)) < 0 ||
          !same(sm__rewrite_input(rw, sd, 0), x) || !mean_keep(rw, m) || !mean_keep(rw, var))
        continue;
      sm_edge mv = sm__rewrite_input(rw, sd, 1);
      if (!same(mv, (sm_edge){m, 0})) {
        if ((sg = producer(rw, mv, "StopGradient", 1)) < 0 || !same(sm__rewrite_input(rw, sg, 0), (sm_edge){m, 0}))
          continue;
      }
      int t1 = 0, t2 = 0;
      sm_status *ast = trailing_axes(rw, sm__rewrite_input(rw, m, 1), &t1);
      if (!ast && t1) ast = trailing_axes(rw, sm__rewrite_input(rw, var, 1), &t2);
      if (ast) return ast;
      if (!t1 || !t2) continue;
      int tidx = sm__node_input_dtype(sm__rewrite_node(rw, m), 1);
      if (tidx != sm__node_input_dtype(sm__rewrite_node(rw, var), 1) || (tidx != SM_INT32 && tidx != SM_INT64)) continue;
      int chain[12], n = 0;
      chain[n++] = m;
      if (sg >= 0) chain[n++] = sg;
      int rest[] = {sd, var, a, r, s, neg, mul1, add1, mul2, out};
      for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) chain[n++] = rest[i];
      if (!no_ref_reads(rw, chain, n) || !sm__rewrite_can_fuse(rw, chain, n)) continue;
      sm_edge in[6] = {x, sm__rewrite_input(rw, m, 1), sm__rewrite_input(rw, var, 1), eps, gamma, beta};
      return emit(rw, LN_RULE, chain, n, "_SmLayerNorm", in, 6, -1, tidx);
    }
  }
  return NULL;
}

/* A float scalar (rank 0) Const, not fed: broadcasting it never changes the shape. */
static sm_status *is_const(const sm_rewrite *rw, sm_edge e, int *ok) {
  *ok = 0;
  const sm_node *n = sm__rewrite_node(rw, e.node); /* NULL for e.node < 0 */
  if (!n || sm__node_output_dtype(n, 0) != SM_FLOAT) return NULL;
  sm_tensor *t;
  sm_status *st = sm__rewrite_const_value(rw, e, &t);
  if (st || !t) return st;
  *ok = sm_tensor_rank(t) == 0;
  sm_tensor_free(t);
  return NULL;
}

static sm_status *fuse_gelu(sm_rewrite *rw, int out) {
  const sm_node *o = sm__rewrite_node(rw, out);
  if (sm__node_num_inputs(o) != 2 || sm__node_num_outputs(o) != 1 || sm__node_output_dtype(o, 0) != SM_FLOAT)
    return NULL;
  for (int k = 0; k < 2; k++) {
    int a = producer(rw, sm__rewrite_input(rw, out, k), "AddV2", 2);
    int m0 = producer(rw, sm__rewrite_input(rw, out, 1 - k), "Mul", 2);
    int e, m1;
    sm_edge c2;
    if (a < 0 || m0 < 0 || !pick(rw, a, "Erf", 1, &e, &c2) ||
        (m1 = producer(rw, sm__rewrite_input(rw, e, 0), "Mul", 2)) < 0)
      continue;
    for (int p = 0; p < 4; p++) { /* v: the input m1 and m0 share */
      sm_edge v = sm__rewrite_input(rw, m1, p >> 1), c1 = sm__rewrite_input(rw, m1, 1 - (p >> 1));
      sm_edge w = sm__rewrite_input(rw, m0, p & 1), c0 = sm__rewrite_input(rw, m0, 1 - (p & 1));
      if (!same(v, w)) continue;
      int k0 = 0, k1 = 0, k2 = 0;
      sm_status *cst = is_const(rw, c0, &k0);
      if (!cst && k0) cst = is_const(rw, c1, &k1);
      if (!cst && k1) cst = is_const(rw, c2, &k2);
      if (cst) return cst;
      if (!k2) continue;
      int chain[6], n = 0;
      sm_edge in[5];
      int b = producer(rw, v, "BiasAdd", 2);
      if (b < 0) b = producer(rw, v, "BiasAddV1", 2);
      if (b >= 0) {
        int nchw = 1;
        sm_status *st = sm__nn_data_format(sm__rewrite_node(rw, b), 0, &nchw);
        sm_status_free(st);
        if (st || nchw) b = -1;
      }
      for (int with_bias = b >= 0; with_bias >= 0; with_bias--) {
        n = 0;
        int ni = 0;
        if (with_bias) {
          chain[n++] = b;
          in[ni++] = sm__rewrite_input(rw, b, 0);
          in[ni++] = sm__rewrite_input(rw, b, 1);
        } else {
          in[ni++] = v;
        }
        in[ni++] = c0, in[ni++] = c1, in[ni++] = c2;
        chain[n++] = m1, chain[n++] = e, chain[n++] = a, chain[n++] = m0, chain[n++] = out;
        if (no_ref_reads(rw, chain, n) && sm__rewrite_can_fuse(rw, chain, n)) {
          /* a Dense layer's product before it: the GELU as the product's epilogue (nn_matmul_ep.c) */
          int done = 0;
          sm_edge cs[3] = {c0, c1, c2};
          sm_status *st = sm__nn_ep_fuse_gelu(rw, chain, n, in[0], with_bias ? &in[1] : NULL, cs, &done);
          if (st || done) return st;
          return emit(rw, GELU_RULE, chain, n, "_SmGeluErf", in, ni, with_bias, 0);
        }
      }
    }
  }
  return NULL;
}

#define BN_RULE                                                                                            \
  "Reshape(x4)+AddV2+Rsqrt+Mul+Mul+Sub+Mul+AddV2[+Relu|Relu6] (Keras' inference BatchNorm) -> _SmBatchNorm"

/* x * s + t [-> Relu|Relu6] with s and t Keras 3's BatchNorm parameters (nn_internal.h): one pass
 * that computes s and t from the variables as the graph does. Offered the Mul of x (a BatchNorm
 * after a convolution was folded into it first: nn_fold.c). */
static sm_status *fuse_batch_norm(sm_rewrite *rw, int mul) {
  const sm_node *mn = sm__rewrite_node(rw, mul);
  if (sm__node_num_inputs(mn) != 2 || sm__node_num_outputs(mn) != 1 || sm__node_output_dtype(mn, 0) != SM_FLOAT)
    return NULL;
  int add = sm__rewrite_only_reader(rw, (sm_edge){mul, 0});
  const sm_node *an = add >= 0 ? sm__rewrite_node(rw, add) : NULL;
  if (!an || !(op_is(an, "AddV2") || op_is(an, "Add")) || sm__node_num_inputs(an) != 2 ||
      sm__node_output_dtype(an, 0) != SM_FLOAT)
    return NULL;
  int ak = same(sm__rewrite_input(rw, add, 0), (sm_edge){mul, 0}) ? 0 : 1;
  sm_edge shift = sm__rewrite_input(rw, add, 1 - ak);
  if (same(shift, (sm_edge){mul, 0})) return NULL;
  for (int k = 0; k < 2; k++) {
    sm_edge x = sm__rewrite_input(rw, mul, 1 - k);
    sm__nn_bn_params bp;
    int ok = 0;
    sm_status *st = sm__nn_bn_params_match(rw, sm__rewrite_input(rw, mul, k), shift, &bp, &ok);
    if (st) return st;
    if (!ok || !bp.rank || same(x, sm__rewrite_input(rw, mul, k))) continue; /* the Reshape form only */
    int chain[16 + 3], n = 0;
    for (int i = 0; i < bp.n; i++) chain[n++] = bp.nodes[i];
    chain[n++] = mul, chain[n++] = add;
    const char *act = "Identity";
    int r = sm__rewrite_only_reader(rw, (sm_edge){add, 0});
    const sm_node *rn = r >= 0 ? sm__rewrite_node(rw, r) : NULL;
    if (rn && (op_is(rn, "Relu") || op_is(rn, "Relu6")) && sm__node_num_inputs(rn) == 1 &&
        sm__node_output_dtype(rn, 0) == SM_FLOAT) {
      chain[n++] = r;
      act = sm__node_op(rn);
    }
    if (!no_ref_reads(rw, chain, n)) return NULL;
    if (!sm__rewrite_can_fuse(rw, chain, n) && strcmp(act, "Identity")) n--, act = "Identity";
    if (!sm__rewrite_can_fuse(rw, chain, n)) return NULL;
    sm_node *f;
    sm_edge in[5] = {x, bp.gamma, bp.beta, bp.mean, bp.var};
    if ((st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm__rewrite_node(rw, chain[n - 1])), "_SmBatchNorm",
                            &f)))
      return st;
    for (int i = 0; i < 5 && !st; i++) st = sm__synth_add_input(f, in[i]);
    if (!st) st = sm__synth_set_type(f, "T", SM_FLOAT);
    if (!st) st = sm__synth_set_float(f, "epsilon", bp.eps);
    if (!st) st = sm__synth_set_int(f, "num_channels", bp.c);
    if (!st) st = sm__synth_set_int(f, "param_rank", bp.rank);
    if (!st) st = sm__synth_set_string(f, "activation_mode", act);
    if (!st) st = sm__synth_finish(f);
    if (st) {
      sm__synth_free(f);
      return st;
    }
    return sm__rewrite_replace(rw, BN_RULE, chain, n, f);
  }
  return NULL;
}

const sm_rewrite_rule sm_rewrites_nn_fuse_norm[] = {
    {"Mul", BN_RULE, fuse_batch_norm},
    {"AddV2", LN_RULE, fuse_layer_norm},
    {"Mul", GELU_RULE, fuse_gelu},
    {0},
};
