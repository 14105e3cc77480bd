/* tf_case_elems.h - set_elem / get_elem over every real dtype (float, double, half, bfloat16 and
 * the 8- to 64-bit integers) through double, for the tests that run generated TF kernel cases
 * with tf_case_run.h (test_ops_image, test_ops_image2). Include once, before tf_case_run.h. */
#ifndef SM_TEST_TF_CASE_ELEMS_H
#define SM_TEST_TF_CASE_ELEMS_H
#include <math.h>
#include <stdint.h>

#include "ops/math_int.h" /* half / bfloat16 conversions */
#include "savedmodel/tensor.h"

static void set_elem(sm_tensor *t, int64_t i, double v) {
  void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: ((float *)d)[i] = (float)v; break;
    case SM_DOUBLE: ((double *)d)[i] = v; break;
    case SM_HALF: ((uint16_t *)d)[i] = sm__f32_to_half((float)v); break;
    case SM_BFLOAT16: ((uint16_t *)d)[i] = sm__f32_to_bf16((float)v); break;
    case SM_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case SM_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case SM_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
    case SM_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case SM_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case SM_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case SM_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case SM_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
  }
}

static double get_elem(const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)d)[i];
    case SM_DOUBLE: return ((const double *)d)[i];
    case SM_HALF: return sm__half_to_f32(((const uint16_t *)d)[i]);
    case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)d)[i]);
    case SM_INT8: return ((const int8_t *)d)[i];
    case SM_UINT8: return ((const uint8_t *)d)[i];
    case SM_INT16: return ((const int16_t *)d)[i];
    case SM_UINT16: return ((const uint16_t *)d)[i];
    case SM_UINT32: return ((const uint32_t *)d)[i];
    case SM_UINT64: return (double)((const uint64_t *)d)[i];
    case SM_INT32: return ((const int32_t *)d)[i];
    case SM_INT64: return (double)((const int64_t *)d)[i];
  }
  return NAN;
}

#endif
