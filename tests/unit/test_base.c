/* test_base.c - status, dtype names and sizes, tensors. */
#include <pthread.h>
#include <stdint.h>

#include "savedmodel/dtype.h"
#include "savedmodel/tensor.h"
#include "test.h"

/* sm_status_prefix(s, "%s", prefix) on "bad" must read `want`. */
static void check_prefix(const char *prefix, const char *want) {
  sm_status *s = sm_status_prefix(sm_status_new(SM_INVALID_ARGUMENT, "bad"), "%s", prefix);
  CHECK_EQ_STR(sm_status_message(s), want);
  CHECK_EQ_INT(sm_status_code(s), SM_INVALID_ARGUMENT);
  sm_status_free(s);
}

/* The process's first dtype-name lookups, made on four threads at once (make tsan runs this test:
 * the names were once built into a static table by whichever threads saw it unbuilt). */
static void *dtype_names(void *arg) {
  int *ok = arg;
  *ok = sm_dtype_name(SM_FLOAT) && !strcmp(sm_dtype_name(SM_FLOAT), "DT_FLOAT") &&
        sm_dtype_name(SM_FLOAT + SM_DTYPE_REF_OFFSET) &&
        !strcmp(sm_dtype_name(SM_FLOAT + SM_DTYPE_REF_OFFSET), "DT_FLOAT_REF") &&
        sm_dtype_from_name("DT_STRING") == SM_STRING;
  return NULL;
}

static void test_dtype_names_threads(void) {
  pthread_t th[4];
  int ok[4] = {0}, started[4] = {0};
  for (int k = 0; k < 4; k++) started[k] = pthread_create(&th[k], NULL, dtype_names, &ok[k]) == 0;
  for (int k = 0; k < 4; k++) {
    CHECK(started[k]);
    if (started[k]) pthread_join(th[k], NULL);
    CHECK(ok[k]);
  }
}

int main(void) {
  test_dtype_names_threads(); /* first: nothing else may have looked a name up yet */
  sm_status *s = sm_status_new(SM_NOT_FOUND, "key %s", "a");
  s = sm_status_prefix(s, "reading %s", "x.index");
  CHECK_EQ_STR(sm_status_message(s), "reading x.index: key a");
  CHECK_EQ_INT(sm_status_code(s), SM_NOT_FOUND);
  s = sm_status_prefix(s, "loading %s", "m");
  CHECK_EQ_STR(sm_status_message(s), "loading m: reading x.index: key a");
  sm_status_free(s);
  CHECK(sm_status_prefix(NULL, "x") == NULL);
  /* The separator is added once: a prefix that already ends in ":" or ": " does not double it,
   * and an empty prefix changes nothing. */
  check_prefix("predict", "predict: bad");
  check_prefix("predict: ", "predict: bad");
  check_prefix("predict:", "predict: bad");
  check_prefix("", "bad");
  check_prefix(":", ": bad");
  check_prefix(": ", ": bad");
  check_prefix("a: b", "a: b: bad");
  check_prefix("x ", "x : bad");
  /* Context the message already starts with is not repeated ("node 'c' (Const): node 'c'
   * (Const): ..."), but a prefix that is only the start of a longer context is added. */
  const struct {
    const char *msg, *prefix, *want;
  } dups[] = {
      {"node 'c' (Const): bad value", "node 'c' (Const)", "node 'c' (Const): bad value"},
      {"node 'c' (Const): bad value", "node 'c' (Const): ", "node 'c' (Const): bad value"},
      {"node 'c' (Const): bad value", "node 'c'", "node 'c': node 'c' (Const): bad value"},
      {"--resume: x is missing", "--resume", "--resume: x is missing"},
      {"node 'c' (Const)", "node 'c' (Const)", "node 'c' (Const): node 'c' (Const)"},
      {"http://x: refused", "http", "http: http://x: refused"},
  };
  for (size_t i = 0; i < sizeof dups / sizeof *dups; i++) {
    sm_status *d = sm_status_prefix(sm_status_new(SM_INTERNAL, "%s", dups[i].msg), "%s", dups[i].prefix);
    CHECK_EQ_STR(sm_status_message(d), dups[i].want);
    sm_status_free(d);
  }

  CHECK_EQ_STR(sm_dtype_name(SM_FLOAT), "DT_FLOAT");
  CHECK_EQ_STR(sm_dtype_name(101), "DT_FLOAT_REF");
  CHECK(sm_dtype_name(99) == NULL);
  CHECK_EQ_INT(sm_dtype_from_name("DT_BFLOAT16"), SM_BFLOAT16);
  CHECK_EQ_INT(sm_dtype_from_name("DT_HALF_REF"), 119);
  CHECK_EQ_INT(sm_dtype_from_name("DT_NOPE"), -1);
  CHECK_EQ_INT(sm_dtype_size(SM_COMPLEX128), 16);
  CHECK_EQ_INT(sm_dtype_size(SM_STRING), 0);

  int64_t dims[2] = {2, 3};
  sm_tensor *t;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, dims, &t));
  CHECK_EQ_INT(sm_tensor_num_elements(t), 6);
  CHECK_EQ_INT(sm_tensor_nbytes(t), 24);
  ((float *)sm_tensor_data(t))[5] = 1.5f;
  sm_tensor *u;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, dims, &u));
  CHECK(!sm_tensor_equal(t, u));
  ((float *)sm_tensor_data(u))[5] = 1.5f;
  CHECK(sm_tensor_equal(t, u));
  sm_tensor_free(t);
  sm_tensor_free(u);

  CHECK_OK(sm_tensor_new(SM_STRING, 1, dims, &t));
  CHECK_OK(sm_tensor_set_string(t, 1, "a\0b", 3));
  size_t len;
  const char *p = sm_tensor_string(t, 1, &len);
  CHECK_EQ_INT(len, 3);
  CHECK(memcmp(p, "a\0b", 3) == 0);
  CHECK_ERR(sm_tensor_set_string(t, 2, "x", 1), "outside");
  sm_tensor *c;
  CHECK_OK(sm_tensor_copy(t, &c));
  CHECK(c && sm_tensor_equal(t, c));
  CHECK(c && sm_tensor_string(c, 1, &len) != p); /* a deep copy */
  sm_tensor_free(c);
  sm_tensor_free(t);

  int64_t bad[2] = {-1, 3};
  CHECK_ERR(sm_tensor_new(SM_FLOAT, 2, bad, &t), "negative");
  int64_t huge[3] = {INT64_MAX / 2, 4, 1};
  CHECK_ERR(sm_tensor_new(SM_FLOAT, 3, huge, &t), "overflow");
  int64_t big[2] = {1 << 30, 1 << 30};
  CHECK_ERR(sm_tensor_new(SM_FLOAT, 2, big, &t), "limit");
  CHECK_ERR(sm_tensor_new(1000, 0, NULL, &t), "not supported");
  /* Variants are in-memory references (test_list.c checks them further): no raw bytes. */
  CHECK_OK(sm_tensor_new(SM_VARIANT, 0, NULL, &t));
  CHECK(t && sm_tensor_nbytes(t) == 0 && sm_tensor_data(t) == NULL);
  sm_tensor_free(t);
  /* Resource handles are pointer-sized in-memory elements. */
  CHECK_OK(sm_tensor_new(SM_RESOURCE, 0, NULL, &t));
  CHECK(sm_tensor_nbytes(t) == sizeof(void *));
  sm_tensor_free(t);

  /* References and views: the last free releases; a view keeps its base alive. */
  int64_t d6[1] = {6}, d23[2] = {2, 3};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, d6, &t));
  CHECK(!sm_tensor_is_shared(t));
  CHECK(sm_tensor_ref(t) == t);
  CHECK(sm_tensor_is_shared(t));
  sm_tensor_free(t);
  CHECK(!sm_tensor_is_shared(t));
  sm_tensor *v;
  CHECK_OK(sm_tensor_view(t, 2, d23, &v));
  CHECK(sm_tensor_is_shared(t));
  ((float *)sm_tensor_data(t))[5] = 7.0f;
  sm_tensor_free(t);
  CHECK(sm_tensor_rank(v) == 2 && sm_tensor_dims(v)[1] == 3 && ((float *)sm_tensor_data(v))[5] == 7.0f);
  CHECK(sm_tensor_is_shared(v)); /* a view never owns its elements */
  CHECK_ERR(sm_tensor_view(v, 1, dims, &t), "cannot view");
  sm_tensor_free(v);
  float buf[6];
  CHECK_ERR(sm_tensor_wrap(SM_FLOAT, 2, dims, buf, 20, NULL, NULL, &t), "needs 24");
  TEST_MAIN_END();
}
