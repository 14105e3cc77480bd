/* bench_conv3x3.c - issue #15 on an AVX2 CPU (session 18, a1): the candidates for the 3x3
 * convolutions of VGG16 (32x32 input) and ResNet50 (64x64 input) at batch 1 and 16, one thread
 * (OMP_NUM_THREADS=1, CPU time of this thread, sides interleaved, median of REPS calls): oneDNN 2.6
 * in NHWC (what nn_dnnl.c gives it), in blocked nChw8c and nChw16c (their reorders in and out
 * included in the time; 1e9 where oneDNN has only its reference loops), and im2col + dnnl_sgemm (the im2col included). Bias + ReLU fused as
 * post-op in the oneDNN rows, no epilogue in the im2col row (a lower bound for it).
 * Session 18 b1: with -DWINO (and -Isrc -Iinclude -mavx2 -mfma) a Winograd F(4x4, 3x3) column too
 * (src/ops/nn_winograd_avx2.c, included here; bias + ReLU in its epilogue; its filter transform done
 * once, not timed), and the max error of NHWC and Winograd vs a float64 direct sum relative to the
 * output range (max |y64|). SM_WINO_T=<tiles> sets its block (multiple of 6), SM_WINO_M=4 F(4x4, 3x3)
 * instead of F(2x2, 3x3).
 * Session 19 c7: SM_WINO_CFGS="2:0,2:32,3:32,4:32" times several Winograd variants (F(m x m):
 * channel block, 0 = one sum) interleaved in the one process, a column pair (ms, err) each, and with
 * SM_WINO_ONLY=1 only oneDNN NHWC beside them; SM_BENCH_DATA=relu_bn draws network-like data
 * instead of the patterned one: ReLU outputs (max(0, N(0.2, 1)) times a log-normal scale per input
 * channel) and BN-folded He filters (N(0, 2 / 9C) times a log-normal scale, sigma 1.5, per output
 * channel).
 * Not a test and not built by CMake; needs libdnnl-dev. From the repo root:
 *
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L bench/bench_conv3x3.c -ldnnl -lm -o build/bench_conv3x3 && \
 *     OMP_NUM_THREADS=1 build/bench_conv3x3 [REPS]
 *   cc -std=c11 -O2 -DWINO -Isrc -Iinclude -Ibuild/gen -mavx2 -mfma -D_POSIX_C_SOURCE=200809L bench/bench_conv3x3.c -ldnnl -lm \
 *     -o build/bench_conv3x3w && OMP_NUM_THREADS=1 build/bench_conv3x3w [REPS]
 */
#include <dnnl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WINO
#include "ops/nn_winograd_avx2.c"
/* the library's epilogue (nn_norm.c), bias + ReLU only here */
void sm__nn_bias_act_f32(const float *in, float *out, int64_t rows, int64_t C, const float *bias, int act, float alpha) {
  (void)alpha;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < C; c++) {
      float v = in[r * C + c] + (bias ? bias[c] : 0.0f);
      out[r * C + c] = act == SM_NN_ACT_RELU && v < 0 ? 0.0f : v;
    }
}
#endif

typedef struct shape {
  const char *what;
  int n, h, w, c, k, cout, s;
} shape;

static const shape shapes[] = {
    {"VGG 3x3 3->64 @32", 1, 32, 32, 3, 3, 64, 1},     {"VGG 3x3 3->64 @32", 16, 32, 32, 3, 3, 64, 1},
    {"VGG 3x3 64 @32", 1, 32, 32, 64, 3, 64, 1},       {"VGG 3x3 64 @32", 16, 32, 32, 64, 3, 64, 1},
    {"VGG 3x3 64->128 @16", 1, 16, 16, 64, 3, 128, 1}, {"VGG 3x3 64->128 @16", 16, 16, 16, 64, 3, 128, 1},
    {"VGG 3x3 128 @16", 1, 16, 16, 128, 3, 128, 1},    {"VGG 3x3 128 @16", 16, 16, 16, 128, 3, 128, 1},
    {"VGG 3x3 128->256 @8", 1, 8, 8, 128, 3, 256, 1},  {"VGG 3x3 128->256 @8", 16, 8, 8, 128, 3, 256, 1},
    {"VGG 3x3 256 @8", 1, 8, 8, 256, 3, 256, 1},       {"VGG 3x3 256 @8", 16, 8, 8, 256, 3, 256, 1},
    {"VGG 3x3 256->512 @4", 1, 4, 4, 256, 3, 512, 1},  {"VGG 3x3 256->512 @4", 16, 4, 4, 256, 3, 512, 1},
    {"VGG 3x3 512 @4", 1, 4, 4, 512, 3, 512, 1},       {"VGG 3x3 512 @4", 16, 4, 4, 512, 3, 512, 1},
    {"VGG 3x3 512 @2", 1, 2, 2, 512, 3, 512, 1},       {"VGG 3x3 512 @2", 16, 2, 2, 512, 3, 512, 1},
    {"R50 3x3 64 @16", 1, 16, 16, 64, 3, 64, 1},       {"R50 3x3 64 @16", 16, 16, 16, 64, 3, 64, 1},
    {"R50 3x3 128 @8", 1, 8, 8, 128, 3, 128, 1},       {"R50 3x3 128 @8", 16, 8, 8, 128, 3, 128, 1},
    {"R50 3x3 256 @4", 1, 4, 4, 256, 3, 256, 1},       {"R50 3x3 256 @4", 16, 4, 4, 256, 3, 256, 1},
    {"R50 3x3 512 @2", 1, 2, 2, 512, 3, 512, 1},       {"R50 3x3 512 @2", 16, 2, 2, 512, 3, 512, 1},
    /* a thread's piece at batch 16 (8 images; a slice of half the filters) */
    {"VGG 3x3 512 @4 /2", 8, 4, 4, 512, 3, 512, 1},    {"VGG 3x3 512->256 @4", 16, 4, 4, 512, 3, 256, 1},
    {"VGG 3x3 256 @8 /2", 8, 8, 8, 256, 3, 256, 1},    {"VGG 3x3 64 @32 /2", 8, 32, 32, 64, 3, 64, 1},
};

/* SM_BENCH_BIG=1 (session 19 c7): ResNet50's 3x3 at its 224x224 input instead (56 / 28 / 14 / 7) */
static const shape big[] = {
    {"R50-224 3x3 64 @56", 1, 56, 56, 64, 3, 64, 1},   {"R50-224 3x3 64 @56", 8, 56, 56, 64, 3, 64, 1},
    {"R50-224 3x3 128 @28", 1, 28, 28, 128, 3, 128, 1}, {"R50-224 3x3 128 @28", 8, 28, 28, 128, 3, 128, 1},
    {"R50-224 3x3 256 @14", 1, 14, 14, 256, 3, 256, 1}, {"R50-224 3x3 256 @14", 8, 14, 14, 256, 3, 256, 1},
    {"R50-224 3x3 512 @7", 1, 7, 7, 512, 3, 512, 1},   {"R50-224 3x3 512 @7", 8, 7, 7, 512, 3, 512, 1},
};

#include "bench_dnnl_conv.h"

/* a standard normal draw (Box-Muller over a 64-bit LCG) */
static double gauss(uint64_t *r) {
  *r = *r * 6364136223846793005ull + 1442695040888963407ull;
  double u = ((double)(*r >> 11) + 0.5) / 9007199254740992.0;
  *r = *r * 6364136223846793005ull + 1442695040888963407ull;
  double v = (double)(*r >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* im2col of NHWC x (pad (k-1)/2, stride 1) into rows of k*k*c: [n*oh*ow][kh][kw][c] */
static void im2col(const shape *s, const float *x, float *col) {
  int p = (s->k - 1) / 2;
  for (int n = 0; n < s->n; n++)
    for (int oy = 0; oy < s->h; oy++)
      for (int ox = 0; ox < s->w; ox++) {
        float *r = col + (((size_t)n * s->h + oy) * s->w + ox) * s->k * s->k * s->c;
        for (int ky = 0; ky < s->k; ky++)
          for (int kx = 0; kx < s->k; kx++, r += s->c) {
            int iy = oy + ky - p, ix = ox + kx - p;
            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) memset(r, 0, (size_t)s->c * 4);
            else memcpy(r, x + (((size_t)n * s->h + iy) * s->w + ix) * s->c, (size_t)s->c * 4);
          }
      }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 11;
  if (reps < 1) reps = 1;
  if (reps > 200) reps = 200;
  dnnl_engine_t eng;
  dnnl_stream_t st;
  DN(dnnl_engine_create(&eng, dnnl_cpu, 0));
  DN(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  printf("| layer | batch | MFLOP | NHWC ms | nChw8c ms (+reorders) | nChw16c ms (+reorders) | im2col+sgemm ms | best "
         "GFLOP/s | NHWC impl | 8c impl | 16c impl | max diff 8c | wino ms | wino/best-other | err NHWC | err wino |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int isbig = getenv("SM_BENCH_BIG") && atoi(getenv("SM_BENCH_BIG"));
  size_t nshapes = isbig ? sizeof big / sizeof *big : sizeof shapes / sizeof *shapes;
  for (size_t i = 0; i < nshapes; i++) {
    const shape *s = isbig ? &big[i] : &shapes[i];
    int oh = (s->h + s->s - 1) / s->s, ow = (s->w + s->s - 1) / s->s;
    size_t nx = (size_t)s->n * s->h * s->w * s->c, ny = (size_t)s->n * oh * ow * s->cout,
           nf = (size_t)s->k * s->k * s->c * s->cout, kk = (size_t)s->k * s->k * s->c, rows = (size_t)s->n * oh * ow;
    float *x = malloc(nx * 4), *f = malloc(nf * 4), *b = malloc((size_t)s->cout * 4);
    float *y0 = calloc(ny, 4), *y1 = calloc(ny, 4), *y2 = calloc(ny, 4), *y3 = calloc(ny, 4);
    float *col = malloc(rows * kk * 4);
    for (size_t e = 0; e < nx; e++) x[e] = (float)((e * 37) % 101) / 101.0f - 0.5f;
    for (size_t e = 0; e < nf; e++) f[e] = (float)((e * 53) % 97) / 97.0f - 0.5f;
    if (getenv("SM_BENCH_DATA") && !strcmp(getenv("SM_BENCH_DATA"), "relu_bn")) {
      uint64_t r = 0x9e3779b97f4a7c15ull * (i + 1);
      double *cs = malloc(sizeof(double) * (size_t)(s->c > s->cout ? s->c : s->cout));
      for (int c = 0; c < s->c; c++) cs[c] = exp(gauss(&r));
      for (size_t e = 0; e < nx; e++) {
        double v = gauss(&r) + 0.2;
        x[e] = (float)(v > 0 ? v * cs[e % (size_t)s->c] : 0.0);
      }
      for (int k = 0; k < s->cout; k++) cs[k] = exp(1.5 * gauss(&r));
      for (size_t e = 0; e < nf; e++) f[e] = (float)(gauss(&r) * sqrt(2.0 / (9.0 * s->c)) * cs[e % (size_t)s->cout]);
      free(cs);
    }
    for (int e = 0; e < s->cout; e++) b[e] = 0.01f * (float)(e % 7);
    conv c0, c1, c2;
    make(eng, st, s, dnnl_nhwc, x, f, b, y0, &c0);
    make(eng, st, s, dnnl_nChw8c, x, f, b, y1, &c1);
    make(eng, st, s, dnnl_nChw16c, x, f, b, y2, &c2);
    dnnl_memory_t ux, uy1, uy2;
    DN(dnnl_memory_create(&ux, &c0.src_md, eng, x));
    DN(dnnl_memory_create(&uy1, &c0.dst_md, eng, y1));
    DN(dnnl_memory_create(&uy2, &c0.dst_md, eng, y2));
    dnnl_primitive_t rin1 = reorder(eng, &c0.src_md, &c1.src_md), rout1 = reorder(eng, &c1.dst_md, &c0.dst_md);
    dnnl_primitive_t rin2 = reorder(eng, &c0.src_md, &c2.src_md), rout2 = reorder(eng, &c2.dst_md, &c0.dst_md);
    dnnl_exec_arg_t a0[4] = {{DNNL_ARG_SRC, c0.src}, {DNNL_ARG_WEIGHTS, c0.wei}, {DNNL_ARG_BIAS, c0.bias},
                             {DNNL_ARG_DST, c0.dst}};
    dnnl_exec_arg_t a1[4] = {{DNNL_ARG_SRC, c1.src}, {DNNL_ARG_WEIGHTS, c1.wei}, {DNNL_ARG_BIAS, c1.bias},
                             {DNNL_ARG_DST, c1.dst}};
    dnnl_exec_arg_t a2[4] = {{DNNL_ARG_SRC, c2.src}, {DNNL_ARG_WEIGHTS, c2.wei}, {DNNL_ARG_BIAS, c2.bias},
                             {DNNL_ARG_DST, c2.dst}};
    dnnl_exec_arg_t i1[2] = {{DNNL_ARG_FROM, ux}, {DNNL_ARG_TO, c1.src}}, o1[2] = {{DNNL_ARG_FROM, c1.dst}, {DNNL_ARG_TO, uy1}};
    dnnl_exec_arg_t i2[2] = {{DNNL_ARG_FROM, ux}, {DNNL_ARG_TO, c2.src}}, o2[2] = {{DNNL_ARG_FROM, c2.dst}, {DNNL_ARG_TO, uy2}};
    static double t[5][200];
    float *y4 = calloc(ny, 4);
#ifdef WINO
    /* the Winograd variants: SM_WINO_CFGS "m:cb,..." or SM_WINO_M / SM_WINO_CB */
    int nw = 0, wm[8], only = getenv("SM_WINO_ONLY") && atoi(getenv("SM_WINO_ONLY"));
    int64_t wcb[8];
    const char *cf = getenv("SM_WINO_CFGS");
    while (cf && *cf && nw < 8) {
      char *end;
      wm[nw] = (int)strtol(cf, &end, 10);
      wcb[nw] = *end == ':' ? strtol(end + 1, &end, 10) : 0;
      if (wm[nw] < 2 || wm[nw] > 4) wm[nw] = 2;
      nw++;
      cf = *end == ',' ? end + 1 : end;
      if (!*end) break;
    }
    if (!nw) {
      wm[0] = getenv("SM_WINO_M") ? atoi(getenv("SM_WINO_M")) : 2;
      if (wm[0] < 2 || wm[0] > 4) wm[0] = 2;
      wcb[0] = getenv("SM_WINO_CB") ? atoi(getenv("SM_WINO_CB")) : 0;
      nw = 1;
    }
    sm__wino_args wa[8];
    float *U[8], *yw[8];
    int64_t WT = getenv("SM_WINO_T") ? atoi(getenv("SM_WINO_T")) : sm__wino_block(s->c, s->cout);
    float *ws = malloc(sm__wino_scratch_floats(s->c, s->cout, WT) * 4);
    static double tw[8][200];
    for (int v = 0; v < nw; v++) {
      yw[v] = calloc(ny, 4);
      U[v] = malloc(sm__wino_packed_floats(wm[v], s->c, s->cout) * 4);
      sm__wino_pack(wm[v], f, s->c, s->cout, U[v]);
      wa[v] = (sm__wino_args){wm[v], s->n, s->h, s->w, s->c, oh, ow, s->cout, (s->k - 1) / 2, (s->k - 1) / 2, x, U[v], b,
                              NULL, f, yw[v], SM_NN_ACT_RELU, 0.0f, wcb[v]};
    }
#else
    int only = 0;
#endif
    for (int k = -1; k < reps; k++) {
      double a = now_ms();
      run(st, c0.p, 4, a0);
      double m = now_ms();
      if (!only && strncmp(c1.impl, "ref", 3)) {
        run(st, rin1, 2, i1);
        run(st, c1.p, 4, a1);
        run(st, rout1, 2, o1);
      }
      double q = now_ms();
      if (!only && strncmp(c2.impl, "ref", 3)) { /* oneDNN's reference loops: seconds a call, not a candidate */
        run(st, rin2, 2, i2);
        run(st, c2.p, 4, a2);
        run(st, rout2, 2, o2);
      }
      double z = now_ms();
      if (!only) {
        im2col(s, x, col);
        DN(dnnl_sgemm('N', 'N', (dnnl_dim_t)rows, s->cout, (dnnl_dim_t)kk, 1.0f, col, (dnnl_dim_t)kk, f, s->cout, 0.0f,
                      y3, s->cout));
      }
      double g = now_ms(), w = g;
#ifdef WINO
      for (int v = 0; v < nw; v++) {
        double w0 = now_ms();
        sm__wino_run(&wa[v], 0, sm__wino_tiles(&wa[v]), 0, (s->cout + 15) / 16, WT, ws);
        if (k >= 0) tw[v][k] = now_ms() - w0;
      }
      w = g + (k >= 0 ? tw[0][k] : 0);
#endif
      if (k >= 0) t[0][k] = m - a, t[1][k] = q - m, t[2][k] = z - q, t[3][k] = g - z, t[4][k] = w - g;
    }
    for (int k = 0; k < 5; k++) qsort(t[k], (size_t)reps, sizeof(double), cmp);
    double md[4] = {t[0][reps / 2], t[1][reps / 2], t[2][reps / 2], t[3][reps / 2]}, diff = 0, best = md[0];
    for (int k = 1; k < 3; k++)
      if (!strncmp(k == 1 ? c1.impl : c2.impl, "ref", 3)) md[k] = 1e9;
    if (only) md[1] = md[2] = md[3] = 1e9;
    for (int k = 1; k < 4; k++) best = md[k] < best ? md[k] : best;
    for (size_t e = 0; e < ny; e++) diff = fabs(y1[e] - y0[e]) > diff ? fabs(y1[e] - y0[e]) : diff;
    double mflop = 2e-6 * (double)rows * (double)s->cout * (double)kk;
    /* float64 direct sum (+ bias, ReLU): the error of NHWC and Winograd relative to max |y64| */
    double e0 = 0, e4 = 0, ymax = 0, ew[8] = {0};
    int p = (s->k - 1) / 2;
    for (size_t r = 0; r < rows; r++) {
      int n = (int)(r / ((size_t)oh * ow)), oy = (int)(r / ow % oh), ox = (int)(r % ow);
      for (int o = 0; o < s->cout; o++) {
        double acc = 0;
        for (int ky = 0; ky < s->k; ky++)
          for (int kx = 0; kx < s->k; kx++) {
            int iy = oy + ky - p, ix = ox + kx - p;
            if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
            const float *xr = x + (((size_t)n * s->h + iy) * s->w + ix) * s->c;
            const float *fr = f + ((size_t)(ky * s->k + kx) * s->c) * s->cout + o;
            for (int c = 0; c < s->c; c++) acc += (double)xr[c] * (double)fr[(size_t)c * s->cout];
          }
        acc += b[o];
        if (acc < 0) acc = 0;
        ymax = fabs(acc) > ymax ? fabs(acc) : ymax;
        double d0 = fabs(y0[r * s->cout + o] - acc), d4 = fabs(y4[r * s->cout + o] - acc);
        e0 = d0 > e0 ? d0 : e0, e4 = d4 > e4 ? d4 : e4;
#ifdef WINO
        for (int v = 0; v < nw; v++) {
          double dv = fabs(yw[v][r * s->cout + o] - acc);
          ew[v] = dv > ew[v] ? dv : ew[v];
        }
        e4 = ew[0];
#endif
      }
    }
    printf("| %s | %d | %.0f | %.3f | %.3f | %.3f | %.3f | %.0f | %s | %s | %s | %.1e | %.3f | %.2f | %.1e | %.1e |",
           s->what, s->n, mflop, md[0], md[1], md[2], md[3], mflop / best, c0.impl, c1.impl, c2.impl, diff, t[4][reps / 2],
           t[4][reps / 2] / best, e0 / ymax, e4 / ymax);
#ifdef WINO
    for (int v = 1; v < nw; v++) { /* the other variants: F(m) / cb, ms, ratio to the first, err */
      qsort(tw[v], (size_t)reps, sizeof(double), cmp);
      printf(" F%d/%d | %.3f | %.2f | %.1e |", wm[v], (int)wcb[v], tw[v][reps / 2], tw[v][reps / 2] / t[4][reps / 2],
             ew[v] / ymax);
    }
#endif
    printf("\n");
    fflush(stdout);
    free(x), free(f), free(b), free(y0), free(y1), free(y2), free(y3), free(y4), free(col);
#ifdef WINO
    for (int v = 0; v < nw; v++) free(U[v]), free(yw[v]);
    free(ws);
#endif
  }
  return 0;
}
