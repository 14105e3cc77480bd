/* image.c - the image resize kernels: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and
 * ResizeArea (NHWC images, a [2] int32 size input; attrs align_corners, half_pixel_centers).
 *
 * Semantics are TensorFlow's CPU kernels' (image_resizer_state.h and resize_*_op.cc), float for
 * float: the same scale (CalculateResizeScale), the same scalers (legacy x*scale, half-pixel
 * (x+0.5)*scale-0.5), the same 1024-entry cubic coefficient tables (a = -0.75 legacy, Keys'
 * a = -0.5 with out-of-image taps zeroed and renormalised for half-pixel centers), and the same
 * summation order, so the answers agree with TF to float rounding. Every input dtype TF registers
 * (the real number types) is read as float; the output is float but for ResizeNearestNeighbor,
 * which copies elements and keeps the dtype. Output rows (b, y) are spread over the runtime's
 * pool. Validation and its messages follow ImageResizerState. Never writes its inputs. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h" /* half / bfloat16 conversions */
#include "ops/quant_int.h" /* sm__image_resize_validate, for quantized_image.c */

enum { RS_BILINEAR, RS_NEAREST, RS_BICUBIC, RS_AREA };
#define CUBIC_TABLE 1024

typedef struct resize_state {
  int kind, align_corners, half_pixel;
  float *cubic; /* bicubic: (CUBIC_TABLE + 1) * 2 coefficients for the scaler in use */
} resize_state;

static void resize_release(void *p) {
  resize_state *s = p;
  if (s) free(s->cubic);
  free(s);
}

/* TF's InitCoeffsTable: computed in double from a float x, stored as float. */
static void cubic_table(float *t, double a) {
  for (int i = 0; i <= CUBIC_TABLE; i++) {
    float x = (float)(i * 1.0 / CUBIC_TABLE);
    t[i * 2] = (float)(((a + 2) * x - (a + 3)) * x * x + 1);
    x = (float)(x + 1.0);
    t[i * 2 + 1] = (float)(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
}

static sm_status *bool_attr(const sm_node *n, const char *name, int *v) {
  *v = 0;
  if (!sm__node_attr(n, name)) return NULL; /* stripped default: false */
  return sm__node_attr_bool(n, name, v);
}

static sm_status *resize_prepare(const sm_node *n, void **state) {
  resize_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(n);
  s->kind = !strncmp(op, "ResizeBilinear", 14)          ? RS_BILINEAR /* and their ...Grad */
            : !strncmp(op, "ResizeNearestNeighbor", 21) ? RS_NEAREST
            : !strncmp(op, "ResizeBicubic", 13)         ? RS_BICUBIC
                                                        : RS_AREA;
  sm_status *st = bool_attr(n, "align_corners", &s->align_corners);
  if (!st && s->kind != RS_AREA) st = bool_attr(n, "half_pixel_centers", &s->half_pixel);
  if (!st && s->kind == RS_BICUBIC) {
    s->cubic = malloc((CUBIC_TABLE + 1) * 2 * sizeof *s->cubic);
    if (!s->cubic)
      st = sm_status_new(SM_NO_MEMORY, "out of memory");
    else
      cubic_table(s->cubic, s->half_pixel ? -0.5 : -0.75);
  }
  if (st) {
    resize_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* ---- the work of one call ------------------------------------------------------------------ */
typedef struct { int64_t lower, upper; float lerp; } lin_w; /* bilinear taps, x ones times C */
typedef struct { int64_t idx[4]; float w[4]; } cubic_w;     /* bicubic taps, x ones times C */
typedef struct { int64_t start, end; float start_scale, end_scale; } area_x;

typedef struct resize_job {
  const resize_state *s;
  int64_t N, H, W, C, OH, OW;
  float hs, ws;       /* height and width scale */
  const float *in;    /* NHWC as float (all but nearest) */
  float *out;
  const char *in_raw; /* nearest: the input's bytes, esize bytes an element */
  char *out_raw;
  size_t esize;
  const lin_w *lx, *ly;
  const cubic_w *cx;
  const area_x *ax;
  const int64_t *ay_off; /* area: rows of output row y are ay_row[ay_off[y] .. ay_off[y+1]) */
  const int64_t *ay_row;
  const float *ay_scale;
  float area_scale;
} resize_job;

static inline int64_t bound(int64_t v, int64_t limit) { return v < 0 ? 0 : v >= limit ? limit - 1 : v; }

static inline float scaled(int half_pixel, int64_t x, float scale) {
  return half_pixel ? ((float)x + 0.5f) * scale - 0.5f : (float)x * scale;
}

static void lin_weights(int half_pixel, int64_t out, int64_t in, float scale, int64_t mul, lin_w *w) {
  for (int64_t i = 0; i < out; i++) {
    float f = scaled(half_pixel, i, scale), ff = floorf(f);
    int64_t lo = (int64_t)ff, hi = (int64_t)ceilf(f);
    w[i].lower = (lo < 0 ? 0 : lo) * mul;
    w[i].upper = (hi < in - 1 ? hi : in - 1) * mul;
    w[i].lerp = f - ff;
  }
}

/* TF's GetWeightsAndIndices. */
static void cubic_weights(const resize_state *s, int64_t out_loc, int64_t limit, float scale, int64_t mul, cubic_w *w) {
  const float *t = s->cubic;
  float f = scaled(s->half_pixel, out_loc, scale);
  int64_t loc = (int64_t)floorf(f);
  float delta = f - (float)loc;
  int64_t off = (int64_t)lrintf(delta * CUBIC_TABLE);
  float c[4] = {t[off * 2 + 1], t[off * 2], t[(CUBIC_TABLE - off) * 2], t[(CUBIC_TABLE - off) * 2 + 1]};
  for (int k = 0; k < 4; k++) {
    int64_t want = loc - 1 + k;
    w->idx[k] = bound(want, limit);
    w->w[k] = s->half_pixel && w->idx[k] != want ? 0.0f : c[k];
  }
  if (s->half_pixel) {
    float sum = w->w[0] + w->w[1] + w->w[2] + w->w[3];
    if (fabsf(sum) >= 1000.0f * 1.17549435e-38f) {
      float inv = 1.0f / sum;
      for (int k = 0; k < 4; k++) w->w[k] *= inv;
    }
  }
  for (int k = 0; k < 4; k++) w->idx[k] *= mul;
}

static void bilinear_rows(const resize_job *j, int64_t begin, int64_t end) {
  const int64_t C = j->C, row = j->W * C;
  for (int64_t r = begin; r < end; r++) {
    int64_t b = r / j->OH, y = r % j->OH;
    const float *base = j->in + b * j->H * row;
    const float *top = base + j->ly[y].lower * row, *bot = base + j->ly[y].upper * row;
    float yl = j->ly[y].lerp;
    float *o = j->out + r * j->OW * C;
    for (int64_t x = 0; x < j->OW; x++) {
      const lin_w *w = &j->lx[x];
      for (int64_t c = 0; c < C; c++) {
        float tl = top[w->lower + c], tr = top[w->upper + c], bl = bot[w->lower + c], br = bot[w->upper + c];
        float t = tl + (tr - tl) * w->lerp;
        float bb = bl + (br - bl) * w->lerp;
        o[x * C + c] = t + (bb - t) * yl;
      }
    }
  }
}

static void bicubic_rows(const resize_job *j, int64_t begin, int64_t end) {
  const int64_t C = j->C, row = j->W * C;
  for (int64_t r = begin; r < end; r++) {
    int64_t b = r / j->OH, y = r % j->OH;
    cubic_w yw;
    cubic_weights(j->s, y, j->H, j->hs, 1, &yw);
    const float *base = j->in + b * j->H * row;
    const float *p[4];
    for (int k = 0; k < 4; k++) p[k] = base + yw.idx[k] * row;
    float *o = j->out + r * j->OW * C;
    for (int64_t x = 0; x < j->OW; x++) {
      const cubic_w *xw = &j->cx[x];
      for (int64_t c = 0; c < C; c++) {
        float v[4];
        for (int k = 0; k < 4; k++) {
          int64_t e = xw->idx[k] + c;
          v[k] = p[0][e] * yw.w[0] + p[1][e] * yw.w[1] + p[2][e] * yw.w[2] + p[3][e] * yw.w[3];
        }
        o[x * C + c] = v[0] * xw->w[0] + v[1] * xw->w[1] + v[2] * xw->w[2] + v[3] * xw->w[3];
      }
    }
  }
}

static void area_rows(const resize_job *j, int64_t begin, int64_t end) {
  const int64_t C = j->C, row = j->W * C;
  for (int64_t r = begin; r < end; r++) {
    int64_t b = r / j->OH, y = r % j->OH;
    const float *base = j->in + b * j->H * row;
    float *o = j->out + r * j->OW * C;
    for (int64_t x = 0; x < j->OW; x++) {
      const area_x *ax = &j->ax[x];
      for (int64_t c = 0; c < C; c++) {
        float sum = 0;
        for (int64_t i = j->ay_off[y]; i < j->ay_off[y + 1]; i++) {
          const float *p = base + j->ay_row[i] * row + c;
          float sy = p[bound(ax->start, j->W) * C] * ax->start_scale;
          if (ax->start + 1 != ax->end) {
            for (int64_t xx = ax->start + 1; xx < ax->end - 1; xx++) sy += p[bound(xx, j->W) * C];
            sy += p[bound(ax->end - 1, j->W) * C] * ax->end_scale;
          }
          sum += sy * j->ay_scale[i];
        }
        o[x * C + c] = sum * j->area_scale;
      }
    }
  }
}

static inline int64_t nn_index(const resize_state *s, int64_t i, float scale, int64_t in) {
  float f = s->half_pixel ? ((float)i + 0.5f) * scale : (float)i * scale;
  int64_t v = s->align_corners ? (int64_t)roundf(f) : (int64_t)floorf(f);
  if (v > in - 1) v = in - 1;
  if (s->half_pixel && v < 0) v = 0;
  return v;
}

static void nearest_rows(const resize_job *j, int64_t begin, int64_t end) {
  const size_t px = (size_t)j->C * j->esize;
  for (int64_t r = begin; r < end; r++) {
    int64_t b = r / j->OH, y = r % j->OH;
    int64_t iy = nn_index(j->s, y, j->hs, j->H);
    const char *src = j->in_raw + (size_t)((b * j->H + iy) * j->W) * px;
    char *o = j->out_raw + (size_t)(r * j->OW) * px;
    for (int64_t x = 0; x < j->OW; x++) memcpy(o + (size_t)x * px, src + (size_t)nn_index(j->s, x, j->ws, j->W) * px, px);
  }
}

static void resize_rows(void *ctx, int64_t begin, int64_t end) {
  const resize_job *j = ctx;
  switch (j->s->kind) {
    case RS_BILINEAR: bilinear_rows(j, begin, end); break;
    case RS_NEAREST: nearest_rows(j, begin, end); break;
    case RS_BICUBIC: bicubic_rows(j, begin, end); break;
    default: area_rows(j, begin, end); break;
  }
}

/* ---- dtypes ---------------------------------------------------------------------------------- */
static int real_dtype(int dt) {
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: case SM_INT8: case SM_UINT8: case SM_INT16:
    case SM_UINT16: case SM_INT32: case SM_INT64: return 1;
    default: return 0;
  }
}

/* static_cast<float> of every element (the dtypes of real_dtype). */
static void to_float(int dt, const void *src, float *d, int64_t n) {
#define CVT(T) for (int64_t i = 0; i < n; i++) d[i] = (float)((const T *)src)[i]
  switch (dt) {
    case SM_DOUBLE: CVT(double); break;
    case SM_INT8: CVT(int8_t); break;
    case SM_UINT8: CVT(uint8_t); break;
    case SM_INT16: CVT(int16_t); break;
    case SM_UINT16: CVT(uint16_t); break;
    case SM_INT32: CVT(int32_t); break;
    case SM_INT64: CVT(int64_t); break;
    case SM_HALF: for (int64_t i = 0; i < n; i++) d[i] = sm__half_to_f32(((const uint16_t *)src)[i]); break;
    case SM_BFLOAT16: for (int64_t i = 0; i < n; i++) d[i] = sm__bf16_to_f32(((const uint16_t *)src)[i]); break;
    default: memcpy(d, src, (size_t)n * sizeof *d); break;
  }
#undef CVT
}

/* TF's CalculateResizeScale (2.21: align_corners only when both sizes exceed 1). */
static float resize_scale(int64_t in, int64_t out, int align_corners) {
  return align_corners && in > 1 && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

/* ImageResizerState::ValidateAndCalculateOutputSize: fills j's sizes and scales. */
static sm_status *resize_validate(const resize_state *s, const sm_tensor *img, const sm_tensor *size, resize_job *j) {
  char buf[128];
  if (s->half_pixel && s->align_corners)
    return sm_status_new(SM_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
  int r = sm_tensor_rank(img);
  const int64_t *d = sm_tensor_dims(img);
  if (r != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s", sm_shape_str(r, d, buf, sizeof buf));
  j->N = d[0], j->H = d[1], j->W = d[2], j->C = d[3];
  if (j->C <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "image must have at least one channel");
  if (j->H <= 0 || j->W <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "input image must be of non-zero size");
  if (j->H >= INT32_MAX || j->W >= INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "input sizes must be between 0 and max int32");
  int sr = sm_tensor_rank(size);
  if (sr != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s",
                         sm_shape_str(sr, sm_tensor_dims(size), buf, sizeof buf));
  if (sm_tensor_num_elements(size) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must have two elements%s",
                         sm_shape_str(sr, sm_tensor_dims(size), buf, sizeof buf));
  if (sm_tensor_dtype(size) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "size must be int32, not %s", sm_dtype_name(sm_tensor_dtype(size)));
  const int32_t *sv = sm_tensor_data(size);
  j->OH = sv[0], j->OW = sv[1];
  if (j->OH <= 0 || j->OW <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "output dimensions must be positive");
  j->hs = resize_scale(j->H, j->OH, s->align_corners);
  j->ws = resize_scale(j->W, j->OW, s->align_corners);
  if (!(ceilf((float)(j->OH - 1) * j->hs) <= (float)INT64_MAX))
    return sm_status_new(SM_INVALID_ARGUMENT, "input image height scale would cause an overflow");
  if (!(ceilf((float)(j->OW - 1) * j->ws) <= (float)INT_MAX))
    return sm_status_new(SM_INVALID_ARGUMENT, "input image width scale would cause an overflow");
  if (s->kind == RS_NEAREST && (j->H >= (1 << 24) || j->W >= (1 << 24)))
    return sm_status_new(SM_INVALID_ARGUMENT, "nearest neighbor requires max height & width of 2^24");
  return NULL;
}

/* ResizeBilinear's checks and scales for quantized_image.c's QuantizedResizeBilinear (TF builds its
 * ImageResizerState with half_pixel_centers false there, whatever the attr says) */
sm_status *sm__image_resize_validate(const sm_tensor *img, const sm_tensor *size, int align_corners, int64_t *oh,
                                     int64_t *ow, float *hs, float *ws) {
  resize_state s = {RS_BILINEAR, align_corners, 0, NULL};
  resize_job j;
  memset(&j, 0, sizeof j);
  sm_status *st = resize_validate(&s, img, size, &j);
  if (!st) *oh = j.OH, *ow = j.OW, *hs = j.hs, *ws = j.ws;
  return st;
}

/* ResizeArea's per-row list of contributing input rows and their weights. */
static sm_status *area_rows_prepare(sm_kctx *ctx, resize_job *j) {
  sm_status *st = NULL;
  int64_t *off = sm__kctx_scratch(ctx, (size_t)(j->OH + 1) * sizeof *off, &st);
  if (!off) return st;
  off[0] = 0;
  for (int64_t y = 0; y < j->OH; y++) {
    float in_y = (float)y * j->hs, in_y1 = (float)(y + 1) * j->hs;
    off[y + 1] = off[y] + ((int64_t)ceilf(in_y1) - (int64_t)floorf(in_y));
  }
  int64_t *rows = sm__kctx_scratch(ctx, (size_t)off[j->OH] * sizeof *rows + 1, &st);
  float *sc = rows ? sm__kctx_scratch(ctx, (size_t)off[j->OH] * sizeof *sc + 1, &st) : NULL;
  if (!sc) return st;
  for (int64_t y = 0; y < j->OH; y++) {
    float in_y = (float)y * j->hs, in_y1 = (float)(y + 1) * j->hs;
    int64_t k = off[y];
    for (int64_t i = (int64_t)floorf(in_y); i < (int64_t)ceilf(in_y1); i++, k++) {
      if ((float)i < in_y)
        sc[k] = (float)(i + 1) > in_y1 ? j->hs : (float)(i + 1) - in_y;
      else
        sc[k] = (float)(i + 1) > in_y1 ? in_y1 - (float)i : 1.0f;
      rows[k] = bound(i, j->H);
    }
  }
  area_x *ax = sm__kctx_scratch(ctx, (size_t)j->OW * sizeof *ax, &st);
  if (!ax) return st;
  for (int64_t x = 0; x < j->OW; x++) {
    float in_x = (float)x * j->ws, in_x1 = (float)(x + 1) * j->ws;
    int64_t v = (int64_t)floorf(in_x);
    ax[x].start = v;
    ax[x].start_scale = (float)v < in_x ? ((float)(v + 1) > in_x1 ? j->ws : (float)(v + 1) - in_x)
                                        : ((float)(v + 1) > in_x1 ? in_x1 - (float)v : 1.0f);
    ax[x].end = (int64_t)ceilf(in_x1);
    v = ax[x].end - 1;
    ax[x].end_scale = (float)v < in_x ? ((float)(v + 1) > in_x1 ? j->ws : (float)(v + 1) - in_x)
                                      : ((float)(v + 1) > in_x1 ? in_x1 - (float)v : 1.0f);
  }
  j->ay_off = off, j->ay_row = rows, j->ay_scale = sc, j->ax = ax;
  j->area_scale = (float)(1.0 / (double)(j->hs * j->ws));
  return NULL;
}

static sm_status *resize_compute(const void *state, sm_kctx *ctx) {
  const resize_state *s = state;
  const sm_tensor *img = sm__kctx_input(ctx, 0), *size = sm__kctx_input(ctx, 1);
  resize_job j = {.s = s};
  sm_status *st = resize_validate(s, img, size, &j);
  if (st) return st;
  int dt = sm_tensor_dtype(img);
  if (!real_dtype(dt))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s of %s images is not supported", sm__node_op(sm__kctx_node(ctx)),
                         sm_dtype_name(dt));
  int64_t od[4] = {j.N, j.OH, j.OW, j.C};
  sm_tensor *out;
  st = sm__kctx_alloc_output_uninit(ctx, 0, s->kind == RS_NEAREST ? dt : SM_FLOAT, 4, od, &out);
  if (st) return st;
  int64_t nin = sm_tensor_num_elements(img), nout = sm_tensor_num_elements(out);
  if (nout == 0) return NULL;
  if (s->kind == RS_NEAREST) {
    j.in_raw = sm_tensor_data(img), j.out_raw = sm_tensor_data(out), j.esize = sm_dtype_size(dt);
  } else {
    j.out = sm_tensor_data(out);
    if (dt == SM_FLOAT) {
      j.in = sm_tensor_data(img);
    } else {
      float *f = sm__kctx_scratch(ctx, (size_t)nin * sizeof *f, &st);
      if (!f) return st;
      to_float(dt, sm_tensor_data(img), f, nin);
      j.in = f;
    }
    if (s->kind == RS_BILINEAR && j.OH == j.H && j.OW == j.W) { /* TF's no-op resize: a cast */
      memcpy(j.out, j.in, (size_t)nout * sizeof(float));
      return NULL;
    }
  }
  int64_t taps = 1;
  if (s->kind == RS_BILINEAR) {
    lin_w *lx = sm__kctx_scratch(ctx, (size_t)(j.OW + j.OH) * sizeof *lx, &st);
    if (!lx) return st;
    lin_weights(s->half_pixel, j.OW, j.W, j.ws, j.C, lx);
    lin_weights(s->half_pixel, j.OH, j.H, j.hs, 1, lx + j.OW);
    j.lx = lx, j.ly = lx + j.OW, taps = 4;
  } else if (s->kind == RS_BICUBIC) {
    cubic_w *cx = sm__kctx_scratch(ctx, (size_t)j.OW * sizeof *cx, &st);
    if (!cx) return st;
    for (int64_t x = 0; x < j.OW; x++) cubic_weights(s, x, j.W, j.ws, j.C, &cx[x]);
    j.cx = cx, taps = 20;
  } else if (s->kind == RS_AREA) {
    if ((st = area_rows_prepare(ctx, &j))) return st;
    taps = (int64_t)(j.hs + 2) * (int64_t)(j.ws + 2);
    if (taps < 1) taps = 1;
  }
  int64_t rows = j.N * j.OH, per_row = j.OW * j.C * taps;
  double work = (double)per_row * (double)rows;
  sm__parallel_for(work < 65536.0 ? NULL : sm__kctx_pool(ctx), rows, per_row >= 32768 ? 1 : 32768 / per_row,
                   resize_rows, &j);
  return NULL;
}

/* ---- ResizeBilinearGrad, ResizeBicubicGrad, ResizeNearestNeighborGrad (session 20, e1) ------
 * Each grads pixel (the resized image's) is added into the original pixels the forward read it
 * from, with the forward's weights (the same taps as above; scales from original over resized
 * size). As TF (resize_*_op.cc's ResizeGradImpl): the products in float, each cast to the output
 * dtype and added in it: the accumulator is rounded to that dtype after every add (half, bfloat16
 * and float), so the sums are TF's bit for bit up to summation order, which is TF's too. Output
 * [N, H, W, C] with N and C from grads, H and W from original_image (its dtype) or from size
 * (nearest: grads' dtype). */
static double round_to(int dt, double v) {
  switch (dt) {
    case SM_FLOAT: return (float)v;
    case SM_HALF: return sm__half_to_f32(sm__f32_to_half((float)v));
    case SM_BFLOAT16: return sm__bf16_to_f32(sm__f32_to_bf16((float)v));
    default: return v; /* double; integers sum exactly (in double: below 2^53) and wrap when stored */
  }
}

static sm_status *resize_grad_compute(const void *state, sm_kctx *ctx) {
  const resize_state *s = state;
  const sm_tensor *g = sm__kctx_input(ctx, 0), *orig = sm__kctx_input(ctx, 1);
  char buf[128];
  int nn = s->kind == RS_NEAREST;
  if (!nn && s->half_pixel && s->align_corners) /* (TF's nearest gradient takes both) */
    return sm_status_new(SM_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False.");
  if (sm_tensor_rank(g) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 4-dimensional%s", nn ? "input" : "input_grad",
                         sm_shape_str(sm_tensor_rank(g), sm_tensor_dims(g), buf, sizeof buf));
  const int64_t *gd = sm_tensor_dims(g);
  int64_t N = gd[0], OH = gd[1], OW = gd[2], C = gd[3], H, W;
  int gdt = sm_tensor_dtype(g), odt;
  if (nn) {
    if (sm_tensor_rank(orig) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s",
                           sm_shape_str(sm_tensor_rank(orig), sm_tensor_dims(orig), buf, sizeof buf));
    if (sm_tensor_num_elements(orig) != 2 || sm_tensor_dtype(orig) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "shape_t must have two elements%s",
                           sm_shape_str(sm_tensor_rank(orig), sm_tensor_dims(orig), buf, sizeof buf));
    H = ((const int32_t *)sm_tensor_data(orig))[0], W = ((const int32_t *)sm_tensor_data(orig))[1];
    if (H <= 0 || W <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "shape_t's elements must be positive");
    odt = gdt;
    if (!real_dtype(odt)) return sm__math_bad_dtype("ResizeNearestNeighborGrad", odt);
  } else {
    if (gdt != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "input_grad must be of type float%s", sm_dtype_name(gdt));
    if (sm_tensor_rank(orig) != 4)
      return sm_status_new(SM_INVALID_ARGUMENT, "original_image must be 4-dimensional%s",
                           sm_shape_str(sm_tensor_rank(orig), sm_tensor_dims(orig), buf, sizeof buf));
    H = sm_tensor_dims(orig)[1], W = sm_tensor_dims(orig)[2];
    if (H >= INT32_MAX || W >= INT32_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "original sizes must be between 0 and max int32");
    odt = sm_tensor_dtype(orig);
    if (odt != SM_FLOAT && odt != SM_DOUBLE && (s->kind == RS_BICUBIC || !sm__math_is_f16(odt))) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), odt);
  }
  int64_t od[4] = {N, H, W, C};
  sm_tensor *out;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, odt, 4, od, &out);
  int64_t nout = sm_tensor_num_elements(out), ng = sm_tensor_num_elements(g);
  if (st || nout == 0 || ng == 0) return st;
  float hs = resize_scale(H, OH, s->align_corners), ws = resize_scale(W, OW, s->align_corners);
  double *acc = sm__kctx_scratch(ctx, (size_t)nout * sizeof *acc, &st);
  if (!acc) return st;
  memset(acc, 0, (size_t)nout * sizeof *acc);
  double *gv = NULL; /* nearest: grads as doubles (integers exactly) */
  float *gf = NULL;
  if (nn) {
    if (!(gv = sm__kctx_scratch(ctx, (size_t)ng * sizeof *gv, &st))) return st;
    for (int64_t i = 0; i < ng; i++) gv[i] = sm__math_get_f64(g, i);
  } else {
    gf = (float *)sm_tensor_data(g);
  }
  for (int64_t b = 0; b < N; b++)
    for (int64_t y = 0; y < OH; y++) {
      if (sm__kctx_check_stop(ctx)) return sm__kctx_check_stop(ctx);
      for (int64_t x = 0; x < OW; x++) {
        int64_t gi = ((b * OH + y) * OW + x) * C;
        if (nn) {
          int64_t oy = nn_index(s, y, hs, H), ox = nn_index(s, x, ws, W);
          double *o = acc + ((b * H + oy) * W + ox) * C;
          for (int64_t c = 0; c < C; c++) o[c] = round_to(odt, o[c] + gv[gi + c]);
        } else if (s->kind == RS_BILINEAR) {
          /* lin_weights' taps for y and x */
          float fy = scaled(s->half_pixel, y, hs), fx = scaled(s->half_pixel, x, ws);
          int64_t ty = (int64_t)floorf(fy), by = (int64_t)ceilf(fy), lxi = (int64_t)floorf(fx), rx = (int64_t)ceilf(fx);
          ty = ty < 0 ? 0 : ty, by = by < H - 1 ? by : H - 1, lxi = lxi < 0 ? 0 : lxi, rx = rx < W - 1 ? rx : W - 1;
          float yl = fy - floorf(fy), xl = fx - floorf(fx), iyl = 1.0f - yl, ixl = 1.0f - xl;
          double *tl = acc + ((b * H + ty) * W + lxi) * C, *tr = acc + ((b * H + ty) * W + rx) * C;
          double *bl = acc + ((b * H + by) * W + lxi) * C, *br = acc + ((b * H + by) * W + rx) * C;
          for (int64_t c = 0; c < C; c++) {
            float v = gf[gi + c];
            tl[c] = round_to(odt, tl[c] + round_to(odt, v * iyl * ixl));
            tr[c] = round_to(odt, tr[c] + round_to(odt, v * iyl * xl));
            bl[c] = round_to(odt, bl[c] + round_to(odt, v * yl * ixl));
            br[c] = round_to(odt, br[c] + round_to(odt, v * yl * xl));
          }
        } else {
          cubic_w wy, wx;
          cubic_weights(s, y, H, hs, 1, &wy);
          cubic_weights(s, x, W, ws, 1, &wx);
          for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) {
              double *o = acc + ((b * H + wy.idx[i]) * W + wx.idx[k]) * C;
              for (int64_t c = 0; c < C; c++) o[c] = round_to(odt, o[c] + round_to(odt, gf[gi + c] * wy.w[i] * wx.w[k]));
            }
        }
      }
    }
  void *op = sm_tensor_data(out);
  for (int64_t i = 0; i < nout; i++) {
    double v = acc[i];
    switch (odt) {
      case SM_FLOAT: ((float *)op)[i] = (float)v; break;
      case SM_DOUBLE: ((double *)op)[i] = v; break;
      case SM_HALF: ((uint16_t *)op)[i] = sm__f32_to_half((float)v); break;
      case SM_BFLOAT16: ((uint16_t *)op)[i] = sm__f32_to_bf16((float)v); break;
      case SM_INT8: ((int8_t *)op)[i] = (int8_t)(int64_t)v; break;
      case SM_UINT8: ((uint8_t *)op)[i] = (uint8_t)(int64_t)v; break;
      case SM_INT16: ((int16_t *)op)[i] = (int16_t)(int64_t)v; break;
      case SM_UINT16: ((uint16_t *)op)[i] = (uint16_t)(int64_t)v; break;
      case SM_INT32: ((int32_t *)op)[i] = (int32_t)(uint32_t)(int64_t)v; break;
      default: ((int64_t *)op)[i] = (int64_t)v; break;
    }
  }
  return NULL;
}

const sm_kernel sm_kernels_image[] = {
    {"ResizeBicubicGrad", resize_prepare, resize_grad_compute, resize_release, 0},
    {"ResizeBilinearGrad", resize_prepare, resize_grad_compute, resize_release, 0},
    {"ResizeNearestNeighborGrad", resize_prepare, resize_grad_compute, resize_release, 0},
    {"ResizeArea", resize_prepare, resize_compute, resize_release, 0},
    {"ResizeBicubic", resize_prepare, resize_compute, resize_release, 0},
    {"ResizeBilinear", resize_prepare, resize_compute, resize_release, 0},
    {"ResizeNearestNeighbor", resize_prepare, resize_compute, resize_release, 0},
    {NULL, NULL, NULL, NULL, 0},
};
