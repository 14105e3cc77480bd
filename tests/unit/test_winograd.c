/* test_winograd.c - the Winograd F(2x2 / 3x3 / 4x4, 3x3) convolutions of nn_winograd_avx2.c (sm__wino_*),
 * with the channel sums in one run or in blocks (cb), against a float64 direct sum: odd sizes, SAME / VALID / explicit (asymmetric) pads, channels that are not
 * multiples of 8 or 16, several images, bias, residual addend (apart and in place), Relu / Relu6,
 * output-channel slices (kb ranges), tile blocks that end part way; and NaN / Inf in the input,
 * which must reach only the outputs a direct convolution gives them. Skipped (77) on a CPU without
 * AVX2 + FMA or a build without the loops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"
#include "test.h"

typedef struct wcase {
  int N, H, W, C, K, pt, pb, pl, pr, bias, addend, act, T, kslices;
} wcase;

/* ReLU-family on a double, NaN kept */
static double act_d(double v, int act) {
  if (act == SM_NN_ACT_NONE || isnan(v)) return v;
  if (v < 0) v = 0;
  if (act == SM_NN_ACT_RELU6 && v > 6) v = 6;
  return v;
}

static int run(const wcase *w, int m, int specials, int64_t cb) {
  int OH = w->H + w->pt + w->pb - 2, OW = w->W + w->pl + w->pr - 2;
  size_t nx = (size_t)w->N * w->H * w->W * w->C, nf = (size_t)9 * w->C * w->K, ny = (size_t)w->N * OH * OW * w->K;
  float *x = malloc(nx * 4), *f = malloc(nf * 4), *b = malloc((size_t)w->K * 4), *y = malloc(ny * 4),
        *add = malloc(ny * 4);
  double *want = malloc(ny * sizeof(double));
  float *U = malloc(sm__wino_packed_floats(m, w->C, w->K) * 4);
  for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  for (size_t i = 0; i < nf; i++) f[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
  for (int i = 0; i < w->K; i++) b[i] = (float)(i % 5) / 8.0f - 0.25f;
  for (size_t i = 0; i < ny; i++) add[i] = (float)((i * 29) % 89) / 89.0f - 0.5f;
  int nan_at = -1, inf_at = -1; /* input pixels (n 0) */
  if (specials == 2) /* one huge input: past the float range in the transforms, the tile redone direct */
    x[(size_t)((w->H / 2) * w->W + w->W / 2) * w->C] = 1e38f;
  else if (specials) {
    nan_at = (w->H / 2) * w->W + w->W / 2, inf_at = (w->H - 1) * w->W + 1;
    x[(size_t)nan_at * w->C] = NAN;
    x[(size_t)inf_at * w->C + w->C - 1] = INFINITY;
  }
  double range = 0;
  for (int n = 0; n < w->N; n++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++)
        for (int k = 0; k < w->K; k++) {
          double s = 0;
          for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
              int iy = oy - w->pt + ky, ix = ox - w->pl + kx;
              if (iy < 0 || iy >= w->H || ix < 0 || ix >= w->W) continue;
              for (int c = 0; c < w->C; c++)
                s += (double)x[(((size_t)n * w->H + iy) * w->W + ix) * w->C + c] *
                     (double)f[((size_t)(ky * 3 + kx) * w->C + c) * w->K + k];
            }
          size_t o = (((size_t)n * OH + oy) * OW + ox) * w->K + k;
          if (w->bias) s += b[k];
          if (w->addend) s += add[o];
          want[o] = act_d(s, w->act);
          if (isfinite(want[o]) && fabs(want[o]) > range) range = fabs(want[o]);
        }
  sm__wino_pack(m, f, w->C, w->K, U);
  float *addp = w->addend == 2 ? y : w->addend ? add : NULL;
  if (w->addend == 2) memcpy(y, add, ny * 4);
  sm__wino_args a = {m, w->N, w->H, w->W, w->C, OH, OW, w->K, w->pt, w->pl, x, U, w->bias ? b : NULL, addp, f, y,
                     w->act, 0.0f, cb};
  int64_t T = w->T ? w->T : sm__wino_block(w->C, w->K), tiles = sm__wino_tiles(&a), KB = (w->K + 15) / 16;
  float *scratch = malloc(sm__wino_scratch_floats(w->C, w->K, T) * 4);
  /* pieces as nn_dnnl.c cuts them: blocks of T tiles (the last one short), kslices output slices */
  for (int64_t t0 = 0; t0 < tiles; t0 += T)
    for (int s = 0; s < w->kslices; s++)
      sm__wino_run(&a, t0, t0 + T < tiles ? t0 + T : tiles, s * KB / w->kslices, (s + 1) * KB / w->kslices, T, scratch);
  int bad = 0;
  double worst = 0;
  for (size_t o = 0; o < ny; o++) {
    int ok;
    if (specials == 2 && !isfinite(y[o])) ok = 0;
    else if (isnan(want[o])) ok = isnan(y[o]);
    else if (isinf(want[o])) ok = y[o] == (float)want[o];
    else {
      double d = fabs(y[o] - want[o]);
      worst = d > worst ? d : worst;
      /* F(2x2): the tests' 1e-5 (1 + |want|) of the convolutions; F(3x3), F(4x4): 1e-4 of the range */
      ok = m == 2 ? d <= 1e-5 * (1 + fabs(want[o])) : d <= 1e-4 * range + 1e-6;
    }
    if (!ok && !bad++)
      fprintf(stderr, "wino N%d %dx%d C%d K%d pads %d%d%d%d: [%zu] is %g, want %g (range %g)\n", w->N, w->H, w->W, w->C,
              w->K, w->pt, w->pb, w->pl, w->pr, o, y[o], want[o], range);
  }
  if (!specials && worst > 2e-5 * range)
    fprintf(stderr, "wino F(%d) cb %d N%d %dx%d C%d K%d: error %.2g of the range\n", m, (int)cb, w->N, w->H, w->W, w->C, w->K,
            worst / range);
  /* F(2x2) with the channels summed in blocks (nn_dnnl.c's default): within 2e-6 of the range here */
  if (!specials && m == 2 && cb && worst > 2e-6 * range) {
    fprintf(stderr, "wino F(2) cb %d N%d %dx%d C%d K%d: error %.2g of the range, past 2e-6\n", (int)cb, w->N, w->H, w->W,
            w->C, w->K, worst / range);
    bad++;
  }
  free(x), free(f), free(b), free(y), free(add), free(want), free(U), free(scratch);
  return bad;
}

int main(void) {
  if (!sm__wino_cpu_ok()) {
    printf("winograd: no AVX2 + FMA here (or a build without the loops), skipped\n");
    return 77;
  }
  static const wcase cases[] = {
      /* N, H, W, C, K, pt, pb, pl, pr, bias, addend, act, T, kslices */
      {1, 8, 8, 16, 16, 1, 1, 1, 1, 1, 0, SM_NN_ACT_RELU, 0, 1},       /* SAME, whole tiles */
      {1, 7, 9, 5, 3, 1, 1, 1, 1, 1, 0, SM_NN_ACT_NONE, 0, 1},         /* odd sizes, C 5, K 3 */
      {3, 11, 6, 13, 21, 0, 0, 0, 0, 0, 0, SM_NN_ACT_NONE, 6, 2},      /* VALID, batch 3, K slices */
      {2, 10, 5, 24, 40, 2, 0, 0, 1, 1, 1, SM_NN_ACT_RELU6, 12, 3},   /* explicit asymmetric pads, addend */
      {2, 9, 9, 33, 17, 1, 1, 1, 1, 1, 2, SM_NN_ACT_RELU, 6, 2},       /* addend in place (the output) */
      {4, 4, 4, 64, 64, 1, 1, 1, 1, 1, 0, SM_NN_ACT_RELU, 0, 4},       /* one tile an image */
      {1, 2, 3, 8, 8, 1, 1, 1, 1, 0, 0, SM_NN_ACT_NONE, 0, 1},         /* output smaller than a tile */
      {2, 16, 16, 128, 32, 1, 1, 1, 1, 1, 0, SM_NN_ACT_RELU, 0, 1},    /* many channels */
      {8, 2, 2, 128, 32, 1, 1, 1, 1, 0, 0, SM_NN_ACT_NONE, 0, 2},      /* DenseNet121 b16's growth 3x3s at 2x2 */
      {1, 13, 13, 256, 24, 1, 1, 1, 1, 1, 1, SM_NN_ACT_NONE, 18, 1},   /* 256 channels: the error */
  };
  int bad = 0;
  static const int64_t cbs[] = {0, 16, 32};
  for (int m = 2; m <= 4; m++)
    for (size_t ci = 0; ci < sizeof cbs / sizeof *cbs; ci++)
      for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int b = run(&cases[i], m, 0, cbs[ci]);
        if (b) fprintf(stderr, "F(%d) cb %d case %zu: %d outputs off\n", m, (int)cbs[ci], i, b);
        bad += b != 0;
        if (cases[i].H >= 4 && cases[i].W >= 4) { /* NaN / Inf: only where a direct convolution has them */
          b = run(&cases[i], m, 1, cbs[ci]);
          if (b) fprintf(stderr, "F(%d) cb %d case %zu with NaN / Inf: %d outputs off\n", m, (int)cbs[ci], i, b);
          bad += b != 0;
          /* a huge input (F(3x3) / F(4x4): their larger transforms overflow; outputs within 1e-4 of the range) */
          b = m > 2 ? run(&cases[i], m, 2, cbs[ci]) : 0;
          if (b) fprintf(stderr, "F(%d) cb %d case %zu with 1e38: %d outputs off\n", m, (int)cbs[ci], i, b);
          bad += b != 0;
        }
      }
  CHECK_EQ_INT(bad, 0);
  printf("winograd: %zu cases x F(2x2), F(3x3), F(4x4) x 3 channel blocks (and NaN / Inf), %d failed\n",
         sizeof cases / sizeof *cases, bad);
  TEST_MAIN_END();
}
