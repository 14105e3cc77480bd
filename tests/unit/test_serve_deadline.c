/* test_serve_deadline.c - run deadlines and cancellation (sm_run_options) from the executor up to
 * the REST answer, and the UNAVAILABLE / DEADLINE_EXCEEDED codes of the batcher.
 *
 * The model (saved_model.pbtxt written here) is y = Identity(block(x)), where "block" is a test
 * kernel registered here: it passes a small feed (up to SMALL_MAX rows) through at once, and on a
 * large one (BIG_ROWS) waits, checking sm__kctx_check_stop, until the run is cancelled or its
 * deadline passes. So a large run can only end by being stopped, on any machine: nothing here
 * depends on how fast the CPU is. Where a run stopped is read from its message ("before step K of
 * N" from the executor, "during step K of N" from the kernel), never from wall time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "runtime/kernel.h"
#include "savedmodel/constants.h"
#include "savedmodel/model.h"
#include "serve/batch.h"
#include "serve/manager.h"
#include "serve/rest.h"
#include "test.h"

#define DIM 256
#define SMALL_MAX 64
#define BIG_ROWS 512
#define BLOCK_STEP 0 /* the plan: block (step 0), y (step 1); the feed x is no step */
#define NSTEPS 2

static char g_dir[256], g_base[300], g_export[320];

/* ---- the blocking kernel ------------------------------------------------------------------- */
static sm_status *block_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_rank(x) >= 1 && sm_tensor_dims(x)[0] > SMALL_MAX) {
    /* A watchdog, not a timing assertion: a stop that never comes fails in a minute, not hangs. */
    for (int i = 0; i < 60 * 1000; i++) {
      sm_status *st = sm__kctx_check_stop(ctx);
      if (st) return st;
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    return sm_status_new(SM_INTERNAL, "not stopped within 60 s");
  }
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static const sm_kernel test_kernels[] = {
    {"TestBlockUntilStopped", NULL, block_compute, NULL, 0},
    {0},
};

#define SHAPE "tensor_shape { dim { size: -1 } dim { size: 256 } }"
static const char model_pbtxt[] =
    "saved_model_schema_version: 1\n"
    "meta_graphs {\n"
    "  meta_info_def { tags: \"serve\" stripped_op_list { op { name: \"TestBlockUntilStopped\"\n"
    "    input_arg { name: \"x\" type: DT_FLOAT } output_arg { name: \"y\" type: DT_FLOAT } } } }\n"
    "  graph_def {\n"
    "    node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n"
    "           attr { key: \"shape\" value { shape { dim { size: -1 } dim { size: 256 } } } } }\n"
    "    node { name: \"block\" op: \"TestBlockUntilStopped\" input: \"x\" }\n"
    "    node { name: \"y\" op: \"Identity\" input: \"block\" attr { key: \"T\" value { type: DT_FLOAT } } }\n"
    "  }\n"
    "  signature_def { key: \"serving_default\" value {\n"
    "    inputs { key: \"x\" value { name: \"x:0\" dtype: DT_FLOAT " SHAPE " } }\n"
    "    outputs { key: \"y\" value { name: \"y:0\" dtype: DT_FLOAT " SHAPE " } }\n"
    "    method_name: \"tensorflow/serving/predict\" } }\n"
    "}\n";

static sm_status *write_model(const char *dir) {
  if (mkdir(dir, 0755) != 0) return sm_status_new(SM_IO, "%s: cannot create", dir);
  char *path = sm__path_join(dir, "saved_model.pbtxt");
  if (!path) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__file_write_atomic(path, model_pbtxt, strlen(model_pbtxt));
  free(path);
  return s;
}

static sm_tensor *rows_of(int64_t rows) {
  int64_t d[2] = {rows, DIM};
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, 2, d, &t);
  if (s) {
    sm_status_free(s);
    return NULL;
  }
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < rows * DIM; i++) p[i] = (float)(i % 7) - 3.0f;
  return t;
}

/* The step a stopped run names: "... before step K of N" or "... during step K of N"; -1 when
 * absent. */
static int stopped_at(const char *msg, int *of) {
  const char *p = msg ? strstr(msg, "before step ") : NULL;
  const char *q = msg ? strstr(msg, "during step ") : NULL;
  int k = -1, n = -1;
  if (p && sscanf(p, "before step %d of %d", &k, &n) != 2) return -1;
  if (!p && (!q || sscanf(q, "during step %d of %d", &k, &n) != 2)) return -1;
  if (of) *of = n;
  return k;
}

/* The status must have `code` and name a step no later than the blocking one: the run never got
 * past it. */
static void check_stopped_early(sm_status *s, sm_code code) {
  CHECK(s != NULL);
  if (!s) return;
  int n = 0, k = stopped_at(sm_status_message(s), &n);
  if (sm_status_code(s) != code || k < 0 || k > BLOCK_STEP)
    fprintf(stderr, "stopped with %s: %s\n", sm_code_name(sm_status_code(s)), sm_status_message(s));
  CHECK_EQ_INT(sm_status_code(s), code);
  CHECK(k >= 0 && k <= BLOCK_STEP && n == NSTEPS);
  sm_status_free(s);
}

static void test_codes(void) {
  CHECK_EQ_STR(sm_code_name(SM_UNAVAILABLE), "UNAVAILABLE");
  CHECK_EQ_STR(sm_code_name(SM_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  CHECK_EQ_STR(sm_code_name(SM_CANCELLED), "CANCELLED");
  /* TF Serving's ToHTTPStatusCode (http_server.cc) */
  CHECK_EQ_INT(sm__rest_http_status(SM_UNAVAILABLE), 503);
  CHECK_EQ_INT(sm__rest_http_status(SM_DEADLINE_EXCEEDED), 504);
  CHECK_EQ_INT(sm__rest_http_status(SM_CANCELLED), 499);
}

typedef struct canceller {
  volatile int flag;
  int delay_ms;
} canceller;

static void *cancel_main(void *arg) {
  canceller *c = arg;
  usleep((useconds_t)c->delay_ms * 1000);
  __atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void test_model_run(sm_model *m) {
  const char *in[] = {"x"}, *out[] = {"y"};
  sm_tensor *one = rows_of(1), *big = rows_of(BIG_ROWS), *y0 = NULL, *y1 = NULL;
  if (!one || !big) {
    CHECK(0);
    goto done;
  }
  /* No options, far deadline, unset cancel flag: the same answer, computed to the end. */
  CHECK_OK(sm_model_run(m, "serving_default", in, &one, 1, out, 1, &y0));
  volatile int never = 0;
  sm_run_options far = {.deadline_us = sm_monotonic_us() + 3600LL * 1000000, .cancel = &never};
  CHECK_OK(sm_model_run_opts(m, "serving_default", in, &one, 1, out, 1, &y1, &far));
  CHECK(y0 && y1 && sm_tensor_equal(y0, y1));
  if (y1) CHECK(((float *)sm_tensor_data(y1))[1] == -2.0f);
  sm_tensor_free(y1);
  y1 = NULL;
  CHECK_OK(sm_model_run_opts(m, "serving_default", in, &one, 1, out, 1, &y1, NULL));
  CHECK(y0 && y1 && sm_tensor_equal(y0, y1));
  sm_tensor_free(y1);
  y1 = NULL;

  /* A deadline already past: not a single step runs, no output is left behind. */
  sm_run_options past = {.deadline_us = 1};
  sm_status *s = sm_model_run_opts(m, "serving_default", in, &big, 1, out, 1, &y1, &past);
  CHECK(stopped_at(sm_status_message(s), NULL) == 0);
  CHECK(y1 == NULL);
  check_stopped_early(s, SM_DEADLINE_EXCEEDED);
  /* Cancelled before it starts, through the session-run entry point. */
  volatile int set = 1;
  sm_run_options cancelled = {.cancel = &set};
  const char *feed = "x:0", *fetch = "y:0";
  s = sm_model_session_run_opts(m, &feed, &big, 1, &fetch, 1, NULL, 0, &y1, &cancelled);
  CHECK(stopped_at(sm_status_message(s), NULL) == 0);
  CHECK(s && strstr(sm_status_message(s), "cancelled"));
  check_stopped_early(s, SM_CANCELLED);

  /* A 20 ms deadline on a run that cannot end by itself: stopped inside the blocking step. */
  sm_run_options soon = {.deadline_us = sm_monotonic_us() + 20000};
  s = sm_model_run_opts(m, "serving_default", in, &big, 1, out, 1, &y1, &soon);
  CHECK(s && strstr(sm_status_message(s), "deadline exceeded"));
  CHECK(s && (strstr(sm_status_message(s), "before step") ||
              strstr(sm_status_message(s), "node 'block' (TestBlockUntilStopped): deadline exceeded during step 0 of 2")));
  CHECK(y1 == NULL);
  check_stopped_early(s, SM_DEADLINE_EXCEEDED);
  /* Cancelled from another thread 20 ms in. */
  canceller c = {.flag = 0, .delay_ms = 20};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, cancel_main, &c) == 0);
  sm_run_options byflag = {.cancel = &c.flag};
  s = sm_model_run_opts(m, "serving_default", in, &big, 1, out, 1, &y1, &byflag);
  pthread_join(th, NULL);
  check_stopped_early(s, SM_CANCELLED);
done:
  sm_tensor_free(one);
  sm_tensor_free(big);
  sm_tensor_free(y0);
  sm_tensor_free(y1);
}

/* {"instances": [[...256 numbers...], ...]} with `rows` rows. */
static char *instances_json(int rows) {
  size_t cap = (size_t)rows * DIM * 4 + 64, n = 0;
  char *b = malloc(cap);
  if (!b) return NULL;
  n += (size_t)sprintf(b + n, "{\"instances\": [");
  for (int r = 0; r < rows; r++) {
    b[n++] = r ? ',' : '[';
    if (r) b[n++] = '[';
    for (int i = 0; i < DIM; i++) n += (size_t)sprintf(b + n, i ? ",%d" : "%d", (i % 7) - 3);
    b[n++] = ']';
  }
  n += (size_t)sprintf(b + n, "]}");
  return b;
}

static void test_rest(sm_manager *mgr, sm_batcher *batcher) {
  sm_rest *r = NULL, *slow = NULL;
  sm_rest_options o = {.manager = mgr, .batcher = batcher, .batcher_run = batcher ? sm__batcher_run : NULL,
                       .timeout_ms = 30};
  CHECK_OK(sm__rest_new(&o, &r));
  o.timeout_ms = 60000;
  CHECK_OK(sm__rest_new(&o, &slow));
  if (!r || !slow) {
    sm__rest_free(r);
    sm__rest_free(slow);
    return;
  }
  char *small = instances_json(1), *big = instances_json(BIG_ROWS);
  sm_rest_response resp;
  /* Within the deadline: 200. */
  sm__rest_handle(slow, "POST", "/v1/models/chain:predict", small, strlen(small), &resp);
  CHECK_EQ_INT(resp.http_status, 200);
  CHECK(resp.body.p && strstr(resp.body.p, "\"predictions\""));
  sm__rest_response_clear(&resp);
  /* Past it: 504 DEADLINE_EXCEEDED, and the run stopped early (the message names its step), or,
   * batching, never started when the deadline passed in the queue. */
  sm__rest_handle(r, "POST", "/v1/models/chain:predict", big, strlen(big), &resp);
  const char *msg = resp.body.p ? strstr(resp.body.p, "\"error\"") : NULL;
  CHECK(msg != NULL);
  int n = 0, k = stopped_at(msg, &n);
  /* batching, a request that expired in the queue is refused as TF Serving does: 429 */
  int queued = batcher && msg && strstr(msg, "Run() timeout exceeded while waiting in batching queue");
  CHECK_EQ_INT(resp.http_status, queued ? 429 : 504);
  CHECK_EQ_STR(resp.code, queued ? "RESOURCE_EXHAUSTED" : "DEADLINE_EXCEEDED");
  if (!queued && (k < 0 || k > BLOCK_STEP)) fprintf(stderr, "504 body: %.300s\n", resp.body.p ? resp.body.p : "");
  CHECK(queued || (k >= 0 && n == NSTEPS && k <= BLOCK_STEP));
  sm__rest_response_clear(&resp);
  free(small);
  free(big);
  sm__rest_free(r);
  sm__rest_free(slow);
}

typedef struct submit {
  sm_batcher *b;
  sm_servable *sv;
  sm_tensor *x;
  sm_run_options ro;
  sm_status *s;
  sm_tensor *y;
} submit;

static void *submit_main(void *arg) {
  submit *u = arg;
  const char *in[] = {"x"}, *out[] = {"y"};
  u->s = sm__batcher_run(u->b, u->sv, "serving_default", in, &u->x, 1, out, 1, &u->y, &u->ro);
  return NULL;
}

static void test_batcher(sm_servable *sv) {
  const char *in[] = {"x"}, *out[] = {"y"};
  /* As TF Serving's BatchingSession: a batch with a live request runs whole (the expired request of
   * it too); a batch whose every request expired while queued is refused with RESOURCE_EXHAUSTED. */
  sm_batching_params p = {.max_batch_size = 8, .batch_timeout_micros = 100000, .num_batch_threads = 1,
                          .max_enqueued_batches = 100};
  sm_batcher *b = NULL;
  CHECK_OK(sm__batcher_new(&p, &b));
  if (!b) return;
  submit live = {.b = b, .sv = sv, .x = rows_of(2)}, dead = {.b = b, .sv = sv, .x = rows_of(3), .ro = {.deadline_us = 1}};
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, submit_main, &live) == 0);
  CHECK(pthread_create(&t2, NULL, submit_main, &dead) == 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK_OK(live.s);
  CHECK(live.y && sm_tensor_dims(live.y)[0] == 2 && ((float *)sm_tensor_data(live.y))[1] == -2.0f);
  CHECK_OK(dead.s);
  CHECK(dead.y && sm_tensor_dims(dead.y)[0] == 3);
  sm_tensor_free(live.x), sm_tensor_free(live.y), sm_tensor_free(dead.x), sm_tensor_free(dead.y);
  submit dead2 = {.b = b, .sv = sv, .x = rows_of(3), .ro = {.deadline_us = 1}};
  submit_main(&dead2);
  CHECK(dead2.s && sm_status_code(dead2.s) == SM_RESOURCE_EXHAUSTED);
  CHECK(dead2.s && strstr(sm_status_message(dead2.s), "Run() timeout exceeded while waiting in batching queue"));
  CHECK(dead2.y == NULL);
  sm_status_free(dead2.s);
  sm_tensor_free(dead2.x);
  /* A request that runs alone (rank 0 cannot be merged) honours its deadline in the executor. */
  sm_tensor *s0 = NULL, *y = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &s0));
  sm_run_options past = {.deadline_us = 1};
  sm_status *st = sm__batcher_run(b, sv, "serving_default", in, &s0, 1, out, 1, &y, &past);
  CHECK(st && sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  sm_tensor_free(s0);
  sm__batcher_free(b);

  /* Queue full: UNAVAILABLE with SharedBatchScheduler's words. One batch thread busy with a long
   * full batch, room for one more batch in the queue, three full batches sent at once: at least
   * one is refused. The long ones are bounded by a deadline. */
  sm_batching_params q = {.max_batch_size = BIG_ROWS, .batch_timeout_micros = 0, .num_batch_threads = 1,
                          .max_enqueued_batches = 1};
  CHECK_OK(sm__batcher_new(&q, &b));
  if (!b) return;
  submit u[3];
  pthread_t th[3];
  int64_t deadline = sm_monotonic_us() + 1000000; /* time for the three threads to submit */
  for (int i = 0; i < 3; i++) {
    u[i] = (submit){.b = b, .sv = sv, .x = rows_of(BIG_ROWS), .ro = {.deadline_us = deadline}};
    CHECK(pthread_create(&th[i], NULL, submit_main, &u[i]) == 0);
  }
  int unavailable = 0;
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    sm_code c = sm_status_code(u[i].s);
    if (c == SM_UNAVAILABLE) {
      unavailable++;
      CHECK(strstr(sm_status_message(u[i].s), "The batch scheduling queue to which this task was submitted is full"));
    } else {
      /* A large run ends only when stopped: by its deadline, or (the one queued behind it) expired
       * in the queue, which TF Serving answers RESOURCE_EXHAUSTED. */
      if (c != SM_DEADLINE_EXCEEDED && c != SM_RESOURCE_EXHAUSTED)
        fprintf(stderr, "batch %d: %s\n", i, sm_status_message(u[i].s));
      CHECK(c == SM_DEADLINE_EXCEEDED || c == SM_RESOURCE_EXHAUSTED);
    }
    sm_status_free(u[i].s);
    sm_tensor_free(u[i].x);
    sm_tensor_free(u[i].y);
  }
  CHECK(unavailable >= 1);
  sm__batcher_free(b);
  /* After shutdown began: UNAVAILABLE too (tested through the public free: nothing to call after
   * it, so only the code of a refused request above is checked). */
}

int main(void) {
  test_codes();
  snprintf(g_dir, sizeof g_dir, "/tmp/sm_test_serve_deadline_XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  snprintf(g_base, sizeof g_base, "%s/chain", g_dir);
  snprintf(g_export, sizeof g_export, "%s/1", g_base);
  CHECK(mkdir(g_base, 0755) == 0);
  CHECK_OK(sm__kernels_add(test_kernels, SM_BACKEND_CPU));
  CHECK_OK(write_model(g_export));

  sm_manager *mgr = NULL;
  CHECK_OK(sm__manager_new(NULL, &mgr));
  sm_model_config c = {.name = "chain", .base_path = g_base, .policy = SM_POLICY_LATEST, .latest_n = 1};
  if (mgr) CHECK_OK(sm__manager_set_config(mgr, &c, 1));
  sm_servable *sv = NULL;
  if (mgr) CHECK_OK(sm__manager_acquire(mgr, "chain", 0, NULL, &sv));
  if (sv) {
    test_model_run(sm__servable_model(sv));
    test_rest(mgr, NULL);
    sm_batcher *b = NULL;
    sm_batching_params p = {.max_batch_size = BIG_ROWS, .batch_timeout_micros = 0, .num_batch_threads = 1,
                            .max_enqueued_batches = 10};
    CHECK_OK(sm__batcher_new(&p, &b));
    if (b) test_rest(mgr, b);
    sm__batcher_free(b);
    test_batcher(sv);
  }
  sm__servable_release(sv);
  sm__manager_free(mgr);
  sm__remove_tree(g_dir);
  TEST_MAIN_END();
}
