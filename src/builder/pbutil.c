/* pbutil.c - malloc-owned protobuf pieces for the builders: strings, arrays, shapes, tensors. */
#include <stdlib.h>
#include <string.h>

#include "builder/builder_internal.h"

char *sm__b_strdup(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

int sm__b_push(void *arr_ptr, size_t *n, void *item) {
  void ***arr = arr_ptr;
  void **p = realloc(*arr, (*n + 1) * sizeof *p);
  if (!p) return 0;
  p[*n] = item;
  *arr = p;
  (*n)++;
  return 1;
}

Tensorflow__TensorShapeProto *sm__b_shape(int rank, const int64_t *dims) {
  Tensorflow__TensorShapeProto *sp = malloc(sizeof *sp);
  if (!sp) return NULL;
  tensorflow__tensor_shape_proto__init(sp);
  if (rank < 0) {
    sp->unknown_rank = 1;
    return sp;
  }
  if (rank == 0) return sp;
  sp->dim = calloc((size_t)rank, sizeof *sp->dim);
  if (!sp->dim) goto oom;
  for (int i = 0; i < rank; i++) {
    Tensorflow__TensorShapeProto__Dim *d = malloc(sizeof *d);
    if (!d) goto oom;
    tensorflow__tensor_shape_proto__dim__init(d);
    d->size = dims[i];
    sp->dim[sp->n_dim++] = d;
  }
  return sp;
oom:
  protobuf_c_message_free_unpacked(&sp->base, NULL);
  return NULL;
}

char *sm__b_tensor_name(const char *t) {
  if (strchr(t, ':')) return sm__b_strdup(t);
  size_t n = strlen(t);
  char *p = malloc(n + 3);
  if (p) {
    memcpy(p, t, n);
    memcpy(p + n, ":0", 3);
  }
  return p;
}

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

sm_status *sm__b_tensor_proto(const sm_tensor *t, Tensorflow__TensorProto **out) {
  *out = NULL;
  if (sm_tensor_dtype(t) == SM_VARIANT)
    return sm_status_new(SM_INVALID_ARGUMENT, "a DT_VARIANT tensor cannot be written as a TensorProto: variants live only in memory");
  Tensorflow__TensorProto *tp = malloc(sizeof *tp);
  if (!tp) return oom();
  tensorflow__tensor_proto__init(tp);
  int dt = sm_tensor_dtype(t);
  tp->dtype = (Tensorflow__DataType)dt;
  tp->tensor_shape = sm__b_shape(sm_tensor_rank(t), sm_tensor_dims(t));
  if (!tp->tensor_shape) goto fail;
  int64_t n = sm_tensor_num_elements(t);
  if (dt == SM_STRING) {
    if (n > 0) {
      tp->string_val = calloc((size_t)n, sizeof *tp->string_val);
      if (!tp->string_val) goto fail;
      for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *s = sm_tensor_string(t, i, &len);
        uint8_t *d = malloc(len ? len : 1);
        if (!d) goto fail;
        memcpy(d, s, len);
        tp->string_val[tp->n_string_val].data = d;
        tp->string_val[tp->n_string_val++].len = len;
      }
    }
  } else if (sm_tensor_rank(t) == 0 && (dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_INT32 || dt == SM_INT64 ||
                                         dt == SM_BOOL)) {
    /* Scalars go in the typed fields, as make_tensor_proto writes them. */
    const void *d = sm_tensor_data(t);
    switch (dt) {
      case SM_FLOAT:
        if (!(tp->float_val = malloc(sizeof(float)))) goto fail;
        memcpy(tp->float_val, d, sizeof(float));
        tp->n_float_val = 1;
        break;
      case SM_DOUBLE:
        if (!(tp->double_val = malloc(sizeof(double)))) goto fail;
        memcpy(tp->double_val, d, sizeof(double));
        tp->n_double_val = 1;
        break;
      case SM_INT32:
        if (!(tp->int_val = malloc(sizeof(int32_t)))) goto fail;
        memcpy(tp->int_val, d, sizeof(int32_t));
        tp->n_int_val = 1;
        break;
      case SM_INT64:
        if (!(tp->int64_val = malloc(sizeof(int64_t)))) goto fail;
        memcpy(tp->int64_val, d, sizeof(int64_t));
        tp->n_int64_val = 1;
        break;
      default:
        if (!(tp->bool_val = malloc(sizeof(protobuf_c_boolean)))) goto fail;
        tp->bool_val[0] = *(const uint8_t *)d != 0;
        tp->n_bool_val = 1;
        break;
    }
  } else if (sm_tensor_nbytes(t) > 0) {
    size_t nb = sm_tensor_nbytes(t);
    tp->tensor_content.data = malloc(nb);
    if (!tp->tensor_content.data) goto fail;
    memcpy(tp->tensor_content.data, sm_tensor_data(t), nb);
    tp->tensor_content.len = nb;
  }
  *out = tp;
  return NULL;
fail:
  protobuf_c_message_free_unpacked(&tp->base, NULL);
  return oom();
}

sm_status *sm__b_clone(const ProtobufCMessage *m, ProtobufCMessage **out) {
  *out = NULL;
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return oom();
  protobuf_c_message_pack(m, buf);
  *out = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
  free(buf);
  return *out ? NULL : oom();
}

sm_status *sm__b_zeros_proto(int dtype, int rank, const int64_t *dims, Tensorflow__TensorProto **out) {
  *out = NULL;
  Tensorflow__TensorProto *tp = malloc(sizeof *tp);
  if (!tp) return oom();
  tensorflow__tensor_proto__init(tp);
  tp->dtype = (Tensorflow__DataType)dtype;
  tp->tensor_shape = sm__b_shape(rank, dims);
  if (!tp->tensor_shape) goto fail;
  /* One typed value: TensorFlow repeats the last value to fill the shape (tf.zeros writes this). */
  switch (dtype) {
    case SM_FLOAT:
      if (!(tp->float_val = calloc(1, sizeof(float)))) goto fail;
      tp->n_float_val = 1;
      break;
    case SM_DOUBLE:
      if (!(tp->double_val = calloc(1, sizeof(double)))) goto fail;
      tp->n_double_val = 1;
      break;
    case SM_INT32: case SM_INT16: case SM_INT8: case SM_UINT8: case SM_UINT16:
      if (!(tp->int_val = calloc(1, sizeof(int32_t)))) goto fail;
      tp->n_int_val = 1;
      break;
    case SM_INT64:
      if (!(tp->int64_val = calloc(1, sizeof(int64_t)))) goto fail;
      tp->n_int64_val = 1;
      break;
    case SM_UINT32:
      if (!(tp->uint32_val = calloc(1, sizeof(uint32_t)))) goto fail;
      tp->n_uint32_val = 1;
      break;
    case SM_UINT64:
      if (!(tp->uint64_val = calloc(1, sizeof(uint64_t)))) goto fail;
      tp->n_uint64_val = 1;
      break;
    case SM_BOOL:
      if (!(tp->bool_val = calloc(1, sizeof(protobuf_c_boolean)))) goto fail;
      tp->n_bool_val = 1;
      break;
    case SM_HALF: case SM_BFLOAT16:
      if (!(tp->half_val = calloc(1, sizeof(int32_t)))) goto fail;
      tp->n_half_val = 1;
      break;
    case SM_STRING:
      if (!(tp->string_val = calloc(1, sizeof *tp->string_val)) || !(tp->string_val[0].data = malloc(1))) goto fail;
      tp->n_string_val = 1;
      break;
    default:
      protobuf_c_message_free_unpacked(&tp->base, NULL);
      return sm_status_new(SM_UNIMPLEMENTED, "no compact zeros for dtype %d", dtype);
  }
  *out = tp;
  return NULL;
fail:
  protobuf_c_message_free_unpacked(&tp->base, NULL);
  return oom();
}
