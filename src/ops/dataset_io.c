/* dataset_io.c - the file datasets: TextLineDataset, TFRecordDataset, FixedLengthRecordDataset
 * (and V2), read through the runtime's confined opener (sm__kctx_open_file: inside the export
 * unless the load allows external files; regular files only).
 *
 * Each reads its files when the op runs (not lazily as TF does): the records become one string
 * vector, charged to the run's memory budget before it is made, and the dataset is a slice
 * dataset over it (dataset.c), so what follows in the pipeline is lazy as usual. compression_type
 * "GZIP" or "ZLIB" (TextLineDataset, TFRecordDataset, FixedLengthRecordDatasetV2): each file is
 * inflated as TF's ZlibInputStream reads it (sm__inflate: into scratch that grows in steps, each
 * charged to the run's memory budget, so a zip bomb ends at the budget, or at 4 GiB a file, with a
 * clear error) and its records split from the inflated bytes. TFRecord checks
 * both masked CRC-32Cs of every record, as TF does, and a truncated record is an error. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/crc32c.h"
#include "ops/dataset.h"
#include "ops/inflate.h"
#include "runtime/kernel.h"

enum { F_TEXT, F_TFRECORD, F_FIXED };
#define INFLATE_MAX ((size_t)4 << 30) /* one compressed file inflates to at most 4 GiB */

typedef struct rec {
  const uint8_t *p;
  size_t n;
} rec;

typedef struct recs {
  rec *v;
  size_t n, cap, bytes;
  uint8_t **own; /* lines copied without their '\r's */
  size_t nown;
} recs;

static sm_status *push(recs *r, const uint8_t *p, size_t n) {
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 64;
    rec *nv = realloc(r->v, nc * sizeof *nv);
    if (!nv) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when reading dataset records");
    r->v = nv, r->cap = nc;
  }
  r->v[r->n++] = (rec){p, n};
  r->bytes += n + 16;
  return NULL;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The records of one mapped file. */
static sm_status *split(int kind, const char *fname, const sm_file_map *m, const int64_t *fixed, recs *r) {
  const uint8_t *p = m->data;
  size_t n = m->size;
  sm_status *s = NULL;
  if (kind == F_TEXT) {
    size_t i = 0; /* BufferedInputStream::ReadLine: every '\r' dropped; an empty last line is no line */
    while (i < n && !s) {
      const uint8_t *nl = memchr(p + i, '\n', n - i);
      size_t e = nl ? (size_t)(nl - p) : n, len = e - i;
      const uint8_t *line = p + i;
      if (memchr(line, '\r', len)) {
        uint8_t **no = realloc(r->own, (r->nown + 1) * sizeof *no);
        uint8_t *c = no ? malloc(len) : NULL;
        if (no) r->own = no;
        if (!c) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when reading dataset records");
        r->own[r->nown++] = c;
        size_t k = 0;
        for (size_t j = 0; j < len; j++)
          if (line[j] != '\r') c[k++] = line[j];
        line = c, len = k;
      }
      if (nl || len) s = push(r, line, len);
      i = e + 1;
    }
  } else if (kind == F_TFRECORD) {
    size_t off = 0;
    while (off < n && !s) {
      if (n - off < 12)
        return sm_status_new(SM_DATA_LOSS, "truncated record at %zu in %s", off, fname);
      uint64_t len = (uint64_t)le32(p + off) | (uint64_t)le32(p + off + 4) << 32;
      if (sm__crc32c_unmask(le32(p + off + 8)) != sm__crc32c_value(p + off, 8))
        return sm_status_new(SM_DATA_LOSS, "corrupted record at %zu in %s", off, fname);
      if (len > n - off - 12 || n - off - 12 - len < 4)
        return sm_status_new(SM_DATA_LOSS, "truncated record at %zu in %s", off, fname);
      const uint8_t *data = p + off + 12;
      if (sm__crc32c_unmask(le32(data + len)) != sm__crc32c_value(data, (size_t)len))
        return sm_status_new(SM_DATA_LOSS, "corrupted record at %zu in %s", off, fname);
      s = push(r, data, (size_t)len);
      off += 12 + (size_t)len + 4;
    }
  } else {
    int64_t hb = fixed[0], rb = fixed[1], fb = fixed[2];
    if ((uint64_t)hb + (uint64_t)fb > n) return NULL; /* no records (TF: the file is too short) */
    size_t end = n - (size_t)fb;
    if ((end - (size_t)hb) % (size_t)rb)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Excluding the header (%" PRId64 " bytes) and footer (%" PRId64 " bytes), input file \"%s\" has "
                           "body length %zu bytes, which is not an exact multiple of the record length (%" PRId64 " bytes).",
                           hb, fb, fname, end - (size_t)hb, rb);
    for (size_t off = (size_t)hb; end - off >= (size_t)rb && !s; off += (size_t)rb) s = push(r, p + off, (size_t)rb);
  }
  return s;
}

static sm_status *scalar_i64(sm_kctx *c, int i, const char *what, int64_t *v) {
  const sm_tensor *t = sm__kctx_input(c, i);
  if (!t || sm_tensor_dtype(t) != SM_INT64 || sm_tensor_num_elements(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be an int64 scalar", what);
  *v = *(const int64_t *)sm_tensor_data(t);
  return NULL;
}

static sm_status *file_ds_compute(const void *state, sm_kctx *c) {
  const char *op = sm__node_op(sm__kctx_node(c));
  int kind = !strcmp(op, "TextLineDataset") ? F_TEXT : !strcmp(op, "TFRecordDataset") ? F_TFRECORD : F_FIXED;
  (void)state;
  const sm_tensor *files = sm__kctx_input(c, 0);
  if (!files || sm_tensor_dtype(files) != SM_STRING || sm_tensor_rank(files) > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "`filenames` must be a scalar or a vector.");
  int ci = kind == F_FIXED ? 5 : 1; /* compression_type (FixedLengthRecordDataset V1 has none) */
  const sm_tensor *comp = sm__kctx_num_inputs(c) > ci ? sm__kctx_input(c, ci) : NULL;
  int zkind = 0; /* 1 ZLIB, 2 GZIP */
  if (comp && sm_tensor_dtype(comp) == SM_STRING && sm_tensor_num_elements(comp) == 1) {
    size_t len;
    const char *ct = sm_tensor_string(comp, 0, &len);
    if (len == 4 && !memcmp(ct, "ZLIB", 4)) zkind = 1;
    else if (len == 4 && !memcmp(ct, "GZIP", 4)) zkind = 2;
    else if (len && !(len == 4 && !memcmp(ct, "NONE", 4)))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: Unsupported compression_type. Got \"%.*s\"; expected \"\", NONE, ZLIB or GZIP",
                           op, (int)(len > 64 ? 64 : len), ct);
  }
  int64_t fixed[3] = {0, 0, 0};
  sm_status *s = NULL;
  if (kind == F_FIXED) {
    if ((s = scalar_i64(c, 1, "header_bytes", &fixed[0])) || (s = scalar_i64(c, 2, "record_bytes", &fixed[1])) ||
        (s = scalar_i64(c, 3, "footer_bytes", &fixed[2])))
      return s;
    if (fixed[0] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "header_bytes must be >= 0 not %" PRId64, fixed[0]);
    if (fixed[1] <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "record_bytes must be > 0 not %" PRId64, fixed[1]);
    if (fixed[2] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "footer_bytes must be >= 0 not %" PRId64, fixed[2]);
  }
  int64_t nf = sm_tensor_num_elements(files);
  sm_file_map *maps = calloc((size_t)nf + 1, sizeof *maps);
  uint8_t **inflated = calloc((size_t)nf + 1, sizeof *inflated);
  recs r = {0};
  if (!maps || !inflated) {
    free(maps);
    free(inflated);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when opening %" PRId64 " files", nf);
  }
  int64_t opened = 0;
  for (int64_t i = 0; i < nf && !s; i++) {
    size_t len;
    const char *f = sm_tensor_string(files, i, &len);
    char *path = malloc(len + 1);
    if (!path) {
      s = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM");
      break;
    }
    memcpy(path, f, len);
    path[len] = 0;
    if (!(s = sm__kctx_open_file(c, path, UINT64_MAX, &maps[i]))) {
      opened = i + 1;
      if (zkind) { /* split the inflated bytes (scratch, charged to the run as they grow) */
        size_t on = 0;
        s = sm__inflate(c, zkind == 2, maps[i].data, maps[i].size, INFLATE_MAX, op, &inflated[i], &on);
        sm__file_map_close(&maps[i]);
        maps[i] = (sm_file_map){inflated[i], on, 0};
      }
      if (!s) s = split(kind, path, &maps[i], fixed, &r);
      if (!s) s = sm__kctx_charge_check(c, r.bytes, "the records of a file dataset");
    }
    free(path);
  }
  sm_tensor *t = NULL;
  if (!s) s = sm_tensor_new(SM_STRING, 1, (int64_t[]){(int64_t)r.n}, &t);
  for (size_t i = 0; !s && i < r.n; i++) s = sm_tensor_set_string(t, (int64_t)i, r.v[i].p, r.v[i].n);
  for (int64_t i = 0; i < opened; i++)
    if (zkind) sm__kctx_scratch_free(c, inflated[i]);
    else sm__file_map_close(&maps[i]);
  free(maps);
  free(inflated);
  free(r.v);
  for (size_t i = 0; i < r.nown; i++) free(r.own[i]);
  free(r.own);
  if (s) {
    sm_tensor_free(t);
    return s;
  }
  return sm__dataset_output_slices(c, t);
}

const sm_kernel sm_kernels_dataset_io[] = {
    {"TextLineDataset", NULL, file_ds_compute, NULL, 0},
    {"TFRecordDataset", NULL, file_ds_compute, NULL, 0},
    {"FixedLengthRecordDataset", NULL, file_ds_compute, NULL, 0},
    {"FixedLengthRecordDatasetV2", NULL, file_ds_compute, NULL, 0},
    {0},
};
