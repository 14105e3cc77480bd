/* io_codec.c - the byte codecs of tf.io: DecodeCompressed (tf.io.decode_compressed), ParseTensor
 * and SerializeTensor (tf.io.parse_tensor / serialize_tensor), as TensorFlow's kernels
 * (decode_compressed_op.cc, parse_tensor_op.cc).
 *
 * DecodeCompressed inflates each string with the system zlib (linked already), as TF's
 * ZlibInputStream reads it: "ZLIB" a zlib stream (what follows its end is ignored), "GZIP" gzip
 * members one after another, "" the bytes unchanged; a truncated stream gives what inflated (TF
 * reads to the end of the input and stops), corrupt data zlib's message, and an output past 1 GiB
 * TF's limit error. "ZSTD" through the system's libzstd.so.1, opened at the first use (no header
 * needed: the four functions' stable ABI is declared here), as TF: a frame whose header gives its
 * size, at most 1 GiB; without the library the op refuses with UNIMPLEMENTED naming it.
 *
 * SerializeTensor writes the TensorProto bytes TF's protobuf writes: dtype, tensor_shape and
 * tensor_content (string tensors: string_val), in field order. ParseTensor decodes a TensorProto
 * (the checked decoder, src/format/pb_decode.h) with the loader's TensorProto rules and checks its
 * dtype against out_type with TF's message. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/lazylib.h"
#include "ops/inflate.h"
#include "format/pb_arena.h"
#include "format/pb_decode.h"
#include "runtime/kernel.h"
#include "tensor.pb-c.h"
#include "ops/io_codec.h"

/* ---- DecodeCompressed ------------------------------------------------------------------------ */

enum { CMP_NONE, CMP_ZLIB, CMP_GZIP, CMP_ZSTD };

static sm_status *dc_prepare(const sm_node *node, void **state) {
  int *kind = calloc(1, sizeof *kind);
  if (!kind) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *p = "";
  size_t n = 0;
  sm_status *s = NULL;
  if (sm__node_attr(node, "compression_type")) s = sm__node_attr_string(node, "compression_type", &p, &n);
  if (!s) {
    if (n == 0) *kind = CMP_NONE;
    else if (n == 4 && !memcmp(p, "ZLIB", 4)) *kind = CMP_ZLIB;
    else if (n == 4 && !memcmp(p, "GZIP", 4)) *kind = CMP_GZIP;
    else if (n == 4 && !memcmp(p, "ZSTD", 4)) *kind = CMP_ZSTD;
    else s = sm_status_new(SM_INVALID_ARGUMENT, "Only ZLIB, ZSTD, GZIP or NONE are supported compressions");
  }
  if (s) {
    free(kind);
    return s;
  }
  *state = kind;
  return NULL;
}

#define DC_MAX ((size_t)1 << 30) /* TF's 1 GiB cap on one output */

static sm_status *too_big(const char *what, size_t max) {
  if (max == DC_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Decompressed size exceeds 1GB limit");
  return sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: the compressed data inflates to more than %zu bytes", what, max);
}

/* Declared in ops/inflate.h. */

sm_status *sm__inflate(sm_kctx *ctx, int gzip, const uint8_t *in, size_t n, size_t max, const char *what, uint8_t **out,
                       size_t *outn) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, gzip ? MAX_WBITS + 16 : MAX_WBITS) != Z_OK)
    return sm_status_new(SM_INTERNAL, "%s: zlib could not be initialised", what);
  sm_status *s = NULL;
  size_t cap = n < max / 8 ? n * 4 + 256 : max + 1, len = 0;
  uint8_t *buf = sm__kctx_scratch(ctx, cap, &s);
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = 0;
  size_t fed = 0;
  while (buf) {
    if (z.avail_in == 0 && fed < n) { /* feed in pieces: avail_in is a uInt */
      size_t k = n - fed < (1u << 30) ? n - fed : (1u << 30);
      z.next_in = (Bytef *)(uintptr_t)(in + fed);
      z.avail_in = (uInt)k;
      fed += k;
    }
    if (len == cap) {
      if (cap > max) {
        s = too_big(what, max);
        break;
      }
      size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
      uint8_t *nb = sm__kctx_scratch_realloc(ctx, buf, ncap, &s);
      if (!nb) break;
      buf = nb, cap = ncap;
    }
    z.next_out = buf + len;
    z.avail_out = (uInt)(cap - len < (1u << 30) ? cap - len : (1u << 30));
    uInt before = z.avail_out;
    int r = inflate(&z, Z_NO_FLUSH);
    len += before - z.avail_out;
    if (r == Z_STREAM_END) {
      if (!gzip || (z.avail_in == 0 && fed == n)) break;
      inflateReset(&z); /* the next gzip member */
      continue;
    }
    if (r == Z_BUF_ERROR && z.avail_in == 0 && fed == n && z.avail_out != 0) break; /* input ended */
    if (r != Z_OK && r != Z_BUF_ERROR) {
      s = z.msg ? sm_status_new(SM_DATA_LOSS, "%s: inflate() failed with error %d: %s", what, r, z.msg)
                : sm_status_new(SM_DATA_LOSS, "%s: inflate() failed with error %d", what, r);
      break;
    }
  }
  inflateEnd(&z);
  if (!s && len > max) s = too_big(what, max);
  if (s) {
    sm__kctx_scratch_free(ctx, buf);
    return s;
  }
  *out = buf;
  *outn = len;
  return NULL;
}

/* libzstd, bound once */
static struct {
  unsigned long long (*content_size)(const void *, size_t);
  size_t (*decompress)(void *, size_t, const void *, size_t);
  unsigned (*is_error)(size_t);
  const char *(*error_name)(size_t);
  int ok;
} Z;
static pthread_once_t z_once = PTHREAD_ONCE_INIT;

static void z_bind(void) {
  void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  SM_BIND(h, Z.content_size, "ZSTD_getFrameContentSize");
  SM_BIND(h, Z.decompress, "ZSTD_decompress");
  SM_BIND(h, Z.is_error, "ZSTD_isError");
  SM_BIND(h, Z.error_name, "ZSTD_getErrorName");
  Z.ok = Z.content_size && Z.decompress && Z.is_error && Z.error_name;
}

static sm_status *zstd_one(sm_kctx *ctx, const uint8_t *in, size_t n, uint8_t **out, size_t *outn) {
  pthread_once(&z_once, z_bind);
  if (!Z.ok) return sm_status_new(SM_UNIMPLEMENTED, "DecodeCompressed: ZSTD needs libzstd.so.1, which could not be loaded");
  unsigned long long size = Z.content_size(in, n);
  if (size == 0ULL - 1 || size == 0ULL - 2) return sm_status_new(SM_INVALID_ARGUMENT, "Failed to determine decompressed size");
  if (size > DC_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Decompressed size exceeds 1GB limit");
  /* A zstd block yields at most 128 KiB and takes at least 3 bytes, so n input bytes hold at most
   * (n / 3 + 1) x 128 KiB: a frame declaring more lies, and is refused before its size is reserved. */
  if (size > ((unsigned long long)n / 3 + 1) * (128ULL << 10))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Failed to decompress zstd input: the frame declares %llu bytes, more than %zu input bytes can hold",
                         size, n);
  sm_status *s = NULL;
  uint8_t *buf = sm__kctx_scratch(ctx, size ? (size_t)size : 1, &s);
  if (!buf) return s;
  size_t got = Z.decompress(buf, (size_t)size, in, n);
  if (Z.is_error(got)) {
    sm__kctx_scratch_free(ctx, buf);
    return sm_status_new(SM_INVALID_ARGUMENT, "Failed to decompress zstd input: %s", Z.error_name(got));
  }
  *out = buf;
  *outn = got;
  return NULL;
}

static sm_status *dc_compute(const void *state, sm_kctx *ctx) {
  int kind = *(const int *)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  if (kind == CMP_NONE) {
    sm__kctx_forward(ctx, 0, 0);
    return NULL;
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(in), sm_tensor_dims(in), &out);
  for (int64_t i = 0; !s && i < sm_tensor_num_elements(in); i++) {
    size_t n, on = 0;
    const uint8_t *p = (const uint8_t *)sm_tensor_string(in, i, &n);
    uint8_t *o = NULL;
    s = kind == CMP_ZSTD ? zstd_one(ctx, p, n, &o, &on) : sm__inflate(ctx, kind == CMP_GZIP, p, n, DC_MAX, "DecodeCompressed", &o, &on);
    if (!s) s = sm_tensor_set_string(out, i, o, on);
    sm__kctx_scratch_free(ctx, o);
  }
  return s;
}

/* ---- SerializeTensor ------------------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} wbuf;

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

static void put_varint(wbuf *b, uint64_t v) {
  while (v >= 0x80) {
    b->p[b->n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  b->p[b->n++] = (uint8_t)v;
}

static void put_bytes(wbuf *b, const void *d, size_t n) {
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

/* TensorFlow's Tensor::AsProtoField (as_content 0) or AsProtoTensorContent (1) +
 * SerializeAsString: dtype, tensor_shape and tensor_content, in field order; string tensors as
 * string_val fields, or with as_content their EncodeStringList (every length as a varint, then
 * the bytes) in tensor_content. out NULL: only the size. */
size_t sm__tensor_proto_encode(const sm_tensor *t, int as_content, uint8_t *out) {
  int dt = sm_tensor_dtype(t), rank = sm_tensor_rank(t);
  const int64_t *dims = sm_tensor_dims(t);
  /* shape: TensorShapeProto{dim=2 {size=1}} */
  size_t shape_len = 0;
  for (int i = 0; i < rank; i++) {
    size_t dl = dims[i] ? 1 + varint_len((uint64_t)dims[i]) : 0;
    shape_len += 1 + varint_len(dl) + dl;
  }
  int64_t n = sm_tensor_num_elements(t);
  size_t body = 0;
  size_t nb = 0; /* tensor_content's bytes */
  if (dt == SM_STRING) {
    for (int64_t i = 0; i < n; i++) {
      size_t l;
      sm_tensor_string(t, i, &l);
      if (as_content) nb += varint_len(l) + l;
      else body += 1 + varint_len(l) + l;
    }
  } else {
    nb = (size_t)n * sm_dtype_size(dt);
  }
  if (nb) body = 1 + varint_len(nb) + nb;
  size_t total = 1 + varint_len((uint64_t)dt) + 1 + varint_len(shape_len) + shape_len + body;
  if (!out) return total;
  wbuf b = {out, 0, total};
  b.p[b.n++] = 0x08; /* dtype */
  put_varint(&b, (uint64_t)dt);
  b.p[b.n++] = 0x12; /* tensor_shape */
  put_varint(&b, shape_len);
  for (int i = 0; i < rank; i++) {
    size_t dl = dims[i] ? 1 + varint_len((uint64_t)dims[i]) : 0;
    b.p[b.n++] = 0x12;
    put_varint(&b, dl);
    if (dims[i]) {
      b.p[b.n++] = 0x08;
      put_varint(&b, (uint64_t)dims[i]);
    }
  }
  if (dt == SM_STRING && !as_content) {
    for (int64_t i = 0; i < n; i++) {
      size_t l;
      const char *sp = sm_tensor_string(t, i, &l);
      b.p[b.n++] = 0x42; /* string_val = 8 */
      put_varint(&b, l);
      put_bytes(&b, sp, l);
    }
  } else if (nb) {
    b.p[b.n++] = 0x22; /* tensor_content = 4 */
    put_varint(&b, nb);
    if (dt != SM_STRING) {
      put_bytes(&b, sm_tensor_data(t), nb);
    } else {
      size_t l;
      for (int64_t i = 0; i < n; i++) sm_tensor_string(t, i, &l), put_varint(&b, l);
      for (int64_t i = 0; i < n; i++) {
        const char *sp = sm_tensor_string(t, i, &l);
        put_bytes(&b, sp, l);
      }
    }
  }
  return b.n;
}

static sm_status *serialize_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(t);
  if (dt == SM_VARIANT || dt == SM_RESOURCE)
    return sm_status_new(SM_UNIMPLEMENTED, "SerializeTensor of %s tensors is not supported here", sm_dtype_name(dt));
  size_t total = sm__tensor_proto_encode(t, 0, NULL);
  sm_status *s = NULL;
  uint8_t *p = sm__kctx_scratch(ctx, total, &s);
  if (!p) return s;
  size_t n = sm__tensor_proto_encode(t, 0, p);
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &out);
  if (!s) s = sm_tensor_set_string(out, 0, p, n);
  sm__kctx_scratch_free(ctx, p);
  return s;
}

/* ---- ParseTensor ----------------------------------------------------------------------------- */

static sm_status *parse_prepare(const sm_node *node, void **state) {
  int *t = calloc(1, sizeof *t);
  if (!t) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_type(node, "out_type", t);
  if (s) {
    free(t);
    return s;
  }
  *state = t;
  return NULL;
}

/* TF's DataTypeString: the enum name, lower case, without DT_. */
static const char *type_str(int dt, char *buf, size_t cap) {
  const char *n = sm_dtype_name(dt);
  if (!n) return "unknown";
  if (!strncmp(n, "DT_", 3)) n += 3;
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] + 32 : n[i]);
  buf[i] = 0;
  return buf;
}

static sm_status *parse_compute(const void *state, sm_kctx *ctx) {
  int want = *(const int *)state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  char sb[64];
  if (sm_tensor_rank(in) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Expected `serialized` to be a scalar, got shape: %s",
                         sm_shape_str(sm_tensor_rank(in), sm_tensor_dims(in), sb, sizeof sb));
  size_t n;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(in, 0, &n);
  ProtobufCMessage *m = NULL;
  sm_status *s = sm__pb_decode(&tensorflow__tensor_proto__descriptor, p, n, "serialized", &m);
  if (s) {
    sm_status_free(s);
    /* TF's text: the bytes in base64 (the first 1536 here) */
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char enc[2052];
    size_t k = 0, lim = n < 1536 ? n : 1536;
    for (size_t i = 0; i < lim; i += 3) {
      uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < lim ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < lim ? p[i + 2] : 0);
      enc[k++] = b64[v >> 18 & 63];
      enc[k++] = b64[v >> 12 & 63];
      enc[k++] = i + 1 < lim ? b64[v >> 6 & 63] : '=';
      enc[k++] = i + 2 < lim ? b64[v & 63] : '=';
    }
    enc[k] = 0;
    return sm_status_new(SM_INVALID_ARGUMENT, "Could not parse `serialized` as TensorProto, base64: %s", enc);
  }
  sm_tensor *t = NULL;
  int64_t need = 0; /* what the tensor takes, measured first: a few bytes can describe gigabytes */
  s = sm__tensor_proto_check((const Tensorflow__TensorProto *)m, &need);
  if (!s) s = sm__kctx_charge_check(ctx, (size_t)need, "ParseTensor");
  if (s && sm_status_code(s) == SM_RESOURCE_EXHAUSTED) {
    sm__pb_arena_free(m);
    return s;
  }
  if (!s) s = sm__tensor_from_proto((const Tensorflow__TensorProto *)m, &t);
  sm__pb_arena_free(m);
  if (s) {
    sm_status *e = sm_status_new(SM_INVALID_ARGUMENT, "Cannot parse tensor from proto: %s", sm_status_message(s));
    sm_status_free(s);
    return e;
  }
  if (sm_tensor_dtype(t) != want) {
    char a[32], b2[32];
    s = sm_status_new(SM_INVALID_ARGUMENT, "Type mismatch between parsed tensor (%s) and dtype (%s)",
                      type_str(sm_tensor_dtype(t), a, sizeof a), type_str(want, b2, sizeof b2));
    sm_tensor_free(t);
    return s;
  }
  sm__kctx_set_output(ctx, 0, t);
  return NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_io_codec[] = {
    {"DecodeCompressed", dc_prepare, dc_compute, free, 0},
    {"SerializeTensor", NULL, serialize_compute, NULL, 0},
    {"ParseTensor", parse_prepare, parse_compute, free, 0},
    {0},
};
