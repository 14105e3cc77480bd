/* tensor.c - sm_tensor: dtype + shape + a buffer of elements, owned or borrowed.
 *
 * An owned buffer, the tensor's header and the bytes of its strings come from the one allocator
 * (base/alloc.h), so running out of memory there is SM_RESOURCE_EXHAUSTED with TensorFlow's
 * wording ("OOM when allocating tensor with shape[2,3] and type float ..."). A buffer records the
 * memory space its elements live in (tensor_internal.h: host, or a device backend's). Borrowed buffers (a
 * view of another tensor, memory wrapped with a release callback such as a mapped checkpoint)
 * are released through their callback and never written in place. DT_VARIANT elements are
 * pointers to refcounted objects (variant.h): copies share them, the last free drops them.
 * A small owned buffer (at most INLINE_MAX bytes: scalars, loop counters, short vectors) lives in
 * the header's own allocation, so the tensors a loop makes every iteration cost one malloc, not
 * two. */
#include "savedmodel/tensor.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/checked.h"
#include "base/file.h"
#include "base/tensor_internal.h"
#include "base/variant.h"

typedef struct {
  char *ptr;
  size_t len;
} tstring;

/* Where a tensor's elements are. */
typedef struct tbuf {
  void *data;  /* raw elements, tstring[n] for DT_STRING, sm_variant *[n] for DT_VARIANT */
  int space;   /* sm_memspace */
  int file_ro; /* borrowed from a read-only file mapping (sm__tensor_set_file_backed) */
  int owned;   /* from sm__alloc, freed with the tensor; else borrowed */
  int inl;     /* owned and in the header's block (data == inline_data(t)): not freed on its own */
  void (*release)(void *); /* borrowed: called with release_ctx when the tensor goes (may be NULL) */
  void *release_ctx;
} tbuf;

struct sm_tensor {
  int dtype;
  int rank;
  int64_t dims[SM_MAX_RANK];
  int64_t n;       /* number of elements */
  size_t nbytes;   /* raw bytes (fixed-size dtypes) */
  tbuf buf;
  atomic_int refs; /* references held; the last sm_tensor_free releases the tensor */
  uint64_t uid;    /* sm__tensor_uid: unique over the process's life, never reused */
};

#define INLINE_MAX 64 /* element bytes kept in the header's block */

/* The header's size rounded up to the allocator's alignment: inline elements start there, as
 * aligned as a buffer of their own would be. */
#define HEADER_BYTES ((sizeof(sm_tensor) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1))

/* TensorFlow's DataTypeString: "float", "int32", "string" (the DT_ name, lower case). */
static const char *tf_type_name(int dtype, char *b, size_t cap) {
  const char *n = sm_dtype_name(dtype);
  if (!n) return "unknown";
  if (!strncmp(n, "DT_", 3)) n += 3;
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) b[i] = (char)tolower((unsigned char)n[i]);
  b[i] = 0;
  return b;
}

/* bytes: the elements' (0 for a view or wrapped memory, where only the header was wanted) */
static sm_status *oom(int dtype, int rank, const int64_t *dims, size_t bytes) {
  char sh[256], ty[32], nb[48] = "";
  if (bytes) snprintf(nb, sizeof nb, " (%zu bytes)", bytes);
  return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating tensor with shape%s and type %s on host%s",
                       sm_shape_str(rank, dims, sh, sizeof sh), tf_type_name(dtype, ty, sizeof ty), nb);
}

/* A header for dtype/shape (n elements, nbytes raw) with no buffer yet, and `extra` zeroed bytes
 * after it (at HEADER_BYTES) for inline elements; NULL when out of memory. */
static sm_tensor *header_new(int dtype, int rank, const int64_t *dims, int64_t n, size_t nbytes, size_t extra) {
  sm_tensor *t = sm__calloc(extra ? HEADER_BYTES + extra : sizeof *t);
  if (!t) return NULL;
  t->dtype = dtype;
  t->rank = rank;
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  t->n = n;
  t->nbytes = nbytes;
  t->buf.space = SM_MEM_HOST;
  atomic_init(&t->refs, 1);
  static atomic_uint_fast64_t next_uid = 1;
  t->uid = (uint64_t)atomic_fetch_add_explicit(&next_uid, 1, memory_order_relaxed);
  return t;
}

uint64_t sm__tensor_uid(const sm_tensor *t) { return t ? t->uid : 0; }

static sm_status *check_shape(int dtype, int rank, const int64_t *dims, int64_t *n, size_t *nbytes) {
  if (rank < 0 || rank > SM_MAX_RANK)
    return sm_status_new(SM_OUT_OF_RANGE, "tensor rank %d is outside 0..%d", rank, SM_MAX_RANK);
  if (rank > 0 && !dims) return sm_status_new(SM_INVALID_ARGUMENT, "tensor of rank %d without dims", rank);
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "tensor dim %d is negative (%lld)", i, (long long)dims[i]);
  if (sm__num_elements(rank, dims, n))
    return sm_status_new(SM_OUT_OF_RANGE, "tensor element count overflows");
  /* Resource handles are pointers to runtime objects; they live only in memory, never in files. */
  size_t esize = dtype == SM_STRING ? sizeof(tstring)
                 : dtype == SM_RESOURCE || dtype == SM_VARIANT ? sizeof(void *)
                                                               : sm_dtype_size(dtype);
  if (esize == 0) {
    const char *name = sm_dtype_name(dtype);
    return sm_status_new(SM_UNIMPLEMENTED, "tensors of dtype %s are not supported",
                         name ? name : "(unknown)");
  }
  uint64_t b;
  if (sm__mul_u64((uint64_t)*n, esize, &b) || b > SM_MAX_TENSOR_BYTES)
    return sm_status_new(SM_OUT_OF_RANGE, "tensor of %lld elements is larger than the %llu-byte limit",
                         (long long)*n, (unsigned long long)SM_MAX_TENSOR_BYTES);
  *nbytes = dtype == SM_STRING || dtype == SM_VARIANT ? 0 : (size_t)b; /* no raw bytes */
  return NULL;
}

sm_status *sm__tensor_alloc_bytes(int dtype, int rank, const int64_t *dims, size_t *bytes) {
  int64_t n;
  size_t nbytes;
  *bytes = 0;
  sm_status *s = check_shape(dtype, rank, dims, &n, &nbytes);
  if (s) return s;
  *bytes = dtype == SM_STRING ? (size_t)n * sizeof(tstring) : dtype == SM_VARIANT ? (size_t)n * sizeof(void *) : nbytes;
  return NULL;
}

static sm_status *tensor_new(int dtype, int rank, const int64_t *dims, int zero, sm_tensor **out) {
  *out = NULL;
  int64_t n;
  size_t nbytes;
  sm_status *s = check_shape(dtype, rank, dims, &n, &nbytes);
  if (s) return s;
  size_t alloc = dtype == SM_STRING ? (size_t)n * sizeof(tstring) : dtype == SM_VARIANT ? (size_t)n * sizeof(void *) : nbytes;
  if (alloc > 0 && alloc <= INLINE_MAX) { /* one block, zeroed either way */
    sm_tensor *t = header_new(dtype, rank, dims, n, nbytes, alloc);
    if (!t) return oom(dtype, rank, dims, alloc);
    t->buf.data = (char *)t + HEADER_BYTES;
    t->buf.owned = t->buf.inl = 1;
    *out = t;
    return NULL;
  }
  sm_tensor *t = header_new(dtype, rank, dims, n, nbytes, 0);
  if (!t) return oom(dtype, rank, dims, alloc);
  t->buf.data = zero || dtype == SM_STRING || dtype == SM_VARIANT ? sm__calloc(alloc) : sm__alloc(alloc);
  if (!t->buf.data) {
    sm__free(t);
    return oom(dtype, rank, dims, alloc);
  }
  t->buf.owned = 1;
  *out = t;
  return NULL;
}

sm_status *sm_tensor_new(int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  return tensor_new(dtype, rank, dims, 1, out);
}

sm_status *sm__tensor_new_uninit(int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  return tensor_new(dtype, rank, dims, 0, out);
}

sm_status *sm_tensor_wrap(int dtype, int rank, const int64_t *dims, void *data, size_t nbytes,
                          void (*release)(void *), void *release_ctx, sm_tensor **out) {
  *out = NULL;
  if (dtype == SM_STRING || dtype == SM_VARIANT)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_tensor_wrap: %s tensors cannot wrap raw memory",
                         dtype == SM_STRING ? "DT_STRING" : "DT_VARIANT");
  int64_t n;
  size_t want;
  sm_status *s = check_shape(dtype, rank, dims, &n, &want);
  if (s) return s;
  if (want != nbytes)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_tensor_wrap: %zu bytes given, shape needs %zu", nbytes, want);
  sm_tensor *t = header_new(dtype, rank, dims, n, nbytes, 0);
  if (!t) return oom(dtype, rank, dims, 0);
  t->buf.data = data;
  t->buf.release = release;
  t->buf.release_ctx = release_ctx;
  *out = t;
  return NULL;
}

sm_status *sm_tensor_copy(const sm_tensor *t, sm_tensor **out) {
  if (t->buf.space != SM_MEM_HOST) {
    *out = NULL;
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_tensor_copy: the tensor's elements are in device memory");
  }
  sm_status *s = sm_tensor_new(t->dtype, t->rank, t->dims, out);
  if (s) return s;
  if (t->dtype == SM_VARIANT) {
    sm_variant **a = t->buf.data, **b = (*out)->buf.data;
    for (int64_t i = 0; i < t->n; i++) b[i] = sm__variant_ref(a[i]);
    return NULL;
  }
  if (t->dtype != SM_STRING) {
    if (t->nbytes) memcpy((*out)->buf.data, t->buf.data, t->nbytes);
    return NULL;
  }
  const tstring *ss = t->buf.data;
  for (int64_t i = 0; i < t->n && !s; i++) s = sm_tensor_set_string(*out, i, ss[i].ptr, ss[i].len);
  if (s) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return s;
}

sm_tensor *sm_tensor_ref(sm_tensor *t) {
  if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

int sm_tensor_is_shared(const sm_tensor *t) {
  /* Borrowed memory (a view, a read-only mapped checkpoint) is never written in place. */
  if (!t->buf.owned) return 1;
  return atomic_load_explicit(&((sm_tensor *)t)->refs, memory_order_acquire) > 1;
}

static void release_base(void *base) { sm_tensor_free(base); }

sm_status *sm_tensor_view(sm_tensor *base, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  int64_t n;
  size_t nbytes;
  sm_status *s = check_shape(base->dtype, rank, dims, &n, &nbytes);
  if (s) return s;
  if (n != base->n) {
    char a[64], b[64];
    return sm_status_new(SM_INVALID_ARGUMENT, "cannot view a tensor of shape %s (%lld elements) as %s (%lld elements)",
                         sm_shape_str(base->rank, base->dims, a, sizeof a), (long long)base->n,
                         sm_shape_str(rank, dims, b, sizeof b), (long long)n);
  }
  sm_tensor *t = header_new(base->dtype, rank, dims, n, base->nbytes, 0);
  if (!t) return oom(base->dtype, rank, dims, 0);
  t->buf.data = base->buf.data;
  t->buf.space = base->buf.space;
  t->buf.file_ro = base->buf.file_ro;
  t->buf.release = release_base;
  t->buf.release_ctx = sm_tensor_ref(base);
  t->uid = base->uid; /* the same elements (sm__tensor_uid): a cache keyed on the base serves the view */
  *out = t;
  return NULL;
}

void sm_tensor_free(sm_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
  if (t->buf.owned) {
    if (t->dtype == SM_STRING) {
      tstring *ss = t->buf.data;
      for (int64_t i = 0; i < t->n; i++) sm__free(ss[i].ptr);
    } else if (t->dtype == SM_VARIANT) {
      sm_variant **vs = t->buf.data;
      for (int64_t i = 0; i < t->n; i++) sm__variant_unref(vs[i]);
    }
    if (!t->buf.inl) sm__free(t->buf.data);
  } else if (t->buf.release) {
    t->buf.release(t->buf.release_ctx);
  }
  sm__free(t);
}

int sm__tensor_space(const sm_tensor *t) { return t->buf.space; }
void sm__tensor_set_space(sm_tensor *t, int space) { t->buf.space = space; }

void sm__tensor_set_file_backed(sm_tensor *t) {
  if (t && !t->buf.owned) t->buf.file_ro = 1;
}

int sm__tensor_file_backed(const sm_tensor *t) { return t && t->buf.file_ro; }

void sm__tensor_drop_pages(const sm_tensor *t) {
  if (t && t->buf.file_ro && t->nbytes) sm__file_map_drop_pages(t->buf.data, t->nbytes);
}

int sm_tensor_dtype(const sm_tensor *t) { return t->dtype; }
int sm_tensor_rank(const sm_tensor *t) { return t->rank; }
const int64_t *sm_tensor_dims(const sm_tensor *t) { return t->dims; }
int64_t sm_tensor_num_elements(const sm_tensor *t) { return t->n; }
void *sm_tensor_data(const sm_tensor *t) { return t->dtype == SM_STRING || t->dtype == SM_VARIANT ? NULL : t->buf.data; }

sm_variant **sm__tensor_variants(const sm_tensor *t) { return t->dtype == SM_VARIANT ? t->buf.data : NULL; }

void sm__variant_init(sm_variant *v, const char *type_name, void (*release)(sm_variant *)) {
  atomic_init(&v->refs, 1);
  v->type_name = type_name;
  v->release = release;
}

sm_variant *sm__variant_ref(sm_variant *v) {
  if (v) atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
  return v;
}

void sm__variant_unref(sm_variant *v) {
  if (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) v->release(v);
}

int sm__variant_is_shared(const sm_variant *v) {
  return atomic_load_explicit(&((sm_variant *)v)->refs, memory_order_acquire) > 1;
}
size_t sm_tensor_nbytes(const sm_tensor *t) { return t->nbytes; }

const char *sm_tensor_string(const sm_tensor *t, int64_t i, size_t *len) {
  if (t->dtype != SM_STRING || i < 0 || i >= t->n) {
    if (len) *len = 0;
    return NULL;
  }
  const tstring *ss = t->buf.data;
  if (len) *len = ss[i].len;
  return ss[i].ptr ? ss[i].ptr : "";
}

sm_status *sm_tensor_set_string(sm_tensor *t, int64_t i, const void *bytes, size_t len) {
  if (t->dtype != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "not a DT_STRING tensor");
  if (i < 0 || i >= t->n)
    return sm_status_new(SM_OUT_OF_RANGE, "string index %lld outside 0..%lld", (long long)i, (long long)t->n);
  /* +1: a NUL after the bytes makes printing easy; not part of len */
  char *p = len < SIZE_MAX ? sm__alloc(len + 1) : NULL;
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a %zu-byte string of a tensor", len);
  if (len) memcpy(p, bytes, len);
  p[len] = 0;
  tstring *ss = t->buf.data;
  sm__free(ss[i].ptr);
  ss[i].ptr = p;
  ss[i].len = len;
  return NULL;
}

int sm_tensor_equal(const sm_tensor *a, const sm_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  if (a->dtype == SM_VARIANT) { /* the same objects */
    return a->n == 0 || memcmp(a->buf.data, b->buf.data, (size_t)a->n * sizeof(void *)) == 0;
  }
  if (a->dtype == SM_STRING) {
    const tstring *x = a->buf.data, *y = b->buf.data;
    for (int64_t i = 0; i < a->n; i++)
      if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].ptr, y[i].ptr, x[i].len))) return 0;
    return 1;
  }
  return a->nbytes == b->nbytes && (a->nbytes == 0 || memcmp(a->buf.data, b->buf.data, a->nbytes) == 0);
}

const char *sm_shape_str(int rank, const int64_t *dims, char *buf, size_t cap) {
  size_t k = 0;
  if (cap == 0) return buf;
  buf[0] = 0;
  k += (size_t)snprintf(buf + k, cap - k, "[");
  for (int i = 0; i < rank && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}
