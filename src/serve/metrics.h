/* metrics.h - the server's Prometheus counters (TF Serving's /monitoring/prometheus/metrics):
 * request counts per model and status, request latency histograms per model and API, and the
 * manager's load counters. One process-wide table, safe from many threads. */
#ifndef SM_SERVE_METRICS_H
#define SM_SERVE_METRICS_H
#include <stdint.h>

#include "serve/json_tensor.h"
#include "serve/manager.h"

/* One finished request: `model` may be "" (unparsed path), `api` "predict", "classify", "regress",
 * "status", "metadata" or "" ; `status` is TF's code name ("OK", "INVALID_ARGUMENT", ...). */
void sm__metrics_record(const char *model, const char *api, const char *status, uint64_t micros);
/* The text exposition format (version 0.0.4); m may be NULL. */
void sm__metrics_render(sm_jbuf *out, sm_manager *m);
/* Forgets every series (tests). */
void sm__metrics_reset(void);

#endif
