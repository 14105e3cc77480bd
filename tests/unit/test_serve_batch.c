/* test_serve_batch.c - server-side batching: requests from many threads merged along dimension
 * 0 give the same outputs as unbatched runs; padding to allowed_batch_sizes; requests that
 * cannot merge run alone; batches that form (stats); pad_variable_length_inputs as TF Serving's
 * AddPadding (batching_util.cc); parked requests (sm__batcher_submit), alone and among waiting
 * callers; BatchingParameters text files and their errors. Uses the zoo's
 * tf1_square (y = x * x, float32 of any shape) served through the model manager. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "serve/batch.h"
#include "serve/manager.h"
#include "test.h"

#define ZOO_SQUARE_BASE SM_SOURCE_DIR "/tests/fixtures/zoo/tf1_square"

static char g_dir[256];

static sm_tensor *make_input(int64_t rows, int64_t cols, float seed) {
  int64_t dims[2] = {rows, cols};
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, 2, dims, &t);
  if (s) {
    sm_status_free(s);
    return NULL;
  }
  float *d = sm_tensor_data(t);
  for (int64_t i = 0; i < rows * cols; i++) d[i] = seed + (float)i * 0.5f;
  return t;
}

typedef struct job {
  sm_batcher *b;
  sm_servable *sv;
  int id, iters, failures;
} job;

static void *job_main(void *arg) {
  job *j = arg;
  const char *in[] = {"x"}, *out[] = {"y"};
  for (int it = 0; it < j->iters; it++) {
    int64_t rows = 1 + (j->id + it) % 3;
    sm_tensor *x = make_input(rows, 2, (float)(j->id * 100 + it));
    sm_tensor *y = NULL, *want = NULL;
    sm_status *s = sm__batcher_run(j->b, j->sv, "serving_default", in, &x, 1, out, 1, &y, NULL);
    sm_status *s2 = sm_model_run(sm__servable_model(j->sv), "serving_default", in, &x, 1, out, 1, &want);
    if (s || s2 || !y || !want || !sm_tensor_equal(y, want)) {
      if (s) fprintf(stderr, "batched run failed: %s\n", sm_status_message(s));
      j->failures++;
    }
    sm_status_free(s);
    sm_status_free(s2);
    sm_tensor_free(x);
    sm_tensor_free(y);
    sm_tensor_free(want);
  }
  return NULL;
}

static void run_threads(sm_batcher *b, sm_servable *sv, int nthreads, int iters) {
  pthread_t th[16];
  job js[16];
  for (int i = 0; i < nthreads; i++) {
    js[i] = (job){.b = b, .sv = sv, .id = i, .iters = iters};
    CHECK(pthread_create(&th[i], NULL, job_main, &js[i]) == 0);
  }
  int failures = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    failures += js[i].failures;
  }
  CHECK_EQ_INT(failures, 0);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void test_params_file(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/batching.config", g_dir);
  sm_batching_params p;
  int64_t *allowed = NULL;
  write_text(path,
             "max_batch_size { value: 8 }\n"
             "batch_timeout_micros { value: 5000 }\n"
             "max_enqueued_batches { value: 10 }\n"
             "num_batch_threads { value: 2 }\n"
             "thread_pool_name { value: 'model_server_batch_threads' }\n"
             "allowed_batch_sizes: 2 allowed_batch_sizes: 4 allowed_batch_sizes: 8\n");
  CHECK_OK(sm__batching_params_read(path, &p, &allowed));
  CHECK_EQ_INT(p.max_batch_size, 8);
  CHECK_EQ_INT(p.batch_timeout_micros, 5000);
  CHECK_EQ_INT(p.max_enqueued_batches, 10);
  CHECK_EQ_INT(p.num_batch_threads, 2);
  CHECK_EQ_INT(p.nallowed, 3);
  CHECK(p.allowed_batch_sizes == allowed);
  free(allowed);
  /* Defaults. */
  write_text(path, "");
  CHECK_OK(sm__batching_params_read(path, &p, &allowed));
  CHECK_EQ_INT(p.max_batch_size, 32);
  CHECK_EQ_INT(p.batch_timeout_micros, 1000);
  CHECK_EQ_INT(p.max_enqueued_batches, 100);
  CHECK(p.num_batch_threads >= 1);
  CHECK(allowed == NULL);
  static const char *const bad[][2] = {
      {"max_batch_size { value: 8 } allowed_batch_sizes: [4, 2, 8]", "monotonically increasing"},
      {"max_batch_size { value: 8 } allowed_batch_sizes: [2, 4]", "final entry in allowed_batch_sizes must equal"},
      {"max_batch_size { value: 0 }", "max_batch_size must be positive"},
      {"max_batch_size { value: -3 }", "max_batch_size must be positive"},
      {"num_batch_threads { value: 100000000000 }", "num_batch_threads"},
      {"batch_timeout_micros { value: -1 }", "batch_timeout_micros"},
      {"max_batch_size: 8", "batching.config"},
      {"no_such_field: 1", "no_such_field"},
      {"max_batch_size { value: 8", "batching.config"},
      {"max_enqueued_batches { value: 0 }", "max_enqueued_batches must be positive"},
      {"max_batch_size { value: 4 } allowed_batch_sizes: [0, 4]", "allowed_batch_sizes entries must be positive"},
      {"num_batch_threads { value: 0 }", "num_batch_threads must be in [1, 1024]"},
      {"num_batch_threads { value: -5 }", "num_batch_threads must be in [1, 1024]"},
      {"enable_large_batch_splitting { value: true }", "enable_large_batch_splitting is not supported"},
      {"pad_variable_length_inputs: 3", "batching.config"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_text(path, bad[i][0]);
    CHECK_ERR(sm__batching_params_read(path, &p, &allowed), bad[i][1]);
    CHECK(allowed == NULL);
  }
  CHECK_ERR(sm__batching_params_read("/nonexistent/batching.config", &p, &allowed),
            "reading batching parameters: /nonexistent/batching.config: ");
}

/* ---- requests sent at once from their own threads ---- */
typedef struct one_req {
  sm_batcher *b;
  sm_servable *sv;
  sm_tensor *x, *y;
  sm_status *s;
} one_req;

static atomic_int g_started; /* set by one_main before it calls the batcher */

static void *one_main(void *arg) {
  one_req *r = arg;
  const char *in[] = {"x"}, *out[] = {"y"};
  atomic_store(&g_started, 1);
  r->s = sm__batcher_run(r->b, r->sv, "serving_default", in, &r->x, 1, out, 1, &r->y, NULL);
  return NULL;
}

static void run_at_once(one_req *rs, int n) {
  pthread_t th[16];
  for (int i = 0; i < n; i++) CHECK(pthread_create(&th[i], NULL, one_main, &rs[i]) == 0);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

static sm_tensor *tensor_of(int rank, const int64_t *dims, float first) {
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, rank, dims, &t);
  sm_status_free(s);
  if (!t) return NULL;
  float *d = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) d[i] = first + (float)i;
  return t;
}

/* TF Serving's AddPadding restated for the test: x padded at the end of every dim past 0 to
 * `to` with x's first element (rank <= 3 here). */
static sm_tensor *padded_copy(const sm_tensor *x, const int64_t *to) {
  int r = sm_tensor_rank(x);
  const int64_t *xd = sm_tensor_dims(x);
  int64_t dims[3] = {xd[0], r > 1 ? to[1] : 1, r > 2 ? to[2] : 1};
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, r, dims, &t);
  sm_status_free(s);
  if (!t) return NULL;
  const float *src = sm_tensor_data(x);
  float *d = sm_tensor_data(t);
  int64_t x1 = r > 1 ? xd[1] : 1, x2 = r > 2 ? xd[2] : 1;
  for (int64_t i = 0; i < dims[0]; i++)
    for (int64_t j = 0; j < dims[1]; j++)
      for (int64_t k = 0; k < dims[2]; k++)
        d[(i * dims[1] + j) * dims[2] + k] = j < x1 && k < x2 ? src[(i * x1 + j) * x2 + k] : src[0];
  return t;
}

/* max_batch_size requests of one row each sent at once, with a timeout far longer than the test:
 * the batch closes when full, so all of them run as one batch, whatever the timing. */
static void test_batches_form(sm_servable *sv) {
  sm_batching_params p = {.max_batch_size = 4, .batch_timeout_micros = 60000000, .num_batch_threads = 2,
                          .max_enqueued_batches = 10};
  sm_batcher *b = NULL;
  CHECK_OK(sm__batcher_new(&p, &b));
  if (!b) return;
  one_req rs[4];
  for (int i = 0; i < 4; i++) rs[i] = (one_req){.b = b, .sv = sv, .x = make_input(1, 3, (float)i * 10)};
  run_at_once(rs, 4);
  for (int i = 0; i < 4; i++) {
    CHECK_OK(rs[i].s);
    const float *x = sm_tensor_data(rs[i].x), *y = rs[i].y ? sm_tensor_data(rs[i].y) : NULL;
    CHECK(y && sm_tensor_dims(rs[i].y)[0] == 1 && y[2] == x[2] * x[2]); /* its own row */
    sm_tensor_free(rs[i].x);
    sm_tensor_free(rs[i].y);
  }
  int64_t nb = 0, nt = 0;
  sm__batcher_stats(b, &nb, &nt);
  CHECK_EQ_INT(nb, 1);
  CHECK_EQ_INT(nt, 4);
  sm__batcher_free(b);
}

/* ---- parked requests (sm__batcher_submit): the caller does not wait, a callback answers ---- */
typedef struct parked {
  sm_tensor *x, *y;
  sm_status *s;
  int done;
} parked;

static pthread_mutex_t g_pmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pcv = PTHREAD_COND_INITIALIZER;

static void parked_done(void *arg, sm_status *s) {
  parked *p = arg;
  pthread_mutex_lock(&g_pmu);
  p->s = s;
  p->done++;
  pthread_cond_broadcast(&g_pcv);
  pthread_mutex_unlock(&g_pmu);
}

static int parked_count(parked *ps, int n) {
  pthread_mutex_lock(&g_pmu);
  int k = 0;
  for (int i = 0; i < n; i++) k += ps[i].done;
  pthread_mutex_unlock(&g_pmu);
  return k;
}

static void park(sm_batcher *b, sm_servable *sv, const char *key, parked *p) {
  static const char *in[] = {"x"}, *out[] = {"y"};
  sm__batcher_submit(b, sv, key, in, &p->x, 1, out, 1, &p->y, NULL, parked_done, p);
}

/* Waits for ps[0..n) to be answered; each exactly once, each with x * x of its own rows. */
static void parked_check(parked *ps, int n) {
  pthread_mutex_lock(&g_pmu);
  for (int i = 0; i < n; i++)
    while (!ps[i].done) pthread_cond_wait(&g_pcv, &g_pmu);
  pthread_mutex_unlock(&g_pmu);
  for (int i = 0; i < n; i++) {
    CHECK_EQ_INT(ps[i].done, 1);
    CHECK_OK(ps[i].s);
    const float *x = sm_tensor_data(ps[i].x), *y = ps[i].y ? sm_tensor_data(ps[i].y) : NULL;
    int64_t k = sm_tensor_num_elements(ps[i].x);
    CHECK(y && sm_tensor_num_elements(ps[i].y) == k);
    for (int64_t j = 0; y && j < k; j++)
      if (y[j] != x[j] * x[j]) {
        CHECK(y[j] == x[j] * x[j]);
        break;
      }
    sm_tensor_free(ps[i].x);
    sm_tensor_free(ps[i].y);
  }
}

static void test_parked(sm_servable *sv) {
  /* One thread parks max_batch_size requests, the timeout far past the test: none is answered
   * before the last arrives (the batch closes when full), then all of them, as one batch. */
  sm_batching_params p = {.max_batch_size = 4, .batch_timeout_micros = 60000000, .num_batch_threads = 1,
                          .max_enqueued_batches = 10};
  sm_batcher *b = NULL;
  CHECK_OK(sm__batcher_new(&p, &b));
  if (!b) return;
  parked ps[64];
  for (int i = 0; i < 4; i++) ps[i] = (parked){.x = make_input(1, 3, (float)i * 10)};
  for (int i = 0; i < 3; i++) park(b, sv, "serving_default", &ps[i]);
  CHECK_EQ_INT(parked_count(ps, 3), 0);
  park(b, sv, "serving_default", &ps[3]);
  parked_check(ps, 4);
  int64_t nb = 0, nt = 0;
  sm__batcher_stats(b, &nb, &nt);
  CHECK_EQ_INT(nb, 1);
  CHECK_EQ_INT(nt, 4);
  /* Errors come through the callback, before the call returns: too many rows, no such signature
   * (runs alone: it fails when the batch would). */
  ps[0] = (parked){.x = make_input(5, 2, 1.0f)};
  park(b, sv, "serving_default", &ps[0]);
  CHECK_EQ_INT(ps[0].done, 1);
  CHECK_ERR(ps[0].s, "Task size 5 is larger than maximum input batch size 4");
  sm_tensor_free(ps[0].x);
  sm__batcher_free(b);

  /* batch_timeout_micros 0, no batch threads: the caller that parks runs the batch, so the answer
   * comes before sm__batcher_submit returns. */
  sm_batching_params q = {.max_batch_size = 4, .batch_timeout_micros = 0, .num_batch_threads = 1,
                          .max_enqueued_batches = 1000};
  CHECK_OK(sm__batcher_new(&q, &b));
  if (!b) return;
  ps[0] = (parked){.x = make_input(2, 3, 1.0f)};
  park(b, sv, "serving_default", &ps[0]);
  CHECK_EQ_INT(ps[0].done, 1);
  parked_check(ps, 1);
  /* Parked and waiting callers in one queue: a waiting caller that led a batch and finds only
   * parked requests left must run them (nobody else would: with nothing arriving after them they
   * would wait for ever). A waiting caller runs a long row alone; a parked request of another
   * shape comes while it runs (in most rounds: the caller has started when it is parked). */
  for (int round = 0; round < 100; round++) {
    one_req r = {.b = b, .sv = sv, .x = make_input(1, 1 << 18, (float)round)};
    ps[0] = (parked){.x = make_input(1 + round % 3, 2, (float)round + 0.5f)};
    atomic_store(&g_started, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, one_main, &r) == 0);
    while (!atomic_load(&g_started)) sched_yield();
    park(b, sv, "serving_default", &ps[0]);
    pthread_join(th, NULL);
    parked_check(ps, 1);
    CHECK_OK(r.s);
    CHECK(r.y && ((float *)sm_tensor_data(r.y))[1] == ((float *)sm_tensor_data(r.x))[1] * ((float *)sm_tensor_data(r.x))[1]);
    sm_tensor_free(r.x);
    sm_tensor_free(r.y);
  }
  sm__batcher_free(b);
}

/* pad_variable_length_inputs: requests of different lengths share one batch (two at once, batch
 * size 2); each gets its rows of the output of its input padded to the batch's largest dims. */
static void test_padding(sm_servable *sv) {
  sm_batching_params p = {.max_batch_size = 2, .batch_timeout_micros = 60000000, .num_batch_threads = 1,
                          .max_enqueued_batches = 10, .pad_variable_length_inputs = 1};
  sm_batcher *b = NULL;
  CHECK_OK(sm__batcher_new(&p, &b));
  if (!b) return;
  static const int64_t shapes[][2][3] = {
      {{1, 3}, {1, 5}},          /* rank 2: [1,3] padded to [1,5] */
      {{1, 2, 3}, {1, 3, 2}},    /* rank 3: both padded to [1,3,3] */
      {{1, 4}, {1, 4}},          /* equal: no padding */
  };
  static const int ranks[] = {2, 3, 2};
  const char *in[] = {"x"}, *out[] = {"y"};
  for (int c = 0; c < 3; c++) {
    one_req rs[2];
    int64_t to[3] = {0, 0, 0};
    for (int i = 0; i < 2; i++) {
      rs[i] = (one_req){.b = b, .sv = sv, .x = tensor_of(ranks[c], shapes[c][i], 2.0f + (float)i * 7)};
      for (int k = 1; k < ranks[c]; k++)
        if (shapes[c][i][k] > to[k]) to[k] = shapes[c][i][k];
    }
    run_at_once(rs, 2);
    for (int i = 0; i < 2; i++) {
      CHECK_OK(rs[i].s);
      sm_tensor *px = padded_copy(rs[i].x, to), *want = NULL;
      CHECK_OK(sm_model_run(sm__servable_model(sv), "serving_default", in, &px, 1, out, 1, &want));
      CHECK(rs[i].y && want && sm_tensor_equal(rs[i].y, want));
      sm_tensor_free(px);
      sm_tensor_free(want);
      sm_tensor_free(rs[i].x);
      sm_tensor_free(rs[i].y);
    }
  }
  /* AddPadding's errors reach every request of the batch: rank past 6, an empty tensor */
  static const int64_t r7a[] = {1, 1, 1, 1, 1, 1, 2}, r7b[] = {1, 1, 1, 1, 1, 1, 3};
  static const int64_t ea[] = {1, 0}, eb[] = {1, 2};
  const int64_t *bad[][2] = {{r7a, r7b}, {ea, eb}};
  static const int bad_rank[] = {7, 2};
  static const char *const why[] = {"Only tensors with rank from 1 to 6 can be padded.",
                                    "Got empty tensor in batch of non-empty tensors."};
  for (int c = 0; c < 2; c++) {
    one_req rs[2];
    for (int i = 0; i < 2; i++) rs[i] = (one_req){.b = b, .sv = sv, .x = tensor_of(bad_rank[c], bad[c][i], 1.0f)};
    run_at_once(rs, 2);
    for (int i = 0; i < 2; i++) {
      CHECK(rs[i].s && strstr(sm_status_message(rs[i].s), why[c]));
      CHECK(rs[i].y == NULL);
      sm_status_free(rs[i].s);
      sm_tensor_free(rs[i].x);
    }
  }
  int64_t nb = 0, nt = 0;
  sm__batcher_stats(b, &nb, &nt);
  CHECK_EQ_INT(nb, 5);
  CHECK_EQ_INT(nt, 10);
  sm__batcher_free(b);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/sm_test_serve_batch_XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  test_params_file();

  /* The zoo model's directory is named "model", not a number: serve it through a base path
   * holding a symlink named 1. */
  char base[512], link[600];
  snprintf(base, sizeof base, "%s/base", g_dir);
  snprintf(link, sizeof link, "%s/1", base);
  CHECK(mkdir(base, 0755) == 0);
  CHECK(symlink(ZOO_SQUARE_BASE "/model", link) == 0);
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config c = {.name = "sq", .base_path = base, .policy = SM_POLICY_LATEST, .latest_n = 1};
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  sm_servable *sv = NULL;
  CHECK_OK(sm__manager_acquire(m, "sq", 0, NULL, &sv));
  if (!sv) {
    sm__manager_free(m);
    TEST_MAIN_END();
  }

  test_batches_form(sv);
  test_parked(sv);
  test_padding(sv);

  /* Many threads, batches up to 8 rows, a timeout long enough to merge. */
  int64_t sizes[] = {2, 4, 8};
  sm_batching_params p = {.max_batch_size = 8, .batch_timeout_micros = 2000, .num_batch_threads = 2,
                          .max_enqueued_batches = 1000, .allowed_batch_sizes = sizes, .nallowed = 3};
  sm_batcher *b = NULL;
  CHECK_OK(sm__batcher_new(&p, &b));
  run_threads(b, sv, 8, 40);

  const char *in[] = {"x"}, *out[] = {"y"};
  /* A request larger than max_batch_size is refused, as TF Serving without splitting. */
  sm_tensor *big = make_input(9, 2, 1.0f), *y = NULL;
  CHECK_ERR(sm__batcher_run(b, sv, "serving_default", in, &big, 1, out, 1, &y, NULL),
            "Task size 9 is larger than maximum input batch size 8");
  sm_tensor_free(big);
  /* Rank 0 runs alone and still gives the right answer. */
  sm_tensor *x0 = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 0, NULL, &x0));
  if (x0) ((float *)sm_tensor_data(x0))[0] = 3.0f;
  CHECK_OK(sm__batcher_run(b, sv, "serving_default", in, &x0, 1, out, 1, &y, NULL));
  if (y) CHECK(((float *)sm_tensor_data(y))[0] == 9.0f && sm_tensor_rank(y) == 0);
  sm_tensor_free(y);
  y = NULL;
  sm_tensor_free(x0);
  /* Padded single request: 3 rows padded to 4, the caller sees 3. */
  sm_tensor *x3 = make_input(3, 2, 2.0f);
  CHECK_OK(sm__batcher_run(b, sv, "serving_default", in, &x3, 1, out, 1, &y, NULL));
  if (y) {
    CHECK_EQ_INT(sm_tensor_dims(y)[0], 3);
    CHECK(((float *)sm_tensor_data(y))[5] == (2.0f + 2.5f) * (2.0f + 2.5f));
  }
  sm_tensor_free(y);
  y = NULL;
  sm_tensor_free(x3);
  /* Errors reach the caller: an unknown signature. */
  sm_tensor *x1 = make_input(1, 2, 0.0f);
  CHECK_ERR(sm__batcher_run(b, sv, "nope", in, &x1, 1, out, 1, &y, NULL), "nope");
  sm_tensor_free(x1);
  sm__batcher_free(b);

  /* No timeout, one thread, no allowed sizes: every request still right. */
  sm_batching_params q = {.max_batch_size = 4, .batch_timeout_micros = 0, .num_batch_threads = 1,
                          .max_enqueued_batches = 1000};
  CHECK_OK(sm__batcher_new(&q, &b));
  run_threads(b, sv, 6, 30);
  sm__batcher_free(b);
  /* No timeout, two batches at once, padded sizes: the callers run the batches themselves. */
  sm_batching_params q2 = {.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 2,
                           .max_enqueued_batches = 1000, .allowed_batch_sizes = sizes, .nallowed = 3};
  CHECK_OK(sm__batcher_new(&q2, &b));
  run_threads(b, sv, 8, 30);
  sm__batcher_free(b);
  /* Defaults. */
  CHECK_OK(sm__batcher_new(NULL, &b));
  run_threads(b, sv, 4, 10);
  sm__batcher_free(b);
  sm_batching_params bad = {.max_batch_size = 4, .num_batch_threads = 1, .max_enqueued_batches = 1,
                            .allowed_batch_sizes = sizes, .nallowed = 3};
  CHECK_ERR(sm__batcher_new(&bad, &b), "final entry in allowed_batch_sizes must equal max_batch_size");
  sm_batching_params huge = {.max_batch_size = (int64_t)1 << 40, .num_batch_threads = 1, .max_enqueued_batches = 1};
  CHECK_ERR(sm__batcher_new(&huge, &b), "max_batch_size 1099511627776 is past this server's limit");

  sm__servable_release(sv);
  sm__manager_free(m);
  unlink(link);
  rmdir(base);
  char cfg[512];
  snprintf(cfg, sizeof cfg, "%s/batching.config", g_dir);
  unlink(cfg);
  rmdir(g_dir);
  TEST_MAIN_END();
}
