/* pb_arena.c - bump allocation for protobuf-c unpack (see pb_arena.h for why).
 *
 * Layout: block 0 starts with the arena header, and the first allocation protobuf-c makes (the
 * message itself: protobuf_c_message_unpack allocates it before anything else) sits right after
 * it. sm_pb_arena_free steps back from the message to the header. */
#include "format/pb_arena.h"

#include <stdlib.h>
#include <string.h>

typedef struct block {
  struct block *next;
  size_t size, used; /* bytes of data[] */
  _Alignas(16) unsigned char data[];
} block;

typedef struct arena {
  uint64_t magic;
  block *head;     /* current block (the list runs back to block 0) */
  size_t next_size; /* size of the next block (BLOCK) */
  int failed;
} arena;

#define ARENA_MAGIC 0x736d5f6172656e61ull /* "sm_arena" */
#define ALIGN 16
#define HDR (((sizeof(arena) + ALIGN - 1) / ALIGN) * ALIGN)
/* Blocks stay under glibc's mmap threshold (128 KiB) so that freed blocks go back to the heap
 * and the next parse reuses warm pages: fresh mmap'ed pages cost a page fault each, which on
 * some machines is slower than the whole decode. */
#define BLOCK ((size_t)96 << 10)

static block *new_block(size_t size) {
  block *b = malloc(sizeof(block) + size);
  if (!b) return NULL;
  b->next = NULL;
  b->size = size;
  b->used = 0;
  return b;
}

static void *arena_alloc(void *ud, size_t size) {
  arena *a = ud;
  size = (size + ALIGN - 1) / ALIGN * ALIGN;
  if (size == 0) size = ALIGN;
  block *b = a->head;
  if (size <= b->size - b->used) {
    void *p = b->data + b->used;
    b->used += size;
    return p;
  }
  /* Large requests get a block of their own, put behind the current one so that the current
   * block's free space is not wasted. */
  if (size > a->next_size / 4) {
    block *nb = new_block(size);
    if (!nb) {
      a->failed = 1;
      return NULL;
    }
    nb->used = size;
    nb->next = b->next;
    b->next = nb;
    return nb->data;
  }
  block *nb = new_block(a->next_size);
  if (!nb) {
    a->failed = 1;
    return NULL;
  }
  nb->next = b;
  a->head = nb;
  nb->used = size;
  return nb->data;
}

static void arena_free_piece(void *ud, void *p) {
  (void)ud;
  (void)p; /* everything goes at once in sm_pb_arena_free */
}

static void free_blocks(block *b) {
  while (b) {
    block *n = b->next;
    free(b);
    b = n;
  }
}

sm_status *sm_pb_arena_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what, ProtobufCMessage **out) {
  *out = NULL;
  size_t first = BLOCK;
  block *b0 = new_block(HDR + first);
  if (!b0) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", what);
  arena *a = (arena *)b0->data;
  memset(a, 0, sizeof *a);
  a->magic = ARENA_MAGIC;
  a->head = b0;
  a->next_size = BLOCK;
  b0->used = HDR;
  ProtobufCAllocator alloc = {arena_alloc, arena_free_piece, a};
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, &alloc, len, data);
  if (!m) {
    int oom = a->failed;
    /* The header lives in block 0, which is the last block of the list. */
    free_blocks(a->head);
    return oom ? sm_status_new(SM_NO_MEMORY, "%s: out of memory decoding %zu bytes", what, len)
               : sm_status_new(SM_DATA_LOSS, "%s: not a valid %s protobuf (the decoder rejected it)", what,
                               desc->name);
  }
  if ((unsigned char *)m != b0->data + HDR) {
    /* protobuf-c changed its allocation order; refuse rather than free the wrong thing later. */
    free_blocks(a->head);
    return sm_status_new(SM_INTERNAL, "%s: protobuf-c did not allocate the message first", what);
  }
  *out = m;
  return NULL;
}

void sm_pb_arena_free(ProtobufCMessage *msg) {
  if (!msg) return;
  arena *a = (arena *)((unsigned char *)msg - HDR);
  if (a->magic != ARENA_MAGIC) abort(); /* a message not from sm_pb_arena_unpack: a caller bug */
  a->magic = 0;
  free_blocks(a->head);
}
