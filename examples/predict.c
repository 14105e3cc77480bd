/* predict.c - load an export of `savedmodel train` and name what the first test images show.
 *
 *   predict EXPORT_DIR [DATA_DIR] [N]
 *
 * Reads the first N (default 5) test images of an MNIST-format directory (default Fashion-MNIST),
 * wraps each in a tf.Example as TensorFlow Serving's classify API does, runs the export's
 * `classify` signature and prints the top label next to the true one. The label strings come
 * from the export itself (its label-vocabulary asset); a model without a classify signature is
 * run through `serving_default` instead and its top output named with Fashion-MNIST's classes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/constants.h"
#include "savedmodel/example.h"
#include "savedmodel/idx.h"
#include "savedmodel/model.h"

static int argmax(const float *v, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

/* One image as a serialized tf.Example with feature "inputs" = its pixels. */
static sm_status *example_of(const float *pixels, size_t n, sm_tensor *batch, int64_t i) {
  sm_example *e = NULL;
  uint8_t *bytes = NULL;
  size_t len = 0;
  sm_status *s = sm_example_new(&e);
  if (!s) s = sm_example_add_floats(e, SM_CLASSIFY_INPUTS, pixels, n);
  if (!s) s = sm_example_serialize(e, &bytes, &len);
  if (!s) s = sm_tensor_set_string(batch, i, bytes, len);
  free(bytes);
  sm_example_free(e);
  return s;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: predict EXPORT_DIR [DATA_DIR] [N]\n");
    return 2;
  }
  const char *data = argc > 2 ? argv[2] : SM_FASHION_MNIST_DIR;
  int64_t n = argc > 3 ? atoll(argv[3]) : 5;
  sm_model *m = NULL;
  sm_tensor *images = NULL, *labels = NULL, *in = NULL, *out[2] = {NULL, NULL};
  const char *tags[] = {SM_TAG_SERVE};
  sm_status *s = sm_model_load(argv[1], tags, 1, NULL, &m);
  if (!s) s = sm_mnist_load(data, "t10k", 0, &images, &labels);
  if (!s) {
    if (n < 1 || n > sm_tensor_dims(images)[0]) n = sm_tensor_dims(images)[0];
    int64_t per = sm_tensor_num_elements(images) / sm_tensor_dims(images)[0];
    const float *px = sm_tensor_data(images);
    const int32_t *truth = sm_tensor_data(labels);
    if (sm_model_signature_method(m, "classify")) {
      /* classify: serialized tf.Examples in, [n, classes] label strings and scores out. */
      const char *in_key[] = {SM_CLASSIFY_INPUTS};
      const char *out_keys[] = {SM_CLASSIFY_OUTPUT_CLASSES, SM_CLASSIFY_OUTPUT_SCORES};
      s = sm_tensor_new(SM_STRING, 1, &n, &in);
      for (int64_t i = 0; i < n && !s; i++) s = example_of(px + i * per, (size_t)per, in, i);
      if (!s) s = sm_model_run(m, "classify", in_key, &in, 1, out_keys, 2, out);
      for (int64_t i = 0; i < n && !s; i++) {
        int k = (int)sm_tensor_dims(out[1])[1];
        int best = argmax((const float *)sm_tensor_data(out[1]) + i * k, k);
        size_t len, tlen; /* row i of classes holds every label, in class-id order */
        const char *name = sm_tensor_string(out[0], i * k + best, &len);
        const char *tname = truth[i] < k ? sm_tensor_string(out[0], i * k + truth[i], &tlen) : "?";
        if (truth[i] >= k) tlen = 1;
        printf("predicted: %-12.*s true: %.*s\n", (int)len, name, (int)tlen, tname);
      }
    } else {
      /* serving_default: images in, one row of logits (or probabilities) per image out. */
      int64_t dims[4] = {n, sm_tensor_dims(images)[1], sm_tensor_dims(images)[2], 1};
      s = sm_tensor_wrap(SM_FLOAT, 4, dims, (void *)px, (size_t)(n * per) * sizeof(float), NULL, NULL, &in);
      const char *in_key[] = {"inputs"};
      if (!s) s = sm_model_run(m, SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, in_key, &in, 1, NULL, 1, out);
      for (int64_t i = 0; i < n && !s; i++) {
        int k = (int)(sm_tensor_num_elements(out[0]) / n);
        int best = argmax((const float *)sm_tensor_data(out[0]) + i * k, k);
        printf("predicted: %-12s true: %s\n", best < 10 ? sm_fashion_mnist_labels[best] : "?",
               sm_fashion_mnist_labels[truth[i]]);
      }
    }
  }
  int rc = s ? 1 : 0;
  if (s) fprintf(stderr, "predict: %s\n", sm_status_message(s));
  sm_status_free(s);
  sm_tensor_free(in);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm_tensor_free(images);
  sm_tensor_free(labels);
  sm_model_free(m);
  return rc;
}
