/* array_case.h - the shape of one generated array-op test case (tools/gen_array_cases.py). */
#ifndef SM_TEST_ARRAY_CASE_H
#define SM_TEST_ARRAY_CASE_H
#include <stdint.h>

typedef struct {
  int dtype; /* sm_dtype */
  int rank;
  int64_t dims[8];
  const char *v; /* elements, space-separated (strings have no spaces) */
} tc_tensor;

typedef struct {
  const char *name;
  const char *node; /* op and attrs; the test adds name and inputs */
  int nin;
  tc_tensor in[8];
  int nout;
  tc_tensor out[8];
  const char *err; /* expected error text, or NULL */
} tc_case;

#endif
