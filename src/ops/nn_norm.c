/* nn_norm.c - BiasAdd / BiasAddV1 and FusedBatchNorm / V2 / V3 (ops.md §3.8).
 *
 * BiasAdd adds a 1-D bias along the last dimension (NHWC) or dimension 1 (NCHW, any rank, as TF's
 * CPU kernel does).
 * FusedBatchNorm: inference uses the given moments; training mode (the OpDef default, which Keras 2's
 * fused LayerNormalization hits with empty mean/variance) computes per-channel batch moments in
 * double, normalises with the biased variance and outputs the Bessel-corrected one, with TF's
 * exponential_avg_factor blend. Outputs follow TF's CPU kernel: reserve_space_1/2 = the moments
 * used, reserve_space_3 (V3) = an empty [0] tensor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/vmath.h"
#include "ops/nn_internal.h"

/* ---- BiasAdd ---------------------------------------------------------------------------------- */
typedef struct bias_state {
  int nchw;
} bias_state;

sm_status *sm__nn_bias_add_prepare(const sm_node *n, void **state) {
  bias_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = strcmp(sm__node_op(n), "BiasAddV1") ? sm__nn_data_format(n, 1, &s->nchw) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct bias_job {
  int dtype;
  const char *in, *bias;
  char *out;
  int64_t C, inner; /* inner = 1 for NHWC; spatial size for NCHW. Rows are (outer, c) or outer. */
} bias_job;

#define BIAS(T)                                                                                     \
  do {                                                                                              \
    const T *in = (const T *)j->in, *b = (const T *)j->bias;                                        \
    T *out = (T *)j->out;                                                                           \
    if (j->inner == 1) { /* NHWC: row r is one [C] vector */                                        \
      for (int64_t r = begin; r < end; r++) {                                                       \
        const T *p = in + r * j->C;                                                                 \
        T *o = out + r * j->C;                                                                      \
        for (int64_t c = 0; c < j->C; c++) o[c] = p[c] + b[c];                                      \
      }                                                                                             \
    } else { /* NCHW: row r is channel r % C of one batch entry, `inner` long */                    \
      for (int64_t r = begin; r < end; r++) {                                                       \
        const T *p = in + r * j->inner;                                                             \
        T *o = out + r * j->inner;                                                                  \
        T bc = b[r % j->C];                                                                         \
        for (int64_t e = 0; e < j->inner; e++) o[e] = p[e] + bc;                                    \
      }                                                                                             \
    }                                                                                               \
  } while (0)

/* Integers wrap like TF's (two's complement), without C's signed-overflow UB. */
#define BIAS_INT(T, UT)                                                                             \
  do {                                                                                              \
    const T *in = (const T *)j->in, *b = (const T *)j->bias;                                        \
    T *out = (T *)j->out;                                                                           \
    for (int64_t r = begin; r < end; r++)                                                           \
      for (int64_t e = 0; e < (j->inner == 1 ? j->C : j->inner); e++) {                            \
        int64_t i = r * (j->inner == 1 ? j->C : j->inner) + e;                                      \
        T bc = j->inner == 1 ? b[e] : b[r % j->C];                                                  \
        out[i] = (T)((UT)in[i] + (UT)bc);                                                           \
      }                                                                                             \
  } while (0)

/* The activations past Relu6 that a fused epilogue may apply, each with the formula its own kernel
 * uses (math_unary.c), so that fused and unfused agree to the bit. */
static float act_f32(float v, int act, float alpha) {
  switch (act) {
    case SM_NN_ACT_ELU: return v < 0 ? expf(v) - 1 : v;
    case SM_NN_ACT_LEAKY_RELU: return v > 0 ? v : v * alpha;
  }
  return v;
}

/* The one float bias(+activation) loop: BiasAdd's NHWC float path and the epilogue of the fused
 * conv/matmul (nn_raw.h) both run it. Separate loops per case so each one vectorises: built for
 * baseline x86-64 and for AVX2 (picked at run time where the CPU has it; no FMA in the target, so
 * the same bits), the latter with GCC's "cheap" vectoriser cost model (-O2's "very cheap" one
 * vectorises no loop that needs the runtime check that out and in do not overlap). */
static inline __attribute__((always_inline)) void bias_act_body(const float *in, float *out, int64_t rows, int64_t C,
                                                                const float *bias, int act, float alpha) {
  for (int64_t r = 0; r < rows; r++) {
    const float *p = in + r * C;
    float *o = out + r * C;
    if (act > SM_NN_ACT_RELU6) { /* transcendental: one call per element whatever the loop */
      if (bias)
        for (int64_t c = 0; c < C; c++) o[c] = act_f32(p[c] + bias[c], act, alpha);
      else
        for (int64_t c = 0; c < C; c++) o[c] = act_f32(p[c], act, alpha);
    } else if (bias && act == SM_NN_ACT_RELU) {
      for (int64_t c = 0; c < C; c++) {
        float v = p[c] + bias[c];
        o[c] = !(v <= 0) ? v : 0; /* keeps NaN, as Relu does; -0 -> +0 (TF's max(x, 0)) */
      }
    } else if (bias && act == SM_NN_ACT_RELU6) {
      for (int64_t c = 0; c < C; c++) {
        float v = p[c] + bias[c];
        o[c] = !(v <= 0) ? (v > 6 ? 6 : v) : 0;
      }
    } else if (bias) {
      for (int64_t c = 0; c < C; c++) o[c] = p[c] + bias[c];
    } else if (act == SM_NN_ACT_RELU) {
      for (int64_t c = 0; c < C; c++) o[c] = !(p[c] <= 0) ? p[c] : 0;
    } else if (act == SM_NN_ACT_RELU6) {
      for (int64_t c = 0; c < C; c++) o[c] = !(p[c] <= 0) ? (p[c] > 6 ? 6 : p[c]) : 0;
    } else if (o != p) {
      memcpy(o, p, (size_t)C * sizeof *o);
    }
  }
}

static void bias_act_base(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act,
                          float alpha) {
  bias_act_body(in, out, rows, C, bias, act, alpha);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__clang__)
#define AVX2_LOOPS __attribute__((target("avx2")))
#else
#define AVX2_LOOPS __attribute__((target("avx2"), optimize("vect-cost-model=cheap")))
#endif
AVX2_LOOPS static void bias_act_avx2(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act,
                                     float alpha) {
  bias_act_body(in, out, rows, C, bias, act, alpha);
}
#endif

/* The body built for this CPU. */
static void bias_act_avx2_or_base(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act,
                                  float alpha) {
#ifdef AVX2_LOOPS
  if (sm__vmath_avx2()) {
    bias_act_avx2(in, out, rows, C, bias, act, alpha);
    return;
  }
#endif
  bias_act_base(in, out, rows, C, bias, act, alpha);
}

void sm__nn_bias_act_f32(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act,
                         float alpha) {
  if (act == SM_NN_ACT_SIGMOID || act == SM_NN_ACT_TANH || act == SM_NN_ACT_SWISH) {
    /* base/vmath.h, as the Sigmoid / Tanh kernels (and Sigmoid then Mul): one call over all the rows,
     * whole vectors across row ends (an element's result does not depend on where it is) */
    const float *src = in;
    if (bias) {
      bias_act_avx2_or_base(in, out, rows, C, bias, SM_NN_ACT_NONE, 0.0f);
      src = out;
    }
    (act == SM_NN_ACT_SIGMOID ? sm__vsigmoid_f32 : act == SM_NN_ACT_TANH ? sm__vtanh_f32 : sm__vswish_f32)(src, out,
                                                                                                         rows * C);
    return;
  }
  if (act == SM_NN_ACT_GELU_ERF) { /* vmath's GELU adds the bias itself: _SmGeluErf's bits */
    if (!bias) {
      sm__vgelu_erf_f32(in, NULL, out, rows * C, 0.5f, SM_NN_GELU_C1, 1.0f);
      return;
    }
    for (int64_t r = 0; r < rows; r++) sm__vgelu_erf_f32(in + r * C, bias, out + r * C, C, 0.5f, SM_NN_GELU_C1, 1.0f);
    return;
  }
  bias_act_avx2_or_base(in, out, rows, C, bias, act, alpha);
}

static void bias_rows(void *ctx, int64_t begin, int64_t end) {
  const bias_job *j = ctx;
  switch (j->dtype) {
    case SM_FLOAT:
      if (j->inner == 1)
        sm__nn_bias_act_f32((const float *)j->in + begin * j->C, (float *)j->out + begin * j->C, end - begin, j->C,
                            (const float *)j->bias, SM_NN_ACT_NONE, 0.0f);
      else
        BIAS(float);
      break;
    case SM_DOUBLE: BIAS(double); break;
    case SM_INT32: BIAS_INT(int32_t, uint32_t); break;
    case SM_INT64: BIAS_INT(int64_t, uint64_t); break;
  }
}

sm_status *sm__nn_bias_add(const void *state, sm_kctx *ctx) {
  const bias_state *s = state;
  if (sm__kctx_num_inputs(ctx) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "expected 2 inputs");
  const sm_tensor *x = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  char s1[128], s2[128];
  int dt = sm_tensor_dtype(x);
  if ((dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64) || sm_tensor_dtype(b) != dt)
    return sm_status_new(SM_UNIMPLEMENTED, "value %s and bias %s: only float, double, int32 and int64 are supported",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?",
                         sm_dtype_name(sm_tensor_dtype(b)) ? sm_dtype_name(sm_tensor_dtype(b)) : "?");
  int rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  if (rank < 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s", sm_shape_str(rank, xd, s1, sizeof s1));
  if (sm_tensor_rank(b) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Biases must be 1D: %s",
                         sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), s1, sizeof s1));
  int cd = s->nchw ? 1 : rank - 1;
  if (sm_tensor_dims(b)[0] != xd[cd])
    return sm_status_new(SM_INVALID_ARGUMENT, "Must provide as many biases as the %s dimension of the input tensor: %s vs. %s",
                         s->nchw ? "channel" : "last", sm_shape_str(1, sm_tensor_dims(b), s1, sizeof s1),
                         sm_shape_str(rank, xd, s2, sizeof s2));
  sm_tensor *out;
  sm_status *st;
  /* in place when this step is the value's only reader (each element reads only itself) */
  out = sm__kctx_reuse_input(ctx, 0, 0, dt, rank, xd);
  if (!out && (st = sm__kctx_alloc_output_uninit(ctx, 0, dt, rank, xd, &out))) return st;
  int64_t total = sm_tensor_num_elements(x);
  if (total == 0) return NULL;
  bias_job j = {dt, sm_tensor_data(x), sm_tensor_data(b), sm_tensor_data(out), xd[cd], 1};
  int64_t rows;
  if (s->nchw) {
    j.inner = 1;
    for (int i = 2; i < rank; i++) j.inner *= xd[i];
    rows = total / j.inner;
    if (j.inner == 1) { /* [N, C]: channels are the last dim after all */
      rows = total / j.C;
    }
  } else {
    rows = total / j.C;
  }
  int64_t per_row = j.inner == 1 ? j.C : j.inner;
  sm__parallel_for(total < 65536 ? NULL : sm__kctx_pool(ctx), rows, per_row >= 16384 ? 1 : 16384 / per_row, bias_rows, &j);
  return NULL;
}

/* ---- FusedBatchNorm --------------------------------------------------------------------------- */
typedef struct bn_state {
  int nchw, training;
  float eps, factor;
} bn_state;

sm_status *sm__nn_batch_norm_prepare(const sm_node *n, void **state) {
  bn_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->training = 1; /* the OpDef default: a stripped node trains */
  s->eps = 0.0001f;
  s->factor = 1.0f;
  sm_status *st = sm__nn_data_format(n, 1, &s->nchw);
  if (!st && sm__node_attr(n, "is_training")) st = sm__node_attr_bool(n, "is_training", &s->training);
  if (!st && sm__node_attr(n, "epsilon")) st = sm__node_attr_float(n, "epsilon", &s->eps);
  if (!st && sm__node_attr(n, "exponential_avg_factor")) st = sm__node_attr_float(n, "exponential_avg_factor", &s->factor);
  if (!st && sm__node_num_outputs(n) >= 1 && sm__node_output_dtype(n, 0) != SM_FLOAT)
    st = sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (float)",
                       sm_dtype_name(sm__node_output_dtype(n, 0)) ? sm_dtype_name(sm__node_output_dtype(n, 0)) : "?");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct bn_job {
  const float *x;
  float *y;
  const float *a, *b, *m; /* y = (x - m[c]) * a[c] + b[c] */
  int64_t C, inner;       /* NHWC: inner 1, rows of C; NCHW: rows (n, c) of `inner` */
} bn_job;

static void bn_rows(void *ctx, int64_t begin, int64_t end) {
  const bn_job *j = ctx;
  if (j->inner == 1) {
    for (int64_t r = begin; r < end; r++) {
      const float *p = j->x + r * j->C;
      float *o = j->y + r * j->C;
      for (int64_t c = 0; c < j->C; c++) o[c] = (p[c] - j->m[c]) * j->a[c] + j->b[c];
    }
  } else {
    for (int64_t r = begin; r < end; r++) {
      int64_t c = r % j->C;
      const float *p = j->x + r * j->inner;
      float *o = j->y + r * j->inner;
      float m = j->m[c], a = j->a[c], b = j->b[c];
      for (int64_t e = 0; e < j->inner; e++) o[e] = (p[e] - m) * a + b;
    }
  }
}

static sm_status *vec_out(sm_kctx *ctx, int i, int64_t n, const float *v) {
  if (i >= sm__kctx_num_outputs(ctx)) return NULL;
  sm_tensor *t;
  sm_status *st = sm__kctx_alloc_output(ctx, i, SM_FLOAT, 1, &n, &t);
  if (!st && n && v) memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(float));
  return st;
}

sm_status *sm__nn_batch_norm(const void *state, sm_kctx *ctx) {
  const bn_state *s = state;
  if (sm__kctx_num_inputs(ctx) != 5) return sm_status_new(SM_INVALID_ARGUMENT, "expected 5 inputs");
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  const sm_tensor *in[4];
  static const char *const names[4] = {"scale", "offset", "mean", "variance"};
  char s1[128];
  if (sm_tensor_dtype(x) != SM_FLOAT)
    return sm_status_new(SM_UNIMPLEMENTED, "x is %s: only float is supported",
                         sm_dtype_name(sm_tensor_dtype(x)) ? sm_dtype_name(sm_tensor_dtype(x)) : "?");
  int rank = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  if (rank != 4 && rank != 5)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4 or 5-dimensional%s", sm_shape_str(rank, xd, s1, sizeof s1));
  int64_t C = s->nchw ? xd[1] : xd[rank - 1];
  for (int i = 0; i < 4; i++) {
    in[i] = sm__kctx_input(ctx, i + 1);
    if (sm_tensor_dtype(in[i]) != SM_FLOAT)
      return sm_status_new(SM_UNIMPLEMENTED, "%s is %s: only float is supported", names[i],
                           sm_dtype_name(sm_tensor_dtype(in[i])) ? sm_dtype_name(sm_tensor_dtype(in[i])) : "?");
    if (sm_tensor_rank(in[i]) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 1-dimensional%s", names[i],
                           sm_shape_str(sm_tensor_rank(in[i]), sm_tensor_dims(in[i]), s1, sizeof s1));
    int64_t got = sm_tensor_dims(in[i])[0];
    if (got != C) {
      if (i < 2)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s must have the same number of elements as the channels of x, got %lld and %lld",
                             names[i], (long long)got, (long long)C);
      if (!s->training || s->factor != 1.0f)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "When is_training=%s, %s must have the same number of elements as the channels of x, got "
                             "%lld and %lld",
                             s->training ? "true and exponential_avg_factor != 1" : "false", names[i], (long long)got,
                             (long long)C);
    }
  }
  const float *scale = sm_tensor_data(in[0]), *offset = sm_tensor_data(in[1]);
  const float *mean_in = sm_tensor_data(in[2]), *var_in = sm_tensor_data(in[3]);
  sm_tensor *y;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, rank, xd, &y))) return st;
  int64_t total = sm_tensor_num_elements(x);
  int64_t inner = 1;
  if (s->nchw)
    for (int i = 2; i < rank; i++) inner *= xd[i];
  int64_t count = C ? total / C : 0; /* elements per channel */
  float *buf = sm__kctx_scratch(ctx, (size_t)C * 6 * sizeof(float), &st);
  double *acc = buf ? sm__kctx_scratch(ctx, (size_t)C * 2 * sizeof(double), &st) : NULL;
  if (!acc) return st;
  memset(acc, 0, (size_t)C * 2 * sizeof(double));
  float *a = buf, *b = buf + C, *mean = buf + 2 * C, *var = buf + 3 * C, *bmean = buf + 4 * C, *bvar = buf + 5 * C;
  const float *x0 = sm_tensor_data(x);
  if (s->training) {
    double *sum = acc, *sq = acc + C;
    if (s->nchw) {
      for (int64_t r = 0; r < total / (inner ? inner : 1) && inner; r++) {
        const float *p = x0 + r * inner;
        double t = 0;
        for (int64_t e = 0; e < inner; e++) t += p[e];
        sum[r % C] += t;
      }
    } else {
      for (int64_t r = 0; r < count; r++)
        for (int64_t c = 0; c < C; c++) sum[c] += x0[r * C + c];
    }
    for (int64_t c = 0; c < C; c++) sum[c] = count ? sum[c] / (double)count : NAN;
    if (s->nchw) {
      for (int64_t r = 0; r < total / (inner ? inner : 1) && inner; r++) {
        const float *p = x0 + r * inner;
        double m = sum[r % C], t = 0;
        for (int64_t e = 0; e < inner; e++) t += (p[e] - m) * (p[e] - m);
        sq[r % C] += t;
      }
    } else {
      for (int64_t r = 0; r < count; r++)
        for (int64_t c = 0; c < C; c++) {
          double d = x0[r * C + c] - sum[c];
          sq[c] += d * d;
        }
    }
    double f = s->factor;
    for (int64_t c = 0; c < C; c++) {
      double v = count ? sq[c] / (double)count : NAN;
      double vb = count ? sq[c] / (double)(count > 1 ? count - 1 : 1) : NAN;
      mean[c] = (float)sum[c];
      var[c] = (float)v;
      if (f == 1.0) {
        bmean[c] = (float)sum[c];
        bvar[c] = (float)vb;
      } else {
        bmean[c] = (float)((1.0 - f) * mean_in[c] + f * sum[c]);
        bvar[c] = (float)((1.0 - f) * var_in[c] + f * vb);
      }
    }
  } else {
    memcpy(mean, mean_in, (size_t)C * sizeof(float));
    memcpy(var, var_in, (size_t)C * sizeof(float));
    memcpy(bmean, mean_in, (size_t)C * sizeof(float));
    memcpy(bvar, var_in, (size_t)C * sizeof(float));
  }
  for (int64_t c = 0; c < C; c++) {
    a[c] = 1.0f / sqrtf(var[c] + s->eps) * scale[c];
    b[c] = offset[c];
  }
  if (total) {
    bn_job j = {x0, sm_tensor_data(y), a, b, mean, C, inner};
    int64_t rows = s->nchw ? total / inner : total / C, per_row = s->nchw ? inner : C;
    sm__parallel_for(total < 65536 ? NULL : sm__kctx_pool(ctx), rows, per_row >= 16384 ? 1 : 16384 / per_row, bn_rows, &j);
  }
  if (!st) st = vec_out(ctx, 1, C, bmean);
  if (!st) st = vec_out(ctx, 2, C, bvar);
  if (!st) st = vec_out(ctx, 3, C, mean);
  if (!st) st = vec_out(ctx, 4, C, var);
  if (!st) st = vec_out(ctx, 5, 0, NULL);
  sm__kctx_scratch_free(ctx, buf);
  sm__kctx_scratch_free(ctx, acc);
  return st;
}
