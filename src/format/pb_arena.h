/* pb_arena.h - a bump allocator for protobuf-c unpack: one message tree, freed all at once.
 *
 * A parsed saved_model.pb is tens of thousands of small allocations; with malloc, unpacking and
 * freeing them costs more than reading the bytes (bench/RESULTS.md). Here they are carved out of
 * large blocks and released together. The message tree is then read-only in shape: its arrays
 * must not be realloc'ed nor its pieces freed one by one. */
#ifndef SM_FORMAT_PB_ARENA_H
#define SM_FORMAT_PB_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "savedmodel/status.h"

/* Unpacks `data` (already checked by sm_pb_check) into an arena. On success the message is the
 * first allocation of the arena's first block, so sm_pb_arena_free can find the arena from it. */
sm_status *sm_pb_arena_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what, ProtobufCMessage **out);

/* Frees a message returned by sm_pb_arena_unpack (NULL-safe). */
void sm_pb_arena_free(ProtobufCMessage *msg);

#endif
