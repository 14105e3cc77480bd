/* grad.c - the backward pass. Conv2D's kernel and input gradients go through im2col + sgemm,
 * split by samples over the trainer's pool (OpenBLAS itself runs single-threaded, see
 * src/ops/nn.c), each task summing into its own partial kernel gradient, then the partials are
 * added in task order so that a run is bitwise reproducible for a given thread count. MaxPool
 * routes each output's gradient to its argmax; Dense's products (its forward in fit.c too) go
 * through sm__train_matmul (oneDNN's unpacked matmul where it is on, else the shared gemm);
 * activations are undone in place on the incoming gradient (relu: mask by output > 0; softmax:
 * y * (g - sum(g * y))). No allocation here but oneDNN's primitive caches (sm__train_matmul): the scratch is sized by
 * sm__train_scratch. */
/* GCC's -O2 "very cheap" cost model vectorizes no loop of unknown trip count; the masks and sums
 * here are such loops (clang needs nothing). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <cblas.h>
#include <string.h>

#include "ops/nn_dnnl.h"
#include "ops/nn_raw.h"
#include "train/dist.h"
#include "train/train_internal.h"

static void undo_act(int act, const float *y, float *gy, int64_t rows, int64_t k) {
  int64_t total = rows * k;
  if (act == SM_ACT_RELU) {
    /* a select, not a branch: half the signs are random and mispredictions dominate otherwise */
    for (int64_t i = 0; i < total; i++) gy[i] = y[i] > 0.0f ? gy[i] : 0.0f;
  } else if (act == SM_ACT_SOFTMAX) {
    for (int64_t r = 0; r < rows; r++) {
      const float *yr = y + r * k;
      float *gr = gy + r * k;
      float dot = 0.0f;
      for (int64_t j = 0; j < k; j++) dot += gr[j] * yr[j];
      for (int64_t j = 0; j < k; j++) gr[j] = yr[j] * (gr[j] - dot);
    }
  }
}

/* ---- the Dense products (train_internal.h) ---------------------------------------------------
 * Why oneDNN: OpenBLAS packs B on every call, and at the small batches of data-parallel ranks
 * the packing of a large kernel is much of the product. One thread, the seed CNN's
 * Dense(5408->64), us per call, OpenBLAS / oneDNN (bench/RESULTS.md, session 13, h6): batch 32
 * forward 240 / 133, weight gradient 191 / 144, input gradient 253 / 178; batch 64 370 / 243,
 * 315 / 283, 385 / 298. */
typedef struct mmjob {
  sm__dnnl_cache *cache;
  sm__dnnl_bmm_args a; /* the whole product; a piece takes rows (or columns) [r0, r1) of C */
  int ta, tb, cols;
  int64_t per;
  sm_status *err;
  int declined;
} mmjob;

static void mm_piece(void *ctx, int64_t pb, int64_t pe) {
  mmjob *j = ctx;
  for (int64_t p = pb; p < pe; p++) {
    int64_t r0 = p * j->per, all = j->cols ? j->a.N : j->a.M, r1 = r0 + j->per < all ? r0 + j->per : all;
    sm__dnnl_bmm_args a = j->a;
    if (j->cols) { /* columns [r0, r1) of B and C */
      a.N = r1 - r0;
      a.b += j->tb ? r0 * a.K : r0;
      a.c += r0;
    } else {
      a.M = r1 - r0;
      a.a += r0 * a.sa[1];
      a.c += r0 * a.N;
    }
    int declined = 0;
    sm_status *st = sm__dnnl_bmm(j->cache, &a, NULL, &declined), *none = NULL;
    if (declined) __atomic_store_n(&j->declined, 1, __ATOMIC_RELAXED);
    if (st && !__atomic_compare_exchange_n(&j->err, &none, st, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      sm_status_free(st);
  }
}

sm_status *sm__train_matmul(sm__train *t, int which, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                            const float *b, float *c) {
  return sm__train_matmul_lda(t, which, ta, tb, m, n, k, a, ta ? m : k, b, c);
}

sm_status *sm__train_matmul_lda(sm__train *t, int which, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                const float *a, int64_t lda, const float *b, float *c) {
  if (m <= 0 || n <= 0) return NULL;
  if (k > 0 && which >= 0 && which < 3 && sm__dnnl_enabled()) {
    sm_status *st = t->mm_cache[which] ? NULL : sm__dnnl_cache_new(&t->mm_cache[which]);
    if (st) return st;
    mmjob j = {t->mm_cache[which], {0}, ta, tb, 0, 0, NULL, 0};
    j.a.nbd = 1;
    j.a.bd[0] = 1;
    j.a.M = m, j.a.N = n, j.a.K = k;
    /* element strides of the rows and columns of op(A) [m, k], op(B) [k, n], C [m, n] */
    j.a.sa[1] = ta ? 1 : lda, j.a.sa[2] = ta ? lda : 1;
    j.a.sb[1] = tb ? 1 : n, j.a.sb[2] = tb ? k : 1;
    j.a.sc[1] = n, j.a.sc[2] = 1;
    j.a.sa[0] = m * k, j.a.sb[0] = k * n, j.a.sc[0] = m * n;
    j.a.a = a, j.a.b = b, j.a.c = c;
    /* few rows and many columns (the forward pass and the input gradient at small batches): by
     * columns, so that each thread streams its share of B rather than all of it */
    j.cols = m <= 64 && n >= 32;
    int64_t all = j.cols ? n : m;
    int64_t pieces = (double)m * (double)n * (double)k < SM_NN_PAR_MIN_MACS ? 1 : sm__threadpool_nthreads(t->pool);
    if (pieces > all) pieces = all;
    if (pieces < 1) pieces = 1;
    j.per = (all + pieces - 1) / pieces;
    if (j.cols) j.per = (j.per + 15) / 16 * 16; /* whole vectors of columns */
    sm__parallel_for(pieces > 1 ? t->pool : NULL, (all + j.per - 1) / j.per, 1, mm_piece, &j);
    if (j.err || !j.declined) return j.err;
  }
  if (lda == (ta ? m : k)) sm__nn_matmul_f32(t->pool, ta, tb, m, n, k, a, b, NULL, SM_NN_ACT_NONE, 0, c);
  else /* A's rows further apart (a column range of the input, fit_dist.c's input exchange) */
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, a, (int)lda, b, tb ? (int)k : (int)n, 0.0f, c, (int)n);
  return NULL;
}

sm_status *sm__train_wgrad(sm__train *t, int l, int64_t r0, int64_t r1, int64_t u, int64_t nb, const float *a,
                           int64_t lda, const float *dy, float *c) {
  const int64_t *cut = t->xcut[l];
  if (!cut) return sm__train_matmul_lda(t, 1, 1, 0, r1 - r0, u, nb, a, lda, dy, c);
  sm_status *st = NULL;
  for (int i = 0; i + 1 < t->nxcut[l] && !st; i++) {
    int64_t c0 = cut[i] > r0 ? cut[i] : r0, c1 = cut[i + 1] < r1 ? cut[i + 1] : r1;
    if (c0 < c1) st = sm__train_matmul_lda(t, 1, 1, 0, c1 - c0, u, nb, a + (c0 - r0), lda, dy, c + (c0 - r0) * u);
  }
  return st;
}

/* ---- conv2d ---------------------------------------------------------------------------------- */
typedef struct convjob {
  const sm__layer *L;
  sm__train *tr;
  const float *x, *gy, *w;
  float *gx;
  int64_t n, h, wd, c, oh, ow, cout, K, P, pad_t, pad_l, spc;
  int tasks;
} convjob;

/* rows (b, oy, ox) for samples [s0, s0 + ns), columns (ky, kx, ci) as the HWIO kernel flattens */
static void im2col(const convjob *j, int64_t s0, int64_t ns, float *col) {
  const sm__layer *L = j->L;
  const int64_t c = j->c, rowlen = (int64_t)L->kw * c;
  for (int64_t b = 0; b < ns; b++) {
    const float *xb = j->x + (s0 + b) * j->h * j->wd * c;
    for (int64_t oy = 0; oy < j->oh; oy++)
      for (int64_t ox = 0; ox < j->ow; ox++) {
        float *r = col + ((b * j->oh + oy) * j->ow + ox) * j->K;
        int64_t iy0 = oy * L->sh - j->pad_t, ix0 = ox * L->sw - j->pad_l;
        for (int ky = 0; ky < L->kh; ky++) {
          int64_t iy = iy0 + ky;
          float *rr = r + ky * rowlen;
          if (iy < 0 || iy >= j->h) {
            memset(rr, 0, (size_t)rowlen * sizeof *rr);
            continue;
          }
          if (ix0 >= 0 && ix0 + L->kw <= j->wd) {
            /* a plain loop: rows are often a few floats (3x3 over one channel), too short for memcpy */
            const float *src = xb + (iy * j->wd + ix0) * c;
            for (int64_t e = 0; e < rowlen; e++) rr[e] = src[e];
            continue;
          }
          for (int kx = 0; kx < L->kw; kx++) {
            int64_t ix = ix0 + kx;
            if (ix < 0 || ix >= j->wd)
              memset(rr + kx * c, 0, (size_t)c * sizeof *rr);
            else
              memcpy(rr + kx * c, xb + (iy * j->wd + ix) * c, (size_t)c * sizeof *rr);
          }
        }
      }
  }
}

static void col2im_add(const convjob *j, int64_t s0, int64_t ns, const float *col) {
  const sm__layer *L = j->L;
  const int64_t c = j->c;
  for (int64_t b = 0; b < ns; b++) {
    float *gb = j->gx + (s0 + b) * j->h * j->wd * c;
    for (int64_t oy = 0; oy < j->oh; oy++)
      for (int64_t ox = 0; ox < j->ow; ox++) {
        const float *r = col + ((b * j->oh + oy) * j->ow + ox) * j->K;
        int64_t iy0 = oy * L->sh - j->pad_t, ix0 = ox * L->sw - j->pad_l;
        for (int ky = 0; ky < L->kh; ky++) {
          int64_t iy = iy0 + ky;
          if (iy < 0 || iy >= j->h) continue;
          for (int kx = 0; kx < L->kw; kx++) {
            int64_t ix = ix0 + kx;
            if (ix < 0 || ix >= j->wd) continue;
            const float *src = r + ((int64_t)ky * L->kw + kx) * c;
            float *dst = gb + (iy * j->wd + ix) * c;
            for (int64_t ci = 0; ci < c; ci++) dst[ci] += src[ci];
          }
        }
      }
  }
}

static void conv_task(void *ctx, int64_t tb, int64_t te) {
  const convjob *j = ctx;
  for (int64_t t = tb; t < te; t++) {
    int64_t s_begin = j->n * t / j->tasks, s_end = j->n * (t + 1) / j->tasks;
    float *col = j->tr->col + t * j->tr->col_per_thread;
    float *pk = j->tr->part + t * j->tr->part_per_thread, *pb = pk + j->K * j->cout;
    memset(pk, 0, (size_t)(j->K * j->cout + j->cout) * sizeof *pk);
    if (j->gx && s_end > s_begin)
      memset(j->gx + s_begin * j->h * j->wd * j->c, 0, (size_t)((s_end - s_begin) * j->h * j->wd * j->c) * sizeof(float));
    for (int64_t s0 = s_begin; s0 < s_end; s0 += j->spc) {
      int64_t ns = s_end - s0 < j->spc ? s_end - s0 : j->spc;
      int64_t rows = ns * j->P;
      const float *gy = j->gy + s0 * j->P * j->cout;
      for (int64_t r = 0; r < rows; r++)
        for (int64_t co = 0; co < j->cout; co++) pb[co] += gy[r * j->cout + co];
      im2col(j, s0, ns, col);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)j->K, (int)j->cout, (int)rows, 1.0f, col, (int)j->K,
                  gy, (int)j->cout, 1.0f, pk, (int)j->cout);
      if (j->gx) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->K, (int)j->cout, 1.0f, gy,
                    (int)j->cout, j->w, (int)j->cout, 0.0f, col, (int)j->K);
        col2im_add(j, s0, ns, col);
      }
    }
  }
}

static int64_t conv_pad(int64_t in, int64_t out, int64_t k, int64_t s, int same) {
  if (!same) return 0;
  int64_t total = (out - 1) * s + k - in;
  return total > 0 ? total / 2 : 0;
}

/* Samples per im2col chunk for a conv layer (shared with the scratch sizing in fit.c). */
int64_t sm__conv_spc(const sm__layer *L, int64_t cap, int tasks);
int64_t sm__conv_spc(const sm__layer *L, int64_t cap, int tasks) {
  int64_t P = L->out_shape[0] * L->out_shape[1], K = (int64_t)L->kh * L->kw * L->in_shape[2];
  int64_t per = (cap + tasks - 1) / tasks, lim = ((int64_t)1 << 20) / (P * K);
  if (lim < 1) lim = 1;
  return per < lim ? per : lim;
}

static void conv_backward(sm_seq *m, const sm__layer *L, const float *x, const float *gy, float *gx, float *gk,
                          float *gb, int64_t n) {
  sm__train *tr = m->priv;
  convjob j;
  j.L = L;
  j.tr = tr;
  j.x = x;
  j.gy = gy;
  j.w = sm_tensor_data(L->kernel);
  j.gx = gx;
  j.n = n;
  j.h = L->in_shape[0], j.wd = L->in_shape[1], j.c = L->in_shape[2];
  j.oh = L->out_shape[0], j.ow = L->out_shape[1], j.cout = L->units;
  j.K = (int64_t)L->kh * L->kw * j.c;
  j.P = j.oh * j.ow;
  j.pad_t = conv_pad(j.h, j.oh, L->kh, L->sh, L->padding == SM_PAD_SAME);
  j.pad_l = conv_pad(j.wd, j.ow, L->kw, L->sw, L->padding == SM_PAD_SAME);
  j.tasks = tr->scratch_threads;
  if (j.tasks > n) j.tasks = (int)(n > 0 ? n : 1);
  j.spc = sm__conv_spc(L, tr->cap, tr->scratch_threads);
  sm__parallel_for(tr->pool, j.tasks, 1, conv_task, &j);
  /* fixed-order sum of the partials: reproducible whichever thread ran which task */
  int64_t nk = j.K * j.cout;
  memcpy(gk, tr->part, (size_t)nk * sizeof *gk);
  memcpy(gb, tr->part + nk, (size_t)j.cout * sizeof *gb);
  for (int t = 1; t < j.tasks; t++) {
    const float *pk = tr->part + t * tr->part_per_thread;
    for (int64_t i = 0; i < nk; i++) gk[i] += pk[i];
    for (int64_t i = 0; i < j.cout; i++) gb[i] += pk[nk + i];
  }
}

/* ---- max pooling ---------------------------------------------------------------------------- */
typedef struct pooljob {
  const float *gy;
  const int64_t *argmax;
  float *gx;
  const float *relu_y; /* the previous layer's relu output: route only where it is > 0 */
  int64_t in_per, out_per;
} pooljob;

static void pool_range(void *ctx, int64_t b, int64_t e) {
  const pooljob *j = ctx;
  memset(j->gx + b * j->in_per, 0, (size_t)((e - b) * j->in_per) * sizeof(float));
  if (j->relu_y) {
    for (int64_t i = b * j->out_per; i < e * j->out_per; i++) {
      int64_t a = j->argmax[i];
      j->gx[a] += j->relu_y[a] > 0.0f ? j->gy[i] : 0.0f;
    }
  } else {
    for (int64_t i = b * j->out_per; i < e * j->out_per; i++) j->gx[j->argmax[i]] += j->gy[i];
  }
}

/* ---- per layer ------------------------------------------------------------------------------- */
/* skip_act: the activation's mask is already in gy (the loss's fused softmax gradient, or a max
 * pool above that routed only to positive relu outputs). pool_relu: this is a max pool whose
 * input x is a relu output; apply that relu's mask while routing (x then is its y). */
static sm_status *layer_backward(sm_seq *m, int l, const float *x, const float *y, float *gy, float *gx, float *gk,
                                 float *gb, int64_t n, int skip_act, int pool_relu) {
  const sm__layer *L = &m->layers[l];
  sm_status *st = NULL;
  sm__train *tr = m->priv;
  int64_t in_per = sm__elems(L->in_rank, L->in_shape), out_per = sm__elems(L->out_rank, L->out_shape);
  int64_t last = L->out_rank ? L->out_shape[L->out_rank - 1] : 1;
  switch (L->kind) {
    case SM_LAYER_CONV2D:
      if (!skip_act) undo_act(L->activation, y, gy, n * out_per / last, last);
      conv_backward(m, L, x, gy, gx, gk, gb, n);
      break;
    case SM_LAYER_DENSE: {
      if (!skip_act) undo_act(L->activation, y, gy, n, L->units);
      const float *w = sm_tensor_data(L->kernel);
      /* exchanging inputs, only this rank's rows [r0, r1): the others' owners make theirs (fit_dist.c) */
      int64_t r0 = tr->xchg[l] ? tr->xrows[l][0] : 0, r1 = tr->xchg[l] ? tr->xrows[l][1] : in_per;
      st = sm__train_wgrad(tr, l, r0, r1, L->units, n, x + r0, in_per, gy, gk + r0 * L->units);
      for (int64_t u = 0; u < L->units; u++) gb[u] = 0.0f;
      for (int64_t i = 0; i < n; i++)
        for (int64_t u = 0; u < L->units; u++) gb[u] += gy[i * L->units + u];
      if (gx && !st) st = sm__train_matmul(tr, 2, 0, 1, n, in_per, L->units, gy, w, gx);
      break;
    }
    case SM_LAYER_MAXPOOL2D:
      if (gx) {
        pooljob j = {gy, tr->argmax[l], gx, pool_relu ? x : NULL, in_per, out_per};
        sm__parallel_for(tr->pool, n, 1, pool_range, &j);
      }
      break;
    case SM_LAYER_DROPOUT:
      if (gx) {
        const float *mask = tr->mask[l];
        if (mask && L->rate > 0.0f)
          for (int64_t i = 0; i < n * in_per; i++) gx[i] = gy[i] * mask[i];
        else if (gx != gy)
          memcpy(gx, gy, (size_t)(n * in_per) * sizeof *gx);
      }
      break;
    case SM_LAYER_ACTIVATION:
      if (!skip_act) undo_act(L->activation, y, gy, n * out_per / last, last);
      if (gx && gx != gy) memcpy(gx, gy, (size_t)(n * in_per) * sizeof *gx);
      break;
    case SM_LAYER_FLATTEN:
    case SM_LAYER_RESHAPE:
      if (gx && gx != gy) memcpy(gx, gy, (size_t)(n * in_per) * sizeof *gx);
      break;
    default:
      sm__layer_backward_extra(m, l, x, gy, gx, gk, gb, n);
      break;
  }
  if (L->no_bias && gb)
    for (int64_t u = 0; u < L->units; u++) gb[u] = 0.0f;
  return st ? sm_status_prefix(st, "%s", L->name) : NULL;
}

sm_status *sm__layer_backward(sm_seq *m, int l, const float *x, const float *y, float *gy, float *gx, float *gk,
                              float *gb, int64_t n) {
  return layer_backward(m, l, x, y, gy, gx, gk, gb, n, 0, 0);
}

/* Does layer l end in a relu whose mask a max pool right above can apply instead? */
static int relu_below_pool(const sm_seq *m, int l) {
  if (l < 1 || m->layers[l].kind != SM_LAYER_MAXPOOL2D) return 0;
  const sm__layer *P = &m->layers[l - 1];
  return (P->kind == SM_LAYER_CONV2D || P->kind == SM_LAYER_DENSE || P->kind == SM_LAYER_ACTIVATION) &&
         P->activation == SM_ACT_RELU;
}

sm_status *sm__backward(sm_seq *m, const float *x, int64_t n) {
  sm__train *tr = m->priv;
  int first_w = -1;
  for (int l = 0; l < m->nlayers && first_w < 0; l++)
    if (m->layers[l].kernel) first_w = l;
  if (first_w < 0) return NULL; /* no trainable layer: nothing to back-propagate */
  for (int l = m->nlayers - 1; l >= first_w; l--) {
    const float *in = l == 0 ? x : tr->act[l - 1];
    float *gx = l > first_w ? tr->grad[l - 1] : NULL; /* first_w >= 0 here, so l >= 1 */
    int pool_relu = gx && relu_below_pool(m, l);
    int skip = (l == m->nlayers - 1 && tr->fused_last) || (l + 1 < m->nlayers && relu_below_pool(m, l + 1));
    sm_status *st = layer_backward(m, l, in, tr->act[l], tr->grad[l], gx, tr->gk[l], tr->gb[l], n, skip, pool_relu);
    if (st) return st;
    if (tr->layer_done && m->layers[l].kernel) tr->layer_done(tr->layer_done_ctx, l);
    else sm__dist_progress(); /* under MPI: the gradients sent so far keep moving (TCP) */
  }
  return NULL;
}
