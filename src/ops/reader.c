/* reader.c - TF1's readers: TextLineReader, WholeFileReader, IdentityReader,
 * FixedLengthRecordReader, TFRecordReader (V2 resource handles and the V1 ref forms), and what uses
 * them: ReaderRead, ReaderReadUpTo, ReaderNumRecordsProduced, ReaderNumWorkUnitsCompleted,
 * ReaderSerializeState, ReaderRestoreState, ReaderReset (and V2), as TF's ReaderBase runs them.
 *
 * A reader is an object of the model's resources (kind SM_RES_READER) keyed by (container,
 * shared_name) as queues are (queue.c), so every run of the loaded model reads on where the last
 * one stopped. It takes its work units (file names) from a queue with sm__queue_dequeue_work (a
 * read waits as a dequeue does; a closed, empty queue gives the queue's OutOfRange error), opens the
 * file through the runtime's confined opener (sm__kctx_open_file) and keeps it until its records
 * are read. A compressed file (FixedLengthRecordReader's encoding, TFRecordReader's
 * compression_type: ZLIB or GZIP) is inflated whole when its work starts (sm__inflate, charged to
 * the run's budget; what the reader keeps of it is held in its memory account). Keys are TF's:
 * "<file>:<line>" (lines from 1, header lines counted), "<file>:<record>" (fixed length, from 0),
 * "<file>:<offset>" (TFRecord: the record's offset in the uncompressed stream), the file name
 * (WholeFileReader) or the work unit itself (IdentityReader). SerializeState/RestoreState: TF's
 * ReaderBaseState proto for IdentityReader, TF's Unimplemented error for the others. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "format/crc32c.h"
#include "ops/inflate.h"
#include "ops/queue.h"
#include "ops/state_internal.h"
#include "runtime/kernel.h"

enum { R_TEXT, R_WHOLE, R_IDENTITY, R_FIXED, R_TFRECORD };
#define READER_MAGIC 0x52454144u
#define INFLATE_MAX ((size_t)4 << 30) /* one compressed work unit inflates to at most 4 GiB */

static const char *const rtype_name[] = {"TextLineReader", "WholeFileReader", "IdentityReader", "FixedLengthRecordReader",
                                         "TFRecordReader"};

typedef struct rspec {
  sm__state_key key; /* first: sm__state_spec_release */
  int type;
  int64_t skip, hb, rb, fb, hop;
  int comp; /* 0 none, 1 zlib, 2 gzip */
  const char *node; /* TF names a reader by its node in messages */
} rspec;

typedef struct reader {
  uint32_t magic;
  rspec cfg; /* key unused */
  char *name;
  pthread_mutex_t mu;
  int64_t started, finished, produced;
  char *work; /* the current (or last) work unit */
  size_t worklen;
  int open; /* a file is held */
  sm_file_map map;
  uint8_t *buf; /* an inflated file (owned) */
  const uint8_t *data;
  size_t size, pos;
  int64_t count; /* lines / records read of the unit */
  sm_mem_account acct;
} reader;

static void unit_close(reader *r) {
  if (r->open) sm__file_map_close(&r->map);
  free(r->buf);
  sm__mem_close(&r->acct);
  r->buf = NULL;
  r->data = NULL;
  r->open = 0;
  r->size = r->pos = 0;
}

static void reader_destroy(void *obj) {
  reader *r = obj;
  if (!r) return;
  unit_close(r);
  free(r->work);
  sm__state_free(r, r->name, &r->mu, NULL);
}

static sm_status *reader_make(void *arg, const char *dname, void **obj) {
  const rspec *sp = arg;
  reader *r = sm__state_alloc(sizeof *r, READER_MAGIC, offsetof(reader, name), sp->node);
  (void)dname;
  if (!r) return sm_status_new(SM_NO_MEMORY, "%s '%s': out of memory", rtype_name[sp->type], sp->node);
  r->cfg = *sp;
  r->cfg.key.container = r->cfg.key.name = NULL;
  r->cfg.node = NULL;
  pthread_mutex_init(&r->mu, NULL);
  *obj = r;
  return NULL;
}

/* ---- the handle ops ------------------------------------------------------------------------------ */

static sm_status *int_attr(const sm_node *node, const char *name, int64_t *v) {
  *v = 0;
  return sm__node_attr(node, name) ? sm__node_attr_int(node, name, v) : NULL;
}

static sm_status *comp_attr(const sm_node *node, const char *name, int *comp) {
  const char *p = "";
  size_t n = 0;
  sm_status *s = sm__node_attr(node, name) ? sm__node_attr_string(node, name, &p, &n) : NULL;
  if (s) return s;
  *comp = n == 4 && !memcmp(p, "ZLIB", 4) ? 1 : n == 4 && !memcmp(p, "GZIP", 4) ? 2 : 0;
  return NULL;
}

static sm_status *reader_prepare(const sm_node *node, void **state, int type) {
  rspec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sp->type = type;
  sm_status *s = NULL;
  if (type == R_TEXT) {
    s = int_attr(node, "skip_header_lines", &sp->skip);
    if (!s && sp->skip < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "skip_header_lines must be >= 0 not %" PRId64, sp->skip);
  } else if (type == R_FIXED) {
    if (!(s = int_attr(node, "header_bytes", &sp->hb)) && !(s = int_attr(node, "record_bytes", &sp->rb)) &&
        !(s = int_attr(node, "footer_bytes", &sp->fb)) && !(s = int_attr(node, "hop_bytes", &sp->hop)))
      s = comp_attr(node, "encoding", &sp->comp);
    if (!s && sp->hb < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "header_bytes must be >= 0 not %" PRId64, sp->hb);
    if (!s && sp->rb <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "record_bytes must be > 0 not %" PRId64, sp->rb);
    if (!s && sp->fb < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "footer_bytes must be >= 0 not %" PRId64, sp->fb);
    if (!s && sp->hop < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "hop_bytes must be >= 0 not %" PRId64, sp->hop);
  } else if (type == R_TFRECORD) {
    s = comp_attr(node, "compression_type", &sp->comp);
  }
  if (!s) s = sm__state_names(node, &sp->key.container, &sp->key.name);
  sp->node = sm__node_name(node);
  if (s) {
    sm__state_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *text_prepare(const sm_node *n, void **st) { return reader_prepare(n, st, R_TEXT); }
static sm_status *whole_prepare(const sm_node *n, void **st) { return reader_prepare(n, st, R_WHOLE); }
static sm_status *identity_prepare(const sm_node *n, void **st) { return reader_prepare(n, st, R_IDENTITY); }
static sm_status *fixed_prepare(const sm_node *n, void **st) { return reader_prepare(n, st, R_FIXED); }
static sm_status *tfrecord_prepare(const sm_node *n, void **st) { return reader_prepare(n, st, R_TFRECORD); }

static sm_status *reader_handle_compute(const void *state, sm_kctx *ctx) {
  const rspec *sp = state;
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_READER, &sp->key, reader_make, (void *)sp, reader_destroy, &obj);
  if (s) return s;
  reader *r = obj;
  if (r->cfg.type != sp->type)
    return sm_status_new(SM_INVALID_ARGUMENT, "reader '%s' exists as a %s, not a %s", r->name, rtype_name[r->cfg.type],
                         rtype_name[sp->type]);
  return sm__state_output(ctx, r);
}

/* ---- reading ------------------------------------------------------------------------------------- */

static sm_status *input_reader(sm_kctx *ctx, reader **out) {
  void *o;
  sm_status *s = sm__state_of(sm__kctx_input(ctx, 0), READER_MAGIC, NULL, "a reader", &o);
  *out = o;
  return s;
}

/* TF's OnWorkStartedLocked: opens r->work (not IdentityReader), inflates it when compressed, skips
 * the header lines / bytes. */
static sm_status *unit_start(reader *r, sm_kctx *ctx) {
  r->count = 0;
  r->pos = 0;
  if (r->cfg.type == R_IDENTITY) return NULL;
  if (strlen(r->work) != r->worklen)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s '%s': the work unit (a file name) holds a NUL byte", rtype_name[r->cfg.type],
                         r->name);
  sm_status *s = sm__kctx_open_file(ctx, r->work, UINT64_MAX, &r->map);
  if (s) return s;
  r->open = 1;
  r->data = r->map.data;
  r->size = r->map.size;
  if (r->cfg.comp) {
    uint8_t *o = NULL;
    size_t on = 0;
    s = sm__inflate(ctx, r->cfg.comp == 2, r->map.data, r->map.size, INFLATE_MAX, rtype_name[r->cfg.type], &o, &on);
    if (!s) s = sm__kctx_hold(ctx, &r->acct, on, "a reader's inflated file");
    if (!s && !(r->buf = malloc(on ? on : 1))) s = sm_status_new(SM_NO_MEMORY, "%s: out of memory", rtype_name[r->cfg.type]);
    if (!s) {
      if (on) memcpy(r->buf, o, on);
      r->data = r->buf;
      r->size = on;
    }
    sm__kctx_scratch_free(ctx, o);
    sm__file_map_close(&r->map);
    r->open = 0;
    if (s) {
      unit_close(r);
      return s;
    }
  }
  if (r->cfg.type == R_TEXT) {
    for (; r->count < r->cfg.skip; r->count++) { /* header lines past the end: the file is skipped */
      const uint8_t *nl = r->pos < r->size ? memchr(r->data + r->pos, '\n', r->size - r->pos) : NULL;
      if (!nl) {
        r->pos = r->size;
        break;
      }
      r->pos = (size_t)(nl - r->data) + 1;
    }
  } else if (r->cfg.type == R_FIXED && (uint64_t)r->cfg.hb > r->size) {
    return sm_status_new(SM_OUT_OF_RANGE, "reached end of file");
  }
  return NULL;
}

typedef struct strbuf {
  char *p;
  size_t n;
} strbuf;

static sm_status *set_str(strbuf *b, const void *a, size_t na, const char *suffix) {
  size_t ns = suffix ? strlen(suffix) : 0;
  char *p = malloc(na + ns + 1);
  if (!p) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when reading a record");
  if (na) memcpy(p, a, na);
  if (ns) memcpy(p + na, suffix, ns);
  free(b->p);
  b->p = p;
  b->n = na + ns;
  return NULL;
}

static sm_status *set_key(reader *r, strbuf *key, int64_t n) {
  char num[32];
  snprintf(num, sizeof num, ":%" PRId64, n);
  return set_str(key, r->work, r->worklen, num);
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* TF's ReadLocked: one record of the open unit, or *at_end. */
static sm_status *read_locked(reader *r, strbuf *key, strbuf *val, int *produced, int *at_end) {
  *produced = *at_end = 0;
  const uint8_t *p = r->data;
  size_t n = r->size;
  sm_status *s = NULL;
  switch (r->cfg.type) {
  case R_IDENTITY:
    if (!(s = set_str(key, r->work, r->worklen, NULL))) s = set_str(val, r->work, r->worklen, NULL);
    *produced = *at_end = !s;
    return s;
  case R_WHOLE:
    if (!(s = set_str(key, r->work, r->worklen, NULL))) s = set_str(val, p, n, NULL);
    *produced = *at_end = !s;
    return s;
  case R_TEXT: { /* up to '\n', a '\r' before it dropped */
    if (r->pos >= n) {
      *at_end = 1;
      return NULL;
    }
    const uint8_t *nl = memchr(p + r->pos, '\n', n - r->pos);
    size_t e = nl ? (size_t)(nl - p) : n, len = e - r->pos;
    if (len && p[e - 1] == '\r') len--;
    if (!(s = set_str(val, p + r->pos, len, NULL))) {
      r->pos = nl ? e + 1 : n;
      r->count++;
      if (!(s = set_key(r, key, r->count))) *produced = 1;
    }
    return s;
  }
  case R_FIXED: {
    uint64_t step = (uint64_t)(r->cfg.hop ? r->cfg.hop : r->cfg.rb);
    if (r->count && step > (uint64_t)n / (uint64_t)r->count) { /* past the end (and no overflow below) */
      *at_end = 1;
      return NULL;
    }
    uint64_t start = (uint64_t)r->cfg.hb + (uint64_t)r->count * step;
    if (start > n || n - start < (uint64_t)r->cfg.rb + (uint64_t)r->cfg.fb) {
      *at_end = 1;
      return NULL;
    }
    if (!(s = set_key(r, key, r->count)) && !(s = set_str(val, p + start, (size_t)r->cfg.rb, NULL))) {
      r->count++;
      *produced = 1;
    }
    return s;
  }
  default: { /* TFRecord: RecordReader::ReadRecord's checks and messages */
    size_t off = r->pos;
    if (off >= n) {
      *at_end = 1;
      return NULL;
    }
    if (n - off < 12) { /* a partial header ends the file, as TF's reader reads it */
      *at_end = 1;
      return NULL;
    }
    if (sm__crc32c_unmask(le32(p + off + 8)) != sm__crc32c_value(p + off, 8))
      return sm_status_new(SM_DATA_LOSS, "corrupted record at %zu", off);
    uint64_t len = (uint64_t)le32(p + off) | (uint64_t)le32(p + off + 4) << 32;
    size_t rest = n - off - 12;
    if (len > rest || rest - len < 4)
      return sm_status_new(SM_DATA_LOSS, "truncated record at %zu' failed with Read less bytes than requested", off);
    const uint8_t *d = p + off + 12;
    if (sm__crc32c_unmask(le32(d + len)) != sm__crc32c_value(d, (size_t)len))
      return sm_status_new(SM_DATA_LOSS, "corrupted record at %zu", off + 12);
    if (!(s = set_key(r, key, (int64_t)off)) && !(s = set_str(val, d, (size_t)len, NULL))) {
      r->pos = off + 12 + (size_t)len + 4;
      *produced = 1;
    }
    return s;
  }
  }
}

/* ReaderBase::Read / ReadUpTo: up to `want` records (Read: one), starting work units from the
 * queue as needed; ReadUpTo returns early, with what it has, when a unit ends. Called with r->mu. */
static sm_status *read_records(reader *r, sm_kctx *ctx, const sm_tensor *queue, int64_t want, int upto, strbuf **keys,
                               strbuf **vals, int64_t *got, size_t *capo) {
  sm_status *s = NULL;
  size_t cap = 0, bytes = 0;
  *capo = 0;
  *got = 0;
  *keys = *vals = NULL;
  while (*got < want) {
    if (r->finished >= r->started) {
      char *w;
      size_t wl;
      if ((s = sm__queue_dequeue_work(ctx, queue, &w, &wl))) break;
      free(r->work);
      r->work = w;
      r->worklen = wl;
      if ((s = unit_start(r, ctx))) { /* not started: the next read takes the next unit */
        unit_close(r);
        break;
      }
      r->started++;
    }
    if ((size_t)*got == cap) {
      size_t nc = cap ? cap * 2 : 4;
      strbuf *nk = realloc(*keys, nc * sizeof *nk);
      if (nk) *keys = nk;
      strbuf *nv = nk ? realloc(*vals, nc * sizeof *nv) : NULL;
      if (nv) *vals = nv;
      if (!nk || !nv) {
        s = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when reading records");
        break;
      }
      memset(*keys + cap, 0, (nc - cap) * sizeof **keys);
      memset(*vals + cap, 0, (nc - cap) * sizeof **vals);
      cap = *capo = nc;
    }
    int produced, at_end;
    s = read_locked(r, &(*keys)[*got], &(*vals)[*got], &produced, &at_end);
    if (s) break;
    if (produced) {
      bytes += (*keys)[*got].n + (*vals)[*got].n + 64;
      (*got)++;
      r->produced++;
      if ((s = sm__kctx_charge_check(ctx, bytes, "the records a reader read"))) break;
    }
    if (at_end) {
      unit_close(r);
      r->finished = r->started;
      if (upto && *got) break;
    }
    if ((s = sm__kctx_check_stop(ctx))) break;
  }
  return s;
}

static void free_strs(strbuf *v, size_t cap) {
  for (size_t i = 0; v && i < cap; i++) free(v[i].p);
  free(v);
}

static sm_status *read_compute(const void *state, sm_kctx *ctx) {
  int upto = state != NULL;
  reader *r;
  sm_status *s = input_reader(ctx, &r);
  if (s) return s;
  int64_t want = 1;
  if (upto) {
    const sm_tensor *nt = sm__kctx_input(ctx, 2);
    if (!nt || sm_tensor_dtype(nt) != SM_INT64 || sm_tensor_num_elements(nt) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "num_records must be an int64 scalar");
    want = *(const int64_t *)sm_tensor_data(nt); /* 0: nothing read, as TF (TF crashes on < 0) */
    if (want < 0) return sm_status_new(SM_INVALID_ARGUMENT, "num_records must be >= 0 but got %" PRId64, want);
  }
  strbuf *keys, *vals;
  int64_t got;
  size_t cap;
  pthread_mutex_lock(&r->mu);
  if (want) s = read_records(r, ctx, sm__kctx_input(ctx, 1), want, upto, &keys, &vals, &got, &cap);
  else keys = vals = NULL, got = 0, cap = 0;
  pthread_mutex_unlock(&r->mu);
  sm_tensor *ko = NULL, *vo = NULL;
  int rank = upto ? 1 : 0;
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_STRING, rank, &got, &ko);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, SM_STRING, rank, &got, &vo);
  for (int64_t i = 0; !s && i < got; i++)
    if (!(s = sm_tensor_set_string(ko, i, keys[i].p, keys[i].n))) s = sm_tensor_set_string(vo, i, vals[i].p, vals[i].n);
  free_strs(keys, cap);
  free_strs(vals, cap);
  return s;
}

static sm_status *upto_prepare(const sm_node *node, void **state) {
  (void)node;
  static const int flag = 1;
  *state = (void *)&flag;
  return NULL;
}

/* ---- counters, reset, state ---------------------------------------------------------------------- */

/* ReaderNumRecordsProduced (state NULL) and ReaderNumWorkUnitsCompleted: int64 scalars. */
static sm_status *count_compute(const void *state, sm_kctx *ctx) {
  reader *r;
  sm_tensor *out;
  sm_status *s = input_reader(ctx, &r);
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 0, NULL, &out);
  if (s) return s;
  pthread_mutex_lock(&r->mu);
  *(int64_t *)sm_tensor_data(out) = state ? r->finished : r->produced;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static sm_status *reset_locked(reader *r) {
  unit_close(r);
  r->started = r->finished = r->produced = 0;
  free(r->work);
  r->work = NULL;
  r->worklen = 0;
  r->count = 0;
  return NULL;
}

static sm_status *reset_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  reader *r;
  sm_status *s = input_reader(ctx, &r);
  if (s) return s;
  pthread_mutex_lock(&r->mu);
  s = reset_locked(r);
  pthread_mutex_unlock(&r->mu);
  return s;
}

/* ReaderBaseState: 1 work_started, 2 work_finished, 3 num_records_produced (int64), 4 current_work. */
static size_t put_varint(uint8_t *b, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) b[n++] = (uint8_t)(v | 0x80), v >>= 7;
  b[n++] = (uint8_t)v;
  return n;
}

static sm_status *serialize_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  reader *r;
  sm_status *s = input_reader(ctx, &r);
  if (s) return s;
  if (r->cfg.type != R_IDENTITY && r->cfg.type != R_WHOLE) return sm_status_new(SM_UNIMPLEMENTED, "Reader SerializeState");
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &out))) return s;
  pthread_mutex_lock(&r->mu);
  uint8_t *b = malloc(r->worklen + 48);
  size_t n = 0;
  if (b) {
    int64_t f[3] = {r->started, r->finished, r->produced};
    for (int i = 0; i < 3; i++)
      if (f[i]) b[n++] = (uint8_t)((i + 1) << 3), n += put_varint(b + n, (uint64_t)f[i]);
    if (r->worklen) {
      b[n++] = 4 << 3 | 2;
      n += put_varint(b + n, r->worklen);
      memcpy(b + n, r->work, r->worklen);
      n += r->worklen;
    }
  }
  pthread_mutex_unlock(&r->mu);
  if (!b) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when serializing a reader's state");
  s = sm_tensor_set_string(out, 0, b, n);
  free(b);
  return s;
}

static int get_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && *i < n; sh += 7) {
    uint8_t c = p[(*i)++];
    *v |= (uint64_t)(c & 0x7f) << sh;
    if (!(c & 0x80)) return 0;
  }
  return -1;
}

/* absl::CEscape: what TF's messages show of bytes. */
static char *cescape(const uint8_t *p, size_t n) {
  char *e = malloc(n * 4 + 1);
  if (!e) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = p[i];
    const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '"' ? "\\\"" : c == '\'' ? "\\'"
                    : c == '\\' ? "\\\\" : NULL;
    if (esc) k += (size_t)sprintf(e + k, "%s", esc);
    else if (c < 0x20 || c >= 0x7f) k += (size_t)sprintf(e + k, "\\%03o", c);
    else e[k++] = (char)c;
  }
  e[k] = 0;
  return e;
}

static sm_status *restore_parse(reader *r, const sm_tensor *st) {
  sm_status *s;
  if (r->cfg.type != R_IDENTITY && r->cfg.type != R_WHOLE) return sm_status_new(SM_UNIMPLEMENTED, "Reader RestoreState");
  size_t n;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(st, 0, &n);
  int64_t f[3] = {0, 0, 0};
  const uint8_t *work = NULL;
  size_t wl = 0, i = 0;
  int bad = 0;
  while (i < n && !bad) {
    uint64_t tag, v;
    if (get_varint(p, n, &i, &tag)) {
      bad = 1;
      break;
    }
    int field = (int)(tag >> 3), wt = (int)(tag & 7);
    if (wt == 0) {
      bad = get_varint(p, n, &i, &v);
      if (!bad && field >= 1 && field <= 3) f[field - 1] = (int64_t)v;
    } else if (wt == 2) {
      bad = get_varint(p, n, &i, &v) || v > n - i;
      if (!bad && field == 4) work = p + i, wl = (size_t)v;
      if (!bad) i += (size_t)v;
    } else if (wt == 1 || wt == 5) {
      size_t k = wt == 1 ? 8 : 4;
      bad = n - i < k;
      i += bad ? 0 : k;
    } else {
      bad = 1;
    }
    if (!bad && field >= 1 && field <= 4 && (wt != 0) != (field == 4)) bad = 1;
  }
  const char *tn = rtype_name[r->cfg.type];
  if (bad) {
    char *e = cescape(p, n);
    s = sm_status_new(SM_INVALID_ARGUMENT, "Could not parse state for %s '%s': %s", tn, r->name, e ? e : "");
    free(e);
    return s;
  }
  if (f[0] < 0 || f[1] < 0 || f[2] < 0 || f[0] > f[1]) {
    char *e = cescape(work, wl), *d = malloc(wl * 4 + 256);
    if (d) {
      size_t k = 0;
      static const char *const fname[] = {"work_started", "work_finished", "num_records_produced"};
      for (int fi = 0; fi < 3; fi++)
        if (f[fi]) k += (size_t)sprintf(d + k, "%s%s: %" PRId64, k ? "\n" : "", fname[fi], f[fi]);
      if (wl) sprintf(d + k, "%scurrent_work: \"%s\"", k ? "\n" : "", e ? e : "");
    }
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s when restoring in %s '%s': %s",
                      f[0] > f[1] && f[0] >= 0 && f[1] >= 0 && f[2] >= 0 ? "Inconsistent work started vs. finished"
                                                                           : "Unexpected negative value",
                      tn, r->name, d ? d : "");
    free(d);
    free(e);
    return s;
  }
  char *w = malloc(wl + 1);
  if (!w) return sm_status_new(SM_NO_MEMORY, "out of memory");
  if (wl) memcpy(w, work, wl);
  w[wl] = 0;
  pthread_mutex_lock(&r->mu);
  unit_close(r);
  free(r->work);
  r->work = w;
  r->worklen = wl;
  r->started = f[0];
  r->finished = f[1];
  r->produced = f[2];
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* ReaderBase::RestoreState: a state refused resets the reader. */
static sm_status *restore_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  reader *r;
  sm_status *s = input_reader(ctx, &r);
  if (s) return s;
  const sm_tensor *st = sm__kctx_input(ctx, 1);
  if (!st || sm_tensor_dtype(st) != SM_STRING || sm_tensor_num_elements(st) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Reader state must be a scalar string");
  if ((s = restore_parse(r, st))) {
    pthread_mutex_lock(&r->mu);
    reset_locked(r);
    pthread_mutex_unlock(&r->mu);
  }
  return s;
}

static sm_status *completed_prepare(const sm_node *node, void **state) { return upto_prepare(node, state); }

#define RK(name, prep, comp, rel) {name, prep, comp, rel, 0}
#define RK2(name, prep, comp, rel) RK(name, prep, comp, rel), RK(name "V2", prep, comp, rel)
const sm_kernel sm_kernels_reader[] = {
    RK2("TextLineReader", text_prepare, reader_handle_compute, sm__state_spec_release),
    RK2("WholeFileReader", whole_prepare, reader_handle_compute, sm__state_spec_release),
    RK2("IdentityReader", identity_prepare, reader_handle_compute, sm__state_spec_release),
    RK2("FixedLengthRecordReader", fixed_prepare, reader_handle_compute, sm__state_spec_release),
    RK2("TFRecordReader", tfrecord_prepare, reader_handle_compute, sm__state_spec_release),
    RK2("ReaderRead", NULL, read_compute, NULL),
    RK2("ReaderReadUpTo", upto_prepare, read_compute, NULL),
    RK2("ReaderNumRecordsProduced", NULL, count_compute, NULL),
    RK2("ReaderNumWorkUnitsCompleted", completed_prepare, count_compute, NULL),
    RK2("ReaderSerializeState", NULL, serialize_compute, NULL),
    RK2("ReaderRestoreState", NULL, restore_compute, NULL),
    RK2("ReaderReset", NULL, reset_compute, NULL),
    {NULL, NULL, NULL, NULL, 0},
};
