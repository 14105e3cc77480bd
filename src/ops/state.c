/* state.c - the state kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_state[] = {
    {0},
};
