/* bench_peak.c - this machine's attainable float32 GEMM rate (not a test): times oneDNN's
 * dnnl_sgemm (row-major C = A B) on the shapes given and prints one JSON line per shape with
 * the best and median GFLOP/s (2*M*N*K / wall time) and GFLOP per CPU second (the process's CPU
 * time over all calls: what a loaded machine barely moves; x threads = the rate on idle cores).
 * Threads are oneDNN's (OpenMP: OMP_NUM_THREADS).
 * Built and run by bench/roofline.py; usage: bench_peak RUNS M,N,K [M,N,K ...] */
#define _POSIX_C_SOURCE 200809L
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clk(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now(void) { return clk(CLOCK_MONOTONIC); }

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RUNS M,N,K [M,N,K ...]\n", argv[0]);
    return 2;
  }
  int runs = atoi(argv[1]);
  if (runs < 1 || runs > 100000) return 2;
  for (int s = 2; s < argc; s++) {
    long m, n, k;
    if (sscanf(argv[s], "%ld,%ld,%ld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1 || m * k > (1L << 28) ||
        k * n > (1L << 28) || m * n > (1L << 28)) {
      fprintf(stderr, "bad shape %s\n", argv[s]);
      return 2;
    }
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!a || !b || !c || !t) return 1;
    for (long i = 0; i < m * k; i++) a[i] = (float)(i % 13) * 0.01f;
    for (long i = 0; i < k * n; i++) b[i] = (float)(i % 7) * 0.01f;
    double cpu0 = 0;
    for (int r = -3; r < runs; r++) {
      if (r == 0) cpu0 = clk(CLOCK_PROCESS_CPUTIME_ID);
      double t0 = now();
      if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) != dnnl_success) return 1;
      if (r >= 0) t[r] = now() - t0;
    }
    double cpu = clk(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    qsort(t, (size_t)runs, sizeof(double), cmp);
    double fl = 2.0 * (double)m * (double)n * (double)k;
    printf("{\"m\": %ld, \"n\": %ld, \"k\": %ld, \"best_gflops\": %.2f, \"median_gflops\": %.2f, \"median_ms\": %.4f, \"gflop_per_cpu_s\": %.2f}\n",
           m, n, k, fl / t[0] * 1e-9, fl / t[runs / 2] * 1e-9, t[runs / 2] * 1e3,
           fl * runs / cpu * 1e-9);
    free(a), free(b), free(c), free(t);
  }
  return 0;
}
