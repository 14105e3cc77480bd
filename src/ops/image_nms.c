/* image_nms.c - the image_nms kernel family: non-max suppression as tf.image exports it
 * (found missing by tools/sweep_ops.py, session 17): NonMaxSuppression (V1, iou_threshold attr),
 * NonMaxSuppressionV2, V3 (score_threshold), V4 (pad_to_max_output_size, valid_outputs), V5
 * (soft-NMS with a Gaussian of sigma, selected_scores) and NonMaxSuppressionWithOverlaps, with
 * CombinedNonMaxSuppression (per batch and class, then merged by score; pad_per_class, clip_boxes), with
 * TF's greedy algorithm (non_max_suppression_op.cc): candidates above score_threshold taken in
 * descending score, each compared with the boxes selected since it was last looked at, from the
 * newest; without sigma an IoU above the threshold suppresses it, with sigma > 0 (soft-NMS) every
 * IoU reweighs it by exp(-0.5 sim^2 / sigma) and it goes back unless it fell to score_threshold. Boxes are [y1, x1, y2, x2] in either corner order;
 * a box of no area overlaps nothing. Equal scores are taken lowest index first (TF's heap leaves
 * that order unspecified). float and half boxes/scores; TF's messages for bad input. Checked
 * against TensorFlow by tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef struct nms_state {
  int version; /* 1..5; 0 = WithOverlaps */
  int pad;
  float iou_attr; /* V1 */
} nms_state;

static sm_status *nms_prepare(const sm_node *node, void **state) {
  nms_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *op = sm__node_op(node);
  s->version = !strcmp(op, "NonMaxSuppressionWithOverlaps") ? 0 : op[17] == 'V' ? op[18] - '0' : 1;
  s->iou_attr = 0.5f;
  sm_status *st = NULL;
  if (s->version == 1 && sm__node_attr(node, "iou_threshold")) st = sm__node_attr_float(node, "iou_threshold", &s->iou_attr);
  if (!st && sm__node_attr(node, "pad_to_max_output_size"))
    st = sm__node_attr_bool(node, "pad_to_max_output_size", &s->pad);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static double getf(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_HALF ? sm__half_to_f32(((const uint16_t *)sm_tensor_data(t))[i])
                                       : ((const float *)sm_tensor_data(t))[i];
}

static sm_status *scalar(const sm_tensor *t, const char *what, double *v) {
  if (sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 0-D, got shape [%lld]", what,
                         (long long)sm_tensor_num_elements(t));
  if (sm_tensor_dtype(t) == SM_INT32) *v = *(const int32_t *)sm_tensor_data(t);
  else if (sm_tensor_dtype(t) == SM_FLOAT || sm_tensor_dtype(t) == SM_HALF) *v = getf(t, 0);
  else return sm__math_bad_dtype(what, sm_tensor_dtype(t));
  return NULL;
}

/* Intersection over union of two [4] boxes (corners in any order; 0 when either is empty). */
static float iou_f(const float *bi, const float *bj) {
  float ymin_i = fminf(bi[0], bi[2]), xmin_i = fminf(bi[1], bi[3]), ymax_i = fmaxf(bi[0], bi[2]), xmax_i = fmaxf(bi[1], bi[3]);
  float ymin_j = fminf(bj[0], bj[2]), xmin_j = fminf(bj[1], bj[3]), ymax_j = fmaxf(bj[0], bj[2]), xmax_j = fmaxf(bj[1], bj[3]);
  float area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i), area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j);
  if (area_i <= 0 || area_j <= 0) return 0;
  float iy0 = fmaxf(ymin_i, ymin_j), ix0 = fmaxf(xmin_i, xmin_j), iy1 = fminf(ymax_i, ymax_j), ix1 = fminf(xmax_i, xmax_j);
  float inter = fmaxf(iy1 - iy0, 0.0f) * fmaxf(ix1 - ix0, 0.0f);
  return inter / (area_i + area_j - inter);
}

/* The IoU of boxes i and j of b (float or half, [n, 4] corners in any order), in float as TF's. */
static float iou(const sm_tensor *b, int64_t i, int64_t j) {
  float bi[4], bj[4];
  for (int k = 0; k < 4; k++) bi[k] = (float)getf(b, 4 * i + k), bj[k] = (float)getf(b, 4 * j + k);
  return iou_f(bi, bj);
}

typedef struct cand {
  int64_t box;
  float score;
  int64_t begin; /* selected boxes before this index were compared already */
} cand;

/* max-heap on score, ties: lower box index first */
static int before(const cand *a, const cand *b) { return a->score > b->score || (a->score == b->score && a->box < b->box); }
static void heap_push(cand *h, int64_t *n, cand c) {
  int64_t i = (*n)++;
  h[i] = c;
  while (i > 0 && before(&h[i], &h[(i - 1) / 2])) {
    cand t = h[i];
    h[i] = h[(i - 1) / 2], h[(i - 1) / 2] = t, i = (i - 1) / 2;
  }
}
static cand heap_pop(cand *h, int64_t *n) {
  cand top = h[0];
  h[0] = h[--*n];
  for (int64_t i = 0;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && before(&h[l], &h[m])) m = l;
    if (r < *n && before(&h[r], &h[m])) m = r;
    if (m == i) break;
    cand t = h[i];
    h[i] = h[m], h[m] = t, i = m;
  }
  return top;
}

static sm_status *nms_compute(const void *state, sm_kctx *ctx) {
  const nms_state *s = state;
  const sm_tensor *boxes = sm__kctx_input(ctx, 0), *scores = sm__kctx_input(ctx, 1);
  char a[128];
  double max_out, iou_thr = s->iou_attr, score_thr = -INFINITY, sigma = 0;
  sm_status *st = scalar(sm__kctx_input(ctx, 2), "max_output_size", &max_out);
  if (!st && s->version != 1) st = scalar(sm__kctx_input(ctx, 3), s->version ? "iou_threshold" : "overlap_threshold", &iou_thr);
  if (!st && (s->version >= 3 || s->version == 0)) st = scalar(sm__kctx_input(ctx, 4), "score_threshold", &score_thr);
  if (!st && s->version == 5) st = scalar(sm__kctx_input(ctx, 5), "soft_nms_sigma", &sigma);
  if (st) return st;
  if (s->version && (iou_thr < 0 || iou_thr > 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "iou_threshold must be in [0, 1]");
  if (sigma < 0) return sm_status_new(SM_INVALID_ARGUMENT, "soft_nms_sigma_val must be >= 0");
  int dt = sm_tensor_dtype(scores);
  if (dt != SM_FLOAT && dt != SM_HALF) return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), dt);
  int64_t n;
  if (s->version) {
    if (sm_tensor_rank(boxes) != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be 2-D%s",
                           sm_shape_str(sm_tensor_rank(boxes), sm_tensor_dims(boxes), a, sizeof a));
    n = sm_tensor_dims(boxes)[0];
    if (sm_tensor_dims(boxes)[1] != 4) return sm_status_new(SM_INVALID_ARGUMENT, "boxes must have 4 columns (Dimension must be 4 but is %lld)",
                                                               (long long)sm_tensor_dims(boxes)[1]);
    if (sm_tensor_dtype(boxes) != SM_FLOAT && sm_tensor_dtype(boxes) != SM_HALF)
      return sm__math_bad_dtype(sm__node_op(sm__kctx_node(ctx)), sm_tensor_dtype(boxes));
  } else {
    if (sm_tensor_rank(boxes) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "overlaps must be 2-D");
    n = sm_tensor_dims(boxes)[0];
    if (sm_tensor_dims(boxes)[1] != n) return sm_status_new(SM_INVALID_ARGUMENT, "overlaps must be square");
  }
  if (sm_tensor_rank(scores) != 1 || sm_tensor_dims(scores)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "scores has incompatible shape (Dimensions must be equal, but are %lld and %lld)",
                         (long long)n, (long long)(sm_tensor_rank(scores) ? sm_tensor_dims(scores)[0] : 0));
  int64_t limit = (int64_t)max_out;
  if (limit < 0) limit = 0; /* TF: a negative size selects nothing */
  cand *h = sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *h, &st);
  int64_t *sel = h ? sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *sel, &st) : NULL;
  float *sel_score = sel ? sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *sel_score, &st) : NULL;
  if (!sel_score) return st;
  int64_t nh = 0, ns = 0;
  float thr = (float)score_thr;
  for (int64_t i = 0; i < n; i++) {
    float sc = (float)getf(scores, i);
    if (sc > thr) heap_push(h, &nh, (cand){i, sc, 0});
  }
  float scale = sigma > 0 ? (float)(-0.5 / sigma) : 0.0f, simthr = (float)iou_thr;
  while (ns < limit && nh > 0) {
    cand c = heap_pop(h, &nh);
    float orig = c.score;
    int hard = 0;
    for (int64_t j = ns - 1; j >= c.begin; j--) {
      float sim = s->version ? iou(boxes, c.box, sel[j]) : (float)getf(boxes, c.box * n + sel[j]);
      if (scale == 0 && sim > simthr) { /* hard NMS (TF: an IoU equal to the threshold does not suppress) */
        hard = 1;
        break;
      }
      c.score *= expf(scale * sim * sim); /* soft-NMS reweighs whatever the IoU */
      if (c.score <= thr) break;
    }
    c.begin = ns;
    if (hard) continue;
    if (c.score == orig) {
      sel[ns] = c.box, sel_score[ns++] = c.score;
    } else if (c.score > thr) {
      heap_push(h, &nh, c);
    }
  }
  int64_t len = s->pad ? limit : ns;
  sm_tensor *oi, *os, *ov;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT32, 1, &len, &oi))) return st;
  for (int64_t i = 0; i < ns; i++) ((int32_t *)sm_tensor_data(oi))[i] = (int32_t)sel[i];
  int oidx = 1;
  if (s->version == 5) {
    if ((st = sm__kctx_alloc_output(ctx, oidx++, dt, 1, &len, &os))) return st;
    for (int64_t i = 0; i < ns; i++) {
      if (dt == SM_HALF) ((uint16_t *)sm_tensor_data(os))[i] = sm__f32_to_half(sel_score[i]);
      else ((float *)sm_tensor_data(os))[i] = sel_score[i];
    }
  }
  if (s->version >= 4) {
    if ((st = sm__kctx_alloc_output(ctx, oidx, SM_INT32, 0, NULL, &ov))) return st;
    *(int32_t *)sm_tensor_data(ov) = (int32_t)ns;
  }
  return NULL;
}

/* ---- CombinedNonMaxSuppression ----------------------------------------------------------- */

/* pad_per_class, clip_boxes in the state pointer's own two ints. */
static sm_status *cnms_prepare(const sm_node *node, void **state) {
  int *s = calloc(2, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s[1] = 1;
  sm_status *st = NULL;
  if (sm__node_attr(node, "pad_per_class")) st = sm__node_attr_bool(node, "pad_per_class", &s[0]);
  if (!st && sm__node_attr(node, "clip_boxes")) st = sm__node_attr_bool(node, "clip_boxes", &s[1]);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct cres {
  float score;
  int32_t cls;
  int64_t box, order; /* order: per class, then selection order (the stable tie-break) */
} cres;

static int cres_cmp(const void *a, const void *b) {
  const cres *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static sm_status *int_scalar(const sm_tensor *t, const char *what, int64_t *v) {
  char b[64];
  if (sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b));
  if (sm_tensor_dtype(t) != SM_INT32) return sm__math_bad_dtype(what, sm_tensor_dtype(t));
  *v = *(const int32_t *)sm_tensor_data(t);
  return NULL;
}

static sm_status *float_scalar(const sm_tensor *t, const char *what, float *v) {
  char b[64];
  if (sm_tensor_rank(t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", what,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b));
  if (sm_tensor_dtype(t) != SM_FLOAT) return sm__math_bad_dtype(what, sm_tensor_dtype(t));
  *v = *(const float *)sm_tensor_data(t);
  return NULL;
}

/* TF's BatchedNonMaxSuppressionOp: per batch and class, greedy NMS of the boxes scoring above
 * score_threshold (at most max_output_size_per_class); the survivors of all classes sorted by
 * score (ties: class, then selection order), the first max_total_size kept, zero padded. */
static sm_status *cnms_compute(const void *state, sm_kctx *ctx) {
  const int *attr = state;
  int pad_per_class = attr[0], clip = attr[1];
  const sm_tensor *boxes = sm__kctx_input(ctx, 0), *scores = sm__kctx_input(ctx, 1);
  int64_t per_class, total;
  float iou_thr, score_thr;
  sm_status *st = int_scalar(sm__kctx_input(ctx, 2), "max_size_per_class", &per_class);
  if (!st && per_class <= 0) st = sm_status_new(SM_INVALID_ARGUMENT, "max_size_per_class must be positive");
  if (!st) st = int_scalar(sm__kctx_input(ctx, 3), "max_total_size", &total);
  if (!st && total <= 0) st = sm_status_new(SM_INVALID_ARGUMENT, "max_total_size must be > 0");
  if (!st) st = float_scalar(sm__kctx_input(ctx, 4), "iou_threshold", &iou_thr);
  if (!st) st = float_scalar(sm__kctx_input(ctx, 5), "score_threshold", &score_thr);
  if (!st && !(iou_thr >= 0 && iou_thr <= 1)) st = sm_status_new(SM_INVALID_ARGUMENT, "iou_threshold must be in [0, 1]");
  if (st) return st;
  if (sm_tensor_dtype(boxes) != SM_FLOAT || sm_tensor_dtype(scores) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "CombinedNonMaxSuppression takes float boxes and scores");
  if (sm_tensor_rank(scores) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "scores must be 3-D");
  if (sm_tensor_rank(boxes) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "boxes must be 4-D");
  const int64_t *bd = sm_tensor_dims(boxes), *sd = sm_tensor_dims(scores);
  int64_t nb = bd[0], n = bd[1], q = bd[2], nc = sd[2];
  if (q != 1 && q != nc) return sm_status_new(SM_INVALID_ARGUMENT, "third dimension of boxes must be either 1 or %lld", (long long)nc);
  if (bd[3] != 4) return sm_status_new(SM_INVALID_ARGUMENT, "boxes must have 4 columns");
  if (sd[0] != nb) return sm_status_new(SM_INVALID_ARGUMENT, "boxes and scores must have the same batch size");
  if (sd[1] != n) return sm_status_new(SM_INVALID_ARGUMENT, "scores has incompatible shape");
  if (per_class > INT32_MAX / (nc ? nc : 1)) per_class = INT32_MAX / (nc ? nc : 1);
  int64_t size_per_class = per_class < n ? per_class : n;
  int64_t out_n = pad_per_class ? (per_class * nc < total ? per_class * nc : total) : total;
  sm_tensor *ob, *os, *oc, *ov;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 3, (int64_t[]){nb, out_n, 4}, &ob))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 2, (int64_t[]){nb, out_n}, &os))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 2, (int64_t[]){nb, out_n}, &oc))) return st;
  if ((st = sm__kctx_alloc_output(ctx, 3, SM_INT32, 1, &nb, &ov))) return st;
  const float *B = sm_tensor_data(boxes), *S = sm_tensor_data(scores);
  float *OB = sm_tensor_data(ob), *OS = sm_tensor_data(os), *OC = sm_tensor_data(oc);
  int32_t *OV = sm_tensor_data(ov);
  cand *h = sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *h, &st);
  int64_t *sel = h ? sm__kctx_scratch(ctx, (size_t)(n + 1) * sizeof *sel, &st) : NULL;
  cres *res = sel ? sm__kctx_scratch(ctx, (size_t)(size_per_class * nc + 1) * sizeof *res, &st) : NULL;
  if (!res) return st;
  for (int64_t b = 0; b < nb; b++) {
    int64_t nres = 0;
    for (int64_t c = 0; c < nc; c++) {
      int64_t nh = 0, ns = 0;
      for (int64_t i = 0; i < n; i++) {
        float sc = S[(b * n + i) * nc + c];
        if (sc > score_thr) heap_push(h, &nh, (cand){i, sc, 0});
      }
      const float *cb = B + (size_t)b * (size_t)(n * q * 4);
      int64_t qc = q == 1 ? 0 : c;
      while (ns < size_per_class && nh > 0) {
        cand cd = heap_pop(h, &nh);
        int keep = 1;
        for (int64_t j = ns - 1; j >= 0; j--)
          if (iou_f(cb + (cd.box * q + qc) * 4, cb + (sel[j] * q + qc) * 4) > iou_thr) {
            keep = 0;
            break;
          }
        if (!keep) continue;
        sel[ns++] = cd.box;
        res[nres] = (cres){cd.score, (int32_t)c, cd.box * q + qc, nres};
        nres++;
      }
    }
    qsort(res, (size_t)nres, sizeof *res, cres_cmp);
    int64_t m = nres < out_n ? nres : out_n;
    OV[b] = (int32_t)m;
    for (int64_t i = 0; i < m; i++) {
      const float *src = B + (size_t)b * (size_t)(n * q * 4) + res[i].box * 4;
      float *dst = OB + (b * out_n + i) * 4;
      for (int k = 0; k < 4; k++) dst[k] = clip ? fmaxf(fminf(src[k], 1.0f), 0.0f) : src[k];
      OS[b * out_n + i] = res[i].score;
      OC[b * out_n + i] = (float)res[i].cls;
    }
  }
  return NULL;
}

#define NMS(name) {name, nms_prepare, nms_compute, free, 0}
const sm_kernel sm_kernels_image_nms[] = {
    NMS("NonMaxSuppression"),   NMS("NonMaxSuppressionV2"), NMS("NonMaxSuppressionV3"),
    NMS("NonMaxSuppressionV4"), NMS("NonMaxSuppressionV5"), NMS("NonMaxSuppressionWithOverlaps"),
    {"CombinedNonMaxSuppression", cnms_prepare, cnms_compute, free, 0},
    {0},
};
