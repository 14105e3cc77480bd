/* nn_dwconv.c - the float NHWC 3x3 depthwise convolution (multiplier 1, stride 1 or 2, no dilation,
 * any padding) on AVX-512, with the bias and Relu / Relu6 applied in registers before each store
 * (nn_internal.h, sm__nn_dw3x3_*): what nn_conv.c runs for DepthwiseConv2dNative and
 * _FusedDepthwiseConv2dNative of that shape where the CPU has AVX-512, in place of oneDNN's call.
 *
 * Why: MobileNetV2 at batch 1 has 17 such layers, most of them small (4x4 or 2x2 pixels over
 * 192-960 channels); oneDNN's calls took 79 us of a call on one thread (bench/RESULTS.md, session
 * 15, h2) for ~1.7M multiply-adds. Here one output row at a time, 16 channels to a vector: the nine
 * filter vectors and the bias in registers, the row's pixels in blocks of 4 (each input vector of a
 * window row loaded once for the up to 3 pixels that use it), one sum per window row and pixel
 * (chains of 3 FMAs, not 9: the scheduler does not fill with FMAs waiting on each other), then
 * (row 0 + row 1) + row 2, the bias, the activation, one store. Rows and columns in the padding are
 * known per row and pixel: the usual ones (SAME / VALID at stride 1 or 2, a folded (0, 1) pad: one
 * window row, or one column of the first or last pixel) take code without their taps
 * (dw_fast); any other, and channel tails (C % 16), masked loads and FMAs (dw_block). Within an ulp
 * or so of oneDNN's sums, which add in their own order. Activations other than Relu / Relu6 run
 * over the finished rows (sm__nn_bias_act_f32). */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DW_AVX512 1
#endif

#ifdef DW_AVX512
#define DW_FN __attribute__((target("avx512f")))

/* One channel vector's row pass: the nine filter vectors f[kh * 3 + kw], the bias, and per window
 * row kh the mask of the lanes it adds (the channel mask, or 0 for a row in the padding) and the
 * input row it reads (a live row stands in for a dead one: its loads are masked off). */
typedef struct dw_vecs {
  __m512 f[9], bias;
  __mmask16 mh[3];
  const float *row[3];
} dw_vecs;

DW_FN static inline __attribute__((always_inline)) __m512 dw_act(__m512 v, int act) {
  /* max(0, v) with v second: vmaxps returns its second operand when either is NaN, so NaN stays */
  if (act == SM_NN_ACT_RELU || act == SM_NN_ACT_RELU6) v = _mm512_max_ps(_mm512_setzero_ps(), v);
  if (act == SM_NN_ACT_RELU6) v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
  return v;
}

DW_FN static inline __attribute__((always_inline)) void dw_store(const dw_vecs *v, __m512 a, float *o, __mmask16 m,
                                                               int act) {
  a = _mm512_add_ps(a, v->bias); /* +0 without a bias: a sum of -0s is +0, as TF's from +0 */
  _mm512_mask_storeu_ps(o, m, dw_act(a, act));
}

/* P (<= 4) neighbouring output pixels, the first at input column iw0, stride SW (1 or 2, a
 * constant): per window row the (P - 1) * SW + 3 input vectors it needs are loaded once and each
 * feeds up to 3 pixels. Masked FMAs: a row in the padding adds nothing (not even 0 * filter). EDGE
 * (a constant): some of the columns may be in the padding (iw < 0 or >= W): those loads are masked
 * off (from a column inside) and so are the FMAs that would use them. */
DW_FN static inline __attribute__((always_inline)) void dw_block(const dw_vecs *v, int64_t C, int64_t W, int64_t iw0,
                                                               int SW, int P, int EDGE, float *o, __mmask16 m, int act) {
  enum { NX = 9 };
  /* one sum per window row and pixel: chains of 3 FMAs (not 9) keep the FMA units fed, the
   * scheduler no longer filling with FMAs that wait on the one before */
  __m512 a[3][4];
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; kh++) {
    const float *r = v->row[kh];
    __mmask16 k = v->mh[kh], kx[NX];
    __m512 x[NX];
#pragma GCC unroll 9
    for (int i = 0; i < (P - 1) * SW + 3; i++) {
      int64_t col = iw0 + i;
      if (EDGE) {
        int in = col >= 0 && col < W;
        kx[i] = in ? k : 0;
        col = in ? col : 0;
      } else {
        kx[i] = k;
      }
      x[i] = _mm512_maskz_loadu_ps(kx[i], r + col * C);
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) {
      a[kh][p] = _mm512_maskz_mul_ps(kx[p * SW], x[p * SW], v->f[kh * 3]);
#pragma GCC unroll 2
      for (int kw = 1; kw < 3; kw++)
        a[kh][p] = _mm512_mask3_fmadd_ps(x[p * SW + kw], v->f[kh * 3 + kw], a[kh][p], kx[p * SW + kw]);
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++)
    dw_store(v, _mm512_add_ps(_mm512_add_ps(a[0][p], a[1][p]), a[2][p]), o + p * C, m, act);
}

/* One output row for one channel vector, the activation (NONE, RELU, RELU6) and stride known: the
 * pixels whose windows meet the left or right padding one at a time (EDGE), the interior [ow_lo,
 * ow_hi) in blocks of 8, 4, 2, 1. */
DW_FN static inline __attribute__((always_inline)) void dw_row_vec(const sm__nn_dw_args *d, const dw_vecs *v, float *o,
                                                                 __mmask16 m, int64_t ow_lo, int64_t ow_hi, int SW,
                                                                 int act) {
  const int64_t C = d->C, W = d->W, pl = d->pl;
  int64_t ow = 0;
  for (; ow < ow_lo; ow++) dw_block(v, C, W, ow * SW - pl, SW, 1, 1, o + ow * C, m, act);
  for (; ow + 4 <= ow_hi; ow += 4) dw_block(v, C, W, ow * SW - pl, SW, 4, 0, o + ow * C, m, act);
  if (ow + 2 <= ow_hi) {
    dw_block(v, C, W, ow * SW - pl, SW, 2, 0, o + ow * C, m, act);
    ow += 2;
  }
  if (ow < ow_hi) {
    dw_block(v, C, W, ow * SW - pl, SW, 1, 0, o + ow * C, m, act);
    ow++;
  }
  for (; ow < d->OW; ow++) dw_block(v, C, W, ow * SW - pl, SW, 1, 1, o + ow * C, m, act);
}

DW_FN static inline __attribute__((always_inline)) void dw_row_act(const sm__nn_dw_args *d, const dw_vecs *v,
                                                                 float *o, __mmask16 m, int64_t ow_lo, int64_t ow_hi,
                                                                 int act) {
  if (d->sw == 1)
    dw_row_vec(d, v, o, m, ow_lo, ow_hi, 1, act);
  else
    dw_row_vec(d, v, o, m, ow_lo, ow_hi, 2, act);
}

/* ---- the fast path: whole channel vectors, what is dead known at compile time ----------------
 * P (4, 2, 1) pixels from input column iw0, window rows [KH0, KH1) live, L: the first pixel's
 * column kw 0 is in the padding (iw0 = -1), R: the last pixel's column kw 2 is (its window ends at
 * W). No masks: a dead tap's FMA is not there. One sum per window row and pixel (chains of 3
 * FMAs), then (row KH0 + row KH0+1) + row KH0+2, then the bias, then the activation. */
DW_FN static inline __attribute__((always_inline)) void dw_fast(const float *const row[3], const __m512 f[9], __m512 bias,
                                                              int act, int64_t C, int64_t iw0, int SW, int P,
                                                              int KH0, int KH1, int L, int R, float *o) {
  __m512 a[3][4];
#pragma GCC unroll 3
  for (int kh = KH0; kh < KH1; kh++) {
    __m512 x[9];
#pragma GCC unroll 9
    for (int i = L; i < (P - 1) * SW + 3 - R; i++) x[i] = _mm512_loadu_ps(row[kh] + (iw0 + i) * C);
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) {
      int k0 = L && p == 0, k1 = R && p == P - 1 ? 2 : 3;
      a[kh][p] = _mm512_mul_ps(x[p * SW + k0], f[kh * 3 + k0]);
#pragma GCC unroll 2
      for (int kw = k0 + 1; kw < k1; kw++) a[kh][p] = _mm512_fmadd_ps(x[p * SW + kw], f[kh * 3 + kw], a[kh][p]);
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) {
    __m512 s = a[KH0][p];
#pragma GCC unroll 2
    for (int kh = KH0 + 1; kh < KH1; kh++) s = _mm512_add_ps(s, a[kh][p]);
    s = _mm512_add_ps(s, bias); /* +0 without a bias (dw_store) */
    _mm512_storeu_ps(o + p * C, dw_act(s, act));
  }
}

/* One output row, one whole channel vector: a left edge pixel (L) when pl is 1, the interior in
 * blocks of 4, 2, 1, then a right edge pixel (R) when the last window ends at W (dw_fast_ok). */
DW_FN static inline __attribute__((always_inline)) void dw_fast_row(const sm__nn_dw_args *d, const float *const row[3],
                                                                  const __m512 f[9], __m512 bias, float *o,
                                                                  int64_t ow_lo, int64_t ow_hi, int SW, int KH0,
                                                                  int KH1) {
  const int64_t C = d->C, pl = d->pl;
  const int act = d->act;
  int64_t ow = 0;
  if (ow_lo) dw_fast(row, f, bias, act, C, -1, SW, 1, KH0, KH1, 1, 0, o), ow = 1;
  for (; ow + 4 <= ow_hi; ow += 4) dw_fast(row, f, bias, act, C, ow * SW - pl, SW, 4, KH0, KH1, 0, 0, o + ow * C);
  if (ow + 2 <= ow_hi) {
    dw_fast(row, f, bias, act, C, ow * SW - pl, SW, 2, KH0, KH1, 0, 0, o + ow * C);
    ow += 2;
  }
  if (ow < ow_hi) {
    dw_fast(row, f, bias, act, C, ow * SW - pl, SW, 1, KH0, KH1, 0, 0, o + ow * C);
    ow++;
  }
  if (ow < d->OW) dw_fast(row, f, bias, act, C, ow * SW - pl, SW, 1, KH0, KH1, 0, 1, o + ow * C);
}

DW_FN static inline __attribute__((always_inline)) void dw_fast_sw(const sm__nn_dw_args *d, const float *const row[3],
                                                                 const __m512 f[9], __m512 bias, float *o,
                                                                 int64_t ow_lo, int64_t ow_hi, int KH0, int KH1) {
  if (d->sw == 1)
    dw_fast_row(d, row, f, bias, o, ow_lo, ow_hi, 1, KH0, KH1);
  else
    dw_fast_row(d, row, f, bias, o, ow_lo, ow_hi, 2, KH0, KH1);
}

/* Whether the columns suit dw_fast_row: at most one pixel on each side meets the padding, the
 * left one at iw0 = -1 only, the right one with its window ending at W only (what SAME and VALID
 * give for a 3x3 window at stride 1 or 2 over 2+ columns, and a folded (0, 1) or (1, 1) pad). */
static int dw_fast_ok(const sm__nn_dw_args *d, int64_t ow_lo, int64_t ow_hi) {
  if (d->act != SM_NN_ACT_NONE && d->act != SM_NN_ACT_RELU && d->act != SM_NN_ACT_RELU6) return 0;
  /* the left edge pixel (pl 1) reads columns 0 and 1 */
  if (ow_lo > 1 || (ow_lo == 1 && (d->pl != 1 || d->W < 2)) || d->OW - ow_hi > 1) return 0;
  if (d->OW > ow_hi) {
    int64_t iw0 = ow_hi * d->sw - d->pl;
    if (iw0 < 0 || iw0 + 2 != d->W || d->OW == ow_lo) return 0;
  }
  return 1;
}

/* Output row r (n * OH + oh), channels [c, c + 16) under mask m. */
DW_FN static inline __attribute__((always_inline)) void dw_rowvec(const sm__nn_dw_args *d, int64_t r, int64_t c,
                                                                int64_t ow_lo, int64_t ow_hi, int fast, int act) {
  const int64_t C = d->C, W = d->W, H = d->H, OW = d->OW;
  __mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
  dw_vecs v;
  for (int k = 0; k < 9; k++) v.f[k] = _mm512_maskz_loadu_ps(m, d->filt + k * C + c);
  /* the bias + 0 (a -0 bias is +0): every output is a sum + bias, never -0, as TF's (sums from +0) */
  v.bias = _mm512_add_ps(d->bias ? _mm512_maskz_loadu_ps(m, d->bias + c) : _mm512_setzero_ps(), _mm512_setzero_ps());
  int64_t n = r / d->OH, oh = r % d->OH, ih0 = oh * d->sh - d->pt;
  const float *img = d->in + n * H * W * C + c;
  float *o = d->out + r * OW * C + c;
  if (fast && m == 0xffff) { /* rows all live, or the top or bottom one dead */
    const float *row[3];
    for (int kh = 0; kh < 3; kh++) row[kh] = img + (ih0 + kh >= 0 && ih0 + kh < H ? ih0 + kh : 0) * W * C;
    if (ih0 >= 0 && ih0 + 3 <= H) {
      dw_fast_sw(d, row, v.f, v.bias, o, ow_lo, ow_hi, 0, 3);
      return;
    }
    if (ih0 == -1 && H >= 2) {
      dw_fast_sw(d, row, v.f, v.bias, o, ow_lo, ow_hi, 1, 3);
      return;
    }
    if (ih0 >= 0 && ih0 + 2 == H) {
      dw_fast_sw(d, row, v.f, v.bias, o, ow_lo, ow_hi, 0, 2);
      return;
    }
  }
  int any = 0;
  for (int kh = 0; kh < 3; kh++) {
    int live = ih0 + kh >= 0 && ih0 + kh < H;
    any |= live;
    v.mh[kh] = live ? m : 0;
    v.row[kh] = img + (live ? ih0 + kh : 0) * W * C;
  }
  if (!any) { /* no live row: the bias and activation alone */
    for (int64_t x = 0; x < OW; x++) _mm512_mask_storeu_ps(o + x * C, m, dw_act(v.bias, act));
    return;
  }
  if (act == SM_NN_ACT_RELU6)
    dw_row_act(d, &v, o, m, ow_lo, ow_hi, SM_NN_ACT_RELU6);
  else if (act == SM_NN_ACT_RELU)
    dw_row_act(d, &v, o, m, ow_lo, ow_hi, SM_NN_ACT_RELU);
  else
    dw_row_act(d, &v, o, m, ow_lo, ow_hi, SM_NN_ACT_NONE);
}

DW_FN void sm__nn_dw3x3_rows(const sm__nn_dw_args *d, int64_t begin, int64_t end) {
  const int64_t C = d->C, W = d->W, OW = d->OW, sw = d->sw;
  /* interior columns: ow * sw - pl >= 0 and ow * sw - pl + 2 <= W - 1 */
  int64_t ow_lo = (d->pl + sw - 1) / sw, ow_hi = W - 3 + d->pl >= 0 ? (W - 3 + d->pl) / sw + 1 : 0;
  if (ow_lo > OW) ow_lo = OW;
  if (ow_hi > OW) ow_hi = OW;
  if (ow_hi < ow_lo) ow_hi = ow_lo;
  int act = d->act == SM_NN_ACT_RELU || d->act == SM_NN_ACT_RELU6 ? d->act : SM_NN_ACT_NONE;
  const int fast = dw_fast_ok(d, ow_lo, ow_hi);
  /* rows outer: a row's input rows and its output row are read and written in order (with two
   * threads, channel vectors outer lost: 84.5 against 64.2 us a MobileNetV2 b1 call in all) */
  for (int64_t r = begin; r < end; r++)
    for (int64_t c = 0; c < C; c += 16) dw_rowvec(d, r, c, ow_lo, ow_hi, fast, act);
  if (d->act != act) { /* the other activations over the rows done */
    float *o = d->out + begin * OW * C;
    sm__nn_bias_act_f32(o, o, (end - begin) * OW, C, NULL, d->act, d->alpha);
  }
}

static int dw_cpu(void) {
  static int have = -1; /* a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    const char *e = getenv("SM_NN_DW3X3");
    h = __builtin_cpu_supports("avx512f") && !(e && !strcmp(e, "0"));
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
}
#endif

/* Whether sm__nn_dw3x3_rows computes this depthwise: a 3x3 window, multiplier 1, stride 1 or 2 each
 * way, no dilation, on an AVX-512 CPU, unless SM_NN_DW3X3=0 (read once; for A/B against oneDNN). */
int sm__nn_dw3x3_ok(int64_t KH, int64_t KW, int64_t mult, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
#ifdef DW_AVX512
  return KH == 3 && KW == 3 && mult == 1 && (sh == 1 || sh == 2) && (sw == 1 || sw == 2) && dh == 1 && dw == 1 &&
         dw_cpu();
#else
  (void)KH, (void)KW, (void)mult, (void)sh, (void)sw, (void)dh, (void)dw;
  return 0;
#endif
}

#ifndef DW_AVX512
void sm__nn_dw3x3_rows(const sm__nn_dw_args *d, int64_t begin, int64_t end) { (void)d, (void)begin, (void)end; }
#endif
