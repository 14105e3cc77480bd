/* tensor.h - the one tensor type every layer of libsavedmodel passes around.
 *
 * A tensor is a dtype, a shape (rank + dims, row-major) and its elements. Fixed-size dtypes keep
 * raw little-endian elements in one buffer; DT_STRING keeps an array of byte strings, each of any
 * length (they are bytes, not C strings, and may contain NUL). A tensor owns its data, or borrows
 * it from someone else (a mapped file) and calls a release function when it is freed. */
#ifndef SAVEDMODEL_TENSOR_H
#define SAVEDMODEL_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/dtype.h"
#include "savedmodel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TensorFlow allows up to 254 dims; this library stops at 64 to keep shapes on the stack. */
#define SM_MAX_RANK 64
/* The largest tensor this library will allocate or read, in bytes (16 GiB). */
#define SM_MAX_TENSOR_BYTES ((uint64_t)1 << 34)

typedef struct sm_tensor sm_tensor;

/* A new tensor with zeroed elements (empty strings for DT_STRING). Fails on negative dims,
 * element counts that overflow, sizes past SM_MAX_TENSOR_BYTES and dtypes with no storage here
 * (sub-byte types). DT_RESOURCE elements are `void *` handles to runtime objects (a
 * variable, a table); DT_VARIANT elements are references to refcounted runtime objects (a
 * TensorList), empty when new; both exist only in memory and no file format takes them. Out of memory is SM_RESOURCE_EXHAUSTED ("OOM
 * when allocating tensor with shape[...] and type ..."). The caller owns *out. */
SM_API sm_status *sm_tensor_new(int dtype, int rank, const int64_t *dims, sm_tensor **out);

/* A tensor over memory it does not own. `nbytes` must equal elements x element size. When the
 * tensor is freed, release(release_ctx) is called (release may be NULL). Fixed-size dtypes only. */
SM_API sm_status *sm_tensor_wrap(int dtype, int rank, const int64_t *dims, void *data, size_t nbytes,
                                 void (*release)(void *ctx), void *release_ctx, sm_tensor **out);

/* A deep copy that owns its data (strings included; DT_VARIANT elements are shared objects, so
 * the copy holds one more reference on each). The caller owns *out. */
SM_API sm_status *sm_tensor_copy(const sm_tensor *t, sm_tensor **out);

/* Tensors are reference counted so that a runtime can hand one buffer to several consumers:
 * sm_tensor_ref adds a reference (and returns t), sm_tensor_free drops one, and the last drop
 * releases the tensor. A tensor with more than one reference, or over memory it does not own (a
 * view, a wrapped or mapped buffer), is shared and must not be written;
 * sm_tensor_is_shared says whether that is so. The count is atomic: references to one tensor may
 * be taken and dropped from several threads. */
SM_API sm_tensor *sm_tensor_ref(sm_tensor *t);
SM_API int sm_tensor_is_shared(const sm_tensor *t);
SM_API void sm_tensor_free(sm_tensor *t); /* NULL-safe; drops one reference */
/* A tensor with another shape over the same elements as `base` (same element count, any dtype):
 * it holds a reference on base, so base may be freed first. Writing through either writes both. */
SM_API sm_status *sm_tensor_view(sm_tensor *base, int rank, const int64_t *dims, sm_tensor **out);

SM_API int sm_tensor_dtype(const sm_tensor *t);
SM_API int sm_tensor_rank(const sm_tensor *t);
SM_API const int64_t *sm_tensor_dims(const sm_tensor *t); /* rank entries */
SM_API int64_t sm_tensor_num_elements(const sm_tensor *t);
/* Raw element bytes of a fixed-size tensor; NULL for DT_STRING and DT_VARIANT. */
SM_API void *sm_tensor_data(const sm_tensor *t);
/* Bytes of the raw buffer (elements x element size); 0 for DT_STRING and DT_VARIANT. */
SM_API size_t sm_tensor_nbytes(const sm_tensor *t);

/* DT_STRING elements. get returns a pointer owned by the tensor (valid until it changes) and its
 * length; set copies `len` bytes. Index out of range or a non-string tensor is an error. */
SM_API const char *sm_tensor_string(const sm_tensor *t, int64_t i, size_t *len);
SM_API sm_status *sm_tensor_set_string(sm_tensor *t, int64_t i, const void *bytes, size_t len);

/* 1 when dtype, shape and every element are equal (bitwise for numbers). */
SM_API int sm_tensor_equal(const sm_tensor *a, const sm_tensor *b);

/* "[2,3]" style shape text, written into buf (always NUL-terminated). */
SM_API const char *sm_shape_str(int rank, const int64_t *dims, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
