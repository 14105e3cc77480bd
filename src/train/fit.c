/* fit.c - fit / evaluate / predict: argument checks, the trainer's private state (pool, RNG,
 * scratch sized once per batch size), the forward pass through the runtime's nn compute
 * (src/ops/nn_raw.h), batching and per-epoch shuffling, Keras's validation split (the last
 * fraction of the data, taken before shuffling) and its running-mean loss and accuracy. All three
 * run in TF's floating-point mode, denormals flushed (base/fpmode.h), as TF's training does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fpmode.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"
#include "ops/nn_raw.h"
#include "savedmodel/model.h"
#include "train/dist.h"
#include "train/train_internal.h"

int64_t sm__conv_spc(const sm__layer *L, int64_t cap, int tasks); /* grad.c */

/* ---- private state ------------------------------------------------------------------------- */
static void free_scratch(sm__train *t) {
  for (int i = 0; i < SM_SEQ_MAX_LAYERS; i++) {
    free(t->act_buf[i]);
    free(t->grad_buf[i]);
    free(t->argmax[i]);
    free(t->mask[i]);
    t->act_buf[i] = t->grad_buf[i] = t->mask[i] = NULL;
    t->act[i] = t->grad[i] = NULL;
    t->argmax[i] = NULL;
  }
  free(t->xbatch);
  free(t->ybatch);
  free(t->lbatch);
  free(t->col);
  free(t->part);
  t->xbatch = t->ybatch = t->col = t->part = NULL;
  t->lbatch = NULL;
  t->cap = 0;
}

void sm__train_free(sm__train *t) {
  if (!t) return;
  free_scratch(t);
  for (int i = 0; i < SM_SEQ_MAX_LAYERS; i++) {
    free(t->gk[i]);
    free(t->gb[i]);
  }
  free(t->zrecv);
  for (int i = 0; i < SM_SEQ_MAX_LAYERS; i++) free(t->xin[i]), free(t->xcut[i]);
  for (int i = 0; i < 3; i++) sm__dnnl_cache_free(t->mm_cache[i]);
  sm__threadpool_free(t->pool);
  free(t);
}

sm_status *sm__train_get(sm_seq *m, sm__train **out) {
  if (!m->priv) {
    sm__train *t = calloc(1, sizeof *t);
    if (!t) return sm_status_new(SM_NO_MEMORY, "trainer: out of memory");
    m->priv = t;
  }
  *out = m->priv;
  return NULL;
}

sm_status *sm__train_pool(sm_seq *m, int nthreads) {
  sm__train *t;
  sm_status *st = sm__train_get(m, &t);
  if (st) return st;
  if (nthreads <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = c > 0 ? (int)(c < 256 ? c : 256) : 1;
  }
  if (nthreads > 256) nthreads = 256;
  if (t->pool && t->nthreads == nthreads) return NULL;
  sm__nn_blas_init(); /* OpenBLAS single-threaded: the pool owns the cores */
  sm__threadpool_free(t->pool);
  t->pool = NULL;
  if (nthreads > 1 && (st = sm__threadpool_new(nthreads, &t->pool))) return st;
  t->nthreads = nthreads;
  return NULL;
}

sm_status *sm__train_scratch(sm_seq *m, int64_t cap) {
  sm__train *t = m->priv;
  int threads = t->nthreads > 0 ? t->nthreads : 1;
  if (t->cap >= cap && t->scratch_threads == threads) return NULL;
  free_scratch(t);
  int ok = 1;
  int64_t in_per = sm__elems(m->in_rank, m->in_shape);
  int64_t col = 0, part = 0;
  for (int l = 0; l < m->nlayers && ok; l++) {
    const sm__layer *L = &m->layers[l];
    size_t bytes = (size_t)(cap * sm__elems(L->out_rank, L->out_shape)) * sizeof(float);
    if (!SM_LAYER_IS_ALIAS(L->kind)) {
      ok = (t->act_buf[l] = malloc(bytes)) && (t->grad_buf[l] = malloc(bytes));
      t->grad[l] = t->grad_buf[l];
    } else {
      t->grad[l] = l > 0 ? t->grad[l - 1] : NULL;
    }
    if (L->kind == SM_LAYER_MAXPOOL2D) ok = ok && (t->argmax[l] = malloc(bytes / sizeof(float) * sizeof(int64_t)));
    if (L->kind == SM_LAYER_DROPOUT) ok = ok && (t->mask[l] = malloc(bytes));
    if (L->kind == SM_LAYER_BATCHNORM) ok = ok && (t->mask[l] = malloc(SM_BN_SCRATCH(L->units)));
    if (L->kind == SM_LAYER_CONV2D) {
      int64_t P = L->out_shape[0] * L->out_shape[1], K = (int64_t)L->kh * L->kw * L->in_shape[2];
      int64_t c = sm__conv_spc(L, cap, threads) * P * K, p = K * L->units + L->units;
      col = c > col ? c : col;
      part = p > part ? p : part;
    }
  }
  const sm__layer *last = &m->layers[m->nlayers - 1];
  int64_t out_per = sm__elems(last->out_rank, last->out_shape);
  ok = ok && (t->xbatch = malloc((size_t)(cap * in_per) * sizeof(float))) &&
       (t->ybatch = malloc((size_t)(cap * out_per) * sizeof(float))) &&
       (t->lbatch = malloc((size_t)cap * sizeof(int32_t)));
  if (ok && col > 0)
    ok = (t->col = malloc((size_t)(col * threads) * sizeof(float))) &&
         (t->part = malloc((size_t)(part * threads) * sizeof(float)));
  if (!ok) {
    free_scratch(t);
    return sm_status_new(SM_NO_MEMORY, "trainer: out of memory for the scratch of batches of %lld", (long long)cap);
  }
  t->col_per_thread = col;
  t->part_per_thread = part;
  t->scratch_threads = threads;
  t->cap = cap;
  return NULL;
}

/* ---- forward ---------------------------------------------------------------------------------- */
void sm__softmax_rows(float *v, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; r++) {
    float *x = v + r * k, mx = x[0], s = 0.0f;
    for (int64_t j = 1; j < k; j++) mx = x[j] > mx ? x[j] : mx;
    for (int64_t j = 0; j < k; j++) s += (x[j] = expf(x[j] - mx));
    for (int64_t j = 0; j < k; j++) x[j] /= s;
  }
}

sm_status *sm__forward(sm_seq *m, const float *x, int64_t n, int training, const float **out) {
  sm__train *t = m->priv;
  const float *in = x;
  sm_status *st = NULL;
  for (int l = 0; l < m->nlayers; l++) {
    const sm__layer *L = &m->layers[l];
    int64_t in_per = sm__elems(L->in_rank, L->in_shape), out_per = sm__elems(L->out_rank, L->out_shape);
    float *y = t->act_buf[l];
    int nnact = L->activation == SM_ACT_RELU ? SM_NN_ACT_RELU : SM_NN_ACT_NONE;
    if (training) sm__dist_progress(); /* under MPI: the last step's weights keep moving (TCP) */
    if (training && t->layer_begin && L->kernel && (st = t->layer_begin(t->layer_done_ctx, l)))
      return sm_status_prefix(st, "%s", L->name);
    switch (L->kind) {
      case SM_LAYER_CONV2D:
        st = sm__nn_conv2d_f32(t->pool, in, n, L->in_shape[0], L->in_shape[1], L->in_shape[2],
                              sm_tensor_data(L->kernel), L->kh, L->kw, L->units, L->sh, L->sw,
                              L->padding == SM_PAD_SAME, sm_tensor_data(L->bias), nnact, y);
        if (!st && L->activation == SM_ACT_SOFTMAX) sm__softmax_rows(y, n * out_per / L->units, L->units);
        break;
      case SM_LAYER_MAXPOOL2D:
        st = sm__nn_maxpool_f32(t->pool, in, n, L->in_shape[0], L->in_shape[1], L->in_shape[2], L->kh, L->kw, L->sh,
                               L->sw, L->padding == SM_PAD_SAME, y, t->argmax[l]);
        break;
      case SM_LAYER_DENSE:
        st = sm__train_matmul(t, 0, 0, 0, n, L->units, in_per, in, sm_tensor_data(L->kernel), y);
        if (!st) sm__nn_bias_act_f32(y, y, n, L->units, sm_tensor_data(L->bias), nnact, 0.0f);
        if (!st && L->activation == SM_ACT_SOFTMAX) sm__softmax_rows(y, n, L->units);
        break;
      case SM_LAYER_DROPOUT:
        if (training && L->rate > 0.0f) {
          /* inverted dropout as tf.nn.dropout: keep when U[0,1) >= rate, scale kept by 1/(1-rate) */
          float *mask = t->mask[l], scale = 1.0f / (1.0f - L->rate);
          sm__rng *rng = t->dist_drop ? &t->drop_rng : &t->rng;
          for (int64_t i = 0; i < n * in_per; i++) {
            mask[i] = sm__rng_uniform(rng) >= L->rate ? scale : 0.0f;
            y[i] = in[i] * mask[i];
          }
        } else {
          y = (float *)in;
        }
        break;
      case SM_LAYER_ACTIVATION:
        if (L->activation == SM_ACT_RELU)
          for (int64_t i = 0; i < n * in_per; i++) y[i] = in[i] > 0.0f ? in[i] : 0.0f;
        else
          memcpy(y, in, (size_t)(n * in_per) * sizeof *y);
        if (L->activation == SM_ACT_SOFTMAX) {
          int64_t k = L->out_shape[L->out_rank - 1];
          sm__softmax_rows(y, n * out_per / k, k);
        }
        break;
      case SM_LAYER_FLATTEN:
      case SM_LAYER_RESHAPE: /* same elements */
        y = (float *)in;
        break;
      default:
        sm__layer_forward_extra(m, l, in, y, n, training);
        break;
    }
    if (st) return sm_status_prefix(st, "%s", L->name);
    t->act[l] = y;
    in = y;
  }
  *out = in;
  return NULL;
}

/* ---- argument checks --------------------------------------------------------------------------- */
static sm_status *check_x(const sm_seq *m, const sm_tensor *x, const char *what, int64_t *n) {
  if (!x) return sm_status_new(SM_INVALID_ARGUMENT, "%s: x is NULL", what);
  char want[128], got[128];
  int64_t wd[4] = {-1};
  memcpy(wd + 1, m->in_shape, (size_t)m->in_rank * sizeof *wd);
  sm_shape_str(m->in_rank + 1, wd, want, sizeof want);
  sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), got, sizeof got);
  if (sm_tensor_dtype(x) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: x must be float32, got %s", what, sm_dtype_name(sm_tensor_dtype(x)));
  int ok = sm_tensor_rank(x) == m->in_rank + 1;
  for (int i = 0; ok && i < m->in_rank; i++) ok = sm_tensor_dims(x)[i + 1] == m->in_shape[i];
  if (!ok) return sm_status_new(SM_INVALID_ARGUMENT, "%s: x has shape %s, the model takes %s", what, got, want);
  *n = sm_tensor_dims(x)[0];
  return NULL;
}

/* y as int32 class ids (*labels, malloc'ed) for cross-entropy, or float targets (*targets,
 * borrowed) for MSE. */
static sm_status *check_y(const sm_seq *m, const sm_tensor *y, int64_t n, const char *what, int32_t **labels,
                          const float **targets) {
  *labels = NULL;
  *targets = NULL;
  if (!y) return sm_status_new(SM_INVALID_ARGUMENT, "%s: y is NULL", what);
  const sm__layer *last = &m->layers[m->nlayers - 1];
  char got[128];
  sm_shape_str(sm_tensor_rank(y), sm_tensor_dims(y), got, sizeof got);
  if (m->loss.kind != SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
    int ok = sm_tensor_dtype(y) == SM_FLOAT && sm_tensor_rank(y) == last->out_rank + 1 && sm_tensor_dims(y)[0] == n;
    for (int i = 0; ok && i < last->out_rank; i++) ok = sm_tensor_dims(y)[i + 1] == last->out_shape[i];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: y for MSE and categorical cross-entropy must be float32 [%lld, outputs...] like the model's "
                           "output, got %s %s", what, (long long)n, sm_dtype_name(sm_tensor_dtype(y)), got);
    *targets = sm_tensor_data(y);
    return NULL;
  }
  int dt = sm_tensor_dtype(y);
  int rank = sm_tensor_rank(y);
  if (dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: y must be int32 or int64 class ids, got %s", what, sm_dtype_name(dt));
  if (!(rank == 1 || (rank == 2 && sm_tensor_dims(y)[1] == 1)) || sm_tensor_dims(y)[0] != n)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: y must have shape [%lld] (one class id per sample of x), got %s", what,
                         (long long)n, got);
  int64_t k = last->out_shape[0];
  int32_t *lab = malloc((size_t)(n > 0 ? n : 1) * sizeof *lab);
  if (!lab) return sm_status_new(SM_NO_MEMORY, "%s: out of memory for %lld labels", what, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = dt == SM_INT32 ? ((const int32_t *)sm_tensor_data(y))[i] : ((const int64_t *)sm_tensor_data(y))[i];
    if (v < 0 || v >= k) {
      free(lab);
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: label y[%lld] = %lld is out of range [0, %lld) for the %lld-class "
                           "output", what, (long long)i, (long long)v, (long long)k, (long long)k);
    }
    lab[i] = (int32_t)v;
  }
  *labels = lab;
  return NULL;
}

static sm_status *check_ready(const sm_seq *m, const char *what) {
  if (!m) return sm_status_new(SM_INVALID_ARGUMENT, "%s: model is NULL", what);
  if (!m->compiled) return sm_status_new(SM_FAILED_PRECONDITION, "%s: compile the model first", what);
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- evaluate ---------------------------------------------------------------------------------- */
static sm_status *eval_raw(sm_seq *m, const float *x, const int32_t *labels, const float *targets, int64_t n,
                           int64_t bs, double *loss, double *acc) {
  const sm__layer *last = &m->layers[m->nlayers - 1];
  int64_t in_per = sm__elems(m->in_rank, m->in_shape), out_per = sm__elems(last->out_rank, last->out_shape);
  sm_status *st = sm__train_scratch(m, bs < n ? bs : n);
  if (st) return st;
  double sum = 0.0;
  int64_t correct = 0;
  for (int64_t s = 0; s < n; s += bs) {
    int64_t b = n - s < bs ? n - s : bs, c = 0;
    const float *out;
    if ((st = sm__forward(m, x + s * in_per, b, 0, &out))) return st;
    sum += sm__loss(m, out, b, out_per, labels ? labels + s : NULL, targets ? targets + s * out_per : NULL, NULL, &c,
                    NULL) * (double)b;
    correct += c;
  }
  *loss = n > 0 ? sum / (double)n : NAN;
  *acc = m->loss.kind == SM_LOSS_MSE || n == 0 ? NAN : (double)correct / (double)n;
  return NULL;
}

/* Validation as one rank of several: each evaluates its contiguous share, rank 0 adds them up. */
static sm_status *eval_dist(sm_seq *m, const float *x, const int32_t *labels, const float *targets, int64_t n,
                            int64_t bs, double *loss, double *acc) {
  const sm__layer *last = &m->layers[m->nlayers - 1];
  int64_t in_per = sm__elems(m->in_rank, m->in_shape), out_per = sm__elems(last->out_rank, last->out_shape);
  int64_t r = sm__dist_rank(), N = sm__dist_size(), lo = n * r / N, hi = n * (r + 1) / N;
  double l = 0.0, a = 0.0, v[SM_DIST_NMETRIC] = {0.0, 0.0, (double)(hi - lo)}, sum[SM_DIST_NMETRIC];
  sm_status *st = NULL;
  if (hi > lo)
    st = eval_raw(m, x + lo * in_per, labels ? labels + lo : NULL, targets ? targets + lo * out_per : NULL, hi - lo,
                  bs, &l, &a);
  if (st) return st;
  v[0] = l * (double)(hi - lo);
  v[1] = m->loss.kind == SM_LOSS_MSE ? 0.0 : a * (double)(hi - lo);
  if ((st = sm__dist_report(v, m->iterations)) || (st = sm__dist_wait("validation after", sum))) return st;
  *loss = sum[0] / (double)n;
  *acc = m->loss.kind == SM_LOSS_MSE ? NAN : sum[1] / (double)n;
  return NULL;
}

static sm_status *evaluate(sm_seq *m, const sm_tensor *x, const sm_tensor *y, int64_t batch_size, double *loss,
                          double *accuracy) {
  const char *what = "evaluate";
  sm_status *st = check_ready(m, what);
  if (st) return st;
  if (batch_size <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: batch_size must be > 0, got %lld", what, (long long)batch_size);
  int64_t n;
  int32_t *labels;
  const float *targets;
  if ((st = check_x(m, x, what, &n)) || (st = check_y(m, y, n, what, &labels, &targets))) return st;
  double l = NAN, a = NAN;
  if (!(st = sm__train_pool(m, 0))) st = eval_raw(m, sm_tensor_data(x), labels, targets, n, batch_size, &l, &a);
  free(labels);
  if (loss) *loss = l;
  if (accuracy) *accuracy = a;
  return st;
}

/* ---- predict ------------------------------------------------------------------------------------ */
static sm_status *predict(sm_seq *m, const sm_tensor *x, int64_t batch_size, sm_tensor **out) {
  const char *what = "predict";
  if (!out) return sm_status_new(SM_INVALID_ARGUMENT, "%s: out is NULL", what);
  *out = NULL;
  sm_status *st = check_ready(m, what);
  if (st) return st;
  if (batch_size <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: batch_size must be > 0, got %lld", what, (long long)batch_size);
  int64_t n;
  if ((st = check_x(m, x, what, &n))) return st;
  const sm__layer *last = &m->layers[m->nlayers - 1];
  int64_t dims[4] = {n};
  memcpy(dims + 1, last->out_shape, (size_t)last->out_rank * sizeof *dims);
  int64_t in_per = sm__elems(m->in_rank, m->in_shape), out_per = sm__elems(last->out_rank, last->out_shape);
  sm_tensor *y;
  if ((st = sm_tensor_new(SM_FLOAT, last->out_rank + 1, dims, &y))) return sm_status_prefix(st, "%s", what);
  if (!(st = sm__train_pool(m, 0))) st = sm__train_scratch(m, batch_size < n ? batch_size : (n > 0 ? n : 1));
  const float *xd = sm_tensor_data(x);
  float *yd = sm_tensor_data(y);
  for (int64_t s = 0; !st && s < n; s += batch_size) {
    int64_t b = n - s < batch_size ? n - s : batch_size;
    const float *o;
    if (!(st = sm__forward(m, xd + s * in_per, b, 0, &o))) memcpy(yd + s * out_per, o, (size_t)(b * out_per) * sizeof *yd);
  }
  if (st) {
    sm_tensor_free(y);
    return sm_status_prefix(st, "%s", what);
  }
  *out = y;
  return NULL;
}

/* ---- the CPU backend (train_internal.h's seam; fit_gpu.c has the GPU's) ------------------------ */
typedef struct cpuctx {
  sm_seq *m;
  const float *x, *targets;
  const int32_t *labels;
  const int64_t *perm;
  int64_t n, ntr, bs, in_per, out_per;
  int dist, failed; /* failed: a step or validation failed (no more collectives at the end) */
  double sum;
  int64_t correct;
} cpuctx;

static sm_status *cpu_begin(sm_seq *m, const float *x, const int32_t *labels, const float *targets, int64_t n,
                            int64_t ntr, int64_t bs, void **ctx) {
  const sm__layer *last = &m->layers[m->nlayers - 1];
  *ctx = NULL;
  sm_status *st = sm__train_scratch(m, bs < ntr ? bs : ntr);
  cpuctx *c = st ? NULL : calloc(1, sizeof *c);
  if (!st && !c) st = sm_status_new(SM_NO_MEMORY, "trainer: out of memory");
  if (st) return st;
  c->m = m, c->x = x, c->labels = labels, c->targets = targets, c->n = n, c->ntr = ntr, c->bs = bs;
  c->in_per = sm__elems(m->in_rank, m->in_shape), c->out_per = sm__elems(last->out_rank, last->out_shape);
  c->dist = sm__dist_size() > 1;
  if (c->dist && (st = sm__dist_fit_begin(m, ntr, bs < ntr ? bs : ntr))) {
    free(c);
    return st;
  }
  *ctx = c;
  return NULL;
}

static sm_status *cpu_epoch(void *ctx, const int64_t *perm) {
  cpuctx *c = ctx;
  c->perm = perm;
  c->sum = 0.0;
  c->correct = 0;
  return NULL;
}

static sm_status *cpu_step(void *ctx, int64_t b0, int64_t b) {
  cpuctx *c = ctx;
  sm_seq *m = c->m;
  sm__train *t = m->priv;
  sm_status *st;
  /* as a rank of several: this rank's contiguous shard [lo, hi) of the global batch */
  int64_t lo = c->dist ? b * sm__dist_rank() / sm__dist_size() : 0;
  int64_t hi = c->dist ? b * (sm__dist_rank() + 1) / sm__dist_size() : b;
  for (int64_t i = 0; i < hi - lo; i++) {
    int64_t r = c->perm[b0 + lo + i];
    memcpy(t->xbatch + i * c->in_per, c->x + r * c->in_per, (size_t)c->in_per * sizeof(float));
    if (c->labels)
      t->lbatch[i] = c->labels[r];
    else
      memcpy(t->ybatch + i * c->out_per, c->targets + r * c->out_per, (size_t)c->out_per * sizeof(float));
  }
  int64_t k = 0;
  double lsum;
  if (c->dist) { /* the optimizer step too (this rank's share) */
    if ((st = sm__dist_step(m, hi - lo, b, c->out_per, &lsum, &k))) {
      c->failed = 1;
      return st;
    }
  } else {
    const float *out;
    if ((st = sm__forward(m, t->xbatch, b, 1, &out))) return st;
    double l = sm__loss(m, out, b, c->out_per, t->lbatch, t->ybatch, t->grad[m->nlayers - 1], &k, &t->fused_last);
    if ((st = sm__backward(m, t->xbatch, b))) return st;
    lsum = l * (double)b;
    sm__optimizer_step(m);
  }
  c->sum += lsum;
  c->correct += k;
  return NULL;
}

static sm_status *cpu_totals(void *ctx, double *loss_sum, int64_t *correct) {
  const cpuctx *c = ctx;
  *loss_sum = c->sum;
  *correct = c->correct;
  return NULL;
}

static sm_status *cpu_validate(void *ctx, double *loss, double *accuracy) {
  cpuctx *c = ctx;
  int64_t nval = c->n - c->ntr;
  sm_status *st = c->dist ? sm__dist_sync(c->m) : NULL;
  if (st) {
    c->failed = 1;
    return st;
  }
  st = (c->dist ? eval_dist : eval_raw)(c->m, c->x + c->ntr * c->in_per, c->labels ? c->labels + c->ntr : NULL,
                                        c->targets ? c->targets + c->ntr * c->out_per : NULL, nval, c->bs, loss,
                                        accuracy);
  if (st) c->failed = 1;
  return st;
}

static sm_status *cpu_end(void *ctx) {
  const cpuctx *c = ctx;
  if (c->dist && c->failed) sm__dist_weights_unshare(c->m, 0); /* the layers' own weights back */
  return c->dist && !c->failed ? sm__dist_fit_end(c->m) : NULL;
}

const sm__train_backend sm__train_cpu = {"cpu", cpu_begin, cpu_epoch, cpu_step, cpu_totals,
                                         cpu_validate, cpu_end, free, 1};

/* ---- fit ---------------------------------------------------------------------------------------- */
sm_status *sm_seq_fit_timing(const sm_seq *m, sm_fit_timing *out) {
  if (!m || !out) return sm_status_new(SM_INVALID_ARGUMENT, "fit_timing: model or out is NULL");
  memset(out, 0, sizeof *out);
  if (m->priv) *out = ((const sm__train *)m->priv)->timing;
  return NULL;
}


/* The host's callback runs in the host's floating-point mode, the training in TF's (fpmode.h). */
static int call_back(const sm_fit_options *o, const sm_fit_progress *p, sm_fpmode *fp) {
  sm__fpmode_leave(*fp);
  int r = o->callback(p, o->callback_ctx);
  *fp = sm__fpmode_enter();
  return r;
}

static sm_status *fit(sm_seq *m, const sm_tensor *x, const sm_tensor *y, const sm_fit_options *opts, sm_fpmode *fp) {
  const char *what = "fit";
  sm_status *st = check_ready(m, what);
  if (st) return st;
  sm_fit_options o = opts ? *opts : sm_fit_defaults();
  if (o.batch_size <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: batch_size must be > 0, got %lld", what, (long long)o.batch_size);
  if (o.epochs < 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: epochs must be >= 0, got %d", what, o.epochs);
  if (!(o.validation_split >= 0.0f && o.validation_split < 1.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: validation_split must be in [0, 1), got %g", what,
                         (double)o.validation_split);
  int64_t n;
  int32_t *labels;
  const float *targets;
  if ((st = check_x(m, x, what, &n)) || (st = check_y(m, y, n, what, &labels, &targets))) return st;
  /* Keras: split_at = floor(n * (1 - validation_split)); training takes [0, split_at) */
  int64_t ntr = o.validation_split > 0.0f ? (int64_t)floor((double)n * (1.0 - (double)o.validation_split)) : n;
  int64_t nval = n - ntr;
  if (ntr <= 0) {
    free(labels);
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: no training samples (%lld samples, validation_split %g)", what,
                         (long long)n, (double)o.validation_split);
  }
  int64_t bs = o.batch_size < ntr ? o.batch_size : ntr;
  int64_t *perm = malloc((size_t)ntr * sizeof *perm);
  if (!perm) st = sm_status_new(SM_NO_MEMORY, "%s: out of memory for %lld sample indices", what, (long long)ntr);
  sm__train *t = NULL;
  if (!st) st = sm__train_get(m, &t);
  if (!st && o.seed) sm__rng_seed(&t->rng, o.seed);
  int dist = sm__dist_size() > 1;
  const sm__train_backend *be = o.device == SM_DEVICE_GPU ? &sm__train_gpu : &sm__train_cpu;
  if (!st && o.device != SM_DEVICE_CPU && o.device != SM_DEVICE_GPU)
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s: device must be SM_DEVICE_CPU or SM_DEVICE_GPU, got %d", what, o.device);
  if (!st && dist && be != &sm__train_cpu)
    st = sm_status_new(SM_UNIMPLEMENTED, "%s: training on the GPU under MPI (several ranks) is not supported yet", what);
  if (dist && sm__dist_rank() != 0) o.callback = NULL; /* progress is rank 0's to show */
  if (!st && be == &sm__train_cpu) st = sm__train_pool(m, o.num_threads);
  void *bctx = NULL;
  if (!st) st = be->begin(m, sm_tensor_data(x), labels, targets, n, ntr, o.batch_size, &bctx);
  int64_t steps = (ntr + bs - 1) / bs;
  int stop = 0;
  for (int ep = 0; !st && !stop && ep < o.epochs; ep++) {
    double t0 = now_s();
    for (int64_t i = 0; i < ntr; i++) perm[i] = i;
    if (o.shuffle)
      for (int64_t i = ntr - 1; i > 0; i--) {
        int64_t j = (int64_t)sm__rng_below(&t->rng, (uint64_t)i + 1), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
      }
    if ((st = be->epoch(bctx, perm))) break;
    sm_fit_timing *tm = &t->timing;
    memset(tm, 0, sizeof *tm);
    int64_t seen = 0, correct = 0;
    double sum = 0.0;
    sm_fit_progress p;
    memset(&p, 0, sizeof p);
    p.epoch = ep + 1;
    p.epochs = o.epochs;
    p.steps = steps;
    p.val_loss = p.val_accuracy = NAN;
    for (int64_t s = 0; s < steps; s++) {
      int64_t b0 = s * bs, b = ntr - b0 < bs ? ntr - b0 : bs;
      double w0, wc0, w1, wc1, s0 = now_s(), c0 = sm__cpu_seconds();
      sm__dist_wait_totals(&w0, &wc0);
      if ((st = be->step(bctx, b0, b))) break;
      sm__dist_wait_totals(&w1, &wc1);
      tm->step_s += now_s() - s0;
      tm->step_cpu_s += sm__cpu_seconds() - c0;
      tm->wait_s += w1 - w0;
      tm->wait_cpu_s += wc1 - wc0;
      tm->steps++;
      tm->images += b;
      seen += b;
      if (!o.callback || ((s + 1) % be->report_every && s + 1 < steps)) continue;
      if ((st = be->totals(bctx, &sum, &correct))) break;
      p.step = s + 1;
      p.loss = sum / (double)seen;
      p.accuracy = m->loss.kind != SM_LOSS_MSE ? (double)correct / (double)seen : NAN;
      p.elapsed_s = now_s() - t0;
      if (call_back(&o, &p, fp) && !dist) {
        stop = 1;
        break;
      }
    }
    if (st) break;
    m->epochs_done++;
    if (stop) break;
    if (nval > 0 && (st = be->validate(bctx, &p.val_loss, &p.val_accuracy))) break;
    p.elapsed_s = now_s() - t0;
    if (o.callback && call_back(&o, &p, fp) && !dist) stop = 1;
  }
  if (bctx) {
    sm_status *e = be->end(bctx);
    if (!st) st = e;
    else sm_status_free(e);
    be->free(bctx);
  }
  if (t) t->dist_drop = 0;
  free(perm);
  free(labels);
  return st ? sm_status_prefix(st, "%s", what) : NULL;
}

/* ---- the entry points: TF's floating-point mode (denormals flushed) on the caller's thread ------- */
sm_status *sm_seq_fit(sm_seq *m, const sm_tensor *x, const sm_tensor *y, const sm_fit_options *opts) {
  sm_fpmode fp = sm__fpmode_enter();
  sm_status *st = fit(m, x, y, opts, &fp);
  sm__fpmode_leave(fp);
  return st;
}

sm_status *sm_seq_evaluate(sm_seq *m, const sm_tensor *x, const sm_tensor *y, int64_t batch_size, double *loss,
                           double *accuracy) {
  sm_fpmode fp = sm__fpmode_enter();
  sm_status *st = evaluate(m, x, y, batch_size, loss, accuracy);
  sm__fpmode_leave(fp);
  return st;
}

sm_status *sm_seq_predict(sm_seq *m, const sm_tensor *x, int64_t batch_size, sm_tensor **out) {
  sm_fpmode fp = sm__fpmode_enter();
  sm_status *st = predict(m, x, batch_size, out);
  sm__fpmode_leave(fp);
  return st;
}
