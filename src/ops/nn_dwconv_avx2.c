/* nn_dwconv_avx2.c - the float NHWC 3x3 depthwise convolution (multiplier 1, stride 1 or 2, no
 * dilation) on AVX2 + FMA CPUs without AVX-512: nn_dwconv.c's fast path (dw_fast) with 8 channels
 * to a vector, what nn_conv.c runs in place of oneDNN's jit_dw:avx2 where the shape suits it
 * (sm__nn_dw3x3_avx2_ok).
 *
 * The same arithmetic as nn_dwconv.c, lane for lane: per window row one sum per output pixel
 * (x0 * f0, then two FMAs), then (row 0 + row 1) + row 2 over the live rows, + (bias + 0), then
 * Relu / Relu6 as max(0, v) / min(6, v) (NaN stays), one store (other activations over the
 * finished rows, sm__nn_bias_act_f32); so the same bits as the AVX-512 loops. Only the shapes whose every pixel takes that path, with no masks: channels in whole
 * vectors of 8 (C % 8 == 0), at most one dead window row per output row (the top one or the bottom
 * one) and one dead column per edge pixel (what SAME / VALID give at stride 1 or 2); other shapes
 * stay with oneDNN. SM_NN_DW3X3=0 turns this off too (for A/B). */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DW2_ON 1
#endif

#ifdef DW2_ON
#define DW2_FN __attribute__((target("avx2,fma")))

DW2_FN static inline __attribute__((always_inline)) __m256 dw2_act(__m256 v, int act) {
  /* max(0, v) with v second: vmaxps returns its second operand when either is NaN, so NaN stays */
  if (act == SM_NN_ACT_RELU || act == SM_NN_ACT_RELU6) v = _mm256_max_ps(_mm256_setzero_ps(), v);
  if (act == SM_NN_ACT_RELU6) v = _mm256_min_ps(_mm256_set1_ps(6.0f), v);
  return v;
}

/* P (4, 2, 1) pixels from input column iw0, window rows [KH0, KH1) live, L: the first pixel's
 * column kw 0 is in the padding (iw0 = -1), R: the last pixel's column kw 2 is (nn_dwconv.c's
 * dw_fast). */
DW2_FN static inline __attribute__((always_inline)) void dw2_fast(const float *const row[3], const __m256 f[9],
                                                                __m256 bias, int act, int64_t C, int64_t iw0, int SW,
                                                                int P, int KH0, int KH1, int L, int R, float *o) {
  __m256 a[3][4];
#pragma GCC unroll 3
  for (int kh = KH0; kh < KH1; kh++) {
    __m256 x[9];
#pragma GCC unroll 9
    for (int i = L; i < (P - 1) * SW + 3 - R; i++) x[i] = _mm256_loadu_ps(row[kh] + (iw0 + i) * C);
#pragma GCC unroll 4
    for (int p = 0; p < P; p++) {
      int k0 = L && p == 0, k1 = R && p == P - 1 ? 2 : 3;
      a[kh][p] = _mm256_mul_ps(x[p * SW + k0], f[kh * 3 + k0]);
#pragma GCC unroll 2
      for (int kw = k0 + 1; kw < k1; kw++) a[kh][p] = _mm256_fmadd_ps(x[p * SW + kw], f[kh * 3 + kw], a[kh][p]);
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; p++) {
    __m256 s = a[KH0][p];
#pragma GCC unroll 2
    for (int kh = KH0 + 1; kh < KH1; kh++) s = _mm256_add_ps(s, a[kh][p]);
    s = _mm256_add_ps(s, bias);
    _mm256_storeu_ps(o + p * C, dw2_act(s, act));
  }
}

/* P pixels from input column iw0 of one output row, every channel vector in turn: the pixels' C
 * channels are contiguous, so the input is read front to back (a vector's 9 filter taps come from L1
 * each time; with the channel loop outside the pixels, each pass over a row read one vector of 8 from
 * every pixel's C: 1.6-1.8x slower on MobileNetV2's early layers at batch 16). */
DW2_FN static inline __attribute__((always_inline)) void dw2_block(const sm__nn_dw_args *d, const float *const row[3],
                                                                 float *o, int64_t iw0, int SW, int P, int KH0,
                                                                 int KH1, int L, int R, int act) {
  const int64_t C = d->C;
  for (int64_t c = 0; c < C; c += 8) {
    __m256 f[9];
#pragma GCC unroll 9
    for (int k = 0; k < 9; k++) f[k] = _mm256_loadu_ps(d->filt + k * C + c);
    /* the bias + 0 (a -0 bias is +0): every output is a sum + bias, never -0, as TF's */
    __m256 bias = _mm256_add_ps(d->bias ? _mm256_loadu_ps(d->bias + c) : _mm256_setzero_ps(), _mm256_setzero_ps());
    const float *const rc[3] = {row[0] + c, row[1] + c, row[2] + c};
    dw2_fast(rc, f, bias, act, C, iw0, SW, P, KH0, KH1, L, R, o + c);
  }
}

/* One output row: a left edge pixel when ow_lo is 1, the interior in blocks of 4, 2, 1, then a right
 * edge pixel whose window ends at W. */
DW2_FN static inline __attribute__((always_inline)) void dw2_row(const sm__nn_dw_args *d, const float *const row[3],
                                                               float *o, int64_t ow_lo, int64_t ow_hi, int SW,
                                                               int KH0, int KH1, int act) {
  const int64_t C = d->C, pl = d->pl;
  int64_t ow = 0;
  if (ow_lo) dw2_block(d, row, o, -1, SW, 1, KH0, KH1, 1, 0, act), ow = 1;
  for (; ow + 4 <= ow_hi; ow += 4) dw2_block(d, row, o + ow * C, ow * SW - pl, SW, 4, KH0, KH1, 0, 0, act);
  if (ow + 2 <= ow_hi) {
    dw2_block(d, row, o + ow * C, ow * SW - pl, SW, 2, KH0, KH1, 0, 0, act);
    ow += 2;
  }
  if (ow < ow_hi) {
    dw2_block(d, row, o + ow * C, ow * SW - pl, SW, 1, KH0, KH1, 0, 0, act);
    ow++;
  }
  if (ow < d->OW) dw2_block(d, row, o + ow * C, ow * SW - pl, SW, 1, KH0, KH1, 0, 1, act);
}

/* The stride and the live rows as constants: 0-3, 1-3 (top dead) or 0-2 (bottom dead). */
DW2_FN static inline __attribute__((always_inline)) void dw2_row_kh(const sm__nn_dw_args *d, const float *const row[3],
                                                                  float *o, int64_t ow_lo, int64_t ow_hi, int KH0,
                                                                  int KH1, int act) {
  if (d->sw == 1)
    dw2_row(d, row, o, ow_lo, ow_hi, 1, KH0, KH1, act);
  else
    dw2_row(d, row, o, ow_lo, ow_hi, 2, KH0, KH1, act);
}

DW2_FN static inline __attribute__((always_inline)) void dw2_rows_act(const sm__nn_dw_args *d, int64_t begin,
                                                                    int64_t end, int64_t ow_lo, int64_t ow_hi,
                                                                    int act) {
  const int64_t C = d->C, W = d->W, H = d->H, OW = d->OW;
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / d->OH, oh = r % d->OH, ih0 = oh * d->sh - d->pt;
    int KH0 = ih0 == -1 ? 1 : 0, KH1 = ih0 + 2 == H ? 2 : 3;
    const float *img = d->in + n * H * W * C;
    const float *row[3];
    for (int kh = 0; kh < 3; kh++) row[kh] = img + (ih0 + kh >= 0 && ih0 + kh < H ? ih0 + kh : 0) * W * C;
    float *o = d->out + r * OW * C;
    if (KH0 == 1)
      dw2_row_kh(d, row, o, ow_lo, ow_hi, 1, 3, act);
    else if (KH1 == 2)
      dw2_row_kh(d, row, o, ow_lo, ow_hi, 0, 2, act);
    else
      dw2_row_kh(d, row, o, ow_lo, ow_hi, 0, 3, act);
  }
}

/* The interior columns [ow_lo, ow_hi): ow * sw - pl >= 0 and ow * sw - pl + 2 <= W - 1. */
static void dw2_cols(const sm__nn_dw_args *d, int64_t *lo, int64_t *hi) {
  int64_t ow_lo = (d->pl + d->sw - 1) / d->sw, ow_hi = d->W - 3 + d->pl >= 0 ? (d->W - 3 + d->pl) / d->sw + 1 : 0;
  if (ow_lo > d->OW) ow_lo = d->OW;
  if (ow_hi > d->OW) ow_hi = d->OW;
  if (ow_hi < ow_lo) ow_hi = ow_lo;
  *lo = ow_lo;
  *hi = ow_hi;
}

DW2_FN void sm__nn_dw3x3_rows_avx2(const sm__nn_dw_args *d, int64_t begin, int64_t end) {
  int64_t ow_lo, ow_hi;
  dw2_cols(d, &ow_lo, &ow_hi);
  if (d->act == SM_NN_ACT_RELU6)
    dw2_rows_act(d, begin, end, ow_lo, ow_hi, SM_NN_ACT_RELU6);
  else if (d->act == SM_NN_ACT_RELU)
    dw2_rows_act(d, begin, end, ow_lo, ow_hi, SM_NN_ACT_RELU);
  else
    dw2_rows_act(d, begin, end, ow_lo, ow_hi, SM_NN_ACT_NONE);
  if (d->act != SM_NN_ACT_NONE && d->act != SM_NN_ACT_RELU && d->act != SM_NN_ACT_RELU6) {
    float *o = d->out + begin * d->OW * d->C; /* the other activations over the rows done, as nn_dwconv.c */
    sm__nn_bias_act_f32(o, o, (end - begin) * d->OW, d->C, NULL, d->act, d->alpha);
  }
}

static int dw2_cpu(void) {
  static int have = -1; /* a race only computes it twice */
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    const char *e = getenv("SM_NN_DW3X3");
    h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !__builtin_cpu_supports("avx512f") &&
        !(e && !strcmp(e, "0"));
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h;
}
#endif

/* Whether sm__nn_dw3x3_rows_avx2 computes d (the caller has checked a 3x3 window, multiplier 1,
 * stride 1 or 2 each way, no dilation): an AVX2 + FMA CPU without AVX-512, channels in whole
 * vectors of 8, and every output pixel on the fast path: at most
 * one window row and one window column of it in the padding, the top / left one only at a pad of
 * 1, the bottom / right one only where the window ends one past the input. */
int sm__nn_dw3x3_avx2_ok(const sm__nn_dw_args *d) {
#ifdef DW2_ON
  if (!dw2_cpu() || d->C <= 0 || d->C % 8 || d->H < 2 || d->W < 2 || d->OH <= 0 || d->OW <= 0) return 0;
  int64_t ow_lo, ow_hi;
  dw2_cols(d, &ow_lo, &ow_hi);
  /* columns (nn_dwconv.c's dw_fast_ok): the left edge pixel reads columns 0 and 1 */
  if (ow_lo > 1 || (ow_lo == 1 && d->pl != 1) || d->OW - ow_hi > 1) return 0;
  if (d->OW > ow_hi) {
    int64_t iw0 = ow_hi * d->sw - d->pl;
    if (iw0 < 0 || iw0 + 2 != d->W || d->OW == ow_lo) return 0;
  }
  for (int64_t oh = 0; oh < d->OH; oh++) { /* rows: all live, or the top or the bottom one dead */
    int64_t ih0 = oh * d->sh - d->pt;
    if (!((ih0 >= 0 && ih0 + 3 <= d->H) || ih0 == -1 || (ih0 >= 0 && ih0 + 2 == d->H))) return 0;
    if (ih0 == -1 && ih0 + 2 == d->H) return 0; /* both (H 1): not here */
  }
  return 1;
#else
  (void)d;
  return 0;
#endif
}

#ifndef DW2_ON
void sm__nn_dw3x3_rows_avx2(const sm__nn_dw_args *d, int64_t begin, int64_t end) { (void)d, (void)begin, (void)end; }
#endif
