/* test_train.c - the trainer (src/train): every layer's backward against central finite
 * differences, the losses' gradients, a whole CNN's gradients, Adam / SGD-momentum / Nesterov
 * steps against Keras 3 (goldens from tools/make_train_goldens.py), reproducibility from a seed,
 * clear errors for bad input, Keras names and summary, and small tasks whose loss falls. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "savedmodel/dtype.h"
#include "savedmodel/train.h"
#include "ops/nn_dnnl.h"
#include "test.h"
#include "train/train_internal.h"

/* ---- helpers ---------------------------------------------------------------------------------- */
static uint64_t lcg = 12345;
static float frand(void) { /* [-1, 1) */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((lcg >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static sm_tensor *f32(int rank, const int64_t *dims) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  return t;
}

static sm_seq *new_seq(int rank, int64_t a, int64_t b, int64_t c) {
  int64_t in[3] = {a, b, c};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(rank, in, &m));
  return m;
}

static void compile_mse(sm_seq *m) {
  sm_optimizer o = sm_sgd_defaults();
  sm_loss l = {SM_LOSS_MSE, 0};
  CHECK_OK(sm_seq_compile(m, &o, &l, 3));
}

static int close_enough(double a, double num) { return fabs(a - num) <= 3e-3 + 1e-2 * fabs(num); }

/* ---- one layer's backward against central differences ------------------------------------------ */
static int fd_training; /* the forward pass in training mode (batch norm's batch statistics) */

static double layer_objective(sm_seq *m, const float *x, int64_t n, const float *r) {
  const float *y;
  sm_status *st = sm__forward(m, x, n, fd_training, &y);
  CHECK(st == NULL);
  sm_status_free(st);
  const sm__layer *L = &m->layers[0];
  int64_t k = n * sm__elems(L->out_rank, L->out_shape);
  double s = 0.0;
  for (int64_t i = 0; i < k; i++) s += (double)r[i] * y[i];
  return s;
}

static int fd_vector(const char *what, const char *name, float *v, int64_t cnt, const float *analytic, sm_seq *m,
                     const float *x, int64_t n, const float *r) {
  const float h = 1e-3f;
  int bad = 0;
  for (int64_t i = 0; i < cnt; i++) {
    float keep = v[i];
    v[i] = keep + h;
    double fp = layer_objective(m, x, n, r);
    v[i] = keep - h;
    double fm = layer_objective(m, x, n, r);
    v[i] = keep;
    double num = (fp - fm) / (2.0 * (double)h);
    if (!close_enough(analytic[i], num)) {
      if (bad < 5) fprintf(stderr, "%s: d/d%s[%lld]: analytic %.6g, numeric %.6g\n", name, what, (long long)i, analytic[i], num);
      bad++;
    }
  }
  return bad;
}

/* Checks layer 0's input, kernel and bias gradients of sum(r * layer(x)). distinct: inputs spaced
 * apart (no near-ties for max pooling). */
static void fd_layer(const char *name, sm_seq *m, int64_t n, int distinct) {
  CHECK_OK(sm__train_pool(m, 2));
  CHECK_OK(sm__train_scratch(m, n));
  sm__train *tr = m->priv;
  sm__layer *L = &m->layers[0];
  int64_t in_n = n * sm__elems(L->in_rank, L->in_shape), out_n = n * sm__elems(L->out_rank, L->out_shape);
  float *x = malloc((size_t)in_n * sizeof *x), *r = malloc((size_t)out_n * sizeof *r);
  float *gy = malloc((size_t)out_n * sizeof *gy), *gx = malloc((size_t)in_n * sizeof *gx);
  int64_t nk = L->kernel ? sm_tensor_num_elements(L->kernel) : 0, nb = L->kernel ? L->units : 0;
  float *gk = malloc((size_t)(nk + 1) * sizeof *gk), *gb = malloc((size_t)(nb + 1) * sizeof *gb);
  for (int64_t i = 0; i < in_n; i++) x[i] = frand();
  if (distinct) { /* a shuffled grid with 0.02 between values: no tie within h */
    for (int64_t i = 0; i < in_n; i++) x[i] = (float)i * 0.02f - 1.0f;
    for (int64_t i = in_n - 1; i > 0; i--) {
      int64_t j = (int64_t)((frand() + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1);
      float t = x[i];
      x[i] = x[j];
      x[j] = t;
    }
  }
  for (int64_t i = 0; i < out_n; i++) r[i] = frand();
  if (L->kernel) {
    float *b = sm_tensor_data(L->bias);
    for (int64_t i = 0; i < nb; i++) b[i] = 0.2f * frand();
  }
  if (L->kernel && L->kind == SM_LAYER_BATCHNORM) { /* gamma away from 1 */
    float *g = sm_tensor_data(L->kernel);
    for (int64_t i = 0; i < nb; i++) g[i] = 1.0f + 0.5f * frand();
  }
  const float *y;
  CHECK_OK(sm__forward(m, x, n, fd_training, &y));
  memcpy(gy, r, (size_t)out_n * sizeof *gy);
  CHECK_OK(sm__layer_backward(m, 0, x, tr->act[0], gy, gx, gk, gb, n));
  int bad = fd_vector("x", name, x, in_n, gx, m, x, n, r);
  if (L->kernel) {
    int fixed_k = L->kind == SM_LAYER_BATCHNORM && !L->use_scale; /* scale=False: gamma stays 1 */
    if (!fixed_k) bad += fd_vector("kernel", name, sm_tensor_data(L->kernel), nk, gk, m, x, n, r);
    for (int64_t i = 0; fixed_k && i < nk; i++) bad += gk[i] != 0.0f;
    if (!L->no_bias) bad += fd_vector("bias", name, sm_tensor_data(L->bias), nb, gb, m, x, n, r);
    for (int64_t i = 0; L->no_bias && i < nb; i++) bad += gb[i] != 0.0f; /* use_bias=False: stays 0 */
  }
  if (bad) fprintf(stderr, "%s: %d gradient entries off\n", name, bad);
  CHECK(bad == 0);
  free(x), free(r), free(gy), free(gx), free(gk), free(gb);
}

static void test_layer_gradients(void) {
  sm_seq *m;
  m = new_seq(3, 5, 6, 2);
  CHECK_OK(sm_seq_conv2d(m, 3, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  compile_mse(m);
  fd_layer("conv valid relu", m, 3, 0);
  sm_seq_free(m);

  m = new_seq(3, 5, 5, 2);
  CHECK_OK(sm_seq_conv2d(m, 2, 3, 2, 2, 1, SM_PAD_SAME, SM_ACT_NONE));
  compile_mse(m);
  fd_layer("conv same stride 2x1", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(3, 4, 4, 3);
  CHECK_OK(sm_seq_conv2d(m, 4, 2, 2, 1, 1, SM_PAD_SAME, SM_ACT_SOFTMAX));
  compile_mse(m);
  fd_layer("conv same even kernel softmax", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(3, 4, 6, 2);
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  compile_mse(m);
  fd_layer("maxpool 2x2 valid", m, 2, 1);
  sm_seq_free(m);

  m = new_seq(3, 5, 5, 2);
  CHECK_OK(sm_seq_max_pool2d(m, 3, 3, 2, 2, SM_PAD_SAME));
  compile_mse(m);
  fd_layer("maxpool 3x3/2 same", m, 3, 1);
  sm_seq_free(m);

  m = new_seq(1, 7, 0, 0);
  CHECK_OK(sm_seq_dense(m, 5, SM_ACT_RELU));
  compile_mse(m);
  fd_layer("dense relu", m, 4, 0);
  sm_seq_free(m);

  m = new_seq(1, 6, 0, 0);
  CHECK_OK(sm_seq_dense(m, 4, SM_ACT_SOFTMAX));
  compile_mse(m);
  fd_layer("dense softmax", m, 3, 0);
  sm_seq_free(m);

  m = new_seq(1, 6, 0, 0);
  CHECK_OK(sm_seq_activation(m, SM_ACT_SOFTMAX));
  compile_mse(m);
  fd_layer("activation softmax", m, 3, 0);
  sm_seq_free(m);

  m = new_seq(1, 9, 0, 0);
  CHECK_OK(sm_seq_activation(m, SM_ACT_RELU));
  compile_mse(m);
  fd_layer("activation relu", m, 3, 0);
  sm_seq_free(m);

  m = new_seq(3, 2, 3, 2);
  CHECK_OK(sm_seq_flatten(m));
  compile_mse(m);
  fd_layer("flatten", m, 2, 0);
  sm_seq_free(m);

  /* dropout: out = x * mask with mask in {0, 1/(1-rate)}, gradient = gy * mask */
  m = new_seq(1, 1000, 0, 0);
  CHECK_OK(sm_seq_dropout(m, 0.25f));
  compile_mse(m);
  CHECK_OK(sm__train_pool(m, 1));
  CHECK_OK(sm__train_scratch(m, 2));
  float x[2000], gy[2000], gx[2000];
  for (int i = 0; i < 2000; i++) x[i] = 1.0f + (float)i, gy[i] = 2.0f;
  const float *y;
  CHECK_OK(sm__forward(m, x, 2, 1, &y));
  CHECK_OK(sm__layer_backward(m, 0, x, y, gy, gx, NULL, NULL, 2));
  int dropped = 0, wrong = 0;
  for (int i = 0; i < 2000; i++) {
    if (y[i] == 0.0f) {
      dropped++;
      wrong += gx[i] != 0.0f;
    } else {
      wrong += y[i] != x[i] * (1.0f / 0.75f) || gx[i] != 2.0f * (1.0f / 0.75f);
    }
  }
  CHECK(wrong == 0);
  CHECK(dropped > 400 && dropped < 600);
  CHECK_OK(sm__forward(m, x, 2, 0, &y)); /* inference: identity */
  CHECK(memcmp(y, x, sizeof x) == 0);
  sm_seq_free(m);
}

/* The layers of Keras configs (src/train/layers.c); run last so that the draws above stay as they were. */
static void test_keras_layer_gradients(void) {
  sm_seq *m;
  m = new_seq(3, 3, 4, 3);
  CHECK_OK(sm__seq_batchnorm(m, 0.99f, 1e-3f, 1, 1));
  compile_mse(m);
  fd_training = 1;
  fd_layer("batch norm (training) rank 3", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(1, 5, 0, 0);
  CHECK_OK(sm__seq_batchnorm(m, 0.9f, 1e-2f, 1, 0));
  compile_mse(m);
  fd_layer("batch norm (training) rank 1, no scale", m, 4, 0);
  fd_training = 0;
  sm_seq_free(m);

  m = new_seq(3, 5, 5, 2);
  CHECK_OK(sm__seq_avg_pool2d(m, 3, 3, 2, 2, SM_PAD_SAME));
  compile_mse(m);
  fd_layer("avgpool 3x3/2 same", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(3, 4, 6, 2);
  CHECK_OK(sm__seq_avg_pool2d(m, 2, 3, 1, 2, SM_PAD_VALID));
  compile_mse(m);
  fd_layer("avgpool 2x3/1x2 valid", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(3, 3, 4, 5);
  CHECK_OK(sm__seq_gap2d(m));
  compile_mse(m);
  fd_layer("global average pooling", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(1, 8, 0, 0);
  CHECK_OK(sm__seq_rescaling(m, 0.5f, -0.25f));
  compile_mse(m);
  fd_layer("rescaling", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(1, 9, 0, 0);
  CHECK_OK(sm__seq_leaky_relu(m, 0.3f));
  compile_mse(m);
  fd_layer("leaky relu", m, 3, 1);
  sm_seq_free(m);

  m = new_seq(3, 2, 3, 2);
  int64_t rs[2] = {-1, 4};
  CHECK_OK(sm__seq_reshape(m, 2, rs));
  CHECK(m->layers[0].out_shape[0] == 3 && m->layers[0].out_shape[1] == 4);
  compile_mse(m);
  fd_layer("reshape", m, 2, 0);
  sm_seq_free(m);

  m = new_seq(3, 5, 5, 2);
  CHECK_OK(sm_seq_conv2d(m, 3, 3, 3, 2, 2, SM_PAD_SAME, SM_ACT_NONE));
  m->layers[0].no_bias = 1;
  compile_mse(m);
  fd_layer("conv no bias", m, 2, 0);
  sm_seq_free(m);

}

/* ---- losses -------------------------------------------------------------------------------------- */
static void fd_loss(const char *name, int kind, int from_logits, int softmax_last) {
  enum { N = 3, K = 4 };
  sm_seq *m = new_seq(1, K, 0, 0);
  CHECK_OK(sm_seq_dense(m, K, softmax_last ? SM_ACT_SOFTMAX : SM_ACT_NONE));
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {kind, from_logits};
  CHECK_OK(sm_seq_compile(m, &o, &l, 1));
  float out[N * K], g[N * K], tg[N * K];
  int32_t lab[N] = {1, 3, 0};
  for (int i = 0; i < N * K; i++) {
    out[i] = kind == SM_LOSS_MSE || from_logits ? frand() : 0.1f + 0.2f * (frand() + 1.0f);
    tg[i] = frand();
  }
  int64_t correct;
  int fused;
  sm__loss(m, out, N, K, lab, tg, g, &correct, &fused);
  CHECK(fused == 0);
  int bad = 0;
  for (int i = 0; i < N * K; i++) {
    float keep = out[i];
    const float h = 1e-3f;
    out[i] = keep + h;
    double fp = sm__loss(m, out, N, K, lab, tg, NULL, NULL, NULL);
    out[i] = keep - h;
    double fm = sm__loss(m, out, N, K, lab, tg, NULL, NULL, NULL);
    out[i] = keep;
    double num = (fp - fm) / (2.0 * h);
    if (!close_enough(g[i], num)) {
      fprintf(stderr, "%s: dL/dout[%d] analytic %.6g numeric %.6g\n", name, i, g[i], num);
      bad++;
    }
  }
  CHECK(bad == 0);
  sm_seq_free(m);
}

static void test_losses(void) {
  fd_loss("ce logits", SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1, 0);
  fd_loss("ce probabilities", SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0, 0);
  fd_loss("mse", SM_LOSS_MSE, 0, 0);
  /* known values: logits (0, 0) for label 0 -> log 2; accuracy counts argmax hits */
  sm_seq *m = new_seq(1, 2, 0, 0);
  CHECK_OK(sm_seq_dense(m, 2, SM_ACT_NONE));
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, 1));
  float out[4] = {0, 0, 1, 3};
  int32_t lab[2] = {0, 1};
  int64_t c;
  double v = sm__loss(m, out, 2, 2, lab, NULL, NULL, &c, NULL);
  CHECK(fabs(v - 0.5 * (log(2.0) + log(1.0 + exp(-2.0)))) < 1e-6);
  CHECK_EQ_INT(c, 2); /* row 0 ties: argmax takes the first, label 0 */
  sm_seq_free(m);
}

/* ---- a whole CNN's gradients ----------------------------------------------------------------------- */
static double model_loss(sm_seq *m, const float *x, int64_t n, const int32_t *lab) {
  const float *y;
  sm_status *st = sm__forward(m, x, n, 0, &y);
  CHECK(st == NULL);
  sm_status_free(st);
  const sm__layer *L = &m->layers[m->nlayers - 1];
  return sm__loss(m, y, n, L->out_shape[0], lab, NULL, NULL, NULL, NULL);
}

static void fd_model(int softmax_last) {
  const char *name = softmax_last ? "cnn softmax + ce(probabilities)" : "cnn logits + ce(logits)";
  enum { N = 3 };
  sm_seq *m = new_seq(3, 6, 6, 2);
  CHECK_OK(sm_seq_conv2d(m, 3, 3, 3, 1, 1, SM_PAD_SAME, SM_ACT_RELU));
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  CHECK_OK(sm_seq_conv2d(m, 2, 2, 2, 1, 1, SM_PAD_VALID, SM_ACT_NONE));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, 5, SM_ACT_RELU));
  CHECK_OK(sm_seq_dense(m, 3, softmax_last ? SM_ACT_SOFTMAX : SM_ACT_NONE));
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, !softmax_last};
  CHECK_OK(sm_seq_compile(m, &o, &l, 11));
  CHECK_OK(sm__train_pool(m, 2));
  CHECK_OK(sm__train_scratch(m, N));
  sm__train *tr = m->priv;
  float x[N * 72];
  for (int i = 0; i < N * 72; i++) x[i] = frand();
  int32_t lab[N] = {2, 0, 1};
  const float *y;
  CHECK_OK(sm__forward(m, x, N, 1, &y));
  sm__loss(m, y, N, 3, lab, NULL, tr->grad[m->nlayers - 1], NULL, &tr->fused_last);
  CHECK(tr->fused_last == softmax_last);
  CHECK_OK(sm__backward(m, x, N));
  int bad = 0;
  for (int li = 0; li < m->nlayers; li++) {
    sm__layer *L = &m->layers[li];
    if (!L->kernel) continue;
    for (int which = 0; which < 2; which++) {
      float *w = sm_tensor_data(which ? L->bias : L->kernel);
      const float *g = which ? tr->gb[li] : tr->gk[li];
      int64_t cnt = which ? L->units : sm_tensor_num_elements(L->kernel);
      for (int64_t i = 0; i < cnt; i++) {
        float keep = w[i];
        const float h = 1e-3f;
        w[i] = keep + h;
        double fp = model_loss(m, x, N, lab);
        w[i] = keep - h;
        double fm = model_loss(m, x, N, lab);
        w[i] = keep;
        double num = (fp - fm) / (2.0 * h);
        if (!close_enough(g[i], num)) {
          if (bad < 5)
            fprintf(stderr, "%s: %s %s[%lld] analytic %.6g numeric %.6g\n", name, L->name, which ? "bias" : "kernel",
                    (long long)i, g[i], num);
          bad++;
        }
      }
    }
  }
  CHECK(bad == 0);
  sm_seq_free(m);
}

/* ---- optimizer steps against Keras 3 ------------------------------------------------------------- */
/* tools/make_train_goldens.py output (TF 2.21, Keras 3) */
static const float golden_adam[] = {
    0.0153020006f, 0.307664514f, 0.509705901f, 0.418548554f, 0.185856164f, -0.187623754f,
    -0.417607456f, -0.510866702f, -0.306246907f, -0.0102592614f, 0.339483291f, 0.47678116f,
    0.444317073f, 0.146523654f, -0.164848059f, -0.452082515f, -0.470175922f, -0.32480377f,
    0.437170178f, 0.479386359f, 0.470158547f, 0.213689938f, -0.127770558f, -0.40913856f,
    -0.48279044f, -0.35277015f, -0.0415447019f, 0.289219886f, 0.0870037004f, -0.264918059f,
    -0.475801051f, -0.462907344f, -0.359920114f, -0.519403994f, -0.403801739f, -0.0910812542f,
    0.247056678f, 0.468999982f, 0.470365286f, 0.250510424f, -0.0871633887f, -0.383842915f,
    -0.499995112f, -0.380991787f, -0.499150425f, -0.295315683f, 0.0782395601f,
};
static const double golden_adam_loss[2] = {1.0507555, 1.04933143};
static const float golden_sgd_momentum[] = {
    0.00210622093f, 0.320039421f, 0.494926959f, 0.430122018f, 0.169334501f, -0.176221818f,
    -0.435544282f, -0.492115408f, -0.315242648f, 0.00685747666f, 0.329425484f, 0.491971403f,
    0.429497927f, 0.158082709f, -0.181412414f, -0.440664291f, -0.488414198f, -0.309482545f,
    0.423194081f, 0.493146539f, 0.460221648f, 0.213689938f, -0.127770558f, -0.40913856f,
    -0.492338985f, -0.35277015f, -0.0415447019f, 0.289219886f, 0.0759598613f, -0.264918059f,
    -0.475801051f, -0.462907344f, -0.377826571f, -0.500494242f, -0.386424303f, -0.0910812542f,
    0.247056678f, 0.468999982f, 0.470365286f, 0.250510424f, -0.0871633887f, -0.383842915f,
    -0.499995112f, -0.380991787f, -0.480579525f, -0.292887628f, 0.0769368336f,
};
static const double golden_sgd_momentum_loss[2] = {1.0507555, 1.04979181};
static const float golden_sgd_nesterov[] = {
    0.00159462809f, 0.320721596f, 0.494758934f, 0.430835247f, 0.169515178f, -0.175734401f,
    -0.435511202f, -0.492513597f, -0.315578073f, 0.00656610215f, 0.328805357f, 0.492002428f,
    0.429338932f, 0.158793315f, -0.181224748f, -0.440184772f, -0.488042086f, -0.309381068f,
    0.422879785f, 0.493480653f, 0.458950043f, 0.213689938f, -0.127770558f, -0.40913856f,
    -0.493724704f, -0.35277015f, -0.0415447019f, 0.289219886f, 0.0752790794f, -0.264918059f,
    -0.475801051f, -0.462907344f, -0.377308249f, -0.500848174f, -0.386588663f, -0.0910812542f,
    0.247056678f, 0.468999982f, 0.470365286f, 0.250510424f, -0.0871633887f, -0.383842915f,
    -0.499995112f, -0.380991787f, -0.481187373f, -0.302764744f, 0.0874218196f,
};
static const double golden_sgd_nesterov_loss[2] = {1.0507555, 1.0491029};

static float formula(int64_t i, double phase) { return (float)(0.5 * sin(0.7 * (double)i + phase)); }

static int record_loss(const sm_fit_progress *p, void *ctx) {
  double *l = ctx;
  if (p->step == p->steps && isnan(p->val_loss) && p->epoch <= 2) l[p->epoch - 1] = p->loss;
  return 0;
}

static void golden_case(const char *name, sm_optimizer o, const float *want, const double *want_loss) {
  sm_seq *m = new_seq(3, 5, 5, 1);
  CHECK_OK(sm_seq_conv2d(m, 2, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, 4, SM_ACT_RELU));
  CHECK_OK(sm_seq_dense(m, 3, SM_ACT_NONE));
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, 1));
  int k = 0;
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    if (!L->kernel) continue;
    for (int which = 0; which < 2; which++, k++) {
      sm_tensor *t = which ? L->bias : L->kernel;
      float *w = sm_tensor_data(t);
      for (int64_t j = 0; j < sm_tensor_num_elements(t); j++) w[j] = formula(j, k);
    }
  }
  int64_t xd[4] = {4, 5, 5, 1}, yd[1] = {4};
  sm_tensor *x = f32(4, xd), *y = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, yd, &y));
  float *xv = sm_tensor_data(x);
  for (int i = 0; i < 100; i++) xv[i] = formula(i, 10.0) + 0.5f;
  int32_t *yv = sm_tensor_data(y);
  yv[0] = 0, yv[1] = 2, yv[2] = 1, yv[3] = 2;
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 2;
  fo.batch_size = 4;
  fo.shuffle = 0;
  double losses[2] = {NAN, NAN};
  fo.callback = record_loss;
  fo.callback_ctx = losses;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  CHECK_EQ_INT(sm_seq_iterations(m), 2);
  int bad = 0, idx = 0;
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    if (!L->kernel) continue;
    for (int which = 0; which < 2; which++) {
      sm_tensor *t = which ? L->bias : L->kernel;
      const float *w = sm_tensor_data(t);
      for (int64_t j = 0; j < sm_tensor_num_elements(t); j++, idx++)
        if (fabsf(w[j] - want[idx]) > 2e-6f + 1e-5f * fabsf(want[idx])) {
          fprintf(stderr, "%s: weight %d (%s %s[%lld]) = %.9g, Keras %.9g\n", name, idx, L->name,
                  which ? "bias" : "kernel", (long long)j, w[j], want[idx]);
          bad++;
        }
    }
  }
  CHECK_EQ_INT(idx, 47);
  CHECK(bad == 0);
  for (int e = 0; e < 2; e++) {
    if (!(fabs(losses[e] - want_loss[e]) < 1e-5)) fprintf(stderr, "%s: loss %d = %.9g, Keras %.9g\n", name, e, losses[e], want_loss[e]);
    CHECK(fabs(losses[e] - want_loss[e]) < 1e-5);
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_seq_free(m);
}

static void test_goldens(void) {
  sm_optimizer adam = sm_adam_defaults();
  adam.learning_rate = 0.01f;
  golden_case("adam", adam, golden_adam, golden_adam_loss);
  sm_optimizer sgd = sm_sgd_defaults();
  sgd.learning_rate = 0.1f;
  sgd.momentum = 0.9f;
  golden_case("sgd momentum", sgd, golden_sgd_momentum, golden_sgd_momentum_loss);
  sgd.nesterov = 1;
  golden_case("sgd nesterov", sgd, golden_sgd_nesterov, golden_sgd_nesterov_loss);
  /* one Adam update by hand: t=1, alpha = lr*sqrt(1-b2)/(1-b1); m = 0.1 g; v = 0.001 g^2 */
  sm_optimizer o = sm_adam_defaults();
  float w[2] = {1.0f, -1.0f}, g[2] = {0.5f, -2.0f}, s0[2] = {0, 0}, s1[2] = {0, 0};
  sm__apply_update(&o, 0, w, g, s0, s1, 2);
  CHECK(fabsf(w[0] - (1.0f - 0.001f)) < 1e-6f && fabsf(w[1] - (-1.0f + 0.001f)) < 1e-6f);
  CHECK(fabsf(s0[0] - 0.05f) < 1e-8f && fabsf(s1[1] - 0.004f) < 1e-8f);
}

/* ---- data for the fit tests ---------------------------------------------------------------------- */
/* class 0: bright top half, class 1: bright bottom half, class 2: bright left half; plus noise */
static void make_task(int64_t n, int classes, sm_tensor **x, sm_tensor **y) {
  int64_t xd[4] = {n, 8, 8, 1}, yd[1] = {n};
  *x = f32(4, xd);
  CHECK_OK(sm_tensor_new(SM_INT32, 1, yd, y));
  float *xv = sm_tensor_data(*x);
  int32_t *yv = sm_tensor_data(*y);
  for (int64_t i = 0; i < n; i++) {
    int c = (int)(i % classes);
    yv[i] = c;
    for (int r = 0; r < 8; r++)
      for (int q = 0; q < 8; q++) {
        int on = c == 0 ? r < 4 : c == 1 ? r >= 4 : q < 4;
        xv[i * 64 + r * 8 + q] = (on ? 0.7f : 0.2f) + 0.3f * frand();
      }
  }
}

static sm_seq *task_model(int dropout) {
  sm_seq *m = new_seq(3, 8, 8, 1);
  CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  CHECK_OK(sm_seq_flatten(m));
  if (dropout) CHECK_OK(sm_seq_dropout(m, 0.3f));
  CHECK_OK(sm_seq_dense(m, 8, SM_ACT_RELU));
  CHECK_OK(sm_seq_dense(m, 3, SM_ACT_NONE));
  return m;
}

typedef struct epoch_log {
  double loss[16], val_loss[16], val_acc[16];
  int calls;
} epoch_log;

static int log_epochs(const sm_fit_progress *p, void *ctx) {
  epoch_log *e = ctx;
  e->calls++;
  CHECK(p->step >= 1 && p->step <= p->steps);
  CHECK(p->loss >= 0.0 && p->accuracy >= 0.0 && p->accuracy <= 1.0);
  if (p->step == p->steps && p->epoch <= 16) {
    e->loss[p->epoch - 1] = p->loss;
    e->val_loss[p->epoch - 1] = p->val_loss;
    e->val_acc[p->epoch - 1] = p->val_accuracy;
  }
  return 0;
}

static void test_task_learns(void) {
  sm_tensor *x, *y;
  make_task(300, 3, &x, &y);
  sm_seq *m = task_model(1);
  sm_optimizer o = sm_adam_defaults();
  o.learning_rate = 0.01f;
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, 5));
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 6;
  fo.batch_size = 16;
  fo.validation_split = 0.2f;
  epoch_log e;
  memset(&e, 0, sizeof e);
  fo.callback = log_epochs;
  fo.callback_ctx = &e;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  /* 240 training samples: 15 steps + 1 end-of-epoch report per epoch */
  CHECK_EQ_INT(e.calls, 6 * 16);
  CHECK_EQ_INT(sm_seq_iterations(m), 6 * 15);
  CHECK_EQ_INT(m->epochs_done, 6);
  fprintf(stderr, "task: loss %.4f -> %.4f, val_loss %.4f, val_acc %.4f\n", e.loss[0], e.loss[5], e.val_loss[5],
          e.val_acc[5]);
  CHECK(e.loss[5] < 0.5 * e.loss[0]);
  CHECK(e.val_acc[5] >= 0.9);
  double loss, acc;
  CHECK_OK(sm_seq_evaluate(m, x, y, 7, &loss, &acc));
  CHECK(acc >= 0.9);
  /* predict agrees with evaluate's accuracy */
  sm_tensor *p = NULL;
  CHECK_OK(sm_seq_predict(m, x, 64, &p));
  CHECK_EQ_INT(sm_tensor_dims(p)[0], 300);
  CHECK_EQ_INT(sm_tensor_dims(p)[1], 3);
  const float *pv = sm_tensor_data(p);
  const int32_t *yv = sm_tensor_data(y);
  int hits = 0;
  for (int i = 0; i < 300; i++) {
    int b = 0;
    for (int j = 1; j < 3; j++)
      if (pv[i * 3 + j] > pv[i * 3 + b]) b = j;
    hits += b == yv[i];
  }
  CHECK(fabs(hits / 300.0 - acc) < 1e-9);
  sm_tensor_free(p);
  sm_seq_free(m);
  sm_tensor_free(x);
  sm_tensor_free(y);
}

static void test_mse_learns(void) {
  /* y = 2 x0 - x1 + 0.5 */
  int64_t xd[2] = {64, 2}, yd[2] = {64, 1};
  sm_tensor *x = f32(2, xd), *y = f32(2, yd);
  float *xv = sm_tensor_data(x), *yv = sm_tensor_data(y);
  for (int i = 0; i < 64; i++) {
    xv[2 * i] = frand(), xv[2 * i + 1] = frand();
    yv[i] = 2.0f * xv[2 * i] - xv[2 * i + 1] + 0.5f;
  }
  sm_seq *m = new_seq(1, 2, 0, 0);
  CHECK_OK(sm_seq_dense(m, 1, SM_ACT_NONE));
  sm_optimizer o = sm_sgd_defaults();
  o.learning_rate = 0.1f;
  o.momentum = 0.5f;
  sm_loss l = {SM_LOSS_MSE, 0};
  CHECK_OK(sm_seq_compile(m, &o, &l, 9));
  double before, after, acc;
  CHECK_OK(sm_seq_evaluate(m, x, y, 16, &before, &acc));
  CHECK(isnan(acc));
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 30;
  fo.batch_size = 8;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  CHECK_OK(sm_seq_evaluate(m, x, y, 16, &after, &acc));
  fprintf(stderr, "mse: %.5f -> %.7f\n", before, after);
  CHECK(after < 1e-3 && after < before);
  sm_seq_free(m);
  sm_tensor_free(x);
  sm_tensor_free(y);
}

/* ---- reproducibility ----------------------------------------------------------------------------- */
static sm_seq *fit_once(uint64_t seed, int threads, const sm_tensor *x, const sm_tensor *y) {
  sm_seq *m = task_model(1);
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, seed));
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 2;
  fo.batch_size = 16;
  fo.num_threads = threads;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  return m;
}

static int same_weights(const sm_seq *a, const sm_seq *b) {
  for (int i = 0; i < a->nlayers; i++) {
    const sm__layer *A = &a->layers[i], *B = &b->layers[i];
    if (!A->kernel) continue;
    if (memcmp(sm_tensor_data(A->kernel), sm_tensor_data(B->kernel), sm_tensor_nbytes(A->kernel)) ||
        memcmp(sm_tensor_data(A->bias), sm_tensor_data(B->bias), sm_tensor_nbytes(A->bias)) ||
        memcmp(sm_tensor_data(A->kernel_slot[1]), sm_tensor_data(B->kernel_slot[1]), sm_tensor_nbytes(A->kernel)))
      return 0;
  }
  return 1;
}

static void test_reproducible(void) {
  sm_tensor *x, *y;
  make_task(100, 3, &x, &y);
  sm_seq *a = fit_once(7, 2, x, y), *b = fit_once(7, 2, x, y), *c = fit_once(8, 2, x, y);
  CHECK(same_weights(a, b));
  CHECK(!same_weights(a, c));
  sm_seq *d = fit_once(7, 1, x, y), *e = fit_once(7, 1, x, y);
  CHECK(same_weights(d, e));
  /* sm_seq_fit_timing: the last epoch's 7 steps (100 samples in batches of 16), no MPI waits */
  sm_fit_timing tm;
  CHECK_OK(sm_seq_fit_timing(d, &tm));
  CHECK(tm.steps == 7 && tm.images == 100);
  CHECK(tm.step_s > 0.0 && tm.step_cpu_s >= 0.0 && tm.wait_s == 0.0 && tm.wait_cpu_s == 0.0);
  CHECK_ERR(sm_seq_fit_timing(NULL, &tm), "NULL");
  sm_seq_free(a), sm_seq_free(b), sm_seq_free(c), sm_seq_free(d), sm_seq_free(e);
  sm_tensor_free(x);
  sm_tensor_free(y);
}

/* ---- errors ------------------------------------------------------------------------------------- */
static void test_errors(void) {
  sm_seq *m = NULL;
  int64_t bad_in[3] = {28, 0, 1};
  CHECK_ERR(sm_seq_new(3, bad_in, &m), "dimension 1 is 0");
  CHECK_ERR(sm_seq_new(4, bad_in, &m), "rank must be 1..3");
  m = new_seq(3, 8, 8, 1);
  CHECK_ERR(sm_seq_dense(m, 4, SM_ACT_NONE), "add flatten first");
  CHECK_ERR(sm_seq_conv2d(m, 4, 9, 3, 1, 1, SM_PAD_VALID, SM_ACT_NONE), "larger than its 8x8 input");
  CHECK_ERR(sm_seq_conv2d(m, 0, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_NONE), "filters must be");
  CHECK_ERR(sm_seq_conv2d(m, 4, 3, 3, 0, 1, SM_PAD_VALID, SM_ACT_NONE), "strides");
  CHECK_ERR(sm_seq_conv2d(m, 4, 3, 3, 1, 1, 7, SM_ACT_NONE), "padding");
  CHECK_ERR(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_VALID, 9), "unknown activation");
  CHECK_ERR(sm_seq_dropout(m, 1.0f), "rate must be in [0, 1)");
  CHECK_EQ_INT(m->nlayers, 0);
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_ERR(sm_seq_compile(m, &o, &l, 1), "no layers");
  CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  CHECK_ERR(sm_seq_compile(m, &o, &l, 1), "rank-1 output");
  sm_tensor *x, *y;
  make_task(20, 3, &x, &y);
  CHECK_ERR(sm_seq_fit(m, x, y, NULL), "compile the model first");
  sm_seq_free(m);

  m = task_model(0);
  sm_optimizer bad = o;
  bad.learning_rate = -1.0f;
  CHECK_ERR(sm_seq_compile(m, &bad, &l, 1), "learning_rate");
  CHECK_OK(sm_seq_compile(m, &o, &l, 1));
  CHECK_ERR(sm_seq_compile(m, &o, &l, 1), "already compiled");
  CHECK_ERR(sm_seq_dense(m, 3, SM_ACT_NONE), "layers cannot be added after compile");
  CHECK_ERR(sm_seq_flatten(m), "layers cannot be added after compile");

  sm_fit_options fo = sm_fit_defaults();
  fo.batch_size = 0;
  CHECK_ERR(sm_seq_fit(m, x, y, &fo), "batch_size must be > 0, got 0");
  fo.batch_size = -3;
  CHECK_ERR(sm_seq_fit(m, x, y, &fo), "batch_size must be > 0");
  fo = sm_fit_defaults();
  fo.validation_split = 1.0f;
  CHECK_ERR(sm_seq_fit(m, x, y, &fo), "validation_split");
  double lv, av;
  sm_tensor *p = NULL;
  CHECK_ERR(sm_seq_evaluate(m, x, y, 0, &lv, &av), "batch_size must be > 0");
  CHECK_ERR(sm_seq_predict(m, x, -1, &p), "batch_size must be > 0");

  /* labels out of range, naming the first bad index */
  int32_t *yv = sm_tensor_data(y);
  yv[5] = 3;
  yv[9] = -1;
  CHECK_ERR(sm_seq_fit(m, x, y, NULL), "y[5] = 3 is out of range [0, 3)");
  CHECK_ERR(sm_seq_evaluate(m, x, y, 4, &lv, &av), "y[5] = 3");
  yv[5] = 0;
  CHECK_ERR(sm_seq_fit(m, x, y, NULL), "y[9] = -1 is out of range");
  yv[9] = 0;
  int64_t d64[1] = {20};
  sm_tensor *y64 = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, d64, &y64));
  ((int64_t *)sm_tensor_data(y64))[17] = 4000000000ll;
  CHECK_ERR(sm_seq_fit(m, x, y64, NULL), "y[17] = 4000000000");
  sm_tensor_free(y64);

  /* wrong x shape, dtype, count */
  int64_t wd[4] = {20, 8, 8, 2};
  sm_tensor *xw = f32(4, wd);
  CHECK_ERR(sm_seq_fit(m, xw, y, NULL), "x has shape [20,8,8,2], the model takes [-1,8,8,1]");
  CHECK_ERR(sm_seq_predict(m, xw, 4, &p), "x has shape");
  sm_tensor_free(xw);
  /* An output past the tensor limit (8,192 rows of 2^20 floats, 32 GiB) fails before any work,
   * prefixed once: "predict: tensor of ...", not "predict: : tensor of ...". */
  sm_seq *wide = new_seq(1, 1, 0, 0);
  CHECK_OK(sm_seq_dense(wide, 1 << 20, SM_ACT_NONE));
  CHECK_OK(sm_seq_compile(wide, &o, &l, 1));
  int64_t nd[2] = {8192, 1};
  sm_tensor *xn = f32(2, nd);
  CHECK_ERR(sm_seq_predict(wide, xn, 8192, &p), "predict: tensor of 8589934592 elements is larger than");
  CHECK(p == NULL);
  sm_tensor_free(xn);
  sm_seq_free(wide);
  int64_t yd[1] = {19};
  sm_tensor *ys = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, yd, &ys));
  CHECK_ERR(sm_seq_fit(m, x, ys, NULL), "one class id per sample");
  sm_tensor_free(ys);
  sm_tensor *yf = f32(1, d64);
  CHECK_ERR(sm_seq_fit(m, x, yf, NULL), "int32 or int64");
  sm_tensor_free(yf);
  sm_tensor *xi = NULL;
  int64_t xd[4] = {20, 8, 8, 1};
  CHECK_OK(sm_tensor_new(SM_INT32, 4, xd, &xi));
  CHECK_ERR(sm_seq_fit(m, xi, y, NULL), "x must be float32");
  sm_tensor_free(xi);
  CHECK_ERR(sm_seq_fit(m, NULL, y, NULL), "x is NULL");
  CHECK_EQ_INT(sm_seq_iterations(m), 0); /* nothing trained on bad input */
  sm_seq_free(m);
  sm_seq_free(NULL);
  sm_tensor_free(x);
  sm_tensor_free(y);
}

/* ---- names and summary --------------------------------------------------------------------------- */
static void test_names_summary(void) {
  sm_seq *m = new_seq(3, 28, 28, 1);
  CHECK_OK(sm_seq_conv2d(m, 32, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, 64, SM_ACT_RELU));
  CHECK_OK(sm_seq_dense(m, 10, SM_ACT_NONE));
  CHECK_EQ_STR(m->layers[0].name, "conv2d");
  CHECK_EQ_STR(m->layers[1].name, "max_pooling2d");
  CHECK_EQ_STR(m->layers[2].name, "flatten");
  CHECK_EQ_STR(m->layers[3].name, "dense");
  CHECK_EQ_STR(m->layers[4].name, "dense_1");
  CHECK_EQ_INT(m->layers[0].out_shape[0], 26);
  CHECK_EQ_INT(m->layers[1].out_shape[0], 13);
  CHECK_EQ_INT(m->layers[2].out_shape[0], 5408);
  char *s = sm_seq_summary(m);
  CHECK(s && strstr(s, "conv2d (Conv2D)") && strstr(s, "(None, 26, 26, 32)") && strstr(s, "320"));
  CHECK(s && strstr(s, "dense_1 (Dense)") && strstr(s, "346,176") && strstr(s, "Total params: 347,146"));
  free(s);
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, 42));
  /* glorot_uniform: conv limit sqrt(6 / (9 + 288)), dense sqrt(6 / (5408 + 64)); biases zero */
  const float *k = sm_tensor_data(m->layers[0].kernel);
  float lim = sqrtf(6.0f / (9.0f + 288.0f)), mx = 0.0f;
  for (int i = 0; i < 288; i++) mx = fabsf(k[i]) > mx ? fabsf(k[i]) : mx;
  CHECK(mx <= lim && mx > 0.8f * lim);
  const float *k3 = sm_tensor_data(m->layers[3].kernel);
  float lim3 = sqrtf(6.0f / (5408.0f + 64.0f)), mx3 = 0.0f;
  double mean = 0.0;
  for (int i = 0; i < 5408 * 64; i++) mx3 = fabsf(k3[i]) > mx3 ? fabsf(k3[i]) : mx3, mean += k3[i];
  CHECK(mx3 <= lim3 && mx3 > 0.99f * lim3 && fabs(mean / (5408 * 64)) < 0.01 * lim3);
  const float *b = sm_tensor_data(m->layers[3].bias);
  CHECK(b[0] == 0.0f && b[63] == 0.0f);
  CHECK(m->layers[3].kernel_slot[0] && m->layers[3].kernel_slot[1] && m->layers[3].bias_slot[1]);
  CHECK(m->layers[1].kernel == NULL);
  sm_seq_free(m);

  m = new_seq(1, 4, 0, 0);
  CHECK_OK(sm_seq_dense(m, 4, SM_ACT_RELU));
  CHECK_OK(sm_seq_dropout(m, 0.5f));
  CHECK_OK(sm_seq_dense(m, 4, SM_ACT_RELU));
  CHECK_OK(sm_seq_dropout(m, 0.5f));
  CHECK_OK(sm_seq_activation(m, SM_ACT_SOFTMAX));
  CHECK_EQ_STR(m->layers[2].name, "dense_1");
  CHECK_EQ_STR(m->layers[3].name, "dropout_1");
  CHECK_EQ_STR(m->layers[4].name, "activation");
  sm_optimizer sgd = sm_sgd_defaults();
  CHECK_OK(sm_seq_compile(m, &sgd, &l, 1));
  CHECK(m->layers[0].kernel_slot[0] == NULL); /* plain SGD keeps no slots */
  sm_seq_free(m);
}

/* Outside mpirun: one process, nothing opened, the collectives no-ops (train_mpi.sh runs the rest). */
static void test_dist_single(void) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_SIZE");
  unsetenv("PMIX_SIZE");
  int rank = -1, size = -1;
  CHECK_ERR(sm_dist_init(0, &rank, &size), "collective timeout must be > 0");
  CHECK(rank == 0 && size == 1);
  CHECK_OK(sm_dist_init(5, &rank, &size));
  CHECK(rank == 0 && size == 1);
  CHECK_OK(sm_dist_barrier());
  CHECK(sm_dist_wait_seconds() == 0.0);
  sm_dist_finalize();
}

/* sm__train_matmul (the Dense layers' products): every transpose, one thread and split (by rows,
 * and by columns) over a pool of two, with oneDNN off and as the environment says (where it is on,
 * its primitive cache is made, so its path ran), against a double-precision loop. */
static void test_dense_products(void) {
  /* the second splits its rows over a pool, the third (few rows) its columns */
  const int64_t shapes[3][3] = {{37, 19, 23}, {70, 64, 300}, {20, 100, 200}};
  const char *env = getenv("SM_DNNL");
  char saved[16] = "";
  if (env) snprintf(saved, sizeof saved, "%s", env);
  for (int dn = 0; dn < 2; dn++) {
    /* on: as the environment (or the build's default: sanitizer builds leave oneDNN off) says */
    if (!dn) setenv("SM_DNNL", "0", 1);
    else if (env) setenv("SM_DNNL", saved, 1);
    else unsetenv("SM_DNNL");
    for (int threads = 1; threads <= 2; threads++) {
      sm__train *t = calloc(1, sizeof *t);
      CHECK(t != NULL);
      if (!t) return;
      if (threads > 1) CHECK_OK(sm__threadpool_new(threads, &t->pool));
      for (int s = 0; s < 3; s++)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) {
            int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * n) * sizeof *b);
            float *c = malloc((size_t)(m * n) * sizeof *c);
            CHECK(a && b && c);
            if (!a || !b || !c) return;
            for (int64_t i = 0; i < m * k; i++) a[i] = frand();
            for (int64_t i = 0; i < k * n; i++) b[i] = frand();
            int which = (s * 4 + ta * 2 + tb) % 3;
            CHECK_OK(sm__train_matmul(t, which, ta, tb, m, n, k, a, b, c));
            int bad = 0;
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < n; j++) {
                double want = 0.0;
                for (int64_t p = 0; p < k; p++)
                  want += (double)(ta ? a[p * m + i] : a[i * k + p]) * (double)(tb ? b[j * k + p] : b[p * n + j]);
                bad += fabs((double)c[i * n + j] - want) > 1e-4 * (1.0 + fabs(want));
              }
            CHECK(bad == 0);
            if (bad) fprintf(stderr, "dense product %lldx%lldx%lld ta %d tb %d dnnl %d threads %d: %d wrong\n",
                             (long long)m, (long long)n, (long long)k, ta, tb, dn, threads, bad);
            CHECK((t->mm_cache[which] != NULL) == (dn && sm__dnnl_enabled()));
            free(a);
            free(b);
            free(c);
          }
      sm__train_free(t);
    }
  }
  if (env) setenv("SM_DNNL", saved, 1);
  else unsetenv("SM_DNNL");
}

int main(void) {
  test_layer_gradients();
  test_losses();
  fd_model(0);
  fd_model(1);
  test_goldens();
  test_errors();
  test_names_summary();
  test_reproducible();
  test_task_learns();
  test_mse_learns();
  test_dist_single();
  test_keras_layer_gradients();
  test_dense_products(); /* last: it draws from frand's stream, which the checks above were written for */
  TEST_MAIN_END();
}
