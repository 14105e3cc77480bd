/* seq.c - the Sequential model: layers and their shapes and Keras names, summary(), compile
 * (Keras's initialisers, optimizer slots), the defaults of the option structs, and the seeded RNG
 * that makes a run reproducible. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/train_internal.h"

/* ---- RNG ---------------------------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
void sm__rng_seed(sm__rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
uint64_t sm__rng_next(sm__rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}
float sm__rng_uniform(sm__rng *r) { return (float)(sm__rng_next(r) >> 40) * (1.0f / 16777216.0f); }
uint64_t sm__rng_below(sm__rng *r, uint64_t n) {
  if (n <= 1) return 0;
  uint64_t lim = UINT64_MAX - UINT64_MAX % n; /* reject the uneven tail */
  uint64_t v;
  do v = sm__rng_next(r);
  while (v >= lim);
  return v % n;
}

int64_t sm__elems(int rank, const int64_t *shape) {
  int64_t e = 1;
  for (int i = 0; i < rank; i++) e *= shape[i];
  return e;
}

/* ---- model and layers ----------------------------------------------------------------------- */
/* Every dimension of a layer's output is kept below this so that batch x elements never overflows
 * and a typo (a million filters) fails here rather than at allocation. */
#define DIM_MAX ((int64_t)1 << 24)
#define ELEMS_MAX ((int64_t)1 << 28)

sm_status *sm_seq_new(int rank, const int64_t *in_shape, sm_seq **out) {
  if (!out) return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_new: out is NULL");
  *out = NULL;
  if (rank < 1 || rank > 3 || !in_shape)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_new: input rank must be 1..3 (without the batch), got %d",
                         rank);
  for (int i = 0; i < rank; i++)
    if (in_shape[i] < 1 || in_shape[i] > DIM_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_new: input dimension %d is %lld (must be 1..%lld)", i,
                           (long long)in_shape[i], (long long)DIM_MAX);
  if (sm__elems(rank, in_shape) > ELEMS_MAX)
    return sm_status_new(SM_OUT_OF_RANGE, "sm_seq_new: input of %lld elements per sample is too large",
                         (long long)sm__elems(rank, in_shape));
  sm_seq *m = calloc(1, sizeof *m);
  if (!m) return sm_status_new(SM_NO_MEMORY, "sm_seq_new: out of memory");
  m->in_rank = rank;
  memcpy(m->in_shape, in_shape, (size_t)rank * sizeof *in_shape);
  *out = m;
  return NULL;
}

void sm_seq_free(sm_seq *m) {
  if (!m) return;
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    sm_tensor_free(L->kernel);
    sm_tensor_free(L->bias);
    sm_tensor_free(L->moving_mean);
    sm_tensor_free(L->moving_var);
    for (int s = 0; s < SM_OPT_SLOTS; s++) {
      sm_tensor_free(L->kernel_slot[s]);
      sm_tensor_free(L->bias_slot[s]);
    }
  }
  sm__train_free(m->priv);
  free(m);
}

static const char *kind_base(int kind) {
  switch (kind) {
    case SM_LAYER_CONV2D: return "conv2d";
    case SM_LAYER_MAXPOOL2D: return "max_pooling2d";
    case SM_LAYER_FLATTEN: return "flatten";
    case SM_LAYER_DENSE: return "dense";
    case SM_LAYER_DROPOUT: return "dropout";
    case SM_LAYER_BATCHNORM: return "batch_normalization";
    case SM_LAYER_AVGPOOL2D: return "average_pooling2d";
    case SM_LAYER_GAP2D: return "global_average_pooling2d";
    case SM_LAYER_RESCALING: return "rescaling";
    case SM_LAYER_LEAKY_RELU: return "leaky_re_lu";
    case SM_LAYER_RESHAPE: return "reshape";
    default: return "activation";
  }
}
static const char *kind_class(int kind) {
  switch (kind) {
    case SM_LAYER_CONV2D: return "Conv2D";
    case SM_LAYER_MAXPOOL2D: return "MaxPooling2D";
    case SM_LAYER_FLATTEN: return "Flatten";
    case SM_LAYER_DENSE: return "Dense";
    case SM_LAYER_DROPOUT: return "Dropout";
    case SM_LAYER_BATCHNORM: return "BatchNormalization";
    case SM_LAYER_AVGPOOL2D: return "AveragePooling2D";
    case SM_LAYER_GAP2D: return "GlobalAveragePooling2D";
    case SM_LAYER_RESCALING: return "Rescaling";
    case SM_LAYER_LEAKY_RELU: return "LeakyReLU";
    case SM_LAYER_RESHAPE: return "Reshape";
    default: return "Activation";
  }
}

/* The next layer slot, its input shape set from the previous layer, and its Keras name. */
static sm_status *add_layer(sm_seq *m, int kind, const char *what, sm__layer **out) {
  if (!m) return sm_status_new(SM_INVALID_ARGUMENT, "%s: model is NULL", what);
  if (m->compiled)
    return sm_status_new(SM_FAILED_PRECONDITION, "%s: the model is compiled; layers cannot be added after compile",
                         what);
  if (m->nlayers >= SM_SEQ_MAX_LAYERS)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: a model holds at most %d layers", what, SM_SEQ_MAX_LAYERS);
  sm__layer *L = &m->layers[m->nlayers];
  memset(L, 0, sizeof *L);
  L->kind = kind;
  if (m->nlayers == 0) {
    L->in_rank = m->in_rank;
    memcpy(L->in_shape, m->in_shape, sizeof L->in_shape);
  } else {
    const sm__layer *P = &m->layers[m->nlayers - 1];
    L->in_rank = P->out_rank;
    memcpy(L->in_shape, P->out_shape, sizeof L->in_shape);
  }
  int same = 0;
  for (int i = 0; i < m->nlayers; i++) same += m->layers[i].kind == kind;
  if (same == 0)
    snprintf(L->name, sizeof L->name, "%s", kind_base(kind));
  else
    snprintf(L->name, sizeof L->name, "%s_%d", kind_base(kind), same);
  *out = L;
  return NULL;
}

static sm_status *check_act(int act, const char *what) {
  if (act != SM_ACT_NONE && act != SM_ACT_RELU && act != SM_ACT_SOFTMAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: unknown activation %d", what, act);
  return NULL;
}

/* TensorFlow's windowed output size (VALID: floor((in - k) / s) + 1, SAME: ceil(in / s)). */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int same) {
  return same ? (in + s - 1) / s : (in - k) / s + 1;
}

static sm_status *window_layer(sm_seq *m, int kind, int kh, int kw, int sh, int sw, int padding, const char *what,
                               sm__layer **out) {
  sm__layer *L;
  sm_status *st = add_layer(m, kind, what, &L);
  if (st) return st;
  if (L->in_rank != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: needs an input of rank 3 (height, width, channels), got rank %d",
                         what, L->in_rank);
  if (kh < 1 || kw < 1 || kh > 4096 || kw > 4096)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: window %dx%d must be 1..4096 on each side", what, kh, kw);
  if (sh < 1 || sw < 1 || sh > 4096 || sw > 4096)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: strides %dx%d must be 1..4096", what, sh, sw);
  if (padding != SM_PAD_VALID && padding != SM_PAD_SAME)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: unknown padding %d", what, padding);
  if (padding == SM_PAD_VALID && (L->in_shape[0] < kh || L->in_shape[1] < kw))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: window %dx%d is larger than its %lldx%lld input (padding valid)",
                         what, kh, kw, (long long)L->in_shape[0], (long long)L->in_shape[1]);
  L->kh = kh;
  L->kw = kw;
  L->sh = sh;
  L->sw = sw;
  L->padding = padding;
  L->out_rank = 3;
  L->out_shape[0] = window_out(L->in_shape[0], kh, sh, padding);
  L->out_shape[1] = window_out(L->in_shape[1], kw, sw, padding);
  *out = L;
  return NULL;
}

static sm_status *commit_layer(sm_seq *m, sm__layer *L, const char *what) {
  for (int i = 0; i < L->out_rank; i++)
    if (L->out_shape[i] < 1 || L->out_shape[i] > DIM_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: output dimension %d would be %lld", what, i,
                           (long long)L->out_shape[i]);
  if (sm__elems(L->out_rank, L->out_shape) > ELEMS_MAX)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: output of %lld elements per sample is too large", what,
                         (long long)sm__elems(L->out_rank, L->out_shape));
  m->nlayers++;
  return NULL;
}

sm_status *sm_seq_conv2d(sm_seq *m, int filters, int kh, int kw, int sh, int sw, int padding, int activation) {
  const char *what = "conv2d";
  sm_status *st = check_act(activation, what);
  if (st) return st;
  if (filters < 1 || filters > 65536)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: filters must be 1..65536, got %d", what, filters);
  sm__layer *L;
  if ((st = window_layer(m, SM_LAYER_CONV2D, kh, kw, sh, sw, padding, what, &L))) return st;
  if ((int64_t)kh * kw * L->in_shape[2] * filters > ELEMS_MAX)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: kernel %dx%dx%lldx%d is too large", what, kh, kw,
                         (long long)L->in_shape[2], filters);
  L->units = filters;
  L->activation = activation;
  L->out_shape[2] = filters;
  return commit_layer(m, L, what);
}

sm_status *sm_seq_max_pool2d(sm_seq *m, int ph, int pw, int sh, int sw, int padding) {
  sm__layer *L;
  sm_status *st = window_layer(m, SM_LAYER_MAXPOOL2D, ph, pw, sh, sw, padding, "max_pool2d", &L);
  if (st) return st;
  L->out_shape[2] = L->in_shape[2];
  return commit_layer(m, L, "max_pool2d");
}

sm_status *sm_seq_flatten(sm_seq *m) {
  sm__layer *L;
  sm_status *st = add_layer(m, SM_LAYER_FLATTEN, "flatten", &L);
  if (st) return st;
  L->out_rank = 1;
  L->out_shape[0] = sm__elems(L->in_rank, L->in_shape);
  return commit_layer(m, L, "flatten");
}

sm_status *sm_seq_dense(sm_seq *m, int units, int activation) {
  const char *what = "dense";
  sm_status *st = check_act(activation, what);
  if (st) return st;
  if (units < 1 || units > (1 << 20))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: units must be 1..%d, got %d", what, 1 << 20, units);
  sm__layer *L;
  if ((st = add_layer(m, SM_LAYER_DENSE, what, &L))) return st;
  if (L->in_rank != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: needs a rank-1 input (add flatten first), got rank %d", what,
                         L->in_rank);
  if (L->in_shape[0] * units > ELEMS_MAX)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: kernel %lldx%d is too large", what, (long long)L->in_shape[0], units);
  L->units = units;
  L->activation = activation;
  L->out_rank = 1;
  L->out_shape[0] = units;
  return commit_layer(m, L, what);
}

sm_status *sm_seq_dropout(sm_seq *m, float rate) {
  if (!(rate >= 0.0f && rate < 1.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "dropout: rate must be in [0, 1), got %g", (double)rate);
  sm__layer *L;
  sm_status *st = add_layer(m, SM_LAYER_DROPOUT, "dropout", &L);
  if (st) return st;
  L->rate = rate;
  L->out_rank = L->in_rank;
  memcpy(L->out_shape, L->in_shape, sizeof L->out_shape);
  return commit_layer(m, L, "dropout");
}

sm_status *sm_seq_activation(sm_seq *m, int activation) {
  sm_status *st = check_act(activation, "activation");
  if (st) return st;
  sm__layer *L;
  if ((st = add_layer(m, SM_LAYER_ACTIVATION, "activation", &L))) return st;
  L->activation = activation;
  L->out_rank = L->in_rank;
  memcpy(L->out_shape, L->in_shape, sizeof L->out_shape);
  return commit_layer(m, L, "activation");
}

/* ---- the layers of Keras configs (internal: src/train/keras.c builds them) -------------------- */
static sm_status *same_shape_layer(sm_seq *m, int kind, const char *what, sm__layer **out) {
  sm_status *st = add_layer(m, kind, what, out);
  if (st) return st;
  (*out)->out_rank = (*out)->in_rank;
  memcpy((*out)->out_shape, (*out)->in_shape, sizeof (*out)->out_shape);
  return NULL;
}

sm_status *sm__seq_batchnorm(sm_seq *m, float momentum, float epsilon, int center, int scale) {
  const char *what = "batch_normalization";
  if (!(momentum >= 0.0f && momentum <= 1.0f) || !(epsilon > 0.0f) || !isfinite(epsilon))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: momentum must be in [0, 1] and epsilon > 0 (got %g, %g)", what,
                         (double)momentum, (double)epsilon);
  sm__layer *L;
  sm_status *st = same_shape_layer(m, SM_LAYER_BATCHNORM, what, &L);
  if (st) return st;
  L->momentum = momentum;
  L->epsilon = epsilon;
  L->center = center != 0;
  L->use_scale = scale != 0;
  L->units = (int)L->in_shape[L->in_rank - 1];
  return commit_layer(m, L, what);
}

sm_status *sm__seq_avg_pool2d(sm_seq *m, int ph, int pw, int sh, int sw, int padding) {
  sm__layer *L;
  sm_status *st = window_layer(m, SM_LAYER_AVGPOOL2D, ph, pw, sh, sw, padding, "average_pooling2d", &L);
  if (st) return st;
  L->out_shape[2] = L->in_shape[2];
  return commit_layer(m, L, "average_pooling2d");
}

sm_status *sm__seq_gap2d(sm_seq *m) {
  const char *what = "global_average_pooling2d";
  sm__layer *L;
  sm_status *st = add_layer(m, SM_LAYER_GAP2D, what, &L);
  if (st) return st;
  if (L->in_rank != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: needs an input of rank 3 (height, width, channels), got rank %d",
                         what, L->in_rank);
  L->out_rank = 1;
  L->out_shape[0] = L->in_shape[2];
  return commit_layer(m, L, what);
}

sm_status *sm__seq_rescaling(sm_seq *m, float scale, float offset) {
  if (!isfinite(scale) || !isfinite(offset))
    return sm_status_new(SM_INVALID_ARGUMENT, "rescaling: scale and offset must be finite");
  sm__layer *L;
  sm_status *st = same_shape_layer(m, SM_LAYER_RESCALING, "rescaling", &L);
  if (st) return st;
  L->scale = scale;
  L->offset = offset;
  return commit_layer(m, L, "rescaling");
}

sm_status *sm__seq_leaky_relu(sm_seq *m, float slope) {
  if (!isfinite(slope)) return sm_status_new(SM_INVALID_ARGUMENT, "leaky_re_lu: negative_slope must be finite");
  sm__layer *L;
  sm_status *st = same_shape_layer(m, SM_LAYER_LEAKY_RELU, "leaky_re_lu", &L);
  if (st) return st;
  L->scale = slope;
  return commit_layer(m, L, "leaky_re_lu");
}

sm_status *sm__seq_reshape(sm_seq *m, int rank, const int64_t *shape) {
  const char *what = "reshape";
  sm__layer *L;
  sm_status *st = add_layer(m, SM_LAYER_RESHAPE, what, &L);
  if (st) return st;
  if (rank < 1 || rank > 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: target rank must be 1..3 (without the batch), got %d", what, rank);
  int64_t known = 1, infer = -1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] == -1 && infer < 0) {
      infer = i;
      continue;
    }
    if (shape[i] < 1 || shape[i] > DIM_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: target dimension %d is %lld", what, i, (long long)shape[i]);
    known *= shape[i];
  }
  int64_t in = sm__elems(L->in_rank, L->in_shape);
  memcpy(L->out_shape, shape, (size_t)rank * sizeof *shape);
  if (infer >= 0) L->out_shape[infer] = in % known ? 0 : in / known;
  L->out_rank = rank;
  if (sm__elems(rank, L->out_shape) != in)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: cannot reshape %lld elements per sample to the target shape", what,
                         (long long)in);
  return commit_layer(m, L, what);
}

static int name_char_ok(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

sm_status *sm__seq_name_last(sm_seq *m, const char *name) {
  size_t n = strlen(name);
  if (!m->nlayers || n == 0 || n >= SM_SEQ_NAME_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "layer name \"%.80s\": must be 1..%d characters", name, SM_SEQ_NAME_MAX - 1);
  for (size_t i = 0; i < n; i++)
    if (!name_char_ok(name[i]))
      return sm_status_new(SM_INVALID_ARGUMENT, "layer name \"%.80s\": only a-z, 0-9 and _ are exported", name);
  for (int i = 0; i < m->nlayers - 1; i++)
    if (!strcmp(m->layers[i].name, name))
      return sm_status_new(SM_INVALID_ARGUMENT, "layer name \"%s\" is used twice", name);
  memcpy(m->layers[m->nlayers - 1].name, name, n + 1);
  return NULL;
}

/* Trainable parameters, as Keras counts them (and the moving statistics in *frozen). */
static int64_t layer_params(const sm__layer *L, int64_t *frozen) {
  int64_t bias = L->no_bias ? 0 : L->units;
  *frozen = L->kind == SM_LAYER_BATCHNORM ? 2 * (int64_t)L->units : 0;
  if (L->kind == SM_LAYER_CONV2D) return (int64_t)L->kh * L->kw * L->in_shape[2] * L->units + bias;
  if (L->kind == SM_LAYER_DENSE) return L->in_shape[0] * L->units + bias;
  if (L->kind == SM_LAYER_BATCHNORM) return (int64_t)(L->center + L->use_scale) * L->units;
  return 0;
}

static void commas(int64_t v, char *buf, size_t cap) {
  char raw[32];
  snprintf(raw, sizeof raw, "%lld", (long long)v);
  size_t n = strlen(raw), o = 0;
  for (size_t i = 0; i < n && o + 2 < cap; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = raw[i];
  }
  buf[o] = 0;
}

char *sm_seq_summary(const sm_seq *m) {
  if (!m) return NULL;
  size_t cap = 512 + (size_t)m->nlayers * 160, len = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  const char *rule_eq = "=================================================================";
  const char *rule_us = "_________________________________________________________________";
  len += (size_t)snprintf(s + len, cap - len, "Model: \"sequential\"\n%s\n%-33s%-25s%s\n%s\n", rule_us,
                          "Layer (type)", "Output Shape", "Param #", rule_eq);
  int64_t total = 0, frozen_total = 0;
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *L = &m->layers[i];
    char nm[128], shape[96], pc[32];
    snprintf(nm, sizeof nm, "%s (%s)", L->name, kind_class(L->kind));
    int o = snprintf(shape, sizeof shape, "(None");
    for (int d = 0; d < L->out_rank; d++) o += snprintf(shape + o, sizeof shape - (size_t)o, ", %lld", (long long)L->out_shape[d]);
    snprintf(shape + o, sizeof shape - (size_t)o, ")");
    int64_t frozen, p = layer_params(L, &frozen);
    total += p;
    frozen_total += frozen;
    p += frozen;
    commas(p, pc, sizeof pc);
    len += (size_t)snprintf(s + len, cap - len, "%-33s%-25s%s\n%s\n", nm, shape, pc,
                            i + 1 < m->nlayers ? rule_us : rule_eq);
  }
  if (m->nlayers == 0) len += (size_t)snprintf(s + len, cap - len, "%s\n", rule_eq);
  char tc[32], tt[32], tf[32];
  commas(total + frozen_total, tc, sizeof tc);
  commas(total, tt, sizeof tt);
  commas(frozen_total, tf, sizeof tf);
  snprintf(s + len, cap - len, "Total params: %s\nTrainable params: %s\nNon-trainable params: %s\n%s\n", tc, tt, tf,
           rule_us);
  return s;
}

/* ---- defaults ---------------------------------------------------------------------------------- */
sm_optimizer sm_sgd_defaults(void) {
  sm_optimizer o = {.kind = SM_OPT_SGD, .learning_rate = 0.01f, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f};
  return o;
}
sm_optimizer sm_adam_defaults(void) {
  sm_optimizer o = {.kind = SM_OPT_ADAM, .learning_rate = 0.001f, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f};
  return o;
}
sm_optimizer sm_adamw_defaults(void) {
  sm_optimizer o = sm_adam_defaults();
  o.kind = SM_OPT_ADAMW;
  o.weight_decay = 0.004f;
  return o;
}
sm_optimizer sm_rmsprop_defaults(void) {
  sm_optimizer o = {.kind = SM_OPT_RMSPROP, .learning_rate = 0.001f, .epsilon = 1e-7f, .rho = 0.9f};
  return o;
}
sm_optimizer sm_optimizer_defaults(const char *name) {
  sm_optimizer o = {.kind = -1};
  if (!name) return o;
  if (!strcmp(name, "sgd")) return sm_sgd_defaults();
  if (!strcmp(name, "adam")) return sm_adam_defaults();
  if (!strcmp(name, "adamw")) return sm_adamw_defaults();
  if (!strcmp(name, "rmsprop")) return sm_rmsprop_defaults();
  return o;
}
sm_fit_options sm_fit_defaults(void) {
  sm_fit_options f;
  memset(&f, 0, sizeof f);
  f.epochs = 1;
  f.batch_size = 32;
  f.shuffle = 1;
  return f;
}
int64_t sm_seq_iterations(const sm_seq *m) { return m ? m->iterations : 0; }

/* ---- compile ---------------------------------------------------------------------------------- */
static sm_status *new_f32(int rank, const int64_t *dims, sm_tensor **out) {
  return sm_tensor_new(SM_FLOAT, rank, dims, out);
}

sm_status *sm_seq_compile(sm_seq *m, const sm_optimizer *opt, const sm_loss *loss, uint64_t seed) {
  if (!m || !opt || !loss) return sm_status_new(SM_INVALID_ARGUMENT, "compile: model, optimizer and loss are required");
  if (m->compiled) return sm_status_new(SM_FAILED_PRECONDITION, "compile: the model is already compiled");
  if (m->nlayers == 0) return sm_status_new(SM_INVALID_ARGUMENT, "compile: the model has no layers");
  if (opt->kind < SM_OPT_SGD || opt->kind > SM_OPT_RMSPROP)
    return sm_status_new(SM_INVALID_ARGUMENT, "compile: unknown optimizer %d", opt->kind);
  sm_status *ost = sm__check_optimizer(opt);
  if (ost) return sm_status_prefix(ost, "compile");
  if (!(opt->learning_rate > 0.0f) || !isfinite(opt->learning_rate))
    return sm_status_new(SM_INVALID_ARGUMENT, "compile: learning_rate must be > 0, got %g", (double)opt->learning_rate);
  if (opt->kind == SM_OPT_SGD && !(opt->momentum >= 0.0f && opt->momentum <= 1.0f))
    return sm_status_new(SM_INVALID_ARGUMENT, "compile: SGD momentum must be in [0, 1], got %g", (double)opt->momentum);
  if ((opt->kind == SM_OPT_ADAM || opt->kind == SM_OPT_ADAMW) &&
      (!(opt->beta_1 >= 0.0f && opt->beta_1 < 1.0f) || !(opt->beta_2 >= 0.0f && opt->beta_2 < 1.0f) ||
       !(opt->epsilon >= 0.0f) || !isfinite(opt->epsilon)))
    return sm_status_new(SM_INVALID_ARGUMENT, "compile: Adam needs beta_1, beta_2 in [0, 1) and epsilon >= 0");
  const sm__layer *last = &m->layers[m->nlayers - 1];
  if (loss->kind == SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || loss->kind == SM_LOSS_CATEGORICAL_CROSSENTROPY) {
    if (last->out_rank != 1 || last->out_shape[0] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "compile: categorical cross-entropy needs a rank-1 output per sample (classes), "
                           "the last layer %s gives rank %d",
                           last->name, last->out_rank);
  } else if (loss->kind != SM_LOSS_MSE) {
    return sm_status_new(SM_INVALID_ARGUMENT, "compile: unknown loss %d", loss->kind);
  }
  m->opt = *opt;
  m->loss = *loss;
  m->seed = seed;

  sm__rng rng;
  sm__rng_seed(&rng, seed);
  sm_status *st = NULL;
  for (int i = 0; i < m->nlayers && !st; i++) {
    sm__layer *L = &m->layers[i];
    int64_t kd[4];
    int kr;
    double fan_in, fan_out;
    if (L->kind == SM_LAYER_CONV2D) {
      kd[0] = L->kh, kd[1] = L->kw, kd[2] = L->in_shape[2], kd[3] = L->units;
      kr = 4;
      fan_in = (double)L->kh * L->kw * (double)L->in_shape[2];
      fan_out = (double)L->kh * L->kw * (double)L->units;
    } else if (L->kind == SM_LAYER_DENSE) {
      kd[0] = L->in_shape[0], kd[1] = L->units;
      kr = 2;
      fan_in = (double)L->in_shape[0];
      fan_out = (double)L->units;
    } else if (L->kind == SM_LAYER_BATCHNORM) {
      /* gamma ones, beta zeros, moving mean zeros, moving variance ones (Keras's initialisers) */
      kd[0] = L->units;
      kr = 1;
      fan_in = fan_out = 0.0;
      if ((st = new_f32(1, kd, &L->moving_mean)) || (st = new_f32(1, kd, &L->moving_var))) break;
    } else {
      continue;
    }
    int64_t bd[1] = {L->units};
    if ((st = new_f32(kr, kd, &L->kernel)) || (st = new_f32(1, bd, &L->bias))) break;
    for (int s = 0; s < SM_OPT_SLOTS && !st; s++)
      if (sm__opt_slot_name(opt, s) && !(st = new_f32(kr, kd, &L->kernel_slot[s]))) st = new_f32(1, bd, &L->bias_slot[s]);
    if (st) break;
    if (L->kind == SM_LAYER_BATCHNORM) {
      float *gm = sm_tensor_data(L->kernel), *mv = sm_tensor_data(L->moving_var);
      for (int j = 0; j < L->units; j++) gm[j] = mv[j] = 1.0f;
      continue;
    }
    /* glorot_uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)) */
    float limit = (float)sqrt(6.0 / (fan_in + fan_out));
    float *k = sm_tensor_data(L->kernel);
    int64_t n = sm_tensor_num_elements(L->kernel);
    for (int64_t j = 0; j < n; j++) k[j] = limit * (2.0f * sm__rng_uniform(&rng) - 1.0f);
  }
  sm__train *tr = NULL;
  if (!st) st = sm__train_get(m, &tr);
  if (!st) {
    for (int i = 0; i < m->nlayers && !st; i++) {
      sm__layer *L = &m->layers[i];
      if (!L->kernel) continue;
      tr->gk[i] = malloc((size_t)sm_tensor_num_elements(L->kernel) * sizeof(float));
      tr->gb[i] = malloc((size_t)L->units * sizeof(float));
      if (!tr->gk[i] || !tr->gb[i]) st = sm_status_new(SM_NO_MEMORY, "compile: out of memory for %s's gradients", L->name);
    }
  }
  if (st) {
    for (int i = 0; i < m->nlayers; i++) {
      sm__layer *L = &m->layers[i];
      sm_tensor_free(L->kernel);
      sm_tensor_free(L->bias);
      sm_tensor_free(L->moving_mean);
      sm_tensor_free(L->moving_var);
      L->kernel = L->bias = L->moving_mean = L->moving_var = NULL;
      for (int s = 0; s < SM_OPT_SLOTS; s++) {
        sm_tensor_free(L->kernel_slot[s]);
        sm_tensor_free(L->bias_slot[s]);
        L->kernel_slot[s] = L->bias_slot[s] = NULL;
      }
    }
    sm__train_free(m->priv);
    m->priv = NULL;
    return sm_status_prefix(st, "compile");
  }
  sm__rng_seed(&tr->rng, seed ^ 0x5eedf17ull);
  m->compiled = 1;
  return NULL;
}
