/* keras.c - sm_seq_from_keras: a model from what Keras writes with model.to_json() (Keras 3;
 * Keras 2's batch_input_shape / alpha spellings too): a Sequential model, or a Functional one
 * whose layers form one chain from its input to its output, built layer by layer through the
 * trainer's own constructors under Keras's layer names. Anything the trainer does not do (a layer
 * class, an option with a non-default value, a branch in a functional graph) is refused with the
 * layer's name and the option, never approximated. The optional compile_config (present when the
 * model was compiled before to_json) gives the optimizer, its schedule and the loss
 * (sm_keras_compile_config). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "train/train_internal.h"

#define KERAS_JSON_MAX ((uint64_t)16 << 20)

typedef struct kctx {
  const char *path;  /* for messages */
  const char *layer; /* the layer being read (or the compile_config part) */
  const char *cls;
  const char *what;  /* "layer" or "compile_config" */
} kctx;

static sm_status *kerr(const kctx *k, const char *fmt, const char *a, const char *b) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
  return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s \"%s\" (%s): %s", k->path, k->what ? k->what : "layer", k->layer,
                       k->cls, msg);
}

/* ---- options ----------------------------------------------------------------------------------- */
static int is_int(const sm__json *v) {
  return v && v->type == SM_JSON_NUM && v->num == floor(v->num) && fabs(v->num) < 1e9;
}

static sm_status *opt_num(const kctx *k, const sm__json *cfg, const char *key, double dflt, double *out) {
  const sm__json *v = sm__json_get(cfg, key);
  if (!v || v->type == SM_JSON_NULL) {
    *out = dflt;
    return NULL;
  }
  if (v->type != SM_JSON_NUM || !isfinite(v->num)) return kerr(k, "%s must be a finite number", key, NULL);
  *out = v->num;
  return NULL;
}

static sm_status *opt_int(const kctx *k, const sm__json *cfg, const char *key, int dflt, int *out) {
  const sm__json *v = sm__json_get(cfg, key);
  if (!v) {
    *out = dflt;
    return NULL;
  }
  if (!is_int(v)) return kerr(k, "%s must be an integer", key, NULL);
  *out = (int)v->num;
  return NULL;
}

static sm_status *opt_bool(const kctx *k, const sm__json *cfg, const char *key, int dflt, int *out) {
  const sm__json *v = sm__json_get(cfg, key);
  if (!v) {
    *out = dflt;
    return NULL;
  }
  if (v->type != SM_JSON_BOOL) return kerr(k, "%s must be true or false", key, NULL);
  *out = v->b;
  return NULL;
}

static const char *opt_str(const sm__json *cfg, const char *key) {
  const sm__json *v = sm__json_get(cfg, key);
  return v && v->type == SM_JSON_STR ? v->str : NULL;
}

/* An int or a list of two ints (kernel_size, strides, pool_size); null -> dflt pair. */
static sm_status *opt_pair(const kctx *k, const sm__json *cfg, const char *key, const int *dflt, int *a, int *b) {
  const sm__json *v = sm__json_get(cfg, key);
  if ((!v || v->type == SM_JSON_NULL) && dflt) {
    *a = dflt[0], *b = dflt[1];
    return NULL;
  }
  if (is_int(v)) {
    *a = *b = (int)v->num;
    return NULL;
  }
  if (v && v->type == SM_JSON_ARR && v->n == 2 && is_int(v->items[0]) && is_int(v->items[1])) {
    *a = (int)v->items[0]->num, *b = (int)v->items[1]->num;
    return NULL;
  }
  return kerr(k, "%s must be an integer or a pair of integers", key, NULL);
}

static sm_status *opt_padding(const kctx *k, const sm__json *cfg, int *out) {
  const char *p = opt_str(cfg, "padding");
  if (!p || !strcmp(p, "valid")) *out = SM_PAD_VALID;
  else if (!strcmp(p, "same")) *out = SM_PAD_SAME;
  else return kerr(k, "padding \"%s\" is not supported (valid, same)", p, NULL);
  return NULL;
}

static sm_status *opt_activation(const kctx *k, const sm__json *cfg, int *out) {
  const sm__json *v = sm__json_get(cfg, "activation");
  const char *a = v && v->type == SM_JSON_STR ? v->str : NULL;
  if (!v || v->type == SM_JSON_NULL || (a && !strcmp(a, "linear"))) *out = SM_ACT_NONE;
  else if (a && !strcmp(a, "relu")) *out = SM_ACT_RELU;
  else if (a && !strcmp(a, "softmax")) *out = SM_ACT_SOFTMAX;
  else return kerr(k, "activation \"%s\" is not supported (linear, relu, softmax)", a ? a : sm__json_type_name(v), NULL);
  return NULL;
}

/* Options the trainer has no use for must keep Keras's defaults. */
static sm_status *must_be_null(const kctx *k, const sm__json *cfg, const char *const *keys) {
  for (; *keys; keys++) {
    const sm__json *v = sm__json_get(cfg, *keys);
    if (v && v->type != SM_JSON_NULL) return kerr(k, "option %s is not supported (only null)", *keys, NULL);
  }
  return NULL;
}

static sm_status *common(const kctx *k, const sm__json *cfg) {
  int trainable;
  sm_status *st = opt_bool(k, cfg, "trainable", 1, &trainable);
  if (!st && !trainable) st = kerr(k, "trainable=false (frozen layers) is not supported", NULL, NULL);
  const char *df = opt_str(cfg, "data_format");
  if (!st && df && strcmp(df, "channels_last")) st = kerr(k, "data_format \"%s\" is not supported (channels_last)", df, NULL);
  const sm__json *dt = sm__json_get(cfg, "dtype");
  const char *dn = dt && dt->type == SM_JSON_STR ? dt->str : opt_str(sm__json_get(dt, "config"), "name");
  if (!st && dn && strcmp(dn, "float32")) st = kerr(k, "dtype \"%s\" is not supported (float32)", dn, NULL);
  static const char *const regs[] = {"kernel_regularizer", "bias_regularizer", "activity_regularizer",
                                     "kernel_constraint", "bias_constraint", "beta_regularizer", "gamma_regularizer",
                                     "beta_constraint", "gamma_constraint", "noise_shape", "renorm_clipping", NULL};
  if (!st) st = must_be_null(k, cfg, regs);
  return st;
}

/* ---- one layer ---------------------------------------------------------------------------------- */
static sm_status *add_keras_layer(const kctx *k, sm_seq *m, const sm__json *cfg) {
  const char *c = k->cls;
  sm_status *st = common(k, cfg);
  if (st) return st;
  int a = 0, b = 0, sh = 1, sw = 1, pad = 0, act = 0, use_bias = 1, one[2] = {1, 1};
  if (!strcmp(c, "Conv2D")) {
    int filters = 0, dh = 1, dw = 1, groups = 1;
    if ((st = opt_int(k, cfg, "filters", 0, &filters)) || (st = opt_pair(k, cfg, "kernel_size", NULL, &a, &b)) ||
        (st = opt_pair(k, cfg, "strides", one, &sh, &sw)) || (st = opt_padding(k, cfg, &pad)) ||
        (st = opt_pair(k, cfg, "dilation_rate", one, &dh, &dw)) || (st = opt_int(k, cfg, "groups", 1, &groups)) ||
        (st = opt_activation(k, cfg, &act)) || (st = opt_bool(k, cfg, "use_bias", 1, &use_bias)))
      return st;
    if (dh != 1 || dw != 1) return kerr(k, "dilation_rate other than 1 is not supported", NULL, NULL);
    if (groups != 1) return kerr(k, "groups other than 1 is not supported", NULL, NULL);
    if ((st = sm_seq_conv2d(m, filters, a, b, sh, sw, pad, act))) return st;
    m->layers[m->nlayers - 1].no_bias = !use_bias;
  } else if (!strcmp(c, "MaxPooling2D") || !strcmp(c, "AveragePooling2D")) {
    int two[2] = {2, 2};
    if ((st = opt_pair(k, cfg, "pool_size", two, &a, &b)) || (st = opt_padding(k, cfg, &pad))) return st;
    int pool[2] = {a, b};
    if ((st = opt_pair(k, cfg, "strides", pool, &sh, &sw))) return st;
    st = c[0] == 'M' ? sm_seq_max_pool2d(m, a, b, sh, sw, pad) : sm__seq_avg_pool2d(m, a, b, sh, sw, pad);
    if (st) return st;
  } else if (!strcmp(c, "GlobalAveragePooling2D")) {
    int keep;
    if ((st = opt_bool(k, cfg, "keepdims", 0, &keep))) return st;
    if (keep) return kerr(k, "keepdims=true is not supported", NULL, NULL);
    if ((st = sm__seq_gap2d(m))) return st;
  } else if (!strcmp(c, "BatchNormalization")) {
    double mom = 0.99, eps = 1e-3;
    int center = 1, scale = 1, renorm = 0, axis = -1;
    const sm__json *ax = sm__json_get(cfg, "axis");
    if (ax && ax->type == SM_JSON_ARR && ax->n == 1) ax = ax->items[0];
    if (ax && !is_int(ax)) return kerr(k, "axis must be an integer", NULL, NULL);
    if (ax) axis = (int)ax->num;
    int last = m->nlayers ? m->layers[m->nlayers - 1].out_rank : m->in_rank;
    if (axis != -1 && axis != last) return kerr(k, "axis other than the last (-1) is not supported", NULL, NULL);
    if ((st = opt_num(k, cfg, "momentum", 0.99, &mom)) || (st = opt_num(k, cfg, "epsilon", 1e-3, &eps)) ||
        (st = opt_bool(k, cfg, "center", 1, &center)) || (st = opt_bool(k, cfg, "scale", 1, &scale)) ||
        (st = opt_bool(k, cfg, "renorm", 0, &renorm)))
      return st;
    if (renorm) return kerr(k, "renorm=true is not supported", NULL, NULL);
    if ((st = sm__seq_batchnorm(m, (float)mom, (float)eps, center, scale))) return st;
  } else if (!strcmp(c, "Dropout")) {
    double rate;
    if ((st = opt_num(k, cfg, "rate", 0.0, &rate)) || (st = sm_seq_dropout(m, (float)rate))) return st;
  } else if (!strcmp(c, "Flatten")) {
    if ((st = sm_seq_flatten(m))) return st;
  } else if (!strcmp(c, "Reshape")) {
    const sm__json *t = sm__json_get(cfg, "target_shape");
    int64_t shape[3];
    if (!t || t->type != SM_JSON_ARR || t->n < 1 || t->n > 3) return kerr(k, "target_shape must list 1..3 dimensions", NULL, NULL);
    for (size_t i = 0; i < t->n; i++) {
      if (!is_int(t->items[i])) return kerr(k, "target_shape must hold integers", NULL, NULL);
      shape[i] = (int64_t)t->items[i]->num;
    }
    if ((st = sm__seq_reshape(m, (int)t->n, shape))) return st;
  } else if (!strcmp(c, "Dense")) {
    int units;
    if ((st = opt_int(k, cfg, "units", 0, &units)) || (st = opt_activation(k, cfg, &act)) ||
        (st = opt_bool(k, cfg, "use_bias", 1, &use_bias)) || (st = sm_seq_dense(m, units, act)))
      return st;
    m->layers[m->nlayers - 1].no_bias = !use_bias;
  } else if (!strcmp(c, "Activation")) {
    if ((st = opt_activation(k, cfg, &act)) || (st = sm_seq_activation(m, act))) return st;
  } else if (!strcmp(c, "ReLU") || !strcmp(c, "LeakyReLU")) {
    double slope, thr;
    const char *sk = sm__json_get(cfg, "alpha") ? "alpha" : "negative_slope"; /* Keras 2 : 3 */
    static const char *const maxv[] = {"max_value", NULL};
    if ((st = must_be_null(k, cfg, maxv)) || (st = opt_num(k, cfg, sk, c[0] == 'L' ? 0.3 : 0.0, &slope)) ||
        (st = opt_num(k, cfg, "threshold", 0.0, &thr)))
      return st;
    if (thr != 0.0) return kerr(k, "threshold other than 0 is not supported", NULL, NULL);
    if ((st = slope == 0.0 ? sm_seq_activation(m, SM_ACT_RELU) : sm__seq_leaky_relu(m, (float)slope))) return st;
  } else if (!strcmp(c, "Softmax")) {
    const sm__json *ax = sm__json_get(cfg, "axis");
    if (ax && !(is_int(ax) && (ax->num == -1 || ax->num == (m->nlayers ? m->layers[m->nlayers - 1].out_rank : m->in_rank))))
      return kerr(k, "axis other than the last (-1) is not supported", NULL, NULL);
    if ((st = sm_seq_activation(m, SM_ACT_SOFTMAX))) return st;
  } else if (!strcmp(c, "Rescaling")) {
    double scale, offset;
    const sm__json *s = sm__json_get(cfg, "scale"), *o = sm__json_get(cfg, "offset");
    if ((s && s->type == SM_JSON_ARR) || (o && o->type == SM_JSON_ARR))
      return kerr(k, "per-channel scale or offset is not supported (scalars only)", NULL, NULL);
    if ((st = opt_num(k, cfg, "scale", 1.0, &scale)) || (st = opt_num(k, cfg, "offset", 0.0, &offset)) ||
        (st = sm__seq_rescaling(m, (float)scale, (float)offset)))
      return st;
  } else {
    return kerr(k, "layer class %s is not supported by the trainer", c, NULL);
  }
  return NULL;
}

/* ---- the model ---------------------------------------------------------------------------------- */
/* [null, d...] -> in_shape (rank 1..3). */
static sm_status *input_shape(const kctx *k, const sm__json *bs, int *rank, int64_t *shape) {
  if (!bs || bs->type != SM_JSON_ARR || bs->n < 2 || bs->n > 4)
    return kerr(k, "the input shape must be [batch, 1..3 dimensions]", NULL, NULL);
  *rank = (int)bs->n - 1;
  for (size_t i = 1; i < bs->n; i++) {
    if (!is_int(bs->items[i]) || bs->items[i]->num < 1) return kerr(k, "every input dimension but the batch must be known", NULL, NULL);
    shape[i - 1] = (int64_t)bs->items[i]->num;
  }
  return NULL;
}

/* The name of the layer a functional layer's only input comes from (NULL: not exactly one). */
static const char *inbound_from(const sm__json *layer) {
  const sm__json *nodes = sm__json_get(layer, "inbound_nodes");
  if (!nodes || nodes->type != SM_JSON_ARR || nodes->n != 1) return NULL;
  const sm__json *node = nodes->items[0], *args = sm__json_get(node, "args");
  if (node->type == SM_JSON_ARR) { /* Keras 2: [[name, 0, 0, {}]] */
    if (node->n != 1 || node->items[0]->type != SM_JSON_ARR || node->items[0]->n < 1) return NULL;
    const sm__json *nm = node->items[0]->items[0];
    return nm->type == SM_JSON_STR ? nm->str : NULL;
  }
  if (!args || args->type != SM_JSON_ARR || args->n != 1) return NULL;
  const sm__json *hist = sm__json_get(sm__json_get(args->items[0], "config"), "keras_history");
  if (!hist || hist->type != SM_JSON_ARR || hist->n < 1 || hist->items[0]->type != SM_JSON_STR) return NULL;
  return hist->items[0]->str;
}

static sm_status *build(const sm__json *root, const char *path, sm_seq **out) {
  kctx k = {path, "(model)", "?", "layer"};
  const char *cls = opt_str(root, "class_name");
  const sm__json *cfg = sm__json_get(root, "config"), *layers = sm__json_get(cfg, "layers");
  k.cls = cls ? cls : "?";
  int functional = cls && (!strcmp(cls, "Functional") || !strcmp(cls, "Model"));
  if (!cls || (!functional && strcmp(cls, "Sequential")))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: not a Keras model.to_json() of a Sequential or Functional model "
                         "(class_name %s)", path, cls ? cls : "missing");
  if (!layers || layers->type != SM_JSON_ARR || layers->n == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: config.layers must be a non-empty array", path);
  /* the input: an InputLayer first, else the model's build_input_shape / the first layer's */
  int rank = 0;
  int64_t shape[3];
  sm_status *st = NULL;
  size_t first = 0;
  const sm__json *l0 = layers->items[0], *c0 = sm__json_get(l0, "config");
  const char *n0 = opt_str(c0, "name");
  k.layer = n0 ? n0 : "(first)";
  k.cls = opt_str(l0, "class_name") ? opt_str(l0, "class_name") : "?";
  if (!strcmp(k.cls, "InputLayer")) {
    const sm__json *bs = sm__json_get(c0, "batch_shape");
    st = input_shape(&k, bs ? bs : sm__json_get(c0, "batch_input_shape"), &rank, shape);
    first = 1;
  } else {
    const sm__json *bs = sm__json_get(cfg, "build_input_shape");
    if (!bs) bs = sm__json_get(c0, "batch_input_shape");
    if (!bs) bs = sm__json_get(sm__json_get(l0, "build_config"), "input_shape");
    st = input_shape(&k, bs, &rank, shape);
  }
  sm_seq *m = NULL;
  if (!st) st = sm_seq_new(rank, shape, &m);
  const char *prev = n0;
  for (size_t i = first; i < layers->n && !st; i++) {
    const sm__json *L = layers->items[i], *lc = sm__json_get(L, "config");
    k.cls = opt_str(L, "class_name") ? opt_str(L, "class_name") : "?";
    k.layer = opt_str(lc, "name") ? opt_str(lc, "name") : "?";
    if (!lc || lc->type != SM_JSON_OBJ) {
      st = kerr(&k, "no config object", NULL, NULL);
      break;
    }
    if (!strcmp(k.cls, "InputLayer")) {
      st = kerr(&k, "a second input is not supported (one input, one chain of layers)", NULL, NULL);
      break;
    }
    if (functional) {
      const char *from = inbound_from(L);
      if (!from || !prev || strcmp(from, prev)) {
        st = kerr(&k, "takes its input from \"%s\", not from the layer before it (\"%s\"): only a linear chain is supported",
                  from ? from : "(several or none)", prev ? prev : "");
        break;
      }
    }
    st = add_keras_layer(&k, m, lc);
    if (!st) st = sm__seq_name_last(m, k.layer);
    if (st && !strstr(sm_status_message(st), path)) st = sm_status_prefix(st, "%s: layer \"%s\" (%s)", path, k.layer, k.cls);
    prev = k.layer;
  }
  if (!st && functional) {
    const sm__json *ol = sm__json_get(cfg, "output_layers");
    if (ol && ol->type == SM_JSON_ARR && ol->n == 1 && ol->items[0]->type == SM_JSON_ARR) ol = ol->items[0];
    const char *on = ol && ol->type == SM_JSON_ARR && ol->n >= 1 && ol->items[0]->type == SM_JSON_STR ? ol->items[0]->str : NULL;
    if (!on || !prev || strcmp(on, prev))
      st = sm_status_new(SM_INVALID_ARGUMENT, "%s: the model's output is \"%s\", not its last layer \"%s\" (one chain only)",
                         path, on ? on : "(several or none)", prev ? prev : "");
  }
  if (!st && m->nlayers == 0) st = sm_status_new(SM_INVALID_ARGUMENT, "%s: the model has no layers after its input", path);
  if (st) {
    sm_seq_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

/* ---- compile_config ----------------------------------------------------------------------------- */
static int lower_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if ((*a >= 'A' && *a <= 'Z' ? *a + 32 : *a) != *b) return 0;
  return !*a && !*b;
}

static sm_status *read_optimizer(kctx *k, const sm__json *v, sm_optimizer *o) {
  const char *cls = v->type == SM_JSON_STR ? v->str : opt_str(v, "class_name");
  k->layer = "optimizer";
  k->cls = cls ? cls : "?";
  static const char *const names[] = {"sgd", "adam", "adamw", "rmsprop"};
  int kind = -1;
  for (int i = 0; cls && i < 4; i++)
    if (lower_eq(cls, names[i])) kind = i;
  if (kind < 0) return kerr(k, "optimizer %s is not supported (SGD, Adam, AdamW, RMSprop)", k->cls, NULL);
  *o = sm_optimizer_defaults(names[kind]);
  if (v->type == SM_JSON_STR) return NULL;
  const sm__json *c = sm__json_get(v, "config");
  static const char *const nulls[] = {"clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency",
                                      "loss_scale_factor", "gradient_accumulation_steps", NULL};
  double d;
  int b;
  sm_status *st = must_be_null(k, c, nulls);
  if (!st && !(st = opt_bool(k, c, "use_ema", 0, &b)) && b) st = kerr(k, "use_ema=true is not supported", NULL, NULL);
  if (!st && !(st = opt_bool(k, c, "amsgrad", 0, &b)) && b) st = kerr(k, "amsgrad=true is not supported", NULL, NULL);
  if (!st && o->kind != SM_OPT_ADAMW && !(st = opt_num(k, c, "weight_decay", 0.0, &d)) && d != 0.0)
    st = kerr(k, "weight_decay is AdamW's only here", NULL, NULL);
  float *fields[] = {&o->momentum, &o->beta_1, &o->beta_2, &o->epsilon, &o->weight_decay, &o->rho};
  static const char *const fnames[] = {"momentum", "beta_1", "beta_2", "epsilon", "weight_decay", "rho"};
  for (int i = 0; i < 6 && !st; i++)
    if (!(st = opt_num(k, c, fnames[i], (double)*fields[i], &d))) *fields[i] = (float)d;
  if (!st) st = opt_bool(k, c, "nesterov", 0, &o->nesterov);
  if (!st) st = opt_bool(k, c, "centered", 0, &o->centered);
  const sm__json *lr = sm__json_get(c, "learning_rate");
  if (st || !lr) return st;
  if (lr->type == SM_JSON_NUM) {
    if (!isfinite(lr->num) || lr->num <= 0) return kerr(k, "learning_rate must be > 0", NULL, NULL);
    o->learning_rate = (float)lr->num;
    return NULL;
  }
  /* a schedule */
  const char *sc = opt_str(lr, "class_name");
  const sm__json *lc = sm__json_get(lr, "config");
  double init, steps, rate = 0.0, alpha = 0.0, warm;
  int stair = 0;
  k->layer = "learning_rate";
  k->cls = sc ? sc : "?";
  int ex = sc && !strcmp(sc, "ExponentialDecay"), cos = sc && !strcmp(sc, "CosineDecay");
  if (!ex && !cos) return kerr(k, "learning-rate schedule %s is not supported (ExponentialDecay, CosineDecay)", k->cls, NULL);
  static const char *const warmup[] = {"warmup_target", NULL};
  if ((st = opt_num(k, lc, "initial_learning_rate", 0.0, &init)) || (st = opt_num(k, lc, "decay_steps", 0.0, &steps)) ||
      (st = opt_num(k, lc, "decay_rate", 0.0, &rate)) || (st = opt_num(k, lc, "alpha", 0.0, &alpha)) ||
      (st = opt_bool(k, lc, "staircase", 0, &stair)) || (st = must_be_null(k, lc, warmup)) ||
      (st = opt_num(k, lc, "warmup_steps", 0.0, &warm)))
    return st;
  if (warm != 0.0) return kerr(k, "warmup is not supported", NULL, NULL);
  if (!(init > 0.0) || steps < 1 || steps != floor(steps) || steps > 9e15)
    return kerr(k, "initial_learning_rate must be > 0 and decay_steps a positive integer", NULL, NULL);
  o->learning_rate = (float)init;
  o->schedule = ex ? SM_LR_EXPONENTIAL : SM_LR_COSINE;
  o->decay_steps = (int64_t)steps;
  o->decay_rate = (float)rate;
  o->alpha = (float)alpha;
  o->staircase = stair;
  return NULL;
}

static sm_status *read_loss(kctx *k, const sm__json *v, sm_loss *l) {
  const char *cls = v->type == SM_JSON_STR ? v->str : opt_str(v, "class_name");
  k->layer = "loss";
  k->cls = cls ? cls : "?";
  memset(l, 0, sizeof *l);
  if (cls && (!strcmp(cls, "sparse_categorical_crossentropy") || !strcmp(cls, "SparseCategoricalCrossentropy")))
    l->kind = SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  else if (cls && (!strcmp(cls, "categorical_crossentropy") || !strcmp(cls, "CategoricalCrossentropy")))
    l->kind = SM_LOSS_CATEGORICAL_CROSSENTROPY;
  else if (cls && (!strcmp(cls, "mse") || !strcmp(cls, "mean_squared_error") || !strcmp(cls, "MeanSquaredError")))
    l->kind = SM_LOSS_MSE;
  else
    return kerr(k, "loss %s is not supported (sparse_categorical_crossentropy, categorical_crossentropy, mse)",
                k->cls, NULL);
  if (v->type == SM_JSON_STR) return NULL;
  const sm__json *c = sm__json_get(v, "config");
  double ls;
  static const char *const nulls[] = {"ignore_class", NULL};
  sm_status *st = opt_bool(k, c, "from_logits", 0, &l->from_logits);
  if (!st) st = must_be_null(k, c, nulls);
  if (!st && !(st = opt_num(k, c, "label_smoothing", 0.0, &ls)) && ls != 0.0)
    st = kerr(k, "label_smoothing is not supported", NULL, NULL);
  const char *red = opt_str(c, "reduction");
  if (!st && red && strcmp(red, "sum_over_batch_size")) st = kerr(k, "reduction %s is not supported", red, NULL);
  return st;
}

static sm_status *read_file(const char *path, sm__json **root) {
  char *text = NULL;
  size_t len = 0;
  sm_status *st = sm__file_read_max(path, KERAS_JSON_MAX, &text, &len);
  if (!st) st = sm__json_parse(text, len, path, root);
  free(text);
  return st;
}

sm_status *sm_keras_compile_config(const char *path, sm_optimizer *opt, int *has_opt, sm_loss *loss, int *has_loss) {
  if (!path || !opt || !has_opt || !loss || !has_loss)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_keras_compile_config: every argument is required");
  *has_opt = *has_loss = 0;
  sm__json *root = NULL;
  sm_status *st = read_file(path, &root);
  const sm__json *cc = st ? NULL : sm__json_get(root, "compile_config");
  const sm__json *o = sm__json_get(cc, "optimizer"), *l = sm__json_get(cc, "loss");
  kctx k = {path, "", "", "compile_config"};
  if (!st && o && o->type != SM_JSON_NULL && !(st = read_optimizer(&k, o, opt))) *has_opt = 1;
  if (!st && l && l->type != SM_JSON_NULL && !(st = read_loss(&k, l, loss))) *has_loss = 1;
  sm__json_free(root);
  return st;
}

sm_status *sm_seq_from_keras(const char *path, sm_seq **out) {
  if (!out || !path) return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_from_keras: path and out are required");
  *out = NULL;
  sm__json *root = NULL;
  sm_status *st = read_file(path, &root);
  if (!st) st = build(root, path, out);
  sm__json_free(root);
  return st;
}

sm_status *sm__seq_from_keras_text(const char *text, size_t len, const char *what, sm_seq **out) {
  *out = NULL;
  sm__json *root = NULL;
  sm_status *st = sm__json_parse(text, len, what, &root);
  if (!st) st = build(root, what, out);
  sm__json_free(root);
  return st;
}
