/* nn_smallpix.c - the float NHWC convolutions with few output pixels (N * OH * OW <= 16: batch-1 late
 * stages, ResNet50's conv4_x at 4x4 and conv5_x at 2x2) on AVX-512, with the bias, a residual
 * addend and Relu / Relu6 applied in registers before each store (nn_internal.h, sm__nn_sp_*):
 * what nn_conv.c runs for Conv2D and _FusedConv2D of that shape class in place of oneDNN's call.
 *
 * Why: at 4x4 / 2x2 pixels each filter float is used 4-16 times, so these layers stream their
 * filters (ResNet50 b1: ~80 MB a call from L3). oneDNN split them in filter slices over the
 * threads, each slice writing a dense temporary copied into place afterwards, with libdnnl's
 * per-call set-up on top (bench/RESULTS.md session 15, h9: memmove 1.4%, libdnnl 2.9% of samples).
 *
 * Here the filter is packed once (first call; again only for another filter tensor) into panels of
 * NR = 16 * NV output channels, each panel [K][NR] contiguous (K = KH * KW * C in HWIO order, the
 * channel tail zero-filled), so a panel is one sequential stream. The pool's threads take
 * contiguous ranges of panels and write their output channels in place. Per thread the patch
 * matrix is gathered once, transposed: X[k][P] for the P output pixels (a tap in the padding reads
 * 0; a tap in the padding for every pixel is skipped, its filter rows never read). A panel's P x NV
 * sums stay in registers over all of K: one load per filter vector, P broadcast-FMAs from X's
 * row k. NV = 1 for 12+ pixels, 2 for 6-11, 4 for 5 or fewer (16-22 accumulators). Sums in k order
 * (fp32), then + bias, + addend, the activation, one masked store. SM_NN_SMALLPIX=0 hands these
 * convolutions back to oneDNN (read once; for A/B). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/nn_internal.h"
#include "ops/nn_raw.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SP_AVX512 1
#endif

/* One packed filter: panels of nv vectors. */
typedef struct sp_pack {
  int refs;
  const void *wptr;
  uint64_t uid;
  int64_t K, Cout;
  void *raw;
  float *data; /* raw, 64-byte aligned: a filter vector is one cache line */
} sp_pack;

struct sm__nn_sp_cache {
  pthread_mutex_t mu;
  sp_pack *p[3]; /* nv 1, 2, 4 */
};

sm__nn_sp_cache *sm__nn_sp_cache_new(void) {
  sm__nn_sp_cache *c = calloc(1, sizeof *c);
  if (c && pthread_mutex_init(&c->mu, NULL)) {
    free(c);
    c = NULL;
  }
  return c;
}

static void pack_unref(sp_pack *p) {
  if (p && --p->refs == 0) {
    sm__free(p->raw);
    free(p);
  }
}

void sm__nn_sp_cache_free(sm__nn_sp_cache *c) {
  if (!c) return;
  for (int i = 0; i < 3; i++) pack_unref(c->p[i]);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static int nv_slot(int nv) { return nv == 1 ? 0 : nv == 2 ? 1 : 2; }

/* The pack of a's filter in panels of nv vectors (a reference: sp_release), or NULL when out of
 * memory. */
static sp_pack *sp_acquire(sm__nn_sp_cache *c, const sm__nn_sp_args *a, int64_t K, int nv) {
  sp_pack *r = NULL;
  pthread_mutex_lock(&c->mu);
  sp_pack **s = &c->p[nv_slot(nv)];
  if (*s && (*s)->wptr == a->filt && (*s)->uid == a->filt_uid && (*s)->K == K && (*s)->Cout == a->Cout) {
    r = *s;
  } else {
    int64_t NR = 16 * nv, np = (a->Cout + NR - 1) / NR;
    sp_pack *n = calloc(1, sizeof *n);
    void *raw = n ? sm__alloc_lasting((size_t)(np * NR) * (size_t)K * sizeof(float) + 64) : NULL;
    float *d = raw ? (float *)(void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63) : NULL;
    if (d) {
      for (int64_t q = 0; q < np; q++) {
        int64_t c0 = q * NR, w = a->Cout - c0 < NR ? a->Cout - c0 : NR;
        float *o = d + q * K * NR;
        for (int64_t k = 0; k < K; k++, o += NR) {
          memcpy(o, a->filt + k * a->Cout + c0, (size_t)w * sizeof(float));
          if (w < NR) memset(o + w, 0, (size_t)(NR - w) * sizeof(float));
        }
      }
      n->refs = 1;
      n->wptr = a->filt;
      n->uid = a->filt_uid;
      n->K = K;
      n->Cout = a->Cout;
      n->raw = raw;
      n->data = d;
      pack_unref(*s);
      *s = r = n;
    } else {
      free(n);
    }
  }
  if (r) r->refs++;
  pthread_mutex_unlock(&c->mu);
  return r;
}

static void sp_release(sm__nn_sp_cache *c, sp_pack *p) {
  pthread_mutex_lock(&c->mu);
  pack_unref(p);
  pthread_mutex_unlock(&c->mu);
}

#ifdef SP_AVX512
#define SP_FN __attribute__((target("avx512f")))
#define SP_GMAX 8   /* pixels a register block: 8 broadcast pointers, G x NV <= 24 sums */
#define SP_CB 64    /* channels a K block when the pixels take 2+ groups (8 KB of NV 2 filters, in L1) */

typedef struct sp_job {
  const sm__nn_sp_args *a;
  const float *pack;
  int64_t K, NR, npanels, per; /* per: panels a piece */
  int P, nv, G;                /* G: pixels a group (the last may have fewer) */
  const float *const *ptr;     /* [T][P]: pixel p's input at tap t, channel 0 (a zero row in the padding) */
  const uint16_t *tmask;       /* [T]: the pixels live at tap t (0: the tap is skipped) */
  int64_t T;
  int64_t pf; /* software prefetch distance in floats (0: none) */
} sp_job;

/* acc[G][NV] (+)= the sums over taps [t0, t1), channels [c0, c1) of the pixels whose input rows are
 * ptr[t * P + g] (g < G), the filters at w (tap t0, channel c0 of the panel). */
SP_FN static inline __attribute__((always_inline)) void sp_kernel(const sp_job *j, const float *const *ptr,
                                                                const float *w, int64_t t0, int64_t t1,
                                                                int64_t c0, int64_t c1, __m512 *accm, int zero,
                                                                int G, int NV, int PF) {
  const int64_t C = j->a->C, NR = 16 * NV, P = j->P;
  __m512 acc[SP_GMAX][4];
#pragma GCC unroll 8
  for (int g = 0; g < G; g++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) acc[g][v] = zero ? _mm512_setzero_ps() : accm[g * NV + v];
  for (int64_t t = t0; t < t1; t++) {
    if (!j->tmask[t]) continue;
    const float *wt = w + ((t - t0) * C) * NR;
    const float *b[SP_GMAX];
#pragma GCC unroll 8
    for (int g = 0; g < G; g++) b[g] = ptr[t * P + g];
    for (int64_t c = c0; c < c1; c++, wt += NR) {
      __m512 f[4];
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) {
        if (PF) _mm_prefetch((const char *)(wt + 16 * v + j->pf), _MM_HINT_T0);
        f[v] = _mm512_load_ps(wt + 16 * v);
      }
#pragma GCC unroll 8
      for (int g = 0; g < G; g++) {
        __m512 x = _mm512_set1_ps(b[g][c]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[g][v] = _mm512_fmadd_ps(x, f[v], acc[g][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; g++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) accm[g * NV + v] = acc[g][v];
}

#define SP_KER(G, NV)                                                                                      \
  SP_FN static void sp_ker_##G##_##NV(const sp_job *j, const float *const *ptr, const float *w, int64_t t0, \
                                      int64_t t1, int64_t c0, int64_t c1, __m512 *accm, int zero) {        \
    if (j->pf)                                                                                             \
      sp_kernel(j, ptr, w, t0, t1, c0, c1, accm, zero, G, NV, 1);                                          \
    else                                                                                                   \
      sp_kernel(j, ptr, w, t0, t1, c0, c1, accm, zero, G, NV, 0);                                          \
  }
#define SP_KERS(G) SP_KER(G, 1) SP_KER(G, 2) SP_KER(G, 4)
SP_KERS(1) SP_KERS(2) SP_KERS(3) SP_KERS(4) SP_KERS(5) SP_KERS(6) SP_KERS(7) SP_KERS(8)
typedef void (*sp_ker_fn)(const sp_job *, const float *const *, const float *, int64_t, int64_t, int64_t, int64_t,
                          __m512 *, int);
#define SP_ROW(G) {sp_ker_##G##_1, sp_ker_##G##_2, sp_ker_##G##_4}
static const sp_ker_fn sp_kers[SP_GMAX][3] = {SP_ROW(1), SP_ROW(2), SP_ROW(3), SP_ROW(4),
                                              SP_ROW(5), SP_ROW(6), SP_ROW(7), SP_ROW(8)};

SP_FN static inline __m512 sp_act(__m512 v, int act) {
  /* max(0, v) with v second: vmaxps returns its second operand when either is NaN, so NaN stays */
  if (act == SM_NN_ACT_RELU || act == SM_NN_ACT_RELU6) v = _mm512_max_ps(_mm512_setzero_ps(), v);
  if (act == SM_NN_ACT_RELU6) v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
  return v;
}

/* One panel q: one group of pixels (sums in registers over all of K), or groups in turn over K
 * blocks of one tap and SP_CB channels (the block's filters read from memory once, from L1 for the
 * next groups); then + bias, + addend, the activation, the stores. */
SP_FN static void sp_panel(const sp_job *j, int64_t q) {
  const sm__nn_sp_args *a = j->a;
  const int64_t C = a->C, NR = j->NR, Cout = a->Cout, P = j->P;
  const int nv = j->nv, G = j->G, ng = (j->P + G - 1) / G;
  const float *wq = j->pack + q * j->K * NR;
  __m512 acc[SM_NN_SP_MAX_M * 4];
  if (ng == 1) {
    sp_kers[P - 1][nv_slot(nv)](j, j->ptr, wq, 0, j->T, 0, C, acc, 1);
  } else {
    int first = 1;
    for (int64_t t = 0; t < j->T; t++) {
      if (!j->tmask[t]) continue;
      for (int64_t c0 = 0; c0 < C; c0 += SP_CB) {
        int64_t c1 = C - c0 < SP_CB ? C : c0 + SP_CB;
        const float *w = wq + (t * C + c0) * NR;
        for (int g0 = 0; g0 < P; g0 += G) {
          int gn = P - g0 < G ? (int)(P - g0) : G;
          sp_kers[gn - 1][nv_slot(nv)](j, j->ptr + g0, w, t, t + 1, c0, c1, acc + g0 * nv, first);
        }
        first = 0;
      }
    }
    if (first)
      for (int i = 0; i < P * nv; i++) acc[i] = _mm512_setzero_ps();
  }
  const int act = a->act;
  for (int v = 0; v < nv; v++) {
    int64_t co = q * NR + 16 * v;
    if (co >= Cout) break;
    __mmask16 m = Cout - co >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (Cout - co)) - 1);
    __m512 bias = a->bias ? _mm512_maskz_loadu_ps(m, a->bias + co) : _mm512_setzero_ps();
    for (int64_t p = 0; p < P; p++) {
      __m512 s = _mm512_add_ps(acc[p * nv + v], bias);
      if (a->addend) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, a->addend + p * Cout + co));
      _mm512_mask_storeu_ps(a->out + p * Cout + co, m, sp_act(s, act));
    }
  }
}

/* Pieces [b0, b1): each a contiguous range of panels. */
static void sp_pieces(void *ctx, int64_t b0, int64_t b1) {
  const sp_job *j = ctx;
  int64_t q0 = b0 * j->per, q1 = b1 * j->per < j->npanels ? b1 * j->per : j->npanels;
  for (int64_t q = q0; q < q1; q++) sp_panel(j, q);
}

/* SM_NN_SP_PF: the software prefetch distance in bytes (0: none), read once; default SP_PF_DEFAULT. */
#define SP_PF_DEFAULT 8192
static int64_t sp_prefetch(void) {
  static int64_t pf = -1; /* a race only reads it twice */
  int64_t v = __atomic_load_n(&pf, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("SM_NN_SP_PF");
    v = e ? atoll(e) : SP_PF_DEFAULT;
    if (v < 0 || v > (1 << 20)) v = SP_PF_DEFAULT;
    v &= ~(int64_t)63;
    __atomic_store_n(&pf, v, __ATOMIC_RELAXED);
  }
  return v;
}

static int sp_cpu(void) {
  static int have = -1; /* a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    const char *e = getenv("SM_NN_SMALLPIX");
    h = __builtin_cpu_supports("avx512f") && !(e && !strcmp(e, "0"));
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
}
#endif

int sm__nn_sp_ok(const sm__nn_sp_args *a) {
#ifdef SP_AVX512
  int64_t M = a->N * a->OH * a->OW, in;
  const char *e = getenv("SM_NN_SP_ALL"); /* temporary: every shape of the class */
  int all = e && *e == '1';
  if (!all && !(a->KH == 1 && a->KW == 1 && (double)a->C * (double)a->Cout >= 262144.0)) return 0;
  return M >= 1 && M <= SM_NN_SP_MAX_M && a->C > 0 && a->Cout > 0 && a->KH > 0 && a->KW > 0 &&
         (a->act == SM_NN_ACT_NONE || a->act == SM_NN_ACT_RELU || a->act == SM_NN_ACT_RELU6) &&
         !__builtin_mul_overflow(a->N * a->H, a->W * a->C, &in) && in < INT32_MAX - 16 && sp_cpu();
#else
  (void)a;
  return 0;
#endif
}

sm_status *sm__nn_sp_conv(sm__nn_sp_cache *c, const sm__nn_sp_args *a, sm_kctx *ctx) {
#ifdef SP_AVX512
  const int P = (int)(a->N * a->OH * a->OW);
  const int64_t T = a->KH * a->KW, K = T * a->C;
  /* 6 pixels or fewer: one group of NV 4 (4 x 4 sums at 2x2); more: groups of up to 8 at NV 2 */
  int nv = P <= 6 ? 4 : 2;
  while (nv > 1 && 16 * (nv / 2) >= a->Cout) nv /= 2; /* no panel wider than the channels need */
  int gmax = nv == 4 ? 6 : SP_GMAX, ng = (P + gmax - 1) / gmax;
  int64_t NR = 16 * nv, npanels = (a->Cout + NR - 1) / NR;
  double macs = (double)P * (double)K * (double)a->Cout;
  /* as nn_dnnl.c's run_split: small filters split from twice the threshold */
  double min_macs = SM_NN_PAR_MIN_MACS * ((double)K * (double)a->Cout < 65536.0 ? 2 : 1);
  sm_threadpool *pool = macs < min_macs ? NULL : sm__kctx_pool(ctx);
  int64_t pieces = sm__threadpool_nthreads(pool);
  if (pieces > npanels) pieces = npanels;
  sp_job j = {a, NULL, K, NR, npanels, (npanels + pieces - 1) / pieces, P, nv, (P + ng - 1) / ng, NULL, NULL, T, 0};
  j.pf = sp_prefetch() / 4;
  sm_status *st = NULL;
  /* the zero row (C floats), the pointers [T][P], the tap masks [T] */
  size_t zb = ((size_t)a->C * sizeof(float) + 63) / 64 * 64;
  char *scr = sm__kctx_scratch(ctx, zb + (size_t)T * ((size_t)P * sizeof(float *) + sizeof(uint16_t)), &st);
  if (!scr) return st;
  const float *zero = (const float *)(void *)scr;
  memset(scr, 0, zb);
  const float **ptr = (const float **)(void *)(scr + zb);
  uint16_t *tmask = (uint16_t *)(void *)(ptr + T * P);
  for (int64_t t = 0; t < T; t++) {
    int64_t kh = t / a->KW, kw = t % a->KW;
    uint16_t m = 0;
    for (int p = 0; p < P; p++) {
      int64_t n = p / (a->OH * a->OW), oh = p / a->OW % a->OH, ow = p % a->OW;
      int64_t ih = oh * a->sh - a->pt + kh * a->dh, iw = ow * a->sw - a->pl + kw * a->dw;
      int live = ih >= 0 && ih < a->H && iw >= 0 && iw < a->W;
      ptr[t * P + p] = live ? a->in + ((n * a->H + ih) * a->W + iw) * a->C : zero;
      if (live) m |= (uint16_t)(1u << p);
    }
    tmask[t] = m;
  }
  j.ptr = ptr;
  j.tmask = tmask;
  sp_pack *pk = sp_acquire(c, a, K, nv);
  if (!pk) {
    sm__kctx_scratch_free(ctx, scr);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when packing a %lld x %lld convolution filter", (long long)K,
                         (long long)a->Cout);
  }
  j.pack = pk->data;
  sm__parallel_for(pool, pieces, 1, sp_pieces, &j);
  sp_release(c, pk);
  sm__kctx_scratch_free(ctx, scr);
  return NULL;
#else
  (void)c, (void)a, (void)ctx;
  return sm_status_new(SM_INTERNAL, "small-pixel convolution without AVX-512");
#endif
}
