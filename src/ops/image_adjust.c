/* image_adjust.c - the colour kernels the augmentation layers export: RGBToHSV, HSVToRGB,
 * AdjustContrastv2, AdjustHue and AdjustSaturation (images [..., H, W, C], C == 3 where colour),
 * and DrawBoundingBoxes / DrawBoundingBoxesV2 (tf.image.draw_bounding_boxes).
 *
 * Semantics are TensorFlow's CPU kernels' (colorspace_op.h, adjust_contrast_op.cc,
 * adjust_hue_op.cc, adjust_saturation_op.cc), operation for operation:
 *  - RGBToHSV / HSVToRGB take float, double, half and bfloat16 and compute in that type as Eigen
 *    does: every operation rounds to the element type (here each result is computed in double and
 *    rounded, which gives the same bits: the exact result rounded once).
 *  - AdjustContrastv2 (float: TF's only CPU kernel) takes the per-channel mean with TF's folding
 *    sum (halve the plane, add the halves, repeat), scales by 1.0f / image_size, and writes
 *    mean + factor * (x - mean).
 *  - AdjustHue / AdjustSaturation (float) go through TF's own hue-range and HSV helpers, with
 *    their mixed float/double constants. TF moves a hue into [0, 6) by repeated +-6, which never
 *    ends for a huge delta (h - 6 == h); here past 64 steps the rest is done with fmodf, so bad
 *    input does not hang (an ordinary delta takes a step or two and gives TF's bits).
 * Pixels are spread over the runtime's pool. Never writes its inputs. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h" /* half / bfloat16 conversions, sm__parallel_for */

/* ---- element access in double, rounding to the element type ---------------------------------- */
static double ld(int dt, const void *p, int64_t i) {
  switch (dt) {
    case SM_DOUBLE: return ((const double *)p)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)p)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
  }
}
static void st(int dt, void *p, int64_t i, double v) {
  switch (dt) {
    case SM_DOUBLE: ((double *)p)[i] = v; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16((float)v); break;
    default: ((float *)p)[i] = (float)v; break;
  }
}
/* The result of one operation of type dt: a double holding the exactly representable value
 * (float of a float op computed in double is the float op's result: no double rounding issue). */
static double rnd(int dt, double v) {
  switch (dt) {
    case SM_DOUBLE: return v;
    case SM_HALF: return sm__half_to_f32(sm__f32_to_half((float)v));
    case SM_BFLOAT16: return sm__bf16_to_f32(sm__f32_to_bf16((float)v));
    default: return (float)v;
  }
}
static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

typedef struct px_job {
  int dt;
  const void *in;
  void *out;
  float f; /* delta, scale or contrast factor */
} px_job;

static void rgb_to_hsv_px(void *ctx, int64_t begin, int64_t end) {
  const px_job *j = ctx;
  const int dt = j->dt;
  const double sixth = rnd(dt, 1.0 / 6.0), two6 = rnd(dt, 2.0 / 6.0), four6 = rnd(dt, 4.0 / 6.0);
  for (int64_t p = begin; p < end; p++) {
    double r = ld(dt, j->in, 3 * p), g = ld(dt, j->in, 3 * p + 1), b = ld(dt, j->in, 3 * p + 2);
    double v = r > g ? r : g;
    v = v > b ? v : b;
    double mn = r < g ? r : g;
    mn = mn < b ? mn : b;
    double range = rnd(dt, v - mn);
    double s = v > 0 ? rnd(dt, range / v) : 0;
    double norm = rnd(dt, rnd(dt, 1.0 / range) * sixth), h;
    if (r == v)
      h = rnd(dt, norm * rnd(dt, g - b));
    else if (g == v)
      h = rnd(dt, rnd(dt, norm * rnd(dt, b - r)) + two6);
    else
      h = rnd(dt, rnd(dt, norm * rnd(dt, r - g)) + four6);
    if (!(range > 0)) h = 0;
    if (h < 0) h = rnd(dt, h + 1);
    st(dt, j->out, 3 * p, h);
    st(dt, j->out, 3 * p + 1, s);
    st(dt, j->out, 3 * p + 2, v);
  }
}

static void hsv_to_rgb_px(void *ctx, int64_t begin, int64_t end) {
  const px_job *j = ctx;
  const int dt = j->dt;
  for (int64_t p = begin; p < end; p++) {
    double h = ld(dt, j->in, 3 * p), s = ld(dt, j->in, 3 * p + 1), v = ld(dt, j->in, 3 * p + 2);
    double dh = rnd(dt, h * 6);
    double d[3] = {clamp01(rnd(dt, fabs(rnd(dt, dh - 3)) - 1)), clamp01(rnd(dt, -fabs(rnd(dt, dh - 2)) + 2)),
                   clamp01(rnd(dt, -fabs(rnd(dt, dh - 4)) + 2))};
    double one_s = rnd(dt, -s + 1);
    for (int c = 0; c < 3; c++) st(dt, j->out, 3 * p + c, rnd(dt, rnd(dt, one_s + rnd(dt, s * d[c])) * v));
  }
}

/* static_cast<int>(f) as x86 computes it: INT_MIN for NaN and out-of-range values (undefined in C). */
static int int_x86(float f) { return f > -2147483648.0f && f < 2147483648.0f ? (int)f : INT32_MIN; }

/* ---- AdjustHue: TF's rgb_to_hv_range / hv_range_to_rgb ------------------------------------- */
static void rgb_to_hv_range(float r, float g, float b, float *h, float *vmin, float *vmax) {
  float vmid;
  int cat;
  if (r < g) {
    if (b < r) *vmax = g, vmid = r, *vmin = b, cat = 1;
    else if (b > g) *vmax = b, vmid = g, *vmin = r, cat = 3;
    else *vmax = g, vmid = b, *vmin = r, cat = 2;
  } else {
    if (b < g) *vmax = r, vmid = g, *vmin = b, cat = 0;
    else if (b > r) *vmax = b, vmid = r, *vmin = g, cat = 4;
    else *vmax = r, vmid = b, *vmin = g, cat = 5;
  }
  if (*vmax == *vmin) {
    *h = 0;
    return;
  }
  float ratio = (vmid - *vmin) / (*vmax - *vmin);
  *h = (float)cat + ((cat & 1) == 0 ? ratio : (1 - ratio));
}

static void hv_range_to_rgb(float h, float vmin, float vmax, float *o) {
  int cat = int_x86(h);
  float ratio = h - (float)cat;
  if (cat & 1) ratio = 1 - ratio;
  float vmid = vmin + ratio * (vmax - vmin);
  switch (cat) {
    case 0: o[0] = vmax, o[1] = vmid, o[2] = vmin; break;
    case 1: o[0] = vmid, o[1] = vmax, o[2] = vmin; break;
    case 2: o[0] = vmin, o[1] = vmax, o[2] = vmid; break;
    case 3: o[0] = vmin, o[1] = vmid, o[2] = vmax; break;
    case 4: o[0] = vmid, o[1] = vmin, o[2] = vmax; break;
    default: o[0] = vmax, o[1] = vmin, o[2] = vmid; break;
  }
}

static void adjust_hue_px(void *ctx, int64_t begin, int64_t end) {
  const px_job *j = ctx;
  const float *in = j->in;
  float *out = j->out;
  for (int64_t p = begin; p < end; p++) {
    float h, vmin, vmax;
    rgb_to_hv_range(in[3 * p], in[3 * p + 1], in[3 * p + 2], &h, &vmin, &vmax);
    h += j->f * 6;
    int steps = 0;
    while (h < 0 && steps++ < 64) h += 6;
    while (h >= 6 && steps++ < 128) h -= 6;
    if (h < 0 || h >= 6) { /* a delta no step count brings back (TF loops forever) */
      h = fmodf(h, 6.0f);
      if (h < 0) h += 6;
      if (h >= 6) h = 0;
    }
    hv_range_to_rgb(h, vmin, vmax, out + 3 * p);
  }
}

/* ---- AdjustSaturation: TF's rgb_to_hsv / hsv_to_rgb (float, with double constants) -------- */
static float max_tf(float a, float b) { return a < b ? b : a; } /* std::max */
static float min_tf(float a, float b) { return b < a ? b : a; } /* std::min */

static void sat_rgb_to_hsv(float r, float g, float b, float *h, float *s, float *v) {
  float vv = max_tf(r, max_tf(g, b));
  float range = vv - min_tf(r, min_tf(g, b));
  *s = vv > 0 ? range / vv : 0;
  float norm = 1.0f / (6.0f * range), hh;
  if (r == vv)
    hh = norm * (g - b);
  else if (g == vv)
    hh = (float)((double)(norm * (b - r)) + 2.0 / 6.0);
  else
    hh = (float)((double)(norm * (r - g)) + 4.0 / 6.0);
  if (range <= 0.0) hh = 0;
  if (hh < 0.0) hh = hh + 1;
  *v = vv;
  *h = hh;
}

static void sat_hsv_to_rgb(float h, float s, float v, float *o) {
  float c = s * v, m = v - c, dh = h * 6, rr, gg, bb;
  int cat = int_x86(dh), steps = 0;
  float fm = dh;
  while (fm <= 0 && steps++ < 64) fm += 2.0f; /* TF's loops (h in [0, 1]: a step or two) */
  while (fm >= 2.0f && steps++ < 128) fm -= 2.0f;
  float x = c * (1 - fabsf(fm - 1));
  switch (cat) {
    case 0: rr = c, gg = x, bb = 0; break;
    case 1: rr = x, gg = c, bb = 0; break;
    case 2: rr = 0, gg = c, bb = x; break;
    case 3: rr = 0, gg = x, bb = c; break;
    case 4: rr = x, gg = 0, bb = c; break;
    case 5: rr = c, gg = 0, bb = x; break;
    default: rr = 0, gg = 0, bb = 0; break;
  }
  o[0] = rr + m;
  o[1] = gg + m;
  o[2] = bb + m;
}

static void adjust_saturation_px(void *ctx, int64_t begin, int64_t end) {
  const px_job *j = ctx;
  const float *in = j->in;
  float *out = j->out;
  for (int64_t p = begin; p < end; p++) {
    float h, s, v;
    sat_rgb_to_hsv(in[3 * p], in[3 * p + 1], in[3 * p + 2], &h, &s, &v);
    s = min_tf(1.0f, max_tf(0.0f, s * j->f));
    sat_hsv_to_rgb(h, s, v, out + 3 * p);
  }
}

/* ---- AdjustContrastv2 ------------------------------------------------------------------------ */
typedef struct contrast_job {
  const float *in;
  float *out, *scratch;
  int64_t image, channels;
  float factor;
} contrast_job;

/* One image of the batch per index: TF's ReduceMeanAcrossImage (folding sum into the output
 * plane as scratch), then out = mean + factor * (in - mean). */
static void contrast_images(void *ctx, int64_t begin, int64_t end) {
  const contrast_job *j = ctx;
  const int64_t C = j->channels, plane = j->image * C;
  for (int64_t i = begin; i < end; i++) {
    const float *in = j->in + i * plane;
    float *sum = j->out + i * plane;
    int64_t remaining = j->image;
    int round = 0;
    do {
      int64_t right = remaining / 2, left = remaining - right;
      if (round == 0) {
        for (int64_t k = 0; k < right * C; k++) sum[k] = in[left * C + k] + in[k];
        if (left > right) memcpy(sum + right * C, in + right * C, (size_t)C * sizeof *sum);
      } else {
        for (int64_t k = 0; k < right * C; k++) sum[k] += sum[left * C + k];
      }
      remaining = left;
      round++;
    } while (remaining > 1);
    const float scale = 1.0f / (float)j->image;
    float mean[64], *mp = C <= 64 ? mean : j->scratch + i * C;
    for (int64_t c = 0; c < C; c++) mp[c] = sum[c] * scale;
    float *o = j->out + i * plane;
    for (int64_t k = 0; k < plane; k++) {
      float m = mp[k % C];
      o[k] = m + j->factor * (in[k] - m);
    }
  }
}

/* ---- the kernels ----------------------------------------------------------------------------- */
enum { K_RGB2HSV, K_HSV2RGB, K_CONTRAST, K_HUE, K_SAT };

static int op_kind(const char *op) {
  return !strcmp(op, "RGBToHSV")           ? K_RGB2HSV
         : !strcmp(op, "HSVToRGB")         ? K_HSV2RGB
         : !strcmp(op, "AdjustContrastv2") ? K_CONTRAST
         : !strcmp(op, "AdjustHue")        ? K_HUE
                                           : K_SAT;
}

static sm_status *adjust_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *op = sm__node_op(sm__kctx_node(ctx));
  const int kind = op_kind(op);
  const sm_tensor *img = sm__kctx_input(ctx, 0);
  const int dt = sm_tensor_dtype(img), r = sm_tensor_rank(img);
  const int64_t *d = sm_tensor_dims(img);
  char buf[128];
  if (kind <= K_HSV2RGB) {
    if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF && dt != SM_BFLOAT16)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s of %s images is not supported", op, sm_dtype_name(dt));
    if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "input must be at least 1D%s", sm_shape_str(r, d, buf, sizeof buf));
    if (d[r - 1] != 3)
      return sm_status_new(SM_FAILED_PRECONDITION, "input must have 3 channels but input only has %lld channels.",
                           (long long)d[r - 1]);
  } else {
    if (dt != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s of %s images is not supported (TensorFlow's CPU kernel takes float)",
                           op, sm_dtype_name(dt));
    if (r < 3)
      return sm_status_new(SM_INVALID_ARGUMENT, "input must be at least 3-D, got shape%s", sm_shape_str(r, d, buf, sizeof buf));
    const sm_tensor *f = sm__kctx_input(ctx, 1);
    const char *what = kind == K_CONTRAST ? "contrast_factor" : kind == K_HUE ? "delta" : "scale";
    if (sm_tensor_rank(f) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be scalar: %s", what,
                           sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), buf, sizeof buf));
    if (sm_tensor_dtype(f) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s must be float, not %s", what, sm_dtype_name(sm_tensor_dtype(f)));
    if (kind != K_CONTRAST && d[r - 1] != 3)
      return sm_status_new(SM_INVALID_ARGUMENT, "input must have 3 channels but instead has %lld channels.",
                           (long long)d[r - 1]);
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output_uninit(ctx, 0, dt, r, d, &out);
  if (s) return s;
  const int64_t n = sm_tensor_num_elements(img);
  if (n == 0) return NULL;
  px_job j = {dt, sm_tensor_data(img), sm_tensor_data(out), 0};
  if (kind >= K_CONTRAST) j.f = *(const float *)sm_tensor_data(sm__kctx_input(ctx, 1));
  if (kind == K_CONTRAST) {
    contrast_job c = {j.in, j.out, NULL, d[r - 3] * d[r - 2], d[r - 1], j.f};
    const int64_t batch = n / (c.image * c.channels);
    if (c.channels > 64 && !(c.scratch = sm__kctx_scratch(ctx, (size_t)(batch * c.channels) * sizeof(float), &s)))
      return s;
    sm__parallel_for(n < 65536 ? NULL : sm__kctx_pool(ctx), batch, 1, contrast_images, &c);
    return NULL;
  }
  void (*fn)(void *, int64_t, int64_t) = kind == K_RGB2HSV   ? rgb_to_hsv_px
                                         : kind == K_HSV2RGB ? hsv_to_rgb_px
                                         : kind == K_HUE     ? adjust_hue_px
                                                             : adjust_saturation_px;
  const int64_t px = n / 3;
  sm__parallel_for(px < 8192 ? NULL : sm__kctx_pool(ctx), px, 4096, fn, &j);
  return NULL;
}

/* ---- DrawBoundingBoxes / DrawBoundingBoxesV2 ----------------------------------------------- */

/* TF's draw_bounding_box_op.cc: each box [ymin, xmin, ymax, xmax] (fractions) scaled by (size - 1)
 * and truncated to whole pixels; its four one-pixel edges drawn where inside the image, in the
 * colour of its index modulo the table (colors, or TF's ten defaults); inverted boxes and boxes
 * wholly outside are skipped. float and half images. */
static sm_status *draw_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  static const float dflt[10][4] = {{1, 1, 0, 1}, {0, 0, 1, 1}, {1, 0, 0, 1},   {0, 1, 0, 1},   {0.5f, 0, 0.5f, 1},
                                    {0.5f, 0.5f, 0, 1}, {0.5f, 0, 0, 1}, {0, 0, 0.5f, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}};
  const sm_tensor *im = sm__kctx_input(ctx, 0), *bx = sm__kctx_input(ctx, 1);
  const sm_tensor *col = sm__kctx_num_inputs(ctx) > 2 ? sm__kctx_input(ctx, 2) : NULL;
  int dt = sm_tensor_dtype(im);
  if (dt != SM_FLOAT && dt != SM_HALF) return sm__math_bad_dtype("DrawBoundingBoxes", dt);
  if (sm_tensor_rank(im) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "The rank of the images should be 4");
  if (sm_tensor_rank(bx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "The rank of the boxes tensor should be 3");
  const int64_t *d = sm_tensor_dims(im);
  if (d[0] != sm_tensor_dims(bx)[0]) return sm_status_new(SM_INVALID_ARGUMENT, "The batch sizes should be the same");
  if (sm_tensor_dims(bx)[2] != 4 || sm_tensor_dtype(bx) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be float [batch, num_boxes, 4]");
  int64_t H = d[1], W = d[2], C = d[3], nb = sm_tensor_dims(bx)[1];
  if (C != 1 && C != 3 && C != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
  const float *ctab = &dflt[0][0];
  int64_t ncol = 10, cstride = 4;
  float gray[10][4];
  if (col) {
    char b[64];
    if (sm_tensor_rank(col) != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "colors must be a 2-D matrix%s", sm_shape_str(sm_tensor_rank(col), sm_tensor_dims(col), b, sizeof b));
    if (sm_tensor_dtype(col) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "colors must be float");
    if (sm_tensor_dims(col)[1] < C)
      return sm_status_new(SM_INVALID_ARGUMENT, "colors must have equal or more channels than the image provided: %s",
                           sm_shape_str(sm_tensor_rank(col), sm_tensor_dims(col), b, sizeof b));
    if (sm_tensor_num_elements(col) == 0) return sm_status_new(SM_INVALID_ARGUMENT, "colors must not be empty");
    ctab = sm_tensor_data(col), ncol = sm_tensor_dims(col)[0], cstride = sm_tensor_dims(col)[1];
  } else if (C == 1) {
    memcpy(gray, dflt, sizeof gray);
    for (int i = 0; i < 10; i++) gray[i][0] = 1;
    ctab = &gray[0][0];
  }
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 4, d, &z);
  if (st) return st;
  size_t es = dt == SM_FLOAT ? 4 : 2;
  memcpy(sm_tensor_data(z), sm_tensor_data(im), (size_t)sm_tensor_num_elements(im) * es);
  float *of = sm_tensor_data(z);
  uint16_t *oh = sm_tensor_data(z);
  const float *B = sm_tensor_data(bx);
#define PUT(b, y, x, c, v)                                                  \
  do {                                                                      \
    int64_t at_ = (((b) * H + (y)) * W + (x)) * C + (c);                     \
    if (dt == SM_FLOAT) of[at_] = (v);                                      \
    else oh[at_] = sm__f32_to_half(v);                                      \
  } while (0)
  for (int64_t b = 0; b < d[0]; b++)
    for (int64_t k = 0; k < nb; k++) {
      const float *bb = B + (b * nb + k) * 4, *color = ctab + (k % ncol) * cstride;
      float fr0 = bb[0] * (float)(H - 1), fc0 = bb[1] * (float)(W - 1), fr1 = bb[2] * (float)(H - 1), fc1 = bb[3] * (float)(W - 1);
      if (!(fabsf(fr0) < 9e18f && fabsf(fc0) < 9e18f && fabsf(fr1) < 9e18f && fabsf(fc1) < 9e18f)) continue; /* NaN, huge */
      int64_t r0 = (int64_t)fr0, c0 = (int64_t)fc0, r1 = (int64_t)fr1, c1 = (int64_t)fc1;
      if (r0 > r1 || c0 > c1) continue;                      /* inverted */
      if (r0 >= H || r1 < 0 || c0 >= W || c1 < 0) continue; /* wholly outside */
      int64_t r0c = r0 > 0 ? r0 : 0, r1c = r1 < H - 1 ? r1 : H - 1, c0c = c0 > 0 ? c0 : 0, c1c = c1 < W - 1 ? c1 : W - 1;
      for (int64_t c = 0; c < C; c++) {
        float v = color[c];
        if (r0 >= 0)
          for (int64_t j = c0c; j <= c1c; j++) PUT(b, r0, j, c, v);
        if (r1 < H)
          for (int64_t j = c0c; j <= c1c; j++) PUT(b, r1, j, c, v);
        if (c0 >= 0)
          for (int64_t i = r0c; i <= r1c; i++) PUT(b, i, c0, c, v);
        if (c1 < W)
          for (int64_t i = r0c; i <= r1c; i++) PUT(b, i, c1, c, v);
      }
    }
#undef PUT
  return NULL;
}

const sm_kernel sm_kernels_image_adjust[] = {
    {"AdjustContrastv2", NULL, adjust_compute, NULL, 0},
    {"AdjustHue", NULL, adjust_compute, NULL, 0},
    {"AdjustSaturation", NULL, adjust_compute, NULL, 0},
    {"DrawBoundingBoxes", NULL, draw_compute, NULL, 0},
    {"DrawBoundingBoxesV2", NULL, draw_compute, NULL, 0},
    {"HSVToRGB", NULL, adjust_compute, NULL, 0},
    {"RGBToHSV", NULL, adjust_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
