/* fuzz_kernels.c - every registered kernel under hostile inputs: the fuzzer's bytes pick an op, its
 * attrs and its inputs' dtypes, shapes and values (fuzz/fuzz_kernels.h, the generator the seeded CI
 * driver tests/unit/test_kernel_hostile.c shares), and the one-node graph runs under a memory
 * budget and a deadline. A run may fail, but only with a status: a crash, a sanitizer report, a
 * leak or a hang is the bug. Ops that touch files, sleep or print are not picked (hk_skip). */
#include "fuzz_kernels.h"

#ifndef FUZZ_KERNELS_ENTRY
#define FUZZ_KERNELS_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_KERNELS_ENTRY(const uint8_t *data, size_t size);
int FUZZ_KERNELS_ENTRY(const uint8_t *data, size_t size) {
  hk_src s = {.data = data, .size = size};
  hk_run_case(&s, NULL, NULL);
  return 0;
}
