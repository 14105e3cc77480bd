/* string_codec.c - the string_codec kernel family: byte-level string codecs of tf.io that
 * tools/sweep_ops.py found missing (session 17): EncodeBase64 / DecodeBase64 (tf.io.encode_base64,
 * decode_base64: the web-safe alphabet "-_", optional '=' padding, decoding with or without it)
 * and DecodeRaw / DecodePaddedRaw (tf.io.decode_raw: each string's bytes as elements of
 * out_type, little- or big-endian; the padded form cuts or zero-pads every string to
 * fixed_length bytes). TF's messages for bad input. Checked against TensorFlow by
 * tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

/* ---- EncodeBase64 / DecodeBase64 ------------------------------------------------------------ */
static sm_status *enc_prepare(const sm_node *node, void **state) {
  int pad = 0;
  sm_status *st = sm__node_attr(node, "pad") ? sm__node_attr_bool(node, "pad", &pad) : NULL;
  if (st) return st;
  *state = (void *)(intptr_t)(1 + pad);
  return NULL;
}

static sm_status *enc_compute(const void *state, sm_kctx *ctx) {
  int pad = (intptr_t)state == 2;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm__math_bad_dtype("EncodeBase64", sm_tensor_dtype(x));
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &z);
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; !st && i < n; i++) {
    size_t len;
    const unsigned char *s = (const unsigned char *)sm_tensor_string(x, i, &len);
    char *o = sm__kctx_scratch(ctx, len / 3 * 4 + 8, &st);
    if (!o) break;
    size_t k = 0, j = 0;
    for (; j + 3 <= len; j += 3) {
      uint32_t v = (uint32_t)s[j] << 16 | (uint32_t)s[j + 1] << 8 | s[j + 2];
      o[k++] = b64[v >> 18], o[k++] = b64[v >> 12 & 63], o[k++] = b64[v >> 6 & 63], o[k++] = b64[v & 63];
    }
    if (len - j == 1) {
      uint32_t v = (uint32_t)s[j] << 16;
      o[k++] = b64[v >> 18], o[k++] = b64[v >> 12 & 63];
      if (pad) o[k++] = '=', o[k++] = '=';
    } else if (len - j == 2) {
      uint32_t v = (uint32_t)s[j] << 16 | (uint32_t)s[j + 1] << 8;
      o[k++] = b64[v >> 18], o[k++] = b64[v >> 12 & 63], o[k++] = b64[v >> 6 & 63];
      if (pad) o[k++] = '=';
    }
    st = sm_tensor_set_string(z, i, o, k);
    sm__kctx_scratch_free(ctx, o);
  }
  return st;
}

static sm_status *dec_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm__math_bad_dtype("DecodeBase64", sm_tensor_dtype(x));
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &z);
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; !st && i < n; i++) {
    size_t len;
    const unsigned char *s = (const unsigned char *)sm_tensor_string(x, i, &len);
    while (len > 0 && s[len - 1] == '=') len--; /* padding, only at the end */
    if (len % 4 == 1) return sm_status_new(SM_INVALID_ARGUMENT, "Base64 string length cannot be 1 modulo 4.");
    char *o = sm__kctx_scratch(ctx, len / 4 * 3 + 4, &st);
    if (!o) break;
    size_t k = 0;
    for (size_t j = 0; j < len; j += 4) {
      size_t m = len - j < 4 ? len - j : 4;
      uint32_t v = 0;
      for (size_t q = 0; q < 4; q++) {
        int c = q < m ? b64_val(s[j + q]) : 0;
        if (c < 0) {
          sm__kctx_scratch_free(ctx, o);
          return sm_status_new(SM_INVALID_ARGUMENT, "Invalid character found in base64.");
        }
        v = v << 6 | (uint32_t)c;
      }
      o[k++] = (char)(v >> 16);
      if (m > 2) o[k++] = (char)(v >> 8);
      if (m > 3) o[k++] = (char)v;
    }
    st = sm_tensor_set_string(z, i, o, k);
    sm__kctx_scratch_free(ctx, o);
  }
  return st;
}

/* ---- DecodeRaw / DecodePaddedRaw ------------------------------------------------------------ */
typedef struct raw_state {
  int out, little, padded;
} raw_state;

static sm_status *raw_prepare(const sm_node *node, void **state) {
  raw_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  s->padded = !strcmp(sm__node_op(node), "DecodePaddedRaw");
  s->little = 1;
  sm_status *st = sm__node_attr_type(node, "out_type", &s->out);
  if (!st && sm__node_attr(node, "little_endian")) st = sm__node_attr_bool(node, "little_endian", &s->little);
  if (!st && (s->out == SM_STRING || s->out == SM_RESOURCE || s->out == SM_VARIANT || sm_dtype_size(s->out) == 0))
    st = sm__math_bad_dtype(sm__node_op(node), s->out);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* swap each element of dst (bytes in file order) into host (little-endian) order */
static void to_host(char *dst, size_t bytes, size_t es, int little, int cx) {
  if (little || es == 1) return;
  size_t unit = cx ? es / 2 : es; /* a complex number is two reals, each swapped */
  for (size_t o = 0; o + unit <= bytes; o += unit)
    for (size_t a = 0, b = unit - 1; a < b; a++, b--) {
      char t = dst[o + a];
      dst[o + a] = dst[o + b], dst[o + b] = t;
    }
}

static sm_status *raw_compute(const void *state, sm_kctx *ctx) {
  const raw_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm__math_bad_dtype(s->padded ? "DecodePaddedRaw" : "DecodeRaw", sm_tensor_dtype(x));
  size_t es = sm_dtype_size(s->out);
  int cx = s->out == SM_COMPLEX64 || s->out == SM_COMPLEX128;
  int64_t n = sm_tensor_num_elements(x), width;
  if (s->padded) {
    const sm_tensor *fl = sm__kctx_input(ctx, 1);
    if (sm_tensor_num_elements(fl) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "fixed_length must be a scalar");
    int64_t f = *(const int32_t *)sm_tensor_data(fl);
    if (f < 0 || f % (int64_t)es)
      return sm_status_new(SM_INVALID_ARGUMENT, "fixed_length (%lld) must be a multiple of the size of out_type (%zu)",
                           (long long)f, es);
    width = f;
  } else {
    size_t l0 = 0;
    if (n) sm_tensor_string(x, 0, &l0);
    for (int64_t i = 0; i < n; i++) {
      size_t l;
      sm_tensor_string(x, i, &l);
      if (l != l0)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "DecodeRaw requires input strings to all be the same size, but element %lld has size %zu != %zu",
                             (long long)i, l0, l); /* (TF's order: the first string's size first) */
    }
    if (l0 % es)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input to DecodeRaw has length %zu that is not a multiple of %zu, the size of %s",
                           l0, es, sm_dtype_name(s->out));
    width = (int64_t)l0;
  }
  int r = sm_tensor_rank(x);
  int64_t od[SM_MAX_RANK];
  if (r + 1 > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "DecodeRaw: input rank too large");
  memcpy(od, sm_tensor_dims(x), (size_t)r * sizeof *od);
  od[r] = width / (int64_t)es;
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, s->out, r + 1, od, &z);
  if (st) return st;
  for (int64_t i = 0; i < n; i++) {
    size_t l;
    const char *p = sm_tensor_string(x, i, &l);
    size_t take = l < (size_t)width ? l : (size_t)width; /* bytes; the rest stays 0 */
    char *o = (char *)sm_tensor_data(z) + (size_t)(i * width);
    if (take) memcpy(o, p, take);
    to_host(o, (size_t)width, es, s->little, cx);
  }
  return NULL;
}

const sm_kernel sm_kernels_string_codec[] = {
    {"EncodeBase64", enc_prepare, enc_compute, NULL, 0},
    {"DecodeBase64", NULL, dec_compute, NULL, 0},
    {"DecodeRaw", raw_prepare, raw_compute, free, 0},
    {"DecodePaddedRaw", raw_prepare, raw_compute, free, 0},
    {0},
};
