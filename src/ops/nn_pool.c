/* nn_pool.c - MaxPool, MaxPoolV2 (ksize and strides as inputs) and AvgPool (ops.md §3.8), float
 * and double, NHWC (NCHW is transposed to NHWC and back), VALID/SAME (and EXPLICIT for MaxPool).
 * Windows are clipped to the input, so SAME padding never wins a max and AvgPool divides by the
 * in-bounds count, as TF does; a MaxPool with this library's attr _sm_pad_zero (a zero Pad folded
 * in, nn_fuse.c) counts a 0 for a window that reaches past the edge. Output rows (n, oh) are
 * spread over the runtime's pool; the channel loop is innermost and branch-free. Never writes its
 * inputs. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

typedef struct pool_state {
  sm__nn_window w;
  int is_max;
  int pad_zero; /* MaxPool attr _sm_pad_zero (nn_fuse.c: a zero Pad folded in): padding counts as 0 */
  int v2; /* ksize/strides come from inputs 1 and 2 */
} pool_state;

sm_status *sm__nn_pool_prepare(const sm_node *n, void **state) {
  pool_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->is_max = strcmp(sm__node_op(n), "AvgPool") != 0;
  sm_status *st = sm__nn_window_prepare(n, 1, 0, s->is_max, &s->w);
  if (!st && s->is_max && sm__node_attr(n, "_sm_pad_zero")) st = sm__node_attr_bool(n, "_sm_pad_zero", &s->pad_zero);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

sm_status *sm__nn_pool_v2_prepare(const sm_node *n, void **state) {
  pool_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->is_max = 1;
  s->v2 = 1;
  s->w.dilation[0] = s->w.dilation[1] = 1;
  const char *p;
  size_t plen;
  sm_status *st = sm__nn_data_format(n, 0, &s->w.nchw);
  if (!st) st = sm__node_attr_string(n, "padding", &p, &plen);
  if (!st) {
    if (plen == 4 && !memcmp(p, "SAME", 4))
      s->w.padding = SM_NN_SAME;
    else if (plen == 5 && !memcmp(p, "VALID", 5))
      s->w.padding = SM_NN_VALID;
    else
      st = sm_status_new(SM_INVALID_ARGUMENT, "padding '%.*s' is not supported", (int)(plen > 32 ? 32 : plen), p);
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct pool_job {
  int dtype, is_max;
  const char *in;
  char *out;
  int64_t N, H, W, C, OH, OW, kh, kw, sh, sw, pt, pl;
  int64_t *argmax; /* max only, may be NULL: flat index into in of each output's maximum */
  int pad_zero;     /* max without argmax: a window past the input's edge counts a 0 (pool_state) */
} pool_job;

/* One window element into the running max of every channel. Restrict: the input and output
 * never overlap, and saying so lets the compiler vectorise without run-time alias checks. */
static inline void max_into_f32(const float *restrict p, float *restrict o, int64_t C) {
  for (int64_t c = 0; c < C; c++) o[c] = p[c] > o[c] ? p[c] : o[c];
}
static inline void max_into_f64(const double *restrict p, double *restrict o, int64_t C) {
  for (int64_t c = 0; c < C; c++) o[c] = p[c] > o[c] ? p[c] : o[c];
}

/* One window element into the running max/argmax of every channel: a strictly greater value
 * takes over. Written as masks so that it compiles to selects, not a branch per element. */
static inline void max_argmax_f32(const float *restrict p, float *restrict o, int64_t *restrict am, int64_t base,
                                  int64_t C) {
  for (int64_t c = 0; c < C; c++) {
    float v = p[c], cur = o[c];
    int64_t take = -(int64_t)(v > cur);
    o[c] = v > cur ? v : cur;
    am[c] = ((base + c) & take) | (am[c] & ~take);
  }
}
static inline void max_argmax_f64(const double *restrict p, double *restrict o, int64_t *restrict am, int64_t base,
                                  int64_t C) {
  for (int64_t c = 0; c < C; c++) {
    double v = p[c], cur = o[c];
    int64_t take = -(int64_t)(v > cur);
    o[c] = v > cur ? v : cur;
    am[c] = ((base + c) & take) | (am[c] & ~take);
  }
}

#define POOL(T, LOWEST)                                                                      \
  do {                                                                                       \
    const T *in = (const T *)j->in;                                                          \
    T *out = (T *)j->out;                                                                    \
    const int64_t C = j->C;                                                                  \
    for (int64_t r = begin; r < end; r++) {                                                  \
      int64_t n = r / j->OH, oh = r % j->OH;                                                 \
      int64_t hs = oh * j->sh - j->pt, he = hs + j->kh;                                      \
      int clip_h = hs < 0 || he > j->H;                                                      \
      if (hs < 0) hs = 0;                                                                    \
      if (he > j->H) he = j->H;                                                              \
      for (int64_t ow = 0; ow < j->OW; ow++) {                                               \
        int64_t ws = ow * j->sw - j->pl, we = ws + j->kw;                                    \
        int clip = clip_h || ws < 0 || we > j->W;                                            \
        if (ws < 0) ws = 0;                                                                  \
        if (we > j->W) we = j->W;                                                            \
        T *o = out + ((n * j->OH + oh) * j->OW + ow) * C;                                    \
        if (j->is_max) {                                                                     \
          int64_t *am = j->argmax ? j->argmax + (o - out) : NULL;                            \
          if (!am) {                                                                         \
            T init = j->pad_zero && clip ? (T)0 : LOWEST;                                    \
            for (int64_t c = 0; c < C; c++) o[c] = init;                                     \
            for (int64_t ih = hs; ih < he; ih++)                                             \
              for (int64_t iw = ws; iw < we; iw++) {                                         \
                const T *p = in + ((n * j->H + ih) * j->W + iw) * C;                         \
                _Generic((T)0, float: max_into_f32, double: max_into_f64)(p, o, C);          \
              }                                                                              \
          } else if (hs >= he || ws >= we) {                                                 \
            for (int64_t c = 0; c < C; c++) {                                                \
              o[c] = LOWEST;                                                                 \
              am[c] = -1;                                                                    \
            }                                                                                \
          } else {                                                                           \
            /* TF's MaxPoolGrad rule: the first maximum in window order. The window's first  \
             * element seeds every channel, then only a strictly greater value takes over,   \
             * computed as selects (no branch per element: on real activations a branch      \
             * mispredicts about every other time and cost 10x). */                          \
            int64_t base0 = ((n * j->H + hs) * j->W + ws) * C;                               \
            for (int64_t c = 0; c < C; c++) {                                                \
              o[c] = in[base0 + c];                                                          \
              am[c] = base0 + c;                                                             \
            }                                                                                \
            for (int64_t ih = hs; ih < he; ih++)                                             \
              for (int64_t iw = ih == hs ? ws + 1 : ws; iw < we; iw++) {                     \
                int64_t base = ((n * j->H + ih) * j->W + iw) * C;                            \
                _Generic((T)0, float: max_argmax_f32, double: max_argmax_f64)(in + base, o, am, base, C); \
              }                                                                              \
          }                                                                                  \
        } else {                                                                             \
          for (int64_t ih = hs; ih < he; ih++)                                               \
            for (int64_t iw = ws; iw < we; iw++) {                                           \
              const T *p = in + ((n * j->H + ih) * j->W + iw) * C;                           \
              for (int64_t c = 0; c < C; c++) o[c] += p[c];                                  \
            }                                                                                \
          T inv = (T)1 / (T)((he - hs) * (we - ws));                                         \
          for (int64_t c = 0; c < C; c++) o[c] *= inv;                                       \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  } while (0)

static void pool_rows(void *ctx, int64_t begin, int64_t end) {
  const pool_job *j = ctx;
  if (j->dtype == SM_DOUBLE)
    POOL(double, -DBL_MAX);
  else
    POOL(float, -FLT_MAX);
}

/* Every output row (n, oh) over the pool. */
static void pool_run(sm_threadpool *pool, pool_job *j) {
  if (j->N * j->OH * j->OW * j->C == 0) return;
  int64_t kh = j->kh < j->H ? j->kh : j->H, kw = j->kw < j->W ? j->kw : j->W;
  int64_t per_row = j->OW * j->C * (kh > 0 ? kh : 1) * (kw > 0 ? kw : 1);
  double work = (double)per_row * (double)(j->N * j->OH);
  sm__parallel_for(work < 65536.0 ? NULL : pool, j->N * j->OH, per_row >= 32768 ? 1 : 32768 / per_row, pool_rows, j);
}

/* MaxPoolV2's ksize/strides input: 4 int32 in data_format order; H, W into hw. */
static sm_status *v2_four(const sm_tensor *t, const char *what, int nchw, int64_t hw[2], int64_t nc[2]) {
  if (sm_tensor_dtype(t) != SM_INT32 || sm_tensor_num_elements(t) != 4 || sm_tensor_rank(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window %s field must specify 4 dimensions (an int32 vector)", what);
  const int32_t *v = sm_tensor_data(t);
  hw[0] = nchw ? v[2] : v[1];
  hw[1] = nchw ? v[3] : v[2];
  nc[0] = v[0];
  nc[1] = nchw ? v[1] : v[3];
  return NULL;
}

sm_status *sm__nn_pool(const void *state, sm_kctx *ctx) {
  const pool_state *s = state;
  sm__nn_window w = s->w;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  char s1[128];
  sm_status *st;
  if (s->v2) {
    int64_t nc[2];
    if (sm__kctx_num_inputs(ctx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "expected 3 inputs");
    if ((st = v2_four(sm__kctx_input(ctx, 1), "ksize", w.nchw, w.ksize, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_UNIMPLEMENTED, "Pooling is not yet supported on the batch or depth dimension.");
    if ((st = v2_four(sm__kctx_input(ctx, 2), "stride", w.nchw, w.stride, nc))) return st;
    if (nc[0] != 1 || nc[1] != 1)
      return sm_status_new(SM_UNIMPLEMENTED,
                           "Current implementation does not yet support strides in the batch and depth dimensions.");
    if (w.ksize[0] < 1 || w.ksize[1] < 1 || w.stride[0] < 1 || w.stride[1] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window ksize and strides must be positive.");
  }
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE)
    return sm_status_new(SM_UNIMPLEMENTED, "input %s: only float and double are supported",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional, got %s",
                         sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), s1, sizeof s1));
  const int64_t *xd = sm_tensor_dims(x);
  pool_job j = {0};
  j.dtype = dt;
  j.is_max = s->is_max;
  j.pad_zero = s->pad_zero;
  j.N = xd[0];
  j.C = w.nchw ? xd[1] : xd[3];
  j.H = w.nchw ? xd[2] : xd[1];
  j.W = w.nchw ? xd[3] : xd[2];
  j.kh = w.ksize[0];
  j.kw = w.ksize[1];
  j.sh = w.stride[0];
  j.sw = w.stride[1];
  if ((st = sm__nn_out_size(j.H, j.kh, 1, j.sh, w.padding, w.pad[0], w.pad[1], &j.OH, &j.pt))) return st;
  if ((st = sm__nn_out_size(j.W, j.kw, 1, j.sw, w.padding, w.pad[2], w.pad[3], &j.OW, &j.pl))) return st;
  int64_t od[4] = {j.N, w.nchw ? j.C : j.OH, w.nchw ? j.OH : j.OW, w.nchw ? j.OW : j.C};
  int64_t nhwc_od[4] = {j.N, j.OH, j.OW, j.C};
  sm_tensor *out;
  /* max writes every element; avg accumulates */
  if ((st = (s->is_max ? sm__kctx_alloc_output_uninit : sm__kctx_alloc_output)(ctx, 0, dt, 4, od, &out))) return st;
  if (sm_tensor_num_elements(out) == 0) return NULL;
  size_t es = dt == SM_DOUBLE ? 8 : 4;
  void *tin = NULL, *tout = NULL;
  j.in = sm_tensor_data(x);
  j.out = sm_tensor_data(out);
  if (w.nchw) {
    if (!(tin = sm__kctx_scratch(ctx, sm_tensor_nbytes(x), &st))) return st;
    if (!(tout = sm__kctx_scratch(ctx, sm_tensor_nbytes(out), &st))) return st;
    memset(tout, 0, sm_tensor_nbytes(out));
    sm__nn_nchw_to_nhwc(j.in, tin, xd, es);
    j.in = tin;
    j.out = tout;
  }
  pool_run(sm__kctx_pool(ctx), &j);
  if (w.nchw) {
    sm__nn_nhwc_to_nchw(tout, sm_tensor_data(out), nhwc_od, es);
    sm__kctx_scratch_free(ctx, tin);
    sm__kctx_scratch_free(ctx, tout);
  }
  return NULL;
}

/* ---- nn_raw.h ------------------------------------------------------------------------------- */
sm_status *sm__nn_maxpool_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                             int64_t ph, int64_t pw, int64_t sh, int64_t sw, int same, float *y, int64_t *argmax) {
  if (n < 0 || h < 0 || w < 0 || c < 0 || ph < 1 || pw < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "maxpool: negative dimension or window below 1");
  pool_job j = {0};
  j.dtype = SM_FLOAT;
  j.is_max = 1;
  j.in = (const char *)x;
  j.out = (char *)y;
  j.argmax = argmax;
  j.N = n, j.H = h, j.W = w, j.C = c, j.kh = ph, j.kw = pw, j.sh = sh, j.sw = sw;
  int padding = same ? SM_NN_SAME : SM_NN_VALID;
  sm_status *st = sm__nn_out_size(h, ph, 1, sh, padding, 0, 0, &j.OH, &j.pt);
  if (!st) st = sm__nn_out_size(w, pw, 1, sw, padding, 0, 0, &j.OW, &j.pl);
  if (st) return st;
  int64_t rows, per_row;
  if (__builtin_mul_overflow(n, j.OH, &rows) || __builtin_mul_overflow(j.OW, c, &per_row) ||
      __builtin_mul_overflow(rows, per_row, &per_row))
    return sm_status_new(SM_INVALID_ARGUMENT, "maxpool output too large");
  pool_run(pool, &j);
  return NULL;
}
