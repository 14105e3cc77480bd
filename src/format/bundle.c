/* bundle.c - the variables bundle (TensorBundle V2, spec §5): reading, with every size, offset
 * and checksum verified, and writing the files TensorFlow's BundleWriter writes.
 *
 * The index is read whole at open (it is small: one proto per tensor) and its table closed; data
 * shards stay mapped. A shard mapping is reference-counted so that a large tensor can borrow it
 * without a copy and outlive the bundle. */
#include "savedmodel/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/checked.h"
#include "base/file.h"
#include "base/tensor_internal.h"
#include "format/bundle_internal.h"
#include "format/crc32c.h"
#include "format/table.h"
#include "tensor_bundle.pb-c.h"

/* Tensors at least this large are returned over the mapping instead of being copied. */
#define ZERO_COPY_MIN ((uint64_t)64 * 1024)
/* More shards than this is not a TF bundle (and would mean that many open files). */
#define MAX_SHARDS 100000
/* Slices of one partitioned tensor; pairwise overlap checks stay cheap below this. */
#define MAX_SLICES 4096
/* TF: kTensorBundleVersion (consumer) and kTensorBundleMinProducer. */
#define BUNDLE_CONSUMER 1
#define BUNDLE_MIN_PRODUCER 0

typedef struct shard {
  sm_file_map m;
  char *path;
  int refs; /* atomic: the bundle holds one, each zero-copy tensor one */
} shard;

static void shard_unref(void *p) {
  shard *s = p;
  if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    sm__file_map_close(&s->m);
    free(s->path);
    free(s);
  }
}

typedef struct {
  int64_t *start, *len; /* len < 0: whole dimension */
} slice;

typedef struct {
  char *key; /* NUL-terminated copy; klen bytes (slice keys contain NULs) */
  size_t klen;
  int dtype;
  int rank;
  int64_t *dims;
  int shard;
  uint64_t offset, size;
  uint32_t crc;
  size_t nslices;
  slice *slices;
} entry;

struct sm_bundle {
  char *prefix;
  char *index_path;
  int num_shards;
  shard **shards;
  int swap; /* data was written on a host of the other byte order */
  entry *ents;
  size_t nents;
  size_t *visible; /* indices of tensor entries (slice entries hidden) */
  size_t nvisible;
};

static int is_little_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

static void entry_free(entry *e) {
  free(e->key);
  free(e->dims);
  for (size_t i = 0; i < e->nslices; i++) {
    free(e->slices[i].start);
    free(e->slices[i].len);
  }
  free(e->slices);
}

void sm_bundle_close(sm_bundle *b) {
  if (!b) return;
  for (int i = 0; i < b->num_shards; i++) shard_unref(b->shards[i]);
  free(b->shards);
  for (size_t i = 0; i < b->nents; i++) entry_free(&b->ents[i]);
  free(b->ents);
  free(b->visible);
  free(b->prefix);
  free(b->index_path);
  free(b);
}

/* Printable form of a key for messages: slice keys have NULs, show those escaped. */
static const char *key_str(const entry *e, char *buf, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < e->klen && k + 5 < cap; i++) {
    unsigned char c = (unsigned char)e->key[i];
    if (c >= 32 && c < 127)
      buf[k++] = (char)c;
    else
      k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", c);
  }
  buf[k] = 0;
  return buf;
}

static sm_status *parse_header(sm_bundle *b, const uint8_t *v, size_t vl) {
  Tensorflow__BundleHeaderProto *h = tensorflow__bundle_header_proto__unpack(NULL, vl, v);
  if (!h) return sm_status_new(SM_DATA_LOSS, "%s: the bundle header (key \"\") does not parse", b->index_path);
  sm_status *s = NULL;
  if (h->num_shards < 1 || h->num_shards > MAX_SHARDS) {
    s = sm_status_new(SM_DATA_LOSS, "%s: bundle header has num_shards %d", b->index_path, (int)h->num_shards);
  } else if (h->endianness != TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__LITTLE &&
             h->endianness != TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__BIG) {
    s = sm_status_new(SM_DATA_LOSS, "%s: bundle header has unknown endianness %d", b->index_path, (int)h->endianness);
  } else if (h->version) {
    /* TF's CheckVersions(version, consumer 1, min producer 0). */
    const Tensorflow__VersionDef *ver = h->version;
    if (ver->producer < BUNDLE_MIN_PRODUCER)
      s = sm_status_new(SM_FAILED_PRECONDITION, "%s: bundle producer version %d is older than the minimum %d",
                        b->index_path, (int)ver->producer, BUNDLE_MIN_PRODUCER);
    else if (ver->min_consumer > BUNDLE_CONSUMER)
      s = sm_status_new(SM_FAILED_PRECONDITION,
                        "%s: bundle needs reader version %d, this library reads version %d (written by a newer "
                        "TensorFlow with format changes?)",
                        b->index_path, (int)ver->min_consumer, BUNDLE_CONSUMER);
    for (size_t i = 0; !s && i < ver->n_bad_consumers; i++)
      if (ver->bad_consumers[i] == BUNDLE_CONSUMER)
        s = sm_status_new(SM_FAILED_PRECONDITION, "%s: bundle disallows reader version %d", b->index_path,
                          BUNDLE_CONSUMER);
  }
  if (!s) {
    b->num_shards = h->num_shards;
    int big = h->endianness == TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__BIG;
    b->swap = big == is_little_endian();
  }
  tensorflow__bundle_header_proto__free_unpacked(h, NULL);
  return s;
}

/* Parses and validates one BundleEntryProto into e (key already set). */
static sm_status *parse_entry(sm_bundle *b, entry *e, const uint8_t *v, size_t vl) {
  char kb[256];
  Tensorflow__BundleEntryProto *p = tensorflow__bundle_entry_proto__unpack(NULL, vl, v);
  if (!p) return sm_status_new(SM_DATA_LOSS, "%s: entry %s does not parse", b->index_path, key_str(e, kb, sizeof kb));
  sm_status *s = NULL;
  const char *name = sm_dtype_name((int)p->dtype);
  if (!name || p->dtype == 0 || (int)p->dtype >= SM_DTYPE_REF_OFFSET) {
    s = sm_status_new(SM_DATA_LOSS, "%s: entry %s has invalid dtype %d", b->index_path, key_str(e, kb, sizeof kb),
                      (int)p->dtype);
    goto out;
  }
  e->dtype = (int)p->dtype;
  if (p->shape && p->shape->unknown_rank) {
    s = sm_status_new(SM_DATA_LOSS, "%s: entry %s has a shape of unknown rank", b->index_path,
                      key_str(e, kb, sizeof kb));
    goto out;
  }
  size_t rank = p->shape ? p->shape->n_dim : 0;
  if (rank > SM_MAX_RANK) {
    s = sm_status_new(SM_OUT_OF_RANGE, "%s: entry %s has rank %zu, more than %d", b->index_path,
                      key_str(e, kb, sizeof kb), rank, SM_MAX_RANK);
    goto out;
  }
  e->rank = (int)rank;
  e->dims = calloc(rank ? rank : 1, sizeof *e->dims);
  if (!e->dims) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < rank; i++) e->dims[i] = p->shape->dim[i]->size;
  int64_t n;
  if (sm__num_elements(e->rank, e->dims, &n)) {
    char sb[64];
    s = sm_status_new(SM_DATA_LOSS, "%s: entry %s has an invalid shape %s", b->index_path, key_str(e, kb, sizeof kb),
                      sm_shape_str(e->rank, e->dims, sb, sizeof sb));
    goto out;
  }
  if (p->n_slices == 0) {
    if (p->shard_id < 0 || p->shard_id >= b->num_shards || p->offset < 0 || p->size < 0) {
      s = sm_status_new(SM_DATA_LOSS, "%s: entry %s has shard %d, offset %lld, size %lld (bundle has %d shards)",
                        b->index_path, key_str(e, kb, sizeof kb), (int)p->shard_id, (long long)p->offset,
                        (long long)p->size, b->num_shards);
      goto out;
    }
    e->shard = p->shard_id;
    e->offset = (uint64_t)p->offset;
    e->size = (uint64_t)p->size;
    e->crc = p->crc32c;
    goto out;
  }
  if (p->n_slices > MAX_SLICES) {
    s = sm_status_new(SM_OUT_OF_RANGE, "%s: entry %s has %zu slices, more than %d", b->index_path,
                      key_str(e, kb, sizeof kb), p->n_slices, MAX_SLICES);
    goto out;
  }
  e->slices = calloc(p->n_slices, sizeof *e->slices);
  if (!e->slices) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto out;
  }
  e->nslices = p->n_slices;
  for (size_t i = 0; i < p->n_slices; i++) {
    const Tensorflow__TensorSliceProto *sp = p->slices[i];
    slice *sl = &e->slices[i];
    sl->start = calloc(rank ? rank : 1, sizeof *sl->start);
    sl->len = calloc(rank ? rank : 1, sizeof *sl->len);
    if (!sl->start || !sl->len) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      goto out;
    }
    if (sp->n_extent != rank) {
      s = sm_status_new(SM_DATA_LOSS, "%s: entry %s: slice %zu has %zu extents for a tensor of rank %zu",
                        b->index_path, key_str(e, kb, sizeof kb), i, sp->n_extent, rank);
      goto out;
    }
    for (size_t d = 0; d < rank; d++) {
      const Tensorflow__TensorSliceProto__Extent *x = sp->extent[d];
      int has = x->has_length_case == TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__HAS_LENGTH_LENGTH;
      sl->start[d] = x->start;
      sl->len[d] = has ? x->length : -1;
      int64_t end;
      int bad = x->start < 0 || (has && (x->length < 0 || __builtin_add_overflow(x->start, x->length, &end) ||
                                         end > e->dims[d])) ||
                (!has && x->start != 0);
      if (bad) {
        s = sm_status_new(SM_DATA_LOSS, "%s: entry %s: slice %zu has a bad extent in dimension %zu", b->index_path,
                          key_str(e, kb, sizeof kb), i, d);
        goto out;
      }
    }
  }
out:
  tensorflow__bundle_entry_proto__free_unpacked(p, NULL);
  return s;
}

static sm_status *map_plain(void *ctx, const char *path, sm_file_map *m) {
  (void)ctx;
  return sm__file_map_open(path, m);
}

static sm_status *read_index(sm_bundle *b, sm__bundle_opener open, void *ctx) {
  sm_file_map m;
  sm_status *s = open(ctx, b->index_path, &m);
  if (s) return s;
  sm_table *t = NULL;
  sm_table_iter *it = NULL;
  size_t cap = 0;
  if ((s = sm__table_open(b->index_path, m.data, m.size, &t))) goto out;
  if ((s = sm__table_iter_new(t, &it))) goto out;
  if ((s = sm__table_iter_first(it))) goto out;
  size_t kl, vl;
  const uint8_t *k, *v;
  k = sm__table_iter_key(it, &kl);
  if (!sm__table_iter_valid(it) || kl != 0) {
    s = sm_status_new(SM_DATA_LOSS, "%s: the bundle header entry (key \"\") is missing", b->index_path);
    goto out;
  }
  v = sm__table_iter_value(it, &vl);
  if ((s = parse_header(b, v, vl))) goto out;
  for (s = sm__table_iter_next(it); !s && sm__table_iter_valid(it); s = sm__table_iter_next(it)) {
    k = sm__table_iter_key(it, &kl);
    v = sm__table_iter_value(it, &vl);
    if (b->nents == cap) {
      size_t nc = cap ? cap * 2 : 16;
      entry *ne = realloc(b->ents, nc * sizeof *ne);
      if (!ne) {
        s = sm_status_new(SM_NO_MEMORY, "out of memory");
        break;
      }
      b->ents = ne;
      cap = nc;
    }
    entry *e = &b->ents[b->nents];
    memset(e, 0, sizeof *e);
    e->key = malloc(kl + 1);
    if (!e->key) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      break;
    }
    memcpy(e->key, k, kl);
    e->key[kl] = 0;
    e->klen = kl;
    b->nents++;
    if ((s = parse_entry(b, e, v, vl))) break;
  }
  if (s) goto out;
  b->visible = malloc((b->nents ? b->nents : 1) * sizeof *b->visible);
  if (!b->visible) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto out;
  }
  /* Slice entries start with OrderedCode NumIncreasing(0), a 00 byte. */
  for (size_t i = 0; i < b->nents; i++)
    if (b->ents[i].key[0] != 0) b->visible[b->nvisible++] = i;
out:
  sm__table_iter_free(it);
  sm__table_free(t);
  sm__file_map_close(&m);
  return s;
}

static char *shard_path(const char *prefix, int i, int n) {
  size_t l = strlen(prefix) + 64;
  char *p = malloc(l);
  if (p) snprintf(p, l, "%s.data-%05d-of-%05d", prefix, i, n);
  return p;
}

sm_status *sm_bundle_open(const char *prefix, sm_bundle **out) { return sm__bundle_open_with(prefix, NULL, NULL, out); }

sm_status *sm__bundle_open_with(const char *prefix, sm__bundle_opener open, void *ctx, sm_bundle **out) {
  *out = NULL;
  if (!open) open = map_plain;
  sm_bundle *b = calloc(1, sizeof *b);
  if (!b) return sm_status_new(SM_NO_MEMORY, "out of memory");
  size_t pl = strlen(prefix);
  b->prefix = strdup(prefix);
  b->index_path = malloc(pl + 7);
  if (!b->prefix || !b->index_path) {
    sm_bundle_close(b);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  memcpy(b->index_path, prefix, pl);
  memcpy(b->index_path + pl, ".index", 7);
  sm_status *s = read_index(b, open, ctx);
  if (s) {
    b->num_shards = 0;
    sm_bundle_close(b);
    return s;
  }
  int want = b->num_shards;
  b->num_shards = 0;
  b->shards = calloc((size_t)want, sizeof *b->shards);
  if (!b->shards) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  for (int i = 0; !s && i < want; i++) {
    shard *sh = calloc(1, sizeof *sh);
    if (!sh || !(sh->path = shard_path(prefix, i, want))) {
      free(sh);
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      break;
    }
    s = open(ctx, sh->path, &sh->m);
    if (s) {
      s = sm_status_prefix(s, "%s: data shard %d of %d is missing or unreadable", b->index_path, i, want);
      free(sh->path);
      free(sh);
      break;
    }
    sh->refs = 1;
    b->shards[b->num_shards++] = sh;
  }
  if (s) {
    sm_bundle_close(b);
    return s;
  }
  *out = b;
  return NULL;
}

int sm_bundle_num_shards(const sm_bundle *b) { return b->num_shards; }
size_t sm_bundle_num_entries(const sm_bundle *b) { return b->nvisible; }

static void fill_entry(const entry *e, sm_bundle_entry *out) {
  out->key = e->key;
  out->dtype = e->dtype;
  out->rank = e->rank;
  out->dims = e->dims;
  out->sliced = e->nslices > 0;
}

sm_status *sm_bundle_entry_at(const sm_bundle *b, size_t i, sm_bundle_entry *out) {
  if (i >= b->nvisible)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: entry index %zu is past the %zu entries", b->index_path, i, b->nvisible);
  fill_entry(&b->ents[b->visible[i]], out);
  return NULL;
}

static const entry *find(const sm_bundle *b, const void *key, size_t klen) {
  size_t lo = 0, hi = b->nents;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const entry *e = &b->ents[mid];
    size_t n = e->klen < klen ? e->klen : klen;
    int c = n ? memcmp(e->key, key, n) : 0;
    if (!c) c = e->klen < klen ? -1 : e->klen > klen;
    if (c == 0) return e;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

sm_status *sm_bundle_lookup(const sm_bundle *b, const char *key, sm_bundle_entry *out) {
  const entry *e = key && *key ? find(b, key, strlen(key)) : NULL;
  if (!e) return sm_status_new(SM_NOT_FOUND, "key %s not found in bundle %s", key ? key : "(null)", b->prefix);
  fill_entry(e, out);
  return NULL;
}

/* Reverses the bytes of each element (complex numbers: of each half). */
static void byte_swap(uint8_t *p, size_t nbytes, int dtype) {
  size_t w = sm_dtype_size(dtype);
  if (dtype == SM_COMPLEX64 || dtype == SM_COMPLEX128) w /= 2;
  if (w < 2) return;
  for (size_t i = 0; i + w <= nbytes; i += w)
    for (size_t a = 0, z = w - 1; a < z; a++, z--) {
      uint8_t t = p[i + a];
      p[i + a] = p[i + z];
      p[i + z] = t;
    }
}

/* DT_STRING layout (spec §5.3). The lengths and their checksum are verified in a first pass that
 * allocates nothing, so a crafted count cannot make us allocate more than the data backs. */
static sm_status *read_strings(const entry *e, const shard *sh, const uint8_t *base, int64_t n, sm_tensor **out) {
  char kb[256];
  const uint8_t *end = base + e->size, *p = base;
  if ((uint64_t)n > e->size)
    return sm_status_new(SM_DATA_LOSS, "entry %s in %s: %lld strings cannot fit in %llu bytes", key_str(e, kb, sizeof kb),
                         sh->path, (long long)n, (unsigned long long)e->size);
  uint32_t crc = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t len;
    if (!(p = sm__get_varint64(p, end, &len)))
      return sm_status_new(SM_DATA_LOSS, "entry %s in %s: string length %lld is truncated or malformed",
                           key_str(e, kb, sizeof kb), sh->path, (long long)i);
    uint8_t le[8];
    for (int k = 0; k < 8; k++) le[k] = (uint8_t)(len >> (8 * k));
    crc = sm__crc32c_extend(crc, le, len <= 0xffffffffu ? 4 : 8);
    if (sm__add_u64(total, len, &total)) total = UINT64_MAX;
  }
  if (end - p < 4)
    return sm_status_new(SM_DATA_LOSS, "entry %s in %s: string length checksum is truncated", key_str(e, kb, sizeof kb),
                         sh->path);
  uint32_t stored = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  if (sm__crc32c_mask(crc) != stored)
    return sm_status_new(SM_DATA_LOSS, "checksum mismatch on entry %s in %s (the string length checksum does not match)",
                         key_str(e, kb, sizeof kb), sh->path);
  crc = sm__crc32c_extend(crc, p, 4);
  p += 4;
  if (total != (uint64_t)(end - p))
    return sm_status_new(SM_DATA_LOSS, "entry %s in %s: the strings take %llu bytes but the entry has %llu left",
                         key_str(e, kb, sizeof kb), sh->path, (unsigned long long)total,
                         (unsigned long long)(end - p));
  if (sm__crc32c_mask(sm__crc32c_extend(crc, p, (size_t)total)) != e->crc)
    return sm_status_new(SM_DATA_LOSS, "checksum mismatch on entry %s in %s", key_str(e, kb, sizeof kb), sh->path);
  sm_tensor *t;
  sm_status *s = sm_tensor_new(SM_STRING, e->rank, e->dims, &t);
  if (s) return sm_status_prefix(s, "entry %s", key_str(e, kb, sizeof kb));
  const uint8_t *lp = base;
  for (int64_t i = 0; i < n; i++) {
    uint64_t len;
    lp = sm__get_varint64(lp, end, &len); /* verified above */
    if ((s = sm_tensor_set_string(t, i, p, (size_t)len))) {
      sm_tensor_free(t);
      return s;
    }
    p += len;
  }
  *out = t;
  return NULL;
}

/* Reads a stored (not partitioned) entry. */
static sm_status *read_plain(const sm_bundle *b, const entry *e, int allow_borrow, sm_tensor **out) {
  char kb[256];
  shard *sh = b->shards[e->shard];
  uint64_t end;
  if (sm__add_u64(e->offset, e->size, &end) || end > sh->m.size)
    return sm_status_new(SM_DATA_LOSS, "entry %s: offset/size past the end of shard %d (%s): %llu + %llu > %zu",
                         key_str(e, kb, sizeof kb), e->shard, sh->path, (unsigned long long)e->offset,
                         (unsigned long long)e->size, sh->m.size);
  const uint8_t *p = sh->m.data + e->offset;
  int64_t n;
  if (sm__num_elements(e->rank, e->dims, &n))
    return sm_status_new(SM_DATA_LOSS, "entry %s: invalid shape", key_str(e, kb, sizeof kb));
  if (e->dtype == SM_STRING) return read_strings(e, sh, p, n, out);
  size_t es = sm_dtype_size(e->dtype);
  if (es == 0)
    return sm_status_new(SM_UNIMPLEMENTED, "entry %s: reading %s tensors from a bundle is not supported",
                         key_str(e, kb, sizeof kb), sm_dtype_name(e->dtype));
  uint64_t want;
  if (sm__mul_u64((uint64_t)n, es, &want) || want != e->size) {
    char sb[64];
    return sm_status_new(SM_DATA_LOSS, "entry %s in %s: invalid size %llu for %s %s (%lld elements of %zu bytes)",
                         key_str(e, kb, sizeof kb), sh->path, (unsigned long long)e->size, sm_dtype_name(e->dtype),
                         sm_shape_str(e->rank, e->dims, sb, sizeof sb), (long long)n, es);
  }
  if (sm__crc32c_mask(sm__crc32c_value(p, (size_t)e->size)) != e->crc)
    return sm_status_new(SM_DATA_LOSS, "checksum mismatch on entry %s in %s", key_str(e, kb, sizeof kb), sh->path);
  sm_status *s;
  if (allow_borrow && !b->swap && sh->m.mapped && e->size >= ZERO_COPY_MIN && ((uintptr_t)p % es) == 0) {
    __atomic_add_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL);
    s = sm_tensor_wrap(e->dtype, e->rank, e->dims, (void *)p, (size_t)e->size, shard_unref, sh, out);
    if (s) shard_unref(sh);
    if (s) return sm_status_prefix(s, "entry %s", key_str(e, kb, sizeof kb));
    /* the checksum read every page: they need not stay resident until a kernel reads them */
    sm__tensor_set_file_backed(*out);
    sm__tensor_drop_pages(*out);
    return NULL;
  }
  sm_tensor *t;
  s = sm_tensor_new(e->dtype, e->rank, e->dims, &t);
  if (s) return sm_status_prefix(s, "entry %s", key_str(e, kb, sizeof kb));
  if (e->size) memcpy(sm_tensor_data(t), p, (size_t)e->size);
  if (b->swap) byte_swap(sm_tensor_data(t), (size_t)e->size, e->dtype);
  if (sh->m.mapped) sm__file_map_drop_pages(p, (size_t)e->size); /* copied: the mapping's pages are not needed */
  *out = t;
  return NULL;
}

/* ---- partitioned tensors (spec §5.5) --------------------------------------------------------- */

size_t sm__ordered_num_increasing(uint8_t *out, uint64_t v) {
  uint8_t tmp[8];
  size_t n = 0;
  while (v) {
    tmp[n++] = (uint8_t)v;
    v >>= 8;
  }
  out[0] = (uint8_t)n;
  for (size_t i = 0; i < n; i++) out[1 + i] = tmp[n - 1 - i];
  return n + 1;
}

size_t sm__ordered_signed_num_increasing(uint8_t *out, int64_t v) {
  /* Sign bit, then as many copies of it as extra bytes follow, a delimiter bit, then the value in
   * two's complement, big-endian (ordered_code.cc). */
  static const uint8_t hdr[11][2] = {{0, 0},       {0x80, 0},    {0xc0, 0},    {0xe0, 0},
                                     {0xf0, 0},    {0xf8, 0},    {0xfc, 0},    {0xfe, 0},
                                     {0xff, 0},    {0xff, 0x80}, {0xff, 0xc0}};
  uint64_t x = v < 0 ? ~(uint64_t)v : (uint64_t)v;
  if (x < 64) {
    out[0] = (uint8_t)(0x80 ^ (uint8_t)(uint64_t)v);
    return 1;
  }
  int bits = 64 - __builtin_clzll(x);
  size_t len = (size_t)(bits / 7 + 1);
  uint8_t buf[10];
  buf[0] = buf[1] = v < 0 ? 0xff : 0;
  for (int i = 0; i < 8; i++) buf[2 + i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
  uint8_t *begin = buf + 10 - len;
  begin[0] ^= hdr[len][0];
  begin[1] ^= hdr[len][1];
  memcpy(out, begin, len);
  return len;
}

uint8_t *sm__encode_tensor_name_slice(const char *name, size_t name_len, int rank, const int64_t *starts,
                                     const int64_t *lengths, size_t *len) {
  size_t cap;
  if (sm__mul_size(name_len, 2, &cap) || sm__add_size(cap, 16 + 20 * (size_t)(rank > 0 ? rank : 0), &cap)) return NULL;
  uint8_t *o = malloc(cap);
  if (!o) return NULL;
  size_t k = sm__ordered_num_increasing(o, 0);
  for (size_t i = 0; i < name_len; i++) {
    uint8_t c = (uint8_t)name[i];
    o[k++] = c;
    if (c == 0) o[k++] = 0xff;
    else if (c == 0xff) o[k++] = 0x00;
  }
  o[k++] = 0;
  o[k++] = 1;
  k += sm__ordered_num_increasing(o + k, (uint64_t)rank);
  for (int d = 0; d < rank; d++) {
    k += sm__ordered_signed_num_increasing(o + k, starts[d]);
    k += sm__ordered_signed_num_increasing(o + k, lengths[d] < 0 ? -1 : lengths[d]);
  }
  *len = k;
  return o;
}

static int slices_overlap(const entry *e, const slice *a, const slice *c) {
  for (int d = 0; d < e->rank; d++) {
    int64_t a0 = a->start[d], a1 = a->len[d] < 0 ? e->dims[d] : a0 + a->len[d];
    int64_t c0 = c->start[d], c1 = c->len[d] < 0 ? e->dims[d] : c0 + c->len[d];
    if (a1 <= a0 || c1 <= c0 || a1 <= c0 || c1 <= a0) return 0;
  }
  return 1;
}

static sm_status *read_sliced(const sm_bundle *b, const entry *e, sm_tensor **out) {
  char kb[256];
  size_t es = sm_dtype_size(e->dtype);
  if (es == 0)
    return sm_status_new(SM_UNIMPLEMENTED, "entry %s: partitioned %s tensors are not supported",
                         key_str(e, kb, sizeof kb), sm_dtype_name(e->dtype));
  for (size_t i = 0; i < e->nslices; i++)
    for (size_t j = i + 1; j < e->nslices; j++)
      if (slices_overlap(e, &e->slices[i], &e->slices[j]))
        return sm_status_new(SM_DATA_LOSS, "entry %s: slices %zu and %zu overlap", key_str(e, kb, sizeof kb), i, j);
  /* First check that the stored slices exist, fit their shards and cover the tensor, so the
   * full tensor is only allocated when the files hold that much data. */
  int64_t covered = 0;
  for (size_t i = 0; i < e->nslices; i++) {
    const slice *sl = &e->slices[i];
    size_t klen;
    uint8_t *key = sm__encode_tensor_name_slice(e->key, e->klen, e->rank, sl->start, sl->len, &klen);
    if (!key) return sm_status_new(SM_NO_MEMORY, "out of memory");
    const entry *se = find(b, key, klen);
    free(key);
    if (!se)
      return sm_status_new(SM_DATA_LOSS, "entry %s: the data of slice %zu is missing from %s", key_str(e, kb, sizeof kb),
                           i, b->index_path);
    int shape_ok = se->nslices == 0 && se->dtype == e->dtype && se->rank == e->rank;
    for (int d = 0; shape_ok && d < e->rank; d++) shape_ok = se->dims[d] == (sl->len[d] < 0 ? e->dims[d] : sl->len[d]);
    if (!shape_ok)
      return sm_status_new(SM_DATA_LOSS, "entry %s: slice %zu is stored with a different dtype or shape",
                           key_str(e, kb, sizeof kb), i);
    int64_t sn;
    uint64_t end;
    if (sm__num_elements(se->rank, se->dims, &sn) || sm__add_u64(se->offset, se->size, &end) ||
        end > b->shards[se->shard]->m.size || se->size != (uint64_t)sn * es)
      return sm_status_new(SM_DATA_LOSS, "entry %s: slice %zu has an invalid size or lies past the end of its shard",
                           key_str(e, kb, sizeof kb), i);
    covered += sn;
  }
  int64_t total = 0;
  if (sm__num_elements(e->rank, e->dims, &total) || covered != total)
    return sm_status_new(SM_DATA_LOSS, "entry %s: its slices cover %lld of %lld elements", key_str(e, kb, sizeof kb),
                         (long long)covered, (long long)total);
  sm_tensor *t;
  sm_status *s = sm_tensor_new(e->dtype, e->rank, e->dims, &t);
  if (s) return sm_status_prefix(s, "entry %s", key_str(e, kb, sizeof kb));
  uint8_t *dst = sm_tensor_data(t);
  int64_t stride[SM_MAX_RANK];
  { /* stride[d] = product of the dims after d */
    int64_t acc = 1;
    for (int d = e->rank - 1; d >= 0; d--) {
      stride[d] = acc;
      acc *= e->dims[d];
    }
  }
  for (size_t i = 0; i < e->nslices && !s; i++) {
    const slice *sl = &e->slices[i];
    int64_t len[SM_MAX_RANK];
    for (int d = 0; d < e->rank; d++) len[d] = sl->len[d] < 0 ? e->dims[d] : sl->len[d];
    size_t klen;
    uint8_t *key = sm__encode_tensor_name_slice(e->key, e->klen, e->rank, sl->start, sl->len, &klen);
    if (!key) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      break;
    }
    const entry *se = find(b, key, klen); /* found and checked above */
    free(key);
    sm_tensor *st;
    if ((s = read_plain(b, se, 1, &st))) {
      s = sm_status_prefix(s, "entry %s, slice %zu", key_str(e, kb, sizeof kb), i);
      break;
    }
    int64_t sn = sm_tensor_num_elements(st);
    if (sn > 0) {
      /* Copy rows of the innermost dimension; odometer over the outer ones. */
      const uint8_t *src = sm_tensor_data(st);
      int64_t row = e->rank ? len[e->rank - 1] : 1;
      int64_t idx[SM_MAX_RANK] = {0};
      for (int64_t done = 0; done < sn; done += row) {
        int64_t off = 0;
        for (int d = 0; d < e->rank; d++) off += (sl->start[d] + idx[d]) * stride[d];
        memcpy(dst + (size_t)off * es, src + (size_t)done * es, (size_t)row * es);
        for (int d = e->rank - 2; d >= 0; d--) {
          if (++idx[d] < len[d]) break;
          idx[d] = 0;
        }
      }
    }
    sm_tensor_free(st);
  }
  if (s) {
    sm_tensor_free(t);
    return s;
  }
  *out = t;
  return NULL;
}

static sm_status *bundle_read(const sm_bundle *b, const char *key, int allow_borrow, sm_tensor **out) {
  *out = NULL;
  const entry *e = key && *key ? find(b, key, strlen(key)) : NULL;
  if (!e) return sm_status_new(SM_NOT_FOUND, "key %s not found in bundle %s", key ? key : "(null)", b->prefix);
  if (e->nslices) return read_sliced(b, e, out);
  return read_plain(b, e, allow_borrow, out);
}

sm_status *sm_bundle_read(const sm_bundle *b, const char *key, sm_tensor **out) {
  return bundle_read(b, key, 1, out);
}

sm_status *sm_bundle_read_copy(const sm_bundle *b, const char *key, sm_tensor **out) {
  return bundle_read(b, key, 0, out);
}

/* ---- writer (spec §5.6) ---------------------------------------------------------------------- */

typedef struct {
  char *key;
  size_t klen;
  Tensorflow__BundleEntryProto proto;
  Tensorflow__TensorShapeProto shape;
  Tensorflow__TensorShapeProto__Dim *dimv;
  Tensorflow__TensorShapeProto__Dim **dimp;
  Tensorflow__TensorSliceProto **slices; /* each with its extents, freed by writer_entry_free */
} wentry;

struct sm_bundle_writer {
  char *prefix, *data_path, *index_path, *tmp_data, *tmp_index;
  FILE *data;
  uint64_t pos;
  wentry *ents;
  size_t nents, cap;
  size_t *hash; /* open addressing: index + 1 into ents, 0 = empty */
  size_t hcap;
  int done, failed;
};

static uint64_t hash_key(const void *k, size_t n) {
  const uint8_t *p = k;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The entry for key, or where it would go (*slot). */
static wentry *w_find(sm_bundle_writer *w, const void *key, size_t klen, size_t *slot) {
  size_t i = (size_t)hash_key(key, klen) & (w->hcap - 1);
  for (;; i = (i + 1) & (w->hcap - 1)) {
    if (!w->hash[i]) {
      *slot = i;
      return NULL;
    }
    wentry *e = &w->ents[w->hash[i] - 1];
    if (e->klen == klen && memcmp(e->key, key, klen) == 0) return e;
  }
}

static int w_grow(sm_bundle_writer *w) {
  if (w->nents + 1 > w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 16;
    wentry *ne = realloc(w->ents, nc * sizeof *ne);
    if (!ne) return 0;
    w->ents = ne;
    w->cap = nc;
  }
  if ((w->nents + 1) * 2 > w->hcap) {
    size_t nc = w->hcap ? w->hcap * 2 : 64;
    size_t *nh = calloc(nc, sizeof *nh);
    if (!nh) return 0;
    free(w->hash);
    w->hash = nh;
    w->hcap = nc;
    for (size_t i = 0; i < w->nents; i++) {
      size_t slot = 0;
      w_find(w, w->ents[i].key, w->ents[i].klen, &slot);
      w->hash[slot] = i + 1;
    }
  }
  return 1;
}

/* A new entry for key (not present yet); NULL when out of memory. */
static wentry *w_add(sm_bundle_writer *w, const void *key, size_t klen, int dtype, int rank, const int64_t *dims) {
  size_t slot = 0;
  if (!w_grow(w)) return NULL;
  w_find(w, key, klen, &slot);
  wentry *e = &w->ents[w->nents];
  memset(e, 0, sizeof *e);
  e->key = malloc(klen + 1);
  e->dimv = calloc(rank ? (size_t)rank : 1, sizeof *e->dimv);
  e->dimp = calloc(rank ? (size_t)rank : 1, sizeof *e->dimp);
  if (!e->key || !e->dimv || !e->dimp) {
    free(e->key);
    free(e->dimv);
    free(e->dimp);
    return NULL;
  }
  memcpy(e->key, key, klen);
  e->key[klen] = 0;
  e->klen = klen;
  tensorflow__bundle_entry_proto__init(&e->proto);
  tensorflow__tensor_shape_proto__init(&e->shape);
  for (int i = 0; i < rank; i++) {
    tensorflow__tensor_shape_proto__dim__init(&e->dimv[i]);
    e->dimv[i].size = dims[i];
    e->dimp[i] = &e->dimv[i];
  }
  e->shape.n_dim = (size_t)rank;
  e->shape.dim = e->dimp;
  e->proto.dtype = (Tensorflow__DataType)dtype;
  e->proto.shape = &e->shape; /* TF always writes the shape, even an empty one; re-set at finish */
  w->hash[slot] = ++w->nents;
  return e;
}

static void wentry_free(wentry *e) {
  free(e->key);
  free(e->dimv);
  free(e->dimp);
  for (size_t i = 0; i < e->proto.n_slices; i++) {
    Tensorflow__TensorSliceProto *sp = e->slices[i];
    for (size_t d = 0; d < sp->n_extent; d++) free(sp->extent[d]);
    free(sp->extent);
    free(sp);
  }
  free(e->slices);
}

static char *concat(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *r = malloc(la + lb + 1);
  if (r) {
    memcpy(r, a, la);
    memcpy(r + la, b, lb + 1);
  }
  return r;
}

sm_status *sm_bundle_writer_open(const char *prefix, sm_bundle_writer **out) {
  *out = NULL;
  sm_bundle_writer *w = calloc(1, sizeof *w);
  if (!w) return sm_status_new(SM_NO_MEMORY, "out of memory");
  char suffix[64];
  static unsigned counter;
  snprintf(suffix, sizeof suffix, ".tempstate%ld_%u_%ld", (long)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
           (long)time(NULL));
  w->prefix = strdup(prefix);
  w->data_path = shard_path(prefix, 0, 1);
  w->index_path = concat(prefix, ".index");
  if (!w->prefix || !w->data_path || !w->index_path || !(w->tmp_data = concat(w->data_path, suffix)) ||
      !(w->tmp_index = concat(w->index_path, suffix))) {
    sm_bundle_writer_free(w);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  w->data = fopen(w->tmp_data, "wb");
  if (!w->data) {
    sm_status *s = sm_status_new(errno == ENOENT ? SM_NOT_FOUND : SM_IO, "%s: %s", w->tmp_data, strerror(errno));
    sm_bundle_writer_free(w);
    return s;
  }
  *out = w;
  return NULL;
}

static sm_status *w_write(sm_bundle_writer *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->data) != n) {
    w->failed = 1;
    return sm_status_new(SM_IO, "writing %s: %s", w->tmp_data, strerror(errno));
  }
  w->pos += n;
  return NULL;
}

/* Appends the tensor's bytes (spec §5.3) and records offset, size and checksum in e. */
static sm_status *w_data(sm_bundle_writer *w, const sm_tensor *t, wentry *e) {
  uint64_t start = w->pos;
  uint32_t crc = 0;
  sm_status *s = NULL;
  if (sm_tensor_dtype(t) == SM_STRING) {
    int64_t n = sm_tensor_num_elements(t);
    for (int64_t i = 0; i < n && !s; i++) {
      size_t l;
      sm_tensor_string(t, i, &l);
      uint8_t vb[10], le[8];
      s = w_write(w, vb, sm__put_varint64(vb, l));
      for (int k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)l >> (8 * k));
      crc = sm__crc32c_extend(crc, le, (uint64_t)l <= 0xffffffffu ? 4 : 8);
    }
    uint32_t m = sm__crc32c_mask(crc);
    uint8_t mb[4] = {(uint8_t)m, (uint8_t)(m >> 8), (uint8_t)(m >> 16), (uint8_t)(m >> 24)};
    if (!s) s = w_write(w, mb, 4);
    crc = sm__crc32c_extend(crc, mb, 4);
    for (int64_t i = 0; i < n && !s; i++) {
      size_t l;
      const char *p = sm_tensor_string(t, i, &l);
      s = w_write(w, p, l);
      crc = sm__crc32c_extend(crc, p, l);
    }
  } else {
    size_t nb = sm_tensor_nbytes(t);
    const void *p = sm_tensor_data(t);
    s = w_write(w, p, nb);
    crc = sm__crc32c_value(p, nb);
  }
  if (s) return s;
  e->proto.shard_id = 0;
  e->proto.offset = (int64_t)start;
  e->proto.size = (int64_t)(w->pos - start);
  e->proto.crc32c = sm__crc32c_mask(crc);
  return NULL;
}

static sm_status *w_check(sm_bundle_writer *w) {
  if (w->done || w->failed) return sm_status_new(SM_FAILED_PRECONDITION, "bundle writer for %s already finished or failed", w->prefix);
  return NULL;
}

sm_status *sm_bundle_writer_add(sm_bundle_writer *w, const char *key, const sm_tensor *t) {
  sm_status *s = w_check(w);
  if (s) return s;
  size_t klen = strlen(key);
  size_t slot = 0;
  if (klen == 0) return sm_status_new(SM_INVALID_ARGUMENT, "bundle %s: the empty key is reserved for the header", w->prefix);
  if (sm_tensor_dtype(t) == SM_VARIANT)
    return sm_status_new(SM_INVALID_ARGUMENT, "bundle %s: key %s is a DT_VARIANT tensor, which cannot be saved (variants live only in memory)",
                         w->prefix, key);
  if (w->hcap && w_find(w, key, klen, &slot))
    return sm_status_new(SM_ALREADY_EXISTS, "bundle %s: adding duplicate key %s", w->prefix, key);
  wentry *e = w_add(w, key, klen, sm_tensor_dtype(t), sm_tensor_rank(t), sm_tensor_dims(t));
  if (!e) return sm_status_new(SM_NO_MEMORY, "out of memory");
  return w_data(w, t, e);
}

sm_status *sm__bundle_writer_add_slice(sm_bundle_writer *w, const char *key, int rank, const int64_t *full_dims,
                                      const int64_t *starts, const int64_t *lengths, const sm_tensor *part) {
  sm_status *s = w_check(w);
  if (s) return s;
  size_t klen = strlen(key), slot;
  int dtype = sm_tensor_dtype(part);
  if (dtype == SM_VARIANT)
    return sm_status_new(SM_INVALID_ARGUMENT, "bundle %s: key %s is a DT_VARIANT tensor, which cannot be saved (variants live only in memory)",
                         w->prefix, key);
  if (klen == 0 || rank != sm_tensor_rank(part))
    return sm_status_new(SM_INVALID_ARGUMENT, "bundle %s: bad slice for key %s", w->prefix, key);
  wentry *full = w->hcap ? w_find(w, key, klen, &slot) : NULL;
  if (full && (full->proto.n_slices == 0 || (int)full->proto.dtype != dtype || full->shape.n_dim != (size_t)rank))
    return sm_status_new(SM_ALREADY_EXISTS, "bundle %s: key %s was added as a different tensor", w->prefix, key);
  for (int d = 0; d < rank; d++) {
    int64_t l = lengths[d] < 0 ? full_dims[d] : lengths[d];
    if (starts[d] < 0 || l < 0 || (lengths[d] < 0 && starts[d] != 0) || starts[d] > full_dims[d] - l ||
        sm_tensor_dims(part)[d] != l || (full && full->dimv[d].size != full_dims[d]))
      return sm_status_new(SM_INVALID_ARGUMENT, "bundle %s: slice of %s does not fit dimension %d", w->prefix, key, d);
  }
  if (!full) {
    full = w_add(w, key, klen, dtype, rank, full_dims);
    if (!full) return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  size_t sklen;
  uint8_t *skey = sm__encode_tensor_name_slice(key, klen, rank, starts, lengths, &sklen);
  if (!skey) return sm_status_new(SM_NO_MEMORY, "out of memory");
  if (w_find(w, skey, sklen, &slot)) {
    free(skey);
    return sm_status_new(SM_ALREADY_EXISTS, "bundle %s: slice of %s added twice", w->prefix, key);
  }
  size_t fi = (size_t)(full - w->ents); /* w_add may move the array */
  wentry *se = w_add(w, skey, sklen, dtype, rank, sm_tensor_dims(part));
  free(skey);
  if (!se) return sm_status_new(SM_NO_MEMORY, "out of memory");
  full = &w->ents[fi];
  Tensorflow__TensorSliceProto *sp = calloc(1, sizeof *sp);
  Tensorflow__TensorSliceProto **ns = realloc(full->slices, (full->proto.n_slices + 1) * sizeof *ns);
  if (!sp || !ns) {
    free(sp);
    if (ns) full->slices = ns;
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  full->slices = ns;
  tensorflow__tensor_slice_proto__init(sp);
  sp->extent = calloc(rank ? (size_t)rank : 1, sizeof *sp->extent);
  if (!sp->extent) {
    free(sp);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  full->slices[full->proto.n_slices++] = sp;
  full->proto.slices = full->slices;
  for (int d = 0; d < rank; d++) {
    Tensorflow__TensorSliceProto__Extent *x = calloc(1, sizeof *x);
    if (!x) return sm_status_new(SM_NO_MEMORY, "out of memory");
    tensorflow__tensor_slice_proto__extent__init(x);
    if (lengths[d] >= 0) { /* TF's AsProto writes nothing for a full extent */
      x->start = starts[d];
      x->has_length_case = TENSORFLOW__TENSOR_SLICE_PROTO__EXTENT__HAS_LENGTH_LENGTH;
      x->length = lengths[d];
    }
    sp->extent[sp->n_extent++] = x;
  }
  return w_data(w, part, se);
}

static int wentry_cmp(const void *a, const void *b) {
  const wentry *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = n ? memcmp(x->key, y->key, n) : 0;
  return c ? c : (x->klen < y->klen ? -1 : x->klen > y->klen);
}

static sm_status *write_file(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sm_status_new(SM_IO, "%s: %s", path, strerror(errno));
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      sm_status *s = sm_status_new(SM_IO, "writing %s: %s", path, strerror(errno));
      close(fd);
      return s;
    }
    p += k;
    n -= (size_t)k;
  }
  if (fsync(fd) != 0 || close(fd) != 0) return sm_status_new(SM_IO, "writing %s: %s", path, strerror(errno));
  return NULL;
}

sm_status *sm_bundle_writer_finish(sm_bundle_writer *w) {
  sm_status *s = w_check(w);
  if (s) return s;
  w->failed = 1; /* until everything below succeeds */
  FILE *f = w->data;
  w->data = NULL;
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
    s = sm_status_new(SM_IO, "writing %s: %s", w->tmp_data, strerror(errno));
    fclose(f);
    return s;
  }
  if (fclose(f) != 0) return sm_status_new(SM_IO, "writing %s: %s", w->tmp_data, strerror(errno));
  /* The hash table indexes ents by position; it is not needed once sorted. */
  if (w->nents) qsort(w->ents, w->nents, sizeof *w->ents, wentry_cmp);
  sm_table_builder *tb;
  if ((s = sm__table_builder_new(&tb))) return s;
  Tensorflow__VersionDef ver = TENSORFLOW__VERSION_DEF__INIT;
  ver.producer = 1;
  Tensorflow__BundleHeaderProto hdr = TENSORFLOW__BUNDLE_HEADER_PROTO__INIT;
  hdr.num_shards = 1;
  hdr.version = &ver;
  uint8_t hb[64];
  size_t hl = tensorflow__bundle_header_proto__pack(&hdr, hb);
  s = sm__table_builder_add(tb, "", 0, hb, hl);
  uint8_t *pb = NULL;
  for (size_t i = 0; i < w->nents && !s; i++) {
    /* The shape is stored inside the entry, which realloc and qsort have moved. */
    w->ents[i].proto.shape = &w->ents[i].shape;
    size_t n = tensorflow__bundle_entry_proto__get_packed_size(&w->ents[i].proto);
    uint8_t *np = realloc(pb, n ? n : 1);
    if (!np) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
      break;
    }
    pb = np;
    tensorflow__bundle_entry_proto__pack(&w->ents[i].proto, pb);
    s = sm__table_builder_add(tb, w->ents[i].key, w->ents[i].klen, pb, n);
  }
  free(pb);
  uint8_t *idx = NULL;
  size_t il = 0;
  if (!s) s = sm__table_builder_finish(tb, &idx, &il);
  sm__table_builder_free(tb);
  if (!s) s = write_file(w->tmp_index, idx, il);
  free(idx);
  if (s) return s;
  /* Data first, then the index that refers to it (as TF). */
  if (rename(w->tmp_data, w->data_path) != 0)
    return sm_status_new(SM_IO, "renaming %s to %s: %s", w->tmp_data, w->data_path, strerror(errno));
  if (rename(w->tmp_index, w->index_path) != 0)
    return sm_status_new(SM_IO, "renaming %s to %s: %s", w->tmp_index, w->index_path, strerror(errno));
  w->failed = 0;
  w->done = 1;
  return NULL;
}

void sm_bundle_writer_free(sm_bundle_writer *w) {
  if (!w) return;
  if (w->data) fclose(w->data);
  if (!w->done) {
    if (w->tmp_data) unlink(w->tmp_data);
    if (w->tmp_index) unlink(w->tmp_index);
  }
  for (size_t i = 0; i < w->nents; i++) wentry_free(&w->ents[i]);
  free(w->ents);
  free(w->hash);
  free(w->prefix);
  free(w->data_path);
  free(w->index_path);
  free(w->tmp_data);
  free(w->tmp_index);
  free(w);
}
