/* math_binary.c - elementwise binary ops with NumPy broadcasting: arithmetic (with Atan2,
 * Xlogy/Xdivy/Xlog1py, TruncateDiv/Mod, Igamma/Igammac, IgammaGradA, RandomGammaGrad, NextAfter, Zeta, Polygamma; Add/Sub/Mul/Div of complex), comparisons,
 * logical ops, and string Add (concatenation) / Equal / NotEqual.
 *
 * Each (op, dtype) pair has three row loops - both operands contiguous, y a scalar, x a scalar -
 * generated from one expression, so inner loops carry no dtype switch and vectorize. The
 * broadcast driver (math.c) reduces any shape pair to rows of those three kinds; large outputs
 * are split over the pool. Integer arithmetic wraps like TF's (computed unsigned, no C overflow);
 * integer division by zero and negative integer powers are errors, checked before the loops.
 * half/bfloat16 compute in float. Spec: shared/spec/ops.md §3.5. */
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
  OP_add, OP_sub, OP_mul, OP_div, OP_floordiv, OP_floormod, OP_max, OP_min, OP_pow, OP_sqdiff,
  OP_divnonan, OP_atan2, OP_xlogy, OP_xdivy, OP_xlog1py, OP_truncdiv, OP_truncmod, OP_igamma, OP_igammac, OP_igamma_da, OP_gamma_grad,
  OP_nextafter, OP_zeta, OP_polygamma, OP_lt, OP_le, OP_gt, OP_ge, OP_eq, OP_ne, OP_and, OP_or, NOPS
};
typedef void (*binrow)(int64_t n, const void *x, const void *y, void *z);
typedef struct binfns {
  binrow vv, vs, sv;
} binfns;

/* ---- element helpers ---------------------------------------------------------------------- */
static inline float floormod_f(float a, float b) {
  float m = fmodf(a, b);
  return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
}
static inline double floormod_d(double a, double b) {
  double m = fmod(a, b);
  return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
}
#define FLOORMOD(a, b) _Generic((a), float: floormod_f, default: floormod_d)(a, b)

/* Square-and-multiply modulo 2^64; truncating the result to a narrower type gives the wrapped
 * power in that type, as TF's integer pow does. */
static inline uint64_t ipow(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}

/* ---- row loops ----------------------------------------------------------------------------- */
/* Inside EXPR: a, b (operands), T (operand type), UT (its unsigned type of >= 32 bits). */
#define DEF_ROWS_A(ATTR, NAME, TI, UTI, TO, ...)                                          \
  ATTR static void NAME##_vv(int64_t n, const void *xp, const void *yp, void *zp) {            \
    typedef TI T;                                                                          \
    typedef UTI UT;                                                                        \
    (void)(UT)0;                                                                           \
    const T *restrict x = xp;                                                              \
    const T *restrict y = yp;                                                              \
    TO *restrict z = zp;                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T a = x[i], b = y[i];                                                                \
      z[i] = (TO)(__VA_ARGS__);                                                            \
    }                                                                                      \
  }                                                                                        \
  ATTR static void NAME##_vs(int64_t n, const void *xp, const void *yp, void *zp) {            \
    typedef TI T;                                                                          \
    typedef UTI UT;                                                                        \
    (void)(UT)0;                                                                           \
    const T *restrict x = xp;                                                              \
    const T b = *(const T *)yp;                                                            \
    TO *restrict z = zp;                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T a = x[i];                                                                          \
      z[i] = (TO)(__VA_ARGS__);                                                            \
    }                                                                                      \
  }                                                                                        \
  ATTR static void NAME##_sv(int64_t n, const void *xp, const void *yp, void *zp) {            \
    typedef TI T;                                                                          \
    typedef UTI UT;                                                                        \
    (void)(UT)0;                                                                           \
    const T a = *(const T *)xp;                                                            \
    const T *restrict y = yp;                                                              \
    TO *restrict z = zp;                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T b = y[i];                                                                          \
      z[i] = (TO)(__VA_ARGS__);                                                            \
    }                                                                                      \
  }

#define DEF_ROWS(NAME, TI, UTI, TO, ...) DEF_ROWS_A(, NAME, TI, UTI, TO, __VA_ARGS__)

#define X_DEF(NAME, SFX, T, UT, K, ...) DEF_ROWS(NAME##_##SFX, T, UT, OUT_##K(T), __VA_ARGS__)
#define X_ENT(NAME, SFX, T, UT, K, ...) [OP_##NAME][T_##SFX] = {NAME##_##SFX##_vv, NAME##_##SFX##_vs, NAME##_##SFX##_sv},
#define OP_DEFS(NAME, CLS, K, ...) FOR_##CLS(X_DEF, NAME, K, __VA_ARGS__)
#define OP_ENTS(NAME, CLS, K, ...) FOR_##CLS(X_ENT, NAME, K, __VA_ARGS__)

/* The whole op x dtype matrix: name, dtype class, output kind, expression. */
#define BINARY_OPS(X)                                                                            \
  X(add, FLOAT, SAME, a + b)                                                                     \
  X(add, INT, SAME, (T)((UT)a + (UT)b))                                                          \
  X(sub, FLOAT, SAME, a - b)                                                                     \
  X(sub, INT, SAME, (T)((UT)a - (UT)b))                                                          \
  X(mul, FLOAT, SAME, a * b)                                                                     \
  X(mul, INT, SAME, (T)((UT)a * (UT)b))                                                          \
  X(div, FLOAT, SAME, a / b)                                                                     \
  X(div, SINT, SAME, b == -1 ? (T)(0 - (UT)a) : (T)(a / b))                                      \
  X(div, UINT, SAME, a / b)                                                                      \
  X(floordiv, FLOAT, SAME, floor(a / b))                                                         \
  X(floordiv, SINT, SAME, b == -1 ? (T)(0 - (UT)a) : (T)(a / b - (a % b != 0 && ((a < 0) != (b < 0))))) \
  X(floordiv, UINT, SAME, a / b)                                                                 \
  X(floormod, FLOAT, SAME, FLOORMOD(a, b))                                                       \
  X(floormod, SINT, SAME, b == -1 ? 0 : (a % b != 0 && ((a % b < 0) != (b < 0))) ? a % b + b : a % b) \
  X(floormod, UINT, SAME, a % b)                                                                 \
  X(max, FLOAT, SAME, (a > b || a != a) ? a : b)                                                 \
  X(max, INT, SAME, a > b ? a : b)                                                               \
  X(min, FLOAT, SAME, (a < b || a != a) ? a : b)                                                 \
  X(min, INT, SAME, a < b ? a : b)                                                               \
  X(pow, FLOAT, SAME, pow(a, b))                                                                 \
  X(pow, SINT, SAME, (T)ipow((uint64_t)(int64_t)a, (uint64_t)b))                                 \
  X(pow, UINT, SAME, (T)ipow((uint64_t)a, (uint64_t)b))                                          \
  X(sqdiff, FLOAT, SAME, (a - b) * (a - b))                                                      \
  X(sqdiff, INT, SAME, (T)(((UT)a - (UT)b) * ((UT)a - (UT)b)))                                   \
  X(divnonan, FLOAT, SAME, b == 0 ? 0 : a / b)                                                   \
  X(atan2, FLOAT, SAME, atan2(a, b))                                                             \
  X(xlogy, FLOAT, SAME, a == 0 ? 0 : a * log(b))                                                 \
  X(xdivy, FLOAT, SAME, a == 0 ? 0 : a / b)                                                      \
  X(xlog1py, FLOAT, SAME, a == 0 ? 0 : a * log1p(b))                                             \
  X(truncdiv, FLOAT, SAME, trunc(a / b))                                                         \
  X(truncdiv, SINT, SAME, b == -1 ? (T)(0 - (UT)a) : (T)(a / b))                                 \
  X(truncdiv, UINT, SAME, a / b)                                                                 \
  X(truncmod, FLOAT, SAME, fmod(a, b))                                                           \
  X(truncmod, SINT, SAME, b == -1 ? 0 : a % b)                                                   \
  X(truncmod, UINT, SAME, a % b)                                                                 \
  X(igamma, FLOAT, SAME, sm__igamma(a, b, 0))                                                    \
  X(igammac, FLOAT, SAME, sm__igamma(a, b, 1))                                                   \
  X(igamma_da, FLOAT, SAME, sm__igamma_der_a(a, b, 0))                                           \
  X(gamma_grad, FLOAT, SAME, sm__igamma_der_a(a, b, 1))                                          \
  X(nextafter, FLOAT, SAME, _Generic((a), float: nextafterf, default: nextafter)(a, b))          \
  X(zeta, FLOAT, SAME, sm__zeta(a, b))                                                           \
  X(polygamma, FLOAT, SAME, sm__polygamma(a, b))                                                 \
  X(lt, NUM, BOOL, a < b)                                                                        \
  X(le, NUM, BOOL, a <= b)                                                                       \
  X(gt, NUM, BOOL, a > b)                                                                        \
  X(ge, NUM, BOOL, a >= b)                                                                       \
  X(eq, NUM, BOOL, a == b)                                                                       \
  X(eq, BOOL, BOOL, (a != 0) == (b != 0))                                                        \
  X(ne, NUM, BOOL, a != b)                                                                       \
  X(ne, BOOL, BOOL, (a != 0) != (b != 0))                                                        \
  X(and, BOOL, BOOL, a && b)                                                                     \
  X(or, BOOL, BOOL, a || b)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
BINARY_OPS(OP_DEFS)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static const binfns table[NOPS][NT] = {BINARY_OPS(OP_ENTS)};

/* The float ops that are one IEEE operation per element, built again for AVX2 (eight lanes; no
 * FMA in the target, so nothing contracts) and picked at run time where the CPU has it: the same
 * bits, twice the lanes of the baseline SSE2 build (a Transformer's bias and residual adds). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FAST_F32(X) X(add, a + b) X(sub, a - b) X(mul, a * b) X(div, a / b)
#define X_FAST_DEF(NAME, ...) DEF_ROWS_A(__attribute__((target("avx2"))), NAME##_f32_avx2, float, uint32_t, float, __VA_ARGS__)
#define X_FAST_ENT(NAME, ...) [OP_##NAME] = {NAME##_f32_avx2_vv, NAME##_f32_avx2_vs, NAME##_f32_avx2_sv},
FAST_F32(X_FAST_DEF)
static const binfns fast_f32[NOPS] = {FAST_F32(X_FAST_ENT)};
#define FNS(op, ti) ((ti) == T_f32 && fast_f32[op].vv && sm__vmath_avx2() ? fast_f32[op] : table[op][ti])
#else
#define FNS(op, ti) (table[op][ti])
#endif

/* ---- the kernel ----------------------------------------------------------------------------- */
static const struct {
  const char *name;
  int op;
} ops[] = {
    {"Add", OP_add},           {"AddV2", OP_add},       {"Sub", OP_sub},
    {"Mul", OP_mul},           {"RealDiv", OP_div},     {"Div", OP_div},
    {"FloorDiv", OP_floordiv}, {"FloorMod", OP_floormod}, {"Maximum", OP_max},
    {"Minimum", OP_min},       {"Pow", OP_pow},         {"SquaredDifference", OP_sqdiff},
    {"DivNoNan", OP_divnonan}, {"Less", OP_lt},         {"LessEqual", OP_le},
    {"Greater", OP_gt},        {"GreaterEqual", OP_ge}, {"Equal", OP_eq},
    {"NotEqual", OP_ne},       {"LogicalAnd", OP_and},  {"LogicalOr", OP_or},
    {"Atan2", OP_atan2},       {"Xlogy", OP_xlogy},     {"Xdivy", OP_xdivy},
    {"Xlog1py", OP_xlog1py},   {"TruncateDiv", OP_truncdiv}, {"TruncateMod", OP_truncmod},
    {"Mod", OP_truncmod}, /* TF1's name: fmod / C remainder, as TruncateMod */
    {"Igamma", OP_igamma},     {"Igammac", OP_igammac}, {"NextAfter", OP_nextafter},
    {"Zeta", OP_zeta},         {"Polygamma", OP_polygamma},
    {"IgammaGradA", OP_igamma_da}, {"RandomGammaGrad", OP_gamma_grad}, /* TF's igamma_der_a / gamma_sample_der_alpha */
};

typedef struct bin_state {
  int op;
  int strings;      /* Add (not AddV2), Equal, NotEqual take DT_STRING */
  int incompat_err; /* Equal/NotEqual: incompatible_shape_error */
  const char *name; /* op type, for messages */
} bin_state;

sm_status *sm__math_binary_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  bin_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->op = -1;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(op, ops[i].name)) {
      s->op = ops[i].op;
      s->name = ops[i].name;
    }
  if (s->op < 0) {
    free(s);
    return sm_status_new(SM_INTERNAL, "%s is not a binary math op", op);
  }
  s->strings = !strcmp(op, "Add") || s->op == OP_eq || s->op == OP_ne;
  s->incompat_err = 1;
  if ((s->op == OP_eq || s->op == OP_ne) && sm__node_attr(node, "incompatible_shape_error")) {
    sm_status *st = sm__node_attr_bool(node, "incompatible_shape_error", &s->incompat_err);
    if (st) {
      free(s);
      return st;
    }
  }
  *state = s;
  return NULL;
}

typedef struct bin_job {
  binfns f;
  const sm_bcast *b;
  const char *x, *y;
  char *z;
  size_t esize, osize;
} bin_job;

/* rank 1: one row, split by elements (strides are 0 or 1) */
static void bin_elems(void *ctx, int64_t e0, int64_t e1) {
  const bin_job *j = ctx;
  int64_t s0 = j->b->strides[0][0], s1 = j->b->strides[1][0];
  binrow fn = s0 && !s1 ? j->f.vs : !s0 && s1 ? j->f.sv : j->f.vv;
  fn(e1 - e0, j->x + (size_t)(e0 * s0) * j->esize, j->y + (size_t)(e0 * s1) * j->esize,
     j->z + (size_t)e0 * j->osize);
}

/* A row operand: operand k (the other one, 1 - k, in full) is one contiguous row of `inner`
 * repeated along dimension rank-2 (a [N,H,W,C] * [N,1,1,C] product, a per-channel Sub / RealDiv
 * of an image): the rows of a block of dims[rank-2] rows are then one contiguous stretch of the
 * full operand and of the output against that row repeated. Copies of the row laid end to end
 * (TILE_BYTES) let one vv call cover many rows, where a row at a time pays a call and an iterator
 * step per row (inner 3: ~3 ns a row for 3 elements). The same vv loop, so the same bits. */
#define TILE_BYTES 8192
static int row_operand(const sm_bcast *b, int64_t inner) {
  if (b->rank < 2) return -1;
  int l = b->rank - 1;
  for (int k = 0; k < 2; k++)
    if (b->strides[k][l] == 1 && b->strides[k][l - 1] == 0 && b->strides[1 - k][l] == 1 &&
        b->strides[1 - k][l - 1] == inner)
      return k;
  return -1;
}

static void bin_tiled(const bin_job *j, int k, int64_t r0, int64_t r1) {
  const sm_bcast *b = j->b;
  int64_t inner = b->dims[b->rank - 1], m = b->dims[b->rank - 2];
  size_t rowb = (size_t)inner * j->esize;
  int64_t per = (int64_t)(TILE_BYTES / rowb); /* rows a tile holds (>= 2: row_operand's caller checked) */
  _Alignas(64) unsigned char tile[TILE_BYTES];
  const char *in[2] = {j->x, j->y};
  int64_t tiled_off = -1;
  sm_bcast_it it;
  for (int64_t r = r0; r < r1;) {
    sm__math_bcast_seek(b, 2, r, &it);
    int64_t end = (r / m + 1) * m; /* the end of this block: the row operand's row changes there */
    if (end > r1) end = r1;
    if (it.off[k] != tiled_off) {
      for (int64_t t = 0; t < per; t++) memcpy(tile + (size_t)t * rowb, in[k] + (size_t)it.off[k] * j->esize, rowb);
      tiled_off = it.off[k];
    }
    const char *full = in[1 - k] + (size_t)it.off[1 - k] * j->esize;
    for (; r < end; r += per) {
      int64_t cnt = end - r < per ? end - r : per;
      char *z = j->z + (size_t)(r * inner) * j->osize;
      if (k == 1)
        j->f.vv(cnt * inner, full, tile, z);
      else
        j->f.vv(cnt * inner, tile, full, z);
      full += (size_t)(cnt * inner) * j->esize;
    }
    r = end;
  }
}

static void bin_rows(void *ctx, int64_t r0, int64_t r1) {
  const bin_job *j = ctx;
  const sm_bcast *b = j->b;
  int last = b->rank - 1;
  int k = row_operand(b, b->dims[last]);
  if (k >= 0 && (int64_t)(TILE_BYTES / ((size_t)b->dims[last] * j->esize)) >= 2) {
    bin_tiled(j, k, r0, r1);
    return;
  }
  int64_t inner = b->dims[last], s0 = b->strides[0][last], s1 = b->strides[1][last];
  binrow fn = s0 && !s1 ? j->f.vs : !s0 && s1 ? j->f.sv : j->f.vv;
  sm_bcast_it it;
  sm__math_bcast_seek(b, 2, r0, &it);
  for (int64_t r = r0; r < r1; r++) {
    fn(inner, j->x + (size_t)it.off[0] * j->esize, j->y + (size_t)it.off[1] * j->esize,
       j->z + (size_t)(r * inner) * j->osize);
    sm__math_bcast_next(b, 2, &it);
  }
}

static void run_rows(sm_kctx *ctx, bin_job *j) {
  const sm_bcast *b = j->b;
  if (b->rank == 1) {
    sm__parallel_for(sm__kctx_pool(ctx), b->n, SM_MATH_PAR_MIN, bin_elems, j);
  } else {
    int64_t inner = b->dims[b->rank - 1], rows = b->n / inner;
    int64_t grain = SM_MATH_PAR_MIN / inner;
    sm__parallel_for(sm__kctx_pool(ctx), rows, grain > 0 ? grain : 1, bin_rows, j);
  }
}

/* An integer divisor of 0 anywhere is an error (TF checks every element before dividing). */
static int has_zero(const sm_tensor *t) {
  int64_t n = sm_tensor_num_elements(t);
  const void *p = sm_tensor_data(t);
  switch (sm_dtype_size(sm_tensor_dtype(t))) {
    case 1: for (int64_t i = 0; i < n; i++) if (!((const uint8_t *)p)[i]) return 1; break;
    case 2: for (int64_t i = 0; i < n; i++) if (!((const uint16_t *)p)[i]) return 1; break;
    case 4: for (int64_t i = 0; i < n; i++) if (!((const uint32_t *)p)[i]) return 1; break;
    case 8: for (int64_t i = 0; i < n; i++) if (!((const uint64_t *)p)[i]) return 1; break;
  }
  return 0;
}

static int has_negative(const sm_tensor *t) {
  int64_t n = sm_tensor_num_elements(t);
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_INT8: for (int64_t i = 0; i < n; i++) if (((const int8_t *)p)[i] < 0) return 1; break;
    case SM_INT16: for (int64_t i = 0; i < n; i++) if (((const int16_t *)p)[i] < 0) return 1; break;
    case SM_INT32: for (int64_t i = 0; i < n; i++) if (((const int32_t *)p)[i] < 0) return 1; break;
    case SM_INT64: for (int64_t i = 0; i < n; i++) if (((const int64_t *)p)[i] < 0) return 1; break;
  }
  return 0;
}

static sm_status *string_op(sm_kctx *ctx, const bin_state *s, const sm_bcast *b, const sm_tensor *x,
                            const sm_tensor *y, sm_tensor *z) {
  int last = b->rank - 1;
  int64_t inner = b->dims[last], s0 = b->strides[0][last], s1 = b->strides[1][last];
  int64_t rows = b->n / inner;
  char *buf = NULL;
  size_t cap = 0;
  sm_status *st = NULL;
  sm_bcast_it it;
  sm__math_bcast_seek(b, 2, 0, &it);
  for (int64_t r = 0; r < rows && !st; r++) {
    for (int64_t i = 0; i < inner && !st; i++) {
      size_t la, lb;
      const char *a = sm_tensor_string(x, it.off[0] + i * s0, &la);
      const char *c = sm_tensor_string(y, it.off[1] + i * s1, &lb);
      int64_t o = r * inner + i;
      if (s->op == OP_add) {
        if (la + lb > cap) {
          char *nb = sm__kctx_scratch_realloc(ctx, buf, la + lb, &st);
          if (!nb) break;
          buf = nb;
          cap = la + lb;
        }
        if (la) memcpy(buf, a, la);
        if (lb) memcpy(buf + la, c, lb);
        st = sm_tensor_set_string(z, o, buf, la + lb);
      } else {
        int eq = la == lb && (la == 0 || !memcmp(a, c, la));
        ((uint8_t *)sm_tensor_data(z))[o] = (uint8_t)(s->op == OP_eq ? eq : !eq);
      }
    }
    sm__math_bcast_next(b, 2, &it);
  }
  sm__kctx_scratch_free(ctx, buf);
  return st;
}

/* complex64 / complex128: Add, Sub, Mul, RealDiv/Div, Equal, NotEqual in the element type; division
 * as Eigen's complex_divide_stable (Smith's method: dividing by 0 gives NaN, not C's infinities). */
static int complex_op(int op) {
  return op == OP_add || op == OP_sub || op == OP_mul || op == OP_div || op == OP_eq || op == OP_ne;
}

#define SMITH_DIV_DEF(NAME, CT, RT)                                                                   \
  static CT NAME(CT a, CT b) {                                                                        \
    RT ar = ((RT *)&a)[0], ai = ((RT *)&a)[1], br = ((RT *)&b)[0], bi = ((RT *)&b)[1];                \
    int scale_imag = fabs(bi) <= fabs(br);                                                            \
    RT rs = scale_imag ? (RT)1 : br / bi, is = scale_imag ? bi / br : (RT)1, den = br * rs + bi * is; \
    CT q;                                                                                             \
    ((RT *)&q)[0] = (ar * rs + ai * is) / den;                                                        \
    ((RT *)&q)[1] = (ai * rs - ar * is) / den;                                                        \
    return q;                                                                                         \
  }
SMITH_DIV_DEF(cdiv_f, float _Complex, float)
SMITH_DIV_DEF(cdiv_d, double _Complex, double)
#define SMITH_DIV(CT, a, c) _Generic((a), float _Complex: cdiv_f, default: cdiv_d)(a, c)

#define COMPLEX_LOOP(CT)                                                                              \
  for (int64_t r = 0; r < b->n / inner; r++) {                                                        \
    for (int64_t i = 0; i < inner; i++) {                                                             \
      CT a = ((const CT *)sm_tensor_data(x))[it.off[0] + i * s0], c = ((const CT *)sm_tensor_data(y))[it.off[1] + i * s1]; \
      int64_t o = r * inner + i;                                                                      \
      switch (op) {                                                                                   \
        case OP_add: ((CT *)sm_tensor_data(z))[o] = a + c; break;                                     \
        case OP_sub: ((CT *)sm_tensor_data(z))[o] = a - c; break;                                     \
        case OP_mul: ((CT *)sm_tensor_data(z))[o] = a * c; break;                                     \
        case OP_div: ((CT *)sm_tensor_data(z))[o] = SMITH_DIV(CT, a, c); break;                      \
        default: ((uint8_t *)sm_tensor_data(z))[o] = (uint8_t)((a == c) == (op == OP_eq)); break;     \
      }                                                                                               \
    }                                                                                                 \
    sm__math_bcast_next(b, 2, &it);                                                                   \
  }

static void complex_rows(int op, const sm_bcast *b, const sm_tensor *x, const sm_tensor *y, sm_tensor *z) {
  int last = b->rank - 1;
  int64_t inner = b->dims[last], s0 = b->strides[0][last], s1 = b->strides[1][last];
  sm_bcast_it it;
  sm__math_bcast_seek(b, 2, 0, &it);
  if (sm_tensor_dtype(x) == SM_COMPLEX64) {
    COMPLEX_LOOP(float _Complex)
  } else {
    COMPLEX_LOOP(double _Complex)
  }
}

sm_status *sm__math_binary_compute(const void *state, sm_kctx *ctx) {
  const bin_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x);
  if (sm_tensor_dtype(y) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: x is %s but y is %s", s->name, sm_dtype_name(dt),
                         sm_dtype_name(sm_tensor_dtype(y)));
  int cmp = s->op >= OP_lt;
  int odt = cmp ? SM_BOOL : dt;
  int isstr = dt == SM_STRING, isf16 = sm__math_is_f16(dt), iscx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
  int ti = isf16 ? T_f32 : sm__math_tindex(dt);
  if (iscx ? !complex_op(s->op) : isstr ? !s->strings : (ti < 0 || !table[s->op][ti].vv))
    return sm__math_bad_dtype(s->name, dt);

  sm_bcast b;
  const int ranks[2] = {sm_tensor_rank(x), sm_tensor_rank(y)};
  const int64_t *dims[2] = {sm_tensor_dims(x), sm_tensor_dims(y)};
  sm_tensor *z = NULL;
  sm_status *st;
  if (!sm__math_bcast_init(&b, 2, ranks, dims)) {
    if (s->incompat_err || (s->op != OP_eq && s->op != OP_ne)) return sm__math_incompatible(x, y);
    if ((st = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 0, NULL, &z))) return st;
    *(uint8_t *)sm_tensor_data(z) = s->op == OP_ne;
    return NULL;
  }
  /* numbers, not half: in place into an operand of the output's shape that only this step reads
   * (z[i] depends on that operand's element i alone) */
  if (!isstr && !isf16 && !cmp && !iscx) {
    z = sm__kctx_reuse_input(ctx, 0, 0, odt, b.out_rank, b.out_dims);
    if (!z) z = sm__kctx_reuse_input(ctx, 1, 0, odt, b.out_rank, b.out_dims);
  }
  /* every element is written below (a failed check leaves the run failed): zeroed only for strings */
  if (!z && (st = (isstr ? sm__kctx_alloc_output : sm__kctx_alloc_output_uninit)(ctx, 0, odt, b.out_rank, b.out_dims,
                                                                                  &z)))
    return st;
  if (b.n == 0) return NULL;
  if (isstr) return string_op(ctx, s, &b, x, y, z);
  if (iscx) {
    complex_rows(s->op, &b, x, y, z);
    return NULL;
  }

  if ((s->op == OP_div || s->op == OP_floordiv || s->op == OP_floormod || s->op == OP_truncdiv || s->op == OP_truncmod) &&
      ti >= T_i8 && has_zero(y))
    return sm_status_new(SM_INVALID_ARGUMENT, "Integer division by zero");
  if (s->op == OP_pow && has_negative(y))
    return sm_status_new(SM_INVALID_ARGUMENT, "Integers to negative integer powers are not allowed");

  bin_job j = {FNS(s->op, ti), &b, sm_tensor_data(x), sm_tensor_data(y), sm_tensor_data(z),
               sm_dtype_size(dt), sm_dtype_size(odt)};
  if (!isf16) {
    run_rows(ctx, &j);
    return NULL;
  }
  /* half / bfloat16: widen both operands, compute in float, narrow the result */
  int64_t nx = sm_tensor_num_elements(x), ny = sm_tensor_num_elements(y);
  st = NULL;
  float *fx = sm__kctx_scratch(ctx, (size_t)nx * sizeof(float), &st);
  float *fy = st ? NULL : sm__kctx_scratch(ctx, (size_t)ny * sizeof(float), &st);
  float *fz = st || cmp ? NULL : sm__kctx_scratch(ctx, (size_t)b.n * sizeof(float), &st);
  if (!st) {
    sm__math_to_f32(dt, sm_tensor_data(x), fx, nx);
    sm__math_to_f32(dt, sm_tensor_data(y), fy, ny);
    j.x = (const char *)fx;
    j.y = (const char *)fy;
    j.esize = sizeof(float);
    if (!cmp) {
      j.z = (char *)fz;
      j.osize = sizeof(float);
    }
    run_rows(ctx, &j);
    if (!cmp) sm__math_from_f32(dt, fz, sm_tensor_data(z), b.n);
  }
  sm__kctx_scratch_free(ctx, fx);
  sm__kctx_scratch_free(ctx, fy);
  sm__kctx_scratch_free(ctx, fz);
  return st;
}
