/* bench_conv.c - the conv/GEMM library decision (issue #15): ours (im2col + OpenBLAS sgemm, the
 * library's sm__nn_conv2d_f32, one thread) against oneDNN 2.6 (libdnnl-dev, C API, weights
 * reordered to its preferred layout once, NHWC activations, fused bias + ReLU) and XNNPACK
 * (libxnnpack-dev, NHWC, weights packed at operator creation, ReLU by clamping), on the dominant
 * layer shapes of ResNet50 and MobileNetV2 at 64x64 input, batch 1 and 16. One thread each
 * (OMP_NUM_THREADS=1 for oneDNN, no pthreadpool for XNNPACK) so the figure is per-core work, timed
 * as this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which other load on the machine disturbs far
 * less than wall time.
 * Not a test and not built by CMake; needs libdnnl-dev and libxnnpack-dev (Debian; not in
 * tools/install-deps.sh, the library does not use them). Debian's xnnpack.h includes pthreadpool.h,
 * which only libpthreadpool-dev has: a one-line stand-in does (XNNPACK runs here without a pool).
 * Build and run from the repo root after `make`:
 *
 *   mkdir -p build/shim && echo 'typedef struct pthreadpool *pthreadpool_t;' > build/shim/pthreadpool.h
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -Ibuild/gen -Ibuild/shim bench/bench_conv.c \
 *      build/libsavedmodel.a $(pkg-config --libs libprotobuf-c openblas zlib) -ldnnl -lXNNPACK -lsnappy \
 *      -lpthread -lm -ldl -o build/bench_conv && OMP_NUM_THREADS=1 build/bench_conv [REPS]
 *
 * Prints a markdown table: per shape, median ms of REPS (default 7) interleaved calls per side,
 * and the max |difference| of each library's output from ours. */
#include <dnnl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xnnpack.h>

#include "ops/nn_internal.h"
#include "ops/nn_raw.h"

typedef struct shape {
  const char *what;
  int n, h, w, c, k, cout, s, dw; /* dw: depthwise (cout == c) */
} shape;

static const shape shapes[] = {
    {"R50 conv1 7x7/2", 1, 64, 64, 3, 7, 64, 2, 0},    {"R50 conv1 7x7/2", 16, 64, 64, 3, 7, 64, 2, 0},
    {"R50 1x1 256->64 @16", 1, 16, 16, 256, 1, 64, 1, 0}, {"R50 1x1 256->64 @16", 16, 16, 16, 256, 1, 64, 1, 0},
    {"R50 3x3 64 @16", 1, 16, 16, 64, 3, 64, 1, 0},    {"R50 3x3 64 @16", 16, 16, 16, 64, 3, 64, 1, 0},
    {"R50 3x3 128 @8", 1, 8, 8, 128, 3, 128, 1, 0},     {"R50 3x3 128 @8", 16, 8, 8, 128, 3, 128, 1, 0},
    {"R50 3x3 256 @4", 1, 4, 4, 256, 3, 256, 1, 0},     {"R50 3x3 256 @4", 16, 4, 4, 256, 3, 256, 1, 0},
    {"R50 3x3 512 @2", 1, 2, 2, 512, 3, 512, 1, 0},     {"R50 3x3 512 @2", 16, 2, 2, 512, 3, 512, 1, 0},
    {"R50 1x1 512->2048 @2", 1, 2, 2, 512, 1, 2048, 1, 0}, {"R50 1x1 512->2048 @2", 16, 2, 2, 512, 1, 2048, 1, 0},
    {"R50 1x1 1024->256 @4", 1, 4, 4, 1024, 1, 256, 1, 0}, {"R50 1x1 1024->256 @4", 16, 4, 4, 1024, 1, 256, 1, 0},
    {"MNv2 1x1 24->144 @16", 1, 16, 16, 24, 1, 144, 1, 0}, {"MNv2 1x1 24->144 @16", 16, 16, 16, 24, 1, 144, 1, 0},
    {"MNv2 1x1 144->24 @16", 1, 16, 16, 144, 1, 24, 1, 0}, {"MNv2 1x1 144->24 @16", 16, 16, 16, 144, 1, 24, 1, 0},
    {"MNv2 dw3x3 96 @32", 1, 32, 32, 96, 3, 96, 1, 1},  {"MNv2 dw3x3 96 @32", 16, 32, 32, 96, 3, 96, 1, 1},
    {"MNv2 dw3x3 144 @16", 1, 16, 16, 144, 3, 144, 1, 1}, {"MNv2 dw3x3 144 @16", 16, 16, 16, 144, 3, 144, 1, 1},
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time of this thread: every side runs here */
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define DN(call)                                                           \
  do {                                                                     \
    dnnl_status_t s_ = (call);                                             \
    if (s_ != dnnl_success) {                                              \
      fprintf(stderr, "oneDNN: %s failed (%d)\n", #call, (int)s_);        \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* A oneDNN convolution (or depthwise as groups = C) with bias + ReLU, weights reordered once. */
typedef struct dn {
  dnnl_primitive_t prim;
  dnnl_memory_t src, wei, bias, dst;
} dn;

static void dn_make(dnnl_engine_t eng, dnnl_stream_t st, const shape *s, int oh, int ow, int pad, float *x, float *f,
                    float *b, float *y, dn *d) {
  dnnl_memory_desc_t src_md, dst_md, bias_md, wany_md, wuser_md;
  dnnl_dims_t sd = {s->n, s->c, s->h, s->w}, dd = {s->n, s->cout, oh, ow}, bd = {s->cout};
  DN(dnnl_memory_desc_init_by_tag(&src_md, 4, sd, dnnl_f32, dnnl_nhwc));
  DN(dnnl_memory_desc_init_by_tag(&dst_md, 4, dd, dnnl_f32, dnnl_nhwc));
  DN(dnnl_memory_desc_init_by_tag(&bias_md, 1, bd, dnnl_f32, dnnl_a));
  if (s->dw) { /* groups G = C: [G, 1, 1, KH, KW], user layout HWIO of TF's [kh, kw, C, 1] = hwigo */
    dnnl_dims_t wd = {s->c, 1, 1, s->k, s->k};
    DN(dnnl_memory_desc_init_by_tag(&wany_md, 5, wd, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&wuser_md, 5, wd, dnnl_f32, dnnl_hwigo));
  } else {
    dnnl_dims_t wd = {s->cout, s->c, s->k, s->k};
    DN(dnnl_memory_desc_init_by_tag(&wany_md, 4, wd, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&wuser_md, 4, wd, dnnl_f32, dnnl_hwio));
  }
  dnnl_dims_t strides = {s->s, s->s}, pl = {pad / 2, pad / 2}, pr = {pad - pad / 2, pad - pad / 2};
  dnnl_convolution_desc_t cd;
  DN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wany_md,
                                        &bias_md, &dst_md, strides, pl, pr));
  dnnl_post_ops_t po;
  dnnl_primitive_attr_t attr;
  DN(dnnl_post_ops_create(&po));
  DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
  DN(dnnl_primitive_attr_create(&attr));
  DN(dnnl_primitive_attr_set_post_ops(attr, po));
  dnnl_primitive_desc_t pd;
  DN(dnnl_primitive_desc_create(&pd, &cd, attr, eng, NULL));
  DN(dnnl_primitive_create(&d->prim, pd));
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t wuser;
  DN(dnnl_memory_create(&wuser, &wuser_md, eng, f));
  DN(dnnl_memory_create(&d->wei, wmd, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t reorder;
  DN(dnnl_reorder_primitive_desc_create(&rpd, &wuser_md, eng, wmd, eng, NULL));
  DN(dnnl_primitive_create(&reorder, rpd));
  dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, wuser}, {DNNL_ARG_TO, d->wei}};
  DN(dnnl_primitive_execute(reorder, st, 2, ra));
  DN(dnnl_stream_wait(st));
  DN(dnnl_memory_create(&d->src, &src_md, eng, x));
  DN(dnnl_memory_create(&d->bias, &bias_md, eng, b));
  DN(dnnl_memory_create(&d->dst, &dst_md, eng, y));
}

static void dn_run(dnnl_stream_t st, dn *d) {
  dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->wei}, {DNNL_ARG_BIAS, d->bias},
                          {DNNL_ARG_DST, d->dst}};
  DN(dnnl_primitive_execute(d->prim, st, 4, a));
  DN(dnnl_stream_wait(st));
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 7;
  if (reps < 1) reps = 1;
  if (xnn_initialize(NULL) != xnn_status_success) return 1;
  sm__nn_blas_init(); /* OpenBLAS single-threaded, as the kernels' prepare sets it */
  dnnl_engine_t eng;
  dnnl_stream_t st;
  DN(dnnl_engine_create(&eng, dnnl_cpu, 0));
  DN(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  printf("| layer (NHWC, SAME) | batch | ours ms | oneDNN ms | XNNPACK ms | ours/oneDNN | ours/XNNPACK | max diff |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const shape *s = &shapes[i];
    int oh = (s->h + s->s - 1) / s->s, ow = (s->w + s->s - 1) / s->s;
    int pad = (oh - 1) * s->s + s->k - s->h; /* SAME, total */
    if (pad < 0) pad = 0;
    size_t nx = (size_t)s->n * s->h * s->w * s->c, ny = (size_t)s->n * oh * ow * s->cout;
    size_t nf = (size_t)s->k * s->k * s->c * (s->dw ? 1 : s->cout);
    float *x = malloc(nx * 4), *f = malloc(nf * 4), *fo = malloc(nf * 4), *b = malloc((size_t)s->cout * 4);
    float *y0 = calloc(ny, 4), *y1 = calloc(ny, 4), *y2 = calloc(ny, 4);
    for (size_t e = 0; e < nx; e++) x[e] = (float)((e * 37) % 101) / 101.0f - 0.5f;
    for (size_t e = 0; e < nf; e++) f[e] = (float)((e * 53) % 97) / 97.0f - 0.5f;
    for (int e = 0; e < s->cout; e++) b[e] = 0.01f * (float)(e % 7);
    /* XNNPACK's filter layout: [cout, kh, kw, cin] (depthwise: [1, kh, kw, C]) */
    if (s->dw)
      memcpy(fo, f, nf * 4);
    else
      for (int kh = 0; kh < s->k; kh++)
        for (int kw = 0; kw < s->k; kw++)
          for (int c = 0; c < s->c; c++)
            for (int o = 0; o < s->cout; o++)
              fo[((size_t)(o * s->k + kh) * s->k + kw) * s->c + c] = f[((size_t)(kh * s->k + kw) * s->c + c) * s->cout + o];
    xnn_operator_t xop = NULL;
    enum xnn_status xs = xnn_create_convolution2d_nhwc_f32(
        (uint32_t)(pad / 2), (uint32_t)(pad - pad / 2), (uint32_t)(pad - pad / 2), (uint32_t)(pad / 2), (uint32_t)s->k,
        (uint32_t)s->k, (uint32_t)s->s, (uint32_t)s->s, 1, 1, s->dw ? (uint32_t)s->c : 1, s->dw ? 1 : (size_t)s->c,
        s->dw ? 1 : (size_t)s->cout, (size_t)s->c, (size_t)s->cout, fo, b, 0.0f, INFINITY,
        s->dw ? XNN_FLAG_DEPTHWISE_CONVOLUTION : 0, &xop);
    if (xs == xnn_status_success)
      xs = xnn_setup_convolution2d_nhwc_f32(xop, (size_t)s->n, (size_t)s->h, (size_t)s->w, x, y2, NULL);
    dn d;
    dn_make(eng, st, s, oh, ow, pad, x, f, b, y1, &d);
    double t[3][64];
    int r = reps > 64 ? 64 : reps;
    for (int k = -1; k < r; k++) { /* one warm-up call each, then interleaved */
      double a = now_ms();
      if (!s->dw) {
        sm_status *e = sm__nn_conv2d_f32(NULL, x, s->n, s->h, s->w, s->c, f, s->k, s->k, s->cout, s->s, s->s, 1, b,
                                         SM_NN_ACT_RELU, y0);
        if (e) return 1;
      }
      double m = now_ms();
      dn_run(st, &d);
      double q = now_ms();
      if (xs == xnn_status_success) xnn_run_operator(xop, NULL);
      double z = now_ms();
      if (k >= 0) t[0][k] = m - a, t[1][k] = q - m, t[2][k] = z - q;
    }
    for (int k = 0; k < 3; k++) qsort(t[k], (size_t)r, sizeof(double), cmp);
    double md[3] = {t[0][r / 2], t[1][r / 2], t[2][r / 2]}, diff = 0;
    for (size_t e = 0; !s->dw && e < ny; e++) {
      double d1 = fabs(y1[e] - y0[e]), d2 = xs == xnn_status_success ? fabs(y2[e] - y0[e]) : 0;
      diff = d1 > diff ? d1 : diff;
      diff = d2 > diff ? d2 : diff;
    }
    if (s->dw)
      for (size_t e = 0; e < ny; e++) diff = fabs(y1[e] - y2[e]) > diff ? fabs(y1[e] - y2[e]) : diff;
    if (s->dw)
      printf("| %s | %d | (direct loops, not timed here) | %.3f | %.3f | | | %.1e (oneDNN vs XNNPACK) |\n", s->what,
             s->n, md[1], md[2], diff);
    else
      printf("| %s | %d | %.3f | %.3f | %s%.3f | %.2f | %.2f | %.1e |\n", s->what, s->n, md[0], md[1],
             xs == xnn_status_success ? "" : "fail ", md[2], md[0] / md[1], md[0] / md[2], diff);
    fflush(stdout);
    free(x), free(f), free(fo), free(b), free(y0), free(y1), free(y2);
  }
  return 0;
}
