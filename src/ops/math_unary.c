/* math_unary.c - elementwise unary ops (arithmetic, trigonometric and hyperbolic functions and their
 * inverses, lgamma/digamma/erfinv/ndtri/Bessel I0e, I1e, K0, K1, K0e, K1e through math_special.c,
 * Bessel J0, J1, Y0, Y1 from libm) and activations,
 * and Softmax / LogSoftmax.
 *
 * One loop per (op, dtype), generated from an expression as in math_binary.c; the dtype is
 * dispatched once per call. Formulas follow TF's functors where results could differ (Elu and
 * Selu use exp(x)-1, Softplus has TF's thresholds, Relu keeps NaN; Round of an integer is 0,
 * which is what TF 2.21's CPU kernel returns). half/bfloat16 go
 * through float in chunks. Spec: shared/spec/ops.md §3.5, §3.6. */
/* GCC's -O2 cost model ("very cheap") vectorizes no loop whose trip count is unknown; these
 * elementwise loops are the point of the file, so ask for the "cheap" model (clang needs nothing). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "base/vmath.h"
#include "ops/math_int.h"

enum {
  OP_neg, OP_square, OP_sqrt, OP_rsqrt, OP_exp, OP_log, OP_log1p, OP_expm1, OP_abs, OP_sign,
  OP_reciprocal, OP_floor, OP_ceil, OP_round, OP_erf, OP_erfc, OP_relu, OP_relu6, OP_leakyrelu, OP_elu,
  OP_selu, OP_softplus, OP_softsign, OP_sigmoid, OP_tanh, OP_not, OP_isnan, OP_isfinite, OP_sin, OP_cos,
  OP_tan, OP_asin, OP_acos, OP_atan, OP_sinh, OP_cosh, OP_asinh, OP_acosh, OP_atanh, OP_lgamma, OP_digamma,
  OP_erfinv, OP_ndtri, OP_isinf, OP_i0e, OP_i1e, OP_j0, OP_j1, OP_y0, OP_y1, OP_k0, OP_k1, OP_k0e, OP_k1e, NOPS
};

typedef void (*unfn)(int64_t n, const void *x, void *y, float alpha);

#define DEF_UN(NAME, TI, UTI, TO, ...)                                        \
  static void NAME(int64_t n, const void *xp, void *yp, float alpha) {         \
    typedef TI T;                                                             \
    typedef UTI UT;                                                           \
    (void)(UT)0;                                                              \
    (void)alpha;                                                              \
    const T *restrict x = xp;                                                 \
    TO *restrict y = yp;                                                      \
    for (int64_t i = 0; i < n; i++) {                                         \
      T a = x[i];                                                             \
      y[i] = (TO)(__VA_ARGS__);                                               \
    }                                                                         \
  }
#define X_DEF(NAME, SFX, T, UT, K, ...) DEF_UN(NAME##_##SFX, T, UT, OUT_##K(T), __VA_ARGS__)
#define X_ENT(NAME, SFX, T, UT, K, ...) [OP_##NAME][T_##SFX] = NAME##_##SFX,
#define OP_DEFS(NAME, CLS, K, ...) FOR_##CLS(X_DEF, NAME, K, __VA_ARGS__)
#define OP_ENTS(NAME, CLS, K, ...) FOR_##CLS(X_ENT, NAME, K, __VA_ARGS__)

static inline float sigmoid_f(float a) {
  if (a >= 0) return 1.0f / (1.0f + expf(-a));
  float e = expf(a);
  return e / (1.0f + e);
}
static inline double sigmoid_d(double a) {
  if (a >= 0) return 1.0 / (1.0 + exp(-a));
  double e = exp(a);
  return e / (1.0 + e);
}
#define SIGMOID(a) _Generic((a), float: sigmoid_f, default: sigmoid_d)(a)

/* TF's softplus: x past -log(eps)-2 is x, below log(eps)+2 is exp(x), log1p(exp(x)) between. */
static inline float softplus_f(float a) {
  const float th = -13.942385f; /* log(FLT_EPSILON) + 2 */
  if (a > -th) return a;
  float e = expf(a);
  return a < th ? e : log1pf(e);
}
static inline double softplus_d(double a) {
  const double th = -34.04365338911715; /* log(DBL_EPSILON) + 2 */
  if (a > -th) return a;
  double e = exp(a);
  return a < th ? e : log1p(e);
}
#define SOFTPLUS(a) _Generic((a), float: softplus_f, default: softplus_d)(a)

/* Where expm1(x) rounds to x (|x| < 2^-25 float, 2^-54 double) TF's Eigen expm1 returns x itself:
 * a subnormal x stays as it is in TF's flushed mode (libm's tiny-x path computes with x: 0). */
static inline float expm1_f(float a) { return fabsf(a) < 0x1p-25f ? a : expm1f(a); }
static inline double expm1_d(double a) { return fabs(a) < 0x1p-54 ? a : expm1(a); }
#define EXPM1(a) _Generic((a), float: expm1_f, default: expm1_d)(a)
/* log of a subnormal: TF's Eigen log reads it as 0 in TF's flushed mode (-inf); libm normalises it in
 * software (-103.97 for 1e-40). a + 0 is a itself in IEEE mode (log(-0) = log(+0)), 0 when flushed. */
#define LOG(a) log((a) + 0)

/* The special functions in math_special.c are in double; float rounds their result. */
#define SPECIAL(f, a) _Generic((a), float: (float)f(a), default: f(a))
static inline float lgamma_f(float a) { return sm__lgammaf(a); }
#define ERFINV(a) _Generic((a), float: sm__erfinvf, default: sm__erfinv)(a)
#define LGAMMA(a) _Generic((a), float: lgamma_f, default: sm__lgamma)(a)

#define SELU_SCALE 1.0507009873554805
#define SELU_SCALE_ALPHA 1.7580993408473768

#define UNARY_OPS(X)                                                          \
  X(neg, FLOAT, SAME, -a)                                                     \
  X(neg, INT, SAME, (T)(0 - (UT)a))                                           \
  X(square, FLOAT, SAME, a * a)                                               \
  X(square, INT, SAME, (T)((UT)a * (UT)a))                                    \
  X(sqrt, FLOAT, SAME, sqrt(a))                                               \
  X(rsqrt, FLOAT, SAME, 1 / sqrt(a))                                          \
  X(exp, FLOAT, SAME, exp(a))                                                 \
  X(log, FLOAT, SAME, LOG(a))                                                 \
  X(log1p, FLOAT, SAME, log1p(a))                                             \
  X(expm1, FLOAT, SAME, EXPM1(a))                                             \
  X(abs, FLOAT, SAME, fabs(a))                                                \
  X(abs, SINT, SAME, a < 0 ? (T)(0 - (UT)a) : a)                              \
  X(abs, UINT, SAME, a)                                                       \
  X(sign, FLOAT, SAME, a > 0 ? 1 : a < 0 ? -1 : a == 0 ? 0 : a)               \
  X(sign, SINT, SAME, (a > 0) - (a < 0))                                      \
  X(sign, UINT, SAME, a > 0)                                                  \
  X(reciprocal, FLOAT, SAME, 1 / a)                                           \
  X(floor, FLOAT, SAME, floor(a))                                             \
  X(ceil, FLOAT, SAME, ceil(a))                                               \
  X(round, FLOAT, SAME, rint(a))                                              \
  X(round, INT, SAME, (T)0 * a)                                               \
  X(erf, FLOAT, SAME, erf(a))                                                 \
  X(erfc, FLOAT, SAME, erfc(a))                                               \
  X(relu, FLOAT, SAME, a < 0 ? 0 : a)                                         \
  X(relu, SINT, SAME, a < 0 ? 0 : a)                                          \
  X(relu, UINT, SAME, a)                                                      \
  X(relu6, FLOAT, SAME, a < 0 ? 0 : a > 6 ? 6 : a)                            \
  X(relu6, SINT, SAME, a < 0 ? 0 : a > 6 ? 6 : a)                             \
  X(relu6, UINT, SAME, a > 6 ? 6 : a)                                         \
  X(leakyrelu, FLOAT, SAME, a > 0 ? a : a * (T)alpha)                         \
  X(elu, FLOAT, SAME, a < 0 ? exp(a) - 1 : a)                                 \
  X(selu, FLOAT, SAME, a < 0 ? (T)SELU_SCALE_ALPHA * (exp(a) - 1) : (T)SELU_SCALE * a) \
  X(softplus, FLOAT, SAME, SOFTPLUS(a))                                       \
  X(softsign, FLOAT, SAME, a / (1 + fabs(a)))                                 \
  X(sigmoid, FLOAT, SAME, SIGMOID(a))                                         \
  X(tanh, FLOAT, SAME, tanh(a))                                               \
  X(not, BOOL, SAME, !a)                                                      \
  X(isnan, FLOAT, BOOL, a != a)                                               \
  X(isfinite, FLOAT, BOOL, isfinite(a))                                       \
  X(sin, FLOAT, SAME, sin(a))                                                 \
  X(cos, FLOAT, SAME, cos(a))                                                 \
  X(tan, FLOAT, SAME, tan(a))                                                 \
  X(asin, FLOAT, SAME, asin(a))                                               \
  X(acos, FLOAT, SAME, acos(a))                                               \
  X(atan, FLOAT, SAME, atan(a))                                               \
  X(sinh, FLOAT, SAME, sinh(a))                                               \
  X(cosh, FLOAT, SAME, cosh(a))                                               \
  X(asinh, FLOAT, SAME, asinh(a))                                             \
  X(acosh, FLOAT, SAME, acosh(a))                                             \
  X(atanh, FLOAT, SAME, atanh(a))                                             \
  X(lgamma, FLOAT, SAME, LGAMMA(a))                                           \
  X(digamma, FLOAT, SAME, SPECIAL(sm__digamma, a))                            \
  X(erfinv, FLOAT, SAME, ERFINV(a))                              \
  X(ndtri, FLOAT, SAME, SPECIAL(sm__ndtri, a))                                \
  X(isinf, FLOAT, BOOL, isinf(a) != 0)                                             \
  X(i0e, FLOAT, SAME, SPECIAL(sm__bessel_i0e, a))                             \
  X(i1e, FLOAT, SAME, SPECIAL(sm__bessel_i1e, a))                             \
  X(j0, FLOAT, SAME, SPECIAL(sm__bessel_j0, a))                               \
  X(j1, FLOAT, SAME, SPECIAL(sm__bessel_j1, a))                               \
  X(y0, FLOAT, SAME, SPECIAL(sm__bessel_y0, a))                               \
  X(y1, FLOAT, SAME, _Generic((a), float: sm__bessel_y1f, default: sm__bessel_y1)(a)) \
  X(k0, FLOAT, SAME, SPECIAL(sm__bessel_k0, a))                               \
  X(k1, FLOAT, SAME, SPECIAL(sm__bessel_k1, a))                               \
  X(k0e, FLOAT, SAME, SPECIAL(sm__bessel_k0e, a))                             \
  X(k1e, FLOAT, SAME, SPECIAL(sm__bessel_k1e, a))

UNARY_OPS(OP_DEFS)
static const unfn table[NOPS][NT] = {UNARY_OPS(OP_ENTS)};

static const struct {
  const char *name;
  int op;
} ops[] = {
    {"Neg", OP_neg},       {"Square", OP_square},     {"Sqrt", OP_sqrt},         {"Rsqrt", OP_rsqrt},
    {"Exp", OP_exp},       {"Log", OP_log},           {"Log1p", OP_log1p},       {"Expm1", OP_expm1},
    {"Abs", OP_abs},       {"Sign", OP_sign},         {"Reciprocal", OP_reciprocal}, {"Floor", OP_floor},
    {"Ceil", OP_ceil},     {"Round", OP_round},       {"Erf", OP_erf}, {"Erfc", OP_erfc},           {"Relu", OP_relu},
    {"Relu6", OP_relu6},   {"LeakyRelu", OP_leakyrelu}, {"Elu", OP_elu},         {"Selu", OP_selu},
    {"Softplus", OP_softplus}, {"Softsign", OP_softsign}, {"Sigmoid", OP_sigmoid}, {"Tanh", OP_tanh},
    {"LogicalNot", OP_not}, {"IsNan", OP_isnan},      {"IsFinite", OP_isfinite},
    {"Sin", OP_sin},       {"Cos", OP_cos},           {"Tan", OP_tan},           {"Asin", OP_asin},
    {"Acos", OP_acos},     {"Atan", OP_atan},         {"Sinh", OP_sinh},         {"Cosh", OP_cosh},
    {"Asinh", OP_asinh},   {"Acosh", OP_acosh},       {"Atanh", OP_atanh},       {"Lgamma", OP_lgamma},
    {"Digamma", OP_digamma}, {"Erfinv", OP_erfinv},   {"Ndtri", OP_ndtri},       {"Rint", OP_round},
    {"IsInf", OP_isinf},   {"Inv", OP_reciprocal},    {"BesselI0e", OP_i0e},     {"BesselI1e", OP_i1e},
    {"BesselJ0", OP_j0},   {"BesselJ1", OP_j1},       {"BesselY0", OP_y0},       {"BesselY1", OP_y1},
    {"BesselK0", OP_k0},   {"BesselK1", OP_k1},       {"BesselK0e", OP_k0e},     {"BesselK1e", OP_k1e},
};

typedef struct un_state {
  int op;
  float alpha;
  const char *name;
} un_state;

sm_status *sm__math_unary_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  un_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->op = -1;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(op, ops[i].name)) {
      s->op = ops[i].op;
      s->name = ops[i].name;
    }
  if (s->op < 0) {
    free(s);
    return sm_status_new(SM_INTERNAL, "%s is not a unary math op", op);
  }
  s->alpha = 0.2f;
  if (s->op == OP_leakyrelu && sm__node_attr(node, "alpha")) {
    sm_status *st = sm__node_attr_float(node, "alpha", &s->alpha);
    if (st) {
      free(s);
      return st;
    }
  }
  *state = s;
  return NULL;
}

/* float32 Exp, Sigmoid, Tanh and Erf (and half/bfloat16 through float) run base/vmath.h's vector code. */
typedef void (*vecfn)(const float *x, float *y, int64_t n);

typedef struct un_job {
  unfn f;
  vecfn vf; /* when set, used instead of f for float data */
  int dtype; /* input dtype; half/bf16 go through float */
  const char *x;
  char *y;
  size_t isize, osize;
  float alpha;
} un_job;

static void un_range(void *ctx, int64_t e0, int64_t e1) {
  const un_job *j = ctx;
  if (!sm__math_is_f16(j->dtype) && j->vf) {
    j->vf((const float *)j->x + e0, (float *)j->y + e0, e1 - e0);
    return;
  }
  if (!sm__math_is_f16(j->dtype)) {
    j->f(e1 - e0, j->x + (size_t)e0 * j->isize, j->y + (size_t)e0 * j->osize, j->alpha);
    return;
  }
  float a[512], b[512];
  for (int64_t e = e0; e < e1; e += 512) {
    int64_t m = e1 - e < 512 ? e1 - e : 512;
    sm__math_to_f32(j->dtype, j->x + (size_t)e * 2, a, m);
    if (j->osize == 1) { /* IsNan / IsFinite: bool straight out */
      j->f(m, a, j->y + e, j->alpha);
    } else {
      if (j->vf)
        j->vf(a, b, m);
      else
        j->f(m, a, b, j->alpha);
      sm__math_from_f32(j->dtype, b, j->y + (size_t)e * 2, m);
    }
  }
}

sm_status *sm__math_unary_compute(const void *state, sm_kctx *ctx) {
  const un_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt == SM_COMPLEX64 || dt == SM_COMPLEX128) return sm__complex_unary_compute(s->name, ctx);
  int ti = sm__math_is_f16(dt) ? T_f32 : sm__math_tindex(dt);
  if (ti < 0 || !table[s->op][ti]) return sm__math_bad_dtype(s->name, dt);
  int odt = s->op == OP_isnan || s->op == OP_isfinite || s->op == OP_isinf ? SM_BOOL : dt;
  /* elementwise, every element written: in place when this step is x's only reader */
  sm_tensor *y = odt == dt && !sm__math_is_f16(dt) ? sm__kctx_reuse_input(ctx, 0, 0, dt, sm_tensor_rank(x), sm_tensor_dims(x)) : NULL;
  sm_status *st = y ? NULL : sm__kctx_alloc_output_uninit(ctx, 0, odt, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x);
  if (n == 0) return NULL;
  vecfn vf = NULL;
  if (ti == T_f32)
    vf = s->op == OP_exp       ? sm__vexp_f32
         : s->op == OP_sigmoid ? sm__vsigmoid_f32
         : s->op == OP_tanh    ? sm__vtanh_f32
         : s->op == OP_erf     ? sm__verf_f32
                               : NULL;
  un_job j = {table[s->op][ti], vf, dt, sm_tensor_data(x), sm_tensor_data(y), sm_dtype_size(dt), sm_dtype_size(odt),
              s->alpha};
  sm__parallel_for(sm__kctx_pool(ctx), n, SM_MATH_PAR_MIN, un_range, &j);
  return NULL;
}

/* ---- Softmax / LogSoftmax over the last axis ------------------------------------------------ */
/* _SmScaledSoftmax (math_fwd.c's rule, float only): Softmax(x * scale), each row's products
 * (those of the Mul it replaces) written into y and the softmax taken there (vmath.h). */
typedef struct sm_state {
  int log;
  float scale; /* 1: plain Softmax / LogSoftmax */
} sm_state;

sm_status *sm__math_softmax_prepare(const sm_node *node, void **state) {
  sm_state *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->log = !strcmp(sm__node_op(node), "LogSoftmax");
  s->scale = 1.0f;
  if (!strcmp(sm__node_op(node), "_SmScaledSoftmax")) {
    sm_status *st = sm__node_attr_float(node, "scale", &s->scale);
    if (st) {
      free(s);
      return st;
    }
  }
  *state = s;
  return NULL;
}

#define DEF_SOFTMAX(SFX, T)                                                   \
  static void softmax_##SFX(const T *restrict x, T *restrict y, int64_t rows, int64_t k, int lg) { \
    for (int64_t r = 0; r < rows; r++, x += k, y += k) {                      \
      T m = x[0];                                                             \
      for (int64_t i = 1; i < k; i++) m = (x[i] > m || x[i] != x[i]) ? x[i] : m; \
      T sum = 0;                                                              \
      if (lg) {                                                               \
        for (int64_t i = 0; i < k; i++) {                                     \
          y[i] = x[i] - m;                                                    \
          sum += exp(y[i]);                                                   \
        }                                                                     \
        T ls = log(sum);                                                      \
        for (int64_t i = 0; i < k; i++) y[i] -= ls;                           \
      } else {                                                                \
        for (int64_t i = 0; i < k; i++) {                                     \
          y[i] = exp(x[i] - m);                                               \
          sum += y[i];                                                        \
        }                                                                     \
        T inv = 1 / sum;                                                      \
        for (int64_t i = 0; i < k; i++) y[i] *= inv;                          \
      }                                                                       \
    }                                                                         \
  }
DEF_SOFTMAX(f64, double)

/* float: the same sums, with the exponentials from base/vmath.h. */
/* A row's maximum, NaN when it holds one (as the scalar loop of DEF_SOFTMAX), in eight lanes that
 * the compiler vectorises: a max is exact, so the lanes' order does not matter. */
static float row_max_f32(const float *x, int64_t k) {
  float m = x[0];
  int64_t i = 1;
  if (k >= 16) {
    float acc[8];
    int nan = 0;
    for (int l = 0; l < 8; l++) acc[l] = x[l], nan |= x[l] != x[l];
    for (i = 8; i + 8 <= k; i += 8)
      for (int l = 0; l < 8; l++) {
        float v = x[i + l];
        acc[l] = v > acc[l] ? v : acc[l];
        nan |= v != v;
      }
    if (nan) return NAN;
    m = acc[0];
    for (int l = 1; l < 8; l++) m = acc[l] > m ? acc[l] : m;
  }
  for (; i < k; i++) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
  return m;
}

/* Softmax rows through vmath's one-row kernel (max, exp and sum, scale: the bits of the row max
 * above, sm__vexp_shift_sum_f32 and y *= 1 / sum, at the CPU's widest vectors); LogSoftmax here. */
static void softmax_f32(const float *restrict x, float *restrict y, int64_t rows, int64_t k, int lg, float scale) {
  for (int64_t r = 0; r < rows; r++, x += k, y += k) {
    if (scale != 1.0f) {
      sm__vsoftmax_scaled_f32(x, y, k, scale);
      continue;
    }
    if (!lg) {
      sm__vsoftmax_f32(x, y, k);
      continue;
    }
    float m = row_max_f32(x, k);
    float sum = 0;
    for (int64_t i = 0; i < k; i++) y[i] = x[i] - m;
    float e[256];
    for (int64_t i = 0; i < k; i += 256) {
      int64_t c = k - i < 256 ? k - i : 256;
      sm__vexp_f32(y + i, e, c);
      for (int64_t q = 0; q < c; q++) sum += e[q];
    }
    float ls = logf(sum);
    for (int64_t i = 0; i < k; i++) y[i] -= ls;
  }
}

typedef struct sm_job {
  int dtype, log;
  float scale;
  int64_t k;
  const void *x;
  void *y;
} sm_job;

static void softmax_rows(void *ctx, int64_t r0, int64_t r1) {
  const sm_job *j = ctx;
  int64_t k = j->k;
  if (j->dtype == SM_FLOAT)
    softmax_f32((const float *)j->x + r0 * k, (float *)j->y + r0 * k, r1 - r0, k, j->log, j->scale);
  else
    softmax_f64((const double *)j->x + r0 * k, (double *)j->y + r0 * k, r1 - r0, k, j->log);
}

sm_status *sm__math_softmax_compute(const void *state, sm_kctx *ctx) {
  const sm_state *s = state;
  const char *name = s->log ? "LogSoftmax" : "Softmax";
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && !sm__math_is_f16(dt)) return sm__math_bad_dtype(name, dt);
  int rank = sm_tensor_rank(x);
  if (rank < 1) return sm_status_new(SM_INVALID_ARGUMENT, "logits must have >= 1 dimension, got []");
  sm_tensor *y; /* every row is written whole (float, double, and the narrowing of half ones) */
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, rank, sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x), k = sm_tensor_dims(x)[rank - 1];
  if (n == 0) return NULL;
  /* a quarter of the elementwise ops' grain: an exponential and three passes per element (the
   * Transformer b1's [4, 128, 128] scores, 64K elements, ran on one thread in 68 us: bench/RESULTS.md,
   * session 19 c6) */
  int64_t grain = SM_MATH_PAR_MIN / 4 / k;
  sm_job j = {dt, s->log, s->scale, k, sm_tensor_data(x), sm_tensor_data(y)};
  if (!sm__math_is_f16(dt)) {
    sm__parallel_for(sm__kctx_pool(ctx), n / k, grain > 0 ? grain : 1, softmax_rows, &j);
    return NULL;
  }
  /* half / bfloat16: in float, then narrowed */
  float *f = sm__kctx_scratch(ctx, (size_t)n * 2 * sizeof(float), &st);
  if (!f) return st;
  sm__math_to_f32(dt, sm_tensor_data(x), f, n);
  j.dtype = SM_FLOAT;
  j.x = f;
  j.y = f + n;
  sm__parallel_for(sm__kctx_pool(ctx), n / k, grain > 0 ? grain : 1, softmax_rows, &j);
  sm__math_from_f32(dt, f + n, sm_tensor_data(y), n);
  sm__kctx_scratch_free(ctx, f);
  return NULL;
}
