/* test_train_keras.c - models from Keras's model.to_json() (sm_seq_from_keras) trained here
 * against Keras 3 training them (tests/unit/train_keras_cases.h, from
 * tools/gen_train_keras_cases.py): the same JSON, initial weights, optimizer, schedule and batches
 * give Keras's weights, batch-norm moving statistics, epoch losses and inference outputs; and the
 * errors for configs the trainer does not support name the layer and the option; and the small
 * JSON reader under it (src/base/json.c): values, escapes, errors with offsets, depth, OOM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/json.h"
#include "savedmodel/train.h"
#include "test.h"
#include "train/train_internal.h"
#include "train_keras_cases.h"

static char tmpdir[] = "/tmp/sm_train_keras_XXXXXX";

static const char *write_file(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

static float kformula(int64_t i, int phase) { return (float)(0.5 * sin(0.7 * (double)i + phase)); }

/* Every weight Keras has, in model.weights order: fn(t, is_gamma_or_variance, ctx). */
typedef void (*weight_fn)(sm_tensor *t, int positive, void *ctx);
static void each_weight(sm_seq *m, weight_fn fn, void *ctx) {
  for (int i = 0; i < m->nlayers; i++) {
    sm__layer *L = &m->layers[i];
    if (!L->kernel) continue;
    int bn = L->kind == SM_LAYER_BATCHNORM;
    if (!bn || L->use_scale) fn(L->kernel, bn, ctx);
    if (bn ? L->center : !L->no_bias) fn(L->bias, 0, ctx);
    if (bn) {
      fn(L->moving_mean, 0, ctx);
      fn(L->moving_var, 1, ctx);
    }
  }
}

static void set_weight(sm_tensor *t, int positive, void *ctx) {
  int *k = ctx;
  float *w = sm_tensor_data(t);
  for (int64_t j = 0; j < sm_tensor_num_elements(t); j++) {
    float v = kformula(j, *k);
    w[j] = positive ? 1.0f + fabsf(v) : v;
  }
  (*k)++;
}

typedef struct cmp {
  const keras_case *c;
  int64_t idx;
  int bad;
} cmp;
static void cmp_weight(sm_tensor *t, int positive, void *ctx) {
  (void)positive;
  cmp *c = ctx;
  const float *w = sm_tensor_data(t);
  for (int64_t j = 0; j < sm_tensor_num_elements(t); j++, c->idx++) {
    if (c->idx >= c->c->nweights) {
      c->bad++;
      continue;
    }
    float want = c->c->weights[c->idx];
    if (!(fabsf(w[j] - want) <= 2e-5f + 2e-4f * fabsf(want))) {
      if (c->bad < 5) fprintf(stderr, "%s: weight %lld = %.9g, Keras %.9g\n", c->c->name, (long long)c->idx, w[j], want);
      c->bad++;
    }
  }
}

static int record_loss(const sm_fit_progress *p, void *ctx) {
  double *l = ctx;
  if (p->step == p->steps && p->epoch <= 2) l[p->epoch - 1] = p->loss;
  return 0;
}

static void run_case(const keras_case *c) {
  sm_seq *m = NULL;
  CHECK_OK(sm_seq_from_keras(write_file("model.json", c->json), &m));
  if (!m) return;
  sm_optimizer o = sm_optimizer_defaults(c->opt);
  o.learning_rate = c->lr;
  o.momentum = c->momentum;
  o.nesterov = c->nesterov;
  o.rho = c->rho;
  o.centered = c->centered;
  if (o.kind == SM_OPT_ADAMW) o.weight_decay = c->weight_decay;
  if (c->schedule) CHECK_OK(sm_optimizer_set_schedule(&o, c->schedule));
  sm_loss loss = {c->categorical ? SM_LOSS_CATEGORICAL_CROSSENTROPY : SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                  c->from_logits};
  CHECK_OK(sm_seq_compile(m, &o, &loss, 1));
  int k = 0;
  each_weight(m, set_weight, &k);
  int64_t n_in = sm__elems(m->in_rank, m->in_shape), xd[4] = {KERAS_N}, yd[2] = {KERAS_N, c->classes};
  memcpy(xd + 1, m->in_shape, (size_t)m->in_rank * sizeof *xd);
  sm_tensor *x = NULL, *y = NULL, *pred = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, m->in_rank + 1, xd, &x));
  CHECK_OK(sm_tensor_new(c->categorical ? SM_FLOAT : SM_INT32, c->categorical ? 2 : 1, yd, &y));
  float *xv = sm_tensor_data(x);
  for (int64_t i = 0; i < KERAS_N * n_in; i++) xv[i] = kformula(i, 10) + 0.5f;
  for (int i = 0; i < KERAS_N; i++) {
    int cls = i * 7 % c->classes;
    if (c->categorical)
      ((float *)sm_tensor_data(y))[i * c->classes + cls] = 1.0f; /* one-hot */
    else
      ((int32_t *)sm_tensor_data(y))[i] = cls;
  }
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = KERAS_EPOCHS;
  fo.batch_size = KERAS_BATCH;
  fo.shuffle = 0;
  fo.num_threads = 2;
  double losses[2] = {NAN, NAN};
  fo.callback = record_loss;
  fo.callback_ctx = losses;
  CHECK_OK(sm_seq_fit(m, x, y, &fo));
  cmp cc = {c, 0, 0};
  each_weight(m, cmp_weight, &cc);
  CHECK_EQ_INT(cc.idx, c->nweights);
  CHECK(cc.bad == 0);
  for (int e = 0; e < 2; e++) {
    int ok = fabs(losses[e] - c->loss[e]) <= 1e-4 + 1e-4 * fabs(c->loss[e]);
    if (!ok) fprintf(stderr, "%s: epoch %d loss %.9g, Keras %.9g\n", c->name, e + 1, losses[e], c->loss[e]);
    CHECK(ok);
  }
  CHECK_OK(sm_seq_predict(m, x, 3, &pred));
  int bad = 0;
  for (int64_t i = 0; pred && i < KERAS_N * c->classes; i++) {
    float got = ((const float *)sm_tensor_data(pred))[i], want = c->pred[i];
    if (!(fabsf(got - want) <= 5e-5f + 5e-4f * fabsf(want))) {
      if (bad < 5) fprintf(stderr, "%s: prediction %lld = %.9g, Keras %.9g\n", c->name, (long long)i, got, want);
      bad++;
    }
  }
  CHECK(bad == 0);
  sm_tensor_free(pred);
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_seq_free(m);
}

/* ---- errors ------------------------------------------------------------------------------------- */
static const char *seq_json(char *buf, size_t cap, const char *layer) {
  snprintf(buf, cap,
           "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": ["
           "{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 8, 8, 1], \"name\": \"in\"}}, %s]}}",
           layer);
  return buf;
}

static void expect_error(const char *layer, const char *needle) {
  char buf[2048];
  sm_seq *m = NULL;
  CHECK_ERR(sm_seq_from_keras(write_file("bad.json", seq_json(buf, sizeof buf, layer)), &m), needle);
  CHECK(m == NULL);
}

static void test_errors(void) {
  expect_error("{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c7\", \"filters\": 2, \"kernel_size\": 3, "
               "\"dilation_rate\": [2, 2]}}",
               "layer \"c7\" (Conv2D): dilation_rate");
  expect_error("{\"class_name\": \"LSTM\", \"config\": {\"name\": \"lstm\"}}", "layer \"lstm\" (LSTM): layer class LSTM");
  expect_error("{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c\", \"filters\": 2, \"kernel_size\": 3, "
               "\"activation\": \"gelu\"}}",
               "activation \"gelu\" is not supported");
  expect_error("{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c\", \"filters\": 2, \"kernel_size\": 3, "
               "\"padding\": \"causal\"}}",
               "padding \"causal\"");
  expect_error("{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 2, \"kernel_regularizer\": "
               "{\"class_name\": \"L2\"}}}",
               "layer \"d\" (Dense): option kernel_regularizer");
  expect_error("{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 2}}", "layer \"d\" (Dense): dense: needs a rank-1 input");
  expect_error("{\"class_name\": \"BatchNormalization\", \"config\": {\"name\": \"b\", \"axis\": 1}}", "axis other than the last");
  expect_error("{\"class_name\": \"Flatten\", \"config\": {\"name\": \"Big\"}}", "only a-z, 0-9 and _");
  expect_error("{\"class_name\": \"Flatten\", \"config\": {\"name\": \"f\", \"dtype\": \"float16\"}}", "dtype \"float16\"");
  expect_error("{\"class_name\": \"Reshape\", \"config\": {\"name\": \"r\", \"target_shape\": [7, 9]}}", "cannot reshape 64");
  sm_seq *m = NULL;
  CHECK_ERR(sm_seq_from_keras(write_file("bad.json", "{\"class_name\": \"Sequential\", \"config\": {\"layers\": [}"), &m),
            "bad.json");
  CHECK_ERR(sm_seq_from_keras(write_file("bad.json", "[1, 2]"), &m), "not a Keras model.to_json()");
  CHECK_ERR(sm_seq_from_keras("/nonexistent/model.json", &m), "/nonexistent/model.json");
  /* a functional model with a branch: the second Dense takes the input, not the first Dense */
  const char *branch =
      "{\"class_name\": \"Functional\", \"config\": {\"name\": \"f\", \"layers\": ["
      "{\"class_name\": \"InputLayer\", \"name\": \"in\", \"config\": {\"batch_shape\": [null, 4], \"name\": \"in\"}, "
      "\"inbound_nodes\": []},"
      "{\"class_name\": \"Dense\", \"name\": \"d1\", \"config\": {\"name\": \"d1\", \"units\": 2}, \"inbound_nodes\": "
      "[{\"args\": [{\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": [\"in\", 0, 0]}}]}]},"
      "{\"class_name\": \"Dense\", \"name\": \"d2\", \"config\": {\"name\": \"d2\", \"units\": 2}, \"inbound_nodes\": "
      "[{\"args\": [{\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": [\"in\", 0, 0]}}]}]}],"
      "\"input_layers\": [\"in\", 0, 0], \"output_layers\": [\"d2\", 0, 0]}}";
  CHECK_ERR(sm_seq_from_keras(write_file("bad.json", branch), &m), "layer \"d2\" (Dense): takes its input from \"in\"");
  /* schedules */
  sm_optimizer o = sm_adam_defaults();
  CHECK_ERR(sm_optimizer_set_schedule(&o, "linear:10"), "expected exponential");
  CHECK_ERR(sm_optimizer_set_schedule(&o, "cosine:0"), "expected exponential");
  CHECK_ERR(sm_optimizer_set_schedule(&o, "exponential:10:-1"), "decay_rate > 0");
  CHECK_OK(sm_optimizer_set_schedule(&o, "cosine:100"));
  CHECK(o.schedule == SM_LR_COSINE && o.decay_steps == 100 && o.alpha == 0.0f);
  CHECK(sm_optimizer_defaults("adamax").kind == -1);
}

/* ---- compile_config (as Keras 3 writes it after compile) --------------------------------------------- */
static void test_compile_config(void) {
  char buf[4096];
  const char *model = "\"config\": {\"layers\": []}";
  snprintf(buf, sizeof buf,
           "{\"class_name\": \"Sequential\", %s, \"compile_config\": {\"optimizer\": {\"module\": \"keras.optimizers\", "
           "\"class_name\": \"SGD\", \"config\": {\"name\": \"sgd\", \"learning_rate\": {\"module\": "
           "\"keras.optimizers.schedules\", \"class_name\": \"CosineDecay\", \"config\": {\"initial_learning_rate\": 0.1, "
           "\"decay_steps\": 100, \"alpha\": 0.05, \"name\": \"CosineDecay\", \"warmup_target\": null, \"warmup_steps\": 0}}, "
           "\"weight_decay\": null, \"clipnorm\": null, \"global_clipnorm\": null, \"clipvalue\": null, \"use_ema\": false, "
           "\"ema_momentum\": 0.99, \"ema_overwrite_frequency\": null, \"loss_scale_factor\": null, "
           "\"gradient_accumulation_steps\": null, \"momentum\": 0.9, \"nesterov\": true}}, \"loss\": {\"module\": "
           "\"keras.losses\", \"class_name\": \"SparseCategoricalCrossentropy\", \"config\": {\"name\": "
           "\"sparse_categorical_crossentropy\", \"reduction\": \"sum_over_batch_size\", \"from_logits\": true, "
           "\"ignore_class\": null}}, \"metrics\": [\"accuracy\"]}}",
           model);
  sm_optimizer o;
  sm_loss l;
  int ho = 0, hl = 0;
  CHECK_OK(sm_keras_compile_config(write_file("cc.json", buf), &o, &ho, &l, &hl));
  CHECK(ho && hl && o.kind == SM_OPT_SGD && o.learning_rate == 0.1f && o.momentum == 0.9f && o.nesterov == 1);
  CHECK(o.schedule == SM_LR_COSINE && o.decay_steps == 100 && o.alpha == 0.05f);
  CHECK(l.kind == SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY && l.from_logits == 1);
  snprintf(buf, sizeof buf,
           "{\"class_name\": \"Sequential\", %s, \"compile_config\": {\"optimizer\": {\"class_name\": \"AdamW\", "
           "\"config\": {\"learning_rate\": {\"class_name\": \"ExponentialDecay\", \"config\": "
           "{\"initial_learning_rate\": 0.01, \"decay_steps\": 10, \"decay_rate\": 0.9, \"staircase\": true}}, "
           "\"weight_decay\": 0.01, \"beta_1\": 0.8, \"amsgrad\": false}}, \"loss\": \"categorical_crossentropy\"}}",
           model);
  CHECK_OK(sm_keras_compile_config(write_file("cc.json", buf), &o, &ho, &l, &hl));
  CHECK(o.kind == SM_OPT_ADAMW && o.weight_decay == 0.01f && o.beta_1 == 0.8f && o.beta_2 == 0.999f);
  CHECK(o.schedule == SM_LR_EXPONENTIAL && o.decay_steps == 10 && o.decay_rate == 0.9f && o.staircase == 1);
  CHECK(l.kind == SM_LOSS_CATEGORICAL_CROSSENTROPY && l.from_logits == 0);
  snprintf(buf, sizeof buf, "{\"class_name\": \"Sequential\", %s, \"compile_config\": {\"optimizer\": \"rmsprop\", "
           "\"loss\": \"mse\"}}", model);
  CHECK_OK(sm_keras_compile_config(write_file("cc.json", buf), &o, &ho, &l, &hl));
  CHECK(o.kind == SM_OPT_RMSPROP && o.rho == 0.9f && l.kind == SM_LOSS_MSE);
  snprintf(buf, sizeof buf, "{\"class_name\": \"Sequential\", %s}", model);
  CHECK_OK(sm_keras_compile_config(write_file("cc.json", buf), &o, &ho, &l, &hl));
  CHECK(!ho && !hl);
  static const struct {
    const char *cc, *needle;
  } bad[] = {
      {"{\"optimizer\": \"adagrad\"}", "compile_config \"optimizer\" (adagrad): optimizer adagrad is not supported"},
      {"{\"optimizer\": {\"class_name\": \"Adam\", \"config\": {\"clipnorm\": 1.0}}}", "option clipnorm"},
      {"{\"optimizer\": {\"class_name\": \"Adam\", \"config\": {\"learning_rate\": {\"class_name\": "
       "\"PiecewiseConstantDecay\"}}}}",
       "learning-rate schedule PiecewiseConstantDecay"},
      {"{\"loss\": {\"class_name\": \"CategoricalCrossentropy\", \"config\": {\"label_smoothing\": 0.1}}}",
       "label_smoothing"},
      {"{\"loss\": \"hinge\"}", "loss hinge is not supported"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(buf, sizeof buf, "{\"class_name\": \"Sequential\", %s, \"compile_config\": %s}", model, bad[i].cc);
    CHECK_ERR(sm_keras_compile_config(write_file("cc.json", buf), &o, &ho, &l, &hl), bad[i].needle);
  }
}

/* ---- the JSON reader ----------------------------------------------------------------------------- */
static void test_json(void) {
  const char *doc = " {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}, "
                    "\"c\": [NaN, Infinity, -Infinity], \"a\": 7} ";
  sm__json *v = NULL;
  CHECK_OK(sm__json_parse(doc, strlen(doc), "doc", &v));
  if (v) {
    const sm__json *a = sm__json_get(v, "a"), *c = sm__json_get(v, "c");
    CHECK(a && a->type == SM_JSON_ARR && a->n == 6);
    if (a && a->n == 6) {
      CHECK(a->items[0]->num == 1.0 && a->items[1]->num == -2500.0);
      CHECK(a->items[2]->type == SM_JSON_BOOL && a->items[2]->b == 1 && a->items[3]->b == 0);
      CHECK(a->items[4]->type == SM_JSON_NULL);
      CHECK_EQ_STR(a->items[5]->str, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    }
    CHECK(c && c->n == 3 && isnan(c->items[0]->num) && isinf(c->items[1]->num) && c->items[2]->num < 0);
    CHECK(sm__json_get(v, "b") && sm__json_get(v, "b")->n == 0);
    CHECK(sm__json_get(v, "zz") == NULL && sm__json_get(a, "a") == NULL);
    CHECK_EQ_STR(sm__json_type_name(a), "array");
  }
  sm__json_free(v);
  static const struct {
    const char *text, *needle;
  } bad[] = {
      {"[1, 2] x", "doc: text after the value at byte 7"},
      {"\"abc", "unterminated string"},
      {"\"a\\q\"", "bad escape"},
      {"\"a\\u0000\"", "NUL or unpaired surrogate"},
      {"\"a\\ud800\"", "NUL or unpaired surrogate"},
      {"\"a\tb\"", "control character"},
      {"{\"a\" 1}", "expected ':'"},
      {"{1: 2}", "expected a member name"},
      {"[1 2]", "expected ',' or ']'"},
      {"[1.2.3]", "bad number"},
      {"Nope", "unexpected character"},
      {"", "unexpected end of input"},
      {"[tru]", "unexpected character"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECK_ERR(sm__json_parse(bad[i].text, strlen(bad[i].text), "doc", &v), bad[i].needle);
    CHECK(v == NULL);
  }
  char deep[600];
  memset(deep, '[', 300);
  memset(deep + 300, ']', 300);
  CHECK_ERR(sm__json_parse(deep, 600, "doc", &v), "nested too deeply");
  CHECK_OK(sm__json_parse(deep + 172, 256, "doc", &v)); /* 128 levels */
  sm__json_free(v);
  /* out of memory at every allocation: an error, never a crash or a leak */
  for (long k = 1; k < 200; k++) {
    sm__alloc_fail_after(k, 0);
    sm_status *st = sm__json_parse(doc, strlen(doc), "doc", &v);
    long failed = sm__alloc_failures();
    sm__alloc_fail_after(0, 0);
    if (!failed) {
      CHECK(st == NULL);
      sm__json_free(v);
      break;
    }
    CHECK(st != NULL && sm_status_code(st) == SM_RESOURCE_EXHAUSTED && v == NULL);
    sm_status_free(st);
  }
}

int main(void) {
  test_json();
  CHECK(mkdtemp(tmpdir) != NULL);
  for (size_t i = 0; i < sizeof keras_cases / sizeof *keras_cases; i++) run_case(&keras_cases[i]);
  test_errors();
  test_compile_config();
  char path[300];
  snprintf(path, sizeof path, "%s/model.json", tmpdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/bad.json", tmpdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/cc.json", tmpdir);
  unlink(path);
  rmdir(tmpdir);
  TEST_MAIN_END();
}
