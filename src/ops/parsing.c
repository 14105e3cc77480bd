/* parsing.c - the parsing kernel family (placeholder: kernels arrive here). */
#include "runtime/kernel.h"

const sm_kernel sm_kernels_parsing[] = {
    {0},
};
