/* nn_conv_transpose.c - the transposed convolution and the 3-D window ops (issue #21), float and
 * double, with TensorFlow's CPU kernels' semantics and messages:
 *   Conv2DBackpropInput   (the forward op of Conv2DTranspose) NHWC and NCHW (NCHW is transposed
 *                         to NHWC and back), VALID/SAME/EXPLICIT, strides, dilations;
 *   Conv3DBackpropInputV2 NDHWC, VALID/SAME, strides, dilations;
 *   Conv2DBackpropInputV2, Conv3DBackpropInput  the same with the input itself (for its shape) as
 *                         input 0 instead of its shape vector;
 *   Conv3D                NDHWC and NCDHW (transposed to NDHWC and back, as TF's default oneDNN
 *                         build runs it), VALID/SAME, strides, dilations, groups (filter depth C / groups);
 *   MaxPool3D, AvgPool3D  NDHWC, VALID/SAME (windows clipped to the input: padding never wins a
 *                         max and AvgPool3D divides by the in-bounds count, as TF does).
 * Everything is one 3-D geometry (a 2-D op has depth 1) and direct loops over output rows spread
 * over the runtime's pool. The input gradient is computed by gathering (each dx element sums the
 * out_backprop taps that reach it), so rows are independent and no atomics are needed. Never
 * writes its inputs. Grouped gradients and NCDHW pools and gradients are refused as TF's CPU kernels refuse them. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

enum { OP_CONV3D, OP_BACKPROP2D, OP_BACKPROP3D, OP_MAXPOOL3D, OP_AVGPOOL3D };

typedef struct ct_state {
  int op;
  int shape_in; /* Conv2DBackpropInputV2, Conv3DBackpropInput: input 0 is a tensor of the input's shape */
  int nchw;          /* Conv2DBackpropInput only */
  int padding;       /* SM_NN_VALID / SAME / EXPLICIT */
  int64_t ksize[3];  /* pools: D, H, W */
  int64_t stride[3]; /* D, H, W (D = 1 for 2-D) */
  int64_t dil[3];
  int64_t pad[6];    /* EXPLICIT: before/after for D, H, W */
} ct_state;

static int str_is(const char *s, size_t len, const char *lit) { return strlen(lit) == len && memcmp(s, lit, len) == 0; }

/* nn_internal.h */
sm_status *sm__nn_five(const sm_node *n, const char *attr, const char *what, int ncdhw, int64_t dhw[3],
                       int64_t nc[2]) {
  const int64_t *v;
  size_t cnt;
  sm_status *st = sm__node_attr_ints(n, attr, &v, &cnt);
  if (st) return st;
  if (cnt != 5)
    return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s field must specify 5 dimensions (got %zu)", what, cnt);
  int d0 = ncdhw ? 2 : 1;
  dhw[0] = v[d0], dhw[1] = v[d0 + 1], dhw[2] = v[d0 + 2];
  nc[0] = v[0], nc[1] = v[ncdhw ? 1 : 4];
  return NULL;
}

static sm_status *prepare3d(const sm_node *n, ct_state *s) {
  int pool = s->op == OP_MAXPOOL3D || s->op == OP_AVGPOOL3D;
  sm_status *st = sm__nn_data_format(n, 1, &s->nchw);
  if (st) return st;
  /* Conv3D NCDHW: TF's own CPU kernel refuses it, but TF's default x86 build (oneDNN) runs it, and a
   * Keras Conv3D(data_format="channels_first") export holds one; computed NDHWC between transposes. */
  if (s->nchw && s->op != OP_CONV3D)
    return sm_status_new(SM_INVALID_ARGUMENT, pool ? "Default Pooling3DOp only supports NDHWC on device type CPU"
                                                   : "CPU implementation of %s currently only supports the NHWC "
                                                     "tensor format.",
                         sm__node_op(n));
  const char *p;
  size_t plen;
  if ((st = sm__node_attr_string(n, "padding", &p, &plen))) return st;
  if (str_is(p, plen, "VALID"))
    s->padding = SM_NN_VALID;
  else if (str_is(p, plen, "SAME"))
    s->padding = SM_NN_SAME;
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "padding '%.*s' is not supported", (int)(plen > 32 ? 32 : plen), p);
  int64_t nc[2];
  if ((st = sm__nn_five(n, "strides", "strides", s->nchw, s->stride, nc))) return st;
  if (pool) {
    if (nc[0] != 1) return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch dimension.");
    if (nc[1] != 1) return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the depth dimension.");
    if ((st = sm__nn_five(n, "ksize", "ksize", s->nchw, s->ksize, nc))) return st;
    if (nc[0] != 1) return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch dimension.");
    if (nc[1] != 1) return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the depth dimension.");
    for (int i = 0; i < 3; i++)
      if (s->ksize[i] < 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize field must have non-negative dimensions");
  } else if (nc[0] != 1 || nc[1] != 1) {
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Current implementation does not yet support strides in the batch and depth dimensions.");
  }
  for (int i = 0; i < 3; i++)
    if (s->stride[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window strides must be positive");
  if (!pool && sm__node_attr(n, "dilations")) {
    if ((st = sm__nn_five(n, "dilations", "dilations", s->nchw, s->dil, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Current implementation does not yet support dilation rates in the batch and depth "
                           "dimensions.");
    for (int i = 0; i < 3; i++)
      if (s->dil[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Dilated rates should be larger than 0.");
  }
  return NULL;
}

static sm_status *ct_prepare(const sm_node *n, void **state) {
  ct_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(n);
  s->shape_in = !strcmp(op, "Conv2DBackpropInputV2") || !strcmp(op, "Conv3DBackpropInput");
  s->op = !strcmp(op, "Conv3D")                                              ? OP_CONV3D
          : !strcmp(op, "Conv2DBackpropInput") || !strcmp(op, "Conv2DBackpropInputV2") ? OP_BACKPROP2D
          : !strcmp(op, "Conv3DBackpropInputV2") || !strcmp(op, "Conv3DBackpropInput") ? OP_BACKPROP3D
          : !strcmp(op, "MaxPool3D")             ? OP_MAXPOOL3D
                                                 : OP_AVGPOOL3D;
  for (int i = 0; i < 3; i++) s->ksize[i] = s->stride[i] = s->dil[i] = 1;
  sm_status *st = NULL;
  if (s->op == OP_BACKPROP2D) {
    sm__nn_window w;
    st = sm__nn_window_prepare(n, 0, 1, 1, &w);
    if (!st) {
      s->nchw = w.nchw;
      s->padding = w.padding;
      s->stride[1] = w.stride[0], s->stride[2] = w.stride[1];
      s->dil[1] = w.dilation[0], s->dil[2] = w.dilation[1];
      memcpy(s->pad + 2, w.pad, sizeof w.pad);
    }
  } else {
    st = prepare3d(n, s);
  }
  if (!st && sm__node_num_outputs(n) == 1) {
    int dt = sm__node_output_dtype(n, 0);
    if (dt != SM_FLOAT && dt != SM_DOUBLE)
      st = sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (float, double)",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* One job's geometry, NDHWC: x [N,D,H,W,C], filter [KD,KH,KW,C,Co], y [N,OD,OH,OW,Co]. The conv
 * reads x and writes y; the gradient reads y (out_backprop) and writes x; pools have Co = C. */
typedef struct ct_job {
  int dtype, op;
  const void *src, *filt;
  void *dst;
  int64_t N, D, H, W, C, OD, OH, OW, Co;
  int64_t Cf; /* Conv3D: the filter's input channels (C / Cf groups, each Co / groups outputs) */
  int64_t k[3], s[3], d[3], lead[3];
} ct_job;

#define CONV_ROWS(T)                                                                             \
  do {                                                                                           \
    const T *x = j->src, *f = j->filt;                                                           \
    T *y = j->dst;                                                                               \
    const int64_t C = j->C, Co = j->Co, Cf = j->Cf, Cog = Co / (C / Cf);                         \
    for (int64_t r = begin; r < end; r++) {                                                      \
      int64_t n = r / (j->OD * j->OH), od = r / j->OH % j->OD, oh = r % j->OH;                   \
      for (int64_t ow = 0; ow < j->OW; ow++) {                                                   \
        T *o = y + (r * j->OW + ow) * Co;                                                        \
        for (int64_t kd = 0; kd < j->k[0]; kd++) {                                               \
          int64_t id = od * j->s[0] - j->lead[0] + kd * j->d[0];                                 \
          if (id < 0 || id >= j->D) continue;                                                    \
          for (int64_t kh = 0; kh < j->k[1]; kh++) {                                             \
            int64_t ih = oh * j->s[1] - j->lead[1] + kh * j->d[1];                               \
            if (ih < 0 || ih >= j->H) continue;                                                  \
            for (int64_t kw = 0; kw < j->k[2]; kw++) {                                           \
              int64_t iw = ow * j->s[2] - j->lead[2] + kw * j->d[2];                             \
              if (iw < 0 || iw >= j->W) continue;                                                \
              const T *xp = x + (((n * j->D + id) * j->H + ih) * j->W + iw) * C;                 \
              const T *fp = f + ((kd * j->k[1] + kh) * j->k[2] + kw) * Cf * Co;                  \
              for (int64_t ci = 0; ci < C; ci++) { /* group ci / Cf: its Cog outputs */          \
                const int64_t g0 = ci / Cf * Cog;                                                \
                const T xv = xp[ci], *fr = fp + ci % Cf * Co + g0;                               \
                T *og = o + g0;                                                                  \
                for (int64_t co = 0; co < Cog; co++) og[co] += xv * fr[co];                      \
              }                                                                                  \
            }                                                                                    \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  } while (0)

/* The tap k of output coordinate o reaching input i: i = o*s - lead + k*d. */
static inline int64_t tap_out(int64_t i, int64_t k, const ct_job *j, int a, int64_t olim) {
  int64_t t = i + j->lead[a] - k * j->d[a];
  if (t < 0 || t % j->s[a]) return -1;
  t /= j->s[a];
  return t < olim ? t : -1;
}

#define GRAD_ROWS(T)                                                                             \
  do {                                                                                           \
    const T *dy = j->src, *f = j->filt;                                                          \
    T *dx = j->dst;                                                                              \
    const int64_t C = j->C, Co = j->Co;                                                          \
    for (int64_t r = begin; r < end; r++) {                                                      \
      int64_t n = r / (j->D * j->H), id = r / j->H % j->D, ih = r % j->H;                        \
      for (int64_t iw = 0; iw < j->W; iw++) {                                                    \
        T *o = dx + (r * j->W + iw) * C;                                                         \
        for (int64_t kd = 0; kd < j->k[0]; kd++) {                                               \
          int64_t od = tap_out(id, kd, j, 0, j->OD);                                             \
          if (od < 0) continue;                                                                  \
          for (int64_t kh = 0; kh < j->k[1]; kh++) {                                             \
            int64_t oh = tap_out(ih, kh, j, 1, j->OH);                                           \
            if (oh < 0) continue;                                                                \
            for (int64_t kw = 0; kw < j->k[2]; kw++) {                                           \
              int64_t ow = tap_out(iw, kw, j, 2, j->OW);                                         \
              if (ow < 0) continue;                                                              \
              const T *g = dy + (((n * j->OD + od) * j->OH + oh) * j->OW + ow) * Co;             \
              const T *fp = f + ((kd * j->k[1] + kh) * j->k[2] + kw) * C * Co;                   \
              for (int64_t ci = 0; ci < C; ci++) {                                               \
                const T *fr = fp + ci * Co;                                                      \
                T acc = 0;                                                                       \
                for (int64_t co = 0; co < Co; co++) acc += fr[co] * g[co];                       \
                o[ci] += acc;                                                                    \
              }                                                                                  \
            }                                                                                    \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  } while (0)

#define POOL_ROWS(T, LOWEST)                                                                       \
  do {                                                                                             \
    const T *x = j->src;                                                                           \
    T *y = j->dst;                                                                                 \
    const int64_t C = j->C;                                                                        \
    const int is_max = j->op == OP_MAXPOOL3D;                                                      \
    for (int64_t r = begin; r < end; r++) {                                                        \
      int64_t n = r / (j->OD * j->OH), od = r / j->OH % j->OD, oh = r % j->OH;                     \
      int64_t d0 = od * j->s[0] - j->lead[0], h0 = oh * j->s[1] - j->lead[1];                      \
      int64_t d1 = d0 + j->k[0] < j->D ? d0 + j->k[0] : j->D, h1 = h0 + j->k[1] < j->H ? h0 + j->k[1] : j->H; \
      if (d0 < 0) d0 = 0;                                                                          \
      if (h0 < 0) h0 = 0;                                                                          \
      for (int64_t ow = 0; ow < j->OW; ow++) {                                                     \
        int64_t w0 = ow * j->s[2] - j->lead[2], w1 = w0 + j->k[2] < j->W ? w0 + j->k[2] : j->W;    \
        if (w0 < 0) w0 = 0;                                                                        \
        T *o = y + (r * j->OW + ow) * C;                                                           \
        for (int64_t c = 0; c < C; c++) o[c] = is_max ? LOWEST : 0;                                \
        for (int64_t id = d0; id < d1; id++)                                                       \
          for (int64_t ih = h0; ih < h1; ih++)                                                     \
            for (int64_t iw = w0; iw < w1; iw++) {                                                 \
              const T *p = x + (((n * j->D + id) * j->H + ih) * j->W + iw) * C;                   \
              if (is_max)                                                                          \
                for (int64_t c = 0; c < C; c++) o[c] = p[c] > o[c] ? p[c] : o[c];                  \
              else                                                                                 \
                for (int64_t c = 0; c < C; c++) o[c] += p[c];                                      \
            }                                                                                      \
        if (!is_max) {                                                                             \
          T cnt = (T)((d1 - d0) * (h1 - h0) * (w1 - w0));                                          \
          for (int64_t c = 0; c < C; c++) o[c] /= cnt;                                             \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void ct_rows(void *ctx, int64_t begin, int64_t end) {
  const ct_job *j = ctx;
  int dbl = j->dtype == SM_DOUBLE;
  switch (j->op) {
    case OP_CONV3D:
      if (dbl)
        CONV_ROWS(double);
      else
        CONV_ROWS(float);
      break;
    case OP_BACKPROP2D:
    case OP_BACKPROP3D:
      if (dbl)
        GRAD_ROWS(double);
      else
        GRAD_ROWS(float);
      break;
    default:
      if (dbl)
        POOL_ROWS(double, -DBL_MAX);
      else
        POOL_ROWS(float, -FLT_MAX);
      break;
  }
}

/* Spreads rows of `per_row` multiply-adds each over the pool. */
static void ct_run(sm_kctx *ctx, ct_job *j, int64_t rows, double per_row) {
  sm_threadpool *pool = (double)rows * per_row < 65536.0 ? NULL : sm__kctx_pool(ctx);
  int64_t grain = per_row >= 16384.0 ? 1 : (int64_t)(16384.0 / (per_row > 1.0 ? per_row : 1.0));
  sm__parallel_for(pool, rows, grain, ct_rows, j);
}

static const char *dtn(int dt) { return sm_dtype_name(dt) ? sm_dtype_name(dt) : "?"; }

static sm_status *check_float(int dt, const sm_tensor *f) {
  if ((dt != SM_FLOAT && dt != SM_DOUBLE) || (f && sm_tensor_dtype(f) != dt))
    return sm_status_new(SM_UNIMPLEMENTED, "input %s and filter %s: only float and double are supported", dtn(dt),
                         f ? dtn(sm_tensor_dtype(f)) : "-");
  return NULL;
}

/* Conv3D, MaxPool3D, AvgPool3D. */
static sm_status *forward(const ct_state *s, sm_kctx *ctx) {
  int conv = s->op == OP_CONV3D;
  if (sm__kctx_num_inputs(ctx) != (conv ? 2 : 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "expected %d inputs", conv ? 2 : 1);
  const sm_tensor *x = sm__kctx_input(ctx, 0), *f = conv ? sm__kctx_input(ctx, 1) : NULL;
  char b1[128];
  sm_status *st = check_float(sm_tensor_dtype(x), f);
  if (st) return st;
  if (sm_tensor_rank(x) != 5)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 5-dimensional: %s", conv ? "input" : "tensor_in",
                         sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
  const int64_t *xd0 = sm_tensor_dims(x);
  int64_t xd[5] = {xd0[0], xd0[1], xd0[2], xd0[3], xd0[4]}; /* NDHWC */
  if (s->nchw) xd[1] = xd0[2], xd[2] = xd0[3], xd[3] = xd0[4], xd[4] = xd0[1];
  ct_job j = {0};
  j.dtype = sm_tensor_dtype(x);
  j.op = s->op;
  j.N = xd[0], j.D = xd[1], j.H = xd[2], j.W = xd[3], j.C = xd[4];
  if (conv) {
    if (sm_tensor_rank(f) != 5)
      return sm_status_new(SM_INVALID_ARGUMENT, "filter must be 5-dimensional: %s",
                           sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), b1, sizeof b1));
    const int64_t *fd = sm_tensor_dims(f);
    if (fd[3] <= 0 || j.C % fd[3] != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input depth must be evenly divisible by filter depth: %lld vs %lld",
                           (long long)j.C, (long long)fd[3]);
    /* Grouped (C / fd[3] groups): TF's own CPU kernel (and its eager oneDNN one) refuse it, but TF
     * 2.21 running a Keras Conv3D(groups=...) export computes it (its oneDNN graph kernels), and
     * tests/interop/test_keras_layer_sweep.py holds us to that. */
    if (j.C < fd[3]) /* C = 0: no group to split the output channels into */
      return sm_status_new(SM_INVALID_ARGUMENT, "Conv3D: input depth %lld is smaller than the filter depth %lld",
                           (long long)j.C, (long long)fd[3]);
    if (fd[4] % (j.C / fd[3]) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Conv3D: %lld output channels do not split into %lld groups",
                           (long long)fd[4], (long long)(j.C / fd[3]));
    j.k[0] = fd[0], j.k[1] = fd[1], j.k[2] = fd[2];
    j.Co = fd[4];
    j.Cf = fd[3];
  } else {
    memcpy(j.k, s->ksize, sizeof j.k);
    j.Co = j.C;
    j.Cf = j.C;
  }
  memcpy(j.s, s->stride, sizeof j.s);
  memcpy(j.d, s->dil, sizeof j.d);
  int64_t *od[3] = {&j.OD, &j.OH, &j.OW};
  for (int a = 0; a < 3; a++)
    if ((st = sm__nn_out_size(xd[1 + a], j.k[a], j.d[a], j.s[a], s->padding, 0, 0, od[a], &j.lead[a])))
      return st;
  int64_t yd[5] = {j.N, j.OD, j.OH, j.OW, j.Co};
  if (s->nchw) yd[1] = j.Co, yd[2] = j.OD, yd[3] = j.OH, yd[4] = j.OW;
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output(ctx, 0, j.dtype, 5, yd, &y))) return st;
  if (sm_tensor_num_elements(y) == 0) return NULL;
  j.src = sm_tensor_data(x);
  j.filt = f ? sm_tensor_data(f) : NULL;
  j.dst = sm_tensor_data(y);
  size_t es = j.dtype == SM_DOUBLE ? 8 : 4;
  void *tx = NULL, *ty = NULL;
  if (s->nchw) { /* [N, C, D*H, W] -> [N, D*H, W, C] and back: NCDHW <-> NDHWC */
    int64_t xv[4] = {j.N, j.C, j.D * j.H, j.W};
    if (!(tx = sm__kctx_scratch(ctx, sm_tensor_nbytes(x), &st))) return st;
    if (!(ty = sm__kctx_scratch(ctx, sm_tensor_nbytes(y), &st))) {
      sm__kctx_scratch_free(ctx, tx);
      return st;
    }
    if (sm_tensor_num_elements(x) > 0) sm__nn_nchw_to_nhwc(j.src, tx, xv, es);
    memset(ty, 0, sm_tensor_nbytes(y)); /* the rows accumulate into y, as into the zeroed output */
    j.src = tx;
    j.dst = ty;
  }
  double per_row = (double)j.OW * (double)j.k[0] * (double)j.k[1] * (double)j.k[2] * (double)j.C *
                   (conv ? (double)j.Co * (double)j.Cf / (double)j.C : 1.0);
  ct_run(ctx, &j, j.N * j.OD * j.OH, per_row);
  if (s->nchw) {
    int64_t yv[4] = {j.N, j.OD * j.OH, j.OW, j.Co};
    sm__nn_nhwc_to_nchw(ty, sm_tensor_data(y), yv, es);
    sm__kctx_scratch_free(ctx, tx);
    sm__kctx_scratch_free(ctx, ty);
  }
  return NULL;
}

/* Conv2DBackpropInput, Conv3DBackpropInputV2. */
static sm_status *backprop(const ct_state *s, sm_kctx *ctx) {
  int three = s->op == OP_BACKPROP3D, nd = three ? 5 : 4;
  const char *label = three ? "Conv3DBackpropInputOp" : "Conv2DCustomBackpropInput";
  if (sm__kctx_num_inputs(ctx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "expected 3 inputs");
  const sm_tensor *sz = sm__kctx_input(ctx, 0), *f = sm__kctx_input(ctx, 1), *dy = sm__kctx_input(ctx, 2);
  char b1[128];
  sm_status *st = check_float(sm_tensor_dtype(dy), f);
  if (st) return st;
  /* the input's shape, in the op's data_format */
  int szt = sm_tensor_dtype(sz);
  int64_t nsz = sm_tensor_num_elements(sz), xs[5];
  if (s->shape_in) { /* the V2 / V1-3D forms: input 0 is the input itself, for its shape */
    if (sm_tensor_rank(sz) != nd)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be %d-dimensional: %s", label, nd,
                           sm_shape_str(sm_tensor_rank(sz), sm_tensor_dims(sz), b1, sizeof b1));
    memcpy(xs, sm_tensor_dims(sz), (size_t)nd * sizeof(int64_t));
    nsz = nd;
  } else if (szt != SM_INT32 && szt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_sizes must be int32 or int64, got %s", dtn(szt));
  if (!s->shape_in && sm_tensor_rank(sz) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_sizes input must be 1-dim, not %d", label, sm_tensor_rank(sz));
  if (sm_tensor_rank(f) != nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter must be %d-dimensional: %s", label, nd,
                         sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), b1, sizeof b1));
  if (sm_tensor_rank(dy) != nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop must be %d-dimensional: %s", label, nd,
                         sm_shape_str(sm_tensor_rank(dy), sm_tensor_dims(dy), b1, sizeof b1));
  const int64_t *fd = sm_tensor_dims(f), *gd = sm_tensor_dims(dy);
  int cax = s->nchw ? 1 : nd - 1; /* channel axis */
  for (int64_t i = 0; i < nsz && i < nd && !s->shape_in; i++)
    xs[i] = szt == SM_INT32 ? ((const int32_t *)sm_tensor_data(sz))[i] : ((const int64_t *)sm_tensor_data(sz))[i];
  if (!three && nsz == 2) { /* [H, W]: batch from out_backprop, depth from the filter */
    int64_t h = xs[0], w = xs[1];
    xs[0] = gd[0];
    xs[cax] = fd[2];
    xs[s->nchw ? 2 : 1] = h;
    xs[s->nchw ? 3 : 2] = w;
  } else if (nsz != nd) {
    if (three)
      return sm_status_new(SM_INVALID_ARGUMENT, "input_sizes must be 5-dimensional, got: %lld", (long long)nsz);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: %lld",
                         (long long)nsz);
  }
  for (int i = 0; i < nd; i++)
    if (xs[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)xs[i]);
  ct_job j = {0};
  j.dtype = sm_tensor_dtype(dy);
  j.op = s->op;
  /* NDHWC view (a 2-D op has D = 1; NCHW is handled by transposing) */
  int64_t sp[3], gsp[3];
  j.N = xs[0];
  j.C = xs[cax];
  sp[0] = three ? xs[1] : 1;
  sp[1] = three ? xs[2] : xs[s->nchw ? 2 : 1];
  sp[2] = three ? xs[3] : xs[s->nchw ? 3 : 2];
  gsp[0] = three ? gd[1] : 1;
  gsp[1] = three ? gd[2] : gd[s->nchw ? 2 : 1];
  gsp[2] = three ? gd[3] : gd[s->nchw ? 3 : 2];
  int64_t gN = gd[0], gC = gd[cax];
  j.k[0] = three ? fd[0] : 1, j.k[1] = fd[nd - 4], j.k[2] = fd[nd - 3];
  int64_t fin = fd[nd - 2];
  j.Co = fd[nd - 1];
  if (j.N != gN)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "%s: input and out_backprop must have the same batch size. Input batch: %lld, outbackprop "
                         "batch: %lld, batch_dim: 0",
                         label, (long long)j.N, (long long)gN);
  if (j.C != fin)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Gradients for grouped convolutions are not supported on CPU. Please file a feature request "
                         "if you run into this issue. Computed input depth %lld doesn't match filter input depth %lld",
                         (long long)j.C, (long long)fin);
  if (j.Co != gC)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter and out_backprop must have the same out_depth", label);
  memcpy(j.s, s->stride, sizeof j.s);
  memcpy(j.d, s->dil, sizeof j.d);
  j.D = sp[0], j.H = sp[1], j.W = sp[2];
  int64_t *od[3] = {&j.OD, &j.OH, &j.OW};
  for (int a = 0; a < 3; a++) {
    if ((st = sm__nn_out_size(sp[a], j.k[a], j.d[a], j.s[a], s->padding, s->pad[2 * a], s->pad[2 * a + 1], od[a],
                              &j.lead[a])))
      return sm_status_prefix(st, "%s", label);
    if (*od[a] != gsp[a]) {
      int dim = three ? 1 + a : (s->nchw ? 1 : 0) + a;
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "%s: Size of out_backprop doesn't match computed: actual = %lld, computed = %lld "
                           "spatial_dim: %d input: %lld filter: %lld output: %lld stride: %lld dilation: %lld",
                           label, (long long)gsp[a], (long long)*od[a], dim, (long long)sp[a], (long long)j.k[a],
                           (long long)gsp[a], (long long)j.s[a], (long long)j.d[a]);
    }
  }
  sm_tensor *dx;
  if ((st = sm__kctx_alloc_output(ctx, 0, j.dtype, nd, xs, &dx))) return st;
  if (sm_tensor_num_elements(dx) == 0) return NULL;
  size_t es = j.dtype == SM_DOUBLE ? 8 : 4;
  void *tg = NULL, *tx = NULL;
  j.src = sm_tensor_data(dy);
  j.filt = sm_tensor_data(f);
  j.dst = sm_tensor_data(dx);
  if (s->nchw) {
    if (!(tg = sm__kctx_scratch(ctx, sm_tensor_nbytes(dy), &st))) return st;
    if (!(tx = sm__kctx_scratch(ctx, sm_tensor_nbytes(dx), &st))) return st;
    sm__nn_nchw_to_nhwc(j.src, tg, gd, es);
    memset(tx, 0, sm_tensor_nbytes(dx));
    j.src = tg;
    j.dst = tx;
  }
  double per_row = (double)j.W * (double)j.k[0] * (double)j.k[1] * (double)j.k[2] * (double)j.C * (double)j.Co /
                   ((double)j.s[0] * (double)j.s[1] * (double)j.s[2]);
  ct_run(ctx, &j, j.N * j.D * j.H, per_row);
  if (s->nchw) {
    int64_t nhwc[4] = {j.N, j.H, j.W, j.C};
    sm__nn_nhwc_to_nchw(tx, sm_tensor_data(dx), nhwc, es);
    sm__kctx_scratch_free(ctx, tg);
    sm__kctx_scratch_free(ctx, tx);
  }
  return NULL;
}

static sm_status *ct_compute(const void *state, sm_kctx *ctx) {
  const ct_state *s = state;
  return s->op == OP_BACKPROP2D || s->op == OP_BACKPROP3D ? backprop(s, ctx) : forward(s, ctx);
}

const sm_kernel sm_kernels_nn_conv_transpose[] = {
    {"AvgPool3D", ct_prepare, ct_compute, free, 0},
    {"Conv2DBackpropInput", ct_prepare, ct_compute, free, 0},
    {"Conv2DBackpropInputV2", ct_prepare, ct_compute, free, 0},
    {"Conv3D", ct_prepare, ct_compute, free, 0},
    {"Conv3DBackpropInput", ct_prepare, ct_compute, free, 0},
    {"Conv3DBackpropInputV2", ct_prepare, ct_compute, free, 0},
    {"MaxPool3D", ct_prepare, ct_compute, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
