/* bench_layout.c - issue #15's layout question, measured: one oneDNN 2.6 convolution (fp32, bias +
 * ReLU, weights reordered once into the primitive's layout) on ResNet50's layer shapes at 64x64
 * input, with the activations in NHWC (what nn_dnnl.c gives oneDNN) against oneDNN's blocked
 * nChw16c (what ORT's NCHWc and oneDNN's older jit kernels use), the layout oneDNN picks when
 * asked (format_tag_any; on this AVX-512 machine: plain NHWC, its brgconv), and the cost of reordering
 * an NHWC input into that layout and the output back (what a plan would pay at the boundary of a
 * blocked chain, per conv when there is no chain). One thread (OMP_NUM_THREADS=1), timed as this
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), the sides interleaved, median of REPS calls.
 * Not a test and not built by CMake; needs libdnnl-dev. From the repo root:
 *
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L bench/bench_layout.c -ldnnl -o build/bench_layout && \
 *     OMP_NUM_THREADS=1 build/bench_layout [REPS]
 *
 * Prints a markdown table: per shape, NHWC ms, blocked ms (and its implementation), the two
 * reorders' ms, and the max |difference| of the blocked result (reordered back) from NHWC's. */
#include <dnnl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
  const char *what;
  int n, h, w, c, k, cout, s;
} shape;

static const shape shapes[] = {
    {"3x3 64 @16", 1, 16, 16, 64, 3, 64, 1},         {"3x3 64 @16", 16, 16, 16, 64, 3, 64, 1},
    {"1x1 64->256 @16", 1, 16, 16, 64, 1, 256, 1},   {"1x1 64->256 @16", 16, 16, 16, 64, 1, 256, 1},
    {"1x1 256->64 @16", 16, 16, 16, 256, 1, 64, 1},  {"3x3 128 @8", 1, 8, 8, 128, 3, 128, 1},
    {"3x3 128 @8", 16, 8, 8, 128, 3, 128, 1},        {"1x1 128->512 @8", 16, 8, 8, 128, 1, 512, 1},
    {"3x3 256 @4", 1, 4, 4, 256, 3, 256, 1},         {"3x3 256 @4", 16, 4, 4, 256, 3, 256, 1},
    {"1x1 256->1024 @4", 16, 4, 4, 256, 1, 1024, 1}, {"3x3 512 @2", 1, 2, 2, 512, 3, 512, 1},
    {"3x3 512 @2", 16, 2, 2, 512, 3, 512, 1},        {"1x1 512->2048 @2", 16, 2, 2, 512, 1, 2048, 1},
    /* a thread's piece of the batch-16 3x3 512 @2: 8 images, or one slice of the filters */
    {"3x3 512 @2", 8, 2, 2, 512, 3, 512, 1},         {"3x3 512->256 @2", 16, 2, 2, 512, 3, 256, 1},
    /* VGG16 @32x32 block 4 and 5 */
    {"VGG 3x3 512 @4", 1, 4, 4, 512, 3, 512, 1},     {"VGG 3x3 512 @4", 16, 4, 4, 512, 3, 512, 1},
    {"VGG 3x3 512->256 @4", 16, 4, 4, 512, 3, 256, 1},
};

#include "bench_dnnl_conv.h"

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 21;
  if (reps < 1) reps = 1;
  if (reps > 200) reps = 200;
  dnnl_engine_t eng;
  dnnl_stream_t st;
  DN(dnnl_engine_create(&eng, dnnl_cpu, 0));
  DN(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  printf("| layer (ResNet50 @64x64) | batch | NHWC ms | nChw16c ms | nChw16c/NHWC | reorder in + out ms | nChw16c impl "
         "| oneDNN's pick (any) | max diff |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const shape *s = &shapes[i];
    int oh = (s->h + s->s - 1) / s->s, ow = (s->w + s->s - 1) / s->s;
    size_t nx = (size_t)s->n * s->h * s->w * s->c, ny = (size_t)s->n * oh * ow * s->cout,
           nf = (size_t)s->k * s->k * s->c * s->cout;
    float *x = malloc(nx * 4), *f = malloc(nf * 4), *b = malloc((size_t)s->cout * 4);
    float *y0 = calloc(ny, 4), *y1 = calloc(ny, 4);
    for (size_t e = 0; e < nx; e++) x[e] = (float)((e * 37) % 101) / 101.0f - 0.5f;
    for (size_t e = 0; e < nf; e++) f[e] = (float)((e * 53) % 97) / 97.0f - 0.5f;
    for (int e = 0; e < s->cout; e++) b[e] = 0.01f * (float)(e % 7);
    conv c0, c1, ca;
    make(eng, st, s, dnnl_nhwc, x, f, b, y0, &c0);
    make(eng, st, s, dnnl_nChw16c, x, f, b, y1, &c1);
    make(eng, st, s, dnnl_format_tag_any, x, f, b, y1, &ca);
    /* the boundary: NHWC x into the blocked src, the blocked dst back into NHWC y1 */
    dnnl_memory_t ux, uy;
    DN(dnnl_memory_create(&ux, &c0.src_md, eng, x));
    DN(dnnl_memory_create(&uy, &c0.dst_md, eng, y1));
    dnnl_primitive_t rin = reorder(eng, &c0.src_md, &c1.src_md), rout = reorder(eng, &c1.dst_md, &c0.dst_md);
    dnnl_exec_arg_t a0[4] = {{DNNL_ARG_SRC, c0.src}, {DNNL_ARG_WEIGHTS, c0.wei}, {DNNL_ARG_BIAS, c0.bias},
                             {DNNL_ARG_DST, c0.dst}};
    dnnl_exec_arg_t a1[4] = {{DNNL_ARG_SRC, c1.src}, {DNNL_ARG_WEIGHTS, c1.wei}, {DNNL_ARG_BIAS, c1.bias},
                             {DNNL_ARG_DST, c1.dst}};
    dnnl_exec_arg_t ai[2] = {{DNNL_ARG_FROM, ux}, {DNNL_ARG_TO, c1.src}}, ao[2] = {{DNNL_ARG_FROM, c1.dst}, {DNNL_ARG_TO, uy}};
    static double t[3][200];
    for (int k = -1; k < reps; k++) { /* one warm-up each, then interleaved */
      double a = now_ms();
      run(st, c0.p, 4, a0);
      double m = now_ms();
      run(st, c1.p, 4, a1);
      double q = now_ms();
      run(st, rin, 2, ai);
      run(st, rout, 2, ao);
      double z = now_ms();
      if (k >= 0) t[0][k] = m - a, t[1][k] = q - m, t[2][k] = z - q;
    }
    for (int k = 0; k < 3; k++) qsort(t[k], (size_t)reps, sizeof(double), cmp);
    double md[3] = {t[0][reps / 2], t[1][reps / 2], t[2][reps / 2]}, diff = 0;
    for (size_t e = 0; e < ny; e++) diff = fabs(y1[e] - y0[e]) > diff ? fabs(y1[e] - y0[e]) : diff;
    const char *any = "blocked";
    if (ca.src_md.format_kind == dnnl_blocked && !ca.src_md.format_desc.blocking.inner_nblks)
      any = ca.src_md.format_desc.blocking.strides[1] == 1 ? "NHWC" : "plain";
    printf("| %s | %d | %.3f | %.3f | %.2f | %.3f | %s | %s, %s | %.1e |\n", s->what, s->n, md[0], md[1],
           md[1] / md[0], md[2], c1.impl, ca.impl, any, diff);
    fflush(stdout);
    free(x), free(f), free(b), free(y0), free(y1);
  }
  return 0;
}
