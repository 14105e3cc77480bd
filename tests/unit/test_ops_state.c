/* test_ops_state.c - variable kernels (resource and TF1 ref style), ResourceGather and the random
 * initializers (src/ops/random.c; their values against TF in test_ops_random), run through sessions
 * over small pbtxt graphs. */
#include <math.h>
#include <string.h>

#include "runtime/executor.h"
#include "runtime/session.h"
#include "test.h"

#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define ATTR_S(k, v) "attr { key: \"" k "\" value { s: \"" v "\" } } "
#define ATTR_B(k, v) "attr { key: \"" k "\" value { b: " v " } } "
#define ATTR_I(k, v) "attr { key: \"" k "\" value { i: " v " } } "
#define SHAPE_ANY "attr { key: \"shape\" value { shape { unknown_rank: true } } } "
#define FCONST(name, v)                                                                  \
  "node { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")                 \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: " v " } } } }\n"
#define FVEC2(name, a, b)                                                                                  \
  "node { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")                                   \
  "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: " a \
  " float_val: " b " } } } }\n"
#define PH(name, t) "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", t) SHAPE_ANY "}\n"

static sm_tensor *fvec(int n, const float *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_FLOAT, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(float));
  return t;
}

static float fat(const sm_tensor *t, int i) { return ((const float *)sm_tensor_data(t))[i]; }

/* Runs with no feeds; fetch one tensor (or none when fetch is NULL) and run one target. */
static sm_status *run1(sm_session *s, const char *fetch, const char *target, sm_tensor **out) {
  if (out) *out = NULL;
  return sm__session_run(s, NULL, NULL, 0, fetch ? (const char *[]){fetch} : NULL, fetch ? 1 : 0,
                        target ? (const char *[]){target} : NULL, target ? 1 : 0, out);
}

/* ---- resource variables --------------------------------------------------------------------- */
static const char *resource_graph =
    "graph_def {\n"
    "node { name: \"v\" op: \"VarHandleOp\" " ATTR_T("dtype", "DT_FLOAT") ATTR_S("shared_name", "v")
    "attr { key: \"shape\" value { shape { dim { size: 2 } } } } }\n"
    "node { name: \"v_again\" op: \"VarHandleOp\" " ATTR_T("dtype", "DT_FLOAT") ATTR_S("shared_name", "v") SHAPE_ANY "}\n"
    "node { name: \"vi\" op: \"VarHandleOp\" " ATTR_T("dtype", "DT_INT32") ATTR_S("shared_name", "vi") SHAPE_ANY "}\n"
    FVEC2("init_val", "1", "2") FVEC2("delta", "0.5", "-1") FCONST("scalar", "7")
    "node { name: \"init\" op: \"AssignVariableOp\" input: \"v\" input: \"init_val\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"assign_scalar\" op: \"AssignVariableOp\" input: \"v\" input: \"scalar\" " ATTR_T("dtype", "DT_FLOAT")
    ATTR_B("validate_shape", "true") "}\n"
    "node { name: \"assign_scalar_nocheck\" op: \"AssignVariableOp\" input: \"v\" input: \"scalar\" "
    ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"add\" op: \"AssignAddVariableOp\" input: \"v\" input: \"delta\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"sub\" op: \"AssignSubVariableOp\" input: \"v\" input: \"delta\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"read\" op: \"ReadVariableOp\" input: \"v_again\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"read_after_add\" op: \"ReadVariableOp\" input: \"v\" input: \"^add\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"read_wrong\" op: \"ReadVariableOp\" input: \"vi\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"assign_wrong\" op: \"AssignVariableOp\" input: \"vi\" input: \"scalar\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"is_init\" op: \"VarIsInitializedOp\" input: \"v\" }\n"
    "node { name: \"destroy\" op: \"DestroyResourceOp\" input: \"v\" }\n"
    "}\n";

static void test_resource_variables(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(resource_graph, &s));
  if (!s) return;
  sm_tensor *o;
  CHECK_OK(run1(s, "is_init", NULL, &o));
  if (o) CHECK(sm_tensor_dtype(o) == SM_BOOL && *(uint8_t *)sm_tensor_data(o) == 0);
  sm_tensor_free(o);
  sm_status *st = run1(s, "read", NULL, &o);
  CHECK(sm_status_code(st) == SM_FAILED_PRECONDITION);
  sm_status_free(st);
  CHECK_OK(run1(s, NULL, "init", NULL));
  CHECK_OK(run1(s, "is_init", NULL, &o));
  if (o) CHECK(*(uint8_t *)sm_tensor_data(o) == 1);
  sm_tensor_free(o);
  /* both handles name one variable */
  CHECK_OK(run1(s, "read", NULL, &o));
  if (o) CHECK(sm_tensor_num_elements(o) == 2 && fat(o, 0) == 1 && fat(o, 1) == 2);
  sm_tensor_free(o);
  /* variables live across runs */
  CHECK_OK(run1(s, "read_after_add", NULL, &o));
  if (o) CHECK(fat(o, 0) == 1.5f && fat(o, 1) == 1);
  sm_tensor_free(o);
  CHECK_OK(run1(s, "read_after_add", NULL, &o));
  if (o) CHECK(fat(o, 0) == 2 && fat(o, 1) == 0);
  sm_tensor_free(o);
  CHECK_OK(run1(s, NULL, "sub", NULL));
  CHECK_OK(run1(s, "read", NULL, &o));
  if (o) CHECK(fat(o, 0) == 1.5f && fat(o, 1) == 1);
  sm_tensor_free(o);
  /* a reader's tensor is not changed by a later update */
  sm_tensor *before;
  CHECK_OK(run1(s, "read", NULL, &before));
  CHECK_OK(run1(s, NULL, "add", NULL));
  if (before) CHECK(fat(before, 0) == 1.5f);
  sm_tensor_free(before);
  /* the Const assigned is not written by updates */
  CHECK_OK(run1(s, NULL, "init", NULL));
  CHECK_OK(run1(s, NULL, "add", NULL));
  CHECK_OK(run1(s, "init_val", NULL, &o));
  if (o) CHECK(fat(o, 0) == 1 && fat(o, 1) == 2);
  sm_tensor_free(o);
  /* shapes */
  CHECK_ERR(run1(s, NULL, "assign_scalar", NULL), "shapes must be equal");
  CHECK_OK(run1(s, NULL, "assign_scalar_nocheck", NULL));
  CHECK_OK(run1(s, "read", NULL, &o));
  if (o) CHECK(sm_tensor_rank(o) == 0 && fat(o, 0) == 7);
  sm_tensor_free(o);
  CHECK_ERR(run1(s, NULL, "add", NULL), "shapes must be equal");
  /* dtypes */
  CHECK_ERR(run1(s, NULL, "assign_wrong", NULL), "wrong dtype");
  CHECK_ERR(run1(s, "read_wrong", NULL, &o), "wrong dtype");
  CHECK_OK(run1(s, NULL, "destroy", NULL));
  sm__session_free(s);
}

/* A handle node keeps the handle it made (state.c var_compute) for the resources it was made in:
 * one plan run in another session's environment finds that session's variable, not the first's,
 * and back again. */
static void test_handle_per_resources(void) {
  sm_session *a = NULL, *b = NULL;
  CHECK_OK(sm__session_from_pbtxt(resource_graph, &a));
  CHECK_OK(sm__session_from_pbtxt(resource_graph, &b));
  const sm_plan *p = NULL;
  const char *fetch[1] = {"read"};
  if (a && b) CHECK_OK(sm__session_plan(a, NULL, 0, fetch, 1, NULL, 0, &p, NULL, NULL));
  if (p) {
    sm_tensor *o = NULL;
    CHECK_OK(run1(a, NULL, "init", NULL));
    CHECK_OK(run1(b, NULL, "assign_scalar_nocheck", NULL));
    for (int round = 0; round < 2; round++) {
      CHECK_OK(sm__plan_run(p, sm__session_env(a), NULL, &o, NULL));
      if (o) CHECK(sm_tensor_num_elements(o) == 2 && fat(o, 0) == 1 && fat(o, 1) == 2);
      sm_tensor_free(o);
      o = NULL;
      CHECK_OK(sm__plan_run(p, sm__session_env(b), NULL, &o, NULL));
      if (o) CHECK(sm_tensor_num_elements(o) == 1 && fat(o, 0) == 7);
      sm_tensor_free(o);
      o = NULL;
    }
  }
  sm__session_free(a);
  sm__session_free(b);
}

/* ---- TF1 ref variables: the counter fixture's graph ----------------------------------------- */
static const char *counter_graph =
    "meta_info_def { stripped_op_list {\n"
    "  op { name: \"IsVariableInitialized\" input_arg { name: \"ref\" type_attr: \"dtype\" is_ref: true }"
    "       output_arg { name: \"is_initialized\" type: DT_BOOL } attr { name: \"dtype\" type: \"type\" }"
    "       allows_uninitialized_input: true }\n"
    "} }\n"
    "graph_def {\n"
    "node { name: \"counter\" op: \"VariableV2\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"shape\" value { shape {} } } }\n"
    "node { name: \"other\" op: \"VariableV2\" " ATTR_T("dtype", "DT_FLOAT") ATTR_S("shared_name", "counter")
    "attr { key: \"shape\" value { shape {} } } }\n"
    FCONST("zero", "0") FCONST("one", "1") FVEC2("pair", "1", "2") PH("by", "DT_FLOAT")
    "node { name: \"reset_counter\" op: \"Assign\" input: \"counter\" input: \"zero\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"incr_counter\" op: \"AssignAdd\" input: \"counter\" input: \"one\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"incr_counter_by\" op: \"AssignAdd\" input: \"counter\" input: \"by\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"decr_counter\" op: \"AssignSub\" input: \"counter\" input: \"one\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"assign_pair\" op: \"Assign\" input: \"counter\" input: \"pair\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "node { name: \"assign_pair_free\" op: \"Assign\" input: \"counter\" input: \"pair\" " ATTR_T("T", "DT_FLOAT")
    ATTR_B("validate_shape", "false") "}\n"
    "node { name: \"is_init\" op: \"IsVariableInitialized\" input: \"counter\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"plus_one\" op: \"AddV2\" input: \"incr_counter\" input: \"one\" " ATTR_T("T", "DT_FLOAT") "}\n"
    "}\n";

static void test_ref_counter(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(counter_graph, &s));
  if (!s) return;
  sm_tensor *o;
  CHECK_OK(run1(s, "is_init", NULL, &o));
  if (o) CHECK(*(uint8_t *)sm_tensor_data(o) == 0);
  sm_tensor_free(o);
  CHECK_ERR(run1(s, "incr_counter", NULL, &o), "uninitialized value counter");
  CHECK_OK(run1(s, "reset_counter", NULL, &o));
  if (o) CHECK(sm_tensor_dtype(o) == SM_FLOAT && fat(o, 0) == 0);
  sm_tensor_free(o);
  CHECK_OK(run1(s, "is_init", NULL, &o));
  if (o) CHECK(*(uint8_t *)sm_tensor_data(o) == 1);
  sm_tensor_free(o);
  CHECK_OK(run1(s, "incr_counter", NULL, &o));
  if (o) CHECK(fat(o, 0) == 1);
  sm_tensor_free(o);
  /* incr_counter_by(3) after one increment gives 4, as the fixture's README says */
  sm_tensor *three = fvec(1, (float[]){3});
  sm_tensor *three_s;
  CHECK_OK(sm_tensor_view(three, 0, NULL, &three_s));
  CHECK_OK(sm__session_run(s, (const char *[]){"by"}, &three_s, 1, (const char *[]){"incr_counter_by:0"}, 1, NULL, 0, &o));
  if (o) CHECK(fat(o, 0) == 4);
  sm_tensor_free(o);
  /* the feed is not written */
  CHECK(fat(three, 0) == 3);
  /* shape mismatch: AssignAdd with a [1] value onto a scalar */
  CHECK_ERR(sm__session_run(s, (const char *[]){"by"}, &three, 1, (const char *[]){"incr_counter_by:0"}, 1, NULL, 0, &o),
            "shapes must be equal");
  sm_tensor_free(three);
  sm_tensor_free(three_s);
  CHECK_OK(run1(s, "decr_counter", NULL, &o));
  if (o) CHECK(fat(o, 0) == 3);
  sm_tensor_free(o);
  /* a non-ref consumer of a ref output reads the value */
  CHECK_OK(run1(s, "plus_one", NULL, &o));
  if (o) CHECK(fat(o, 0) == 5);
  sm_tensor_free(o);
  /* the shared_name "counter" names the same variable */
  CHECK_OK(run1(s, "other", NULL, &o));
  if (o) CHECK(fat(o, 0) == 4);
  sm_tensor_free(o);
  CHECK_ERR(run1(s, "assign_pair", NULL, &o), "shapes must be equal");
  CHECK_OK(run1(s, "assign_pair_free", NULL, &o));
  if (o) CHECK(sm_tensor_num_elements(o) == 2 && fat(o, 1) == 2);
  sm_tensor_free(o);
  sm__session_free(s);
}

/* ---- ResourceGather ------------------------------------------------------------------------- */
static const char *gather_graph =
    "graph_def {\n"
    "node { name: \"emb\" op: \"VarHandleOp\" " ATTR_T("dtype", "DT_FLOAT") ATTR_S("shared_name", "emb") SHAPE_ANY "}\n"
    "node { name: \"table\" op: \"Const\" " ATTR_T("dtype", "DT_FLOAT")
    "attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } dim { size: 2 } }"
    " float_val: 1 float_val: 2 float_val: 3 float_val: 4 float_val: 5 float_val: 6 } } } }\n"
    "node { name: \"init\" op: \"AssignVariableOp\" input: \"emb\" input: \"table\" " ATTR_T("dtype", "DT_FLOAT") "}\n"
    "node { name: \"ids\" op: \"Placeholder\" " ATTR_T("dtype", "DT_INT64") SHAPE_ANY "}\n"
    "node { name: \"ids32\" op: \"Placeholder\" " ATTR_T("dtype", "DT_INT32") SHAPE_ANY "}\n"
    "node { name: \"g\" op: \"ResourceGather\" input: \"emb\" input: \"ids\" " ATTR_T("dtype", "DT_FLOAT")
    ATTR_T("Tindices", "DT_INT64") "}\n"
    "node { name: \"g32\" op: \"ResourceGather\" input: \"emb\" input: \"ids32\" " ATTR_T("dtype", "DT_FLOAT")
    ATTR_T("Tindices", "DT_INT32") "}\n"
    "node { name: \"gb\" op: \"ResourceGather\" input: \"emb\" input: \"ids\" " ATTR_T("dtype", "DT_FLOAT")
    ATTR_T("Tindices", "DT_INT64") ATTR_I("batch_dims", "1") "}\n"
    "}\n";

static void test_resource_gather(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(gather_graph, &s));
  if (!s) return;
  CHECK_OK(run1(s, NULL, "init", NULL));
  sm_tensor *ids;
  int64_t d[2] = {2, 2};
  CHECK_OK(sm_tensor_new(SM_INT64, 2, d, &ids));
  int64_t *iv = sm_tensor_data(ids);
  iv[0] = 2, iv[1] = 0, iv[2] = 1, iv[3] = 2;
  sm_tensor *o = NULL;
  CHECK_OK(sm__session_run(s, (const char *[]){"ids"}, &ids, 1, (const char *[]){"g"}, 1, NULL, 0, &o));
  if (o) {
    CHECK(sm_tensor_rank(o) == 3 && sm_tensor_dims(o)[0] == 2 && sm_tensor_dims(o)[1] == 2 && sm_tensor_dims(o)[2] == 2);
    static const float want[] = {5, 6, 1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 8; i++) CHECK(fat(o, i) == want[i]);
    sm_tensor_free(o);
  }
  iv[3] = 3;
  CHECK_ERR(sm__session_run(s, (const char *[]){"ids"}, &ids, 1, (const char *[]){"g"}, 1, NULL, 0, &o),
            "indices[3] = 3 is not in [0, 3)");
  iv[3] = -1;
  CHECK_ERR(sm__session_run(s, (const char *[]){"ids"}, &ids, 1, (const char *[]){"g"}, 1, NULL, 0, &o), "is not in");
  sm_tensor_free(ids);
  sm_tensor *ids32;
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &ids32));
  *(int32_t *)sm_tensor_data(ids32) = 1;
  CHECK_OK(sm__session_run(s, (const char *[]){"ids32"}, &ids32, 1, (const char *[]){"g32"}, 1, NULL, 0, &o));
  if (o) {
    CHECK(sm_tensor_rank(o) == 1 && fat(o, 0) == 3 && fat(o, 1) == 4);
    sm_tensor_free(o);
  }
  sm_tensor_free(ids32);
  CHECK_ERR(sm__session_prepare(s, (const char *[]){"ids"}, 1, (const char *[]){"gb"}, 1, NULL, 0), "batch_dims");
  sm__session_free(s);
}

/* ---- random initializers -------------------------------------------------------------------- */
#define RANDOM_NODE(name, op, dtype, extra)                                                                    \
  "node { name: \"" name "\" op: \"" op "\" input: \"shape\" " ATTR_T("dtype", dtype) ATTR_T("T", "DT_INT32") \
  extra "}\n"

static const char *random_graph =
    "graph_def {\n"
    "node { name: \"shape\" op: \"Const\" " ATTR_T("dtype", "DT_INT32")
    "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 50"
    " int_val: 40 } } } }\n"
    RANDOM_NODE("u", "RandomUniform", "DT_FLOAT", "")
    RANDOM_NODE("u_seeded", "RandomUniform", "DT_FLOAT", ATTR_I("seed", "1") ATTR_I("seed2", "2"))
    RANDOM_NODE("u_seeded2", "RandomUniform", "DT_FLOAT", ATTR_I("seed", "1") ATTR_I("seed2", "3"))
    RANDOM_NODE("u64", "RandomUniform", "DT_DOUBLE", "")
    RANDOM_NODE("uh", "RandomUniform", "DT_HALF", "")
    RANDOM_NODE("ub", "RandomUniform", "DT_BFLOAT16", "")
    RANDOM_NODE("n", "RandomStandardNormal", "DT_FLOAT", "")
    RANDOM_NODE("tn", "TruncatedNormal", "DT_FLOAT", "")
    "}\n";

static void test_random(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(random_graph, &s));
  if (!s) return;
  sm_tensor *a, *b;
  CHECK_OK(run1(s, "u", NULL, &a));
  CHECK_OK(run1(s, "u", NULL, &b));
  if (a && b) {
    CHECK(sm_tensor_rank(a) == 2 && sm_tensor_dims(a)[0] == 50 && sm_tensor_dims(a)[1] == 40);
    CHECK(!sm_tensor_equal(a, b)); /* the generator moves on every run, as TF's does */
    double sum = 0;
    for (int i = 0; i < 2000; i++) {
      float v = fat(a, i);
      CHECK(v >= 0 && v < 1);
      sum += v;
    }
    CHECK(fabs(sum / 2000 - 0.5) < 0.05);
  }
  sm_tensor_free(a);
  sm_tensor_free(b);
  CHECK_OK(run1(s, "u_seeded", NULL, &a));
  CHECK_OK(run1(s, "u_seeded2", NULL, &b));
  if (a && b) CHECK(!sm_tensor_equal(a, b));
  sm_tensor_free(a);
  sm_tensor_free(b);
  CHECK_OK(run1(s, "u64", NULL, &a));
  if (a) {
    const double *d = sm_tensor_data(a);
    for (int i = 0; i < 2000; i++) CHECK(d[i] >= 0 && d[i] < 1);
  }
  sm_tensor_free(a);
  CHECK_OK(run1(s, "uh", NULL, &a));
  if (a) {
    const uint16_t *h = sm_tensor_data(a);
    for (int i = 0; i < 2000; i++) CHECK(h[i] < 0x3c00u); /* [0, 1) in half: sign 0, below 1.0 */
  }
  sm_tensor_free(a);
  CHECK_OK(run1(s, "ub", NULL, &a));
  if (a) {
    const uint16_t *h = sm_tensor_data(a);
    for (int i = 0; i < 2000; i++) CHECK(h[i] < 0x3f80u);
  }
  sm_tensor_free(a);
  CHECK_OK(run1(s, "n", NULL, &a));
  if (a) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 2000; i++) sum += fat(a, i), sq += (double)fat(a, i) * fat(a, i);
    CHECK(fabs(sum / 2000) < 0.1 && fabs(sq / 2000 - 1) < 0.15);
  }
  sm_tensor_free(a);
  CHECK_OK(run1(s, "tn", NULL, &a));
  if (a)
    for (int i = 0; i < 2000; i++) CHECK(fabsf(fat(a, i)) <= 2);
  sm_tensor_free(a);
  sm__session_free(s);
}

int main(void) {
  test_resource_variables();
  test_handle_per_resources();
  test_ref_counter();
  test_resource_gather();
  test_random();
  TEST_MAIN_END();
}
