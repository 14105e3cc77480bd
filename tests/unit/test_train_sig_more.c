/* test_train_sig_more.c - a SavedModel whose `train` signature (tf.GradientTape in a saved
 * tf.function, SGD by assign_sub; built by tools/gen_f1_models.py into
 * tests/fixtures/train_sig_more) holds IgammaGradA, RandomGammaGrad, CropAndResizeGradImage,
 * CropAndResizeGradBoxes, ScaleAndTranslateGrad, QuantizeAndDequantizeV4Grad and ResourceStridedSliceAssign: loaded with
 * the C API, train run three times, each loss and then every variable (read by the `weights`
 * signature) compared with TensorFlow's within 1e-5 relative (of max(1e-3, |TF|)). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "test.h"
#include "train_sig_check.h"

#define FIX SM_SOURCE_DIR "/tests/fixtures/train_sig_more"

int main(void) {
  static const char *tags[] = {"serve"};
  sm_model *m = NULL;
  sm_npz *z = NULL;
  sm_tensor *x = NULL;
  CHECK_OK(sm_model_load(FIX, tags, 1, NULL, &m));
  CHECK_OK(sm_npz_open(FIX "/expected.npz", &z));
  if (!m || !z) goto out;
  const char *warn = sm_model_signature_warning(m, "train");
  if (warn) fprintf(stderr, "%s\n", warn);
  CHECK(warn == NULL);
  CHECK_OK(sm_npz_get(z, "x", &x));
  static const char *in_alias[] = {"x"};
  if (x) train_sig_losses(m, z, in_alias, &x, 1);
  const sm_tensor_info *outs = NULL;
  int nout = 0;
  CHECK_OK(sm_model_signature_outputs(m, "weights", &outs, &nout));
  CHECK_EQ_INT(nout, 6);
  sm_tensor *vals[6] = {0};
  if (nout == 6) CHECK_OK(sm_model_run(m, "weights", NULL, NULL, 0, NULL, 6, vals));
  for (int i = 0; i < nout && i < 6; i++) {
    sm_tensor *want = NULL;
    CHECK_OK(sm_npz_get(z, outs[i].alias, &want));
    double d = worst_rel(want, vals[i]);
    printf("variable %s after 3 calls: rel diff %.2g\n", outs[i].alias, d);
    CHECK(d <= 1e-5);
    sm_tensor_free(want);
    sm_tensor_free(vals[i]);
  }
out:
  sm_tensor_free(x);
  sm_npz_free(z);
  sm_model_free(m);
  TEST_MAIN_END();
}
