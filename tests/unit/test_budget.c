/* test_budget.c - the per-run memory budget (sm_run_options.max_run_bytes) and stopping inside a
 * kernel (deadline / cancel checked between chunks of large loops).
 *
 * Budget: Fill, Tile, BroadcastTo, OneHot, RandomUniform and TensorListReserve fed two numbers
 * that ask for gigabytes are refused before allocating, naming the node and the budget; the same
 * ops with small shapes pass under the same budget; a chain whose intermediates are released one
 * after another fits a budget of three of its tensors but not of one, and the budget is whole again
 * after each run (run twice).
 *
 * Load: sm_load_options.max_graph_nodes / max_load_bytes refuse the malformed corpus's ok model
 * below its size and load it above; the default refuses a [32768, 32768] Const from one value.
 *
 * Stopping: a test probe (sm__stop_probe, called by every chunk check) sets the run's cancel flag
 * from inside the kernel's first chunk check, so MatMul, BatchMatMulV2, Conv2D, Sum, Add and TopKV2
 * must notice it themselves (the executor's check before the step has already passed): each run
 * ends CANCELLED "during step" naming the node, with no outputs; deterministic, no timing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

#define T_(k, v) "attr { key: '" k "' value { type: " v " } } "
#define PH(n, t) "node { name: '" n "' op: 'Placeholder' " T_("dtype", t) "}\n"
#define IN2(a, b) "input: '" a "' input: '" b "' "

static const char *graph =
    "graph_def {\n" PH("dims", "DT_INT32") PH("val", "DT_FLOAT") PH("x", "DT_FLOAT") PH("a", "DT_FLOAT")
    PH("b", "DT_FLOAT") PH("img", "DT_FLOAT") PH("flt", "DT_FLOAT") PH("idx", "DT_INT32") PH("depth", "DT_INT32")
    PH("n", "DT_INT32") PH("k", "DT_INT32") PH("mult", "DT_INT32")
    "node { name: 'fill' op: 'Fill' " IN2("dims", "val") T_("T", "DT_FLOAT") T_("index_type", "DT_INT32") "}\n"
    "node { name: 'tile' op: 'Tile' " IN2("x", "mult") T_("T", "DT_FLOAT") T_("Tmultiples", "DT_INT32") "}\n"
    "node { name: 'bcast' op: 'BroadcastTo' " IN2("x", "dims") T_("T", "DT_FLOAT") T_("Tidx", "DT_INT32") "}\n"
    "node { name: 'on' op: 'Const' " T_("dtype", "DT_FLOAT")
    "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }\n"
    "node { name: 'off' op: 'Const' " T_("dtype", "DT_FLOAT")
    "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }\n"
    "node { name: 'onehot' op: 'OneHot' input: 'idx' input: 'depth' input: 'on' input: 'off' " T_("T", "DT_FLOAT")
    T_("TI", "DT_INT32") "attr { key: 'axis' value { i: -1 } } }\n"
    "node { name: 'rand' op: 'RandomUniform' input: 'dims' " T_("T", "DT_INT32") T_("dtype", "DT_FLOAT") "}\n"
    "node { name: 'list' op: 'TensorListReserve' " IN2("dims", "n") T_("element_dtype", "DT_FLOAT")
    T_("shape_type", "DT_INT32") "}\n"
    /* a chain: x + x, then + x, then + x (each intermediate released after its one reader) */
    "node { name: 'c1' op: 'AddV2' " IN2("x", "x") T_("T", "DT_FLOAT") "}\n"
    "node { name: 'c2' op: 'AddV2' " IN2("c1", "x") T_("T", "DT_FLOAT") "}\n"
    "node { name: 'c3' op: 'AddV2' " IN2("c2", "x") T_("T", "DT_FLOAT") "}\n"
    /* large kernels for the stop checks */
    "node { name: 'mm' op: 'MatMul' " IN2("a", "b") T_("T", "DT_FLOAT") "}\n"
    "node { name: 'bmm' op: 'BatchMatMulV2' " IN2("a", "b") T_("T", "DT_FLOAT") "}\n"
    "node { name: 'conv' op: 'Conv2D' " IN2("img", "flt") T_("T", "DT_FLOAT")
    "attr { key: 'strides' value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: 'padding' value { s: 'SAME' } } }\n"
    "node { name: 'axis' op: 'Const' " T_("dtype", "DT_INT32")
    "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }\n"
    "node { name: 'sum' op: 'Sum' " IN2("a", "axis") T_("T", "DT_FLOAT") T_("Tidx", "DT_INT32") "}\n"
    "node { name: 'add' op: 'AddV2' " IN2("a", "b") T_("T", "DT_FLOAT") "}\n"
    "node { name: 'topk' op: 'TopKV2' " IN2("a", "k") T_("T", "DT_FLOAT") T_("Tk", "DT_INT32")
    "attr { key: 'sorted' value { b: true } } }\n"
    "}\n";

static sm_session *g_s;

static sm_tensor *ivec(int n, const int32_t *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_INT32, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

static sm_tensor *iscalar(int32_t v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_INT32, 0, NULL, &t)) abort();
  *(int32_t *)sm_tensor_data(t) = v;
  return t;
}

static sm_tensor *fmat(int rank, const int64_t *dims) {
  sm_tensor *t;
  if (sm_tensor_new(SM_FLOAT, rank, dims, &t)) abort();
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) p[i] = (float)(i % 7) - 3.0f;
  return t;
}

/* Runs fetch with the two feeds; returns the status, frees everything. */
static sm_status *run2(const char *fa, sm_tensor *a, const char *fb, sm_tensor *b, const char *fetch,
                       const sm_run_options *ro, int64_t *out_elems) {
  const char *fn[2] = {fa, fb};
  sm_tensor *feeds[2] = {a, b}, *out = NULL;
  sm_status *st = sm__session_run_opts(g_s, fn, feeds, b ? 2 : 1, &fetch, 1, NULL, 0, &out, ro);
  if (out_elems) *out_elems = out ? sm_tensor_num_elements(out) : -1;
  if (st) CHECK(out == NULL);
  sm_tensor_free(out);
  sm_tensor_free(a);
  sm_tensor_free(b);
  return st;
}

static void check_refused(sm_status *st, const char *node) {
  CHECK(sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  const char *m = sm_status_message(st);
  CHECK(st && strstr(m, node) && strstr(m, "max_run_bytes 1048576"));
  if (st && (!strstr(m, node) || !strstr(m, "max_run_bytes"))) fprintf(stderr, "got: %s\n", m);
  sm_status_free(st);
}

static void test_budget_refuses(void) {
  sm_run_options ro = {.max_run_bytes = 1 << 20};
  int32_t huge[2] = {65536, 65536}, small[2] = {2, 3};
  int64_t d1 = 1, n = 0;
  sm_tensor *one = fmat(1, &d1);
  check_refused(run2("dims", ivec(2, huge), "val", fmat(0, NULL), "fill:0", &ro, NULL), "node 'fill' (Fill)");
  CHECK_OK(run2("dims", ivec(2, small), "val", fmat(0, NULL), "fill:0", &ro, &n));
  CHECK(n == 6);
  int32_t mult[1] = {1 << 30};
  check_refused(run2("x", fmat(1, &d1), "mult", ivec(1, mult), "tile:0", &ro, NULL), "node 'tile' (Tile)");
  check_refused(run2("x", fmat(1, &d1), "dims", ivec(2, huge), "bcast:0", &ro, NULL), "node 'bcast' (BroadcastTo)");
  CHECK_OK(run2("x", fmat(1, &d1), "dims", ivec(2, small), "bcast:0", &ro, &n));
  check_refused(run2("idx", ivec(2, huge), "depth", iscalar(1 << 30), "onehot:0", &ro, NULL), "node 'onehot' (OneHot)");
  check_refused(run2("dims", ivec(2, huge), NULL, NULL, "rand:0", &ro, NULL), "node 'rand' (RandomUniform)");
  int32_t none[1] = {-1};
  check_refused(run2("dims", ivec(1, none), "n", iscalar(1 << 30), "list:0", &ro, NULL),
                "node 'list' (TensorListReserve)");
  CHECK_OK(run2("dims", ivec(1, none), "n", iscalar(10), "list:0", &ro, NULL));
  /* without a budget, the same small runs pass too */
  CHECK_OK(run2("dims", ivec(2, small), "val", fmat(0, NULL), "fill:0", NULL, &n));
  sm_tensor_free(one);
}

static sm_status *run_chain(size_t budget, int fetch_c1) {
  int64_t d = 65536;
  sm_tensor *x = fmat(1, &d), *out[2] = {NULL, NULL};
  const char *fn = "x", *fetch[2] = {"c3:0", "c1:0"};
  sm_run_options ro = {.max_run_bytes = budget};
  sm_status *st = sm__session_run_opts(g_s, &fn, &x, 1, fetch, fetch_c1 ? 2 : 1, NULL, 0, out, &ro);
  if (!st) CHECK(out[0] && sm_tensor_num_elements(out[0]) == d);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm_tensor_free(x);
  return st;
}

static void test_budget_accounting(void) {
  /* 64K floats = 256 KiB a tensor. Fetching c3 only, c2 and c3 overwrite c1 in place (each is its
   * input's last reader): one tensor at a time. Fetching c1 too keeps it: two at once. */
  for (int k = 0; k < 3; k++) { /* the budget is whole again after each run */
    CHECK_OK(run_chain(262144, 0));
    CHECK_OK(run_chain(2 * 262144, 1));
  }
  sm_status *st = run_chain(262143, 0);
  CHECK(sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  CHECK(st && strstr(sm_status_message(st), "max_run_bytes 262143; 0 bytes in use"));
  sm_status_free(st);
  st = run_chain(2 * 262144 - 1, 1);
  CHECK(sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  CHECK(st && strstr(sm_status_message(st), "node 'c2' (AddV2)") && strstr(sm_status_message(st), "; 262144 bytes in use"));
  sm_status_free(st);
}

/* ---- stopping inside a kernel ----------------------------------------------------------------- */
static volatile int g_cancel;
static int g_probes;
static void probe(void) {
  if (g_probes++ == 0) __atomic_store_n(&g_cancel, 1, __ATOMIC_RELAXED);
}

static void check_stops(const char *fa, sm_tensor *a, const char *fb, sm_tensor *b, const char *fetch, const char *node) {
  g_cancel = 0;
  g_probes = 0;
  sm__stop_probe = probe;
  sm_run_options ro = {.cancel = &g_cancel};
  sm_status *st = run2(fa, a, fb, b, fetch, &ro, NULL);
  sm__stop_probe = NULL;
  CHECK(sm_status_code(st) == SM_CANCELLED);
  CHECK(g_probes >= 1);
  const char *m = sm_status_message(st);
  CHECK(st && strstr(m, node) && strstr(m, "run cancelled during step"));
  if (st && !strstr(m, node)) fprintf(stderr, "got: %s\n", m);
  sm_status_free(st);
}

static void test_stop_inside(void) {
  int64_t sq[2] = {512, 512}, img[4] = {1, 128, 128, 16}, flt[4] = {3, 3, 16, 16}, big[2] = {64, 65536};
  check_stops("a", fmat(2, sq), "b", fmat(2, sq), "mm:0", "node 'mm' (MatMul)");
  check_stops("a", fmat(2, sq), "b", fmat(2, sq), "bmm:0", "node 'bmm' (BatchMatMulV2)");
  check_stops("img", fmat(4, img), "flt", fmat(4, flt), "conv:0", "node 'conv' (Conv2D)");
  check_stops("a", fmat(2, big), NULL, NULL, "sum:0", "node 'sum' (Sum)");
  check_stops("a", fmat(2, big), "b", fmat(2, big), "add:0", "node 'add' (AddV2)");
  check_stops("a", fmat(2, big), "k", iscalar(3), "topk:0", "node 'topk' (TopKV2)");
  /* the same runs without a stop finish */
  int64_t n = 0;
  CHECK_OK(run2("a", fmat(2, sq), "b", fmat(2, sq), "mm:0", NULL, &n));
  CHECK(n == 512 * 512);
  sm_run_options far = {.deadline_us = sm_monotonic_us() + 3600ll * 1000000};
  CHECK_OK(run2("a", fmat(2, big), "b", fmat(2, big), "add:0", &far, &n));
  CHECK(n == 64 * 65536);
}

/* ---- the load budget through sm_load_options ------------------------------------------------ */
static void test_load_options(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/malformed/ok", SM_SOURCE_DIR);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  sm_load_options lo = {.max_graph_nodes = 5};
  CHECK_ERR(sm_model_load(dir, tags, 1, &lo, &m), "the load budget (max_graph_nodes 5;");
  CHECK(m == NULL);
  lo = (sm_load_options){.max_load_bytes = 100};
  CHECK_ERR(sm_model_load(dir, tags, 1, &lo, &m), "would pass the load budget (max_load_bytes 100;");
  CHECK(m == NULL);
  lo = (sm_load_options){.max_graph_nodes = 20, .max_load_bytes = 1 << 20};
  CHECK_OK(sm_model_load(dir, tags, 1, &lo, &m)); /* its 12 nodes and their bytes fit */
  sm_model_free(m);
  snprintf(dir, sizeof dir, "%s/tests/fixtures/malformed/const_broadcast_huge", SM_SOURCE_DIR);
  m = NULL;
  CHECK_ERR(sm_model_load(dir, tags, 1, NULL, &m), "4294967296 bytes would pass the load budget");
  CHECK(m == NULL);
}

int main(void) {
  test_load_options();
  CHECK_OK(sm__session_from_pbtxt(graph, &g_s));
  if (g_s) {
    test_budget_refuses();
    test_budget_accounting();
    test_stop_inside();
  }
  sm__session_free(g_s);
  TEST_MAIN_END();
}
