/* fingerprint.h - FarmHash Fingerprint64, TensorFlow's FingerprintCat64 and protobuf's
 * deterministic serialization, which fingerprint.pb's hashes are computed over. */
#ifndef SM_BUILDER_FINGERPRINT_H
#define SM_BUILDER_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "base/farmhash.h"
#include "savedmodel/status.h"


/* m serialized as C++ protobuf does with SetSerializationDeterministic(true): fields in number
 * order, map entries sorted by key with key and value always written, unknown fields last.
 * *out is malloc'ed (caller frees); NULL m gives the empty message. */
sm_status *sm__pb_serialize_deterministic(const ProtobufCMessage *m, uint8_t **out, size_t *len);

#endif
