/* pb_util.h - rules the binary and the text parsers share, so that a message one accepts the
 * other accepts too (savedmodel_io.c implements them). */
#ifndef SM_FORMAT_PB_UTIL_H
#define SM_FORMAT_PB_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* 1 if p[0..n) is well-formed UTF-8. */
int sm__utf8_valid(const uint8_t *p, size_t n);
/* 1 if the string fields of messages of type d must hold valid UTF-8 (proto3 messages; the
 * schema's one proto2 message, GraphDebugInfo, is exempt as in protobuf). */
int sm__pb_strict_utf8(const ProtobufCMessageDescriptor *d);

#endif
