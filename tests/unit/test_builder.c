/* test_builder.c - graph building (names, attrs, op checks), signature rules, the SavedModel
 * builder (refusals, read-back equality), fingerprint.pb (FarmHash values TensorFlow computes,
 * the zoo's TF-written fingerprints), ParseExampleV2 graphs and the labels example run by this
 * project's runtime. `test_builder --write DIR` writes the models that
 * tests/interop/test_builder_tf.py hands to TensorFlow; `test_builder --fingerprint DIR` prints
 * the fingerprint this library computes for a SavedModel, for the interop suite to compare. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attr_value.pb-c.h"
#include "base/file.h"
#include "builder/fingerprint.h"
#include "savedmodel/builder.h"
#include "savedmodel/example.h"
#include "savedmodel/model.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"
#include "test.h"

static sm_tensor *scalar_f(float v) {
  sm_tensor *t = NULL;
  sm_status_free(sm_tensor_new(SM_FLOAT, 0, NULL, &t));
  memcpy(sm_tensor_data(t), &v, 4);
  return t;
}

static const Tensorflow__NodeDef *node(const sm_graph *g, const char *name) {
  const Tensorflow__GraphDef *gd = sm_graph_def(g);
  for (size_t i = 0; i < gd->n_node; i++)
    if (!strcmp(gd->node[i]->name, name)) return gd->node[i];
  return NULL;
}

static const Tensorflow__AttrValue *attr(const Tensorflow__NodeDef *n, const char *k) {
  for (size_t i = 0; n && i < n->n_attr; i++)
    if (!strcmp(n->attr[i]->key, k)) return n->attr[i]->value;
  return NULL;
}

static void test_names(void) {
  sm_graph *g;
  CHECK_OK(sm_graph_new(&g));
  const char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *sc = NULL;
  CHECK_OK(sm_graph_placeholder(g, "x", SM_FLOAT, -1, NULL, &a));
  CHECK_OK(sm_graph_placeholder(g, "x", SM_FLOAT, -1, NULL, &b));
  CHECK_OK(sm_graph_placeholder(g, "X", SM_FLOAT, -1, NULL, &c)); /* TF compares names case-insensitively */
  CHECK_EQ_STR(a, "x");
  CHECK_EQ_STR(b, "x_1");
  CHECK_EQ_STR(c, "X_2");
  CHECK_OK(sm_graph_unary(g, "Square", NULL, "x", &a));
  CHECK_OK(sm_graph_unary(g, "Square", NULL, "x", &b));
  CHECK_EQ_STR(a, "Square");
  CHECK_EQ_STR(b, "Square_1");
  CHECK_OK(sm_graph_push_scope(g, "save", &sc));
  CHECK_EQ_STR(sc, "save");
  CHECK_OK(sm_graph_unary(g, "Identity", NULL, "x:0", &d));
  CHECK_EQ_STR(d, "save/Identity");
  sm_graph_pop_scope(g);
  CHECK_OK(sm_graph_push_scope(g, "save", &sc));
  CHECK_EQ_STR(sc, "save_1");
  sm_graph_pop_scope(g);
  CHECK_ERR(sm_graph_placeholder(g, "bad:name", SM_FLOAT, -1, NULL, NULL), "invalid node name");
  /* variables: the handle is named like its scope; pieces live under it */
  const char *r1 = NULL, *r2 = NULL;
  sm_tensor *v = scalar_f(2);
  CHECK_OK(sm_graph_variable(g, "w", v, &r1));
  CHECK_OK(sm_graph_variable(g, "w", v, &r2));
  sm_tensor_free(v);
  CHECK_EQ_STR(r1, "w/Read/ReadVariableOp");
  CHECK_EQ_STR(r2, "w_1/Read/ReadVariableOp");
  CHECK(node(g, "w") && !strcmp(node(g, "w")->op, "VarHandleOp"));
  CHECK(node(g, "w/Initializer/initial_value") != NULL);
  CHECK(node(g, "w/Assign") != NULL);
  CHECK(node(g, "w/IsInitialized/VarIsInitializedOp") != NULL);
  CHECK(node(g, "w_1") != NULL);
  CHECK_EQ_INT(sm_graph_num_variables(g), 2);
  sm_graph_free(g);
}

static void test_ops_and_attrs(void) {
  sm_graph *g;
  CHECK_OK(sm_graph_new(&g));
  const char *x = NULL, *i = NULL;
  int64_t dims[2] = {-1, 3};
  CHECK_OK(sm_graph_placeholder(g, "x", SM_FLOAT, 2, dims, &x));
  sm_tensor *ti;
  int64_t one = 1;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &one, &ti));
  CHECK_OK(sm_graph_const(g, "i", ti, &i));
  sm_tensor_free(ti);

  /* defaults filled, inferred T, shape inference */
  sm_op *op = sm_op_begin(g, "Placeholder", "p");
  sm_op_attr_type(op, "dtype", SM_DOUBLE);
  CHECK_OK(sm_op_finish(op, NULL));
  const Tensorflow__AttrValue *sh = attr(node(g, "p"), "shape");
  CHECK(sh && sh->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE && sh->shape->unknown_rank);
  const char *sq;
  CHECK_OK(sm_graph_unary(g, "Square", NULL, x, &sq));
  const Tensorflow__AttrValue *t = attr(node(g, sq), "T");
  CHECK(t && t->type == TENSORFLOW__DATA_TYPE__DT_FLOAT);
  int dt, rank;
  const int64_t *d;
  CHECK_OK(sm_graph_tensor(g, "Square:0", &dt, &rank, &d));
  CHECK_EQ_INT(dt, SM_FLOAT);
  CHECK_EQ_INT(rank, 2);
  if (rank == 2) CHECK(d[0] == -1 && d[1] == 3);
  CHECK_ERR(sm_graph_tensor(g, "Square:1", &dt, NULL, NULL), "1 output");
  CHECK_ERR(sm_graph_tensor(g, "nope:0", &dt, NULL, NULL), "no such node");
  CHECK_ERR(sm_graph_tensor(g, "Square:-1", &dt, NULL, NULL), "bad tensor name");
  CHECK_ERR(sm_graph_tensor(g, "Square:", &dt, NULL, NULL), "bad tensor name");
  CHECK_ERR(sm_graph_tensor(g, "Square:99999999999999999999999", &dt, NULL, NULL), "output");
  CHECK_ERR(sm_graph_tensor(g, "Square:1x", &dt, NULL, NULL), "bad tensor name");
  /* NULL ops (sm_op_begin out of memory) are safe to feed and finish */
  sm_op_input(NULL, "x");
  sm_op_attr_int(NULL, "N", 1);
  CHECK_ERR(sm_op_finish(NULL, NULL), "out of memory");

  /* errors */
  CHECK_ERR(sm_op_finish(sm_op_begin(g, "FancyOp", NULL), NULL), "not in this library's OpDef table");
  op = sm_op_begin(g, "Placeholder", NULL);
  CHECK_ERR(sm_op_finish(op, NULL), "missing attr \"dtype\"");
  op = sm_op_begin(g, "Placeholder", NULL);
  sm_op_attr_type(op, "dtype", SM_FLOAT);
  sm_op_attr_int(op, "colour", 3);
  CHECK_ERR(sm_op_finish(op, NULL), "unknown attr \"colour\"");
  op = sm_op_begin(g, "Placeholder", NULL);
  sm_op_attr_int(op, "dtype", 1);
  CHECK_ERR(sm_op_finish(op, NULL), "must be of type type");
  CHECK_ERR(sm_graph_binary(g, "Mul", NULL, x, i, NULL), "attr T = DT_FLOAT");
  CHECK_ERR(sm_graph_unary(g, "Mul", NULL, x, NULL), "takes 2 input(s)");
  CHECK_ERR(sm_graph_unary(g, "Square", NULL, "missing", NULL), "no such node");
  CHECK_ERR(sm_graph_unary(g, "Square", NULL, "x:7", NULL), "1 output");
  op = sm_op_begin(g, "Identity", NULL);
  sm_op_input(op, "^x");
  sm_op_input(op, x);
  CHECK_ERR(sm_op_finish(op, NULL), "after a control input");
  /* a string input where Square allows only numbers */
  sm_tensor *s;
  CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &s));
  const char *sc;
  CHECK_OK(sm_graph_const(g, "s", s, &sc));
  sm_tensor_free(s);
  CHECK_ERR(sm_graph_unary(g, "Square", NULL, sc, NULL), "DT_STRING is not allowed");
  /* list attrs: Pack infers N and T; StringJoin with an explicit separator */
  op = sm_op_begin(g, "Pack", NULL);
  sm_op_input(op, x);
  sm_op_input(op, x);
  CHECK_OK(sm_op_finish(op, NULL));
  const Tensorflow__AttrValue *n = attr(node(g, "Pack"), "N");
  CHECK(n && n->i == 2);
  op = sm_op_begin(g, "Pack", NULL);
  sm_op_input(op, x);
  sm_op_input(op, i);
  CHECK_ERR(sm_op_finish(op, NULL), "attr T");
  op = sm_op_begin(g, "SaveV2", NULL);
  sm_op_input(op, sc);
  sm_op_input(op, sc);
  sm_op_input(op, sc);
  sm_op_input(op, x);
  sm_op_input(op, i);
  CHECK_OK(sm_op_finish(op, NULL));
  const Tensorflow__AttrValue *dts = attr(node(g, "SaveV2"), "dtypes");
  CHECK(dts && dts->list->n_type == 2 && dts->list->type[1] == TENSORFLOW__DATA_TYPE__DT_INT32);

  Tensorflow__OpList *ol;
  CHECK_OK(sm_graph_stripped_op_list(g, &ol));
  const char *want[] = {"Const", "Pack", "Placeholder", "SaveV2", "Square"};
  CHECK_EQ_INT(ol->n_op, 5);
  for (size_t k = 0; k < ol->n_op && k < 5; k++) CHECK_EQ_STR(ol->op[k]->name, want[k]);
  protobuf_c_message_free_unpacked(&ol->base, NULL);
  sm_graph_free(g);
}

static void test_signatures(void) {
  sm_graph *g;
  CHECK_OK(sm_graph_new(&g));
  const char *x, *y, *str, *f;
  CHECK_OK(sm_graph_placeholder(g, "x", SM_FLOAT, -1, NULL, &x));
  CHECK_OK(sm_graph_unary(g, "Square", "y", x, &y));
  CHECK_OK(sm_graph_placeholder(g, "serialized", SM_STRING, 1, (int64_t[]){-1}, &str));
  CHECK_OK(sm_graph_unary(g, "Identity", "labels", str, &f));
  sm_signature *s;

  CHECK_OK(sm_signature_new("p", SM_PREDICT_METHOD_NAME, &s));
  CHECK_ERR(sm_signature_validate(s, g), "at least one input and one output");
  CHECK_OK(sm_signature_add_input_from(s, "x", g, x));
  CHECK_ERR(sm_signature_add_input_from(s, "x", g, x), "given twice");
  CHECK_ERR(sm_signature_add_output_from(s, "z", g, "zzz"), "no such node");
  CHECK_OK(sm_signature_add_output(s, "y", "y:0", SM_FLOAT, -1, NULL));
  CHECK_OK(sm_signature_validate(s, g));
  CHECK_EQ_STR(sm_signature_def(s)->inputs[0]->value->name, "x:0");
  sm_signature_free(s);

  CHECK_OK(sm_signature_new("p", SM_PREDICT_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input(s, "x", "ghost:0", SM_FLOAT, -1, NULL));
  CHECK_OK(sm_signature_add_output(s, "y", "y:0", SM_INT32, -1, NULL));
  CHECK_ERR(sm_signature_validate(s, g), "no such node");
  CHECK_OK(sm_signature_validate(s, NULL));
  sm_signature_free(s);
  CHECK_OK(sm_signature_new("p", SM_PREDICT_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input(s, "x", "x", SM_FLOAT, -1, NULL));
  CHECK_OK(sm_signature_add_output(s, "y", "y:0", SM_INT32, -1, NULL));
  CHECK_ERR(sm_signature_validate(s, g), "is DT_FLOAT, the signature says DT_INT32");
  sm_signature_free(s);

  /* classify: one string "inputs"; classes string and/or scores float */
  CHECK_OK(sm_signature_new("c", SM_CLASSIFY_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input_from(s, "inputs", g, x));
  CHECK_OK(sm_signature_add_output_from(s, "scores", g, y));
  CHECK_ERR(sm_signature_validate(s, g), "exactly one input \"inputs\" of dtype DT_STRING");
  sm_signature_free(s);
  CHECK_OK(sm_signature_new("c", SM_CLASSIFY_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input_from(s, "inputs", g, str));
  CHECK_ERR(sm_signature_validate(s, g), "\"classes\" and/or \"scores\"");
  CHECK_OK(sm_signature_add_output_from(s, "scores", g, y));
  CHECK_OK(sm_signature_validate(s, g));
  CHECK_OK(sm_signature_add_output_from(s, "classes", g, y));
  CHECK_ERR(sm_signature_validate(s, g), "\"classes\" must be DT_STRING");
  sm_signature_free(s);
  CHECK_OK(sm_signature_new("c", SM_CLASSIFY_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input_from(s, "inputs", g, str));
  CHECK_OK(sm_signature_add_output_from(s, "classes", g, f));
  CHECK_OK(sm_signature_add_output_from(s, "probabilities", g, y));
  CHECK_ERR(sm_signature_validate(s, g), "\"probabilities\" is not");
  sm_signature_free(s);

  /* the helpers validate what they build */
  CHECK_OK(sm_signature_classify("c", g, str, f, NULL, &s));
  CHECK_EQ_STR(sm_signature_def(s)->method_name, SM_CLASSIFY_METHOD_NAME);
  CHECK_EQ_STR(sm_signature_def(s)->outputs[0]->key, "classes");
  sm_signature_free(s);
  CHECK_ERR(sm_signature_classify("c", g, str, NULL, NULL, &s), "classes and/or scores");
  CHECK_ERR(sm_signature_classify("c", g, str, y, NULL, &s), "must be DT_STRING");
  CHECK_ERR(sm_signature_regress("r", g, x, y, &s), "DT_STRING");
  CHECK_OK(sm_signature_regress("r", g, str, y, &s));
  CHECK_EQ_STR(sm_signature_def(s)->outputs[0]->key, "outputs");
  sm_signature_free(s);

  /* regress: one string input, one float "outputs" */
  CHECK_OK(sm_signature_new("r", SM_REGRESS_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input_from(s, "inputs", g, str));
  CHECK_OK(sm_signature_add_output_from(s, "outputs", g, f));
  CHECK_ERR(sm_signature_validate(s, g), "one output \"outputs\" of dtype DT_FLOAT");
  sm_signature_free(s);
  CHECK_OK(sm_signature_new("r", SM_REGRESS_METHOD_NAME, &s));
  CHECK_OK(sm_signature_add_input_from(s, "inputs", g, str));
  CHECK_OK(sm_signature_add_output_from(s, "outputs", g, y));
  CHECK_OK(sm_signature_validate(s, g));
  sm_signature_free(s);
  sm_graph_free(g);
}

/* y = a * x * x with variable a (and an unused b), predict signature x -> y. */
static sm_status *scaled_graph(sm_graph **out, sm_signature **sig) {
  sm_graph *g;
  sm_status *s = sm_graph_new(&g);
  if (s) return s;
  const char *x, *a, *b, *xx, *y;
  sm_tensor *av = scalar_f(3), *bv;
  int64_t two = 2;
  s = sm_tensor_new(SM_INT64, 1, &two, &bv);
  if (!s) ((int64_t *)sm_tensor_data(bv))[1] = 42;
  if (!s) s = sm_graph_placeholder(g, "x", SM_FLOAT, 1, (int64_t[]){-1}, &x);
  if (!s) s = sm_graph_variable(g, "a", av, &a);
  if (!s) s = sm_graph_variable(g, "b", bv, &b);
  /* w: over the inline limit, so its initial value is compact zeros; the bundle has the values */
  sm_tensor *wv = NULL;
  int64_t n = 300;
  if (!s) s = sm_tensor_new(SM_FLOAT, 1, &n, &wv);
  for (int64_t i = 0; !s && i < n; i++) ((float *)sm_tensor_data(wv))[i] = (float)i * 0.5f;
  if (!s) s = sm_graph_variable(g, "w", wv, NULL);
  sm_tensor_free(wv);
  if (!s) s = sm_graph_binary(g, "Mul", NULL, x, x, &xx);
  if (!s) s = sm_graph_binary(g, "Mul", "y", a, xx, &y);
  if (!s) s = sm_signature_predict(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, g, "x", x, "y", y, sig);
  sm_tensor_free(av);
  sm_tensor_free(bv);
  if (s) {
    sm_graph_free(g);
    return s;
  }
  *out = g;
  return NULL;
}

static sm_status *write_scaled(const char *dir, int as_text) {
  sm_graph *g;
  sm_signature *sig;
  sm_builder *b = NULL;
  sm_status *s = scaled_graph(&g, &sig);
  if (s) return s;
  const char *tags[] = {SM_TAG_SERVE};
  s = sm_builder_new(dir, &b);
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, tags, 1, &sig, 1);
  if (!s) s = sm_builder_save(b, as_text);
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_graph_free(g);
  return s;
}

/* Three MetaGraphs sharing variables: {serve}, {serve, gpu} (its own graph), {train}. */
static sm_status *write_multi(const char *dir) {
  sm_graph *g, *g2 = NULL;
  sm_signature *sig, *sig2 = NULL;
  sm_builder *b = NULL;
  sm_status *s = scaled_graph(&g, &sig);
  if (s) return s;
  const char *x, *a, *y;
  sm_tensor *av = scalar_f(3);
  s = sm_graph_new(&g2);
  if (!s) s = sm_graph_placeholder(g2, "x", SM_FLOAT, 1, (int64_t[]){-1}, &x);
  if (!s) s = sm_graph_variable(g2, "a", av, &a);
  if (!s) s = sm_graph_binary(g2, "AddV2", "y", a, x, &y); /* the gpu graph computes a + x */
  if (!s) s = sm_signature_predict(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, g2, "x", x, "y", y, &sig2);
  sm_tensor_free(av);
  const char *serve[] = {SM_TAG_SERVE}, *gpu[] = {SM_TAG_SERVE, SM_TAG_GPU}, *train[] = {SM_TAG_TRAIN};
  if (!s) s = sm_builder_new(dir, &b);
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &sig, 1);
  if (!s) s = sm_builder_add_meta_graph(b, g2, gpu, 2, &sig2, 1);
  if (!s) s = sm_builder_add_meta_graph(b, g, train, 1, &sig, 1);
  if (!s) s = sm_builder_save(b, 0);
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_signature_free(sig2);
  sm_graph_free(g);
  sm_graph_free(g2);
  return s;
}

/* A linear classifier over x[?,2] with labels cat, dog, bird from a vocabulary asset:
 * scores = softmax(x w + bias), classes = labels[argmax(scores)]. */
static sm_status *write_labels(const char *dir, const char *labels_src) {
  sm_graph *g;
  sm_signature *sig = NULL;
  sm_builder *b = NULL;
  sm_status *s = sm_graph_new(&g);
  if (s) return s;
  const char *x, *w, *bias, *mm, *logits, *scores, *dim, *ids, *table, *classes;
  sm_tensor *wv = NULL, *bv = NULL, *dv = NULL;
  int64_t wd[2] = {2, 3}, bd = 3;
  s = sm_tensor_new(SM_FLOAT, 2, wd, &wv);
  if (!s) s = sm_tensor_new(SM_FLOAT, 1, &bd, &bv);
  if (!s) s = sm_tensor_new(SM_INT32, 0, NULL, &dv);
  if (!s) {
    float *wp = sm_tensor_data(wv);
    wp[0] = 1, wp[4] = 1; /* x0 -> cat, x1 -> dog */
    ((float *)sm_tensor_data(bv))[2] = 1;
    ((int32_t *)sm_tensor_data(dv))[0] = 1;
  }
  if (!s) s = sm_graph_placeholder(g, "x", SM_FLOAT, 2, (int64_t[]){-1, 2}, &x);
  if (!s) s = sm_graph_variable(g, "w", wv, &w);
  if (!s) s = sm_graph_variable(g, "bias", bv, &bias);
  if (!s) s = sm_graph_binary(g, "MatMul", NULL, x, w, &mm);
  if (!s) s = sm_graph_binary(g, "AddV2", "add", mm, bias, &logits);
  if (!s) s = sm_graph_unary(g, "Softmax", NULL, logits, &scores);
  if (!s) s = sm_graph_const(g, "ArgMax/dimension", dv, &dim);
  if (!s) s = sm_graph_binary(g, "ArgMax", NULL, scores, dim, &ids);
  if (!s) s = sm_graph_label_vocabulary(g, "labels.txt", labels_src, &table);
  if (!s) s = sm_graph_lookup(g, table, ids, "UNKNOWN", &classes);
  if (!s) s = sm_signature_new(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, SM_PREDICT_METHOD_NAME, &sig);
  if (!s) s = sm_signature_add_input_from(sig, "x", g, x);
  if (!s) s = sm_signature_add_output_from(sig, "classes", g, classes);
  if (!s) s = sm_signature_add_output_from(sig, "scores", g, scores);
  const char *tags[] = {SM_TAG_SERVE};
  if (!s) s = sm_builder_new(dir, &b);
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, tags, 1, &sig, 1);
  if (!s) s = sm_builder_save(b, 0);
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_tensor_free(wv);
  sm_tensor_free(bv);
  sm_tensor_free(dv);
  sm_graph_free(g);
  return s;
}

static sm_status *write_labels_src(const char *path) {
  return sm__file_write_atomic(path, "cat\ndog\nbird\n", 13);
}

static char *join(const char *a, const char *b) { return sm__path_join(a, b); }

static int count_entries(const char *dir) {
  int n = 0;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}


/* ---- fingerprint.pb ---- */
static void test_farmhash(void) {
  /* tf.strings.to_hash_bucket_fast(s, 2**63 - 1), i.e. Fingerprint64(s) mod (2^63 - 1), from TF 2.21 */
  char x17[17], y40[40], z100[100], w300[300];
  memset(x17, 'x', sizeof x17);
  memset(y40, 'y', sizeof y40);
  memset(z100, 'z', sizeof z100);
  for (int i = 0; i < 300; i++) w300[i] = (char)(i * 7 + 3);
  struct {
    const char *s;
    size_t n;
    uint64_t want;
  } v[] = {{"", 0, 1936946117179621456ULL},        {"a", 1, 3694432073954588132ULL},
           {"hello world", 11, 6381520714923946011ULL}, {x17, 17, 2082709914559524774ULL},
           {y40, 40, 276292113409495006ULL},         {z100, 100, 9220849947163966073ULL}};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    CHECK(sm__fingerprint64(v[i].s, v[i].n) % 9223372036854775807ULL == v[i].want);
  /* every length class and a read at each offset stays in bounds (ASan checks) and differs */
  uint64_t prev = 0;
  for (size_t n = 0; n <= sizeof w300; n++) {
    uint64_t h = sm__fingerprint64(w300, n);
    CHECK(h != prev);
    prev = h;
  }
  CHECK(sm__fingerprint_cat64(1, 2) != sm__fingerprint_cat64(2, 1));
}

/* C++'s deterministic serialization: map entries by key, key and value always written. */
static void test_deterministic(void) {
  sm_signature *a, *b;
  CHECK_OK(sm_signature_new("k", SM_PREDICT_METHOD_NAME, &a));
  CHECK_OK(sm_signature_new("k", SM_PREDICT_METHOD_NAME, &b));
  CHECK_OK(sm_signature_add_output(a, "zeta", "z:0", SM_FLOAT, 0, NULL));
  CHECK_OK(sm_signature_add_output(a, "alpha", "a:0", SM_FLOAT, 0, NULL));
  CHECK_OK(sm_signature_add_output(b, "alpha", "a:0", SM_FLOAT, 0, NULL));
  CHECK_OK(sm_signature_add_output(b, "zeta", "z:0", SM_FLOAT, 0, NULL));
  uint8_t *pa = NULL, *pb = NULL;
  size_t la = 0, lb = 0;
  CHECK_OK(sm__pb_serialize_deterministic(&sm_signature_def(a)->base, &pa, &la));
  CHECK_OK(sm__pb_serialize_deterministic(&sm_signature_def(b)->base, &pb, &lb));
  size_t lp = protobuf_c_message_get_packed_size(&sm_signature_def(b)->base);
  uint8_t *pp = malloc(lp);
  protobuf_c_message_pack(&sm_signature_def(b)->base, pp);
  CHECK(la == lb && !memcmp(pa, pb, la)); /* insertion order does not matter */
  CHECK(lp == lb && !memcmp(pp, pb, lb)); /* and sorted input packs as protobuf-c packs it */
  free(pa);
  free(pb);
  free(pp);
  sm_signature_free(a);
  sm_signature_free(b);
  /* an entry whose value is empty still carries it: key "k" + empty AttrValue = 0a 01 6b 12 00 */
  Tensorflow__NodeDef__AttrEntry e = TENSORFLOW__NODE_DEF__ATTR_ENTRY__INIT;
  Tensorflow__AttrValue v = TENSORFLOW__ATTR_VALUE__INIT;
  e.key = "k";
  e.value = &v;
  CHECK_OK(sm__pb_serialize_deterministic(&e.base, &pa, &la));
  CHECK(la == 5 && !memcmp(pa, "\x0a\x01k\x12\x00", 5));
  free(pa);
  /* hand-built nesting past the parser's limit is refused, not recursed into without end */
  enum { LEVELS = 60 };
  Tensorflow__NameAttrList fl[LEVELS];
  Tensorflow__NameAttrList__AttrEntry fe[LEVELS], *fep[LEVELS];
  Tensorflow__AttrValue fv[LEVELS];
  for (int i = 0; i < LEVELS; i++) {
    tensorflow__name_attr_list__init(&fl[i]);
    tensorflow__name_attr_list__attr_entry__init(&fe[i]);
    tensorflow__attr_value__init(&fv[i]);
    fl[i].name = "f";
    fe[i].key = "a";
    fe[i].value = &fv[i];
    fep[i] = &fe[i];
    if (i + 1 < LEVELS) {
      fl[i].n_attr = 1;
      fl[i].attr = &fep[i];
      fv[i].value_case = TENSORFLOW__ATTR_VALUE__VALUE_FUNC;
      fv[i].func = &fl[i + 1];
    }
  }
  CHECK_ERR(sm__pb_serialize_deterministic(&fl[0].base, &pa, &la), "nested deeper");
  CHECK_OK(sm__pb_serialize_deterministic(&fl[LEVELS - 20].base, &pa, &la));
  free(pa);
}

static int same_hashes(const Tensorflow__FingerprintDef *a, const Tensorflow__FingerprintDef *b) {
  return a->saved_model_checksum == b->saved_model_checksum && a->graph_def_program_hash == b->graph_def_program_hash &&
         a->signature_def_hash == b->signature_def_hash && a->saved_object_graph_hash == b->saved_object_graph_hash &&
         a->checkpoint_hash == b->checkpoint_hash;
}

static Tensorflow__FingerprintDef *read_fingerprint(const char *dir) {
  char *p = sm__path_join(dir, SM_FINGERPRINT_FILENAME), *data = NULL;
  size_t len = 0;
  ProtobufCMessage *m = NULL;
  sm_status *s = sm__file_read_all(p, &data, &len);
  if (!s) s = sm_pb_parse(&tensorflow__fingerprint_def__descriptor, (const uint8_t *)data, len, p, &m);
  if (s) {
    fprintf(stderr, "%s\n", sm_status_message(s));
    sm_status_free(s);
  }
  free(data);
  free(p);
  return (Tensorflow__FingerprintDef *)m;
}

/* Every zoo model TensorFlow 2.21 saved with a fingerprint.pb: our hashes are the file's. */
static void test_zoo_fingerprints(void) {
  const char *zoo = SM_SOURCE_DIR "/tests/fixtures/zoo";
  DIR *d = opendir(zoo);
  if (!d) {
    printf("skipped: %s absent\n", zoo);
    return;
  }
  struct dirent *e;
  int checked = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/model/fingerprint.pb", zoo, e->d_name);
    if (!sm__path_exists(path)) continue;
    path[strlen(path) - strlen("/fingerprint.pb")] = 0;
    Tensorflow__FingerprintDef *tf = read_fingerprint(path), *ours = NULL;
    CHECK(tf != NULL);
    if (tf && tf->version && tf->version->producer == SM_FINGERPRINT_PRODUCER) {
      CHECK_OK(sm_saved_model_fingerprint(path, &ours));
      if (ours && !same_hashes(tf, ours)) fprintf(stderr, "fingerprint differs: %s\n", path);
      CHECK(ours && same_hashes(tf, ours));
      checked++;
    }
    if (ours) protobuf_c_message_free_unpacked(&ours->base, NULL);
    if (tf) protobuf_c_message_free_unpacked(&tf->base, NULL);
  }
  closedir(d);
  CHECK(checked >= 10);
}

/* ---- tf.Example parsing ---- */
static sm_status *example_bytes(float f0, float f1, const int64_t *i, const char *str, sm_tensor *batch, int64_t k) {
  sm_example *e;
  uint8_t *b = NULL;
  size_t n = 0;
  float f[2] = {f0, f1};
  sm_status *s = sm_example_new(&e);
  if (!s) s = sm_example_add_floats(e, "f", f, 2);
  if (!s && i) s = sm_example_add_int64s(e, "i", i, 1);
  if (!s && str) s = sm_example_add_bytes(e, "s", &str, (size_t[]){strlen(str)}, 1);
  if (!s) s = sm_example_serialize(e, &b, &n);
  if (!s) s = sm_tensor_set_string(batch, k, b, n);
  free(b);
  sm_example_free(e);
  return s;
}

static void test_parse_example(const char *tmp) {
  sm_graph *g;
  CHECK_OK(sm_graph_new(&g));
  const char *ser, *vals[3];
  int64_t two = 2, batch = -1;
  CHECK_OK(sm_graph_placeholder(g, "examples", SM_STRING, 1, &batch, &ser));
  sm_tensor *di = NULL, *ds = NULL, *df = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 0, NULL, &di));
  *(int64_t *)sm_tensor_data(di) = 7;
  CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &ds));
  CHECK_OK(sm_tensor_set_string(ds, 0, "none", 4));
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, (int64_t[]){3}, &df));
  sm_dense_feature fs[3] = {{"f", SM_FLOAT, 1, &two, NULL}, {"i", SM_INT64, 0, NULL, di}, {"s", SM_STRING, 0, NULL, ds}};
  /* refusals */
  sm_dense_feature bad = {"d", SM_DOUBLE, 0, NULL, NULL};
  CHECK_ERR(sm_graph_parse_example(g, NULL, ser, &bad, 1, vals), "float, int64 or bytes");
  bad = (sm_dense_feature){"d", SM_FLOAT, 1, &batch, NULL};
  CHECK_ERR(sm_graph_parse_example(g, NULL, ser, &bad, 1, vals), "unknown");
  bad = (sm_dense_feature){"d", SM_FLOAT, 1, &two, df};
  CHECK_ERR(sm_graph_parse_example(g, NULL, ser, &bad, 1, vals), "default has 3 values");
  bad = (sm_dense_feature){"d", SM_INT64, 0, NULL, ds};
  CHECK_ERR(sm_graph_parse_example(g, NULL, ser, &bad, 1, vals), "default is DT_STRING");
  sm_dense_feature dup[2] = {fs[0], fs[0]};
  CHECK_ERR(sm_graph_parse_example(g, NULL, ser, dup, 2, vals), "given twice");
  CHECK_OK(sm_graph_parse_example(g, NULL, ser, fs, 3, vals));
  CHECK_EQ_STR(vals[0], "ParseExample/ParseExampleV2:0");
  CHECK_EQ_STR(vals[2], "ParseExample/ParseExampleV2:2");
  int dt, rank;
  const int64_t *dims;
  CHECK_OK(sm_graph_tensor(g, vals[0], &dt, &rank, &dims));
  CHECK(dt == SM_FLOAT && rank == 2 && dims[0] == -1 && dims[1] == 2);
  CHECK_OK(sm_graph_tensor(g, vals[1], &dt, &rank, &dims));
  CHECK(dt == SM_INT64 && rank == 1);
  CHECK_OK(sm_graph_tensor(g, vals[2], &dt, &rank, NULL));
  CHECK(dt == SM_STRING && rank == 1);
  const char *other[3];
  CHECK_ERR(sm_graph_parse_example(g, "more", "nope:0", fs, 3, other), "no such node");
  sm_signature *sig;
  CHECK_OK(sm_signature_new("parse", SM_PREDICT_METHOD_NAME, &sig));
  CHECK_OK(sm_signature_add_input_from(sig, "examples", g, ser));
  CHECK_OK(sm_signature_add_output_from(sig, "f", g, vals[0]));
  CHECK_OK(sm_signature_add_output_from(sig, "i", g, vals[1]));
  CHECK_OK(sm_signature_add_output_from(sig, "s", g, vals[2]));
  char *dir = join(tmp, "parse");
  sm_builder *b;
  const char *serve[] = {SM_TAG_SERVE};
  CHECK_OK(sm_builder_new(dir, &b));
  CHECK_OK(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &sig, 1));
  CHECK_OK(sm_builder_save(b, 0));
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_graph_free(g);
  sm_tensor_free(di);
  sm_tensor_free(ds);
  sm_tensor_free(df);
  /* this project's runtime parses: values given, defaults where missing */
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, serve, 1, NULL, &m));
  if (m) {
    sm_tensor *in = NULL, *out[3] = {NULL, NULL, NULL};
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &two, &in));
    CHECK_OK(example_bytes(1.5f, -2, (int64_t[]){42}, "yes", in, 0));
    CHECK_OK(example_bytes(3, 4, NULL, NULL, in, 1));
    const char *alias = "examples", *outs[3] = {"f", "i", "s"};
    CHECK_OK(sm_model_run(m, "parse", &alias, &in, 1, outs, 3, out));
    if (out[0] && out[1] && out[2]) {
      const float *f = sm_tensor_data(out[0]);
      const int64_t *i = sm_tensor_data(out[1]);
      CHECK(sm_tensor_rank(out[0]) == 2 && f[0] == 1.5f && f[1] == -2 && f[2] == 3 && f[3] == 4);
      CHECK(i[0] == 42 && i[1] == 7);
      size_t l0, l1;
      const char *s0 = sm_tensor_string(out[2], 0, &l0), *s1 = sm_tensor_string(out[2], 1, &l1);
      CHECK(l0 == 3 && !memcmp(s0, "yes", 3) && l1 == 4 && !memcmp(s1, "none", 4));
    }
    for (int k = 0; k < 3; k++) sm_tensor_free(out[k]);
    /* a required feature missing fails the run, as in TensorFlow */
    sm_tensor *miss = NULL;
    int64_t one = 1;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &one, &miss));
    sm_example *e;
    uint8_t *bytes;
    size_t n;
    CHECK_OK(sm_example_new(&e));
    CHECK_OK(sm_example_add_int64s(e, "i", (int64_t[]){1}, 1));
    CHECK_OK(sm_example_serialize(e, &bytes, &n));
    CHECK_OK(sm_tensor_set_string(miss, 0, bytes, n));
    free(bytes);
    sm_example_free(e);
    sm_tensor *o = NULL;
    sm_status *st = sm_model_run(m, "parse", &alias, &miss, 1, outs, 1, &o);
    CHECK(st != NULL);
    sm_status_free(st);
    sm_tensor_free(o);
    sm_tensor_free(miss);
    sm_tensor_free(in);
    sm_model_free(m);
  }
  free(dir);
}

/* examples/labels (built beside this test): this project's runtime classifies with it. */
static void test_labels_example(const char *tmp) {
  const char *prog = SM_BINARY_DIR "/examples/labels";
  if (!sm__path_exists(prog)) {
    printf("skipped: %s absent (build the examples)\n", prog);
    return;
  }
  char *dir = join(tmp, "labels_example"), cmd[4400];
  snprintf(cmd, sizeof cmd, "'%s' '%s'", prog, dir);
  CHECK(system(cmd) == 0);
  /* the init op is recorded as TF 2.x records it, and the main op collection stays */
  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(dir, &sm));
  if (sm) {
    const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
    int found = 0;
    for (size_t i = 0; i < mg->n_signature_def; i++) {
      const Tensorflow__SignatureDef *sd = mg->signature_def[i]->value;
      if (strcmp(mg->signature_def[i]->key, SM_INIT_OP_SIGNATURE_KEY)) continue;
      found = 1;
      CHECK(sd->n_outputs == 1 && !strcmp(sd->outputs[0]->key, SM_INIT_OP_SIGNATURE_KEY));
      CHECK_EQ_STR(sd->outputs[0]->value->name, "init_all_tables");
      CHECK(sd->outputs[0]->value->dtype == 0 && sd->outputs[0]->value->tensor_shape->unknown_rank);
      CHECK(!sd->method_name || !*sd->method_name);
    }
    CHECK(found);
    sm_saved_model_free(sm);
  }
  Tensorflow__FingerprintDef *fp = read_fingerprint(dir), *again = NULL;
  CHECK(fp && fp->version && fp->version->producer == SM_FINGERPRINT_PRODUCER && fp->uuid && *fp->uuid);
  CHECK_OK(sm_saved_model_fingerprint(dir, &again));
  CHECK(fp && again && same_hashes(fp, again) && strcmp(fp->uuid, again->uuid));
  CHECK(fp && fp->checkpoint_hash && fp->signature_def_hash && fp->graph_def_program_hash && !fp->saved_object_graph_hash);
  if (fp) protobuf_c_message_free_unpacked(&fp->base, NULL);
  if (again) protobuf_c_message_free_unpacked(&again->base, NULL);

  sm_model *m = NULL;
  const char *serve[] = {SM_TAG_SERVE};
  CHECK_OK(sm_model_load(dir, serve, 1, NULL, &m));
  if (m) {
    CHECK_EQ_STR(sm_model_signature_method(m, "serving_default"), SM_CLASSIFY_METHOD_NAME);
    sm_tensor *in = NULL, *out[2] = {NULL, NULL};
    int64_t three = 3;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &three, &in));
    float xs[3][2] = {{5, 0}, {0, 5}, {0, 0}};
    for (int k = 0; k < 3; k++) {
      sm_example *e;
      uint8_t *bytes = NULL;
      size_t n = 0;
      CHECK_OK(sm_example_new(&e));
      CHECK_OK(sm_example_add_floats(e, "x", xs[k], 2));
      CHECK_OK(sm_example_serialize(e, &bytes, &n));
      CHECK_OK(sm_tensor_set_string(in, k, bytes, n));
      free(bytes);
      sm_example_free(e);
    }
    const char *alias = "inputs", *outs[2] = {"classes", "scores"};
    const char *labels[3] = {"cat", "dog", "bird"};
    CHECK_OK(sm_model_run(m, "serving_default", &alias, &in, 1, outs, 2, out));
    if (out[0] && out[1]) {
      CHECK(sm_tensor_rank(out[0]) == 2 && sm_tensor_dims(out[0])[0] == 3 && sm_tensor_dims(out[0])[1] == 3);
      for (int r = 0; r < 3; r++) {
        const float *sc = (const float *)sm_tensor_data(out[1]) + 3 * r;
        int best = 0;
        for (int c = 0; c < 3; c++) {
          size_t l;
          const char *str = sm_tensor_string(out[0], 3 * r + c, &l);
          CHECK(l == strlen(labels[c]) && !memcmp(str, labels[c], l));
          if (sc[c] > sc[best]) best = c;
        }
        CHECK_EQ_INT(best, r); /* cat, dog, bird */
      }
    }
    sm_tensor_free(out[0]);
    sm_tensor_free(out[1]);
    /* predict: the best label per example */
    const char *palias = "examples", *pout = "classes";
    sm_tensor *top = NULL;
    CHECK_OK(sm_model_run(m, "predict", &palias, &in, 1, &pout, 1, &top));
    for (int r = 0; top && r < 3; r++) {
      size_t l;
      const char *str = sm_tensor_string(top, r, &l);
      CHECK(l == strlen(labels[r]) && !memcmp(str, labels[r], l));
    }
    sm_tensor_free(top);
    sm_tensor_free(in);
    sm_model_free(m);
  }
  free(dir);
}


/* Each bad use gets a clear error and leaves nothing on disk: no export dir, no temp dir. */
static void test_bad_use(const char *tmp) {
  char *parent = join(tmp, "bad"), *dir = join(parent, "model");
  CHECK(mkdir(parent, 0755) == 0);
  sm_graph *g;
  sm_signature *sig, *bad;
  sm_builder *b;
  const char *serve[] = {SM_TAG_SERVE}, *serve_gpu[] = {SM_TAG_SERVE, SM_TAG_GPU}, *gpu_serve[] = {SM_TAG_GPU, SM_TAG_SERVE};
  CHECK_OK(scaled_graph(&g, &sig));
  CHECK_OK(sm_builder_new(dir, &b));
  /* an invalid signature for its method: classify over a float input */
  CHECK_OK(sm_signature_new("c", SM_CLASSIFY_METHOD_NAME, &bad));
  CHECK_OK(sm_signature_add_input_from(bad, "inputs", g, "x:0"));
  CHECK_OK(sm_signature_add_output_from(bad, "scores", g, "y:0"));
  CHECK_ERR(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &bad, 1), "exactly one input \"inputs\"");
  sm_signature_free(bad);
  /* a signature naming a tensor that is not in the graph */
  CHECK_OK(sm_signature_new("p", SM_PREDICT_METHOD_NAME, &bad));
  CHECK_OK(sm_signature_add_input(bad, "x", "x:0", SM_FLOAT, -1, NULL));
  CHECK_OK(sm_signature_add_output(bad, "y", "ghost:0", SM_FLOAT, -1, NULL));
  CHECK_ERR(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &bad, 1), "\"ghost:0\": no such node");
  sm_signature_free(bad);
  /* a reserved key */
  CHECK_OK(sm_signature_new(SM_INIT_OP_SIGNATURE_KEY, SM_PREDICT_METHOD_NAME, &bad));
  CHECK_OK(sm_signature_add_input_from(bad, "x", g, "x:0"));
  CHECK_OK(sm_signature_add_output_from(bad, "y", g, "y:0"));
  CHECK_ERR(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &bad, 1), "reserved for the init op");
  sm_signature_free(bad);
  /* an unknown op or attr never enters the graph */
  CHECK_ERR(sm_op_finish(sm_op_begin(g, "NoSuchOp", NULL), NULL), "not in this library's OpDef table");
  sm_op *op = sm_op_begin(g, "Identity", NULL);
  sm_op_input(op, "x");
  sm_op_attr_int(op, "no_such_attr", 1);
  CHECK_ERR(sm_op_finish(op, NULL), "unknown attr \"no_such_attr\"");
  /* a duplicate tag set (order ignored) */
  CHECK_OK(sm_builder_add_meta_graph_and_variables(b, g, serve_gpu, 2, &sig, 1));
  CHECK_ERR(sm_builder_add_meta_graph(b, g, gpu_serve, 2, &sig, 1), "already added");
  CHECK_ERR(sm_builder_add_meta_graph(b, g, NULL, 0, &sig, 1), "at least one tag");
  /* an export dir that appears before the save */
  CHECK(mkdir(dir, 0755) == 0);
  CHECK_ERR(sm_builder_save(b, 0), "already exists");
  CHECK_EQ_INT(count_entries(dir), 0);
  CHECK(rmdir(dir) == 0);
  sm_builder_free(b);
  CHECK_EQ_INT(count_entries(parent), 0);
  /* an existing export dir is refused at once */
  CHECK(mkdir(dir, 0755) == 0);
  CHECK_ERR(sm_builder_new(dir, &b), "already exists");
  CHECK(rmdir(dir) == 0);
  CHECK_EQ_INT(count_entries(parent), 0);
  /* an asset whose source file goes away before the save: the message names the export, the
   * asset and the file, each prefix followed by one ": " */
  char *gone = join(parent, "gone.txt"), want[9000];
  sm_graph *g2;
  sm_signature *sig2;
  CHECK_OK(scaled_graph(&g2, &sig2));
  CHECK_OK(sm__file_write_atomic(gone, "a\n", 2));
  CHECK_OK(sm_graph_asset(g2, "vocab", "vocab.txt", gone, NULL));
  CHECK_OK(sm_builder_new(dir, &b));
  CHECK_OK(sm_builder_add_meta_graph_and_variables(b, g2, serve, 1, &sig2, 1));
  CHECK(unlink(gone) == 0);
  snprintf(want, sizeof want, "saving %s: asset vocab.txt: %s: ", dir, gone);
  CHECK_ERR(sm_builder_save(b, 0), want);
  sm_builder_free(b);
  CHECK_EQ_INT(count_entries(parent), 0);
  sm_signature_free(sig2);
  sm_graph_free(g2);
  free(gone);
  sm_signature_free(sig);
  sm_graph_free(g);
  free(dir);
  free(parent);
}

/* Temp dirs of dead builders for the same target go at the next save; others stay. */
static void test_stale_temps(const char *tmp) {
  char *parent = join(tmp, "stale"), *dir = join(parent, "m");
  CHECK(mkdir(parent, 0755) == 0);
  char dead[4200], alive[4200], other[4200];
  snprintf(dead, sizeof dead, "%s/.tmp-m-999999999", parent); /* above any pid_max */
  snprintf(alive, sizeof alive, "%s/.tmp-m-%ld", parent, (long)getppid());
  snprintf(other, sizeof other, "%s/.tmp-mm-999999999", parent);
  CHECK(mkdir(dead, 0755) == 0 && mkdir(alive, 0755) == 0 && mkdir(other, 0755) == 0);
  char *junk = join(dead, "saved_model.pb");
  CHECK_OK(sm__file_write_atomic(junk, "x", 1));
  free(junk);
  CHECK_OK(write_scaled(dir, 0));
  CHECK(!sm__path_exists(dead));
  CHECK(sm__path_exists(alive) && sm__path_exists(other) && sm__path_exists(dir));
  CHECK_EQ_INT(count_entries(parent), 3);
  free(dir);
  free(parent);
}

static void test_builder(const char *tmp) {
  char *dir = join(tmp, "scaled");
  CHECK_OK(write_scaled(dir, 0));
  sm_builder *b;
  CHECK_ERR(sm_builder_new(dir, &b), "already exists");
  CHECK_ERR(sm_builder_new(tmp, &b), "already exists");
  CHECK_EQ_INT(count_entries(tmp), 1); /* no temp dir left behind */

  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(dir, &sm));
  if (sm) {
    CHECK_EQ_INT(sm->n_meta_graphs, 1);
    const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
    CHECK_EQ_STR(mg->meta_info_def->tags[0], "serve");
    CHECK(mg->saver_def && !strcmp(mg->saver_def->filename_tensor_name, "save/Const:0") &&
          !strcmp(mg->saver_def->save_tensor_name, "save/Identity:0") &&
          !strcmp(mg->saver_def->restore_op_name, "save/restore_all") && mg->saver_def->sharded);
    CHECK_EQ_INT(mg->n_signature_def, 1);
    CHECK_EQ_STR(mg->signature_def[0]->key, "serving_default");
    CHECK_EQ_STR(mg->signature_def[0]->value->outputs[0]->value->name, "y:0");
    CHECK_EQ_INT(mg->n_collection_def, 2);
    /* the graph read back is the graph built */
    sm_graph *g;
    sm_signature *sig;
    CHECK_OK(scaled_graph(&g, &sig));
    const Tensorflow__GraphDef *gd = sm_graph_def(g);
    CHECK(mg->graph_def->n_node > gd->n_node); /* plus the save/ subgraph */
    for (size_t i = 0; i < gd->n_node && i < mg->graph_def->n_node; i++) {
      size_t l1 = protobuf_c_message_get_packed_size(&gd->node[i]->base);
      size_t l2 = protobuf_c_message_get_packed_size(&mg->graph_def->node[i]->base);
      CHECK_EQ_INT(l1, l2);
      CHECK_EQ_STR(gd->node[i]->name, mg->graph_def->node[i]->name);
    }
    for (size_t i = 0; i < mg->graph_def->n_node; i++) {
      const Tensorflow__NodeDef *nd = mg->graph_def->node[i];
      if (strcmp(nd->name, "w/Initializer/initial_value")) continue;
      const Tensorflow__AttrValue *v = attr(nd, "value");
      CHECK(v && v->tensor->n_float_val == 1 && v->tensor->tensor_content.len == 0);
    }
    int has_restore = 0;
    for (size_t i = 0; i < mg->graph_def->n_node; i++)
      has_restore |= !strcmp(mg->graph_def->node[i]->name, "save/restore_all");
    CHECK(has_restore);
    sm_signature_free(sig);
    sm_graph_free(g);
    sm_saved_model_free(sm);
  }
  char *vars = join(dir, "variables/variables");
  sm_bundle *bu = NULL;
  CHECK_OK(sm_bundle_open(vars, &bu));
  if (bu) {
    CHECK_EQ_INT(sm_bundle_num_entries(bu), 3);
    sm_tensor *w = NULL;
    CHECK_OK(sm_bundle_read(bu, "w", &w));
    CHECK(w && sm_tensor_num_elements(w) == 300 && ((float *)sm_tensor_data(w))[299] == 149.5f);
    sm_tensor_free(w);
    sm_tensor *t = NULL;
    CHECK_OK(sm_bundle_read(bu, "a", &t));
    sm_tensor *want = scalar_f(3);
    CHECK(t && sm_tensor_equal(t, want));
    sm_tensor_free(want);
    sm_tensor_free(t);
    t = NULL;
    CHECK_OK(sm_bundle_read(bu, "b", &t));
    CHECK(t && sm_tensor_dtype(t) == SM_INT64 && ((int64_t *)sm_tensor_data(t))[1] == 42);
    sm_tensor_free(t);
    sm_bundle_close(bu);
  }
  free(vars);

  /* fingerprint.pb: what TensorFlow computes over these files (tests/interop compares with TF) */
  Tensorflow__FingerprintDef *fp = read_fingerprint(dir), *fp2 = NULL;
  CHECK_OK(sm_saved_model_fingerprint(dir, &fp2));
  CHECK(fp && fp2 && same_hashes(fp, fp2) && fp->version->producer == SM_FINGERPRINT_PRODUCER);
  if (fp) protobuf_c_message_free_unpacked(&fp->base, NULL);
  if (fp2) protobuf_c_message_free_unpacked(&fp2->base, NULL);
  free(dir);

  /* text form reads back too */
  dir = join(tmp, "scaled_txt");
  CHECK_OK(write_scaled(dir, 1));
  char *pbtxt = join(dir, "saved_model.pbtxt"), *fpb = join(dir, SM_FINGERPRINT_FILENAME);
  CHECK(sm__path_exists(pbtxt));
  CHECK(!sm__path_exists(fpb)); /* TF fingerprints saved_model.pb only */
  free(pbtxt);
  free(fpb);
  CHECK_OK(sm_saved_model_read(dir, &sm));
  sm_saved_model_free(sm);
  free(dir);

  /* multi-tag: each MetaGraph by its own tags */
  dir = join(tmp, "multi");
  CHECK_OK(write_multi(dir));
  CHECK_OK(sm_saved_model_read(dir, &sm));
  if (sm) {
    const Tensorflow__MetaGraphDef *mg;
    CHECK_EQ_INT(sm->n_meta_graphs, 3);
    CHECK_OK(sm_saved_model_find_meta_graph(sm, (const char *[]){"gpu", "serve"}, 2, &mg));
    CHECK_OK(sm_saved_model_find_meta_graph(sm, (const char *[]){"train"}, 1, &mg));
    sm_saved_model_free(sm);
  }
  free(dir);

  /* assets: copied into assets/, recorded in the collections TF's loaders read */
  char *src = join(tmp, "labels_src.txt");
  CHECK_OK(write_labels_src(src));
  dir = join(tmp, "labels");
  CHECK_OK(write_labels(dir, src));
  char *asset = join(dir, "assets/labels.txt"), *text = NULL;
  size_t tlen = 0;
  CHECK_OK(sm__file_read_all(asset, &text, &tlen));
  CHECK(text && tlen == 13 && !memcmp(text, "cat\ndog\nbird\n", 13));
  free(text);
  free(asset);
  CHECK_OK(sm_saved_model_read(dir, &sm));
  if (sm) {
    const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
    int have = 0;
    for (size_t i = 0; i < mg->n_collection_def; i++) {
      const char *k = mg->collection_def[i]->key;
      const Tensorflow__CollectionDef *cd = mg->collection_def[i]->value;
      if (!strcmp(k, SM_MAIN_OP_KEY)) {
        have |= 1;
        CHECK_EQ_STR(cd->node_list->value[0], "init_all_tables");
      }
      if (!strcmp(k, SM_ASSET_FILEPATHS_KEY)) {
        have |= 2;
        CHECK_EQ_STR(cd->node_list->value[0], "asset_path:0");
      }
      if (!strcmp(k, SM_ASSETS_KEY)) {
        have |= 4;
        CHECK_EQ_STR(cd->any_list->value[0]->type_url, SM_ASSET_FILE_DEF_TYPE_URL);
      }
    }
    CHECK_EQ_INT(have, 7);
    sm_saved_model_free(sm);
  }
  free(dir);
  {
    sm_graph *ga;
    CHECK_OK(sm_graph_new(&ga));
    CHECK_ERR(sm_graph_asset(ga, NULL, "../x", src, NULL), "plain file name");
    CHECK_ERR(sm_graph_asset(ga, NULL, "x.txt", "/nonexistent/file", NULL), "does not exist");
    CHECK_OK(sm_graph_asset(ga, NULL, "x.txt", src, NULL));
    CHECK_ERR(sm_graph_asset(ga, NULL, "x.txt", tmp, NULL), "already taken");
    CHECK_ERR(sm_graph_set_main_op(ga, "nope"), "no such node");
    sm_graph_free(ga);
  }
  free(src);

  /* refusals write nothing */
  dir = join(tmp, "refused");
  sm_graph *g;
  sm_signature *sig, *bad;
  CHECK_OK(scaled_graph(&g, &sig));
  CHECK_OK(sm_builder_new(dir, &b));
  const char *serve[] = {"serve"}, *serve2[] = {"serve", "serve"};
  CHECK_ERR(sm_builder_add_meta_graph(b, g, serve, 1, &sig, 1), "before add_meta_graph");
  CHECK_ERR(sm_builder_save(b, 0), "nothing to save");
  CHECK_OK(sm_signature_new("bad", SM_REGRESS_METHOD_NAME, &bad));
  CHECK_OK(sm_signature_add_input(bad, "inputs", "x:0", SM_FLOAT, -1, NULL));
  CHECK_ERR(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &bad, 1), "regress signature \"bad\"");
  sm_signature_free(bad);
  CHECK_OK(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &sig, 1));
  CHECK_ERR(sm_builder_add_meta_graph_and_variables(b, g, serve, 1, &sig, 1), "only once");
  CHECK_ERR(sm_builder_add_meta_graph(b, g, serve2, 2, &sig, 1), "already added");
  sm_graph *other;
  CHECK_OK(sm_graph_new(&other));
  sm_tensor *z = scalar_f(0);
  CHECK_OK(sm_graph_variable(other, "zeta", z, NULL));
  sm_tensor_free(z);
  CHECK_ERR(sm_builder_add_meta_graph(b, other, (const char *[]){"eval"}, 1, NULL, 0), "not among the saved");
  sm_graph_free(other);
  CHECK(!sm__path_exists(dir));
  sm_builder_free(b); /* never saved: nothing on disk */
  CHECK(!sm__path_exists(dir));
  sm_signature_free(sig);
  sm_graph_free(g);
  free(dir);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write")) {
    char *d1 = join(argv[2], "scaled"), *d2 = join(argv[2], "scaled_txt"), *d3 = join(argv[2], "multi");
    sm_status *s = write_scaled(d1, 0);
    if (!s) s = write_scaled(d2, 1);
    if (!s) s = write_multi(d3);
    char *src = join(argv[2], "labels_src.txt"), *d4 = join(argv[2], "labels");
    if (!s) s = write_labels_src(src);
    if (!s) s = write_labels(d4, src);
    free(src);
    free(d4);
    free(d1);
    free(d2);
    free(d3);
    if (s) {
      fprintf(stderr, "test_builder --write: %s\n", sm_status_message(s));
      sm_status_free(s);
      return 1;
    }
    return 0;
  }
  if (argc == 3 && !strcmp(argv[1], "--fingerprint")) {
    Tensorflow__FingerprintDef *fp;
    sm_status *s = sm_saved_model_fingerprint(argv[2], &fp);
    if (s) {
      fprintf(stderr, "test_builder --fingerprint: %s\n", sm_status_message(s));
      sm_status_free(s);
      return 1;
    }
    printf("saved_model_checksum %llu\ngraph_def_program_hash %llu\nsignature_def_hash %llu\n"
           "saved_object_graph_hash %llu\ncheckpoint_hash %llu\nproducer %d\n",
           (unsigned long long)fp->saved_model_checksum, (unsigned long long)fp->graph_def_program_hash,
           (unsigned long long)fp->signature_def_hash, (unsigned long long)fp->saved_object_graph_hash,
           (unsigned long long)fp->checkpoint_hash, fp->version ? (int)fp->version->producer : 0);
    protobuf_c_message_free_unpacked(&fp->base, NULL);
    return 0;
  }
  test_names();
  test_ops_and_attrs();
  test_signatures();
  test_farmhash();
  test_deterministic();
  test_zoo_fingerprints();
  char tmpl[] = SM_BINARY_DIR "/test_builder.XXXXXX";
  char *tmp = mkdtemp(tmpl);
  CHECK(tmp != NULL);
  if (tmp) {
    test_builder(tmp);
    test_parse_example(tmp);
    test_labels_example(tmp);
    test_bad_use(tmp);
    test_stale_temps(tmp);
    char cmd[sizeof tmpl + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!sm_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  }
  TEST_MAIN_END();
}
