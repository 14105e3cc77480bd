/* export_internal.h - what sm_seq_export (export.c) and sm_seq_resume (resume.c) agree on: the
 * names of the variables in an export and the training-state file under assets.extra/.
 *
 * The state file is plain text, one record per line, "key value..." or "key name=value ...":
 *
 *   libsavedmodel-train 1
 *   input 28 28 1
 *   layer conv2d name=conv2d filters=32 kernel=3x3 strides=1x1 padding=valid activation=relu
 *   layer max_pooling2d name=max_pooling2d pool=2x2 strides=2x2 padding=valid
 *   layer flatten name=flatten
 *   layer dense name=dense units=64 activation=relu
 *   layer dropout name=dropout rate=0.5
 *   layer activation name=activation activation=softmax
 *   layer batch_normalization name=bn momentum=0.99 epsilon=0.001 center=1 scale=1
 *   layer average_pooling2d name=a pool=2x2 strides=2x2 padding=same
 *   layer global_average_pooling2d name=g
 *   layer rescaling name=r scale=0.00392156886 offset=0
 *   layer leaky_re_lu name=l negative_slope=0.300000012
 *   layer reshape name=r shape=7x7x16
 *   (conv2d and dense end in " use_bias=0" when they have no bias; names are Keras's)
 *   optimizer adam learning_rate=0.001 beta_1=0.9 beta_2=0.999 epsilon=1e-07
 *   optimizer sgd learning_rate=0.01 momentum=0 nesterov=0
 *   optimizer adamw (adam's fields) weight_decay=0.004
 *   optimizer rmsprop learning_rate=0.001 rho=0.9 momentum=0 epsilon=1e-07 centered=0
 *     (any optimizer line may end in schedule=exponential:STEPS:RATE or schedule=cosine:STEPS:ALPHA)
 *   loss sparse_categorical_crossentropy from_logits=1       (or: loss mse)
 *   seed 42
 *   iterations 1875
 *   epochs_done 1
 *   end
 *
 * Floats are written with 9 significant digits, so they read back bit for bit. */
#ifndef SM_TRAIN_EXPORT_INTERNAL_H
#define SM_TRAIN_EXPORT_INTERNAL_H

#include <stddef.h>

#include "train/seq.h"

#define SM_TRAIN_STATE_FILENAME "libsavedmodel_train.txt" /* in assets.extra/ */
#define SM_TRAIN_STATE_MAGIC "libsavedmodel-train"
#define SM_TRAIN_STATE_VERSION 1
#define SM_TRAIN_LABELS_FILENAME "labels.txt" /* in assets/ */
/* The training state's ranges: an export past them is refused by sm_seq_resume (a count near
 * INT64_MAX would overflow the epochs numbered on from it). 2^30 epochs, 2^53 steps (where a step
 * count stops being exact as a double, which Adam's bias correction takes it as). */
#define SM_TRAIN_MAX_EPOCHS ((int64_t)1 << 30)
#define SM_TRAIN_MAX_ITERATIONS ((int64_t)1 << 53)
/* Keras 3 puts a Sequential model's weights under the model's name scope. */
#define SM_TRAIN_MODEL_SCOPE "sequential"

/* "adam", "adamw", "rmsprop" or "sgd": the optimizer's Keras name, the prefix of its variables. */
const char *sm__export_optimizer_name(int kind);
/* Writes the variable names Keras 3 gives into buf:
 *   weight:  "sequential/<layer>/<kernel|bias>"
 *   slot:    "<optimizer>/sequential_<layer>_<kernel|bias>_<momentum|velocity|average_gradient>"
 * `what` is "kernel" or "bias" (batch norm: "gamma", "beta"); the slot's name is
 * sm__opt_slot_name's. */
void sm__export_weight_name(char *buf, size_t cap, const char *layer, const char *what);
/* "kernel"/"bias", or batch norm's "gamma"/"beta" (bias = 0/1): the weight's Keras name. */
const char *sm__export_what(const sm__layer *l, int bias);
void sm__export_slot_name(char *buf, size_t cap, const sm_optimizer *o, const char *layer, const char *what, int slot);

#endif
