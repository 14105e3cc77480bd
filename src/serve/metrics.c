/* metrics.c - Prometheus counters for the REST server, named as TF Serving exports them
 * (":tensorflow:serving:request_count", ":tensorflow:serving:request_latency"). A small table
 * under one mutex: the number of distinct (model, api, status) series is small and bounded. */
#include "serve/metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERIES 1024
#define NBUCKETS 14

/* microsecond bucket bounds, as TF Serving's request_latency buckets (exponential) */
static const uint64_t bounds[NBUCKETS] = {10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000,
                                           3000000, 10000000, 30000000};

typedef struct series {
  char *model, *api, *status;
  uint64_t count;
  uint64_t buckets[NBUCKETS + 1];
  uint64_t sum;
} series;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static series table[MAX_SERIES];
static int nseries;
static uint64_t dropped;

static int same(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }

static char *dup_bounded(const char *s) {
  size_t n = strnlen(s ? s : "", 200);
  char *d = malloc(n + 1);
  if (d) memcpy(d, s ? s : "", n), d[n] = 0;
  return d;
}

void sm__metrics_record(const char *model, const char *api, const char *status, uint64_t micros) {
  pthread_mutex_lock(&mu);
  series *s = NULL;
  for (int i = 0; i < nseries && !s; i++)
    if (same(table[i].model, model) && same(table[i].api, api) && same(table[i].status, status)) s = &table[i];
  if (!s && nseries < MAX_SERIES) {
    s = &table[nseries];
    s->model = dup_bounded(model);
    s->api = dup_bounded(api);
    s->status = dup_bounded(status);
    if (!s->model || !s->api || !s->status) {
      free(s->model), free(s->api), free(s->status);
      memset(s, 0, sizeof *s);
      s = NULL;
    } else {
      nseries++;
    }
  }
  if (s) {
    s->count++;
    s->sum += micros;
    int b = 0;
    while (b < NBUCKETS && micros > bounds[b]) b++;
    s->buckets[b]++;
  } else {
    dropped++;
  }
  pthread_mutex_unlock(&mu);
}

void sm__metrics_reset(void) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nseries; i++) free(table[i].model), free(table[i].api), free(table[i].status);
  memset(table, 0, sizeof table);
  nseries = 0;
  dropped = 0;
  pthread_mutex_unlock(&mu);
}

/* A label value with Prometheus' escapes. */
static void label(sm_jbuf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\\') sm__jbuf_puts(b, "\\\\");
    else if (*s == '"') sm__jbuf_puts(b, "\\\"");
    else if (*s == '\n') sm__jbuf_puts(b, "\\n");
    else sm__jbuf_put(b, s, 1);
  }
}

void sm__metrics_render(sm_jbuf *out, sm_manager *m) {
  char num[64];
  pthread_mutex_lock(&mu);
  sm__jbuf_puts(out, "# TYPE :tensorflow:serving:request_count counter\n");
  /* counts summed over api per (model, status), as TF Serving's request_count has no api label */
  for (int i = 0; i < nseries; i++) {
    int first = 1;
    for (int j = 0; j < i && first; j++)
      if (same(table[j].model, table[i].model) && same(table[j].status, table[i].status)) first = 0;
    if (!first) continue;
    uint64_t c = 0;
    for (int j = i; j < nseries; j++)
      if (same(table[j].model, table[i].model) && same(table[j].status, table[i].status)) c += table[j].count;
    sm__jbuf_puts(out, ":tensorflow:serving:request_count{model_name=\"");
    label(out, table[i].model);
    sm__jbuf_puts(out, "\",status=\"");
    label(out, table[i].status);
    snprintf(num, sizeof num, "\"} %" PRIu64 "\n", c);
    sm__jbuf_puts(out, num);
  }
  sm__jbuf_puts(out, "# TYPE :tensorflow:serving:request_latency histogram\n");
  for (int i = 0; i < nseries; i++) {
    if (strcmp(table[i].status, "OK")) continue; /* TF Serving records latency of successful requests */
    uint64_t cum = 0;
    for (int b = 0; b <= NBUCKETS; b++) {
      cum += table[i].buckets[b];
      sm__jbuf_puts(out, ":tensorflow:serving:request_latency_bucket{model_name=\"");
      label(out, table[i].model);
      sm__jbuf_puts(out, "\",API=\"");
      label(out, table[i].api);
      sm__jbuf_puts(out, "\",entrypoint=\"REST\",le=\"");
      if (b < NBUCKETS) snprintf(num, sizeof num, "%" PRIu64, bounds[b]);
      else snprintf(num, sizeof num, "+Inf");
      sm__jbuf_puts(out, num);
      snprintf(num, sizeof num, "\"} %" PRIu64 "\n", cum);
      sm__jbuf_puts(out, num);
    }
    for (int k = 0; k < 2; k++) {
      sm__jbuf_puts(out, k ? ":tensorflow:serving:request_latency_count{model_name=\""
                          : ":tensorflow:serving:request_latency_sum{model_name=\"");
      label(out, table[i].model);
      sm__jbuf_puts(out, "\",API=\"");
      label(out, table[i].api);
      snprintf(num, sizeof num, "\",entrypoint=\"REST\"} %" PRIu64 "\n", k ? table[i].count : table[i].sum);
      sm__jbuf_puts(out, num);
    }
  }
  uint64_t lost = dropped;
  pthread_mutex_unlock(&mu);
  if (lost) {
    snprintf(num, sizeof num, "%" PRIu64 "\n", lost);
    sm__jbuf_puts(out, "# TYPE savedmodel_metrics_dropped_total counter\nsavedmodel_metrics_dropped_total ");
    sm__jbuf_puts(out, num);
  }
  if (m) {
    sm_manager_counts c = sm__manager_counts_get(m);
    snprintf(num, sizeof num, "%" PRIu64 "\n", c.loads);
    sm__jbuf_puts(out, "# TYPE :tensorflow:serving:model_loads_total counter\n:tensorflow:serving:model_loads_total ");
    sm__jbuf_puts(out, num);
    snprintf(num, sizeof num, "%" PRIu64 "\n", c.load_failures);
    sm__jbuf_puts(out, "# TYPE :tensorflow:serving:model_load_failures_total counter\n"
                      ":tensorflow:serving:model_load_failures_total ");
    sm__jbuf_puts(out, num);
    snprintf(num, sizeof num, "%" PRIu64 "\n", c.unloads);
    sm__jbuf_puts(out, "# TYPE :tensorflow:serving:model_unloads_total counter\n:tensorflow:serving:model_unloads_total ");
    sm__jbuf_puts(out, num);
  }
}
