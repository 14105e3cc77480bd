/* summary.c - the TF1 summary kernel family: ScalarSummary, HistogramSummary, TensorSummary,
 * TensorSummaryV2 and MergeSummary, which return serialized tensorflow.Summary protos, written
 * byte for byte as TensorFlow's C++ protobuf writes them (core/kernels/summary_op.cc,
 * summary_tensor_op.cc, core/lib/histogram/histogram.cc): fields in number order, proto3 scalars
 * left out when zero, packed repeated doubles.
 *
 * TensorSummary writes the node's name and the tensor (TF ignores its description, labels and
 * display_name). HistogramSummary uses TF's default buckets (+-1e-12 growing by 10% to +-1e20, DBL_MAX ends and
 * 0) and its EncodeToProto with runs of empty buckets collapsed. MergeSummary walks its inputs'
 * wire format (a Summary holds only `value` entries), refuses what does not parse and duplicate
 * non-empty tags as TF does, and concatenates the values' bytes: the bytes TF writes for inputs
 * that TF (or this file) serialized. TensorSummaryV2 copies serialized_summary_metadata as it
 * comes (TF parses and re-serializes it: the same bytes for the canonical metadata TF's Python
 * writes).
 *
 * ImageSummary (uint8 images as they are; half, float and double scaled to uint8 by TF's
 * NormalizeFloatImage, non-finite pixels bad_color) and AudioSummary / AudioSummaryV2 (TF's
 * 16-bit WAV) write one value per image or clip, at most max_images / max_outputs, tagged
 * "tag/image/i" ("tag/image" when the attr is 1), with the PNG EncodePng writes and the WAV
 * EncodeWav writes (codec_int.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_internal.h"
#include "codec_int.h"
#include "format/pb_util.h"
#include "math_int.h"
#include "runtime/kernel.h"

/* ---- a growing buffer of protobuf wire bytes (in the compute's scratch) ------------------- */

typedef struct {
  sm_kctx *ctx;
  uint8_t *p;
  size_t n, cap;
  sm_status *err;
} pbw;

static int pbw_room(pbw *w, size_t more) {
  if (w->err) return 0;
  if (w->n + more <= w->cap) return 1;
  size_t cap = w->cap ? w->cap : 64;
  while (cap < w->n + more) {
    if (cap > SIZE_MAX / 2) {
      w->err = sm_status_new(SM_RESOURCE_EXHAUSTED, "summary too large");
      return 0;
    }
    cap *= 2;
  }
  uint8_t *p = sm__kctx_scratch_realloc(w->ctx, w->p, cap, &w->err);
  if (!p) return 0;
  w->p = p;
  w->cap = cap;
  return 1;
}

static void pbw_bytes(pbw *w, const void *d, size_t n) {
  if (!pbw_room(w, n)) return;
  if (n) memcpy(w->p + w->n, d, n);
  w->n += n;
}

/* v as a varint in b; its length. */
static size_t varint_enc(uint8_t b[10], uint64_t v) {
  size_t k = 0;
  while (v >= 0x80) b[k++] = (uint8_t)(v | 0x80), v >>= 7;
  b[k++] = (uint8_t)v;
  return k;
}

static void pbw_varint(pbw *w, uint64_t v) {
  uint8_t b[10];
  pbw_bytes(w, b, varint_enc(b, v));
}

static void pbw_tag(pbw *w, int field, int wire) { pbw_varint(w, (uint64_t)field << 3 | (uint64_t)wire); }

static void pbw_len_bytes(pbw *w, int field, const void *d, size_t n) {
  pbw_tag(w, field, 2);
  pbw_varint(w, n);
  pbw_bytes(w, d, n);
}

static void pbw_fixed64(pbw *w, uint64_t u) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(u >> (8 * i));
  pbw_bytes(w, b, 8);
}

static void pbw_double(pbw *w, int field, double d, int always) {
  uint64_t u;
  memcpy(&u, &d, 8);
  if (!u && !always) return; /* proto3: a zero (but not -0.0) is left out */
  pbw_tag(w, field, 1);
  pbw_fixed64(w, u);
}

/* Starts a length-delimited field whose length is known only after its body: reserves 5 bytes
 * for the length; pbw_end moves the body to fit the varint. Returns the body's offset. */
static size_t pbw_begin(pbw *w, int field) {
  pbw_tag(w, field, 2);
  pbw_bytes(w, "\0\0\0\0\0", 5);
  return w->n;
}

static void pbw_end(pbw *w, size_t body) {
  if (w->err) return;
  size_t len = w->n - body;
  uint8_t b[10];
  size_t k = varint_enc(b, len);
  memmove(w->p + body - 5 + k, w->p + body, len);
  memcpy(w->p + body - 5, b, k);
  w->n = body - 5 + k + len;
}

/* Sets output 0 to the scalar string of w's bytes (or returns w's error). */
static sm_status *pbw_output(pbw *w) {
  sm_status *s = w->err;
  sm_tensor *out;
  if (!s) s = sm__kctx_alloc_output(w->ctx, 0, SM_STRING, 0, NULL, &out);
  if (!s) s = sm_tensor_set_string(out, 0, w->p ? (const char *)w->p : "", w->n);
  sm__kctx_scratch_free(w->ctx, w->p);
  return s;
}

/* pbw_output, or (s set) w's bytes dropped and s returned. */
static sm_status *pbw_finish(pbw *w, sm_status *s) {
  if (!s) return pbw_output(w);
  sm__kctx_scratch_free(w->ctx, w->p);
  return s;
}

/* Field 1 (a Value's tag): "<tag>/<kind>/<i>", or "<tag>/<kind>" when the op makes at most one. */
static void pbw_media_tag(pbw *w, const char *tag, size_t tl, const char *kind, int64_t i, int many) {
  char suffix[48];
  int sl = many ? snprintf(suffix, sizeof suffix, "/%s/%lld", kind, (long long)i) : snprintf(suffix, sizeof suffix, "/%s", kind);
  pbw_tag(w, 1, 2);
  pbw_varint(w, tl + (size_t)sl);
  pbw_bytes(w, tag, tl);
  pbw_bytes(w, suffix, (size_t)sl);
}

/* A TensorProto as TF's Tensor::AsProtoTensorContent writes it (AsProtoField for strings): dtype,
 * tensor_shape, tensor_content (or string_val). */
static void pbw_tensor_proto(pbw *w, int field, const sm_tensor *t) {
  size_t tp = pbw_begin(w, field);
  int dt = sm_tensor_dtype(t), rank = sm_tensor_rank(t);
  pbw_tag(w, 1, 0);
  pbw_varint(w, (uint64_t)dt);
  size_t sh = pbw_begin(w, 2);
  for (int i = 0; i < rank; i++) {
    size_t dim = pbw_begin(w, 2);
    if (sm_tensor_dims(t)[i]) {
      pbw_tag(w, 1, 0);
      pbw_varint(w, (uint64_t)sm_tensor_dims(t)[i]);
    }
    pbw_end(w, dim);
  }
  pbw_end(w, sh);
  int64_t n = sm_tensor_num_elements(t);
  if (dt == SM_STRING) {
    for (int64_t i = 0; i < n; i++) {
      size_t l;
      const char *s = sm_tensor_string(t, i, &l);
      pbw_len_bytes(w, 8, s, l);
    }
  } else if (n) {
    pbw_len_bytes(w, 4, sm_tensor_data(t), sm_tensor_nbytes(t));
  }
  pbw_end(w, tp);
}

static int summary_real_dtype(int dt) {
  switch (dt) {
    case SM_FLOAT: case SM_DOUBLE: case SM_HALF: case SM_BFLOAT16: case SM_INT8: case SM_UINT8: case SM_INT16:
    case SM_UINT16: case SM_INT32: case SM_UINT32: case SM_INT64: case SM_UINT64:
      return 1;
    default:
      return 0;
  }
}

static const char *shape_of(const sm_tensor *t, char *buf, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap);
}

/* ---- ScalarSummary -------------------------------------------------------------------------- */

static sm_status *scalar_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *tags = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(tags) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "ScalarSummary: tags must be strings");
  if (!summary_real_dtype(sm_tensor_dtype(vals)))
    return sm_status_new(SM_INVALID_ARGUMENT, "ScalarSummary does not support %s values", sm_dtype_name(sm_tensor_dtype(vals)));
  int same = sm_tensor_rank(tags) == sm_tensor_rank(vals) &&
             !memcmp(sm_tensor_dims(tags), sm_tensor_dims(vals), sizeof(int64_t) * (size_t)sm_tensor_rank(tags));
  if (!same) {
    char a[128], b[128], tag[160] = "";
    if (sm_tensor_rank(tags) == 0) {
      size_t l;
      const char *s = sm_tensor_string(tags, 0, &l);
      snprintf(tag, sizeof tag, " (tag '%.*s')", (int)(l > 100 ? 100 : l), s);
    }
    return sm_status_new(SM_INVALID_ARGUMENT, "tags and values are not the same shape: %s != %s%s", shape_of(tags, a, sizeof a),
                         shape_of(vals, b, sizeof b), tag);
  }
  pbw w = {.ctx = ctx};
  int64_t n = sm_tensor_num_elements(tags);
  for (int64_t i = 0; i < n && !w.err; i++) {
    size_t l;
    const char *s = sm_tensor_string(tags, i, &l);
    size_t v = pbw_begin(&w, 1);
    if (l) pbw_len_bytes(&w, 1, s, l);
    float f = (float)sm__math_get_f64(vals, i);
    if (sm_tensor_dtype(vals) == SM_INT64) f = (float)((const int64_t *)sm_tensor_data(vals))[i];
    if (sm_tensor_dtype(vals) == SM_UINT64) f = (float)((const uint64_t *)sm_tensor_data(vals))[i];
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t b[5] = {0x15, (uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    pbw_bytes(&w, b, 5); /* simple_value = 2 (a oneof member: written even when 0) */
    pbw_end(&w, v);
  }
  return pbw_output(&w);
}

/* ---- HistogramSummary ----------------------------------------------------------------------- */

typedef struct {
  int n;
  double *limits;
} histo_state;

static void histo_release(void *p) {
  histo_state *h = p;
  if (h) free(h->limits);
  free(h);
}

/* TF's default bucket limits: -DBL_MAX, -1e20.., ..-1e-12, 0, 1e-12.., ..1e20, DBL_MAX. */
static sm_status *histo_prepare(const sm_node *node, void **state) {
  (void)node;
  int k = 0;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) k++;
  histo_state *h = calloc(1, sizeof *h);
  double *pos = malloc(sizeof(double) * (size_t)(k + 1));
  if (h) h->limits = malloc(sizeof(double) * (size_t)(2 * k + 3));
  if (!h || !pos || !h->limits) {
    free(pos);
    histo_release(h);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  int i = 0;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos[i++] = v;
  pos[i] = DBL_MAX;
  h->n = 2 * k + 3;
  for (int j = 0; j <= k; j++) h->limits[j] = -pos[k - j];
  h->limits[k + 1] = 0.0;
  for (int j = 0; j <= k; j++) h->limits[k + 2 + j] = pos[j];
  free(pos);
  *state = h;
  return NULL;
}

static sm_status *histo_compute(const void *state, sm_kctx *ctx) {
  const histo_state *h = state;
  const sm_tensor *tag = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1);
  if (sm_tensor_rank(tag) != 0 || sm_tensor_dtype(tag) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "tags must be scalar");
  int dt = sm_tensor_dtype(vals);
  if (!summary_real_dtype(dt)) return sm_status_new(SM_INVALID_ARGUMENT, "HistogramSummary does not support %s values", sm_dtype_name(dt));
  sm_status *s = NULL;
  double *buckets = sm__kctx_scratch(ctx, sizeof(double) * (size_t)h->n, &s);
  if (!buckets) return s;
  memset(buckets, 0, sizeof(double) * (size_t)h->n);
  double mn = DBL_MAX, mx = -DBL_MAX, num = 0, sum = 0, sq = 0;
  int64_t n = sm_tensor_num_elements(vals);
  for (int64_t i = 0; i < n; i++) {
    double v = sm__math_get_f64(vals, i);
    if (isnan(v)) return sm_status_new(SM_INVALID_ARGUMENT, "Nan in summary histogram for: %s", sm__node_name(sm__kctx_node(ctx)));
    if (isinf(v)) return sm_status_new(SM_INVALID_ARGUMENT, "Infinity in Histogram for: %s", sm__node_name(sm__kctx_node(ctx)));
    int lo = 0, hi = h->n; /* upper_bound: the first limit > v */
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      if (h->limits[mid] > v) hi = mid;
      else lo = mid + 1;
    }
    buckets[lo < h->n ? lo : h->n - 1] += 1.0;
    if (mn > v) mn = v;
    if (mx < v) mx = v;
    num += 1;
    sum += v;
    sq += v * v;
  }
  pbw w = {.ctx = ctx};
  size_t val = pbw_begin(&w, 1);
  size_t l;
  const char *ts = sm_tensor_string(tag, 0, &l);
  if (l) pbw_len_bytes(&w, 1, ts, l);
  size_t hp = pbw_begin(&w, 5);
  pbw_double(&w, 1, mn, 0);
  pbw_double(&w, 2, mx, 0);
  pbw_double(&w, 3, num, 0);
  pbw_double(&w, 4, sum, 0);
  pbw_double(&w, 5, sq, 0);
  /* EncodeToProto(preserve_zero_buckets = false): a run of empty buckets is one entry, its limit the run's last. */
  double *lim = sm__kctx_scratch(ctx, sizeof(double) * 2 * (size_t)h->n, &s);
  if (!lim) {
    sm__kctx_scratch_free(ctx, w.p);
    return s;
  }
  double *cnt = lim + h->n;
  int m = 0;
  for (int i = 0; i < h->n;) {
    double end = h->limits[i], c = buckets[i];
    i++;
    if (c <= 0.0)
      while (i < h->n && buckets[i] <= 0.0) end = h->limits[i], c = buckets[i], i++;
    lim[m] = end;
    cnt[m++] = c;
  }
  for (int f = 6; f <= 7; f++) {
    const double *a = f == 6 ? lim : cnt;
    pbw_tag(&w, f, 2);
    pbw_varint(&w, (uint64_t)m * 8);
    for (int i = 0; i < m; i++) {
      uint64_t u;
      memcpy(&u, &a[i], 8);
      pbw_fixed64(&w, u);
    }
  }
  pbw_end(&w, hp);
  pbw_end(&w, val);
  return pbw_output(&w);
}

/* ---- TensorSummary / TensorSummaryV2 -------------------------------------------------------- */

static sm_status *tensor_v2_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *tag = sm__kctx_input(ctx, 0), *t = sm__kctx_input(ctx, 1), *md = sm__kctx_input(ctx, 2);
  if (sm_tensor_dtype(tag) != SM_STRING || sm_tensor_num_elements(tag) < 1 || sm_tensor_dtype(md) != SM_STRING ||
      sm_tensor_num_elements(md) < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "TensorSummaryV2: tag and serialized_summary_metadata must be string scalars");
  int dt = sm_tensor_dtype(t);
  if (dt == SM_VARIANT || dt == SM_RESOURCE)
    return sm_status_new(SM_UNIMPLEMENTED, "TensorSummaryV2 of %s tensors is not supported here", sm_dtype_name(dt));
  pbw w = {.ctx = ctx};
  size_t val = pbw_begin(&w, 1), l, ml;
  const char *ts = sm_tensor_string(tag, 0, &l);
  if (l) pbw_len_bytes(&w, 1, ts, l);
  pbw_tensor_proto(&w, 8, t);
  const char *m = sm_tensor_string(md, 0, &ml);
  pbw_len_bytes(&w, 9, m, ml);
  pbw_end(&w, val);
  return pbw_output(&w);
}

/* TensorSummary: node_name = this node's name and the tensor; TF writes nothing of its
 * description, labels and display_name attrs. */
static sm_status *tensor_v1_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(t);
  if (dt == SM_VARIANT || dt == SM_RESOURCE)
    return sm_status_new(SM_UNIMPLEMENTED, "TensorSummary of %s tensors is not supported here", sm_dtype_name(dt));
  const char *name = sm__node_name(sm__kctx_node(ctx));
  pbw w = {.ctx = ctx};
  size_t val = pbw_begin(&w, 1);
  if (*name) pbw_len_bytes(&w, 7, name, strlen(name));
  pbw_tensor_proto(&w, 8, t);
  pbw_end(&w, val);
  return pbw_output(&w);
}

/* ---- MergeSummary --------------------------------------------------------------------------- */

static int rd_varint(const uint8_t *p, size_t n, size_t *off, uint64_t *v) {
  uint64_t r = 0;
  for (int sh = 0; sh < 70; sh += 7) {
    if (*off >= n) return 0;
    uint8_t b = p[(*off)++];
    if (sh == 63 && b > 1) return 0;
    r |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) {
      *v = r;
      return 1;
    }
  }
  return 0;
}

/* Skips one field's payload of wire type `wire` at *off; 0 when malformed. */
static int skip_field(const uint8_t *p, size_t n, size_t *off, int wire) {
  uint64_t v;
  switch (wire) {
    case 0: return rd_varint(p, n, off, &v);
    case 1: if (n - *off < 8) return 0; *off += 8; return 1;
    case 5: if (n - *off < 4) return 0; *off += 4; return 1;
    case 2:
      if (!rd_varint(p, n, off, &v) || v > n - *off) return 0;
      *off += (size_t)v;
      return 1;
    default: return 0;
  }
}

/* A Summary.Value's tag (field 1), "" when absent (the last one wins); 0 when malformed. */
static int value_tag(const uint8_t *p, size_t n, const uint8_t **tag, size_t *tl) {
  size_t off = 0;
  *tag = (const uint8_t *)"";
  *tl = 0;
  while (off < n) {
    uint64_t key;
    if (!rd_varint(p, n, &off, &key) || (key >> 3) == 0) return 0;
    int wire = (int)(key & 7);
    if ((key >> 3) == 1) {
      uint64_t l;
      if (wire != 2 || !rd_varint(p, n, &off, &l) || l > n - off) return 0;
      *tag = p + off;
      *tl = (size_t)l;
      if (!sm__utf8_valid(*tag, *tl)) return 0; /* proto3 string */
      off += (size_t)l;
    } else if (!skip_field(p, n, &off, wire)) {
      return 0;
    }
  }
  return 1;
}

typedef struct {
  const uint8_t *p;
  size_t n, idx; /* idx: the order the tag came in */
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  size_t m = x->n < y->n ? x->n : y->n;
  int c = m ? memcmp(x->p, y->p, m) : 0;
  if (c) return c;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* TF's error for the first tag (in input order) seen before: sorted by (tag, order), the repeat
 * with the smallest order among equal neighbours. NULL when all differ. */
static sm_status *first_duplicate(span *tags, size_t n) {
  if (n < 2) return NULL;
  qsort(tags, n, sizeof *tags, span_cmp);
  const span *best = NULL;
  for (size_t j = 1; j < n; j++)
    if (tags[j].n == tags[j - 1].n && !memcmp(tags[j].p, tags[j - 1].p, tags[j].n) && (!best || tags[j].idx < best->idx))
      best = &tags[j];
  if (!best) return NULL;
  return sm_status_new(SM_INVALID_ARGUMENT, "Duplicate tag %.*s found in summary inputs ", (int)best->n, (const char *)best->p);
}

static sm_status *merge_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int nin = sm__kctx_num_inputs(ctx);
  pbw w = {.ctx = ctx};
  size_t ntags = 0, cap = 0;
  span *tags = NULL;
  sm_status *s = NULL;
  for (int k = 0; k < nin && !s; k++) {
    const sm_tensor *in = sm__kctx_input(ctx, k);
    if (sm_tensor_dtype(in) != SM_STRING) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "MergeSummary: input %d is not a string tensor", k);
      break;
    }
    int64_t ne = sm_tensor_num_elements(in);
    for (int64_t i = 0; i < ne && !s; i++) {
      size_t n, off = 0, before = ntags;
      const uint8_t *p = (const uint8_t *)sm_tensor_string(in, i, &n);
      while (off < n && !s) {
        uint64_t key, l;
        size_t start = off;
        if (!rd_varint(p, n, &off, &key) || (key >> 3) == 0 || (key & 7) > 5 || (key & 7) == 3 || (key & 7) == 4) goto bad;
        if ((key >> 3) != 1) { /* not a value: an unknown field TF would keep at the end; dropped here */
          if (!skip_field(p, n, &off, (int)(key & 7))) goto bad;
          continue;
        }
        if ((key & 7) != 2 || !rd_varint(p, n, &off, &l) || l > n - off) goto bad;
        const uint8_t *tag;
        size_t tl;
        if (!value_tag(p + off, (size_t)l, &tag, &tl)) goto bad;
        off += (size_t)l;
        if (tl) {
          if (ntags == cap) {
            cap = cap ? cap * 2 : 16;
            span *nt = sm__kctx_scratch_realloc(ctx, tags, cap * sizeof *tags, &s);
            if (!nt) break;
            tags = nt;
          }
          tags[ntags] = (span){tag, tl, ntags};
          ntags++;
        }
        pbw_bytes(&w, p + start, off - start);
      }
      continue;
    bad: /* TF parses input by input: a repeat among the earlier ones is found first */
      s = first_duplicate(tags, before);
      if (!s) s = sm_status_new(SM_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
    }
  }
  if (!s) s = first_duplicate(tags, ntags);
  sm__kctx_scratch_free(ctx, tags);
  return pbw_finish(&w, s);
}

/* ---- ImageSummary --------------------------------------------------------------------------- */

typedef struct {
  int64_t max_images;
  uint8_t bad[64];
  int64_t nbad;
} image_state;

static sm_status *image_prepare(const sm_node *node, void **state) {
  image_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->max_images = 3;
  static const uint8_t red[4] = {255, 0, 0, 255};
  memcpy(st->bad, red, 4);
  st->nbad = 4;
  sm_status *s = sm__node_attr(node, "max_images") ? sm__node_attr_int(node, "max_images", &st->max_images) : NULL;
  if (!s && st->max_images < 1) s = sm_status_new(SM_INVALID_ARGUMENT, "ImageSummary: max_images must be at least 1, got %lld", (long long)st->max_images);
  sm_tensor *bc = NULL;
  if (!s && sm__node_attr(node, "bad_color")) s = sm__node_attr_tensor(node, "bad_color", &bc);
  if (!s && bc) {
    char b[128];
    if (sm_tensor_dtype(bc) != SM_UINT8) s = sm_status_new(SM_INVALID_ARGUMENT, "bad_color must be uint8, got %s", sm__array_dtype_str(sm_tensor_dtype(bc)));
    else if (sm_tensor_rank(bc) != 1) s = sm_status_new(SM_INVALID_ARGUMENT, "bad_color must be a vector, got shape %s", shape_of(bc, b, sizeof b));
    else {
      int64_t n = sm_tensor_num_elements(bc);
      st->nbad = n < 64 ? n : 64; /* only the first `depth` (<= 4) entries are used */
      memcpy(st->bad, sm_tensor_data(bc), (size_t)st->nbad);
      if (n > st->nbad) st->nbad = n;
    }
  }
  sm_tensor_free(bc);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* TF's NormalizeFloatImage: min and max over the pixels whose channels are all finite (in float);
 * negative values: scale 127 / max|v|, offset 128; else 255 / max, offset 0 (0 below 1e-6); each
 * finite pixel v * scale + offset in T's arithmetic, truncated to uint8; the others bad_color. */
static void normalize_image(const sm_tensor *t, int64_t base, int64_t hw, int64_t depth, const uint8_t *bad, uint8_t *out) {
  int dt = sm_tensor_dtype(t);
  const void *d = sm_tensor_data(t);
#define PIX(k) (dt == SM_FLOAT ? (double)((const float *)d)[k] : dt == SM_DOUBLE ? ((const double *)d)[k] : (double)sm__half_to_f32(((const uint16_t *)d)[k]))
  float mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < hw; i++) {
    int fin = 1;
    for (int64_t j = 0; j < depth && fin; j++) fin = isfinite(PIX(base + i * depth + j));
    for (int64_t j = 0; j < depth && fin; j++) {
      float v = (float)PIX(base + i * depth + j);
      mn = v < mn ? v : mn; /* std::min, std::max */
      mx = mx < v ? v : mx;
    }
  }
  float sc, off;
  if (mn < 0) {
    float m = fabsf(mn) > fabsf(mx) ? fabsf(mn) : fabsf(mx);
    sc = m < 1e-6f ? 0.0f : 127.0f / m;
    off = 128.0f;
  } else {
    sc = mx < 1e-6f ? 0.0f : 255.0f / mx;
    off = 0.0f;
  }
  uint16_t hsc = sm__f32_to_half(sc), hoff = sm__f32_to_half(off);
  for (int64_t i = 0; i < hw; i++) {
    int fin = 1;
    for (int64_t j = 0; j < depth && fin; j++) fin = isfinite(PIX(base + i * depth + j));
    for (int64_t j = 0; j < depth; j++) {
      int64_t k = base + i * depth + j;
      double r;
      if (!fin) {
        out[i * depth + j] = bad[j];
        continue;
      }
      if (dt == SM_FLOAT) {
        float p = ((const float *)d)[k] * sc;
        r = p + off;
      } else if (dt == SM_DOUBLE) {
        r = ((const double *)d)[k] * (double)sc + (double)off;
      } else {
        uint16_t p = sm__f32_to_half(sm__half_to_f32(((const uint16_t *)d)[k]) * sm__half_to_f32(hsc));
        r = sm__half_to_f32(sm__f32_to_half(sm__half_to_f32(p) + sm__half_to_f32(hoff)));
      }
      out[i * depth + j] = (uint8_t)(r >= 255.0 ? 255 : r > 0 ? (int)r : 0);
    }
  }
#undef PIX
}

static sm_status *image_compute(const void *state, sm_kctx *ctx) {
  const image_state *st = state;
  const sm_tensor *tag = sm__kctx_input(ctx, 0), *t = sm__kctx_input(ctx, 1);
  char b[128];
  if (sm_tensor_rank(tag) != 0 || sm_tensor_dtype(tag) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "Tags must be a scalar");
  const int64_t *d = sm_tensor_dims(t);
  int dt = sm_tensor_dtype(t);
  if (sm_tensor_rank(t) != 4 || (d[3] != 1 && d[3] != 3 && d[3] != 4))
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensor must be 4-D with last dim 1, 3, or 4, not %s", shape_of(t, b, sizeof b));
  if (dt != SM_UINT8 && dt != SM_HALF && dt != SM_FLOAT && dt != SM_DOUBLE)
    return sm_status_new(SM_INVALID_ARGUMENT, "ImageSummary does not support %s images", sm_dtype_name(dt));
  if (d[0] >= (1LL << 31) || d[1] >= (1LL << 31) || d[2] >= (1LL << 31) || d[1] * d[2] >= (1LL << 29))
    return sm_status_new(SM_INVALID_ARGUMENT, "Tensor too large for summary %s", shape_of(t, b, sizeof b));
  int64_t n = d[0], h = d[1], w = d[2], hw = h * w, depth = d[3];
  if (hw <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "input tensor must have non-zero dims. Found: [%lld, %lld, %lld, %lld].", (long long)n,
                         (long long)h, (long long)w, (long long)depth);
  if (dt != SM_UINT8 && st->nbad < depth)
    return sm_status_new(SM_INVALID_ARGUMENT, "expected depth <= bad_color.size, got depth = %lld, bad_color.size = %lld", (long long)depth,
                         (long long)st->nbad);
  size_t tl;
  const char *ts = sm_tensor_string(tag, 0, &tl);
  sm_status *s = NULL;
  uint8_t *img = NULL;
  if (dt != SM_UINT8 && !(img = sm__kctx_scratch(ctx, (size_t)(hw * depth), &s))) return s;
  pbw w8 = {.ctx = ctx};
  int64_t m = n < st->max_images ? n : st->max_images;
  for (int64_t i = 0; i < m && !s && !w8.err; i++) {
    const uint8_t *px;
    if (dt == SM_UINT8) {
      px = (const uint8_t *)sm_tensor_data(t) + i * hw * depth;
    } else {
      normalize_image(t, i * hw * depth, hw, depth, st->bad, img);
      px = img;
    }
    char *png;
    size_t plen;
    if ((s = sm__png_encode(ctx, px, h, w, depth, 8, -1, i, &png, &plen))) break;
    size_t v = pbw_begin(&w8, 1);
    pbw_media_tag(&w8, ts, tl, "image", i, st->max_images > 1);
    size_t im = pbw_begin(&w8, 4);
    pbw_tag(&w8, 1, 0);
    pbw_varint(&w8, (uint64_t)h);
    pbw_tag(&w8, 2, 0);
    pbw_varint(&w8, (uint64_t)w);
    pbw_tag(&w8, 3, 0);
    pbw_varint(&w8, (uint64_t)depth);
    pbw_len_bytes(&w8, 4, png, plen);
    pbw_end(&w8, im);
    pbw_end(&w8, v);
    sm__kctx_scratch_free(ctx, png);
  }
  sm__kctx_scratch_free(ctx, img);
  return pbw_finish(&w8, s);
}

/* ---- AudioSummary / AudioSummaryV2 ---------------------------------------------------------- */

typedef struct {
  int64_t max_outputs;
  int v2;
  float rate; /* AudioSummary's attr */
} audio_state;

static sm_status *audio_prepare_v(const sm_node *node, void **state, int v2) {
  audio_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->max_outputs = 3;
  st->v2 = v2;
  sm_status *s = sm__node_attr(node, "max_outputs") ? sm__node_attr_int(node, "max_outputs", &st->max_outputs) : NULL;
  if (!s && !v2) s = sm__node_attr_float(node, "sample_rate", &st->rate);
  if (!s && st->max_outputs < 1) s = sm_status_new(SM_INVALID_ARGUMENT, "AudioSummary: max_outputs must be at least 1, got %lld", (long long)st->max_outputs);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}
static sm_status *audio_v2_prepare(const sm_node *n, void **st) { return audio_prepare_v(n, st, 1); }

static sm_status *audio_compute(const void *state, sm_kctx *ctx) {
  const audio_state *st = state;
  const sm_tensor *tag = sm__kctx_input(ctx, 0), *t = sm__kctx_input(ctx, 1);
  char b[128];
  if (sm_tensor_rank(tag) != 0 || sm_tensor_dtype(tag) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "Tag must be a scalar");
  float rate = st->rate;
  if (st->v2) {
    const sm_tensor *r = sm__kctx_input(ctx, 2);
    if (sm_tensor_dtype(r) != SM_FLOAT || sm_tensor_num_elements(r) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "sample_rate must be rank-0 or contain a single value");
    rate = *(const float *)sm_tensor_data(r);
  }
  if (!(rate > 0.0f)) return sm_status_new(SM_INVALID_ARGUMENT, "sample_rate must be > 0");
  int rank = sm_tensor_rank(t);
  if (rank != 2 && rank != 3) return sm_status_new(SM_INVALID_ARGUMENT, "Tensor must be 3-D or 2-D, got: %s", shape_of(t, b, sizeof b));
  if (sm_tensor_dtype(t) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "AudioSummary takes float audio, not %s", sm_dtype_name(sm_tensor_dtype(t)));
  const int64_t *d = sm_tensor_dims(t);
  int64_t n = (int32_t)d[0], frames = d[1], ch = rank == 2 ? 1 : d[2];
  /* TF: lrintf (a rate too large for a long is LONG_MIN), 0 -> 1, then size_t */
  uint64_t srate = rate >= 9.2233720e18f ? (uint64_t)1 << 63 : (uint64_t)lrintf(rate);
  if (!srate) srate = 1;
  size_t tl;
  const char *ts = sm_tensor_string(tag, 0, &tl);
  sm_status *s = NULL;
  pbw w = {.ctx = ctx};
  int64_t m = n < st->max_outputs ? n : st->max_outputs;
  for (int64_t i = 0; i < m && !s && !w.err; i++) {
    if (sm_tensor_num_elements(t) == 0 && frames > 0) s = sm_status_new(SM_INVALID_ARGUMENT, "audio is null");
    if (!s) s = sm__wav_check((uint64_t)frames, (uint64_t)ch, srate);
    if (s) break;
    size_t wl = (size_t)sm__wav_size((uint64_t)frames, (uint64_t)ch);
    uint8_t *wav = sm__kctx_scratch(ctx, wl, &s);
    if (!wav) break;
    const float *a = sm_tensor_num_elements(t) ? (const float *)sm_tensor_data(t) + i * frames * ch : NULL;
    sm__wav_write(wav, a, (uint64_t)frames, (uint64_t)ch, (uint32_t)srate);
    size_t v = pbw_begin(&w, 1);
    pbw_media_tag(&w, ts, tl, "audio", i, st->max_outputs > 1);
    size_t au = pbw_begin(&w, 6);
    uint32_t u;
    memcpy(&u, &rate, 4);
    uint8_t fb[5] = {0x0d, (uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    pbw_bytes(&w, fb, 5);
    if (ch) pbw_tag(&w, 2, 0), pbw_varint(&w, (uint64_t)ch);
    if (frames) pbw_tag(&w, 3, 0), pbw_varint(&w, (uint64_t)frames);
    pbw_len_bytes(&w, 4, wav, wl);
    pbw_len_bytes(&w, 5, "audio/wav", 9);
    pbw_end(&w, au);
    pbw_end(&w, v);
    sm__kctx_scratch_free(ctx, wav);
  }
  return pbw_finish(&w, s);
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_summary[] = {
    {"ScalarSummary", NULL, scalar_compute, NULL, 0},
    {"HistogramSummary", histo_prepare, histo_compute, histo_release, 0},
    {"TensorSummary", NULL, tensor_v1_compute, NULL, 0},
    {"TensorSummaryV2", NULL, tensor_v2_compute, NULL, 0},
    {"MergeSummary", NULL, merge_compute, NULL, 0},
    {"ImageSummary", image_prepare, image_compute, free, 0},
    {"AudioSummaryV2", audio_v2_prepare, audio_compute, free, 0},
    {0},
};
