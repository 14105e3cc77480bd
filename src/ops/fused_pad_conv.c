/* fused_pad_conv.c - FusedPadConv2D and FusedResizeAndPadConv2D, the ops TF1's graph_transforms
 * (fuse_pad_and_conv, fuse_resize_pad_and_conv) write into mobile graphs, as TensorFlow computes
 * them (core/kernels/conv_ops_fused_image_transform.cc): an NHWC image optionally resized with
 * legacy bilinear sampling (align_corners as the attr says, in T, TF's top/bottom lerp order),
 * mirror-padded (REFLECT or SYMMETRIC) in its rows and columns, then convolved with an HWIO filter
 * (strides, SAME or VALID zero padding over the padded image). The image is never materialised:
 * each tap maps its padded coordinate back to the input, as TF's im2col does; sums in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "math_int.h"
#include "runtime/kernel.h"

typedef struct {
  int resize, align_corners, offset; /* offset: 1 REFLECT, 0 SYMMETRIC */
  int64_t sr, sc;
  int same;
} fpc_state;

static sm_status *fpc_prepare_common(const sm_node *node, void **state, int resize) {
  fpc_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->resize = resize;
  const char *mode = NULL, *pad = NULL;
  size_t ml = 0, pl = 0, ns = 0;
  const int64_t *strides = NULL;
  sm_status *s = sm__node_attr_string(node, "mode", &mode, &ml);
  if (!s) s = sm__node_attr_string(node, "padding", &pad, &pl);
  if (!s) s = sm__node_attr_ints(node, "strides", &strides, &ns);
  if (!s && resize && sm__node_attr(node, "resize_align_corners"))
    s = sm__node_attr_bool(node, "resize_align_corners", &st->align_corners);
  if (!s) {
    if (ml == 7 && !memcmp(mode, "REFLECT", 7)) st->offset = 1;
    else if (ml == 9 && !memcmp(mode, "SYMMETRIC", 9)) st->offset = 0;
    else s = sm_status_new(SM_INVALID_ARGUMENT, "mode must be REFLECT or SYMMETRIC, not '%.*s'", (int)ml, mode);
  }
  if (!s) {
    if (pl == 4 && !memcmp(pad, "SAME", 4)) st->same = 1;
    else if (!(pl == 5 && !memcmp(pad, "VALID", 5))) s = sm_status_new(SM_INVALID_ARGUMENT, "padding must be SAME or VALID, not '%.*s'", (int)pl, pad);
  }
  if (!s && ns != 4) s = sm_status_new(SM_INVALID_ARGUMENT, "Sliding window strides field must specify 4 dimensions");
  if (!s && (strides[0] != 1 || strides[3] != 1))
    s = sm_status_new(SM_INVALID_ARGUMENT, "Current implementation does not yet support strides in the batch and depth dimensions.");
  if (!s && (strides[1] < 1 || strides[2] < 1)) s = sm_status_new(SM_INVALID_ARGUMENT, "strides must be positive");
  if (s) {
    free(st);
    return s;
  }
  st->sr = strides[1];
  st->sc = strides[2];
  *state = st;
  return NULL;
}

static sm_status *fpc_prepare(const sm_node *node, void **state) { return fpc_prepare_common(node, state, 0); }
static sm_status *frpc_prepare(const sm_node *node, void **state) { return fpc_prepare_common(node, state, 1); }

/* Mirror a coordinate of the padded axis (r = p - before) into [0, n). */
static int64_t mirror(int64_t r, int64_t n, int offset) {
  if (r < 0) return -r - 1 + offset;
  if (r >= n) return 2 * n - r - 1 - offset;
  return r;
}

typedef struct {
  const void *x;
  int dt;
  int64_t H, W, C;       /* input */
  int64_t RH, RW;        /* resized */
  float hs, ws;          /* resize scales */
  int resize;
} img;

static float px(const img *im, int64_t b, int64_t y, int64_t x, int64_t c) {
  int64_t i = ((b * im->H + y) * im->W + x) * im->C + c;
  switch (im->dt) {
    case SM_FLOAT: return ((const float *)im->x)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)im->x)[i]);
    default: return (float)((const double *)im->x)[i];
  }
}

/* The resized image's value at (y, x) (the input's when not resizing), in T's precision. */
static double sample(const img *im, int64_t b, int64_t y, int64_t x, int64_t c) {
  if (!im->resize) return im->dt == SM_DOUBLE ? ((const double *)im->x)[((b * im->H + y) * im->W + x) * im->C + c] : px(im, b, y, x, c);
  if (im->dt == SM_DOUBLE) {
    const double *d = im->x;
    double in_y = (double)((float)y * im->hs), in_x = (double)((float)x * im->ws);
    int64_t ty = (int64_t)floor(in_y), by = (int64_t)ceil(in_y), lx = (int64_t)floor(in_x), rx = (int64_t)ceil(in_x);
    if (by > im->H - 1) by = im->H - 1;
    if (rx > im->W - 1) rx = im->W - 1;
    double yl = in_y - (double)ty, xl = in_x - (double)lx;
#define D(yy, xx) d[((b * im->H + (yy)) * im->W + (xx)) * im->C + c]
    double top = D(ty, lx) + (D(ty, rx) - D(ty, lx)) * xl, bot = D(by, lx) + (D(by, rx) - D(by, lx)) * xl;
#undef D
    return top + (bot - top) * yl;
  }
  float in_y = (float)y * im->hs, in_x = (float)x * im->ws;
  int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y), lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x);
  if (by > im->H - 1) by = im->H - 1;
  if (rx > im->W - 1) rx = im->W - 1;
  float yl = in_y - (float)ty, xl = in_x - (float)lx;
  float tl = px(im, b, ty, lx, c), tr = px(im, b, ty, rx, c), bl = px(im, b, by, lx, c), br = px(im, b, by, rx, c);
  float top = tl + (tr - tl) * xl, bot = bl + (br - bl) * xl;
  return top + (bot - top) * yl;
}

static float resize_scale(int64_t in, int64_t out, int align) {
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

static sm_status *fpc_compute(const void *state, sm_kctx *ctx) {
  const fpc_state *st = state;
  int k = 0;
  const sm_tensor *x = sm__kctx_input(ctx, k++);
  const sm_tensor *size = st->resize ? sm__kctx_input(ctx, k++) : NULL;
  const sm_tensor *pads = sm__kctx_input(ctx, k++), *f = sm__kctx_input(ctx, k++);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s does not support %s", st->resize ? "FusedResizeAndPadConv2D" : "FusedPadConv2D", sm_dtype_name(dt));
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional, got rank %d", sm_tensor_rank(x));
  if (sm_tensor_rank(f) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "filter must be 4-dimensional, got rank %d", sm_tensor_rank(f));
  if (sm_tensor_dtype(f) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "filter must have the input's dtype");
  if (!sm_tensor_num_elements(x)) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor can't be empty");
  const int64_t *xd = sm_tensor_dims(x), *fd = sm_tensor_dims(f);
  img im = {sm_tensor_data(x), dt, xd[1], xd[2], xd[3], xd[1], xd[2], 1, 1, st->resize};
  if (st->resize) {
    if (sm_tensor_rank(size) != 1 || sm_tensor_dims(size)[0] != 2 || sm_tensor_dtype(size) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "size must be 1-dimensional with 2 int32 elements");
    const int32_t *sz = sm_tensor_data(size);
    if (sz[0] <= 0 || sz[1] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "output dimensions must be positive");
    if (im.H <= 0 || im.W <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "input image must be of non-zero size");
    im.RH = sz[0];
    im.RW = sz[1];
    im.hs = resize_scale(im.H, im.RH, st->align_corners);
    im.ws = resize_scale(im.W, im.RW, st->align_corners);
  }
  if (sm_tensor_rank(pads) != 2 || sm_tensor_dims(pads)[0] != 4 || sm_tensor_dims(pads)[1] != 2 || sm_tensor_dtype(pads) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be a 4 x 2 int32 matrix");
  const int32_t *pd = sm_tensor_data(pads);
  if (pd[0] || pd[1] || pd[6] || pd[7])
    return sm_status_new(SM_INVALID_ARGUMENT, "paddings of the batch and depth dimensions must be 0");
  const int64_t rdim[2] = {im.RH, im.RW};
  for (int d = 0; d < 2; d++) {
    int32_t before = pd[2 + 2 * d], after = pd[3 + 2 * d];
    if (before < 0 || after < 0) return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be non-negative: %d %d", before, after);
    if (st->offset == 0 && (before > rdim[d] || after > rdim[d]))
      return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be no greater than the dimension size: %d, %d greater than %lld", before, after,
                           (long long)rdim[d]);
    if (st->offset == 1 && (before >= rdim[d] || after >= rdim[d]))
      return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be less than the dimension size: %d, %d not less than %lld", before,
                           after, (long long)rdim[d]);
  }
  if (fd[2] != im.C)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld", (long long)im.C, (long long)fd[2]);
  int64_t PH = im.RH + pd[2] + pd[3], PW = im.RW + pd[4] + pd[5], KH = fd[0], KW = fd[1], OC = fd[3];
  int64_t OH, OW, pt = 0, pleft = 0;
  if (st->same) {
    OH = (PH + st->sr - 1) / st->sr;
    OW = (PW + st->sc - 1) / st->sc;
    int64_t th = (OH - 1) * st->sr + KH - PH, tw = (OW - 1) * st->sc + KW - PW;
    pt = th > 0 ? th / 2 : 0;
    pleft = tw > 0 ? tw / 2 : 0;
  } else {
    const int64_t in[2] = {PH, PW}, kk[2] = {KH, KW}, sd[2] = {st->sr, st->sc};
    for (int d = 0; d < 2; d++)
      if (in[d] - kk[d] + sd[d] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Computed output size would be negative: %lld [input_size: %lld, effective_filter_size: %lld, stride: %lld]",
                             (long long)((in[d] - kk[d] + sd[d]) / sd[d]), (long long)in[d], (long long)kk[d], (long long)sd[d]);
    OH = (PH - KH + st->sr) / st->sr;
    OW = (PW - KW + st->sc) / st->sc;
  }
  sm_tensor *o;
  int64_t od[4] = {xd[0], OH, OW, OC};
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, 4, od, &o);
  if (s) return s;
  int64_t total = xd[0] * OH * OW * OC;
  if (!total || !im.C) return NULL; /* zero-filled */
  double *acc = sm__kctx_scratch(ctx, sizeof(double) * (size_t)OC, &s);
  if (!acc) return s;
  for (int64_t b = 0; b < xd[0]; b++)
    for (int64_t oy = 0; oy < OH; oy++)
      for (int64_t ox = 0; ox < OW; ox++) {
        if ((s = sm__kctx_check_stop(ctx))) return s;
        memset(acc, 0, sizeof(double) * (size_t)OC);
        for (int64_t ky = 0; ky < KH; ky++) {
          int64_t py = oy * st->sr + ky - pt;
          if (py < 0 || py >= PH) continue;
          int64_t ry = mirror(py - pd[2], im.RH, st->offset);
          for (int64_t kx = 0; kx < KW; kx++) {
            int64_t pxx = ox * st->sc + kx - pleft;
            if (pxx < 0 || pxx >= PW) continue;
            int64_t rx = mirror(pxx - pd[4], im.RW, st->offset);
            for (int64_t c = 0; c < im.C; c++) {
              double v = sample(&im, b, ry, rx, c);
              int64_t fo = ((ky * KW + kx) * im.C + c) * OC;
              for (int64_t oc = 0; oc < OC; oc++) acc[oc] += v * sm__math_get_f64(f, fo + oc);
            }
          }
        }
        int64_t oo = ((b * OH + oy) * OW + ox) * OC;
        for (int64_t oc = 0; oc < OC; oc++) {
          if (dt == SM_FLOAT) ((float *)sm_tensor_data(o))[oo + oc] = (float)acc[oc];
          else if (dt == SM_DOUBLE) ((double *)sm_tensor_data(o))[oo + oc] = acc[oc];
          else ((uint16_t *)sm_tensor_data(o))[oo + oc] = sm__f32_to_half((float)acc[oc]);
        }
      }
  return NULL;
}

const sm_kernel sm_kernels_fused_pad_conv[] = {
    {"FusedPadConv2D", fpc_prepare, fpc_compute, free, 0},
    {"FusedResizeAndPadConv2D", frpc_prepare, fpc_compute, free, 0},
    {0},
};
