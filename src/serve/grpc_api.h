/* grpc_api.h - TF Serving's gRPC API without a transport: a method path and the request's
 * protobuf bytes in, a gRPC status code, a message and the response's protobuf bytes out, so
 * tests and the fuzzer call it in-process and src/grpc/ (gRPC core) only moves bytes.
 *
 *   /tensorflow.serving.PredictionService/{Predict, Classify, Regress, MultiInference, GetModelMetadata}
 *   /tensorflow.serving.ModelService/{GetModelStatus, HandleReloadConfigRequest}
 *
 * Semantics, status codes and messages are TF Serving's (prediction_service_impl.cc,
 * predict_util.cc, classifier.cc, regressor.cc, multi_inference.cc, get_model_metadata_impl.cc,
 * get_model_status_impl.cc, model_service_impl.cc). The model manager, batching and the signature
 * runs are REST's (sm_rest). Bytes that do not decode as the method's request message answer
 * INVALID_ARGUMENT. */
#ifndef SM_SERVE_GRPC_API_H
#define SM_SERVE_GRPC_API_H
#include <stddef.h>
#include <stdint.h>

#include "serve/rest.h"

/* gRPC's status codes (grpc/impl/codegen/status.h has the same numbers). */
enum {
  SM_GRPC_OK = 0,
  SM_GRPC_CANCELLED = 1,
  SM_GRPC_UNKNOWN = 2,
  SM_GRPC_INVALID_ARGUMENT = 3,
  SM_GRPC_DEADLINE_EXCEEDED = 4,
  SM_GRPC_NOT_FOUND = 5,
  SM_GRPC_ALREADY_EXISTS = 6,
  SM_GRPC_RESOURCE_EXHAUSTED = 8,
  SM_GRPC_FAILED_PRECONDITION = 9,
  SM_GRPC_OUT_OF_RANGE = 11,
  SM_GRPC_UNIMPLEMENTED = 12,
  SM_GRPC_INTERNAL = 13,
  SM_GRPC_UNAVAILABLE = 14,
  SM_GRPC_DATA_LOSS = 15
};

typedef struct sm_grpc_reply {
  int code;      /* SM_GRPC_* */
  char *message; /* "" on success; owned */
  uint8_t *body; /* the response message (code OK only); owned */
  size_t len;
  char model_name[256]; /* for logs and metrics ("" when the request named none) */
} sm_grpc_reply;

/* Handles one unary call. deadline_us: CLOCK_MONOTONIC microseconds (sm_monotonic_us), 0 none.
 * Never fails: errors become a code and a message (out of memory: RESOURCE_EXHAUSTED). */
void sm__grpc_api_call(sm_rest *r, const char *method, const uint8_t *req, size_t len, int64_t deadline_us,
                       sm_grpc_reply *out);
void sm__grpc_reply_clear(sm_grpc_reply *rep); /* NULL-safe */

/* Predict's answer (model spec, outputs[i] under aliases[i]) packed into out->body, out->len, when no
 * output is a string tensor: the bytes protobuf-c packs for the same PredictResponse. 1: packed,
 * 0: a string output (pack it with protobuf-c), -1: no memory. */
int sm__grpc_pack_predict_response(const char *name, const char *signature, int64_t version, const char *const *aliases,
                                   sm_tensor *const *outputs, int n, sm_grpc_reply *out);

/* The gRPC status code TF Serving's ToGRPCStatus gives for this library's code. */
int sm__grpc_code(sm_code c);

#endif
