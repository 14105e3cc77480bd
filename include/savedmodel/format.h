/* format.h - saved_model.pb / saved_model.pbtxt: read, write, pick a MetaGraph by tags.
 *
 * The messages are the protobuf-c structs generated from proto/ (e.g. Tensorflow__SavedModel from
 * saved_model.proto, Tensorflow__MetaGraphDef from meta_graph.proto). Unknown fields survive a
 * read/write round trip of the binary form. The generated headers are installed for the structs'
 * layout only: the generated code itself (tensorflow__*__descriptor, tensorflow__*__unpack, ...)
 * is internal to the library and not exported from libsavedmodel.so, so do not call it.
 *
 * A SavedModel returned by sm_saved_model_read or sm_saved_model_parse lives in one arena: free it
 * only with sm_saved_model_free, never piece by piece. Treat it as read-only: small submessages
 * that are the same bytes in the file (a `T: DT_FLOAT` attr, an `_output_shapes` list, an empty
 * shape) may be one message pointed to from every place, so a change in one place shows in all
 * of them. To make or change a model, use builder.h (graphs through graph_builder.h, signatures,
 * variables, assets) and write it with sm_builder_save. */
#ifndef SAVEDMODEL_FORMAT_H
#define SAVEDMODEL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "saved_model.pb-c.h"
#include "savedmodel/api.h"
#include "savedmodel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads EXPORT_DIR/saved_model.pb, or saved_model.pbtxt when there is no .pb (as TensorFlow).
 * A directory with neither gets a "not a SavedModel" error naming what is missing (and what is
 * there instead, e.g. a legacy SessionBundle's export.meta). The caller frees *out with
 * sm_saved_model_free(). */
SM_API sm_status *sm_saved_model_read(const char *export_dir, Tensorflow__SavedModel **out);

/* Parses binary SavedModel bytes; `what` names the input in errors. Nesting deeper than
 * SM_PB_MAX_DEPTH is refused before decoding. Inputs of 256 KiB or more are decoded on up to 4
 * threads (as many as the machine has CPUs), started and joined within the call. */
#define SM_PB_MAX_DEPTH 100
/* Input whose decoded form would take more than this many times its size (plus 64 MiB) is
 * refused: real files need a few times, files of tiny repeated messages over 100 times. */
#define SM_PB_MAX_EXPANSION 32
SM_API sm_status *sm_saved_model_parse(const uint8_t *data, size_t len, const char *what,
                                       Tensorflow__SavedModel **out);

/* The same guards for any binary message (fingerprint.pb, bundle entries, ...): sm_pb_check walks
 * the wire format with desc's schema and refuses malformed varints, lengths past the end, wire
 * types that contradict the schema, groups, nesting deeper than SM_PB_MAX_DEPTH, and input that
 * would decode to more than SM_PB_MAX_EXPANSION times its size (+ 64 MiB); sm_pb_parse checks then
 * decodes. `what` names the input in errors. desc is one the caller has: its own protoc-c
 * output's, or the `base.descriptor` of a message this library returned (the library's
 * tensorflow__* descriptors are not exported). The caller frees *out with
 * protobuf_c_message_free_unpacked(*out, NULL). */
SM_API sm_status *sm_pb_check(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what);
SM_API sm_status *sm_pb_parse(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what, ProtobufCMessage **out);

/* Writes EXPORT_DIR/saved_model.pb (as_text = 0) or saved_model.pbtxt (as_text = 1), atomically.
 * The directory must exist. */
SM_API sm_status *sm_saved_model_write(const Tensorflow__SavedModel *sm, const char *export_dir, int as_text);

SM_API void sm_saved_model_free(Tensorflow__SavedModel *sm); /* NULL-safe */

/* The MetaGraph whose tag set equals `tags` (order and duplicates ignored), as TensorFlow matches.
 * When none does, the error lists the tag-sets there are. *out points into sm. */
SM_API sm_status *sm_saved_model_find_meta_graph(const Tensorflow__SavedModel *sm, const char *const *tags,
                                                 size_t ntags, const Tensorflow__MetaGraphDef **out);

#ifdef __cplusplus
}
#endif
#endif
