/* grad_nn.c - the convolution and normalization gradient ops a training signature holds (a
 * tf.GradientTape over a CNN), with TensorFlow's CPU kernels' semantics:
 *   Conv2DBackpropFilter[V2], Conv3DBackpropFilter[V2]   the filter gradient (V2 / V1-3D take the
 *        filter's shape from a tensor); NHWC and NCHW, VALID/SAME/EXPLICIT, strides, dilations;
 *   DepthwiseConv2dNativeBackpropFilter / BackpropInput   the depthwise ones (filter [KH,KW,C,M]);
 *   FusedBatchNormGrad, V2, V3   is_training true (batch statistics) and false (population ones);
 *   BatchNormWithGlobalNormalization and its Grad (TF1).
 * (Conv2DBackpropInputV2 and Conv3DBackpropInput are nn_conv_transpose.c's input gradient, LRNGrad
 * is nn_loss.c's, beside LRN.)
 * And the shared helpers of grad_internal.h. Everything computes in double from channels-last
 * copies (half and bfloat16 widened) and rounds once; loops are direct, spread over the pool by
 * output element blocks (filter taps, input rows), so memory is linear in the tensors. Never writes
 * its inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/grad_internal.h"
#include "ops/math_int.h"
#include "ops/nn_internal.h"

static const char *dtn(int dt) { return sm_dtype_name(dt) ? sm_dtype_name(dt) : "?"; }

/* ---- grad_internal.h ---------------------------------------------------------------------- */
int sm__g_real(int dt, int ints) {
  if (dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16) return 1;
  return ints && (dt == SM_INT8 || dt == SM_UINT8 || dt == SM_INT16 || dt == SM_UINT16 || dt == SM_INT32 ||
                  dt == SM_UINT32 || dt == SM_INT64 || dt == SM_UINT64);
}

void sm__g_dims(const sm_tensor *t, int nchw, int64_t o[5]) {
  const int64_t *d = sm_tensor_dims(t);
  int r = sm_tensor_rank(t);
  o[0] = d[0];
  o[1] = r == 5 ? d[nchw ? 2 : 1] : 1;
  o[2] = d[r == 5 ? (nchw ? 3 : 2) : (nchw ? 2 : 1)];
  o[3] = d[r == 5 ? (nchw ? 4 : 3) : (nchw ? 3 : 2)];
  o[4] = d[nchw ? 1 : r - 1];
}

sm_status *sm__g_alloc(sm_kctx *ctx, int i, int dtype, int nd, int nchw, const int64_t d5[5], sm_tensor **out) {
  int64_t d[5];
  int k = 0;
  d[k++] = d5[0];
  if (nchw) d[k++] = d5[4];
  if (nd == 5) d[k++] = d5[1];
  d[k++] = d5[2];
  d[k++] = d5[3];
  if (!nchw) d[k++] = d5[4];
  return sm__kctx_alloc_output(ctx, i, dtype, nd, d, out);
}

double *sm__g_load(sm_kctx *ctx, const sm_tensor *t, int nchw, sm_status **st) {
  int64_t n = sm_tensor_num_elements(t);
  double *v = sm__kctx_scratch(ctx, (size_t)(n > 0 ? n : 1) * sizeof(double), st);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; i++) v[i] = sm__math_get_f64(t, i);
  if (nchw && n > 0) {
    double *w = sm__kctx_scratch(ctx, (size_t)n * sizeof(double), st);
    if (!w) return NULL;
    const int64_t *d = sm_tensor_dims(t);
    int five = sm_tensor_rank(t) == 5; /* NCDHW as [N, C, D*H, W] */
    int64_t v4[4] = {d[0], d[1], five ? d[2] * d[3] : d[2], five ? d[4] : d[3]};
    sm__nn_nchw_to_nhwc(v, w, v4, sizeof(double));
    sm__kctx_scratch_free(ctx, v);
    v = w;
  }
  return v;
}

static void put(sm_tensor *t, int64_t i, double x) {
  void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)p)[i] = (float)x; break;
    case SM_DOUBLE: ((double *)p)[i] = x; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)x); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)x); break;
    case SM_INT8: ((int8_t *)p)[i] = (int8_t)(int64_t)x; break;
    case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)x; break;
    case SM_INT16: ((int16_t *)p)[i] = (int16_t)(int64_t)x; break;
    case SM_UINT16: ((uint16_t *)p)[i] = (uint16_t)(int64_t)x; break;
    case SM_INT32: ((int32_t *)p)[i] = (int32_t)(int64_t)x; break;
    case SM_UINT32: ((uint32_t *)p)[i] = (uint32_t)(int64_t)x; break;
    case SM_INT64: ((int64_t *)p)[i] = (int64_t)x; break;
    case SM_UINT64: ((uint64_t *)p)[i] = x < 0 ? (uint64_t)(int64_t)x : (uint64_t)x; break;
    default: break;
  }
}

sm_status *sm__g_store(sm_kctx *ctx, const double *v, sm_tensor *t, int nchw) {
  int64_t n = sm_tensor_num_elements(t);
  if (n <= 0) return NULL;
  double *w = NULL;
  if (nchw) {
    sm_status *st;
    if (!(w = sm__kctx_scratch(ctx, (size_t)n * sizeof(double), &st))) return st;
    const int64_t *d = sm_tensor_dims(t); /* NCHW / NCDHW: the channels-last source is [N, S.., C] */
    int64_t v4[4] = {d[0], d[2], d[3], d[1]};
    if (sm_tensor_rank(t) == 5) v4[1] = d[2] * d[3], v4[2] = d[4];
    sm__nn_nhwc_to_nchw(v, w, v4, sizeof(double));
    v = w;
  }
  for (int64_t i = 0; i < n; i++) put(t, i, v[i]);
  sm__kctx_scratch_free(ctx, w);
  return NULL;
}

sm_status *sm__g_shape_vec(const sm_tensor *t, int want, const char *what, int64_t *v) {
  int dt = sm_tensor_dtype(t);
  if ((dt != SM_INT32 && dt != SM_INT64) || sm_tensor_rank(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a 1-D int32 or int64 vector, got %s of rank %d", what, dtn(dt),
                         sm_tensor_rank(t));
  if (sm_tensor_num_elements(t) != want)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must have %d elements, got %lld", what, want,
                         (long long)sm_tensor_num_elements(t));
  for (int i = 0; i < want; i++) {
    v[i] = dt == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
    if (v[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: dimension %d is negative (%lld)", what, i, (long long)v[i]);
  }
  return NULL;
}

sm_status *sm__gw_prepare(const sm_node *n, int nd, int has_ksize, int has_dil, int explicit_ok, sm__gw *w) {
  memset(w, 0, sizeof *w);
  w->nd = nd;
  for (int i = 0; i < 3; i++) w->ksize[i] = w->stride[i] = w->dil[i] = 1;
  sm_status *st;
  if (nd == 4) {
    sm__nn_window w2;
    if ((st = sm__nn_window_prepare(n, has_ksize, has_dil, explicit_ok, &w2))) return st;
    w->nchw = w2.nchw;
    w->padding = w2.padding;
    for (int i = 0; i < 2; i++) {
      w->ksize[1 + i] = has_ksize ? w2.ksize[i] : 1;
      w->stride[1 + i] = w2.stride[i];
      w->dil[1 + i] = w2.dilation[i];
    }
    memcpy(w->pad + 2, w2.pad, sizeof w2.pad);
    return NULL;
  }
  int same;
  if ((st = sm__nn_data_format(n, 1, &w->nchw)) || (st = sm__nn_same_padding(n, &same))) return st;
  w->padding = same ? SM_NN_SAME : SM_NN_VALID;
  int64_t nc[2];
  if ((st = sm__nn_five(n, "strides", "strides", w->nchw, w->stride, nc))) return st;
  if (nc[0] != 1 || nc[1] != 1)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Current implementation does not yet support strides in the batch and depth dimensions.");
  for (int i = 0; i < 3; i++)
    if (w->stride[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window strides must be positive");
  if (has_ksize) {
    if ((st = sm__nn_five(n, "ksize", "ksize", w->nchw, w->ksize, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch or depth dimension.");
    for (int i = 0; i < 3; i++)
      if (w->ksize[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize must be positive.");
  }
  if (has_dil && sm__node_attr(n, "dilations")) {
    if ((st = sm__nn_five(n, "dilations", "dilations", w->nchw, w->dil, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Current implementation does not yet support dilations in the batch and depth dimensions.");
    for (int i = 0; i < 3; i++)
      if (w->dil[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Dilated rates should be larger than 0.");
  }
  return NULL;
}

/* ---- convolution filter gradients ------------------------------------------------------------ */
enum { CG_FILTER, CG_FILTER_SHAPE_TENSOR, CG_DW_FILTER, CG_DW_INPUT };

typedef struct cg_state {
  sm__gw w;
  int kind;
  const char *op;
} cg_state;

static sm_status *cg_prepare(const sm_node *n, void **state) {
  cg_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(n);
  s->op = op;
  int nd = strstr(op, "Conv3D") ? 5 : 4;
  int dw = !strncmp(op, "Depthwise", 9);
  s->kind = dw ? (strstr(op, "Filter") ? CG_DW_FILTER : CG_DW_INPUT)
               : (!strcmp(op, "Conv2DBackpropFilterV2") || !strcmp(op, "Conv3DBackpropFilter") ? CG_FILTER_SHAPE_TENSOR
                                                                                                : CG_FILTER);
  sm_status *st = sm__gw_prepare(n, nd, 0, 1, nd == 4, &s->w);
  /* what TF's CPU kernels refuse, in their words */
  int dil = s->w.dil[0] > 1 || s->w.dil[1] > 1 || s->w.dil[2] > 1;
  if (!st && dw && s->w.stride[1] != s->w.stride[2])
    st = sm_status_new(SM_INVALID_ARGUMENT,
                       "Current implementation only supports equal length strides in the row and column dimensions.");
  else if (!st && dw && s->w.nchw)
    st = sm_status_new(SM_INVALID_ARGUMENT, "Depthwise convolution on CPU is only supported for NHWC format");
  else if (!st && !dw && s->w.nchw)
    st = sm_status_new(SM_INVALID_ARGUMENT, nd == 4 ? "Conv2DCustomBackpropFilterOp only supports NHWC."
                                                    : "Conv3DBackpropFilterOpV2 only supports NDHWC on the CPU.");
  else if (!st && !dw && dil)
    st = sm_status_new(SM_INVALID_ARGUMENT, nd == 4 ? "Current CPU implementations do not yet support dilation rates larger than 1."
                                                    : "Current CPU implementation does not yet support dilation rates larger than 1.");
  if (dw) /* TF's CPU depthwise gradients take the dilations attr and compute without it */
    s->w.dil[1] = s->w.dil[2] = 1;
  if (!st && sm__node_num_outputs(n) == 1 && !sm__g_real(sm__node_output_dtype(n, 0), 0))
    st = sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported (half, bfloat16, float, double)", op,
                       dtn(sm__node_output_dtype(n, 0)));
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct cg_job {
  const double *x, *f, *dy;
  double *out;
  int64_t N, D, H, W, C, OD, OH, OW, Co, M; /* M: depthwise multiplier (Co = C * M) */
  int64_t k[3], s[3], d[3], lead[3];
} cg_job;

/* The filter gradient: one filter tap (kd, kh, kw) per index, all of it: [C, Co] for a regular
 * convolution (M = 0), [C, M] for a depthwise one (output channel c * M + m reads input channel c). */
static void cg_filter_taps(void *ctx, int64_t begin, int64_t end) {
  const cg_job *j = ctx;
  const int64_t C = j->C, Co = j->Co, M = j->M;
  for (int64_t t = begin; t < end; t++) {
    int64_t kd = t / (j->k[1] * j->k[2]), kh = t / j->k[2] % j->k[1], kw = t % j->k[2];
    double *o = j->out + t * (M ? Co : C * Co);
    for (int64_t n = 0; n < j->N; n++)
      for (int64_t od = 0; od < j->OD; od++) {
        int64_t id = od * j->s[0] - j->lead[0] + kd * j->d[0];
        if (id < 0 || id >= j->D) continue;
        for (int64_t oh = 0; oh < j->OH; oh++) {
          int64_t ih = oh * j->s[1] - j->lead[1] + kh * j->d[1];
          if (ih < 0 || ih >= j->H) continue;
          for (int64_t ow = 0; ow < j->OW; ow++) {
            int64_t iw = ow * j->s[2] - j->lead[2] + kw * j->d[2];
            if (iw < 0 || iw >= j->W) continue;
            const double *xp = j->x + (((n * j->D + id) * j->H + ih) * j->W + iw) * C;
            const double *g = j->dy + (((n * j->OD + od) * j->OH + oh) * j->OW + ow) * Co;
            if (M) {
              for (int64_t c = 0; c < C; c++)
                for (int64_t m = 0; m < M; m++) o[c * M + m] += xp[c] * g[c * M + m];
              continue;
            }
            for (int64_t ci = 0; ci < C; ci++) {
              const double xv = xp[ci];
              double *orow = o + ci * Co;
              for (int64_t co = 0; co < Co; co++) orow[co] += xv * g[co];
            }
          }
        }
      }
  }
}

/* The output coordinate whose tap k reaches input coordinate i on axis a: i = o*s - lead + k*d. */
static inline int64_t tap_out(const cg_job *j, int a, int64_t i, int64_t k, int64_t olim) {
  int64_t t = i + j->lead[a] - k * j->d[a];
  if (t < 0 || t % j->s[a]) return -1;
  t /= j->s[a];
  return t < olim ? t : -1;
}

/* Depthwise input gradient (2-D): input rows (n, ih) per index. */
static void cg_dw_input_rows(void *ctx, int64_t begin, int64_t end) {
  const cg_job *j = ctx;
  const int64_t C = j->C, M = j->M, Co = C * M;
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / j->H, ih = r % j->H;
    for (int64_t iw = 0; iw < j->W; iw++) {
      double *o = j->out + (r * j->W + iw) * C;
      for (int64_t kh = 0; kh < j->k[1]; kh++) {
        int64_t oh = tap_out(j, 1, ih, kh, j->OH);
        if (oh < 0) continue;
        for (int64_t kw = 0; kw < j->k[2]; kw++) {
          int64_t ow = tap_out(j, 2, iw, kw, j->OW);
          if (ow < 0) continue;
          const double *g = j->dy + ((n * j->OH + oh) * j->OW + ow) * Co;
          const double *fp = j->f + (kh * j->k[2] + kw) * Co;
          for (int64_t c = 0; c < C; c++) {
            double acc = 0;
            for (int64_t m = 0; m < M; m++) acc += fp[c * M + m] * g[c * M + m];
            o[c] += acc;
          }
        }
      }
    }
  }
}

static sm_status *cg_compute(const void *state, sm_kctx *ctx) {
  const cg_state *s = state;
  const sm__gw *w = &s->w;
  const int nd = w->nd, dw = s->kind == CG_DW_FILTER || s->kind == CG_DW_INPUT;
  if (sm__kctx_num_inputs(ctx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "%s: expected 3 inputs", s->op);
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1), *dy = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(dy);
  char b1[128], b2[128];
  if (!sm__g_real(dt, 0)) return sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s is not supported", s->op, dtn(dt));
  /* the data-side tensor (input x, or for the depthwise input gradient its shape) and the filter's shape */
  int64_t xs[5], fs[5];
  sm_status *st;
  const sm_tensor *x = NULL, *f = NULL;
  if (s->kind == CG_DW_INPUT) {
    if ((st = sm__g_shape_vec(a, 4, "input_sizes", xs))) return sm_status_prefix(st, "%s", s->op);
    f = b;
    if (sm_tensor_rank(f) != 4)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter must be 4-dimensional: %s", s->op,
                           sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), b1, sizeof b1));
    memcpy(fs, sm_tensor_dims(f), 4 * sizeof(int64_t));
  } else {
    x = a;
    if (sm_tensor_rank(x) != nd)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be %d-dimensional: %s", s->op, nd,
                           sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b1, sizeof b1));
    memcpy(xs, sm_tensor_dims(x), (size_t)nd * sizeof(int64_t));
    if (s->kind == CG_FILTER_SHAPE_TENSOR) {
      if (sm_tensor_rank(b) != nd)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter must be %d-dimensional: %s", s->op, nd,
                             sm_shape_str(sm_tensor_rank(b), sm_tensor_dims(b), b1, sizeof b1));
      memcpy(fs, sm_tensor_dims(b), (size_t)nd * sizeof(int64_t));
    } else if ((st = sm__g_shape_vec(b, nd, "filter_sizes", fs))) {
      return sm_status_prefix(st, "%s", s->op);
    }
  }
  if (sm_tensor_dtype(a) != dt && x) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input and out_backprop dtypes differ", s->op);
  if (f && sm_tensor_dtype(f) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter and out_backprop dtypes differ", s->op);
  if (sm_tensor_rank(dy) != nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop must be %d-dimensional: %s", s->op, nd,
                         sm_shape_str(sm_tensor_rank(dy), sm_tensor_dims(dy), b1, sizeof b1));
  /* channels-last views */
  cg_job j = {0};
  int cax = w->nchw ? 1 : nd - 1, sp0 = w->nchw ? 2 : 1;
  j.N = xs[0];
  j.C = xs[cax];
  int64_t *sp[3] = {&j.D, &j.H, &j.W};
  const int64_t *gd = sm_tensor_dims(dy);
  int64_t gsp[3];
  for (int i = 0; i < 3; i++) {
    int ax = nd == 5 ? i : i - 1; /* spatial axis index (2-D: D is 1) */
    *sp[i] = ax < 0 ? 1 : xs[sp0 + ax];
    gsp[i] = ax < 0 ? 1 : gd[sp0 + ax];
    j.k[i] = ax < 0 ? 1 : fs[ax];
  }
  const int64_t fin = fs[nd - 2];
  j.Co = gd[cax];
  if (dw) {
    j.M = fs[3];
    if (fin != j.C)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: input and filter must have the same depth: %lld vs %lld", s->op,
                           (long long)j.C, (long long)fin);
    if (j.Co != fin * j.M)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: out_backprop depth %lld is not input depth %lld x multiplier %lld",
                           s->op, (long long)j.Co, (long long)j.C, (long long)j.M);
  } else {
    if (fin != j.C)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "%s: input depth %lld does not match filter input depth %lld (grouped convolution "
                           "gradients are not supported on CPU)",
                           s->op, (long long)j.C, (long long)fin);
    if (fs[nd - 1] != j.Co)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: filter and out_backprop must have the same out_depth", s->op);
  }
  if (gd[0] != j.N)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "%s: input and out_backprop must have the same batch size. Input batch: %lld, outbackprop "
                         "batch: %lld",
                         s->op, (long long)j.N, (long long)gd[0]);
  memcpy(j.s, w->stride, sizeof j.s);
  memcpy(j.d, w->dil, sizeof j.d);
  int64_t *od[3] = {&j.OD, &j.OH, &j.OW};
  for (int i = 0; i < 3; i++) {
    if ((st = sm__nn_out_size(*sp[i], j.k[i], j.d[i], j.s[i], w->padding, w->pad[2 * i], w->pad[2 * i + 1], od[i],
                              &j.lead[i])))
      return sm_status_prefix(st, "%s", s->op);
    if (*od[i] != gsp[i])
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "%s: Size of out_backprop doesn't match computed: actual = %lld, computed = %lld "
                           "spatial_dim: %d input: %lld filter: %lld output: %lld stride: %lld dilation: %lld",
                           s->op, (long long)gsp[i], (long long)*od[i], sp0 + (nd == 5 ? i : i - 1),
                           (long long)*sp[i], (long long)j.k[i], (long long)gsp[i], (long long)j.s[i],
                           (long long)j.d[i]);
  }
  (void)b2;
  sm_tensor *out;
  if (s->kind == CG_DW_INPUT) {
    if ((st = sm__kctx_alloc_output(ctx, 0, dt, 4, xs, &out))) return st;
  } else if ((st = sm__kctx_alloc_output(ctx, 0, dt, nd, fs, &out))) {
    return st;
  }
  int64_t nout = sm_tensor_num_elements(out);
  if (nout == 0) return NULL;
  double *acc = sm__kctx_scratch(ctx, (size_t)nout * sizeof(double), &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)nout * sizeof(double));
  j.out = acc;
  if (!(j.dy = sm__g_load(ctx, dy, w->nchw, &st))) return st;
  if (x && !(j.x = sm__g_load(ctx, x, w->nchw, &st))) return st;
  if (f && !(j.f = sm__g_load(ctx, f, 0, &st))) return st;
  double outs = (double)j.N * (double)j.OD * (double)j.OH * (double)j.OW;
  sm_threadpool *pool = sm__kctx_pool(ctx);
  if (s->kind == CG_DW_INPUT) {
    double per = (double)j.W * (double)j.k[1] * (double)j.k[2] * (double)j.Co;
    sm__parallel_for(per * (double)(j.N * j.H) < 65536.0 ? NULL : pool, j.N * j.H, 1, cg_dw_input_rows, &j);
    return sm__g_store(ctx, acc, out, w->nchw);
  }
  int64_t taps = j.k[0] * j.k[1] * j.k[2];
  double per = outs * (double)j.C * (dw ? (double)j.M : (double)j.Co);
  if (outs > 0)
    sm__parallel_for(per * (double)taps < 65536.0 ? NULL : pool, taps, 1, cg_filter_taps, &j);
  return sm__g_store(ctx, acc, out, 0);
}

/* ---- FusedBatchNormGrad[V2|V3] --------------------------------------------------------------- */
typedef struct bn_state {
  int nchw, training, v;
  float eps;
} bn_state;

static sm_status *bn_prepare(const sm_node *n, void **state) {
  bn_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(n);
  s->v = !strcmp(op, "FusedBatchNormGradV3") ? 3 : !strcmp(op, "FusedBatchNormGradV2") ? 2 : 1;
  s->training = 1;
  s->eps = 1e-4f;
  sm_status *st = sm__nn_data_format(n, s->v == 3, &s->nchw);
  if (!st && sm__node_attr(n, "is_training")) st = sm__node_attr_bool(n, "is_training", &s->training);
  if (!st && sm__node_attr(n, "epsilon")) st = sm__node_attr_float(n, "epsilon", &s->eps);
  if (!st && s->nchw && !s->training)
    st = sm_status_new(SM_INVALID_ARGUMENT, "The implementation of FusedBatchNormGrad with is_training=False only support "
                                            "NHWC tensor format for now.");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *bn_compute(const void *state, sm_kctx *ctx) {
  const bn_state *s = state;
  const char *op = s->v == 3 ? "FusedBatchNormGradV3" : s->v == 2 ? "FusedBatchNormGradV2" : "FusedBatchNormGrad";
  int nin = s->v == 3 ? 6 : 5;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "%s: expected %d inputs", op, nin);
  const sm_tensor *dy = sm__kctx_input(ctx, 0), *x = sm__kctx_input(ctx, 1), *scale = sm__kctx_input(ctx, 2),
                  *m = sm__kctx_input(ctx, 3), *var = sm__kctx_input(ctx, 4);
  char b1[128], b2[128];
  int rank = sm_tensor_rank(x);
  if (rank != 4 && !(rank == 5 && s->v == 3))
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s%s", s->v == 3 ? " or 5-dimensional" : "",
                         sm_shape_str(rank, sm_tensor_dims(x), b1, sizeof b1));
  if (sm_tensor_rank(dy) != rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "y_backprop must be %d-dimensional%s", rank,
                         sm_shape_str(sm_tensor_rank(dy), sm_tensor_dims(dy), b1, sizeof b1));
  for (int i = 2; i < 5; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    if (sm_tensor_rank(t) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 1-dimensional%s",
                           i == 2 ? "scale" : i == 3 ? "reserve_space_1" : "reserve_space_2",
                           sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b1, sizeof b1));
  }
  int dt = sm_tensor_dtype(x), ut = sm_tensor_dtype(scale);
  if (!sm__g_real(dt, 0) || !sm__g_real(ut, 0))
    return sm_status_new(SM_UNIMPLEMENTED, "%s: T=%s, U=%s are not supported", op, dtn(dt), dtn(ut));
  for (int i = 0; i < rank; i++)
    if (sm_tensor_dims(x)[i] != sm_tensor_dims(dy)[i])
      return sm_status_new(SM_INVALID_ARGUMENT, "x and y_backprop must have same shape, but x has shape %s and y_backprop has shape %s",
                           sm_shape_str(rank, sm_tensor_dims(x), b1, sizeof b1),
                           sm_shape_str(rank, sm_tensor_dims(dy), b2, sizeof b2));
  int64_t d5[5];
  sm__g_dims(x, s->nchw, d5);
  const int64_t C = d5[4], rows = d5[0] * d5[1] * d5[2] * d5[3];
  const char *vn[3] = {"scale", "reserve_space_1", "reserve_space_2"};
  for (int i = 0; i < 3; i++)
    if (sm_tensor_num_elements(sm__kctx_input(ctx, 2 + i)) != C)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must have the same number of elements as the channels of x, got %lld and %lld",
                           vn[i], (long long)sm_tensor_num_elements(sm__kctx_input(ctx, 2 + i)), (long long)C);
  sm_tensor *dx, *dsc, *dof, *r3, *r4;
  sm_status *st;
  int64_t cd[1] = {C}, zd[1] = {0};
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, rank, sm_tensor_dims(x), &dx))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 1, ut, 1, cd, &dsc))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 2, ut, 1, cd, &dof))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 3, ut, 1, zd, &r3))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 4, ut, 1, zd, &r4))) return st;
  if (C == 0 || rows == 0) return NULL; /* TF: zeros for an empty x */
  double *g = sm__g_load(ctx, dy, s->nchw, &st), *xv = g ? sm__g_load(ctx, x, s->nchw, &st) : NULL;
  double *acc = xv ? sm__kctx_scratch(ctx, (size_t)C * 4 * sizeof(double), &st) : NULL;
  if (!acc) return st;
  double *sum_dy = acc, *sum_dyx = acc + C, *mean = acc + 2 * C, *rs = acc + 3 * C;
  for (int64_t c = 0; c < C; c++) {
    mean[c] = sm__math_get_f64(m, c);
    rs[c] = 1.0 / sqrt(sm__math_get_f64(var, c) + (double)s->eps);
    sum_dy[c] = sum_dyx[c] = 0;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < C; c++) {
      double gv = g[r * C + c];
      sum_dy[c] += gv;
      sum_dyx[c] += gv * (xv[r * C + c] - mean[c]);
    }
  for (int64_t c = 0; c < C; c++) {
    put(dsc, c, sum_dyx[c] * rs[c]);
    put(dof, c, sum_dy[c]);
  }
  /* dx in place of xv */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < C; c++) {
      double k = sm__math_get_f64(scale, c) * rs[c], v;
      if (s->training) {
        double xc = xv[r * C + c] - mean[c];
        v = k * (g[r * C + c] - sum_dy[c] / (double)rows - xc * sum_dyx[c] / (double)rows * rs[c] * rs[c]);
      } else {
        v = k * g[r * C + c];
      }
      xv[r * C + c] = v;
    }
  return sm__g_store(ctx, xv, dx, s->nchw);
}

/* ---- BatchNormWithGlobalNormalization[Grad] (TF1) ------------------------------------------- */
typedef struct bng_state {
  int scale_after;
  float eps;
  int grad;
} bng_state;

static sm_status *bng_prepare(const sm_node *n, void **state) {
  bng_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->grad = strstr(sm__node_op(n), "Grad") != NULL;
  sm_status *st = sm__node_attr_float(n, "variance_epsilon", &s->eps);
  if (!st) st = sm__node_attr_bool(n, "scale_after_normalization", &s->scale_after);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *bng_compute(const void *state, sm_kctx *ctx) {
  const bng_state *s = state;
  int nin = 5;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "expected %d inputs", nin);
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  /* forward: t, m, v, beta, gamma; grad: t, m, v, gamma, backprop */
  const char *names[5] = {"input", "mean", "variance", s->grad ? "gamma" : "beta", s->grad ? "backprop" : "gamma"};
  char b1[128];
  int dt = sm_tensor_dtype(t);
  if (!sm__g_real(dt, 0)) return sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported", dtn(dt));
  for (int i = 0; i < 5; i++) {
    const sm_tensor *u = sm__kctx_input(ctx, i);
    int want = i == 0 || (s->grad && i == 4) ? 4 : 1;
    if (sm_tensor_rank(u) != want)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be %d-dimensional%s", names[i], want,
                           sm_shape_str(sm_tensor_rank(u), sm_tensor_dims(u), b1, sizeof b1));
  }
  int64_t d5[5];
  sm__g_dims(t, 0, d5);
  const int64_t C = d5[4], rows = d5[0] * d5[2] * d5[3];
  for (int i = 1; i < 5; i++) {
    const sm_tensor *u = sm__kctx_input(ctx, i);
    if (i == 4 && s->grad) {
      for (int k = 0; k < 4; k++)
        if (sm_tensor_dims(u)[k] != sm_tensor_dims(t)[k])
          return sm_status_new(SM_INVALID_ARGUMENT, "backprop must have the shape of input");
    } else if (sm_tensor_dims(u)[0] != C) {
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must have %lld elements (the input's depth), got %lld", names[i],
                           (long long)C, (long long)sm_tensor_dims(u)[0]);
    }
  }
  const sm_tensor *m = sm__kctx_input(ctx, 1), *v = sm__kctx_input(ctx, 2);
  sm_status *st;
  if (!s->grad) {
    const sm_tensor *beta = sm__kctx_input(ctx, 3), *gamma = sm__kctx_input(ctx, 4);
    sm_tensor *y;
    if ((st = sm__kctx_alloc_output(ctx, 0, dt, 4, sm_tensor_dims(t), &y))) return st;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < C; c++) {
        double k = 1.0 / sqrt(sm__math_get_f64(v, c) + (double)s->eps);
        if (s->scale_after) k *= sm__math_get_f64(gamma, c);
        put(y, r * C + c, (sm__math_get_f64(t, r * C + c) - sm__math_get_f64(m, c)) * k + sm__math_get_f64(beta, c));
      }
    return NULL;
  }
  const sm_tensor *gamma = sm__kctx_input(ctx, 3), *bp = sm__kctx_input(ctx, 4);
  sm_tensor *o[5];
  int64_t cd[1] = {C};
  if ((st = sm__kctx_alloc_output(ctx, 0, dt, 4, sm_tensor_dims(t), &o[0]))) return st;
  for (int i = 1; i < 5; i++)
    if ((st = sm__kctx_alloc_output(ctx, i, dt, 1, cd, &o[i]))) return st;
  double *acc = sm__kctx_scratch(ctx, (size_t)(C ? C : 1) * 2 * sizeof(double), &st);
  if (!acc) return st;
  double *db = acc, *s2 = acc + C;
  for (int64_t c = 0; c < C; c++) db[c] = s2[c] = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < C; c++) {
      double g = sm__math_get_f64(bp, r * C + c);
      db[c] += g;
      s2[c] += g * (sm__math_get_f64(t, r * C + c) - sm__math_get_f64(m, c));
    }
  for (int64_t c = 0; c < C; c++) {
    double r1 = 1.0 / sqrt(sm__math_get_f64(v, c) + (double)s->eps), gm = s->scale_after ? sm__math_get_f64(gamma, c) : 1;
    for (int64_t r = 0; r < rows; r++) put(o[0], r * C + c, sm__math_get_f64(bp, r * C + c) * r1 * gm);
    put(o[1], c, -db[c] * r1 * gm);
    put(o[2], c, s2[c] * (r1 * r1 * r1 * -0.5) * gm);
    put(o[3], c, db[c]);
    put(o[4], c, s->scale_after ? s2[c] * r1 : 0.0);
  }
  return NULL;
}

const sm_kernel sm_kernels_grad_nn[] = {
    {"BatchNormWithGlobalNormalization", bng_prepare, bng_compute, free, 0},
    {"BatchNormWithGlobalNormalizationGrad", bng_prepare, bng_compute, free, 0},
    {"Conv2DBackpropFilter", cg_prepare, cg_compute, free, 0},
    {"Conv2DBackpropFilterV2", cg_prepare, cg_compute, free, 0},
    {"Conv3DBackpropFilter", cg_prepare, cg_compute, free, 0},
    {"Conv3DBackpropFilterV2", cg_prepare, cg_compute, free, 0},
    {"DepthwiseConv2dNativeBackpropFilter", cg_prepare, cg_compute, free, 0},
    {"DepthwiseConv2dNativeBackpropInput", cg_prepare, cg_compute, free, 0},
    {"FusedBatchNormGrad", bn_prepare, bn_compute, free, 0},
    {"FusedBatchNormGradV2", bn_prepare, bn_compute, free, 0},
    {"FusedBatchNormGradV3", bn_prepare, bn_compute, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
