/* tensor_internal.h - tensor functions for the library's own use, not part of the public API. */
#ifndef SM_BASE_TENSOR_INTERNAL_H
#define SM_BASE_TENSOR_INTERNAL_H
#include <stdint.h>

#include "savedmodel/tensor.h"

/* sm_tensor_new without zeroing the elements (DT_STRING is still initialised): for the runtime's
 * kernels that write every element, where the zero fill is pure cost. The caller owns *out. */
sm_status *sm__tensor_new_uninit(int dtype, int rank, const int64_t *dims, sm_tensor **out);

#endif
