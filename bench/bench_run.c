/* bench_run.c - timing driver for the runtime, run by bench/bench_runtime.py and bench_nets.py (not a test).
 *
 *   bench_run DIR TAG SIGNATURE BATCH RUNS [WARMUP [THREADS [OUTFILE]]]
 *
 * Loads DIR once with tag set TAG (comma-separated), feeds every float32 input of SIGNATURE a
 * tensor whose unknown dims are BATCH (leading) or 1 (others), filled with the same pattern the
 * Python side uses (element i = ((i * 37) % 101) / 101 - 0.5), runs WARMUP untimed calls and then
 * RUNS timed ones, each a whole sm_model_run (outputs allocated and freed). Prints one JSON object:
 * every timed call's latency in order (times_ms), load time, best/median/mean per-call latency, the
 * mean CPU time of the process per timed call (cpu_ms: every thread's, so load barely moves it),
 * throughput in examples per second, and the sum of the first output so the driver can check we
 * computed what TensorFlow computed. With OUTFILE, the
 * first output of the last call is also written there as raw float32 (native byte order), so the
 * driver can compare it element by element (bench/bench_loops.py does). SM_BENCH_DEVICE=gpu loads
 * with sm_load_options.device = SM_DEVICE_GPU. SM_BENCH_RSS=1 prints the process's resident memory
 * (VmRSS, VmHWM, RssFile of /proc/self/status) to stderr after the load and after each untimed warm-up
 * call, to see where a peak comes from. SM_BENCH_BURSTS=1: after the timed calls (and their JSON
 * line), reads counts N from stdin, one a line, and per line runs N more calls and prints their
 * times as one JSON list of ms (flushed), until EOF or N <= 0: bench/ab_bin.py --paired alternates
 * short bursts of loaded processes so that sides compare under the same load. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "savedmodel/model.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

static double cpu_s(void) { /* the process's CPU time, every thread's */
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* SM_BENCH_RSS: "bench_run: rss after WHAT I: VmRSS .., VmHWM .., RssFile .." on stderr (Linux). */
static void print_rss(const char *what, long i) {
  static int on = -1;
  if (on < 0) on = getenv("SM_BENCH_RSS") != NULL;
  if (!on) return;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256], rss[64] = "?", hwm[64] = "?", file[64] = "?";
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "VmRSS:", 6)) sscanf(line + 6, " %63[^\n]", rss);
    if (!strncmp(line, "VmHWM:", 6)) sscanf(line + 6, " %63[^\n]", hwm);
    if (!strncmp(line, "RssFile:", 8)) sscanf(line + 8, " %63[^\n]", file);
  }
  fclose(f);
  fprintf(stderr, "bench_run: rss after %s %ld: VmRSS %s, VmHWM %s, RssFile %s\n", what, i, rss, hwm, file);
}

static int fail(const char *what, sm_status *s) {
  fprintf(stderr, "bench_run: %s: %s\n", what, sm_status_message(s));
  sm_status_free(s);
  return 1;
}

/* SM_BENCH_BURSTS: bursts of calls on counts read from stdin (above). */
static int bursts(sm_model *m, const char *key, const char **in_alias, sm_tensor **in, int nin, int nout) {
  char line[64];
  sm_tensor *out[16];
  while (fgets(line, sizeof line, stdin)) {
    long n = atol(line);
    if (n <= 0) break;
    printf("[");
    for (long r = 0; r < n; r++) {
      double a = now_s();
      sm_status *s = sm_model_run(m, key, in_alias, in, nin, NULL, nout, out);
      double b = now_s();
      if (s) return fail("run", s);
      for (int j = 0; j < nout; j++) sm_tensor_free(out[j]);
      printf("%s%.4f", r ? ", " : "", (b - a) * 1e3);
    }
    printf("]\n");
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: bench_run DIR TAG SIGNATURE BATCH RUNS [WARMUP [THREADS [OUTFILE]]]\n");
    return 2;
  }
  const char *dir = argv[1], *key = argv[3];
  long batch = atol(argv[4]), runs = atol(argv[5]);
  long warmup = argc > 6 ? atol(argv[6]) : 3;
  int threads = argc > 7 ? atoi(argv[7]) : 0;
  const char *outfile = argc > 8 ? argv[8] : NULL;
  if (batch < 1 || runs < 1 || warmup < 0) {
    fprintf(stderr, "bench_run: BATCH and RUNS must be >= 1\n");
    return 2;
  }
  /* Split the tag set on commas. */
  char tagbuf[256];
  snprintf(tagbuf, sizeof tagbuf, "%s", argv[2]);
  const char *tags[16];
  int ntags = 0;
  for (char *p = strtok(tagbuf, ","); p && ntags < 16; p = strtok(NULL, ",")) tags[ntags++] = p;

  sm_load_options opts = {.num_threads = threads};
  const char *dev = getenv("SM_BENCH_DEVICE"); /* "gpu": sm_load_options.device (tools/gpu_check.sh) */
  if (dev && !strcmp(dev, "gpu")) opts.device = SM_DEVICE_GPU;
  sm_model *m = NULL;
  double t0 = now_s();
  sm_status *s = sm_model_load(dir, tags, ntags, &opts, &m);
  double load_s = now_s() - t0;
  if (s) return fail("load", s);
  print_rss("load", 0);

  const sm_tensor_info *ins, *outs;
  int nin, nout;
  if ((s = sm_model_signature_inputs(m, key, &ins, &nin))) return fail("signature inputs", s);
  if ((s = sm_model_signature_outputs(m, key, &outs, &nout))) return fail("signature outputs", s);
  if (nin > 16 || nout < 1 || nout > 16) {
    fprintf(stderr, "bench_run: %d inputs, %d outputs: unsupported here\n", nin, nout);
    return 1;
  }
  sm_tensor *in[16];
  const char *in_alias[16];
  for (int i = 0; i < nin; i++) {
    if (ins[i].dtype != SM_FLOAT || ins[i].rank < 1) {
      fprintf(stderr, "bench_run: input %s is not a float32 tensor of known rank\n", ins[i].alias);
      return 1;
    }
    int64_t dims[SM_MAX_RANK];
    for (int d = 0; d < ins[i].rank; d++) dims[d] = ins[i].dims[d] >= 0 ? ins[i].dims[d] : (d == 0 ? batch : 1);
    if ((s = sm_tensor_new(SM_FLOAT, ins[i].rank, dims, &in[i]))) return fail("input tensor", s);
    float *p = sm_tensor_data(in[i]);
    int64_t n = sm_tensor_num_elements(in[i]);
    for (int64_t e = 0; e < n; e++) p[e] = (float)((e * 37) % 101) / 101.0f - 0.5f;
    in_alias[i] = ins[i].alias;
  }
  sm_tensor *out[16];
  double sum = 0;
  /* SM_BENCH_WARM_MS / SM_BENCH_MIN_MS (bench_nets.py): after the WARMUP calls, more untimed calls until
   * the warm-up has taken WARM_MS, then at least as many timed calls as fill MIN_MS at the warm-up's
   * best call time (at most 100000), so a call of tens of microseconds is timed in steady state and
   * over enough calls that its median is not the scheduler's noise. */
  double warm_ms = getenv("SM_BENCH_WARM_MS") ? atof(getenv("SM_BENCH_WARM_MS")) : 0;
  double min_ms = getenv("SM_BENCH_MIN_MS") ? atof(getenv("SM_BENCH_MIN_MS")) : 0;
  if (warm_ms > 0 || min_ms > 0) {
    double w0 = now_s(), best = 1e30;
    for (long r = 0; r < warmup || (now_s() - w0) * 1e3 < warm_ms; r++) {
      double a = now_s();
      s = sm_model_run(m, key, in_alias, in, nin, NULL, nout, out);
      double b = now_s();
      if (s) return fail("run", s);
      for (int j = 0; j < nout; j++) sm_tensor_free(out[j]);
      if (b - a < best) best = b - a;
    }
    warmup = 0;
    if (min_ms > 0 && best > 0) {
      double want = min_ms * 1e-3 / best;
      if (want > 100000) want = 100000;
      if ((double)runs < want) runs = (long)want;
    }
  }
  double *times = malloc(sizeof(double) * (size_t)runs), cpu = 0;
  if (!times) return 1;
  for (long r = -warmup; r < runs; r++) {
    double a = now_s(), ca = cpu_s();
    s = sm_model_run(m, key, in_alias, in, nin, NULL, nout, out);
    double b = now_s();
    if (s) return fail("run", s);
    if (r < 0) print_rss("warm-up call", r + warmup + 1);
    if (r >= 0) times[r] = b - a, cpu += cpu_s() - ca;
    if (r == runs - 1 && sm_tensor_dtype(out[0]) == SM_FLOAT) {
      const float *p = sm_tensor_data(out[0]);
      for (int64_t e = 0; e < sm_tensor_num_elements(out[0]); e++) sum += p[e];
      if (outfile) {
        FILE *f = fopen(outfile, "wb");
        size_t n = (size_t)sm_tensor_num_elements(out[0]);
        if (!f || fwrite(p, sizeof(float), n, f) != n || fclose(f) != 0) {
          fprintf(stderr, "bench_run: cannot write %s\n", outfile);
          return 1;
        }
      }
    }
    for (int j = 0; j < nout; j++) sm_tensor_free(out[j]);
  }
  double total = 0;
  printf("{\"times_ms\": [");
  for (long r = 0; r < runs; r++) printf("%s%.4f", r ? ", " : "", times[r] * 1e3), total += times[r];
  printf("], ");
  qsort(times, (size_t)runs, sizeof(double), cmp_double);
  double median = times[runs / 2];
  printf("\"load_ms\": %.3f, \"best_ms\": %.4f, \"median_ms\": %.4f, \"mean_ms\": %.4f, \"runs\": %ld, "
         "\"batch\": %ld, \"throughput\": %.1f, \"first_output\": \"%s\", \"sum\": %.9g, \"cpu_ms\": %.4f}\n",
         load_s * 1e3, times[0] * 1e3, median * 1e3, total / (double)runs * 1e3, runs, batch,
         (double)batch / median, outs[0].alias, sum, cpu / (double)runs * 1e3);
  free(times);
  int rc = 0;
  if (getenv("SM_BENCH_BURSTS")) {
    fflush(stdout);
    rc = bursts(m, key, in_alias, in, nin, nout);
  }
  for (int i = 0; i < nin; i++) sm_tensor_free(in[i]);
  sm_model_free(m);
  return rc;
}
