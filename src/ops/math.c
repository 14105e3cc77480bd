/* math.c - the math kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_math[] = {
    {0},
};
