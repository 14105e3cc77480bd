/* test_serve_grpc.c - the gRPC API's request handling (serve/grpc_api.c) in-process, without a
 * transport, on the zoo's tf1_classify_regress: a Predict built with protobuf-c answers what the
 * model itself computes (sm_model_session_run on the same inputs); every truncation of it, and
 * hostile bytes for every method (bad varints, lengths past the end, wrong wire types, groups,
 * a shape asking for 10^18 elements), answer a gRPC error code without crashing. Predict's answers
 * written directly (sm__grpc_pack_predict_response) are byte for byte what protobuf-c packs. The
 * interop suite (tests/interop/test_grpc_serving.py) judges the answers with TensorFlow. */
#include <unistd.h>

#include "serve/grpc_api.h"
#include "serving_get_model_status.pb-c.h"
#include "serving_predict.pb-c.h"
#include "test.h"

#define MODEL SM_SOURCE_DIR "/tests/fixtures/zoo/tf1_classify_regress/model"
#define PS "/tensorflow.serving.PredictionService/"

static sm_rest *rest;
static sm_manager *mgr;

static int call(const char *method, const uint8_t *req, size_t len, sm_grpc_reply *rep) {
  sm__grpc_api_call(rest, method, req, len, 0, rep);
  CHECK(rep->message != NULL);
  CHECK((rep->code == SM_GRPC_OK) == (rep->body != NULL));
  return rep->code;
}

/* A PredictRequest for model "m", input x = the 2x2 floats v (tensor_content), packed into *out. */
static size_t predict_request(const float *v, uint8_t **out) {
  Tensorflow__Serving__ModelSpec spec = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
  spec.name = "m";
  Tensorflow__TensorShapeProto__Dim d0 = TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT, d1 = d0;
  d0.size = 2, d1.size = 2;
  Tensorflow__TensorShapeProto__Dim *dims[] = {&d0, &d1};
  Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2, shape.dim = dims;
  Tensorflow__TensorProto tp = TENSORFLOW__TENSOR_PROTO__INIT;
  tp.dtype = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  tp.tensor_shape = &shape;
  tp.tensor_content.data = (uint8_t *)(uintptr_t)v;
  tp.tensor_content.len = 4 * sizeof *v;
  Tensorflow__Serving__PredictRequest__InputsEntry e = TENSORFLOW__SERVING__PREDICT_REQUEST__INPUTS_ENTRY__INIT;
  e.key = "x", e.value = &tp;
  Tensorflow__Serving__PredictRequest__InputsEntry *ev[] = {&e};
  Tensorflow__Serving__PredictRequest r = TENSORFLOW__SERVING__PREDICT_REQUEST__INIT;
  r.model_spec = &spec, r.n_inputs = 1, r.inputs = ev;
  size_t n = tensorflow__serving__predict_request__get_packed_size(&r);
  *out = malloc(n);
  CHECK(*out != NULL);
  tensorflow__serving__predict_request__pack(&r, *out);
  return n;
}

static void predict_matches_the_model(void) {
  const float x[4] = {1.0f, 2.0f, -0.5f, 3.0f};
  uint8_t *req;
  size_t n = predict_request(x, &req);
  sm_grpc_reply rep;
  CHECK_EQ_INT(call(PS "Predict", req, n, &rep), SM_GRPC_OK);
  Tensorflow__Serving__PredictResponse *resp = tensorflow__serving__predict_response__unpack(NULL, rep.len, rep.body);
  CHECK(resp != NULL);
  CHECK_EQ_INT((int)resp->n_outputs, 1);
  CHECK(!strcmp(resp->outputs[0]->key, "scores"));
  CHECK(!strcmp(resp->model_spec->name, "m") && !strcmp(resp->model_spec->signature_name, "serving_default"));
  CHECK(resp->model_spec->version && resp->model_spec->version->value == 1);
  /* the model's own answer for the same input */
  sm_servable *sv = NULL;
  CHECK_OK(sm__manager_acquire(mgr, "m", 0, NULL, &sv));
  sm_tensor *in = NULL, *want = NULL;
  int64_t dims[2] = {2, 2};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, dims, &in));
  memcpy(sm_tensor_data(in), x, sizeof x);
  const char *feed = "x:0", *fetch = "predict_scores:0";
  CHECK_OK(sm_model_session_run(sm__servable_model(sv), &feed, &in, 1, &fetch, 1, NULL, 0, &want));
  const Tensorflow__TensorProto *got = resp->outputs[0]->value;
  CHECK_EQ_INT((int)got->dtype, SM_FLOAT);
  CHECK_EQ_INT((int)got->tensor_content.len, (int)sm_tensor_nbytes(want));
  CHECK(!memcmp(got->tensor_content.data, sm_tensor_data(want), sm_tensor_nbytes(want)));
  sm_tensor_free(in);
  sm_tensor_free(want);
  sm__servable_release(sv);
  tensorflow__serving__predict_response__free_unpacked(resp, NULL);
  sm__grpc_reply_clear(&rep);

  /* the call's deadline is the run's: one already past is not run */
  sm__grpc_api_call(rest, PS "Predict", req, n, sm_monotonic_us() - 1000, &rep);
  CHECK_EQ_INT(rep.code, SM_GRPC_DEADLINE_EXCEEDED);
  sm__grpc_reply_clear(&rep);

  /* every prefix of the request: an answer, never a crash */
  int errors = 0;
  for (size_t k = 0; k < n; k++) {
    CHECK(call(PS "Predict", req, k, &rep) >= 0);
    errors += rep.code != SM_GRPC_OK;
    sm__grpc_reply_clear(&rep);
  }
  CHECK(errors > 0);
  free(req);
}

/* protobuf-c's bytes for the PredictResponse that sm__grpc_pack_predict_response writes directly */
static size_t protobuf_c_answer(const char *name, const char *sig, int64_t version, const char *const *aliases,
                                sm_tensor *const *outs, int n, uint8_t **bytes) {
  Tensorflow__Serving__PredictResponse r = TENSORFLOW__SERVING__PREDICT_RESPONSE__INIT;
  Tensorflow__Serving__PredictResponse__OutputsEntry ents[4], *entp[4];
  Tensorflow__TensorProto tps[4];
  Tensorflow__TensorShapeProto shapes[4];
  Tensorflow__TensorShapeProto__Dim dims[4][8], *dimp[4][8];
  for (int i = 0; i < n; i++) {
    tensorflow__serving__predict_response__outputs_entry__init(&ents[i]);
    tensorflow__tensor_proto__init(&tps[i]);
    tensorflow__tensor_shape_proto__init(&shapes[i]);
    for (int d = 0; d < sm_tensor_rank(outs[i]); d++) {
      tensorflow__tensor_shape_proto__dim__init(&dims[i][d]);
      dims[i][d].size = sm_tensor_dims(outs[i])[d];
      dimp[i][d] = &dims[i][d];
    }
    shapes[i].n_dim = (size_t)sm_tensor_rank(outs[i]);
    shapes[i].dim = dimp[i];
    tps[i].dtype = (Tensorflow__DataType)sm_tensor_dtype(outs[i]);
    tps[i].tensor_shape = &shapes[i];
    tps[i].tensor_content.data = sm_tensor_data(outs[i]);
    tps[i].tensor_content.len = sm_tensor_nbytes(outs[i]);
    ents[i].key = (char *)aliases[i];
    ents[i].value = &tps[i];
    entp[i] = &ents[i];
  }
  r.n_outputs = (size_t)n;
  r.outputs = entp;
  Tensorflow__Serving__ModelSpec spec = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
  Google__Protobuf__Int64Value v = GOOGLE__PROTOBUF__INT64_VALUE__INIT;
  v.value = version;
  spec.name = (char *)name, spec.signature_name = (char *)sig;
  spec.version_choice_case = TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION;
  spec.version = &v;
  r.model_spec = &spec;
  size_t len = tensorflow__serving__predict_response__get_packed_size(&r);
  *bytes = malloc(len + 1);
  CHECK(*bytes != NULL);
  CHECK_EQ_INT((int)tensorflow__serving__predict_response__pack(&r, *bytes), (int)len);
  return len;
}

static void direct_answer_is_protobuf_c_s(void) {
  /* ranks 0-4, zero and multi-byte dims, contents under and over 127 bytes, every numeric kind */
  static const struct {
    int dtype, rank;
    int64_t dims[4];
  } shapes[] = {{SM_FLOAT, 0, {0}},          {SM_FLOAT, 1, {3}},        {SM_INT32, 2, {2, 3}},
                {SM_INT64, 1, {0}},          {SM_DOUBLE, 2, {1, 300}},  {SM_BOOL, 3, {1, 0, 2}},
                {SM_UINT8, 4, {2, 1, 200, 1}}, {SM_HALF, 2, {129, 1}}};
  static const char *const names[] = {"m", "", "a_longer_model_name"}, *const sigs[] = {"serving_default", ""};
  static const int64_t versions[] = {1, 0, 123, (int64_t)1 << 40};
  enum { NS = sizeof shapes / sizeof *shapes };
  sm_tensor *t[NS];
  for (int i = 0; i < NS; i++) {
    CHECK_OK(sm_tensor_new(shapes[i].dtype, shapes[i].rank, shapes[i].dims, &t[i]));
    for (size_t b = 0; b < sm_tensor_nbytes(t[i]); b++) ((uint8_t *)sm_tensor_data(t[i]))[b] = (uint8_t)(b * 7 + 1);
  }
  static const char *const aliases[] = {"y", "", "scores", "z"};
  int cases = 0;
  for (int i = 0; i < NS; i++)
    for (int n = 1; n <= 4; n++) {
      sm_tensor *outs[4];
      for (int k = 0; k < n; k++) outs[k] = t[(i + 3 * k) % NS];
      const char *name = names[(i + n) % 3], *sig = sigs[(i + n) % 2];
      int64_t version = versions[(i + n) % 4];
      sm_grpc_reply rep = {0};
      CHECK_EQ_INT(sm__grpc_pack_predict_response(name, sig, version, aliases, outs, n, &rep), 1);
      uint8_t *want;
      size_t len = protobuf_c_answer(name, sig, version, aliases, outs, n, &want);
      CHECK_EQ_INT((int)rep.len, (int)len);
      CHECK(rep.len == len && !memcmp(rep.body, want, len));
      free(want);
      sm__grpc_reply_clear(&rep);
      cases++;
    }
  CHECK_EQ_INT(cases, NS * 4);
  /* a string output: left to protobuf-c */
  sm_tensor *str;
  int64_t one = 1;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &str));
  sm_grpc_reply rep = {0};
  CHECK_EQ_INT(sm__grpc_pack_predict_response("m", "s", 1, aliases, &str, 1, &rep), 0);
  CHECK(rep.body == NULL);
  sm_tensor_free(str);
  for (int i = 0; i < NS; i++) sm_tensor_free(t[i]);
}

static void hostile_bytes(void) {
  static const char *const methods[] = {PS "Predict", PS "Classify", PS "Regress", PS "MultiInference",
                                        PS "GetModelMetadata", "/tensorflow.serving.ModelService/GetModelStatus",
                                        "/tensorflow.serving.ModelService/HandleReloadConfigRequest"};
  static const struct {
    const char *what;
    const char *bytes;
    size_t len;
  } bad[] = {
      {"varint past 10 bytes", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12},
      {"length past the end", "\x0a\x7f\x0a\x01m", 5},
      {"length of 2^62", "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x3f", 10},
      {"model_spec as a varint (wrong wire type)", "\x08\x01", 2},
      {"a group", "\x0b\x0c", 2},
      {"truncated tag", "\x80", 1},
      {"wire type 7", "\x0f", 1},
  };
  sm_grpc_reply rep;
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
      int code = call(methods[m], (const uint8_t *)bad[i].bytes, bad[i].len, &rep);
      if (code != SM_GRPC_INVALID_ARGUMENT)
        fprintf(stderr, "%s, %s: code %d %s\n", methods[m], bad[i].what, code, rep.message);
      CHECK_EQ_INT(code, SM_GRPC_INVALID_ARGUMENT);
      sm__grpc_reply_clear(&rep);
    }
  /* an empty request is a valid message without a model_spec */
  CHECK_EQ_INT(call(PS "Predict", NULL, 0, &rep), SM_GRPC_INVALID_ARGUMENT);
  CHECK(strstr(rep.message, "Missing ModelSpec") != NULL);
  sm__grpc_reply_clear(&rep);
  CHECK_EQ_INT(call("/tensorflow.serving.PredictionService/Nope", NULL, 0, &rep), SM_GRPC_UNIMPLEMENTED);
  sm__grpc_reply_clear(&rep);
}

/* A shape of 10^9 x 10^9 with one float_val would ask for 4 EB: refused before any allocation. */
static void huge_shape(void) {
  Tensorflow__Serving__ModelSpec spec = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
  spec.name = "m";
  Tensorflow__TensorShapeProto__Dim d0 = TENSORFLOW__TENSOR_SHAPE_PROTO__DIM__INIT, d1 = d0;
  d0.size = 1000000000, d1.size = 1000000000;
  Tensorflow__TensorShapeProto__Dim *dims[] = {&d0, &d1};
  Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2, shape.dim = dims;
  float one = 1;
  Tensorflow__TensorProto tp = TENSORFLOW__TENSOR_PROTO__INIT;
  tp.dtype = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  tp.tensor_shape = &shape;
  tp.n_float_val = 1, tp.float_val = &one;
  Tensorflow__Serving__PredictRequest__InputsEntry e = TENSORFLOW__SERVING__PREDICT_REQUEST__INPUTS_ENTRY__INIT;
  e.key = "x", e.value = &tp;
  Tensorflow__Serving__PredictRequest__InputsEntry *ev[] = {&e};
  Tensorflow__Serving__PredictRequest r = TENSORFLOW__SERVING__PREDICT_REQUEST__INIT;
  r.model_spec = &spec, r.n_inputs = 1, r.inputs = ev;
  uint8_t buf[256];
  size_t n = tensorflow__serving__predict_request__pack(&r, buf);
  sm_grpc_reply rep;
  CHECK_EQ_INT(call(PS "Predict", buf, n, &rep), SM_GRPC_INVALID_ARGUMENT);
  CHECK(strstr(rep.message, "tensor parsing error: x") != NULL);
  sm__grpc_reply_clear(&rep);
  /* under the element cap (805M floats, 3 GiB) but filled from one value (fuzz_grpc's input):
   * refused by the fill limit, naming it */
  shape.n_dim = 1, d0.size = 805306368;
  n = tensorflow__serving__predict_request__pack(&r, buf);
  CHECK_EQ_INT(call(PS "Predict", buf, n, &rep), SM_GRPC_INVALID_ARGUMENT);
  CHECK(strstr(rep.message, "tensor parsing error: x: 805306368 elements filled from 1 values") != NULL);
  sm__grpc_reply_clear(&rep);
  /* a fill within the limit is TF's rule: the value repeats */
  d0.size = 1000;
  n = tensorflow__serving__predict_request__pack(&r, buf);
  CHECK_EQ_INT(call(PS "Predict", buf, n, &rep), SM_GRPC_INVALID_ARGUMENT); /* the model wants [?,...] */
  CHECK(strstr(rep.message, "filled from") == NULL);
  sm__grpc_reply_clear(&rep);
}

static void status_and_codes(void) {
  Tensorflow__Serving__ModelSpec spec = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
  spec.name = "m";
  Tensorflow__Serving__GetModelStatusRequest r = TENSORFLOW__SERVING__GET_MODEL_STATUS_REQUEST__INIT;
  r.model_spec = &spec;
  uint8_t buf[64];
  size_t n = tensorflow__serving__get_model_status_request__pack(&r, buf);
  sm_grpc_reply rep;
  CHECK_EQ_INT(call("/tensorflow.serving.ModelService/GetModelStatus", buf, n, &rep), SM_GRPC_OK);
  Tensorflow__Serving__GetModelStatusResponse *resp =
      tensorflow__serving__get_model_status_response__unpack(NULL, rep.len, rep.body);
  CHECK(resp && resp->n_model_version_status == 1);
  CHECK(resp->model_version_status[0]->version == 1);
  CHECK_EQ_INT(resp->model_version_status[0]->state, TENSORFLOW__SERVING__MODEL_VERSION_STATUS__STATE__AVAILABLE);
  tensorflow__serving__get_model_status_response__free_unpacked(resp, NULL);
  sm__grpc_reply_clear(&rep);
  spec.name = "nope";
  n = tensorflow__serving__get_model_status_request__pack(&r, buf);
  CHECK_EQ_INT(call("/tensorflow.serving.ModelService/GetModelStatus", buf, n, &rep), SM_GRPC_NOT_FOUND);
  sm__grpc_reply_clear(&rep);
  /* ToGRPCStatus keeps TF's code numbers */
  CHECK_EQ_INT(sm__grpc_code(SM_DEADLINE_EXCEEDED), 4);
  CHECK_EQ_INT(sm__grpc_code(SM_FAILED_PRECONDITION), 9);
  CHECK_EQ_INT(sm__grpc_code(SM_NO_MEMORY), 8);
}

int main(void) {
  char base[] = "/tmp/sm_test_grpc_XXXXXX";
  CHECK(mkdtemp(base) != NULL);
  char link[256];
  snprintf(link, sizeof link, "%s/1", base);
  CHECK(symlink(MODEL, link) == 0);
  sm_manager_options mo = {.num_threads = 1};
  sm_model_config mc = {.name = "m", .base_path = base, .policy = SM_POLICY_LATEST, .latest_n = 1};
  CHECK_OK(sm__manager_new(&mo, &mgr));
  CHECK_OK(sm__manager_set_config(mgr, &mc, 1));
  sm_rest_options ro = {.manager = mgr};
  CHECK_OK(sm__rest_new(&ro, &rest));
  predict_matches_the_model();
  direct_answer_is_protobuf_c_s();
  hostile_bytes();
  huge_shape();
  status_and_codes();
  sm__rest_free(rest);
  sm__manager_free(mgr);
  unlink(link);
  rmdir(base);
  TEST_MAIN_END();
}
