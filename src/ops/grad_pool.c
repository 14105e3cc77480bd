/* grad_pool.c - the pooling gradient ops a training signature holds, with TensorFlow's CPU kernels'
 * semantics (windows clipped to the input: padding never wins a max, averages divide by the
 * in-bounds count):
 *   MaxPoolGrad[V2]            the gradient goes to the first maximum of each window (row-major);
 *   MaxPool3DGrad              to every element equal to the window's output (TF's 3-D mask rule);
 *   MaxPoolGradGrad[V2], MaxPool3DGradGrad   the second order: each output takes the gradient at
 *                              its window's maximum;
 *   MaxPoolGradWithArgmax, MaxPoolGradGradWithArgmax   through a given argmax (flat indices, with
 *                              or without the batch), bounds-checked;
 *   AvgPoolGrad, AvgPool3DGrad;
 *   FractionalMaxPoolGrad, FractionalAvgPoolGrad (row / column pooling sequences, overlapping);
 *   Dilation2DBackpropInput, Dilation2DBackpropFilter (the morphological dilation's gradients).
 * Channels last inside (NCHW converted on the way in and out), double arithmetic (grad_internal.h).
 * Never writes its inputs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/grad_internal.h"
#include "ops/math_int.h"
#include "ops/nn_internal.h"

static const char *dtn(int dt) { return sm_dtype_name(dt) ? sm_dtype_name(dt) : "?"; }

enum { PG_MAX, PG_MAX_V2, PG_MAX3D, PG_AVG, PG_AVG3D, PG_MAXGG, PG_MAXGG_V2, PG_MAX3DGG, PG_ARGMAX, PG_ARGMAX_GG };

typedef struct pg_state {
  sm__gw w;
  int kind;
  int batch_in_index;
  const char *op;
} pg_state;

static const struct {
  const char *op;
  int kind, nd, ints;
} pg_ops[] = {
    {"MaxPoolGrad", PG_MAX, 4, 1},          {"MaxPoolGradV2", PG_MAX_V2, 4, 1},
    {"MaxPool3DGrad", PG_MAX3D, 5, 0},      {"AvgPoolGrad", PG_AVG, 4, 0},
    {"AvgPool3DGrad", PG_AVG3D, 5, 0},      {"MaxPoolGradGrad", PG_MAXGG, 4, 1},
    {"MaxPoolGradGradV2", PG_MAXGG_V2, 4, 1}, {"MaxPool3DGradGrad", PG_MAX3DGG, 5, 0},
    {"MaxPoolGradWithArgmax", PG_ARGMAX, 4, 1}, {"MaxPoolGradGradWithArgmax", PG_ARGMAX_GG, 4, 1},
};

static sm_status *pg_prepare(const sm_node *n, void **state) {
  pg_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(n);
  size_t k = 0;
  while (strcmp(pg_ops[k].op, op)) k++;
  s->kind = pg_ops[k].kind;
  s->op = pg_ops[k].op;
  sm_status *st = NULL;
  if (s->kind == PG_MAX_V2 || s->kind == PG_MAXGG_V2) { /* ksize, strides come as inputs */
    s->w.nd = 4;
    for (int i = 0; i < 3; i++) s->w.ksize[i] = s->w.stride[i] = s->w.dil[i] = 1;
    int same = 0;
    st = sm__nn_data_format(n, 0, &s->w.nchw);
    if (!st) st = sm__nn_same_padding(n, &same);
    s->w.padding = same ? SM_NN_SAME : SM_NN_VALID;
  } else {
    st = sm__gw_prepare(n, pg_ops[k].nd, 1, 0, s->kind == PG_MAX, &s->w);
  }
  if (!st && s->w.nchw) /* TF's CPU pooling gradients are NHWC / NDHWC only */
    st = sm_status_new(SM_INVALID_ARGUMENT, "Default %s only supports %s on device type CPU",
                       s->kind == PG_AVG || s->kind == PG_AVG3D ? "AvgPoolingGradOp"
                       : s->kind == PG_MAX || s->kind == PG_MAX_V2 || s->kind == PG_MAX3D ? "MaxPoolingGradOp"
                                                                                          : "MaxPoolingGradGradOp",
                       pg_ops[k].nd == 5 ? "NDHWC" : "NHWC");
  if (!st && sm__node_attr(n, "include_batch_in_index"))
    st = sm__node_attr_bool(n, "include_batch_in_index", &s->batch_in_index);
  if (!st && sm__node_num_outputs(n) == 1 && !sm__g_real(sm__node_output_dtype(n, 0), pg_ops[k].ints))
    st = sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported", op, dtn(sm__node_output_dtype(n, 0)));
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* The window geometry, channels last: in [N, D, H, W, C], out [N, OD, OH, OW, C]. */
typedef struct pg_geo {
  int64_t N, D, H, W, C, OD, OH, OW;
  int64_t k[3], s[3], lead[3];
} pg_geo;

/* Clipped window [lo, hi) of output coordinate o on axis a. */
static void win(const pg_geo *g, int a, int64_t o, int64_t lim, int64_t *lo, int64_t *hi) {
  int64_t b = o * g->s[a] - g->lead[a], e = b + g->k[a];
  *lo = b < 0 ? 0 : b;
  *hi = e > lim ? lim : e;
}

/* The flat (channels-last) index of the first maximum of x over output (n, od, oh, ow)'s window in
 * channel c, TF's rule: the first element seeds, a strictly greater one takes over; -1 for an empty window. */
static int64_t first_max(const pg_geo *g, const double *x, int64_t n, int64_t od, int64_t oh, int64_t ow, int64_t c) {
  int64_t d0, d1, h0, h1, w0, w1, best = -1;
  win(g, 0, od, g->D, &d0, &d1);
  win(g, 1, oh, g->H, &h0, &h1);
  win(g, 2, ow, g->W, &w0, &w1);
  for (int64_t d = d0; d < d1; d++)
    for (int64_t h = h0; h < h1; h++)
      for (int64_t w = w0; w < w1; w++) {
        int64_t i = (((n * g->D + d) * g->H + h) * g->W + w) * g->C + c;
        if (best < 0 || x[i] > x[best]) best = i;
      }
  return best;
}

static sm_status *v2_four(const sm_tensor *t, const char *what, int nchw, int64_t hw[2]) {
  if (sm_tensor_dtype(t) != SM_INT32 || sm_tensor_num_elements(t) != 4 || sm_tensor_rank(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s field must specify 4 dimensions", what);
  const int32_t *v = sm_tensor_data(t);
  if (v[0] != 1 || v[nchw ? 1 : 3] != 1)
    return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch or depth dimension.");
  hw[0] = nchw ? v[2] : v[1];
  hw[1] = nchw ? v[3] : v[2];
  if (hw[0] < 1 || hw[1] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s must be positive.", what);
  return NULL;
}

static sm_status *same_shape(const sm_tensor *a, const sm_tensor *b, const char *an, const char *bn) {
  char b1[128], b2[128];
  int r = sm_tensor_rank(a);
  int eq = r == sm_tensor_rank(b);
  for (int i = 0; eq && i < r; i++) eq = sm_tensor_dims(a)[i] == sm_tensor_dims(b)[i];
  if (eq) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "%s and %s must have the same shape: %s vs %s", an, bn,
                       sm_shape_str(r, sm_tensor_dims(a), b1, sizeof b1),
                       sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), b2, sizeof b2));
}

static sm_status *pg_compute(const void *state, sm_kctx *ctx) {
  const pg_state *s = state;
  sm__gw w = s->w;
  const int nd = w.nd, k = s->kind;
  const int v2 = k == PG_MAX_V2 || k == PG_MAXGG_V2;
  const int nin = v2 ? 5 : k == PG_AVG || k == PG_AVG3D ? 2 : 3;
  char b1[128];
  sm_status *st;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "%s: expected %d inputs", s->op, nin);
  if (v2) {
    if ((st = v2_four(sm__kctx_input(ctx, 3), "ksize", w.nchw, w.ksize + 1))) return st;
    if ((st = v2_four(sm__kctx_input(ctx, 4), "stride", w.nchw, w.stride + 1))) return st;
  }
  const int avg = k == PG_AVG || k == PG_AVG3D;
  const sm_tensor *x = avg ? NULL : sm__kctx_input(ctx, 0);
  const sm_tensor *grad = sm__kctx_input(ctx, avg ? 1 : k == PG_ARGMAX || k == PG_ARGMAX_GG ? 1 : 2);
  int dt = sm_tensor_dtype(grad);
  if (!sm__g_real(dt, !avg && k != PG_MAX3D && k != PG_MAX3DGG))
    return sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported", s->op, dtn(dt));
  int64_t xs[5];
  if (avg) {
    if ((st = sm__g_shape_vec(sm__kctx_input(ctx, 0), nd, "orig_input_shape", xs))) return sm_status_prefix(st, "%s", s->op);
  } else {
    if (sm_tensor_rank(x) != nd)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: orig_input must be %d-dimensional: %s", s->op, nd,
                           sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
    if (sm_tensor_dtype(x) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input and gradient dtypes differ", s->op);
    memcpy(xs, sm_tensor_dims(x), (size_t)nd * sizeof(int64_t));
  }
  if (sm_tensor_rank(grad) != nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: gradient must be %d-dimensional: %s", s->op, nd,
                         sm_shape_str(sm_tensor_rank(grad), sm_tensor_dims(grad), b1, sizeof b1));
  pg_geo g = {0};
  int cax = w.nchw ? 1 : nd - 1, sp0 = w.nchw ? 2 : 1;
  g.N = xs[0], g.C = xs[cax];
  int64_t *sp[3] = {&g.D, &g.H, &g.W}, *op_[3] = {&g.OD, &g.OH, &g.OW};
  for (int i = 0; i < 3; i++) {
    int ax = nd == 5 ? i : i - 1;
    *sp[i] = ax < 0 ? 1 : xs[sp0 + ax];
    g.k[i] = w.ksize[i], g.s[i] = w.stride[i];
    if ((st = sm__nn_out_size(*sp[i], g.k[i], 1, g.s[i], w.padding, w.pad[2 * i], w.pad[2 * i + 1], op_[i], &g.lead[i])))
      return sm_status_prefix(st, "%s", s->op);
  }
  int64_t os5[5] = {g.N, g.OD, g.OH, g.OW, g.C}, xs5[5] = {g.N, g.D, g.H, g.W, g.C}, gs5[5];
  sm__g_dims(grad, w.nchw, gs5);
  /* which shape grad must have: the output's (first order), the input's (second order) */
  const int second = k == PG_MAXGG || k == PG_MAXGG_V2 || k == PG_MAX3DGG || k == PG_ARGMAX_GG;
  const int64_t *want = second ? xs5 : os5;
  for (int i = 0; i < 5; i++)
    if (gs5[i] != want[i]) {
      int64_t wd[5];
      int r = 0;
      wd[r++] = want[0];
      if (w.nchw) wd[r++] = want[4];
      for (int a = nd == 5 ? 1 : 2; a < 4; a++) wd[r++] = want[a];
      if (!w.nchw) wd[r++] = want[4];
      char b2[128];
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must have shape %s, got %s", s->op,
                           second ? "grad (of the input's shape)" : "grad (of the output's shape)",
                           sm_shape_str(nd, wd, b2, sizeof b2),
                           sm_shape_str(sm_tensor_rank(grad), sm_tensor_dims(grad), b1, sizeof b1));
    }
  const sm_tensor *y = NULL, *am = NULL;
  if (k == PG_MAX || k == PG_MAX_V2 || k == PG_MAX3D || k == PG_MAXGG || k == PG_MAXGG_V2 || k == PG_MAX3DGG) {
    y = sm__kctx_input(ctx, 1);
    int64_t ys5[5];
    if (sm_tensor_rank(y) != nd || sm_tensor_dtype(y) != dt)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: orig_output must be a %d-dimensional %s tensor", s->op, nd, dtn(dt));
    sm__g_dims(y, w.nchw, ys5);
    for (int i = 0; i < 5; i++)
      if (ys5[i] != os5[i])
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: orig_output shape %s does not match the pooled shape", s->op,
                             sm_shape_str(nd, sm_tensor_dims(y), b1, sizeof b1));
  }
  if (k == PG_ARGMAX || k == PG_ARGMAX_GG) {
    am = sm__kctx_input(ctx, 2);
    int at = sm_tensor_dtype(am);
    if (at != SM_INT32 && at != SM_INT64)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: argmax must be int32 or int64, got %s", s->op, dtn(at));
    int64_t as5[5];
    if (sm_tensor_rank(am) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "%s: argmax must be 4-dimensional", s->op);
    sm__g_dims(am, 0, as5);
    for (int i = 0; i < 5; i++)
      if (as5[i] != os5[i])
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: argmax shape %s does not match the pooled shape", s->op,
                             sm_shape_str(4, sm_tensor_dims(am), b1, sizeof b1));
  }
  sm_tensor *out;
  if ((st = sm__g_alloc(ctx, 0, dt, nd, w.nchw, second ? os5 : xs5, &out))) return st;
  int64_t nout = sm_tensor_num_elements(out);
  if (nout == 0) return NULL;
  double *acc = sm__kctx_scratch(ctx, (size_t)nout * sizeof(double), &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)nout * sizeof(double));
  double *gv = sm__g_load(ctx, grad, w.nchw, &st), *xv = NULL, *yv = NULL;
  if (!gv) return st;
  if (x && !(xv = sm__g_load(ctx, x, w.nchw, &st))) return st;
  if (y && !(yv = sm__g_load(ctx, y, w.nchw, &st))) return st;
  const int64_t C = g.C, in_per_batch = g.D * g.H * g.W * C;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t od = 0; od < g.OD; od++)
      for (int64_t oh = 0; oh < g.OH; oh++)
        for (int64_t ow = 0; ow < g.OW; ow++) {
          const int64_t ob = (((n * g.OD + od) * g.OH + oh) * g.OW + ow) * C;
          int64_t d0, d1, h0, h1, w0, w1;
          win(&g, 0, od, g.D, &d0, &d1);
          win(&g, 1, oh, g.H, &h0, &h1);
          win(&g, 2, ow, g.W, &w0, &w1);
          for (int64_t c = 0; c < C; c++) {
            switch (k) {
              case PG_MAX:
              case PG_MAX_V2: {
                int64_t i = first_max(&g, xv, n, od, oh, ow, c);
                if (i >= 0) acc[i] += gv[ob + c];
                break;
              }
              case PG_MAXGG:
              case PG_MAXGG_V2: {
                int64_t i = first_max(&g, xv, n, od, oh, ow, c);
                acc[ob + c] = i >= 0 ? gv[i] : 0;
                break;
              }
              case PG_AVG:
              case PG_AVG3D: {
                double cnt = (double)((d1 - d0) * (h1 - h0) * (w1 - w0));
                if (cnt <= 0) break;
                double v = gv[ob + c] / cnt;
                for (int64_t d = d0; d < d1; d++)
                  for (int64_t h = h0; h < h1; h++)
                    for (int64_t ww = w0; ww < w1; ww++) acc[(((n * g.D + d) * g.H + h) * g.W + ww) * C + c] += v;
                break;
              }
              case PG_MAX3D:
              case PG_MAX3DGG: {
                double m = yv[ob + c], sum = 0;
                for (int64_t d = d0; d < d1; d++)
                  for (int64_t h = h0; h < h1; h++)
                    for (int64_t ww = w0; ww < w1; ww++) {
                      int64_t i = (((n * g.D + d) * g.H + h) * g.W + ww) * C + c;
                      if (xv[i] != m) continue;
                      if (k == PG_MAX3D)
                        acc[i] += gv[ob + c];
                      else
                        sum += gv[i];
                    }
                if (k == PG_MAX3DGG) acc[ob + c] = sum;
                break;
              }
              default: { /* the argmax forms: flat NHWC index, of the batch's image unless batch_in_index */
                int64_t a = sm_tensor_dtype(am) == SM_INT32 ? ((const int32_t *)sm_tensor_data(am))[ob + c]
                                                            : ((const int64_t *)sm_tensor_data(am))[ob + c];
                int64_t i = s->batch_in_index ? a : a + n * in_per_batch;
                if (a < 0 || i < n * in_per_batch || i >= (n + 1) * in_per_batch)
                  return sm_status_new(SM_INVALID_ARGUMENT, "%s: argmax %lld at position %lld is out of range [0, %lld)",
                                       s->op, (long long)a, (long long)(ob + c),
                                       (long long)(s->batch_in_index ? g.N * in_per_batch : in_per_batch));
                if (k == PG_ARGMAX)
                  acc[i] += gv[ob + c];
                else
                  acc[ob + c] = gv[i];
                break;
              }
            }
          }
        }
  return sm__g_store(ctx, acc, out, w.nchw);
}

/* ---- FractionalMaxPoolGrad, FractionalAvgPoolGrad ------------------------------------------- */
typedef struct fp_state {
  int overlapping, is_max;
} fp_state;

static sm_status *fp_prepare(const sm_node *n, void **state) {
  fp_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->is_max = !strcmp(sm__node_op(n), "FractionalMaxPoolGrad");
  sm_status *st = NULL;
  if (sm__node_attr(n, "overlapping")) st = sm__node_attr_bool(n, "overlapping", &s->overlapping);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* A pooling sequence: `want` int64 entries, none negative. */
static sm_status *fp_seq(const sm_tensor *t, int64_t want, const char *what, const int64_t **out) {
  if (sm_tensor_dtype(t) != SM_INT64 || sm_tensor_rank(t) != 1 || sm_tensor_num_elements(t) != want)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be an int64 vector of %lld elements (the output size + 1)", what,
                         (long long)want);
  const int64_t *v = sm_tensor_data(t);
  for (int64_t i = 0; i < want; i++)
    if (v[i] < 0) /* past the end is clipped (as TF clips it); below 0 would read before the input */
      return sm_status_new(SM_INVALID_ARGUMENT, "%s holds %lld at %lld: entries must not be negative", what,
                           (long long)v[i], (long long)i);
  *out = v;
  return NULL;
}

static sm_status *fp_compute(const void *state, sm_kctx *ctx) {
  const fp_state *s = state;
  const char *op = s->is_max ? "FractionalMaxPoolGrad" : "FractionalAvgPoolGrad";
  int nin = s->is_max ? 5 : 4, b = s->is_max ? 2 : 1;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "%s: expected %d inputs", op, nin);
  const sm_tensor *x = s->is_max ? sm__kctx_input(ctx, 0) : NULL, *gr = sm__kctx_input(ctx, b);
  int64_t xs[4];
  sm_status *st;
  char b1[128];
  int dt = sm_tensor_dtype(gr);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported (float, double, int32, int64)", op, dtn(dt));
  if (s->is_max) {
    if (sm_tensor_rank(x) != 4)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: orig_input should be a tensor of rank 4, got %s", op,
                           sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
    memcpy(xs, sm_tensor_dims(x), sizeof xs);
    if ((st = same_shape(sm__kctx_input(ctx, 1), gr, "orig_output", "out_backprop"))) return sm_status_prefix(st, "%s", op);
  } else if ((st = sm__g_shape_vec(sm__kctx_input(ctx, 0), 4, "orig_input_tensor_shape", xs))) {
    return sm_status_prefix(st, "%s", op);
  }
  if (sm_tensor_rank(gr) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop must be 4-dimensional: %s", op,
                         sm_shape_str(sm_tensor_rank(gr), sm_tensor_dims(gr), b1, sizeof b1));
  const int64_t *gd = sm_tensor_dims(gr);
  if (gd[0] != xs[0] || gd[3] != xs[3])
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop's batch and depth must be the input's", op);
  const int64_t *rs, *cs;
  if ((st = fp_seq(sm__kctx_input(ctx, b + 1), gd[1] + 1, "row_pooling_sequence", &rs))) return sm_status_prefix(st, "%s", op);
  if ((st = fp_seq(sm__kctx_input(ctx, b + 2), gd[2] + 1, "col_pooling_sequence", &cs))) return sm_status_prefix(st, "%s", op);
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 4, xs, &out))) return st;
  int64_t nout = sm_tensor_num_elements(out);
  if (nout == 0) return NULL;
  double *acc = sm__kctx_scratch(ctx, (size_t)nout * sizeof(double), &st), *xv = NULL;
  if (!acc) return st;
  memset(acc, 0, (size_t)nout * sizeof(double));
  if (x && !(xv = sm__g_load(ctx, x, 0, &st))) return st;
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3];
  for (int64_t n = 0; n < N; n++)
    for (int64_t r = 0; r < gd[1]; r++) {
      int64_t r0 = rs[r], r1 = s->overlapping ? rs[r + 1] : rs[r + 1] - 1;
      if (r1 > H - 1) r1 = H - 1;
      for (int64_t c = 0; c < gd[2]; c++) {
        int64_t c0 = cs[c], c1 = s->overlapping ? cs[c + 1] : cs[c + 1] - 1;
        if (c1 > W - 1) c1 = W - 1;
        for (int64_t d = 0; d < C; d++) {
          double gvv = sm__math_get_f64(gr, ((n * gd[1] + r) * gd[2] + c) * C + d);
          if (s->is_max) {
            int64_t best = -1;
            for (int64_t h = r0; h <= r1; h++)
              for (int64_t ww = c0; ww <= c1; ww++) {
                int64_t i = ((n * H + h) * W + ww) * C + d;
                if (best < 0 || xv[best] < xv[i]) best = i;
              }
            if (best >= 0) acc[best] += gvv;
          } else {
            double cnt = (double)((r1 - r0 + 1) * (c1 - c0 + 1));
            if (cnt <= 0) continue;
            for (int64_t h = r0; h <= r1; h++)
              for (int64_t ww = c0; ww <= c1; ww++) acc[((n * H + h) * W + ww) * C + d] += gvv / cnt;
          }
        }
      }
    }
  return sm__g_store(ctx, acc, out, 0);
}

/* ---- Dilation2DBackpropInput, Dilation2DBackpropFilter ---------------------------------------- */
typedef struct dl_state {
  int64_t s[2], r[2];
  int same, filter;
} dl_state;

static sm_status *dl_prepare(const sm_node *n, void **state) {
  dl_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->filter = !strcmp(sm__node_op(n), "Dilation2DBackpropFilter");
  const int64_t *v, *r;
  size_t nv, nr;
  sm_status *st = sm__node_attr_ints(n, "strides", &v, &nv);
  if (!st) st = sm__node_attr_ints(n, "rates", &r, &nr);
  if (!st) st = sm__nn_same_padding(n, &s->same);
  if (!st && (nv != 4 || nr != 4))
    st = sm_status_new(SM_INVALID_ARGUMENT, "Sliding window strides and rates fields must specify 4 dimensions");
  if (!st && (v[0] != 1 || v[3] != 1))
    st = sm_status_new(SM_UNIMPLEMENTED, "Current implementation does not yet support strides in the batch and depth dimensions.");
  if (!st && (r[0] != 1 || r[3] != 1))
    st = sm_status_new(SM_UNIMPLEMENTED, "Current implementation does not yet support rates in the batch and depth dimensions.");
  if (!st && (v[1] < 1 || v[2] < 1 || r[1] < 1 || r[2] < 1))
    st = sm_status_new(SM_INVALID_ARGUMENT, "Dilation2D: strides and rates must be positive");
  if (st) {
    free(s);
    return st;
  }
  s->s[0] = v[1], s->s[1] = v[2], s->r[0] = r[1], s->r[1] = r[2];
  *state = s;
  return NULL;
}

static sm_status *dl_compute(const void *state, sm_kctx *ctx) {
  const dl_state *s = state;
  const char *op = s->filter ? "Dilation2DBackpropFilter" : "Dilation2DBackpropInput";
  if (sm__kctx_num_inputs(ctx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "%s: expected 3 inputs", op);
  const sm_tensor *x = sm__kctx_input(ctx, 0), *f = sm__kctx_input(ctx, 1), *gr = sm__kctx_input(ctx, 2);
  char b1[128];
  int dt = sm_tensor_dtype(x);
  if (!sm__g_real(dt, 1)) return sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported", op, dtn(dt));
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                         sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
  if (sm_tensor_rank(f) != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "filter must be 3-dimensional: %s",
                         sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), b1, sizeof b1));
  const int64_t *xd = sm_tensor_dims(x), *fd = sm_tensor_dims(f);
  const int64_t N = xd[0], H = xd[1], W = xd[2], C = xd[3], KH = fd[0], KW = fd[1];
  if (fd[2] != C)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)C,
                         (long long)fd[2]);
  int64_t OH, OW, pt, pl;
  sm_status *st = sm__nn_out_size(H, KH, s->r[0], s->s[0], s->same ? SM_NN_SAME : SM_NN_VALID, 0, 0, &OH, &pt);
  if (!st) st = sm__nn_out_size(W, KW, s->r[1], s->s[1], s->same ? SM_NN_SAME : SM_NN_VALID, 0, 0, &OW, &pl);
  if (st) return sm_status_prefix(st, "%s", op);
  const int64_t *gd = sm_tensor_dims(gr);
  if (sm_tensor_rank(gr) != 4 || gd[0] != N || gd[1] != OH || gd[2] != OW || gd[3] != C)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop has incompatible size %s (expected [%lld,%lld,%lld,%lld])",
                         op, sm_shape_str(sm_tensor_rank(gr), gd, b1, sizeof b1), (long long)N, (long long)OH,
                         (long long)OW, (long long)C);
  if (sm_tensor_dtype(f) != dt || sm_tensor_dtype(gr) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input, filter and out_backprop dtypes differ", op);
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, s->filter ? 3 : 4, s->filter ? fd : xd, &out))) return st;
  int64_t nout = sm_tensor_num_elements(out);
  if (nout == 0) return NULL;
  double *acc = sm__kctx_scratch(ctx, (size_t)nout * sizeof(double), &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)nout * sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++) {
      int64_t hb = oh * s->s[0] - pt;
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t wb = ow * s->s[1] - pl;
        for (int64_t c = 0; c < C; c++) {
          double cur = dt == SM_DOUBLE ? -DBL_MAX : -FLT_MAX; /* TF: T's lowest, which a value must pass */
          int64_t hm = s->filter ? 0 : (hb < 0 ? 0 : hb), wm = s->filter ? 0 : (wb < 0 ? 0 : wb);
          for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = hb + kh * s->r[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
              int64_t iw = wb + kw * s->r[1];
              if (iw < 0 || iw >= W) continue;
              double v = sm__math_get_f64(x, ((n * H + ih) * W + iw) * C + c) + sm__math_get_f64(f, (kh * KW + kw) * C + c);
              if (v > cur) {
                cur = v;
                hm = s->filter ? kh : ih;
                wm = s->filter ? kw : iw;
              }
            }
          }
          double gv = sm__math_get_f64(gr, ((n * OH + oh) * OW + ow) * C + c);
          if (s->filter)
            acc[(hm * KW + wm) * C + c] += gv;
          else if (H > 0 && W > 0)
            acc[((n * H + hm) * W + wm) * C + c] += gv;
        }
      }
    }
  return sm__g_store(ctx, acc, out, 0);
}

const sm_kernel sm_kernels_grad_pool[] = {
    {"AvgPool3DGrad", pg_prepare, pg_compute, free, 0},
    {"AvgPoolGrad", pg_prepare, pg_compute, free, 0},
    {"Dilation2DBackpropFilter", dl_prepare, dl_compute, free, 0},
    {"Dilation2DBackpropInput", dl_prepare, dl_compute, free, 0},
    {"FractionalAvgPoolGrad", fp_prepare, fp_compute, free, 0},
    {"FractionalMaxPoolGrad", fp_prepare, fp_compute, free, 0},
    {"MaxPool3DGrad", pg_prepare, pg_compute, free, 0},
    {"MaxPool3DGradGrad", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGrad", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGradGrad", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGradGradV2", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGradGradWithArgmax", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGradV2", pg_prepare, pg_compute, free, 0},
    {"MaxPoolGradWithArgmax", pg_prepare, pg_compute, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
