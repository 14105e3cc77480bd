/* quantized_nn.c - TF1's quantized arithmetic kernels, the ones graphs quantized by
 * transform_graph (quantize_nodes) carry: Requantize (qint32 -> quint8 / qint8),
 * RequantizationRange and QuantizeDownAndShrinkRange (qint32 -> quint8), QuantizedRelu and
 * QuantizedRelu6 (quint8, qint32), QuantizedMul (quint8 x quint8 -> qint32, TF's 1-D / 2-D
 * broadcasts), QuantizedBiasAdd (quint8 + quint8 and qint8 + qint8 ->
 * qint32), QuantizedMatMul (quint8 x quint8 -> qint32, transposes), QuantizedConv2D (quint8 input,
 * quint8 or qint8 filter -> qint32, SAME / VALID, equal strides), QuantizedMaxPool and
 * QuantizedAvgPool (quint8, qint8; MaxPool over depth too), QuantizedReshape (quint8, qint32) and
 * QuantizedAdd (quint8 + quint8 -> qint32, TF's scalar / vector / vector-tensor fixed-point paths).
 * The dtype combinations are those TF 2.21 registers CPU kernels for; others are refused naming
 * the op and the dtypes. The arithmetic is TF's (quantization_utils.h, requantize.cc,
 * quantized_*_op.cc), in the same precision, so the integers and the float ranges come out equal:
 * the fixed-point qint32 -> quint8 requantization, the Eigen float expressions, the int32 GEMM with
 * zero offsets (gemmlowp's result; wrapping like it), Im2Col's padding with the input's zero
 * offset. TF's messages for bad input; where TF aborts (an empty conv output) a clean error.
 * Checked against TensorFlow by tests/unit/test_ops_e7.c (tools/gen_e7_cases.py); QuantizedAdd by
 * tests/unit/test_ops_f3.c (tools/gen_f3_cases.py). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/nn_internal.h"
#include "ops/quant_int.h"

/* ---- shared ----------------------------------------------------------------------------------- */

/* a prepare's state: a heap copy of s */
static sm_status *keep(const void *s, size_t n, void **state) {
  void *p = malloc(n);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(p, s, n);
  *state = p;
  return NULL;
}

/* How an op words a range input that is not a scalar (TF's kernels differ). */
enum { SC_BACKTICK, SC_PLAIN, SC_SHAPE, SC_POOL, SC_ONE, SC_FIRST /* any shape, its first element */ };

static sm_status *scalar_in(sm_kctx *ctx, int i, const char *name, int style, float *v) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  int r = sm_tensor_rank(t);
  char a[64];
  int ok = style == SC_ONE ? (r == 0 || (r == 1 && sm_tensor_dims(t)[0] == 1)) : r == 0;
  if (style == SC_FIRST && sm_tensor_num_elements(t) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must hold at least one element", name);
  if (!ok && style != SC_FIRST) {
    sm_shape_str(r, sm_tensor_dims(t), a, sizeof a);
    switch (style) {
    case SC_BACKTICK: return sm_status_new(SM_INVALID_ARGUMENT, "`%s` must be rank 0 but is rank %d", name, r);
    case SC_PLAIN: return sm_status_new(SM_INVALID_ARGUMENT, "%s must be rank 0 but is rank %d", name, r);
    case SC_SHAPE: return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar, but got shape%s", name, a);
    case SC_POOL:
      return sm_status_new(SM_INVALID_ARGUMENT, "%s shape must be rank 0 but is rank %d, received shape: %s", name, r, a);
    default: return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar or a vector of 1 element", name);
    }
  }
  if (sm_tensor_dtype(t) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be float", name);
  *v = *(const float *)sm_tensor_data(t);
  return NULL;
}

/* the dtype of input i, checked against the registered ones (a list ended by -1) */
static sm_status *want_dtype(sm_kctx *ctx, const char *op, int i, const char *what, const int *ok, int *dt) {
  *dt = sm_tensor_dtype(sm__kctx_input(ctx, i));
  for (; *ok >= 0; ok++)
    if (*ok == *dt) return NULL;
  return sm_status_new(SM_UNIMPLEMENTED, "%s: no kernel for %s %s (TensorFlow registers none on CPU)", op, what,
                       sm__array_dtype_str(*dt));
}

/* an attr type checked against one value */
static sm_status *want_attr_type(const sm_node *n, const char *op, const char *attr, int want, int def) {
  int t = def;
  if (sm__node_attr(n, attr)) {
    sm_status *st = sm__node_attr_type(n, attr, &t);
    if (st) return st;
  }
  if (t != want)
    return sm_status_new(SM_UNIMPLEMENTED, "%s: no kernel for %s %s (TensorFlow registers only %s)", op, attr,
                         sm__array_dtype_str(t), sm__array_dtype_str(want));
  return NULL;
}

/* TF's QuantizationRangeForMultiplication<T1, T2, qint32> */
static void mul_range(int t1, float min_a, float max_a, int t2, float min_b, float max_b, float *min_c, float *max_c) {
  int64_t lo = 0, hi = 0;
  sm__qtype_range(t1, &lo, &hi);
  float a1 = (max_a - min_a) / (float)(hi - lo);
  sm__qtype_range(t2, &lo, &hi);
  float b1 = (max_b - min_b) / (float)(hi - lo);
  float c1 = a1 * b1;
  *min_c = c1 * (float)INT32_MIN;
  *max_c = c1 * (float)INT32_MAX;
}

/* RequantizeManyInNewRangeUsingEigen<qint32, quint8>: TF's fixed-point path. Eigen's cast of a
 * qint32 to int64 goes through float (the type converts to float, not to int64), so the input is
 * rounded to a float first: 2^31 - 64 reads as 2^31. The int64 product wraps as TF's does. */
static void requant_32_to_u8(const int32_t *x, uint8_t *y, int64_t n, float min_in, float max_in, float min_out,
                             float max_out) {
  const int fp_shift = 16;
  float input_range = max_in - min_in, output_range = max_out - min_out;
  float recip = output_range == 0.0f ? 0.0f : (float)(255.0 / (double)output_range);
  float rezero = (float)((double)(min_in + max_in) / 2.0);
  int64_t range_scale_fp =
      output_range == 0.0f ? 0 : sm__q_f2i64(255.0 * (1 << fp_shift) * (double)input_range / (double)output_range);
  int64_t input_offset_fp = sm__q_f2i64((double)(rezero * recip * (float)(1 << fp_shift)));
  int64_t output_offset_fp =
      output_range == 0.0f ? 0 : sm__q_f2i64(round((double)(1 << fp_shift) * ((double)min_out * 255.0) / (double)output_range));
  int64_t add = (int64_t)((uint64_t)input_offset_fp - (uint64_t)output_offset_fp + (uint64_t)(1 << (fp_shift - 1)));
  for (int64_t i = 0; i < n; i++) {
    int64_t xi = sm__q_f2i64((double)(float)x[i]);
    int64_t prod = (int64_t)((uint64_t)xi * (uint64_t)range_scale_fp);
    int64_t v = (int64_t)((uint64_t)(prod >> 32) + (uint64_t)add) >> fp_shift;
    y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
}

/* RequantizeManyInNewRangeUsingEigen<T1, T2> */
static void requant_many(const sm_tensor *x, int tin, float min_in, float max_in, sm_tensor *y, int tout, float min_out,
                         float max_out) {
  int64_t n = sm_tensor_num_elements(x);
  if (tin == SM_QINT32 && tout == SM_QUINT8) {
    requant_32_to_u8(sm_tensor_data(x), sm_tensor_data(y), n, min_in, max_in, min_out, max_out);
    return;
  }
  sm__requant q;
  sm__requant_init(&q, tin, min_in, max_in, tout, min_out, max_out);
  for (int64_t i = 0; i < n; i++) sm__qstore(sm_tensor_data(y), tout, i, sm__requant_one(&q, sm__qload(sm_tensor_data(x), tin, i)));
}

/* ---- Requantize, RequantizationRange, QuantizeDownAndShrinkRange ------------------------------ */

typedef struct { int out; } out_state;

static sm_status *requantize_prepare(const sm_node *node, void **state) {
  out_state s = {SM_QUINT8};
  sm_status *st = sm__node_attr_type(node, "out_type", &s.out);
  if (st) return st;
  if (s.out != SM_QUINT8 && s.out != SM_QINT8) return sm__math_bad_dtype("Requantize", s.out);
  return keep(&s, sizeof s, state);
}

static const int ONLY_Q32[] = {SM_QINT32, -1};

static sm_status *requantize_compute(const void *state, sm_kctx *ctx) {
  const out_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  float v[4];
  int tin;
  static const char *const names[4] = {"input_min", "input_max", "requested_output_min", "requested_output_max"};
  sm_status *st = want_dtype(ctx, "Requantize", 0, "Tinput", ONLY_Q32, &tin);
  for (int i = 0; i < 4 && !st; i++) st = scalar_in(ctx, 1 + i, names[i], SC_BACKTICK, &v[i]);
  if (st) return st;
  if (!(v[2] <= 0.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "requested_output_min must be <= 0, but got %g", (double)v[2]);
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, s->out, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, v[2]);
  if (!st) st = sm__q_scalar_out(ctx, 2, v[3]);
  if (st) return st;
  requant_many(x, tin, v[0], v[1], y, s->out, v[2], v[3]);
  return NULL;
}

/* the used range of a qint32 tensor as floats (RequantizationRange's logic, also
 * QuantizeDownAndShrinkRange's) */
static void used_range(const sm_tensor *x, float min_in, float max_in, float *lo, float *hi) {
  const int32_t *p = sm_tensor_data(x);
  int32_t mn = INT32_MAX, mx = INT32_MIN;
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    if (p[i] < mn) mn = p[i];
    if (p[i] > mx) mx = p[i];
  }
  *lo = fminf(0.0f, sm__q_to_float(SM_QINT32, mn, min_in, max_in));
  *hi = sm__q_to_float(SM_QINT32, mx, min_in, max_in);
}

/* a qint32 input's range inputs (read as `style` says) and its used range */
static sm_status *range_inputs(sm_kctx *ctx, const char *op, int style, float *mn, float *mx, float *lo, float *hi) {
  int tin;
  sm_status *st = want_dtype(ctx, op, 0, "Tinput", ONLY_Q32, &tin);
  if (!st) st = scalar_in(ctx, 1, "input_min", style, mn);
  if (!st) st = scalar_in(ctx, 2, "input_max", style, mx);
  if (!st) used_range(sm__kctx_input(ctx, 0), *mn, *mx, lo, hi);
  return st;
}

static sm_status *rrange_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  float mn, mx, lo, hi;
  sm_status *st = range_inputs(ctx, "RequantizationRange", SC_FIRST, &mn, &mx, &lo, &hi);
  if (st) return st;
  st = sm__q_scalar_out(ctx, 0, lo);
  return st ? st : sm__q_scalar_out(ctx, 1, hi);
}

static sm_status *qdsr_prepare(const sm_node *node, void **state) {
  (void)state;
  return want_attr_type(node, "QuantizeDownAndShrinkRange", "out_type", SM_QUINT8, -1);
}

static sm_status *qdsr_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  float mn, mx, lo, hi;
  sm_status *st = range_inputs(ctx, "QuantizeDownAndShrinkRange", SC_BACKTICK, &mn, &mx, &lo, &hi);
  if (st) return st;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QUINT8, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, lo);
  if (!st) st = sm__q_scalar_out(ctx, 2, hi);
  if (st) return st;
  requant_32_to_u8(sm_tensor_data(x), sm_tensor_data(y), sm_tensor_num_elements(x), mn, mx, lo, hi);
  return NULL;
}

/* ---- QuantizedRelu, QuantizedRelu6 ------------------------------------------------------------ */

static const int RELU_T[] = {SM_QUINT8, SM_QINT32, -1};

static sm_status *relu_prepare(const sm_node *node, void **state) {
  (void)state;
  int tin = SM_QUINT8, out = SM_QUINT8;
  sm_status *st = sm__node_attr_type(node, "Tinput", &tin);
  if (!st && sm__node_attr(node, "out_type")) st = sm__node_attr_type(node, "out_type", &out);
  if (st) return st;
  if (tin != out)
    return sm_status_new(SM_UNIMPLEMENTED, "%s: no kernel for Tinput %s with out_type %s (TensorFlow registers equal ones only)",
                         sm__node_op(node), sm__array_dtype_str(tin), sm__array_dtype_str(out));
  return NULL;
}

static sm_status *relu_common(sm_kctx *ctx, const char *op, float top) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  float mn, mx;
  int T;
  sm_status *st = want_dtype(ctx, op, 0, "Tinput", RELU_T, &T);
  if (!st) st = scalar_in(ctx, 1, "min_input", SC_BACKTICK, &mn);
  if (!st) st = scalar_in(ctx, 2, "max_input", SC_BACKTICK, &mx);
  if (st) return st;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, T, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, mn);
  if (!st) st = sm__q_scalar_out(ctx, 2, mx);
  if (st) return st;
  int64_t lo = sm__q_from_float(T, 0.0f, mn, mx), hi = isnan(top) ? INT64_MAX : sm__q_from_float(T, top, mn, mx);
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    int64_t v = sm__qload(sm_tensor_data(x), T, i);
    v = v < lo ? lo : v; /* Eigen cwiseMax then cwiseMin */
    v = v > hi ? hi : v;
    sm__qstore(sm_tensor_data(y), T, i, v);
  }
  return NULL;
}

static sm_status *relu_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  return relu_common(ctx, "QuantizedRelu", NAN);
}

static sm_status *relu6_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  return relu_common(ctx, "QuantizedRelu6", 6.0f);
}

/* ---- QuantizedBiasAdd ------------------------------------------------------------------------- */

static sm_status *bias_add_prepare(const sm_node *node, void **state) {
  (void)state;
  return want_attr_type(node, "QuantizedBiasAdd", "out_type", SM_QINT32, -1);
}

static sm_status *bias_add_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int t1 = sm_tensor_dtype(x), t2 = sm_tensor_dtype(b), r = sm_tensor_rank(x);
  char sa[128], sb[128];
  if (!((t1 == SM_QUINT8 && t2 == SM_QUINT8) || (t1 == SM_QINT8 && t2 == SM_QINT8)))
    return sm_status_new(SM_UNIMPLEMENTED, "QuantizedBiasAdd: no kernel for %s input with %s bias (TensorFlow registers "
                         "quint8 + quint8 and qint8 + qint8)", sm__array_dtype_str(t1), sm__array_dtype_str(t2));
  sm_shape_str(r, sm_tensor_dims(x), sa, sizeof sa);
  sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), sb, sizeof sb);
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s", sa);
  if (sm_tensor_rank(b) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "Biases must be 1D: %s", sb);
  int64_t C = sm_tensor_dims(b)[0];
  if (C != sm_tensor_dims(x)[r - 1])
    return sm_status_new(SM_INVALID_ARGUMENT, "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                         sb, sa);
  if (C < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Must provide at least 1 bias");
  float v[4];
  static const char *const names[4] = {"min_input", "max_input", "min_bias", "max_bias"};
  sm_status *st = NULL;
  for (int i = 0; i < 4 && !st; i++) st = scalar_in(ctx, 2 + i, names[i], SC_BACKTICK, &v[i]);
  if (st) return st;
  /* GetOutputMinAndMaxForQuantizedAdd */
  float omax = fmaxf(v[1], fmaxf(-v[0], fmaxf(v[3], -v[2]))) * (float)(1 << 17), omin = -omax;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, r, sm_tensor_dims(x), &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, omin);
  if (!st) st = sm__q_scalar_out(ctx, 2, omax);
  if (st) return st;
  uint32_t zero = (uint32_t)sm__q_from_float(SM_QINT32, 0.0f, omin, omax);
  sm__requant qx, qb;
  sm__requant_init(&qx, t1, v[0], v[1], SM_QINT32, omin, omax);
  sm__requant_init(&qb, t2, v[2], v[3], SM_QINT32, omin, omax);
  uint32_t *yd = sm_tensor_data(y);
  for (int64_t i = 0, n = sm_tensor_num_elements(x); i < n; i++) {
    uint32_t xv = (uint32_t)sm__requant_one(&qx, sm__qload(sm_tensor_data(x), t1, i));
    uint32_t bv = (uint32_t)sm__requant_one(&qb, sm__qload(sm_tensor_data(b), t2, i % C));
    yd[i] = xv + (bv + zero);
  }
  return NULL;
}

/* ---- QuantizedMatMul -------------------------------------------------------------------------- */

typedef struct { int ta, tb; } mm_state;

static sm_status *matmul_prepare(const sm_node *node, void **state) {
  mm_state s = {0, 0};
  sm_status *st = NULL;
  if (sm__node_attr(node, "transpose_a")) st = sm__node_attr_bool(node, "transpose_a", &s.ta);
  if (!st && sm__node_attr(node, "transpose_b")) st = sm__node_attr_bool(node, "transpose_b", &s.tb);
  if (!st) st = want_attr_type(node, "QuantizedMatMul", "Toutput", SM_QINT32, SM_QINT32);
  if (st) return st;
  return keep(&s, sizeof s, state);
}

static const int ONLY_QU8[] = {SM_QUINT8, -1};

static sm_status *matmul_compute(const void *state, sm_kctx *ctx) {
  const mm_state *s = state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  int t1, t2;
  float v[4];
  static const char *const names[4] = {"min_a", "max_a", "min_b", "max_b"};
  sm_status *st = want_dtype(ctx, "QuantizedMatMul", 0, "T1", ONLY_QU8, &t1);
  if (!st) st = want_dtype(ctx, "QuantizedMatMul", 1, "T2", ONLY_QU8, &t2);
  for (int i = 0; i < 4 && !st; i++) st = scalar_in(ctx, 2 + i, names[i], SC_SHAPE, &v[i]);
  if (st) return st;
  if (!(v[1] > v[0])) return sm_status_new(SM_INVALID_ARGUMENT, "max_a must be larger than min_a.");
  if (!(v[3] > v[2])) return sm_status_new(SM_INVALID_ARGUMENT, "max_b must be larger than min_b.");
  if (sm_tensor_rank(a) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[0] is not a matrix");
  if (sm_tensor_rank(b) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[1] is not a matrix");
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  int64_t m = ad[s->ta ? 1 : 0], k = ad[s->ta ? 0 : 1], kb = bd[s->tb ? 1 : 0], n = bd[s->tb ? 0 : 1];
  if (k != kb) {
    char sa[64], sb[64];
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s", sm_shape_str(2, ad, sa, sizeof sa),
                         sm_shape_str(2, bd, sb, sizeof sb));
  }
  float cmin, cmax;
  mul_range(t1, v[0], v[1], t2, v[2], v[3], &cmin, &cmax);
  sm_tensor *c;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, 2, (int64_t[]){m, n}, &c);
  if (!st) st = sm__q_scalar_out(ctx, 1, cmin);
  if (!st) st = sm__q_scalar_out(ctx, 2, cmax);
  if (st) return st;
  uint32_t oa = (uint32_t)(int32_t)sm__q_from_float_unclamped(t1, 0.0f, v[0], v[1]);
  uint32_t ob = (uint32_t)(int32_t)sm__q_from_float_unclamped(t2, 0.0f, v[2], v[3]);
  const uint8_t *A = sm_tensor_data(a), *B = sm_tensor_data(b);
  uint32_t *C = sm_tensor_data(c);
  int64_t as_i = s->ta ? 1 : k, as_l = s->ta ? m : 1, bs_l = s->tb ? 1 : n, bs_j = s->tb ? k : 1;
  uint32_t *row = NULL;
  if (n > 0 && k > 0) {
    row = sm__kctx_scratch(ctx, (size_t)n * sizeof *row, &st);
    if (!row) return st;
  }
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) C[i * n + j] = 0;
    for (int64_t l = 0; l < k; l++) {
      uint32_t av = (uint32_t)A[i * as_i + l * as_l] - oa;
      const uint8_t *bp = B + l * bs_l;
      for (int64_t j = 0; j < n; j++) C[i * n + j] += av * ((uint32_t)bp[j * bs_j] - ob);
    }
  }
  sm__kctx_scratch_free(ctx, row);
  return NULL;
}

/* ---- QuantizedConv2D -------------------------------------------------------------------------- */

typedef struct { int same; int64_t stride; } conv_state;

static sm_status *read4(const sm_node *node, const char *attr, const int64_t **v, int required) {
  size_t n = 0;
  *v = NULL;
  if (!sm__node_attr(node, attr)) {
    if (required) return sm_status_new(SM_INVALID_ARGUMENT, "missing attr '%s'", attr);
    return NULL;
  }
  sm_status *st = sm__node_attr_ints(node, attr, v, &n);
  if (st) return st;
  if (n != 4) return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s field must specify 4 dimensions", attr);
  return NULL;
}

static sm_status *conv_prepare(const sm_node *node, void **state) {
  conv_state s = {0, 1};
  const int64_t *sv, *dv;
  sm_status *st = read4(node, "strides", &sv, 1);
  if (!st) st = sm__nn_same_padding(node, &s.same);
  if (!st) st = want_attr_type(node, "QuantizedConv2D", "out_type", SM_QINT32, SM_QINT32);
  if (!st) st = read4(node, "dilations", &dv, 0);
  if (st) return st;
  if (sv[0] != 1 || sv[3] != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Current implementation does not yet support strides in the batch and depth dimensions.");
  if (sv[1] != sv[2])
    return sm_status_new(SM_INVALID_ARGUMENT, "Current implementation only supports equal length strides in the row and column dimensions.");
  if (sv[1] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConv2D: strides must be positive");
  if (dv && (dv[0] != 1 || dv[3] != 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Current implementation does not yet support dilations in the batch and depth dimensions.");
  if (dv && (dv[1] != 1 || dv[2] != 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Current implementation only supports dilated rate as 1 in the row and column dimensions.");
  s.stride = sv[1];
  return keep(&s, sizeof s, state);
}


static sm_status *conv_compute(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *w = sm__kctx_input(ctx, 1);
  int t1, t2;
  sm_status *st = want_dtype(ctx, "QuantizedConv2D", 0, "Tinput", ONLY_QU8, &t1);
  if (!st) st = want_dtype(ctx, "QuantizedConv2D", 1, "Tfilter", ONLY_QU8, &t2);
  if (st) return st;
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be rank 4 but is rank %d", sm_tensor_rank(x));
  if (sm_tensor_rank(w) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "filter must be rank 4 but is rank %d", sm_tensor_rank(w));
  float v[4];
  static const char *const names[4] = {"min_input", "max_input", "min_filter", "max_filter"};
  for (int i = 0; i < 4 && !st; i++) st = scalar_in(ctx, 2 + i, names[i], SC_PLAIN, &v[i]);
  if (st) return st;
  const int64_t *xd = sm_tensor_dims(x), *wd = sm_tensor_dims(w);
  int64_t N = xd[0], H = xd[1], W = xd[2], C = xd[3], KH = wd[0], KW = wd[1], K = wd[3];
  if (wd[2] != C)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)C,
                         (long long)wd[2]);
  if (N == 0 || H == 0 || W == 0 || C == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Invalid input: Shapes dimension cannot be 0.");
  int64_t OH, OW, pt, pl;
  int pad = s->same ? SM_NN_SAME : SM_NN_VALID;
  st = sm__nn_out_size(H, KH, 1, s->stride, pad, 0, 0, &OH, &pt);
  if (!st) st = sm__nn_out_size(W, KW, 1, s->stride, pad, 0, 0, &OW, &pl);
  if (st) return st;
  if (OH <= 0 || OW <= 0 || K <= 0 || KH <= 0 || KW <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "QuantizedConv2D: the output or the filter is empty (input %lldx%lld, filter "
                         "%lldx%lld, %lld out channels); TensorFlow aborts here", (long long)H, (long long)W, (long long)KH,
                         (long long)KW, (long long)K);
  float cmin, cmax;
  mul_range(t1, v[0], v[1], t2, v[2], v[3], &cmin, &cmax);
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, 4, (int64_t[]){N, OH, OW, K}, &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, cmin);
  if (!st) st = sm__q_scalar_out(ctx, 2, cmax);
  if (st) return st;
  int32_t oin = (int32_t)sm__q_from_float_unclamped(t1, 0.0f, v[0], v[1]);
  uint32_t oi = (uint32_t)oin, of = (uint32_t)(int32_t)sm__q_from_float_unclamped(t2, 0.0f, v[2], v[3]);
  /* Im2Col fills the padding with the input's zero offset stored as the input dtype */
  uint32_t padv = 0;
  uint32_t *acc = sm__kctx_scratch(ctx, (size_t)K * sizeof *acc, &st);
  if (!acc) return st;
  const uint8_t *X = sm_tensor_data(x);
  const void *Wd = sm_tensor_data(w);
  uint32_t *Y = sm_tensor_data(y);
  for (int64_t b = 0; b < N; b++)
    for (int64_t oy = 0; oy < OH; oy++)
      for (int64_t ox = 0; ox < OW; ox++) {
        memset(acc, 0, (size_t)K * sizeof *acc);
        for (int64_t ky = 0; ky < KH; ky++) {
          int64_t iy = oy * s->stride - pt + ky;
          for (int64_t kx = 0; kx < KW; kx++) {
            int64_t ix = ox * s->stride - pl + kx;
            int inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
            for (int64_t c = 0; c < C; c++) {
              uint32_t xv = inside ? (uint32_t)X[((b * H + iy) * W + ix) * C + c] - oi : padv;
              int64_t wo = ((ky * KW + kx) * C + c) * K;
              if (t2 == SM_QUINT8) {
                const uint8_t *wp = (const uint8_t *)Wd + wo;
                for (int64_t k = 0; k < K; k++) acc[k] += xv * ((uint32_t)wp[k] - of);
              } else {
                const int8_t *wp = (const int8_t *)Wd + wo;
                for (int64_t k = 0; k < K; k++) acc[k] += xv * ((uint32_t)(int32_t)wp[k] - of);
              }
            }
          }
        }
        memcpy(Y + ((b * OH + oy) * OW + ox) * K, acc, (size_t)K * sizeof *acc);
      }
  sm__kctx_scratch_free(ctx, acc);
  return NULL;
}

/* ---- QuantizedMul ----------------------------------------------------------------------------- */

/* How many dimension groups TF's BCast leaves for shapes a and b (its x_reshape().size(): runs of
 * dims broadcast the same way merge, dims 1 in both drop); 0 when they do not broadcast. The
 * broadcast shape goes to od. */
static int bcast_groups(const sm_tensor *a, const sm_tensor *b, int *orank, int64_t *od) {
  int ra = sm_tensor_rank(a), rb = sm_tensor_rank(b), r = ra > rb ? ra : rb, prev = -1, groups = 0;
  for (int i = 0; i < r; i++) {
    int64_t xa = i < r - ra ? 1 : sm_tensor_dims(a)[i - (r - ra)], xb = i < r - rb ? 1 : sm_tensor_dims(b)[i - (r - rb)];
    if (xa != xb && xa != 1 && xb != 1) return 0;
    od[i] = xa == 1 ? xb : xa;
  }
  for (int i = r - 1; i >= 0; i--) {
    int64_t xa = i < r - ra ? 1 : sm_tensor_dims(a)[i - (r - ra)], xb = i < r - rb ? 1 : sm_tensor_dims(b)[i - (r - rb)];
    if (xa == 1 && xb == 1) continue;
    int state = xa == xb ? 0 : xa == 1 ? 1 : 2;
    if (state != prev) groups++, prev = state;
  }
  *orank = r;
  return groups ? groups : 1;
}

/* QuantizedMul's and QuantizedAdd's: qint32 out, quint8 operands */
static sm_status *qbin_prepare(const sm_node *node, void **state) {
  (void)state;
  return want_attr_type(node, sm__node_op(node), "Toutput", SM_QINT32, SM_QINT32);
}

/* TF's BCast of inputs 0 and 1: the qint32 output z and the group count; a, b the shapes as text */
static sm_status *qbin_output(sm_kctx *ctx, int *nd, sm_tensor **z, char a[128], char b[128]) {
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  int64_t od[SM_MAX_RANK];
  int orank = 0;
  *nd = bcast_groups(x, y, &orank, od);
  sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), a, 128);
  sm_shape_str(sm_tensor_rank(y), sm_tensor_dims(y), b, 128);
  if (!*nd) return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s", a, b);
  return sm__kctx_alloc_output(ctx, 0, SM_QINT32, orank, od, z);
}

static sm_status *qbin_dtypes(sm_kctx *ctx, const char *op) {
  int t;
  sm_status *st = want_dtype(ctx, op, 0, "T1", ONLY_QU8, &t);
  return st ? st : want_dtype(ctx, op, 1, "T2", ONLY_QU8, &t);
}

static sm_status *qmul_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  int t1 = SM_QUINT8, t2 = SM_QUINT8;
  sm_status *st = qbin_dtypes(ctx, "QuantizedMul");
  if (st) return st;
  float v[4];
  static const char *const names[4] = {"min_x", "max_x", "min_y", "max_y"};
  for (int i = 0; i < 4; i++) {
    if (sm_tensor_rank(sm__kctx_input(ctx, 2 + i)) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar", names[i]);
    if ((st = scalar_in(ctx, 2 + i, names[i], SC_PLAIN, &v[i]))) return st;
  }
  int nd;
  char a[128], b[128];
  sm_tensor *z;
  if ((st = qbin_output(ctx, &nd, &z, a, b))) return st;
  if (!(v[1] > v[0])) return sm_status_new(SM_INVALID_ARGUMENT, "max_x must be larger than min_a.");
  if (!(v[3] > v[2])) return sm_status_new(SM_INVALID_ARGUMENT, "max_x must be larger than min_b.");
  uint32_t ox = (uint32_t)(int32_t)sm__q_from_float_unclamped(t1, 0.0f, v[0], v[1]);
  uint32_t oy = (uint32_t)(int32_t)sm__q_from_float_unclamped(t2, 0.0f, v[2], v[3]);
  const uint8_t *X = sm_tensor_data(x), *Y = sm_tensor_data(y);
  uint32_t *Z = sm_tensor_data(z);
  int64_t nx = sm_tensor_num_elements(x), ny = sm_tensor_num_elements(y);
  if (nd <= 1) { /* ScalarMultiply / VectorMultiply */
    if (nx == 1)
      for (int64_t i = 0; i < ny; i++) Z[i] = ((uint32_t)Y[i] - oy) * ((uint32_t)X[0] - ox);
    else if (ny == 1)
      for (int64_t i = 0; i < nx; i++) Z[i] = ((uint32_t)X[i] - ox) * ((uint32_t)Y[0] - oy);
    else
      for (int64_t i = 0; i < nx; i++) Z[i] = ((uint32_t)X[i] - ox) * ((uint32_t)Y[i] - oy);
  } else if (nd == 2) { /* VectorTensorMultiply: the smaller repeats along the larger, as TF does */
    int xs = nx < ny;
    const uint8_t *vd = xs ? X : Y, *td = xs ? Y : X;
    uint32_t vo = xs ? ox : oy, to = xs ? oy : ox;
    int64_t vn = xs ? nx : ny, tn = xs ? ny : nx;
    if (vn == 0) return sm_status_new(SM_INVALID_ARGUMENT, "vector must have at least 1 element");
    if (tn > sm_tensor_num_elements(z)) tn = sm_tensor_num_elements(z);
    for (int64_t i = 0; i < tn; i++) Z[i] = ((uint32_t)vd[i % vn] - vo) * ((uint32_t)td[i] - to);
  } else {
    return sm_status_new(SM_UNIMPLEMENTED, "Broadcast between %s and %s is not supported yet.", a, b);
  }
  float zmin, zmax;
  mul_range(t1, v[0], v[1], t2, v[2], v[3], &zmin, &zmax);
  st = sm__q_scalar_out(ctx, 1, zmin);
  return st ? st : sm__q_scalar_out(ctx, 2, zmax);
}

/* ---- QuantizedAdd ----------------------------------------------------------------------------- */

/* TF's fixed-point quint8 -> qint32 step of QuantizedAdd: v in [mn, mx] as x0 + v * mult, clamped */
typedef struct { int64_t x0; int32_t mult; } add8;

static add8 add8_init(float mn, float mx, float omin, float omax) {
  add8 a;
  a.x0 = sm__q_from_float_unclamped(SM_QINT32, sm__q_to_float(SM_QUINT8, 0, mn, mx), omin, omax);
  int64_t x1 = sm__q_from_float_unclamped(SM_QINT32, sm__q_to_float(SM_QUINT8, 1, mn, mx), omin, omax);
  a.mult = (int32_t)(uint32_t)((uint64_t)x1 - (uint64_t)a.x0);
  return a;
}

static uint32_t add8_one(const add8 *a, uint8_t v) {
  int64_t r = (int64_t)((uint64_t)a->x0 + (uint64_t)((int64_t)v * a->mult));
  return (uint32_t)(int32_t)(r < INT32_MIN ? INT32_MIN : r > INT32_MAX ? INT32_MAX : r);
}

static sm_status *qadd_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *y = sm__kctx_input(ctx, 1);
  sm_status *st = qbin_dtypes(ctx, "QuantizedAdd");
  float v[4];
  static const char *const names[4] = {"min_x", "max_x", "min_y", "max_y"};
  for (int i = 0; i < 4 && !st; i++) st = scalar_in(ctx, 2 + i, names[i], SC_BACKTICK, &v[i]);
  if (st) return st;
  int nd;
  char a[128], b[128];
  sm_tensor *z;
  if ((st = qbin_output(ctx, &nd, &z, a, b))) return st;
  if (!(v[1] > v[0])) return sm_status_new(SM_INVALID_ARGUMENT, "max_x must be larger than min_x.");
  if (!(v[3] > v[2])) return sm_status_new(SM_INVALID_ARGUMENT, "max_y must be larger than min_y.");
  /* an output range symmetric around zero, 2^14 times the widest input */
  float big = fmaxf(fabsf(fminf(v[0], v[2])), fabsf(fmaxf(v[1], v[3]))), zmax = big * (float)(1 << 14), zmin = -zmax;
  add8 ax = add8_init(v[0], v[1], zmin, zmax), ay = add8_init(v[2], v[3], zmin, zmax);
  const uint8_t *X = sm_tensor_data(x), *Y = sm_tensor_data(y);
  uint32_t *Z = sm_tensor_data(z);
  int64_t nx = sm_tensor_num_elements(x), ny = sm_tensor_num_elements(y);
  if (nd <= 1 && (nx == 1 || ny == 1)) { /* ScalarAddition: the scalar through RequantizeInNewRange */
    int xs = nx == 1;
    const uint8_t *full = xs ? Y : X;
    const add8 *af = xs ? &ay : &ax;
    float smn = xs ? v[0] : v[2], smx = xs ? v[1] : v[3];
    uint32_t sv = (uint32_t)sm__q_from_float(SM_QINT32, sm__q_to_float(SM_QUINT8, xs ? X[0] : Y[0], smn, smx), zmin, zmax);
    for (int64_t i = 0, n = xs ? ny : nx; i < n; i++) Z[i] = add8_one(af, full[i]) + sv;
  } else if (nd <= 1) { /* VectorAddition */
    for (int64_t i = 0; i < nx; i++) Z[i] = add8_one(&ax, X[i]) + add8_one(&ay, Y[i]);
  } else if (nd == 2) { /* VectorTensorAddition: the smaller repeats along the larger */
    int xs = nx < ny;
    const uint8_t *vd = xs ? X : Y, *td = xs ? Y : X;
    const add8 *av = xs ? &ax : &ay, *at = xs ? &ay : &ax;
    int64_t vn = xs ? nx : ny, tn = xs ? ny : nx;
    if (vn == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Must have some elements to add");
    if (tn > sm_tensor_num_elements(z)) tn = sm_tensor_num_elements(z);
    for (int64_t i = 0; i < tn; i++) Z[i] = add8_one(av, vd[i % vn]) + add8_one(at, td[i]);
  } else {
    return sm_status_new(SM_UNIMPLEMENTED, "Broadcast between %s and %s is not supported yet.", a, b);
  }
  st = sm__q_scalar_out(ctx, 1, zmin);
  return st ? st : sm__q_scalar_out(ctx, 2, zmax);
}

/* ---- QuantizedMaxPool, QuantizedAvgPool ------------------------------------------------------- */

typedef struct { int same, avg; int64_t k[4], s[4]; } pool_state;

static sm_status *pool_prepare_common(const sm_node *node, void **state, int avg) {
  pool_state s = {0};
  s.avg = avg;
  const int64_t *kv, *sv;
  sm_status *st = read4(node, "ksize", &kv, 1);
  if (!st) st = read4(node, "strides", &sv, 1);
  if (!st) st = sm__nn_same_padding(node, &s.same);
  if (st) return st;
  memcpy(s.k, kv, sizeof s.k);
  memcpy(s.s, sv, sizeof s.s);
  if (s.k[0] != 1 || s.s[0] != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Pooling is not yet supported on the batch dimension.");
  for (int i = 0; i < 4; i++)
    if (s.k[i] < 1 || s.s[i] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: ksize and strides must be positive", sm__node_op(node));
  if (avg && (s.k[3] != 1 || s.s[3] != 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Non-spatial pooling is not yet supported. Volunteers? :)");
  return keep(&s, sizeof s, state);
}

static sm_status *maxpool_prepare(const sm_node *node, void **state) { return pool_prepare_common(node, state, 0); }
static sm_status *avgpool_prepare(const sm_node *node, void **state) { return pool_prepare_common(node, state, 1); }

static const int POOL_T[] = {SM_QUINT8, SM_QINT8, -1};

static sm_status *pool_compute(const void *state, sm_kctx *ctx) {
  const pool_state *s = state;
  const char *op = s->avg ? "QuantizedAvgPool" : "QuantizedMaxPool";
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int T;
  float mn, mx;
  sm_status *st = want_dtype(ctx, op, 0, "T", POOL_T, &T);
  if (!st) st = scalar_in(ctx, 1, "min_input", SC_POOL, &mn);
  if (!st) st = scalar_in(ctx, 2, "max_input", SC_POOL, &mx);
  if (st) return st;
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "tensor_in_shape must have 2 spatial dimensions. %d 0", sm_tensor_rank(x));
  const int64_t *xd = sm_tensor_dims(x);
  int64_t N = xd[0], H = xd[1], W = xd[2], C = xd[3], OH, OW, OC = C, pt, pl;
  int depth = s->k[3] != 1;
  if (depth) { /* MaxPool over depth only (TF's depthwise max pooling) */
    if (s->k[1] != 1 || s->k[2] != 1 || s->s[1] != 1 || s->s[2] != 1)
      return sm_status_new(SM_UNIMPLEMENTED, "MaxPooling supports exactly one of pooling across depth or pooling across width/height.");
    if (s->k[3] != s->s[3])
      return sm_status_new(SM_INVALID_ARGUMENT, "depth_window must be equal to depth_stride.");
    if (C % s->k[3])
      return sm_status_new(SM_INVALID_ARGUMENT, "Depthwise max pooling requires the depth window to evenly divide the input depth");
    OH = H, OW = W, pt = pl = 0, OC = C / s->k[3];
  } else {
    int pad = s->same ? SM_NN_SAME : SM_NN_VALID;
    st = sm__nn_out_size(H, s->k[1], 1, s->s[1], pad, 0, 0, &OH, &pt);
    if (!st) st = sm__nn_out_size(W, s->k[2], 1, s->s[2], pad, 0, 0, &OW, &pl);
    if (st) return st;
  }
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, T, 4, (int64_t[]){N, OH, OW, OC}, &y);
  if (!st) st = sm__q_scalar_out(ctx, 1, mn);
  if (!st) st = sm__q_scalar_out(ctx, 2, mx);
  if (st) return st;
  const void *X = sm_tensor_data(x);
  void *Y = sm_tensor_data(y);
  for (int64_t b = 0; b < N; b++)
    for (int64_t oy = 0; oy < OH; oy++)
      for (int64_t ox = 0; ox < OW; ox++)
        for (int64_t c = 0; c < OC; c++) {
          int64_t out = ((b * OH + oy) * OW + ox) * OC + c;
          if (depth) {
            int64_t best = INT64_MIN;
            for (int64_t j = 0; j < s->k[3]; j++) {
              int64_t v = sm__qload(X, T, ((b * H + oy) * W + ox) * C + c * s->k[3] + j);
              best = v > best ? v : best;
            }
            sm__qstore(Y, T, out, best);
            continue;
          }
          int64_t y0 = oy * s->s[1] - pt, x0 = ox * s->s[2] - pl;
          int64_t y1 = y0 + s->k[1] < H ? y0 + s->k[1] : H, x1 = x0 + s->k[2] < W ? x0 + s->k[2] : W;
          y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
          int64_t best = INT64_MIN, count = 0;
          int32_t sum = 0;
          for (int64_t iy = y0; iy < y1; iy++)
            for (int64_t ix = x0; ix < x1; ix++) {
              int64_t v = sm__qload(X, T, ((b * H + iy) * W + ix) * C + c);
              best = v > best ? v : best;
              sum += (int32_t)v;
              count++;
            }
          if (s->avg) sm__qstore(Y, T, out, count ? sum / (int32_t)count : 0);
          else sm__qstore(Y, T, out, count ? best : 0);
        }
  return NULL;
}

/* ---- QuantizedReshape ------------------------------------------------------------------------- */

static const int RESHAPE_T[] = {SM_QUINT8, SM_QINT32, -1};

static sm_status *qreshape_compute(const void *state, sm_kctx *ctx) {
  int T;
  float mn, mx;
  sm_status *st = want_dtype(ctx, "QuantizedReshape", 0, "T", RESHAPE_T, &T);
  if (!st) st = scalar_in(ctx, 2, "input_min", SC_ONE, &mn);
  if (!st) st = scalar_in(ctx, 3, "input_max", SC_ONE, &mx);
  if (!st) st = sm__array_compute_reshape(state, ctx);
  if (!st) st = sm__q_scalar_out(ctx, 1, mn);
  return st ? st : sm__q_scalar_out(ctx, 2, mx);
}

const sm_kernel sm_kernels_quantized_nn[] = {
    {"Requantize", requantize_prepare, requantize_compute, free, 0},
    {"RequantizationRange", NULL, rrange_compute, NULL, 0},
    {"QuantizeDownAndShrinkRange", qdsr_prepare, qdsr_compute, NULL, 0},
    {"QuantizedRelu", relu_prepare, relu_compute, NULL, 0},
    {"QuantizedRelu6", relu_prepare, relu6_compute, NULL, 0},
    {"QuantizedBiasAdd", bias_add_prepare, bias_add_compute, NULL, 0},
    {"QuantizedMatMul", matmul_prepare, matmul_compute, free, 0},
    {"QuantizedConv2D", conv_prepare, conv_compute, free, 0},
    {"QuantizedMaxPool", maxpool_prepare, pool_compute, free, 0},
    {"QuantizedAvgPool", avgpool_prepare, pool_compute, free, 0},
    {"QuantizedReshape", NULL, qreshape_compute, NULL, 0},
    {"QuantizedMul", qbin_prepare, qmul_compute, NULL, 0},
    {"QuantizedAdd", qbin_prepare, qadd_compute, NULL, 0},
    {0},
};
