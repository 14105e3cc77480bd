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

typedef struct sm_rest_options {
  sm_manager *manager;     /* borrowed, required */
  sm_batcher *batcher;     /* borrowed; NULL: no server-side batching */
  /* sm__batcher_run, passed in so that rest.c links without the batcher (tests, no batching) */
  sm_status *(*batcher_run)(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                            sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                            sm_tensor **outputs, const sm_run_options *opts);
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

/* TF Serving's ToHTTPStatusCode for this library's codes. */
int sm__rest_http_status(sm_code code);
/* Whether the REST handler owns the path (TF Serving's "(?i)/v1/.*"). */
int sm__rest_path_is_api(const char *path);

#endif
