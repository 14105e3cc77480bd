/* train_sig_check.h - what the train-signature fixture tests (test_train_sig, test_train_sig_more)
 * share: the worst relative difference of two float tensors, against max(1e-3, |TF|). */
#ifndef SM_TEST_TRAIN_SIG_CHECK_H
#define SM_TEST_TRAIN_SIG_CHECK_H
#include <math.h>

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

#endif
