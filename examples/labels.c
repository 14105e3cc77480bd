/* labels.c - writes a small linear classifier over tf.Examples whose classes are label strings
 * from a vocabulary kept with the model (assets/labels.txt), looked up by the graph itself.
 *
 *   labels EXPORT_DIR
 *
 * Input: serialized tf.train.Examples with a float feature "x" of 2 values. The classifier
 * scores cat (x[0]), dog (x[1]) and bird (a constant 1):
 *   serving_default, classification  classify: inputs -> classes [batch, 3] label strings,
 *                                              scores [batch, 3] probabilities
 *   predict                          predict: examples -> classes [batch] (the best label),
 *                                              class_ids [batch], probabilities [batch, 3]
 * TensorFlow: tf.saved_model.load(EXPORT_DIR).signatures["serving_default"](inputs=examples),
 * or saved_model_cli run --dir EXPORT_DIR --tag_set serve --signature_def serving_default
 * --input_examples 'inputs=[{"x":[5.0,0.0]}]'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "savedmodel/builder.h"
#include "savedmodel/constants.h"

static const char *const kLabels = "cat\ndog\nbird\n";

static sm_tensor *floats(int rank, const int64_t *dims, const float *v) {
  sm_tensor *t = NULL;
  sm_status *s = sm_tensor_new(SM_FLOAT, rank, dims, &t);
  if (s) {
    sm_status_free(s);
    return NULL;
  }
  memcpy(sm_tensor_data(t), v, (size_t)sm_tensor_num_elements(t) * sizeof *v);
  return t;
}

/* The graph and its signatures; vocab is the label file to copy into assets/. */
static sm_status *build(sm_graph *g, const char *vocab, sm_signature **sigs) {
  const char *examples, *x, *w, *b, *mm, *logits, *probs, *dim, *ids, *table, *top, *all, *shape, *grid, *classes;
  static const float wv[6] = {1, 0, 0, 0, 1, 0}, bv[3] = {0, 0, 1};
  static const int64_t wd[2] = {2, 3}, bd[1] = {3}, xd[1] = {2}, batch[1] = {-1}, three = 3;
  sm_tensor *wt = floats(2, wd, wv), *bt = floats(1, bd, bv), *dt = NULL, *it = NULL;
  sm_status *s = wt && bt ? NULL : sm_status_new(SM_NO_MEMORY, "out of memory");
  if (!s) s = sm_tensor_new(SM_INT32, 0, NULL, &dt);
  if (!s) s = sm_tensor_new(SM_INT64, 1, &three, &it);
  if (!s) {
    *(int32_t *)sm_tensor_data(dt) = 1;
    for (int i = 0; i < 3; i++) ((int64_t *)sm_tensor_data(it))[i] = i;
  }
  sm_dense_feature fx = {"x", SM_FLOAT, 1, xd, NULL};
  if (!s) s = sm_graph_placeholder(g, "input_example_tensor", SM_STRING, 1, batch, &examples);
  if (!s) s = sm_graph_parse_example(g, NULL, examples, &fx, 1, &x);
  if (!s) s = sm_graph_variable(g, "weights", wt, &w);
  if (!s) s = sm_graph_variable(g, "bias", bt, &b);
  if (!s) s = sm_graph_binary(g, "MatMul", NULL, x, w, &mm);
  if (!s) s = sm_graph_binary(g, "AddV2", "logits", mm, b, &logits);
  if (!s) s = sm_graph_unary(g, "Softmax", "probabilities", logits, &probs);
  if (!s) s = sm_graph_const(g, "class_ids/dimension", dt, &dim);
  if (!s) s = sm_graph_binary(g, "ArgMax", "class_ids", probs, dim, &ids);
  /* the vocabulary: a HashTableV2 filled from assets/labels.txt by the init op at load */
  if (!s) s = sm_graph_label_vocabulary(g, "labels.txt", vocab, &table);
  if (!s) s = sm_graph_lookup(g, table, ids, "UNKNOWN", &top);
  /* every label for every example, in score order: ids [0 1 2] broadcast to [batch, 3] */
  if (!s) s = sm_graph_const(g, "all_class_ids", it, &all);
  if (!s) s = sm_graph_unary(g, "Shape", NULL, probs, &shape);
  if (!s) s = sm_graph_binary(g, "BroadcastTo", NULL, all, shape, &grid);
  if (!s) s = sm_graph_lookup(g, table, grid, "UNKNOWN", &classes);
  if (!s) s = sm_signature_classify(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, g, examples, classes, probs, &sigs[0]);
  if (!s) s = sm_signature_classify("classification", g, examples, classes, probs, &sigs[1]);
  if (!s) s = sm_signature_new("predict", SM_PREDICT_METHOD_NAME, &sigs[2]);
  if (!s) s = sm_signature_add_input_from(sigs[2], "examples", g, examples);
  if (!s) s = sm_signature_add_output_from(sigs[2], "classes", g, top);
  if (!s) s = sm_signature_add_output_from(sigs[2], "class_ids", g, ids);
  if (!s) s = sm_signature_add_output_from(sigs[2], "probabilities", g, probs);
  sm_tensor_free(wt);
  sm_tensor_free(bt);
  sm_tensor_free(dt);
  sm_tensor_free(it);
  return s;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: labels EXPORT_DIR\n");
    return 2;
  }
  /* the vocabulary's source file; the builder copies it into EXPORT_DIR/assets/ */
  char vocab[] = "/tmp/labels-vocab-XXXXXX";
  int fd = mkstemp(vocab);
  if (fd < 0 || write(fd, kLabels, strlen(kLabels)) != (ssize_t)strlen(kLabels)) {
    perror("labels: writing the vocabulary");
    if (fd >= 0) unlink(vocab);
    return 1;
  }
  close(fd);
  sm_graph *g = NULL;
  sm_signature *sigs[3] = {NULL, NULL, NULL};
  sm_builder *b = NULL;
  const char *tags[] = {SM_TAG_SERVE};
  sm_status *s = sm_graph_new(&g);
  if (!s) s = build(g, vocab, sigs);
  if (!s) s = sm_builder_new(argv[1], &b);
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, tags, 1, sigs, 3);
  if (!s) s = sm_builder_save(b, 0);
  unlink(vocab);
  sm_builder_free(b);
  for (int i = 0; i < 3; i++) sm_signature_free(sigs[i]);
  sm_graph_free(g);
  if (s) {
    fprintf(stderr, "labels: %s\n", sm_status_message(s));
    sm_status_free(s);
    return 1;
  }
  return 0;
}
