/* train_sig_check.h - what the train-signature fixture tests (test_train_sig, test_train_sig_more)
 * share: the worst relative difference of two float tensors, against max(1e-3, |TF|), and the three
 * `train` calls whose losses are checked against loss0..loss2 of the expected npz. Include after
 * test.h (CHECK). */
#ifndef SM_TEST_TRAIN_SIG_CHECK_H
#define SM_TEST_TRAIN_SIG_CHECK_H
#include <math.h>

#include <stdio.h>

#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "savedmodel/tensor.h"

static inline double worst_rel(const sm_tensor *want, const sm_tensor *got) {
  if (!want || !got || sm_tensor_dtype(got) != SM_FLOAT || sm_tensor_num_elements(want) != sm_tensor_num_elements(got))
    return INFINITY;
  const float *w = sm_tensor_data(want), *g = sm_tensor_data(got);
  double worst = 0;
  for (int64_t i = 0; i < sm_tensor_num_elements(want); i++) {
    double d = fabs((double)g[i] - w[i]) / fmax(1e-3, fabs((double)w[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* `train` run three times on the inputs; each loss within 1e-5 relative of TF's */
static inline void train_sig_losses(sm_model *m, const sm_npz *z, const char *const *in_alias, sm_tensor *const *in,
                                    int nin) {
  static const char *loss_alias[] = {"loss"};
  for (int k = 0; k < 3; k++) {
    sm_tensor *loss = NULL, *want = NULL;
    char nm[16];
    snprintf(nm, sizeof nm, "loss%d", k);
    CHECK_OK(sm_npz_get(z, nm, &want));
    CHECK_OK(sm_model_run(m, "train", in_alias, in, nin, loss_alias, 1, &loss));
    double d = worst_rel(want, loss);
    printf("train call %d: loss %.7g (TF %.7g), rel diff %.2g\n", k + 1, loss ? *(float *)sm_tensor_data(loss) : NAN,
           want ? *(float *)sm_tensor_data(want) : NAN, d);
    CHECK(d <= 1e-5);
    sm_tensor_free(loss);
    sm_tensor_free(want);
  }
}

#endif
