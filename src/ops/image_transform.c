/* image_transform.c - the geometric image kernels the augmentation layers export:
 * ImageProjectiveTransformV2/V3 (RandomRotation, RandomZoom, RandomTranslation, RandomShear, ...),
 * CropAndResize (tf.image.crop_and_resize) and ScaleAndTranslate (tf.image.resize with
 * antialias=True, Resizing(antialias=True), tf.raw_ops.ScaleAndTranslate) and its gradient
 * ScaleAndTranslateGrad (the spans transposed).
 *
 * Semantics are TensorFlow's CPU kernels' (image_ops.h ProjectiveGenerator and MapCoordinate,
 * image_ops.cc; crop_and_resize_op.cc), float for float, with TF's mixed int/float arithmetic
 * kept (an int64 times a float is a float op here too). Conversions TF leaves to the machine
 * (a float index past int64, a bilinear value past uint8) are done as x86 does them (the
 * "indefinite" INT_MIN; truncation through int32), so bad input is answered, never undefined.
 *  - Projective: each output pixel (b, y, x) maps through its 8-vector transform to
 *    ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k) with k = c0 x + c1 y + 1 (k == 0: fill);
 *    fill_mode REFLECT / WRAP / NEAREST maps it into the image, CONSTANT leaves it where it is;
 *    interpolation NEAREST (round half away) or BILINEAR, where every tap outside the image reads
 *    the fill value (so CONSTANT blends the image's edge with it, as TF 2.21 does).
 *    dtypes uint8, int32, int64, half, bfloat16, float, double (bilinear math in float).
 *  - CropAndResize: bilinear or nearest sampling of each box (normalised y1, x1, y2, x2; boxes
 *    may extend past the image or be flipped) to crop_size, extrapolation_value outside; any real
 *    image dtype in, float out.
 *  - ScaleAndTranslate: separable resampling with TF's eight kernels (lanczos1/3/5, gaussian, box,
 *    triangle, keyscubic, mitchellcubic), antialiased (the kernel widened by 1 / scale) when
 *    downscaling; any real image dtype in, float out. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/math_int.h" /* half / bfloat16 conversions, sm__parallel_for */

/* static_cast<int64>(f) as x86 does it (cvttss2si): INT64_MIN for NaN and out-of-range values. */
static int64_t i64_x86(float f) { return f >= -9.2233720e18f && f < 9.2233720e18f ? (int64_t)f : INT64_MIN; }
/* a * b wrapping as the machine does (a coordinate past int64 makes TF's product overflow). */
static int64_t mul_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int32_t i32_x86(float f) { return f > -2147483904.0f && f < 2147483648.0f ? (int32_t)f : INT32_MIN; }

static float elem_f(int dt, const void *p, int64_t i) {
  switch (dt) {
    case SM_FLOAT: return ((const float *)p)[i];
    case SM_DOUBLE: return (float)((const double *)p)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)p)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)p)[i]);
    case SM_INT8: return ((const int8_t *)p)[i];
    case SM_UINT8: return ((const uint8_t *)p)[i];
    case SM_INT16: return ((const int16_t *)p)[i];
    case SM_UINT16: return ((const uint16_t *)p)[i];
    case SM_INT32: return (float)((const int32_t *)p)[i];
    case SM_INT64: return (float)((const int64_t *)p)[i];
    default: return 0;
  }
}

/* static_cast<T>(float) into element i, as compiled for x86 (uint8 through int32). */
static void store_f(int dt, void *p, int64_t i, float v) {
  switch (dt) {
    case SM_FLOAT: ((float *)p)[i] = v; break;
    case SM_DOUBLE: ((double *)p)[i] = v; break;
    case SM_HALF: ((uint16_t *)p)[i] = sm__f32_to_half(v); break;
    case SM_BFLOAT16: ((uint16_t *)p)[i] = sm__f32_to_bf16(v); break;
    case SM_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint32_t)i32_x86(v); break;
    case SM_INT32: ((int32_t *)p)[i] = i32_x86(v); break;
    case SM_INT64: ((int64_t *)p)[i] = i64_x86(v); break;
    default: break;
  }
}

/* ---- ImageProjectiveTransformV2 / V3 ----------------------------------------------------------- */
enum { FILL_REFLECT, FILL_WRAP, FILL_CONSTANT, FILL_NEAREST };

typedef struct proj_state {
  int bilinear, mode;
} proj_state;

static sm_status *string_attr(const sm_node *n, const char *name, const char *dflt, char *buf, size_t cap) {
  const char *s = dflt;
  size_t len = strlen(dflt);
  if (sm__node_attr(n, name)) {
    sm_status *st = sm__node_attr_string(n, name, &s, &len);
    if (st) return st;
  }
  if (len >= cap) len = cap - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  return NULL;
}

static sm_status *proj_prepare(const sm_node *n, void **state) {
  char interp[16], mode[16];
  sm_status *st = string_attr(n, "interpolation", "", interp, sizeof interp);
  if (!st) st = string_attr(n, "fill_mode", "CONSTANT", mode, sizeof mode);
  if (st) return st;
  proj_state s = {0, FILL_CONSTANT};
  if (!strcmp(interp, "BILINEAR"))
    s.bilinear = 1;
  else if (strcmp(interp, "NEAREST"))
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid interpolation '%s'. Supported types: NEAREST, BILINEAR", interp);
  if (!strcmp(mode, "REFLECT"))
    s.mode = FILL_REFLECT;
  else if (!strcmp(mode, "WRAP"))
    s.mode = FILL_WRAP;
  else if (!strcmp(mode, "NEAREST"))
    s.mode = FILL_NEAREST;
  else if (strcmp(mode, "CONSTANT"))
    return sm_status_new(SM_INVALID_ARGUMENT, "Invalid mode '%s'. Supported types: REFLECT, WRAP, CONSTANT, NEAREST", mode);
  proj_state *p = sm__alloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory preparing the projective transform");
  *p = s;
  *state = p;
  return NULL;
}

static float clampf_tf(float v, float hi) { return v < 0.0f ? 0.0f : v > hi ? hi : v; } /* scalar_clamp_op */

/* TF's MapCoordinate (scipy's ni_interpolation modes). */
static float map_coord(int mode, float in, int64_t len) {
  if (mode == FILL_CONSTANT) return in;
  if (mode == FILL_REFLECT) {
    if (in < 0) {
      if (len <= 1) {
        in = 0;
      } else {
        const int64_t sz2 = 2 * len;
        if (in < (float)sz2) in = (float)mul_wrap(sz2, i64_x86(-in / (float)sz2)) + in;
        in = in < (float)-len ? in + (float)sz2 : -in - 1;
      }
    } else if (in > (float)(len - 1)) {
      if (len <= 1) {
        in = 0;
      } else {
        const int64_t sz2 = 2 * len;
        in -= (float)mul_wrap(sz2, i64_x86(in / (float)sz2));
        if (in >= (float)len) in = (float)sz2 - in - 1;
      }
    }
  } else if (mode == FILL_WRAP) {
    if (in < 0) {
      if (len <= 1) {
        in = 0;
      } else {
        const int64_t sz = len - 1;
        in += (float)mul_wrap(len, (int64_t)((uint64_t)i64_x86(-in / (float)sz) + 1));
      }
    } else if (in > (float)(len - 1)) {
      if (len <= 1) {
        in = 0;
      } else {
        const int64_t sz = len - 1;
        in -= (float)mul_wrap(len, i64_x86(in / (float)sz));
      }
    }
  }
  return clampf_tf(in, (float)(len - 1));
}

typedef struct proj_job {
  const proj_state *s;
  int dt;
  const void *in;
  void *out;
  const float *tr;
  int64_t ntr, H, W, C, OH, OW;
  float fill;
} proj_job;

static float read_fill(const proj_job *j, int64_t base, int64_t y, int64_t x, int64_t c) {
  return 0 <= y && y < j->H && 0 <= x && x < j->W ? elem_f(j->dt, j->in, base + (y * j->W + x) * j->C + c) : j->fill;
}

static void proj_rows(void *ctx, int64_t begin, int64_t end) {
  const proj_job *j = ctx;
  const size_t es = sm_dtype_size(j->dt);
  char *out = j->out;
  for (int64_t r = begin; r < end; r++) {
    const int64_t b = r / j->OH, oy = r % j->OH, base = b * j->H * j->W * j->C;
    const float *t = j->ntr == 1 ? j->tr : j->tr + 8 * b;
    for (int64_t ox = 0; ox < j->OW; ox++) {
      const int64_t o = (r * j->OW + ox) * j->C;
      const float fx = (float)ox, fy = (float)oy;
      const float k = t[6] * fx + t[7] * fy + 1.f;
      float x = 0, y = 0;
      int fill = k == 0;
      if (!fill) {
        const float ix = (t[0] * fx + t[1] * fy + t[2]) / k, iy = (t[3] * fx + t[4] * fy + t[5]) / k;
        x = map_coord(j->s->mode, ix, j->W);
        y = map_coord(j->s->mode, iy, j->H); /* CONSTANT: out-of-image taps read the fill value */
      }
      if (fill) {
        for (int64_t c = 0; c < j->C; c++) store_f(j->dt, out, o + c, j->fill);
      } else if (!j->s->bilinear) {
        const int64_t yi = i64_x86(roundf(y)), xi = i64_x86(roundf(x));
        for (int64_t c = 0; c < j->C; c++) {
          if (0 <= yi && yi < j->H && 0 <= xi && xi < j->W)
            memcpy(out + (size_t)(o + c) * es, (const char *)j->in + (size_t)(base + (yi * j->W + xi) * j->C + c) * es, es);
          else
            store_f(j->dt, out, o + c, j->fill);
        }
      } else {
        const float yf = floorf(y), xf = floorf(x), yc = yf + 1, xc = xf + 1;
        const int64_t y0 = i64_x86(yf), x0 = i64_x86(xf), y1 = i64_x86(yc), x1 = i64_x86(xc);
        for (int64_t c = 0; c < j->C; c++) {
          const float vf = (xc - x) * read_fill(j, base, y0, x0, c) + (x - xf) * read_fill(j, base, y0, x1, c);
          const float vc = (xc - x) * read_fill(j, base, y1, x0, c) + (x - xf) * read_fill(j, base, y1, x1, c);
          store_f(j->dt, out, o + c, (yc - y) * vf + (y - yf) * vc);
        }
      }
    }
  }
}

static sm_status *proj_compute(const void *state, sm_kctx *ctx) {
  const proj_state *s = state;
  const sm_tensor *img = sm__kctx_input(ctx, 0), *tr = sm__kctx_input(ctx, 1);
  const int nin = sm__kctx_num_inputs(ctx), dt = sm_tensor_dtype(img);
  const int64_t *d = sm_tensor_dims(img), *td = sm_tensor_dims(tr);
  char buf[128];
  if (dt != SM_UINT8 && dt != SM_INT32 && dt != SM_INT64 && dt != SM_HALF && dt != SM_FLOAT && dt != SM_DOUBLE &&
      dt != SM_BFLOAT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "ImageProjectiveTransform of %s images is not supported", sm_dtype_name(dt));
  if (sm_tensor_rank(img) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "Input images must have rank 4");
  if (sm_tensor_dtype(tr) != SM_FLOAT || sm_tensor_rank(tr) != 2 || (td[0] != d[0] && td[0] != 1) || td[1] != 8)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input transform should be num_images x 8 or 1 x 8");
  proj_job j = {s, dt, sm_tensor_data(img), NULL, sm_tensor_data(tr), td[0], d[1], d[2], d[3], d[1], d[2], 0};
  if (nin >= 3) {
    const sm_tensor *sh = sm__kctx_input(ctx, 2);
    if (sm_tensor_rank(sh) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "output shape must be 1-dimensional%s",
                           sm_shape_str(sm_tensor_rank(sh), sm_tensor_dims(sh), buf, sizeof buf));
    if (sm_tensor_num_elements(sh) != 2 || sm_tensor_dtype(sh) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "output shape must have two elements%s",
                           sm_shape_str(1, sm_tensor_dims(sh), buf, sizeof buf));
    const int32_t *v = sm_tensor_data(sh);
    if (v[0] <= 0 || v[1] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "output dimensions must be positive");
    j.OH = v[0], j.OW = v[1];
  }
  if (nin >= 4) {
    const sm_tensor *fv = sm__kctx_input(ctx, 3);
    if (sm_tensor_rank(fv) != 0 || sm_tensor_dtype(fv) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "fill_value must be a float scalar%s",
                           sm_shape_str(sm_tensor_rank(fv), sm_tensor_dims(fv), buf, sizeof buf));
    j.fill = *(const float *)sm_tensor_data(fv);
  }
  /* fill_value is static_cast<T>(float): keep the value T holds */
  union {
    double d;
    int64_t i;
  } tmp;
  store_f(dt == SM_DOUBLE ? SM_FLOAT : dt, &tmp, 0, j.fill);
  if (dt != SM_DOUBLE && dt != SM_FLOAT) j.fill = elem_f(dt, &tmp, 0);
  int64_t od[4] = {d[0], j.OH, j.OW, d[3]};
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, 4, od, &out);
  if (st) return st;
  const int64_t rows = d[0] * j.OH, per_row = j.OW * d[3];
  if (rows == 0 || per_row == 0) return NULL;
  j.out = sm_tensor_data(out);
  sm__parallel_for((double)rows * (double)per_row < 16384.0 ? NULL : sm__kctx_pool(ctx), rows,
                   per_row >= 4096 ? 1 : 4096 / per_row, proj_rows, &j);
  return NULL;
}

/* ---- CropAndResize ------------------------------------------------------------------------- */
typedef struct crop_state {
  int nearest;
  float extrapolation;
} crop_state;

static sm_status *crop_prepare(const sm_node *n, void **state) {
  char method[16];
  sm_status *st = string_attr(n, "method", "bilinear", method, sizeof method);
  if (st) return st;
  crop_state s = {0, 0};
  if (!strcmp(method, "nearest"))
    s.nearest = 1;
  else if (strcmp(method, "bilinear"))
    return sm_status_new(SM_INVALID_ARGUMENT, "method must be 'bilinear' or 'nearest', not '%s'", method);
  if (sm__node_attr(n, "extrapolation_value") && (st = sm__node_attr_float(n, "extrapolation_value", &s.extrapolation)))
    return st;
  crop_state *p = sm__alloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory preparing CropAndResize");
  *p = s;
  *state = p;
  return NULL;
}

typedef struct crop_job {
  const crop_state *s;
  int dt;
  const void *in;
  float *out;
  const float *boxes;
  const int32_t *bi;
  int64_t H, W, C, CH, CW;
} crop_job;

static void crop_boxes(void *ctx, int64_t begin, int64_t end) {
  const crop_job *j = ctx;
  const int64_t H = j->H, W = j->W, C = j->C, CH = j->CH, CW = j->CW;
  for (int64_t b = begin; b < end; b++) {
    const float y1 = j->boxes[4 * b], x1 = j->boxes[4 * b + 1], y2 = j->boxes[4 * b + 2], x2 = j->boxes[4 * b + 3];
    const int64_t base = (int64_t)j->bi[b] * H * W * C;
    const float hs = CH > 1 ? (y2 - y1) * (float)(H - 1) / (float)(CH - 1) : 0;
    const float ws = CW > 1 ? (x2 - x1) * (float)(W - 1) / (float)(CW - 1) : 0;
    for (int64_t y = 0; y < CH; y++) {
      float *o = j->out + (b * CH + y) * CW * C;
      const float in_y = CH > 1 ? y1 * (float)(H - 1) + (float)y * hs : (float)(0.5 * (y1 + y2) * (double)(H - 1));
      if (!(in_y >= 0 && in_y <= (float)(H - 1))) { /* NaN too (inf - inf boxes): TF reads out of bounds */
        for (int64_t k = 0; k < CW * C; k++) o[k] = j->s->extrapolation;
        continue;
      }
      const int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y);
      const float yl = in_y - (float)ty;
      for (int64_t x = 0; x < CW; x++, o += C) {
        const float in_x = CW > 1 ? x1 * (float)(W - 1) + (float)x * ws : (float)(0.5 * (x1 + x2) * (double)(W - 1));
        if (!(in_x >= 0 && in_x <= (float)(W - 1))) {
          for (int64_t c = 0; c < C; c++) o[c] = j->s->extrapolation;
          continue;
        }
        if (j->s->nearest) {
          const int64_t cx = (int64_t)roundf(in_x), cy = (int64_t)roundf(in_y);
          for (int64_t c = 0; c < C; c++) o[c] = elem_f(j->dt, j->in, base + (cy * W + cx) * C + c);
          continue;
        }
        const int64_t lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x);
        const float xl = in_x - (float)lx;
        for (int64_t c = 0; c < C; c++) {
          const float tl = elem_f(j->dt, j->in, base + (ty * W + lx) * C + c);
          const float tr = elem_f(j->dt, j->in, base + (ty * W + rx) * C + c);
          const float bl = elem_f(j->dt, j->in, base + (by * W + lx) * C + c);
          const float br = elem_f(j->dt, j->in, base + (by * W + rx) * C + c);
          const float top = tl + (tr - tl) * xl, bot = bl + (br - bl) * xl;
          o[c] = top + (bot - top) * yl;
        }
      }
    }
  }
}

static sm_status *crop_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *img = sm__kctx_input(ctx, 0), *boxes = sm__kctx_input(ctx, 1), *bi = sm__kctx_input(ctx, 2),
                  *cs = sm__kctx_input(ctx, 3);
  const int dt = sm_tensor_dtype(img);
  const int64_t *d = sm_tensor_dims(img);
  char buf[128];
  if (sm_tensor_rank(img) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input image must be 4-D%s",
                         sm_shape_str(sm_tensor_rank(img), d, buf, sizeof buf));
  if (dt == SM_UINT32 || dt == SM_UINT64 || sm_dtype_size(dt) == 0 || dt == SM_BOOL || dt == SM_STRING || dt == SM_COMPLEX64 ||
      dt == SM_COMPLEX128)
    return sm_status_new(SM_INVALID_ARGUMENT, "CropAndResize of %s images is not supported", sm_dtype_name(dt));
  if (d[1] <= 0 || d[2] <= 0 || d[1] > INT32_MAX || d[2] > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "image dimensions must be positive");
  if (sm_tensor_rank(boxes) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be 2-D, got: %s",
                         sm_shape_str(sm_tensor_rank(boxes), sm_tensor_dims(boxes), buf, sizeof buf));
  if (sm_tensor_rank(bi) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "box_indices must be rank 1 but is shape %s",
                         sm_shape_str(sm_tensor_rank(bi), sm_tensor_dims(bi), buf, sizeof buf));
  const int64_t nb = sm_tensor_dims(boxes)[0];
  if (sm_tensor_dims(boxes)[1] != 4) return sm_status_new(SM_INVALID_ARGUMENT, "boxes must have 4 columns");
  if (sm_tensor_dims(bi)[0] != nb) return sm_status_new(SM_INVALID_ARGUMENT, "box_index has incompatible shape");
  if (sm_tensor_rank(cs) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "crop_size must be 1-D%s",
                         sm_shape_str(sm_tensor_rank(cs), sm_tensor_dims(cs), buf, sizeof buf));
  if (sm_tensor_dims(cs)[0] != 2 || sm_tensor_dtype(cs) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "crop_size must have two elements%s",
                         sm_shape_str(1, sm_tensor_dims(cs), buf, sizeof buf));
  if (sm_tensor_dtype(boxes) != SM_FLOAT || sm_tensor_dtype(bi) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be float and box_ind int32");
  const int32_t *csv = sm_tensor_data(cs), *biv = sm_tensor_data(bi);
  if (csv[0] <= 0 || csv[1] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "crop dimensions must be positive");
  int64_t od[4] = {nb, csv[0], csv[1], d[3]};
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, 4, od, &out);
  if (st) return st;
  for (int64_t b = 0; b < nb; b++)
    if (biv[b] < 0 || biv[b] >= d[0])
      return sm_status_new(SM_OUT_OF_RANGE, "box_index has values outside [0, batch_size): box %lld has %d",
                           (long long)b, biv[b]);
  const float *bx = sm_tensor_data(boxes);
  for (int64_t k = 0; k < 4 * nb; k++)
    if (!isfinite(bx[k])) return sm_status_new(SM_INVALID_ARGUMENT, "Boxes contains at least one element that is not finite");
  crop_job j = {state, dt, sm_tensor_data(img), sm_tensor_data(out), bx, biv, d[1], d[2], d[3], csv[0], csv[1]};
  const int64_t per_box = j.CH * j.CW * (j.C + 1);
  if (nb == 0 || j.C == 0) return NULL;
  sm__parallel_for((double)per_box * (double)nb < 16384.0 ? NULL : sm__kctx_pool(ctx), nb, 1, crop_boxes, &j);
  return NULL;
}

/* ---- ScaleAndTranslate (tf.image.resize with antialias, scale_and_translate) ------------------
 * Separable: the rows (height) are gathered into a float [B, OH, W, C] buffer, then the columns.
 * Each output position x samples the input at (x + 0.5) / scale - translation / scale; its span
 * of taps is the kernel's radius (times 1 / scale when antialiasing a downscale) around it, the
 * weights normalised to sum 1 (left zero when the sum is ~0), and a position outside the input
 * gets no taps (zero). TF's sampling_kernels.h, float for float. */
enum { SK_LANCZOS1, SK_LANCZOS3, SK_LANCZOS5, SK_GAUSSIAN, SK_BOX, SK_TRIANGLE, SK_KEYS, SK_MITCHELL };
static const char *const sk_names[] = {"lanczos1", "lanczos3", "lanczos5", "gaussian",
                                       "box",      "triangle", "keyscubic", "mitchellcubic"};

static float sk_radius(int k) {
  switch (k) {
    case SK_LANCZOS1: return 1.0f;
    case SK_LANCZOS3: return 3.0f;
    case SK_LANCZOS5: return 5.0f;
    case SK_GAUSSIAN: return 1.5f;
    case SK_KEYS: case SK_MITCHELL: return 2.0f;
    default: return 1.0f;
  }
}

static float sk_eval(int k, float x) {
  x = fabsf(x);
  switch (k) {
    case SK_LANCZOS1: case SK_LANCZOS3: case SK_LANCZOS5: {
      const float pi = 3.14159265359f, r = sk_radius(k);
      if (x > r) return 0.0f;
      if (x <= 1e-3f) return 1.0f;
      return r * sinf(pi * x) * sinf(pi * x / r) / (pi * pi * x * x);
    }
    case SK_GAUSSIAN: {
      const float r = 1.5f, sigma = r / 3.0f;
      if (x >= r) return 0.0f;
      return (float)exp((double)(-x * x) / (2.0 * sigma * sigma));
    }
    case SK_BOX: return x < 0.5f ? 1.0f : x == 0.5f ? 0.5f : 0.0f;
    case SK_TRIANGLE: return x < 1.0f ? 1.0f - x : 0.0f;
    case SK_KEYS:
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
      return ((1.5f * x - 2.5f) * x) * x + 1.0f;
    default: /* SK_MITCHELL */
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
      return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
  }
}

typedef struct sat_state {
  int kernel, antialias;
} sat_state;

static sm_status *sat_prepare(const sm_node *n, void **state) {
  char name[32];
  sat_state s = {SK_LANCZOS3, 1};
  sm_status *st = string_attr(n, "kernel_type", "lanczos3", name, sizeof name);
  if (!st && sm__node_attr(n, "antialias")) st = sm__node_attr_bool(n, "antialias", &s.antialias);
  if (st) return st;
  for (s.kernel = 0; s.kernel < 8 && strcmp(sk_names[s.kernel], name); s.kernel++) {
  }
  if (s.kernel == 8) return sm_status_new(SM_INVALID_ARGUMENT, "Unrecognized kernel type: %s", name);
  sat_state *p = sm__alloc(sizeof *p);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory preparing ScaleAndTranslate");
  *p = s;
  *state = p;
  return NULL;
}

typedef struct spans {
  int64_t size;   /* taps a position */
  int32_t *start; /* [out] */
  float *w;       /* [out * size] */
} spans;

/* TF's ComputeSpansCore. */
static sm_status *sat_spans(sm_kctx *ctx, const sat_state *s, int64_t out, int64_t in, float scale, float translate,
                            spans *sp) {
  const float inv_scale = (float)(1.0 / (double)scale), inv_translate = -inv_scale * translate;
  const float kscale = s->antialias ? (inv_scale > 1.0f ? inv_scale : 1.0f) : 1.0f, radius = sk_radius(s->kernel);
  const float reach = ceilf(radius * kscale);
  sp->size = reach < (float)in ? 2 * (int64_t)reach + 1 : in; /* min(2 * ceil + 1, in), without int overflow */
  if (sp->size > in) sp->size = in;
  sm_status *st = NULL;
  if (!(sp->start = sm__kctx_scratch(ctx, (size_t)out * sizeof *sp->start, &st))) return st;
  if (!(sp->w = sm__kctx_scratch(ctx, (size_t)(out * sp->size) * sizeof *sp->w, &st))) return st;
  float *tmp = sm__kctx_scratch(ctx, (size_t)sp->size * sizeof *tmp, &st);
  if (!tmp) return st;
  memset(sp->w, 0, (size_t)(out * sp->size) * sizeof *sp->w);
  const float inv_k = 1.0f / kscale;
  for (int64_t x = 0; x < out; x++) {
    const float sample = ((float)x + 0.5f) * inv_scale + inv_translate;
    sp->start[x] = 0;
    if (sample < 0 || sample > (float)in) continue;
    int64_t lo = i64_x86(ceilf(sample - radius * kscale - 0.5f)), hi = i64_x86(floorf(sample + radius * kscale - 0.5f));
    lo = lo < 0 ? 0 : lo > in - 1 ? in - 1 : lo;
    hi = (hi < 0 ? 0 : hi > in - 1 ? in - 1 : hi) + 1;
    if (hi - lo > sp->size)
      return sm_status_new(SM_INTERNAL, "Span is too large: %lld vs %lld.", (long long)(hi - lo), (long long)sp->size);
    float sum = 0.0f;
    for (int64_t src = lo; src < hi; src++) {
      const float pos = (float)src + 0.5f - sample;
      tmp[src - lo] = sk_eval(s->kernel, fabsf(pos * inv_k));
      sum += tmp[src - lo];
    }
    if (fabsf(sum) >= 1000.0f * 1.17549435e-38f) {
      const float inv = 1.0f / sum;
      for (int64_t k = 0; k < hi - lo; k++) sp->w[x * sp->size + k] = tmp[k] * inv;
    }
    sp->start[x] = (int32_t)lo;
  }
  return NULL;
}

typedef struct sat_job {
  int dt;
  const void *in;
  float *mid, *out;
  int64_t H, W, C, OH, OW;
  const spans *rows, *cols;
} sat_job;

/* One image: TF's GatherRows then GatherColumns. */
static void sat_images(void *ctx, int64_t b0, int64_t b1) {
  const sat_job *j = ctx;
  const int64_t W = j->W, C = j->C, in_row = W * C;
  for (int64_t b = b0; b < b1; b++) {
    const int64_t ibase = b * j->H * in_row;
    float *mid = j->mid + b * j->OH * in_row, *out = j->out + b * j->OH * j->OW * C;
    for (int64_t y = 0; y < j->OH; y++) {
      float *o = mid + y * in_row;
      memset(o, 0, (size_t)in_row * sizeof *o);
      const int64_t st = j->rows->start[y], n = (st + j->rows->size < j->H ? st + j->rows->size : j->H) - st;
      for (int64_t k = 0; k < n; k++) {
        const float w = j->rows->w[y * j->rows->size + k];
        const int64_t src = ibase + (st + k) * in_row;
        for (int64_t e = 0; e < in_row; e++) o[e] += w * elem_f(j->dt, j->in, src + e);
      }
    }
    for (int64_t y = 0; y < j->OH; y++) {
      const float *row = mid + y * in_row;
      for (int64_t x = 0; x < j->OW; x++) {
        float *o = out + (y * j->OW + x) * C;
        const int64_t st = j->cols->start[x], n = (st + j->cols->size < W ? st + j->cols->size : W) - st;
        for (int64_t c = 0; c < C; c++) o[c] = 0.0f;
        for (int64_t k = 0; k < n; k++) {
          const float w = j->cols->w[x * j->cols->size + k];
          const float *p = row + (st + k) * C;
          for (int64_t c = 0; c < C; c++) o[c] += w * p[c];
        }
      }
    }
  }
}

static sm_status *two_floats(const sm_tensor *t, const char *what, float *a, float *b) {
  char buf[64];
  if (sm_tensor_rank(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 1-dimensional%s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, sizeof buf));
  if (sm_tensor_num_elements(t) != 2 || sm_tensor_dtype(t) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must have two elements%s", what, sm_shape_str(1, sm_tensor_dims(t), buf, sizeof buf));
  *a = ((const float *)sm_tensor_data(t))[0];
  *b = ((const float *)sm_tensor_data(t))[1];
  return NULL;
}

static sm_status *sat_compute(const void *state, sm_kctx *ctx) {
  const sat_state *s = state;
  const sm_tensor *img = sm__kctx_input(ctx, 0), *size = sm__kctx_input(ctx, 1);
  const int dt = sm_tensor_dtype(img);
  const int64_t *d = sm_tensor_dims(img);
  char buf[128];
  if (sm_tensor_rank(img) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s", sm_shape_str(sm_tensor_rank(img), d, buf, sizeof buf));
  if (dt == SM_UINT32 || dt == SM_UINT64 || dt == SM_BOOL || dt == SM_STRING || dt == SM_COMPLEX64 || dt == SM_COMPLEX128 ||
      sm_dtype_size(dt) == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "ScaleAndTranslate of %s images is not supported", sm_dtype_name(dt));
  if (sm_tensor_rank(size) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "output_shape_t must be 1-dimensional%s",
                         sm_shape_str(sm_tensor_rank(size), sm_tensor_dims(size), buf, sizeof buf));
  if (sm_tensor_num_elements(size) != 2 || sm_tensor_dtype(size) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "output_shape_t must have two elements%s",
                         sm_shape_str(1, sm_tensor_dims(size), buf, sizeof buf));
  if (d[1] >= INT32_MAX || d[2] >= INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "input sizes must be between 0 and max int32");
  const int32_t *sz = sm_tensor_data(size);
  if (sz[0] <= 0 || sz[1] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "output dimensions must be positive");
  if (d[3] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "image must have at least one channel");
  if (d[1] <= 0 || d[2] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "input image must be of non-zero size");
  float rs, cs, rt, ct;
  sm_status *st = two_floats(sm__kctx_input(ctx, 2), "scale", &rs, &cs);
  if (st) return st;
  if (!(rs > 0 && cs > 0)) return sm_status_new(SM_INVALID_ARGUMENT, "Scale must be greater than zero.");
  if ((st = two_floats(sm__kctx_input(ctx, 3), "translation", &rt, &ct))) return st;
  int64_t od[4] = {d[0], sz[0], sz[1], d[3]};
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, 4, od, &out))) return st;
  if (sm_tensor_num_elements(out) == 0) return NULL;
  spans rows, cols;
  if ((st = sat_spans(ctx, s, sz[1], d[2], cs, ct, &cols)) || (st = sat_spans(ctx, s, sz[0], d[1], rs, rt, &rows))) return st;
  float *mid = sm__kctx_scratch(ctx, (size_t)(d[0] * sz[0] * d[2] * d[3]) * sizeof *mid, &st);
  if (!mid) return st;
  sat_job j = {dt, sm_tensor_data(img), mid, sm_tensor_data(out), d[1], d[2], d[3], sz[0], sz[1], &rows, &cols};
  const double work = (double)sz[0] * (double)(d[2] + sz[1]) * (double)d[3] * (double)(rows.size + cols.size);
  sm__parallel_for(work * (double)d[0] < 65536.0 ? NULL : sm__kctx_pool(ctx), d[0], 1, sat_images, &j);
  return NULL;
}

/* ScaleAndTranslateGrad(grads [B, OH, OW, C], original_image [B, H, W, C], scale, translation): the
 * forward's spans transposed (TF's ComputeGradSpans): each input row gets w * the grads' rows that
 * sampled it, in output order, then the columns the same way. float only, as TF's kernel. */
static sm_status *satg_compute(const void *state, sm_kctx *ctx) {
  const sat_state *s = state;
  const sm_tensor *g = sm__kctx_input(ctx, 0), *img = sm__kctx_input(ctx, 1);
  char buf[128];
  if (sm_tensor_rank(g) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input_grad must be 4-dimensional%s",
                         sm_shape_str(sm_tensor_rank(g), sm_tensor_dims(g), buf, sizeof buf));
  if (sm_tensor_rank(img) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "original_image must be 4-dimensional%s",
                         sm_shape_str(sm_tensor_rank(img), sm_tensor_dims(img), buf, sizeof buf));
  if (sm_tensor_dtype(g) != SM_FLOAT || sm_tensor_dtype(img) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "ScaleAndTranslateGrad takes float grads and original_image");
  const int64_t *gd = sm_tensor_dims(g), *d = sm_tensor_dims(img);
  if (d[1] >= INT32_MAX || d[2] >= INT32_MAX || gd[1] >= INT32_MAX || gd[2] >= INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "input sizes must be between 0 and max int32");
  float rs, cs, rt, ct;
  sm_status *st = two_floats(sm__kctx_input(ctx, 2), "scale", &rs, &cs);
  if (st) return st;
  if (!(rs > 0 && cs > 0)) return sm_status_new(SM_INVALID_ARGUMENT, "Scale must be greater than zero.");
  if ((st = two_floats(sm__kctx_input(ctx, 3), "translation", &rt, &ct))) return st;
  sm_tensor *out;
  /* as TF: the batch and channels are the grads', the height and width original_image's */
  const int64_t B = gd[0], H = d[1], W = d[2], C = gd[3], OH = gd[1], OW = gd[2];
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 4, (int64_t[]){B, H, W, C}, &out))) return st;
  if (sm_tensor_num_elements(out) == 0 || sm_tensor_num_elements(g) == 0) return NULL;
  spans rows, cols;
  if ((st = sat_spans(ctx, s, OW, W, cs, ct, &cols)) || (st = sat_spans(ctx, s, OH, H, rs, rt, &rows))) return st;
  float *mid = sm__kctx_scratch(ctx, (size_t)(H * OW * C) * sizeof *mid, &st);
  if (!mid) return st;
  const float *gv = sm_tensor_data(g);
  float *o = sm_tensor_data(out);
  const int64_t grow = OW * C;
  for (int64_t b = 0; b < B; b++) {
    memset(mid, 0, (size_t)(H * grow) * sizeof *mid);
    for (int64_t y = 0; y < OH; y++) {
      const int64_t st0 = rows.start[y], n = (st0 + rows.size < H ? st0 + rows.size : H) - st0;
      const float *src = gv + (b * OH + y) * grow;
      for (int64_t k = 0; k < n; k++) {
        const float w = rows.w[y * rows.size + k];
        if (w == 0.0f) continue;
        float *dst = mid + (st0 + k) * grow;
        for (int64_t e = 0; e < grow; e++) dst[e] += w * src[e];
      }
    }
    for (int64_t i = 0; i < H; i++) {
      float *orow = o + (b * H + i) * W * C;
      const float *mrow = mid + i * grow;
      for (int64_t x = 0; x < OW; x++) {
        const int64_t st0 = cols.start[x], n = (st0 + cols.size < W ? st0 + cols.size : W) - st0;
        for (int64_t k = 0; k < n; k++) {
          const float w = cols.w[x * cols.size + k];
          if (w == 0.0f) continue;
          for (int64_t c = 0; c < C; c++) orow[(st0 + k) * C + c] += w * mrow[x * C + c];
        }
      }
    }
  }
  return NULL;
}

const sm_kernel sm_kernels_image_transform[] = {
    {"ScaleAndTranslateGrad", sat_prepare, satg_compute, sm__free, 0},
    {"CropAndResize", crop_prepare, crop_compute, sm__free, 0},
    {"ImageProjectiveTransformV2", proj_prepare, proj_compute, sm__free, 0},
    {"ImageProjectiveTransformV3", proj_prepare, proj_compute, sm__free, 0},
    {"ScaleAndTranslate", sat_prepare, sat_compute, sm__free, 0},
    {NULL, NULL, NULL, NULL, 0},
};
