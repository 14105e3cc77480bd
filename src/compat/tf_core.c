/* tf_core.c - TensorFlow C API: TF_Status, TF_Buffer, TF_Tensor, TF_TString, TF_DataTypeSize,
 * TF_Version, and the conversions between TF_Tensor and sm_tensor that TF_SessionRun uses.
 *
 * TF_TString is TensorFlow's 24-byte string (tf_tstring.h): short strings inline, long ones in a
 * malloc'd block, views of memory owned elsewhere, offsets into the tensor's buffer. Callers work
 * on these with TensorFlow's inline functions (TF_TString_Copy, _Dealloc, ...), which allocate and
 * free the long ones with malloc and free: so do we, for the strings of the tensors we return.
 * Everything else comes from base/alloc.h. A string tensor made by TF_AllocateTensor starts zeroed
 * (every element an empty string) and TF_DeleteTensor deallocates its elements, so a program that
 * deallocates them first (as TensorFlow requires) and one that does not both end without leaks.
 *
 * Functions that TensorFlow declares without a status (TF_NewStatus, TF_NewTensor, ...) return
 * NULL when memory runs out, where TensorFlow would abort. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "compat/compat_internal.h"

#define TF_ALIGN 64 /* TF_TensorDefaultAlignment: EIGEN_MAX_ALIGN_BYTES of TensorFlow's x86-64 builds */

#ifndef SM_TF_VERSION
#define SM_TF_VERSION "0.1.0"
#endif

const char *TF_Version(void) {
  /* The TensorFlow release whose C API this follows, and ours as build metadata. */
  return "2.21.0+savedmodel." SM_TF_VERSION;
}

/* ---- TF_Status --------------------------------------------------------------------------- */
TF_Status *TF_NewStatus(void) { return sm__calloc(sizeof(TF_Status)); }

void TF_DeleteStatus(TF_Status *s) {
  if (!s) return;
  sm__free(s->msg);
  sm__free(s);
}

static void set_msg(TF_Status *s, TF_Code code, const char *msg, size_t len) {
  sm__free(s->msg);
  s->msg = NULL;
  s->code = code;
  if (code == TF_OK || !msg) return;
  s->msg = sm__alloc(len + 1);
  if (s->msg) {
    memcpy(s->msg, msg, len);
    s->msg[len] = 0;
  }
}

void TF_SetStatus(TF_Status *s, TF_Code code, const char *msg) {
  if (s) set_msg(s, code, msg, msg ? strlen(msg) : 0);
}

TF_Code TF_GetCode(const TF_Status *s) { return s ? s->code : TF_OK; }
const char *TF_Message(const TF_Status *s) { return s && s->msg ? s->msg : ""; }

void sm__tf_ok(TF_Status *s) { TF_SetStatus(s, TF_OK, NULL); }

void sm__tf_set(TF_Status *s, TF_Code code, const char *fmt, ...) {
  if (!s) return;
  va_list ap;
  va_start(ap, fmt);
  char small[512];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof small) {
    set_msg(s, code, small, (size_t)n);
    return;
  }
  char *big = sm__alloc((size_t)n + 1);
  if (!big) {
    set_msg(s, code, small, sizeof small - 1); /* truncated rather than lost */
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  set_msg(s, code, big, (size_t)n);
  sm__free(big);
}

int sm__tf_from_sm(TF_Status *s, sm_status *e) {
  if (!e) {
    sm__tf_ok(s);
    return 0;
  }
  static const TF_Code map[] = {
      [SM_OK] = TF_OK,
      [SM_INVALID_ARGUMENT] = TF_INVALID_ARGUMENT,
      [SM_NOT_FOUND] = TF_NOT_FOUND,
      [SM_DATA_LOSS] = TF_DATA_LOSS,
      [SM_UNIMPLEMENTED] = TF_UNIMPLEMENTED,
      [SM_IO] = TF_UNKNOWN, /* TensorFlow's code for an I/O error without a more precise errno */
      [SM_NO_MEMORY] = TF_RESOURCE_EXHAUSTED,
      [SM_ALREADY_EXISTS] = TF_ALREADY_EXISTS,
      [SM_OUT_OF_RANGE] = TF_OUT_OF_RANGE,
      [SM_FAILED_PRECONDITION] = TF_FAILED_PRECONDITION,
      [SM_INTERNAL] = TF_INTERNAL,
      [SM_UNAVAILABLE] = TF_UNAVAILABLE,
      [SM_DEADLINE_EXCEEDED] = TF_DEADLINE_EXCEEDED,
      [SM_CANCELLED] = TF_CANCELLED,
      [SM_RESOURCE_EXHAUSTED] = TF_RESOURCE_EXHAUSTED,
  };
  sm_code c = sm_status_code(e);
  TF_Code code = (unsigned)c < sizeof map / sizeof map[0] && c != SM_OK ? map[c] : TF_UNKNOWN;
  if (s) {
    const char *m = sm_status_message(e);
    set_msg(s, code, m, strlen(m));
  }
  sm_status_free(e);
  return 1;
}

const char *sm__tf_type_name(int dtype, char *buf, size_t cap) {
  const char *n = sm_dtype_name(dtype);
  if (!n) {
    snprintf(buf, cap, "unknown dtype enum (%d)", dtype);
    return buf;
  }
  if (!strncmp(n, "DT_", 3)) n += 3;
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
  buf[i] = 0;
  return buf;
}

size_t TF_DataTypeSize(TF_DataType dt) { return sm_dtype_size((int)dt); }

/* ---- TF_Buffer --------------------------------------------------------------------------- */
static void free_buffer_data(void *data, size_t len) {
  (void)len;
  sm__free(data);
}

TF_Buffer *TF_NewBuffer(void) { return sm__calloc(sizeof(TF_Buffer)); }

TF_Buffer *TF_NewBufferFromString(const void *proto, size_t proto_len) {
  TF_Buffer *b = TF_NewBuffer();
  void *copy = b ? sm__alloc(proto_len) : NULL;
  if (!copy) {
    sm__free(b);
    return NULL;
  }
  if (proto_len) memcpy(copy, proto, proto_len);
  b->data = copy;
  b->length = proto_len;
  b->data_deallocator = free_buffer_data;
  return b;
}

void TF_DeleteBuffer(TF_Buffer *b) {
  if (!b) return;
  if (b->data_deallocator) b->data_deallocator((void *)b->data, b->length);
  sm__free(b);
}

TF_Buffer TF_GetBuffer(TF_Buffer *b) { return *b; }

/* ---- TF_TString -------------------------------------------------------------------------- */
#define TSTR_SMALL_CAP 22 /* sizeof(TF_TString) - the size byte - the NUL */
_Static_assert(sizeof(TF_TString) == 24, "TF_TString is TensorFlow's 24 bytes");

TF_TString_Type TF_StringGetType(const TF_TString *t) { return (TF_TString_Type)(t->u.raw[0] & 3); }

void TF_StringInit(TF_TString *t) { memset(t, 0, sizeof *t); }

size_t TF_StringGetSize(const TF_TString *t) {
  switch (TF_StringGetType(t)) {
  case TF_TSTR_SMALL: return t->u.smll.size >> 2;
  case TF_TSTR_LARGE: return t->u.large.size >> 2;
  case TF_TSTR_OFFSET: return t->u.offset.size >> 2;
  default: return t->u.view.size >> 2;
  }
}

size_t TF_StringGetCapacity(const TF_TString *t) {
  switch (TF_StringGetType(t)) {
  case TF_TSTR_SMALL: return TSTR_SMALL_CAP;
  case TF_TSTR_LARGE: return t->u.large.cap;
  default: return 0;
  }
}

const char *TF_StringGetDataPointer(const TF_TString *t) {
  switch (TF_StringGetType(t)) {
  case TF_TSTR_SMALL: return t->u.smll.str;
  case TF_TSTR_LARGE: return t->u.large.ptr;
  case TF_TSTR_OFFSET: return (const char *)t + t->u.offset.offset;
  default: return t->u.view.ptr;
  }
}

/* TStringOwnerCApi: {ref, unref, obj}, the owner of a view's bytes. */
typedef struct {
  void (*ref)(void *self);
  _Bool (*unref)(void *self);
  void *obj;
} tstr_owner;

void TF_StringDealloc(TF_TString *t) {
  TF_TString_Type type = TF_StringGetType(t);
  if (type == TF_TSTR_LARGE && t->u.large.ptr) {
    free(t->u.large.ptr);
    TF_StringInit(t);
  } else if (type == TF_TSTR_VIEW && t->u.view.owner_ref) {
    tstr_owner *o = t->u.view.owner_ref;
    (void)o->unref(o);
    TF_StringInit(t);
  }
}

/* A string set to n bytes of src, as TF_TString_Copy leaves it: inline up to 22 bytes, else a
 * malloc'd block of a capacity rounded to 16 - 1. 0 when memory ran out (t is then empty). */
static int tstr_set(TF_TString *t, const char *src, size_t n) {
  TF_StringDealloc(t);
  TF_StringInit(t);
  if (n <= TSTR_SMALL_CAP) {
    t->u.smll.size = (uint8_t)(n << 2);
    if (n) memcpy(t->u.smll.str, src, n);
    t->u.smll.str[n] = 0;
    return 1;
  }
  size_t cap = ((n + 1 + 15) & ~(size_t)15) - 1;
  char *p = malloc(cap + 1); /* free()d by TensorFlow's inline TF_TString_Dealloc */
  if (!p) return 0;
  memcpy(p, src, n);
  p[n] = 0;
  t->u.large.size = n << 2 | TF_TSTR_LARGE;
  t->u.large.cap = cap;
  t->u.large.ptr = p;
  return 1;
}

void TF_StringCopy(TF_TString *dst, const char *src, size_t size) {
  /* src may point into dst's own bytes (inline or in its block), which setting frees: copy first. */
  const char *cur = TF_StringGetDataPointer(dst);
  const char *self = (const char *)dst;
  int overlaps = size && ((src >= self && src < self + sizeof *dst) || (cur && src >= cur && src < cur + TF_StringGetSize(dst)));
  if (!overlaps) {
    tstr_set(dst, src, size);
    return;
  }
  char *tmp = sm__alloc(size);
  if (!tmp) return;
  memcpy(tmp, src, size);
  tstr_set(dst, tmp, size);
  sm__free(tmp);
}

void TF_StringAssignView(TF_TString *dst, const char *src, size_t size) {
  TF_StringDealloc(dst);
  TF_StringInit(dst);
  dst->u.view.size = size << 2 | TF_TSTR_VIEW;
  dst->u.view.ptr = src;
  dst->u.view.owner_ref = NULL;
}

/* ---- TF_Tensor --------------------------------------------------------------------------- */
size_t TF_TensorDefaultAlignment(void) { return TF_ALIGN; }

/* Elements of a shape, -1 on a negative dim or overflow. */
static int64_t count_elements(const int64_t *dims, int num_dims) {
  int64_t n = 1;
  for (int i = 0; i < num_dims; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] && n > INT64_MAX / dims[i]) return -1;
    n *= dims[i];
  }
  return n;
}

static TF_Tensor *new_header(TF_DataType dtype, const int64_t *dims, int num_dims) {
  if (num_dims < 0 || num_dims > SM_MAX_RANK || (num_dims && !dims) || count_elements(dims, num_dims) < 0) return NULL;
  TF_Tensor *t = sm__calloc(sizeof *t);
  int64_t *d = t ? sm__alloc(sizeof(int64_t) * (size_t)(num_dims ? num_dims : 1)) : NULL;
  if (!d) {
    sm__free(t);
    return NULL;
  }
  if (num_dims) memcpy(d, dims, sizeof(int64_t) * (size_t)num_dims);
  t->dtype = dtype;
  t->ndims = num_dims;
  t->dims = d;
  return t;
}

/* The bytes a tensor of this dtype and shape needs (strings: one TF_TString each); 0 for a dtype
 * without a fixed size here. */
static size_t needed_bytes(TF_DataType dtype, const TF_Tensor *t) {
  size_t esz = dtype == TF_STRING ? sizeof(TF_TString) : sm_dtype_size((int)dtype);
  return esz * (size_t)TF_TensorElementCount(t);
}

TF_Tensor *TF_NewTensor(TF_DataType dtype, const int64_t *dims, int num_dims, void *data, size_t len,
                        void (*deallocator)(void *data, size_t len, void *arg), void *deallocator_arg) {
  TF_Tensor *t = new_header(dtype, dims, num_dims);
  if (t && len < needed_bytes(dtype, t)) {
    /* TensorFlow refuses a buffer shorter than the shape needs (and releases it). */
    sm__free(t->dims);
    sm__free(t);
    t = NULL;
  }
  if (!t) {
    if (deallocator) deallocator(data, len, deallocator_arg);
    return NULL;
  }
  t->data = data;
  t->len = len;
  t->kind = SM_TFT_USER;
  t->dealloc = deallocator;
  t->arg = deallocator_arg;
  return t;
}

TF_Tensor *TF_AllocateTensor(TF_DataType dtype, const int64_t *dims, int num_dims, size_t len) {
  TF_Tensor *t = new_header(dtype, dims, num_dims);
  if (!t) return NULL;
  void *block = len <= SIZE_MAX - TF_ALIGN ? sm__calloc(len + TF_ALIGN) : NULL;
  if (!block) {
    sm__free(t->dims);
    sm__free(t);
    return NULL;
  }
  t->block = block;
  t->data = (void *)(((uintptr_t)block + TF_ALIGN - 1) & ~(uintptr_t)(TF_ALIGN - 1));
  t->len = len;
  t->kind = SM_TFT_ALLOCATED;
  return t;
}

TF_Tensor *TF_TensorMaybeMove(TF_Tensor *t) {
  /* Only a tensor whose buffer we allocated and nobody else refers to can be moved: TensorFlow
   * answers NULL for the others, and so do we for all (a copy is always correct). */
  (void)t;
  return NULL;
}

void TF_DeleteTensor(TF_Tensor *t) {
  if (!t) return;
  switch (t->kind) {
  case SM_TFT_USER:
    if (t->dealloc) t->dealloc(t->data, t->len, t->arg);
    break;
  case SM_TFT_ALLOCATED:
    if (t->dtype == TF_STRING) {
      TF_TString *s = t->data;
      for (size_t i = 0; i < t->len / sizeof(TF_TString); i++) TF_StringDealloc(&s[i]);
    }
    sm__free(t->block);
    break;
  default: /* SM_TFT_MODEL */
    if (t->dtype == TF_STRING) {
      TF_TString *s = t->data;
      for (size_t i = 0; i < t->len / sizeof(TF_TString); i++) TF_StringDealloc(&s[i]);
      sm__free(t->data);
    }
    sm_tensor_free(t->arg);
  }
  sm__free(t->dims);
  sm__free(t);
}

TF_DataType TF_TensorType(const TF_Tensor *t) { return t->dtype; }
int TF_NumDims(const TF_Tensor *t) { return t->ndims; }
int64_t TF_Dim(const TF_Tensor *t, int i) { return i >= 0 && i < t->ndims ? t->dims[i] : -1; }
size_t TF_TensorByteSize(const TF_Tensor *t) { return t->len; }
void *TF_TensorData(const TF_Tensor *t) { return t->data; }
int64_t TF_TensorElementCount(const TF_Tensor *t) { return count_elements(t->dims, t->ndims); }
_Bool TF_TensorIsAligned(const TF_Tensor *t) { return ((uintptr_t)t->data & (TF_ALIGN - 1)) == 0; }

void TF_SetShape(TF_Tensor *t, const int64_t *dims, int num_dims) {
  if (!t || num_dims < 0 || num_dims > SM_MAX_RANK || (num_dims && !dims)) return;
  int64_t *d = sm__alloc(sizeof(int64_t) * (size_t)(num_dims ? num_dims : 1));
  if (!d) return;
  if (num_dims) memcpy(d, dims, sizeof(int64_t) * (size_t)num_dims);
  sm__free(t->dims);
  t->dims = d;
  t->ndims = num_dims;
}

/* ---- TF_Tensor <-> sm_tensor ------------------------------------------------------------- */
sm_status *sm__tf_to_sm(const TF_Tensor *t, sm_tensor **out) {
  *out = NULL;
  int64_t n = TF_TensorElementCount(t);
  if (t->dtype != TF_STRING) {
    size_t need = needed_bytes(t->dtype, t);
    if (!sm_dtype_size((int)t->dtype))
      return sm_status_new(SM_INVALID_ARGUMENT, "tensors of type %s cannot be fed", sm_dtype_name((int)t->dtype));
    if (t->len < need)
      return sm_status_new(SM_INVALID_ARGUMENT, "a tensor of %lld elements has %zu bytes, needs %zu", (long long)n,
                           t->len, need);
    return sm_tensor_wrap((int)t->dtype, t->ndims, t->dims, t->data, need, NULL, NULL, out);
  }
  if (t->len < (size_t)n * sizeof(TF_TString))
    return sm_status_new(SM_INVALID_ARGUMENT, "a string tensor of %lld elements has %zu bytes, needs %zu",
                         (long long)n, t->len, (size_t)n * sizeof(TF_TString));
  sm_tensor *s = NULL;
  sm_status *e = sm_tensor_new(SM_STRING, t->ndims, t->dims, &s);
  const TF_TString *src = t->data;
  for (int64_t i = 0; !e && i < n; i++) e = sm_tensor_set_string(s, i, TF_StringGetDataPointer(&src[i]), TF_StringGetSize(&src[i]));
  if (e) {
    sm_tensor_free(s);
    return e;
  }
  *out = s;
  return NULL;
}

sm_status *sm__tf_from_sm_tensor(sm_tensor *t, TF_Tensor **out) {
  *out = NULL;
  int dtype = sm_tensor_dtype(t);
  int64_t n = sm_tensor_num_elements(t);
  if (dtype != SM_STRING && !sm_tensor_data(t) && n > 0) {
    sm_status *e = sm_status_new(SM_UNIMPLEMENTED, "a tensor of type %s cannot be fetched through the C API",
                                 sm_dtype_name(dtype));
    sm_tensor_free(t);
    return e;
  }
  TF_Tensor *r = new_header((TF_DataType)dtype, sm_tensor_dims(t), sm_tensor_rank(t));
  if (!r) goto oom;
  r->kind = SM_TFT_MODEL;
  r->arg = t;
  if (dtype != SM_STRING) {
    r->data = sm_tensor_data(t);
    r->len = sm_tensor_nbytes(t);
    *out = r;
    return NULL;
  }
  TF_TString *s = sm__calloc((size_t)n * sizeof(TF_TString) + 1);
  if (!s) goto oom;
  r->data = s;
  r->len = (size_t)n * sizeof(TF_TString);
  for (int64_t i = 0; i < n; i++) {
    size_t len;
    const char *p = sm_tensor_string(t, i, &len);
    if (!tstr_set(&s[i], p ? p : "", p ? len : 0)) goto oom;
  }
  *out = r;
  return NULL;
oom:
  if (r) TF_DeleteTensor(r); /* frees t too */
  else sm_tensor_free(t);
  return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the C API's copy of an output");
}
