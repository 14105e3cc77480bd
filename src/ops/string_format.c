/* string_format.c - the string_format kernel family: StringFormat, what tf.strings.format and
 * tf.print (StringFormat + PrintV2) put in a graph. The template is split at the placeholder
 * and each input written between the pieces as TF's Tensor::SummarizeValue(summarize, print_v2)
 * writes it: numpy-like nesting ("[[1 2]\n [3 4]]"), the first and last `summarize` entries of
 * each dimension around "..." (summarize -1: all), floats in the shortest of %.6g / %.9g that
 * reads back (%.15g / %.17g for double, as strings::StrCat), bools 1 / 0, strings quoted and
 * C-escaped. Checked against TensorFlow by tests/unit/test_ops_api.c (tools/gen_api_cases.py). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

typedef struct fmt_state {
  char **pieces; /* n_pieces NUL-terminated template pieces */
  size_t *plen;
  int n_pieces;
  int64_t summarize;
} fmt_state;

static void fmt_release(void *p) {
  fmt_state *s = p;
  if (!s) return;
  for (int i = 0; i < s->n_pieces; i++) free(s->pieces[i]);
  free(s->pieces);
  free(s->plen);
  free(s);
}

static sm_status *fmt_prepare(const sm_node *node, void **state) {
  fmt_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *tpl = "%s", *ph = "%s";
  size_t tl = 2, pl = 2;
  sm_status *st = NULL;
  s->summarize = 3;
  if (sm__node_attr(node, "template")) st = sm__node_attr_string(node, "template", &tpl, &tl);
  if (!st && sm__node_attr(node, "placeholder")) st = sm__node_attr_string(node, "placeholder", &ph, &pl);
  if (!st && sm__node_attr(node, "summarize")) st = sm__node_attr_int(node, "summarize", &s->summarize);
  if (!st && pl == 0) st = sm_status_new(SM_INVALID_ARGUMENT, "StringFormat: the placeholder is empty");
  /* split (absl::StrSplit): pieces between the placeholders */
  int cap = 1;
  for (size_t i = 0; !st && i + pl <= tl;)
    if (!memcmp(tpl + i, ph, pl)) cap++, i += pl;
    else i++;
  if (!st) {
    s->pieces = calloc((size_t)cap, sizeof *s->pieces);
    s->plen = calloc((size_t)cap, sizeof *s->plen);
    if (!s->pieces || !s->plen) st = sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  size_t start = 0;
  for (size_t i = 0; !st && i <= tl;) {
    if (i == tl || (i + pl <= tl && !memcmp(tpl + i, ph, pl))) {
      size_t n = i - start;
      char *p = malloc(n + 1);
      if (!p) {
        st = sm_status_new(SM_NO_MEMORY, "out of memory");
        break;
      }
      memcpy(p, tpl + start, n);
      p[n] = 0;
      s->plen[s->n_pieces] = n;
      s->pieces[s->n_pieces++] = p;
      if (i == tl) break;
      i += pl;
      start = i;
    } else {
      i++;
    }
  }
  int ninputs = sm__node_num_inputs(node);
  if (!st && s->n_pieces - 1 != ninputs)
    st = sm_status_new(SM_INVALID_ARGUMENT, "num placeholders in template and num inputs must match: %d vs. %d",
                       s->n_pieces - 1, ninputs);
  if (st) {
    fmt_release(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* ---- a growable output buffer in the compute's scratch ---- */
typedef struct obuf {
  sm_kctx *ctx;
  char *p;
  size_t n, cap;
  sm_status *st;
} obuf;

static void put(obuf *b, const char *s, size_t n) {
  if (b->st) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->cap ? b->cap * 2 : 256);
    while (cap < b->n + n + 1) cap *= 2;
    char *q = sm__kctx_scratch_realloc(b->ctx, b->p, cap, &b->st);
    if (!q) return;
    b->p = q, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void puts_(obuf *b, const char *s) { put(b, s, strlen(s)); }

/* strings::StrCat of a float / double: the shorter precision that reads back */
static void put_float(obuf *b, double v, int is_double) {
  char t[64];
  if (isnan(v)) {
    puts_(b, "nan");
    return;
  }
  if (isinf(v)) {
    puts_(b, v < 0 ? "-inf" : "inf");
    return;
  }
  if (is_double) {
    snprintf(t, sizeof t, "%.15g", v);
    if (strtod(t, NULL) != v) snprintf(t, sizeof t, "%.17g", v);
  } else {
    snprintf(t, sizeof t, "%.6g", v);
    if (strtof(t, NULL) != (float)v) snprintf(t, sizeof t, "%.9g", v);
  }
  puts_(b, t);
}

/* absl::Utf8SafeCEscape, in quotes */
static void put_str(obuf *b, const char *s, size_t n) {
  put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char t[8];
    switch (c) {
      case '\n': puts_(b, "\\n"); break;
      case '\r': puts_(b, "\\r"); break;
      case '\t': puts_(b, "\\t"); break;
      case '"': puts_(b, "\\\""); break;
      case '\'': puts_(b, "\\'"); break;
      case '\\': puts_(b, "\\\\"); break;
      default:
        if (c < 0x20 || c == 0x7f) {
          snprintf(t, sizeof t, "\\%03o", c);
          puts_(b, t);
        } else {
          put(b, (const char *)&s[i], 1); /* printable ASCII and UTF-8 bytes as they are */
        }
    }
  }
  put(b, "\"", 1);
}

static void put_elem(obuf *b, const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  char tmp[48];
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: put_float(b, ((const float *)d)[i], 0); return;
    case SM_DOUBLE: put_float(b, ((const double *)d)[i], 1); return;
    case SM_HALF: put_float(b, sm__half_to_f32(((const uint16_t *)d)[i]), 0); return;
    case SM_BFLOAT16: put_float(b, sm__bf16_to_f32(((const uint16_t *)d)[i]), 0); return;
    case SM_BOOL: puts_(b, ((const uint8_t *)d)[i] ? "1" : "0"); return;
    case SM_INT8: snprintf(tmp, sizeof tmp, "%d", ((const int8_t *)d)[i]); break;
    case SM_UINT8: snprintf(tmp, sizeof tmp, "%u", ((const uint8_t *)d)[i]); break;
    case SM_INT16: snprintf(tmp, sizeof tmp, "%d", ((const int16_t *)d)[i]); break;
    case SM_UINT16: snprintf(tmp, sizeof tmp, "%u", ((const uint16_t *)d)[i]); break;
    case SM_INT32: snprintf(tmp, sizeof tmp, "%" PRId32, ((const int32_t *)d)[i]); break;
    case SM_UINT32: snprintf(tmp, sizeof tmp, "%" PRIu32, ((const uint32_t *)d)[i]); break;
    case SM_INT64: snprintf(tmp, sizeof tmp, "%" PRId64, ((const int64_t *)d)[i]); break;
    case SM_UINT64: snprintf(tmp, sizeof tmp, "%" PRIu64, ((const uint64_t *)d)[i]); break;
    case SM_STRING: {
      size_t n;
      const char *s = sm_tensor_string(t, i, &n);
      put_str(b, s ? s : "", s ? n : 0);
      return;
    }
    default: snprintf(tmp, sizeof tmp, "?"); break;
  }
  puts_(b, tmp);
}

static void dim_spacing(obuf *b, int dim, int ndims) {
  if (dim == ndims - 1) {
    puts_(b, " ");
    return;
  }
  for (int j = 0; j < ndims - dim - 1; j++) puts_(b, "\n");
  for (int j = 0; j <= dim; j++) puts_(b, " ");
}

/* TF's PrintOneDimV2 */
static void one_dim(obuf *b, const sm_tensor *t, int dim, int64_t ends, int64_t at) {
  int nd = sm_tensor_rank(t);
  const int64_t *shape = sm_tensor_dims(t);
  if (dim == nd) {
    put_elem(b, t, at);
    return;
  }
  puts_(b, "[");
  int64_t cnt = shape[dim], start_of_end = ends > cnt - ends ? ends : cnt - ends, per = 1;
  for (int i = dim + 1; i < nd; i++) per *= shape[i];
  for (int64_t i = 0; i < ends && i < cnt; i++) {
    if (i > 0) dim_spacing(b, dim, nd);
    one_dim(b, t, dim + 1, ends, at + per * i);
  }
  if (cnt > 2 * ends) {
    dim_spacing(b, dim, nd);
    puts_(b, "...");
  }
  for (int64_t i = start_of_end; i < cnt; i++) {
    dim_spacing(b, dim, nd);
    one_dim(b, t, dim + 1, ends, at + per * i);
  }
  puts_(b, "]");
}

static void summarize(obuf *b, const sm_tensor *t, int64_t max) {
  int64_t n = sm_tensor_num_elements(t);
  if (max < 0) max = n;
  int64_t limit = max < n ? max : n;
  if (sm_tensor_rank(t) == 0) {
    for (int64_t i = 0; i < limit; i++) {
      if (i) puts_(b, " ");
      put_elem(b, t, i);
    }
    if (n > limit) puts_(b, "...");
    return;
  }
  one_dim(b, t, 0, limit, 0);
}

static sm_status *fmt_compute(const void *state, sm_kctx *ctx) {
  const fmt_state *s = state;
  obuf b = {ctx, NULL, 0, 0, NULL};
  put(&b, s->pieces[0], s->plen[0]);
  for (int i = 0; i + 1 < s->n_pieces; i++) {
    const sm_tensor *t = sm__kctx_input(ctx, i);
    int dt = sm_tensor_dtype(t);
    if (dt == SM_RESOURCE || dt == SM_VARIANT || dt == SM_COMPLEX64 || dt == SM_COMPLEX128)
      return sm__math_bad_dtype("StringFormat", dt);
    summarize(&b, t, s->summarize);
    put(&b, s->pieces[i + 1], s->plen[i + 1]);
  }
  if (b.st) return b.st;
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &z);
  if (!st) st = sm_tensor_set_string(z, 0, b.p ? b.p : "", b.n);
  return st;
}

const sm_kernel sm_kernels_string_format[] = {
    {"StringFormat", fmt_prepare, fmt_compute, fmt_release, 0},
    {0},
};
