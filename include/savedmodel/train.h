/* train.h - train a Keras-style Sequential model in C and export it as a SavedModel.
 *
 *   sm_seq *m;
 *   int64_t in[] = {28, 28, 1};
 *   sm_seq_new(3, in, &m);
 *   sm_seq_conv2d(m, 32, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU);
 *   sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID);
 *   sm_seq_flatten(m);
 *   sm_seq_dense(m, 64, SM_ACT_RELU);
 *   sm_seq_dense(m, 10, SM_ACT_NONE);
 *   sm_optimizer opt = sm_adam_defaults();                 // Keras's defaults
 *   sm_loss loss = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};   // from_logits
 *   sm_seq_compile(m, &opt, &loss, 42);                    // weights initialised as Keras does
 *   sm_fit_options fo = sm_fit_defaults();  fo.epochs = 5;
 *   sm_seq_fit(m, x_train, y_train, &fo, NULL);
 *   sm_seq_evaluate(m, x_test, y_test, 32, &loss_value, &accuracy);
 *   sm_seq_export(m, "export/1", &export_options);
 *
 * Layers take and give float32 tensors with a leading batch dimension; images are NHWC. Layer
 * names follow Keras ("conv2d", "max_pooling2d", "flatten", "dense", "dense_1", ...), and so do
 * the variables' names in the export. Forward passes run through the runtime's own kernels'
 * compute (src/ops/nn_raw.h), so a trained model predicts here exactly as its export later runs.
 * A fixed seed reproduces a run: initial weights, shuffling and dropout masks. */
#ifndef SAVEDMODEL_TRAIN_H
#define SAVEDMODEL_TRAIN_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_seq sm_seq;

enum { SM_ACT_NONE = 0, SM_ACT_RELU = 1, SM_ACT_SOFTMAX = 2 };
enum { SM_PAD_VALID = 0, SM_PAD_SAME = 1 };

/* ---- the model -------------------------------------------------------------------------------- */
/* A model whose input is [batch, in_shape...] (rank 1..3 without the batch). Caller owns *out. */
SM_API sm_status *sm_seq_new(int rank, const int64_t *in_shape, sm_seq **out);
SM_API void sm_seq_free(sm_seq *m); /* NULL-safe */

/* Layers, appended in order; each checks it fits the previous layer's output shape. */
SM_API sm_status *sm_seq_conv2d(sm_seq *m, int filters, int kh, int kw, int sh, int sw, int padding, int activation);
SM_API sm_status *sm_seq_max_pool2d(sm_seq *m, int ph, int pw, int sh, int sw, int padding);
SM_API sm_status *sm_seq_flatten(sm_seq *m);
SM_API sm_status *sm_seq_dense(sm_seq *m, int units, int activation);
SM_API sm_status *sm_seq_dropout(sm_seq *m, float rate);
SM_API sm_status *sm_seq_activation(sm_seq *m, int activation);

/* A model from a Keras model.to_json() file (src/train/keras.c): Sequential, or Functional with one
 * chain of layers; layers InputLayer, Conv2D (strides, padding, activation, use_bias),
 * MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, BatchNormalization (last axis),
 * Dropout, Flatten, Reshape, Dense, Activation, ReLU, LeakyReLU, Softmax, Rescaling; activations
 * linear, relu, softmax. Layer names are Keras's. Anything else is an error naming the layer and
 * the option. The model is not compiled. Caller owns *out. */
SM_API sm_status *sm_seq_from_keras(const char *path, sm_seq **out);

/* Keras's summary(): one line per layer (name, output shape, params) and the totals, into a
 * malloc'ed string the caller frees. */
SM_API char *sm_seq_summary(const sm_seq *m);

/* ---- losses and optimizers -------------------------------------------------------------------- */
/* Categorical cross-entropy takes float32 one-hot (or soft) targets [n, classes] as y; sparse
 * takes class ids. */
enum { SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 0, SM_LOSS_MSE = 1, SM_LOSS_CATEGORICAL_CROSSENTROPY = 2 };
typedef struct sm_loss {
  int kind;
  int from_logits; /* cross-entropy only: the model's outputs are logits, not probabilities */
} sm_loss;

enum { SM_OPT_SGD = 0, SM_OPT_ADAM = 1, SM_OPT_ADAMW = 2, SM_OPT_RMSPROP = 3 };
/* Learning-rate schedules, as keras.optimizers.schedules computes them from the step count
 * (iterations) in float32: exponential lr * decay_rate^(step / decay_steps); cosine
 * lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha). */
enum { SM_LR_CONSTANT = 0, SM_LR_EXPONENTIAL = 1, SM_LR_COSINE = 2 };
typedef struct sm_optimizer {
  int kind;
  float learning_rate; /* SGD 0.01, Adam / AdamW / RMSprop 0.001 (the initial one under a schedule) */
  float momentum;      /* SGD, RMSprop: 0 */
  int nesterov;        /* SGD: 0 */
  float beta_1, beta_2, epsilon; /* Adam, AdamW: 0.9, 0.999; epsilon 1e-7 (RMSprop too) */
  float weight_decay;  /* AdamW: 0.004 (w -= w * weight_decay * lr before each step) */
  float rho;           /* RMSprop: 0.9 */
  int centered;        /* RMSprop: 0 */
  int schedule;        /* SM_LR_*: constant */
  int staircase;       /* exponential: floor(step / decay_steps) (Keras's staircase=True); 0 */
  int64_t decay_steps; /* exponential, cosine: > 0 */
  float decay_rate;    /* exponential */
  float alpha;         /* cosine: 0 */
} sm_optimizer;
SM_API sm_optimizer sm_sgd_defaults(void);
SM_API sm_optimizer sm_adam_defaults(void);
SM_API sm_optimizer sm_adamw_defaults(void);
SM_API sm_optimizer sm_rmsprop_defaults(void);
/* Sets o's schedule from "exponential:DECAY_STEPS:DECAY_RATE[:staircase]" or "cosine:DECAY_STEPS[:ALPHA]"
 * (the CLI's --lr_schedule), or "constant". */
SM_API sm_status *sm_optimizer_set_schedule(sm_optimizer *o, const char *spec);
/* The optimizer (with its learning-rate schedule) and the loss of a model.to_json() file's
 * compile_config, present when the model was compiled first: *has_opt / *has_loss say which were
 * there. SGD, Adam, AdamW, RMSprop; ExponentialDecay, CosineDecay; sparse / categorical
 * cross-entropy, MSE. Other settings are an error naming them. */
SM_API sm_status *sm_keras_compile_config(const char *path, sm_optimizer *opt, int *has_opt, sm_loss *loss,
                                          int *has_loss);
/* Keras's defaults for a Keras name ("sgd", "adam", "adamw", "rmsprop"); -1 kind when unknown. */
SM_API sm_optimizer sm_optimizer_defaults(const char *name);

/* Fixes the loss and optimizer and initialises the weights as Keras does (kernels glorot_uniform,
 * biases zeros) from `seed`. Layers cannot be added after this. */
SM_API sm_status *sm_seq_compile(sm_seq *m, const sm_optimizer *opt, const sm_loss *loss, uint64_t seed);

/* ---- fit / evaluate / predict ------------------------------------------------------------------- */
/* Reported after every step (and once more at the end of each epoch with step == steps) so that a
 * caller can draw a progress bar; `val_*` are NaN unless this is the end of an epoch with a
 * validation split. Return non-zero to stop training early. */
typedef struct sm_fit_progress {
  int epoch, epochs;      /* 1-based */
  int64_t step, steps;    /* 1-based, steps per epoch */
  double loss, accuracy;  /* running means over the epoch so far, as Keras shows them */
  double val_loss, val_accuracy;
  double elapsed_s;       /* since the epoch began */
} sm_fit_progress;
typedef int (*sm_fit_callback)(const sm_fit_progress *p, void *ctx);

typedef struct sm_fit_options {
  int epochs;             /* 1 */
  int64_t batch_size;     /* 32 */
  int shuffle;            /* 1 */
  uint64_t seed;          /* shuffling and dropout; 0 = the compile seed */
  float validation_split; /* 0: the last fraction of the data, before shuffling, as Keras takes it */
  int num_threads;        /* 0 = one per core */
  sm_fit_callback callback;
  void *callback_ctx;
  /* SM_DEVICE_CPU (0) or SM_DEVICE_GPU (savedmodel/model.h): the GPU trains every layer kind
   * (softmax only as the last layer) with sparse cross-entropy, any optimizer; other losses, a
   * softmax inside the network and MPI are SM_UNIMPLEMENTED naming them. Progress is reported every 50 steps and at each epoch's end;
   * dropout masks come from the GPU's own generator (not the CPU's stream). */
  int device;
} sm_fit_options;
SM_API sm_fit_options sm_fit_defaults(void);

/* x: float32 [n, in_shape...]; y: int32 or int64 [n] class ids for sparse cross-entropy (each in
 * [0, classes) or an error naming the first bad one), float32 [n, outputs...] for MSE and
 * categorical cross-entropy. */
SM_API sm_status *sm_seq_fit(sm_seq *m, const sm_tensor *x, const sm_tensor *y, const sm_fit_options *opts);
/* Mean loss and accuracy over x (accuracy NaN for MSE). */
SM_API sm_status *sm_seq_evaluate(sm_seq *m, const sm_tensor *x, const sm_tensor *y, int64_t batch_size, double *loss,
                                  double *accuracy);
/* The model's outputs for x, float32 [n, outputs...]; the caller owns *out. */
SM_API sm_status *sm_seq_predict(sm_seq *m, const sm_tensor *x, int64_t batch_size, sm_tensor **out);

/* Optimizer steps taken so far (Keras's optimizer.iterations). */
SM_API int64_t sm_seq_iterations(const sm_seq *m);

/* ---- export and resume (src/train/export.c) ------------------------------------------------- */
typedef struct sm_export_options {
  /* Label names, one per class, in class-id order (NULL: "0", "1", ...). Written as the asset
   * labels.txt and used by the classify signature. */
  const char *const *labels;
  int nlabels;
  int probabilities; /* serving_default outputs softmax probabilities (1) or the raw outputs (0) */
} sm_export_options;

/* Writes export_dir (which must not exist) atomically as a SavedModel TensorFlow loads:
 *  - tag-set {serve}: signature `serving_default` (predict; input "inputs" float32
 *    [-1, in_shape...], output "outputs"), and `classify` (classify method; input "inputs" =
 *    serialized tf.Examples with feature "inputs" holding the flattened image; outputs "classes"
 *    = the label strings, "scores" = their probabilities, [batch, classes] each, as TensorFlow's
 *    canned classifiers export them);
 *  - tag-set {train}: the same graph plus the optimizer's state variables, so that training
 *    resumes where it stopped (sm_seq_resume);
 *  - assets/labels.txt, and the architecture and training settings under assets.extra/. */
SM_API sm_status *sm_seq_export(const sm_seq *m, const char *export_dir, const sm_export_options *opts);

/* Rebuilds a compiled model, its weights and its optimizer state from an export written by
 * sm_seq_export, so that fit continues from where it stopped. Caller owns *out. */
SM_API sm_status *sm_seq_resume(const char *export_dir, sm_seq **out);

/* ---- data-parallel training over MPI (src/train/dist.c) ------------------------------------------
 * Under `mpirun -np N` every rank runs the same program; sm_seq_fit then splits each global batch
 * (batch_size) into N contiguous shards, averages the gradients over the ranks (MPI_Iallreduce per
 * layer, started as the backward pass finishes the layer), starts every rank from rank 0's weights,
 * optimizer state and RNG, and reports the global batch's metrics to rank 0's callback only (a
 * callback's request to stop is not honoured there). Nothing changes for a process of its own. */

/* Under mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE set) opens libmpi (lazily: the library
 * does not link it), initialises MPI and sets *rank and *size; otherwise *rank = 0, *size = 1 and
 * nothing is opened. An error when launched under mpirun without MPI support or libmpi. timeout_s
 * (> 0) bounds every collective wait: past it the wait fails naming the ranks that did not answer. */
SM_API sm_status *sm_dist_init(double timeout_s, int *rank, int *size);
/* Waits (within the timeout) until every rank has called it. */
SM_API sm_status *sm_dist_barrier(void);
/* Prints msg to stderr and ends the whole job (MPI_Abort; exit(1) outside MPI). Does not return. */
SM_API void sm_dist_abort(const char *msg);
SM_API void sm_dist_finalize(void); /* no-op outside MPI */
/* Seconds this process spent waiting in collectives since sm_dist_init. */
SM_API double sm_dist_wait_seconds(void);
/* 1 when a fit under MPI has kept the weights in one copy that every rank maps (all ranks on one
 * node, shared memory allowed: see src/train/dist_weights.c) instead of exchanging them; else 0. */
SM_API int sm_dist_shared_weights(void);
/* Gathers n doubles from every rank on rank 0: all (size * n on rank 0, rank r's at all + r * n;
 * untouched elsewhere) within the timeout. Outside MPI copies mine to all. */
SM_API sm_status *sm_dist_gather(const double *mine, int n, double *all);

/* Where the last epoch of the last sm_seq_fit spent its time on this process (rank): its training
 * steps (gathering the batch, forward, backward, summing the gradients over the ranks, the
 * optimizer step; not validation nor the callback), as wall and as this process's CPU seconds, and
 * the part of them spent waiting in MPI collectives (0 in a process of its own). */
typedef struct sm_fit_timing {
  int64_t steps;  /* optimizer steps in the epoch */
  int64_t images; /* samples of the global batches in those steps (all ranks') */
  double step_s, wait_s;
  double step_cpu_s, wait_cpu_s;
} sm_fit_timing;
SM_API sm_status *sm_seq_fit_timing(const sm_seq *m, sm_fit_timing *out);

#ifdef __cplusplus
}
#endif
#endif
