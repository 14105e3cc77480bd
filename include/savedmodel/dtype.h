/* dtype.h - TensorFlow's DataType enum, with the same numbers as types.proto, and its facts. */
#ifndef SAVEDMODEL_DTYPE_H
#define SAVEDMODEL_DTYPE_H

#include <stddef.h>

#include "savedmodel/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sm_dtype {
  SM_INVALID = 0,
  SM_FLOAT = 1,
  SM_DOUBLE = 2,
  SM_INT32 = 3,
  SM_UINT8 = 4,
  SM_INT16 = 5,
  SM_INT8 = 6,
  SM_STRING = 7,
  SM_COMPLEX64 = 8,
  SM_INT64 = 9,
  SM_BOOL = 10,
  SM_QINT8 = 11,
  SM_QUINT8 = 12,
  SM_QINT32 = 13,
  SM_BFLOAT16 = 14,
  SM_QINT16 = 15,
  SM_QUINT16 = 16,
  SM_UINT16 = 17,
  SM_COMPLEX128 = 18,
  SM_HALF = 19,
  SM_RESOURCE = 20,
  SM_VARIANT = 21,
  SM_UINT32 = 22,
  SM_UINT64 = 23,
  SM_FLOAT8_E5M2 = 24,
  SM_FLOAT8_E4M3FN = 25,
  SM_FLOAT8_E4M3FNUZ = 26,
  SM_FLOAT8_E4M3B11FNUZ = 27,
  SM_FLOAT8_E5M2FNUZ = 28,
  SM_INT4 = 29,
  SM_UINT4 = 30,
  SM_INT2 = 31,
  SM_UINT2 = 32,
  SM_FLOAT4_E2M1FN = 33,
  SM_DTYPE_REF_OFFSET = 100 /* TF1 reference types are base + 100 (DT_FLOAT_REF = 101) */
} sm_dtype;

/* "DT_FLOAT", "DT_FLOAT_REF", ...; NULL for a number TensorFlow does not define. */
SM_API const char *sm_dtype_name(int dtype);
/* The enum value for "DT_FLOAT" etc.; -1 if unknown. */
SM_API int sm_dtype_from_name(const char *name);
/* Bytes per element for fixed-size dtypes stored as raw bytes (tensor_content, bundle data);
 * 0 for string, resource, variant, the sub-byte types and invalid values. */
SM_API size_t sm_dtype_size(int dtype);
/* numpy-style name used when printing values ("float32", "int64", "bytes"). */
SM_API const char *sm_dtype_numpy_name(int dtype);
/* The base type of a reference type (DT_FLOAT_REF -> DT_FLOAT); other values unchanged. */
SM_API int sm_dtype_base(int dtype);

#ifdef __cplusplus
}
#endif
#endif
