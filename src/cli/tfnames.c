/* tfnames.c - tf.DType.name for each DataType value ("float32", "float32_ref"), which is what
 * TensorFlow's Python tools print (TensorSpec reprs, inspect_checkpoint's "tensor:" line). */
#include <stdio.h>

#include "cli/cli.h"
#include "savedmodel/dtype.h"

static const char *const base_names[] = {
    NULL,         "float32",         "float64",          "int32",          "uint8",
    "int16",      "int8",            "string",           "complex64",      "int64",
    "bool",       "qint8",           "quint8",           "qint32",         "bfloat16",
    "qint16",     "quint16",         "uint16",           "complex128",     "float16",
    "resource",   "variant",         "uint32",           "uint64",         "float8_e5m2",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "int4",
    "uint4",      "int2",            "uint2",            "float4_e2m1fn"};
#define NBASE ((int)(sizeof base_names / sizeof *base_names))

const char *sm__cli_tf_dtype_name(int dtype) {
  static char ref[NBASE][32];
  if (dtype > 0 && dtype < NBASE) return base_names[dtype];
  if (dtype > SM_DTYPE_REF_OFFSET && dtype < SM_DTYPE_REF_OFFSET + NBASE) {
    int b = dtype - SM_DTYPE_REF_OFFSET;
    if (!ref[b][0]) snprintf(ref[b], sizeof ref[b], "%s_ref", base_names[b]);
    return ref[b];
  }
  return NULL;
}
