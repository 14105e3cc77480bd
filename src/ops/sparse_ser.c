/* sparse_ser.c - SparseTensor serialization, as TensorFlow's kernels (serialize_sparse_op.cc,
 * deserialize_sparse_string_op.cc, deserialize_sparse_variant_op.cc): SerializeSparse,
 * SerializeManySparse, DeserializeSparse and DeserializeManySparse.
 *
 * The string form holds, per SparseTensor, the TensorProto bytes of its indices, values and shape
 * (io_codec.h's encoder: byte-identical with TF's AsProtoTensorContent + SerializeAsString). The
 * variant form holds the three tensors themselves, each in a "tensorflow::Tensor" variant (only
 * this file makes and reads them). SerializeSparse checks only the three inputs' ranks (as TF);
 * SerializeManySparse builds TF's SparseTensor (non-negative shape, matching counts, sorted
 * in-bounds indices) and writes one row per batch entry, an empty row for an entry without
 * values. Deserialize* read any [..., 3] batch: one SparseTensor as it is, several concatenated
 * along a new leading dimension per batch dimension, the inner shape the maximum of theirs, with
 * TF's messages for every malformed part (indices must be int64 here: TF aborts on others). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/variant.h"
#include "format/pb_arena.h"
#include "format/pb_decode.h"
#include "ops/array_internal.h"
#include "ops/io_codec.h"
#include "ops/sparse_internal.h"
#include "runtime/kernel.h"
#include "tensor.pb-c.h"

#define TENSOR_TYPE "tensorflow::Tensor"
#define BAD(...) sm_status_new(SM_INVALID_ARGUMENT, __VA_ARGS__)

/* ---- the Tensor variant ------------------------------------------------------------------ */

typedef struct {
  sm_variant v;
  sm_tensor *t;
} tensor_var;

static void tv_release(sm_variant *v) {
  sm_tensor_free(((tensor_var *)v)->t);
  free(v);
}

/* Stores t (the variant takes over the reference) as element i of the variant tensor out. */
sm_status *sm__tensor_variant_put(sm_tensor *out, int64_t i, sm_tensor *t) {
  tensor_var *tv = calloc(1, sizeof *tv);
  if (!tv) {
    sm_tensor_free(t);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  sm__variant_init(&tv->v, TENSOR_TYPE, tv_release);
  tv->t = t;
  sm_variant **e = sm__tensor_variants(out);
  sm__variant_unref(e[i]);
  e[i] = &tv->v;
  return NULL;
}

/* ---- Serialize ---------------------------------------------------------------------------- */

typedef struct {
  int out_type, T;
} ser_state;

static sm_status *ser_prepare(const sm_node *node, void **state) {
  ser_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->out_type = SM_STRING;
  sm_status *s = NULL;
  if (sm__node_attr(node, "out_type")) s = sm__node_attr_type(node, "out_type", &st->out_type);
  if (!s) s = sm__node_attr_type(node, "T", &st->T);
  if (!s && st->out_type != SM_STRING && st->out_type != SM_VARIANT)
    s = BAD("out_type must be string or variant, got %s", sm__array_dtype_str(st->out_type));
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* Element i of out (string or variant) = t: its TensorProto bytes, or t itself (the reference
 * passes to out either way). */
static sm_status *put_part(sm_kctx *ctx, sm_tensor *out, int64_t i, sm_tensor *t) {
  if (sm_tensor_dtype(out) == SM_VARIANT) return sm__tensor_variant_put(out, i, t);
  size_t n = sm__tensor_proto_encode(t, 1, NULL);
  sm_status *s = NULL;
  uint8_t *p = sm__kctx_scratch(ctx, n, &s);
  if (p) {
    sm__tensor_proto_encode(t, 1, p);
    s = sm_tensor_set_string(out, i, p, n);
    sm__kctx_scratch_free(ctx, p);
  }
  sm_tensor_free(t);
  return s;
}

static sm_status *check_parts(const sm_tensor *ix, const sm_tensor *vals, const sm_tensor *sh) {
  char b[128];
  if (sm_tensor_rank(ix) != 2)
    return BAD("Input indices should be a matrix but received shape %s", sm_shape_str(sm_tensor_rank(ix), sm_tensor_dims(ix), b, sizeof b));
  if (sm_tensor_rank(vals) != 1)
    return BAD("Input values should be a vector but received shape %s",
               sm_shape_str(sm_tensor_rank(vals), sm_tensor_dims(vals), b, sizeof b));
  if (sm_tensor_rank(sh) != 1)
    return BAD("Input shape should be a vector but received shape %s", sm_shape_str(sm_tensor_rank(sh), sm_tensor_dims(sh), b, sizeof b));
  return NULL;
}

static sm_status *ser_compute(const void *state, sm_kctx *ctx) {
  const ser_state *st = state;
  const sm_tensor *in[3] = {sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2)};
  sm_status *s = check_parts(in[0], in[1], in[2]);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, st->out_type, 1, (int64_t[]){3}, &out);
  for (int i = 0; i < 3 && !s; i++) s = put_part(ctx, out, i, sm_tensor_ref((sm_tensor *)in[i]));
  return s;
}

/* "[a,b,c]" of n int64s (TF's index text), cut at cap. */
static const char *ints_str(const int64_t *v, int64_t n, char *buf, size_t cap) {
  size_t k = 0;
  buf[k++] = '[';
  for (int64_t i = 0; i < n && k + 24 < cap; i++) k += (size_t)snprintf(buf + k, cap - k, i ? ",%" PRId64 : "%" PRId64, v[i]);
  snprintf(buf + k, cap - k, "]");
  return buf;
}

/* TF's SparseTensor::Create + IndicesValid for the standard order. */
static sm_status *sparse_valid(const sm_tensor *ix, const sm_tensor *vals, const int64_t *sh, int64_t R) {
  if (sm_tensor_dtype(ix) != SM_INT64) return BAD("indices must be int64, got %s", sm__array_dtype_str(sm_tensor_dtype(ix)));
  int64_t n = sm_tensor_dims(ix)[0];
  if (n != sm_tensor_dims(vals)[0])
    return BAD("indices and values rows (indexing dimension) must match. (indices = %" PRId64 ", values = %" PRId64 ")", n,
               sm_tensor_dims(vals)[0]);
  if (sm_tensor_dims(ix)[1] != R) return BAD("Order length must be SparseTensor rank.");
  const int64_t *x = sm_tensor_data(ix);
  for (int64_t i = 0; i < n; i++) {
    const int64_t *r = x + i * R, *p = r - R;
    int valid = 1, cmp = i == 0 ? 1 : 0;
    for (int64_t d = 0; d < R; d++) {
      if (r[d] < 0 || r[d] >= sh[d]) valid = 0;
      if (!cmp && r[d] != p[d]) cmp = r[d] > p[d] ? 1 : -1;
    }
    if (valid && cmp > 0) continue;
    char ib[512], sb[512];
    ints_str(r, R, ib, sizeof ib);
    if (!valid) return BAD("indices[%" PRId64 "] = %s is out of bounds: need 0 <= index < %s", i, ib, ints_str(sh, R, sb, sizeof sb));
    if (!cmp) return BAD("indices[%" PRId64 "] = %s is repeated", i, ib);
    return BAD("indices[%" PRId64 "] = %s is out of order. Many sparse ops require sorted indices.\n    Use "
               "`tf.sparse.reorder` to create a correctly ordered copy.\n\n",
               i, ib);
  }
  return NULL;
}

/* TF's TensorShape::BuildTensorShape checks: non-negative dims whose product fits int64. */
static sm_status *shape_valid(const int64_t *sh, int64_t R) {
  int64_t prod = 1;
  for (int64_t d = 0; d < R; d++) {
    if (sh[d] < 0) return BAD("Expected shape dimensions to be non-negative, got %" PRId64, sh[d]);
    if (sh[d] && prod > INT64_MAX / sh[d])
      return BAD("Encountered overflow when multiplying %" PRId64 " with %" PRId64 ", result: -1", prod, sh[d]);
    prod *= sh[d];
  }
  return NULL;
}

static sm_status *ser_many_compute(const void *state, sm_kctx *ctx) {
  const ser_state *st = state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *shp = sm__kctx_input(ctx, 2);
  sm_status *s = check_parts(ix, vals, shp);
  if (s) return s;
  int64_t R = sm_tensor_num_elements(shp);
  if (R <= 1) return BAD("Rank of input SparseTensor should be > 1, but saw rank: %" PRId64, R);
  if (sm_tensor_dtype(shp) != SM_INT64) return BAD("shape must be int64");
  const int64_t *sh = sm_tensor_data(shp);
  if ((s = shape_valid(sh, R)) || (s = sparse_valid(ix, vals, sh, R))) return s;
  int64_t N = sh[0], n = sm_tensor_dims(ix)[0];
  const int64_t *x = sm_tensor_data(ix);
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, st->out_type, 2, (int64_t[]){N, 3}, &out))) return s;
  /* the inner shape and the empty parts, shared by every row without values */
  sm_tensor *inner = NULL, *blank_ix = NULL, *blank_v = NULL;
  if ((s = sm_tensor_new(SM_INT64, 1, (int64_t[]){R - 1}, &inner))) return s;
  memcpy(sm_tensor_data(inner), sh + 1, (size_t)(R - 1) * sizeof *sh);
  if (!(s = sm_tensor_new(SM_INT64, 2, (int64_t[]){0, R - 1}, &blank_ix))) s = sm_tensor_new(st->T, 1, (int64_t[]){0}, &blank_v);
  int64_t i = 0;
  for (int64_t b = 0; b < N && !s; b++) {
    int64_t j = i;
    while (j < n && x[j * R] == b) j++;
    sm_tensor *pi = NULL, *pv = NULL;
    if (j == i) {
      pi = sm_tensor_ref(blank_ix), pv = sm_tensor_ref(blank_v);
    } else {
      s = sm_tensor_new(SM_INT64, 2, (int64_t[]){j - i, R - 1}, &pi);
      if (!s) s = sm_tensor_new(st->T, 1, (int64_t[]){j - i}, &pv);
      if (!s) s = sm__array_copy(pv, 0, vals, i, j - i);
      for (int64_t k = i; k < j && !s; k++)
        memcpy((int64_t *)sm_tensor_data(pi) + (k - i) * (R - 1), x + k * R + 1, (size_t)(R - 1) * sizeof *x);
    }
    if (s) {
      sm_tensor_free(pi), sm_tensor_free(pv);
      break;
    }
    s = put_part(ctx, out, b * 3, pi);
    if (!s) s = put_part(ctx, out, b * 3 + 1, pv);
    else sm_tensor_free(pv);
    if (!s) s = put_part(ctx, out, b * 3 + 2, sm_tensor_ref(inner));
    i = j;
  }
  sm_tensor_free(inner), sm_tensor_free(blank_ix), sm_tensor_free(blank_v);
  return s;
}

/* ---- Deserialize -------------------------------------------------------------------------- */

typedef struct {
  int dtype;
} deser_state;

static sm_status *deser_prepare(const sm_node *node, void **state) {
  deser_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_type(node, "dtype", &st->dtype);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* Element i of the serialized batch as a tensor (a new reference). */
static sm_status *part(const sm_tensor *in, int64_t i, sm_tensor **out) {
  *out = NULL;
  if (sm_tensor_dtype(in) == SM_VARIANT) {
    sm_variant *v = sm__tensor_variants(in)[i];
    if (!v || strcmp(v->type_name, TENSOR_TYPE))
      return BAD("Could not get a Tensor from serialized_sparse[%" PRId64 ", %" PRId64 "]: it holds %s", i / 3, i % 3,
                 v ? v->type_name : "an empty variant");
    *out = sm_tensor_ref(((tensor_var *)v)->t);
    return NULL;
  }
  size_t n;
  const uint8_t *p = (const uint8_t *)sm_tensor_string(in, i, &n);
  ProtobufCMessage *m = NULL;
  sm_status *s = sm__pb_decode(&tensorflow__tensor_proto__descriptor, p, n, "serialized_sparse", &m);
  if (s) {
    sm_status_free(s);
    return BAD("Could not parse serialized proto");
  }
  s = sm__tensor_from_proto((const Tensorflow__TensorProto *)m, out);
  sm__pb_arena_free(m);
  if (s) {
    sm_status_free(s);
    return BAD("Could not construct tensor from proto");
  }
  return NULL;
}

typedef struct {
  sm_tensor *ix, *vals, *shape;
} sparse_parts;

static void parts_free(sparse_parts *p) {
  sm_tensor_free(p->ix), sm_tensor_free(p->vals), sm_tensor_free(p->shape);
  p->ix = p->vals = p->shape = NULL;
}

/* TF's GetAndValidateSparseTensor for batch entry k (elements 3k..3k+2 of in). */
static sm_status *get_sparse(const sm_tensor *in, int64_t k, int dtype, sparse_parts *o) {
  char b[128];
  sm_status *s = part(in, 3 * k, &o->ix);
  if (s) return s;
  if (sm_tensor_rank(o->ix) != 2)
    return BAD("Expected serialized_sparse[%" PRId64 ", 0] to represent an index matrix but received shape %s", k,
               sm_shape_str(sm_tensor_rank(o->ix), sm_tensor_dims(o->ix), b, sizeof b));
  if (sm_tensor_dtype(o->ix) != SM_INT64)
    return BAD("Expected serialized_sparse[%" PRId64 ", 0] to hold int64 indices but it holds %s", k,
               sm__array_dtype_str(sm_tensor_dtype(o->ix)));
  int64_t n = sm_tensor_dims(o->ix)[0], rank = sm_tensor_dims(o->ix)[1];
  if ((s = part(in, 3 * k + 1, &o->vals))) return s;
  if (sm_tensor_rank(o->vals) != 1)
    return BAD("Expected serialized_sparse[%" PRId64 ", 1] to represent a values vector but received shape %s", k,
               sm_shape_str(sm_tensor_rank(o->vals), sm_tensor_dims(o->vals), b, sizeof b));
  if (sm_tensor_dtype(o->vals) != dtype)
    return BAD("Requested SparseTensor of type %s but SparseTensor[%" PRId64 "].values.dtype() == %s", sm__array_dtype_str(dtype), k,
               sm__array_dtype_str(sm_tensor_dtype(o->vals)));
  if (n != sm_tensor_dims(o->vals)[0])
    return BAD("Expected row counts of SparseTensor[%" PRId64 "].indices and SparseTensor[%" PRId64
               "].values to match but they do not: %" PRId64 " vs. %" PRId64,
               k, k, n, sm_tensor_dims(o->vals)[0]);
  if ((s = part(in, 3 * k + 2, &o->shape))) return s;
  if (sm_tensor_rank(o->shape) != 1)
    return BAD("Expected serialized_sparse[%" PRId64 ", 1] to be a shape vector but its shape is %s", k,
               sm_shape_str(sm_tensor_rank(o->shape), sm_tensor_dims(o->shape), b, sizeof b));
  if (sm_tensor_dtype(o->shape) != SM_INT64)
    return BAD("Expected serialized_sparse[%" PRId64 ", 2] to hold an int64 shape but it holds %s", k,
               sm__array_dtype_str(sm_tensor_dtype(o->shape)));
  if (rank != sm_tensor_dims(o->shape)[0])
    return BAD("Expected column counts of SparseTensor[%" PRId64 "].indices to match size of SparseTensor[%" PRId64
               "].shape but they do not: %" PRId64 " vs. %" PRId64,
               k, k, rank, sm_tensor_dims(o->shape)[0]);
  return NULL;
}

static sm_status *deser_compute(const void *state, sm_kctx *ctx) {
  const deser_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  int nd = sm_tensor_rank(in);
  const int64_t *dims = sm_tensor_dims(in);
  char b[128];
  if (nd == 0) return BAD("Serialized sparse should have non-zero rank %s", sm_shape_str(nd, dims, b, sizeof b));
  if (dims[nd - 1] != 3) return BAD("Serialized sparse should have 3 as the last dimension %s", sm_shape_str(nd, dims, b, sizeof b));
  int64_t num = sm_tensor_num_elements(in) / 3;
  if (num == 0)
    return BAD("Serialized sparse should have at least 1 serialized tensor, but has a zero dimension %s",
               sm_shape_str(nd, dims, b, sizeof b));
  sm_status *s = NULL;
  if (num == 1 && nd == 1) {
    sparse_parts p = {0};
    if (!(s = get_sparse(in, 0, st->dtype, &p))) {
      sm__kctx_set_output(ctx, 0, p.ix), sm__kctx_set_output(ctx, 1, p.vals), sm__kctx_set_output(ctx, 2, p.shape);
      return NULL;
    }
    parts_free(&p);
    return s;
  }
  sparse_parts *ps = sm__kctx_scratch(ctx, (size_t)num * sizeof *ps, &s);
  if (!ps) return s;
  memset(ps, 0, (size_t)num * sizeof *ps);
  int64_t rank = -1, total = 0, inner[SM_MAX_RANK] = {0};
  for (int64_t k = 0; k < num && !s; k++) {
    if ((s = get_sparse(in, k, st->dtype, &ps[k]))) break;
    int64_t r = sm_tensor_dims(ps[k].ix)[1];
    const int64_t *sh = sm_tensor_data(ps[k].shape);
    if ((s = shape_valid(sh, r))) break;
    if (k == 0) {
      rank = r;
      if (rank + nd - 1 > SM_MAX_RANK) {
        s = BAD("DeserializeSparse: output rank %" PRId64 " is past this library's limit", rank + nd - 1);
        break;
      }
    } else if (r != rank) {
      s = BAD("Inconsistent shape across SparseTensors: rank prior to SparseTensor[%" PRId64 "] was: %" PRId64
              " but rank of SparseTensor[%" PRId64 "] is: %" PRId64,
              k, rank, k, r);
      break;
    }
    for (int64_t d = 0; d < rank; d++)
      if (sh[d] > inner[d]) inner[d] = sh[d];
    total += sm_tensor_dims(ps[k].ix)[0];
  }
  /* output shape: the batch dims, then the inner maximum; each entry's index: its batch position
   * (row-major over the batch dims, as TF's Reshape of [num, inner...] unravels it; in-bounds
   * entries keep their inner index) */
  int onr = (int)(nd - 1 + rank);
  int64_t oshape[SM_MAX_RANK];
  sm_tensor *oix = NULL, *ov = NULL, *osh = NULL;
  if (!s) {
    for (int d = 0; d < nd - 1; d++) oshape[d] = dims[d];
    for (int64_t d = 0; d < rank; d++) oshape[nd - 1 + d] = inner[d];
    s = shape_valid(oshape, onr);
  }
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, onr}, &oix);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, st->dtype, 1, (int64_t[]){total}, &ov);
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){onr}, &osh);
  if (!s) {
    memcpy(sm_tensor_data(osh), oshape, (size_t)onr * sizeof *oshape);
    /* An entry out of its own shape's bounds moves as TF's linear reshape moves it. */
    int64_t istr[SM_MAX_RANK + 1], ostr[SM_MAX_RANK];
    istr[rank] = 1;
    for (int64_t d = rank - 1; d >= 0; d--) istr[d] = (int64_t)((uint64_t)istr[d + 1] * (uint64_t)inner[d]);
    ostr[onr - 1] = 1;
    for (int d = onr - 2; d >= 0; d--) ostr[d] = (int64_t)((uint64_t)ostr[d + 1] * (uint64_t)oshape[d + 1]);
    int64_t *o = sm_tensor_data(oix), row = 0;
    for (int64_t k = 0; k < num && !s; k++) {
      int64_t n = sm_tensor_dims(ps[k].ix)[0];
      const int64_t *x = sm_tensor_data(ps[k].ix);
      s = sm__array_copy(ov, row, ps[k].vals, 0, n);
      for (int64_t e = 0; e < n && !s; e++, row++) {
        int in_bounds = 1;
        for (int64_t d = 0; d < rank; d++)
          if (x[e * rank + d] < 0 || x[e * rank + d] >= inner[d]) in_bounds = 0;
        int64_t *orow = o + row * onr;
        if (in_bounds || nd == 2) {
          int64_t q = k;
          for (int d = nd - 2; d >= 0; d--) {
            orow[d] = dims[d] ? q % dims[d] : 0;
            q = dims[d] ? q / dims[d] : 0;
          }
          memcpy(orow + nd - 1, x + e * rank, (size_t)rank * sizeof *x);
          continue;
        }
        uint64_t lin = (uint64_t)k * (uint64_t)istr[0];
        for (int64_t d = 0; d < rank; d++) lin += (uint64_t)x[e * rank + d] * (uint64_t)istr[d + 1];
        int64_t l = (int64_t)lin;
        for (int d = 0; d < onr; d++) {
          if (!ostr[d]) {
            s = BAD("DeserializeSparse: SparseTensor[%" PRId64 "] has an index out of its bounds in an empty shape", k);
            break;
          }
          orow[d] = l / ostr[d];
          l -= orow[d] * ostr[d];
        }
      }
    }
  }
  for (int64_t k = 0; k < num; k++) parts_free(&ps[k]);
  sm__kctx_scratch_free(ctx, ps);
  return s;
}

/* ---- SparseTensorsMap ---------------------------------------------------------------------- */

/* One stored SparseTensor: its indices and values as added (the map holds references), and its
 * shape. */
typedef struct {
  int64_t handle;
  sm_tensor *ix, *vals, *shape;
} st_entry;

typedef struct {
  pthread_mutex_t mu;
  char *name;
  int64_t counter; /* the next handle: 0, 1, 2, ... as TF's counter_ */
  st_entry *e;     /* sorted by handle (handles only grow) */
  size_t n, cap;
  sm_mem_account acct;
} st_map;

typedef struct {
  int T;
  char *container, *name;
} map_state;

static void map_state_free(void *p) {
  map_state *st = p;
  if (!st) return;
  free(st->container);
  free(st->name);
  free(st);
}

static char *attr_dup(const sm_node *node, const char *attr, const char *dflt) {
  const char *v = NULL;
  size_t len = 0;
  if (!sm__node_attr(node, attr) || sm__node_attr_string(node, attr, &v, &len) || !len) v = dflt, len = strlen(dflt);
  char *d = malloc(len + 1);
  if (d) memcpy(d, v, len), d[len] = 0;
  return d;
}

/* writing: the Add ops, which name a map without shared_name after their node (TF's
 * use_node_name_as_default); TakeMany's own is private to it, so nothing is ever found there. */
static sm_status *map_prepare(const sm_node *node, void **state, const char *type_attr, int writing) {
  map_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_type(node, type_attr, &st->T);
  if (!s) {
    char priv[300];
    snprintf(priv, sizeof priv, "_0_%s", sm__node_name(node));
    st->container = attr_dup(node, "container", "localhost");
    st->name = attr_dup(node, "shared_name", writing ? sm__node_name(node) : priv);
    if (!st->container || !st->name) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  if (s) {
    map_state_free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *add_prepare(const sm_node *n, void **st) { return map_prepare(n, st, "T", 1); }
static sm_status *take_prepare(const sm_node *n, void **st) { return map_prepare(n, st, "dtype", 0); }

static void entry_free(st_map *m, st_entry *e) {
  sm__mem_give_tensor(&m->acct, e->ix), sm__mem_give_tensor(&m->acct, e->vals), sm__mem_give_tensor(&m->acct, e->shape);
  sm_tensor_free(e->ix), sm_tensor_free(e->vals), sm_tensor_free(e->shape);
}

static void map_destroy(void *obj) {
  st_map *m = obj;
  for (size_t i = 0; i < m->n; i++) entry_free(m, &m->e[i]);
  sm__mem_close(&m->acct);
  pthread_mutex_destroy(&m->mu);
  free(m->e);
  free(m->name);
  free(m);
}

static sm_status *map_make(void *arg, const char *display_name, void **obj) {
  (void)display_name;
  st_map *m = calloc(1, sizeof *m);
  if (m) m->name = strdup(((const map_state *)arg)->name);
  if (!m || !m->name) {
    free(m);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  pthread_mutex_init(&m->mu, NULL);
  *obj = m;
  return NULL;
}

static sm_status *get_map(sm_kctx *ctx, const map_state *st, st_map **out) {
  void *obj = NULL;
  sm_status *s = sm__resources_object(sm__kctx_resources(ctx), SM_RES_SPARSE_MAP, st->container, st->name, map_make,
                                      (void *)st, map_destroy, &obj);
  *out = obj;
  return s;
}

/* Adds (ix, vals, shape) under the next handle; takes over the three references either way.
 * Under m->mu. */
static sm_status *map_add(sm_kctx *ctx, st_map *m, sm_tensor *ix, sm_tensor *vals, sm_tensor *shape, int64_t *handle) {
  sm_status *s = NULL;
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    st_entry *e = realloc(m->e, cap * sizeof *e);
    if (!e) s = sm_status_new(SM_NO_MEMORY, "SparseTensorsMap: out of memory");
    else m->e = e, m->cap = cap;
  }
  sm_tensor *parts[3] = {ix, vals, shape};
  int held = 0;
  for (; held < 3 && !s; held++) s = sm__kctx_hold_tensor(ctx, &m->acct, parts[held], "SparseTensorsMap");
  if (s) {
    for (int i = 0; i < held - 1; i++) sm__mem_give_tensor(&m->acct, parts[i]);
    sm_tensor_free(ix), sm_tensor_free(vals), sm_tensor_free(shape);
    return s;
  }
  *handle = m->counter++;
  m->e[m->n++] = (st_entry){*handle, ix, vals, shape};
  return NULL;
}

static sm_status *add_compute(const void *state, sm_kctx *ctx) {
  const map_state *st = state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *shp = sm__kctx_input(ctx, 2);
  st_map *m;
  sm_status *s = get_map(ctx, st, &m);
  if (s || (s = check_parts(ix, vals, shp))) return s;
  int64_t R = sm_tensor_num_elements(shp);
  const int64_t *sh = sm_tensor_data(shp);
  for (int64_t d = 0; d < R; d++)
    if (sh[d] < 0) return BAD("Dimension %" PRId64 " must be >= 0", sh[d]);
  if ((s = shape_valid(sh, R))) return s;
  if (sm_tensor_dtype(ix) != SM_INT64) return BAD("indices must be int64, got %s", sm__array_dtype_str(sm_tensor_dtype(ix)));
  if (sm_tensor_dims(ix)[0] != sm_tensor_dims(vals)[0])
    return BAD("indices and values rows (indexing dimension) must match. (indices = %" PRId64 ", values = %" PRId64 ")",
               sm_tensor_dims(ix)[0], sm_tensor_dims(vals)[0]);
  if (sm_tensor_dims(ix)[1] != R) return BAD("Order length must be SparseTensor rank.");
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 0, NULL, &out))) return s;
  pthread_mutex_lock(&m->mu);
  s = map_add(ctx, m, sm_tensor_ref((sm_tensor *)ix), sm_tensor_ref((sm_tensor *)vals), sm_tensor_ref((sm_tensor *)shp),
              sm_tensor_data(out));
  pthread_mutex_unlock(&m->mu);
  return s;
}

static sm_status *add_many_compute(const void *state, sm_kctx *ctx) {
  const map_state *st = state;
  const sm_tensor *ix = sm__kctx_input(ctx, 0), *vals = sm__kctx_input(ctx, 1), *shp = sm__kctx_input(ctx, 2);
  st_map *m;
  sm_status *s = get_map(ctx, st, &m);
  if (s || (s = check_parts(ix, vals, shp))) return s;
  char b[128];
  if (sm_tensor_dims(vals)[0] != sm_tensor_dims(ix)[0])
    return BAD("Number of values must match first dimension of indices. Got %" PRId64 " values, indices shape: %s",
               sm_tensor_dims(vals)[0], sm_shape_str(2, sm_tensor_dims(ix), b, sizeof b));
  if (sm_tensor_dims(shp)[0] != sm_tensor_dims(ix)[1])
    return BAD("Number of dimensions must match second dimension of indices. Got %" PRId64 " dimensions, indices shape: %s",
               sm_tensor_dims(shp)[0], sm_shape_str(2, sm_tensor_dims(ix), b, sizeof b));
  int64_t R = sm_tensor_num_elements(shp);
  if (R <= 1) return BAD("Rank of input SparseTensor should be > 1, but saw rank: %" PRId64, R);
  const int64_t *sh = sm_tensor_data(shp);
  if ((s = shape_valid(sh, R)) || (s = sparse_valid(ix, vals, sh, R))) return s;
  int64_t N = sh[0], n = sm_tensor_dims(ix)[0];
  const int64_t *x = sm_tensor_data(ix);
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 1, &N, &out))) return s;
  int64_t *h = sm_tensor_data(out);
  /* TF's order: the entries with values first, in batch order; then the empty ones */
  pthread_mutex_lock(&m->mu);
  for (int pass = 0; pass < 2 && !s; pass++) {
    int64_t i = 0;
    for (int64_t bi = 0; bi < N && !s; bi++) {
      int64_t j = i;
      while (j < n && x[j * R] == bi) j++;
      if ((j > i) != (pass == 0)) {
        i = j;
        continue;
      }
      sm_tensor *pi = NULL, *pv = NULL, *ps = NULL;
      s = sm_tensor_new(SM_INT64, 2, (int64_t[]){j - i, R - 1}, &pi);
      if (!s) s = sm_tensor_new(st->T, 1, (int64_t[]){j - i}, &pv);
      if (!s) s = sm_tensor_new(SM_INT64, 1, (int64_t[]){R - 1}, &ps);
      if (!s) {
        memcpy(sm_tensor_data(ps), sh + 1, (size_t)(R - 1) * sizeof *sh);
        s = sm__array_copy(pv, 0, vals, i, j - i);
      }
      for (int64_t k = i; k < j && !s; k++)
        memcpy((int64_t *)sm_tensor_data(pi) + (k - i) * (R - 1), x + k * R + 1, (size_t)(R - 1) * sizeof *x);
      if (s) sm_tensor_free(pi), sm_tensor_free(pv), sm_tensor_free(ps);
      else s = map_add(ctx, m, pi, pv, ps, &h[bi]);
      i = j;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return s;
}

static st_entry *map_find(st_map *m, int64_t handle) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->e[mid].handle < handle) lo = mid + 1;
    else hi = mid;
  }
  return lo < m->n && m->e[lo].handle == handle ? &m->e[lo] : NULL;
}

static sm_status *take_compute(const void *state, sm_kctx *ctx) {
  const map_state *st = state;
  const sm_tensor *hs = sm__kctx_input(ctx, 0);
  st_map *m;
  sm_status *s = get_map(ctx, st, &m);
  if (s) return s;
  char b[128];
  if (sm_tensor_rank(hs) != 1)
    return BAD("sparse_handles should be a vector but received shape %s", sm_shape_str(sm_tensor_rank(hs), sm_tensor_dims(hs), b, sizeof b));
  int64_t N = sm_tensor_dims(hs)[0];
  if (N <= 0) return BAD("Must have at least 1 serialized SparseTensor, but input matrix has 0 rows");
  const int64_t *h = sm_tensor_data(hs);
  sparse_parts *ps = sm__kctx_scratch(ctx, (size_t)N * sizeof *ps, &s);
  if (!ps) return s;
  memset(ps, 0, (size_t)N * sizeof *ps);
  /* retrieve and clear (what was found before a missing handle stays cleared, as in TF) */
  pthread_mutex_lock(&m->mu);
  for (int64_t i = 0; i < N && !s; i++) {
    st_entry *e = map_find(m, h[i]);
    if (!e) {
      s = BAD("Unable to find SparseTensor: %" PRId64 " in map: %s", h[i], m->name);
      break;
    }
    ps[i] = (sparse_parts){e->ix, e->vals, e->shape};
    sm__mem_give_tensor(&m->acct, e->ix), sm__mem_give_tensor(&m->acct, e->vals), sm__mem_give_tensor(&m->acct, e->shape);
    memmove(e, e + 1, (size_t)(m->e + m->n - (e + 1)) * sizeof *e);
    m->n--;
  }
  pthread_mutex_unlock(&m->mu);
  int64_t rank = s ? 0 : sm_tensor_num_elements(ps[0].shape), total = 0, oshape[SM_MAX_RANK] = {0};
  if (!s && rank + 1 > SM_MAX_RANK) s = BAD("TakeManySparseFromTensorsMap: rank %" PRId64 " is past this library's limit", rank + 1);
  for (int64_t i = 0; i < N && !s; i++) {
    const sparse_parts *p = &ps[i];
    int64_t n = sm_tensor_dims(p->ix)[0], r = sm_tensor_dims(p->ix)[1];
    if (sm_tensor_dtype(p->vals) != st->T)
      s = BAD("Requested SparseTensor of type %s but SparseTensor[%" PRId64 "].values.dtype() == %s", sm__array_dtype_str(st->T), i,
              sm__array_dtype_str(sm_tensor_dtype(p->vals)));
    else if (r != rank)
      s = BAD("Inconsistent rank across SparseTensors: rank prior to SparseTensor[%" PRId64 "] was: %" PRId64
              " but rank of SparseTensor[%" PRId64 "] is: %" PRId64,
              i, rank + 1, i, r + 1);
    else {
      total += n;
      const int64_t *sh = sm_tensor_data(p->shape);
      for (int64_t d = 0; d < rank; d++)
        if (sh[d] > oshape[d + 1]) oshape[d + 1] = sh[d];
    }
  }
  sm_tensor *oix, *ov, *osh;
  if (!s) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){rank + 1}, &osh);
  if (!s) {
    oshape[0] = N;
    memcpy(sm_tensor_data(osh), oshape, (size_t)(rank + 1) * sizeof *oshape);
    s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, rank + 1}, &oix);
  }
  if (!s) s = sm__kctx_alloc_output(ctx, 1, st->T, 1, &total, &ov);
  int64_t off = 0;
  for (int64_t i = 0; i < N && !s; i++) {
    int64_t n = sm_tensor_dims(ps[i].ix)[0];
    const int64_t *x = sm_tensor_data(ps[i].ix);
    int64_t *o = (int64_t *)sm_tensor_data(oix) + off * (rank + 1);
    for (int64_t k = 0; k < n; k++) {
      o[k * (rank + 1)] = i;
      memcpy(o + k * (rank + 1) + 1, x + k * rank, (size_t)rank * sizeof *x);
    }
    s = sm__array_copy(ov, off, ps[i].vals, 0, n);
    off += n;
  }
  for (int64_t i = 0; i < N; i++) parts_free(&ps[i]);
  sm__kctx_scratch_free(ctx, ps);
  return s;
}

/* ---- the table ---------------------------------------------------------------------------- */

const sm_kernel sm_kernels_sparse_ser[] = {
    {"SerializeSparse", ser_prepare, ser_compute, free, 0},
    {"SerializeManySparse", ser_prepare, ser_many_compute, free, 0},
    {"DeserializeSparse", deser_prepare, deser_compute, free, 0},
    {"DeserializeManySparse", deser_prepare, deser_compute, free, 0},
    {"AddSparseToTensorsMap", add_prepare, add_compute, map_state_free, 0},
    {"AddManySparseToTensorsMap", add_prepare, add_many_compute, map_state_free, 0},
    {"TakeManySparseFromTensorsMap", take_prepare, take_compute, map_state_free, 0},
    {0},
};
