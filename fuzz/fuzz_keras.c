/* fuzz_keras.c - libFuzzer target: text through the trainer's Keras model.to_json() reader
 * (src/base/json.c + src/train/keras.c). A model that builds is summarized, compiled when it is
 * small (every layer's shapes consistent: compile allocates its weights) and run forward on one
 * zero sample, so that every accepted config is one the trainer can use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/train.h"
#include "train/train_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sm_seq *m = NULL;
  sm_status *s = sm__seq_from_keras_text((const char *)data, size, "fuzz.json", &m);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  free(sm_seq_summary(m));
  int64_t params = 0, acts = sm__elems(m->in_rank, m->in_shape);
  for (int i = 0; i < m->nlayers; i++) {
    const sm__layer *L = &m->layers[i];
    acts += sm__elems(L->out_rank, L->out_shape);
    params += L->kind == SM_LAYER_CONV2D ? (int64_t)L->kh * L->kw * L->in_shape[2] * L->units
              : L->kind == SM_LAYER_DENSE ? L->in_shape[0] * L->units : 0;
  }
  sm_optimizer o = sm_adam_defaults();
  sm_loss l = {SM_LOSS_MSE, 0};
  if (params < (1 << 20) && acts < (1 << 20) && !(s = sm_seq_compile(m, &o, &l, 1))) {
    int64_t dims[4] = {1};
    memcpy(dims + 1, m->in_shape, (size_t)m->in_rank * sizeof *dims);
    sm_tensor *x = NULL, *y = NULL;
    if (!(s = sm_tensor_new(SM_FLOAT, m->in_rank + 1, dims, &x))) s = sm_seq_predict(m, x, 1, &y);
    sm_tensor_free(x);
    sm_tensor_free(y);
  }
  sm_status_free(s);
  sm_seq_free(m);
  return 0;
}
