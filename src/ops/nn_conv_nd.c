/* nn_conv_nd.c - the generic convolution op `Conv` (tf.raw_ops.Conv, TF 2.13+): 2 or 3 spatial
 * dimensions after `batch_dims` leading batch dimensions (flattened into one, restored in the
 * output; batch_dims 0 is one image), HWIO / DHWIO filter, strides, dilations, SAME / VALID /
 * EXPLICIT padding, T float, double, half, bfloat16 and int32: what TF 2.21's CPU ConvOp
 * (conv_ops_impl.h) runs, with its checks in its order and its messages. What it refuses we refuse
 * the same way: groups != 1, CHANNELS_FIRST (after the output is sized: an empty output or an empty
 * input still answers), dilated 3-D convolutions. Where TF aborts the process (a 3-D EXPLICIT
 * padding, a filter whose rank is not the spatial rank + 2) we refuse with a message.
 *
 * Compute: 2-D float and double run nn_conv.c's im2col + gemm (sm__nn_conv2d_nhwc); half and
 * bfloat16 are widened to float for it and rounded back (as TF's CPU computes them); 3-D and int32
 * (wrapping two's-complement sums, as Eigen's int32 contraction) are direct loops over the output,
 * float sums in float, double in double. Never writes its inputs. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "ops/nn_internal.h"
#include "ops/nn_raw.h"

#define CONV_MAX_S 3

typedef struct conv_nd_state {
  int nchw;        /* CHANNELS_FIRST */
  int padding;     /* SM_NN_* */
  int64_t batch_dims;
  int64_t strides[CONV_MAX_S + 2], dilations[CONV_MAX_S + 2], pads[2 * (CONV_MAX_S + 2)];
  size_t nstrides, ndilations, npads;
  int dtype;
} conv_nd_state;

static int str_is(const char *s, size_t len, const char *lit) { return strlen(lit) == len && !memcmp(s, lit, len); }

static sm_status *copy_ints(const sm_node *n, const char *name, int64_t *dst, size_t cap, size_t *cnt) {
  *cnt = 0;
  if (!sm__node_attr(n, name)) return NULL;
  const int64_t *v;
  size_t c;
  sm_status *st = sm__node_attr_ints(n, name, &v, &c);
  if (st) return st;
  if (c > cap) c = cap + 1; /* too many for any rank: refused by the length checks in compute */
  for (size_t i = 0; i < c && i < cap; i++) dst[i] = v[i];
  *cnt = c;
  return NULL;
}

static sm_status *conv_nd_prepare(const sm_node *n, void **state) {
  conv_nd_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int64_t groups = 1;
  const char *v;
  size_t len;
  sm_status *st = sm__node_attr(n, "groups") ? sm__node_attr_int(n, "groups", &groups) : NULL;
  if (!st && groups != 1) st = sm_status_new(SM_UNIMPLEMENTED, "Grouped/Depthwise Convolutions are not supported yet.");
  if (!st && sm__node_attr(n, "data_format")) {
    st = sm__node_attr_string(n, "data_format", &v, &len);
    if (!st && !str_is(v, len, "CHANNELS_LAST") && !str_is(v, len, "CHANNELS_FIRST"))
      st = sm_status_new(SM_INVALID_ARGUMENT, "Unknown data format: %.*s", (int)(len > 64 ? 64 : len), v);
    if (!st) s->nchw = str_is(v, len, "CHANNELS_FIRST");
  }
  s->batch_dims = 1;
  if (!st && sm__node_attr(n, "batch_dims")) st = sm__node_attr_int(n, "batch_dims", &s->batch_dims);
  if (!st) st = copy_ints(n, "strides", s->strides, CONV_MAX_S + 2, &s->nstrides);
  if (!st) st = copy_ints(n, "dilations", s->dilations, CONV_MAX_S + 2, &s->ndilations);
  if (!st) st = copy_ints(n, "explicit_paddings", s->pads, 2 * (CONV_MAX_S + 2), &s->npads);
  if (!st) st = sm__node_attr_string(n, "padding", &v, &len);
  if (!st) {
    s->padding = str_is(v, len, "SAME") ? SM_NN_SAME : str_is(v, len, "VALID") ? SM_NN_VALID
                 : str_is(v, len, "EXPLICIT") ? SM_NN_EXPLICIT : -1;
    if (s->padding < 0) st = sm_status_new(SM_INVALID_ARGUMENT, "Unknown padding: %.*s", (int)(len > 64 ? 64 : len), v);
  }
  s->dtype = sm__node_num_outputs(n) == 1 ? sm__node_output_dtype(n, 0) : -1;
  if (!st && s->dtype != SM_FLOAT && s->dtype != SM_DOUBLE && s->dtype != SM_HALF && s->dtype != SM_BFLOAT16 &&
      s->dtype != SM_INT32)
    st = sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (half, bfloat16, float, double, int32)",
                       sm_dtype_name(s->dtype) ? sm_dtype_name(s->dtype) : "?");
  if (st) {
    free(s);
    return st;
  }
  sm__nn_blas_init();
  *state = s;
  return NULL;
}

/* The geometry of one flattened convolution, NHWC / NDHWC. */
typedef struct nd_geom {
  int S;
  int64_t N, C, Cout;
  int64_t in[CONV_MAX_S], k[CONV_MAX_S], out[CONV_MAX_S], stride[CONV_MAX_S], dil[CONV_MAX_S], lead[CONV_MAX_S];
} nd_geom;

/* Direct loops: y[n, o..., co] = sum over taps and ci of x[n, i..., ci] * f[t..., ci, co]. */
#define DIRECT(NAME, T, MAC)                                                                                \
  static void NAME(const nd_geom *g, const T *x, const T *f, T *y) {                                       \
    int64_t o[CONV_MAX_S] = {0}, t[CONV_MAX_S], nout = 1, ntap = 1, nin = 1;                               \
    for (int d = 0; d < g->S; d++) nout *= g->out[d], ntap *= g->k[d], nin *= g->in[d];                   \
    for (int64_t b = 0; b < g->N; b++)                                                                     \
      for (int64_t p = 0; p < nout; p++) {                                                                 \
        int64_t rem = p;                                                                                   \
        for (int d = g->S - 1; d >= 0; d--) o[d] = rem % g->out[d], rem /= g->out[d];                      \
        T *row = y + (b * nout + p) * g->Cout;                                                             \
        for (int64_t co = 0; co < g->Cout; co++) {                                                         \
          T sum = 0;                                                                                       \
          for (int64_t q = 0; q < ntap; q++) {                                                             \
            int64_t r2 = q, off = 0, ok = 1;                                                               \
            for (int d = g->S - 1; d >= 0; d--) t[d] = r2 % g->k[d], r2 /= g->k[d];                        \
            for (int d = 0; d < g->S && ok; d++) {                                                         \
              int64_t i = o[d] * g->stride[d] - g->lead[d] + t[d] * g->dil[d];                             \
              ok = i >= 0 && i < g->in[d];                                                                 \
              off = off * g->in[d] + i;                                                                    \
            }                                                                                              \
            if (!ok) continue;                                                                             \
            const T *xp = x + (b * nin + off) * g->C, *fp = f + q * g->C * g->Cout + co;                   \
            for (int64_t c = 0; c < g->C; c++) sum = MAC(sum, xp[c], fp[c * g->Cout]);                     \
          }                                                                                                \
          row[co] = sum;                                                                                   \
        }                                                                                                  \
      }                                                                                                    \
  }

#define MAC_PLAIN(s, a, b) ((s) + (a) * (b))
#define MAC_WRAP(s, a, b) ((uint32_t)((s) + (uint32_t)((a) * (b)))) /* uint32_t: wraps as int32 */
DIRECT(direct_f32, float, MAC_PLAIN)
DIRECT(direct_f64, double, MAC_PLAIN)
DIRECT(direct_i32_u, uint32_t, MAC_WRAP)
/* TF's CPU Conv3D over half / bfloat16 (Eigen's contraction in that type): each product added in
 * float, the sum rounded to the type after every step (checked bit for bit against TF). */
static float round_half(float v) { return sm__half_to_f32(sm__f32_to_half(v)); }
static float round_bf16(float v) { return sm__bf16_to_f32(sm__f32_to_bf16(v)); }
#define MAC_HALF(s, a, b) round_half((s) + (a) * (b))
#define MAC_BF16(s, a, b) round_bf16((s) + (a) * (b))
DIRECT(direct_half, float, MAC_HALF)
DIRECT(direct_bf16, float, MAC_BF16)

static sm_status *conv_nd(const void *state, sm_kctx *ctx) {
  const conv_nd_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0), *f = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(x);
  char s1[160], s2[160];
  if (dt != s->dtype || sm_tensor_dtype(f) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "input %s and filter %s must both be T=%s", sm_dtype_name(dt),
                         sm_dtype_name(sm_tensor_dtype(f)), sm_dtype_name(s->dtype));
  int xr = sm_tensor_rank(x), fr = sm_tensor_rank(f);
  const int64_t *xd = sm_tensor_dims(x), *fd = sm_tensor_dims(f);
  int64_t S = (int64_t)xr - 1 - s->batch_dims;
  if (S != 2 && S != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "The input must have 2 or 3 spatial dimensions but got %lld", (long long)S);
  if (sm_tensor_num_elements(f) <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "filter must not have zero elements (i.e. all dimensions must be non-zero)");
  if (fr != 4 && fr != 5) return sm_status_new(SM_INVALID_ARGUMENT, "The filter must be rank 4 or 5 but got %d", fr);
  if (fr != S + 2) /* TF 2.21 aborts the process on a 5-D filter over 2 spatial dims */
    return sm_status_new(SM_INVALID_ARGUMENT, "Conv: a filter of rank %d over an input with %lld spatial dimensions "
                         "(input %s, filter %s): the filter must be rank %lld", fr, (long long)S,
                         sm_shape_str(xr, xd, s1, sizeof s1), sm_shape_str(fr, fd, s2, sizeof s2), (long long)S + 2);
  for (int i = 0; i < S; i++)
    if (fd[i] > INT_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "filter too large");
  int nd = (int)S + 2, ci = s->nchw ? 1 : nd - 1, sp0 = s->nchw ? 2 : 1;
  if (s->nstrides != (size_t)nd)
    return sm_status_new(SM_INVALID_ARGUMENT, "Sliding window strides field must specify %d dimensions", nd);
  if (s->strides[0] != 1 || s->strides[ci] != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Current implementation does not support strides in the batch and depth dimensions.");
  for (int i = 0; i < S; i++)
    if (s->strides[sp0 + i] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Spatial strides should be larger than 0.");
  int64_t dil[CONV_MAX_S + 2] = {1, 1, 1, 1, 1};
  if (s->ndilations) {
    if (s->ndilations != (size_t)nd)
      return sm_status_new(SM_INVALID_ARGUMENT, "Dilation rates field must specify%ddimensions", nd);
    if (s->dilations[0] != 1 || s->dilations[ci] != 1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Current implementation does not support dilation rates in the batch and depth dimensions.");
    for (int i = 0; i < S; i++)
      if (s->dilations[sp0 + i] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Dilated rates should be larger than 0.");
    memcpy(dil, s->dilations, sizeof dil);
  }
  if (s->padding == SM_NN_EXPLICIT) {
    if (s->npads != (size_t)(2 * nd))
      return sm_status_new(SM_INVALID_ARGUMENT, "explicit_paddings attribute must contain %d values, but got: %zu",
                           2 * nd, s->npads);
    for (int i = 0; i < 2 * nd; i++)
      if (s->pads[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "All elements of explicit_paddings must be nonnegative");
    if (s->pads[0] || s->pads[1] || s->pads[2 * ci] || s->pads[2 * ci + 1])
      return sm_status_new(SM_INVALID_ARGUMENT, "Nonzero explicit padding in the batch or depth dimensions is not supported");
  } else if (s->npads) {
    return sm_status_new(SM_INVALID_ARGUMENT, "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT");
  }
  /* the flattened input: [batch, spatial..., C] (or [batch, C, spatial...]) */
  int64_t batch = 1, fl[CONV_MAX_S + 2];
  for (int64_t i = 0; i < s->batch_dims; i++)
    if (__builtin_mul_overflow(batch, xd[i], &batch)) return sm_status_new(SM_INVALID_ARGUMENT, "Batch is too large");
  fl[0] = batch;
  for (int i = 1; i < nd; i++) fl[i] = xd[s->batch_dims + i - 1];
  int64_t in_depth = fl[ci], patch_depth = fd[S];
  if (in_depth > INT_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Input depth too large");
  if (patch_depth > INT_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Patch depth too large");
  if (in_depth != patch_depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input depth must be equal to filter depth: %lld vs %lld",
                         (long long)in_depth, (long long)patch_depth);
  if (S == 3 && s->padding == SM_NN_EXPLICIT) /* TF 2.21 aborts the process here */
    return sm_status_new(SM_UNIMPLEMENTED, "Conv: EXPLICIT padding over 3 spatial dimensions is not supported "
                         "(TensorFlow's CPU Conv3D has none)");
  nd_geom g = {0};
  g.S = (int)S;
  g.C = in_depth;
  g.Cout = fd[S + 1];
  for (int i = 0; i < S; i++) {
    g.in[i] = fl[sp0 + i];
    if (g.in[i] > INT_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input spatial dimension %d too large", i);
    g.k[i] = fd[i];
    g.stride[i] = s->strides[sp0 + i];
    g.dil[i] = dil[sp0 + i];
  }
  if (batch > INT_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Batch is too large");
  g.N = batch;
  for (int i = 0; i < S; i++) {
    int64_t pb = s->padding == SM_NN_EXPLICIT ? s->pads[2 * (sp0 + i)] : 0;
    int64_t pa = s->padding == SM_NN_EXPLICIT ? s->pads[2 * (sp0 + i) + 1] : 0;
    sm_status *st = sm__nn_out_size(g.in[i], g.k[i], g.dil[i], g.stride[i], s->padding, pb, pa, &g.out[i], &g.lead[i]);
    if (st) return st;
  }
  /* the output: the original batch dims, then the windowed dims and depth in the input's layout */
  int64_t od[SM_MAX_RANK];
  int orank = (int)s->batch_dims + nd - 1;
  if (orank > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Conv: output rank %d too large", orank);
  for (int64_t i = 0; i < s->batch_dims; i++) od[i] = xd[i];
  int64_t *rest = od + s->batch_dims;
  if (s->nchw) {
    rest[0] = g.Cout;
    for (int i = 0; i < S; i++) rest[1 + i] = g.out[i];
  } else {
    for (int i = 0; i < S; i++) rest[i] = g.out[i];
    rest[S] = g.Cout;
  }
  /* an empty output or input answers before TF restores the batch dims: the flat shape */
  int empty_out = g.N == 0 || g.Cout == 0;
  for (int i = 0; i < S; i++) empty_out |= g.out[i] == 0;
  if (empty_out || sm_tensor_num_elements(x) == 0) {
    memmove(od + 1, rest, (size_t)(nd - 1) * sizeof *od); /* rest may start at od (batch_dims 0) */
    od[0] = g.N;
    orank = nd;
  }
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, orank, od, &out);
  if (st || sm_tensor_num_elements(out) == 0) return st;
  if (sm_tensor_num_elements(x) == 0) return NULL; /* zeros: only padding reaches the output */
  if (s->nchw) {
    if (S == 2)
      return sm_status_new(SM_UNIMPLEMENTED, "The Conv2D op currently only supports the NHWC tensor format on the CPU. "
                           "The op was given the format: NCHW");
  }
  if (S == 3) {
    for (int i = 0; i < 3; i++)
      if (g.dil[i] != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "CPU implementation of Conv3D currently only supports dilated rates of 1.");
    if (s->nchw)
      return sm_status_new(SM_INVALID_ARGUMENT, "CPU implementation of Conv3D currently only supports the NHWC tensor format.");
  }
  for (int i = 0; i < 2 * nd; i++)
    if (s->padding == SM_NN_EXPLICIT && s->pads[i] > INT_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "filter too large");
  const void *xp = sm_tensor_data(x), *fp = sm_tensor_data(f);
  void *yp = sm_tensor_data(out);
  int f16 = sm__math_is_f16(dt);
  float *xw = NULL, *fw = NULL, *yw = NULL;
  if (f16) { /* widened to float, rounded back at the end */
    size_t nx = (size_t)sm_tensor_num_elements(x), nf = (size_t)sm_tensor_num_elements(f),
           ny = (size_t)sm_tensor_num_elements(out);
    if (!(xw = sm__kctx_scratch(ctx, nx * sizeof *xw, &st)) || !(fw = sm__kctx_scratch(ctx, nf * sizeof *fw, &st)) ||
        !(yw = sm__kctx_scratch(ctx, ny * sizeof *yw, &st)))
      return st;
    const uint16_t *xs = xp, *fs = fp;
    for (size_t i = 0; i < nx; i++) xw[i] = dt == SM_HALF ? sm__half_to_f32(xs[i]) : sm__bf16_to_f32(xs[i]);
    for (size_t i = 0; i < nf; i++) fw[i] = dt == SM_HALF ? sm__half_to_f32(fs[i]) : sm__bf16_to_f32(fs[i]);
    xp = xw, fp = fw, yp = yw;
  }
  int cdt = f16 ? SM_FLOAT : dt;
  if (S == 2 && cdt != SM_INT32) {
    const int64_t in4[4] = {g.N, g.in[0], g.in[1], g.C};
    const int64_t win[8] = {g.k[0], g.k[1], g.stride[0], g.stride[1], g.dil[0], g.dil[1], g.lead[0], g.lead[1]};
    st = sm__nn_conv2d_nhwc(sm__kctx_pool(ctx), cdt, xp, in4, fp, g.Cout, win, g.out[0], g.out[1], NULL, 0, yp);
    if (st) return st;
  } else if (dt == SM_HALF) {
    direct_half(&g, xp, fp, yp);
  } else if (dt == SM_BFLOAT16) {
    direct_bf16(&g, xp, fp, yp);
  } else if (cdt == SM_FLOAT) {
    direct_f32(&g, xp, fp, yp);
  } else if (cdt == SM_DOUBLE) {
    direct_f64(&g, xp, fp, yp);
  } else {
    direct_i32_u(&g, xp, fp, yp);
  }
  if (f16) {
    uint16_t *ys = sm_tensor_data(out);
    size_t ny = (size_t)sm_tensor_num_elements(out);
    for (size_t i = 0; i < ny; i++) ys[i] = dt == SM_HALF ? sm__f32_to_half(yw[i]) : sm__f32_to_bf16(yw[i]);
  }
  return NULL;
}

const sm_kernel sm_kernels_nn_conv_nd[] = {
    {"Conv", conv_nd_prepare, conv_nd, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
