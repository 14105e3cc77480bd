/* pb_arena.h - a bump allocator for decoded protobuf messages: one message tree, freed all at once.
 *
 * A parsed saved_model.pb is tens of thousands of small allocations; with malloc, unpacking and
 * freeing them costs more than reading the bytes (bench/RESULTS.md). Here they are carved out of
 * large blocks and released together. The message tree is then read-only in shape: its arrays
 * must not be realloc'ed nor its pieces freed one by one.
 *
 * Two fillers: protobuf-c's own unpack (sm__pb_arena_unpack, through a ProtobufCAllocator) and our
 * decoder (pb_decode.c, through sm__pb_arena_begin / sm__pb_arena_alloc, inlined bump). */
#ifndef SM_FORMAT_PB_ARENA_H
#define SM_FORMAT_PB_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "savedmodel/status.h"

/* Unpacks `data` (already checked by sm_pb_check) into an arena. On success the message is the
 * first allocation of the arena's first block, so sm__pb_arena_free can find the arena from it. */
sm_status *sm__pb_arena_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what, ProtobufCMessage **out);

/* Frees a message returned by sm__pb_arena_unpack or built by sm__pb_arena_begin (NULL-safe). */
void sm__pb_arena_free(ProtobufCMessage *msg);

/* ---- direct filling (pb_decode.c) ---- */

/* The bump pointer of the current block; the rest of the arena is private to pb_arena.c. */
typedef struct sm_pb_arena {
  unsigned char *cur, *lim;
} sm_pb_arena;

/* Starts an arena whose first allocation, `root_size` bytes (a message), is returned in *root:
 * sm__pb_arena_free(*root) frees it all. NULL when out of memory. */
sm_pb_arena *sm__pb_arena_begin(size_t root_size, void **root);
/* The slow path of sm__pb_arena_alloc: a new block. NULL when out of memory. */
void *sm__pb_arena_alloc_slow(sm_pb_arena *a, size_t size);
/* Throws away an arena from sm__pb_arena_begin that was not handed out. */
void sm__pb_arena_discard(sm_pb_arena *a);

/* An arena for another thread to fill while `parent` waits: its blocks come from the parent's
 * spare list (under a lock) or from malloc, and sm__pb_arena_join hands them all to the parent,
 * which frees them with the rest. The parent must not allocate while it has children. NULL when
 * out of memory. */
sm_pb_arena *sm__pb_arena_fork(sm_pb_arena *parent);
/* Moves the child's blocks into the parent and ends the child (NULL-safe). */
void sm__pb_arena_join(sm_pb_arena *parent, sm_pb_arena *child);

/* 8-byte aligned allocation (what protobuf-c's structs need). */
static inline void *sm__pb_arena_alloc(sm_pb_arena *a, size_t size) {
  size = (size + 7) & ~(size_t)7;
  if (size <= (size_t)(a->lim - a->cur)) {
    void *p = a->cur;
    a->cur += size;
    return p;
  }
  return sm__pb_arena_alloc_slow(a, size);
}

#endif
