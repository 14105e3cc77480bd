/* test_list.c - DT_VARIANT tensors (base/variant.h) and the TensorList kernel family (src/ops/list.c),
 * run through sessions over one pbtxt graph: every op's values and shapes, unset elements, partial
 * element shapes, TensorFlow's error messages (texts taken from TF 2.21 running the same ops), the
 * copy-on-write guarantee (a list read twice is not changed through one reader) and the in-place
 * path (a list whose only reader modifies it is the same object afterwards: seen through the test
 * kernel TestListId, which outputs a list object's address). Also: every serializer refuses a
 * variant tensor with an error. */
#define _GNU_SOURCE
#include <stdint.h>
#include <unistd.h>
#include <string.h>

#include "../../src/cli/print_value.c"
#include "../../src/cli/pyfmt.c"
#include "base/variant.h"
#include "builder/builder_internal.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/bundle.h"
#include "savedmodel/npy.h"
#include "serve/json_tensor.h"
#include "test.h"

#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define ATTR_B(k, v) "attr { key: \"" k "\" value { b: " v " } } "
#define ATTR_I(k, v) "attr { key: \"" k "\" value { i: " v " } } "
#define EF ATTR_T("element_dtype", "DT_FLOAT")
#define ST ATTR_T("shape_type", "DT_INT32")
#define IN(x) "input: \"" x "\" "
#define N(name, op, ins, attrs) "node { name: \"" name "\" op: \"" op "\" " ins attrs "}\n"
#define ICONST(name, dt, shape, vals)                                                                         \
  "node { name: \"" name "\" op: \"Const\" " ATTR_T("dtype", dt) "attr { key: \"value\" value { tensor { dtype: " \
  dt " tensor_shape { " shape " } " vals " } } } }\n"
#define D(n) "dim { size: " #n " } "
#define PH(name, t) \
  "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", t) "attr { key: \"shape\" value { shape { unknown_rank: true } } } }\n"

static const char *graph =
    "meta_info_def { stripped_op_list { op { name: \"TestListId\" input_arg { name: \"x\" type: DT_VARIANT } "
    "output_arg { name: \"y\" type: DT_VARIANT } output_arg { name: \"id\" type: DT_INT64 } } } }\n"
    "graph_def {\n"
    ICONST("es2", "DT_INT32", D(1), "int_val: 2")
    ICONST("esu", "DT_INT32", "", "int_val: -1")
    ICONST("esp", "DT_INT32", D(1), "int_val: -1")
    ICONST("es3", "DT_INT32", "", "int_val: 3")
    ICONST("three", "DT_INT32", "", "int_val: 3")
    ICONST("one", "DT_INT32", "", "int_val: 1")
    ICONST("mat", "DT_FLOAT", D(3) D(2), "float_val: 1 float_val: 2 float_val: 3 float_val: 4 float_val: 5 float_val: 6")
    ICONST("vec6", "DT_FLOAT", D(6), "float_val: 1 float_val: 2 float_val: 3 float_val: 4 float_val: 5 float_val: 6")
    ICONST("lens", "DT_INT64", D(3), "int64_val: 1 int64_val: 2 int64_val: 3")
    ICONST("gidx", "DT_INT32", D(2), "int_val: 2 int_val: 0")
    ICONST("sidx", "DT_INT32", D(3), "int_val: 2 int_val: 0 int_val: 4")
    ICONST("strs", "DT_STRING", D(2), "string_val: \"a\" string_val: \"bc\"")
    ICONST("noleads", "DT_INT64", D(0), "")
    PH("idx", "DT_INT32") PH("val", "DT_FLOAT") PH("size", "DT_INT32")
    N("res", "TensorListReserve", IN("es2") IN("three"), EF ST)
    N("res_p", "TensorListReserve", IN("esp") IN("three"), EF ST)
    N("res_bad", "TensorListReserve", IN("es3") IN("three"), EF ST)
    N("res_neg", "TensorListReserve", IN("es2") IN("size"), EF ST)
    N("ft", "TensorListFromTensor", IN("mat") IN("esu"), EF ST)
    N("ft_bad", "TensorListFromTensor", IN("mat") IN("es3"), EF ST)
    N("len_ft", "TensorListLength", IN("ft"), "")
    N("len_res", "TensorListLength", IN("res"), "")
    N("get", "TensorListGetItem", IN("ft") IN("idx") IN("esu"), EF)
    N("get_int", "TensorListGetItem", IN("ft") IN("idx") IN("esu"), ATTR_T("element_dtype", "DT_INT32"))
    N("get_res", "TensorListGetItem", IN("res") IN("idx") IN("esu"), EF)
    N("get_res_p", "TensorListGetItem", IN("res_p") IN("idx") IN("esu"), EF)
    N("set", "TensorListSetItem", IN("ft") IN("idx") IN("val"), EF)
    N("stack_set", "TensorListStack", IN("set") IN("esu"), EF)
    N("stack_ft", "TensorListStack", IN("ft") IN("esu"), EF)
    N("stack_ft3", "TensorListStack", IN("ft") IN("esu"), EF ATTR_I("num_elements", "3"))
    N("stack_ft4", "TensorListStack", IN("ft") IN("esu"), EF ATTR_I("num_elements", "4"))
    N("set_res", "TensorListSetItem", IN("res") IN("idx") IN("val"), EF)
    N("stack_set_res", "TensorListStack", IN("set_res") IN("esu"), EF)
    N("set_res_p", "TensorListSetItem", IN("res_p") IN("one") IN("val"), EF)
    N("stack_set_res_p", "TensorListStack", IN("set_res_p") IN("esu"), EF)
    N("stack_res_p", "TensorListStack", IN("res_p") IN("esu"), EF)
    N("set_grow", "TensorListSetItem", IN("ft") IN("idx") IN("val"), EF ATTR_B("resize_if_index_out_of_bounds", "true"))
    N("stack_grow", "TensorListStack", IN("set_grow") IN("es2"), EF)
    N("push", "TensorListPushBack", IN("ft") IN("val"), EF)
    N("stack_push", "TensorListStack", IN("push") IN("esu"), EF)
    N("pop", "TensorListPopBack", IN("ft") IN("esu"), EF)
    N("len_pop", "TensorListLength", IN("pop"), "")
    N("pop_res", "TensorListPopBack", IN("res") IN("esu"), EF)
    N("es_ft", "TensorListElementShape", IN("ft"), ST)
    N("es_res", "TensorListElementShape", IN("res"), ATTR_T("shape_type", "DT_INT64"))
    N("concat", "TensorListConcatV2", IN("ft") IN("esu") IN("noleads"), EF ST)
    N("concat_res", "TensorListConcatV2", IN("res") IN("esu") IN("noleads"), EF ST)
    N("gather", "TensorListGather", IN("ft") IN("gidx") IN("esu"), EF)
    N("gather_bad", "TensorListGather", IN("ft") IN("sidx") IN("esu"), EF)
    N("scatter", "TensorListScatterV2", IN("mat") IN("sidx") IN("esu") IN("esu"), EF ST)
    N("stack_scatter", "TensorListStack", IN("scatter") IN("es2"), EF)
    N("scatter_into", "TensorListScatterIntoExistingList", IN("res") IN("mat") IN("sidx"), EF)
    N("stack_scatter_into", "TensorListStack", IN("scatter_into") IN("esu"), EF)
    N("split", "TensorListSplit", IN("vec6") IN("esp") IN("lens"), EF ST)
    N("split_get", "TensorListGetItem", IN("split") IN("idx") IN("esu"), EF)
    N("split_concat", "TensorListConcatV2", IN("split") IN("esp") IN("noleads"), EF ST)
    N("resize", "TensorListResize", IN("ft") IN("size"), "")
    N("len_resize", "TensorListLength", IN("resize"), "")
    N("stack_resize", "TensorListStack", IN("resize") IN("es2"), EF)
    N("empty", "EmptyTensorList", IN("es2") IN("one"), EF ST)
    N("push1", "TensorListPushBack", IN("empty") IN("val"), EF)
    N("push2", "TensorListPushBack", IN("push1") IN("val"), EF)
    N("stack_empty", "TensorListStack", IN("empty") IN("es2"), EF)
    N("empty_u", "EmptyTensorList", IN("esu") IN("esu"), EF ST)
    N("stack_empty_u", "TensorListStack", IN("empty_u") IN("esu"), EF)
    N("pop_empty", "TensorListPopBack", IN("empty_u") IN("esu"), EF)
    N("sft", "TensorListFromTensor", IN("strs") IN("esu"), ATTR_T("element_dtype", "DT_STRING") ST)
    N("sget", "TensorListGetItem", IN("sft") IN("idx") IN("esu"), ATTR_T("element_dtype", "DT_STRING"))
    N("sstack", "TensorListStack", IN("sft") IN("esu"), ATTR_T("element_dtype", "DT_STRING"))
    /* in place: the list passes through id_before, whose output set2 alone reads */
    N("res2", "TensorListReserve", IN("es2") IN("three"), EF ST)
    N("id_before", "TestListId", IN("res2"), "")
    N("set2", "TensorListSetItem", IN("id_before") IN("one") IN("val"), EF)
    N("id_after", "TestListId", IN("set2"), "")
    /* shared: id3_before's list is read by set3 and by stack3: set3 must copy */
    N("res3", "TensorListReserve", IN("es2") IN("three"), EF ST)
    N("id3_before", "TestListId", IN("res3"), "")
    N("set3", "TensorListSetItem", IN("id3_before") IN("one") IN("val"), EF)
    N("id3_after", "TestListId", IN("set3"), "")
    N("stack3", "TensorListStack", IN("id3_before") IN("es2") IN("^id3_after"), EF)
    "}\n";

/* TestListId: passes the list on (output 0) and gives its object's address (output 1, int64). */
static sm_status *id_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_variant **v = sm__tensor_variants(sm__kctx_input(ctx, 0));
  sm_tensor *o;
  sm__kctx_forward(ctx, 0, 0);
  sm_status *s = sm__kctx_alloc_output(ctx, 1, SM_INT64, 0, NULL, &o);
  if (!s) *(int64_t *)sm_tensor_data(o) = v ? (int64_t)(intptr_t)v[0] : 0;
  return s;
}
static const sm_kernel test_kernels[] = {{"TestListId", NULL, id_compute, NULL, 0}, {NULL, NULL, NULL, NULL, 0}};

static sm_session *sess;

static sm_tensor *iscalar(int32_t v) {
  sm_tensor *t = NULL;
  if (sm_tensor_new(SM_INT32, 0, NULL, &t)) abort();
  *(int32_t *)sm_tensor_data(t) = v;
  return t;
}

static sm_tensor *fvec(int n, const float *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_FLOAT, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof(float));
  return t;
}

/* Runs with feeds idx, val ([2] float), size; fetches n tensors. */
static sm_status *run(int32_t idx, const float *val2, int32_t size, const char *const *fetch, int n, sm_tensor **out) {
  const float dflt[2] = {9, 8};
  sm_tensor *feeds[3] = {iscalar(idx), fvec(2, val2 ? val2 : dflt), iscalar(size)};
  const char *names[3] = {"idx", "val", "size"};
  sm_status *s = sm__session_run(sess, names, feeds, 3, fetch, n, NULL, 0, out);
  for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);
  return s;
}

static sm_status *run1(const char *fetch, int32_t idx, sm_tensor **out) {
  *out = NULL;
  return run(idx, NULL, 2, (const char *[]){fetch}, 1, out);
}

/* t is a float tensor of shape `dims` (rank entries) with values v. */
static int is_f(const sm_tensor *t, int rank, const int64_t *dims, const float *v) {
  if (!t || sm_tensor_dtype(t) != SM_FLOAT || sm_tensor_rank(t) != rank) return 0;
  if (rank && memcmp(sm_tensor_dims(t), dims, (size_t)rank * sizeof *dims)) return 0;
  const float *d = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    if (d[i] != v[i]) return 0;
  return 1;
}

static int64_t int_of(const sm_tensor *t, int64_t i) {
  if (!t) return INT64_MIN;
  if (sm_tensor_dtype(t) == SM_INT32) return ((const int32_t *)sm_tensor_data(t))[i];
  if (sm_tensor_dtype(t) == SM_INT64) return ((const int64_t *)sm_tensor_data(t))[i];
  return INT64_MIN;
}

#define FETCH(name, idx) (sm_tensor_free(o), o = NULL, run1(name, idx, &o))

static void test_create_and_read(void) {
  sm_tensor *o = NULL;
  CHECK_OK(FETCH("len_ft", 0));
  CHECK_EQ_INT(int_of(o, 0), 3);
  CHECK_OK(FETCH("len_res", 0));
  CHECK_EQ_INT(int_of(o, 0), 3);
  CHECK_OK(FETCH("get", 1));
  CHECK(is_f(o, 1, (int64_t[]){2}, (float[]){3, 4}));
  CHECK_OK(FETCH("get", 2));
  CHECK(is_f(o, 1, (int64_t[]){2}, (float[]){5, 6}));
  CHECK_ERR(FETCH("get", 3), "Trying to access element 3 in a list with 3 elements.");
  CHECK_ERR(FETCH("get", -1), "Trying to access element -1 in a list with 3 elements.");
  CHECK_ERR(FETCH("get_int", 0), "Invalid data types; op elements int32 but list elements float");
  /* unset element, fully known element shape: zeros; partial shape: TF's error */
  CHECK_OK(FETCH("get_res", 1));
  CHECK(is_f(o, 1, (int64_t[]){2}, (float[]){0, 0}));
  CHECK_ERR(FETCH("get_res_p", 0),
            "Trying to read an uninitialized tensor but element_shape is not fully defined: [?] and no list element is set.");
  CHECK_OK(FETCH("stack_ft", 0));
  CHECK(is_f(o, 2, (int64_t[]){3, 2}, (float[]){1, 2, 3, 4, 5, 6}));
  CHECK_OK(FETCH("stack_ft3", 0));
  CHECK(is_f(o, 2, (int64_t[]){3, 2}, (float[]){1, 2, 3, 4, 5, 6}));
  CHECK_ERR(FETCH("stack_ft4", 0), "Operation expected a list with 4 elements but got a list with 3 elements.");
  CHECK_ERR(FETCH("stack_res_p", 0),
            "Tried to stack list which only contains uninitialized tensors and has a non-fully-defined element_shape: [?]");
  CHECK_OK(FETCH("es_ft", 0));
  CHECK(o && sm_tensor_dtype(o) == SM_INT32 && sm_tensor_rank(o) == 0 && int_of(o, 0) == -1);
  CHECK_OK(FETCH("es_res", 0));
  CHECK(o && sm_tensor_dtype(o) == SM_INT64 && sm_tensor_rank(o) == 1 && sm_tensor_dims(o)[0] == 1 && int_of(o, 0) == 2);
  CHECK_ERR(FETCH("res_bad", 0), "The only valid scalar shape tensor is the fully unknown shape specified as -1.");
  CHECK_ERR(run(0, NULL, -2, (const char *[]){"res_neg"}, 1, &o),
            "The num_elements to reserve must be a non negative number, but got -2");
  o = NULL;
  CHECK_ERR(FETCH("ft_bad", 0), "The only valid scalar shape tensor is the fully unknown shape specified as -1.");
  /* a variant can be fetched: a scalar whose object is the list */
  CHECK_OK(FETCH("ft", 0));
  CHECK(o && sm_tensor_dtype(o) == SM_VARIANT && sm_tensor_rank(o) == 0 && sm_tensor_data(o) == NULL &&
        sm_tensor_nbytes(o) == 0 && sm__tensor_variants(o)[0] != NULL);
  sm_tensor_free(o);
}

static void test_modify(void) {
  sm_tensor *o = NULL;
  float v[2] = {7, -7};
  sm_tensor *outs[2] = {NULL, NULL};
  /* set + the original list read by another node in the same run: the original is unchanged */
  CHECK_OK(run(1, v, 2, (const char *[]){"stack_set", "stack_ft"}, 2, outs));
  CHECK(is_f(outs[0], 2, (int64_t[]){3, 2}, (float[]){1, 2, 7, -7, 5, 6}));
  CHECK(is_f(outs[1], 2, (int64_t[]){3, 2}, (float[]){1, 2, 3, 4, 5, 6}));
  sm_tensor_free(outs[0]);
  sm_tensor_free(outs[1]);
  /* fetching the list and its modified version: two objects, the fetched one unchanged */
  CHECK_OK(run(0, v, 2, (const char *[]){"ft", "set"}, 2, outs));
  if (outs[0] && outs[1]) CHECK(sm__tensor_variants(outs[0])[0] != sm__tensor_variants(outs[1])[0]);
  sm_tensor_free(outs[0]);
  sm_tensor_free(outs[1]);
  CHECK_ERR(FETCH("set", 3), "Trying to modify element 3 in a list with 3 elements.");
  CHECK_ERR(FETCH("set", -1), "Trying to modify element -1 in a list with 3 elements.");
  CHECK_ERR(FETCH("set_grow", -1), "Trying to modify element -1 in a list with 3 elements.");
  /* resize_if_index_out_of_bounds: elements 3, 4 unset (zeros), 5 set */
  CHECK_OK(run(5, v, 2, (const char *[]){"stack_grow"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){6, 2}, (float[]){1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 7, -7}));
  sm_tensor_free(o);
  /* unset elements stacked as zeros */
  CHECK_OK(run(2, v, 2, (const char *[]){"stack_set_res"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){3, 2}, (float[]){0, 0, 0, 0, 7, -7}));
  sm_tensor_free(o);
  /* partial element shape [?]: the set element's shape completes it */
  CHECK_OK(run(0, v, 2, (const char *[]){"stack_set_res_p"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){3, 2}, (float[]){0, 0, 7, -7, 0, 0}));
  sm_tensor_free(o);
  /* wrong shape and wrong dtype */
  float v3[3] = {1, 2, 3};
  sm_tensor *feeds[3] = {iscalar(0), fvec(3, v3), iscalar(2)};
  CHECK_ERR(sm__session_run(sess, (const char *[]){"idx", "val", "size"}, feeds, 3, (const char *[]){"set_res"}, 1,
                           NULL, 0, &o),
            "Tried to set a tensor with incompatible shape at a list index. Item element shape: [3] list shape: [2]");
  CHECK_ERR(sm__session_run(sess, (const char *[]){"idx", "val", "size"}, feeds, 3, (const char *[]){"push1"}, 1, NULL,
                           0, &o),
            "Tried to append a tensor with incompatible shape to a list. Op element shape: [3] list shape: [2]");
  for (int i = 0; i < 3; i++) sm_tensor_free(feeds[i]);

  /* push back / pop back */
  CHECK_OK(run(0, v, 2, (const char *[]){"stack_push"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){4, 2}, (float[]){1, 2, 3, 4, 5, 6, 7, -7}));
  sm_tensor_free(o);
  CHECK_OK(run(0, v, 2, (const char *[]){"pop:1", "len_pop"}, 2, outs));
  CHECK(is_f(outs[0], 1, (int64_t[]){2}, (float[]){5, 6}));
  CHECK_EQ_INT(int_of(outs[1], 0), 2);
  sm_tensor_free(outs[0]);
  sm_tensor_free(outs[1]);
  o = NULL;
  CHECK_OK(FETCH("pop_res:1", 0));
  CHECK(is_f(o, 1, (int64_t[]){2}, (float[]){0, 0}));
  CHECK_ERR(FETCH("pop_empty", 0), "Trying to pop from an empty list.");
  CHECK_OK(FETCH("push1", 0));
  CHECK_ERR(FETCH("push2", 0), "Tried to push item into a full list list size: 1 max_num_elements: 1");
  CHECK_OK(FETCH("stack_empty", 0));
  CHECK(o && sm_tensor_rank(o) == 2 && sm_tensor_dims(o)[0] == 0 && sm_tensor_dims(o)[1] == 2);
  CHECK_ERR(FETCH("stack_empty_u", 0),
            "Tried to stack elements of an empty list with non-fully-defined element_shape: <unknown>");
  sm_tensor_free(o);

  /* resize: shrink, grow (new elements unset: zeros), negative */
  o = NULL;
  CHECK_OK(run(0, NULL, 1, (const char *[]){"stack_resize"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){1, 2}, (float[]){1, 2}));
  sm_tensor_free(o);
  CHECK_OK(run(0, NULL, 5, (const char *[]){"stack_resize"}, 1, &o));
  CHECK(is_f(o, 2, (int64_t[]){5, 2}, (float[]){1, 2, 3, 4, 5, 6, 0, 0, 0, 0}));
  sm_tensor_free(o);
  CHECK_ERR(run(0, NULL, -1, (const char *[]){"len_resize"}, 1, &o), "TensorListSlice expects size to be non-negative. Got: -1");
}

/* A list grown past sm__seq_max_elements (kernel.h; lowered here to reach it) is refused. */
static void test_limit(void) {
  sm_tensor *o = NULL;
  int64_t saved = sm__seq_max_elements;
  sm__seq_max_elements = 3; /* "ft" has 3 elements; "push" makes 4 */
  CHECK_ERR(FETCH("push", 0), "TensorList of 4 elements is more than the limit of 3");
  CHECK(o == NULL);
  sm__seq_max_elements = saved;
  CHECK_OK(FETCH("push", 0));
  sm_tensor_free(o);
}

static void test_bulk(void) {
  sm_tensor *o = NULL, *outs[2] = {NULL, NULL};
  CHECK_OK(run(0, NULL, 2, (const char *[]){"concat", "concat:1"}, 2, outs));
  CHECK(is_f(outs[0], 1, (int64_t[]){6}, (float[]){1, 2, 3, 4, 5, 6}));
  CHECK(outs[1] && sm_tensor_dtype(outs[1]) == SM_INT64 && sm_tensor_num_elements(outs[1]) == 3 && int_of(outs[1], 0) == 2 &&
        int_of(outs[1], 2) == 2);
  sm_tensor_free(outs[0]);
  sm_tensor_free(outs[1]);
  /* all elements unset, leading dim known from the list's shape [2] */
  CHECK_OK(FETCH("concat_res", 0));
  CHECK(is_f(o, 1, (int64_t[]){6}, (float[]){0, 0, 0, 0, 0, 0}));
  CHECK_OK(FETCH("gather", 0));
  CHECK(is_f(o, 2, (int64_t[]){2, 2}, (float[]){5, 6, 1, 2}));
  CHECK_ERR(FETCH("gather_bad", 0), "Index 4 out o range; list only has 3 elements.");
  /* scatter to 2, 0, 4: length 5, rows 1 and 3 unset */
  CHECK_OK(FETCH("stack_scatter", 0));
  CHECK(is_f(o, 2, (int64_t[]){5, 2}, (float[]){3, 4, 0, 0, 1, 2, 0, 0, 5, 6}));
  CHECK_OK(FETCH("stack_scatter_into", 0));
  CHECK(is_f(o, 2, (int64_t[]){5, 2}, (float[]){3, 4, 0, 0, 1, 2, 0, 0, 5, 6}));
  /* split [1,2,3] of 1..6 */
  CHECK_OK(FETCH("split_get", 2));
  CHECK(is_f(o, 1, (int64_t[]){3}, (float[]){4, 5, 6}));
  CHECK_OK(FETCH("split_get", 0));
  CHECK(is_f(o, 1, (int64_t[]){1}, (float[]){1}));
  CHECK_OK(FETCH("split_concat", 0));
  CHECK(is_f(o, 1, (int64_t[]){6}, (float[]){1, 2, 3, 4, 5, 6}));
  /* strings */
  CHECK_OK(FETCH("sget", 1));
  size_t len = 0;
  CHECK(o && sm_tensor_dtype(o) == SM_STRING && sm_tensor_rank(o) == 0 && !strcmp(sm_tensor_string(o, 0, &len), "bc"));
  CHECK_OK(FETCH("sstack", 0));
  CHECK(o && sm_tensor_dtype(o) == SM_STRING && sm_tensor_num_elements(o) == 2 && !strcmp(sm_tensor_string(o, 0, &len), "a") &&
        !strcmp(sm_tensor_string(o, 1, &len), "bc"));
  sm_tensor_free(o);
}

static void test_in_place(void) {
  sm_tensor *outs[3] = {NULL, NULL, NULL};
  /* the only reader modifies: same object */
  CHECK_OK(run(0, NULL, 2, (const char *[]){"id_before:1", "id_after:1"}, 2, outs));
  CHECK(outs[0] && outs[1] && int_of(outs[0], 0) != 0 && int_of(outs[0], 0) == int_of(outs[1], 0));
  sm_tensor_free(outs[0]);
  sm_tensor_free(outs[1]);
  /* another reader follows: a copy, and the original stays all unset */
  float v[2] = {7, -7};
  CHECK_OK(run(0, v, 2, (const char *[]){"id3_before:1", "id3_after:1", "stack3"}, 3, outs));
  CHECK(outs[0] && outs[1] && int_of(outs[0], 0) != int_of(outs[1], 0));
  CHECK(is_f(outs[2], 2, (int64_t[]){3, 2}, (float[]){0, 0, 0, 0, 0, 0}));
  for (int i = 0; i < 3; i++) sm_tensor_free(outs[i]);
}

/* The variant tensor itself: copies share objects, frees release them, writers refuse it. */
static int released;
static void release_obj(sm_variant *v) {
  released++;
  free(v);
}

static void test_variant_tensor(void) {
  sm_tensor *t = NULL, *c = NULL;
  int64_t d = 2;
  CHECK_OK(sm_tensor_new(SM_VARIANT, 1, &d, &t));
  if (!t) return;
  sm_variant *obj = malloc(sizeof *obj);
  if (!obj) abort();
  sm__variant_init(obj, "test", release_obj);
  sm__tensor_variants(t)[1] = obj;
  CHECK(sm__tensor_variants(t)[0] == NULL);
  CHECK_OK(sm_tensor_copy(t, &c));
  CHECK(c && sm__tensor_variants(c)[1] == obj && sm__variant_is_shared(obj));
  CHECK(c && sm_tensor_equal(t, c));
  uint8_t *bytes = NULL;
  size_t len = 0;
  CHECK_ERR(sm_npy_encode(t, &bytes, &len), "numpy has no type for DT_VARIANT");
  sm_tensor *w = NULL;
  CHECK_ERR(sm_tensor_wrap(SM_VARIANT, 0, NULL, &obj, sizeof obj, NULL, NULL, &w), "DT_VARIANT tensors cannot wrap");
  Tensorflow__TensorProto *tp = NULL;
  CHECK_ERR(sm__b_tensor_proto(t, &tp), "a DT_VARIANT tensor cannot be written as a TensorProto");
  sm_jbuf jb = {0};
  CHECK_ERR(sm__json_write_tensors(&jb, (const char *[]){"x"}, &t, 1, SM_JSON_COLUMNAR), "Failed to write JSON value");
  sm__jbuf_free(&jb);
  char prefix[] = "/tmp/sm_test_list_XXXXXX";
  int fd = mkstemp(prefix);
  if (fd >= 0) {
    close(fd);
    sm_bundle_writer *bw = NULL;
    CHECK_OK(sm_bundle_writer_open(prefix, &bw));
    if (bw) CHECK_ERR(sm_bundle_writer_add(bw, "v", t), "key v is a DT_VARIANT tensor, which cannot be saved");
    sm_bundle_writer_free(bw);
    unlink(prefix);
  }
  char *mem = NULL;
  size_t mlen = 0;
  FILE *mf = open_memstream(&mem, &mlen);
  if (mf) {
    sm__cli_print_numpy(mf, t);
    sm__cli_print_json_value(mf, t);
    fclose(mf);
    CHECK(mem && !strcmp(mem, "<DT_VARIANT value of shape [2]: not printable>\n\"<DT_VARIANT value of shape [2]: not printable>\""));
    free(mem);
  }
  sm_tensor_free(t);
  CHECK_EQ_INT(released, 0);
  sm_tensor_free(c);
  CHECK_EQ_INT(released, 1);
}

int main(void) {
  CHECK_OK(sm__kernels_add(test_kernels, SM_BACKEND_CPU));
  test_variant_tensor();
  CHECK_OK(sm__session_from_pbtxt(graph, &sess));
  if (sess) {
    test_create_and_read();
    test_modify();
  test_limit();
    test_bulk();
    test_in_place();
    sm__session_free(sess);
  }
  TEST_MAIN_END();
}
