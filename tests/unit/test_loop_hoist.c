/* test_loop_hoist.c - the While kernel's hoisting of a body's input projection (control_hoist.c):
 * x_t = TensorListGetItem(list, i); x_t @ W, with i the loop counter and W loop-invariant, is
 * computed for every t in one product before the loop.
 *
 * Checked against the loop computed here in double: an RNN-like body h = 0.5 h + x_t @ W over a
 * list made by TensorListFromTensor, with W a resource variable read in the body (hoisted: the
 * hoist counter moves), and W a loop-invariant float var with transpose_b (hoisted); and two bodies
 * where the hoist must not apply and does not (the counter stays): W assigned in the loop
 * (AssignAddVariableOp each step), an index that is not the loop counter (a var passed
 * through unchanged), and a body that calls a function (nested hoists would compile 2^depth plans). Every case must give the plain loop's values either way. SM_LOOP_HOIST=0
 * turns the hoist off (checked: nothing hoisted then); chunked products (several per call, a
 * short last one) and a budget no step fits (plain body) are checked too. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/control_internal.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "test.h"

enum { T = 4, B = 2, K = 3, N = 2 };

#define TY(k, t) "attr { key: '" k "' value { type: " t " } } "
#define TL(k, ts) "attr { key: '" k "' value { list { " ts " } } } "
#define FN(k, f) "attr { key: '" k "' value { func { name: '" f "' } } } "
#define ARG(n, t) "input_arg { name: '" n "' type: " t " } "
#define OUT(n, t) "output_arg { name: '" n "' type: " t " } "
#define RET(k, v) "ret { key: '" k "' value: '" v "' } "
#define SHAPE2(a, b) "tensor_shape { dim { size: " #a " } dim { size: " #b " } }"
#define VARS "type: DT_INT32 type: DT_VARIANT type: DT_FLOAT type: DT_RESOURCE type: DT_INT32 type: DT_FLOAT"
#define SIG(name, outs)                                                                                      \
  "signature { name: '" name "' " ARG("i", "DT_INT32") ARG("l", "DT_VARIANT") ARG("h", "DT_FLOAT")            \
  ARG("v", "DT_RESOURCE") ARG("j", "DT_INT32") ARG("wf", "DT_FLOAT") outs "} "
#define OUTS                                                                                                  \
  OUT("i2", "DT_INT32") OUT("l2", "DT_VARIANT") OUT("h2", "DT_FLOAT") OUT("v2", "DT_RESOURCE")                \
  OUT("j2", "DT_INT32") OUT("wf2", "DT_FLOAT")
/* the common tail of a body: h2 = 0.5 h + y; i + 1; the others passed through */
#define TAIL(y)                                                                                               \
  "node_def { name: 'half' op: 'Const' " TY("dtype", "DT_FLOAT")                                             \
  "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.5 } } } }\n"             \
  "node_def { name: 'one' op: 'Const' " TY("dtype", "DT_INT32")                                              \
  "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }\n"                 \
  "node_def { name: 'hh' op: 'Mul' input: 'h' input: 'half:output:0' " TY("T", "DT_FLOAT") "}\n"              \
  "node_def { name: 'hn' op: 'AddV2' input: 'hh:z:0' input: '" y "' " TY("T", "DT_FLOAT") "}\n"              \
  "node_def { name: 'inc' op: 'AddV2' input: 'i' input: 'one:output:0' " TY("T", "DT_INT32") "}\n"           \
  "node_def { name: 'lid' op: 'Identity' input: 'l' " TY("T", "DT_VARIANT") "}\n"                            \
  RET("i2", "inc:z:0") RET("l2", "lid:output:0") RET("h2", "hn:z:0") RET("v2", "v") RET("j2", "j")            \
  RET("wf2", "wf")
#define ES "node_def { name: 'es' op: 'Const' " TY("dtype", "DT_INT32") \
  "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape {} int_val: -1 } } } }\n"
#define GET(idx) \
  "node_def { name: 'x' op: 'TensorListGetItem' input: 'l' input: '" idx "' input: 'es:output:0' " \
  TY("element_dtype", "DT_FLOAT") "}\n"
#define READ "node_def { name: 'w' op: 'ReadVariableOp' input: 'v' " TY("dtype", "DT_FLOAT") "}\n"
#define MM(w, tb)                                                                                   \
  "node_def { name: 'mm' op: 'MatMul' input: 'x:item:0' input: '" w "' " TY("T", "DT_FLOAT")      \
  "attr { key: 'transpose_b' value { b: " tb " } } }\n"
#define LOOP(name, body) \
  "node { name: '" name "' op: 'While' input: 'zero' input: 'list' input: 'h0' input: 'var' input: 'zero' " \
  "input: 'wt' " TL("T", VARS) FN("cond", "cond") FN("body", body) "}\n"

static const char *graph =
    "graph_def {\n"
    "node { name: 'xs' op: 'Placeholder' " TY("dtype", "DT_FLOAT") "}\n"
    "node { name: 'w0' op: 'Placeholder' " TY("dtype", "DT_FLOAT") "}\n"
    "node { name: 'wt' op: 'Placeholder' " TY("dtype", "DT_FLOAT") "}\n"
    "node { name: 'h0' op: 'Placeholder' " TY("dtype", "DT_FLOAT") "}\n"
    "node { name: 'zero' op: 'Const' " TY("dtype", "DT_INT32")
    "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }\n"
    "node { name: 'es' op: 'Const' " TY("dtype", "DT_INT32")
    "attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: -1 int_val: -1 } } } }\n"
    "node { name: 'list' op: 'TensorListFromTensor' input: 'xs' input: 'es' " TY("element_dtype", "DT_FLOAT")
    TY("shape_type", "DT_INT32") "}\n"
    "node { name: 'var' op: 'VarHandleOp' " TY("dtype", "DT_FLOAT") "attr { key: 'shared_name' value { s: 'w' } } "
    "attr { key: 'shape' value { shape { unknown_rank: true } } } }\n"
    "node { name: 'init' op: 'AssignVariableOp' input: 'var' input: 'w0' " TY("dtype", "DT_FLOAT") "}\n"
    LOOP("hoisted", "body_read") LOOP("hoisted_tb", "body_tb") LOOP("assigned", "body_assign")
    LOOP("not_counter", "body_index") LOOP("nested", "body_nested")
    "library {\n"
    /* cond: i < length(l) */
    "function { " SIG("cond", OUT("p", "DT_BOOL"))
    "node_def { name: 'len' op: 'TensorListLength' input: 'l' }\n"
    "node_def { name: 'lt' op: 'Less' input: 'i' input: 'len:length:0' " TY("T", "DT_INT32") "}\n"
    RET("p", "lt:z:0") "}\n"
    /* y = l[i] @ read(v) */
    "function { " SIG("body_read", OUTS) ES GET("i") READ MM("w:value:0", "false") TAIL("mm:product:0") "}\n"
    /* y = l[i] @ wf^T, wf an invariant float var */
    "function { " SIG("body_tb", OUTS) ES GET("i") MM("wf", "true") TAIL("mm:product:0") "}\n"
    /* y = l[i] @ read(v), then v += 1 each step: W changes in the loop */
    "function { " SIG("body_assign", OUTS) ES GET("i") READ MM("w:value:0", "false")
    "node_def { name: 'ones' op: 'OnesLike' input: 'w:value:0' " TY("T", "DT_FLOAT") "}\n"
    "node_def { name: 'bump' op: 'AssignAddVariableOp' input: 'v' input: 'ones:y:0' " TY("dtype", "DT_FLOAT")
    "input: '^mm' }\n"
    TAIL("mm:product:0") "}\n"
    /* y = If(true, ident, ident)(l[i] @ read(v)): a body with a nested function (a call would be
     * inlined; a branch is not) */
    "function { " SIG("body_nested", OUTS) ES GET("i") READ MM("w:value:0", "false")
    "node_def { name: 'yes' op: 'Const' " TY("dtype", "DT_BOOL")
    "attr { key: 'value' value { tensor { dtype: DT_BOOL tensor_shape {} bool_val: true } } } }\n"
    "node_def { name: 'pc' op: 'StatelessIf' input: 'yes:output:0' input: 'mm:product:0' " TY("Tcond", "DT_BOOL")
    TL("Tin", "type: DT_FLOAT") TL("Tout", "type: DT_FLOAT") FN("then_branch", "ident") FN("else_branch", "ident")
    "}\n" TAIL("pc:output:0") "}\n"
    "function { signature { name: 'ident' " ARG("x", "DT_FLOAT") OUT("y", "DT_FLOAT") "} " RET("y", "x") "}\n"
    /* y = l[j] @ read(v): j is passed through, not the counter */
    "function { " SIG("body_index", OUTS) ES GET("j") READ MM("w:value:0", "false") TAIL("mm:product:0") "}\n"
    "}\n"
    "}\n";

static float g_xs[T * B * K], g_w[K * N], g_h0[B * N];

static sm_tensor *tensor(const float *v, int rank, const int64_t *dims, size_t n) {
  sm_tensor *t;
  if (sm_tensor_new(SM_FLOAT, rank, dims, &t)) abort();
  memcpy(sm_tensor_data(t), v, n * sizeof *v);
  return t;
}

/* The loop in double: h = 0.5 h + x[idx(t)] @ (W + t * bump) */
static void reference(int index_is_counter, int bump, double *h) {
  for (int e = 0; e < B * N; e++) h[e] = g_h0[e];
  for (int t = 0; t < T; t++) {
    int s = index_is_counter ? t : 0;
    double y[B * N];
    for (int r = 0; r < B; r++)
      for (int c = 0; c < N; c++) {
        double acc = 0;
        for (int k = 0; k < K; k++) acc += (double)g_xs[(s * B + r) * K + k] * ((double)g_w[k * N + c] + bump * t);
        y[r * N + c] = acc;
      }
    for (int e = 0; e < B * N; e++) h[e] = 0.5 * h[e] + y[e];
  }
}

/* Runs `fetch` (output 2 of a loop: h) and compares with the reference; returns the hoists used. */
static int64_t check_loop(sm_session *s, const char *fetch, int index_is_counter, int bump) {
  sm_tensor *w0 = tensor(g_w, 2, (int64_t[]){K, N}, K * N);
  CHECK_OK(sm__session_run(s, (const char *[]){"w0"}, &w0, 1, NULL, 0, (const char *[]){"init"}, 1, NULL));
  sm_tensor_free(w0);
  int64_t before = sm__hoist_calls();
  float wt[N * K]; /* W transposed, for the transpose_b body */
  for (int k = 0; k < K; k++)
    for (int c = 0; c < N; c++) wt[c * K + k] = g_w[k * N + c];
  sm_tensor *feeds[3] = {tensor(g_xs, 3, (int64_t[]){T, B, K}, T * B * K), tensor(g_h0, 2, (int64_t[]){B, N}, B * N),
                         tensor(wt, 2, (int64_t[]){N, K}, N * K)};
  sm_tensor *o = NULL;
  sm_status *st = sm__session_run(s, (const char *[]){"xs", "h0", "wt"}, feeds, 3, &fetch, 1, NULL, 0, &o);
  for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  CHECK_OK(st);
  double ref[B * N];
  reference(index_is_counter, bump, ref);
  CHECK(o && sm_tensor_dtype(o) == SM_FLOAT && sm_tensor_num_elements(o) == B * N);
  if (o && sm_tensor_num_elements(o) == B * N)
    for (int e = 0; e < B * N; e++) {
      double got = ((const float *)sm_tensor_data(o))[e];
      if (fabs(got - ref[e]) > 1e-5 * fmax(1.0, fabs(ref[e]))) {
        fprintf(stderr, "%s[%d]: %g, expected %g\n", fetch, e, got, ref[e]);
        CHECK(0);
      }
    }
  sm_tensor_free(o);
  return sm__hoist_calls() - before;
}

int main(void) {
  for (int i = 0; i < T * B * K; i++) g_xs[i] = (float)((i * 7) % 11) / 8.0f - 0.6f;
  for (int i = 0; i < K * N; i++) g_w[i] = (float)((i * 5) % 7) / 4.0f - 0.7f;
  for (int i = 0; i < B * N; i++) g_h0[i] = (float)i / 3.0f;
  /* off with SM_LOOP_HOIST=0: the same loops run plain */
  setenv("SM_LOOP_HOIST", "0", 1);
  sm_session *s = NULL;
  CHECK_OK(sm__session_from_pbtxt(graph, &s));
  if (!s) TEST_MAIN_END();
  CHECK_EQ_INT(check_loop(s, "hoisted:2", 1, 0), 0);
  CHECK_EQ_INT(check_loop(s, "hoisted_tb:2", 1, 0), 0);
  sm__session_free(s);
  /* on by default (read when the While is prepared) */
  unsetenv("SM_LOOP_HOIST");
  s = NULL;
  CHECK_OK(sm__session_from_pbtxt(graph, &s));
  if (!s) TEST_MAIN_END();
  CHECK_EQ_INT(check_loop(s, "hoisted:2", 1, 0), 1);
  CHECK_EQ_INT(check_loop(s, "hoisted_tb:2", 1, 0), 1);
  CHECK_EQ_INT(check_loop(s, "assigned:2", 1, 1), 0);
  CHECK_EQ_INT(check_loop(s, "not_counter:2", 0, 0), 0);
  CHECK_EQ_INT(check_loop(s, "nested:2", 1, 0), 0);
  /* chunks of 3, 2 and 1 steps (T = 4): several products per call, the last one short */
  for (int steps = 3; steps >= 1; steps--) {
    sm__hoist_set_chunk_bytes((int64_t)steps * B * (K + N) * (int64_t)sizeof(float));
    CHECK_EQ_INT(check_loop(s, "hoisted:2", 1, 0), 1);
    CHECK_EQ_INT(check_loop(s, "hoisted_tb:2", 1, 0), 1);
  }
  /* a step that alone passes the budget: the plain body */
  sm__hoist_set_chunk_bytes(8);
  CHECK_EQ_INT(check_loop(s, "hoisted:2", 1, 0), 0);
  sm__hoist_set_chunk_bytes(0);
  sm__session_free(s);
  TEST_MAIN_END();
}
