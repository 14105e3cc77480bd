/* array.c - the array kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_array[] = {
    {0},
};
