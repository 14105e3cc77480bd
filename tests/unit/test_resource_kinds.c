/* test_resource_kinds.c - a resource handle of one kind fed to an op of another: a hostile graph's
 * VarHandleOp into LookupTableFindV2, a HashTableV2 into ReadVariableOp, a queue into a TensorArray
 * op. Every DT_RESOURCE tensor is a pointer to some object of the loaded model; each op must check
 * that the object is of its kind (TF: "Trying to access resource ... as ... but it is ...") and
 * fail with a status, never read one object as another (variables, tables, queues, TensorArrays,
 * accumulators, mutexes, readers, barriers, SentencePiece models). Every producer x consumer pair of different
 * kinds is one graph, run once; it must fail. The ASan tree is where a missed check shows as a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/tensor.h"
#include "test.h"
#include "tftext_sp_cases.h" /* a SentencePiece model for SentencepieceOp */

enum { K_VAR, K_TABLE, K_QUEUE, K_TA, K_ACCUM, K_MUTEX, K_READER, K_BARRIER, K_QUEUE1, K_SP, K_LAST = K_SP };
/* TF1's string-ref handles (a Barrier, a V1 FIFOQueue) reach only ops that take string refs. */
static int ref_kind(int k) { return k == K_BARRIER || k == K_QUEUE1; }

static sm_tensor *scalar(int dtype, const void *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dtype, 0, NULL, &t));
  if (dtype == SM_STRING)
    CHECK_OK(sm_tensor_set_string(t, 0, v, strlen(v)));
  else
    memcpy(sm_tensor_data(t), v, dtype == SM_INT64 ? 8 : 4);
  return t;
}

static void add_const(sm_graph *g, const char *name, int dtype, const void *v) {
  sm_tensor *t = scalar(dtype, v);
  CHECK_OK(sm_graph_const(g, name, t, NULL));
  sm_tensor_free(t);
}

/* The producer: node "h" whose output 0 is a handle of kind k. */
static void add_producer(sm_graph *g, int k) {
  sm_op *op;
  switch (k) {
  case K_VAR:
    op = sm_op_begin(g, "VarHandleOp", "h");
    sm_op_attr_type(op, "dtype", SM_FLOAT);
    sm_op_attr_shape(op, "shape", 0, NULL);
    sm_op_attr_string(op, "shared_name", "v", 1);
    break;
  case K_TABLE:
    op = sm_op_begin(g, "MutableHashTableV2", "h");
    sm_op_attr_type(op, "key_dtype", SM_INT64);
    sm_op_attr_type(op, "value_dtype", SM_FLOAT);
    break;
  case K_QUEUE: {
    op = sm_op_begin(g, "FIFOQueueV2", "h");
    int ct = SM_FLOAT;
    sm_op_attr_type_list(op, "component_types", &ct, 1);
    break;
  }
  case K_TA:
    op = sm_op_begin(g, "TensorArrayV3", "h");
    sm_op_input(op, "i32");
    sm_op_attr_type(op, "dtype", SM_FLOAT);
    break;
  case K_ACCUM:
    op = sm_op_begin(g, "ResourceConditionalAccumulator", "h");
    sm_op_attr_type(op, "dtype", SM_FLOAT);
    sm_op_attr_shape(op, "shape", 0, NULL);
    break;
  case K_MUTEX:
    op = sm_op_begin(g, "MutexV2", "h");
    break;
  case K_BARRIER: {
    op = sm_op_begin(g, "Barrier", "h");
    int ct = SM_FLOAT, r0 = 0;
    const int64_t *d0[1] = {NULL};
    sm_op_attr_type_list(op, "component_types", &ct, 1);
    sm_op_attr_shape_list(op, "shapes", &r0, d0, 1);
    break;
  }
  case K_QUEUE1: {
    op = sm_op_begin(g, "FIFOQueue", "h");
    int ct = SM_FLOAT;
    sm_op_attr_type_list(op, "component_types", &ct, 1);
    break;
  }
  case K_SP:
    op = sm_op_begin(g, "SentencepieceOp", "h");
    sm_op_attr_string(op, "model", sp_model0, sp_model_len[0]);
    break;
  default:
    op = sm_op_begin(g, "TextLineReaderV2", "h");
    break;
  }
  CHECK_OK(sm_op_finish(op, NULL));
}

typedef struct consumer {
  const char *op;
  int kind;
  const char *in[3]; /* after the handle: const node names */
  const char *type_attr[2];
  int ntype;
} consumer;

static const consumer consumers[] = {
    {"ReadVariableOp", K_VAR, {NULL}, {"dtype"}, 1},
    {"AssignVariableOp", K_VAR, {"f32"}, {"dtype"}, 1},
    {"AssignAddVariableOp", K_VAR, {"f32"}, {"dtype"}, 1},
    {"VariableShape", K_VAR, {NULL}, {NULL}, 0},
    {"ResourceGather", K_VAR, {"i32"}, {"dtype"}, 1},
    {"ResourceScatterAdd", K_VAR, {"i32", "f32"}, {"dtype"}, 1},
    {"ResourceApplyGradientDescent", K_VAR, {"f32", "f32"}, {"T"}, 1},
    {"StatefulStandardNormalV2", K_VAR, {"i64", "shape"}, {"dtype"}, 1},
    {"LookupTableFindV2", K_TABLE, {"i64", "f32"}, {"Tin", "Tout"}, 2},
    {"LookupTableSizeV2", K_TABLE, {NULL}, {NULL}, 0},
    {"LookupTableInsertV2", K_TABLE, {"i64", "f32"}, {"Tin", "Tout"}, 2},
    {"LookupTableRemoveV2", K_TABLE, {"i64"}, {"Tin"}, 1},
    {"QueueSizeV2", K_QUEUE, {NULL}, {NULL}, 0},
    {"QueueCloseV2", K_QUEUE, {NULL}, {NULL}, 0},
    {"TensorArraySizeV3", K_TA, {"f32"}, {NULL}, 0},
    {"TensorArrayReadV3", K_TA, {"i32", "f32"}, {"dtype"}, 1},
    {"ResourceAccumulatorNumAccumulated", K_ACCUM, {NULL}, {NULL}, 0},
    {"ResourceAccumulatorSetGlobalStep", K_ACCUM, {"i64"}, {NULL}, 0},
    {"MutexLock", K_MUTEX, {NULL}, {NULL}, 0},
    {"ReaderNumRecordsProducedV2", K_READER, {NULL}, {NULL}, 0},
    {"ReaderResetV2", K_READER, {NULL}, {NULL}, 0},
    {"BarrierReadySize", K_BARRIER, {NULL}, {NULL}, 0},
    {"QueueSize", K_QUEUE1, {NULL}, {NULL}, 0},
    {"SentencepieceVocabSizeOp", K_SP, {NULL}, {NULL}, 0},
};

static int run_pair(int k, const consumer *c) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  float f = 1;
  int32_t i = 0, one = 1;
  int64_t l = 0;
  add_const(g, "f32", SM_FLOAT, &f);
  add_const(g, "i32", SM_INT32, &one);
  add_const(g, "i64", SM_INT64, &l);
  sm_tensor *shape = NULL;
  int64_t d1 = 1;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &d1, &shape));
  memcpy(sm_tensor_data(shape), &i, 4);
  CHECK_OK(sm_graph_const(g, "shape", shape, NULL));
  sm_tensor_free(shape);
  add_producer(g, k);
  sm_op *op = sm_op_begin(g, c->op, "op");
  sm_op_input(op, "h");
  for (int j = 0; j < 3 && c->in[j]; j++) sm_op_input(op, c->in[j]);
  for (int j = 0; j < c->ntype; j++)
    sm_op_attr_type(op, c->type_attr[j], !strcmp(c->type_attr[j], "Tin") ? SM_INT64 : SM_FLOAT);
  if (!strcmp(c->op, "ResourceScatterAdd") || !strcmp(c->op, "ResourceGather")) sm_op_attr_type(op, "Tindices", SM_INT32);
  if (!strcmp(c->op, "StatefulStandardNormalV2")) sm_op_attr_type(op, "shape_dtype", SM_INT32);
  sm_status *fs = sm_op_finish(op, NULL);
  if (fs) { /* the builder refused the graph: the test's own mistake */
    fprintf(stderr, "%s after kind %d: %s\n", c->op, k, sm_status_message(fs));
    CHECK(0);
  }
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_new(&mg, NULL, 1, &s));
  const char *target = "op";
  sm_status *rs = sm__session_run(s, NULL, NULL, 0, NULL, 0, &target, 1, NULL);
  int failed = rs != NULL;
  if (getenv("SM_TEST_VERBOSE")) fprintf(stderr, "%s <- kind %d: %s\n", c->op, k, rs ? sm_status_message(rs) : "ok");
  sm_status_free(rs);
  sm__session_free(s);
  sm_graph_free(g);
  return failed;
}

/* A queue whose component shape has more than one unknown dim is refused once, with one status (the
 * first error used to be overwritten by the next dim's, leaking it: fuzz_kernels, session 24). */
static void test_queue_unknown_dims(const char *qop) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  sm_op *op = sm_op_begin(g, qop, "q");
  int ct = SM_FLOAT, rank = 3;
  int64_t d[3] = {-1, 2, -1};
  const int64_t *dims[1] = {d};
  sm_op_attr_type_list(op, "component_types", &ct, 1);
  sm_op_attr_shape_list(op, "shapes", &rank, dims, 1);
  CHECK_OK(sm_op_finish(op, NULL));
  op = sm_op_begin(g, "QueueSizeV2", "size");
  sm_op_input(op, "q");
  CHECK_OK(sm_op_finish(op, NULL));
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  sm_status *rs = sm__session_new(&mg, NULL, 1, &s);
  const char *target = "size";
  if (!rs) rs = sm__session_run(s, NULL, NULL, 0, NULL, 0, &target, 1, NULL);
  CHECK(rs && sm_status_code(rs) == SM_INVALID_ARGUMENT && strstr(sm_status_message(rs), "not fully defined"));
  if (rs && getenv("SM_TEST_VERBOSE")) fprintf(stderr, "%s: %s\n", qop, sm_status_message(rs));
  sm_status_free(rs);
  sm__session_free(s);
  sm_graph_free(g);
}

int main(void) {
  test_queue_unknown_dims("FIFOQueueV2");
  test_queue_unknown_dims("PriorityQueueV2");
  int pairs = 0;
  for (size_t j = 0; j < sizeof consumers / sizeof consumers[0]; j++)
    for (int k = K_VAR; k <= K_LAST; k++) {
      if (k == consumers[j].kind || ref_kind(k) != ref_kind(consumers[j].kind)) continue;
      if (!run_pair(k, &consumers[j])) {
        fprintf(stderr, "%s ran on a handle of kind %d without an error\n", consumers[j].op, k);
        CHECK(0);
      }
      pairs++;
    }
  printf("test_resource_kinds: %d mismatched pairs refused\n", pairs);
  TEST_MAIN_END();
}
