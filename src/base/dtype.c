/* dtype.c - names and element sizes of TensorFlow's DataType values (types.proto). */
#include "savedmodel/dtype.h"

#include <string.h>

typedef struct {
  const char *name;  /* "DT_FLOAT" */
  const char *ref;   /* "DT_FLOAT_REF" */
  size_t size;       /* raw element size; 0 = not a fixed-size raw type */
  const char *numpy; /* numpy's name for it */
} dtype_info;

/* Names are string literals, so callers get stable pointers with no allocation and no
 * first-call initialisation (which raced when two threads made the first call at once). */
#define DT(id, name, size, numpy) [id] = {"DT_" name, "DT_" name "_REF", size, numpy}
static const dtype_info dtypes[] = {
    DT(SM_INVALID, "INVALID", 0, "invalid"),
    DT(SM_FLOAT, "FLOAT", 4, "float32"),
    DT(SM_DOUBLE, "DOUBLE", 8, "float64"),
    DT(SM_INT32, "INT32", 4, "int32"),
    DT(SM_UINT8, "UINT8", 1, "uint8"),
    DT(SM_INT16, "INT16", 2, "int16"),
    DT(SM_INT8, "INT8", 1, "int8"),
    DT(SM_STRING, "STRING", 0, "object"),
    DT(SM_COMPLEX64, "COMPLEX64", 8, "complex64"),
    DT(SM_INT64, "INT64", 8, "int64"),
    DT(SM_BOOL, "BOOL", 1, "bool"),
    DT(SM_QINT8, "QINT8", 1, "qint8"),
    DT(SM_QUINT8, "QUINT8", 1, "quint8"),
    DT(SM_QINT32, "QINT32", 4, "qint32"),
    DT(SM_BFLOAT16, "BFLOAT16", 2, "bfloat16"),
    DT(SM_QINT16, "QINT16", 2, "qint16"),
    DT(SM_QUINT16, "QUINT16", 2, "quint16"),
    DT(SM_UINT16, "UINT16", 2, "uint16"),
    DT(SM_COMPLEX128, "COMPLEX128", 16, "complex128"),
    DT(SM_HALF, "HALF", 2, "float16"),
    DT(SM_RESOURCE, "RESOURCE", 0, "resource"),
    DT(SM_VARIANT, "VARIANT", 0, "variant"),
    DT(SM_UINT32, "UINT32", 4, "uint32"),
    DT(SM_UINT64, "UINT64", 8, "uint64"),
    DT(SM_FLOAT8_E5M2, "FLOAT8_E5M2", 1, "float8_e5m2"),
    DT(SM_FLOAT8_E4M3FN, "FLOAT8_E4M3FN", 1, "float8_e4m3fn"),
    DT(SM_FLOAT8_E4M3FNUZ, "FLOAT8_E4M3FNUZ", 1, "float8_e4m3fnuz"),
    DT(SM_FLOAT8_E4M3B11FNUZ, "FLOAT8_E4M3B11FNUZ", 1, "float8_e4m3b11fnuz"),
    DT(SM_FLOAT8_E5M2FNUZ, "FLOAT8_E5M2FNUZ", 1, "float8_e5m2fnuz"),
    DT(SM_INT4, "INT4", 0, "int4"),
    DT(SM_UINT4, "UINT4", 0, "uint4"),
    DT(SM_INT2, "INT2", 0, "int2"),
    DT(SM_UINT2, "UINT2", 0, "uint2"),
    DT(SM_FLOAT4_E2M1FN, "FLOAT4_E2M1FN", 0, "float4_e2m1fn"),
};
#define NDTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

const char *sm_dtype_name(int dtype) {
  if (dtype >= 0 && dtype < NDTYPES) return dtypes[dtype].name;
  if (dtype > SM_DTYPE_REF_OFFSET && dtype < SM_DTYPE_REF_OFFSET + NDTYPES)
    return dtypes[dtype - SM_DTYPE_REF_OFFSET].ref;
  return NULL;
}

int sm_dtype_from_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < NDTYPES; i++) {
    const char *n = sm_dtype_name(i);
    if (strcmp(n, name) == 0) return i;
    if (i > 0 && strcmp(sm_dtype_name(i + SM_DTYPE_REF_OFFSET), name) == 0) return i + SM_DTYPE_REF_OFFSET;
  }
  return -1;
}

size_t sm_dtype_size(int dtype) { return dtype >= 0 && dtype < NDTYPES ? dtypes[dtype].size : 0; }

const char *sm_dtype_numpy_name(int dtype) {
  dtype = sm_dtype_base(dtype);
  return dtype >= 0 && dtype < NDTYPES ? dtypes[dtype].numpy : "unknown";
}

int sm_dtype_base(int dtype) { return dtype > SM_DTYPE_REF_OFFSET ? dtype - SM_DTYPE_REF_OFFSET : dtype; }
