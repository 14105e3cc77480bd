/* test_serve_rest.c - the REST handler in-process against ../shared/fixtures/tf-serving, with the
 * cases of TF Serving's http_rest_api_handler_test.cc and tensorflow_model_server_test.py: same
 * status codes, bodies equal as JSON, metadata equal to the *_metadata.json files; and a model with a
 * signature this runtime cannot run (tests/fixtures/unrunnable_signature) and the zoo's tf2_defaults
 * (SignatureDef.defaults against protobuf's JSON printer), which need no ../shared. */
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "json_compare.h"
#include "serve/manager.h"
#include "serve/metrics.h"
#include "serve/rest.h"
#include "test.h"

#define FIX SM_SHARED_DIR "/fixtures/tf-serving"
#define M2 "saved_model_half_plus_two_2_versions"

static sm_rest *rest;
static sm_rest_response resp;

/* One request; returns the HTTP status, body in *body (valid until the next call). */
static int call(const char *method, const char *path, const char *body, const char **out) {
  sm__rest_response_clear(&resp);
  sm__rest_handle(rest, method, path, body ? body : "", body ? strlen(body) : 0, &resp);
  *out = resp.body.p ? resp.body.p : "";
  return resp.http_status;
}

/* The "error" member of a body. */
static int error_has(const char *body, const char *needle) {
  json_error_t e;
  json_t *j = json_loads(body, 0, &e);
  const char *msg = j ? json_string_value(json_object_get(j, "error")) : NULL;
  int ok = msg && strstr(msg, needle);
  if (!ok) fprintf(stderr, "error body %s lacks \"%s\"\n", body, needle);
  json_decref(j);
  return ok;
}

#define CHECK_CALL(method, path, body, status, want)      \
  do {                                                    \
    const char *_r;                                       \
    CHECK_EQ_INT(call(method, path, body, &_r), status);  \
    CHECK_JSON(_r, want);                                 \
  } while (0)

#define CHECK_FAIL(method, path, body, status, needle)    \
  do {                                                    \
    const char *_r;                                       \
    CHECK_EQ_INT(call(method, path, body, &_r), status);  \
    CHECK(error_has(_r, needle));                         \
  } while (0)

/* A manager serving `base` as model `name`, with the REST handler over it in `rest`; *saved keeps
 * the handler that was there (unserve puts it back). */
static sm_manager *serve_dir(const char *name, const char *base, sm_rest **saved) {
  sm_manager_options mo = {0};
  sm_manager *m = NULL;
  *saved = rest;
  rest = NULL;
  CHECK_OK(sm__manager_new(&mo, &m));
  sm_model_config cfg = {.name = name, .base_path = base, .latest_n = 1};
  if (m) CHECK_OK(sm__manager_set_config(m, &cfg, 1));
  sm_rest_options ro = {.manager = m};
  if (m) CHECK_OK(sm__rest_new(&ro, &rest));
  return m;
}

static void unserve(sm_manager *m, sm_rest *saved) {
  sm__rest_response_clear(&resp);
  sm__rest_free(rest);
  rest = saved;
  sm__manager_free(m);
}

static void unsupported_api_calls(void) {
  CHECK_FAIL("GET", "/v1/foo", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/foo", "", 400, "Malformed request");
  CHECK_FAIL("GET", "/v1/models", "", 400, "Missing model name");
  CHECK_FAIL("GET", "/v1/models/debug/model_name", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models", "", 400, "Malformed request");
  CHECK_FAIL("GET", "/v1/models/foo:predict", "", 400, "Malformed request");
  CHECK_FAIL("GET", "/v1/models/foo/version/50:predict", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/version/50:regress", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/versions/HELLO:regress", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/versions/18446744073709551615:regress", "", 400, "Failed to convert version");
  CHECK_FAIL("POST", "/v1/models/foo/metadata", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/label/some_label:regress", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/versions/50/labels/some_label:regress", "", 400, "Malformed request");
  CHECK_FAIL("POST", "/v1/models/foo/versions/some_label:regress", "", 400, "Malformed request");
  CHECK_FAIL("DELETE", "/v1/models/foo", "", 400, "Malformed request: DELETE /v1/models/foo");
  CHECK_FAIL("POST", "/v1/models/" M2 ":PREDICT", "{}", 400, "Malformed request");
  CHECK(sm__rest_path_is_api("/v1/models"));
  CHECK(!sm__rest_path_is_api("/statuspage"));
  CHECK(!sm__rest_path_is_api("/index"));
}

static void predict_errors(void) {
  CHECK_FAIL("POST", "/v1/models/foo:predict", "{ \"instances\": [1] }", 404, "foo");
  CHECK_FAIL("POST", "/v1/models/foo/versions/50:predict", "{ \"instances\": [1] }", 404, "foo");
  CHECK_FAIL("POST", "/v1/models/" M2 "99:predict", "{ \"instances\": [1] }", 404, M2 "99");
  CHECK_FAIL("POST", "/v1/models/" M2 "/versions/124:predict", "{ \"instances\": [1] }", 404, M2);
  const char *p = "/v1/models/" M2 ":predict";
  CHECK_FAIL("POST", p, "", 400, "JSON Parse error: The document is empty");
  CHECK_FAIL("POST", p, "instances = [1, 2]", 400, "JSON Parse error: Invalid value");
  CHECK_FAIL("POST", p, "{ \"instances\": [\"x\", \"y\"] }", 400, "not of expected type: float");
  CHECK_FAIL("POST", "/v1/models/" M2 "/labels/Version_Nonexistent:predict", "{ \"instances\": [\"x\", \"y\"] }", 400,
             "Unrecognized servable version label");
  CHECK_FAIL("POST", p, "{ \"signature_name\": 100 }", 400, "'signature_name' key must be a string value.");
  CHECK_FAIL("POST", p, "{ \"signature_name\": \"nope\", \"instances\": [1] }", 400,
             "Serving signature name: \"nope\" not found in signature def");
  CHECK_FAIL("POST", p, "{\"instances\": [[1.0, 2.0], [3.0]]}", 400, "Expecting tensor size");
  CHECK_FAIL("POST", p, "{\"instances\": [1.0], \"inputs\": [1.0]}", 400, "Not formatted correctly");
  CHECK_FAIL("POST", p, "{\"nothing\": 1}", 400, "Missing 'inputs' or 'instances' key");
  CHECK_FAIL("POST", p, "[1, 2", 400, "JSON Parse error");
}

static void predict_ok(void) {
  CHECK_CALL("POST", "/v1/models/" M2 ":predict", "{\"instances\": [[1.0, 2.0], [3.0, 4.0]]}", 200,
             "{ \"predictions\": [[2.5, 3.0], [3.5, 4.0]] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/versions/123:predict", "{\"instances\": [1.0, 2.0]}", 200,
             "{ \"predictions\": [2.5, 3.0] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/labels/Version_Label:predict", "{\"instances\": [1.0, 2.0]}", 200,
             "{ \"predictions\": [2.5, 3.0] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/versions/123:predict",
             "{\"signature_name\": \"serving_default\", \"instances\": [3.0, 4.0]}", 200,
             "{ \"predictions\": [3.5, 4.0] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/versions/123:predict",
             "{\"signature_name\": \"serving_default\", \"inputs\": [3.0, 4.0]}", 200, "{ \"outputs\": [3.5, 4.0] }");
  /* case-insensitive routing, as RE2's (?i) */
  CHECK_CALL("POST", "/V1/Models/" M2 ":predict", "{\"instances\": [1.0]}", 200, "{ \"predictions\": [2.5] }");
  /* the TF Serving tutorial, byte for byte */
  const char *b;
  CHECK_EQ_INT(call("POST", "/v1/models/half_plus_two:predict", "{\"instances\": [1.0, 2.0, 5.0]}", &b), 200);
  CHECK_EQ_STR(b, "{\n    \"predictions\": [2.5, 3.0, 4.5\n    ]\n}");
  /* tensorflow_model_server_test.py */
  CHECK_CALL("POST", "/v1/models/default:predict", "{\"instances\": [2.0, 3.0, 4.0]}", 200,
             "{\"predictions\": [3.0, 3.5, 4.0]}");
  CHECK_CALL("POST", "/v1/models/default:predict", "{\"inputs\": [2.0, 3.0, 4.0]}", 200,
             "{\"outputs\": [3.0, 3.5, 4.0]}");
  CHECK_CALL("POST", "/v1/models/half_plus_three:predict", "{\"instances\": [2.0]}", 200,
             "{\"predictions\": [4.0]}");
  /* another signature; a model with no declared shapes */
  CHECK_CALL("POST", "/v1/models/" M2 ":predict", "{\"signature_name\": \"regress_x2_to_y3\", \"instances\": [[4.0]]}",
             200, "{\"predictions\": [[5.0]]}");
  CHECK_CALL("POST", "/v1/models/matrix:predict", "{\"instances\": [[[1,2,3],[4,5,6],[7,8,9]]]}", 200,
             "{\"predictions\": [[[2.5,3,3.5],[4,4.5,5],[5.5,6,6.5]]]}");
}

static void classify_regress(void) {
  CHECK_CALL("POST", "/v1/models/" M2 ":regress",
             "{\"signature_name\": \"regress_x_to_y\", \"examples\": [ { \"x\": 80.0 } ] }", 200,
             "{ \"results\": [42] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/versions/123:regress",
             "{\"signature_name\": \"regress_x_to_y\", \"examples\": [ { \"x\": 80.0 } ] }", 200,
             "{ \"results\": [42] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/labels/Version_Label:regress",
             "{\"signature_name\": \"regress_x_to_y\", \"examples\": [ { \"x\": 80.0 } ] }", 200,
             "{ \"results\": [42] }");
  CHECK_CALL("POST", "/v1/models/" M2 ":classify",
             "{\"signature_name\": \"classify_x_to_y\", \"examples\": [ { \"x\": 20.0 } ] }", 200,
             "{ \"results\": [[[\"\", 12]]] }");
  CHECK_CALL("POST", "/v1/models/" M2 "/labels/Version_Label:classify",
             "{\"signature_name\": \"classify_x_to_y\", \"examples\": [ { \"x\": 10.0 } ] }", 200,
             "{ \"results\": [[[\"\", 7]]] }");
  CHECK_CALL("POST", "/v1/models/default:classify",
             "{\"signature_name\": \"classify_x_to_y\", \"examples\": [{\"x\": 2.0}]}", 200,
             "{\"results\": [[[\"\", 3.0]]]}");
  CHECK_CALL("POST", "/v1/models/default:regress",
             "{\"signature_name\": \"regress_x_to_y\", \"examples\": [{\"x\": 2.0}]}", 200, "{\"results\": [3.0]}");
  /* several examples, context merged in (the example's own feature wins) */
  CHECK_CALL("POST", "/v1/models/default:regress",
             "{\"signature_name\": \"regress_x_to_y2\", \"context\": {\"x\": 100.0}, "
             "\"examples\": [{\"x\": 2.0}, {\"x\": 4.0}]}",
             200, "{\"results\": [4.0, 5.0]}");
  CHECK_CALL("POST", "/v1/models/half_plus_three:regress",
             "{\"signature_name\": \"tensorflow/serving/regress\", \"examples\": [{\"x\": 2.0}]}", 200,
             "{\"results\": [4.0]}");
  CHECK_FAIL("POST", "/v1/models/default:classify", "{\"signature_name\": \"nope\", \"examples\": [{\"x\": 2.0}]}",
             400, "No signature was found with the name: nope");
  CHECK_FAIL("POST", "/v1/models/default:regress", "{\"examples\": []}", 400, "'examples' value is an empty array");
  CHECK_FAIL("POST", "/v1/models/default:regress", "{\"signature_name\": \"serving_default\", \"examples\": [{}]}", 400,
             "No regression inputs found");
  CHECK_FAIL("POST", "/v1/models/nope:regress", "{\"examples\": [{\"x\": 1}]}", 404, "nope");
  CHECK_FAIL("POST", "/v1/models/default:classify", "{\"examples\": [{\"x\": [1, null]}]}", 400,
             "x has element with unexpected JSON type: Null");
}

static const char *status_123 =
    "{\"model_version_status\": [{\"version\": \"123\", \"state\": \"AVAILABLE\", \"status\": "
    "{\"error_code\": \"OK\", \"error_message\": \"\"}}]}";

static void get_status(void) {
  CHECK_CALL("GET", "/v1/models/" M2, "", 200, status_123);
  CHECK_CALL("GET", "/v1/models/" M2 "/versions/123", "", 200, status_123);
  CHECK_CALL("GET", "/v1/models/" M2 "/labels/Version_Label", "", 200, status_123);
  CHECK_CALL("GET", "/v1/models/default", "", 200, status_123);
  CHECK_FAIL("GET", "/v1/models/nope", "", 404, "nope");
  CHECK_FAIL("GET", "/v1/models/" M2 "/versions/77", "", 404, "77");
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

/* Drops "defaults" from every signature. */
static char *without_defaults(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  json_t *m = json_object_get(json_object_get(json_object_get(j, "metadata"), "signature_def"), "signature_def");
  const char *k;
  json_t *v;
  json_object_foreach(m, k, v) json_object_del(v, "defaults");
  char *out = json_dumps(j, 0);
  json_decref(j);
  return out;
}

static void get_metadata(sm_rest *tf2) {
  const char *b;
  char *want = read_text(FIX "/" M2 "_metadata.json");
  CHECK(want != NULL);
  CHECK_EQ_INT(call("GET", "/v1/models/" M2 "/metadata", "", &b), 200);
  if (want) CHECK_JSON(b, want);
  free(want);
  want = read_text(FIX "/half_plus_two_model_metadata.json");
  CHECK_EQ_INT(call("GET", "/v1/models/default/metadata", "", &b), 200);
  if (want) CHECK_JSON(b, want);
  free(want);
  CHECK_EQ_INT(call("GET", "/v1/models/" M2 "/versions/123/metadata", "", &b), 200);
  CHECK_FAIL("GET", "/v1/models/nope/metadata", "", 404, "nope");
  CHECK_FAIL("GET", "/v1/models/" M2 "/versions/5/metadata", "", 404, M2);
  /* the TF2 export against its metadata file (which predates SignatureDef.defaults) */
  sm_rest *keep = rest;
  rest = tf2;
  want = read_text(FIX "/saved_model_half_plus_two_tf2_2_versions_metadata.json");
  CHECK_EQ_INT(call("GET", "/v1/models/" M2 "/metadata", "", &b), 200);
  /* the file omits "defaults" for __saved_model_init_op only (an empty map): drop it on both sides */
  char *got = without_defaults(b), *want2 = want ? without_defaults(want) : NULL;
  if (want2) CHECK_JSON(got, want2);
  free(got);
  free(want2);
  free(want);
  CHECK_CALL("POST", "/v1/models/" M2 ":predict", "{\"instances\": [2.0]}", 200, "{\"predictions\": [3.0]}");
  CHECK_CALL("POST", "/v1/models/" M2 ":regress", "{\"signature_name\": \"regress_x_to_y\", \"examples\": "
             "[{\"x\": 0.0}, {\"x\": 1.0}, {\"x\": 2.0}, {\"x\": 3.0}]}", 200, "{\"results\": [2.0, 2.5, 3.0, 3.5]}");
  CHECK_CALL("POST", "/v1/models/" M2 ":classify", "{\"signature_name\": \"classify_x_to_y\", \"examples\": "
             "[{\"x\": 2.0}]}", 200, "{\"results\": [[[\"\", 3.0]]]}");
  rest = keep;
}

/* tf2_defaults' signatures (TensorProto defaults of several dtypes) against what protobuf's
 * json_format printed for them with TF Serving's options (tools/zoo_serving.py). */
static void metadata_defaults(void) {
#define ZD SM_SOURCE_DIR "/tests/fixtures/zoo/tf2_defaults"
  char tmpl[] = "/tmp/sm_rest_def_XXXXXX", ver[256];
  char *base = mkdtemp(tmpl);
  CHECK(base != NULL);
  if (!base) return;
  snprintf(ver, sizeof ver, "%s/1", base);
  CHECK(symlink(ZD "/model", ver) == 0);
  sm_rest *saved;
  sm_manager *m = serve_dir("d", base, &saved);
  char *want = read_text(ZD "/metadata_signature_def.json");
  CHECK(want != NULL);
  const char *b;
  if (rest && want && call("GET", "/v1/models/d/metadata", "", &b) == 200) {
    json_error_t e;
    json_t *j = json_loads(b, 0, &e);
    CHECK(j != NULL);
    json_t *sd = json_object_get(json_object_get(json_object_get(j, "metadata"), "signature_def"), "signature_def");
    char *got = sd ? json_dumps(sd, JSON_SORT_KEYS) : NULL;
    CHECK(got != NULL);
    if (got) CHECK_JSON(got, want);
    /* spot checks that do not lean on the golden's printer: */
    CHECK(strstr(b, "\"int64_val\": [\n") && strstr(b, "\"-9007199254740993\""));
    CHECK(strstr(b, "\"NaN\"") && strstr(b, "\"/wBhYg==\"") && strstr(b, "\"AAAAAAAA4D8AAAAAAAD0vw==\""));
    free(got);
    json_decref(j);
  } else {
    CHECK(!"GET /v1/models/d/metadata answered 200");
  }
  free(want);
  unserve(m, saved);
  unlink(ver);
  rmdir(base);
#undef ZD
}

static void metrics(sm_manager *m) {
  sm_jbuf b = {0};
  sm__metrics_record("default", "predict", "OK", 120);
  sm__metrics_record("default", "predict", "INVALID_ARGUMENT", 50);
  sm__metrics_render(&b, m);
  CHECK(b.p && strstr(b.p, ":tensorflow:serving:request_count{model_name=\"default\",status=\"OK\"} 1"));
  CHECK(b.p && strstr(b.p, ":tensorflow:serving:request_latency_bucket{model_name=\"default\",API=\"predict\","
                           "entrypoint=\"REST\",le=\"300\"} 1"));
  CHECK(b.p && strstr(b.p, ":tensorflow:serving:model_loads_total"));
  sm__jbuf_free(&b);
  sm__metrics_reset();
}

/* A version with one signature lacking kernels is AVAILABLE; the other signature predicts; the
 * unrunnable one answers UNIMPLEMENTED (501, TF Serving's mapping) naming op and node; metadata
 * lists both signatures and the warning. */
static void unrunnable_signature(void) {
  char tmpl[] = "/tmp/sm_rest_unr_XXXXXX";
  char *base = mkdtemp(tmpl), *text = NULL, ver[256], pb[300];
  size_t len = 0;
  CHECK(base != NULL);
  if (!base) return;
  snprintf(ver, sizeof ver, "%s/1", base);
  snprintf(pb, sizeof pb, "%s/saved_model.pbtxt", ver);
  CHECK(mkdir(ver, 0755) == 0);
  CHECK_OK(sm__file_read_all(SM_SOURCE_DIR "/tests/fixtures/unrunnable_signature/saved_model.pbtxt", &text, &len));
  if (text) CHECK_OK(sm__file_write_atomic(pb, text, len));
  free(text);
  sm_rest *saved;
  sm_manager *m = serve_dir("unr", base, &saved);
  if (rest) {
    const char *b;
    CHECK_EQ_INT(call("GET", "/v1/models/unr", "", &b), 200);
    CHECK(strstr(b, "\"AVAILABLE\""));
    CHECK_CALL("POST", "/v1/models/unr:predict", "{\"signature_name\": \"square\", \"instances\": [1.0, 3.0]}", 200,
               "{\"predictions\": [1.0, 9.0]}");
    CHECK_FAIL("POST", "/v1/models/unr:predict", "{\"signature_name\": \"spectrogram\", \"instances\": [[1.0], [2.0]]}",
               501, "signature 'spectrogram': this runtime has no kernel for 1 node(s) this run needs: "
                    "ZeroOut (node 'spec')");
    CHECK_EQ_INT(call("GET", "/v1/models/unr/metadata", "", &b), 200);
    json_error_t e;
    json_t *j = json_loads(b, 0, &e);
    json_t *md = json_object_get(j, "metadata");
    json_t *sd = json_object_get(json_object_get(md, "signature_def"), "signature_def");
    CHECK(json_object_get(sd, "square") && json_object_get(sd, "spectrogram"));
    json_t *w = json_object_get(md, "warnings");
    CHECK(json_array_size(w) == 1);
    const char *w0 = json_string_value(json_array_get(w, 0));
    CHECK(w0 && strstr(w0, "signature 'spectrogram': this runtime has no kernel"));
    json_decref(j);
  }
  unserve(m, saved);
  sm__remove_tree(base);
}

int main(void) {
  unrunnable_signature();
  metadata_defaults();
  struct stat st;
  if (stat(FIX "/" M2, &st) != 0) {
    printf("skipped: %s absent (the unrunnable-signature case ran)\n", FIX);
    if (sm_test_failures) TEST_MAIN_END();
    return SM_TEST_SKIP;
  }
  sm_manager_options mo = {0};
  sm_manager *m = NULL, *m2 = NULL;
  CHECK_OK(sm__manager_new(&mo, &m));
  CHECK_OK(sm__manager_new(&mo, &m2));
  if (!m || !m2) TEST_MAIN_END();
  const int64_t v123[] = {123};
  const sm_version_label labels[] = {{"Version_Label", 123}};
  sm_model_config cfg[] = {
      {.name = M2, .base_path = FIX "/" M2, .policy = SM_POLICY_SPECIFIC, .versions = v123, .nversions = 1,
       .labels = labels, .nlabels = 1},
      {.name = "default", .base_path = FIX "/saved_model_half_plus_two_cpu", .latest_n = 1},
      {.name = "half_plus_two", .base_path = FIX "/saved_model_half_plus_two_cpu", .latest_n = 1},
      {.name = "half_plus_three", .base_path = FIX "/saved_model_half_plus_three", .latest_n = 1},
      {.name = "matrix", .base_path = FIX "/matrix_half_plus_two", .latest_n = 1},
  };
  /* labels may only name AVAILABLE versions: load first, then label (as TF Serving's test does) */
  cfg[0].nlabels = 0;
  CHECK_OK(sm__manager_set_config(m, cfg, (int)(sizeof cfg / sizeof *cfg)));
  cfg[0].nlabels = 1;
  CHECK_OK(sm__manager_set_config(m, cfg, (int)(sizeof cfg / sizeof *cfg)));
  sm_model_config cfg2 = {.name = M2, .base_path = FIX "/saved_model_half_plus_two_tf2_cpu", .latest_n = 1};
  CHECK_OK(sm__manager_set_config(m2, &cfg2, 1));
  sm_rest_options ro = {.manager = m};
  sm_rest *tf2 = NULL;
  CHECK_OK(sm__rest_new(&ro, &rest));
  ro.manager = m2;
  CHECK_OK(sm__rest_new(&ro, &tf2));
  if (rest && tf2) {
    unsupported_api_calls();
    predict_errors();
    predict_ok();
    classify_regress();
    get_status();
    get_metadata(tf2);
    metrics(m);
  }
  sm__rest_response_clear(&resp);
  sm__rest_free(rest);
  sm__rest_free(tf2);
  sm__manager_free(m);
  sm__manager_free(m2);
  TEST_MAIN_END();
}
