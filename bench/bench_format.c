/* bench_format.c - timing driver for the format layer, run by bench/run.py (not a test).
 *
 *   bench_format read-vars PREFIX [RUNS]  open the bundle at PREFIX, read every tensor (CRCs
 *                                          verified by sm_bundle_read), free it; best of RUNS
 *   bench_format parse-pb FILE [RUNS]     sm_saved_model_parse of FILE's bytes, already in
 *                                          memory; best and median of RUNS, wall and CPU time
 *   bench_format unpack-raw FILE [RUNS]   protobuf-c's unpack alone (no pre-scan), with malloc and
 *                                          with a bump arena: what a faster parse could reach
 *   bench_format write-vars PREFIX N ELEMS  write a bundle of N float32 tensors of ELEMS each with
 *                                          our writer, for machines without TensorFlow
 *
 * Prints one JSON object on stdout so run.py can read the figures without scraping text. Each
 * read-vars run reopens the bundle, so the mapping is new and its page faults are counted, as a
 * program that loads a model once would pay them. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "savedmodel/bundle.h"
#include "savedmodel/format.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process: the parse of a large input runs on several threads. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int fail(sm_status *s, const char *what) {
  fprintf(stderr, "bench_format: %s: %s: %s\n", what, sm_code_name(sm_status_code(s)),
          sm_status_message(s));
  sm_status_free(s);
  return 1;
}

/* BENCH_PB_ONLY: built by `run.py --only pb`, so the parse can be timed before the bundle reader
 * is in the library. */
#ifndef BENCH_PB_ONLY
/* One pass over the bundle: open, read each tensor, touch nothing else. Fills bytes/tensors. */
static sm_status *read_all(const char *prefix, uint64_t *bytes, size_t *tensors) {
  sm_bundle *b = NULL;
  sm_status *s = sm_bundle_open(prefix, &b);
  *bytes = 0;
  *tensors = 0;
  if (s) return s;
  size_t n = sm_bundle_num_entries(b);
  for (size_t i = 0; i < n && !s; i++) {
    sm_bundle_entry e;
    sm_tensor *t = NULL;
    s = sm_bundle_entry_at(b, i, &e);
    if (!s) s = sm_bundle_read(b, e.key, &t);
    if (!s) {
      if (sm_tensor_dtype(t) == SM_STRING) {
        for (int64_t j = 0; j < sm_tensor_num_elements(t); j++) {
          size_t len = 0;
          sm_tensor_string(t, j, &len);
          *bytes += len;
        }
      } else {
        *bytes += sm_tensor_nbytes(t);
      }
      (*tensors)++;
    }
    sm_tensor_free(t);
  }
  sm_bundle_close(b);
  return s;
}

static int read_vars(const char *prefix, int runs) {
  double best = 1e30;
  double *times = calloc((size_t)runs, sizeof *times);
  uint64_t bytes = 0;
  size_t tensors = 0;
  if (!times) return 1;
  for (int r = 0; r < runs; r++) {
    double t0 = now_s();
    sm_status *s = read_all(prefix, &bytes, &tensors);
    double dt = now_s() - t0;
    if (s) {
      free(times);
      return fail(s, prefix);
    }
    times[r] = dt;
    if (dt < best) best = dt;
  }
  qsort(times, (size_t)runs, sizeof *times, cmp_double);
  printf("{\"mode\": \"read-vars\", \"prefix\": \"%s\", \"tensors\": %zu, \"bytes\": %llu, "
         "\"runs\": %d, \"best_s\": %.6f, \"median_s\": %.6f, \"best_gbps\": %.3f}\n",
         prefix, tensors, (unsigned long long)bytes, runs, best, times[runs / 2],
         (double)bytes / best / 1e9);
  free(times);
  return 0;
}

static int write_vars(const char *prefix, int n, int64_t elems) {
  sm_bundle_writer *w = NULL;
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, 1, &elems, &t);
  if (!s) s = sm_bundle_writer_open(prefix, &w);
  /* Distinct, non-constant contents per tensor (xorshift), like trained weights. */
  uint32_t x = 2463534242u;
  float *f = t ? sm_tensor_data(t) : NULL;
  for (int i = 0; i < n && !s; i++) {
    char key[64];
    for (int64_t j = 0; j < elems; j++) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      f[j] = (float)(x >> 8) / 16777216.0f;
    }
    snprintf(key, sizeof key, "v%d/.ATTRIBUTES/VARIABLE_VALUE", i);
    s = sm_bundle_writer_add(w, key, t);
  }
  if (!s) s = sm_bundle_writer_finish(w);
  sm_bundle_writer_free(w);
  sm_tensor_free(t);
  if (s) return fail(s, prefix);
  printf("{\"mode\": \"write-vars\", \"prefix\": \"%s\", \"tensors\": %d, \"elems\": %lld}\n", prefix, n,
         (long long)elems);
  return 0;
}
#else
static int write_vars(const char *prefix, int n, int64_t elems) {
  (void)n;
  (void)elems;
  fprintf(stderr, "bench_format: %s: built with BENCH_PB_ONLY, no write-vars\n", prefix);
  return 2;
}

static int read_vars(const char *prefix, int runs) {
  (void)runs;
  fprintf(stderr, "bench_format: %s: built with BENCH_PB_ONLY, no read-vars\n", prefix);
  return 2;
}
#endif

static int parse_pb(const char *path, int runs) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long len = 0;
  double *times = NULL, *cpu = NULL; /* wall and CPU (all threads) seconds per run */
  size_t nodes = 0, funcs = 0;
  int rc = 1;
  if (!f) {
    perror(path);
    return 1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    perror(path);
    goto out;
  }
  buf = malloc(len ? (size_t)len : 1);
  times = calloc((size_t)runs, sizeof *times);
  cpu = calloc((size_t)runs, sizeof *cpu);
  if (!buf || !times || !cpu || fread(buf, 1, (size_t)len, f) != (size_t)len) {
    fprintf(stderr, "bench_format: %s: cannot read\n", path);
    goto out;
  }
  for (int r = 0; r < runs; r++) {
    Tensorflow__SavedModel *sm = NULL;
    double t0 = now_s(), c0 = cpu_s();
    sm_status *s = sm_saved_model_parse(buf, (size_t)len, path, &sm);
    double dt = now_s() - t0;
    cpu[r] = cpu_s() - c0;
    if (s) {
      rc = fail(s, path);
      goto out;
    }
    times[r] = dt;
    if (r == 0) {
      /* Count what was parsed so the report can say how big the graph really was. */
      for (size_t m = 0; m < sm->n_meta_graphs; m++) {
        const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[m];
        if (!mg->graph_def) continue;
        nodes += mg->graph_def->n_node;
        if (mg->graph_def->library) funcs += mg->graph_def->library->n_function;
      }
    }
    sm_saved_model_free(sm); /* not timed: only the parse is compared with TensorFlow's */
  }
  qsort(times, (size_t)runs, sizeof *times, cmp_double);
  qsort(cpu, (size_t)runs, sizeof *cpu, cmp_double);
  printf("{\"mode\": \"parse-pb\", \"file\": \"%s\", \"bytes\": %ld, \"nodes\": %zu, "
         "\"functions\": %zu, \"runs\": %d, \"best_ms\": %.4f, \"median_ms\": %.4f, "
         "\"cpu_best_ms\": %.4f, \"cpu_median_ms\": %.4f}\n",
         path, len, nodes, funcs, runs, times[0] * 1e3, times[runs / 2] * 1e3, cpu[0] * 1e3,
         cpu[runs / 2] * 1e3);
  rc = 0;
out:
  free(times);
  free(cpu);
  free(buf);
  fclose(f);
  return rc;
}

/* A bump arena for protobuf-c: alloc moves a pointer, free does nothing, the arena is dropped
 * whole. Only for measuring; chunks come from malloc. */
typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t used, cap;
  max_align_t data[];
} arena_chunk;

static void *arena_alloc(void *ctx, size_t n) {
  arena_chunk **head = ctx;
  n = (n + 15) & ~(size_t)15;
  if (!*head || (*head)->cap - (*head)->used < n) {
    size_t cap = n > ((size_t)1 << 20) ? n : (size_t)1 << 20;
    arena_chunk *c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = *head;
    c->used = 0;
    c->cap = cap;
    *head = c;
  }
  void *p = (char *)(*head)->data + (*head)->used;
  (*head)->used += n;
  return p;
}

static void arena_free_one(void *ctx, void *p) {
  (void)ctx;
  (void)p;
}

static void arena_drop(arena_chunk *c) {
  while (c) {
    arena_chunk *n = c->next;
    free(c);
    c = n;
  }
}

static int unpack_raw(const char *path, int runs) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long len = 0;
  double *tm = NULL, *ta = NULL, *tf = NULL;
  int rc = 1;
  if (!f) {
    perror(path);
    return 1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) goto out;
  buf = malloc(len ? (size_t)len : 1);
  tm = calloc((size_t)runs, sizeof *tm);
  ta = calloc((size_t)runs, sizeof *ta);
  tf = calloc((size_t)runs, sizeof *tf);
  if (!buf || !tm || !ta || !tf || fread(buf, 1, (size_t)len, f) != (size_t)len) goto out;
  for (int r = 0; r < runs; r++) {
    double t0 = now_s();
    Tensorflow__SavedModel *sm = tensorflow__saved_model__unpack(NULL, (size_t)len, buf);
    double t1 = now_s();
    if (!sm) goto out;
    tensorflow__saved_model__free_unpacked(sm, NULL);
    tf[r] = now_s() - t1;
    tm[r] = t1 - t0;
    arena_chunk *head = NULL;
    ProtobufCAllocator a = {arena_alloc, arena_free_one, &head};
    t0 = now_s();
    sm = tensorflow__saved_model__unpack(&a, (size_t)len, buf);
    ta[r] = now_s() - t0;
    arena_drop(head);
    if (!sm) goto out;
  }
  qsort(tm, (size_t)runs, sizeof *tm, cmp_double);
  qsort(ta, (size_t)runs, sizeof *ta, cmp_double);
  qsort(tf, (size_t)runs, sizeof *tf, cmp_double);
  printf("{\"mode\": \"unpack-raw\", \"file\": \"%s\", \"bytes\": %ld, \"runs\": %d, "
         "\"malloc_best_ms\": %.4f, \"malloc_median_ms\": %.4f, \"free_median_ms\": %.4f, "
         "\"arena_best_ms\": %.4f, \"arena_median_ms\": %.4f}\n",
         path, len, runs, tm[0] * 1e3, tm[runs / 2] * 1e3, tf[runs / 2] * 1e3, ta[0] * 1e3, ta[runs / 2] * 1e3);
  rc = 0;
out:
  if (rc) fprintf(stderr, "bench_format: %s: cannot read or unpack\n", path);
  free(tm);
  free(ta);
  free(tf);
  free(buf);
  fclose(f);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "write-vars") == 0) {
    int n = atoi(argv[3]);
    long long elems = atoll(argv[4]);
    if (n < 1 || n > 10000 || elems < 1 || elems > ((long long)1 << 32)) {
      fprintf(stderr, "bench_format: write-vars wants N in 1..10000 and ELEMS in 1..2^32\n");
      return 2;
    }
    return write_vars(argv[2], n, (int64_t)elems);
  }
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s read-vars PREFIX [RUNS] | parse-pb FILE [RUNS] | unpack-raw FILE [RUNS] | "
                    "write-vars PREFIX N ELEMS\n",
            argv[0]);
    return 2;
  }
  int runs = argc == 4 ? atoi(argv[3]) : 5;
  if (runs < 1 || runs > 100000) {
    fprintf(stderr, "bench_format: RUNS must be 1..100000\n");
    return 2;
  }
  if (strcmp(argv[1], "read-vars") == 0) return read_vars(argv[2], runs);
  if (strcmp(argv[1], "parse-pb") == 0) return parse_pb(argv[2], runs);
  if (strcmp(argv[1], "unpack-raw") == 0) return unpack_raw(argv[2], runs);
  fprintf(stderr, "bench_format: unknown mode '%s'\n", argv[1]);
  return 2;
}
