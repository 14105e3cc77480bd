/* http.h - the HTTP side of `savedmodel serve`: libmicrohttpd with a pool of worker threads, a
 * request size limit, /monitoring/prometheus/metrics, and a graceful stop (stop accepting, let
 * requests in flight finish, then close). Everything under /v1/ goes to rest.c. */
#ifndef SM_SERVE_HTTP_H
#define SM_SERVE_HTTP_H
#include <stddef.h>

#include "serve/manager.h"
#include "serve/rest.h"

typedef struct sm_http_options {
  const char *bind_addr;      /* numeric IPv4/IPv6 address; NULL: "0.0.0.0" */
  int port;                   /* 0: any free port (sm__http_port tells which) */
  int num_threads;            /* worker threads; <= 0: 4 per core, as TF Serving */
  size_t max_body_bytes;      /* larger bodies get 413; 0: 64 MiB */
  int idle_timeout_seconds;   /* idle connections are closed after this; 0: 60 */
} sm_http_options;

typedef struct sm_http sm_http;
/* rest and manager are borrowed and must outlive the server. */
sm_status *sm__http_start(const sm_http_options *o, sm_rest *rest, sm_manager *manager, sm_http **out);
int sm__http_port(const sm_http *h);
/* Stops accepting, waits up to grace_ms for requests in flight, closes everything, frees h. */
void sm__http_stop(sm_http *h, int grace_ms); /* NULL-safe */

#endif
