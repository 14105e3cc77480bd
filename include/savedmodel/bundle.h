/* bundle.h - the variables bundle (TensorFlow's TensorBundle V2 checkpoint format).
 *
 * A bundle is `PREFIX.index` (an SSTable mapping keys to BundleEntryProto, the key "" holding the
 * BundleHeaderProto) plus data shards `PREFIX.data-00000-of-0000N`. In a SavedModel the prefix is
 * EXPORT_DIR/variables/variables. Every CRC is verified on read; damage is reported with the file
 * and the entry. */
#ifndef SAVEDMODEL_BUNDLE_H
#define SAVEDMODEL_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_bundle sm_bundle;

/* What the index says about one tensor. Pointers are owned by the bundle and valid until it is
 * closed. */
typedef struct sm_bundle_entry {
  const char *key;      /* checkpoint key, e.g. "a" or "dense/kernel/.ATTRIBUTES/VARIABLE_VALUE" */
  int dtype;            /* sm_dtype */
  int rank;
  const int64_t *dims;  /* rank entries */
  int sliced;           /* 1: a partitioned variable assembled from slices on read */
} sm_bundle_entry;

/* Opens PREFIX.index, checks its footer, every block checksum and the header entry, and maps the
 * data shards. The caller owns *out and closes it with sm_bundle_close(). */
SM_API sm_status *sm_bundle_open(const char *prefix, sm_bundle **out);
SM_API void sm_bundle_close(sm_bundle *b); /* NULL-safe */

SM_API int sm_bundle_num_shards(const sm_bundle *b);
/* Tensor entries in key order (the header and the slice entries of partitioned tensors are not
 * counted). */
SM_API size_t sm_bundle_num_entries(const sm_bundle *b);
SM_API sm_status *sm_bundle_entry_at(const sm_bundle *b, size_t i, sm_bundle_entry *out);
SM_API sm_status *sm_bundle_lookup(const sm_bundle *b, const char *key, sm_bundle_entry *out);

/* Reads one tensor, verifying its checksum. Large fixed-size tensors are not copied where the
 * data is suitably aligned: the tensor then borrows the bundle's mapping and keeps it alive on
 * its own, so it may outlive the bundle. The caller owns *out. */
SM_API sm_status *sm_bundle_read(const sm_bundle *b, const char *key, sm_tensor **out);
/* Zero-copy tensors (from sm_bundle_read) are over a read-only mapping: do not write to their
 * data. This variant always returns a tensor that owns a private, writable copy. */
SM_API sm_status *sm_bundle_read_copy(const sm_bundle *b, const char *key, sm_tensor **out);

typedef struct sm_bundle_writer sm_bundle_writer;

/* Starts a bundle at PREFIX (one data shard, uncompressed index, as TensorFlow's BundleWriter).
 * Files are written under temporary names and renamed into place by finish. */
SM_API sm_status *sm_bundle_writer_open(const char *prefix, sm_bundle_writer **out);
/* Appends a tensor under key (unique, not ""). The tensor is copied; the caller keeps it. */
SM_API sm_status *sm_bundle_writer_add(sm_bundle_writer *w, const char *key, const sm_tensor *t);
/* Writes the index and renames both files into place. */
SM_API sm_status *sm_bundle_writer_finish(sm_bundle_writer *w);
/* Frees the writer; if finish was not called (or failed) its temporary files are removed. */
SM_API void sm_bundle_writer_free(sm_bundle_writer *w);

#ifdef __cplusplus
}
#endif
#endif
