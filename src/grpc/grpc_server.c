/* grpc_server.c - TF Serving's gRPC endpoint over gRPC core (grpc_server.h).
 *
 * One completion queue served by N worker threads: one of them polls it while the recent calls
 * run short, one per core while they run long (take_turn, pollers; SM_GRPC_POLLERS=n fixes n
 * for A/B runs). TF Serving's methods are registered with
 * gRPC so that a call arrives with its request message (GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER),
 * N calls of each kept requested; other methods (answered UNIMPLEMENTED) come through
 * grpc_server_request_call, N of them requested too. A call walks these states, one
 * completion-queue event each:
 *   REQUESTED  an unregistered call arrived: request its replacement, start receiving the message
 *   RECEIVED   the request's bytes (a registered call starts here, with its replacement requested):
 *              run it (serve/grpc_api.c) on this worker, start sending the reply (initial
 *              metadata, the message if OK, the status) and waiting for the close
 *   SENT       done: free the call
 * The call's deadline becomes the run's deadline. Unknown methods answer UNIMPLEMENTED; a request
 * larger than max_receive_bytes is refused by gRPC itself (RESOURCE_EXHAUSTED). Per-call work the
 * server does not need is turned off at start: Abseil's lock-order checks (absl_checks_off) and
 * channelz/census/load reporting (channel args). */
#include "grpc/grpc_server.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "savedmodel/model.h"
#include "serve/grpc_api.h"

enum { REQUESTED, RECEIVED, SENT };

/* The methods serve/grpc_api.c answers. */
static const char *const METHODS[] = {
    "/tensorflow.serving.PredictionService/Predict",          "/tensorflow.serving.PredictionService/Classify",
    "/tensorflow.serving.PredictionService/Regress",          "/tensorflow.serving.PredictionService/MultiInference",
    "/tensorflow.serving.PredictionService/GetModelMetadata", "/tensorflow.serving.ModelService/GetModelStatus",
    "/tensorflow.serving.ModelService/HandleReloadConfigRequest"};
enum { NMETHODS = sizeof METHODS / sizeof *METHODS, RELOAD_METHOD = NMETHODS - 1 };

typedef struct gcall {
  int state;
  int method; /* index in METHODS, -1: unregistered */
  gpr_timespec deadline;
  grpc_call *call;
  grpc_call_details details;
  grpc_metadata_array md;
  grpc_byte_buffer *recv;
  grpc_byte_buffer *send;
  grpc_slice status_details;
  int cancelled;
  int replaced; /* its replacement has been requested */
} gcall;

struct sm_grpc_server {
  grpc_server *server;
  grpc_completion_queue *cq;
  sm_rest *rest;
  int port;
  int nthreads;
  int max_pollers;    /* workers waiting in the completion queue at once; 0: pollers() decides */
  int ncpu;           /* pollers while runs are long: one per core (at most nthreads) */
  int handoff;        /* runs may block (calls_may_block): wake an idle worker when no one polls */
  _Atomic int64_t run_us; /* recent runs' wall time, us (moving average over ~8 runs) */
  _Atomic int64_t slow_until; /* monotonic us: one poller per core until then (a SLOW_RUN_US run) */
  int polling;        /* under mu: workers in grpc_completion_queue_next */
  int idle;           /* under mu: workers waiting for their turn to poll */
  int cq_down;        /* under mu: the queue has shut down */
  pthread_cond_t turn; /* an idle worker's turn to poll */
  pthread_t *threads;
  void *registered[NMETHODS];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int shutting_down, shutdown_done;
  char shutdown_tag; /* its address is the tag of grpc_server_shutdown_and_notify */
};

static void call_free(gcall *c) {
  if (!c) return;
  if (c->recv) grpc_byte_buffer_destroy(c->recv);
  if (c->send) grpc_byte_buffer_destroy(c->send);
  if (c->state == SENT) grpc_slice_unref(c->status_details);
  if (c->method < 0) grpc_call_details_destroy(&c->details); /* a registered call's stays unused */
  grpc_metadata_array_destroy(&c->md);
  if (c->call) grpc_call_unref(c->call);
  free(c);
}

/* Asks for the next call of METHODS[method] (-1: of any other method); returns 0 when the server
 * no longer takes requests. */
static int request_one(sm_grpc_server *g, int method) {
  gcall *c = calloc(1, sizeof *c);
  if (!c) return 0;
  if (method < 0) grpc_call_details_init(&c->details);
  grpc_metadata_array_init(&c->md);
  c->method = method;
  grpc_call_error e;
  if (method < 0) {
    c->state = REQUESTED;
    e = grpc_server_request_call(g->server, &c->call, &c->details, &c->md, g->cq, g->cq, c);
  } else {
    c->state = RECEIVED;
    e = grpc_server_request_registered_call(g->server, g->registered[method], &c->call, &c->deadline, &c->md,
                                            &c->recv, g->cq, g->cq, c);
  }
  if (e != GRPC_CALL_OK) {
    call_free(c);
    return 0;
  }
  return 1;
}

/* CLOCK_MONOTONIC microseconds of the call's deadline; 0 when it has none. */
static int64_t deadline_of(const gcall *c) {
  gpr_timespec d = c->method < 0 ? c->details.deadline : c->deadline;
  if (gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0) return 0;
  gpr_timespec left = gpr_time_sub(d, gpr_now(d.clock_type));
  int64_t us = (int64_t)left.tv_sec * 1000000 + left.tv_nsec / 1000;
  if (us < 1) us = 1;
  return sm_monotonic_us() + us;
}

static void start_recv(gcall *c) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = &c->recv;
  c->state = RECEIVED;
  if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK) call_free(c);
}

/* Recent runs (their moving average) this long or longer are run by several workers at once: one
 * poller per core (take_turn); so is every run for SLOW_HOLD_US after one of SLOW_RUN_US. */
enum { LONG_RUN_US = 20, SLOW_RUN_US = 5000 };
#define SLOW_HOLD_US ((int64_t)10 * 1000000)

static void respond(sm_grpc_server *g, gcall *c) {
  sm_grpc_reply rep;
  char name[256];
  const char *method = name;
  if (c->method >= 0) {
    method = METHODS[c->method];
  } else {
    size_t ml = GRPC_SLICE_LENGTH(c->details.method);
    snprintf(name, sizeof name, "%.*s", (int)(ml < sizeof name ? ml : sizeof name - 1),
             (const char *)GRPC_SLICE_START_PTR(c->details.method));
  }
  if (!c->recv) {
    memset(&rep, 0, sizeof rep);
    rep.code = SM_GRPC_CANCELLED; /* the client went away before sending its message */
    rep.message = strdup("no request message");
  } else {
    grpc_slice all = grpc_empty_slice();
    const grpc_slice_buffer *sb = &c->recv->data.raw.slice_buffer;
    if (c->recv->type == GRPC_BB_RAW && c->recv->data.raw.compression == GRPC_COMPRESS_NONE && sb->count == 1) {
      all = grpc_slice_ref(sb->slices[0]); /* the message in one slice, as received: read it in place */
    } else { /* several slices, or compressed: the reader joins (and inflates) them */
      grpc_byte_buffer_reader rd;
      if (grpc_byte_buffer_reader_init(&rd, c->recv)) {
        all = grpc_byte_buffer_reader_readall(&rd);
        grpc_byte_buffer_reader_destroy(&rd);
      }
    }
    int64_t t0 = sm_monotonic_us();
    sm__grpc_api_call(g->rest, method, GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all), deadline_of(c), &rep);
    int64_t dt = sm_monotonic_us() - t0, avg = atomic_load_explicit(&g->run_us, memory_order_relaxed);
    atomic_store_explicit(&g->run_us, avg + (dt - avg) / 8, memory_order_relaxed); /* a lost update is harmless */
    if (dt >= SLOW_RUN_US) atomic_store_explicit(&g->slow_until, t0 + dt + SLOW_HOLD_US, memory_order_relaxed);
    grpc_slice_unref(all);
  }
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (rep.code == SM_GRPC_OK && rep.body) {
    grpc_slice body = grpc_slice_new(rep.body, rep.len, free); /* the slice owns the bytes now */
    rep.body = NULL;
    c->send = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->send;
  }
  c->status_details = rep.message && rep.message[0] ? grpc_slice_from_copied_string(rep.message) : grpc_empty_slice();
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = (grpc_status_code)rep.code;
  ops[n++].data.send_status_from_server.status_details = &c->status_details;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
  sm__grpc_reply_clear(&rep);
  c->state = SENT;
  if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK) call_free(c);
}

/* Workers poll the queue in turns, as gRPC C++'s synchronous server does (its ThreadManager):
 * at most pollers() of them wait in grpc_completion_queue_next, the rest wait on `turn`. A
 * worker that takes an event runs it and goes back to polling; an idle worker is woken when no
 * one is left polling and the event just taken may block (may_block: a run waiting for its batch,
 * a reload), or when pollers() has grown. Waking one for every run that only computes cost a
 * futex wake and a context switch every few calls (futex calls per Predict 0.5 against 0.1;
 * SM_GRPC_HANDOFF=1 wakes as before, for A/B runs: bench/ab_grpc.sh, bench/RESULTS.md).
 *
 * Runs shorter than LONG_RUN_US (their recent moving average) are cheaper back to back on one
 * poller: gRPC core's epoll engine lets one thread at a time wait in epoll, so with two pollers
 * each event taken hands that wait to the other (a futex wake and a context switch each side,
 * often an eventfd kick; at one connection 4-5 futex calls and 4-5 switches per call against 0 and 1,
 * server CPU 24-68 against 14-17 us per half_plus_two call; at 32 connections 25-37 against 15-23
 * us, requests/s the same or better: bench/RESULTS.md, 2026-12-02 18:45). Longer runs (the seed
 * CNN, 30-200 us) gain more from running two at once than the hand-offs cost: one poller per core.
 * A single poller stops polling while it runs a call, so a run of SLOW_RUN_US or more (a large
 * model among small ones; longer than a small call preempted for a time slice) also keeps one
 * poller per core for SLOW_HOLD_US after it: only the first such run after a quiet spell holds
 * the other calls up. */

/* How many workers may poll at once: max_pollers when set (SM_GRPC_POLLERS), else one while the
 * recent runs are short and one per core while they take LONG_RUN_US or more, or after a slow run. */
static int pollers(const sm_grpc_server *g) {
  if (g->max_pollers > 0) return g->max_pollers;
  if (atomic_load_explicit(&g->run_us, memory_order_relaxed) >= LONG_RUN_US) return g->ncpu;
  return sm_monotonic_us() < atomic_load_explicit(&g->slow_until, memory_order_relaxed) ? g->ncpu : 1;
}

static int take_turn(sm_grpc_server *g) {
  pthread_mutex_lock(&g->mu);
  while (!g->cq_down && g->polling >= pollers(g)) {
    g->idle++;
    pthread_cond_wait(&g->turn, &g->mu);
    g->idle--;
  }
  int down = g->cq_down;
  if (!down) g->polling++;
  pthread_mutex_unlock(&g->mu);
  return !down;
}

static void end_turn(sm_grpc_server *g, int shutdown, int may_block) {
  pthread_mutex_lock(&g->mu);
  g->polling--;
  if (shutdown) {
    g->cq_down = 1;
    pthread_cond_broadcast(&g->turn);
  } else if (g->idle && ((may_block && g->polling == 0) || g->polling + 1 < pollers(g))) {
    pthread_cond_signal(&g->turn); /* someone polls while this worker runs; or pollers() grew */
  }
  pthread_mutex_unlock(&g->mu);
}

/* Whether handling ev may wait on other threads: running a request when batching is on (the run
 * waits for its batch, which needs more requests taken in), or reloading the config (loads
 * models). Other events only compute on this worker. */
static int may_block(const sm_grpc_server *g, const grpc_event *ev) {
  if (ev->type != GRPC_OP_COMPLETE || ev->tag == &g->shutdown_tag) return 0;
  const gcall *c = ev->tag;
  return c->state == RECEIVED && (g->handoff || c->method == RELOAD_METHOD);
}

static void *worker(void *arg) {
  sm_grpc_server *g = arg;
  while (take_turn(g)) {
    grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    end_turn(g, ev.type == GRPC_QUEUE_SHUTDOWN, may_block(g, &ev));
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    if (ev.type != GRPC_OP_COMPLETE) continue;
    if (ev.tag == &g->shutdown_tag) {
      pthread_mutex_lock(&g->mu);
      g->shutdown_done = 1;
      pthread_cond_broadcast(&g->cv);
      pthread_mutex_unlock(&g->mu);
      continue;
    }
    gcall *c = ev.tag;
    if (!c->replaced && (c->state == REQUESTED || (c->state == RECEIVED && c->method >= 0))) {
      c->replaced = 1; /* the call has just arrived: keep one more of its kind requested */
      if (!ev.success) { /* the server is shutting down */
        call_free(c);
        continue;
      }
      pthread_mutex_lock(&g->mu);
      int stopping = g->shutting_down;
      pthread_mutex_unlock(&g->mu);
      if (!stopping) request_one(g, c->method);
    }
    switch (c->state) {
      case REQUESTED:
        start_recv(c);
        break;
      case RECEIVED:
        respond(g, c);
        break;
      default:
        call_free(c);
        break;
    }
  }
  return NULL;
}

/* Why a TCP listener could not be had: bind the port once more to learn the errno ("Address
 * already in use"). */
static const char *why_not(const char *addr) {
  const char *colon = strrchr(addr, ':');
  if (!strncmp(addr, "unix:", 5) || !colon) return "cannot listen there";
  int port = atoi(colon + 1);
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  int v6 = fd >= 0;
  if (!v6) fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return strerror(errno);
  int one = 1, rc;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (v6) {
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons((uint16_t)port);
    a.sin6_addr = in6addr_any;
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  }
  int e = errno;
  close(fd);
  return rc ? strerror(e) : "cannot listen there";
}

/* Debian builds Abseil without NDEBUG, so every absl::Mutex lock in gRPC core also runs Abseil's
 * lock-order (deadlock) checks: a process-wide spin lock and a graph lookup per lock, which the
 * server's threads contend for on every call. Abseil's documented switch,
 * absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore), turns the checks off; it is
 * C++, found here by its mangled name in the Abseil that libgrpc loaded (an `enum class` of int,
 * kIgnore = 0, passed as an int) and skipped when absent (another Abseil: nothing to turn off).
 * SM_GRPC_ABSL_CHECKS=1 keeps them, for A/B runs in bench/. */
static void absl_checks_off(void) {
  const char *keep = getenv("SM_GRPC_ABSL_CHECKS");
  if (keep && atoi(keep)) return;
  static const char *const names[] = {"_ZN4absl7debian329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
                                      "_ZN4absl12lts_2022062329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
                                      "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    void *f = dlsym(RTLD_DEFAULT, names[i]);
    if (f) {
      void (*set_mode)(int);
      memcpy(&set_mode, &f, sizeof set_mode);
      set_mode(0);
      return;
    }
  }
}

sm_status *sm__grpc_server_start(const sm_grpc_server_options *o, sm_rest *rest, sm_grpc_server **out) {
  *out = NULL;
  sm_grpc_server *g = calloc(1, sizeof *g);
  if (!g) return sm_status_new(SM_NO_MEMORY, "grpc: out of memory");
  g->rest = rest;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  g->nthreads = o->num_threads > 0 ? o->num_threads : 4 * (int)(ncpu > 0 ? ncpu : 1);
  g->ncpu = ncpu > 0 && ncpu < g->nthreads ? (int)ncpu : g->nthreads;
  g->max_pollers = 0;
  const char *fixed = getenv("SM_GRPC_POLLERS"); /* for A/B runs in bench/ */
  if (fixed && atoi(fixed) > 0) g->max_pollers = atoi(fixed);
  g->handoff = o->calls_may_block;
  const char *handoff = getenv("SM_GRPC_HANDOFF"); /* for A/B runs in bench/ */
  if (handoff) g->handoff = atoi(handoff) != 0;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  pthread_cond_init(&g->turn, NULL);
  absl_checks_off();
  grpc_init();
  grpc_arg args[6];
  memset(args, 0, sizeof args);
  size_t na = 0;
  args[na].type = GRPC_ARG_INTEGER;
  args[na].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
  args[na++].value.integer = o->max_receive_bytes > 0 && o->max_receive_bytes < INT32_MAX ? (int)o->max_receive_bytes
                                                                                          : INT32_MAX;
  args[na].type = GRPC_ARG_INTEGER;
  args[na].key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
  args[na++].value.integer = o->max_send_bytes > 0 && o->max_send_bytes < INT32_MAX ? (int)o->max_send_bytes : -1;
  args[na].type = GRPC_ARG_INTEGER;
  args[na].key = GRPC_ARG_ALLOW_REUSEPORT; /* two servers must not share a port */
  args[na++].value.integer = 0;
  /* Work gRPC core does per call that this server has no use for (SM_GRPC_LEAN=0 keeps gRPC's
   * defaults, for A/B runs in bench/): channelz's per-call counters and timestamps, the census and
   * load-reporting filters. (The BDP probe stays: it grows the flow-control window that large
   * tensors need.) */
  const char *lean = getenv("SM_GRPC_LEAN");
  if (!lean || atoi(lean) != 0) {
    static const char *const off[] = {GRPC_ARG_ENABLE_CHANNELZ, GRPC_ARG_ENABLE_CENSUS, GRPC_ARG_ENABLE_LOAD_REPORTING};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
      args[na].type = GRPC_ARG_INTEGER;
      args[na].key = (char *)off[i];
      args[na++].value.integer = 0;
    }
  }
  grpc_channel_args ca = {na, args};
  g->server = grpc_server_create(&ca, NULL);
  g->cq = grpc_completion_queue_create_for_next(NULL);
  sm_status *s = NULL;
  if (!g->server || !g->cq) s = sm_status_new(SM_NO_MEMORY, "grpc: cannot create the server");
  if (!s) grpc_server_register_completion_queue(g->server, g->cq, NULL);
  for (int i = 0; i < NMETHODS && !s; i++)
    if (!(g->registered[i] = grpc_server_register_method(g->server, METHODS[i], NULL,
                                                         GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0)))
      s = sm_status_new(SM_INTERNAL, "grpc: cannot register %s", METHODS[i]);
  const char *addrs[2] = {o->addr, o->socket_path};
  char unix_addr[4200];
  for (int i = 0; i < 2 && !s; i++) {
    const char *a = addrs[i];
    if (!a) continue;
    if (i == 1) {
      snprintf(unix_addr, sizeof unix_addr, "unix:%s", a);
      a = unix_addr;
    }
    grpc_server_credentials *cr = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(g->server, a, cr);
    grpc_server_credentials_release(cr);
    if (!port) s = sm_status_new(SM_FAILED_PRECONDITION, "Failed to BuildAndStart gRPC server: %s: %s", a, why_not(a));
    else if (i == 0 && strncmp(a, "unix:", 5)) g->port = port;
  }
  if (s) {
    if (g->server) grpc_server_destroy(g->server);
    if (g->cq) {
      grpc_completion_queue_shutdown(g->cq);
      while (grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
      }
      grpc_completion_queue_destroy(g->cq);
    }
    grpc_shutdown();
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    pthread_cond_destroy(&g->turn);
    free(g);
    return s;
  }
  grpc_server_start(g->server);
  for (int i = 0; i < g->nthreads; i++)
    for (int k = -1; k < NMETHODS; k++) request_one(g, k);
  g->threads = calloc((size_t)g->nthreads, sizeof *g->threads);
  int started = 0;
  for (int i = 0; g->threads && i < g->nthreads; i++, started++)
    if (pthread_create(&g->threads[i], NULL, worker, g)) break;
  g->nthreads = started;
  *out = g;
  if (!started) {
    sm__grpc_server_stop(g, 0);
    *out = NULL;
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "grpc: cannot start worker threads");
  }
  return NULL;
}

int sm__grpc_server_port(const sm_grpc_server *g) { return g ? g->port : 0; }

void sm__grpc_server_stop(sm_grpc_server *g, int grace_ms) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->shutting_down = 1;
  pthread_mutex_unlock(&g->mu);
  grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag);
  /* calls in flight finish within the grace period; then they are cancelled */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += grace_ms / 1000;
  until.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&g->mu);
  while (!g->shutdown_done && g->nthreads)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &until)) break;
  int done = g->shutdown_done;
  pthread_mutex_unlock(&g->mu);
  if (!done) grpc_server_cancel_all_calls(g->server);
  pthread_mutex_lock(&g->mu);
  while (!g->shutdown_done && g->nthreads) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  if (!g->nthreads) /* no worker: drain here until the shutdown tag */
    for (;;) {
      grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
      if (ev.tag == &g->shutdown_tag || ev.type == GRPC_QUEUE_SHUTDOWN) break;
      if (ev.type == GRPC_OP_COMPLETE) call_free(ev.tag);
    }
  grpc_completion_queue_shutdown(g->cq);
  for (int i = 0; i < g->nthreads; i++) pthread_join(g->threads[i], NULL);
  if (!g->nthreads)
    while (grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {
    }
  grpc_server_destroy(g->server);
  grpc_completion_queue_destroy(g->cq);
  grpc_shutdown();
  free(g->threads);
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  pthread_cond_destroy(&g->turn);
  free(g);
}
