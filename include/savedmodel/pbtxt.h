/* pbtxt.h - protobuf text format for any protobuf-c message, with TensorFlow's conventions.
 *
 * Printing follows what TensorFlow writes in saved_model.pbtxt (Python str(proto) / C++
 * TextFormat): `name: value` for scalars, `name {` ... `}` blocks indented by two spaces, map
 * entries as repeated `key:` / `value` blocks, enums by symbolic name, strings and bytes quoted
 * with C escapes (3-digit octal for other non-printable bytes). Parsing accepts everything the
 * protobuf text parser accepts for these schemas (comments, `<>` blocks, optional colons, list
 * syntax `[a, b]`, adjacent string concatenation, enum numbers, expanded Any). */
#ifndef SAVEDMODEL_PBTXT_H
#define SAVEDMODEL_PBTXT_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Prints msg. *out is malloc'ed and NUL-terminated; the caller frees it. */
SM_API sm_status *sm_pbtxt_print(const ProtobufCMessage *msg, char **out, size_t *len);

/* Parses text as a message of type desc. `what` names the input in error messages (a path);
 * errors give line and column. desc is one the caller has (its own protoc-c output's, or the
 * `base.descriptor` of a message this library returned: the library's tensorflow__* descriptors
 * are not exported). On success *out is a message the caller frees with
 * protobuf_c_message_free_unpacked(*out, NULL). */
SM_API sm_status *sm_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                                 const char *what, ProtobufCMessage **out);

#ifdef __cplusplus
}
#endif
#endif
