/* grad_math.c - the elementwise gradient kernels TensorFlow's gradient functions emit into a
 * training function (a tf.GradientTape inside a saved tf.function): ReluGrad, Relu6Grad,
 * LeakyReluGrad, EluGrad, SeluGrad, SoftplusGrad, SoftsignGrad (inputs gradients, features/outputs:
 * the same shape, TF's "must have the same size and shape" otherwise), SigmoidGrad, TanhGrad,
 * SqrtGrad, RsqrtGrad, ReciprocalGrad and InvGrad (inputs y, dy: the same element count, the
 * output shaped as y), and BiasAddGrad (the sum over every dimension but the channel one).
 *
 * Formulas are TF's functors (relu_op_functor.h, cwise_ops_gradients.h): ReluGrad is
 * gradients * (features > 0), so a NaN or inf gradient stays NaN where the feature is not positive;
 * the y/dy family conjugates y for complex (sqrt, rsqrt, reciprocal; sigmoid and tanh take y as
 * it is, Python conjugates it), and sqrt, rsqrt and reciprocal give 0 where dy is 0 (whatever y:
 * inf or NaN too), as TF 2.21 does. Dtypes as TF's CPU kernels register them: the Relu pair every real
 * number type, the rest half/bfloat16/float/double, the y/dy family complex too. half and bfloat16
 * are computed in float and rounded once (TF's Eigen rounds after each operation: results agree
 * within an ulp or two of half). BiasAddGrad sums half/bfloat16 in float, integers wrapping. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

enum { G_relu, G_relu6, G_leaky, G_elu, G_selu, G_softplus, G_softsign, G_sigmoid, G_tanh, G_sqrt, G_rsqrt, G_recip, NG };

/* TF's selu constants (relu_op_functor.h), cast to T there as here. */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_SCALE_ALPHA 1.7580993408473768599402175208123

typedef void (*gfn)(int64_t n, const void *a, const void *b, void *o, float alpha);

#define DEF_G(NAME, SFX, TI, UTI, K, ...)                                                   \
  static void g_##NAME##_##SFX(int64_t n, const void *ap, const void *bp, void *op, float alpha) { \
    typedef TI T;                                                                           \
    (void)alpha;                                                                            \
    const T *restrict ai = ap, *restrict bi = bp;                                           \
    T *restrict o = op;                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                       \
      T a = ai[i], b = bi[i];                                                               \
      o[i] = (T)(__VA_ARGS__);                                                              \
    }                                                                                       \
  }
#define ENT_G(NAME, SFX, TI, UTI, K, ...) [G_##NAME][T_##SFX] = g_##NAME##_##SFX,
#define G_DEFS(NAME, CLS, ...) FOR_##CLS(DEF_G, NAME, 0, __VA_ARGS__)
#define G_ENTS(NAME, CLS, ...) FOR_##CLS(ENT_G, NAME, 0, __VA_ARGS__)

#define FABS(x) _Generic((x), float: fabsf, default: fabs)(x)
#define EXP(x) _Generic((x), float: expf, default: exp)(x)

/* a = input 0, b = input 1: (gradients, features | outputs) or (y, dy). */
#define GRAD_OPS(X)                                                                          \
  X(relu, NUM, a * (T)(b > 0))                                                               \
  X(relu6, NUM, a * (T)((b > 0) & (b < 6)))                                                  \
  X(leaky, FLOAT, b > 0 ? a : a * (T)alpha)                                                  \
  X(elu, FLOAT, b < 0 ? (b + 1) * a : a)                                                     \
  X(selu, FLOAT, b < 0 ? a * (b + (T)SELU_SCALE_ALPHA) : a * (T)SELU_SCALE)                  \
  X(softplus, FLOAT, a / (EXP(-b) + 1))                                                      \
  X(softsign, FLOAT, a / ((FABS(b) + 1) * (FABS(b) + 1)))                                    \
  X(sigmoid, FLOAT, b * a * (1 - a))                                                         \
  X(tanh, FLOAT, b * (1 - a * a))                                                            \
  X(sqrt, FLOAT, b == 0 ? 0 : ((T)0.5 * b) / a)                                              \
  X(rsqrt, FLOAT, b == 0 ? 0 : (T)-0.5 * (b * a) * (a * a))                                  \
  X(recip, FLOAT, b == 0 ? 0 : -a * a * b)

GRAD_OPS(G_DEFS)
static const gfn table[NG][NT] = {GRAD_OPS(G_ENTS)};

/* Complex (the y/dy family): y conjugated for sqrt, rsqrt and reciprocal, as TF. */
#define DEF_GC(SFX, T, CONJ)                                                                 \
  static void gc_##SFX(int op, int64_t n, const T *a, const T *b, T *o) {                     \
    for (int64_t i = 0; i < n; i++) {                                                        \
      T y = a[i], dy = b[i], c = CONJ(y);                                                    \
      o[i] = op == G_sigmoid ? dy * y * (1 - y)                                              \
             : dy == 0       ? 0                                                             \
             : op == G_tanh  ? dy * (1 - y * y)                                              \
             : op == G_sqrt  ? (0.5 * dy) / c                                                \
             : op == G_rsqrt ? -0.5 * (dy * c) * (c * c)                                     \
                             : -c * c * dy;                                                  \
    }                                                                                        \
  }
DEF_GC(c64, float complex, conjf)
DEF_GC(c128, double complex, conj)

static const struct {
  const char *name;
  int op;
} names[] = {
    {"ReluGrad", G_relu},         {"Relu6Grad", G_relu6},       {"LeakyReluGrad", G_leaky}, {"EluGrad", G_elu},
    {"SeluGrad", G_selu},         {"SoftplusGrad", G_softplus}, {"SoftsignGrad", G_softsign},
    {"SigmoidGrad", G_sigmoid},   {"TanhGrad", G_tanh},         {"SqrtGrad", G_sqrt},       {"RsqrtGrad", G_rsqrt},
    {"ReciprocalGrad", G_recip},  {"InvGrad", G_recip},
};

typedef struct {
  int op;
  float alpha;
  const char *name;
} g_state;

static sm_status *g_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  g_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->op = -1;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(op, names[i].name)) s->op = names[i].op, s->name = names[i].name;
  s->alpha = 0.2f;
  sm_status *st = s->op < 0 ? sm_status_new(SM_INTERNAL, "%s is not a gradient op", op) : NULL;
  if (!st && s->op == G_leaky && sm__node_attr(node, "alpha")) st = sm__node_attr_float(node, "alpha", &s->alpha);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct {
  gfn f;
  int op, dtype;
  const char *a, *b;
  char *o;
  size_t esize;
  float alpha;
} g_job;

static void g_range(void *ctx, int64_t e0, int64_t e1) {
  const g_job *j = ctx;
  size_t es = j->esize;
  if (j->dtype == SM_COMPLEX64) {
    gc_c64(j->op, e1 - e0, (const float complex *)(const void *)(j->a + e0 * es), (const float complex *)(const void *)(j->b + e0 * es),
           (float complex *)(void *)(j->o + e0 * es));
    return;
  }
  if (j->dtype == SM_COMPLEX128) {
    gc_c128(j->op, e1 - e0, (const double complex *)(const void *)(j->a + e0 * es),
            (const double complex *)(const void *)(j->b + e0 * es), (double complex *)(void *)(j->o + e0 * es));
    return;
  }
  if (!sm__math_is_f16(j->dtype)) {
    j->f(e1 - e0, j->a + e0 * es, j->b + e0 * es, j->o + e0 * es, j->alpha);
    return;
  }
  float a[256], b[256], o[256];
  for (int64_t e = e0; e < e1; e += 256) {
    int64_t m = e1 - e < 256 ? e1 - e : 256;
    sm__math_to_f32(j->dtype, j->a + e * 2, a, m);
    sm__math_to_f32(j->dtype, j->b + e * 2, b, m);
    j->f(m, a, b, o, j->alpha);
    sm__math_from_f32(j->dtype, o, j->o + e * 2, m);
  }
}

static int same_shape(const sm_tensor *a, const sm_tensor *b) {
  if (sm_tensor_rank(a) != sm_tensor_rank(b)) return 0;
  for (int i = 0; i < sm_tensor_rank(a); i++)
    if (sm_tensor_dims(a)[i] != sm_tensor_dims(b)[i]) return 0;
  return 1;
}

static sm_status *g_compute(const void *state, sm_kctx *ctx) {
  const g_state *s = state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(a);
  if (sm_tensor_dtype(b) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: the inputs' dtypes differ (%s and %s)", s->name, sm_dtype_name(dt),
                         sm_dtype_name(sm_tensor_dtype(b)));
  int cplx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
  int ti = sm__math_is_f16(dt) ? T_f32 : sm__math_tindex(dt);
  if (cplx ? s->op < G_sigmoid : ti < 0 || !table[s->op][ti]) return sm__math_bad_dtype(s->name, dt);
  char sa[256], sb[256];
  if (s->op < G_sigmoid && !same_shape(a, b))
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs to operation %s must have the same size and shape.  Input 0: %s != input 1: %s",
                         s->name, sm_shape_str(sm_tensor_rank(a), sm_tensor_dims(a), sa, sizeof sa),
                         sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), sb, sizeof sb));
  int64_t n = sm_tensor_num_elements(a);
  if (s->op >= G_sigmoid && n != sm_tensor_num_elements(b))
    return sm_status_new(SM_INVALID_ARGUMENT, "The two arguments to a cwise op must have same number of elements, got %lld and %lld",
                         (long long)n, (long long)sm_tensor_num_elements(b));
  /* the output has input 0's shape (y for the y/dy family; the gradients otherwise) */
  int rank = sm_tensor_rank(a);
  const int64_t *dims = sm_tensor_dims(a);
  sm_tensor *o = sm__kctx_reuse_input(ctx, 0, 0, dt, rank, dims);
  if (!o) o = sm__kctx_reuse_input(ctx, 1, 0, dt, rank, dims);
  sm_status *st = o ? NULL : sm__kctx_alloc_output_uninit(ctx, 0, dt, rank, dims, &o);
  if (st || n == 0) return st;
  g_job j = {cplx ? NULL : table[s->op][ti], s->op, dt, sm_tensor_data(a), sm_tensor_data(b), sm_tensor_data(o),
             sm_dtype_size(dt), s->alpha};
  sm__parallel_for(sm__kctx_pool(ctx), n, SM_MATH_PAR_MIN, g_range, &j);
  return NULL;
}

/* ---- BiasAddGrad ------------------------------------------------------------------------------ */

static sm_status *bias_grad_prepare(const sm_node *node, void **state) {
  intptr_t nchw = 0;
  if (sm__node_attr(node, "data_format")) {
    const char *p;
    size_t len;
    sm_status *st = sm__node_attr_string(node, "data_format", &p, &len);
    if (st) return st;
    if (len == 4 && !memcmp(p, "NCHW", 4))
      nchw = 1;
    else if (!(len == 4 && !memcmp(p, "NHWC", 4)))
      return sm_status_new(SM_INVALID_ARGUMENT, "BiasAddGrad: invalid data_format '%.*s' (NHWC or NCHW)", (int)len, p);
  }
  *state = (void *)(nchw + 1); /* non-NULL */
  return NULL;
}

/* Sums x viewed as [outer, c, inner] over outer and inner into c values. */
#define DEF_BSUM(SFX, T, ACC)                                                                  \
  static void bsum_##SFX(const T *x, T *y, int64_t outer, int64_t c, int64_t inner) {          \
    for (int64_t k = 0; k < c; k++) {                                                          \
      ACC s = 0;                                                                               \
      for (int64_t o = 0; o < outer; o++) {                                                    \
        const T *p = x + (o * c + k) * inner;                                                  \
        for (int64_t i = 0; i < inner; i++) s += (ACC)p[i];                                    \
      }                                                                                        \
      y[k] = (T)s;                                                                             \
    }                                                                                          \
  }
DEF_BSUM(f32, float, double)
DEF_BSUM(f64, double, double)
DEF_BSUM(i8, int8_t, uint32_t)
DEF_BSUM(i16, int16_t, uint32_t)
DEF_BSUM(i32, int32_t, uint32_t)
DEF_BSUM(i64, int64_t, uint64_t)
DEF_BSUM(u8, uint8_t, uint32_t)
DEF_BSUM(u16, uint16_t, uint32_t)
DEF_BSUM(u32, uint32_t, uint32_t)
DEF_BSUM(u64, uint64_t, uint64_t)
DEF_BSUM(c64, float complex, double complex)
DEF_BSUM(c128, double complex, double complex)

static sm_status *bias_grad_compute(const void *state, sm_kctx *ctx) {
  int nchw = (intptr_t)state == 2;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), rank = sm_tensor_rank(x);
  const int64_t *d = sm_tensor_dims(x);
  char sb[256];
  if (rank < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s", sm_shape_str(rank, d, sb, sizeof sb));
  int axis = nchw ? 1 : rank - 1;
  int64_t outer = 1, inner = 1, c = d[axis];
  for (int i = 0; i < axis; i++) outer *= d[i];
  for (int i = axis + 1; i < rank; i++) inner *= d[i];
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, &c, &y);
  if (st) return st;
  if (sm_tensor_num_elements(x) == 0) return NULL; /* zeros */
  const void *xp = sm_tensor_data(x);
  void *yp = sm_tensor_data(y);
  switch (dt) {
    case SM_FLOAT: bsum_f32(xp, yp, outer, c, inner); break;
    case SM_DOUBLE: bsum_f64(xp, yp, outer, c, inner); break;
    case SM_INT8: bsum_i8(xp, yp, outer, c, inner); break;
    case SM_INT16: bsum_i16(xp, yp, outer, c, inner); break;
    case SM_INT32: bsum_i32(xp, yp, outer, c, inner); break;
    case SM_INT64: bsum_i64(xp, yp, outer, c, inner); break;
    case SM_UINT8: bsum_u8(xp, yp, outer, c, inner); break;
    case SM_UINT16: bsum_u16(xp, yp, outer, c, inner); break;
    case SM_UINT32: bsum_u32(xp, yp, outer, c, inner); break;
    case SM_UINT64: bsum_u64(xp, yp, outer, c, inner); break;
    case SM_COMPLEX64: bsum_c64(xp, yp, outer, c, inner); break;
    case SM_COMPLEX128: bsum_c128(xp, yp, outer, c, inner); break;
    case SM_HALF:
    case SM_BFLOAT16: {
      const uint16_t *h = xp;
      for (int64_t k = 0; k < c; k++) {
        float s = 0;
        for (int64_t o = 0; o < outer; o++)
          for (int64_t i = 0; i < inner; i++) {
            uint16_t v = h[(o * c + k) * inner + i];
            s += dt == SM_HALF ? sm__half_to_f32(v) : sm__bf16_to_f32(v);
          }
        ((uint16_t *)yp)[k] = dt == SM_HALF ? sm__f32_to_half(s) : sm__f32_to_bf16(s);
      }
      break;
    }
    default: return sm__math_bad_dtype("BiasAddGrad", dt);
  }
  return NULL;
}

#define G(name) {name, g_prepare, g_compute, free, 0}

const sm_kernel sm_kernels_grad_math[] = {
    G("ReluGrad"),    G("Relu6Grad"), G("LeakyReluGrad"), G("EluGrad"),   G("SeluGrad"),       G("SoftplusGrad"),
    G("SoftsignGrad"), G("SigmoidGrad"), G("TanhGrad"),   G("SqrtGrad"),  G("RsqrtGrad"),      G("ReciprocalGrad"),
    G("InvGrad"),
    {"BiasAddGrad", bias_grad_prepare, bias_grad_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
