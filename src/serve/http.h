/* http.h - the HTTP side of `savedmodel serve`: libmicrohttpd with a pool of worker threads, a
 * request size limit, connection caps and deadlines (limits.h), /monitoring/prometheus/metrics,
 * and a graceful stop (stop accepting, let requests in flight finish, then close). Everything
 * under /v1/ goes to rest.c. */
#ifndef SM_SERVE_HTTP_H
#define SM_SERVE_HTTP_H
#include <stddef.h>
#include <stdint.h>

#include "serve/manager.h"
#include "serve/rest.h"

/* Zero fields take the defaults of serve/limits.h. */
typedef struct sm_http_options {
  const char *bind_addr;      /* numeric IPv4/IPv6 address; NULL: "0.0.0.0" */
  int port;                   /* 0: any free port (sm__http_port tells which) */
  int num_threads;            /* worker threads; <= 0: 4 per core, as TF Serving */
  size_t max_body_bytes;      /* larger bodies get 413 */
  int idle_timeout_seconds;   /* idle connections are closed after this */
  int max_connections;        /* open connections in all (full: the longest idle is closed) */
  int max_connections_per_client; /* from one client address (likewise) */
  double header_timeout_seconds;  /* a request header must arrive within this */
} sm_http_options;

typedef struct sm_http sm_http;
/* rest and manager are borrowed and must outlive the server. */
sm_status *sm__http_start(const sm_http_options *o, sm_rest *rest, sm_manager *manager, sm_http **out);
int sm__http_port(const sm_http *h);
/* Stops accepting, waits up to grace_ms for requests in flight, closes everything, frees h. */
void sm__http_stop(sm_http *h, int grace_ms); /* NULL-safe */

/* Connections open now, and closed so far to make room (evicted), refused (full of busy ones),
 * or closed for waiting past the header deadline / idle timeout (timed_out). */
typedef struct sm_http_counts {
  int open;
  uint64_t evicted, refused, timed_out;
} sm_http_counts;
sm_http_counts sm__http_counts(sm_http *h);

#endif
