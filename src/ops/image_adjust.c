/* image_adjust.c - the colour kernels the augmentation layers export: RGBToHSV, HSVToRGB,
 * AdjustContrastv2, AdjustHue and AdjustSaturation (images [..., H, W, C], C == 3 where colour).
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

const sm_kernel sm_kernels_image_adjust[] = {
    {"AdjustContrastv2", NULL, adjust_compute, NULL, 0},
    {"AdjustHue", NULL, adjust_compute, NULL, 0},
    {"AdjustSaturation", NULL, adjust_compute, NULL, 0},
    {"HSVToRGB", NULL, adjust_compute, NULL, 0},
    {"RGBToHSV", NULL, adjust_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};
