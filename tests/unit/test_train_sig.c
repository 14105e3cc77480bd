/* test_train_sig.c - a SavedModel whose `train` signature computes gradients (TF's on-device
 * training pattern: tf.GradientTape in a saved tf.function, SGD by assign_sub; built by
 * tools/gen_e1_models.py into tests/fixtures/train_sig): loaded with the C API, train run three
 * times on the fixed inputs, each loss and then every variable (read by the `weights` signature)
 * compared with TensorFlow's within 1e-5 relative. The MLP's layers use relu, relu6, elu, selu,
 * leaky_relu, sigmoid, tanh, softplus and softsign, so the activations' gradient kernels
 * (grad_math.c) and BiasAddGrad all run. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "test.h"
#include "train_sig_check.h"

#define FIX SM_SOURCE_DIR "/tests/fixtures/train_sig"

int main(void) {
  static const char *tags[] = {"serve"};
  sm_model *m = NULL;
  sm_npz *z = NULL;
  CHECK_OK(sm_model_load(FIX, tags, 1, NULL, &m));
  CHECK_OK(sm_npz_open(FIX "/expected.npz", &z));
  if (!m || !z) goto out;
  CHECK(sm_model_signature_warning(m, "train") == NULL);
  if (sm_model_signature_warning(m, "train")) fprintf(stderr, "%s\n", sm_model_signature_warning(m, "train"));
  sm_tensor *in[2] = {NULL, NULL};
  CHECK_OK(sm_npz_get(z, "x", &in[0]));
  CHECK_OK(sm_npz_get(z, "y", &in[1]));
  static const char *in_alias[] = {"x", "y"};
  if (in[0] && in[1]) train_sig_losses(m, z, in_alias, in, 2);
  /* every variable after the third call */
  const sm_tensor_info *outs = NULL;
  int nout = 0;
  CHECK_OK(sm_model_signature_outputs(m, "weights", &outs, &nout));
  CHECK_EQ_INT(nout, 20);
  sm_tensor *vals[20] = {0};
  if (nout == 20) CHECK_OK(sm_model_run(m, "weights", NULL, NULL, 0, NULL, 20, vals));
  double worst = 0;
  for (int i = 0; i < nout && i < 20; i++) {
    sm_tensor *want = NULL;
    CHECK_OK(sm_npz_get(z, outs[i].alias, &want));
    double d = worst_rel(want, vals[i]);
    if (!(d <= 1e-5)) fprintf(stderr, "variable %s: rel diff %.3g\n", outs[i].alias, d);
    CHECK(d <= 1e-5);
    if (!(d <= worst)) worst = d;
    sm_tensor_free(want);
    sm_tensor_free(vals[i]);
  }
  printf("variables after 3 calls: %d compared, worst rel diff %.2g\n", nout, worst);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
out:
  sm_npz_free(z);
  sm_model_free(m);
  TEST_MAIN_END();
}
