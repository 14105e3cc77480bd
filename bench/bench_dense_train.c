/* bench_dense_train.c - the trainer's Dense products (src/train/grad.c, sm__train_matmul) on
 * OpenBLAS (SM_DNNL=0, as before session 13) against oneDNN's unpacked matmul, for the seed CNN's
 * Dense(5408->64): the forward pass X W, the weight gradient X^T dY and the input gradient dY W^T,
 * at batch 32 (one rank's share of a global batch of 64 under `mpirun -np 2`) and 64 (one
 * process). The two settings alternate call by call (SM_DNNL is read at each call). One thread:
 * median of the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID, which other load on the
 * machine disturbs far less than wall time); two threads: the minimum wall time.
 * Not a test and not built by CMake. Build and run from the repo root after the build:
 *
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -Ibuild/gen bench/bench_dense_train.c \
 *      build/libsavedmodel.a $(pkg-config --libs libprotobuf-c zlib) -lsnappy -ljansson -lpthread -lm -ldl \
 *      -o build/bench_dense_train && build/bench_dense_train [REPS]
 *
 * Prints a markdown table: per batch and thread count, us per call of each product per setting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train/train_internal.h"

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 301;
  if (reps < 1) reps = 1;
  const int64_t in = 5408, units = 64;
  printf("| batch | threads | setting | forward us | weight gradient us | input gradient us | total us |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (int threads = 1; threads <= 2; threads++)
    for (int64_t b = 32; b <= 64; b *= 2) {
      sm__train *t = calloc(1, sizeof *t);
      float *x = malloc((size_t)(b * in) * sizeof(float)), *w = malloc((size_t)(in * units) * sizeof(float));
      float *g = malloc((size_t)(in * units) * sizeof(float)), *dy = malloc((size_t)(b * units) * sizeof(float));
      float *y = malloc((size_t)(b * units) * sizeof(float)), *dx = malloc((size_t)(b * in) * sizeof(float));
      double *ts = malloc((size_t)reps * 6 * sizeof(double));
      if (!t || !x || !w || !g || !dy || !y || !dx || !ts) return 1;
      if (threads > 1 && sm__threadpool_new(threads, &t->pool)) return 1;
      for (int64_t i = 0; i < b * in; i++) x[i] = (float)(i % 7) * 0.1f;
      for (int64_t i = 0; i < in * units; i++) w[i] = (float)(i % 5) * 0.01f;
      for (int64_t i = 0; i < b * units; i++) dy[i] = (float)(i % 3) * 0.1f;
      clockid_t clk = threads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
      for (int r = 0; r < reps; r++)
        for (int s = 0; s < 2; s++) {
          setenv("SM_DNNL", s ? "1" : "0", 1);
          double t0 = now(clk);
          sm_status *st = sm__train_matmul(t, 0, 0, 0, b, units, in, x, w, y);
          double t1 = now(clk);
          if (!st) st = sm__train_matmul(t, 1, 1, 0, in, units, b, x, dy, g);
          double t2 = now(clk);
          if (!st) st = sm__train_matmul(t, 2, 0, 1, b, in, units, dy, w, dx);
          double t3 = now(clk);
          if (st) {
            fprintf(stderr, "%s\n", sm_status_message(st));
            return 1;
          }
          double *d = ts + (size_t)r * 6 + (size_t)s * 3;
          d[0] = t1 - t0, d[1] = t2 - t1, d[2] = t3 - t2;
        }
      for (int s = 0; s < 2; s++) {
        double v[3], *col = malloc((size_t)reps * sizeof(double));
        if (!col) return 1;
        for (int k = 0; k < 3; k++) {
          for (int r = 0; r < reps; r++) col[r] = ts[(size_t)r * 6 + (size_t)s * 3 + (size_t)k];
          qsort(col, (size_t)reps, sizeof *col, cmp);
          v[k] = 1e6 * (threads > 1 ? col[0] : col[reps / 2]);
        }
        free(col);
        printf("| %lld | %d | %s | %.0f | %.0f | %.0f | %.0f |\n", (long long)b, threads,
               s ? "oneDNN" : "OpenBLAS (SM_DNNL=0)", v[0], v[1], v[2], v[0] + v[1] + v[2]);
      }
      sm__train_free(t);
      free(x), free(w), free(g), free(dy), free(y), free(dx), free(ts);
    }
  return 0;
}
