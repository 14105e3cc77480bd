/* json_tensor.h - TensorFlow Serving's JSON <-> tensor codec (tensorflow_serving/util/json_tensor.cc).
 *
 * Requests: predict bodies in row format ({"instances": [...]}: every element is one batch item, the
 * batch dimension is added) or columnar format ({"inputs": ...}), DT_STRING values as JSON strings
 * or {"b64": "..."}; classify/regress bodies ({"examples": [...], "context": {...}}) become
 * serialized tf.Examples. Parsing accepts what TF Serving's rapidjson setup accepts: NaN, Infinity
 * and -Infinity as numbers, any nesting depth (the parser keeps its own stack), and refuses
 * anything but whitespace after the top-level value. Error messages are TF Serving's. Decoding
 * memory is bounded by the body's size (sm__json_dom_limit).
 *
 * Responses: {"predictions": ...} / {"outputs": ...} / {"results": ...} / {"error": ...} written
 * with TF Serving's layout and number formatting (floats in the fewest of 6 or 9 digits that read
 * back, "NaN", "Infinity"; outputs whose alias ends in "_bytes" as {"b64": ...}). */
#ifndef SM_SERVE_JSON_TENSOR_H
#define SM_SERVE_JSON_TENSOR_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

enum { SM_JSON_INVALID = 0, SM_JSON_ROW = 1, SM_JSON_COLUMNAR = 2 };

/* One input of the requested signature (TF Serving's tensorinfo_map entry). */
typedef struct sm_json_input {
  const char *alias;
  int dtype;
} sm_json_input;

/* Gives the inputs of signature `signature_name` ("" when the body names none), sorted by alias;
 * the array must stay valid until sm__json_parse_predict returns or fn is called again: it may be
 * called twice for one body (the fast path asks, declines, the DOM path asks again), so a second
 * call must release what the first kept. An error is returned as is. */
typedef sm_status *(*sm_json_inputs_fn)(void *ctx, const char *signature_name, const sm_json_input **inputs,
                                        int *n);

/* A decoded predict request. Everything is owned by it (sm__predict_request_clear). */
typedef struct sm_predict_request {
  char *signature_name; /* "" when absent */
  int format;           /* SM_JSON_ROW or SM_JSON_COLUMNAR */
  int n;
  char **aliases;       /* sorted */
  sm_tensor **tensors;
} sm_predict_request;

/* Decodes a predict body of `len` bytes (need not be NUL-terminated) as FillPredictRequestFromJson
 * does. All errors are INVALID_ARGUMENT except a dtype the codec cannot produce (UNIMPLEMENTED) and
 * whatever `fn` returns. On error *out is left cleared. This is the entry point to fuzz. */
sm_status *sm__json_parse_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx,
                                 sm_predict_request *out);
void sm__predict_request_clear(sm_predict_request *r); /* NULL-safe, leaves *r zeroed */
/* The two paths sm__json_parse_predict tries in turn. The fast one (json_fast.c) reads a body for
 * one DT_FLOAT/DT_DOUBLE input made only of numbers straight into the tensor and returns 1, or
 * returns 0 with *out untouched for anything else; the DOM one decodes every body. */
int sm__json_fast_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx, sm_predict_request *out);
sm_status *sm__json_dom_predict(const char *body, size_t len, sm_json_inputs_fn fn, void *ctx,
                                sm_predict_request *out);

/* A decoded classify/regress request: one serialized tf.Example per element of "examples", the
 * "context" features merged in first (an example's own feature wins, as protobuf merging does). */
typedef struct sm_examples_request {
  char *signature_name; /* "" when absent */
  int n;
  uint8_t **examples;
  size_t *lens;
} sm_examples_request;
sm_status *sm__json_parse_examples(const char *body, size_t len, sm_examples_request *out);
void sm__examples_request_clear(sm_examples_request *r); /* NULL-safe */

/* ---- writing ---- */
/* A growing output buffer. `oom` is set when an allocation failed (the content is then cut). */
typedef struct sm_jbuf {
  char *p;
  size_t len, cap;
  int oom;
} sm_jbuf;
void sm__jbuf_free(sm_jbuf *b); /* frees p, leaves *b zeroed */
void sm__jbuf_put(sm_jbuf *b, const char *s, size_t n);
/* Room for n bytes (and a NUL) in one allocation of that size, as for a body of known length. */
int sm__jbuf_reserve_exact(sm_jbuf *b, size_t n);
void sm__jbuf_puts(sm_jbuf *b, const char *s);
/* A JSON string literal with rapidjson's escapes (bytes >= 0x80 pass through). */
void sm__jbuf_str(sm_jbuf *b, const char *s, size_t n);
/* n bytes as standard base64 with padding (no quotes). */
void sm__jbuf_base64(sm_jbuf *b, const unsigned char *s, size_t n);

/* MakeJsonFromTensors: names[i] -> tensors[i], names sorted. Row format needs every tensor to have
 * the same first dimension. */
sm_status *sm__json_write_tensors(sm_jbuf *b, const char *const *names, sm_tensor *const *tensors, int n,
                                 int format);
/* MakeJsonFromClassificationResult: n examples x k classes; labels (n*k, may be NULL: "") and
 * scores (n*k, may be NULL: 0). */
sm_status *sm__json_write_classification(sm_jbuf *b, int64_t n, int64_t k, const sm_tensor *labels,
                                        const float *scores);
/* MakeJsonFromRegressionResult. */
sm_status *sm__json_write_regression(sm_jbuf *b, const float *values, int64_t n);
/* MakeJsonFromStatus: {"error": "msg"}. */
void sm__json_write_error(sm_jbuf *b, const char *msg);

/* TF Serving's decimal text for a float (single = 1) or double: "2.5", "3.0", "9e+06", "NaN",
 * "-Infinity". Returns the length written into buf (cap >= 32). */
int sm__json_format_decimal(double v, int single, char *buf, size_t cap);

/* TensorFlow's DataTypeString: "float", "int32", "string", ... ("unknown" when none). */
const char *sm__json_dtype_string(int dtype);

#endif
