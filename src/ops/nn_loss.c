/* nn_loss.c - the nn_loss kernel family: losses and metrics tf.function code calls through tf.nn /
 * tf.math that tools/sweep_ops.py found missing (session 17): L2Loss (tf.nn.l2_loss,
 * tf.linalg.global_norm, tf.clip_by_global_norm), SoftmaxCrossEntropyWithLogits (2-D, the two
 * inputs broadcast against each other) and SparseSoftmaxCrossEntropyWithLogits (loss and
 * backprop outputs), InTopK / InTopKV2 (tf.math.in_top_k: a target out of range, or a row
 * with any prediction that is not finite, is false) and LRN (tf.nn.local_response_normalization) with LRNGrad. half,
 * bfloat16, float and double as TF's CPU kernels (half/bfloat16 computed in float), TF's
 * messages for bad input. Checked against TensorFlow by tests/unit/test_ops_api.c
 * (tools/gen_api_cases.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

static int is_real(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16; }

static const char *shp(const sm_tensor *t, char *b, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, cap);
}

/* ---- L2Loss --------------------------------------------------------------------------------- */
static sm_status *l2loss_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (!is_real(sm_tensor_dtype(x))) return sm__math_bad_dtype("L2Loss", sm_tensor_dtype(x));
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, sm_tensor_dtype(x), 0, NULL, &z);
  if (st) return st;
  double s = 0;
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    double v = sm__math_get_f64(x, i);
    s += v * v;
  }
  sm__math_put_f64(z, 0, s / 2);
  return NULL;
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */
/* One row: loss = sum_j labels_j * (log(sum exp(x - max)) - (x_j - max)); backprop = softmax - labels.
 * lab(j) gives label j (dense) or the one-hot of the sparse label. */
static void xent_row(const sm_tensor *f, int64_t fo, int64_t fs, const sm_tensor *l, int64_t lo, int64_t ls, int64_t sparse,
                     int64_t k, sm_tensor *loss, int64_t r, sm_tensor *bp) {
  double m = -INFINITY;
  for (int64_t j = 0; j < k; j++) m = fmax(m, sm__math_get_f64(f, fo + j * fs));
  double sum = 0;
  for (int64_t j = 0; j < k; j++) sum += exp(sm__math_get_f64(f, fo + j * fs) - m);
  double lse = log(sum), L = 0;
  for (int64_t j = 0; j < k; j++) {
    double x = sm__math_get_f64(f, fo + j * fs) - m, y = l ? sm__math_get_f64(l, lo + j * ls) : (double)(j == sparse);
    if (y != 0) L += y * (lse - x);
    sm__math_put_f64(bp, r * k + j, exp(x) / sum - y);
  }
  sm__math_put_f64(loss, r, L);
}

static sm_status *xent_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *f = sm__kctx_input(ctx, 0), *l = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(f);
  if (!is_real(dt)) return sm__math_bad_dtype("SoftmaxCrossEntropyWithLogits", dt);
  char a[128], b[128];
  int fr = sm_tensor_rank(f), lr = sm_tensor_rank(l);
  int64_t fd[2] = {1, 1}, ld[2] = {1, 1};
  int bc = fr <= 2 && lr <= 2;
  for (int i = 0; i < fr && bc; i++) fd[2 - fr + i] = sm_tensor_dims(f)[i];
  for (int i = 0; i < lr && bc; i++) ld[2 - lr + i] = sm_tensor_dims(l)[i];
  for (int i = 0; i < 2 && bc; i++) bc = fd[i] == ld[i] || fd[i] == 1 || ld[i] == 1;
  if (!bc)
    return sm_status_new(SM_INVALID_ARGUMENT, "logits and labels must be broadcastable: logits_size=%s labels_size=%s",
                         shp(f, a, sizeof a), shp(l, b, sizeof b));
  if ((fr > lr ? fr : lr) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional");
  int64_t od[2] = {fd[0] > ld[0] ? fd[0] : ld[0], fd[1] > ld[1] ? fd[1] : ld[1]};
  if (fd[0] == 0 || ld[0] == 0) od[0] = 0;
  if (fd[1] == 0 || ld[1] == 0) od[1] = 0;
  sm_tensor *loss, *bp;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, od, &loss);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, 2, od, &bp);
  if (st || od[1] == 0) return st;
  for (int64_t r = 0; r < od[0]; r++)
    xent_row(f, (fd[0] == 1 ? 0 : r) * fd[1], fd[1] == 1 ? 0 : 1, l, (ld[0] == 1 ? 0 : r) * ld[1], ld[1] == 1 ? 0 : 1, 0,
             od[1], loss, r, bp);
  return NULL;
}

static sm_status *sparse_xent_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *f = sm__kctx_input(ctx, 0), *l = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(f);
  if (!is_real(dt)) return sm__math_bad_dtype("SparseSoftmaxCrossEntropyWithLogits", dt);
  char a[128], b[128];
  if (sm_tensor_rank(f) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s", shp(f, a, sizeof a));
  if (sm_tensor_rank(l) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "labels must be 1-D, but got shape %s", shp(l, a, sizeof a));
  const int64_t *fd = sm_tensor_dims(f);
  if (fd[0] != sm_tensor_dims(l)[0])
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "logits and labels must have the same first dimension, got logits shape %s and labels shape %s",
                         shp(f, a, sizeof a), shp(l, b, sizeof b));
  if (fd[1] == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Must have at least one class, but got logits shape %s", shp(f, a, sizeof a));
  int64_t n = fd[0], k = fd[1];
  for (int64_t r = 0; r < n; r++) {
    int64_t y = sm_tensor_dtype(l) == SM_INT64 ? ((const int64_t *)sm_tensor_data(l))[r] : ((const int32_t *)sm_tensor_data(l))[r];
    if (y < 0 || y >= k) {
      char vals[512];
      size_t o = 0;
      vals[0] = 0;
      for (int64_t i = 0; i < n && o + 24 < sizeof vals; i++) {
        int64_t v = sm_tensor_dtype(l) == SM_INT64 ? ((const int64_t *)sm_tensor_data(l))[i] : ((const int32_t *)sm_tensor_data(l))[i];
        o += (size_t)snprintf(vals + o, sizeof vals - o, "%s%lld", i ? " " : "", (long long)v);
      }
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Received a label value of %lld which is outside the valid range of [0, %lld).  Label values: %s",
                           (long long)y, (long long)k, vals);
    }
  }
  sm_tensor *loss, *bp;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &loss);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, 2, fd, &bp);
  if (st) return st;
  for (int64_t r = 0; r < n; r++) {
    int64_t y = sm_tensor_dtype(l) == SM_INT64 ? ((const int64_t *)sm_tensor_data(l))[r] : ((const int32_t *)sm_tensor_data(l))[r];
    xent_row(f, r * k, 1, NULL, 0, 0, y, k, loss, r, bp);
  }
  (void)b;
  return NULL;
}

/* ---- InTopK / InTopKV2 ---------------------------------------------------------------------- */
typedef struct topk_state {
  int64_t k;
  int v2;
} topk_state;

static sm_status *intopk_prepare(const sm_node *node, void **state) {
  topk_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->v2 = !strcmp(sm__node_op(node), "InTopKV2");
  sm_status *st = s->v2 ? NULL : sm__node_attr_int(node, "k", &s->k);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static int64_t int_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT64 ? ((const int64_t *)sm_tensor_data(t))[i] : ((const int32_t *)sm_tensor_data(t))[i];
}

static sm_status *intopk_compute(const void *state, sm_kctx *ctx) {
  const topk_state *s = state;
  const sm_tensor *p = sm__kctx_input(ctx, 0), *t = sm__kctx_input(ctx, 1);
  int64_t k = s->k;
  if (s->v2) {
    const sm_tensor *kt = sm__kctx_input(ctx, 2);
    if (sm_tensor_num_elements(kt) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "k must be 0-D, got shape [%lld]",
                                                              (long long)sm_tensor_num_elements(kt));
    k = int_at(kt, 0);
  }
  if (sm_tensor_dtype(p) != SM_FLOAT) return sm__math_bad_dtype("InTopK", sm_tensor_dtype(p));
  if (sm_tensor_rank(p) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "predictions must be == 2-D");
  if (sm_tensor_rank(t) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "targets must be == 1-D");
  int64_t n = sm_tensor_dims(p)[0], c = sm_tensor_dims(p)[1];
  if (sm_tensor_dims(t)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "First dimension of predictions %lld must match length of targets %lld",
                         (long long)n, (long long)sm_tensor_dims(t)[0]);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_BOOL, 1, &n, &z);
  if (st) return st;
  const float *pv = sm_tensor_data(p);
  for (int64_t r = 0; r < n; r++) {
    int64_t y = int_at(t, r);
    int ok = y >= 0 && y < c && isfinite(pv[r * c + y]);
    if (ok) {
      float tp = pv[r * c + y];
      int64_t more = 0;
      for (int64_t j = 0; j < c && ok; j++) {
        ok = isfinite(pv[r * c + j]); /* TF: a row with any non-finite prediction cannot say */
        more += pv[r * c + j] > tp;
      }
      ok = ok && more < k;
    }
    ((uint8_t *)sm_tensor_data(z))[r] = (uint8_t)ok;
  }
  return NULL;
}

/* ---- LRN ------------------------------------------------------------------------------------ */
typedef struct lrn_state {
  int64_t radius;
  float bias, alpha, beta;
} lrn_state;

static sm_status *lrn_prepare(const sm_node *node, void **state) {
  lrn_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->radius = 5, s->bias = 1, s->alpha = 1, s->beta = 0.5f;
  sm_status *st = NULL;
  if (sm__node_attr(node, "depth_radius")) st = sm__node_attr_int(node, "depth_radius", &s->radius);
  if (!st && sm__node_attr(node, "bias")) st = sm__node_attr_float(node, "bias", &s->bias);
  if (!st && sm__node_attr(node, "alpha")) st = sm__node_attr_float(node, "alpha", &s->alpha);
  if (!st && sm__node_attr(node, "beta")) st = sm__node_attr_float(node, "beta", &s->beta);
  if (!st && (s->radius < 0 || s->radius > 0x7fffffff))
    st = sm_status_new(SM_INVALID_ARGUMENT, "depth_radius = %lld larger than int max", (long long)s->radius);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static sm_status *lrn_compute(const void *state, sm_kctx *ctx) {
  const lrn_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (dt != SM_FLOAT && dt != SM_HALF && dt != SM_BFLOAT16) return sm__math_bad_dtype("LRN", dt);
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "in must be 4-dimensional");
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 4, sm_tensor_dims(x), &z);
  if (st) return st;
  int64_t c = sm_tensor_dims(x)[3], rows = c ? sm_tensor_num_elements(x) / c : 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < c; j++) {
      double sq = 0;
      int64_t lo = j - s->radius < 0 ? 0 : j - s->radius, hi = j + s->radius >= c ? c - 1 : j + s->radius;
      for (int64_t q = lo; q <= hi; q++) {
        double v = sm__math_get_f64(x, r * c + q);
        sq += v * v;
      }
      double den = (double)s->bias + (double)s->alpha * sq;
      sm__math_put_f64(z, r * c + j, sm__math_get_f64(x, r * c + j) * pow(den, -(double)s->beta));
    }
  return NULL;
}

/* LRNGrad (the gradient a tf.GradientTape over LRN emits), TF's LRNGradOp: for each depth j
 * and each k in j's window, d out_j / d in_k, times grads_j, summed into k. */
static sm_status *lrn_grad_compute(const void *state, sm_kctx *ctx) {
  const lrn_state *s = state;
  if (sm__kctx_num_inputs(ctx) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "expected 3 inputs");
  const sm_tensor *g = sm__kctx_input(ctx, 0), *in = sm__kctx_input(ctx, 1), *out = sm__kctx_input(ctx, 2);
  int dt = sm_tensor_dtype(g);
  if (dt != SM_FLOAT && dt != SM_HALF && dt != SM_BFLOAT16) return sm__math_bad_dtype("LRNGrad", dt);
  for (int i = 0; i < 3; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    if (sm_tensor_rank(t) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "inputs must be 4-dimensional");
    for (int k = 0; k < 4; k++)
      if (sm_tensor_dims(t)[k] != sm_tensor_dims(g)[k])
        return sm_status_new(SM_INVALID_ARGUMENT, "input_grads, input_image, and out_image should have the same shape");
  }
  sm_tensor *o;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt, 4, sm_tensor_dims(g), &o);
  if (st) return st;
  const int64_t *d = sm_tensor_dims(g);
  const int64_t D = d[3], rows = d[0] * d[1] * d[2];
  if (D == 0 || rows == 0) return NULL;
  double *acc = sm__kctx_scratch(ctx, (size_t)D * sizeof(double), &st);
  if (!acc) return st;
  const double alpha = s->alpha, beta = s->beta, bias = s->bias;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t base = r * D;
    for (int64_t k = 0; k < D; k++) acc[k] = 0;
    for (int64_t jd = 0; jd < D; jd++) {
      int64_t lo = jd - s->radius > 0 ? jd - s->radius : 0, hi = jd + s->radius + 1 < D ? jd + s->radius + 1 : D;
      double norm = 0;
      for (int64_t k = lo; k < hi; k++) {
        double v = sm__math_get_f64(in, base + k);
        norm += v * v;
      }
      norm = alpha * norm + bias;
      double oj = sm__math_get_f64(out, base + jd), gj = sm__math_get_f64(g, base + jd);
      for (int64_t k = lo; k < hi; k++) {
        double dyi = -2.0 * alpha * beta * sm__math_get_f64(in, base + k) * oj / norm;
        if (k == jd) dyi += pow(norm, -beta);
        acc[k] += dyi * gj;
      }
    }
    for (int64_t k = 0; k < D; k++) sm__math_put_f64(o, base + k, acc[k]);
  }
  return NULL;
}

const sm_kernel sm_kernels_nn_loss[] = {
    {"L2Loss", NULL, l2loss_compute, NULL, 0},
    {"SoftmaxCrossEntropyWithLogits", NULL, xent_compute, NULL, 0},
    {"SparseSoftmaxCrossEntropyWithLogits", NULL, sparse_xent_compute, NULL, 0},
    {"InTopK", intopk_prepare, intopk_compute, free, 0},
    {"InTopKV2", intopk_prepare, intopk_compute, free, 0},
    {"LRN", lrn_prepare, lrn_compute, free, 0},
    {"LRNGrad", lrn_prepare, lrn_grad_compute, free, 0},
    {0},
};
