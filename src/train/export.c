/* export.c - sm_seq_export: a trained Sequential model as a SavedModel TensorFlow loads.
 *
 * Two MetaGraphs over one variables bundle. {train} comes first, because the builder saves the
 * variables of the first MetaGraph: the model's weights plus the optimizer's state (Keras 3
 * names: adam/iteration, adam/sequential_dense_kernel_momentum, ...). {serve} holds the same
 * graph without the optimizer. Each has `serving_default` (predict over the float images) and,
 * for classifiers, `classify` (serialized tf.Examples -> ParseExampleV2 -> the same layers over
 * the same variables -> softmax scores, and the label strings from the labels.txt vocabulary
 * tiled per row, as TensorFlow's canned classifiers export them). The architecture and the
 * compile/fit settings go to assets.extra/ as text (format in export_internal.h).
 *
 * The export is staged in a hidden sibling directory and renamed into place, so export_dir
 * either does not exist or holds a complete export. The staging directory's name holds the
 * exporting pid (".tmp-export-NAME-PID"): an export removes those a killed process left, and
 * never one whose process is alive. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "savedmodel/builder.h"
#include "savedmodel/constants.h"
#include "train/export_internal.h"
#include "train/train_internal.h"

#define TRY(x)        \
  do {                \
    s = (x);          \
    if (s) goto done; \
  } while (0)

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

const char *sm__export_optimizer_name(int kind) {
  return kind == SM_OPT_ADAM ? "adam" : kind == SM_OPT_ADAMW ? "adamw" : kind == SM_OPT_RMSPROP ? "rmsprop" : "sgd";
}

void sm__export_weight_name(char *buf, size_t cap, const char *layer, const char *what) {
  snprintf(buf, cap, "%s/%s/%s", SM_TRAIN_MODEL_SCOPE, layer, what);
}

const char *sm__export_what(const sm__layer *l, int bias) {
  if (l->kind == SM_LAYER_BATCHNORM) return bias ? "beta" : "gamma";
  return bias ? "bias" : "kernel";
}

void sm__export_slot_name(char *buf, size_t cap, const sm_optimizer *o, const char *layer, const char *what, int slot) {
  const char *sn = sm__opt_slot_name(o, slot);
  snprintf(buf, cap, "%s/%s_%s_%s_%s", sm__export_optimizer_name(o->kind), SM_TRAIN_MODEL_SCOPE, layer, what,
           sn ? sn : "none");
}

/* ---- checking the model the trainer filled in ------------------------------------------------ */
static int name_ok(const char *n) {
  if (!memchr(n, 0, SM_SEQ_NAME_MAX) || !*n) return 0;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
  return 1;
}

static sm_status *check_weight(const sm_tensor *t, int rank, const int64_t *dims, const sm__layer *l,
                               const char *what) {
  if (!t) return sm_status_new(SM_FAILED_PRECONDITION, "layer %s: no %s", l->name, what);
  char a[96], b[96];
  if (sm_tensor_dtype(t) != SM_FLOAT || sm_tensor_rank(t) != rank ||
      memcmp(sm_tensor_dims(t), dims, (size_t)rank * sizeof *dims))
    return sm_status_new(SM_INTERNAL, "layer %s: %s is %s %s, expected float32 %s", l->name, what,
                         sm_dtype_name(sm_tensor_dtype(t)), sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), a, sizeof a),
                         sm_shape_str(rank, dims, b, sizeof b));
  return NULL;
}

/* Does the optimizer keep slot `k` for every weight? */
static int opt_has_slot(const sm_seq *m, int k) { return sm__opt_slot_name(&m->opt, k) != NULL; }

static sm_status *check_model(const sm_seq *m, int *classes, int *model_probs) {
  if (!m->compiled) return sm_status_new(SM_FAILED_PRECONDITION, "the model is not compiled; compile it before exporting");
  if (m->in_rank < 1 || m->in_rank > 3) return sm_status_new(SM_INTERNAL, "input rank %d is not 1..3", m->in_rank);
  for (int i = 0; i < m->in_rank; i++)
    if (m->in_shape[i] <= 0) return sm_status_new(SM_INTERNAL, "input dimension %d is %lld", i, (long long)m->in_shape[i]);
  if (m->nlayers < 1 || m->nlayers > SM_SEQ_MAX_LAYERS)
    return sm_status_new(SM_FAILED_PRECONDITION, "the model has %d layers; export needs 1..%d", m->nlayers, SM_SEQ_MAX_LAYERS);
  if (m->opt.kind < SM_OPT_SGD || m->opt.kind > SM_OPT_RMSPROP)
    return sm_status_new(SM_INTERNAL, "unknown optimizer kind %d", m->opt.kind);
  if (m->loss.kind < SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || m->loss.kind > SM_LOSS_CATEGORICAL_CROSSENTROPY)
    return sm_status_new(SM_INTERNAL, "unknown loss kind %d", m->loss.kind);
  int rank = m->in_rank;
  const int64_t *shape = m->in_shape;
  *model_probs = 0;
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *l = &m->layers[i];
    if (!name_ok(l->name)) return sm_status_new(SM_INTERNAL, "layer %d: bad name (want [a-z0-9_]+)", i);
    for (int j = 0; j < i; j++)
      if (!strcmp(m->layers[j].name, l->name)) return sm_status_new(SM_INTERNAL, "two layers named %s", l->name);
    if (l->in_rank != rank || memcmp(l->in_shape, shape, (size_t)rank * sizeof *shape))
      return sm_status_new(SM_INTERNAL, "layer %s: its input shape is not the previous layer's output", l->name);
    if (l->out_rank < 1 || l->out_rank > 3) return sm_status_new(SM_INTERNAL, "layer %s: output rank %d", l->name, l->out_rank);
    if (l->activation < SM_ACT_NONE || l->activation > SM_ACT_SOFTMAX)
      return sm_status_new(SM_INTERNAL, "layer %s: unknown activation %d", l->name, l->activation);
    int64_t kd[4], bd[1] = {l->units};
    int krank = 0;
    switch (l->kind) {
      case SM_LAYER_CONV2D:
        if (l->in_rank != 3 || l->kh < 1 || l->kw < 1 || l->sh < 1 || l->sw < 1 || l->units < 1)
          return sm_status_new(SM_INTERNAL, "layer %s: bad conv2d geometry", l->name);
        kd[0] = l->kh, kd[1] = l->kw, kd[2] = l->in_shape[2], kd[3] = l->units;
        krank = 4;
        break;
      case SM_LAYER_DENSE:
        if (l->in_rank != 1)
          return sm_status_new(SM_UNIMPLEMENTED, "layer %s: export handles dense layers over flat inputs only (rank %d)",
                               l->name, l->in_rank);
        kd[0] = l->in_shape[0], kd[1] = l->units;
        krank = 2;
        break;
      case SM_LAYER_MAXPOOL2D:
        if (l->in_rank != 3 || l->kh < 1 || l->kw < 1 || l->sh < 1 || l->sw < 1)
          return sm_status_new(SM_INTERNAL, "layer %s: bad max_pooling2d geometry", l->name);
        break;
      case SM_LAYER_FLATTEN:
        if (l->out_rank != 1) return sm_status_new(SM_INTERNAL, "layer %s: flatten to rank %d", l->name, l->out_rank);
        break;
      case SM_LAYER_BATCHNORM:
        if (l->units != l->in_shape[l->in_rank - 1] || (l->in_rank != 1 && l->in_rank != 3) ||
            check_weight(l->moving_mean, 1, bd, l, "moving_mean") || check_weight(l->moving_var, 1, bd, l, "moving_variance"))
          return sm_status_new(SM_INTERNAL, "layer %s: bad batch_normalization state", l->name);
        kd[0] = l->units;
        krank = 1;
        break;
      case SM_LAYER_AVGPOOL2D:
        if (l->in_rank != 3 || l->kh < 1 || l->kw < 1 || l->sh < 1 || l->sw < 1)
          return sm_status_new(SM_INTERNAL, "layer %s: bad average_pooling2d geometry", l->name);
        break;
      case SM_LAYER_GAP2D:
        if (l->in_rank != 3 || l->out_rank != 1) return sm_status_new(SM_INTERNAL, "layer %s: bad pooling shape", l->name);
        break;
      case SM_LAYER_RESHAPE:
      case SM_LAYER_RESCALING:
      case SM_LAYER_LEAKY_RELU:
      case SM_LAYER_DROPOUT:
      case SM_LAYER_ACTIVATION: break;
      default: return sm_status_new(SM_INTERNAL, "layer %s: unknown kind %d", l->name, l->kind);
    }
    if ((l->kind == SM_LAYER_CONV2D || l->kind == SM_LAYER_MAXPOOL2D || l->kind == SM_LAYER_AVGPOOL2D) &&
        l->padding != SM_PAD_VALID &&
        l->padding != SM_PAD_SAME)
      return sm_status_new(SM_INTERNAL, "layer %s: unknown padding %d", l->name, l->padding);
    if (krank) {
      sm_status *s = check_weight(l->kernel, krank, kd, l, "kernel");
      if (!s) s = check_weight(l->bias, 1, bd, l, "bias");
      for (int k = 0; k < SM_OPT_SLOTS && !s; k++) {
        if (!opt_has_slot(m, k)) continue;
        char what[32];
        snprintf(what, sizeof what, "kernel slot %d", k);
        s = check_weight(l->kernel_slot[k], krank, kd, l, what);
        snprintf(what, sizeof what, "bias slot %d", k);
        if (!s) s = check_weight(l->bias_slot[k], 1, bd, l, what);
      }
      if (s) return s;
    }
    if (l->kind != SM_LAYER_DROPOUT && !SM_LAYER_IS_ALIAS(l->kind) && l->kind != SM_LAYER_MAXPOOL2D)
      *model_probs = l->activation == SM_ACT_SOFTMAX;
    else if (l->kind != SM_LAYER_DROPOUT)
      *model_probs = 0;
    rank = l->out_rank;
    shape = l->out_shape;
  }
  *classes = 0;
  if (m->loss.kind != SM_LOSS_MSE) {
    if (rank != 1 || shape[0] < 1 || shape[0] > 1000000)
      return sm_status_new(SM_FAILED_PRECONDITION, "a classifier's output must be a vector of class scores (rank %d)", rank);
    *classes = (int)shape[0];
  }
  return NULL;
}

/* ---- the graph --------------------------------------------------------------------------------- */
typedef struct gbuild {
  sm_graph *g;
  const sm_seq *m;
  const char *kread[SM_SEQ_MAX_LAYERS], *bread[SM_SEQ_MAX_LAYERS]; /* ReadVariableOp tensors (graph-owned) */
  const char *mread[SM_SEQ_MAX_LAYERS], *vread[SM_SEQ_MAX_LAYERS]; /* batch norm's moving statistics */
} gbuild;

static sm_status *const_i32(sm_graph *g, const char *name, int rank, const int64_t *dims, const int32_t *v,
                            const char **out) {
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_INT32, rank, dims, &t);
  if (s) return s;
  memcpy(sm_tensor_data(t), v, sm_tensor_nbytes(t));
  s = sm_graph_const(g, name, t, out);
  sm_tensor_free(t);
  return s;
}

static sm_status *activation(sm_graph *g, const char *scope, int act, const char *x, const char **out) {
  char nm[200];
  *out = x;
  if (act == SM_ACT_RELU) {
    snprintf(nm, sizeof nm, "%s/Relu", scope);
    return sm_graph_unary(g, "Relu", nm, x, out);
  }
  if (act == SM_ACT_SOFTMAX) {
    snprintf(nm, sizeof nm, "%s/Softmax", scope);
    return sm_graph_unary(g, "Softmax", nm, x, out);
  }
  return NULL;
}

/* x reshaped to [-1, dims...] under scope/Reshape. */
static sm_status *reshape(sm_graph *g, const char *scope, const char *x, int rank, const int64_t *dims,
                          const char **out) {
  char nm[200];
  const char *shp;
  int64_t n = rank + 1;
  int32_t v[4] = {-1};
  for (int i = 0; i < rank; i++) v[i + 1] = (int32_t)dims[i];
  snprintf(nm, sizeof nm, "%s/Reshape/shape", scope);
  sm_status *s = const_i32(g, nm, 1, &n, v, &shp);
  snprintf(nm, sizeof nm, "%s/Reshape", scope);
  return s ? s : sm_graph_binary(g, "Reshape", nm, x, shp, out);
}

static sm_status *const_f32(sm_graph *g, const char *name, float v, const char **out) {
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_FLOAT, 0, NULL, &t);
  if (s) return s;
  *(float *)sm_tensor_data(t) = v;
  s = sm_graph_const(g, name, t, out);
  sm_tensor_free(t);
  return s;
}

/* The layers of Keras configs: batch norm as TF's inference-mode FusedBatchNormV3 over the
 * moving statistics (a [batch, c] input goes through [-1, 1, 1, c]), global average pooling as
 * Mean over the spatial axes, rescaling as Mul and AddV2, leaky relu as LeakyRelu. */
static sm_status *add_extra_layer(gbuild *b, int i, const char *scope, const char *x, const char **y) {
  sm_graph *g = b->g;
  const sm__layer *l = &b->m->layers[i];
  char nm[200];
  sm_status *s = NULL;
  if (l->kind == SM_LAYER_BATCHNORM) {
    const char *in = x;
    int64_t four[3] = {1, 1, l->units};
    if (l->in_rank == 1) TRY(reshape(g, scope, x, 3, four, &in));
    snprintf(nm, sizeof nm, "%s/FusedBatchNormV3", scope);
    sm_op *op = sm_op_begin(g, "FusedBatchNormV3", nm);
    sm_op_input(op, in);
    sm_op_input(op, b->kread[i]);
    sm_op_input(op, b->bread[i]);
    sm_op_input(op, b->mread[i]);
    sm_op_input(op, b->vread[i]);
    sm_op_attr_float(op, "epsilon", l->epsilon);
    sm_op_attr_bool(op, "is_training", 0);
    sm_op_attr_string(op, "data_format", "NHWC", 4);
    TRY(sm_op_finish(op, y));
    if (l->in_rank == 1) {
      char sc[180];
      snprintf(sc, sizeof sc, "%s/out", scope);
      TRY(reshape(g, sc, *y, 1, l->out_shape, y));
    }
  } else if (l->kind == SM_LAYER_GAP2D) {
    const char *axes;
    int64_t two = 2;
    int32_t v[2] = {1, 2};
    snprintf(nm, sizeof nm, "%s/Mean/reduction_indices", scope);
    TRY(const_i32(g, nm, 1, &two, v, &axes));
    snprintf(nm, sizeof nm, "%s/Mean", scope);
    TRY(sm_graph_binary(g, "Mean", nm, x, axes, y));
  } else if (l->kind == SM_LAYER_RESCALING) {
    const char *c;
    snprintf(nm, sizeof nm, "%s/Cast/x", scope);
    TRY(const_f32(g, nm, l->scale, &c));
    snprintf(nm, sizeof nm, "%s/Mul", scope);
    TRY(sm_graph_binary(g, "Mul", nm, x, c, y));
    snprintf(nm, sizeof nm, "%s/Cast_1/x", scope);
    TRY(const_f32(g, nm, l->offset, &c));
    snprintf(nm, sizeof nm, "%s/Add", scope);
    TRY(sm_graph_binary(g, "AddV2", nm, *y, c, y));
  } else if (l->kind == SM_LAYER_LEAKY_RELU) {
    snprintf(nm, sizeof nm, "%s/LeakyRelu", scope);
    sm_op *op = sm_op_begin(g, "LeakyRelu", nm);
    sm_op_input(op, x);
    sm_op_attr_float(op, "alpha", l->scale);
    TRY(sm_op_finish(op, y));
  } else {
    s = sm_status_new(SM_INTERNAL, "layer %s: kind %d has no export", l->name, l->kind);
  }
done:
  return s;
}

/* The layers from x (float32 [batch, in_shape...]) to the model's output, in *out. Node names
 * follow Keras's TF backend under the model's scope; the second branch gets "_1" suffixes. */
static sm_status *add_layers(gbuild *b, const char *x, const char **out) {
  sm_graph *g = b->g;
  sm_status *s = NULL;
  for (int i = 0; i < b->m->nlayers; i++) {
    const sm__layer *l = &b->m->layers[i];
    char scope[160], nm[200];
    snprintf(scope, sizeof scope, "%s/%s", SM_TRAIN_MODEL_SCOPE, l->name);
    const char *y = x;
    const char *pad = l->padding == SM_PAD_SAME ? "SAME" : "VALID";
    if (l->kind == SM_LAYER_CONV2D || l->kind == SM_LAYER_MAXPOOL2D || l->kind == SM_LAYER_AVGPOOL2D) {
      int conv = l->kind == SM_LAYER_CONV2D, avg = l->kind == SM_LAYER_AVGPOOL2D;
      int64_t strides[4] = {1, l->sh, l->sw, 1}, ksize[4] = {1, l->kh, l->kw, 1};
      snprintf(nm, sizeof nm, "%s/%s", scope, conv ? "convolution" : avg ? "AvgPool2d" : "MaxPool2d");
      sm_op *op = sm_op_begin(g, conv ? "Conv2D" : avg ? "AvgPool" : "MaxPool", nm);
      sm_op_input(op, x);
      if (conv) sm_op_input(op, b->kread[i]);
      if (!conv) sm_op_attr_int_list(op, "ksize", ksize, 4);
      sm_op_attr_int_list(op, "strides", strides, 4);
      sm_op_attr_string(op, "padding", pad, strlen(pad));
      sm_op_attr_string(op, "data_format", "NHWC", 4);
      TRY(sm_op_finish(op, &y));
    } else if (l->kind == SM_LAYER_DENSE) {
      snprintf(nm, sizeof nm, "%s/MatMul", scope);
      TRY(sm_graph_binary(g, "MatMul", nm, x, b->kread[i], &y));
    } else if (SM_LAYER_IS_ALIAS(l->kind)) {
      TRY(reshape(g, scope, x, l->out_rank, l->out_shape, &y));
    } else if (l->kind != SM_LAYER_DROPOUT && l->kind != SM_LAYER_ACTIVATION) {
      TRY(add_extra_layer(b, i, scope, x, &y));
    }
    if (l->kind == SM_LAYER_CONV2D || l->kind == SM_LAYER_DENSE) {
      snprintf(nm, sizeof nm, "%s/BiasAdd", scope);
      sm_op *op = sm_op_begin(g, "BiasAdd", nm);
      sm_op_input(op, y);
      sm_op_input(op, b->bread[i]);
      sm_op_attr_string(op, "data_format", "NHWC", 4);
      TRY(sm_op_finish(op, &y));
    }
    if (l->kind == SM_LAYER_CONV2D || l->kind == SM_LAYER_DENSE || l->kind == SM_LAYER_ACTIVATION)
      TRY(activation(g, scope, l->activation, y, &y));
    /* Dropout is the identity at inference. */
    x = y;
  }
  *out = x;
done:
  return s;
}

static sm_status *add_variables(gbuild *b, int with_optimizer) {
  const sm_seq *m = b->m;
  sm_status *s = NULL;
  sm_tensor *it = NULL, *lr = NULL;
  char nm[200];
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *l = &m->layers[i];
    if (!l->kernel) continue;
    sm__export_weight_name(nm, sizeof nm, l->name, sm__export_what(l, 0));
    TRY(sm_graph_variable(b->g, nm, l->kernel, &b->kread[i]));
    sm__export_weight_name(nm, sizeof nm, l->name, sm__export_what(l, 1));
    TRY(sm_graph_variable(b->g, nm, l->bias, &b->bread[i]));
    if (l->kind == SM_LAYER_BATCHNORM) {
      sm__export_weight_name(nm, sizeof nm, l->name, "moving_mean");
      TRY(sm_graph_variable(b->g, nm, l->moving_mean, &b->mread[i]));
      sm__export_weight_name(nm, sizeof nm, l->name, "moving_variance");
      TRY(sm_graph_variable(b->g, nm, l->moving_var, &b->vread[i]));
    }
  }
  if (!with_optimizer) return NULL;
  /* Keras 3's order: iteration, learning_rate, then each trainable variable's slots. */
  const char *opt = sm__export_optimizer_name(m->opt.kind);
  TRY(sm_tensor_new(SM_INT64, 0, NULL, &it));
  *(int64_t *)sm_tensor_data(it) = m->iterations;
  snprintf(nm, sizeof nm, "%s/iteration", opt);
  TRY(sm_graph_variable(b->g, nm, it, NULL));
  TRY(sm_tensor_new(SM_FLOAT, 0, NULL, &lr));
  *(float *)sm_tensor_data(lr) = sm__opt_learning_rate(&m->opt, m->iterations);
  snprintf(nm, sizeof nm, "%s/learning_rate", opt);
  TRY(sm_graph_variable(b->g, nm, lr, NULL));
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *l = &m->layers[i];
    if (!l->kernel) continue;
    for (int w = 0; w < 2; w++)
      for (int k = 0; k < SM_OPT_SLOTS; k++) {
        if (!opt_has_slot(m, k)) continue;
        sm__export_slot_name(nm, sizeof nm, &m->opt, l->name, sm__export_what(l, w), k);
        TRY(sm_graph_variable(b->g, nm, w ? l->bias_slot[k] : l->kernel_slot[k], NULL));
      }
  }
done:
  sm_tensor_free(it);
  sm_tensor_free(lr);
  return s;
}

/* serialized tf.Examples -> float32 [batch, in_shape...], as tf.estimator's
 * build_parsing_serving_input_receiver_fn with one required dense feature "inputs". */
static sm_status *parse_examples(gbuild *b, const char **examples, const char **images) {
  sm_graph *g = b->g;
  const sm_seq *m = b->m;
  int64_t batch = -1, flat = 1;
  for (int i = 0; i < m->in_rank; i++) flat *= m->in_shape[i];
  const char *values = NULL, *shp;
  sm_status *s = sm_graph_placeholder(g, "input_example_tensor", SM_STRING, 1, &batch, examples);
  sm_dense_feature f = {SM_PREDICT_INPUTS, SM_FLOAT, 1, &flat, NULL};
  if (!s) s = sm_graph_parse_example(g, "ParseExample", *examples, &f, 1, &values);
  int64_t rn = m->in_rank + 1;
  int32_t dims[4] = {-1};
  for (int i = 0; i < m->in_rank; i++) dims[i + 1] = (int32_t)m->in_shape[i];
  if (!s) s = const_i32(g, "Reshape/shape", 1, &rn, dims, &shp);
  if (!s) s = sm_graph_binary(g, "Reshape", "Reshape", values, shp, images);
  return s;
}

/* class names [classes] -> [batch, classes], one row per example of `scores`. */
static sm_status *label_strings(gbuild *b, const char *labels_path, int classes, const char *scores,
                                const char **out) {
  sm_graph *g = b->g;
  sm_status *s = NULL;
  const char *table, *ids, *names, *axis, *row, *shape, *bs, *one, *mult, *tiled, *b0, *b1, *b2;
  sm_tensor *t = NULL;
  int64_t n = classes;
  TRY(sm_graph_label_vocabulary(g, SM_TRAIN_LABELS_FILENAME, labels_path, &table));
  TRY(sm_tensor_new(SM_INT64, 1, &n, &t));
  for (int64_t i = 0; i < n; i++) ((int64_t *)sm_tensor_data(t))[i] = i;
  TRY(sm_graph_const(g, "class_ids", t, &ids));
  TRY(sm_graph_lookup(g, table, ids, "UNKNOWN", &names));
  TRY(const_i32(g, "ExpandDims/dim", 0, NULL, (int32_t[]){0}, &axis));
  TRY(sm_graph_binary(g, "ExpandDims", "ExpandDims", names, axis, &row));
  TRY(sm_graph_unary(g, "Shape", "Shape", scores, &shape));
  int64_t onev = 1;
  TRY(const_i32(g, "strided_slice/stack", 1, &onev, (int32_t[]){0}, &b0));
  TRY(const_i32(g, "strided_slice/stack_1", 1, &onev, (int32_t[]){1}, &b1));
  TRY(const_i32(g, "strided_slice/stack_2", 1, &onev, (int32_t[]){1}, &b2));
  sm_op *op = sm_op_begin(g, "StridedSlice", "strided_slice");
  sm_op_input(op, shape);
  sm_op_input(op, b0);
  sm_op_input(op, b1);
  sm_op_input(op, b2);
  sm_op_attr_int(op, "shrink_axis_mask", 1);
  TRY(sm_op_finish(op, &bs));
  TRY(const_i32(g, "Tile/multiples/1", 0, NULL, (int32_t[]){1}, &one));
  op = sm_op_begin(g, "Pack", "Tile/multiples");
  sm_op_input(op, bs);
  sm_op_input(op, one);
  sm_op_attr_int(op, "axis", 0);
  TRY(sm_op_finish(op, &mult));
  TRY(sm_graph_binary(g, "Tile", "Tile", row, mult, &tiled));
  TRY(sm_graph_unary(g, "Identity", "classes", tiled, out));
done:
  sm_tensor_free(t);
  return s;
}

/* One complete graph (with or without the optimizer's variables) and its signatures. */
static sm_status *build_graph(const sm_seq *m, int classes, int model_probs, int probabilities,
                              const char *labels_path, int with_optimizer, sm_graph **gout, sm_signature **sigs,
                              size_t *nsigs) {
  gbuild b = {.m = m};
  sm_status *s = NULL;
  *nsigs = 0;
  TRY(sm_graph_new(&b.g));
  TRY(add_variables(&b, with_optimizer));
  int64_t dims[4] = {-1};
  for (int i = 0; i < m->in_rank; i++) dims[i + 1] = m->in_shape[i];
  const sm__layer *last = &m->layers[m->nlayers - 1];
  int64_t odims[4] = {-1};
  for (int i = 0; i < last->out_rank; i++) odims[i + 1] = last->out_shape[i];
  const char *in, *y, *outputs;
  TRY(sm_graph_placeholder(b.g, SM_PREDICT_INPUTS, SM_FLOAT, m->in_rank + 1, dims, &in));
  TRY(add_layers(&b, in, &y));
  if (probabilities && classes && !model_probs)
    TRY(sm_graph_unary(b.g, "Softmax", SM_TRAIN_MODEL_SCOPE "/Softmax", y, &y));
  TRY(sm_graph_unary(b.g, "Identity", SM_PREDICT_OUTPUTS, y, &outputs));
  TRY(sm_signature_new(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, SM_PREDICT_METHOD_NAME, &sigs[0]));
  *nsigs = 1;
  char tn[256];
  snprintf(tn, sizeof tn, "%s:0", in);
  TRY(sm_signature_add_input(sigs[0], SM_PREDICT_INPUTS, tn, SM_FLOAT, m->in_rank + 1, dims));
  snprintf(tn, sizeof tn, "%s:0", outputs);
  TRY(sm_signature_add_output(sigs[0], SM_PREDICT_OUTPUTS, tn, SM_FLOAT, last->out_rank + 1, odims));
  if (classes) {
    const char *ex, *images, *logits, *scores, *names;
    TRY(parse_examples(&b, &ex, &images));
    TRY(add_layers(&b, images, &logits));
    TRY(sm_graph_unary(b.g, model_probs ? "Identity" : "Softmax", SM_CLASSIFY_OUTPUT_SCORES, logits, &scores));
    TRY(label_strings(&b, labels_path, classes, scores, &names));
    TRY(sm_signature_new("classify", SM_CLASSIFY_METHOD_NAME, &sigs[1]));
    *nsigs = 2;
    int64_t bd = -1, cd[2] = {-1, classes};
    snprintf(tn, sizeof tn, "%s:0", ex);
    TRY(sm_signature_add_input(sigs[1], SM_CLASSIFY_INPUTS, tn, SM_STRING, 1, &bd));
    snprintf(tn, sizeof tn, "%s:0", names);
    TRY(sm_signature_add_output(sigs[1], SM_CLASSIFY_OUTPUT_CLASSES, tn, SM_STRING, 2, cd));
    snprintf(tn, sizeof tn, "%s:0", scores);
    TRY(sm_signature_add_output(sigs[1], SM_CLASSIFY_OUTPUT_SCORES, tn, SM_FLOAT, 2, cd));
  }
done:
  if (s) {
    sm_graph_free(b.g);
    for (size_t i = 0; i < *nsigs; i++) sm_signature_free(sigs[i]);
    *nsigs = 0;
    return sm_status_prefix(s, "building the %s graph", with_optimizer ? "train" : "serve");
  }
  *gout = b.g;
  return NULL;
}

/* ---- the training-state text ------------------------------------------------------------------ */
static const char *act_name(int a) { return a == SM_ACT_RELU ? "relu" : a == SM_ACT_SOFTMAX ? "softmax" : "linear"; }
static const char *pad_name(int p) { return p == SM_PAD_SAME ? "same" : "valid"; }

/* Appends to a growing malloc'ed buffer; sets *ok to 0 on out of memory. */
typedef struct tbuf {
  char *p;
  size_t n, cap;
  int ok;
} tbuf;

static void tb_printf(tbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(tbuf *t, const char *fmt, ...) {
  if (!t->ok) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      t->ok = 0;
      return;
    }
    if (t->p && t->n + (size_t)k < t->cap) {
      t->n += (size_t)k;
      return;
    }
    size_t nc = (t->cap ? t->cap * 2 : 1024) + (size_t)k;
    char *np = realloc(t->p, nc);
    if (!np) {
      t->ok = 0;
      return;
    }
    t->p = np;
    t->cap = nc;
  }
}

static sm_status *state_text(const sm_seq *m, char **out, size_t *len) {
  tbuf t = {.ok = 1};
  tb_printf(&t, "%s %d\n", SM_TRAIN_STATE_MAGIC, SM_TRAIN_STATE_VERSION);
  tb_printf(&t, "input");
  for (int i = 0; i < m->in_rank; i++) tb_printf(&t, " %lld", (long long)m->in_shape[i]);
  tb_printf(&t, "\n");
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *l = &m->layers[i];
    switch (l->kind) {
      case SM_LAYER_CONV2D:
        tb_printf(&t, "layer conv2d name=%s filters=%d kernel=%dx%d strides=%dx%d padding=%s activation=%s%s\n", l->name,
                  l->units, l->kh, l->kw, l->sh, l->sw, pad_name(l->padding), act_name(l->activation),
                  l->no_bias ? " use_bias=0" : "");
        break;
      case SM_LAYER_MAXPOOL2D:
        tb_printf(&t, "layer max_pooling2d name=%s pool=%dx%d strides=%dx%d padding=%s\n", l->name, l->kh, l->kw, l->sh,
                  l->sw, pad_name(l->padding));
        break;
      case SM_LAYER_FLATTEN: tb_printf(&t, "layer flatten name=%s\n", l->name); break;
      case SM_LAYER_DENSE:
        tb_printf(&t, "layer dense name=%s units=%d activation=%s%s\n", l->name, l->units, act_name(l->activation),
                  l->no_bias ? " use_bias=0" : "");
        break;
      case SM_LAYER_DROPOUT: tb_printf(&t, "layer dropout name=%s rate=%.9g\n", l->name, (double)l->rate); break;
      case SM_LAYER_BATCHNORM:
        tb_printf(&t, "layer batch_normalization name=%s momentum=%.9g epsilon=%.9g center=%d scale=%d\n", l->name,
                  (double)l->momentum, (double)l->epsilon, l->center, l->use_scale);
        break;
      case SM_LAYER_AVGPOOL2D:
        tb_printf(&t, "layer average_pooling2d name=%s pool=%dx%d strides=%dx%d padding=%s\n", l->name, l->kh, l->kw,
                  l->sh, l->sw, pad_name(l->padding));
        break;
      case SM_LAYER_GAP2D: tb_printf(&t, "layer global_average_pooling2d name=%s\n", l->name); break;
      case SM_LAYER_RESCALING:
        tb_printf(&t, "layer rescaling name=%s scale=%.9g offset=%.9g\n", l->name, (double)l->scale, (double)l->offset);
        break;
      case SM_LAYER_LEAKY_RELU:
        tb_printf(&t, "layer leaky_re_lu name=%s negative_slope=%.9g\n", l->name, (double)l->scale);
        break;
      case SM_LAYER_RESHAPE:
        tb_printf(&t, "layer reshape name=%s shape=%lld", l->name, (long long)l->out_shape[0]);
        for (int d = 1; d < l->out_rank; d++) tb_printf(&t, "x%lld", (long long)l->out_shape[d]);
        tb_printf(&t, "\n");
        break;
      default: tb_printf(&t, "layer activation name=%s activation=%s\n", l->name, act_name(l->activation)); break;
    }
  }
  const sm_optimizer *o = &m->opt;
  if (o->kind == SM_OPT_ADAM || o->kind == SM_OPT_ADAMW)
    tb_printf(&t, "optimizer %s learning_rate=%.9g beta_1=%.9g beta_2=%.9g epsilon=%.9g", sm__export_optimizer_name(o->kind),
              (double)o->learning_rate, (double)o->beta_1, (double)o->beta_2, (double)o->epsilon);
  else if (o->kind == SM_OPT_RMSPROP)
    tb_printf(&t, "optimizer rmsprop learning_rate=%.9g rho=%.9g momentum=%.9g epsilon=%.9g centered=%d",
              (double)o->learning_rate, (double)o->rho, (double)o->momentum, (double)o->epsilon, o->centered ? 1 : 0);
  else
    tb_printf(&t, "optimizer sgd learning_rate=%.9g momentum=%.9g nesterov=%d", (double)o->learning_rate,
              (double)o->momentum, o->nesterov ? 1 : 0);
  if (o->kind == SM_OPT_ADAMW) tb_printf(&t, " weight_decay=%.9g", (double)o->weight_decay);
  if (o->schedule == SM_LR_EXPONENTIAL)
    tb_printf(&t, " schedule=exponential:%lld:%.9g%s", (long long)o->decay_steps, (double)o->decay_rate,
              o->staircase ? ":staircase" : "");
  else if (o->schedule == SM_LR_COSINE)
    tb_printf(&t, " schedule=cosine:%lld:%.9g", (long long)o->decay_steps, (double)o->alpha);
  tb_printf(&t, "\n");
  if (m->loss.kind == SM_LOSS_MSE)
    tb_printf(&t, "loss mse\n");
  else
    tb_printf(&t, "loss %s from_logits=%d\n", m->loss.kind == SM_LOSS_CATEGORICAL_CROSSENTROPY ? "categorical_crossentropy"
              : "sparse_categorical_crossentropy", m->loss.from_logits ? 1 : 0);
  tb_printf(&t, "seed %llu\niterations %lld\nepochs_done %lld\nend\n", (unsigned long long)m->seed,
            (long long)m->iterations, (long long)m->epochs_done);
  if (!t.ok) {
    free(t.p);
    return oom();
  }
  *out = t.p;
  *len = t.n;
  return NULL;
}

static sm_status *labels_text(const sm_export_options *o, int classes, char **out, size_t *len) {
  tbuf t = {.ok = 1};
  if (o && o->labels && o->nlabels != classes)
    return sm_status_new(SM_INVALID_ARGUMENT, "%d labels given for a model with %d classes", o->nlabels, classes);
  for (int i = 0; i < classes; i++) {
    if (o && o->labels) {
      const char *l = o->labels[i];
      if (!l || !*l || strpbrk(l, "\n\r"))
        return free(t.p), sm_status_new(SM_INVALID_ARGUMENT, "label %d is empty or holds a line break", i);
      tb_printf(&t, "%s\n", l);
    } else {
      tb_printf(&t, "%d\n", i);
    }
  }
  if (!t.ok) {
    free(t.p);
    return oom();
  }
  *out = t.p ? t.p : calloc(1, 1);
  *len = t.n;
  return *out ? NULL : oom();
}

sm_status *sm_seq_export(const sm_seq *m, const char *export_dir, const sm_export_options *opts) {
  if (!m || !export_dir || !*export_dir) return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_export: no model or no directory");
  if (sm__path_exists(export_dir))
    return sm_status_new(SM_ALREADY_EXISTS, "export directory %s already exists; an export is never written over one",
                         export_dir);
  int classes, model_probs;
  sm_status *s = check_model(m, &classes, &model_probs);
  if (s) return sm_status_prefix(s, "exporting to %s", export_dir);
  if (opts && opts->labels && !classes)
    return sm_status_new(SM_INVALID_ARGUMENT, "exporting to %s: labels given for a model without classes (MSE loss)",
                         export_dir);
  int probabilities = opts ? opts->probabilities : 0;
  char *stage = NULL, *labels_path = NULL, *model_dir = NULL, *extra_dir = NULL, *state_path = NULL, *text = NULL;
  size_t tlen = 0;
  sm_graph *gt = NULL, *gs = NULL;
  sm_signature *st[2] = {0}, *ss[2] = {0};
  size_t nst = 0, nss = 0;
  sm_builder *b = NULL;
  int staged = 0;
  /* the staging dir: a hidden sibling, so the final rename stays on one filesystem */
  char *dir = strdup(export_dir);
  if (!dir) return oom();
  size_t dl = strlen(dir);
  while (dl > 1 && dir[dl - 1] == '/') dir[--dl] = 0;
  char *slash = strrchr(dir, '/');
  const char *parent = ".", *base = dir;
  if (slash) {
    *slash = 0;
    parent = slash == dir ? "/" : dir;
    base = slash + 1;
  }
  char tmpname[512];
  snprintf(tmpname, sizeof tmpname, ".tmp-export-%.200s-%ld", base, (long)getpid());
  if (!(stage = sm__path_join(parent, tmpname)) || !(labels_path = sm__path_join(stage, SM_TRAIN_LABELS_FILENAME)) ||
      !(model_dir = sm__path_join(stage, "model")) || !(extra_dir = sm__path_join(model_dir, SM_EXTRA_ASSETS_DIRECTORY)) ||
      !(state_path = sm__path_join(extra_dir, SM_TRAIN_STATE_FILENAME)))
    TRY(oom());
  sm__remove_tree(stage); /* a leftover of an earlier crashed run of this very pid */
  {
    char stale[512];
    snprintf(stale, sizeof stale, ".tmp-export-%.200s-", base);
    sm__remove_stale_staging(parent, stale); /* and those of dead processes */
  }
  if (mkdir(stage, 0755)) TRY(sm_status_new(SM_IO, "creating %s: %s", stage, strerror(errno)));
  staged = 1;
  if (classes) {
    TRY(labels_text(opts, classes, &text, &tlen));
    TRY(sm__file_write_atomic(labels_path, text, tlen));
    free(text);
    text = NULL;
  }
  TRY(build_graph(m, classes, model_probs, probabilities, labels_path, 1, &gt, st, &nst));
  TRY(build_graph(m, classes, model_probs, probabilities, labels_path, 0, &gs, ss, &nss));
  TRY(sm_builder_new(model_dir, &b));
  const char *train_tags[] = {SM_TAG_TRAIN}, *serve_tags[] = {SM_TAG_SERVE};
  TRY(sm_builder_add_meta_graph_and_variables(b, gt, train_tags, 1, st, nst));
  TRY(sm_builder_add_meta_graph(b, gs, serve_tags, 1, ss, nss));
  TRY(sm_builder_save(b, 0));
  TRY(state_text(m, &text, &tlen));
  if (mkdir(extra_dir, 0755)) TRY(sm_status_new(SM_IO, "creating %s: %s", extra_dir, strerror(errno)));
  TRY(sm__file_write_atomic(state_path, text, tlen));
  if (sm__path_exists(export_dir))
    TRY(sm_status_new(SM_ALREADY_EXISTS, "export directory %s appeared while exporting", export_dir));
  if (rename(model_dir, export_dir))
    TRY(sm_status_new(SM_IO, "renaming %s to %s: %s", model_dir, export_dir, strerror(errno)));
done:
  if (staged) sm__remove_tree(stage);
  sm_builder_free(b);
  for (size_t i = 0; i < nst; i++) sm_signature_free(st[i]);
  for (size_t i = 0; i < nss; i++) sm_signature_free(ss[i]);
  sm_graph_free(gt);
  sm_graph_free(gs);
  free(text);
  free(stage);
  free(labels_path);
  free(model_dir);
  free(extra_dir);
  free(state_path);
  free(dir);
  return s ? sm_status_prefix(s, "exporting to %s", export_dir) : NULL;
}
