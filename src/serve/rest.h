/* rest.h - TF Serving's REST API (http_rest_api_handler.cc) without a transport: a method, a path
 * and a body in, an HTTP status and a JSON body out, so tests call it in-process and http.c only
 * moves bytes.
 *
 *   GET  /v1/models/M[/versions/N | /labels/L]            model status
 *   GET  /v1/models/M[/versions/N | /labels/L]/metadata   signature_def map
 *   POST /v1/models/M[/versions/N | /labels/L]:predict    {"instances": ...} | {"inputs": ...}
 *   POST .../:classify, .../:regress                      {"examples": [...], "context": {...}}
 *
 * Errors are {"error": "..."} with TF Serving's messages and its status-code mapping. */
#ifndef SM_SERVE_REST_H
#define SM_SERVE_REST_H
#include <stddef.h>
#include <stdint.h>

#include "serve/batch.h"
#include "serve/json_tensor.h"
#include "serve/manager.h"

/* sm__batcher_submit's type (batch.h). */
typedef void (*sm_rest_submit_fn)(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                                  sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                                  sm_tensor **outputs, const sm_run_options *opts, sm_batch_done_fn done, void *arg);

typedef struct sm_rest_options {
  sm_manager *manager;     /* borrowed, required */
  sm_batcher *batcher;     /* borrowed; NULL: no server-side batching */
  /* sm__batcher_run, passed in so that rest.c links without the batcher (tests, no batching) */
  sm_status *(*batcher_run)(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                            sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                            sm_tensor **outputs, const sm_run_options *opts);
  /* sm__batcher_submit, likewise: with it a transport may park predict requests (sm__rest_start) */
  sm_rest_submit_fn batcher_submit;
  /* Per request (TF Serving's --rest_api_timeout_in_ms); <= 0: none. The model run stops at the
   * deadline (sm_run_options) and the answer is 504 DEADLINE_EXCEEDED. */
  int64_t timeout_ms;
  const char *const *tags; /* MetaGraph tags for metadata (NULL: {"serve"}) */
  int ntags;
  size_t max_run_bytes; /* each request's run memory budget (sm_run_options.max_run_bytes); 0: none */
} sm_rest_options;

typedef struct sm_rest sm_rest;
sm_status *sm__rest_new(const sm_rest_options *opts, sm_rest **out);
void sm__rest_free(sm_rest *r); /* NULL-safe */

typedef struct sm_rest_response {
  int http_status;     /* 200, 400, 404, ... */
  const char *code;    /* TF's code name: "OK", "INVALID_ARGUMENT", ... (static) */
  sm_jbuf body;        /* JSON, owned */
  char model_name[256]; /* for metrics ("" when the path named none) */
  const char *api;     /* "predict", "classify", "regress", "status", "metadata" or "" (static) */
} sm_rest_response;

/* Handles one request; never fails (errors become error bodies). body need not be NUL-terminated. */
void sm__rest_handle(sm_rest *r, const char *method, const char *path, const char *body, size_t len,
                    sm_rest_response *out);
void sm__rest_response_clear(sm_rest_response *resp); /* frees the body */

/* Parked requests, for a transport that can set a request aside instead of holding a thread while
 * its batch forms and runs (http.c suspends the connection). sm__rest_can_park: whether the
 * request is a predict that would go to the batcher (a batcher_submit was given). sm__rest_start
 * handles it as sm__rest_handle would, and calls wake(arg) exactly once when the answer can be had:
 * from a batch thread, or before it returns. It returns NULL when out is complete already (a
 * request that cannot be parked, answered as sm__rest_handle), else the pending request, which
 * sm__rest_finish (after wake) turns into out and frees. */
typedef struct sm_rest_pending sm_rest_pending;
int sm__rest_can_park(const sm_rest *r, const char *method, const char *path);
sm_rest_pending *sm__rest_start(sm_rest *r, const char *method, const char *path, const char *body, size_t len,
                                void (*wake)(void *), void *arg, sm_rest_response *out);
void sm__rest_finish(sm_rest_pending *p, sm_rest_response *out);

/* TF Serving's ToHTTPStatusCode for this library's codes. */
int sm__rest_http_status(sm_code code);
/* Whether the REST handler owns the path (TF Serving's "(?i)/v1/.*"). */
int sm__rest_path_is_api(const char *path);

/* ---- the engine, shared with the gRPC API (grpc_api.c) ---- */
sm_manager *sm__rest_manager(const sm_rest *r);
const char *const *sm__rest_tags(const sm_rest *r, int *n);
/* Runs signature `key` of sv: inputs by alias, outputs `outs` (outputs owned by the caller), through
 * the batcher when there is one; UNIMPLEMENTED for a signature this runtime cannot run. */
sm_status *sm__rest_run(sm_rest *r, sm_servable *sv, const char *key, const char *const *aliases,
                        sm_tensor *const *inputs, int nin, const sm_tensor_info *outs, int nout, sm_tensor **outputs,
                        const sm_run_options *ro);
/* Classify (classify = 1) or regress over n serialized tf.Examples with TF Serving's checks of
 * the signature and of its outputs. On success: n, and classes / scores (k per example; either
 * may be NULL) or values (n floats), all owned by t[]; free with sm__examples_outputs_clear. */
typedef struct sm_examples_outputs {
  int64_t n, k;
  const sm_tensor *classes, *scores;
  const float *values;
  sm_tensor *t[2];
} sm_examples_outputs;
sm_status *sm__rest_run_examples(sm_rest *r, sm_servable *sv, const char *key, int classify,
                                 uint8_t *const *examples, const size_t *lens, int64_t n, const sm_run_options *ro,
                                 sm_examples_outputs *res);
void sm__examples_outputs_clear(sm_examples_outputs *res); /* NULL-safe */

#endif
