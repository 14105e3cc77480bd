/* e5_call.h - one signature call of a generated call sequence (e5_calls.h from tools/gen_e5_models.py,
 * f5_calls.h from tools/gen_f5_cases.py): inputs, TF's outputs or TF's error text. Tests include it
 * before the generated header. */
#ifndef SM_TEST_E5_CALL_H
#define SM_TEST_E5_CALL_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int dtype, rank;
  int64_t dims[8];
  const void *data;
  const char *const *s;
  const size_t *l;
  int64_t n;
} e5_tensor;
typedef struct {
  const char *name;
  e5_tensor t;
} e5_arg;
typedef struct {
  const char *model, *sig;
  const e5_arg *in;
  int nin;
  const e5_arg *out;
  int nout;
  const char *err;
  int64_t nbuckets; /* exports: TF's row count before the dense table's free buckets were dropped */
} e5_call;

#endif
