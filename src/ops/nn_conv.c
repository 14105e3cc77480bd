/* nn_conv.c - Conv2D and DepthwiseConv2dNative (ops.md §3.8), float and double, NHWC and NCHW
 * (NCHW is transposed to NHWC and back), VALID/SAME/EXPLICIT padding, strides, dilations and
 * grouped Conv2D (input depth a multiple of the filter depth, as TF's oneDNN CPU kernel allows);
 * and _FusedConv2D (float NHWC: the same convolution with a bias, maybe a residual Add, an
 * activation and maybe a MaxPool applied as it goes, per the node's fused attrs, nn_fuse.c), and
 * _FusedDepthwiseConv2dNative (float NHWC depthwise with a bias and maybe an activation); both
 * with this library's attr _sm_explicit_paddings, a zero Pad folded in, nn_fold.c.
 *
 * Conv2D is im2col + gemm: the output's N*OH*OW rows are cut into blocks whose patch matrix fits
 * in ~512 KB, the blocks spread over the runtime's pool, each block's patches gathered into a
 * per-call buffer and multiplied by the [KH*KW*Cin, Cout] filter with one single-threaded gemm
 * (OpenBLAS threading is off, see nn.c). A 1x1 stride-1 unpadded kernel is a plain gemm on the
 * input. So memory beyond the output stays bounded whatever the batch. A float convolution with at
 * most SM_NN_STREAM_M output pixels and a filter of 1 MB or more, most of whose taps fall in the
 * padding, streams the filter rows it needs once instead (conv_stream). Depthwise is direct loops
 * (per output pixel, per tap, one vectorisable channel loop). Never writes its inputs. */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "ops/math_int.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"

/* Every convolution kernel's state: the window attrs, what a _FusedConv2D fuses, and the oneDNN
 * cache (nn_dnnl.c; NULL when oneDNN is off, or for float64 / NCHW nodes it never runs). */
typedef struct conv_state {
  sm__nn_window w;
  sm__nn_fused f;
  int fused;
  sm__dnnl_cache *dnnl;
} conv_state;

static int str_is(const char *s, size_t len, const char *lit) { return strlen(lit) == len && !memcmp(s, lit, len); }

/* A _FusedConv2D or _FusedDepthwiseConv2dNative that absorbed a zero Pad (nn_fold.c): padding VALID
 * over the input padded by attr _sm_explicit_paddings [0, 0, top, bottom, left, right, 0, 0], i.e.
 * EXPLICIT. */
static sm_status *explicit_pads(const sm_node *n, sm__nn_window *w) {
  const int64_t *v;
  size_t cnt;
  sm_status *st = sm__node_attr_ints(n, "_sm_explicit_paddings", &v, &cnt);
  if (st) return st;
  int ok = cnt == 8 && w->padding == SM_NN_VALID;
  for (size_t i = 0; ok && i < 8; i++) ok = v[i] >= 0 && v[i] <= (1 << 20) && (i >= 2 && i <= 5 ? 1 : v[i] == 0);
  if (!ok)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "attr _sm_explicit_paddings must be 8 pads in [0, 2^20], over H and W only, with padding VALID");
  w->padding = SM_NN_EXPLICIT;
  for (int i = 0; i < 4; i++) w->pad[i] = v[2 + i];
  return NULL;
}

/* fused: 0 Conv2D / DepthwiseConv2dNative, 1 _FusedConv2D, 2 _FusedDepthwiseConv2dNative (no Add, no
 * MaxPool: nn_fuse.c reads its fused_ops as a MatMul's). */
static sm_status *conv_prepare(const sm_node *n, int fused, void **state) {
  conv_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->fused = fused;
  sm_status *st = sm__nn_window_prepare(n, 0, 1, 1, &s->w);
  if (!st && !fused && sm__node_num_outputs(n) == 1) {
    int dt = sm__node_output_dtype(n, 0);
    if (dt != SM_FLOAT && dt != SM_DOUBLE)
      st = sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (float, double)", sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  }
  if (!st && fused && s->w.nchw)
    st = sm_status_new(SM_UNIMPLEMENTED, "data_format NCHW is not supported (NHWC only, as TF's CPU kernel)");
  if (!st && fused && sm__node_attr(n, "filter_format")) {
    const char *ff;
    size_t len;
    st = sm__node_attr_string(n, "filter_format", &ff, &len);
    if (!st && !str_is(ff, len, "HWIO"))
      st = sm_status_new(SM_UNIMPLEMENTED, "filter_format '%.*s' is not supported (HWIO only)",
                         (int)(len > 32 ? 32 : len), ff);
  }
  if (!st && fused) st = sm__nn_fused_prepare(n, fused == 1, &s->f);
  if (!st && fused && sm__node_attr(n, "_sm_explicit_paddings")) st = explicit_pads(n, &s->w);
  /* oneDNN for float NHWC */
  if (!st && !s->w.nchw && sm__node_num_outputs(n) == 1 && sm__node_output_dtype(n, 0) == SM_FLOAT &&
      sm__dnnl_enabled())
    st = sm__dnnl_cache_new(&s->dnnl);
  if (st) {
    free(s);
    return st;
  }
  sm__nn_blas_init();
  *state = s;
  return NULL;
}

sm_status *sm__nn_conv2d_prepare(const sm_node *n, void **state) { return conv_prepare(n, 0, state); }
sm_status *sm__nn_depthwise_prepare(const sm_node *n, void **state) { return conv_prepare(n, 0, state); }
sm_status *sm__nn_fused_conv2d_prepare(const sm_node *n, void **state) { return conv_prepare(n, 1, state); }
sm_status *sm__nn_fused_depthwise_prepare(const sm_node *n, void **state) { return conv_prepare(n, 2, state); }

void sm__nn_conv_release(void *state) {
  conv_state *s = state;
  if (!s) return;
  sm__dnnl_cache_free(s->dnnl);
  free(s);
}

/* Geometry of one convolution, NHWC. */
typedef struct conv_job {
  int dtype;
  const char *in, *filt;
  char *out;
  int64_t N, H, W, C, OH, OW, KH, KW, Cf, Cout, G, CoutG, K;
  int64_t sh, sw, dh, dw, pt, pl;
  int64_t rows;       /* rows per im2col block */
  const float *bias;  /* float only: fused epilogue over each finished row block */
  const float *addend; /* oneDNN only: a residual Add's addend (conv_add) */
  int act;            /* SM_NN_ACT_* */
  float alpha;        /* LeakyRelu's */
  int failed;         /* set (atomically) when a block buffer cannot be allocated */
  /* a MaxPool fused after the epilogue (direct path only): its geometry over the conv output,
   * and where the pooled [N, pOH, pOW, Cout] goes (out is then unused) */
  const sm__nn_pool_fuse *pool;
  int64_t pOH, pOW, ppt, ppl;
  float *pout;
} conv_job;

/* Bias and activation over output rows [r0, r0+m), while they are still in cache. */
static void conv_epilogue(const conv_job *j, int64_t r0, int64_t m) {
  if (!j->bias && !j->act) return;
  float *c = (float *)j->out + r0 * j->Cout;
  sm__nn_bias_act_f32(c, c, m, j->Cout, j->bias, j->act, j->alpha);
}

/* Gathers the patches of output rows [r0, r1), group g, into buf [r1-r0, K]. */
#define IM2COL(T)                                                                                    \
  do {                                                                                               \
    const T *in = (const T *)j->in;                                                                  \
    T *d = buf;                                                                                      \
    const int64_t Cf = j->Cf, C = j->C, KW = j->KW, OHW = j->OH * j->OW;                             \
    for (int64_t r = r0; r < r1; r++) {                                                              \
      int64_t n = r / OHW, rem = r % OHW, oh = rem / j->OW, ow = rem % j->OW;                        \
      int64_t ih0 = oh * j->sh - j->pt, iw0 = ow * j->sw - j->pl;                                    \
      for (int64_t kh = 0; kh < j->KH; kh++) {                                                       \
        int64_t ih = ih0 + kh * j->dh;                                                               \
        if (ih < 0 || ih >= j->H) {                                                                  \
          for (int64_t e = 0; e < KW * Cf; e++) d[e] = 0;                                            \
          d += KW * Cf;                                                                              \
          continue;                                                                                  \
        }                                                                                            \
        const T *row = in + (n * j->H + ih) * j->W * C + g * Cf;                                     \
        if (Cf == C && j->dw == 1 && iw0 >= 0 && iw0 + KW <= j->W) {                                 \
          /* the window row is one contiguous run of the input */                                    \
          const T *p = row + iw0 * C;                                                                \
          for (int64_t e = 0; e < KW * C; e++) d[e] = p[e];                                          \
          d += KW * C;                                                                               \
          continue;                                                                                  \
        }                                                                                            \
        for (int64_t kw = 0; kw < KW; kw++, d += Cf) {                                               \
          int64_t iw = iw0 + kw * j->dw;                                                             \
          if (iw < 0 || iw >= j->W) {                                                                \
            for (int64_t e = 0; e < Cf; e++) d[e] = 0;                                               \
          } else {                                                                                   \
            const T *p = row + iw * C;                                                               \
            for (int64_t e = 0; e < Cf; e++) d[e] = p[e];                                            \
          }                                                                                          \
        }                                                                                            \
      }                                                                                              \
    }                                                                                                \
  } while (0)

static void conv_gemm(const conv_job *j, int64_t m, const void *a, int64_t lda, int64_t g, int64_t r0) {
  size_t es = j->dtype == SM_DOUBLE ? 8 : 4;
  const char *b = j->filt + (size_t)(g * j->CoutG) * es;
  char *c = j->out + (size_t)(r0 * j->Cout + g * j->CoutG) * es;
  if (j->dtype == SM_DOUBLE)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)j->CoutG, (int)j->K, 1.0, a, (int)lda,
                (const double *)b, (int)j->Cout, 0.0, (double *)c, (int)j->Cout);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)j->CoutG, (int)j->K, 1.0f, a, (int)lda,
                (const float *)b, (int)j->Cout, 0.0f, (float *)c, (int)j->Cout);
}

static void conv_rows(void *ctx, int64_t begin, int64_t end) {
  conv_job *j = ctx;
  size_t es = j->dtype == SM_DOUBLE ? 8 : 4;
  int64_t rows = j->rows < end - begin ? j->rows : end - begin;
  void *buf = sm__alloc((size_t)(rows * j->K) * es); /* per worker: not the (single-threaded) kctx's */
  if (!buf) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t r0 = begin; r0 < end; r0 += rows) {
    int64_t r1 = r0 + rows < end ? r0 + rows : end;
    for (int64_t g = 0; g < j->G; g++) {
      if (es == 8)
        IM2COL(double);
      else
        IM2COL(float);
      conv_gemm(j, r1 - r0, buf, j->K, g, r0);
    }
    conv_epilogue(j, r0, r1 - r0);
  }
  sm__free(buf);
}

/* 1x1, stride 1, no padding, one group: the input is already the patch matrix. */
static void conv_1x1_rows(void *ctx, int64_t begin, int64_t end) {
  conv_job *j = ctx;
  size_t es = j->dtype == SM_DOUBLE ? 8 : 4;
  for (int64_t r0 = begin; r0 < end; r0 += 1 << 20) { /* gemm takes int sizes */
    int64_t m = end - r0 < (1 << 20) ? end - r0 : (1 << 20);
    conv_gemm(j, m, j->in + (size_t)(r0 * j->C) * es, j->C, 0, r0);
    conv_epilogue(j, r0, m);
  }
}

/* Few output rows (M <= SM_NN_SMALL_M, batch-1 late stages): the pool splits the output channels
 * [c0, c1) instead, each task gathers all M patches (a few KB to a few hundred) and runs the
 * unpacked small-row gemm on its columns, then the epilogue on them. */
static void conv_small_cols(void *ctx, int64_t b0, int64_t b1) {
  conv_job *j = ctx;
  int64_t M = j->N * j->OH * j->OW, c0 = b0 * 16, c1 = b1 * 16 < j->Cout ? b1 * 16 : j->Cout;
  const float *a = (const float *)j->in;
  float *buf = NULL;
  if (!j->rows) { /* not the plain 1x1 case: gather the patches */
    buf = sm__alloc((size_t)(M * j->K) * sizeof *buf);
    if (!buf) {
      __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
      return;
    }
    int64_t r0 = 0, r1 = M, g = 0;
    IM2COL(float);
    a = buf;
  }
  float *c = (float *)j->out;
  sm__nn_sgemm_small(M, c0, c1, j->K, a, j->K, (const float *)j->filt, j->Cout, c, j->Cout);
  if (j->bias || j->act)
    for (int64_t r = 0; r < M; r++)
      sm__nn_bias_act_f32(c + r * j->Cout + c0, c + r * j->Cout + c0, 1, c1 - c0, j->bias ? j->bias + c0 : NULL, j->act,
                          j->alpha);
  sm__free(buf);
}

/* Depthwise: out[n,oh,ow,c*M+m] = sum over taps in[n,ih,iw,c] * f[kh,kw,c,m]. */
#define DEPTHWISE(T)                                                                               \
  do {                                                                                             \
    const T *restrict in = (const T *)j->in, *restrict f = (const T *)j->filt;                     \
    T *restrict out = (T *)j->out; /* never an input: no alias checks in the channel loops */      \
    const int64_t C = j->C, Mm = j->Cout / (C ? C : 1), CM = j->Cout;                              \
    for (int64_t r = begin; r < end; r++) {                                                        \
      int64_t n = r / j->OH, oh = r % j->OH;                                                       \
      for (int64_t ow = 0; ow < j->OW; ow++) {                                                     \
        T *o = out + ((n * j->OH + oh) * j->OW + ow) * CM;                                         \
        for (int64_t kh = 0; kh < j->KH; kh++) {                                                   \
          int64_t ih = oh * j->sh - j->pt + kh * j->dh;                                            \
          if (ih < 0 || ih >= j->H) continue;                                                      \
          for (int64_t kw = 0; kw < j->KW; kw++) {                                                 \
            int64_t iw = ow * j->sw - j->pl + kw * j->dw;                                          \
            if (iw < 0 || iw >= j->W) continue;                                                    \
            const T *p = in + ((n * j->H + ih) * j->W + iw) * C, *fk = f + (kh * j->KW + kw) * CM; \
            if (Mm == 1)                                                                           \
              for (int64_t c = 0; c < C; c++) o[c] += p[c] * fk[c];                                \
            else                                                                                   \
              for (int64_t c = 0; c < C; c++)                                                      \
                for (int64_t m = 0; m < Mm; m++) o[c * Mm + m] += p[c] * fk[c * Mm + m];           \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* A fused depthwise's bias and activation over output rows [begin, end) (n*OH + oh), in cache. */
static void depthwise_epilogue(const conv_job *j, int64_t begin, int64_t end) {
  if (!j->bias && !j->act) return;
  float *o = (float *)j->out + begin * j->OW * j->Cout;
  sm__nn_bias_act_f32(o, o, (end - begin) * j->OW, j->Cout, j->bias, j->act, j->alpha);
}

static void depthwise_rows(void *ctx, int64_t begin, int64_t end) {
  conv_job *j = ctx;
  if (j->dtype == SM_DOUBLE) {
    DEPTHWISE(double);
  } else {
    DEPTHWISE(float);
    depthwise_epilogue(j, begin, end);
  }
}

/* ---- direct convolution for short patches ------------------------------------------------------
 * With a short patch (K = KH*KW*Cin small: a first layer on grey or RGB images, K = 9 or 27)
 * im2col + gemm spends most of its time gathering patches and packing gemm panels for a handful
 * of multiply-adds each. Direct loops do the same sums with no buffer: four neighbouring output
 * pixels share every filter load, and 16 output channels stay in registers (GCC/Clang vector
 * extensions, so it is plain C; an AVX2+FMA clone is picked at run time where the CPU has it, the
 * binary itself targets baseline x86-64; on AVX-512 one with 16-channel vectors, blocks of up to 8
 * pixels and a fused 2x2 MaxPool taken in registers). Each output is the sum over (kh, kw, c) in
 * order, then the bias, as the im2col path's epilogue adds it. */
#define DIRECT_MAX_K 64
typedef float v8f __attribute__((vector_size(32)));

static inline int use_direct(const conv_job *j) {
  return j->dtype == SM_FLOAT && j->G == 1 && j->K <= DIRECT_MAX_K && j->Cout >= 16;
}

#define V8_LOAD(p) (__extension__({ v8f v_; memcpy(&v_, (p), sizeof v_); v_; }))
#define V8_SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
typedef int v8i __attribute__((vector_size(32)));
/* Relu / Relu6 on a vector with the scalar epilogue's rule (v < 0 ? 0 : v > 6 ? 6 : v: NaN stays). */
#define V8_ACT(a)                                                           \
  do {                                                                      \
    if (act) {                                                              \
      v8i neg_ = (a) < V8_SPLAT(0.0f);                                      \
      (a) = (v8f)((v8i)(a) & ~neg_);                                        \
      if (act == SM_NN_ACT_RELU6) {                                         \
        v8i big_ = (a) > V8_SPLAT(6.0f);                                    \
        (a) = (v8f)(((v8i)(a) & ~big_) | ((v8i)V8_SPLAT(6.0f) & big_));     \
      }                                                                     \
    }                                                                       \
  } while (0)

/* Tap t = (kh, kw, c) of a window reads the window's origin + toff[t]; its filter row is t.
 * Returns K (<= DIRECT_MAX_K: use_direct checked). */
static inline int64_t direct_taps(const conv_job *j, int64_t *toff) {
  int64_t K = 0;
  for (int64_t kh = 0; kh < j->KH; kh++)
    for (int64_t kw = 0; kw < j->KW; kw++)
      for (int64_t c = 0; c < j->C; c++) toff[K++] = (kh * j->dh * j->W + kw * j->dw) * j->C + c;
  return K;
}

/* Channels [co0, Cout) of one output pixel, taps clipped to the input; bias and act included. */
static inline __attribute__((always_inline)) void direct_pixel(const conv_job *j, const float *in, const float *f,
                                                               float *o, int64_t n, int64_t ih0, int64_t iw0,
                                                               int64_t co0) {
  const int64_t C = j->C, Cout = j->Cout;
  for (int64_t co = co0; co < Cout; co++) o[co] = 0;
  for (int64_t kh = 0; kh < j->KH; kh++) {
    int64_t ih = ih0 + kh * j->dh;
    if (ih < 0 || ih >= j->H) continue;
    for (int64_t kw = 0; kw < j->KW; kw++) {
      int64_t iw = iw0 + kw * j->dw;
      if (iw < 0 || iw >= j->W) continue;
      const float *p = in + ((n * j->H + ih) * j->W + iw) * C, *fk = f + (kh * j->KW + kw) * C * Cout;
      for (int64_t c = 0; c < C; c++)
        for (int64_t co = co0; co < Cout; co++) o[co] += p[c] * fk[c * Cout + co];
    }
  }
  if (j->bias)
    for (int64_t co = co0; co < Cout; co++) o[co] += j->bias[co];
  if (j->act == SM_NN_ACT_RELU)
    for (int64_t co = co0; co < Cout; co++) o[co] = o[co] < 0 ? 0 : o[co];
  else if (j->act == SM_NN_ACT_RELU6)
    for (int64_t co = co0; co < Cout; co++) o[co] = o[co] < 0 ? 0 : o[co] > 6 ? 6 : o[co];
}

/* ---- the same sums 16 channels to a vector (the AVX-512 clones) ------------------------------
 * P output pixels (8, 4, 2 or 1) times V vectors of 16 channels (2 or 1) per block, so that every
 * filter load serves P pixels and every input broadcast V vectors: with V = 2 and P = 8 the 16
 * accumulators, 2 filter vectors and a broadcast stay in the 32 registers and each tap is 16 FMAs
 * for 10 loads. Each output is still the sum over the taps in order, then the bias, then Relu /
 * Relu6: the bits of direct_body's 8-channel FMA clone. */
typedef float v16f __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));
#define V16_LOAD(p) (__extension__({ v16f v_; memcpy(&v_, (p), sizeof v_); v_; }))
#define V16_SPLAT(x) ((v16f){(x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x), (x)})

/* r += vector v of the bias (when any), then Relu / Relu6 as V8_ACT (NaN stays). A macro: a 64-byte
 * vector passed by value would change the ABI outside the AVX-512 clones. */
#define V16_EPILOGUE(r, bias, v, act)                                           \
  do {                                                                          \
    if (bias) (r) += V16_LOAD((bias) + 16 * (v));                               \
    if (act) {                                                                  \
      v16i neg_ = (r) < V16_SPLAT(0.0f);                                        \
      (r) = (v16f)((v16i)(r) & ~neg_);                                          \
      if ((act) == SM_NN_ACT_RELU6) {                                           \
        v16i big_ = (r) > V16_SPLAT(6.0f);                                      \
        (r) = (v16f)(((v16i)(r) & ~big_) | ((v16i)V16_SPLAT(6.0f) & big_));     \
      }                                                                         \
    }                                                                           \
  } while (0)

/* a[p][v] = the sum over the taps for pixel p (P of them, PW to a row: pixel p's window starts at
 * px + (p / PW) * rstep + (p % PW) * step) and channel vector v (V of them) of filter columns f. */
static inline __attribute__((always_inline)) void block16_sums(v16f a[8][2], const float *px, int64_t step,
                                                               int64_t rstep, const int64_t *toff, int64_t K,
                                                               const float *f, int64_t Cout, int P, int PW, int V) {
#pragma GCC unroll 8
  for (int p = 0; p < P; p++) a[p][0] = a[p][1] = V16_SPLAT(0.0f);
  for (int64_t t = 0; t < K; t++, f += Cout) {
    const float *p0 = px + toff[t];
    v16f f0 = V16_LOAD(f), f1 = V == 2 ? V16_LOAD(f + 16) : f0;
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) {
      v16f x = V16_SPLAT(p0[(p / PW) * rstep + (p % PW) * step]);
      a[p][0] += x * f0;
      if (V == 2) a[p][1] += x * f1;
    }
  }
}

static inline __attribute__((always_inline)) void direct_block16(const float *px, int64_t step, const int64_t *toff,
                                                                 int64_t K, const float *f, int64_t Cout,
                                                                 const float *bias, int act, float *o, int P, int V) {
  v16f a[8][2];
  block16_sums(a, px, step, 0, toff, K, f, Cout, P, P, V);
#pragma GCC unroll 8
  for (int p = 0; p < P; p++)
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) {
      v16f r = a[p][v];
      V16_EPILOGUE(r, bias, v, act);
      memcpy(o + p * Cout + 16 * v, &r, sizeof r);
    }
}

/* direct_block16 for a run-time pixel count npx (8, 4, 2 or 1). */
static inline __attribute__((always_inline)) void direct_blocks16(const float *px, int64_t step, const int64_t *toff,
                                                                  int64_t K, const float *f, int64_t Cout,
                                                                  const float *bias, int act, float *o, int64_t npx,
                                                                  int V) {
  if (npx == 8)
    direct_block16(px, step, toff, K, f, Cout, bias, act, o, 8, V);
  else if (npx == 4)
    direct_block16(px, step, toff, K, f, Cout, bias, act, o, 4, V);
  else if (npx == 2)
    direct_block16(px, step, toff, K, f, Cout, bias, act, o, 2, V);
  else
    direct_block16(px, step, toff, K, f, Cout, bias, act, o, 1, V);
}

/* Output rows r = n*OH + oh in [begin, end), row r written at dst + (r - begin) * OW * Cout. wide
 * (a constant): 16-channel vectors in blocks of up to 8 pixels (direct_block16, the AVX-512 clones
 * only), else two 8-channel vectors in blocks of 4 pixels. */
static inline __attribute__((always_inline)) void direct_body(const conv_job *j, int64_t begin, int64_t end,
                                                              float *dst, int wide) {
  const float *in = (const float *)j->in, *f = (const float *)j->filt;
  const int64_t C = j->C, Cout = j->Cout, OW = j->OW, W = j->W, Cv = Cout & ~(int64_t)15;
  const int64_t span = (j->KW - 1) * j->dw, step = j->sw * C;
  /* Relu and Relu6 in registers; the other activations in a pass over each finished row */
  const int act = j->act == SM_NN_ACT_RELU || j->act == SM_NN_ACT_RELU6 ? j->act : SM_NN_ACT_NONE;
  const int row_act = act == SM_NN_ACT_NONE ? j->act : SM_NN_ACT_NONE;
  int64_t toff[DIRECT_MAX_K], K = direct_taps(j, toff);
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / j->OH, oh = r % j->OH, ih0 = oh * j->sh - j->pt;
    float *orow = dst + (r - begin) * OW * Cout;
    /* the window inside the input vertically: then only the horizontal edges clip */
    int full_rows = ih0 >= 0 && ih0 + (j->KH - 1) * j->dh < j->H;
    int64_t ow = 0;
    while (ow < OW) {
      int64_t iw0 = ow * j->sw - j->pl;
      if (!full_rows || iw0 < 0 || iw0 + span >= W) { /* clipped window */
        direct_pixel(j, in, f, orow + ow * Cout, n, ih0, iw0, 0);
        ow++;
        continue;
      }
      /* the most pixels (wide: 8, 4, 2, 1; else 4 or 1) whose windows all lie inside the input */
      int64_t npx = wide ? 8 : ow + 4 <= OW && iw0 + 3 * j->sw + span < W ? 4 : 1;
      while (wide && npx > 1 && (ow + npx > OW || iw0 + (npx - 1) * j->sw + span >= W)) npx >>= 1;
      const float *px = in + ((n * j->H + ih0) * W + iw0) * C; /* the window's origin */
      if (wide) {
        float *o = orow + ow * Cout;
        for (int64_t cb = 0; cb < Cv; cb += 32) { /* 32 channels at a time, then maybe 16 */
          const float *bb = j->bias ? j->bias + cb : NULL;
          if (cb + 32 <= Cv)
            direct_blocks16(px, step, toff, K, f + cb, Cout, bb, act, o + cb, npx, 2);
          else
            direct_blocks16(px, step, toff, K, f + cb, Cout, bb, act, o + cb, npx, 1);
        }
      }
      for (int64_t cb = 0; cb < (wide ? 0 : Cv); cb += 16) {
        float *o = orow + ow * Cout + cb;
        if (npx == 4) {
          v8f a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
          const float *fk = f + cb;
          for (int64_t t = 0; t < K; t++, fk += Cout) {
            const float *p0 = px + toff[t];
            v8f f0 = V8_LOAD(fk), f1 = V8_LOAD(fk + 8);
            v8f x0 = V8_SPLAT(p0[0]), x1 = V8_SPLAT(p0[step]), x2 = V8_SPLAT(p0[2 * step]), x3 = V8_SPLAT(p0[3 * step]);
            a00 += x0 * f0, a01 += x0 * f1, a10 += x1 * f0, a11 += x1 * f1;
            a20 += x2 * f0, a21 += x2 * f1, a30 += x3 * f0, a31 += x3 * f1;
          }
          if (j->bias) {
            v8f b0 = V8_LOAD(j->bias + cb), b1 = V8_LOAD(j->bias + cb + 8);
            a00 += b0, a01 += b1, a10 += b0, a11 += b1, a20 += b0, a21 += b1, a30 += b0, a31 += b1;
          }
          if (act) {
            V8_ACT(a00);
            V8_ACT(a01);
            V8_ACT(a10);
            V8_ACT(a11);
            V8_ACT(a20);
            V8_ACT(a21);
            V8_ACT(a30);
            V8_ACT(a31);
          }
          memcpy(o, &a00, 32), memcpy(o + 8, &a01, 32);
          memcpy(o + Cout, &a10, 32), memcpy(o + Cout + 8, &a11, 32);
          memcpy(o + 2 * Cout, &a20, 32), memcpy(o + 2 * Cout + 8, &a21, 32);
          memcpy(o + 3 * Cout, &a30, 32), memcpy(o + 3 * Cout + 8, &a31, 32);
        } else {
          v8f a0 = {0}, a1 = {0};
          const float *fk = f + cb;
          for (int64_t t = 0; t < K; t++, fk += Cout) {
            v8f x0 = V8_SPLAT(px[toff[t]]);
            a0 += x0 * V8_LOAD(fk), a1 += x0 * V8_LOAD(fk + 8);
          }
          if (j->bias) a0 += V8_LOAD(j->bias + cb), a1 += V8_LOAD(j->bias + cb + 8);
          V8_ACT(a0);
          V8_ACT(a1);
          memcpy(o, &a0, 32), memcpy(o + 8, &a1, 32);
        }
      }
      if (Cv < Cout) /* channels past the last 16 */
        for (int64_t q = 0; q < npx; q++)
          direct_pixel(j, in, f, orow + (ow + q) * Cout, n, ih0, iw0 + q * j->sw, Cv);
      ow += npx;
    }
    if (row_act) sm__nn_bias_act_f32(orow, orow, OW, Cout, NULL, row_act, j->alpha);
  }
}

/* A fused 2x2 / stride 2 MaxPool over 32 or 16 channels (V vectors) of NP pooled pixels (2 or 1)
 * whose 2 x 2*NP conv pixels all have whole windows: the conv pixels' sums as direct_block16's
 * (row 0 at px, row 1 at px + rstep), each with the bias and Relu / Relu6, then each window's
 * maximum in pooled_body's order (row 0 then row 1, left to right; -FLT_MAX then "greater wins":
 * x86's max returns its second operand unless the first is greater, so a NaN never wins). */
static inline __attribute__((always_inline)) void pool_block16(const float *px, int64_t step, int64_t rstep,
                                                               const int64_t *toff, int64_t K, const float *f,
                                                               int64_t Cout, const float *bias, int act, float *o,
                                                               int NP, int V) {
  v16f a[8][2]; /* pixel p: row p / (2 NP), column p % (2 NP) */
  const int PW = 2 * NP;
  block16_sums(a, px, step, rstep, toff, K, f, Cout, 4 * NP, PW, V);
#pragma GCC unroll 2
  for (int v = 0; v < V; v++) {
#pragma GCC unroll 2
    for (int q = 0; q < NP; q++) {
      v16f m = V16_SPLAT(-FLT_MAX);
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++) {
        v16f r = a[(k >> 1) * PW + 2 * q + (k & 1)][v];
        V16_EPILOGUE(r, bias, v, act);
        v16i gt = r > m;
        m = (v16f)(((v16i)r & gt) | ((v16i)m & ~gt));
      }
      memcpy(o + q * Cout + 16 * v, &m, sizeof m);
    }
  }
}

/* Channels [co0, Cout) of pooled pixel (n, ph, pw) of a 2x2 / stride 2 VALID pool: its 4 conv
 * pixels through direct_pixel into tmp (4 * Cout floats), then the maximum as pooled_body takes it.
 * Inlined into the clone, so that its sums are FMAs as direct_body's clipped pixels are. */
static inline __attribute__((always_inline)) void pool_pixel_slow(const conv_job *j, int64_t n, int64_t ph, int64_t pw, int64_t co0, float *tmp, float *o) {
  const float *in = (const float *)j->in, *f = (const float *)j->filt;
  for (int k = 0; k < 4; k++) {
    int64_t oh = 2 * ph + (k >> 1), ow = 2 * pw + (k & 1);
    direct_pixel(j, in, f, tmp + k * j->Cout, n, oh * j->sh - j->pt, ow * j->sw - j->pl, co0);
  }
  for (int64_t c = co0; c < j->Cout; c++) {
    float m = -FLT_MAX;
    for (int k = 0; k < 4; k++) {
      float q = tmp[k * j->Cout + c];
      m = q > m ? q : m;
    }
    o[c] = m;
  }
}

/* Whether pooled_body can pool this job in registers (AVX-512 clone): a 2x2 / stride 2 pool whose
 * windows all lie inside the conv output (VALID, or SAME over even sizes), after Relu, Relu6 or no
 * activation (the others run over finished rows). */
static inline int pool2x2_fast(const conv_job *j) {
  const sm__nn_pool_fuse *f = j->pool;
  return f->kh == 2 && f->kw == 2 && f->sh == 2 && f->sw == 2 && j->ppt == 0 && j->ppl == 0 &&
         2 * j->pOH <= j->OH && 2 * j->pOW <= j->OW &&
         (j->act == SM_NN_ACT_NONE || j->act == SM_NN_ACT_RELU || j->act == SM_NN_ACT_RELU6);
}

/* Pooled row p = n*pOH + ph of pool2x2_fast's pool: pooled pixels whose conv windows
 * are all inside the input through pool_block16, the others and the channels past the last 16
 * through pool_pixel_slow. */
static inline __attribute__((always_inline)) void pooled_row16(const conv_job *j, int64_t p, const int64_t *toff,
                                                               int64_t K, float *tmp) {
  const float *in = (const float *)j->in, *f = (const float *)j->filt;
  const int64_t C = j->C, Cout = j->Cout, W = j->W, pOW = j->pOW, Cv = Cout & ~(int64_t)15;
  const int64_t span = (j->KW - 1) * j->dw, step = j->sw * C, rstep = j->sh * W * C;
  const int act = j->act;
  int64_t n = p / j->pOH, ph = p % j->pOH, ih0 = 2 * ph * j->sh - j->pt;
  /* both conv rows' windows inside the input vertically */
  int full_rows = ih0 >= 0 && ih0 + j->sh + (j->KH - 1) * j->dh < j->H;
  float *orow = j->pout + p * pOW * Cout;
  for (int64_t pw = 0; pw < pOW;) {
    int64_t iw0 = 2 * pw * j->sw - j->pl;
    int np = !full_rows || iw0 < 0                                    ? 0
             : pw + 2 <= pOW && iw0 + 3 * j->sw + span < W ? 2
             : iw0 + j->sw + span < W                         ? 1
                                                                      : 0;
    float *o = orow + pw * Cout;
    if (!np) {
      pool_pixel_slow(j, n, ph, pw, 0, tmp, o);
      pw++;
      continue;
    }
    const float *px = in + ((n * j->H + ih0) * W + iw0) * C;
    for (int64_t cb = 0; cb < Cv; cb += 32) { /* 32 channels at a time, then maybe 16 */
      const float *bb = j->bias ? j->bias + cb : NULL;
      int v2 = cb + 32 <= Cv;
      if (np == 2 && v2)
        pool_block16(px, step, rstep, toff, K, f + cb, Cout, bb, act, o + cb, 2, 2);
      else if (np == 2)
        pool_block16(px, step, rstep, toff, K, f + cb, Cout, bb, act, o + cb, 2, 1);
      else if (v2)
        pool_block16(px, step, rstep, toff, K, f + cb, Cout, bb, act, o + cb, 1, 2);
      else
        pool_block16(px, step, rstep, toff, K, f + cb, Cout, bb, act, o + cb, 1, 1);
    }
    if (Cv < Cout)
      for (int q = 0; q < np; q++) pool_pixel_slow(j, n, ph, pw + q, Cv, tmp, o + q * Cout);
    pw += np;
  }
}

/* Pooled output rows p = n*pOH + ph in [begin, end) of a fused MaxPool: the conv rows under
 * the window row (at most kh, never shared with the next window row since sh >= kh) go to a
 * scratch of a few KB, then each window's maximum, with nn_pool.c's rule (windows clipped to the
 * conv output, -FLT_MAX then "greater wins", so a NaN never propagates), to pout. */
/* wide (a constant, the AVX-512 clones): direct_body's 16-channel blocks, and a 2x2 / stride 2 pool
 * in registers where pool2x2_fast says it can */
static inline __attribute__((always_inline)) void pooled_body(conv_job *j, int64_t begin, int64_t end, int wide) {
  const sm__nn_pool_fuse *f = j->pool;
  const int64_t OH = j->OH, OW = j->OW, Cout = j->Cout, pOH = j->pOH, pOW = j->pOW;
  int64_t maxr = f->kh < OH ? f->kh : OH;
  float *buf = sm__alloc((size_t)(maxr * OW * Cout) * sizeof *buf); /* per worker */
  if (!buf) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  if (wide && pool2x2_fast(j)) {
    int64_t toff[DIRECT_MAX_K], K = direct_taps(j, toff);
    for (int64_t p = begin; p < end; p++) pooled_row16(j, p, toff, K, buf);
    sm__free(buf);
    return;
  }
  for (int64_t p = begin; p < end; p++) {
    int64_t n = p / pOH, ph = p % pOH;
    int64_t hs = ph * f->sh - j->ppt, he = hs + f->kh;
    if (hs < 0) hs = 0;
    if (he > OH) he = OH;
    if (hs < he) {
      direct_body(j, n * OH + hs, n * OH + he, buf, wide);
    }
    float *o = j->pout + p * pOW * Cout;
    for (int64_t pw = 0; pw < pOW; pw++, o += Cout) {
      int64_t ws = pw * f->sw - j->ppl, we = ws + f->kw;
      if (ws < 0) ws = 0;
      if (we > OW) we = OW;
      int64_t c0 = 0;
#define POOL_TAKE(ptr) /* m = q > m ? q : m for the 8 floats at ptr */ \
  do {                                                           \
    v8f q_ = V8_LOAD(ptr);                                       \
    v8i gt_ = q_ > m;                                            \
    m = (v8f)(((v8i)q_ & gt_) | ((v8i)m & ~gt_));                \
  } while (0)
      if (he - hs == 2 && we - ws == 2) { /* a whole 2x2 window (the common MaxPool): unrolled */
        const float *b0 = buf + ws * Cout, *b1 = b0 + OW * Cout;
        for (; c0 + 8 <= Cout; c0 += 8) { /* the same order as the loop below: row by row */
          v8f m = V8_SPLAT(-FLT_MAX);
          POOL_TAKE(b0 + c0);
          POOL_TAKE(b0 + Cout + c0);
          POOL_TAKE(b1 + c0);
          POOL_TAKE(b1 + Cout + c0);
          memcpy(o + c0, &m, sizeof m);
        }
      }
      for (; c0 + 8 <= Cout; c0 += 8) { /* 8 channels in a register across the window */
        v8f m = V8_SPLAT(-FLT_MAX);
        for (int64_t r = 0; r < he - hs; r++)
          for (int64_t iw = ws; iw < we; iw++) POOL_TAKE(buf + (r * OW + iw) * Cout + c0);
        memcpy(o + c0, &m, sizeof m);
      }
#undef POOL_TAKE
      for (int64_t c = c0; c < Cout; c++) {
        float m = -FLT_MAX;
        for (int64_t r = 0; r < he - hs; r++)
          for (int64_t iw = ws; iw < we; iw++) {
            float q = buf[(r * OW + iw) * Cout + c];
            m = q > m ? q : m;
          }
        o[c] = m;
      }
    }
  }
  sm__free(buf);
}

/* direct_rows_SUF / pooled_rows_SUF: direct_body / pooled_body compiled with ATTR (a target clone
 * or nothing), 16-channel blocks or not (WIDE). */
#define DIRECT_CLONES(ATTR, SUF, WIDE)                                                  \
  ATTR static void direct_rows_##SUF(void *ctx, int64_t begin, int64_t end) {          \
    conv_job *j = ctx;                                                                 \
    direct_body(j, begin, end, (float *)j->out + begin * j->OW * j->Cout, WIDE);       \
  }                                                                                    \
  ATTR static void pooled_rows_##SUF(void *ctx, int64_t begin, int64_t end) { pooled_body(ctx, begin, end, WIDE); }
DIRECT_CLONES(, base, 0)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DIRECT_AVX2 1
/* The AVX2 clone fuses each multiply-add into one FMA (half the instructions on the hot loop,
 * one rounding instead of two: results move by an ulp or so, as TF's own FMA kernels' do).
 * Clang contracts `a += x * f` by default; GCC in ISO C mode (-std=c11) does not, hence the
 * per-function option. */
#if defined(__clang__)
#define AVX2_FN __attribute__((target("avx2,fma")))
#else
#define AVX2_FN __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#endif
DIRECT_CLONES(AVX2_FN, avx2, 0)
/* The AVX-512 clones: 16 channels to a vector (direct_block16, pool_block16), the same bits as the
 * AVX2 clones'. */
#if defined(__clang__)
#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#else
#define AVX512_FN __attribute__((target("avx512f,avx2,fma"), optimize("fp-contract=fast")))
#endif
DIRECT_CLONES(AVX512_FN, avx512, 1)
/* Depthwise float: the same loops, 8-wide FMA over the channels. */
AVX2_FN static void depthwise_rows_avx2(void *ctx, int64_t begin, int64_t end) {
  conv_job *j = ctx;
  DEPTHWISE(float);
  depthwise_epilogue(j, begin, end);
}
/* Depthwise float, multiplier 1, on AVX-512: each 16-channel vector of an output pixel summed in a
 * register over its taps in (kh, kw) order from 0 (taps in the padding skipped), 4 neighbouring
 * pixels sharing each filter load, and stored once (DEPTHWISE adds into memory at every tap, into an
 * output zeroed first): the same FMAs in the same order, so the bits of depthwise_rows_avx2. Channel
 * tails (C % 16) take a scalar loop in the same order. Each row's bias and activation follow it while
 * it is in cache. Every output element is written: the output is not zeroed (depthwise_overwrites). */
static inline __attribute__((always_inline)) void dw16_pixels(const conv_job *j, const float *in, const float *f,
                                                              float *o, int64_t n, int64_t oh, int64_t ow, int P,
                                                              int64_t c, int64_t KH, int64_t KW) {
  const int64_t C = j->C;
  v16f a[4];
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) a[p] = V16_SPLAT(0.0f);
  for (int64_t kh = 0; kh < KH; kh++) {
    int64_t ih = oh * j->sh - j->pt + kh * j->dh;
    if (ih < 0 || ih >= j->H) continue;
    const float *row = in + (n * j->H + ih) * j->W * C + c;
    for (int64_t kw = 0; kw < KW; kw++) {
      v16f fk = V16_LOAD(f + (kh * KW + kw) * C + c);
#pragma GCC unroll 4
      for (int p = 0; p < P; p++) {
        int64_t iw = (ow + p) * j->sw - j->pl + kw * j->dw;
        if (iw < 0 || iw >= j->W) continue;
        a[p] += V16_LOAD(row + iw * C) * fk;
      }
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) memcpy(o + (ow + p) * C + c, &a[p], sizeof a[p]);
}

AVX512_FN static void depthwise_rows_avx512(void *ctx, int64_t begin, int64_t end) {
  conv_job *j = ctx;
  if (j->Cout != j->C) { /* a multiplier: the generic loops */
    DEPTHWISE(float);
    depthwise_epilogue(j, begin, end);
    return;
  }
  const float *in = (const float *)j->in, *f = (const float *)j->filt;
  const int64_t C = j->C, OW = j->OW;
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / j->OH, oh = r % j->OH;
    float *o = (float *)j->out + r * OW * C;
    const int64_t C16 = C / 16 * 16;
    int64_t ow = 0;
    if (j->KH == 3 && j->KW == 3) { /* the common window, its loops unrolled */
      for (; ow + 4 <= OW; ow += 4)
        for (int64_t c = 0; c < C16; c += 16) dw16_pixels(j, in, f, o, n, oh, ow, 4, c, 3, 3);
      for (; ow < OW; ow++)
        for (int64_t c = 0; c < C16; c += 16) dw16_pixels(j, in, f, o, n, oh, ow, 1, c, 3, 3);
    }
    for (; ow + 4 <= OW; ow += 4)
      for (int64_t c = 0; c < C16; c += 16) dw16_pixels(j, in, f, o, n, oh, ow, 4, c, j->KH, j->KW);
    for (; ow < OW; ow++)
      for (int64_t c = 0; c < C16; c += 16) dw16_pixels(j, in, f, o, n, oh, ow, 1, c, j->KH, j->KW);
    for (int64_t c = C16; c < C; c++) /* the tail: one channel at a time, the same order */
      for (int64_t x = 0; x < OW; x++) {
        float acc = 0.0f;
        for (int64_t kh = 0; kh < j->KH; kh++) {
          int64_t ih = oh * j->sh - j->pt + kh * j->dh;
          if (ih < 0 || ih >= j->H) continue;
          for (int64_t kw = 0; kw < j->KW; kw++) {
            int64_t iw = x * j->sw - j->pl + kw * j->dw;
            if (iw < 0 || iw >= j->W) continue;
            acc += in[((n * j->H + ih) * j->W + iw) * C + c] * f[(kh * j->KW + kw) * C + c];
          }
        }
        o[x * C + c] = acc;
      }
    depthwise_epilogue(j, r, r + 1); /* the row is still in cache */
  }
}
#endif

typedef void (*rows_fn)(void *ctx, int64_t begin, int64_t end);
/* The AVX-512 or AVX2+FMA clone of direct_rows / pooled_rows (pooled 1), the AVX2+FMA one of
 * float depthwise_rows (pooled 2), where the CPU has it. SM_NN_DIRECT_AVX512=0 (bench/'s A/B
 * switch, read once here) keeps the AVX2 clones on an AVX-512 CPU. */
static rows_fn direct_pick(int pooled) {
#ifdef DIRECT_AVX2
  static int have = -1; /* computed once (1 AVX2, 2 AVX-512 too); a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const char *e = getenv("SM_NN_DIRECT_AVX512");
    if (h && __builtin_cpu_supports("avx512f") && !(e && !strcmp(e, "0"))) h = 2;
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  if (h == 2) return pooled == 2 ? depthwise_rows_avx512 : pooled ? pooled_rows_avx512 : direct_rows_avx512;
  if (h) return pooled == 2 ? depthwise_rows_avx2 : pooled ? pooled_rows_avx2 : direct_rows_avx2;
#endif
  return pooled == 2 ? depthwise_rows : pooled ? pooled_rows_base : direct_rows_base;
}

static sm__nn_dw_args dw_args(const conv_job *j) {
  sm__nn_dw_args d = {(const float *)j->in, (const float *)j->filt, j->bias, (float *)j->out, j->N, j->H, j->W, j->C,
                      j->OH, j->OW, j->sh, j->sw, j->pt, j->pl, j->act, j->alpha};
  return d;
}

/* Whether nn_dwconv.c's 3x3 loops run this float depthwise (in place of oneDNN's call): 2 its
 * AVX-512 ones, 1 their AVX2 clone (nn_dwconv_avx2.c, on CPUs without AVX-512), 0 neither. */
static int use_dw3x3(const conv_job *j) {
  if (j->dtype != SM_FLOAT || j->C <= 0 || j->Cout != j->C) return 0;
  if (sm__nn_dw3x3_ok(j->KH, j->KW, j->Cout / j->C, j->sh, j->sw, j->dh, j->dw)) return 2;
  if (j->KH != 3 || j->KW != 3 || (j->sh != 1 && j->sh != 2) || (j->sw != 1 && j->sw != 2) || j->dh != 1 ||
      j->dw != 1)
    return 0;
  sm__nn_dw_args d = dw_args(j);
  return sm__nn_dw3x3_avx2_ok(&d);
}

static void dw3x3_rows(void *ctx, int64_t begin, int64_t end) {
  const conv_job *j = ctx;
  sm__nn_dw_args d = dw_args(j);
  if (sm__nn_dw3x3_ok(j->KH, j->KW, 1, j->sh, j->sw, j->dh, j->dw))
    sm__nn_dw3x3_rows(&d, begin, end);
  else
    sm__nn_dw3x3_rows_avx2(&d, begin, end);
}

/* Whether the depthwise rows write every output element (nn_dwconv.c's, depthwise_rows_avx512 at
 * multiplier 1), so that the output needs no zeroing first (the other loops add into it). */
static int depthwise_overwrites(const conv_job *j) {
  if (use_dw3x3(j)) return 1;
#ifdef DIRECT_AVX2
  return j->dtype == SM_FLOAT && j->Cout == j->C && direct_pick(2) == depthwise_rows_avx512;
#else
  (void)j;
  return 0;
#endif
}

/* Runs a filled-in job (M, K, Cout > 0) over the pool. depth_mult > 0: depthwise with that
 * multiplier (output pre-zeroed); otherwise every output element is written. */
static void conv_run(sm_threadpool *pool, conv_job *j, int64_t depth_mult) {
  size_t es = j->dtype == SM_DOUBLE ? 8 : 4;
  int64_t M = j->N * j->OH * j->OW;
  double macs = (double)M * (double)j->K * (double)(depth_mult ? depth_mult : j->Cout);
  /* nn_dwconv.c's depthwise splits from a quarter of the usual threshold: MobileNetV2 b1 (2 threads)
   * 0.58 -> 0.54-0.55 ms a call with its 8x8 and 4x4x576 layers split (bench/RESULTS.md, session
   * 15, h2) */
  if (macs < (depth_mult && use_dw3x3(j) ? SM_NN_PAR_MIN_MACS / 4 : SM_NN_PAR_MIN_MACS)) pool = NULL;
  if (j->pool) { /* fused MaxPool (conv_common checked use_direct) */
    int64_t per_row = j->OW * j->K * j->Cout * (j->pool->kh < j->OH ? j->pool->kh : j->OH);
    sm__parallel_for(pool, j->N * j->pOH, per_row >= 65536 ? 1 : 65536 / (per_row ? per_row : 1), direct_pick(1), j);
  } else if (depth_mult) {
    int64_t per_row = j->OW * j->KH * j->KW * j->Cout;
    sm__parallel_for(pool, j->N * j->OH, per_row >= 16384 ? 1 : 16384 / (per_row ? per_row : 1),
                     use_dw3x3(j) ? dw3x3_rows : j->dtype == SM_FLOAT ? direct_pick(2) : depthwise_rows, j);
  } else if (use_direct(j)) {
    int64_t per_row = j->OW * j->K * j->Cout;
    sm__parallel_for(pool, j->N * j->OH, per_row >= 65536 ? 1 : 65536 / per_row, direct_pick(0), j);
  } else if (j->dtype == SM_FLOAT && j->G == 1 && M <= SM_NN_SMALL_M) {
    /* j->rows = 1 marks "the input is the patch matrix" (1x1, stride 1, unpadded) */
    j->rows = j->KH == 1 && j->KW == 1 && j->sh == 1 && j->sw == 1 && j->pt == 0 && j->pl == 0 && j->OH == j->H &&
              j->OW == j->W;
    int64_t per_blk = M * j->K * 16;
    sm__parallel_for(pool, (j->Cout + 15) / 16, per_blk >= 65536 ? 1 : 65536 / per_blk, conv_small_cols, j);
  } else if (j->KH == 1 && j->KW == 1 && j->sh == 1 && j->sw == 1 && j->pt == 0 && j->pl == 0 && j->OH == j->H &&
             j->OW == j->W && j->G == 1) {
    int64_t per_row = j->K * j->Cout;
    sm__parallel_for(pool, M, per_row >= 65536 ? 1 : 65536 / per_row, conv_1x1_rows, j);
  } else {
    /* patch blocks of ~512 KB; at least 4 rows so gemm has something to chew on */
    j->rows = (int64_t)(524288 / es) / j->K;
    if (j->rows < 4) j->rows = 4;
    int64_t per_row = j->K * j->CoutG * j->G, grain = per_row >= 65536 ? 1 : 65536 / per_row;
    sm__parallel_for(pool, M, grain, conv_rows, j);
  }
}

/* Whether oneDNN runs this float NHWC convolution (measured, bench/RESULTS.md "oneDNN"): everywhere
 * but the shortest patches (a grey 3x3 or 4x4 first layer: K <= 16), where the direct loops win
 * (seed CNN batch 1: 0.025 vs 0.031 ms); a 1x1 over 64 channels (also a direct-path shape) was
 * faster through oneDNN. RGB 3x3 first layers (K 27) went to the direct loops while they were 9%
 * faster on an AVX2 Xeon; on an AVX-512 EPYC oneDNN's took MobileNetV2 batch 1 from 1.72 to
 * 1.10-1.35 ms and batch 16 from 11.5-12.1 to 10.0-11.0 ms, so they go to oneDNN. */
/* ---- few output pixels, a large filter: the filter streamed once --------------------------------
 * Batch-1 late stages (ResNet50's and VGG16's 2x2 outputs at 64x64: a 4608 x 512 filter, 9.4 MB,
 * against 4 output pixels) are bound by reading the filter. Here the M = N*OH*OW patches (M <= SM_NN_STREAM_M) are gathered once and the
 * [K, Cout] filter (HWIO is already row-major K x Cout) is streamed in row order by
 * sm__nn_sgemm_rows, each filter row used for all M outputs; the pool splits the filter's rows
 * into one contiguous range per thread, each thread its own partial [M, Cout], the partials then
 * added in piece order, then the bias, a residual addend and the activation. Taps that fall in the
 * padding for every output pixel are skipped: their filter rows are never read. By default only
 * convolutions that skip at least half the filter take it (stream_mode). */
#define STREAM_MIN_FILTER_BYTES (1 << 20)
/* the partial products' floats: 8 KB, so they stay in L1 beside the filter's streams (ResNet50's
 * 512->2048 1x1s at 2x2, 32 KB, ran slower than oneDNN: 0.32 against 0.29 ms) */
#define STREAM_MAX_Y 2048

/* SM_NN_CONV_STREAM: 0 off, 1 on for every convolution that fits (test_ops_nn; bench/'s A/B), unset
 * (or else) on only where at least half of the filter's rows are skipped: with every tap live it
 * ran slower than oneDNN here (bench/RESULTS.md, session 13, h7). Read once. */
static int stream_mode(void) {
  static int mode = -1;
  int v = __atomic_load_n(&mode, __ATOMIC_RELAXED); /* a race only reads the environment twice */
  if (v < 0) {
    const char *e = getenv("SM_NN_CONV_STREAM");
    v = !sm__nn_sgemv_rows_on() || (e && !strcmp(e, "0")) ? 0 : e && !strcmp(e, "1") ? 1 : 2;
    __atomic_store_n(&mode, v, __ATOMIC_RELAXED);
  }
  return v;
}

/* whether kernel offset t (along one axis: input i = o * stride - pad + t * dil) meets the input
 * for some output o in [0, out) */
static int tap_live(int64_t t, int64_t out, int64_t stride, int64_t pad, int64_t dil, int64_t in) {
  for (int64_t o = 0; o < out; o++) {
    int64_t i = o * stride - pad + t * dil;
    if (i >= 0 && i < in) return 1;
  }
  return 0;
}

/* the filter rows some output pixel reads */
static int64_t live_rows(const conv_job *j) {
  int64_t kh = 0, kw = 0;
  for (int64_t t = 0; t < j->KH; t++) kh += tap_live(t, j->OH, j->sh, j->pt, j->dh, j->H);
  for (int64_t t = 0; t < j->KW; t++) kw += tap_live(t, j->OW, j->sw, j->pl, j->dw, j->W);
  return kh * kw * j->Cf;
}

static int use_stream(const conv_job *j) {
  int64_t M;
  int mode;
  if (j->dtype != SM_FLOAT || j->G != 1 || j->K <= 0 || __builtin_mul_overflow(j->N, j->OH, &M) ||
      __builtin_mul_overflow(M, j->OW, &M) || M > SM_NN_STREAM_M || M * j->Cout > STREAM_MAX_Y ||
      (double)j->K * (double)j->Cout * sizeof(float) < STREAM_MIN_FILTER_BYTES || !(mode = stream_mode()))
    return 0;
  return mode == 1 || 2 * live_rows(j) <= j->K;
}

typedef struct stream_job {
  const conv_job *j;
  const float *a;      /* [M, K] patches */
  float *part;         /* [pieces, M, Cout] partial products */
  const int64_t *seg;  /* live filter rows: nseg pairs (first row, count), in row order */
  int64_t M, nseg, live, pieces;
} stream_job;

/* piece i: the live rows [i live / pieces, (i + 1) live / pieces) into part i */
static void stream_pieces(void *ctx, int64_t first, int64_t last) {
  const stream_job *s = ctx;
  const conv_job *j = s->j;
  for (int64_t i = first; i < last; i++) {
    int64_t l0 = i * s->live / s->pieces, l1 = (i + 1) * s->live / s->pieces, at = 0;
    float *y = s->part + i * s->M * j->Cout;
    int acc = 0;
    for (int64_t g = 0; g < s->nseg && at < l1; at += s->seg[2 * g + 1], g++) {
      int64_t lo = l0 > at ? l0 : at, hi = l1 < at + s->seg[2 * g + 1] ? l1 : at + s->seg[2 * g + 1];
      if (lo >= hi) continue;
      int64_t k0 = s->seg[2 * g] + (lo - at);
      acc |= sm__nn_sgemm_rows(s->M, hi - lo, j->Cout, s->a + k0, j->K, (const float *)j->filt + k0 * j->Cout,
                               j->Cout, y, j->Cout, acc);
    }
    if (!acc) memset(y, 0, (size_t)(s->M * j->Cout) * sizeof *y);
  }
}

/* j->out (float [M, Cout]) = act(conv + bias (+ addend, the output's shape; may be j->out)).
 * use_stream(j) holds. */
static sm_status *conv_stream(const conv_job *j, const float *addend, sm_kctx *ctx) {
  sm_threadpool *pool = sm__kctx_pool(ctx);
  const int64_t M = j->N * j->OH * j->OW, Cout = j->Cout;
  int64_t pieces = sm__threadpool_nthreads(pool);
  if (pieces > j->K / 64) pieces = j->K / 64 > 0 ? j->K / 64 : 1; /* at least 64 rows a piece */
  sm_status *st = NULL;
  size_t nseg_max = (size_t)(j->KH * j->KW);
  float *a = sm__kctx_scratch(ctx, (size_t)(M * j->K) * sizeof(float), &st);
  float *part = a ? sm__kctx_scratch(ctx, (size_t)(pieces * M * Cout) * sizeof(float), &st) : NULL;
  int64_t *seg = part ? sm__kctx_scratch(ctx, 2 * nseg_max * sizeof *seg, &st) : NULL;
  if (seg) {
    { /* the patches (IM2COL's names) */
      float *buf = a;
      int64_t r0 = 0, r1 = M, g = 0;
      IM2COL(float);
    }
    stream_job s = {j, a, part, seg, M, 0, 0, pieces};
    for (int64_t kh = 0; kh < j->KH; kh++) {
      if (!tap_live(kh, j->OH, j->sh, j->pt, j->dh, j->H)) continue;
      for (int64_t kw = 0; kw < j->KW; kw++) {
        if (!tap_live(kw, j->OW, j->sw, j->pl, j->dw, j->W)) continue;
        int64_t k0 = (kh * j->KW + kw) * j->Cf;
        if (s.nseg && seg[2 * (s.nseg - 1)] + seg[2 * (s.nseg - 1) + 1] == k0) /* adjacent rows: one run */
          seg[2 * (s.nseg - 1) + 1] += j->Cf;
        else
          seg[2 * s.nseg] = k0, seg[2 * s.nseg + 1] = j->Cf, s.nseg++;
        s.live += j->Cf;
      }
    }
    sm__parallel_for(pieces > 1 ? pool : NULL, pieces, 1, stream_pieces, &s);
    float *o = (float *)j->out;
    for (int64_t r = 0; r < M; r++)
      for (int64_t c = 0; c < Cout; c++) {
        int64_t e = r * Cout + c;
        float v = part[e];
        for (int64_t i = 1; i < pieces; i++) v += part[i * M * Cout + e];
        if (j->bias) v += j->bias[c];
        o[e] = addend ? v + addend[e] : v;
      }
    if (j->act) sm__nn_bias_act_f32(o, o, M, Cout, NULL, j->act, j->alpha);
  }
  sm__kctx_scratch_free(ctx, seg);
  sm__kctx_scratch_free(ctx, part);
  sm__kctx_scratch_free(ctx, a);
  return st;
}

static int use_dnnl(const conv_job *j, int depthwise) {
  return depthwise ? !use_dw3x3(j) : !use_direct(j) || j->K > 16;
}

static sm_status *conv_dnnl(sm__dnnl_cache *c, const conv_job *j, int depthwise, const sm_tensor *f, sm_kctx *ctx,
                            int *declined) {
  sm__dnnl_conv_args a = {j->N, j->H, j->W, j->C, j->OH, j->OW, j->KH, j->KW, j->Cout, depthwise ? j->C : j->G,
                          j->sh, j->sw, j->dh, j->dw, j->pt, j->pl, (const float *)j->in, (const float *)j->filt,
                          j->bias, sm__tensor_uid(f), (float *)j->out, j->act, j->alpha, j->addend};
  return sm__dnnl_conv(c, &a, ctx, declined);
}

/* _FusedConv2D with a residual Add: out = act(conv + bias + addend). The addend has the output's
 * shape in every network seen: oneDNN then adds it as a post-op while the output is in cache, onto
 * the addend's own buffer when the run lets this node have it (no new buffer to fault in); the
 * rule cannot know the shapes, so another one is added as TF's AddV2 would, broadcasting (the
 * output then has the broadcast shape), after the product and bias, and before the activation.
 * Without oneDNN the product (with the bias) is finished first and the Add and act run over it:
 * the bits of the unfused chain either way. */
static sm_status *conv_add(conv_job *j, const int64_t od[4], const sm_tensor *x, const sm_tensor *f,
                           const sm_tensor *addend, sm__dnnl_cache *dnnl, sm_kctx *ctx) {
  char s1[128], s2[128];
  if (j->dtype != SM_FLOAT || sm_tensor_dtype(addend) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "fused Add: the addend is %s, not float",
                         sm_dtype_name(sm_tensor_dtype(addend)) ? sm_dtype_name(sm_tensor_dtype(addend)) : "?");
  int ranks[2] = {4, sm_tensor_rank(addend)};
  const int64_t *dims[2] = {od, sm_tensor_dims(addend)};
  sm_bcast b;
  if (!sm__math_bcast_init(&b, 2, ranks, dims))
    return sm_status_new(SM_INVALID_ARGUMENT, "fused Add: Incompatible shapes: %s vs. %s",
                         sm_shape_str(4, od, s1, sizeof s1), sm_shape_str(ranks[1], dims[1], s2, sizeof s2));
  int same = ranks[1] == 4 && !memcmp(od, dims[1], 4 * sizeof *od);
  if (same && use_stream(j)) { /* onto the addend's buffer when the run lets this node have it */
    sm_tensor *out = sm__kctx_reuse_input(ctx, 3, 0, SM_FLOAT, 4, od);
    sm_status *st = out ? NULL : sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, 4, od, &out);
    if (st || b.n == 0) return st;
    j->in = sm_tensor_data(x);
    j->filt = sm_tensor_data(f);
    j->out = sm_tensor_data(out);
    return conv_stream(j, sm_tensor_data(addend), ctx);
  }
  int try_dnnl = j->K > 0 && dnnl && use_dnnl(j, 0);
  /* oneDNN sums onto the addend in place when the run lets this node have its buffer */
  sm_tensor *out = same && try_dnnl ? sm__kctx_reuse_input(ctx, 3, 0, SM_FLOAT, 4, od) : NULL;
  sm_status *st = out ? NULL : sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, b.out_rank, b.out_dims, &out);
  if (st || b.n == 0) return st; /* else the product is not empty either */
  if (j->K > INT_MAX || j->Cout > INT_MAX || j->C > INT_MAX)
    return sm_status_new(SM_UNIMPLEMENTED, "convolution too large for BLAS (patch %lld, output depth %lld)",
                         (long long)j->K, (long long)j->Cout);
  int64_t M = j->N * j->OH * j->OW, MC; /* M fits: the product is no larger than the output */
  if (__builtin_mul_overflow(M, j->Cout, &MC) || MC > (int64_t)(SIZE_MAX / 2 / sizeof(float)))
    return sm_status_new(SM_INVALID_ARGUMENT, "convolution output %s too large", sm_shape_str(4, od, s1, sizeof s1));
  j->in = sm_tensor_data(x);
  j->filt = sm_tensor_data(f);
  float *o = sm_tensor_data(out);
  const float *a = sm_tensor_data(addend); /* o itself when in place */
  int declined = 1, act = j->act;
  if (try_dnnl && same) { /* the sum post-op; a decline leaves o untouched (nn_dnnl.c) */
    j->out = (char *)o;
    j->addend = a;
    st = conv_dnnl(dnnl, j, 0, f, ctx, &declined);
    j->addend = NULL;
    if (st || !declined) return st;
  }
  /* the product and the bias alone, then the Add and the activation */
  float *prod = same && a != o ? o : sm__kctx_scratch(ctx, (size_t)MC * sizeof(float), &st);
  if (!prod) return st;
  j->out = (char *)prod;
  j->act = SM_NN_ACT_NONE;
  if (try_dnnl && !same) st = conv_dnnl(dnnl, j, 0, f, ctx, &declined); /* as the unfused conv would */
  if (!st && declined) {
    if (j->K == 0) { /* empty windows: zeros, then the bias */
      memset(prod, 0, (size_t)MC * sizeof *prod);
      sm__nn_bias_act_f32(prod, prod, M, j->Cout, j->bias, SM_NN_ACT_NONE, 0.0f);
    } else {
      conv_run(sm__kctx_pool(ctx), j, 0);
    }
    if (j->failed) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a convolution patch buffer");
  }
  j->act = act;
  if (!st) { /* the Add (broadcasting: o may be larger than the product) and the activation */
    int64_t len = b.dims[b.rank - 1], s0 = b.strides[0][b.rank - 1], s1i = b.strides[1][b.rank - 1];
    sm_bcast_it it;
    sm__math_bcast_seek(&b, 2, 0, &it);
    for (int64_t r = 0; r < b.n / len; r++, sm__math_bcast_next(&b, 2, &it))
      for (int64_t i = 0; i < len; i++) o[r * len + i] = prod[it.off[0] + i * s0] + a[it.off[1] + i * s1i];
    if (j->act) sm__nn_bias_act_f32(o, o, 1, b.n, NULL, j->act, j->alpha);
  }
  if (prod != o) sm__kctx_scratch_free(ctx, prod);
  return st;
}

/* _FusedConv2D with a MaxPool: the output is the pooled tensor. The direct path pools as it goes;
 * any other convolution is computed whole into a scratch and pooled by nn_pool.c, so the result
 * never depends on which path ran. */
static sm_status *conv_pooled(conv_job *j, const sm__nn_pool_fuse *pf, sm_kctx *ctx, const sm__nn_window *w,
                              int depthwise, const sm_tensor *x, const sm_tensor *f, sm__dnnl_cache *dnnl) {
  if (depthwise || w->nchw || j->dtype != SM_FLOAT)
    return sm_status_new(SM_INTERNAL, "a MaxPool fused into a depthwise, NCHW or non-float convolution");
  sm_status *st = sm__nn_out_size(j->OH, pf->kh, 1, pf->sh, pf->padding, 0, 0, &j->pOH, &j->ppt);
  if (!st) st = sm__nn_out_size(j->OW, pf->kw, 1, pf->sw, pf->padding, 0, 0, &j->pOW, &j->ppl);
  if (st) return sm_status_prefix(st, "fused MaxPool over the output [%lld,%lld,%lld,%lld]", (long long)j->N,
                                  (long long)j->OH, (long long)j->OW, (long long)j->Cout);
  int64_t od[4] = {j->N, j->pOH, j->pOW, j->Cout};
  sm_tensor *out;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, 4, od, &out))) return st;
  if (sm_tensor_num_elements(out) == 0) return NULL; /* else N, OH, OW, Cout > 0 */
  if (j->K > INT_MAX || j->Cout > INT_MAX || j->C > INT_MAX)
    return sm_status_new(SM_UNIMPLEMENTED, "convolution too large for BLAS (patch %lld, output depth %lld)",
                         (long long)j->K, (long long)j->Cout);
  int64_t M, MC; /* the unpooled output's rows and elements */
  if (__builtin_mul_overflow(j->N, j->OH, &M) || __builtin_mul_overflow(M, j->OW, &M) ||
      __builtin_mul_overflow(M, j->Cout, &MC) || MC > (int64_t)(SIZE_MAX / 2 / sizeof(float)))
    return sm_status_new(SM_INVALID_ARGUMENT, "convolution output [%lld,%lld,%lld,%lld] too large", (long long)j->N,
                         (long long)j->OH, (long long)j->OW, (long long)j->Cout);
  j->in = sm_tensor_data(x);
  j->filt = sm_tensor_data(f);
  j->pout = sm_tensor_data(out);
  sm_threadpool *pool = sm__kctx_pool(ctx);
  /* the direct loops pool as they go only where the unfused convolution runs them too */
  if (j->K > 0 && use_direct(j) && !(dnnl && use_dnnl(j, 0))) {
    j->pool = pf;
    conv_run(pool, j, 0);
  } else {
    float *tmp = sm__kctx_scratch(ctx, (size_t)MC * sizeof *tmp, &st);
    if (!tmp) return st;
    j->out = (char *)tmp;
    if (j->K == 0) { /* empty windows: zeros, then the fused epilogue */
      memset(tmp, 0, (size_t)MC * sizeof *tmp);
      sm__nn_bias_act_f32(tmp, tmp, M, j->Cout, j->bias, j->act, j->alpha);
    } else {
      int declined = 1; /* oneDNN where the unfused convolution would use it: the same bits */
      if (dnnl && use_dnnl(j, 0)) st = conv_dnnl(dnnl, j, 0, f, ctx, &declined);
      if (!st && declined) conv_run(pool, j, 0);
    }
    if (!st && !j->failed)
      st = sm__nn_maxpool_f32(pool, tmp, j->N, j->OH, j->OW, j->Cout, pf->kh, pf->kw, pf->sh, pf->sw,
                             pf->padding == SM_NN_SAME, j->pout, NULL);
    sm__kctx_scratch_free(ctx, tmp);
  }
  if (!st && j->failed) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a convolution patch buffer");
  return st;
}

/* fused: NULL for Conv2D / DepthwiseConv2dNative; a _FusedConv2D's bias is input 2. */
static sm_status *conv_common(const sm__nn_window *w, const sm__nn_fused *fused, sm__dnnl_cache *dnnl, sm_kctx *ctx,
                              int depthwise) {
  int nin = fused ? 3 + fused->has_add : 2;
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "expected %d inputs", nin);
  const sm_tensor *x = sm__kctx_input(ctx, 0), *f = sm__kctx_input(ctx, 1);
  char s1[128];
  int dt = sm_tensor_dtype(x);
  if ((dt != SM_FLOAT && dt != SM_DOUBLE) || sm_tensor_dtype(f) != dt)
    return sm_status_new(SM_UNIMPLEMENTED, "input %s and filter %s: only float and double are supported",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?",
                         sm_dtype_name(sm_tensor_dtype(f)) ? sm_dtype_name(sm_tensor_dtype(f)) : "?");
  if (sm_tensor_rank(x) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                         sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), s1, sizeof s1));
  if (sm_tensor_rank(f) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "filter must be 4-dimensional: %s",
                         sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), s1, sizeof s1));
  const int64_t *xd = sm_tensor_dims(x), *fd = sm_tensor_dims(f);
  conv_job j = {0};
  j.dtype = dt;
  j.N = xd[0];
  j.C = w->nchw ? xd[1] : xd[3];
  j.H = w->nchw ? xd[2] : xd[1];
  j.W = w->nchw ? xd[3] : xd[2];
  j.KH = fd[0];
  j.KW = fd[1];
  j.Cf = fd[2];
  j.sh = w->stride[0];
  j.sw = w->stride[1];
  j.dh = w->dilation[0];
  j.dw = w->dilation[1];
  if (depthwise) {
    if (j.Cf != j.C)
      return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                           (long long)j.C, (long long)j.Cf);
    if (__builtin_mul_overflow(j.C, fd[3], &j.Cout))
      return sm_status_new(SM_INVALID_ARGUMENT, "filter %s too large", sm_shape_str(4, fd, s1, sizeof s1));
    j.G = 1;
  } else {
    j.Cout = fd[3];
    if (j.Cf <= 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "filter depth must be positive: filter %s",
                           sm_shape_str(4, fd, s1, sizeof s1));
    if (j.C % j.Cf != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "input depth must be evenly divisible by filter depth: %lld vs %lld",
                           (long long)j.C, (long long)j.Cf);
    j.G = j.C / j.Cf;
    if (j.G > 0 && j.Cout % j.G != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "output depth must be evenly divisible by number of groups: %lld vs %lld",
                           (long long)j.Cout, (long long)j.G);
    j.CoutG = j.G > 0 ? j.Cout / j.G : 0;
  }
  sm_status *st = sm__nn_out_size(j.H, j.KH, j.dh, j.sh, w->padding, w->pad[0], w->pad[1], &j.OH, &j.pt);
  if (!st) st = sm__nn_out_size(j.W, j.KW, j.dw, j.sw, w->padding, w->pad[2], w->pad[3], &j.OW, &j.pl);
  if (st) return st;
  int64_t od[4] = {j.N, w->nchw ? j.Cout : j.OH, w->nchw ? j.OH : j.OW, w->nchw ? j.OW : j.Cout};
  int64_t nhwc_od[4] = {j.N, j.OH, j.OW, j.Cout};
  /* _FusedConv2D (float, NHWC: its prepare checked): the bias and the activation */
  const sm_tensor *fb = fused ? sm__kctx_input(ctx, 2) : NULL;
  j.act = fused ? fused->act : SM_NN_ACT_NONE;
  j.alpha = fused ? fused->alpha : 0.0f;
  if (fb) {
    if (dt != SM_FLOAT || sm_tensor_dtype(fb) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "fused bias: value %s and bias %s", sm_dtype_name(dt),
                           sm_dtype_name(sm_tensor_dtype(fb)) ? sm_dtype_name(sm_tensor_dtype(fb)) : "?");
    if (sm_tensor_rank(fb) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Biases must be 1D: %s",
                           sm_shape_str(sm_tensor_rank(fb), sm_tensor_dims(fb), s1, sizeof s1));
    if (sm_tensor_dims(fb)[0] != j.Cout) {
      char s2[128];
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                           sm_shape_str(1, sm_tensor_dims(fb), s1, sizeof s1), sm_shape_str(4, od, s2, sizeof s2));
    }
    j.bias = sm_tensor_data(fb);
  }
  j.K = j.KH * j.KW * j.Cf; /* fits: the filter exists */
  if (fused && fused->has_pool) return conv_pooled(&j, &fused->pool, ctx, w, depthwise, x, f, dnnl);
  if (fused && fused->has_add) return conv_add(&j, od, x, f, sm__kctx_input(ctx, 3), dnnl, ctx);
  sm_tensor *out;
  /* few output pixels, a large filter: streamed (conv_stream) */
  if (!depthwise && !w->nchw && use_stream(&j)) {
    if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, 4, od, &out)) || sm_tensor_num_elements(out) == 0) return st;
    j.in = sm_tensor_data(x);
    j.filt = sm_tensor_data(f);
    j.out = sm_tensor_data(out);
    return conv_stream(&j, NULL, ctx);
  }
  /* gemm and oneDNN write every element; the own depthwise loops accumulate (but for the AVX-512
   * rows at multiplier 1) and empty windows give zeros (zeroed here, or after oneDNN declines: not a
   * pass oneDNN does not need) */
  int try_dnnl = dnnl && !w->nchw && dt == SM_FLOAT && j.K > 0 && use_dnnl(&j, depthwise);
  int zero = !try_dnnl && ((depthwise && !depthwise_overwrites(&j)) || j.K == 0);
  if ((st = (zero ? sm__kctx_alloc_output : sm__kctx_alloc_output_uninit)(ctx, 0, dt, 4, od, &out))) return st;
  int64_t M = j.N * j.OH * j.OW; /* fits: the output was allocated */
  if (M == 0 || j.Cout == 0) return NULL;
  if (j.K == 0) { /* empty windows: zeros, then the fused epilogue */
    if (j.bias || j.act)
      sm__nn_bias_act_f32(sm_tensor_data(out), sm_tensor_data(out), M, j.Cout, j.bias, j.act, j.alpha);
    return NULL;
  }
  if (!depthwise && (j.K > INT_MAX || j.Cout > INT_MAX || j.C > INT_MAX))
    return sm_status_new(SM_UNIMPLEMENTED, "convolution too large for BLAS (patch %lld, output depth %lld)",
                         (long long)j.K, (long long)j.Cout);
  size_t es = dt == SM_DOUBLE ? 8 : 4;
  void *tin = NULL, *tout = NULL;
  j.in = sm_tensor_data(x);
  j.filt = sm_tensor_data(f);
  j.out = sm_tensor_data(out);
  if (try_dnnl) {
    int declined;
    if ((st = conv_dnnl(dnnl, &j, depthwise, f, ctx, &declined)) || !declined) return st;
    if (depthwise && !depthwise_overwrites(&j)) memset(j.out, 0, sm_tensor_nbytes(out));
  }
  if (w->nchw) {
    if (!(tin = sm__kctx_scratch(ctx, sm_tensor_nbytes(x), &st))) return st;
    if (!(tout = sm__kctx_scratch(ctx, sm_tensor_nbytes(out), &st))) return st;
    sm__nn_nchw_to_nhwc(j.in, tin, xd, es);
    memset(tout, 0, sm_tensor_nbytes(out));
    j.in = tin;
    j.out = tout;
  }
  conv_run(sm__kctx_pool(ctx), &j, depthwise ? fd[3] : 0);
  if (w->nchw) {
    if (!j.failed) sm__nn_nhwc_to_nchw(tout, sm_tensor_data(out), nhwc_od, es);
    sm__kctx_scratch_free(ctx, tin);
    sm__kctx_scratch_free(ctx, tout);
  }
  if (j.failed) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a convolution patch buffer");
  return NULL;
}

sm_status *sm__nn_conv2d(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  return conv_common(&s->w, NULL, s->dnnl, ctx, 0);
}
sm_status *sm__nn_depthwise(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  return conv_common(&s->w, NULL, s->dnnl, ctx, 1);
}
sm_status *sm__nn_fused_conv2d(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  return conv_common(&s->w, &s->f, s->dnnl, ctx, 0);
}
sm_status *sm__nn_fused_depthwise(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  return conv_common(&s->w, &s->f, s->dnnl, ctx, 1);
}

/* ---- nn_raw.h ------------------------------------------------------------------------------- */
void sm__nn_conv2d_out_size(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int same,
                           int64_t *oh, int64_t *ow) {
  int64_t lead;
  sm_status *st = sm__nn_out_size(h, kh, 1, sh, same ? SM_NN_SAME : SM_NN_VALID, 0, 0, oh, &lead);
  if (st) *oh = 0;
  sm_status_free(st);
  st = sm__nn_out_size(w, kw, 1, sw, same ? SM_NN_SAME : SM_NN_VALID, 0, 0, ow, &lead);
  if (st) *ow = 0;
  sm_status_free(st);
}

sm_status *sm__nn_conv2d_f32(sm_threadpool *pool, const float *x, int64_t n, int64_t h, int64_t w, int64_t c,
                            const float *filter, int64_t kh, int64_t kw, int64_t cout, int64_t sh, int64_t sw,
                            int same, const float *bias, int act, float *y) {
  if (n < 0 || h < 0 || w < 0 || c < 0 || kh < 0 || kw < 0 || cout < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "conv2d: negative dimension");
  int64_t oh, ow, pt, pl;
  int padding = same ? SM_NN_SAME : SM_NN_VALID;
  sm_status *st = sm__nn_out_size(h, kh, 1, sh, padding, 0, 0, &oh, &pt);
  if (!st) st = sm__nn_out_size(w, kw, 1, sw, padding, 0, 0, &ow, &pl);
  if (st) return st;
  const int64_t in[4] = {n, h, w, c}, win[8] = {kh, kw, sh, sw, 1, 1, pt, pl};
  return sm__nn_conv2d_nhwc(pool, SM_FLOAT, x, in, filter, cout, win, oh, ow, bias, act, y);
}

sm_status *sm__nn_conv2d_nhwc(sm_threadpool *pool, int dtype, const void *x, const int64_t in[4], const void *filter,
                              int64_t cout, const int64_t win[8], int64_t oh, int64_t ow, const float *bias, int act,
                              void *y) {
  conv_job j = {0};
  j.dtype = dtype;
  j.N = in[0], j.H = in[1], j.W = in[2], j.C = in[3], j.KH = win[0], j.KW = win[1], j.Cf = in[3], j.Cout = cout;
  j.G = 1, j.CoutG = cout;
  j.sh = win[2], j.sw = win[3], j.dh = win[4], j.dw = win[5], j.pt = win[6], j.pl = win[7];
  j.OH = oh, j.OW = ow;
  j.bias = bias;
  j.act = act;
  int64_t M, K, MC;
  if (__builtin_mul_overflow(j.N, oh, &M) || __builtin_mul_overflow(M, ow, &M) ||
      __builtin_mul_overflow(M, cout, &MC) || __builtin_mul_overflow(j.KH, j.KW, &K) ||
      __builtin_mul_overflow(K, j.C, &K) || K > INT_MAX || cout > INT_MAX || j.C > INT_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "conv2d too large (input [%lld,%lld,%lld,%lld], filter [%lld,%lld,%lld,%lld])",
                         (long long)j.N, (long long)j.H, (long long)j.W, (long long)j.C, (long long)j.KH,
                         (long long)j.KW, (long long)j.C, (long long)cout);
  j.K = K;
  if (MC == 0) return NULL;
  size_t es = dtype == SM_DOUBLE ? 8 : 4;
  if (K == 0) { /* empty windows: the product is zero */
    memset(y, 0, (size_t)MC * es);
    if (dtype == SM_FLOAT) sm__nn_bias_act_f32(y, y, M, cout, bias, act, 0.0f);
    return NULL;
  }
  j.in = (const char *)x;
  j.filt = (const char *)filter;
  j.out = (char *)y;
  conv_run(pool, &j, 0);
  if (j.failed) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a convolution patch buffer");
  return NULL;
}
