/* http.c - libmicrohttpd front end for the REST handler.
 *
 * One daemon with an internal thread pool (epoll where available): each pool thread accepts and
 * serves its own connections, so a request is parsed, run and answered on one thread with no hand-
 * offs. Bodies are gathered up to max_body_bytes; past that the request is answered 413 and the
 * rest of the body is read and dropped. Paths reach rest.c undecoded (TF Serving decodes the model
 * name and label itself). */
#include "serve/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "serve/metrics.h"

#define METRICS_PATH "/monitoring/prometheus/metrics"

struct sm_http {
  struct MHD_Daemon *d;
  sm_rest *rest;
  sm_manager *manager;
  size_t max_body;
  atomic_int inflight;
  int port;
};

typedef struct req {
  sm_jbuf body;
  int too_large;
  unsigned long long declared;
  struct timespec start;
} req;

static uint64_t since_us(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000u + (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000);
}

/* Hands `b` to MHD (it frees the buffer). */
static enum MHD_Result reply(struct MHD_Connection *c, int status, sm_jbuf *b, const char *type) {
  if (!b->p) sm__jbuf_puts(b, "");
  struct MHD_Response *r =
      b->p ? MHD_create_response_from_buffer(b->len, b->p, MHD_RESPMEM_MUST_FREE) : NULL;
  if (!r) {
    sm__jbuf_free(b);
    return MHD_NO;
  }
  memset(b, 0, sizeof *b);
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result error_reply(struct MHD_Connection *c, int status, const char *msg) {
  sm_jbuf b = {0};
  sm__json_write_error(&b, msg);
  return reply(c, status, &b, "application/json");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
  (void)version;
  sm_http *h = cls;
  req *q = *con_cls;
  if (!q) {
    q = calloc(1, sizeof *q);
    if (!q) return MHD_NO;
    clock_gettime(CLOCK_MONOTONIC, &q->start);
    *con_cls = q;
    atomic_fetch_add(&h->inflight, 1);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
      q->declared = strtoull(cl, NULL, 10);
      if (q->declared > h->max_body) {
        /* answered before the body is read; MHD then closes the connection */
        q->too_large = 1;
        char msg[160];
        snprintf(msg, sizeof msg, "Request body is larger than the limit of %zu bytes", h->max_body);
        sm__metrics_record("", "", "RESOURCE_EXHAUSTED", 0);
        return error_reply(c, 413, msg);
      }
    }
    return MHD_YES;
  }
  if (*upload_size) {
    if (!q->too_large) {
      if (q->body.len + *upload_size > h->max_body) {
        q->too_large = 1;
        sm__jbuf_free(&q->body);
      } else {
        sm__jbuf_put(&q->body, upload_data, *upload_size);
        if (q->body.oom) {
          q->too_large = 1;
          sm__jbuf_free(&q->body);
        }
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (q->too_large) {
    char msg[160];
    snprintf(msg, sizeof msg, "Request body is larger than the limit of %zu bytes", h->max_body);
    sm__metrics_record("", "", "RESOURCE_EXHAUSTED", since_us(&q->start));
    return error_reply(c, 413, msg);
  }
  if (!strcmp(url, METRICS_PATH)) {
    sm_jbuf b = {0};
    sm__metrics_render(&b, h->manager);
    return reply(c, 200, &b, "text/plain; version=0.0.4");
  }
  if (!sm__rest_path_is_api(url)) {
    char msg[300];
    snprintf(msg, sizeof msg, "Not found: %s %.200s", method, url);
    return error_reply(c, 404, msg);
  }
  sm_rest_response resp;
  sm__rest_handle(h->rest, method, url, q->body.p ? q->body.p : "", q->body.len, &resp);
  sm__metrics_record(resp.model_name, resp.api, resp.code, since_us(&q->start));
  return reply(c, resp.http_status, &resp.body, "application/json");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)c, (void)toe;
  sm_http *h = cls;
  req *q = *con_cls;
  if (!q) return;
  sm__jbuf_free(&q->body);
  free(q);
  *con_cls = NULL;
  atomic_fetch_sub(&h->inflight, 1);
}

/* Keep paths as sent: rest.c unescapes the model name and label as TF Serving does. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls, (void)c;
  return strlen(s);
}

sm_status *sm__http_start(const sm_http_options *o, sm_rest *rest, sm_manager *manager, sm_http **out) {
  *out = NULL;
  sm_http *h = calloc(1, sizeof *h);
  if (!h) return sm_status_new(SM_NO_MEMORY, "http: out of memory");
  h->rest = rest;
  h->manager = manager;
  h->max_body = o->max_body_bytes ? o->max_body_bytes : (size_t)64 << 20;
  atomic_init(&h->inflight, 0);
  int threads = o->num_threads;
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = (int)(n > 0 ? n : 1) * 4;
  }
  const char *addr = o->bind_addr && o->bind_addr[0] ? o->bind_addr : "0.0.0.0";
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", o->port);
  int rc = getaddrinfo(addr, port, &hints, &ai);
  if (rc || !ai) {
    free(h);
    return sm_status_new(SM_INVALID_ARGUMENT, "http: bad bind address '%s': %s", addr, gai_strerror(rc));
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
#ifdef __linux__
  flags |= MHD_USE_EPOLL;
#endif
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                          MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                          MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned)(o->idle_timeout_seconds > 0 ? o->idle_timeout_seconds : 60),
                          MHD_OPTION_END);
  int err = errno;
  freeaddrinfo(ai);
  /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: MHD's default (SO_REUSEADDR, no SO_REUSEPORT) lets a
   * restart rebind at once but refuses a port another server listens on, as TF Serving does. */
  if (!h->d) {
    free(h);
    return sm_status_new(SM_IO, "Failed to start HTTP Server at %s:%d: %s", addr, o->port,
                         err ? strerror(err) : "cannot listen (in use, or no permission)");
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = di ? di->port : o->port;
  *out = h;
  return NULL;
}

int sm__http_port(const sm_http *h) { return h ? h->port : 0; }

void sm__http_stop(sm_http *h, int grace_ms) {
  if (!h) return;
  MHD_socket s = MHD_quiesce_daemon(h->d);
  if (s != MHD_INVALID_SOCKET) close(s);
  for (int waited = 0; atomic_load(&h->inflight) > 0 && waited < grace_ms; waited += 10) {
    struct timespec t = {0, 10 * 1000 * 1000};
    nanosleep(&t, NULL);
  }
  MHD_stop_daemon(h->d);
  free(h);
}
