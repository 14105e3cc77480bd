/* bench_mm_shapes.c - one thread's piece of a Dense product (issue #15, the Transformer's FFN at
 * batch 1): oneDNN's matmul primitive (sm__dnnl_matmul, no pool: one piece) against OpenBLAS's
 * sgemm followed by the library's bias + activation pass (sm__nn_bias_act_f32), on the pieces the
 * pool hands each thread (rows x K x N), with and without the erf GELU. Interleaved rounds; prints
 * the best and the median us per product. Not a test and not built by CMake. From the repo root
 * after a build (build/gen holds the generated protobuf headers):
 *
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -Ibuild/gen bench/bench_mm_shapes.c \
 *      build/libsavedmodel.a $(pkg-config --libs libprotobuf-c openblas zlib) -lsnappy -lpthread \
 *      -lm -ldl -o build/bench_mm_shapes && OPENBLAS_NUM_THREADS=1 build/bench_mm_shapes [REPS]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"
#include "ops/nn_raw.h"

typedef struct shape {
  const char *what;
  int64_t m, k, n;
  int act;
} shape;

static const shape shapes[] = {
    {"FFN up + GELU (b1 piece)", 64, 256, 1024, SM_NN_ACT_GELU_ERF},
    {"FFN up, no act", 64, 256, 1024, SM_NN_ACT_NONE},
    {"FFN down", 64, 1024, 256, SM_NN_ACT_NONE},
    {"q/k/v/out", 64, 256, 256, SM_NN_ACT_NONE},
    {"FFN up, 32 rows", 32, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up, 128 rows", 128, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up, 256 rows", 256, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up, 384 rows", 384, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up, 512 rows", 512, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up, half the columns", 128, 256, 512, SM_NN_ACT_NONE},
    {"K 512 N 2048", 64, 512, 2048, SM_NN_ACT_NONE},
    {"K 768 N 3072 (BERT-base)", 64, 768, 3072, SM_NN_ACT_NONE},
    {"K 3072 N 768 (BERT-base)", 64, 3072, 768, SM_NN_ACT_NONE},
    {"K 64 N 256", 64, 64, 256, SM_NN_ACT_NONE},
    {"K 128 N 512", 64, 128, 512, SM_NN_ACT_NONE},
    {"K 32 N 128", 64, 32, 128, SM_NN_ACT_NONE},
    {"K 256 N 384", 64, 256, 384, SM_NN_ACT_NONE},
    {"16 rows K 2048 N 1000", 16, 2048, 1000, SM_NN_ACT_NONE},
    {"16 rows K 256 N 1024", 16, 256, 1024, SM_NN_ACT_NONE},
    {"FFN up + GELU (b16 piece)", 1024, 256, 1024, SM_NN_ACT_GELU_ERF},
    {"FFN down (b16 piece)", 1024, 1024, 256, SM_NN_ACT_NONE},
};
#define NS (sizeof shapes / sizeof *shapes)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 30;
  if (reps < 1 || reps > 1000) reps = 30;
  if (!sm__dnnl_enabled()) {
    fprintf(stderr, "oneDNN not loaded\n");
    return 1;
  }
  sm__dnnl_cache *cache = NULL;
  sm_status *st = sm__dnnl_cache_new(&cache);
  if (st || !cache) {
    fprintf(stderr, "no oneDNN\n");
    return 1;
  }
  double *t = malloc(sizeof *t * (size_t)reps * 2 * NS);
  for (size_t s = 0; s < NS; s++) {
    const shape *h = &shapes[s];
    float *a = malloc(sizeof *a * (size_t)(h->m * h->k)), *b = malloc(sizeof *b * (size_t)(h->k * h->n));
    float *bias = malloc(sizeof *bias * (size_t)h->n), *c1 = malloc(sizeof *c1 * (size_t)(h->m * h->n));
    float *c2 = malloc(sizeof *c2 * (size_t)(h->m * h->n));
    for (int64_t i = 0; i < h->m * h->k; i++) a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < h->k * h->n; i++) b[i] = (float)((i * 104729) % 1000) / 20000.0f - 0.025f;
    for (int64_t i = 0; i < h->n; i++) bias[i] = (float)(i % 17) / 100.0f;
    for (int r = 0; r < reps + 3; r++) {
      for (int way = 0; way < 2; way++) {
        double t0 = now_us();
        if (way == 0) {
          sm__dnnl_mm_args da = {h->m, h->n, h->k, h->k, 0, 0, a, b, bias, 12345 + s, c1, h->act, 0.0f};
          int declined = 0;
          sm_status *e = sm__dnnl_matmul(cache, &da, NULL, &declined);
          if (e || declined) {
            fprintf(stderr, "oneDNN declined\n");
            return 1;
          }
        } else {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)h->m, (int)h->n, (int)h->k, 1.0f, a, (int)h->k,
                      b, (int)h->n, 0.0f, c2, (int)h->n);
          sm__nn_bias_act_f32(c2, c2, h->m, h->n, bias, h->act, 0.0f);
        }
        if (r >= 3) t[(s * 2 + (size_t)way) * (size_t)reps + (size_t)(r - 3)] = now_us() - t0;
      }
    }
    double md = 0;
    for (int64_t i = 0; i < h->m * h->n; i++) {
      double d = c1[i] - c2[i];
      if (d < 0) d = -d;
      if (d > md) md = d;
    }
    printf("%-28s %5lldx%5lldx%5lld", h->what, (long long)h->m, (long long)h->k, (long long)h->n);
    for (int way = 0; way < 2; way++) {
      double *v = t + (s * 2 + (size_t)way) * (size_t)reps;
      qsort(v, (size_t)reps, sizeof *v, cmp);
      printf("  %s best %7.1f median %7.1f us", way ? "openblas+ep" : "onednn", v[0], v[reps / 2]);
    }
    printf("  max|diff| %.2g\n", md);
    free(a), free(b), free(bias), free(c1), free(c2);
  }
  free(t);
  sm__dnnl_cache_free(cache);
  return 0;
}
