/* nn.c - the nn kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_nn[] = {
    {0},
};
