/* bundle_internal.h - pieces of the bundle code that tests and other layers may use directly. */
#ifndef SM_FORMAT_BUNDLE_INTERNAL_H
#define SM_FORMAT_BUNDLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/file.h"
#include "savedmodel/bundle.h"

/* sm_bundle_open with the caller's way of opening the index and data files (RestoreV2 passes the
 * runtime's confined opener, sm__kctx_open_file); open NULL is sm__file_map_open. */
typedef sm_status *(*sm__bundle_opener)(void *ctx, const char *path, sm_file_map *m);
sm_status *sm__bundle_open_with(const char *prefix, sm__bundle_opener open, void *ctx, sm_bundle **out);

/* The key TF stores one slice of a partitioned tensor under (saved_tensor_slice_util.cc
 * EncodeTensorNameSlice, OrderedCode). lengths[d] < 0 means the whole dimension. Returns a
 * malloc'ed buffer of *len bytes (it contains NULs), or NULL when out of memory. */
uint8_t *sm__encode_tensor_name_slice(const char *name, size_t name_len, int rank, const int64_t *starts,
                                     const int64_t *lengths, size_t *len);

/* OrderedCode pieces, exposed for tests: each writes into out (>= 10 bytes) and returns the
 * number of bytes written. */
size_t sm__ordered_num_increasing(uint8_t *out, uint64_t v);
size_t sm__ordered_signed_num_increasing(uint8_t *out, int64_t v);

/* Writes one slice of a partitioned tensor, as TF's BundleWriter::AddSlice: the slice data goes
 * under its encoded key, and the full tensor's entry (dtype, full shape) lists the slice.
 * lengths[d] < 0 means the whole dimension (then starts[d] must be 0). */
sm_status *sm__bundle_writer_add_slice(sm_bundle_writer *w, const char *key, int rank, const int64_t *full_dims,
                                      const int64_t *starts, const int64_t *lengths, const sm_tensor *slice);

#endif
