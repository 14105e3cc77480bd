/* http.c - libmicrohttpd front end for the REST handler.
 *
 * One daemon with an internal thread pool (epoll where available): each pool thread accepts and
 * serves its own connections, so a request is parsed, run and answered on one thread with no hand-
 * offs; but with --enable_batching a predict is parked: its connection is suspended (MHD's
 * suspend/resume) while its batch forms and runs, and the batch's end resumes it to be answered,
 * so a request waiting for a batch holds no thread (and no other connection of that thread waits
 * behind it). Bodies are gathered up to max_body_bytes; past that the request is answered 413 and the
 * rest of the body is read and dropped. Paths reach rest.c undecoded (TF Serving decodes the model
 * name and label itself). A request whose Content-Length headers disagree, or that has both
 * Content-Length and Transfer-Encoding, is answered 400 before its body is read.
 *
 * Connections (limits.h): every open connection is listed here (MHD's connection notifications),
 * in one of three states: waiting for a request header (new, or kept alive after a request),
 * busy with a request, or being closed. A reaper thread closes connections that have waited past
 * the header deadline (new ones) or the idle timeout (kept-alive ones), however slowly they drip
 * bytes. When the total or a client address's cap is reached, a new connection closes the
 * longest-idle kept-alive connection (of that client, for its cap), else the oldest still
 * sending a header, else it is refused: a flood of idle or slow connections cannot lock others
 * out. Closing is shutdown(2) on the socket, under the list's lock; MHD reports the connection
 * closed (and drops it from the list) before it closes the descriptor, so the descriptor shut down
 * is always still the connection's. */
#include "serve/http.h"

#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "serve/limits.h"
#include "serve/metrics.h"

#define METRICS_PATH "/monitoring/prometheus/metrics"

enum { C_WAITING, C_BUSY, C_CLOSING };

/* One open connection. */
typedef struct conn {
  struct conn *prev, *next;
  int fd;
  int state;         /* C_* */
  int had_request;   /* waiting means kept alive, not new */
  int64_t since_us;  /* when it started waiting */
  unsigned char addr[16];
  uint8_t family;
} conn;

struct sm_http {
  struct MHD_Daemon *d;
  sm_rest *rest;
  sm_manager *manager;
  size_t max_body;
  atomic_int inflight;
  atomic_int parked; /* suspended connections: MHD must not be stopped while there are any */
  int port;
  /* connections: cmu guards the list and the counts */
  pthread_mutex_t cmu;
  pthread_cond_t ccv; /* wakes the reaper to stop */
  conn *head, *tail;
  int nconn;          /* not closing */
  int max_conn, max_per_client;
  int64_t header_timeout_us, idle_timeout_us;
  int stop, reaper_started;
  pthread_t reaper;
  uint64_t evicted, refused, timed_out;
};

typedef struct req {
  sm_jbuf body;
  int too_large;
  unsigned long long declared;
  struct timespec start;
  /* A predict that goes to the batcher is parked: its connection is suspended (holding no thread)
   * until the batch has run, then resumed and answered (sm__rest_start / sm__rest_finish). */
  struct MHD_Connection *conn;
  int parked;
  sm_rest_pending *pending;
  sm_rest_response resp;
} req;

static int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

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

/* ==================================================================== connections ==== */

static int same_client(const conn *a, const conn *b) {
  return a->family == b->family && !memcmp(a->addr, b->addr, sizeof a->addr);
}

/* Under cmu: closes c (MHD then reports it closed and it leaves the list). */
static void conn_close(sm_http *h, conn *c) {
  if (c->state == C_CLOSING) return;
  c->state = C_CLOSING;
  h->nconn--;
  shutdown(c->fd, SHUT_RDWR);
}

/* Under cmu: the connection to close for room, among those of `like`'s client (or all): the
 * longest-idle kept-alive one, else the oldest one still sending its first header. */
static conn *pick_victim(sm_http *h, const conn *like) {
  conn *idle = NULL, *fresh = NULL;
  for (conn *c = h->head; c; c = c->next) {
    if (c->state != C_WAITING || c == like || (like && !same_client(c, like))) continue;
    conn **best = c->had_request ? &idle : &fresh;
    if (!*best || c->since_us < (*best)->since_us) *best = c;
  }
  return idle ? idle : fresh;
}

static void conn_started(sm_http *h, struct MHD_Connection *mc, void **ctx) {
  conn *c = calloc(1, sizeof *c);
  const union MHD_ConnectionInfo *fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *ad = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!c || !fd) { /* cannot be tracked: not served */
    free(c);
    if (fd) shutdown(fd->connect_fd, SHUT_RDWR);
    return;
  }
  c->fd = fd->connect_fd;
  const struct sockaddr *sa = ad ? ad->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET) {
    memcpy(c->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    c->family = AF_INET;
  } else if (sa && sa->sa_family == AF_INET6) {
    memcpy(c->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
    c->family = AF_INET6;
  }
  c->since_us = now_us();
  pthread_mutex_lock(&h->cmu);
  int per = 0;
  for (conn *o = h->head; o; o = o->next) per += o->state != C_CLOSING && same_client(o, c);
  int full_client = per >= h->max_per_client, full = h->nconn >= h->max_conn;
  conn *victim = full_client ? pick_victim(h, c) : full ? pick_victim(h, NULL) : NULL;
  if (victim) {
    conn_close(h, victim);
    h->evicted++;
  }
  c->prev = h->tail;
  if (h->tail) h->tail->next = c;
  else h->head = c;
  h->tail = c;
  h->nconn++;
  if ((full_client || full) && !victim) { /* everyone is busy: this one waits outside */
    conn_close(h, c);
    h->refused++;
  }
  pthread_mutex_unlock(&h->cmu);
  *ctx = c;
}

static void conn_closed(sm_http *h, void **ctx) {
  conn *c = *ctx;
  if (!c) return;
  pthread_mutex_lock(&h->cmu);
  if (c->state != C_CLOSING) h->nconn--;
  if (c->prev) c->prev->next = c->next;
  else h->head = c->next;
  if (c->next) c->next->prev = c->prev;
  else h->tail = c->prev;
  pthread_mutex_unlock(&h->cmu);
  free(c);
  *ctx = NULL;
}

static void notify_connection(void *cls, struct MHD_Connection *mc, void **ctx,
                              enum MHD_ConnectionNotificationCode toe) {
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) conn_started(cls, mc, ctx);
  else conn_closed(cls, ctx);
}

/* A request's header arrived (busy = 1) or its answer went out (busy = 0). */
static void conn_mark(sm_http *h, struct MHD_Connection *mc, int busy) {
  const union MHD_ConnectionInfo *i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  conn *c = i ? i->socket_context : NULL;
  if (!c) return;
  pthread_mutex_lock(&h->cmu);
  if (c->state != C_CLOSING) {
    c->state = busy ? C_BUSY : C_WAITING;
    if (!busy) {
      c->had_request = 1;
      c->since_us = now_us();
    }
  }
  pthread_mutex_unlock(&h->cmu);
}

/* Closes connections that waited too long for a request header, a few times a second. */
static void *reaper_main(void *arg) {
  sm_http *h = arg;
  int64_t step = h->header_timeout_us / 4;
  if (step > 250000) step = 250000;
  if (step < 10000) step = 10000;
  pthread_mutex_lock(&h->cmu);
  while (!h->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + step * 1000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(&h->ccv, &h->cmu, &ts);
    int64_t now = now_us();
    for (conn *c = h->head; c; c = c->next) {
      if (c->state != C_WAITING) continue;
      int64_t limit = c->had_request ? h->idle_timeout_us : h->header_timeout_us;
      if (now - c->since_us > limit) {
        conn_close(h, c);
        h->timed_out++;
      }
    }
  }
  pthread_mutex_unlock(&h->cmu);
  return NULL;
}

/* libmicrohttpd's messages, at most 20 a minute: one line per connection closed under a flood
 * would itself be a flood (of the log). */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  static atomic_long window, count;
  long now = (long)(now_us() / 60000000);
  if (atomic_exchange(&window, now) != now) atomic_store(&count, 0);
  long n = atomic_fetch_add(&count, 1);
  if (n < 20) {
    fputs("savedmodel serve: http: ", stderr);
    vfprintf(stderr, fmt, ap);
  } else if (n == 20) {
    fputs("savedmodel serve: http: more messages this minute are not shown\n", stderr);
  }
}

/* ============================================================ request strictness ==== */

typedef struct header_scan {
  int ncl, differ, te;
  const char *cl;
} header_scan;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  header_scan *hs = cls;
  if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
    if (hs->ncl++ && strcmp(hs->cl, value ? value : "")) hs->differ = 1;
    hs->cl = value ? value : "";
  } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
    hs->te = 1;
  }
  return MHD_YES;
}

/* NULL, or why the request's framing is ambiguous (a request smuggling vector): TF Serving's
 * HTTP server refuses these too. */
static const char *framing_error(struct MHD_Connection *c) {
  header_scan hs = {0};
  MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, &hs);
  if (hs.differ) return "Malformed request: Content-Length headers with different values";
  if (hs.ncl && hs.te) return "Malformed request: both Content-Length and Transfer-Encoding";
  return NULL;
}

static enum MHD_Result first_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind, (void)value;
  *(const char **)cls = key;
  return MHD_NO; /* the first is enough */
}

/* libmicrohttpd hands the URL over as a C string, so a NUL sent in the request line would cut it
 * and the cut path would be served. It parses the request line in place: the URL's bytes run up
 * to the NUL it writes over the space before the HTTP version, and the only NUL it writes in
 * between is over a '?' (just before the first argument's name). Any other is the client's.
 * Where the version is not in that buffer (another libmicrohttpd), nothing is concluded. */
static int url_has_nul(struct MHD_Connection *c, const char *url, const char *version) {
  if (!version || version <= url || version - url > 65536 || version[-1] != '\0') return 0;
  const char *end = version - 1, *cut = url + strlen(url);
  if (cut >= end) return 0;
  const char *arg = NULL;
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, first_arg, &arg);
  if (arg && arg > url && arg <= end) return cut < arg - 1;
  return 1;
}

/* A parked request's answer is ready (called from a batch thread, or from sm__rest_start): MHD
 * calls handle() again on the connection's own thread. q may be gone as soon as this returns. */
static void resume_parked(void *arg) {
  req *q = arg;
  MHD_resume_connection(q->conn);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
  sm_http *h = cls;
  req *q = *con_cls;
  if (!q) {
    q = calloc(1, sizeof *q);
    if (!q) return MHD_NO;
    clock_gettime(CLOCK_MONOTONIC, &q->start);
    *con_cls = q;
    atomic_fetch_add(&h->inflight, 1);
    conn_mark(h, c, 1);
    const char *bad = url_has_nul(c, url, version) ? "Malformed request: the URL has a NUL byte" : framing_error(c);
    if (bad) {
      q->too_large = -1; /* answered: the body is dropped */
      sm__metrics_record("", "", "INVALID_ARGUMENT", 0);
      return error_reply(c, 400, bad);
    }
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
      /* the body in one buffer of its size, not doubled up to twice it */
      if (q->declared) sm__jbuf_reserve_exact(&q->body, (size_t)q->declared);
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
  if (q->too_large < 0) return MHD_YES; /* answered when the header came */
  if (q->too_large) {
    char msg[160];
    snprintf(msg, sizeof msg, "Request body is larger than the limit of %zu bytes", h->max_body);
    sm__metrics_record("", "", "RESOURCE_EXHAUSTED", since_us(&q->start));
    return error_reply(c, 413, msg);
  }
  if (!strcmp(url, METRICS_PATH)) {
    sm_jbuf b = {0};
    sm__metrics_render(&b, h->manager);
    sm_http_counts k = sm__http_counts(h);
    char text[640];
    snprintf(text, sizeof text,
             "# TYPE savedmodel_http_connections_open gauge\n"
             "savedmodel_http_connections_open %d\n"
             "# TYPE savedmodel_http_connections_closed_total counter\n"
             "savedmodel_http_connections_closed_total{reason=\"evicted\"} %llu\n"
             "savedmodel_http_connections_closed_total{reason=\"refused\"} %llu\n"
             "savedmodel_http_connections_closed_total{reason=\"timed_out\"} %llu\n",
             k.open, (unsigned long long)k.evicted, (unsigned long long)k.refused, (unsigned long long)k.timed_out);
    sm__jbuf_puts(&b, text);
    return reply(c, 200, &b, "text/plain; version=0.0.4");
  }
  if (!sm__rest_path_is_api(url)) {
    char msg[300];
    snprintf(msg, sizeof msg, "Not found: %s %.200s", method, url);
    return error_reply(c, 404, msg);
  }
  if (q->parked) { /* resumed: its batch has run */
    q->parked = 0;
    atomic_fetch_sub(&h->parked, 1);
    if (q->pending) sm__rest_finish(q->pending, &q->resp);
    q->pending = NULL;
    sm__metrics_record(q->resp.model_name, q->resp.api, q->resp.code, since_us(&q->start));
    return reply(c, q->resp.http_status, &q->resp.body, "application/json");
  }
  if (sm__rest_can_park(h->rest, method, url)) {
    /* Suspended before the request is handed over: its wake-up (resume) may come at once. */
    q->conn = c;
    q->parked = 1;
    atomic_fetch_add(&h->parked, 1);
    MHD_suspend_connection(c);
    q->pending = sm__rest_start(h->rest, method, url, q->body.p ? q->body.p : "", q->body.len, resume_parked, q,
                                &q->resp);
    return MHD_YES;
  }
  sm_rest_response resp;
  sm__rest_handle(h->rest, method, url, q->body.p ? q->body.p : "", q->body.len, &resp);
  sm__metrics_record(resp.model_name, resp.api, resp.code, since_us(&q->start));
  return reply(c, resp.http_status, &resp.body, "application/json");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)toe;
  sm_http *h = cls;
  req *q = *con_cls;
  if (!q) return;
  if (q->parked) { /* resumed, but closed before handle() answered it */
    atomic_fetch_sub(&h->parked, 1);
    if (q->pending) sm__rest_finish(q->pending, &q->resp);
    sm__rest_response_clear(&q->resp);
  }
  size_t big = q->body.cap > q->declared ? q->body.cap : (size_t)q->declared;
  sm__jbuf_free(&q->body);
  free(q);
  *con_cls = NULL;
  conn_mark(h, c, 0);
  atomic_fetch_sub(&h->inflight, 1);
#ifdef __GLIBC__
  /* a big request's memory goes back to the system rather than staying as the process's peak */
  if (big >= SM_SERVE_TRIM_AFTER_BYTES) malloc_trim(0);
#endif
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
  h->max_body = o->max_body_bytes ? o->max_body_bytes : SM_SERVE_MAX_BODY_BYTES;
  atomic_init(&h->inflight, 0);
  atomic_init(&h->parked, 0);
  int threads = o->num_threads;
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = (int)(n > 0 ? n : 1) * 4;
  }
  h->max_conn = o->max_connections > 0 ? o->max_connections : SM_SERVE_MAX_CONNECTIONS;
  h->max_per_client = o->max_connections_per_client > 0 ? o->max_connections_per_client
                                                       : SM_SERVE_MAX_CONNECTIONS_PER_CLIENT;
  int idle = o->idle_timeout_seconds > 0 ? o->idle_timeout_seconds : SM_SERVE_IDLE_TIMEOUT_SECONDS;
  double ht = o->header_timeout_seconds > 0 ? o->header_timeout_seconds : SM_SERVE_HEADER_TIMEOUT_SECONDS;
  h->idle_timeout_us = (int64_t)idle * 1000000;
  h->header_timeout_us = (int64_t)(ht * 1e6);
  /* MHD's own cap stays above ours (it splits it among the pool's threads, and connections being
   * closed still count there), and descriptors must suffice for it: raise the soft limit. */
  unsigned mhd_limit = (unsigned)h->max_conn + (unsigned)h->max_conn / 2 + (unsigned)threads * 8u;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < mhd_limit + 64u) {
    rlim_t want = mhd_limit + 64u;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < mhd_limit + 64u) {
      int fit = (int)((rl.rlim_cur > 256 ? rl.rlim_cur - 128 : 128) * 2 / 3);
      if (fit < h->max_conn) {
        fprintf(stderr, "savedmodel serve: only %llu file descriptors (ulimit -n): at most %d connections, not %d\n",
                (unsigned long long)rl.rlim_cur, fit, h->max_conn);
        h->max_conn = fit;
        if (h->max_per_client > fit) h->max_per_client = fit;
        mhd_limit = (unsigned)(rl.rlim_cur > 128 ? rl.rlim_cur - 64 : 64);
      }
    }
  }
  pthread_mutex_init(&h->cmu, NULL);
  pthread_cond_init(&h->ccv, NULL);
  const char *addr = o->bind_addr && o->bind_addr[0] ? o->bind_addr : "0.0.0.0";
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", o->port);
  int rc = getaddrinfo(addr, port, &hints, &ai);
  if (rc || !ai) {
    pthread_mutex_destroy(&h->cmu);
    pthread_cond_destroy(&h->ccv);
    free(h);
    return sm_status_new(SM_INVALID_ARGUMENT, "http: bad bind address '%s': %s", addr, gai_strerror(rc));
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
#ifdef __linux__
  flags |= MHD_USE_EPOLL;
#endif
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  /* One thread is the daemon's own polling thread: a pool size of 1 (or 0) is dropped by MHD with a
   * warning in our log, so the option is given only for a real pool. */
  struct MHD_OptionItem pool[] = {{MHD_OPTION_THREAD_POOL_SIZE, threads, NULL}, {MHD_OPTION_END, 0, NULL}};
  if (threads <= 1) pool[0].option = MHD_OPTION_END;
  h->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                          MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_ARRAY, pool,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                          MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned)idle, MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h,
                          MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_END);
  int err = errno;
  freeaddrinfo(ai);
  /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: MHD's default (SO_REUSEADDR, no SO_REUSEPORT) lets a
   * restart rebind at once but refuses a port another server listens on, as TF Serving does. */
  if (h->d) h->reaper_started = pthread_create(&h->reaper, NULL, reaper_main, h) == 0;
  if (h->d && !h->reaper_started) {
    MHD_stop_daemon(h->d);
    h->d = NULL;
    err = 0;
  }
  if (!h->d) {
    pthread_mutex_destroy(&h->cmu);
    pthread_cond_destroy(&h->ccv);
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
  /* Parked requests are answered once their batch has run (batches always finish; the batcher
   * outlives this server): MHD cannot be stopped with connections suspended. */
  while (atomic_load(&h->parked) > 0) {
    struct timespec t = {0, 1000 * 1000};
    nanosleep(&t, NULL);
  }
  MHD_stop_daemon(h->d);
  pthread_mutex_lock(&h->cmu);
  h->stop = 1;
  pthread_cond_signal(&h->ccv);
  pthread_mutex_unlock(&h->cmu);
  if (h->reaper_started) pthread_join(h->reaper, NULL);
  pthread_mutex_destroy(&h->cmu);
  pthread_cond_destroy(&h->ccv);
  free(h);
}

sm_http_counts sm__http_counts(sm_http *h) {
  sm_http_counts n = {0};
  if (!h) return n;
  pthread_mutex_lock(&h->cmu);
  n.open = h->nconn;
  n.evicted = h->evicted;
  n.refused = h->refused;
  n.timed_out = h->timed_out;
  pthread_mutex_unlock(&h->cmu);
  return n;
}
