/* lookup.c - the lookup kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_lookup[] = {
    {0},
};
