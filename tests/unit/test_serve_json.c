/* test_serve_json.c - the JSON <-> tensor codec against TF Serving's json_tensor_test.cc cases,
 * plus hostile bodies (truncations, deep nesting, huge numbers, bad base64). */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "json_compare.h"
#include "savedmodel/example.h"
#include "serve/json_dom.h"
#include "serve/json_tensor.h"
#include "serve/limits.h"
#include "test.h"

/* ---- signature inputs for a test ---- */
typedef struct infos {
  sm_json_input in[8];
  int n;
} infos;

static sm_status *get_infos(void *ctx, const char *sig, const sm_json_input **in, int *n) {
  (void)sig;
  infos *i = ctx;
  *in = i->in;
  *n = i->n;
  return NULL;
}

static infos one(const char *alias, int dt) {
  infos i = {.n = 1};
  i.in[0].alias = alias;
  i.in[0].dtype = dt;
  return i;
}

static sm_status *predict(const char *body, infos *i, sm_predict_request *r) {
  return sm__json_parse_predict(body, strlen(body), get_infos, i, r);
}

static const sm_tensor *find(const sm_predict_request *r, const char *alias) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->aliases[i], alias)) return r->tensors[i];
  return NULL;
}

static int shape_is(const sm_tensor *t, int rank, const int64_t *dims) {
  if (!t || sm_tensor_rank(t) != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (sm_tensor_dims(t)[i] != dims[i]) return 0;
  return 1;
}

static int ints_are(const sm_tensor *t, const int32_t *v, int n) {
  return t && sm_tensor_dtype(t) == SM_INT32 && sm_tensor_num_elements(t) == n &&
         !memcmp(sm_tensor_data(t), v, sizeof *v * (size_t)n);
}

static int str_is(const sm_tensor *t, int64_t i, const char *want) {
  size_t n;
  const char *s = sm_tensor_string(t, i, &n);
  return s && n == strlen(want) && !memcmp(s, want, n);
}

static void test_single_unnamed(void) {
  infos i = one("default", SM_INT32);
  sm_predict_request r;
  CHECK_OK(predict("\n    {\n      \"instances\": [[1,2],[3,4],[5,6]]\n    }", &i, &r));
  CHECK_EQ_INT(r.n, 1);
  CHECK_EQ_INT(r.format, SM_JSON_ROW);
  const int32_t want[] = {1, 2, 3, 4, 5, 6};
  CHECK(shape_is(find(&r, "default"), 2, (int64_t[]){3, 2}));
  CHECK(ints_are(find(&r, "default"), want, 6));
  CHECK_EQ_STR(r.signature_name, "");
  sm__predict_request_clear(&r);

  /* TensorFromNonNullTerminatedBuffer */
  const char *js = "{\"instances\": [[1,2],[3,4],[5,6]]}X";
  CHECK_OK(sm__json_parse_predict(js, strlen(js) - 1, get_infos, &i, &r));
  CHECK(ints_are(find(&r, "default"), want, 6));
  sm__predict_request_clear(&r);

  /* SingleUnnamedTensorWithSignature */
  CHECK_OK(predict("{\"signature_name\": \"predict_images\", \"instances\": [[1,2]]}", &i, &r));
  CHECK_EQ_STR(r.signature_name, "predict_images");
  CHECK(shape_is(find(&r, "default"), 2, (int64_t[]){1, 2}));
  sm__predict_request_clear(&r);
}

static void test_deep_nesting(void) {
  infos i = one("default", SM_INT32);
  size_t depth = 500000;
  const char *head = "{\"instances\":[1], \"nested\":";
  char *body = malloc(strlen(head) + 2 * depth + 2);
  strcpy(body, head);
  size_t n = strlen(head);
  memset(body + n, '[', depth);
  memset(body + n + depth, ']', depth);
  body[n + 2 * depth] = '}';
  body[n + 2 * depth + 1] = 0;
  sm_predict_request r;
  CHECK_OK(predict(body, &i, &r)); /* DeeplyNestedWellFormed */
  CHECK_EQ_INT(r.n, 1);
  sm__predict_request_clear(&r);
  /* DeeplyNestedMalformed */
  head = "{\"signature_name\":";
  strcpy(body, head);
  n = strlen(head);
  memset(body + n, '[', depth);
  memset(body + n + depth, ']', depth);
  body[n + 2 * depth] = '}';
  body[n + 2 * depth + 1] = 0;
  CHECK_ERR(predict(body, &i, &r), "key must be a string value");
  /* deep nesting inside instances: a clear error, not a stack overflow */
  head = "{\"instances\":";
  strcpy(body, head);
  n = strlen(head);
  memset(body + n, '[', depth);
  memset(body + n + depth, ']', depth);
  body[n + 2 * depth] = '}';
  body[n + 2 * depth + 1] = 0;
  CHECK_ERR(predict(body, &i, &r), "nested deeper");
  /* unterminated deep nesting */
  body[n + depth] = 0;
  CHECK_ERR(predict(body, &i, &r), "JSON Parse error");
  free(body);
}

static void test_mixed_numbers(void) {
  infos i = one("default", SM_FLOAT);
  sm_predict_request r;
  CHECK_OK(predict("{\"instances\": [1, 2.0, 3, 4, 5.003, 0.007, 0.0]}", &i, &r));
  const sm_tensor *t = find(&r, "default");
  const float want[] = {1, 2, 3, 4, 5.003f, 0.007f, 0};
  CHECK(t && sm_tensor_dtype(t) == SM_FLOAT && !memcmp(sm_tensor_data(t), want, sizeof want));
  sm__predict_request_clear(&r);

  i = one("default", SM_DOUBLE);
  CHECK_OK(predict("{\"instances\": [1.0, 2, 3, 4, 0.662, 0, 0.0]}", &i, &r));
  t = find(&r, "default");
  const double wd[] = {1, 2, 3, 4, 0.662, 0, 0};
  CHECK(t && sm_tensor_dtype(t) == SM_DOUBLE && !memcmp(sm_tensor_data(t), wd, sizeof wd));
  sm__predict_request_clear(&r);

  /* FloatTensorWithPrecisionLoss, ExceedsMax -> inf, ExceedsMin -> 0 */
  i = one("default", SM_FLOAT);
  CHECK_OK(predict("{\"instances\": [1435774380, 1435774380.0]}", &i, &r));
  t = find(&r, "default");
  CHECK(t && ((float *)sm_tensor_data(t))[0] == 1435774380.0f && ((float *)sm_tensor_data(t))[1] == 1435774380.0f);
  sm__predict_request_clear(&r);
  CHECK_OK(predict("{ \"instances\": [1.7976931348623157e+308, -1.7976931348623157e+308, 2.2250738585072014e-308, "
                   "-2.2250738585072014e-308] }",
                   &i, &r));
  t = find(&r, "default");
  if (t) {
    const float *f = sm_tensor_data(t);
    CHECK(isinf(f[0]) && f[0] > 0);
    CHECK(isinf(f[1]) && f[1] < 0);
    CHECK(f[2] == 0 && !signbit(f[2]));
    CHECK(f[3] == 0 && signbit(f[3]));
  }
  sm__predict_request_clear(&r);
}

static void test_base64(void) {
  infos i = one("default", SM_STRING);
  sm_predict_request r;
  CHECK_OK(predict("{\"instances\": [ { \"b64\" : \"aGVsbG8=\" }, { \"b64\": \"d29ybGQ=\" } ]}", &i, &r));
  const sm_tensor *t = find(&r, "default");
  CHECK(shape_is(t, 1, (int64_t[]){2}) && str_is(t, 0, "hello") && str_is(t, 1, "world"));
  sm__predict_request_clear(&r);
  CHECK_OK(predict("{\"instances\": [ [{ \"b64\" : \"aGVsbG8=\" }], [{ \"b64\": \"d29ybGQ=\" }] ]}", &i, &r));
  t = find(&r, "default");
  CHECK(shape_is(t, 2, (int64_t[]){2, 1}) && str_is(t, 0, "hello") && str_is(t, 1, "world"));
  sm__predict_request_clear(&r);
  CHECK_OK(predict("{\"instances\": [{\"default\": [ [{ \"b64\" : \"aGVsbG8=\" }], [{ \"b64\": \"d29ybGQ=\" }] ]}]}",
                   &i, &r));
  t = find(&r, "default");
  CHECK(shape_is(t, 3, (int64_t[]){1, 2, 1}) && str_is(t, 0, "hello") && str_is(t, 1, "world"));
  sm__predict_request_clear(&r);
  /* unpadded base64 reads too; junk does not */
  CHECK_OK(predict("{\"instances\": [{\"b64\": \"aGVsbG8\"}]}", &i, &r));
  CHECK(str_is(find(&r, "default"), 0, "hello"));
  sm__predict_request_clear(&r);
  CHECK_ERR(predict("{\"instances\": [{\"b64\": \"a*Vs\"}]}", &i, &r), "Unable to base64 decode");
  /* {"b64": 5} is not base64 data but a named-input object, as in TF Serving */
  CHECK_ERR(predict("{\"instances\": [{\"b64\": 5}]}", &i, &r), "does not have named input: b64");
  CHECK_ERR(predict("{\"instances\": [[{\"b64\": 5}]]}", &i, &r), "not formatted correctly for base64 data");
  CHECK_ERR(predict("{\"inputs\": {\"b64\": 5, \"x\": 1}}", &i, &r), "Missing named input: default");
  /* escapes and embedded NUL */
  CHECK_OK(predict("{\"instances\": [\"a\\u0000b\\n\\ud83d\\ude00\"]}", &i, &r));
  t = find(&r, "default");
  size_t n = 0;
  const char *s = t ? sm_tensor_string(t, 0, &n) : NULL;
  CHECK(s && n == 8 && !memcmp(s, "a\0b\n\xf0\x9f\x98\x80", 8));
  sm__predict_request_clear(&r);
}

/* The process's first base64 bodies, decoded on four threads at once: every one reads right
 * (and, under make tsan, without a race on the decoder's tables). Runs first in main. */
static void *decode_b64_body(void *arg) {
  int *ok = arg;
  infos i = one("default", SM_STRING);
  sm_predict_request r;
  sm_status *st = predict("{\"instances\": [{\"b64\": \"aGVsbG8=\"}, {\"b64\": \"+/+/\"}]}", &i, &r);
  const sm_tensor *t = st ? NULL : find(&r, "default");
  *ok = t && str_is(t, 0, "hello") && str_is(t, 1, "\xfb\xff\xbf");
  if (!st) sm__predict_request_clear(&r);
  sm_status_free(st);
  return NULL;
}

static void test_base64_threads(void) {
  pthread_t th[4];
  int ok[4] = {0}, started[4] = {0};
  for (int k = 0; k < 4; k++) started[k] = pthread_create(&th[k], NULL, decode_b64_body, &ok[k]) == 0;
  for (int k = 0; k < 4; k++) {
    CHECK(started[k]);
    if (started[k]) pthread_join(th[k], NULL);
    CHECK(ok[k]);
  }
}

static void test_multiple_named(void) {
  infos i = {.n = 4};
  i.in[0] = (sm_json_input){"int_tensor", SM_INT32};
  i.in[1] = (sm_json_input){"str_tensor", SM_STRING};
  i.in[2] = (sm_json_input){"float_tensor", SM_FLOAT};
  i.in[3] = (sm_json_input){"dbl_tensor", SM_DOUBLE};
  sm_predict_request r;
  CHECK_OK(predict("{\"instances\": [\n"
                   "{\"int_tensor\": [[1,2],[3,4],[5,6]], \"str_tensor\": [\"foo\", \"bar\"],"
                   " \"float_tensor\": [1.0, NaN], \"dbl_tensor\": [NaN]},\n"
                   "{\"int_tensor\": [[7,8],[9,0],[1,2]], \"str_tensor\": [\"baz\", \"bat\"],"
                   " \"float_tensor\": [2.0, Infinity], \"dbl_tensor\": [2.0]}]}",
                   &i, &r));
  CHECK_EQ_INT(r.n, 4);
  const int32_t wi[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2};
  CHECK(shape_is(find(&r, "int_tensor"), 3, (int64_t[]){2, 3, 2}) && ints_are(find(&r, "int_tensor"), wi, 12));
  const sm_tensor *t = find(&r, "str_tensor");
  CHECK(shape_is(t, 2, (int64_t[]){2, 2}) && str_is(t, 0, "foo") && str_is(t, 3, "bat"));
  t = find(&r, "float_tensor");
  CHECK(shape_is(t, 2, (int64_t[]){2, 2}));
  if (t) {
    const float *f = sm_tensor_data(t);
    CHECK(f[0] == 1 && isnan(f[1]) && f[2] == 2 && isinf(f[3]));
  }
  t = find(&r, "dbl_tensor");
  CHECK(shape_is(t, 2, (int64_t[]){2, 1}) && isnan(((double *)sm_tensor_data(t))[0]));
  sm__predict_request_clear(&r);
}

static void test_columnar(void) {
  infos i = one("int_tensor", SM_INT32);
  sm_predict_request r;
  const int32_t want[] = {1, 2, 3, 4, 5, 6};
  CHECK_OK(predict("{\"inputs\": {\"int_tensor\": [[[1,2],[3,4],[5,6]]]}}", &i, &r));
  CHECK_EQ_INT(r.format, SM_JSON_COLUMNAR);
  CHECK(shape_is(find(&r, "int_tensor"), 3, (int64_t[]){1, 3, 2}) && ints_are(find(&r, "int_tensor"), want, 6));
  sm__predict_request_clear(&r);
  CHECK_OK(predict("{\"inputs\": [[[1,2],[3,4],[5,6]]]}", &i, &r));
  CHECK(shape_is(find(&r, "int_tensor"), 3, (int64_t[]){1, 3, 2}) && ints_are(find(&r, "int_tensor"), want, 6));
  sm__predict_request_clear(&r);

  infos m = {.n = 3};
  m.in[0] = (sm_json_input){"int_tensor", SM_INT32};
  m.in[1] = (sm_json_input){"str_tensor", SM_STRING};
  m.in[2] = (sm_json_input){"bin_tensor", SM_STRING};
  CHECK_OK(predict("{\"inputs\": {\"int_tensor\": [[[1,2],[3,4],[5,6]]], \"str_tensor\": [\"foo\", \"bar\"],"
                   " \"bin_tensor\": { \"b64\" : \"aGVsbG8=\" }}}",
                   &m, &r));
  CHECK_EQ_INT(r.n, 3);
  const sm_tensor *t = find(&r, "bin_tensor");
  CHECK(shape_is(t, 0, NULL) && str_is(t, 0, "hello"));
  t = find(&r, "str_tensor");
  CHECK(shape_is(t, 1, (int64_t[]){2}) && str_is(t, 1, "bar"));
  sm__predict_request_clear(&r);
  /* scalar columnar input */
  i = one("x", SM_FLOAT);
  CHECK_OK(predict("{\"inputs\": 3}", &i, &r));
  CHECK(shape_is(find(&r, "x"), 0, NULL));
  sm__predict_request_clear(&r);
  CHECK_ERR(predict("{\"inputs\": [1]}", &m, &r), "inputs is a plain value/list");
}

static void test_single_errors(void) {
  infos i = one("default", SM_INT32);
  sm_predict_request r;
  CHECK_ERR(predict("", &i, &r), "JSON Parse error: The document is empty");
  CHECK_ERR(predict("   ", &i, &r), "The document is empty");
  CHECK_ERR(predict("{\"signature_name\": 5, \"instances\": [[1,2],[3,4],[5,6,7]]}", &i, &r),
            "'signature_name' key must be a string value.");
  CHECK_ERR(predict("{\"instances\": [[1,2],[3,4],[5,6,7]], \"inputs\": [[1,2],[3,4],[5,6,7]]}", &i, &r),
            "Not formatted correctly");
  CHECK_ERR(predict("{\"instances\": [[1,2],[3,4],[5,6,7]]}", &i, &r), "Expecting tensor size");
  CHECK_ERR(predict("{\"instances\": [[1,2],[3,4],[[5,6]]]}", &i, &r), "Expecting shape");
  CHECK_ERR(predict("{\"instances\": [1, [1]]}", &i, &r), "Expecting shape");
  CHECK_ERR(predict("{\"instances\": [[1,2],[\"a\", \"b\"]]}", &i, &r), "not of expected type");
  CHECK_ERR(predict("{\"instances\": [[1,2],[\"a\", \"b\"]]}", &i, &r),
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: JSON Value: \"a\" Type: "
            "String is not of expected type: int32");
  CHECK_ERR(predict("instances = [1, 2]", &i, &r), "JSON Parse error: Invalid value. at offset: 0");
  CHECK_ERR(predict("[1]", &i, &r), "JSON Value: [1] Is not object");
  CHECK_ERR(predict("{\"instances\": []}", &i, &r), "No values in 'instances' array");
  CHECK_ERR(predict("{\"instances\": 1}", &i, &r), "Expecting 'instances' to be an list/array");
  CHECK_ERR(predict("{\"foo\": 1}", &i, &r), "Missing 'inputs' or 'instances' key");
  CHECK_ERR(predict("{\"instances\": [1.5]}", &i, &r), "Type: Number is not of expected type: int32");
  CHECK_ERR(predict("{\"instances\": [3000000000]}", &i, &r), "not of expected type: int32");
  CHECK_ERR(predict("{\"instances\": [[1], 2]}", &i, &r), "Expecting shape");
  /* malformed JSON: rapidjson's messages */
  CHECK_ERR(predict("{\"instances\": [1, 2}", &i, &r), "Missing a comma or ']' after an array element.");
  CHECK_ERR(predict("{\"instances\" [1]}", &i, &r), "Missing a colon after a name of object member.");
  CHECK_ERR(predict("{instances: [1]}", &i, &r), "Missing a name for object member.");
  CHECK_ERR(predict("{\"a\": 1 \"b\": 2}", &i, &r), "Missing a comma or '}' after an object member.");
  CHECK_ERR(predict("{\"a\": \"x", &i, &r), "Missing a closing quotation mark in string.");
  CHECK_ERR(predict("{\"a\": \"\\x\"}", &i, &r), "Invalid escape character in string.");
  CHECK_ERR(predict("{\"a\": \"\\u12G4\"}", &i, &r), "Incorrect hex digit after \\u escape in string.");
  CHECK_ERR(predict("{\"a\": \"\\ud800x\"}", &i, &r), "The surrogate pair in string is invalid.");
  CHECK_ERR(predict("{\"a\": 1.}", &i, &r), "Miss fraction part in number.");
  CHECK_ERR(predict("{\"a\": 1e}", &i, &r), "Miss exponent in number.");
  CHECK_ERR(predict("{\"a\": 1e999}", &i, &r), "Number too big to be stored in double.");
  CHECK_ERR(predict("{\"a\": Nan}", &i, &r), "Invalid value.");
  CHECK_ERR(predict("{\"a\": \"\x01\"}", &i, &r), "Invalid encoding in string.");
  /* anything but whitespace after the value is refused, as TF Serving (no kParseStopWhenDoneFlag) */
  CHECK_ERR(predict("{\"instances\": [1]} trailing", &i, &r),
            "JSON Parse error: The document root must not be followed by other values. at offset: 19");
  CHECK_ERR(predict("{\"instances\": [1.0]} xxx", &i, &r), "must not be followed by other values");
  CHECK_ERR(predict("{\"instances\": [1]}{}", &i, &r), "at offset: 18");
  CHECK_OK(predict("{\"instances\": [1]} \r\n\t ", &i, &r));
  sm__predict_request_clear(&r);
  /* unsupported dtype */
  infos h = one("x", SM_HALF);
  sm_status *s = predict("{\"inputs\": [1]}", &h, &r);
  CHECK(sm_status_code(s) == SM_UNIMPLEMENTED);
  CHECK(strstr(sm_status_message(s), "to type: half") != NULL);
  sm_status_free(s);
  CHECK_ERR(predict("{\"instances\": [1]}", &h, &r), "Error: UNIMPLEMENTED: Conversion of JSON Value: 1 to type: half");
  /* big unsigned and bool types */
  infos u = one("x", SM_UINT64);
  CHECK_OK(predict("{\"instances\": [18446744073709551615, 0]}", &u, &r));
  CHECK(find(&r, "x") && ((uint64_t *)sm_tensor_data(find(&r, "x")))[0] == UINT64_MAX);
  sm__predict_request_clear(&r);
  CHECK_ERR(predict("{\"instances\": [-1]}", &u, &r), "not of expected type: uint64");
  infos b = one("x", SM_BOOL);
  CHECK_OK(predict("{\"instances\": [true, false]}", &b, &r));
  sm__predict_request_clear(&r);
  CHECK_ERR(predict("{\"instances\": [1]}", &b, &r), "not of expected type: bool");
  infos i64 = one("x", SM_INT64);
  CHECK_OK(predict("{\"instances\": [-9223372036854775808, 9223372036854775807]}", &i64, &r));
  CHECK(find(&r, "x") && ((int64_t *)sm_tensor_data(find(&r, "x")))[0] == INT64_MIN);
  sm__predict_request_clear(&r);
  CHECK_ERR(predict("{\"instances\": [9223372036854775808]}", &i64, &r), "not of expected type: int64");
}

static void test_multiple_errors(void) {
  infos i = {.n = 2};
  i.in[0] = (sm_json_input){"int_tensor", SM_INT32};
  i.in[1] = (sm_json_input){"str_tensor", SM_STRING};
  sm_predict_request r;
  CHECK_ERR(predict("{\"instances\": [{\"int_tensor\": [[1,2],[3,4],[5,6]], \"str_tensor\": [\"foo\", \"bar\"]},"
                    "{\"int_tensor\": [[[7,8],[9,0],[1,2]]], \"str_tensor\": [\"baz\", \"bat\"]}]}",
                    &i, &r),
            "Expecting shape");
  CHECK_ERR(predict("{\"instances\": [{\"int_tensor\": [[1,2],[3,4],[5,6],[7,8]], \"str_tensor\": [\"foo\", \"bar\"]},"
                    "{\"int_tensor\": [[7,8],[9,0],[1,2]], \"str_tensor\": [\"baz\", \"bat\"]}]}",
                    &i, &r),
            "Expecting tensor size");
  CHECK_ERR(predict("{\"instances\": [{\"int_tensor\": [[1,2],[3,4],[5,6]], \"str_tensor\": [\"foo\", \"bar\"]},"
                    "[1, 20, 30], {\"int_tensor\": [[[7,8],[9,0],[1,2]]], \"str_tensor\": [\"baz\", \"bat\"]}]}",
                    &i, &r),
            "Expecting object but got list");
  CHECK_ERR(predict("{\"instances\": [{\"int_tensor\": [1]}]}", &i, &r), "keys must be equal to: int_tensor,str_tensor");
  CHECK_ERR(predict("{\"instances\": [{\"int_tensor\": [1], \"str_tensor\": [\"a\"], \"zz\": 1}]}", &i, &r),
            "does not have named input: zz");
  CHECK_ERR(predict("{\"instances\": [1]}", &i, &r), "instances is a plain list");
  infos s = one("str_tensor", SM_STRING);
  CHECK_ERR(predict("{\"instances\": [[\"baz\", \"bar\"], {\"str_tensor\": [\"baz\", \"bat\"]}]}", &s, &r),
            "Expecting value/list but got object");
}

static void write_check(const char *const *names, sm_tensor *const *t, int n, int format, const char *want) {
  sm_jbuf b = {0};
  CHECK_OK(sm__json_write_tensors(&b, names, t, n, format));
  CHECK_JSON(b.p, want);
  sm__jbuf_free(&b);
}

static sm_tensor *int_tensor(int rank, const int64_t *dims, const int32_t *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, rank, dims, &t));
  if (t && sm_tensor_nbytes(t)) memcpy(sm_tensor_data(t), v, sm_tensor_nbytes(t));
  return t;
}

static sm_tensor *str_tensor(int rank, const int64_t *dims, const char *const *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, rank, dims, &t));
  for (int64_t i = 0; t && i < sm_tensor_num_elements(t); i++) CHECK_OK(sm_tensor_set_string(t, i, v[i], strlen(v[i])));
  return t;
}

static sm_tensor *float_tensor(int rank, const int64_t *dims, const float *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, rank, dims, &t));
  if (t && sm_tensor_nbytes(t)) memcpy(sm_tensor_data(t), v, sm_tensor_nbytes(t));
  return t;
}

static void test_write(void) {
  const int32_t v12[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2};
  sm_tensor *it = int_tensor(3, (int64_t[]){2, 3, 2}, v12);
  const char *in[] = {"int_tensor"};
  write_check(in, &it, 1, SM_JSON_ROW, "{\"predictions\": [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 0], [1, 2]]]}");
  write_check(in, &it, 1, SM_JSON_COLUMNAR, "{\"outputs\": [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 0], [1, 2]]]}");
  sm_tensor *sc = int_tensor(1, (int64_t[]){5}, v12);
  write_check(in, &sc, 1, SM_JSON_ROW, "{ \"predictions\": [1, 2, 3, 4, 5] }");
  write_check(in, &sc, 1, SM_JSON_COLUMNAR, "{ \"outputs\": [1, 2, 3, 4, 5] }");

  const char *hw[] = {"hello", "world", "tf", "serving"};
  sm_tensor *bt = str_tensor(2, (int64_t[]){2, 2}, hw);
  const char *bn[] = {"str_tensor_bytes"};
  write_check(bn, &bt, 1, SM_JSON_ROW,
              "{\"predictions\": [[{\"b64\": \"aGVsbG8=\"}, {\"b64\": \"d29ybGQ=\"}], [{\"b64\": \"dGY=\"}, {\"b64\": "
              "\"c2VydmluZw==\"}]]}");

  /* six-digit precision and non-finite floats: compared as text */
  const float f6[] = {9000000, 999999, 0.5f, .0003f, .00003f, 555557.5f};
  sm_tensor *ft = float_tensor(2, (int64_t[]){2, 3}, f6);
  const char *fn[] = {"float_tensor"};
  sm_jbuf b = {0};
  CHECK_OK(sm__json_write_tensors(&b, fn, &ft, 1, SM_JSON_ROW));
  CHECK(b.p && strstr(b.p, "[9e+06, 999999.0, 0.5]") && strstr(b.p, "[0.0003, 3e-05, 555557.5]"));
  sm__jbuf_free(&b);
  const float nf[] = {NAN, INFINITY, 3, -INFINITY};
  sm_tensor *nt = float_tensor(2, (int64_t[]){2, 2}, nf);
  CHECK_OK(sm__json_write_tensors(&b, fn, &nt, 1, SM_JSON_ROW));
  CHECK(b.p && strstr(b.p, "[NaN, Infinity]") && strstr(b.p, "[3.0, -Infinity]"));
  sm__jbuf_free(&b);

  /* the exact layout TF Serving prints for the tutorial */
  const float hp[] = {2.5f, 3.0f, 4.5f};
  sm_tensor *ht = float_tensor(1, (int64_t[]){3}, hp);
  const char *yn[] = {"y"};
  CHECK_OK(sm__json_write_tensors(&b, yn, &ht, 1, SM_JSON_ROW));
  CHECK_EQ_STR(b.p, "{\n    \"predictions\": [2.5, 3.0, 4.5\n    ]\n}");
  sm__jbuf_free(&b);

  /* errors */
  CHECK_ERR(sm__json_write_tensors(&b, NULL, NULL, 0, SM_JSON_ROW), "empty tensor map");
  sm_tensor *cx = NULL;
  CHECK_OK(sm_tensor_new(SM_COMPLEX64, 1, (int64_t[]){2}, &cx));
  const char *tn[] = {"tensor"};
  CHECK_ERR(sm__json_write_tensors(&b, tn, &cx, 1, SM_JSON_ROW), "tensor type: complex64");
  sm_tensor *s0 = int_tensor(0, NULL, v12);
  CHECK_ERR(sm__json_write_tensors(&b, tn, &s0, 1, SM_JSON_ROW), "no shape information");

  /* FromJsonMultipleNamedTensors */
  sm_tensor *st = str_tensor(2, (int64_t[]){2, 2}, (const char *[]){"foo", "bar", "baz", "bat"});
  sm_tensor *f2 = float_tensor(2, (int64_t[]){2, 1}, (const float[]){1, 2});
  sm_tensor *d2 = NULL;
  CHECK_OK(sm_tensor_new(SM_DOUBLE, 1, (int64_t[]){2}, &d2));
  if (d2) ((double *)sm_tensor_data(d2))[0] = 8, ((double *)sm_tensor_data(d2))[1] = 9;
  const char *mn[] = {"double_scalar_tensor", "float_tensor", "int_tensor", "str_tensor", "str_tensor_bytes"};
  sm_tensor *mt[] = {d2, f2, it, st, bt};
  write_check(mn, mt, 5, SM_JSON_ROW,
              "{\"predictions\": [{\"double_scalar_tensor\": 8.0, \"float_tensor\": [1.0], \"int_tensor\": [[1, 2], "
              "[3, 4], [5, 6]], \"str_tensor\": [\"foo\", \"bar\"], \"str_tensor_bytes\": [ {\"b64\": \"aGVsbG8=\"}, "
              "{\"b64\": \"d29ybGQ=\"} ]}, {\"double_scalar_tensor\": 9.0, \"float_tensor\": [2.0], \"int_tensor\": "
              "[[7, 8], [9, 0], [1, 2]], \"str_tensor\": [\"baz\", \"bat\"], \"str_tensor_bytes\": [ {\"b64\": "
              "\"dGY=\"}, {\"b64\": \"c2VydmluZw==\"} ]}]}");
  write_check(mn, mt, 5, SM_JSON_COLUMNAR,
              "{\"outputs\": {\"double_scalar_tensor\": [8.0, 9.0], \"float_tensor\": [[1.0], [2.0]], \"int_tensor\": "
              "[[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 0], [1, 2]]], \"str_tensor\": [[\"foo\", \"bar\"], [\"baz\", "
              "\"bat\"]], \"str_tensor_bytes\": [[{\"b64\": \"aGVsbG8=\"}, {\"b64\": \"d29ybGQ=\"}], [{\"b64\": "
              "\"dGY=\"}, {\"b64\": \"c2VydmluZw==\"}]]}}");
  /* inconsistent batch size */
  sm_tensor *i23 = int_tensor(2, (int64_t[]){2, 3}, v12);
  sm_tensor *s13 = str_tensor(2, (int64_t[]){1, 3}, (const char *[]){"foo", "bar", "baz"});
  const char *in2[] = {"int_tensor", "str_tensor"};
  sm_tensor *t2[] = {i23, s13};
  CHECK_ERR(sm__json_write_tensors(&b, in2, t2, 2, SM_JSON_ROW), "inconsistent batch size");
  /* zero batch */
  sm_tensor *z = int_tensor(2, (int64_t[]){0, 2}, v12);
  write_check(in, &z, 1, SM_JSON_ROW, "{ \"predictions\": [] }");
  sm_tensor *zs = str_tensor(3, (int64_t[]){0, 1, 2}, NULL);
  sm_tensor *zf = float_tensor(3, (int64_t[]){0, 3, 4}, NULL);
  sm_tensor *zt[] = {zf, zs};
  const char *zn[] = {"float_tensor", "str_tensor"};
  write_check(zn, zt, 2, SM_JSON_ROW, "{ \"predictions\": [] }");
  sm_tensor *s12 = str_tensor(2, (int64_t[]){1, 2}, (const char *[]){"foo", "bar"});
  sm_tensor *zt2[] = {z, s12};
  CHECK_ERR(sm__json_write_tensors(&b, in2, zt2, 2, SM_JSON_ROW), "inconsistent batch size");
  sm__jbuf_free(&b);
  sm_tensor *all[] = {it, sc, bt, ft, nt, ht, cx, s0, st, f2, d2, i23, s13, z, zs, zf, s12};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) sm_tensor_free(all[k]);
}

static void test_results(void) {
  sm_jbuf b = {0};
  sm_tensor *labels = str_tensor(2, (int64_t[]){2, 3}, (const char *[]){"car", "bike", "bus", "car", "bike", "bus"});
  const float scores[] = {0.2f, 0.7f, 0.1f, 0.7f, 0.1f, 0.2f};
  CHECK_OK(sm__json_write_classification(&b, 2, 3, labels, scores));
  CHECK_JSON(b.p, "{\"results\": [[[\"car\", 0.2], [\"bike\", 0.7], [\"bus\", 0.1]], [[\"car\", 0.7], [\"bike\", "
                  "0.1], [\"bus\", 0.2]]]}");
  sm__jbuf_free(&b);
  sm_tensor_free(labels);
  const float rv[] = {0.2f, 0.9f, 1.0f};
  CHECK_OK(sm__json_write_regression(&b, rv, 3));
  CHECK_JSON(b.p, "{ \"results\": [ 0.2, 0.9, 1.0 ] }");
  sm__jbuf_free(&b);
  const float nf[] = {0.2f, INFINITY, 1.0f, -INFINITY, NAN};
  CHECK_OK(sm__json_write_regression(&b, nf, 5));
  CHECK(b.p && strstr(b.p, "[0.2, Infinity, 1.0, -Infinity, NaN]"));
  sm__jbuf_free(&b);
  CHECK_ERR(sm__json_write_classification(&b, 0, 0, NULL, NULL), "empty ClassificationResults");
  CHECK_ERR(sm__json_write_regression(&b, NULL, 0), "empty RegressionResults");
  sm__json_write_error(&b, "Bad key: \"key\"");
  CHECK_JSON(b.p, "{ \"error\": \"Bad key: \\\"key\\\"\" }");
  sm__jbuf_free(&b);
  sm__json_write_error(&b, "Bad key: 'key'\n\x01");
  CHECK_JSON(b.p, "{ \"error\": \"Bad key: 'key'\\n\\u0001\" }");
  sm__jbuf_free(&b);
  char buf[48];
  sm__json_format_decimal(0.1, 0, buf, sizeof buf);
  CHECK_EQ_STR(buf, "0.1");
  sm__json_format_decimal(1.0 / 3, 0, buf, sizeof buf);
  CHECK_EQ_STR(buf, "0.33333333333333331");
  sm__json_format_decimal((float)(1.0 / 3), 1, buf, sizeof buf);
  CHECK_EQ_STR(buf, "0.333333343");
  sm__json_format_decimal(-0.0, 1, buf, sizeof buf);
  CHECK_EQ_STR(buf, "-0.0");
  sm__json_format_decimal(1e20, 0, buf, sizeof buf);
  CHECK_EQ_STR(buf, "1e+20");
}

/* Examples are checked through their serialized bytes against ones built directly. */
static int example_is(const uint8_t *got, size_t n, sm_example *want) {
  uint8_t *w;
  size_t wn;
  sm_status *s = sm_example_serialize(want, &w, &wn);
  sm_example_free(want);
  if (s) {
    sm_status_free(s);
    return 0;
  }
  int eq = wn == n && !memcmp(w, got, n);
  free(w);
  return eq;
}

static void test_examples(void) {
  sm_examples_request r;
  CHECK_OK(sm__json_parse_examples("{\"examples\": [{\"names\": [ \"foo\", \"bar\" ], \"ratings\": [ 8.0, 9.0 ], "
                                  "\"age\": 20}, {\"names\": [ \"baz\" ], \"ratings\": 6.0}]}",
                                  strlen("{\"examples\": [{\"names\": [ \"foo\", \"bar\" ], \"ratings\": [ 8.0, 9.0 ], "
                                         "\"age\": 20}, {\"names\": [ \"baz\" ], \"ratings\": 6.0}]}"),
                                  &r));
  CHECK_EQ_INT(r.n, 2);
  if (r.n == 2) {
    sm_example *e;
    CHECK_OK(sm_example_new(&e));
    CHECK_OK(sm_example_add_bytes(e, "names", (const char *[]){"foo", "bar"}, (size_t[]){3, 3}, 2));
    CHECK_OK(sm_example_add_floats(e, "ratings", (const float[]){8, 9}, 2));
    CHECK_OK(sm_example_add_int64s(e, "age", (const int64_t[]){20}, 1));
    CHECK(example_is(r.examples[0], r.lens[0], e));
    CHECK_OK(sm_example_new(&e));
    CHECK_OK(sm_example_add_bytes(e, "names", (const char *[]){"baz"}, (size_t[]){3}, 1));
    CHECK_OK(sm_example_add_floats(e, "ratings", (const float[]){6}, 1));
    CHECK(example_is(r.examples[1], r.lens[1], e));
  }
  sm__examples_request_clear(&r);

  const char *wc = "{\"signature_name\": \"custom_signture\", \"context\": {\"query\": \"pizza\", \"location\": [ "
                   "\"sfo\" ]}, \"examples\": [{\"names\": [ \"foo\", \"bar\" ], \"ratings\": [ 8.0, 9.0, NaN, "
                   "Infinity ], \"age\": 20}, {\"names\": [ \"baz\", { \"b64\": \"aGVsbG8=\" } ], \"ratings\": 6.0, "
                   "\"intboolmix\": [ 1, true, false ]}, {\"names\": \"bar\", \"ratings\": -Infinity}]}";
  CHECK_OK(sm__json_parse_examples(wc, strlen(wc), &r));
  CHECK_EQ_STR(r.signature_name, "custom_signture");
  CHECK_EQ_INT(r.n, 3);
  if (r.n == 3) {
    sm_example *e;
    CHECK_OK(sm_example_new(&e));
    CHECK_OK(sm_example_add_bytes(e, "query", (const char *[]){"pizza"}, (size_t[]){5}, 1));
    CHECK_OK(sm_example_add_bytes(e, "location", (const char *[]){"sfo"}, (size_t[]){3}, 1));
    CHECK_OK(sm_example_add_bytes(e, "names", (const char *[]){"baz", "hello"}, (size_t[]){3, 5}, 2));
    CHECK_OK(sm_example_add_floats(e, "ratings", (const float[]){6}, 1));
    CHECK_OK(sm_example_add_int64s(e, "intboolmix", (const int64_t[]){1, 1, 0}, 3));
    CHECK(example_is(r.examples[1], r.lens[1], e));
  }
  sm__examples_request_clear(&r);

  struct {
    const char *body, *err;
  } bad[] = {
      {"{\"signature_name\": [ \"hello\" ], \"examples\": [ { \"names\": [ \"foo\", \"bar\" ] } ]}",
       "'signature_name' key must be a string"},
      {"{\"context\": [ { \"names\": [ \"foo\", \"bar\" ] } ]}", "Example must be JSON object"},
      {"{\"examples\": { \"names\": [ \"foo\", \"bar\" ] }}", "list/array"},
      {"{\"examples\": [ [ { \"names\": [ \"foo\", \"bar\" ] } ] ]}", "Example must be JSON object"},
      {"{\"examples\": [ { \"names\": [ 10, null ] } ]}", "names has element with unexpected JSON type: Null"},
      {"{\"examples\": [ { \"names\": [ 10, 10.0 ] } ]}", "feature: names expecting type: int64"},
      {"{\"examples\": [ { \"names\": [ 10, { \"test\": 10 } ] } ]}",
       "names has element with unexpected JSON type: Object"},
      {"{\"examples\": [ { \"names\": [ [10], 20 ] } ]}", "names has element with unexpected JSON type: Array"},
      {"{\"examples\": [ { \"names\": [ 20, 18446744073709551603 ] } ]}", "Only int64_t is supported"},
      {"{\"examples\": []}", "'examples' value is an empty array"},
      {"{}", "key 'examples' is expected and was not found"},
      {"", "The document is empty"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    CHECK_ERR(sm__json_parse_examples(bad[k].body, strlen(bad[k].body), &r), bad[k].err);
}

/* Every prefix and many single-byte corruptions of valid bodies: errors or success, no crash. */
static void test_hostile(void) {
  const char *bodies[] = {
      ("{\"instances\": [{\"a\": [[1.5, -2e3], [NaN, -Infinity]], \"b\": {\"b64\": \"aGk=\"}}], \"signature_name\": "
       "\"s\"}"),
      "{\"inputs\": {\"a\": [[1,2],[3,4]], \"b\": [\"x\\u00e9\\n\"]}}",
      "{\"examples\": [{\"x\": [1, 2], \"y\": \"s\", \"z\": {\"b64\": \"AA==\"}}], \"context\": {\"c\": 1.5}}",
  };
  infos i = {.n = 2};
  i.in[0] = (sm_json_input){"a", SM_FLOAT};
  i.in[1] = (sm_json_input){"b", SM_STRING};
  const char flips[] = {'[', ']', '{', '}', '"', ',', ':', '\\', 'e', '-', '0', 'N', ' ', '\0', '\xff'};
  for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++) {
    size_t n = strlen(bodies[k]);
    char *buf = malloc(n + 1);
    for (size_t cut = 0; cut <= n; cut++) {
      memcpy(buf, bodies[k], n);
      for (size_t f = 0; f <= sizeof flips; f++) {
        size_t len = cut;
        if (f < sizeof flips) {
          if (cut == n) continue;
          buf[cut] = flips[f];
          len = n;
        }
        sm_predict_request r;
        sm_status_free(sm__json_parse_predict(buf, len, get_infos, &i, &r));
        sm__predict_request_clear(&r);
        sm_examples_request e;
        sm_status_free(sm__json_parse_examples(buf, len, &e));
        sm__examples_request_clear(&e);
        memcpy(buf, bodies[k], n);
      }
    }
    free(buf);
  }
  /* a debug string of a huge value is cut at about 256 bytes */
  size_t big = 100000;
  char *body = malloc(big + 64);
  strcpy(body, "{\"instances\": [[\"");
  size_t o = strlen(body);
  memset(body + o, 'x', big);
  strcpy(body + o + big, "\"]]}");
  infos f = one("x", SM_FLOAT);
  sm_predict_request r;
  sm_status *s = predict(body, &f, &r);
  CHECK(s && strlen(sm_status_message(s)) < 1000);
  sm_status_free(s);
  free(body);
}

/* A body of n copies of `item` inside {"instances":[...]} (the last without its comma). */
static char *repeated_body(const char *item, size_t n, size_t *len) {
  const char *head = "{\"instances\":[", *tail = "]}";
  size_t il = strlen(item), hl = strlen(head);
  char *b = malloc(hl + n * il + 3);
  if (!b) return NULL;
  memcpy(b, head, hl);
  for (size_t i = 0; i < n; i++) memcpy(b + hl + i * il, item, il);
  *len = hl + n * il - 1; /* drop the last comma */
  memcpy(b + *len, tail, 3);
  *len += 2;
  return b;
}

static size_t arena_bytes(const arena *a) {
  size_t n = 0;
  for (const chunk *c = a->head; c; c = c->next) n += c->cap;
  return n;
}

/* The DOM costs what pass 1 says, a small multiple of the body, taken in one block (issue 17:
 * 63 MB of "[]," peaked at 1.8 GB, 29 bytes per body byte). */
static void test_dom_memory(void) {
  const struct {
    const char *item;
    double max_factor; /* DOM bytes per body byte, from the node sizes in json_dom.h */
  } cases[] = {{"[],", 5.4}, {"0,", 4.6}, {"[0,0,0],", 6.6}, {"\"\",", 5.4}, {"{\"a\":1},", 6.8}, {"[0],", 9.1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    size_t len;
    char *body = repeated_body(cases[k].item, 100000, &len);
    CHECK(body != NULL);
    if (!body) return;
    arena a = {0};
    const char *err = NULL;
    size_t off, need = 0;
    jv *d = sm__json_read(body, len, &a, sm__json_dom_limit(len), &err, &off, &need);
    CHECK(d != NULL);
    CHECK((double)need <= cases[k].max_factor * (double)len);
    CHECK(arena_bytes(&a) <= need + 65536);
    CHECK(d && jobj_find(d, "instances") && jobj_find(d, "instances")->n == 100000);
    sm__json_arena_free(&a);
    /* one byte under: refused before the DOM is taken */
    size_t need2 = 0;
    CHECK(!sm__json_read(body, len, &a, need - 1, &err, &off, &need2));
    CHECK(err == NULL && need2 == need && a.head == NULL);
    sm__json_arena_free(&a);
    free(body);
  }
  /* through the decoder: 100,000 empty lists decode to a [100000, 0] tensor */
  infos i = one("x", SM_FLOAT);
  size_t len;
  char *body = repeated_body("[],", 100000, &len);
  sm_predict_request r;
  CHECK_OK(sm__json_parse_predict(body, len, get_infos, &i, &r));
  CHECK(r.n == 1 && sm_tensor_rank(r.tensors[0]) == 2 && sm_tensor_dims(r.tensors[0])[0] == 100000);
  sm__predict_request_clear(&r);
  free(body);
  /* packed numbers keep their kinds: a double among ints is refused for int32, as without packing */
  infos i32 = one("x", SM_INT32);
  CHECK_ERR(predict("{\"instances\":[1,2,3.5,4]}", &i32, &r), "JSON Value: 3.5 Type: Number is not of expected type: int32");
  CHECK_OK(predict("{\"instances\":[1,-2,2147483647,-2147483648]}", &i32, &r));
  CHECK(r.n == 1 && ((const int32_t *)sm_tensor_data(r.tensors[0]))[3] == INT32_MIN);
  sm__predict_request_clear(&r);
  infos u64 = one("x", SM_UINT64);
  CHECK_OK(predict("{\"instances\":[18446744073709551615, 0]}", &u64, &r));
  CHECK(r.n == 1 && ((const uint64_t *)sm_tensor_data(r.tensors[0]))[0] == UINT64_MAX);
  sm__predict_request_clear(&r);
  /* nesting past the limit: refused with the limit named, before the DOM is built */
  size_t depth = 4000000;
  const char *head = "{\"instances\":[1], \"nested\":";
  size_t hl = strlen(head);
  body = malloc(hl + 2 * depth + 2);
  memcpy(body, head, hl);
  memset(body + hl, '[', depth);
  memset(body + hl + depth, ']', depth);
  body[hl + 2 * depth] = '}';
  CHECK_ERR(sm__json_parse_predict(body, hl + 2 * depth + 1, get_infos, &i, &r), "over the limit of");
  free(body);
}

/* Requests decoding at once share one DOM budget: past it (and not alone) a request is told to
 * retry (429 RESOURCE_EXHAUSTED), and what a request held is returned with its arena. */
static void test_dom_budget(void) {
  size_t len;
  char *body = repeated_body("[],", 100000, &len); /* about 1.6 MB of DOM */
  infos i = one("x", SM_FLOAT);
  sm_predict_request r;
  sm__json_set_dom_budget((size_t)2 << 20);
  arena held = {0};
  const char *err;
  size_t off, need;
  CHECK(sm__json_read(body, len, &held, sm__json_dom_limit(len), &err, &off, &need) != NULL);
  sm_status *s = sm__json_parse_predict(body, len, get_infos, &i, &r);
  CHECK(s && sm_status_code(s) == SM_RESOURCE_EXHAUSTED && strstr(sm_status_message(s), "Server busy"));
  sm_status_free(s);
  CHECK_OK(predict("{\"instances\":[1.0]}", &i, &r)); /* small ones still fit */
  sm__predict_request_clear(&r);
  sm__json_arena_free(&held);
  CHECK_OK(sm__json_parse_predict(body, len, get_infos, &i, &r)); /* alone: it proceeds */
  sm__predict_request_clear(&r);
  sm__json_set_dom_budget(SM_JSON_DOM_BUDGET);
  free(body);
}

/* NULs are refused where cutting would serve something else (issue 17). */
static void test_nul_bytes(void) {
  infos i = one("x", SM_FLOAT);
  sm_predict_request r;
  CHECK_ERR(predict("{\"signature_name\":\"serving_default\\u0000evil\",\"instances\":[1]}", &i, &r),
            "'signature_name' has a NUL byte at offset 15");
  static const char after[] = "{\"instances\":[1]}\0{}";
  CHECK_ERR(sm__json_parse_predict(after, sizeof after - 1, get_infos, &i, &r),
            "The document root must not be followed by other values. at offset: 17");
  static const char inside[] = "{\"instances\":[1\0]}";
  CHECK_ERR(sm__json_parse_predict(inside, sizeof inside - 1, get_infos, &i, &r), "JSON Parse error");
  sm_examples_request e;
  CHECK_ERR(sm__json_parse_examples("{\"signature_name\":\"a\\u0000\",\"examples\":[{}]}", 44, &e), "NUL byte");
}

/* Numbers decode to strtod's correctly rounded double, whichever path the decoder takes (the
 * exact paths for up to 18 digits, or strtod): hand-picked edges and 20,000 pseudo-random decimals
 * (half of them doubles printed with 16 or 17 digits), as DT_DOUBLE and DT_FLOAT. */
static void test_number_rounding(void) {
  static const char *const edge[] = {
      "0.1", "0.2", "0.3", "1e22", "1e23", "9007199254740992", "9007199254740993", "9007199254740993.0",
      "123456789012345678", "1234567890123456789", "0.000000000000000000001", "1e-22", "1e-23",
      "2.2250738585072011e-308", "4.9e-324", "1.7976931348623157e308", "-0.0", "0.0", "-0", "3.14159265358979323846",
      "8.98846567431158e307", "0.30000000000000004", "1.00000000000000011102230246251565404236316680908203125",
      "9.999999999999999e22", "1.5e-7", "-2.5e+21", "4503599627370497.5", "0.1e1", "100e-2", "17.0e0"};
  enum { NR = 20000 };
  size_t n = sizeof edge / sizeof *edge + NR, cap = n * 40 + 64, len = 0;
  char *body = malloc(cap), (*texts)[40] = malloc(n * sizeof *texts);
  CHECK(body && texts);
  if (!body || !texts) {
    free(body);
    free(texts);
    return;
  }
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (size_t k = 0; k < n; k++) {
    if (k < sizeof edge / sizeof *edge) {
      snprintf(texts[k], sizeof texts[k], "%s", edge[k]);
    } else {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if ((x >> 50) & 1) { /* a double as clients print it: 17 significant digits */
        uint64_t bits = (x & 0x000FFFFFFFFFFFFFULL) | (uint64_t)(1023 - 70 + (int)((x >> 52) % 140)) << 52;
        double d;
        memcpy(&d, &bits, sizeof d);
        snprintf(texts[k], sizeof texts[k], (x >> 49) & 1 ? "%.17g" : "%.16g", (x >> 48) & 1 ? d : (double)(float)d);
        if (!strpbrk(texts[k], ".e")) strcat(texts[k], ".5");
        len += (size_t)snprintf(body + len, cap - len, "%s%s", k ? "," : "{\"instances\": [", texts[k]);
        continue;
      }
      int digits = 1 + (int)(x % 20), dot = (int)((x >> 8) % (unsigned)(digits + 1)), e = (int)((x >> 16) % 61) - 30;
      char *o = texts[k];
      if ((x >> 30) & 1) *o++ = '-';
      uint64_t y = x;
      for (int d = 0; d < digits; d++) {
        if (d == dot && d > 0) *o++ = '.';
        y = y * 6364136223846793005ULL + 1442695040888963407ULL;
        *o++ = (char)('0' + (d == 0 && dot != 1 && digits > 1 ? 1 + (y >> 60) % 9 : (y >> 60) % 10));
      }
      if ((x >> 40) & 1) snprintf(o, 12, "e%d", e);
      else *o = 0;
    }
    len += (size_t)snprintf(body + len, cap - len, "%s%s", k ? "," : "{\"instances\": [", texts[k]);
  }
  len += (size_t)snprintf(body + len, cap - len, "]}");
  for (int dt = 0; dt < 2; dt++) {
    infos i = one("default", dt ? SM_FLOAT : SM_DOUBLE);
    sm_predict_request r;
    CHECK_OK(sm__json_parse_predict(body, len, get_infos, &i, &r));
    const sm_tensor *t = find(&r, "default");
    CHECK(t && sm_tensor_num_elements(t) == (int64_t)n);
    int bad = 0;
    for (size_t k = 0; t && k < n && bad < 5; k++) {
      double want = strtod(texts[k], NULL), got = dt ? ((const float *)sm_tensor_data(t))[k] : ((const double *)sm_tensor_data(t))[k];
      if (dt) want = (float)want;
      /* "-0" is the integer 0 (rapidjson's Int64), not strtod's -0.0: the sign only counts for decimals */
      int integer = !strpbrk(texts[k], ".eE");
      int ok = got == want && (integer || signbit(got) == signbit(want));
      if (!ok) fprintf(stderr, "%s decoded unlike strtod (%s)\n", texts[k], dt ? "float" : "double"), bad++;
    }
    CHECK_EQ_INT(bad, 0);
    sm__predict_request_clear(&r);
  }
  free(body);
  free(texts);
}

/* The numeric fast path (json_fast.c) against the DOM decoder: on every body it accepts the two
 * give equal requests; what it declines the DOM decoder handles (errors included). */
static int fast_vs_dom(const char *body, int dtype) {
  infos i = one("x", dtype);
  sm_predict_request f, d;
  memset(&f, 0, sizeof f);
  int took = sm__json_fast_predict(body, strlen(body), get_infos, &i, &f);
  sm_status *s = sm__json_dom_predict(body, strlen(body), get_infos, &i, &d);
  if (took) {
    int same = !s && f.n == 1 && d.n == 1 && f.format == d.format && !strcmp(f.signature_name, d.signature_name) &&
               !strcmp(f.aliases[0], d.aliases[0]) && sm_tensor_equal(f.tensors[0], d.tensors[0]);
    if (!same) fprintf(stderr, "fast path and DOM decoder differ on %.200s\n", body);
    CHECK(same);
  } else {
    CHECK(f.n == 0 && f.tensors == NULL && f.signature_name == NULL);
  }
  sm_status_free(s);
  sm__predict_request_clear(&f);
  sm__predict_request_clear(&d);
  return took;
}

static void test_fast_path(void) {
  static const char *const take[] = {
      "{\"instances\": [1.0, 2.0, 5.0]}", "{\"instances\": [[1,2],[3,4]]}", " { \"instances\" : [ [ 1 , -0 ] ] } ",
      "{\"signature_name\": \"sig\", \"inputs\": [[1.5e3, -0.0]]}", "{\"signature_name\": \"\", \"inputs\": 3.25}",
      "{\"instances\": [[[1],[2]],[[3],[4]]]}", "{\"inputs\": [0.10000000149011612, 1e-7, 123456789012345678901234.5]}",
      "{\"instances\": [9007199254740992, -9007199254740992, 1E+2, 2.5e-310]}"};
  static const char *const decline[] = {
      "{\"instances\": [[1,2],[3]]}", "{\"instances\": []}", "{\"instances\": [[]]}", "{\"instances\": [NaN]}",
      "{\"instances\": [{\"x\": 1}]}", "{\"instances\": [1e400]}", "{\"instances\": [01]}", "{\"instances\": [1,]}",
      "{\"instances\": [1], \"instances\": [2]}", "{\"instances\": [1.0]} x", "{\"signature_name\": 5, \"instances\": [1]}",
      "{\"instances\": [[1,2],3]}", "{\"instances\": [[1,2],[[3],4]]}", "{\"instances\": 1}", "{\"inputs\": {\"x\": [1]}}",
      "{\"instances\": [1], \"inputs\": [1]}", "{\"instances\": [9007199254740993]}", "{\"instances\": [1.]}",
      "{\"instances\": [-]}", "{\"instances\": [\"1\"]}", "{\"signature_name\": \"a\\\"b\", \"instances\": [1]}",
      "{\"instances\": [1] ", "{\"instances\": [[1]]]}", "{\"other\": 1, \"instances\": [1]}", "[1]", "",
      "{\"inputs\": [[1.5e3, -0.0]], \"signature_name\": \"sig\"}"};
  for (size_t k = 0; k < sizeof take / sizeof *take; k++) {
    CHECK(fast_vs_dom(take[k], SM_FLOAT));
    CHECK(fast_vs_dom(take[k], SM_DOUBLE));
    CHECK(!fast_vs_dom(take[k], SM_INT32)); /* one float or double input only */
  }
  for (size_t k = 0; k < sizeof decline / sizeof *decline; k++) CHECK(!fast_vs_dom(decline[k], SM_FLOAT));
  /* pseudo-random rectangular bodies of rank 1-4 with numbers of every length */
  char *body = malloc(1 << 16);
  CHECK(body != NULL);
  uint64_t x = 0x2545F4914F6CDD1DULL;
  int took = 0;
  for (int it = 0; body && it < 300; it++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int rank = 1 + (int)(x % 4);
    int64_t dims[4], n = 1;
    for (int k = 0; k < rank; k++) dims[k] = 1 + (int64_t)((x >> (8 * k + 8)) % 5), n *= dims[k];
    size_t len = (size_t)snprintf(body, 64, "{\"instances\": ");
    for (int64_t e = 0; e < n; e++) {
      int64_t q = e;
      int opens = 0;
      for (int k = rank - 1; k >= 0 && q % dims[k] == 0; k--) opens++, q /= dims[k];
      if (e) body[len++] = ',';
      for (int k = 0; k < opens; k++) body[len++] = '[';
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      double v = (double)(int64_t)(x >> 11) / (double)((uint64_t)1 << (x % 60));
      len += (size_t)snprintf(body + len, 40, (x >> 5) % 3 == 0 ? "%.17g" : (x >> 5) % 3 == 1 ? "%.6g" : "%.0f",
                              (x & 1) ? -v : v);
      q = e + 1;
      for (int k = rank - 1; k >= 0 && q % dims[k] == 0; k--) body[len++] = ']', q /= dims[k];
    }
    snprintf(body + len, 8, "}");
    took += fast_vs_dom(body, (x >> 3) & 1 ? SM_FLOAT : SM_DOUBLE);
  }
  CHECK(took > 250); /* random numbers that overflow or print as "inf" may decline */
  free(body);
}

int main(void) {
  test_base64_threads();
  test_single_unnamed();
  test_deep_nesting();
  test_mixed_numbers();
  test_number_rounding();
  test_fast_path();
  test_base64();
  test_multiple_named();
  test_columnar();
  test_single_errors();
  test_multiple_errors();
  test_write();
  test_results();
  test_examples();
  test_hostile();
  test_dom_memory();
  test_dom_budget();
  test_nul_bytes();
  TEST_MAIN_END();
}
