/* test_train_export.c - sm_seq_export / sm_seq_resume: export a small trained-looking model, load
 * the export with this library's runtime ({serve} and {train}), run serving_default and classify
 * (tf.Examples built with example.h) against sm_seq_predict, read the variables bundle back, resume
 * and compare every weight and optimizer slot bit for bit; refused directories and damaged
 * training-state files give clear errors, never a crash. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/example.h"
#include "savedmodel/model.h"
#include "savedmodel/train.h"
#include "test.h"
#include "train/export_internal.h"
#include "train/train_internal.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* xorshift64, [-0.5, 0.5) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)(rng >> 40) / (float)(1 << 24) - 0.5f;
}

static void fill(sm_tensor *t, float scale) {
  if (!t) return;
  float *p = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++) p[i] = frand() * scale;
}

static char *join(const char *a, const char *b) { return sm__path_join(a, b); }

/* SM_TRAIN_EXPORT_KEEP=DIR: also export each model to DIR/<name> and keep it there, for
 * tools/check_trained_export.py (the interop suite's trained-export stage). */
static void keep_export(const sm_seq *m, const char *name, const sm_export_options *o) {
  const char *keep = getenv("SM_TRAIN_EXPORT_KEEP");
  if (!keep || !*keep) return;
  char *dir = join(keep, name);
  CHECK_OK(sm_seq_export(m, dir, o));
  free(dir);
}

static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *p = join(path, e->d_name);
      struct stat st;
      if (!lstat(p, &st) && S_ISDIR(st.st_mode))
        remove_tree(p);
      else
        unlink(p);
      free(p);
    }
    closedir(d);
  }
  rmdir(path);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* 8x8x1 -> conv 3x3 relu -> pool 2 -> conv 2x2/2 SAME -> flatten -> dense 6 relu -> dropout ->
 * dense 3 (logits or softmax); weights and slots random, as if trained for a while. */
/* The layers of Keras configs (src/train/keras.c): rescaling, conv without bias, batch norm over
 * rank 3 and rank 1, leaky relu, average and global average pooling, reshape. */
static void keras_layers(sm_seq *m, int softmax_last) {
  int64_t shape[3] = {2, 8, 4};
  CHECK_OK(sm__seq_rescaling(m, 0.5f, 0.25f));
  CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 2, 2, SM_PAD_SAME, SM_ACT_NONE));
  m->layers[m->nlayers - 1].no_bias = 1;
  CHECK_OK(sm__seq_batchnorm(m, 0.9f, 1e-3f, 1, 1));
  CHECK_OK(sm__seq_leaky_relu(m, 0.2f));
  CHECK_OK(sm__seq_avg_pool2d(m, 3, 3, 1, 1, SM_PAD_SAME));
  CHECK_OK(sm__seq_reshape(m, 3, shape));
  CHECK_OK(sm__seq_gap2d(m));
  CHECK_OK(sm_seq_dense(m, 6, SM_ACT_RELU));
  CHECK_OK(sm__seq_batchnorm(m, 0.99f, 1e-2f, 0, 1));
  CHECK_OK(sm_seq_dense(m, 3, SM_ACT_NONE));
  if (softmax_last) CHECK_OK(sm_seq_activation(m, SM_ACT_SOFTMAX));
}

static sm_seq *make_model_loss(const sm_optimizer *opt, int softmax_last, int with_logits, int keras, int loss_kind) {
  int64_t in[3] = {8, 8, 1};
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_new(3, in, &m));
  if (!m) return NULL;
  if (keras) {
    keras_layers(m, softmax_last);
  } else {
    CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
    CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
    CHECK_OK(sm_seq_conv2d(m, 3, 2, 2, 2, 2, SM_PAD_SAME, SM_ACT_NONE));
    CHECK_OK(sm_seq_flatten(m));
    CHECK_OK(sm_seq_dense(m, 6, SM_ACT_RELU));
    CHECK_OK(sm_seq_dropout(m, 0.25f));
    CHECK_OK(sm_seq_dense(m, 3, softmax_last ? SM_ACT_SOFTMAX : SM_ACT_NONE));
  }
  sm_loss loss = {loss_kind, with_logits};
  CHECK_OK(sm_seq_compile(m, opt, &loss, 7));
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *l = &m->layers[i];
    int bn = l->kind == SM_LAYER_BATCHNORM;
    if (!bn || l->use_scale) fill(l->kernel, 1.0f); /* weights Keras has: the others stay 1 / 0 */
    if (bn ? l->center : !l->no_bias) fill(l->bias, 0.2f);
    fill(l->moving_mean, 0.3f);
    if (l->moving_var) { /* positive */
      fill(l->moving_var, 0.5f);
      float *v = sm_tensor_data(l->moving_var);
      for (int64_t j = 0; j < sm_tensor_num_elements(l->moving_var); j++) v[j] = 1.0f + fabsf(v[j]);
    }
    for (int k = 0; k < SM_OPT_SLOTS; k++) {
      fill(l->kernel_slot[k], 0.01f);
      fill(l->bias_slot[k], 0.01f);
    }
  }
  m->iterations = 123;
  m->epochs_done = 4;
  return m;
}

static sm_seq *make_model(const sm_optimizer *opt, int softmax_last, int with_logits) {
  return make_model_loss(opt, softmax_last, with_logits, 0, SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY);
}

static sm_tensor *images(int64_t n) {
  int64_t d[4] = {n, 8, 8, 1};
  sm_tensor *x = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, d, &x));
  float *p = sm_tensor_data(x);
  for (int64_t i = 0; i < n * 64; i++) p[i] = frand() + 0.5f;
  return x;
}

static void softmax_rows(float *v, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; r++) {
    float *row = v + r * k, mx = row[0], sum = 0;
    for (int64_t j = 1; j < k; j++) mx = row[j] > mx ? row[j] : mx;
    for (int64_t j = 0; j < k; j++) sum += row[j] = expf(row[j] - mx);
    for (int64_t j = 0; j < k; j++) row[j] /= sum;
  }
}

static float max_diff(const sm_tensor *a, const float *b) {
  const float *p = sm_tensor_data(a);
  float d = 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(a); i++) {
    float e = fabsf(p[i] - b[i]);
    if (!(e <= d)) d = e;
  }
  return d;
}

/* serialized tf.Examples, feature "inputs" = each flattened image */
static sm_tensor *examples(const sm_tensor *x) {
  int64_t n = sm_tensor_dims(x)[0];
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &n, &t));
  for (int64_t i = 0; i < n; i++) {
    sm_example *e = NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    CHECK_OK(sm_example_new(&e));
    CHECK_OK(sm_example_add_floats(e, "inputs", (const float *)sm_tensor_data(x) + i * 64, 64));
    CHECK_OK(sm_example_serialize(e, &bytes, &len));
    CHECK_OK(sm_tensor_set_string(t, i, bytes, len));
    free(bytes);
    sm_example_free(e);
  }
  return t;
}

/* Loads `dir` with `tag`, runs serving_default and classify on x, compares with predict. */
static void check_runs(const char *dir, const char *tag, sm_seq *m, int probabilities, const char *const *labels) {
  sm_model *model = NULL;
  const char *tags[] = {tag};
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &model));
  if (!model) return;
  sm_tensor *x = images(5), *want = NULL, *y = NULL;
  CHECK_OK(sm_seq_predict(m, x, 2, &want));
  const char *in[] = {"inputs"}, *out[] = {"outputs"};
  CHECK_OK(sm_model_run(model, "serving_default", in, &x, 1, out, 1, &y));
  if (y && want) {
    CHECK_EQ_INT(sm_tensor_rank(y), 2);
    CHECK_EQ_INT(sm_tensor_dims(y)[0], 5);
    CHECK_EQ_INT(sm_tensor_dims(y)[1], 3);
    float *ref = malloc(15 * sizeof *ref), *probs = malloc(15 * sizeof *probs);
    memcpy(ref, sm_tensor_data(want), 15 * sizeof *ref);
    memcpy(probs, ref, 15 * sizeof *ref);
    int model_probs = m->layers[m->nlayers - 1].activation == SM_ACT_SOFTMAX;
    if (!model_probs) softmax_rows(probs, 5, 3);
    float d = max_diff(y, probabilities ? probs : ref);
    if (!(d <= 1e-5f)) fprintf(stderr, "%s serving_default differs from predict by %g\n", tag, (double)d);
    CHECK(d <= 1e-5f);
    /* classify over tf.Examples */
    sm_tensor *ex = examples(x), *res[2] = {0};
    const char *cin[] = {"inputs"}, *cout[] = {"classes", "scores"};
    CHECK_OK(sm_model_run(model, "classify", cin, &ex, 1, cout, 2, res));
    if (res[0] && res[1]) {
      CHECK_EQ_INT(sm_tensor_dtype(res[0]), SM_STRING);
      CHECK_EQ_INT(sm_tensor_rank(res[0]), 2);
      CHECK_EQ_INT(sm_tensor_num_elements(res[0]), 15);
      for (int64_t i = 0; i < 15 && sm_tensor_num_elements(res[0]) == 15; i++) {
        size_t len;
        const char *s = sm_tensor_string(res[0], i, &len);
        char want_label[16];
        snprintf(want_label, sizeof want_label, "%d", (int)(i % 3));
        const char *wl = labels ? labels[i % 3] : want_label;
        CHECK(len == strlen(wl) && !memcmp(s, wl, len));
      }
      CHECK_EQ_INT(sm_tensor_num_elements(res[1]), 15);
      if (sm_tensor_num_elements(res[1]) == 15) {
        d = max_diff(res[1], probs);
        if (!(d <= 1e-5f)) fprintf(stderr, "%s classify scores differ by %g\n", tag, (double)d);
        CHECK(d <= 1e-5f);
      }
    }
    sm_tensor_free(res[0]);
    sm_tensor_free(res[1]);
    sm_tensor_free(ex);
    free(ref);
    free(probs);
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_tensor_free(want);
  sm_model_free(model);
}

static int same_tensor_bits(const sm_tensor *a, const sm_tensor *b) {
  if (!a || !b) return a == b;
  return sm_tensor_dtype(a) == sm_tensor_dtype(b) && sm_tensor_rank(a) == sm_tensor_rank(b) &&
         !memcmp(sm_tensor_dims(a), sm_tensor_dims(b), (size_t)sm_tensor_rank(a) * sizeof(int64_t)) &&
         sm_tensor_nbytes(a) == sm_tensor_nbytes(b) && !memcmp(sm_tensor_data(a), sm_tensor_data(b), sm_tensor_nbytes(a));
}

/* The variables bundle holds every weight and slot under its Keras 3 name, bit for bit. */
static void check_bundle(const char *dir, const sm_seq *m) {
  char *vars = join(dir, "variables"), *prefix = join(vars, "variables");
  sm_bundle *b = NULL;
  CHECK_OK(sm_bundle_open(prefix, &b));
  if (b) {
    char nm[200];
    for (int i = 0; i < m->nlayers; i++) {
      const sm__layer *l = &m->layers[i];
      if (!l->kernel) continue;
      for (int w = 0; w < 4; w++) {
        sm_tensor *t = NULL;
        const sm_tensor *want = w == 0 ? l->kernel : w == 1 ? l->bias : w == 2 ? l->moving_mean : l->moving_var;
        if (w >= 2 && l->kind != SM_LAYER_BATCHNORM) break;
        sm__export_weight_name(nm, sizeof nm, l->name, w < 2 ? sm__export_what(l, w) : w == 2 ? "moving_mean" : "moving_variance");
        CHECK_OK(sm_bundle_read(b, nm, &t));
        CHECK(same_tensor_bits(t, want));
        sm_tensor_free(t);
        for (int k = 0; k < SM_OPT_SLOTS && w < 2; k++) {
          const sm_tensor *slot = w ? l->bias_slot[k] : l->kernel_slot[k];
          sm__export_slot_name(nm, sizeof nm, &m->opt, l->name, sm__export_what(l, w), k);
          sm_bundle_entry e;
          sm_status *s = sm_bundle_lookup(b, nm, &e);
          CHECK((s == NULL) == (slot != NULL));
          sm_status_free(s);
          if (!slot) continue;
          t = NULL;
          CHECK_OK(sm_bundle_read(b, nm, &t));
          CHECK(same_tensor_bits(t, slot));
          sm_tensor_free(t);
        }
      }
    }
    sm_tensor *it = NULL;
    snprintf(nm, sizeof nm, "%s/iteration", sm__export_optimizer_name(m->opt.kind));
    CHECK_OK(sm_bundle_read(b, nm, &it));
    if (it) CHECK_EQ_INT(*(int64_t *)sm_tensor_data(it), m->iterations);
    sm_tensor_free(it);
  }
  sm_bundle_close(b);
  free(prefix);
  free(vars);
}

/* Every field of the resumed model equals the original's; weights and slots bit for bit. */
static void check_same_model(const sm_seq *a, const sm_seq *b) {
  CHECK_EQ_INT(b->in_rank, a->in_rank);
  CHECK(!memcmp(a->in_shape, b->in_shape, sizeof a->in_shape));
  CHECK_EQ_INT(b->nlayers, a->nlayers);
  CHECK(b->compiled);
  CHECK(!memcmp(&a->opt, &b->opt, sizeof a->opt));
  CHECK_EQ_INT(b->loss.kind, a->loss.kind);
  CHECK_EQ_INT(b->loss.from_logits, a->loss.from_logits);
  CHECK(b->seed == a->seed);
  CHECK_EQ_INT(b->iterations, a->iterations);
  CHECK_EQ_INT(b->epochs_done, a->epochs_done);
  CHECK_EQ_INT(sm_seq_iterations(b), a->iterations);
  for (int i = 0; i < a->nlayers && i < b->nlayers; i++) {
    const sm__layer *x = &a->layers[i], *y = &b->layers[i];
    CHECK_EQ_STR(y->name, x->name);
    CHECK_EQ_INT(y->kind, x->kind);
    CHECK_EQ_INT(y->activation, x->activation);
    CHECK_EQ_INT(y->units, x->units);
    CHECK(y->kh == x->kh && y->kw == x->kw && y->sh == x->sh && y->sw == x->sw && y->padding == x->padding);
    CHECK(y->rate == x->rate);
    CHECK(y->scale == x->scale && y->offset == x->offset && y->momentum == x->momentum && y->epsilon == x->epsilon);
    CHECK(y->center == x->center && y->use_scale == x->use_scale && y->no_bias == x->no_bias);
    CHECK(y->out_rank == x->out_rank && !memcmp(y->out_shape, x->out_shape, sizeof x->out_shape));
    CHECK(same_tensor_bits(x->kernel, y->kernel));
    CHECK(same_tensor_bits(x->bias, y->bias));
    CHECK(same_tensor_bits(x->moving_mean, y->moving_mean));
    CHECK(same_tensor_bits(x->moving_var, y->moving_var));
    for (int k = 0; k < SM_OPT_SLOTS; k++) {
      CHECK(same_tensor_bits(x->kernel_slot[k], y->kernel_slot[k]));
      CHECK(same_tensor_bits(x->bias_slot[k], y->bias_slot[k]));
    }
  }
}

static char *read_text(const char *path) {
  char *d = NULL;
  size_t n = 0;
  CHECK_OK(sm__file_read_all(path, &d, &n));
  if (!d) return NULL;
  char *t = malloc(n + 1);
  memcpy(t, d, n);
  t[n] = 0;
  free(d);
  return t;
}

static void write_text(const char *path, const char *text, size_t n) { CHECK_OK(sm__file_write_atomic(path, text, n)); }

/* A damaged training state must give an error naming the file and the fault. */
static void check_bad_state(const char *dir, const char *state, const char *from, const char *to, const char *needle) {
  char *path = join(dir, "assets.extra/" SM_TRAIN_STATE_FILENAME);
  const char *at = strstr(state, from);
  CHECK(at != NULL);
  if (at) {
    size_t n = strlen(state) - strlen(from) + strlen(to);
    char *t = malloc(n + 1);
    size_t pre = (size_t)(at - state);
    memcpy(t, state, pre);
    memcpy(t + pre, to, strlen(to));
    strcpy(t + pre + strlen(to), at + strlen(from));
    write_text(path, t, n);
    sm_seq *r = NULL;
    sm_status *s = sm_seq_resume(dir, &r);
    if (!s) fprintf(stderr, "resume accepted \"%s\" -> \"%s\"\n", from, to);
    CHECK(s != NULL && r == NULL);
    if (s && !strstr(sm_status_message(s), needle)) {
      fprintf(stderr, "\"%s\" -> \"%s\": error \"%s\" lacks \"%s\"\n", from, to, sm_status_message(s), needle);
      sm_test_failures++;
    }
    if (s && !strstr(sm_status_message(s), SM_TRAIN_STATE_FILENAME) && strcmp(needle, "the model needs") &&
        strcmp(needle, "adam/iteration")) {
      fprintf(stderr, "error \"%s\" does not name the state file\n", sm_status_message(s));
      sm_test_failures++;
    }
    sm_status_free(s);
    sm_seq_free(r);
    free(t);
  }
  write_text(path, state, strlen(state));
  free(path);
}

static void test_export_resume(const char *tmp) {
  sm_optimizer adam = sm_adam_defaults();
  sm_seq *m = make_model(&adam, 0, 1);
  if (!m) return;
  const char *labels[] = {"cat", "dog", "bird"};
  sm_export_options o = {labels, 3, 0};
  char *dir = join(tmp, "adam");
  CHECK_OK(sm_seq_export(m, dir, &o));
  keep_export(m, "adam_logits_labels", &o);
  CHECK_EQ_INT(count_entries(tmp), 1); /* the staging directory is gone */
  char *lp = join(dir, "assets/labels.txt"), *sp = join(dir, "assets.extra/" SM_TRAIN_STATE_FILENAME);
  char *lt = read_text(lp), *state = read_text(sp);
  CHECK_EQ_STR(lt, "cat\ndog\nbird\n");
  CHECK(state && !strncmp(state, SM_TRAIN_STATE_MAGIC " 1\ninput 8 8 1\nlayer conv2d name=conv2d filters=4 kernel=3x3 "
                                  "strides=1x1 padding=valid activation=relu\n", 100));
  CHECK(state && strstr(state, "\niterations 123\nepochs_done 4\nend\n"));
  check_runs(dir, SM_TAG_SERVE, m, 0, labels);
  check_runs(dir, SM_TAG_TRAIN, m, 0, labels);
  check_bundle(dir, m);

  /* resume: the same model, weights and slots bit for bit, and it predicts the same */
  sm_seq *r = NULL;
  CHECK_OK(sm_seq_resume(dir, &r));
  if (r) {
    check_same_model(m, r);
    sm_tensor *x = images(3), *a = NULL, *b = NULL;
    CHECK_OK(sm_seq_predict(m, x, 8, &a));
    CHECK_OK(sm_seq_predict(r, x, 8, &b));
    CHECK(same_tensor_bits(a, b));
    sm_tensor_free(x);
    sm_tensor_free(a);
    sm_tensor_free(b);
    /* an export of the resumed model holds the same state again */
    char *again = join(tmp, "again");
    CHECK_OK(sm_seq_export(r, again, &o));
    char *sp2 = join(again, "assets.extra/" SM_TRAIN_STATE_FILENAME), *state2 = read_text(sp2);
    CHECK_EQ_STR(state2, state);
    free(state2);
    free(sp2);
    remove_tree(again);
    free(again);
  }
  sm_seq_free(r);

  /* refused: an existing directory, an uncompiled model, a wrong label count */
  CHECK_ERR(sm_seq_export(m, dir, &o), "already exists");
  char *other = join(tmp, "other");
  sm_export_options bad = {labels, 2, 0};
  CHECK_ERR(sm_seq_export(m, other, &bad), "2 labels given for a model with 3 classes");
  const char *nl[] = {"a", "b\nc", "d"};
  sm_export_options bad2 = {nl, 3, 0};
  CHECK_ERR(sm_seq_export(m, other, &bad2), "line break");
  CHECK(!sm__path_exists(other));
  int64_t in[1] = {4};
  sm_seq *raw = NULL;
  CHECK_OK(sm_seq_new(1, in, &raw));
  if (raw) {
    CHECK_OK(sm_seq_dense(raw, 2, SM_ACT_NONE));
    CHECK_ERR(sm_seq_export(raw, other, NULL), "not compiled");
  }
  sm_seq_free(raw);
  CHECK_EQ_INT(count_entries(tmp), 1);
  free(other);

  /* damaged training state */
  if (state) {
    check_bad_state(dir, state, SM_TRAIN_STATE_MAGIC, "libsavedmodel-trian", "expected \"libsavedmodel-train\"");
    check_bad_state(dir, state, SM_TRAIN_STATE_MAGIC " 1", SM_TRAIN_STATE_MAGIC " 2", "format version 2");
    check_bad_state(dir, state, "layer flatten", "layer flattened", "unknown layer kind");
    check_bad_state(dir, state, "filters=4", "filters=four", "not an integer");
    check_bad_state(dir, state, "filters=4", "filters=99999999999", "not an integer");
    check_bad_state(dir, state, "kernel=3x3", "kernel=3", "not HxW");
    check_bad_state(dir, state, "kernel=3x3", "kernel=9x9", SM_TRAIN_STATE_FILENAME ":3:");
    check_bad_state(dir, state, "padding=valid", "padding=full", "unknown value");
    check_bad_state(dir, state, "name=conv2d ", "name=conv2D ", "only a-z, 0-9 and _");
    check_bad_state(dir, state, "units=6", "units=7", "the model needs");
    check_bad_state(dir, state, "iterations 123", "iterations 124", "adam/iteration");
    check_bad_state(dir, state, "iterations 123", "iterations -1", "not an integer");
    /* counts past the ranges a resumed run can number on from (UBSan: no overflow anywhere) */
    check_bad_state(dir, state, "epochs_done 4", "epochs_done 9223372036854775807", "epochs_done: \"9223372036854775807\" is not an integer in [0, 1073741824]");
    check_bad_state(dir, state, "epochs_done 4", "epochs_done 1073741825", "epochs_done");
    check_bad_state(dir, state, "iterations 123", "iterations 9223372036854775806", "iterations");
    check_bad_state(dir, state, "end\n", "end\nmore\n", "text after");
    check_bad_state(dir, state, "end\n", "end", "newline");
    check_bad_state(dir, state, "end\n", "", "end of file");
    check_bad_state(dir, state, "seed 7", "seed 7\r", "not printable");
    check_bad_state(dir, state, "seed 7", "seed  7", "stray space");
    check_bad_state(dir, state, "optimizer adam", "optimizer adamax", "unknown optimizer");
    check_bad_state(dir, state, "beta_1=", "beta_one=", "expected beta_1=");
    check_bad_state(dir, state, "epsilon=", "epsilon=nan", "not a number");
    check_bad_state(dir, state, "from_logits=1", "from_logits=1 extra=2", "takes 1..2 values");
    check_bad_state(dir, state, "loss sparse", "lost sparse", "expected \"loss\"");
    check_bad_state(dir, state, "input 8 8 1", "input 8 8 1 1", "takes 1..3 values");
    check_bad_state(dir, state, "input 8 8 1", "input 8 8 0", "input dimension");
    check_bad_state(dir, state, "\n", "\n\n", "empty line");
    /* a NUL byte, an empty file */
    char *p = join(dir, "assets.extra/" SM_TRAIN_STATE_FILENAME);
    sm_seq *rr = NULL;
    char withnul[] = "libsavedmodel-train 1\0\n";
    write_text(p, withnul, sizeof withnul - 1);
    CHECK_ERR(sm_seq_resume(dir, &rr), "NUL");
    write_text(p, "", 0);
    CHECK_ERR(sm_seq_resume(dir, &rr), "end of file");
    /* random damage: never a crash, a leak or a model from a file that is not the original */
    size_t n = strlen(state);
    char *t = malloc(n + 1);
    for (int i = 0; i < 300; i++) {
      memcpy(t, state, n + 1);
      int flips = 1 + (int)((frand() + 0.5f) * 3);
      for (int f = 0; f < flips; f++) {
        size_t at = (size_t)((frand() + 0.5f) * (float)n) % n;
        t[at] = (char)(t[at] ^ (1 << (int)((frand() + 0.5f) * 8) % 8));
      }
      size_t len = i % 7 == 0 ? (size_t)((frand() + 0.5f) * (float)n) % n : n;
      write_text(p, t, len);
      rr = NULL;
      sm_status *s = sm_seq_resume(dir, &rr);
      CHECK((s == NULL) == (rr != NULL));
      sm_status_free(s);
      sm_seq_free(rr);
    }
    free(t);
    write_text(p, state, n);
    /* missing pieces */
    unlink(p);
    CHECK_ERR(sm_seq_resume(dir, &rr), "is missing");
    write_text(p, state, n);
    char *idx = join(dir, "variables/variables.index");
    unlink(idx);
    CHECK_ERR(sm_seq_resume(dir, &rr), "variables.index");
    free(idx);
    free(p);
    char *nodir = join(tmp, "nope");
    CHECK_ERR(sm_seq_resume(nodir, &rr), "no such directory");
    free(nodir);
  }
  free(state);
  free(lt);
  free(lp);
  free(sp);
  remove_tree(dir);
  free(dir);
  sm_seq_free(m);
}

/* Copies src to dst (whole file). */
static void copy_file(const char *src, const char *dst) {
  char *t = NULL;
  size_t n = 0;
  CHECK_OK(sm__file_read_all(src, &t, &n));
  if (t) write_text(dst, t, n);
  free(t);
}

/* resume verifies every piece of the export, not only the training state: saved_model.pb
 * (missing, truncated, one byte changed), fingerprint.pb, the labels asset, every tensor's CRC. */
static void test_resume_verifies_export(const char *tmp) {
  sm_optimizer adam = sm_adam_defaults();
  sm_seq *m = make_model(&adam, 0, 1);
  if (!m) return;
  const char *labels[] = {"cat", "dog", "bird"};
  sm_export_options o = {labels, 3, 0};
  char *dir = join(tmp, "verify"), *keep = join(tmp, "verify.keep");
  CHECK_OK(sm_seq_export(m, dir, &o));
  sm_seq *r = NULL;
  CHECK_OK(sm_seq_resume(dir, &r));
  sm_seq_free(r);
  const char *pieces[] = {"saved_model.pb", "fingerprint.pb", "assets/labels.txt",
                          "variables/variables.data-00000-of-00001"};
  for (int i = 0; i < 4; i++) {
    char *p = join(dir, pieces[i]);
    copy_file(p, keep);
    char *t = NULL;
    size_t n = 0;
    CHECK_OK(sm__file_read_all(p, &t, &n));
    /* missing */
    unlink(p);
    r = NULL;
    sm_status *s = sm_seq_resume(dir, &r);
    CHECK(s != NULL && r == NULL);
    if (s && (!strstr(sm_status_message(s), pieces[i] + (i == 3 ? 10 : i == 2 ? 7 : 0)) ||
              !strstr(sm_status_message(s), i == 3 ? "missing or unreadable" : "is missing")))
      fprintf(stderr, "%s missing: %s\n", pieces[i], sm_status_message(s)), sm_test_failures++;
    sm_status_free(s);
    if (t && n > 16 && i != 2) {
      /* truncated, and one byte changed in its middle: never accepted */
      for (int k = 0; k < 3; k++) {
        if (k == 2) t[n / 2] ^= 0x01;
        write_text(p, t, k == 0 ? n / 2 : k == 1 ? n - 1 : n);
        r = NULL;
        s = sm_seq_resume(dir, &r);
        if (!s) fprintf(stderr, "%s damaged (%d) accepted\n", pieces[i], k);
        CHECK(s != NULL && r == NULL);
        sm_status_free(s);
        sm_seq_free(r);
      }
    }
    free(t);
    copy_file(keep, p);
    free(p);
  }
  unlink(keep);
  CHECK_OK(sm_seq_resume(dir, &r));
  sm_seq_free(r);
  remove_tree(dir);
  free(dir);
  free(keep);
  sm_seq_free(m);
}

/* A killed export leaves ".tmp-export-NAME-PID" next to NAME: the next export of NAME removes those
 * of dead processes, and never one of a live process. */
static void test_stale_staging(const char *tmp) {
  sm_optimizer adam = sm_adam_defaults();
  sm_seq *m = make_model(&adam, 0, 1);
  if (!m) return;
  pid_t child = fork();
  if (child == 0) _exit(0);
  CHECK(child > 0);
  if (child > 0) waitpid(child, NULL, 0); /* a pid that is no process now */
  char name[128];
  snprintf(name, sizeof name, ".tmp-export-stale-%ld", (long)child);
  char *dead = join(tmp, name);
  snprintf(name, sizeof name, ".tmp-export-stale-%ld", (long)getppid());
  char *live = join(tmp, name);
  char *other = join(tmp, ".tmp-export-stale-x-1"); /* the export "stale-x"'s, not ours */
  CHECK(mkdir(dead, 0755) == 0 && mkdir(live, 0755) == 0 && mkdir(other, 0755) == 0);
  char *inner = join(dead, "model");
  CHECK(mkdir(inner, 0755) == 0);
  const char *labels[] = {"cat", "dog", "bird"};
  sm_export_options o = {labels, 3, 0};
  char *dir = join(tmp, "stale");
  CHECK_OK(sm_seq_export(m, dir, &o));
  CHECK(!sm__path_exists(dead));
  CHECK(sm__is_dir(live));
  CHECK(sm__is_dir(other));
  rmdir(live);
  rmdir(other);
  remove_tree(dir);
  free(inner);
  free(dead);
  free(live);
  free(other);
  free(dir);
  sm_seq_free(m);
}

/* SGD with and without momentum, probabilities out, default labels, a softmax last layer. */
static void test_variants(const char *tmp) {
  /* 3..5: the layers of Keras configs, with AdamW + exponential decay, RMSprop centered with
   * momentum + cosine decay (categorical cross-entropy), SGD Nesterov */
  static const char *const names[] = {"sgd_momentum_probs", "sgd_probs", "adam_softmax_probs", "keras_adamw_expdecay",
                                      "keras_rmsprop_cosine_softmax", "keras_sgd_nesterov"};
  for (int v = 0; v < 6; v++) {
    sm_optimizer opt = sm_sgd_defaults();
    if (v == 0) opt.momentum = 0.9f;
    if (v == 1) opt.nesterov = 0;
    if (v == 2) opt = sm_adam_defaults();
    if (v == 3) {
      opt = sm_adamw_defaults();
      CHECK_OK(sm_optimizer_set_schedule(&opt, "exponential:100:0.5:staircase"));
    }
    if (v == 4) {
      opt = sm_rmsprop_defaults();
      opt.momentum = 0.5f;
      opt.centered = 1;
      CHECK_OK(sm_optimizer_set_schedule(&opt, "cosine:1000:0.1"));
    }
    if (v == 5) opt.momentum = 0.9f, opt.nesterov = 1;
    int softmax = v == 2 || v == 4;
    sm_seq *m = make_model_loss(&opt, softmax, !softmax, v >= 3,
                                v == 4 ? SM_LOSS_CATEGORICAL_CROSSENTROPY : SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY);
    if (!m) continue;
    char name[32];
    snprintf(name, sizeof name, "v%d", v);
    char *dir = join(tmp, name);
    sm_export_options o = {NULL, 0, 1};
    CHECK_OK(sm_seq_export(m, dir, &o));
    keep_export(m, names[v], &o);
    check_runs(dir, SM_TAG_SERVE, m, 1, NULL);
    check_bundle(dir, m);
    sm_seq *r = NULL;
    CHECK_OK(sm_seq_resume(dir, &r));
    if (r) check_same_model(m, r);
    sm_seq_free(r);
    remove_tree(dir);
    free(dir);
    sm_seq_free(m);
  }
}

/* Synthetic 3-class data: the class is the brightest of three vertical bands of an 8x8 image. */
static void make_data(int64_t n, sm_tensor **x, sm_tensor **y) {
  int64_t xd[4] = {n, 8, 8, 1};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 4, xd, x));
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &n, y));
  float *p = sm_tensor_data(*x);
  int32_t *l = sm_tensor_data(*y);
  for (int64_t i = 0; i < n; i++) {
    int c = (int)(i % 3);
    l[i] = c;
    for (int r = 0; r < 8; r++)
      for (int q = 0; q < 8; q++) p[i * 64 + r * 8 + q] = (frand() + 0.5f) * 0.5f + (q * 3 / 8 == c ? 0.5f : 0.0f);
  }
}

typedef struct first_loss {
  double loss;
  int seen;
} first_loss;
static int on_step(const sm_fit_progress *p, void *ctx) {
  first_loss *f = ctx;
  if (!f->seen) f->loss = p->loss, f->seen = 1;
  return 0;
}

/* Fit, export, resume: the resumed model has the loss it was saved with, its next epoch starts
 * from there (not from a fresh model's loss), and it trains on exactly as the original does. */
static void test_fit_resume(const char *tmp) {
  sm_tensor *x = NULL, *y = NULL;
  make_data(240, &x, &y);
  if (!x || !y) return;
  sm_optimizer adam = sm_adam_defaults();
  adam.learning_rate = 0.01f;
  sm_loss loss = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
  int64_t in[3] = {8, 8, 1};
  sm_seq *m = NULL, *r = NULL;
  CHECK_OK(sm_seq_new(3, in, &m));
  if (!m) goto out;
  CHECK_OK(sm_seq_conv2d(m, 4, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU));
  CHECK_OK(sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID));
  CHECK_OK(sm_seq_flatten(m));
  CHECK_OK(sm_seq_dense(m, 8, SM_ACT_RELU));
  CHECK_OK(sm_seq_dense(m, 3, SM_ACT_NONE));
  CHECK_OK(sm_seq_compile(m, &adam, &loss, 5));
  double l0, a0, l1, a1, lr, ar;
  CHECK_OK(sm_seq_evaluate(m, x, y, 32, &l0, &a0));
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = 3;
  fo.batch_size = 16;
  fo.num_threads = 1;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  CHECK_OK(sm_seq_evaluate(m, x, y, 32, &l1, &a1));
  CHECK(l1 < l0 * 0.7);
  char *dir = join(tmp, "fitted");
  CHECK_OK(sm_seq_export(m, dir, NULL));
  CHECK_OK(sm_seq_resume(dir, &r));
  if (r) {
    check_same_model(m, r);
    CHECK_EQ_INT(r->epochs_done, 3);
    CHECK_EQ_INT(r->iterations, 3 * 15);
    CHECK_OK(sm_seq_evaluate(r, x, y, 32, &lr, &ar));
    CHECK(lr == l1 && ar == a1);
    /* one more epoch each, same shuffling seed: the resumed model goes on from where it was... */
    first_loss f = {0, 0};
    fo.epochs = 1;
    fo.seed = 99;
    fo.callback = on_step;
    fo.callback_ctx = &f;
    CHECK_OK(sm_seq_fit(r, x, y, &fo));
    printf("loss: fresh %.4f, saved %.4f, resumed first step %.4f\n", l0, l1, f.loss);
    CHECK(f.seen && fabs(f.loss - l1) < 0.5 * (l0 - l1));
    if (!(f.seen && fabs(f.loss - l1) < 0.5 * (l0 - l1)))
      fprintf(stderr, "resumed first-step loss %g; saved %g, fresh %g\n", f.loss, l1, l0);
    /* ...exactly as the original continues: same weights, slots and counts, bit for bit */
    fo.callback = NULL;
    CHECK_OK(sm_seq_fit(m, x, y, &fo));
    check_same_model(m, r);
    CHECK_EQ_INT(r->epochs_done, 4);
  }
  remove_tree(dir);
  free(dir);
out:
  sm_seq_free(m);
  sm_seq_free(r);
  sm_tensor_free(x);
  sm_tensor_free(y);
}

int main(void) {
  char tmpl[] = "/tmp/sm_train_export_XXXXXX";
  char *tmp = mkdtemp(tmpl);
  if (!tmp) {
    perror("mkdtemp");
    return 1;
  }
  test_export_resume(tmp);
  test_variants(tmp);
  test_fit_resume(tmp);
  test_resume_verifies_export(tmp);
  test_stale_staging(tmp);
  CHECK_EQ_INT(count_entries(tmp), 0);
  remove_tree(tmp);
  TEST_MAIN_END();
}
