/* rnn_cudnn.c - CPU kernels for TensorFlow's cuDNN RNN ops: CudnnRNN, CudnnRNNV2, CudnnRNNV3
 * (the forward pass; what Keras 3 / tf_keras export for LSTM and GRU layers when a GPU is visible
 * at trace time, and what TF1 graphs built with tf.raw_ops / contrib cudnn_rnn hold), and
 * CudnnRNNParamsSize. TensorFlow itself has GPU kernels only, so such a model does not serve on a
 * CPU there; here it does, with the arithmetic cuDNN documents:
 *   rnn_relu / rnn_tanh: h' = act(W x + bW + R h + bR)
 *   lstm (gates i, f, c, o): i, f, o = sigmoid(W. x + bW. + R. h + bR.), c~ = tanh(Wc x + bWc + Rc h + bRc),
 *        c' = f c + i c~, h' = o tanh(c')
 *   gru (gates r, z, n; cuDNN's order, which Keras's CUDA build swaps its z, r, h into):
 *        r, z = sigmoid(W. x + bW. + R. h + bR.), n = tanh(Wn x + bWn + r (Rn h + bRn)), h' = (1 - z) n + z h
 * params is cuDNN's flat buffer: the matrices of every pseudo-layer (layer-major, then direction:
 * forward, backward), each pseudo-layer's input matrices W_0..W_{g-1} ([num_units, in] row-major)
 * then its recurrent ones R_0..R_{g-1} ([num_units, num_units]), followed by the biases of every
 * pseudo-layer in the same order (bW_0..bW_{g-1}, bR_0..bR_{g-1}, num_units each). For one layer
 * in one direction (everything Keras emits) that is Keras's _standardize_cudnn_weights layout;
 * for several layers / directions it is the order of cuDNN's legacy weight-space API (all
 * matrices, then all biases), which this machine cannot check against a GPU.
 * Layer k > 0 reads the previous layer's output (both directions concatenated). input_h / input_c
 * are [num_layers * dirs, batch, num_units] ([batch, num_layers * dirs, num_units] when V3's
 * time_major is false), pseudo-layer order. V3's sequence_lengths: a row's steps past its length
 * give zero outputs and leave its state alone; the backward direction starts at the row's last
 * valid step (cuDNN's padded IO). dropout applies only while training: ignored (inference).
 * reserve_space / host_reserved come out empty. input_mode linear_input (and auto_select where
 * input_size != num_units, which TF maps to it); skip_input and V3's num_proj are refused as
 * unimplemented. float and double computed in their own type, half and bfloat16 in float. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "base/vmath.h"
#include "ops/math_int.h"
#include "ops/nn_internal.h"
#include "ops/nn_raw.h"
#include "runtime/kernel.h"

enum { MODE_RELU, MODE_TANH, MODE_LSTM, MODE_GRU };

typedef struct cudnn_state {
  int version; /* 1, 2, 3; 0 for CudnnRNNParamsSize */
  int mode, dirs, skip_input, auto_select, time_major, is_training;
  int64_t num_proj;
  int dtype;
} cudnn_state;

static int mode_gates(int mode) { return mode == MODE_LSTM ? 4 : mode == MODE_GRU ? 3 : 1; }
static const char *mode_name(int mode) {
  return mode == MODE_LSTM ? "lstm" : mode == MODE_GRU ? "gru" : mode == MODE_RELU ? "rnn_relu" : "rnn_tanh";
}

static sm_status *str_attr(const sm_node *n, const char *name, const char *def, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", def);
  if (!sm__node_attr(n, name)) return NULL;
  const char *p;
  size_t len;
  sm_status *st = sm__node_attr_string(n, name, &p, &len);
  if (st) return st;
  snprintf(buf, cap, "%.*s", (int)(len < cap - 1 ? len : cap - 1), p);
  if (len >= cap) buf[cap - 2] = '?'; /* too long to be a valid value: fails the match below */
  return NULL;
}

static sm_status *cudnn_prepare(const sm_node *node, void **state) {
  cudnn_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  s->version = !strcmp(op, "CudnnRNNV3") ? 3 : !strcmp(op, "CudnnRNNV2") ? 2 : !strcmp(op, "CudnnRNN") ? 1 : 0;
  s->time_major = 1;
  s->is_training = 1;
  char buf[32];
  sm_status *st = str_attr(node, "rnn_mode", "lstm", buf, sizeof buf);
  if (!st) {
    if (!strcmp(buf, "lstm")) s->mode = MODE_LSTM;
    else if (!strcmp(buf, "gru")) s->mode = MODE_GRU;
    else if (!strcmp(buf, "rnn_relu")) s->mode = MODE_RELU;
    else if (!strcmp(buf, "rnn_tanh")) s->mode = MODE_TANH;
    else st = sm_status_new(SM_INVALID_ARGUMENT, "Invalid RNN mode: %s", buf);
  }
  if (!st && !(st = str_attr(node, "input_mode", "linear_input", buf, sizeof buf))) {
    if (!strcmp(buf, "skip_input")) s->skip_input = 1;
    else if (!strcmp(buf, "auto_select")) s->auto_select = 1;
    else if (strcmp(buf, "linear_input")) st = sm_status_new(SM_INVALID_ARGUMENT, "Invalid RNN input mode: %s", buf);
  }
  if (!st && !(st = str_attr(node, "direction", "unidirectional", buf, sizeof buf))) {
    if (!strcmp(buf, "bidirectional")) s->dirs = 2;
    else if (!strcmp(buf, "unidirectional")) s->dirs = 1;
    else st = sm_status_new(SM_INVALID_ARGUMENT, "Invalid RNN direction mode: %s", buf);
  }
  if (!st && sm__node_attr(node, "num_proj")) st = sm__node_attr_int(node, "num_proj", &s->num_proj);
  if (!st && s->version == 3 && sm__node_attr(node, "time_major")) st = sm__node_attr_bool(node, "time_major", &s->time_major);
  if (!st && s->version && sm__node_attr(node, "is_training")) st = sm__node_attr_bool(node, "is_training", &s->is_training);
  if (!st && s->version) {
    s->dtype = SM_FLOAT;
    if (sm__node_attr(node, "T")) st = sm__node_attr_type(node, "T", &s->dtype);
    if (!st && s->dtype != SM_FLOAT && s->dtype != SM_DOUBLE && s->dtype != SM_HALF && s->dtype != SM_BFLOAT16)
      st = sm_status_new(SM_INVALID_ARGUMENT, "%s: T must be half, bfloat16, float or double, not %s", op,
                         sm_dtype_name(s->dtype));
  }
  if (!st && s->num_proj != 0)
    st = sm_status_new(SM_UNIMPLEMENTED, "%s: num_proj %lld (an LSTM with a recurrent projection) is not supported",
                       op, (long long)s->num_proj);
  if (st) {
    free(s);
    return st;
  }
  sm__nn_blas_init();
  *state = s;
  return NULL;
}

/* The number of elements cuDNN's params buffer holds for this model (linear input). */
static int64_t params_size(int mode, int dirs, int64_t layers, int64_t units, int64_t input) {
  int64_t g = mode_gates(mode), n = 0;
  for (int64_t l = 0; l < layers; l++) {
    int64_t in = l ? units * dirs : input;
    n += dirs * (g * units * in + g * units * units + 2 * g * units);
  }
  return n;
}

/* TF's TensorShape::DebugString: [2,3,4]. */
static const char *shape_str(const sm_tensor *t, char *buf, size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < sm_tensor_rank(t) && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)sm_tensor_dims(t)[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
  return buf;
}

static double elem_get(const void *p, int dt, int64_t i) {
  switch (dt) {
  case SM_FLOAT: return ((const float *)p)[i];
  case SM_DOUBLE: return ((const double *)p)[i];
  case SM_HALF: return sm__half_to_f32(((const uint16_t *)p)[i]);
  default: return sm__bf16_to_f32(((const uint16_t *)p)[i]);
  }
}

static void elem_set(void *p, int dt, int64_t i, double v) {
  switch (dt) {
  case SM_FLOAT: ((float *)p)[i] = (float)v; break;
  case SM_DOUBLE: ((double *)p)[i] = v; break;
  case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v); break;
  default: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v); break;
  }
}

/* The model's dimensions and the work the kernel does, independent of the element type. */
typedef struct rnn_dims {
  int mode, dirs, g;
  int64_t T, B, I, U, L;
  const int64_t *len; /* [B] */
} rnn_dims;

/* One step of one row: xp the input projection (bW added), rc the recurrent one (bR added), g*U
 * each; h the row's state (updated), c its cell (LSTM), o where the output goes, gt g*U + U of
 * scratch. The float cell runs vmath's sigmoid and tanh over the gate vectors. */
static void cell_f32(int mode, int64_t U, const float *xp, const float *rc, float *h, float *c, float *o, float *gt) {
  int64_t g = mode_gates(mode);
  if (mode == MODE_GRU) {
    for (int64_t u = 0; u < 2 * U; u++) gt[u] = xp[u] + rc[u];
    sm__vsigmoid_f32(gt, gt, 2 * U); /* r, z */
    for (int64_t u = 0; u < U; u++) gt[2 * U + u] = xp[2 * U + u] + gt[u] * rc[2 * U + u];
    sm__vtanh_f32(gt + 2 * U, gt + 2 * U, U);
    for (int64_t u = 0; u < U; u++) o[u] = gt[U + u] * h[u] + (1.0f - gt[U + u]) * gt[2 * U + u];
  } else {
    for (int64_t u = 0; u < g * U; u++) gt[u] = xp[u] + rc[u];
    if (mode == MODE_LSTM) {
      sm__vsigmoid_f32(gt, gt, 2 * U); /* i, f */
      sm__vtanh_f32(gt + 2 * U, gt + 2 * U, U);
      sm__vsigmoid_f32(gt + 3 * U, gt + 3 * U, U);
      for (int64_t u = 0; u < U; u++) c[u] = gt[U + u] * c[u] + gt[u] * gt[2 * U + u];
      sm__vtanh_f32(c, gt + 4 * U, U);
      for (int64_t u = 0; u < U; u++) o[u] = gt[3 * U + u] * gt[4 * U + u];
    } else if (mode == MODE_TANH) {
      sm__vtanh_f32(gt, o, U);
    } else {
      for (int64_t u = 0; u < U; u++) o[u] = gt[u] > 0 ? gt[u] : gt[u] < 0 ? 0.0f : gt[u]; /* relu; NaN stays */
    }
  }
  memcpy(h, o, (size_t)U * sizeof *h);
}

static double sigm_f64(double v) { return 1 / (1 + exp(-v)); }

static void cell_f64(int mode, int64_t U, const double *xp, const double *rc, double *h, double *c, double *o,
                     double *gt) {
  (void)gt;
  for (int64_t u = 0; u < U; u++) {
    if (mode == MODE_LSTM) {
      double ig = sigm_f64(xp[u] + rc[u]), fg = sigm_f64(xp[U + u] + rc[U + u]);
      double cg = tanh(xp[2 * U + u] + rc[2 * U + u]), og = sigm_f64(xp[3 * U + u] + rc[3 * U + u]);
      c[u] = fg * c[u] + ig * cg;
      o[u] = og * tanh(c[u]);
    } else if (mode == MODE_GRU) {
      double r = sigm_f64(xp[u] + rc[u]), z = sigm_f64(xp[U + u] + rc[U + u]);
      o[u] = z * h[u] + (1 - z) * tanh(xp[2 * U + u] + r * rc[2 * U + u]);
    } else {
      double v = xp[u] + rc[u];
      o[u] = mode == MODE_TANH ? tanh(v) : v > 0 ? v : v < 0 ? 0 : v;
    }
  }
  memcpy(h, o, (size_t)U * sizeof *h);
}

typedef struct small_mm {
  int64_t m, n, k;
  const float *a, *b, *bias;
  float *c;
} small_mm;

static void small_mm_cols(void *ctx, int64_t n0, int64_t n1) {
  const small_mm *j = ctx;
  sm__nn_sgemm_small(j->m, n0, n1, j->k, j->a, j->k, j->b, j->n, j->c, j->n);
  for (int64_t i = 0; i < j->m; i++)
    for (int64_t q = n0; q < n1; q++) j->c[i * j->n + q] += j->bias[q];
}

/* C[m, n] = A[m, k] B[k, n] + bias[n] (row-major). The recurrent product of a step has the batch's
 * few rows: nn_gemm.c's small-m loop over column ranges (B read once, never packed, as BLAS would
 * pack all of it every step); the input projection of all steps at once goes to BLAS. */
static void mm_f32(sm_threadpool *pool, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                   const float *bias, float *c) {
  if (m > 0 && m <= SM_NN_SMALL_M && k > 0) {
    small_mm j = {m, n, k, a, b, bias, c};
    sm__parallel_for(pool, n, 64, small_mm_cols, &j);
    return;
  }
  sm__nn_matmul_f32(pool, 0, 0, m, n, k, a, b, bias, SM_NN_ACT_NONE, 0, c); /* k 0: c = bias */
}

static void mm_f64(sm_threadpool *pool, int64_t m, int64_t n, int64_t k, const double *a, const double *b,
                   const double *bias, double *c) {
  (void)pool;
  for (int64_t i = 0; i < m; i++) {
    double *ci = c + i * n;
    for (int64_t j = 0; j < n; j++) ci[j] = 0;
    for (int64_t p = 0; p < k; p++) {
      double av = a[i * k + p];
      const double *bp = b + p * n;
      for (int64_t j = 0; j < n; j++) ci[j] += av * bp[j];
    }
    for (int64_t j = 0; j < n; j++) ci[j] += bias[j];
  }
}

/* The network, per element type: W the working type (float or double), SFX the suffix. x [T, B, I]
 * time-major input, h0/c0 [L*dirs, B, U], out [T, B, dirs*U] (the last layer's), hN/cN as h0;
 * params in the work layout (each pseudo-layer's matrices transposed: W^T [in, g*U], R^T
 * [U, g*U]; the biases as given). Scratch: two layer buffers [T, B, dirs*U], xproj [T, B, g*U],
 * rec [B, g*U], h/c [B, U], gt [g*U + U]. */
#define RNN_IMPL(W, SFX)                                                                                              \
  static sm_status *run_##SFX(const sm_kctx *ctx, sm_threadpool *pool, const rnn_dims *d, const W *x, const W *h0,    \
                              const W *c0, const W *params, W *out, W *hN, W *cN, W *buf0, W *buf1, W *xproj, W *rec, \
                              W *h, W *c, W *gt) {                                                                   \
    int64_t T = d->T, B = d->B, U = d->U, g = d->g, DU = d->dirs * U;                                                 \
    const W *wp = params, *bp = params;                                                                              \
    for (int64_t l = 0; l < d->L; l++) bp += d->dirs * (g * U * (l ? DU : d->I) + g * U * U);                         \
    const W *lin = x;                                                                                                \
    for (int64_t l = 0; l < d->L; l++) {                                                                             \
      int64_t in = l ? DU : d->I;                                                                                    \
      W *lout = l == d->L - 1 ? out : (l % 2 ? buf1 : buf0);                                                         \
      memset(lout, 0, (size_t)(T * B * DU) * sizeof(W));                                                             \
      for (int dir = 0; dir < d->dirs; dir++) {                                                                      \
        int64_t pl = l * d->dirs + dir;                                                                              \
        const W *WT = wp, *RT = wp + g * U * in, *bW = bp, *bR = bp + g * U;                                         \
        wp += g * U * in + g * U * U;                                                                                \
        bp += 2 * g * U;                                                                                             \
        mm_##SFX(pool, T * B, g * U, in, lin, WT, bW, xproj);                                                        \
        memcpy(h, h0 + pl * B * U, (size_t)(B * U) * sizeof(W));                                                    \
        if (d->mode == MODE_LSTM) memcpy(c, c0 + pl * B * U, (size_t)(B * U) * sizeof(W));                           \
        for (int64_t s = 0; s < T; s++) {                                                                            \
          sm_status *stop = sm__kctx_check_stop(ctx); /* a cancel or deadline stops a long sequence */              \
          if (stop) return stop;                                                                                     \
          mm_##SFX(pool, B, g * U, U, h, RT, bR, rec);                                                               \
          for (int64_t b = 0; b < B; b++) {                                                                          \
            int64_t len = d->len[b];                                                                                 \
            if (s >= len) continue;                                                                                  \
            int64_t t = dir ? len - 1 - s : s;                                                                       \
            cell_##SFX(d->mode, U, xproj + (t * B + b) * g * U, rec + b * g * U, h + b * U, c + b * U,               \
                       lout + (t * B + b) * DU + dir * U, gt);                                                       \
          }                                                                                                          \
        }                                                                                                            \
        memcpy(hN + pl * B * U, h, (size_t)(B * U) * sizeof(W));                                                     \
        if (d->mode == MODE_LSTM) memcpy(cN + pl * B * U, c, (size_t)(B * U) * sizeof(W));                           \
      }                                                                                                              \
      lin = lout;                                                                                                    \
    }                                                                                                                \
    return NULL;                                                                                                     \
  }

RNN_IMPL(float, f32)
RNN_IMPL(double, f64)

static sm_status *alloc_empty(sm_kctx *ctx, int i, int dtype, int scalar) {
  sm_tensor *t;
  return sm__kctx_alloc_output(ctx, i, dtype, scalar ? 0 : 1, (int64_t[]){0}, &t);
}

static sm_status *cudnn_compute(const void *state, sm_kctx *ctx) {
  const cudnn_state *s = state;
  const char *op = s->version == 3 ? "CudnnRNNV3" : s->version == 2 ? "CudnnRNNV2" : "CudnnRNN";
  const sm_tensor *x = sm__kctx_input(ctx, 0), *h0 = sm__kctx_input(ctx, 1), *c0 = sm__kctx_input(ctx, 2),
                  *p = sm__kctx_input(ctx, 3);
  int dt = s->dtype, tm = s->time_major;
  char b1[96], b2[96];
  if (sm_tensor_dtype(x) != dt || sm_tensor_dtype(h0) != dt || sm_tensor_dtype(p) != dt ||
      (s->mode == MODE_LSTM && sm_tensor_dtype(c0) != dt))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input, input_h, input_c and params must be %s", op, sm_dtype_name(dt));
  if (sm_tensor_rank(x) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "RNN input must be a 3-D vector.");
  if (sm_tensor_rank(h0) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "RNN input_h must be a 3-D vector.");
  const int64_t *xd = sm_tensor_dims(x), *hd = sm_tensor_dims(h0);
  rnn_dims d = {.mode = s->mode, .dirs = s->dirs, .g = mode_gates(s->mode)};
  d.T = tm ? xd[0] : xd[1];
  d.B = tm ? xd[1] : xd[0];
  d.I = xd[2];
  d.L = (tm ? hd[0] : hd[1]) / s->dirs;
  d.U = hd[2];
  int64_t hs[3] = {tm ? d.L * s->dirs : d.B, tm ? d.B : d.L * s->dirs, d.U};
  if (hd[0] != hs[0] || hd[1] != hs[1] || hd[2] != hs[2])
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid input_h shape: %s [%lld,%lld,%lld]", shape_str(h0, b1, sizeof b1),
                         (long long)hs[0], (long long)hs[1], (long long)hs[2]);
  if (s->mode == MODE_LSTM) {
    int same = sm_tensor_rank(c0) == 3;
    for (int i = 0; same && i < 3; i++) same = sm_tensor_dims(c0)[i] == hd[i];
    if (!same)
      return sm_status_new(SM_INVALID_ARGUMENT, "input_h and input_c must have the same shape w/o projection: %s %s",
                           shape_str(h0, b1, sizeof b1), shape_str(c0, b2, sizeof b2));
  }
  if (d.L < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_h %s gives no layer (num_layers * %d directions along dim %d)",
                         op, shape_str(h0, b1, sizeof b1), s->dirs, tm ? 0 : 1);
  if (s->skip_input || (s->auto_select && d.I == d.U))
    return sm_status_new(SM_UNIMPLEMENTED, "%s: input_mode %s (cuDNN's skip input, input_size == num_units == %lld) is not supported",
                         op, s->skip_input ? "skip_input" : "auto_select", (long long)d.U);
  int64_t want = params_size(s->mode, s->dirs, d.L, d.U, d.I);
  if (sm_tensor_num_elements(p) != want)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "%s: params has %lld elements; a %s %s RNN of num_layers %lld, num_units %lld, input_size %lld "
                         "takes %lld (cuDNN's layout)", op, (long long)sm_tensor_num_elements(p),
                         s->dirs == 2 ? "bidirectional" : "unidirectional", mode_name(s->mode), (long long)d.L,
                         (long long)d.U, (long long)d.I, (long long)want);
  /* the work buffers' size, checked: x may be empty with huge T and B */
  int f64 = s->dtype == SM_DOUBLE;
  size_t es = f64 ? sizeof(double) : sizeof(float);
  int64_t LD = d.L * s->dirs, DU = s->dirs * d.U;
  uint64_t n_x = (uint64_t)sm_tensor_num_elements(x), n_h = (uint64_t)sm_tensor_num_elements(h0), n_p = (uint64_t)want;
  uint64_t n_o, n_xp, n_rec, n_bu = (uint64_t)(d.B * d.U), tb, total, bytes;
  int ovf = sm__mul_u64((uint64_t)d.T, (uint64_t)d.B, &tb) || sm__mul_u64(tb, (uint64_t)DU, &n_o) ||
            sm__mul_u64(tb, (uint64_t)(d.g * d.U), &n_xp) || sm__mul_u64((uint64_t)d.B, (uint64_t)(d.g * d.U), &n_rec);
  total = n_x + 4 * n_h + n_p + 2 * n_bu + 2 * ((uint64_t)d.B + 1) + (uint64_t)((d.g + 1) * d.U);
  ovf = ovf || sm__add_u64(total, n_xp, &total) || sm__add_u64(total, n_rec, &total) ||
        sm__add_u64(total, n_o, &total) || sm__add_u64(total, n_o, &total) || sm__add_u64(total, n_o, &total) ||
        sm__mul_u64(total, es, &bytes) || bytes > (uint64_t)SIZE_MAX / 2;
  if (ovf) return sm_status_new(SM_INVALID_ARGUMENT, "%s: the model's work buffers are too large", op);
  sm_status *st = NULL;
  char *work = sm__kctx_scratch(ctx, (size_t)bytes, &st);
  if (!work) return st ? st : sm_status_new(SM_NO_MEMORY, "out of memory");
  int64_t *lens = (int64_t *)work; /* first: 8-byte aligned */
  char *cur = work + (size_t)(d.B + 1) * sizeof(int64_t);
#define TAKE(n) (cur += (size_t)(n) * es, cur - (size_t)(n) * es)
  char *wx = TAKE(n_x), *wh0 = TAKE(n_h), *wc0 = TAKE(n_h), *whN = TAKE(n_h), *wcN = TAKE(n_h), *wp = TAKE(n_p);
  char *wo = TAKE(n_o), *b0 = TAKE(n_o), *bb1 = TAKE(n_o), *xp = TAKE(n_xp), *rec = TAKE(n_rec), *hh = TAKE(n_bu),
       *cc = TAKE(n_bu), *gt = TAKE(d.g * d.U + d.U);
#undef TAKE
  for (int64_t b = 0; b < d.B; b++) lens[b] = d.T;
  if (s->version == 3) {
    const sm_tensor *sl = sm__kctx_input(ctx, 4);
    if (sm_tensor_dtype(sl) != SM_INT32 || sm_tensor_rank(sl) != 1 || sm_tensor_num_elements(sl) != d.B)
      st = sm_status_new(SM_INVALID_ARGUMENT, "%s: sequence_lengths must be an int32 vector of the batch size %lld, not %s %s",
                         op, (long long)d.B, sm_dtype_name(sm_tensor_dtype(sl)), shape_str(sl, b1, sizeof b1));
    for (int64_t b = 0; !st && b < d.B; b++) {
      int32_t v = ((const int32_t *)sm_tensor_data(sl))[b];
      if (v < 0 || v > d.T)
        st = sm_status_new(SM_INVALID_ARGUMENT, "%s: sequence_lengths[%lld] = %d is outside [0, %lld] (the max sequence length)",
                           op, (long long)b, (int)v, (long long)d.T);
      lens[b] = v;
    }
    if (st) {
      sm__kctx_scratch_free(ctx, work);
      return st;
    }
  }
  d.len = lens;

  /* outputs */
  sm_tensor *out = NULL, *hN = NULL, *cN = NULL;
  int64_t od[3] = {tm ? d.T : d.B, tm ? d.B : d.T, DU};
  st = sm__kctx_alloc_output(ctx, 0, dt, 3, od, &out);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, 3, hd, &hN);
  if (!st) st = s->mode == MODE_LSTM ? sm__kctx_alloc_output(ctx, 2, dt, 3, hd, &cN) : alloc_empty(ctx, 2, dt, 1);
  if (!st) st = alloc_empty(ctx, 3, dt, !s->is_training);
  if (!st && s->version >= 2) st = alloc_empty(ctx, 4, SM_INT8, !s->is_training);
  if (st) {
    sm__kctx_scratch_free(ctx, work);
    return st;
  }

  /* input to time-major; h/c to [L*dirs, B, U] */
  const void *xv = sm_tensor_data(x), *hv = sm_tensor_data(h0), *cv = s->mode == MODE_LSTM ? sm_tensor_data(c0) : NULL;
  for (int64_t t = 0; t < d.T; t++)
    for (int64_t b = 0; b < d.B; b++) {
      int64_t src = (tm ? t * d.B + b : b * d.T + t) * d.I, dst = (t * d.B + b) * d.I;
      if (dt == SM_FLOAT || f64) {
        memcpy(wx + (size_t)dst * es, (const char *)xv + (size_t)src * es, (size_t)d.I * es);
        continue;
      }
      for (int64_t i = 0; i < d.I; i++) ((float *)wx)[dst + i] = (float)elem_get(xv, dt, src + i);
    }
  for (int64_t pl = 0; pl < LD; pl++)
    for (int64_t b = 0; b < d.B; b++)
      for (int64_t u = 0; u < d.U; u++) {
        int64_t src = (tm ? pl * d.B + b : b * LD + pl) * d.U + u, dst = (pl * d.B + b) * d.U + u;
        double hvv = elem_get(hv, dt, src), cvv = cv ? elem_get(cv, dt, src) : 0;
        if (f64) ((double *)wh0)[dst] = hvv, ((double *)wc0)[dst] = cvv;
        else ((float *)wh0)[dst] = (float)hvv, ((float *)wc0)[dst] = (float)cvv;
      }
  { /* params into the work layout: each pseudo-layer's [g*U, in] and [g*U, U] matrices transposed */
    const void *pv = sm_tensor_data(p);
    int64_t src = 0, g = d.g;
    for (int64_t l = 0; l < d.L; l++) {
      int64_t in = l ? DU : d.I;
      for (int dir = 0; dir < s->dirs; dir++)
        for (int m = 0; m < 2; m++) { /* W, then R */
          int64_t k = m ? d.U : in, rows = g * d.U;
          for (int64_t r = 0; r < rows; r++)
            if (dt == SM_FLOAT) { /* in 16 x 16 tiles: the strided writes stay in cache */
              if (r % 16) continue;
              const float *pf = (const float *)pv + src;
              float *wf = (float *)wp + src;
              for (int64_t j0 = 0; j0 < k; j0 += 16)
                for (int64_t rr = r; rr < r + 16 && rr < rows; rr++)
                  for (int64_t j = j0; j < j0 + 16 && j < k; j++) wf[j * rows + rr] = pf[rr * k + j];
            } else {
              for (int64_t j = 0; j < k; j++) {
                double v = elem_get(pv, dt, src + r * k + j);
                if (f64) ((double *)wp)[src + j * rows + r] = v;
                else ((float *)wp)[src + j * rows + r] = (float)v;
              }
            }
          src += rows * k;
        }
    }
    for (int64_t i = src; i < (int64_t)n_p; i++) { /* the biases */
      double v = elem_get(pv, dt, i);
      if (f64) ((double *)wp)[i] = v;
      else ((float *)wp)[i] = (float)v;
    }
  }
  if (d.B == 0 || d.U == 0) { /* nothing runs: the state passes through (an empty one) */
    memcpy(whN, wh0, (size_t)n_h * es);
    memcpy(wcN, wc0, (size_t)n_h * es);
    memset(wo, 0, (size_t)n_o * es);
  } else {
    sm_status *stop = f64 ? run_f64(ctx, sm__kctx_pool(ctx), &d, (double *)wx, (double *)wh0, (double *)wc0, (double *)wp,
                                    (double *)wo, (double *)whN, (double *)wcN, (double *)b0, (double *)bb1,
                                    (double *)xp, (double *)rec, (double *)hh, (double *)cc, (double *)gt)
                          : run_f32(ctx, sm__kctx_pool(ctx), &d, (float *)wx, (float *)wh0, (float *)wc0, (float *)wp,
                                    (float *)wo, (float *)whN, (float *)wcN, (float *)b0, (float *)bb1, (float *)xp,
                                    (float *)rec, (float *)hh, (float *)cc, (float *)gt);
    if (stop) {
      sm__kctx_scratch_free(ctx, work);
      return stop;
    }
  }
  /* back to the caller's layout and type */
  void *ov = sm_tensor_data(out), *hNv = sm_tensor_data(hN), *cNv = cN ? sm_tensor_data(cN) : NULL;
  for (int64_t t = 0; t < d.T; t++)
    for (int64_t b = 0; b < d.B; b++) {
      int64_t src = (t * d.B + b) * DU, dst = (tm ? t * d.B + b : b * d.T + t) * DU;
      if (dt == SM_FLOAT || f64) {
        memcpy((char *)ov + (size_t)dst * es, wo + (size_t)src * es, (size_t)DU * es);
        continue;
      }
      for (int64_t u = 0; u < DU; u++) elem_set(ov, dt, dst + u, ((float *)wo)[src + u]);
    }
  for (int64_t pl = 0; pl < LD; pl++)
    for (int64_t b = 0; b < d.B; b++)
      for (int64_t u = 0; u < d.U; u++) {
        int64_t src = (pl * d.B + b) * d.U + u, dst = (tm ? pl * d.B + b : b * LD + pl) * d.U + u;
        elem_set(hNv, dt, dst, f64 ? ((double *)whN)[src] : ((float *)whN)[src]);
        if (cNv) elem_set(cNv, dt, dst, f64 ? ((double *)wcN)[src] : ((float *)wcN)[src]);
      }
  sm__kctx_scratch_free(ctx, work);
  return NULL;
}

/* CudnnRNNParamsSize: the size of the buffer above (S int32 or int64, shape [1]). */
static sm_status *params_size_compute(const void *state, sm_kctx *ctx) {
  const cudnn_state *s = state;
  int64_t v[3];
  static const char *const names[3] = {"num_layers", "num_units", "input_size"};
  for (int i = 0; i < 3; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    if (sm_tensor_rank(t) != 0 || sm_tensor_dtype(t) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s is not a scalar", names[i]);
    v[i] = *(const int32_t *)sm_tensor_data(t);
    if (v[i] < 0 || (i == 0 && v[i] < 1))
      return sm_status_new(SM_INVALID_ARGUMENT, "CudnnRNNParamsSize: %s %lld is invalid", names[i], (long long)v[i]);
  }
  if (s->skip_input || (s->auto_select && v[1] == v[2]))
    return sm_status_new(SM_UNIMPLEMENTED, "CudnnRNNParamsSize: input_mode skip_input is not supported");
  int st_dt = SM_INT32;
  sm_status *st = sm__node_attr(sm__kctx_node(ctx), "S") ? sm__node_attr_type(sm__kctx_node(ctx), "S", &st_dt) : NULL;
  if (st) return st;
  int64_t n = params_size(s->mode, s->dirs, v[0], v[1], v[2]);
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, st_dt == SM_INT64 ? SM_INT64 : SM_INT32, 1, (int64_t[]){1}, &out))) return st;
  if (st_dt == SM_INT64) *(int64_t *)sm_tensor_data(out) = n;
  else *(int32_t *)sm_tensor_data(out) = (int32_t)n;
  return NULL;
}

const sm_kernel sm_kernels_rnn_cudnn[] = {
    {"CudnnRNN", cudnn_prepare, cudnn_compute, free, 0},
    {"CudnnRNNV2", cudnn_prepare, cudnn_compute, free, 0},
    {"CudnnRNNV3", cudnn_prepare, cudnn_compute, free, 0},
    {"CudnnRNNParamsSize", cudnn_prepare, params_size_compute, free, 0},
    {0},
};
