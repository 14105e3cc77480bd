/* rnn_block.c - TensorFlow's fused LSTM / GRU block ops (tensorflow/core/kernels/rnn/lstm_ops.cc,
 * gru_ops.cc; what TF1's tf.contrib.rnn LSTMBlockCell / LSTMBlockFusedCell / GRUBlockCell graphs
 * hold) and their gradients: LSTMBlockCell, BlockLSTM, BlockLSTMV2, GRUBlockCell, LSTMBlockCellGrad,
 * BlockLSTMGrad, BlockLSTMGradV2, GRUBlockCellGrad.
 *   LSTM: [i, ci, f, o] = [x, h_prev] w + b (gate columns i, c, f, o; V2: i, f, c, o), then
 *     i = sigm(i + cs_prev wci), f = sigm(f + forget_bias + cs_prev wcf), ci = tanh(ci),
 *     cs = clip(i ci + f cs_prev, cell_clip when > 0), o = sigm(o + cs wco), co = tanh(cs), h = o co
 *     (the wc* terms with use_peephole only; V2 has no forget_bias). BlockLSTM runs seq_len_max
 *     steps of x [T, B, I]; the outputs of steps seq_len_max..T-1 are zero, as TF's.
 *   GRU: [r, u] = sigm([x, h_prev] w_ru + b_ru), c = tanh([x, r h_prev] w_c + b_c), h = u (h_prev - c) + c.
 *   The gradients are TF's formulas (the clip is not differentiated, as there).
 * Computed in float (half converted in and out; TF registers half and float for the LSTM ops, float
 * for GRU); the products go to the project's GEMM (sm__nn_matmul_f32): BlockLSTM projects the inputs
 * of all steps at once, and its gradient forms x_grad and w_grad from all steps' gate gradients at once. */
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

enum { K_CELL, K_BLOCK, K_BLOCK2, K_GRU, K_CELL_GRAD, K_BLOCK_GRAD, K_BLOCK2_GRAD, K_GRU_GRAD };
static const char *const op_names[] = {"LSTMBlockCell",     "BlockLSTM",     "BlockLSTMV2",     "GRUBlockCell",
                                       "LSTMBlockCellGrad", "BlockLSTMGrad", "BlockLSTMGradV2", "GRUBlockCellGrad"};

typedef struct blk_state {
  int kind, dtype, peep;
  float forget_bias, cell_clip;
} blk_state;

static sm_status *blk_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int kind = -1;
  for (int k = 0; k < 8; k++)
    if (!strcmp(op, op_names[k])) kind = k;
  if (kind < 0) return sm_status_new(SM_INTERNAL, "rnn_block: unexpected op %s", op);
  blk_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->kind = kind;
  s->dtype = SM_FLOAT;
  s->forget_bias = kind == K_BLOCK2 ? 0.f : 1.f;
  s->cell_clip = kind == K_BLOCK2 ? 0.f : 3.f;
  sm_status *st = NULL;
  if (sm__node_attr(node, "T")) st = sm__node_attr_type(node, "T", &s->dtype);
  if (!st && (kind == K_CELL || kind == K_BLOCK) && sm__node_attr(node, "forget_bias"))
    st = sm__node_attr_float(node, "forget_bias", &s->forget_bias);
  if (!st && kind != K_GRU && kind != K_GRU_GRAD && kind < K_CELL_GRAD && sm__node_attr(node, "cell_clip"))
    st = sm__node_attr_float(node, "cell_clip", &s->cell_clip);
  if (!st && kind != K_GRU && kind != K_GRU_GRAD) {
    if (sm__node_attr(node, "use_peephole")) st = sm__node_attr_bool(node, "use_peephole", &s->peep);
    else if (kind >= K_CELL_GRAD) st = sm_status_new(SM_INVALID_ARGUMENT, "%s: NodeDef missing attr 'use_peephole'", op);
  }
  int gru = kind == K_GRU || kind == K_GRU_GRAD;
  if (!st && !(s->dtype == SM_FLOAT || (s->dtype == SM_HALF && !gru)))
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s: T is %s; TensorFlow's CPU kernel takes %s", op, sm_dtype_name(s->dtype),
                       gru ? "float" : "half or float");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* ---- inputs and outputs in float ---- */

typedef struct io {
  sm_kctx *ctx;
  int dtype;
  const char *op;
  void *scratch[40]; /* half conversions */
  int nscratch;
  sm_tensor *outs[8];
  float *outf[8];
} io;

static const float *in_f32(io *o, const sm_tensor *t, sm_status **st) {
  if (sm_tensor_dtype(t) == SM_FLOAT) return sm_tensor_data(t);
  int64_t n = sm_tensor_num_elements(t);
  float *p = sm__kctx_scratch(o->ctx, (size_t)(n ? n : 1) * sizeof(float), st);
  if (!p) return NULL;
  o->scratch[o->nscratch++] = p;
  const uint16_t *h = sm_tensor_data(t);
  for (int64_t i = 0; i < n; i++) p[i] = sm__half_to_f32(h[i]);
  return p;
}

static float *tmp_f32(io *o, uint64_t n, sm_status **st) {
  uint64_t bytes;
  if (sm__mul_u64(n ? n : 1, sizeof(float), &bytes) || bytes > (uint64_t)SIZE_MAX / 2) {
    *st = sm_status_new(SM_INVALID_ARGUMENT, "%s: the work buffers are too large", o->op);
    return NULL;
  }
  float *p = sm__kctx_scratch(o->ctx, (size_t)bytes, st);
  if (p) o->scratch[o->nscratch++] = p;
  return p;
}

/* Output i, zeroed, as float (a float scratch for half, converted by io_finish). */
static float *out_f32(io *o, int i, int rank, const int64_t *dims, sm_status **st) {
  if ((*st = sm__kctx_alloc_output(o->ctx, i, o->dtype, rank, dims, &o->outs[i]))) return NULL;
  if (o->dtype == SM_FLOAT) return o->outf[i] = sm_tensor_data(o->outs[i]);
  float *p = tmp_f32(o, (uint64_t)sm_tensor_num_elements(o->outs[i]), st);
  if (p) memset(p, 0, (size_t)sm_tensor_num_elements(o->outs[i]) * sizeof(float));
  return o->outf[i] = p;
}

static void io_finish(io *o, int ok) {
  for (int i = 0; ok && o->dtype == SM_HALF && i < 8; i++)
    if (o->outs[i] && o->outf[i]) {
      uint16_t *h = sm_tensor_data(o->outs[i]);
      for (int64_t k = 0; k < sm_tensor_num_elements(o->outs[i]); k++) h[k] = sm__f32_to_half(o->outf[i][k]);
    }
  for (int i = 0; i < o->nscratch; i++) sm__kctx_scratch_free(o->ctx, o->scratch[i]);
}

/* ---- shape checks, TF's messages ---- */

static sm_status *want_rank(const char *op, const sm_tensor *t, const char *name, int rank) {
  if (sm_tensor_rank(t) == rank) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be rank %d but is rank %d", op, name, rank, sm_tensor_rank(t));
}

/* TF's words: "<name>.dims(d)" for the state and gate inputs, "<name>.dim_size(d)" for the weights
 * and LSTMBlockCellGrad's gates. */
static sm_status *want_dim(const char *op, const sm_tensor *t, const char *name, int d, const char *what, int64_t v) {
  if (sm_tensor_dims(t)[d] == v) return NULL;
  static const char *const dims_names[] = {"x", "cs_prev", "h_prev", "r", "u", "c", "d_h", "cs_grad_tensor", "h_grad_tensor"};
  const char *word = "dim_size";
  for (size_t k = 0; k < sizeof dims_names / sizeof *dims_names; k++)
    if (!strcmp(name, dims_names[k])) word = "dims";
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s.%s(%d) != %s: %lld vs. %lld", op, name, word, d, what,
                       (long long)sm_tensor_dims(t)[d], (long long)v);
}

/* Inputs first..first+n-1 each [B, U] (rank 2, TF's checks and words) or, rank 3, [T, B, U]. */
static sm_status *check_gates(const char *op, sm_kctx *ctx, int first, int n, const char *const *names, int r,
                              const int64_t *dims) {
  sm_status *st;
  for (int k = 0; k < n; k++) {
    const sm_tensor *t = sm__kctx_input(ctx, first + k);
    if ((st = want_rank(op, t, names[k], r))) return st;
    for (int d = 0; d < r; d++)
      if ((st = want_dim(op, t, names[k], d, d == r - 1 ? "cell_size" : d == r - 2 ? "batch_size" : "timelen", dims[d])))
        return st;
  }
  return NULL;
}

/* The LSTM inputs x (rank xr), cs_prev, h_prev, w, wci, wcf, wco, b at inputs base..base+7. */
static sm_status *check_lstm(const char *op, sm_kctx *ctx, int base, int xr, int64_t *B, int64_t *I, int64_t *U) {
  const sm_tensor *x = sm__kctx_input(ctx, base), *cs = sm__kctx_input(ctx, base + 1), *h = sm__kctx_input(ctx, base + 2),
                  *w = sm__kctx_input(ctx, base + 3), *b = sm__kctx_input(ctx, base + 7);
  sm_status *st;
  if ((st = want_rank(op, x, "x", xr)) || (st = want_rank(op, cs, "cs_prev", 2)) || (st = want_rank(op, h, "h_prev", 2)) ||
      (st = want_rank(op, w, "w", 2)) || (st = want_rank(op, b, "b", 1)))
    return st;
  static const char *const pn[3] = {"wci", "wcf", "wco"};
  for (int k = 0; k < 3; k++)
    if ((st = want_rank(op, sm__kctx_input(ctx, base + 4 + k), pn[k], 1))) return st;
  *B = sm_tensor_dims(x)[xr - 2];
  *I = sm_tensor_dims(x)[xr - 1];
  *U = sm_tensor_dims(cs)[1];
  if ((st = want_dim(op, cs, "cs_prev", 0, "batch_size", *B)) || (st = want_dim(op, h, "h_prev", 0, "batch_size", *B)) ||
      (st = want_dim(op, h, "h_prev", 1, "cell_size", *U)) || (st = want_dim(op, w, "w", 0, "input_size + cell_size", *I + *U)) ||
      (st = want_dim(op, w, "w", 1, "cell_size * 4", *U * 4)) || (st = want_dim(op, b, "b", 0, "cell_size * 4", *U * 4)))
    return st;
  for (int k = 0; k < 3; k++)
    if ((st = want_dim(op, sm__kctx_input(ctx, base + 4 + k), pn[k], 0, "cell_size", *U))) return st;
  return NULL;
}

static sm_status *check_dtypes(const char *op, sm_kctx *ctx, int first, int dtype) {
  for (int k = first; k < sm__kctx_num_inputs(ctx); k++)
    if (sm_tensor_dtype(sm__kctx_input(ctx, k)) != dtype)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input %d is %s, expected %s", op, k,
                           sm_dtype_name(sm_tensor_dtype(sm__kctx_input(ctx, k))), sm_dtype_name(dtype));
  return NULL;
}

static sm_status *seq_len(const char *op, sm_kctx *ctx, int64_t T, int64_t *seq) {
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(t) != SM_INT64 || sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: seq_len_max must be an int64 scalar", op);
  *seq = *(const int64_t *)sm_tensor_data(t);
  if (*seq < 0 || *seq > T)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: seq_len_max %lld is outside [0, %lld] (the time dimension of x)", op,
                         (long long)*seq, (long long)T);
  return NULL;
}

/* ---- LSTM ---- */

typedef struct lstm_w {
  int64_t B, I, U;
  int ifco, peep;
  float forget_bias, cell_clip;
  const float *w, *wci, *wcf, *wco, *b;
} lstm_w;

/* One step's element-wise part: g [B, 4U] the pre-activations (x and h products and b); writes
 * i, cs, f, o, ci, co, h (each [B, U]); vmath's sigmoid and tanh over each row's gate vectors. */
static void lstm_cell(const lstm_w *p, const float *g, const float *cs_prev, float *i_, float *cs, float *f_, float *o_,
                      float *ci, float *co, float *h) {
  int64_t U = p->U, oc = p->ifco ? 2 * U : U, of = p->ifco ? U : 2 * U;
  for (int64_t b = 0; b < p->B; b++) {
    const float *gb = g + b * 4 * U, *cp = cs_prev + b * U;
    int64_t r = b * U;
    float *ir = i_ + r, *fr = f_ + r, *cir = ci + r, *csr = cs + r, *orow = o_ + r, *cor = co + r, *hr = h + r;
    for (int64_t u = 0; u < U; u++) {
      ir[u] = gb[u] + (p->peep ? cp[u] * p->wci[u] : 0.f);
      fr[u] = gb[of + u] + p->forget_bias + (p->peep ? cp[u] * p->wcf[u] : 0.f);
    }
    sm__vsigmoid_f32(ir, ir, U);
    sm__vsigmoid_f32(fr, fr, U);
    sm__vtanh_f32(gb + oc, cir, U);
    for (int64_t u = 0; u < U; u++) {
      float csv = ir[u] * cir[u] + fr[u] * cp[u];
      if (p->cell_clip > 0) csv = csv < -p->cell_clip ? -p->cell_clip : csv > p->cell_clip ? p->cell_clip : csv;
      csr[u] = csv;
      orow[u] = gb[3 * U + u] + (p->peep ? csv * p->wco[u] : 0.f);
    }
    sm__vsigmoid_f32(orow, orow, U);
    sm__vtanh_f32(csr, cor, U);
    for (int64_t u = 0; u < U; u++) hr[u] = orow[u] * cor[u];
  }
}

/* g [B, 4U] += h [B, U] w[I:I+U] (BLAS: for a batch of 16 and 256 units it took 40% less CPU than
 * nn_gemm's small-m loop, which rnn_cudnn.c uses) */
static void h_product(sm_threadpool *pool, const lstm_w *p, const float *h, float *g) {
  if (p->B > 0 && p->U > 0)
    sm__nn_matmul_f32(pool, 0, 0, p->B, 4 * p->U, p->U, h, p->w + p->I * 4 * p->U, NULL, SM_NN_ACT_NONE, 1, g);
}

/* g [m, 4U] = x [m, I] w[0:I] + b */
static void x_product(sm_threadpool *pool, const lstm_w *p, int64_t m, const float *x, float *g) {
  if (m <= 0) return;
  if (p->I > 0) {
    sm__nn_matmul_f32(pool, 0, 0, m, 4 * p->U, p->I, x, p->w, p->b, SM_NN_ACT_NONE, 0, g);
    return;
  }
  for (int64_t r = 0; r < m; r++) memcpy(g + r * 4 * p->U, p->b, (size_t)(4 * p->U) * sizeof(float));
}

static sm_status *load_lstm_w(io *o, int base, lstm_w *p, sm_status **st) {
  const float **dst[5] = {&p->w, &p->wci, &p->wcf, &p->wco, &p->b};
  for (int k = 0; k < 5; k++)
    if (!(*dst[k] = in_f32(o, sm__kctx_input(o->ctx, base + 3 + k), st))) return *st;
  return NULL;
}

static sm_status *empty_error(const char *op, const sm_tensor *t, const char *name) {
  char b[64];
  size_t o = 0;
  b[0] = 0;
  for (int d = 0; d < sm_tensor_rank(t); d++) o += (size_t)snprintf(b + o, sizeof b - o, "%s%lld", d ? "," : "", (long long)sm_tensor_dims(t)[d]);
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s_tensor is empty, has shape: (%s).", op, name, b);
}

static sm_status *lstm_forward(const blk_state *s, sm_kctx *ctx, io *o) {
  const char *op = o->op;
  int block = s->kind != K_CELL, base = block ? 1 : 0;
  lstm_w p = {.ifco = s->kind == K_BLOCK2, .peep = s->peep, .forget_bias = s->forget_bias, .cell_clip = s->cell_clip};
  sm_status *st = check_lstm(op, ctx, base, block ? 3 : 2, &p.B, &p.I, &p.U);
  if (!st) st = check_dtypes(op, ctx, base, s->dtype);
  if (st) return st;
  const sm_tensor *xt = sm__kctx_input(ctx, base), *cst = sm__kctx_input(ctx, base + 1);
  int64_t T = block ? sm_tensor_dims(xt)[0] : 1, seq = 1;
  if (block && (st = seq_len(op, ctx, T, &seq))) return st;
  if (!block && p.B * p.U == 0) return empty_error(op, cst, "cs_prev");
  int64_t od[3] = {T, p.B, p.U};
  float *out[7];
  for (int k = 0; k < 7; k++)
    if (!(out[k] = out_f32(o, k, block ? 3 : 2, block ? od : od + 1, &st))) return st;
  if ((uint64_t)T * (uint64_t)p.B * (uint64_t)p.U == 0) return NULL; /* nothing to compute (outputs exist, zero) */
  const float *x = in_f32(o, xt, &st), *cs0 = x ? in_f32(o, cst, &st) : NULL,
              *h0 = cs0 ? in_f32(o, sm__kctx_input(ctx, base + 2), &st) : NULL;
  if (!h0 || load_lstm_w(o, base, &p, &st)) return st;
  uint64_t BU4 = (uint64_t)(p.B * 4 * p.U);
  float *g = tmp_f32(o, (uint64_t)seq * BU4, &st);
  if (!g) return st;
  sm_threadpool *pool = sm__kctx_pool(ctx);
  x_product(pool, &p, seq * p.B, x, g);
  int64_t BU = p.B * p.U;
  for (int64_t t = 0; t < seq; t++) {
    if ((st = sm__kctx_check_stop(ctx))) return st;
    const float *hp = t ? out[6] + (t - 1) * BU : h0, *cp = t ? out[1] + (t - 1) * BU : cs0;
    float *gt = g + t * (int64_t)BU4;
    h_product(pool, &p, hp, gt);
    lstm_cell(&p, gt, cp, out[0] + t * BU, out[1] + t * BU, out[2] + t * BU, out[3] + t * BU, out[4] + t * BU,
              out[5] + t * BU, out[6] + t * BU);
  }
  return NULL; /* steps seq..T-1 stay zero */
}

/* One step's gate gradients (TF's LSTMBlockCellBprop): dcs_in the cell state's incoming gradient,
 * dh h's; writes dicfo [B, 4U] (the layout's gate order), cs_prev_grad [B, U], and adds the
 * peephole gradients. */
static void lstm_bprop(const lstm_w *p, const float *cs_prev, const float *i_, const float *cs, const float *f_,
                       const float *o_, const float *ci, const float *co, const float *dcs_in, const float *dh,
                       float *dicfo, float *cs_prev_grad, float *wci_g, float *wcf_g, float *wco_g) {
  int64_t U = p->U, oc = p->ifco ? 2 * U : U, of = p->ifco ? U : 2 * U;
  for (int64_t b = 0; b < p->B; b++)
    for (int64_t u = 0; u < U; u++) {
      int64_t k = b * U + u;
      float iv = i_[k], fv = f_[k], ov = o_[k], civ = ci[k], cov = co[k], cpv = cs_prev[k];
      float dov = ov * (1 - ov) * dh[k] * cov;
      float dcs = (1 - cov * cov) * dh[k] * ov + dcs_in[k];
      if (p->peep) dcs += dov * p->wco[u];
      float dci = (1 - civ * civ) * dcs * iv, df = fv * (1 - fv) * dcs * cpv, di = iv * (1 - iv) * dcs * civ;
      float *d = dicfo + b * 4 * U;
      d[u] = di, d[oc + u] = dci, d[of + u] = df, d[3 * U + u] = dov;
      float cg = dcs * fv;
      if (p->peep) {
        cg += di * p->wci[u] + df * p->wcf[u];
        wci_g[u] += di * cpv, wcf_g[u] += df * cpv, wco_g[u] += dov * cs[k];
      }
      cs_prev_grad[k] = cg;
    }
}

static sm_status *lstm_cell_grad(const blk_state *s, sm_kctx *ctx, io *o) {
  const char *op = o->op;
  lstm_w p = {.peep = s->peep};
  sm_status *st = check_lstm(op, ctx, 0, 2, &p.B, &p.I, &p.U);
  if (!st) st = check_dtypes(op, ctx, 0, s->dtype);
  int64_t bu[2] = {p.B, p.U};
  static const char *const names[8] = {"i", "cs", "f", "o", "ci", "co", "cs_grad_tensor", "h_grad_tensor"};
  if (!st) st = check_gates(op, ctx, 8, 8, names, 2, bu);
  if (st) return st;
  float *csg = out_f32(o, 0, 2, bu, &st), *dicfo = csg ? out_f32(o, 1, 2, (int64_t[]){p.B, 4 * p.U}, &st) : NULL;
  float *wg[3] = {0};
  for (int k = 0; dicfo && k < 3; k++)
    if (!(wg[k] = out_f32(o, 2 + k, 1, &p.U, &st))) return st;
  if (!wg[2]) return st;
  if (p.B * p.U == 0) return NULL;
  const float *in[16];
  for (int k = 0; k < 16; k++)
    if (k != 3 && k != 7 && !(in[k] = in_f32(o, sm__kctx_input(ctx, k), &st))) return st;
  p.wci = in[4], p.wcf = in[5], p.wco = in[6];
  lstm_bprop(&p, in[1], in[8], in[9], in[10], in[11], in[12], in[13], in[14], in[15], dicfo, csg, wg[0], wg[1], wg[2]);
  return NULL;
}

static sm_status *block_grad(const blk_state *s, sm_kctx *ctx, io *o) {
  const char *op = o->op;
  lstm_w p = {.ifco = s->kind == K_BLOCK2_GRAD, .peep = s->peep};
  sm_status *st = check_lstm(op, ctx, 1, 3, &p.B, &p.I, &p.U);
  if (!st) st = check_dtypes(op, ctx, 1, s->dtype);
  if (st) return st;
  const sm_tensor *xt = sm__kctx_input(ctx, 1);
  int64_t T = sm_tensor_dims(xt)[0], seq = 0, tbu[3] = {T, p.B, p.U};
  static const char *const names[9] = {"i", "cs", "f", "o", "ci", "co", "h", "cs_grad", "h_grad"};
  if ((st = check_gates(op, ctx, 9, 9, names, 3, tbu)) || (st = seq_len(op, ctx, T, &seq))) return st;
  int64_t B = p.B, I = p.I, U = p.U, BU = B * U, U4 = 4 * U;
  float *xg = out_f32(o, 0, 3, (int64_t[]){T, B, I}, &st);
  float *csg = xg ? out_f32(o, 1, 2, tbu + 1, &st) : NULL, *hg = csg ? out_f32(o, 2, 2, tbu + 1, &st) : NULL;
  float *wg = hg ? out_f32(o, 3, 2, (int64_t[]){I + U, U4}, &st) : NULL, *pg[3] = {0};
  for (int k = 0; wg && k < 3; k++)
    if (!(pg[k] = out_f32(o, 4 + k, 1, &U, &st))) return st;
  float *bg = pg[2] ? out_f32(o, 7, 1, &U4, &st) : NULL;
  if (!bg) return st;
  if ((uint64_t)seq * (uint64_t)BU == 0) return NULL;
  const float *in[18];
  for (int k = 1; k < 18; k++)
    if (!(in[k] = in_f32(o, sm__kctx_input(ctx, k), &st))) return st;
  p.w = in[4], p.wci = in[5], p.wcf = in[6], p.wco = in[7];
  const float *x = in[1], *cs0 = in[2], *h0 = in[3], *gi = in[9], *gcs = in[10], *gf = in[11], *go = in[12], *gci = in[13],
              *gco = in[14], *gh = in[15], *dcs_out = in[16], *dh_out = in[17];
  /* dicfo of every step [seq*B, 4U], each step's h_prev [seq*B, U], and the running gradients */
  float *dicfo = tmp_f32(o, (uint64_t)seq * (uint64_t)(B * U4), &st), *hprev = dicfo ? tmp_f32(o, (uint64_t)seq * (uint64_t)BU, &st) : NULL;
  float *dcs = hprev ? tmp_f32(o, (uint64_t)BU, &st) : NULL, *dh = dcs ? tmp_f32(o, (uint64_t)BU, &st) : NULL;
  float *hpg = dh ? tmp_f32(o, (uint64_t)BU, &st) : NULL;
  if (!hpg) return st;
  memset(hpg, 0, (size_t)BU * sizeof(float));
  memset(csg, 0, (size_t)BU * sizeof(float));
  sm_threadpool *pool = sm__kctx_pool(ctx);
  for (int64_t t = seq - 1; t >= 0; t--) {
    if ((st = sm__kctx_check_stop(ctx))) return st;
    int64_t r = t * BU;
    const float *cp = t ? gcs + r - BU : cs0, *hp = t ? gh + r - BU : h0;
    memcpy(hprev + r, hp, (size_t)BU * sizeof(float));
    for (int64_t k = 0; k < BU; k++) dcs[k] = csg[k] + dcs_out[r + k], dh[k] = hpg[k] + dh_out[r + k];
    float *d = dicfo + t * B * U4;
    lstm_bprop(&p, cp, gi + r, gcs + r, gf + r, go + r, gci + r, gco + r, dcs, dh, d, csg, pg[0], pg[1], pg[2]);
    /* h_prev_grad = dicfo w[I:]^T */
    sm__nn_matmul_f32(pool, 0, 1, B, U, U4, d, p.w + I * U4, NULL, SM_NN_ACT_NONE, 0, hpg);
  }
  memcpy(hg, hpg, (size_t)BU * sizeof(float));
  int64_t m = seq * B;
  if (I > 0) {
    sm__nn_matmul_f32(pool, 0, 1, m, I, U4, dicfo, p.w, NULL, SM_NN_ACT_NONE, 0, xg); /* x_grad = dicfo w[:I]^T */
    sm__nn_matmul_f32(pool, 1, 0, I, U4, m, x, dicfo, NULL, SM_NN_ACT_NONE, 0, wg);  /* w_grad[:I] = x^T dicfo */
  }
  sm__nn_matmul_f32(pool, 1, 0, U, U4, m, hprev, dicfo, NULL, SM_NN_ACT_NONE, 0, wg + I * U4); /* w_grad[I:] */
  for (int64_t r = 0; r < m; r++)
    for (int64_t c = 0; c < U4; c++) bg[c] += dicfo[r * U4 + c];
  return NULL; /* x_grad of steps seq..T-1 stays zero */
}

/* ---- GRU ---- */

static sm_status *check_gru(const char *op, sm_kctx *ctx, int64_t *B, int64_t *I, int64_t *U) {
  const sm_tensor *x = sm__kctx_input(ctx, 0), *h = sm__kctx_input(ctx, 1), *wru = sm__kctx_input(ctx, 2),
                  *wc = sm__kctx_input(ctx, 3), *bru = sm__kctx_input(ctx, 4), *bc = sm__kctx_input(ctx, 5);
  sm_status *st;
  if ((st = want_rank(op, x, "x", 2)) || (st = want_rank(op, h, "h_prev", 2)) || (st = want_rank(op, wru, "w_ru", 2)) ||
      (st = want_rank(op, wc, "w_c", 2)) || (st = want_rank(op, bru, "b_ru", 1)) || (st = want_rank(op, bc, "b_c", 1)))
    return st;
  *B = sm_tensor_dims(x)[0], *I = sm_tensor_dims(x)[1], *U = sm_tensor_dims(h)[1];
  if ((st = want_dim(op, h, "h_prev", 0, "batch_size", *B)) || (st = want_dim(op, wru, "w_ru", 0, "input_size + cell_size", *I + *U)) ||
      (st = want_dim(op, wru, "w_ru", 1, "cell_size * 2", *U * 2)) || (st = want_dim(op, wc, "w_c", 0, "input_size + cell_size", *I + *U)) ||
      (st = want_dim(op, wc, "w_c", 1, "cell_size", *U)) || (st = want_dim(op, bru, "b_ru", 0, "cell_size * 2", *U * 2)) ||
      (st = want_dim(op, bc, "b_c", 0, "cell_size", *U)))
    return st;
  return check_dtypes(op, ctx, 0, SM_FLOAT);
}

static sm_status *gru_forward(sm_kctx *ctx, io *o) {
  int64_t B, I, U;
  sm_status *st = check_gru(o->op, ctx, &B, &I, &U);
  if (st) return st;
  int64_t bu[2] = {B, U};
  float *out[4];
  for (int k = 0; k < 4; k++)
    if (!(out[k] = out_f32(o, k, 2, bu, &st))) return st;
  if (B * U == 0) return NULL;
  const float *x = sm_tensor_data(sm__kctx_input(ctx, 0)), *h = sm_tensor_data(sm__kctx_input(ctx, 1)),
              *wru = sm_tensor_data(sm__kctx_input(ctx, 2)), *wc = sm_tensor_data(sm__kctx_input(ctx, 3)),
              *bru = sm_tensor_data(sm__kctx_input(ctx, 4)), *bc = sm_tensor_data(sm__kctx_input(ctx, 5));
  float *ru = tmp_f32(o, (uint64_t)(B * 2 * U), &st), *hr = ru ? tmp_f32(o, (uint64_t)(B * U), &st) : NULL;
  if (!hr) return st;
  sm_threadpool *pool = sm__kctx_pool(ctx);
  float *r = out[0], *u = out[1], *c = out[2], *hn = out[3];
  if (I > 0) sm__nn_matmul_f32(pool, 0, 0, B, 2 * U, I, x, wru, bru, SM_NN_ACT_NONE, 0, ru);
  else
    for (int64_t b = 0; b < B; b++) memcpy(ru + b * 2 * U, bru, (size_t)(2 * U) * sizeof(float));
  sm__nn_matmul_f32(pool, 0, 0, B, 2 * U, U, h, wru + I * 2 * U, NULL, SM_NN_ACT_NONE, 1, ru);
  for (int64_t b = 0; b < B; b++) {
    sm__vsigmoid_f32(ru + b * 2 * U, r + b * U, U);
    sm__vsigmoid_f32(ru + b * 2 * U + U, u + b * U, U);
    for (int64_t k = 0; k < U; k++) hr[b * U + k] = h[b * U + k] * r[b * U + k];
  }
  if (I > 0) sm__nn_matmul_f32(pool, 0, 0, B, U, I, x, wc, bc, SM_NN_ACT_NONE, 0, c);
  else
    for (int64_t b = 0; b < B; b++) memcpy(c + b * U, bc, (size_t)U * sizeof(float));
  sm__nn_matmul_f32(pool, 0, 0, B, U, U, hr, wc + I * U, NULL, SM_NN_ACT_NONE, 1, c);
  sm__vtanh_f32(c, c, B * U);
  for (int64_t k = 0; k < B * U; k++) hn[k] = u[k] * (h[k] - c[k]) + c[k];
  return NULL;
}

static sm_status *gru_grad(sm_kctx *ctx, io *o) {
  int64_t B, I, U;
  sm_status *st = check_gru(o->op, ctx, &B, &I, &U);
  int64_t bu[2] = {B, U};
  static const char *const names[4] = {"r", "u", "c", "d_h"};
  if (!st) st = check_gates(o->op, ctx, 6, 4, names, 2, bu);
  if (st) return st;
  float *dx = out_f32(o, 0, 2, (int64_t[]){B, I}, &st), *dhp = dx ? out_f32(o, 1, 2, bu, &st) : NULL;
  float *dcb = dhp ? out_f32(o, 2, 2, bu, &st) : NULL, *drub = dcb ? out_f32(o, 3, 2, (int64_t[]){B, 2 * U}, &st) : NULL;
  if (!drub) return st;
  if (B * U == 0) return NULL;
  const float *in[10];
  for (int k = 0; k < 10; k++) in[k] = sm_tensor_data(sm__kctx_input(ctx, k));
  const float *h = in[1], *wru = in[2], *wc = in[3], *r = in[6], *u = in[7], *c = in[8], *dh = in[9];
  float *dhr = tmp_f32(o, (uint64_t)(B * U), &st), *dh2 = dhr ? tmp_f32(o, (uint64_t)(B * U), &st) : NULL;
  if (!dh2) return st;
  sm_threadpool *pool = sm__kctx_pool(ctx);
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < U; k++) {
      int64_t j = b * U + k;
      dcb[j] = dh[j] * (1 - u[j]) * (1 - c[j] * c[j]);
      drub[b * 2 * U + U + k] = dh[j] * (h[j] - c[j]) * u[j] * (1 - u[j]);
    }
  /* [d_x2, d_hr] = d_c_bar w_c^T */
  if (I > 0) sm__nn_matmul_f32(pool, 0, 1, B, I, U, dcb, wc, NULL, SM_NN_ACT_NONE, 0, dx);
  sm__nn_matmul_f32(pool, 0, 1, B, U, U, dcb, wc + I * U, NULL, SM_NN_ACT_NONE, 0, dhr);
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < U; k++) {
      int64_t j = b * U + k;
      drub[b * 2 * U + k] = dhr[j] * h[j] * r[j] * (1 - r[j]);
    }
  /* [d_x1, d_h1] = d_r_bar_u_bar w_ru^T */
  if (I > 0) sm__nn_matmul_f32(pool, 0, 1, B, I, 2 * U, drub, wru, NULL, SM_NN_ACT_NONE, 1, dx);
  sm__nn_matmul_f32(pool, 0, 1, B, U, 2 * U, drub, wru + I * 2 * U, NULL, SM_NN_ACT_NONE, 0, dh2);
  for (int64_t j = 0; j < B * U; j++) dhp[j] = dh2[j] + dhr[j] * r[j] + dh[j] * u[j];
  return NULL;
}

static sm_status *blk_compute(const void *state, sm_kctx *ctx) {
  const blk_state *s = state;
  io o = {.ctx = ctx, .dtype = s->dtype, .op = op_names[s->kind]};
  sm_status *st;
  switch (s->kind) {
  case K_CELL: case K_BLOCK: case K_BLOCK2: st = lstm_forward(s, ctx, &o); break;
  case K_CELL_GRAD: st = lstm_cell_grad(s, ctx, &o); break;
  case K_BLOCK_GRAD: case K_BLOCK2_GRAD: st = block_grad(s, ctx, &o); break;
  case K_GRU: st = gru_forward(ctx, &o); break;
  default: st = gru_grad(ctx, &o); break;
  }
  io_finish(&o, !st);
  return st;
}

const sm_kernel sm_kernels_rnn_block[] = {
    {"LSTMBlockCell", blk_prepare, blk_compute, free, 0},     {"BlockLSTM", blk_prepare, blk_compute, free, 0},
    {"BlockLSTMV2", blk_prepare, blk_compute, free, 0},       {"GRUBlockCell", blk_prepare, blk_compute, free, 0},
    {"LSTMBlockCellGrad", blk_prepare, blk_compute, free, 0}, {"BlockLSTMGrad", blk_prepare, blk_compute, free, 0},
    {"BlockLSTMGradV2", blk_prepare, blk_compute, free, 0},   {"GRUBlockCellGrad", blk_prepare, blk_compute, free, 0},
    {0},
};
