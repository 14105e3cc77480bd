/* table.c - reading and writing the SSTable of variables.index (spec §6).
 *
 * The reader trusts nothing: block handles are checked against the file, every block checksum is
 * verified, Snappy blocks are validated before they are expanded, restart arrays and entry lengths
 * are bounds-checked, and keys must increase strictly and stay within their index separators. */
#include "format/table.h"

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "base/lazylib.h"
#include "format/crc32c.h"

#define FOOTER_SIZE 48
#define TRAILER_SIZE 5
#define MAGIC_LO 0x8B80FB57u
#define MAGIC_HI 0xDB477524u
/* A block bigger than this once expanded is refused (TF's blocks are ~256 KiB; one entry larger
 * than twice that gets a block of its own, and index values are small protos). */
#define MAX_BLOCK_BYTES ((size_t)1 << 30)

/* ---- varints and fixed ints ------------------------------------------------------------------ */

const uint8_t *sm__get_varint32(const uint8_t *p, const uint8_t *limit, uint32_t *v) {
  uint32_t r = 0;
  for (int shift = 0; shift <= 28 && p < limit; shift += 7) {
    uint32_t b = *p++;
    if (shift == 28 && (b & 0xf0)) return NULL; /* more than 32 bits */
    r |= (b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return p;
    }
  }
  return NULL;
}

const uint8_t *sm__get_varint64(const uint8_t *p, const uint8_t *limit, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t b = *p++;
    if (shift == 63 && (b & 0xfe)) return NULL; /* more than 64 bits */
    r |= (b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return p;
    }
  }
  return NULL;
}

size_t sm__put_varint64(uint8_t *buf, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  buf[n++] = (uint8_t)v;
  return n;
}

static uint32_t get_fixed32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_fixed32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static int key_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  size_t n = al < bl ? al : bl;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return al < bl ? -1 : al > bl;
}

/* ---- reader ---------------------------------------------------------------------------------- */

typedef struct {
  uint64_t offset, size;
} handle;

typedef struct {
  const uint8_t *data; /* entries, restart array excluded */
  size_t size;
  const uint8_t *restarts;
  uint32_t nrestarts;
  uint8_t *owned; /* expanded Snappy block, or NULL when data points into the file */
  uint64_t file_offset;
} block;

typedef struct {
  uint8_t *key;
  size_t klen;
  handle h;
} index_entry;

struct sm_table {
  char *name;
  const uint8_t *data;
  size_t size;
  index_entry *index;
  size_t nindex;
};

static const uint8_t *get_handle(const uint8_t *p, const uint8_t *limit, handle *h) {
  p = sm__get_varint64(p, limit, &h->offset);
  return p ? sm__get_varint64(p, limit, &h->size) : NULL;
}

static sm_status *read_block(const sm_table *t, handle h, const char *what, block *b) {
  memset(b, 0, sizeof *b);
  b->file_offset = h.offset;
  uint64_t end;
  size_t avail = t->size - FOOTER_SIZE;
  if (sm__add_u64(h.offset, h.size, &end) || sm__add_u64(end, TRAILER_SIZE, &end) || end > avail)
    return sm_status_new(SM_DATA_LOSS,
                         "%s: %s block at offset %llu with size %llu runs past the end of the file (%zu bytes)",
                         t->name, what, (unsigned long long)h.offset, (unsigned long long)h.size, t->size);
  const uint8_t *p = t->data + h.offset;
  size_t n = (size_t)h.size;
  uint8_t type = p[n];
  uint32_t crc = sm__crc32c_extend(sm__crc32c_value(p, n), &type, 1);
  if (sm__crc32c_mask(crc) != get_fixed32(p + n + 1))
    return sm_status_new(SM_DATA_LOSS, "%s: block checksum mismatch at offset %llu (%s block)", t->name,
                         (unsigned long long)h.offset, what);
  const uint8_t *content = p;
  size_t csize = n;
  if (type == 1) {
    size_t ulen;
    if (sm__lazy_snappy_missing())
      return sm_status_new(SM_UNIMPLEMENTED, "%s: the %s block at offset %llu is Snappy-compressed and libsnappy "
                           "could not be loaded", t->name, what, (unsigned long long)h.offset);
    if (snappy_uncompressed_length((const char *)p, n, &ulen) != SNAPPY_OK ||
        snappy_validate_compressed_buffer((const char *)p, n) != SNAPPY_OK)
      return sm_status_new(SM_DATA_LOSS, "%s: corrupt Snappy data in the %s block at offset %llu", t->name,
                           what, (unsigned long long)h.offset);
    if (ulen > MAX_BLOCK_BYTES)
      return sm_status_new(SM_OUT_OF_RANGE, "%s: %s block at offset %llu expands to %zu bytes, over the limit",
                           t->name, what, (unsigned long long)h.offset, ulen);
    b->owned = malloc(ulen ? ulen : 1);
    if (!b->owned) return sm_status_new(SM_NO_MEMORY, "%s: out of memory expanding a block", t->name);
    size_t got = ulen;
    if (snappy_uncompress((const char *)p, n, (char *)b->owned, &got) != SNAPPY_OK || got != ulen) {
      free(b->owned);
      b->owned = NULL;
      return sm_status_new(SM_DATA_LOSS, "%s: corrupt Snappy data in the %s block at offset %llu", t->name,
                           what, (unsigned long long)h.offset);
    }
    content = b->owned;
    csize = ulen;
  } else if (type != 0) {
    return sm_status_new(SM_DATA_LOSS, "%s: bad block type %u at offset %llu", t->name, type,
                         (unsigned long long)h.offset);
  }
  if (csize < 4) goto bad;
  uint32_t nr = get_fixed32(content + csize - 4);
  if (nr > (csize - 4) / 4) goto bad;
  b->data = content;
  b->size = csize - 4 - (size_t)nr * 4;
  b->restarts = content + b->size;
  b->nrestarts = nr;
  if (nr == 0 && b->size != 0) goto bad;
  for (uint32_t i = 0; i < nr; i++) {
    uint32_t r = get_fixed32(b->restarts + 4 * (size_t)i);
    if (i == 0 ? r != 0 : r <= get_fixed32(b->restarts + 4 * (size_t)(i - 1))) goto bad;
    if (r >= b->size && !(r == 0 && b->size == 0)) goto bad;
  }
  return NULL;
bad:
  free(b->owned);
  b->owned = NULL;
  return sm_status_new(SM_DATA_LOSS, "%s: bad restart array in the %s block at offset %llu", t->name, what,
                       (unsigned long long)h.offset);
}

static void block_free(block *b) {
  free(b->owned);
  memset(b, 0, sizeof *b);
}

/* One decoded entry of a block. */
typedef struct {
  uint32_t shared;
  const uint8_t *suffix;
  uint32_t nsuffix;
  const uint8_t *value;
  uint32_t vlen;
  size_t next; /* offset of the following entry */
} raw_entry;

static int decode_entry(const block *b, size_t off, raw_entry *e) {
  const uint8_t *p = b->data + off, *limit = b->data + b->size;
  uint32_t nonshared, vlen;
  if (!(p = sm__get_varint32(p, limit, &e->shared))) return 0;
  if (!(p = sm__get_varint32(p, limit, &nonshared))) return 0;
  if (!(p = sm__get_varint32(p, limit, &vlen))) return 0;
  if ((uint64_t)nonshared + vlen > (uint64_t)(limit - p)) return 0;
  e->suffix = p;
  e->nsuffix = nonshared;
  e->value = p + nonshared;
  e->vlen = vlen;
  e->next = (size_t)(e->value + vlen - b->data);
  return 1;
}

struct sm_table_iter {
  const sm_table *t;
  block blk;
  size_t bi;          /* index of the loaded block; t->nindex when none */
  size_t pos;         /* offset of the next entry in blk */
  uint32_t next_rs;   /* next restart point expected while scanning */
  uint8_t *key, *prev;
  size_t klen, plen, kcap, pcap;
  int have_key;       /* key holds the previous entry of this block (shared prefix source) */
  const uint8_t *value;
  size_t vlen;
  int valid;
};

sm_status *sm__table_iter_new(const sm_table *t, sm_table_iter **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return sm_status_new(SM_NO_MEMORY, "out of memory");
  (*out)->t = t;
  (*out)->bi = t->nindex;
  return NULL;
}

void sm__table_iter_free(sm_table_iter *it) {
  if (!it) return;
  block_free(&it->blk);
  free(it->key);
  free(it->prev);
  free(it);
}

int sm__table_iter_valid(const sm_table_iter *it) { return it->valid; }

const uint8_t *sm__table_iter_key(const sm_table_iter *it, size_t *len) {
  *len = it->valid ? it->klen : 0;
  if (!it->valid) return NULL;
  return it->key ? it->key : (const uint8_t *)""; /* empty first key: no buffer yet */
}

const uint8_t *sm__table_iter_value(const sm_table_iter *it, size_t *len) {
  *len = it->valid ? it->vlen : 0;
  return it->valid ? it->value : NULL;
}

static sm_status *iter_fail(sm_table_iter *it, const char *why) {
  it->valid = 0;
  return sm_status_new(SM_DATA_LOSS, "%s: %s in the data block at offset %llu", it->t->name, why,
                       (unsigned long long)it->blk.file_offset);
}

static sm_status *load_block(sm_table_iter *it, size_t bi) {
  block_free(&it->blk);
  it->bi = it->t->nindex;
  it->have_key = 0;
  sm_status *s = read_block(it->t, it->t->index[bi].h, "data", &it->blk);
  if (s) return s;
  it->bi = bi;
  it->pos = 0;
  it->next_rs = 0;
  return NULL;
}

/* Decodes the entry at it->pos into it->key/value. `check_order` compares with the previous key
 * (sequential scans); the index separators bound every key of a block. */
static sm_status *decode_at_pos(sm_table_iter *it, int check_order) {
  block *b = &it->blk;
  raw_entry e;
  size_t off = it->pos;
  if (!decode_entry(b, off, &e)) return iter_fail(it, "truncated or oversized entry");
  /* Restart points must fall on entry boundaries and start a full key. */
  if (it->next_rs < b->nrestarts) {
    uint32_t r = get_fixed32(b->restarts + 4 * (size_t)it->next_rs);
    if (r < off) return iter_fail(it, "restart point inside an entry");
    if (r == off) {
      if (e.shared != 0) return iter_fail(it, "restart entry with a shared prefix");
      it->next_rs++;
    }
  }
  if (e.shared > (it->have_key ? it->klen : 0)) return iter_fail(it, "shared key prefix longer than the previous key");
  size_t nk = (size_t)e.shared + e.nsuffix;
  if (nk > it->pcap) {
    uint8_t *np = realloc(it->prev, nk);
    if (!np) return sm_status_new(SM_NO_MEMORY, "out of memory");
    it->prev = np;
    it->pcap = nk;
  }
  if (e.shared) memcpy(it->prev, it->key, e.shared);
  if (e.nsuffix) memcpy(it->prev + e.shared, e.suffix, e.nsuffix);
  /* swap: prev becomes the new key, key keeps the old one for the order check */
  uint8_t *tk = it->key;
  size_t tc = it->kcap, oldlen = it->klen;
  it->key = it->prev;
  it->kcap = it->pcap;
  it->klen = nk;
  it->prev = tk;
  it->pcap = tc;
  it->plen = oldlen;
  if (check_order && it->have_key && key_cmp(it->key, it->klen, it->prev, it->plen) <= 0)
    return iter_fail(it, "keys out of order");
  const index_entry *ie = &it->t->index[it->bi];
  if (key_cmp(it->key, it->klen, ie->key, ie->klen) > 0) return iter_fail(it, "key past its index separator");
  if (it->bi > 0) {
    const index_entry *pe = &it->t->index[it->bi - 1];
    if (key_cmp(it->key, it->klen, pe->key, pe->klen) <= 0)
      return iter_fail(it, "key before the previous index separator");
  }
  it->have_key = 1;
  it->value = e.value;
  it->vlen = e.vlen;
  it->pos = e.next;
  it->valid = 1;
  return NULL;
}

/* Moves to the first entry at or after the current position, crossing into later blocks. */
static sm_status *settle(sm_table_iter *it, int check_order) {
  for (;;) {
    if (it->bi < it->t->nindex && it->pos < it->blk.size) return decode_at_pos(it, check_order);
    if (it->bi < it->t->nindex && it->next_rs < it->blk.nrestarts && it->blk.size != 0)
      return iter_fail(it, "restart point past the last entry");
    size_t nb = it->bi < it->t->nindex ? it->bi + 1 : it->t->nindex;
    it->valid = 0;
    if (nb >= it->t->nindex) {
      block_free(&it->blk);
      it->bi = it->t->nindex;
      return NULL;
    }
    /* Keep the last key of this block so the next block's first key is checked against it. */
    size_t keep = it->have_key ? it->klen : 0;
    int had = it->have_key;
    sm_status *s = load_block(it, nb);
    if (s) return s;
    if (it->blk.size == 0) return sm_status_new(SM_DATA_LOSS, "%s: empty data block at offset %llu", it->t->name,
                                                (unsigned long long)it->blk.file_offset);
    s = decode_at_pos(it, 0);
    if (s) return s;
    if (had && key_cmp(it->key, it->klen, it->prev, keep) <= 0) return iter_fail(it, "keys out of order across blocks");
    return NULL;
  }
}

sm_status *sm__table_iter_first(sm_table_iter *it) {
  it->valid = 0;
  block_free(&it->blk);
  it->bi = it->t->nindex;
  it->have_key = 0;
  if (it->t->nindex == 0) return NULL;
  sm_status *s = load_block(it, 0);
  if (s) return s;
  return settle(it, 1);
}

sm_status *sm__table_iter_next(sm_table_iter *it) {
  if (!it->valid) return NULL;
  return settle(it, 1);
}

sm_status *sm__table_iter_seek(sm_table_iter *it, const void *key, size_t klen) {
  const sm_table *t = it->t;
  it->valid = 0;
  /* First block whose separator is >= key. */
  size_t lo = 0, hi = t->nindex;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key_cmp(t->index[mid].key, t->index[mid].klen, key, klen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo >= t->nindex) {
    block_free(&it->blk);
    it->bi = t->nindex;
    return NULL;
  }
  sm_status *s = load_block(it, lo);
  if (s) return s;
  block *b = &it->blk;
  /* Last restart point whose key is < target; scan from there. */
  uint32_t rl = 0, rh = b->nrestarts;
  while (rh - rl > 1) {
    uint32_t mid = rl + (rh - rl) / 2;
    raw_entry e;
    uint32_t off = get_fixed32(b->restarts + 4 * (size_t)mid);
    if (!decode_entry(b, off, &e) || e.shared != 0) return iter_fail(it, "bad restart entry");
    if (key_cmp(e.suffix, e.nsuffix, key, klen) < 0)
      rl = mid;
    else
      rh = mid;
  }
  if (b->nrestarts) {
    it->pos = get_fixed32(b->restarts + 4 * (size_t)rl);
    it->next_rs = rl;
  }
  it->have_key = 0;
  for (;;) {
    s = settle(it, 1);
    if (s || !it->valid) return s;
    if (key_cmp(it->key, it->klen, key, klen) >= 0) return NULL;
  }
}

sm_status *sm__table_get(const sm_table *t, const void *key, size_t klen, uint8_t **value, size_t *vlen) {
  *value = NULL;
  *vlen = 0;
  sm_table_iter *it;
  sm_status *s = sm__table_iter_new(t, &it);
  if (s) return s;
  s = sm__table_iter_seek(it, key, klen);
  if (!s && (!it->valid || key_cmp(it->key, it->klen, key, klen) != 0))
    s = sm_status_new(SM_NOT_FOUND, "%s: key not found", t->name);
  if (!s) {
    *value = malloc(it->vlen + 1);
    if (!*value) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
    } else {
      if (it->vlen) memcpy(*value, it->value, it->vlen);
      (*value)[it->vlen] = 0;
      *vlen = it->vlen;
    }
  }
  sm__table_iter_free(it);
  return s;
}

void sm__table_free(sm_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nindex; i++) free(t->index[i].key);
  free(t->index);
  free(t->name);
  free(t);
}

size_t sm__table_num_blocks(const sm_table *t) { return t->nindex; }

sm_status *sm__table_open(const char *name, const uint8_t *data, size_t size, sm_table **out) {
  *out = NULL;
  if (size < FOOTER_SIZE)
    return sm_status_new(SM_DATA_LOSS, "%s: file is too short to be an sstable (%zu bytes)", name, size);
  const uint8_t *f = data + size - FOOTER_SIZE;
  if (get_fixed32(f + 40) != MAGIC_LO || get_fixed32(f + 44) != MAGIC_HI)
    return sm_status_new(SM_DATA_LOSS, "%s: not an sstable (bad magic number)", name);
  sm_table *t = calloc(1, sizeof *t);
  if (!t || !(t->name = strdup(name))) {
    free(t);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  t->data = data;
  t->size = size;
  handle meta, idx;
  const uint8_t *p = get_handle(f, f + 40, &meta);
  if (p) p = get_handle(p, f + 40, &idx);
  sm_status *s = NULL;
  block b = {0};
  if (!p) {
    s = sm_status_new(SM_DATA_LOSS, "%s: bad block handle in the footer", name);
    goto out;
  }
  /* TF only keeps the metaindex handle; checking its block costs little and catches damage. */
  if ((s = read_block(t, meta, "metaindex", &b))) goto out;
  block_free(&b);
  if ((s = read_block(t, idx, "index", &b))) goto out;
  /* Every index entry is a restart point (interval 1) but accept any interval, as LevelDB does. */
  size_t cap = 0, off = 0;
  uint8_t *prev = NULL;
  size_t plen = 0;
  while (off < b.size) {
    raw_entry e;
    if (!decode_entry(&b, off, &e) || e.shared > plen) {
      s = sm_status_new(SM_DATA_LOSS, "%s: corrupt entry in the index block at offset %llu", name,
                        (unsigned long long)b.file_offset);
      goto out;
    }
    if (t->nindex == cap) {
      size_t nc = cap ? cap * 2 : 16;
      index_entry *ni = realloc(t->index, nc * sizeof *ni);
      if (!ni) {
        s = sm_status_new(SM_NO_MEMORY, "out of memory");
        goto out;
      }
      t->index = ni;
      cap = nc;
    }
    index_entry *ie = &t->index[t->nindex];
    ie->klen = (size_t)e.shared + e.nsuffix;
    ie->key = malloc(ie->klen ? ie->klen : 1);
    if (!ie->key) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      goto out;
    }
    if (e.shared) memcpy(ie->key, prev, e.shared);
    if (e.nsuffix) memcpy(ie->key + e.shared, e.suffix, e.nsuffix);
    t->nindex++;
    if (prev && key_cmp(ie->key, ie->klen, prev, plen) <= 0) {
      s = sm_status_new(SM_DATA_LOSS, "%s: index block keys out of order", name);
      goto out;
    }
    if (get_handle(e.value, e.value + e.vlen, &ie->h) != e.value + e.vlen) {
      s = sm_status_new(SM_DATA_LOSS, "%s: bad block handle in the index block", name);
      goto out;
    }
    prev = ie->key;
    plen = ie->klen;
    off = e.next;
  }
out:
  block_free(&b);
  if (s) {
    sm__table_free(t);
    return s;
  }
  *out = t;
  return NULL;
}

/* ---- writer ---------------------------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
} buf;

static int buf_reserve(buf *b, size_t more) {
  size_t need;
  if (sm__add_size(b->len, more, &need)) return 0;
  if (need <= b->cap) return 1;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < need) {
    if (sm__mul_size(nc, 2, &nc)) return 0;
  }
  uint8_t *np = realloc(b->p, nc);
  if (!np) return 0;
  b->p = np;
  b->cap = nc;
  return 1;
}

static int buf_put(buf *b, const void *d, size_t n) {
  if (!buf_reserve(b, n)) return 0;
  if (n) memcpy(b->p + b->len, d, n);
  b->len += n;
  return 1;
}

static int buf_varint(buf *b, uint64_t v) {
  uint8_t tmp[10];
  return buf_put(b, tmp, sm__put_varint64(tmp, v));
}

static int buf_fixed32(buf *b, uint32_t v) {
  uint8_t tmp[4];
  put_fixed32(tmp, v);
  return buf_put(b, tmp, 4);
}

typedef struct {
  buf data;
  buf restarts; /* uint32 offsets, host order */
  buf last;
  int counter;
  int interval;
  int empty;
} block_builder;

static void bb_reset(block_builder *bb) {
  bb->data.len = 0;
  bb->restarts.len = 0;
  bb->last.len = 0;
  bb->counter = 0;
  bb->empty = 1;
  uint32_t zero = 0;
  buf_put(&bb->restarts, &zero, 4); /* capacity reserved at creation; cannot fail after */
}

static int bb_add(block_builder *bb, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  size_t shared = 0;
  if (bb->counter < bb->interval) {
    size_t m = kl < bb->last.len ? kl : bb->last.len;
    while (shared < m && bb->last.p[shared] == k[shared]) shared++;
  } else {
    uint32_t r = (uint32_t)bb->data.len;
    if (!buf_put(&bb->restarts, &r, 4)) return 0;
    bb->counter = 0;
  }
  if (!buf_varint(&bb->data, shared) || !buf_varint(&bb->data, kl - shared) || !buf_varint(&bb->data, vl) ||
      !buf_put(&bb->data, k + shared, kl - shared) || !buf_put(&bb->data, v, vl))
    return 0;
  bb->last.len = 0;
  if (!buf_put(&bb->last, k, kl)) return 0;
  bb->counter++;
  bb->empty = 0;
  return 1;
}

static size_t bb_estimate(const block_builder *bb) { return bb->data.len + bb->restarts.len + 4; }

/* Appends the restart array; data then holds the finished block. */
static int bb_finish(block_builder *bb) {
  size_t n = bb->restarts.len / 4;
  for (size_t i = 0; i < n; i++) {
    uint32_t r;
    memcpy(&r, bb->restarts.p + 4 * i, 4);
    if (!buf_fixed32(&bb->data, r)) return 0;
  }
  return buf_fixed32(&bb->data, (uint32_t)n);
}

struct sm_table_builder {
  size_t block_size;
  block_builder data, index;
  buf out;
  buf last_key;
  uint64_t num_entries;
  int pending;
  handle pending_h;
  int failed, finished;
};

sm_status *sm__table_builder_new(sm_table_builder **out) {
  sm_table_builder *b = calloc(1, sizeof *b);
  if (!b) return sm_status_new(SM_NO_MEMORY, "out of memory");
  b->block_size = SM_TABLE_BLOCK_SIZE;
  b->data.interval = SM_TABLE_RESTART_INTERVAL;
  b->index.interval = 1;
  if (!buf_reserve(&b->data.restarts, 4) || !buf_reserve(&b->index.restarts, 4)) {
    sm__table_builder_free(b);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  bb_reset(&b->data);
  bb_reset(&b->index);
  *out = b;
  return NULL;
}

void sm__table_builder_set_options(sm_table_builder *b, size_t block_size, int restart_interval) {
  if (block_size) b->block_size = block_size;
  if (restart_interval > 0) b->data.interval = restart_interval;
}

static void free_bb(block_builder *bb) {
  free(bb->data.p);
  free(bb->restarts.p);
  free(bb->last.p);
}

void sm__table_builder_free(sm_table_builder *b) {
  if (!b) return;
  free_bb(&b->data);
  free_bb(&b->index);
  free(b->out.p);
  free(b->last_key.p);
  free(b);
}

static int write_block(sm_table_builder *b, block_builder *bb, handle *h) {
  if (!bb_finish(bb)) return 0;
  h->offset = b->out.len;
  h->size = bb->data.len;
  uint8_t type = 0;
  uint32_t crc = sm__crc32c_extend(sm__crc32c_value(bb->data.p, bb->data.len), &type, 1);
  if (!buf_put(&b->out, bb->data.p, bb->data.len) || !buf_put(&b->out, &type, 1) ||
      !buf_fixed32(&b->out, sm__crc32c_mask(crc)))
    return 0;
  bb_reset(bb);
  return 1;
}

static int flush(sm_table_builder *b) {
  if (b->data.empty) return 1;
  if (!write_block(b, &b->data, &b->pending_h)) return 0;
  b->pending = 1;
  return 1;
}

static int add_index_entry(sm_table_builder *b) {
  uint8_t hb[20];
  size_t n = sm__put_varint64(hb, b->pending_h.offset);
  n += sm__put_varint64(hb + n, b->pending_h.size);
  b->pending = 0;
  return bb_add(&b->index, b->last_key.p, b->last_key.len, hb, n);
}

static sm_status *oom(sm_table_builder *b) {
  b->failed = 1;
  return sm_status_new(SM_NO_MEMORY, "out of memory building a table");
}

sm_status *sm__table_builder_add(sm_table_builder *b, const void *key, size_t klen, const void *value,
                                size_t vlen) {
  const uint8_t *k = key;
  if (b->failed || b->finished) return sm_status_new(SM_FAILED_PRECONDITION, "table builder already finished or failed");
  if (klen > UINT32_MAX || vlen > UINT32_MAX)
    return sm_status_new(SM_OUT_OF_RANGE, "table entry of %zu + %zu bytes is too large", klen, vlen);
  if (b->num_entries > 0) {
    if (key_cmp(k, klen, b->last_key.p, b->last_key.len) <= 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "table keys must be added in strictly increasing order");
    /* TF flushes first when one entry would make the block overly large (2 x block size). */
    if (klen + vlen >= 2 * b->block_size && !flush(b)) return oom(b);
  }
  if (b->pending) {
    /* FindShortestSeparator(last_key, key) */
    size_t m = klen < b->last_key.len ? klen : b->last_key.len, d = 0;
    while (d < m && b->last_key.p[d] == k[d]) d++;
    if (d < m) {
      uint8_t c = b->last_key.p[d];
      if (c < 0xff && c + 1 < k[d]) {
        b->last_key.p[d] = (uint8_t)(c + 1);
        b->last_key.len = d + 1;
      }
    }
    if (!add_index_entry(b)) return oom(b);
  }
  b->last_key.len = 0;
  if (!buf_put(&b->last_key, k, klen)) return oom(b);
  b->num_entries++;
  if (!bb_add(&b->data, k, klen, value, vlen)) return oom(b);
  if (bb_estimate(&b->data) >= b->block_size && !flush(b)) return oom(b);
  return NULL;
}

sm_status *sm__table_builder_finish(sm_table_builder *b, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  if (b->failed || b->finished) return sm_status_new(SM_FAILED_PRECONDITION, "table builder already finished or failed");
  b->finished = 1;
  if (!flush(b)) return oom(b);
  handle meta, idx;
  block_builder empty = {0};
  empty.interval = b->data.interval;
  if (!buf_reserve(&empty.restarts, 4)) return oom(b);
  bb_reset(&empty);
  int ok = write_block(b, &empty, &meta);
  free_bb(&empty);
  if (!ok) return oom(b);
  if (b->pending) {
    /* FindShortSuccessor(last_key) */
    for (size_t i = 0; i < b->last_key.len; i++) {
      if (b->last_key.p[i] != 0xff) {
        b->last_key.p[i]++;
        b->last_key.len = i + 1;
        break;
      }
    }
    if (!add_index_entry(b)) return oom(b);
  }
  if (!write_block(b, &b->index, &idx)) return oom(b);
  uint8_t footer[FOOTER_SIZE] = {0};
  size_t n = sm__put_varint64(footer, meta.offset);
  n += sm__put_varint64(footer + n, meta.size);
  n += sm__put_varint64(footer + n, idx.offset);
  sm__put_varint64(footer + n, idx.size);
  put_fixed32(footer + 40, MAGIC_LO);
  put_fixed32(footer + 44, MAGIC_HI);
  if (!buf_put(&b->out, footer, FOOTER_SIZE)) return oom(b);
  *out = b->out.p;
  *len = b->out.len;
  b->out.p = NULL;
  b->out.len = b->out.cap = 0;
  return NULL;
}
