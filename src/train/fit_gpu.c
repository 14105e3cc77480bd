/* fit_gpu.c - the trainer's GPU backend (sm__train_gpu, train_internal.h's seam): sm_seq_fit with
 * device SM_DEVICE_GPU. At begin the whole data set (inputs and class ids), every weight and
 * optimizer slot go to device memory, with the activations, gradients, pooling argmaxes and
 * dropout masks of batches of up to bs samples; each step then gathers its shuffled batch on the
 * device (the epoch's order is uploaded once per epoch) and runs the layers' forward, the loss,
 * the backward and the optimizer there, through the module's kernels (src/cuda: cuDNN
 * convolutions and their backward, cuBLAS products, own kernels for the rest; smcu.h). Nothing
 * comes back per step: the loss and accuracy sums stay on the device until fit asks for them
 * (every report_every steps, at each epoch's end); end copies the weights and slots back into
 * the sm_seq, so the export is the CPU path's.
 *
 * The layers are the seed CNN's: Conv2D (VALID or SAME; an odd SAME padding, which cuDNN cannot
 * express, by padding the input explicitly and cropping its gradient), MaxPooling2D,
 * Flatten, Reshape, Dense, Dropout, Activation relu / linear, softmax only as the last layer
 * under sparse cross-entropy (its gradient taken w.r.t. the softmax's input, as the CPU's); and
 * the Keras configs' BatchNormalization (batch statistics and the moving ones updated on the
 * device, copied back at the end), AveragePooling2D, GlobalAveragePooling2D, Rescaling, LeakyReLU;
 * sparse categorical cross-entropy on logits or on that softmax; SGD, Adam, AdamW, RMSprop with
 * the CPU's factors (optim.c). Anything else is SM_UNIMPLEMENTED at begin, naming it. */
#include <stdlib.h>
#include <string.h>

#include "cuda/smcu.h"
#include "runtime/device.h"
#include "runtime/gpu/cuda_backend.h"
#include "train/train_internal.h"

#define GPU_MAX_ALLOCS (SM_SEQ_MAX_LAYERS * 16 + 16)

typedef struct glayer {
  float *w, *b, *gw, *gb, *wslot[SM_OPT_SLOTS], *bslot[SM_OPT_SLOTS];
  float *act, *grad, *mask;
  float *mm, *mv, *stats; /* batch normalization: moving mean / variance, this batch's mean and 1/std */
  int64_t *argmax;
  float *y, *g; /* this step's output and its gradient (aliases for flatten / reshape / dropout at eval) */
  smcu_conv cv; /* conv2d: n set per call */
  /* conv2d with asymmetric SAME padding (TF puts the odd pixel after): the input padded explicitly
   * into xp ([cap, hp, wp, c], cv then pads nothing) and the input gradient cropped from gxp */
  int asym;
  int64_t pad_top, pad_left;
  float *xp, *gxp;
  smcu_pool pl; /* max / average pooling: n set per call */
} glayer;

typedef struct gctx {
  sm_seq *m;
  const smcu_api *A;
  const smcu_train_api *T;
  void *s; /* the fit's stream */
  int64_t n, ntr, bs, in_per, k;
  int mode;    /* sparse_xent's: 0 logits, 1 behind the last layer's softmax */
  int first_w; /* the first layer with weights: no input gradient below it */
  float *x, *xb, *ones;
  int32_t *lab, *lb, *perm, *hperm;
  double *rowbuf, *acc; /* acc: training sums [0, 1], validation's [2, 3] */
  uint64_t drop_seed, drop_calls;
  glayer L[SM_SEQ_MAX_LAYERS];
  void *allocs[GPU_MAX_ALLOCS];
  int nallocs;
  char err[SMCU_ERR];
} gctx;

static sm_status *fail(gctx *g, const char *what) {
  return sm_status_prefix(sm__cuda_err(g->err), "GPU training: %s", what);
}

static sm_status *dalloc(gctx *g, size_t bytes, void **p) {
  *p = NULL;
  if (g->nallocs == GPU_MAX_ALLOCS) return sm_status_new(SM_INTERNAL, "GPU training: too many buffers");
  if (g->A->alloc(g->s, bytes ? bytes : 4, p, g->err))
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "GPU training: OOM when allocating %zu bytes on the GPU: %s", bytes,
                         g->err);
  g->allocs[g->nallocs++] = *p;
  return NULL;
}

#define FALLOC(g, count, ptr) dalloc((g), (size_t)(count) * sizeof(float), (void **)(ptr))
#define TRY(expr)         \
  do {                    \
    sm_status *st_ = (expr); \
    if (st_) return st_;  \
  } while (0)
/* a module call: nonzero = failed, with the message in g->err */
#define CALL(g, what, expr)               \
  do {                                    \
    if (expr) return fail((g), (what));   \
  } while (0)

static sm_status *upload(gctx *g, float **dst, const sm_tensor *t) {
  int64_t n = sm_tensor_num_elements(t);
  TRY(FALLOC(g, n, dst));
  CALL(g, "upload", g->A->h2d(g->s, *dst, sm_tensor_data(t), (size_t)n * sizeof(float), g->err));
  return NULL;
}

static sm_status *download(gctx *g, sm_tensor *t, const float *src) {
  CALL(g, "download", g->A->d2h(g->s, sm_tensor_data(t), src, (size_t)sm_tensor_num_elements(t) * sizeof(float),
                               g->err));
  return NULL;
}

static int64_t same_pad(int64_t in, int64_t out, int64_t k, int64_t s, int same, int64_t *total) {
  int64_t t = same ? (out - 1) * s + k - in : 0;
  *total = t > 0 ? t : 0;
  return *total / 2;
}

/* What the GPU backend cannot train (NULL: it can). */
static sm_status *unsupported(const sm_seq *m) {
  const char *alt = "; train with --device cpu (SM_DEVICE_CPU)";
  if (m->loss.kind != SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY)
    return sm_status_new(SM_UNIMPLEMENTED, "GPU training supports sparse categorical cross-entropy only, not this "
                         "model's loss%s", alt);
  for (int l = 0; l < m->nlayers; l++) {
    const sm__layer *L = &m->layers[l];
    int last = l == m->nlayers - 1, ok = 1;
    const char *why = "has no GPU training kernel yet";
    switch (L->kind) {
      case SM_LAYER_CONV2D:
        if (L->activation == SM_ACT_SOFTMAX) ok = 0, why = "ends in a softmax over channels (not on the GPU)";
        break;
      case SM_LAYER_DENSE:
      case SM_LAYER_ACTIVATION:
        if (L->activation == SM_ACT_SOFTMAX && (!last || m->loss.from_logits))
          ok = 0, why = "has a softmax that is not the last layer's under cross-entropy on probabilities";
        break;
      case SM_LAYER_MAXPOOL2D:
      case SM_LAYER_AVGPOOL2D:
      case SM_LAYER_GAP2D:
      case SM_LAYER_BATCHNORM:
      case SM_LAYER_RESCALING:
      case SM_LAYER_LEAKY_RELU:
      case SM_LAYER_FLATTEN:
      case SM_LAYER_RESHAPE:
        break;
      case SM_LAYER_DROPOUT:
        ok = !last;
        break;
      default:
        ok = 0;
        break;
    }
    if (ok && last && SM_LAYER_IS_ALIAS(L->kind)) ok = 0, why = "is the last layer (the GPU trainer needs its own output)";
    if (!ok) return sm_status_new(SM_UNIMPLEMENTED, "GPU training: layer %s %s%s", L->name, why, alt);
  }
  const sm__layer *last = &m->layers[m->nlayers - 1];
  if (!m->loss.from_logits && last->activation != SM_ACT_SOFTMAX)
    return sm_status_new(SM_UNIMPLEMENTED, "GPU training: cross-entropy on probabilities needs the last layer to be a "
                         "softmax%s", alt);
  return NULL;
}

/* ---- setup ------------------------------------------------------------------------------------- */
static void gpu_free(void *ctx) {
  gctx *g = ctx;
  if (!g) return;
  for (int i = g->nallocs - 1; i >= 0; i--) g->A->release(g->s, g->allocs[i]);
  if (g->s) g->A->stream_put(g->s, g->err); /* waits for the releases; a failure was reported already */
  free(g->hperm);
  free(g);
}

static sm_status *layer_buffers(gctx *g, int l, int64_t cap, int64_t *max_rows) {
  const sm__layer *L = &g->m->layers[l];
  glayer *G = &g->L[l];
  int64_t in_per = sm__elems(L->in_rank, L->in_shape), out_per = sm__elems(L->out_rank, L->out_shape);
  if (!SM_LAYER_IS_ALIAS(L->kind)) {
    TRY(FALLOC(g, cap * out_per, &G->act));
    TRY(FALLOC(g, cap * out_per, &G->grad));
  } else {
    G->grad = l > 0 ? g->L[l - 1].grad : NULL;
  }
  if (L->kind == SM_LAYER_MAXPOOL2D) TRY(dalloc(g, (size_t)(cap * out_per) * sizeof(int64_t), (void **)&G->argmax));
  if (L->kind == SM_LAYER_DROPOUT) TRY(FALLOC(g, cap * in_per, &G->mask));
  if (L->kind == SM_LAYER_BATCHNORM) {
    TRY(upload(g, &G->mm, L->moving_mean));
    TRY(upload(g, &G->mv, L->moving_var));
    TRY(FALLOC(g, 2 * (int64_t)L->units, &G->stats));
  }
  if (L->kernel) {
    TRY(upload(g, &G->w, L->kernel));
    TRY(upload(g, &G->b, L->bias));
    TRY(FALLOC(g, sm_tensor_num_elements(L->kernel), &G->gw));
    TRY(FALLOC(g, sm_tensor_num_elements(L->bias), &G->gb));
    for (int k = 0; k < SM_OPT_SLOTS; k++) {
      if (L->kernel_slot[k]) TRY(upload(g, &G->wslot[k], L->kernel_slot[k]));
      if (L->bias_slot[k]) TRY(upload(g, &G->bslot[k], L->bias_slot[k]));
    }
  }
  int same = L->padding == SM_PAD_SAME;
  int64_t tot, rows = 0;
  if (L->kind == SM_LAYER_CONV2D) {
    smcu_conv *c = &G->cv;
    c->h = L->in_shape[0], c->w = L->in_shape[1], c->c = L->in_shape[2], c->k = L->units;
    c->kh = L->kh, c->kw = L->kw, c->oh = L->out_shape[0], c->ow = L->out_shape[1];
    int64_t toth, totw;
    c->pad_h = same_pad(c->h, c->oh, c->kh, L->sh, same, &toth);
    c->pad_w = same_pad(c->w, c->ow, c->kw, L->sw, same, &totw);
    c->stride_h = L->sh, c->stride_w = L->sw, c->dil_h = c->dil_w = 1, c->groups = 1;
    rows = cap * c->oh * c->ow;
    if (toth % 2 || totw % 2) { /* cuDNN pads symmetrically: pad explicitly, convolve VALID */
      G->asym = 1, G->pad_top = c->pad_h, G->pad_left = c->pad_w;
      c->h += toth, c->w += totw, c->pad_h = c->pad_w = 0;
      TRY(FALLOC(g, cap * c->h * c->w * c->c, &G->xp));
      if (l > g->first_w) TRY(FALLOC(g, cap * c->h * c->w * c->c, &G->gxp));
    }
  } else if (L->kind == SM_LAYER_MAXPOOL2D || L->kind == SM_LAYER_AVGPOOL2D) {
    smcu_pool *p = &G->pl;
    p->h = L->in_shape[0], p->w = L->in_shape[1], p->c = L->in_shape[2], p->oh = L->out_shape[0];
    p->ow = L->out_shape[1], p->kh = L->kh, p->kw = L->kw, p->sh = L->sh, p->sw = L->sw;
    p->avg = L->kind == SM_LAYER_AVGPOOL2D;
    p->pad_top = same_pad(p->h, p->oh, p->kh, p->sh, same, &tot);
    p->pad_left = same_pad(p->w, p->ow, p->kw, p->sw, same, &tot);
  } else if (L->kind == SM_LAYER_DENSE) {
    rows = cap;
  }
  if (rows > *max_rows) *max_rows = rows;
  return NULL;
}

static sm_status *gpu_begin_in(gctx *g, const float *x, const int32_t *labels) {
  sm_seq *m = g->m;
  const sm__layer *last = &m->layers[m->nlayers - 1];
  TRY(sm__cuda_open());
  g->A = sm__cuda_api();
  if (!g->A || !g->A->train)
    return sm_status_new(SM_FAILED_PRECONDITION, "GPU training: the CUDA module has no training kernels (an older "
                         "libsavedmodel_cuda.so?)");
  g->T = g->A->train;
  CALL(g, "stream", g->A->stream_get(&g->s, g->err));
  int64_t cap = g->bs < g->n ? g->bs : g->n, max_rows = 0;
  g->in_per = sm__elems(m->in_rank, m->in_shape);
  g->k = last->out_shape[last->out_rank - 1];
  g->mode = m->loss.from_logits ? 0 : 1;
  g->first_w = -1;
  for (int l = 0; l < m->nlayers && g->first_w < 0; l++)
    if (m->layers[l].kernel) g->first_w = l;
  TRY(FALLOC(g, g->n * g->in_per, &g->x));
  CALL(g, "upload the data set", g->A->h2d(g->s, g->x, x, (size_t)(g->n * g->in_per) * sizeof(float), g->err));
  TRY(dalloc(g, (size_t)g->n * sizeof(int32_t), (void **)&g->lab));
  CALL(g, "upload the labels", g->A->h2d(g->s, g->lab, labels, (size_t)g->n * sizeof(int32_t), g->err));
  TRY(dalloc(g, (size_t)g->ntr * sizeof(int32_t), (void **)&g->perm));
  TRY(FALLOC(g, cap * g->in_per, &g->xb));
  TRY(dalloc(g, (size_t)cap * sizeof(int32_t), (void **)&g->lb));
  TRY(dalloc(g, (size_t)(2 * cap) * sizeof(double), (void **)&g->rowbuf));
  TRY(dalloc(g, 4 * sizeof(double), (void **)&g->acc));
  for (int l = 0; l < m->nlayers; l++) TRY(layer_buffers(g, l, cap, &max_rows));
  TRY(FALLOC(g, max_rows, &g->ones));
  CALL(g, "ones", g->T->fill(g->s, g->ones, 1.0f, max_rows, g->err));
  sm__train *t = m->priv;
  sm__rng r = t->rng; /* a copy: the shuffling stream stays the CPU's */
  g->drop_seed = sm__rng_next(&r) ^ 0xD50F5EEDull;
  return NULL;
}

static sm_status *gpu_begin(sm_seq *m, const float *x, const int32_t *labels, const float *targets, int64_t n,
                            int64_t ntr, int64_t bs, void **ctx) {
  (void)targets; /* MSE / categorical targets: refused by unsupported() */
  *ctx = NULL;
  sm_status *st = unsupported(m);
  if (st) return st;
  if (n > INT32_MAX) return sm_status_new(SM_UNIMPLEMENTED, "GPU training: more than 2^31 samples");
  gctx *g = calloc(1, sizeof *g);
  if (!g || !(g->hperm = malloc((size_t)(ntr > 0 ? ntr : 1) * sizeof *g->hperm))) {
    if (g) free(g);
    return sm_status_new(SM_NO_MEMORY, "GPU training: out of host memory");
  }
  g->m = m, g->n = n, g->ntr = ntr, g->bs = bs;
  if ((st = gpu_begin_in(g, x, labels))) {
    if (g->A) gpu_free(g);
    else {
      free(g->hperm);
      free(g);
    }
    return st;
  }
  *ctx = g;
  return NULL;
}

/* ---- forward / backward -------------------------------------------------------------------------- */
static sm_status *forward(gctx *g, const float *in, int64_t rows, int training) {
  sm_seq *m = g->m;
  for (int l = 0; l < m->nlayers; l++) {
    const sm__layer *L = &m->layers[l];
    glayer *G = &g->L[l];
    int64_t in_per = sm__elems(L->in_rank, L->in_shape), out_per = sm__elems(L->out_rank, L->out_shape);
    int act = L->activation == SM_ACT_RELU ? SMCU_RELU : SMCU_ID;
    float *y = G->act;
    switch (L->kind) {
      case SM_LAYER_CONV2D: {
        smcu_conv cv = G->cv;
        cv.n = rows;
        if (G->asym) {
          const int64_t xd[4] = {rows, L->in_shape[0], L->in_shape[1], cv.c};
          const int64_t before[4] = {0, G->pad_top, G->pad_left, 0}, pd[4] = {rows, cv.h, cv.w, cv.c};
          CALL(g, L->name, g->A->pad(g->s, in, G->xp, 4, xd, before, pd, 0.0f, g->err));
          in = G->xp;
        }
        CALL(g, L->name, g->T->conv2d_fwd(g->s, &cv, in, G->w, y, g->err));
        CALL(g, L->name, g->A->bias_act(g->s, y, G->b, y, rows * cv.oh * cv.ow, cv.k, act, 0.0f, g->err));
        break;
      }
      case SM_LAYER_DENSE:
        CALL(g, L->name, g->A->gemm(g->s, 0, 0, rows, L->units, in_per, in, 0, G->w, 0, y, 0, 1, g->err));
        CALL(g, L->name, g->A->bias_act(g->s, y, G->b, y, rows, L->units, act, 0.0f, g->err));
        if (L->activation == SM_ACT_SOFTMAX) CALL(g, L->name, g->A->softmax(g->s, y, y, rows, L->units, g->err));
        break;
      case SM_LAYER_MAXPOOL2D: {
        smcu_pool pl = G->pl;
        pl.n = rows;
        CALL(g, L->name, g->T->maxpool_fwd(g->s, &pl, in, y, G->argmax, g->err));
        break;
      }
      case SM_LAYER_AVGPOOL2D: {
        smcu_pool pl = G->pl;
        pl.n = rows;
        CALL(g, L->name, g->A->pool(g->s, &pl, in, y, g->err));
        break;
      }
      case SM_LAYER_GAP2D:
        CALL(g, L->name, g->A->mean_mid(g->s, in, y, rows, L->in_shape[0] * L->in_shape[1], L->in_shape[2], g->err));
        break;
      case SM_LAYER_BATCHNORM: {
        int64_t c = L->units, bn_rows = rows * in_per / c;
        CALL(g, L->name, g->T->bn_stats(g->s, in, G->mm, G->mv, bn_rows, c, training, L->momentum, L->epsilon,
                                        G->stats, g->err));
        CALL(g, L->name, g->T->bn_apply(g->s, in, G->w, G->b, G->stats, y, bn_rows, c, g->err));
        break;
      }
      case SM_LAYER_RESCALING:
        CALL(g, L->name, g->T->affine(g->s, in, y, rows * in_per, L->scale, L->offset, g->err));
        break;
      case SM_LAYER_LEAKY_RELU:
        CALL(g, L->name, g->A->unary(g->s, SMCU_LEAKY_RELU, L->scale, in, y, rows * in_per, g->err));
        break;
      case SM_LAYER_DROPOUT:
        if (training && L->rate > 0.0f) {
          uint64_t seed = g->drop_seed + 0x632BE59BD9B4E019ull * ++g->drop_calls;
          CALL(g, L->name, g->T->dropout(g->s, in, y, G->mask, rows * in_per, L->rate, seed, g->err));
        } else {
          y = (float *)in;
        }
        break;
      case SM_LAYER_ACTIVATION:
        if (L->activation == SM_ACT_SOFTMAX) {
          int64_t k = L->out_shape[L->out_rank - 1];
          CALL(g, L->name, g->A->softmax(g->s, in, y, rows * out_per / k, k, g->err));
        } else {
          CALL(g, L->name, g->A->unary(g->s, act, 0.0f, in, y, rows * in_per, g->err));
        }
        break;
      default: /* flatten, reshape */
        y = (float *)in;
        break;
    }
    G->y = y;
    in = y;
  }
  return NULL;
}

/* gb[1, cols] = ones[1, rows] x gy[rows, cols] */
static sm_status *bias_grad(gctx *g, const sm__layer *L, const float *gy, float *gb, int64_t rows, int64_t cols) {
  CALL(g, L->name, g->A->gemm(g->s, 0, 0, 1, cols, rows, g->ones, 0, gy, 0, gb, 0, 1, g->err));
  return NULL;
}

static sm_status *copy(gctx *g, const sm__layer *L, float *dst, const float *src, int64_t count) {
  if (dst == src) return NULL;
  size_t bytes = (size_t)count * sizeof(float);
  CALL(g, L->name, g->A->copy2d(g->s, dst, bytes, src, bytes, bytes, 1, g->err));
  return NULL;
}

static sm_status *backward(gctx *g, int64_t rows) {
  sm_seq *m = g->m;
  if (g->first_w < 0) return NULL; /* nothing to train */
  for (int l = m->nlayers - 1; l >= 0 && l >= g->first_w; l--) {
    const sm__layer *L = &m->layers[l];
    glayer *G = &g->L[l];
    const float *in = l == 0 ? g->xb : g->L[l - 1].y;
    float *gy = G->grad, *gx = l > g->first_w ? g->L[l - 1].grad : NULL;
    int64_t in_per = sm__elems(L->in_rank, L->in_shape), out_per = sm__elems(L->out_rank, L->out_shape);
    /* the loss gave the gradient w.r.t. the last softmax's input: nothing to undo there */
    int relu = L->activation == SM_ACT_RELU;
    switch (L->kind) {
      case SM_LAYER_CONV2D: {
        smcu_conv cv = G->cv;
        cv.n = rows;
        if (relu) CALL(g, L->name, g->T->relu_bwd(g->s, G->y, gy, rows * out_per, g->err));
        TRY(bias_grad(g, L, gy, G->gb, rows * cv.oh * cv.ow, cv.k));
        CALL(g, L->name, g->T->conv2d_bwd_filter(g->s, &cv, G->asym ? G->xp : in, gy, G->gw, g->err));
        if (gx && G->asym) { /* the padded input's gradient, cropped */
          const int64_t pd[4] = {rows, cv.h, cv.w, cv.c}, before[4] = {0, -G->pad_top, -G->pad_left, 0};
          const int64_t xd[4] = {rows, L->in_shape[0], L->in_shape[1], cv.c};
          CALL(g, L->name, g->T->conv2d_bwd_data(g->s, &cv, gy, G->w, G->gxp, g->err));
          CALL(g, L->name, g->A->pad(g->s, G->gxp, gx, 4, pd, before, xd, 0.0f, g->err));
        } else if (gx) {
          CALL(g, L->name, g->T->conv2d_bwd_data(g->s, &cv, gy, G->w, gx, g->err));
        }
        break;
      }
      case SM_LAYER_DENSE:
        if (relu) CALL(g, L->name, g->T->relu_bwd(g->s, G->y, gy, rows * L->units, g->err));
        CALL(g, L->name, g->A->gemm(g->s, 1, 0, in_per, L->units, rows, in, 0, gy, 0, G->gw, 0, 1, g->err));
        TRY(bias_grad(g, L, gy, G->gb, rows, L->units));
        if (gx) CALL(g, L->name, g->A->gemm(g->s, 0, 1, rows, in_per, L->units, gy, 0, G->w, 0, gx, 0, 1, g->err));
        break;
      case SM_LAYER_MAXPOOL2D:
        if (gx) {
          smcu_pool pl = G->pl;
          pl.n = rows;
          CALL(g, L->name, g->T->maxpool_bwd(g->s, &pl, gy, G->argmax, gx, g->err));
        }
        break;
      case SM_LAYER_DROPOUT:
        if (gx && L->rate > 0.0f) CALL(g, L->name, g->T->mul(g->s, gy, G->mask, gx, rows * in_per, g->err));
        else if (gx) TRY(copy(g, L, gx, gy, rows * in_per));
        break;
      case SM_LAYER_ACTIVATION:
        if (relu) CALL(g, L->name, g->T->relu_bwd(g->s, G->y, gy, rows * out_per, g->err));
        if (gx) TRY(copy(g, L, gx, gy, rows * in_per));
        break;
      case SM_LAYER_AVGPOOL2D:
        if (gx) {
          smcu_pool pl = G->pl;
          pl.n = rows;
          CALL(g, L->name, g->T->avgpool_bwd(g->s, &pl, gy, gx, g->err));
        }
        break;
      case SM_LAYER_GAP2D:
        if (gx)
          CALL(g, L->name, g->T->gap_bwd(g->s, gy, gx, rows, L->in_shape[0] * L->in_shape[1], L->in_shape[2], g->err));
        break;
      case SM_LAYER_BATCHNORM:
        CALL(g, L->name, g->T->bn_bwd(g->s, in, gy, G->w, G->stats, rows * in_per / L->units, L->units, L->use_scale,
                                      L->center, gx, G->gw, G->gb, g->err));
        break;
      case SM_LAYER_RESCALING:
        if (gx) CALL(g, L->name, g->T->affine(g->s, gy, gx, rows * in_per, L->scale, 0.0f, g->err));
        break;
      case SM_LAYER_LEAKY_RELU:
        if (gx) CALL(g, L->name, g->T->leaky_bwd(g->s, in, gy, gx, rows * in_per, L->scale, g->err));
        break;
      default: /* flatten, reshape: their gradient is their input's buffer */
        break;
    }
  }
  return NULL;
}

static sm_status *optimizer(gctx *g) {
  sm_seq *m = g->m;
  sm__opt_factors f;
  sm__opt_factors_get(&m->opt, m->iterations, &f);
  smcu_opt o = {f.kind, f.nesterov, f.centered, f.lr, f.mom, f.alpha, f.omb1, f.omb2, f.eps, f.wd, f.rho, f.omrho};
  for (int l = 0; l < m->nlayers; l++) {
    const sm__layer *L = &m->layers[l];
    glayer *G = &g->L[l];
    if (!L->kernel) continue;
    /* weights Keras does not have stay put, as the CPU's (optim.c): use_bias=False, batch norm
     * without scale / center */
    int bn = L->kind == SM_LAYER_BATCHNORM;
    if (!(bn && !L->use_scale))
      CALL(g, L->name, g->T->opt_update(g->s, &o, G->w, G->gw, G->wslot[0], G->wslot[1], G->wslot[2],
                                        sm_tensor_num_elements(L->kernel), g->err));
    if (!L->no_bias && !(bn && !L->center))
      CALL(g, L->name, g->T->opt_update(g->s, &o, G->b, G->gb, G->bslot[0], G->bslot[1], G->bslot[2],
                                        sm_tensor_num_elements(L->bias), g->err));
  }
  m->iterations++;
  return NULL;
}

/* ---- the backend ------------------------------------------------------------------------------- */
static sm_status *zero_sums(gctx *g, int which) {
  const double z[2] = {0.0, 0.0};
  CALL(g, "reset the sums", g->A->h2d(g->s, g->acc + 2 * which, z, sizeof z, g->err));
  return NULL;
}

static sm_status *gpu_epoch(void *ctx, const int64_t *perm) {
  gctx *g = ctx;
  for (int64_t i = 0; i < g->ntr; i++) g->hperm[i] = (int32_t)perm[i];
  /* pageable source: the copy has taken hperm when h2d returns, so the next epoch may refill it */
  CALL(g, "upload the epoch's order", g->A->h2d(g->s, g->perm, g->hperm, (size_t)g->ntr * sizeof(int32_t), g->err));
  return zero_sums(g, 0);
}

static sm_status *gpu_step(void *ctx, int64_t b0, int64_t b) {
  gctx *g = ctx;
  sm_seq *m = g->m;
  if (b0 < 0 || b < 1 || b > g->bs || b0 + b > g->ntr) return sm_status_new(SM_INTERNAL, "GPU training: bad step range");
  CALL(g, "gather the batch", g->T->gather32(g->s, g->x, g->perm + b0, b, g->in_per, g->xb, g->err));
  CALL(g, "gather the labels", g->T->gather32(g->s, g->lab, g->perm + b0, b, 1, g->lb, g->err));
  TRY(forward(g, g->xb, b, 1));
  glayer *last = &g->L[m->nlayers - 1];
  CALL(g, "loss", g->T->sparse_xent(g->s, last->y, g->lb, b, g->k, g->mode, last->grad, g->rowbuf, g->acc, g->err));
  TRY(backward(g, b));
  return optimizer(g);
}

static sm_status *sums(gctx *g, int which, double *loss_sum, double *correct) {
  double h[2];
  CALL(g, "read the loss", g->A->d2h(g->s, h, g->acc + 2 * which, sizeof h, g->err));
  *loss_sum = h[0];
  *correct = h[1];
  return NULL;
}

static sm_status *gpu_totals(void *ctx, double *loss_sum, int64_t *correct) {
  double c = 0.0;
  TRY(sums(ctx, 0, loss_sum, &c));
  *correct = (int64_t)c;
  return NULL;
}

static sm_status *gpu_validate(void *ctx, double *loss, double *accuracy) {
  gctx *g = ctx;
  int64_t nval = g->n - g->ntr, cap = g->bs < g->n ? g->bs : g->n;
  TRY(zero_sums(g, 1));
  for (int64_t s = 0; s < nval; s += cap) {
    int64_t b = nval - s < cap ? nval - s : cap, r = g->ntr + s;
    TRY(forward(g, g->x + r * g->in_per, b, 0));
    CALL(g, "validation loss", g->T->sparse_xent(g->s, g->L[g->m->nlayers - 1].y, g->lab + r, b, g->k, g->mode, NULL,
                                                 g->rowbuf, g->acc + 2, g->err));
  }
  double l = 0.0, c = 0.0;
  TRY(sums(g, 1, &l, &c));
  *loss = nval > 0 ? l / (double)nval : 0.0;
  *accuracy = nval > 0 ? c / (double)nval : 0.0;
  return NULL;
}

static sm_status *gpu_end(void *ctx) {
  gctx *g = ctx;
  sm_seq *m = g->m;
  for (int l = 0; l < m->nlayers; l++) {
    sm__layer *L = &m->layers[l];
    glayer *G = &g->L[l];
    if (!L->kernel) continue;
    TRY(download(g, L->kernel, G->w));
    TRY(download(g, L->bias, G->b));
    for (int k = 0; k < SM_OPT_SLOTS; k++) {
      if (L->kernel_slot[k]) TRY(download(g, L->kernel_slot[k], G->wslot[k]));
      if (L->bias_slot[k]) TRY(download(g, L->bias_slot[k], G->bslot[k]));
    }
    if (L->kind == SM_LAYER_BATCHNORM) {
      TRY(download(g, L->moving_mean, G->mm));
      TRY(download(g, L->moving_var, G->mv));
    }
  }
  return NULL;
}

const sm__train_backend sm__train_gpu = {"gpu", gpu_begin, gpu_epoch, gpu_step, gpu_totals,
                                         gpu_validate, gpu_end, gpu_free, 50};
