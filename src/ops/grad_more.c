/* grad_more.c - the grad_more kernel family: the remaining gradient ops a saved train step holds.
 * CholeskyGrad (tf.linalg.cholesky's gradient), QuantizeAndDequantizeV4Grad (the straight-through
 * gradient of tf.quantization.quantize_and_dequantize_v2), CropAndResizeGradImage and
 * CropAndResizeGradBoxes (tf.image.crop_and_resize's gradients). IgammaGradA and RandomGammaGrad
 * are binary math ops (math_binary.c, with broadcasting). SymbolicGradient is refused at load.
 *
 * TensorFlow's kernels are the reference: cholesky_grad.cc (the result is Murray's symmetric
 * sym(L^-T Phi(L^T tril(grad)) L^-1), Phi the lower triangle with its diagonal halved; only the
 * lower triangles of l and grad are read; computed here in double, float rounded once),
 * quantize_and_dequantize_op.cc (the gradient where min <= input <= max, zero elsewhere; zero min
 * and max gradients), crop_and_resize_op.cc (the forward's sample positions, box by box, the
 * image gradient accumulated in T, the boxes' in float). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

static int is_float(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE; }

/* ---- CholeskyGrad ----------------------------------------------------------------------------- */

static sm_status *chol_grad_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *l = sm__kctx_input(ctx, 0), *g = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(l), r = sm_tensor_rank(l);
  char a[128], b[128];
  if (!is_float(dt) || sm_tensor_dtype(g) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "CholeskyGrad: l and grad must be float or double and of one dtype, got %s and %s",
                         sm__array_dtype_str(dt), sm__array_dtype_str(sm_tensor_dtype(g)));
  if (r < 2) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got %d", r);
  const int64_t *d = sm_tensor_dims(l);
  if (d[r - 1] != d[r - 2])
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs must be a square matrices.");
  int same = sm_tensor_rank(g) == r;
  for (int i = 0; same && i < r; i++) same = sm_tensor_dims(g)[i] == d[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "Inputs (L and grad) must have the same shape. (l %s, grad %s)",
                         sm__array_shape_str(l, a, sizeof a), sm__array_shape_str(g, b, sizeof b));
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, r, d, &out);
  const int64_t n = d[r - 1], nn = n * n, batch = nn ? sm_tensor_num_elements(l) / nn : 0;
  if (s || nn == 0 || batch == 0) return s;
  if (n > 46340) return sm_status_new(SM_INVALID_ARGUMENT, "CholeskyGrad: matrices of %lld rows are too large", (long long)n);
  double *L = sm__kctx_scratch(ctx, (size_t)nn * 3 * sizeof(double), &s);
  if (!L) return s;
  double *P = L + nn, *S = P + nn;
  for (int64_t m = 0; m < batch; m++) {
    const int64_t o = m * nn;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        L[i * n + j] = j <= i ? sm__math_get_f64(l, o + i * n + j) : 0;
        S[i * n + j] = j <= i ? sm__math_get_f64(g, o + i * n + j) : 0; /* tril(grad) */
      }
    /* P = Phi(L^T tril(grad)) */
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) {
        double acc = 0;
        for (int64_t k = i; k < n; k++) acc += L[k * n + i] * S[k * n + j];
        P[i * n + j] = i == j ? 0.5 * acc : acc;
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) P[i * n + j] = 0;
    /* X = P L^-1: solve X L = P row by row (L lower: back substitution over columns) */
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = n - 1; j >= 0; j--) {
        double acc = P[i * n + j];
        for (int64_t k = j + 1; k < n; k++) acc -= P[i * n + k] * L[k * n + j];
        P[i * n + j] = acc / L[j * n + j];
      }
    /* S = L^-T X: solve L^T S = X column by column (L^T upper: back substitution over rows) */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = n - 1; i >= 0; i--) {
        double acc = P[i * n + j];
        for (int64_t k = i + 1; k < n; k++) acc -= L[k * n + i] * S[k * n + j];
        S[i * n + j] = acc / L[i * n + i];
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) sm__math_put_f64(out, o + i * n + j, 0.5 * (S[i * n + j] + S[j * n + i]));
  }
  sm__kctx_scratch_free(ctx, L);
  return NULL;
}

/* ---- QuantizeAndDequantizeV4Grad -------------------------------------------------------------- */

typedef struct {
  int64_t axis;
} qdq_state;

static sm_status *qdq_grad_prepare(const sm_node *node, void **state) {
  qdq_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->axis = -1;
  sm_status *st = sm__node_attr(node, "axis") ? sm__node_attr_int(node, "axis", &s->axis) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *qdq_grad_compute(const void *state, sm_kctx *ctx) {
  const qdq_state *st = state;
  const sm_tensor *g = sm__kctx_input(ctx, 0), *x = sm__kctx_input(ctx, 1), *mn = sm__kctx_input(ctx, 2),
                  *mx = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x);
  char a[128], b[128];
  if (!is_float(dt) || sm_tensor_dtype(g) != dt || sm_tensor_dtype(mn) != dt || sm_tensor_dtype(mx) != dt)
    return sm_status_new(SM_INVALID_ARGUMENT, "QuantizeAndDequantizeV4Grad: inputs must be float or double and of one dtype");
  int same = sm_tensor_rank(g) == r;
  for (int i = 0; same && i < r; i++) same = sm_tensor_dims(g)[i] == sm_tensor_dims(x)[i];
  if (!same)
    return sm_status_new(SM_INVALID_ARGUMENT, "gradient and input must be the same size: %s vs %s",
                         sm__array_shape_str(g, a, sizeof a), sm__array_shape_str(x, b, sizeof b));
  if (st->axis < -1 || st->axis >= (r > 0 ? r : 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "Axis should be -1 or 0 or a positive value less than %dbut given axis value was %lld",
                         r, (long long)st->axis); /* TF's words, its missing space too */
  int64_t depth = st->axis == -1 ? 1 : sm_tensor_dims(x)[st->axis];
  if (st->axis == -1) {
    if (sm_tensor_rank(mn) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "input_min must be a scalar if axis is unspecified, got %s", sm__array_shape_str(mn, a, sizeof a));
    if (sm_tensor_rank(mx) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "input_max must be a scalar if axis is unspecified, got %s", sm__array_shape_str(mx, a, sizeof a));
  } else {
    if (sm_tensor_rank(mn) != 1 || sm_tensor_dims(mn)[0] != depth)
      return sm_status_new(SM_INVALID_ARGUMENT, "min has incorrect size, expected %lld was %lld", (long long)depth,
                           (long long)sm_tensor_num_elements(mn));
    if (sm_tensor_rank(mx) != 1 || sm_tensor_dims(mx)[0] != depth)
      return sm_status_new(SM_INVALID_ARGUMENT, "max has incorrect size, expected %lld was %lld", (long long)depth,
                           (long long)sm_tensor_num_elements(mx));
  }
  sm_tensor *o0, *o1, *o2;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, r, sm_tensor_dims(x), &o0);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, dt, sm_tensor_rank(mn), sm_tensor_dims(mn), &o1);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, dt, sm_tensor_rank(mx), sm_tensor_dims(mx), &o2);
  if (s) return s;
  int64_t inner = 1, n = sm_tensor_num_elements(x);
  for (int i = (int)st->axis + 1; st->axis >= 0 && i < r; i++) inner *= sm_tensor_dims(x)[i];
  for (int64_t i = 0; i < n; i++) {
    int64_t c = depth > 0 ? (i / inner) % depth : 0;
    double lo = sm__math_get_f64(mn, c), hi = sm__math_get_f64(mx, c), v = sm__math_get_f64(x, i);
    sm__math_put_f64(o0, i, v >= lo && v <= hi ? sm__math_get_f64(g, i) : 0);
  }
  return NULL;
}

/* ---- CropAndResizeGradImage / CropAndResizeGradBoxes ----------------------------------------- */

typedef struct {
  int nearest;
  int boxes; /* GradBoxes */
} crg_state;

static sm_status *crg_prepare(const sm_node *node, void **state) {
  crg_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->boxes = !strcmp(sm__node_op(node), "CropAndResizeGradBoxes");
  const char *m = "bilinear";
  size_t len = 8;
  const Tensorflow__AttrValue *av = sm__node_attr(node, "method");
  if (av && av->value_case == TENSORFLOW__ATTR_VALUE__VALUE_S) m = (const char *)av->s.data, len = av->s.len;
  if (len == 7 && !memcmp(m, "nearest", 7) && !s->boxes) {
    s->nearest = 1;
  } else if (!(len == 8 && !memcmp(m, "bilinear", 8))) {
    sm_status *st = sm_status_new(SM_INVALID_ARGUMENT, "%s: method must be %s, not '%.*s'", sm__node_op(node),
                                  s->boxes ? "'bilinear'" : "'bilinear' or 'nearest'", (int)(len > 64 ? 64 : len), m);
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* grads [B, CH, CW, D] float, boxes [B, 4] float, box_ind [B] int32: their checks (TF's messages). */
static sm_status *crg_check(const sm_tensor *grads, const sm_tensor *boxes, const sm_tensor *bi) {
  char a[128];
  if (sm_tensor_rank(grads) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "grads image must be 4-D%s", sm__array_shape_str(grads, a, sizeof a));
  if (sm_tensor_dims(grads)[1] <= 0 || sm_tensor_dims(grads)[2] <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "grads dimensions must be positive");
  if (sm_tensor_rank(boxes) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be 2-D%s", sm__array_shape_str(boxes, a, sizeof a));
  if (sm_tensor_rank(bi) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "box_index must be 1-D%s", sm__array_shape_str(bi, a, sizeof a));
  int64_t nb = sm_tensor_dims(boxes)[0];
  if (sm_tensor_dims(boxes)[1] != 4 || sm_tensor_dims(bi)[0] != nb)
    return sm_status_new(SM_INVALID_ARGUMENT, "boxes must have 4 columns and box_index one entry a box");
  if (sm_tensor_dims(grads)[0] != nb) return sm_status_new(SM_INVALID_ARGUMENT, "boxes and grads have incompatible shape");
  if (sm_tensor_dtype(grads) != SM_FLOAT || sm_tensor_dtype(boxes) != SM_FLOAT || sm_tensor_dtype(bi) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "grads and boxes must be float and box_ind int32");
  return NULL;
}

static sm_status *crg_box_index(const sm_tensor *bi, int64_t batch) {
  const int32_t *v = sm_tensor_data(bi);
  for (int64_t b = 0; b < sm_tensor_num_elements(bi); b++)
    if (v[b] < 0 || v[b] >= batch)
      return sm_status_new(SM_OUT_OF_RANGE, "box_index has values outside [0, batch_size)");
  return NULL;
}

static sm_status *crg_image_compute(const crg_state *st, sm_kctx *ctx) {
  const sm_tensor *grads = sm__kctx_input(ctx, 0), *boxes = sm__kctx_input(ctx, 1), *bi = sm__kctx_input(ctx, 2),
                  *isz = sm__kctx_input(ctx, 3);
  const sm_node *node = sm__kctx_node(ctx);
  int dt = SM_FLOAT;
  const Tensorflow__AttrValue *av = sm__node_attr(node, "T");
  if (av && av->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE) dt = (int)av->type;
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF)
    return sm_status_new(SM_INVALID_ARGUMENT, "CropAndResizeGradImage: T must be float, double or half, not %s", sm__array_dtype_str(dt));
  sm_status *s = crg_check(grads, boxes, bi);
  if (s) return s;
  char a[128];
  if (sm_tensor_rank(isz) != 1 || sm_tensor_dims(isz)[0] != 4 || sm_tensor_dtype(isz) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "image_size must have 4 elements%s",
                         sm__array_shape_str(isz, a, sizeof a));
  const int32_t *iv = sm_tensor_data(isz);
  const int64_t B = iv[0], H = iv[1], W = iv[2], D = iv[3];
  if (H <= 0 || W <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "image dimensions must be positive");
  if (B <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "batch size must be positive");
  if (D != sm_tensor_dims(grads)[3]) return sm_status_new(SM_INVALID_ARGUMENT, "image_size and grads are incompatible");
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, dt, 4, (int64_t[]){B, H, W, D}, &out);
  if (!s) s = crg_box_index(bi, B);
  if (s) return s;
  const int64_t nb = sm_tensor_dims(boxes)[0], CH = sm_tensor_dims(grads)[1], CW = sm_tensor_dims(grads)[2];
  const float *bx = sm_tensor_data(boxes), *gv = sm_tensor_data(grads);
  const int32_t *biv = sm_tensor_data(bi);
#define CRG_ADD(idx, v)                                                                   \
  do {                                                                                    \
    int64_t k_ = (idx);                                                                   \
    if (dt == SM_FLOAT) ((float *)sm_tensor_data(out))[k_] += (float)(v);                 \
    else if (dt == SM_DOUBLE) ((double *)sm_tensor_data(out))[k_] += (double)(float)(v);  \
    else sm__math_put_f64(out, k_, (float)sm__math_get_f64(out, k_) + sm__half_to_f32(sm__f32_to_half((float)(v)))); \
  } while (0)
  for (int64_t b = 0; b < nb; b++) {
    const float y1 = bx[4 * b], x1 = bx[4 * b + 1], y2 = bx[4 * b + 2], x2 = bx[4 * b + 3];
    const int64_t base = (int64_t)biv[b] * H * W * D;
    const float hs = CH > 1 ? (y2 - y1) * (float)(H - 1) / (float)(CH - 1) : 0;
    const float ws = CW > 1 ? (x2 - x1) * (float)(W - 1) / (float)(CW - 1) : 0;
    for (int64_t y = 0; y < CH; y++) {
      const float in_y = CH > 1 ? y1 * (float)(H - 1) + (float)y * hs : 0.5f * (y1 + y2) * (float)(H - 1);
      if (!(in_y >= 0 && in_y <= (float)(H - 1))) continue;
      const int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y);
      const float yl = in_y - (float)ty;
      for (int64_t x = 0; x < CW; x++) {
        const float in_x = CW > 1 ? x1 * (float)(W - 1) + (float)x * ws : 0.5f * (x1 + x2) * (float)(W - 1);
        if (!(in_x >= 0 && in_x <= (float)(W - 1))) continue;
        const float *gr = gv + ((b * CH + y) * CW + x) * D;
        if (st->nearest) {
          const int64_t cx = (int64_t)roundf(in_x), cy = (int64_t)roundf(in_y);
          for (int64_t c = 0; c < D; c++) CRG_ADD(base + (cy * W + cx) * D + c, gr[c]);
          continue;
        }
        const int64_t lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x);
        const float xl = in_x - (float)lx;
        for (int64_t c = 0; c < D; c++) {
          const float dtop = (1 - yl) * gr[c], dbot = yl * gr[c];
          CRG_ADD(base + (ty * W + lx) * D + c, (1 - xl) * dtop);
          CRG_ADD(base + (ty * W + rx) * D + c, xl * dtop);
          CRG_ADD(base + (by * W + lx) * D + c, (1 - xl) * dbot);
          CRG_ADD(base + (by * W + rx) * D + c, xl * dbot);
        }
      }
    }
  }
#undef CRG_ADD
  return NULL;
}

static sm_status *crg_boxes_compute(sm_kctx *ctx) {
  const sm_tensor *grads = sm__kctx_input(ctx, 0), *img = sm__kctx_input(ctx, 1), *boxes = sm__kctx_input(ctx, 2),
                  *bi = sm__kctx_input(ctx, 3);
  sm_status *s = crg_check(grads, boxes, bi);
  if (s) return s;
  char a[128];
  int dt = sm_tensor_dtype(img);
  if (sm_tensor_rank(img) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input image must be 4-D%s", sm__array_shape_str(img, a, sizeof a));
  if (!(is_float(dt) || dt == SM_HALF || dt == SM_INT8 || dt == SM_UINT8 || dt == SM_INT16 || dt == SM_UINT16 ||
        dt == SM_INT32 || dt == SM_INT64))
    return sm_status_new(SM_INVALID_ARGUMENT, "CropAndResizeGradBoxes of %s images is not supported", sm__array_dtype_str(dt));
  const int64_t *id = sm_tensor_dims(img);
  const int64_t B = id[0], H = id[1], W = id[2], D = id[3];
  if (H <= 0 || W <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "image dimensions must be positive");
  if (D != sm_tensor_dims(grads)[3]) return sm_status_new(SM_INVALID_ARGUMENT, "image, grads depth differ");
  const int64_t nb = sm_tensor_dims(boxes)[0], CH = sm_tensor_dims(grads)[1], CW = sm_tensor_dims(grads)[2];
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 2, (int64_t[]){nb, 4}, &out);
  if (!s) s = crg_box_index(bi, B);
  if (s) return s;
  const float *bx = sm_tensor_data(boxes), *gv = sm_tensor_data(grads);
  const int32_t *biv = sm_tensor_data(bi);
  float *o = sm_tensor_data(out);
  for (int64_t b = 0; b < nb; b++) {
    const float y1 = bx[4 * b], x1 = bx[4 * b + 1], y2 = bx[4 * b + 2], x2 = bx[4 * b + 3];
    const int64_t base = (int64_t)biv[b] * H * W * D;
    const float hr = CH > 1 ? (float)(H - 1) / (float)(CH - 1) : 0, wr = CW > 1 ? (float)(W - 1) / (float)(CW - 1) : 0;
    const float hs = CH > 1 ? (y2 - y1) * hr : 0, ws = CW > 1 ? (x2 - x1) * wr : 0;
    for (int64_t y = 0; y < CH; y++) {
      const float in_y = CH > 1 ? y1 * (float)(H - 1) + (float)y * hs : 0.5f * (y1 + y2) * (float)(H - 1);
      if (!(in_y >= 0 && in_y <= (float)(H - 1))) continue;
      const int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y);
      const float yl = in_y - (float)ty;
      for (int64_t x = 0; x < CW; x++) {
        const float in_x = CW > 1 ? x1 * (float)(W - 1) + (float)x * ws : 0.5f * (x1 + x2) * (float)(W - 1);
        if (!(in_x >= 0 && in_x <= (float)(W - 1))) continue;
        const int64_t lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x);
        const float xl = in_x - (float)lx;
        for (int64_t c = 0; c < D; c++) {
          const float tl = (float)sm__math_get_f64(img, base + (ty * W + lx) * D + c), tr = (float)sm__math_get_f64(img, base + (ty * W + rx) * D + c);
          const float bl = (float)sm__math_get_f64(img, base + (by * W + lx) * D + c), br = (float)sm__math_get_f64(img, base + (by * W + rx) * D + c);
          const float gy = (1 - xl) * (bl - tl) + xl * (br - tr), gx = (1 - yl) * (tr - tl) + yl * (br - bl);
          const float g = gv[((b * CH + y) * CW + x) * D + c];
          if (CH > 1) {
            o[4 * b] += g * gy * ((float)(H - 1) - (float)y * hr);
            o[4 * b + 2] += g * gy * ((float)y * hr);
          } else {
            o[4 * b] += g * gy * 0.5f * (float)(H - 1);
            o[4 * b + 2] += g * gy * 0.5f * (float)(H - 1);
          }
          if (CW > 1) {
            o[4 * b + 1] += g * gx * ((float)(W - 1) - (float)x * wr);
            o[4 * b + 3] += g * gx * ((float)x * wr);
          } else {
            o[4 * b + 1] += g * gx * 0.5f * (float)(W - 1);
            o[4 * b + 3] += g * gx * 0.5f * (float)(W - 1);
          }
        }
      }
    }
  }
  return NULL;
}

static sm_status *crg_compute(const void *state, sm_kctx *ctx) {
  const crg_state *st = state;
  return st->boxes ? crg_boxes_compute(ctx) : crg_image_compute(st, ctx);
}

/* ---- SymbolicGradient --------------------------------------------------------------------------
 * TF's runtime builds this gradient from function f's graph with its C++ gradient registry (TF1's
 * tf.gradients of a Defun). That registry is not here: refused at load, naming the node and f. */
static sm_status *symgrad_prepare(const sm_node *node, void **state) {
  (void)state;
  const Tensorflow__AttrValue *a = sm__node_attr(node, "f");
  const char *f = a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && a->func && a->func->name ? a->func->name : "?";
  return sm_status_new(SM_UNIMPLEMENTED,
                       "SymbolicGradient of function '%s' (a gradient TensorFlow's runtime derives with its C++ gradient "
                       "registry) is not supported; save the gradient in the graph (tf.GradientTape)",
                       f);
}

static sm_status *symgrad_compute(const void *state, sm_kctx *ctx) {
  (void)state, (void)ctx;
  return sm_status_new(SM_UNIMPLEMENTED, "SymbolicGradient is not supported");
}

const sm_kernel sm_kernels_grad_more[] = {
    {"SymbolicGradient", symgrad_prepare, symgrad_compute, NULL, 0},
    {"CholeskyGrad", NULL, chol_grad_compute, NULL, 0},
    {"QuantizeAndDequantizeV4Grad", qdq_grad_prepare, qdq_grad_compute, free, 0},
    {"CropAndResizeGradImage", crg_prepare, crg_compute, free, 0},
    {"CropAndResizeGradBoxes", crg_prepare, crg_compute, free, 0},
    {0},
};
