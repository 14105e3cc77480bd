/* test_seq_budget.c - TensorLists and TensorArrays charge what they keep to the run's memory budget
 * (sm_run_options.max_run_bytes; kernel.h sm__kctx_hold), run through sm_session on a MetaGraphDef
 * written here.
 *
 * Checked, under a budget of 1 MiB and elements of 1,000 floats (4,000 bytes): a While loop that
 * PushBacks its element every iteration (a TensorList) or writes it into a dynamic_size
 * TensorArrayV3 carried as a loop var is refused with SM_RESOURCE_EXHAUSTED, naming the loop, the
 * element and the budget, once its elements pass the budget (1,000 iterations: 4 MB), and passes
 * below it (100 iterations); without a budget the 1,000 pass. A loop that builds a list of two
 * elements and drops it in every iteration (1,000 iterations, 8 MB pushed in all) is NOT refused:
 * what a list lets go is given back. A list fetched out of a budgeted run outlives the run and is
 * freed after it (ASan: the budget it gives back to is still there). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

#define T_(k, t) "attr { key: '" k "' value { type: " t " } } "
#define B_(k, v) "attr { key: '" k "' value { b: " v " } } "
#define TL(k, ts) "attr { key: '" k "' value { list { " ts " } } } "
#define FN(k, f) "attr { key: '" k "' value { func { name: '" f "' } } } "
#define PH(name, dt) "node { name: '" name "' op: 'Placeholder' " T_("dtype", dt) "}\n"
#define ICONST(nd, name, v)                                                                                \
  nd " { name: '" name "' op: 'Const' " T_("dtype", "DT_INT32")                                           \
     "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape {} int_val: " v " } } } }\n"
#define ARG(n, t) "input_arg { name: '" n "' type: " t " } "
#define OUT(n, t) "output_arg { name: '" n "' type: " t " } "
#define RET(k, v) "ret { key: '" k "' value: '" v "' } "
#define INC "node_def { name: 'inc' op: 'AddV2' input: 'i' input: 'one:output:0' " T_("T", "DT_INT32") "}\n"
#define LT "node_def { name: 'lt' op: 'Less' input: 'i' input: 'n' " T_("T", "DT_INT32") "}\n"
#define EL T_("element_dtype", "DT_FLOAT")
/* loop vars: (i, n, list, x) / (i, n, x) / (i, n, handle, flow, x) */
#define SIG_L(name, outs) "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("n", "DT_INT32") ARG("l", "DT_VARIANT") ARG("x", "DT_FLOAT") outs "} "
#define SIG_D(name, outs) "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("n", "DT_INT32") ARG("x", "DT_FLOAT") outs "} "
#define SIG_T(name, outs)                                                                                    \
  "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("n", "DT_INT32") ARG("h", "DT_RESOURCE") ARG("f", "DT_FLOAT") \
      ARG("x", "DT_FLOAT") outs "} "
#define P OUT("p", "DT_BOOL")

static const char *graph =
    "graph_def {\n" PH("x", "DT_FLOAT") PH("n", "DT_INT32") ICONST("node", "zero", "0") ICONST("node", "unknown", "-1")
    "node { name: 'l0' op: 'EmptyTensorList' input: 'unknown' input: 'unknown' " EL T_("shape_type", "DT_INT32") "}\n"
    /* grow: n PushBacks of x onto one list */
    "node { name: 'grow' op: 'While' input: 'zero' input: 'n' input: 'l0' input: 'x' "
    TL("T", "type: DT_INT32 type: DT_INT32 type: DT_VARIANT type: DT_FLOAT") FN("cond", "cond_l") FN("body", "body_push") "}\n"
    /* drop: n iterations that each build a list of two x and read one back */
    "node { name: 'drop' op: 'While' input: 'zero' input: 'n' input: 'x' "
    TL("T", "type: DT_INT32 type: DT_INT32 type: DT_FLOAT") FN("cond", "cond_d") FN("body", "body_drop") "}\n"
    /* ta: n writes of x into a dynamic TensorArray */
    "node { name: 'ta' op: 'TensorArrayV3' input: 'zero' " T_("dtype", "DT_FLOAT") B_("dynamic_size", "true")
    "attr { key: 'element_shape' value { shape { unknown_rank: true } } } }\n"
    "node { name: 'taw' op: 'While' input: 'zero' input: 'n' input: 'ta' input: 'ta:1' input: 'x' "
    TL("T", "type: DT_INT32 type: DT_INT32 type: DT_RESOURCE type: DT_FLOAT type: DT_FLOAT") FN("cond", "cond_t")
    FN("body", "body_write") "}\n"
    "library {\n"
    "function { " SIG_L("cond_l", P) LT RET("p", "lt:z:0") "}\n"
    "function { " SIG_D("cond_d", P) LT RET("p", "lt:z:0") "}\n"
    "function { " SIG_T("cond_t", P) LT RET("p", "lt:z:0") "}\n"
    "function { " SIG_L("body_push", OUT("i2", "DT_INT32") OUT("n2", "DT_INT32") OUT("l2", "DT_VARIANT") OUT("x2", "DT_FLOAT"))
    ICONST("node_def", "one", "1") INC
    "node_def { name: 'push' op: 'TensorListPushBack' input: 'l' input: 'x' " EL "}\n"
    RET("i2", "inc:z:0") RET("n2", "n") RET("l2", "push:output_handle:0") RET("x2", "x") "}\n"
    "function { " SIG_D("body_drop", OUT("i2", "DT_INT32") OUT("n2", "DT_INT32") OUT("x2", "DT_FLOAT"))
    ICONST("node_def", "one", "1") ICONST("node_def", "unk", "-1") INC
    "node_def { name: 'e' op: 'EmptyTensorList' input: 'unk:output:0' input: 'unk:output:0' " EL
    T_("shape_type", "DT_INT32") "}\n"
    "node_def { name: 'p1' op: 'TensorListPushBack' input: 'e:handle:0' input: 'x' " EL "}\n"
    "node_def { name: 'p2' op: 'TensorListPushBack' input: 'p1:output_handle:0' input: 'x' " EL "}\n"
    "node_def { name: 'get' op: 'TensorListGetItem' input: 'p2:output_handle:0' input: 'one:output:0' "
    "input: 'unk:output:0' " EL "}\n"
    RET("i2", "inc:z:0") RET("n2", "n") RET("x2", "get:item:0") "}\n"
    "function { " SIG_T("body_write", OUT("i2", "DT_INT32") OUT("n2", "DT_INT32") OUT("h2", "DT_RESOURCE")
    OUT("f2", "DT_FLOAT") OUT("x2", "DT_FLOAT")) ICONST("node_def", "one", "1") INC
    "node_def { name: 'w' op: 'TensorArrayWriteV3' input: 'h' input: 'i' input: 'x' input: 'f' " T_("T", "DT_FLOAT") "}\n"
    RET("i2", "inc:z:0") RET("n2", "n") RET("h2", "h") RET("f2", "w:flow_out:0") RET("x2", "x") "}\n"
    "}\n"
    "}\n";

enum { ELEMS = 1000, BUDGET = 1 << 20 };

static sm_session *g_s;

/* Runs `fetch` with x = [ELEMS] floats (x[k] = k) and n; *out (may be NULL) the fetched tensor. */
static sm_status *run(const char *fetch, int32_t n, const sm_run_options *ro, sm_tensor **out) {
  sm_tensor *x, *nt, *o = NULL;
  int64_t d = ELEMS;
  if (sm_tensor_new(SM_FLOAT, 1, &d, &x) || sm_tensor_new(SM_INT32, 0, NULL, &nt)) abort();
  for (int k = 0; k < ELEMS; k++) ((float *)sm_tensor_data(x))[k] = (float)k;
  *(int32_t *)sm_tensor_data(nt) = n;
  const char *names[2] = {"x", "n"};
  sm_tensor *vals[2] = {x, nt};
  sm_status *st = sm__session_run_opts(g_s, names, vals, 2, &fetch, 1, NULL, 0, &o, ro);
  if (st) CHECK(o == NULL);
  sm_tensor_free(x);
  sm_tensor_free(nt);
  if (out) *out = o;
  else sm_tensor_free(o);
  return st;
}

static void check_refused(sm_status *st, const char *loop, const char *what) {
  const char *m = st ? sm_status_message(st) : "";
  CHECK(sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  CHECK(strstr(m, loop) && strstr(m, what) && strstr(m, "max_run_bytes 1048576"));
  if (!strstr(m, loop) || !strstr(m, what) || !strstr(m, "max_run_bytes")) fprintf(stderr, "got: %s\n", m);
  sm_status_free(st);
}

static void test_growth_refused(void) {
  sm_run_options ro = {.max_run_bytes = BUDGET};
  /* 1,000 x 4,000 bytes kept: past 1 MiB */
  check_refused(run("grow:0", 1000, &ro, NULL), "node 'grow' (While)", "a TensorList element of 4000 bytes");
  check_refused(run("taw:0", 1000, &ro, NULL), "node 'taw' (While)", "TensorArray ta element");
  /* 100 x 4,000 bytes fit, and the loops ran to the end */
  sm_tensor *o = NULL;
  CHECK_OK(run("grow:0", 100, &ro, &o));
  CHECK(o && *(int32_t *)sm_tensor_data(o) == 100);
  sm_tensor_free(o);
  CHECK_OK(run("taw:0", 100, &ro, &o));
  CHECK(o && *(int32_t *)sm_tensor_data(o) == 100);
  sm_tensor_free(o);
  /* without a budget the 1,000 pass */
  CHECK_OK(run("grow:0", 1000, NULL, NULL));
  CHECK_OK(run("taw:0", 1000, NULL, NULL));
}

static void test_dropped_lists_given_back(void) {
  sm_run_options ro = {.max_run_bytes = BUDGET};
  sm_tensor *o = NULL;
  /* 2,000 pushes of 4,000 bytes over the run, never more than two lists' worth at once */
  CHECK_OK(run("drop:2", 1000, &ro, &o));
  CHECK(o && sm_tensor_num_elements(o) == ELEMS && ((float *)sm_tensor_data(o))[ELEMS - 1] == (float)(ELEMS - 1));
  sm_tensor_free(o);
  /* a list that outlives its budgeted run: freed after the run, it gives back to a budget the run
   * no longer holds (ASan: no use after free, no leak) */
  o = NULL;
  CHECK_OK(run("grow:2", 100, &ro, &o));
  CHECK(o && sm_tensor_dtype(o) == SM_VARIANT);
  sm_tensor_free(o);
  /* the budget is the run's: the same refused run passes again and again at 100 */
  for (int k = 0; k < 3; k++) CHECK_OK(run("grow:0", 100, &ro, NULL));
}

int main(void) {
  CHECK_OK(sm__session_from_pbtxt(graph, &g_s));
  if (!g_s) TEST_MAIN_END();
  test_growth_refused();
  test_dropped_lists_given_back();
  sm__session_free(g_s);
  TEST_MAIN_END();
}
