/* test_plan.c - plans, sub-plans and the lock-free run path (plan.c, executor.c, session.c, model.c).
 *
 * Sub-plans: test kernels registered here (sm__kernels_add) include "TestApplyN", whose prepare
 * compiles its function attr `f` with sm__prepare_function_plan and whose compute runs it `n` times,
 * each output fed back as the next input (a while loop in miniature). Checked: values, n = 0, nested
 * sub-plans, an error inside the body reaching the caller with the body node's name, recursion and
 * nesting refused at load, a missing kernel or function inside a body, cancel and deadline inside a
 * sub-plan, the same sub-plan run from several threads.
 *
 * Concurrency: "TestBlockPrepare" blocks in prepare until released, and "TestRendezvous" waits in
 * compute until the other run reaches it too. Two runs of two different plans must meet inside
 * their kernels (they complete only if they truly run at the same time) while a third plan is
 * stuck compiling; through sm_session (names) and through sm_model (signatures of a SavedModel
 * written here). Two threads missing the cache for the same names both build, at once, and one
 * copy is published, the other freed. Every wait has a 30 s limit that turns a deadlock into a failure, not a hang.
 * And a model's signature run computes every output through the signature's plan, or only the
 * outputs asked for through a plan of their own. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

#define WAIT_S 30

static sm_tensor *vec_f(int n, const float *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_FLOAT, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(float));
  return t;
}

static int fvals_are(const sm_tensor *t, int n, const float *want) {
  if (!t || sm_tensor_dtype(t) != SM_FLOAT || sm_tensor_num_elements(t) != n) return 0;
  const float *v = sm_tensor_data(t);
  for (int i = 0; i < n; i++)
    if (v[i] != want[i]) return 0;
  return 1;
}

static struct timespec deadline_in(int seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += seconds;
  return ts;
}

/* ---- test kernels ----------------------------------------------------------------------------- */
typedef struct apply_state {
  sm_plan *f;
  int64_t n;
} apply_state;

static void apply_release(void *state) {
  apply_state *a = state;
  sm__plan_free(a->f);
  free(a);
}

static sm_status *apply_prepare(const sm_node *node, void **state) {
  apply_state *a = calloc(1, sizeof *a);
  if (!a) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_int(node, "n", &a->n);
  const Tensorflow__AttrValue *f = sm__node_attr(node, "f");
  if (!st && (!f || f->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !f->func || !f->func->name))
    st = sm_status_new(SM_INVALID_ARGUMENT, "attr 'f' is not a function");
  if (!st && a->n < 0) st = sm_status_new(SM_INVALID_ARGUMENT, "n = %lld", (long long)a->n);
  if (!st) st = sm__prepare_function_plan(node, f->func->name, &a->f);
  if (!st && (sm__plan_num_feeds(a->f) != 1 || sm__plan_num_fetches(a->f) != 1))
    st = sm_status_new(SM_INVALID_ARGUMENT, "function '%s' is not one tensor in, one out", f->func->name);
  if (st) {
    apply_release(a);
    return st;
  }
  *state = a;
  return NULL;
}

static sm_status *apply_compute(const void *state, sm_kctx *ctx) {
  const apply_state *a = state;
  sm_tensor *cur = sm_tensor_ref((sm_tensor *)sm__kctx_input(ctx, 0));
  for (int64_t i = 0; i < a->n; i++) {
    sm_tensor *next;
    sm_status *st = sm__kctx_run_plan(ctx, a->f, &cur, 1, &next, 1);
    sm_tensor_free(cur);
    if (st) return sm_status_prefix(st, "iteration %lld", (long long)i);
    cur = next;
  }
  sm__kctx_set_output(ctx, 0, cur);
  return NULL;
}

/* The flag the run under test watches (its sm_run_options.cancel), set from inside a sub-plan. */
static volatile int g_cancel;
static sm_status *cancel_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  __atomic_store_n(&g_cancel, 1, __ATOMIC_RELAXED);
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* The run options of the run under test: "TestExpire" moves its deadline into the past. */
static sm_run_options g_ro;
static sm_status *expire_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  g_ro.deadline_us = 1;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* A prepare that blocks, when armed, until released. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int armed, entered, released, timed_out;
} g_block = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0};

static sm_status *block_prepare(const sm_node *node, void **state) {
  (void)node;
  *state = NULL;
  pthread_mutex_lock(&g_block.mu);
  sm_status *st = NULL;
  if (g_block.armed) {
    g_block.entered = 1;
    pthread_cond_broadcast(&g_block.cv);
    struct timespec until = deadline_in(WAIT_S);
    while (!g_block.released && !st)
      if (pthread_cond_timedwait(&g_block.cv, &g_block.mu, &until) == ETIMEDOUT) {
        g_block.timed_out = 1;
        st = sm_status_new(SM_DEADLINE_EXCEEDED, "blocked prepare: never released");
      }
    g_block.entered = 0;
  }
  pthread_mutex_unlock(&g_block.mu);
  return st;
}

static int blocker_in_prepare(void) {
  pthread_mutex_lock(&g_block.mu);
  int in = g_block.entered && !g_block.released;
  pthread_mutex_unlock(&g_block.mu);
  return in;
}

static void blocker_arm(void) {
  pthread_mutex_lock(&g_block.mu);
  g_block.armed = 1;
  g_block.entered = g_block.released = g_block.timed_out = 0;
  pthread_mutex_unlock(&g_block.mu);
}

static int blocker_wait_entered(void) {
  pthread_mutex_lock(&g_block.mu);
  struct timespec until = deadline_in(WAIT_S);
  int ok = 1;
  while (!g_block.entered && ok)
    if (pthread_cond_timedwait(&g_block.cv, &g_block.mu, &until) == ETIMEDOUT) ok = 0;
  pthread_mutex_unlock(&g_block.mu);
  return ok;
}

static void blocker_release(void) {
  pthread_mutex_lock(&g_block.mu);
  g_block.released = 1;
  g_block.armed = 0;
  pthread_cond_broadcast(&g_block.cv);
  pthread_mutex_unlock(&g_block.mu);
}

/* Two runs meet here: each waits for the other. Each records whether the blocked prepare was still
 * blocked when they met. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived, met, saw_blocked;
} g_rv = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void rendezvous_reset(void) {
  pthread_mutex_lock(&g_rv.mu);
  g_rv.arrived = g_rv.met = g_rv.saw_blocked = 0;
  pthread_mutex_unlock(&g_rv.mu);
}

static sm_status *rendezvous_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  pthread_mutex_lock(&g_rv.mu);
  g_rv.arrived++;
  pthread_cond_broadcast(&g_rv.cv);
  struct timespec until = deadline_in(WAIT_S);
  sm_status *st = NULL;
  while (g_rv.arrived < 2 && !st)
    if (pthread_cond_timedwait(&g_rv.cv, &g_rv.mu, &until) == ETIMEDOUT)
      st = sm_status_new(SM_DEADLINE_EXCEEDED, "rendezvous: the other run never arrived");
  if (!st) {
    g_rv.met++;
    g_rv.saw_blocked += blocker_in_prepare();
  }
  pthread_mutex_unlock(&g_rv.mu);
  if (!st) sm__kctx_forward(ctx, 0, 0);
  return st;
}

static sm_status *forward_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

/* A prepare that, when armed, waits for a second prepare of it to arrive (two plans built at
 * once); prepares and releases counted. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int armed, arrived, prepared, released;
} g_mp = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0};

static sm_status *meet_prepare(const sm_node *node, void **state) {
  (void)node;
  static int token;
  pthread_mutex_lock(&g_mp.mu);
  g_mp.prepared++;
  sm_status *st = NULL;
  if (g_mp.armed) {
    g_mp.arrived++;
    pthread_cond_broadcast(&g_mp.cv);
    struct timespec until = deadline_in(WAIT_S);
    while (g_mp.arrived < 2 && !st)
      if (pthread_cond_timedwait(&g_mp.cv, &g_mp.mu, &until) == ETIMEDOUT)
        st = sm_status_new(SM_DEADLINE_EXCEEDED, "meet prepare: the other build never arrived");
  }
  pthread_mutex_unlock(&g_mp.mu);
  *state = st ? NULL : &token;
  return st;
}

static void meet_release(void *state) {
  (void)state;
  pthread_mutex_lock(&g_mp.mu);
  g_mp.released++;
  pthread_mutex_unlock(&g_mp.mu);
}

/* Counts its computes. */
static int g_count;
static sm_status *count_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  __atomic_add_fetch(&g_count, 1, __ATOMIC_RELAXED);
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static const sm_kernel test_kernels[] = {
    {"TestApplyN", apply_prepare, apply_compute, apply_release, 0},
    {"TestCancel", NULL, cancel_compute, NULL, 0},
    {"TestExpire", NULL, expire_compute, NULL, 0},
    {"TestBlockPrepare", block_prepare, forward_compute, NULL, 0},
    {"TestRendezvous", NULL, rendezvous_compute, NULL, 0},
    {"TestCount", NULL, count_compute, NULL, 0},
    {"TestMeetPrepare", meet_prepare, forward_compute, meet_release, 0},
    {0},
};

/* ---- graphs ----------------------------------------------------------------------------------- */
#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define FUNC_ATTR(k, f) "attr { key: \"" k "\" value { func { name: \"" f "\" } } } "
#define INT_ATTR(k, v) "attr { key: \"" k "\" value { i: " v " } } "
#define PH(name)                                                                               \
  "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", "DT_FLOAT")                 \
  "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"
#define F1(op)                                                                                      \
  "op { name: \"" op "\" input_arg { name: \"x\" type: DT_FLOAT } output_arg { name: \"y\" type: DT_FLOAT } " \
  "}\n"
#define OP_LIST                                                                                               \
  "op { name: \"TestApplyN\" input_arg { name: \"x\" type_attr: \"T\" } output_arg { name: \"y\" type_attr: " \
  "\"T\" } attr { name: \"T\" type: \"type\" } attr { name: \"f\" type: \"func\" } attr { name: \"n\" type: " \
  "\"int\" } }\n" F1("TestCancel") F1("TestExpire") F1("TestBlockPrepare") F1("TestRendezvous") F1("TestCount")  \
      F1("TestMeetPrepare") F1("FooOp")
#define OPS "meta_info_def { stripped_op_list {\n" OP_LIST "} }\n"
#define OPS_TAGGED "meta_info_def { tags: \"serve\" stripped_op_list {\n" OP_LIST "} }\n"
/* a function node: out = x <op> c, c a float scalar const named <c> */
#define FCONST_NODE(name, v)                                                                            \
  "node_def { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")                            \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: " v " } } } }\n"
#define SIG_T(name)                                                                                   \
  "signature { name: \"" name "\" input_arg { name: \"x\" type_attr: \"T\" } output_arg { name: \"y\" "     \
  "type_attr: \"T\" } attr { name: \"T\" type: \"type\" } }\n"
#define SIG_F(name)                                                                                   \
  "signature { name: \"" name "\" input_arg { name: \"x\" type: DT_FLOAT } output_arg { name: \"y\" type: " \
  "DT_FLOAT } }\n"
#define APPLY(name, in, f, n)                                                                                \
  "node { name: \"" name "\" op: \"TestApplyN\" input: \"" in "\" " ATTR_T("T", "DT_FLOAT") FUNC_ATTR("f", f) \
      INT_ATTR("n", n) "}\n"

static const char *apply_graph =
    OPS "graph_def {\n" PH("x")
    APPLY("apply3", "x", "f", "3") APPLY("apply0", "x", "f", "0") APPLY("apply_nested", "x", "nest0", "2")
    APPLY("apply_bad", "x", "fbad", "2") APPLY("apply_cancel", "x", "fcancel", "3")
    APPLY("apply_expire", "x", "fexpire", "3") APPLY("apply_rec", "x", "frec", "1")
    APPLY("apply_mutual", "x", "fa", "1") APPLY("apply_missing", "x", "fmissing", "1")
    APPLY("apply_nofunc", "x", "nope", "1") APPLY("apply_ctl", "x", "fctl", "2")
    "library {\n"
    /* f(x) = x * 2 + 1, the multiply's T bound from the caller's T */
    "function { " SIG_T("f") FCONST_NODE("two", "2") FCONST_NODE("one", "1")
    "node_def { name: \"mul\" op: \"Mul\" input: \"x\" input: \"two:output:0\"\n"
    "  attr { key: \"T\" value { placeholder: \"T\" } } }\n"
    "node_def { name: \"add\" op: \"AddV2\" input: \"mul:z:0\" input: \"one:output:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "ret { key: \"y\" value: \"add:z:0\" } }\n"
    /* nest0 -> nest1 -> nest2 -> f, one application each: f(x) */
    "function { " SIG_T("nest0") "node_def { name: \"a\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "nest1") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"a:y:0\" } }\n"
    "function { " SIG_T("nest1") "node_def { name: \"a\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "nest2") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"a:y:0\" } }\n"
    "function { " SIG_T("nest2") "node_def { name: \"a\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "f") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"a:y:0\" } }\n"
    /* a body that fails at run time: [3] + [2] */
    "function { " SIG_F("fbad")
    "node_def { name: \"c2\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 } } } }\n"
    "node_def { name: \"add\" op: \"AddV2\" input: \"x\" input: \"c2:output:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "ret { key: \"y\" value: \"add:z:0\" } }\n"
    /* a body that cancels its own run, or moves its deadline into the past, then has more steps */
    "function { " SIG_F("fcancel") "node_def { name: \"c\" op: \"TestCancel\" input: \"x\" }\n" FCONST_NODE("two", "2")
    "node_def { name: \"mul\" op: \"Mul\" input: \"c:y:0\" input: \"two:output:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "ret { key: \"y\" value: \"mul:z:0\" } }\n"
    "function { " SIG_F("fexpire") "node_def { name: \"e\" op: \"TestExpire\" input: \"x\" }\n" FCONST_NODE("two", "2")
    "node_def { name: \"mul\" op: \"Mul\" input: \"e:y:0\" input: \"two:output:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "ret { key: \"y\" value: \"mul:z:0\" } }\n"
    /* recursion: frec -> frec; fa -> fb -> fa */
    "function { " SIG_T("frec") "node_def { name: \"again\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "frec") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"again:y:0\" } }\n"
    "function { " SIG_T("fa") "node_def { name: \"to_b\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "fb") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"to_b:y:0\" } }\n"
    "function { " SIG_T("fb") "node_def { name: \"to_a\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
    FUNC_ATTR("f", "fa") INT_ATTR("n", "1") "} ret { key: \"y\" value: \"to_a:y:0\" } }\n"
    /* a body op with no kernel */
    "function { " SIG_F("fmissing") "node_def { name: \"foo\" op: \"FooOp\" input: \"x\" }\n"
    "ret { key: \"y\" value: \"foo:y:0\" } }\n"
    /* a control output and a control input on the argument: y = x + 1 after "side" */
    "function { " SIG_F("fctl") FCONST_NODE("one", "1")
    "node_def { name: \"side\" op: \"NoOp\" input: \"^x\" }\n"
    "node_def { name: \"add\" op: \"AddV2\" input: \"x\" input: \"one:output:0\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "ret { key: \"y\" value: \"add:z:0\" } control_ret { key: \"s\" value: \"side\" } }\n"
    "}\n"
    "}\n";

static sm_status *run1(sm_session *s, const char *fetch, sm_tensor *x, sm_tensor **out, const sm_run_options *ro) {
  return sm__session_run_opts(s, (const char *[]){"x"}, &x, 1, &fetch, 1, NULL, 0, out, ro);
}

typedef struct apply_thread_arg {
  sm_session *s;
  sm_tensor *x;
  int wrong;
} apply_thread_arg;

static void *apply_thread(void *p) {
  apply_thread_arg *a = p;
  for (int i = 0; i < 50; i++) {
    sm_tensor *o = NULL;
    sm_status *st = run1(a->s, "apply3", a->x, &o, NULL);
    if (st || !fvals_are(o, 3, (float[]){15, 23, 31})) a->wrong++;
    sm_status_free(st);
    sm_tensor_free(o);
  }
  return NULL;
}

static void test_sub_plans(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(apply_graph, &s));
  if (!s) return;
  sm_tensor *x = vec_f(3, (float[]){1, 2, 3}), *o = NULL;
  /* f three times: 1 -> 3 -> 7 -> 15 */
  CHECK_OK(run1(s, "apply3", x, &o, NULL));
  CHECK(fvals_are(o, 3, (float[]){15, 23, 31}));
  sm_tensor_free(o);
  /* n = 0: the input as it came */
  CHECK_OK(run1(s, "apply0", x, &o, NULL));
  CHECK(fvals_are(o, 3, (float[]){1, 2, 3}));
  sm_tensor_free(o);
  /* sub-plans inside sub-plans: f(f(x)) through three levels each time */
  CHECK_OK(run1(s, "apply_nested", x, &o, NULL));
  CHECK(fvals_are(o, 3, (float[]){7, 11, 15}));
  sm_tensor_free(o);
  /* control outputs and a control input on an argument run too */
  CHECK_OK(run1(s, "apply_ctl", x, &o, NULL));
  CHECK(fvals_are(o, 3, (float[]){3, 4, 5}));
  sm_tensor_free(o);
  /* an error in the body names the caller, the function and the body's node */
  o = NULL;
  CHECK_ERR(run1(s, "apply_bad", x, &o, NULL),
            "node 'apply_bad' (TestApplyN): iteration 0: function 'fbad': node 'add' (AddV2): Incompatible shapes");
  CHECK(o == NULL);
  /* cancel and deadline are checked between the sub-plan's steps */
  g_ro = (sm_run_options){.cancel = &g_cancel};
  g_cancel = 0;
  sm_status *st = run1(s, "apply_cancel", x, &o, &g_ro);
  CHECK(sm_status_code(st) == SM_CANCELLED);
  CHECK(st && strstr(sm_status_message(st), "node 'apply_cancel' (TestApplyN): iteration 0: function 'fcancel': "
                                            "run cancelled before step"));
  sm_status_free(st);
  g_ro = (sm_run_options){.deadline_us = 0};
  st = run1(s, "apply_expire", x, &o, &g_ro);
  CHECK(sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  CHECK(st && strstr(sm_status_message(st), "function 'fexpire': deadline exceeded before step"));
  sm_status_free(st);
  CHECK(o == NULL);
  /* refused when the plan is built (at load for a model), not by overflowing the stack */
  CHECK_ERR(sm__session_prepare(s, (const char *[]){"x"}, 1, (const char *[]){"apply_rec"}, 1, NULL, 0),
            "node 'apply_rec' (TestApplyN): function 'frec': node 'again' (TestApplyN): function 'frec' calls itself");
  CHECK_ERR(sm__session_prepare(s, (const char *[]){"x"}, 1, (const char *[]){"apply_mutual"}, 1, NULL, 0),
            "function 'fa' calls itself (through node 'to_a')");
  CHECK_ERR(sm__session_prepare(s, (const char *[]){"x"}, 1, (const char *[]){"apply_missing"}, 1, NULL, 0),
            "node 'apply_missing' (TestApplyN): function 'fmissing': this runtime has no kernel for 1 node(s) this "
            "run needs: FooOp (node 'foo')");
  CHECK_ERR(sm__session_prepare(s, (const char *[]){"x"}, 1, (const char *[]){"apply_nofunc"}, 1, NULL, 0),
            "node 'apply_nofunc' (TestApplyN): function 'nope' is not in the graph's library");
  /* only from a prepare that plan building runs */
  static int sentinel;
  sm_plan *p = (sm_plan *)(void *)&sentinel;
  CHECK_ERR(sm__prepare_function_plan(sm__cgraph_node(sm__session_graph(s), 0), "f", &p),
            "only be compiled from a kernel's prepare");
  CHECK(p == NULL);
  /* one sub-plan, many threads */
  pthread_t th[4];
  apply_thread_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (apply_thread_arg){s, x, 0};
    CHECK(pthread_create(&th[i], NULL, apply_thread, &a[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(a[i].wrong, 0);
  }
  sm_tensor_free(x);
  sm__session_free(s);
}

/* A chain of functions d0 -> d1 -> ... -> d<n-1>, each applying the next once; the last is x + 1. */
static char *chain_graph(int n) {
  size_t cap = 4096 + (size_t)n * 512, len = 0;
  char *g = malloc(cap);
  if (!g) abort();
  len += (size_t)snprintf(g + len, cap - len, "%s graph_def {\n" PH("x") APPLY("deep", "x", "d0", "1") "library {\n",
                          OPS);
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(g + len, cap - len,
                            "function { signature { name: \"d%d\" input_arg { name: \"x\" type_attr: \"T\" }\n"
                            "  output_arg { name: \"y\" type_attr: \"T\" } attr { name: \"T\" type: \"type\" } }\n",
                            i);
    if (i + 1 < n)
      len += (size_t)snprintf(g + len, cap - len,
                              "node_def { name: \"a\" op: \"TestApplyN\" input: \"x\" " ATTR_T("T", "DT_FLOAT")
                              "attr { key: \"f\" value { func { name: \"d%d\" } } } " INT_ATTR("n", "1")
                              "} ret { key: \"y\" value: \"a:y:0\" } }\n",
                              i + 1);
    else
      len += (size_t)snprintf(g + len, cap - len, FCONST_NODE("one", "1")
                              "node_def { name: \"add\" op: \"AddV2\" input: \"x\" input: \"one:output:0\" "
                              "attr { key: \"T\" value { placeholder: \"T\" } } }\n"
                              "ret { key: \"y\" value: \"add:z:0\" } }\n");
  }
  snprintf(g + len, cap - len, "} }\n");
  return g;
}

static void test_sub_plan_depth(void) {
  /* 32 levels of sub-plans: allowed, and each level runs */
  char *txt = chain_graph(32);
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(txt, &s));
  free(txt);
  if (s) {
    sm_tensor *x = vec_f(2, (float[]){1, 5}), *o = NULL;
    CHECK_OK(run1(s, "deep", x, &o, NULL));
    CHECK(fvals_are(o, 2, (float[]){2, 6}));
    sm_tensor_free(o);
    sm_tensor_free(x);
    sm__session_free(s);
  }
  /* 33: refused with a message */
  txt = chain_graph(33);
  CHECK_OK(sm__session_from_pbtxt(txt, &s));
  free(txt);
  if (s) {
    CHECK_ERR(sm__session_prepare(s, (const char *[]){"x"}, 1, (const char *[]){"deep"}, 1, NULL, 0),
              "function 'd32' (node 'a'): sub-plans nest deeper than 32");
    sm__session_free(s);
  }
}

/* ---- concurrency ------------------------------------------------------------------------------ */
static const char *meet_graph =
    OPS "graph_def {\n" PH("a") PH("b") PH("c")
    "node { name: \"ra\" op: \"TestRendezvous\" input: \"a\" }\n"
    "node { name: \"rb\" op: \"TestRendezvous\" input: \"b\" }\n"
    "node { name: \"blk\" op: \"TestBlockPrepare\" input: \"c\" }\n"
    "}\n";

typedef struct run_arg {
  sm_session *s; /* through the session by name ... */
  sm_model *m;   /* ... or through a model */
  const char *feed, *fetch, *sig; /* sig: a signature of m (else a Session.run on m) */
  float v;
  sm_status *st;
  float got;
} run_arg;

static void *run_thread(void *p) {
  run_arg *a = p;
  sm_tensor *x = vec_f(1, &a->v), *o = NULL;
  if (a->s)
    a->st = sm__session_run(a->s, &a->feed, &x, 1, &a->fetch, 1, NULL, 0, &o);
  else if (a->sig)
    a->st = sm_model_run(a->m, a->sig, (const char *[]){"x"}, &x, 1, NULL, 1, &o);
  else
    a->st = sm_model_session_run(a->m, &a->feed, &x, 1, &a->fetch, 1, NULL, 0, &o);
  a->got = o && sm_tensor_num_elements(o) == 1 ? *(const float *)sm_tensor_data(o) : -1;
  sm_tensor_free(o);
  sm_tensor_free(x);
  return NULL;
}

/* C compiles a plan whose prepare blocks; meanwhile A and B run their plans and must meet inside
 * them. Then C is released and finishes. */
static void meet_while_compiling(run_arg *ra, run_arg *rb, run_arg *rc) {
  rendezvous_reset();
  blocker_arm();
  pthread_t tc, ta, tb;
  CHECK(pthread_create(&tc, NULL, run_thread, rc) == 0);
  int entered = blocker_wait_entered();
  CHECK(entered);
  CHECK(pthread_create(&ta, NULL, run_thread, ra) == 0);
  CHECK(pthread_create(&tb, NULL, run_thread, rb) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  int still_blocked = blocker_in_prepare();
  blocker_release();
  pthread_join(tc, NULL);
  CHECK_OK(ra->st);
  CHECK_OK(rb->st);
  CHECK_OK(rc->st);
  CHECK(ra->got == ra->v && rb->got == rb->v && rc->got == rc->v);
  pthread_mutex_lock(&g_rv.mu);
  CHECK_EQ_INT(g_rv.met, 2);         /* both runs were inside their kernels at once */
  CHECK_EQ_INT(g_rv.saw_blocked, 2); /* while the third plan was still compiling */
  pthread_mutex_unlock(&g_rv.mu);
  CHECK(still_blocked);
  CHECK(!g_block.timed_out);
}

/* Two threads miss the cache for the same names at once: both build (their prepares meet, so
 * neither build holds a lock the other needs), one plan is published, the other copy is freed. */
static void test_build_race(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(
      OPS "graph_def {\n" PH("a") "node { name: \"mp\" op: \"TestMeetPrepare\" input: \"a\" }\n}\n", &s));
  if (!s) return;
  pthread_mutex_lock(&g_mp.mu);
  g_mp.armed = 1;
  g_mp.arrived = g_mp.prepared = g_mp.released = 0;
  pthread_mutex_unlock(&g_mp.mu);
  run_arg r1 = {s, NULL, "a", "mp", NULL, 1, NULL, 0}, r2 = {s, NULL, "a", "mp", NULL, 2, NULL, 0};
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, run_thread, &r1) == 0);
  CHECK(pthread_create(&t2, NULL, run_thread, &r2) == 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK_OK(r1.st);
  CHECK_OK(r2.st);
  CHECK(r1.got == 1 && r2.got == 2);
  pthread_mutex_lock(&g_mp.mu);
  g_mp.armed = 0;
  CHECK_EQ_INT(g_mp.prepared, 2);
  CHECK_EQ_INT(g_mp.released, 1); /* the copy that lost */
  pthread_mutex_unlock(&g_mp.mu);
  /* later runs find the published plan */
  run_arg r3 = {s, NULL, "a", "mp", NULL, 3, NULL, 0};
  run_thread(&r3);
  CHECK_OK(r3.st);
  CHECK(r3.got == 3);
  CHECK_EQ_INT(g_mp.prepared, 2);
  sm__session_free(s);
  CHECK_EQ_INT(g_mp.released, 2);
}

static void test_concurrent_session(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(meet_graph, &s));
  if (!s) return;
  /* A's and B's plans exist already; C's is compiled during the test */
  CHECK_OK(sm__session_prepare(s, (const char *[]){"a"}, 1, (const char *[]){"ra"}, 1, NULL, 0));
  CHECK_OK(sm__session_prepare(s, (const char *[]){"b"}, 1, (const char *[]){"rb"}, 1, NULL, 0));
  run_arg ra = {s, NULL, "a", "ra", NULL, 1, NULL, 0}, rb = {s, NULL, "b", "rb", NULL, 2, NULL, 0};
  run_arg rc = {s, NULL, "c", "blk", NULL, 3, NULL, 0};
  meet_while_compiling(&ra, &rb, &rc);
  sm__session_free(s);
}

/* The same graph as a SavedModel with two signatures (built at load); the blocked plan comes from a
 * Session.run by name on the loaded model. */
static const char *meet_model =
    "saved_model_schema_version: 1\n"
    "meta_graphs {\n" OPS_TAGGED "graph_def {\n" PH("a") PH("b") PH("c")
    "node { name: \"ra\" op: \"TestRendezvous\" input: \"a\" }\n"
    "node { name: \"rb\" op: \"TestRendezvous\" input: \"b\" }\n"
    "node { name: \"blk\" op: \"TestBlockPrepare\" input: \"c\" }\n"
    "node { name: \"ident\" op: \"Identity\" input: \"a\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"cnt\" op: \"TestCount\" input: \"a\" }\n"
    "}\n"
    "signature_def { key: \"scount\" value { inputs { key: \"x\" value { name: \"a:0\" dtype: DT_FLOAT } }"
    " outputs { key: \"y\" value { name: \"ident:0\" dtype: DT_FLOAT } }"
    " outputs { key: \"z\" value { name: \"cnt:0\" dtype: DT_FLOAT } }"
    " method_name: \"tensorflow/serving/predict\" } }\n"
    "signature_def { key: \"sa\" value { inputs { key: \"x\" value { name: \"a:0\" dtype: DT_FLOAT } }"
    " outputs { key: \"y\" value { name: \"ra:0\" dtype: DT_FLOAT } } method_name: \"tensorflow/serving/predict\" } }\n"
    "signature_def { key: \"sb\" value { inputs { key: \"x\" value { name: \"b:0\" dtype: DT_FLOAT } }"
    " outputs { key: \"y\" value { name: \"rb:0\" dtype: DT_FLOAT } } method_name: \"tensorflow/serving/predict\" } }\n"
    "}\n";

static void test_concurrent_model(void) {
  char dir[] = "/tmp/test_plan_XXXXXX", file[64];
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  snprintf(file, sizeof file, "%s/saved_model.pbtxt", dir);
  FILE *f = fopen(file, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(meet_model, f);
    fclose(f);
  }
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, (const char *[]){"serve"}, 1, NULL, &m));
  unlink(file);
  rmdir(dir);
  if (!m) return;
  run_arg ra = {NULL, m, NULL, NULL, "sa", 4, NULL, 0}, rb = {NULL, m, NULL, NULL, "sb", 5, NULL, 0};
  run_arg rc = {NULL, m, "c:0", "blk:0", NULL, 6, NULL, 0};
  meet_while_compiling(&ra, &rb, &rc);

  /* Which outputs a signature run computes: all of them through the signature's plan (in any
   * order, repeated or not), only those asked for otherwise. */
  sm_tensor *x = vec_f(1, (float[]){8}), *o[3] = {0};
  const char *xa[] = {"x"};
  g_count = 0;
  CHECK_OK(sm_model_run(m, "scount", xa, &x, 1, NULL, 2, o));
  CHECK(g_count == 1 && o[0] && o[1] && fvals_are(o[0], 1, (float[]){8}) && fvals_are(o[1], 1, (float[]){8}));
  for (int i = 0; i < 2; i++) sm_tensor_free(o[i]);
  CHECK_OK(sm_model_run(m, "scount", xa, &x, 1, (const char *[]){"z", "y", "z"}, 3, o));
  CHECK(g_count == 2 && o[0] && o[1] && o[2] && o[0] == o[2]);
  for (int i = 0; i < 3; i++) sm_tensor_free(o[i]);
  CHECK_OK(sm_model_run(m, "scount", xa, &x, 1, (const char *[]){"y", "y"}, 2, o));
  CHECK(g_count == 2 && o[0] && o[0] == o[1] && fvals_are(o[0], 1, (float[]){8}));
  for (int i = 0; i < 2; i++) sm_tensor_free(o[i]);
  CHECK_OK(sm_model_run(m, "scount", xa, &x, 1, (const char *[]){"z"}, 1, o));
  CHECK(g_count == 3 && fvals_are(o[0], 1, (float[]){8}));
  sm_tensor_free(o[0]);
  CHECK_ERR(sm_model_run(m, "scount", xa, &x, 1, (const char *[]){"y", "w"}, 2, o), "has no output 'w'");
  CHECK(o[0] == NULL && o[1] == NULL);
  sm_tensor_free(x);
  sm_model_free(m);
}

int main(void) {
  CHECK_OK(sm__kernels_add(test_kernels, SM_BACKEND_CPU));
  test_sub_plans();
  test_sub_plan_depth();
  test_build_race();
  test_concurrent_session();
  test_concurrent_model();
  TEST_MAIN_END();
}
