/* bench_gemv.c - batch-1 Dense weight streaming (issue #15, VGG16 b1): the GB/s of one float row
 * times a row-major B [K, N] on the runtime's pool (2 threads), three ways, interleaved per shape:
 *   read   a plain read of B (every float summed, B split in two contiguous halves): the roofline
 *   cols   the old path: OpenBLAS sgemv over 256-column slices of B (nn_matmul.c gemv_cols)
 *   rows   the library now (sm__nn_matmul_f32): B's rows split in one contiguous piece per thread,
 *          each streamed once in order (nn_gemm.c sm__nn_sgemv_rows), the y's added
 * on VGG16's three Dense shapes (512 x 4096, 4096 x 4096, 4096 x 1000: 92 MB, each its own
 * buffer, run in model order so that each reads B from wherever the previous calls left it) and
 * DenseNet121's 1024 x 1000. Prints per shape and way the best and the median ms of REPS rounds
 * and the GB/s of B read at each. Not a test and not built by CMake. Build and run from the repo
 * root after `make` (build/gen holds the generated protobuf headers):
 *
 *   cc -std=c11 -O2 -mavx512f -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -Ibuild/gen bench/bench_gemv.c \
 *      build/libsavedmodel.a $(pkg-config --libs libprotobuf-c openblas zlib) -lsnappy -lpthread \
 *      -lm -ldl -o build/bench_gemv && build/bench_gemv [REPS]
 */
#include <cblas.h>
#include <math.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/nn_raw.h"
#include "runtime/kernel.h"

typedef struct shape {
  const char *what;
  int64_t k, n;
} shape;

static const shape shapes[] = {
    {"VGG16 fc1 512x4096", 512, 4096},
    {"VGG16 fc2 4096x4096", 4096, 4096},
    {"VGG16 predictions 4096x1000", 4096, 1000},
    {"DenseNet121 1024x1000", 1024, 1000},
};
#define NS (sizeof shapes / sizeof *shapes)

typedef struct job {
  const float *b, *x;
  float *y;
  int64_t k, n, pieces;
  float sums[16][16];
} job;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* piece i of B (k n floats in `pieces` contiguous parts), summed with four accumulators */
static void read_piece(void *ctx, int64_t first, int64_t last) {
  job *j = ctx;
  int64_t total = j->k * j->n;
  for (int64_t i = first; i < last; i++) {
    int64_t a = i * total / j->pieces / 64 * 64, e = (i + 1) * total / j->pieces / 64 * 64;
    if (i == j->pieces - 1) e = total / 64 * 64;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (const float *p = j->b + a; p < j->b + e; p += 64) {
      _mm_prefetch((const char *)(p + 1024), _MM_HINT_T0);
      s0 = _mm512_add_ps(s0, _mm512_loadu_ps(p));
      s1 = _mm512_add_ps(s1, _mm512_loadu_ps(p + 16));
      s2 = _mm512_add_ps(s2, _mm512_loadu_ps(p + 32));
      s3 = _mm512_add_ps(s3, _mm512_loadu_ps(p + 48));
    }
    _mm512_storeu_ps(j->sums[i], _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  }
}

/* the old gemv_cols: units of 256 columns, each one sgemv over all k rows */
static void cols_units(void *ctx, int64_t first, int64_t last) {
  job *j = ctx;
  for (int64_t u = first; u < last; u++) {
    int64_t n0 = u * 256, n1 = n0 + 256 < j->n ? n0 + 256 : j->n;
    memset(j->y + n0, 0, (size_t)(n1 - n0) * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)j->k, (int)(n1 - n0), 1.0f, j->b + n0, (int)j->n, j->x, 1, 1.0f,
                j->y + n0, 1);
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 50;
  if (reps < 1) reps = 1;
  openblas_set_num_threads(1);
  sm_threadpool *pool = NULL;
  sm_status *st = sm__threadpool_new(2, &pool);
  if (st) {
    fprintf(stderr, "%s\n", sm_status_message(st));
    return 1;
  }
  float *b[NS], *x = malloc(4096 * sizeof(float)), *y = malloc(4096 * sizeof(float)), *y2 = malloc(NS * 4096 * sizeof(float));
  for (int i = 0; i < 4096; i++) x[i] = (float)(i % 13) / 13.0f - 0.5f;
  for (size_t s = 0; s < NS; s++) {
    b[s] = malloc((size_t)(shapes[s].k * shapes[s].n) * sizeof(float));
    for (int64_t i = 0; i < shapes[s].k * shapes[s].n; i++) b[s][i] = (float)(i * 37 % 23 - 11) / 16.0f;
  }
  double *t = malloc(sizeof(double) * NS * 3 * (size_t)reps);
  const char *ways[3] = {"read", "cols", "rows"};
  for (int r = 0; r < reps; r++)
    for (int w = 0; w < 3; w++)
      for (size_t s = 0; s < NS; s++) {
        job j = {b[s], x, w == 1 ? y2 + s * 4096 : y, shapes[s].k, shapes[s].n, 2, {{0}}};
        double t0 = now();
        if (w == 0)
          sm__parallel_for(pool, 2, 1, read_piece, &j);
        else if (w == 1)
          sm__parallel_for(pool, (j.n + 255) / 256, 1, cols_units, &j);
        else
          sm__nn_matmul_f32(pool, 0, 0, 1, j.n, j.k, x, b[s], NULL, 0, 0, y);
        t[(s * 3 + (size_t)w) * (size_t)reps + (size_t)r] = now() - t0;
        if (w == 2 && r == 0) {
          double e = 0;
          for (int64_t i = 0; i < j.n; i++) e = fmax(e, fabs(y[i] - y2[s * 4096 + i]));
          if (e > 1e-2) printf("%s: rows and cols differ by %g\n", shapes[s].what, e);
        }
      }
  printf("| shape | MB | way | best ms | best GB/s | median ms | median GB/s |\n|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < NS; s++)
    for (int w = 0; w < 3; w++) {
      double *v = t + (s * 3 + (size_t)w) * (size_t)reps, mb = (double)(shapes[s].k * shapes[s].n) * 4 / 1e6;
      qsort(v, (size_t)reps, sizeof *v, cmp);
      printf("| %s | %.1f | %s | %.3f | %.1f | %.3f | %.1f |\n", shapes[s].what, mb, ways[w], v[0] * 1e3, mb / 1e3 / v[0],
             v[reps / 2] * 1e3, mb / 1e3 / v[reps / 2]);
    }
  sm__threadpool_free(pool);
  for (size_t s = 0; s < NS; s++) free(b[s]);
  free(x), free(y), free(y2), free(t);
  return 0;
}
