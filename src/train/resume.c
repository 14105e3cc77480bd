/* resume.c - sm_seq_resume: an export written by sm_seq_export back into a compiled model.
 *
 * Reads assets.extra/libsavedmodel_train.txt (format in export_internal.h) strictly, line by
 * line, in its fixed order; rebuilds the layers through the trainer's own sm_seq_* calls (so every
 * shape is checked again), compiles, then overwrites the fresh weights and optimizer slots with
 * the exported variables (variables/variables) and restores the step and epoch counts. Before
 * any of that it verifies every piece of the export: saved_model.pb (present, both MetaGraphs,
 * and the bytes fingerprint.pb hashed), variables.index (fingerprint.pb's checkpoint_hash), every
 * tensor of the bundle (its CRC), the labels asset of a classifier, and the state's ranges
 * (SM_TRAIN_MAX_EPOCHS, SM_TRAIN_MAX_ITERATIONS). Any failure is an error naming the file. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "fingerprint.pb-c.h"
#include "savedmodel/builder.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"
#include "train/export_internal.h"
#include "train/train_internal.h"

#define MAX_STATE_BYTES (1 << 20)
#define MAX_TOKENS 12

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

/* ---- the state file ---------------------------------------------------------------------------- */
typedef struct parser {
  const char *path;
  char *text;      /* modified in place: lines and tokens are NUL-terminated */
  size_t len, pos;
  int line;        /* 1-based number of the current line */
  char *tok[MAX_TOKENS];
  int ntok;
} parser;

static sm_status *perr(const parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sm_status *perr(const parser *p, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return sm_status_new(SM_DATA_LOSS, "%s:%d: %s", p->path, p->line, msg);
}

/* Splits the next line into tokens at single spaces. */
static sm_status *next_line(parser *p) {
  p->line++;
  p->ntok = 0;
  if (p->pos >= p->len) return perr(p, "unexpected end of file");
  char *start = p->text + p->pos, *nl = memchr(start, '\n', p->len - p->pos);
  if (!nl) return perr(p, "line does not end in a newline (file truncated?)");
  *nl = 0;
  p->pos = (size_t)(nl - p->text) + 1;
  if (!*start) return perr(p, "empty line");
  for (char *c = start; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) return perr(p, "byte 0x%02x is not printable ASCII", (unsigned char)*c);
  char *c = start;
  for (;;) {
    if (*c == ' ' || !*c) return perr(p, "stray space");
    if (p->ntok == MAX_TOKENS) return perr(p, "too many fields");
    p->tok[p->ntok++] = c;
    char *sp = strchr(c, ' ');
    if (!sp) break;
    *sp = 0;
    c = sp + 1;
  }
  return NULL;
}

static sm_status *expect_key(parser *p, const char *key, int min, int max) {
  sm_status *s = next_line(p);
  if (s) return s;
  if (strcmp(p->tok[0], key)) return perr(p, "expected \"%s\", got \"%.40s\"", key, p->tok[0]);
  if (p->ntok - 1 < min || p->ntok - 1 > max)
    return perr(p, "\"%s\" takes %d..%d values, got %d", key, min, max, p->ntok - 1);
  return NULL;
}

static sm_status *parse_i64(const parser *p, const char *what, const char *v, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || (*v != '-' && (*v < '0' || *v > '9')) || x < lo || x > hi)
    return perr(p, "%s: \"%.40s\" is not an integer in [%lld, %lld]", what, v, (long long)lo, (long long)hi);
  *out = x;
  return NULL;
}

static sm_status *parse_int(const parser *p, const char *what, const char *v, int lo, int hi, int *out) {
  int64_t x = 0;
  sm_status *s = parse_i64(p, what, v, lo, hi, &x);
  if (!s) *out = (int)x;
  return s;
}

static sm_status *parse_float(const parser *p, const char *what, const char *v, float lo, float hi, float *out) {
  char *end;
  errno = 0;
  float x = strtof(v, &end);
  if (!*v || *end || errno || !isfinite(x) || x < lo || x > hi || strpbrk(v, "xXnN"))
    return perr(p, "%s: \"%.40s\" is not a number in [%g, %g]", what, v, (double)lo, (double)hi);
  *out = x;
  return NULL;
}

/* Field i must be "key=..."; returns the value. */
static sm_status *field(const parser *p, int i, const char *key, const char **val) {
  size_t kl = strlen(key);
  if (i >= p->ntok) return perr(p, "missing field %s=", key);
  if (strncmp(p->tok[i], key, kl) || p->tok[i][kl] != '=')
    return perr(p, "field %d: expected %s=..., got \"%.40s\"", i, key, p->tok[i]);
  *val = p->tok[i] + kl + 1;
  return NULL;
}

static sm_status *int_field(const parser *p, int i, const char *key, int lo, int hi, int *out) {
  const char *v = NULL;
  sm_status *s = field(p, i, key, &v);
  return s ? s : parse_int(p, key, v, lo, hi, out);
}

static sm_status *float_field(const parser *p, int i, const char *key, float lo, float hi, float *out) {
  const char *v = NULL;
  sm_status *s = field(p, i, key, &v);
  return s ? s : parse_float(p, key, v, lo, hi, out);
}

/* "AxB" with both in [1, 65536]. */
static sm_status *pair_field(const parser *p, int i, const char *key, int *a, int *b) {
  const char *v = NULL;
  sm_status *s = field(p, i, key, &v);
  if (s) return s;
  const char *x = strchr(v, 'x');
  char first[16];
  if (!x || (size_t)(x - v) >= sizeof first) return perr(p, "%s: \"%.40s\" is not HxW", key, v);
  memcpy(first, v, (size_t)(x - v));
  first[x - v] = 0;
  s = parse_int(p, key, first, 1, 65536, a);
  return s ? s : parse_int(p, key, x + 1, 1, 65536, b);
}

static sm_status *enum_field(const parser *p, int i, const char *key, const char *const *names, int n, int *out) {
  const char *v = NULL;
  sm_status *s = field(p, i, key, &v);
  if (s) return s;
  for (int k = 0; k < n; k++)
    if (!strcmp(v, names[k])) {
      *out = k;
      return NULL;
    }
  return perr(p, "%s: unknown value \"%.40s\"", key, v);
}

static const char *const ACTS[] = {"linear", "relu", "softmax"}; /* SM_ACT_* order */
static const char *const PADS[] = {"valid", "same"};              /* SM_PAD_* order */

static sm_status *check_count(const parser *p, int n) {
  return p->ntok == n ? NULL : perr(p, "\"%s %s\" takes %d fields, got %d", p->tok[0], p->tok[1], n - 1, p->ntok - 1);
}

/* One "layer ..." line, applied to m through the trainer's layer calls. */
static sm_status *parse_layer(parser *p, sm_seq *m) {
  const char *kind = p->tok[1], *name = NULL;
  sm_status *s = field(p, 2, "name", &name);
  if (s) return s;
  int a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0;
  float rate = 0, x1 = 0, x2 = 0;
  int64_t shape[3];
  int before = m->nlayers, k, no_bias = 0;
  /* conv2d and dense: an optional last field use_bias=0 */
  if ((!strcmp(kind, "conv2d") || !strcmp(kind, "dense")) && !strcmp(p->tok[p->ntok - 1], "use_bias=0")) {
    no_bias = 1;
    p->ntok--;
  }
  if (!strcmp(kind, "conv2d")) {
    k = SM_LAYER_CONV2D;
    if (!(s = check_count(p, 8)) && !(s = int_field(p, 3, "filters", 1, 1 << 20, &a)) &&
        !(s = pair_field(p, 4, "kernel", &b, &c)) && !(s = pair_field(p, 5, "strides", &d, &e)) &&
        !(s = enum_field(p, 6, "padding", PADS, 2, &f)))
      s = enum_field(p, 7, "activation", ACTS, 3, &g);
  } else if (!strcmp(kind, "max_pooling2d")) {
    k = SM_LAYER_MAXPOOL2D;
    if (!(s = check_count(p, 6)) && !(s = pair_field(p, 3, "pool", &a, &b)) && !(s = pair_field(p, 4, "strides", &c, &d)))
      s = enum_field(p, 5, "padding", PADS, 2, &e);
  } else if (!strcmp(kind, "flatten")) {
    k = SM_LAYER_FLATTEN;
    s = check_count(p, 3);
  } else if (!strcmp(kind, "dense")) {
    k = SM_LAYER_DENSE;
    if (!(s = check_count(p, 5)) && !(s = int_field(p, 3, "units", 1, 1 << 24, &a)))
      s = enum_field(p, 4, "activation", ACTS, 3, &b);
  } else if (!strcmp(kind, "dropout")) {
    k = SM_LAYER_DROPOUT;
    if (!(s = check_count(p, 4))) s = float_field(p, 3, "rate", 0.0f, 1.0f, &rate);
  } else if (!strcmp(kind, "activation")) {
    k = SM_LAYER_ACTIVATION;
    if (!(s = check_count(p, 4))) s = enum_field(p, 3, "activation", ACTS, 3, &a);
  } else if (!strcmp(kind, "batch_normalization")) {
    k = SM_LAYER_BATCHNORM;
    if (!(s = check_count(p, 7)) && !(s = float_field(p, 3, "momentum", 0.0f, 1.0f, &x1)) &&
        !(s = float_field(p, 4, "epsilon", 0.0f, 1e30f, &x2)) && !(s = int_field(p, 5, "center", 0, 1, &a)))
      s = int_field(p, 6, "scale", 0, 1, &b);
  } else if (!strcmp(kind, "average_pooling2d")) {
    k = SM_LAYER_AVGPOOL2D;
    if (!(s = check_count(p, 6)) && !(s = pair_field(p, 3, "pool", &a, &b)) && !(s = pair_field(p, 4, "strides", &c, &d)))
      s = enum_field(p, 5, "padding", PADS, 2, &e);
  } else if (!strcmp(kind, "global_average_pooling2d")) {
    k = SM_LAYER_GAP2D;
    s = check_count(p, 3);
  } else if (!strcmp(kind, "rescaling")) {
    k = SM_LAYER_RESCALING;
    if (!(s = check_count(p, 5)) && !(s = float_field(p, 3, "scale", -1e30f, 1e30f, &x1)))
      s = float_field(p, 4, "offset", -1e30f, 1e30f, &x2);
  } else if (!strcmp(kind, "leaky_re_lu")) {
    k = SM_LAYER_LEAKY_RELU;
    if (!(s = check_count(p, 4))) s = float_field(p, 3, "negative_slope", -1e30f, 1e30f, &x1);
  } else if (!strcmp(kind, "reshape")) {
    k = SM_LAYER_RESHAPE;
    const char *v = NULL;
    if (!(s = check_count(p, 4)) && !(s = field(p, 3, "shape", &v))) {
      char buf[64];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *tok = buf, *nx; !s && tok; tok = nx) {
        nx = strchr(tok, 'x');
        if (nx) *nx++ = 0;
        if (a == 3) s = perr(p, "shape: more than 3 dimensions");
        else if (!(s = parse_int(p, "shape", tok, 1, 1 << 24, &c))) shape[a++] = c;
      }
    }
  } else {
    return perr(p, "unknown layer kind \"%.40s\"", kind);
  }
  if (s) return s;
  switch (k) {
    case SM_LAYER_BATCHNORM: s = sm__seq_batchnorm(m, x1, x2, a, b); break;
    case SM_LAYER_AVGPOOL2D: s = sm__seq_avg_pool2d(m, a, b, c, d, e); break;
    case SM_LAYER_GAP2D: s = sm__seq_gap2d(m); break;
    case SM_LAYER_RESCALING: s = sm__seq_rescaling(m, x1, x2); break;
    case SM_LAYER_LEAKY_RELU: s = sm__seq_leaky_relu(m, x1); break;
    case SM_LAYER_RESHAPE: s = sm__seq_reshape(m, a, shape); break;
    case SM_LAYER_CONV2D: s = sm_seq_conv2d(m, a, b, c, d, e, f, g); break;
    case SM_LAYER_MAXPOOL2D: s = sm_seq_max_pool2d(m, a, b, c, d, e); break;
    case SM_LAYER_FLATTEN: s = sm_seq_flatten(m); break;
    case SM_LAYER_DENSE: s = sm_seq_dense(m, a, b); break;
    case SM_LAYER_DROPOUT: s = sm_seq_dropout(m, rate); break;
    default: s = sm_seq_activation(m, a); break;
  }
  if (s) return sm_status_prefix(s, "%s:%d", p->path, p->line); /* the trainer refused it */
  if (m->nlayers != before + 1) return perr(p, "layer %s was not added", name);
  m->layers[before].no_bias = no_bias;
  /* Keras's names (from a model config) are kept as the export wrote them */
  if (strcmp(m->layers[before].name, name) && (s = sm__seq_name_last(m, name))) return sm_status_prefix(s, "%s:%d", p->path, p->line);
  return NULL;
}

typedef struct state {
  sm_optimizer opt;
  sm_loss loss;
  uint64_t seed;
  int64_t iterations, epochs_done;
} state;

static sm_status *parse_state(parser *p, sm_seq **out, state *st) {
  sm_seq *m = NULL;
  sm_status *s = expect_key(p, SM_TRAIN_STATE_MAGIC, 1, 1);
  int version;
  if (!s) s = parse_int(p, "version", p->tok[1], 0, 1 << 30, &version);
  if (!s && version != SM_TRAIN_STATE_VERSION)
    s = perr(p, "format version %d; this library reads version %d", version, SM_TRAIN_STATE_VERSION);
  if (!s) s = expect_key(p, "input", 1, 3);
  int64_t in[3];
  int rank = 0;
  for (int i = 1; !s && i < p->ntok; i++, rank++) s = parse_i64(p, "input dimension", p->tok[i], 1, 1 << 24, &in[i - 1]);
  if (!s) s = sm_seq_new(rank, in, &m);
  /* layers, then the optimizer */
  while (!s) {
    s = next_line(p);
    if (s || strcmp(p->tok[0], "layer")) break;
    if (p->ntok < 3) {
      s = perr(p, "a layer needs a kind and name=");
      break;
    }
    s = parse_layer(p, m);
  }
  if (!s && !m->nlayers) s = perr(p, "expected \"layer\" lines before \"%.40s\"", p->tok[0]);
  memset(st, 0, sizeof *st);
  if (!s && strcmp(p->tok[0], "optimizer")) s = perr(p, "expected \"optimizer\", got \"%.40s\"", p->tok[0]);
  if (!s && p->ntok < 2) s = perr(p, "optimizer needs a kind");
  /* optional trailing fields: schedule=..., AdamW's weight_decay= */
  const char *sched = NULL, *wd = NULL;
  while (!s && p->ntok > 2 && (!strncmp(p->tok[p->ntok - 1], "schedule=", 9) || !strncmp(p->tok[p->ntok - 1], "weight_decay=", 13))) {
    const char **slot = p->tok[p->ntok - 1][0] == 's' ? &sched : &wd;
    *slot = strchr(p->tok[--p->ntok], '=') + 1;
  }
  if (!s && !strcmp(p->tok[1], "rmsprop")) {
    st->opt = sm_rmsprop_defaults();
    if (!(s = check_count(p, 7)) && !(s = float_field(p, 2, "learning_rate", 0.0f, 1e6f, &st->opt.learning_rate)) &&
        !(s = float_field(p, 3, "rho", 0.0f, 1.0f, &st->opt.rho)) &&
        !(s = float_field(p, 4, "momentum", 0.0f, 1.0f, &st->opt.momentum)) &&
        !(s = float_field(p, 5, "epsilon", 0.0f, 1.0f, &st->opt.epsilon)))
      s = int_field(p, 6, "centered", 0, 1, &st->opt.centered);
  } else if (!s && (!strcmp(p->tok[1], "adam") || !strcmp(p->tok[1], "adamw"))) {
    st->opt = p->tok[1][4] ? sm_adamw_defaults() : sm_adam_defaults();
    if (!(s = check_count(p, 6)) && !(s = float_field(p, 2, "learning_rate", 0.0f, 1e6f, &st->opt.learning_rate)) &&
        !(s = float_field(p, 3, "beta_1", 0.0f, 1.0f, &st->opt.beta_1)) &&
        !(s = float_field(p, 4, "beta_2", 0.0f, 1.0f, &st->opt.beta_2)))
      s = float_field(p, 5, "epsilon", 0.0f, 1.0f, &st->opt.epsilon);
  } else if (!s && !strcmp(p->tok[1], "sgd")) {
    st->opt = sm_sgd_defaults();
    if (!(s = check_count(p, 5)) && !(s = float_field(p, 2, "learning_rate", 0.0f, 1e6f, &st->opt.learning_rate)) &&
        !(s = float_field(p, 3, "momentum", 0.0f, 1.0f, &st->opt.momentum)))
      s = int_field(p, 4, "nesterov", 0, 1, &st->opt.nesterov);
  } else if (!s) {
    s = perr(p, "unknown optimizer \"%.40s\"", p->tok[1]);
  }
  if (!s && wd && st->opt.kind != SM_OPT_ADAMW) s = perr(p, "weight_decay= is AdamW's only");
  if (!s && wd) s = parse_float(p, "weight_decay", wd, 0.0f, 1e6f, &st->opt.weight_decay);
  if (!s && sched) s = sm_optimizer_set_schedule(&st->opt, sched);
  if (s && sched && !strstr(sm_status_message(s), p->path)) s = sm_status_prefix(s, "%s:%d", p->path, p->line);
  if (!s) s = expect_key(p, "loss", 1, 2);
  if (!s && !strcmp(p->tok[1], "mse")) {
    st->loss.kind = SM_LOSS_MSE;
    s = check_count(p, 2);
  } else if (!s && (!strcmp(p->tok[1], "sparse_categorical_crossentropy") || !strcmp(p->tok[1], "categorical_crossentropy"))) {
    st->loss.kind = p->tok[1][0] == 's' ? SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY : SM_LOSS_CATEGORICAL_CROSSENTROPY;
    if (!(s = check_count(p, 3))) s = int_field(p, 2, "from_logits", 0, 1, &st->loss.from_logits);
  } else if (!s) {
    s = perr(p, "unknown loss \"%.40s\"", p->tok[1]);
  }
  if (!s) s = expect_key(p, "seed", 1, 1);
  if (!s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p->tok[1], &end, 10);
    if (*end || errno || p->tok[1][0] < '0' || p->tok[1][0] > '9')
      s = perr(p, "seed: \"%.40s\" is not an unsigned integer", p->tok[1]);
    st->seed = v;
  }
  if (!s) s = expect_key(p, "iterations", 1, 1);
  if (!s) s = parse_i64(p, "iterations", p->tok[1], 0, SM_TRAIN_MAX_ITERATIONS, &st->iterations);
  if (!s) s = expect_key(p, "epochs_done", 1, 1);
  if (!s) s = parse_i64(p, "epochs_done", p->tok[1], 0, SM_TRAIN_MAX_EPOCHS, &st->epochs_done);
  if (!s) s = expect_key(p, "end", 0, 0);
  if (!s && p->pos != p->len) {
    p->line++;
    s = perr(p, "text after \"end\"");
  }
  if (s) {
    sm_seq_free(m);
    return s;
  }
  *out = m;
  return NULL;
}

/* ---- variables ---------------------------------------------------------------------------------- */
static sm_status *restore(const sm_bundle *b, const char *key, sm_tensor *dst) {
  sm_tensor *t = NULL;
  sm_status *s = sm_bundle_read(b, key, &t);
  if (s) return s;
  char a[96], c[96];
  if (sm_tensor_dtype(t) != sm_tensor_dtype(dst) || sm_tensor_rank(t) != sm_tensor_rank(dst) ||
      memcmp(sm_tensor_dims(t), sm_tensor_dims(dst), (size_t)sm_tensor_rank(t) * sizeof(int64_t)))
    s = sm_status_new(SM_DATA_LOSS, "variable %s is %s %s, the model needs %s %s", key, sm_dtype_name(sm_tensor_dtype(t)),
                      sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), a, sizeof a),
                      sm_dtype_name(sm_tensor_dtype(dst)), sm_shape_str(sm_tensor_rank(dst), sm_tensor_dims(dst), c, sizeof c));
  else
    memcpy(sm_tensor_data(dst), sm_tensor_data(t), sm_tensor_nbytes(dst));
  sm_tensor_free(t);
  return s;
}

static sm_status *restore_variables(const char *prefix, sm_seq *m, const state *st) {
  sm_bundle *b = NULL;
  sm_status *s = sm_bundle_open(prefix, &b);
  char nm[200];
  for (int i = 0; i < m->nlayers && !s; i++) {
    sm__layer *l = &m->layers[i];
    if (!l->kernel) continue;
    if (l->kind == SM_LAYER_BATCHNORM) {
      sm__export_weight_name(nm, sizeof nm, l->name, "moving_mean");
      s = restore(b, nm, l->moving_mean);
      sm__export_weight_name(nm, sizeof nm, l->name, "moving_variance");
      if (!s) s = restore(b, nm, l->moving_var);
    }
    for (int w = 0; w < 2 && !s; w++) {
      const char *what = sm__export_what(l, w);
      sm__export_weight_name(nm, sizeof nm, l->name, what);
      s = restore(b, nm, w ? l->bias : l->kernel);
      for (int k = 0; k < SM_OPT_SLOTS && !s; k++) {
        sm_tensor *slot = w ? l->bias_slot[k] : l->kernel_slot[k];
        /* the slots the exporter writes: those the optimizer keeps */
        if (!slot || !sm__opt_slot_name(&m->opt, k)) continue;
        sm__export_slot_name(nm, sizeof nm, &m->opt, l->name, what, k);
        s = restore(b, nm, slot);
      }
    }
  }
  if (!s) {
    sm_tensor *it = NULL;
    snprintf(nm, sizeof nm, "%s/iteration", sm__export_optimizer_name(m->opt.kind));
    s = sm_bundle_read(b, nm, &it);
    if (!s && (sm_tensor_dtype(it) != SM_INT64 || sm_tensor_rank(it) != 0))
      s = sm_status_new(SM_DATA_LOSS, "variable %s is not an int64 scalar", nm);
    else if (!s && *(const int64_t *)sm_tensor_data(it) != st->iterations)
      s = sm_status_new(SM_DATA_LOSS, "variable %s is %lld but assets.extra/%s says %lld iterations", nm,
                        (long long)*(const int64_t *)sm_tensor_data(it), SM_TRAIN_STATE_FILENAME,
                        (long long)st->iterations);
    sm_tensor_free(it);
  }
  sm_bundle_close(b);
  return s;
}

/* ---- the rest of the export ---------------------------------------------------------------------- */
/* saved_model.pb: present, parseable, with both MetaGraphs the exporter writes, and exactly the
 * bytes fingerprint.pb's saved_model_checksum was computed over (a truncation at a field boundary
 * or a flipped byte in a string parses, but does not hash the same); variables.index against its
 * checkpoint_hash. */
static sm_status *verify_pb(const char *export_dir) {
  char *pb = sm__path_join(export_dir, SM_SAVED_MODEL_FILENAME_PB);
  char *fpp = sm__path_join(export_dir, SM_FINGERPRINT_FILENAME);
  char *data = NULL;
  size_t len = 0;
  Tensorflow__SavedModel *sm = NULL;
  Tensorflow__FingerprintDef *want = NULL, *got = NULL;
  const Tensorflow__MetaGraphDef *mg;
  sm_status *s = pb && fpp ? NULL : oom();
  if (!s && !sm__path_exists(pb))
    s = sm_status_new(SM_NOT_FOUND, "%s is missing: not an export of sm_seq_export, or damaged", pb);
  if (!s) s = sm_saved_model_read(export_dir, &sm);
  const char *train_tag[] = {SM_TAG_TRAIN}, *serve_tag[] = {SM_TAG_SERVE};
  if (!s) s = sm_saved_model_find_meta_graph(sm, train_tag, 1, &mg);
  if (!s) s = sm_saved_model_find_meta_graph(sm, serve_tag, 1, &mg);
  if (!s && !sm__path_exists(fpp))
    s = sm_status_new(SM_NOT_FOUND, "%s is missing (every export of sm_seq_export has one): cannot verify %s", fpp, pb);
  if (!s) s = sm__file_read_max(fpp, 1 << 20, &data, &len);
  if (!s) {
    ProtobufCMessage *m = NULL;
    s = sm_pb_parse(&tensorflow__fingerprint_def__descriptor, (const uint8_t *)data, len, fpp, &m);
    want = (Tensorflow__FingerprintDef *)m;
  }
  if (!s) s = sm_saved_model_fingerprint(export_dir, &got);
  if (!s && got->saved_model_checksum != want->saved_model_checksum)
    s = sm_status_new(SM_DATA_LOSS, "%s does not match the saved_model_checksum of %s (damaged or replaced)", pb, fpp);
  if (!s && got->checkpoint_hash != want->checkpoint_hash)
    s = sm_status_new(SM_DATA_LOSS, "%s/%s/%s.index does not match the checkpoint_hash of %s (damaged or replaced)",
                      export_dir, SM_VARIABLES_DIRECTORY, SM_VARIABLES_FILENAME, fpp);
  /* The other hashes, the version and the (random) uuid the exporter wrote: a truncation at a
   * field boundary that keeps the two hashes above parses too, but loses the uuid, the last field. */
  if (!s && (got->graph_def_program_hash != want->graph_def_program_hash ||
             got->signature_def_hash != want->signature_def_hash ||
             got->saved_object_graph_hash != want->saved_object_graph_hash || !want->version || !got->version ||
             want->version->producer != got->version->producer || !want->uuid || !*want->uuid))
    s = sm_status_new(SM_DATA_LOSS, "%s is not the fingerprint of %s (damaged, truncated or replaced)", fpp, export_dir);
  if (want) protobuf_c_message_free_unpacked(&want->base, NULL);
  if (got) protobuf_c_message_free_unpacked(&got->base, NULL);
  sm_saved_model_free(sm);
  free(data);
  free(pb);
  free(fpp);
  return s;
}

/* Every tensor of the bundle reads back with its checksum (the weights restore reads only some). */
static sm_status *verify_bundle(const char *prefix) {
  sm_bundle *b = NULL;
  sm_status *s = sm_bundle_open(prefix, &b);
  size_t n = s ? 0 : sm_bundle_num_entries(b);
  for (size_t i = 0; i < n && !s; i++) {
    sm_bundle_entry e;
    sm_tensor *t = NULL;
    s = sm_bundle_entry_at(b, i, &e);
    if (!s) s = sm_bundle_read(b, e.key, &t);
    sm_tensor_free(t);
  }
  sm_bundle_close(b);
  return s;
}

/* The labels asset the serving graph reads, when the model has classes. */
static sm_status *verify_labels(const char *export_dir, const state *st) {
  if (st->loss.kind == SM_LOSS_MSE) return NULL;
  char *assets = sm__path_join(export_dir, SM_ASSETS_DIRECTORY);
  char *path = assets ? sm__path_join(assets, SM_TRAIN_LABELS_FILENAME) : NULL;
  sm_status *s = path ? NULL : oom();
  char *text = NULL;
  size_t len = 0;
  if (!s && !sm__path_exists(path))
    s = sm_status_new(SM_NOT_FOUND, "%s is missing: the export's class names are gone (its classify signature reads them)",
                      path);
  if (!s) s = sm__file_read_max(path, 1 << 20, &text, &len); /* a regular file, readable */
  free(text);
  free(assets);
  free(path);
  return s;
}

sm_status *sm_seq_resume(const char *export_dir, sm_seq **out) {
  if (!out) return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_resume: no output");
  *out = NULL;
  if (!export_dir || !*export_dir) return sm_status_new(SM_INVALID_ARGUMENT, "sm_seq_resume: empty export directory");
  if (!sm__is_dir(export_dir)) return sm_status_new(SM_NOT_FOUND, "resuming from %s: no such directory", export_dir);
  char *extra = sm__path_join(export_dir, SM_EXTRA_ASSETS_DIRECTORY);
  char *path = extra ? sm__path_join(extra, SM_TRAIN_STATE_FILENAME) : NULL;
  char *vars = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY);
  char *prefix = vars ? sm__path_join(vars, SM_VARIABLES_FILENAME) : NULL;
  parser p = {.path = path};
  sm_seq *m = NULL;
  state st;
  sm_status *s = path && prefix ? NULL : oom();
  if (!s && !sm__path_exists(path))
    s = sm_status_new(SM_NOT_FOUND, "%s is missing: not an export of sm_seq_export, or its training state was removed", path);
  if (!s) s = sm__file_read_all(path, &p.text, &p.len);
  if (!s && p.len > MAX_STATE_BYTES) s = sm_status_new(SM_DATA_LOSS, "%s: %zu bytes, more than a training state holds", path, p.len);
  if (!s && memchr(p.text, 0, p.len)) s = sm_status_new(SM_DATA_LOSS, "%s: holds a NUL byte", path);
  if (!s) s = parse_state(&p, &m, &st);
  if (!s) s = verify_pb(export_dir);
  if (!s) s = verify_bundle(prefix);
  if (!s) s = verify_labels(export_dir, &st);
  if (!s) s = sm_seq_compile(m, &st.opt, &st.loss, st.seed);
  if (!s) s = restore_variables(prefix, m, &st);
  if (!s) {
    m->iterations = st.iterations;
    m->epochs_done = st.epochs_done;
    *out = m;
  } else {
    sm_seq_free(m);
    s = sm_status_prefix(s, "resuming from %s", export_dir);
  }
  free(p.text);
  free(extra);
  free(path);
  free(vars);
  free(prefix);
  return s;
}
