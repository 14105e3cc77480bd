/* pb_decode.h - our own single-pass protobuf decoder into protobuf-c's generated structs.
 *
 * It fills the same structs protobuf_c_message_unpack fills (so nothing downstream changes), in an
 * arena (pb_arena.h), with sm_pb_check's validation folded in. It handles what real files hold;
 * anything it is not sure to treat exactly as protobuf-c does (a singular message field given
 * twice, which protobuf-c merges; non-minimal varint headers; any malformation) makes it give up,
 * and sm__pb_decode then runs the old path (sm_pb_check + protobuf-c's unpack), so results and error
 * messages stay those of that path. */
#ifndef SM_FORMAT_PB_DECODE_H
#define SM_FORMAT_PB_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "savedmodel/status.h"

/* Decodes `data` as a `desc` message into an arena; free the result with sm__pb_arena_free.
 * `what` names the input in error messages. Same answers as sm_pb_check then sm__pb_arena_unpack. */
sm_status *sm__pb_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                        const char *what, ProtobufCMessage **out);

/* The fast path alone (for tests): 0 and *out set (free with sm__pb_arena_free) when it decoded the
 * input, 1 when it gave up (invalid input, or a case left to protobuf-c), -1 out of memory. */
int sm__pb_decode_fast(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                      ProtobufCMessage **out);

/* The same with its options set by hand (for tests): repeated message elements of at most
 * `defer_max` bytes met outside such an element are decoded after the first pass by `threads`
 * threads (1: no deferral, everything in one pass); `share`: identical small submessages decoded
 * once and pointed to again. sm__pb_decode_fast uses the machine's CPUs (up to 4) for inputs of
 * 256 KiB or more, with defer_max = len / 32, and shares. */
int sm__pb_decode_fast_opts(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           ProtobufCMessage **out, int threads, size_t defer_max, int share);

#endif
