/* dataset.h - what the dataset family's other files (dataset_io.c) need of dataset.c. */
#ifndef SM_OPS_DATASET_H
#define SM_OPS_DATASET_H
#include "runtime/kernel.h"

/* Output 0 of c = a dataset of the rows of t (as TensorSliceDataset over it); takes over the
 * caller's reference to t. */
sm_status *sm__dataset_output_slices(sm_kctx *c, sm_tensor *t);

#endif
