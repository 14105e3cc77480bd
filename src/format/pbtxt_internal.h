/* pbtxt_internal.h - what the text printer and parser share about protobuf-c messages: field
 * storage, presence, map entries, the registry of message types for expanded Any, and in-place
 * map sorting (deterministic serialization needs it too). */
#ifndef SM_FORMAT_PBTXT_INTERNAL_H
#define SM_FORMAT_PBTXT_INTERNAL_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "savedmodel/status.h"

/* Deepest message nesting the printer, parser and map sorter accept (C++ protobuf's default
 * recursion limit for binary parsing). */
#define SM_PBTXT_MAX_DEPTH 100

/* Bytes one value of type t occupies in a message or repeated array. */
size_t sm__pb_value_size(ProtobufCType t);

/* 1 when field f of m would be printed (and serialized) by protobuf: repeated with elements,
 * the selected oneof member, a proto2 field with its has_ flag, a proto3 scalar with non-zero
 * bits, a present sub-message. */
int sm__pb_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);

/* 1 when f is a map field: protoc-c turns `map<K, V> x` into a repeated nested `XEntry` message
 * with exactly `key = 1` and `value = 2`, and keeps no map flag, so this is recognised by shape. */
int sm__pb_is_map_field(const ProtobufCFieldDescriptor *f);

/* Compares the keys of two entries of one map type, in the order protobuf's printers sort them
 * (strings bytewise, integers numerically, false before true). */
int sm__pb_map_key_cmp(const ProtobufCMessageDescriptor *entry, const ProtobufCMessage *a,
                      const ProtobufCMessage *b);

/* Sorts the entries of every map field in msg and its sub-messages by key (stable), as
 * deterministic serialization and the text printer order them. */
sm_status *sm__pb_sort_maps(ProtobufCMessage *msg);

/* Makes a message type known to the expanded Any syntax `[type.googleapis.com/<name>] {...}`.
 * Types reachable from the message being parsed are found without registering. Call before
 * parsing on other threads; at most 64 types. */
sm_status *sm__pbtxt_register_type(const ProtobufCMessageDescriptor *desc);

/* The message type with this full name ("tensorflow.AssetFileDef"): a registered one, or one
 * reachable through the fields of root. NULL if none. */
const ProtobufCMessageDescriptor *sm__pbtxt_find_type(const ProtobufCMessageDescriptor *root,
                                                     const char *full_name);

#endif
