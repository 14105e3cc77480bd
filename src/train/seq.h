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
  SM_LAYER_ACTIVATION = 5,
  /* from Keras configs (src/train/keras.c); internal constructors in train_internal.h */
  SM_LAYER_BATCHNORM = 6,  /* over the last axis; kernel = gamma, bias = beta, moving_* below */
  SM_LAYER_AVGPOOL2D = 7,  /* TF's AvgPool: SAME divides by the window's in-bounds count */
  SM_LAYER_GAP2D = 8,      /* GlobalAveragePooling2D: [h, w, c] -> [c] */
  SM_LAYER_RESCALING = 9,  /* y = x * scale + offset */
  SM_LAYER_LEAKY_RELU = 10, /* y = x > 0 ? x : x * slope (Keras's negative_slope, in `scale`) */
  SM_LAYER_RESHAPE = 11    /* same elements, out_shape (an alias like flatten) */
};
#define SM_LAYER_KINDS 12
/* The layers whose output is their input's buffer. */
#define SM_LAYER_IS_ALIAS(k) ((k) == SM_LAYER_FLATTEN || (k) == SM_LAYER_RESHAPE)

#define SM_SEQ_MAX_LAYERS 64
#define SM_OPT_SLOTS 3
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
  float scale, offset;        /* rescaling; leaky relu's slope in scale */
  float momentum, epsilon;    /* batch normalization */
  int center, use_scale;      /* batch normalization: beta / gamma trained (else fixed 0 / 1) */
  int no_bias;                /* conv2d / dense with use_bias=False: the bias stays 0 */
  int in_rank, out_rank;
  int64_t in_shape[3], out_shape[3];
  /* Weights (NULL for layers without): conv kernel HWIO [kh,kw,cin,filters], dense kernel
   * [in,units]; bias [units]. float32, owned by the layer. */
  sm_tensor *kernel, *bias;
  /* Optimizer slots for kernel and bias, same shapes (sm__opt_slot_name says which it keeps):
   * Adam(W) m (slot 0) and v (slot 1); SGD with momentum slot 0; RMSprop velocity (0), momentum
   * (1, when momentum > 0), average gradient (2, when centered). NULL where none is kept. */
  sm_tensor *kernel_slot[SM_OPT_SLOTS], *bias_slot[SM_OPT_SLOTS];
  /* Batch normalization's moving statistics [c] (not trained by the optimizer: updated by each
   * training step's batch statistics, used at inference and exported). */
  sm_tensor *moving_mean, *moving_var;
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
