/* seq.h - the inside of an sm_seq, shared by the trainer (seq.c, grad.c, optim.c, fit.c) and
 * the exporter (export.c). The layout is the contract between them: the exporter reads the
 * layers, their weights and the optimizer slots; sm_seq_resume fills them back in. */
#ifndef SM_TRAIN_SEQ_H
#define SM_TRAIN_SEQ_H
#include <stdint.h>

#include "savedmodel/train.h"

enum {
  SM_LAYER_CONV2D = 0,
  SM_LAYER_MAXPOOL2D = 1,
  SM_LAYER_FLATTEN = 2,
  SM_LAYER_DENSE = 3,
  SM_LAYER_DROPOUT = 4,
  SM_LAYER_ACTIVATION = 5
};

#define SM_SEQ_MAX_LAYERS 64
#define SM_SEQ_NAME_MAX 64

/* One layer. Shapes exclude the batch dimension. */
typedef struct sm__layer {
  int kind;
  char name[SM_SEQ_NAME_MAX]; /* Keras's: conv2d, conv2d_1, max_pooling2d, flatten, dense, ... */
  int activation;             /* SM_ACT_* (conv2d, dense, activation layers) */
  int units;                  /* dense units / conv filters */
  int kh, kw, sh, sw;         /* conv kernel / pool window, strides */
  int padding;                /* SM_PAD_* */
  float rate;                 /* dropout */
  int in_rank, out_rank;
  int64_t in_shape[3], out_shape[3];
  /* Weights (NULL for layers without): conv kernel HWIO [kh,kw,cin,filters], dense kernel
   * [in,units]; bias [units]. float32, owned by the layer. */
  sm_tensor *kernel, *bias;
  /* Optimizer slots for kernel and bias, same shapes: Adam m (slot 0) and v (slot 1); SGD with
   * momentum uses slot 0 only. NULL until compile (and when the optimizer keeps none). */
  sm_tensor *kernel_slot[2], *bias_slot[2];
} sm__layer;

struct sm_seq {
  int in_rank;
  int64_t in_shape[3];
  sm__layer layers[SM_SEQ_MAX_LAYERS];
  int nlayers;
  int compiled;
  sm_optimizer opt;
  sm_loss loss;
  uint64_t seed;       /* compile seed */
  int64_t iterations;  /* optimizer steps taken (Adam's bias correction uses it) */
  int64_t epochs_done; /* epochs completed over all fits (resume continues the count) */
  /* Trainer-private state (scratch buffers, thread pool, RNG) lives behind this pointer. */
  void *priv;
};

#endif
