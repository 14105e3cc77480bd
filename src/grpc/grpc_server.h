/* grpc_server.h - the gRPC side of `savedmodel serve` (--port, --grpc_socket_path): gRPC core's C
 * API with one completion queue, registered methods and a pool of worker threads; each call's bytes go to serve/grpc_api.c. Built only when CMake finds libgrpc
 * (SM_HAVE_GRPC); the core library never links it. */
#ifndef SM_GRPC_SERVER_H
#define SM_GRPC_SERVER_H
#include <stdint.h>

#include "serve/rest.h"

typedef struct sm_grpc_server_options {
  const char *addr;          /* "0.0.0.0:8500", "[::]:0", "unix:/path/sock" */
  const char *socket_path;   /* a second listener on this unix socket (NULL: none) */
  int num_threads;           /* workers; <= 0: 4 per core */
  int64_t max_receive_bytes; /* larger requests: RESOURCE_EXHAUSTED; <= 0: INT32_MAX, TF Serving's */
  int64_t max_send_bytes;    /* <= 0: unlimited */
  int calls_may_block;       /* runs wait on other threads (server-side batching): when every polling
                              * worker is running a call, wake an idle one to poll */
} sm_grpc_server_options;

typedef struct sm_grpc_server sm_grpc_server;
/* rest is borrowed and must outlive the server. A port in use is refused (no SO_REUSEPORT):
 * FAILED_PRECONDITION "Failed to BuildAndStart gRPC server: ...: Address already in use". */
sm_status *sm__grpc_server_start(const sm_grpc_server_options *o, sm_rest *rest, sm_grpc_server **out);
int sm__grpc_server_port(const sm_grpc_server *g); /* the TCP port bound (0 for a unix socket) */
/* Stops accepting, lets calls in flight finish for up to grace_ms, cancels the rest, frees g. */
void sm__grpc_server_stop(sm_grpc_server *g, int grace_ms); /* NULL-safe */

#endif
