/* math_reduce.c - reductions (Sum, Prod, Max, Min, Mean, All, Any) and ArgMax / ArgMin.
 *
 * The input is viewed as [outer, r, inner] per reduced block: size-1 dims dropped, neighbours of
 * the same kind merged; several reduced blocks are reduced one after another (last first), so
 * one loop per (op, dtype) serves every axis set. Contiguous rows use 8 accumulators, strided
 * ones run along inner (vectorizes). Mean is Sum then a division (integers truncate). Max/Min
 * propagate NaN; ArgMax/ArgMin skip NaN and take the first of equals, as TF on CPU. half and
 * bfloat16 reduce in float. complex64/complex128 Sum and Mean are the float/double sums of the
 * (re, im) pairs (a trailing kept dim of 2; Mean divides by the count as a complex number, as TF: an infinite
 * part makes the other NaN; an empty complex Mean is 0, TF's identity for it), Prod a
 * complex loop (prod_c64/c128, C's complex product; identity 1+0i). Errors word TF's. Spec: shared/spec/ops.md §3.8. */
/* GCC's -O2 cost model ("very cheap") vectorizes no loop whose trip count is unknown; these
 * elementwise loops are the point of the file, so ask for the "cheap" model (clang needs nothing). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/vmath.h"
#include "ops/math_int.h"

enum { R_sum, R_prod, R_max, R_min, R_and, R_or, NR, R_mean = NR };

typedef void (*redfn)(const void *in, void *out, int64_t o0, int64_t o1, int64_t r, int64_t inner, int64_t i0,
                      int64_t i1);

#define DEF_RED(NAME, TI, UTI, K, ...)                                                               \
  static void NAME(const void *ip, void *op, int64_t o0, int64_t o1, int64_t r, int64_t inner, int64_t i0, \
                   int64_t i1) {                                                                     \
    typedef TI T;                                                                                    \
    typedef UTI UT;                                                                                  \
    (void)(UT)0;                                                                                     \
    const T *in = ip;                                                                                \
    T *out = op;                                                                                     \
    for (int64_t o = o0; o < o1; o++) {                                                              \
      const T *src = in + o * r * inner;                                                             \
      T *dst = out + o * inner;                                                                      \
      if (inner == 1) {                                                                              \
        T acc[8];                                                                                    \
        int64_t k = 0, na = r < 8 ? r : 8;                                                           \
        for (; k < na; k++) acc[k] = src[k];                                                         \
        for (; k + 8 <= r; k += 8)                                                                   \
          for (int l = 0; l < 8; l++) {                                                              \
            T a = acc[l], b = src[k + l];                                                            \
            acc[l] = (T)(__VA_ARGS__);                                                               \
          }                                                                                          \
        for (int l = 0; k < r; k++, l++) {                                                           \
          T a = acc[l], b = src[k];                                                                  \
          acc[l] = (T)(__VA_ARGS__);                                                                 \
        }                                                                                            \
        for (int l = 1; l < na; l++) {                                                               \
          T a = acc[0], b = acc[l];                                                                  \
          acc[0] = (T)(__VA_ARGS__);                                                                 \
        }                                                                                            \
        dst[0] = acc[0];                                                                             \
      } else {                                                                                       \
        for (int64_t i = i0; i < i1; i++) dst[i] = src[i];                                           \
        for (int64_t k = 1; k < r; k++) {                                                            \
          const T *restrict s = src + k * inner;                                                     \
          T *restrict d = dst;                                                                       \
          for (int64_t i = i0; i < i1; i++) {                                                        \
            T a = d[i], b = s[i];                                                                    \
            d[i] = (T)(__VA_ARGS__);                                                                 \
          }                                                                                          \
        }                                                                                            \
      }                                                                                              \
    }                                                                                                \
  }
#define X_DEF(NAME, SFX, T, UT, K, ...) DEF_RED(NAME##_##SFX, T, UT, K, __VA_ARGS__)
#define X_ENT(NAME, SFX, T, UT, K, ...) [R_##NAME][T_##SFX] = NAME##_##SFX,
#define OP_DEFS(NAME, CLS, K, ...) FOR_##CLS(X_DEF, NAME, K, __VA_ARGS__)
#define OP_ENTS(NAME, CLS, K, ...) FOR_##CLS(X_ENT, NAME, K, __VA_ARGS__)

#define REDUCE_OPS(X)                                      \
  X(sum, FLOAT, SAME, a + b)                               \
  X(sum, INT, SAME, (UT)a + (UT)b)                         \
  X(prod, FLOAT, SAME, a * b)                              \
  X(prod, INT, SAME, (UT)a * (UT)b)                        \
  X(max, FLOAT, SAME, (a > b || a != a) ? a : b)           \
  X(max, INT, SAME, a > b ? a : b)                         \
  X(min, FLOAT, SAME, (a < b || a != a) ? a : b)           \
  X(min, INT, SAME, a < b ? a : b)                         \
  X(and, BOOL, SAME, a && b)                               \
  X(or, BOOL, SAME, a || b)

REDUCE_OPS(OP_DEFS)
static const redfn table[NR][NT] = {REDUCE_OPS(OP_ENTS)};

/* float Sum (and Mean) along a strided axis on AVX-512: the generic loop adds each source row into
 * dst in memory, so every element's chain of adds goes through a store and a load per row (a
 * squeeze-excite Mean over 32x32 pixels of 32 channels, [1024, 32]: 3.8 us); here 64 columns at a
 * time stay in four registers over all r rows. Each element is still src row 0, + row 1, + row 2,
 * ... in order: the same bits. Contiguous rows (inner == 1) and column tails take sum_f32. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SUM_AVX512 1
typedef float v16f_r __attribute__((vector_size(64)));
__attribute__((target("avx512f"))) static void sum_f32_avx512(const void *ip, void *op, int64_t o0, int64_t o1,
                                                              int64_t r, int64_t inner, int64_t i0, int64_t i1) {
  if (inner == 1) {
    sum_f32(ip, op, o0, o1, r, inner, i0, i1);
    return;
  }
  const float *in = ip;
  float *out = op;
  for (int64_t o = o0; o < o1; o++) {
    const float *src = in + o * r * inner;
    float *dst = out + o * inner;
    int64_t i = i0;
    for (; i + 64 <= i1; i += 64) {
      v16f_r a[4];
      memcpy(a, src + i, sizeof a);
      for (int64_t k = 1; k < r; k++) {
        v16f_r b[4];
        memcpy(b, src + k * inner + i, sizeof b);
        a[0] += b[0];
        a[1] += b[1];
        a[2] += b[2];
        a[3] += b[3];
      }
      memcpy(dst + i, a, sizeof a);
    }
    for (; i + 16 <= i1; i += 16) {
      v16f_r a;
      memcpy(&a, src + i, sizeof a);
      for (int64_t k = 1; k < r; k++) {
        v16f_r b;
        memcpy(&b, src + k * inner + i, sizeof b);
        a += b;
      }
      memcpy(dst + i, &a, sizeof a);
    }
    if (i < i1) sum_f32(src, dst, 0, 1, r, inner, i, i1);
  }
}
#endif

/* complex Prod over [outer, r, inner] complex elements: C's complex product (Annex G: an infinite
 * factor stays infinite where the naive formula gives NaN), as TF's std::complex product */
#define DEF_CPROD(NAME, T)                                                                                  \
  static void NAME(const void *ip, void *op, int64_t o0, int64_t o1, int64_t r, int64_t inner, int64_t i0, \
                   int64_t i1) {                                                                           \
    const T *in = ip;                                                                                      \
    T *out = op;                                                                                           \
    for (int64_t o = o0; o < o1; o++)                                                                      \
      for (int64_t i = i0; i < i1; i++) {                                                                  \
        const T *src = in + (o * r * inner + i);                                                           \
        T acc = src[0];                                                                                    \
        for (int64_t k = 1; k < r; k++) acc *= src[k * inner];                                             \
        out[o * inner + i] = acc;                                                                          \
      }                                                                                                    \
  }
DEF_CPROD(prod_c64, float _Complex)
DEF_CPROD(prod_c128, double _Complex)

/* The loop for (op, dtype index): the AVX-512 float sum where base/vmath.h runs sixteen lanes (the
 * CPU has AVX-512F and DQ, and SM_VMATH_LANES is not 8). */
static redfn red_fn(int op, int ti) {
#ifdef SUM_AVX512
  if (op == R_sum && ti == T_f32 && sm__vmath_lanes() == 16) return sum_f32_avx512;
#endif
  return table[op][ti];
}

static const struct {
  const char *name;
  int op;
} ops[] = {{"Sum", R_sum}, {"Prod", R_prod}, {"Max", R_max}, {"Min", R_min},
           {"Mean", R_mean}, {"All", R_and}, {"Any", R_or}};

typedef struct red_state {
  int op;
  int keep_dims;
  const char *name;
} red_state;

sm_status *sm__math_reduce_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  red_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->op = -1;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(op, ops[i].name)) {
      s->op = ops[i].op;
      s->name = ops[i].name;
    }
  sm_status *st = s->op < 0 ? sm_status_new(SM_INTERNAL, "%s is not a reduction", op) : NULL;
  if (!st && sm__node_attr(node, "keep_dims")) st = sm__node_attr_bool(node, "keep_dims", &s->keep_dims);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* Reads an int32/int64 axis tensor (any shape, flattened) into reduced[], checking range and
 * duplicates with TF's words. */
static sm_status *read_axes(const sm_tensor *ax, int rank, unsigned char *reduced) {
  int dt = sm_tensor_dtype(ax);
  if (dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "reduction_indices must be int32 or int64, got %s",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  memset(reduced, 0, (size_t)(rank > 0 ? rank : 1));
  int64_t n = sm_tensor_num_elements(ax);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = dt == SM_INT32 ? ((const int32_t *)sm_tensor_data(ax))[i] : ((const int64_t *)sm_tensor_data(ax))[i];
    if (a < -rank || a >= rank)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction dimension (%lld for input with %d dimension(s)",
                           (long long)a, rank);
    if (a < 0) a += rank;
    if (reduced[a])
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction arguments: Axes contains duplicate dimension: %d",
                           (int)a);
    reduced[a] = 1;
  }
  return NULL;
}

typedef struct red_job {
  redfn f;
  const void *in;
  void *out;
  int64_t r, inner;
} red_job;

static void red_outer(void *ctx, int64_t o0, int64_t o1) {
  const red_job *j = ctx;
  j->f(j->in, j->out, o0, o1, j->r, j->inner, 0, j->inner);
}
static void red_inner(void *ctx, int64_t i0, int64_t i1) {
  const red_job *j = ctx;
  j->f(j->in, j->out, 0, 1, j->r, j->inner, i0, i1);
}

/* The reduction identity for an empty reduced block. */
static void fill_identity(int op, int dt, void *out, int64_t n) {
#define FILL(T, V)                                             \
  do {                                                         \
    for (int64_t i = 0; i < n; i++) ((T *)out)[i] = (T)(V);    \
  } while (0)
#define FILL_ALL(SUM, PROD, MAX, MIN)                                                    \
  switch (dt) {                                                                          \
    case SM_FLOAT: FILL(float, op == R_max ? -INFINITY : op == R_min ? INFINITY : op == R_prod ? 1 : op == R_mean ? NAN : 0); break; \
    case SM_DOUBLE: FILL(double, op == R_max ? -INFINITY : op == R_min ? INFINITY : op == R_prod ? 1 : op == R_mean ? NAN : 0); break; \
    case SM_INT8: FILL(int8_t, op == R_max ? INT8_MIN : op == R_min ? INT8_MAX : op == R_prod); break;     \
    case SM_INT16: FILL(int16_t, op == R_max ? INT16_MIN : op == R_min ? INT16_MAX : op == R_prod); break; \
    case SM_INT32: FILL(int32_t, op == R_max ? INT32_MIN : op == R_min ? INT32_MAX : op == R_prod); break; \
    case SM_INT64: FILL(int64_t, op == R_max ? INT64_MIN : op == R_min ? INT64_MAX : op == R_prod); break; \
    case SM_UINT8: FILL(uint8_t, op == R_min ? UINT8_MAX : op == R_prod); break;            \
    case SM_UINT16: FILL(uint16_t, op == R_min ? UINT16_MAX : op == R_prod); break;         \
    case SM_UINT32: FILL(uint32_t, op == R_min ? UINT32_MAX : op == R_prod); break;         \
    case SM_UINT64: FILL(uint64_t, op == R_min ? UINT64_MAX : op == R_prod); break;         \
    case SM_BOOL: FILL(uint8_t, op == R_and); break;                                      \
  }
  FILL_ALL(0, 0, 0, 0)
#undef FILL_ALL
#undef FILL
}

/* Mean: divide sums by the count; integers truncate toward zero. */
static void finish_mean(int dt, void *out, int64_t n, int64_t count) {
  switch (dt) {
    case SM_FLOAT: for (int64_t i = 0; i < n; i++) ((float *)out)[i] /= (float)count; break;
    case SM_DOUBLE: for (int64_t i = 0; i < n; i++) ((double *)out)[i] /= (double)count; break;
#define IMEAN(T, W)                                                               \
  for (int64_t i = 0; i < n; i++) ((T *)out)[i] = (T)((W)((T *)out)[i] / (W)count); \
  break;
    case SM_INT8: IMEAN(int8_t, int64_t)
    case SM_INT16: IMEAN(int16_t, int64_t)
    case SM_INT32: IMEAN(int32_t, int64_t)
    case SM_INT64: IMEAN(int64_t, int64_t)
    case SM_UINT8: IMEAN(uint8_t, uint64_t)
    case SM_UINT16: IMEAN(uint16_t, uint64_t)
    case SM_UINT32: IMEAN(uint32_t, uint64_t)
    case SM_UINT64: IMEAN(uint64_t, uint64_t)
#undef IMEAN
  }
}

/* A float sum of 2+ values is +0 where its terms were all -0 (TF's sums start from +0; the loops
 * here start from the first term): x + 0 is x for every other x, NaN included. */
static void sum_plus_zero(int dt, void *out, int64_t n) {
  if (dt == SM_FLOAT)
    for (int64_t i = 0; i < n; i++) ((float *)out)[i] += 0.0f;
  else if (dt == SM_DOUBLE)
    for (int64_t i = 0; i < n; i++) ((double *)out)[i] += 0.0;
}

/* The dtype a reduction computes in: float for half/bf16 (TF accumulates Sum in half; float is
 * closer to the exact sum), 64-bit for integer Mean (TF: Mean([100,100,100] int8) = 100). */
static int compute_dtype(int op, int dt) {
  if (sm__math_is_f16(dt)) return SM_FLOAT;
  if (op != R_mean) return dt;
  switch (dt) {
    case SM_INT8: case SM_INT16: case SM_INT32: return SM_INT64;
    case SM_UINT8: case SM_UINT16: case SM_UINT32: return SM_UINT64;
    default: return dt;
  }
}

static void widen(int dt, const void *src, void *dst, int64_t n) {
#define W(T, W)                                                        \
  for (int64_t i = 0; i < n; i++) ((W *)dst)[i] = ((const T *)src)[i]; \
  break;
  switch (dt) {
    case SM_HALF: case SM_BFLOAT16: sm__math_to_f32(dt, src, dst, n); break;
    case SM_INT8: W(int8_t, int64_t)
    case SM_INT16: W(int16_t, int64_t)
    case SM_INT32: W(int32_t, int64_t)
    case SM_UINT8: W(uint8_t, uint64_t)
    case SM_UINT16: W(uint16_t, uint64_t)
    case SM_UINT32: W(uint32_t, uint64_t)
  }
#undef W
}

static void narrow(int dt, const void *src, void *dst, int64_t n) {
#define N(T, W)                                                           \
  for (int64_t i = 0; i < n; i++) ((T *)dst)[i] = (T)((const W *)src)[i]; \
  break;
  switch (dt) {
    case SM_HALF: case SM_BFLOAT16: sm__math_from_f32(dt, src, dst, n); break;
    case SM_INT8: N(int8_t, int64_t)
    case SM_INT16: N(int16_t, int64_t)
    case SM_INT32: N(int32_t, int64_t)
    case SM_UINT8: N(uint8_t, uint64_t)
    case SM_UINT16: N(uint16_t, uint64_t)
    case SM_UINT32: N(uint32_t, uint64_t)
  }
#undef N
}

sm_status *sm__math_reduce_compute(const void *state, sm_kctx *ctx) {
  const red_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int isbool = s->op == R_and || s->op == R_or;
  int core = s->op == R_mean ? R_sum : s->op;
  /* complex: Sum / Mean over the real type with a kept trailing dim of 2 (comp); Prod its own loop */
  int cplx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128, comp = 1;
  int cdt = compute_dtype(s->op, dt);
  redfn f = NULL;
  if (cplx) {
    if (core == R_sum) {
      cdt = dt == SM_COMPLEX64 ? SM_FLOAT : SM_DOUBLE;
      comp = 2;
    } else if (core == R_prod) {
      f = dt == SM_COMPLEX64 ? prod_c64 : prod_c128;
    } else {
      return sm__math_bad_dtype(s->name, dt);
    }
  }
  int ti = sm__math_tindex(cdt);
  if (!f) {
    if (ti < 0 || (isbool != (dt == SM_BOOL)) || !table[core][ti]) return sm__math_bad_dtype(s->name, dt);
    f = red_fn(core, ti);
  }

  unsigned char reduced[SM_MAX_RANK + 1];
  sm_status *st = read_axes(sm__kctx_input(ctx, 1), rank, reduced);
  if (st) return st;

  int orank = 0;
  int64_t od[SM_MAX_RANK], count = 1;
  for (int d = 0; d < rank; d++) {
    if (reduced[d]) {
      count *= xd[d];
      if (s->keep_dims) od[orank++] = 1;
    } else {
      od[orank++] = xd[d];
    }
  }
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, orank, od, &y))) return st;
  /* element counts in the compute type (a complex Sum's pairs: two each) */
  int64_t on = sm_tensor_num_elements(y) * comp, n = sm_tensor_num_elements(x) * comp;
  if (on == 0) return NULL;
  size_t cs = cplx && comp == 1 ? sm_dtype_size(dt) : sm_dtype_size(cdt);
  void *fout = NULL, *fin = NULL; /* widened input and output when cdt != dt (never complex) */
  if (cdt != dt && !cplx) {
    if (!(fout = sm__kctx_scratch(ctx, (size_t)on * cs, &st))) return st;
    if (n && !(fin = sm__kctx_scratch(ctx, (size_t)n * cs, &st))) return st;
    widen(dt, sm_tensor_data(x), fin, n);
  }
  void *out = fout ? fout : sm_tensor_data(y);
  int64_t xdc[SM_MAX_RANK + 1]; /* the dims the loops see: a complex Sum's trailing pair added */
  memcpy(xdc, xd, (size_t)rank * sizeof *xdc);
  if (comp == 2) {
    xdc[rank] = 2;
    reduced[rank] = 0;
  }
  int crank = rank + (comp == 2);

  if (n == 0) {
    if (cplx && core == R_prod) { /* 1 + 0i */
      for (int64_t i = 0; i < on; i++) {
        if (dt == SM_COMPLEX64) ((float *)out)[2 * i] = 1.0f, ((float *)out)[2 * i + 1] = 0.0f;
        else ((double *)out)[2 * i] = 1.0, ((double *)out)[2 * i + 1] = 0.0;
      }
    } else {
      fill_identity(cplx ? R_sum : s->op, cdt, out, on); /* TF's complex Mean identity: 0 */
    }
    goto done;
  }
  /* groups: size-1 dims dropped, neighbours of the same kind merged */
  int ng = 0;
  int64_t gsize[SM_MAX_RANK + 1];
  unsigned char gred[SM_MAX_RANK + 1];
  for (int d = 0; d < crank; d++) {
    if (xdc[d] == 1) continue;
    if (ng > 0 && gred[ng - 1] == reduced[d]) {
      gsize[ng - 1] *= xdc[d];
    } else {
      gsize[ng] = xdc[d];
      gred[ng++] = reduced[d];
    }
  }
  const void *in = fin ? fin : sm_tensor_data(x);
  void *tmp[2] = {NULL, NULL};
  int nred = 0;
  for (int g = 0; g < ng; g++) nred += gred[g];
  const int summed = nred > 0 && core == R_sum;
  if (nred == 0) {
    memcpy(out, in, (size_t)on * cs); /* only size-1 dims reduced: the values as they are (TF's too) */
  }
  for (int pass = 0; nred > 0; pass++) {
    int g = ng - 1;
    while (!gred[g]) g--;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < g; k++) outer *= gsize[k];
    for (int k = g + 1; k < ng; k++) inner *= gsize[k];
    void *dst = out;
    if (--nred > 0) {
      dst = tmp[pass & 1] = sm__kctx_scratch(ctx, (size_t)(outer * inner) * cs, &st);
      if (!dst) break;
    }
    red_job j = {f, in, dst, gsize[g], inner};
    int64_t work = outer * gsize[g] * inner;
    if (outer == 1 && inner > 1) {
      int64_t grain = SM_MATH_PAR_MIN / gsize[g];
      sm__parallel_for(work >= SM_MATH_PAR_MIN ? sm__kctx_pool(ctx) : NULL, inner, grain > 16 ? grain : 16, red_inner, &j);
    } else {
      int64_t grain = SM_MATH_PAR_MIN / (gsize[g] * inner);
      sm__parallel_for(sm__kctx_pool(ctx), outer, grain > 0 ? grain : 1, red_outer, &j);
    }
    sm__kctx_scratch_free(ctx, tmp[(pass + 1) & 1]); /* the buffer this pass read, if any */
    tmp[(pass + 1) & 1] = NULL;
    in = dst;
    /* drop group g; a kept group either side stays where it is (inner is recomputed) */
    for (int k = g; k + 1 < ng; k++) {
      gsize[k] = gsize[k + 1];
      gred[k] = gred[k + 1];
    }
    ng--;
  }
  sm__kctx_scratch_free(ctx, tmp[0]);
  sm__kctx_scratch_free(ctx, tmp[1]);
  if (st) goto done;
  if (summed) sum_plus_zero(cdt, out, on);
  if (s->op == R_mean && cplx) { /* (a + bi) / (n + 0i): ((a + b 0) / n, (b - a 0) / n) */
    for (int64_t i = 0; i < on; i += 2) {
      if (cdt == SM_FLOAT) {
        float *v = (float *)out + i, c = (float)count, re = v[0], im = v[1];
        v[0] = (re + im * 0.0f) / c, v[1] = (im - re * 0.0f) / c;
      } else {
        double *v = (double *)out + i, c = (double)count, re = v[0], im = v[1];
        v[0] = (re + im * 0.0) / c, v[1] = (im - re * 0.0) / c;
      }
    }
  } else if (s->op == R_mean) {
    finish_mean(cdt, out, on, count);
  }
done:
  if (fout && !st) narrow(dt, fout, sm_tensor_data(y), on);
  sm__kctx_scratch_free(ctx, fout);
  sm__kctx_scratch_free(ctx, fin);
  return st;
}

/* ---- ArgMax / ArgMin -------------------------------------------------------------------------- */
typedef struct arg_state {
  int out_type;
  int is_min;
} arg_state;

sm_status *sm__math_argmax_prepare(const sm_node *node, void **state) {
  arg_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->is_min = !strcmp(sm__node_op(node), "ArgMin");
  s->out_type = SM_INT64;
  sm_status *st = NULL;
  if (sm__node_attr(node, "output_type")) st = sm__node_attr_type(node, "output_type", &s->out_type);
  if (!st && s->out_type != SM_INT32 && s->out_type != SM_INT64 && s->out_type != SM_INT16 &&
      s->out_type != SM_UINT16)
    st = sm_status_new(SM_INVALID_ARGUMENT, "output_type must be int16, uint16, int32 or int64, got %s",
                       sm_dtype_name(s->out_type) ? sm_dtype_name(s->out_type) : "?");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* Index of the max (min) along r with stride `inner`: NaN never wins, the first of equals does. */
#define ID(v) (v)
#define CONV_BOOL(v) ((v) != 0)
#define DEF_ARG(SFX, T, V, LOAD)                                                   \
  static int64_t arg_##SFX(const void *p, int64_t r, int64_t inner, int is_min) { \
    const T *x = p;                                                              \
    int64_t bi = 0;                                                              \
    V bv = LOAD(x[0]);                                                           \
    if (is_min) {                                                                \
      for (int64_t k = 1; k < r; k++) {                                          \
        V v = LOAD(x[k * inner]);                                                \
        if (v < bv || (bv != bv && v == v)) {                                    \
          bv = v;                                                                \
          bi = k;                                                                \
        }                                                                        \
      }                                                                          \
    } else {                                                                     \
      for (int64_t k = 1; k < r; k++) {                                          \
        V v = LOAD(x[k * inner]);                                                \
        if (v > bv || (bv != bv && v == v)) {                                    \
          bv = v;                                                                \
          bi = k;                                                                \
        }                                                                        \
      }                                                                          \
    }                                                                            \
    return bi;                                                                   \
  }
DEF_ARG(f32, float, float, ID)
DEF_ARG(f64, double, double, ID)
DEF_ARG(half, uint16_t, float, sm__half_to_f32)
DEF_ARG(bf16, uint16_t, float, sm__bf16_to_f32)
DEF_ARG(i8, int8_t, int8_t, ID)
DEF_ARG(i16, int16_t, int16_t, ID)
DEF_ARG(i32, int32_t, int32_t, ID)
DEF_ARG(i64, int64_t, int64_t, ID)
DEF_ARG(u8, uint8_t, uint8_t, ID)
DEF_ARG(u16, uint16_t, uint16_t, ID)
DEF_ARG(u32, uint32_t, uint32_t, ID)
DEF_ARG(u64, uint64_t, uint64_t, ID)
DEF_ARG(b, uint8_t, int, CONV_BOOL)

typedef int64_t (*argfn)(const void *p, int64_t r, int64_t inner, int is_min);

static argfn arg_fn(int dt) {
  switch (dt) {
    case SM_FLOAT: return arg_f32;
    case SM_DOUBLE: return arg_f64;
    case SM_HALF: return arg_half;
    case SM_BFLOAT16: return arg_bf16;
    case SM_INT8: return arg_i8;
    case SM_INT16: return arg_i16;
    case SM_INT32: return arg_i32;
    case SM_INT64: return arg_i64;
    case SM_UINT8: return arg_u8;
    case SM_UINT16: return arg_u16;
    case SM_UINT32: return arg_u32;
    case SM_UINT64: return arg_u64;
    case SM_BOOL: return arg_b;
    default: return NULL;
  }
}

sm_status *sm__math_argmax_compute(const void *state, sm_kctx *ctx) {
  const arg_state *s = state;
  const char *name = s->is_min ? "ArgMin" : "ArgMax";
  const sm_tensor *x = sm__kctx_input(ctx, 0), *dim = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  argfn f = arg_fn(dt);
  if (!f) return sm__math_bad_dtype(name, dt);
  int ddt = sm_tensor_dtype(dim);
  if (ddt != SM_INT32 && ddt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "dimension must be int32 or int64, got %s",
                         sm_dtype_name(ddt) ? sm_dtype_name(ddt) : "?");
  if (sm_tensor_rank(dim) != 0) {
    char sh[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "dim must be a scalar, but received tensor of shape: %s",
                         sm_shape_str(sm_tensor_rank(dim), sm_tensor_dims(dim), sh, sizeof sh));
  }
  int64_t axis = ddt == SM_INT32 ? ((const int32_t *)sm_tensor_data(dim))[0] : ((const int64_t *)sm_tensor_data(dim))[0];
  if (axis < -rank || axis >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -rank, rank,
                         (long long)axis);
  if (axis < 0) axis += rank;
  int64_t od[SM_MAX_RANK], outer = 1, inner = 1, r = xd[axis];
  int orank = 0;
  for (int d = 0; d < rank; d++) {
    if (d < axis) outer *= xd[d];
    if (d > axis) inner *= xd[d];
    if (d != axis) od[orank++] = xd[d];
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, s->out_type, orank, od, &y);
  if (st) return st;
  int64_t on = outer * inner;
  if (on == 0) return NULL;
  if (r == 0) {
    char sh[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "Reduction axis %lld is empty in shape %s", (long long)axis,
                         sm_shape_str(rank, xd, sh, sizeof sh));
  }
  const char *xp = sm_tensor_data(x);
  size_t es = sm_dtype_size(dt);
  void *yp = sm_tensor_data(y);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t k = f(xp + (size_t)(o * r * inner + i) * es, r, inner, s->is_min), oi = o * inner + i;
      switch (s->out_type) {
        case SM_INT64: ((int64_t *)yp)[oi] = k; break;
        case SM_INT32: ((int32_t *)yp)[oi] = (int32_t)k; break;
        default: ((uint16_t *)yp)[oi] = (uint16_t)k; break;
      }
    }
  return NULL;
}
