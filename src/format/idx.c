/* idx.c - MNIST-format IDX files (plain or gzipped) and the MNIST / Fashion-MNIST directory layout.
 *
 * Memory stays bounded by what the file really holds: a plain file is mapped and its header is
 * checked against the file's size before anything is allocated; a gzipped file is inflated into
 * a buffer that grows only as inflated bytes arrive (never past what the header claims, itself
 * capped at SM_MAX_TENSOR_BYTES), so a header claiming terabytes costs nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "base/checked.h"
#include "base/file.h"
#include "savedmodel/idx.h"

const char *const sm_fashion_mnist_labels[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

enum { IDX_MAX_HEADER = 4 + 4 * 255 };

typedef struct {
  int type;       /* IDX type byte */
  int dtype;      /* sm dtype */
  size_t esize;   /* bytes per element */
  int rank;
  int64_t dims[SM_MAX_RANK];
  size_t header;  /* header bytes */
  uint64_t bytes; /* data bytes the header claims */
} idx_header;

static uint32_t rd_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Parses the header from the first `n` bytes (n may be short: the error says so). */
static sm_status *parse_header(const char *path, const uint8_t *p, size_t n, idx_header *h) {
  memset(h, 0, sizeof *h);
  if (n < 4) return sm_status_new(SM_DATA_LOSS, "%s: truncated IDX header (%zu bytes)", path, n);
  if (p[0] != 0 || p[1] != 0)
    return sm_status_new(SM_DATA_LOSS, "%s: not an IDX file (bad magic %02x %02x %02x %02x; expected 00 00 then type and rank)",
                         path, p[0], p[1], p[2], p[3]);
  h->type = p[2];
  switch (h->type) {
  case 0x08: h->dtype = SM_UINT8; h->esize = 1; break;
  case 0x09: h->dtype = SM_INT8; h->esize = 1; break;
  case 0x0B: h->dtype = SM_INT16; h->esize = 2; break;
  case 0x0C: h->dtype = SM_INT32; h->esize = 4; break;
  case 0x0D: h->dtype = SM_FLOAT; h->esize = 4; break;
  case 0x0E: h->dtype = SM_DOUBLE; h->esize = 8; break;
  default:
    return sm_status_new(SM_DATA_LOSS, "%s: unknown IDX element type 0x%02x (expected 08, 09, 0B, 0C, 0D or 0E)", path,
                         h->type);
  }
  h->rank = p[3];
  if (h->rank > SM_MAX_RANK)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: IDX rank %d is past this library's limit of %d", path, h->rank,
                         SM_MAX_RANK);
  h->header = 4 + 4 * (size_t)h->rank;
  if (n < h->header)
    return sm_status_new(SM_DATA_LOSS, "%s: truncated IDX header (%zu of %zu bytes)", path, n, h->header);
  uint64_t bytes = h->esize;
  for (int i = 0; i < h->rank; i++) {
    h->dims[i] = rd_be32(p + 4 + 4 * i);
    if (sm__mul_u64(bytes, (uint64_t)h->dims[i], &bytes) || bytes > SM_MAX_TENSOR_BYTES)
      return sm_status_new(SM_OUT_OF_RANGE, "%s: IDX dims claim more than %llu bytes of data", path,
                           (unsigned long long)SM_MAX_TENSOR_BYTES);
  }
  h->bytes = bytes;
  return NULL;
}

/* Big-endian elements to host order, in place. */
static void to_host(uint8_t *d, size_t n, size_t esize) {
  if (esize == 1) return;
  for (size_t i = 0; i < n; i += esize)
    for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
      uint8_t t = d[i + a];
      d[i + a] = d[i + b];
      d[i + b] = t;
    }
}

static sm_status *make_tensor(const char *path, const idx_header *h, const uint8_t *data, sm_tensor **out) {
  sm_tensor *t;
  sm_status *s = sm_tensor_new(h->dtype, h->rank, h->dims, &t);
  if (s) return sm_status_prefix(s, "%s", path);
  if (h->bytes) memcpy(sm_tensor_data(t), data, (size_t)h->bytes);
  to_host(sm_tensor_data(t), (size_t)h->bytes, h->esize);
  *out = t;
  return NULL;
}

/* ---- gzip ---------------------------------------------------------------------------------- */
/* Inflates all gzip members of src into a buffer that grows as bytes arrive. The IDX header is
 * parsed as soon as it has arrived, and from then on the data may not grow past what it claims
 * (an error as soon as more comes out). `*got` is the inflated size; *h is valid when
 * *have_header. */
static sm_status *inflate_all(const char *path, const uint8_t *src, size_t n, idx_header *h, int *have_header,
                              uint8_t **out, size_t *got) {
  uint64_t limit = IDX_MAX_HEADER;
  *have_header = 0;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return sm_status_new(SM_NO_MEMORY, "%s: inflateInit failed", path);
  size_t cap = 0, len = 0;
  uint8_t *buf = NULL;
  sm_status *err = NULL;
  size_t pos = 0;
  int in_member = 1;
  while (in_member) {
    /* Feed at most 1 GiB at a time: avail_in is 32-bit. */
    if (z.avail_in == 0 && pos < n) {
      size_t chunk = n - pos < ((size_t)1 << 30) ? n - pos : ((size_t)1 << 30);
      z.next_in = (Bytef *)(src + pos);
      z.avail_in = (uInt)chunk;
      pos += chunk;
    }
    if (len == cap) {
      /* One byte past the limit is room enough to notice the file holds more than it should. */
      uint64_t want = cap ? (uint64_t)cap * 2 : 1 << 16;
      if (want > limit + 1) want = limit + 1;
      if (want <= cap) {
        err = sm_status_new(SM_DATA_LOSS, "%s: the gzip data inflates to more than the %llu bytes its IDX header implies",
                            path, (unsigned long long)limit);
        break;
      }
      uint8_t *nb = realloc(buf, (size_t)want);
      if (!nb) {
        err = sm_status_new(SM_NO_MEMORY, "%s: out of memory inflating", path);
        break;
      }
      buf = nb;
      cap = (size_t)want;
    }
    size_t room = cap - len;
    if (room > ((size_t)1 << 30)) room = (size_t)1 << 30;
    z.next_out = buf + len;
    z.avail_out = (uInt)room;
    int r = inflate(&z, Z_NO_FLUSH);
    len += room - z.avail_out;
    if (!*have_header && len >= 4 && len >= 4 + 4 * (size_t)buf[3]) {
      err = parse_header(path, buf, len, h);
      if (err) break;
      *have_header = 1;
      limit = h->header + h->bytes;
    }
    if (r == Z_STREAM_END) {
      /* Another member may follow (gzip -d reads concatenated members); zero padding is ignored
       * as gzip does; anything else is garbage. */
      size_t rest = z.avail_in + (n - pos);
      const uint8_t *q = src + (n - rest);
      while (rest && *q == 0) q++, rest--;
      if (!rest) break;
      if (rest >= 2 && q[0] == 0x1f && q[1] == 0x8b) {
        inflateReset(&z);
        z.next_in = (Bytef *)q;
        size_t chunk = rest < ((size_t)1 << 30) ? rest : ((size_t)1 << 30);
        z.avail_in = (uInt)chunk;
        pos = (size_t)(q - src) + chunk;
        continue;
      }
      err = sm_status_new(SM_DATA_LOSS, "%s: %zu bytes of garbage after the gzip data", path, rest);
      break;
    }
    if (r == Z_OK) continue;
    if (r == Z_BUF_ERROR && z.avail_out != 0 && z.avail_in == 0 && pos == n) {
      /* room to write, nothing left to read, and the stream has not ended */
      err = sm_status_new(SM_DATA_LOSS, "%s: truncated gzip data (the stream ends after %zu inflated bytes)", path, len);
      break;
    }
    if (r == Z_BUF_ERROR) continue; /* output full (grow) or more input to feed */
    err = sm_status_new(SM_DATA_LOSS, "%s: corrupt gzip data after %zu inflated bytes: %s", path, len,
                        z.msg ? z.msg : "inflate failed");
    break;
  }
  inflateEnd(&z);
  if (err) {
    free(buf);
    return err;
  }
  *out = buf;
  *got = len;
  return NULL;
}

sm_status *sm_idx_read(const char *path, sm_tensor **out) {
  *out = NULL;
  sm_file_map m;
  sm_status *s = sm__file_map_open(path, &m);
  if (s) return s;
  idx_header h;
  if (m.size >= 2 && m.data[0] == 0x1f && m.data[1] == 0x8b) {
    uint8_t *buf = NULL;
    size_t got = 0;
    int have_header;
    s = inflate_all(path, m.data, m.size, &h, &have_header, &buf, &got);
    sm__file_map_close(&m);
    if (s) return s;
    if (!have_header) s = parse_header(path, buf, got, &h);
    if (!s && got - h.header != h.bytes)
      s = sm_status_new(SM_DATA_LOSS, "%s: the IDX header says %llu bytes of data, the inflated file holds %zu", path,
                        (unsigned long long)h.bytes, got - h.header);
    if (!s) s = make_tensor(path, &h, buf + h.header, out);
    free(buf);
    return s;
  }
  size_t len = strlen(path);
  if (len > 3 && strcmp(path + len - 3, ".gz") == 0) {
    sm__file_map_close(&m);
    return sm_status_new(SM_DATA_LOSS, "%s: not gzip data (no gzip magic 1f 8b)", path);
  }
  s = parse_header(path, m.data, m.size, &h);
  if (!s && m.size - h.header != h.bytes)
    s = sm_status_new(SM_DATA_LOSS, "%s: the IDX header says %llu bytes of data, the file holds %zu", path,
                      (unsigned long long)h.bytes, m.size - h.header);
  if (!s) s = make_tensor(path, &h, m.data + h.header, out);
  sm__file_map_close(&m);
  return s;
}

/* ---- MNIST directory layout ------------------------------------------------------------------ */
/* The path of DIR/NAME or DIR/NAME.gz, whichever exists (malloc'ed), or a NOT_FOUND error. */
static sm_status *find_file(const char *dir, const char *name, char **out) {
  char gz[128];
  snprintf(gz, sizeof gz, "%s.gz", name);
  const char *cands[2] = {name, gz};
  for (int i = 0; i < 2; i++) {
    char *p = sm__path_join(dir, cands[i]);
    if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
    if (sm__path_exists(p)) {
      *out = p;
      return NULL;
    }
    free(p);
  }
  if (!sm__is_dir(dir)) return sm_status_new(SM_NOT_FOUND, "%s: no such data directory", dir);
  return sm_status_new(SM_NOT_FOUND, "%s: neither %s nor %s is there", dir, name, gz);
}

sm_status *sm_mnist_load(const char *dir, const char *split, int max_label, sm_tensor **images,
                         sm_tensor **labels) {
  *images = *labels = NULL;
  const char *prefix;
  if (split && strcmp(split, "train") == 0)
    prefix = "train";
  else if (split && (strcmp(split, "t10k") == 0 || strcmp(split, "test") == 0))
    prefix = "t10k";
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "unknown MNIST split \"%s\" (expected train, t10k or test)",
                         split ? split : "(null)");
  if (max_label <= 0) max_label = 10;
  char name[64];
  char *ipath = NULL, *lpath = NULL;
  sm_tensor *raw_i = NULL, *raw_l = NULL, *img = NULL, *lab = NULL;
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
  sm_status *s = find_file(dir, name, &ipath);
  if (!s) {
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    s = find_file(dir, name, &lpath);
  }
  if (!s) s = sm_idx_read(ipath, &raw_i);
  if (!s && (sm_tensor_dtype(raw_i) != SM_UINT8 || sm_tensor_rank(raw_i) != 3))
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: MNIST images must be uint8 (type 08) of rank 3 [n, rows, cols]", ipath);
  if (!s) s = sm_idx_read(lpath, &raw_l);
  if (!s && (sm_tensor_dtype(raw_l) != SM_UINT8 || sm_tensor_rank(raw_l) != 1))
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: MNIST labels must be uint8 (type 08) of rank 1 [n]", lpath);
  if (!s && sm_tensor_dims(raw_i)[0] != sm_tensor_dims(raw_l)[0])
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s holds %lld images but %s holds %lld labels", ipath,
                      (long long)sm_tensor_dims(raw_i)[0], lpath, (long long)sm_tensor_dims(raw_l)[0]);
  if (!s) {
    int64_t n = sm_tensor_dims(raw_l)[0];
    const uint8_t *l = sm_tensor_data(raw_l);
    for (int64_t i = 0; i < n; i++)
      if (l[i] >= max_label) {
        s = sm_status_new(SM_INVALID_ARGUMENT, "%s: label %d of image %lld is out of range [0, %d)", lpath, l[i],
                          (long long)i, max_label);
        break;
      }
  }
  if (!s) {
    const int64_t *d = sm_tensor_dims(raw_i);
    int64_t dims[4] = {d[0], d[1], d[2], 1};
    s = sm_tensor_new(SM_FLOAT, 4, dims, &img);
    if (!s) s = sm_tensor_new(SM_INT32, 1, dims, &lab);
    if (s) s = sm_status_prefix(s, "%s", ipath);
  }
  if (!s) {
    const uint8_t *src = sm_tensor_data(raw_i);
    float *dst = sm_tensor_data(img);
    int64_t n = sm_tensor_num_elements(raw_i);
    for (int64_t i = 0; i < n; i++) dst[i] = (float)(src[i] / 255.0); /* as numpy's x / 255.0 then float32 */
    const uint8_t *l = sm_tensor_data(raw_l);
    int32_t *y = sm_tensor_data(lab);
    for (int64_t i = 0; i < sm_tensor_dims(raw_l)[0]; i++) y[i] = l[i];
    *images = img;
    *labels = lab;
    img = lab = NULL;
  }
  sm_tensor_free(img);
  sm_tensor_free(lab);
  sm_tensor_free(raw_i);
  sm_tensor_free(raw_l);
  free(ipath);
  free(lpath);
  return s;
}
