/* square.c - writes seed 003's SavedModel: y = x * x for a float32 x of any shape.
 *
 *   square EXPORT_DIR
 *
 * TensorFlow then loads it with tf.compat.v1.saved_model.loader.load(sess, ["serve"], EXPORT_DIR)
 * or tf.saved_model.load(EXPORT_DIR).signatures["serving_default"](x=...). */
#include <stdio.h>

#include "savedmodel/builder.h"
#include "savedmodel/constants.h"

static int fail(sm_status *s) {
  fprintf(stderr, "square: %s\n", sm_status_message(s));
  sm_status_free(s);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: square EXPORT_DIR\n");
    return 2;
  }
  sm_graph *g = NULL;
  sm_signature *sig = NULL;
  sm_builder *b = NULL;
  const char *x, *y;
  sm_status *s = sm_graph_new(&g);
  if (!s) s = sm_graph_placeholder(g, "x", SM_FLOAT, -1, NULL, &x); /* unknown rank */
  if (!s) s = sm_graph_unary(g, "Square", "y", x, &y);
  if (!s) s = sm_signature_predict(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, g, "x", x, "y", y, &sig);
  if (!s) s = sm_builder_new(argv[1], &b);
  const char *tags[] = {SM_TAG_SERVE};
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, tags, 1, &sig, 1);
  if (!s) s = sm_builder_save(b, 0);
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_graph_free(g);
  return s ? fail(s) : 0;
}
