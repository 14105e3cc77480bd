/* test_train_gpu.c - the trainer's backend seam (train_internal.h's sm__train_backend) and its GPU
 * backend (src/train/fit_gpu.c).
 *
 * 1. The CPU backend: sm_seq_fit through the seam gives the same bits as the trainer's steps
 *    called by hand (shuffle, forward with dropout, loss, backward, optimizer; one thread), and
 *    reports the same running loss and validation figures.
 * 2. What the GPU trainer refuses (a softmax inside the network, other losses) is
 *    SM_UNIMPLEMENTED naming it, before any GPU is looked for.
 * 3. GPU training against CPU training: the same compiled model and seed, a few steps of SGD
 *    (Nesterov momentum), Adam, AdamW and centered RMSprop, logits and softmax outputs, stride-2
 *    SAME convolutions with an odd padding, the Keras configs' layers (batch norm with and without
 *    scale, its moving statistics too), a validation split: weights, optimizer slots and the reported figures within 1e-4 x scale.
 *    Where the CUDA device cannot be opened (CI, development machines) fit on the GPU must fail
 *    cleanly leaving the model as it was; then the same comparison runs over a module of host
 *    loops standing in for src/cuda (cuda_host_module.h), which checks fit_gpu.c's wiring (buffers,
 *    aliases, product shapes, gradients' routing, optimizer factors), and the test says why it
 *    skips the GPU itself (exit 77). tools/gpu_check.sh runs it on the H200.
 * 4. On a GPU, each training kernel of the module (src/cuda/train_*.cu) against its host loop:
 *    convolutions (strided, padded) forward and backward, overlapping max pooling and its backward,
 *    relu backward, product, gather, the dropout mask (bit for bit), cross-entropy, every optimizer,
 *    and the Keras layers' (rescaling, leaky relu, global / average pooling, batch norm). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_host_module.h"
#include "runtime/device.h"
#include "runtime/gpu/cuda_backend.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "train/train_internal.h"

enum { N = 40, H = 8, W = 8, K = 10 };

static sm_tensor *x_all, *y_all;

static void make_data(void) {
  int64_t xd[4] = {N, H, W, 1}, yd[1] = {N};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, xd, &x_all));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, yd, &y_all));
  float *x = sm_tensor_data(x_all);
  int32_t *y = sm_tensor_data(y_all);
  uint64_t s = 12345;
  for (int64_t i = 0; i < N * H * W; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((s >> 40) & 0xffff) / 65536.0f;
  }
  for (int i = 0; i < N; i++) y[i] = (int32_t)((i * 7 + (int)(x[i * H * W + 9] * 10)) % K);
}

/* conv 3x3 relu (SAME, stride 1) -> max pool 2 -> conv 3x3 VALID -> flatten -> dense relu ->
 * [dropout] -> dense K [softmax]; strided: the convolutions SAME with stride 2 instead of the pool,
 * each with an odd padding (3x3, 8 -> 4: one pixel after; 5x5, 4 -> 2: one before, two after) */
static sm_seq *model_with(int opt_kind, int softmax, float dropout, int strided) {
  int64_t in[3] = {H, W, 1};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(3, in, &m));
  if (!m) return NULL;
  if (strided) {
    CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 2, 2, SM_PAD_SAME, SM_ACT_RELU));
    CHECK_OK(sm_seq_conv2d(m, 5, 5, 5, 2, 2, SM_PAD_SAME, SM_ACT_RELU));
  } else {
    CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_SAME, SM_ACT_RELU));
    CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
    CHECK_OK(sm_seq_conv2d(m, 5, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_NONE));
  }
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, 12, SM_ACT_RELU));
  if (dropout > 0.0f) CHECK_OK(sm_seq_dropout(m, dropout));
  CHECK_OK(sm_seq_dense(m, K, softmax ? SM_ACT_SOFTMAX : SM_ACT_NONE));
  sm_optimizer o = opt_kind == SM_OPT_SGD ? sm_sgd_defaults()
                   : opt_kind == SM_OPT_ADAMW ? sm_adamw_defaults()
                   : opt_kind == SM_OPT_RMSPROP ? sm_rmsprop_defaults() : sm_adam_defaults();
  if (opt_kind == SM_OPT_SGD) o.learning_rate = 0.05f, o.momentum = 0.9f, o.nesterov = 1;
  if (opt_kind == SM_OPT_RMSPROP) o.centered = 1, o.momentum = 0.5f;
  if (opt_kind != SM_OPT_SGD) o.learning_rate = 0.01f;
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, !softmax};
  CHECK_OK(sm_seq_compile(m, &o, &l, 7));
  return m;
}
static sm_seq *model(int opt_kind, int softmax, float dropout) { return model_with(opt_kind, softmax, dropout, 0); }

/* The Keras configs' layers: rescaling -> conv -> batch norm -> leaky relu -> average pool (SAME:
 * edge windows count only their in-bounds pixels) -> conv relu -> batch norm (no scale) -> global
 * average pool -> dense; SGD with momentum. */
static sm_seq *keras_model(void) {
  int64_t in[3] = {H, W, 1};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(3, in, &m));
  if (!m) return NULL;
  CHECK_OK(sm__seq_rescaling(m, 0.5f, 0.1f));
  CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_SAME, SM_ACT_NONE));
  CHECK_OK(sm__seq_batchnorm(m, 0.9f, 1e-3f, 1, 1));
  CHECK_OK(sm__seq_leaky_relu(m, 0.2f));
  CHECK_OK(sm__seq_avg_pool2d(m, 3, 3, 2, 2, SM_PAD_SAME));
  CHECK_OK(sm_seq_conv2d(m, 6, 3, 3, 1, 1, SM_PAD_SAME, SM_ACT_RELU));
  CHECK_OK(sm__seq_batchnorm(m, 0.99f, 1e-3f, 1, 0));
  CHECK_OK(sm__seq_gap2d(m));
  CHECK_OK(sm_seq_dense(m, K, SM_ACT_NONE));
  /* SGD: a conv bias right before a batch norm has a gradient of float noise around 0, which Adam
   * would scale up to steps of the learning rate (on both sides, differently) */
  sm_optimizer o = sm_sgd_defaults();
  o.learning_rate = 0.05f, o.momentum = 0.9f;
  sm_loss l = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  CHECK_OK(sm_seq_compile(m, &o, &l, 5));
  return m;
}

typedef struct seen {
  double loss, acc, val_loss, val_acc;
  int calls;
} seen;
static int on_progress(const sm_fit_progress *p, void *ctx) {
  seen *s = ctx;
  s->calls++;
  if (p->step == p->steps) s->loss = p->loss, s->acc = p->accuracy, s->val_loss = p->val_loss, s->val_acc = p->val_accuracy;
  return 0;
}

static sm_fit_options opts(int device, seen *s) {
  sm_fit_options o = sm_fit_defaults();
  o.epochs = 2;
  o.batch_size = 8;
  o.seed = 99;
  o.validation_split = 0.2f;
  o.num_threads = 1;
  o.device = device;
  o.callback = on_progress;
  o.callback_ctx = s;
  return o;
}

/* |a - b| <= tol x max(1, max|b|) over every weight and optimizer slot; returns the worst ratio. */
static double compare(const sm_seq *a, const sm_seq *b, const char *what) {
  double worst = 0.0;
  for (int l = 0; l < a->nlayers; l++) {
    const sm__layer *A = &a->layers[l], *B = &b->layers[l];
    enum { NT = 4 + 2 * SM_OPT_SLOTS };
    const sm_tensor *ta[NT] = {A->kernel, A->bias, A->moving_mean, A->moving_var};
    const sm_tensor *tb[NT] = {B->kernel, B->bias, B->moving_mean, B->moving_var};
    for (int k = 0; k < SM_OPT_SLOTS; k++) {
      ta[4 + k] = A->kernel_slot[k], tb[4 + k] = B->kernel_slot[k];
      ta[4 + SM_OPT_SLOTS + k] = A->bias_slot[k], tb[4 + SM_OPT_SLOTS + k] = B->bias_slot[k];
    }
    for (int i = 0; i < NT; i++) {
      if (!ta[i] || !tb[i]) continue;
      const float *pa = sm_tensor_data(ta[i]), *pb = sm_tensor_data(tb[i]);
      int64_t n = sm_tensor_num_elements(ta[i]);
      double scale = 1.0, d = 0.0;
      for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(pb[j]));
      for (int64_t j = 0; j < n; j++) d = fmax(d, fabs((double)pa[j] - pb[j]) / scale);
      if (d > 1e-4) fprintf(stderr, "%s: layer %s tensor %d differs by %g x scale\n", what, A->name, i, d);
      worst = fmax(worst, d);
    }
  }
  return worst;
}

/* ---- 1. the CPU backend against the trainer's steps by hand ------------------------------------ */
static void cpu_seam(void) {
  sm_seq *a = model(SM_OPT_ADAM, 0, 0.25f), *b = model(SM_OPT_ADAM, 0, 0.25f);
  if (!a || !b) return;
  seen s = {0};
  sm_fit_options o = opts(SM_DEVICE_CPU, &s);
  CHECK_OK(sm_seq_fit(a, x_all, y_all, &o));
  /* by hand: what fit does on one thread, step by step */
  int64_t ntr = (int64_t)floor(N * (1.0 - (double)0.2f)), bs = 8, in_per = H * W, perm[N];
  sm__train *t;
  CHECK_OK(sm__train_get(b, &t));
  CHECK_OK(sm__train_pool(b, 1));
  CHECK_OK(sm__train_scratch(b, bs));
  sm__rng_seed(&t->rng, 99);
  const float *x = sm_tensor_data(x_all);
  const int32_t *y = sm_tensor_data(y_all);
  double sum = 0.0;
  int64_t correct = 0;
  for (int ep = 0; ep < 2; ep++) {
    for (int64_t i = 0; i < ntr; i++) perm[i] = i;
    for (int64_t i = ntr - 1; i > 0; i--) {
      int64_t j = (int64_t)sm__rng_below(&t->rng, (uint64_t)i + 1), tmp = perm[i];
      perm[i] = perm[j], perm[j] = tmp;
    }
    sum = 0.0, correct = 0;
    for (int64_t b0 = 0; b0 < ntr; b0 += bs) {
      int64_t nb = ntr - b0 < bs ? ntr - b0 : bs, c = 0;
      for (int64_t i = 0; i < nb; i++) {
        memcpy(t->xbatch + i * in_per, x + perm[b0 + i] * in_per, (size_t)in_per * sizeof(float));
        t->lbatch[i] = y[perm[b0 + i]];
      }
      const float *out;
      CHECK_OK(sm__forward(b, t->xbatch, nb, 1, &out));
      sum += sm__loss(b, out, nb, K, t->lbatch, NULL, t->grad[b->nlayers - 1], &c, &t->fused_last) * (double)nb;
      correct += c;
      CHECK_OK(sm__backward(b, t->xbatch, nb));
      sm__optimizer_step(b);
    }
  }
  CHECK(compare(a, b, "CPU seam") == 0.0); /* the same bits */
  CHECK_EQ_INT(sm_seq_iterations(a), sm_seq_iterations(b));
  CHECK(s.loss == sum / (double)ntr && s.acc == (double)correct / (double)ntr);
  CHECK_EQ_INT(s.calls, 2 * (4 + 1)); /* every step (31 samples: 4), and each epoch's end */
  sm_tensor *xv = NULL, *yv = NULL;
  int64_t xd[4] = {N - ntr, H, W, 1}, yd[1] = {N - ntr};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, xd, &xv));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, yd, &yv));
  if (xv && yv) {
    memcpy(sm_tensor_data(xv), x + ntr * in_per, (size_t)((N - ntr) * in_per) * sizeof(float));
    memcpy(sm_tensor_data(yv), y + ntr, (size_t)(N - ntr) * sizeof(int32_t));
    double vl = NAN, va = NAN;
    CHECK_OK(sm_seq_evaluate(b, xv, yv, 8, &vl, &va));
    CHECK(vl == s.val_loss && va == s.val_acc);
  }
  sm_tensor_free(xv);
  sm_tensor_free(yv);
  sm_seq_free(a);
  sm_seq_free(b);
}

/* ---- 2. what the GPU trainer refuses ------------------------------------------------------------- */
static void gpu_refuses(void) {
  int64_t in[3] = {H, W, 1};
  sm_fit_options o = sm_fit_defaults();
  o.device = SM_DEVICE_GPU;
  sm_optimizer adam = sm_adam_defaults();
  sm_loss ce = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1}, mse = {SM_LOSS_MSE, 0};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(3, in, &m));
  CHECK_OK(sm_seq_conv2d(m, 3, 3, 3, 1, 1, SM_PAD_SAME, SM_ACT_SOFTMAX));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, K, SM_ACT_NONE));
  CHECK_OK(sm_seq_compile(m, &adam, &ce, 1));
  CHECK_ERR(sm_seq_fit(m, x_all, y_all, &o), "GPU training: layer conv2d ends in a softmax over channels");
  sm_seq_free(m);
  CHECK_OK(sm_seq_new(3, in, &m));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, K, SM_ACT_NONE));
  CHECK_OK(sm_seq_compile(m, &adam, &mse, 1));
  sm_tensor *t = NULL;
  int64_t td[2] = {N, K};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, td, &t));
  if (t) memset(sm_tensor_data(t), 0, (size_t)(N * K) * sizeof(float));
  CHECK_ERR(sm_seq_fit(m, x_all, t, &o), "sparse categorical cross-entropy only");
  o.device = 7;
  CHECK_ERR(sm_seq_fit(m, x_all, t, &o), "device must be SM_DEVICE_CPU or SM_DEVICE_GPU");
  sm_tensor_free(t);
  sm_seq_free(m);
}

/* ---- 3. GPU against CPU ---------------------------------------------------------------------------- */
static void gpu_vs_cpu(int opt_kind, int softmax, int strided, const char *what) {
  sm_seq *c = strided < 0 ? keras_model() : model_with(opt_kind, softmax, 0.0f, strided);
  sm_seq *g = strided < 0 ? keras_model() : model_with(opt_kind, softmax, 0.0f, strided);
  if (!c || !g) return;
  seen sc = {0}, sg = {0};
  sm_fit_options oc = opts(SM_DEVICE_CPU, &sc), og = opts(SM_DEVICE_GPU, &sg);
  CHECK_OK(sm_seq_fit(c, x_all, y_all, &oc));
  CHECK_OK(sm_seq_fit(g, x_all, y_all, &og));
  double d = compare(g, c, what);
  fprintf(stderr, "%s: GPU weights and slots within %.2g x scale of the CPU's\n", what, d);
  CHECK(d <= 1e-4);
  CHECK_EQ_INT(sm_seq_iterations(g), sm_seq_iterations(c));
  /* accuracies: an argmax between two logits within float noise may go either way, for one sample */
  CHECK(fabs(sg.loss - sc.loss) <= 1e-4 * fmax(1.0, fabs(sc.loss)) && fabs(sg.acc - sc.acc) <= 1.0 / 31 + 1e-9);
  CHECK(fabs(sg.val_loss - sc.val_loss) <= 1e-4 * fmax(1.0, fabs(sc.val_loss)) &&
        fabs(sg.val_acc - sc.val_acc) <= 1.0 / 9 + 1e-9);
  CHECK_EQ_INT(sg.calls, 2 * (1 + 1)); /* the GPU reports each epoch's last step (< 50 steps) and its end */
  sm_seq_free(c);
  sm_seq_free(g);
}

static void gpu_dropout(void) {
  sm_seq *g = model(SM_OPT_ADAM, 1, 0.5f);
  if (!g) return;
  float before = ((const float *)sm_tensor_data(g->layers[0].kernel))[0];
  seen s = {0};
  sm_fit_options o = opts(SM_DEVICE_GPU, &s);
  CHECK_OK(sm_seq_fit(g, x_all, y_all, &o));
  CHECK(isfinite(s.loss) && s.loss > 0.0 && isfinite(s.val_loss));
  CHECK(((const float *)sm_tensor_data(g->layers[0].kernel))[0] != before);
  sm_seq_free(g);
}

/* ---- 4. each training kernel of the module against its host loop -------------------------------- */
/* Buffers on the module's device (the real one, or the host module's "device"), filled from and
 * read back into host arrays; every kernel's outputs within 1e-4 x scale of cuda_host_module.h's. */
typedef struct kdev {
  const smcu_api *A;
  void *s;
  char err[SMCU_ERR];
  void *bufs[96];
  int nbufs;
} kdev;

static void *kup(kdev *d, const void *h, size_t bytes) {
  void *p = NULL;
  if (d->nbufs == 96 || d->A->alloc(d->s, bytes, &p, d->err)) return NULL;
  d->bufs[d->nbufs++] = p;
  if (h && d->A->h2d(d->s, p, h, bytes, d->err)) return NULL;
  return p;
}
static int kdown(kdev *d, void *h, const void *p, size_t bytes) { return d->A->d2h(d->s, h, p, bytes, d->err); }

static void fill(float *v, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((seed >> 40) & 0xffff) / 32768.0f - 1.0f;
  }
}

static void kclose(const float *got, const float *want, int64_t n, const char *what) {
  double scale = 1.0, d = 0.0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)got[i] - want[i]) / scale);
  if (!(d <= 1e-4)) fprintf(stderr, "kernel %s: differs from the host loop by %g x scale\n", what, d);
  CHECK(d <= 1e-4);
}

#define KN 4096
static void kernels(const smcu_api *A) {
  kdev d = {A, NULL, "", {0}, 0};
  if (A->stream_get(&d.s, d.err)) {
    fprintf(stderr, "stream: %s\n", d.err);
    CHECK(0);
    return;
  }
  const smcu_train_api *T = A->train, *HT = host_module.train;
  static float a[KN], b[KN], c[KN], want[KN], got[KN], s0[KN], s1[KN], s2[KN], w0[KN];
  fill(a, KN, 1), fill(b, KN, 2), fill(c, KN, 3);
  /* convolutions: stride 2 x 1 with padding, and a 3x3 SAME one */
  const smcu_conv convs[] = {{2, 7, 6, 3, 4, 3, 2, 4, 5, 1, 0, 2, 1, 1, 1, 1}, {3, 5, 5, 2, 5, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1}};
  for (int i = 0; i < 2; i++) {
    const smcu_conv *v = &convs[i];
    int64_t nx = v->n * v->h * v->w * v->c, nw = v->kh * v->kw * v->c * v->k, ny = v->n * v->oh * v->ow * v->k;
    float *dx = kup(&d, a, (size_t)nx * 4), *dw = kup(&d, b, (size_t)nw * 4), *dy = kup(&d, c, (size_t)ny * 4);
    float *out = kup(&d, NULL, (size_t)KN * 4);
    CHECK(dx && dw && dy && out);
    if (!(dx && dw && dy && out)) break;
    CHECK(!T->conv2d_fwd(d.s, v, dx, dw, out, d.err) && !kdown(&d, got, out, (size_t)ny * 4));
    HT->conv2d_fwd(NULL, v, a, b, want, d.err);
    kclose(got, want, ny, "conv2d_fwd");
    CHECK(!T->conv2d_bwd_data(d.s, v, dy, dw, out, d.err) && !kdown(&d, got, out, (size_t)nx * 4));
    HT->conv2d_bwd_data(NULL, v, c, b, want, d.err);
    kclose(got, want, nx, "conv2d_bwd_data");
    CHECK(!T->conv2d_bwd_filter(d.s, v, dx, dy, out, d.err) && !kdown(&d, got, out, (size_t)nw * 4));
    HT->conv2d_bwd_filter(NULL, v, a, c, want, d.err);
    kclose(got, want, nw, "conv2d_bwd_filter");
  }
  /* max pooling 3x3 stride 2, SAME (overlapping windows), and its backward */
  const smcu_pool pl = {2, 7, 8, 3, 4, 4, 3, 3, 2, 2, 1, 0, 0};
  int64_t nx = 2 * 7 * 8 * 3, ny = 2 * 4 * 4 * 3;
  int64_t *dam = kup(&d, NULL, (size_t)ny * 8), ham[KN];
  float *dx = kup(&d, a, (size_t)nx * 4), *dy = kup(&d, NULL, (size_t)ny * 4), *dg = kup(&d, c, (size_t)ny * 4);
  float *dgx = kup(&d, NULL, (size_t)nx * 4);
  CHECK(dam && dx && dy && dg && dgx);
  if (dam && dx && dy && dg && dgx) {
    int64_t gam[KN];
    CHECK(!T->maxpool_fwd(d.s, &pl, dx, dy, dam, d.err) && !kdown(&d, got, dy, (size_t)ny * 4) &&
          !kdown(&d, gam, dam, (size_t)ny * 8));
    HT->maxpool_fwd(NULL, &pl, a, want, ham, d.err);
    kclose(got, want, ny, "maxpool_fwd");
    CHECK(!memcmp(gam, ham, (size_t)ny * 8));
    CHECK(!T->maxpool_bwd(d.s, &pl, dg, dam, dgx, d.err) && !kdown(&d, got, dgx, (size_t)nx * 4));
    HT->maxpool_bwd(NULL, &pl, c, ham, want, d.err);
    kclose(got, want, nx, "maxpool_bwd");
  }
  /* elementwise: relu backward, product, gather, dropout (the same hash: the same mask) */
  float *da = kup(&d, a, KN * 4), *db = kup(&d, b, KN * 4), *dm = kup(&d, NULL, KN * 4), *dz = kup(&d, NULL, KN * 4);
  int32_t idx[64];
  for (int i = 0; i < 64; i++) idx[i] = (i * 37) % 64;
  int32_t *didx = kup(&d, idx, sizeof idx);
  CHECK(da && db && dm && dz && didx);
  if (!(da && db && dm && dz && didx)) goto done;
  memcpy(want, b, sizeof want);
  HT->relu_bwd(NULL, a, want, KN, d.err);
  CHECK(!T->relu_bwd(d.s, da, db, KN, d.err) && !kdown(&d, got, db, KN * 4));
  kclose(got, want, KN, "relu_bwd");
  HT->mul(NULL, a, c, want, KN, d.err);
  CHECK(!T->mul(d.s, da, kup(&d, c, KN * 4), dz, KN, d.err) && !kdown(&d, got, dz, KN * 4));
  kclose(got, want, KN, "mul");
  HT->gather32(NULL, a, idx, 64, 60, want, d.err);
  CHECK(!T->gather32(d.s, da, didx, 64, 60, dz, d.err) && !kdown(&d, got, dz, 64 * 60 * 4));
  CHECK(!memcmp(got, want, 64 * 60 * 4));
  HT->dropout(NULL, a, want, s0, KN, 0.3f, 77, d.err);
  CHECK(!T->dropout(d.s, da, dz, dm, KN, 0.3f, 77, d.err) && !kdown(&d, got, dm, KN * 4));
  CHECK(!memcmp(got, s0, KN * 4));
  /* sparse cross-entropy on logits and on probabilities, its gradient and sums */
  for (int mode = 0; mode < 2; mode++) {
    int32_t lab[40];
    double acc_h[2] = {0.5, 1.0}, acc_d[2] = {0.5, 1.0}, rows[80];
    for (int i = 0; i < 40; i++) lab[i] = (i * 3) % 10;
    const float *in = a;
    if (mode) { /* probabilities */
      host_module.softmax(NULL, a, s1, 40, 10, d.err);
      in = s1;
    }
    float *dout = kup(&d, in, 400 * 4);
    int32_t *dlab = kup(&d, lab, sizeof lab);
    double *drow = kup(&d, NULL, sizeof rows), *dacc = kup(&d, acc_d, sizeof acc_d);
    CHECK(dout && dlab && drow && dacc);
    if (!(dout && dlab && drow && dacc)) break;
    HT->sparse_xent(NULL, in, lab, 40, 10, mode, want, rows, acc_h, d.err);
    CHECK(!T->sparse_xent(d.s, dout, dlab, 40, 10, mode, dz, drow, dacc, d.err) && !kdown(&d, got, dz, 400 * 4) &&
          !kdown(&d, acc_d, dacc, sizeof acc_d));
    kclose(got, want, 400, mode ? "sparse_xent (probabilities)" : "sparse_xent (logits)");
    CHECK(fabs(acc_d[0] - acc_h[0]) <= 1e-4 * fmax(1.0, fabs(acc_h[0])) && acc_d[1] == acc_h[1]);
  }
  /* the Keras layers' kernels */
  {
    float *dc = kup(&d, c, KN * 4), *dst = kup(&d, NULL, 64 * 4), *dmm = kup(&d, NULL, 8 * 4), *dmv = kup(&d, NULL, 8 * 4);
    float *dgk = kup(&d, NULL, 8 * 4), *dgb = kup(&d, NULL, 8 * 4);
    CHECK(dc && dst && dmm && dmv && dgk && dgb);
    if (!(dc && dst && dmm && dmv && dgk && dgb)) goto done;
    HT->affine(NULL, a, want, KN, 0.5f, 0.1f, d.err);
    CHECK(!T->affine(d.s, da, dz, KN, 0.5f, 0.1f, d.err) && !kdown(&d, got, dz, KN * 4));
    kclose(got, want, KN, "affine");
    HT->leaky_bwd(NULL, a, c, want, KN, 0.2f, d.err);
    CHECK(!T->leaky_bwd(d.s, da, dc, dz, KN, 0.2f, d.err) && !kdown(&d, got, dz, KN * 4));
    kclose(got, want, KN, "leaky_bwd");
    HT->gap_bwd(NULL, c, want, 4, 9, 7, d.err);
    CHECK(!T->gap_bwd(d.s, dc, dz, 4, 9, 7, d.err) && !kdown(&d, got, dz, 4 * 9 * 7 * 4));
    kclose(got, want, 4 * 9 * 7, "gap_bwd");
    smcu_pool ap = pl;
    ap.avg = 1;
    HT->avgpool_bwd(NULL, &ap, c, want, d.err);
    CHECK(!T->avgpool_bwd(d.s, &ap, dc, dz, d.err) && !kdown(&d, got, dz, (size_t)nx * 4));
    kclose(got, want, nx, "avgpool_bwd");
    /* batch norm over [100, 8]: statistics (training and not), the moving ones, apply, backward */
    float mm[8], mv[8], st[16], gk[8], gb[8], sth[16];
    for (int training = 0; training < 2; training++) {
      for (int i = 0; i < 8; i++) mm[i] = b[i], mv[i] = fabsf(c[i]) + 0.5f;
      CHECK(!A->h2d(d.s, dmm, mm, sizeof mm, d.err) && !A->h2d(d.s, dmv, mv, sizeof mv, d.err));
      HT->bn_stats(NULL, a, mm, mv, 100, 8, training, 0.9f, 1e-3f, sth, d.err);
      CHECK(!T->bn_stats(d.s, da, dmm, dmv, 100, 8, training, 0.9f, 1e-3f, dst, d.err) &&
            !kdown(&d, st, dst, sizeof st) && !kdown(&d, got, dmm, sizeof mm) && !kdown(&d, got + 8, dmv, sizeof mv));
      kclose(st, sth, 16, "bn_stats");
      kclose(got, mm, 8, "bn_stats moving mean");
      kclose(got + 8, mv, 8, "bn_stats moving variance");
    }
    HT->bn_apply(NULL, a, b, c, sth, want, 100, 8, d.err);
    CHECK(!T->bn_apply(d.s, da, kup(&d, b, 8 * 4), dc, dst, dz, 100, 8, d.err) && !kdown(&d, got, dz, 800 * 4));
    kclose(got, want, 800, "bn_apply");
    HT->bn_bwd(NULL, a, c, b, sth, 100, 8, 1, 0, want, gk, gb, d.err);
    CHECK(!T->bn_bwd(d.s, da, dc, kup(&d, b, 8 * 4), dst, 100, 8, 1, 0, dz, dgk, dgb, d.err) &&
          !kdown(&d, got, dz, 800 * 4) && !kdown(&d, st, dgk, 8 * 4) && !kdown(&d, st + 8, dgb, 8 * 4));
    kclose(got, want, 800, "bn_bwd gx");
    kclose(st, gk, 8, "bn_bwd gamma");
    kclose(st + 8, gb, 8, "bn_bwd beta");
  }
  /* the optimizers, every slot */
  for (int kind = 0; kind < 4; kind++) {
    smcu_opt o = {kind, 1, 1, 0.01f, 0.9f, 0.003f, 0.1f, 0.001f, 1e-7f, 0.004f, 0.9f, 0.1f};
    memcpy(w0, a, sizeof w0), memcpy(s0, b, sizeof s0), memcpy(s1, c, sizeof s1), memcpy(s2, b, sizeof s2);
    for (int i = 0; i < KN; i++) s1[i] = fabsf(s1[i]) + 2.0f; /* v, RMSprop's velocity: > a^2 */
    float *dw = kup(&d, w0, KN * 4), *d0 = kup(&d, s0, KN * 4), *d1 = kup(&d, s1, KN * 4), *d2 = kup(&d, s2, KN * 4);
    CHECK(dw && d0 && d1 && d2);
    if (!(dw && d0 && d1 && d2)) break;
    /* RMSprop's velocity is slot 0 */
    if (kind == 3) {
      memcpy(s0, s1, sizeof s0);
      CHECK(!A->h2d(d.s, d0, s0, KN * 4, d.err));
    }
    HT->opt_update(NULL, &o, w0, c, s0, s1, s2, KN, d.err);
    CHECK(!T->opt_update(d.s, &o, dw, kup(&d, c, KN * 4), d0, d1, d2, KN, d.err) && !kdown(&d, got, dw, KN * 4));
    kclose(got, w0, KN, "opt_update");
    CHECK(!kdown(&d, got, d0, KN * 4));
    kclose(got, s0, KN, "opt_update slot 0");
  }
done:
  for (int i = d.nbufs - 1; i >= 0; i--) A->release(d.s, d.bufs[i]);
  CHECK(!A->stream_put(d.s, d.err));
}

int main(void) {
  make_data();
  cpu_seam();
  gpu_refuses();
  sm_status *st = sm__cuda_open();
  char why[512] = "";
  if (st) {
    snprintf(why, sizeof why, "%s", sm_status_message(st));
    sm_status_free(st);
    /* no GPU: fit on it fails cleanly, the model as it was */
    sm_seq *m = model(SM_OPT_ADAM, 0, 0.0f);
    if (m) {
      float w0 = ((const float *)sm_tensor_data(m->layers[0].kernel))[0];
      sm_fit_options o = sm_fit_defaults();
      o.device = SM_DEVICE_GPU;
      CHECK_ERR(sm_seq_fit(m, x_all, y_all, &o), "no GPU");
      CHECK(((const float *)sm_tensor_data(m->layers[0].kernel))[0] == w0 && sm_seq_iterations(m) == 0);
      sm_seq_free(m);
    }
    CHECK_OK(sm__cuda_open_with(&host_module));
  }
  gpu_vs_cpu(SM_OPT_SGD, 0, 0, "SGD nesterov, logits");
  gpu_vs_cpu(SM_OPT_ADAM, 1, 0, "Adam, softmax");
  gpu_vs_cpu(SM_OPT_ADAMW, 0, 0, "AdamW, logits");
  gpu_vs_cpu(SM_OPT_RMSPROP, 1, 0, "RMSprop centered, softmax");
  gpu_vs_cpu(SM_OPT_ADAM, 0, 1, "Adam, stride-2 SAME convolutions (odd padding)");
  gpu_vs_cpu(SM_OPT_SGD, 0, -1, "Keras layers (rescaling, batch norm, leaky relu, average pools)");
  gpu_dropout();
  kernels(sm__cuda_api());
  sm_tensor_free(x_all);
  sm_tensor_free(y_all);
  if (sm_test_failures) return 1;
  if (why[0]) {
    printf("skipped: no GPU (%s); the GPU trainer was checked over host loops standing in for the module\n", why);
    return 77;
  }
  printf("ok: GPU training matches the CPU's\n");
  return 0;
}
