/* tensor_proto.c - TensorProto -> sm_tensor, by TensorFlow's rules (Tensor::FromProto):
 * tensor_content first (its size must match exactly); else the dtype's typed field, where fewer
 * values than elements repeat the last one and none at all means zeros; values past the elements
 * are ignored, as TF's FromProtoField ignores them (TF itself saves tf.zeros([0], tf.string) as a
 * Const of shape [0] holding one string).
 * sm__tensor_proto_check makes every check and sizes the tensor without allocating it (validate,
 * and the load budget before a constant is materialised). */
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h"
#include "graph/graph.h"

static sm_status *bad(const char *fmt, const char *what, long long a, long long b) {
  return sm_status_new(SM_INVALID_ARGUMENT, fmt, what, a, b);
}

/* DT_STRING tensor_content: n varint32 lengths, then the bytes (port::EncodeStringList). */
static sm_status *strings_from_content(const ProtobufCBinaryData *c, sm_tensor *t, int64_t n) {
  const uint8_t *p = c->data, *end = c->data + c->len;
  uint64_t *lens = NULL;
  if (n > (int64_t)c->len) /* every string takes at least one length byte */
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: tensor_content of %zu bytes cannot hold %lld strings",
                         c->len, (long long)n);
  lens = malloc(((size_t)n + 1) * sizeof *lens);
  if (!lens) return sm_status_new(SM_NO_MEMORY, "TensorProto: out of memory");
  sm_status *s = NULL;
  for (int64_t i = 0; i < n && !s; i++) {
    uint64_t v = 0;
    int shift = 0, ok = 0;
    while (p < end && shift < 35) {
      uint8_t b = *p++;
      v |= (uint64_t)(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        ok = 1;
        break;
      }
    }
    if (!ok || v > 0xffffffffu) s = sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: bad string length in tensor_content");
    lens[i] = v;
  }
  for (int64_t i = 0; i < n && !s; i++) {
    if (lens[i] > (uint64_t)(end - p)) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: tensor_content string %lld runs past the end",
                        (long long)i);
      break;
    }
    s = sm_tensor_set_string(t, i, p, (size_t)lens[i]);
    p += lens[i];
  }
  if (!s && p != end)
    s = sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: %zu bytes left over in string tensor_content",
                      (size_t)(end - p));
  free(lens);
  return s;
}

/* The typed field of a fixed-size dtype: its kind, values and count. */
enum { F32, F64, I32, I64, BOOLV, HALF, U32, U64, CPLX64, CPLX128, BYTES };
static int typed_field(const Tensorflow__TensorProto *p, int dtype, int *kind, const void **src, int64_t *in) {
  switch (dtype) {
  case SM_FLOAT: *kind = F32; *in = (int64_t)p->n_float_val; *src = p->float_val; break;
  case SM_DOUBLE: *kind = F64; *in = (int64_t)p->n_double_val; *src = p->double_val; break;
  case SM_INT32: case SM_INT16: case SM_INT8: case SM_UINT8: case SM_UINT16:
  case SM_QINT8: case SM_QUINT8: case SM_QINT16: case SM_QUINT16: case SM_QINT32:
    *kind = I32; *in = (int64_t)p->n_int_val; *src = p->int_val; break;
  case SM_INT64: *kind = I64; *in = (int64_t)p->n_int64_val; *src = p->int64_val; break;
  case SM_BOOL: *kind = BOOLV; *in = (int64_t)p->n_bool_val; *src = p->bool_val; break;
  case SM_HALF: case SM_BFLOAT16: *kind = HALF; *in = (int64_t)p->n_half_val; *src = p->half_val; break;
  case SM_UINT32: *kind = U32; *in = (int64_t)p->n_uint32_val; *src = p->uint32_val; break;
  case SM_UINT64: *kind = U64; *in = (int64_t)p->n_uint64_val; *src = p->uint64_val; break;
  case SM_COMPLEX64: *kind = CPLX64; *in = (int64_t)(p->n_scomplex_val / 2); *src = p->scomplex_val; break;
  case SM_COMPLEX128: *kind = CPLX128; *in = (int64_t)(p->n_dcomplex_val / 2); *src = p->dcomplex_val; break;
  case SM_FLOAT8_E5M2: case SM_FLOAT8_E4M3FN: case SM_FLOAT8_E4M3FNUZ: case SM_FLOAT8_E4M3B11FNUZ:
  case SM_FLOAT8_E5M2FNUZ:
    *kind = BYTES; *in = (int64_t)p->float8_val.len; *src = p->float8_val.data; break;
  case SM_STRING: *kind = -1; *in = (int64_t)p->n_string_val; *src = p->string_val; break;
  default: return 0;
  }
  return 1;
}

/* dtype, rank and dims of p, checked. */
static sm_status *proto_shape(const Tensorflow__TensorProto *p, int *dtype, int *rank, int64_t *dims) {
  *dtype = (int)p->dtype;
  if (*dtype <= 0 || *dtype >= 100)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: dtype %d is not a value dtype", *dtype);
  if (*dtype == SM_RESOURCE || *dtype == SM_VARIANT)
    return sm_status_new(SM_UNIMPLEMENTED, "TensorProto: %s constants are not supported", sm_dtype_name(*dtype));
  *rank = 0;
  const Tensorflow__TensorShapeProto *sh = p->tensor_shape;
  if (sh) {
    if (sh->unknown_rank) return sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: shape has unknown rank");
    if (sh->n_dim > SM_MAX_RANK)
      return sm_status_new(SM_UNIMPLEMENTED, "TensorProto: rank %zu is more than %d", sh->n_dim, SM_MAX_RANK);
    for (size_t i = 0; i < sh->n_dim; i++) {
      dims[i] = sh->dim[i] ? sh->dim[i]->size : 0;
      if (dims[i] < 0)
        return bad("TensorProto: %s %lld is %lld", "dimension", (long long)i, (long long)dims[i]);
    }
    *rank = (int)sh->n_dim;
  }
  return NULL;
}

sm_status *sm__tensor_proto_check(const Tensorflow__TensorProto *p, int64_t *bytes) {
  *bytes = 0;
  if (!p) return sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: none given");
  int dtype, rank;
  int64_t dims[SM_MAX_RANK];
  sm_status *s = proto_shape(p, &dtype, &rank, dims);
  if (s) return s;
  size_t nb;
  if ((s = sm__tensor_alloc_bytes(dtype, rank, dims, &nb))) return sm_status_prefix(s, "TensorProto");
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i]; /* no overflow: sm__tensor_alloc_bytes checked */
  *bytes = (int64_t)nb;
  if (p->tensor_content.len) {
    if (dtype == SM_STRING) {
      if (n > (int64_t)p->tensor_content.len) /* every string takes at least one length byte */
        return sm_status_new(SM_INVALID_ARGUMENT, "TensorProto: tensor_content of %zu bytes cannot hold %lld strings",
                             p->tensor_content.len, (long long)n);
      *bytes += (int64_t)p->tensor_content.len;
    } else if (p->tensor_content.len != nb) {
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "TensorProto: tensor_content has %zu bytes, a %s tensor of %lld elements needs %zu",
                           p->tensor_content.len, sm_dtype_name(dtype), (long long)n, nb);
    }
    return NULL;
  }
  int kind;
  const void *src;
  int64_t in;
  if (!typed_field(p, dtype, &kind, &src, &in))
    return sm_status_new(SM_UNIMPLEMENTED, "TensorProto: no typed values for dtype %s", sm_dtype_name(dtype));
  if (in > n) in = n; /* the values past the elements are not read (TF's FromProtoField) */
  if (dtype == SM_STRING && in > 0) { /* the last string repeats: its bytes n - in + 1 times */
    const ProtobufCBinaryData *v = p->string_val;
    for (int64_t i = 0; i < in; i++) *bytes += (int64_t)v[i].len;
    uint64_t rep;
    if (__builtin_mul_overflow((uint64_t)v[in - 1].len, (uint64_t)(n - in), &rep) || rep > (uint64_t)INT64_MAX / 2)
      return sm_status_new(SM_OUT_OF_RANGE, "TensorProto: %lld strings of %zu bytes are too many bytes", (long long)n,
                           v[in - 1].len);
    *bytes += (int64_t)rep;
  }
  return NULL;
}

sm_status *sm__tensor_from_proto(const Tensorflow__TensorProto *p, sm_tensor **out) {
  *out = NULL;
  int64_t need;
  sm_status *s = sm__tensor_proto_check(p, &need);
  if (!s) s = sm__load_budget_room(sm__load_budget_current(), need, "TensorProto");
  if (s) return s;
  int dtype, rank;
  int64_t dims[SM_MAX_RANK];
  if ((s = proto_shape(p, &dtype, &rank, dims))) return s;
  sm_tensor *t = NULL;
  s = sm_tensor_new(dtype, rank, dims, &t);
  if (s) return sm_status_prefix(s, "TensorProto");
  int64_t n = sm_tensor_num_elements(t);

  if (p->tensor_content.len) {
    if (dtype == SM_STRING) s = strings_from_content(&p->tensor_content, t, n);
    else memcpy(sm_tensor_data(t), p->tensor_content.data, p->tensor_content.len);
    if (s) sm_tensor_free(t);
    else *out = t;
    return s;
  }
  if (n == 0) {
    *out = t;
    return NULL;
  }
  if (dtype == SM_STRING) {
    int64_t in = (int64_t)p->n_string_val < n ? (int64_t)p->n_string_val : n;
    for (int64_t i = 0; i < n && in > 0 && !s; i++) {
      const ProtobufCBinaryData *v = &p->string_val[i < in ? i : in - 1];
      s = sm_tensor_set_string(t, i, v->data, v->len);
    }
    if (s) sm_tensor_free(t);
    else *out = t;
    return s;
  }

  /* Fixed-size dtypes: the field and the per-element conversion (typed_field: checked above). */
  uint8_t *d = sm_tensor_data(t);
  size_t es = sm_dtype_size(dtype);
  int64_t in = 0;
  const void *src = NULL;
  int kind = 0;
  typed_field(p, dtype, &kind, &src, &in);
  if (in == 0) { /* zeros, as allocated */
    *out = t;
    return NULL;
  }
  int64_t copy = in < n ? in : n;
  for (int64_t i = 0; i < copy; i++) {
    uint8_t *e = d + (size_t)i * es;
    switch (kind) {
    case F32: memcpy(e, (const float *)src + i, 4); break;
    case F64: memcpy(e, (const double *)src + i, 8); break;
    case I32: {
      int32_t v = ((const int32_t *)src)[i];
      if (es == 4) memcpy(e, &v, 4);
      else if (es == 2) {
        uint16_t w = (uint16_t)v;
        memcpy(e, &w, 2);
      } else {
        e[0] = (uint8_t)v;
      }
      break;
    }
    case I64: memcpy(e, (const int64_t *)src + i, 8); break;
    case BOOLV: e[0] = ((const protobuf_c_boolean *)src)[i] ? 1 : 0; break;
    case HALF: {
      uint16_t w = (uint16_t)((const int32_t *)src)[i];
      memcpy(e, &w, 2);
      break;
    }
    case U32: memcpy(e, (const uint32_t *)src + i, 4); break;
    case U64: memcpy(e, (const uint64_t *)src + i, 8); break;
    case CPLX64: memcpy(e, (const float *)src + 2 * i, 8); break;
    case CPLX128: memcpy(e, (const double *)src + 2 * i, 16); break;
    case BYTES: e[0] = ((const uint8_t *)src)[i]; break;
    }
  }
  /* The last value repeats to the end. */
  if (copy < n) {
    const uint8_t *last = d + (size_t)(copy - 1) * es;
    for (int64_t i = copy; i < n; i++) memcpy(d + (size_t)i * es, last, es);
  }
  *out = t;
  return NULL;
}
