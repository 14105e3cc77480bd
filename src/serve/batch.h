/* batch.h - server-side batching (TF Serving's --enable_batching): concurrent predict requests
 * for the same servable and signature are concatenated along dimension 0, run once, and the
 * outputs split back, as TF Serving's BatchingSession does.
 *
 * Parameters are those of TF Serving's batching_parameters_file (BatchingParameters text proto):
 * max_batch_size, batch_timeout_micros, num_batch_threads, max_enqueued_batches,
 * allowed_batch_sizes (a batch is padded up to the next allowed size), pad_variable_length_inputs.
 * Requests with a rank-0 input run alone; differing dtypes or ranks (or dims past 0 without
 * padding) go to separate batches. */
#ifndef SM_SERVE_BATCH_H
#define SM_SERVE_BATCH_H
#include <stdint.h>

#include "savedmodel/status.h"
#include "savedmodel/tensor.h"
#include "serve/manager.h"

typedef struct sm_batching_params {
  int64_t max_batch_size;       /* 32 */
  int64_t batch_timeout_micros; /* 1000 */
  int num_batch_threads;        /* 1 per core */
  int64_t max_enqueued_batches; /* 100; past it: UNAVAILABLE "The batch scheduling queue to
                                 * which this task was submitted is full" */
  const int64_t *allowed_batch_sizes;
  int nallowed;
  int pad_variable_length_inputs; /* pad dims 1.. to the batch's max with each input's first element
                                   * (TF Serving's AddPadding); off: differing shapes batch apart */
} sm_batching_params;

/* Reads a BatchingParameters text file (fields as TF Serving: `max_batch_size { value: 32 }`). */
sm_status *sm__batching_params_read(const char *path, sm_batching_params *out, int64_t **allowed_storage);

typedef struct sm_batcher sm_batcher;
sm_status *sm__batcher_new(const sm_batching_params *p, sm_batcher **out);
void sm__batcher_free(sm_batcher *b); /* NULL-safe; finishes queued work first */
/* From now on batches close without waiting for batch_timeout_micros (the server is stopping:
 * its requests in flight are answered at once). NULL-safe. */
void sm__batcher_hurry(sm_batcher *b);
/* Batches the batch threads have run so far, and the tasks (requests) they held. */
void sm__batcher_stats(sm_batcher *b, int64_t *batches, int64_t *tasks);

/* As sm_model_run on the servable's model (inputs borrowed, outputs owned by the caller), but
 * possibly merged with other callers' requests. Blocks until this request's outputs are ready.
 * opts (may be NULL): its deadline bounds the request. A request whose deadline has passed when
 * its batch is taken from the queue is answered DEADLINE_EXCEEDED ("Run() timeout exceeded while
 * waiting in batching queue") without running; a merged batch runs under the latest deadline of
 * its requests, as TF Serving's BatchingSession. The cancel flag is honoured only by requests
 * that run alone (a shared run is not stopped for one caller). Queue full: UNAVAILABLE. */
sm_status *sm__batcher_run(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                          sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                          sm_tensor **outputs, const sm_run_options *opts);

/* As sm__batcher_run, without waiting: for a transport that parks the request (http.c suspends
 * its connection) instead of holding a thread while the batch forms and runs. done(arg, status)
 * is called exactly once when the outputs are ready or the request failed (status owned by the
 * callee, NULL on success): from a batch thread, from another caller's thread, or from this call
 * before it returns (a request that runs alone, one refused, or with batch_timeout_micros 0 a
 * batch this caller runs). inputs, aliases and outputs must stay valid until then. */
typedef void (*sm_batch_done_fn)(void *arg, sm_status *status);
void sm__batcher_submit(sm_batcher *b, sm_servable *sv, const char *key, const char *const *in_aliases,
                        sm_tensor *const *inputs, int nin, const char *const *out_aliases, int nout,
                        sm_tensor **outputs, const sm_run_options *opts, sm_batch_done_fn done, void *arg);

#endif
