/* pb_arena.c - bump allocation for decoded messages (see pb_arena.h for why).
 *
 * Layout: block 0 starts with the arena header, and the first allocation (the root message:
 * protobuf_c_message_unpack allocates it before anything else, sm__pb_arena_begin makes it) sits
 * right after it. sm__pb_arena_free steps back from the message to the header. The header's first
 * member is the current block's bump pointer, which pb_arena.h's inline allocation moves.
 *
 * Freed standard-size blocks are kept, up to SPARE_MAX bytes, in one process-wide list that the
 * next unpack takes whole: a decoded saved_model.pb is ~10x its size, and fresh pages cost a page
 * fault each (glibc trims the heap top as soon as the blocks go back), which on a loaded VM took
 * longer than decoding. The larger blocks of big arrays (a GraphDef's node pointers: up to 256 KiB,
 * which malloc maps and unmaps each time) are kept in a second list, within the same bound. The
 * lists move with an atomic exchange, so threads never share a block. */
#include "format/pb_arena.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
  struct block *next;
  size_t size; /* bytes of data[] */
  _Alignas(16) unsigned char data[];
} block;

typedef struct arena {
  sm_pb_arena pub;  /* bump pointer into head (first, so pb_arena.h's inline alloc can use it) */
  uint64_t magic;
  block *head;      /* current block (the list runs back to block 0) */
  block *spare;     /* standard blocks taken from the cache, not used yet */
  block *spare_big; /* larger blocks (grown arrays) taken from the cache, not used yet */
  struct arena *parent; /* a forked arena takes standard blocks from its parent's spare list */
  int failed;
} arena;

#define ARENA_MAGIC 0x736d5f6172656e61ull /* "sm_arena" */
#define ALIGN 16
#define HDR (((sizeof(arena) + ALIGN - 1) / ALIGN) * ALIGN)
/* Blocks stay under glibc's mmap threshold (128 KiB) so that the ones not cached go back to the
 * heap rather than to the kernel. */
#define BLOCK ((size_t)96 << 10)
/* The most the cache holds between parses: a 20,000-node graph decodes to ~15 MB. */
#define SPARE_MAX ((size_t)32 << 20)
/* Larger blocks kept: grown arrays (256 KiB of node pointers for 20,000 nodes), not big tensors. */
#define BIG_KEEP_MAX ((size_t)1 << 20)
#define SPARE_BIG_MAX ((size_t)4 << 20)

static _Atomic(block *) spare_cache, big_cache;
/* Guards a parent's spare list while forked arenas take blocks from it (sm__pb_arena_fork). */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

static block *new_block(size_t size) {
  block *b = malloc(sizeof(block) + size);
  if (!b) return NULL;
  b->next = NULL;
  b->size = size;
  return b;
}

/* A standard block: from the spare list if there is one, else from malloc. */
static block *std_block(block **spare) {
  block *b = *spare;
  if (!b) return new_block(BLOCK);
  *spare = b->next;
  b->next = NULL;
  return b;
}

/* A standard block for arena a: a forked arena asks its parent, under the lock. */
static block *arena_block(arena *a) {
  if (!a->parent) return std_block(&a->spare);
  pthread_mutex_lock(&fork_lock);
  block *b = a->parent->spare;
  if (b) {
    a->parent->spare = b->next;
    b->next = NULL;
  }
  pthread_mutex_unlock(&fork_lock);
  return b ? b : new_block(BLOCK);
}

/* A block of at least `size` bytes for a large request: a cached one not over twice that size,
 * else a new one. */
static block *big_block(arena *a, size_t size) {
  arena *owner = a->parent ? a->parent : a;
  if (a->parent) pthread_mutex_lock(&fork_lock);
  block *b = NULL;
  for (block **pb = &owner->spare_big; *pb; pb = &(*pb)->next) {
    if ((*pb)->size >= size && (*pb)->size / 2 <= size) {
      b = *pb;
      *pb = b->next;
      b->next = NULL;
      break;
    }
  }
  if (a->parent) pthread_mutex_unlock(&fork_lock);
  return b ? b : new_block(size);
}

/* `size` bytes (a multiple of 8) at the given alignment, from a new block. Large requests get a
 * block of their own, put behind the current one so that the current block's free space is not
 * wasted (a forked arena may have no current block yet: then it heads the list). */
static void *alloc_slow(arena *a, size_t size) {
  if (size > BLOCK / 4) {
    block *nb = big_block(a, size);
    if (!nb) {
      a->failed = 1;
      return NULL;
    }
    if (a->head) {
      nb->next = a->head->next;
      a->head->next = nb;
    } else {
      a->head = nb; /* cur/lim stay empty: the next small request takes a standard block */
    }
    return nb->data;
  }
  block *nb = arena_block(a);
  if (!nb) {
    a->failed = 1;
    return NULL;
  }
  nb->next = a->head;
  a->head = nb;
  a->pub.cur = nb->data + size;
  a->pub.lim = nb->data + BLOCK;
  return nb->data;
}

void *sm__pb_arena_alloc_slow(sm_pb_arena *pub, size_t size) { return alloc_slow((arena *)pub, size); }

/* protobuf-c's allocator: malloc's 16-byte alignment. */
static void *arena_alloc(void *ud, size_t size) {
  arena *a = ud;
  size = (size + ALIGN - 1) / ALIGN * ALIGN;
  if (size == 0) size = ALIGN;
  uintptr_t c = ((uintptr_t)a->pub.cur + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
  if (c <= (uintptr_t)a->pub.lim && size <= (uintptr_t)a->pub.lim - c) {
    a->pub.cur = (unsigned char *)c + size;
    return (void *)c;
  }
  return alloc_slow(a, size);
}

static void arena_free_piece(void *ud, void *p) {
  (void)ud;
  (void)p; /* everything goes at once in sm__pb_arena_free */
}

static void free_blocks(block *b) {
  while (b) {
    block *n = b->next;
    free(b);
    b = n;
  }
}

/* Gives the blocks of an arena back to the caches (up to SPARE_MAX bytes of standard blocks and
 * SPARE_BIG_MAX of larger ones, and only to an empty cache: one parse's worth is what the next
 * parse needs), the rest to malloc. */
static void release(block *used, block *unused, block *unused_big) {
  block *keep = NULL, *keep_big = NULL;
  size_t kept = 0, kept_big = 0;
  block *lists[3] = {unused, unused_big, used};
  for (int l = 0; l < 3; l++) {
    for (block *b = lists[l], *n; b; b = n) {
      n = b->next;
      if (b->size == BLOCK && kept + BLOCK <= SPARE_MAX) {
        b->next = keep;
        keep = b;
        kept += BLOCK;
      } else if (b->size != BLOCK && b->size <= BIG_KEEP_MAX && kept_big + b->size <= SPARE_BIG_MAX) {
        b->next = keep_big;
        keep_big = b;
        kept_big += b->size;
      } else {
        free(b);
      }
    }
  }
  block *expected = NULL;
  if (keep && !atomic_compare_exchange_strong(&spare_cache, &expected, keep)) free_blocks(keep);
  expected = NULL;
  if (keep_big && !atomic_compare_exchange_strong(&big_cache, &expected, keep_big)) free_blocks(keep_big);
}

static arena *init_arena(block *b0, block *spare) {
  arena *a = (arena *)b0->data;
  memset(a, 0, sizeof *a);
  a->magic = ARENA_MAGIC;
  a->head = b0;
  a->spare = spare;
  a->spare_big = atomic_exchange(&big_cache, NULL);
  a->pub.cur = b0->data + HDR;
  a->pub.lim = b0->data + BLOCK;
  return a;
}

sm_status *sm__pb_arena_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                              const char *what, ProtobufCMessage **out) {
  *out = NULL;
  block *spare = atomic_exchange(&spare_cache, NULL);
  block *b0 = std_block(&spare);
  if (!b0) {
    release(NULL, spare, NULL);
    return sm_status_new(SM_NO_MEMORY, "%s: out of memory", what);
  }
  arena *a = init_arena(b0, spare);
  ProtobufCAllocator alloc = {arena_alloc, arena_free_piece, a};
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, &alloc, len, data);
  if (!m || (unsigned char *)m != b0->data + HDR) {
    int oom = a->failed;
    /* The header lives in block 0, which release may reuse: read it first. */
    block *head = a->head, *big = a->spare_big;
    spare = a->spare;
    a->magic = 0;
    release(head, spare, big);
    if (m) /* protobuf-c changed its allocation order; refuse rather than free the wrong thing later. */
      return sm_status_new(SM_INTERNAL, "%s: protobuf-c did not allocate the message first", what);
    return oom ? sm_status_new(SM_NO_MEMORY, "%s: out of memory decoding %zu bytes", what, len)
               : sm_status_new(SM_DATA_LOSS, "%s: not a valid %s protobuf (the decoder rejected it)", what,
                               desc->name);
  }
  *out = m;
  return NULL;
}

void sm__pb_arena_free(ProtobufCMessage *msg) {
  if (!msg) return;
  arena *a = (arena *)((unsigned char *)msg - HDR);
  if (a->magic != ARENA_MAGIC) abort(); /* a message not from sm__pb_arena_unpack: a caller bug */
  a->magic = 0;
  block *head = a->head, *spare = a->spare, *big = a->spare_big;
  release(head, spare, big);
}

sm_pb_arena *sm__pb_arena_begin(size_t root_size, void **root) {
  *root = NULL;
  block *spare = atomic_exchange(&spare_cache, NULL);
  block *b0 = std_block(&spare);
  if (!b0) {
    release(NULL, spare, NULL);
    return NULL;
  }
  arena *a = init_arena(b0, spare);
  void *m = sm__pb_arena_alloc(&a->pub, root_size);
  if (m != b0->data + HDR) { /* a root too large for block 0: cannot happen for real messages */
    sm__pb_arena_discard(&a->pub);
    return NULL;
  }
  *root = m;
  return &a->pub;
}

void sm__pb_arena_discard(sm_pb_arena *pub) {
  if (!pub) return;
  arena *a = (arena *)pub;
  block *head = a->head, *spare = a->spare, *big = a->spare_big;
  a->magic = 0;
  release(head, spare, big);
}

/* ---- forked arenas (pb_arena.h) ---- */

sm_pb_arena *sm__pb_arena_fork(sm_pb_arena *parent) {
  arena *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->magic = ARENA_MAGIC;
  f->parent = (arena *)parent;
  return &f->pub; /* cur == lim == NULL: the first allocation takes a block */
}

void sm__pb_arena_join(sm_pb_arena *parent, sm_pb_arena *child) {
  if (!child) return;
  arena *p = (arena *)parent, *f = (arena *)child;
  block *b = f->head;
  if (b) {
    block *tail = b;
    while (tail->next) tail = tail->next;
    tail->next = p->head->next; /* behind the parent's current block, which keeps its free space */
    p->head->next = b;
  }
  if (f->failed) p->failed = 1;
  free(f);
}
