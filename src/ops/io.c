/* io.c - the io kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_io[] = {
    {0},
};
