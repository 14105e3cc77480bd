/* npy.c - numpy's .npy arrays and .npz zips of them, read and written as sm_tensors.
 *
 * The rules are numpy/lib/format.py's: a magic, a version, a little-endian header length, then a
 * Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} that np.load reads
 * with literal_eval; we parse exactly that dict grammar by hand (never evaluate anything). The
 * .npz side reads a zip through its central directory, because numpy writes local headers with
 * zip64 extras (force_zip64) and only the central directory has the real sizes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "base/checked.h"
#include "base/file.h"
#include "savedmodel/npy.h"

enum { NPY_MAX_HEADER = 10000 }; /* numpy's default max_header_size */

/* ---- little-endian helpers ------------------------------------------------------------------ */
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xffff); wr16(p + 2, v >> 16); }

/* ---- the header dict ------------------------------------------------------------------------ */
typedef struct {
  char descr[64];
  int fortran;
  int rank;
  int64_t dims[SM_MAX_RANK];
  int have_descr, have_fortran, have_shape;
} npy_header;

typedef struct {
  const char *s;
  size_t n, i;
} cursor;

static void skip_ws(cursor *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r'))
    c->i++;
}

static int peek(cursor *c) { return c->i < c->n ? (unsigned char)c->s[c->i] : -1; }

/* A quoted string without escapes (numpy never writes any in these keys and values). */
static int parse_str(cursor *c, char *buf, size_t cap) {
  int q = peek(c);
  if (q != '\'' && q != '"') return -1;
  c->i++;
  size_t k = 0;
  while (c->i < c->n && c->s[c->i] != q) {
    if (c->s[c->i] == '\\' || k + 1 >= cap) return -1;
    buf[k++] = c->s[c->i++];
  }
  if (c->i >= c->n) return -1;
  c->i++;
  buf[k] = 0;
  return 0;
}

static int match_word(cursor *c, const char *w) {
  size_t l = strlen(w);
  if (c->n - c->i < l || memcmp(c->s + c->i, w, l) != 0) return 0;
  c->i += l;
  return 1;
}

static sm_status *header_err(const char *what, const char *why) {
  return sm_status_new(SM_DATA_LOSS, "%s: bad .npy header: %s", what, why);
}

static sm_status *parse_shape(cursor *c, npy_header *h, const char *what) {
  c->i++; /* '(' */
  h->rank = 0;
  for (;;) {
    skip_ws(c);
    if (peek(c) == ')') { c->i++; return NULL; }
    if (peek(c) < '0' || peek(c) > '9') return header_err(what, "shape must be a tuple of non-negative integers");
    int64_t v = 0;
    while (peek(c) >= '0' && peek(c) <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek(c) - '0', &v))
        return header_err(what, "a dimension of the shape overflows int64");
      c->i++;
    }
    if (peek(c) == 'L') c->i++; /* Python 2 longs, as numpy's _filter_header accepts */
    if (h->rank >= SM_MAX_RANK)
      return sm_status_new(SM_OUT_OF_RANGE, "%s: array has more than %d dimensions", what, SM_MAX_RANK);
    h->dims[h->rank++] = v;
    skip_ws(c);
    if (peek(c) == ',') { c->i++; continue; }
    if (peek(c) == ')') { c->i++; return NULL; }
    return header_err(what, "shape must be a tuple of non-negative integers");
  }
}

static sm_status *parse_header(const char *s, size_t n, npy_header *h, const char *what) {
  cursor c = {s, n, 0};
  memset(h, 0, sizeof *h);
  skip_ws(&c);
  if (peek(&c) != '{') return header_err(what, "not a dict literal");
  c.i++;
  for (;;) {
    skip_ws(&c);
    if (peek(&c) == '}') { c.i++; break; }
    char key[32];
    if (parse_str(&c, key, sizeof key) != 0) return header_err(what, "expected a quoted key");
    skip_ws(&c);
    if (peek(&c) != ':') return header_err(what, "expected ':' after a key");
    c.i++;
    skip_ws(&c);
    if (strcmp(key, "descr") == 0) {
      if (peek(&c) == '[')
        return sm_status_new(SM_UNIMPLEMENTED, "%s: structured numpy arrays (a list descr) are not supported", what);
      if (parse_str(&c, h->descr, sizeof h->descr) != 0) return header_err(what, "descr must be a short string");
      h->have_descr++;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (match_word(&c, "True")) h->fortran = 1;
      else if (match_word(&c, "False")) h->fortran = 0;
      else return header_err(what, "fortran_order must be True or False");
      h->have_fortran++;
    } else if (strcmp(key, "shape") == 0) {
      if (peek(&c) != '(') return header_err(what, "shape must be a tuple");
      sm_status *st = parse_shape(&c, h, what);
      if (st) return st;
      h->have_shape++;
    } else {
      return header_err(what, "unexpected key (numpy allows only descr, fortran_order and shape)");
    }
    skip_ws(&c);
    if (peek(&c) == ',') { c.i++; continue; }
    if (peek(&c) == '}') { c.i++; break; }
    return header_err(what, "expected ',' or '}'");
  }
  skip_ws(&c);
  if (c.i != c.n) return header_err(what, "text after the dict");
  if (h->have_descr != 1 || h->have_fortran != 1 || h->have_shape != 1)
    return header_err(what, "the dict must hold descr, fortran_order and shape once each");
  return NULL;
}

/* ---- dtypes --------------------------------------------------------------------------------- */
typedef enum { E_FIXED, E_BYTES, E_UNICODE } elem_kind;
typedef struct {
  elem_kind kind;
  int dtype;     /* TensorFlow dtype */
  size_t item;   /* bytes per element in the file */
  int swap;      /* big-endian data */
  size_t swapw;  /* width of one swapped unit (half a complex) */
} npy_type;

static sm_status *parse_descr(const char *d, npy_type *t, const char *what) {
  memset(t, 0, sizeof *t);
  char order = '=';
  const char *p = d;
  if (*p == '<' || *p == '>' || *p == '|' || *p == '=') order = *p++;
  char k = *p++;
  if (k == 0) return header_err(what, "empty descr");
  int has_size = *p >= '0' && *p <= '9';
  uint64_t size = 0;
  while (*p >= '0' && *p <= '9') {
    if (sm__mul_u64(size, 10, &size) || sm__add_u64(size, (uint64_t)(*p - '0'), &size) || size > (1u << 30))
      return sm_status_new(SM_OUT_OF_RANGE, "%s: numpy type '%s' has an absurd item size", what, d);
    p++;
  }
  if (*p != 0 || !has_size) {
    if (k == 'O' && *p == 0)
      return sm_status_new(SM_UNIMPLEMENTED,
                           "%s: numpy object arrays (descr '%s') hold pickled Python objects; they are not read "
                           "(save strings as bytes 'S' or str 'U' arrays instead)", what, d);
    if (k == '?' && *p == 0) { size = 1; k = 'b'; }
    else return sm_status_new(SM_UNIMPLEMENTED, "%s: numpy type '%s' is not supported", what, d);
  }
  t->swap = order == '>';
  t->item = (size_t)size;
  t->kind = E_FIXED;
  int dt = SM_INVALID;
  switch (k) {
  case 'b': if (size == 1) dt = SM_BOOL; break;
  case 'i': dt = size == 1 ? SM_INT8 : size == 2 ? SM_INT16 : size == 4 ? SM_INT32 : size == 8 ? SM_INT64 : SM_INVALID; break;
  case 'u': dt = size == 1 ? SM_UINT8 : size == 2 ? SM_UINT16 : size == 4 ? SM_UINT32 : size == 8 ? SM_UINT64 : SM_INVALID; break;
  case 'f': dt = size == 2 ? SM_HALF : size == 4 ? SM_FLOAT : size == 8 ? SM_DOUBLE : SM_INVALID; break;
  case 'c': dt = size == 8 ? SM_COMPLEX64 : size == 16 ? SM_COMPLEX128 : SM_INVALID; break;
  case 'S': case 'a': t->kind = E_BYTES; dt = SM_STRING; t->swap = 0; break;
  case 'U':
    t->kind = E_UNICODE; dt = SM_STRING;
    if (sm__mul_u64(size, 4, &size)) return header_err(what, "absurd unicode width");
    t->item = (size_t)size;
    break;
  case 'O':
    return sm_status_new(SM_UNIMPLEMENTED,
                         "%s: numpy object arrays (descr '%s') hold pickled Python objects; they are not read "
                         "(save strings as bytes 'S' or str 'U' arrays instead)", what, d);
  default: break;
  }
  if (dt == SM_INVALID)
    return sm_status_new(SM_UNIMPLEMENTED, "%s: numpy type '%s' has no TensorFlow dtype here", what, d);
  if (order == '|' && t->kind == E_FIXED && size != 1 && k != 'b')
    return header_err(what, "'|' (no byte order) is only valid for one-byte types");
  t->dtype = dt;
  t->swapw = k == 'c' ? t->item / 2 : t->item;
  if (t->swapw <= 1) t->swap = 0;
  return NULL;
}

/* Element i of the file, in row-major order of the result: the file index for fortran order. */
static void swap_bytes(uint8_t *p, size_t n, size_t w) {
  for (size_t off = 0; off + w <= n; off += w)
    for (size_t a = 0, b = w - 1; a < b; a++, b--) { uint8_t x = p[off + a]; p[off + a] = p[off + b]; p[off + b] = x; }
}

/* Writes UTF-8 of UCS4 item (trailing NULs dropped) into buf (cap >= 4 * chars). */
static int ucs4_to_utf8(const uint8_t *src, size_t chars, int big, char *buf, size_t *len) {
  size_t n = chars;
  while (n > 0) {
    const uint8_t *q = src + 4 * (n - 1);
    uint32_t cp = big ? ((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]) : rd32(q);
    if (cp != 0) break;
    n--;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *q = src + 4 * i;
    uint32_t cp = big ? ((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]) : rd32(q);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return -1;
    if (cp < 0x80) buf[k++] = (char)cp;
    else if (cp < 0x800) { buf[k++] = (char)(0xc0 | cp >> 6); buf[k++] = (char)(0x80 | (cp & 0x3f)); }
    else if (cp < 0x10000) {
      buf[k++] = (char)(0xe0 | cp >> 12); buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)); buf[k++] = (char)(0x80 | (cp & 0x3f));
    } else {
      buf[k++] = (char)(0xf0 | cp >> 18); buf[k++] = (char)(0x80 | ((cp >> 12) & 0x3f));
      buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)); buf[k++] = (char)(0x80 | (cp & 0x3f));
    }
  }
  *len = k;
  return 0;
}

/* The layout of a .npy image from its first len bytes (enough for the header): the header, the
 * dtype, the element count, where the data starts (*body) and how many bytes it takes (*need). */
static sm_status *npy_layout(const uint8_t *p, size_t len, const char *what, npy_header *hp, npy_type *typ,
                             int64_t *countp, size_t *body, uint64_t *needp) {
  if (len < 10 || memcmp(p, SM_NPY_MAGIC, 6) != 0)
    return sm_status_new(SM_DATA_LOSS, "%s: not a .npy file (no \\x93NUMPY magic)", what);
  int major = p[6], minor = p[7];
  size_t hlen, hstart;
  if (major == 1 && minor == 0) { hlen = rd16(p + 8); hstart = 10; }
  else if ((major == 2 || major == 3) && minor == 0) {
    if (len < 12) return sm_status_new(SM_DATA_LOSS, "%s: truncated .npy header", what);
    hlen = rd32(p + 8); hstart = 12;
  } else {
    return sm_status_new(SM_UNIMPLEMENTED, "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)", what,
                         major, minor);
  }
  if (hlen > NPY_MAX_HEADER)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: .npy header is %zu bytes, more than numpy's limit of %d", what, hlen,
                         NPY_MAX_HEADER);
  if (len - hstart < hlen) return sm_status_new(SM_DATA_LOSS, "%s: truncated .npy header", what);
  sm_status *st = parse_header((const char *)p + hstart, hlen, hp, what);
  if (st) return st;
  if ((st = parse_descr(hp->descr, typ, what))) return st;
  if (sm__num_elements(hp->rank, hp->dims, countp))
    return sm_status_new(SM_OUT_OF_RANGE, "%s: the shape's element count overflows", what);
  *body = hstart + hlen;
  if (sm__mul_u64((uint64_t)*countp, typ->item, needp) || *needp > SM_MAX_TENSOR_BYTES)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: array data would be larger than %llu bytes", what,
                         (unsigned long long)SM_MAX_TENSOR_BYTES);
  return NULL;
}

sm_status *sm_npy_decode(const void *data, size_t len, const char *what, sm_tensor **out) {
  *out = NULL;
  const uint8_t *p = data;
  if (!what) what = ".npy data";
  npy_header h;
  npy_type ty;
  int64_t count;
  size_t boff;
  uint64_t need;
  sm_status *st = npy_layout(p, len, what, &h, &ty, &count, &boff, &need);
  if (st) return st;
  const uint8_t *body = p + boff;
  size_t avail = len - boff;
  if (need > avail)
    return sm_status_new(SM_DATA_LOSS, "%s: truncated .npy data: the shape needs %llu bytes, %zu are there", what,
                         (unsigned long long)need, avail);
  /* Zero-width strings take no bytes; bound their count by the file so it cannot ask for much. */
  if (ty.item == 0 && (uint64_t)count > len * 64 + 1024)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: too many zero-width elements", what);
  sm_tensor *t;
  if ((st = sm_tensor_new(ty.dtype, h.rank, h.dims, &t))) return sm_status_prefix(st, "%s", what);

  /* Map row-major index -> file index (fortran order stores the first axis fastest). */
  int64_t idx[SM_MAX_RANK] = {0}, fstride[SM_MAX_RANK] = {0};
  int64_t s = 1;
  /* Only with elements to read: then every dim is >= 1 and their product is count, so no stride
   * overflows (an empty array may still name huge other dims: shape (0, 2^60, 6)). */
  if (count > 0)
    for (int d = 0; d < h.rank; d++) { fstride[d] = s; s *= h.dims[d]; }
  char *ubuf = NULL;
  if (ty.kind == E_UNICODE && count > 0) { /* then count x item bytes are in the file: item is bounded */
    ubuf = malloc(ty.item + 1);
    if (!ubuf) { sm_tensor_free(t); return sm_status_new(SM_NO_MEMORY, "%s: out of memory", what); }
  }
  uint8_t *dst = ty.kind == E_FIXED ? sm_tensor_data(t) : NULL;
  for (int64_t i = 0; i < count; i++) {
    int64_t src_i = i;
    if (h.fortran && h.rank > 1) {
      src_i = 0;
      for (int d = 0; d < h.rank; d++) src_i += idx[d] * fstride[d];
      for (int d = h.rank - 1; d >= 0; d--) { if (++idx[d] < h.dims[d]) break; idx[d] = 0; }
    }
    const uint8_t *src = body + (size_t)src_i * ty.item;
    if (ty.kind == E_FIXED) {
      memcpy(dst + (size_t)i * ty.item, src, ty.item);
    } else if (ty.kind == E_BYTES) {
      size_t n = ty.item;
      while (n > 0 && src[n - 1] == 0) n--;
      st = sm_tensor_set_string(t, i, src, n);
    } else {
      size_t n;
      if (ucs4_to_utf8(src, ty.item / 4, ty.swap || h.descr[0] == '>', ubuf, &n) != 0)
        st = sm_status_new(SM_DATA_LOSS, "%s: element %lld is not valid unicode", what, (long long)i);
      else st = sm_tensor_set_string(t, i, ubuf, n);
    }
    if (st) { free(ubuf); sm_tensor_free(t); return st; }
  }
  free(ubuf);
  if (ty.kind == E_FIXED && ty.swap) swap_bytes(dst, (size_t)need, ty.swapw);
  if (ty.dtype == SM_BOOL) /* numpy reads any nonzero byte as True; kernels expect 0 or 1 */
    for (int64_t i = 0; i < count; i++) dst[i] = dst[i] != 0;
  *out = t;
  return NULL;
}

sm_status *sm_npy_read(const char *path, sm_tensor **out) {
  *out = NULL;
  sm_file_map m;
  sm_status *st = sm__file_map_open(path, &m);
  if (st) return st;
  st = sm_npy_decode(m.data, m.size, path, out);
  sm__file_map_close(&m);
  return st;
}

/* ---- writing -------------------------------------------------------------------------------- */
static const char *descr_of(int dtype) {
  switch (sm_dtype_base(dtype)) {
  case SM_BOOL: return "|b1";
  case SM_INT8: return "|i1";
  case SM_UINT8: return "|u1";
  case SM_INT16: return "<i2";
  case SM_UINT16: return "<u2";
  case SM_INT32: return "<i4";
  case SM_UINT32: return "<u4";
  case SM_INT64: return "<i8";
  case SM_UINT64: return "<u8";
  case SM_HALF: return "<f2";
  case SM_FLOAT: return "<f4";
  case SM_DOUBLE: return "<f8";
  case SM_COMPLEX64: return "<c8";
  case SM_COMPLEX128: return "<c16";
  /* the quantized types as the integers they hold, as saved_model_cli writes them */
  case SM_QINT8: return "|i1";
  case SM_QUINT8: return "|u1";
  case SM_QINT16: return "<i2";
  case SM_QUINT16: return "<u2";
  case SM_QINT32: return "<i4";
  default: return NULL;
  }
}

sm_status *sm_npy_encode(const sm_tensor *t, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  int dt = sm_tensor_dtype(t);
  char descr[32];
  size_t item;
  int64_t count = sm_tensor_num_elements(t);
  if (sm_dtype_base(dt) == SM_STRING) {
    size_t mx = 1;
    for (int64_t i = 0; i < count; i++) {
      size_t l;
      sm_tensor_string(t, i, &l);
      if (l > mx) mx = l;
    }
    snprintf(descr, sizeof descr, "|S%zu", mx);
    item = mx;
  } else {
    const char *d = descr_of(dt);
    if (!d)
      return sm_status_new(SM_UNIMPLEMENTED, "numpy has no type for %s; cannot write it as .npy",
                           sm_dtype_name(dt) ? sm_dtype_name(dt) : "this dtype");
    snprintf(descr, sizeof descr, "%s", d);
    item = sm_dtype_size(dt);
  }
  /* The dict exactly as numpy's _write_array_header builds it (keys sorted, repr of the shape). */
  char hdr[NPY_MAX_HEADER + 256];
  int rank = sm_tensor_rank(t);
  const int64_t *dims = sm_tensor_dims(t);
  size_t k = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < rank; d++) {
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (k > NPY_MAX_HEADER) return sm_status_new(SM_OUT_OF_RANGE, "shape too long for a .npy header");
  }
  k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%s), }", rank == 1 ? "," : "");
  if (rank > 0) { /* numpy's spare room for growing the first axis in place */
    char first[32];
    int fl = snprintf(first, sizeof first, "%lld", (long long)dims[0]);
    for (int i = fl; i < 21; i++) hdr[k++] = ' ';
  }
  size_t hlen = k + 1; /* + '\n' */
  int v2 = 0;
  size_t pad = 64 - ((8 + 2 + hlen) % 64);
  if (hlen + pad > 65535) { v2 = 1; pad = 64 - ((8 + 4 + hlen) % 64); }
  size_t pre = v2 ? 12 : 10;
  uint64_t data_bytes;
  if (sm__mul_u64((uint64_t)count, item, &data_bytes) || data_bytes > SM_MAX_TENSOR_BYTES)
    return sm_status_new(SM_OUT_OF_RANGE, "array too large to write");
  size_t total = pre + hlen + pad + (size_t)data_bytes;
  uint8_t *b = malloc(total ? total : 1);
  if (!b) return sm_status_new(SM_NO_MEMORY, "out of memory writing .npy");
  memcpy(b, SM_NPY_MAGIC, 6);
  b[6] = v2 ? 2 : 1;
  b[7] = 0;
  if (v2) wr32(b + 8, (uint32_t)(hlen + pad - 0));
  else wr16(b + 8, (uint32_t)(hlen + pad));
  memcpy(b + pre, hdr, k);
  memset(b + pre + k, ' ', pad);
  b[pre + k + pad] = '\n';
  uint8_t *dst = b + pre + hlen + pad;
  if (sm_dtype_base(dt) == SM_STRING) {
    memset(dst, 0, (size_t)data_bytes);
    for (int64_t i = 0; i < count; i++) {
      size_t l;
      const char *s = sm_tensor_string(t, i, &l);
      if (l) memcpy(dst + (size_t)i * item, s, l);
    }
  } else if (data_bytes) {
    memcpy(dst, sm_tensor_data(t), (size_t)data_bytes);
  }
  *out = b;
  *len = total;
  return NULL;
}

sm_status *sm_npy_write(const char *path, const sm_tensor *t) {
  uint8_t *b;
  size_t n;
  sm_status *st = sm_npy_encode(t, &b, &n);
  if (st) return sm_status_prefix(st, "%s", path);
  st = sm__file_write_atomic(path, b, n);
  free(b);
  return st;
}

/* ---- .npz ----------------------------------------------------------------------------------- */
typedef struct {
  char *name;     /* as stored */
  char *short_name; /* ".npy" removed */
  int method;
  uint32_t crc;
  uint64_t csize, usize, local;
} zentry;

struct sm_npz {
  char *what;
  uint8_t *data;
  size_t len;
  zentry *e;
  int n;
};

void sm_npz_free(sm_npz *z) {
  if (!z) return;
  for (int i = 0; i < z->n; i++) { free(z->e[i].name); free(z->e[i].short_name); }
  free(z->e);
  free(z->data);
  free(z->what);
  free(z);
}

static sm_status *zip_err(const sm_npz *z, const char *why) {
  return sm_status_new(SM_DATA_LOSS, "%s: bad .npz (zip) file: %s", z->what, why);
}

static sm_status *npz_index(sm_npz *z) {
  const uint8_t *p = z->data;
  size_t len = z->len;
  if (len < 22) return zip_err(z, "too short for a zip end record");
  size_t eocd = SIZE_MAX;
  size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
  for (size_t i = len - 22 + 1; i-- > lo;) {
    if (rd32(p + i) == 0x06054b50 && i + 22 + rd16(p + i + 20) <= len) { eocd = i; break; }
  }
  if (eocd == SIZE_MAX) return zip_err(z, "no end of central directory record");
  uint64_t nent = rd16(p + eocd + 10), cdsize = rd32(p + eocd + 12), cdoff = rd32(p + eocd + 16);
  if ((nent == 0xffff || cdsize == 0xffffffffu || cdoff == 0xffffffffu) && eocd >= 20 &&
      rd32(p + eocd - 20) == 0x07064b50) {
    uint64_t z64 = rd64(p + eocd - 20 + 8);
    if (z64 > len || len - z64 < 56 || rd32(p + z64) != 0x06064b50) return zip_err(z, "bad zip64 end record");
    nent = rd64(p + z64 + 32);
    cdsize = rd64(p + z64 + 40);
    cdoff = rd64(p + z64 + 48);
  }
  if (cdoff > len || cdsize > len - cdoff) return zip_err(z, "central directory outside the file");
  if (nent > cdsize / 46) return zip_err(z, "more entries than the central directory can hold");
  z->e = calloc(nent ? nent : 1, sizeof *z->e);
  if (!z->e) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", z->what);
  size_t off = (size_t)cdoff, end = (size_t)(cdoff + cdsize);
  for (uint64_t k = 0; k < nent; k++) {
    if (end - off < 46 || rd32(p + off) != 0x02014b50) return zip_err(z, "bad central directory entry");
    zentry *e = &z->e[z->n];
    uint16_t flags = rd16(p + off + 8);
    e->method = rd16(p + off + 10);
    e->crc = rd32(p + off + 16);
    e->csize = rd32(p + off + 20);
    e->usize = rd32(p + off + 24);
    size_t nl = rd16(p + off + 28), xl = rd16(p + off + 30), cl = rd16(p + off + 32);
    e->local = rd32(p + off + 42);
    if (end - off - 46 < nl + xl + cl) return zip_err(z, "central directory entry runs past its end");
    const uint8_t *nm = p + off + 46, *x = nm + nl;
    if (memchr(nm, 0, nl)) return zip_err(z, "member name contains NUL");
    if (flags & 1) return sm_status_new(SM_UNIMPLEMENTED, "%s: encrypted zip members are not supported", z->what);
    /* zip64 extra: the 64-bit values of the fields that hold 0xffffffff, in this order */
    for (size_t xo = 0; xo + 4 <= xl;) {
      uint16_t id = rd16(x + xo), sz = rd16(x + xo + 2);
      if (xo + 4 + sz > xl) break;
      if (id == 1) {
        const uint8_t *q = x + xo + 4, *qe = q + sz;
        if (e->usize == 0xffffffffu) { if (qe - q < 8) return zip_err(z, "short zip64 extra"); e->usize = rd64(q); q += 8; }
        if (e->csize == 0xffffffffu) { if (qe - q < 8) return zip_err(z, "short zip64 extra"); e->csize = rd64(q); q += 8; }
        if (e->local == 0xffffffffu) { if (qe - q < 8) return zip_err(z, "short zip64 extra"); e->local = rd64(q); }
      }
      xo += 4 + (size_t)sz;
    }
    e->name = malloc(nl + 1);
    e->short_name = malloc(nl + 1);
    if (!e->name || !e->short_name) { free(e->name); free(e->short_name); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
    memcpy(e->name, nm, nl);
    e->name[nl] = 0;
    memcpy(e->short_name, nm, nl);
    e->short_name[nl >= 4 && memcmp(nm + nl - 4, ".npy", 4) == 0 ? nl - 4 : nl] = 0;
    z->n++;
    off += 46 + nl + xl + cl;
  }
  return NULL;
}

sm_status *sm_npz_open_memory(const void *data, size_t len, const char *what, sm_npz **out) {
  *out = NULL;
  sm_npz *z = calloc(1, sizeof *z);
  if (!z) return sm_status_new(SM_NO_MEMORY, "out of memory");
  z->what = strdup(what ? what : ".npz data");
  z->data = malloc(len ? len : 1);
  if (!z->what || !z->data) { sm_npz_free(z); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
  if (len) memcpy(z->data, data, len);
  z->len = len;
  sm_status *st = npz_index(z);
  if (st) { sm_npz_free(z); return st; }
  *out = z;
  return NULL;
}

sm_status *sm_npz_open(const char *path, sm_npz **out) {
  *out = NULL;
  sm_file_map m;
  sm_status *st = sm__file_map_open(path, &m);
  if (st) return st;
  st = sm_npz_open_memory(m.data, m.size, path, out);
  sm__file_map_close(&m);
  return st;
}

int sm_npz_count(const sm_npz *z) { return z ? z->n : 0; }
const char *sm_npz_name(const sm_npz *z, int i) { return z && i >= 0 && i < z->n ? z->e[i].short_name : NULL; }

/* Inflates exactly n bytes into dst (in_left: compressed bytes left at zs->next_in). Z_OK when
 * they are out and the stream goes on, Z_STREAM_END when it ended with the n-th byte, else an
 * error (Z_BUF_ERROR: no progress, the data ran out or the stream ended early). */
static int inflate_into(z_stream *zs, uint64_t *in_left, uint8_t *dst, uint64_t n) {
  zs->next_out = dst;
  uint64_t out_left = n;
  int r = Z_OK;
  while (r == Z_OK && out_left > 0) {
    uInt ci = *in_left > 0x40000000 ? 0x40000000 : (uInt)*in_left;
    uInt co = out_left > 0x40000000 ? 0x40000000 : (uInt)out_left;
    zs->avail_in = ci;
    zs->avail_out = co;
    r = inflate(zs, Z_NO_FLUSH);
    *in_left -= ci - zs->avail_in;
    out_left -= co - zs->avail_out;
    if (r == Z_OK && ci == zs->avail_in && co == zs->avail_out) r = Z_BUF_ERROR; /* no progress */
  }
  if (r == Z_STREAM_END && out_left > 0) return Z_BUF_ERROR;
  return r;
}

sm_status *sm_npz_get(const sm_npz *z, const char *name, sm_tensor **out) {
  *out = NULL;
  const zentry *e = NULL;
  for (int i = 0; i < z->n && !e; i++) if (strcmp(z->e[i].name, name) == 0) e = &z->e[i];
  for (int i = 0; i < z->n && !e; i++) if (strcmp(z->e[i].short_name, name) == 0 && strcmp(z->e[i].name, name) != 0 &&
                                          strlen(z->e[i].name) == strlen(name) + 4) e = &z->e[i];
  if (!e) return sm_status_new(SM_NOT_FOUND, "%s: no array named '%s'", z->what, name);
  char what[512];
  snprintf(what, sizeof what, "%s[%s]", z->what, e->short_name);
  const uint8_t *p = z->data;
  if (e->local > z->len || z->len - e->local < 30 || rd32(p + e->local) != 0x04034b50)
    return sm_status_new(SM_DATA_LOSS, "%s: bad local zip header", what);
  uint64_t start = e->local + 30 + (uint64_t)rd16(p + e->local + 26) + rd16(p + e->local + 28);
  if (start > z->len || z->len - start < e->csize) return sm_status_new(SM_DATA_LOSS, "%s: member data runs past the end of the file", what);
  const uint8_t *src = p + start;
  if (e->usize > SM_MAX_TENSOR_BYTES + (1u << 20))
    return sm_status_new(SM_OUT_OF_RANGE, "%s: member is larger than this library reads", what);
  uint8_t *buf = NULL;
  const uint8_t *mem;
  uint64_t usize = e->usize; /* the bytes read: fewer when the .npy header describes fewer */
  if (e->method == 0) {
    if (e->csize != e->usize) return sm_status_new(SM_DATA_LOSS, "%s: stored member with differing sizes", what);
    mem = src;
  } else if (e->method == 8) {
    /* deflate expands at most ~1032:1, so a larger claimed size is a lie, not a reason to allocate */
    if (e->usize > e->csize * 1100 + 1024) return sm_status_new(SM_DATA_LOSS, "%s: implausible uncompressed size", what);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) return sm_status_new(SM_INTERNAL, "%s: inflateInit2 failed", what);
    zs.next_in = (Bytef *)src;
    uint64_t in_left = e->csize;
    /* the .npy header first, then only the bytes it describes, as np.load reads a member: a few
     * KB of deflate that inflate to a GiB behind a two-element header cost 136 bytes, not a GiB
     * (the rest is never inflated, so the member's CRC is not checked then: numpy does not either) */
    uint8_t head[16 + NPY_MAX_HEADER];
    uint64_t hn = e->usize < sizeof head ? e->usize : sizeof head;
    int r = inflate_into(&zs, &in_left, head, hn);
    sm_status *hs = NULL;
    if (r != Z_OK && !(r == Z_STREAM_END && hn == e->usize))
      hs = sm_status_new(SM_DATA_LOSS, "%s: deflate data is corrupt or does not match its size", what);
    else if (hn < 6 || memcmp(head, SM_NPY_MAGIC, 6) != 0)
      hs = sm_status_new(SM_UNIMPLEMENTED, "%s: member is not a .npy array", what);
    else {
      npy_header h;
      npy_type ty;
      int64_t count;
      size_t boff;
      uint64_t need;
      hs = npy_layout(head, (size_t)hn, what, &h, &ty, &count, &boff, &need);
      if (!hs && boff + need < usize) usize = boff + need; /* decode reports a member too short */
    }
    if (!hs && !(buf = malloc(usize ? usize : 1))) hs = sm_status_new(SM_NO_MEMORY, "%s: out of memory", what);
    if (hs) {
      inflateEnd(&zs);
      return hs;
    }
    memcpy(buf, head, (size_t)(hn < usize ? hn : usize));
    if (hn < usize) r = inflate_into(&zs, &in_left, buf + hn, usize - hn);
    if (r == Z_OK && usize < e->usize) r = Z_STREAM_END; /* the header's bytes are out: enough */
    else if (r == Z_OK) { /* every byte is out: the stream must end here */
      uint8_t extra;
      zs.next_out = &extra;
      zs.avail_out = 1;
      zs.avail_in = in_left > 0x40000000 ? 0x40000000 : (uInt)in_left;
      r = inflate(&zs, Z_FINISH);
      if (r == Z_STREAM_END && zs.avail_out == 0) r = Z_DATA_ERROR; /* more data than the size */
    }
    inflateEnd(&zs);
    if (r != Z_STREAM_END) {
      free(buf);
      return sm_status_new(SM_DATA_LOSS, "%s: deflate data is corrupt or does not match its size", what);
    }
    mem = buf;
  } else {
    return sm_status_new(SM_UNIMPLEMENTED, "%s: zip compression method %d is not supported (stored and deflate are)",
                         what, e->method);
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t o = 0; usize == e->usize && o < usize;) {
    uInt c = usize - o > 0x40000000 ? 0x40000000 : (uInt)(usize - o);
    crc = crc32(crc, mem + o, c);
    o += c;
  }
  sm_status *st = NULL;
  if (usize == e->usize && (uint32_t)crc != e->crc) st = sm_status_new(SM_DATA_LOSS, "%s: CRC mismatch", what);
  else if (usize < 6 || memcmp(mem, SM_NPY_MAGIC, 6) != 0)
    st = sm_status_new(SM_UNIMPLEMENTED, "%s: member is not a .npy array", what);
  else st = sm_npy_decode(mem, (size_t)usize, what, out);
  free(buf);
  return st;
}

typedef struct {
  uint8_t *b;
  size_t n, cap;
} buf_t;

static int put(buf_t *b, const void *p, size_t n) {
  if (b->cap - b->n < n) {
    size_t c = b->cap ? b->cap : 1024;
    while (c - b->n < n) { if (c > SIZE_MAX / 2) return -1; c *= 2; }
    uint8_t *nb = realloc(b->b, c);
    if (!nb) return -1;
    b->b = nb;
    b->cap = c;
  }
  if (n) memcpy(b->b + b->n, p, n);
  b->n += n;
  return 0;
}

sm_status *sm_npz_write(const char *path, const char *const *names, const sm_tensor *const *tensors, int n,
                        int compress) {
  buf_t out = {0}, cd = {0};
  sm_status *st = NULL;
  for (int i = 0; i < n && !st; i++) {
    uint8_t *npy = NULL, *cz = NULL;
    size_t nlen;
    if ((st = sm_npy_encode(tensors[i], &npy, &nlen))) break;
    const uint8_t *data = npy;
    size_t clen = nlen;
    if (compress) {
      uLong bound = compressBound((uLong)nlen) + 64;
      cz = malloc(bound);
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      if (!cz || deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(npy); free(cz);
        st = sm_status_new(SM_NO_MEMORY, "%s: cannot start deflate", path);
        break;
      }
      zs.next_in = npy; zs.avail_in = (uInt)nlen; zs.next_out = cz; zs.avail_out = (uInt)bound;
      int r = deflate(&zs, Z_FINISH);
      clen = zs.total_out;
      deflateEnd(&zs);
      if (r != Z_STREAM_END) { free(npy); free(cz); st = sm_status_new(SM_INTERNAL, "%s: deflate failed", path); break; }
      data = cz;
    }
    size_t nl = strlen(names[i]) + 4;
    if (nlen > 0xfffffffeu || clen > 0xfffffffeu || out.n > 0xfffffffeu || nl > 0xffff) {
      free(npy); free(cz);
      st = sm_status_new(SM_OUT_OF_RANGE, "%s: member '%s' too large for a zip without zip64", path, names[i]);
      break;
    }
    char *nm = malloc(nl + 1);
    if (!nm) { free(npy); free(cz); st = sm_status_new(SM_NO_MEMORY, "out of memory"); break; }
    snprintf(nm, nl + 1, "%s.npy", names[i]);
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), npy, (uInt)nlen);
    uint8_t lh[30] = {0}, ch[46] = {0};
    wr32(lh, 0x04034b50); wr16(lh + 4, 20); wr16(lh + 8, compress ? 8 : 0); wr16(lh + 12, 0x21);
    wr32(lh + 14, crc); wr32(lh + 18, (uint32_t)clen); wr32(lh + 22, (uint32_t)nlen); wr16(lh + 26, (uint32_t)(nl));
    wr32(ch, 0x02014b50); wr16(ch + 4, 20); wr16(ch + 6, 20); wr16(ch + 10, compress ? 8 : 0); wr16(ch + 14, 0x21);
    wr32(ch + 16, crc); wr32(ch + 20, (uint32_t)clen); wr32(ch + 24, (uint32_t)nlen); wr16(ch + 28, (uint32_t)nl);
    wr32(ch + 38, 0x01800000u); wr32(ch + 42, (uint32_t)out.n);
    if (put(&out, lh, 30) || put(&out, nm, nl) || put(&out, data, clen) || put(&cd, ch, 46) || put(&cd, nm, nl))
      st = sm_status_new(SM_NO_MEMORY, "out of memory writing %s", path);
    free(nm); free(npy); free(cz);
  }
  if (!st) {
    uint8_t eo[22] = {0};
    wr32(eo, 0x06054b50); wr16(eo + 8, (uint32_t)n); wr16(eo + 10, (uint32_t)n);
    wr32(eo + 12, (uint32_t)cd.n); wr32(eo + 16, (uint32_t)out.n);
    if (n > 0xffff || out.n > 0xfffffffeu) st = sm_status_new(SM_OUT_OF_RANGE, "%s: too large for a zip without zip64", path);
    else if (put(&out, cd.b, cd.n) || put(&out, eo, 22)) st = sm_status_new(SM_NO_MEMORY, "out of memory writing %s", path);
  }
  if (!st) st = sm__file_write_atomic(path, out.b, out.n);
  free(out.b);
  free(cd.b);
  return st;
}
