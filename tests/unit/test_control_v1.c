/* test_control_v1.c - TF1 control flow (control flow v1): loop frames turned into _TF1Loop nodes
 * (src/graph/frames.c, src/ops/control_v1.c), Switch / Merge / ControlTrigger with dead tensors
 * (the executor), and TensorArrayV3 (src/ops/tensor_array.c), run through sm_session on GraphDefs
 * written here the way tf.compat.v1 writes them (the zoo's tf1_* cases check real TF exports
 * against TensorFlow's own results).
 *
 * Checked: a loop with a data-dependent trip count, and zero iterations; nested frames (an inner
 * loop whose trip count is the outer counter); a cond inside a loop body; dead branches (the
 * untaken side of a Switch, a node with a control edge from it, fetching it is TensorFlow's
 * "Retval[0] does not have value"), a ControlTrigger that stays live, a Merge of two live inputs
 * (MergeOp's error); an endless loop stopped by the run's deadline and by cancel; a frame that is
 * not a loop refused at load naming the node and why, and a loop that needs its own result;
 * TensorArray reads after clear and out of range with TensorFlow's messages, and a TensorArray
 * grown without end refused at the limit. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

#define T_(k, t) "attr { key: '" k "' value { type: " t " } } "
#define PH(name, dt) "node { name: '" name "' op: 'Placeholder' " T_("dtype", dt) "}\n"
#define CONST(name, dt, field, v, ctl)                                                                        \
  "node { name: '" name "' op: 'Const' " ctl T_("dtype", dt) "attr { key: 'value' value { tensor { dtype: " dt \
  " tensor_shape {} " field ": " v " } } } }\n"
#define ICONST(name, v, ctl) CONST(name, "DT_INT32", "int_val", v, ctl)
#define FCONST(name, v, ctl) CONST(name, "DT_FLOAT", "float_val", v, ctl)
#define CTL(n) "input: '^" n "' "
#define ENTER(name, in, t, frame, konst)                                                                    \
  "node { name: '" name "' op: 'Enter' input: '" in "' " T_("T", t) "attr { key: 'frame_name' value { s: '" frame \
  "' } } attr { key: 'is_constant' value { b: " konst " } } }\n"
#define MERGE(name, a, b, t) \
  "node { name: '" name "' op: 'Merge' input: '" a "' input: '" b "' " T_("T", t) "attr { key: 'N' value { i: 2 } } }\n"
#define SWITCH(name, d, p, t) "node { name: '" name "' op: 'Switch' input: '" d "' input: '" p "' " T_("T", t) "}\n"
#define UN(name, op, in, t) "node { name: '" name "' op: '" op "' input: '" in "' " T_("T", t) "}\n"
#define BIN(name, op, a, b, t) "node { name: '" name "' op: '" op "' input: '" a "' input: '" b "' " T_("T", t) "}\n"
#define LOOPCOND(name, in) "node { name: '" name "' op: 'LoopCond' input: '" in "' }\n"
/* One loop var's frame plumbing: Enter, Merge with its NextIteration, Switch on the LoopCond,
 * the body's Identity of Switch:1, NextIteration of `next`, Exit. */
#define VAR(F, v, init, t, cond, next)                                                                           \
  ENTER(F "/Enter_" v, init, t, F, "false") MERGE(F "/Merge_" v, F "/Enter_" v, F "/Next_" v, t)                \
  SWITCH(F "/Switch_" v, F "/Merge_" v, cond, t) UN(F "/Id_" v, "Identity", F "/Switch_" v ":1", t)            \
  UN(F "/Next_" v, "NextIteration", next, t) UN(F "/Exit_" v, "Exit", F "/Switch_" v, t)

static const char *graph =
    "graph_def {\n" PH("x", "DT_FLOAT") PH("n", "DT_INT32") PH("pb", "DT_BOOL") ICONST("zero", "0", "")
    /* L: i = 0; acc = x; while i < n: i += 1, acc *= 2 */
    ENTER("L/Enter_n", "n", "DT_INT32", "L", "true") BIN("L/Less", "Less", "L/Merge_i", "L/Enter_n", "DT_INT32")
    LOOPCOND("L/Cond", "L/Less") VAR("L", "i", "zero", "DT_INT32", "L/Cond", "L/add")
    VAR("L", "a", "x", "DT_FLOAT", "L/Cond", "L/mul") ICONST("L/one", "1", CTL("L/Id_i"))
    FCONST("L/two", "2", CTL("L/Id_i")) BIN("L/add", "AddV2", "L/Id_i", "L/one", "DT_INT32")
    BIN("L/mul", "Mul", "L/Id_a", "L/two", "DT_FLOAT")
    /* O: i = 0; acc = x; while i < n: (inner O/I: j = 0; while j < i: j += 1, acc += 1); i += 1 */
    ENTER("O/Enter_n", "n", "DT_INT32", "O", "true") BIN("O/Less", "Less", "O/Merge_i", "O/Enter_n", "DT_INT32")
    LOOPCOND("O/Cond", "O/Less") VAR("O", "i", "zero", "DT_INT32", "O/Cond", "O/add")
    VAR("O", "a", "x", "DT_FLOAT", "O/Cond", "O/I/Exit_a") ICONST("O/one", "1", CTL("O/Id_i"))
    BIN("O/add", "AddV2", "O/Id_i", "O/one", "DT_INT32") ICONST("O/zero", "0", CTL("O/Id_i"))
    ENTER("O/I/Enter_i", "O/Id_i", "DT_INT32", "O/I", "true")
    BIN("O/I/Less", "Less", "O/I/Merge_j", "O/I/Enter_i", "DT_INT32") LOOPCOND("O/I/Cond", "O/I/Less")
    VAR("O/I", "j", "O/zero", "DT_INT32", "O/I/Cond", "O/I/addj")
    VAR("O/I", "a", "O/Id_a", "DT_FLOAT", "O/I/Cond", "O/I/adda")
    ICONST("O/I/one", "1", CTL("O/I/Id_j")) FCONST("O/I/onef", "1", CTL("O/I/Id_j"))
    BIN("O/I/addj", "AddV2", "O/I/Id_j", "O/I/one", "DT_INT32")
    BIN("O/I/adda", "AddV2", "O/I/Id_a", "O/I/onef", "DT_FLOAT")
    /* W: a cond in a loop body: i = 0; acc = x; while i < n: acc = i odd ? acc + 1 : acc * 3 */
    ENTER("W/Enter_n", "n", "DT_INT32", "W", "true") BIN("W/Less", "Less", "W/Merge_i", "W/Enter_n", "DT_INT32")
    LOOPCOND("W/Cond", "W/Less") VAR("W", "i", "zero", "DT_INT32", "W/Cond", "W/add")
    VAR("W", "a", "x", "DT_FLOAT", "W/Cond", "W/C/Merge") ICONST("W/one", "1", CTL("W/Id_i"))
    BIN("W/add", "AddV2", "W/Id_i", "W/one", "DT_INT32") ICONST("W/two", "2", CTL("W/Id_i"))
    BIN("W/mod", "FloorMod", "W/Id_i", "W/two", "DT_INT32") BIN("W/odd", "Equal", "W/mod", "W/one", "DT_INT32")
    SWITCH("W/C/Switch", "W/Id_a", "W/odd", "DT_FLOAT") UN("W/C/pt", "Identity", "W/C/Switch:1", "DT_FLOAT")
    UN("W/C/pf", "Identity", "W/C/Switch:0", "DT_FLOAT") FCONST("W/C/onef", "1", CTL("W/C/pt"))
    FCONST("W/C/three", "3", CTL("W/C/pf")) BIN("W/C/t", "AddV2", "W/C/Switch:1", "W/C/onef", "DT_FLOAT")
    BIN("W/C/f", "Mul", "W/C/Switch:0", "W/C/three", "DT_FLOAT") MERGE("W/C/Merge", "W/C/f", "W/C/t", "DT_FLOAT")
    /* C: a cond outside loops: pb ? x * 2 : -x, and what hangs off its branches */
    SWITCH("C/Switch", "x", "pb", "DT_FLOAT") UN("C/pt", "Identity", "C/Switch:1", "DT_FLOAT")
    FCONST("C/two", "2", CTL("C/pt")) BIN("C/t", "Mul", "C/Switch:1", "C/two", "DT_FLOAT")
    UN("C/f", "Neg", "C/Switch:0", "DT_FLOAT") MERGE("C/Merge", "C/f", "C/t", "DT_FLOAT")
    FCONST("C/on_true", "5", CTL("C/pt")) "node { name: 'C/trig' op: 'ControlTrigger' " CTL("C/pt") "}\n"
    FCONST("C/after_trig", "7", CTL("C/trig")) MERGE("C/two_live", "x", "C/two", "DT_FLOAT")
    /* E: an endless loop (LoopCond of a constant true) */
    CONST("E/true", "DT_BOOL", "bool_val", "true", CTL("E/Merge_i")) LOOPCOND("E/Cond", "E/true")
    VAR("E", "i", "zero", "DT_INT32", "E/Cond", "E/add") ICONST("E/one", "1", CTL("E/Id_i"))
    BIN("E/add", "AddV2", "E/Id_i", "E/one", "DT_INT32")
    /* B: not a loop: a non-constant Enter read by an Add, in a cycle with a NextIteration */
    ENTER("B/Enter", "x", "DT_FLOAT", "B", "false") BIN("B/add", "AddV2", "B/Enter", "B/Next", "DT_FLOAT")
    UN("B/Next", "NextIteration", "B/add", "DT_FLOAT") UN("B/Exit", "Exit", "B/add", "DT_FLOAT")
    /* R: a loop whose cond reads its own result (the Exit of its counter) */
    ENTER("R/Enter_n", "n", "DT_INT32", "R", "true") BIN("R/Less", "Less", "R/Merge_i", "R/Exit_i", "DT_INT32")
    LOOPCOND("R/Cond", "R/Less") VAR("R", "i", "zero", "DT_INT32", "R/Cond", "R/add")
    ICONST("R/one", "1", CTL("R/Id_i"))
    BIN("R/add", "AddV2", "R/Id_i", "R/one", "DT_INT32")
    /* T: a TensorArray (size 0, dynamic) grown by a loop of n steps writing x + i at i,
     * then read at index n - 1 twice, or at index n */
    "node { name: 'T/ta' op: 'TensorArrayV3' input: 'zero' " T_("dtype", "DT_FLOAT")
    "attr { key: 'dynamic_size' value { b: true } } }\n"
    ENTER("T/Enter_h", "T/ta", "DT_RESOURCE", "T", "true") ENTER("T/Enter_n", "n", "DT_INT32", "T", "true")
    ENTER("T/Enter_x", "x", "DT_FLOAT", "T", "true") BIN("T/Less", "Less", "T/Merge_i", "T/Enter_n", "DT_INT32")
    LOOPCOND("T/Cond", "T/Less") VAR("T", "i", "zero", "DT_INT32", "T/Cond", "T/add")
    VAR("T", "f", "T/ta:1", "DT_FLOAT", "T/Cond", "T/write") ICONST("T/one", "1", CTL("T/Id_i"))
    BIN("T/add", "AddV2", "T/Id_i", "T/one", "DT_INT32")
    "node { name: 'T/fi' op: 'Cast' input: 'T/Id_i' " T_("SrcT", "DT_INT32") T_("DstT", "DT_FLOAT") "}\n"
    BIN("T/v", "AddV2", "T/Enter_x", "T/fi", "DT_FLOAT")
    "node { name: 'T/write' op: 'TensorArrayWriteV3' input: 'T/Enter_h' input: 'T/Id_i' input: 'T/v' input: 'T/Id_f' "
    T_("T", "DT_FLOAT") "}\n" BIN("T/last", "Sub", "n", "T/one_out", "DT_INT32") ICONST("T/one_out", "1", "")
    "node { name: 'T/read' op: 'TensorArrayReadV3' input: 'T/ta' input: 'T/last' input: 'T/Exit_f' "
    T_("dtype", "DT_FLOAT") "}\n"
    "node { name: 'T/read2' op: 'TensorArrayReadV3' input: 'T/ta' input: 'T/last' input: 'T/Exit_f' "
    CTL("T/read") T_("dtype", "DT_FLOAT") "}\n"
    "node { name: 'T/read_n' op: 'TensorArrayReadV3' input: 'T/ta' input: 'n' input: 'T/Exit_f' "
    T_("dtype", "DT_FLOAT") "}\n"
    "node { name: 'T/size' op: 'TensorArraySizeV3' input: 'T/ta' input: 'T/Exit_f' }\n"
    "}\n";

/* A scalar feed of x (float), n (int32) or pb (bool). */
static sm_tensor *feed(int dtype, double v) {
  sm_tensor *t;
  if (sm_tensor_new(dtype, 0, NULL, &t)) abort();
  if (dtype == SM_FLOAT) *(float *)sm_tensor_data(t) = (float)v;
  else if (dtype == SM_INT32) *(int32_t *)sm_tensor_data(t) = (int32_t)v;
  else *(unsigned char *)sm_tensor_data(t) = v != 0;
  return t;
}

static sm_session *g_s;

/* Runs `fetch` with x, n and pb fed. */
static sm_status *run(const char *fetch, float x, int32_t n, int pb, sm_tensor **out, const sm_run_options *ro) {
  const char *names[] = {"x", "n", "pb"};
  sm_tensor *vals[] = {feed(SM_FLOAT, x), feed(SM_INT32, n), feed(SM_BOOL, pb)};
  *out = NULL;
  sm_status *st = sm__session_run_opts(g_s, names, vals, 3, &fetch, 1, NULL, 0, out, ro);
  for (int i = 0; i < 3; i++) sm_tensor_free(vals[i]);
  return st;
}

static double run_num(const char *fetch, float x, int32_t n, int pb) {
  sm_tensor *o;
  sm_status *st = run(fetch, x, n, pb, &o, NULL);
  if (st) {
    fprintf(stderr, "%s(x=%g, n=%d, pb=%d): %s\n", fetch, x, n, pb, sm_status_message(st));
    sm_status_free(st);
    return -12345;
  }
  double v = -999;
  if (o && sm_tensor_dtype(o) == SM_FLOAT) v = *(float *)sm_tensor_data(o);
  if (o && sm_tensor_dtype(o) == SM_INT32) v = *(int32_t *)sm_tensor_data(o);
  sm_tensor_free(o);
  return v;
}

static void test_loops(void) {
  for (int n = 0; n <= 5; n++) {
    /* zero iterations for n = 0: the Exits give the initial values */
    CHECK(run_num("L/Exit_a", 1.5f, n, 0) == 1.5 * (1 << n));
    CHECK(run_num("L/Exit_i", 0, n, 0) == n);
    /* nested: the inner loop runs i times in outer step i */
    CHECK(run_num("O/Exit_a", 2, n, 0) == 2 + n * (n - 1) / 2);
    CHECK(run_num("O/Exit_i", 2, n, 0) == n);
    /* a cond in the body, both branches taken in turn */
    double want = 1.25;
    for (int i = 0; i < n; i++) want = i % 2 ? want + 1 : want * 3;
    CHECK(run_num("W/Exit_a", 1.25f, n, 0) == want);
  }
}

static void test_dead(void) {
  sm_tensor *o;
  CHECK(run_num("C/Merge", 3, 0, 1) == 6);
  CHECK(run_num("C/Merge", 3, 0, 0) == -3);
  CHECK(run_num("C/Merge:1", 3, 0, 1) == 1); /* value_index */
  CHECK(run_num("C/Merge:1", 3, 0, 0) == 0);
  CHECK(run_num("C/on_true", 3, 0, 1) == 5);
  /* the untaken branch, and a node with a control edge from it, are dead: fetching one is
   * TensorFlow's error */
  CHECK_ERR(run("C/t", 3, 0, 0, &o, NULL), "Retval[0] does not have value");
  CHECK(o == NULL);
  CHECK_ERR(run("C/on_true", 3, 0, 0, &o, NULL), "Retval[0] does not have value");
  CHECK_ERR(run("C/Switch:0", 3, 0, 1, &o, NULL), "Retval[0] does not have value");
  /* a ControlTrigger is live whatever its inputs: what waits on it runs */
  CHECK(run_num("C/after_trig", 3, 0, 0) == 7);
  CHECK(run_num("C/after_trig", 3, 0, 1) == 7);
  /* a Merge with two live inputs is MergeOp's error */
  CHECK_ERR(run("C/two_live", 3, 0, 1, &o, NULL), "Merge can not have more than one valid input.");
  /* with the second input dead it forwards the first */
  CHECK(run_num("C/two_live", 3, 0, 0) == 3);
}

static void test_hostile(void) {
  sm_tensor *o;
  /* an endless loop stops at the run's deadline (a little ahead: it can only end that way) */
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 20000};
  sm_status *st = run("E/Exit_i", 0, 0, 0, &o, &ro);
  CHECK(sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  CHECK(st && strstr(sm_status_message(st), "loop frame 'E'"));
  sm_status_free(st);
  CHECK(o == NULL);
  volatile int flag = 1;
  ro = (sm_run_options){.cancel = &flag};
  st = run("E/Exit_i", 0, 0, 0, &o, &ro);
  CHECK(sm_status_code(st) == SM_CANCELLED);
  sm_status_free(st);
  /* a frame that is not a loop: refused when the plan is built, naming the node and why */
  const char *feeds[] = {"x"};
  CHECK_ERR(sm__session_prepare(g_s, feeds, 1, (const char *[]){"B/Exit"}, 1, NULL, 0),
            "TF1 loop frame 'B' is not a loop this runtime can run: Enter 'B/Enter' (not is_constant) does not "
            "feed exactly one Merge");
  CHECK_ERR(sm__session_prepare(g_s, feeds, 1, (const char *[]){"R/Exit_i"}, 1, NULL, 0),
            "node 'R' (_TF1Loop) reaches itself: its body needs its own result");
}

static void test_tensor_array(void) {
  sm_tensor *o;
  for (int n = 1; n <= 4; n++) {
    CHECK(run_num("T/read", 0.5f, n, 0) == 0.5 + n - 1);
    CHECK(run_num("T/size", 0.5f, n, 0) == n);
  }
  CHECK_ERR(run("T/read2", 0.5f, 3, 0, &o, NULL),
            "Could not read index 2 twice because it was cleared after a previous read (perhaps try setting "
            "clear_after_read = false?).");
  CHECK_ERR(run("T/read_n", 0.5f, 3, 0, &o, NULL), "Tried to read from index 3 but array size is: 3");
  /* an array that grows past the limit is refused (the limit lowered to reach it quickly) */
  int64_t saved = sm__seq_max_elements;
  sm__seq_max_elements = 100;
  CHECK_ERR(run("T/read", 0.5f, 200, 0, &o, NULL), "T/ta: 101 elements are more than the limit of 100");
  CHECK(o == NULL);
  sm__seq_max_elements = saved;
  CHECK(run_num("T/read", 0.5f, 200, 0) == 0.5 + 199);
}

int main(void) {
  CHECK_OK(sm__session_from_pbtxt(graph, &g_s));
  if (!g_s) TEST_MAIN_END();
  test_loops();
  test_dead();
  test_hostile();
  test_tensor_array();
  sm__session_free(g_s);
  TEST_MAIN_END();
}
