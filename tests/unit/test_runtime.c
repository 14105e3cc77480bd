/* test_runtime.c - resources, the thread pool, and sessions over small pbtxt graphs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu: the pool keeping off its caller's CPU */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/kernel.h"
#include "runtime/resource.h"
#include "runtime/session.h"
#include "test.h"

static sm_tensor *scalar_f(float v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_FLOAT, 0, NULL, &t)) abort();
  *(float *)sm_tensor_data(t) = v;
  return t;
}

static sm_tensor *vec_f(int n, const float *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_FLOAT, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(float));
  return t;
}

static sm_tensor *vec_s(int n, const char *const *s) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++)
    if (sm_tensor_set_string(t, i, s[i], strlen(s[i]))) abort();
  return t;
}

static sm_tensor *vec_i64(int n, const int64_t *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_INT64, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(int64_t));
  return t;
}

static float f0(const sm_tensor *t) { return ((const float *)sm_tensor_data(t))[0]; }

/* ---- resources ------------------------------------------------------------------------------ */
static void test_variables(void) {
  sm_resources *r;
  CHECK_OK(sm__resources_new(&r));
  sm_variable *v, *v2;
  CHECK_OK(sm__resources_variable(r, "", "w", SM_FLOAT, &v));
  CHECK_OK(sm__resources_variable(r, "", "w", SM_FLOAT + SM_DTYPE_REF_OFFSET, &v2));
  CHECK(v == v2);
  CHECK_ERR(sm__resources_variable(r, "", "w", SM_INT32, &v2), "DT_INT32");
  sm_variable *other;
  CHECK_OK(sm__resources_variable(r, "box", "w", SM_FLOAT, &other));
  CHECK(other != v);
  CHECK_EQ_STR(sm__variable_name(other), "box/w");
  CHECK(!sm__variable_is_initialized(v));
  sm_tensor *t = NULL;
  sm_status *s = sm__variable_read(v, &t);
  CHECK(sm_status_code(s) == SM_FAILED_PRECONDITION);
  CHECK(strstr(sm_status_message(s), "uninitialized value w") != NULL);
  sm_status_free(s);
  uint64_t g0 = sm__variables_generation();
  CHECK_ERR(sm__variable_assign(v, vec_i64(1, (int64_t[]){1})), "DT_INT64");
  CHECK(sm__variables_generation() == g0); /* a refused assignment does not count */
  CHECK_OK(sm__variable_assign(v, scalar_f(1.5f)));
  CHECK(sm__variables_generation() == g0 + 1);
  CHECK(sm__variable_is_initialized(v));
  CHECK_OK(sm__variable_read(v, &t));
  CHECK(f0(t) == 1.5f);
  /* a reader's reference survives a later assign */
  CHECK_OK(sm__variable_assign(v, scalar_f(2.5f)));
  CHECK(f0(t) == 1.5f);
  sm_tensor_free(t);
  sm__variable_lock(v);
  CHECK_OK(sm__variable_read(v, &t)); /* read and assign work between lock and unlock */
  CHECK_OK(sm__variable_assign(v, scalar_f(f0(t) + 1)));
  sm__variable_unlock(v);
  sm_tensor_free(t);
  CHECK_OK(sm__variable_read(v, &t));
  CHECK(f0(t) == 3.5f);
  sm_tensor_free(t);
  CHECK(sm__variables_generation() == g0 + 3); /* reads do not count */
  /* many variables: the registry grows */
  for (int i = 0; i < 200; i++) {
    char name[32];
    snprintf(name, sizeof name, "v%d", i);
    sm_variable *x;
    CHECK_OK(sm__resources_variable(r, "", name, SM_INT32, &x));
  }
  sm_variable *again;
  CHECK_OK(sm__resources_variable(r, "", "w", SM_FLOAT, &again));
  CHECK(again == v);
  sm__resources_free(r);
  sm__resources_free(NULL);
}

static void test_tables(void) {
  sm_resources *r;
  CHECK_OK(sm__resources_new(&r));
  sm_table *t, *t2;
  CHECK_OK(sm__resources_table(r, "", "vocab", SM_STRING, SM_INT64, &t));
  CHECK_OK(sm__resources_table(r, "", "vocab", SM_STRING, SM_INT64, &t2));
  CHECK(t == t2);
  CHECK_ERR(sm__resources_table(r, "", "vocab", SM_INT64, SM_INT64, &t2), "exists");
  CHECK_ERR(sm__resources_table(r, "", "bad", SM_FLOAT, SM_INT64, &t2), "not supported");
  const char *words[] = {"a", "bb", "", "ccc"};
  sm_tensor *keys = vec_s(4, words), *vals = vec_i64(4, (int64_t[]){10, 20, 30, 40});
  sm_tensor *q = vec_s(5, (const char *[]){"ccc", "zz", "a", "", "bb"});
  sm_tensor *out, *def = NULL;
  int64_t five = 5;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, &five, &out));
  CHECK_OK(sm_tensor_new(SM_INT64, 0, NULL, &def));
  ((int64_t *)sm_tensor_data(def))[0] = -1;
  CHECK_ERR(sm__table_find(t, q, def, out), "not initialized");
  CHECK_OK(sm__table_init(t, keys, vals));
  CHECK(sm__table_is_initialized(t));
  CHECK_EQ_INT(sm__table_size(t), 4);
  CHECK_OK(sm__table_find(t, q, def, out));
  const int64_t *o = sm_tensor_data(out);
  CHECK(o[0] == 40 && o[1] == -1 && o[2] == 10 && o[3] == 30 && o[4] == 20);
  /* second init is a no-op */
  sm_tensor *vals2 = vec_i64(4, (int64_t[]){1, 2, 3, 4});
  CHECK_OK(sm__table_init(t, keys, vals2));
  CHECK_OK(sm__table_find(t, q, def, out));
  CHECK(o[0] == 40);
  sm_tensor_free(vals2);

  /* int64 -> string, duplicate keys */
  sm_table *ts;
  CHECK_OK(sm__resources_table(r, "c", "labels", SM_INT64, SM_STRING, &ts));
  sm_tensor *ik = vec_i64(3, (int64_t[]){7, 8, 7});
  sm_tensor *sv = vec_s(3, (const char *[]){"seven", "eight", "SEVEN"});
  CHECK_ERR(sm__table_init(ts, ik, sv), "different value for same key");
  CHECK(!sm__table_is_initialized(ts));
  sm_tensor_free(sv);
  sv = vec_s(3, (const char *[]){"seven", "eight", "seven"});
  CHECK_OK(sm__table_init(ts, ik, sv));
  CHECK_EQ_INT(sm__table_size(ts), 2);
  sm_tensor *iq = vec_i64(3, (int64_t[]){8, 9, 7});
  sm_tensor *sout, *sdef = vec_s(1, (const char *[]){"UNK"});
  int64_t three = 3;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &three, &sout));
  CHECK_OK(sm__table_find(ts, iq, sdef, sout));
  size_t len;
  CHECK(!strcmp(sm_tensor_string(sout, 0, &len), "eight"));
  CHECK(!strcmp(sm_tensor_string(sout, 1, &len), "UNK"));
  CHECK(!strcmp(sm_tensor_string(sout, 2, &len), "seven"));
  /* wrong dtypes and lengths */
  CHECK_ERR(sm__table_find(ts, q, sdef, sout), "keys must be DT_INT64");
  CHECK_ERR(sm__table_init(t, ik, vals), "initializer gives");
  sm_tensor *short_vals = vec_i64(2, (int64_t[]){1, 2});
  sm_table *t3;
  CHECK_OK(sm__resources_table(r, "", "t3", SM_STRING, SM_INT64, &t3));
  CHECK_ERR(sm__table_init(t3, keys, short_vals), "Expected shape [4] for value, got [2]");
  /* a big table */
  enum { N = 10000 };
  int64_t *kk = malloc(N * sizeof *kk), *vv = malloc(N * sizeof *vv);
  for (int i = 0; i < N; i++) kk[i] = (int64_t)i * 7919, vv[i] = i;
  sm_tensor *bk = vec_i64(N, kk), *bv = vec_i64(N, vv), *bo;
  sm_table *tb;
  CHECK_OK(sm__resources_table(r, "", "big", SM_INT64, SM_INT64, &tb));
  CHECK_OK(sm__table_init(tb, bk, bv));
  int64_t nn = N;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, &nn, &bo));
  CHECK_OK(sm__table_find(tb, bk, def, bo));
  CHECK(!memcmp(sm_tensor_data(bo), vv, N * sizeof *vv));
  free(kk);
  free(vv);
  sm_tensor_free(bk);
  sm_tensor_free(bv);
  sm_tensor_free(bo);
  sm_tensor_free(short_vals);
  sm_tensor_free(iq);
  sm_tensor_free(sout);
  sm_tensor_free(sdef);
  sm_tensor_free(ik);
  sm_tensor_free(sv);
  sm_tensor_free(keys);
  sm_tensor_free(vals);
  sm_tensor_free(q);
  sm_tensor_free(out);
  sm_tensor_free(def);
  sm__resources_free(r);
}

/* ---- thread pool ---------------------------------------------------------------------------- */
typedef struct sumctx {
  const int64_t *v;
  atomic_llong sum;
  atomic_int calls;
  sm_threadpool *pool;
} sumctx;

static void sum_fn(void *c, int64_t b, int64_t e) {
  sumctx *s = c;
  long long acc = 0;
  for (int64_t i = b; i < e; i++) acc += s->v[i];
  atomic_fetch_add(&s->sum, acc);
  atomic_fetch_add(&s->calls, 1);
}

static void nested_fn(void *c, int64_t b, int64_t e) {
  sumctx *s = c;
  for (int64_t i = b; i < e; i++) {
    sumctx inner = {.v = s->v, .pool = s->pool};
    atomic_init(&inner.sum, 0);
    atomic_init(&inner.calls, 0);
    sm__parallel_for(s->pool, 1000, 10, sum_fn, &inner);
    atomic_fetch_add(&s->sum, atomic_load(&inner.sum));
  }
}

static int64_t data[100000];

static void *pool_user(void *arg) {
  sm_threadpool *p = arg;
  for (int k = 0; k < 50; k++) {
    sumctx c = {.v = data};
    atomic_init(&c.sum, 0);
    atomic_init(&c.calls, 0);
    sm__parallel_for(p, 100000, 100, sum_fn, &c);
    if (atomic_load(&c.sum) != 4999950000LL) return (void *)1;
  }
  return NULL;
}

static void test_threadpool(void) {
  for (int i = 0; i < 100000; i++) data[i] = i;
  int sizes[] = {1, 2, 4, 7};
  for (int si = 0; si < 4; si++) {
    sm_threadpool *p;
    CHECK_OK(sm__threadpool_new(sizes[si], &p));
    int64_t ns[] = {0, 1, 5, 99, 100000};
    for (int ni = 0; ni < 5; ni++) {
      sumctx c = {.v = data};
      atomic_init(&c.sum, 0);
      atomic_init(&c.calls, 0);
      sm__parallel_for(p, ns[ni], 1, sum_fn, &c);
      CHECK_EQ_INT(atomic_load(&c.sum), ns[ni] * (ns[ni] - 1) / 2);
      CHECK(atomic_load(&c.calls) <= sizes[si]);
    }
    /* grain bigger than n: inline in one call */
    sumctx c = {.v = data};
    atomic_init(&c.sum, 0);
    atomic_init(&c.calls, 0);
    sm__parallel_for(p, 50, 1000, sum_fn, &c);
    CHECK_EQ_INT(atomic_load(&c.calls), 1);
    /* nested loops do not deadlock */
    sumctx n = {.v = data, .pool = p};
    atomic_init(&n.sum, 0);
    atomic_init(&n.calls, 0);
    sm__parallel_for(p, 64, 1, nested_fn, &n);
    CHECK_EQ_INT(atomic_load(&n.sum), 64LL * 499500);
    /* several callers at once */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, pool_user, p);
    for (int i = 0; i < 4; i++) {
      void *rv;
      pthread_join(th[i], &rv);
      CHECK(rv == NULL);
    }
    sm__threadpool_free(p);
  }
  sumctx c = {.v = data};
  atomic_init(&c.sum, 0);
  atomic_init(&c.calls, 0);
  sm__parallel_for(NULL, 1000, 1, sum_fn, &c);
  CHECK_EQ_INT(atomic_load(&c.calls), 1);
  CHECK_EQ_INT(atomic_load(&c.sum), 499500);
  sm__threadpool_free(NULL);
}

#ifdef __linux__
/* Two chunks that wait for each other (so the caller runs one and the worker the other); the
 * worker's chunk may pin the worker to a CPU first, then notes its CPU and whether its affinity
 * still holds `probe`. */
typedef struct meet {
  atomic_int started;
  pthread_t caller;
  int pin_worker_to, probe; /* pin_worker_to < 0: no pinning */
  atomic_int worker_cpu, worker_has_probe;
} meet;

static void meet_fn(void *arg, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  meet *m = arg;
  atomic_fetch_add(&m->started, 1);
  while (atomic_load(&m->started) < 2) sched_yield();
  if (pthread_equal(pthread_self(), m->caller)) return;
  cpu_set_t s;
  if (m->pin_worker_to >= 0) {
    CPU_ZERO(&s);
    CPU_SET(m->pin_worker_to, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) abort();
  }
  atomic_store(&m->worker_cpu, sched_getcpu());
  CPU_ZERO(&s);
  if (sched_getaffinity(0, sizeof s, &s) != 0) abort();
  atomic_store(&m->worker_has_probe, CPU_ISSET(m->probe, &s) ? 1 : 0);
}

static void meet_run(sm_threadpool *p, meet *m, int pin_worker_to, int probe) {
  atomic_init(&m->started, 0);
  atomic_init(&m->worker_cpu, -1);
  atomic_init(&m->worker_has_probe, -1);
  m->caller = pthread_self();
  m->pin_worker_to = pin_worker_to;
  m->probe = probe;
  sm__parallel_for(p, 2, 1, meet_fn, m);
}

/* A worker that takes a loop's ticket on the CPU its caller posted from moves off it (threadpool.c:
 * after an idle spell the scheduler often put both on one vCPU). The caller is pinned to one CPU
 * and the worker made to share it; the next loop finds the worker elsewhere, its affinity without
 * the caller's CPU. */
static void test_pool_keeps_off_caller(void) {
  cpu_set_t all, one;
  const char *e = getenv("SM_POOL_AVOID");
  if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2 || (e && !strcmp(e, "0"))) return;
  int c0 = 0;
  while (!CPU_ISSET(c0, &all)) c0++;
  sm_threadpool *p;
  CHECK_OK(sm__threadpool_new(2, &p));
  meet m;
  meet_run(p, &m, -1, c0); /* starts the worker, allowed every CPU the test has */
  CHECK(atomic_load(&m.worker_cpu) >= 0);
  CPU_ZERO(&one);
  CPU_SET(c0, &one);
  CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
  meet_run(p, &m, c0, c0); /* the worker joins the caller on c0 */
  CHECK_EQ_INT(atomic_load(&m.worker_cpu), c0);
  meet_run(p, &m, -1, c0); /* it took this ticket on c0: moved off */
  CHECK(atomic_load(&m.worker_cpu) >= 0 && atomic_load(&m.worker_cpu) != c0);
  CHECK_EQ_INT(atomic_load(&m.worker_has_probe), 0);
  CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
  sm__threadpool_free(p);
}
#else
static void test_pool_keeps_off_caller(void) {}
#endif

/* ---- sessions ------------------------------------------------------------------------------- */
#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define FCONST(name, v)                                                                               \
  "node { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")                              \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: " v " } } } }\n"
#define PH(name)                                                                               \
  "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", "DT_FLOAT")                 \
  "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"

static const char *add_graph =
    "graph_def {\n" PH("x") FCONST("c", "2")
    "node { name: \"y\" op: \"AddV2\" input: \"x\" input: \"c\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"z\" op: \"Mul\" input: \"y\" input: \"y\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"w\" op: \"Identity\" input: \"z\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"init\" op: \"NoOp\" }\n"
    "}\n";

static void test_session_basic(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(add_graph, &s));
  if (!s) return;
  sm_tensor *x = vec_f(3, (float[]){1, 2, 3});
  const char *feeds[] = {"x:0"};
  const char *fetch[] = {"w:0", "y", "c:0"};
  sm_tensor *out[3];
  CHECK_OK(sm__session_run(s, feeds, &x, 1, fetch, 3, NULL, 0, out));
  if (out[0]) {
    const float *w = sm_tensor_data(out[0]), *y = sm_tensor_data(out[1]);
    CHECK(w[0] == 9 && w[1] == 16 && w[2] == 25);
    CHECK(y[0] == 3 && y[1] == 4 && y[2] == 5);
    CHECK(f0(out[2]) == 2);
    for (int i = 0; i < 3; i++) sm_tensor_free(out[i]);
  }
  /* same names in another order: one plan, outputs in the caller's order */
  const char *fetch2[] = {"c:0", "w:0"};
  CHECK_OK(sm__session_run(s, feeds, &x, 1, fetch2, 2, NULL, 0, out));
  if (out[0]) {
    CHECK(f0(out[0]) == 2 && f0(out[1]) == 9);
    sm_tensor_free(out[0]);
    sm_tensor_free(out[1]);
  }
  /* feeding an intermediate: x is not needed */
  const char *fy[] = {"y:0"};
  sm_tensor *yv = scalar_f(10);
  CHECK_OK(sm__session_run(s, fy, &yv, 1, (const char *[]){"w"}, 1, NULL, 0, out));
  if (out[0]) {
    CHECK(f0(out[0]) == 100);
    sm_tensor_free(out[0]);
  }
  /* a fed tensor fetched back is the feed */
  CHECK_OK(sm__session_run(s, fy, &yv, 1, fy, 1, NULL, 0, out));
  if (out[0]) {
    CHECK(out[0] == yv);
    sm_tensor_free(out[0]);
  }
  sm_tensor_free(yv);
  /* missing feed */
  CHECK_ERR(sm__session_run(s, NULL, NULL, 0, (const char *[]){"w"}, 1, NULL, 0, out),
            "You must feed a value for placeholder tensor 'x'");
  /* wrong dtype */
  sm_tensor *xi = vec_i64(1, (int64_t[]){1});
  CHECK_ERR(sm__session_run(s, feeds, &xi, 1, (const char *[]){"w"}, 1, NULL, 0, out),
            "feed 'x:0': expected a tensor of dtype DT_FLOAT, given DT_INT64");
  sm_tensor_free(xi);
  /* unknown names */
  CHECK_ERR(sm__session_run(s, feeds, &x, 1, (const char *[]){"nope:0"}, 1, NULL, 0, out), "nope");
  CHECK_ERR(sm__session_run(s, (const char *[]){"nope"}, &x, 1, (const char *[]){"w"}, 1, NULL, 0, out), "nope");
  CHECK_ERR(sm__session_run(s, (const char *[]){"x", "x:0"}, (sm_tensor *[]){x, x}, 2, (const char *[]){"w"}, 1,
                           NULL, 0, out),
            "same tensor");
  /* targets only */
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"^init"}, 1, NULL));
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"init"}, 1, NULL));
  CHECK_OK(sm__session_prepare(s, feeds, 1, (const char *[]){"w"}, 1, NULL, 0));
  /* a runtime error names node and op */
  sm_tensor *x2 = vec_f(2, (float[]){1, 2});
  sm_tensor *yb = vec_f(3, (float[]){1, 2, 3});
  CHECK_ERR(sm__session_run(s, (const char *[]){"x", "c"}, (sm_tensor *[]){x2, yb}, 2, (const char *[]){"y"}, 1,
                           NULL, 0, out),
            "node 'y' (AddV2): ");
  sm_tensor_free(x2);
  sm_tensor_free(yb);
  /* many distinct plans: past the cache limit they still run */
  for (int i = 0; i < 300; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "%s", (i & 1) ? "w:0" : "w");
    const char *fs[] = {nm, "c", "y"};
    int nf = 1 + i % 3;
    sm_tensor *o3[3];
    /* vary the key with duplicate fetches */
    const char *fd[300 + 3];
    for (int k = 0; k < nf; k++) fd[k] = fs[k];
    for (int k = 0; k < i % 5; k++) fd[nf + k] = "c";
    int total = nf + i % 5;
    sm_tensor *ob[310];
    CHECK_OK(sm__session_run(s, feeds, &x, 1, fd, total, NULL, 0, ob));
    for (int k = 0; k < total; k++) sm_tensor_free(ob[k]);
    (void)o3;
  }
  sm_tensor_free(x);
  sm__session_free(s);
  sm__session_free(NULL);
}

/* SM_STEP_PROFILE=FILE (step_profile.c): a plan built while it is set (sessions build at the first
 * run) appends its steps' timings when freed; one built without it writes nothing. */
static void test_step_profile(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/sm_test_step_profile_%d.tsv", (int)getpid());
  remove(path);
  setenv("SM_STEP_PROFILE", path, 1);
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(add_graph, &s));
  if (!s) return;
  sm_tensor *x = vec_f(3, (float[]){1, 2, 3}), *out[1];
  for (int r = 0; r < 3; r++) {
    CHECK_OK(sm__session_run(s, (const char *[]){"x:0"}, &x, 1, (const char *[]){"z:0"}, 1, NULL, 0, out));
    sm_tensor_free(out[0]);
  }
  /* a failed run is no run of the figures (its plan, built here, writes nothing) */
  sm_tensor *x2 = vec_f(2, (float[]){1, 2}), *yb = vec_f(3, (float[]){1, 2, 3});
  CHECK_ERR(sm__session_run(s, (const char *[]){"x", "c"}, (sm_tensor *[]){x2, yb}, 2, (const char *[]){"y"}, 1,
                           NULL, 0, out),
            "node 'y' (AddV2): ");
  sm_tensor_free(x2);
  sm_tensor_free(yb);
  unsetenv("SM_STEP_PROFILE");
  sm__session_free(s);
  char text[4096] = {0};
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
  }
  /* the plan for z (x fed): c, y = x + c, z = y * y */
  CHECK(strstr(text, "# plan (graph) steps 3 runs 3 run_min_us ") != NULL);
  CHECK(strstr(text, "\tAddV2\ty\t3\t") != NULL);
  CHECK(strstr(text, "\tMul\tz\t3\t") != NULL);
  CHECK(strstr(text, "runs 0") == NULL);
  /* built without the variable: no profile */
  remove(path);
  CHECK_OK(sm__session_from_pbtxt(add_graph, &s));
  if (s) {
    CHECK_OK(sm__session_run(s, (const char *[]){"x:0"}, &x, 1, (const char *[]){"z:0"}, 1, NULL, 0, out));
    sm_tensor_free(out[0]);
    sm__session_free(s);
  }
  FILE *g = fopen(path, "r");
  CHECK(g == NULL);
  if (g) fclose(g);
  remove(path);
  sm_tensor_free(x);
}

static const char *missing_graph =
    "meta_info_def { stripped_op_list {\n"
    "  op { name: \"FooOp\" input_arg { name: \"x\" type: DT_FLOAT } output_arg { name: \"y\" type: DT_FLOAT } }\n"
    "  op { name: \"BarOp\" input_arg { name: \"x\" type: DT_FLOAT } output_arg { name: \"y\" type: DT_FLOAT } }\n"
    "} }\n"
    "graph_def {\n" FCONST("c", "1")
    "node { name: \"f1\" op: \"FooOp\" input: \"c\" }\n"
    "node { name: \"b1\" op: \"BarOp\" input: \"f1\" }\n"
    "node { name: \"f2\" op: \"FooOp\" input: \"b1\" }\n"
    "node { name: \"ok\" op: \"Identity\" input: \"c\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "}\n";

static void test_session_missing_kernels(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(missing_graph, &s));
  if (!s) return;
  sm_tensor *out[1];
  sm_status *st = sm__session_prepare(s, NULL, 0, (const char *[]){"f2"}, 1, NULL, 0);
  CHECK(st != NULL);
  if (st) {
    const char *m = sm_status_message(st);
    CHECK(strstr(m, "FooOp (nodes 'f1', 'f2')") != NULL);
    CHECK(strstr(m, "BarOp (node 'b1')") != NULL);
    CHECK(sm_status_code(st) == SM_UNIMPLEMENTED);
    sm_status_free(st);
  }
  /* the part of the graph that has kernels still runs */
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"ok"}, 1, NULL, 0, out));
  if (out[0]) {
    CHECK(f0(out[0]) == 1);
    sm_tensor_free(out[0]);
  }
  sm__session_free(s);
  CHECK_ERR(sm__session_from_pbtxt("graph_def { node { name: \"a\" op: \"Bogus\" } }", &s), "Bogus");
  CHECK_ERR(sm__session_from_pbtxt("graph_def { node { name: ", &s), "");
}

/* TF1 ref variables: VariableV2 + Assign + AssignAdd, fetched values, uninitialized reads */
static const char *ref_graph =
    "graph_def {\n"
    "node { name: \"counter\" op: \"VariableV2\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"shape\" value { shape {} } } }\n" FCONST("zero", "0") FCONST("one", "1")
    "node { name: \"reset\" op: \"Assign\" input: \"counter\" input: \"zero\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"incr\" op: \"AssignAdd\" input: \"counter\" input: \"one\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"read\" op: \"Identity\" input: \"counter\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"plus\" op: \"AddV2\" input: \"counter\" input: \"one\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "}\n";

typedef struct incr_arg {
  sm_session *s;
  int n;
  int fails;
} incr_arg;

static void *incr_thread(void *p) {
  incr_arg *a = p;
  for (int i = 0; i < a->n; i++) {
    sm_tensor *o;
    sm_status *st = sm__session_run(a->s, NULL, NULL, 0, (const char *[]){"incr:0"}, 1, NULL, 0, &o);
    if (st) {
      a->fails++;
      sm_status_free(st);
    } else {
      sm_tensor_free(o);
    }
  }
  return NULL;
}

static void test_session_refs(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(ref_graph, &s));
  if (!s) return;
  sm_tensor *o[2];
  sm_status *st = sm__session_run(s, NULL, NULL, 0, (const char *[]){"read"}, 1, NULL, 0, o);
  CHECK(st && strstr(sm_status_message(st), "uninitialized value counter"));
  CHECK(st && strstr(sm_status_message(st), "node 'read' (Identity)"));
  sm_status_free(st);
  CHECK_ERR(sm__session_run(s, NULL, NULL, 0, (const char *[]){"counter"}, 1, NULL, 0, o), "uninitialized value");
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"reset:0"}, 1, NULL, 0, o));
  if (o[0]) {
    CHECK(sm_tensor_dtype(o[0]) == SM_FLOAT && f0(o[0]) == 0);
    sm_tensor_free(o[0]);
  }
  for (int i = 1; i <= 3; i++) {
    CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"incr:0"}, 1, NULL, 0, o));
    if (o[0]) {
      CHECK(f0(o[0]) == (float)i);
      sm_tensor_free(o[0]);
    }
  }
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"counter:0", "plus"}, 2, NULL, 0, o));
  if (o[0]) {
    CHECK(f0(o[0]) == 3 && f0(o[1]) == 4);
    sm_tensor_free(o[0]);
    sm_tensor_free(o[1]);
  }
  /* four threads incrementing: AssignAdd holds the variable's lock */
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, NULL, 0, (const char *[]){"reset"}, 1, NULL));
  pthread_t th[4];
  incr_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (incr_arg){s, 250, 0};
    pthread_create(&th[i], NULL, incr_thread, &a[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(a[i].fails, 0);
  }
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"read"}, 1, NULL, 0, o));
  if (o[0]) {
    CHECK_EQ_INT((int)f0(o[0]), 1000);
    sm_tensor_free(o[0]);
  }
  sm__session_free(s);
}

int main(void) {
  test_variables();
  test_tables();
  test_threadpool();
  test_pool_keeps_off_caller();
  test_session_basic();
  test_step_profile();
  test_session_missing_kernels();
  test_session_refs();
  TEST_MAIN_END();
}
