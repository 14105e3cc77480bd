/* pb_decode.c - single-pass protobuf decoder into protobuf-c's generated structs (see pb_decode.h).
 *
 * Why: protobuf-c's unpack scans every message twice, keeps a bitmap of required fields and looks
 * each field up generically, and our pre-scan (sm_pb_check) walked the bytes once more before it;
 * for a 20,000-node graph that was ~170 M instructions. Here each descriptor is compiled once into
 * a table (field number -> offset, kind, expected wire type, cost) and the bytes are walked once,
 * validating as they go. Repeated fields grow by doubling in the arena (protobuf-c counts them in a
 * first pass instead; the arrays' spare room is the only difference, and nothing reads it).
 *
 * Identical small submessages (a graph's `T: DT_FLOAT` attrs, its repeated shapes) are decoded
 * once and pointed to from every place (see "sharing" below), which halves a graph's tree. Inputs
 * of 256 KiB or more are decoded in two steps when the machine has several CPUs: the small
 * repeated elements (a GraphDef's nodes...) are set aside in a first pass and decoded by up to
 * four threads (see "decoding a large input" below).
 *
 * The rules of sm_pb_check are kept by giving up (BAIL) on anything it would refuse, and on the
 * few cases where protobuf-c does something this decoder does not reproduce (merging a singular
 * message given twice, tags or lengths in over 5 bytes, packed bools above 1, required fields):
 * sm__pb_decode then takes the old path, which gives the old answer and the old error message. */
#include "format/pb_decode.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "format/pb_arena.h"
#include "format/pb_util.h"
#include "savedmodel/format.h"

#define BAIL 1
#define NOMEM (-1)
#define DIRECT 64   /* field numbers below this are looked up in a table */
#define MAX_FIELD 536870911u

enum { K_I32, K_S32, K_I64, K_S64, K_BOOL, K_F32, K_F64, K_STR, K_BYTES, K_MSG };
enum { M_PLAIN, M_HAS, M_ONEOF, M_REP };

typedef struct dmsg dmsg;

typedef struct dfield {
  uint32_t offset, qoffset, id;
  uint32_t cost; /* sm_pb_check's memory estimate for one occurrence, before its length */
  uint8_t kind, mode, wt, esize;
  uint8_t packable; /* repeated scalar: wire type 2 means packed */
  const dmsg *sub;
} dfield;

struct dmsg {
  const ProtobufCMessageDescriptor *d;
  size_t size;
  unsigned char *init; /* a message after message_init: copied into each new one */
  unsigned n_fields;
  dfield *fields;
  const dfield *by_id[DIRECT]; /* field numbers below DIRECT: their field, or NULL */
  const dfield *by_tag[128];   /* one-byte tags (fields 1-15) of the field's own wire type, or of
                                  a packed repeated scalar: the field; else NULL */
  uint8_t zeros;  /* init is the descriptor then zeros, and size >= 32: copy_init only stores */
  uint8_t strict; /* proto3: strings must be UTF-8 */
  uint8_t ok;     /* 0: uses something left to protobuf-c */
};

/* ---- descriptor tables: built once per descriptor, kept for the process ---- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static dmsg **reg;
static size_t n_reg, cap_reg;

static dmsg *build(const ProtobufCMessageDescriptor *d);

static dmsg *lookup_locked(const ProtobufCMessageDescriptor *d) {
  for (size_t i = 0; i < n_reg; i++)
    if (reg[i]->d == d) return reg[i];
  return build(d);
}

static dmsg *build(const ProtobufCMessageDescriptor *d) {
  if (n_reg == cap_reg) {
    size_t nc = cap_reg ? cap_reg * 2 : 64;
    dmsg **nr = realloc(reg, nc * sizeof *nr);
    if (!nr) return NULL;
    reg = nr;
    cap_reg = nc;
  }
  dmsg *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->d = d;
  m->size = d->sizeof_message;
  m->n_fields = d->n_fields;
  m->fields = calloc(d->n_fields ? d->n_fields : 1, sizeof *m->fields);
  m->init = malloc(m->size);
  if (!m->fields || !m->init) {
    free(m->fields);
    free(m->init);
    free(m);
    return NULL;
  }
  m->strict = (uint8_t)sm__pb_strict_utf8(d);
  /* whole 8-byte words are copied from init */
  m->ok = d->message_init != NULL && m->size % 8 == 0;
  if (d->message_init) d->message_init((ProtobufCMessage *)m->init);
  m->zeros = m->size >= 32;
  for (size_t i = sizeof(void *); i < m->size && m->zeros; i++) m->zeros = m->init[i] == 0;
  reg[n_reg++] = m; /* before the fields: recursive message types find it */
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    dfield *fd = &m->fields[i];
    fd->offset = f->offset;
    fd->qoffset = f->quantifier_offset;
    fd->id = f->id;
    switch (f->type) {
      case PROTOBUF_C_TYPE_INT32:
      case PROTOBUF_C_TYPE_UINT32:
      case PROTOBUF_C_TYPE_ENUM: fd->kind = K_I32, fd->wt = 0, fd->esize = 4; break;
      case PROTOBUF_C_TYPE_SINT32: fd->kind = K_S32, fd->wt = 0, fd->esize = 4; break;
      case PROTOBUF_C_TYPE_INT64:
      case PROTOBUF_C_TYPE_UINT64: fd->kind = K_I64, fd->wt = 0, fd->esize = 8; break;
      case PROTOBUF_C_TYPE_SINT64: fd->kind = K_S64, fd->wt = 0, fd->esize = 8; break;
      case PROTOBUF_C_TYPE_BOOL: fd->kind = K_BOOL, fd->wt = 0, fd->esize = sizeof(protobuf_c_boolean); break;
      case PROTOBUF_C_TYPE_SFIXED32:
      case PROTOBUF_C_TYPE_FIXED32:
      case PROTOBUF_C_TYPE_FLOAT: fd->kind = K_F32, fd->wt = 5, fd->esize = 4; break;
      case PROTOBUF_C_TYPE_SFIXED64:
      case PROTOBUF_C_TYPE_FIXED64:
      case PROTOBUF_C_TYPE_DOUBLE: fd->kind = K_F64, fd->wt = 1, fd->esize = 8; break;
      case PROTOBUF_C_TYPE_STRING: fd->kind = K_STR, fd->wt = 2, fd->esize = sizeof(char *); break;
      case PROTOBUF_C_TYPE_BYTES: fd->kind = K_BYTES, fd->wt = 2, fd->esize = sizeof(ProtobufCBinaryData); break;
      case PROTOBUF_C_TYPE_MESSAGE: fd->kind = K_MSG, fd->wt = 2, fd->esize = sizeof(void *); break;
      default: m->ok = 0; break;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      fd->mode = M_REP;
      fd->packable = fd->wt != 2;
      fd->cost = 8;
    } else if (f->label == PROTOBUF_C_LABEL_REQUIRED) {
      m->ok = 0; /* TensorFlow's protos have none; protobuf-c checks them */
    } else if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      fd->mode = M_ONEOF;
    } else {
      fd->mode = f->quantifier_offset ? M_HAS : M_PLAIN;
    }
    if (fd->kind == K_MSG) {
      const ProtobufCMessageDescriptor *sd = f->descriptor;
      fd->cost += (uint32_t)sd->sizeof_message + 16;
      fd->sub = lookup_locked(sd);
      if (!fd->sub) m->ok = 0;
    } else if (fd->kind == K_STR || fd->kind == K_BYTES) {
      fd->cost += 17;
    }
    if (f->id < DIRECT) m->by_id[f->id] = fd;
    if (f->id < 16) { /* (a type left to protobuf-c clears m->ok: dec never looks here) */
      m->by_tag[(f->id << 3) | fd->wt] = fd;
      if (fd->packable) m->by_tag[(f->id << 3) | 2] = fd;
    }
  }
  return m;
}

static const dmsg *table_for(const ProtobufCMessageDescriptor *d) {
  pthread_mutex_lock(&reg_lock);
  const dmsg *m = lookup_locked(d);
  pthread_mutex_unlock(&reg_lock);
  return m;
}

/* ---- wire format ---- */

/* A repeated message element whose bytes are decoded later, by one of several threads. */
typedef struct task {
  const dmsg *m;
  ProtobufCMessage *msg; /* allocated and initialised; its fields are the task's to fill */
  const uint8_t *p, *end;
  int depth;
} task;

typedef struct task_list {
  task *v;
  size_t n, cap;
} task_list;

/* Small submessages already decoded in this pass, by their bytes (see "sharing" below). */
typedef struct share_ent {
  const uint8_t *p;  /* the payload, in the input */
  void *msg;         /* its decoded message (NULL: a free slot) */
  uint32_t hash;
  uint32_t len_cost; /* payload length (low 7 bits) and the subtree's cost above them */
} share_ent;

typedef struct share_tab {
  share_ent *v;
  size_t mask; /* slots - 1: a power of two minus one, at most SHARE_SLOTS - 1 */
} share_tab;

typedef struct ctx {
  sm_pb_arena *a;
  share_tab *share;     /* NULL: every submessage decoded on its own */
  uint64_t cost, limit; /* sm_pb_check's estimate, and its bound */
  const uint8_t *buf_end; /* end of the whole input: word-wide reads stop short of it */
  task_list *defer;     /* NULL: decode everything now */
  size_t defer_max;     /* elements of at most this many bytes are deferred */
} ctx;

/* A varint of at most `max` bytes: 10 for values, 5 for tags and lengths (protobuf-c reads
 * those in at most 5 bytes and refuses longer ones, which sm_pb_check accepts: left to it). */
static inline int rd_var(const uint8_t **pp, const uint8_t *end, uint64_t *v, int max) {
  const uint8_t *p = *pp;
  if (p < end && *p < 0x80) { /* most tags, lengths and values are one byte */
    *v = *p;
    *pp = p + 1;
    return 0;
  }
  uint64_t r = 0;
  for (int i = 0; i < max; i++) {
    if (p >= end) return BAIL;
    uint8_t c = *p++;
    r |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) {
      *v = r;
      *pp = p;
      return 0;
    }
  }
  return BAIL;
}

static inline int rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) { return rd_var(pp, end, v, 10); }
static inline int rd_hdr(const uint8_t **pp, const uint8_t *end, uint64_t *v) { return rd_var(pp, end, v, 5); }

/* A length that must fit in what is left. */
static inline int rd_len(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  return rd_var(pp, end, v, 5) || *v > (uint64_t)(end - *pp);
}

static inline const dfield *find(const dmsg *m, uint64_t num) {
  if (num < DIRECT) return m->by_id[num];
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(m->d, (unsigned)num);
  return f ? &m->fields[f - m->d->fields] : NULL;
}

/* Steps over a value of wire type wt; *payload gets the start of a length-delimited payload. */
static inline int skip(int wt, const uint8_t **pp, const uint8_t *end, const uint8_t **payload) {
  uint64_t v;
  switch (wt) {
    case 0: return rd_varint(pp, end, &v);
    case 1:
      if (end - *pp < 8) return BAIL;
      *pp += 8;
      return 0;
    case 5:
      if (end - *pp < 4) return BAIL;
      *pp += 4;
      return 0;
    case 2:
      if (rd_len(pp, end, &v)) return BAIL;
      *payload = *pp;
      *pp += v;
      return 0;
    default: return BAIL; /* groups and invalid wire types */
  }
}

static inline void *alloc(ctx *c, size_t n) { return sm__pb_arena_alloc(c->a, n); }

static int store_packed(const dfield *fd, char *base, const uint8_t *q, const uint8_t *qe, size_t cap) {
  size_t *pn = (size_t *)(base + fd->qoffset);
  char *arr = *(char **)(base + fd->offset);
  size_t n = *pn, len = (size_t)(qe - q);
  switch (fd->kind) {
    case K_F32:
    case K_F64: {
      size_t k = len / fd->esize;
      if (len % fd->esize || k > cap - n) return BAIL;
      if (len) memcpy(arr + n * fd->esize, q, len);
      n += k;
      break;
    }
    case K_BOOL:
      if (len > cap - n) return BAIL;
      for (; q < qe; q++) {
        if (*q > 1) return BAIL; /* protobuf-c's own rule for packed bools; left to it */
        ((protobuf_c_boolean *)arr)[n++] = *q;
      }
      break;
    default:
      while (q < qe) {
        uint64_t v;
        if (rd_varint(&q, qe, &v) || n >= cap) return BAIL;
        switch (fd->kind) {
          case K_I32: ((uint32_t *)arr)[n++] = (uint32_t)v; break;
          case K_S32: {
            uint32_t u = (uint32_t)v;
            ((int32_t *)arr)[n++] = (u & 1) ? -(int32_t)(u >> 1) - 1 : (int32_t)(u >> 1);
            break;
          }
          case K_I64: ((uint64_t *)arr)[n++] = v; break;
          default: ((int64_t *)arr)[n++] = (v & 1) ? -(int64_t)(v >> 1) - 1 : (int64_t)(v >> 1); break;
        }
      }
      break;
  }
  *pn = n;
  return 0;
}

/* Capacity of a repeated array holding n elements (n > 0): arrays grow by doubling, so the
 * capacity follows from the count and needs no field of its own. */
static inline size_t cap_for(size_t n) {
  if (n <= 4) return 4;
  return (size_t)1 << (64 - __builtin_clzll((unsigned long long)(n - 1)));
}

/* Whether one more element needs a new array: the array is absent or exactly full. */
static inline int full(size_t n) { return n == 0 || (n >= 4 && !(n & (n - 1))); }

/* Makes room for `add` more elements in a repeated array now holding n. */
static int grow(ctx *c, void **arr, size_t n, size_t add, size_t esize) {
  if (n && n + add <= cap_for(n)) return 0;
  size_t cap = cap_for(n + add);
  void *na = alloc(c, cap * esize); /* n + add <= input bytes: no overflow */
  if (!na) return NOMEM;
  if (n) memcpy(na, *arr, n * esize);
  *arr = na;
  return 0;
}

/* Copies a string payload and says whether it is valid UTF-8 (when `strict`): whole words while
 * the input has them, with a check of their high bits; sm__utf8_valid only for non-ASCII text. */
static inline int copy_string(ctx *c, char *dst, const uint8_t *src, size_t len, int strict) {
  size_t words = (len + 7) >> 3;
  if (words * 8 <= (size_t)(c->buf_end - src)) { /* dst has len + 1 rounded up to 8 bytes */
    uint64_t hi = 0, w;
    size_t i = 0;
    for (; i + 1 < words; i++) {
      memcpy(&w, src + 8 * i, 8);
      memcpy(dst + 8 * i, &w, 8);
      hi |= w;
    }
    if (words) {
      memcpy(&w, src + 8 * i, 8);
      memcpy(dst + 8 * i, &w, 8);
      if (len & 7) w &= (1ull << (8 * (len & 7))) - 1; /* bytes past len belong to the next field */
      hi |= w;
    }
    dst[len] = 0;
    return !strict || !(hi & 0x8080808080808080ull) || sm__utf8_valid(src, len);
  }
  memcpy(dst, src, len);
  dst[len] = 0;
  return !strict || sm__utf8_valid(src, len);
}

/* A new message's initial state: fixed-size copies the compiler turns into vector moves
 * (a memcpy call per message cost more than the small copy itself). Most messages start as their
 * descriptor and zeros (those without string fields, which start as protobuf-c's empty string):
 * those are only stored to, the last 32 bytes overlapping the loop's end rather than a tail of
 * several sizes. */
static inline void copy_init(unsigned char *d, const dmsg *m) {
  if (m->zeros) {
    unsigned char *e = d + m->size;
    for (unsigned char *q = d; q + 32 < e; q += 32) memset(q, 0, 32);
    memset(e - 32, 0, 32);
    memcpy(d, m->init, sizeof(void *)); /* the descriptor */
    return;
  }
  const unsigned char *s = m->init;
  size_t n = m->size; /* a multiple of 8 (m->ok) */
  for (; n >= 32; n -= 32, d += 32, s += 32) memcpy(d, s, 32);
  if (n >= 16) memcpy(d, s, 16), n -= 16, d += 16, s += 16;
  if (n) memcpy(d, s, 8);
}

/* ---- sharing ----
 *
 * A graph repeats the same small submessages over and over: `T: DT_FLOAT`, `_output_shapes`
 * with the same shape, `padding: "SAME"`, empty shapes. Decoding each anew costs time and, worse,
 * memory (a ListValue alone is 152 bytes): the tree of a 20,000-node graph took ~15 MB and went
 * out of a shared cache on a busy machine. So a submessage of at most SHARE_MAX bytes is looked
 * up by its bytes and type among those this pass has decoded, and the same decoded message is
 * pointed to again (format.h: the tree is read-only). The answer is unchanged: the same bytes of
 * the same type decode to the same message, and a shared subtree still counts its cost toward
 * the memory bound, and its depth (at most SHARE_MAX / 2 levels) toward the nesting limit.
 *
 * The table is a fixed cache, one message per slot, a newer one replacing an older one of the
 * same slot: at most 96 KiB whatever the input (it stays in the L2 cache; a table that grew with
 * the input took page faults and cache misses of its own), less for a small input, and what
 * repeats often stays in it. */

#define SHARE_MAX 64
#define SHARE_SLOTS 4096 /* a power of two */
#define SHARE_BYTES_PER_SLOT 16 /* a slot per this many input bytes, up to SHARE_SLOTS */

static inline uint32_t share_hash(const uint8_t *p, size_t n, const uint8_t *buf_end, const void *type) {
  uint64_t h = (uint64_t)(uintptr_t)type * 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
  }
  if (i < n) {
    uint64_t w = 0;
    if ((size_t)(buf_end - (p + i)) >= 8) { /* one word, the bytes past n masked off */
      memcpy(&w, p + i, 8);
      w &= ~0ull >> (8 * (8 - (n - i)));
    } else {
      memcpy(&w, p + i, n - i);
    }
    h = (h ^ w) * 0x94d049bb133111ebull;
  }
  h ^= h >> 32;
  return (uint32_t)h;
}

/* The slot for hash h; it holds (p, n, m) when e->msg is set and share_same says so. */
static inline share_ent *share_slot(share_tab *t, uint32_t h) { return &t->v[h & t->mask]; }

static inline int share_same(const share_ent *e, uint32_t h, const uint8_t *p, size_t n, const dmsg *m) {
  return e->msg && e->hash == h && (e->len_cost & 127) == n &&
         ((const ProtobufCMessage *)e->msg)->descriptor == m->d && memcmp(e->p, p, n) == 0;
}

/* A table sized for an input of len bytes. */
static int share_init(share_tab *t, size_t len) {
  size_t slots = 64;
  while (slots < SHARE_SLOTS && slots * SHARE_BYTES_PER_SLOT < len) slots *= 2;
  t->v = calloc(slots, sizeof *t->v);
  t->mask = slots - 1;
  return t->v ? 0 : NOMEM;
}

static share_tab *share_new(size_t slots) {
  share_tab *t = malloc(sizeof *t);
  if (t && share_init(t, slots * SHARE_BYTES_PER_SLOT)) {
    free(t);
    t = NULL;
  }
  return t;
}

static void share_free(share_tab *t) {
  if (!t) return;
  free(t->v);
  free(t);
}

static int dec(ctx *c, const dmsg *m, ProtobufCMessage *msg, const uint8_t *p, const uint8_t *end, int depth) {
  if (!m->ok || c->cost > c->limit) return BAIL;
  char *base = (char *)msg;
  while (p < end) {
    const dfield *fd;
    int wt;
    if (*p < 0x80 && (fd = m->by_tag[*p]) != NULL) { /* a one-byte tag of a known field */
      wt = *p++ & 7;
    } else {
      uint64_t tag;
      if (rd_hdr(&p, end, &tag)) return BAIL;
      uint64_t num = tag >> 3;
      wt = (int)(tag & 7);
      if (num == 0 || num > MAX_FIELD) return BAIL;
      fd = find(m, num);
      if (!fd) {
        const uint8_t *data = p, *pl = NULL;
        if (skip(wt, &p, end, &pl)) return BAIL;
        if (full(msg->n_unknown_fields) &&
            grow(c, (void **)&msg->unknown_fields, msg->n_unknown_fields, 1, sizeof *msg->unknown_fields))
          return NOMEM;
        ProtobufCMessageUnknownField *u = &msg->unknown_fields[msg->n_unknown_fields++];
        u->tag = (uint32_t)num;
        u->wire_type = (ProtobufCWireType)wt;
        u->len = (size_t)(p - data);
        u->data = alloc(c, u->len);
        if (!u->data) return NOMEM;
        memcpy(u->data, data, u->len);
        continue;
      }
    }
    char *dst = base + fd->offset;
    switch (fd->mode) {
      case M_REP: {
        size_t *pn = (size_t *)(base + fd->qoffset);
        if (wt == 2 && fd->packable) {
          uint64_t len;
          if (rd_len(&p, end, &len)) return BAIL;
          c->cost += fd->cost + len * 8;
          size_t k = (size_t)len; /* at most one element per byte */
          if (fd->kind == K_F32 || fd->kind == K_F64) {
            if (k % fd->esize) return BAIL;
            k /= fd->esize;
          }
          if (k && grow(c, (void **)dst, *pn, k, fd->esize)) return NOMEM;
          if (store_packed(fd, base, p, p + len, *pn + k)) return BAIL;
          p += len;
          continue;
        }
        if (full(*pn) && grow(c, (void **)dst, *pn, 1, fd->esize)) return NOMEM;
        dst = *(char **)dst + (*pn)++ * fd->esize;
        break;
      }
      case M_ONEOF: {
        uint32_t *pc = (uint32_t *)(base + fd->qoffset);
        if (*pc) { /* protobuf-c clears the previous member, as wide as its type */
          const dfield *old = find(m, *pc);
          if (old) memset(dst, 0, old->esize);
        }
        *pc = fd->id;
        break;
      }
      case M_HAS: *(protobuf_c_boolean *)(base + fd->qoffset) = 1; break;
      default: break;
    }
    if (wt != fd->wt) return BAIL;
    c->cost += fd->cost;
    uint64_t v;
    switch (fd->kind) {
      case K_I32:
        if (rd_varint(&p, end, &v)) return BAIL;
        *(uint32_t *)dst = (uint32_t)v;
        break;
      case K_S32: {
        if (rd_varint(&p, end, &v)) return BAIL;
        uint32_t u = (uint32_t)v;
        *(int32_t *)dst = (u & 1) ? -(int32_t)(u >> 1) - 1 : (int32_t)(u >> 1);
        break;
      }
      case K_I64:
        if (rd_varint(&p, end, &v)) return BAIL;
        *(uint64_t *)dst = v;
        break;
      case K_S64:
        if (rd_varint(&p, end, &v)) return BAIL;
        *(int64_t *)dst = (v & 1) ? -(int64_t)(v >> 1) - 1 : (int64_t)(v >> 1);
        break;
      case K_BOOL: {
        const uint8_t *b = p;
        if (rd_varint(&p, end, &v)) return BAIL;
        unsigned any = 0; /* protobuf-c: true when any of the varint's bits is set, even past 64 */
        for (; b < p; b++) any |= *b & 0x7f;
        *(protobuf_c_boolean *)dst = any != 0;
        break;
      }
      case K_F32:
        if (end - p < 4) return BAIL;
        memcpy(dst, p, 4);
        p += 4;
        break;
      case K_F64:
        if (end - p < 8) return BAIL;
        memcpy(dst, p, 8);
        p += 8;
        break;
      case K_STR: {
        if (rd_len(&p, end, &v)) return BAIL;
        size_t len = (size_t)v;
        c->cost += len;
        char *str = alloc(c, len + 1);
        if (!str) return NOMEM;
        if (!copy_string(c, str, p, len, m->strict)) return BAIL;
        *(char **)dst = str;
        p += len;
        break;
      }
      case K_BYTES: {
        if (rd_len(&p, end, &v)) return BAIL;
        size_t len = (size_t)v;
        c->cost += len;
        ProtobufCBinaryData *bd = (ProtobufCBinaryData *)dst;
        bd->data = NULL;
        if (len) {
          bd->data = alloc(c, len);
          if (!bd->data) return NOMEM;
          memcpy(bd->data, p, len);
        }
        bd->len = len;
        p += len;
        break;
      }
      default: { /* K_MSG */
        if (rd_len(&p, end, &v)) return BAIL;
        /* protobuf-c merges a singular message given twice: left to it */
        if (fd->mode == M_PLAIN && *(void **)dst) return BAIL;
        if (depth + 1 > SM_PB_MAX_DEPTH) return BAIL;
        const dmsg *sm = fd->sub;
        int deferred = c->defer && fd->mode == M_REP && v <= c->defer_max; /* e.g. a GraphDef's nodes */
        int shared = c->share && !deferred && v <= SHARE_MAX && depth + 1 + SHARE_MAX / 2 <= SM_PB_MAX_DEPTH;
        uint32_t h = 0;
        if (shared) {
          h = share_hash(p, (size_t)v, c->buf_end, sm);
          share_ent *e = share_slot(c->share, h);
          if (share_same(e, h, p, (size_t)v, sm)) {
            *(void **)dst = e->msg;
            c->cost += e->len_cost >> 7;
            p += v;
            break;
          }
        }
        unsigned char *sub = alloc(c, sm->size);
        if (!sub) return NOMEM;
        copy_init(sub, sm);
        *(void **)dst = sub;
        if (deferred) {
          task_list *tl = c->defer;
          /* the bound holds in this pass too: it may meet millions of tiny elements */
          c->cost += sizeof(task);
          if (c->cost > c->limit) return BAIL;
          if (tl->n == tl->cap) {
            size_t nc = tl->cap ? tl->cap * 2 : 1024;
            task *nv = realloc(tl->v, nc * sizeof *nv);
            if (!nv) return NOMEM;
            tl->v = nv;
            tl->cap = nc;
          }
          tl->v[tl->n++] = (task){sm, (ProtobufCMessage *)sub, p, p + v, depth + 1};
          p += v;
          break;
        }
        uint64_t before = c->cost;
        size_t tasks = c->defer ? c->defer->n : 0;
        int r = dec(c, sm, (ProtobufCMessage *)sub, p, p + v, depth + 1);
        if (r) return r;
        uint64_t cost = c->cost - before;
        /* kept for later when its whole cost is known (no part of it deferred) */
        if (shared && cost <= (UINT32_MAX >> 7) && (!c->defer || c->defer->n == tasks))
          *share_slot(c->share, h) = (share_ent){p, sub, h, (uint32_t)v | (uint32_t)cost << 7};
        p += v;
        break;
      }
    }
  }
  return 0;
}

/* ---- decoding a large input on several threads ----
 *
 * A saved_model.pb is mostly many small repeated messages (a GraphDef's nodes, a library's
 * functions, the object graph's nodes). The first pass decodes everything else and, for each such
 * element, allocates its struct and notes its bytes (a task); then the tasks are shared out in
 * chunks to a few threads, each with an arena forked from the main one. Elements are independent
 * messages, so the result is the one the single pass gives; any failure in a task makes the whole
 * decode give up as it would have (the caller then takes the old path for the answer). */

#define PAR_MIN_BYTES ((size_t)256 << 10) /* smaller inputs: one thread is faster than starting more */
#define PAR_MAX_THREADS 4

typedef struct par {
  const task *tasks;
  size_t n, chunk;
  _Atomic size_t next;
  _Atomic uint64_t cost; /* the finished chunks' cost */
  _Atomic int fail;      /* first nonzero dec result */
  uint64_t limit;
  const uint8_t *buf_end;
} par;

typedef struct worker {
  par *pp;
  sm_pb_arena *a;
  share_tab *share; /* this thread's own (NULL: no sharing) */
} worker;

static void *run_tasks(void *arg) {
  worker *w = arg;
  par *pp = w->pp;
  for (;;) {
    size_t i = atomic_fetch_add_explicit(&pp->next, pp->chunk, memory_order_relaxed);
    if (i >= pp->n || atomic_load_explicit(&pp->fail, memory_order_relaxed)) break;
    size_t e = pp->n - i < pp->chunk ? pp->n : i + pp->chunk;
    uint64_t done = atomic_load_explicit(&pp->cost, memory_order_relaxed);
    /* this chunk may take what the finished ones left of the bound */
    ctx c = {w->a, w->share, 0, done < pp->limit ? pp->limit - done : 0, pp->buf_end, NULL, 0};
    int r = 0;
    for (; i < e && !r; i++) {
      const task *t = &pp->tasks[i];
      r = dec(&c, t->m, t->msg, t->p, t->end, t->depth);
    }
    if (!r && c.cost > c.limit) r = BAIL;
    if (r) {
      int expected = 0;
      atomic_compare_exchange_strong(&pp->fail, &expected, r);
      break;
    }
    atomic_fetch_add_explicit(&pp->cost, c.cost, memory_order_relaxed);
  }
  return NULL;
}

/* Decodes the deferred tasks on up to `threads` threads (this one included); 0, BAIL or NOMEM. */
static int run_deferred(ctx *c, const task_list *tl, int threads) {
  par pp = {.tasks = tl->v, .n = tl->n, .limit = c->cost < c->limit ? c->limit - c->cost : 0,
            .buf_end = c->buf_end};
  atomic_init(&pp.next, 0);
  atomic_init(&pp.cost, 0);
  atomic_init(&pp.fail, 0);
  if ((size_t)threads > tl->n) threads = (int)tl->n;
  /* small chunks, so a thread that gets less CPU than the others takes fewer of them */
  pp.chunk = tl->n / ((size_t)threads * 16);
  if (pp.chunk == 0) pp.chunk = 1;
  worker w[PAR_MAX_THREADS];
  pthread_t th[PAR_MAX_THREADS];
  int started = 0, r = 0;
  for (int i = 0; i < threads; i++) {
    w[i].pp = &pp;
    w[i].a = sm__pb_arena_fork(c->a);
    /* this thread goes on with the first pass's table, the others start their own */
    w[i].share = i == 0 || !c->share ? c->share : share_new(c->share->mask + 1);
    if (!w[i].a || (c->share && !w[i].share)) {
      sm__pb_arena_join(c->a, w[i].a);
      if (i > 0) share_free(w[i].share);
      r = NOMEM;
      threads = i;
      break;
    }
  }
  if (!r) {
    for (started = 1; started < threads; started++)
      if (pthread_create(&th[started - 1], NULL, run_tasks, &w[started]) != 0) break; /* fewer threads */
    run_tasks(&w[0]);
    /* (a thread that could not start leaves its share to the others: chunks go to whoever asks) */
    for (int i = 1; i < started; i++) pthread_join(th[i - 1], NULL);
    r = atomic_load(&pp.fail);
  }
  for (int i = 0; i < threads; i++) {
    sm__pb_arena_join(c->a, w[i].a);
    if (i > 0) share_free(w[i].share);
  }
  c->cost += atomic_load(&pp.cost);
  return r;
}

static int online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)n;
}

int sm__pb_decode_fast_opts(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           ProtobufCMessage **out, int threads, size_t defer_max, int share) {
  *out = NULL;
  if (len > (size_t)INT_MAX) return BAIL;
  if (threads > PAR_MAX_THREADS) threads = PAR_MAX_THREADS;
  const dmsg *m = table_for(desc);
  if (!m) return NOMEM;
  void *root;
  sm_pb_arena *a = sm__pb_arena_begin(m->size, &root);
  if (!a) return NOMEM;
  memcpy(root, m->init, m->size);
  const uint8_t *p = data ? data : (const uint8_t *)"";
  task_list tl = {NULL, 0, 0};
  share_tab st = {NULL, 0};
  if (share && share_init(&st, len)) {
    sm__pb_arena_discard(a);
    return NOMEM;
  }
  ctx c = {a, share ? &st : NULL, 0, (uint64_t)len * SM_PB_MAX_EXPANSION + ((uint64_t)64 << 20), p + len,
           threads > 1 ? &tl : NULL, defer_max};
  int r = dec(&c, m, root, p, p + len, 0);
  if (!r && tl.n) r = run_deferred(&c, &tl, threads);
  free(tl.v);
  free(st.v);
  if (!r && c.cost > c.limit) r = BAIL;
  if (r) {
    sm__pb_arena_discard(a);
    return r;
  }
  *out = root;
  return 0;
}

int sm__pb_decode_fast(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                      ProtobufCMessage **out) {
  int threads = len >= PAR_MIN_BYTES ? online_cpus() : 1;
  /* elements of up to 1/32 of the input: the big ones (a whole MetaGraphDef) are decoded in the
   * first pass, so that their own small elements become tasks */
  return sm__pb_decode_fast_opts(desc, data, len, out, threads, len / 32, 1);
}

sm_status *sm__pb_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                        const char *what, ProtobufCMessage **out) {
  *out = NULL;
  if (!what) what = desc->name;
  if (sm__pb_decode_fast(desc, data, len, out) == 0) return NULL;
  /* Invalid input, or a case left to protobuf-c: the old path gives the answer and the message. */
  sm_status *s = sm_pb_check(desc, data, len, what);
  if (s) return s;
  return sm__pb_arena_unpack(desc, data, len, what, out);
}
