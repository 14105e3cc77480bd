/* test_control.c - the functional control flow kernels (src/ops/control.c): While / StatelessWhile,
 * If / StatelessIf, Case / StatelessCase, run through sm_session on MetaGraphDefs written here.
 *
 * Checked: a while with a data-dependent trip count (and zero iterations), nested whiles, a
 * function call inside a body, loops over int64 / bool / string values, a resource handle as a
 * loop var (the body assigns and reads the variable), a while inside an If branch; If both ways on
 * bool, int32, float, string and non-scalar conditions, and a dtype TF cannot read as a bool;
 * Case and StatelessCase in range, out of range and negative (the last branch); an error in a body
 * naming the loop, the iteration, the function and the body's node; endless loops stopped by
 * cancel and by the deadline (set by a test kernel in cond after N calls, so no timing), including
 * one whose functions have no steps at all; recursion and arity mismatches refused at load. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "test.h"

/* ---- test kernel: TestTick counts its calls and, at a chosen call, cancels the run or moves its
 * deadline into the past; it forwards its input ----------------------------------------------- */
static int g_ticks, g_cancel_at, g_expire_at;
static volatile int g_cancel;
static sm_run_options g_ro;

static sm_status *tick_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int t = __atomic_add_fetch(&g_ticks, 1, __ATOMIC_RELAXED);
  if (t == g_cancel_at) __atomic_store_n(&g_cancel, 1, __ATOMIC_RELAXED);
  if (t == g_expire_at) g_ro.deadline_us = 1;
  sm__kctx_forward(ctx, 0, 0);
  return NULL;
}

static const sm_kernel test_kernels[] = {{"TestTick", NULL, tick_compute, NULL, 0}, {0}};

/* ---- the graph ---------------------------------------------------------------------------------- */
#define T_(k, t) "attr { key: '" k "' value { type: " t " } } "
#define TL(k, ts) "attr { key: '" k "' value { list { " ts " } } } "
#define FN(k, f) "attr { key: '" k "' value { func { name: '" f "' } } } "
#define PH(name, dt) "node { name: '" name "' op: 'Placeholder' " T_("dtype", dt) "}\n"
#define CONST(nd, name, dt, field, v)                                                                  \
  nd " { name: '" name "' op: 'Const' " T_("dtype", dt) "attr { key: 'value' value { tensor { dtype: " dt \
     " tensor_shape {} " field ": " v " } } } }\n"
#define FCONST(name, dt, field, v) CONST("node_def", name, dt, field, v)
#define GCONST(name, dt, field, v) CONST("node", name, dt, field, v)
#define ARG(n, t) "input_arg { name: '" n "' type: " t " } "
#define OUT(n, t) "output_arg { name: '" n "' type: " t " } "
#define BIN(nd, name, op, a, b, t) nd " { name: '" name "' op: '" op "' input: '" a "' input: '" b "' " T_("T", t) "}\n"
#define FBIN(name, op, a, b, t) BIN("node_def", name, op, a, b, t)
#define RET(k, v) "ret { key: '" k "' value: '" v "' } "
#define I3 "type: DT_INT32 type: DT_INT32 type: DT_FLOAT"
#define SIG3(name, outs) "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("n", "DT_INT32") ARG("acc", "DT_FLOAT") outs "} "
#define OUT3 OUT("i2", "DT_INT32") OUT("n2", "DT_INT32") OUT("acc2", "DT_FLOAT")
#define WHILE(nd, op, name, ins, ts, c, b) nd " { name: '" name "' op: '" op "' " ins TL("T", ts) FN("cond", c) FN("body", b) "}\n"
#define IN3(a, b, c) "input: '" a "' input: '" b "' input: '" c "' "

static const char *graph =
    "meta_info_def { stripped_op_list {\n"
    "op { name: 'TestTick' input_arg { name: 'x' type_attr: 'T' } output_arg { name: 'y' type_attr: 'T' }\n"
    "  attr { name: 'T' type: 'type' } }\n"
    "op { name: 'StatelessCase' input_arg { name: 'branch_index' type: DT_INT32 }\n"
    "  input_arg { name: 'input' type_list_attr: 'Tin' } output_arg { name: 'output' type_list_attr: 'Tout' }\n"
    "  attr { name: 'Tin' type: 'list(type)' has_minimum: true } attr { name: 'Tout' type: 'list(type)' has_minimum: true }\n"
    "  attr { name: 'branches' type: 'list(func)' has_minimum: true minimum: 1 }\n"
    "  attr { name: 'output_shapes' type: 'list(shape)' default_value { list { } } } }\n"
    "} }\n"
    "graph_def {\n" PH("x", "DT_FLOAT") PH("n", "DT_INT32") PH("pb", "DT_BOOL") PH("pi", "DT_INT32")
    PH("pf", "DT_FLOAT") PH("ps", "DT_STRING") PH("ph", "DT_HALF") PH("bi", "DT_INT32")
    GCONST("zero", "DT_INT32", "int_val", "0") GCONST("truth", "DT_BOOL", "bool_val", "true")
    GCONST("ab", "DT_STRING", "string_val", "'ab'") GCONST("three", "DT_FLOAT", "float_val", "3")
    GCONST("zero64", "DT_INT64", "int64_val", "0")
    /* x * 2^n (n iterations) */
    WHILE("node", "While", "w", IN3("zero", "n", "x"), I3, "cond_lt", "body_dbl")
    WHILE("node", "StatelessWhile", "sw", IN3("zero", "n", "x"), I3, "cond_lt", "body_dbl")
    /* x + n(n-1)/2: an inner loop of i steps in outer step i */
    WHILE("node", "While", "wn", IN3("zero", "n", "x"), I3, "cond_lt", "body_outer")
    /* x + n through a called function */
    WHILE("node", "While", "wc", IN3("zero", "n", "x"), I3, "cond_lt", "body_call")
    /* int64: sum 1..n */
    "node { name: 'n64' op: 'Cast' input: 'n' " T_("SrcT", "DT_INT32") T_("DstT", "DT_INT64") "}\n"
    WHILE("node", "While", "w64", "input: 'n64' input: 'zero64' ", "type: DT_INT64 type: DT_INT64", "cond_pos64",
          "body_sum64")
    /* bool: counts to 5, cond reads the bool var as it is (no steps) */
    WHILE("node", "While", "wb", "input: 'truth' input: 'zero' ", "type: DT_BOOL type: DT_INT32", "cond_first_b",
          "body_bool")
    /* string: 'ab' doubled three times */
    WHILE("node", "While", "ws", "input: 'ab' input: 'zero' ", "type: DT_STRING type: DT_INT32", "cond_lt3",
          "body_str")
    /* a resource loop var: each step adds 1 to v, then adds v to acc */
    "node { name: 'v' op: 'VarHandleOp' " T_("dtype", "DT_FLOAT") "attr { key: 'shared_name' value { s: 'v' } } "
    "attr { key: 'shape' value { shape { } } } }\n"
    "node { name: 'vzero' op: 'Const' " T_("dtype", "DT_FLOAT")
    "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }\n"
    "node { name: 'init' op: 'AssignVariableOp' input: 'v' input: 'vzero' " T_("dtype", "DT_FLOAT") "}\n"
    "node { name: 'readv' op: 'ReadVariableOp' input: 'v' " T_("dtype", "DT_FLOAT") "}\n"
    WHILE("node", "While", "wv", "input: 'zero' input: 'n' input: 'v' input: 'x' ",
          "type: DT_INT32 type: DT_INT32 type: DT_RESOURCE type: DT_FLOAT", "cond_lt4", "body_var")
    /* a loop inside an If branch: x * 2^n when pb, else -x */
    "node { name: 'iw' op: 'StatelessIf' input: 'pb' input: 'x' input: 'n' " T_("Tcond", "DT_BOOL")
    TL("Tin", "type: DT_FLOAT type: DT_INT32") TL("Tout", "type: DT_FLOAT") FN("then_branch", "then_loop")
    FN("else_branch", "else_neg") "}\n"
    /* If on conditions of several dtypes: x * 2, else x - 1 */
#define IF(name, op, c, dt)                                                                                  \
  "node { name: '" name "' op: '" op "' input: '" c "' input: 'x' " T_("Tcond", dt) TL("Tin", "type: DT_FLOAT") \
  TL("Tout", "type: DT_FLOAT") FN("then_branch", "br_mul2") FN("else_branch", "br_sub1") "}\n"
    IF("if_b", "If", "pb", "DT_BOOL") IF("if_i", "StatelessIf", "pi", "DT_INT32") IF("if_f", "If", "pf", "DT_FLOAT")
    IF("if_s", "If", "ps", "DT_STRING") IF("if_h", "If", "ph", "DT_HALF")
    /* Case: x * 2, x - 1, x * x */
#define CASE(name, op)                                                                                         \
  "node { name: '" name "' op: '" op "' input: 'bi' input: 'x' " TL("Tin", "type: DT_FLOAT") TL("Tout", "type: DT_FLOAT") \
  "attr { key: 'branches' value { list { func { name: 'br_mul2' } func { name: 'br_sub1' } func { name: 'br_sq' } } } } }\n"
    CASE("case", "Case") CASE("scase", "StatelessCase")
    /* errors */
    WHILE("node", "While", "w_bad", IN3("zero", "n", "x"), I3, "cond_lt", "body_bad")
    WHILE("node", "While", "w_inf", "input: 'pb' ", "type: DT_BOOL", "cond_tick", "body_id")
    WHILE("node", "While", "w_empty", "input: 'pb' ", "type: DT_BOOL", "cond_id", "body_id")
    WHILE("node", "While", "w_rec", IN3("zero", "n", "x"), I3, "cond_lt", "body_rec")
    WHILE("node", "While", "w_arity", IN3("zero", "n", "x"), I3, "cond_lt", "body_id")
    WHILE("node", "While", "w_cond2", IN3("zero", "n", "x"), I3, "body_dbl", "body_dbl")
    WHILE("node", "While", "w_nofn", IN3("zero", "n", "x"), I3, "cond_lt", "no_such_fn")
    "library {\n"
    /* cond_lt(i, n, acc) = i < n */
    "function { " SIG3("cond_lt", OUT("p", "DT_BOOL")) FBIN("lt", "Less", "i", "n", "DT_INT32") RET("p", "lt:z:0") "}\n"
    /* body_dbl = (i + 1, n, acc * 2) */
    "function { " SIG3("body_dbl", OUT3) FCONST("one", "DT_INT32", "int_val", "1")
    FCONST("two", "DT_FLOAT", "float_val", "2") FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32")
    FBIN("mul", "Mul", "acc", "two:output:0", "DT_FLOAT") RET("i2", "inc:z:0") RET("n2", "n") RET("acc2", "mul:z:0")
    "}\n"
    /* body_inc = (i + 1, n, acc + 1) */
    "function { " SIG3("body_inc", OUT3) FCONST("one", "DT_INT32", "int_val", "1")
    FCONST("onef", "DT_FLOAT", "float_val", "1") FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32")
    FBIN("add", "AddV2", "acc", "onef:output:0", "DT_FLOAT") RET("i2", "inc:z:0") RET("n2", "n")
    RET("acc2", "add:z:0") "}\n"
    /* body_outer = (i + 1, n, acc + i) through an inner loop of i steps */
    "function { " SIG3("body_outer", OUT3) FCONST("zero", "DT_INT32", "int_val", "0")
    FCONST("one", "DT_INT32", "int_val", "1")
    WHILE("node_def", "While", "inner", IN3("zero:output:0", "i", "acc"), I3, "cond_lt", "body_inc")
    FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32") RET("i2", "inc:z:0") RET("n2", "n")
    RET("acc2", "inner:output:2") "}\n"
    /* body_call = (i + 1, n, addone(acc)) */
    "function { " SIG3("body_call", OUT3) FCONST("one", "DT_INT32", "int_val", "1")
    FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32")
    "node_def { name: 'call' op: 'StatefulPartitionedCall' input: 'acc' " TL("Tin", "type: DT_FLOAT")
    TL("Tout", "type: DT_FLOAT") FN("f", "addone") "}\n"
    RET("i2", "inc:z:0") RET("n2", "n") RET("acc2", "call:output:0") "}\n"
    "function { signature { name: 'addone' " ARG("x", "DT_FLOAT") OUT("y", "DT_FLOAT") "} "
    FCONST("onef", "DT_FLOAT", "float_val", "1") FBIN("add", "AddV2", "x", "onef:output:0", "DT_FLOAT")
    RET("y", "add:z:0") "}\n"
    /* int64: cond k > 0, body (k - 1, s + k) */
    "function { signature { name: 'cond_pos64' " ARG("k", "DT_INT64") ARG("s", "DT_INT64") OUT("p", "DT_BOOL") "} "
    FCONST("z", "DT_INT64", "int64_val", "0") FBIN("gt", "Greater", "k", "z:output:0", "DT_INT64")
    RET("p", "gt:z:0") "}\n"
    "function { signature { name: 'body_sum64' " ARG("k", "DT_INT64") ARG("s", "DT_INT64") OUT("k2", "DT_INT64")
    OUT("s2", "DT_INT64") "} " FCONST("one", "DT_INT64", "int64_val", "1")
    FBIN("dec", "Sub", "k", "one:output:0", "DT_INT64") FBIN("add", "AddV2", "s", "k", "DT_INT64")
    RET("k2", "dec:z:0") RET("s2", "add:z:0") "}\n"
    /* bool: cond = the bool var; body (i + 1 < 5, i + 1) */
    "function { signature { name: 'cond_first_b' " ARG("b", "DT_BOOL") ARG("i", "DT_INT32") OUT("p", "DT_BOOL")
    "} " RET("p", "b") "}\n"
    "function { signature { name: 'body_bool' " ARG("b", "DT_BOOL") ARG("i", "DT_INT32") OUT("b2", "DT_BOOL")
    OUT("i2", "DT_INT32") "} " FCONST("one", "DT_INT32", "int_val", "1") FCONST("five", "DT_INT32", "int_val", "5")
    FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32") FBIN("lt", "Less", "inc:z:0", "five:output:0", "DT_INT32")
    RET("b2", "lt:z:0") RET("i2", "inc:z:0") "}\n"
    /* string: cond i < 3; body (s + s, i + 1) */
    "function { signature { name: 'cond_lt3' " ARG("s", "DT_STRING") ARG("i", "DT_INT32") OUT("p", "DT_BOOL") "} "
    FCONST("three", "DT_INT32", "int_val", "3") FBIN("lt", "Less", "i", "three:output:0", "DT_INT32")
    RET("p", "lt:z:0") "}\n"
    "function { signature { name: 'body_str' " ARG("s", "DT_STRING") ARG("i", "DT_INT32") OUT("s2", "DT_STRING")
    OUT("i2", "DT_INT32") "} " FCONST("one", "DT_INT32", "int_val", "1")
    FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32") FBIN("cat", "Add", "s", "s", "DT_STRING")
    RET("s2", "cat:z:0") RET("i2", "inc:z:0") "}\n"
    /* resource: cond i < n; body: v += 1, acc += v */
#define SIG4(name, outs)                                                                                   \
  "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("n", "DT_INT32") ARG("h", "DT_RESOURCE") \
  ARG("acc", "DT_FLOAT") outs "} "
    "function { " SIG4("cond_lt4", OUT("p", "DT_BOOL")) FBIN("lt", "Less", "i", "n", "DT_INT32") RET("p", "lt:z:0")
    "}\n"
    "function { " SIG4("body_var", OUT("i2", "DT_INT32") OUT("n2", "DT_INT32") OUT("h2", "DT_RESOURCE")
                            OUT("acc2", "DT_FLOAT"))
    FCONST("one", "DT_INT32", "int_val", "1") FCONST("onef", "DT_FLOAT", "float_val", "1")
    FBIN("inc", "AddV2", "i", "one:output:0", "DT_INT32")
    "node_def { name: 'bump' op: 'AssignAddVariableOp' input: 'h' input: 'onef:output:0' " T_("dtype", "DT_FLOAT") "}\n"
    "node_def { name: 'rd' op: 'ReadVariableOp' input: 'h' input: '^bump' " T_("dtype", "DT_FLOAT") "}\n"
    FBIN("add", "AddV2", "acc", "rd:value:0", "DT_FLOAT") RET("i2", "inc:z:0") RET("n2", "n") RET("h2", "h")
    RET("acc2", "add:z:0") "}\n"
    /* If branches */
    "function { signature { name: 'then_loop' " ARG("x", "DT_FLOAT") ARG("n", "DT_INT32") OUT("y", "DT_FLOAT") "} "
    FCONST("zero", "DT_INT32", "int_val", "0")
    WHILE("node_def", "While", "loop", IN3("zero:output:0", "n", "x"), I3, "cond_lt", "body_dbl")
    RET("y", "loop:output:2") "}\n"
    "function { signature { name: 'else_neg' " ARG("x", "DT_FLOAT") ARG("n", "DT_INT32") OUT("y", "DT_FLOAT") "} "
    "node_def { name: 'neg' op: 'Neg' input: 'x' " T_("T", "DT_FLOAT") "} " RET("y", "neg:y:0") "}\n"
    "function { signature { name: 'br_mul2' " ARG("x", "DT_FLOAT") OUT("y", "DT_FLOAT") "} "
    FCONST("two", "DT_FLOAT", "float_val", "2") FBIN("mul", "Mul", "x", "two:output:0", "DT_FLOAT")
    RET("y", "mul:z:0") "}\n"
    "function { signature { name: 'br_sub1' " ARG("x", "DT_FLOAT") OUT("y", "DT_FLOAT") "} "
    FCONST("one", "DT_FLOAT", "float_val", "1") FBIN("sub", "Sub", "x", "one:output:0", "DT_FLOAT")
    RET("y", "sub:z:0") "}\n"
    "function { signature { name: 'br_sq' " ARG("x", "DT_FLOAT") OUT("y", "DT_FLOAT") "} "
    FBIN("sq", "Mul", "x", "x", "DT_FLOAT") RET("y", "sq:z:0") "}\n"
    /* a body that fails: acc + ([1,1,1] + [1,1]) */
    "function { " SIG3("body_bad", OUT3)
    "node_def { name: 'c3' op: 'Const' " T_("dtype", "DT_FLOAT")
    "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1 } } } }\n"
    "node_def { name: 'c2' op: 'Const' " T_("dtype", "DT_FLOAT")
    "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 } } } }\n"
    FBIN("bad", "AddV2", "c3:output:0", "c2:output:0", "DT_FLOAT") FBIN("add", "AddV2", "acc", "bad:z:0", "DT_FLOAT")
    RET("i2", "i") RET("n2", "n") RET("acc2", "add:z:0") "}\n"
    /* endless: cond ticks and passes its bool on; body and cond_id have no steps at all */
    "function { signature { name: 'cond_tick' " ARG("p", "DT_BOOL") OUT("y", "DT_BOOL") "} "
    "node_def { name: 'tick' op: 'TestTick' input: 'p' " T_("T", "DT_BOOL") "} " RET("y", "tick:y:0") "}\n"
    "function { signature { name: 'cond_id' " ARG("p", "DT_BOOL") OUT("y", "DT_BOOL") "} " RET("y", "p") "}\n"
    "function { signature { name: 'body_id' " ARG("p", "DT_BOOL") OUT("y", "DT_BOOL") "} " RET("y", "p") "}\n"
    /* recursion: body_rec runs a loop whose body is body_rec */
    "function { " SIG3("body_rec", OUT3)
    WHILE("node_def", "While", "again", IN3("i", "n", "acc"), I3, "cond_lt", "body_rec")
    RET("i2", "again:output:0") RET("n2", "again:output:1") RET("acc2", "again:output:2") "}\n"
    "}\n"
    "}\n";

/* ---- helpers -------------------------------------------------------------------------------------- */
static sm_tensor *scalar(int dtype, const void *v, size_t size) {
  sm_tensor *t;
  if (sm_tensor_new(dtype, 0, NULL, &t)) abort();
  memcpy(sm_tensor_data(t), v, size);
  return t;
}
static sm_tensor *f32(float v) { return scalar(SM_FLOAT, &v, sizeof v); }
static sm_tensor *i32(int32_t v) { return scalar(SM_INT32, &v, sizeof v); }
static sm_tensor *b8(int v) {
  unsigned char b = (unsigned char)(v != 0);
  return scalar(SM_BOOL, &b, 1);
}
static sm_tensor *str(const char *s) {
  sm_tensor *t;
  if (sm_tensor_new(SM_STRING, 0, NULL, &t) || sm_tensor_set_string(t, 0, s, strlen(s))) abort();
  return t;
}

static sm_session *g_s;

/* Runs with the feeds given as (name, tensor) pairs (the tensors are freed) and fetches one. */
static sm_status *run(const char *fetch, sm_tensor **out, const sm_run_options *ro, int nfeeds, ...) {
  const char *names[8];
  sm_tensor *vals[8];
  va_list ap;
  va_start(ap, nfeeds);
  for (int i = 0; i < nfeeds; i++) {
    names[i] = va_arg(ap, const char *);
    vals[i] = va_arg(ap, sm_tensor *);
  }
  va_end(ap);
  *out = NULL;
  sm_status *st = sm__session_run_opts(g_s, names, vals, nfeeds, &fetch, 1, NULL, 0, out, ro);
  for (int i = 0; i < nfeeds; i++) sm_tensor_free(vals[i]);
  return st;
}

/* The float scalar `fetch` gives for x and n. */
static float run_xn(const char *fetch, float x, int32_t n) {
  sm_tensor *o;
  sm_status *st = run(fetch, &o, NULL, 2, "x", f32(x), "n", i32(n));
  if (st) {
    fprintf(stderr, "%s(x=%g, n=%d): %s\n", fetch, x, n, sm_status_message(st));
    sm_status_free(st);
    return -12345;
  }
  float v = o && sm_tensor_dtype(o) == SM_FLOAT && sm_tensor_num_elements(o) == 1 ? *(float *)sm_tensor_data(o) : -999;
  sm_tensor_free(o);
  return v;
}

static int64_t run_int(const char *fetch, int32_t n) {
  sm_tensor *o;
  sm_status *st = run(fetch, &o, NULL, 2, "x", f32(0), "n", i32(n));
  int64_t v = -999;
  if (st) {
    fprintf(stderr, "%s(n=%d): %s\n", fetch, n, sm_status_message(st));
    sm_status_free(st);
  } else if (o && sm_tensor_dtype(o) == SM_INT32) {
    v = *(int32_t *)sm_tensor_data(o);
  } else if (o && sm_tensor_dtype(o) == SM_INT64) {
    v = *(int64_t *)sm_tensor_data(o);
  }
  sm_tensor_free(o);
  return v;
}

/* ---- tests ---------------------------------------------------------------------------------------- */
static void test_while(void) {
  /* data-dependent trip count: x * 2^n, i ends at n; zero (and negative) n: no iteration */
  for (int n = 0; n <= 5; n++) {
    CHECK(run_xn("w:2", 1.5f, n) == 1.5f * (float)(1 << n));
    CHECK(run_xn("sw:2", -3, n) == -3.0f * (float)(1 << n));
    CHECK_EQ_INT(run_int("w:0", n), n);
  }
  CHECK(run_xn("w:2", 7, -4) == 7);
  CHECK_EQ_INT(run_int("w:0", -4), 0);
  CHECK_EQ_INT(run_int("w:1", 9), 9);
  /* nested: x + n(n-1)/2; a called function inside the body: x + n */
  for (int n = 0; n <= 6; n++) {
    CHECK(run_xn("wn:2", 10, n) == 10.0f + (float)(n * (n - 1) / 2));
    CHECK(run_xn("wc:2", 0.5f, n) == 0.5f + (float)n);
  }
  /* int64 vars: sum 1..n */
  CHECK_EQ_INT(run_int("w64:1", 100), 5050);
  CHECK_EQ_INT(run_int("w64:1", 0), 0);
  /* bool var as cond's value itself */
  CHECK_EQ_INT(run_int("wb:1", 0), 5);
  sm_tensor *o;
  CHECK_OK(run("wb:0", &o, NULL, 0));
  CHECK(o && sm_tensor_dtype(o) == SM_BOOL && *(unsigned char *)sm_tensor_data(o) == 0);
  sm_tensor_free(o);
  /* string var */
  CHECK_OK(run("ws:0", &o, NULL, 0));
  size_t len = 0;
  const char *s = o && sm_tensor_dtype(o) == SM_STRING ? sm_tensor_string(o, 0, &len) : NULL;
  CHECK(s && len == 16 && !memcmp(s, "abababababababab", 16));
  sm_tensor_free(o);
}

static void test_while_resource(void) {
  for (int n = 0; n <= 4; n++) {
    sm_tensor *o = NULL;
    CHECK_OK(sm__session_run(g_s, NULL, NULL, 0, NULL, 0, (const char *[]){"init"}, 1, NULL));
    /* acc = x + 1 + 2 + ... + n, and v = n after */
    CHECK(run_xn("wv:3", 100, n) == 100.0f + (float)(n * (n + 1) / 2));
    CHECK_OK(run("readv", &o, NULL, 0));
    CHECK(o && *(float *)sm_tensor_data(o) == (float)n);
    sm_tensor_free(o);
  }
}

static float run_if(const char *fetch, const char *cname, sm_tensor *c, float x) {
  sm_tensor *o;
  sm_status *st = run(fetch, &o, NULL, 3, cname, c, "x", f32(x), "n", i32(3));
  if (st) {
    fprintf(stderr, "%s: %s\n", fetch, sm_status_message(st));
    sm_status_free(st);
    return -12345;
  }
  float v = o && sm_tensor_dtype(o) == SM_FLOAT ? *(float *)sm_tensor_data(o) : -999;
  sm_tensor_free(o);
  return v;
}

static void test_if(void) {
  /* then: x * 2, else: x - 1 */
  CHECK(run_if("if_b", "pb", b8(1), 5) == 10);
  CHECK(run_if("if_b", "pb", b8(0), 5) == 4);
  CHECK(run_if("if_i", "pi", i32(-7), 5) == 10);
  CHECK(run_if("if_i", "pi", i32(0), 5) == 4);
  CHECK(run_if("if_f", "pf", f32(0.25f), 5) == 10);
  CHECK(run_if("if_f", "pf", f32(0), 5) == 4);
  CHECK(run_if("if_f", "pf", f32(-0.0f), 5) == 4);
  CHECK(run_if("if_s", "ps", str("no"), 5) == 10); /* a non-empty string is true */
  CHECK(run_if("if_s", "ps", str(""), 5) == 4);
  /* not a scalar: true when it has elements, whatever they are */
  int64_t d1 = 2, d0 = 0;
  sm_tensor *zeros, *empty;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d1, &zeros));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d0, &empty));
  CHECK(run_if("if_i", "pi", zeros, 5) == 10);
  CHECK(run_if("if_i", "pi", empty, 5) == 4);
  /* a dtype TensorFlow cannot read as a bool */
  sm_tensor *o, *h;
  CHECK_OK(sm_tensor_new(SM_HALF, 0, NULL, &h));
  CHECK_ERR(run("if_h", &o, NULL, 2, "ph", h, "x", f32(1)),
            "node 'if_h' (If): cond: DT_HALF cannot be converted to a boolean");
  CHECK(o == NULL);
  /* a loop inside a branch */
  CHECK(run_if("iw", "pb", b8(1), 3) == 24);
  CHECK(run_if("iw", "pb", b8(0), 3) == -3);
}

static void test_case(void) {
  const char *names[] = {"case", "scase"};
  for (int k = 0; k < 2; k++) {
    CHECK(run_if(names[k], "bi", i32(0), 3) == 6);
    CHECK(run_if(names[k], "bi", i32(1), 3) == 2);
    CHECK(run_if(names[k], "bi", i32(2), 3) == 9);
    /* out of range either way: the last branch */
    CHECK(run_if(names[k], "bi", i32(3), 3) == 9);
    CHECK(run_if(names[k], "bi", i32(1000), 3) == 9);
    CHECK(run_if(names[k], "bi", i32(-1), 3) == 9);
  }
}

static void test_errors(void) {
  sm_tensor *o;
  /* an error in the body names the loop, the iteration, the function and the body's node */
  CHECK_ERR(run("w_bad:2", &o, NULL, 2, "x", f32(1), "n", i32(3)),
            "node 'w_bad' (While): iteration 0: function 'body_bad': node 'bad' (AddV2): Incompatible shapes");
  CHECK(o == NULL);
  /* no error when the body never runs */
  CHECK(run_xn("w_bad:2", 2, 0) == 2);
  /* an endless loop, cancelled from inside cond on its 4th call (iteration 3): the loop's own
   * check stops it at the top of iteration 4, before the next cond runs */
  g_ticks = 0;
  g_cancel = 0;
  g_cancel_at = 4;
  g_expire_at = -1;
  g_ro = (sm_run_options){.cancel = &g_cancel};
  sm_status *st = run("w_inf", &o, &g_ro, 1, "pb", b8(1));
  CHECK(sm_status_code(st) == SM_CANCELLED);
  CHECK(st && strstr(sm_status_message(st), "node 'w_inf' (While): iteration 4: run cancelled"));
  if (st && !strstr(sm_status_message(st), "iteration 4")) fprintf(stderr, "got: %s\n", sm_status_message(st));
  sm_status_free(st);
  CHECK_EQ_INT(g_ticks, 4);
  CHECK(o == NULL);
  /* the same with the deadline moved into the past on the 10th call */
  g_ticks = 0;
  g_cancel_at = -1;
  g_expire_at = 10;
  g_ro = (sm_run_options){.deadline_us = 0};
  st = run("w_inf", &o, &g_ro, 1, "pb", b8(1));
  CHECK(sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  CHECK(st && strstr(sm_status_message(st), "node 'w_inf' (While): iteration 10: deadline exceeded"));
  sm_status_free(st);
  CHECK_EQ_INT(g_ticks, 10);
  /* a loop with no steps at all, under a deadline a little ahead: it can only end by the deadline
   * (before the loop starts or inside it), however fast the machine */
  sm_run_options ro = {.deadline_us = sm_monotonic_us() + 20000};
  st = run("w_empty", &o, &ro, 1, "pb", b8(1));
  CHECK(sm_status_code(st) == SM_DEADLINE_EXCEEDED);
  sm_status_free(st);
  CHECK(o == NULL);
  /* ... and cancelled before it starts */
  volatile int flag = 1;
  ro = (sm_run_options){.cancel = &flag};
  st = run("w_empty", &o, &ro, 1, "pb", b8(1));
  CHECK(sm_status_code(st) == SM_CANCELLED);
  sm_status_free(st);
  /* the loop ends when its bool is false from the start */
  CHECK_OK(run("w_empty", &o, NULL, 1, "pb", b8(0)));
  CHECK(o && *(unsigned char *)sm_tensor_data(o) == 0);
  sm_tensor_free(o);
  /* refused when the plan is built */
  const char *feeds[] = {"x", "n"};
  CHECK_ERR(sm__session_prepare(g_s, feeds, 2, (const char *[]){"w_rec"}, 1, NULL, 0),
            "function 'body_rec' calls itself");
  CHECK_ERR(sm__session_prepare(g_s, feeds, 2, (const char *[]){"w_arity"}, 1, NULL, 0),
            "node 'w_arity' (While): body function 'body_id' takes 1 inputs and gives 1 outputs; the node passes 3 "
            "and expects 3");
  CHECK_ERR(sm__session_prepare(g_s, feeds, 2, (const char *[]){"w_cond2"}, 1, NULL, 0),
            "cond function 'body_dbl' gives 3 outputs; expected a single scalar");
  CHECK_ERR(sm__session_prepare(g_s, feeds, 2, (const char *[]){"w_nofn"}, 1, NULL, 0),
            "function 'no_such_fn' is not in the graph's library");
}

int main(void) {
  CHECK_OK(sm__kernels_add(test_kernels, SM_BACKEND_CPU));
  CHECK_OK(sm__session_from_pbtxt(graph, &g_s));
  if (!g_s) TEST_MAIN_END();
  test_while();
  test_while_resource();
  test_if();
  test_case();
  test_errors();
  sm__session_free(g_s);
  TEST_MAIN_END();
}
