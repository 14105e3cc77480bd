/* tensor_internal.h - tensor functions for the library's own use, not part of the public API. */
#ifndef SM_BASE_TENSOR_INTERNAL_H
#define SM_BASE_TENSOR_INTERNAL_H
#include <stdint.h>

#include "savedmodel/tensor.h"

/* sm_tensor_new without zeroing the elements (DT_STRING is still initialised): for the runtime's
 * kernels that write every element, where the zero fill is pure cost. The caller owns *out. */
sm_status *sm__tensor_new_uninit(int dtype, int rank, const int64_t *dims, sm_tensor **out);

/* The bytes sm_tensor_new would allocate for this dtype and shape (elements, or string / variant
 * slots; the header not included), with the same checks and errors, allocating nothing. */
sm_status *sm__tensor_alloc_bytes(int dtype, int rank, const int64_t *dims, size_t *bytes);

/* The memory space a tensor's buffer lives in: host memory, or a device backend's (kernel.h's
 * sm_backend; runtime/device.h), whose kernels check it on their inputs. A view has its base's
 * space; wrapped memory is host memory unless sm__tensor_set_space says otherwise (a device
 * backend wraps the device memory it allocates: sm_tensor_wrap + this). The elements of a device
 * tensor are not host memory: sm_tensor_data gives the device pointer, sm_tensor_copy refuses it. */
typedef enum sm_memspace { SM_MEM_HOST = 0, SM_MEM_DEVICE = 1 } sm_memspace;
int sm__tensor_space(const sm_tensor *t); /* an sm_memspace */
void sm__tensor_set_space(sm_tensor *t, int space);

/* A tensor wrapped (sm_tensor_wrap) over memory of a read-only file mapping (base/file.h, mapped
 * 1: a checkpoint's data shard, format/bundle.c) is marked so, and its views inherit the mark.
 * sm__tensor_drop_pages gives back the resident pages of such a tensor's elements
 * (sm__file_map_drop_pages: they fault in again from the file when read, same bytes); for any
 * other tensor it does nothing. For a kernel that uses a weight only through a derived copy it
 * keeps (a folded filter, nn_fold.c), so the weight is not resident twice. */
void sm__tensor_set_file_backed(sm_tensor *t);
int sm__tensor_file_backed(const sm_tensor *t); /* 1 where so marked */
void sm__tensor_drop_pages(const sm_tensor *t);

/* A number no other tensor of this process has had or will have (0 for NULL), except that a view
 * (sm_tensor_view) has its base's: it names the same elements, which neither writes while the view
 * lives. With the buffer's address it names one tensor's contents where the runtime never writes
 * a value in place: a variable's assign installs a new tensor (state.c), so a cache of something
 * derived from a weight (oneDNN's packed filters, nn_dnnl.c) keyed by (data, uid) goes stale on
 * every assign and never matches a later tensor that reuses a freed buffer; and a weight seen
 * through a Reshape (a view made anew each run: Keras' EinsumDense kernels) packs once, not per run. */
uint64_t sm__tensor_uid(const sm_tensor *t);

#endif
